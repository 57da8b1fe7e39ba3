//! The schema catalog: keyspaces, tables, columns, user types, indexes, and
//! the file that makes them durable.
//!
//! A `Schema` value is immutable once published: DDL clones it, changes the
//! clone, persists it and the executor swaps it in. Readers hold an
//! `Arc<Schema>` for the length of one statement.
//!
//! The schema stands below the statement modules: it names only the types
//! it holds (`udf`, `metrics`' table handle, `type_text`). The built-in
//! keyspaces come from `system::builtin_schema`, the index stores among the
//! tables kept in storage from `index::entries::stored_tables`.
//!
//! Stored form (`schema.json` in the data directory, written to a temporary
//! file, synced, renamed): keyspaces with their user types in creation order
//! and tables whose column types are CQL type text. System keyspaces are
//! built in and never stored.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use rocksandra_data::types::{CqlType, UdtResolver, UdtType};
use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::{ClusteringColumn, TableId};
use serde::{Deserialize, Serialize};

use crate::error::{QueryError, Result};
use crate::type_text::is_empty_type;

/// Keyspaces Cassandra creates itself; their schema cannot be changed.
pub const SYSTEM_KEYSPACES: [&str; 7] = [
    "system",
    "system_schema",
    "system_auth",
    "system_distributed",
    "system_traces",
    "system_views",
    "system_virtual_schema",
];

pub fn is_system_keyspace(name: &str) -> bool {
    SYSTEM_KEYSPACES.contains(&name)
}

/// System keyspaces whose data is replicated as user keyspaces are: an
/// operator may ALTER their replication (Cassandra's runbook raises
/// `system_auth`'s), nothing else of their schema.
pub const REPLICATED_SYSTEM_KEYSPACES: [&str; 3] =
    ["system_auth", "system_distributed", "system_traces"];

/// The package of Cassandra's replication strategies, as
/// `system_schema.keyspaces` names them.
pub const LOCATOR_PACKAGE: &str = "org.apache.cassandra.locator.";

/// The replication a system keyspace is built with (an ALTER may change
/// that of the `REPLICATED_SYSTEM_KEYSPACES`; the stored schema keeps it
/// where it differs from this one).
pub fn builtin_replication(keyspace: &str) -> BTreeMap<String, String> {
    let mut replication = BTreeMap::new();
    let (class, replication_factor) = match keyspace {
        "system_auth" => ("SimpleStrategy", Some("1")),
        "system_distributed" => ("SimpleStrategy", Some("3")),
        "system_traces" => ("SimpleStrategy", Some("2")),
        _ => ("LocalStrategy", None),
    };
    replication.insert("class".to_string(), format!("{LOCATOR_PACKAGE}{class}"));
    if let Some(rf) = replication_factor {
        replication.insert("replication_factor".to_string(), rf.to_string());
    }
    replication
}

#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    pub keyspaces: BTreeMap<String, Arc<Keyspace>>,
    /// Changes on every DDL statement (`schema_version` in system.local).
    pub version: [u8; 16],
    /// The storage id the next table gets; never reused.
    pub next_table_id: u64,
    /// Counts schema changes; in a cluster the highest epoch wins.
    pub epoch: u64,
    /// The storage ids of the tables, views and index stores that DDL
    /// statements dropped (ids are never reused). A schema pushed by a peer
    /// may take away only these (`Executor::install_schema`).
    pub dropped_tables: BTreeSet<u64>,
    /// Where `table_by_storage_id` looks first.
    pub(crate) storage_index: StorageIndex,
}

/// The index of `Schema::table_by_storage_id` and `keyspace_by_storage_id`:
/// the keyspace and table name under each storage id (a table's own, and
/// its indexes' stores), built on first use. The schema's fields are public
/// and may change after it is built, so every hit is checked against them
/// and a miss falls back to the scan. A clone starts empty.
#[derive(Debug, Default)]
pub(crate) struct StorageIndex(OnceLock<StorageIds>);

/// Storage ids to (keyspace, table name): `own` for a table's own id,
/// `any` for any of its storage ids; each the first a scan finds.
#[derive(Debug, Default)]
struct StorageIds {
    own: HashMap<TableId, (String, String)>,
    any: HashMap<TableId, (String, String)>,
}

impl Clone for StorageIndex {
    fn clone(&self) -> StorageIndex {
        StorageIndex::default()
    }
}

/// A cache: two schemas are equal whatever their indexes hold.
impl PartialEq for StorageIndex {
    fn eq(&self, _: &StorageIndex) -> bool {
        true
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Keyspace {
    pub name: String,
    /// `class` plus its options, as stored in system_schema.keyspaces.
    pub replication: BTreeMap<String, String>,
    pub durable_writes: bool,
    pub tables: BTreeMap<String, Arc<Table>>,
    /// In creation order: a type may only use types created before it.
    pub types: Vec<UdtType>,
    /// User-defined functions and aggregates, in creation order.
    pub functions: Vec<crate::udf::UserFunction>,
    pub aggregates: Vec<crate::udf::UserAggregate>,
    /// Built in: system_schema and friends; not stored, not alterable.
    pub is_virtual: bool,
}

/// Ordered as a table's columns come: partition key, clustering, static,
/// regular.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ColumnKind {
    PartitionKey,
    Clustering,
    Static,
    Regular,
}

impl ColumnKind {
    /// As in system_schema.columns.kind.
    pub fn name(self) -> &'static str {
        match self {
            ColumnKind::PartitionKey => "partition_key",
            ColumnKind::Clustering => "clustering",
            ColumnKind::Static => "static",
            ColumnKind::Regular => "regular",
        }
    }

    /// The kind `name` names in system_schema.columns.kind.
    pub fn from_name(name: &str) -> Option<ColumnKind> {
        let kinds = [
            ColumnKind::PartitionKey,
            ColumnKind::Clustering,
            ColumnKind::Static,
            ColumnKind::Regular,
        ];
        kinds.into_iter().find(|kind| kind.name() == name)
    }

    pub fn is_primary_key(self) -> bool {
        matches!(self, ColumnKind::PartitionKey | ColumnKind::Clustering)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: CqlType,
    pub kind: ColumnKind,
    /// Position within the partition key or clustering key; 0 otherwise.
    pub position: usize,
    pub descending: bool,
    pub id: ColumnId,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DroppedColumn {
    pub name: String,
    pub type_text: String,
    pub kind: ColumnKind,
    /// Microseconds; data written at or before it is ignored.
    pub dropped_time: i64,
    /// The id its cells were stored under, which a column of the same name
    /// added again takes back (absent in schemas written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column_id: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Index {
    pub name: String,
    /// `COMPOSITES`, `KEYS` or `CUSTOM`.
    pub kind: String,
    pub options: BTreeMap<String, String>,
    /// The hidden table holding the index entries (`index::storage_table`):
    /// allocated from `Schema::next_table_id` like a table's, never reused.
    /// None for an index that stores nothing (a class this server does not
    /// implement, or one recorded before indexes were stored).
    #[serde(default)]
    pub storage_id: Option<TableId>,
    /// Whether the entries of the data written before the index existed
    /// are in; queries use the index only then.
    #[serde(default)]
    pub built: bool,
}

/// The CQL table options, with Cassandra 5.0's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableParams {
    pub additional_write_policy: String,
    pub allow_auto_snapshot: bool,
    pub bloom_filter_fp_chance: f64,
    pub caching: BTreeMap<String, String>,
    pub cdc: bool,
    pub comment: String,
    pub compaction: BTreeMap<String, String>,
    pub compression: BTreeMap<String, String>,
    pub memtable: String,
    pub crc_check_chance: f64,
    pub default_time_to_live: i32,
    pub extensions: BTreeMap<String, Vec<u8>>,
    pub gc_grace_seconds: i32,
    pub incremental_backups: bool,
    pub max_index_interval: i32,
    pub memtable_flush_period_in_ms: i32,
    pub min_index_interval: i32,
    pub read_repair: String,
    pub speculative_retry: String,
}

fn string_map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Default for TableParams {
    fn default() -> Self {
        TableParams {
            additional_write_policy: "99p".into(),
            allow_auto_snapshot: true,
            bloom_filter_fp_chance: 0.01,
            caching: string_map(&[("keys", "ALL"), ("rows_per_partition", "NONE")]),
            cdc: false,
            comment: String::new(),
            compaction: string_map(&[
                (
                    "class",
                    "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy",
                ),
                ("max_threshold", "32"),
                ("min_threshold", "4"),
            ]),
            compression: string_map(&[
                ("chunk_length_in_kb", "16"),
                ("class", "org.apache.cassandra.io.compress.LZ4Compressor"),
            ]),
            memtable: "default".into(),
            crc_check_chance: 1.0,
            default_time_to_live: 0,
            extensions: BTreeMap::new(),
            gc_grace_seconds: 864_000,
            incremental_backups: true,
            max_index_interval: 2048,
            memtable_flush_period_in_ms: 0,
            min_index_interval: 128,
            read_repair: "BLOCKING".into(),
            speculative_retry: "99p".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub keyspace: String,
    pub name: String,
    /// The table's UUID (system_schema.tables.id).
    pub id: [u8; 16],
    pub storage_id: TableId,
    /// Partition key columns (by position), clustering columns (by
    /// position), then static and regular columns in Cassandra's order
    /// (simple before complex, then by name).
    pub columns: Vec<Column>,
    pub partition_key_count: usize,
    pub clustering_count: usize,
    pub params: TableParams,
    pub next_column_id: u32,
    pub dropped: Vec<DroppedColumn>,
    pub indexes: Vec<Index>,
    /// Built-in system table: rows come from `system::rows`, not storage.
    pub is_virtual: bool,
    /// Set when this table is a materialized view.
    pub view: Option<Arc<ViewDef>>,
    /// Set for a `COMPACT STORAGE` table.
    pub compact: Option<CompactStorage>,
    /// The columns' dynamic data masks (`MASKED WITH`), by column.
    pub masks: BTreeMap<ColumnId, ColumnMask>,
    /// What this node measured of the table (not part of its definition).
    pub metrics: crate::metrics::TableMetricsHandle,
}

/// A column's dynamic data mask (Cassandra 5.0's `MASKED WITH`): a native
/// masking function (`mask_inner`, ...) or a user-defined one, called
/// with the column's value as its first argument and these values as the
/// others.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnMask {
    /// The keyspace of a user-defined function (the table's); None for a
    /// native masking function, in `system`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyspace: Option<String>,
    /// The function's name.
    pub function: String,
    /// The CQL types of the arguments after the first.
    pub arg_types: Vec<String>,
    /// Their values (None for null).
    pub arg_values: Vec<Option<Vec<u8>>>,
}

/// What makes a table a COMPACT STORAGE one (Cassandra's table flags
/// `dense` and `compound`). Such a table writes no row markers, so a row
/// lives only as long as one of its values. Without clustering columns
/// ("static compact") its declared columns are static, under a hidden
/// clustering column (`column1`) beside a hidden regular `value`; with
/// clustering columns ("dense") its one value column is regular, a hidden
/// one of type `empty` when none is declared. Hidden columns are stored and
/// listed in system_schema.columns, but CQL statements do not see them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactStorage {
    /// Declared with clustering columns.
    pub dense: bool,
    /// Declared with more than one clustering column.
    pub compound: bool,
}

impl CompactStorage {
    /// Whether `column` is one of the table's hidden columns.
    pub fn hides(&self, column: &Column) -> bool {
        match column.kind {
            ColumnKind::Clustering => !self.dense,
            ColumnKind::Regular => !self.dense || is_empty_type(&column.ty),
            ColumnKind::PartitionKey | ColumnKind::Static => false,
        }
    }
}

/// What makes a table a materialized view (system_schema.views).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewDef {
    /// In the view's keyspace.
    pub base_table: String,
    pub base_id: [u8; 16],
    /// `SELECT *`: columns added to the base later are added to the view.
    pub include_all_columns: bool,
    /// The WHERE clause (`IS NOT NULL` and restrictions on base primary key
    /// columns), as Cassandra prints it in system_schema.views.where_clause.
    pub where_clause: String,
    pub relations: Vec<rocksandra_cql::ast::Relation>,
    /// The base's regular column in the view's primary key, if any. Such a
    /// view's rows live exactly as long as their primary-key liveness
    /// (Cassandra's `enforceStrictLiveness`), which that column's cell gives.
    pub key_column: Option<String>,
}

impl ViewDef {
    /// Parses a stored WHERE clause back into relations.
    pub fn parse_where(text: &str) -> Result<Vec<rocksandra_cql::ast::Relation>> {
        use rocksandra_cql::ast::{Select, Statement};
        let statement =
            rocksandra_cql::parse_statement(&format!("SELECT * FROM x WHERE {text}"))
                .map_err(|e| QueryError::Server(format!("bad view WHERE clause {text:?}: {e}")))?;
        match statement.statement {
            Statement::Select(s) => {
                let Select { where_clause, .. } = *s;
                Ok(where_clause)
            }
            _ => Err(QueryError::Server(format!(
                "bad view WHERE clause {text:?}"
            ))),
        }
    }
}

impl Table {
    /// The column CQL statements name `name` (a compact table's hidden
    /// columns are nobody's).
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.column_index(name).map(|i| &self.columns[i])
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        let i = self.columns.iter().position(|c| c.name == name)?;
        match &self.compact {
            Some(compact) if compact.hides(&self.columns[i]) => None,
            _ => Some(i),
        }
    }

    /// Whether `column` is a hidden column of a compact table.
    pub fn is_hidden(&self, column: &Column) -> bool {
        self.compact.as_ref().is_some_and(|c| c.hides(column))
    }

    /// A static compact table: compact, without declared clustering columns.
    pub fn is_static_compact(&self) -> bool {
        self.compact.as_ref().is_some_and(|c| !c.dense)
    }

    /// Whether a row may leave out trailing clustering columns: a COMPACT
    /// STORAGE table with several clustering columns (CASSANDRA-7990), whose
    /// INSERTs and UPDATEs may name a clustering prefix. Such a row shows
    /// nulls for the columns it leaves out.
    pub fn allows_clustering_prefix_rows(&self) -> bool {
        self.compact.as_ref().is_some_and(|c| c.dense) && self.clustering_count > 1
    }

    pub fn partition_key(&self) -> &[Column] {
        &self.columns[..self.partition_key_count]
    }

    pub fn clustering(&self) -> &[Column] {
        &self.columns[self.partition_key_count..self.partition_key_count + self.clustering_count]
    }

    /// Static and regular columns.
    pub fn value_columns(&self) -> &[Column] {
        &self.columns[self.partition_key_count + self.clustering_count..]
    }

    pub fn has_static(&self) -> bool {
        self.columns.iter().any(|c| c.kind == ColumnKind::Static)
    }

    pub fn is_counter(&self) -> bool {
        self.value_columns().iter().any(|c| c.ty.is_counter())
    }

    pub fn is_view(&self) -> bool {
        self.view.is_some()
    }

    /// What the storage engine needs to know about this table.
    pub fn storage_spec(&self) -> rocksandra_storage::TableSpec {
        use rocksandra_storage::{CompactionStyle, Compression, TableOptions};
        let class = self
            .params
            .compaction
            .get("class")
            .map(String::as_str)
            .unwrap_or("");
        let compaction = if class.ends_with("LeveledCompactionStrategy") {
            CompactionStyle::Leveled
        } else if class.ends_with("TimeWindowCompactionStrategy") {
            CompactionStyle::TimeWindow
        } else {
            CompactionStyle::Universal
        };
        let compression = match self
            .params
            .compression
            .get("class")
            .map(String::as_str)
            .unwrap_or("")
        {
            c if c.ends_with("ZstdCompressor") => Compression::Zstd,
            c if c.ends_with("LZ4Compressor") => Compression::Lz4,
            c if c.ends_with("NoopCompressor") => Compression::None,
            _ if self.params.compression.get("enabled").map(String::as_str) == Some("false") => {
                Compression::None
            }
            "" => Compression::None,
            _ => Compression::Lz4,
        };
        rocksandra_storage::TableSpec {
            id: self.storage_id,
            clustering: self
                .clustering()
                .iter()
                .map(|c| ClusteringColumn {
                    ty: c.ty.clone(),
                    descending: c.descending,
                })
                .collect(),
            options: TableOptions {
                gc_grace_seconds: i64::from(self.params.gc_grace_seconds),
                compaction,
                compression,
                bloom_filter_fp_chance: self.params.bloom_filter_fp_chance,
                default_ttl_seconds: i64::from(self.params.default_time_to_live),
                strict_liveness: self.view.as_ref().is_some_and(|v| v.key_column.is_some()),
                clustering_prefix_rows: self.allows_clustering_prefix_rows(),
                block_bytes: self
                    .params
                    .compression
                    .get("chunk_length_in_kb")
                    .and_then(|kb| kb.parse::<u32>().ok())
                    .and_then(|kb| kb.checked_mul(1024))
                    .unwrap_or(rocksandra_storage::DEFAULT_BLOCK_BYTES),
            },
            dropped: self
                .dropped
                .iter()
                .filter_map(|d| {
                    Some(rocksandra_storage::DroppedCells {
                        column: ColumnId(d.column_id?),
                        dropped_time: rocksandra_data::Timestamp(d.dropped_time),
                    })
                })
                .collect(),
        }
    }

    /// Where this table's rows and its indexes' entries are stored.
    pub fn storage_ids(&self) -> impl Iterator<Item = TableId> + '_ {
        std::iter::once(self.storage_id).chain(self.indexes.iter().filter_map(|i| i.storage_id))
    }

    /// Puts static and regular columns in Cassandra's order: simple columns
    /// before complex (multi-cell) ones, each by name.
    pub fn sort_value_columns(&mut self) {
        let start = self.partition_key_count + self.clustering_count;
        self.columns[start..].sort_by(|a, b| {
            (a.ty.is_multi_cell(), a.name.as_bytes())
                .cmp(&(b.ty.is_multi_cell(), b.name.as_bytes()))
        });
    }
}

impl Keyspace {
    pub fn user_type(&self, name: &str) -> Option<&UdtType> {
        self.types.iter().find(|t| t.name == name)
    }

    /// The storage of the keyspace's tables and their indexes: what
    /// streaming, repair and cleanup move.
    pub fn storage_ids(&self) -> Vec<TableId> {
        self.tables.values().flat_map(|t| t.storage_ids()).collect()
    }
}

/// Resolves type names of one keyspace.
pub struct KeyspaceTypes<'a>(pub &'a [UdtType]);

impl UdtResolver for KeyspaceTypes<'_> {
    fn resolve_udt(&self, _keyspace: Option<&str>, name: &str) -> Option<UdtType> {
        self.0.iter().find(|t| t.name == name).cloned()
    }
}

/// The schema version of a node that has never changed its schema (the
/// same on every fresh node, so a new cluster starts in agreement).
pub const INITIAL_SCHEMA_VERSION: [u8; 16] = [
    0x59, 0xad, 0xb2, 0x4e, 0xf3, 0xcd, 0x37, 0x02, 0x97, 0x39, 0x5b, 0x4c, 0x18, 0x52, 0xa8, 0x6a,
];

/// What changed from `old` to `new`, as SCHEMA_CHANGE events tell drivers.
pub fn diff(old: &Schema, new: &Schema) -> Vec<rocksandra_wire::SchemaChange> {
    use rocksandra_wire::{SchemaChange, SchemaChangeTarget as Target, SchemaChangeType as Type};
    let mut changes = Vec::new();
    let mut push = |change_type, target| {
        changes.push(SchemaChange {
            change_type,
            target,
        })
    };
    for (name, ks) in &new.keyspaces {
        let before = old.keyspaces.get(name);
        let keyspace = || Target::Keyspace {
            keyspace: name.clone(),
        };
        match before {
            None => push(Type::Created, keyspace()),
            Some(b) if b.replication != ks.replication || b.durable_writes != ks.durable_writes => {
                push(Type::Updated, keyspace())
            }
            Some(_) => {}
        }
        for t in &ks.types {
            let was = before.and_then(|b| b.types.iter().find(|o| o.name == t.name));
            let target = Target::Type {
                keyspace: name.clone(),
                name: t.name.clone(),
            };
            match was {
                None => push(Type::Created, target),
                Some(w) if w != t => push(Type::Updated, target),
                Some(_) => {}
            }
        }
        routine_changes(name, before, Some(ks), &mut push);
        for (tname, table) in &ks.tables {
            let was = before.and_then(|b| b.tables.get(tname));
            let target = Target::Table {
                keyspace: name.clone(),
                table: tname.clone(),
            };
            match was {
                None => push(Type::Created, target),
                Some(w) if w != table => push(Type::Updated, target),
                Some(_) => {}
            }
        }
    }
    for (name, ks) in &old.keyspaces {
        let now = new.keyspaces.get(name);
        for tname in ks.tables.keys() {
            if now.is_none_or(|n| !n.tables.contains_key(tname)) {
                push(
                    Type::Dropped,
                    Target::Table {
                        keyspace: name.clone(),
                        table: tname.clone(),
                    },
                );
            }
        }
        for t in &ks.types {
            if now.is_none_or(|n| !n.types.iter().any(|o| o.name == t.name)) {
                push(
                    Type::Dropped,
                    Target::Type {
                        keyspace: name.clone(),
                        name: t.name.clone(),
                    },
                );
            }
        }
        if now.is_none() {
            routine_changes(name, Some(ks), None, &mut push);
            push(
                Type::Dropped,
                Target::Keyspace {
                    keyspace: name.clone(),
                },
            );
        }
    }
    changes
}

/// The function and aggregate events between two versions of a keyspace
/// (`before` None: created; `after` None: dropped).
fn routine_changes(
    keyspace: &str,
    before: Option<&Arc<Keyspace>>,
    after: Option<&Arc<Keyspace>>,
    push: &mut impl FnMut(rocksandra_wire::SchemaChangeType, rocksandra_wire::SchemaChangeTarget),
) {
    use crate::udf::type_text;
    use rocksandra_wire::{SchemaChangeTarget as Target, SchemaChangeType as Type};
    let empty = (Vec::new(), Vec::new());
    let (old_f, old_a) = before.map_or((&empty.0, &empty.1), |k| (&k.functions, &k.aggregates));
    let (new_f, new_a) = after.map_or((&empty.0, &empty.1), |k| (&k.functions, &k.aggregates));
    let function = |f: &crate::udf::UserFunction| Target::Function {
        keyspace: keyspace.to_string(),
        name: f.name.clone(),
        arg_types: f.argument_types.iter().map(type_text).collect(),
    };
    let aggregate = |a: &crate::udf::UserAggregate| Target::Aggregate {
        keyspace: keyspace.to_string(),
        name: a.name.clone(),
        arg_types: a.argument_types.iter().map(type_text).collect(),
    };
    let same = |n: &str, t: &[CqlType], m: &str, u: &[CqlType]| n == m && t == u;
    for f in new_f {
        match old_f
            .iter()
            .find(|o| same(&o.name, &o.argument_types, &f.name, &f.argument_types))
        {
            None => push(Type::Created, function(f)),
            Some(o) if o != f => push(Type::Updated, function(f)),
            Some(_) => {}
        }
    }
    for a in new_a {
        match old_a
            .iter()
            .find(|o| same(&o.name, &o.argument_types, &a.name, &a.argument_types))
        {
            None => push(Type::Created, aggregate(a)),
            Some(o) if o != a => push(Type::Updated, aggregate(a)),
            Some(_) => {}
        }
    }
    for a in old_a {
        if !new_a
            .iter()
            .any(|n| same(&n.name, &n.argument_types, &a.name, &a.argument_types))
        {
            push(Type::Dropped, aggregate(a));
        }
    }
    for f in old_f {
        if !new_f
            .iter()
            .any(|n| same(&n.name, &n.argument_types, &f.name, &f.argument_types))
        {
            push(Type::Dropped, function(f));
        }
    }
}

impl Schema {
    /// `keyspaces` alone, before any schema change (the built-in ones:
    /// `system::builtin_schema`).
    pub fn initial(keyspaces: Vec<Keyspace>) -> Schema {
        let mut schema = Schema {
            keyspaces: Default::default(),
            version: INITIAL_SCHEMA_VERSION,
            next_table_id: 1,
            epoch: 0,
            dropped_tables: BTreeSet::new(),
            storage_index: StorageIndex::default(),
        };
        for ks in keyspaces {
            schema.keyspaces.insert(ks.name.clone(), Arc::new(ks));
        }
        schema
    }

    pub fn keyspace(&self, name: &str) -> Option<&Arc<Keyspace>> {
        self.keyspaces.get(name)
    }

    pub fn table(&self, keyspace: &str, name: &str) -> Option<&Arc<Table>> {
        self.keyspaces.get(keyspace)?.tables.get(name)
    }

    /// The table `keyspace.name`, or Cassandra's error for a missing one.
    pub fn lookup_table(&self, keyspace: &str, name: &str) -> Result<&Arc<Table>> {
        let Some(ks) = self.keyspace(keyspace) else {
            return Err(QueryError::invalid(format!(
                "keyspace {keyspace} does not exist"
            )));
        };
        ks.tables
            .get(name)
            .ok_or_else(|| QueryError::invalid(format!("table {name} does not exist")))
    }

    /// Every table, system ones included.
    pub fn tables(&self) -> impl Iterator<Item = &Arc<Table>> {
        self.keyspaces.values().flat_map(|k| k.tables.values())
    }

    /// Gives each table the metrics handle the same table (by storage id)
    /// has in `previous`, so that a schema change, from DDL or from a
    /// peer, keeps what was measured; new tables keep their fresh one.
    pub fn keep_metrics_of(&mut self, previous: &Schema) {
        let handles: std::collections::HashMap<TableId, &crate::metrics::TableMetricsHandle> =
            previous
                .keyspaces
                .values()
                .flat_map(|k| k.tables.values())
                .map(|t| (t.storage_id, &t.metrics))
                .collect();
        for keyspace in self.keyspaces.values_mut() {
            let moved = keyspace.tables.values().any(|t| {
                handles
                    .get(&t.storage_id)
                    .is_some_and(|h| !h.same_as(&t.metrics))
            });
            if !moved {
                continue;
            }
            for table in Arc::make_mut(keyspace).tables.values_mut() {
                if let Some(handle) = handles.get(&table.storage_id) {
                    if !handle.same_as(&table.metrics) {
                        Arc::make_mut(table).metrics = (*handle).clone();
                    }
                }
            }
        }
    }

    /// The keyspace and table stored under `id`: every write asks, for its
    /// metrics, indexes and views, so it is a hash lookup where the scan of
    /// every table was.
    pub fn table_by_storage_id(&self, id: TableId) -> Option<(&Arc<Keyspace>, &Arc<Table>)> {
        let indexed = self
            .indexed(|ids| &ids.own, id)
            .filter(|(_, t)| t.storage_id == id);
        indexed.or_else(|| self.scan_storage_id(id))
    }

    /// The keyspace and table `which` of the index names for `id`.
    fn indexed(
        &self,
        which: impl Fn(&StorageIds) -> &HashMap<TableId, (String, String)>,
        id: TableId,
    ) -> Option<(&Arc<Keyspace>, &Arc<Table>)> {
        let ids = self.storage_index.0.get_or_init(|| self.storage_ids());
        let (keyspace, name) = which(ids).get(&id)?;
        let keyspace = self.keyspaces.get(keyspace)?;
        Some((keyspace, keyspace.tables.get(name)?))
    }

    /// The first table stored under `id`, in keyspace and table order
    /// (tables not kept in storage share an id).
    fn scan_storage_id(&self, id: TableId) -> Option<(&Arc<Keyspace>, &Arc<Table>)> {
        self.keyspaces.values().find_map(|k| {
            k.tables
                .values()
                .find(|t| t.storage_id == id)
                .map(|t| (k, t))
        })
    }

    /// Each storage id with the keyspace and name of the first table the
    /// scans find under it.
    fn storage_ids(&self) -> StorageIds {
        let mut ids = StorageIds::default();
        for (keyspace, k) in &self.keyspaces {
            for (name, t) in &k.tables {
                let at = || (keyspace.clone(), name.clone());
                ids.own.entry(t.storage_id).or_insert_with(at);
                for id in t.storage_ids() {
                    ids.any.entry(id).or_insert_with(at);
                }
            }
        }
        ids
    }

    /// The keyspace whose table, or index's entries, are stored under `id`
    /// (where a mutation of that storage is replicated).
    pub fn keyspace_by_storage_id(&self, id: TableId) -> Option<&Arc<Keyspace>> {
        let indexed = self
            .indexed(|ids| &ids.any, id)
            .filter(|(_, t)| t.storage_ids().any(|s| s == id));
        indexed.map(|(k, _)| k).or_else(|| {
            self.keyspaces
                .values()
                .find(|k| k.tables.values().any(|t| t.storage_ids().any(|s| s == id)))
        })
    }
}

// ---------------------------------------------------------------- stored form

#[derive(Serialize, Deserialize)]
struct StoredSchema {
    format: u32,
    version: [u8; 16],
    next_table_id: u64,
    #[serde(default)]
    epoch: u64,
    keyspaces: Vec<StoredKeyspace>,
    /// The replication of the replicated system keyspaces, where an ALTER
    /// changed it (they are built in, not stored as keyspaces).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    system_replication: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    dropped_tables: BTreeSet<u64>,
}

#[derive(Serialize, Deserialize)]
struct StoredKeyspace {
    name: String,
    replication: BTreeMap<String, String>,
    durable_writes: bool,
    types: Vec<StoredType>,
    tables: Vec<StoredTable>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    functions: Vec<crate::udf::StoredFunction>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    aggregates: Vec<crate::udf::StoredAggregate>,
}

#[derive(Serialize, Deserialize)]
struct StoredType {
    name: String,
    fields: Vec<(String, String)>,
}

#[derive(Serialize, Deserialize)]
struct StoredTable {
    name: String,
    id: [u8; 16],
    storage_id: u64,
    columns: Vec<StoredColumn>,
    params: TableParams,
    next_column_id: u32,
    dropped: Vec<DroppedColumn>,
    indexes: Vec<Index>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    view: Option<StoredView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compact: Option<CompactStorage>,
    /// Column masks, by column id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    masks: Vec<(u32, ColumnMask)>,
}

#[derive(Serialize, Deserialize)]
struct StoredView {
    base_table: String,
    base_id: [u8; 16],
    include_all_columns: bool,
    where_clause: String,
    key_column: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct StoredColumn {
    name: String,
    type_text: String,
    kind: ColumnKind,
    position: usize,
    descending: bool,
    id: u32,
}

const SCHEMA_FORMAT: u32 = 1;
pub const SCHEMA_FILE: &str = "schema.json";

impl Schema {
    /// The user keyspaces as JSON, and the replication of the replicated
    /// system keyspaces where it is not the built-in one.
    pub fn to_stored_json(&self) -> Vec<u8> {
        let system_replication = REPLICATED_SYSTEM_KEYSPACES
            .iter()
            .filter_map(|name| {
                let now = self.keyspace(name)?;
                (now.replication != builtin_replication(name))
                    .then(|| (name.to_string(), now.replication.clone()))
            })
            .collect();
        let stored = StoredSchema {
            format: SCHEMA_FORMAT,
            version: self.version,
            next_table_id: self.next_table_id,
            epoch: self.epoch,
            system_replication,
            dropped_tables: self.dropped_tables.clone(),
            keyspaces: self
                .keyspaces
                .values()
                .filter(|k| !k.is_virtual)
                .map(|k| StoredKeyspace {
                    name: k.name.clone(),
                    replication: k.replication.clone(),
                    durable_writes: k.durable_writes,
                    functions: k.functions.iter().map(|f| f.to_stored()).collect(),
                    aggregates: k.aggregates.iter().map(|a| a.to_stored()).collect(),
                    types: k
                        .types
                        .iter()
                        .map(|t| StoredType {
                            name: t.name.clone(),
                            fields: t
                                .fields
                                .iter()
                                .map(|(n, ty)| (n.clone(), ty.to_string()))
                                .collect(),
                        })
                        .collect(),
                    tables: k
                        .tables
                        .values()
                        .map(|t| StoredTable {
                            name: t.name.clone(),
                            id: t.id,
                            storage_id: t.storage_id.0,
                            columns: t
                                .columns
                                .iter()
                                .map(|c| StoredColumn {
                                    name: c.name.clone(),
                                    type_text: c.ty.to_string(),
                                    kind: c.kind,
                                    position: c.position,
                                    descending: c.descending,
                                    id: c.id.0,
                                })
                                .collect(),
                            params: t.params.clone(),
                            next_column_id: t.next_column_id,
                            dropped: t.dropped.clone(),
                            indexes: t.indexes.clone(),
                            view: t.view.as_ref().map(|v| StoredView {
                                base_table: v.base_table.clone(),
                                base_id: v.base_id,
                                include_all_columns: v.include_all_columns,
                                where_clause: v.where_clause.clone(),
                                key_column: v.key_column.clone(),
                            }),
                            compact: t.compact.clone(),
                            masks: t.masks.iter().map(|(id, m)| (id.0, m.clone())).collect(),
                        })
                        .collect(),
                })
                .collect(),
        };
        // Serializing plain data structures to JSON cannot fail.
        serde_json::to_vec_pretty(&stored).unwrap_or_default()
    }

    /// Reads user keyspaces back and adds them to `self` (the built-in ones).
    pub fn load_stored_json(&mut self, bytes: &[u8]) -> Result<()> {
        let stored: StoredSchema = serde_json::from_slice(bytes)
            .map_err(|e| QueryError::Server(format!("cannot read the stored schema: {e}")))?;
        if stored.format != SCHEMA_FORMAT {
            return Err(QueryError::Server(format!(
                "stored schema has format {}, this build reads {SCHEMA_FORMAT}",
                stored.format
            )));
        }
        self.version = stored.version;
        self.next_table_id = stored.next_table_id;
        self.epoch = stored.epoch;
        self.dropped_tables = stored.dropped_tables;
        for (name, replication) in stored.system_replication {
            if let Some(keyspace) = self.keyspaces.get_mut(&name) {
                if REPLICATED_SYSTEM_KEYSPACES.contains(&name.as_str()) {
                    Arc::make_mut(keyspace).replication = replication;
                }
            }
        }
        for k in stored.keyspaces {
            let types = stored_types(&k.name, k.types)?;
            let mut tables = BTreeMap::new();
            for t in k.tables {
                let name = t.name.clone();
                tables.insert(name, Arc::new(stored_table(&k.name, t, &types)?));
            }
            let parse = |text: &str| parse_stored_type(text, &types);
            let functions = k
                .functions
                .into_iter()
                .map(|f| crate::udf::UserFunction::from_stored(&k.name, f, &parse))
                .collect::<Result<Vec<_>>>()?;
            let aggregates = k
                .aggregates
                .into_iter()
                .map(|a| crate::udf::UserAggregate::from_stored(&k.name, a, &parse))
                .collect::<Result<Vec<_>>>()?;
            self.keyspaces.insert(
                k.name.clone(),
                Arc::new(Keyspace {
                    name: k.name,
                    replication: k.replication,
                    durable_writes: k.durable_writes,
                    tables,
                    types,
                    functions,
                    aggregates,
                    is_virtual: false,
                }),
            );
        }
        Ok(())
    }
}

/// A keyspace's user types read back, each parsed against the ones
/// stored before it.
fn stored_types(keyspace: &str, stored: Vec<StoredType>) -> Result<Vec<UdtType>> {
    let mut types: Vec<UdtType> = Vec::new();
    for t in stored {
        let mut fields = Vec::new();
        for (name, text) in t.fields {
            fields.push((name, parse_stored_type(&text, &types)?));
        }
        types.push(UdtType {
            keyspace: keyspace.to_string(),
            name: t.name,
            fields,
        });
    }
    Ok(types)
}

/// A table (or view) read back, its column types parsed against the
/// keyspace's user types.
fn stored_table(keyspace: &str, t: StoredTable, types: &[UdtType]) -> Result<Table> {
    let mut columns = Vec::new();
    for c in t.columns {
        columns.push(Column {
            ty: parse_stored_type(&c.type_text, types)?,
            name: c.name,
            kind: c.kind,
            position: c.position,
            descending: c.descending,
            id: ColumnId(c.id),
        });
    }
    Ok(Table {
        keyspace: keyspace.to_string(),
        partition_key_count: columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
            .count(),
        clustering_count: columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .count(),
        name: t.name,
        id: t.id,
        storage_id: TableId(t.storage_id),
        columns,
        params: t.params,
        next_column_id: t.next_column_id,
        dropped: t.dropped,
        indexes: t.indexes,
        is_virtual: false,
        view: match t.view {
            Some(v) => Some(Arc::new(ViewDef {
                relations: ViewDef::parse_where(&v.where_clause)?,
                base_table: v.base_table,
                base_id: v.base_id,
                include_all_columns: v.include_all_columns,
                where_clause: v.where_clause,
                key_column: v.key_column,
            })),
            None => None,
        },
        compact: t.compact,
        masks: t
            .masks
            .into_iter()
            .map(|(id, mask)| (ColumnId(id), mask))
            .collect(),
        metrics: Default::default(),
    })
}

fn parse_stored_type(text: &str, types: &[UdtType]) -> Result<CqlType> {
    CqlType::parse(text, &KeyspaceTypes(types))
        .map_err(|e| QueryError::Server(format!("stored schema has a bad type {text:?}: {e}")))
}

/// The views of `base`, in name order.
pub fn views_of<'a>(keyspace: &'a Keyspace, base: &'a str) -> impl Iterator<Item = &'a Arc<Table>> {
    keyspace
        .tables
        .values()
        .filter(move |t| t.view.as_ref().is_some_and(|v| v.base_table == base))
}

/// The keyspace a qualified name refers to, or the session's.
pub fn keyspace_of<'a>(
    name: &'a rocksandra_cql::ast::QualifiedName,
    session: Option<&'a str>,
) -> Result<&'a str> {
    match (&name.keyspace, session) {
        (Some(k), _) => Ok(k.as_str()),
        (None, Some(k)) => Ok(k),
        (None, None) => Err(QueryError::invalid(
            "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename",
        )),
    }
}

#[cfg(test)]
mod tests;
