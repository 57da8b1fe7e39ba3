//! Model-based check of the RocksDB engine (flushes and compactions included,
//! so merge operands, merged values and the compaction filter are all read).

use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::api::TableSpec;
use rocksandra_storage::testkit::{
    check_against_model_on, random_ops_on, tempdir, test_table, unclustered_table,
};
use rocksandra_storage_rocksdb::{open_engine, RocksConfig};

fn check_seeds(spec: &TableSpec) {
    check_seeds_cached(spec, 0);
}

/// `check_seeds` with a point cache of `point_cache_bytes`.
fn check_seeds_cached(spec: &TableSpec, point_cache_bytes: usize) {
    let seeds: Vec<u64> = match std::env::var("ROCKSANDRA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(seed) => vec![seed],
        None => (0..60).collect(),
    };
    for seed in seeds {
        let dir = tempdir("rocks-model");
        {
            let config = RocksConfig {
                block_cache_bytes: 4 << 20,
                point_cache_bytes,
                ..Default::default()
            };
            let engine =
                open_engine(&dir, config, Arc::new(|| LocalTime(1_700_000_000))).expect("open");
            check_against_model_on(&engine, spec, &random_ops_on(spec, seed, 150), seed);
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn rocksdb_engine_agrees_with_the_model() {
    check_seeds(&test_table(7));
}

/// Tables without clustering columns are read by point lookups
/// (`get_many`: RocksDB's batched MultiGet), not by an iterator.
#[test]
fn rocksdb_engine_agrees_with_the_model_without_clustering() {
    check_seeds(&unclustered_table(8));
}

/// The same through a point cache small enough to evict.
#[test]
fn rocksdb_engine_with_a_point_cache_agrees_with_the_model() {
    check_seeds_cached(&unclustered_table(8), 64 << 10);
}
