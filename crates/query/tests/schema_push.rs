//! A schema pushed by a peer may drop only what a DDL statement dropped:
//! the node that ran the DROP records it in the schema it sends, and a
//! schema that loses a table without that record is refused, its data kept.

mod common;
use common::memory_executor as executor;
use rocksandra_query::{Executor, Request};
use rocksandra_wire::ResultBody;

fn run(executor: &Executor, cql: &str) {
    executor
        .query(cql, &Request::default())
        .unwrap_or_else(|e| panic!("{cql}: {e}"));
}

fn row_count(executor: &Executor, cql: &str) -> usize {
    let outcome = executor.query(cql, &Request::default()).expect("select");
    match outcome.body {
        ResultBody::Rows(rows) => rows.rows.len(),
        other => panic!("not rows: {other:?}"),
    }
}

fn blob(executor: &Executor) -> (u64, Vec<u8>) {
    let (epoch, _, json) = executor.schema_blob();
    (epoch, json)
}

const SETUP: [&str; 4] = [
    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TABLE ks.keep (k int PRIMARY KEY, v int)",
    "CREATE TABLE ks.gone (k int PRIMARY KEY, v int)",
    "INSERT INTO ks.gone (k, v) VALUES (1, 1)",
];

/// Node `a` creates the tables and `b` adopts its schema; `b` holds a row.
fn two_nodes() -> (Executor, Executor, u64, Vec<u8>) {
    let (a, b) = (executor(), executor());
    for cql in &SETUP[..3] {
        run(&a, cql);
    }
    let (epoch, json) = blob(&a);
    b.install_schema(epoch, &json).expect("creates");
    run(&b, SETUP[3]);
    (a, b, epoch, json)
}

#[test]
fn a_drop_made_by_ddl_reaches_the_peer() {
    let (a, b, _, _) = two_nodes();
    run(&a, "DROP TABLE ks.gone");
    let (epoch, json) = blob(&a);
    let changes = b
        .install_schema(epoch, &json)
        .expect("a DDL drop is adopted");
    assert!(!changes.is_empty());
    assert!(b.schema().table("ks", "gone").is_none());
    assert!(b.schema().table("ks", "keep").is_some());
}

#[test]
fn a_schema_that_loses_a_table_without_a_drop_is_refused() {
    let (_, b, epoch, json) = two_nodes();
    // A forged push: a newer epoch whose keyspace no longer holds `gone`.
    let mut forged: serde_json::Value = serde_json::from_slice(&json).expect("json");
    forged["epoch"] = serde_json::json!(epoch + 10);
    let keyspaces = forged["keyspaces"].as_array_mut().expect("keyspaces");
    let ks = keyspaces
        .iter_mut()
        .find(|k| k["name"] == "ks")
        .expect("ks");
    let tables = ks["tables"].as_array_mut().expect("tables");
    tables.retain(|t| t["name"] != "gone");
    let forged = serde_json::to_vec(&forged).expect("json");
    let error = b.install_schema(epoch + 10, &forged).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("drops ks.gone without a DROP statement"),
        "{error}"
    );
    assert!(b.schema().table("ks", "gone").is_some());
    assert_eq!(b.schema().epoch, epoch, "the schema is left as it was");
    assert_eq!(row_count(&b, "SELECT * FROM ks.gone"), 1);
}

#[test]
fn the_drop_record_survives_a_restart_of_the_schema() {
    let a = executor();
    for cql in &SETUP[..3] {
        run(&a, cql);
    }
    run(&a, "CREATE INDEX ON ks.keep (v)");
    run(&a, "DROP INDEX ks.keep_v_idx");
    run(&a, "DROP KEYSPACE ks");
    let (epoch, json) = blob(&a);
    let mut reread = rocksandra_query::system::builtin_schema();
    reread.load_stored_json(&json).expect("reads");
    assert_eq!(reread.epoch, epoch);
    // Two tables and the index's store.
    assert_eq!(
        reread.dropped_tables.len(),
        3,
        "{:?}",
        reread.dropped_tables
    );
}

/// What a node measured of a table survives schema changes: ALTER here,
/// a newer schema from a peer; a table dropped and created again starts
/// from nothing.
#[test]
fn table_metrics_survive_alter_and_a_peer_schema() {
    let (a, b, _, _) = two_nodes();
    let writes = |executor: &Executor| {
        let schema = executor.schema();
        let table = schema.table("ks", "gone").expect("table");
        table.metrics.write.snapshot().count()
    };
    assert_eq!(writes(&b), 1, "the INSERT on b");
    run(&b, "ALTER TABLE ks.gone WITH comment = 'altered'");
    assert_eq!(writes(&b), 1, "kept by ALTER");
    run(&a, "ALTER TABLE ks.gone ADD w int");
    let (epoch, json) = blob(&a);
    b.install_schema(epoch + 1, &json).expect("adopted");
    assert!(b
        .schema()
        .table("ks", "gone")
        .expect("table")
        .column("w")
        .is_some());
    assert_eq!(writes(&b), 1, "kept through a peer's schema");
    run(&b, "DROP TABLE ks.gone");
    run(&b, "CREATE TABLE ks.gone (k int PRIMARY KEY, v int)");
    assert_eq!(writes(&b), 0, "a new table starts from nothing");
}
