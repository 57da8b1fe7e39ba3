//! Answering a query from an index: which index a query looks up, reading
//! its entries, telling current entries from stale ones, and removing the
//! stale ones (SELECT's reader, `select::Reader::read_indexed`, drives it).
//!
//! Writes never read, so an entry can outlive what it stood for: the value
//! was overwritten, the row or partition deleted, the element removed. The
//! base row behind every entry is read (at the query's consistency) and the
//! entry used only when the row still holds the indexed value; the
//! query's restrictions are then checked on the row as for any other read.
//!
//! A stale entry is deleted with a tombstone dated by the base data that
//! made it stale (`deletion_for`), never by the clock or the entry itself.
//! Why: in a cluster the index and the table are separate partitions on
//! separate replicas, so a reader can see an entry before the write that
//! made it reaches the row's replicas (or through a replica that missed
//! it). Cassandra's local index may delete at the entry's own timestamp
//! because index and row change together; here that would delete the entry
//! of a write still on its way, and the row would never be found again.
//! Dating the tombstone by the base data is exact instead:
//! - the row, a range or the partition deleted at `d`, or the cell deleted
//!   at `d`: every write at or before `d` is shadowed in the table, so
//!   the entry's tombstone at `d` shadows exactly the entries of those
//!   writes, and a re-write of the value after `d` is newer and stays;
//! - the cell overwritten by a newer value at `t`: every write of the old
//!   value at or before `t` lost to it in the table (reconciled by the one
//!   last-write-wins rule, so equal timestamps are settled the same way),
//!   so a tombstone at `t` hides only entries no read could confirm.
//!
//! When what the read shows is older than the entry (the write is not there
//! yet), such a tombstone could not shadow the entry, so none is written
//! and the entry waits for a later query. An entry with no evidence at all
//! (the table's tombstone already purged after gc_grace) stays, costing a
//! read per query that reaches it.
//!
//! A key-column entry (partition key component or clustering column) stands
//! for a row's existence: it copies the row's marker and has an empty cell
//! per base cell, so its cleanup copies the base row's deletions (row,
//! range and partition deletions, whole-collection deletions, cell
//! tombstones) onto it with their own timestamps, and the entry dies exactly
//! when the row is dead.

use rocksandra_cql::ast::Operator;
use rocksandra_data::types::CqlType;
use rocksandra_data::{LocalTime, Timestamp, Token};
use rocksandra_storage::cell::{reconcile_cells, Cell, CellKind, DeletionTime, LiveRow};
use rocksandra_storage::layout::keys::bound_contains;
use rocksandra_storage::{
    ClusteringBound, Mutation, PartitionKey, PartitionRead, RowUpdate, Slice,
};
use rocksandra_wire::{Consistency, WriteType};

use super::entries::{entry_key, Indexed, Target};
use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::proxy::WriteOptions;
use crate::restrict::{Filter, Restrictions};
use crate::schema::{Schema, Table};

/// An index lookup that answers a query: the index and the value looked up.
#[derive(Clone, Debug)]
pub struct IndexQuery {
    pub target: Target,
    /// The index's storage table.
    pub storage: Table,
    /// The index partition: the value looked up.
    pub value: Vec<u8>,
    /// What the indexed cell must hold for an entry to be current (None:
    /// that it is live is enough: set elements, map keys, key columns).
    cell_value: Option<CellValue>,
    /// How the index compares text (`case_sensitive: false`).
    analyzer: Option<super::Analyzer>,
}

/// A value and the type it compares by.
type CellValue = (CqlType, Vec<u8>);

/// Picks an index for a query over a token range: the first restriction
/// (filters in WHERE order, then a clustering prefix restricted by `=`)
/// that a built index looks up by value. Ranges, IN and restrictions on
/// unindexed columns are left to filtering, as are queries that name their
/// partitions (reading those is cheaper than any index).
pub fn choose(table: &Table, restrictions: &Restrictions) -> Option<IndexQuery> {
    if !matches!(
        restrictions.partition,
        crate::restrict::PartitionSelection::Tokens { .. }
    ) || table.is_virtual
    {
        return None;
    }
    let clustering_eq = clustering_equalities(table, restrictions);
    let candidates = restrictions.filters.iter().cloned().chain(clustering_eq);
    for filter in candidates {
        for index in &table.indexes {
            if !index.built {
                continue;
            }
            let Some(target) = Target::resolve(table, index) else {
                continue;
            };
            if target.column != filter.column {
                continue;
            }
            if super::family(index) == Some(super::IndexFamily::Sai)
                && matches_by_value(table, &target)
            {
                continue;
            }
            let Some((mut value, cell_value)) = lookup(table, &target, &filter) else {
                continue;
            };
            let analyzer = super::Analyzer::of(index).filter(|_| target.indexed == Indexed::Value);
            if let Some(analyzer) = analyzer {
                value = analyzer.apply(&value);
            }
            let Some(storage) = super::entries::storage_table(table, index) else {
                continue;
            };
            return Some(IndexQuery {
                target,
                storage,
                value,
                cell_value,
                analyzer,
            });
        }
    }
    None
}

/// Whether an SAI index matches `target`'s values by value rather than by
/// their bytes: decimals (`1.5` finds `1.50`). Entries are keyed by the
/// written bytes, so such a lookup is left to filtering, which compares by
/// type and returns the same rows in the same order.
fn matches_by_value(table: &Table, target: &Target) -> bool {
    let ty = table.columns[target.column].ty.unfrozen();
    let value_type = match (target.indexed, ty) {
        (Indexed::Value, _) => ty,
        (Indexed::ElementValue | Indexed::Entry, CqlType::List(e) | CqlType::Map(_, e)) => {
            e.unfrozen()
        }
        _ => return false,
    };
    *value_type == CqlType::Native(rocksandra_data::NativeType::Decimal)
}

/// Clustering columns restricted by `=` through a single slice's common
/// prefix (`c1 = 3`, `c1 = 3 AND c2 > 1`), as filters.
fn clustering_equalities(table: &Table, restrictions: &Restrictions) -> Vec<Filter> {
    let [slice] = restrictions.slices.as_slice() else {
        return Vec::new();
    };
    if !restrictions.clustering_restricted {
        return Vec::new();
    }
    let (start, end) = (&slice.start.prefix, &slice.end.prefix);
    (0..start.len().min(end.len()))
        .take_while(|j| start[*j] == end[*j])
        .map(|j| Filter {
            column: table.partition_key_count + j,
            op: Operator::Eq,
            values: vec![Some(start[j].clone())],
            element_key: None,
        })
        .collect()
}

/// The index partition a filter looks up and what the indexed cell must
/// hold, when `target` answers it.
fn lookup(table: &Table, target: &Target, filter: &Filter) -> Option<(Vec<u8>, Option<CellValue>)> {
    let [Some(value)] = filter.values.as_slice() else {
        return None;
    };
    let ty = &table.columns[target.column].ty;
    let element = |collection: &CqlType| match collection.unfrozen() {
        CqlType::List(e) | CqlType::Set(e) => Some((**e).clone()),
        CqlType::Map(_, v) => Some((**v).clone()),
        _ => None,
    };
    let cell = |t: CqlType| Some((t, value.clone()));
    match (target.indexed, filter.op, &filter.element_key) {
        (Indexed::Value, Operator::Eq, None) => Some((value.clone(), cell(ty.clone()))),
        (Indexed::KeyColumn, Operator::Eq, None) => Some((value.clone(), None)),
        (Indexed::ElementValue, Operator::Contains, None) => {
            Some((value.clone(), cell(element(ty)?)))
        }
        (Indexed::ElementKey, Operator::Contains, None)
            if matches!(ty.unfrozen(), CqlType::Set(_)) =>
        {
            Some((value.clone(), None))
        }
        (Indexed::ElementKey, Operator::ContainsKey, None) => Some((value.clone(), None)),
        (Indexed::Entry, Operator::Eq, Some(key)) => {
            Some((entry_key(key, value), cell(element(ty)?)))
        }
        _ => None,
    }
}

/// One index entry as read.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The entry's clustering in the index table.
    pub clustering: Vec<Vec<u8>>,
    pub partition: PartitionKey,
    /// The base row's clustering; None for a per-partition entry or a
    /// key-column entry of a static row.
    pub row: Option<Vec<Vec<u8>>>,
    /// The element's cell path (collection indexes).
    pub path: Option<Vec<u8>>,
    pub content: LiveRow,
}

/// The first clustering of the index at or after `token`.
pub fn token_start(token: Token) -> ClusteringBound {
    ClusteringBound::around(vec![token.0.to_be_bytes().to_vec()], true)
}

/// The end of the index's entries of tokens up to `token`, inclusive.
pub fn token_end(token: Token) -> ClusteringBound {
    token_start(token)
}

/// Token and key: what every entry of a base partition starts with.
fn partition_prefix(partition: &PartitionKey) -> Vec<Vec<u8>> {
    vec![
        partition.token.0.to_be_bytes().to_vec(),
        partition.key.clone(),
    ]
}

/// The bound at the start of a base partition's entries.
pub fn partition_start(partition: &PartitionKey) -> ClusteringBound {
    ClusteringBound::around(partition_prefix(partition), true)
}

/// The bound right after an entry.
pub fn after_entry(entry: &Entry) -> ClusteringBound {
    ClusteringBound::around(entry.clustering.clone(), false)
}

/// Reads made for maintenance and search go at the query's consistency,
/// but a serial one (which only compare-and-set rounds use) at its quorum.
fn plain(consistency: Consistency) -> Consistency {
    match consistency {
        Consistency::Serial => Consistency::Quorum,
        Consistency::LocalSerial => Consistency::LocalQuorum,
        other => other,
    }
}

impl IndexQuery {
    /// One entry per partition (an index on a static column).
    pub fn per_partition(&self, table: &Table) -> bool {
        self.target.per_partition(table)
    }

    /// The bound after every entry of a base row (`row` None: of the whole
    /// partition).
    pub fn after(
        &self,
        table: &Table,
        partition: &PartitionKey,
        row: Option<&[Vec<u8>]>,
    ) -> ClusteringBound {
        let prefix = match row {
            Some(row) => self
                .target
                .entry_clustering(table, partition, Some(row), None),
            None => partition_prefix(partition),
        };
        ClusteringBound::around(prefix, false)
    }

    /// Reads up to `limit` live entries from `start` to `end`, and the
    /// tombstones the read met (the thresholds count them as any read's).
    #[allow(clippy::too_many_arguments)]
    pub fn read_entries(
        &self,
        context: &StatementCtx<'_>,
        schema: &Schema,
        table: &Table,
        consistency: Consistency,
        now: LocalTime,
        start: &ClusteringBound,
        end: &ClusteringBound,
        limit: usize,
    ) -> Result<(Vec<Entry>, crate::read_thresholds::ReadMet)> {
        let read = PartitionRead {
            table: self.storage.storage_id,
            partition: PartitionKey::new(self.value.clone()),
            slices: vec![Slice {
                start: start.clone(),
                end: end.clone(),
            }],
            reversed: false,
            include_static: false,
            row_limit: limit,
        };
        let (partition, met) = context.data().read_partition_counted(
            schema,
            &self.storage,
            &read,
            plain(consistency),
            now,
        )?;
        let entries = partition
            .rows
            .into_iter()
            .map(|row| self.decode(table, row.clustering, row.content))
            .collect::<Result<Vec<Entry>>>()?;
        Ok((entries, met))
    }

    fn decode(&self, table: &Table, clustering: Vec<Vec<u8>>, content: LiveRow) -> Result<Entry> {
        let of = self.target.decode(table, &clustering).ok_or_else(|| {
            QueryError::Server(format!("corrupt index entry in {}", self.storage.name))
        })?;
        Ok(Entry {
            clustering,
            partition: of.partition,
            row: of.row,
            path: of.path,
            content,
        })
    }

    /// Whether `entry` still stands for the base data: `row` is the live
    /// base row it names (the static row for an entry without a row), None
    /// when that row is not live.
    pub fn is_current(&self, table: &Table, entry: &Entry, row: Option<&LiveRow>) -> bool {
        let Some(row) = row else {
            return false;
        };
        if self.target.indexed == Indexed::KeyColumn {
            return row.exists();
        }
        let column = &table.columns[self.target.column];
        row.cells.iter().any(|cell| {
            cell.column == column.id && cell.path == entry.path && self.holds_value(&cell.value)
        })
    }

    /// Whether a base cell holds the value looked up (as the index
    /// compares it); true when any live cell will do.
    fn holds_value(&self, cell: &[u8]) -> bool {
        self.cell_value
            .as_ref()
            .is_none_or(|(ty, value)| match self.analyzer {
                Some(analyzer) => analyzer.equal(cell, value),
                None => rocksandra_data::value::compare(ty, cell, value).is_eq(),
            })
    }

    /// Deletes stale entries, each with a tombstone dated by the base data
    /// that made it stale (module documentation). Best effort: what cannot
    /// be read or written now is left for a later query.
    #[allow(clippy::too_many_arguments)]
    pub fn clean(
        &self,
        context: &StatementCtx<'_>,
        schema: &Schema,
        table: &Table,
        consistency: Consistency,
        now: LocalTime,
        stale: &[Entry],
    ) {
        let mut tombstones = Vec::new();
        for group in stale.chunk_by(|a, b| a.partition == b.partition) {
            let mut slices: Vec<Slice> = Vec::new();
            for entry in group {
                if let Some(row) = &entry.row {
                    if slices.last().is_none_or(|s| s.start.prefix != *row) {
                        slices.push(Slice::prefix(row.clone()));
                    }
                }
            }
            let read = PartitionRead {
                table: table.storage_id,
                partition: group[0].partition.clone(),
                slices,
                reversed: false,
                include_static: group.iter().any(|e| e.row.is_none()),
                row_limit: 0,
            };
            let Ok(raw) = context
                .data()
                .read_raw(schema, table, &read, plain(consistency), now)
            else {
                continue;
            };
            for entry in group {
                if let Some(update) = self.deletion_for(table, entry, &raw.data, now) {
                    let mut mutation = Mutation::new(
                        self.storage.storage_id,
                        PartitionKey::new(self.value.clone()),
                    );
                    mutation.rows.push((entry.clustering.clone(), update));
                    tombstones.push(mutation);
                }
            }
        }
        if tombstones.is_empty() {
            return;
        }
        let options = WriteOptions {
            consistency: Consistency::One,
            write_type: WriteType::Simple,
            now,
        };
        // A failure leaves the entries for a later query to remove.
        let _ = context.data().write(schema, tombstones, &options);
    }

    /// The deletion of a stale entry that the base data `base` (the stored
    /// state of the entry's row) justifies, or None when it shows nothing
    /// newer than the entry.
    fn deletion_for(
        &self,
        table: &Table,
        entry: &Entry,
        base: &Mutation,
        now: LocalTime,
    ) -> Option<RowUpdate> {
        let row = match &entry.row {
            Some(c) => base.rows.iter().find(|(k, _)| k == c).map(|(_, r)| r),
            None => base.static_row.as_ref(),
        };
        let mut deletion = base.partition_deletion;
        if let Some(c) = &entry.row {
            let spec = table.storage_spec();
            for rt in &base.range_tombstones {
                if bound_contains(&spec.clustering, &rt.start, &rt.end, c).unwrap_or(false) {
                    deletion = DeletionTime::merge(deletion, Some(rt.deletion));
                }
            }
        }
        deletion = DeletionTime::merge(deletion, row.and_then(|r| r.deletion));
        if self.target.indexed == Indexed::KeyColumn {
            return mirrored_deletions(deletion, row, now);
        }
        let marker = entry.content.liveness?;
        let written = marker.timestamp;
        let mut evidence: Option<Timestamp> = deletion
            .filter(|d| d.shadows(written))
            .map(|d| d.marked_for_delete_at);
        let column = &table.columns[self.target.column];
        let mut newer = |t: Timestamp| evidence = Some(evidence.map_or(t, |e| e.max(t)));
        if let Some(row) = row {
            for (c, d) in &row.complex_deletions {
                if *c == column.id && entry.path.is_some() && d.shadows(written) {
                    newer(d.marked_for_delete_at);
                }
            }
            let cell = row
                .cells
                .iter()
                .find(|c| c.column == column.id && c.path == entry.path);
            if let Some(cell) = cell {
                if self.supersedes(cell, entry, written, now) {
                    newer(cell.timestamp);
                }
            }
        }
        let at = evidence?;
        Some(RowUpdate {
            deletion: Some(DeletionTime::new(at.0, now.0)),
            ..RowUpdate::default()
        })
    }

    /// Whether the stored base cell `cell` wins over the write the entry
    /// came from, which it contradicts (else the entry would be current).
    fn supersedes(&self, cell: &Cell, entry: &Entry, written: Timestamp, now: LocalTime) -> bool {
        let holds_value = cell.is_live(now) && self.holds_value(&cell.value);
        if holds_value {
            // The write arrived since the search read the row.
            return false;
        }
        if cell.timestamp != written {
            return cell.timestamp > written;
        }
        if matches!(cell.kind, CellKind::Tombstone { .. }) || !cell.is_live(now) {
            return true;
        }
        // Equal timestamps: the one reconciliation rule decides, against the
        // cell as that write stored it.
        let Some((_, value)) = &self.cell_value else {
            return false;
        };
        let Some(marker) = entry.content.liveness else {
            return false;
        };
        let kind = if marker.is_expiring() {
            CellKind::Expiring {
                ttl_seconds: marker.ttl_seconds,
                local_expiration_time: marker.local_expiration_time,
            }
        } else {
            CellKind::Live
        };
        let that_write = Cell {
            column: cell.column,
            path: cell.path.clone(),
            timestamp: written,
            kind,
            value: value.clone(),
            written_key: cell.written_key.clone(),
        };
        reconcile_cells(cell, &that_write).is_gt()
    }
}

/// A key-column entry mirrors its row: the row-level `deletion` and the
/// base row's whole-collection deletions and cell tombstones (expired cells
/// count as tombstones), each at its own timestamp. None when there is
/// nothing to copy.
fn mirrored_deletions(
    deletion: Option<DeletionTime>,
    row: Option<&RowUpdate>,
    now: LocalTime,
) -> Option<RowUpdate> {
    let mut update = RowUpdate {
        deletion,
        ..RowUpdate::default()
    };
    if let Some(row) = row {
        update.complex_deletions = row.complex_deletions.clone();
        update.cells = row
            .cells
            .iter()
            .filter_map(|c| match c.kind {
                CellKind::Tombstone { .. } => Some(c.clone()),
                _ => c.expire(now),
            })
            .collect();
    }
    let empty =
        update.deletion.is_none() && update.complex_deletions.is_empty() && update.cells.is_empty();
    (!empty).then_some(update)
}
