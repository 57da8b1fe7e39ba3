//! Index storage over a schema's life: the index tables a schema change
//! creates, alters and drops, and building a new index over the data
//! written before it existed.
//!
//! CREATE INDEX publishes the index unbuilt: from then on every write adds
//! its entries, but queries do not use it. The build then scans the table
//! and writes the entries of every live row, and a second schema change
//! marks the index built, after which queries use it. Cassandra builds in
//! the background and refuses queries on an index while it builds; here
//! CREATE INDEX answers once the build is done, and queries meanwhile are
//! answered by the filtered scan, as if the index did not exist yet. A
//! build cut short (a crash, an unavailable replica) leaves the index
//! unbuilt; `CREATE INDEX IF NOT EXISTS` with the same name builds it again.

use std::collections::HashMap;

use rocksandra_data::{LocalTime, Token};
use rocksandra_storage::{RangeScan, TableId};
use rocksandra_wire::{Consistency, WriteType};

use super::entries;
use crate::ctx::StatementCtx;
use crate::ddl::DdlOutcome;
use crate::error::{QueryError, Result};
use crate::proxy::WriteOptions;
use crate::schema::{Schema, Table};

/// Base rows read per page while building.
pub const BUILD_BATCH_ROWS: usize = 1000;

/// The index tables one schema has and another has not, or has with other
/// storage options.
#[derive(Debug, Default)]
pub struct StorageChanges {
    pub create: Vec<Table>,
    pub alter: Vec<Table>,
    pub drop: Vec<TableId>,
}

/// Every index table of `schema`.
pub fn index_tables(schema: &Schema) -> Vec<Table> {
    schema
        .tables()
        .filter(|t| !t.is_virtual)
        .flat_map(|t| entries::storage_tables(t))
        .collect()
}

/// What changes among the index tables from `old` to `new`: a new index
/// creates one, a dropped index, table or keyspace drops its, and a table's
/// new options (or clustering types) alter them.
pub fn storage_changes(old: &Schema, new: &Schema) -> StorageChanges {
    let before: HashMap<TableId, Table> = index_tables(old)
        .into_iter()
        .map(|t| (t.storage_id, t))
        .collect();
    let mut changes = StorageChanges::default();
    let mut kept = Vec::new();
    for table in index_tables(new) {
        match before.get(&table.storage_id) {
            None => changes.create.push(table),
            Some(was) => {
                kept.push(table.storage_id);
                if was.storage_spec() != table.storage_spec() {
                    changes.alter.push(table);
                }
            }
        }
    }
    changes.drop = before.into_keys().filter(|id| !kept.contains(id)).collect();
    changes
}

/// Writes the entries of the indexes of `keyspace.table` that are not
/// built yet and returns their names (none when all are built), for the
/// caller to mark built with `mark_built` (a schema change).
pub fn write_pending(
    context: &StatementCtx<'_>,
    keyspace: &str,
    table_name: &str,
) -> Result<Vec<String>> {
    let schema = context.schema();
    let Some(table) = schema.table(keyspace, table_name) else {
        return Ok(Vec::new());
    };
    let pending: Vec<String> = table
        .indexes
        .iter()
        .filter(|i| i.storage_id.is_some() && !i.built)
        .map(|i| i.name.clone())
        .collect();
    if !pending.is_empty() {
        write_entries(context, &schema, table, &pending)?;
    }
    Ok(pending)
}

/// Writes again the entries of every stored index of `keyspace.table`
/// (after `nodetool import` loaded rows into it without them). Entries of
/// rows still there are written again, which changes nothing.
pub fn rewrite_all(context: &StatementCtx<'_>, keyspace: &str, table_name: &str) -> Result<()> {
    let schema = context.schema();
    let Some(table) = schema.table(keyspace, table_name) else {
        return Ok(());
    };
    let stored: Vec<String> = table
        .indexes
        .iter()
        .filter(|i| i.storage_id.is_some())
        .map(|i| i.name.clone())
        .collect();
    if stored.is_empty() {
        return Ok(());
    }
    write_entries(context, &schema, table, &stored)
}

/// Scans `table` and writes the entries of its live rows for the indexes
/// named `pending`.
fn write_entries(
    context: &StatementCtx<'_>,
    schema: &Schema,
    table: &Table,
    pending: &[String],
) -> Result<()> {
    let indexes: Vec<_> = table
        .indexes
        .iter()
        .filter(|i| pending.contains(&i.name))
        .collect();
    let now = LocalTime(context.now_micros().div_euclid(1_000_000));
    let options = WriteOptions {
        consistency: Consistency::Quorum,
        write_type: WriteType::Simple,
        now,
    };
    let mut resume = None;
    loop {
        let scan = RangeScan {
            table: table.storage_id,
            token_start: Token(i64::MIN),
            token_end: Token(i64::MAX),
            resume_after: resume,
            include_static: true,
            per_partition_limit: 0,
            row_limit: BUILD_BATCH_ROWS,
        };
        let page = context
            .data()
            .scan(schema, table, &scan, Consistency::Quorum, now)?;
        let mut mutations = Vec::new();
        for partition in &page.partitions {
            for index in &indexes {
                mutations.extend(entries::for_partition(table, index, partition)?);
            }
        }
        if !mutations.is_empty() {
            context.data().write(schema, mutations, &options)?;
        }
        match page.next {
            Some(next) => resume = Some(next),
            None => return Ok(()),
        }
    }
}

/// The schema change that marks indexes built.
pub fn mark_built(
    schema: &Schema,
    keyspace: &str,
    table_name: &str,
    names: &[String],
) -> Result<DdlOutcome> {
    let Some(current) = schema.table(keyspace, table_name) else {
        return Err(QueryError::invalid(format!(
            "Table '{}' doesn't exist",
            rocksandra_data::types::qualified_name(keyspace, table_name)
        )));
    };
    let mut table = Table::clone(current);
    for index in &mut table.indexes {
        if names.contains(&index.name) {
            index.built = true;
        }
    }
    Ok(DdlOutcome {
        schema: Some(crate::ddl::replace_table(schema, table)),
        change: rocksandra_wire::SchemaChange {
            change_type: rocksandra_wire::SchemaChangeType::Updated,
            target: rocksandra_wire::SchemaChangeTarget::Table {
                keyspace: keyspace.to_string(),
                table: table_name.to_string(),
            },
        },
        effects: Default::default(),
    })
}
