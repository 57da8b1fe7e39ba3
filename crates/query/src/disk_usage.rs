//! Cassandra 5.0's data disk usage guardrails: each node measures how full
//! its data volume is (`data_disk_usage_percentage_warn_threshold` /
//! `_fail_threshold`, out of at most `data_disk_usage_max_disk_size`),
//! tells the others by gossip, and a write whose replicas include a full
//! one is refused before it is sent (`replica_disk_usage`), one with a
//! nearly full one warned about. The measuring (the clock, the file
//! system) is the server's; what it decides is here, with time passed in.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::guardrails::{decorate, Threshold};
use crate::{QueryError, Result};

/// A node's disk usage as the guardrails see it (Cassandra's
/// `DiskUsageState`), worst last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum DiskUsage {
    /// The guardrails are off, or the node has not measured yet.
    #[default]
    NotAvailable,
    Spacious,
    /// Past the warning threshold.
    Stuffed,
    /// Past the failure threshold: writes to it are refused.
    Full,
}

impl DiskUsage {
    const ALL: [DiskUsage; 4] = [
        DiskUsage::NotAvailable,
        DiskUsage::Spacious,
        DiskUsage::Stuffed,
        DiskUsage::Full,
    ];

    /// Cassandra's name for it (in logs and gossip).
    pub fn name(self) -> &'static str {
        match self {
            DiskUsage::NotAvailable => "NOT_AVAILABLE",
            DiskUsage::Spacious => "SPACIOUS",
            DiskUsage::Stuffed => "STUFFED",
            DiskUsage::Full => "FULL",
        }
    }

    pub fn from_name(name: &str) -> Option<DiskUsage> {
        DiskUsage::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The state of a volume `percentage` full under `threshold` (both in
    /// percent; -1 disables a side), as Cassandra's `getState`.
    pub fn of(percentage: u64, threshold: Threshold) -> DiskUsage {
        if threshold.warn <= 0 && threshold.fail <= 0 {
            return DiskUsage::NotAvailable;
        }
        let over = |limit: i64| limit > 0 && percentage > limit.unsigned_abs();
        if over(threshold.fail) {
            DiskUsage::Full
        } else if over(threshold.warn) {
            DiskUsage::Stuffed
        } else {
            DiskUsage::Spacious
        }
    }
}

/// How full the data volume is, in percent rounded up, as Cassandra's
/// `DiskUsageMonitor` counts it: the data (`used`, on disk and in
/// memtables, which will be flushed) out of the space it has, the data on
/// disk plus the free space (`on_disk + free`), at most `max_disk_size`.
pub fn percentage(on_disk: u64, in_memory: u64, free: u64, max_disk_size: Option<u64>) -> u64 {
    let total = u128::from(on_disk) + u128::from(free);
    let total = max_disk_size.map_or(total, |max| total.min(u128::from(max)));
    let used = u128::from(on_disk) + u128::from(in_memory);
    if total == 0 {
        return 100;
    }
    u64::try_from((used * 100).div_ceil(total)).unwrap_or(u64::MAX)
}

/// Cassandra's minimum interval between two notifications (a client
/// warning, a log line) of a disk usage guardrail:
/// `cassandra.disk_usage.notify_interval_ms`, 30 minutes.
pub const NOTIFY_INTERVAL_MS: u64 = 30 * 60 * 1000;

/// This node's disk usage, as its last measure found it, and when the
/// replica guardrail last warned (notifications are spaced by
/// `NOTIFY_INTERVAL_MS`).
#[derive(Debug, Default)]
pub struct LocalDiskUsage {
    state: AtomicU8,
    last_warning_ms: AtomicU64,
}

impl LocalDiskUsage {
    pub fn get(&self) -> DiskUsage {
        DiskUsage::ALL
            .get(usize::from(self.state.load(Ordering::Relaxed)))
            .copied()
            .unwrap_or_default()
    }

    /// Records a measure; the previous state.
    pub fn set(&self, state: DiskUsage) -> DiskUsage {
        let previous = self.state.swap(state as u8, Ordering::Relaxed);
        DiskUsage::ALL
            .get(usize::from(previous))
            .copied()
            .unwrap_or_default()
    }

    /// The `replica_disk_usage` guardrail for a write whose replicas'
    /// worst state is `worst`, at `now_ms`: refused when one is full;
    /// warned about when one is stuffed, at most once per
    /// `NOTIFY_INTERVAL_MS` (as Cassandra's client warnings).
    pub fn check_replicas(&self, worst: DiskUsage, now_ms: u64) -> Result<Option<String>> {
        match worst {
            DiskUsage::Full => Err(QueryError::invalid(decorate(
                "replica_disk_usage",
                "Write request failed because disk usage exceeds failure threshold",
            ))),
            DiskUsage::Stuffed if self.may_notify(now_ms) => Ok(Some(decorate(
                "replica_disk_usage",
                "Replica disk usage exceeds warning threshold",
            ))),
            _ => Ok(None),
        }
    }

    fn may_notify(&self, now_ms: u64) -> bool {
        let last = self.last_warning_ms.load(Ordering::Relaxed);
        if last != 0 && now_ms.saturating_sub(last) < NOTIFY_INTERVAL_MS {
            return false;
        }
        self.last_warning_ms
            .compare_exchange(last, now_ms.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WARN_50_FAIL_80: Threshold = Threshold { warn: 50, fail: 80 };

    #[test]
    fn the_state_follows_the_thresholds_as_cassandra_s() {
        assert_eq!(DiskUsage::of(50, WARN_50_FAIL_80), DiskUsage::Spacious);
        assert_eq!(DiskUsage::of(51, WARN_50_FAIL_80), DiskUsage::Stuffed);
        assert_eq!(DiskUsage::of(80, WARN_50_FAIL_80), DiskUsage::Stuffed);
        assert_eq!(DiskUsage::of(81, WARN_50_FAIL_80), DiskUsage::Full);
        let off = Threshold { warn: -1, fail: -1 };
        assert_eq!(DiskUsage::of(100, off), DiskUsage::NotAvailable);
        let fail_only = Threshold { warn: -1, fail: 90 };
        assert_eq!(DiskUsage::of(89, fail_only), DiskUsage::Spacious);
        assert_eq!(DiskUsage::of(91, fail_only), DiskUsage::Full);
    }

    #[test]
    fn usage_counts_memtables_and_rounds_up_within_the_maximum_size() {
        // 40 on disk + 10 in memory of 40 + 60.
        assert_eq!(percentage(40, 10, 60, None), 50);
        assert_eq!(percentage(40, 11, 60, None), 51);
        // At most 80 bytes are the data's: 50 of 80 is 62.5%.
        assert_eq!(percentage(40, 10, 60, Some(80)), 63);
        assert_eq!(percentage(0, 0, 0, None), 100);
    }

    #[test]
    fn a_full_replica_refuses_and_a_stuffed_one_warns_once_per_interval() {
        let local = LocalDiskUsage::default();
        let refused = local.check_replicas(DiskUsage::Full, 1_000).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "Guardrail replica_disk_usage violated: Write request failed because disk usage exceeds failure threshold"
        );
        let warned = local.check_replicas(DiskUsage::Stuffed, 1_000).unwrap();
        assert_eq!(
            warned.as_deref(),
            Some("Guardrail replica_disk_usage violated: Replica disk usage exceeds warning threshold")
        );
        assert_eq!(
            local.check_replicas(DiskUsage::Stuffed, 2_000).unwrap(),
            None
        );
        let later = 1_000 + NOTIFY_INTERVAL_MS;
        assert!(local
            .check_replicas(DiskUsage::Stuffed, later)
            .unwrap()
            .is_some());
        assert_eq!(
            local.check_replicas(DiskUsage::Spacious, later).unwrap(),
            None
        );
    }

    #[test]
    fn states_keep_their_names_and_order() {
        for state in DiskUsage::ALL {
            assert_eq!(DiskUsage::from_name(state.name()), Some(state));
            let local = LocalDiskUsage::default();
            local.set(state);
            assert_eq!(local.get(), state);
        }
        assert!(DiskUsage::Full > DiskUsage::Stuffed);
    }
}
