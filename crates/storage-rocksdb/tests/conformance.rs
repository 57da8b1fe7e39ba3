//! The storage conformance suite against the RocksDB backend.

use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::api::Durability;
use rocksandra_storage::testkit::{
    run_conformance_suite, run_point_cache_suite, run_write_group_suite, tempdir,
};
use rocksandra_storage_rocksdb::{open_engine, RocksConfig};

#[test]
fn rocksdb_engine_passes_the_conformance_suite() {
    let dirs = std::sync::Mutex::new(Vec::new());
    run_conformance_suite(&|| {
        let dir = tempdir("rocks-conformance");
        dirs.lock().expect("lock").push(dir.clone());
        let config = RocksConfig {
            durability: Durability::Periodic { period_ms: 1000 },
            block_cache_bytes: 8 << 20,
            ..Default::default()
        };
        open_engine(&dir, config, Arc::new(|| LocalTime(1_700_000_000))).expect("open")
    });
    for dir in dirs.into_inner().expect("lock") {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn rocksdb_engine_with_a_point_cache_passes_both_suites() {
    let dirs = std::sync::Mutex::new(Vec::new());
    let make = || {
        let dir = tempdir("rocks-point-cache");
        dirs.lock().expect("lock").push(dir.clone());
        let config = RocksConfig {
            durability: Durability::Periodic { period_ms: 1000 },
            block_cache_bytes: 8 << 20,
            point_cache_bytes: 1 << 20,
            ..Default::default()
        };
        open_engine(&dir, config, Arc::new(|| LocalTime(1_700_000_000))).expect("open")
    };
    run_conformance_suite(&make);
    run_point_cache_suite(&make);
    run_write_group_suite(&make);
    for dir in dirs.into_inner().expect("lock") {
        let _ = std::fs::remove_dir_all(dir);
    }
}
