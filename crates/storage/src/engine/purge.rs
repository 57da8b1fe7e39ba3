//! Purging partition deletions and range tombstones after gc_grace.
//!
//! A row tombstone or an expired cell is purged by the compaction filter,
//! entry by entry (`merge::filter_entry`). A partition deletion or a range
//! tombstone cannot be: it shadows rows stored under *other* keys, and the
//! filter sees one key at a time and never sees values that compaction merged
//! in the same run. Dropping such a tombstone there could resurrect the rows
//! it shadows.
//!
//! So the engine pushes the deletion down first: for a tombstone past
//! gc_grace, every row it covers gets the same deletion merged in as a row
//! deletion (a merge operand: commutative with concurrent writes, so no lock
//! is needed). From then on the rows carry their own deletion, which
//! `RowState::purge` applies and forgets during compaction, and the tombstone
//! entry itself can go. Removing that entry is the one step that is not a
//! merge: it happens under the engine's exclusive write gate, after checking
//! that the entry still holds the deletion that was pushed down (a newer
//! deletion merged in meanwhile keeps it).
//!
//! As in Cassandra, a write arriving after gc_grace with a timestamp older
//! than a purged tombstone is visible again: that is what gc_grace means.

use std::ops::ControlFlow;

use rocksandra_data::LocalTime;

use crate::api::{Result, StorageError, TableId, TableSpec};
use crate::cell::{DeletionTime, RowState};
use crate::kv::{KeyRange, KvOp, KvStore};
use crate::layout::keys::{self, DecodedKey};
use crate::layout::values::{decode_row, encode_row};

use super::{Coverage, KvEngine};

/// Row deletions pushed down per write batch, so a huge partition is not one
/// huge batch.
pub const PUSHDOWN_BATCH_ROWS: usize = 10_000;

/// A tombstone entry past gc_grace, to be removed once pushed down.
struct Pushed {
    key: Vec<u8>,
    deletion: DeletionTime,
}

/// The purgeable tombstones of the partition being walked.
#[derive(Default)]
struct PartitionTombstones {
    prefix: Vec<u8>,
    purgeable: Coverage,
}

/// What one walk over a key range found to do.
#[derive(Default)]
struct Pushdown {
    current: PartitionTombstones,
    row_ops: Vec<(TableId, KvOp)>,
    tombstones: Vec<Pushed>,
}

impl Pushdown {
    fn absorb(&mut self, spec: &TableSpec, now: LocalTime, key: &[u8], value: &[u8]) -> Result<()> {
        let prefix_len = keys::stored_prefix_len(key)?;
        if key[..prefix_len] != self.current.prefix[..] {
            self.current = PartitionTombstones {
                prefix: key[..prefix_len].to_vec(),
                ..Default::default()
            };
        }
        let rest = &key[prefix_len..];
        let gc_grace = spec.options.gc_grace_seconds;
        let purgeable = |row: &RowState| row.deletion.filter(|d| d.is_purgeable(now, gc_grace));
        match keys::decode_after_prefix(&spec.clustering, rest)? {
            DecodedKey::PartitionHeader => {
                if let Some(deletion) = purgeable(&decode_row(value)?) {
                    self.current.purgeable.partition = Some(deletion);
                    self.tombstones.push(Pushed {
                        key: key.to_vec(),
                        deletion,
                    });
                }
            }
            DecodedKey::RangeTombstone { start, end } => {
                if let Some(deletion) = purgeable(&decode_row(value)?) {
                    self.current
                        .purgeable
                        .add_range(spec, &start, &end, deletion)?;
                    self.tombstones.push(Pushed {
                        key: key.to_vec(),
                        deletion,
                    });
                }
            }
            DecodedKey::StaticRow => self.push_row(spec.id, key, self.current.purgeable.partition),
            DecodedKey::Row { .. } => {
                self.push_row(spec.id, key, self.current.purgeable.covering(rest))
            }
        }
        Ok(())
    }

    fn push_row(&mut self, table: TableId, key: &[u8], deletion: Option<DeletionTime>) {
        if let Some(deletion) = deletion {
            let row = RowState {
                deletion: Some(deletion),
                ..Default::default()
            };
            self.row_ops.push((
                table,
                KvOp::Merge {
                    key: key.to_vec(),
                    value: encode_row(&row),
                },
            ));
        }
    }
}

fn next_key(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}

impl<S: KvStore> KvEngine<S> {
    /// Pushes down and removes the partition deletions and range tombstones
    /// of `range` that are past the table's gc_grace; returns how many
    /// tombstones were removed.
    pub(crate) fn purge_range(
        &self,
        spec: &TableSpec,
        range: &KeyRange,
        now: LocalTime,
    ) -> Result<usize> {
        let mut walk = Pushdown::default();
        let mut start = range.start.clone();
        loop {
            let chunk = KeyRange {
                start: start.clone(),
                end: range.end.clone(),
            };
            let mut last = None;
            let mut error = None;
            self.store.scan(spec.id, &chunk, false, &mut |key, value| {
                if let Err(e) = walk.absorb(spec, now, key, value) {
                    error = Some(e);
                    return ControlFlow::Break(());
                }
                if walk.row_ops.len() >= PUSHDOWN_BATCH_ROWS {
                    last = Some(key.to_vec());
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            })?;
            if let Some(e) = error {
                return Err(e);
            }
            let ops = std::mem::take(&mut walk.row_ops);
            if !ops.is_empty() {
                self.check_writable()?;
                self.apply(&ops)?;
            }
            match last {
                Some(key) => start = next_key(&key),
                None => break,
            }
        }
        self.remove_pushed(spec.id, walk.tombstones)
    }

    /// Removes tombstone entries whose deletion is now in every row they
    /// cover, unless a newer deletion was merged into them meanwhile.
    fn remove_pushed(&self, table: TableId, pushed: Vec<Pushed>) -> Result<usize> {
        if pushed.is_empty() {
            return Ok(0);
        }
        let _exclusive = self
            .write_gate
            .write()
            .map_err(|_| StorageError::ReadOnly("write gate poisoned".into()))?;
        self.check_writable()?;
        let mut ops = Vec::new();
        for p in pushed {
            let Some(value) = self.store.get(table, &p.key)? else {
                continue;
            };
            let row = decode_row(&value)?;
            let only_that_deletion = RowState {
                deletion: Some(p.deletion),
                ..Default::default()
            };
            if row == only_that_deletion {
                let end = Some(next_key(&p.key));
                ops.push((table, KvOp::DeleteRange { start: p.key, end }));
            }
        }
        let removed = ops.len();
        if !ops.is_empty() {
            self.apply(&ops)?;
        }
        Ok(removed)
    }

    /// Purges the tombstones compactions reported past gc_grace
    /// (`KvStore::take_purge_candidates`), one partition at a time.
    pub(crate) fn purge_reported(&self, now: LocalTime) -> Result<usize> {
        let mut removed = 0;
        for (table, prefix) in self.store.take_purge_candidates() {
            let Ok(spec) = self.spec(table) else {
                continue; // dropped since
            };
            let range = KeyRange {
                start: keys::with_kind(&prefix, keys::KIND_PARTITION_HEADER),
                end: Some(keys::with_kind(&prefix, keys::KIND_END)),
            };
            removed += self.purge_range(&spec, &range, now)?;
        }
        Ok(removed)
    }
}
