//! Model-based check of the RocksDB engine (flushes and compactions included,
//! so merge operands, merged values and the compaction filter are all read).

use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::testkit::{check_against_model, random_ops, tempdir};
use rocksandra_storage_rocksdb::{open_engine, RocksConfig};

#[test]
fn rocksdb_engine_agrees_with_the_model() {
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
                ..Default::default()
            };
            let engine =
                open_engine(&dir, config, Arc::new(|| LocalTime(1_700_000_000))).expect("open");
            check_against_model(&engine, &random_ops(seed, 150), seed);
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
