//! Several Rocksandra nodes as one database: the token ring and replica
//! placement (`ring`), consistency levels (`consistency`), the internode
//! message format (`message`) and transport (`messaging`), gossip membership
//! (`gossip`), the topology a node believes in (`topology`), the coordinator
//! that runs reads and writes against replicas (`coordinator`, with
//! `replica` for the replica side), hinted handoff (`hints`), Paxos for lightweight transactions (`paxos`,
//! with the acceptors' durable state in `paxos_store`), the node's
//! membership and bootstrap (`node`), schema agreement (`schema_exchange`), moving token
//! ranges' data between nodes (`streaming`), decommission, removenode,
//! rebuild and Merkle-tree repair (`operations`, `repair`), ANN queries
//! answered from each replica's graph (`vector_search`) and operator
//! commands (`admin`).

pub mod admin;
pub mod batchlog;
pub mod consistency;
pub mod coordinator;
pub mod gossip;
pub mod hints;
pub mod message;
pub mod messaging;
pub mod metrics;
pub mod node;
pub mod operations;
pub mod paxos;
pub mod paxos_store;
mod query_error;
mod read_reports;
pub mod repair;
pub mod replica;
pub mod replies;
pub mod ring;
pub mod schema_exchange;
pub mod stages;
pub mod streaming;
pub mod tls;
pub mod topology;
pub mod truncate;
pub mod vector_search;

pub use node::{ClusterConfig, ClusterNode, EventSink};
