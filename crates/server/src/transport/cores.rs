//! Thread-per-core serving: one thread per core, each with a single-threaded
//! runtime, and every client connection owned by one of them from accept to
//! close. A connection's read loop, its short requests (run inline) and its
//! writer then share a thread: a task waking another is a queue push, not a
//! futex wake of an idle worker of a shared pool, and no request hops between
//! threads. Longer work still leaves through the handler (the blocking pool).
//!
//! The accept loop (`Server::run`) hands each connection to the next core in
//! turn; shutdown closes the hand-off, tells connections to stop (`stop`),
//! waits for them, and aborts what is left after the grace period.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tracing::{error, warn};

use super::{connection, log_join, ConnectionSlot, Shared};

/// Connections handed to one core and not yet taken up by it. The accept
/// loop waits when a core is this far behind.
pub const CORE_HANDOFF_QUEUE_MAX: usize = 128;

/// An accepted connection on its way to a core.
struct Handoff {
    socket: std::net::TcpStream,
    peer: SocketAddr,
    slot: ConnectionSlot,
}

pub(super) struct Cores {
    queues: Vec<mpsc::Sender<Handoff>>,
    threads: Vec<JoinHandle<()>>,
    next: usize,
    /// Set when the grace period is over: cores abort their connections.
    abort: watch::Sender<bool>,
}

impl Cores {
    /// Starts one serving thread per core (`count`, at least one).
    pub(super) fn start(
        count: usize,
        shared: &Arc<Shared>,
        stop: &watch::Receiver<bool>,
    ) -> std::io::Result<Cores> {
        let (abort, aborted) = watch::channel(false);
        let mut queues = Vec::new();
        let mut threads = Vec::new();
        for index in 0..count.max(1) {
            let (queue, handoffs) = mpsc::channel(CORE_HANDOFF_QUEUE_MAX);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (shared, stop, aborted) = (shared.clone(), stop.clone(), aborted.clone());
            let thread = std::thread::Builder::new()
                .name(format!("cql-core-{index}"))
                .spawn(move || runtime.block_on(serve_core(handoffs, shared, stop, aborted)))?;
            queues.push(queue);
            threads.push(thread);
        }
        Ok(Cores {
            queues,
            threads,
            next: 0,
            abort,
        })
    }

    /// Hands a connection to the next core in turn.
    pub(super) async fn hand_off(
        &mut self,
        socket: tokio::net::TcpStream,
        peer: SocketAddr,
        slot: ConnectionSlot,
    ) {
        let socket = match socket.into_std() {
            Ok(socket) => socket,
            Err(e) => {
                warn!(%peer, "cannot hand the connection to a serving thread: {e}");
                return;
            }
        };
        let queue = &self.queues[self.next % self.queues.len()];
        self.next = self.next.wrapping_add(1);
        if queue.send(Handoff { socket, peer, slot }).await.is_err() {
            error!(%peer, "a serving thread has stopped; connection dropped");
        }
    }

    /// Closes the hand-off and waits up to `grace` for every connection to
    /// finish (they were told to stop); then aborts the rest and waits for
    /// the threads.
    pub(super) async fn stop(self, grace: std::time::Duration) {
        let Cores {
            queues,
            threads,
            abort,
            ..
        } = self;
        drop(queues);
        let (done, mut finished) = mpsc::channel::<()>(1);
        let waiter = std::thread::spawn(move || {
            for thread in threads {
                if thread.join().is_err() {
                    error!("a CQL serving thread panicked");
                }
            }
            drop(done);
        });
        if tokio::time::timeout(grace, finished.recv()).await.is_err() {
            warn!("CQL connections still busy after {grace:?}; closing them");
            let _ = abort.send(true);
            let _ = finished.recv().await;
        }
        let _ = waiter.join();
    }
}

/// One core's loop: serves the connections handed to it until the hand-off
/// closes and they have all finished (or `aborted` is set).
async fn serve_core(
    mut handoffs: mpsc::Receiver<Handoff>,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
    mut aborted: watch::Receiver<bool>,
) {
    // The event-loop lag the metrics report is this loop's (and the main
    // runtime's): a request that blocks a core delays its connections.
    let name = std::thread::current()
        .name()
        .unwrap_or("cql-core")
        .to_string();
    let probe = tokio::spawn(crate::metrics::watch_event_loop(
        shared.metrics.clone(),
        name,
    ));
    let mut connections = JoinSet::new();
    let mut open = true;
    while open || !connections.is_empty() {
        tokio::select! {
            handoff = handoffs.recv(), if open => match handoff {
                Some(Handoff { socket, peer, slot }) => match tokio::net::TcpStream::from_std(socket) {
                    Ok(socket) => {
                        let serve = connection::serve(socket, peer, shared.clone(), stop.clone(), slot);
                        connections.spawn(serve);
                    }
                    Err(e) => warn!(%peer, "cannot serve the connection: {e}"),
                },
                None => open = false,
            },
            Some(joined) = connections.join_next(), if !connections.is_empty() => log_join(joined),
            _ = aborted.wait_for(|abort| *abort) => {
                connections.shutdown().await;
                break;
            }
        }
    }
    probe.abort();
}
