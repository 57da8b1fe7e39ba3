//! The built-in system keyspaces and the rows of their virtual tables.
//!
//! Definitions come from `system/catalog.rs`, generated from a running
//! Cassandra 5.0.6 so that drivers and cqlsh see exactly the tables, types
//! and options they know. Every built-in table is `is_virtual` here: its rows
//! are computed by [`rows`] from the schema and the node description, never
//! read from storage.
//!
//! Exceptions: the tables of [`STORED_SYSTEM_TABLES`] (`system_auth` roles,
//! `system_traces` sessions and events)
//! are kept in storage like user tables. `system.size_estimates` and
//! `system.table_estimates` come from the storage engine's figures. Tables
//! whose content this server does not keep yet (`system_traces`,
//! `system_distributed`, `system_views`, ...) answer with no rows.

mod catalog;
mod def;
mod estimates;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use md5::{Digest, Md5};
use rocksandra_data::token::Token;
use rocksandra_data::types::{CqlType, NoUdts};
use rocksandra_data::value::compare;
use rocksandra_data::Value;
use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::TableId;

use crate::schema::{
    builtin_replication, Column, ColumnKind, DroppedColumn, Index, Keyspace, Schema, Table,
    TableParams, LOCATOR_PACKAGE,
};
use crate::type_text::cql_type_text;
use crate::{NodeInfo, CQL_VERSION, PARTITIONER, RELEASE_VERSION};

/// Keyspaces that are virtual in Cassandra itself: listed in
/// `system_virtual_schema`, not in `system_schema`, and described as
/// `VIRTUAL KEYSPACE`.
pub const VIRTUAL_KEYSPACES: [&str; 2] = ["system_views", "system_virtual_schema"];

/// The native protocol version system.local advertises.
const NATIVE_PROTOCOL_VERSION: &str = "5";

pub fn is_virtual_in_cassandra(keyspace: &str) -> bool {
    VIRTUAL_KEYSPACES.contains(&keyspace)
}

/// A row of a system table: one serialized cell per column, None for null.
pub type Row = Vec<Option<Vec<u8>>>;

// ---------------------------------------------------------------- definitions

/// Built-in tables whose rows live in storage, with their reserved storage
/// ids (user tables count up from 1 and never reach these).
pub const STORED_SYSTEM_TABLES: [(&str, &str, u64); 5] = [
    ("system_auth", "roles", u64::MAX - 1),
    ("system_auth", "role_members", u64::MAX - 2),
    ("system_auth", "role_permissions", u64::MAX - 3),
    ("system_traces", "sessions", u64::MAX - 4),
    ("system_traces", "events", u64::MAX - 5),
];

/// The built-in keyspaces only, before any schema change.
pub fn builtin_schema() -> Schema {
    Schema::initial(system_keyspaces())
}

/// The built-in keyspaces, each marked `is_virtual` with all its tables.
pub fn system_keyspaces() -> Vec<Keyspace> {
    let mut keyspaces: BTreeMap<&str, Keyspace> = BTreeMap::new();
    for def in catalog::TABLES {
        let keyspace = keyspaces
            .entry(def.keyspace)
            .or_insert_with(|| empty_keyspace(def.keyspace));
        let mut table = build_table(def);
        if let Some((_, _, id)) = STORED_SYSTEM_TABLES
            .iter()
            .find(|(k, t, _)| *k == def.keyspace && *t == def.name)
        {
            table.is_virtual = false;
            table.storage_id = TableId(*id);
        }
        keyspace
            .tables
            .insert(def.name.to_string(), Arc::new(table));
    }
    keyspaces.into_values().collect()
}

fn empty_keyspace(name: &str) -> Keyspace {
    Keyspace {
        name: name.to_string(),
        replication: builtin_replication(name),
        durable_writes: true,
        tables: BTreeMap::new(),
        types: Vec::new(),
        functions: Vec::new(),
        aggregates: Vec::new(),
        is_virtual: true,
    }
}

/// The type of built-in type text. The catalog's texts all parse (a test
/// checks it); an unknown one would show as a custom type, never panic.
fn builtin_type(text: &str) -> CqlType {
    CqlType::parse(text, &NoUdts).unwrap_or_else(|_| CqlType::Custom(text.to_string()))
}

fn build_table(def: &def::TableDef) -> Table {
    let mut keys: Vec<&def::ColumnDef> = def
        .columns
        .iter()
        .filter(|c| c.kind.is_primary_key())
        .collect();
    keys.sort_by_key(|c| (c.kind != ColumnKind::PartitionKey, c.position));
    let columns: Vec<Column> = keys
        .into_iter()
        .chain(def.columns.iter().filter(|c| !c.kind.is_primary_key()))
        .enumerate()
        .map(|(i, c)| Column {
            name: c.name.to_string(),
            ty: builtin_type(c.type_text),
            kind: c.kind,
            position: usize::try_from(c.position).unwrap_or(0),
            descending: c.descending,
            // Stable ids for the built-in tables kept in storage (system_auth).
            id: ColumnId(i as u32),
        })
        .collect();
    let partition_key_count = columns
        .iter()
        .filter(|c| c.kind == ColumnKind::PartitionKey)
        .count();
    let clustering_count = columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Clustering)
        .count();
    let mut params = TableParams {
        comment: def.comment.to_string(),
        gc_grace_seconds: def.gc_grace_seconds,
        memtable_flush_period_in_ms: def.memtable_flush_period_in_ms,
        default_time_to_live: def.default_time_to_live,
        ..TableParams::default()
    };
    if !def.compaction.is_empty() {
        params.compaction = def
            .compaction
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }
    let mut indexes = Vec::new();
    if def.keyspace == "system" && def.name == "paxos" {
        indexes.push(Index {
            name: "PaxosUncommittedIndex".into(),
            kind: "CUSTOM".into(),
            options: [
                (
                    "class_name",
                    "org.apache.cassandra.service.paxos.uncommitted.PaxosUncommittedIndex",
                ),
                ("target", ""),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            storage_id: None,
            built: false,
        });
    }
    let mut table = Table {
        keyspace: def.keyspace.to_string(),
        name: def.name.to_string(),
        id: system_table_id(def.keyspace, def.name),
        storage_id: TableId(0),
        columns,
        partition_key_count,
        clustering_count,
        params,
        next_column_id: 0,
        dropped: def
            .dropped
            .iter()
            .map(|d| DroppedColumn {
                name: d.name.to_string(),
                type_text: d.type_text.to_string(),
                kind: d.kind,
                dropped_time: d.dropped_time,
                column_id: None,
            })
            .collect(),
        indexes,
        is_virtual: true,
        view: None,
        compact: None,
        masks: Default::default(),
        metrics: Default::default(),
    };
    table.sort_value_columns();
    for (i, column) in table.columns.iter_mut().enumerate() {
        column.id = ColumnId(i as u32);
    }
    table.next_column_id = table.columns.len() as u32;
    table
}

/// Cassandra's fixed id of a built-in table (`TableId.forSystemTable`): the
/// name-based (version 3) UUID of the keyspace name followed by the table name.
pub fn system_table_id(keyspace: &str, table: &str) -> [u8; 16] {
    let mut hasher = Md5::new();
    hasher.update(keyspace.as_bytes());
    hasher.update(table.as_bytes());
    let mut id: [u8; 16] = hasher.finalize().into();
    id[6] = (id[6] & 0x0f) | 0x30;
    id[8] = (id[8] & 0x3f) | 0x80;
    id
}

/// The replication class with its package, as `system_schema.keyspaces`
/// stores it.
pub fn qualified_strategy(class: &str) -> String {
    if class.contains('.') {
        class.to_string()
    } else {
        format!("{LOCATOR_PACKAGE}{class}")
    }
}

/// The replication class without Cassandra's package, as DESCRIBE prints it.
pub fn short_strategy(class: &str) -> &str {
    class.strip_prefix(LOCATOR_PACKAGE).unwrap_or(class)
}

// ---------------------------------------------------------------- rows

/// A table's storage figures, for the size estimates.
pub type TableStats<'a> = &'a dyn Fn(TableId) -> rocksandra_storage::TableStorageStats;

/// All rows of a built-in table, each in `table.columns` order, sorted in
/// the table's primary-key order (partition token, then clustering).
pub fn rows(table: &Table, schema: &Schema, node: &NodeInfo, stats: TableStats<'_>) -> Vec<Row> {
    let built: Vec<Cells> = match (table.keyspace.as_str(), table.name.as_str()) {
        ("system", "size_estimates") => estimates::rows(schema, node, stats, None),
        ("system", "IndexInfo") => built_index_rows(schema),
        ("system", "built_views") => built_view_rows(schema),
        ("system_views", "sai_column_indexes") => sai_column_rows(schema),
        ("system_distributed", "view_build_status") => view_build_status_rows(schema, node),
        ("system", "table_estimates") => {
            let mut rows = estimates::rows(schema, node, stats, Some("primary"));
            rows.extend(estimates::rows(schema, node, stats, Some("local_primary")));
            rows
        }
        ("system", "local") => vec![local_row(schema, node)],
        ("system", "peers") => node.peers.iter().map(peer_row).collect(),
        ("system", "peers_v2") => node
            .peers
            .iter()
            .map(|peer| peer_v2_row(peer, node.storage_port))
            .collect(),
        ("system_schema", "keyspaces") => keyspace_rows(schema),
        ("system_schema", "tables") => table_rows(schema),
        ("system_schema", "columns") => column_rows(schema, false),
        ("system_schema", "dropped_columns") => dropped_column_rows(schema),
        ("system_schema", "column_masks") => column_mask_rows(schema),
        ("system_schema", "types") => type_rows(schema),
        ("system_schema", "functions") => function_rows(schema),
        ("system_schema", "aggregates") => aggregate_rows(schema),
        ("system_schema", "indexes") => index_rows(schema),
        ("system_schema", "views") => view_rows(schema),
        ("system_virtual_schema", "keyspaces") => virtual_keyspace_rows(schema),
        ("system_virtual_schema", "tables") => virtual_table_rows(schema),
        ("system_virtual_schema", "columns") => column_rows(schema, true),
        // No content kept (yet) for the others: triggers, auth, traces,
        // metrics.
        _ => Vec::new(),
    };
    let mut rows: Vec<Row> = built
        .into_iter()
        .map(|cells| cells.project(table))
        .collect();
    sort_rows(table, &mut rows);
    rows
}

/// The cells of one row by column name; columns not set are null.
#[derive(Default)]
struct Cells(BTreeMap<&'static str, Vec<u8>>);

impl Cells {
    fn set(&mut self, column: &'static str, value: Value) -> &mut Cells {
        self.0.insert(column, value.to_bytes());
        self
    }

    fn text(&mut self, column: &'static str, value: &str) -> &mut Cells {
        self.set(column, Value::Text(value.to_string()))
    }

    fn take(&mut self) -> Cells {
        std::mem::take(self)
    }

    fn project(mut self, table: &Table) -> Row {
        table
            .columns
            .iter()
            .map(|c| self.0.remove(c.name.as_str()))
            .collect()
    }
}

fn text_set(mut items: Vec<String>) -> Value {
    items.sort();
    items.dedup();
    Value::Set(items.into_iter().map(Value::Text).collect())
}

fn text_map(map: &BTreeMap<String, String>) -> Value {
    Value::Map(
        map.iter()
            .map(|(k, v)| (Value::Text(k.clone()), Value::Text(v.clone())))
            .collect(),
    )
}

fn text_list(items: impl IntoIterator<Item = String>) -> Value {
    Value::List(items.into_iter().map(Value::Text).collect())
}

fn tokens_value(tokens: &[i64]) -> Value {
    text_set(tokens.iter().map(i64::to_string).collect())
}

fn local_row(schema: &Schema, node: &NodeInfo) -> Cells {
    let mut row = Cells::default();
    row.text("key", "local")
        .text("bootstrapped", "COMPLETED")
        .set("broadcast_address", Value::Inet(node.broadcast_address))
        .set("broadcast_port", Value::Int(i32::from(node.storage_port)))
        .text("cluster_name", &node.cluster_name)
        .text("cql_version", CQL_VERSION)
        .text("data_center", &node.data_center)
        .set("host_id", Value::Uuid(node.host_id))
        .set("listen_address", Value::Inet(node.listen_address))
        .set("listen_port", Value::Int(i32::from(node.storage_port)))
        .text("native_protocol_version", NATIVE_PROTOCOL_VERSION)
        .text("partitioner", PARTITIONER)
        .text("rack", &node.rack)
        .text("release_version", RELEASE_VERSION)
        .set("rpc_address", Value::Inet(node.rpc_address))
        .set("rpc_port", Value::Int(i32::from(node.native_port)))
        .set("schema_version", Value::Uuid(schema.version))
        .set("tokens", tokens_value(&node.tokens));
    row
}

fn peer_row(peer: &crate::PeerInfo) -> Cells {
    let mut row = Cells::default();
    row.set("peer", Value::Inet(peer.broadcast_address))
        .text("data_center", &peer.data_center)
        .set("host_id", Value::Uuid(peer.host_id))
        .text("rack", &peer.rack)
        .text("release_version", RELEASE_VERSION)
        .set("rpc_address", Value::Inet(peer.rpc_address))
        .set("schema_version", Value::Uuid(peer.schema_version))
        .set("tokens", tokens_value(&peer.tokens));
    row
}

/// `storage_port` is the node's own: every node of a cluster listens on the
/// same one (the cluster crate reaches peers on its own port).
fn peer_v2_row(peer: &crate::PeerInfo, storage_port: u16) -> Cells {
    let mut row = Cells::default();
    row.set("peer", Value::Inet(peer.broadcast_address))
        .set("peer_port", Value::Int(i32::from(storage_port)))
        .text("data_center", &peer.data_center)
        .set("host_id", Value::Uuid(peer.host_id))
        .set("native_address", Value::Inet(peer.rpc_address))
        .set("native_port", Value::Int(i32::from(peer.native_port)))
        .text("rack", &peer.rack)
        .text("release_version", RELEASE_VERSION)
        .set("schema_version", Value::Uuid(peer.schema_version))
        .set("tokens", tokens_value(&peer.tokens));
    row
}

/// Keyspaces listed in `system_schema` (all but Cassandra's virtual ones).
fn schema_keyspaces(schema: &Schema) -> impl Iterator<Item = &Arc<Keyspace>> {
    schema
        .keyspaces
        .values()
        .filter(|k| !is_virtual_in_cassandra(&k.name))
}

fn virtual_keyspaces(schema: &Schema) -> impl Iterator<Item = &Arc<Keyspace>> {
    schema
        .keyspaces
        .values()
        .filter(|k| is_virtual_in_cassandra(&k.name))
}

fn keyspace_rows(schema: &Schema) -> Vec<Cells> {
    schema_keyspaces(schema)
        .map(|k| {
            let mut replication = k.replication.clone();
            if let Some(class) = replication.get_mut("class") {
                *class = qualified_strategy(class);
            }
            let mut row = Cells::default();
            row.text("keyspace_name", &k.name)
                .set("durable_writes", Value::Boolean(k.durable_writes))
                .set("replication", text_map(&replication));
            row
        })
        .collect()
}

/// `system_schema.tables.flags`: every CQL table is compound; a compact
/// table is dense with clustering columns, compound with several.
pub fn table_flags(table: &Table) -> Vec<String> {
    let mut flags = Vec::new();
    match &table.compact {
        None => flags.push("compound".to_string()),
        Some(compact) => {
            if compact.dense {
                flags.push("dense".to_string());
            }
            if compact.compound {
                flags.push("compound".to_string());
            }
        }
    }
    if table.is_counter() {
        flags.push("counter".to_string());
    }
    flags
}

fn table_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for table in keyspace.tables.values().filter(|t| !t.is_view()) {
            let mut row = params_row(table);
            row.text("table_name", &table.name)
                .set("flags", text_set(table_flags(table)));
            out.push(row);
        }
    }
    out
}

/// system_schema.views: one row per materialized view.
fn view_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for table in keyspace.tables.values() {
            let Some(view) = &table.view else {
                continue;
            };
            let mut row = params_row(table);
            row.text("view_name", &table.name)
                .set("base_table_id", Value::Uuid(view.base_id))
                .text("base_table_name", &view.base_table)
                .set(
                    "include_all_columns",
                    Value::Boolean(view.include_all_columns),
                )
                .text("where_clause", &view.where_clause);
            out.push(row);
        }
    }
    out
}

/// The columns system_schema.tables and system_schema.views share: the
/// keyspace, the id and the table options.
fn params_row(table: &Table) -> Cells {
    let p = &table.params;
    let mut row = Cells::default();
    row.text("keyspace_name", &table.keyspace)
        .text("additional_write_policy", &p.additional_write_policy)
        .set(
            "bloom_filter_fp_chance",
            Value::Double(p.bloom_filter_fp_chance),
        )
        .set("caching", text_map(&p.caching))
        .text("comment", &p.comment)
        .set("compaction", text_map(&p.compaction))
        .set("compression", text_map(&p.compression))
        .set("crc_check_chance", Value::Double(p.crc_check_chance))
        .set("dclocal_read_repair_chance", Value::Double(0.0))
        .set("default_time_to_live", Value::Int(p.default_time_to_live))
        .set(
            "extensions",
            Value::Map(
                p.extensions
                    .iter()
                    .map(|(k, v)| (Value::Text(k.clone()), Value::Blob(v.clone())))
                    .collect(),
            ),
        )
        .set("gc_grace_seconds", Value::Int(p.gc_grace_seconds))
        .set("id", Value::Uuid(table.id))
        .set("max_index_interval", Value::Int(p.max_index_interval))
        .set(
            "memtable_flush_period_in_ms",
            Value::Int(p.memtable_flush_period_in_ms),
        )
        .set("min_index_interval", Value::Int(p.min_index_interval))
        .text("read_repair", &p.read_repair)
        .set("read_repair_chance", Value::Double(0.0))
        .text("speculative_retry", &p.speculative_retry);
    // Cassandra writes these only when they differ from the default.
    if !p.allow_auto_snapshot {
        row.set("allow_auto_snapshot", Value::Boolean(false));
    }
    // `cdc` is written only on a node with `cdc_enabled: true`, which
    // Rocksandra, without CDC, never is (DESCRIBE still shows the option).
    if !p.incremental_backups {
        row.set("incremental_backups", Value::Boolean(false));
    }
    if p.memtable != "default" {
        row.text("memtable", &p.memtable);
    }
    row.take()
}

fn column_rows(schema: &Schema, virtual_keyspaces_only: bool) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema
        .keyspaces
        .values()
        .filter(|k| is_virtual_in_cassandra(&k.name) == virtual_keyspaces_only)
    {
        for table in keyspace.tables.values() {
            for column in &table.columns {
                let clustering_order = match (column.kind, column.descending) {
                    (ColumnKind::Clustering, true) => "desc",
                    (ColumnKind::Clustering, false) => "asc",
                    _ => "none",
                };
                let position = if column.kind.is_primary_key() {
                    i32::try_from(column.position).unwrap_or(i32::MAX)
                } else {
                    -1
                };
                let mut row = Cells::default();
                row.text("keyspace_name", &table.keyspace)
                    .text("table_name", &table.name)
                    .text("column_name", &column.name)
                    .text("clustering_order", clustering_order)
                    .set(
                        "column_name_bytes",
                        Value::Blob(column.name.as_bytes().to_vec()),
                    )
                    .text("kind", column.kind.name())
                    .set("position", Value::Int(position))
                    .text("type", &cql_type_text(&column.ty));
                out.push(row.take());
            }
        }
    }
    out
}

fn dropped_column_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for table in keyspace.tables.values() {
            for dropped in &table.dropped {
                let mut row = Cells::default();
                row.text("keyspace_name", &table.keyspace)
                    .text("table_name", &table.name)
                    .text("column_name", &dropped.name)
                    .set(
                        "dropped_time",
                        Value::Timestamp(dropped.dropped_time / 1000),
                    )
                    .text("kind", dropped.kind.name())
                    .text("type", &dropped.type_text);
                out.push(row.take());
            }
        }
    }
    out
}

fn column_mask_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for table in keyspace.tables.values() {
            for column in &table.columns {
                let Some(mask) = table.masks.get(&column.id) else {
                    continue;
                };
                let nulls = mask.arg_values.iter().map(|v| Value::Boolean(v.is_none()));
                let mut row = Cells::default();
                row.text("keyspace_name", &table.keyspace)
                    .text("table_name", &table.name)
                    .text("column_name", &column.name)
                    .text("function_keyspace", crate::masking::function_keyspace(mask))
                    .text("function_name", &mask.function)
                    .set("function_argument_nulls", Value::List(nulls.collect()))
                    .set("function_argument_types", text_list(mask.arg_types.clone()))
                    .set(
                        "function_argument_values",
                        text_list(crate::masking::argument_texts(mask)),
                    );
                out.push(row.take());
            }
        }
    }
    out
}

fn type_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for udt in &keyspace.types {
            let mut row = Cells::default();
            row.text("keyspace_name", &keyspace.name)
                .text("type_name", &udt.name)
                .set(
                    "field_names",
                    text_list(udt.fields.iter().map(|(name, _)| name.clone())),
                )
                .set(
                    "field_types",
                    text_list(udt.fields.iter().map(|(_, ty)| cql_type_text(ty))),
                );
            out.push(row.take());
        }
    }
    out
}

fn function_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for f in &keyspace.functions {
            let mut row = Cells::default();
            row.text("keyspace_name", &keyspace.name)
                .text("function_name", &f.name)
                .set(
                    "argument_types",
                    text_list(f.argument_types.iter().map(cql_type_text)),
                )
                .set(
                    "argument_names",
                    text_list(f.argument_names.iter().cloned()),
                )
                .text("body", &f.body)
                .set(
                    "called_on_null_input",
                    Value::Boolean(f.called_on_null_input),
                )
                .text("language", &f.language)
                .text("return_type", &cql_type_text(&f.return_type));
            out.push(row.take());
        }
    }
    out
}

fn aggregate_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for a in &keyspace.aggregates {
            let mut row = Cells::default();
            row.text("keyspace_name", &keyspace.name)
                .text("aggregate_name", &a.name)
                .set(
                    "argument_types",
                    text_list(a.argument_types.iter().map(cql_type_text)),
                )
                .text("state_func", &a.state_function)
                .text("state_type", &cql_type_text(&a.state_type))
                .text("return_type", &cql_type_text(&a.return_type));
            if let Some(f) = &a.final_function {
                row.text("final_func", f);
            }
            if let Some(initial) = crate::udf::initial_condition_literal(a) {
                row.text("initcond", &initial);
            }
            out.push(row.take());
        }
    }
    out
}

fn index_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for table in keyspace.tables.values() {
            for index in &table.indexes {
                let mut row = Cells::default();
                row.text("keyspace_name", &table.keyspace)
                    .text("table_name", &table.name)
                    .text("index_name", &index.name)
                    .text("kind", &index.kind)
                    .set("options", text_map(&index.options));
                out.push(row.take());
            }
        }
    }
    out
}

/// `system."IndexInfo"`: the indexes whose build is done, by keyspace
/// (`table_name` holds the keyspace, as in Cassandra). CREATE INDEX builds
/// over the existing data before it answers, so every index is built.
fn built_index_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in schema_keyspaces(schema) {
        for index in keyspace.tables.values().flat_map(|t| &t.indexes) {
            let mut row = Cells::default();
            row.text("table_name", &keyspace.name)
                .text("index_name", &index.name);
            out.push(row);
        }
    }
    out
}

/// `system_views.sai_column_indexes`: every SAI index, queryable (CREATE
/// INDEX builds before it answers), with its column and analyzer.
fn sai_column_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for table in schema_keyspaces(schema).flat_map(|k| k.tables.values()) {
        for index in &table.indexes {
            let Some(sai) = crate::index::sai_column(table, index) else {
                continue;
            };
            let mut row = Cells::default();
            row.text("keyspace_name", &table.keyspace)
                .text("index_name", &index.name)
                .text("table_name", &table.name)
                .text("column_name", sai.column)
                .set("is_queryable", Value::Boolean(true))
                .set("is_building", Value::Boolean(false))
                .set("is_string", Value::Boolean(sai.is_string))
                .text("analyzer", &sai.analyzer);
            out.push(row);
        }
    }
    out
}

/// The materialized views of the user keyspaces, as (keyspace, view).
fn views(schema: &Schema) -> impl Iterator<Item = (&str, &str)> {
    schema_keyspaces(schema).flat_map(|k| {
        k.tables
            .values()
            .filter(|t| t.view.is_some())
            .map(|t| (t.keyspace.as_str(), t.name.as_str()))
    })
}

/// `system.built_views`: CREATE MATERIALIZED VIEW builds the view over
/// the base's data before it answers, so every view is built.
fn built_view_rows(schema: &Schema) -> Vec<Cells> {
    views(schema)
        .map(|(keyspace, view)| {
            let mut row = Cells::default();
            row.text("keyspace_name", keyspace)
                .text("view_name", view)
                .set("status_replicated", Value::Boolean(true));
            row
        })
        .collect()
}

/// `system_distributed.view_build_status`: SUCCESS for every view on every
/// node this one knows.
fn view_build_status_rows(schema: &Schema, node: &NodeInfo) -> Vec<Cells> {
    let hosts: Vec<[u8; 16]> = std::iter::once(node.host_id)
        .chain(node.peers.iter().map(|p| p.host_id))
        .collect();
    let mut out = Vec::new();
    for (keyspace, view) in views(schema) {
        for host in &hosts {
            let mut row = Cells::default();
            row.text("keyspace_name", keyspace)
                .text("view_name", view)
                .set("host_id", Value::Uuid(*host))
                .text("status", "SUCCESS");
            out.push(row);
        }
    }
    out
}

fn virtual_keyspace_rows(schema: &Schema) -> Vec<Cells> {
    virtual_keyspaces(schema)
        .map(|k| {
            let mut row = Cells::default();
            row.text("keyspace_name", &k.name);
            row
        })
        .collect()
}

fn virtual_table_rows(schema: &Schema) -> Vec<Cells> {
    let mut out = Vec::new();
    for keyspace in virtual_keyspaces(schema) {
        for table in keyspace.tables.values() {
            let mut row = Cells::default();
            row.text("keyspace_name", &table.keyspace)
                .text("table_name", &table.name)
                .text("comment", &table.params.comment);
            out.push(row.take());
        }
    }
    out
}

// ---------------------------------------------------------------- ordering

/// Sorts rows by the token of their partition key, then the key bytes (to
/// keep equal tokens apart), then clustering in the table's order. Tables of
/// Cassandra's virtual keyspaces use a local partitioner instead: partition
/// keys in their type's order.
fn sort_rows(table: &Table, rows: &mut [Row]) {
    let by_key_value = is_virtual_in_cassandra(&table.keyspace);
    let keyed: Vec<(Token, Vec<u8>)> = rows
        .iter()
        .map(|row| {
            let key = partition_key(table, row);
            let token = if by_key_value {
                Token(0)
            } else {
                Token::murmur3(&key)
            };
            (token, key)
        })
        .collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        let partition = if by_key_value {
            compare_columns(table.partition_key(), 0, &rows[a], &rows[b])
        } else {
            keyed[a].cmp(&keyed[b])
        };
        partition.then_with(|| {
            compare_columns(
                table.clustering(),
                table.partition_key_count,
                &rows[a],
                &rows[b],
            )
        })
    });
    let mut sorted: Vec<Row> = order
        .iter()
        .map(|&i| std::mem::take(&mut rows[i]))
        .collect();
    for (slot, row) in rows.iter_mut().zip(sorted.drain(..)) {
        *slot = row;
    }
}

fn partition_key(table: &Table, row: &Row) -> Vec<u8> {
    let parts: Vec<&[u8]> = row[..table.partition_key_count.min(row.len())]
        .iter()
        .map(|cell| cell.as_deref().unwrap_or(&[]))
        .collect();
    if parts.len() == 1 {
        parts[0].to_vec()
    } else {
        rocksandra_data::token::serialize_partition_key(&parts)
    }
}

/// Compares the cells of `columns`, found from index `start` of the rows.
fn compare_columns(columns: &[Column], start: usize, a: &Row, b: &Row) -> Ordering {
    for (i, column) in columns.iter().enumerate() {
        let (x, y) = (&a[start + i], &b[start + i]);
        let order = match (x, y) {
            (Some(x), Some(y)) => compare(&column.ty, x, y),
            (x, y) => x.is_some().cmp(&y.is_some()),
        };
        let order = if column.descending {
            order.reverse()
        } else {
            order
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
pub(crate) mod tests;
