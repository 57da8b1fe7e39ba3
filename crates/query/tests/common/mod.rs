//! What the query crate's integration tests share.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_query::{Env, Executor, NodeInfo};
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::KvEngine;

/// A single node on 127.0.0.1 that owns token 0.
pub fn node() -> NodeInfo {
    NodeInfo {
        cluster_name: "Test Cluster".into(),
        listen_address: "127.0.0.1".parse().expect("address"),
        broadcast_address: "127.0.0.1".parse().expect("address"),
        rpc_address: "127.0.0.1".parse().expect("address"),
        native_port: 9042,
        storage_port: 7000,
        data_center: "datacenter1".into(),
        rack: "rack1".into(),
        host_id: [7; 16],
        tokens: vec![0],
        peers: Vec::new(),
    }
}

/// An executor over in-memory storage, with a clock that ticks a
/// microsecond per reading and a fixed random source.
#[allow(dead_code)]
pub fn memory_executor() -> Executor {
    let clock = Arc::new(AtomicI64::new(1_700_000_000_000_000));
    let c = clock.clone();
    let storage_clock: rocksandra_storage::memory::Clock =
        Arc::new(move || LocalTime(c.load(Ordering::SeqCst) / 1_000_000));
    let engine = Arc::new(KvEngine::new(MemoryStore::new(storage_clock)));
    let env = Env {
        now_micros: Arc::new(move || clock.fetch_add(1, Ordering::SeqCst)),
        random: Arc::new(|| 4),
    };
    Executor::open(engine, None, node(), env).expect("executor opens")
}
