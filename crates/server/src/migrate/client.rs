//! The migration's CQL client: one connection, one request at a time,
//! protocol v4 frames (no segments) over the wire crate's client-side
//! codec; PasswordAuthenticator login, paging, prepared statements, batches.

use std::collections::HashMap;
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

    /// Runs statements as one unlogged (or counter) batch: prepared when
    /// the cache has room, as text otherwise.
    pub async fn batch(
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
        self.result(Request::Batch(batch), "BATCH")
            .await
            .map(|_| ())
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

    async fn request(&mut self, request: Request) -> Result<Response, MigrateError> {
        let envelope = rocksandra_wire::RequestEnvelope {
            version: VERSION,
            stream: 0,
            tracing: false,
            custom_payload: None,
            request,
        };
        let frame = encode_request(&envelope, None).map_err(|e| self.wire(e))?;
        let io = |e: std::io::Error| MigrateError::Connect(self.address, e.to_string());
        self.socket.write_all(&frame.to_bytes()).await.map_err(io)?;
        tokio::time::timeout(REQUEST_TIMEOUT, self.receive())
            .await
            .map_err(|_| MigrateError::Server {
                address: self.address,
                code: None,
                message: format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()),
            })?
    }

    async fn receive(&mut self) -> Result<Response, MigrateError> {
        let limits = Limits {
            max_frame_bytes: FRAME_BYTES_MAX,
        };
        loop {
            let decoded = FrameDecoder::new(limits).decode(&mut self.buf);
            if let Some(frame) = decoded.map_err(|e| self.wire(e))? {
                let envelope = decode_response(&frame, None, limits).map_err(|e| self.wire(e))?;
                return Ok(envelope.response);
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
