//! End-to-end tests of the CQL transport: an in-process server on an
//! ephemeral port, spoken to over raw TCP with the wire crate's client-side
//! encoders.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use rocksandra_server::config::Authenticator;
use rocksandra_server::handler::NOT_READY_MESSAGE;
use rocksandra_server::metrics::{RequestKind, RequestSnapshot, ServerMetrics};
use rocksandra_server::{
    Credentials, EventSender, HandlerFuture, NotReadyHandler, Reply, RequestContext,
    RequestHandler, Server, Session, TransportConfig, TransportLimits,
};
use rocksandra_wire::{
    decode_response, Batch, ColumnsMetadata, ErrorKind, ErrorResponse, Event, EventType, Execute,
    Prepare, ProtocolVersion, Query, Request, Response, ResultBody, Rows, RowsMetadata,
    SchemaChange, SchemaChangeTarget, SchemaChangeType, StringMap,
};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{oneshot, Semaphore};
use tokio::task::JoinHandle;

mod common;
use common::{query, Client, CLIENT_LIMITS, WAIT};

// ---------------------------------------------------------------- server

struct TestServer {
    address: SocketAddr,
    events: EventSender,
    metrics: Arc<ServerMetrics>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl TestServer {
    async fn start(handler: Arc<dyn RequestHandler>) -> TestServer {
        TestServer::start_with(handler, TransportLimits::default(), Authenticator::AllowAll).await
    }

    async fn start_with(
        handler: Arc<dyn RequestHandler>,
        limits: TransportLimits,
        authenticator: Authenticator,
    ) -> TestServer {
        let config = TransportConfig {
            address: "127.0.0.1:0".parse().expect("address"),
            authenticator,
            limits,
            shutdown_grace: WAIT,
            tls: None,
        };
        let server = Server::bind(config, handler).await.expect("binds");
        let address = server.local_addr();
        assert_ne!(address.port(), 0, "the bound port is reported");
        let events = server.events();
        let metrics = server.metrics();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async {
            let _ = stopped.await;
        }));
        TestServer {
            address,
            events,
            metrics,
            stop: Some(stop),
            task,
        }
    }

    async fn connect(&self, version: ProtocolVersion) -> Client {
        Client::connect(self.address, version).await
    }

    /// Signals shutdown and waits for `run` to return.
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(WAIT * 2, &mut self.task)
            .await
            .expect("server stops in time")
            .expect("server task ends cleanly");
    }
}

fn limits(per_connection: usize, total: usize, connections: usize) -> TransportLimits {
    TransportLimits {
        max_connections: connections,
        max_requests_per_connection: per_connection,
        max_requests: total,
        max_frame_bytes: 256 * 1024,
        ..TransportLimits::default()
    }
}

// ---------------------------------------------------------------- handler

/// Answers by the query text: `block` waits for a permit of `gate`,
/// `sleep N` sleeps N ms, `whoami` names the session's user, `panic`
/// panics; each answers RESULT SetKeyspace(text) so tests can tell replies apart.
struct ScriptedHandler {
    gate: Arc<Semaphore>,
}

impl ScriptedHandler {
    fn new() -> (Arc<ScriptedHandler>, Arc<Semaphore>) {
        let gate = Arc::new(Semaphore::new(0));
        (Arc::new(ScriptedHandler { gate: gate.clone() }), gate)
    }
}

fn text_result(text: impl Into<String>) -> Reply {
    Reply::from(Response::Result(ResultBody::SetKeyspace(text.into())))
}

/// One row with one cell: for replies too long for a `[string]`.
fn rows_result(cell: Bytes) -> Reply {
    Reply::from(Response::Result(ResultBody::Rows(Rows {
        metadata: RowsMetadata {
            columns: ColumnsMetadata::NoMetadata { column_count: 1 },
            paging_state: None,
            new_metadata_id: None,
        },
        rows: vec![vec![Some(cell)]],
    })))
}

impl RequestHandler for ScriptedHandler {
    fn query<'a>(
        &'a self,
        session: &'a Session,
        _context: &'a RequestContext,
        query: Query,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async move {
            let text = query.query;
            if text == "block" || text.starts_with("block ") {
                if let Ok(permit) = self.gate.acquire().await {
                    permit.forget();
                }
            } else if let Some(rest) = text.strip_prefix("sleep ") {
                // `sleep N padding...`: the padding makes a large request.
                let ms = rest.split(' ').next().unwrap_or_default();
                let ms = ms.parse().expect("sleep takes milliseconds");
                tokio::time::sleep(Duration::from_millis(ms)).await;
            } else if text == "whoami" {
                let user = session.authenticated_user().unwrap_or_default();
                return text_result(format!("user={user}"));
            } else if text == "panic" {
                panic!("the scripted handler panics on request");
            } else if text.len() > u16::MAX as usize {
                return rows_result(Bytes::from(text));
            }
            text_result(text)
        })
    }

    fn prepare<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Prepare,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async { text_result("prepare") })
    }

    fn execute<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Execute,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async { text_result("execute") })
    }

    fn batch<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Batch,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async { text_result("batch") })
    }

    fn authenticate<'a>(
        &'a self,
        _: &'a Session,
        credentials: Credentials,
    ) -> HandlerFuture<'a, Result<(), ErrorResponse>> {
        Box::pin(async move {
            if credentials.username == "cassandra" && credentials.password == "cassandra" {
                Ok(())
            } else {
                Err(ErrorResponse::new(
                    ErrorKind::BadCredentials,
                    format!(
                        "Provided username {} and/or password are incorrect",
                        credentials.username
                    ),
                ))
            }
        })
    }
}

fn expect_error(response: &Response, kind: ErrorKind) -> String {
    match response {
        Response::Error(error) if error.kind == kind => error.message.clone(),
        other => panic!("expected a {kind:?} error, got {other:?}"),
    }
}

fn expect_text(response: &Response) -> String {
    match response {
        Response::Result(ResultBody::SetKeyspace(text)) => text.clone(),
        other => panic!("expected a scripted result, got {other:?}"),
    }
}

/// A raw request header (for versions and lengths the encoder refuses).
fn raw_header(version: u8, stream: i16, opcode: u8, body_bytes: u32) -> BytesMut {
    let mut out = BytesMut::new();
    out.put_u8(version);
    out.put_u8(0);
    out.put_i16(stream);
    out.put_u8(opcode);
    out.put_u32(body_bytes);
    out
}

/// Parses an ERROR frame by hand: (version byte, stream, code, message).
fn parse_raw_error(bytes: &[u8], stream_bytes: usize) -> (u8, i16, i32, String) {
    let version = bytes[0];
    let stream = if stream_bytes == 1 {
        i16::from(bytes[2] as i8)
    } else {
        i16::from_be_bytes([bytes[2], bytes[3]])
    };
    // version, flags, stream, opcode, body length
    let body = &bytes[2 + stream_bytes + 1 + 4..];
    let code = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
    let len = u16::from_be_bytes([body[4], body[5]]) as usize;
    let message = String::from_utf8(body[6..6 + len].to_vec()).expect("utf8");
    (version, stream, code, message)
}

const OPCODE_OPTIONS: u8 = 0x05;
const PROTOCOL_ERROR_CODE: i32 = 0x000A;

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn options_gets_supported_in_every_version() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;
    for version in [
        ProtocolVersion::V3,
        ProtocolVersion::V4,
        ProtocolVersion::V5,
    ] {
        let mut client = server.connect(version).await;
        let response = client.request(7, Request::Options).await;
        let Response::Supported(options) = response else {
            panic!("expected SUPPORTED, got {response:?}");
        };
        assert_eq!(options["CQL_VERSION"], vec!["3.4.7"]);
        assert_eq!(options["COMPRESSION"], vec!["lz4", "snappy"]);
        assert_eq!(options["PROTOCOL_VERSIONS"], vec!["3/v3", "4/v4", "5/v5"]);
    }
    server.stop().await;
}

#[tokio::test]
async fn v4_startup_ready_then_query_gets_the_not_ready_error() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    let response = client.request(3, query("SELECT * FROM system.local")).await;
    assert_eq!(
        expect_error(&response, ErrorKind::ServerError),
        NOT_READY_MESSAGE
    );
    server.stop().await;
}

#[tokio::test]
async fn v5_switches_to_segments_after_ready() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;
    let mut client = server.connect(ProtocolVersion::V5).await;
    // READY itself comes as a bare frame (checked by the plain decoder).
    assert_eq!(client.startup(None).await, Response::Ready);
    // From here on, `Client` frames and unframes segments; a bare frame
    // would fail the segment header CRC.
    let response = client
        .request(9, query("SELECT now() FROM system.local"))
        .await;
    assert_eq!(
        expect_error(&response, ErrorKind::ServerError),
        NOT_READY_MESSAGE
    );
    let response = client.request(10, Request::Options).await;
    assert!(matches!(response, Response::Supported(_)));
    server.stop().await;
}

#[tokio::test]
async fn v5_frames_larger_than_a_segment_are_reassembled() {
    let (handler, _gate) = ScriptedHandler::new();
    let server = TestServer::start(handler).await;
    for compression in [None, Some("lz4")] {
        let mut client = server.connect(ProtocolVersion::V5).await;
        assert_eq!(client.startup(compression).await, Response::Ready);
        // 200 KiB of query text spans two segments each way.
        let text: String = (0..200 * 1024)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let response = client.request(4, query(&text)).await;
        let Response::Result(ResultBody::Rows(rows)) = response else {
            panic!("expected rows, got {response:?}");
        };
        assert_eq!(rows.rows, vec![vec![Some(Bytes::from(text))]]);
        // Small frames still work after the large ones.
        assert_eq!(
            expect_text(&client.request(5, query("small")).await),
            "small"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn unsupported_versions_get_a_protocol_error_drivers_step_down_on() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;

    // v6: answered in v5 framing, as Cassandra does for versions above its own.
    let mut client = server.connect(ProtocolVersion::V5).await;
    client.send_raw(&raw_header(6, 5, OPCODE_OPTIONS, 0)).await;
    client.expect_closed().await;
    let (version, stream, code, message) = parse_raw_error(&client.buf, 2);
    assert_eq!((version, stream, code), (0x85, 5, PROTOCOL_ERROR_CODE));
    assert_eq!(
        message,
        "Invalid or unsupported protocol version (6); supported versions are (3/v3, 4/v4, 5/v5)"
    );

    // v2: answered in v2's own framing (a one-byte stream id), so that an
    // old driver can read it.
    let mut client = server.connect(ProtocolVersion::V4).await;
    let v2_header = [0x02, 0, 2, OPCODE_OPTIONS, 0, 0, 0, 0];
    client.send_raw(&v2_header).await;
    client.expect_closed().await;
    let (version, stream, code, message) = parse_raw_error(&client.buf, 1);
    assert_eq!((version, stream, code), (0x82, 2, PROTOCOL_ERROR_CODE));
    assert!(
        message.contains("(2); supported versions are (3/v3, 4/v4, 5/v5)"),
        "{message}"
    );

    // v6 with the beta flag is still v6.
    let mut client = server.connect(ProtocolVersion::V5).await;
    let mut header = raw_header(6, 1, OPCODE_OPTIONS, 0);
    header[1] = 0x10;
    client.send_raw(&header).await;
    client.expect_closed().await;
    assert_eq!(parse_raw_error(&client.buf, 2).2, PROTOCOL_ERROR_CODE);
    server.stop().await;
}

#[tokio::test]
async fn beta_flag_is_ignored_on_released_versions() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;
    let mut client = server.connect(ProtocolVersion::V5).await;
    let mut header = raw_header(5, 1, OPCODE_OPTIONS, 0);
    header[1] = 0x10;
    client.send_raw(&header).await;
    assert!(matches!(
        client.recv().await.response,
        Response::Supported(_)
    ));
    server.stop().await;
}

#[tokio::test]
async fn garbage_gets_a_protocol_error_and_the_server_stays_up() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;

    // Text where a frame should be: the first byte is not a version.
    let mut client = server.connect(ProtocolVersion::V4).await;
    client
        .send_raw(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await;
    client.expect_closed().await;
    assert_eq!(parse_raw_error(&client.buf, 2).2, PROTOCOL_ERROR_CODE);

    // A well-framed request with an unknown opcode and one with a truncated
    // body: each is answered on its stream, and the connection lives on.
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    client.send_raw(&raw_header(4, 11, 0x42, 0)).await;
    let reply = client.recv().await;
    assert_eq!(reply.stream, 11);
    let message = expect_error(&reply.response, ErrorKind::ProtocolError);
    assert!(message.contains("opcode"), "{message}");
    let mut truncated = raw_header(4, 12, 0x07, 3);
    truncated.put_slice(&[0, 0, 9]);
    client.send_raw(&truncated).await;
    let reply = client.recv().await;
    assert_eq!(reply.stream, 12);
    expect_error(&reply.response, ErrorKind::ProtocolError);
    let response = client.request(13, query("SELECT 1")).await;
    expect_error(&response, ErrorKind::ServerError);

    // Corrupt v5 segments close that connection only.
    let mut client = Client::ready(server.address, ProtocolVersion::V5).await;
    client.send_raw(&[0xff; 64]).await;
    client.expect_closed().await;

    // New connections are still served.
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    expect_error(
        &client.request(2, query("SELECT 1")).await,
        ErrorKind::ServerError,
    );
    server.stop().await;
}

#[tokio::test]
async fn messages_out_of_phase_are_protocol_errors() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;
    let mut client = server.connect(ProtocolVersion::V4).await;
    let response = client.request(1, query("SELECT 1")).await;
    assert_eq!(
        expect_error(&response, ErrorKind::ProtocolError),
        "Unexpected message QUERY, expecting STARTUP or OPTIONS"
    );
    assert_eq!(client.startup(None).await, Response::Ready);
    let response = client.request(2, Request::Startup(StringMap::new())).await;
    assert_eq!(
        expect_error(&response, ErrorKind::ProtocolError),
        "Unexpected message STARTUP, the connection is already initialized"
    );

    let mut client = server.connect(ProtocolVersion::V4).await;
    let message = expect_error(
        &client.startup(Some("zstd")).await,
        ErrorKind::ProtocolError,
    );
    assert_eq!(message, "Unknown compression algorithm: zstd");
    let mut client = server.connect(ProtocolVersion::V5).await;
    let message = expect_error(
        &client.startup(Some("snappy")).await,
        ErrorKind::ProtocolError,
    );
    assert_eq!(
        message,
        "Snappy compression is not supported in protocol V5"
    );
    server.stop().await;
}

#[tokio::test]
async fn oversized_frame_gets_a_protocol_error_and_the_connection_closes() {
    let server = TestServer::start_with(
        Arc::new(NotReadyHandler),
        limits(16, 64, 16),
        Authenticator::AllowAll,
    )
    .await;
    let mut client = server.connect(ProtocolVersion::V4).await;
    // Only the header: the body is refused before it is read.
    client.send_raw(&raw_header(4, 21, 0x07, 1 << 30)).await;
    let reply = client.recv().await;
    assert_eq!(reply.stream, 21);
    let message = expect_error(&reply.response, ErrorKind::ProtocolError);
    assert!(message.starts_with("Request is too big"), "{message}");
    client.expect_closed().await;

    // Inside v5 segments too.
    let mut client = Client::ready(server.address, ProtocolVersion::V5).await;
    let text = "x".repeat(300 * 1024);
    let response = client.request(22, query(&text)).await;
    expect_error(&response, ErrorKind::ProtocolError);
    client.expect_closed().await;

    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    expect_error(
        &client.request(2, query("SELECT 1")).await,
        ErrorKind::ServerError,
    );
    server.stop().await;
}

#[tokio::test]
async fn requests_beyond_the_per_connection_limit_are_overloaded() {
    let (handler, gate) = ScriptedHandler::new();
    let server = TestServer::start_with(handler, limits(2, 100, 16), Authenticator::AllowAll).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    client.send(1, query("block")).await;
    client.send(2, query("block")).await;
    client.send(3, query("block")).await;
    let reply = client.recv().await;
    assert_eq!(reply.stream, 3, "the third request is answered at once");
    let message = expect_error(&reply.response, ErrorKind::Overloaded);
    assert!(
        message.contains("native_transport_max_requests_per_connection"),
        "{message}"
    );

    // Other connections are not affected by this connection's limit.
    let mut other = Client::ready(server.address, ProtocolVersion::V4).await;
    assert_eq!(
        expect_text(&other.request(1, query("hello")).await),
        "hello"
    );

    gate.add_permits(2);
    let mut streams = vec![client.recv().await.stream, client.recv().await.stream];
    streams.sort();
    assert_eq!(streams, vec![1, 2]);
    // The slots are free again.
    assert_eq!(
        expect_text(&client.request(4, query("again")).await),
        "again"
    );
    server.stop().await;
}

#[tokio::test]
async fn requests_beyond_the_total_limit_are_overloaded() {
    let (handler, gate) = ScriptedHandler::new();
    let server = TestServer::start_with(handler, limits(10, 2, 16), Authenticator::AllowAll).await;
    let mut first = Client::ready(server.address, ProtocolVersion::V4).await;
    let mut second = Client::ready(server.address, ProtocolVersion::V5).await;
    first.send(1, query("block")).await;
    first.send(2, query("block")).await;
    // Make sure both are in flight before the second connection asks.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let response = second.request(1, query("hello")).await;
    let message = expect_error(&response, ErrorKind::Overloaded);
    assert!(
        message.contains("native_transport_max_concurrent_requests"),
        "{message}"
    );
    gate.add_permits(2);
    first.recv().await;
    first.recv().await;
    assert_eq!(
        expect_text(&second.request(2, query("hello")).await),
        "hello"
    );
    server.stop().await;
}

#[tokio::test]
async fn responses_come_back_in_completion_order() {
    let (handler, _gate) = ScriptedHandler::new();
    let server = TestServer::start(handler).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    client.send(1, query("sleep 300")).await;
    client.send(2, query("sleep 0")).await;
    let first = client.recv().await;
    let second = client.recv().await;
    assert_eq!((first.stream, second.stream), (2, 1));
    assert_eq!(expect_text(&second.response), "sleep 300");
    server.stop().await;
}

#[tokio::test]
async fn handler_panic_is_a_server_error_on_its_stream() {
    let (handler, _gate) = ScriptedHandler::new();
    let server = TestServer::start(handler).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    expect_error(
        &client.request(5, query("panic")).await,
        ErrorKind::ServerError,
    );
    assert_eq!(
        expect_text(&client.request(6, query("still here")).await),
        "still here"
    );
    server.stop().await;
}

/// What the server's metrics say about one kind of request.
fn counted(server: &TestServer, kind: RequestKind) -> RequestSnapshot {
    let snapshot = server.metrics.snapshot();
    let found = snapshot.requests.iter().find(|r| r.kind == kind);
    *found.expect("every kind is counted")
}

#[tokio::test]
async fn requests_errors_and_connections_are_counted() {
    let (handler, gate) = ScriptedHandler::new();
    let server = TestServer::start_with(handler, limits(1, 100, 16), Authenticator::AllowAll).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V5).await;
    assert_eq!(server.metrics.snapshot().connections, 1);
    assert_eq!(counted(&server, RequestKind::Other).started, 1, "STARTUP");

    client.send(1, query("block")).await;
    client
        .send(2, query("refused: one request per connection"))
        .await;
    expect_error(&client.recv().await.response, ErrorKind::Overloaded);
    assert_eq!(server.metrics.snapshot().requests_in_flight, 1);
    gate.add_permits(1);
    assert_eq!(client.recv().await.stream, 1);
    expect_error(
        &client.request(3, query("panic")).await,
        ErrorKind::ServerError,
    );
    let prepare = Prepare {
        query: "x".to_string(),
        keyspace: None,
    };
    client.request(4, Request::Prepare(prepare)).await;
    client.request(5, Request::Options).await;
    // STARTUP again is out of place: a protocol error under `other`.
    client.request(6, Request::Startup(StringMap::new())).await;

    let query_counts = counted(&server, RequestKind::Query);
    assert_eq!(query_counts.started, 3);
    assert_eq!(query_counts.failed, 2, "OVERLOADED and the handler's panic");
    assert_eq!(query_counts.latency.count(), 3);
    let prepare_counts = counted(&server, RequestKind::Prepare);
    assert_eq!((prepare_counts.started, prepare_counts.failed), (1, 0));
    let other = counted(&server, RequestKind::Other);
    assert_eq!((other.started, other.failed), (3, 1));
    assert_eq!(counted(&server, RequestKind::Execute).started, 0);
    assert_eq!(server.metrics.snapshot().requests_in_flight, 0);

    drop(client);
    for _ in 0..100 {
        if server.metrics.snapshot().connections == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        server.metrics.snapshot().connections,
        0,
        "closed connections are not counted"
    );
    server.stop().await;
}

#[tokio::test]
async fn max_connections_is_enforced() {
    let server = TestServer::start_with(
        Arc::new(NotReadyHandler),
        limits(16, 64, 1),
        Authenticator::AllowAll,
    )
    .await;
    let first = Client::ready(server.address, ProtocolVersion::V4).await;
    let mut second = server.connect(ProtocolVersion::V4).await;
    second.send(3, Request::Options).await;
    let reply = second.recv().await;
    assert_eq!(reply.stream, 3);
    let message = expect_error(&reply.response, ErrorKind::Overloaded);
    assert!(message.starts_with("Too many connections"), "{message}");
    second.expect_closed().await;

    drop(first);
    // The slot is freed once the server notices the close.
    let mut served = false;
    for _ in 0..50 {
        let mut client = server.connect(ProtocolVersion::V4).await;
        client.send(1, Request::Options).await;
        if matches!(client.recv().await.response, Response::Supported(_)) {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        served,
        "a new connection is served after the first one closed"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_connection_not_ready_gives_its_slot_to_a_new_one() {
    let server = TestServer::start_with(
        Arc::new(NotReadyHandler),
        limits(16, 64, 2),
        Authenticator::AllowAll,
    )
    .await;
    let _ready = Client::ready(server.address, ProtocolVersion::V4).await;
    // Holds the last slot without ever sending STARTUP.
    let mut idle = server.connect(ProtocolVersion::V4).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut newcomer = server.connect(ProtocolVersion::V4).await;
    assert_eq!(newcomer.startup(None).await, Response::Ready);
    idle.expect_closed().await;
    // The ready connections are not evicted: the next one is refused.
    let mut refused = server.connect(ProtocolVersion::V4).await;
    refused.send(3, Request::Options).await;
    let message = expect_error(&refused.recv().await.response, ErrorKind::Overloaded);
    assert!(message.starts_with("Too many connections"), "{message}");
    let response = newcomer.request(2, Request::Options).await;
    assert!(matches!(response, Response::Supported(_)), "{response:?}");
    server.stop().await;
}

#[tokio::test]
async fn v4_body_compression_lz4_and_snappy() {
    let (handler, _gate) = ScriptedHandler::new();
    let server = TestServer::start(handler).await;
    for name in ["lz4", "snappy"] {
        let mut client = server.connect(ProtocolVersion::V4).await;
        // STARTUP and READY are never compressed.
        assert_eq!(client.startup(Some(name)).await, Response::Ready);
        let text = "compress me ".repeat(100);
        client.send(2, query(&text)).await;
        let frame = client.recv_frame().await;
        assert!(
            frame.header.flags.compression,
            "{name}: responses are compressed"
        );
        assert!(frame.body.len() < text.len(), "{name}: and smaller");
        let reply =
            decode_response(&frame, client.body_compression, CLIENT_LIMITS).expect("decompresses");
        assert_eq!(expect_text(&reply.response), text);
    }
    server.stop().await;
}

#[tokio::test]
async fn v5_with_lz4_segments() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;
    let mut client = server.connect(ProtocolVersion::V5).await;
    assert_eq!(client.startup(Some("lz4")).await, Response::Ready);
    let response = client
        .request(3, query(&"SELECT * FROM t; ".repeat(50)))
        .await;
    assert_eq!(
        expect_error(&response, ErrorKind::ServerError),
        NOT_READY_MESSAGE
    );
    server.stop().await;
}

#[tokio::test]
async fn password_authentication() {
    let (handler, _gate) = ScriptedHandler::new();
    let server =
        TestServer::start_with(handler, TransportLimits::default(), Authenticator::Password).await;
    for version in [ProtocolVersion::V4, ProtocolVersion::V5] {
        let mut client = server.connect(version).await;
        assert_eq!(
            client.startup(None).await,
            Response::Authenticate("org.apache.cassandra.auth.PasswordAuthenticator".into())
        );
        let response = client.request(2, query("whoami")).await;
        assert_eq!(
            expect_error(&response, ErrorKind::ProtocolError),
            "Unexpected message QUERY, expecting SASL_RESPONSE"
        );
        let wrong = Bytes::from_static(b"\0cassandra\0wrong");
        let response = client.request(3, Request::AuthResponse(Some(wrong))).await;
        assert_eq!(
            expect_error(&response, ErrorKind::BadCredentials),
            "Provided username cassandra and/or password are incorrect"
        );
        let malformed = Bytes::from_static(b"cassandra");
        let response = client
            .request(4, Request::AuthResponse(Some(malformed)))
            .await;
        expect_error(&response, ErrorKind::BadCredentials);
        let right = Bytes::from_static(b"\0cassandra\0cassandra");
        let response = client.request(5, Request::AuthResponse(Some(right))).await;
        assert_eq!(response, Response::AuthSuccess(None));
        let response = client.request(6, query("whoami")).await;
        assert_eq!(expect_text(&response), "user=cassandra");
    }
    server.stop().await;
}

#[tokio::test]
async fn failed_logins_and_slow_logins_close_the_connection() {
    let (handler, _gate) = ScriptedHandler::new();
    let limits = TransportLimits {
        login_timeout: Duration::from_millis(300),
        ..TransportLimits::default()
    };
    let server = TestServer::start_with(handler, limits, Authenticator::Password).await;
    let mut client = server.connect(ProtocolVersion::V5).await;
    assert!(matches!(
        client.startup(None).await,
        Response::Authenticate(_)
    ));
    let wrong = Bytes::from_static(b"\0cassandra\0wrong");
    for stream in 1..=rocksandra_server::transport::MAX_FAILED_LOGINS as i16 {
        let response = client
            .request(stream, Request::AuthResponse(Some(wrong.clone())))
            .await;
        expect_error(&response, ErrorKind::BadCredentials);
    }
    // Answered each time, then closed after the last.
    client.expect_closed().await;

    // One that logs in in time stays open past the deadline.
    let mut prompt = server.connect(ProtocolVersion::V4).await;
    prompt.startup(None).await;
    let right = Bytes::from_static(b"\0cassandra\0cassandra");
    let response = prompt.request(2, Request::AuthResponse(Some(right))).await;
    assert_eq!(response, Response::AuthSuccess(None));
    // One that starts but never logs in is closed at the deadline.
    let mut slow = server.connect(ProtocolVersion::V4).await;
    slow.startup(None).await;
    let opened = Instant::now();
    slow.expect_closed().await;
    assert!(
        opened.elapsed() < Duration::from_secs(3),
        "{:?}",
        opened.elapsed()
    );
    let response = prompt.request(3, query("whoami")).await;
    assert_eq!(expect_text(&response), "user=cassandra");
    server.stop().await;
}

#[tokio::test]
async fn registered_connections_get_schema_change_events_on_stream_minus_one() {
    let server = TestServer::start(Arc::new(NotReadyHandler)).await;
    let mut listener = Client::ready(server.address, ProtocolVersion::V5).await;
    let response = listener
        .request(1, Request::Register(vec![EventType::SchemaChange]))
        .await;
    assert_eq!(response, Response::Ready);
    let mut bystander = Client::ready(server.address, ProtocolVersion::V4).await;

    let change = SchemaChange {
        change_type: SchemaChangeType::Created,
        target: SchemaChangeTarget::Keyspace {
            keyspace: "ks".into(),
        },
    };
    server.events.send(Event::SchemaChange(change.clone()));
    let event = listener.recv().await;
    assert_eq!(event.stream, -1);
    assert_eq!(event.response, Response::Event(Event::SchemaChange(change)));

    // The unregistered connection got nothing: its next answer is its own.
    let response = bystander.request(4, Request::Options).await;
    assert!(matches!(response, Response::Supported(_)));
    server.stop().await;
}

#[tokio::test]
async fn shutdown_lets_in_flight_requests_finish() {
    let (handler, gate) = ScriptedHandler::new();
    let server = TestServer::start(handler).await;
    let address = server.address;
    let mut client = Client::ready(address, ProtocolVersion::V4).await;
    client.send(1, query("block")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopping = tokio::spawn(server.stop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !stopping.is_finished(),
        "shutdown waits for the blocked request"
    );
    // New connections are refused once shutdown has begun.
    assert!(TcpStream::connect(address).await.is_err());
    gate.add_permits(1);
    let reply = client.recv().await;
    assert_eq!(
        (reply.stream, expect_text(&reply.response)),
        (1, "block".to_string())
    );
    client.expect_closed().await;
    tokio::time::timeout(WAIT, stopping)
        .await
        .expect("shutdown completes")
        .expect("no panic");
}

// ---------------------------------------------------------------- client limits

#[tokio::test]
async fn idle_connections_are_closed_and_active_ones_kept() {
    let limits = TransportLimits {
        idle_timeout: Some(Duration::from_millis(300)),
        ..TransportLimits::default()
    };
    let server =
        TestServer::start_with(Arc::new(NotReadyHandler), limits, Authenticator::AllowAll).await;
    let mut idle = Client::ready(server.address, ProtocolVersion::V4).await;
    let mut active = Client::ready(server.address, ProtocolVersion::V5).await;
    let started = Instant::now();
    // The active client asks something every 100 ms for well past the timeout.
    for stream in 2..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let response = active.request(stream, Request::Options).await;
        assert!(matches!(response, Response::Supported(_)), "{response:?}");
    }
    // The idle one was closed meanwhile, without an error frame.
    idle.expect_closed().await;
    assert!(idle.buf.is_empty(), "closed without a word: {:?}", idle.buf);
    assert!(started.elapsed() >= Duration::from_millis(300));
    // A fresh connection that says nothing at all is closed too.
    let mut silent = server.connect(ProtocolVersion::V4).await;
    let opened = Instant::now();
    silent.expect_closed().await;
    let waited = opened.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
        "closed after {waited:?}"
    );
    server.stop().await;
}

/// A client connection from a chosen loopback address.
async fn connect_from(source: &str, server: SocketAddr, version: ProtocolVersion) -> Client {
    let socket = TcpSocket::new_v4().expect("socket");
    let source: SocketAddr = format!("{source}:0").parse().expect("source address");
    socket.bind(source).expect("binds the source address");
    let stream = socket.connect(server).await.expect("connects");
    Client::over(Box::new(stream), version)
}

#[tokio::test]
async fn connections_beyond_the_per_ip_limit_are_refused() {
    let limits = TransportLimits {
        max_connections_per_ip: Some(2),
        ..TransportLimits::default()
    };
    let server =
        TestServer::start_with(Arc::new(NotReadyHandler), limits, Authenticator::AllowAll).await;
    let mut first = connect_from("127.0.0.1", server.address, ProtocolVersion::V4).await;
    assert_eq!(first.startup(None).await, Response::Ready);
    let mut second = connect_from("127.0.0.1", server.address, ProtocolVersion::V5).await;
    assert_eq!(second.startup(None).await, Response::Ready);

    let mut third = connect_from("127.0.0.1", server.address, ProtocolVersion::V4).await;
    third.send(7, Request::Options).await;
    let reply = third.recv().await;
    assert_eq!(reply.stream, 7);
    let message = expect_error(&reply.response, ErrorKind::Overloaded);
    assert!(
        message.starts_with("Too many connections from 127.0.0.1")
            && message.contains("native_transport_max_concurrent_connections_per_ip"),
        "{message}"
    );
    third.expect_closed().await;

    // Another address has its own count.
    let mut elsewhere = connect_from("127.0.0.2", server.address, ProtocolVersion::V4).await;
    assert_eq!(elsewhere.startup(None).await, Response::Ready);
    let response = elsewhere.request(2, Request::Options).await;
    assert!(matches!(response, Response::Supported(_)), "{response:?}");
    // The first two are still served.
    assert!(matches!(
        first.request(2, Request::Options).await,
        Response::Supported(_)
    ));

    drop(second);
    let mut served = false;
    for _ in 0..50 {
        let mut client = connect_from("127.0.0.1", server.address, ProtocolVersion::V4).await;
        client.send(1, Request::Options).await;
        if matches!(client.recv().await.response, Response::Supported(_)) {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "the address gets a slot back when one closes");
    server.stop().await;
}

fn byte_limits(per_ip_bytes: u64) -> TransportLimits {
    TransportLimits {
        max_request_bytes_in_flight_per_ip: per_ip_bytes,
        max_request_bytes_in_flight: 1024 * 1024,
        ..TransportLimits::default()
    }
}

/// A QUERY whose body is over `bytes` long, sleeping `ms` in the handler.
fn large_query(ms: u64, bytes: usize) -> Request {
    query(&format!("sleep {ms} {}", "x".repeat(bytes)))
}

#[tokio::test]
async fn throw_on_overload_answers_overloaded_for_requests_over_the_byte_limit() {
    let (handler, gate) = ScriptedHandler::new();
    let server = TestServer::start_with(handler, byte_limits(1000), Authenticator::AllowAll).await;
    for version in [ProtocolVersion::V4, ProtocolVersion::V5] {
        let mut client = server.connect(version).await;
        let ready = client
            .startup_with(None, &[("THROW_ON_OVERLOAD", "1")])
            .await;
        assert_eq!(ready, Response::Ready);
        // Larger than the whole limit.
        let response = client.request(2, large_query(0, 2000)).await;
        let message = expect_error(&response, ErrorKind::Overloaded);
        assert!(
            message.starts_with("Request breached limit on bytes in flight. (Endpoint: 0/1000")
                && message.contains("Global: 0/1048576 bytes.)"),
            "{message}"
        );
        // Within it while another request holds some of it: refused.
        client
            .send(3, query(&format!("block {}", "x".repeat(600))))
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let response = client.request(4, large_query(0, 500)).await;
        let message = expect_error(&response, ErrorKind::Overloaded);
        assert!(message.contains("Endpoint: 6"), "{message}");
        // Small requests still run, and the blocked one finishes.
        assert_eq!(
            expect_text(&client.request(5, query("small")).await),
            "small"
        );
        gate.add_permits(1);
        let reply = client.recv().await;
        assert_eq!(reply.stream, 3);
        let response = client.request(6, large_query(0, 500)).await;
        assert!(matches!(response, Response::Result(_)), "{response:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn without_throw_on_overload_large_requests_wait_and_complete() {
    let (handler, _gate) = ScriptedHandler::new();
    let server = TestServer::start_with(handler, byte_limits(1000), Authenticator::AllowAll).await;
    for version in [ProtocolVersion::V4, ProtocolVersion::V5] {
        let mut client = Client::ready(server.address, version).await;
        // Alone and larger than the whole limit: it still runs.
        let response = client.request(2, large_query(0, 3000)).await;
        assert!(matches!(response, Response::Result(_)), "{response:?}");
        // Five of 100 ms, each over half the limit: at most two run at once.
        let started = Instant::now();
        for stream in 10..15 {
            client.send(stream, large_query(100, 600)).await;
        }
        let mut streams = Vec::new();
        for _ in 10..15 {
            let reply = client.recv().await;
            assert!(
                matches!(reply.response, Response::Result(_)),
                "{:?}",
                reply.response
            );
            streams.push(reply.stream);
        }
        streams.sort();
        assert_eq!(streams, vec![10, 11, 12, 13, 14]);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(240),
            "reads paused while over the limit: took {took:?}"
        );
        assert_eq!(
            expect_text(&client.request(3, query("after")).await),
            "after"
        );
    }
    server.stop().await;
}

/// Runs every EXECUTE inline as a write of one row to the table its id
/// names (one byte), queued in the connection's `WriteGroup`. Its commit
/// first drops table 2, as a DROP TABLE racing the queued writes would.
/// Table 8 is a plain read. While `held` is set, a commit waits until it
/// is cleared, as a write does behind a stalled disk.
struct GroupedWrites {
    engine: rocksandra_storage::KvEngine<rocksandra_storage::memory::MemoryStore>,
    commits: std::sync::atomic::AtomicUsize,
    executed: std::sync::atomic::AtomicUsize,
    held: std::sync::Mutex<bool>,
    released: std::sync::Condvar,
}

impl GroupedWrites {
    const NOW: rocksandra_data::LocalTime = rocksandra_data::LocalTime(1_700_000_000);

    fn new() -> GroupedWrites {
        use rocksandra_storage::{Engine, TableId, TableOptions, TableSpec};
        let engine = rocksandra_storage::KvEngine::new(
            rocksandra_storage::memory::MemoryStore::new(Arc::new(|| Self::NOW)),
        );
        for id in [1, 2] {
            let spec = TableSpec {
                id: TableId(id),
                clustering: Vec::new(),
                options: TableOptions::default(),
                dropped: Vec::new(),
            };
            engine.create_table(spec).expect("create");
        }
        GroupedWrites {
            engine,
            commits: Default::default(),
            executed: Default::default(),
            held: std::sync::Mutex::new(false),
            released: std::sync::Condvar::new(),
        }
    }

    fn hold_commits(&self, held: bool) {
        *self.held.lock().expect("gate") = held;
        self.released.notify_all();
    }

    fn wait_while_held(&self) {
        let held = self.held.lock().expect("gate");
        let _open = self.released.wait_while(held, |held| *held).expect("gate");
    }

    fn row(table: u64, stream: i16) -> rocksandra_storage::Mutation {
        use rocksandra_storage::cell::{Cell, ColumnId};
        use rocksandra_storage::{Mutation, PartitionKey, RowUpdate, TableId};
        let mut mutation = Mutation::new(
            TableId(table),
            PartitionKey::new(stream.to_be_bytes().to_vec()),
        );
        let cells = vec![Cell::live(ColumnId(1), 1, b"v".to_vec())];
        let update = RowUpdate {
            cells,
            ..Default::default()
        };
        mutation.rows.push((Vec::new(), update));
        mutation
    }

    fn stored(&self, table: u64, stream: i16) -> bool {
        use rocksandra_storage::{Engine, PartitionKey, PartitionRead, Slice, TableId};
        let read = PartitionRead {
            table: TableId(table),
            partition: PartitionKey::new(stream.to_be_bytes().to_vec()),
            slices: vec![Slice::all()],
            reversed: false,
            include_static: false,
            row_limit: 0,
        };
        let partition = self.engine.read_partition(&read, Self::NOW).expect("read");
        !partition.rows.is_empty()
    }
}

impl RequestHandler for GroupedWrites {
    fn query<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Query,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async { text_result("query") })
    }
    fn prepare<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Prepare,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async { text_result("prepare") })
    }
    fn execute<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Execute,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async { text_result("not inline") })
    }
    fn batch<'a>(
        &'a self,
        _: &'a Session,
        _: &'a RequestContext,
        _: Batch,
    ) -> HandlerFuture<'a, Reply> {
        Box::pin(async { text_result("batch") })
    }
    fn authenticate<'a>(
        &'a self,
        _: &'a Session,
        _: Credentials,
    ) -> HandlerFuture<'a, Result<(), ErrorResponse>> {
        Box::pin(async { Ok(()) })
    }
    fn execute_inline(
        &self,
        _: &Session,
        context: &RequestContext,
        execute: &Execute,
        writes: &mut rocksandra_storage::WriteGroup,
    ) -> Option<Reply> {
        use rocksandra_storage::Engine;
        self.executed
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let table = u64::from(*execute.id.first()?);
        if table == 9 {
            // Read-before-write work: table 2 is dropped first, so its
            // read's writing of the group fails for the queued write to
            // table 2.
            let _ = self.engine.drop_table(rocksandra_storage::TableId(2));
            writes.run(i64::from(context.stream), || {
                let _direct = rocksandra_storage::DirectWrites::hold();
                self.stored(1, 1)
            });
            return Some(Reply::from(Response::Result(ResultBody::Void)));
        }
        if table == 8 {
            writes.run(i64::from(context.stream), || self.stored(1, 1));
            return Some(Reply::from(Response::Result(ResultBody::Void)));
        }
        let write = Self::row(table, context.stream);
        let written = writes.run(i64::from(context.stream), || {
            self.engine.write(&[write], Self::NOW)
        });
        Some(match written {
            Ok(()) => Reply::from(Response::Result(ResultBody::Void)),
            Err(e) => Reply::error(ErrorKind::ServerError, e.to_string()),
        })
    }
    fn commit_inline(
        &self,
        writes: &mut rocksandra_storage::WriteGroup,
    ) -> Vec<(i16, ErrorResponse)> {
        use rocksandra_storage::{Engine, TableId};
        self.wait_while_held();
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = self.engine.drop_table(TableId(2));
        writes.run(0, || self.engine.commit_deferred());
        let failures = writes.take_failures().into_iter();
        failures
            .map(|(stream, e)| {
                let stream = i16::try_from(stream).expect("a stream id");
                (
                    stream,
                    ErrorResponse::new(ErrorKind::ServerError, e.to_string()),
                )
            })
            .collect()
    }
}

/// Sends one EXECUTE per (stream, table) in one socket write, so the server
/// reads them in one turn; returns each stream with whether it succeeded,
/// sorted by stream.
async fn one_turn(client: &mut Client, requests: &[(i16, u8)]) -> Vec<(i16, bool)> {
    let mut bytes = BytesMut::new();
    for &(stream, table) in requests {
        let execute = Request::Execute(Execute {
            id: Bytes::from(vec![table]),
            result_metadata_id: None,
            params: common::params(Vec::new()),
        });
        bytes.extend_from_slice(&client.frame(stream, execute).to_bytes());
    }
    client.send_raw(&bytes).await;
    let mut answers = Vec::new();
    for _ in requests {
        let envelope = client.recv().await;
        let ok = matches!(envelope.response, Response::Result(ResultBody::Void));
        answers.push((envelope.stream, ok));
    }
    answers.sort();
    answers
}

#[tokio::test]
async fn inline_writes_are_written_before_their_answers_and_fail_alone() {
    let handler = Arc::new(GroupedWrites::new());
    let server = TestServer::start(handler.clone()).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    let answers = one_turn(&mut client, &[(1, 1), (2, 2), (3, 1)]).await;
    assert_eq!(answers, vec![(1, true), (2, false), (3, true)]);
    assert!(
        handler.stored(1, 1) && handler.stored(1, 3),
        "acknowledged writes are stored"
    );
    let commits = handler.commits.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(commits, 1, "one commit for the turn");
    server.stop().await;
}

/// A client that pipelines a thousand short requests in one socket write
/// does not hold its core until they have all run: the read loop yields
/// between groups of inline requests, so the first answers are written
/// (and timers and other connections on the core get their turn) while
/// the rest wait. Client and server share this test's one thread, so the
/// client sees its first answer only once the server has yielded.
#[tokio::test]
async fn a_long_pipeline_of_inline_requests_yields_the_core_between_groups() {
    const REQUESTS: usize = 1000;
    let handler = Arc::new(GroupedWrites::new());
    let server = TestServer::start(handler.clone()).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    let mut bytes = BytesMut::new();
    for stream in 1..=REQUESTS {
        let execute = Request::Execute(Execute {
            id: Bytes::from(vec![1]),
            result_metadata_id: None,
            params: common::params(Vec::new()),
        });
        let stream = i16::try_from(stream).expect("a stream id");
        bytes.extend_from_slice(&client.frame(stream, execute).to_bytes());
    }
    assert!(
        bytes.len() < 64 * 1024,
        "one read of the server takes them all"
    );
    client.send_raw(&bytes).await;
    let first = client.recv().await;
    let executed = handler.executed.load(std::sync::atomic::Ordering::SeqCst);
    // Which task the runtime picks after each yield varies: the client may
    // wait out a few groups, never all of them.
    assert!(
        executed < REQUESTS,
        "all {executed} requests ran before the first answer was written"
    );
    let mut answered = vec![first];
    for _ in 1..REQUESTS {
        answered.push(client.recv().await);
    }
    let ok = answered
        .iter()
        .filter(|e| matches!(e.response, Response::Result(ResultBody::Void)))
        .count();
    assert_eq!(ok, REQUESTS, "every request is answered");
    server.stop().await;
}

#[tokio::test]
async fn a_write_that_fails_when_a_later_read_writes_the_group_gets_its_error() {
    let handler = Arc::new(GroupedWrites::new());
    let server = TestServer::start(handler.clone()).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    // Stream 2's write is queued; stream 4's read writes the group after
    // table 2 is gone, so the failure is known before the commit.
    let answers = one_turn(&mut client, &[(1, 1), (2, 2), (4, 9)]).await;
    assert_eq!(answers, vec![(1, true), (2, false), (4, true)]);
    assert!(handler.stored(1, 1), "the acknowledged write is stored");
    server.stop().await;
}

/// A write held up in storage (a stalled disk) holds up neither the reads
/// of its own connection nor those of others on its core: its group is
/// written off the serving thread, and only its own answer waits.
#[tokio::test]
async fn a_stalled_write_holds_up_no_read() {
    let handler = Arc::new(GroupedWrites::new());
    let server = TestServer::start(handler.clone()).await;
    let mut client = Client::ready(server.address, ProtocolVersion::V4).await;
    handler.hold_commits(true);
    let execute = |table: u8| {
        Request::Execute(Execute {
            id: Bytes::from(vec![table]),
            result_metadata_id: None,
            params: common::params(Vec::new()),
        })
    };
    let write = client.frame(1, execute(1)).to_bytes();
    client.send_raw(&write).await;
    for stream in 2..5 {
        let read = client.frame(stream, execute(8)).to_bytes();
        client.send_raw(&read).await;
        let answer = tokio::time::timeout(Duration::from_secs(10), client.recv())
            .await
            .expect("a read is answered while a write is held up");
        assert_eq!(answer.stream, stream);
        assert!(matches!(
            answer.response,
            Response::Result(ResultBody::Void)
        ));
    }
    assert!(!handler.stored(1, 1), "the held write is not written yet");
    handler.hold_commits(false);
    let answer = tokio::time::timeout(Duration::from_secs(10), client.recv())
        .await
        .expect("the write is answered once written");
    assert_eq!(answer.stream, 1);
    assert!(matches!(
        answer.response,
        Response::Result(ResultBody::Void)
    ));
    assert!(handler.stored(1, 1), "the acknowledged write is stored");
    server.stop().await;
}
