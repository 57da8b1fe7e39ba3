//! Materialized views: their schema statements (as pure functions from a
//! schema to the next, like `ddl`) and how a write to a base table becomes
//! writes to its views.
//!
//! A view is a table (`Table::view` is set) whose primary key holds every
//! primary key column of its base plus at most one regular base column (the
//! "key column"). Its rows are kept by the node that coordinates a base
//! write: it reads the stored state of the base rows the write touches,
//! merges the write into it in memory, and derives each view row from the
//! state before and after, as Cassandra's `ViewUpdateGenerator` does:
//! - a base row that enters the view (or whose key column changes) writes the
//!   whole projected row at its view key: cells, tombstones and collection
//!   deletions with their own timestamps and TTLs, the base row's deletion,
//!   and a primary-key liveness (`entry_liveness`);
//! - a base row that leaves the view (or moves) retires its old view row with
//!   an expired liveness at the old liveness's timestamp (a dead marker that
//!   newer markers supersede, so the row can come back) and the base row's
//!   deletion, if any;
//! - a view with a key column enforces strict liveness: its rows live
//!   exactly as long as their liveness (`TableOptions::strict_liveness`), so
//!   cells left in a retired row do not keep it alive.

use std::collections::BTreeSet;
use std::sync::Arc;

use rocksandra_cql::ast::{
    AlterMaterializedView, AlterTable, AlterTableAction, ClusteringOrder, CreateMaterializedView,
    Expr, Relation, RelationLhs, Selection,
};
use rocksandra_data::LocalTime;
use rocksandra_storage::cell::{Cell, CellKind, ColumnId, DeletionTime, LiveRow, LivenessInfo};
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::{
    Engine, KvEngine, Mutation, PartitionKey, PartitionRead, RangeScan, RowUpdate, Slice, TableId,
};
use rocksandra_wire::{SchemaChangeTarget, SchemaChangeType};

use crate::ctx::StatementCtx;
use crate::ddl::{self, DdlOutcome, StorageEffects};
use crate::error::{QueryError, Result};
use crate::schema::{views_of, Column, ColumnKind, Keyspace, Schema, Table, TableParams, ViewDef};

/// The warning Cassandra attaches to CREATE MATERIALIZED VIEW.
pub const USAGE_WARNING: &str =
    "Materialized views are experimental and are not recommended for production use.";

/// The refusal when `materialized_views_enabled` is false (Cassandra's default).
pub const DISABLED: &str = "Materialized views are disabled. Enable in cassandra.yaml to use.";

fn ire(message: impl Into<String>) -> QueryError {
    QueryError::invalid(message)
}

fn table_event(
    change_type: SchemaChangeType,
    keyspace: &str,
    name: &str,
) -> rocksandra_wire::SchemaChange {
    rocksandra_wire::SchemaChange {
        change_type,
        target: SchemaChangeTarget::Table {
            keyspace: keyspace.to_string(),
            table: name.to_string(),
        },
    }
}

/// CREATE MATERIALIZED VIEW, with Cassandra 5.0's checks in its order.
pub fn create_view(
    schema: &Schema,
    session_keyspace: Option<&str>,
    stmt: &CreateMaterializedView,
    random: &dyn Fn() -> u64,
) -> Result<DdlOutcome> {
    let base_keyspace = crate::schema::keyspace_of(&stmt.base_table, session_keyspace)?;
    // An unqualified view is in the session's keyspace, as in Cassandra.
    let keyspace = match &stmt.name.keyspace {
        Some(k) => k.as_str(),
        None => session_keyspace.unwrap_or(base_keyspace),
    };
    if keyspace != base_keyspace {
        if schema.keyspace(keyspace).is_none() {
            return Err(ire(format!("Keyspace '{keyspace}' doesn't exist")));
        }
        return Err(ire(
            "Cannot create a materialized view on a table in a different keyspace",
        ));
    }
    let view_name = stmt.name.name.as_str();
    let base_name = stmt.base_table.name.as_str();
    let event = table_event(SchemaChangeType::Created, keyspace, view_name);
    if crate::schema::is_system_keyspace(keyspace) {
        return Err(ire(format!("{keyspace} keyspace is not user-modifiable.")));
    }
    let Some(ks) = schema.keyspace(keyspace) else {
        return Err(ire(format!("Keyspace '{keyspace}' doesn't exist")));
    };
    let Some(base) = ks.tables.get(base_name) else {
        return Err(ire(format!("Base table '{base_name}' doesn't exist")));
    };
    if view_already_exists(ks, stmt, keyspace)? {
        return Ok(unchanged(event));
    }
    check_view_base(base, view_name, base_name)?;
    let selected = view_selection(base, stmt)?;
    let (key_names, regular_in_key) = view_primary_key(base, stmt, &selected)?;
    check_view_where(base, stmt, &key_names)?;
    // The restrictions must make sense as a SELECT's (types of literals).
    view_filter(ks, base, &stmt.where_clause)?;
    let params = view_params(stmt)?;
    let (columns, next_id) = view_columns(base, stmt, &selected, &key_names)?;
    let where_clause = where_text(&stmt.where_clause);
    let mut view = Table {
        keyspace: keyspace.to_string(),
        name: view_name.to_string(),
        id: ddl::new_table_id(&stmt.options.properties, random)?,
        storage_id: TableId(schema.next_table_id),
        partition_key_count: stmt.partition_key.len(),
        clustering_count: stmt.clustering_key.len(),
        columns,
        params,
        next_column_id: next_id,
        dropped: Vec::new(),
        indexes: Vec::new(),
        is_virtual: false,
        view: Some(Arc::new(ViewDef {
            base_table: base_name.to_string(),
            base_id: base.id,
            include_all_columns: matches!(stmt.selection, Selection::Wildcard),
            where_clause,
            relations: stmt.where_clause.clone(),
            key_column: regular_in_key.map(|s| s.to_string()),
        })),
        compact: None,
        masks: Default::default(),
        metrics: Default::default(),
    };
    view.sort_value_columns();
    crate::masking::follow_base(&mut view, base);
    let view = Arc::new(view);
    let mut next = schema.clone();
    next.next_table_id += 1;
    let mut keyspace_def = Keyspace::clone(ks);
    keyspace_def
        .tables
        .insert(view_name.to_string(), view.clone());
    next.keyspaces
        .insert(keyspace.to_string(), Arc::new(keyspace_def));
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects {
            create: vec![view],
            ..StorageEffects::default()
        },
    })
}

/// Whether the view exists already (true only with IF NOT EXISTS: the
/// statement then changes nothing); an existing view without it, or a
/// table of that name, is an error.
fn view_already_exists(
    ks: &Keyspace,
    stmt: &CreateMaterializedView,
    keyspace: &str,
) -> Result<bool> {
    let view_name = stmt.name.name.as_str();
    match ks.tables.get(view_name) {
        Some(existing) if existing.is_view() => {
            if stmt.if_not_exists {
                return Ok(true);
            }
            Err(QueryError::AlreadyExists {
                keyspace: keyspace.to_string(),
                table: view_name.to_string(),
                message: format!(
                    "Cannot add already existing table \"{view_name}\" to keyspace \"{keyspace}\""
                ),
            })
        }
        Some(_) => Err(ire(format!(
            "Cannot create materialized view '{view_name}' - a table with the same name already exists"
        ))),
        None => Ok(false),
    }
}

/// The base table must be a non-counter table (not a view) whose
/// gc_grace_seconds is not 0.
fn check_view_base(base: &Table, view_name: &str, base_name: &str) -> Result<()> {
    if base.is_counter() {
        return Err(ire(
            "Materialized views are not supported on counter tables",
        ));
    }
    if base.is_view() {
        // Cassandra looks the base up among tables only.
        return Err(ire(format!("Base table '{base_name}' doesn't exist")));
    }
    if base.params.gc_grace_seconds == 0 {
        return Err(ire(format!(
            "Cannot create materialized view '{view_name}' for base table '{base_name}' with gc_grace_seconds of 0, since this value is used to TTL undelivered updates. Setting gc_grace_seconds too low might cause undelivered updates to expire before being replayed."
        )));
    }
    Ok(())
}

/// The SELECT clause: the base columns selected (by name, without aliases,
/// once each), none of them static.
fn view_selection<'b>(base: &'b Table, stmt: &CreateMaterializedView) -> Result<Vec<&'b Column>> {
    let view_name = stmt.name.name.as_str();
    let mut selected: Vec<&Column> = Vec::new();
    match &stmt.selection {
        Selection::Wildcard => selected.extend(base.columns.iter()),
        Selection::Selectors(selectors) => {
            for selector in selectors {
                if selector.alias.is_some() {
                    return Err(ire(format!(
                        "Cannot use aliases when defining a materialized view (got {})",
                        selector_text(selector)
                    )));
                }
                let Expr::Column(name) = &selector.expr else {
                    return Err(ire(format!(
                        "Can only select columns by name when defining a materialized view (got {})",
                        java_selectable_text(&selector.expr)
                    )));
                };
                let column = base.column(name.as_str()).ok_or_else(|| {
                    QueryError::undefined_column(
                        &rocksandra_data::types::quote_identifier_if_needed(name.as_str()),
                        &base.keyspace,
                        &base.name,
                    )
                })?;
                if !selected.iter().any(|c| c.name == column.name) {
                    selected.push(column);
                }
            }
        }
    }
    if let Some(c) = selected.iter().find(|c| c.kind == ColumnKind::Static) {
        return Err(ire(format!(
            "Cannot include static column '{}' in materialized view '{view_name}'",
            c.name
        )));
    }
    Ok(selected)
}

/// PRIMARY KEY and CLUSTERING ORDER BY: the view key's column names (each
/// selected, once, of a key type, every base key column among them) and
/// its one regular base column, if any.
fn view_primary_key<'s>(
    base: &Table,
    stmt: &'s CreateMaterializedView,
    selected: &[&Column],
) -> Result<(Vec<&'s str>, Option<&'s str>)> {
    let view_name = stmt.name.name.as_str();
    let base_name = stmt.base_table.name.as_str();
    if stmt.partition_key.is_empty() {
        return Err(ire(format!(
            "Must provide at least one partition key column for materialized view '{view_name}'"
        )));
    }
    let mut key_names: Vec<&str> = Vec::new();
    for ident in stmt.partition_key.iter().chain(&stmt.clustering_key) {
        let name = ident.as_str();
        let column = base
            .column(name)
            .filter(|c| selected.iter().any(|s| s.name == c.name))
            .ok_or_else(|| {
                ire(format!(
                    "Unknown column '{name}' referenced in PRIMARY KEY for materialized view '{view_name}'"
                ))
            })?;
        if key_names.contains(&name) {
            return Err(ire(format!(
                "Duplicate column '{name}' in PRIMARY KEY clause for materialized view '{view_name}'"
            )));
        }
        key_names.push(name);
        check_key_type(name, &column.ty)?;
    }
    let order = &stmt.options.clustering_order;
    if !order.is_empty()
        && (order.len() != stmt.clustering_key.len()
            || order
                .iter()
                .zip(&stmt.clustering_key)
                .any(|((o, _), c)| o != c))
    {
        return Err(ire(
            "Clustering key columns must exactly match columns in CLUSTERING ORDER BY directive",
        ));
    }
    let missing: Vec<&str> = base
        .partition_key()
        .iter()
        .chain(base.clustering())
        .map(|c| c.name.as_str())
        .filter(|n| !key_names.contains(n))
        .collect();
    if !missing.is_empty() {
        return Err(ire(format!(
            "Cannot create materialized view '{view_name}' without primary key columns {} from base table '{base_name}'",
            missing.join(", ")
        )));
    }
    let regular_in_key: Vec<&str> = key_names
        .iter()
        .copied()
        .filter(|n| base.column(n).is_some_and(|c| !c.kind.is_primary_key()))
        .collect();
    if regular_in_key.len() > 1 {
        let mut named = regular_in_key.clone();
        java_hash_set_order(&mut named);
        return Err(ire(format!(
            "Cannot include more than one non-primary key column in materialized view primary key (got {})",
            named.join(", ")
        )));
    }
    let key_column = regular_in_key.first().copied();
    Ok((key_names, key_column))
}

/// The WHERE clause: no token relation, every view key column restricted
/// (`IS NOT NULL` or otherwise), non-key base columns only by `IS NOT NULL`.
fn check_view_where(base: &Table, stmt: &CreateMaterializedView, key_names: &[&str]) -> Result<()> {
    let mut restricted: BTreeSet<&str> = BTreeSet::new();
    let mut illegal: Vec<&str> = Vec::new();
    for relation in &stmt.where_clause {
        let names: Vec<&str> = match relation {
            Relation::IsNotNull { column } => vec![column.as_str()],
            Relation::Compare {
                lhs: RelationLhs::Token(_),
                ..
            } => {
                return Err(ire(
                    "Cannot use token relation when defining a materialized view",
                ))
            }
            Relation::Compare { lhs, .. } => match lhs {
                RelationLhs::Column(c) | RelationLhs::Element { column: c, .. } => {
                    vec![c.as_str()]
                }
                RelationLhs::Columns(cs) => cs.iter().map(|c| c.as_str()).collect(),
                RelationLhs::Token(_) => Vec::new(),
            },
        };
        for name in names {
            let column = base.column(name).ok_or_else(|| {
                QueryError::undefined_column(
                    &rocksandra_data::types::quote_identifier_if_needed(name),
                    &base.keyspace,
                    &base.name,
                )
            })?;
            restricted.insert(name);
            if !matches!(relation, Relation::IsNotNull { .. }) && !column.kind.is_primary_key() {
                illegal.push(name);
            }
        }
    }
    let unrestricted: Vec<&str> = key_names
        .iter()
        .copied()
        .filter(|n| !restricted.contains(n))
        .collect();
    if !unrestricted.is_empty() {
        return Err(ire(format!(
            "Primary key columns {} must be restricted with 'IS NOT NULL' or otherwise",
            unrestricted.join(", ")
        )));
    }
    if !illegal.is_empty() {
        return Err(ire(format!(
            "Non-primary key columns can only be restricted with 'IS NOT NULL' (got: {} restricted illegally)",
            illegal.join(",")
        )));
    }
    Ok(())
}

/// The WITH options of a view: a table's, without default_time_to_live.
fn view_params(stmt: &CreateMaterializedView) -> Result<TableParams> {
    if stmt
        .options
        .properties
        .iter()
        .any(|p| p.name.as_str().eq_ignore_ascii_case("default_time_to_live"))
    {
        return Err(ire(
            "Cannot set default_time_to_live for a materialized view. Data in a materialized view always expire at the same time than the corresponding data in the parent table.",
        ));
    }
    ddl::new_table_params(&stmt.options.properties)
}

/// The view's columns: its key in the order given (clustering order from
/// CLUSTERING ORDER BY, else the base's), then the other selected columns;
/// and the next column id.
fn view_columns(
    base: &Table,
    stmt: &CreateMaterializedView,
    selected: &[&Column],
    key_names: &[&str],
) -> Result<(Vec<Column>, u32)> {
    let order = &stmt.options.clustering_order;
    let mut columns = Vec::new();
    let mut next_id = 0u32;
    for (position, ident) in stmt.partition_key.iter().enumerate() {
        let base_column = base
            .column(ident.as_str())
            .ok_or_else(|| ire("unknown column"))?;
        columns.push(view_column(
            base_column,
            ColumnKind::PartitionKey,
            position,
            false,
            &mut next_id,
        ));
    }
    for (position, ident) in stmt.clustering_key.iter().enumerate() {
        let base_column = base
            .column(ident.as_str())
            .ok_or_else(|| ire("unknown column"))?;
        let descending = match order.iter().find(|(o, _)| o == ident) {
            Some((_, ClusteringOrder::Desc)) => true,
            Some((_, ClusteringOrder::Asc)) => false,
            None => base_column.kind == ColumnKind::Clustering && base_column.descending,
        };
        columns.push(view_column(
            base_column,
            ColumnKind::Clustering,
            position,
            descending,
            &mut next_id,
        ));
    }
    for column in base.columns.iter() {
        if selected.iter().any(|s| s.name == column.name)
            && !key_names.contains(&column.name.as_str())
        {
            columns.push(view_column(
                column,
                ColumnKind::Regular,
                0,
                false,
                &mut next_id,
            ));
        }
    }
    Ok((columns, next_id))
}

/// The key column checks of CREATE MATERIALIZED VIEW (types as Cassandra's
/// marshal classes, unlike CREATE TABLE's).
fn check_key_type(name: &str, ty: &rocksandra_data::types::CqlType) -> Result<()> {
    if ty.is_multi_cell() {
        let what = if ty.is_collection() {
            "collection type"
        } else {
            "user-defined type"
        };
        return Err(ire(format!(
            "Invalid non-frozen {what} '{}' for PRIMARY KEY column '{name}'",
            rocksandra_wire::types::marshal_name(ty)
        )));
    }
    if ty.is_counter() {
        return Err(ire(format!(
            "counter type is not supported for PRIMARY KEY column '{name}'"
        )));
    }
    if !ty.can_be_key() {
        return Err(ire(format!(
            "duration type is not supported for PRIMARY KEY column '{name}'"
        )));
    }
    Ok(())
}

/// Orders column names as Cassandra's messages list them: by iterating a
/// small `java.util.HashSet` of their identifiers (bucket of the UTF-8
/// bytes' `ByteBuffer.hashCode`, spread as `HashMap.hash` does, in a table
/// of 16; names sharing a bucket stay in insertion order).
fn java_hash_set_order(names: &mut [&str]) {
    let bucket = |name: &str| {
        let h = name.as_bytes().iter().rev().fold(1i32, |h, b| {
            h.wrapping_mul(31).wrapping_add(i32::from(*b as i8))
        });
        (h ^ ((h as u32) >> 16) as i32) & 15
    };
    names.sort_by_key(|n| bucket(n));
}

/// How Cassandra names a selector that is not a column in its refusal of
/// a view: the parsed `Selectable.Raw` has no text of its own, so Java's
/// `Object.toString` prints its class and identity hash
/// (`org.apache.cassandra.cql3.selection.Selectable$WithFunction$Raw@6d4a65c6`).
/// The hash here is one of the selector's text, as arbitrary as Java's.
fn java_selectable_text(expr: &Expr) -> String {
    let class = match expr {
        Expr::Metadata { .. } => "WritetimeOrTTL",
        Expr::Cast { .. } => "WithCast",
        Expr::TypeHint { .. } => "WithTypeHint",
        Expr::Element { .. } => "WithElementSelection",
        Expr::Slice { .. } => "WithSliceSelection",
        Expr::Field { .. } => "WithFieldSelection",
        Expr::Literal(_) | Expr::Bind(_) => "WithTerm",
        Expr::List(_) => "WithList",
        Expr::Set(_) => "WithSet",
        Expr::Map(_) | Expr::Udt(_) => "WithMapOrUdt",
        Expr::Tuple(_) => "BetweenParenthesesOrWithTuple",
        _ => "WithFunction",
    };
    let hash = expr.to_string().bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    }) & 0x7fff_ffff;
    format!("org.apache.cassandra.cql3.selection.Selectable${class}$Raw@{hash:x}")
}

fn selector_text(selector: &rocksandra_cql::ast::Selector) -> String {
    match &selector.alias {
        Some(alias) => format!("{} AS {}", selector.expr, alias),
        None => selector.expr.to_string(),
    }
}

fn view_column(
    base: &Column,
    kind: ColumnKind,
    position: usize,
    descending: bool,
    next_id: &mut u32,
) -> Column {
    let id = ColumnId(*next_id);
    *next_id += 1;
    Column {
        name: base.name.clone(),
        ty: base.ty.clone(),
        kind,
        position,
        descending,
        id,
    }
}

/// The view `name`, None when it does not exist and `if_exists` allows that.
fn existing_view<'a>(
    schema: &'a Schema,
    keyspace: &str,
    name: &str,
    if_exists: bool,
) -> Result<Option<&'a Arc<Table>>> {
    match schema.table(keyspace, name) {
        Some(t) if t.is_view() => Ok(Some(t)),
        _ if if_exists => Ok(None),
        _ => Err(ire(format!(
            "Materialized view '{keyspace}.{name}' doesn't exist"
        ))),
    }
}

fn unchanged(event: rocksandra_wire::SchemaChange) -> DdlOutcome {
    DdlOutcome {
        schema: None,
        change: event,
        effects: StorageEffects::default(),
    }
}

/// ALTER MATERIALIZED VIEW ... WITH options.
pub fn alter_view(
    schema: &Schema,
    session_keyspace: Option<&str>,
    stmt: &AlterMaterializedView,
) -> Result<DdlOutcome> {
    let keyspace = crate::schema::keyspace_of(&stmt.name, session_keyspace)?;
    let name = stmt.name.name.as_str();
    let event = table_event(SchemaChangeType::Updated, keyspace, name);
    let Some(view) = existing_view(schema, keyspace, name, stmt.if_exists)? else {
        return Ok(unchanged(event));
    };
    let mut table = Table::clone(view);
    ddl::apply_table_properties(&mut table.params, &stmt.properties)?;
    if table.params.default_time_to_live > 0 {
        return Err(ire(
            "Forbidden default_time_to_live detected for a materialized view. Data in a materialized view always expire at the same time than the corresponding data in the parent table. default_time_to_live must be set to zero, see CASSANDRA-12868 for more information",
        ));
    }
    if table.params.gc_grace_seconds == 0 {
        return Err(ire(
            "Cannot alter gc_grace_seconds of a materialized view to 0, since this value is used to TTL undelivered updates. Setting gc_grace_seconds too low might cause undelivered updates to expire before being replayed.",
        ));
    }
    let next = ddl::replace_table(schema, table.clone());
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects {
            alter: vec![Arc::new(table)],
            ..StorageEffects::default()
        },
    })
}

/// DROP MATERIALIZED VIEW.
pub fn drop_view(
    schema: &Schema,
    keyspace: &str,
    name: &str,
    if_exists: bool,
) -> Result<DdlOutcome> {
    let event = table_event(SchemaChangeType::Dropped, keyspace, name);
    Ok(match existing_view(schema, keyspace, name, if_exists)? {
        Some(view) => ddl::remove_table(schema, view, event),
        None => unchanged(event),
    })
}

// ---------------------------------------------------------------- filtering

/// A view's restrictions on base primary key columns, evaluated per row.
pub struct ViewFilter {
    filters: Vec<crate::restrict::Filter>,
    tuple_filters: Vec<crate::restrict::TupleFilter>,
}

/// Builds the filter of a view's WHERE clause over `base` (literals only;
/// `IS NOT NULL` restrictions hold for every primary key column).
pub fn view_filter(
    keyspace: &Keyspace,
    base: &Table,
    relations: &[Relation],
) -> Result<ViewFilter> {
    let ctx = crate::term::EvalContext {
        binds: &[],
        now_micros: 0,
        keyspace: &keyspace.name,
        types: crate::schema::KeyspaceTypes(&keyspace.types),
        schema: None,
        random: &|| 0,
        stand_ins: false,
    };
    let (filters, tuple_filters) = crate::restrict::row_filters(base, relations, &ctx)?;
    Ok(ViewFilter {
        filters,
        tuple_filters,
    })
}

impl ViewFilter {
    pub fn matches(&self, base: &Table, row: &crate::rows::CqlRow) -> Result<bool> {
        if !crate::restrict::row_matches(base, row, &self.filters)? {
            return Ok(false);
        }
        Ok(self.tuple_filters.iter().all(|t| t.matches(base, row)))
    }
}

// ---------------------------------------------------------------- maintenance

/// One base row as the view maintenance sees it, before or after a write.
#[derive(Clone, Debug, Default)]
pub struct BaseRow {
    pub clustering: Vec<Vec<u8>>,
    /// What a read sees (deletions applied, expired cells gone).
    pub live: LiveRow,
    /// The stored cells (tombstones too) and whole-collection deletions.
    pub cells: Vec<Cell>,
    pub complex_deletions: Vec<(ColumnId, DeletionTime)>,
    /// The strongest deletion covering the row: the partition's, a range
    /// tombstone's or its own.
    pub deletion: Option<DeletionTime>,
}

impl BaseRow {
    fn live_cell(&self, column: ColumnId) -> Option<&Cell> {
        self.live
            .cells
            .iter()
            .find(|c| c.column == column && c.path.is_none())
    }
}

/// The rows of a base partition around one write, by clustering.
pub struct BaseChange<'a> {
    pub partition_key: &'a [Vec<u8>],
    pub before: &'a [BaseRow],
    pub after: &'a [BaseRow],
}

/// A view row's primary key: partition key components, clustering values.
#[derive(Clone, Debug, PartialEq)]
struct ViewKey {
    partition: Vec<Vec<u8>>,
    clustering: Vec<Vec<u8>>,
}

/// A view with its base-row filter, ready to maintain.
pub struct MaintainedView {
    pub view: Arc<Table>,
    pub filter: ViewFilter,
}

impl MaintainedView {
    pub fn new(keyspace: &Keyspace, base: &Table, view: Arc<Table>) -> Result<MaintainedView> {
        let relations = view
            .view
            .as_ref()
            .map(|v| v.relations.clone())
            .unwrap_or_default();
        Ok(MaintainedView {
            filter: view_filter(keyspace, base, &relations)?,
            view,
        })
    }

    fn def(&self) -> Result<&ViewDef> {
        self.view
            .view
            .as_deref()
            .ok_or_else(|| QueryError::Server(format!("{} is not a view", self.view.name)))
    }

    fn key_column<'b>(&self, base: &'b Table) -> Result<Option<&'b Column>> {
        Ok(match &self.def()?.key_column {
            Some(name) => Some(
                base.column(name)
                    .ok_or_else(|| QueryError::Server(format!("view key column {name} is gone")))?,
            ),
            None => None,
        })
    }

    /// Whether the base row's primary key passes the view's WHERE clause.
    fn selects_key(&self, base: &Table, partition_key: &[Vec<u8>], row: &BaseRow) -> Result<bool> {
        let mut columns = vec![crate::rows::ColumnValue::default(); base.columns.len()];
        for (i, value) in partition_key.iter().chain(&row.clustering).enumerate() {
            if let Some(slot) = columns.get_mut(i) {
                slot.value = Some(value.clone());
            }
        }
        let cql_row = crate::rows::CqlRow {
            partition: PartitionKey::new(crate::rows::partition_key_bytes(partition_key)),
            clustering: Some(row.clustering.clone()),
            columns,
        };
        self.filter.matches(base, &cql_row)
    }

    /// Whether the row has an entry in the view (its key passed the filter).
    fn has_entry(&self, base: &Table, row: &BaseRow) -> Result<bool> {
        Ok(match self.key_column(base)? {
            Some(column) => row.live_cell(column.id).is_some(),
            None => row.live.exists(),
        })
    }

    /// The view's primary key of a base row with an entry.
    fn entry_key(&self, base: &Table, partition_key: &[Vec<u8>], row: &BaseRow) -> Result<ViewKey> {
        let value_of = |column: &Column| -> Result<Vec<u8>> {
            let base_column = base.column(&column.name).ok_or_else(|| {
                QueryError::Server(format!("view column {} is gone", column.name))
            })?;
            let missing = || QueryError::Server(format!("no value for view key {}", column.name));
            match base_column.kind {
                ColumnKind::PartitionKey => partition_key
                    .get(base_column.position)
                    .cloned()
                    .ok_or_else(missing),
                ColumnKind::Clustering => row
                    .clustering
                    .get(base_column.position)
                    .cloned()
                    .ok_or_else(missing),
                _ => row
                    .live_cell(base_column.id)
                    .map(|c| c.value.clone())
                    .ok_or_else(missing),
            }
        };
        let partition = self
            .view
            .partition_key()
            .iter()
            .map(value_of)
            .collect::<Result<Vec<_>>>()?;
        let clustering = self
            .view
            .clustering()
            .iter()
            .map(value_of)
            .collect::<Result<Vec<_>>>()?;
        Ok(ViewKey {
            partition,
            clustering,
        })
    }

    /// The primary-key liveness of a row's view entry (Cassandra's
    /// `computeLivenessInfoForEntry`).
    fn entry_liveness(
        &self,
        base: &Table,
        row: &BaseRow,
        now: LocalTime,
    ) -> Result<Option<LivenessInfo>> {
        if let Some(column) = self.key_column(base)? {
            return Ok(row.live_cell(column.id).map(cell_liveness));
        }
        let base_liveness = row.live.liveness;
        if self.def()?.include_all_columns {
            return Ok(base_liveness);
        }
        // Columns the view does not select still keep its row alive.
        let mut timestamp = base_liveness.map(|l| l.timestamp);
        let mut non_expiring = false;
        let mut latest_expiring: Option<&Cell> = None;
        for cell in &row.live.cells {
            let selected = base
                .columns
                .iter()
                .find(|c| c.id == cell.column)
                .is_some_and(|c| self.view.column(&c.name).is_some());
            if selected {
                continue;
            }
            timestamp = Some(timestamp.map_or(cell.timestamp, |t| t.max(cell.timestamp)));
            match cell.kind {
                CellKind::Expiring {
                    local_expiration_time,
                    ..
                } => {
                    if latest_expiring.is_none_or(|l| {
                        l.local_deletion_time()
                            .is_some_and(|t| local_expiration_time > t)
                    }) {
                        latest_expiring = Some(cell);
                    }
                }
                _ => non_expiring = true,
            }
        }
        let Some(timestamp) = timestamp else {
            return Ok(None);
        };
        let plain = LivenessInfo {
            timestamp,
            ttl_seconds: 0,
            local_expiration_time: LocalTime(0),
        };
        let base_plain_live = base_liveness.is_some_and(|l| l.is_live(now) && !l.is_expiring());
        if base_plain_live || non_expiring {
            return Ok(Some(plain));
        }
        let Some(cell) = latest_expiring else {
            return Ok(base_liveness);
        };
        let expiring = cell_liveness(cell);
        match base_liveness {
            Some(b)
                if b.is_live(now) && expiring.local_expiration_time <= b.local_expiration_time =>
            {
                Ok(Some(b))
            }
            _ => Ok(Some(LivenessInfo {
                timestamp,
                ..expiring
            })),
        }
    }

    /// The base row's content at its view key: selected cells (tombstones
    /// too), collection deletions and the row's deletion.
    fn projection(&self, base: &Table, row: &BaseRow) -> RowUpdate {
        let view_id = |id: ColumnId| -> Option<ColumnId> {
            let name = &base.columns.iter().find(|c| c.id == id)?.name;
            self.view
                .column(name)
                .filter(|c| !c.kind.is_primary_key())
                .map(|c| c.id)
        };
        let mut cells: Vec<Cell> = row
            .cells
            .iter()
            .filter_map(|c| {
                view_id(c.column).map(|id| Cell {
                    column: id,
                    ..c.clone()
                })
            })
            .collect();
        cells.sort_by(|a, b| a.position().cmp(&b.position()));
        RowUpdate {
            liveness: None,
            deletion: row.deletion,
            complex_deletions: row
                .complex_deletions
                .iter()
                .filter_map(|(id, d)| view_id(*id).map(|v| (v, *d)))
                .collect(),
            cells,
        }
    }

    /// The view mutations one base change makes, one per view partition
    /// touched, in the order made.
    pub fn updates(
        &self,
        base: &Table,
        change: &BaseChange<'_>,
        now: LocalTime,
    ) -> Result<Vec<Mutation>> {
        let mut out: Vec<Mutation> = Vec::new();
        let mut put = |partition: Vec<Vec<u8>>, clustering: Vec<Vec<u8>>, update: RowUpdate| {
            let key = PartitionKey::new(crate::rows::partition_key_bytes(&partition));
            let at = match out.iter().position(|m| m.partition == key) {
                Some(i) => i,
                None => {
                    out.push(Mutation::new(self.view.storage_id, key));
                    out.len() - 1
                }
            };
            out[at].rows.push((clustering, update));
        };
        let strict = self.key_column(base)?;
        // Rows by clustering: a partition-wide change may touch many rows.
        let by_clustering =
            |rows: &'_ [BaseRow]| -> std::collections::HashMap<Vec<Vec<u8>>, BaseRow> {
                rows.iter()
                    .map(|r| (r.clustering.clone(), r.clone()))
                    .collect()
            };
        let mut before_rows = by_clustering(change.before);
        let mut after_rows = by_clustering(change.after);
        let mut clusterings: Vec<Vec<Vec<u8>>> = before_rows
            .keys()
            .chain(after_rows.keys().filter(|c| !before_rows.contains_key(*c)))
            .cloned()
            .collect();
        clusterings.sort_by(|a, b| crate::restrict::compare_prefix(base, a, b));
        for clustering in clusterings {
            let absent = || BaseRow {
                clustering: clustering.clone(),
                ..BaseRow::default()
            };
            let before = before_rows.remove(&clustering).unwrap_or_else(absent);
            let after = after_rows.remove(&clustering).unwrap_or_else(absent);
            if !self.selects_key(base, change.partition_key, &after)? {
                continue;
            }
            let old_key = if self.has_entry(base, &before)? {
                Some(self.entry_key(base, change.partition_key, &before)?)
            } else {
                None
            };
            let new_key = if self.has_entry(base, &after)? {
                Some(self.entry_key(base, change.partition_key, &after)?)
            } else {
                None
            };
            if let Some(key) = &new_key {
                let mut update = self.projection(base, &after);
                update.liveness = self.entry_liveness(base, &after, now)?;
                put(key.partition.clone(), key.clustering.clone(), update);
            }
            let Some(old) = old_key else {
                continue;
            };
            if new_key.as_ref() == Some(&old) {
                continue;
            }
            // The entry leaves its old key: end its liveness at the old
            // liveness's time, unless the row deletion already covers it.
            let old_liveness = self.entry_liveness(base, &before, now)?;
            let deletion = after.deletion;
            let mut update = if strict.is_some() {
                RowUpdate {
                    deletion,
                    ..RowUpdate::default()
                }
            } else {
                self.projection(base, &after)
            };
            if let Some(old) = old_liveness {
                if deletion.is_none_or(|d| old.timestamp > d.marked_for_delete_at) {
                    update.liveness = Some(LivenessInfo::expired(old.timestamp, now));
                }
            }
            put(old.partition, old.clustering, update);
        }
        Ok(out)
    }
}

/// A cell's timestamp and expiry as a primary-key liveness.
fn cell_liveness(cell: &Cell) -> LivenessInfo {
    match cell.kind {
        CellKind::Expiring {
            ttl_seconds,
            local_expiration_time,
        } => LivenessInfo {
            timestamp: cell.timestamp,
            ttl_seconds,
            local_expiration_time,
        },
        _ => LivenessInfo {
            timestamp: cell.timestamp,
            ttl_seconds: 0,
            local_expiration_time: LocalTime(0),
        },
    }
}

// ---------------------------------------------------------------- the write path

/// A base table with views, and its keyspace.
struct BaseViews<'a> {
    keyspace: &'a Arc<Keyspace>,
    base: &'a Arc<Table>,
    views: Vec<Arc<Table>>,
}

/// The base table stored under `id` with its views, when it has views.
fn base_with_views(schema: &Schema, id: TableId) -> Option<BaseViews<'_>> {
    let (keyspace, base) = schema.table_by_storage_id(id)?;
    let views: Vec<Arc<Table>> = views_of(keyspace, &base.name).cloned().collect();
    (!views.is_empty()).then_some(BaseViews {
        keyspace,
        base,
        views,
    })
}

/// Whether any of `mutations` writes a table that has views.
pub fn any_views(schema: &Schema, mutations: &[Mutation]) -> bool {
    mutations
        .iter()
        .any(|m| base_with_views(schema, m.table).is_some())
}

/// `mutations` followed by the view mutations they cause. The caller holds
/// the node's read-before-write lock, so the base rows read here are the
/// ones the write changes.
pub fn with_view_updates(
    context: &StatementCtx<'_>,
    schema: &Schema,
    mutations: Vec<Mutation>,
    consistency: rocksandra_wire::Consistency,
    now: LocalTime,
) -> Result<Vec<Mutation>> {
    let mut updates = Vec::new();
    for m in &mutations {
        let Some(BaseViews {
            keyspace,
            base,
            views,
        }) = base_with_views(schema, m.table)
        else {
            continue;
        };
        if m.rows.is_empty() && m.partition_deletion.is_none() && m.range_tombstones.is_empty() {
            continue; // static columns only: never in a view
        }
        let maintained = views
            .into_iter()
            .map(|v| MaintainedView::new(keyspace, base, v))
            .collect::<Result<Vec<_>>>()?;
        let read = touched_rows(base, m);
        let stored = context
            .data()
            .read_raw(schema, base, &read, consistency, now)?;
        let scratch = scratch_engine(base, now)?;
        scratch.write(std::slice::from_ref(&stored.data), now)?;
        let before = base_rows(base, &scratch, &read, now)?;
        scratch.write(std::slice::from_ref(m), now)?;
        let after = base_rows(base, &scratch, &read, now)?;
        let partition_key = crate::rows::partition_components(base, &m.partition.key)?;
        let change = BaseChange {
            partition_key: &partition_key,
            before: &before,
            after: &after,
        };
        for view in &maintained {
            updates.extend(view.updates(base, &change, now)?);
        }
    }
    let mut all = mutations;
    all.extend(updates);
    Ok(all)
}

/// The base rows a mutation may change: the rows it names, or the whole
/// partition when it deletes ranges of it.
fn touched_rows(base: &Table, m: &Mutation) -> PartitionRead {
    let whole = m.partition_deletion.is_some()
        || !m.range_tombstones.is_empty()
        || base.clustering_count == 0;
    let slices = if whole {
        vec![Slice::all()]
    } else {
        let mut keys: Vec<&Vec<Vec<u8>>> = m.rows.iter().map(|(c, _)| c).collect();
        keys.sort_by(|a, b| crate::restrict::compare_prefix(base, a, b));
        keys.dedup();
        keys.into_iter().map(|c| Slice::prefix(c.clone())).collect()
    };
    PartitionRead {
        table: base.storage_id,
        partition: m.partition.clone(),
        slices,
        reversed: false,
        include_static: false,
        row_limit: 0,
    }
}

/// An in-memory engine holding `base`'s table, where a base partition's
/// stored state and a write to it are merged by the engine's own rules.
fn scratch_engine(base: &Table, now: LocalTime) -> Result<KvEngine<MemoryStore>> {
    let engine = KvEngine::new(MemoryStore::new(Arc::new(move || now)));
    engine.create_table(base.storage_spec())?;
    Ok(engine)
}

/// The rows `read` selects on `engine`, stored and live.
fn base_rows(
    base: &Table,
    engine: &KvEngine<MemoryStore>,
    read: &PartitionRead,
    now: LocalTime,
) -> Result<Vec<BaseRow>> {
    let mut live: std::collections::HashMap<Vec<Vec<u8>>, LiveRow> = engine
        .read_partition(read, now)?
        .rows
        .into_iter()
        .map(|r| (r.clustering, r.content))
        .collect();
    let raw = engine.read_raw(read, now)?;
    let data = raw.data;
    let mut rows = Vec::with_capacity(data.rows.len());
    for (clustering, stored) in data.rows {
        let mut deletion = DeletionTime::merge(data.partition_deletion, stored.deletion);
        for rt in &data.range_tombstones {
            if covers(base, &rt.start, &rt.end, &clustering) {
                deletion = DeletionTime::merge(deletion, Some(rt.deletion));
            }
        }
        let live_row = live.remove(&clustering).unwrap_or_default();
        rows.push(BaseRow {
            clustering,
            live: live_row,
            cells: stored.cells,
            complex_deletions: stored.complex_deletions,
            deletion,
        });
    }
    Ok(rows)
}

/// Whether the clustering bounds `[start, end]` hold `clustering`.
fn covers(
    base: &Table,
    start: &rocksandra_storage::ClusteringBound,
    end: &rocksandra_storage::ClusteringBound,
    clustering: &[Vec<u8>],
) -> bool {
    use std::cmp::Ordering;
    let against = |bound: &rocksandra_storage::ClusteringBound| {
        let n = bound.prefix.len().min(clustering.len());
        crate::restrict::compare_prefix(base, &clustering[..n], &bound.prefix)
    };
    let after_start = match against(start) {
        Ordering::Greater => true,
        Ordering::Equal => start.inclusive,
        Ordering::Less => false,
    };
    let before_end = match against(end) {
        Ordering::Less => true,
        Ordering::Equal => end.inclusive,
        Ordering::Greater => false,
    };
    after_start && before_end
}

/// Rows of the base read per page while a new view is built.
const BUILD_PAGE_ROWS: usize = 1000;

/// Fills a new view from its base table's existing rows (synchronously, in
/// pages; Cassandra builds in the background).
pub fn build(
    context: &StatementCtx<'_>,
    keyspace: &str,
    view_name: &str,
    request: &crate::request::Request,
) -> Result<()> {
    let schema = context.schema();
    let Some(view) = schema.table(keyspace, view_name).cloned() else {
        return Ok(());
    };
    let Some(def) = view.view.clone() else {
        return Ok(());
    };
    let (Some(ks), Some(base)) = (
        schema.keyspace(keyspace),
        schema.table(keyspace, &def.base_table),
    ) else {
        return Ok(());
    };
    let maintained = MaintainedView::new(ks, base, view.clone())?;
    let now = context.local_now(request);
    let options = crate::proxy::WriteOptions {
        consistency: request.consistency,
        write_type: rocksandra_wire::WriteType::Simple,
        now,
    };
    let _guard = context.rmw_lock.hold();
    let mut resume = None;
    loop {
        let scan = RangeScan {
            table: base.storage_id,
            token_start: rocksandra_data::Token(i64::MIN),
            token_end: rocksandra_data::Token(i64::MAX),
            resume_after: resume.take(),
            include_static: false,
            per_partition_limit: 0,
            row_limit: BUILD_PAGE_ROWS,
        };
        let page = context
            .data()
            .scan(&schema, base, &scan, request.consistency, now)?;
        let mut updates = Vec::new();
        for partition in &page.partitions {
            let partition_key = crate::rows::partition_components(base, &partition.key.key)?;
            let after: Vec<BaseRow> = partition
                .rows
                .iter()
                .map(|r| BaseRow {
                    clustering: r.clustering.clone(),
                    live: r.content.clone(),
                    cells: r.content.cells.clone(),
                    complex_deletions: Vec::new(),
                    deletion: None,
                })
                .collect();
            let change = BaseChange {
                partition_key: &partition_key,
                before: &[],
                after: &after,
            };
            updates.extend(maintained.updates(base, &change, now)?);
        }
        if !updates.is_empty() {
            context.data().write(&schema, updates, &options)?;
        }
        match page.next {
            Some(next) => resume = Some(next),
            None => return Ok(()),
        }
    }
}

// ---------------------------------------------------------------- base changes

/// ALTER TABLE (`ddl::alter_table`), and the views of the table following
/// it (`follow_base`): the altered views come after the table in the
/// outcome's storage effects.
pub fn alter_table(
    schema: &Schema,
    keyspace: &str,
    stmt: &AlterTable,
    now_micros: i64,
    flags: (bool, bool),
) -> Result<DdlOutcome> {
    let mut outcome = ddl::alter_table(schema, keyspace, stmt, now_micros, flags)?;
    let (Some(mut next), Some(table)) = (outcome.schema.take(), outcome.effects.alter.first())
    else {
        return Ok(outcome);
    };
    let table = Arc::clone(table);
    let views: Vec<Arc<Table>> = next
        .keyspace(keyspace)
        .map(|ks| views_of(ks, &table.name).cloned().collect())
        .unwrap_or_default();
    let with_options = matches!(stmt.action, AlterTableAction::With(_));
    if with_options && !views.is_empty() && table.params.gc_grace_seconds == 0 {
        return Err(ire(
            "Cannot alter gc_grace_seconds of the base table of a materialized view to 0, since this value is used to TTL undelivered updates. Setting gc_grace_seconds too low might cause undelivered updates to expire before being replayed.",
        ));
    }
    for view in &views {
        if let Some(changed) = follow_base(view, &table, &stmt.action) {
            next = ddl::replace_table(&next, changed.clone());
            outcome.effects.alter.push(Arc::new(changed));
        }
    }
    outcome.schema = Some(next);
    Ok(outcome)
}

/// A view after an ALTER TABLE of its base (`base` is the altered table):
/// a `SELECT *` view gains the base's new regular columns, and a renamed
/// primary key column is renamed in the view and its WHERE clause, and
/// the view's columns take the base's masks. None when the view does not
/// change.
fn follow_base(view: &Table, base: &Table, action: &AlterTableAction) -> Option<Table> {
    let def = view.view.as_ref()?;
    let mut changed = Table::clone(view);
    match action {
        AlterTableAction::Add { .. } if def.include_all_columns => {
            for column in base.value_columns() {
                if column.kind == ColumnKind::Regular && view.column(&column.name).is_none() {
                    let mut id = changed.next_column_id;
                    changed.columns.push(view_column(
                        column,
                        ColumnKind::Regular,
                        0,
                        false,
                        &mut id,
                    ));
                    changed.next_column_id = id;
                }
            }
            changed.sort_value_columns();
        }
        AlterTableAction::Rename { renames, .. } => {
            let mut def = ViewDef::clone(def);
            for (from, to) in renames {
                if let Some(column) = changed.columns.iter_mut().find(|c| c.name == from.as_str()) {
                    column.name = to.as_str().to_string();
                }
                for relation in &mut def.relations {
                    rename_in_relation(relation, from.as_str(), to);
                }
            }
            def.where_clause = where_text(&def.relations);
            changed.view = Some(Arc::new(def));
        }
        _ => {}
    }
    crate::masking::follow_base(&mut changed, base);
    (changed != *view).then_some(changed)
}

fn rename_in_relation(relation: &mut Relation, from: &str, to: &rocksandra_cql::ast::Ident) {
    let rename = |ident: &mut rocksandra_cql::ast::Ident| {
        if ident.as_str() == from {
            *ident = to.clone();
        }
    };
    match relation {
        Relation::IsNotNull { column } => rename(column),
        Relation::Compare { lhs, .. } => match lhs {
            RelationLhs::Column(c) | RelationLhs::Element { column: c, .. } => rename(c),
            RelationLhs::Columns(cs) | RelationLhs::Token(cs) => cs.iter_mut().for_each(rename),
        },
    }
}

/// A WHERE clause as system_schema.views.where_clause shows it.
fn where_text(relations: &[Relation]) -> String {
    relations
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(" AND ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_in_java_hash_set_order() {
        // Cassandra 5.0 lists {name, state} as "state, name".
        let mut names = vec!["name", "state"];
        java_hash_set_order(&mut names);
        assert_eq!(names, ["state", "name"]);
        let mut names = vec!["state", "name"];
        java_hash_set_order(&mut names);
        assert_eq!(names, ["state", "name"]);
    }
}
