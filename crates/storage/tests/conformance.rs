//! The storage conformance suite against the in-memory backend.

use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::api::{Engine, StorageStats};
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::testkit::{
    run_conformance_suite, run_point_cache_suite, run_write_group_suite,
};
use rocksandra_storage::KvEngine;

#[test]
fn memory_engine_passes_the_conformance_suite() {
    run_conformance_suite(&|| {
        KvEngine::new(MemoryStore::new(Arc::new(|| LocalTime(1_700_000_000))))
    });
}

#[test]
fn memory_engine_reports_zero_stats() {
    let engine = KvEngine::new(MemoryStore::new(Arc::new(|| LocalTime(1_700_000_000))));
    assert_eq!(engine.stats(), StorageStats::default());
}

#[test]
fn memory_engine_with_a_point_cache_passes_both_suites() {
    let make = || {
        KvEngine::new(MemoryStore::new(Arc::new(|| LocalTime(1_700_000_000))))
            .with_point_cache(1 << 20)
    };
    run_conformance_suite(&make);
    run_point_cache_suite(&make);
    run_write_group_suite(&make);
}
