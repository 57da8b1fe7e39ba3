//! `nodetool getcompactionthroughput`, `setcompactionthroughput`,
//! `compactionstats` and `tpstats`.

use std::sync::atomic::Ordering;

use super::AdminNode;
use crate::message::Response;

/// `nodetool getcompactionthroughput`, Cassandra's line. The value is
/// kept, not applied: see `set_compaction_throughput`.
pub(crate) fn get_compaction_throughput(node: &AdminNode) -> Response {
    let value = node.compaction_throughput.load(Ordering::Relaxed);
    Response::Text(format!("Current compaction throughput: {value} MB/s\n"))
}

/// `nodetool setcompactionthroughput N`: remembered until the node
/// stops, and said so: RocksDB's rate limiter is set when the database
/// opens (from `compaction_throughput`) and keeps that rate.
pub(crate) fn set_compaction_throughput(node: &AdminNode, mib_per_second: u32) -> Response {
    let started = node.config().compaction_throughput_mib;
    node.compaction_throughput
        .store(mib_per_second, Ordering::Relaxed);
    let applied = match started {
        0 => "unthrottled".to_string(),
        n => format!("{n} MB/s"),
    };
    Response::Text(format!(
        "Stored only: compactions on this node keep the rate they started with \
         ({applied}, compaction_throughput); RocksDB's rate limiter is fixed when the database opens.\n"
    ))
}

/// `nodetool compactionstats`: RocksDB's count of tables waiting for a
/// compaction as `pending tasks`. Running compactions are only counted:
/// RocksDB does not describe them the way Cassandra's table does.
pub(crate) fn compaction_stats(node: &AdminNode) -> Response {
    let stats = node.engine.stats();
    Response::Text(format!(
        "pending tasks: {}\n\nactive compactions: {}\nestimated bytes left to compact: {}\n",
        stats.compactions_pending, stats.compactions_running, stats.compaction_pending_bytes
    ))
}

/// `nodetool tpstats`: the stages this node has (`crate::stages`), in
/// Cassandra's table. Nothing queues (pending, blocked: 0).
pub(crate) fn tp_stats(node: &AdminNode) -> Response {
    let stages = &node.stages;
    let mut rows = vec![[
        "Pool Name",
        "Active",
        "Pending",
        "Completed",
        "Blocked",
        "All time blocked",
    ]
    .map(String::from)];
    for (name, stage) in [
        ("MutationStage", &stages.mutation),
        ("ReadStage", &stages.read),
    ] {
        rows.push([
            name.to_string(),
            stage.active().to_string(),
            "0".into(),
            stage.completed().to_string(),
            "0".into(),
            "0".into(),
        ]);
    }
    Response::Text(super::snapshots::aligned(&rows))
}
