//! Stored secondary indexes over the in-memory engine: CQL in, rows out.
//!
//! The oracle for most tests is a twin table without indexes: every query
//! answered from an index must return what the same query returns on the
//! twin with ALLOW FILTERING (a filtered scan), page for page. A counting
//! engine shows that indexed queries read the index instead of scanning,
//! and the index's own storage is inspected to see stale entries go.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use rocksandra_data::types::CqlType;
use rocksandra_data::{LocalTime, Value};
mod common;
use common::node;
use rocksandra_query::{Env, Executor, Request};
use rocksandra_storage::api::{
    Partition, PartitionKey, PartitionRead, RangeScan, RawPartition, ScanPage, StorageStats,
    TableSpec, TokenRange,
};
use rocksandra_storage::cell::LivenessInfo;
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::{Engine, KvEngine, Mutation, RowUpdate, Slice, TableId};
use rocksandra_wire::{ColumnsMetadata, ResultBody};

/// The in-memory engine, counting the reads that reach it.
struct Counting {
    inner: KvEngine<MemoryStore>,
    scans: AtomicUsize,
    partition_reads: AtomicUsize,
}

impl Engine for Counting {
    fn create_table(&self, spec: TableSpec) -> rocksandra_storage::Result<()> {
        self.inner.create_table(spec)
    }
    fn alter_table(&self, spec: TableSpec) -> rocksandra_storage::Result<()> {
        self.inner.alter_table(spec)
    }
    fn drop_table(&self, table: TableId) -> rocksandra_storage::Result<()> {
        self.inner.drop_table(table)
    }
    fn truncate(&self, table: TableId) -> rocksandra_storage::Result<()> {
        self.inner.truncate(table)
    }
    fn commit_deferred(&self) {
        self.inner.commit_deferred()
    }
    fn write(&self, mutations: &[Mutation], now: LocalTime) -> rocksandra_storage::Result<()> {
        self.inner.write(mutations, now)
    }
    fn read_partition(
        &self,
        read: &PartitionRead,
        now: LocalTime,
    ) -> rocksandra_storage::Result<Partition> {
        self.partition_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read_partition(read, now)
    }
    fn read_raw(
        &self,
        read: &PartitionRead,
        now: LocalTime,
    ) -> rocksandra_storage::Result<RawPartition> {
        self.inner.read_raw(read, now)
    }
    fn scan(&self, scan: &RangeScan, now: LocalTime) -> rocksandra_storage::Result<ScanPage> {
        self.scans.fetch_add(1, Ordering::SeqCst);
        self.inner.scan(scan, now)
    }
    fn stream_out(
        &self,
        table: TableId,
        range: TokenRange,
        dir: &Path,
    ) -> rocksandra_storage::Result<Vec<PathBuf>> {
        self.inner.stream_out(table, range, dir)
    }
    fn stream_in(&self, table: TableId, files: &[PathBuf]) -> rocksandra_storage::Result<()> {
        self.inner.stream_in(table, files)
    }
    fn partition_keys(
        &self,
        table: TableId,
        range: TokenRange,
        after: Option<&PartitionKey>,
        limit: usize,
    ) -> rocksandra_storage::Result<Vec<PartitionKey>> {
        self.inner.partition_keys(table, range, after, limit)
    }
    fn cleanup(&self, table: TableId, keep: &[TokenRange]) -> rocksandra_storage::Result<()> {
        self.inner.cleanup(table, keep)
    }
    fn snapshot(&self, dir: &Path) -> rocksandra_storage::Result<()> {
        self.inner.snapshot(dir)
    }
    fn flush(&self) -> rocksandra_storage::Result<()> {
        self.inner.flush()
    }
    fn compact(&self, table: TableId, now: LocalTime) -> rocksandra_storage::Result<()> {
        self.inner.compact(table, now)
    }
    fn purge_tombstones(&self, now: LocalTime) -> rocksandra_storage::Result<usize> {
        self.inner.purge_tombstones(now)
    }
    fn stats(&self) -> StorageStats {
        self.inner.stats()
    }
}

struct Harness {
    executor: Executor,
    engine: Arc<Counting>,
    clock: Arc<AtomicI64>,
}

const START_MICROS: i64 = 1_700_000_000_000_000;

fn harness() -> Harness {
    let clock = Arc::new(AtomicI64::new(START_MICROS));
    let engine = counting_engine(&clock);
    let mut h = open(engine, None, clock);
    h.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    h
}

fn counting_engine(clock: &Arc<AtomicI64>) -> Arc<Counting> {
    let c = clock.clone();
    let storage_clock: rocksandra_storage::memory::Clock =
        Arc::new(move || LocalTime(c.load(Ordering::SeqCst) / 1_000_000));
    Arc::new(Counting {
        inner: KvEngine::new(MemoryStore::new(storage_clock)),
        scans: AtomicUsize::new(0),
        partition_reads: AtomicUsize::new(0),
    })
}

fn open(engine: Arc<Counting>, dir: Option<PathBuf>, clock: Arc<AtomicI64>) -> Harness {
    let c = clock.clone();
    let counter = Arc::new(AtomicI64::new(1));
    let env = Env {
        now_micros: Arc::new(move || c.fetch_add(1, Ordering::SeqCst)),
        random: Arc::new(move || counter.fetch_add(0x9E37_79B9, Ordering::SeqCst) as u64),
    };
    Harness {
        executor: Executor::open(engine.clone(), dir, node(), env).expect("executor opens"),
        engine,
        clock,
    }
}

fn render(rows: &rocksandra_wire::Rows) -> Vec<String> {
    let ColumnsMetadata::Specs(specs) = &rows.metadata.columns else {
        panic!("no metadata");
    };
    let types: Vec<CqlType> = specs.iter().map(|s| s.cql_type.clone()).collect();
    rows.rows
        .iter()
        .map(|r| {
            r.iter()
                .zip(&types)
                .map(|(v, t)| match v {
                    None => "null".to_string(),
                    Some(b) => Value::deserialize(t, b)
                        .map(|v| v.to_cql_literal(t))
                        .unwrap_or_else(|e| format!("<{e}>")),
                })
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect()
}

impl Harness {
    fn request(&self, page_size: Option<usize>, paging_state: Option<Bytes>) -> Request {
        Request {
            keyspace: Some("ks".into()),
            page_size,
            paging_state,
            ..Request::default()
        }
    }

    /// Runs a statement: rows as `a | b` lines, or `ERROR <message>`.
    fn run(&self, cql: &str) -> String {
        match self.executor.query(cql, &self.request(None, None)) {
            Ok(outcome) => match outcome.body {
                ResultBody::Rows(rows) => render(&rows).join("\n"),
                _ => "OK".into(),
            },
            Err(e) => format!("ERROR {}", e.to_response().message),
        }
    }

    fn ok(&mut self, cql: &str) {
        assert_eq!(self.run(cql), "OK", "{cql}");
    }

    fn check(&self, cql: &str, expected: &str) {
        assert_eq!(self.run(cql), expected, "{cql}");
    }

    /// Runs a query page by page; returns every row and the page count.
    fn paged(&self, cql: &str, page_size: usize) -> (Vec<String>, usize) {
        let mut all = Vec::new();
        let mut pages = 0;
        let mut state = None;
        loop {
            let outcome = self
                .executor
                .query(cql, &self.request(Some(page_size), state.take()))
                .unwrap_or_else(|e| panic!("{cql}: {e:?}"));
            let ResultBody::Rows(rows) = outcome.body else {
                panic!("{cql}: no rows")
            };
            assert!(rows.rows.len() <= page_size, "{cql}: page too long");
            pages += 1;
            all.extend(render(&rows));
            match rows.metadata.paging_state {
                Some(next) => state = Some(next),
                None => return (all, pages),
            }
            assert!(pages < 10_000, "{cql}: paging does not end");
        }
    }

    /// `query` on the indexed table `t` returns what it returns on the
    /// unindexed twin `u` with ALLOW FILTERING, whole and page by page.
    fn same_as_scan(&self, query: &str) {
        let indexed = format!("SELECT {query}").replace("FROM ?", "FROM t");
        let scanned = if query.ends_with("ALLOW FILTERING") {
            format!("SELECT {query}")
        } else {
            format!("SELECT {query} ALLOW FILTERING")
        }
        .replace("FROM ?", "FROM u");
        let expected = self.run(&scanned);
        assert!(!expected.starts_with("ERROR"), "{scanned}: {expected}");
        let scans = self.scans();
        assert_eq!(self.run(&indexed), expected, "{indexed}");
        let expected: Vec<String> = if expected.is_empty() {
            Vec::new()
        } else {
            expected.lines().map(str::to_string).collect()
        };
        for page_size in [1, 2, 3, 7] {
            let (rows, _) = self.paged(&indexed, page_size);
            assert_eq!(rows, expected, "{indexed} in pages of {page_size}");
        }
        assert_eq!(self.scans(), scans, "{indexed} is answered from the index");
    }

    /// Runs a write on both `t` and its twin `u`.
    fn both(&mut self, cql: &str) {
        self.ok(&cql.replace(" ? ", " t "));
        self.ok(&cql.replace(" ? ", " u "));
    }

    fn scans(&self) -> usize {
        self.engine.scans.load(Ordering::SeqCst)
    }

    fn advance_seconds(&self, seconds: i64) {
        self.clock.fetch_add(seconds * 1_000_000, Ordering::SeqCst);
    }

    fn now(&self) -> LocalTime {
        LocalTime(self.clock.load(Ordering::SeqCst) / 1_000_000)
    }

    fn index_storage(&self, table: &str, index: &str) -> TableId {
        let schema = self.executor.schema();
        let table = schema.table("ks", table).expect("table");
        let index = table
            .indexes
            .iter()
            .find(|i| i.name == index)
            .expect("index");
        assert!(index.built, "{} is built", index.name);
        index.storage_id.expect("index is stored")
    }

    /// The live entries of one index value, and all stored ones (live or
    /// deleted).
    fn entries(&self, table: &str, index: &str, value: Vec<u8>) -> (usize, usize) {
        let read = PartitionRead {
            table: self.index_storage(table, index),
            partition: PartitionKey::new(value),
            slices: vec![Slice::all()],
            reversed: false,
            include_static: false,
            row_limit: 0,
        };
        let raw = self
            .engine
            .inner
            .read_raw(&read, self.now())
            .expect("raw read");
        (raw.live_rows, raw.data.rows.len())
    }
}

fn int(v: i32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

/// `t` has indexes on its regular, static and clustering columns and on
/// a partition key component; `u` is the same table without them.
fn twin_tables(h: &mut Harness) {
    for name in ["t", "u"] {
        h.ok(&format!(
            "CREATE TABLE {name} (a int, b int, c int, d int, v int, w int, s int STATIC, \
             PRIMARY KEY ((a, b), c, d))"
        ));
    }
    h.ok("CREATE INDEX t_v ON t (v)");
    h.ok("CREATE INDEX t_s ON t (s)");
    h.ok("CREATE INDEX t_d ON t (d)");
    h.ok("CREATE INDEX t_a ON t (a)");
}

const TWIN_QUERIES: &[&str] = &[
    "* FROM ? WHERE v = 1",
    "a, b, c, d, v FROM ? WHERE v = 2",
    "* FROM ? WHERE s = 1",
    "a, b, c, d, s FROM ? WHERE s = 2",
    "* FROM ? WHERE d = 1",
    "* FROM ? WHERE a = 1",
    "a, b, c FROM ? WHERE a = 2",
    "* FROM ? WHERE v = 1 AND w = 1 ALLOW FILTERING",
    "* FROM ? WHERE v = 1 LIMIT 3",
    "* FROM ? WHERE v = 1 PER PARTITION LIMIT 1",
    "* FROM ? WHERE s = 1 PER PARTITION LIMIT 2",
    "* FROM ? WHERE a = 1 PER PARTITION LIMIT 1 LIMIT 5",
    "count(*) FROM ? WHERE v = 1",
    "* FROM ? WHERE token(a, b) > 0 AND v = 1",
    "* FROM ? WHERE c = 1 AND v = 2 ALLOW FILTERING",
    "* FROM ? WHERE a = 1 AND d = 2 ALLOW FILTERING",
    "* FROM ? WHERE s = 2 AND v = 1 ALLOW FILTERING",
];

#[test]
fn maintenance_under_updates_and_deletes_matches_a_scan() {
    let mut h = harness();
    twin_tables(&mut h);
    let check_all = |h: &Harness| {
        for q in TWIN_QUERIES {
            h.same_as_scan(q);
        }
    };
    for a in 1..=3 {
        for b in 1..=2 {
            h.both(&format!(
                "INSERT INTO ? (a, b, s) VALUES ({a}, {b}, {})",
                (a + b) % 2 + 1
            ));
            for c in 1..=3 {
                for d in 1..=2 {
                    let v = (a + c + d) % 3;
                    h.both(&format!(
                        "INSERT INTO ? (a, b, c, d, v, w) VALUES ({a}, {b}, {c}, {d}, {v}, {})",
                        c % 2
                    ));
                }
            }
        }
    }
    // A partition with only static data.
    h.both("INSERT INTO ? (a, b, s) VALUES (1, 9, 1)");
    check_all(&h);
    // Values move in and out.
    h.both("UPDATE ? SET v = 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1");
    h.both("UPDATE ? SET v = 2 WHERE a = 2 AND b = 1 AND c = 2 AND d = 2");
    h.both("UPDATE ? SET s = 2 WHERE a = 1 AND b = 2");
    check_all(&h);
    // Deletions of a cell, a row, a range, a static cell and a partition.
    h.both("DELETE v FROM ? WHERE a = 3 AND b = 1 AND c = 1 AND d = 2");
    h.both("DELETE FROM ? WHERE a = 3 AND b = 2 AND c = 2 AND d = 1");
    h.both("DELETE FROM ? WHERE a = 2 AND b = 2 AND c >= 2");
    h.both("DELETE s FROM ? WHERE a = 2 AND b = 1");
    h.both("DELETE FROM ? WHERE a = 1 AND b = 1");
    check_all(&h);
    // An UPDATE creates a row without a marker; deleting its only cell
    // removes the row again.
    h.both("UPDATE ? SET v = 1 WHERE a = 5 AND b = 5 AND c = 5 AND d = 1");
    check_all(&h);
    h.both("DELETE v FROM ? WHERE a = 5 AND b = 5 AND c = 5 AND d = 1");
    check_all(&h);
    // Re-inserting what was deleted brings it back.
    h.both("INSERT INTO ? (a, b, c, d, v) VALUES (1, 1, 1, 1, 1)");
    h.both("INSERT INTO ? (a, b, s) VALUES (2, 1, 1)");
    check_all(&h);
}

#[test]
fn indexed_queries_read_the_index_not_the_table() {
    let mut h = harness();
    h.ok("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))");
    h.ok("CREATE INDEX t_v ON t (v)");
    for k in 0..200 {
        h.ok(&format!(
            "INSERT INTO t (k, c, v) VALUES ({k}, 0, {})",
            k % 50
        ));
    }
    let scans = h.scans();
    let reads = h.engine.partition_reads.load(Ordering::SeqCst);
    // Token order, as a scan returns the partitions.
    let mut keys = [7, 57, 107, 157];
    keys.sort_by_key(|k| rocksandra_data::Token::murmur3(&int(*k)));
    let expected: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    h.check("SELECT k FROM t WHERE v = 7", &expected.join("\n"));
    assert_eq!(h.scans(), scans, "no scan of the table");
    let read = h.engine.partition_reads.load(Ordering::SeqCst) - reads;
    // One read of the index partition, one per base partition found.
    assert_eq!(read, 1 + 4, "partitions read");
    // With ALLOW FILTERING on an unindexed column the table is scanned.
    h.run("SELECT k FROM t WHERE c = 0 AND k > 0 ALLOW FILTERING");
    assert!(h.scans() > scans);
}

#[test]
fn collection_indexes_follow_element_changes() {
    let mut h = harness();
    for name in ["t", "u"] {
        h.ok(&format!(
            "CREATE TABLE {name} (k int PRIMARY KEY, l list<int>, st set<text>, m map<text, int>, \
             mk map<text, int>, me map<text, int>)"
        ));
    }
    h.ok("CREATE INDEX t_l ON t (l)");
    h.ok("CREATE INDEX t_st ON t (st)");
    h.ok("CREATE INDEX t_m ON t (values(m))");
    h.ok("CREATE INDEX t_mk ON t (keys(mk))");
    h.ok("CREATE INDEX t_me ON t (entries(me))");
    let queries = [
        "k FROM ? WHERE l CONTAINS 1",
        "k FROM ? WHERE l CONTAINS 2",
        "k FROM ? WHERE st CONTAINS 'a'",
        "k FROM ? WHERE m CONTAINS 1",
        "k FROM ? WHERE mk CONTAINS KEY 'x'",
        "k FROM ? WHERE me['x'] = 1",
        "k FROM ? WHERE me['y'] = 2",
    ];
    let check_all = |h: &Harness| {
        for q in queries {
            h.same_as_scan(q);
        }
    };
    for k in 0..6 {
        h.both(&format!(
            "INSERT INTO ? (k, l, st, m, mk, me) VALUES ({k}, [1, {k}, 1], {{'a', 'b{k}'}}, \
             {{'p': {}, 'q': 1}}, {{'x': {k}}}, {{'x': {}, 'y': 2}})",
            k % 2,
            k % 3
        ));
    }
    check_all(&h);
    h.both("UPDATE ? SET l = l - [1] WHERE k = 0");
    h.both("UPDATE ? SET l[0] = 7 WHERE k = 1");
    h.both("UPDATE ? SET st = st - {'a'} WHERE k = 2");
    h.both("UPDATE ? SET m['q'] = 5 WHERE k = 3");
    h.both("DELETE mk['x'] FROM ? WHERE k = 4");
    h.both("UPDATE ? SET me['x'] = 1 WHERE k = 5");
    h.both("UPDATE ? SET me = {'y': 2} WHERE k = 3");
    h.both("UPDATE ? SET st = {'z'} WHERE k = 4");
    check_all(&h);
    // A list holding the value twice answers once; removing one of the
    // two leaves the row found.
    h.both("INSERT INTO ? (k, l) VALUES (10, [3, 3])");
    h.same_as_scan("k FROM ? WHERE l CONTAINS 3");
    h.both("DELETE l[0] FROM ? WHERE k = 10");
    h.same_as_scan("k FROM ? WHERE l CONTAINS 3");
}

#[test]
fn ttl_expires_entries_with_the_data() {
    let mut h = harness();
    for name in ["t", "u"] {
        h.ok(&format!(
            "CREATE TABLE {name} (k int, c int, v int, s int STATIC, PRIMARY KEY (k, c))"
        ));
    }
    h.ok("CREATE INDEX t_v ON t (v)");
    h.ok("CREATE INDEX t_c ON t (c)");
    h.ok("CREATE INDEX t_s ON t (s)");
    h.both("INSERT INTO ? (k, c, v) VALUES (1, 1, 1) USING TTL 10");
    h.both("INSERT INTO ? (k, c, v) VALUES (2, 1, 1)");
    h.both("UPDATE ? USING TTL 20 SET v = 1 WHERE k = 3 AND c = 1");
    h.both("INSERT INTO ? (k, c, v) VALUES (4, 1, 1)");
    h.both("UPDATE ? USING TTL 10 SET v = 2 WHERE k = 4 AND c = 1");
    h.both("UPDATE ? USING TTL 10 SET s = 5 WHERE k = 5");
    let queries = [
        "k, c, v FROM ? WHERE v = 1",
        "k, c, v FROM ? WHERE v = 2",
        "k, c FROM ? WHERE c = 1",
        "k, s FROM ? WHERE s = 5",
    ];
    for q in queries {
        h.same_as_scan(q);
    }
    h.check("SELECT k FROM t WHERE v = 1", "1\n2\n3");
    h.advance_seconds(11);
    for q in queries {
        h.same_as_scan(q);
    }
    // Row 4's v = 2 expired: v is null, and the row (inserted with a
    // marker) is still there for the clustering index.
    h.check("SELECT k FROM t WHERE v = 1", "2\n3");
    h.check("SELECT k FROM t WHERE c = 1", "2\n4\n3");
    h.advance_seconds(10);
    for q in queries {
        h.same_as_scan(q);
    }
    h.check("SELECT k FROM t WHERE c = 1", "2\n4");
    // Expired entries are gone without a tombstone.
    assert_eq!(h.entries("t", "t_v", int(1)).0, 1);
}

#[test]
fn stale_entries_are_removed_and_rewrites_come_back() {
    let mut h = harness();
    h.ok("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))");
    h.ok("CREATE INDEX t_v ON t (v)");
    h.ok("CREATE INDEX t_c ON t (c)");
    for k in 0..4 {
        h.ok(&format!(
            "INSERT INTO t (k, c, v) VALUES ({k}, 1, 1) USING TIMESTAMP 10"
        ));
    }
    assert_eq!(h.entries("t", "t_v", int(1)), (4, 4));
    h.ok("UPDATE t USING TIMESTAMP 20 SET v = 2 WHERE k = 0 AND c = 1");
    h.ok("DELETE FROM t USING TIMESTAMP 20 WHERE k = 1 AND c = 1");
    h.ok("DELETE FROM t USING TIMESTAMP 20 WHERE k = 2");
    // Deletes wrote nothing to the index: the entries are still live.
    assert_eq!(h.entries("t", "t_v", int(1)), (4, 4));
    h.check("SELECT k FROM t WHERE v = 1", "3");
    // The query found three stale entries and deleted them.
    assert_eq!(h.entries("t", "t_v", int(1)), (1, 4));
    // The key-column index copied the row and partition deletions.
    h.check("SELECT k FROM t WHERE c = 1", "0\n3");
    assert_eq!(h.entries("t", "t_c", int(1)).0, 2);
    // Writes newer than the deletions are found again; an older one stays
    // shadowed in the table and in the index alike.
    h.ok("INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 30");
    h.ok("UPDATE t USING TIMESTAMP 15 SET v = 1 WHERE k = 2 AND c = 1");
    h.ok("UPDATE t USING TIMESTAMP 30 SET v = 1 WHERE k = 0 AND c = 1");
    h.check("SELECT k FROM t WHERE v = 1", "1\n0\n3");
    h.check("SELECT k FROM t WHERE c = 1", "1\n0\n3");
    h.check("SELECT k, v FROM t WHERE k = 2 ALLOW FILTERING", "");
}

/// In a cluster a reader can see an entry before the row's replicas have
/// the write it came from. The entry must then be skipped but kept: a
/// tombstone dated by the older base data cannot shadow it, and none is
/// written.
#[test]
fn an_entry_ahead_of_its_row_is_skipped_not_deleted() {
    let mut h = harness();
    h.ok("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))");
    h.ok("CREATE INDEX t_v ON t (v)");
    h.ok("INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 10");
    // The entry of `UPDATE t USING TIMESTAMP 20 SET v = 2 ...` arrives
    // alone.
    let storage = h.index_storage("t", "t_v");
    let partition = PartitionKey::new(int(1));
    let mut entry = Mutation::new(storage, PartitionKey::new(int(2)));
    entry.rows.push((
        vec![partition.token.0.to_be_bytes().to_vec(), int(1), int(1)],
        RowUpdate {
            liveness: Some(LivenessInfo::new(20, 0, i64::MAX)),
            ..RowUpdate::default()
        },
    ));
    h.engine.write(&[entry], h.now()).expect("entry written");
    h.check("SELECT k FROM t WHERE v = 2", "");
    assert_eq!(h.entries("t", "t_v", int(2)), (1, 1), "kept, untouched");
    // The row's write lands: the entry answers.
    h.ok("UPDATE t USING TIMESTAMP 20 SET v = 2 WHERE k = 1 AND c = 1");
    h.check("SELECT k, v FROM t WHERE v = 2", "1 | 2");
    h.check("SELECT k FROM t WHERE v = 1", "");
    assert_eq!(
        h.entries("t", "t_v", int(1)),
        (0, 1),
        "the old value's entry went"
    );
}

#[test]
fn paging_resumes_inside_an_index_partition() {
    let mut h = harness();
    for name in ["t", "u"] {
        h.ok(&format!(
            "CREATE TABLE {name} (k int, c int, v int, s int STATIC, l list<int>, \
             PRIMARY KEY (k, c))"
        ));
    }
    h.ok("CREATE INDEX t_v ON t (v)");
    h.ok("CREATE INDEX t_s ON t (s)");
    h.ok("CREATE INDEX t_l ON t (l)");
    for k in 0..30 {
        h.both(&format!("INSERT INTO ? (k, s) VALUES ({k}, {})", k % 2));
        for c in 0..(k % 5) {
            h.both(&format!(
                "INSERT INTO ? (k, c, v, l) VALUES ({k}, {c}, {}, [1, {c}, 1])",
                (k + c) % 3
            ));
        }
    }
    // Some stale entries on the way, so pages also end after skipped ones.
    for k in (0..30).step_by(4) {
        h.both(&format!("DELETE FROM ? WHERE k = {k} AND c = 1"));
        h.both(&format!("UPDATE ? SET s = 7 WHERE k = {}", k + 1));
    }
    for q in [
        "k, c, v FROM ? WHERE v = 1",
        "k, c, s FROM ? WHERE s = 1",
        "k, c FROM ? WHERE l CONTAINS 1",
        "k, c FROM ? WHERE v = 0 PER PARTITION LIMIT 1",
        "k, c FROM ? WHERE s = 0 PER PARTITION LIMIT 2",
        "k, c FROM ? WHERE v = 2 LIMIT 7",
        "k, c, v FROM ? WHERE s = 1 AND v = 2 ALLOW FILTERING",
    ] {
        h.same_as_scan(q);
    }
    // Entries of one value span several storage batches (1000 entries).
    h.ok("CREATE TABLE big (k int, c int, v int, PRIMARY KEY (k, c))");
    h.ok("CREATE INDEX big_v ON big (v)");
    for k in 0..3 {
        for c in 0..800 {
            h.ok(&format!("INSERT INTO big (k, c, v) VALUES ({k}, {c}, 1)"));
        }
    }
    let (rows, pages) = h.paged("SELECT k, c FROM big WHERE v = 1", 500);
    assert_eq!((rows.len(), pages), (2400, 5));
    let (rows, _) = h.paged(
        "SELECT k, c FROM big WHERE v = 1 PER PARTITION LIMIT 900",
        700,
    );
    assert_eq!(rows.len(), 2400);
    assert_eq!(h.run("SELECT count(*) FROM big WHERE v = 1"), "2400");
}

#[test]
fn create_index_builds_over_existing_data() {
    let mut h = harness();
    h.ok("CREATE TABLE t (k int, c int, v int, s int STATIC, PRIMARY KEY (k, c))");
    for k in 0..20 {
        h.ok(&format!("INSERT INTO t (k, s) VALUES ({k}, {})", k % 3));
        for c in 0..3 {
            h.ok(&format!(
                "INSERT INTO t (k, c, v) VALUES ({k}, {c}, {})",
                (k + c) % 4
            ));
        }
    }
    h.ok("INSERT INTO t (k, c, v) VALUES (99, 0, 1) USING TTL 5");
    let expected = h.run("SELECT k, c FROM t WHERE v = 1 ALLOW FILTERING");
    let statics = h.run("SELECT k, c FROM t WHERE s = 2 ALLOW FILTERING");
    h.ok("CREATE INDEX t_v ON t (v)");
    h.ok("CREATE INDEX ON t (s)");
    let scans = h.scans();
    h.check("SELECT k, c FROM t WHERE v = 1", &expected);
    h.check("SELECT k, c FROM t WHERE s = 2", &statics);
    assert_eq!(h.scans(), scans, "answered from the index");
    // The built entry of the TTL'd row expires with it.
    h.advance_seconds(6);
    h.check(
        "SELECT k, c FROM t WHERE v = 1",
        &h.run("SELECT k, c FROM t WHERE v = 1 ALLOW FILTERING"),
    );
    // IF NOT EXISTS on a built index builds nothing and changes nothing.
    let version = h.executor.schema().version;
    h.ok("CREATE INDEX IF NOT EXISTS t_v ON t (v)");
    assert_eq!(h.executor.schema().version, version);
}

#[test]
fn index_storage_follows_the_schema() {
    let dir = std::env::temp_dir().join(format!("rocksandra-index-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let clock = Arc::new(AtomicI64::new(START_MICROS));
    let engine = counting_engine(&clock);
    let unknown = |h: &Harness, id: TableId| {
        let read = PartitionRead {
            table: id,
            partition: PartitionKey::new(int(1)),
            slices: vec![Slice::all()],
            reversed: false,
            include_static: false,
            row_limit: 0,
        };
        h.engine.read_partition(&read, h.now()).is_err()
    };
    let (v_storage, w_storage) = {
        let mut h = open(engine.clone(), Some(dir.clone()), clock.clone());
        h.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        h.ok("CREATE TABLE t (k int PRIMARY KEY, v int, w int)");
        h.ok("CREATE INDEX t_v ON t (v)");
        h.ok("CREATE INDEX t_w ON t (w)");
        h.ok("INSERT INTO t (k, v, w) VALUES (1, 1, 1)");
        (h.index_storage("t", "t_v"), h.index_storage("t", "t_w"))
    };
    // After a restart (the schema read back; the in-memory engine starts
    // empty) the index keeps its storage, is built and maintained.
    let mut h = open(counting_engine(&clock), Some(dir.clone()), clock.clone());
    assert_eq!(h.index_storage("t", "t_v"), v_storage);
    h.ok("INSERT INTO t (k, v, w) VALUES (2, 1, 2)");
    let scans = h.scans();
    h.check("SELECT k FROM t WHERE v = 1", "2");
    assert_eq!(h.scans(), scans);
    // TRUNCATE empties the index with the table.
    h.ok("TRUNCATE t");
    assert_eq!(h.entries("t", "t_v", int(1)), (0, 0));
    h.ok("INSERT INTO t (k, v, w) VALUES (3, 1, 3)");
    // DROP INDEX drops its storage (and the query needs filtering again).
    h.ok("DROP INDEX t_v");
    assert!(unknown(&h, v_storage));
    assert!(h
        .run("SELECT k FROM t WHERE v = 1")
        .starts_with("ERROR Cannot execute"));
    // A dropped column's index cannot outlive it: Cassandra refuses.
    assert!(h
        .run("ALTER TABLE t DROP w")
        .starts_with("ERROR Cannot drop column w because it has dependent secondary indexes"));
    // DROP TABLE and DROP KEYSPACE drop their indexes' storage.
    h.ok("DROP TABLE t");
    assert!(unknown(&h, w_storage));
    h.ok("CREATE TABLE t2 (k int PRIMARY KEY, v int)");
    h.ok("CREATE INDEX t2_v ON t2 (v)");
    let t2_storage = h.index_storage("t2", "t2_v");
    assert!(t2_storage.0 > w_storage.0, "ids are never reused");
    h.ok("DROP KEYSPACE ks");
    assert!(unknown(&h, t2_storage));
    drop(h);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn conditional_writes_and_batches_maintain_indexes() {
    let mut h = harness();
    h.ok("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))");
    h.ok("CREATE INDEX t_v ON t (v)");
    h.check(
        "INSERT INTO t (k, c, v) VALUES (1, 1, 1) IF NOT EXISTS",
        "true",
    );
    h.check("UPDATE t SET v = 2 WHERE k = 1 AND c = 1 IF v = 1", "true");
    h.ok("BEGIN BATCH INSERT INTO t (k, c, v) VALUES (2, 1, 2); INSERT INTO t (k, c, v) VALUES (3, 1, 2); APPLY BATCH");
    h.check("SELECT k FROM t WHERE v = 2", "1\n2\n3");
    h.check("SELECT k FROM t WHERE v = 1", "");
    let too_big = "x".repeat(70_000);
    h.ok("CREATE TABLE big (k int PRIMARY KEY, v text)");
    h.ok("CREATE INDEX big_v ON big (v)");
    assert_eq!(
        h.run(&format!("INSERT INTO big (k, v) VALUES (1, '{too_big}')")),
        "ERROR Cannot index value of size 70000 for index big_v on ks.big(v) (maximum allowed size=65535)"
    );
}

/// Paging a partition with a static row: a page that ends on the last row
/// must not be followed by the partition's static-only row (the static
/// index reads partitions this way; so does any single-partition query).
#[test]
fn paging_a_partition_adds_no_static_only_row() {
    let mut h = harness();
    h.ok("CREATE TABLE u (k int, c int, s int STATIC, PRIMARY KEY (k, c))");
    h.ok("INSERT INTO u (k, c, s) VALUES (1, 1, 1)");
    h.ok("INSERT INTO u (k, c, s) VALUES (1, 2, 1)");
    for page_size in [1, 2] {
        let (rows, _) = h.paged("SELECT k, c, s FROM u WHERE k = 1", page_size);
        assert_eq!(rows, ["1 | 1 | 1", "1 | 2 | 1"], "pages of {page_size}");
    }
}

/// A small deterministic generator (xorshift64*).
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Random writes, deletions, TTLs, collection changes, out-of-order
/// timestamps and the clock moving on, applied to an indexed table and its
/// unindexed twin: every indexed query answers as the filtered scan does.
#[test]
fn random_histories_answer_as_a_scan_does() {
    for seed in 1..=4u64 {
        let mut h = harness();
        for name in ["t", "u"] {
            h.ok(&format!(
                "CREATE TABLE {name} (k int, c int, v int, w int, s int STATIC, l list<int>, \
                 m map<int, int>, PRIMARY KEY (k, c))"
            ));
        }
        for index in ["(v)", "(s)", "(c)", "(l)", "(keys(m))", "(entries(m))"] {
            h.ok(&format!("CREATE INDEX ON t {index}"));
        }
        let mut random = Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        for step in 0..160 {
            let r = &mut random;
            let (k, c, x, y) = (r.below(6), r.below(4), r.below(3), r.below(3));
            let micros = h.clock.load(Ordering::SeqCst) + r.below(2000) as i64 - 1000;
            let ttl = match r.below(4) {
                0 => format!(" AND TTL {}", 1 + r.below(4)),
                _ => String::new(),
            };
            let using = format!("USING TIMESTAMP {micros}{ttl}");
            let delete = format!("USING TIMESTAMP {micros}");
            let statement = match r.below(16) {
                0..=2 => format!("INSERT INTO ? (k, c, v, w) VALUES ({k}, {c}, {x}, {y}) {using}"),
                3 => format!("UPDATE ? {using} SET v = {x} WHERE k = {k} AND c = {c}"),
                4 => format!("UPDATE ? {using} SET s = {x} WHERE k = {k}"),
                5 => format!("DELETE v FROM ? {delete} WHERE k = {k} AND c = {c}"),
                6 => format!("DELETE FROM ? {delete} WHERE k = {k} AND c = {c}"),
                7 => format!("DELETE FROM ? {delete} WHERE k = {k}"),
                8 => format!("DELETE FROM ? {delete} WHERE k = {k} AND c >= {c}"),
                9 => format!("DELETE s FROM ? {delete} WHERE k = {k}"),
                10 => format!("UPDATE ? {using} SET l = l + [{x}] WHERE k = {k} AND c = {c}"),
                11 => format!("UPDATE ? {using} SET l = [{x}, {y}] WHERE k = {k} AND c = {c}"),
                12 => format!("UPDATE ? {using} SET m[{x}] = {y} WHERE k = {k} AND c = {c}"),
                13 => format!("DELETE m[{x}] FROM ? {delete} WHERE k = {k} AND c = {c}"),
                14 => format!("UPDATE ? {using} SET m = {{{x}: {y}}} WHERE k = {k} AND c = {c}"),
                _ => {
                    h.advance_seconds(r.below(3) as i64);
                    continue;
                }
            };
            h.both(&statement);
            if step % 20 == 19 {
                for x in 0..3 {
                    for q in [
                        format!("k, c, v, w FROM ? WHERE v = {x}"),
                        format!("k, c, s FROM ? WHERE s = {x}"),
                        format!("k, c, v FROM ? WHERE c = {x}"),
                        format!("k, c, l FROM ? WHERE l CONTAINS {x}"),
                        format!("k, c, m FROM ? WHERE m CONTAINS KEY {x}"),
                        format!("k, c, m FROM ? WHERE m[{x}] = 1"),
                        format!("k, c FROM ? WHERE v = {x} PER PARTITION LIMIT 1"),
                    ] {
                        h.same_as_scan(&q);
                    }
                }
            }
        }
    }
}
