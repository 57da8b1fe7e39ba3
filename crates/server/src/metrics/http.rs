//! The metrics endpoint: a minimal HTTP/1.1 responder on tokio. `GET
//! /metrics` answers the Prometheus text; any other path is 404 and any
//! other method on it 405. One request per connection, closed after the
//! response (`Connection: close`), which is all a Prometheus scrape needs.
//!
//! # Limits (all named)
//! - A request head (request line and headers) longer than
//!   [`REQUEST_HEAD_BYTES_MAX`] is answered 431; one that does not arrive
//!   within [`REQUEST_HEAD_WAIT`] is answered 408. Bodies are never read.
//! - At most [`CONNECTIONS_MAX`] connections are served at once; more are
//!   closed at once without an answer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tracing::{debug, error, warn};

use super::exposition::CONTENT_TYPE;

/// The one path served.
pub const METRICS_PATH: &str = "/metrics";
/// Longest request head (request line and headers, with the empty line
/// that ends them) read before answering 431.
pub const REQUEST_HEAD_BYTES_MAX: usize = 8 * 1024;
/// How long a client may take to send its request head.
pub const REQUEST_HEAD_WAIT: Duration = Duration::from_secs(10);
/// How long a client may take to read the response.
pub const RESPONSE_WRITE_WAIT: Duration = Duration::from_secs(10);
/// Connections served at once (scrapers are few).
pub const CONNECTIONS_MAX: usize = 16;
/// Pause after a failed `accept` (e.g. out of file descriptors).
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(100);
/// After the response, how long (and how many bytes of) what the client
/// still sends are read and dropped, so that closing with unread bytes
/// does not reset the connection before the client has read the answer.
const CLOSE_LINGER: Duration = Duration::from_millis(500);
const CLOSE_LINGER_BYTES_MAX: usize = 64 * 1024;

/// Produces the body of `GET /metrics`. May block: it runs on the blocking pool.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

#[derive(Debug, Error)]
pub enum MetricsError {
    #[error("cannot serve metrics on {address} (prometheus_address, prometheus_port): {source}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A bound metrics listener, ready to `run`.
pub struct MetricsServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    render: Render,
}

impl MetricsServer {
    /// Binds the listening socket; port 0 picks a free port (see `local_addr`).
    pub async fn bind(address: SocketAddr, render: Render) -> Result<MetricsServer, MetricsError> {
        let bind_error = |source| MetricsError::Bind { address, source };
        let listener = TcpListener::bind(address).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        Ok(MetricsServer {
            listener,
            local_addr,
            render,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves scrapes until dropped (which also drops the connections being served).
    pub async fn run(self) {
        let slots = Arc::new(Semaphore::new(CONNECTIONS_MAX));
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((socket, peer)) => match slots.clone().try_acquire_owned() {
                        Ok(slot) => {
                            connections.spawn(serve(socket, self.render.clone(), slot));
                        }
                        Err(_) => debug!(%peer, "too many metrics connections: closing one"),
                    },
                    Err(e) => {
                        warn!("accepting a metrics connection failed: {e}");
                        tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                    }
                },
                Some(joined) = connections.join_next(), if !connections.is_empty() => {
                    if let Err(e) = joined {
                        if e.is_panic() {
                            error!("a metrics connection task panicked: {e}");
                        }
                    }
                }
            }
        }
    }
}

/// How reading a request head ended.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// The bytes up to the empty line that ends the head.
    Complete(Vec<u8>),
    TooLarge,
    /// The client stopped sending before the head was complete.
    Truncated {
        bytes_read: usize,
    },
}

/// One exchange: read the head, answer, close.
async fn serve(mut socket: TcpStream, render: Render, _slot: OwnedSemaphorePermit) {
    let head = tokio::time::timeout(REQUEST_HEAD_WAIT, read_head(&mut socket)).await;
    let response = match head {
        Ok(Head::Complete(head)) => respond(&head, &render).await,
        Ok(Head::TooLarge) => Response::error(Status::HeadTooLarge),
        // Nothing sent at all (a port check): nothing to answer.
        Ok(Head::Truncated { bytes_read: 0 }) => return,
        Ok(Head::Truncated { .. }) => Response::error(Status::BadRequest),
        Err(_) => Response::error(Status::Timeout),
    };
    let sent = tokio::time::timeout(RESPONSE_WRITE_WAIT, async {
        socket.write_all(&response.to_bytes()).await?;
        socket.shutdown().await
    })
    .await;
    match sent {
        Ok(Ok(())) => linger(&mut socket).await,
        Ok(Err(e)) => debug!("writing a metrics response failed: {e}"),
        Err(_) => debug!("a metrics client did not read its response in time"),
    }
}

/// Reads up to the end of the request head, never more than
/// `REQUEST_HEAD_BYTES_MAX` bytes.
async fn read_head(socket: &mut TcpStream) -> Head {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = head_end(&head) {
            head.truncate(end);
            return Head::Complete(head);
        }
        let room = REQUEST_HEAD_BYTES_MAX.saturating_sub(head.len());
        if room == 0 {
            return Head::TooLarge;
        }
        let want = room.min(chunk.len());
        let Some(buf) = chunk.get_mut(..want) else {
            return Head::TooLarge;
        };
        match socket.read(buf).await {
            Ok(0) | Err(_) => {
                return Head::Truncated {
                    bytes_read: head.len(),
                }
            }
            Ok(n) => head.extend_from_slice(buf.get(..n).unwrap_or_default()),
        }
    }
}

/// Where the empty line ending a head ends: after `\r\n\r\n`, or after
/// `\n\n` from clients that send bare line feeds (which HTTP tolerates).
fn head_end(bytes: &[u8]) -> Option<usize> {
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4);
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What a request asks for, from its request line.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Metrics,
    NotFound,
    MethodNotAllowed,
    BadRequest,
}

fn route(head: &[u8]) -> Route {
    let line_end = head.iter().position(|b| *b == b'\n').unwrap_or(head.len());
    let Some(line) = head.get(..line_end) else {
        return Route::BadRequest;
    };
    let Ok(line) = std::str::from_utf8(line) else {
        return Route::BadRequest;
    };
    let mut parts = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Route::BadRequest;
    };
    if method.is_empty() || !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return Route::BadRequest;
    }
    let path = target.split('?').next().unwrap_or(target);
    if path != METRICS_PATH {
        Route::NotFound
    } else if method != "GET" {
        Route::MethodNotAllowed
    } else {
        Route::Metrics
    }
}

async fn respond(head: &[u8], render: &Render) -> Response {
    match route(head) {
        Route::Metrics => {
            let render = render.clone();
            match tokio::task::spawn_blocking(move || render()).await {
                Ok(body) => Response {
                    status: Status::Ok,
                    content_type: CONTENT_TYPE,
                    body,
                },
                Err(e) => {
                    error!("rendering metrics failed: {e}");
                    Response::error(Status::InternalError)
                }
            }
        }
        Route::NotFound => Response::error(Status::NotFound),
        Route::MethodNotAllowed => Response::error(Status::MethodNotAllowed),
        Route::BadRequest => Response::error(Status::BadRequest),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    Timeout,
    HeadTooLarge,
    InternalError,
}

impl Status {
    fn line(self) -> &'static str {
        match self {
            Status::Ok => "200 OK",
            Status::BadRequest => "400 Bad Request",
            Status::NotFound => "404 Not Found",
            Status::MethodNotAllowed => "405 Method Not Allowed",
            Status::Timeout => "408 Request Timeout",
            Status::HeadTooLarge => "431 Request Header Fields Too Large",
            Status::InternalError => "500 Internal Server Error",
        }
    }
}

struct Response {
    status: Status,
    content_type: &'static str,
    body: String,
}

impl Response {
    fn error(status: Status) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{}\n", status.line()),
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        let allow = if self.status == Status::MethodNotAllowed {
            "Allow: GET\r\n"
        } else {
            ""
        };
        let head = format!(
            "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
            self.status.line(),
            self.content_type,
            self.body.len(),
        );
        let mut bytes = Vec::with_capacity(head.len() + self.body.len());
        bytes.extend_from_slice(head.as_bytes());
        bytes.extend_from_slice(self.body.as_bytes());
        bytes
    }
}

/// Reads and drops what the client still sends, until it closes, or
/// `CLOSE_LINGER` or `CLOSE_LINGER_BYTES_MAX` is reached.
async fn linger(socket: &mut TcpStream) {
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    let _ = tokio::time::timeout(CLOSE_LINGER, async {
        while drained < CLOSE_LINGER_BYTES_MAX {
            match socket.read(&mut sink).await {
                Ok(n) if n > 0 => drained += n,
                _ => return,
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_routed() {
        let cases: [(&[u8], Route); 12] = [
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Route::Metrics),
            (b"GET /metrics HTTP/1.0\n\n", Route::Metrics),
            (b"GET /metrics?name[]=x HTTP/1.1\r\n\r\n", Route::Metrics),
            (b"GET / HTTP/1.1\r\n\r\n", Route::NotFound),
            (b"GET /metrics/ HTTP/1.1\r\n\r\n", Route::NotFound),
            (b"POST /other HTTP/1.1\r\n\r\n", Route::NotFound),
            (b"POST /metrics HTTP/1.1\r\n\r\n", Route::MethodNotAllowed),
            (b"HEAD /metrics HTTP/1.1\r\n\r\n", Route::MethodNotAllowed),
            (b"GET /metrics\r\n\r\n", Route::BadRequest),
            (b"GET  /metrics HTTP/1.1\r\n\r\n", Route::BadRequest),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Route::BadRequest),
            (b"\xff\xfe /metrics HTTP/1.1\r\n\r\n", Route::BadRequest),
        ];
        for (head, expected) in cases {
            assert_eq!(route(head), expected, "{:?}", String::from_utf8_lossy(head));
        }
        assert_eq!(route(b""), Route::BadRequest);
        assert_eq!(route(b"\r\n\r\n"), Route::BadRequest);
    }

    #[test]
    fn the_head_ends_at_the_first_empty_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"), Some(24));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nbody"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n"), None);
        assert_eq!(head_end(b""), None);
    }

    #[test]
    fn responses_say_their_length_and_close() {
        let text =
            String::from_utf8(Response::error(Status::MethodNotAllowed).to_bytes()).expect("ascii");
        assert_eq!(
            text,
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 23\r\nAllow: GET\r\nConnection: close\r\n\r\n405 Method Not Allowed\n"
        );
    }
}
