//! Query tracing: a traced request gets a session id, and its session row
//! and events are written to `system_traces.sessions` and `.events` (kept in
//! storage, expiring after a day as in Cassandra), where drivers and cqlsh
//! read them.

use std::net::IpAddr;

use rocksandra_data::Value;

use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::request::Request;

/// How long trace rows live (Cassandra's `tracetype_query_ttl`, one day).
pub const TRACE_TTL_SECONDS: i32 = 86_400;

/// One event of a traced request.
#[derive(Clone, Debug)]
pub struct TraceEvent {
    pub activity: String,
    /// Microseconds since the request started.
    pub elapsed_micros: i64,
}

/// What a traced request did.
#[derive(Clone, Debug)]
pub struct TraceSession {
    pub session_id: [u8; 16],
    pub client: IpAddr,
    /// `QUERY`, `EXECUTE`, `BATCH`, `PREPARE`.
    pub command: String,
    pub request: String,
    pub parameters: Vec<(String, String)>,
    pub started_at_micros: i64,
    pub duration_micros: i64,
    pub events: Vec<TraceEvent>,
}

/// What a traced request records: who sent it, its command (`QUERY`,
/// `EXECUTE`, `BATCH`) and its text.
#[derive(Clone, Debug)]
pub struct TraceRequest {
    pub client: IpAddr,
    pub command: &'static str,
    pub text: String,
}

impl TraceRequest {
    /// The session a request makes, started at `started_at` (the clock's
    /// microseconds) and run for `elapsed` microseconds: parsing, execution
    /// and, when it failed, its failure, as Cassandra's coordinator
    /// records them.
    pub fn session(
        self,
        session_id: [u8; 16],
        (started_at, elapsed): (i64, i64),
        failure: Option<&QueryError>,
    ) -> TraceSession {
        let mut events = vec![
            TraceEvent {
                activity: format!("Parsing {}", self.text),
                elapsed_micros: 0,
            },
            TraceEvent {
                activity: "Executing statement".to_string(),
                elapsed_micros: 1.min(elapsed),
            },
        ];
        if let Some(e) = failure {
            events.push(TraceEvent {
                activity: format!("Request failed: {e}"),
                elapsed_micros: elapsed,
            });
        }
        TraceSession {
            session_id,
            client: self.client,
            command: self.command.to_string(),
            request: "Execute CQL3 query".to_string(),
            parameters: vec![("query".to_string(), self.text)],
            started_at_micros: started_at,
            duration_micros: elapsed.max(1),
            events,
        }
    }
}

fn bytes(b: Vec<u8>) -> rocksandra_wire::Value {
    rocksandra_wire::Value::Bytes(bytes::Bytes::from(b))
}

fn inet(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(v) => v.octets().to_vec(),
        IpAddr::V6(v) => v.octets().to_vec(),
    }
}

/// A new trace session id (a timeuuid, as Cassandra uses).
pub(crate) fn new_trace_id(ctx: &StatementCtx<'_>) -> [u8; 16] {
    crate::functions::timeuuid_at(ctx.now_micros(), (ctx.env.random)())
}

/// Writes a traced request's session and events.
pub(crate) fn record_trace(ctx: &StatementCtx<'_>, trace: &TraceSession) -> Result<()> {
    let node = ctx.node();
    let request = Request {
        internal: true,
        ..Request::default()
    };
    let ttl = TRACE_TTL_SECONDS.to_be_bytes().to_vec();
    let session = rocksandra_cql::parse_statement(
        "INSERT INTO system_traces.sessions (session_id, client, command, coordinator, \
         coordinator_port, duration, parameters, request, started_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?",
    )?;
    let parameters = Value::Map(
        trace
            .parameters
            .iter()
            .map(|(k, v)| (Value::Text(k.clone()), Value::Text(v.clone())))
            .collect(),
    );
    ctx.run(
        &session,
        &request,
        &[
            bytes(trace.session_id.to_vec()),
            bytes(inet(trace.client)),
            bytes(trace.command.clone().into_bytes()),
            bytes(inet(node.broadcast_address)),
            bytes(7000i32.to_be_bytes().to_vec()),
            bytes(
                (trace.duration_micros.clamp(0, i64::from(i32::MAX)) as i32)
                    .to_be_bytes()
                    .to_vec(),
            ),
            bytes(parameters.to_bytes()),
            bytes(trace.request.clone().into_bytes()),
            bytes((trace.started_at_micros / 1000).to_be_bytes().to_vec()),
            bytes(ttl.clone()),
        ],
    )?;
    let event = rocksandra_cql::parse_statement(
        "INSERT INTO system_traces.events (session_id, event_id, activity, source, \
         source_elapsed, source_port, thread) VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?",
    )?;
    for e in &trace.events {
        let id = crate::functions::timeuuid_at(
            trace.started_at_micros + e.elapsed_micros,
            (ctx.env.random)(),
        );
        ctx.run(
            &event,
            &request,
            &[
                bytes(trace.session_id.to_vec()),
                bytes(id.to_vec()),
                bytes(e.activity.clone().into_bytes()),
                bytes(inet(node.broadcast_address)),
                bytes(
                    (e.elapsed_micros.clamp(0, i64::from(i32::MAX)) as i32)
                        .to_be_bytes()
                        .to_vec(),
                ),
                bytes(7000i32.to_be_bytes().to_vec()),
                bytes(b"Native-Transport-Requests".to_vec()),
                bytes(ttl.clone()),
            ],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> TraceRequest {
        TraceRequest {
            client: IpAddr::from([127, 0, 0, 9]),
            command: "QUERY",
            text: "SELECT * FROM t".to_string(),
        }
    }

    #[test]
    fn a_session_records_parsing_then_execution() {
        let s = request().session([7; 16], (1_000, 250), None);
        assert_eq!(s.session_id, [7; 16]);
        assert_eq!(s.command, "QUERY");
        assert_eq!(s.request, "Execute CQL3 query");
        assert_eq!(
            s.parameters,
            vec![("query".into(), "SELECT * FROM t".into())]
        );
        assert_eq!((s.started_at_micros, s.duration_micros), (1_000, 250));
        let activities: Vec<_> = s.events.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(
            activities,
            ["Parsing SELECT * FROM t", "Executing statement"]
        );
        assert_eq!(s.events[1].elapsed_micros, 1);
    }

    #[test]
    fn a_failure_is_the_last_event_and_a_session_lasts_at_least_a_microsecond() {
        let e = QueryError::invalid("no such table");
        let s = request().session([1; 16], (5, 0), Some(&e));
        assert_eq!(s.duration_micros, 1);
        let last = s.events.last().expect("events");
        assert_eq!(last.activity, "Request failed: no such table");
        assert_eq!(s.events[1].elapsed_micros, 0);
    }
}
