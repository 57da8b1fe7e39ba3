//! What counted reads (`Engine::read_partition_counted`, `read_raw_counted`,
//! `scan_counted`) count against the tombstone thresholds, as Cassandra's
//! `ReadCommand` does, and that they stop once past the limit they are given.

use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::cell::{Cell, ColumnId, DeletionTime, LivenessInfo};
use rocksandra_storage::layout::keys::ClusteringBound;
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::testkit::{clustering, full_read, full_scan, pk, test_table};
use rocksandra_storage::{Engine, KvEngine, Mutation, RangeTombstone, RowUpdate, Slice, TableId};

const NOW: LocalTime = LocalTime(1_700_000_000);
const TABLE: TableId = TableId(1);

fn engine() -> KvEngine<MemoryStore> {
    let engine = KvEngine::new(MemoryStore::new(Arc::new(|| NOW)));
    engine.create_table(test_table(1)).expect("a new table");
    engine
}

fn live_row(c: i32, cells: Vec<Cell>) -> (Vec<Vec<u8>>, RowUpdate) {
    let update = RowUpdate {
        liveness: Some(LivenessInfo::new(10, 0, 0)),
        cells,
        ..RowUpdate::default()
    };
    (clustering(c, "x"), update)
}

fn deleted_row(c: i32) -> (Vec<Vec<u8>>, RowUpdate) {
    let update = RowUpdate {
        deletion: Some(DeletionTime::new(20, NOW.0)),
        ..RowUpdate::default()
    };
    (clustering(c, "x"), update)
}

/// The count of a full read of "p", the raw read's and a scan's, which agree.
fn counts(engine: &KvEngine<MemoryStore>) -> u64 {
    let read = full_read(TABLE, pk("p"));
    let (_, read_count) = engine
        .read_partition_counted(&read, NOW, u64::MAX)
        .expect("a counted read");
    let (_, raw_count) = engine
        .read_raw_counted(&read, NOW, u64::MAX)
        .expect("a counted read");
    let (_, scan_count) = engine
        .scan_counted(&full_scan(TABLE), NOW, u64::MAX)
        .expect("a counted read");
    assert_eq!((raw_count, scan_count), (read_count, read_count));
    read_count
}

#[test]
fn dead_cells_deleted_rows_and_range_tombstone_markers_are_counted() {
    let engine = engine();
    let mut m = Mutation::new(TABLE, pk("p"));
    // A live row with a deleted cell and an expired one: 2.
    m.rows.push(live_row(
        0,
        vec![
            Cell::live(ColumnId(1), 10, b"a".to_vec()),
            Cell::tombstone(ColumnId(2), 11, NOW),
            Cell::expiring(ColumnId(3), 10, 5, LocalTime(NOW.0 - 10), b"x".to_vec()),
        ],
    ));
    // A row deleted on its own: 1.
    m.rows.push(deleted_row(1));
    // A live row: nothing.
    m.rows.push(live_row(
        2,
        vec![Cell::live(ColumnId(1), 10, b"b".to_vec())],
    ));
    engine.write(&[m], NOW).unwrap();
    assert_eq!(counts(&engine), 3);

    // A range tombstone over rows 3..=5 (written before it): its two
    // markers, not the rows it covers.
    let mut m = Mutation::new(TABLE, pk("p"));
    for c in 3..=5 {
        m.rows.push(live_row(c, Vec::new()));
    }
    engine.write(&[m], NOW).unwrap();
    let mut rt = Mutation::new(TABLE, pk("p"));
    rt.range_tombstones.push(RangeTombstone {
        start: ClusteringBound::around(vec![3i32.to_be_bytes().to_vec()], true),
        end: ClusteringBound::around(vec![5i32.to_be_bytes().to_vec()], true),
        deletion: DeletionTime::new(30, NOW.0),
    });
    engine.write(&[rt], NOW).unwrap();
    assert_eq!(counts(&engine), 5);
    // A slice beyond the range tombstone does not meet its markers.
    let mut beyond = full_read(TABLE, pk("p"));
    beyond.slices = vec![Slice {
        start: ClusteringBound::around(vec![6i32.to_be_bytes().to_vec()], true),
        end: ClusteringBound::unbounded(),
    }];
    let (_, met) = engine
        .read_partition_counted(&beyond, NOW, u64::MAX)
        .unwrap();
    assert_eq!(met, 0);
    let mut into = beyond.clone();
    into.slices[0].start.prefix = vec![4i32.to_be_bytes().to_vec()];
    let (_, met) = engine.read_partition_counted(&into, NOW, u64::MAX).unwrap();
    assert_eq!(met, 2, "a slice starting inside it meets both markers");

    // A partition deletion is not counted, nor what it covers (the range
    // tombstone included).
    let mut gone = Mutation::new(TABLE, pk("p"));
    gone.partition_deletion = Some(DeletionTime::new(40, NOW.0));
    engine.write(&[gone], NOW).unwrap();
    assert_eq!(counts(&engine), 0);
}

#[test]
fn counted_reads_stop_once_past_their_limit() {
    let engine = engine();
    let mut m = Mutation::new(TABLE, pk("p"));
    for c in 0..1000 {
        m.rows.push(deleted_row(c));
    }
    m.rows.push(live_row(1000, Vec::new()));
    engine.write(&[m], NOW).unwrap();
    let read = full_read(TABLE, pk("p"));
    let (partition, met) = engine.read_partition_counted(&read, NOW, 10).unwrap();
    assert_eq!(met, 11, "stopped at the first tombstone past 10");
    assert!(
        partition.rows.is_empty(),
        "the live row after them was not read"
    );
    let (raw, met) = engine.read_raw_counted(&read, NOW, 10).unwrap();
    assert_eq!((met, raw.data.rows.len()), (11, 11));
    let (page, met) = engine.scan_counted(&full_scan(TABLE), NOW, 10).unwrap();
    assert_eq!(met, 11);
    assert!(page.partitions.iter().all(|p| p.rows.is_empty()));
    // Without a limit, everything is read and counted.
    let (partition, met) = engine.read_partition_counted(&read, NOW, u64::MAX).unwrap();
    assert_eq!((met, partition.rows.len()), (1000, 1));
}
