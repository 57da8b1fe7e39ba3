//! TLS between nodes (`server_encryption_options`): which peers are
//! spoken to over TLS, and the handshakes on both ends of the storage
//! port. The rustls configurations come built (the server reads the PEM
//! files); messaging and nodetool only use them.
//!
//! With `all` and `require_client_auth`, a process without a certificate
//! signed by the truststore gets no further than the handshake: it cannot
//! join, gossip (which then runs over these connections, not UDP), read,
//! write, stream or send admin commands.

use std::io;
use std::net::IpAddr;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ServerConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::{client, server, TlsAcceptor, TlsConnector};

/// The first byte of a TLS connection (a handshake record); an internode
/// connection in the clear starts with its `Hello` frame's length, whose
/// first byte is 0, a CQL one with its protocol version (1 to 5).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// A fatal TLS alert, protocol_version, as a record: what a node sends
/// before it closes a connection that speaks the other protocol (plain
/// messages to a TLS-only port, a TLS handshake to a plain one), so the
/// peer can say why it was closed (`handshake_failure`).
pub const PROTOCOL_MISMATCH_ALERT: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46];

/// `internode_encryption`: which connections between nodes use TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InternodeEncryption {
    None,
    /// Between data centers.
    Dc,
    /// Between racks (and data centers).
    Rack,
    All,
}

impl InternodeEncryption {
    pub const ALL: [InternodeEncryption; 4] = [
        InternodeEncryption::None,
        InternodeEncryption::Dc,
        InternodeEncryption::Rack,
        InternodeEncryption::All,
    ];

    /// As cassandra.yaml writes it.
    pub fn name(self) -> &'static str {
        match self {
            InternodeEncryption::None => "none",
            InternodeEncryption::Dc => "dc",
            InternodeEncryption::Rack => "rack",
            InternodeEncryption::All => "all",
        }
    }

    /// Whether a connection from a node at `local` (data center, rack) to
    /// a peer at `peer` is encrypted; a peer whose place is not known yet
    /// is spoken to over TLS.
    pub fn should_encrypt(self, local: (&str, &str), peer: Option<(&str, &str)>) -> bool {
        match (self, peer) {
            (InternodeEncryption::None, _) => false,
            (InternodeEncryption::All, _) | (_, None) => true,
            (InternodeEncryption::Dc, Some((dc, _))) => dc != local.0,
            (InternodeEncryption::Rack, Some((dc, rack))) => dc != local.0 || rack != local.1,
        }
    }
}

/// TLS on the storage port, built from `server_encryption_options`.
pub struct InternodeTls {
    pub encryption: InternodeEncryption,
    /// Peers connecting to this node: this node's certificate, and the
    /// check of theirs (`require_client_auth`).
    pub server: Arc<ServerConfig>,
    /// This node connecting to peers (nodetool too): the truststore, and
    /// the certificate presented (`outbound_keystore`, else `keystore`).
    pub client: Arc<ClientConfig>,
    /// Plain connections are accepted too (`optional`, `dc`, `rack`).
    pub accept_plain: bool,
}

impl std::fmt::Debug for InternodeTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InternodeTls")
            .field("encryption", &self.encryption)
            .field("accept_plain", &self.accept_plain)
            .finish_non_exhaustive()
    }
}

/// One end of an internode connection, encrypted or not.
pub enum InternodeStream {
    Plain(TcpStream),
    Accepted(Box<server::TlsStream<TcpStream>>),
    Connected(Box<client::TlsStream<TcpStream>>),
}

impl InternodeTls {
    /// The server side of a connection a peer opened: TLS unless plain
    /// connections are accepted and this one does not start with a TLS
    /// handshake.
    pub async fn accept(&self, mut socket: TcpStream) -> io::Result<InternodeStream> {
        if !starts_with_tls(&socket).await? {
            if self.accept_plain {
                return Ok(InternodeStream::Plain(socket));
            }
            // Told apart here rather than by rustls, which reads the
            // first bytes as a damaged record.
            let _ = socket.write_all(&PROTOCOL_MISMATCH_ALERT).await;
            return Err(io::Error::new(io::ErrorKind::InvalidData, PlainToTls));
        }
        let stream = TlsAcceptor::from(self.server.clone())
            .accept(socket)
            .await?;
        Ok(InternodeStream::Accepted(Box::new(stream)))
    }

    /// The client side of a connection to `peer`.
    pub async fn connect(&self, peer: IpAddr, socket: TcpStream) -> io::Result<InternodeStream> {
        let stream = TlsConnector::from(self.client.clone())
            .connect(ServerName::IpAddress(peer.into()), socket)
            .await?;
        Ok(InternodeStream::Connected(Box::new(stream)))
    }
}

/// Whether a connection starts with a TLS handshake, from its first byte,
/// read without consuming it (the storage port, and the native port with
/// optional TLS, take both kinds).
pub async fn starts_with_tls(socket: &TcpStream) -> io::Result<bool> {
    let mut first = [0u8; 1];
    if socket.peek(&mut first).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "closed before sending anything",
        ));
    }
    Ok(first[0] == TLS_HANDSHAKE_RECORD)
}

/// A connection to a TLS-only storage port that began in the clear.
#[derive(Debug, thiserror::Error)]
#[error("protocol mismatch: the peer sent plain internode messages, not a TLS handshake (internode encryption is off at the peer?)")]
pub struct PlainToTls;

/// Why a TLS handshake between nodes failed (or a TLS connection failed
/// before its first answer), in the terms of the fix: unknown CA, expired
/// certificate, no certificate offered, protocol mismatch. `error` is what
/// the handshake or the first read returned.
pub fn handshake_failure(error: &io::Error) -> String {
    let inner = error.get_ref();
    if let Some(e) = inner.and_then(|e| e.downcast_ref::<rustls::Error>()) {
        return describe_tls_error(e);
    }
    if let Some(e) = inner.and_then(|e| e.downcast_ref::<PlainToTls>()) {
        return e.to_string();
    }
    match error.kind() {
        io::ErrorKind::UnexpectedEof => "the peer closed the connection during the TLS handshake \
             (protocol mismatch: internode encryption is off at the peer?)"
            .into(),
        io::ErrorKind::ConnectionReset => {
            "the peer reset the connection during the TLS handshake".into()
        }
        _ => format!("TLS handshake failed: {error}"),
    }
}

/// `handshake_failure` for an error rustls reported.
fn describe_tls_error(error: &rustls::Error) -> String {
    use rustls::{AlertDescription as Alert, CertificateError as Cert, Error};
    match error {
        Error::InvalidCertificate(Cert::UnknownIssuer) => {
            "unknown CA: the peer's certificate is not signed by a CA of this node's truststore".into()
        }
        Error::InvalidCertificate(Cert::Expired | Cert::ExpiredContext { .. }) => {
            "certificate expired: the peer's certificate is past its validity".into()
        }
        Error::InvalidCertificate(Cert::NotValidYet | Cert::NotValidYetContext { .. }) => {
            "certificate not yet valid: the peer's certificate starts later".into()
        }
        Error::InvalidCertificate(other) => format!("invalid peer certificate: {other:?}"),
        Error::NoCertificatesPresented => {
            "no certificate offered: the peer presented no certificate and require_client_auth is on here".into()
        }
        Error::AlertReceived(alert) => match alert {
            Alert::UnknownCA => "the peer refused this node's certificate: unknown CA \
                 (not signed by a CA of the peer's truststore)"
                .into(),
            Alert::CertificateExpired => {
                "the peer refused this node's certificate: certificate expired".into()
            }
            Alert::CertificateRequired | Alert::NoCertificate => {
                "the peer wants a certificate and this node offered none".into()
            }
            Alert::BadCertificate | Alert::CertificateUnknown | Alert::UnsupportedCertificate => {
                format!("the peer refused this node's certificate ({alert:?})")
            }
            Alert::ProtocolVersion => "protocol mismatch: the peer refused the TLS version, \
                 or does not speak TLS on its storage port (internode encryption is off there?)"
                .into(),
            other => format!("the peer ended the TLS handshake with the alert {other:?}"),
        },
        Error::InvalidMessage(_) | Error::InappropriateMessage { .. } => {
            "protocol mismatch: the peer does not speak TLS on its storage port".into()
        }
        Error::PeerIncompatible(why) => {
            format!("protocol mismatch: no TLS version or cipher suite in common ({why:?})")
        }
        other => format!("TLS handshake failed: {other}"),
    }
}

macro_rules! each_stream {
    ($self:ident, $s:ident => $body:expr) => {
        match $self.get_mut() {
            InternodeStream::Plain($s) => $body,
            InternodeStream::Accepted($s) => $body,
            InternodeStream::Connected($s) => $body,
        }
    };
}

impl tokio::io::AsyncRead for InternodeStream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        each_stream!(self, s => std::pin::Pin::new(s).poll_read(cx, buf))
    }
}

impl tokio::io::AsyncWrite for InternodeStream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        each_stream!(self, s => std::pin::Pin::new(s).poll_write(cx, buf))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        each_stream!(self, s => std::pin::Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        each_stream!(self, s => std::pin::Pin::new(s).poll_shutdown(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::InternodeEncryption::{All, Dc, None, Rack};
    use super::{handshake_failure, PlainToTls};
    use rustls::{AlertDescription, CertificateError, Error};
    use std::io;

    #[test]
    fn handshake_failures_name_their_cause() {
        let said = |e: io::Error| handshake_failure(&e);
        let tls = |e: Error| io::Error::new(io::ErrorKind::InvalidData, e);
        let refused = |c: CertificateError| said(tls(Error::InvalidCertificate(c)));
        let alert = |a: AlertDescription| said(tls(Error::AlertReceived(a)));
        // What the node that checks a certificate sees...
        assert!(refused(CertificateError::UnknownIssuer).starts_with("unknown CA: "));
        assert!(refused(CertificateError::Expired).starts_with("certificate expired: "));
        let no_certificate = said(tls(Error::NoCertificatesPresented));
        assert!(
            no_certificate.starts_with("no certificate offered: "),
            "{no_certificate}"
        );
        // ... and what the refused one reads in the alert.
        assert_eq!(
            alert(AlertDescription::UnknownCA),
            "the peer refused this node's certificate: unknown CA \
             (not signed by a CA of the peer's truststore)"
        );
        assert!(alert(AlertDescription::CertificateExpired).ends_with("certificate expired"));
        assert!(alert(AlertDescription::CertificateRequired).contains("offered none"));
        // Plain against TLS, either way round.
        for mismatch in [
            alert(AlertDescription::ProtocolVersion),
            said(io::Error::new(io::ErrorKind::InvalidData, PlainToTls)),
            said(io::Error::from(io::ErrorKind::UnexpectedEof)),
        ] {
            assert!(mismatch.contains("protocol mismatch"), "{mismatch}");
        }
    }

    #[test]
    fn who_is_spoken_to_over_tls() {
        let local = ("dc1", "r1");
        let same_rack = Some(("dc1", "r1"));
        let other_rack = Some(("dc1", "r2"));
        let other_dc = Some(("dc2", "r1"));
        assert!(!None.should_encrypt(local, other_dc));
        assert!(All.should_encrypt(local, same_rack));
        assert!(!Dc.should_encrypt(local, other_rack));
        assert!(Dc.should_encrypt(local, other_dc));
        assert!(!Rack.should_encrypt(local, same_rack));
        assert!(Rack.should_encrypt(local, other_rack));
        assert!(Rack.should_encrypt(local, other_dc));
        // Not known yet: encrypted.
        assert!(Dc.should_encrypt(local, Option::None));
        assert!(Rack.should_encrypt(local, Option::None));
    }
}
