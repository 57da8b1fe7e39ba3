//! Data-driven executor tests: CQL in, rows (as CQL literals) or an error
//! class and message out, against the in-memory engine with a fixed clock.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use rocksandra_data::types::CqlType;
use rocksandra_data::{LocalTime, Value};
mod common;
use common::node;
use rocksandra_query::{Env, Executor, Request};
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::KvEngine;
use rocksandra_wire::{ColumnsMetadata, ResultBody, Value as Bound};

struct Harness {
    executor: Executor,
    keyspace: Option<String>,
    /// The logged-in user statements run as (PasswordAuthenticator).
    user: Option<String>,
    clock: Arc<AtomicI64>,
}

fn harness(dir: Option<std::path::PathBuf>) -> Harness {
    let clock = Arc::new(AtomicI64::new(1_700_000_000_000_000));
    let c = clock.clone();
    let storage_clock: rocksandra_storage::memory::Clock =
        Arc::new(move || LocalTime(c.load(Ordering::SeqCst) / 1_000_000));
    let engine = Arc::new(KvEngine::new(MemoryStore::new(storage_clock)));
    let c = clock.clone();
    let counter = Arc::new(AtomicI64::new(1));
    let env = Env {
        now_micros: Arc::new(move || c.fetch_add(1, Ordering::SeqCst)),
        random: Arc::new(move || counter.fetch_add(0x9E37_79B9, Ordering::SeqCst) as u64),
    };
    Harness {
        executor: Executor::open(engine, dir, node(), env).expect("executor opens"),
        keyspace: None,
        user: None,
        clock,
    }
}

impl Harness {
    /// Runs one statement; rows come back as `a | b` lines, errors as
    /// `ERROR <code> <message>`.
    fn run(&mut self, cql: &str) -> String {
        let request = Request {
            keyspace: self.keyspace.clone(),
            user: self.user.clone(),
            ..Request::default()
        };
        match self.executor.query(cql, &request) {
            Ok(outcome) => match outcome.body {
                ResultBody::Rows(rows) => {
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
                        .collect::<Vec<_>>()
                        .join("\n")
                }
                ResultBody::SetKeyspace(k) => {
                    self.keyspace = Some(k);
                    "OK".into()
                }
                _ => "OK".into(),
            },
            Err(e) => {
                let r = e.to_response();
                format!("ERROR {:#06x} {}", r.kind.code(), r.message)
            }
        }
    }

    fn check(&mut self, script: &[(&str, &str)]) {
        for (cql, expected) in script {
            let got = self.run(cql);
            assert_eq!(&got, expected, "statement: {cql}");
        }
    }
}

const SETUP: &[(&str, &str)] = &[
    (
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "OK",
    ),
    ("USE ks", "OK"),
];

#[test]
fn insert_select_update_delete() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE t (p int, c int, v text, PRIMARY KEY (p, c))", "OK"),
        ("INSERT INTO t (p, c, v) VALUES (1, 2, 'a')", "OK"),
        ("INSERT INTO t (p, c, v) VALUES (1, 1, 'b')", "OK"),
        ("INSERT INTO t (p, c, v) VALUES (2, 1, 'c')", "OK"),
        ("SELECT c, v FROM t WHERE p = 1", "1 | 'b'\n2 | 'a'"),
        ("SELECT * FROM t WHERE p = 1 AND c = 2", "1 | 2 | 'a'"),
        ("SELECT v FROM t WHERE p = 1 ORDER BY c DESC", "'a'\n'b'"),
        ("SELECT v FROM t WHERE p = 1 AND c > 1", "'a'"),
        ("UPDATE t SET v = 'z' WHERE p = 1 AND c = 1", "OK"),
        ("SELECT v FROM t WHERE p = 1 AND c = 1", "'z'"),
        ("DELETE v FROM t WHERE p = 1 AND c = 1", "OK"),
        ("SELECT c, v FROM t WHERE p = 1", "1 | null\n2 | 'a'"),
        ("DELETE FROM t WHERE p = 1", "OK"),
        ("SELECT * FROM t WHERE p = 1", ""),
        ("SELECT count(*) FROM t", "1"),
        (
            "SELECT * FROM t WHERE v = 'c'",
            "ERROR 0x2200 Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING",
        ),
        ("SELECT p FROM t WHERE v = 'c' ALLOW FILTERING", "2"),
        ("SELECT * FROM nosuch", "ERROR 0x2200 table nosuch does not exist"),
    ]);
}

#[test]
fn ddl_errors_match_cassandra() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        (
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "ERROR 0x2400 Cannot add existing keyspace \"ks\"",
        ),
        ("CREATE TABLE bad1 (k int, v int)", "ERROR 0x2200 No PRIMARY KEY specifed for table 'bad1' (exactly one required)"),
        ("CREATE TABLE bad14 (k int PRIMARY KEY, c counter, v int)", "ERROR 0x2200 Cannot mix counter and non counter columns in the same table"),
        ("CREATE TABLE bad16 (k int PRIMARY KEY, v int) WITH no_such_option = 1", "ERROR 0x2000 Unknown property 'no_such_option'"),
        ("DROP KEYSPACE system", "ERROR 0x2100 system keyspace is not user-modifiable."),
    ]);
}

#[test]
fn aggregates_fold_across_read_batches() {
    // 2,500 rows: more than one 1,000-row batch, within and across
    // partitions; the non-aggregate column shows the first row read.
    let mut h = harness(None);
    h.check(SETUP);
    h.run("CREATE TABLE a (p int, c int, n int, d double, PRIMARY KEY (p, c))");
    for i in 0..2500 {
        h.run(&format!(
            "INSERT INTO a (p, c, n, d) VALUES ({}, {i}, {}, {i}.5)",
            i % 2,
            i - 1000
        ));
    }
    let first = h.run("SELECT p, c FROM a LIMIT 1");
    h.check(&[
        (
            "SELECT count(*), count(n), min(n), max(n), sum(n), avg(n) FROM a",
            "2500 | 2500 | -1000 | 1499 | 623750 | 249",
        ),
        ("SELECT sum(d), avg(d) FROM a", "3125000.0 | 1250.0"),
        ("SELECT count(*) FROM a WHERE p = 1", "1250"),
        ("SELECT max(c) + 1, min(c) FROM a WHERE p = 0", "2499 | 0"),
    ]);
    let with_column = h.run("SELECT p, c, count(*) FROM a");
    assert_eq!(with_column, format!("{first} | 2500"));
    h.check(&[("SELECT p, count(*) FROM a WHERE p = 7", "null | 0")]);
}

#[test]
fn group_by_folds_groups_across_read_batches_and_pages() {
    // 3 partitions of 1,200 rows in groups of 400 (c / 400): groups span
    // the reader's 1,000-row batches.
    let mut h = harness(None);
    h.check(SETUP);
    h.run("CREATE TABLE g (p int, b int, c int, n int, PRIMARY KEY (p, b, c))");
    for p in 0..3 {
        for c in 0..1200 {
            h.run(&format!(
                "INSERT INTO g (p, b, c, n) VALUES ({p}, {}, {c}, {c})",
                c / 400
            ));
        }
    }
    let all = h.run("SELECT p, b, count(*), sum(n), min(c) FROM g GROUP BY p, b");
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 9, "{all}");
    assert!(lines.iter().all(|l| l.contains(" | 400 | ")), "{all}");
    assert!(lines.contains(&"0 | 1 | 400 | 239800 | 400"), "{all}");
    h.check(&[
        (
            "SELECT b, count(*) FROM g WHERE p = 1 GROUP BY p, b",
            "0 | 400\n1 | 400\n2 | 400",
        ),
        (
            "SELECT p, b, max(n) FROM g GROUP BY p, b PER PARTITION LIMIT 1 LIMIT 2",
            &format!("{}\n{}", lines_with(&all, 0), lines_with(&all, 3)),
        ),
    ]);
    let per_p = h.run("SELECT p, count(*) FROM g GROUP BY p");
    assert_eq!(per_p.lines().count(), 3, "{per_p}");
    assert!(per_p.lines().all(|l| l.ends_with(" | 1200")), "{per_p}");
    // Pages of 4 groups: 4, 4, 1, each group whole.
    let mut sizes = Vec::new();
    let mut paging_state = None;
    loop {
        let request = rocksandra_query::Request {
            keyspace: Some("ks".into()),
            page_size: Some(4),
            paging_state: paging_state.take(),
            ..rocksandra_query::Request::default()
        };
        let outcome = h
            .executor
            .query("SELECT p, b, count(*) FROM g GROUP BY p, b", &request)
            .expect("pages");
        let ResultBody::Rows(rows) = outcome.body else {
            panic!("rows");
        };
        sizes.push(rows.rows.len());
        match rows.metadata.paging_state {
            Some(s) => paging_state = Some(s),
            None => break,
        }
    }
    assert_eq!(sizes, vec![4, 4, 1]);
}

/// The p and b columns of line `i` of a GROUP BY answer, and its max(n).
fn lines_with(answer: &str, i: usize) -> String {
    let line = answer.lines().nth(i).unwrap_or_default();
    let parts: Vec<&str> = line.split(" | ").collect();
    let max = (parts[1].parse::<i32>().unwrap_or(0) + 1) * 400 - 1;
    format!("{} | {} | {max}", parts[0], parts[1])
}

#[test]
fn ann_queries_on_a_node_alone_follow_writes_through_the_graph() {
    let mut h = harness(None);
    h.check(SETUP);
    h.run("CREATE TABLE vec (k int PRIMARY KEY, v vector<float, 2>)");
    h.run(
        "CREATE INDEX ON vec (v) USING 'sai' WITH OPTIONS = {'similarity_function': 'EUCLIDEAN'}",
    );
    // 400 points on a spiral, then the graph is built by the first query.
    let point = |k: i32| {
        let t = k as f32 * 0.37;
        (
            t.cos() * (1.0 + k as f32 / 40.0),
            t.sin() * (1.0 + k as f32 / 40.0),
        )
    };
    for k in 0..400 {
        let (x, y) = point(k);
        h.run(&format!("INSERT INTO vec (k, v) VALUES ({k}, [{x}, {y}])"));
    }
    let exact = |points: &[(i32, (f32, f32))], q: (f32, f32), n: usize| -> Vec<String> {
        let mut scored: Vec<(f32, i32)> = points
            .iter()
            .map(|(k, (x, y))| ((x - q.0).powi(2) + (y - q.1).powi(2), *k))
            .collect();
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        scored.iter().take(n).map(|(_, k)| k.to_string()).collect()
    };
    let mut points: Vec<(i32, (f32, f32))> = (0..400).map(|k| (k, point(k))).collect();
    let ask = |h: &mut Harness, q: (f32, f32)| -> Vec<String> {
        let out = h.run(&format!(
            "SELECT k FROM vec ORDER BY v ANN OF [{}, {}] LIMIT 10",
            q.0, q.1
        ));
        out.lines().map(str::to_string).collect()
    };
    // The first ANN query is ranked by scan and starts the graph's build
    // in the background; later ones use the graph once it is ready.
    assert_eq!(ask(&mut h, (0.5, 0.5)), exact(&points, (0.5, 0.5), 10));
    let started = std::time::Instant::now();
    while h.executor.ann_graphs_ready() == 0 {
        assert!(started.elapsed().as_secs() < 60, "the graph was not built");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for q in [(0.5, 0.5), (-3.0, 2.0), (10.0, -10.0)] {
        let got = ask(&mut h, q);
        let want = exact(&points, q, 10);
        assert_eq!(
            got.first(),
            want.first(),
            "nearest of {q:?}: {got:?} / {want:?}"
        );
        let common = got.iter().filter(|k| want.contains(k)).count();
        assert!(common >= 9, "{q:?}: {got:?} against {want:?}");
    }
    // Writes after the build: a moved row, a new row, a deleted row.
    h.run("UPDATE vec SET v = [50.0, 50.0] WHERE k = 7");
    h.run("INSERT INTO vec (k, v) VALUES (1000, [50.1, 50.0])");
    points.retain(|(k, _)| *k != 7);
    points.push((7, (50.0, 50.0)));
    points.push((1000, (50.1, 50.0)));
    assert_eq!(ask(&mut h, (50.0, 50.0))[..2], ["7", "1000"]);
    h.run("DELETE FROM vec WHERE k = 7");
    assert_eq!(ask(&mut h, (50.0, 50.0))[0], "1000");
    h.run("TRUNCATE vec");
    assert_eq!(
        h.run("SELECT k FROM vec ORDER BY v ANN OF [50.0, 50.0] LIMIT 3"),
        ""
    );
    h.run("INSERT INTO vec (k, v) VALUES (5, [1.0, 1.0])");
    assert_eq!(
        h.run("SELECT k FROM vec ORDER BY v ANN OF [50.0, 50.0] LIMIT 3"),
        "5"
    );
}

#[test]
fn reads_past_their_timeout_fail_with_read_timeout() {
    use rocksandra_query::deadline::ReadTimeouts;
    use std::time::Duration;
    let mut h = harness(None);
    h.check(SETUP);
    h.run("CREATE TABLE r (p int, c int, v int, PRIMARY KEY (p, c))");
    h.run("INSERT INTO r (p, c, v) VALUES (1, 1, 1)");
    // A range scan gets range_request_timeout; reads of given partitions
    // read_request_timeout (the clock ticks a microsecond per reading).
    h.executor.set_read_timeouts(ReadTimeouts {
        read: Duration::from_secs(3600),
        range: Duration::ZERO,
    });
    let timeout = "ERROR 0x1200 Operation timed out - received only 0 responses.";
    h.check(&[
        ("SELECT v FROM r", timeout),
        ("SELECT v FROM r WHERE v = 1 ALLOW FILTERING", timeout),
        ("SELECT count(*) FROM r", timeout),
        ("SELECT v FROM r WHERE p = 1", "1"),
    ]);
    h.executor.set_read_timeouts(ReadTimeouts {
        read: Duration::ZERO,
        range: Duration::from_secs(3600),
    });
    h.check(&[
        ("SELECT v FROM r WHERE p = 1", timeout),
        ("SELECT v FROM r", "1"),
    ]);
}

#[test]
fn collections_ttl_and_static() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        (
            "CREATE TABLE c (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>)",
            "OK",
        ),
        (
            "INSERT INTO c (k, l, s, m) VALUES (1, [1, 2], {'b', 'a'}, {'x': 1})",
            "OK",
        ),
        (
            "UPDATE c SET l = l + [3], s = s + {'c'}, m['y'] = 2 WHERE k = 1",
            "OK",
        ),
        ("UPDATE c SET l = [0] + l WHERE k = 1", "OK"),
        (
            "SELECT l, s, m FROM c WHERE k = 1",
            "[0, 1, 2, 3] | {'a', 'b', 'c'} | {'x': 1, 'y': 2}",
        ),
        ("UPDATE c SET l[1] = 10 WHERE k = 1", "OK"),
        ("DELETE s['a'], m['x'] FROM c WHERE k = 1", "OK"),
        ("UPDATE c SET l = l - [2] WHERE k = 1", "OK"),
        (
            "SELECT l, s, m FROM c WHERE k = 1",
            "[0, 10, 3] | {'b', 'c'} | {'y': 2}",
        ),
        (
            "CREATE TABLE st (p int, c int, s int static, v int, PRIMARY KEY (p, c))",
            "OK",
        ),
        ("INSERT INTO st (p, s) VALUES (1, 5)", "OK"),
        ("SELECT p, c, s, v FROM st", "1 | null | 5 | null"),
        (
            "INSERT INTO st (p, c, v) VALUES (1, 1, 1) USING TTL 10",
            "OK",
        ),
        (
            "SELECT c, s, v, ttl(v) FROM st WHERE p = 1",
            "1 | 5 | 1 | 10",
        ),
    ]);
    // Eleven seconds later the row has expired; the static row remains.
    h.clock.fetch_add(11_000_000, Ordering::SeqCst);
    h.check(&[("SELECT p, c, s, v FROM st", "1 | null | 5 | null")]);
}

#[test]
fn list_index_operations_see_the_statements_earlier_operations() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE l (k int PRIMARY KEY, l list<int>)", "OK"),
        ("INSERT INTO l (k, l) VALUES (1, [2, 6])", "OK"),
        // The prepended element is index 0 for the index operation after it.
        ("UPDATE l SET l = [0] + l, l[0] = 5 WHERE k = 1", "OK"),
        ("SELECT l FROM l WHERE k = 1", "[5, 2, 6]"),
        ("UPDATE l SET l = l + [1], l[3] = 9 WHERE k = 1", "OK"),
        ("SELECT l FROM l WHERE k = 1", "[5, 2, 6, 9]"),
        ("UPDATE l SET l = l - [5], l[2] = 1 WHERE k = 1", "OK"),
        ("SELECT l FROM l WHERE k = 1", "[2, 6, 1]"),
    ]);
}

#[test]
fn writetime_and_ttl_of_elements_and_fields() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TYPE t (a int, b int)", "OK"),
        ("CREATE TABLE w (k int PRIMARY KEY, m map<text, int>, u t)", "OK"),
        ("UPDATE w USING TIMESTAMP 10 SET m['a'] = 1, u.a = 1 WHERE k = 1", "OK"),
        ("UPDATE w USING TIMESTAMP 20 AND TTL 100 SET m['b'] = 2 WHERE k = 1", "OK"),
        (
            "SELECT writetime(m), ttl(m), writetime(m['b']), writetime(m['z']), writetime(u), writetime(u.a) FROM w WHERE k = 1",
            "[10, 20] | <null is not supported inside a list> | 20 | null | <null is not supported inside a list> | 10",
        ),
        ("SELECT maxwritetime(m), maxwritetime(u), ttl(m['b']), writetime(m['a'..'b']) FROM w WHERE k = 1", "20 | 10 | 100 | [10, 20]"),
    ]);
}

/// A non-frozen UDT is sent with every field of its type, the unset ones
/// null (-1), leading, inner and trailing alike, as Cassandra's
/// `UserType.serializeForNativeProtocol` sends it.
#[test]
fn a_non_frozen_udt_is_sent_with_every_field() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TYPE f (a int, b int, c int)", "OK"),
        ("CREATE TABLE uf (k int PRIMARY KEY, u f)", "OK"),
        ("UPDATE uf SET u.b = 7 WHERE k = 1", "OK"),
    ]);
    let request = Request {
        keyspace: Some("ks".into()),
        ..Request::default()
    };
    let outcome = h
        .executor
        .query("SELECT u FROM uf WHERE k = 1", &request)
        .unwrap();
    let ResultBody::Rows(rows) = outcome.body else {
        panic!("rows expected")
    };
    let value = rows.rows[0][0].as_ref().expect("a value");
    let mut expected = Vec::new();
    expected.extend_from_slice(&(-1i32).to_be_bytes());
    expected.extend_from_slice(&4i32.to_be_bytes());
    expected.extend_from_slice(&7i32.to_be_bytes());
    expected.extend_from_slice(&(-1i32).to_be_bytes());
    assert_eq!(&value[..], &expected[..]);
}

#[test]
fn paging_resumes_where_it_stopped() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[("CREATE TABLE p (k int, c int, PRIMARY KEY (k, c))", "OK")]);
    for k in 0..3 {
        for c in 0..5 {
            h.run(&format!("INSERT INTO p (k, c) VALUES ({k}, {c})"));
        }
    }
    for query in ["SELECT k, c FROM p", "SELECT k, c FROM p WHERE k = 1"] {
        let full = h.run(query);
        let mut pages = Vec::new();
        let mut state = None;
        loop {
            let request = Request {
                keyspace: Some("ks".into()),
                page_size: Some(2),
                paging_state: state.clone(),
                ..Request::default()
            };
            let outcome = h.executor.query(query, &request).unwrap();
            let ResultBody::Rows(rows) = outcome.body else {
                panic!()
            };
            for r in &rows.rows {
                let k = i32::from_be_bytes(r[0].as_ref().unwrap()[..].try_into().unwrap());
                let c = i32::from_be_bytes(r[1].as_ref().unwrap()[..].try_into().unwrap());
                pages.push(format!("{k} | {c}"));
            }
            assert!(rows.rows.len() <= 2);
            state = rows.metadata.paging_state;
            if state.is_none() {
                break;
            }
        }
        assert_eq!(pages.join("\n"), full, "{query}");
    }
}

#[test]
fn a_page_that_ends_its_only_partition_carries_no_paging_state() {
    let mut h = harness(None);
    h.check(SETUP);
    h.run("CREATE TABLE st (p int, c int, s int STATIC, v int, PRIMARY KEY (p, c))");
    h.run("CREATE TABLE one (p int PRIMARY KEY, v int)");
    h.run("INSERT INTO st (p, s) VALUES (0, 0)");
    h.run("INSERT INTO st (p, c, v) VALUES (1, 1, 1)");
    h.run("INSERT INTO st (p, c, v) VALUES (1, 2, 2)");
    h.run("INSERT INTO one (p, v) VALUES (0, 0)");
    h.run("INSERT INTO one (p, v) VALUES (1, 1)");
    // Pages of one row: (rows, whether the answer carried a paging state).
    let pages_of = |query: &str| -> Vec<(usize, bool)> {
        let mut pages = Vec::new();
        let mut state = None;
        loop {
            let request = Request {
                keyspace: Some("ks".into()),
                page_size: Some(1),
                paging_state: state.take(),
                ..Request::default()
            };
            let outcome = h.executor.query(query, &request).unwrap();
            let ResultBody::Rows(rows) = outcome.body else {
                panic!("{query}: rows")
            };
            state = rows.metadata.paging_state;
            pages.push((rows.rows.len(), state.is_some()));
            if state.is_none() || pages.len() > 10 {
                return pages;
            }
        }
    };
    // Cassandra's partition pager is exhausted once nothing remains in its
    // partition: a static row alone, the only row of a table without
    // clustering columns, PER PARTITION LIMIT reached.
    for query in [
        "SELECT p, s FROM st WHERE p = 0",
        "SELECT p, v FROM one WHERE p = 1",
        "SELECT p, c FROM st WHERE p = 1 PER PARTITION LIMIT 1",
    ] {
        assert_eq!(pages_of(query), vec![(1, false)], "{query}");
    }
    // A page that fills up on a row with more possibly after it carries a
    // state (the next page is empty here, as Cassandra's).
    assert_eq!(
        pages_of("SELECT p, c FROM st WHERE p = 1"),
        vec![(1, true), (1, true), (0, false)]
    );
    // Another key after the partition: the state leads to it.
    assert_eq!(
        pages_of("SELECT p, v FROM one WHERE p IN (0, 1)"),
        vec![(1, true), (1, false)]
    );
    assert_eq!(
        pages_of("SELECT p, s FROM st WHERE p IN (0, 1) PER PARTITION LIMIT 1"),
        vec![(1, true), (1, false)]
    );
}

#[test]
fn schema_survives_restart() {
    let dir = std::env::temp_dir().join(format!("rocksandra-query-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    {
        let mut h = harness(Some(dir.clone()));
        h.check(SETUP);
        h.check(&[
            ("CREATE TYPE a (s text, n int)", "OK"),
            (
                "CREATE TABLE t (k int PRIMARY KEY, v frozen<a>) WITH comment = 'x'",
                "OK",
            ),
        ]);
    }
    let h = harness(Some(dir.clone()));
    let table = h.executor.schema().table("ks", "t").cloned().unwrap();
    assert_eq!(table.params.comment, "x");
    assert_eq!(table.columns[1].ty.to_string(), "frozen<a>");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replicated_system_keyspaces_take_a_new_replication_and_keep_it() {
    let dir = std::env::temp_dir().join(format!("rocksandra-query-auth-rf-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let replication =
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'system_auth'";
    {
        let mut h = harness(Some(dir.clone()));
        h.check(&[
            (
                "ALTER KEYSPACE system_auth WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
                "OK",
            ),
            (
                "ALTER KEYSPACE system_traces WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 2}",
                "OK",
            ),
            (
                "ALTER KEYSPACE system WITH durable_writes = false",
                "ERROR 0x2100 system keyspace is not user-modifiable.",
            ),
            (
                "ALTER KEYSPACE system_schema WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
                "ERROR 0x2100 system_schema keyspace is not user-modifiable.",
            ),
            (
                "DROP KEYSPACE system_auth",
                "ERROR 0x2100 Cannot DROP <keyspace system_auth>",
            ),
        ]);
    }
    let mut h = harness(Some(dir.clone()));
    h.check(&[(
        replication,
        "{'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '3'}",
    )]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reads_over_the_tombstone_thresholds_warn_then_fail() {
    let mut h = harness(None);
    h.executor
        .set_tombstone_thresholds(rocksandra_query::tombstones::TombstoneThresholds {
            warn: 3,
            failure: 6,
        });
    h.check(SETUP);
    h.check(&[(
        "CREATE TABLE q (k int, c int, v int, PRIMARY KEY (k, c))",
        "OK",
    )]);
    for c in 0..10 {
        h.run(&format!("INSERT INTO q (k, c, v) VALUES (1, {c}, {c})"));
    }
    for c in 0..5 {
        h.run(&format!("DELETE FROM q WHERE k = 1 AND c = {c}"));
    }
    let request = Request {
        keyspace: Some("ks".into()),
        ..Request::default()
    };
    let outcome = h
        .executor
        .query("SELECT * FROM q WHERE k = 1", &request)
        .expect("five tombstones are under the failure threshold");
    assert_eq!(
        outcome.warnings,
        vec![
            "Read 5 live rows and 5 tombstone cells for query SELECT * FROM q WHERE k = 1 \
             (see tombstone_warn_threshold)"
                .to_string()
        ]
    );
    // A scan without a partition key counts them too.
    let scanned = h
        .executor
        .query("SELECT * FROM q", &request)
        .expect("under the failure threshold");
    assert_eq!(
        scanned.warnings,
        vec![
            "Read 5 live rows and 5 tombstone cells for query SELECT * FROM q \
             (see tombstone_warn_threshold)"
                .to_string()
        ]
    );
    h.run("DELETE FROM q WHERE k = 1 AND c = 5");
    h.run("DELETE FROM q WHERE k = 1 AND c = 6");
    let failed = "ERROR 0x1300 Operation failed - received 0 responses and 1 failures: \
                  READ_TOO_MANY_TOMBSTONES from /127.0.0.1";
    h.check(&[
        ("SELECT * FROM q WHERE k = 1", failed),
        ("SELECT * FROM q", failed),
    ]);
    // Another partition, without tombstones, reads as before.
    h.check(&[
        ("INSERT INTO q (k, c, v) VALUES (2, 0, 0)", "OK"),
        ("SELECT v FROM q WHERE k = 2", "0"),
    ]);
}

/// Index reads are held to the thresholds too: the tombstones a search
/// left on stale entries count when the index is read again. So do dead
/// cells of live rows (Cassandra counts each).
#[test]
fn index_reads_and_dead_cells_count_against_the_tombstone_thresholds() {
    let mut h = harness(None);
    h.executor
        .set_tombstone_thresholds(rocksandra_query::tombstones::TombstoneThresholds {
            warn: 3,
            failure: 100,
        });
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE t (k int PRIMARY KEY, v int, w int)", "OK"),
        ("CREATE INDEX t_v ON t (v)", "OK"),
    ]);
    for k in 0..6 {
        h.run(&format!("INSERT INTO t (k, v, w) VALUES ({k}, 1, 1)"));
        h.run(&format!("UPDATE t SET v = 2 WHERE k = {k}"));
    }
    let request = Request {
        keyspace: Some("ks".into()),
        ..Request::default()
    };
    let query = |h: &Harness, cql: &str| h.executor.query(cql, &request).expect("answered");
    // The first search finds six stale entries and deletes them.
    let first = query(&h, "SELECT k FROM t WHERE v = 1");
    assert_eq!(first.warnings, Vec::<String>::new());
    let again = query(&h, "SELECT k FROM t WHERE v = 1");
    assert_eq!(
        again.warnings,
        vec![
            "Read 0 live rows and 6 tombstone cells for query SELECT k FROM t WHERE v = 1 \
              (see tombstone_warn_threshold)"
                .to_string()
        ]
    );
    for k in 0..4 {
        h.run(&format!("UPDATE t SET w = null WHERE k = {k}"));
    }
    let cells = query(&h, "SELECT k FROM t WHERE k IN (0, 1, 2, 3)");
    assert_eq!(
        cells.warnings,
        vec!["Read 4 live rows and 4 tombstone cells for query SELECT k FROM t WHERE k IN (0, 1, 2, 3) \
              (see tombstone_warn_threshold)"
            .to_string()]
    );
}

/// A conditional update that also reads a list (element set, element
/// delete, remove by value) takes the node's read-before-write lock twice
/// on one thread: it must neither deadlock nor lose either part.
#[test]
fn conditional_list_updates_do_not_deadlock() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        (
            "CREATE TABLE t (k int PRIMARY KEY, v text, l list<text>)",
            "OK",
        ),
        (
            "INSERT INTO t (k, v, l) VALUES (1, 'a', ['x', 'y', 'z'])",
            "OK",
        ),
        ("UPDATE t SET l[0] = 'w' WHERE k = 1 IF EXISTS", "true"),
        ("UPDATE t SET l = l - ['y'] WHERE k = 1 IF v = 'a'", "true"),
        ("DELETE l[1] FROM t WHERE k = 1 IF v = 'a'", "true"),
        (
            "UPDATE t SET l[0] = 'q' WHERE k = 1 IF v = 'b'",
            "false | 'a'",
        ),
        ("SELECT l FROM t WHERE k = 1", "['w']"),
    ]);
}

/// PasswordAuthenticator and CassandraAuthorizer, logged in as the default
/// superuser.
fn authz_harness() -> Harness {
    let mut h = harness(None);
    h.executor
        .enable_password_authentication(rocksandra_query::auth::AuthConfig {
            password_authenticator: true,
            cassandra_authorizer: true,
            bcrypt_cost: 4,
            ..Default::default()
        });
    h.executor
        .setup_default_role()
        .expect("the default role is created");
    h.user = Some("cassandra".into());
    h.check(&[
        (
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "OK",
        ),
        ("CREATE TABLE ks.t (k int PRIMARY KEY, v text)", "OK"),
        ("INSERT INTO ks.t (k, v) VALUES (1, 'a')", "OK"),
        ("CREATE ROLE alice WITH PASSWORD = 'a' AND LOGIN = true", "OK"),
        ("CREATE ROLE readers", "OK"),
    ]);
    h
}

impl Harness {
    fn as_user(&mut self, user: &str, script: &[(&str, &str)]) {
        let before = self.user.replace(user.to_string());
        self.check(script);
        self.user = before;
    }
}

#[test]
fn default_superuser_is_written_at_timestamp_zero() {
    // Cassandra's setupDefaultRole: any change an operator makes wins over a
    // re-creation by a node that saw no role.
    let mut h = authz_harness();
    h.check(&[(
        "SELECT writetime(salted_hash), writetime(is_superuser), writetime(can_login) FROM system_auth.roles WHERE role = 'cassandra'",
        "0 | 0 | 0",
    )]);
}

#[test]
fn the_default_role_is_not_written_again_once_any_role_exists() {
    use rocksandra_query::auth::DefaultRoleSetup;
    let mut h = authz_harness();
    fn h_setup(h: &Harness) -> DefaultRoleSetup {
        h.executor.setup_default_role().expect("the probes run")
    }
    assert_eq!(h_setup(&h), DefaultRoleSetup::Existed);
    h.check(&[
        ("ALTER ROLE cassandra WITH PASSWORD = 'changed'", "OK"),
        (
            "CREATE ROLE admin WITH SUPERUSER = true AND LOGIN = true AND PASSWORD = 'a'",
            "OK",
        ),
    ]);
    assert_eq!(h_setup(&h), DefaultRoleSetup::Existed);
    assert!(h.executor.authenticate("cassandra", "cassandra").is_err());
    h.user = Some("admin".into());
    h.check(&[("DROP ROLE cassandra", "OK")]);
    // The third probe (any role) finds admin.
    assert_eq!(h_setup(&h), DefaultRoleSetup::Existed);
    h.check(&[(
        "SELECT role FROM system_auth.roles WHERE role = 'cassandra'",
        "",
    )]);
}

const NO_SELECT: &str =
    "ERROR 0x2100 User alice has no SELECT permission on <table ks.t> or any of its parents";
const NO_MODIFY: &str =
    "ERROR 0x2100 User alice has no MODIFY permission on <table ks.t> or any of its parents";

/// A grant written behind this node's back (another node's GRANT: the
/// row alone) is seen once the cached denial expires; this node's own
/// REVOKE at once; with the caches off (validity 0), everything at once.
#[test]
fn auth_caches_serve_until_expiry_and_drop_what_this_node_changes() {
    let mut h = authz_harness();
    let elsewhere = |h: &Harness, change: &str| {
        let cql = format!(
            "UPDATE system_auth.role_permissions SET permissions = permissions {change} {{'SELECT'}} \
             WHERE role = 'alice' AND resource = 'data/ks/t'"
        );
        let internal = Request {
            internal: true,
            ..Request::default()
        };
        h.executor
            .query(&cql, &internal)
            .expect("the row is written");
    };
    let select = ("SELECT v FROM ks.t WHERE k = 1", NO_SELECT);
    h.as_user("alice", &[select]);
    elsewhere(&h, "+");
    h.as_user("alice", &[select]);
    h.clock.fetch_add(1_999_000, Ordering::SeqCst);
    h.as_user("alice", &[select]);
    h.clock.fetch_add(1_000, Ordering::SeqCst);
    h.as_user("alice", &[("SELECT v FROM ks.t WHERE k = 1", "'a'")]);
    h.check(&[("REVOKE SELECT ON ks.t FROM alice", "OK")]);
    h.as_user("alice", &[select]);
    let stats = h.executor.auth_cache_stats();
    assert!(
        stats.permissions.hits > 0 && stats.roles.hits > 0,
        "{stats:?}"
    );

    h.executor
        .configure_auth_caches(rocksandra_query::auth_cache::AuthCacheSettings::OFF);
    elsewhere(&h, "+");
    h.as_user("alice", &[("SELECT v FROM ks.t WHERE k = 1", "'a'")]);
    elsewhere(&h, "-");
    h.as_user("alice", &[select]);
    assert_eq!(h.executor.auth_cache_stats().permissions.entries, 0);
}

/// With active update a lookup never reloads before the validity; the
/// server's refresh (`refresh_auth_caches`) reloads every entry.
#[test]
fn active_update_reloads_entries_in_the_refresh_not_on_lookups() {
    use rocksandra_query::auth_cache::{AuthCacheSettings, CacheSettings};
    let mut h = authz_harness();
    let active = CacheSettings::new(60_000, Some(1_000), 100).with_active_update(true);
    h.executor.configure_auth_caches(AuthCacheSettings {
        roles: active,
        permissions: active,
        credentials: active,
    });
    assert_eq!(
        h.executor.auth_cache_refresh_interval(),
        Some(std::time::Duration::from_secs(1))
    );
    let select = ("SELECT v FROM ks.t WHERE k = 1", NO_SELECT);
    h.as_user("alice", &[select]);
    let grant = "UPDATE system_auth.role_permissions SET permissions = permissions + {'SELECT'} \
                 WHERE role = 'alice' AND resource = 'data/ks/t'";
    let internal = Request {
        internal: true,
        ..Request::default()
    };
    h.executor
        .query(grant, &internal)
        .expect("the row is written");
    h.clock.fetch_add(5_000_000, Ordering::SeqCst);
    h.as_user("alice", &[select]);
    h.executor.refresh_auth_caches();
    h.as_user("alice", &[("SELECT v FROM ks.t WHERE k = 1", "'a'")]);
}

/// Past the update interval a lookup answers from the old entry at once
/// and queues it; the server's refresher (`reload_due_auth_entries`)
/// reads it again, as Caffeine's `refreshAfterWrite`.
#[test]
fn a_due_entry_is_answered_from_the_cache_and_reloaded_in_the_background() {
    use rocksandra_query::auth_cache::{AuthCacheSettings, CacheSettings};
    let mut h = authz_harness();
    let caches = CacheSettings::new(60_000, Some(1_000), 100);
    h.executor.configure_auth_caches(AuthCacheSettings {
        roles: caches,
        permissions: caches,
        credentials: caches,
    });
    let select = ("SELECT v FROM ks.t WHERE k = 1", NO_SELECT);
    h.as_user("alice", &[select]);
    let grant = "UPDATE system_auth.role_permissions SET permissions = permissions + {'SELECT'} \
                 WHERE role = 'alice' AND resource = 'data/ks/t'";
    let internal = Request {
        internal: true,
        ..Request::default()
    };
    h.executor
        .query(grant, &internal)
        .expect("the row is written");
    h.clock.fetch_add(2_000_000, Ordering::SeqCst);
    let wait = std::time::Duration::from_millis(0);
    assert!(!h.executor.wait_for_due_auth_entries(wait));
    // Due: the old denial, and the entry queued.
    h.as_user("alice", &[select]);
    assert!(h.executor.wait_for_due_auth_entries(wait));
    h.executor.reload_due_auth_entries();
    h.as_user("alice", &[("SELECT v FROM ks.t WHERE k = 1", "'a'")]);
}

#[test]
fn authorizer_refuses_until_granted_and_after_revoked() {
    let mut h = authz_harness();
    h.as_user(
        "alice",
        &[
            ("SELECT v FROM ks.t WHERE k = 1", NO_SELECT),
            ("INSERT INTO ks.t (k, v) VALUES (2, 'b')", NO_MODIFY),
            ("BEGIN BATCH INSERT INTO ks.t (k, v) VALUES (2, 'b'); APPLY BATCH", NO_MODIFY),
            ("TRUNCATE ks.t", NO_MODIFY),
            ("UPDATE ks.t SET v = 'x' WHERE k = 1", NO_MODIFY),
            // Drivers' metadata reads need no grant.
            ("SELECT cluster_name FROM system.local", "'Test Cluster'"),
            ("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = 'ks'", "'ks'"),
            // Unknown tables fail as without authorization.
            ("SELECT * FROM ks.nosuch", "ERROR 0x2200 table nosuch does not exist"),
            (
                "CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                "ERROR 0x2100 User alice has no CREATE permission on <all keyspaces> or any of its parents",
            ),
            (
                "CREATE TABLE ks.t2 (k int PRIMARY KEY)",
                "ERROR 0x2100 User alice has no CREATE permission on <all tables in ks> or any of its parents",
            ),
            (
                "ALTER TABLE ks.t ADD w int",
                "ERROR 0x2100 User alice has no ALTER permission on <table ks.t> or any of its parents",
            ),
            (
                "DROP TABLE ks.t",
                "ERROR 0x2100 User alice has no DROP permission on <table ks.t> or any of its parents",
            ),
            (
                "DROP KEYSPACE ks",
                "ERROR 0x2100 User alice has no DROP permission on <keyspace ks> or any of its parents",
            ),
            (
                "INSERT INTO system_auth.roles (role) VALUES ('x')",
                "ERROR 0x2100 User alice has no MODIFY permission on <table system_auth.roles> or any of its parents",
            ),
        ],
    );
    h.check(&[("GRANT SELECT ON ks.t TO alice", "OK")]);
    h.as_user(
        "alice",
        &[
            ("SELECT v FROM ks.t WHERE k = 1", "'a'"),
            ("INSERT INTO ks.t (k, v) VALUES (2, 'b')", NO_MODIFY),
        ],
    );
    // A grant on the keyspace covers its tables.
    h.check(&[("GRANT MODIFY ON KEYSPACE ks TO alice", "OK")]);
    h.as_user(
        "alice",
        &[
            ("INSERT INTO ks.t (k, v) VALUES (2, 'b')", "OK"),
            ("UPDATE ks.t SET v = 'c' WHERE k = 2 IF EXISTS", "true"),
            (
                "LIST ALL PERMISSIONS OF alice",
                "'alice' | 'alice' | '<keyspace ks>' | 'MODIFY'\n'alice' | 'alice' | '<table ks.t>' | 'SELECT'",
            ),
            (
                "LIST ALL PERMISSIONS",
                "ERROR 0x2100 You are not authorized to view everyone's permissions",
            ),
            (
                "GRANT SELECT ON ks.t TO readers",
                "ERROR 0x2100 User alice has no AUTHORIZE permission on <table ks.t> or any of its parents",
            ),
        ],
    );
    h.check(&[
        // The creator (cassandra) got every permission on what it created.
        (
            "LIST SELECT ON ks.t",
            "'alice' | 'alice' | '<table ks.t>' | 'SELECT'\n\
             'cassandra' | 'cassandra' | '<keyspace ks>' | 'SELECT'\n\
             'cassandra' | 'cassandra' | '<table ks.t>' | 'SELECT'",
        ),
        (
            "LIST MODIFY ON ks.t OF alice",
            "'alice' | 'alice' | '<keyspace ks>' | 'MODIFY'",
        ),
        ("LIST MODIFY ON ks.t OF alice NORECURSIVE", "OK"),
        ("REVOKE SELECT ON ks.t FROM alice", "OK"),
        ("REVOKE MODIFY ON KEYSPACE ks FROM alice", "OK"),
        ("LIST ALL PERMISSIONS OF alice", "OK"),
    ]);
    h.as_user(
        "alice",
        &[
            ("SELECT v FROM ks.t WHERE k = 1", NO_SELECT),
            ("INSERT INTO ks.t (k, v) VALUES (3, 'c')", NO_MODIFY),
        ],
    );
}

#[test]
fn permissions_come_with_granted_roles() {
    let mut h = authz_harness();
    h.check(&[
        ("GRANT SELECT ON ALL KEYSPACES TO readers", "OK"),
        ("GRANT readers TO alice", "OK"),
        (
            "LIST ROLES OF alice",
            "'alice' | false | true | {} | 'ALL'\n'readers' | false | false | {} | 'ALL'",
        ),
        (
            "GRANT readers TO alice",
            "ERROR 0x2200 alice is a member of readers",
        ),
        (
            "GRANT alice TO readers",
            "ERROR 0x2200 alice is a member of readers",
        ),
        ("GRANT nobody TO alice", "ERROR 0x2200 nobody doesn't exist"),
    ]);
    h.as_user(
        "alice",
        &[
            ("SELECT v FROM ks.t WHERE k = 1", "'a'"),
            ("INSERT INTO ks.t (k, v) VALUES (2, 'b')", NO_MODIFY),
            (
                "LIST ALL PERMISSIONS OF alice",
                "'readers' | 'readers' | '<all keyspaces>' | 'SELECT'",
            ),
            (
                "LIST ROLES",
                "'alice' | false | true | {} | 'ALL'\n'readers' | false | false | {} | 'ALL'",
            ),
            (
                "LIST ROLES OF cassandra",
                "ERROR 0x2100 You are not authorized to view roles granted to cassandra ",
            ),
        ],
    );
    h.check(&[
        ("REVOKE readers FROM alice", "OK"),
        (
            "REVOKE readers FROM alice",
            "ERROR 0x2200 alice is not a member of readers",
        ),
    ]);
    h.as_user("alice", &[("SELECT v FROM ks.t WHERE k = 1", NO_SELECT)]);
    // Superuser status through a granted role bypasses every check.
    h.check(&[
        ("CREATE ROLE admins WITH SUPERUSER = true", "OK"),
        ("GRANT admins TO alice", "OK"),
    ]);
    h.as_user(
        "alice",
        &[
            ("SELECT v FROM ks.t WHERE k = 1", "'a'"),
            ("INSERT INTO ks.t (k, v) VALUES (2, 'b')", "OK"),
        ],
    );
    h.check(&[("DROP ROLE admins", "OK")]);
    h.as_user("alice", &[("SELECT v FROM ks.t WHERE k = 1", NO_SELECT)]);
}

#[test]
fn grants_are_validated_as_cassandra_does() {
    let mut h = authz_harness();
    h.check(&[
        (
            "GRANT MODIFY ON ROLE readers TO alice",
            "ERROR 0x2000 Resource type RoleResource does not support any of the requested permissions",
        ),
        (
            "GRANT CREATE ON ks.t TO alice",
            "ERROR 0x2000 Resource type DataResource does not support any of the requested permissions",
        ),
        ("GRANT SELECT ON ks.nosuch TO alice", "ERROR 0x2200 Resource <table ks.nosuch> doesn't exist"),
        ("GRANT SELECT ON KEYSPACE nosuch TO alice", "ERROR 0x2200 Resource <keyspace nosuch> doesn't exist"),
        ("GRANT SELECT ON ks.t TO nobody", "ERROR 0x2200 Role nobody doesn't exist"),
        (
            "GRANT MODIFY ON KEYSPACE system_auth TO alice",
            "ERROR 0x2100 Granting permissions on system keyspaces is strictly limited, this operation is not permitted",
        ),
        ("GRANT SELECT ON KEYSPACE system_auth TO alice", "OK"),
        ("GRANT ALL ON ROLE readers TO alice", "OK"),
        ("GRANT EXECUTE ON ALL FUNCTIONS TO alice", "OK"),
        ("GRANT DESCRIBE ON ALL MBEANS TO alice", "OK"),
        (
            "LIST ALL OF alice",
            "'alice' | 'alice' | '<keyspace system_auth>' | 'SELECT'\n\
             'alice' | 'alice' | '<all functions>' | 'EXECUTE'\n\
             'alice' | 'alice' | '<all mbeans>' | 'DESCRIBE'\n\
             'alice' | 'alice' | '<role readers>' | 'ALTER'\n\
             'alice' | 'alice' | '<role readers>' | 'DROP'\n\
             'alice' | 'alice' | '<role readers>' | 'AUTHORIZE'\n\
             'alice' | 'alice' | '<role readers>' | 'DESCRIBE'",
        ),
        ("LIST ALL OF nobody", "ERROR 0x2200 <role nobody> doesn't exist"),
    ]);
    // AUTHORIZE on a role lets alice grant it; dropping it takes its grants.
    h.as_user(
        "alice",
        &[
            ("GRANT readers TO alice", "OK"),
            (
                "GRANT admins TO alice",
                "ERROR 0x2100 User alice does not have sufficient privileges to perform the requested operation",
            ),
            (
                "CREATE ROLE bob",
                "ERROR 0x2100 User alice does not have sufficient privileges to perform the requested operation",
            ),
            ("ALTER ROLE alice WITH PASSWORD = 'b'", "OK"),
            ("ALTER ROLE alice WITH LOGIN = false", "ERROR 0x2100 You aren't allowed to alter LOGIN"),
            ("ALTER ROLE readers WITH LOGIN = true", "OK"),
            (
                "ALTER ROLE cassandra WITH LOGIN = true",
                "ERROR 0x2100 User alice does not have sufficient privileges to perform the requested operation",
            ),
            ("DROP ROLE readers", "OK"),
        ],
    );
    h.check(&[(
        "LIST ALL OF alice",
        "'alice' | 'alice' | '<keyspace system_auth>' | 'SELECT'\n\
         'alice' | 'alice' | '<all functions>' | 'EXECUTE'\n\
         'alice' | 'alice' | '<all mbeans>' | 'DESCRIBE'",
    )]);
}

#[test]
fn creators_get_every_permission_and_drops_take_grants() {
    let mut h = authz_harness();
    h.check(&[("GRANT CREATE ON ALL KEYSPACES TO alice", "OK")]);
    h.as_user(
        "alice",
        &[
            (
                "CREATE KEYSPACE mine WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                "OK",
            ),
            ("CREATE TABLE mine.t (k int PRIMARY KEY, v int)", "OK"),
            ("INSERT INTO mine.t (k, v) VALUES (1, 1)", "OK"),
            ("SELECT v FROM mine.t", "1"),
            (
                "LIST SELECT OF alice",
                "'alice' | 'alice' | '<keyspace mine>' | 'SELECT'\n'alice' | 'alice' | '<table mine.t>' | 'SELECT'",
            ),
            ("DROP TABLE mine.t", "OK"),
            ("LIST SELECT OF alice", "'alice' | 'alice' | '<keyspace mine>' | 'SELECT'"),
            ("DROP KEYSPACE mine", "OK"),
            ("LIST ALL OF alice", "'alice' | 'alice' | '<all keyspaces>' | 'CREATE'"),
        ],
    );
}

#[test]
fn grants_need_the_cassandra_authorizer() {
    let mut h = harness(None);
    h.executor
        .enable_password_authentication(rocksandra_query::auth::AuthConfig {
            password_authenticator: true,
            cassandra_authorizer: false,
            bcrypt_cost: 4,
            ..Default::default()
        });
    h.executor
        .setup_default_role()
        .expect("the default role is created");
    h.user = Some("cassandra".into());
    h.check(&[
        ("CREATE ROLE alice", "OK"),
        ("CREATE ROLE readers", "OK"),
        (
            "GRANT SELECT ON ALL KEYSPACES TO alice",
            "ERROR 0x2200 GRANT operation is not supported by AllowAllAuthorizer",
        ),
        ("GRANT readers TO alice", "OK"),
        (
            "LIST ROLES OF alice",
            "'alice' | false | false | {} | 'ALL'\n'readers' | false | false | {} | 'ALL'",
        ),
    ]);
}

const FILTERING: &str = "ERROR 0x2200 Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";

#[test]
fn legacy_index_makes_a_restriction_legal_until_dropped() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE t (k int, c int, v int, w int, PRIMARY KEY (k, c))", "OK"),
        ("SELECT k, c FROM t WHERE v = 1", FILTERING),
        ("CREATE INDEX t_v ON t (v)", "OK"),
        ("INSERT INTO t (k, c, v, w) VALUES (1, 1, 1, 10)", "OK"),
        ("INSERT INTO t (k, c, v, w) VALUES (1, 2, 2, 20)", "OK"),
        ("INSERT INTO t (k, c, v, w) VALUES (3, 1, 1, 30)", "OK"),
        ("INSERT INTO t (k, c, v, w) VALUES (2, 1, 1, 40)", "OK"),
        // token order of partitions (1, 2, 3 hash to ascending tokens ... 3 last)
        ("SELECT k, c FROM t WHERE v = 1", "1 | 1\n2 | 1\n3 | 1"),
        ("SELECT k, c FROM t WHERE k = 1 AND v = 1", "1 | 1"),
        ("SELECT k, c FROM t WHERE v = 1 LIMIT 2", "1 | 1\n2 | 1"),
        // one legacy index serves one relation; ranges and a second column filter
        ("SELECT k, c FROM t WHERE v = 1 AND w = 10", FILTERING),
        ("SELECT k, c FROM t WHERE v = 1 AND w = 10 ALLOW FILTERING", "1 | 1"),
        ("SELECT k, c FROM t WHERE v > 1", FILTERING),
        // a clustering restriction without the partition key filters too
        ("SELECT k, c FROM t WHERE c = 1", FILTERING),
        ("SELECT k, c FROM t WHERE c = 1 AND v = 1", FILTERING),
        (
            "SELECT k, c FROM t WHERE k IN (1, 2) AND v = 1",
            "ERROR 0x2200 Select on indexed columns and with IN clause for the PRIMARY KEY are not supported",
        ),
        (
            "SELECT k, c FROM t WHERE k = 1 AND v = 1 ORDER BY c DESC",
            "ERROR 0x2200 ORDER BY with 2ndary indexes is not supported, except for ANN queries.",
        ),
        // updates and deletes move rows in and out of the result
        ("UPDATE t SET v = 1 WHERE k = 1 AND c = 2", "OK"),
        ("DELETE FROM t WHERE k = 2", "OK"),
        ("UPDATE t SET v = 5 WHERE k = 3 AND c = 1", "OK"),
        ("SELECT k, c FROM t WHERE v = 1", "1 | 1\n1 | 2"),
        ("INSERT INTO t (k, c, v) VALUES (4, 1, 1) USING TTL 10", "OK"),
        ("SELECT k, c FROM t WHERE v = 1", "1 | 1\n1 | 2\n4 | 1"),
    ]);
    // The TTL row expires and leaves the result.
    h.clock.fetch_add(11_000_000, Ordering::SeqCst);
    h.check(&[
        ("SELECT k, c FROM t WHERE v = 1", "1 | 1\n1 | 2"),
        ("DROP INDEX t_v", "OK"),
        ("SELECT k, c FROM t WHERE v = 1", FILTERING),
        (
            "SELECT k, c FROM t WHERE v = 1 ALLOW FILTERING",
            "1 | 1\n1 | 2",
        ),
    ]);
}

#[test]
fn index_on_clustering_and_collection_columns() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE ck (k int, c1 int, c2 int, l list<int>, m map<text, int>, PRIMARY KEY (k, c1, c2))", "OK"),
        (
            "SELECT k FROM ck WHERE k = 1 AND c2 = 1",
            "ERROR 0x2200 PRIMARY KEY column \"c2\" cannot be restricted as preceding column \"c1\" is not restricted",
        ),
        ("CREATE INDEX ON ck (c2)", "OK"),
        ("CREATE INDEX ON ck (l)", "OK"),
        ("CREATE INDEX ON ck (keys(m))", "OK"),
        ("INSERT INTO ck (k, c1, c2, l, m) VALUES (1, 1, 1, [1, 2], {'a': 1})", "OK"),
        ("INSERT INTO ck (k, c1, c2, l, m) VALUES (1, 2, 2, [2], {'b': 1})", "OK"),
        ("INSERT INTO ck (k, c1, c2, l, m) VALUES (1, 3, 1, [3], {'a': 2})", "OK"),
        ("SELECT c1 FROM ck WHERE k = 1 AND c2 = 1", "1\n3"),
        ("SELECT c1 FROM ck WHERE c2 = 1", "1\n3"),
        ("SELECT c1 FROM ck WHERE l CONTAINS 2", "1\n2"),
        ("SELECT c1 FROM ck WHERE m CONTAINS KEY 'a'", "1\n3"),
        ("SELECT c1 FROM ck WHERE m CONTAINS 1", FILTERING),
        ("SELECT c1 FROM ck WHERE l CONTAINS 2 AND m CONTAINS KEY 'a'", FILTERING),
        (
            "CREATE TABLE single (k int PRIMARY KEY, v int)",
            "OK",
        ),
        (
            "CREATE INDEX ON single (k)",
            "ERROR 0x2200 Cannot create secondary index on the only partition key column k",
        ),
    ]);
}

#[test]
fn sai_serves_ranges_and_several_columns() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        (
            "CREATE TABLE s (k int, c int, n int, x int, txt text, u int, PRIMARY KEY (k, c))",
            "OK",
        ),
        ("CREATE INDEX ON s (n) USING 'sai'", "OK"),
        (
            "CREATE CUSTOM INDEX ON s (x) USING 'StorageAttachedIndex'",
            "OK",
        ),
        ("CREATE INDEX ON s (txt) USING 'sai'", "OK"),
        (
            "INSERT INTO s (k, c, n, x, txt, u) VALUES (1, 1, 10, 1, 'a', 1)",
            "OK",
        ),
        (
            "INSERT INTO s (k, c, n, x, txt, u) VALUES (1, 2, 20, 2, 'b', 2)",
            "OK",
        ),
        (
            "INSERT INTO s (k, c, n, x, txt, u) VALUES (1, 3, 30, 1, 'a', 3)",
            "OK",
        ),
        ("SELECT c FROM s WHERE n > 10", "2\n3"),
        ("SELECT c FROM s WHERE n >= 10 AND x = 1", "1\n3"),
        (
            "SELECT c FROM s WHERE n >= 10 AND x = 1 AND txt = 'a'",
            "1\n3",
        ),
        ("SELECT c FROM s WHERE txt > 'a'", FILTERING),
        ("SELECT c FROM s WHERE n > 10 AND u = 2", FILTERING),
        (
            "SELECT c FROM s WHERE n > 10 AND u = 2 ALLOW FILTERING",
            "2",
        ),
        ("DELETE FROM s WHERE k = 1 AND c = 3", "OK"),
        ("SELECT c FROM s WHERE n > 10", "2"),
    ]);
}

/// Conditional statements and batches as Cassandra 5.0.6 answers them
/// (golden case `lwt`): the rows and columns of `[applied] = false`, static
/// rows, CONTAINS conditions, and the refusals.
#[test]
fn conditional_results_match_cassandra() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE kv (k int PRIMARY KEY, v text, n int)", "OK"),
        ("INSERT INTO kv (k, v, n) VALUES (1, 'a', 2)", "OK"),
        // the conditions' columns, in IF order
        (
            "UPDATE kv SET v = 'b' WHERE k = 1 IF v = 'x' AND n = 2",
            "false | 'a' | 2",
        ),
        (
            "UPDATE kv SET v = 'b' WHERE k = 1 IF n = 2 AND v = 'x'",
            "false | 2 | 'a'",
        ),
        ("UPDATE kv SET v = 'b' WHERE k = 1 IF n > null", "ERROR 0x2200 Invalid comparison with null for operator \">\""),
        ("CREATE TABLE ct (p int, c int, s int static, v text, l list<int>, PRIMARY KEY (p, c))", "OK"),
        ("INSERT INTO ct (p, c, s, v, l) VALUES (1, 1, 10, 'a', [1, 2])", "OK"),
        ("INSERT INTO ct (p, c, v) VALUES (1, 2, 'b')", "OK"),
        // a statement that does not write static columns does not read them
        (
            "INSERT INTO ct (p, c, v) VALUES (1, 1, 'z') IF NOT EXISTS",
            "false | 1 | 1 | null | [1, 2] | 'a'",
        ),
        // only the static row has a condition: the partition's first row is read
        ("INSERT INTO ct (p, s) VALUES (1, 11) IF NOT EXISTS", "false | 1 | 1 | 10 | null | null"),
        ("UPDATE ct SET l = [3] WHERE p = 1 AND c = 1 IF l CONTAINS 2", "true"),
        ("UPDATE ct SET l = [4] WHERE p = 1 AND c = 1 IF l CONTAINS 2", "false | [3]"),
        ("UPDATE ct SET v = 'x' WHERE p = 1 AND c = 1 IF v CONTAINS 'a'", "ERROR 0x2200 Cannot use CONTAINS on non-collection column v"),
        // a row condition makes a static-only write address that row
        ("UPDATE ct SET s = 12 WHERE p = 1 AND c = 2 IF v = 'b'", "true"),
        ("UPDATE ct SET s = 13 WHERE p = 1 IF v = 'b'", "ERROR 0x2200 Some clustering keys are missing: c"),
        (
            "DELETE FROM ct WHERE p = 1 IF EXISTS",
            "ERROR 0x2200 DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns",
        ),
        ("DELETE FROM ct WHERE p = 1 IF s = 12", "ERROR 0x2200 DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns"),
        ("UPDATE ct SET v = 'x' WHERE p = 1 AND c > 0 IF v = 'a'", "ERROR 0x2200 Slice restrictions are not supported on the clustering columns in UPDATE statements"),
        // a batch shows the primary key and every row read
        (
            "BEGIN BATCH UPDATE ct SET v = 'y' WHERE p = 1 AND c = 1 IF v = 'q'; UPDATE ct SET v = 'y' WHERE p = 1 AND c = 2 IF v = 'b'; APPLY BATCH",
            "false | 1 | 1 | 'a'\nfalse | 1 | 2 | 'b'",
        ),
        (
            "BEGIN BATCH INSERT INTO ct (p, c, v) VALUES (1, 1, 'n') IF NOT EXISTS; INSERT INTO ct (p, c, v) VALUES (1, 2, 'n') IF NOT EXISTS; APPLY BATCH",
            "false | 1 | 1 | null | [3] | 'a'\nfalse | 1 | 2 | null | null | 'b'",
        ),
        (
            "BEGIN BATCH DELETE FROM ct WHERE p = 1 AND c = 1 IF EXISTS; UPDATE ct SET v = 'y' WHERE p = 1 AND c = 1 IF v = 'a'; APPLY BATCH",
            "ERROR 0x2200 Cannot mix IF conditions and IF NOT EXISTS for the same row",
        ),
        (
            "BEGIN BATCH USING TIMESTAMP 5 INSERT INTO ct (p, c) VALUES (1, 3) IF NOT EXISTS; APPLY BATCH",
            "ERROR 0x2200 Cannot provide custom timestamp for conditional BATCH",
        ),
        (
            "BEGIN BATCH UPDATE ct SET v = 'y' WHERE p = 1 AND c = 1 IF v = 'a'; UPDATE kv SET v = 'y' WHERE k = 1; APPLY BATCH",
            "ERROR 0x2200 Batch with conditions cannot span multiple tables",
        ),
        ("SELECT c, s, v FROM ct WHERE p = 1", "1 | 12 | 'a'\n2 | 12 | 'b'"),
    ]);
}

/// Several increments of one counter in a statement or a batch all count
/// (golden case `counters`); counter batches are checked as Cassandra does.
#[test]
fn counter_increments_of_one_batch_add_up() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE c (k int PRIMARY KEY, a counter)", "OK"),
        ("UPDATE c SET a = a + 1, a = a + 2 WHERE k = 1", "OK"),
        ("SELECT a FROM c WHERE k = 1", "3"),
        (
            "BEGIN COUNTER BATCH UPDATE c SET a = a + 100 WHERE k = 1; UPDATE c SET a = a - 10 WHERE k = 1; UPDATE c SET a = a + 5 WHERE k = 2; APPLY BATCH",
            "OK",
        ),
        ("SELECT k, a FROM c", "1 | 93\n2 | 5"),
        ("BEGIN UNLOGGED BATCH UPDATE c SET a = a + 1 WHERE k = 2; APPLY BATCH", "OK"),
        ("SELECT a FROM c WHERE k = 2", "6"),
        (
            "BEGIN BATCH UPDATE c SET a = a + 1 WHERE k = 2; APPLY BATCH",
            "ERROR 0x2200 Cannot include a counter statement in a logged batch",
        ),
        (
            "BEGIN COUNTER BATCH USING TIMESTAMP 5 UPDATE c SET a = a + 1 WHERE k = 2; APPLY BATCH",
            "ERROR 0x2200 Cannot provide custom timestamp for counter BATCH",
        ),
        ("DELETE FROM c USING TIMESTAMP 5 WHERE k = 2", "ERROR 0x2200 Cannot provide custom timestamp for counter updates"),
        ("UPDATE c SET a = a + (bigint)1 WHERE k = 2", "ERROR 0x2200 Cannot assign value (bigint)1 to a of type counter"),
        ("UPDATE c SET a = 1 + a WHERE k = 2", "ERROR 0x2200 Invalid operation (a = 1 - a) for non list column a"),
        ("SELECT a + 1 FROM c WHERE k = 2", "7"),
    ]);
}

/// INSERT JSON takes numbers as Jackson types them for Cassandra (golden
/// case `json`): a varint beyond 64 bits, a timestamp only from a `Long`,
/// a decimal from a `Double`'s Java text; floats print as JDK 17 does.
#[test]
fn json_numbers_convert_as_cassandra_does() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE j (k int PRIMARY KEY, vi varint, de decimal, ts timestamp, f float, d double)", "OK"),
        (
            r#"INSERT INTO j JSON '{"k": 1, "vi": 99999999999999999999, "de": 1.0E-7, "ts": 5000000000, "f": 123456789, "d": 1e400}'"#,
            "OK",
        ),
        (
            "SELECT JSON * FROM j",
            r#"'{"k": 1, "d": null, "de": 1.0E-7, "f": 1.23456792E8, "ts": "1970-02-27 20:53:20.000Z", "vi": 99999999999999999999}'"#,
        ),
        (
            r#"INSERT INTO j JSON '{"k": 2, "ts": 5}'"#,
            "ERROR 0x2200 Error decoding JSON value for ts: Expected a long or a datestring representation of a timestamp value, but got a Integer: 5",
        ),
        (
            r#"INSERT INTO j JSON '{"k": 2, "vi": 1.5}'"#,
            "ERROR 0x2200 Error decoding JSON value for vi: Value '1.5' is not a valid representation of a varint value",
        ),
        (
            r#"INSERT INTO j JSON '{"vi": 1}'"#,
            "ERROR 0x2200 Invalid null value in condition for column k",
        ),
        ("SELECT toJson(1), toJson([1, 2]) FROM j WHERE k = 1", "'1' | '[1, 2]'"),
    ]);
}

/// Arithmetic, CAST, math and collection aggregates as Cassandra 5.0.6
/// computes them (golden case `functions`).
#[test]
fn functions_compute_as_cassandra_does() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE t (k int PRIMARY KEY, ti tinyint, i int, bi bigint, f float, de decimal, ts timestamp, da date, l list<int>, fl frozen<list<decimal>>)", "OK"),
        (
            "INSERT INTO t (k, ti, i, bi, f, de, ts, da, l, fl) VALUES (1, 7, 70000, 5000000000, 2.5, 3.14159, '2024-01-31 00:00:00+0000', '2024-01-31', [2147483647, 1], [1.5, 2.25])",
            "OK",
        ),
        // a literal is an int; bigint + float is a double, not a float
        ("SELECT ti + 1, bi + f, i + 1.5 FROM t WHERE k = 1", "8 | 5.0000000025E9 | 70001.5"),
        // decimals: 32 digits of quotient, doubles through their Java text
        ("SELECT de / 3, de * 2 FROM t WHERE k = 1", "1.04719666666666666666666666666667 | 6.283180"),
        ("SELECT exp(i), log10(de) FROM t WHERE k = 1", "2147483647 | 0.49714950586112326857863885149637"),
        ("SELECT i / 0 FROM t WHERE k = 1", "ERROR 0x1400 the operation 'int / int' failed: / by zero"),
        // dates and timestamps plus durations, through the calendar
        ("SELECT ts + 1mo, da + 1mo, da - 1y FROM t WHERE k = 1", "'2024-02-29 00:00:00.000000+0000' | '2024-02-29' | '2023-01-31'"),
        ("SELECT da + 1h FROM t WHERE k = 1", "ERROR 0x1400 the operation 'date + duration' failed: The duration must have a day precision. Was: 1h"),
        ("SELECT i + null FROM t WHERE k = 1", "ERROR 0x2200 Ambiguous '+' operation with args i and NULL: use type hint to disambiguate, example '(int) ?'"),
        // collection aggregates are the row aggregates
        ("SELECT collection_avg(l), collection_sum(l), collection_avg(fl) FROM t WHERE k = 1", "1073741824 | -2147483648 | 1.88"),
        ("SELECT CAST(ts AS bigint), CAST(bi AS date) FROM t WHERE k = 1", "1706659200000 | '1970-02-27'"),
        ("SELECT CAST(i AS boolean) FROM t WHERE k = 1", "ERROR 0x2200 i cannot be cast to boolean"),
        ("SELECT token(1) FROM t WHERE k = 1", "-4069959284402364209"),
    ]);
}

/// Aggregates as Cassandra 5.0.6 computes them (golden case `aggregates`):
/// decimals sum and average, aggregates nest in other selectors, PER
/// PARTITION LIMIT counts groups, DISTINCT needs the whole key only for scans.
#[test]
fn aggregates_compute_as_cassandra_does() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE g (a int, b int, c int, d int, v int, de decimal, PRIMARY KEY ((a, b), c, d))", "OK"),
        ("INSERT INTO g (a, b, c, d, v, de) VALUES (1, 1, 1, 1, 10, 1.5)", "OK"),
        ("INSERT INTO g (a, b, c, d, v, de) VALUES (1, 1, 1, 2, 20, 2.25)", "OK"),
        ("INSERT INTO g (a, b, c, d, v, de) VALUES (1, 1, 2, 1, 30, 0.125)", "OK"),
        ("SELECT sum(de), avg(de) FROM g WHERE a = 1 AND b = 1", "3.875 | 1.295"),
        ("SELECT count(*) + 1, sum(v) / count(v), toJson(max(v)) FROM g WHERE a = 1 AND b = 1", "4 | 20 | '30'"),
        ("SELECT max(sum(v)) FROM g", "ERROR 0x2200 aggregate functions cannot be used as arguments of aggregate functions"),
        (
            "SELECT c, count(*) FROM g WHERE a = 1 AND b = 1 GROUP BY a, b, c PER PARTITION LIMIT 1",
            "1 | 2",
        ),
        ("SELECT DISTINCT a FROM g WHERE a = 1 AND b = 1", "1"),
        ("SELECT DISTINCT a FROM g", "ERROR 0x2200 SELECT DISTINCT queries must request all the partition key columns (missing b)"),
        ("SELECT a, count(*) FROM g GROUP BY a, b, v", "ERROR 0x2200 Group by is currently only supported on the columns of the PRIMARY KEY, got v"),
    ]);
}

/// Filtering restrictions as Cassandra 5.0.6 checks them, and IN paging
/// that ends a page on a partition's last row (golden case `filtering`).
#[test]
fn filtering_restrictions_match_cassandra() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE t (p int, c int, s int static, v int, l list<int>, m map<text, int>, PRIMARY KEY (p, c))", "OK"),
        ("INSERT INTO t (p, c, s, v) VALUES (1, 1, 10, 100)", "OK"),
        ("INSERT INTO t (p, c, s, v) VALUES (2, 1, 20, 200)", "OK"),
        ("SELECT p FROM t WHERE v = 100 AND v = 200 ALLOW FILTERING", "ERROR 0x2200 v cannot be restricted by more than one relation if it includes an Equal"),
        ("SELECT p FROM t WHERE v > 1 AND v > 2 ALLOW FILTERING", "ERROR 0x2200 More than one restriction was found for the start bound on v"),
        ("SELECT p FROM t WHERE v > null ALLOW FILTERING", "ERROR 0x2200 Unsupported null value for column v"),
        ("SELECT p FROM t WHERE v != null ALLOW FILTERING", "ERROR 0x2200 Unsupported \"!=\" relation: v != NULL"),
        ("SELECT p FROM t WHERE m['k'] > 1 ALLOW FILTERING", "ERROR 0x2200 Only EQ relations are supported on map entries"),
        ("SELECT p FROM t WHERE l[0] = 1 ALLOW FILTERING", "ERROR 0x2200 Indexes on list entries (l[index] = value) are not currently supported."),
        ("SELECT p FROM t WHERE p = 1 AND (c) > (0) AND c = 1", "ERROR 0x2200 Column \"c\" cannot be restricted by both an equality and an inequality relation"),
    ]);
    // A page ending on partition 2's only row: the next page is empty, not
    // partition 2's static row again.
    let mut rows_seen = Vec::new();
    let mut state = None;
    loop {
        let request = Request {
            keyspace: Some("ks".into()),
            page_size: Some(2),
            paging_state: state.clone(),
            ..Request::default()
        };
        let outcome = h
            .executor
            .query("SELECT p, c FROM t WHERE p IN (1, 2)", &request)
            .unwrap();
        let ResultBody::Rows(rows) = outcome.body else {
            panic!()
        };
        for r in &rows.rows {
            rows_seen.push(format!("{:?} | {:?}", r[0].as_deref(), r[1].as_deref()));
        }
        state = rows.metadata.paging_state;
        if state.is_none() {
            break;
        }
    }
    assert_eq!(rows_seen.len(), 2, "{rows_seen:?}");
}

/// Non-frozen collection updates as Cassandra 5.0.6 applies them (golden
/// case `collections_nonfrozen`): a prepend keeps its elements' order, list
/// index operations of one statement apply in turn, and WHERE refusals.
#[test]
fn collection_updates_match_cassandra() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE c (p int PRIMARY KEY, l list<text>, s set<int>, m map<text, int>)", "OK"),
        ("INSERT INTO c (p, l) VALUES (1, ['a', 'b', 'c'])", "OK"),
        ("UPDATE c SET l = ['x', 'y'] + l WHERE p = 1", "OK"),
        ("SELECT l FROM c WHERE p = 1", "['x', 'y', 'a', 'b', 'c']"),
        ("DELETE l[0], l[1] FROM c WHERE p = 1", "OK"),
        ("SELECT l FROM c WHERE p = 1", "['y', 'b', 'c']"),
        ("UPDATE c SET l[0] = 'z', l[1] = 'w' WHERE p = 1", "OK"),
        ("SELECT l FROM c WHERE p = 1", "['z', 'w', 'c']"),
        ("DELETE l[0] FROM c WHERE p = 2", "ERROR 0x2200 Attempted to delete an element from a list which is null"),
        ("UPDATE c SET l[null] = 'a' WHERE p = 1", "ERROR 0x2200 Invalid null value for list index"),
        ("UPDATE c SET s[5] = 5 WHERE p = 1", "ERROR 0x2200 Invalid operation (s[5] = 5) for set column s"),
        ("UPDATE c SET l = ['q'] WHERE p = 1 AND s CONTAINS 1", "ERROR 0x2200 Cannot use UPDATE with CONTAINS"),
        ("DELETE FROM c WHERE p = 1 AND l = ['x']", "ERROR 0x2200 Collection column 'l' (list<text>) cannot be restricted by a '=' relation"),
    ]);
}

// ---------------------------------------------------------------- materialized views

fn views_harness() -> Harness {
    let mut h = harness(None);
    h.executor.set_materialized_views_enabled(true);
    h.check(SETUP);
    h
}

#[test]
fn views_are_refused_unless_enabled() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE t (k int PRIMARY KEY, v int)", "OK"),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE k IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k)",
            "ERROR 0x2200 Materialized views are disabled. Enable in cassandra.yaml to use.",
        ),
    ]);
}

#[test]
fn a_view_keyed_by_a_regular_column_follows_its_base() {
    let mut h = views_harness();
    h.check(&[
        ("CREATE TABLE t (k int, c int, v int, x text, PRIMARY KEY (k, c))", "OK"),
        ("INSERT INTO t (k, c, v, x) VALUES (0, 0, 10, 'before')", "OK"),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)",
            "OK",
        ),
        // Built from the existing row.
        ("SELECT * FROM mv", "10 | 0 | 0 | 'before'"),
        ("INSERT INTO t (k, c, v, x) VALUES (1, 1, 11, 'a')", "OK"),
        ("SELECT k, c, x FROM mv WHERE v = 11", "1 | 1 | 'a'"),
        // The key column moves: the old entry goes.
        ("UPDATE t SET v = 12 WHERE k = 1 AND c = 1", "OK"),
        ("SELECT * FROM mv WHERE v = 11", ""),
        ("SELECT k, c, x FROM mv WHERE v = 12", "1 | 1 | 'a'"),
        // A cell deleted while the row sits elsewhere stays deleted when
        // the row comes back to its old key.
        ("UPDATE t SET x = null WHERE k = 1 AND c = 1", "OK"),
        ("UPDATE t SET v = 11 WHERE k = 1 AND c = 1", "OK"),
        ("SELECT k, c, x FROM mv WHERE v = 11", "1 | 1 | null"),
        ("SELECT * FROM mv WHERE v = 12", ""),
        // Rows without the key column are not in the view.
        ("INSERT INTO t (k, c, x) VALUES (2, 2, 'no v')", "OK"),
        ("SELECT count(*) FROM mv", "2"),
        // Deleting the key column's cell, or the row, removes the entry.
        ("DELETE v FROM t WHERE k = 1 AND c = 1", "OK"),
        ("SELECT * FROM mv WHERE v = 11", ""),
        ("UPDATE t SET v = 13 WHERE k = 1 AND c = 1", "OK"),
        ("SELECT k, c FROM mv WHERE v = 13", "1 | 1"),
        ("DELETE FROM t WHERE k = 1 AND c = 1", "OK"),
        ("SELECT * FROM mv WHERE v = 13", ""),
        // Partition and range deletions too.
        ("INSERT INTO t (k, c, v) VALUES (3, 1, 31)", "OK"),
        ("INSERT INTO t (k, c, v) VALUES (3, 2, 32)", "OK"),
        ("INSERT INTO t (k, c, v) VALUES (3, 3, 33)", "OK"),
        ("DELETE FROM t WHERE k = 3 AND c >= 2", "OK"),
        ("SELECT v FROM mv WHERE v IN (31, 32, 33)", "31"),
        ("DELETE FROM t WHERE k = 3", "OK"),
        ("SELECT v FROM mv WHERE v IN (31, 32, 33)", ""),
        // A row written again after its deletion is back.
        ("INSERT INTO t (k, c, v, x) VALUES (3, 1, 31, 'again')", "OK"),
        ("SELECT x FROM mv WHERE v = 31", "'again'"),
        ("SELECT * FROM mv WHERE v = 10", "10 | 0 | 0 | 'before'"),
        // Views are read-only and guard their base.
        (
            "INSERT INTO mv (v, k, c) VALUES (1, 1, 1)",
            "ERROR 0x2200 Cannot directly modify a materialized view",
        ),
        (
            "DROP TABLE t",
            "ERROR 0x2200 Cannot drop a table when materialized views still depend on it (ks)",
        ),
        (
            "ALTER TABLE t DROP x",
            "ERROR 0x2200 Cannot drop column x on base table t with materialized views",
        ),
        ("TRUNCATE t", "OK"),
        ("SELECT * FROM mv", ""),
        ("DROP MATERIALIZED VIEW mv", "OK"),
        ("DROP TABLE t", "OK"),
    ]);
}

#[test]
fn a_view_expires_with_the_ttl_of_its_key_column() {
    let mut h = views_harness();
    h.check(&[
        ("CREATE TABLE t (k int PRIMARY KEY, v int, x int)", "OK"),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE k IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k)",
            "OK",
        ),
        ("INSERT INTO t (k, v, x) VALUES (1, 1, 1) USING TTL 100", "OK"),
        ("INSERT INTO t (k, v, x) VALUES (2, 2, 2)", "OK"),
        ("UPDATE t USING TTL 50 SET x = 20 WHERE k = 2", "OK"),
        ("SELECT k, x FROM mv", "1 | 1\n2 | 20"),
    ]);
    h.clock.fetch_add(60_000_000, Ordering::SeqCst);
    h.check(&[("SELECT k, x FROM mv", "1 | 1\n2 | null")]);
    h.clock.fetch_add(60_000_000, Ordering::SeqCst);
    h.check(&[
        ("SELECT * FROM t", "2 | 2 | null"),
        ("SELECT k, v, x FROM mv", "2 | 2 | null"),
    ]);
}

#[test]
fn a_view_with_the_base_key_keeps_rows_alive_by_unselected_columns() {
    let mut h = views_harness();
    h.check(&[
        ("CREATE TABLE t (k int, c int, a int, b int, PRIMARY KEY (k, c))", "OK"),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT k, c, a FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND c > 0 PRIMARY KEY (c, k)",
            "OK",
        ),
        // An UPDATE-made row alive only through a column the view leaves out.
        ("UPDATE t SET b = 1 WHERE k = 1 AND c = 1", "OK"),
        ("SELECT * FROM mv", "1 | 1 | null"),
        ("UPDATE t SET a = 5 WHERE k = 1 AND c = 1", "OK"),
        ("SELECT * FROM mv", "1 | 1 | 5"),
        ("DELETE a, b FROM t WHERE k = 1 AND c = 1", "OK"),
        ("SELECT * FROM t", ""),
        ("SELECT * FROM mv", ""),
        // The WHERE clause filters base rows by their key.
        ("INSERT INTO t (k, c, a) VALUES (2, 0, 7)", "OK"),
        ("INSERT INTO t (k, c, a) VALUES (2, 3, 8)", "OK"),
        ("SELECT * FROM mv", "3 | 2 | 8"),
        // A conditional update and a batch maintain views too.
        ("UPDATE t SET a = 9 WHERE k = 2 AND c = 3 IF a = 8", "true"),
        (
            "BEGIN BATCH INSERT INTO t (k, c, a) VALUES (4, 1, 1); INSERT INTO t (k, c, a) VALUES (4, 2, 2); APPLY BATCH",
            "OK",
        ),
        ("SELECT * FROM mv", "1 | 4 | 1\n2 | 4 | 2\n3 | 2 | 9"),
    ]);
}

#[test]
fn views_follow_collections_and_new_columns() {
    let mut h = views_harness();
    h.check(&[
        ("CREATE TABLE t (k int PRIMARY KEY, v int, s set<int>)", "OK"),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE k IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k)",
            "OK",
        ),
        ("INSERT INTO t (k, v, s) VALUES (1, 10, {1, 2})", "OK"),
        ("UPDATE t SET s = s + {3} WHERE k = 1", "OK"),
        ("UPDATE t SET s = s - {1} WHERE k = 1", "OK"),
        ("SELECT s FROM mv WHERE v = 10", "{2, 3}"),
        ("UPDATE t SET s = {7} WHERE k = 1", "OK"),
        ("SELECT s FROM mv WHERE v = 10", "{7}"),
        ("ALTER TABLE t ADD w text", "OK"),
        ("UPDATE t SET w = 'new' WHERE k = 1", "OK"),
        ("SELECT w FROM mv WHERE v = 10", "'new'"),
        ("ALTER TABLE t RENAME k TO key", "OK"),
        ("SELECT key, w FROM mv WHERE v = 10", "1 | 'new'"),
    ]);
}

#[test]
fn view_definitions_are_checked_as_cassandra_checks_them() {
    let mut h = views_harness();
    h.check(&[
        ("CREATE TABLE t (k int, c int, v int, w int, s int static, PRIMARY KEY (k, c))", "OK"),
        ("CREATE TABLE u (k int PRIMARY KEY, v int)", "OK"),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "ERROR 0x2200 Cannot include static column 's' in materialized view 'mv'",
        ),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT k, c, v FROM t WHERE k IS NOT NULL PRIMARY KEY (v, k)",
            "ERROR 0x2200 Cannot create materialized view 'mv' without primary key columns c from base table 't'",
        ),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT k, c, v, w FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL AND w IS NOT NULL PRIMARY KEY ((v, w), k, c)",
            "ERROR 0x2200 Cannot include more than one non-primary key column in materialized view primary key (got v, w)",
        ),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT k, c, v FROM t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)",
            "ERROR 0x2200 Primary key columns v must be restricted with 'IS NOT NULL' or otherwise",
        ),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT k, c, v FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v = 1 PRIMARY KEY (c, k)",
            "ERROR 0x2200 Non-primary key columns can only be restricted with 'IS NOT NULL' (got: v restricted illegally)",
        ),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT k, c FROM t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k) WITH default_time_to_live = 1",
            "ERROR 0x2200 Cannot set default_time_to_live for a materialized view. Data in a materialized view always expire at the same time than the corresponding data in the parent table.",
        ),
        (
            "CREATE MATERIALIZED VIEW u AS SELECT k, c FROM t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "ERROR 0x2200 Cannot create materialized view 'u' - a table with the same name already exists",
        ),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT k, c FROM t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "OK",
        ),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT k, c FROM t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "ERROR 0x2400 Cannot add already existing table \"mv\" to keyspace \"ks\"",
        ),
        (
            "CREATE MATERIALIZED VIEW mv2 AS SELECT k, c FROM mv WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "ERROR 0x2200 Base table 'mv' doesn't exist",
        ),
        (
            "CREATE INDEX ON mv (k)",
            "ERROR 0x2200 Secondary indexes on materialized views aren't supported",
        ),
        (
            "ALTER TABLE mv ADD z int",
            "ERROR 0x2200 Cannot use ALTER TABLE on a materialized view; use ALTER MATERIALIZED VIEW instead",
        ),
        ("ALTER MATERIALIZED VIEW mv WITH comment = 'by c'", "OK"),
        (
            "SELECT view_name, base_table_name, include_all_columns, where_clause, comment FROM system_schema.views WHERE keyspace_name = 'ks'",
            "'mv' | 't' | false | 'k IS NOT NULL AND c IS NOT NULL' | 'by c'",
        ),
        ("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ks'", "'t'\n'u'"),
        (
            "SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 'mv'",
            "'c' | 'partition_key'\n'k' | 'clustering'",
        ),
        (
            "DROP TABLE mv",
            "ERROR 0x2200 Cannot use DROP TABLE on a materialized view. Please use DROP MATERIALIZED VIEW instead.",
        ),
        (
            "TRUNCATE mv",
            "ERROR 0x2200 Cannot TRUNCATE materialized view directly; must truncate base table instead",
        ),
        ("DROP MATERIALIZED VIEW mv", "OK"),
        ("DROP MATERIALIZED VIEW mv", "ERROR 0x2200 Materialized view 'ks.mv' doesn't exist"),
        ("DROP MATERIALIZED VIEW IF EXISTS mv", "OK"),
    ]);
}

#[test]
fn a_base_table_keeps_its_index_and_its_view() {
    let mut h = views_harness();
    h.check(&[
        ("CREATE TABLE t (k int PRIMARY KEY, v int, w text)", "OK"),
        ("CREATE INDEX t_w ON t (w)", "OK"),
        (
            "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE k IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k)",
            "OK",
        ),
        ("INSERT INTO t (k, v, w) VALUES (1, 10, 'a')", "OK"),
        ("INSERT INTO t (k, v, w) VALUES (2, 20, 'a')", "OK"),
        ("UPDATE t SET v = 30, w = 'b' WHERE k = 1", "OK"),
        ("UPDATE t SET w = 'c' WHERE k = 2 IF v = 20", "true"),
        ("SELECT k, v FROM t WHERE w = 'a'", ""),
        ("SELECT k, v FROM t WHERE w = 'b'", "1 | 30"),
        ("SELECT v, k, w FROM mv", "30 | 1 | 'b'\n20 | 2 | 'c'"), // token order
        ("DELETE FROM t WHERE k = 2", "OK"),
        ("SELECT k FROM t WHERE w = 'c'", ""),
        ("SELECT v, k FROM mv", "30 | 1"),
    ]);
}

/// A prepared read of one row by its full primary key runs on a plan made
/// at PREPARE (`select::point`). It must answer exactly as the general path
/// (`bind_values`, then `Executor::run`) does, errors included, whatever the data and the bound
/// values: both run here on the same statements and values.
#[test]
fn prepared_point_reads_answer_as_the_general_path() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(POINT_READS_DATA);
    let (emp_values, t_values) = point_read_values();
    let cases: [(&str, &[Vec<Bound>], bool); 7] = [
        ("SELECT * FROM emp WHERE k = ?", &emp_values, true),
        (
            "SELECT b, a AS alias, m, s FROM ks.emp WHERE k = ?",
            &emp_values,
            true,
        ),
        (
            "SELECT k, a FROM emp WHERE k = ? ALLOW FILTERING",
            &emp_values,
            true,
        ),
        (
            "SELECT a, writetime(a) FROM emp WHERE k = ?",
            &emp_values,
            false,
        ),
        (
            "SELECT * FROM t WHERE p = ? AND q = ? AND c1 = ? AND c2 = ?",
            &t_values,
            true,
        ),
        (
            "SELECT st, v FROM t WHERE c2 = ? AND c1 = ? AND q = ? AND p = ?",
            &t_values,
            true,
        ),
        (
            "SELECT * FROM t WHERE p = ? AND q = ? AND c1 = ? AND c2 = ? LIMIT 1",
            &t_values,
            false,
        ),
    ];
    for (cql, values, planned) in cases {
        assert_point_read_as_general(&h, cql, values, planned);
    }
    // A table changed since PREPARE is read by the general path, with its
    // new columns.
    let prepared = h
        .executor
        .prepare("SELECT * FROM emp WHERE k = ?", Some("ks"))
        .expect("prepares");
    h.check(&[("ALTER TABLE emp ADD c int", "OK")]);
    let statement = h.executor.prepared(&prepared.id).expect("cached");
    let request = Request {
        keyspace: Some("ks".into()),
        values: vec![bound_text("x")],
        ..Request::default()
    };
    let fast = h.executor.execute_prepared(&statement, request.clone());
    let general = h.executor.run(&statement.parsed, &request, &request.values);
    assert_eq!(shown(fast), shown(general));
}

/// The tables and rows the prepared point reads meet: live, with a TTL,
/// deleted, without regular cells, with only a deleted cell, static-only.
const POINT_READS_DATA: &[(&str, &str)] = &[
    (
        "CREATE TABLE emp (k text PRIMARY KEY, a text, b int, s set<int>, m map<text, int>)",
        "OK",
    ),
    (
        "CREATE TABLE t (p int, q text, c1 int, c2 text, v text, st int static, \
         PRIMARY KEY ((p, q), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)",
        "OK",
    ),
    (
        "INSERT INTO emp (k, a, b, s, m) VALUES ('x', 'ax', 1, {1, 2}, {'a': 1})",
        "OK",
    ),
    (
        "INSERT INTO emp (k, a) VALUES ('y', 'ay') USING TTL 100",
        "OK",
    ),
    ("INSERT INTO emp (k, b) VALUES ('z', 3)", "OK"),
    ("DELETE FROM emp WHERE k = 'z'", "OK"),
    ("INSERT INTO emp (k) VALUES ('w')", "OK"),
    ("UPDATE emp SET a = 'only' WHERE k = 'u'", "OK"),
    ("DELETE a FROM emp WHERE k = 'u'", "OK"),
    (
        "INSERT INTO t (p, q, c1, c2, v, st) VALUES (1, 'a', 1, 'x', 'v1', 7)",
        "OK",
    ),
    (
        "INSERT INTO t (p, q, c1, c2, v) VALUES (1, 'a', 2, '', 'v2')",
        "OK",
    ),
    ("INSERT INTO t (p, q, st) VALUES (2, 'b', 9)", "OK"),
    ("DELETE FROM t WHERE p = 1 AND q = 'a' AND c1 > 1", "OK"),
];

/// Bound values for `emp`'s key and for `t`'s four key columns: present,
/// absent, null, unset, empty and malformed, in every combination for `t`.
fn point_read_values() -> (Vec<Vec<Bound>>, Vec<Vec<Bound>>) {
    let text = bound_text;
    let int = |i: i32| Bound::Bytes(bytes::Bytes::copy_from_slice(&i.to_be_bytes()));
    let bad = Bound::Bytes(bytes::Bytes::from_static(&[1, 2, 3]));
    let keys = [
        text("x"),
        text("y"),
        text("z"),
        text("w"),
        text("u"),
        text("none"),
    ];
    let odd = [Bound::Null, Bound::Unset, text(""), bad.clone()];
    let mut emp_values: Vec<Vec<Bound>> =
        keys.iter().chain(&odd).map(|k| vec![k.clone()]).collect();
    emp_values.push(Vec::new());
    let mut t_values = Vec::new();
    for p in [int(1), int(2), int(3), Bound::Null, bad.clone()] {
        for q in [text("a"), text("b"), text("")] {
            for c1 in [int(1), int(2), Bound::Unset] {
                for c2 in [text("x"), text(""), Bound::Null] {
                    t_values.push(vec![p.clone(), q.clone(), c1.clone(), c2.clone()]);
                }
            }
        }
    }
    (emp_values, t_values)
}

/// A text value as bound by a client.
fn bound_text(s: &str) -> Bound {
    Bound::Bytes(bytes::Bytes::copy_from_slice(s.as_bytes()))
}

/// What a statement answered, errors as the client sees them.
fn shown(r: rocksandra_query::Result<rocksandra_query::Outcome>) -> String {
    match r {
        Ok(o) => format!("{:?} {:?}", o.body, o.warnings),
        Err(e) => format!("{:?}", e.to_response()),
    }
}

/// `cql`, prepared (on the point-read plan when `planned`), answers each of
/// `values` unpaged and paged as the general path answers it.
fn assert_point_read_as_general(h: &Harness, cql: &str, values: &[Vec<Bound>], planned: bool) {
    use rocksandra_query::executor::bind_values;
    let prepared = h.executor.prepare(cql, Some("ks")).expect("prepares");
    let statement = h.executor.prepared(&prepared.id).expect("cached");
    assert_eq!(statement.point_read.is_some(), planned, "{cql}");
    for v in values {
        for (page_size, skip_metadata) in [(None, false), (Some(5000), true), (Some(1), false)] {
            let request = Request {
                keyspace: Some("ks".into()),
                values: v.clone(),
                page_size,
                skip_metadata,
                ..Request::default()
            };
            let fast = h.executor.execute_prepared(&statement, request.clone());
            let general = bind_values(&statement.parsed, &request)
                .and_then(|v| h.executor.run(&statement.parsed, &request, &v));
            assert_eq!(
                shown(fast),
                shown(general),
                "{cql} with {v:?}, page {page_size:?}"
            );
        }
    }
}

#[test]
fn compact_storage_rows_live_by_their_values() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        (
            "CREATE TABLE st (k int PRIMARY KEY, v1 int, v2 text) WITH COMPACT STORAGE",
            "OK",
        ),
        ("INSERT INTO st (k, v1, v2) VALUES (1, 10, 'a')", "OK"),
        ("INSERT INTO st (k, v1) VALUES (2, 20) USING TTL 10", "OK"),
        ("SELECT * FROM st WHERE k = 1", "1 | 10 | 'a'"),
        ("DELETE v1, v2 FROM st WHERE k = 1", "OK"),
        ("SELECT * FROM st WHERE k = 1", ""),
        (
            "SELECT column1 FROM st",
            "ERROR 0x2200 Undefined column name column1 in table ks.st",
        ),
        (
            "INSERT INTO st (k, value) VALUES (1, 0x01)",
            "ERROR 0x2200 Undefined column name value in table ks.st",
        ),
        (
            "CREATE TABLE dn (k int, c int, v int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE",
            "OK",
        ),
        ("INSERT INTO dn (k, c, v) VALUES (1, 1, 10)", "OK"),
        ("UPDATE dn SET v = null WHERE k = 1 AND c = 1", "OK"),
        ("SELECT * FROM dn", ""),
        (
            "INSERT INTO dn (k, c) VALUES (1, 2)",
            "ERROR 0x2200 Column v is mandatory for this COMPACT STORAGE table",
        ),
        (
            "CREATE TABLE dk (k int, c int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE",
            "OK",
        ),
        ("INSERT INTO dk (k, c) VALUES (1, 2)", "OK"),
        ("SELECT * FROM dk", "1 | 2"),
        (
            "CREATE TABLE bad (k int, c int, v1 int, v2 int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE",
            "ERROR 0x2200 COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not part of the PRIMARY KEY (got: v1, v2)",
        ),
        (
            "ALTER TABLE st DROP COMPACT STORAGE",
            "ERROR 0x2200 DROP COMPACT STORAGE is disabled. Enable in cassandra.yaml to use.",
        ),
    ]);
    // Eleven seconds later the value has expired, and the row with it.
    h.clock.fetch_add(11_000_000, Ordering::SeqCst);
    h.check(&[("SELECT * FROM st", "")]);
}

#[test]
fn compact_storage_survives_a_restart_with_its_hidden_columns() {
    let dir = std::env::temp_dir().join(format!("rocksandra-query-compact-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    {
        let mut h = harness(Some(dir.clone()));
        h.check(SETUP);
        h.check(&[(
            "CREATE TABLE st (k int PRIMARY KEY, v int) WITH COMPACT STORAGE",
            "OK",
        )]);
    }
    let mut h = harness(Some(dir.clone()));
    h.keyspace = Some("ks".into());
    h.check(&[
        (
            "SELECT column_name, kind, type FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 'st'",
            "'column1' | 'clustering' | 'text'\n'k' | 'partition_key' | 'int'\n'v' | 'static' | 'int'\n'value' | 'regular' | 'blob'",
        ),
        (
            "SELECT flags FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 'st'",
            "{}",
        ),
        (
            "SELECT value FROM st",
            "ERROR 0x2200 Undefined column name value in table ks.st",
        ),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// What PREPARE answered: `OK`, or the error as `run` shows it.
fn prepared(h: &Harness, cql: &str) -> String {
    match h.executor.prepare(cql, h.keyspace.as_deref()) {
        Ok(_) => "OK".to_string(),
        Err(e) => {
            let r = e.to_response();
            format!("ERROR {:#06x} {}", r.kind.code(), r.message)
        }
    }
}

/// Restrictions Cassandra refuses when it prepares a statement are refused
/// at PREPARE with the text running them gives; valid ones prepare with
/// markers of every key type, whose values are only known when executed.
#[test]
fn prepare_checks_restrictions_without_values() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TYPE pt (a int, b text)", "OK"),
        ("CREATE TABLE t (p int, c1 int, c2 int, v int, s int static, m map<int, int>, PRIMARY KEY (p, c1, c2))", "OK"),
        (
            "CREATE TABLE keys (k1 timeuuid, k2 decimal, k3 frozen<pt>, k4 frozen<set<inet>>, c1 date, c3 tuple<varint, blob>, c4 vector<float, 2>, v text, \
             PRIMARY KEY ((k1, k2, k3, k4), c1, c3, c4))",
            "OK",
        ),
    ]);
    let filtering = "ERROR 0x2200 Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";
    let refused = [
        ("SELECT * FROM t WHERE v = ?", filtering),
        ("SELECT * FROM t WHERE p = ? AND c2 = ?", "ERROR 0x2200 PRIMARY KEY column \"c2\" cannot be restricted as preceding column \"c1\" is not restricted"),
        ("SELECT * FROM t WHERE v != ?", "ERROR 0x2200 Unsupported \"!=\" relation: v != ?"),
        ("SELECT * FROM t WHERE p = ? AND c1 CONTAINS ?", "ERROR 0x2200 Cannot use CONTAINS on non-collection column c1"),
        ("SELECT * FROM t WHERE p = ? AND (c1, c2) > (?, ?) AND c1 = ?", "ERROR 0x2200 Column \"c1\" cannot be restricted by both an equality and an inequality relation"),
        ("UPDATE t SET v = ? WHERE p = ? AND c1 = ?", "ERROR 0x2200 Some clustering keys are missing: c2"),
        ("UPDATE t SET s = ? WHERE p = ? AND c1 = ?", "ERROR 0x2200 Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns"),
        ("UPDATE t SET v = ? WHERE p = ? AND c1 = ? AND c2 > ?", "ERROR 0x2200 Slice restrictions are not supported on the clustering columns in UPDATE statements"),
        ("DELETE FROM t WHERE p = ? AND c2 = ?", "ERROR 0x2200 PRIMARY KEY column \"c2\" cannot be restricted as preceding column \"c1\" is not restricted"),
        ("DELETE FROM t WHERE token(p) = ?", "ERROR 0x2200 The token function cannot be used in WHERE clauses for DELETE statements"),
        ("BEGIN BATCH UPDATE t SET v = ? WHERE p = ? AND c1 = ? AND c2 = ?; DELETE FROM t WHERE p = ? AND v = ?; APPLY BATCH", "ERROR 0x2200 Non PRIMARY KEY columns found in where clause: v "),
        ("SELECT * FROM t WHERE p = ? ORDER BY c2 DESC", "ERROR 0x2200 Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY"),
        ("SELECT * FROM t WHERE p = ? GROUP BY c2", "ERROR 0x2200 Group by currently only support groups of columns following their declared order in the PRIMARY KEY"),
    ];
    for (cql, error) in refused {
        assert_eq!(prepared(&h, cql), error, "prepared: {cql}");
        // Unprepared, with values, the same refusal (naming the value).
        let with_values = cql.replace('?', "0");
        let error = error.replace("!= ?", "!= 0");
        assert_eq!(h.run(&with_values), error, "run: {with_values}");
    }
    let valid = [
        "SELECT * FROM t WHERE p = ? AND c1 IN ? AND c2 > ?",
        "SELECT * FROM t WHERE v = ? ALLOW FILTERING",
        "SELECT * FROM t WHERE p = ? AND m[?] = ? ALLOW FILTERING",
        "SELECT * FROM t WHERE token(p) > ? AND token(p) <= ?",
        "UPDATE t SET s = ? WHERE p = ?",
        "DELETE FROM t WHERE p = ? AND c1 > ? AND c1 < ?",
        "SELECT * FROM keys WHERE k1 = ? AND k2 = ? AND k3 = ? AND k4 = ? AND c1 = ? AND c3 = ? AND c4 = ?",
        "SELECT * FROM keys WHERE k1 IN ? AND k2 = ? AND k3 = ? AND k4 = ? AND (c1, c3) IN ?",
        "UPDATE keys SET v = ? WHERE k1 = ? AND k2 = ? AND k3 = ? AND k4 = ? AND c1 = ? AND c3 = ? AND c4 = ?",
        // Values, literal ones too, are checked when the statement runs.
        "SELECT * FROM t WHERE p = null",
        "SELECT * FROM t WHERE p IN (null, ?)",
        "SELECT * FROM t WHERE v = null ALLOW FILTERING",
        "DELETE FROM t WHERE p = 0 AND c1 > null",
        "SELECT * FROM t WHERE p = blobAsInt(?)",
        "SELECT c1, count(*) FROM t WHERE p = ? GROUP BY c1 ORDER BY c1 DESC",
    ];
    for cql in valid {
        assert_eq!(prepared(&h, cql), "OK", "{cql}");
    }
    assert_eq!(
        h.run("SELECT * FROM t WHERE p = null"),
        "ERROR 0x2200 Invalid null value in condition for column p"
    );
    // A literal of the wrong type is refused when prepared, as Cassandra does.
    assert_eq!(
        prepared(&h, "SELECT * FROM t WHERE p = 'a'"),
        "ERROR 0x2200 Invalid STRING constant (a) for \"p\" of type int"
    );
}

#[test]
fn table_options_show_as_cassandra_5_0_6_keeps_them() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE lcs (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy'}", "OK"),
        ("CREATE TABLE lcs2 (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy'} AND bloom_filter_fp_chance = 0.02", "OK"),
        ("CREATE TABLE stcs (k int PRIMARY KEY) WITH extensions = {'a': 0x01} AND cdc = true", "OK"),
        ("ALTER TABLE stcs WITH compaction = {'class': 'LeveledCompactionStrategy'}", "OK"),
        (
            "SELECT table_name, bloom_filter_fp_chance, cdc, extensions FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name IN ('lcs', 'lcs2', 'stcs')",
            "'lcs' | 0.1 | null | {}\n'lcs2' | 0.02 | null | {}\n'stcs' | 0.01 | null | {}",
        ),
        ("CREATE TABLE withid (k int PRIMARY KEY) WITH id = 5b5ea8d0-c1f6-11ee-8000-000000000001", "OK"),
        (
            "SELECT id FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 'withid'",
            "5b5ea8d0-c1f6-11ee-8000-000000000001",
        ),
        ("ALTER TABLE withid WITH id = 5b5ea8d0-c1f6-11ee-8000-000000000002", "ERROR 0x2300 Cannot alter table id."),
        ("CREATE TYPE \"text\" (a int)", "OK"),
        ("CREATE TABLE usestext (k int PRIMARY KEY, v frozen<\"text\">)", "OK"),
        ("INSERT INTO usestext (k, v) VALUES (1, {a: 2})", "OK"),
        ("SELECT v.a FROM usestext WHERE k = 1", "2"),
        (
            "CREATE TABLE system_auth.x (k int PRIMARY KEY)",
            "ERROR 0x2100 Cannot CREATE <all tables in system_auth>",
        ),
        // As Cassandra 5.0.6 answers them: the permission on the resource.
        (
            "DROP TABLE system_auth.roles",
            "ERROR 0x2100 Cannot DROP <table system_auth.roles>",
        ),
        (
            "ALTER TABLE system_auth.roles WITH comment = 'x'",
            "ERROR 0x2100 Cannot ALTER <table system_auth.roles>",
        ),
        (
            "CREATE INDEX ON system_auth.roles (can_login)",
            "ERROR 0x2100 Cannot ALTER <table system_auth.roles>",
        ),
        (
            "DROP TYPE system_auth.t",
            "ERROR 0x2100 Cannot DROP <all tables in system_auth>",
        ),
        (
            "CREATE TABLE system_distributed.x (k int PRIMARY KEY)",
            "ERROR 0x2100 Cannot CREATE <all tables in system_distributed>",
        ),
        (
            "CREATE TABLE system.x (k int PRIMARY KEY)",
            "ERROR 0x2100 system keyspace is not user-modifiable.",
        ),
        (
            "CREATE TABLE rr (k int PRIMARY KEY) WITH read_repair = 'sometimes'",
            "ERROR 0x0000 java.lang.IllegalArgumentException: No enum constant org.apache.cassandra.service.reads.repair.ReadRepairStrategy.SOMETIMES",
        ),
    ]);
}

#[test]
fn what_cassandra_refuses_with_an_uncaught_exception() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE cnt (k int PRIMARY KEY, n counter)", "OK"),
        ("UPDATE cnt SET n = n + 5 WHERE k = 1", "OK"),
        ("UPDATE cnt SET n = n + fromJson('2') WHERE k = 1", "ERROR 0x0000 java.lang.UnsupportedOperationException"),
        ("UPDATE cnt SET n = n - fromJson('2') WHERE k = 1", "ERROR 0x0000 java.lang.UnsupportedOperationException"),
        ("SELECT n FROM cnt WHERE k = 1", "5"),
        ("CREATE TABLE d (k int PRIMARY KEY, d double)", "OK"),
        ("INSERT INTO d (k, d) VALUES (1, NaN)", "OK"),
        (
            "SELECT CAST(d AS decimal) FROM d WHERE k = 1",
            "ERROR 0x0000 java.lang.NumberFormatException: Character N is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark.",
        ),
    ]);
}

#[test]
fn sai_finds_no_empty_value_of_a_descending_clustering_column() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE s (k int, a text, d text, PRIMARY KEY (k, a, d)) WITH CLUSTERING ORDER BY (a ASC, d DESC)", "OK"),
        ("CREATE INDEX ON s (a) USING 'sai'", "OK"),
        ("CREATE INDEX ON s (d) USING 'sai'", "OK"),
        ("INSERT INTO s (k, a, d) VALUES (1, '', '')", "OK"),
        ("INSERT INTO s (k, a, d) VALUES (2, 'x', 'y')", "OK"),
        ("SELECT k FROM s WHERE a = ''", "1"),
        ("SELECT k FROM s WHERE d = ''", ""),
        ("SELECT k FROM s WHERE d = 'y'", "2"),
    ]);
}

#[test]
fn min_and_max_of_a_timeuuid_are_typed_as_cassandras_legacy_type() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        (
            "CREATE TABLE tu (k int, c int, u timeuuid, PRIMARY KEY (k, c))",
            "OK",
        ),
        (
            "INSERT INTO tu (k, c, u) VALUES (1, 1, 5b5ea8d0-c1f6-11ee-8000-000000000001)",
            "OK",
        ),
        // A custom type: drivers read the bytes as a blob.
        (
            "SELECT min(u), max(u) FROM tu WHERE k = 1",
            "0x5b5ea8d0c1f611ee8000000000000001 | 0x5b5ea8d0c1f611ee8000000000000001",
        ),
    ]);
}

#[test]
fn a_refusal_made_when_preparing_comes_before_one_made_when_running() {
    let mut h = harness(None);
    h.check(SETUP);
    h.check(&[
        ("CREATE TABLE co (k int PRIMARY KEY, m map<text, int>)", "OK"),
        ("CREATE INDEX ON co (values(m)) USING 'sai'", "OK"),
        (
            "SELECT k FROM co WHERE m[null] = 1",
            "ERROR 0x2200 Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING",
        ),
        (
            "SELECT k FROM co WHERE m[null] = 1 ALLOW FILTERING",
            "ERROR 0x2200 Unsupported null map key for column m",
        ),
    ]);
}
