//! `tombstone_warn_threshold` and `tombstone_failure_threshold`: a read
//! that meets more tombstones than the first gets Cassandra's client
//! warning (and a log line); more than the second fails with READ_FAILURE
//! (`READ_TOO_MANY_TOMBSTONES`) and is logged, as Cassandra's
//! TombstoneOverwhelmingException is. The one home of the thresholds'
//! decision (`TombstoneThresholds::verdict`) and of their texts, for the
//! statements here and for the cluster's replicas.
//!
//! Counted as Cassandra's `ReadCommand` counts (the storage engine's
//! `read_partition_counted`, `read_raw_counted`, `scan_counted`;
//! `cell::RowTombstones`): cells deleted or expired, rows deleted on their
//! own, two markers per range tombstone; a read stops as soon as it passes
//! the failure threshold instead of reading on. Single-partition reads,
//! range scans, index reads and, in a cluster, the raw reads a coordinator
//! reconciles replicas with are counted. In a cluster each replica counts what it
//! reads for a coordinator, logs past the warn threshold and refuses the
//! read past the failure threshold (`rocksandra_cluster::replica`); only
//! the coordinator's own replica read reaches the statement's check (the
//! client's warning), as in Cassandra with its default
//! `read_thresholds_enabled: false`.

use std::fmt::Display;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use rocksandra_cql::ast::Select;
use rocksandra_wire::Consistency;

pub use crate::error::READ_TOO_MANY_TOMBSTONES;
use crate::error::{QueryError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TombstoneThresholds {
    pub warn: u64,
    pub failure: u64,
}

impl Default for TombstoneThresholds {
    /// Cassandra's defaults.
    fn default() -> Self {
        TombstoneThresholds {
            warn: 1000,
            failure: 100_000,
        }
    }
}

/// What a read that met some tombstones calls for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TombstoneVerdict {
    Within,
    /// Past the warn threshold: a log line and the client's warning.
    Warn,
    /// Past the failure threshold: the read is refused.
    Fail,
}

impl TombstoneThresholds {
    /// The thresholds' decision for a read that met `tombstones`.
    pub fn verdict(&self, tombstones: u64) -> TombstoneVerdict {
        if tombstones > self.failure {
            TombstoneVerdict::Fail
        } else if tombstones > self.warn {
            TombstoneVerdict::Warn
        } else {
            TombstoneVerdict::Within
        }
    }
}

/// Cassandra's warning (logged, and sent to the client) for a read of
/// `query` that returned `live` rows and met `tombstones`.
pub fn warning_text(live: usize, tombstones: u64, query: &dyn Display) -> String {
    format!(
        "Read {live} live rows and {tombstones} tombstone cells for query {query} \
         (see tombstone_warn_threshold)"
    )
}

/// Cassandra's log line (TombstoneOverwhelmingException) for a read of
/// `query` aborted past the `failure` threshold.
pub fn failure_text(failure: u64, query: &dyn Display) -> String {
    format!("Scanned over {failure} tombstones during query '{query}'; query aborted")
}

/// READ_FAILURE for a read that `node` refused past its failure
/// threshold, after `received` of the `block_for` answers it needs.
pub fn too_many_tombstones(
    consistency: Consistency,
    received: usize,
    block_for: usize,
    node: IpAddr,
) -> QueryError {
    QueryError::read_failure(
        consistency,
        (received, block_for),
        vec![(node, READ_TOO_MANY_TOMBSTONES)],
    )
}

/// The thresholds in force, changed at run time by the node's
/// configuration (atomics: every read takes them, no lock on the read
/// path). Shared by the executor and the cluster's replica.
#[derive(Debug)]
pub struct TombstoneSettings {
    warn: AtomicU64,
    failure: AtomicU64,
}

impl Default for TombstoneSettings {
    fn default() -> Self {
        let defaults = TombstoneThresholds::default();
        TombstoneSettings {
            warn: AtomicU64::new(defaults.warn),
            failure: AtomicU64::new(defaults.failure),
        }
    }
}

impl TombstoneSettings {
    pub fn set(&self, thresholds: TombstoneThresholds) {
        self.warn.store(thresholds.warn, Ordering::Relaxed);
        self.failure.store(thresholds.failure, Ordering::Relaxed);
    }

    pub fn get(&self) -> TombstoneThresholds {
        TombstoneThresholds {
            warn: self.warn.load(Ordering::Relaxed),
            failure: self.failure.load(Ordering::Relaxed),
        }
    }

    /// Cassandra's warning when a read met more than the warn threshold of
    /// `tombstones`; READ_FAILURE from this node (`node`, asked only
    /// then) above the failure threshold.
    pub(crate) fn check(
        &self,
        tombstones: u64,
        live: usize,
        select: &Select,
        consistency: Consistency,
        node: impl FnOnce() -> IpAddr,
    ) -> Result<Option<String>> {
        let thresholds = self.get();
        match thresholds.verdict(tombstones) {
            TombstoneVerdict::Within => Ok(None),
            TombstoneVerdict::Fail => {
                tracing::error!("{}", failure_text(thresholds.failure, select));
                Err(too_many_tombstones(consistency, 0, 1, node()))
            }
            TombstoneVerdict::Warn => {
                let warning = warning_text(live, tombstones, select);
                tracing::warn!("{warning}");
                Ok(Some(warning))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOW: TombstoneThresholds = TombstoneThresholds {
        warn: 10,
        failure: 50,
    };

    #[test]
    fn the_verdict_is_strictly_past_each_threshold() {
        assert_eq!(LOW.verdict(0), TombstoneVerdict::Within);
        assert_eq!(LOW.verdict(10), TombstoneVerdict::Within);
        assert_eq!(LOW.verdict(11), TombstoneVerdict::Warn);
        assert_eq!(LOW.verdict(50), TombstoneVerdict::Warn);
        assert_eq!(LOW.verdict(51), TombstoneVerdict::Fail);
        // A failure threshold below the warn one still fails.
        let odd = TombstoneThresholds {
            warn: 100,
            failure: 5,
        };
        assert_eq!(odd.verdict(6), TombstoneVerdict::Fail);
    }

    #[test]
    fn texts_are_cassandras() {
        assert_eq!(
            warning_text(40, 20, &"SELECT c FROM tq.queue WHERE k = 1"),
            "Read 40 live rows and 20 tombstone cells for query \
             SELECT c FROM tq.queue WHERE k = 1 (see tombstone_warn_threshold)"
        );
        assert_eq!(
            failure_text(50, &"SELECT c FROM tq.queue"),
            "Scanned over 50 tombstones during query 'SELECT c FROM tq.queue'; query aborted"
        );
    }

    #[test]
    fn too_many_tombstones_is_a_read_failure_with_its_reason() {
        let node: IpAddr = "127.0.0.12".parse().unwrap();
        match too_many_tombstones(Consistency::Quorum, 1, 2, node) {
            QueryError::ReadFailure {
                consistency,
                received,
                block_for,
                reasons,
                message,
            } => {
                assert_eq!(
                    (consistency, received, block_for),
                    (Consistency::Quorum, 1, 2)
                );
                assert_eq!(reasons, vec![(node, READ_TOO_MANY_TOMBSTONES)]);
                assert_eq!(
                    message,
                    "Operation failed - received 1 responses and 1 failures: \
                     READ_TOO_MANY_TOMBSTONES from /127.0.0.12"
                );
            }
            other => panic!("not a read failure: {other:?}"),
        }
    }

    #[test]
    fn settings_hold_what_was_set() {
        let settings = TombstoneSettings::default();
        assert_eq!(settings.get(), TombstoneThresholds::default());
        settings.set(LOW);
        assert_eq!(settings.get(), LOW);
    }
}
