//! `Engine::stats` on RocksDB: the figures follow what the engine did
//! (memtables fill, flushes make SST files, reads go through the block cache).

use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::api::{
    Engine, Mutation, RowUpdate, SstablesPerRead, StorageStats, TableSpec,
};
use rocksandra_storage::cell::{Cell, ColumnId};
use rocksandra_storage::testkit::{
    clustering, full_read, pk, tempdir, test_table, unclustered_table,
};
use rocksandra_storage_rocksdb::{open_engine, RocksConfig, SSTABLES_SAMPLE_EVERY};

const NOW: LocalTime = LocalTime(1_700_000_000);

#[test]
fn stats_follow_writes_flushes_and_reads() {
    let dir = tempdir("rocks-stats");
    let config = RocksConfig {
        block_cache_bytes: 4 << 20,
        ..Default::default()
    };
    let engine = open_engine(&dir, config, Arc::new(|| NOW)).expect("open");
    let empty = engine.stats();
    assert_eq!(empty.sst_bytes, 0, "{empty:?}");
    assert!(!empty.read_only);

    let spec = test_table(3);
    engine.create_table(spec.clone()).expect("create table");
    let partitions = 50;
    let writes: Vec<Mutation> = (0..partitions)
        .map(|i| {
            let mut m = Mutation::new(spec.id, pk(&format!("p{i}")));
            let cell = Cell::live(ColumnId(1), 10, vec![b'v'; 100]);
            m.rows.push((
                clustering(1, "c"),
                RowUpdate {
                    cells: vec![cell],
                    ..Default::default()
                },
            ));
            m
        })
        .collect();
    engine.write(&writes, NOW).expect("write");
    let written = engine.stats();
    assert!(
        written.memtable_bytes > empty.memtable_bytes,
        "{written:?} after writes, {empty:?} before"
    );
    assert_eq!(written.sst_bytes, 0, "nothing flushed yet: {written:?}");

    engine.flush().expect("flush");
    let flushed = engine.stats();
    assert!(flushed.sst_bytes > 0, "{flushed:?}");

    for _ in 0..2 {
        for i in 0..partitions {
            let read = full_read(spec.id, pk(&format!("p{i}")));
            let partition = engine.read_partition(&read, NOW).expect("read");
            assert_eq!(partition.rows.len(), 1);
        }
    }
    let read = engine.stats();
    assert!(read.block_cache_misses > 0, "first reads miss: {read:?}");
    assert!(read.block_cache_hits > 0, "second reads hit: {read:?}");
    assert!(read.block_cache_usage_bytes > 0, "{read:?}");
    assert_eq!(read.write_stall_micros, 0, "a few writes never stall");
    assert!(!read.read_only);
    assert_ne!(read, StorageStats::default());
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}

/// Per table, what a compaction still has to do: RocksDB's
/// `compaction-pending` (0 or 1) and pending bytes, which a full
/// compaction clears, and the node's figures are the tables' sums.
#[test]
fn table_pending_compactions_clear_after_a_compaction() {
    let dir = tempdir("rocks-table-pending");
    let engine = open_engine(&dir, RocksConfig::default(), Arc::new(|| NOW)).expect("open");
    let spec = test_table(3);
    engine.create_table(spec.clone()).expect("create table");
    // Five flushed files: level 0 asks for a compaction from its fourth.
    for round in 0..5 {
        let writes: Vec<Mutation> = (0..20)
            .map(|i| {
                let mut m = Mutation::new(spec.id, pk(&format!("p{i}")));
                let cell = Cell::live(ColumnId(1), 10 + round, vec![b'v'; 100]);
                m.rows.push((
                    clustering(1, "c"),
                    RowUpdate {
                        cells: vec![cell],
                        ..Default::default()
                    },
                ));
                m
            })
            .collect();
        engine.write(&writes, NOW).expect("write");
        engine.flush().expect("flush");
    }
    let flushed = engine.table_stats(spec.id);
    // Background compaction may have started, or be done, already.
    assert!(flushed.compactions_pending <= 1, "{flushed:?}");
    assert!(flushed.sst_files >= 1, "{flushed:?}");

    engine.compact(spec.id, NOW).expect("compact");
    let compacted = engine.table_stats(spec.id);
    assert_eq!(compacted.compactions_pending, 0, "{compacted:?}");
    assert_eq!(compacted.compaction_pending_bytes, 0, "{compacted:?}");
    assert_eq!(compacted.sst_files, 1, "{compacted:?}");
    let node = engine.stats();
    assert_eq!(node.compactions_pending, compacted.compactions_pending);
    assert_eq!(
        node.compaction_pending_bytes,
        compacted.compaction_pending_bytes
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}

/// Writes version `round` of partition `p`'s one row (`clustering(1, "c")`,
/// or none for a table without clustering columns).
fn write_version(engine: &impl Engine, spec: &TableSpec, round: u64) {
    let mut m = Mutation::new(spec.id, pk("p"));
    let row = match spec.clustering.is_empty() {
        true => Vec::new(),
        false => clustering(1, "c"),
    };
    let write_time = 10 + i64::try_from(round).expect("a small round");
    let cell = Cell::live(ColumnId(1), write_time, format!("v{round}").into_bytes());
    m.rows.push((
        row,
        RowUpdate {
            cells: vec![cell],
            ..Default::default()
        },
    ));
    engine.write(&[m], NOW).expect("write");
}

/// The table's histogram after `SSTABLES_SAMPLE_EVERY` reads of partition
/// `p` on this thread: exactly one of them is sampled.
fn sampled(engine: &impl Engine, spec: &TableSpec) -> SstablesPerRead {
    for _ in 0..SSTABLES_SAMPLE_EVERY {
        let partition = engine
            .read_partition(&full_read(spec.id, pk("p")), NOW)
            .expect("read");
        assert_eq!(partition.rows.len(), 1);
    }
    engine.table_stats(spec.id).sstables_per_read
}

fn one_read_of(files: u64) -> SstablesPerRead {
    let mut expected = SstablesPerRead::default();
    expected.record(files);
    expected
}

/// A partition read (an iterator over a clustered table, point lookups
/// of one without clustering columns) counts the SST files holding the
/// partition: each of three flushed versions, one file, or none when the
/// partition is only in the memtable.
#[test]
fn sampled_reads_count_the_sst_files_they_look_into() {
    let dir = tempdir("rocks-sstables-per-read");
    let engine = open_engine(&dir, RocksConfig::default(), Arc::new(|| NOW)).expect("open");
    let mut id = 10;
    for make in [test_table, unclustered_table] {
        for flushed_versions in [0, 1, 3] {
            id += 1;
            let spec = make(id);
            engine.create_table(spec.clone()).expect("create table");
            for round in 0..flushed_versions.max(1) {
                write_version(&engine, &spec, round);
                if flushed_versions > 0 {
                    engine.flush_table(spec.id).expect("flush");
                }
            }
            assert_eq!(
                engine.table_stats(spec.id).sst_files,
                flushed_versions,
                "table {id}"
            );
            assert_eq!(
                sampled(&engine, &spec),
                one_read_of(flushed_versions),
                "table {id} with {flushed_versions} files"
            );
        }
    }
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}
