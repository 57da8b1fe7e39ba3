//! `ExecutorHandler`: the `RequestHandler` that runs requests on the query
//! executor. Execution is blocking (storage calls), so each request runs on
//! tokio's blocking pool; results and errors become protocol messages here.

use std::sync::{Arc, OnceLock};

use rocksandra_cql::ast::{BatchKind, Modification, Statement};
use rocksandra_query::executor::bind_values;
use rocksandra_query::{Executor, Outcome, QueryError, Request};
use rocksandra_wire::{
    Batch, BatchQuery, BatchType, BoundValues, ErrorKind, ErrorResponse, Event, Execute, Prepare,
    ProtocolVersion, Query, QueryParameters, Response, ResultBody,
};

use crate::handler::{Credentials, HandlerFuture, Reply, RequestContext, RequestHandler, Session};
use crate::transport::EventSender;

pub struct ExecutorHandler {
    executor: Arc<Executor>,
    events: OnceLock<EventSender>,
}

impl ExecutorHandler {
    pub fn new(executor: Arc<Executor>) -> ExecutorHandler {
        ExecutorHandler {
            executor,
            events: OnceLock::new(),
        }
    }

    /// Where SCHEMA_CHANGE events go (set once the transport is bound).
    pub fn set_events(&self, events: EventSender) {
        let _ = self.events.set(events);
    }

    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
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
    }
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
        _context: &'a RequestContext,
        query: Query,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async move {
            let executor = self.executor.clone();
            let req = request(session, &query.params);
            let result = blocking(move || executor.query(&query.query, &req))
                .await
                .and_then(|r| r);
            self.reply(session, result)
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
            let result = blocking(move || executor.prepare(&prepare.query, keyspace.as_deref()))
                .await
                .and_then(|r| r);
            match result {
                Ok(mut prepared) => {
                    // The result metadata id exists from protocol v5 on.
                    if session.protocol_version() == ProtocolVersion::V4 {
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
        _context: &'a RequestContext,
        execute: Execute,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async move {
            let executor = self.executor.clone();
            let req = request(session, &execute.params);
            let id = execute.id.clone();
            let result = blocking(move || executor.execute(&id, &req))
                .await
                .and_then(|r| r);
            self.reply(session, result)
        })
    }

    fn batch<'a>(
        &'a self,
        session: &'a Session,
        _context: &'a RequestContext,
        batch: Batch,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async move {
            let executor = self.executor.clone();
            let keyspace = batch.keyspace.clone().or_else(|| session.keyspace());
            let user = session.authenticated_user();
            let result = blocking(move || run_batch(&executor, batch, keyspace, user))
                .await
                .and_then(|r| r);
            self.reply(session, result)
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

/// A BATCH message: each statement parsed (or looked up when prepared),
/// bound to its own values, then written together.
fn run_batch(
    executor: &Executor,
    batch: Batch,
    keyspace: Option<String>,
    user: Option<String>,
) -> Result<Outcome, QueryError> {
    let kind = match batch.batch_type {
        BatchType::Logged => BatchKind::Logged,
        BatchType::Unlogged => BatchKind::Unlogged,
        BatchType::Counter => BatchKind::Counter,
    };
    let base = Request {
        user,
        keyspace: keyspace.clone(),
        timestamp: batch.default_timestamp_micros,
        now_in_seconds: batch.now_in_seconds,
        ..Request::default()
    };
    let mut statements = Vec::with_capacity(batch.statements.len());
    for s in batch.statements {
        let (parsed, ks) = match &s.query {
            BatchQuery::Text(text) => (rocksandra_cql::parse_statement(text)?, keyspace.clone()),
            BatchQuery::Prepared(id) => {
                let p = executor.prepared(id)?;
                (p.parsed.clone(), p.keyspace.clone().or(keyspace.clone()))
            }
        };
        let req = Request {
            keyspace: ks,
            values: s.values.clone(),
            ..base.clone()
        };
        let values = bind_values(&parsed, &req)?;
        let modification = match parsed.statement {
            Statement::Insert(i) => Modification::Insert(*i),
            Statement::Update(u) => Modification::Update(*u),
            Statement::Delete(d) => Modification::Delete(*d),
            _ => {
                return Err(QueryError::invalid(
                    "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.",
                ))
            }
        };
        statements.push((modification, values, req.keyspace));
    }
    rocksandra_query::modify::execute_batch_message(executor, kind, statements, &base)
}
