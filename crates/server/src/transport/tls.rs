//! TLS on the native port (`client_encryption_options`): the rustls server
//! configuration, built once at startup from PEM key material, and each
//! accepted socket's handshake, bounded by a timeout. The storage port's
//! configurations (`server_encryption_options`, `internode_tls`) are built
//! here from the same material; the cluster crate runs their handshakes. With TLS optional, the
//! first byte tells the two apart: a TLS connection starts with a handshake
//! record (0x16), a CQL one with its protocol version (1 to 5).
//!
//! Cassandra reads JKS and PKCS12 stores through the JVM; we read PEM only
//! (see `config::encryption`). Everything here runs before storage opens,
//! so a bad file stops the node at startup with the path in the message.

use std::fmt;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rocksandra_cluster::tls::{starts_with_tls, InternodeEncryption, InternodeTls};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::pki_types::{ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme, SupportedCipherSuite, SupportedProtocolVersion,
};
use thiserror::Error;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::config::{
    ClientAuth, EncryptionOptions, PemSource, ServerEncryption, TlsPolicy, TlsVersion, SERVER_KEY,
};

/// How long a client may take from connecting to a finished TLS handshake
/// (with TLS optional: to its first byte, then the handshake). A client
/// that never finishes loses its connection slot then (Netty's default,
/// which Cassandra keeps).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest keystore or truststore file read: a key and a long chain, or
/// hundreds of CA certificates, fit many times over.
pub const PEM_FILE_BYTES_MAX: u64 = 1024 * 1024;

/// Why TLS cannot start, with the yaml block at fault.
#[derive(Debug, Error)]
#[error("{block}: {problem}")]
pub struct TlsConfigError {
    /// `client_encryption_options` or `server_encryption_options`.
    pub block: &'static str,
    pub problem: TlsProblem,
}

/// What is wrong: always names the key or file at fault.
#[derive(Debug, Error)]
pub enum TlsProblem {
    #[error(
        "TLS is {policy} but no keystore is set (a PEM file with \
         the private key and its certificate chain, or \
         ssl_context_factory.parameters.private_key)"
    )]
    NoKeystore { policy: &'static str },
    #[error(
        "require_client_auth needs a truststore (a PEM file of CA \
         certificates, or ssl_context_factory.parameters.trusted_certificates)"
    )]
    NoTruststore,
    #[error(
        "internode_encryption needs a truststore to check peers' certificates against (a \
         PEM file of CA certificates, or ssl_context_factory.parameters.trusted_certificates)"
    )]
    NoPeerTruststore,
    #[error("cannot read {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{what} {origin} is not valid PEM: {message}")]
    Pem {
        what: &'static str,
        origin: String,
        message: String,
    },
    #[error("{what} {origin} holds no {expected}")]
    Missing {
        what: &'static str,
        origin: String,
        expected: &'static str,
    },
    #[error(
        "the private key in {origin} is encrypted; encrypted keys \
         are not supported, decrypt it (openssl pkey -in KEY -out KEY.plain) and keep the \
         file readable by this node only"
    )]
    EncryptedKey { origin: String },
    #[error("{what} {origin}: {message}")]
    Rejected {
        what: &'static str,
        origin: String,
        message: String,
    },
    #[error(
        "cipher suite '{name}' is not supported; rustls offers {}",
        supported_suite_names().join(", ")
    )]
    UnsupportedCipherSuite { name: String },
    #[error(
        "none of the cipher_suites works with the accepted \
         protocols ({protocols})"
    )]
    NoUsableCipherSuite { protocols: String },
}

/// TLS as one server applies it to every accepted connection.
#[derive(Clone)]
pub struct ClientTls {
    acceptor: TlsAcceptor,
    optional: bool,
    handshake_timeout: Duration,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("optional", &self.optional)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl ClientTls {
    /// Reads the key material and builds the TLS configuration; None when
    /// the native port stays plain.
    pub fn from_config(options: &EncryptionOptions) -> Result<Option<ClientTls>, TlsConfigError> {
        let keystore_exists = match &options.keystore {
            Some(PemSource::File(path)) => path.exists(),
            Some(PemSource::Inline { .. }) => true,
            None => false,
        };
        let policy = options.policy(keystore_exists);
        if policy == TlsPolicy::Unencrypted {
            return Ok(None);
        }
        let config = server_config(options, policy).map_err(|problem| TlsConfigError {
            block: options.block,
            problem,
        })?;
        Ok(Some(ClientTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            optional: policy == TlsPolicy::Optional,
            handshake_timeout: TLS_HANDSHAKE_TIMEOUT,
        }))
    }

    /// Replaces `TLS_HANDSHAKE_TIMEOUT` (tests use a short one).
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> ClientTls {
        self.handshake_timeout = timeout;
        self
    }

    /// Plain CQL is accepted too.
    pub fn is_optional(&self) -> bool {
        self.optional
    }

    /// Runs the server side of the handshake (after telling TLS from plain
    /// CQL when TLS is optional), within the handshake timeout.
    pub(super) async fn accept(&self, socket: TcpStream) -> io::Result<ClientStream> {
        let timeout = self.handshake_timeout;
        tokio::time::timeout(timeout, self.accept_untimed(socket))
            .await
            .unwrap_or_else(|_| {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no TLS handshake within {timeout:?}"),
                ))
            })
    }

    async fn accept_untimed(&self, socket: TcpStream) -> io::Result<ClientStream> {
        if self.optional && !starts_with_tls(&socket).await? {
            return Ok(ClientStream::Plain(socket));
        }
        let stream = self.acceptor.accept(socket).await?;
        Ok(ClientStream::Tls(Box::new(stream)))
    }
}

/// An accepted client connection, encrypted or not.
pub(super) enum ClientStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// TLS on the storage port from `server_encryption_options`; None when
/// `internode_encryption` is `none`. Its warnings go to the log.
pub fn internode_tls(options: &ServerEncryption) -> Result<Option<InternodeTls>, TlsConfigError> {
    for warning in &options.warnings {
        tracing::warn!("{warning}");
    }
    if options.internode == InternodeEncryption::None {
        return Ok(None);
    }
    let fail = |problem| TlsConfigError {
        block: SERVER_KEY,
        problem,
    };
    let server = server_config(&options.tls, TlsPolicy::Encrypted).map_err(fail)?;
    let client = client_config(options).map_err(fail)?;
    Ok(Some(InternodeTls {
        encryption: options.internode,
        server: Arc::new(server),
        client: Arc::new(client),
        accept_plain: options.accepts_plain(),
    }))
}

/// The side of a node (or nodetool) that connects: the peer's certificate
/// checked against the truststore (its name too with
/// `require_endpoint_verification`), and this node's own presented.
fn client_config(options: &ServerEncryption) -> Result<ClientConfig, TlsProblem> {
    let tls = &options.tls;
    let truststore = tls
        .truststore
        .as_ref()
        .ok_or(TlsProblem::NoPeerTruststore)?;
    let provider = Arc::new(provider(tls)?);
    let webpki = WebPkiServerVerifier::builder_with_provider(
        Arc::new(trusted_roots(truststore)?),
        provider.clone(),
    )
    .build()
    .map_err(|e| TlsProblem::Rejected {
        what: "truststore",
        origin: truststore.describe(),
        message: e.to_string(),
    })?;
    let verifier: Arc<dyn ServerCertVerifier> = if options.require_endpoint_verification {
        webpki
    } else {
        Arc::new(AnyNameVerifier(webpki))
    };
    let keystore = options
        .outbound_keystore
        .as_ref()
        .or(tls.keystore.as_ref())
        .ok_or(TlsProblem::NoKeystore { policy: "enabled" })?;
    let (chain, key) = key_and_chain(keystore)?;
    ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&protocol_versions(tls))
        .map_err(|e| TlsProblem::Rejected {
            what: "protocols",
            origin: protocol_names(tls),
            message: e.to_string(),
        })?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(chain, key)
        .map_err(|e| TlsProblem::Rejected {
            what: "keystore",
            origin: keystore.describe(),
            message: format!("the key and certificate cannot be used: {e}"),
        })
}

/// A peer's certificate must chain to the truststore but need not name the
/// address connected to: Cassandra's `require_endpoint_verification: false`
/// (the default). Names are the last thing rustls checks, so every other
/// check has passed when it reports a name mismatch.
#[derive(Debug)]
struct AnyNameVerifier(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyNameVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verified {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The certificate chain and private key of a keystore.
fn key_and_chain(
    keystore: &PemSource,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsProblem> {
    let pem = read_pem(keystore, "keystore")?;
    let chain = certificates(&pem, keystore, "keystore")?;
    let key = private_key(&pem, keystore)?;
    Ok((chain, key))
}

fn protocol_versions(options: &EncryptionOptions) -> Vec<&'static SupportedProtocolVersion> {
    options
        .protocols
        .iter()
        .map(|version| match version {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect()
}

fn server_config(
    options: &EncryptionOptions,
    policy: TlsPolicy,
) -> Result<ServerConfig, TlsProblem> {
    let keystore = options.keystore.as_ref().ok_or(TlsProblem::NoKeystore {
        policy: match policy {
            TlsPolicy::Optional => "optional",
            _ => "enabled",
        },
    })?;
    let (chain, key) = key_and_chain(keystore)?;
    let provider = Arc::new(provider(options)?);
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&protocol_versions(options))
        .map_err(|e| TlsProblem::Rejected {
            what: "protocols",
            origin: protocol_names(options),
            message: e.to_string(),
        })?;
    let builder = match options.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Optional | ClientAuth::Required => {
            let truststore = options
                .truststore
                .as_ref()
                .ok_or(TlsProblem::NoTruststore)?;
            let roots = trusted_roots(truststore)?;
            let mut verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            if options.client_auth == ClientAuth::Optional {
                verifier = verifier.allow_unauthenticated();
            }
            let verifier = verifier.build().map_err(|e| TlsProblem::Rejected {
                what: "truststore",
                origin: truststore.describe(),
                message: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsProblem::Rejected {
            what: "keystore",
            origin: keystore.describe(),
            message: format!("the key and certificate cannot be used: {e}"),
        })
}

/// rustls's ring provider with the configured cipher suites, in their order.
fn provider(options: &EncryptionOptions) -> Result<CryptoProvider, TlsProblem> {
    let mut provider = rustls::crypto::ring::default_provider();
    let Some(names) = &options.cipher_suites else {
        return Ok(provider);
    };
    let mut chosen: Vec<SupportedCipherSuite> = Vec::with_capacity(names.len());
    for name in names {
        let suite = provider
            .cipher_suites
            .iter()
            .find(|suite| suite_matches(suite, name))
            .ok_or_else(|| TlsProblem::UnsupportedCipherSuite { name: name.clone() })?;
        if !chosen.iter().any(|c| c.suite() == suite.suite()) {
            chosen.push(*suite);
        }
    }
    let usable = chosen
        .iter()
        .any(|suite| options.protocols.iter().any(|v| suite_version(suite) == *v));
    if !usable {
        return Err(TlsProblem::NoUsableCipherSuite {
            protocols: protocol_names(options),
        });
    }
    provider.cipher_suites = chosen;
    Ok(provider)
}

fn suite_version(suite: &SupportedCipherSuite) -> TlsVersion {
    match suite {
        SupportedCipherSuite::Tls12(_) => TlsVersion::Tls12,
        SupportedCipherSuite::Tls13(_) => TlsVersion::Tls13,
    }
}

/// The IANA name (as Java and cassandra.yaml write it): rustls calls the
/// TLS 1.3 suites `TLS13_...`, the registry `TLS_...`.
fn iana_name(suite: &SupportedCipherSuite) -> Option<String> {
    let name = suite.suite().as_str()?;
    Some(match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_string(),
    })
}

fn suite_matches(suite: &SupportedCipherSuite, name: &str) -> bool {
    let rustls_name = suite.suite().as_str();
    iana_name(suite).is_some_and(|n| n.eq_ignore_ascii_case(name))
        || rustls_name.is_some_and(|n| n.eq_ignore_ascii_case(name))
}

fn supported_suite_names() -> Vec<String> {
    rustls::crypto::ring::ALL_CIPHER_SUITES
        .iter()
        .filter_map(iana_name)
        .collect()
}

fn protocol_names(options: &EncryptionOptions) -> String {
    let names: Vec<&str> = options.protocols.iter().map(|v| v.name()).collect();
    names.join(", ")
}

/// The PEM text of a source; files are read up to `PEM_FILE_BYTES_MAX`.
fn read_pem(source: &PemSource, what: &'static str) -> Result<Vec<u8>, TlsProblem> {
    match source {
        PemSource::Inline { pem, .. } => Ok(pem.as_bytes().to_vec()),
        PemSource::File(path) => read_bounded(path).map_err(|source| TlsProblem::Read {
            what,
            path: path.display().to_string(),
            source,
        }),
    }
}

fn read_bounded(path: &Path) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(PEM_FILE_BYTES_MAX + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > PEM_FILE_BYTES_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {PEM_FILE_BYTES_MAX} bytes"),
        ));
    }
    Ok(bytes)
}

fn pem_error(what: &'static str, source: &PemSource, error: pem::Error) -> TlsProblem {
    let message = match error {
        pem::Error::MissingSectionEnd { end_marker } => format!(
            "a section has no '{}' line",
            String::from_utf8_lossy(&end_marker)
        ),
        pem::Error::IllegalSectionStart { line } => {
            format!("malformed line '{}'", String::from_utf8_lossy(&line).trim())
        }
        pem::Error::Base64Decode(e) => format!("bad base64: {e}"),
        other => other.to_string(),
    };
    TlsProblem::Pem {
        what,
        origin: source.describe(),
        message,
    }
}

fn certificates(
    pem: &[u8],
    source: &PemSource,
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsProblem> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(what, source, e))?;
    if certificates.is_empty() {
        return Err(TlsProblem::Missing {
            what,
            origin: source.describe(),
            expected: "certificate (-----BEGIN CERTIFICATE-----)",
        });
    }
    Ok(certificates)
}

fn private_key(pem: &[u8], source: &PemSource) -> Result<PrivateKeyDer<'static>, TlsProblem> {
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(key) => Ok(key),
        Err(pem::Error::NoItemsFound) => {
            let text = String::from_utf8_lossy(pem);
            if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
                Err(TlsProblem::EncryptedKey {
                    origin: source.describe(),
                })
            } else {
                Err(TlsProblem::Missing {
                    what: "keystore",
                    origin: source.describe(),
                    expected: "private key (PKCS#8, PKCS#1 RSA or SEC1 EC, in PEM)",
                })
            }
        }
        Err(e) => Err(pem_error("keystore", source, e)),
    }
}

fn trusted_roots(source: &PemSource) -> Result<RootCertStore, TlsProblem> {
    let pem = read_pem(source, "truststore")?;
    let mut roots = RootCertStore::empty();
    for certificate in certificates(&pem, source, "truststore")? {
        roots.add(certificate).map_err(|e| TlsProblem::Rejected {
            what: "truststore",
            origin: source.describe(),
            message: format!("a certificate cannot be used as a trust anchor: {e}"),
        })?;
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(keystore: PemSource) -> EncryptionOptions {
        EncryptionOptions {
            enabled: true,
            keystore: Some(keystore),
            ..EncryptionOptions::default()
        }
    }

    fn error_text(options: &EncryptionOptions) -> String {
        match ClientTls::from_config(options) {
            Ok(tls) => panic!("should fail, got {tls:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn plain_unless_enabled_or_optional() {
        let disabled = EncryptionOptions {
            keystore: Some(PemSource::File("/nonexistent/keystore.pem".into())),
            ..EncryptionOptions::default()
        };
        assert!(ClientTls::from_config(&disabled)
            .expect("a missing keystore with TLS off is fine")
            .is_none());
        assert!(ClientTls::from_config(&EncryptionOptions::default())
            .expect("plain")
            .is_none());
    }

    #[test]
    fn missing_key_material_is_named() {
        let enabled = EncryptionOptions {
            enabled: true,
            ..EncryptionOptions::default()
        };
        assert!(error_text(&enabled).contains("TLS is enabled but no keystore is set"));
        let missing = options(PemSource::File("/nonexistent/keystore.pem".into()));
        assert_eq!(
            error_text(&missing),
            "client_encryption_options: cannot read keystore /nonexistent/keystore.pem: No \
             such file or directory (os error 2)"
        );
    }

    #[test]
    fn bad_pem_never_panics_and_is_named() {
        let inline = |pem: &str| {
            options(PemSource::Inline {
                block: crate::config::CLIENT_KEY,
                key: "private_key",
                pem: pem.to_string(),
            })
        };
        let source = "client_encryption_options.ssl_context_factory.parameters.private_key";
        assert_eq!(
            error_text(&inline("not pem at all")),
            format!(
                "client_encryption_options: keystore {source} holds no certificate \
                 (-----BEGIN CERTIFICATE-----)"
            )
        );
        let truncated = "-----BEGIN CERTIFICATE-----\nMIIB\n";
        assert!(error_text(&inline(truncated)).contains("is not valid PEM"));
        let bad_base64 = "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        assert!(error_text(&inline(bad_base64)).contains("bad base64"));
        // Valid PEM around garbage DER: rustls refuses the key, without panicking.
        let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n\
                       -----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert!(error_text(&inline(garbage)).contains("cannot be used"));
        let no_key = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(error_text(&inline(no_key)).contains("holds no private key"));
        let encrypted = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n\
                         -----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n\
                         -----END ENCRYPTED PRIVATE KEY-----\n";
        assert!(error_text(&inline(encrypted)).contains("is encrypted"));
    }

    #[test]
    fn cipher_suites_map_iana_names_and_refuse_others() {
        let with_suites = |names: &[&str], protocols: &[TlsVersion]| EncryptionOptions {
            cipher_suites: Some(names.iter().map(|n| n.to_string()).collect()),
            protocols: protocols.to_vec(),
            ..EncryptionOptions::default()
        };
        let all = TlsVersion::ALL;
        let chosen = provider(&with_suites(
            &[
                "TLS_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS13_AES_256_GCM_SHA384",
            ],
            &all,
        ))
        .expect("known suites");
        let names: Vec<String> = chosen.cipher_suites.iter().filter_map(iana_name).collect();
        assert_eq!(
            names,
            vec![
                "TLS_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
            ]
        );
        let cbc = provider(&with_suites(&["TLS_RSA_WITH_AES_128_CBC_SHA"], &all));
        let message = cbc.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("cipher suite 'TLS_RSA_WITH_AES_128_CBC_SHA' is not supported")
                && message.contains("TLS_AES_128_GCM_SHA256"),
            "{message}"
        );
        let mismatch = provider(&with_suites(
            &["TLS_AES_128_GCM_SHA256"],
            &[TlsVersion::Tls12],
        ));
        assert!(matches!(
            mismatch,
            Err(TlsProblem::NoUsableCipherSuite { .. })
        ));
        assert!(provider(&EncryptionOptions::default()).is_ok());
    }
}
