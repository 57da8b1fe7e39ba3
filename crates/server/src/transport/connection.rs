//! One client connection: reads frames (plain, then v5 segments after
//! STARTUP), walks the handshake (OPTIONS, STARTUP, AUTH_RESPONSE), answers
//! REGISTER, and runs QUERY / PREPARE / EXECUTE / BATCH concurrently through
//! the `RequestHandler` within the in-flight limits.
//!
//! Protocol details that follow Cassandra 5.0 rather than the letter of the spec:
//! - The version is fixed by STARTUP; OPTIONS before it is answered in its
//!   own version. A version we do not speak gets `unsupported_version_reply`
//!   (v1-v3 framing for v1-v3, v5 framing above) and the connection closes.
//! - The USE_BETA flag is ignored: v4 and v5 are released versions, and any
//!   other version is refused whatever the flag says.
//! - v5 switches to segments right after the STARTUP response, whether it
//!   is READY or AUTHENTICATE (so AUTH_RESPONSE already travels in segments),
//!   as Cassandra's `InitialConnectionHandler` does and drivers expect.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rocksandra_wire::{
    decode_request, unsupported_version_reply, BodyCompression, ErrorKind, ErrorResponse, Event,
    EventType, Frame, FrameDecoder, Limits, Opcode, ProtocolVersion, Request, RequestEnvelope,
    Response, ResponseEnvelope, SegmentCompression, SegmentedFrameDecoder, StringMap,
    StringMultimap, WireError, SUPPORTED_VERSIONS,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

use super::auth::decode_plain_token;
use super::limits::{self, Activity, Admission, ByteBudget, RequestBudgets, RequestBytes};
use super::tls::ClientStream;
use super::unready::UnreadyGuard;
use super::writer::{self, Framing, Outbound};
use super::{ConnectionSlot, Shared};
use crate::config::Authenticator;
use crate::handler::{Reply, RequestContext, Session};
use crate::metrics::{RequestKind, RequestTimer};
use rocksandra_storage::WriteGroup;

/// The CQL version announced in SUPPORTED (Cassandra 5.0's), the one
/// `system.local` shows.
use rocksandra_query::CQL_VERSION;
/// The STARTUP option asking for OVERLOADED errors instead of backpressure
/// (Cassandra's `StartupMessage.THROW_ON_OVERLOAD`, on when "1").
pub const THROW_ON_OVERLOAD: &str = "THROW_ON_OVERLOAD";
/// Compressions announced in SUPPORTED (snappy is for v4 only).
pub const COMPRESSIONS: [&str; 2] = ["lz4", "snappy"];
/// Bytes requested from the socket per read.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Responses of inline requests kept for one write; more are sent at once,
/// and the read loop then yields its core to other tasks.
const INLINE_REPLIES_MAX: usize = 128;

/// What a request answers when its handler panicked or its write was lost.
const INTERNAL_ERROR: &str = "internal error while executing the request";
/// After a fatal protocol error, how long unread client bytes are drained so
/// that closing does not reset the connection before the error is read.
const CLOSE_LINGER: Duration = Duration::from_millis(500);

/// Cassandra's `ConnectionStage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Only OPTIONS and STARTUP are accepted.
    Established,
    /// STARTUP was answered with AUTHENTICATE; only AUTH_RESPONSE is accepted.
    Authenticating,
    /// Queries may run.
    Ready,
}

/// How incoming bytes are cut into frames.
enum Inbound {
    Plain(FrameDecoder),
    Segments(Box<SegmentedFrameDecoder>),
}

/// What the read loop does after a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The byte stream cannot be trusted any more: close after answering.
    Close,
}

/// Why the read loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    ClientClosed,
    Shutdown,
    ProtocolError,
    /// Nothing read or written for `idle_timeout`.
    Idle,
    /// Not ready within `login_timeout`, or too many failed logins.
    Unauthenticated,
}

/// Serves one accepted connection until it closes; `slot` counts it
/// against the connection limits while it lives (a TLS handshake included).
pub(super) async fn serve(
    socket: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    slot: ConnectionSlot,
) {
    let endpoint = slot.endpoint_budget();
    let unready = shared.unready.enter();
    let _counted = shared.metrics.connection_opened();
    if let Err(e) = socket.set_nodelay(true) {
        debug!(%peer, "cannot set TCP_NODELAY: {e}");
    }
    let stream = match &shared.tls {
        None => ClientStream::Plain(socket),
        Some(tls) => {
            let accepted = tokio::select! {
                biased;
                _ = stop.wait_for(|stopping| *stopping) => return,
                () = unready.evicted() => return,
                accepted = tls.accept(socket) => accepted,
            };
            match accepted {
                Ok(stream) => stream,
                Err(e) => {
                    debug!(%peer, "TLS handshake failed: {e}");
                    return;
                }
            }
        }
    };
    match stream {
        ClientStream::Plain(socket) => {
            let (reader, writer) = socket.into_split();
            serve_stream(reader, writer, peer, shared, stop, endpoint, unready).await;
        }
        ClientStream::Tls(socket) => {
            let (reader, writer) = tokio::io::split(*socket);
            serve_stream(reader, writer, peer, shared, stop, endpoint, unready).await;
        }
    }
    drop(slot);
}

/// The connection over its two halves, whatever carries them.
async fn serve_stream<R, W>(
    mut reader: R,
    write_half: W,
    peer: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
    endpoint: Arc<ByteBudget>,
    unready: UnreadyGuard,
) where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbound, queue) = mpsc::channel(super::OUTBOUND_QUEUE_MESSAGES_MAX);
    // Tracked only with an idle timeout: otherwise no clock read per I/O.
    let activity = shared
        .limits
        .idle_timeout
        .map(|_| Arc::new(Activity::new(Instant::now())));
    let writer = tokio::spawn(writer::run(write_half, queue, activity.clone()));
    let budgets = RequestBudgets {
        connection: Arc::new(ByteBudget::new(u64::MAX)),
        endpoint,
        global: shared.request_bytes.clone(),
    };
    let mut connection = Connection::new(shared, peer, outbound, budgets, activity);
    connection.unready = Some(unready);
    let end = connection.read_loop(&mut reader, stop).await;
    debug!(%peer, ?end, "connection stops reading");
    // In-flight requests keep their own senders: the writer ends once they
    // have answered.
    drop(connection);
    match writer.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => debug!(%peer, "writing to the client failed: {e}"),
        Err(e) => error!(%peer, "the connection writer task failed: {e}"),
    }
    if end == End::ProtocolError {
        linger(&mut reader).await;
    }
}

/// Reads and drops what the client still sends, until it closes or
/// `CLOSE_LINGER` passes.
async fn linger<R: AsyncRead + Unpin>(reader: &mut R) {
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(CLOSE_LINGER, async {
        while matches!(reader.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

struct Connection {
    shared: Arc<Shared>,
    peer: SocketAddr,
    outbound: mpsc::Sender<Outbound>,
    limits: Limits,
    inbound: Inbound,
    phase: Phase,
    /// Set by STARTUP: the version, session and v4 body compression.
    session: Option<Session>,
    body_compression: Option<BodyCompression>,
    requests_in_flight: Arc<Semaphore>,
    registered: Vec<EventType>,
    event_forwarder: Option<JoinHandle<()>>,
    /// Responses of requests run inline in the read loop, sent together
    /// (one write) once the frames read so far are handled.
    inline_replies: Vec<ResponseEnvelope>,
    /// Responses of inline requests that queued writes in `writes`: sent
    /// once the group is written (`flush_inline`).
    write_replies: Vec<ResponseEnvelope>,
    /// The writes of those requests, handed to the committer together
    /// when the frames read so far are handled.
    writes: WriteGroup,
    /// The request bytes this connection counts against.
    budgets: RequestBudgets,
    /// STARTUP asked for OVERLOADED errors instead of backpressure.
    throw_on_overload: bool,
    /// A request went over a byte limit: read no more until there is room.
    paused: bool,
    /// Last read or write, when `idle_timeout` is on.
    activity: Option<Arc<Activity>>,
    /// When the connection must be ready (STARTUP and login done) by.
    login_deadline: tokio::time::Instant,
    failed_logins: u32,
    /// Its place among the connections not ready yet (None once ready): a
    /// newer connection may close it when every slot is taken.
    unready: Option<UnreadyGuard>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(forwarder) = self.event_forwarder.take() {
            forwarder.abort();
        }
    }
}

impl Connection {
    fn new(
        shared: Arc<Shared>,
        peer: SocketAddr,
        outbound: mpsc::Sender<Outbound>,
        budgets: RequestBudgets,
        activity: Option<Arc<Activity>>,
    ) -> Connection {
        let limits = Limits {
            max_frame_bytes: shared.limits.max_frame_bytes,
        };
        let per_connection = shared.limits.max_requests_per_connection;
        let login_deadline = tokio::time::Instant::now() + shared.limits.login_timeout;
        Connection {
            shared,
            peer,
            outbound,
            limits,
            inbound: Inbound::Plain(FrameDecoder::new(limits)),
            phase: Phase::Established,
            session: None,
            body_compression: None,
            requests_in_flight: Arc::new(Semaphore::new(per_connection)),
            registered: Vec::new(),
            event_forwarder: None,
            inline_replies: Vec::new(),
            write_replies: Vec::new(),
            writes: WriteGroup::new(),
            budgets,
            throw_on_overload: false,
            paused: false,
            activity,
            login_deadline,
            failed_logins: 0,
            unready: None,
        }
    }

    async fn read_loop<R: AsyncRead + Unpin>(
        &mut self,
        reader: &mut R,
        mut stop: watch::Receiver<bool>,
    ) -> End {
        let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
        loop {
            loop {
                let next = match &mut self.inbound {
                    Inbound::Plain(decoder) => decoder.decode(&mut buf),
                    Inbound::Segments(decoder) => decoder.decode(&mut buf),
                };
                match next {
                    Ok(Some(frame)) => {
                        if self.handle_frame(frame).await == Flow::Close {
                            self.flush_inline().await;
                            return End::ProtocolError;
                        }
                        if self.failed_logins >= super::MAX_FAILED_LOGINS {
                            info!(peer = %self.peer, "closing the connection after {} failed logins", self.failed_logins);
                            self.flush_inline().await;
                            return End::Unauthenticated;
                        }
                        // Frames already read wait too, not only the socket.
                        if self.paused {
                            self.flush_inline().await;
                            if !self.wait_for_room(&mut stop).await {
                                return End::Shutdown;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        self.flush_inline().await;
                        self.fatal_error(&buf, e).await;
                        return End::ProtocolError;
                    }
                }
            }
            self.flush_inline().await;
            buf.reserve(READ_CHUNK_BYTES);
            tokio::select! {
                biased;
                _ = stop.wait_for(|stopping| *stopping) => return End::Shutdown,
                () = self.idle(), if self.shared.limits.idle_timeout.is_some() => return End::Idle,
                () = self.login_expired(), if self.phase != Phase::Ready => return End::Unauthenticated,
                () = self.evicted(), if self.phase != Phase::Ready => return End::Unauthenticated,
                read = reader.read_buf(&mut buf) => match read {
                    Ok(0) => return End::ClientClosed,
                    Ok(_) => {
                        if let Some(activity) = &self.activity {
                            activity.touch(Instant::now());
                        }
                    }
                    Err(e) => {
                        debug!(peer = %self.peer, "reading from the client failed: {e}");
                        return End::ClientClosed;
                    }
                },
            }
        }
    }

    /// Backpressure: waits until the byte limits leave room (false when
    /// the server stops meanwhile).
    async fn wait_for_room(&mut self, stop: &mut watch::Receiver<bool>) -> bool {
        debug!(peer = %self.peer, "request bytes over the limit: pausing reads");
        let resumed = tokio::select! {
            biased;
            _ = stop.wait_for(|stopping| *stopping) => false,
            () = limits::wait_for_room(&self.budgets) => true,
        };
        self.paused = false;
        resumed
    }

    /// Completes at the login deadline; logs. An async fn, so that nothing
    /// touches the timer unless the connection is not ready yet.
    async fn login_expired(&self) {
        tokio::time::sleep_until(self.login_deadline).await;
        info!(
            peer = %self.peer,
            "closing a connection not ready within {:?}",
            self.shared.limits.login_timeout
        );
    }

    /// Completes when a newer connection takes this one's slot (while it
    /// is not ready); logs.
    async fn evicted(&self) {
        match &self.unready {
            Some(unready) => unready.evicted().await,
            None => std::future::pending().await,
        }
        info!(
            peer = %self.peer,
            "closing a connection not ready yet: every connection slot is taken"
        );
    }

    /// The connection may run queries; it can no longer be evicted.
    fn become_ready(&mut self) {
        self.phase = Phase::Ready;
        self.unready = None;
    }

    /// Completes once nothing was read or written for `idle_timeout`
    /// (never when it is off); logs as Cassandra does.
    async fn idle(&self) {
        let (Some(timeout), Some(activity)) = (self.shared.limits.idle_timeout, &self.activity)
        else {
            return std::future::pending().await;
        };
        loop {
            let idle = activity.idle_for(Instant::now());
            if idle >= timeout {
                info!(
                    "Closing client connection {} after timeout of {}ms",
                    self.peer,
                    timeout.as_millis()
                );
                return;
            }
            tokio::time::sleep(timeout - idle).await;
        }
    }

    /// The version responses use: the connection's, or (before STARTUP) the frame's.
    fn version_for(&self, frame_version: ProtocolVersion) -> ProtocolVersion {
        self.session
            .as_ref()
            .map_or(frame_version, Session::protocol_version)
    }

    async fn send(&self, item: Outbound) {
        // Fails only when the writer is gone (socket closed): nothing to tell.
        let _ = self.outbound.send(item).await;
    }

    /// Hands the responses of inline requests to the writer: the reads'
    /// at once, as one item; the writes' once their group is written. The
    /// group goes to the committer, so that this thread serves on while it
    /// is written (`committer`).
    async fn flush_inline(&mut self) {
        self.hand_over_writes().await;
        if !self.inline_replies.is_empty() {
            let replies = std::mem::take(&mut self.inline_replies);
            self.send(Outbound::Responses(replies)).await;
        }
    }

    /// Hands the queued writes and their responses to the committer; when
    /// the group was written already, moves their responses with the
    /// reads'.
    async fn hand_over_writes(&mut self) {
        if self.writes.is_pending() {
            let group = std::mem::take(&mut self.writes);
            let replies = std::mem::take(&mut self.write_replies);
            self.commit_later(group, replies).await;
        } else if !self.write_replies.is_empty() || self.writes.needs_commit() {
            // Written already (read-before-write work writes the group
            // first); a failure may wait to be reported.
            let mut group = std::mem::take(&mut self.writes);
            let replies = std::mem::take(&mut self.write_replies);
            self.commit_here(&mut group, replies);
        }
    }

    /// Writes `group` on this thread (what is left of it) and moves its
    /// `replies`, failures answered, with the reads'.
    fn commit_here(&mut self, group: &mut WriteGroup, mut replies: Vec<ResponseEnvelope>) {
        let failures = self.shared.handler.commit_inline(group);
        answer_failures(&mut replies, failures);
        self.inline_replies.append(&mut replies);
    }

    /// Hands `group` to the committer; `replies` leave once it is written
    /// (the committer has stopped: written here).
    async fn commit_later(&mut self, group: WriteGroup, mut replies: Vec<ResponseEnvelope>) {
        let commit = match self.shared.committer.submit(group).await {
            Ok(commit) => commit,
            Err(mut group) => return self.commit_here(&mut group, replies),
        };
        let outbound = self.outbound.clone();
        tokio::spawn(async move {
            match commit.await {
                Ok(failures) => answer_failures(&mut replies, failures),
                Err(_) => {
                    for reply in &mut replies {
                        let error = ErrorResponse::new(ErrorKind::ServerError, INTERNAL_ERROR);
                        *reply = ResponseEnvelope::new(
                            reply.version,
                            reply.stream,
                            Response::Error(error),
                        );
                    }
                }
            }
            let _ = outbound.send(Outbound::Responses(replies)).await;
        });
    }

    async fn respond(&self, version: ProtocolVersion, stream: i16, response: Response) {
        self.send(Outbound::response(ResponseEnvelope::new(
            version, stream, response,
        )))
        .await;
    }

    async fn respond_error(&self, version: ProtocolVersion, stream: i16, error: ErrorResponse) {
        self.respond(version, stream, Response::Error(error)).await;
    }

    async fn protocol_error(&self, version: ProtocolVersion, stream: i16, message: String) {
        let error = ErrorResponse::new(ErrorKind::ProtocolError, message);
        self.respond_error(version, stream, error).await;
    }

    /// Answers a decoding error that leaves the byte stream unusable, then closes.
    async fn fatal_error(&self, buf: &[u8], error: WireError) {
        debug!(peer = %self.peer, "protocol error, closing: {error}");
        match error {
            WireError::UnsupportedVersion { version, stream } => {
                self.send(Outbound::Raw(unsupported_version_reply(version, stream)))
                    .await;
            }
            error => {
                let stream = match &error {
                    WireError::FrameTooBig { stream, .. } => *stream,
                    _ => 0,
                };
                let version = match (&self.session, buf.first()) {
                    (Some(session), _) => session.protocol_version(),
                    (None, Some(first)) => {
                        ProtocolVersion::from_number(first & 0x7f).unwrap_or(ProtocolVersion::V5)
                    }
                    (None, None) => ProtocolVersion::V5,
                };
                self.respond_error(version, stream, wire_error_response(&error))
                    .await;
            }
        }
        self.send(Outbound::Close).await;
    }

    async fn handle_frame(&mut self, frame: Frame) -> Flow {
        let header = frame.header;
        let version = self.version_for(header.version);
        if header.version != version {
            let message = format!(
                "Invalid message version. Got {} but previous messages on this connection \
                 had version {}",
                header.version.name(),
                version.name()
            );
            let kind = header.opcode().map_or(RequestKind::Other, RequestKind::of);
            self.shared.metrics.request_started(kind).finish(true);
            self.protocol_error(version, header.stream, message).await;
            return Flow::Continue;
        }
        let body_bytes = frame.body.len() as u64;
        let envelope = match decode_request(&frame, self.body_compression, self.limits) {
            Ok(envelope) => envelope,
            Err(e) => {
                debug!(peer = %self.peer, stream = header.stream, "undecodable request: {e}");
                let kind = header.opcode().map_or(RequestKind::Other, RequestKind::of);
                self.shared.metrics.request_started(kind).finish(true);
                self.respond_error(version, header.stream, wire_error_response(&e))
                    .await;
                return if e.is_fatal() {
                    Flow::Close
                } else {
                    Flow::Continue
                };
            }
        };
        self.handle_request(envelope, body_bytes).await;
        Flow::Continue
    }

    /// Answers one request; `body_bytes` is its frame body's size, what the
    /// byte limits count.
    async fn handle_request(&mut self, envelope: RequestEnvelope, body_bytes: u64) {
        let RequestEnvelope {
            version,
            stream,
            tracing,
            custom_payload,
            request,
        } = envelope;
        let opcode = request.opcode();
        let timer = self.shared.metrics.request_started(RequestKind::of(opcode));
        let answered = match (self.phase, request) {
            (_, Request::Options) if self.phase != Phase::Authenticating => {
                self.respond(version, stream, Response::Supported(supported()))
                    .await;
                true
            }
            (Phase::Established, Request::Startup(options)) => {
                self.startup(version, stream, &options).await
            }
            (Phase::Established, _) => {
                let message = format!(
                    "Unexpected message {}, expecting STARTUP or OPTIONS",
                    opcode_name(opcode)
                );
                self.protocol_error(version, stream, message).await;
                false
            }
            (Phase::Authenticating, Request::AuthResponse(token)) => {
                self.authenticate(version, stream, token.as_deref().unwrap_or_default())
                    .await
            }
            (Phase::Authenticating, _) => {
                let message = format!(
                    "Unexpected message {}, expecting SASL_RESPONSE",
                    opcode_name(opcode)
                );
                self.protocol_error(version, stream, message).await;
                false
            }
            (Phase::Ready, Request::Startup(_)) => {
                let message = "Unexpected message STARTUP, the connection is already initialized";
                self.protocol_error(version, stream, message.to_string())
                    .await;
                false
            }
            (Phase::Ready, Request::AuthResponse(_)) => {
                let message = "Unexpected message AUTH_RESPONSE, the connection is already \
                               authenticated";
                self.protocol_error(version, stream, message.to_string())
                    .await;
                false
            }
            (Phase::Ready, Request::Register(types)) => {
                self.register(types);
                self.respond(version, stream, Response::Ready).await;
                true
            }
            (Phase::Ready, request) => {
                let context = RequestContext {
                    stream,
                    tracing,
                    custom_payload,
                };
                // The request's task finishes the timer when it answers.
                return self
                    .dispatch(version, context, request, timer, body_bytes)
                    .await;
            }
        };
        timer.finish(!answered);
    }

    /// Answers STARTUP; false when it was refused with an error.
    async fn startup(
        &mut self,
        version: ProtocolVersion,
        stream: i16,
        options: &StringMap,
    ) -> bool {
        let compression = match startup_compression(version, options) {
            Ok(compression) => compression,
            Err(refused) => {
                self.protocol_error(version, stream, refused.to_string())
                    .await;
                return false;
            }
        };
        let session = Session::new(version, self.peer);
        self.session = Some(session);
        self.throw_on_overload = options.get(THROW_ON_OVERLOAD).map(String::as_str) == Some("1");
        // Requests after this one arrive in the negotiated framing.
        let then = if version.uses_segments() {
            let compression = match compression {
                Some(_) => SegmentCompression::Lz4,
                None => SegmentCompression::None,
            };
            let decoder = SegmentedFrameDecoder::new(compression, self.limits);
            self.inbound = Inbound::Segments(Box::new(decoder));
            Framing::Segments(compression)
        } else {
            self.body_compression = compression;
            Framing::Plain(compression)
        };
        let response = match self.shared.authenticator {
            Authenticator::AllowAll => {
                self.become_ready();
                Response::Ready
            }
            Authenticator::Password => {
                self.phase = Phase::Authenticating;
                Response::Authenticate(Authenticator::Password.class_name().to_string())
            }
        };
        let envelope = ResponseEnvelope::new(version, stream, response);
        self.send(Outbound::Response {
            envelope: Box::new(envelope),
            then: Some(then),
        })
        .await;
        true
    }

    /// Answers AUTH_RESPONSE; false unless the login succeeded.
    async fn authenticate(&mut self, version: ProtocolVersion, stream: i16, token: &[u8]) -> bool {
        let Some(session) = self.session.clone() else {
            // Authenticating is only reached through STARTUP, which sets the session.
            error!(peer = %self.peer, "AUTH_RESPONSE without a session");
            return false;
        };
        let credentials = match decode_plain_token(token) {
            Ok(credentials) => credentials,
            Err(message) => {
                self.failed_logins += 1;
                let error = ErrorResponse::new(ErrorKind::BadCredentials, message);
                self.respond_error(version, stream, error).await;
                return false;
            }
        };
        let username = credentials.username.clone();
        match self
            .shared
            .handler
            .authenticate(&session, credentials)
            .await
        {
            Ok(()) => {
                session.set_authenticated_user(username);
                self.become_ready();
                self.respond(version, stream, Response::AuthSuccess(None))
                    .await;
                true
            }
            Err(error) => {
                self.failed_logins += 1;
                self.respond_error(version, stream, error).await;
                false
            }
        }
    }

    /// Adds event types to this connection's subscription; events are
    /// forwarded by a task that stops with the connection.
    fn register(&mut self, types: Vec<EventType>) {
        for event_type in types {
            if !self.registered.contains(&event_type) {
                self.registered.push(event_type);
            }
        }
        let Some(session) = &self.session else {
            return;
        };
        if let Some(old) = self.event_forwarder.take() {
            old.abort();
        }
        let forwarder = forward_events(
            self.shared.events.subscribe(),
            self.registered.clone(),
            session.protocol_version(),
            self.outbound.clone(),
            self.peer,
        );
        self.event_forwarder = Some(tokio::spawn(forwarder));
    }

    /// Runs a short EXECUTE here, in the read loop (`RequestHandler::
    /// execute_inline`), and keeps its response for the next write; hands
    /// anything else back. A panic in the handler becomes a SERVER_ERROR
    /// on the request's stream, as for a request run as a task.
    async fn run_inline(
        &mut self,
        version: ProtocolVersion,
        session: &Session,
        context: &RequestContext,
        execute: rocksandra_wire::Execute,
        timer: RequestTimer,
    ) -> Option<(rocksandra_wire::Execute, RequestTimer)> {
        let handler = &self.shared.handler;
        let writes = &mut self.writes;
        let queued_before = writes.queued_count();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handler.execute_inline(session, context, &execute, writes)
        }));
        let reply = match ran {
            Ok(Some(reply)) => reply,
            Ok(None) => return Some((execute, timer)),
            Err(_) => {
                error!(stream = context.stream, "request handler panicked");
                Reply::error(ErrorKind::ServerError, INTERNAL_ERROR)
            }
        };
        timer.finish(matches!(reply.response, Response::Error(_)));
        let reply = envelope(version, context.stream, reply);
        match self.writes.queued_count() > queued_before {
            true => self.write_replies.push(reply),
            false => self.inline_replies.push(reply),
        }
        if self.inline_replies.len() + self.write_replies.len() >= INLINE_REPLIES_MAX {
            self.flush_inline().await;
            // A client that pipelines many requests in one write would
            // otherwise hold the core until its last one ran: the writer
            // could not send these answers, nor other connections and
            // timers on the core run, for as long (64 KiB of 54-byte
            // reads is over a thousand). Yielding here bounds that to one
            // group.
            tokio::task::yield_now().await;
        }
        None
    }

    /// Counts a request's bytes against the limits (`limits::admit`); None
    /// when it was answered with OVERLOADED instead.
    async fn admit_bytes(
        &mut self,
        version: ProtocolVersion,
        stream: i16,
        body_bytes: u64,
    ) -> Option<RequestBytes> {
        match limits::admit(body_bytes, &self.budgets, self.throw_on_overload) {
            Admission::Admitted(bytes) => Some(bytes),
            Admission::AdmittedThenPause(bytes) => {
                self.paused = true;
                Some(bytes)
            }
            Admission::Refused => {
                let message = limits::overloaded_message(&self.budgets);
                debug!(peer = %self.peer, stream, "{message}");
                let error = ErrorResponse::new(ErrorKind::Overloaded, message);
                self.respond_error(version, stream, error).await;
                None
            }
        }
    }

    /// Runs a query-like request: a short EXECUTE inline (`run_inline`),
    /// anything else on its own task; answers OVERLOADED when a limit of
    /// requests or bytes in flight is reached. `timer` is finished when the
    /// answer is ready.
    async fn dispatch(
        &mut self,
        version: ProtocolVersion,
        context: RequestContext,
        request: Request,
        timer: RequestTimer,
        body_bytes: u64,
    ) {
        let Some(session) = self.session.clone() else {
            error!(peer = %self.peer, "query before STARTUP reached dispatch");
            return timer.finish(true);
        };
        // Held until the response is queued, inline or on the task.
        let Some(bytes) = self.admit_bytes(version, context.stream, body_bytes).await else {
            return timer.finish(true);
        };
        let (request, timer) = match request {
            Request::Execute(execute) => {
                match self
                    .run_inline(version, &session, &context, execute, timer)
                    .await
                {
                    None => return,
                    Some((execute, timer)) => (Request::Execute(execute), timer),
                }
            }
            request => (request, timer),
        };
        let stream = context.stream;
        // What ran inline before this request goes to be written; this
        // request may run before it is (neither is answered yet).
        self.hand_over_writes().await;
        let Some(permits) = self.acquire_request_permits() else {
            let error = ErrorResponse::new(ErrorKind::Overloaded, self.overloaded_message());
            self.respond_error(version, stream, error).await;
            return timer.finish(true);
        };
        let handler = self.shared.handler.clone();
        let outbound = self.outbound.clone();
        tokio::spawn(async move {
            let _bytes = bytes;
            // The handler runs in a task of its own so that a panic in it
            // becomes a SERVER_ERROR on its stream instead of a silent hang.
            let work = tokio::spawn(async move {
                match request {
                    Request::Query(query) => handler.query(&session, &context, query).await,
                    Request::Prepare(prepare) => handler.prepare(&session, &context, prepare).await,
                    Request::Execute(execute) => handler.execute(&session, &context, execute).await,
                    Request::Batch(batch) => handler.batch(&session, &context, batch).await,
                    other => Reply::error(
                        ErrorKind::ProtocolError,
                        format!("Unexpected message {}", opcode_name(other.opcode())),
                    ),
                }
            });
            let reply = work.await.unwrap_or_else(|e| {
                error!(stream, "request handler failed: {e}");
                Reply::error(ErrorKind::ServerError, INTERNAL_ERROR)
            });
            timer.finish(matches!(reply.response, Response::Error(_)));
            let envelope = envelope(version, stream, reply);
            let _ = outbound.send(Outbound::response(envelope)).await;
            // Permits are released only once the response is queued, so that
            // the outbound queue counts against the limits too.
            drop(permits);
        });
    }

    fn acquire_request_permits(&self) -> Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)> {
        let connection = self.requests_in_flight.clone().try_acquire_owned().ok()?;
        let total = self
            .shared
            .requests_in_flight
            .clone()
            .try_acquire_owned()
            .ok()?;
        Some((connection, total))
    }

    fn overloaded_message(&self) -> String {
        let limits = self.shared.limits;
        if self.requests_in_flight.available_permits() == 0 {
            format!(
                "Server is in overloaded state. Cannot accept more requests at this point: \
                 {} requests in flight on this connection \
                 (native_transport_max_requests_per_connection)",
                limits.max_requests_per_connection
            )
        } else {
            format!(
                "Server is in overloaded state. Cannot accept more requests at this point: \
                 {} requests in flight on this node (native_transport_max_concurrent_requests)",
                limits.max_requests
            )
        }
    }
}

/// Answers each stream of `failures` with its error instead of its result.
fn answer_failures(replies: &mut [ResponseEnvelope], failures: Vec<(i16, ErrorResponse)>) {
    for (stream, error) in failures {
        if let Some(reply) = replies.iter_mut().find(|r| r.stream == stream) {
            *reply = ResponseEnvelope::new(reply.version, stream, Response::Error(error));
        }
    }
}

/// A handler's reply as the response to the request on `stream`.
fn envelope(version: ProtocolVersion, stream: i16, reply: Reply) -> ResponseEnvelope {
    ResponseEnvelope {
        version,
        stream,
        tracing_id: reply.tracing_id,
        warnings: reply.warnings,
        custom_payload: reply.custom_payload,
        response: reply.response,
    }
}

/// Forwards subscribed events to the connection on stream -1.
async fn forward_events(
    mut events: broadcast::Receiver<Event>,
    types: Vec<EventType>,
    version: ProtocolVersion,
    outbound: mpsc::Sender<Outbound>,
    peer: SocketAddr,
) {
    const EVENT_STREAM: i16 = -1;
    loop {
        match events.recv().await {
            Ok(event) if types.contains(&event.event_type()) => {
                let envelope = ResponseEnvelope::new(version, EVENT_STREAM, Response::Event(event));
                if outbound.send(Outbound::response(envelope)).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                warn!(%peer, "client is too slow to read events: {missed} events dropped");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// The one mapping from codec errors to ERROR responses: every codec error
/// is a PROTOCOL_ERROR carrying the codec's message (an oversized frame
/// included: the connection is closed after it).
fn wire_error_response(error: &WireError) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::ProtocolError, error.to_string())
}

/// A STARTUP refused, in Cassandra's words (a protocol error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum StartupError {
    #[error("Missing value CQL_VERSION in STARTUP message")]
    NoCqlVersion,
    #[error(
        "CQL version {0} is not supported by the binary protocol (supported version are >= 3.0.0)"
    )]
    OldCqlVersion(String),
    #[error("Invalid CQL version {0}")]
    BadCqlVersion(String),
    #[error("Snappy compression is not supported in protocol V5")]
    SnappyInV5,
    #[error("Unknown compression algorithm: {0}")]
    UnknownCompression(String),
}

/// Checks STARTUP options as Cassandra's `StartupMessage` does, and returns
/// the negotiated compression.
fn startup_compression(
    version: ProtocolVersion,
    options: &StringMap,
) -> Result<Option<BodyCompression>, StartupError> {
    let Some(cql_version) = options.get("CQL_VERSION") else {
        return Err(StartupError::NoCqlVersion);
    };
    let major = cql_version
        .split('.')
        .next()
        .and_then(|major| major.trim().parse::<u32>().ok());
    match major {
        Some(major) if major >= 3 => {}
        Some(_) => return Err(StartupError::OldCqlVersion(cql_version.clone())),
        None => return Err(StartupError::BadCqlVersion(cql_version.clone())),
    }
    let Some(name) = options.get("COMPRESSION").filter(|name| !name.is_empty()) else {
        return Ok(None);
    };
    match BodyCompression::from_startup_name(name) {
        Some(BodyCompression::Snappy) if version.uses_segments() => Err(StartupError::SnappyInV5),
        Some(compression) => Ok(Some(compression)),
        None => Err(StartupError::UnknownCompression(name.to_ascii_lowercase())),
    }
}

/// The SUPPORTED answer to OPTIONS.
fn supported() -> StringMultimap {
    let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect();
    StringMultimap::from([
        ("CQL_VERSION".to_string(), strings(&[CQL_VERSION])),
        ("COMPRESSION".to_string(), strings(&COMPRESSIONS)),
        (
            "PROTOCOL_VERSIONS".to_string(),
            strings(&SUPPORTED_VERSIONS),
        ),
    ])
}

/// Message type names as Cassandra prints them in errors.
fn opcode_name(opcode: Opcode) -> &'static str {
    match opcode {
        Opcode::Error => "ERROR",
        Opcode::Startup => "STARTUP",
        Opcode::Ready => "READY",
        Opcode::Authenticate => "AUTHENTICATE",
        Opcode::Options => "OPTIONS",
        Opcode::Supported => "SUPPORTED",
        Opcode::Query => "QUERY",
        Opcode::Result => "RESULT",
        Opcode::Prepare => "PREPARE",
        Opcode::Execute => "EXECUTE",
        Opcode::Register => "REGISTER",
        Opcode::Event => "EVENT",
        Opcode::Batch => "BATCH",
        Opcode::AuthChallenge => "AUTH_CHALLENGE",
        Opcode::AuthResponse => "AUTH_RESPONSE",
        Opcode::AuthSuccess => "AUTH_SUCCESS",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn startup_options_are_checked_like_cassandra() {
        let v4 = ProtocolVersion::V4;
        let v5 = ProtocolVersion::V5;
        assert_eq!(
            startup_compression(v4, &options(&[("CQL_VERSION", "3.0.0")])),
            Ok(None)
        );
        assert_eq!(
            startup_compression(
                v4,
                &options(&[("CQL_VERSION", "3.4.7"), ("COMPRESSION", "LZ4")])
            ),
            Ok(Some(BodyCompression::Lz4))
        );
        assert_eq!(
            startup_compression(
                v4,
                &options(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "snappy")])
            ),
            Ok(Some(BodyCompression::Snappy))
        );
        assert_eq!(
            startup_compression(
                v5,
                &options(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "snappy")])
            ),
            Err(StartupError::SnappyInV5)
        );
        assert_eq!(
            startup_compression(
                v4,
                &options(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "zstd")])
            ),
            Err(StartupError::UnknownCompression("zstd".into()))
        );
        assert_eq!(
            startup_compression(v4, &options(&[])),
            Err(StartupError::NoCqlVersion)
        );
        assert_eq!(
            startup_compression(v4, &options(&[("CQL_VERSION", "2.0.0")]))
                .map_err(|e| e.to_string()),
            Err("CQL version 2.0.0 is not supported by the binary protocol \
                 (supported version are >= 3.0.0)"
                .to_string())
        );
        assert!(startup_compression(v4, &options(&[("CQL_VERSION", "x")])).is_err());
    }

    #[test]
    fn supported_lists_versions_and_compressions() {
        let supported = supported();
        assert_eq!(supported["CQL_VERSION"], vec!["3.4.7"]);
        assert_eq!(supported["COMPRESSION"], vec!["lz4", "snappy"]);
        assert_eq!(supported["PROTOCOL_VERSIONS"], vec!["3/v3", "4/v4", "5/v5"]);
    }
}
