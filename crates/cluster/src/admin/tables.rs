//! `nodetool flush`, `compact` and `cleanup` with their optional
//! `KEYSPACE [TABLE...]` arguments, resolved against the schema.

use rocksandra_data::LocalTime;
use rocksandra_query::schema::Schema;
use rocksandra_storage::TableId;

use super::failed;
use super::{AdminError, AdminNode};
use crate::message::{Response, TableSelection};

/// Cassandra's text for a keyspace nodetool was given and does not exist.
pub(crate) fn unknown_keyspace(name: &str) -> AdminError {
    AdminError::UnknownKeyspace(name.to_string())
}

/// Where the selected tables (and their indexes) are stored; None when
/// the selection is every table.
pub(crate) fn storage_ids(
    schema: &Schema,
    selection: &TableSelection,
) -> Result<Option<Vec<TableId>>, AdminError> {
    let Some(name) = &selection.keyspace else {
        return Ok(None);
    };
    let keyspace = schema
        .keyspace(name)
        .ok_or_else(|| unknown_keyspace(name))?;
    let mut tables = Vec::new();
    if selection.tables.is_empty() {
        tables.extend(keyspace.tables.values());
    }
    for table in &selection.tables {
        let found = keyspace
            .tables
            .get(table)
            .ok_or_else(|| AdminError::UnknownTable {
                keyspace: name.clone(),
                table: table.clone(),
            })?;
        tables.push(found);
    }
    let ids = tables
        .into_iter()
        .filter(|t| !t.is_virtual)
        .flat_map(|t| t.storage_ids())
        .collect();
    Ok(Some(ids))
}

/// `nodetool flush [KEYSPACE [TABLE...]]` (and `drain`, everything).
pub(crate) fn flush(node: &AdminNode, selection: &TableSelection) -> Response {
    let schema = node.executor().schema();
    let engine = &node.engine;
    let result = match storage_ids(&schema, selection) {
        Err(e) => return failed(e),
        Ok(None) => engine.flush(),
        Ok(Some(ids)) => ids.into_iter().try_for_each(|id| engine.flush_table(id)),
    };
    match result {
        Ok(()) => Response::Text(String::new()),
        Err(e) => failed(e),
    }
}

/// `nodetool compact [KEYSPACE [TABLE...]]`: a full compaction of each.
pub(crate) fn compact(node: &AdminNode, selection: &TableSelection) -> Response {
    let now = LocalTime::of_micros(rocksandra_data::time::system_micros());
    let schema = node.executor().schema();
    let ids = match storage_ids(&schema, selection) {
        Err(e) => return failed(e),
        Ok(Some(ids)) => ids,
        Ok(None) => rocksandra_query::index::entries::stored_tables(&schema)
            .iter()
            .map(|t| t.storage_id)
            .collect(),
    };
    for id in ids {
        if let Err(e) = node.engine.compact(id, now) {
            return failed(e);
        }
    }
    Response::Text(String::new())
}

/// `nodetool cleanup [KEYSPACE [TABLE...]]`: drops the data of ranges this
/// node no longer replicates. Keyspaces not spread over the ring (system
/// ones, LocalStrategy) have nothing to clean.
pub(crate) fn cleanup(node: &AdminNode, selection: &TableSelection) -> Response {
    let schema = node.executor().schema();
    let chosen = match storage_ids(&schema, selection) {
        Ok(chosen) => chosen,
        Err(e) => return failed(e),
    };
    let topology = node.topology.clone();
    for (keyspace, strategy) in crate::topology::replicated_keyspaces(&schema) {
        let keep = topology.ring.ranges_of(&strategy, topology.local);
        for table in keyspace.storage_ids() {
            if chosen.as_ref().is_some_and(|c| !c.contains(&table)) {
                continue;
            }
            if let Err(e) = node.engine.cleanup(table, &keep) {
                return failed(e);
            }
        }
    }
    Response::Text(String::new())
}
