//! Snapshots of the node (`nodetool snapshot`, and `auto_snapshot` before
//! DROP and TRUNCATE): one RocksDB checkpoint of every table (hard links to
//! the live files), with the schema beside it, stored as the node keeps it
//! (`schema.json`) and as DESCRIBE SCHEMA prints it (`schema.cql`).
//!
//! Restoring one (the node stopped): the snapshot directory becomes the
//! data directory's `rocksdb`, and its `schema.json` the data directory's.

use std::path::Path;

use rocksandra_cql::ast::{Describe, DescribeTarget};
use rocksandra_storage::{Engine, TableId};

use crate::error::{QueryError, Result};
use crate::schema::{Schema, SCHEMA_FILE};
use crate::NodeInfo;

/// The schema as DESCRIBE SCHEMA prints it, in a snapshot.
pub const SNAPSHOT_SCHEMA_CQL: &str = "schema.cql";

/// Writes a snapshot of every table of `engine`, and `schema`, to `dir`
/// (which must not exist).
pub(crate) fn write(
    engine: &dyn Engine,
    schema: &Schema,
    node: &NodeInfo,
    dir: &Path,
) -> Result<()> {
    let cql = schema_cql(schema, node)?;
    engine.snapshot(dir)?;
    let write = |name: &str, bytes: &[u8]| {
        rocksandra_storage::fs::write_atomically(dir, name, bytes).map_err(|e| {
            QueryError::Server(format!("cannot write {name} in {}: {e}", dir.display()))
        })
    };
    write(SCHEMA_FILE, &schema.to_stored_json())?;
    write(SNAPSHOT_SCHEMA_CQL, cql.as_bytes())
}

/// What a DROP removes, named for its snapshot: the table (or view), or
/// the keyspace when it drops several; None when it drops no table.
pub(crate) fn dropped_name(schema: &Schema, dropped: &[TableId]) -> Option<String> {
    // Tables and views, not the storage of their indexes (DROP INDEX takes
    // no snapshot, as in Cassandra).
    let tables: Vec<_> = schema
        .tables()
        .filter(|t| !t.is_virtual && dropped.contains(&t.storage_id))
        .collect();
    match tables.as_slice() {
        [] => None,
        [table] => Some(table.name.clone()),
        [first, ..] => Some(first.keyspace.clone()),
    }
}

fn schema_cql(schema: &Schema, node: &NodeInfo) -> Result<String> {
    let statement = Describe {
        target: DescribeTarget::Schema { full: false },
        with_internals: false,
    };
    let result = crate::describe::describe(&statement, schema, None, node)?;
    let statements: Vec<String> = result
        .rows
        .iter()
        .filter_map(|row| row.last().cloned().flatten())
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .collect();
    Ok(statements.join("\n\n") + "\n")
}
