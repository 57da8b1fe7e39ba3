//! Internode messaging: one persistent TCP connection per peer for the
//! requests this node sends (answers come back on it), and the connections
//! peers open to this node for theirs. Requests are matched to answers by
//! id; every queue has a named limit, and a full one fails the request at
//! once rather than waiting.
//!
//! Callers are blocking threads (the coordinator): `send` queues a request
//! and the answer (or its failure) arrives on a std channel the caller
//! waits on with its own deadline. Requests that arrive are answered by a
//! `Handler` on tokio's blocking pool.
//!
//! Fault injection for tests: `isolate` drops every message to and from the
//! given peers, as a network partition would; `slow` makes this node answer
//! every peer's data request late (a node stalled by its disk or a pause),
//! while gossip still calls it up.
//!
//! The coordinator sees messaging only as a `Transport`, so a test can put a
//! simulated network in its place (`tests/simulation.rs`).
//!
//! With `server_encryption_options`, connections are TLS (`tls`) to the
//! peers `internode_encryption` names, and gossip travels over them as
//! one-way `Request::Gossip` messages (`gossip_inbox`, `send_oneway`).

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use crate::message::{
    decode_body, encode_frame, frame_length, DecodeError, Envelope, Hello, RemoteError, Request,
    Response, HELLO_MAGIC, MAX_FRAME_BYTES, MAX_HELLO_BYTES,
};
use crate::metrics::{DroppedMessages, Verb};
use crate::tls::{
    handshake_failure, InternodeEncryption, InternodeStream, InternodeTls, PROTOCOL_MISMATCH_ALERT,
};

mod failures;
pub use failures::{ConnectionFailures, Direction, REPORT_INTERVAL};

/// Requests queued for one peer before `send` fails with Overloaded.
pub const OUTBOUND_QUEUE_MESSAGES: usize = 4096;
/// Requests from all peers being handled at once; more are answered
/// with `RemoteError::Overloaded`.
pub const MAX_INBOUND_REQUESTS: usize = 512;
/// Answers queued on one inbound connection.
pub const INBOUND_REPLY_QUEUE: usize = 1024;
/// How long connecting to a peer may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long `Messaging::probe` waits for a peer to refuse its connection.
pub const PROBE_WAIT: Duration = Duration::from_secs(1);
/// How long a connection may take to send its `Hello` before it is closed.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Inbound connections open at once (peers open one each, nodetool one per
/// command); more are closed as they are accepted.
pub const MAX_INBOUND_CONNECTIONS: usize = 1024;
/// A frame's body grows by at most this much per read, so a peer that
/// announces a large frame and sends little makes the node hold little.
const FRAME_READ_CHUNK_BYTES: usize = 64 << 10;
/// The id of a message that has no answer (requests' ids start at 1).
const ONEWAY_ID: u64 = 0;
/// Gossip messages from peers waiting for gossip to read them; more are
/// dropped, as a full UDP socket buffer would.
pub const GOSSIP_INBOX_MESSAGES: usize = 1024;
/// Requests waiting for an answer longer than this are forgotten (the
/// caller gave up long before: its own timeout is shorter).
pub const PENDING_EXPIRY: Duration = Duration::from_secs(120);

/// Answers requests from other nodes; runs on a blocking thread.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, from: IpAddr, request: Request) -> Response;
}

/// Why a request got no answer from its peer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("cannot reach {0}: {1}")]
    Unreachable(IpAddr, String),
    #[error("too many requests queued for {0}")]
    QueueFull(IpAddr),
    #[error("connection to {0} lost")]
    ConnectionLost(IpAddr),
}

/// Where an answer goes: the peer asked and its answer.
pub type Reply = (IpAddr, Result<Response, SendError>);
pub type ReplySender = std::sync::mpsc::Sender<Reply>;

/// How a coordinator reaches other nodes: `Messaging` over TCP, or a
/// simulated network in tests.
pub trait Transport: Send + Sync {
    /// Sends `request` to `peer`; its answer, or why there is none, goes to
    /// `reply` (nothing at all for a lost message: the caller's timeout
    /// decides).
    fn send(&self, peer: IpAddr, request: Request, reply: ReplySender);

    /// Sends and waits up to `timeout` for the answer.
    fn call(
        &self,
        peer: IpAddr,
        request: Request,
        timeout: Duration,
    ) -> Result<Response, SendError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.send(peer, request, tx);
        match rx.recv_timeout(timeout) {
            Ok((_, result)) => result,
            Err(_) => Err(SendError::Unreachable(peer, "timed out".into())),
        }
    }
}

impl Transport for Messaging {
    fn send(&self, peer: IpAddr, request: Request, reply: ReplySender) {
        Messaging::send(self, peer, request, reply)
    }
}

struct PendingRequest {
    reply: ReplySender,
    since: Instant,
}

struct Outbound {
    peer: IpAddr,
    queue: mpsc::Sender<(u64, Vec<u8>)>,
    pending: Mutex<HashMap<u64, PendingRequest>>,
}

impl Outbound {
    fn fail_all(&self, error: SendError) {
        let pending: Vec<PendingRequest> = self
            .pending
            .lock()
            .map(|mut p| p.drain().map(|(_, v)| v).collect())
            .unwrap_or_default();
        for p in pending {
            let _ = p.reply.send((self.peer, Err(error.clone())));
        }
    }

    fn complete(&self, id: u64, response: Response) {
        let entry = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(p) = entry {
            let _ = p.reply.send((self.peer, Ok(response)));
        }
    }

    fn fail(&self, id: u64, error: SendError) {
        let entry = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(p) = entry {
            let _ = p.reply.send((self.peer, Err(error)));
        }
    }

    fn expire(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.retain(|_, r| r.since.elapsed() < PENDING_EXPIRY);
        }
    }
}

pub struct Messaging {
    local: IpAddr,
    port: u16,
    cluster_name: String,
    runtime: tokio::runtime::Handle,
    handler: Arc<dyn Handler>,
    outbound: Mutex<HashMap<IpAddr, Arc<Outbound>>>,
    next_id: AtomicU64,
    /// Peers cut off by `isolate`; gossip filters with the same set.
    isolated: Arc<RwLock<HashSet<IpAddr>>>,
    /// Milliseconds every inbound request but admin commands waits before
    /// it is served (`slow`); 0 when healthy.
    slow_millis: AtomicU64,
    inbound_permits: Arc<Semaphore>,
    security: Arc<Security>,
    /// Where peers' gossip goes (set when gossip runs over messaging).
    gossip_inbox: OnceLock<mpsc::Sender<(IpAddr, Vec<u8>)>>,
    /// Requests refused or never sent, by verb.
    dropped: Arc<DroppedMessages>,
}

/// Decides, for `internode_encryption: dc | rack`, whether a peer is
/// spoken to over TLS (it knows the peers' data centers and racks).
pub type EncryptionRule = Box<dyn Fn(IpAddr) -> bool + Send + Sync>;

/// TLS on the storage port, when configured, whom it applies to, and the
/// connections that failed (reported here, on both ends).
struct Security {
    tls: Option<Arc<InternodeTls>>,
    rule: OnceLock<EncryptionRule>,
    failures: ConnectionFailures,
}

/// Why connecting to a peer failed.
#[derive(Debug)]
enum ConnectFailure {
    /// No TCP connection (the peer is down, or not listening).
    Tcp(std::io::Error),
    /// The TLS handshake failed.
    Tls(std::io::Error),
}

impl ConnectFailure {
    fn cause(&self) -> String {
        match self {
            ConnectFailure::Tcp(e) => e.to_string(),
            ConnectFailure::Tls(e) => handshake_failure(e),
        }
    }
}

/// Why an inbound connection ended.
#[derive(Debug)]
enum ServeError {
    /// Before the peer was known: the TLS handshake or the protocol.
    Handshake(String),
    /// Anything else (the peer went away, another cluster, a bad frame).
    Closed(String),
}

impl From<FrameError> for ServeError {
    fn from(e: FrameError) -> ServeError {
        ServeError::Closed(e.to_string())
    }
}

/// Why `Messaging::start` could not listen: the address it could not bind.
#[derive(Debug, thiserror::Error)]
#[error("{address}: {source}")]
pub struct BindError {
    pub address: SocketAddr,
    pub source: std::io::Error,
}

/// Why a probe (`Messaging::probe`) failed, as connection failures are
/// reported: a refused TLS handshake, another cluster, a timeout.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProbeError(pub String);

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The bytes are a TLS record where a frame was due.
    #[error("protocol mismatch: the peer speaks TLS on this connection and this node does not (internode encryption is off here?)")]
    TlsRecord,
    #[error("{0}")]
    Invalid(String),
}

impl Security {
    fn encrypts_to(&self, peer: IpAddr) -> bool {
        let Some(tls) = &self.tls else {
            return false;
        };
        match tls.encryption {
            InternodeEncryption::None => false,
            InternodeEncryption::All => true,
            InternodeEncryption::Dc | InternodeEncryption::Rack => {
                self.rule.get().is_none_or(|rule| rule(peer))
            }
        }
    }

    /// Connects to `address`, over TLS when the peer is to be encrypted.
    async fn connect(&self, address: SocketAddr) -> Result<InternodeStream, ConnectFailure> {
        let socket = TcpStream::connect(address)
            .await
            .map_err(ConnectFailure::Tcp)?;
        socket.set_nodelay(true).map_err(ConnectFailure::Tcp)?;
        match &self.tls {
            Some(tls) if self.encrypts_to(address.ip()) => tls
                .connect(address.ip(), socket)
                .await
                .map_err(ConnectFailure::Tls),
            _ => Ok(InternodeStream::Plain(socket)),
        }
    }

    /// Reports a failed connection to `to` (from `from`): at ERROR when the
    /// handshake failed (`refused`), at INFO for a peer that is not there,
    /// at most once per peer and cause every `REPORT_INTERVAL`.
    fn report_outbound(&self, from: IpAddr, to: SocketAddr, cause: &str, refused: bool) {
        let now = Instant::now();
        let Some(report) = self
            .failures
            .record(to.ip(), Direction::Outbound, cause, now)
        else {
            return;
        };
        let since = report.since();
        match refused {
            true => tracing::error!("{from}->{to} failed to connect: {cause}{since}"),
            false => tracing::info!("{from}->{to} failed to connect: {cause}{since}"),
        }
    }

    /// Reports an inbound connection from `peer` whose handshake failed,
    /// as Cassandra words it, at most once per peer and cause every
    /// `REPORT_INTERVAL`.
    fn report_inbound(&self, peer: SocketAddr, cause: &str) {
        let now = Instant::now();
        if let Some(report) = self
            .failures
            .record(peer.ip(), Direction::Inbound, cause, now)
        {
            tracing::error!(
                "Failed to properly handshake with peer {peer}. Closing the channel. {cause}{}",
                report.since()
            );
        }
    }

    /// The server side of a connection: TLS as configured.
    async fn accept(&self, socket: TcpStream) -> std::io::Result<InternodeStream> {
        socket.set_nodelay(true)?;
        match &self.tls {
            Some(tls) => tls.accept(socket).await,
            None => Ok(InternodeStream::Plain(socket)),
        }
    }
}

/// Accepts peers' connections on one listener until the node is gone;
/// `connections` bounds them over all listeners.
async fn accept_loop(
    listener: TcpListener,
    messaging: std::sync::Weak<Messaging>,
    connections: Arc<Semaphore>,
) {
    loop {
        let Ok((stream, from)) = listener.accept().await else {
            continue;
        };
        let Some(messaging) = messaging.upgrade() else {
            return;
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::warn!(
                "internode connection from {from} closed: {MAX_INBOUND_CONNECTIONS} open"
            );
            continue;
        };
        tokio::spawn(async move {
            match messaging.clone().serve(stream).await {
                Ok(()) => {}
                Err(ServeError::Handshake(cause)) => {
                    messaging.security.report_inbound(from, &cause)
                }
                Err(ServeError::Closed(e)) => {
                    tracing::debug!("internode connection from {from} closed: {e}")
                }
            }
            drop(permit);
        });
    }
}

impl Messaging {
    /// Listens on `port` of every address in `bind` (the first picks the
    /// port when it is 0) and serves peers' requests with `handler`, over
    /// TLS as `tls` says; `local` is what peers know this node by. The
    /// error names the address that could not be bound.
    pub async fn start(
        local: IpAddr,
        bind: &[IpAddr],
        port: u16,
        cluster_name: String,
        handler: Arc<dyn Handler>,
        tls: Option<Arc<InternodeTls>>,
    ) -> Result<Arc<Messaging>, BindError> {
        let mut listeners = Vec::with_capacity(bind.len());
        let mut port = port;
        for ip in bind {
            let address = SocketAddr::new(*ip, port);
            let failed = |source| BindError { address, source };
            let listener = TcpListener::bind(address).await.map_err(failed)?;
            port = listener.local_addr().map_err(failed)?.port();
            listeners.push(listener);
        }
        let messaging = Arc::new(Messaging {
            local,
            port,
            cluster_name,
            runtime: tokio::runtime::Handle::current(),
            handler,
            outbound: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            isolated: Arc::new(RwLock::new(HashSet::new())),
            slow_millis: AtomicU64::new(0),
            inbound_permits: Arc::new(Semaphore::new(MAX_INBOUND_REQUESTS)),
            security: Arc::new(Security {
                tls,
                rule: OnceLock::new(),
                failures: ConnectionFailures::default(),
            }),
            gossip_inbox: OnceLock::new(),
            dropped: Arc::default(),
        });
        let connections = Arc::new(Semaphore::new(MAX_INBOUND_CONNECTIONS));
        for listener in listeners {
            tokio::spawn(accept_loop(
                listener,
                Arc::downgrade(&messaging),
                connections.clone(),
            ));
        }
        Ok(messaging)
    }

    pub fn local(&self) -> IpAddr {
        self.local
    }

    /// Whether connections between nodes use TLS at all.
    pub fn is_encrypted(&self) -> bool {
        self.security
            .tls
            .as_ref()
            .is_some_and(|tls| tls.encryption != InternodeEncryption::None)
    }

    /// Installs the rule `dc` and `rack` encryption decide peers by (until
    /// then, every peer is spoken to over TLS); a second call is ignored.
    pub fn set_encryption_rule(&self, rule: EncryptionRule) {
        let _ = self.security.rule.set(rule);
    }

    /// Peers' gossip messages from now on (sender, bytes); only the first
    /// call gets them.
    pub fn gossip_inbox(&self) -> Option<mpsc::Receiver<(IpAddr, Vec<u8>)>> {
        let (tx, rx) = mpsc::channel(GOSSIP_INBOX_MESSAGES);
        self.gossip_inbox.set(tx).ok().map(|()| rx)
    }

    /// What this node sends first on each connection it opens.
    fn hello(&self) -> Hello {
        Hello {
            magic: HELLO_MAGIC,
            cluster_name: self.cluster_name.clone(),
            from: self.local,
        }
    }

    /// Connects to `peer` as requests would and sends this node's hello:
    /// Ok when the peer keeps the connection open for `PROBE_WAIT`, else
    /// why not, reported as any failed connection. A joining node that
    /// hears nothing from its seeds asks this way (without TLS, gossip
    /// travels over UDP, where a refusal is silence).
    pub async fn probe(&self, peer: IpAddr) -> Result<(), ProbeError> {
        let address = SocketAddr::new(peer, self.port);
        match probe_connection(&self.security, address, &self.hello()).await {
            Ok(()) => {
                self.security.failures.succeeded(peer, Direction::Outbound);
                Ok(())
            }
            Err((cause, refused)) => {
                self.security
                    .report_outbound(self.local, address, &cause, refused);
                Err(ProbeError(cause))
            }
        }
    }

    /// Why the last connection to `peer` failed, while it has not worked
    /// since.
    pub fn last_failure(&self, peer: IpAddr) -> Option<String> {
        self.security.failures.last_cause(peer)
    }

    /// The requests this node dropped, by verb (for the metrics endpoint).
    pub fn dropped(&self) -> Arc<DroppedMessages> {
        self.dropped.clone()
    }

    /// Sends a message that has no answer (gossip); it is dropped when the
    /// peer's queue is full or the peer cannot be reached.
    pub fn send_oneway(&self, peer: IpAddr, request: Request) {
        if self.is_isolated(peer) {
            return;
        }
        let outbound = self.outbound(peer);
        let frame = encode_frame(&Envelope::Request {
            id: ONEWAY_ID,
            body: request,
        });
        let _ = outbound.queue.try_send((ONEWAY_ID, frame));
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    fn is_isolated(&self, peer: IpAddr) -> bool {
        self.isolated
            .read()
            .map(|s| s.contains(&peer))
            .unwrap_or(false)
    }

    /// Drops every message to and from `peers` from now on (tests' network
    /// partitions); an empty list heals.
    pub fn isolate(&self, peers: &[IpAddr]) {
        if let Ok(mut set) = self.isolated.write() {
            *set = peers.iter().copied().collect();
        }
    }

    /// Answers peers' requests `delay` late from now on (tests' slow
    /// nodes); zero heals. Delayed requests keep their inbound permit, so
    /// a slow node under load also answers Overloaded, as a stalled one
    /// would.
    pub fn slow(&self, delay: Duration) {
        self.slow_millis
            .store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    pub fn slowness(&self) -> Duration {
        Duration::from_millis(self.slow_millis.load(Ordering::Relaxed))
    }

    /// The isolation set, for gossip's transport.
    pub fn isolation(&self) -> Arc<RwLock<HashSet<IpAddr>>> {
        self.isolated.clone()
    }

    pub fn isolated_peers(&self) -> Vec<IpAddr> {
        self.isolated
            .read()
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Sends `request` to `peer`; its answer, or why there is none, goes to
    /// `reply` (nothing at all when the peer is isolated: the caller's
    /// timeout decides).
    pub fn send(&self, peer: IpAddr, request: Request, reply: ReplySender) {
        if self.is_isolated(peer) {
            return;
        }
        let outbound = self.outbound(peer);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let verb = Verb::of(&request);
        let frame = encode_frame(&Envelope::Request { id, body: request });
        if let Ok(mut p) = outbound.pending.lock() {
            p.insert(
                id,
                PendingRequest {
                    reply,
                    since: Instant::now(),
                },
            );
        }
        if outbound.queue.try_send((id, frame)).is_err() {
            self.dropped.record(verb);
            outbound.fail(id, SendError::QueueFull(peer));
        }
    }

    fn outbound(&self, peer: IpAddr) -> Arc<Outbound> {
        let mut map = match self.outbound.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        if let Some(o) = map.get(&peer) {
            return o.clone();
        }
        let (tx, rx) = mpsc::channel(OUTBOUND_QUEUE_MESSAGES);
        let outbound = Arc::new(Outbound {
            peer,
            queue: tx,
            pending: Mutex::new(HashMap::new()),
        });
        map.insert(peer, outbound.clone());
        let hello = self.hello();
        let address = SocketAddr::new(peer, self.port);
        self.runtime.spawn(run_outbound(
            outbound.clone(),
            rx,
            address,
            hello,
            self.security.clone(),
        ));
        outbound
    }

    /// Serves one connection a peer opened: its requests, our answers.
    async fn serve(self: Arc<Self>, stream: TcpStream) -> Result<(), ServeError> {
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, self.security.accept(stream))
            .await
            .map_err(|_| {
                ServeError::Handshake(format!("no TLS handshake within {HANDSHAKE_TIMEOUT:?}"))
            })?
            .map_err(|e| ServeError::Handshake(handshake_failure(&e)))?;
        let (mut read, mut write) = tokio::io::split(stream);
        let hello = tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            read_frame::<Hello>(&mut read, MAX_HELLO_BYTES),
        )
        .await
        .map_err(|_| ServeError::Closed(format!("no handshake within {HANDSHAKE_TIMEOUT:?}")))?;
        let hello = match hello {
            Ok(hello) => hello,
            Err(FrameError::TlsRecord) => {
                // A TLS handshake to this plain port: say so before closing.
                let _ = write.write_all(&PROTOCOL_MISMATCH_ALERT).await;
                let cause = "protocol mismatch: the peer started a TLS handshake and internode \
                     encryption is off here";
                return Err(ServeError::Handshake(cause.into()));
            }
            Err(e) => match handshake_cause(&e) {
                Some(cause) => return Err(ServeError::Handshake(cause)),
                None => return Err(ServeError::Closed(e.to_string())),
            },
        };
        if hello.magic != HELLO_MAGIC {
            return Err(ServeError::Closed("not a Rocksandra node".into()));
        }
        // nodetool has its own port (`admin::listener`).
        if hello.cluster_name != self.cluster_name {
            return Err(ServeError::Closed(format!(
                "{} belongs to cluster {:?}, this node to {:?}",
                hello.from, hello.cluster_name, self.cluster_name
            )));
        }
        let from = hello.from;
        self.security.failures.succeeded(from, Direction::Inbound);
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(INBOUND_REPLY_QUEUE);
        tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                if write.write_all(&frame).await.is_err() || write.flush().await.is_err() {
                    return;
                }
            }
        });
        loop {
            let envelope: Envelope = read_frame(&mut read, MAX_FRAME_BYTES).await?;
            let Envelope::Request { id, body } = envelope else {
                return Err(ServeError::Closed(
                    "an answer on an inbound connection".into(),
                ));
            };
            if self.is_isolated(from) {
                continue;
            }
            if let Request::Gossip(bytes) = body {
                if let Some(inbox) = self.gossip_inbox.get() {
                    let _ = inbox.try_send((from, bytes));
                }
                continue;
            }
            let tx = tx.clone();
            let Ok(permit) = self.inbound_permits.clone().try_acquire_owned() else {
                self.dropped.record(Verb::of(&body));
                let frame = encode_frame(&Envelope::Response {
                    id,
                    body: Response::Error(RemoteError::Overloaded(format!(
                        "{} requests in flight on {}",
                        MAX_INBOUND_REQUESTS, self.local
                    ))),
                });
                let _ = tx.try_send(frame);
                continue;
            };
            let messaging = self.clone();
            let delay = messaging.slowness();
            tokio::task::spawn_blocking(move || {
                if !delay.is_zero() {
                    std::thread::sleep(delay);
                }
                let response = messaging.handler.handle(from, body);
                drop(permit);
                if messaging.is_isolated(from) {
                    return;
                }
                let frame = encode_frame(&Envelope::Response { id, body: response });
                // A full reply queue means the peer stopped reading: the
                // answer is dropped and the peer's request times out.
                let _ = tx.try_send(frame);
            });
        }
    }
}

/// Reads one frame of at most `limit` bytes, telling a TLS record (the
/// peer speaks TLS, this end does not) and IO errors from bad frames. The
/// body's buffer grows with the bytes that arrive, not with the length the
/// peer announced.
pub(crate) async fn read_frame<T: for<'de> serde::Deserialize<'de>>(
    read: &mut (impl AsyncReadExt + Unpin),
    limit: usize,
) -> Result<T, FrameError> {
    let mut header = [0u8; 4];
    read.read_exact(&mut header).await?;
    if is_tls_record(header) {
        return Err(FrameError::TlsRecord);
    }
    let len =
        frame_length(header, limit).map_err(|e: DecodeError| FrameError::Invalid(e.to_string()))?;
    let mut body = Vec::with_capacity(len.min(FRAME_READ_CHUNK_BYTES));
    (&mut *read).take(len as u64).read_to_end(&mut body).await?;
    if body.len() != len {
        return Err(FrameError::Invalid(format!(
            "connection closed after {} of a frame's {len} bytes",
            body.len()
        )));
    }
    decode_body(&body).map_err(|e| FrameError::Invalid(e.to_string()))
}

/// Whether a frame's 4 length bytes are the start of a TLS record (an
/// alert or a handshake, TLS 1.x): no frame is that long, its length
/// would be past `MAX_FRAME_BYTES`.
fn is_tls_record(header: [u8; 4]) -> bool {
    const _: () = assert!(MAX_FRAME_BYTES < 0x1500_0000);
    matches!(header[0], 0x15 | 0x16) && header[1] == 0x03
}

/// The cause to report when reading a connection's frames failed in the
/// TLS layer or met TLS where plain frames were due; None for the rest (a
/// peer that went away).
fn handshake_cause(error: &FrameError) -> Option<String> {
    match error {
        FrameError::TlsRecord => Some(error.to_string()),
        FrameError::Io(e) if is_tls_error(e) => Some(handshake_failure(e)),
        _ => None,
    }
}

/// Whether an IO error came from rustls (an alert, a bad record).
fn is_tls_error(error: &std::io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|e| e.downcast_ref::<rustls::Error>().is_some())
}

/// The connection loop of one peer: connect when there is something to
/// send, write queued requests, route answers; on failure fail what is
/// pending and connect again for the next request.
async fn run_outbound(
    outbound: Arc<Outbound>,
    mut queue: mpsc::Receiver<(u64, Vec<u8>)>,
    address: SocketAddr,
    hello: Hello,
    security: Arc<Security>,
) {
    let peer = address.ip();
    let mut expiry = tokio::time::interval(Duration::from_secs(10));
    loop {
        // Wait for the first request before connecting.
        let first = tokio::select! {
            next = queue.recv() => match next {
                Some(m) => m,
                None => return,
            },
            _ = expiry.tick() => { outbound.expire(); continue; }
        };
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, security.connect(address)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                let refused = matches!(e, ConnectFailure::Tls(_));
                security.report_outbound(hello.from, address, &e.cause(), refused);
                outbound.fail(first.0, SendError::Unreachable(peer, e.cause()));
                drain_failed(&outbound, &mut queue, peer);
                continue;
            }
            Err(_) => {
                let cause = "connect timed out";
                security.report_outbound(hello.from, address, cause, false);
                outbound.fail(first.0, SendError::Unreachable(peer, cause.into()));
                drain_failed(&outbound, &mut queue, peer);
                continue;
            }
        };
        let (mut read, mut write) = tokio::io::split(stream);
        if write.write_all(&encode_frame(&hello)).await.is_err()
            || write.write_all(&first.1).await.is_err()
            || write.flush().await.is_err()
        {
            // A peer that refused the handshake closed the connection
            // after its alert: read it, to say why.
            let last = tokio::time::timeout(
                PROBE_WAIT,
                read_frame::<Envelope>(&mut read, MAX_FRAME_BYTES),
            );
            if let Ok(Err(e)) = last.await {
                if let Some(cause) = handshake_cause(&e) {
                    security.report_outbound(hello.from, address, &cause, true);
                }
            }
            outbound.fail_all(SendError::ConnectionLost(peer));
            continue;
        }
        let reader_outbound = outbound.clone();
        let reader_security = security.clone();
        let from = hello.from;
        let mut reader = tokio::spawn(async move {
            let mut answered = false;
            loop {
                match read_frame::<Envelope>(&mut read, MAX_FRAME_BYTES).await {
                    Ok(Envelope::Response { id, body }) => {
                        if !answered {
                            answered = true;
                            reader_security
                                .failures
                                .succeeded(peer, Direction::Outbound);
                        }
                        reader_outbound.complete(id, body)
                    }
                    Ok(Envelope::Request { .. }) => return,
                    Err(e) => {
                        // TLS 1.3 ends the client's handshake before the
                        // peer has checked its certificate: a refusal
                        // arrives as the first read's alert.
                        if let Some(cause) = handshake_cause(&e) {
                            reader_security.report_outbound(from, address, &cause, true);
                        }
                        return;
                    }
                }
            }
        });
        loop {
            tokio::select! {
                next = queue.recv() => match next {
                    Some((id, frame)) => {
                        if write.write_all(&frame).await.is_err() || write.flush().await.is_err() {
                            outbound.fail(id, SendError::ConnectionLost(peer));
                            break;
                        }
                    }
                    None => { reader.abort(); return; }
                },
                _ = &mut reader => break,
                _ = expiry.tick() => outbound.expire(),
            }
        }
        reader.abort();
        outbound.fail_all(SendError::ConnectionLost(peer));
    }
}

/// `Messaging::probe`'s connection: the cause of a failure, and whether
/// the peer refused it (rather than not being there).
async fn probe_connection(
    security: &Security,
    address: SocketAddr,
    hello: &Hello,
) -> Result<(), (String, bool)> {
    let stream = match tokio::time::timeout(CONNECT_TIMEOUT, security.connect(address)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err((e.cause(), matches!(e, ConnectFailure::Tls(_)))),
        Err(_) => return Err(("connect timed out".into(), false)),
    };
    let (mut read, mut write) = tokio::io::split(stream);
    if let Err(e) = write.write_all(&encode_frame(hello)).await {
        return Err((e.to_string(), false));
    }
    let _ = write.flush().await;
    let answer = tokio::time::timeout(
        PROBE_WAIT,
        read_frame::<Envelope>(&mut read, MAX_FRAME_BYTES),
    );
    match answer.await {
        Err(_) | Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => match handshake_cause(&e) {
            Some(cause) => Err((cause, true)),
            None => Err((
                "the peer closed the connection after this node's hello \
                 (a node of another cluster, or not a Rocksandra node?)"
                    .into(),
                true,
            )),
        },
    }
}

/// Fails the requests already queued for an unreachable peer.
fn drain_failed(outbound: &Outbound, queue: &mut mpsc::Receiver<(u64, Vec<u8>)>, peer: IpAddr) {
    while let Ok((id, _)) = queue.try_recv() {
        outbound.fail(
            id,
            SendError::Unreachable(peer, "connection refused".into()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::FORMAT_VERSION;

    fn frame_of(len: usize, body: &[u8]) -> Vec<u8> {
        let mut bytes = (len as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(body);
        bytes
    }

    #[tokio::test]
    async fn first_frames_are_small_and_frames_must_arrive_whole() {
        let hello = Hello {
            magic: HELLO_MAGIC,
            cluster_name: "Test Cluster".into(),
            from: IpAddr::from([127, 0, 0, 1]),
        };
        let good = encode_frame(&hello);
        let back: Hello = read_frame(&mut good.as_slice(), MAX_HELLO_BYTES)
            .await
            .expect("a hello");
        assert_eq!(back, hello);
        // A stranger announcing a large first frame is refused before any
        // of it is read.
        let big = frame_of(MAX_HELLO_BYTES + 1, &[FORMAT_VERSION]);
        let e = read_frame::<Hello>(&mut big.as_slice(), MAX_HELLO_BYTES)
            .await
            .expect_err("too long");
        assert!(e.to_string().contains("over the limit of 4096"), "{e}");
        // A frame announced at the largest size whose bytes never come ends
        // the connection.
        let short = frame_of(MAX_FRAME_BYTES, &[FORMAT_VERSION, 1, 2, 3]);
        let e = read_frame::<Envelope>(&mut short.as_slice(), MAX_FRAME_BYTES)
            .await
            .expect_err("cut short");
        assert!(
            e.to_string()
                .contains("after 4 of a frame's 268435456 bytes"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn tls_where_frames_are_due_is_a_protocol_mismatch() {
        // A TLS-only port's alert to a plain node, a ClientHello to a plain
        // port: both begin with a TLS record header, never a frame's.
        let client_hello = [0x16, 0x03, 0x01, 0x00, 0xc8, 0x01];
        for bytes in [&PROTOCOL_MISMATCH_ALERT[..], &client_hello[..]] {
            let e = read_frame::<Envelope>(&mut &bytes[..], MAX_FRAME_BYTES)
                .await
                .expect_err("not a frame");
            assert!(matches!(e, FrameError::TlsRecord), "{e}");
            assert_eq!(handshake_cause(&e), Some(e.to_string()));
            assert!(e.to_string().starts_with("protocol mismatch"), "{e}");
        }
        // A peer that went away is no handshake failure.
        let e = read_frame::<Envelope>(&mut &[0u8, 0][..], MAX_FRAME_BYTES)
            .await
            .expect_err("cut short");
        assert_eq!(handshake_cause(&e), None);
    }
}
