//! `nodetool import`: one table's data loaded from a snapshot directory
//! (`snapshot`) into the live table of the same name on this node.
//!
//! The snapshot's `schema.json` finds the table (by keyspace and name: the
//! live one may be a new table of the same name, with another id) and its
//! columns. Cells of a column of the same name and type go to the live
//! column, whatever its id; a column the live table has dropped is left
//! out; any other difference (the primary key, a column's type, a column
//! the live table never had) refuses the import, as Cassandra refuses an
//! sstable whose header does not fit the table. The data then reaches the
//! table as streamed data does (`Engine::import`): every cell reconciles
//! with the stored ones by Cassandra's rules. The table's secondary indexes
//! get the entries of its rows again (the ANN graphs of its vector indexes
//! are built again); its materialized views are left as they are, as
//! Cassandra's import leaves them.

use std::path::{Path, PathBuf};

use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::import::{ColumnMap, ImportCounts, ImportSource};
use rocksandra_storage::TokenRange;

use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::schema::{Column, Schema, Table, SCHEMA_FILE};

/// One table to import from one snapshot directory.
#[derive(Clone, Debug)]
pub struct ImportRequest {
    pub keyspace: String,
    pub table: String,
    /// A snapshot directory (`<data_dir>/snapshots/<tag>`, or a copy).
    pub dir: PathBuf,
    /// Scratch space for the files handed to the engine (created, removed).
    pub work_dir: PathBuf,
    /// Only partitions in these ranges (the node's own); None: all.
    pub ranges: Option<Vec<TokenRange>>,
}

/// Imports `request` (the live table must exist: the caller says how it
/// does not), then rewrites the entries of the table's indexes.
pub(crate) fn import(context: &StatementCtx<'_>, request: &ImportRequest) -> Result<ImportCounts> {
    let schema = context.schema();
    let live = schema
        .table(&request.keyspace, &request.table)
        .ok_or_else(|| failed(format!("no table {}.{}", request.keyspace, request.table)))?;
    if !request.dir.is_dir() {
        return Err(failed(format!(
            "Directory {} does not exist",
            request.dir.display()
        )));
    }
    let snapshot = snapshot_schema(&request.dir)?;
    let source = snapshot
        .table(&request.keyspace, &request.table)
        .ok_or_else(|| {
            failed(format!(
                "the snapshot in {} has no table {}.{}",
                request.dir.display(),
                request.keyspace,
                request.table
            ))
        })?;
    let source = ImportSource {
        dir: request.dir.clone(),
        table: source.storage_id,
        columns: column_map(source, live)?,
        ranges: request.ranges.clone(),
    };
    let counts = context
        .engine()
        .import(live.storage_id, &source, &request.work_dir)?;
    crate::index::build::rewrite_all(context, &request.keyspace, &request.table)?;
    // The ANN graphs of its vector indexes did not see the imported rows:
    // forgotten, as after a TRUNCATE, they are built again when next asked.
    context.vector_graphs.retain(&schema, &[live.storage_id]);
    Ok(counts)
}

fn failed(message: String) -> QueryError {
    QueryError::Server(message)
}

/// The schema stored in a snapshot directory.
fn snapshot_schema(dir: &Path) -> Result<Schema> {
    let path = dir.join(SCHEMA_FILE);
    let bytes =
        std::fs::read(&path).map_err(|e| failed(format!("cannot read {}: {e}", path.display())))?;
    let mut schema = Schema::builtin();
    schema.load_stored_json(&bytes)?;
    Ok(schema)
}

/// Which stored columns of the snapshot's table become which of the live
/// table, or why the snapshot's data does not fit the live table.
pub fn column_map(source: &Table, live: &Table) -> Result<ColumnMap> {
    if source.view.is_some() != live.view.is_some() || source.compact != live.compact {
        return Err(failed(format!(
            "{}.{} is not the same kind of table in the snapshot",
            live.keyspace, live.name
        )));
    }
    let key = |t: &Table| -> Vec<(String, String, bool)> {
        t.columns
            .iter()
            .filter(|c| c.kind.is_primary_key())
            .map(|c| (c.name.clone(), c.ty.to_string(), c.descending))
            .collect()
    };
    if key(source) != key(live) {
        return Err(failed(format!(
            "the primary key of {}.{} in the snapshot is not the live table's",
            live.keyspace, live.name
        )));
    }
    let mut pairs = Vec::new();
    for column in source.columns.iter().filter(|c| !c.kind.is_primary_key()) {
        if let Some(id) = live_column(column, live)? {
            pairs.push((column.id, id));
        }
    }
    ColumnMap::new(pairs).ok_or_else(|| failed("two columns of the snapshot share an id".into()))
}

/// The live column `column` of the snapshot goes to: None for one the live
/// table dropped.
fn live_column(column: &Column, live: &Table) -> Result<Option<ColumnId>> {
    let Some(found) = live.columns.iter().find(|c| c.name == column.name) else {
        if live.dropped.iter().any(|d| d.name == column.name) {
            return Ok(None);
        }
        // Cassandra's UnknownColumnException, from an sstable's header.
        return Err(failed(format!(
            "Unknown column {} during deserialization",
            column.name
        )));
    };
    if found.kind != column.kind || found.ty != column.ty {
        return Err(failed(format!(
            "column {} is {} {} in the snapshot and {} {} in the live table",
            column.name,
            kind_name(column),
            column.ty,
            kind_name(found),
            found.ty
        )));
    }
    Ok(Some(found.id))
}

fn kind_name(column: &Column) -> &'static str {
    if column.kind == crate::schema::ColumnKind::Static {
        "static"
    } else {
        "regular"
    }
}
