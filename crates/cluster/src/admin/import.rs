//! `nodetool import KEYSPACE TABLE DIRECTORY...`: one table's data loaded
//! from snapshot directories on this node into the live table
//! (`rocksandra_query::import`). It runs on the node it is sent to, as
//! Cassandra's: by default only the partitions this node replicates are
//! loaded (Cassandra refuses an sstable holding others unless `--no-tokens`);
//! with `--no-tokens` every partition is.

use std::path::PathBuf;

use rocksandra_query::import::ImportRequest;
use rocksandra_storage::TokenRange;

use super::{failed, AdminNode};
use crate::message::Response;

/// Imports `keyspace.table` from each of `dirs` in turn; the directories
/// that failed are listed as Cassandra's nodetool lists them, each with
/// its reason.
pub(crate) fn import(
    node: &AdminNode,
    keyspace: &str,
    table: &str,
    dirs: &[String],
    all_tokens: bool,
) -> Response {
    let schema = node.executor().schema();
    let Some(live) = schema.table(keyspace, table).filter(|t| !t.is_virtual) else {
        // Cassandra's nodetool, when it finds no such table's MBean.
        return failed(format!(
            "ColumnFamilyStore for {keyspace}/{table} not found."
        ));
    };
    // Cassandra checks every directory before it imports from any.
    if let Some(missing) = dirs.iter().find(|d| !std::path::Path::new(d).is_dir()) {
        return failed(format!("Directory {missing} does not exist"));
    }
    let ranges = if all_tokens {
        None
    } else {
        owned_ranges(node, &live.keyspace)
    };
    let mut failures = Vec::new();
    for dir in dirs {
        let millis = rocksandra_data::time::system_micros() / 1000;
        let request = ImportRequest {
            keyspace: keyspace.to_string(),
            table: table.to_string(),
            dir: PathBuf::from(dir),
            work_dir: node
                .config()
                .data_dir
                .join("import")
                .join(format!("{keyspace}.{table}-{millis}")),
            ranges: ranges.clone(),
        };
        match node.executor().import(&request) {
            Ok(counts) => tracing::info!(
                "imported {keyspace}.{table} from {dir}: {} of {} stored entries loaded in {} files",
                counts.loaded,
                counts.entries,
                counts.files
            ),
            Err(e) => {
                tracing::error!("import of {keyspace}.{table} from {dir} failed: {e}");
                failures.push(format!("{dir}: {e}"));
            }
        }
    }
    if failures.is_empty() {
        Response::Text(String::new())
    } else {
        failed(format!(
            "Some directories failed to import, check server logs for details:\n{}",
            failures.join("\n")
        ))
    }
}

/// The token ranges this node replicates for `keyspace`; None for a
/// keyspace not spread over the ring (LocalStrategy: all of it is here).
fn owned_ranges(node: &AdminNode, keyspace: &str) -> Option<Vec<TokenRange>> {
    let schema = node.executor().schema();
    let topology = node.topology.clone();
    crate::topology::replicated_keyspaces(&schema)
        .into_iter()
        .find(|(k, _)| k.name == keyspace)
        .map(|(_, strategy)| topology.ring.ranges_of(&strategy, topology.local))
}
