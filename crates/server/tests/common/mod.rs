//! What the end-to-end tests share: a raw CQL client built on the wire
//! crate's client-side encoders (frames before STARTUP's answer, then v5
//! segments), and the longest wait for anything expected.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rocksandra_wire::{
    decode_response, encode_request, BodyCompression, BoundValues, Consistency, Frame,
    FrameDecoder, Limits, ProtocolVersion, Query, QueryParameters, Request, RequestEnvelope,
    Response, ResponseEnvelope, ResultBody, SegmentCodec, SegmentCompression,
    SegmentedFrameDecoder, StringMap, Value,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest wait for any expected byte; tests normally take milliseconds.
pub const WAIT: Duration = Duration::from_secs(5);

/// What a client speaks over: TCP, or TLS over TCP.
pub trait ClientSocket: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> ClientSocket for S {}

/// A raw CQL client: frames before STARTUP's answer, then (v5) segments.
pub struct Client {
    pub socket: Box<dyn ClientSocket>,
    pub buf: BytesMut,
    version: ProtocolVersion,
    pub body_compression: Option<BodyCompression>,
    segments: Option<(SegmentCodec, SegmentedFrameDecoder)>,
}

pub const CLIENT_LIMITS: Limits = Limits {
    max_frame_bytes: 64 * 1024 * 1024,
};

impl Client {
    pub async fn connect(address: SocketAddr, version: ProtocolVersion) -> Client {
        let socket = TcpStream::connect(address).await.expect("connects");
        Client::over(Box::new(socket), version)
    }

    /// A client over an already connected socket (a TLS stream, say).
    pub fn over(socket: Box<dyn ClientSocket>, version: ProtocolVersion) -> Client {
        Client {
            socket,
            buf: BytesMut::new(),
            version,
            body_compression: None,
            segments: None,
        }
    }

    pub fn frame(&self, stream: i16, request: Request) -> Frame {
        let envelope = RequestEnvelope {
            version: self.version,
            stream,
            tracing: false,
            custom_payload: None,
            request,
        };
        encode_request(&envelope, self.body_compression).expect("encodes")
    }

    pub async fn send(&mut self, stream: i16, request: Request) {
        let frame = self.frame(stream, request);
        let bytes = match &self.segments {
            Some((codec, _)) => {
                let mut out = BytesMut::new();
                codec.encode_frames(&[frame], &mut out).expect("segments");
                out.freeze()
            }
            None => frame.to_bytes(),
        };
        self.send_raw(&bytes).await;
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.socket.write_all(bytes).await.expect("writes");
        self.socket.flush().await.expect("flushes");
    }

    pub async fn fill(&mut self) -> usize {
        self.fill_within(WAIT).await
    }

    async fn fill_within(&mut self, wait: Duration) -> usize {
        let read = tokio::time::timeout(wait, self.socket.read_buf(&mut self.buf))
            .await
            .expect("server answers in time");
        read.unwrap_or(0)
    }

    pub async fn recv_frame(&mut self) -> Frame {
        self.recv_frame_within(WAIT).await
    }

    /// The next frame, waiting at most `wait` for each read.
    pub async fn recv_frame_within(&mut self, wait: Duration) -> Frame {
        loop {
            let decoded = match &mut self.segments {
                Some((_, decoder)) => decoder.decode(&mut self.buf),
                None => FrameDecoder::new(CLIENT_LIMITS).decode(&mut self.buf),
            };
            if let Some(frame) = decoded.expect("server sends valid frames") {
                return frame;
            }
            assert!(
                self.fill_within(wait).await > 0,
                "connection closed while waiting for a frame"
            );
        }
    }

    pub async fn recv(&mut self) -> ResponseEnvelope {
        self.recv_within(WAIT).await
    }

    /// The next response, waiting at most `wait` for each read.
    pub async fn recv_within(&mut self, wait: Duration) -> ResponseEnvelope {
        let frame = self.recv_frame_within(wait).await;
        decode_response(&frame, self.body_compression, CLIENT_LIMITS).expect("decodes")
    }

    pub async fn request(&mut self, stream: i16, request: Request) -> Response {
        self.send(stream, request).await;
        let reply = self.recv().await;
        assert_eq!(reply.stream, stream);
        reply.response
    }

    /// STARTUP, then switch to the negotiated framing the way drivers do.
    pub async fn startup(&mut self, compression: Option<&str>) -> Response {
        self.startup_with(compression, &[]).await
    }

    /// STARTUP with more options (`THROW_ON_OVERLOAD`, say).
    pub async fn startup_with(
        &mut self,
        compression: Option<&str>,
        extra: &[(&str, &str)],
    ) -> Response {
        let mut options = StringMap::new();
        options.insert("CQL_VERSION".into(), "3.0.0".into());
        if let Some(name) = compression {
            options.insert("COMPRESSION".into(), name.into());
        }
        for (key, value) in extra {
            options.insert(key.to_string(), value.to_string());
        }
        let response = self.request(1, Request::Startup(options)).await;
        if matches!(response, Response::Ready | Response::Authenticate(_)) {
            let negotiated = compression.and_then(BodyCompression::from_startup_name);
            if self.version == ProtocolVersion::V5 {
                let segment_compression = match negotiated {
                    Some(_) => SegmentCompression::Lz4,
                    None => SegmentCompression::None,
                };
                self.segments = Some((
                    SegmentCodec::new(segment_compression),
                    SegmentedFrameDecoder::new(segment_compression, CLIENT_LIMITS),
                ));
            } else {
                self.body_compression = negotiated;
            }
        }
        response
    }

    pub async fn ready(address: SocketAddr, version: ProtocolVersion) -> Client {
        let mut client = Client::connect(address, version).await;
        assert_eq!(client.startup(None).await, Response::Ready);
        client
    }

    /// Reads until the server closes, returning whatever arrived.
    pub async fn expect_closed(&mut self) {
        loop {
            let read = tokio::time::timeout(WAIT, self.socket.read_buf(&mut self.buf))
                .await
                .expect("server closes in time");
            match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }
}

/// A whole node (`Service`, RocksDB in a temporary directory) on free
/// ports, running until `stop`.
pub struct Node {
    pub native: SocketAddr,
    /// The metrics endpoint, when the configuration turned it on.
    pub metrics: Option<SocketAddr>,
    /// nodetool's port, when the configuration turned it on.
    pub admin: Option<SocketAddr>,
    stop: tokio::sync::oneshot::Sender<()>,
    running: tokio::task::JoinHandle<Result<(), rocksandra_server::ServiceError>>,
    _data: tempfile::TempDir,
}

impl Node {
    /// Starts a node with `config` (its data directory and CQL port are
    /// replaced by a temporary directory and a free port).
    pub async fn start(config: rocksandra_server::config::Config) -> Node {
        let data = tempfile::tempdir().expect("tempdir");
        let config = rocksandra_server::config::Config {
            data_file_directories: vec![data.path().to_path_buf()],
            native_transport_port: 0,
            // Tests run side by side: free ports, never 7199 or 9180.
            admin_port: config.admin_port.map(|_| 0),
            prometheus_port: config.prometheus_port.map(|_| 0),
            ..config
        };
        let service = rocksandra_server::Service::start(&config)
            .await
            .expect("starts");
        let native = service.native_address();
        let metrics = service.metrics_address();
        let admin = service.admin_address();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(service.run(async {
            let _ = stopped.await;
        }));
        Node {
            native,
            metrics,
            admin,
            stop,
            running,
            _data: data,
        }
    }

    /// Stops the node and waits for its clean shutdown.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let result = tokio::time::timeout(WAIT * 3, self.running)
            .await
            .expect("stops in time");
        result.expect("joins").expect("runs");
    }
}

/// An int as a bound value.
pub fn int(value: i32) -> Value {
    Value::Bytes(Bytes::copy_from_slice(&value.to_be_bytes()))
}

/// Consistency ONE with these positional values.
pub fn params(values: Vec<Value>) -> QueryParameters {
    QueryParameters {
        values: BoundValues::Positional(values),
        ..QueryParameters::new(Consistency::One)
    }
}

/// The body of a RESULT; anything else fails the test.
pub fn expect_result(response: Response) -> ResultBody {
    match response {
        Response::Result(body) => body,
        other => panic!("expected a RESULT, got {other:?}"),
    }
}

pub fn query(text: &str) -> Request {
    Request::Query(Query {
        query: text.to_string(),
        params: QueryParameters::new(Consistency::One),
    })
}
