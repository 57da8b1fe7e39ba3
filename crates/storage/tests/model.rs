//! Model-based check of the in-memory engine: random histories replayed
//! against `testkit::Model`. A failure names its seed; rerun one seed with
//! `ROCKSANDRA_SEED=<seed> cargo test -p rocksandra-storage --test model`.

use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::testkit::{
    check_against_model, check_against_model_on, random_ops, random_ops_on, unclustered_table,
};
use rocksandra_storage::KvEngine;

fn seeds() -> Vec<u64> {
    match std::env::var("ROCKSANDRA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(seed) => vec![seed],
        None => (0..150).collect(),
    }
}

#[test]
fn memory_engine_agrees_with_the_model() {
    for seed in seeds() {
        let engine = KvEngine::new(MemoryStore::new(Arc::new(|| LocalTime(1_700_000_000))));
        check_against_model(&engine, &random_ops(seed, 200), seed);
    }
}

/// A table without clustering columns is read by point lookups
/// (`KvEngine::read_single_row`), not by an iterator.
#[test]
fn memory_engine_agrees_with_the_model_without_clustering() {
    let spec = unclustered_table(8);
    for seed in seeds() {
        let engine = KvEngine::new(MemoryStore::new(Arc::new(|| LocalTime(1_700_000_000))));
        check_against_model_on(&engine, &spec, &random_ops_on(&spec, seed, 200), seed);
    }
}

/// The same histories through a point cache small enough to evict.
#[test]
fn memory_engine_with_a_point_cache_agrees_with_the_model() {
    let spec = unclustered_table(8);
    for seed in seeds() {
        let engine = KvEngine::new(MemoryStore::new(Arc::new(|| LocalTime(1_700_000_000))))
            .with_point_cache(64 << 10);
        check_against_model_on(&engine, &spec, &random_ops_on(&spec, seed, 200), seed);
    }
}
