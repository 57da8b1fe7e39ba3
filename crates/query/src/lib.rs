//! Query execution: the schema catalog, the built-in system tables, and CQL
//! statements run against the storage engine. No sockets: the server crate
//! hands requests in and writes the results out, and the tests here call the
//! executor directly.

pub mod auth;
pub mod auth_cache;
pub mod authz;
pub mod ctx;
pub mod ddl;
pub mod deadline;
pub mod describe;
pub mod disk_usage;
pub mod error;
pub mod executor;
pub mod functions;
pub(crate) mod guard;
pub mod guardrails;
pub mod import;
pub mod index;
pub mod json;
pub(crate) mod masking;
pub mod metered;
pub mod metrics;
pub mod modify;
pub(crate) mod prepare_checks;
pub mod prepared_cache;
pub mod proxy;
pub mod read_thresholds;
pub mod request;
pub mod restrict;
pub mod role;
pub mod roles;
pub mod rows;
pub mod schema;
pub mod select;
pub mod settings;
pub mod snapshot;
pub mod system;
pub mod term;
pub mod tombstones;
pub mod trace;
pub mod type_text;
pub mod udf;
pub mod view;

pub use error::{QueryError, Result};
pub use executor::Executor;
pub use modify::MAX_TTL_SECONDS;
pub use request::{Env, Outcome, Request};

use std::net::IpAddr;

/// What this node says about itself in system.local, system.peers and
/// DESCRIBE CLUSTER.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeInfo {
    pub cluster_name: String,
    /// `listen_address`: where this node listens for other nodes (only
    /// system.local's listen_address shows it).
    pub listen_address: IpAddr,
    /// `broadcast_address`, else `listen_address`: the address other nodes
    /// know this node by (system.local's broadcast_address, traces,
    /// DESCRIBE CLUSTER, replica errors).
    pub broadcast_address: IpAddr,
    /// `broadcast_rpc_address`, else `rpc_address`: where clients reach
    /// this one.
    pub rpc_address: IpAddr,
    pub native_port: u16,
    /// `storage_port`: where other nodes reach this one, and every node of
    /// its cluster (system.local, system.peers_v2, DESCRIBE CLUSTER).
    pub storage_port: u16,
    pub data_center: String,
    pub rack: String,
    pub host_id: [u8; 16],
    /// This node's tokens (Murmur3), as decimal strings in system.local.
    pub tokens: Vec<i64>,
    /// Other nodes of the cluster (empty for a single node).
    pub peers: Vec<PeerInfo>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PeerInfo {
    /// The peer's broadcast address: what nodes know it by (the `peer`
    /// column).
    pub broadcast_address: IpAddr,
    /// Its broadcast RPC address: where clients reach it.
    pub rpc_address: IpAddr,
    pub native_port: u16,
    pub data_center: String,
    pub rack: String,
    pub host_id: [u8; 16],
    pub tokens: Vec<i64>,
    pub schema_version: [u8; 16],
}

/// The Cassandra version this server speaks for (release_version).
pub const RELEASE_VERSION: &str = "5.0.6";
/// The CQL language version (cql_version).
pub const CQL_VERSION: &str = "3.4.7";
pub const PARTITIONER: &str = "org.apache.cassandra.dht.Murmur3Partitioner";
