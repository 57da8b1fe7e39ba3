//! The seam between the transport and query execution: the `RequestHandler`
//! trait, the per-connection `Session` it receives, and `NotReadyHandler`,
//! the stand-in used until the executor is plugged in.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use rocksandra_storage::WriteGroup;

use rocksandra_wire::{
    Batch, BytesMap, ErrorKind, ErrorResponse, Execute, Prepare, ProtocolVersion, Query, Response,
};

/// A boxed future, so that the trait stays object-safe (`Arc<dyn RequestHandler>`).
pub type HandlerFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Executes the requests of every connection. One instance serves all
/// connections, concurrently: requests of one connection may run at once and
/// their replies go back in completion order, each on its stream id.
///
/// Each method returns a RESULT or an ERROR `Response` (wrapped in a `Reply`
/// that may also carry warnings and a tracing id). The transport never
/// retries or times a handler out; handlers bound their own work.
pub trait RequestHandler: Send + Sync + 'static {
    /// QUERY: CQL text with its parameters.
    fn query<'a>(
        &'a self,
        session: &'a Session,
        context: &'a RequestContext,
        query: Query,
    ) -> HandlerFuture<'a, Reply>;

    /// PREPARE: answers a RESULT Prepared.
    fn prepare<'a>(
        &'a self,
        session: &'a Session,
        context: &'a RequestContext,
        prepare: Prepare,
    ) -> HandlerFuture<'a, Reply>;

    /// EXECUTE of a prepared id (UNPREPARED when the id is unknown).
    fn execute<'a>(
        &'a self,
        session: &'a Session,
        context: &'a RequestContext,
        execute: Execute,
    ) -> HandlerFuture<'a, Reply>;

    /// BATCH of statements (text or prepared ids).
    fn batch<'a>(
        &'a self,
        session: &'a Session,
        context: &'a RequestContext,
        batch: Batch,
    ) -> HandlerFuture<'a, Reply>;

    /// Runs an EXECUTE at once, on the calling (network) thread, when it is
    /// short: bounded work that waits for nothing (a prepared
    /// single-partition read or unconditional write on a single node).
    /// Anything else gets None, and runs as a task through `execute`.
    /// Its engine writes are queued in `writes` (`WriteGroup::run`), to be
    /// written by `commit_inline`. The default runs nothing inline.
    fn execute_inline(
        &self,
        session: &Session,
        context: &RequestContext,
        execute: &Execute,
        writes: &mut WriteGroup,
    ) -> Option<Reply> {
        let _ = (session, context, execute, writes);
        None
    }

    /// Writes what inline requests queued in `writes`; returns the streams
    /// whose writes failed, with the error to answer them with instead.
    /// The connection calls it before it sends their responses.
    fn commit_inline(&self, writes: &mut WriteGroup) -> Vec<(i16, ErrorResponse)> {
        let _ = writes;
        Vec::new()
    }

    /// Writes several connections' groups as one store write when it can
    /// (`Engine::write_groups_together`); false leaves each group whole,
    /// for `commit_inline`. The default never does.
    fn commit_inline_together(&self, groups: &mut [WriteGroup]) -> bool {
        let _ = groups;
        false
    }

    /// Checks SASL PLAIN credentials when the authenticator is
    /// PasswordAuthenticator. `Ok` logs the user in (the transport records
    /// the user in the session and answers AUTH_SUCCESS); `Err` is sent to
    /// the client as is, normally a BAD_CREDENTIALS error.
    fn authenticate<'a>(
        &'a self,
        session: &'a Session,
        credentials: Credentials,
    ) -> HandlerFuture<'a, Result<(), ErrorResponse>>;
}

/// What the frame header said about a request, beside its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    pub stream: i16,
    /// The client asked for tracing: answer with a `Reply::tracing_id`.
    pub tracing: bool,
    pub custom_payload: Option<BytesMap>,
}

/// A handler's answer: the response message and its optional prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// RESULT or ERROR.
    pub response: Response,
    pub warnings: Vec<String>,
    pub tracing_id: Option<[u8; 16]>,
    pub custom_payload: Option<BytesMap>,
}

impl Reply {
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> Reply {
        Reply::from(Response::Error(ErrorResponse::new(kind, message)))
    }
}

impl From<Response> for Reply {
    fn from(response: Response) -> Reply {
        Reply {
            response,
            warnings: Vec::new(),
            tracing_id: None,
            custom_payload: None,
        }
    }
}

/// SASL PLAIN credentials from an AUTH_RESPONSE token.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The state of one client connection that requests see and may change.
/// Cheap to clone: clones share the same state.
#[derive(Debug, Clone)]
pub struct Session {
    inner: Arc<SessionInner>,
}

#[derive(Debug)]
struct SessionInner {
    protocol_version: ProtocolVersion,
    client_address: SocketAddr,
    state: Mutex<SessionState>,
}

#[derive(Debug, Default)]
struct SessionState {
    keyspace: Option<String>,
    user: Option<String>,
}

impl Session {
    pub fn new(protocol_version: ProtocolVersion, client_address: SocketAddr) -> Session {
        Session {
            inner: Arc::new(SessionInner {
                protocol_version,
                client_address,
                state: Mutex::new(SessionState::default()),
            }),
        }
    }

    /// The version the connection speaks (fixed by its first frame).
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.protocol_version
    }

    pub fn client_address(&self) -> SocketAddr {
        self.inner.client_address
    }

    /// The keyspace set by `USE`, if any.
    pub fn keyspace(&self) -> Option<String> {
        self.state().keyspace.clone()
    }

    /// Records the keyspace of a successful `USE`.
    pub fn set_keyspace(&self, keyspace: impl Into<String>) {
        self.state().keyspace = Some(keyspace.into());
    }

    /// The logged-in user; `None` with AllowAllAuthenticator.
    pub fn authenticated_user(&self) -> Option<String> {
        self.state().user.clone()
    }

    pub(crate) fn set_authenticated_user(&self, user: String) {
        self.state().user = Some(user);
    }

    fn state(&self) -> MutexGuard<'_, SessionState> {
        // The state is two plain fields: a panic elsewhere cannot leave it
        // half-updated, so a poisoned lock is still usable.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The message every query gets from `NotReadyHandler`.
pub const NOT_READY_MESSAGE: &str = "query execution is not available in this build";

/// Answers every QUERY, PREPARE, EXECUTE and BATCH with a SERVER_ERROR, and
/// refuses every login. It lets the transport run (and be tested) before
/// the executor is plugged in.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotReadyHandler;

impl NotReadyHandler {
    fn not_ready<'a>() -> HandlerFuture<'a, Reply> {
        Box::pin(async { Reply::error(ErrorKind::ServerError, NOT_READY_MESSAGE) })
    }
}

impl RequestHandler for NotReadyHandler {
    fn query<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Query,
    ) -> HandlerFuture<'a, Reply> {
        NotReadyHandler::not_ready()
    }

    fn prepare<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Prepare,
    ) -> HandlerFuture<'a, Reply> {
        NotReadyHandler::not_ready()
    }

    fn execute<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Execute,
    ) -> HandlerFuture<'a, Reply> {
        NotReadyHandler::not_ready()
    }

    fn batch<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Batch,
    ) -> HandlerFuture<'a, Reply> {
        NotReadyHandler::not_ready()
    }

    fn authenticate<'a>(
        &'a self,
        _: &'a Session,
        credentials: Credentials,
    ) -> HandlerFuture<'a, Result<(), ErrorResponse>> {
        Box::pin(async move {
            Err(ErrorResponse::new(
                ErrorKind::BadCredentials,
                format!(
                    "Provided username {} and/or password are incorrect",
                    credentials.username
                ),
            ))
        })
    }
}
