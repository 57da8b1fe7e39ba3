//! Snapshots of the node (`nodetool snapshot`, and `auto_snapshot` before
//! DROP and TRUNCATE): one RocksDB checkpoint of every table (hard links to
//! the live files), with the schema beside it, stored as the node keeps it
//! (`schema.json`) and as DESCRIBE SCHEMA prints it (`schema.cql`).
//!
//! Restoring one (the node stopped): the snapshot directory becomes the
//! data directory's `rocksdb`, and its `schema.json` the data directory's.

use std::path::{Path, PathBuf};

use rocksandra_cql::ast::{Describe, DescribeTarget};
use rocksandra_storage::TableId;

use crate::error::{QueryError, Result};
use crate::executor::Executor;
use crate::schema::{Schema, SCHEMA_FILE};

/// The schema as DESCRIBE SCHEMA prints it, in a snapshot.
pub const SNAPSHOT_SCHEMA_CQL: &str = "schema.cql";

impl Executor {
    /// Writes a snapshot of every table, and the schema, to `dir` (which
    /// must not exist).
    pub fn snapshot(&self, dir: &Path) -> Result<()> {
        let schema = self.schema();
        let cql = schema_cql(&schema, &self.node())?;
        self.engine.snapshot(dir)?;
        let write = |name: &str, bytes: &[u8]| {
            rocksandra_storage::fs::write_atomically(dir, name, bytes).map_err(|e| {
                QueryError::Server(format!("cannot write {name} in {}: {e}", dir.display()))
            })
        };
        write(SCHEMA_FILE, &schema.to_stored_json())?;
        write(SNAPSHOT_SCHEMA_CQL, cql.as_bytes())
    }

    /// `auto_snapshot`: a snapshot under `dir` before every DROP of a
    /// table, view or keyspace and every TRUNCATE; None turns it off.
    pub fn set_auto_snapshot(&self, dir: Option<PathBuf>) {
        *self
            .auto_snapshot
            .write()
            .unwrap_or_else(|p| p.into_inner()) = dir;
    }

    /// Takes `<kind>-<milliseconds>-<name>` (Cassandra's names, e.g.
    /// `dropped-1764223200000-users`) when `auto_snapshot` is on.
    pub(crate) fn auto_snapshot(&self, kind: &str, name: &str) -> Result<()> {
        let dir = self
            .auto_snapshot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(parent) = dir else {
            return Ok(());
        };
        let millis = rocksandra_data::time::system_micros() / 1000;
        std::fs::create_dir_all(&parent)
            .map_err(|e| QueryError::Server(format!("cannot create {}: {e}", parent.display())))?;
        self.snapshot(&parent.join(format!("{kind}-{millis}-{name}")))
    }
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

fn schema_cql(schema: &Schema, node: &crate::NodeInfo) -> Result<String> {
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
