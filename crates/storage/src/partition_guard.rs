//! The `partition_size` and `partition_tombstones` guardrails as a
//! compaction sees them: Cassandra 5.0 checks each partition it writes to
//! an sstable (its bytes, and the tombstones its `MetadataCollector`
//! counts) and logs the guardrail's warning or failure; nothing is
//! refused. Here an engine's compaction hands each entry it keeps, in key
//! order, to a `PartitionTally`, which adds up one partition at a time and
//! reports a partition past a threshold once, when the next partition
//! starts or the compaction ends. Counting only: the tally reuses one
//! buffer for the partition's prefix. Who names the partition and words
//! the log line is the reporter's (the server's, which knows the schema).

use std::sync::Arc;

use crate::api::TableId;
use crate::layout::keys::split_partition;

/// A warn and a fail threshold; None: not set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub warn: Option<u64>,
    pub fail: Option<u64>,
}

impl Limits {
    fn is_set(&self) -> bool {
        self.warn.is_some() || self.fail.is_some()
    }

    /// The threshold `value` passes, the failure one first.
    fn passed(&self, value: u64) -> Option<(u64, bool)> {
        match (self.fail, self.warn) {
            (Some(fail), _) if value > fail => Some((fail, true)),
            (_, Some(warn)) if value > warn => Some((warn, false)),
            _ => None,
        }
    }
}

/// `partition_size_*` (bytes) and `partition_tombstones_*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionThresholds {
    pub size: Limits,
    pub tombstones: Limits,
}

impl PartitionThresholds {
    pub fn is_set(&self) -> bool {
        self.size.is_set() || self.tombstones.is_set()
    }
}

/// Which guardrail a partition passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    Size,
    Tombstones,
}

/// A partition past a threshold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub table: TableId,
    /// The serialized partition key.
    pub key: Vec<u8>,
    pub measure: Measure,
    pub value: u64,
    pub threshold: u64,
    /// The fail threshold (else the warn one).
    pub failure: bool,
}

/// Logs a violation (the server words it as Cassandra does).
pub type Reporter = Arc<dyn Fn(&Violation) + Send + Sync>;

/// The thresholds and who hears of a partition past them.
#[derive(Clone)]
pub struct PartitionGuard {
    pub thresholds: PartitionThresholds,
    pub report: Reporter,
}

impl std::fmt::Debug for PartitionGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionGuard")
            .field("thresholds", &self.thresholds)
            .finish()
    }
}

/// One compaction's running count of the partition it is in.
pub struct PartitionTally {
    guard: PartitionGuard,
    table: TableId,
    /// The current partition's key prefix (empty before the first).
    prefix: Vec<u8>,
    bytes: u64,
    tombstones: u64,
}

impl PartitionTally {
    pub fn new(guard: PartitionGuard, table: TableId) -> Self {
        PartitionTally {
            guard,
            table,
            prefix: Vec::new(),
            bytes: 0,
            tombstones: 0,
        }
    }

    /// An entry kept under `key` (whose first `prefix_len` bytes name its
    /// partition): `bytes` written, `tombstones` in it. Entries come in key
    /// order, so a new prefix ends the partition before.
    pub fn entry(&mut self, key: &[u8], prefix_len: usize, bytes: u64, tombstones: u64) {
        let prefix = key.get(..prefix_len).unwrap_or(key);
        if prefix != self.prefix.as_slice() {
            self.finish();
            self.prefix.clear();
            self.prefix.extend_from_slice(prefix);
        }
        self.bytes += bytes;
        self.tombstones += tombstones;
    }

    /// Ends the current partition: reported if past a threshold (size
    /// first, as Cassandra checks them).
    pub fn finish(&mut self) {
        let thresholds = self.guard.thresholds;
        let measured = [
            (Measure::Size, thresholds.size, self.bytes),
            (Measure::Tombstones, thresholds.tombstones, self.tombstones),
        ];
        for (measure, limits, value) in measured {
            let Some((threshold, failure)) = limits.passed(value) else {
                continue;
            };
            let Ok((_, key, _)) = split_partition(&self.prefix) else {
                return;
            };
            (self.guard.report)(&Violation {
                table: self.table,
                key,
                measure,
                value,
                threshold,
                failure,
            });
        }
        self.bytes = 0;
        self.tombstones = 0;
    }
}

impl Drop for PartitionTally {
    /// The compaction's last partition.
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use rocksandra_data::Token;

    use super::*;
    use crate::layout::keys::{partition_prefix, KIND_ROW};

    fn guard(heard: &Arc<Mutex<Vec<Violation>>>) -> PartitionGuard {
        let heard = heard.clone();
        PartitionGuard {
            thresholds: PartitionThresholds {
                size: Limits {
                    warn: Some(100),
                    fail: Some(1000),
                },
                tombstones: Limits {
                    warn: Some(5),
                    fail: None,
                },
            },
            report: Arc::new(move |v| heard.lock().unwrap().push(v.clone())),
        }
    }

    fn key(partition: &[u8], row: u8) -> (Vec<u8>, usize) {
        let prefix = partition_prefix(Token(7), partition);
        let len = prefix.len();
        let mut key = prefix;
        key.extend_from_slice(&[KIND_ROW, row]);
        (key, len)
    }

    #[test]
    fn each_partition_is_summed_and_reported_once_past_a_threshold() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        {
            let mut tally = PartitionTally::new(guard(&heard), TableId(3));
            for (partition, rows, bytes, tombstones) in
                [(&b"a"[..], 3, 40, 2), (b"b", 2, 10, 0), (b"c", 4, 300, 1)]
            {
                for row in 0..rows {
                    let (key, len) = key(partition, row);
                    tally.entry(&key, len, bytes, tombstones);
                }
            }
            // a: 120 bytes, 6 tombstones; b: nothing; c: 1200 bytes.
            assert_eq!(heard.lock().unwrap().len(), 2, "c is still open");
        }
        let heard = heard.lock().unwrap();
        let seen: Vec<_> = heard
            .iter()
            .map(|v| (v.key.clone(), v.measure, v.value, v.threshold, v.failure))
            .collect();
        assert_eq!(
            seen,
            vec![
                (b"a".to_vec(), Measure::Size, 120, 100, false),
                (b"a".to_vec(), Measure::Tombstones, 6, 5, false),
                (b"c".to_vec(), Measure::Size, 1200, 1000, true),
            ]
        );
        assert!(heard.iter().all(|v| v.table == TableId(3)));
    }

    #[test]
    fn at_a_threshold_nothing_is_reported() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let mut tally = PartitionTally::new(guard(&heard), TableId(3));
        let (key, len) = key(b"a", 0);
        tally.entry(&key, len, 100, 5);
        drop(tally);
        assert!(heard.lock().unwrap().is_empty());
        assert!(!PartitionThresholds::default().is_set());
    }
}
