//! Secondary indexes (legacy 2i and SAI, stored alike).
//!
//! - This module: what an index is (its family, target, analyzer and
//!   options, and their checks), from the schema alone.
//! - `plan`: which WHERE relations a table's indexes can serve, following
//!   Cassandra 5.0's rules, so that a SELECT using them needs no ALLOW
//!   FILTERING (`classify`).
//! - `entries`: each index's hidden storage table and the entries a write
//!   adds (without reading), so the index follows every change to its table.
//! - `search`: a query answered from an index: its entries for the value
//!   looked up, each base row re-read and re-checked, stale entries removed.
//! - `build`: the index tables a schema change creates and drops, and the
//!   build of a new index over existing data.
//! - `vector`: the ANN graphs of SAI vector indexes, a node's own;
//!   `vector_local`: a replica's ANN search over its data, from its graph.
//!
//! Indexes are global: an index's entries are partitioned by the indexed
//! value, replicated as their keyspace is, written through the same
//! `DataProxy` as the base write. Range restrictions (SAI on numbers) are
//! not looked up: those queries are answered by the filtered scan ALLOW
//! FILTERING uses, which returns the same rows in the same order.

pub mod analyzer;
pub mod build;
pub mod entries;
pub mod plan;
pub mod search;
pub mod vector;
pub mod vector_local;

use rocksandra_cql::ast::Operator;
use rocksandra_data::types::CqlType;
use rocksandra_data::NativeType;

use crate::error::{QueryError, Result};
use crate::schema::{Column, ColumnKind, Index, Table};

pub use analyzer::Analyzer;

/// Which implementation an index names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexFamily {
    /// `CREATE INDEX` without `USING`, or `USING 'legacy_local_table'`.
    Legacy,
    /// `USING 'sai'` / `'StorageAttachedIndex'`.
    Sai,
}

/// What an index's `target` option indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    Simple,
    Values,
    Keys,
    Entries,
    Full,
}

/// The family of an index, or None for a custom class we do not know (SASI
/// is refused at CREATE; other classes serve no query).
pub fn family(index: &Index) -> Option<IndexFamily> {
    let Some(class) = index.options.get("class_name") else {
        return Some(IndexFamily::Legacy);
    };
    let class = class.to_ascii_lowercase();
    if class == "legacy_local_table" {
        Some(IndexFamily::Legacy)
    } else if class == "sai" || class.ends_with("storageattachedindex") {
        Some(IndexFamily::Sai)
    } else {
        None
    }
}

/// The column an index `target` option names (`values(m)` -> `m`).
pub fn index_target_column(target: &str) -> &str {
    let inner = match (target.find('('), target.rfind(')')) {
        (Some(open), Some(close)) if open < close => &target[open + 1..close],
        _ => target,
    };
    inner.trim_matches('"')
}

/// The kind of an index target (`values(m)` -> Values) and the column name.
pub fn target(index: &Index) -> Option<(TargetKind, &str)> {
    let text = index.options.get("target")?;
    let kind = match text.split_once('(') {
        Some(("values", _)) => TargetKind::Values,
        Some(("keys", _)) => TargetKind::Keys,
        Some(("entries", _)) => TargetKind::Entries,
        Some(("full", _)) => TargetKind::Full,
        _ => TargetKind::Simple,
    };
    Some((kind, index_target_column(text)))
}

/// Cassandra's checks of an index target against its column
/// (`CreateIndexStatement.validateIndexTarget`): which target kinds a
/// column's type allows.
pub fn check_target(column: &Column, kind: rocksandra_cql::ast::IndexTargetKind) -> Result<()> {
    use rocksandra_cql::ast::IndexTargetKind as Kind;
    let name = &column.name;
    if column.ty.references_duration() {
        let what = match column.ty.unfrozen() {
            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) => {
                "collections containing durations"
            }
            CqlType::Tuple(_) => "tuples containing durations",
            CqlType::Udt(_) => "UDTs containing durations",
            _ => "duration columns",
        };
        return Err(QueryError::invalid(format!(
            "Secondary indexes are not supported on {what}"
        )));
    }
    let collection = column.ty.is_collection();
    // A plain target on a collection indexes its values.
    let kind = match kind {
        Kind::Simple if collection => Kind::Values,
        other => other,
    };
    let text = match kind {
        Kind::Simple => "",
        Kind::Values => "values",
        Kind::Keys => "keys",
        Kind::Entries => "entries",
        Kind::Full => "full",
    };
    let frozen_collection = collection && !column.ty.is_multi_cell();
    if frozen_collection && kind != Kind::Full {
        return Err(QueryError::invalid(format!(
            "Cannot create {text}() index on frozen column {name}. Frozen collections are immutable and must be fully indexed by using the 'full({name})' modifier"
        )));
    }
    if !frozen_collection && kind == Kind::Full {
        return Err(QueryError::invalid(
            "full() indexes can only be created on frozen collections",
        ));
    }
    if !collection && kind != Kind::Simple {
        return Err(QueryError::invalid(format!(
            "Cannot create {text}() index on {name}. Non-collection columns only support simple indexes"
        )));
    }
    let multi_cell_map = matches!(column.ty, CqlType::Map(..));
    if !multi_cell_map && matches!(kind, Kind::Keys | Kind::Entries) {
        return Err(QueryError::invalid(format!(
            "Cannot create index on {text} of column {name} with non-map type"
        )));
    }
    if matches!(column.ty, CqlType::Udt(_)) {
        return Err(QueryError::invalid(format!(
            "Cannot create index on non-frozen UDT column {name}"
        )));
    }
    Ok(())
}

/// The options a storage-attached index accepts in Cassandra 5.0 (class
/// and target included); any other is a configuration error.
const SAI_OPTIONS: [&str; 9] = [
    "case_sensitive",
    "normalize",
    "ascii",
    "target",
    "class_name",
    "maximum_node_connections",
    "construction_beam_width",
    "similarity_function",
    "optimize_for",
];

/// The SAI options that analyze (normalize) text values.
const SAI_ANALYZER_OPTIONS: [&str; 3] = ["ascii", "case_sensitive", "normalize"];

/// The SAI options of vector indexes only.
const SAI_VECTOR_OPTIONS: [&str; 4] = [
    "similarity_function",
    "maximum_node_connections",
    "construction_beam_width",
    "optimize_for",
];

/// Cassandra's checks of a new storage-attached index
/// (`StorageAttachedIndex.validateOptions`), in its order: one SAI per
/// column, the options it knows, the analyzer options, the vector options,
/// then the vector column's type.
pub fn check_sai(
    table: &Table,
    column: &Column,
    options: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    let target = options.get("target");
    let same_column = table
        .indexes
        .iter()
        .any(|ix| family(ix) == Some(IndexFamily::Sai) && ix.options.get("target") == target);
    if same_column {
        return Err(QueryError::invalid(format!(
            "Cannot create more than one storage-attached index on the same column: {}",
            column.name
        )));
    }
    let unknown: Vec<&str> = options
        .keys()
        .map(String::as_str)
        .filter(|k| !SAI_OPTIONS.contains(k))
        .collect();
    if !unknown.is_empty() {
        return Err(QueryError::config(format!(
            "Properties specified [{}] are not understood by StorageAttachedIndex",
            unknown.join(", ")
        )));
    }
    let value_type = indexed_value_type(column, options);
    check_sai_analyzer(column, &value_type, options)?;
    let vector = match column.ty.unfrozen() {
        CqlType::Vector(element, dimension) => Some((element.unfrozen(), *dimension)),
        _ => None,
    };
    let mut similarity = crate::functions::vector::Similarity::Cosine;
    if vector.is_none() && SAI_VECTOR_OPTIONS.iter().any(|o| options.contains_key(*o)) {
        return Err(QueryError::invalid(format!(
            "CQL type {value_type} cannot have vector options"
        )));
    }
    if let Some(value) = options.get("similarity_function") {
        similarity = crate::functions::vector::Similarity::from_option(value).ok_or_else(|| {
            QueryError::invalid(format!(
                "Similarity function {} was not recognized for index null. Valid values are: EUCLIDEAN, DOT_PRODUCT, COSINE",
                value.to_ascii_uppercase()
            ))
        })?;
    }
    check_sai_value_types(column, options)?;
    match vector {
        Some((element, _)) if *element != CqlType::Native(NativeType::Float) => {
            Err(QueryError::invalid(
                "SAI ANN indexes are only allowed on vector columns with float elements",
            ))
        }
        Some((_, 1)) if similarity == crate::functions::vector::Similarity::Cosine => Err(
            QueryError::invalid("Cosine similarity is not supported for single-dimension vectors"),
        ),
        _ => Ok(()),
    }
}

/// The type of the values an SAI index holds: a map's keys for `keys()`,
/// a collection's elements (a map's values) for `values()`, else the
/// column's type.
fn indexed_value_type(
    column: &Column,
    options: &std::collections::BTreeMap<String, String>,
) -> CqlType {
    let kind = options
        .get("target")
        .and_then(|t| t.split_once('('))
        .map(|(kind, _)| kind);
    match (kind, column.ty.unfrozen()) {
        (Some("keys"), CqlType::Map(k, _)) => (**k).clone(),
        (Some("values"), CqlType::List(e) | CqlType::Set(e) | CqlType::Map(_, e)) => (**e).clone(),
        _ => column.ty.clone(),
    }
}

/// Cassandra 5.0's check that SAI can hold the indexed values: a native
/// type of `StorageAttachedIndex.SUPPORTED_TYPES` (every one but blob,
/// counter and duration) or a frozen value (frozen collection, tuple,
/// frozen UDT, vector); each side of a map's `entries()` on its own.
fn check_sai_value_types(
    column: &Column,
    options: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    let entries = options
        .get("target")
        .is_some_and(|t| t.starts_with("entries("));
    let types: Vec<CqlType> = match (entries, column.ty.unfrozen()) {
        (true, CqlType::Map(k, v)) => vec![(**k).clone(), (**v).clone()],
        _ => vec![indexed_value_type(column, options)],
    };
    let supported = |ty: &CqlType| match ty {
        CqlType::Native(native) => !matches!(
            native,
            NativeType::Blob | NativeType::Counter | NativeType::Duration
        ),
        CqlType::Frozen(_) | CqlType::Tuple(_) | CqlType::Vector(..) => true,
        _ => false,
    };
    match types.iter().find(|ty| !supported(ty)) {
        Some(ty) => Err(QueryError::invalid(format!("Unsupported type: {ty}"))),
        None => Ok(()),
    }
}

/// The analyzer options of an SAI index: not on a key column, only on
/// text columns, with boolean values (`true`/`false`, any case).
fn check_sai_analyzer(
    column: &Column,
    value_type: &CqlType,
    options: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    let analysis: Vec<(&str, &String)> = SAI_ANALYZER_OPTIONS
        .iter()
        .filter_map(|o| Some((*o, options.get(*o)?)))
        .collect();
    if analysis.is_empty() {
        return Ok(());
    }
    if column.kind.is_primary_key() {
        let found: Vec<String> = analysis
            .iter()
            .map(|(name, value)| format!("'{name}': '{value}'"))
            .collect();
        return Err(QueryError::invalid(format!(
            "Analysis options are not supported on primary key columns, but found {{{}}}",
            found.join(", ")
        )));
    }
    let text = matches!(
        value_type.unfrozen(),
        CqlType::Native(NativeType::Text | NativeType::Ascii)
    );
    if !text {
        return Err(QueryError::invalid(format!(
            "CQL type {value_type} cannot be analyzed."
        )));
    }
    for (name, value) in analysis {
        if !value.eq_ignore_ascii_case("true") && !value.eq_ignore_ascii_case("false") {
            return Err(QueryError::invalid(format!(
                "Illegal value for boolean option '{name}': {value}"
            )));
        }
    }
    Ok(())
}

/// The analyzer of the SAI index on the values of `table`'s column
/// `column`, if it has one that analyzes.
pub fn analyzer_on(table: &Table, column: usize) -> Option<Analyzer> {
    let name = table.columns[column].name.as_str();
    table
        .indexes
        .iter()
        .filter(|ix| target(ix) == Some((TargetKind::Simple, name)))
        .find_map(Analyzer::of)
}

/// Whether `column`'s SAI index answers `op` on it without ever matching an
/// empty value: SAI does not index the empty value of a non-literal type
/// (numbers, dates, times, inets, uuids), so neither `v = blobAsInt(0x)`
/// nor `v < 10` finds a row holding it (text's empty value is a value), nor
/// any empty value of a descending clustering column (its reversed type's
/// empty value: `c = ''` finds no row there, where an ascending one does).
pub fn sai_skips_empty(table: &Table, column: usize, op: Operator) -> bool {
    let column = &table.columns[column];
    let literal = matches!(
        column.ty,
        CqlType::Native(NativeType::Text | NativeType::Ascii | NativeType::Boolean)
    );
    let served = matches!(
        op,
        Operator::Eq | Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
    );
    let descending_clustering = column.kind == ColumnKind::Clustering && column.descending;
    let skipped = descending_clustering || (!literal && !column.kind.is_primary_key());
    served
        && skipped
        && matches!(column.ty, CqlType::Native(_))
        && table.indexes.iter().any(|ix| {
            family(ix) == Some(IndexFamily::Sai)
                && target(ix) == Some((TargetKind::Simple, column.name.as_str()))
        })
}

/// What `system_views.sai_column_indexes` shows of an SAI index.
pub struct SaiColumn<'t> {
    pub column: &'t str,
    /// Whether the index holds literal values (`IndexTermType.isLiteral`):
    /// text, ascii, boolean, frozen values and map entries.
    pub is_string: bool,
    /// The analyzer as Cassandra's `toString` prints it.
    pub analyzer: String,
}

/// The column and analysis of `index`, when it is an SAI index of `table`.
pub fn sai_column<'t>(table: &'t Table, index: &Index) -> Option<SaiColumn<'t>> {
    if family(index) != Some(IndexFamily::Sai) {
        return None;
    }
    let (kind, name) = target(index)?;
    let column = table.column(name)?;
    let value_type = indexed_value_type(column, &index.options);
    let text = matches!(
        value_type,
        CqlType::Native(NativeType::Text | NativeType::Ascii)
    );
    let is_string = kind == TargetKind::Entries
        || !matches!(value_type, CqlType::Native(_))
        || text
        || value_type == CqlType::Native(NativeType::Boolean);
    let option = |name: &str, default: bool| {
        index
            .options
            .get(name)
            .map_or(default, |v| v.eq_ignore_ascii_case("true"))
    };
    let analyzed = SAI_ANALYZER_OPTIONS
        .iter()
        .any(|o| index.options.contains_key(*o));
    let analyzer = if text && analyzed {
        format!(
            "NonTokenizingAnalyzer{{caseSensitive={}, normalized={}, ascii={}}}",
            option("case_sensitive", true),
            option("normalize", false),
            option("ascii", false)
        )
    } else {
        "NoOpAnalyzer".to_string()
    };
    Some(SaiColumn {
        column: &column.name,
        is_string,
        analyzer,
    })
}

/// Cassandra's warning when a table has an SAI index on a vector column.
pub const VECTOR_USAGE_WARNING: &str = "SAI ANN indexes on vector columns are experimental and are not recommended for production use.\nThey don't yet support SELECT queries with:\n * Consistency level higher than ONE/LOCAL_ONE.\n * Paging.\n * No LIMIT clauses.\n * PER PARTITION LIMIT clauses.\n * GROUP BY clauses.\n * Aggregation functions.\n * Filters on columns without a SAI index.";

/// Whether `column` of `table` has a storage-attached index.
pub fn sai_on(table: &Table, column: &str) -> bool {
    table.indexes.iter().any(|ix| {
        family(ix) == Some(IndexFamily::Sai) && target(ix).is_some_and(|(_, c)| c == column)
    })
}

/// The similarity function `column`'s index ranks by: its
/// `similarity_function` option, COSINE by default.
pub fn vector_similarity(table: &Table, column: &str) -> crate::functions::vector::Similarity {
    use crate::functions::vector::Similarity;
    table
        .indexes
        .iter()
        .filter(|ix| target(ix).is_some_and(|(_, c)| c == column))
        .find_map(|ix| ix.options.get("similarity_function"))
        .and_then(|f| Similarity::from_option(f))
        .unwrap_or(Similarity::Cosine)
}

/// Whether `table` has a storage-attached index on a vector column.
pub fn has_vector_sai(table: &Table) -> bool {
    table
        .columns
        .iter()
        .any(|c| matches!(c.ty.unfrozen(), CqlType::Vector(..)) && sai_on(table, &c.name))
}

/// Why Cassandra's replicas refuse a write or query vector of zeros under
/// a cosine SAI index (the client sees a replica failure).
pub const ZERO_VECTOR_COSINE: &str =
    "Zero vectors cannot be indexed or queried with cosine similarity";

/// Refuses a mutation of `table` writing an all-zero vector to a column
/// whose SAI index ranks by cosine similarity.
pub fn check_zero_vectors(table: &Table, m: &rocksandra_storage::Mutation) -> Result<()> {
    use crate::functions::vector::Similarity;
    for column in &table.columns {
        if !matches!(column.ty.unfrozen(), CqlType::Vector(..)) || !sai_on(table, &column.name) {
            continue;
        }
        if vector_similarity(table, &column.name) != Similarity::Cosine {
            continue;
        }
        let rows = m.static_row.iter().chain(m.rows.iter().map(|(_, r)| r));
        let zero = rows.flat_map(|r| &r.cells).any(|cell| {
            cell.column == column.id
                && !cell.value.is_empty()
                && cell
                    .value
                    .chunks(4)
                    .all(|f| f[0] & 0x7F == 0 && f[1..].iter().all(|b| *b == 0))
        });
        if zero {
            return Err(QueryError::invalid(ZERO_VECTOR_COSINE));
        }
    }
    Ok(())
}
