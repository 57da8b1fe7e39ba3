//! Why a long operation (decommission, removenode, rebuild, repair) failed
//! or was refused: nodetool prints these words (Cassandra's, where it has
//! them), and the test suites match them.

use std::net::IpAddr;
use std::sync::Arc;

use rocksandra_storage::TokenRange;

use crate::admin::AdminError;
use crate::message::{AdminCommand, Response};
use crate::messaging::SendError;
use crate::repair::HashError;
use crate::streaming::StreamError;

#[derive(Debug, thiserror::Error)]
pub enum OperationError {
    #[error("Node is in {0} state; only a NORMAL node can be decommissioned")]
    NotNormal(&'static str),
    #[error("no other normal nodes in the ring; decommission would be pointless")]
    NoOtherNormalNode,
    #[error(
        "Not enough live nodes to maintain replication factor in keyspace {keyspace} (RF = {rf}, N = {nodes}). Perform a forceful decommission to ignore."
    )]
    NotEnoughNodes {
        keyspace: String,
        rf: usize,
        /// The keyspace's nodes in the data center, the leaving one included.
        nodes: usize,
    },
    #[error("{0} is not a host id")]
    NotAHostId(String),
    #[error("Host ID not found: {0}")]
    UnknownHostId(String),
    #[error("Cannot remove self")]
    RemoveSelf,
    #[error(
        "Node /{0} is alive and owns this ID. Use decommission command to remove it from the ring"
    )]
    RemoveAlive(IpAddr),
    /// Another node asked to pull ranges (removenode) answered otherwise.
    #[error("{target} could not stream: {answer:?}")]
    StreamFromAnswer {
        target: IpAddr,
        answer: Box<Response>,
    },
    /// Another node asked to pull ranges (removenode) could not be asked.
    #[error("{target} could not stream: {error}")]
    StreamFromUnreachable { target: IpAddr, error: SendError },
    #[error("streaming to {peer} failed: {source}")]
    StreamTo { peer: IpAddr, source: StreamError },
    #[error("streaming from {peer} failed: {source}")]
    StreamFrom { peer: IpAddr, source: StreamError },
    /// Streamed files could not be ingested.
    #[error("{0}")]
    Ingest(#[source] StreamError),
    #[error("Repair failed: endpoint /{down} died or is down (range {range:?})")]
    ReplicaDown { down: IpAddr, range: TokenRange },
    #[error("Requested range ({start}, {end}] intersects no range this node replicates")]
    RangeNotReplicated { start: i64, end: i64 },
    /// A replica answered a Merkle tree request otherwise.
    #[error("no Merkle tree from {replica}: {answer:?}")]
    MerkleAnswer {
        replica: IpAddr,
        answer: Box<Response>,
    },
    /// A replica could not be asked for its Merkle tree.
    #[error("no Merkle tree from {replica}: {error}")]
    MerkleUnreachable { replica: IpAddr, error: SendError },
    /// This node's Merkle tree could not be computed.
    #[error("{0}")]
    Hash(#[from] HashError),
    #[error("Keyspace {0} is not replicated; nothing to repair")]
    NotReplicated(String),
    /// An unknown keyspace or table named.
    #[error("{0}")]
    Selection(#[from] AdminError),
    #[error("{0:?} is not a long operation")]
    NotLong(Box<AdminCommand>),
    /// This command waited for the same operation, started before it,
    /// which failed; `header` says so.
    #[error("{header}{failure}")]
    Attached {
        header: String,
        failure: Arc<OperationError>,
    },
}
