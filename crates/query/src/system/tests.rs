//! Tests of the built-in keyspaces and their rows, against what Cassandra
//! 5.0.6 answers (tests/golden/expected/system_tables.out and a node's
//! system_schema).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use rocksandra_data::types::{CqlType, UdtType};
use rocksandra_data::Value;
use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::TableId;

use super::*;

fn no_stats(_: TableId) -> rocksandra_storage::TableStorageStats {
    rocksandra_storage::TableStorageStats::default()
}
use crate::schema::KeyspaceTypes;

// ---------------------------------------------------------------- helpers

/// One column of a hand-built table: name, type text, kind, key position,
/// descending.
pub(crate) type ColumnSpec<'a> = (&'a str, &'a str, ColumnKind, usize, bool);

/// A user table as DDL would build it.
pub(crate) fn user_table(
    keyspace: &str,
    name: &str,
    types: &[UdtType],
    columns: &[ColumnSpec],
) -> Table {
    let resolver = KeyspaceTypes(types);
    let mut keys: Vec<&ColumnSpec> = columns.iter().filter(|c| c.2.is_primary_key()).collect();
    keys.sort_by_key(|c| (c.2 != ColumnKind::PartitionKey, c.3));
    let columns: Vec<Column> = keys
        .into_iter()
        .chain(columns.iter().filter(|c| !c.2.is_primary_key()))
        .enumerate()
        .map(|(i, c)| Column {
            name: c.0.to_string(),
            ty: CqlType::parse(c.1, &resolver).expect("test type parses"),
            kind: c.2,
            position: c.3,
            descending: c.4,
            id: ColumnId(i as u32),
        })
        .collect();
    let mut table = Table {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
        id: system_table_id(keyspace, name),
        storage_id: TableId(7),
        partition_key_count: columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
            .count(),
        clustering_count: columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .count(),
        next_column_id: columns.len() as u32,
        columns,
        params: TableParams::default(),
        dropped: Vec::new(),
        indexes: Vec::new(),
        is_virtual: false,
        view: None,
        compact: None,
        masks: Default::default(),
        metrics: Default::default(),
    };
    table.sort_value_columns();
    table
}

pub(crate) fn udt(
    keyspace: &str,
    name: &str,
    fields: &[(&str, &str)],
    known: &[UdtType],
) -> UdtType {
    let resolver = KeyspaceTypes(known);
    UdtType {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
        fields: fields
            .iter()
            .map(|(n, t)| {
                (
                    n.to_string(),
                    CqlType::parse(t, &resolver).expect("test type parses"),
                )
            })
            .collect(),
    }
}

pub(crate) fn simple_strategy(rf: u32) -> BTreeMap<String, String> {
    [
        ("class".to_string(), "SimpleStrategy".to_string()),
        ("replication_factor".to_string(), rf.to_string()),
    ]
    .into_iter()
    .collect()
}

/// The built-in keyspaces plus `extra`.
pub(crate) fn schema_with(extra: Vec<Keyspace>) -> Schema {
    let mut keyspaces = BTreeMap::new();
    for k in system_keyspaces().into_iter().chain(extra) {
        keyspaces.insert(k.name.clone(), Arc::new(k));
    }
    Schema {
        keyspaces,
        version: [0x11; 16],
        next_table_id: 10,
        epoch: 0,
        dropped_tables: Default::default(),
        storage_index: Default::default(),
    }
}

pub(crate) fn node() -> NodeInfo {
    NodeInfo {
        cluster_name: "Test Cluster".into(),
        listen_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        broadcast_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        rpc_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        native_port: 9042,
        storage_port: 7000,
        data_center: "datacenter1".into(),
        rack: "rack1".into(),
        host_id: [0x22; 16],
        tokens: vec![100, -5, 3],
        peers: Vec::new(),
    }
}

/// golden_system of tests/golden/cases/system_tables.cql.
fn golden_system() -> Keyspace {
    let pair = udt("golden_system", "pair", &[("a", "int"), ("b", "text")], &[]);
    let types = vec![pair];
    let mut t = user_table(
        "golden_system",
        "t",
        &types,
        &[
            ("p", "int", ColumnKind::PartitionKey, 0, false),
            ("q", "text", ColumnKind::PartitionKey, 1, false),
            ("c", "timeuuid", ColumnKind::Clustering, 0, true),
            ("d", "int", ColumnKind::Clustering, 1, false),
            ("s", "set<int>", ColumnKind::Static, 0, false),
            ("v", "frozen<pair>", ColumnKind::Regular, 0, false),
            (
                "m",
                "map<text, frozen<list<int>>>",
                ColumnKind::Regular,
                0,
                false,
            ),
        ],
    );
    t.params.comment = "sys".into();
    let mut tables = BTreeMap::new();
    tables.insert("t".to_string(), Arc::new(t));
    Keyspace {
        name: "golden_system".into(),
        replication: simple_strategy(1),
        durable_writes: true,
        tables,
        types,
        functions: Vec::new(),
        aggregates: Vec::new(),
        is_virtual: false,
    }
}

fn text(cell: &Option<Vec<u8>>) -> String {
    match cell {
        Some(bytes) => String::from_utf8(bytes.clone()).expect("utf-8 cell"),
        None => "null".to_string(),
    }
}

fn decode(table: &Table, column: &str, cell: &Option<Vec<u8>>) -> Option<Value> {
    let ty = &table.column(column).expect("column exists").ty;
    cell.as_ref()
        .map(|bytes| Value::deserialize(ty, bytes).expect("valid value"))
}

fn uuid_text(id: [u8; 16]) -> String {
    rocksandra_data::uuid::to_text(&id)
}

fn table_of<'a>(schema: &'a Schema, keyspace: &str, name: &str) -> &'a Table {
    schema.table(keyspace, name).expect("table exists")
}

/// Rows of `keyspace.name` with the named columns as text (strings, ints
/// and others through their CQL literal).
fn select(schema: &Schema, keyspace: &str, name: &str, columns: &[&str]) -> Vec<Vec<String>> {
    let table = table_of(schema, keyspace, name);
    rows(table, schema, &node(), &no_stats)
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|c| {
                    let i = table.column_index(c).expect("column exists");
                    let column = &table.columns[i];
                    match decode(table, c, &row[i]) {
                        None => "null".to_string(),
                        Some(Value::Text(s)) => s,
                        Some(v) => v.to_cql_literal(&column.ty),
                    }
                })
                .collect()
        })
        .collect()
}

// ---------------------------------------------------------------- definitions

#[test]
fn every_builtin_type_parses() {
    for keyspace in system_keyspaces() {
        for table in keyspace.tables.values() {
            for column in &table.columns {
                assert!(
                    !matches!(column.ty, CqlType::Custom(_)),
                    "{}.{}.{} has an unparsed type",
                    table.keyspace,
                    table.name,
                    column.name
                );
            }
        }
    }
}

#[test]
fn table_ids_are_cassandras_fixed_ids() {
    assert_eq!(
        uuid_text(system_table_id("system", "local")),
        "7ad54392-bcdd-35a6-8417-4e047860b377"
    );
    assert_eq!(
        uuid_text(system_table_id("system_schema", "tables")),
        "afddfb9d-bc1e-3068-8056-eed6c302ba09"
    );
    assert_eq!(
        uuid_text(system_table_id("system_auth", "roles")),
        "5bc52802-de25-35ed-aeab-188eecebb090"
    );
    let schema = schema_with(Vec::new());
    assert_eq!(
        table_of(&schema, "system", "peers_v2").id,
        system_table_id("system", "peers_v2")
    );
}

#[test]
fn builtin_keyspaces_and_replication() {
    let schema = schema_with(Vec::new());
    let names: Vec<&str> = schema.keyspaces.keys().map(String::as_str).collect();
    assert_eq!(names, crate::schema::SYSTEM_KEYSPACES.to_vec().tap_sorted());
    let count = |k: &str| schema.keyspace(k).expect("keyspace").tables.len();
    assert_eq!(count("system"), 23);
    assert_eq!(count("system_schema"), 11);
    assert_eq!(count("system_auth"), 8);
    assert_eq!(count("system_traces"), 2);
    assert_eq!(count("system_distributed"), 4);
    assert_eq!(count("system_virtual_schema"), 3);
    assert!(schema.keyspaces.values().all(|k| k.is_virtual));
    // Every built-in table is computed, except the system_auth tables kept
    // in storage under their reserved ids.
    for t in schema.tables() {
        let stored = super::STORED_SYSTEM_TABLES
            .iter()
            .find(|(k, n, _)| *k == t.keyspace && *n == t.name);
        match stored {
            Some((_, _, id)) => assert!(!t.is_virtual && t.storage_id == TableId(*id)),
            None => assert!(t.is_virtual && t.storage_id == TableId(0), "{}", t.name),
        }
    }
    assert_eq!(
        select(&schema, "system_schema", "keyspaces", &["keyspace_name", "durable_writes", "replication"]),
        vec![
            vec!["system_auth".to_string(), "true".into(), "{'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '1'}".into()],
            vec!["system_schema".into(), "true".into(), "{'class': 'org.apache.cassandra.locator.LocalStrategy'}".into()],
            vec!["system_distributed".into(), "true".into(), "{'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '3'}".into()],
            vec!["system".into(), "true".into(), "{'class': 'org.apache.cassandra.locator.LocalStrategy'}".into()],
            vec!["system_traces".into(), "true".into(), "{'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '2'}".into()],
        ],
        "Cassandra's rows, in token order"
    );
}

trait TapSorted {
    fn tap_sorted(self) -> Self;
}

impl<T: Ord> TapSorted for Vec<T> {
    fn tap_sorted(mut self) -> Self {
        self.sort();
        self
    }
}

#[test]
fn system_local_columns_and_row() {
    let schema = schema_with(Vec::new());
    let columns = select(
        &schema,
        "system_schema",
        "columns",
        &["table_name", "column_name", "kind", "position", "type"],
    );
    let local: Vec<String> = columns
        .iter()
        .filter(|r| r[0] == "local")
        .map(|r| format!("{} {} {} {}", r[1], r[2], r[3], r[4]))
        .collect();
    assert_eq!(
        local,
        [
            "bootstrapped regular -1 text",
            "broadcast_address regular -1 inet",
            "broadcast_port regular -1 int",
            "cluster_name regular -1 text",
            "cql_version regular -1 text",
            "data_center regular -1 text",
            "gossip_generation regular -1 int",
            "host_id regular -1 uuid",
            "key partition_key 0 text",
            "listen_address regular -1 inet",
            "listen_port regular -1 int",
            "native_protocol_version regular -1 text",
            "partitioner regular -1 text",
            "rack regular -1 text",
            "release_version regular -1 text",
            "rpc_address regular -1 inet",
            "rpc_port regular -1 int",
            "schema_version regular -1 uuid",
            "tokens regular -1 set<text>",
            "truncated_at regular -1 map<uuid, blob>",
        ]
    );
    let row = select(
        &schema,
        "system",
        "local",
        &[
            "key",
            "bootstrapped",
            "broadcast_address",
            "broadcast_port",
            "cluster_name",
            "cql_version",
            "data_center",
            "listen_address",
            "listen_port",
            "native_protocol_version",
            "partitioner",
            "rack",
            "rpc_address",
            "rpc_port",
            "release_version",
            "tokens",
            "host_id",
            "schema_version",
        ],
    );
    assert_eq!(
        row,
        vec![vec![
            "local",
            "COMPLETED",
            "'127.0.0.1'",
            "7000",
            "Test Cluster",
            "3.4.7",
            "datacenter1",
            "'127.0.0.1'",
            "7000",
            "5",
            "org.apache.cassandra.dht.Murmur3Partitioner",
            "rack1",
            "'127.0.0.1'",
            "9042",
            "5.0.6",
            "{'-5', '100', '3'}",
            "22222222-2222-2222-2222-222222222222",
            "11111111-1111-1111-1111-111111111111",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()]
    );
}

#[test]
fn peers_tables_list_the_other_nodes() {
    let schema = schema_with(Vec::new());
    let mut node = node();
    node.storage_port = 7012;
    for (i, dc) in [(2u8, "dc2"), (3, "dc1")] {
        node.peers.push(crate::PeerInfo {
            broadcast_address: IpAddr::V4(Ipv4Addr::new(10, 0, 0, i)),
            rpc_address: IpAddr::V4(Ipv4Addr::new(10, 1, 0, i)),
            native_port: 9043,
            data_center: dc.into(),
            rack: "r".into(),
            host_id: [i; 16],
            tokens: vec![i64::from(i)],
            schema_version: [0x11; 16],
        });
    }
    let peers_v2 = table_of(&schema, "system", "peers_v2");
    let rows_v2 = rows(peers_v2, &schema, &node, &no_stats);
    assert_eq!(rows_v2.len(), 2);
    assert!(rows_v2.iter().all(|r| r.len() == peers_v2.columns.len()));
    let native = peers_v2.column_index("native_address").expect("column");
    let peer = peers_v2.column_index("peer").expect("column");
    for row in &rows_v2 {
        let (Some(peer), Some(native)) = (&row[peer], &row[native]) else {
            panic!("peer and native_address are set");
        };
        assert_eq!(peer[..2], [10, 0]);
        assert_eq!(native[..2], [10, 1]);
    }
    // Peers listen on the node's own storage_port.
    let peer_port = peers_v2.column_index("peer_port").expect("column");
    let port = 7012i32.to_be_bytes().to_vec();
    assert!(rows_v2.iter().all(|r| r[peer_port] == Some(port.clone())));
    // Sorted by the token of the partition key (the peer's address).
    let tokens: Vec<Token> = rows_v2
        .iter()
        .map(|r| Token::murmur3(r[peer].as_deref().expect("peer")))
        .collect();
    assert!(tokens.windows(2).all(|w| w[0] <= w[1]));
    let peers = table_of(&schema, "system", "peers");
    assert_eq!(rows(peers, &schema, &node, &no_stats).len(), 2);
}

#[test]
fn local_row_tells_the_listen_broadcast_and_rpc_addresses_apart() {
    let schema = schema_with(Vec::new());
    let mut node = node();
    node.listen_address = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    node.broadcast_address = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    node.rpc_address = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9));
    let local = table_of(&schema, "system", "local");
    let rows = rows(local, &schema, &node, &no_stats);
    let column = |name: &str| rows[0][local.column_index(name).expect("column")].clone();
    assert_eq!(column("listen_address"), Some(vec![10, 0, 0, 1]));
    assert_eq!(column("broadcast_address"), Some(vec![192, 0, 2, 1]));
    assert_eq!(column("rpc_address"), Some(vec![192, 0, 2, 9]));
}

#[test]
fn schema_tables_describe_a_user_table() {
    let schema = schema_with(vec![golden_system()]);
    let columns = select(
        &schema,
        "system_schema",
        "columns",
        &[
            "keyspace_name",
            "table_name",
            "column_name",
            "clustering_order",
            "column_name_bytes",
            "kind",
            "position",
            "type",
        ],
    );
    let ours: Vec<String> = columns
        .iter()
        .filter(|r| r[0] == "golden_system")
        .map(|r| r.join(" | "))
        .collect();
    assert_eq!(
        ours,
        [
            "golden_system | t | c | desc | 0x63 | clustering | 0 | timeuuid",
            "golden_system | t | d | asc | 0x64 | clustering | 1 | int",
            "golden_system | t | m | none | 0x6d | regular | -1 | map<text, frozen<list<int>>>",
            "golden_system | t | p | none | 0x70 | partition_key | 0 | int",
            "golden_system | t | q | none | 0x71 | partition_key | 1 | text",
            "golden_system | t | s | none | 0x73 | static | -1 | set<int>",
            "golden_system | t | v | none | 0x76 | regular | -1 | frozen<pair>",
        ]
    );
    let tables_table = table_of(&schema, "system_schema", "tables");
    let names: Vec<&str> = tables_table
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let tables = select(&schema, "system_schema", "tables", &names);
    let t: Vec<&Vec<String>> = tables.iter().filter(|r| r[0] == "golden_system").collect();
    assert_eq!(t.len(), 1);
    let id = uuid_text(system_table_id("golden_system", "t"));
    // The golden line, with the table's id in place of <uuid>.
    let expected = format!(
        "golden_system | t | 99p | null | 0.01 | {{'keys': 'ALL', 'rows_per_partition': 'NONE'}} | null | sys | {{'class': 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4'}} | {{'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}} | 1.0 | 0.0 | 0 | {{}} | {{'compound'}} | 864000 | {id} | null | 2048 | null | 0 | 128 | BLOCKING | 0.0 | 99p"
    );
    assert_eq!(t[0].join(" | "), expected);
    assert_eq!(
        select(
            &schema,
            "system_schema",
            "types",
            &["keyspace_name", "type_name", "field_names", "field_types"]
        )
        .into_iter()
        .filter(|r| r[0] == "golden_system")
        .map(|r| r.join(" | "))
        .collect::<Vec<_>>(),
        ["golden_system | pair | ['a', 'b'] | ['int', 'text']"]
    );
}

#[test]
fn indexes_and_dropped_columns() {
    let mut ks = golden_system();
    let mut t = (**ks.tables.get("t").expect("t")).clone();
    t.indexes.push(Index {
        name: "t_d".into(),
        kind: "COMPOSITES".into(),
        options: [("target".to_string(), "d".to_string())]
            .into_iter()
            .collect(),
        storage_id: None,
        built: false,
    });
    t.dropped.push(DroppedColumn {
        name: "m".into(),
        type_text: "map<text, frozen<list<int>>>".into(),
        kind: ColumnKind::Regular,
        dropped_time: 1_700_000_000_123_456,
        column_id: None,
    });
    ks.tables.insert("t".into(), Arc::new(t));
    let schema = schema_with(vec![ks]);
    let indexes = select(
        &schema,
        "system_schema",
        "indexes",
        &[
            "keyspace_name",
            "table_name",
            "index_name",
            "kind",
            "options",
        ],
    );
    assert!(indexes.contains(&vec![
        "golden_system".to_string(),
        "t".into(),
        "t_d".into(),
        "COMPOSITES".into(),
        "{'target': 'd'}".into()
    ]));
    assert!(indexes.contains(&vec![
        "system".to_string(),
        "paxos".into(),
        "PaxosUncommittedIndex".into(),
        "CUSTOM".into(),
        "{'class_name': 'org.apache.cassandra.service.paxos.uncommitted.PaxosUncommittedIndex', 'target': ''}".into()
    ]));
    let dropped_table = table_of(&schema, "system_schema", "dropped_columns");
    let dropped = rows(dropped_table, &schema, &node(), &no_stats);
    let ours: Vec<&Row> = dropped
        .iter()
        .filter(|r| text(&r[0]) == "golden_system")
        .collect();
    assert_eq!(ours.len(), 1);
    assert_eq!(
        decode(dropped_table, "dropped_time", &ours[0][3]),
        Some(Value::Timestamp(1_700_000_000_123))
    );
    assert_eq!(text(&ours[0][5]), "map<text, frozen<list<int>>>");
    // system.local's thrift_version, as Cassandra keeps it.
    assert!(dropped.iter().any(|r| text(&r[2]) == "thrift_version"));
}

#[test]
fn system_tables_listed_as_cassandra_does() {
    let schema = schema_with(Vec::new());
    let tables = select(
        &schema,
        "system_schema",
        "tables",
        &["keyspace_name", "table_name"],
    );
    let mut system: Vec<String> = tables
        .iter()
        .filter(|r| r[0] == "system")
        .map(|r| r[1].clone())
        .collect();
    system.sort();
    assert_eq!(
        system,
        [
            "IndexInfo",
            "available_ranges",
            "available_ranges_v2",
            "batches",
            "built_views",
            "compaction_history",
            "local",
            "paxos",
            "paxos_repair_history",
            "peer_events",
            "peer_events_v2",
            "peers",
            "peers_v2",
            "prepared_statements",
            "repairs",
            "size_estimates",
            "sstable_activity",
            "sstable_activity_v2",
            "table_estimates",
            "top_partitions",
            "transferred_ranges",
            "transferred_ranges_v2",
            "view_builds_in_progress",
        ]
    );
    // Within one partition, clustering (table_name) order.
    let schema_tables: Vec<&str> = tables
        .iter()
        .filter(|r| r[0] == "system_schema")
        .map(|r| r[1].as_str())
        .collect();
    assert_eq!(
        schema_tables,
        [
            "aggregates",
            "column_masks",
            "columns",
            "dropped_columns",
            "functions",
            "indexes",
            "keyspaces",
            "tables",
            "triggers",
            "types",
            "views",
        ]
    );
    assert!(!tables.iter().any(|r| r[0] == "system_views"));
    let peers_v2: Vec<String> = select(
        &schema,
        "system_schema",
        "columns",
        &["table_name", "column_name", "kind", "position", "type"],
    )
    .into_iter()
    .filter(|r| r[0] == "peers_v2")
    .map(|r| format!("{} {} {} {}", r[1], r[2], r[3], r[4]))
    .collect();
    assert_eq!(
        peers_v2,
        [
            "data_center regular -1 text",
            "host_id regular -1 uuid",
            "native_address regular -1 inet",
            "native_port regular -1 int",
            "peer partition_key 0 inet",
            "peer_port clustering 0 int",
            "preferred_ip regular -1 inet",
            "preferred_port regular -1 int",
            "rack regular -1 text",
            "release_version regular -1 text",
            "schema_version regular -1 uuid",
            "tokens regular -1 set<text>",
        ]
    );
}

#[test]
fn virtual_schema_lists_virtual_keyspaces() {
    let schema = schema_with(vec![golden_system()]);
    assert_eq!(
        select(
            &schema,
            "system_virtual_schema",
            "keyspaces",
            &["keyspace_name"]
        ),
        vec![
            vec!["system_views".to_string()],
            vec!["system_virtual_schema".to_string()]
        ]
    );
    let tables: Vec<String> = select(
        &schema,
        "system_virtual_schema",
        "tables",
        &["keyspace_name", "table_name"],
    )
    .into_iter()
    .filter(|r| r[0] == "system_virtual_schema")
    .map(|r| r[1].clone())
    .collect();
    assert_eq!(tables, ["columns", "keyspaces", "tables"]);
    let columns: Vec<String> = select(
        &schema,
        "system_virtual_schema",
        "columns",
        &[
            "keyspace_name",
            "table_name",
            "column_name",
            "clustering_order",
            "column_name_bytes",
            "kind",
            "position",
            "type",
        ],
    )
    .into_iter()
    .filter(|r| r[0] == "system_virtual_schema" && r[1] == "keyspaces")
    .map(|r| r.join(" | "))
    .collect();
    assert_eq!(
        columns,
        ["system_virtual_schema | keyspaces | keyspace_name | none | 0x6b657973706163655f6e616d65 | partition_key | 0 | text"]
    );
    // User keyspaces are not virtual.
    assert!(!select(
        &schema,
        "system_virtual_schema",
        "columns",
        &["keyspace_name"]
    )
    .iter()
    .any(|r| r[0] == "golden_system"));
}

#[test]
fn tables_without_content_are_empty() {
    let schema = schema_with(Vec::new());
    for (k, t) in [
        ("system", "size_estimates"),
        ("system_auth", "roles"),
        ("system_traces", "sessions"),
        ("system_schema", "functions"),
        ("system_views", "settings"),
    ] {
        assert!(
            rows(table_of(&schema, k, t), &schema, &node(), &no_stats).is_empty(),
            "{k}.{t}"
        );
    }
}

#[test]
fn type_text_is_cassandras() {
    let types = [udt("ks", "My Type", &[("a", "int")], &[])];
    let resolver = KeyspaceTypes(&types);
    for (input, expected) in [
        ("frozen<map<text, int>>", "frozen<map<text, int>>"),
        ("vector<float, 3>", "vector<float, 3>"),
        ("tuple<int, text>", "frozen<tuple<int, text>>"),
        (
            "frozen<tuple<int, frozen<list<int>>>>",
            "frozen<tuple<int, frozen<list<int>>>>",
        ),
        (
            "list<frozen<tuple<int, int>>>",
            "list<frozen<tuple<int, int>>>",
        ),
        ("frozen<\"My Type\">", "frozen<\"My Type\">"),
    ] {
        let ty = CqlType::parse(input, &resolver).expect("parses");
        assert_eq!(cql_type_text(&ty), expected, "{input}");
    }
}
