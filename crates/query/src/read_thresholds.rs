//! `read_thresholds_enabled` and the read size thresholds, as Cassandra 5.0
//! has them: with the flag on, every replica a read asks reports what it
//! met (tombstones, and the bytes it loaded when `local_read_size_*` is
//! set) and the coordinator adds the reports of one statement up
//! (Cassandra's `WarningsSnapshot`, `CoordinatorWarnings`): one client
//! warning per threshold naming how many nodes passed it and the most any
//! of them met, and READ_FAILURE when a replica refused the read. The
//! statement's own result is held to `coordinator_read_size_*` (the bytes
//! of the values it returns). The one home of these decisions and texts.
//!
//! With the flag off (Cassandra's default) nothing here runs: a read is
//! judged by `tombstones.rs` alone, and no size is measured.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use rocksandra_storage::cell::LiveRow;
use rocksandra_storage::Partition;
use rocksandra_wire::Consistency;

pub use crate::error::READ_SIZE;
use crate::error::{PendingReadFailure, QueryError, READ_TOO_MANY_TOMBSTONES};
use crate::tombstones::TombstoneThresholds;

/// A warn and a fail threshold in bytes; None: not set (Cassandra's
/// default for every one of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeThresholds {
    pub warn: Option<u64>,
    pub fail: Option<u64>,
}

impl SizeThresholds {
    fn is_set(&self) -> bool {
        self.warn.is_some() || self.fail.is_some()
    }
}

/// `read_thresholds_enabled` and the size thresholds it turns on.
/// `row_index_read_size_*` is read and kept, but nothing measures it:
/// RocksDB keeps no row index per partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadThresholds {
    pub enabled: bool,
    pub coordinator_read_size: SizeThresholds,
    pub local_read_size: SizeThresholds,
    pub row_index_read_size: SizeThresholds,
}

impl ReadThresholds {
    /// The local read size thresholds when a replica is to measure what it
    /// reads; None (nothing measured) otherwise.
    pub fn local_size(&self) -> Option<SizeThresholds> {
        (self.enabled && self.local_read_size.is_set()).then_some(self.local_read_size)
    }

    /// The coordinator read size thresholds when a statement is to measure
    /// its result; None otherwise.
    pub fn coordinator_size(&self) -> Option<SizeThresholds> {
        (self.enabled && self.coordinator_read_size.is_set()).then_some(self.coordinator_read_size)
    }
}

/// Cassandra's startup check of each pair
/// (`DatabaseDescriptor.applyReadThresholdsValidations`); `written` gives
/// a threshold as the yaml wrote it.
pub fn validate(
    name: &str,
    pair: SizeThresholds,
    written: impl Fn(u64) -> String,
) -> Result<(), String> {
    match (pair.warn, pair.fail) {
        (Some(warn), Some(fail)) if fail < warn => Err(format!(
            "{name}_fail_threshold ({}) must be greater than or equal to {name}_warn_threshold ({})",
            written(fail),
            written(warn)
        )),
        _ => Ok(()),
    }
}

/// The thresholds in force; read once per statement or replica read. The
/// flag is an atomic, so a read with it off takes no lock.
#[derive(Debug, Default)]
pub struct ReadThresholdSettings {
    enabled: AtomicBool,
    thresholds: RwLock<ReadThresholds>,
}

impl ReadThresholdSettings {
    pub fn set(&self, thresholds: ReadThresholds) {
        *self.thresholds.write().unwrap_or_else(|p| p.into_inner()) = thresholds;
        self.enabled.store(thresholds.enabled, Ordering::Relaxed);
    }

    pub fn get(&self) -> ReadThresholds {
        *self.thresholds.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The thresholds when `read_thresholds_enabled`; None otherwise.
    pub fn enabled(&self) -> Option<ReadThresholds> {
        if !self.enabled.load(Ordering::Relaxed) {
            return None;
        }
        Some(self.get()).filter(|t| t.enabled)
    }
}

/// The nodes that passed one threshold and the most any of them reported
/// (Cassandra's `ThresholdCounter`). Allocates only when a node passes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeCounter {
    nodes: Vec<IpAddr>,
    max: u64,
}

impl NodeCounter {
    pub fn add(&mut self, node: IpAddr, value: u64) {
        self.max = self.max.max(value);
        if !self.nodes.contains(&node) {
            self.nodes.push(node);
        }
    }

    pub fn merge(&mut self, other: &NodeCounter) {
        for node in &other.nodes {
            self.add(*node, other.max);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn nodes(&self) -> &[IpAddr] {
        &self.nodes
    }

    pub fn max(&self) -> u64 {
        self.max
    }
}

/// What the replicas of one statement's reads reported
/// (Cassandra's `WarningsSnapshot`): empty unless a threshold was passed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadReports {
    pub tombstone_warnings: NodeCounter,
    pub tombstone_aborts: NodeCounter,
    pub size_warnings: NodeCounter,
    pub size_aborts: NodeCounter,
}

/// What one replica's read met, as it reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicaMet {
    pub tombstones: u64,
    /// The bytes it loaded; 0 when it measured none.
    pub bytes: u64,
}

impl ReadReports {
    pub fn is_empty(&self) -> bool {
        self.tombstone_warnings.is_empty()
            && self.tombstone_aborts.is_empty()
            && self.size_warnings.is_empty()
            && self.size_aborts.is_empty()
    }

    pub fn merge(&mut self, other: &ReadReports) {
        if other.is_empty() {
            return;
        }
        self.tombstone_warnings.merge(&other.tombstone_warnings);
        self.tombstone_aborts.merge(&other.tombstone_aborts);
        self.size_warnings.merge(&other.size_warnings);
        self.size_aborts.merge(&other.size_aborts);
    }

    /// A replica's answer: past the warn thresholds, a warning of `node`
    /// (the size one from `local_size` warn, reached or passed, as
    /// Cassandra's).
    pub fn answered(
        &mut self,
        node: IpAddr,
        met: ReplicaMet,
        tombstones: TombstoneThresholds,
        local_size: SizeThresholds,
    ) {
        if met.tombstones > tombstones.warn {
            self.tombstone_warnings.add(node, met.tombstones);
        }
        if local_size.warn.is_some_and(|warn| met.bytes >= warn) {
            self.size_warnings.add(node, met.bytes);
        }
    }

    /// This node's own read, judged here (`local` holds when sizes are
    /// measured): its refusal past a failure threshold (the tombstone one
    /// first), else its report. True when refused.
    pub fn own_read(
        &mut self,
        node: IpAddr,
        met: ReplicaMet,
        tombstones: TombstoneThresholds,
        local: SizeThresholds,
    ) -> bool {
        let refusal = if met.tombstones > tombstones.failure {
            Some(Refusal::Tombstones(met.tombstones))
        } else {
            local
                .fail
                .filter(|fail| met.bytes >= *fail)
                .map(|_| Refusal::Size(met.bytes))
        };
        match refusal {
            Some(refusal) => self.refused(node, refusal),
            None => self.answered(node, met, tombstones, local),
        }
        refusal.is_some()
    }

    /// Whether a replica refused the read.
    pub fn is_refused(&self) -> bool {
        !self.tombstone_aborts.is_empty() || !self.size_aborts.is_empty()
    }

    /// A replica's refusal past its failure threshold.
    pub fn refused(&mut self, node: IpAddr, refusal: Refusal) {
        match refusal {
            Refusal::Tombstones(count) => self.tombstone_aborts.add(node, count),
            Refusal::Size(bytes) => self.size_aborts.add(node, bytes),
        }
    }

    /// The client's warnings for a statement whose reads are `cql` at
    /// `tokens` (Cassandra's `CoordinatorWarnings.done`, in its order).
    pub fn warnings(&self, cql: &str, tokens: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut push = |counter: &NodeCounter, text: fn(usize, u64, &str) -> String| {
            if !counter.is_empty() {
                let message = text(counter.nodes.len(), counter.max, cql);
                tracing::warn!("{message}");
                out.push(format!("{message} with {tokens}"));
            }
        };
        push(&self.tombstone_aborts, tombstone_abort_text);
        push(&self.tombstone_warnings, tombstone_warn_text);
        push(&self.size_aborts, local_size_abort_text);
        push(&self.size_warnings, local_size_warn_text);
        out
    }

    /// READ_FAILURE when a replica refused (Cassandra's
    /// `WarningsSnapshot.maybeAbort`: tombstones first, then size), to be
    /// named with the statement's text (`named`).
    pub fn abort(&self, counts: FailureCounts) -> Option<QueryError> {
        let (counter, text, reason): (_, fn(usize, u64, &str) -> String, _) =
            if !self.tombstone_aborts.is_empty() {
                (
                    &self.tombstone_aborts,
                    tombstone_abort_text,
                    READ_TOO_MANY_TOMBSTONES,
                )
            } else if !self.size_aborts.is_empty() {
                (&self.size_aborts, local_size_abort_text, READ_SIZE)
            } else {
                return None;
            };
        // The text around the query, which only the statement knows.
        let text = text(counter.nodes.len(), counter.max, QUERY_MARK);
        tracing::warn!("{}", text.replace(QUERY_MARK, "a read"));
        let reasons: Vec<(IpAddr, u16)> = counter.nodes.iter().map(|n| (*n, reason)).collect();
        let QueryError::ReadFailure { message, .. } = read_failure(text, counts, reasons.clone())
        else {
            return None;
        };
        let (before, after) = message.split_once(QUERY_MARK)?;
        Some(QueryError::ReadAborted(Box::new(PendingReadFailure {
            consistency: counts.consistency,
            received: counts.received,
            block_for: counts.block_for,
            reasons,
            before: before.to_string(),
            after: after.to_string(),
        })))
    }
}

/// Where the query's text goes in a pending READ_FAILURE's message.
const QUERY_MARK: &str = "\u{0}";

/// `error` with a pending READ_FAILURE named for the query `cql`.
pub fn named(error: QueryError, cql: &str) -> QueryError {
    match error {
        QueryError::ReadAborted(pending) => pending.named(cql),
        other => other,
    }
}

/// READ_FAILURE with Cassandra's message for a `ReadFailureException`
/// built with its own text: `Operation failed - TEXT: REASON from /NODE`.
pub fn read_failure(
    text: String,
    counts: FailureCounts,
    reasons: Vec<(IpAddr, u16)>,
) -> QueryError {
    QueryError::ReadFailure {
        consistency: counts.consistency,
        received: counts.received,
        block_for: counts.block_for,
        message: format!(
            "Operation failed - {text}: {}",
            crate::error::failure_reasons(&reasons)
        ),
        reasons,
    }
}

/// What one read of a statement met, as the data proxy returns it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadMet {
    /// The tombstones this node's own replica read met (what
    /// `tombstones.rs` judges with `read_thresholds_enabled: false`).
    pub tombstones: u64,
    /// With `read_thresholds_enabled`, what the replicas asked reported
    /// (in a cluster; a node alone reports through the statement).
    pub reports: ReadReports,
}

impl From<u64> for ReadMet {
    fn from(tombstones: u64) -> Self {
        ReadMet {
            tombstones,
            reports: ReadReports::default(),
        }
    }
}

/// Why a replica refused a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Tombstones(u64),
    Size(u64),
}

/// READ_FAILURE's counts: the level, the answers received and needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailureCounts {
    pub consistency: Consistency,
    pub received: usize,
    pub block_for: usize,
}

pub fn tombstone_warn_text(nodes: usize, tombstones: u64, cql: &str) -> String {
    format!(
        "{nodes} nodes scanned up to {tombstones} tombstones and issued tombstone warnings \
         for query {cql} (see tombstone_warn_threshold)"
    )
}

pub fn tombstone_abort_text(nodes: usize, tombstones: u64, cql: &str) -> String {
    format!(
        "{nodes} nodes scanned over {tombstones} tombstones and aborted the query {cql} \
         (see tombstone_failure_threshold)"
    )
}

pub fn local_size_warn_text(nodes: usize, bytes: u64, cql: &str) -> String {
    format!(
        "{nodes} nodes loaded over {bytes} bytes and issued local read size warnings for \
         query {cql} (see local_read_size_warn_threshold)"
    )
}

pub fn local_size_abort_text(nodes: usize, bytes: u64, cql: &str) -> String {
    format!(
        "{nodes} nodes loaded over {bytes} bytes and aborted the query {cql} \
         (see local_read_size_fail_threshold)"
    )
}

/// A replica's log line when it refuses a read past
/// `local_read_size_fail_threshold` (Cassandra's, two spaces included).
pub fn local_size_refusal_text(query: &dyn std::fmt::Display, bytes: u64, fail: &str) -> String {
    format!(
        "Query {query} attempted to read {bytes} bytes but max allowed is {fail}; \
         query aborted  (see local_read_size_fail_threshold)"
    )
}

/// What a replica's read of `partition` loaded, in bytes: its key, and
/// each row's clustering and cell values (Cassandra measures the rows'
/// heap size, which Rust has no equal of). Counting only.
pub fn partition_bytes(partition: &Partition) -> u64 {
    let cells = |row: &LiveRow| -> usize {
        row.cells
            .iter()
            .map(|c| c.value.len() + c.path.as_ref().map_or(0, Vec::len))
            .sum()
    };
    let statics = partition.static_row.as_ref().map_or(0, cells);
    let rows: usize = partition
        .rows
        .iter()
        .map(|row| row.clustering.iter().map(Vec::len).sum::<usize>() + cells(&row.content))
        .sum();
    (partition.key.key.len() + statics + rows) as u64
}

/// `coordinator_read_size_*` over one statement's result, counted row by
/// row as Cassandra's `ResultSetBuilder` counts (the bytes of the values
/// returned): a row that starts after the total passed the fail threshold
/// fails the read, and a total past the warn threshold warns once built.
#[derive(Clone, Copy, Debug)]
pub struct ResultSize {
    thresholds: SizeThresholds,
    bytes: u64,
}

impl ResultSize {
    pub fn new(thresholds: SizeThresholds) -> Self {
        ResultSize {
            thresholds,
            bytes: 0,
        }
    }

    /// Before a row is added: Err(threshold) once the rows so far passed
    /// the fail threshold.
    pub fn before_row(&self) -> Result<(), u64> {
        match self.thresholds.fail {
            Some(fail) if self.bytes > fail => Err(fail),
            _ => Ok(()),
        }
    }

    pub fn add(&mut self, bytes: u64) {
        self.bytes += bytes;
    }

    /// The warn threshold passed by the whole result, if it was.
    pub fn past_warn(&self) -> Option<u64> {
        self.thresholds.warn.filter(|warn| self.bytes > *warn)
    }
}

/// Cassandra's number format for the size texts (`%,d`).
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

pub fn result_size_warn_text(table: &str, warn: u64) -> String {
    format!(
        "Read on table {table} has exceeded the size warning threshold of {} bytes",
        grouped(warn)
    )
}

pub fn result_size_fail_text(table: &str, fail: u64) -> String {
    format!(
        "Read on table {table} has exceeded the size failure threshold of {} bytes",
        grouped(fail)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    const TOMBSTONES: TombstoneThresholds = TombstoneThresholds {
        warn: 3,
        failure: 10,
    };
    const LOCAL: SizeThresholds = SizeThresholds {
        warn: Some(4096),
        fail: Some(16384),
    };

    fn met(tombstones: u64, bytes: u64) -> ReplicaMet {
        ReplicaMet { tombstones, bytes }
    }

    #[test]
    fn replicas_past_the_warn_thresholds_are_counted_once_with_the_most_met() {
        let mut reports = ReadReports::default();
        reports.answered(ip(1), met(3, 4095), TOMBSTONES, LOCAL);
        assert!(reports.is_empty(), "at the thresholds nothing is reported");
        reports.answered(ip(1), met(5, 4096), TOMBSTONES, LOCAL);
        reports.answered(ip(2), met(8, 100), TOMBSTONES, LOCAL);
        reports.answered(ip(2), met(4, 100), TOMBSTONES, LOCAL);
        assert_eq!(reports.tombstone_warnings.nodes(), &[ip(1), ip(2)]);
        assert_eq!(reports.tombstone_warnings.max(), 8);
        // The size warning is reached at the threshold, as Cassandra's.
        assert_eq!(reports.size_warnings.nodes(), &[ip(1)]);
        assert_eq!(reports.size_warnings.max(), 4096);
        let mut merged = ReadReports::default();
        merged.merge(&reports);
        merged.merge(&reports);
        assert_eq!(merged, reports);
    }

    #[test]
    fn this_nodes_own_read_is_refused_past_a_failure_threshold_tombstones_first() {
        let mut reports = ReadReports::default();
        assert!(!reports.own_read(ip(1), met(10, 16383), TOMBSTONES, LOCAL));
        assert_eq!(reports.tombstone_warnings.max(), 10);
        assert_eq!(reports.size_warnings.max(), 16383);
        assert!(!reports.is_refused());
        assert!(reports.own_read(ip(1), met(11, 16384), TOMBSTONES, LOCAL));
        assert_eq!(reports.tombstone_aborts.nodes(), &[ip(1)]);
        assert!(reports.size_aborts.is_empty());
        let mut sized = ReadReports::default();
        assert!(sized.own_read(ip(1), met(0, 16384), TOMBSTONES, LOCAL));
        assert_eq!(sized.size_aborts.max(), 16384);
        // Unmeasured sizes never refuse.
        let mut unmeasured = ReadReports::default();
        let none = SizeThresholds::default();
        assert!(!unmeasured.own_read(ip(1), met(0, 0), TOMBSTONES, none));
        assert!(unmeasured.is_empty());
    }

    #[test]
    fn warnings_are_cassandras_texts_with_the_tokens() {
        // As Cassandra 5.0.6 warned (tombstone_warn_threshold: 3,
        // local_read_size_warn_threshold: 4KiB), its query text aside.
        let mut reports = ReadReports::default();
        reports.answered(ip(1), met(5, 0), TOMBSTONES, SizeThresholds::default());
        assert_eq!(
            reports.warnings(
                "SELECT c FROM rt.t WHERE k = 1",
                "token=-4069959284402364209"
            ),
            vec![
                "1 nodes scanned up to 5 tombstones and issued tombstone warnings for query \
                  SELECT c FROM rt.t WHERE k = 1 (see tombstone_warn_threshold) with \
                  token=-4069959284402364209"
            ]
        );
        let mut reports = ReadReports::default();
        reports.answered(ip(1), met(0, 15564), TOMBSTONES, LOCAL);
        assert_eq!(
            reports.warnings(
                "SELECT c FROM rt.big WHERE k = 2",
                "token=-3248873570005575792"
            ),
            vec![
                "1 nodes loaded over 15564 bytes and issued local read size warnings for query \
                  SELECT c FROM rt.big WHERE k = 2 (see local_read_size_warn_threshold) with \
                  token=-3248873570005575792"
            ]
        );
    }

    #[test]
    fn a_refusal_is_a_read_failure_naming_every_refusing_node() {
        let counts = FailureCounts {
            consistency: Consistency::LocalOne,
            received: 0,
            block_for: 1,
        };
        let mut reports = ReadReports::default();
        assert!(reports.abort(counts).is_none());
        reports.refused(ip(1), Refusal::Size(16856));
        reports.refused(ip(1), Refusal::Tombstones(11));
        // Tombstones before size, as Cassandra's maybeAbort.
        let aborted = reports.abort(counts).expect("refused");
        match named(aborted, "SELECT c FROM rt.t WHERE k = 2") {
            QueryError::ReadFailure {
                consistency,
                received,
                block_for,
                reasons,
                message,
            } => {
                assert_eq!(
                    (consistency, received, block_for),
                    (Consistency::LocalOne, 0, 1)
                );
                assert_eq!(reasons, vec![(ip(1), READ_TOO_MANY_TOMBSTONES)]);
                assert_eq!(
                    message,
                    "Operation failed - 1 nodes scanned over 11 tombstones and aborted the query \
                     SELECT c FROM rt.t WHERE k = 2 (see tombstone_failure_threshold): \
                     READ_TOO_MANY_TOMBSTONES from /127.0.0.1"
                );
            }
            other => panic!("not a read failure: {other:?}"),
        }
        let mut reports = ReadReports::default();
        reports.refused(ip(2), Refusal::Size(16856));
        let failure = reports
            .abort(counts)
            .map(|f| named(f, "SELECT c FROM rt.big WHERE k = 3"));
        assert_eq!(
            failure.map(|f| f.to_string()).as_deref(),
            Some(
                "Operation failed - 1 nodes loaded over 16856 bytes and aborted the query \
                 SELECT c FROM rt.big WHERE k = 3 (see local_read_size_fail_threshold): \
                 READ_SIZE from /127.0.0.2"
            )
        );
    }

    #[test]
    fn the_result_size_fails_only_when_a_row_starts_past_the_fail_threshold() {
        let mut size = ResultSize::new(SizeThresholds {
            warn: Some(2048),
            fail: Some(8192),
        });
        assert_eq!(size.before_row(), Ok(()));
        size.add(8192);
        assert_eq!(
            size.before_row(),
            Ok(()),
            "at the threshold the next row still comes"
        );
        assert_eq!(size.past_warn(), Some(2048));
        size.add(1);
        assert_eq!(size.before_row(), Err(8192));
        let small = ResultSize::new(SizeThresholds {
            warn: Some(2048),
            fail: None,
        });
        assert_eq!((small.before_row(), small.past_warn()), (Ok(()), None));
    }

    #[test]
    fn result_size_texts_group_thousands_as_cassandra() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(2048), "2,048");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(
            result_size_warn_text("rt.big", 2048),
            "Read on table rt.big has exceeded the size warning threshold of 2,048 bytes"
        );
        assert_eq!(
            result_size_fail_text("rt.big", 8192),
            "Read on table rt.big has exceeded the size failure threshold of 8,192 bytes"
        );
    }

    #[test]
    fn settings_say_enabled_only_when_the_flag_is_on() {
        let settings = ReadThresholdSettings::default();
        assert_eq!(settings.enabled(), None);
        let on = ReadThresholds {
            enabled: true,
            local_read_size: LOCAL,
            ..ReadThresholds::default()
        };
        settings.set(on);
        assert_eq!(settings.enabled(), Some(on));
        settings.set(ReadThresholds {
            enabled: false,
            ..on
        });
        assert_eq!(settings.enabled(), None);
        assert_eq!(settings.get().local_read_size, LOCAL);
    }

    #[test]
    fn thresholds_apply_only_when_enabled_and_set() {
        let mut thresholds = ReadThresholds {
            local_read_size: LOCAL,
            ..ReadThresholds::default()
        };
        assert_eq!(thresholds.local_size(), None);
        thresholds.enabled = true;
        assert_eq!(thresholds.local_size(), Some(LOCAL));
        assert_eq!(thresholds.coordinator_size(), None);
    }

    #[test]
    fn a_fail_threshold_below_the_warn_one_is_refused_as_cassandra_words_it() {
        let written = |b: u64| format!("{}KiB", b >> 10);
        let pair = SizeThresholds {
            warn: Some(2048),
            fail: Some(1024),
        };
        assert_eq!(
            validate("coordinator_read_size", pair, written),
            Err(
                "coordinator_read_size_fail_threshold (1KiB) must be greater than or equal to \
                 coordinator_read_size_warn_threshold (2KiB)"
                    .into()
            )
        );
        let equal = SizeThresholds {
            warn: Some(1024),
            fail: Some(1024),
        };
        assert_eq!(validate("local_read_size", equal, written), Ok(()));
    }
}
