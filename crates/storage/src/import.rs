//! Importing one table's data from a snapshot of another node state
//! (`nodetool import`): which stored columns of the snapshot's table become
//! which columns of the live table, and the rewriting of each stored value
//! to the live table's column ids. Keys hold no column ids (`layout::keys`),
//! so only values change; reconciliation with what the live table holds is
//! the merge operator's, as for streamed data.

use std::path::PathBuf;

use crate::api::{Result, TableId, TokenRange};
use crate::cell::{ColumnId, RowState};
use crate::layout::keys::split_partition;
use crate::layout::values::{decode_row, encode_row};

/// The snapshot's column ids and the live table's: cells of a snapshot
/// column not in the map (a column the live table dropped) are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnMap {
    /// `(snapshot column, live column)`, each id at most once on each side.
    pairs: Vec<(ColumnId, ColumnId)>,
}

impl ColumnMap {
    /// A map from `(snapshot, live)` pairs; None when an id repeats on
    /// either side (two columns would become one).
    pub fn new(pairs: Vec<(ColumnId, ColumnId)>) -> Option<ColumnMap> {
        let mut from: Vec<ColumnId> = pairs.iter().map(|p| p.0).collect();
        let mut to: Vec<ColumnId> = pairs.iter().map(|p| p.1).collect();
        from.sort();
        from.dedup();
        to.sort();
        to.dedup();
        (from.len() == pairs.len() && to.len() == pairs.len()).then_some(ColumnMap { pairs })
    }

    fn live(&self, snapshot: ColumnId) -> Option<ColumnId> {
        self.pairs
            .iter()
            .find(|(from, _)| *from == snapshot)
            .map(|(_, to)| *to)
    }

    /// True when every column keeps its id and none is left out.
    fn is_identity(&self, row: &RowState) -> bool {
        let same = |c: ColumnId| self.live(c) == Some(c);
        row.cells.iter().all(|c| same(c.column))
            && row.complex_deletions.iter().all(|(c, _)| same(*c))
    }

    /// `row` with the live table's column ids, cells of columns not in the
    /// map left out.
    pub fn rewrite(&self, mut row: RowState) -> RowState {
        if self.is_identity(&row) {
            return row;
        }
        row.cells.retain_mut(|cell| match self.live(cell.column) {
            Some(id) => {
                cell.column = id;
                true
            }
            None => false,
        });
        row.cells.sort_by(|a, b| a.position().cmp(&b.position()));
        row.complex_deletions
            .retain_mut(|(column, _)| match self.live(*column) {
                Some(id) => {
                    *column = id;
                    true
                }
                None => false,
            });
        row.complex_deletions.sort_by_key(|(column, _)| *column);
        row
    }

    /// A stored value rewritten for the live table; None when nothing of it
    /// is left (only cells of left-out columns).
    pub fn rewrite_value(&self, value: &[u8]) -> Result<Option<Vec<u8>>> {
        let row = self.rewrite(decode_row(value)?);
        Ok((!row.is_empty()).then(|| encode_row(&row)))
    }
}

/// Where the data of one table is read from: a snapshot directory (a
/// checkpoint of a whole engine), and the table's id in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportSource {
    pub dir: PathBuf,
    pub table: TableId,
    pub columns: ColumnMap,
    /// Only partitions with a token in these ranges; None: every one.
    pub ranges: Option<Vec<TokenRange>>,
}

impl ImportSource {
    /// The entry `key`, `value` of the snapshot as the live table is to
    /// get it; None when it is left out (its partition is not in `ranges`,
    /// or only left-out columns were in it).
    pub fn rewrite_entry(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(ranges) = &self.ranges {
            let (token, _, _) = split_partition(key)?;
            if !ranges.iter().any(|r| r.contains(token)) {
                return Ok(None);
            }
        }
        self.columns.rewrite_value(value)
    }
}

/// What an import loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportCounts {
    /// Stored entries read from the snapshot (rows, static rows,
    /// partition and range tombstones).
    pub entries: u64,
    /// Of those, the ones loaded (the others were outside the ranges or
    /// held only left-out columns).
    pub loaded: u64,
    /// Files ingested into the live table.
    pub files: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Cell, DeletionTime, LivenessInfo};

    fn row(cells: &[(u32, i64)]) -> RowState {
        RowState {
            liveness: Some(LivenessInfo::new(10, 0, i64::MAX)),
            deletion: None,
            complex_deletions: vec![(ColumnId(2), DeletionTime::new(5, 100))],
            cells: cells
                .iter()
                .map(|(c, ts)| Cell::live(ColumnId(*c), *ts, vec![*c as u8]))
                .collect(),
            clustering_form: None,
        }
    }

    #[test]
    fn columns_take_their_live_ids_in_live_order_and_unmapped_ones_go() {
        let map = ColumnMap::new(vec![(ColumnId(0), ColumnId(3)), (ColumnId(2), ColumnId(0))])
            .expect("distinct ids");
        let rewritten = map.rewrite(row(&[(0, 11), (1, 12), (2, 13)]));
        let cells: Vec<(u32, i64, Vec<u8>)> = rewritten
            .cells
            .iter()
            .map(|c| (c.column.0, c.timestamp.micros(), c.value.clone()))
            .collect();
        assert_eq!(cells, vec![(0, 13, vec![2]), (3, 11, vec![0])]);
        assert_eq!(rewritten.complex_deletions[0].0, ColumnId(0));
        assert_eq!(rewritten.liveness, Some(LivenessInfo::new(10, 0, i64::MAX)));
    }

    #[test]
    fn the_identity_map_keeps_the_value_and_an_emptied_row_is_skipped() {
        let map = ColumnMap::new(vec![(ColumnId(0), ColumnId(0)), (ColumnId(2), ColumnId(2))])
            .expect("distinct ids");
        let original = row(&[(0, 1), (2, 2)]);
        let bytes = encode_row(&original);
        assert_eq!(map.rewrite_value(&bytes).expect("decodes"), Some(bytes));
        let only_dropped = RowState {
            cells: vec![Cell::live(ColumnId(7), 1, vec![1])],
            ..RowState::default()
        };
        let bytes = encode_row(&only_dropped);
        assert_eq!(map.rewrite_value(&bytes).expect("decodes"), None);
    }

    #[test]
    fn two_columns_never_become_one() {
        assert!(
            ColumnMap::new(vec![(ColumnId(0), ColumnId(1)), (ColumnId(2), ColumnId(1))]).is_none()
        );
        assert!(
            ColumnMap::new(vec![(ColumnId(0), ColumnId(1)), (ColumnId(0), ColumnId(2))]).is_none()
        );
    }

    #[test]
    fn corrupt_values_are_errors() {
        let map = ColumnMap::default();
        assert!(map.rewrite_value(&[9, 9]).is_err());
    }
}
