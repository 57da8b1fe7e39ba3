//! `client_encryption_options`: TLS for CQL clients, with cassandra.yaml's
//! key names and PEM key material (as Cassandra's
//! `PEMBasedSslContextFactory` reads it: a keystore file holding the
//! private key and its certificate chain, a truststore file of CA
//! certificates, or both inline as `ssl_context_factory` parameters).
//! Only parsing and validation live here; the files are read when the
//! transport starts (`transport::tls`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::{invalid, short_class_name, ConfigError};

/// The one SSL context factory we implement (keys and certificates in PEM).
pub const PEM_SSL_CONTEXT_FACTORY: &str = "org.apache.cassandra.security.PEMBasedSslContextFactory";

const KEY: &str = "client_encryption_options";

/// A TLS version rustls speaks (TLSv1.0 and 1.1 it deliberately does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

impl TlsVersion {
    pub const ALL: [TlsVersion; 2] = [TlsVersion::Tls12, TlsVersion::Tls13];

    /// The JSSE name, as cassandra.yaml writes it.
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }

    /// `TLS` (every version we speak), `TLSv1.2` or `TLSv1.3`.
    fn parse(key: &'static str, text: &str) -> Result<Vec<TlsVersion>, ConfigError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("TLS") {
            return Ok(TlsVersion::ALL.to_vec());
        }
        if let Some(version) = TlsVersion::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(text))
        {
            return Ok(vec![version]);
        }
        let message = match text.to_ascii_uppercase().as_str() {
            "TLSV1" | "TLSV1.0" | "TLSV1.1" | "SSL" | "SSLV2HELLO" | "SSLV3" => format!(
                "'{text}' is not supported: only TLSv1.2 and TLSv1.3 are (older versions are \
                 insecure and rustls does not implement them)"
            ),
            _ => format!("'{text}' is not a TLS protocol (expected TLS, TLSv1.2 or TLSv1.3)"),
        };
        Err(invalid(key, message))
    }
}

/// Where PEM text comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemSource {
    /// `keystore` or `truststore`: a file.
    File(PathBuf),
    /// `ssl_context_factory.parameters`' `private_key` or
    /// `trusted_certificates`: the PEM text itself.
    Inline { key: &'static str, pem: String },
}

impl PemSource {
    /// Names the source in error messages.
    pub fn describe(&self) -> String {
        match self {
            PemSource::File(path) => path.display().to_string(),
            PemSource::Inline { key, .. } => format!("{KEY}.ssl_context_factory.parameters.{key}"),
        }
    }
}

/// Whether clients must present a certificate (`require_client_auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate is asked for.
    None,
    /// A certificate is asked for and checked if sent (Cassandra 5.0's
    /// `require_client_auth: optional`).
    Optional,
    /// A client without a certificate signed by the truststore's CAs is refused.
    Required,
}

/// What the native port speaks (Cassandra's `TlsEncryptionPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsPolicy {
    Unencrypted,
    /// TLS and plain CQL on the same port, told apart by the first byte.
    Optional,
    Encrypted,
}

/// The validated `client_encryption_options`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientEncryption {
    pub enabled: bool,
    /// `optional` as written; `policy` applies Cassandra's default.
    pub optional: Option<bool>,
    /// The private key and the certificate chain it signs for (PEM).
    pub keystore: Option<PemSource>,
    /// CA certificates that client certificates are checked against (PEM).
    pub truststore: Option<PemSource>,
    pub client_auth: ClientAuth,
    /// Accepted versions: sorted, without duplicates, never empty.
    pub protocols: Vec<TlsVersion>,
    /// Cipher suites by IANA (and JSSE) name, in the order given; None
    /// keeps rustls's defaults. Checked against rustls when TLS starts.
    pub cipher_suites: Option<Vec<String>>,
}

impl Default for ClientEncryption {
    fn default() -> Self {
        ClientEncryption {
            enabled: false,
            optional: None,
            keystore: None,
            truststore: None,
            client_auth: ClientAuth::None,
            protocols: TlsVersion::ALL.to_vec(),
            cipher_suites: None,
        }
    }
}

impl ClientEncryption {
    /// Cassandra's rule (`EncryptionOptions.applyConfig`): `optional` as
    /// written; unset, it is true when TLS is not enabled but a keystore
    /// exists (so that clients can move to TLS before it is required).
    pub fn policy(&self, keystore_exists: bool) -> TlsPolicy {
        let optional = self.optional.unwrap_or(!self.enabled && keystore_exists);
        match (self.enabled, optional) {
            (_, true) => TlsPolicy::Optional,
            (true, false) => TlsPolicy::Encrypted,
            (false, false) => TlsPolicy::Unencrypted,
        }
    }
}

/// `client_encryption_options` as written. Passwords, `algorithm` and
/// `require_endpoint_verification` are read but have no effect: PEM
/// certificates carry no password (encrypted private keys are refused when
/// the key is loaded), the key manager algorithm is a Java notion, and
/// Cassandra does not verify client host names either.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FileClientEncryption {
    enabled: Option<bool>,
    optional: Option<bool>,
    keystore: Option<PathBuf>,
    #[serde(rename = "keystore_password")]
    _keystore_password: Option<String>,
    truststore: Option<PathBuf>,
    #[serde(rename = "truststore_password")]
    _truststore_password: Option<String>,
    require_client_auth: Option<BoolOrText>,
    #[serde(rename = "require_endpoint_verification")]
    _require_endpoint_verification: Option<bool>,
    protocol: Option<String>,
    accepted_protocols: Option<Vec<String>>,
    cipher_suites: Option<Vec<String>>,
    #[serde(rename = "algorithm")]
    _algorithm: Option<String>,
    store_type: Option<String>,
    ssl_context_factory: Option<FileSslContextFactory>,
}

/// `ssl_context_factory: {class_name: ..., parameters: {...}}`.
#[derive(Debug, Deserialize)]
struct FileSslContextFactory {
    class_name: String,
    #[serde(default)]
    parameters: BTreeMap<String, String>,
}

/// `require_client_auth` is a boolean in Cassandra 4 and a string
/// (`true`, `false`, `optional`) in Cassandra 5.0.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum BoolOrText {
    Bool(bool),
    Text(String),
}

impl FileClientEncryption {
    pub(super) fn into_options(self) -> Result<ClientEncryption, ConfigError> {
        if let Some(store_type) = &self.store_type {
            if !store_type.trim().eq_ignore_ascii_case("PEM") {
                return Err(invalid(
                    KEY,
                    format!(
                        "store_type '{store_type}' is not supported: keystores and \
                         truststores are read as PEM files (store_type: PEM); convert a \
                         JKS or PKCS12 store with keytool and openssl"
                    ),
                ));
            }
        }
        let inline = match self.ssl_context_factory {
            Some(factory) => InlinePem::from_factory(factory)?,
            None => InlinePem::default(),
        };
        let keystore = pick_source("keystore", self.keystore, "private_key", inline.private_key)?;
        let truststore = pick_source(
            "truststore",
            self.truststore,
            "trusted_certificates",
            inline.trusted_certificates,
        )?;
        Ok(ClientEncryption {
            enabled: self.enabled.unwrap_or(false),
            optional: self.optional,
            keystore,
            truststore,
            client_auth: client_auth(self.require_client_auth)?,
            protocols: protocols(self.protocol.as_deref(), self.accepted_protocols)?,
            cipher_suites: cipher_suites(self.cipher_suites)?,
        })
    }
}

/// The PEM text `PEMBasedSslContextFactory` takes as parameters.
#[derive(Default)]
struct InlinePem {
    private_key: Option<String>,
    trusted_certificates: Option<String>,
}

impl InlinePem {
    fn from_factory(factory: FileSslContextFactory) -> Result<InlinePem, ConfigError> {
        if short_class_name(&factory.class_name) != short_class_name(PEM_SSL_CONTEXT_FACTORY) {
            return Err(invalid(
                KEY,
                format!(
                    "ssl_context_factory class '{}' is not supported (expected \
                     {PEM_SSL_CONTEXT_FACTORY}: keys and certificates in PEM)",
                    factory.class_name
                ),
            ));
        }
        let mut inline = InlinePem::default();
        for (name, value) in factory.parameters {
            match name.as_str() {
                "private_key" => inline.private_key = Some(value),
                "trusted_certificates" => inline.trusted_certificates = Some(value),
                // Encrypted keys are refused when the key is read.
                "private_key_password" => {}
                _ => {
                    return Err(invalid(
                        KEY,
                        format!(
                            "unknown ssl_context_factory parameter '{name}' (expected \
                             private_key, private_key_password or trusted_certificates)"
                        ),
                    ))
                }
            }
        }
        Ok(inline)
    }
}

/// A file key or its inline parameter, not both (as Cassandra).
fn pick_source(
    file_key: &str,
    file: Option<PathBuf>,
    inline_key: &'static str,
    inline: Option<String>,
) -> Result<Option<PemSource>, ConfigError> {
    match (file, inline) {
        (Some(_), Some(_)) => Err(invalid(
            KEY,
            format!(
                "both {file_key} and ssl_context_factory.parameters.{inline_key} are set; \
                 keep one"
            ),
        )),
        (Some(path), None) if path.as_os_str().is_empty() => {
            Err(invalid(KEY, format!("{file_key} must not be empty")))
        }
        (Some(path), None) => Ok(Some(PemSource::File(path))),
        (None, Some(pem)) => Ok(Some(PemSource::Inline {
            key: inline_key,
            pem,
        })),
        (None, None) => Ok(None),
    }
}

fn client_auth(value: Option<BoolOrText>) -> Result<ClientAuth, ConfigError> {
    match value {
        None | Some(BoolOrText::Bool(false)) => Ok(ClientAuth::None),
        Some(BoolOrText::Bool(true)) => Ok(ClientAuth::Required),
        Some(BoolOrText::Text(text)) => match text.trim().to_ascii_lowercase().as_str() {
            "false" => Ok(ClientAuth::None),
            "true" => Ok(ClientAuth::Required),
            "optional" => Ok(ClientAuth::Optional),
            _ => Err(invalid(
                KEY,
                format!("require_client_auth '{text}' (expected true, false or optional)"),
            )),
        },
    }
}

/// `accepted_protocols` when given (with `protocol` added when it names
/// one version, as Cassandra does), else `protocol`, else every version.
fn protocols(
    protocol: Option<&str>,
    accepted: Option<Vec<String>>,
) -> Result<Vec<TlsVersion>, ConfigError> {
    let mut versions = Vec::new();
    if let Some(accepted) = accepted {
        if accepted.is_empty() {
            return Err(invalid(KEY, "accepted_protocols must not be empty"));
        }
        for name in &accepted {
            versions.extend(TlsVersion::parse(KEY, name)?);
        }
        if let Some(protocol) = protocol {
            let named = TlsVersion::parse(KEY, protocol)?;
            if named.len() == 1 {
                versions.extend(named);
            }
        }
    } else {
        versions = match protocol {
            Some(protocol) => TlsVersion::parse(KEY, protocol)?,
            None => TlsVersion::ALL.to_vec(),
        };
    }
    versions.sort();
    versions.dedup();
    Ok(versions)
}

fn cipher_suites(names: Option<Vec<String>>) -> Result<Option<Vec<String>>, ConfigError> {
    match names {
        Some(names) if names.is_empty() => Err(invalid(
            KEY,
            "cipher_suites must not be empty (leave it out for the defaults)",
        )),
        Some(names) => Ok(Some(
            names.into_iter().map(|n| n.trim().to_string()).collect(),
        )),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, ConfigError};
    use super::*;

    fn parse(yaml: &str) -> Result<ClientEncryption, ConfigError> {
        Config::from_yaml(yaml, "rocksandra.yaml").map(|c| c.client_encryption)
    }

    fn parse_ok(yaml: &str) -> ClientEncryption {
        match parse(yaml) {
            Ok(options) => options,
            Err(e) => panic!("{yaml:?} should parse: {e}"),
        }
    }

    fn error_text(yaml: &str) -> String {
        match parse(yaml) {
            Ok(options) => panic!("{yaml:?} should fail, got {options:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn absent_block_means_plain_cql() {
        let options = parse_ok("");
        assert_eq!(options, ClientEncryption::default());
        assert_eq!(options.policy(false), TlsPolicy::Unencrypted);
    }

    #[test]
    fn cassandra_4_style_block_parses() {
        let options = parse_ok(
            r#"
client_encryption_options:
  enabled: true
  optional: false
  keystore: /etc/rocksandra/node.pem
  keystore_password: cassandra
  require_client_auth: true
  truststore: /etc/rocksandra/ca.pem
  truststore_password: cassandra
  require_endpoint_verification: false
  protocol: TLS
  accepted_protocols: [TLSv1.2, TLSv1.3]
  algorithm: SunX509
  store_type: PEM
  cipher_suites: [TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]
"#,
        );
        assert!(options.enabled);
        assert_eq!(options.optional, Some(false));
        assert_eq!(
            options.keystore,
            Some(PemSource::File("/etc/rocksandra/node.pem".into()))
        );
        assert_eq!(
            options.truststore,
            Some(PemSource::File("/etc/rocksandra/ca.pem".into()))
        );
        assert_eq!(options.client_auth, ClientAuth::Required);
        assert_eq!(options.protocols, TlsVersion::ALL.to_vec());
        assert_eq!(
            options.cipher_suites,
            Some(vec![
                "TLS_AES_128_GCM_SHA256".to_string(),
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384".to_string()
            ])
        );
        assert_eq!(options.policy(true), TlsPolicy::Encrypted);
    }

    #[test]
    fn cassandra_5_pem_factory_with_inline_keys_parses() {
        let options = parse_ok(
            r#"
client_encryption_options:
  enabled: true
  ssl_context_factory:
    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory
    parameters:
      private_key: "-----BEGIN PRIVATE KEY-----\n..."
      private_key_password: ignored
      trusted_certificates: "-----BEGIN CERTIFICATE-----\n..."
  require_client_auth: optional
"#,
        );
        assert_eq!(
            options.keystore,
            Some(PemSource::Inline {
                key: "private_key",
                pem: "-----BEGIN PRIVATE KEY-----\n...".to_string()
            })
        );
        assert!(matches!(
            options.truststore,
            Some(PemSource::Inline {
                key: "trusted_certificates",
                ..
            })
        ));
        assert_eq!(options.client_auth, ClientAuth::Optional);
        let with_files = parse_ok(
            "client_encryption_options:\n  enabled: true\n  keystore: k.pem\n  \
             ssl_context_factory:\n    class_name: PEMBasedSslContextFactory\n",
        );
        assert_eq!(with_files.keystore, Some(PemSource::File("k.pem".into())));
    }

    #[test]
    fn enabled_and_optional_follow_cassandra() {
        let options = |yaml: &str| parse_ok(&format!("client_encryption_options:\n{yaml}"));
        let enabled = options("  enabled: true\n");
        assert_eq!(enabled.policy(true), TlsPolicy::Encrypted);
        let both = options("  enabled: true\n  optional: true\n");
        assert_eq!(both.policy(true), TlsPolicy::Optional);
        let optional_only = options("  enabled: false\n  optional: true\n");
        assert_eq!(optional_only.policy(true), TlsPolicy::Optional);
        // Unset `optional` with TLS off: optional TLS exactly when a keystore exists.
        let disabled = options("  enabled: false\n  keystore: conf/.keystore\n");
        assert_eq!(disabled.policy(true), TlsPolicy::Optional);
        assert_eq!(disabled.policy(false), TlsPolicy::Unencrypted);
        let refused = options("  enabled: false\n  optional: false\n");
        assert_eq!(refused.policy(true), TlsPolicy::Unencrypted);
    }

    #[test]
    fn protocols_resolve_like_cassandra() {
        let protocols =
            |yaml: &str| parse_ok(&format!("client_encryption_options:\n{yaml}")).protocols;
        use TlsVersion::{Tls12, Tls13};
        assert_eq!(protocols("  protocol: TLS\n"), vec![Tls12, Tls13]);
        assert_eq!(protocols("  protocol: TLSv1.3\n"), vec![Tls13]);
        assert_eq!(protocols("  protocol: tlsv1.2\n"), vec![Tls12]);
        assert_eq!(protocols("  accepted_protocols: [TLSv1.3]\n"), vec![Tls13]);
        assert_eq!(
            protocols("  protocol: TLSv1.2\n  accepted_protocols: [TLSv1.3]\n"),
            vec![Tls12, Tls13]
        );
        assert_eq!(
            protocols("  protocol: TLS\n  accepted_protocols: [TLSv1.3, TLSv1.3]\n"),
            vec![Tls13]
        );
    }

    #[test]
    fn bad_values_are_clear_errors() {
        let error = |yaml: &str| error_text(&format!("client_encryption_options:\n{yaml}"));
        assert_eq!(
            error("  accepted_protocols: [TLSv1.1, TLSv1.2]\n"),
            "invalid value for client_encryption_options: 'TLSv1.1' is not supported: only \
             TLSv1.2 and TLSv1.3 are (older versions are insecure and rustls does not \
             implement them)"
        );
        assert!(error("  protocol: QUIC\n").contains("'QUIC' is not a TLS protocol"));
        assert!(error("  accepted_protocols: []\n").contains("must not be empty"));
        assert!(error("  cipher_suites: []\n").contains("must not be empty"));
        let jks = error("  store_type: JKS\n");
        assert!(jks.contains("store_type 'JKS' is not supported"), "{jks}");
        assert!(error("  require_client_auth: maybe\n").contains("require_client_auth 'maybe'"));
        assert!(
            error("  ssl_context_factory:\n    class_name: DefaultSslContextFactory\n")
                .contains("class 'DefaultSslContextFactory' is not supported")
        );
        assert!(error(
            "  ssl_context_factory:\n    class_name: PEMBasedSslContextFactory\n    \
             parameters:\n      outbound_private_key: x\n"
        )
        .contains("unknown ssl_context_factory parameter 'outbound_private_key'"));
        assert_eq!(
            error(
                "  keystore: k.pem\n  ssl_context_factory:\n    class_name: \
                 PEMBasedSslContextFactory\n    parameters:\n      private_key: x\n"
            ),
            "invalid value for client_encryption_options: both keystore and \
             ssl_context_factory.parameters.private_key are set; keep one"
        );
        assert!(error("  keystore: ''\n").contains("keystore must not be empty"));
        assert!(error("  enabled: yes please\n").contains("rocksandra.yaml"));
    }

    #[test]
    fn unknown_keys_inside_the_block_are_named() {
        assert!(
            error_text("client_encryption_options:\n  enabled: true\n  keystore_type: PEM\n")
                .contains("[client_encryption_options.keystore_type] from your rocksandra.yaml")
        );
    }
}
