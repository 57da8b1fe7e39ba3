//! What the query crate's integration tests share.

use rocksandra_query::NodeInfo;

/// A single node on 127.0.0.1 that owns token 0.
pub fn node() -> NodeInfo {
    NodeInfo {
        cluster_name: "Test Cluster".into(),
        listen_address: "127.0.0.1".parse().expect("address"),
        rpc_address: "127.0.0.1".parse().expect("address"),
        native_port: 9042,
        data_center: "datacenter1".into(),
        rack: "rack1".into(),
        host_id: [7; 16],
        tokens: vec![0],
        peers: Vec::new(),
    }
}
