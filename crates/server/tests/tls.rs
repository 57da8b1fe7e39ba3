//! The CQL transport over TLS (`client_encryption_options`): an in-process
//! server with key material made at test time by
//! `scripts/tls-test-certs.sh` (the openssl CLI), spoken to through a
//! rustls client. TLS required, optional, mutual; handshakes that never
//! finish; garbage instead of a ClientHello.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rocksandra_server::config::{ClientAuth, EncryptionOptions, PemSource};
use rocksandra_server::handler::NOT_READY_MESSAGE;
use rocksandra_server::transport::tls::ClientTls;
use rocksandra_server::{NotReadyHandler, Server, TransportConfig, TransportLimits};
use rocksandra_wire::{ErrorKind, ProtocolVersion, Request, Response};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

mod common;
use common::{query, Client, WAIT};

/// Certificates made once per test (each test has its own directory).
struct Material {
    dir: tempfile::TempDir,
}

impl Material {
    fn new() -> Material {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tls-test-certs.sh");
        let status = std::process::Command::new("bash")
            .arg(&script)
            .arg(dir.path())
            .status()
            .expect("runs scripts/tls-test-certs.sh");
        assert!(status.success(), "{} failed", script.display());
        Material { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn options(&self, optional: bool, client_auth: ClientAuth) -> EncryptionOptions {
        EncryptionOptions {
            enabled: true,
            optional: Some(optional),
            keystore: Some(PemSource::File(self.path("server.pem"))),
            truststore: Some(PemSource::File(self.path("ca.pem"))),
            client_auth,
            ..EncryptionOptions::default()
        }
    }

    /// A rustls client trusting the test CA, with `identity` (`client` or
    /// `rogue`) as its certificate when given.
    fn connector(&self, identity: Option<&str>) -> TlsConnector {
        let mut roots = RootCertStore::empty();
        let ca = CertificateDer::from_pem_file(self.path("ca.pem")).expect("ca.pem");
        roots.add(ca).expect("CA is a trust anchor");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots);
        let config = match identity {
            Some(name) => {
                let chain = vec![
                    CertificateDer::from_pem_file(self.path(&format!("{name}.crt")))
                        .expect("client certificate"),
                ];
                let key = PrivateKeyDer::from_pem_file(self.path(&format!("{name}.key")))
                    .expect("client key");
                builder
                    .with_client_auth_cert(chain, key)
                    .expect("client identity")
            }
            None => builder.with_no_client_auth(),
        };
        TlsConnector::from(Arc::new(config))
    }
}

struct TlsServer {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl TlsServer {
    async fn start(tls: ClientTls, limits: TransportLimits) -> TlsServer {
        let config = TransportConfig {
            address: "127.0.0.1:0".parse().expect("address"),
            authenticator: rocksandra_server::config::Authenticator::AllowAll,
            limits,
            shutdown_grace: WAIT,
            tls: Some(tls),
        };
        let server = Server::bind(config, Arc::new(NotReadyHandler))
            .await
            .expect("binds");
        let address = server.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async {
            let _ = stopped.await;
        }));
        TlsServer {
            address,
            stop: Some(stop),
            task,
        }
    }

    async fn with(material: &Material, optional: bool, client_auth: ClientAuth) -> TlsServer {
        let tls = ClientTls::from_config(&material.options(optional, client_auth))
            .expect("TLS configuration loads")
            .expect("TLS is on");
        assert_eq!(tls.is_optional(), optional);
        TlsServer::start(tls, TransportLimits::default()).await
    }

    async fn tls_client(
        &self,
        connector: &TlsConnector,
        version: ProtocolVersion,
    ) -> std::io::Result<Client> {
        let tcp = TcpStream::connect(self.address).await?;
        let name = ServerName::try_from("127.0.0.1").expect("server name");
        let stream = tokio::time::timeout(WAIT, connector.connect(name, tcp))
            .await
            .expect("handshake ends in time")?;
        Ok(Client::over(Box::new(stream), version))
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(WAIT * 2, &mut self.task)
            .await
            .expect("server stops in time")
            .expect("server task ends cleanly");
    }
}

/// OPTIONS, STARTUP (v5: segments from then on) and a query, whose answer
/// is the stand-in handler's error.
async fn speaks_cql(client: &mut Client) {
    let response = client.request(2, Request::Options).await;
    assert!(matches!(response, Response::Supported(_)), "{response:?}");
    assert_eq!(client.startup(None).await, Response::Ready);
    let response = client.request(3, query("SELECT * FROM system.local")).await;
    let Response::Error(error) = response else {
        panic!("expected the not-ready error, got {response:?}");
    };
    assert_eq!(
        (error.kind, error.message.as_str()),
        (ErrorKind::ServerError, NOT_READY_MESSAGE)
    );
}

/// True when the server closed the connection without a CQL answer to OPTIONS.
async fn refused(client: &mut Client) -> bool {
    let options = client.frame(0, Request::Options).to_bytes();
    if client.socket.write_all(&options).await.is_err() || client.socket.flush().await.is_err() {
        return true;
    }
    let mut buf = Vec::new();
    let read = tokio::time::timeout(WAIT, client.socket.read_to_end(&mut buf))
        .await
        .expect("the server closes in time");
    // A refused TLS client sees an error (an alert); a plain one sees the
    // bytes of a TLS alert, or nothing, and then the end of the stream.
    read.is_err() || !buf.starts_with(&[0x84])
}

#[tokio::test]
async fn tls_required_serves_tls_clients_in_v4_and_v5_and_refuses_plain_ones() {
    let material = Material::new();
    let server = TlsServer::with(&material, false, ClientAuth::None).await;
    let connector = material.connector(None);
    for version in [ProtocolVersion::V4, ProtocolVersion::V5] {
        let mut client = server
            .tls_client(&connector, version)
            .await
            .expect("TLS client connects");
        speaks_cql(&mut client).await;
    }
    let mut plain = Client::connect(server.address, ProtocolVersion::V4).await;
    assert!(refused(&mut plain).await, "a plain client must be refused");
    // The server is still up after that.
    let mut client = server
        .tls_client(&connector, ProtocolVersion::V5)
        .await
        .expect("connects");
    speaks_cql(&mut client).await;
    server.stop().await;
}

#[tokio::test]
async fn tls_optional_serves_both_on_one_port() {
    let material = Material::new();
    let server = TlsServer::with(&material, true, ClientAuth::None).await;
    let mut plain = Client::connect(server.address, ProtocolVersion::V5).await;
    speaks_cql(&mut plain).await;
    let mut tls = server
        .tls_client(&material.connector(None), ProtocolVersion::V5)
        .await
        .expect("TLS client connects");
    speaks_cql(&mut tls).await;
    server.stop().await;
}

#[tokio::test]
async fn mutual_tls_needs_a_certificate_from_the_truststore() {
    let material = Material::new();
    let server = TlsServer::with(&material, false, ClientAuth::Required).await;
    let mut client = server
        .tls_client(&material.connector(Some("client")), ProtocolVersion::V4)
        .await
        .expect("a CA-signed client connects");
    speaks_cql(&mut client).await;
    for identity in [None, Some("rogue")] {
        // With TLS 1.3 the client finishes its side of the handshake before
        // the server has checked its certificate: the refusal comes after.
        match server
            .tls_client(&material.connector(identity), ProtocolVersion::V4)
            .await
        {
            Err(_) => {}
            Ok(mut client) => assert!(refused(&mut client).await, "{identity:?} must be refused"),
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn optional_client_auth_accepts_clients_without_certificates_only() {
    let material = Material::new();
    let server = TlsServer::with(&material, false, ClientAuth::Optional).await;
    for identity in [None, Some("client")] {
        let mut client = server
            .tls_client(&material.connector(identity), ProtocolVersion::V5)
            .await
            .expect("connects");
        speaks_cql(&mut client).await;
    }
    match server
        .tls_client(&material.connector(Some("rogue")), ProtocolVersion::V5)
        .await
    {
        Err(_) => {}
        Ok(mut client) => assert!(refused(&mut client).await, "a rogue certificate is refused"),
    }
    server.stop().await;
}

#[tokio::test]
async fn a_stalled_handshake_loses_its_slot() {
    let material = Material::new();
    for optional in [false, true] {
        let tls = ClientTls::from_config(&material.options(optional, ClientAuth::None))
            .expect("loads")
            .expect("on")
            .with_handshake_timeout(Duration::from_millis(300));
        let limits = TransportLimits {
            max_connections: 1,
            ..TransportLimits::default()
        };
        let server = TlsServer::start(tls, limits).await;
        // Connects, takes the only slot, and says nothing (or half a ClientHello).
        let mut silent = TcpStream::connect(server.address).await.expect("connects");
        if optional {
            silent.write_all(&[0x16, 0x03]).await.expect("writes");
        }
        let mut rest = Vec::new();
        let read = tokio::time::timeout(WAIT, silent.read_to_end(&mut rest)).await;
        assert!(
            matches!(read, Ok(Ok(0)) | Ok(Err(_))),
            "closed after the timeout"
        );
        let mut client = server
            .tls_client(&material.connector(None), ProtocolVersion::V4)
            .await
            .expect("the slot is free again");
        speaks_cql(&mut client).await;
        server.stop().await;
    }
}

#[tokio::test]
async fn garbage_instead_of_a_client_hello_never_hurts_the_server() {
    let material = Material::new();
    let server = TlsServer::with(&material, true, ClientAuth::None).await;
    let garbage: [&[u8]; 4] = [
        // A handshake record header announcing a huge record.
        &[0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0x00],
        // A record with a ClientHello body of nonsense.
        &[0x16, 0x03, 0x03, 0x00, 0x05, 0x01, 0xff, 0xff, 0xff, 0xff],
        &[0x16; 64],
        // Not TLS and not CQL (optional mode hands it to the CQL decoder).
        b"GET / HTTP/1.1\r\n\r\n",
    ];
    for bytes in garbage {
        let mut socket = TcpStream::connect(server.address).await.expect("connects");
        socket.write_all(bytes).await.expect("writes");
        let _ = socket.shutdown().await;
        let mut rest = Vec::new();
        let read = tokio::time::timeout(WAIT, socket.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "the server closes {bytes:?} in time");
    }
    let mut client = server
        .tls_client(&material.connector(None), ProtocolVersion::V5)
        .await
        .expect("still serving");
    speaks_cql(&mut client).await;
    server.stop().await;
}
