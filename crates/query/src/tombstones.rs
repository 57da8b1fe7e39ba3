//! `tombstone_warn_threshold` and `tombstone_failure_threshold`: a read
//! that meets more deleted or expired rows than the first gets Cassandra's
//! client warning (and a log line); more than the second fails with
//! READ_FAILURE (`READ_TOO_MANY_TOMBSTONES`) and is logged, as Cassandra's
//! TombstoneOverwhelmingException is.
//!
//! Counted: the rows single-partition reads and range scans meet on a
//! node, deleted or expired (row tombstones, and rows whose every cell is
//! gone); in a cluster, the single-partition reads the coordinator answers
//! from its own storage (it is the replica the consistency level needs, as
//! with a token-aware driver at ONE or LOCAL_ONE). Not counted yet: dead
//! cells inside live rows, reads through a secondary index, range scans in
//! a cluster, and reads answered by other nodes.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use rocksandra_cql::ast::Select;
use rocksandra_wire::Consistency;

use crate::error::{QueryError, Result};

/// READ_FAILURE's reason code for too many tombstones.
pub const READ_TOO_MANY_TOMBSTONES: u16 = 1;

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

/// The thresholds in force, changed at run time by the node's
/// configuration (atomics: every SELECT reads them, no lock on the read
/// path).
#[derive(Debug)]
pub(crate) struct TombstoneSettings {
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
    pub(crate) fn set(&self, thresholds: TombstoneThresholds) {
        self.warn.store(thresholds.warn, Ordering::Relaxed);
        self.failure.store(thresholds.failure, Ordering::Relaxed);
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
        if tombstones <= self.warn.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let failure = self.failure.load(Ordering::Relaxed);
        if tombstones > failure {
            let node = node();
            tracing::error!(
                "Scanned over {failure} tombstones during query '{select}'; query aborted"
            );
            return Err(QueryError::ReadFailure {
                consistency,
                received: 0,
                block_for: 1,
                reasons: vec![(node, READ_TOO_MANY_TOMBSTONES)],
                message: format!(
                    "Operation failed - received 0 responses and 1 failures: \
                     READ_TOO_MANY_TOMBSTONES from /{node}"
                ),
            });
        }
        let warning = format!(
            "Read {live} live rows and {tombstones} tombstone cells for query {select} \
             (see tombstone_warn_threshold)"
        );
        tracing::warn!("{warning}");
        Ok(Some(warning))
    }
}
