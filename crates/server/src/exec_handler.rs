//! `ExecutorHandler`: the `RequestHandler` that runs requests on the query
//! executor. Execution is blocking (storage calls), so each request runs on
//! tokio's blocking pool; results and errors become protocol messages here.

use std::sync::{Arc, OnceLock};

use rocksandra_query::trace::TraceRequest;
use rocksandra_query::{Executor, Outcome, QueryError, Request};
use rocksandra_storage::WriteGroup;
use rocksandra_wire::{
    Batch, BoundValues, Consistency, ErrorKind, ErrorResponse, Event, Execute, Prepare,
    ProtocolVersion, Query, QueryParameters, Response, ResultBody, WriteType,
};

use crate::handler::{Credentials, HandlerFuture, Reply, RequestContext, RequestHandler, Session};
use crate::transport::EventSender;

pub struct ExecutorHandler {
    executor: Arc<Executor>,
    events: OnceLock<EventSender>,
    /// Whether short writes run on the network thread (not when every write
    /// waits for a WAL sync: `commitlog_sync: batch`).
    inline_short_writes: bool,
    /// Whether short reads run on the network thread (not in a cluster,
    /// where they may wait for other nodes).
    inline_short_reads: bool,
}

impl ExecutorHandler {
    pub fn new(
        executor: Arc<Executor>,
        inline_short_writes: bool,
        inline_short_reads: bool,
    ) -> ExecutorHandler {
        ExecutorHandler {
            executor,
            inline_short_writes,
            inline_short_reads,
            events: OnceLock::new(),
        }
    }

    /// Sends an event to registered connections (once the transport is
    /// bound; dropped before).
    pub fn send_event(&self, event: Event) {
        if let Some(events) = self.events.get() {
            events.send(event);
        }
    }

    /// Where SCHEMA_CHANGE events go (set once the transport is bound).
    pub fn set_events(&self, events: EventSender) {
        let _ = self.events.set(events);
    }

    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }

    fn traced_reply(&self, session: &Session, result: Result<TracedOutcome, QueryError>) -> Reply {
        match result {
            Ok((outcome, tracing_id)) => {
                let mut reply = self.reply(session, outcome);
                reply.tracing_id = tracing_id;
                reply
            }
            Err(e) => self.reply(session, Err(e)),
        }
    }

    fn reply(&self, session: &Session, result: Result<Outcome, QueryError>) -> Reply {
        match result {
            Ok(outcome) => {
                if let ResultBody::SetKeyspace(k) = &outcome.body {
                    session.set_keyspace(k.clone());
                }
                if let (Some(change), Some(events)) = (&outcome.schema_change, self.events.get()) {
                    events.send(Event::SchemaChange(change.clone()));
                }
                let mut reply = Reply::from(Response::Result(outcome.body));
                reply.warnings = outcome.warnings;
                reply
            }
            Err(e) => Reply::from(Response::Error(e.to_response())),
        }
    }
}

/// What an inline request's deferred write is queued under
/// (`WriteGroup::run`): its stream, to answer it, and its consistency
/// level, which a WRITE_FAILURE names.
struct InlineTag {
    stream: i16,
    consistency: Consistency,
}

impl InlineTag {
    fn encode(&self) -> i64 {
        i64::from(self.consistency.code()) << 16 | i64::from(self.stream as u16)
    }

    fn decode(tag: i64) -> InlineTag {
        InlineTag {
            stream: (tag & 0xffff) as u16 as i16,
            consistency: u16::try_from(tag >> 16)
                .ok()
                .and_then(Consistency::from_code)
                .unwrap_or_default(),
        }
    }
}

fn request(session: &Session, params: &QueryParameters) -> Request {
    let (values, names) = match &params.values {
        BoundValues::Positional(v) => (v.clone(), None),
        BoundValues::Named(pairs) => (
            pairs.iter().map(|(_, v)| v.clone()).collect(),
            Some(pairs.iter().map(|(n, _)| n.clone()).collect()),
        ),
    };
    Request {
        keyspace: params.keyspace.clone().or_else(|| session.keyspace()),
        values,
        names,
        page_size: params
            .page_size
            .and_then(|p| usize::try_from(p).ok())
            .filter(|p| *p > 0),
        paging_state: params.paging_state.clone(),
        timestamp: params.default_timestamp_micros,
        now_in_seconds: params.now_in_seconds,
        skip_metadata: params.skip_metadata,
        user: session.authenticated_user(),
        internal: false,
        consistency: params.consistency,
        serial_consistency: params.serial_consistency,
    }
}

/// A request's outcome and, when it was traced, its trace session id.
type TracedOutcome = (Result<Outcome, QueryError>, Option<[u8; 16]>);

fn trace_request(
    session: &Session,
    context: &RequestContext,
    command: &'static str,
    text: &str,
) -> Option<TraceRequest> {
    context.tracing.then(|| TraceRequest {
        client: session.client_address().ip(),
        command,
        text: text.to_string(),
    })
}

/// Runs blocking work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, QueryError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| QueryError::Server(format!("request task failed: {e}")))
}

impl RequestHandler for ExecutorHandler {
    fn query<'a>(
        &'a self,
        session: &'a Session,
        context: &'a RequestContext,
        query: Query,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async move {
            let executor = self.executor.clone();
            let req = request(session, &query.params);
            let tracing = trace_request(session, context, "QUERY", &query.query);
            let result =
                blocking(move || executor.traced(tracing, |e| e.query(&query.query, &req))).await;
            self.traced_reply(session, result)
        })
    }

    fn prepare<'a>(
        &'a self,
        session: &'a Session,
        _context: &'a RequestContext,
        prepare: Prepare,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async move {
            let executor = self.executor.clone();
            let keyspace = prepare.keyspace.clone().or_else(|| session.keyspace());
            let req = Request {
                user: session.authenticated_user(),
                ..Request::default()
            };
            let result =
                blocking(move || executor.prepare_for(&prepare.query, keyspace.as_deref(), &req))
                    .await
                    .and_then(|r| r);
            match result {
                Ok(mut prepared) => {
                    // The result metadata id exists from protocol v5 on.
                    if session.protocol_version() < ProtocolVersion::V5 {
                        prepared.result_metadata_id = None;
                    }
                    Reply::from(Response::Result(ResultBody::Prepared(prepared)))
                }
                Err(e) => Reply::from(Response::Error(e.to_response())),
            }
        })
    }

    fn execute<'a>(
        &'a self,
        session: &'a Session,
        context: &'a RequestContext,
        execute: Execute,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async move {
            let executor = self.executor.clone();
            let req = request(session, &execute.params);
            // Looked up once: an unknown id is answered UNPREPARED below.
            let prepared = self.executor.prepared(&execute.id);
            let tracing = if context.tracing {
                let text = prepared.as_ref().ok().map(|p| p.text.clone());
                trace_request(session, context, "EXECUTE", &text.unwrap_or_default())
            } else {
                None
            };
            let run = move |e: &Executor| prepared.and_then(|p| e.execute_prepared(&p, req));
            let result = blocking(move || executor.traced(tracing, run)).await;
            self.traced_reply(session, result)
        })
    }

    /// Single-partition reads and unconditional writes run on the network
    /// thread, in the connection's read loop: a task or a hand-off to the
    /// blocking pool costs more than the work itself. Everything else
    /// (scans, LWT, DDL, tracing, unknown ids) goes through `execute`.
    fn execute_inline(
        &self,
        session: &Session,
        context: &RequestContext,
        execute: &Execute,
        writes: &mut WriteGroup,
    ) -> Option<Reply> {
        if context.tracing {
            return None;
        }
        let prepared = self.executor.prepared(&execute.id).ok()?;
        let short = (self.inline_short_reads && prepared.is_short_read())
            || (self.inline_short_writes && prepared.is_short_write());
        if !short {
            return None;
        }
        let req = request(session, &execute.params);
        let tag = InlineTag {
            stream: context.stream,
            consistency: execute.params.consistency,
        };
        let result = writes.run(tag.encode(), || {
            self.executor.execute_prepared(&prepared, req)
        });
        Some(self.reply(session, result))
    }

    fn commit_inline_together(&self, groups: &mut [WriteGroup]) -> bool {
        self.executor.engine().write_groups_together(groups)
    }

    fn commit_inline(&self, writes: &mut WriteGroup) -> Vec<(i16, ErrorResponse)> {
        let engine = self.executor.engine();
        writes.run(0, || engine.commit_deferred());
        let failures = writes.take_failures();
        if failures.is_empty() {
            return Vec::new();
        }
        let node = self.executor.node().broadcast_address;
        failures
            .into_iter()
            .map(|(tag, e)| {
                let tag = InlineTag::decode(tag);
                // Inline writes are single statements (SIMPLE). The
                // storage logs its failure, once, not per write.
                let error = match e.is_storage_failure() {
                    true => {
                        QueryError::local_write_failure(node, tag.consistency, WriteType::Simple)
                    }
                    false => QueryError::from(e),
                };
                (tag.stream, error.to_response())
            })
            .collect()
    }

    fn batch<'a>(
        &'a self,
        session: &'a Session,
        context: &'a RequestContext,
        batch: Batch,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async move {
            let executor = self.executor.clone();
            let keyspace = batch.keyspace.clone().or_else(|| session.keyspace());
            let user = session.authenticated_user();
            let tracing = trace_request(session, context, "BATCH", "BATCH");
            let result = blocking(move || {
                executor.traced(tracing, |e| e.execute_batch(batch, keyspace, user))
            })
            .await;
            self.traced_reply(session, result)
        })
    }

    fn authenticate<'a>(
        &'a self,
        _session: &'a Session,
        credentials: Credentials,
    ) -> HandlerFuture<'a, Result<(), ErrorResponse>> {
        Box::pin(async move {
            let executor = self.executor.clone();
            let result = blocking(move || {
                executor.authenticate(&credentials.username, &credentials.password)
            })
            .await
            .and_then(|r| r);
            result.map_err(|e| match e {
                QueryError::BadCredentials(_) => e.to_response(),
                other => ErrorResponse::new(ErrorKind::ServerError, other.to_string()),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_tag_keeps_its_stream_and_consistency() {
        for stream in [0, 1, 127, i16::MAX, -1, i16::MIN] {
            for consistency in Consistency::ALL {
                let tag = InlineTag {
                    stream,
                    consistency,
                };
                let back = InlineTag::decode(tag.encode());
                assert_eq!((back.stream, back.consistency), (stream, consistency));
            }
        }
    }
}
