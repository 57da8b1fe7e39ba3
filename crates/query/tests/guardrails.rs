//! Cassandra 5.0's guardrails on the executor: each kind (a maximum, a
//! minimum, a flag) through the statements that meet it, as an ordinary
//! user and as the superuser, who is exempt. Expected texts are those a
//! Cassandra 5.0.6 node answered with the same settings
//! (tests/process/test_guardrails.py records the same through a driver).

mod common;

use rocksandra_query::guardrails::{Guardrails, Threshold};
use rocksandra_query::{Executor, Request};
use rocksandra_wire::ResultBody;

fn threshold(warn: i64, fail: i64) -> Threshold {
    Threshold { warn, fail }
}

struct Harness {
    executor: Executor,
    user: &'static str,
    page_size: Option<usize>,
}

/// PasswordAuthenticator on, the guardrails set, a keyspace `ks` with a
/// table `ks.t` made by the superuser, and an ordinary role `app`.
fn harness(guardrails: Guardrails) -> Harness {
    let executor = common::memory_executor();
    executor.enable_password_authentication(rocksandra_query::auth::AuthConfig {
        password_authenticator: true,
        cassandra_authorizer: false,
        bcrypt_cost: 4,
        ..Default::default()
    });
    executor
        .setup_default_role()
        .expect("the default role is created");
    executor.set_guardrails(guardrails);
    executor.set_materialized_views_enabled(true);
    let mut h = Harness {
        executor,
        user: "cassandra",
        page_size: None,
    };
    h.check(&[
        (
            "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}",
            "OK",
        ),
        ("CREATE TABLE ks.t (k int, c int, v int, w int, PRIMARY KEY (k, c))", "OK"),
        ("INSERT INTO ks.t (k, c, v, w) VALUES (1, 1, 1, 1)", "OK"),
        ("CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true", "OK"),
    ]);
    h.user = "app";
    h
}

impl Harness {
    /// `OK` or `ERROR <message>`, then a `WARN <message>` line per warning.
    fn run(&self, cql: &str) -> String {
        let request = Request {
            user: Some(self.user.to_string()),
            page_size: self.page_size,
            ..Request::default()
        };
        match self.executor.query(cql, &request) {
            Ok(outcome) => {
                let mut lines = vec![match outcome.body {
                    ResultBody::Rows(rows) => format!("{} rows", rows.rows.len()),
                    _ => "OK".to_string(),
                }];
                lines.extend(outcome.warnings.iter().map(|w| format!("WARN {w}")));
                lines.join("\n")
            }
            Err(e) => format!("ERROR {e}"),
        }
    }

    fn check(&mut self, script: &[(&str, &str)]) {
        for (cql, expected) in script {
            assert_eq!(&self.run(cql), expected, "statement: {cql}");
        }
    }
}

#[test]
fn keyspace_count_and_replication_factor() {
    let mut h = harness(Guardrails {
        keyspaces: threshold(1, 2),
        minimum_replication_factor: threshold(2, 1),
        maximum_replication_factor: threshold(2, 3),
        simplestrategy_enabled: false,
        ..Guardrails::DEFAULT
    });
    h.check(&[
        (
            "CREATE KEYSPACE ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}",
            "OK\n\
             WARN Guardrail keyspaces violated: Creating keyspace ks2, current number of keyspaces 2 exceeds warning threshold of 1.\n\
             WARN Guardrail minimum_replication_factor violated: The keyspace ks2 has a replication factor of 1, below the warning threshold of 2.",
        ),
        (
            "CREATE KEYSPACE ks3 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}",
            "ERROR Guardrail keyspaces violated: Cannot have more than 2 keyspaces, aborting the creation of keyspace ks3",
        ),
        // Counted before IF NOT EXISTS is looked at, as in Cassandra.
        (
            "CREATE KEYSPACE IF NOT EXISTS ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}",
            "ERROR Guardrail keyspaces violated: Cannot have more than 2 keyspaces, aborting the creation of keyspace ks2",
        ),
        (
            "ALTER KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "ERROR Guardrail simplestrategy violated: SimpleStrategy is not allowed",
        ),
        (
            "ALTER KEYSPACE ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3}",
            "OK\n\
             WARN Guardrail maximum_replication_factor violated: The keyspace ks2 has a replication factor of 3, above the warning threshold of 2.\n\
             WARN Your replication factor 3 for keyspace ks2 is higher than the number of nodes 1 for datacenter datacenter1",
        ),
        (
            "ALTER KEYSPACE ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 4}",
            "ERROR Guardrail maximum_replication_factor violated: The keyspace ks2 has a replication factor of 4, above the failure threshold of 3.",
        ),
        // The failed ALTER changed nothing.
        ("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'ks2'", "1 rows"),
    ]);
}

#[test]
fn table_column_index_view_and_type_counts() {
    let mut h = harness(Guardrails {
        tables: threshold(2, 3),
        columns_per_table: threshold(3, 4),
        secondary_indexes_per_table: threshold(1, 2),
        materialized_views_per_table: threshold(1, 2),
        fields_per_udt: threshold(2, 3),
        compact_tables_enabled: false,
        ..Guardrails::DEFAULT
    });
    h.check(&[
        (
            "CREATE TABLE ks.wide (k int PRIMARY KEY, a int, b int, c int)",
            "OK\nWARN Guardrail columns_per_table violated: The table wide has 4 columns, this exceeds the warning threshold of 3.",
        ),
        (
            "CREATE TABLE ks.cs (k int PRIMARY KEY, v int) WITH COMPACT STORAGE",
            "ERROR Guardrail compact_tables violated: Creation of new COMPACT STORAGE tables is not allowed",
        ),
        (
            "CREATE TABLE ks.b (k int PRIMARY KEY, v int)",
            "OK\nWARN Guardrail tables violated: Creating table b, current number of tables 3 exceeds warning threshold of 2.",
        ),
        (
            "CREATE TABLE ks.toowide (k int PRIMARY KEY, a int, b int, c int, d int)",
            "ERROR Guardrail columns_per_table violated: Tables cannot have more than 4 columns, but 5 provided for table toowide",
        ),
        (
            "CREATE TABLE ks.c (k int PRIMARY KEY)",
            "ERROR Guardrail tables violated: Cannot have more than 3 tables, aborting the creation of table c",
        ),
        ("ALTER TABLE ks.b ADD (x int, y int)", "OK\nWARN Guardrail columns_per_table violated: The table b has 4 columns, this exceeds the warning threshold of 3."),
        ("ALTER TABLE ks.b ADD z int", "ERROR Guardrail columns_per_table violated: Tables cannot have more than 4 columns, but 5 provided for table b"),
        ("CREATE TYPE ks.u2 (a int, b int)", "OK"),
        ("CREATE TYPE ks.u3 (a int, b int, c int)", "OK\nWARN Guardrail fields_per_udt violated: The user type u3 has 3 columns, this exceeds the warning threshold of 2."),
        ("CREATE TYPE ks.u4 (a int, b int, c int, d int)", "ERROR Guardrail fields_per_udt violated: User types cannot have more than 3 columns, but 4 provided for user type u4."),
        ("ALTER TYPE ks.u3 ADD d int", "ERROR Guardrail fields_per_udt violated: User types cannot have more than 3 columns, but 4 provided for user type u3."),
        ("ALTER TYPE ks.u2 ADD c int", "OK\nWARN Guardrail fields_per_udt violated: The user type u2 has 3 columns, this exceeds the warning threshold of 2."),
        ("CREATE INDEX i1 ON ks.t (v)", "OK"),
        ("CREATE INDEX ON ks.t (w)", "OK\nWARN Guardrail secondary_indexes_per_table violated: Creating secondary index on table t, current number of indexes 2 exceeds warning threshold of 1."),
        ("CREATE INDEX i3 ON ks.t (c)", "ERROR Guardrail secondary_indexes_per_table violated: Tables cannot have more than 2 secondary indexes, aborting the creation of secondary index i3 on table t"),
        (
            "CREATE MATERIALIZED VIEW ks.mv1 AS SELECT k, c FROM ks.t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "OK\nWARN Materialized views are experimental and are not recommended for production use.",
        ),
        (
            "CREATE MATERIALIZED VIEW ks.mv2 AS SELECT k, c FROM ks.t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "OK\nWARN Guardrail materialized_views_per_table violated: Creating materialized view mv2 on table t, current number of views 2 exceeds warning threshold of 1.\n\
             WARN Materialized views are experimental and are not recommended for production use.",
        ),
        (
            "CREATE MATERIALIZED VIEW ks.mv3 AS SELECT k, c FROM ks.t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "ERROR Guardrail materialized_views_per_table violated: Tables cannot have more than 2 materialized views, aborting the creation of materialized view mv3 on table t",
        ),
    ]);
    // The superuser is exempt.
    h.user = "cassandra";
    h.check(&[
        (
            "CREATE TABLE ks.super (k int PRIMARY KEY, a int, b int, c int, d int)",
            "OK",
        ),
        ("CREATE INDEX i3 ON ks.t (c)", "OK"),
    ]);
}

#[test]
fn select_page_size_in_keys_filtering_and_group_by() {
    let mut h = harness(Guardrails {
        page_size: threshold(100, 5000),
        partition_keys_in_select: threshold(2, 3),
        allow_filtering_enabled: false,
        group_by_enabled: false,
        ..Guardrails::DEFAULT
    });
    h.page_size = Some(5000);
    h.check(&[
        ("SELECT * FROM ks.t WHERE k = 1", "1 rows\nWARN Guardrail page_size violated: Query for table t with page size 5000 exceeds warning threshold of 100."),
        ("SELECT * FROM ks.t WHERE k = 1 AND c = 1", "1 rows\nWARN Guardrail page_size violated: Query for table t with page size 5000 exceeds warning threshold of 100."),
        ("SELECT * FROM ks.t WHERE k = 1 LIMIT 10", "1 rows"),
        ("SELECT count(*) FROM ks.t WHERE k = 1", "1 rows\nWARN Guardrail page_size violated: Query for table t with page size 5000 exceeds warning threshold of 100."),
    ]);
    h.page_size = Some(6000);
    h.check(&[(
        "SELECT * FROM ks.t WHERE k = 1",
        "ERROR Guardrail page_size violated: Aborting query for table t, page size 6000 exceeds fail threshold of 5000.",
    )]);
    h.page_size = Some(50);
    h.check(&[
        ("SELECT * FROM ks.t WHERE k = 1", "1 rows"),
        ("SELECT * FROM ks.t WHERE k IN (1, 2, 3)", "1 rows\nWARN Guardrail partition_keys_in_select violated: Query with partition keys in IN clause on table t, with number of partition keys 3 exceeds warning threshold of 2."),
        ("SELECT * FROM ks.t WHERE k IN (1, 2, 3, 4)", "ERROR Guardrail partition_keys_in_select violated: Aborting query with partition keys in IN clause on table t, number of partition keys 4 exceeds fail threshold of 3."),
        ("SELECT * FROM ks.t WHERE k = 1 ALLOW FILTERING", "ERROR Guardrail allow_filtering violated: Querying with ALLOW FILTERING is not allowed. ALLOW FILTERING can potentially visit all the data in the table and have unpredictable performance."),
        ("SELECT * FROM ks.t WHERE v = 1", "ERROR Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. Executing this query despite the performance unpredictability with ALLOW FILTERING has been disabled by the allow_filtering_enabled property in cassandra.yaml"),
        ("SELECT k, count(*) FROM ks.t WHERE k = 1 GROUP BY k", "ERROR Guardrail group_by violated: GROUP BY functionality is not allowed"),
        // The system keyspaces may be filtered.
        ("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = 'ks' ALLOW FILTERING", "1 rows"),
    ]);
    h.user = "cassandra";
    h.page_size = Some(6000);
    h.check(&[
        ("SELECT * FROM ks.t WHERE k IN (1, 2, 3, 4) ALLOW FILTERING", "1 rows"),
        ("SELECT * FROM ks.t WHERE v = 1", "ERROR Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"),
    ]);
}

#[test]
fn prepared_point_reads_meet_the_page_size_guardrail() {
    let h = harness(Guardrails {
        page_size: threshold(100, -1),
        ..Guardrails::DEFAULT
    });
    let prepared = h
        .executor
        .prepare("SELECT v FROM ks.t WHERE k = ? AND c = ?", None)
        .expect("prepared");
    let int = |n: i32| rocksandra_wire::Value::Bytes(n.to_be_bytes().to_vec().into());
    let outcome = h
        .executor
        .execute(
            &prepared.id,
            Request {
                user: Some("app".into()),
                page_size: Some(5000),
                values: vec![int(1), int(1)],
                ..Request::default()
            },
        )
        .expect("executed");
    assert_eq!(
        outcome.warnings,
        vec!["Guardrail page_size violated: Query for table t with page size 5000 exceeds warning threshold of 100."]
    );
}

#[test]
fn flags_refuse_drop_truncate_timestamps_indexes_and_alter() {
    let mut h = harness(Guardrails {
        user_timestamps_enabled: false,
        drop_truncate_table_enabled: false,
        drop_keyspace_enabled: false,
        secondary_indexes_enabled: false,
        alter_table_enabled: false,
        ..Guardrails::DEFAULT
    });
    let timestamps = "ERROR Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed";
    let drop_truncate = "ERROR Guardrail drop_truncate_table_enabled violated: DROP and TRUNCATE TABLE functionality is not allowed";
    let drop_keyspace = "ERROR Guardrail drop_keyspace_enabled violated: DROP KEYSPACE functionality is not allowed";
    let indexes =
        "ERROR Guardrail secondary_indexes violated: Creating secondary indexes is not allowed";
    h.check(&[
        ("INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 10", timestamps),
        ("UPDATE ks.t USING TIMESTAMP 10 SET v = 1 WHERE k = 1 AND c = 1", timestamps),
        ("DELETE FROM ks.t USING TIMESTAMP 10 WHERE k = 1 AND c = 1", timestamps),
        // A BATCH's own timestamp is allowed, as in Cassandra.
        ("BEGIN BATCH USING TIMESTAMP 10 INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1); APPLY BATCH", "OK"),
        ("INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TTL 100", "OK"),
        // Statements of a batch meet it; a conditional one is refused first
        // for having a timestamp at all.
        ("BEGIN UNLOGGED BATCH INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 5; INSERT INTO ks.t (k, c, v) VALUES (1, 2, 1); APPLY BATCH", timestamps),
        ("INSERT INTO ks.t JSON '{\"k\": 1, \"c\": 1, \"v\": 1}' USING TIMESTAMP 5", timestamps),
        ("INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) IF NOT EXISTS USING TIMESTAMP 5", "ERROR Cannot provide custom timestamp for conditional updates"),
        ("TRUNCATE ks.nonexistent", "ERROR table nonexistent does not exist"),
        ("TRUNCATE ks.t", drop_truncate),
        ("DROP TABLE ks.t", drop_truncate),
        ("DROP TABLE IF EXISTS ks.nonexistent", drop_truncate),
        ("DROP KEYSPACE ks", drop_keyspace),
        ("DROP KEYSPACE IF EXISTS nonexistent", drop_keyspace),
        ("CREATE INDEX ON ks.t (v)", indexes),
        ("CREATE CUSTOM INDEX ON ks.t (v) USING 'StorageAttachedIndex'", indexes),
        ("ALTER TABLE ks.t ADD x int", "ERROR Guardrail alter_table violated: ALTER TABLE changing columns is not allowed"),
        ("ALTER TABLE ks.t RENAME c TO cc", "ERROR Guardrail alter_table violated: ALTER TABLE changing columns is not allowed"),
        ("ALTER TABLE ks.t DROP w", "ERROR Guardrail alter_table violated: ALTER TABLE changing columns is not allowed"),
        ("ALTER TABLE ks.nonexistent ADD x int", "ERROR Table 'ks.nonexistent' doesn't exist"),
        ("ALTER TABLE ks.t WITH comment = 'x'", "OK"),
    ]);
    h.user = "cassandra";
    h.check(&[
        (
            "INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 10",
            "OK",
        ),
        ("TRUNCATE ks.t", "OK"),
        ("CREATE INDEX ON ks.t (v)", "OK"),
    ]);
}

#[test]
fn without_authentication_everyone_is_exempt() {
    // Cassandra counts every client as a superuser when no authenticator
    // requires a login.
    let executor = common::memory_executor();
    executor.set_guardrails(Guardrails {
        keyspaces: threshold(-1, 1),
        ..Guardrails::DEFAULT
    });
    for ks in ["a", "b", "c"] {
        let cql = format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        );
        let outcome = executor.query(&cql, &Request::default()).expect("created");
        assert!(outcome.warnings.is_empty());
    }
}

#[test]
fn views_count_as_tables_and_index_tables_do_not() {
    let mut h = harness(Guardrails {
        tables: threshold(2, 4),
        ..Guardrails::DEFAULT
    });
    h.user = "cassandra";
    h.check(&[
        ("CREATE INDEX ON ks.t (v)", "OK"),
        (
            "CREATE MATERIALIZED VIEW ks.mv AS SELECT k, c FROM ks.t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)",
            "OK\nWARN Materialized views are experimental and are not recommended for production use.",
        ),
    ]);
    h.user = "app";
    h.check(&[(
        "CREATE TABLE ks.a (k int PRIMARY KEY)",
        "OK\nWARN Guardrail tables violated: Creating table a, current number of tables 3 exceeds warning threshold of 2.",
    )]);
}

#[test]
fn written_values_and_collections() {
    let mut h = harness(Guardrails {
        column_value_size: threshold(10, 40),
        collection_size: threshold(50, 100),
        items_per_collection: threshold(2, 4),
        ..Guardrails::DEFAULT
    });
    let v_warning = "WARN Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10.";
    let l_warning = "WARN Guardrail column_value_size violated: Value of column 'l' has size 16, this exceeds the warning threshold of 10.";
    h.check(&[
        (
            "CREATE TABLE ks.c (k int, c int, v text, s set<int>, l list<int>, m map<int, int>, fs frozen<set<int>>, PRIMARY KEY (k, c))",
            "OK",
        ),
        ("INSERT INTO ks.c (k, c, v) VALUES (1, 1, 'abc')", "OK"),
        (
            "UPDATE ks.c SET v = 'abcdefghijkl' WHERE k = 1 AND c IN (1, 2)",
            &format!("OK\n{v_warning}\n{v_warning}"),
        ),
        (
            "INSERT INTO ks.c (k, c, v) VALUES (1, 1, 'abcdefghijabcdefghijabcdefghijabcdefghijX')",
            "ERROR Guardrail column_value_size violated: Value of column 'v' has size 41, this exceeds the failure threshold of 40.",
        ),
        (
            "UPDATE ks.c SET v = 'abcdefghijkl', s = {1, 2, 3} WHERE k = 1 AND c = 1",
            &format!("OK\n{v_warning}\n\
             WARN Guardrail items_per_collection violated: Detected collection s with 3 items, this exceeds the warning threshold of 2.\n\
             WARN Guardrail collection_size violated: Detected collection s of size 72, this exceeds the warning threshold of 50."),
        ),
        (
            "UPDATE ks.c SET m = m + {1: 1, 2: 2, 3: 3, 4: 4, 5: 5} WHERE k = 1 AND c = 1",
            "ERROR Guardrail items_per_collection violated: Detected collection m with 5 items, this exceeds the failure threshold of 4.",
        ),
        ("UPDATE ks.c SET s = s - {1, 2, 3, 4, 5} WHERE k = 1 AND c = 1", "OK"),
        ("UPDATE ks.c SET m[5] = 5 WHERE k = 1 AND c = 1", "OK"),
        (
            "UPDATE ks.c SET l = l + [1, 2] WHERE k = 1 AND c = 1",
            &format!("OK\n{l_warning}\n{l_warning}\n\
             WARN Guardrail collection_size violated: Detected collection l of size 80, this exceeds the warning threshold of 50."),
        ),
        (
            "UPDATE ks.c SET l = [3] + l WHERE k = 1 AND c = 1",
            &format!("OK\n{l_warning}"),
        ),
        (
            "UPDATE ks.c SET fs = {1, 2, 3} WHERE k = 1 AND c = 1",
            "OK\n\
             WARN Guardrail items_per_collection violated: Detected collection fs with 3 items, this exceeds the warning threshold of 2.\n\
             WARN Guardrail column_value_size violated: Value of column 'fs' has size 28, this exceeds the warning threshold of 10.",
        ),
        (
            "INSERT INTO ks.c (k, c, v) VALUES (4, 1, 'abcdefghijkl') IF NOT EXISTS",
            &format!("1 rows\n{v_warning}"),
        ),
        // The condition does not hold: nothing is written, nothing checked.
        ("INSERT INTO ks.c (k, c, v) VALUES (4, 1, 'abcdefghijabcdefghijabcdefghijabcdefghijX') IF NOT EXISTS", "1 rows"),
    ]);
    h.user = "cassandra";
    h.check(&[(
        "INSERT INTO ks.c (k, c, v, s) VALUES (1, 1, 'abcdefghijabcdefghijabcdefghijabcdefghijX', {1, 2, 3, 4, 5})",
        "OK",
    )]);
}

#[test]
fn in_products_and_vector_dimensions() {
    let mut h = harness(Guardrails {
        in_select_cartesian_product: threshold(4, 9),
        vector_dimensions: threshold(3, 5),
        ..Guardrails::DEFAULT
    });
    let product = |on: &str, n: usize| {
        format!("WARN Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on {on} produces {n} values, this exceeds warning threshold of 4.")
    };
    h.check(&[
        ("CREATE TABLE ks.ct (a int, b int, c int, d int, v int, PRIMARY KEY ((a, b), c, d))", "OK"),
        ("SELECT * FROM ks.ct WHERE a IN (1, 2) AND b IN (1, 2)", "0 rows"),
        (
            "SELECT * FROM ks.ct WHERE a IN (1, 2, 3, 4, 5) AND b = 1",
            &format!("0 rows\n{}\n{}", product("partition key", 5), product("partition key", 5)),
        ),
        (
            "SELECT * FROM ks.ct WHERE a = 1 AND b = 1 AND c IN (1, 2) AND d IN (1, 2, 3)",
            &format!("0 rows\n{}", product("clustering key", 6)),
        ),
        (
            "UPDATE ks.ct SET v = 1 WHERE a IN (1, 2) AND b IN (1, 2, 3) AND c = 1 AND d = 1",
            &format!("OK\n{}", product("partition key", 6)),
        ),
        (
            "DELETE FROM ks.ct WHERE a = 1 AND b = 1 AND c IN (1, 2, 3) AND d IN (1, 2, 3, 4)",
            "ERROR Guardrail in_select_cartesian_product violated: Aborting query because the cartesian product of the IN restrictions on clustering key produces 12 values, this exceeds fail threshold of 9.",
        ),
        (
            "CREATE TABLE ks.vec4 (k int PRIMARY KEY, v vector<float, 4>)",
            "OK\nWARN Guardrail vector_dimensions violated: Column v has a vector of 4 dimensions, this exceeds the warning threshold of 3.",
        ),
        (
            "ALTER TABLE ks.vec4 ADD w vector<int, 6>",
            "ERROR Guardrail vector_dimensions violated: Column w has a vector of 6 dimensions, this exceeds the failure threshold of 5.",
        ),
        (
            "CREATE TYPE ks.vt (a vector<float, 4>)",
            "OK\nWARN Guardrail vector_dimensions violated: Field a has a vector of 4 dimensions, this exceeds the warning threshold of 3.",
        ),
    ]);
}

#[test]
fn consistency_levels() {
    use rocksandra_query::guardrails::ConsistencyLevels;
    use rocksandra_wire::Consistency;
    let levels = |list: &[Consistency]| {
        list.iter()
            .fold(ConsistencyLevels::EMPTY, |s, c| s.with(*c))
    };
    let h = harness(Guardrails {
        read_consistency_levels_warned: levels(&[Consistency::One]),
        read_consistency_levels_disallowed: levels(&[Consistency::All, Consistency::Two]),
        write_consistency_levels_warned: levels(&[Consistency::One]),
        write_consistency_levels_disallowed: levels(&[Consistency::All, Consistency::LocalSerial]),
        ..Guardrails::DEFAULT
    });
    let run = |cql: &str, consistency: Consistency, serial: Option<Consistency>| {
        let request = Request {
            user: Some("app".to_string()),
            consistency,
            serial_consistency: serial,
            ..Request::default()
        };
        match h.executor.query(cql, &request) {
            Ok(outcome) => outcome.warnings.join("\n"),
            Err(e) => format!("ERROR {e}"),
        }
    };
    let select = "SELECT * FROM ks.t WHERE k = 1";
    let insert = "INSERT INTO ks.t (k, c, v) VALUES (6, 1, 1)";
    assert_eq!(run(select, Consistency::LocalOne, None), "");
    assert_eq!(run(select, Consistency::One, None), "Guardrail read_consistency_levels violated: Provided values [ONE] are not recommended for read consistency levels (warned values are: [ONE])");
    assert_eq!(run(select, Consistency::All, None), "ERROR Guardrail read_consistency_levels violated: Provided values [ALL] are not allowed for read consistency levels (disallowed values are: [TWO, ALL])");
    assert_eq!(run(insert, Consistency::One, None), "Guardrail write_consistency_levels violated: Provided values [ONE] are not recommended for write consistency levels (warned values are: [ONE])");
    assert_eq!(run(insert, Consistency::LocalOne, Some(Consistency::LocalSerial)), "ERROR Guardrail write_consistency_levels violated: Provided values [LOCAL_SERIAL] are not allowed for write consistency levels (disallowed values are: [ALL, LOCAL_SERIAL])");
    assert_eq!(run("BEGIN BATCH INSERT INTO ks.t (k, c, v) VALUES (6, 1, 1); APPLY BATCH", Consistency::All, Some(Consistency::LocalSerial)), "ERROR Guardrail write_consistency_levels violated: Provided values [ALL, LOCAL_SERIAL] are not allowed for write consistency levels (disallowed values are: [ALL, LOCAL_SERIAL])");
    assert_eq!(
        run(
            "CREATE TABLE ks.other (k int PRIMARY KEY)",
            Consistency::All,
            None
        ),
        ""
    );
}

#[test]
fn list_operations_and_table_options() {
    let mut h = harness(Guardrails {
        read_before_write_list_operations_enabled: false,
        uncompressed_tables_enabled: false,
        ..Guardrails::DEFAULT
    });
    let zero_ttl = "WARN Guardrail zero_ttl_on_twcs violated: 0 default_time_to_live on a table with TimeWindowCompactionStrategy compaction strategy is not recommended. It is suspicious to use default_time_to_live set to 0 with such compaction strategy. Please keep in mind that data will not start to automatically expire after they are older than a respective compaction window unit of a certain size. Please set TTL for your INSERT or UPDATE statements if you expect data to be expired as table settings will not do it. ";
    let uncompressed =
        "ERROR Guardrail uncompressed_tables_enabled violated: Uncompressed table is not allowed";
    h.check(&[
        ("CREATE TABLE ks.c (k int PRIMARY KEY, l list<int>)", "OK"),
        ("INSERT INTO ks.c (k, l) VALUES (7, [1, 2, 3])", "OK"),
        (
            "UPDATE ks.c SET l[0] = 5 WHERE k = 7",
            "ERROR Guardrail read_before_write_list_operations violated: Setting of list items by index requiring read before write is not allowed",
        ),
        (
            "UPDATE ks.c SET l = l - [1] WHERE k = 8",
            "ERROR Guardrail read_before_write_list_operations violated: Removal of list items requiring read before write is not allowed",
        ),
        (
            "DELETE l[0] FROM ks.c WHERE k = 7",
            "ERROR Guardrail read_before_write_list_operations violated: Removal of list items by index requiring read before write is not allowed",
        ),
        ("UPDATE ks.c SET l = l + [4] WHERE k = 7", "OK"),
        (
            "CREATE TABLE ks.tw (k int PRIMARY KEY) WITH compaction = {'class': 'TimeWindowCompactionStrategy'}",
            &format!("OK\n{zero_ttl}"),
        ),
        (
            "CREATE TABLE ks.tw2 (k int PRIMARY KEY) WITH compaction = {'class': 'TimeWindowCompactionStrategy'} AND default_time_to_live = 60",
            "OK",
        ),
        ("ALTER TABLE ks.tw2 WITH default_time_to_live = 0", "OK"),
        (
            "CREATE TABLE ks.unc (k int PRIMARY KEY) WITH compression = {'enabled': false}",
            uncompressed,
        ),
        ("ALTER TABLE ks.tw WITH compression = {'enabled': false}", uncompressed),
    ]);
    h.user = "cassandra";
    h.check(&[
        ("UPDATE ks.c SET l[0] = 5 WHERE k = 7", "OK"),
        (
            "CREATE TABLE ks.unc (k int PRIMARY KEY) WITH compression = {'enabled': false}",
            "OK",
        ),
    ]);
    h.user = "app";
    h.check(&[
        ("ALTER TABLE ks.unc WITH comment = 'x'", uncompressed),
        ("ALTER TABLE ks.unc ADD v int", "OK"),
    ]);
}

#[test]
fn ignored_table_options_are_dropped_from_the_statement() {
    let ignored = rocksandra_query::guardrails::TableProperties::EMPTY
        .with("read_repair")
        .expect("a table option");
    let mut h = harness(Guardrails {
        table_properties_ignored: ignored,
        ..Guardrails::DEFAULT
    });
    let none_read_repair = |table: &str| {
        format!("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = '{table}' AND read_repair = 'NONE' ALLOW FILTERING")
    };
    h.check(&[
        (
            "CREATE TABLE ks.a (k int PRIMARY KEY) WITH read_repair = 'NONE'",
            "OK\nWARN Guardrail table_properties violated: Ignoring provided values [read_repair] as they are not supported for Table Properties (ignored values are: [read_repair])",
        ),
        (&none_read_repair("a"), "0 rows"),
    ]);
    h.user = "cassandra";
    h.check(&[
        (
            "CREATE TABLE ks.b (k int PRIMARY KEY) WITH read_repair = 'NONE'",
            "OK",
        ),
        (&none_read_repair("b"), "1 rows"),
    ]);
}

/// A prepared query needing ALLOW FILTERING is refused when an ordinary
/// user prepares it, in the words the `allow_filtering` guardrail has for
/// that user, as Cassandra refuses it; a superuser prepares it, and an
/// ordinary user running that statement is refused when it runs.
#[test]
fn filtering_refusal_of_a_prepared_query_names_its_user_guardrail() {
    let h = harness(Guardrails {
        allow_filtering_enabled: false,
        ..Guardrails::DEFAULT
    });
    let disabled = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. Executing this query despite the performance unpredictability with ALLOW FILTERING has been disabled by the allow_filtering_enabled property in cassandra.yaml";
    let usual = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";
    let as_user = |user: &str| Request {
        user: Some(user.into()),
        ..Request::default()
    };
    let query = "SELECT * FROM ks.t WHERE v = ?";
    let refusal = |user: &str| match h.executor.prepare_for(query, None, &as_user(user)) {
        Ok(_) => "OK".to_string(),
        Err(e) => e.to_string(),
    };
    assert_eq!(refusal("app"), disabled);
    assert_eq!(refusal("cassandra"), usual);
    let allowing = "SELECT * FROM ks.t WHERE v = ? ALLOW FILTERING";
    match h.executor.prepare_for(allowing, None, &as_user("app")) {
        Ok(_) => panic!("ALLOW FILTERING prepared for an ordinary user"),
        Err(e) => assert!(e
            .to_string()
            .starts_with("Guardrail allow_filtering violated")),
    }
    let prepared = h
        .executor
        .prepare_for(allowing, None, &as_user("cassandra"))
        .expect("a superuser prepares it");
    let int = |n: i32| rocksandra_wire::Value::Bytes(n.to_be_bytes().to_vec().into());
    let run_as = |user: &str| {
        let request = Request {
            values: vec![int(1)],
            ..as_user(user)
        };
        match h.executor.execute(&prepared.id, request) {
            Ok(_) => "OK".to_string(),
            Err(e) => e.to_string(),
        }
    };
    assert!(run_as("app").starts_with("Guardrail allow_filtering violated"));
    assert_eq!(run_as("cassandra"), "OK");
}
