//! Criterion benches of secondary indexes and materialized views through
//! the executor, over the in-memory engine: a lookup answered from an index
//! against the filtered scan the same query costs without one (100,000
//! rows, 100 matching), and what maintaining an index or a view adds to a
//! write.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rocksandra_data::LocalTime;
use rocksandra_query::{Env, Executor, NodeInfo, Request};
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::KvEngine;
use rocksandra_wire::ResultBody;

const ROWS: i32 = 100_000;
/// Distinct values of `v`: each matches ROWS / VALUES rows.
const VALUES: i32 = 1_000;

fn executor() -> Executor {
    let clock = Arc::new(AtomicI64::new(1_700_000_000_000_000));
    let c = clock.clone();
    let storage_clock: rocksandra_storage::memory::Clock =
        Arc::new(move || LocalTime(c.load(Ordering::Relaxed) / 1_000_000));
    let engine = Arc::new(KvEngine::new(MemoryStore::new(storage_clock)));
    let counter = Arc::new(AtomicI64::new(1));
    let env = Env {
        now_micros: Arc::new(move || clock.fetch_add(1, Ordering::Relaxed)),
        random: Arc::new(move || counter.fetch_add(0x9E37_79B9, Ordering::Relaxed) as u64),
    };
    let node = NodeInfo {
        cluster_name: "Bench".into(),
        listen_address: "127.0.0.1".parse().expect("address"),
        broadcast_address: "127.0.0.1".parse().expect("address"),
        rpc_address: "127.0.0.1".parse().expect("address"),
        native_port: 9042,
        storage_port: 7000,
        data_center: "datacenter1".into(),
        rack: "rack1".into(),
        host_id: [7; 16],
        tokens: vec![0],
        peers: Vec::new(),
    };
    Executor::open(engine, None, node, env).expect("executor opens")
}

fn run(executor: &Executor, cql: &str) -> usize {
    let request = Request {
        keyspace: Some("ks".into()),
        ..Request::default()
    };
    match executor.query(cql, &request).expect(cql).body {
        ResultBody::Rows(rows) => rows.rows.len(),
        _ => 0,
    }
}

fn loaded() -> Executor {
    let executor = executor();
    run(
        &executor,
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    );
    for table in ["t", "u"] {
        run(
            &executor,
            &format!("CREATE TABLE {table} (k int PRIMARY KEY, v int, w text)"),
        );
    }
    run(&executor, "CREATE INDEX t_v ON t (v)");
    for k in 0..ROWS {
        for table in ["t", "u"] {
            run(
                &executor,
                &format!(
                    "INSERT INTO {table} (k, v, w) VALUES ({k}, {}, 'row {k}')",
                    k % VALUES
                ),
            );
        }
    }
    executor
}

fn lookups(c: &mut Criterion) {
    let executor = loaded();
    let matching = (ROWS / VALUES) as usize;
    let mut group = c.benchmark_group("select 100 of 100k rows by v");
    group.sample_size(10);
    group.bench_function("indexed", |b| {
        b.iter(|| {
            assert_eq!(
                black_box(run(&executor, "SELECT k, w FROM t WHERE v = 7")),
                matching
            )
        })
    });
    group.bench_function("filtered scan (ALLOW FILTERING)", |b| {
        b.iter(|| {
            assert_eq!(
                black_box(run(
                    &executor,
                    "SELECT k, w FROM u WHERE v = 7 ALLOW FILTERING"
                )),
                matching
            )
        })
    });
    group.finish();

    let mut group = c.benchmark_group("insert one row");
    let mut k = ROWS;
    group.bench_function("with an index", |b| {
        b.iter(|| {
            k += 1;
            run(
                &executor,
                &format!("INSERT INTO t (k, v, w) VALUES ({k}, 7, 'x')"),
            )
        })
    });
    group.bench_function("without", |b| {
        b.iter(|| {
            k += 1;
            run(
                &executor,
                &format!("INSERT INTO u (k, v, w) VALUES ({k}, 7, 'x')"),
            )
        })
    });
    group.finish();
}

/// Writes to a table with a materialized view keyed by `v` (read the base
/// row, merge, write base and view rows) against the same writes to a
/// table without one.
fn view_writes(c: &mut Criterion) {
    let executor = executor();
    executor.set_materialized_views_enabled(true);
    run(
        &executor,
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    );
    for table in ["t", "u"] {
        run(
            &executor,
            &format!("CREATE TABLE {table} (k int PRIMARY KEY, v int, w text)"),
        );
    }
    run(
        &executor,
        "CREATE MATERIALIZED VIEW t_by_v AS SELECT * FROM t WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)",
    );
    for k in 0..10_000 {
        for table in ["t", "u"] {
            run(
                &executor,
                &format!("INSERT INTO {table} (k, v, w) VALUES ({k}, {k}, 'row {k}')"),
            );
        }
    }
    let mut group = c.benchmark_group("write with a materialized view");
    let mut k = 10_000;
    for (name, table) in [("insert, with a view", "t"), ("insert, without", "u")] {
        group.bench_function(name, |b| {
            b.iter(|| {
                k += 1;
                run(
                    &executor,
                    &format!("INSERT INTO {table} (k, v, w) VALUES ({k}, 7, 'x')"),
                )
            })
        });
    }
    let mut n = 0;
    for (name, table) in [
        ("update moving the view row, with a view", "t"),
        ("same update, without", "u"),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                run(
                    &executor,
                    &format!("UPDATE {table} SET v = {} WHERE k = {}", n, n % 10_000),
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, lookups, view_writes);
criterion_main!(benches);
