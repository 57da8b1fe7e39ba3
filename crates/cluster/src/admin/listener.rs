//! The admin port (`admin_address:admin_port`, 127.0.0.1:7199 by default,
//! Cassandra's JMX port): nodetool's commands, on a node alone or in a
//! cluster. It speaks the storage port's frames (`message`): a `Hello`,
//! then a `Login` when the node asks for one (PasswordAuthenticator: a
//! superuser's credentials), then `Admin` commands, each answered in turn.
//! A command runs apart from its connection: while it runs the connection
//! gets `Running` every `ADMIN_HEARTBEAT`, so nodetool waits as long as the
//! node works (a decommission or repair may take hours) and notices a dead
//! node within `ADMIN_SILENCE_LIMIT`; a nodetool that goes away leaves the
//! command running to its end, as Cassandra's operations outlive nodetool.
//! With internode TLS the port speaks TLS as the storage port does (the
//! same certificates; client certificates when they are required there).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::message::{
    encode_frame, AdminCommand, Envelope, Hello, RemoteError, Request, Response, HELLO_MAGIC,
    MAX_HELLO_BYTES,
};
use crate::messaging::{read_frame, FrameError};
use crate::tls::{InternodeStream, InternodeTls};

/// nodetool connections open at once; more are closed as they are accepted.
pub const MAX_ADMIN_CONNECTIONS: usize = 64;
/// Largest request a nodetool connection may send (its commands are small).
pub const MAX_ADMIN_REQUEST_BYTES: usize = 64 << 10;
/// How long a connection may take to finish its TLS handshake and send its
/// `Hello`.
pub const ADMIN_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a running command's connection hears `Running` (shorter in
/// unit tests, which check that nodetool waits past its silence limit).
pub const ADMIN_HEARTBEAT: Duration = if cfg!(test) {
    Duration::from_millis(50)
} else {
    Duration::from_secs(5)
};
/// How long nodetool waits for any frame before it gives the node up.
pub const ADMIN_SILENCE_LIMIT: Duration = if cfg!(test) {
    Duration::from_millis(300)
} else {
    Duration::from_secs(60)
};

/// What the admin port serves.
pub trait AdminService: Send + Sync + 'static {
    /// A login must come before any command.
    fn login_required(&self) -> bool;
    /// Checks a superuser's credentials (it may take a bcrypt check).
    fn login(&self, username: &str, password: &str) -> Result<(), rocksandra_query::QueryError>;
    /// Runs one command (it may take minutes: decommission, repair).
    fn run(&self, command: AdminCommand) -> Response;
}

/// Why a nodetool connection was closed (logged, never answered).
#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    /// The TLS handshake, or writing an answer.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("not nodetool")]
    NotNodetool,
    #[error("no handshake within {ADMIN_HANDSHAKE_TIMEOUT:?}")]
    HandshakeTimeout,
    #[error("an answer sent to the admin port")]
    AnswerReceived,
    #[error("only nodetool's requests are served on the admin port")]
    NotAdminRequest,
}

/// The bound admin port; dropping it stops accepting.
pub struct AdminListener {
    local: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
    /// One permit per open nodetool connection.
    connections: Arc<Semaphore>,
}

impl Drop for AdminListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl AdminListener {
    /// Binds `address` (port 0: any free port) and serves it.
    pub async fn bind(
        address: SocketAddr,
        tls: Option<Arc<InternodeTls>>,
        service: Arc<dyn AdminService>,
    ) -> std::io::Result<AdminListener> {
        let listener = TcpListener::bind(address).await?;
        let local = listener.local_addr()?;
        let connections = Arc::new(Semaphore::new(MAX_ADMIN_CONNECTIONS));
        let open = connections.clone();
        let accepting = tokio::spawn(async move {
            loop {
                let Ok((stream, from)) = listener.accept().await else {
                    continue;
                };
                let Ok(permit) = connections.clone().try_acquire_owned() else {
                    tracing::warn!(
                        "nodetool connection from {from} closed: {MAX_ADMIN_CONNECTIONS} open"
                    );
                    continue;
                };
                let (tls, service) = (tls.clone(), service.clone());
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, tls, service).await {
                        tracing::debug!("nodetool connection from {from} closed: {e}");
                    }
                    drop(permit);
                });
            }
        });
        Ok(AdminListener {
            local,
            accepting,
            connections: open,
        })
    }

    /// Stops accepting, then waits (up to `grace`) until every open
    /// nodetool connection has ended: a node that stops because its own
    /// command (decommission) finished still answers that command, and any
    /// nodetool attached to it, before the process exits.
    pub async fn close(self, grace: Duration) {
        self.accepting.abort();
        // Every permit back means no connection is open.
        let all = MAX_ADMIN_CONNECTIONS as u32;
        let _ = tokio::time::timeout(grace, self.connections.acquire_many(all)).await;
    }

    /// Where it listens (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

/// One nodetool connection: handshake, then requests answered in turn.
async fn serve(
    stream: TcpStream,
    tls: Option<Arc<InternodeTls>>,
    service: Arc<dyn AdminService>,
) -> Result<(), ConnectionError> {
    let stream = tokio::time::timeout(ADMIN_HANDSHAKE_TIMEOUT, async {
        let stream = match &tls {
            Some(tls) => tls.accept(stream).await?,
            None => InternodeStream::Plain(stream),
        };
        let (mut read, write) = tokio::io::split(stream);
        let hello: Hello = read_frame(&mut read, MAX_HELLO_BYTES).await?;
        if hello.magic != HELLO_MAGIC {
            return Err(ConnectionError::NotNodetool);
        }
        Ok((read, write))
    })
    .await
    .map_err(|_| ConnectionError::HandshakeTimeout)?;
    let (mut read, mut write) = stream?;
    let mut logged_in = !service.login_required();
    loop {
        let Envelope::Request { id, body } =
            read_frame::<Envelope>(&mut read, MAX_ADMIN_REQUEST_BYTES).await?
        else {
            return Err(ConnectionError::AnswerReceived);
        };
        let mut work = std::pin::pin!(answer(&service, &mut logged_in, body));
        let response = loop {
            tokio::select! {
                response = &mut work => break response?,
                () = tokio::time::sleep(ADMIN_HEARTBEAT) => {
                    write_response(&mut write, id, Response::Running).await?;
                }
            }
        };
        write_response(&mut write, id, response).await?;
    }
}

async fn write_response(
    write: &mut (impl AsyncWriteExt + Unpin),
    id: u64,
    body: Response,
) -> Result<(), ConnectionError> {
    let frame = encode_frame(&Envelope::Response { id, body });
    write.write_all(&frame).await?;
    Ok(write.flush().await?)
}

/// The answer to one request; an error for requests nodetool never sends.
async fn answer(
    service: &Arc<dyn AdminService>,
    logged_in: &mut bool,
    request: Request,
) -> Result<Response, ConnectionError> {
    let service = service.clone();
    let blocking = |work: Box<dyn FnOnce() -> Response + Send>| async move {
        tokio::task::spawn_blocking(work)
            .await
            .unwrap_or_else(|e| Response::Error(RemoteError::Failed(e.to_string())))
    };
    Ok(match request {
        Request::Login { username, password } => {
            let response = blocking(Box::new(move || {
                match service.login(&username, &password) {
                    Ok(()) => Response::Ack,
                    Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
                }
            }))
            .await;
            *logged_in = response == Response::Ack;
            response
        }
        Request::Admin(_) if !*logged_in => Response::Error(RemoteError::Failed(
            "Authentication failed! Credentials required (nodetool -u USER -pw PASSWORD)".into(),
        )),
        Request::Admin(command) => blocking(Box::new(move || service.run(command))).await,
        _ => return Err(ConnectionError::NotAdminRequest),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs every command for `work`, then answers its name.
    struct Slow {
        work: Duration,
    }

    impl AdminService for Slow {
        fn login_required(&self) -> bool {
            false
        }
        fn login(&self, _: &str, _: &str) -> Result<(), rocksandra_query::QueryError> {
            Ok(())
        }
        fn run(&self, command: AdminCommand) -> Response {
            std::thread::sleep(self.work);
            Response::Text(format!("{command:?} done"))
        }
    }

    #[test]
    fn a_command_longer_than_the_silence_limit_still_gets_its_answer() {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let work = ADMIN_SILENCE_LIMIT * 4;
        let listener = runtime
            .block_on(AdminListener::bind(
                "127.0.0.1:0".parse().expect("address"),
                None,
                Arc::new(Slow { work }),
            ))
            .expect("bind");
        let started = std::time::Instant::now();
        let answer = crate::admin::call(listener.local_addr(), AdminCommand::Ring, None, None);
        assert_eq!(answer.expect("an answer"), "Ring done");
        assert!(started.elapsed() >= work);
    }
}
