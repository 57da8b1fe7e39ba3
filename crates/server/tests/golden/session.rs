//! One client session of the golden runner: a raw CQL connection that asks
//! what the Python driver asks (client timestamps, page size 5000 unless a
//! marker says otherwise, PREPARE then EXECUTE for `bind`) and renders each
//! answer as runner.py's `execute` does.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use rocksandra_wire::{
    BoundValues, ColumnSpec, ColumnsMetadata, Consistency, ErrorResponse, Execute, Prepare,
    ProtocolVersion, Query, QueryParameters, Request, Response, ResultBody, Rows,
};

use super::bind::bind_values;
use super::case::{Marker, Statement};
use super::python::{decode, Py};
use super::render::{render_client_error, render_error, render_type, render_value};
use crate::common::Client;

/// The driver's default page size (`fetch_size`).
const FETCH_SIZE_DEFAULT: i32 = 5000;

/// Longest wait for an answer: runner.py's `request_timeout`.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A logged-in connection.
pub struct Session {
    client: Client,
    stream: i16,
    /// The node's native port, shown as the recording's 9042.
    native_port: u16,
}

/// The port the suite was recorded on: system tables show it.
const RECORDED_NATIVE_PORT: u16 = 9042;

/// Columns that show the node's own native port.
const NATIVE_PORT_COLUMNS: [&str; 2] = ["rpc_port", "native_port"];

/// What a statement's requests gave: rows of every page, or no rows.
struct Answer {
    columns: Option<Vec<ColumnSpec>>,
    rows: Vec<Vec<Option<Bytes>>>,
    pages: usize,
    warnings: Vec<String>,
}

/// A failed statement: the server's ERROR, or the client's own failure.
enum Failure {
    Server(ErrorResponse),
    Client { kind: String, message: String },
}

impl Failure {
    fn render(&self) -> String {
        match self {
            Failure::Server(e) => render_error(e),
            Failure::Client { kind, message } => render_client_error(kind, message),
        }
    }
}

/// The driver's MonotonicTimestampGenerator: wall-clock microseconds, one
/// more than the last when the clock has not moved.
fn client_timestamp() -> i64 {
    static LAST_MICROS: AtomicI64 = AtomicI64::new(0);
    let now = rocksandra_data::time::system_micros();
    let previous = LAST_MICROS
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
            Some(now.max(last + 1))
        })
        .unwrap_or(now);
    now.max(previous + 1)
}

impl Session {
    /// Connects, and logs in with PasswordAuthenticator's SASL PLAIN when
    /// the server asks; a refused login is the server's ERROR.
    pub async fn connect(
        address: SocketAddr,
        version: ProtocolVersion,
        login: Option<(&str, &str)>,
    ) -> Result<Session, ErrorResponse> {
        let mut session = Session {
            client: Client::connect(address, version).await,
            stream: 1,
            native_port: address.port(),
        };
        match session.client.startup(None).await {
            Response::Ready => Ok(session),
            Response::Authenticate(_) => {
                let (user, password) = login.unwrap_or(("", ""));
                let mut token = BytesMut::new();
                token.put_u8(0);
                token.put_slice(user.as_bytes());
                token.put_u8(0);
                token.put_slice(password.as_bytes());
                let reply = session
                    .request(Request::AuthResponse(Some(token.freeze())))
                    .await;
                match reply.1 {
                    Response::AuthSuccess(_) => Ok(session),
                    Response::Error(e) => Err(e),
                    other => panic!("unexpected answer to AUTH_RESPONSE: {other:?}"),
                }
            }
            Response::Error(e) => Err(e),
            other => panic!("unexpected answer to STARTUP: {other:?}"),
        }
    }

    /// Sends one request; its warnings and response.
    async fn request(&mut self, request: Request) -> (Vec<String>, Response) {
        self.stream = if self.stream == i16::MAX {
            1
        } else {
            self.stream + 1
        };
        self.client.send(self.stream, request).await;
        loop {
            let reply = self.client.recv_within(REQUEST_TIMEOUT).await;
            // Events (stream -1) are not ours; the runner never registers.
            if reply.stream == self.stream {
                return (reply.warnings, reply.response);
            }
        }
    }

    /// Runs one statement; its output lines (without the echo).
    pub async fn execute(&mut self, statement: &Statement) -> Vec<String> {
        for marker in &statement.markers {
            if let Marker::SleepSeconds(seconds) = marker {
                tokio::time::sleep(Duration::from_secs_f64(*seconds)).await;
            }
        }
        let skip = statement.has(&Marker::SkipOutput);
        match self.answer(statement).await {
            Err(failure) if skip => {
                let line = failure.render();
                vec![line.splitn(3, ' ').take(2).collect::<Vec<_>>().join(" ")]
            }
            Err(failure) => vec![failure.render()],
            Ok(answer) => render_answer(statement, answer, skip, self.native_port),
        }
    }

    async fn answer(&mut self, statement: &Statement) -> Result<Answer, Failure> {
        let mut params = parameters(statement);
        let Some(values) = statement.bind() else {
            return self
                .pages(params, |params| {
                    Request::Query(Query {
                        query: statement.text.clone(),
                        params,
                    })
                })
                .await;
        };
        let prepare = Request::Prepare(Prepare {
            query: statement.text.clone(),
            keyspace: None,
        });
        let prepared = match self.request(prepare).await.1 {
            Response::Result(ResultBody::Prepared(p)) => p,
            Response::Error(e) => return Err(Failure::Server(e)),
            other => panic!("unexpected answer to PREPARE: {other:?}"),
        };
        let bound = bind_values(values, &prepared.bind_metadata.columns).map_err(|message| {
            Failure::Client {
                kind: "TypeError".into(),
                message,
            }
        })?;
        params.values = BoundValues::Positional(bound);
        self.pages(params, |params| {
            Request::Execute(Execute {
                id: prepared.id.clone(),
                result_metadata_id: prepared.result_metadata_id.clone(),
                params,
            })
        })
        .await
    }

    /// Sends the request and then one per further page, as the runner's
    /// `fetch_next_page` loop does.
    async fn pages(
        &mut self,
        mut params: QueryParameters,
        request: impl Fn(QueryParameters) -> Request,
    ) -> Result<Answer, Failure> {
        let mut answer = Answer {
            columns: None,
            rows: Vec::new(),
            pages: 0,
            warnings: Vec::new(),
        };
        loop {
            params.default_timestamp_micros = Some(client_timestamp());
            let (warnings, response) = self.request(request(params.clone())).await;
            let rows = match response {
                Response::Error(e) => return Err(Failure::Server(e)),
                Response::Result(ResultBody::Rows(rows)) => rows,
                Response::Result(_) => {
                    answer.warnings.extend(warnings);
                    return Ok(answer);
                }
                other => panic!("unexpected answer to a request: {other:?}"),
            };
            answer.pages += 1;
            answer.warnings.extend(warnings);
            let Rows { metadata, rows } = rows;
            if answer.columns.is_none() {
                if let ColumnsMetadata::Specs(specs) = &metadata.columns {
                    answer.columns = Some(specs.to_vec());
                }
            }
            answer.rows.extend(rows);
            match metadata.paging_state {
                Some(state) => params.paging_state = Some(state),
                None => return Ok(answer),
            }
        }
    }
}

/// Consistency ONE unless told, page size 5000 unless told (0: none).
fn parameters(statement: &Statement) -> QueryParameters {
    let mut params = QueryParameters::new(Consistency::One);
    params.page_size = match statement.fetch_size() {
        Some(0) => None,
        Some(n) => Some(n),
        None => Some(FETCH_SIZE_DEFAULT),
    };
    for marker in &statement.markers {
        match marker {
            Marker::Consistency(c) => params.consistency = *c,
            Marker::SerialConsistency(c) => params.serial_consistency = Some(*c),
            _ => {}
        }
    }
    params
}

fn render_answer(
    statement: &Statement,
    answer: Answer,
    skip: bool,
    native_port: u16,
) -> Vec<String> {
    let Some(columns) = &answer.columns else {
        let mut out = vec!["OK".to_string()];
        if !skip {
            out.extend(warning_lines(&answer.warnings));
        }
        return out;
    };
    if skip {
        return vec!["ROWS (output skipped)".into()];
    }
    let mut rows = Vec::with_capacity(answer.rows.len());
    for row in &answer.rows {
        match decode_row(columns, row, native_port) {
            Ok(values) => rows.push(values),
            Err(message) => return vec![render_client_error("DriverException", &message)],
        }
    }
    let mut out = vec![format!(
        "[{}]",
        columns
            .iter()
            .map(|c| format!("{} {}", c.name, render_type(&c.cql_type)))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    let mut lines = row_lines(columns, &rows);
    if statement.has(&Marker::SortRows) {
        lines.sort();
    }
    out.extend(lines);
    out.push(match statement.fetch_size() {
        Some(n) if n != 0 => format!("({} rows, {} pages)", rows.len(), answer.pages),
        _ => format!("({} rows)", rows.len()),
    });
    out.extend(warning_lines(&answer.warnings));
    out
}

fn decode_row(
    columns: &[ColumnSpec],
    row: &[Option<Bytes>],
    native_port: u16,
) -> Result<Vec<Py>, String> {
    // The node reports the port it was configured with: 0, a free one.
    let ours = [Py::Int(native_port.into()), Py::Int(0.into())];
    columns
        .iter()
        .zip(row)
        .map(|(column, cell)| match cell {
            None => Ok(Py::None),
            Some(bytes) => decode(&column.cql_type, bytes)
                .map(|value| {
                    let port_column = NATIVE_PORT_COLUMNS.contains(&column.name.as_str());
                    if port_column && ours.contains(&value) {
                        Py::Int(RECORDED_NATIVE_PORT.into())
                    } else {
                        value
                    }
                })
                .map_err(|e| {
                    format!(
                        "Failed decoding result column \"{}\" of type {}: {e}",
                        column.name,
                        render_type(&column.cql_type)
                    )
                }),
        })
        .collect()
}

/// One line per row; DESCRIBE's create_statement verbatim under its row.
fn row_lines(columns: &[ColumnSpec], rows: &[Vec<Py>]) -> Vec<String> {
    let join = |values: &[Py]| {
        values
            .iter()
            .map(render_value)
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let describe = columns.last().is_some_and(|c| c.name == "create_statement");
    if !describe {
        return rows.iter().map(|row| join(row)).collect();
    }
    let mut lines = Vec::new();
    for row in rows {
        let (statement, others) = row.split_last().unwrap_or((&Py::None, &[]));
        lines.push(join(others));
        let text = match statement {
            Py::Str(s) if !s.is_empty() => s.as_str(),
            _ => "null",
        };
        lines.extend(text.split('\n').map(|l| format!("    {l}")));
    }
    lines
}

/// Each distinct warning once, its whitespace collapsed.
fn warning_lines(warnings: &[String]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for warning in warnings {
        let warning = warning.split_whitespace().collect::<Vec<_>>().join(" ");
        if !seen.contains(&warning) {
            seen.push(warning);
        }
    }
    seen.into_iter().map(|w| format!("WARNING {w}")).collect()
}
