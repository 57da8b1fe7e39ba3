//! `nodetool getcompactionthroughput`, `setcompactionthroughput`,
//! `compactionstats` and `tpstats`.

use std::sync::atomic::Ordering;

use super::failed;
use super::AdminNode;
use crate::message::{Response, ThroughputUnit};
use rocksandra_data::value::java_double;

/// `nodetool getcompactionthroughput`, Cassandra's line: the rate last
/// set (`compaction_throughput` at start, then `setcompactionthroughput`).
pub(crate) fn get_compaction_throughput(node: &AdminNode) -> Response {
    let value = node.compaction_throughput.load(Ordering::Relaxed);
    Response::Text(format!("Current compaction throughput: {value} MB/s\n"))
}

/// `nodetool setcompactionthroughput N` (MiB/s; 0: unthrottled), silent as
/// Cassandra's: applied at once to the storage engine's rate limiter,
/// which caps what flushes and compactions write together.
pub(crate) fn set_compaction_throughput(node: &AdminNode, mib_per_second: u32) -> Response {
    let bytes = (mib_per_second > 0).then(|| u64::from(mib_per_second) << 20);
    if !node.engine.set_compaction_throughput(bytes) {
        return failed("this node's storage engine has no write rate limit");
    }
    node.compaction_throughput
        .store(mib_per_second, Ordering::Relaxed);
    Response::Text(String::new())
}

/// Bytes per second in a megabit per second (Cassandra's conversion).
const MEGABIT_BYTES: f64 = 125_000.0;

/// `nodetool getstreamthroughput` for a cap of `bytes_per_second`
/// (0: none), as Cassandra 5.0.6 prints it: whole megabits only when the
/// cap is a whole number of them (else its error), `-d` and `-m` as Java
/// prints a double.
pub(crate) fn stream_throughput_line(bytes_per_second: u64, unit: ThroughputUnit) -> Response {
    let line = |value: String| Response::Text(format!("Current stream throughput: {value}\n"));
    if bytes_per_second == 0 {
        return line("unlimited".into());
    }
    let megabits = bytes_per_second as f64 / MEGABIT_BYTES;
    match unit {
        ThroughputUnit::Megabits if megabits.fract() != 0.0 => {
            failed("Use the -d flag to quiet this error and get the exact throughput in megabits/s")
        }
        ThroughputUnit::Megabits => line(format!("{megabits} Mb/s")),
        ThroughputUnit::PreciseMegabits => line(format!("{} Mb/s", java_double(megabits))),
        ThroughputUnit::Mebibytes => line(format!(
            "{} MiB/s",
            java_double(bytes_per_second as f64 / (1u64 << 20) as f64)
        )),
    }
}

/// `nodetool setstreamthroughput VALUE [-m]` in bytes per second.
pub(crate) fn throughput_bytes(value: u32, unit: ThroughputUnit) -> u64 {
    match unit {
        ThroughputUnit::Mebibytes => u64::from(value) << 20,
        ThroughputUnit::Megabits | ThroughputUnit::PreciseMegabits => {
            u64::from(value) * MEGABIT_BYTES as u64
        }
    }
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
    for pool in stages.pools() {
        rows.push([
            pool.name.to_string(),
            pool.active.to_string(),
            pool.pending.to_string(),
            pool.completed.to_string(),
            "0".into(),
            "0".into(),
        ]);
    }
    Response::Text(super::snapshots::aligned(&rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_throughput_in_cassandras_units() {
        let line = |bytes, unit| match stream_throughput_line(bytes, unit) {
            Response::Text(t) => t,
            Response::Error(e) => format!("error: {e}"),
            other => format!("{other:?}"),
        };
        let default = 24 << 20;
        assert_eq!(
            line(default, ThroughputUnit::Megabits),
            "error: Use the -d flag to quiet this error and get the exact throughput in megabits/s"
        );
        assert_eq!(
            line(default, ThroughputUnit::PreciseMegabits),
            "Current stream throughput: 201.326592 Mb/s\n"
        );
        assert_eq!(
            line(default, ThroughputUnit::Mebibytes),
            "Current stream throughput: 24.0 MiB/s\n"
        );
        assert_eq!(
            line(25_000_000, ThroughputUnit::Megabits),
            "Current stream throughput: 200 Mb/s\n"
        );
        assert_eq!(
            line(0, ThroughputUnit::Megabits),
            "Current stream throughput: unlimited\n"
        );
        assert_eq!(
            line(0, ThroughputUnit::Mebibytes),
            "Current stream throughput: unlimited\n"
        );
        assert_eq!(throughput_bytes(200, ThroughputUnit::Megabits), 25_000_000);
        assert_eq!(throughput_bytes(24, ThroughputUnit::Mebibytes), default);
    }
}
