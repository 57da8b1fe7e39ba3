//! `client_encryption_options` (TLS for CQL clients) and
//! `server_encryption_options` (TLS between nodes), with cassandra.yaml's
//! key names and PEM key material (as Cassandra's
//! `PEMBasedSslContextFactory` reads it: a keystore file holding the
//! private key and its certificate chain, a truststore file of CA
//! certificates, or both inline as `ssl_context_factory` parameters).
//! Only parsing and validation live here; the files are read when the
//! transport starts (`transport::tls`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use rocksandra_cluster::tls::InternodeEncryption;

use super::{invalid, short_class_name, ConfigError};

/// The one SSL context factory we implement (keys and certificates in PEM).
pub const PEM_SSL_CONTEXT_FACTORY: &str = "org.apache.cassandra.security.PEMBasedSslContextFactory";

/// The yaml block of TLS for CQL clients.
pub const CLIENT_KEY: &str = "client_encryption_options";
/// The yaml block of TLS between nodes.
pub const SERVER_KEY: &str = "server_encryption_options";

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
    Inline {
        block: &'static str,
        key: &'static str,
        pem: String,
    },
}

impl PemSource {
    /// Names the source in error messages.
    pub fn describe(&self) -> String {
        match self {
            PemSource::File(path) => path.display().to_string(),
            PemSource::Inline { block, key, .. } => {
                format!("{block}.ssl_context_factory.parameters.{key}")
            }
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

/// The validated TLS settings of `client_encryption_options`, or the
/// part of `server_encryption_options` they share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptionOptions {
    /// The yaml block they come from, for error messages.
    pub block: &'static str,
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

impl Default for EncryptionOptions {
    fn default() -> Self {
        EncryptionOptions {
            block: CLIENT_KEY,
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

impl EncryptionOptions {
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
    pub(super) fn into_options(self) -> Result<EncryptionOptions, ConfigError> {
        self.into_block_options(CLIENT_KEY, InlinePem::default())
    }

    /// The options of `block`, with the inline PEM parameters only that
    /// block knows already taken out of `ssl_context_factory`.
    fn into_block_options(
        self,
        block: &'static str,
        mut inline: InlinePem,
    ) -> Result<EncryptionOptions, ConfigError> {
        if let Some(store_type) = &self.store_type {
            if !store_type.trim().eq_ignore_ascii_case("PEM") {
                return Err(invalid(
                    block,
                    format!(
                        "store_type '{store_type}' is not supported: keystores and \
                         truststores are read as PEM files (store_type: PEM); convert a \
                         JKS or PKCS12 store with keytool and openssl"
                    ),
                ));
            }
        }
        if let Some(factory) = self.ssl_context_factory {
            inline.read(factory, block)?;
        }
        let keystore = pick_source(
            block,
            "keystore",
            self.keystore,
            "private_key",
            inline.private_key,
        )?;
        let truststore = pick_source(
            block,
            "truststore",
            self.truststore,
            "trusted_certificates",
            inline.trusted_certificates,
        )?;
        Ok(EncryptionOptions {
            block,
            enabled: self.enabled.unwrap_or(false),
            optional: self.optional,
            keystore,
            truststore,
            client_auth: client_auth(block, self.require_client_auth)?,
            protocols: protocols(block, self.protocol.as_deref(), self.accepted_protocols)?,
            cipher_suites: cipher_suites(block, self.cipher_suites)?,
        })
    }
}

/// The validated `server_encryption_options`: TLS on the storage port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEncryption {
    /// Which peers are spoken to over TLS (`internode_encryption`).
    pub internode: InternodeEncryption,
    /// The keystore (presented to peers that connect), the truststore
    /// (peers' certificates are checked against it), `require_client_auth`,
    /// protocols and cipher suites. `enabled` has no effect here, as in
    /// Cassandra: `internode` decides.
    pub tls: EncryptionOptions,
    /// The key and chain presented when this node (or nodetool) connects to
    /// a peer (`outbound_keystore`, or the inline `outbound_private_key`);
    /// None: the keystore's.
    pub outbound_keystore: Option<PemSource>,
    /// A peer's certificate must name the address connected to
    /// (`require_endpoint_verification`).
    pub require_endpoint_verification: bool,
    /// Settings Cassandra accepts with a warning, for the log.
    pub warnings: Vec<String>,
}

impl Default for ServerEncryption {
    fn default() -> Self {
        ServerEncryption {
            internode: InternodeEncryption::None,
            tls: EncryptionOptions {
                block: SERVER_KEY,
                ..EncryptionOptions::default()
            },
            outbound_keystore: None,
            require_endpoint_verification: false,
            warnings: Vec::new(),
        }
    }
}

impl ServerEncryption {
    /// Plain connections are accepted on the storage port too: `optional`
    /// set, or `dc`/`rack` (peers in the same data center or rack connect
    /// without TLS), as Cassandra's `ServerEncryptionOptions`.
    pub fn accepts_plain(&self) -> bool {
        self.tls.optional == Some(true)
            || matches!(
                self.internode,
                InternodeEncryption::Dc | InternodeEncryption::Rack
            )
    }
}

/// `server_encryption_options` as written. Passwords and `algorithm` are
/// read but have no effect (see `FileClientEncryption`).
#[derive(Debug, Default, Deserialize)]
pub(super) struct FileServerEncryption {
    internode_encryption: Option<String>,
    legacy_ssl_storage_port_enabled: Option<bool>,
    enabled: Option<bool>,
    optional: Option<bool>,
    keystore: Option<PathBuf>,
    #[serde(rename = "keystore_password")]
    _keystore_password: Option<String>,
    outbound_keystore: Option<PathBuf>,
    #[serde(rename = "outbound_keystore_password")]
    _outbound_keystore_password: Option<String>,
    truststore: Option<PathBuf>,
    #[serde(rename = "truststore_password")]
    _truststore_password: Option<String>,
    require_client_auth: Option<BoolOrText>,
    require_endpoint_verification: Option<bool>,
    protocol: Option<String>,
    accepted_protocols: Option<Vec<String>>,
    cipher_suites: Option<Vec<String>>,
    #[serde(rename = "algorithm")]
    _algorithm: Option<String>,
    store_type: Option<String>,
    ssl_context_factory: Option<FileSslContextFactory>,
}

impl FileServerEncryption {
    pub(super) fn into_options(self) -> Result<ServerEncryption, ConfigError> {
        let internode = internode_encryption(self.internode_encryption.as_deref())?;
        if self.legacy_ssl_storage_port_enabled == Some(true) {
            return Err(invalid(
                SERVER_KEY,
                "legacy_ssl_storage_port_enabled: true is not supported: TLS between nodes \
                 runs on storage_port (there is no separate ssl_storage_port)",
            ));
        }
        let enabled = self.enabled;
        let mut inline = InlinePem {
            outbound_allowed: true,
            ..InlinePem::default()
        };
        if let Some(factory) = self.ssl_context_factory {
            inline.read(factory, SERVER_KEY)?;
        }
        let outbound_keystore = pick_source(
            SERVER_KEY,
            "outbound_keystore",
            self.outbound_keystore,
            "outbound_private_key",
            inline.outbound_private_key.take(),
        )?;
        let common = FileClientEncryption {
            enabled: Some(internode != InternodeEncryption::None),
            optional: self.optional,
            keystore: self.keystore,
            truststore: self.truststore,
            require_client_auth: self.require_client_auth,
            protocol: self.protocol,
            accepted_protocols: self.accepted_protocols,
            cipher_suites: self.cipher_suites,
            store_type: self.store_type,
            ..FileClientEncryption::default()
        };
        let tls = common.into_block_options(SERVER_KEY, inline)?;
        let warnings = server_warnings(internode, enabled, tls.client_auth);
        Ok(ServerEncryption {
            internode,
            tls,
            outbound_keystore,
            require_endpoint_verification: self.require_endpoint_verification.unwrap_or(false),
            warnings,
        })
    }
}

/// The settings Cassandra's `ServerEncryptionOptions` accepts with a warning.
fn server_warnings(
    internode: InternodeEncryption,
    enabled: Option<bool>,
    client_auth: ClientAuth,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if enabled == Some(true) && internode == InternodeEncryption::None {
        warnings.push(format!(
            "Setting {SERVER_KEY}.enabled has no effect, use internode_encryption"
        ));
    }
    let by_place = matches!(
        internode,
        InternodeEncryption::Dc | InternodeEncryption::Rack
    );
    if client_auth != ClientAuth::None && by_place {
        warnings.push(format!(
            "Setting require_client_auth is incompatible with 'rack' and 'dc' \
             internode_encryption values: a peer in the same {} connects without TLS, \
             so without a certificate. Set internode_encryption to 'all' for mutual TLS \
             between every pair of nodes.",
            internode.name()
        ));
    }
    warnings
}

fn internode_encryption(text: Option<&str>) -> Result<InternodeEncryption, ConfigError> {
    let Some(text) = text else {
        return Ok(InternodeEncryption::None);
    };
    InternodeEncryption::ALL
        .into_iter()
        .find(|e| e.name() == text.trim())
        .ok_or_else(|| {
            invalid(
                SERVER_KEY,
                format!("internode_encryption '{text}' (expected none, dc, rack or all)"),
            )
        })
}

/// The PEM text `PEMBasedSslContextFactory` takes as parameters.
#[derive(Default)]
struct InlinePem {
    private_key: Option<String>,
    trusted_certificates: Option<String>,
    /// `outbound_private_key` (server_encryption_options only): the key
    /// and chain this node presents when it connects to a peer.
    outbound_private_key: Option<String>,
    /// Whether `outbound_private_key` is a known parameter here.
    outbound_allowed: bool,
}

impl InlinePem {
    fn read(
        &mut self,
        factory: FileSslContextFactory,
        block: &'static str,
    ) -> Result<(), ConfigError> {
        if short_class_name(&factory.class_name) != short_class_name(PEM_SSL_CONTEXT_FACTORY) {
            return Err(invalid(
                block,
                format!(
                    "ssl_context_factory class '{}' is not supported (expected \
                     {PEM_SSL_CONTEXT_FACTORY}: keys and certificates in PEM)",
                    factory.class_name
                ),
            ));
        }
        for (name, value) in factory.parameters {
            match name.as_str() {
                "private_key" => self.private_key = Some(value),
                "trusted_certificates" => self.trusted_certificates = Some(value),
                "outbound_private_key" if self.outbound_allowed => {
                    self.outbound_private_key = Some(value)
                }
                // Encrypted keys are refused when the key is read.
                "private_key_password" => {}
                "outbound_private_key_password" if self.outbound_allowed => {}
                _ => return Err(unknown_parameter(block, &name, self.outbound_allowed)),
            }
        }
        Ok(())
    }
}

fn unknown_parameter(block: &'static str, name: &str, outbound_allowed: bool) -> ConfigError {
    let expected = if outbound_allowed {
        "private_key, private_key_password, outbound_private_key, \
         outbound_private_key_password or trusted_certificates"
    } else {
        "private_key, private_key_password or trusted_certificates"
    };
    invalid(
        block,
        format!("unknown ssl_context_factory parameter '{name}' (expected {expected})"),
    )
}

/// A file key or its inline parameter, not both (as Cassandra).
fn pick_source(
    block: &'static str,
    file_key: &str,
    file: Option<PathBuf>,
    inline_key: &'static str,
    inline: Option<String>,
) -> Result<Option<PemSource>, ConfigError> {
    match (file, inline) {
        (Some(_), Some(_)) => Err(invalid(
            block,
            format!(
                "both {file_key} and ssl_context_factory.parameters.{inline_key} are set; \
                 keep one"
            ),
        )),
        (Some(path), None) if path.as_os_str().is_empty() => {
            Err(invalid(block, format!("{file_key} must not be empty")))
        }
        (Some(path), None) => Ok(Some(PemSource::File(path))),
        (None, Some(pem)) => Ok(Some(PemSource::Inline {
            block,
            key: inline_key,
            pem,
        })),
        (None, None) => Ok(None),
    }
}

fn client_auth(block: &'static str, value: Option<BoolOrText>) -> Result<ClientAuth, ConfigError> {
    match value {
        None | Some(BoolOrText::Bool(false)) => Ok(ClientAuth::None),
        Some(BoolOrText::Bool(true)) => Ok(ClientAuth::Required),
        Some(BoolOrText::Text(text)) => match text.trim().to_ascii_lowercase().as_str() {
            "false" => Ok(ClientAuth::None),
            "true" => Ok(ClientAuth::Required),
            "optional" => Ok(ClientAuth::Optional),
            _ => Err(invalid(
                block,
                format!("require_client_auth '{text}' (expected true, false or optional)"),
            )),
        },
    }
}

/// `accepted_protocols` when given (with `protocol` added when it names
/// one version, as Cassandra does), else `protocol`, else every version.
fn protocols(
    block: &'static str,
    protocol: Option<&str>,
    accepted: Option<Vec<String>>,
) -> Result<Vec<TlsVersion>, ConfigError> {
    let mut versions = Vec::new();
    if let Some(accepted) = accepted {
        if accepted.is_empty() {
            return Err(invalid(block, "accepted_protocols must not be empty"));
        }
        for name in &accepted {
            versions.extend(TlsVersion::parse(block, name)?);
        }
        if let Some(protocol) = protocol {
            let named = TlsVersion::parse(block, protocol)?;
            if named.len() == 1 {
                versions.extend(named);
            }
        }
    } else {
        versions = match protocol {
            Some(protocol) => TlsVersion::parse(block, protocol)?,
            None => TlsVersion::ALL.to_vec(),
        };
    }
    versions.sort();
    versions.dedup();
    Ok(versions)
}

fn cipher_suites(
    block: &'static str,
    names: Option<Vec<String>>,
) -> Result<Option<Vec<String>>, ConfigError> {
    match names {
        Some(names) if names.is_empty() => Err(invalid(
            block,
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

    fn parse(yaml: &str) -> Result<EncryptionOptions, ConfigError> {
        Config::from_yaml(yaml, "rocksandra.yaml").map(|c| c.client_encryption)
    }

    fn parse_ok(yaml: &str) -> EncryptionOptions {
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
        assert_eq!(options, EncryptionOptions::default());
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
                block: CLIENT_KEY,
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

    fn server(yaml: &str) -> Result<ServerEncryption, ConfigError> {
        Config::from_yaml(yaml, "rocksandra.yaml").map(|c| c.server_encryption)
    }

    fn server_ok(yaml: &str) -> ServerEncryption {
        match server(yaml) {
            Ok(options) => options,
            Err(e) => panic!("{yaml:?} should parse: {e}"),
        }
    }

    #[test]
    fn server_encryption_options_parse_as_cassandra_5() {
        assert_eq!(server_ok(""), ServerEncryption::default());
        let options = server_ok(
            r#"
server_encryption_options:
  internode_encryption: all
  legacy_ssl_storage_port_enabled: false
  keystore: /etc/rocksandra/node.pem
  keystore_password: cassandra
  outbound_keystore: /etc/rocksandra/outbound.pem
  outbound_keystore_password: cassandra
  require_client_auth: true
  truststore: /etc/rocksandra/ca.pem
  truststore_password: cassandra
  require_endpoint_verification: true
  protocol: TLSv1.3
  store_type: PEM
"#,
        );
        assert_eq!(options.internode, InternodeEncryption::All);
        assert!(options.tls.enabled);
        assert_eq!(options.tls.block, SERVER_KEY);
        assert_eq!(options.tls.client_auth, ClientAuth::Required);
        assert_eq!(
            options.outbound_keystore,
            Some(PemSource::File("/etc/rocksandra/outbound.pem".into()))
        );
        assert_eq!(options.tls.protocols, vec![TlsVersion::Tls13]);
        assert!(options.require_endpoint_verification);
        assert!(!options.accepts_plain());
        assert!(options.warnings.is_empty());
    }

    #[test]
    fn dc_and_rack_accept_plain_connections_and_warn_about_client_auth() {
        let block = |yaml: &str| server_ok(&format!("server_encryption_options:\n{yaml}"));
        let dc = block("  internode_encryption: dc\n  require_client_auth: true\n");
        assert_eq!(dc.internode, InternodeEncryption::Dc);
        assert!(dc.accepts_plain());
        assert!(dc.warnings[0].contains("incompatible with 'rack' and 'dc'"));
        assert!(block("  internode_encryption: rack\n").accepts_plain());
        assert!(block("  internode_encryption: all\n  optional: true\n").accepts_plain());
        let enabled = block("  enabled: true\n");
        assert_eq!(enabled.internode, InternodeEncryption::None);
        assert_eq!(
            enabled.warnings,
            vec![
                "Setting server_encryption_options.enabled has no effect, use \
                  internode_encryption"
                    .to_string()
            ]
        );
    }

    #[test]
    fn server_encryption_errors_name_the_block() {
        let error = |yaml: &str| match server(&format!("server_encryption_options:\n{yaml}")) {
            Ok(options) => panic!("{yaml:?} should fail, got {options:?}"),
            Err(e) => e.to_string(),
        };
        assert_eq!(
            error("  internode_encryption: everything\n"),
            "invalid value for server_encryption_options: internode_encryption 'everything' \
             (expected none, dc, rack or all)"
        );
        assert!(error("  legacy_ssl_storage_port_enabled: true\n")
            .contains("there is no separate ssl_storage_port"));
        assert!(error("  accepted_protocols: [TLSv1]\n")
            .starts_with("invalid value for server_encryption_options: 'TLSv1'"));
        let inline = server_ok(
            "server_encryption_options:\n  internode_encryption: all\n  ssl_context_factory:\n    \
             class_name: PEMBasedSslContextFactory\n    parameters:\n      private_key: k\n      \
             outbound_private_key: o\n      outbound_private_key_password: p\n",
        );
        assert_eq!(
            inline.outbound_keystore.map(|s| s.describe()).as_deref(),
            Some("server_encryption_options.ssl_context_factory.parameters.outbound_private_key")
        );
        // The client block knows no outbound key.
        assert!(error_text(
            "client_encryption_options:\n  ssl_context_factory:\n    class_name: \
             PEMBasedSslContextFactory\n    parameters:\n      outbound_private_key: o\n"
        )
        .contains("unknown ssl_context_factory parameter 'outbound_private_key'"));
        assert!(
            error("  internode_encryption: all\n  enabled_protocols: x\n")
                .contains("[server_encryption_options.enabled_protocols]")
        );
    }

    #[test]
    fn unknown_keys_inside_the_block_are_named() {
        assert!(
            error_text("client_encryption_options:\n  enabled: true\n  keystore_type: PEM\n")
                .contains("[client_encryption_options.keystore_type] from your rocksandra.yaml")
        );
    }
}
