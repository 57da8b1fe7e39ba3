//! `KvEngine`: the engine API implemented once over any `KvStore`. It turns
//! mutations into merge operands and assembles reads from entries; both
//! backends (RocksDB and in-memory) share this code and so its semantics.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use rocksandra_data::{LocalTime, Token};

use crate::api::*;
use crate::cell::{ClusteringForm, DeletionTime, LiveRow, RowState};
use crate::import::{ImportCounts, ImportSource};
use crate::kv::{KeyRange, KvOp, KvStore};
use crate::layout::keys::{self, DecodedKey};
use crate::layout::values::{decode_row, encode_row};
use crate::layout::CorruptData;

pub mod group;
mod point_cache;
mod purge;

use group::{Deferred, WriteGroup};

use point_cache::PointCache;

pub struct KvEngine<S: KvStore> {
    store: S,
    tables: RwLock<HashMap<TableId, Arc<TableSpec>>>,
    /// Shared by every write; held exclusively only to remove a tombstone
    /// entry after its deletion was pushed down (see `purge`).
    write_gate: RwLock<()>,
    /// Set after a failed write: the engine refuses writes from then on.
    failure: Mutex<Option<String>>,
    /// Recently read partitions of tables without clustering columns; every
    /// store write goes through `apply`, which keeps it coherent.
    point_cache: Option<PointCache>,
    /// Which engine a `WriteGroup`'s entries belong to.
    id: u64,
}

/// A written row names every clustering column, or, in a table whose rows
/// may have a clustering prefix, at least the first.
fn check_row_clustering(spec: &TableSpec, values: usize) -> Result<()> {
    let columns = spec.clustering.len();
    let allowed = if spec.options.clustering_prefix_rows && columns > 0 {
        (1..=columns).contains(&values)
    } else {
        values == columns
    };
    if allowed {
        return Ok(());
    }
    Err(StorageError::Invalid(format!(
        "row has {values} clustering values, table has {columns} clustering columns"
    )))
}

impl<S: KvStore> KvEngine<S> {
    pub fn new(store: S) -> KvEngine<S> {
        KvEngine {
            id: group::engine_id(),
            store,
            tables: RwLock::new(HashMap::new()),
            write_gate: RwLock::new(()),
            failure: Mutex::new(None),
            point_cache: None,
        }
    }

    /// The engine with a point cache of at most `bytes` (none if 0).
    pub fn with_point_cache(mut self, bytes: usize) -> KvEngine<S> {
        self.point_cache = PointCache::new(bytes);
        self
    }

    /// Writes `ops` to the store: the one way the engine changes stored
    /// entries, so the point cache forgets every partition they touch.
    fn apply(&self, ops: &[(TableId, KvOp)]) -> Result<()> {
        let touched = self.point_cache.as_ref().map(|_| touched_partitions(ops));
        let written = self.store.write(ops);
        if let (Some(cache), Some((partitions, ranges))) = (&self.point_cache, touched) {
            for (table, prefix) in &partitions {
                cache.invalidate(*table, prefix);
            }
            if ranges {
                cache.clear();
            }
        }
        written
    }

    /// Writes entries to the store now, under the write gate; an IO failure
    /// makes the engine read-only (a full disk does not: `NoSpace`).
    fn write_now(&self, ops: &[(TableId, KvOp)]) -> Result<()> {
        let _shared = self.gate()?;
        self.apply(ops).inspect_err(|e| {
            if matches!(e, StorageError::Io { .. }) {
                self.fail(e.to_string());
            }
        })
    }

    /// Writes this engine's entries queued in `group` as one store write.
    /// If that fails for a reason other than IO, each request's entries
    /// are written alone, so a request fails only for its own entries.
    fn write_group(&self, group: &mut WriteGroup) {
        let Some(taken) = group.take(self.id) else {
            return;
        };
        let error = match self.write_now(&taken.ops) {
            Ok(()) => return,
            Err(e) => e,
        };
        let alone = !error.is_storage_failure();
        for (request, ops) in taken.per_request() {
            let outcome = if alone {
                self.write_now(&ops)
            } else {
                Err(error.clone())
            };
            if let Err(e) = outcome {
                group.failed(request, e);
            }
        }
    }

    /// Before a read on this thread by read-before-write work (which holds
    /// `DirectWrites`): writes the entries the running request's group
    /// holds for this engine, so the read sees them. A plain read leaves
    /// them queued (`engine::group`).
    fn settle_deferred(&self) {
        if group::direct_held() {
            group::with_lent(self.id, |group| self.write_group(group));
        }
    }

    /// Tells the point cache that stored entries changed in bulk.
    fn changed_in_bulk(&self) {
        if let Some(cache) = &self.point_cache {
            cache.clear();
        }
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    fn spec(&self, table: TableId) -> Result<Arc<TableSpec>> {
        self.tables
            .read()
            .map_err(|_| StorageError::ReadOnly("table registry lock poisoned".into()))?
            .get(&table)
            .cloned()
            .ok_or(StorageError::UnknownTable(table))
    }

    /// Puts the engine in the read-only state; reported on every later write.
    pub fn fail(&self, reason: String) {
        if let Ok(mut failure) = self.failure.lock() {
            failure.get_or_insert(reason);
        }
    }

    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    fn mutation_ops(&self, m: &Mutation, ops: &mut Vec<(TableId, KvOp)>) -> Result<()> {
        let spec = self.spec(m.table)?;
        let prefix = keys::partition_prefix(m.partition.token, &m.partition.key);
        let mut merge = |key: Vec<u8>, row: &RowState| {
            ops.push((
                m.table,
                KvOp::Merge {
                    key,
                    value: encode_row(row),
                },
            ));
        };
        if let Some(deletion) = m.partition_deletion {
            let row = RowState {
                deletion: Some(deletion),
                ..Default::default()
            };
            merge(keys::partition_header_key(&prefix), &row);
        }
        for rt in &m.range_tombstones {
            if rt.start.exact_row || rt.end.exact_row {
                // Exact-row bounds are for reads; a stored bound covers a prefix.
                return Err(StorageError::Invalid(
                    "range tombstone bounded at a row".into(),
                ));
            }
            let key = keys::range_tombstone_key(&prefix, &spec.clustering, &rt.start, &rt.end)?;
            let row = RowState {
                deletion: Some(rt.deletion),
                ..Default::default()
            };
            merge(key, &row);
        }
        if let Some(update) = &m.static_row {
            merge(keys::static_row_key(&prefix), &row_state(update));
        }
        let may_normalize = keys::may_normalize(&spec.clustering);
        let mut formed = HashSet::new();
        for (clustering, update) in &m.rows {
            check_row_clustering(&spec, clustering.len())?;
            let key = keys::row_key(&prefix, &spec.clustering, clustering)?;
            let mut row = row_state(update);
            // A row written twice by one mutation (a batch) keeps the form
            // of its first statement, as Cassandra applies them in order.
            if may_normalize && formed.insert(key.clone()) {
                row.clustering_form = clustering_form(&spec, clustering, update)?;
            }
            merge(key, &row);
        }
        Ok(())
    }

    /// The shared side of the write gate, held while a write is applied.
    fn gate(&self) -> Result<std::sync::RwLockReadGuard<'_, ()>> {
        self.write_gate
            .read()
            .map_err(|_| StorageError::ReadOnly("write gate poisoned".into()))
    }

    fn check_writable(&self) -> Result<()> {
        match self.failure() {
            Some(reason) => Err(StorageError::ReadOnly(reason)),
            None => Ok(()),
        }
    }

    /// The one partition read behind `read_partition` and `read_raw`: hands
    /// every row entry `read` selects to `visit`, in the order read, until
    /// `row_limit` of them were live at `now`, or until the read met more
    /// than `stop_past` tombstones (`PartitionMet::tombstones`; the rows
    /// are then incomplete, as Cassandra's read stops with
    /// TombstoneOverwhelmingException).
    fn read_rows(
        &self,
        spec: &TableSpec,
        read: &PartitionRead,
        now: LocalTime,
        (keep, stop_past): (Keep, u64),
        visit: &mut dyn FnMut(StoredRow),
    ) -> Result<PartitionMet> {
        self.settle_deferred();
        let head = PartitionHead {
            keep,
            ..Default::default()
        };
        if spec.clustering.is_empty() {
            let keys = keys::PointKeys::new(read.partition.token, &read.partition.key);
            return self.read_single_row(spec, read, &keys, now, head, visit);
        }
        let prefix = keys::partition_prefix(read.partition.token, &read.partition.key);
        // One read of the store: the head entries (partition deletion, static
        // row, range tombstones), then each clustering slice.
        let mut ranges = vec![(
            KeyRange {
                start: keys::with_kind(&prefix, keys::KIND_PARTITION_HEADER),
                end: Some(keys::with_kind(&prefix, keys::KIND_ROW)),
            },
            false,
        )];
        let slices: Box<dyn Iterator<Item = &Slice>> = if read.reversed {
            Box::new(read.slices.iter().rev())
        } else {
            Box::new(read.slices.iter())
        };
        let mut head = head;
        for slice in slices {
            let (start, end) =
                keys::row_slice(&prefix, &spec.clustering, &slice.start, &slice.end)?;
            head.slices
                .push((start[prefix.len()..].to_vec(), end[prefix.len()..].to_vec()));
            ranges.push((
                KeyRange {
                    start,
                    end: Some(end),
                },
                read.reversed,
            ));
        }
        let within = KeyRange {
            start: keys::with_kind(&prefix, keys::KIND_PARTITION_HEADER),
            end: Some(keys::with_kind(&prefix, keys::KIND_END)),
        };
        let mut head_done = false;
        let mut live_rows = 0;
        let mut row_tombstones = 0u64;
        let mut error = None;
        let limit = read.row_limit;
        self.store
            .scan_ranges(spec.id, &within, &ranges, &mut |i, key, value| {
                let step = if i == 0 {
                    head.absorb(spec, &key[prefix.len()..], value)
                } else {
                    let finished = if head_done {
                        Ok(())
                    } else {
                        head_done = true;
                        head.finish(spec, now)
                    };
                    finished
                        .and_then(|()| head.row(spec, key, value, now))
                        .map(|row| {
                            live_rows += usize::from(row.live.exists());
                            row_tombstones += row.tombstones;
                            visit(row);
                        })
                };
                match step {
                    Err(e) => {
                        error = Some(e);
                        ControlFlow::Break(())
                    }
                    Ok(()) if limit > 0 && live_rows >= limit => ControlFlow::Break(()),
                    Ok(()) if head.tombstones + row_tombstones > stop_past => {
                        ControlFlow::Break(())
                    }
                    Ok(()) => ControlFlow::Continue(()),
                }
            })?;
        if let Some(e) = error {
            return Err(e.into());
        }
        if !head_done {
            head.finish(spec, now)?;
        }
        Ok(PartitionMet {
            tombstones: head.tombstones + row_tombstones,
            head,
            live_rows,
            limit_reached: limit > 0 && live_rows >= limit,
        })
    }

    /// `read_rows` for a table without clustering columns. Its partitions
    /// hold at most a header (the partition deletion) and one row: no static
    /// row, no range tombstones. Two point lookups in one batch answer the
    /// read, without an iterator over every sorted run.
    fn read_single_row(
        &self,
        spec: &TableSpec,
        read: &PartitionRead,
        keys: &keys::PointKeys,
        now: LocalTime,
        mut head: PartitionHead,
        visit: &mut dyn FnMut(StoredRow),
    ) -> Result<PartitionMet> {
        let (prefix, header, row) = (keys.prefix(), keys.header(), keys.row());
        // A slice of everything (the point read's) selects the row without
        // its bounds' keys being built.
        let mut selected = read.slices.iter().any(selects_everything);
        if !selected {
            for slice in &read.slices {
                let (start, end) =
                    keys::row_slice(prefix, &spec.clustering, &slice.start, &slice.end)?;
                selected |= start.as_slice() <= row && row < end.as_slice();
            }
        }
        let mut stored_row = None;
        let mut error = None;
        let mut visit_entry = |i: usize, value: &[u8]| {
            let step = if i == 0 {
                head.absorb(spec, &header[prefix.len()..], value)
            } else if selected {
                head.finish(spec, now)
                    .and_then(|()| head.row(spec, row, value, now))
                    .map(|r| stored_row = Some(r))
            } else {
                Ok(())
            };
            if let Err(e) = step {
                error.get_or_insert(e);
            }
        };
        match self
            .point_cache
            .as_ref()
            .map(|c| (c, c.lookup(spec.id, prefix)))
        {
            Some((_, Ok(cached))) => {
                for (i, value) in [&cached.header, &cached.row].into_iter().enumerate() {
                    if let Some(value) = value {
                        visit_entry(i, value);
                    }
                }
            }
            Some((cache, Err(ticket))) => {
                let (mut found_header, mut found_row) = (None, None);
                self.store
                    .get_many(spec.id, &[header, row], &mut |i, value| {
                        match i {
                            0 => found_header = Some(value.to_vec()),
                            _ => found_row = Some(value.to_vec()),
                        };
                        visit_entry(i, value);
                    })?;
                cache.fill(ticket, found_header, found_row);
            }
            None => {
                let wanted: &[&[u8]] = if selected { &[header, row] } else { &[header] };
                self.store.get_many(spec.id, wanted, &mut visit_entry)?;
            }
        }
        if let Some(e) = error {
            return Err(e.into());
        }
        head.finish(spec, now)?;
        let mut live_rows = 0;
        let mut tombstones = 0;
        if let Some(r) = stored_row {
            live_rows = usize::from(r.live.exists());
            tombstones = r.tombstones;
            visit(r);
        }
        let limit = read.row_limit;
        Ok(PartitionMet {
            tombstones,
            head,
            live_rows,
            limit_reached: limit > 0 && live_rows >= limit,
        })
    }

    /// One page of a scan, and the tombstones it met; it stops once they
    /// are more than `stop_past` (the page is then incomplete).
    fn scan_partitions(
        &self,
        spec: &TableSpec,
        scan: &RangeScan,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(ScanPage, u64)> {
        self.settle_deferred();
        let mut page = ScanPage {
            partitions: Vec::new(),
            next: None,
        };
        let mut returned = 0usize;
        let mut resumed_tombstones = 0;
        let mut start = keys::token_start(scan.token_start);
        if let Some(position) = &scan.resume_after {
            let prefix = keys::partition_prefix(position.partition.token, &position.partition.key);
            if let Some(clustering) = &position.clustering {
                let read = PartitionRead {
                    table: scan.table,
                    partition: position.partition.clone(),
                    slices: vec![Slice {
                        start: ClusteringBound::after_row(clustering.clone()),
                        end: ClusteringBound::unbounded(),
                    }],
                    reversed: false,
                    // The rest of a partition carries its static row too:
                    // its rows show (and filter on) the static values.
                    include_static: scan.include_static,
                    row_limit: remaining_in_partition(scan, position.rows_returned_in_partition)
                        .min(limit_or_max(scan.row_limit)),
                };
                let (partition, tombstones) = self.read_partition_counted(&read, now, stop_past)?;
                resumed_tombstones = tombstones;
                if tombstones > stop_past {
                    return Ok((page, tombstones));
                }
                if !partition.rows.is_empty() {
                    returned += partition.rows.len();
                    let rows_in_partition =
                        position.rows_returned_in_partition + partition.rows.len();
                    if scan.row_limit > 0 && returned >= scan.row_limit {
                        page.next = partition.rows.last().map(|r| ScanPosition {
                            partition: position.partition.clone(),
                            clustering: Some(r.clustering.clone()),
                            rows_returned_in_partition: rows_in_partition,
                        });
                        page.partitions.push(partition);
                        return Ok((page, resumed_tombstones));
                    }
                    page.partitions.push(partition);
                }
            }
            start = keys::with_kind(&prefix, keys::KIND_END);
        }
        let range = KeyRange {
            start,
            end: keys::token_end(scan.token_end),
        };
        let mut state = ScanState {
            stop_past: stop_past - resumed_tombstones,
            ..ScanState::default()
        };
        let mut error = None;
        self.store.scan(
            spec.id,
            &range,
            false,
            &mut |key, value| match state.absorb(
                spec,
                scan,
                now,
                key,
                value,
                &mut page,
                &mut returned,
            ) {
                Ok(flow) => flow,
                Err(e) => {
                    error = Some(e);
                    ControlFlow::Break(())
                }
            },
        )?;
        if let Some(e) = error {
            return Err(e);
        }
        if page.next.is_none() {
            state.finish_partition(spec, now, &mut page, &mut returned, scan)?;
        }
        Ok((page, resumed_tombstones + state.met()))
    }

    fn key_ranges(range: TokenRange) -> Vec<KeyRange> {
        let start = |t: Token| {
            if t.0 == i64::MAX {
                None
            } else {
                Some(keys::token_start(Token(t.0 + 1)))
            }
        };
        let (s, e) = (range.start_exclusive, range.end_inclusive);
        if s < e {
            start(s)
                .map(|start| KeyRange {
                    start,
                    end: keys::token_end(e),
                })
                .into_iter()
                .collect()
        } else {
            let mut ranges = vec![KeyRange {
                start: Vec::new(),
                end: keys::token_end(e),
            }];
            if let Some(start) = start(s) {
                ranges.push(KeyRange { start, end: None });
            }
            ranges
        }
    }
}

fn limit_or_max(limit: usize) -> usize {
    if limit == 0 {
        usize::MAX
    } else {
        limit
    }
}

fn remaining_in_partition(scan: &RangeScan, already: usize) -> usize {
    if scan.per_partition_limit == 0 {
        usize::MAX
    } else {
        scan.per_partition_limit.saturating_sub(already)
    }
}

fn row_state(update: &RowUpdate) -> RowState {
    RowState::from_parts(
        update.liveness,
        update.deletion,
        update.complex_deletions.clone(),
        update.cells.clone(),
    )
}

/// How `update` spells the row's clustering values, stamped with its
/// earliest timestamp (`ClusteringForm`); none for an empty update.
fn clustering_form(
    spec: &TableSpec,
    clustering: &[Vec<u8>],
    update: &RowUpdate,
) -> Result<Option<ClusteringForm>> {
    let timestamps = update
        .liveness
        .map(|l| l.timestamp)
        .into_iter()
        .chain(update.deletion.map(|d| d.marked_for_delete_at))
        .chain(
            update
                .complex_deletions
                .iter()
                .map(|(_, d)| d.marked_for_delete_at),
        )
        .chain(update.cells.iter().map(|c| c.timestamp));
    let Some(timestamp) = timestamps.min() else {
        return Ok(None);
    };
    Ok(Some(ClusteringForm {
        timestamp,
        values: keys::written_forms(&spec.clustering, clustering)?,
    }))
}

/// The stored state of a row as a write that reproduces it (`read_raw`).
fn row_update(state: RowState) -> RowUpdate {
    RowUpdate {
        liveness: state.liveness,
        deletion: state.deletion,
        complex_deletions: state.complex_deletions,
        cells: state.cells,
    }
}

/// The deletions of one partition that reach its rows: the partition
/// deletion and range tombstones. Reads apply all of them; the purge pushes
/// down those past gc_grace.
#[derive(Default)]
struct Coverage {
    partition: Option<DeletionTime>,
    /// Range tombstones as encoded (start, end) bounds over the row-key suffix.
    ranges: Vec<(Vec<u8>, Vec<u8>, DeletionTime)>,
}

impl Coverage {
    fn add_range(
        &mut self,
        spec: &TableSpec,
        start: &ClusteringBound,
        end: &ClusteringBound,
        deletion: DeletionTime,
    ) -> Result<(), CorruptData> {
        let mut lo = vec![keys::KIND_ROW];
        keys::encode_bound(&spec.clustering, start, true, &mut lo)?;
        let mut hi = vec![keys::KIND_ROW];
        keys::encode_bound(&spec.clustering, end, false, &mut hi)?;
        self.ranges.push((lo, hi, deletion));
        Ok(())
    }

    /// The deletion covering a row, given its key suffix after the prefix.
    fn covering(&self, row_suffix: &[u8]) -> Option<DeletionTime> {
        self.ranges
            .iter()
            .filter(|(lo, hi, _)| lo.as_slice() < row_suffix && row_suffix < hi.as_slice())
            .fold(self.partition, |acc, (_, _, d)| {
                DeletionTime::merge(acc, Some(*d))
            })
    }
}

/// What a partition read keeps of each row entry besides its live view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Keep {
    /// Nothing: the live cells are moved out of the decoded entry.
    #[default]
    LiveOnly,
    /// The decoded entry too (`read_raw`), so the live cells are copies.
    StoredState,
}

/// Partition-level state that applies to every row read from the partition.
#[derive(Default)]
struct PartitionHead {
    keep: Keep,
    /// The read's clustering slices as key suffixes (after the partition
    /// prefix); empty: the whole partition.
    slices: Vec<(Vec<u8>, Vec<u8>)>,
    /// Tombstones met among the head entries (counted by `finish`): two
    /// markers per range tombstone that reaches into the slices read and
    /// that the partition deletion does not supersede (Cassandra's open and
    /// close markers), the static row's dead cells (counted whatever
    /// columns are selected, as Cassandra reads the static row whole).
    tombstones: u64,
    coverage: Coverage,
    /// The range tombstones of `coverage` as stored, for `read_raw`.
    range_tombstones: Vec<RangeTombstone>,
    static_row: Option<RowState>,
    static_live: Option<LiveRow>,
}

impl PartitionHead {
    /// Takes one header, static or tombstone entry (key without the prefix).
    fn absorb(&mut self, spec: &TableSpec, rest: &[u8], value: &[u8]) -> Result<(), CorruptData> {
        let row = decode_row(value)?;
        match keys::decode_after_prefix(&spec.clustering, rest)? {
            DecodedKey::PartitionHeader => self.coverage.partition = row.deletion,
            DecodedKey::StaticRow => self.static_row = Some(row),
            DecodedKey::RangeTombstone { start, end } => {
                if let Some(deletion) = row.deletion {
                    self.coverage.add_range(spec, &start, &end, deletion)?;
                    self.range_tombstones.push(RangeTombstone {
                        start,
                        end,
                        deletion,
                    });
                }
            }
            DecodedKey::Row { .. } => {
                return Err(CorruptData::new("key", "row among partition head entries"))
            }
        }
        Ok(())
    }

    fn finish(&mut self, spec: &TableSpec, now: LocalTime) -> Result<(), CorruptData> {
        let outer = self.coverage.partition;
        let read = |lo: &Vec<u8>, hi: &Vec<u8>| {
            self.slices.is_empty() || self.slices.iter().any(|(s, e)| lo < e && s < hi)
        };
        let markers = self
            .coverage
            .ranges
            .iter()
            .filter(|(lo, hi, d)| !outer.is_some_and(|p| p.supersedes(d)) && read(lo, hi))
            .count() as u64;
        self.tombstones += 2 * markers;
        self.static_live = self
            .static_row
            .as_ref()
            .map(|s| s.live_view(outer, &spec.dropped, now))
            .filter(|s| s.exists());
        if let Some(row) = &self.static_row {
            let live = self.static_live.is_some();
            self.tombstones += row.tombstones(outer, &spec.dropped, now).count(live);
        }
        Ok(())
    }

    /// Decodes a row entry of the partition and what of it is live at `now`.
    fn row(
        &self,
        spec: &TableSpec,
        key: &[u8],
        value: &[u8],
        now: LocalTime,
    ) -> Result<StoredRow, CorruptData> {
        let prefix_len = keys::stored_prefix_len(key)?;
        let suffix = &key[prefix_len..];
        let DecodedKey::Row { mut clustering } =
            keys::decode_after_prefix(&spec.clustering, suffix)?
        else {
            return Err(CorruptData::new("key", "expected a row"));
        };
        let state = decode_row(value)?;
        if let Some(form) = &state.clustering_form {
            form.apply(&mut clustering);
        }
        let outer = self.coverage.covering(suffix);
        let met = state.tombstones(outer, &spec.dropped, now);
        let (state, mut live) = match self.keep {
            Keep::LiveOnly => (
                RowState::default(),
                state.into_live_view(outer, &spec.dropped, now),
            ),
            Keep::StoredState => {
                let live = state.live_view(outer, &spec.dropped, now);
                (state, live)
            }
        };
        if spec.options.strict_liveness && live.liveness.is_none() {
            live = LiveRow::default();
        }
        let tombstones = met.count(live.exists());
        Ok(StoredRow {
            clustering,
            state,
            live,
            tombstones,
        })
    }
}

/// A row entry as a partition read meets it.
struct StoredRow {
    clustering: Vec<Vec<u8>>,
    /// The decoded entry when the read keeps it (`Keep::StoredState`),
    /// empty otherwise.
    state: RowState,
    /// What a read sees at `now`, the partition's deletions applied.
    live: LiveRow,
    /// What the tombstone thresholds count in it (`RowTombstones::count`).
    tombstones: u64,
}

impl StoredRow {
    fn into_live(self) -> Option<Row> {
        self.live.exists().then_some(Row {
            clustering: self.clustering,
            content: self.live,
        })
    }
}

/// What a partition read met besides the rows it handed on.
struct PartitionMet {
    /// Tombstones met: the head's and the rows'.
    tombstones: u64,
    head: PartitionHead,
    live_rows: usize,
    limit_reached: bool,
}

/// The partition being assembled by a range scan.
#[derive(Default)]
struct ScanState {
    prefix: Vec<u8>,
    partition: Option<PartitionKey>,
    head: PartitionHead,
    head_done: bool,
    rows: Vec<Row>,
    /// Tombstones met in the partitions before this one.
    tombstones: u64,
    /// The scan stops once it has met more tombstones than this.
    stop_past: u64,
}

impl ScanState {
    /// Tombstones met so far, over every partition.
    fn met(&self) -> u64 {
        self.tombstones + self.head.tombstones
    }

    /// Stops the scan once it met more tombstones than it may.
    fn past_the_limit(&self) -> ControlFlow<()> {
        if self.met() > self.stop_past {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn absorb(
        &mut self,
        spec: &TableSpec,
        scan: &RangeScan,
        now: LocalTime,
        key: &[u8],
        value: &[u8],
        page: &mut ScanPage,
        returned: &mut usize,
    ) -> Result<ControlFlow<()>> {
        let (token, partition_key, prefix_len) = keys::split_partition(key)?;
        if self.partition.is_none() || key[..prefix_len] != self.prefix[..] {
            self.finish_partition(spec, now, page, returned, scan)?;
            if scan.row_limit > 0 && *returned >= scan.row_limit {
                return Ok(ControlFlow::Break(()));
            }
            *self = ScanState {
                prefix: key[..prefix_len].to_vec(),
                partition: Some(PartitionKey {
                    token,
                    key: partition_key,
                }),
                tombstones: self.met(),
                stop_past: self.stop_past,
                ..Default::default()
            };
        }
        let rest = &key[prefix_len..];
        if rest.first() != Some(&keys::KIND_ROW) {
            self.head.absorb(spec, rest, value)?;
            return Ok(self.past_the_limit());
        }
        if !self.head_done {
            self.head.finish(spec, now)?;
            self.head_done = true;
        }
        if scan.per_partition_limit > 0 && self.rows.len() >= scan.per_partition_limit {
            return Ok(ControlFlow::Continue(()));
        }
        let row = self.head.row(spec, key, value, now)?;
        self.tombstones += row.tombstones;
        if self.met() > self.stop_past {
            return Ok(ControlFlow::Break(()));
        }
        if let Some(row) = row.into_live() {
            self.rows.push(row);
            if scan.row_limit > 0 && *returned + self.rows.len() >= scan.row_limit {
                let last = self.rows.last().map(|r| r.clustering.clone());
                let rows_in_partition = self.rows.len();
                let partition = self.partition.clone();
                self.finish_partition(spec, now, page, returned, scan)?;
                page.next = partition.map(|partition| ScanPosition {
                    partition,
                    clustering: last,
                    rows_returned_in_partition: rows_in_partition,
                });
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    fn finish_partition(
        &mut self,
        spec: &TableSpec,
        now: LocalTime,
        page: &mut ScanPage,
        returned: &mut usize,
        scan: &RangeScan,
    ) -> Result<()> {
        let Some(key) = self.partition.take() else {
            return Ok(());
        };
        if !self.head_done {
            self.head.finish(spec, now)?;
            self.head_done = true;
        }
        let static_row = if scan.include_static {
            self.head.static_live.take()
        } else {
            None
        };
        let rows = std::mem::take(&mut self.rows);
        if rows.is_empty() && static_row.is_none() {
            return Ok(());
        }
        *returned += rows.len().max(1);
        if rows.is_empty() && scan.row_limit > 0 && *returned >= scan.row_limit {
            page.next = Some(ScanPosition {
                partition: key.clone(),
                clustering: None,
                rows_returned_in_partition: 1,
            });
        }
        page.partitions.push(Partition {
            key,
            static_row,
            rows,
        });
        Ok(())
    }
}

impl<S: KvStore> Engine for KvEngine<S> {
    fn create_table(&self, spec: TableSpec) -> Result<()> {
        let mut tables = self
            .tables
            .write()
            .map_err(|_| StorageError::ReadOnly("table registry lock poisoned".into()))?;
        if tables.contains_key(&spec.id) {
            return Err(StorageError::TableExists(spec.id));
        }
        self.store.create_table(spec.id, &spec.options)?;
        tables.insert(spec.id, Arc::new(spec));
        Ok(())
    }

    fn alter_table(&self, spec: TableSpec) -> Result<()> {
        let current = self.spec(spec.id)?;
        if !keys::same_clustering_order(&current.clustering, &spec.clustering) {
            return Err(StorageError::Invalid(
                "clustering columns of a table cannot change".into(),
            ));
        }
        self.store.set_options(spec.id, &spec.options)?;
        self.changed_in_bulk();
        self.tables
            .write()
            .map_err(|_| StorageError::ReadOnly("table registry lock poisoned".into()))?
            .insert(spec.id, Arc::new(spec));
        Ok(())
    }

    fn drop_table(&self, table: TableId) -> Result<()> {
        self.spec(table)?;
        self.store.drop_table(table)?;
        self.changed_in_bulk();
        self.tables
            .write()
            .map_err(|_| StorageError::ReadOnly("table registry lock poisoned".into()))?
            .remove(&table);
        Ok(())
    }

    fn truncate(&self, table: TableId) -> Result<()> {
        self.check_writable()?;
        self.spec(table)?;
        let truncated = self.store.truncate(table);
        self.changed_in_bulk();
        truncated
    }

    fn write(&self, mutations: &[Mutation], _now: LocalTime) -> Result<()> {
        self.check_writable()?;
        let mut ops = Vec::new();
        for m in mutations {
            self.mutation_ops(m, &mut ops)?;
        }
        match group::defer(self.id, ops) {
            Deferred::Queued { full } => {
                if full {
                    self.commit_deferred();
                }
                Ok(())
            }
            Deferred::WriteNow(ops) => self.write_now(&ops),
        }
    }

    fn commit_deferred(&self) {
        group::with_lent(self.id, |group| self.write_group(group));
    }

    fn write_groups_together(&self, groups: &mut [WriteGroup]) -> bool {
        let Some(taken) = group::take_all(self.id, groups) else {
            return false;
        };
        if self.write_now(&taken.ops).is_ok() {
            return true;
        }
        taken.put_back(self.id, groups);
        false
    }

    fn read_partition(&self, read: &PartitionRead, now: LocalTime) -> Result<Partition> {
        Ok(self.read_partition_counted(read, now, u64::MAX)?.0)
    }

    fn read_partition_counted(
        &self,
        read: &PartitionRead,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(Partition, u64)> {
        let spec = self.spec(read.table)?;
        let mut rows = Vec::new();
        let keep = (Keep::LiveOnly, stop_past);
        let mut met = self.read_rows(&spec, read, now, keep, &mut |row| {
            rows.extend(row.into_live());
        })?;
        let partition = Partition {
            key: read.partition.clone(),
            static_row: if read.include_static {
                met.head.static_live.take()
            } else {
                None
            },
            rows,
        };
        Ok((partition, met.tombstones))
    }

    fn read_raw(&self, read: &PartitionRead, now: LocalTime) -> Result<RawPartition> {
        Ok(self.read_raw_counted(read, now, u64::MAX)?.0)
    }

    fn read_raw_counted(
        &self,
        read: &PartitionRead,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(RawPartition, u64)> {
        let spec = self.spec(read.table)?;
        let mut data = Mutation::new(read.table, read.partition.clone());
        let keep = (Keep::StoredState, stop_past);
        let met = self.read_rows(&spec, read, now, keep, &mut |row| {
            data.rows.push((row.clustering, row_update(row.state)));
        })?;
        data.partition_deletion = met.head.coverage.partition;
        data.range_tombstones = met.head.range_tombstones;
        if read.include_static {
            data.static_row = met.head.static_row.map(row_update);
        }
        let raw = RawPartition {
            data,
            live_rows: met.live_rows,
            limit_reached: met.limit_reached,
        };
        Ok((raw, met.tombstones))
    }

    fn scan(&self, scan: &RangeScan, now: LocalTime) -> Result<ScanPage> {
        Ok(self.scan_counted(scan, now, u64::MAX)?.0)
    }

    fn scan_counted(
        &self,
        scan: &RangeScan,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(ScanPage, u64)> {
        let spec = self.spec(scan.table)?;
        self.scan_partitions(&spec, scan, now, stop_past)
    }

    fn stream_out(&self, table: TableId, range: TokenRange, dir: &Path) -> Result<Vec<PathBuf>> {
        self.spec(table)?;
        let mut files = Vec::new();
        for (i, key_range) in Self::key_ranges(range).iter().enumerate() {
            let part = dir.join(format!("part-{i}"));
            std::fs::create_dir_all(&part).map_err(|e| StorageError::Io {
                action: "creating a stream directory",
                detail: e.to_string(),
            })?;
            files.extend(self.store.export(table, key_range, &part)?);
        }
        Ok(files)
    }

    fn stream_in(&self, table: TableId, files: &[PathBuf]) -> Result<()> {
        self.check_writable()?;
        self.spec(table)?;
        let _shared = self.gate()?;
        let ingested = self.store.ingest(table, files);
        self.changed_in_bulk();
        ingested
    }

    fn import(
        &self,
        table: TableId,
        source: &ImportSource,
        work_dir: &Path,
    ) -> Result<ImportCounts> {
        self.check_writable()?;
        self.spec(table)?;
        std::fs::create_dir_all(work_dir).map_err(|e| StorageError::Io {
            action: "creating an import directory",
            detail: e.to_string(),
        })?;
        let imported = (|| {
            let mut rewrite = |key: &[u8], value: &[u8]| source.rewrite_entry(key, value);
            let (files, entries, loaded) =
                self.store
                    .export_checkpoint(&source.dir, source.table, &mut rewrite, work_dir)?;
            self.stream_in(table, &files)?;
            Ok(ImportCounts {
                entries,
                loaded,
                files: files.len() as u64,
            })
        })();
        let _ = std::fs::remove_dir_all(work_dir);
        imported
    }

    fn partition_keys(
        &self,
        table: TableId,
        range: TokenRange,
        after: Option<&PartitionKey>,
        limit: usize,
    ) -> Result<Vec<PartitionKey>> {
        self.spec(table)?;
        self.settle_deferred();
        // Every key of a partition sorts below its prefix followed by 0xFF.
        let resume = after.map(|p| {
            let mut key = keys::partition_prefix(p.token, &p.key);
            key.push(0xFF);
            key
        });
        let mut found: Vec<PartitionKey> = Vec::new();
        let mut error = None;
        for mut key_range in Self::key_ranges(range) {
            if let Some(resume) = &resume {
                if key_range.end.as_ref().is_some_and(|end| end <= resume) {
                    continue;
                }
                if *resume > key_range.start {
                    key_range.start = resume.clone();
                }
            }
            self.store.scan(table, &key_range, false, &mut |key, _| {
                if found.len() >= limit.max(1) {
                    return ControlFlow::Break(());
                }
                match keys::split_partition(key) {
                    Ok((token, bytes, _)) => {
                        if found
                            .last()
                            .is_none_or(|last| last.token != token || last.key != bytes)
                        {
                            found.push(PartitionKey { token, key: bytes });
                        }
                        ControlFlow::Continue(())
                    }
                    Err(e) => {
                        error = Some(e);
                        ControlFlow::Break(())
                    }
                }
            })?;
            if let Some(e) = error.take() {
                return Err(e.into());
            }
        }
        found.truncate(limit.max(1));
        Ok(found)
    }

    fn cleanup(&self, table: TableId, keep: &[TokenRange]) -> Result<()> {
        self.check_writable()?;
        self.spec(table)?;
        // Delete every token not kept: walk the ring's key space in order and
        // delete the gaps between kept key ranges.
        let mut kept: Vec<KeyRange> = keep.iter().flat_map(|r| Self::key_ranges(*r)).collect();
        kept.sort_by(|a, b| a.start.cmp(&b.start));
        let mut ops = Vec::new();
        let mut cursor: Option<Vec<u8>> = Some(Vec::new());
        for range in kept {
            let Some(from) = cursor.take() else { break };
            if from < range.start {
                ops.push((
                    table,
                    KvOp::DeleteRange {
                        start: from.clone(),
                        end: Some(range.start.clone()),
                    },
                ));
            }
            cursor = range.end.map(|end| end.max(from));
        }
        if let Some(from) = cursor {
            ops.push((
                table,
                KvOp::DeleteRange {
                    start: from,
                    end: None,
                },
            ));
        }
        self.apply(&ops)
    }

    fn snapshot(&self, dir: &Path) -> Result<()> {
        self.store.checkpoint(dir)
    }

    fn flush(&self) -> Result<()> {
        self.store.flush()
    }

    fn latest_sequence_number(&self) -> Option<u64> {
        self.store.latest_sequence_number()
    }

    fn set_compaction_throughput(&self, bytes_per_second: Option<u64>) -> bool {
        self.store.set_write_rate_limit(bytes_per_second)
    }

    fn flush_table(&self, table: TableId) -> Result<()> {
        self.spec(table)?;
        self.store.flush_table(table)
    }

    fn compact(&self, table: TableId, now: LocalTime) -> Result<()> {
        let spec = self.spec(table)?;
        let everything = KeyRange {
            start: Vec::new(),
            end: None,
        };
        self.purge_range(&spec, &everything, now)?;
        self.store.compact(table)
    }

    fn purge_tombstones(&self, now: LocalTime) -> Result<usize> {
        self.purge_reported(now)
    }

    fn stats(&self) -> StorageStats {
        let cache = self
            .point_cache
            .as_ref()
            .map(PointCache::stats)
            .unwrap_or_default();
        StorageStats {
            point_cache_hits: cache.hits,
            point_cache_misses: cache.misses,
            point_cache_bytes: cache.bytes,
            ..self.store.stats()
        }
    }

    fn table_stats(&self, table: TableId) -> TableStorageStats {
        self.store.table_stats(table)
    }
}

/// The partitions `ops` write to (each once where they follow each other),
/// and whether any op deletes a key range.
fn touched_partitions(ops: &[(TableId, KvOp)]) -> (Vec<(TableId, Vec<u8>)>, bool) {
    let mut partitions: Vec<(TableId, Vec<u8>)> = Vec::new();
    let mut ranges = false;
    for (table, op) in ops {
        match op {
            KvOp::Merge { key, .. } => {
                let prefix = &key[..keys::partition_prefix_len(key).unwrap_or(key.len())];
                if !partitions
                    .last()
                    .is_some_and(|(t, p)| t == table && p == prefix)
                {
                    partitions.push((*table, prefix.to_vec()));
                }
            }
            KvOp::DeleteRange { .. } => ranges = true,
        }
    }
    (partitions, ranges)
}

/// Whether `slice` has no bound at either end (inclusive empty prefixes).
fn selects_everything(slice: &Slice) -> bool {
    let unbounded = |b: &ClusteringBound| b.prefix.is_empty() && b.inclusive;
    unbounded(&slice.start) && unbounded(&slice.end)
}
