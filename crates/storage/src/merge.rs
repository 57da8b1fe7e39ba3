//! What the merge operator and the compaction filter do to stored values:
//! thin byte-level wrappers over `RowState::merge` and `RowState::purge`, so
//! every backend combines and purges entries with the same rules.

use rocksandra_data::LocalTime;

use crate::cell::RowState;
use crate::layout::keys::{
    split_partition, KIND_PARTITION_HEADER, KIND_RANGE_TOMBSTONE, KIND_ROW, KIND_STATIC_ROW,
};
use crate::layout::values::{decode_row, encode_row};
use crate::layout::CorruptData;

/// Merges an existing value (if any) with operands in write order.
pub fn merge_entry<'a>(
    existing: Option<&[u8]>,
    operands: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, CorruptData> {
    let mut row = match existing {
        Some(bytes) => decode_row(bytes)?,
        None => RowState::default(),
    };
    for operand in operands {
        row = row.merge(decode_row(operand)?);
    }
    Ok(encode_row(&row))
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
    let Some((kind, prefix_len)) = split_partition(key)
        .ok()
        .and_then(|(_, _, len)| Some((*key.get(len)?, len)))
    else {
        return FilterDecision::Keep;
    };
    let Ok(row) = decode_row(value) else {
        // Never destroy what we cannot read; reads will report it.
        return FilterDecision::Keep;
    };
    if matches!(kind, KIND_PARTITION_HEADER | KIND_RANGE_TOMBSTONE) {
        return match row.deletion {
            Some(d) if d.is_purgeable(now, gc_grace_seconds) => {
                FilterDecision::KeepUntilPushedDown { prefix_len }
            }
            _ => FilterDecision::Keep,
        };
    }
    if !matches!(kind, KIND_ROW | KIND_STATIC_ROW) {
        return FilterDecision::Keep;
    }
    let purged = row.clone().purge(now, gc_grace_seconds);
    if purged.is_empty() {
        FilterDecision::Remove
    } else if purged == row {
        FilterDecision::Keep
    } else {
        FilterDecision::Change(encode_row(&purged))
    }
}
