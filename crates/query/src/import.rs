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
    let mut schema = crate::system::builtin_schema();
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
    // Names, types, roles (partition key or clustering), positions and
    // orders: together they make the stored keys.
    let key = |t: &Table| -> Vec<(String, String, bool, usize, bool)> {
        t.columns
            .iter()
            .filter(|c| c.kind.is_primary_key())
            .map(|c| {
                let partition = c.kind == crate::schema::ColumnKind::PartitionKey;
                (
                    c.name.clone(),
                    c.ty.to_string(),
                    partition,
                    c.position,
                    c.descending,
                )
            })
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

#[cfg(test)]
mod tests {
    use rocksandra_cql::ast::Statement;

    use super::*;

    /// `ks.t` as the CQL statements (after the keyspace's) leave it.
    fn table(statements: &[&str]) -> Table {
        let mut schema = crate::system::builtin_schema();
        let keyspace = "CREATE KEYSPACE ks WITH replication = \
                        {'class': 'SimpleStrategy', 'replication_factor': 1}";
        for text in std::iter::once(&keyspace).chain(statements) {
            let parsed = rocksandra_cql::parse_statement(text).expect("parses");
            let outcome = match &parsed.statement {
                Statement::CreateKeyspace(s) => crate::ddl::create_keyspace(&schema, s, &[]),
                Statement::CreateTable(s) => {
                    crate::ddl::create_table(&schema, "ks", s, &|| 7, false)
                }
                Statement::AlterTable(s) => {
                    crate::ddl::alter_table(&schema, "ks", s, 1, (false, false))
                }
                other => panic!("not a schema statement: {other:?}"),
            };
            schema = outcome.expect("applies").schema.expect("a new schema");
        }
        Table::clone(schema.table("ks", "t").expect("ks.t"))
    }

    fn refusal(source: &Table, live: &Table) -> String {
        column_map(source, live).expect_err("refused").to_string()
    }

    const SNAPSHOT: &str = "CREATE TABLE ks.t (p int, c int, v text, s int static, \
                            tags set<text>, PRIMARY KEY (p, c))";

    #[test]
    fn columns_are_matched_by_name_whatever_their_ids() {
        let source = table(&[SNAPSHOT]);
        let live = table(&[
            "CREATE TABLE ks.t (p int, c int, extra int, tags set<text>, \
                            s int static, v text, PRIMARY KEY (p, c))",
        ]);
        let id = |t: &Table, name: &str| t.column(name).expect("column").id;
        let map = column_map(&source, &live).expect("fits");
        let expected = ColumnMap::new(
            source
                .columns
                .iter()
                .filter(|c| !c.kind.is_primary_key())
                .map(|c| (c.id, id(&live, &c.name)))
                .collect(),
        );
        assert_eq!(Some(map), expected);
        assert_ne!(id(&source, "v"), id(&live, "v"));
    }

    #[test]
    fn a_dropped_column_is_left_out_and_an_unknown_one_refused() {
        let source = table(&[SNAPSHOT]);
        let without = "CREATE TABLE ks.t (p int, c int, v text, s int static, \
                       PRIMARY KEY (p, c))";
        let live = table(&[without]);
        assert!(refusal(&source, &live).contains("Unknown column tags during deserialization"));
        let dropped = table(&[
            without,
            "ALTER TABLE ks.t ADD tags set<text>",
            "ALTER TABLE ks.t DROP tags",
        ]);
        let map = column_map(&source, &dropped).expect("fits");
        let tags = source.column("tags").expect("tags").id;
        let row = rocksandra_storage::cell::RowState {
            cells: vec![rocksandra_storage::cell::Cell::live(tags, 1, vec![1])],
            ..Default::default()
        };
        assert!(map.rewrite(row).is_empty(), "the dropped column's cells go");
    }

    #[test]
    fn another_type_kind_or_primary_key_is_refused() {
        let source = table(&[SNAPSHOT]);
        let cases = [
            (
                "v int, s int static, tags set<text>, PRIMARY KEY (p, c))",
                "column v is regular text",
            ),
            (
                "v text, s int, tags set<text>, PRIMARY KEY (p, c))",
                "column s is static int",
            ),
            (
                "v text, s int static, tags set<text>, PRIMARY KEY (p, c)) \
              WITH CLUSTERING ORDER BY (c DESC)",
                "the primary key",
            ),
            (
                "v text, s int static, tags set<text>, PRIMARY KEY (c, p))",
                "the primary key",
            ),
            (
                "v text, s int, tags set<text>, PRIMARY KEY ((p, c)))",
                "the primary key",
            ),
        ];
        for (columns, error) in cases {
            let live = table(&[&format!("CREATE TABLE ks.t (p int, c int, {columns}")]);
            let refused = refusal(&source, &live);
            assert!(refused.contains(error), "{columns}: {refused}");
        }
    }
}
