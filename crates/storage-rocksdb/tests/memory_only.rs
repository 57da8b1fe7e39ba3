//! Reads limited to memory (`rocksandra_storage::memory_only`, the network
//! thread's inline reads): data in a memtable or the block cache is read;
//! data only on disk fails with `NotInMemory` and is read, whole, once the
//! limit is lifted.

use std::path::Path;
use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::api::{Engine, Mutation, Partition, RowUpdate, StorageError, TableSpec};
use rocksandra_storage::cell::{Cell, ColumnId};
use rocksandra_storage::memory_only;
use rocksandra_storage::testkit::{
    clustering, full_read, pk, tempdir, test_table, unclustered_table,
};
use rocksandra_storage_rocksdb::{open_engine, RocksConfig};

const NOW: LocalTime = LocalTime(1_700_000_000);
/// Partitions flushed beside the one read (about 400 KB of blocks).
const ON_DISK_NEIGHBOURS: usize = 1000;

fn open(dir: &Path) -> Arc<dyn Engine> {
    let config = RocksConfig {
        block_cache_bytes: 4 << 20,
        ..Default::default()
    };
    Arc::new(open_engine(dir, config, Arc::new(|| NOW)).expect("open"))
}

fn write(engine: &dyn Engine, spec: &TableSpec, partition: &str, rows: i32) {
    let mut m = Mutation::new(spec.id, pk(partition));
    for i in 0..rows {
        let key = if spec.clustering.is_empty() {
            Vec::new()
        } else {
            clustering(i, "c")
        };
        let cell = Cell::live(ColumnId(1), 10, incompressible(partition, i));
        m.rows.push((
            key,
            RowUpdate {
                cells: vec![cell],
                ..Default::default()
            },
        ));
    }
    engine.write(&[m], NOW).expect("write");
}

/// 200 bytes that do not compress, so that the partitions flushed fill
/// many blocks.
fn incompressible(partition: &str, row: i32) -> Vec<u8> {
    let mut x = partition
        .bytes()
        .fold(u64::from(row.unsigned_abs()) | 1, |h, b| {
            h.wrapping_mul(31) ^ u64::from(b)
        });
    (0..200)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

fn read(engine: &dyn Engine, spec: &TableSpec, partition: &str) -> Result<Partition, StorageError> {
    engine.read_partition(&full_read(spec.id, pk(partition)), NOW)
}

/// Each table's partition `on-disk` flushed among others, the engine reopened (an empty
/// block cache), then `in-memtable` written.
fn reopened(dir: &Path, specs: &[TableSpec]) -> Arc<dyn Engine> {
    let engine = open(dir);
    for spec in specs {
        engine.create_table(spec.clone()).expect("create table");
        write(&*engine, spec, "on-disk", 20);
        // Others around it, so that its blocks are neither the first nor
        // the last of the file (which opening the table may read).
        for i in 0..ON_DISK_NEIGHBOURS {
            write(&*engine, spec, &format!("p{i}"), 2);
        }
    }
    engine.flush().expect("flush");
    drop(engine);
    let engine = open(dir);
    for spec in specs {
        // After a restart the server declares its tables again.
        engine.create_table(spec.clone()).expect("declare table");
        write(&*engine, spec, "in-memtable", 3);
    }
    engine
}

#[test]
fn a_read_that_needs_the_disk_fails_until_the_block_cache_holds_it() {
    let dir = tempdir("rocks-memory-only");
    let specs = [test_table(3), unclustered_table(4)];
    let engine = reopened(&dir, &specs);
    for (n, spec) in (1u64..).zip(&specs) {
        let missed = memory_only(|| read(&*engine, spec, "on-disk"));
        assert!(
            matches!(missed, Err(StorageError::NotInMemory)),
            "{missed:?}"
        );
        assert_eq!(engine.stats().memory_only_misses, n);

        let from_disk = read(&*engine, spec, "on-disk").expect("read from disk");
        let rows = if spec.clustering.is_empty() { 1 } else { 20 };
        assert_eq!(from_disk.rows.len(), rows);
        let cached = memory_only(|| read(&*engine, spec, "on-disk")).expect("cached");
        assert_eq!(cached, from_disk);

        assert_eq!(engine.stats().memory_only_misses, n, "hits count no miss");
        let fresh = memory_only(|| read(&*engine, spec, "in-memtable")).expect("memtable");
        assert_eq!(
            fresh.rows.len(),
            if spec.clustering.is_empty() { 1 } else { 3 }
        );
    }
}

#[test]
fn a_missing_partition_is_not_an_error_when_its_blocks_are_cached() {
    let dir = tempdir("rocks-memory-only-missing");
    let specs = [test_table(5)];
    let engine = reopened(&dir, &specs);
    read(&*engine, &specs[0], "on-disk").expect("read from disk");
    let absent = memory_only(|| read(&*engine, &specs[0], "absent")).expect("absent");
    assert!(absent.rows.is_empty() && absent.static_row.is_none());
}
