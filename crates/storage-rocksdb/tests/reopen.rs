//! Table options across restarts. The RocksDB backend keeps them in its
//! table options file, so column families reopen with their own options
//! before the schema is loaded; the schema layer then calls `create_table`
//! again, which keeps the data and applies the options given then.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::api::{
    CompactionStyle, Compression, Engine, Mutation, RowUpdate, TableSpec,
};
use rocksandra_storage::cell::{Cell, ColumnId, DeletionTime};
use rocksandra_storage::kv::{KeyRange, KvStore};
use rocksandra_storage::testkit::{clustering, full_read, pk, tempdir, test_table};
use rocksandra_storage::KvEngine;
use rocksandra_storage_rocksdb::{open_engine, RocksConfig, RocksStore};

const WRITTEN_AT: LocalTime = LocalTime(1_700_000_000);

fn open(dir: &Path, now: LocalTime) -> KvEngine<RocksStore> {
    let config = RocksConfig {
        block_cache_bytes: 4 << 20,
        ..Default::default()
    };
    open_engine(dir, config, Arc::new(move || now)).expect("open")
}

/// Every stored entry of the table, as RocksDB returns it.
fn entry_count(engine: &KvEngine<RocksStore>, spec: &TableSpec) -> usize {
    let mut count = 0;
    let everything = KeyRange {
        start: Vec::new(),
        end: None,
    };
    engine
        .store()
        .scan(spec.id, &everything, false, &mut |_, _| {
            count += 1;
            ControlFlow::Continue(())
        })
        .expect("scan");
    count
}

fn compact_fully(engine: &KvEngine<RocksStore>, spec: &TableSpec) {
    engine.flush().expect("flush");
    engine.compact(spec.id, WRITTEN_AT).expect("compact");
}

fn row_values(engine: &KvEngine<RocksStore>, spec: &TableSpec, now: LocalTime) -> Vec<Vec<u8>> {
    let partition = engine
        .read_partition(&full_read(spec.id, pk("p")), now)
        .expect("read");
    partition
        .rows
        .iter()
        .flat_map(|r| r.content.cells.iter().map(|c| c.value.clone()))
        .collect()
}

#[test]
fn create_table_after_reopen_keeps_data_and_applies_gc_grace() {
    let dir = tempdir("rocks-reopen");
    let spec = test_table(9);
    let kept_before;
    {
        let engine = open(&dir, WRITTEN_AT);
        engine.create_table(spec.clone()).expect("create");
        let mut m = Mutation::new(spec.id, pk("p"));
        let live = RowUpdate {
            cells: vec![Cell::live(ColumnId(1), 10, b"alive".to_vec())],
            ..Default::default()
        };
        let deleted = RowUpdate {
            cells: vec![Cell::live(ColumnId(1), 10, b"deleted".to_vec())],
            deletion: Some(DeletionTime::new(20, WRITTEN_AT.0 - 100)),
            ..Default::default()
        };
        m.rows.push((clustering(1, "a"), live));
        m.rows.push((clustering(2, "b"), deleted));
        engine.write(&[m], WRITTEN_AT).expect("write");
        compact_fully(&engine, &spec);
        // Default gc_grace (ten days): the row tombstone stays.
        kept_before = entry_count(&engine, &spec);
        assert_eq!(
            row_values(&engine, &spec, WRITTEN_AT),
            vec![b"alive".to_vec()]
        );
    }

    let later = LocalTime(WRITTEN_AT.0 + 10);
    let engine = open(&dir, later);
    let mut no_grace = spec.clone();
    no_grace.options.gc_grace_seconds = 0;
    engine
        .create_table(no_grace.clone())
        .expect("create_table on an existing column family");
    assert_eq!(
        row_values(&engine, &no_grace, later),
        vec![b"alive".to_vec()],
        "data written before the restart is readable"
    );
    assert_eq!(entry_count(&engine, &no_grace), kept_before);
    compact_fully(&engine, &no_grace);
    assert_eq!(
        entry_count(&engine, &no_grace),
        kept_before - 1,
        "with gc_grace_seconds = 0 compaction purges the deleted row"
    );
    assert_eq!(
        row_values(&engine, &no_grace, later),
        vec![b"alive".to_vec()]
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}

/// The options RocksDB itself reports using for a column family, from the
/// newest `OPTIONS-*` file it wrote (when opening, or after an ALTER).
fn rocksdb_cf_options(dir: &Path, cf: &str) -> String {
    rocksdb_options_section(dir, &format!("[CFOptions \"{cf}\"]"))
}

/// The newest `OPTIONS-*` file RocksDB wrote in `dir`.
fn newest_options_file(dir: &Path) -> String {
    let newest = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("OPTIONS-") && !n.ends_with(".dbtmp"))
        })
        .max()
        .expect("an OPTIONS file");
    std::fs::read_to_string(newest).expect("read OPTIONS")
}

fn rocksdb_options_section(dir: &Path, header: &str) -> String {
    let text = newest_options_file(dir);
    let start = text.find(header).expect("the section");
    let section = &text[start + header.len()..];
    let end = section.find("\n[").unwrap_or(section.len());
    section[..end].to_string()
}

#[test]
fn column_families_reopen_with_their_own_options_before_the_schema_loads() {
    let dir = tempdir("rocks-reopen-options");
    let mut spec = test_table(11);
    spec.options.gc_grace_seconds = 0;
    spec.options.compaction = CompactionStyle::Leveled;
    spec.options.compression = Compression::Zstd;
    {
        let engine = open(&dir, WRITTEN_AT);
        engine.create_table(spec.clone()).expect("create");
        let mut m = Mutation::new(spec.id, pk("p"));
        m.rows.push((
            clustering(1, "a"),
            RowUpdate {
                cells: vec![Cell::live(ColumnId(1), 10, b"alive".to_vec())],
                ..Default::default()
            },
        ));
        m.rows.push((
            clustering(2, "b"),
            RowUpdate {
                deletion: Some(DeletionTime::new(20, WRITTEN_AT.0)),
                ..Default::default()
            },
        ));
        engine.write(&[m], WRITTEN_AT).expect("write");
        engine.flush().expect("flush");
    }
    let later = LocalTime(WRITTEN_AT.0 + 10);
    let engine = open(&dir, later);
    let cf = rocksdb_cf_options(&dir, "t11");
    assert!(
        cf.contains("compaction_style=kCompactionStyleLevel"),
        "{cf}"
    );
    assert!(cf.contains("compression=kZSTD"), "{cf}");
    // No create_table yet: the store compacts with the stored gc_grace (0).
    assert_eq!(entry_count(&engine, &spec), 2);
    for _ in 0..2 {
        engine.store().compact(spec.id).expect("compact");
    }
    assert_eq!(
        entry_count(&engine, &spec),
        1,
        "gc_grace_seconds = 0 from the table options file purged the row tombstone"
    );
    // ALTER to a different compaction keeps the creation style, applies the rest.
    engine.create_table(spec.clone()).expect("register");
    let mut altered = spec.clone();
    altered.options.compaction = CompactionStyle::Universal;
    altered.options.compression = Compression::None;
    engine.alter_table(altered).expect("alter");
    drop(engine);
    let engine = open(&dir, later);
    let cf = rocksdb_cf_options(&dir, "t11");
    assert!(
        cf.contains("compaction_style=kCompactionStyleLevel"),
        "{cf}"
    );
    assert!(cf.contains("compression=kNoCompression"), "{cf}");
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_chunk_length_sizes_data_blocks_at_creation_alter_and_reopen() {
    let dir = tempdir("rocks-block-size");
    let block_size = |dir: &Path| {
        let section = rocksdb_options_section(dir, "[TableOptions/BlockBasedTable \"t12\"]");
        section
            .lines()
            .find_map(|l| l.trim().strip_prefix("block_size="))
            .expect("block_size line")
            .to_string()
    };
    let mut spec = test_table(12);
    spec.options.block_bytes = 64 * 1024;
    {
        let engine = open(&dir, WRITTEN_AT);
        engine.create_table(spec.clone()).expect("create");
        assert_eq!(block_size(&dir), "65536");
        let mut altered = spec.clone();
        altered.options.block_bytes = 2 * 1024;
        engine.alter_table(altered).expect("alter");
        assert_eq!(block_size(&dir), "2048", "applied at ALTER");
        write_one_row(&engine, &spec, b"kept");
        engine.flush().expect("flush");
    }
    let engine = open(&dir, WRITTEN_AT);
    assert_eq!(block_size(&dir), "2048", "kept across a restart");
    engine.create_table(spec.clone()).expect("register");
    assert_eq!(
        block_size(&dir),
        "65536",
        "the schema's options at start win"
    );
    assert_eq!(
        row_values(&engine, &spec, WRITTEN_AT),
        vec![b"kept".to_vec()]
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
}

/// The DB-wide options RocksDB reports using, from its newest `OPTIONS-*` file.
fn rocksdb_db_options(dir: &Path) -> String {
    let text = newest_options_file(dir);
    let start = text.find("[DBOptions]").expect("DBOptions section");
    let section = &text[start..];
    let end = section[1..].find("\n[").map_or(section.len(), |e| e + 1);
    section[..end].to_string()
}

#[test]
fn wal_dir_rate_limit_and_background_jobs_reach_rocksdb() {
    let root = tempdir("rocks-wal-dir");
    let (dir, wal) = (root.join("db"), root.join("wal"));
    let config = RocksConfig {
        block_cache_bytes: 4 << 20,
        write_buffer_bytes_max: 32 << 20,
        background_jobs: rocksandra_storage_rocksdb::background_jobs_for_compactions(3),
        wal_dir: Some(wal.clone()),
        write_rate_limit_bytes: Some(16 << 20),
        ..Default::default()
    };
    let engine = open_engine(&dir, config, Arc::new(|| WRITTEN_AT)).expect("open");
    let options = rocksdb_db_options(&dir);
    assert!(
        options.contains(&format!("wal_dir={}", wal.display())),
        "{options}"
    );
    assert!(options.contains("max_background_jobs=4"), "{options}");
    assert!(
        options.contains("db_write_buffer_size=33554432"),
        "{options}"
    );
    let in_dir = |d: &Path| {
        std::fs::read_dir(d)
            .expect("read dir")
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".log"))
    };
    assert!(in_dir(&wal), "the write-ahead log is in wal_dir");
    assert!(!in_dir(&dir), "and not in the DB directory");
    drop(engine);
    let _ = std::fs::remove_dir_all(root);
}

fn write_one_row(engine: &KvEngine<RocksStore>, spec: &TableSpec, value: &[u8]) {
    let mut m = Mutation::new(spec.id, pk("p"));
    m.rows.push((
        clustering(1, "a"),
        RowUpdate {
            cells: vec![Cell::live(ColumnId(1), 10, value.to_vec())],
            ..Default::default()
        },
    ));
    engine.write(&[m], WRITTEN_AT).expect("write");
}

fn open_with_wal(dir: &Path, wal: Option<&Path>) -> Result<KvEngine<RocksStore>, String> {
    let config = RocksConfig {
        block_cache_bytes: 4 << 20,
        wal_dir: wal.map(Path::to_path_buf),
        ..Default::default()
    };
    open_engine(dir, config, Arc::new(|| WRITTEN_AT)).map_err(|e| e.to_string())
}

/// RocksDB reads only the log directory it is given: moving it while the
/// old log holds writes is refused, after a flush it is allowed.
#[test]
fn moving_the_wal_dir_needs_a_flush_first() {
    let root = tempdir("rocks-wal-move");
    let (dir, wal) = (root.join("db"), root.join("wal"));
    let spec = test_table(12);
    {
        let engine = open_with_wal(&dir, None).expect("open");
        engine.create_table(spec.clone()).expect("create");
        write_one_row(&engine, &spec, b"unflushed");
    }
    let refused = open_with_wal(&dir, Some(&wal)).err().expect("refused");
    assert!(
        refused.contains("holds writes not yet flushed"),
        "{refused}"
    );
    assert!(refused.contains(&wal.display().to_string()), "{refused}");
    {
        let engine = open_with_wal(&dir, None).expect("the old place still opens");
        engine.create_table(spec.clone()).expect("create");
        engine.flush().expect("flush");
    }
    {
        let engine = open_with_wal(&dir, Some(&wal)).expect("opens after a flush");
        engine.create_table(spec.clone()).expect("create");
        assert_eq!(
            row_values(&engine, &spec, WRITTEN_AT),
            vec![b"unflushed".to_vec()]
        );
        write_one_row(&engine, &spec, b"in the new log");
    }
    let back = open_with_wal(&dir, None)
        .err()
        .expect("moving back is checked too");
    assert!(
        back.contains(&format!("{} holds writes", wal.display())),
        "{back}"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_compaction_throughput_changes_while_the_store_runs() {
    let root = tempdir("rocks-rate-limit");
    let engine = open_engine(&root, RocksConfig::default(), Arc::new(|| WRITTEN_AT)).expect("open");
    let spec = test_table(1);
    engine.create_table(spec.clone()).expect("create");
    // Opened unthrottled (no compaction_throughput), as by default.
    assert_eq!(engine.stats().write_rate_limit_bytes, None);
    assert!(engine.set_compaction_throughput(Some(8 << 20)));
    assert_eq!(engine.stats().write_rate_limit_bytes, Some(8 << 20));
    // Flushes write through the limiter: it counts their bytes.
    let before = engine.stats().rate_limited_bytes;
    // Bytes that do not compress.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let value: Vec<u8> = (0..64 << 10)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    write_one_row(&engine, &spec, &value);
    engine.flush().expect("flush");
    let through = engine.stats().rate_limited_bytes - before;
    assert!(through >= 64 << 10, "{through} bytes through the limiter");
    assert!(engine.set_compaction_throughput(None));
    assert_eq!(engine.stats().write_rate_limit_bytes, None);
    drop(engine);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_latest_sequence_number_survives_a_reopen_and_grows_with_writes() {
    let dir = tempdir("rocks-sequence");
    let spec = test_table(11);
    let write = |engine: &KvEngine<RocksStore>, value: &[u8]| {
        let mut m = Mutation::new(spec.id, pk("p"));
        let row = RowUpdate {
            cells: vec![Cell::live(ColumnId(1), 10, value.to_vec())],
            ..Default::default()
        };
        m.rows.push((clustering(1, "c"), row));
        engine.write(&[m], WRITTEN_AT).expect("write");
    };
    let at_stop = {
        let engine = open(&dir, WRITTEN_AT);
        engine.create_table(spec.clone()).expect("create");
        let before = engine.latest_sequence_number().expect("a sequence number");
        write(&engine, b"one");
        let after = engine.latest_sequence_number().expect("a sequence number");
        assert!(after > before, "{after} after a write, {before} before");
        engine.flush().expect("flush");
        after
    };
    let engine = open(&dir, WRITTEN_AT);
    assert_eq!(engine.latest_sequence_number(), Some(at_stop));
    engine.create_table(spec.clone()).expect("create again");
    assert_eq!(engine.latest_sequence_number(), Some(at_stop));
    write(&engine, b"two");
    assert!(engine.latest_sequence_number() > Some(at_stop));
}
