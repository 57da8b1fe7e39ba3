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
use tokio::net::TcpStream;
use tokio_rustls::{client, server, TlsAcceptor, TlsConnector};

/// The first byte of a TLS connection (a handshake record); an internode
/// connection in the clear starts with its `Hello` frame's length, whose
/// first byte is 0, a CQL one with its protocol version (1 to 5).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

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
    pub async fn accept(&self, socket: TcpStream) -> io::Result<InternodeStream> {
        if self.accept_plain && !starts_with_tls(&socket).await? {
            return Ok(InternodeStream::Plain(socket));
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
