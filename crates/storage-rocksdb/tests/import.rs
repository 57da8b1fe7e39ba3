//! `Engine::import` on RocksDB: a table of a snapshot (a checkpoint of
//! the whole store) loaded into a live table with another id and other
//! column ids; imported cells reconcile with the live ones by timestamp,
//! the snapshot's files are left exactly as they were, and only the
//! partitions of the ranges asked for are loaded.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rocksandra_data::{LocalTime, Token};
use rocksandra_storage::api::{Engine, Mutation, RowUpdate, StorageError, TokenRange};
use rocksandra_storage::cell::{Cell, ColumnId, DeletionTime};
use rocksandra_storage::import::{ColumnMap, ImportSource};
use rocksandra_storage::testkit::{clustering, full_read, pk, tempdir, test_table};
use rocksandra_storage::KvEngine;
use rocksandra_storage_rocksdb::{open_engine, RocksConfig, RocksStore};

const NOW: LocalTime = LocalTime(1_700_000_000);

fn open(dir: &Path) -> KvEngine<RocksStore> {
    let config = RocksConfig {
        block_cache_bytes: 4 << 20,
        ..Default::default()
    };
    open_engine(dir, config, Arc::new(|| NOW)).expect("open")
}

fn row(cells: &[(u32, i64, &str)]) -> RowUpdate {
    RowUpdate {
        cells: cells
            .iter()
            .map(|(c, ts, v)| Cell::live(ColumnId(*c), *ts, v.as_bytes().to_vec()))
            .collect(),
        ..Default::default()
    }
}

/// (clustering, column, value) of every live cell of a partition.
fn cells(engine: &KvEngine<RocksStore>, table: u64, key: &str) -> Vec<(i32, u32, String)> {
    let partition = engine
        .read_partition(&full_read(rocksandra_storage::TableId(table), pk(key)), NOW)
        .expect("read");
    let mut out = Vec::new();
    for r in &partition.rows {
        let c = i32::from_be_bytes(r.clustering[0][..4].try_into().expect("int"));
        for cell in &r.content.cells {
            let value = String::from_utf8_lossy(&cell.value).into_owned();
            out.push((c, cell.column.0, value));
        }
    }
    out
}

/// Every file of `dir` with its length and modification time.
fn files_of(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let e = e.expect("entry");
            let meta = e.metadata().expect("metadata");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, (meta.len(), meta.modified().expect("mtime")))
        })
        .collect()
}

/// Old table 9 (columns 1 and 2) snapshotted, then a new table 10 where
/// old column 1 is column 5 and old column 2 was dropped.
fn source_and_target(dir: &Path) -> (KvEngine<RocksStore>, std::path::PathBuf) {
    let engine = open(&dir.join("db"));
    engine.create_table(test_table(9)).expect("create 9");
    let mut p = Mutation::new(test_table(9).id, pk("p"));
    p.rows
        .push((clustering(1, "a"), row(&[(1, 10, "old-a"), (2, 10, "x")])));
    p.rows.push((clustering(2, "b"), row(&[(1, 10, "old-b")])));
    let mut q = Mutation::new(test_table(9).id, pk("q"));
    q.rows.push((clustering(1, "a"), row(&[(1, 10, "old-q")])));
    engine.write(&[p, q], NOW).expect("write");
    let snapshot = dir.join("snapshot");
    engine.snapshot(&snapshot).expect("snapshot");
    engine.create_table(test_table(10)).expect("create 10");
    (engine, snapshot)
}

fn source(snapshot: &Path, ranges: Option<Vec<TokenRange>>) -> ImportSource {
    ImportSource {
        dir: snapshot.to_path_buf(),
        table: test_table(9).id,
        columns: ColumnMap::new(vec![(ColumnId(1), ColumnId(5))]).expect("map"),
        ranges,
    }
}

#[test]
fn imported_cells_reconcile_and_take_the_live_column_ids() {
    let dir = tempdir("rocks-import");
    let (engine, snapshot) = source_and_target(&dir);
    // Newer than the snapshot: a value of row a, and a deletion of q.
    let mut p = Mutation::new(test_table(10).id, pk("p"));
    p.rows.push((clustering(1, "a"), row(&[(5, 20, "newer")])));
    let mut q = Mutation::new(test_table(10).id, pk("q"));
    q.partition_deletion = Some(DeletionTime::new(15, NOW.0));
    engine.write(&[p, q], NOW).expect("write");
    let before = files_of(&snapshot);

    let counts = engine
        .import(
            test_table(10).id,
            &source(&snapshot, None),
            &dir.join("work"),
        )
        .expect("import");

    assert_eq!(
        cells(&engine, 10, "p"),
        vec![(1, 5, "newer".into()), (2, 5, "old-b".into())],
        "the newer live value wins, the dropped column is left out"
    );
    assert_eq!(cells(&engine, 10, "q"), vec![], "the newer deletion wins");
    assert_eq!((counts.entries, counts.loaded), (3, 3));
    assert_eq!(files_of(&snapshot), before, "the snapshot is unchanged");
    assert!(!dir.join("work").exists(), "the work directory is removed");
    assert_eq!(
        cells(&engine, 9, "p").len(),
        3,
        "the old table is untouched"
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn only_the_partitions_of_the_ranges_asked_for_are_loaded() {
    let dir = tempdir("rocks-import-ranges");
    let (engine, snapshot) = source_and_target(&dir);
    let q = pk("q").token;
    let only_q = TokenRange {
        start_exclusive: Token(q.0 - 1),
        end_inclusive: q,
    };
    let counts = engine
        .import(
            test_table(10).id,
            &source(&snapshot, Some(vec![only_q])),
            &dir.join("work"),
        )
        .expect("import");
    assert_eq!(cells(&engine, 10, "p"), vec![]);
    assert_eq!(cells(&engine, 10, "q"), vec![(1, 5, "old-q".into())]);
    assert_eq!((counts.entries, counts.loaded), (3, 1));
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_directory_without_a_snapshot_is_refused() {
    let dir = tempdir("rocks-import-none");
    let (engine, _) = source_and_target(&dir);
    std::fs::create_dir_all(dir.join("empty")).expect("mkdir");
    let error = engine
        .import(
            test_table(10).id,
            &source(&dir.join("empty"), None),
            &dir.join("work"),
        )
        .expect_err("not a snapshot");
    assert!(
        matches!(&error, StorageError::Invalid(m) if m.contains("not a snapshot directory")),
        "{error}"
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}
