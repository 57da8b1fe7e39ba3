//! Why a node could not start in its cluster: the server prints these
//! words before it exits.

use std::net::SocketAddr;
use std::path::PathBuf;

use rocksandra_query::QueryError;
use rocksandra_storage::StorageError;

use crate::gossip::GossipStartError;
use crate::messaging::BindError;
use crate::operations::OperationError;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "this node was decommissioned; its data directory {} cannot join again (remove it to start a new node)",
        .0.display()
    )]
    Decommissioned(PathBuf),
    /// One of the tables the cluster keeps in local storage ("paxos
    /// state", "batchlog").
    #[error("cannot open the {table} table: {source}")]
    OpenTable {
        table: &'static str,
        source: StorageError,
    },
    #[error("cannot listen for other nodes on {0}")]
    Listen(#[source] BindError),
    #[error("{0}")]
    Gossip(#[from] GossipStartError),
    /// Cassandra's "Unable to contact any seeds", with the seeds and, for
    /// each that could not be connected to, why (a refused TLS handshake).
    #[error("{}", unable_to_contact(seeds, causes, *waited_secs))]
    NoSeedAnswered {
        seeds: Vec<SocketAddr>,
        /// "seed: cause" for each seed whose connections failed.
        causes: Vec<String>,
        waited_secs: u64,
    },
    #[error("cannot open the hints directory: {0}")]
    HintsDirectory(#[source] std::io::Error),
    #[error("cannot start the coordinator: {0}")]
    Coordinator(#[source] std::io::Error),
    /// The executor refused the cluster's data proxy or schema sync.
    #[error("{0}")]
    Executor(#[from] QueryError),
    #[error("no other node of the cluster is up")]
    NoOtherNodeUp,
    #[error("{0}")]
    Bootstrap(#[from] OperationError),
    /// The bootstrap's blocking task ended without an answer.
    #[error("{0}")]
    Task(#[from] tokio::task::JoinError),
    /// A background thread ("hint replay", "batchlog replay").
    #[error("cannot start {what}: {source}")]
    Thread {
        what: &'static str,
        source: std::io::Error,
    },
}

fn unable_to_contact(seeds: &[SocketAddr], causes: &[String], waited_secs: u64) -> String {
    let listed: Vec<String> = seeds.iter().map(SocketAddr::to_string).collect();
    let mut message = format!(
        "Unable to contact any seeds: [{}] within {waited_secs} s",
        listed.join(", "),
    );
    if !causes.is_empty() {
        message.push_str(&format!(" ({})", causes.join("; ")));
    }
    message
}
