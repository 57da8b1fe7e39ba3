//! What this node measures about the requests it coordinates, by
//! Cassandra's names: client request latency per scope (Read, Write,
//! CASRead, CASWrite, RangeSlice) and consistency level, with timeouts,
//! unavailables and failures per scope (`ClientRequestMetrics`); and per
//! table, read, write and range latency and the tombstones reads met
//! (`TableMetrics`, held by the table's schema entry).
//!
//! `metered::MeteredProxy` records them around every `DataProxy` call.
//! Recording is a few relaxed atomic adds: no lock, no allocation, and no
//! lookup by name; a table's handle comes with the `Table` the statement
//! already holds, the consistency level indexes a fixed array. The server
//! reads the counters when a scrape arrives. This module names no other
//! of the crate but `error`, so the schema can hold a table's handle.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rocksandra_wire::Consistency;

use crate::error::{QueryError, Result};

/// Upper bounds (inclusive, as Prometheus' `le`) of the latency histogram
/// buckets, in nanoseconds: 1-2.5-5 steps from 25 µs to 10 s. Slower
/// observations land in the `+Inf` bucket only.
pub const LATENCY_BUCKET_BOUNDS_NANOS: [u64; 18] = [
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];
/// Buckets of a histogram: one per bound, and one for slower observations.
pub const BUCKETS: usize = LATENCY_BUCKET_BOUNDS_NANOS.len() + 1;

/// A latency histogram over `LATENCY_BUCKET_BOUNDS_NANOS`, recorded
/// without locks.
#[derive(Debug, Default)]
pub struct Histogram {
    /// Observations per bucket (not cumulative); the last is above every bound.
    buckets: [AtomicU64; BUCKETS],
    sum_nanos: AtomicU64,
}

impl Histogram {
    pub fn record(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        // The first bound at or above `nanos`; past the last bound, the overflow bucket.
        let index = LATENCY_BUCKET_BOUNDS_NANOS.partition_point(|bound| *bound < nanos);
        if let Some(bucket) = self.buckets.get(index) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            sum_nanos: self.sum_nanos.load(Ordering::Relaxed),
        }
    }
}

/// A histogram's counts at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Observations per bucket (not cumulative); the last is above every bound.
    pub buckets: [u64; BUCKETS],
    pub sum_nanos: u64,
}

impl HistogramSnapshot {
    /// Every observation: the `+Inf` bucket and `_count`.
    pub fn count(&self) -> u64 {
        self.buckets.iter().fold(0, |sum, n| sum.saturating_add(*n))
    }

    /// Mean latency in milliseconds, None without observations
    /// (`nodetool tablestats` prints NaN then, as Cassandra does).
    pub fn mean_millis(&self) -> Option<f64> {
        let count = self.count();
        (count > 0).then(|| self.sum_nanos as f64 / count as f64 / 1e6)
    }
}

/// Cassandra's client request scopes (`ClientRequest` metrics' `scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Read,
    Write,
    CasRead,
    CasWrite,
    RangeSlice,
}

impl Scope {
    pub const ALL: [Scope; 5] = [
        Scope::Read,
        Scope::Write,
        Scope::CasRead,
        Scope::CasWrite,
        Scope::RangeSlice,
    ];

    /// The scope as Cassandra names it.
    pub fn label(self) -> &'static str {
        match self {
            Scope::Read => "Read",
            Scope::Write => "Write",
            Scope::CasRead => "CASRead",
            Scope::CasWrite => "CASWrite",
            Scope::RangeSlice => "RangeSlice",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// A read at SERIAL or LOCAL_SERIAL runs Paxos: Cassandra's CASRead.
    pub(crate) fn of_read(consistency: Consistency) -> Scope {
        match consistency {
            Consistency::Serial | Consistency::LocalSerial => Scope::CasRead,
            _ => Scope::Read,
        }
    }
}

/// Consistency levels, indexed by their protocol code (0 to 10).
pub const CONSISTENCY_LEVELS: usize = Consistency::ALL.len();

fn consistency_index(consistency: Consistency) -> usize {
    usize::from(consistency.code()).min(CONSISTENCY_LEVELS - 1)
}

/// How a coordinated request failed, as Cassandra's client request
/// metrics count it; other errors (invalid requests, overload) are not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    Timeout,
    Unavailable,
    Failure,
}

impl Fault {
    pub fn of(error: &QueryError) -> Option<Fault> {
        match error {
            QueryError::ReadTimeout { .. } | QueryError::WriteTimeout { .. } => {
                Some(Fault::Timeout)
            }
            QueryError::Unavailable { .. } => Some(Fault::Unavailable),
            QueryError::ReadFailure { .. }
            | QueryError::ReadAborted(_)
            | QueryError::WriteFailure { .. } => Some(Fault::Failure),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
struct FailureCounts {
    timeouts: AtomicU64,
    unavailables: AtomicU64,
    failures: AtomicU64,
}

/// Cassandra's `ClientRequest` metrics of this coordinator.
#[derive(Debug, Default)]
pub struct ClientRequestMetrics {
    /// Latency of every request, failed or not, by scope and consistency level.
    latency: [[Histogram; CONSISTENCY_LEVELS]; Scope::ALL.len()],
    failures: [FailureCounts; Scope::ALL.len()],
}

impl ClientRequestMetrics {
    pub fn record<T>(
        &self,
        scope: Scope,
        consistency: Consistency,
        elapsed: Duration,
        result: &Result<T>,
    ) {
        if let Some(by_level) = self.latency.get(scope.index()) {
            if let Some(histogram) = by_level.get(consistency_index(consistency)) {
                histogram.record(elapsed);
            }
        }
        let Err(error) = result else {
            return;
        };
        let (Some(failure), Some(counts)) = (Fault::of(error), self.failures.get(scope.index()))
        else {
            return;
        };
        let counter = match failure {
            Fault::Timeout => &counts.timeouts,
            Fault::Unavailable => &counts.unavailables,
            Fault::Failure => &counts.failures,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Vec<ScopeSnapshot> {
        Scope::ALL
            .iter()
            .map(|scope| {
                let counts = &self.failures[scope.index()];
                let latency = &self.latency[scope.index()];
                ScopeSnapshot {
                    scope: *scope,
                    latency: Consistency::ALL
                        .iter()
                        .map(|c| (*c, latency[consistency_index(*c)].snapshot()))
                        .collect(),
                    timeouts: counts.timeouts.load(Ordering::Relaxed),
                    unavailables: counts.unavailables.load(Ordering::Relaxed),
                    failures: counts.failures.load(Ordering::Relaxed),
                }
            })
            .collect()
    }
}

/// One scope's client request metrics at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct ScopeSnapshot {
    pub scope: Scope,
    /// Every consistency level, used or not.
    pub latency: Vec<(Consistency, HistogramSnapshot)>,
    pub timeouts: u64,
    pub unavailables: u64,
    pub failures: u64,
}

/// Cassandra's per-table metrics this node records as a coordinator (on a
/// node alone, every replica read and write is its own).
#[derive(Debug, Default)]
pub struct TableMetrics {
    pub read: Histogram,
    pub write: Histogram,
    pub range: Histogram,
    /// Deleted or expired rows reads of the table met.
    pub tombstones_scanned: AtomicU64,
}

/// A table's metrics, held by its schema entry (`Table::metrics`): ALTER
/// keeps the handle, a schema from a peer takes over the previous one's
/// (`Schema::keep_metrics_of`), DROP forgets it with the table. It is not
/// part of the table's definition: two handles always compare equal.
#[derive(Clone, Default)]
pub struct TableMetricsHandle(Arc<TableMetrics>);

impl TableMetricsHandle {
    pub fn same_as(&self, other: &TableMetricsHandle) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for TableMetricsHandle {
    type Target = TableMetrics;
    fn deref(&self) -> &TableMetrics {
        &self.0
    }
}

impl PartialEq for TableMetricsHandle {
    fn eq(&self, _other: &TableMetricsHandle) -> bool {
        true
    }
}

impl std::fmt::Debug for TableMetricsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TableMetricsHandle")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_inclusive_upper_bounds() {
        let histogram = Histogram::default();
        histogram.record(Duration::from_micros(25));
        histogram.record(Duration::from_nanos(25_001));
        histogram.record(Duration::ZERO);
        histogram.record(Duration::from_secs(10));
        histogram.record(Duration::from_secs(11));
        histogram.record(Duration::MAX);
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.buckets[0], 2, "0 and 25 µs are <= 25 µs");
        assert_eq!(snapshot.buckets[1], 1, "25.001 µs is <= 50 µs");
        assert_eq!(snapshot.buckets[BUCKETS - 2], 1, "10 s is <= 10 s");
        assert_eq!(snapshot.buckets[BUCKETS - 1], 2, "above 10 s: +Inf only");
        assert_eq!(snapshot.count(), 6);
    }

    #[test]
    fn every_consistency_level_has_its_own_slot() {
        let mut seen: Vec<usize> = Consistency::ALL
            .iter()
            .map(|c| consistency_index(*c))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), CONSISTENCY_LEVELS);
        assert!(seen.iter().all(|i| *i < CONSISTENCY_LEVELS));
    }

    #[test]
    fn requests_are_counted_by_scope_level_and_failure() {
        let metrics = ClientRequestMetrics::default();
        let ms = Duration::from_millis(1);
        metrics.record(Scope::Read, Consistency::One, ms, &Ok(()));
        metrics.record(Scope::Read, Consistency::One, ms, &Ok(()));
        let unavailable: Result<()> = Err(QueryError::Unavailable {
            consistency: Consistency::Quorum,
            required: 2,
            alive: 1,
        });
        metrics.record(Scope::Write, Consistency::Quorum, ms, &unavailable);
        let timeout: Result<()> = Err(QueryError::WriteTimeout {
            consistency: Consistency::All,
            received: 0,
            block_for: 1,
            write_type: rocksandra_wire::WriteType::Simple,
        });
        metrics.record(Scope::Write, Consistency::All, ms, &timeout);
        let invalid: Result<()> = Err(QueryError::invalid("no"));
        metrics.record(Scope::RangeSlice, Consistency::One, ms, &invalid);
        assert_eq!(Scope::of_read(Consistency::LocalSerial), Scope::CasRead);

        let snapshot = metrics.snapshot();
        let of = |scope: Scope| snapshot.iter().find(|s| s.scope == scope).expect("scope");
        let count = |scope: Scope, level: Consistency| {
            of(scope)
                .latency
                .iter()
                .find(|(c, _)| *c == level)
                .map(|(_, h)| h.count())
        };
        assert_eq!(count(Scope::Read, Consistency::One), Some(2));
        assert_eq!(count(Scope::Read, Consistency::Quorum), Some(0));
        assert_eq!(count(Scope::Write, Consistency::Quorum), Some(1));
        assert_eq!(count(Scope::Write, Consistency::All), Some(1));
        assert_eq!(count(Scope::RangeSlice, Consistency::One), Some(1));
        assert_eq!(
            (of(Scope::Write).unavailables, of(Scope::Write).timeouts),
            (1, 1)
        );
        assert_eq!(of(Scope::Write).failures, 0);
        assert_eq!(
            (
                of(Scope::RangeSlice).timeouts,
                of(Scope::RangeSlice).failures
            ),
            (0, 0),
            "an invalid request is not a coordinator failure"
        );
        assert_eq!(of(Scope::Read).latency.len(), CONSISTENCY_LEVELS);
    }

    #[test]
    fn handles_compare_equal_and_know_their_identity() {
        let a = TableMetricsHandle::default();
        let b = TableMetricsHandle::default();
        assert_eq!(a, b, "not part of a table's definition");
        assert!(!a.same_as(&b));
        assert!(a.same_as(&a.clone()));
        a.read.record(Duration::from_micros(30));
        assert_eq!(a.clone().read.snapshot().count(), 1);
        assert_eq!(format!("{a:?}"), "TableMetricsHandle");
    }
}
