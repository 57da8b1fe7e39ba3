//! What the merge operator and the compaction filter do to stored values:
//! thin byte-level wrappers over `RowState::merge` and `RowState::purge`, so
//! every backend combines and purges entries with the same rules.

use rocksandra_data::LocalTime;

use crate::cell::RowState;
use crate::layout::keys::{
    partition_prefix_len, KIND_PARTITION_HEADER, KIND_RANGE_TOMBSTONE, KIND_ROW, KIND_STATIC_ROW,
};
use crate::layout::values::{decode_row, encode_row};
use crate::layout::CorruptData;

/// Merges an existing value (if any) with operands in write order.
pub fn merge_entry<'a>(
    existing: Option<&[u8]>,
    operands: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, CorruptData> {
    let mut operands = operands.into_iter().peekable();
    let mut row = match (existing, operands.next()) {
        (Some(bytes), first) => merge_first(decode_row(bytes)?, first)?,
        // One write over nothing, as every read of a key not yet compacted
        // asks: writes are encoded canonical (`RowState::from_parts`) and an
        // empty row merges into nothing, so the write's bytes are the result.
        (None, Some(only)) if operands.peek().is_none() => return Ok(only.to_vec()),
        (None, first) => merge_first(RowState::default(), first)?,
    };
    for operand in operands {
        row = row.merge(decode_row(operand)?);
    }
    Ok(encode_row(&row))
}

fn merge_first(row: RowState, operand: Option<&[u8]>) -> Result<RowState, CorruptData> {
    Ok(match operand {
        Some(bytes) => row.merge(decode_row(bytes)?),
        None => row,
    })
}

/// What compaction does with one fully merged entry.
#[derive(Debug, PartialEq, Eq)]
pub enum FilterDecision {
    Keep,
    Remove,
    Change(Vec<u8>),
    /// Keep this partition deletion or range tombstone, which is past
    /// gc_grace: the engine purges it after pushing it down to the rows it
    /// covers (`engine::purge`). The key's first `prefix_len` bytes name its
    /// partition.
    KeepUntilPushedDown {
        prefix_len: usize,
    },
}

/// What Cassandra's sstable writer counts as tombstones in what this entry
/// keeps (its `MetadataCollector`, for the `partition_tombstones`
/// guardrail): a partition deletion, two markers per range tombstone, and
/// in a row its deletion, an expired row marker, each collection deletion
/// and each cell deleted or expired at `now`. Counting only.
pub fn entry_tombstones(kind: u8, row: &RowState, now: LocalTime) -> u64 {
    let deleted = u64::from(row.deletion.is_some());
    match kind {
        KIND_PARTITION_HEADER => deleted,
        KIND_RANGE_TOMBSTONE => 2 * deleted,
        KIND_ROW | KIND_STATIC_ROW => {
            let marker = row.liveness.is_some_and(|l| !l.is_live(now));
            let cells = row.cells.iter().filter(|c| !c.is_live(now)).count();
            deleted + u64::from(marker) + row.complex_deletions.len() as u64 + cells as u64
        }
        _ => 0,
    }
}

/// `filter_entry`, and the tombstones of what it keeps
/// (`entry_tombstones`), counted when `count` asks.
pub fn filter_entry_counted(
    key: &[u8],
    value: &[u8],
    (now, gc_grace_seconds): (LocalTime, i64),
    count: bool,
) -> (FilterDecision, u64) {
    let Some((kind, prefix_len)) =
        partition_prefix_len(key).and_then(|len| Some((*key.get(len)?, len)))
    else {
        return (FilterDecision::Keep, 0);
    };
    let Ok(row) = decode_row(value) else {
        // Never destroy what we cannot read; reads will report it.
        return (FilterDecision::Keep, 0);
    };
    let tombstones = |row: &RowState| {
        if count {
            entry_tombstones(kind, row, now)
        } else {
            0
        }
    };
    if matches!(kind, KIND_PARTITION_HEADER | KIND_RANGE_TOMBSTONE) {
        let decision = match row.deletion {
            Some(d) if d.is_purgeable(now, gc_grace_seconds) => {
                FilterDecision::KeepUntilPushedDown { prefix_len }
            }
            _ => FilterDecision::Keep,
        };
        return (decision, tombstones(&row));
    }
    if !matches!(kind, KIND_ROW | KIND_STATIC_ROW) {
        return (FilterDecision::Keep, 0);
    }
    let purged = row.clone().purge(now, gc_grace_seconds);
    if purged.is_empty() {
        (FilterDecision::Remove, 0)
    } else if purged == row {
        (FilterDecision::Keep, tombstones(&row))
    } else {
        let counted = tombstones(&purged);
        (FilterDecision::Change(encode_row(&purged)), counted)
    }
}

/// Expires TTL cells and purges what gc_grace allows, for one entry that
/// holds the complete history of its key.
///
/// Partition deletions and range tombstones are kept whatever their age: they
/// shadow rows stored under other keys, which this entry-at-a-time filter
/// cannot see, and dropping them could resurrect those rows. Past gc_grace
/// they are reported for the engine's pushdown instead.
pub fn filter_entry(
    key: &[u8],
    value: &[u8],
    now: LocalTime,
    gc_grace_seconds: i64,
) -> FilterDecision {
    filter_entry_counted(key, value, (now, gc_grace_seconds), false).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Cell, ColumnId, DeletionTime, LivenessInfo};

    /// A write as the engine encodes it: several columns, collection
    /// elements given twice and out of order, complex deletions.
    fn write(timestamp: i64) -> Vec<u8> {
        let cells = vec![
            Cell::live(ColumnId(3), timestamp, b"c".to_vec()),
            Cell::live(ColumnId(2), timestamp, b"y".to_vec()).with_path(b"k2".to_vec()),
            Cell::live(ColumnId(2), timestamp, b"x".to_vec()).with_path(b"k1".to_vec()),
            Cell::live(ColumnId(2), timestamp, b"z".to_vec()).with_path(b"k1".to_vec()),
            Cell::tombstone(ColumnId(1), timestamp, LocalTime(10)),
        ];
        let complex = vec![
            (ColumnId(4), DeletionTime::new(timestamp - 1, 10)),
            (ColumnId(2), DeletionTime::new(timestamp - 1, 10)),
        ];
        let liveness = Some(LivenessInfo::new(timestamp, 0, 0));
        encode_row(&RowState::from_parts(liveness, None, complex, cells))
    }

    fn merged_slowly(existing: Option<&[u8]>, operands: &[&[u8]]) -> Vec<u8> {
        let mut row = existing.map_or_else(RowState::default, |b| decode_row(b).expect("decode"));
        for operand in operands {
            row = row.merge(decode_row(operand).expect("decode"));
        }
        encode_row(&row)
    }

    #[test]
    fn one_write_over_nothing_is_the_write_itself() {
        let only = write(5);
        let merged = merge_entry(None, [only.as_slice()]).expect("merge");
        assert_eq!(merged, only);
        assert_eq!(merged, merged_slowly(None, &[&only]));
    }

    #[test]
    fn every_other_shape_merges_as_row_states_do() {
        let (a, b, c) = (write(5), write(7), write(6));
        type Case<'a> = (Option<&'a [u8]>, Vec<&'a [u8]>);
        let cases: [Case; 4] = [
            (None, vec![]),
            (None, vec![&a, &b]),
            (Some(&a), vec![]),
            (Some(&a), vec![&b, &c]),
        ];
        for (existing, operands) in cases {
            let merged = merge_entry(existing, operands.iter().copied()).expect("merge");
            assert_eq!(merged, merged_slowly(existing, &operands));
        }
    }

    #[test]
    fn entries_count_their_tombstones_as_cassandras_sstable_writer() {
        use crate::layout::keys::{partition_prefix, KIND_ROW};
        let now = LocalTime(100);
        // `write`: a tombstone cell and two collection deletions.
        let row = decode_row(&write(5)).expect("decode");
        assert_eq!(entry_tombstones(KIND_ROW, &row, now), 3);
        let deleted = RowState {
            deletion: Some(DeletionTime::new(5, 10)),
            liveness: Some(LivenessInfo {
                timestamp: rocksandra_data::Timestamp(4),
                ttl_seconds: 10,
                local_expiration_time: LocalTime(50),
            }),
            ..RowState::default()
        };
        // Its deletion and its expired marker.
        assert_eq!(entry_tombstones(KIND_ROW, &deleted, now), 2);
        assert_eq!(entry_tombstones(KIND_RANGE_TOMBSTONE, &deleted, now), 2);
        assert_eq!(entry_tombstones(KIND_PARTITION_HEADER, &deleted, now), 1);
        assert_eq!(
            entry_tombstones(KIND_PARTITION_HEADER, &RowState::default(), now),
            0
        );
        // The filter counts only when asked, and what it keeps.
        let mut key = partition_prefix(rocksandra_data::Token(1), b"p");
        key.push(KIND_ROW);
        let value = write(5);
        let far = (now, 1_000_000);
        assert_eq!(
            filter_entry_counted(&key, &value, far, true),
            (FilterDecision::Keep, 3)
        );
        assert_eq!(
            filter_entry_counted(&key, &value, far, false),
            (FilterDecision::Keep, 0)
        );
    }

    #[test]
    fn a_corrupt_operand_under_others_is_an_error() {
        let good = write(5);
        assert!(merge_entry(None, [good.as_slice(), b"\xff".as_slice()]).is_err());
        assert!(merge_entry(Some(b"\xff".as_slice()), [good.as_slice()]).is_err());
    }
}
