//! DESCRIBE against Cassandra 5.0.6's recorded answers
//! (tests/golden/expected/describe.out) and a few shapes checked on a node.

use std::collections::BTreeMap;
use std::sync::Arc;

use rocksandra_cql::ast::Statement;

use super::*;
use crate::schema::{ColumnKind::*, DroppedColumn};
use crate::system::tests::{node, schema_with, simple_strategy, udt, user_table};

const EXPECTED: &str = include_str!("../../../../tests/golden/expected/describe.out");

/// golden_describe of tests/golden/cases/describe.cql, built as DDL would.
fn golden_describe() -> Keyspace {
    let ks = "golden_describe";
    let addr = udt(
        ks,
        "addr",
        &[
            ("street", "text"),
            ("Zip", "int"),
            ("tags", "frozen<set<text>>"),
        ],
        &[],
    );
    let types = vec![addr];
    let simple = user_table(
        ks,
        "simple",
        &types,
        &[
            ("k", "int", PartitionKey, 0, false),
            ("v", "text", Regular, 0, false),
        ],
    );
    let mut wide = user_table(
        ks,
        "wide",
        &types,
        &[
            ("p", "int", PartitionKey, 0, false),
            ("q", "text", PartitionKey, 1, false),
            ("c", "timeuuid", Clustering, 0, true),
            ("d", "int", Clustering, 1, false),
            ("s", "text", Static, 0, false),
            ("v", "frozen<addr>", Regular, 0, false),
            ("l", "list<int>", Regular, 0, false),
            ("m", "map<text, int>", Regular, 0, false),
            ("vec", "vector<float, 3>", Regular, 0, false),
        ],
    );
    wide.params.comment = "it's wide".into();
    wide.params.default_time_to_live = 100;
    wide.params.gc_grace_seconds = 3600;
    wide.indexes.push(Index {
        name: "wide_d".into(),
        kind: "COMPOSITES".into(),
        options: [("target".to_string(), "d".to_string())]
            .into_iter()
            .collect(),
        storage_id: None,
        built: false,
    });
    let quoted = user_table(
        ks,
        "Quoted",
        &types,
        &[
            ("Key", "int", PartitionKey, 0, false),
            ("Col", "int", Clustering, 0, false),
            ("v", "int", Regular, 0, false),
        ],
    );
    let counts = user_table(
        ks,
        "counts",
        &types,
        &[
            ("k", "int", PartitionKey, 0, false),
            ("c", "counter", Regular, 0, false),
        ],
    );
    let tables: BTreeMap<String, Arc<Table>> = [simple, wide, quoted, counts]
        .into_iter()
        .map(|t| (t.name.clone(), Arc::new(t)))
        .collect();
    Keyspace {
        name: ks.into(),
        replication: simple_strategy(1),
        durable_writes: true,
        tables,
        types,
        functions: Vec::new(),
        aggregates: Vec::new(),
        is_virtual: false,
    }
}

/// A string as the golden runner prints it.
fn render_text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''").replace('\\', "\\\\"))
}

/// A DESCRIBE outcome as the golden runner prints it.
fn render(result: &Result<DescribeResult>) -> String {
    let result = match result {
        Ok(r) => r,
        Err(e) => return format!("ERROR Invalid/0x2200 {e}"),
    };
    let header: Vec<String> = result
        .columns
        .iter()
        .map(|(name, ty)| format!("{name} {ty}"))
        .collect();
    let mut lines = vec![format!("[{}]", header.join(", "))];
    let statement_column = result
        .columns
        .last()
        .is_some_and(|(name, _)| name == "create_statement");
    for row in &result.rows {
        let cells: Vec<String> = row
            .iter()
            .map(|c| render_text(&String::from_utf8_lossy(c.as_deref().unwrap_or_default())))
            .collect();
        if statement_column {
            lines.push(cells[..cells.len() - 1].join(" | "));
            let text = String::from_utf8_lossy(row[row.len() - 1].as_deref().unwrap_or_default())
                .into_owned();
            lines.extend(text.split('\n').map(|l| format!("    {l}")));
        } else {
            lines.push(cells.join(" | "));
        }
    }
    lines.push(format!("({} rows)", result.rows.len()));
    lines.join("\n")
}

/// The recorded output blocks: statement text -> rendered answer.
fn expected_blocks() -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    for block in EXPECTED.split("\n\n") {
        let Some(rest) = block.strip_prefix("> ") else {
            continue;
        };
        let (statement, output) = rest.split_once('\n').unwrap_or((rest, ""));
        blocks.push((statement.to_string(), output.trim_end().to_string()));
    }
    blocks
}

fn run(statement: &str, schema: &Schema, keyspace: Option<&str>) -> Result<DescribeResult> {
    let parsed = rocksandra_cql::parse_statement(statement).expect("DESCRIBE parses");
    let Statement::Describe(d) = parsed.statement else {
        panic!("not a DESCRIBE: {statement}");
    };
    describe(&d, schema, keyspace, &node())
}

#[test]
fn golden_describe_output_matches_cassandra() {
    let schema = schema_with(vec![golden_describe()]);
    let mut keyspace: Option<&str> = None;
    let mut checked = 0;
    for (statement, expected) in expected_blocks() {
        if statement.starts_with("USE ") {
            keyspace = Some("golden_describe");
            continue;
        }
        let is_describe = statement.starts_with("DESC");
        if !is_describe || statement.contains("LIMIT") {
            continue;
        }
        let result = run(&statement, &schema, keyspace);
        if statement.contains("WITH INTERNALS") {
            // Recorded as skip-output (the id is random): shape only.
            let result = result.expect("describes");
            assert_eq!(result.rows.len(), 1);
            assert!(result.text_column(3)[0].contains(") WITH ID = "));
            continue;
        }
        assert_eq!(render(&result), expected, "{statement}");
        checked += 1;
    }
    assert_eq!(checked, 21, "every recorded DESCRIBE was compared");
}

#[test]
fn create_table_statement_for_a_hand_built_table() {
    let keyspace = golden_describe();
    let wide = keyspace.tables.get("wide").expect("wide");
    let text = create_table_statement(wide, false);
    let start = EXPECTED
        .find("    CREATE TABLE golden_describe.wide (")
        .expect("recorded");
    let end = start + EXPECTED[start..].find(";\n").expect("statement end") + 1;
    let recorded: Vec<&str> = EXPECTED[start..end]
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect();
    assert_eq!(text, recorded.join("\n"));
    assert_eq!(
        create_index_statement(wide, &wide.indexes[0]),
        "CREATE INDEX wide_d ON golden_describe.wide (d);"
    );
    assert_eq!(
        create_keyspace_statement(&keyspace),
        "CREATE KEYSPACE golden_describe WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}  AND durable_writes = true;"
    );
    assert_eq!(
        create_type_statement(&keyspace.types[0]),
        "CREATE TYPE golden_describe.addr (\n    street text,\n    \"Zip\" int,\n    tags frozen<set<text>>\n);"
    );
}

/// Shapes recorded from a 5.0.6 node (not in the golden file): internals
/// with dropped columns, custom indexes, options, virtual tables.
#[test]
fn internals_custom_indexes_and_options() {
    let mut t = user_table(
        "dks",
        "sp",
        &[],
        &[
            ("k", "int", PartitionKey, 0, false),
            ("a", "int", Regular, 0, false),
        ],
    );
    t.dropped = vec![
        DroppedColumn {
            name: "b".into(),
            type_text: "int".into(),
            kind: Regular,
            dropped_time: 1_795_264_474_793_000,
            column_id: None,
        },
        DroppedColumn {
            name: "a".into(),
            type_text: "int".into(),
            kind: Static,
            dropped_time: 1_795_264_474_335_000,
            column_id: None,
        },
    ];
    t.params.bloom_filter_fp_chance = 0.0001;
    t.params.crc_check_chance = 0.25;
    let text = create_table_statement(&t, true);
    let id = uuid_text(t.id);
    assert!(text.starts_with(&format!(
        "CREATE TABLE dks.sp (\n    k int PRIMARY KEY,\n    a int static,\n    b int\n) WITH ID = {id}\n    AND additional_write_policy = '99p'\n"
    )), "{text}");
    assert!(text.contains("\n    AND bloom_filter_fp_chance = 1.0E-4\n"));
    assert!(text.contains("\n    AND crc_check_chance = 0.25\n"));
    assert!(text.ends_with(
        "    AND speculative_retry = '99p';\nALTER TABLE dks.sp DROP a USING TIMESTAMP 1795264474335000;\nALTER TABLE dks.sp ADD a int;\nALTER TABLE dks.sp DROP b USING TIMESTAMP 1795264474793000;"
    ), "{text}");

    let index = Index {
        name: "t2_custom".into(),
        kind: "CUSTOM".into(),
        options: [
            ("case_sensitive", "false"),
            (
                "class_name",
                "org.apache.cassandra.index.sai.StorageAttachedIndex",
            ),
            ("target", "txt"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        storage_id: None,
        built: false,
    };
    let t2 = user_table("dks", "t2", &[], &[("k", "int", PartitionKey, 0, false)]);
    assert_eq!(
        create_index_statement(&t2, &index),
        "CREATE CUSTOM INDEX t2_custom ON dks.t2 (txt) USING 'org.apache.cassandra.index.sai.StorageAttachedIndex' WITH OPTIONS = {'case_sensitive': 'false'};"
    );
    let schema = schema_with(Vec::new());
    let paxos = schema.table("system", "paxos").expect("paxos");
    assert_eq!(
        create_index_statement(paxos, &paxos.indexes[0]),
        "CREATE CUSTOM INDEX \"PaxosUncommittedIndex\" ON system.paxos () USING 'org.apache.cassandra.service.paxos.uncommitted.PaxosUncommittedIndex';"
    );
    assert_eq!(java_double(0.01), "0.01");
    assert_eq!(java_double(1.0), "1.0");
    assert_eq!(java_double(1e7), "1.0E7");
    assert_eq!(java_double(1.5e-5), "1.5E-5");
}

#[test]
fn static_columns_come_before_regular_ones() {
    // Recorded from a 5.0.6 node.
    let t = user_table(
        "dks",
        "st",
        &[],
        &[
            ("k", "int", PartitionKey, 0, false),
            ("c", "int", Clustering, 0, false),
            ("a", "int", Regular, 0, false),
            ("b", "list<int>", Regular, 0, false),
            ("z", "int", Static, 0, false),
            ("y", "set<int>", Static, 0, false),
        ],
    );
    assert!(create_table_statement(&t, false).starts_with(
        "CREATE TABLE dks.st (\n    k int,\n    c int,\n    z int static,\n    y set<int> static,\n    a int,\n    b list<int>,\n    PRIMARY KEY (k, c)\n) WITH CLUSTERING ORDER BY (c ASC)\n    AND additional_write_policy = '99p'\n"
    ));
}

#[test]
fn system_and_virtual_tables() {
    let schema = schema_with(Vec::new());
    let result =
        run("DESCRIBE TABLE system_virtual_schema.tables", &schema, None).expect("describes");
    assert_eq!(
        result.text_column(3),
        ["/*\nWarning: Table system_virtual_schema.tables is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\nVIRTUAL TABLE system_virtual_schema.tables (\n    keyspace_name text,\n    table_name text,\n    comment text,\n    PRIMARY KEY (keyspace_name, table_name)\n) WITH CLUSTERING ORDER BY (table_name ASC)\n    AND comment = 'virtual table definitions';\n*/"]
    );
    let result = run("DESCRIBE KEYSPACE system_views", &schema, None).expect("describes");
    assert_eq!(
        result.text_column(3)[0],
        "/*\nWarning: Keyspace system_views is a virtual keyspace and cannot be recreated with CQL.\nStructure, for reference:\nVIRTUAL KEYSPACE system_views;\n*/"
    );
    let result = run("DESCRIBE TABLE system.local", &schema, None).expect("describes");
    let text = &result.text_column(3)[0];
    assert!(text.starts_with(
        "CREATE TABLE system.local (\n    key text PRIMARY KEY,\n    bootstrapped text,\n"
    ));
    assert!(text.contains(
        "    tokens set<text>,\n    truncated_at map<uuid, blob>\n) WITH additional_write_policy"
    ));
    assert!(text.contains("\n    AND comment = 'information about the local node'\n"));
    assert!(text.contains("\n    AND gc_grace_seconds = 0\n"));
    assert!(text.contains("\n    AND memtable_flush_period_in_ms = 3600000\n"));
    let result = run("DESCRIBE KEYSPACE system", &schema, None).expect("describes");
    assert_eq!(result.rows.len(), 25, "keyspace, 23 tables, paxos' index");
    assert_eq!(
        result.text_column(3)[0],
        "CREATE KEYSPACE system WITH replication = {'class': 'LocalStrategy'}  AND durable_writes = true;"
    );
    // Names sort ignoring case: IndexInfo between compaction_history and local.
    let names = result.text_column(2);
    let position = |n: &str| names.iter().position(|x| x == n).expect("listed");
    assert!(position("compaction_history") < position("\"IndexInfo\""));
    assert!(position("\"IndexInfo\"") < position("local"));
}

#[test]
fn listings_schema_and_cluster() {
    let schema = schema_with(vec![golden_describe()]);
    let result = run("DESCRIBE SCHEMA", &schema, None).expect("describes");
    assert!(result.text_column(0).iter().all(|k| k == "golden_describe"));
    assert_eq!(result.rows.len(), 7);
    let full = run("DESCRIBE FULL SCHEMA", &schema, None).expect("describes");
    assert!(full.rows.len() > 100);
    let tables = run("DESCRIBE TABLES", &schema, None).expect("describes");
    let keyspaces = tables.text_column(0);
    assert_eq!(keyspaces[0], "golden_describe");
    assert!(keyspaces.contains(&"system_virtual_schema".to_string()));

    let cluster = run("DESCRIBE CLUSTER", &schema, Some("golden_describe")).expect("describes");
    assert_eq!(cluster.columns.len(), 4);
    assert_eq!(cluster.columns[3].0, "range_ownership");
    let ownership = Value::deserialize(
        &cluster.columns[3].1,
        cluster.rows[0][3].as_deref().expect("set"),
    )
    .expect("a map");
    assert_eq!(
        ownership,
        Value::Map(
            ["-5", "100", "3"]
                .into_iter()
                .map(|t| (
                    Value::Text(t.into()),
                    Value::List(vec![Value::Text("/127.0.0.1:7000".into())])
                ))
                .collect()
        )
    );
    let cluster = run("DESCRIBE CLUSTER", &schema, Some("system")).expect("describes");
    assert_eq!(cluster.columns.len(), 3);
}

#[test]
fn generic_names_and_errors() {
    let schema = schema_with(vec![golden_describe()]);
    let index = run("DESCRIBE wide_d", &schema, Some("golden_describe")).expect("describes");
    assert_eq!(index.text_column(1), ["index"]);
    for (statement, keyspace, message) in [
        (
            "DESCRIBE nosuch",
            Some("golden_describe"),
            "'nosuch' not found in keyspace 'golden_describe'",
        ),
        ("DESCRIBE nosuch", None, "'nosuch' not found in keyspaces"),
        (
            "DESCRIBE INDEX nosuch",
            Some("golden_describe"),
            "Table for existing index 'nosuch' not found in 'golden_describe'",
        ),
        (
            "DESCRIBE FUNCTION nosuch",
            Some("golden_describe"),
            "User defined function 'nosuch' not found in 'golden_describe'",
        ),
        (
            "DESCRIBE AGGREGATE nosuch",
            Some("golden_describe"),
            "User defined aggregate 'nosuch' not found in 'golden_describe'",
        ),
        (
            "DESCRIBE MATERIALIZED VIEW nosuch",
            Some("golden_describe"),
            "Materialized view 'nosuch' not found in 'golden_describe'",
        ),
        (
            "DESCRIBE KEYSPACE",
            None,
            "No keyspace specified and no current keyspace",
        ),
    ] {
        assert_eq!(
            run(statement, &schema, keyspace),
            Err(QueryError::invalid(message)),
            "{statement}"
        );
    }
}

#[test]
fn types_come_after_their_dependencies() {
    let ks = "dks";
    let z_base = udt(ks, "z_base", &[("a", "int")], &[]);
    let a_dep = udt(
        ks,
        "a_dep",
        &[("b", "frozen<z_base>")],
        std::slice::from_ref(&z_base),
    );
    let m_free = udt(ks, "m_free", &[("c", "int")], &[]);
    let upper = udt(ks, "B_upper", &[("c", "int")], &[]);
    let keyspace = Keyspace {
        name: ks.into(),
        replication: simple_strategy(1),
        durable_writes: true,
        tables: BTreeMap::new(),
        types: vec![z_base, a_dep, m_free, upper],
        functions: Vec::new(),
        aggregates: Vec::new(),
        is_virtual: false,
    };
    let schema = schema_with(vec![keyspace]);
    let all = run("DESCRIBE KEYSPACE dks", &schema, None).expect("describes");
    assert_eq!(
        all.text_column(2)[1..],
        ["\"B_upper\"", "z_base", "a_dep", "m_free"]
    );
    let listed = run("DESCRIBE TYPES", &schema, Some("dks")).expect("describes");
    assert_eq!(
        listed.text_column(2),
        ["a_dep", "\"B_upper\"", "m_free", "z_base"]
    );
}
