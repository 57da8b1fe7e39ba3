//! The CQL native transport: the TCP listener, its limits, the event
//! broadcast, and graceful shutdown. One connection's protocol state lives in
//! `connection`, its outbound framing in `writer`, TLS (`client_encryption_options`)
//! in `tls`: the connection state machine runs unchanged over a plain or an
//! encrypted stream.
//!
//! # Limits (all named, all enforced without unbounded queues)
//! - `max_connections`: a connection beyond it is accepted, its first frame
//!   is answered with an OVERLOADED error ("Too many connections") in the
//!   client's protocol version, and it is closed. At most
//!   [`REJECTED_CONNECTIONS_MAX`] such answers are pending at once; beyond
//!   that, extra connections are closed without a word. A connection over
//!   the limit first waits up to `SLOT_GRACE` (20 ms) for a slot, unless
//!   connections were refused within the last second. But while some
//!   connection has not finished STARTUP and its login, the oldest such
//!   connection is closed and the new one takes its slot (`unready`): idle
//!   or stalled handshakes cannot lock clients out.
//! - Out of file descriptors (`accept` fails with EMFILE or ENFILE): the
//!   oldest connection not ready yet is closed, so that clients queued
//!   behind idle sockets get in; when every connection is ready, accepting
//!   pauses 100 ms and retries (a warning at most every
//!   10 s).
//! - `max_connections_per_ip`: the same answer ("Too many connections from
//!   ADDRESS") to a connection beyond it from one client IP address.
//! - `max_requests_per_connection` and `max_requests`: QUERY, PREPARE,
//!   EXECUTE and BATCH in flight. A request beyond either limit is answered
//!   at once with OVERLOADED on its stream.
//! - `max_request_bytes_in_flight` (per node) and `_per_ip`: the body bytes
//!   of those requests while they run (`limits`). Beyond either, the request
//!   runs and the connection stops reading until bytes are released (TCP
//!   backpressure), or, when the client's STARTUP asked for
//!   `THROW_ON_OVERLOAD`, it is answered with OVERLOADED instead.
//! - `idle_timeout`: a connection that neither read nor wrote a byte for
//!   that long is closed.
//! - `max_frame_bytes`: a larger frame is answered with PROTOCOL_ERROR as soon
//!   as its header arrives, and the connection is closed.
//! - Per connection, at most [`OUTBOUND_QUEUE_MESSAGES_MAX`] responses wait
//!   for the socket; when the client does not read, requests wait, then the
//!   connection stops reading (TCP backpressure).
//! - With TLS, a connection that has not finished its handshake within
//!   [`tls::TLS_HANDSHAKE_TIMEOUT`] is closed (it holds a connection slot
//!   meanwhile).
//! - `login_timeout` ([`LOGIN_TIMEOUT`] unless set): a connection that has
//!   not finished STARTUP (and, with PasswordAuthenticator, its login)
//!   within it is closed; and one whose login failed [`MAX_FAILED_LOGINS`]
//!   times is closed after the last answer (each attempt costs a bcrypt
//!   check). Cassandra has neither limit.

/// How long a connection may take to finish STARTUP and its login.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Failed logins one connection may make; it is closed after the last.
pub const MAX_FAILED_LOGINS: u32 = 5;

mod auth;
mod committer;
mod connection;
mod cores;
pub mod limits;
pub mod tls;
mod unready;
mod writer;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rocksandra_wire::{
    encode_response, unsupported_version_reply, ErrorKind, ErrorResponse, Event, FrameHeader,
    ProtocolVersion, Response, ResponseEnvelope, WireError,
};
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tracing::{debug, error, info, warn};

use crate::config::{Authenticator, Config};
use crate::handler::RequestHandler;
use crate::metrics::ServerMetrics;
use limits::{ByteBudget, ClientSlot, Clients};
use tls::{ClientStream, ClientTls, TlsConfigError};
use unready::Unready;

/// Responses (and events) waiting for one connection's socket.
pub const OUTBOUND_QUEUE_MESSAGES_MAX: usize = 256;
/// Connections over `max_connections` being answered at once.
pub const REJECTED_CONNECTIONS_MAX: usize = 64;
/// How long a connection over the limit may take to send its first frame header.
pub const REJECTED_CONNECTION_WAIT: Duration = Duration::from_secs(2);
/// Events waiting for the slowest subscribed connection; beyond this it
/// misses events (and a warning is logged).
pub const EVENT_QUEUE_EVENTS_MAX: usize = 1024;
/// Default for how long shutdown waits for in-flight requests.
pub const SHUTDOWN_GRACE_DEFAULT: Duration = Duration::from_secs(10);
/// Pause after a failed `accept` (e.g. out of file descriptors).
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(100);
/// At most one "too many connections" warning per this interval.
const REJECT_WARNING_INTERVAL: Duration = Duration::from_secs(10);
/// How long a connection over the limit waits for a slot before it is
/// refused, unless connections were refused within `SLOT_GRACE_QUIET`: a
/// connection closing on a serving thread frees its slot just after its
/// socket closes, and a client that reconnects at once should not be
/// refused for that.
const SLOT_GRACE: Duration = Duration::from_millis(20);
const SLOT_GRACE_QUIET: Duration = Duration::from_secs(1);
/// How long a new connection waits for the slot of the connection it evicted.
const EVICTED_SLOT_WAIT: Duration = Duration::from_millis(500);

/// The transport's limits; `From<&Config>` takes them from the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportLimits {
    pub max_connections: usize,
    pub max_requests_per_connection: usize,
    pub max_requests: usize,
    pub max_frame_bytes: u64,
    /// None: no limit per client IP address.
    pub max_connections_per_ip: Option<usize>,
    /// None: connections are never closed for being idle.
    pub idle_timeout: Option<Duration>,
    /// How long a connection may take to be ready (STARTUP and login).
    pub login_timeout: Duration,
    pub max_request_bytes_in_flight: u64,
    pub max_request_bytes_in_flight_per_ip: u64,
}

impl Default for TransportLimits {
    fn default() -> Self {
        TransportLimits::from(&Config::default())
    }
}

impl From<&Config> for TransportLimits {
    fn from(config: &Config) -> Self {
        TransportLimits {
            max_connections: config.max_connections,
            max_requests_per_connection: config.max_requests_per_connection,
            max_requests: config.max_requests,
            max_frame_bytes: config.max_frame_bytes,
            max_connections_per_ip: config.max_connections_per_ip,
            idle_timeout: config.idle_timeout,
            login_timeout: LOGIN_TIMEOUT,
            max_request_bytes_in_flight: config.max_request_bytes_in_flight,
            max_request_bytes_in_flight_per_ip: config.max_request_bytes_in_flight_per_ip,
        }
    }
}

/// Everything the transport needs to start.
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Where to listen; port 0 picks a free port (see `Server::local_addr`).
    pub address: SocketAddr,
    pub authenticator: Authenticator,
    pub limits: TransportLimits,
    /// How long shutdown waits for in-flight requests before dropping them.
    pub shutdown_grace: Duration,
    /// TLS for clients; None serves plain CQL only.
    pub tls: Option<ClientTls>,
}

impl TransportConfig {
    /// The transport as `config` describes it; reads the TLS key material,
    /// so that a bad file is reported before anything else starts.
    pub fn new(config: &Config) -> Result<TransportConfig, TransportError> {
        Ok(TransportConfig {
            address: config.native_address(),
            authenticator: config.authenticator,
            limits: TransportLimits::from(config),
            shutdown_grace: SHUTDOWN_GRACE_DEFAULT,
            tls: ClientTls::from_config(&config.client_encryption)?,
        })
    }
}

#[derive(Debug, Error)]
pub enum TransportError {
    #[error("cannot listen for CQL clients on {address}: {source}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] TlsConfigError),
    #[error("cannot start {what}: {source}")]
    Thread {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// Pushes events (SCHEMA_CHANGE, later TOPOLOGY_CHANGE and STATUS_CHANGE) to
/// every connection that REGISTERed for their type; they arrive on stream -1.
#[derive(Debug, Clone)]
pub struct EventSender {
    sender: broadcast::Sender<Event>,
}

impl EventSender {
    /// Queues an event for the subscribed connections (none is fine).
    pub fn send(&self, event: Event) {
        // An error only means that no connection is subscribed.
        let _ = self.sender.send(event);
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.sender.subscribe()
    }
}

/// State shared by all connections of one server.
struct Shared {
    handler: Arc<dyn RequestHandler>,
    /// Writes the groups of inline writes off the serving threads.
    committer: committer::Committer,
    authenticator: Authenticator,
    limits: TransportLimits,
    requests_in_flight: Arc<Semaphore>,
    /// Request bytes being processed on this node.
    request_bytes: Arc<ByteBudget>,
    /// Connections and request bytes per client IP address.
    clients: Arc<Clients>,
    /// Connections that have not finished STARTUP and login, oldest first.
    unready: Arc<Unready>,
    events: EventSender,
    metrics: Arc<ServerMetrics>,
    tls: Option<ClientTls>,
}

/// A bound listener, ready to `run`.
pub struct Server {
    listener: TcpListener,
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown_grace: Duration,
}

impl Server {
    /// Binds the listening socket (so that the port is known and taken
    /// before `run`).
    pub async fn bind(
        config: TransportConfig,
        handler: Arc<dyn RequestHandler>,
    ) -> Result<Server, TransportError> {
        let bind_error = |source| TransportError::Bind {
            address: config.address,
            source,
        };
        let listener = TcpListener::bind(config.address)
            .await
            .map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        let (sender, _) = broadcast::channel(EVENT_QUEUE_EVENTS_MAX);
        let committer = committer::Committer::start(handler.clone()).map_err(|source| {
            TransportError::Thread {
                what: "the CQL committer",
                source,
            }
        })?;
        let shared = Arc::new(Shared {
            handler,
            committer,
            authenticator: config.authenticator,
            limits: config.limits,
            requests_in_flight: Arc::new(Semaphore::new(config.limits.max_requests)),
            request_bytes: Arc::new(ByteBudget::new(config.limits.max_request_bytes_in_flight)),
            clients: Arc::new(Clients::new(
                config.limits.max_connections_per_ip,
                config.limits.max_request_bytes_in_flight_per_ip,
            )),
            unready: Arc::new(Unready::default()),
            events: EventSender { sender },
            metrics: Arc::new(ServerMetrics::default()),
            tls: config.tls,
        });
        Ok(Server {
            listener,
            local_addr,
            shared,
            shutdown_grace: config.shutdown_grace,
        })
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// How clients' connections are encrypted, as a log line says it.
    pub fn encryption(&self) -> &'static str {
        match &self.shared.tls {
            None => "unencrypted",
            Some(tls) if tls.is_optional() => "TLS optional",
            Some(_) => "TLS required",
        }
    }

    /// What the transport measures: requests by kind, connections.
    pub fn metrics(&self) -> Arc<ServerMetrics> {
        self.shared.metrics.clone()
    }

    /// The sender the executor uses to push events to clients.
    pub fn events(&self) -> EventSender {
        self.shared.events.clone()
    }

    /// Serves clients until `shutdown` completes; then stops accepting,
    /// stops reading new requests, lets in-flight requests finish and their
    /// responses go out (waiting at most `shutdown_grace`), and returns.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let connection_slots = Arc::new(Semaphore::new(self.shared.limits.max_connections));
        let reject_slots = Arc::new(Semaphore::new(REJECTED_CONNECTIONS_MAX));
        let (stop_sender, stop) = watch::channel(false);
        let core_count = std::thread::available_parallelism().map_or(1, usize::from);
        let mut cores = match cores::Cores::start(core_count, &self.shared, &stop) {
            Ok(cores) => cores,
            Err(e) => {
                error!("cannot start the CQL serving threads: {e}");
                return;
            }
        };
        // Connections over the limit, answered here.
        let mut tasks = JoinSet::new();
        let mut last_reject_warning: Option<Instant> = None;
        let mut last_reject: Option<Instant> = None;
        let mut last_accept_warning: Option<Instant> = None;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((socket, peer)) => match self.admit(&connection_slots, &mut last_reject, peer).await {
                        Ok(slot) => cores.hand_off(socket, peer, slot).await,
                        Err(refusal) => {
                            warn_rejected(&mut last_reject_warning, &refusal);
                            if let Ok(slot) = reject_slots.clone().try_acquire_owned() {
                                let tls = self.shared.tls.clone();
                                tasks.spawn(reject_connection(socket, tls, refusal.message(), slot));
                            }
                        }
                    },
                    Err(e) => {
                        accept_failed(&e, &mut last_accept_warning, &self.shared.unready).await;
                    }
                },
                Some(joined) = tasks.join_next(), if !tasks.is_empty() => log_join(joined),
            }
        }
        drop(self.listener);
        let open = self.shared.limits.max_connections - connection_slots.available_permits();
        info!(
            "shutting down the CQL transport: waiting up to {:?} for {open} connections",
            self.shutdown_grace,
        );
        // Every connection stops reading; their in-flight requests finish.
        let _ = stop_sender.send(true);
        tasks.shutdown().await;
        cores.stop(self.shutdown_grace).await;
        // The groups connections handed over are written before storage
        // may close.
        self.shared.committer.stop();
    }
}

impl Server {
    /// A slot for a new connection from `peer`: one of `max_connections`,
    /// and one of its IP address's `max_connections_per_ip`.
    async fn admit(
        &self,
        slots: &Arc<Semaphore>,
        last_reject: &mut Option<Instant>,
        peer: SocketAddr,
    ) -> Result<ConnectionSlot, Refusal> {
        let limits = &self.shared.limits;
        let Some(global) = slot_for(slots, last_reject, &self.shared.unready).await else {
            return Err(Refusal::Node {
                limit: limits.max_connections,
            });
        };
        match self.shared.clients.open(peer.ip()) {
            Ok(client) => Ok(ConnectionSlot {
                _global: global,
                client,
            }),
            Err(limit) => Err(Refusal::Address {
                ip: peer.ip(),
                limit,
            }),
        }
    }
}

/// What a served connection holds: its place under `max_connections` and
/// under its address's limits. Released when the connection ends.
pub(crate) struct ConnectionSlot {
    _global: OwnedSemaphorePermit,
    client: ClientSlot,
}

impl ConnectionSlot {
    fn endpoint_budget(&self) -> Arc<ByteBudget> {
        self.client.endpoint_budget()
    }
}

/// Why a new connection is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    /// `native_transport_max_concurrent_connections`.
    Node { limit: usize },
    /// `native_transport_max_concurrent_connections_per_ip`.
    Address { ip: std::net::IpAddr, limit: usize },
}

impl Refusal {
    /// The OVERLOADED error's message.
    fn message(&self) -> String {
        match self {
            Refusal::Node { limit } => format!(
                "Too many connections: this node serves at most {limit} client connections \
                 (native_transport_max_concurrent_connections)"
            ),
            Refusal::Address { ip, limit } => format!(
                "Too many connections from {ip}: this node serves at most {limit} client \
                 connections per IP address (native_transport_max_concurrent_connections_per_ip)"
            ),
        }
    }

    fn log_line(&self) -> String {
        match self {
            Refusal::Node { limit } => format!(
                "refusing client connections: {limit} are open \
                 (native_transport_max_concurrent_connections)"
            ),
            Refusal::Address { ip, limit } => format!(
                "refusing client connections from {ip}: {limit} are open from that address \
                 (native_transport_max_concurrent_connections_per_ip)"
            ),
        }
    }
}

/// A connection slot: at once; or the slot of the oldest connection not
/// ready yet, which is told to close (waiting up to `EVICTED_SLOT_WAIT`);
/// or after `SLOT_GRACE` unless connections are being refused in a stream
/// (then at once or not at all).
async fn slot_for(
    slots: &Arc<Semaphore>,
    last_reject: &mut Option<Instant>,
    unready: &Unready,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    if let Ok(slot) = slots.clone().try_acquire_owned() {
        return Some(slot);
    }
    let wait = if unready.evict_oldest() {
        Some(EVICTED_SLOT_WAIT)
    } else {
        let quiet = last_reject.is_none_or(|at| at.elapsed() >= SLOT_GRACE_QUIET);
        quiet.then_some(SLOT_GRACE)
    };
    if let Some(wait) = wait {
        if let Ok(Ok(slot)) = tokio::time::timeout(wait, slots.clone().acquire_owned()).await {
            return Some(slot);
        }
    }
    *last_reject = Some(Instant::now());
    None
}

/// After a failed `accept`: when the process is out of file descriptors,
/// closes the oldest connection not ready yet and waits until it has gone
/// (so that clients queued behind idle sockets get in); otherwise, or when
/// every connection is ready, pauses. Warns at most once per interval.
async fn accept_failed(
    error: &std::io::Error,
    last_warning: &mut Option<Instant>,
    unready: &Unready,
) {
    let now = Instant::now();
    if last_warning.is_none_or(|at| now.duration_since(at) >= REJECT_WARNING_INTERVAL) {
        *last_warning = Some(now);
        warn!("accepting a CQL connection failed: {error}");
    }
    let out_of_descriptors = matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
    if !(out_of_descriptors && unready.evict_and_wait(EVICTED_SLOT_WAIT).await) {
        tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
    }
}

fn log_join(joined: Result<(), tokio::task::JoinError>) {
    if let Err(e) = joined {
        if e.is_panic() {
            error!("a CQL connection task panicked: {e}");
        }
    }
}

fn warn_rejected(last_warning: &mut Option<Instant>, refusal: &Refusal) {
    let now = Instant::now();
    if last_warning.is_none_or(|at| now.duration_since(at) >= REJECT_WARNING_INTERVAL) {
        *last_warning = Some(now);
        warn!("{}", refusal.log_line());
    }
}

/// Answers a connection over the limit: waits briefly for the TLS handshake
/// (when TLS is on) and the first frame header, replies OVERLOADED in the
/// client's version (or the usual unsupported-version error), and closes.
async fn reject_connection(
    socket: TcpStream,
    tls: Option<ClientTls>,
    message: String,
    _slot: OwnedSemaphorePermit,
) {
    let stream = match tls {
        None => ClientStream::Plain(socket),
        Some(tls) => match tokio::time::timeout(REJECTED_CONNECTION_WAIT, tls.accept(socket)).await
        {
            Ok(Ok(stream)) => stream,
            _ => return,
        },
    };
    match stream {
        ClientStream::Plain(socket) => answer_overloaded(socket, message).await,
        ClientStream::Tls(socket) => answer_overloaded(*socket, message).await,
    }
}

async fn answer_overloaded<S: AsyncRead + AsyncWrite + Unpin>(mut socket: S, message: String) {
    let mut header = BytesMut::with_capacity(rocksandra_wire::limits::FRAME_HEADER_BYTES);
    let read = tokio::time::timeout(REJECTED_CONNECTION_WAIT, async {
        while header.len() < rocksandra_wire::limits::FRAME_HEADER_BYTES {
            match socket.read_buf(&mut header).await {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            }
        }
        true
    })
    .await;
    if read != Ok(true) {
        return;
    }
    // Any limit works here: only the version and stream are needed.
    let reply = match FrameHeader::parse(&header, u64::MAX) {
        Ok(Some(h)) => overloaded_frame(h.version, h.stream, message),
        Err(WireError::UnsupportedVersion { version, stream }) => {
            Some(unsupported_version_reply(version, stream))
        }
        _ => None,
    };
    if let Some(reply) = reply {
        if socket.write_all(&reply).await.is_ok() && socket.flush().await.is_ok() {
            let _ = socket.shutdown().await;
        }
    }
}

fn overloaded_frame(
    version: ProtocolVersion,
    stream: i16,
    message: String,
) -> Option<bytes::Bytes> {
    let error = ErrorResponse::new(ErrorKind::Overloaded, message);
    let envelope = ResponseEnvelope::new(version, stream, Response::Error(error));
    match encode_response(&envelope, None) {
        Ok(frame) => Some(frame.to_bytes()),
        Err(e) => {
            debug!("cannot encode the too-many-connections error: {e}");
            None
        }
    }
}
