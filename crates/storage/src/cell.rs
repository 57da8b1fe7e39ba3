//! The units of Cassandra's data model as the engine stores them (cells,
//! liveness, deletion times, rows) and the one function that reconciles them.
//!
//! Architecture invariant: `reconcile_cells`, `DeletionTime::supersedes` and
//! `LivenessInfo::supersedes` are the only last-write-wins rules in the code
//! base (and `ClusteringForm::merge` the only first-write-wins one). Reads,
//! the merge operator, the compaction filter, streaming and the test model
//! all call them.

use std::cmp::Ordering;

use rocksandra_data::{LocalTime, Timestamp};
use serde::{Deserialize, Serialize};

mod wire;

/// Stable identifier of a column within its table, so dropping and adding
/// columns needs no rewrite of stored data. A new column gets a new id,
/// except one added again under a dropped column's name and type, which
/// takes the dropped one's back (its older cells stay hidden, `DroppedCells`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ColumnId(pub u32);

/// The cells of a dropped column written at or before its drop: no read
/// sees them, even after a column of the same name (and id) is added again
/// (Cassandra's `dropped_columns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DroppedCells {
    pub column: ColumnId,
    pub dropped_time: Timestamp,
}

impl DroppedCells {
    fn hides(&self, cell: &Cell) -> bool {
        cell.column == self.column && cell.timestamp <= self.dropped_time
    }
}

/// A deletion: everything written at or before `marked_for_delete_at` is
/// shadowed. `local_deletion_time` is when it happened on the server clock,
/// from which `gc_grace_seconds` is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeletionTime {
    pub marked_for_delete_at: Timestamp,
    pub local_deletion_time: LocalTime,
}

impl DeletionTime {
    pub fn new(marked_for_delete_at: i64, local_deletion_time: i64) -> DeletionTime {
        DeletionTime {
            marked_for_delete_at: Timestamp(marked_for_delete_at),
            local_deletion_time: LocalTime(local_deletion_time),
        }
    }

    /// Cassandra's `DeletionTime.supersedes`: later marked-for-delete-at wins,
    /// then later local deletion time.
    pub fn supersedes(&self, other: &DeletionTime) -> bool {
        (self.marked_for_delete_at, self.local_deletion_time)
            > (other.marked_for_delete_at, other.local_deletion_time)
    }

    pub fn shadows(&self, timestamp: Timestamp) -> bool {
        timestamp <= self.marked_for_delete_at
    }

    /// Whether gc_grace has passed, so the deletion may be forgotten.
    pub fn is_purgeable(&self, now: LocalTime, gc_grace_seconds: i64) -> bool {
        self.local_deletion_time.plus_seconds(gc_grace_seconds) < now
    }

    /// The later of two optional deletions.
    pub fn merge(a: Option<DeletionTime>, b: Option<DeletionTime>) -> Option<DeletionTime> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.supersedes(&a) { b } else { a }),
            (a, None) => a,
            (None, b) => b,
        }
    }
}

/// The tombstones of one row a read meets (`RowState::tombstones`): its
/// cells deleted or expired (not shadowed by a deletion, not of a dropped
/// column), and whether it has a row or collection deletion of its own that
/// the outer deletion does not supersede.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowTombstones {
    pub dead_cells: u64,
    pub own_deletion: bool,
}

impl RowTombstones {
    /// What Cassandra counts: each dead cell; without any, 1 for a row
    /// with no live data (`has_live_data`, the read's verdict) but a
    /// deletion of its own. A row an outer deletion wholly covers counts
    /// nothing: the partition deletion is not counted, and a range
    /// tombstone is counted by its markers.
    pub fn count(self, has_live_data: bool) -> u64 {
        if self.dead_cells > 0 || has_live_data {
            self.dead_cells
        } else {
            u64::from(self.own_deletion)
        }
    }
}

/// The primary-key marker written by INSERT (not by UPDATE): it keeps a row
/// alive even when all its regular columns are null.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LivenessInfo {
    pub timestamp: Timestamp,
    /// TTL in seconds, 0 when the marker does not expire.
    pub ttl_seconds: i32,
    /// For an expiring marker: local time at which it expires.
    pub local_expiration_time: LocalTime,
}

impl LivenessInfo {
    pub fn new(timestamp: i64, ttl_seconds: i32, local_expiration_time: i64) -> LivenessInfo {
        LivenessInfo {
            timestamp: Timestamp(timestamp),
            ttl_seconds,
            local_expiration_time: LocalTime(local_expiration_time),
        }
    }

    /// A marker that is already dead (Cassandra's expired liveness, TTL
    /// `EXPIRED_TTL`): written at `timestamp` to end a row's liveness up to
    /// that time without a row deletion, so newer markers and older cells
    /// are untouched (how a materialized view retires a row whose key
    /// column changed).
    pub fn expired(timestamp: Timestamp, now: LocalTime) -> LivenessInfo {
        LivenessInfo {
            timestamp,
            ttl_seconds: Self::EXPIRED_TTL,
            local_expiration_time: now,
        }
    }

    /// Cassandra's `LivenessInfo.EXPIRED_LIVENESS_TTL`.
    pub const EXPIRED_TTL: i32 = i32::MAX;

    pub fn is_expired_marker(&self) -> bool {
        self.ttl_seconds == Self::EXPIRED_TTL
    }

    pub fn is_expiring(&self) -> bool {
        self.ttl_seconds > 0
    }

    pub fn is_live(&self, now: LocalTime) -> bool {
        !self.is_expiring() || now < self.local_expiration_time
    }

    /// Cassandra's `LivenessInfo.supersedes`: later timestamp wins; on a tie
    /// an expired marker beats any other, an expiring marker beats a plain
    /// one, and the later expiry wins.
    pub fn supersedes(&self, other: &LivenessInfo) -> bool {
        if self.timestamp != other.timestamp {
            return self.timestamp > other.timestamp;
        }
        if self.is_expired_marker() != other.is_expired_marker() {
            return self.is_expired_marker();
        }
        if self.is_expiring() != other.is_expiring() {
            return self.is_expiring();
        }
        self.local_expiration_time > other.local_expiration_time
    }

    pub fn merge(a: Option<LivenessInfo>, b: Option<LivenessInfo>) -> Option<LivenessInfo> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.supersedes(&a) { b } else { a }),
            (a, None) => a,
            (None, b) => b,
        }
    }
}

/// What a cell holds besides its value's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CellKind {
    /// A plain live value.
    Live,
    /// A value that turns into a tombstone at `local_expiration_time`.
    Expiring {
        ttl_seconds: i32,
        local_expiration_time: LocalTime,
    },
    /// A deleted value (its bytes are empty).
    Tombstone { local_deletion_time: LocalTime },
}

/// One cell: a simple column's value, or one element of a non-frozen
/// collection or UDT (then `path` names the element, in the order-preserving
/// encoding of its key, list timeuuid or field index).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "wire::CellFields")]
pub struct Cell {
    pub column: ColumnId,
    pub path: Option<Vec<u8>>,
    pub timestamp: Timestamp,
    pub kind: CellKind,
    pub value: Vec<u8>,
    /// The set element or map key as written, when `path` decodes to other
    /// bytes (a decimal `1.50` has the path of `1.5`: Cassandra compares
    /// them equal but shows the bytes of the cell that wins).
    pub written_key: Option<Vec<u8>>,
}

impl Cell {
    pub fn live(column: ColumnId, timestamp: i64, value: Vec<u8>) -> Cell {
        Cell {
            column,
            path: None,
            timestamp: Timestamp(timestamp),
            kind: CellKind::Live,
            value,
            written_key: None,
        }
    }

    pub fn expiring(
        column: ColumnId,
        timestamp: i64,
        ttl_seconds: i32,
        now: LocalTime,
        value: Vec<u8>,
    ) -> Cell {
        Cell {
            column,
            path: None,
            timestamp: Timestamp(timestamp),
            kind: CellKind::Expiring {
                ttl_seconds,
                local_expiration_time: now.plus_seconds(i64::from(ttl_seconds)),
            },
            value,
            written_key: None,
        }
    }

    pub fn tombstone(column: ColumnId, timestamp: i64, now: LocalTime) -> Cell {
        Cell {
            column,
            path: None,
            timestamp: Timestamp(timestamp),
            kind: CellKind::Tombstone {
                local_deletion_time: now,
            },
            value: Vec::new(),
            written_key: None,
        }
    }

    pub fn with_path(mut self, path: Vec<u8>) -> Cell {
        self.path = Some(path);
        self
    }

    /// A set element's or map key's path and written bytes
    /// (`layout::paths::element_key`).
    pub fn with_element_key(mut self, (path, written): (Vec<u8>, Option<Vec<u8>>)) -> Cell {
        self.path = Some(path);
        self.written_key = written;
        self
    }

    /// Local deletion time as Cassandra defines it: none for live cells, the
    /// expiry for expiring cells, the deletion for tombstones.
    pub fn local_deletion_time(&self) -> Option<LocalTime> {
        match self.kind {
            CellKind::Live => None,
            CellKind::Expiring {
                local_expiration_time,
                ..
            } => Some(local_expiration_time),
            CellKind::Tombstone {
                local_deletion_time,
            } => Some(local_deletion_time),
        }
    }

    pub fn is_live(&self, now: LocalTime) -> bool {
        match self.kind {
            CellKind::Live => true,
            CellKind::Expiring {
                local_expiration_time,
                ..
            } => now < local_expiration_time,
            CellKind::Tombstone { .. } => false,
        }
    }

    /// The TTL remaining at `now`, as `ttl()` reports it.
    pub fn remaining_ttl(&self, now: LocalTime) -> Option<i64> {
        match self.kind {
            CellKind::Expiring {
                local_expiration_time,
                ..
            } => Some((local_expiration_time.seconds() - now.seconds()).max(0)),
            _ => None,
        }
    }

    /// An expired cell is a tombstone; Cassandra dates that tombstone at the
    /// write (expiry minus TTL) so gc_grace runs from the write.
    pub fn expire(&self, now: LocalTime) -> Option<Cell> {
        match self.kind {
            CellKind::Expiring {
                ttl_seconds,
                local_expiration_time,
            } if local_expiration_time <= now => Some(Cell {
                column: self.column,
                path: self.path.clone(),
                timestamp: self.timestamp,
                kind: CellKind::Tombstone {
                    local_deletion_time: local_expiration_time
                        .plus_seconds(-i64::from(ttl_seconds)),
                },
                value: Vec::new(),
                written_key: None,
            }),
            _ => None,
        }
    }

    /// Sort key of cells within a row: column, then element path.
    pub fn position(&self) -> (ColumnId, Option<&[u8]>) {
        (self.column, self.path.as_deref())
    }
}

/// Which of two versions of the same cell wins: Cassandra's
/// `Cells.resolveRegular`. Returns `Ordering::Greater` when `left` wins.
pub fn reconcile_cells(left: &Cell, right: &Cell) -> Ordering {
    if left.timestamp != right.timestamp {
        return left.timestamp.cmp(&right.timestamp);
    }
    let left_ldt = left.local_deletion_time();
    let right_ldt = right.local_deletion_time();
    if left_ldt.is_some() || right_ldt.is_some() {
        // An expiring cell counts as a tombstone-to-be, so the outcome never
        // depends on the clock at reconciliation (CASSANDRA-14592).
        if left_ldt.is_some() != right_ldt.is_some() {
            return if left_ldt.is_some() {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        let left_tombstone = matches!(left.kind, CellKind::Tombstone { .. });
        let right_tombstone = matches!(right.kind, CellKind::Tombstone { .. });
        if left_tombstone != right_tombstone {
            return if left_tombstone {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        if left_ldt != right_ldt {
            return left_ldt.cmp(&right_ldt);
        }
    }
    // Equal keys written alike differ at most in their written bytes: the
    // larger wins, so that the choice is the same in any merge order.
    match left
        .value
        .cmp(&right.value)
        .then_with(|| left.written_key.cmp(&right.written_key))
    {
        Ordering::Less => Ordering::Less,
        _ => Ordering::Greater,
    }
}

/// The winner of two versions of the same cell.
pub fn reconcile<'a>(left: &'a Cell, right: &'a Cell) -> &'a Cell {
    if reconcile_cells(left, right) == Ordering::Less {
        right
    } else {
        left
    }
}

/// How a write spelled the row's clustering values where the key keeps only
/// their value (decimals: `1.50` and `1.5` are one row, Cassandra's
/// `DecimalType` compares by value but keeps the bytes written). Every
/// write to a row of a table with such a clustering column brings one,
/// stamped with its timestamp; reads show the earliest, as Cassandra shows
/// the form a row was first written with.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClusteringForm {
    pub timestamp: Timestamp,
    /// `(clustering column index, written bytes)` for each value whose
    /// bytes are not what its key decodes to, by index; empty when the
    /// write spelled every value as its key decodes.
    pub values: Vec<(u16, Vec<u8>)>,
}

impl ClusteringForm {
    /// The earlier of two forms; of two as early, the larger (values
    /// written otherwise beat none), so that the choice is the same in any
    /// merge order. A row read raw for repair comes back as a write stamped
    /// with its data's earliest timestamp, which may be later than its
    /// form's: a tie there keeps the spelled-out form.
    pub fn merge(a: Option<ClusteringForm>, b: Option<ClusteringForm>) -> Option<ClusteringForm> {
        match (a, b) {
            (Some(a), Some(b)) => Some(match a.timestamp.cmp(&b.timestamp) {
                Ordering::Less => a,
                Ordering::Greater => b,
                Ordering::Equal => a.max(b),
            }),
            (a, None) => a,
            (None, b) => b,
        }
    }

    /// Puts the written bytes in place of the decoded key values.
    pub fn apply(&self, clustering: &mut [Vec<u8>]) {
        for (index, bytes) in &self.values {
            if let Some(value) = clustering.get_mut(usize::from(*index)) {
                value.clone_from(bytes);
            }
        }
    }
}

/// The stored state of one row (or of the static row, a partition deletion or
/// a range tombstone, which are rows with only a deletion): the unit the merge
/// operator combines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowState {
    pub liveness: Option<LivenessInfo>,
    pub deletion: Option<DeletionTime>,
    /// Deletions of whole non-frozen collections/UDTs (e.g. from `SET m = {...}`).
    pub complex_deletions: Vec<(ColumnId, DeletionTime)>,
    /// Sorted by `Cell::position`, one version per position.
    pub cells: Vec<Cell>,
    /// How the row's clustering values were written, for tables whose
    /// clustering key may normalize them (`comparable::may_normalize`).
    pub clustering_form: Option<ClusteringForm>,
}

impl RowState {
    pub fn is_empty(&self) -> bool {
        self.liveness.is_none()
            && self.deletion.is_none()
            && self.complex_deletions.is_empty()
            && self.cells.is_empty()
    }

    /// Combines two versions of a row; commutative, associative and idempotent,
    /// which is what lets writes arrive in any order (merge operator, hints,
    /// repair, streaming). Shadowed data is not dropped here (see `purge`).
    pub fn merge(self, other: RowState) -> RowState {
        let mut complex = self.complex_deletions;
        for (column, deletion) in other.complex_deletions {
            match complex.iter_mut().find(|(c, _)| *c == column) {
                Some((_, existing)) => {
                    if deletion.supersedes(existing) {
                        *existing = deletion;
                    }
                }
                None => complex.push((column, deletion)),
            }
        }
        complex.sort_by_key(|(c, _)| *c);
        RowState {
            liveness: LivenessInfo::merge(self.liveness, other.liveness),
            deletion: DeletionTime::merge(self.deletion, other.deletion),
            complex_deletions: complex,
            cells: merge_cells(self.cells, other.cells),
            clustering_form: ClusteringForm::merge(self.clustering_form, other.clustering_form),
        }
    }

    /// Applies an outer deletion (partition or range tombstone) and this row's
    /// own deletions, expires cells at `now`, hides the cells of `dropped`
    /// columns, and returns what is still live. This is what a read sees.
    pub fn live_view(
        &self,
        outer: Option<DeletionTime>,
        dropped: &[DroppedCells],
        now: LocalTime,
    ) -> LiveRow {
        let deletion = DeletionTime::merge(outer, self.deletion);
        let cells = self
            .cells
            .iter()
            .filter(|c| self.shows(c, deletion, dropped, now))
            .cloned()
            .collect();
        LiveRow {
            liveness: self.live_liveness(deletion, now),
            cells,
        }
    }

    /// `live_view` of a row the caller no longer needs: its live cells are
    /// moved, not copied.
    pub fn into_live_view(
        mut self,
        outer: Option<DeletionTime>,
        dropped: &[DroppedCells],
        now: LocalTime,
    ) -> LiveRow {
        let deletion = DeletionTime::merge(outer, self.deletion);
        let mut cells = std::mem::take(&mut self.cells);
        cells.retain(|c| self.shows(c, deletion, dropped, now));
        LiveRow {
            liveness: self.live_liveness(deletion, now),
            cells,
        }
    }

    /// What a read of this row meets against the tombstone thresholds, as
    /// Cassandra's `ReadCommand` counts over a merged row
    /// (`RowTombstones::count`).
    pub fn tombstones(
        &self,
        outer: Option<DeletionTime>,
        dropped: &[DroppedCells],
        now: LocalTime,
    ) -> RowTombstones {
        let deletion = DeletionTime::merge(outer, self.deletion);
        let dead_cells = self
            .cells
            .iter()
            .filter(|c| {
                !c.is_live(now)
                    && !deletion.is_some_and(|d| d.shadows(c.timestamp))
                    && !self.complex_shadows(c)
                    && !dropped.iter().any(|d| d.hides(c))
            })
            .count() as u64;
        let outlives = |d: &DeletionTime| !outer.is_some_and(|o| o.supersedes(d));
        let own_row = self.deletion.as_ref().is_some_and(outlives);
        let own_collection = self
            .complex_deletions
            .iter()
            .any(|(_, d)| !deletion.is_some_and(|r| r.supersedes(d)));
        RowTombstones {
            dead_cells,
            own_deletion: own_row || own_collection,
        }
    }

    /// Whether a read at `now` sees `cell` under `deletion` (the row's and
    /// the outer one merged).
    fn shows(
        &self,
        cell: &Cell,
        deletion: Option<DeletionTime>,
        dropped: &[DroppedCells],
        now: LocalTime,
    ) -> bool {
        cell.is_live(now)
            && !deletion.is_some_and(|d| d.shadows(cell.timestamp))
            && !self.complex_shadows(cell)
            && !dropped.iter().any(|d| d.hides(cell))
    }

    fn live_liveness(
        &self,
        deletion: Option<DeletionTime>,
        now: LocalTime,
    ) -> Option<LivenessInfo> {
        self.liveness
            .filter(|l| !deletion.is_some_and(|d| d.shadows(l.timestamp)))
            .filter(|l| l.is_live(now))
    }

    fn complex_shadows(&self, cell: &Cell) -> bool {
        cell.path.is_some()
            && self
                .complex_deletions
                .iter()
                .any(|(column, d)| *column == cell.column && d.shadows(cell.timestamp))
    }

    /// What compaction keeps: drops cells shadowed by the row's own deletions,
    /// turns expired cells into tombstones, and forgets tombstones and
    /// deletions whose gc_grace has passed. Only valid on a complete history
    /// of the entry (a fully merged value).
    pub fn purge(self, now: LocalTime, gc_grace_seconds: i64) -> RowState {
        let deletion = self.deletion;
        let complex: Vec<(ColumnId, DeletionTime)> = self.complex_deletions.clone();
        let shadowed = |c: &Cell| {
            deletion.is_some_and(|d| d.shadows(c.timestamp))
                || (c.path.is_some()
                    && complex
                        .iter()
                        .any(|(col, d)| *col == c.column && d.shadows(c.timestamp)))
        };
        let cells = self
            .cells
            .into_iter()
            .filter(|c| !shadowed(c))
            .map(|c| c.expire(now).unwrap_or(c))
            .filter(|c| match c.kind {
                CellKind::Tombstone {
                    local_deletion_time,
                } => local_deletion_time.plus_seconds(gc_grace_seconds) >= now,
                _ => true,
            })
            .collect();
        let liveness = self
            .liveness
            .filter(|l| !deletion.is_some_and(|d| d.shadows(l.timestamp)))
            // An expired marker is a tombstone of the marker: keep it until
            // gc_grace so it still shadows older markers on other replicas.
            .filter(|l| {
                // An expired marker was dead when written: it lives gc_grace
                // from then.
                let ttl = if l.is_expired_marker() {
                    0
                } else {
                    i64::from(l.ttl_seconds)
                };
                !l.is_expiring()
                    || l.local_expiration_time.plus_seconds(gc_grace_seconds - ttl) >= now
            });
        RowState {
            liveness,
            deletion: deletion.filter(|d| !d.is_purgeable(now, gc_grace_seconds)),
            complex_deletions: complex
                .into_iter()
                .filter(|(_, d)| !d.is_purgeable(now, gc_grace_seconds))
                .collect(),
            cells,
            clustering_form: self.clustering_form,
        }
    }
}

/// Merges two cell lists sorted by position, reconciling equal positions.
fn merge_cells(left: Vec<Cell>, right: Vec<Cell>) -> Vec<Cell> {
    if right.is_empty() {
        return left;
    }
    if left.is_empty() {
        return right;
    }
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let order = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => l.position().cmp(&r.position()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        match order {
            Ordering::Less => out.extend(left.next()),
            Ordering::Greater => out.extend(right.next()),
            Ordering::Equal => {
                if let (Some(l), Some(r)) = (left.next(), right.next()) {
                    out.push(if reconcile_cells(&l, &r) == Ordering::Less {
                        r
                    } else {
                        l
                    });
                }
            }
        }
    }
    out
}

/// The live content of a row at read time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveRow {
    pub liveness: Option<LivenessInfo>,
    pub cells: Vec<Cell>,
}

impl LiveRow {
    /// A row exists when its primary-key marker or any cell is live.
    pub fn exists(&self) -> bool {
        self.liveness.is_some() || !self.cells.is_empty()
    }
}

impl RowState {
    /// Builds a row from cells in any order, reconciling duplicates, so the
    /// sorted-unique invariant of `cells` holds.
    pub fn from_parts(
        liveness: Option<LivenessInfo>,
        deletion: Option<DeletionTime>,
        complex_deletions: Vec<(ColumnId, DeletionTime)>,
        mut cells: Vec<Cell>,
    ) -> RowState {
        cells.sort_by(|a, b| a.position().cmp(&b.position()));
        let mut unique: Vec<Cell> = Vec::with_capacity(cells.len());
        for cell in cells {
            match unique.last_mut() {
                Some(last) if last.position() == cell.position() => {
                    if reconcile_cells(&cell, last) == Ordering::Greater {
                        *last = cell;
                    }
                }
                _ => unique.push(cell),
            }
        }
        let mut complex = RowState::default();
        for (column, d) in complex_deletions {
            complex = complex.merge(RowState {
                complex_deletions: vec![(column, d)],
                ..Default::default()
            });
        }
        RowState {
            liveness,
            deletion,
            complex_deletions: complex.complex_deletions,
            cells: unique,
            clustering_form: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: LocalTime = LocalTime(1_000_000);

    #[test]
    fn an_expired_marker_wins_its_tie_loses_to_newer_markers_and_lives_gc_grace() {
        let live = LivenessInfo::new(10, 0, 0);
        let expiring = LivenessInfo::new(10, 100, NOW.0 + 100);
        let expired = LivenessInfo::expired(Timestamp(10), NOW);
        assert!(!expired.is_live(NOW));
        assert!(expired.supersedes(&live) && expired.supersedes(&expiring));
        assert!(!live.supersedes(&expired) && !expiring.supersedes(&expired));
        let newer = LivenessInfo::new(11, 0, 0);
        assert_eq!(LivenessInfo::merge(Some(expired), Some(newer)), Some(newer));
        let row = RowState {
            liveness: Some(expired),
            ..RowState::default()
        };
        // Kept gc_grace from when it was written, then purged.
        assert_eq!(
            row.clone().purge(NOW.plus_seconds(99), 100).liveness,
            Some(expired)
        );
        assert_eq!(row.purge(NOW.plus_seconds(101), 100).liveness, None);
    }

    fn col(i: u32) -> ColumnId {
        ColumnId(i)
    }

    #[test]
    fn tombstones_met_are_cassandras_dead_cells_then_row_deletions() {
        let met = |row: &RowState, outer: Option<DeletionTime>| {
            let live = row.live_view(outer, &[], NOW).exists();
            row.tombstones(outer, &[], NOW).count(live)
        };
        // A live row with a deleted cell and an expired one: two.
        let mut row = RowState {
            liveness: Some(LivenessInfo::new(10, 0, 0)),
            cells: vec![
                Cell::live(col(1), 10, b"a".to_vec()),
                Cell::tombstone(col(2), 11, NOW),
                Cell::expiring(col(3), 10, 5, LocalTime(NOW.0 - 10), b"x".to_vec()),
            ],
            ..RowState::default()
        };
        assert_eq!(met(&row, None), 2);
        // A row deletion shadows them all: the row counts once.
        row.deletion = Some(DeletionTime::new(20, NOW.0));
        assert_eq!(met(&row, None), 1);
        // An outer deletion (a range or the partition) that supersedes the
        // row's own: nothing is counted here.
        assert_eq!(met(&row, Some(DeletionTime::new(30, NOW.0))), 0);
        // A row whose every cell expired counts its cells, not itself.
        let expired = RowState {
            liveness: Some(LivenessInfo::new(10, 5, NOW.0 - 5)),
            cells: vec![Cell::expiring(
                col(1),
                10,
                5,
                LocalTime(NOW.0 - 10),
                b"x".to_vec(),
            )],
            ..RowState::default()
        };
        assert_eq!(met(&expired, None), 1);
        // Live data and nothing dead: none.
        let plain = RowState {
            liveness: Some(LivenessInfo::new(10, 0, 0)),
            ..RowState::default()
        };
        assert_eq!(met(&plain, None), 0);
        // Cells of a dropped column are not met at all.
        let dropped = [DroppedCells {
            column: col(2),
            dropped_time: Timestamp(50),
        }];
        let with_tombstone = RowState {
            liveness: Some(LivenessInfo::new(10, 0, 0)),
            cells: vec![Cell::tombstone(col(2), 11, NOW)],
            ..RowState::default()
        };
        assert_eq!(
            with_tombstone.tombstones(None, &dropped, NOW).count(true),
            0
        );
    }

    #[test]
    fn higher_timestamp_wins_whatever_the_kind() {
        let live = Cell::live(col(1), 10, b"a".to_vec());
        let tomb = Cell::tombstone(col(1), 9, NOW);
        assert_eq!(reconcile(&live, &tomb), &live);
        assert_eq!(reconcile(&tomb, &live), &live);
    }

    #[test]
    fn equal_timestamps_tombstone_beats_expiring_beats_live() {
        let live = Cell::live(col(1), 10, b"z".to_vec());
        let expiring = Cell::expiring(col(1), 10, 100, NOW, b"a".to_vec());
        let tomb = Cell::tombstone(col(1), 10, NOW);
        assert_eq!(reconcile(&live, &expiring), &expiring);
        assert_eq!(reconcile(&expiring, &live), &expiring);
        assert_eq!(reconcile(&expiring, &tomb), &tomb);
        assert_eq!(reconcile(&tomb, &live), &tomb);
    }

    #[test]
    fn equal_timestamps_and_kinds_larger_value_wins() {
        let a = Cell::live(col(1), 10, b"a".to_vec());
        let b = Cell::live(col(1), 10, b"b".to_vec());
        assert_eq!(reconcile(&a, &b), &b);
        assert_eq!(reconcile(&b, &a), &b);
        // Unsigned byte comparison: 0x80 > 0x7f.
        let hi = Cell::live(col(1), 10, vec![0x80]);
        let lo = Cell::live(col(1), 10, vec![0x7f]);
        assert_eq!(reconcile(&lo, &hi), &hi);
    }

    #[test]
    fn expiring_cells_with_equal_timestamps_later_expiry_wins() {
        let short = Cell::expiring(col(1), 10, 5, NOW, b"z".to_vec());
        let long = Cell::expiring(col(1), 10, 50, NOW, b"a".to_vec());
        assert_eq!(reconcile(&short, &long), &long);
    }

    #[test]
    fn merge_is_commutative_and_row_deletion_shadows_older_cells() {
        let a = RowState {
            cells: vec![Cell::live(col(1), 5, b"x".to_vec())],
            ..Default::default()
        };
        let b = RowState {
            deletion: Some(DeletionTime::new(6, NOW.0)),
            cells: vec![Cell::live(col(2), 7, b"y".to_vec())],
            ..Default::default()
        };
        let ab = a.clone().merge(b.clone());
        let ba = b.merge(a);
        assert_eq!(ab, ba);
        let view = ab.live_view(None, &[], NOW);
        assert_eq!(view.cells, vec![Cell::live(col(2), 7, b"y".to_vec())]);
    }

    #[test]
    fn the_consuming_live_view_sees_what_the_borrowing_one_does() {
        let row = RowState::from_parts(
            Some(LivenessInfo::new(4, 0, 0)),
            Some(DeletionTime::new(5, NOW.0)),
            vec![(col(3), DeletionTime::new(8, NOW.0))],
            vec![
                Cell::live(col(1), 5, b"shadowed by the row".to_vec()),
                Cell::live(col(2), 9, b"live".to_vec()),
                Cell::live(col(3), 7, b"e".to_vec()).with_path(b"old".to_vec()),
                Cell::live(col(3), 9, b"e".to_vec()).with_path(b"new".to_vec()),
                Cell::expiring(col(4), 9, 10, NOW, b"expires".to_vec()),
                Cell::tombstone(col(5), 9, NOW),
            ],
        );
        for outer in [
            None,
            Some(DeletionTime::new(3, NOW.0)),
            Some(DeletionTime::new(9, NOW.0)),
        ] {
            for now in [NOW, NOW.plus_seconds(100)] {
                let borrowed = row.live_view(outer, &[], now);
                assert_eq!(row.clone().into_live_view(outer, &[], now), borrowed);
            }
        }
        let view = row.live_view(None, &[], NOW);
        assert_eq!(view.liveness, None);
        assert_eq!(view.cells.len(), 3);
    }

    fn form(timestamp: i64, values: &[(u16, &[u8])]) -> Option<ClusteringForm> {
        Some(ClusteringForm {
            timestamp: Timestamp(timestamp),
            values: values.iter().map(|(i, v)| (*i, v.to_vec())).collect(),
        })
    }

    fn assert_merge_laws(rows: &[RowState]) {
        for a in rows {
            assert_eq!(a.clone().merge(a.clone()), *a, "idempotent");
            for b in rows {
                let ab = a.clone().merge(b.clone());
                assert_eq!(ab, b.clone().merge(a.clone()), "commutative");
                for c in rows {
                    assert_eq!(
                        ab.clone().merge(c.clone()),
                        a.clone().merge(b.clone().merge(c.clone())),
                        "associative"
                    );
                }
            }
        }
    }

    #[test]
    fn the_earliest_clustering_form_wins_in_any_merge_order() {
        let row = |f| RowState {
            liveness: Some(LivenessInfo::new(1, 0, 0)),
            clustering_form: f,
            ..RowState::default()
        };
        let rows = [
            row(None),
            row(form(5, &[(0, b"1.50")])),
            row(form(5, &[(0, b"1.500")])),
            row(form(5, &[])),
            row(form(3, &[])),
            row(form(9, &[(0, b"1.5000"), (2, b"x")])),
        ];
        assert_merge_laws(&rows);
        let merged = rows
            .iter()
            .cloned()
            .fold(RowState::default(), RowState::merge);
        assert_eq!(merged.clustering_form, form(3, &[]));
        // As early: a spelled-out form beats none, then the larger.
        let tie = row(form(5, &[])).merge(row(form(5, &[(0, b"1.50")])));
        assert_eq!(tie.clustering_form, form(5, &[(0, b"1.50")]));
        let tie = row(form(5, &[(0, b"1.500")])).merge(row(form(5, &[(0, b"1.50")])));
        assert_eq!(tie.clustering_form, form(5, &[(0, b"1.500")]));
        // First written 1.50, then the same row as 1.5: 1.50 stays.
        let first = row(form(5, &[(0, b"1.50")])).merge(row(form(7, &[])));
        let mut clustering = vec![b"1.5".to_vec(), b"k".to_vec()];
        first.clustering_form.expect("form").apply(&mut clustering);
        assert_eq!(clustering, [b"1.50".to_vec(), b"k".to_vec()]);
        // The form survives a purge; it is no data of its own.
        let purged = row(form(5, &[])).purge(NOW, 0);
        assert_eq!(purged.clustering_form, form(5, &[]));
        assert!(row(None)
            .merge(RowState {
                clustering_form: form(1, &[]),
                ..RowState::default()
            })
            .liveness
            .is_some());
    }

    #[test]
    fn equal_cells_written_with_other_keys_reconcile_in_any_order() {
        let key = |written: Option<&[u8]>, ts: i64| {
            Cell::live(col(1), ts, b"v".to_vec())
                .with_element_key((b"p".to_vec(), written.map(<[u8]>::to_vec)))
        };
        let cells = [
            key(None, 5),
            key(Some(b"1.50"), 5),
            key(Some(b"1.500"), 5),
            key(Some(b"1.50"), 6),
            Cell::tombstone(col(1), 5, NOW).with_path(b"p".to_vec()),
        ];
        let rows: Vec<RowState> = cells
            .iter()
            .map(|c| RowState {
                cells: vec![c.clone()],
                ..RowState::default()
            })
            .collect();
        assert_merge_laws(&rows);
        // The later write's key is shown; on a tie of everything else, the
        // larger written key.
        assert_eq!(reconcile(&cells[0], &cells[3]), &cells[3]);
        assert_eq!(reconcile(&cells[1], &cells[2]), &cells[2]);
        assert_eq!(reconcile(&cells[2], &cells[1]), &cells[2]);
        assert_eq!(reconcile(&cells[0], &cells[1]), &cells[1]);
    }

    #[test]
    fn expired_cell_becomes_tombstone_dated_at_write() {
        let c = Cell::expiring(col(1), 10, 100, NOW, b"v".to_vec());
        assert!(c.expire(NOW).is_none());
        let later = NOW.plus_seconds(100);
        let t = c.expire(later).expect("expired");
        assert_eq!(
            t.kind,
            CellKind::Tombstone {
                local_deletion_time: NOW
            }
        );
        assert!(!c.is_live(later));
    }

    #[test]
    fn purge_forgets_tombstones_only_after_gc_grace() {
        let row = RowState {
            cells: vec![Cell::tombstone(col(1), 10, NOW)],
            deletion: Some(DeletionTime::new(5, NOW.0)),
            ..Default::default()
        };
        let kept = row.clone().purge(NOW.plus_seconds(10), 10);
        assert_eq!(kept.cells.len(), 1);
        assert!(kept.deletion.is_some());
        let gone = row.purge(NOW.plus_seconds(11), 10);
        assert!(gone.is_empty());
    }
}
