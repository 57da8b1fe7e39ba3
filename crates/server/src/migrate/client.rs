//! The migration's CQL client: one connection, protocol v4 frames (no
//! segments) over the wire crate's client-side codec; PasswordAuthenticator
//! login, paging, prepared statements, batches. Batches can be pipelined
//! (`send_batch`: up to `WRITES_IN_FLIGHT_MAX` sent and not yet answered,
//! each on its own stream id); every other request waits for its answer,
//! taking the answers of pipelined batches that arrive before it.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rocksandra_wire::{
    decode_response, encode_request, Batch, BatchQuery, BatchStatement, BatchType, BoundValues,
    Consistency, Execute, FrameDecoder, Limits, Prepare, ProtocolVersion, Query, QueryParameters,
    Request, Response, ResultBody, Rows, StringMap, Value,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::MigrateError;

/// Largest frame accepted from a server (a page of wide rows).
const FRAME_BYTES_MAX: u64 = 256 * 1024 * 1024;
/// Longest wait for one answer: a page of a large table on a busy node.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Prepared statements kept per connection; past it, statements go as text.
const PREPARED_CACHE_ENTRIES_MAX: usize = 512;
/// Pipelined batches sent on one connection and not answered yet; the
/// next one waits for an answer past this.
pub const WRITES_IN_FLIGHT_MAX: usize = 32;
/// Stream ids are 1..=STREAM_ID_MAX (protocol v4's are positive i16s).
const STREAM_ID_MAX: i16 = i16::MAX;

/// Login for PasswordAuthenticator.
#[derive(Debug, Clone)]
pub struct Login {
    pub username: String,
    pub password: String,
}

/// One connection to a CQL server.
pub struct CqlClient {
    socket: TcpStream,
    buf: BytesMut,
    address: SocketAddr,
    prepared: HashMap<String, Bytes>,
    /// Stream ids of the pipelined batches not answered yet.
    in_flight: HashSet<i16>,
    /// The stream id the next request tries first.
    next_stream: i16,
}

/// One page of rows and the state that fetches the next.
pub struct Page {
    pub rows: Rows,
    pub next: Option<Bytes>,
}

const VERSION: ProtocolVersion = ProtocolVersion::V4;

impl CqlClient {
    pub async fn connect(address: SocketAddr, login: Option<&Login>) -> Result<Self, MigrateError> {
        let socket = TcpStream::connect(address)
            .await
            .map_err(|e| MigrateError::Connect(address, e.to_string()))?;
        let mut client = CqlClient {
            socket,
            buf: BytesMut::new(),
            address,
            prepared: HashMap::new(),
            in_flight: HashSet::new(),
            next_stream: 1,
        };
        client.startup(login).await?;
        Ok(client)
    }

    async fn startup(&mut self, login: Option<&Login>) -> Result<(), MigrateError> {
        let mut options = StringMap::new();
        options.insert("CQL_VERSION".into(), "3.0.0".into());
        match self.request(Request::Startup(options)).await? {
            Response::Ready => Ok(()),
            Response::Authenticate(_) => self.authenticate(login).await,
            other => Err(self.unexpected("STARTUP", &other)),
        }
    }

    /// SASL PLAIN: `\0user\0password`.
    async fn authenticate(&mut self, login: Option<&Login>) -> Result<(), MigrateError> {
        let Some(login) = login else {
            return Err(MigrateError::Server {
                address: self.address,
                code: None,
                message: "the server requires authentication: give its login (--username and \
                          --password for the source, --to-username and --to-password for the target)"
                    .into(),
            });
        };
        let mut token = vec![0u8];
        token.extend_from_slice(login.username.as_bytes());
        token.push(0);
        token.extend_from_slice(login.password.as_bytes());
        match self
            .request(Request::AuthResponse(Some(token.into())))
            .await?
        {
            Response::AuthSuccess(_) => Ok(()),
            other => Err(self.unexpected("AUTH_RESPONSE", &other)),
        }
    }

    /// A statement with positional values, answered by anything but an error.
    pub async fn query(
        &mut self,
        text: &str,
        values: Vec<Value>,
    ) -> Result<ResultBody, MigrateError> {
        let params = parameters(values, None, None);
        self.result(
            Request::Query(Query {
                query: text.into(),
                params,
            }),
            text,
        )
        .await
    }

    /// One page of a SELECT of `page_size` rows from `paging_state` on.
    pub async fn page(
        &mut self,
        text: &str,
        values: Vec<Value>,
        page_size: i32,
        paging_state: Option<Bytes>,
    ) -> Result<Page, MigrateError> {
        let id = self.prepare(text).await?;
        let params = parameters(values, Some(page_size), paging_state);
        let request = Request::Execute(Execute {
            id,
            result_metadata_id: None,
            params,
        });
        match self.result(request, text).await? {
            ResultBody::Rows(rows) => {
                let next = rows.metadata.paging_state.clone();
                Ok(Page { rows, next })
            }
            other => Err(MigrateError::Server {
                address: self.address,
                code: None,
                message: format!("expected rows for `{text}`, got {other:?}"),
            }),
        }
    }

    /// Every row of a SELECT, fetched page by page (for small system tables).
    pub async fn all_rows(
        &mut self,
        text: &str,
        values: Vec<Value>,
    ) -> Result<Vec<Vec<Option<Bytes>>>, MigrateError> {
        let mut out = Vec::new();
        let mut state = None;
        loop {
            let page = self.page(text, values.clone(), 5000, state).await?;
            out.extend(page.rows.rows);
            match page.next {
                Some(next) => state = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// Sends statements as one unlogged (or counter) batch, prepared when
    /// the cache has room, as text otherwise, without waiting for its
    /// answer (first waiting for one when `WRITES_IN_FLIGHT_MAX` are out):
    /// a failed batch fails a later call, at the latest `drain`.
    pub async fn send_batch(
        &mut self,
        batch_type: BatchType,
        statements: Vec<(String, Vec<Value>)>,
    ) -> Result<(), MigrateError> {
        let mut prepared = Vec::with_capacity(statements.len());
        for (text, values) in statements {
            let query = match self.prepare_cached(&text).await? {
                Some(id) => BatchQuery::Prepared(id),
                None => BatchQuery::Text(text),
            };
            prepared.push(BatchStatement { query, values });
        }
        let batch = Batch {
            batch_type,
            statements: prepared,
            consistency: Consistency::LocalQuorum,
            serial_consistency: None,
            default_timestamp_micros: None,
            keyspace: None,
            now_in_seconds: None,
        };
        while self.in_flight.len() >= WRITES_IN_FLIGHT_MAX {
            self.answer_of_pipelined().await?;
        }
        let stream = self.send(Request::Batch(batch)).await?;
        self.in_flight.insert(stream);
        Ok(())
    }

    /// Waits until every pipelined batch is answered.
    pub async fn drain(&mut self) -> Result<(), MigrateError> {
        while !self.in_flight.is_empty() {
            self.answer_of_pipelined().await?;
        }
        Ok(())
    }

    /// Takes the next answer, which must be a pipelined batch's.
    async fn answer_of_pipelined(&mut self) -> Result<(), MigrateError> {
        let (stream, response) = self.receive_timed().await?;
        self.pipelined(stream, response)
    }

    /// Checks the answer of pipelined batch `stream`.
    fn pipelined(&mut self, stream: i16, response: Response) -> Result<(), MigrateError> {
        if !self.in_flight.remove(&stream) {
            return Err(self.unexpected(&format!("stream {stream}"), &response));
        }
        match response {
            Response::Result(_) => Ok(()),
            other => Err(self.unexpected("BATCH", &other)),
        }
    }

    async fn prepare(&mut self, text: &str) -> Result<Bytes, MigrateError> {
        match self.prepare_cached(text).await? {
            Some(id) => Ok(id),
            None => self.prepare_uncached(text).await,
        }
    }

    async fn prepare_cached(&mut self, text: &str) -> Result<Option<Bytes>, MigrateError> {
        if let Some(id) = self.prepared.get(text) {
            return Ok(Some(id.clone()));
        }
        if self.prepared.len() >= PREPARED_CACHE_ENTRIES_MAX {
            return Ok(None);
        }
        let id = self.prepare_uncached(text).await?;
        self.prepared.insert(text.to_string(), id.clone());
        Ok(Some(id))
    }

    async fn prepare_uncached(&mut self, text: &str) -> Result<Bytes, MigrateError> {
        let request = Request::Prepare(Prepare {
            query: text.into(),
            keyspace: None,
        });
        match self.result(request, text).await? {
            ResultBody::Prepared(prepared) => Ok(prepared.id),
            other => Err(MigrateError::Server {
                address: self.address,
                code: None,
                message: format!("expected a prepared id for `{text}`, got {other:?}"),
            }),
        }
    }

    async fn result(&mut self, request: Request, what: &str) -> Result<ResultBody, MigrateError> {
        match self.request(request).await? {
            Response::Result(body) => Ok(body),
            Response::Error(e) => Err(MigrateError::Server {
                address: self.address,
                code: Some(e.kind.code()),
                message: format!("{what}: {} (code 0x{:04x})", e.message, e.kind.code()),
            }),
            other => Err(self.unexpected(what, &other)),
        }
    }

    /// Sends `request` and waits for its answer, checking the answers of
    /// pipelined batches that come first.
    async fn request(&mut self, request: Request) -> Result<Response, MigrateError> {
        let stream = self.send(request).await?;
        loop {
            let (answered, response) = self.receive_timed().await?;
            if answered == stream {
                return Ok(response);
            }
            self.pipelined(answered, response)?;
        }
    }

    /// Writes `request` on a stream id no pipelined batch holds; returns it.
    async fn send(&mut self, request: Request) -> Result<i16, MigrateError> {
        let mut stream = self.next_stream;
        while self.in_flight.contains(&stream) {
            stream = next_stream_id(stream);
        }
        self.next_stream = next_stream_id(stream);
        let envelope = rocksandra_wire::RequestEnvelope {
            version: VERSION,
            stream,
            tracing: false,
            custom_payload: None,
            request,
        };
        let frame = encode_request(&envelope, None).map_err(|e| self.wire(e))?;
        let io = |e: std::io::Error| MigrateError::Connect(self.address, e.to_string());
        self.socket.write_all(&frame.to_bytes()).await.map_err(io)?;
        Ok(stream)
    }

    async fn receive_timed(&mut self) -> Result<(i16, Response), MigrateError> {
        tokio::time::timeout(REQUEST_TIMEOUT, self.receive())
            .await
            .map_err(|_| MigrateError::Server {
                address: self.address,
                code: None,
                message: format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()),
            })?
    }

    /// The next answer and its stream id.
    async fn receive(&mut self) -> Result<(i16, Response), MigrateError> {
        let limits = Limits {
            max_frame_bytes: FRAME_BYTES_MAX,
        };
        loop {
            let decoded = FrameDecoder::new(limits).decode(&mut self.buf);
            if let Some(frame) = decoded.map_err(|e| self.wire(e))? {
                let envelope = decode_response(&frame, None, limits).map_err(|e| self.wire(e))?;
                return Ok((envelope.stream, envelope.response));
            }
            let read = self.socket.read_buf(&mut self.buf).await;
            match read {
                Ok(0) => {
                    return Err(MigrateError::Connect(
                        self.address,
                        "connection closed".into(),
                    ))
                }
                Ok(_) => {}
                Err(e) => return Err(MigrateError::Connect(self.address, e.to_string())),
            }
        }
    }

    fn wire(&self, error: rocksandra_wire::WireError) -> MigrateError {
        MigrateError::Server {
            address: self.address,
            code: None,
            message: format!("protocol error: {error}"),
        }
    }

    fn unexpected(&self, what: &str, response: &Response) -> MigrateError {
        let (code, message) = match response {
            Response::Error(e) => (Some(e.kind.code()), format!("{what}: {}", e.message)),
            other => (
                None,
                format!("{what}: unexpected answer {:?}", other.opcode()),
            ),
        };
        MigrateError::Server {
            address: self.address,
            code,
            message,
        }
    }
}

/// The stream id after `stream`, from 1 again after `STREAM_ID_MAX`.
fn next_stream_id(stream: i16) -> i16 {
    if stream == STREAM_ID_MAX {
        1
    } else {
        stream + 1
    }
}

fn parameters(
    values: Vec<Value>,
    page_size: Option<i32>,
    paging_state: Option<Bytes>,
) -> QueryParameters {
    let mut params = QueryParameters::new(Consistency::LocalQuorum);
    params.values = BoundValues::Positional(values);
    params.page_size = page_size;
    params.paging_state = paging_state;
    params
}

#[cfg(test)]
mod tests {
    use rocksandra_wire::{
        decode_request, encode_response, ColumnsMetadata, ErrorKind, ErrorResponse, Prepared,
        PreparedMetadata, ResponseEnvelope, RowsMetadata,
    };
    use tokio::net::TcpListener;

    use super::*;

    /// Batches the fake server holds before answering them all, newest
    /// first: the client must never have more unanswered.
    const HELD_MAX: usize = WRITES_IN_FLIGHT_MAX;

    fn envelope(stream: i16, response: Response) -> Bytes {
        let envelope = ResponseEnvelope {
            version: VERSION,
            stream,
            tracing_id: None,
            warnings: Vec::new(),
            custom_payload: None,
            response,
        };
        encode_response(&envelope, None).expect("encode").to_bytes()
    }

    fn prepared() -> Response {
        Response::Result(ResultBody::Prepared(Prepared {
            id: Bytes::from_static(b"id"),
            result_metadata_id: None,
            bind_metadata: PreparedMetadata {
                pk_indexes: Vec::new(),
                columns: Vec::new(),
            },
            result_metadata: RowsMetadata {
                columns: ColumnsMetadata::NoMetadata { column_count: 0 },
                paging_state: None,
                new_metadata_id: None,
            },
        }))
    }

    /// A server that holds BATCH answers until it has `HELD_MAX` of them
    /// or a QUERY comes, then answers them newest first (the query last);
    /// a QUERY of `fail` answers its held batches with an error. Returns
    /// the most batches it held at once.
    async fn fake_server(listener: TcpListener) -> usize {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let limits = Limits {
            max_frame_bytes: FRAME_BYTES_MAX,
        };
        let mut buf = BytesMut::new();
        let (mut held, mut held_max) = (Vec::new(), 0);
        loop {
            let frame = match FrameDecoder::new(limits).decode(&mut buf).expect("frame") {
                Some(frame) => frame,
                None => match socket.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return held_max,
                    Ok(_) => continue,
                },
            };
            let request = decode_request(&frame, None, limits).expect("request");
            let mut out = Vec::new();
            let answer_held = |held: &mut Vec<i16>, out: &mut Vec<Bytes>, failed: bool| {
                for stream in held.drain(..).rev() {
                    let response = match failed {
                        true => Response::Error(ErrorResponse::new(ErrorKind::Invalid, "no")),
                        false => Response::Result(ResultBody::Void),
                    };
                    out.push(envelope(stream, response));
                }
            };
            match request.request {
                Request::Startup(_) => out.push(envelope(request.stream, Response::Ready)),
                Request::Prepare(_) => out.push(envelope(request.stream, prepared())),
                Request::Batch(_) => {
                    held.push(request.stream);
                    held_max = held_max.max(held.len());
                    if held.len() == HELD_MAX {
                        answer_held(&mut held, &mut out, false);
                    }
                }
                Request::Query(query) => {
                    answer_held(&mut held, &mut out, &*query.query == "fail");
                    let void = Response::Result(ResultBody::Void);
                    out.push(envelope(request.stream, void));
                }
                other => panic!("unexpected request {:?}", other.opcode()),
            }
            for bytes in out {
                socket.write_all(&bytes).await.expect("write");
            }
        }
    }

    async fn client_of_fake_server() -> (CqlClient, tokio::task::JoinHandle<usize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let server = tokio::spawn(fake_server(listener));
        let client = CqlClient::connect(address, None).await.expect("connect");
        (client, server)
    }

    fn one_insert() -> Vec<(String, Vec<Value>)> {
        vec![("INSERT INTO ks.t (k) VALUES (1)".to_string(), Vec::new())]
    }

    #[tokio::test]
    async fn pipelined_batches_stay_within_the_limit_and_their_answers_come_in_any_order() {
        let (mut client, server) = client_of_fake_server().await;
        for _ in 0..HELD_MAX + 8 {
            client
                .send_batch(BatchType::Unlogged, one_insert())
                .await
                .expect("batch");
            assert!(client.in_flight.len() <= WRITES_IN_FLIGHT_MAX);
        }
        // The first answers wait unread in the socket: a batch is taken
        // off only when its answer is read, to make room for another.
        assert_eq!(client.in_flight.len(), WRITES_IN_FLIGHT_MAX);
        // The query's answer comes after those and the 8 held batches':
        // each goes to its own stream.
        let answer = client.query("SELECT 1", Vec::new()).await.expect("query");
        assert_eq!(answer, ResultBody::Void);
        assert!(client.in_flight.is_empty());
        client.drain().await.expect("drain");
        drop(client);
        assert_eq!(server.await.expect("server"), HELD_MAX);
    }

    #[tokio::test]
    async fn a_failed_pipelined_batch_fails_the_next_request() {
        let (mut client, _server) = client_of_fake_server().await;
        client
            .send_batch(BatchType::Unlogged, one_insert())
            .await
            .expect("sent");
        let error = client.query("fail", Vec::new()).await.expect_err("failed");
        assert!(error.to_string().contains("BATCH: no"), "{error}");
    }

    #[test]
    fn stream_ids_wrap_to_1() {
        assert_eq!(next_stream_id(1), 2);
        assert_eq!(next_stream_id(STREAM_ID_MAX), 1);
    }
}
