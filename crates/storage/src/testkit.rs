//! The conformance suite every engine implementation must pass, and the
//! reference model of Cassandra's semantics that property tests compare
//! engines against. Public so backend crates run the same suite.
//!
//! The model is deliberately naive: it keeps every write ever made and, at
//! read time, reconciles all versions of each cell with `cell::reconcile` and
//! applies deletions by comparing clustering values with the type comparator
//! (not the byte layout), so it checks the layout rather than sharing it.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use rocksandra_data::{value, CqlType, LocalTime, NativeType, Timestamp};

use crate::api::*;
use crate::cell::{
    reconcile, Cell, CellKind, ColumnId, DeletionTime, LiveRow, LivenessInfo, RowState,
};

mod point_cache;
mod prefix_rows;
mod write_group;
pub use point_cache::run_point_cache_suite;
pub use write_group::run_write_group_suite;

/// The table every suite case uses: `pk blob, c1 int ASC, c2 text DESC,
/// s static, r1, r2 regular, set column 4`.
pub fn test_table(id: u64) -> TableSpec {
    TableSpec {
        id: TableId(id),
        clustering: vec![
            ClusteringColumn {
                ty: CqlType::Native(NativeType::Int),
                descending: false,
            },
            ClusteringColumn {
                ty: CqlType::Native(NativeType::Text),
                descending: true,
            },
        ],
        options: TableOptions::default(),
        dropped: Vec::new(),
    }
}

/// A table without clustering columns (`pk blob PRIMARY KEY, r1, r2,
/// set column 4`): one row per partition, no static row, no range
/// tombstones; the engine reads it by point lookups.
pub fn unclustered_table(id: u64) -> TableSpec {
    TableSpec {
        id: TableId(id),
        clustering: Vec::new(),
        options: TableOptions::default(),
        dropped: Vec::new(),
    }
}

pub const STATIC_COLUMN: ColumnId = ColumnId(3);
pub const SET_COLUMN: ColumnId = ColumnId(4);

pub fn clustering(c1: i32, c2: &str) -> Vec<Vec<u8>> {
    vec![c1.to_be_bytes().to_vec(), c2.as_bytes().to_vec()]
}

/// Compares clustering prefixes with the type comparators and column orders.
pub fn compare_clustering(spec: &TableSpec, a: &[Vec<u8>], b: &[Vec<u8>]) -> Ordering {
    for ((column, x), y) in spec.clustering.iter().zip(a).zip(b) {
        let o = value::compare(&column.ty, x, y);
        let o = if column.descending { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn after_start(spec: &TableSpec, start: &ClusteringBound, c: &[Vec<u8>]) -> bool {
    let o = compare_clustering(spec, &c[..start.prefix.len().min(c.len())], &start.prefix);
    o == Ordering::Greater || (o == Ordering::Equal && start.inclusive)
}

fn before_end(spec: &TableSpec, end: &ClusteringBound, c: &[Vec<u8>]) -> bool {
    let o = compare_clustering(spec, &c[..end.prefix.len().min(c.len())], &end.prefix);
    o == Ordering::Less || (o == Ordering::Equal && end.inclusive)
}

pub fn slice_contains(spec: &TableSpec, slice: &Slice, c: &[Vec<u8>]) -> bool {
    after_start(spec, &slice.start, c) && before_end(spec, &slice.end, c)
}

/// Every mutation ever applied, replayed naively on each read.
#[derive(Default)]
pub struct Model {
    mutations: Vec<Mutation>,
}

impl Model {
    pub fn apply(&mut self, mutations: &[Mutation]) {
        self.mutations.extend_from_slice(mutations);
    }

    fn partition_mutations<'a>(
        &'a self,
        key: &'a PartitionKey,
    ) -> impl Iterator<Item = &'a Mutation> {
        self.mutations.iter().filter(move |m| &m.partition == key)
    }

    /// Reconciles every version of every cell of a row, naively.
    fn reconcile_row<'a>(updates: impl Iterator<Item = &'a RowUpdate>) -> RowState {
        let mut liveness: Option<LivenessInfo> = None;
        let mut deletion: Option<DeletionTime> = None;
        let mut complex: Vec<(ColumnId, DeletionTime)> = Vec::new();
        let mut cells: Vec<Cell> = Vec::new();
        for u in updates {
            liveness = LivenessInfo::merge(liveness, u.liveness);
            deletion = DeletionTime::merge(deletion, u.deletion);
            for (c, d) in &u.complex_deletions {
                match complex.iter_mut().find(|(x, _)| x == c) {
                    Some((_, e)) => *e = DeletionTime::merge(Some(*e), Some(*d)).unwrap_or(*d),
                    None => complex.push((*c, *d)),
                }
            }
            for cell in &u.cells {
                match cells.iter_mut().find(|x| x.position() == cell.position()) {
                    Some(existing) => *existing = reconcile(existing, cell).clone(),
                    None => cells.push(cell.clone()),
                }
            }
        }
        cells.sort_by(|a, b| a.position().cmp(&b.position()));
        complex.sort_by_key(|(c, _)| *c);
        RowState {
            liveness,
            deletion,
            complex_deletions: complex,
            cells,
            clustering_form: None,
        }
    }

    /// What a full read of a partition returns at `now`, rows in clustering order.
    pub fn read(&self, spec: &TableSpec, key: &PartitionKey, now: LocalTime) -> Partition {
        let partition_deletion = self
            .partition_mutations(key)
            .filter(|m| m.table == spec.id)
            .fold(None, |acc, m| {
                DeletionTime::merge(acc, m.partition_deletion)
            });
        let tombstones: Vec<RangeTombstone> = self
            .partition_mutations(key)
            .filter(|m| m.table == spec.id)
            .flat_map(|m| m.range_tombstones.iter().cloned())
            .collect();
        let statics: Vec<&RowUpdate> = self
            .partition_mutations(key)
            .filter(|m| m.table == spec.id)
            .filter_map(|m| m.static_row.as_ref())
            .collect();
        let static_row = (!statics.is_empty())
            .then(|| {
                Self::reconcile_row(statics.into_iter()).live_view(
                    partition_deletion,
                    &spec.dropped,
                    now,
                )
            })
            .filter(LiveRow::exists);
        let mut clusterings: Vec<Vec<Vec<u8>>> = Vec::new();
        for m in self.partition_mutations(key).filter(|m| m.table == spec.id) {
            for (c, _) in &m.rows {
                if !clusterings
                    .iter()
                    .any(|x| compare_clustering(spec, x, c) == Ordering::Equal)
                {
                    clusterings.push(c.clone());
                }
            }
        }
        clusterings.sort_by(|a, b| compare_clustering(spec, a, b));
        let rows = clusterings
            .into_iter()
            .filter_map(|c| {
                let state = Self::reconcile_row(
                    self.partition_mutations(key)
                        .filter(|m| m.table == spec.id)
                        .flat_map(|m| m.rows.iter())
                        .filter(|(x, _)| compare_clustering(spec, x, &c) == Ordering::Equal)
                        .map(|(_, u)| u),
                );
                let outer = tombstones
                    .iter()
                    .filter(|rt| {
                        slice_contains(
                            spec,
                            &Slice {
                                start: rt.start.clone(),
                                end: rt.end.clone(),
                            },
                            &c,
                        )
                    })
                    .fold(partition_deletion, |acc, rt| {
                        DeletionTime::merge(acc, Some(rt.deletion))
                    });
                let content = state.live_view(outer, &spec.dropped, now);
                content.exists().then_some(Row {
                    clustering: c,
                    content,
                })
            })
            .collect();
        Partition {
            key: key.clone(),
            static_row,
            rows,
        }
    }

    /// The model's answer to a `PartitionRead`.
    pub fn read_partition(
        &self,
        spec: &TableSpec,
        read: &PartitionRead,
        now: LocalTime,
    ) -> Partition {
        let full = self.read(spec, &read.partition, now);
        let mut rows: Vec<Row> = Vec::new();
        for slice in &read.slices {
            rows.extend(
                full.rows
                    .iter()
                    .filter(|r| slice_contains(spec, slice, &r.clustering))
                    .cloned(),
            );
        }
        if read.reversed {
            rows.reverse();
        }
        if read.row_limit > 0 {
            rows.truncate(read.row_limit);
        }
        Partition {
            key: full.key,
            static_row: if read.include_static {
                full.static_row
            } else {
                None
            },
            rows,
        }
    }

    /// All partition keys ever written, in token order.
    pub fn partitions(&self) -> Vec<PartitionKey> {
        let set: BTreeSet<PartitionKey> =
            self.mutations.iter().map(|m| m.partition.clone()).collect();
        set.into_iter().collect()
    }
}

/// Fails with a description when an engine's answer differs from the model's.
pub fn assert_same(engine: &Partition, model: &Partition, context: &str) {
    assert_eq!(engine, model, "engine and model differ: {context}");
}

pub fn pk(name: &str) -> PartitionKey {
    PartitionKey::new(name.as_bytes().to_vec())
}

pub fn full_read(table: TableId, partition: PartitionKey) -> PartitionRead {
    PartitionRead {
        table,
        partition,
        slices: vec![Slice::all()],
        reversed: false,
        include_static: true,
        row_limit: 0,
    }
}

/// A scan of every partition of `table`, static rows included, no limit.
pub fn full_scan(table: TableId) -> RangeScan {
    RangeScan {
        table,
        token_start: rocksandra_data::Token(i64::MIN),
        token_end: rocksandra_data::Token(i64::MAX),
        resume_after: None,
        include_static: true,
        per_partition_limit: 0,
        row_limit: 0,
    }
}

fn row_write(table: TableId, key: &str, c: Vec<Vec<u8>>, update: RowUpdate) -> Mutation {
    let mut m = Mutation::new(table, pk(key));
    m.rows.push((c, update));
    m
}

const NOW: LocalTime = LocalTime(1_700_000_000);

/// The conformance suite: every engine must pass every case. `make` returns
/// a fresh, empty engine.
pub fn run_conformance_suite<E: Engine>(make: &dyn Fn() -> E) {
    case_insert_and_read(&make());
    case_row_marker_keeps_row_alive(&make());
    case_dropped_columns_hide_older_cells(&make());
    case_timestamps_not_arrival_order(&make());
    case_deletions_of_every_kind(&make());
    case_ttl_expiry(&make());
    case_collections_without_read_before_write(&make());
    case_slices_reverse_limits(&make());
    case_scan_and_paging(&make());
    // One range inside the ring, and the range that wraps past the ring's end.
    case_stream_round_trip(
        &make(),
        &make(),
        -3_000_000_000_000_000_000,
        4_000_000_000_000_000_000,
    );
    case_stream_round_trip(
        &make(),
        &make(),
        4_000_000_000_000_000_000,
        -3_000_000_000_000_000_000,
    );
    case_partition_keys_lists_tombstoned_partitions(&make());
    case_compaction_keeps_visible_data(&make());
    case_decimal_clustering_keeps_its_written_form(&make());
    case_purge_after_gc_grace(&make());
    case_cleanup_and_truncate(&make());
    case_read_raw_counts_live_rows(&make());
    case_read_raw_round_trip(&make(), &make());
    case_read_raw_reconciles_replicas(&make(), &[make(), make()], &make());
    prefix_rows::run(make);
}

fn setup<E: Engine>(engine: &E) -> TableSpec {
    let spec = test_table(7);
    engine.create_table(spec.clone()).expect("create table");
    spec
}

fn cells(update: &[(u32, i64, &str)]) -> RowUpdate {
    RowUpdate {
        cells: update
            .iter()
            .map(|(c, ts, v)| Cell::live(ColumnId(*c), *ts, v.as_bytes().to_vec()))
            .collect(),
        ..Default::default()
    }
}

fn read_full<E: Engine>(engine: &E, spec: &TableSpec, key: &str) -> Partition {
    engine
        .read_partition(&full_read(spec.id, pk(key)), NOW)
        .expect("read")
}

type RowValues = (Vec<Vec<u8>>, Vec<(u32, String)>);

fn values(p: &Partition) -> Vec<RowValues> {
    p.rows
        .iter()
        .map(|r| {
            (
                r.clustering.clone(),
                r.content
                    .cells
                    .iter()
                    .map(|c| (c.column.0, String::from_utf8_lossy(&c.value).into_owned()))
                    .collect(),
            )
        })
        .collect()
}

fn case_insert_and_read<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let w = row_write(
        spec.id,
        "a",
        clustering(1, "x"),
        cells(&[(1, 10, "v1"), (2, 10, "v2")]),
    );
    engine.write(&[w], NOW).expect("write");
    let p = read_full(engine, &spec, "a");
    assert_eq!(
        values(&p),
        vec![(clustering(1, "x"), vec![(1, "v1".into()), (2, "v2".into())])]
    );
    assert!(read_full(engine, &spec, "b").rows.is_empty());
    assert!(matches!(
        engine.read_partition(&full_read(TableId(999), pk("a")), NOW),
        Err(StorageError::UnknownTable(_))
    ));
}

/// A column dropped at time T: its cells written at or before T vanish
/// (a row held up only by them goes), later ones show (the column added
/// again); the static row likewise.
fn case_dropped_columns_hide_older_cells<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let writes = [
        row_write(spec.id, "a", clustering(1, "x"), cells(&[(1, 1000, "old")])),
        row_write(
            spec.id,
            "a",
            clustering(2, "x"),
            cells(&[(1, 3000, "new"), (2, 1000, "kept")]),
        ),
        row_write(
            spec.id,
            "a",
            clustering(3, "x"),
            cells(&[(2, 1000, "other")]),
        ),
    ];
    engine.write(&writes, NOW).expect("write");
    let mut statics = Mutation::new(spec.id, pk("a"));
    statics.static_row = Some(cells(&[(STATIC_COLUMN.0, 1500, "s")]));
    engine.write(&[statics], NOW).expect("write static");
    let dropped = TableSpec {
        dropped: vec![
            DroppedCells {
                column: ColumnId(1),
                dropped_time: Timestamp(2000),
            },
            DroppedCells {
                column: STATIC_COLUMN,
                dropped_time: Timestamp(1500),
            },
        ],
        ..spec.clone()
    };
    engine.alter_table(dropped.clone()).expect("alter");
    let p = read_full(engine, &dropped, "a");
    assert_eq!(
        values(&p),
        vec![
            (
                clustering(2, "x"),
                vec![(1, "new".into()), (2, "kept".into())]
            ),
            (clustering(3, "x"), vec![(2, "other".into())]),
        ]
    );
    assert!(p.static_row.is_none(), "{:?}", p.static_row);
    engine.alter_table(spec.clone()).expect("alter back");
    assert_eq!(read_full(engine, &spec, "a").rows.len(), 3);
}

fn case_row_marker_keeps_row_alive<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let insert = RowUpdate {
        liveness: Some(LivenessInfo::new(10, 0, 0)),
        cells: vec![Cell::live(ColumnId(1), 10, b"v".to_vec())],
        ..Default::default()
    };
    let update_only = cells(&[(1, 10, "v")]);
    engine
        .write(
            &[
                row_write(spec.id, "a", clustering(1, "x"), insert),
                row_write(spec.id, "a", clustering(2, "x"), update_only),
            ],
            NOW,
        )
        .expect("write");
    // Deleting the only regular column: INSERTed row stays, UPDATEd row goes.
    let delete_cell = RowUpdate {
        cells: vec![Cell::tombstone(ColumnId(1), 11, NOW)],
        ..Default::default()
    };
    engine
        .write(
            &[
                row_write(spec.id, "a", clustering(1, "x"), delete_cell.clone()),
                row_write(spec.id, "a", clustering(2, "x"), delete_cell),
            ],
            NOW,
        )
        .expect("write");
    let p = read_full(engine, &spec, "a");
    assert_eq!(values(&p), vec![(clustering(1, "x"), vec![])]);
}

fn case_timestamps_not_arrival_order<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let c = clustering(1, "x");
    engine
        .write(
            &[row_write(spec.id, "a", c.clone(), cells(&[(1, 20, "new")]))],
            NOW,
        )
        .expect("write");
    engine
        .write(
            &[row_write(spec.id, "a", c.clone(), cells(&[(1, 10, "old")]))],
            NOW,
        )
        .expect("write");
    // Equal timestamps: the larger value wins, whatever arrives last.
    engine
        .write(
            &[row_write(spec.id, "a", c.clone(), cells(&[(2, 5, "b")]))],
            NOW,
        )
        .expect("write");
    engine
        .write(
            &[row_write(spec.id, "a", c.clone(), cells(&[(2, 5, "a")]))],
            NOW,
        )
        .expect("write");
    let p = read_full(engine, &spec, "a");
    assert_eq!(
        values(&p),
        vec![(c, vec![(1, "new".into()), (2, "b".into())])]
    );
    let ts = p.rows[0].content.cells[0].timestamp;
    assert_eq!(ts.0, 20);
}

fn case_deletions_of_every_kind<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let mut writes = Vec::new();
    for c1 in 0..5 {
        for c2 in ["a", "b"] {
            writes.push(row_write(
                spec.id,
                "p",
                clustering(c1, c2),
                cells(&[(1, 10, "v")]),
            ));
        }
    }
    engine.write(&writes, NOW).expect("write");
    // Row delete of (0, a); range delete c1 in (1, 3]; older range delete ignored.
    let row_delete = RowUpdate {
        deletion: Some(DeletionTime::new(10, NOW.0)),
        ..Default::default()
    };
    let mut range = Mutation::new(spec.id, pk("p"));
    range.range_tombstones.push(RangeTombstone {
        start: ClusteringBound::around(clustering(1, "")[..1].to_vec(), false),
        end: ClusteringBound::around(clustering(3, "")[..1].to_vec(), true),
        deletion: DeletionTime::new(10, NOW.0),
    });
    range.range_tombstones.push(RangeTombstone {
        start: ClusteringBound::unbounded(),
        end: ClusteringBound::unbounded(),
        deletion: DeletionTime::new(9, NOW.0),
    });
    engine
        .write(
            &[
                row_write(spec.id, "p", clustering(0, "a"), row_delete),
                range,
            ],
            NOW,
        )
        .expect("write");
    let kept: Vec<Vec<Vec<u8>>> = read_full(engine, &spec, "p")
        .rows
        .into_iter()
        .map(|r| r.clustering)
        .collect();
    assert_eq!(
        kept,
        vec![
            clustering(0, "b"),
            clustering(1, "b"),
            clustering(1, "a"),
            clustering(4, "b"),
            clustering(4, "a")
        ]
    );
    // A newer write after a delete comes back; an older one stays shadowed.
    engine
        .write(
            &[
                row_write(spec.id, "p", clustering(2, "a"), cells(&[(1, 11, "again")])),
                row_write(spec.id, "p", clustering(3, "a"), cells(&[(1, 9, "late")])),
            ],
            NOW,
        )
        .expect("write");
    let p = read_full(engine, &spec, "p");
    assert!(p.rows.iter().any(|r| r.clustering == clustering(2, "a")));
    assert!(!p.rows.iter().any(|r| r.clustering == clustering(3, "a")));
    // Partition delete hides everything older, including the static row.
    let mut stat = Mutation::new(spec.id, pk("p"));
    stat.static_row = Some(RowUpdate {
        cells: vec![Cell::live(STATIC_COLUMN, 10, b"s".to_vec())],
        ..Default::default()
    });
    engine.write(&[stat], NOW).expect("write");
    assert!(read_full(engine, &spec, "p").static_row.is_some());
    let mut whole = Mutation::new(spec.id, pk("p"));
    whole.partition_deletion = Some(DeletionTime::new(10, NOW.0));
    engine.write(&[whole], NOW).expect("write");
    let p = read_full(engine, &spec, "p");
    assert!(p.static_row.is_none());
    assert_eq!(
        p.rows
            .iter()
            .map(|r| r.clustering.clone())
            .collect::<Vec<_>>(),
        vec![clustering(2, "a")]
    );
}

fn case_ttl_expiry<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let update = RowUpdate {
        liveness: Some(LivenessInfo::new(10, 100, NOW.0 + 100)),
        cells: vec![Cell::expiring(ColumnId(1), 10, 100, NOW, b"t".to_vec())],
        ..Default::default()
    };
    engine
        .write(&[row_write(spec.id, "a", clustering(1, "x"), update)], NOW)
        .expect("write");
    let read = full_read(spec.id, pk("a"));
    let before = engine
        .read_partition(&read, NOW.plus_seconds(99))
        .expect("read");
    assert_eq!(before.rows.len(), 1);
    assert_eq!(
        before.rows[0].content.cells[0].remaining_ttl(NOW.plus_seconds(99)),
        Some(1)
    );
    let after = engine
        .read_partition(&read, NOW.plus_seconds(100))
        .expect("read");
    assert!(
        after.rows.is_empty(),
        "expired at the local write time + ttl"
    );
}

fn case_collections_without_read_before_write<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let c = clustering(1, "x");
    let element = |ts, path: &str, live: bool| {
        let cell = if live {
            Cell::live(SET_COLUMN, ts, Vec::new())
        } else {
            Cell::tombstone(SET_COLUMN, ts, NOW)
        };
        cell.with_path(path.as_bytes().to_vec())
    };
    let add = |cells| RowUpdate {
        cells,
        ..Default::default()
    };
    engine
        .write(
            &[row_write(
                spec.id,
                "a",
                c.clone(),
                add(vec![element(10, "x", true), element(10, "y", true)]),
            )],
            NOW,
        )
        .expect("write");
    engine
        .write(
            &[row_write(
                spec.id,
                "a",
                c.clone(),
                add(vec![element(11, "z", true), element(11, "x", false)]),
            )],
            NOW,
        )
        .expect("write");
    let paths = |p: &Partition| -> Vec<Vec<u8>> {
        p.rows[0]
            .content
            .cells
            .iter()
            .filter_map(|c| c.path.clone())
            .collect()
    };
    assert_eq!(
        paths(&read_full(engine, &spec, "a")),
        vec![b"y".to_vec(), b"z".to_vec()]
    );
    // Overwrite the collection: a complex deletion at ts-1 then new elements.
    let overwrite = RowUpdate {
        complex_deletions: vec![(SET_COLUMN, DeletionTime::new(11, NOW.0))],
        cells: vec![element(12, "w", true)],
        ..Default::default()
    };
    engine
        .write(&[row_write(spec.id, "a", c, overwrite)], NOW)
        .expect("write");
    assert_eq!(paths(&read_full(engine, &spec, "a")), vec![b"w".to_vec()]);
}

fn case_slices_reverse_limits<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let mut writes = Vec::new();
    for c1 in 0..6 {
        for c2 in ["a", "b", "c"] {
            writes.push(row_write(
                spec.id,
                "p",
                clustering(c1, c2),
                cells(&[(1, 1, "v")]),
            ));
        }
    }
    engine.write(&writes, NOW).expect("write");
    let mut model = Model::default();
    model.apply(&writes);
    let bound =
        |c1: i32, inclusive| ClusteringBound::around(vec![c1.to_be_bytes().to_vec()], inclusive);
    let slices = vec![
        vec![Slice::all()],
        vec![Slice {
            start: bound(1, true),
            end: bound(3, false),
        }],
        vec![Slice {
            start: bound(1, false),
            end: bound(3, true),
        }],
        vec![
            Slice::prefix(clustering(2, "b")),
            Slice::prefix(clustering(4, "a")),
        ],
        vec![
            Slice {
                start: ClusteringBound::unbounded(),
                end: bound(2, true),
            },
            Slice {
                start: bound(4, false),
                end: ClusteringBound::unbounded(),
            },
        ],
    ];
    for s in slices {
        for reversed in [false, true] {
            for row_limit in [0, 1, 4] {
                let read = PartitionRead {
                    table: spec.id,
                    partition: pk("p"),
                    slices: s.clone(),
                    reversed,
                    include_static: false,
                    row_limit,
                };
                let got = engine.read_partition(&read, NOW).expect("read");
                let want = model.read_partition(&spec, &read, NOW);
                assert_same(&got, &want, &format!("{read:?}"));
            }
        }
    }
}

fn case_scan_and_paging<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let mut writes = Vec::new();
    for p in 0..20 {
        for c1 in 0..(p % 4) {
            writes.push(row_write(
                spec.id,
                &format!("k{p}"),
                clustering(c1, "a"),
                cells(&[(1, 1, "v")]),
            ));
        }
        if p % 4 == 0 {
            let mut m = Mutation::new(spec.id, pk(&format!("k{p}")));
            m.static_row = Some(cells(&[(3, 1, "s")]));
            writes.push(m);
        }
    }
    engine.write(&writes, NOW).expect("write");
    let mut model = Model::default();
    model.apply(&writes);
    let expected: Vec<(PartitionKey, usize)> = model
        .partitions()
        .into_iter()
        .map(|k| {
            let p = model.read(&spec, &k, NOW);
            (k, p.rows.len())
        })
        .collect();
    for page_size in [1, 3, 7, 100] {
        let mut position = None;
        let mut seen: Vec<(PartitionKey, usize)> = Vec::new();
        for _ in 0..200 {
            let scan = RangeScan {
                resume_after: position.clone(),
                row_limit: page_size,
                ..full_scan(spec.id)
            };
            let page = engine.scan(&scan, NOW).expect("scan");
            for p in page.partitions {
                match seen.last_mut() {
                    Some((k, n)) if *k == p.key => *n += p.rows.len(),
                    _ => seen.push((p.key, p.rows.len())),
                }
            }
            position = page.next;
            if position.is_none() {
                break;
            }
        }
        assert_eq!(seen, expected, "page size {page_size}");
    }
    // DISTINCT-style: one row per partition.
    let scan = RangeScan {
        per_partition_limit: 1,
        ..full_scan(spec.id)
    };
    let page = engine.scan(&scan, NOW).expect("scan");
    assert_eq!(page.partitions.len(), expected.len());
    assert!(page.partitions.iter().all(|p| p.rows.len() <= 1));
    // Tokens are in order.
    let tokens: Vec<_> = page.partitions.iter().map(|p| p.key.token).collect();
    let mut sorted = tokens.clone();
    sorted.sort();
    assert_eq!(tokens, sorted);
}

fn case_stream_round_trip<E: Engine>(source: &E, target: &E, start: i64, end: i64) {
    let spec = setup(source);
    setup(target);
    let mut writes = Vec::new();
    for p in 0..30 {
        writes.push(row_write(
            spec.id,
            &format!("k{p}"),
            clustering(p, "a"),
            cells(&[(1, p as i64, "v")]),
        ));
        let mut del = Mutation::new(spec.id, pk(&format!("k{p}")));
        del.partition_deletion = (p % 3 == 0).then(|| DeletionTime::new(100, NOW.0));
        writes.push(del);
    }
    source.write(&writes, NOW).expect("write");
    let dir = tempdir("stream");
    let range = TokenRange {
        start_exclusive: rocksandra_data::Token(start),
        end_inclusive: rocksandra_data::Token(end),
    };
    let files = source.stream_out(spec.id, range, &dir).expect("stream out");
    target.stream_in(spec.id, &files).expect("stream in");
    // A newer write on the target wins over streamed data and vice versa.
    for p in 0..30 {
        let key = pk(&format!("k{p}"));
        let got = target
            .read_partition(&full_read(spec.id, key.clone()), NOW)
            .expect("read");
        let want = if range.contains(key.token) {
            source
                .read_partition(&full_read(spec.id, key.clone()), NOW)
                .expect("read")
        } else {
            Partition {
                key,
                static_row: None,
                rows: vec![],
            }
        };
        assert_eq!(got, want, "partition k{p}");
    }
    // Tombstones travelled too: writing old data on the target stays hidden.
    let old = row_write(spec.id, "k0", clustering(0, "b"), cells(&[(1, 50, "old")]));
    target.write(&[old], NOW).expect("write");
    if range.contains(pk("k0").token) {
        assert!(read_full(target, &spec, "k0").rows.is_empty());
    }
    let _ = std::fs::remove_dir_all(dir);
}

fn case_partition_keys_lists_tombstoned_partitions<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let mut writes = Vec::new();
    for p in 0..40 {
        let name = format!("k{p}");
        if p % 4 == 0 {
            // A partition holding nothing but its deletion.
            let mut del = Mutation::new(spec.id, pk(&name));
            del.partition_deletion = Some(DeletionTime::new(100, NOW.0));
            writes.push(del);
        } else {
            writes.push(row_write(
                spec.id,
                &name,
                clustering(p, "a"),
                cells(&[(1, 5, "v")]),
            ));
            writes.push(row_write(
                spec.id,
                &name,
                clustering(p, "b"),
                cells(&[(1, 5, "w")]),
            ));
        }
    }
    engine.write(&writes, NOW).expect("write");
    // A wrapping range, walked two partitions at a time.
    let range = TokenRange {
        start_exclusive: rocksandra_data::Token(2_000_000_000_000_000_000),
        end_inclusive: rocksandra_data::Token(-1_000_000_000_000_000_000),
    };
    let mut got = Vec::new();
    loop {
        let page = engine
            .partition_keys(spec.id, range, got.last(), 2)
            .expect("partition keys");
        assert!(page.len() <= 2);
        if page.is_empty() {
            break;
        }
        got.extend(page);
    }
    let mut want: Vec<PartitionKey> = (0..40)
        .map(|p| pk(&format!("k{p}")))
        .filter(|k| range.contains(k.token))
        .collect();
    // Key order: the part from the ring's start first, then the part
    // before its end.
    want.sort_by_key(|k| (k.token, k.key.clone()));
    assert_eq!(got, want);
    assert!(got.iter().any(|k| k.token.0 > 2_000_000_000_000_000_000));
    assert!(got.iter().any(|k| k.token.0 <= -1_000_000_000_000_000_000));
    let deleted = pk("k0");
    if range.contains(deleted.token) {
        assert!(got.contains(&deleted), "a deleted partition is listed");
    }
}

fn case_compaction_keeps_visible_data<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let mut writes = Vec::new();
    for p in 0..10 {
        writes.push(row_write(
            spec.id,
            &format!("k{p}"),
            clustering(1, "a"),
            cells(&[(1, 5, "v"), (2, 6, "w")]),
        ));
        writes.push(row_write(
            spec.id,
            &format!("k{p}"),
            clustering(1, "a"),
            RowUpdate {
                cells: vec![Cell::tombstone(ColumnId(2), 7, NOW)],
                ..Default::default()
            },
        ));
    }
    engine.write(&writes, NOW).expect("write");
    engine.flush().expect("flush");
    let before: Vec<Partition> = (0..10)
        .map(|p| read_full(engine, &spec, &format!("k{p}")))
        .collect();
    engine.compact(spec.id, NOW).expect("compact");
    let after: Vec<Partition> = (0..10)
        .map(|p| read_full(engine, &spec, &format!("k{p}")))
        .collect();
    assert_eq!(before, after);
}

/// A serialized decimal: scale, then the unscaled value's bytes.
fn decimal(scale: i32, unscaled: &[u8]) -> Vec<u8> {
    let mut out = scale.to_be_bytes().to_vec();
    out.extend_from_slice(unscaled);
    out
}

/// `1.50` and `1.5` are one row, shown as first written (earliest
/// timestamp) whatever the arrival order, through a flush and a
/// compaction; a slice bound and a raw read see the row by value.
fn case_decimal_clustering_keeps_its_written_form<E: Engine>(engine: &E) {
    let spec = TableSpec {
        clustering: vec![
            ClusteringColumn {
                ty: CqlType::Native(NativeType::Decimal),
                descending: true,
            },
            ClusteringColumn {
                ty: CqlType::Native(NativeType::Int),
                descending: false,
            },
        ],
        ..test_table(9)
    };
    engine.create_table(spec.clone()).expect("create table");
    let (d150, d15, d100) = (
        decimal(2, &[0, 0x96]),
        decimal(1, &[0x0f]),
        decimal(0, &[0x64]),
    );
    let row = |d: &[u8]| vec![d.to_vec(), 1i32.to_be_bytes().to_vec()];
    let writes = [
        row_write(spec.id, "d", row(&d15), cells(&[(2, 20, "later")])),
        row_write(spec.id, "d", row(&d150), cells(&[(1, 10, "first")])),
        row_write(spec.id, "d", row(&d100), cells(&[(1, 10, "100")])),
        row_write(
            spec.id,
            "d",
            row(&decimal(-2, &[1])),
            cells(&[(2, 30, "1E+2")]),
        ),
    ];
    for w in writes {
        engine.write(&[w], NOW).expect("write");
    }
    let expected = vec![
        (row(&d100), vec![(1, "100".into()), (2, "1E+2".into())]),
        (row(&d150), vec![(1, "first".into()), (2, "later".into())]),
    ];
    assert_eq!(values(&read_full(engine, &spec, "d")), expected);
    engine.flush().expect("flush");
    engine.compact(spec.id, NOW).expect("compact");
    assert_eq!(values(&read_full(engine, &spec, "d")), expected);
    let mut read = full_read(spec.id, pk("d"));
    read.slices = vec![Slice::prefix(vec![decimal(3, &[0x05, 0xdc])])];
    let p = engine.read_partition(&read, NOW).expect("read");
    assert_eq!(values(&p), expected[1..].to_vec());
    let raw = engine.read_raw(&read, NOW).expect("raw read");
    assert_eq!(raw.data.rows.len(), 1);
    assert_eq!(raw.data.rows[0].0, row(&d150));
    // A row whose first write's cells were all overwritten, read raw and
    // merged with a replica that saw only the later write (what a
    // coordinator does): the spelled-out form stays.
    let r = row_write(spec.id, "e", row(&d150), cells(&[(1, 40, "a")]));
    engine.write(&[r], NOW).expect("write");
    let r = row_write(spec.id, "e", row(&d15), cells(&[(1, 50, "b")]));
    engine.write(&[r], NOW).expect("write");
    let raw = engine
        .read_raw(&full_read(spec.id, pk("e")), NOW)
        .expect("raw read");
    let mut repaired = raw.data;
    repaired.partition = pk("f");
    let other = row_write(spec.id, "f", row(&d15), cells(&[(1, 50, "b")]));
    engine.write(&[other, repaired], NOW).expect("write");
    for key in ["e", "f"] {
        let shown = values(&read_full(engine, &spec, key));
        assert_eq!(shown, vec![(row(&d150), vec![(1, "b".into())])], "{key}");
    }
}

/// Partition deletions and range tombstones past gc_grace are purged by a
/// full compaction without resurrecting what they shadowed; younger ones stay.
/// That a tombstone is gone shows the way Cassandra shows it: a write older
/// than the tombstone, arriving after the purge, is visible again.
fn case_purge_after_gc_grace<E: Engine>(engine: &E) {
    let mut spec = test_table(8);
    spec.options.gc_grace_seconds = 60;
    engine.create_table(spec.clone()).expect("create table");
    let old = NOW.0 - 100; // deleted 100 s ago: past gc_grace
    let mut writes = Vec::new();
    for (key, deleted_at) in [("old", old), ("young", NOW.0)] {
        for c1 in 0..6 {
            let ts = if c1 % 2 == 0 { 10 } else { 30 };
            let mut row = cells(&[(1, ts, "v")]);
            row.liveness = Some(LivenessInfo::new(ts, 0, 0));
            writes.push(row_write(spec.id, key, clustering(c1, "a"), row));
        }
        let mut static_row = Mutation::new(spec.id, pk(key));
        static_row.static_row = Some(cells(&[(STATIC_COLUMN.0, 10, "s")]));
        writes.push(static_row);
        let mut deletion = Mutation::new(spec.id, pk(key));
        deletion.partition_deletion = Some(DeletionTime::new(20, deleted_at));
        writes.push(deletion);
        let mut range = Mutation::new(spec.id, pk(key));
        range.range_tombstones.push(RangeTombstone {
            start: ClusteringBound::around(clustering(3, "")[..1].to_vec(), true),
            end: ClusteringBound::around(clustering(4, "")[..1].to_vec(), true),
            deletion: DeletionTime::new(40, deleted_at),
        });
        writes.push(range);
    }
    engine.write(&writes, NOW).expect("write");
    engine.flush().expect("flush");
    let before: Vec<Partition> = ["old", "young"]
        .iter()
        .map(|k| read_full(engine, &spec, k))
        .collect();
    let kept: Vec<i32> = vec![1, 5]; // ts 30 > 20, outside the range tombstone
    for p in &before {
        assert_eq!(p.rows.len(), kept.len(), "{p:?}");
        assert!(
            p.static_row.is_none(),
            "static cell at ts 10 < 20 is deleted"
        );
    }
    engine.compact(spec.id, NOW).expect("compact");
    let after: Vec<Partition> = ["old", "young"]
        .iter()
        .map(|k| read_full(engine, &spec, k))
        .collect();
    assert_eq!(before, after, "purging resurrects nothing");
    // Late writes with timestamps older than both tombstones.
    let mut late = Vec::new();
    for key in ["old", "young"] {
        for c1 in [0, 3] {
            late.push(row_write(
                spec.id,
                key,
                clustering(c1, "late"),
                cells(&[(1, 15, "late")]),
            ));
        }
    }
    engine.write(&late, NOW).expect("write");
    let visible = |key: &str| -> Vec<i32> {
        read_full(engine, &spec, key)
            .rows
            .iter()
            .filter(|r| r.clustering[1] == b"late")
            .filter_map(|r| Some(i32::from_be_bytes(r.clustering[0].clone().try_into().ok()?)))
            .collect()
    };
    assert_eq!(visible("old"), vec![0, 3], "both tombstones were purged");
    assert!(
        visible("young").is_empty(),
        "tombstones within gc_grace stay"
    );
}

fn case_cleanup_and_truncate<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let mut writes = Vec::new();
    for p in 0..40 {
        writes.push(row_write(
            spec.id,
            &format!("k{p}"),
            clustering(1, "a"),
            cells(&[(1, 1, "v")]),
        ));
    }
    engine.write(&writes, NOW).expect("write");
    let keep = TokenRange {
        start_exclusive: rocksandra_data::Token(0),
        end_inclusive: rocksandra_data::Token(i64::MAX / 2),
    };
    engine.cleanup(spec.id, &[keep]).expect("cleanup");
    for p in 0..40 {
        let key = pk(&format!("k{p}"));
        let present = !read_full(engine, &spec, &format!("k{p}")).rows.is_empty();
        assert_eq!(present, keep.contains(key.token), "k{p}");
    }
    engine.truncate(spec.id).expect("truncate");
    let page = engine.scan(&full_scan(spec.id), NOW).expect("scan");
    assert!(page.partitions.is_empty());
}

/// A bound on the first clustering column only.
fn c1_bound(c1: i32, inclusive: bool) -> ClusteringBound {
    ClusteringBound::around(vec![c1.to_be_bytes().to_vec()], inclusive)
}

/// `read_raw` hands on dead rows met before the limit, counts only the live
/// ones, and includes every tombstone of the partition whatever the slices.
fn case_read_raw_counts_live_rows<E: Engine>(engine: &E) {
    let spec = setup(engine);
    let mut writes = Vec::new();
    for c1 in 0..6 {
        let row = if c1 == 1 {
            RowUpdate {
                cells: vec![Cell::expiring(ColumnId(1), 10, 5, NOW, b"t".to_vec())],
                ..Default::default()
            }
        } else {
            cells(&[(1, 10, "v")])
        };
        writes.push(row_write(spec.id, "p", clustering(c1, "a"), row));
    }
    let row_delete = RowUpdate {
        deletion: Some(DeletionTime::new(11, NOW.0)),
        ..Default::default()
    };
    writes.push(row_write(spec.id, "p", clustering(2, "a"), row_delete));
    let mut head = Mutation::new(spec.id, pk("p"));
    head.partition_deletion = Some(DeletionTime::new(5, NOW.0));
    head.static_row = Some(cells(&[(STATIC_COLUMN.0, 10, "s")]));
    head.range_tombstones.push(RangeTombstone {
        start: c1_bound(4, true),
        end: c1_bound(4, true),
        deletion: DeletionTime::new(20, NOW.0),
    });
    writes.push(head.clone());
    engine.write(&writes, NOW).expect("write");
    // At `at`: rows 0, 3 and 5 live; 1 expired, 2 deleted, 4 range-deleted.
    let at = NOW.plus_seconds(10);
    let raw = |slices: Vec<Slice>, reversed, include_static, row_limit| {
        let read = PartitionRead {
            table: spec.id,
            partition: pk("p"),
            slices,
            reversed,
            include_static,
            row_limit,
        };
        engine.read_raw(&read, at).expect("read raw")
    };
    let c1s = |raw: &RawPartition| -> Vec<i32> {
        raw.data
            .rows
            .iter()
            .filter_map(|(c, _)| Some(i32::from_be_bytes(c[0].clone().try_into().ok()?)))
            .collect()
    };
    let all = raw(vec![Slice::all()], false, true, 0);
    assert_eq!(c1s(&all), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!((all.live_rows, all.limit_reached), (3, false));
    assert_eq!(all.data.partition_deletion, head.partition_deletion);
    assert_eq!(all.data.range_tombstones, head.range_tombstones);
    assert_eq!(all.data.static_row, head.static_row);
    assert!(
        matches!(all.data.rows[1].1.cells[0].kind, CellKind::Expiring { .. }),
        "an expired cell is returned as stored"
    );
    assert_eq!(
        all.data.rows[2].1.deletion,
        Some(DeletionTime::new(11, NOW.0))
    );
    let limited = raw(vec![Slice::all()], false, true, 2);
    assert_eq!(c1s(&limited), vec![0, 1, 2, 3]);
    assert_eq!((limited.live_rows, limited.limit_reached), (2, true));
    let reversed = raw(vec![Slice::all()], true, true, 2);
    assert_eq!(c1s(&reversed), vec![5, 4, 3]);
    assert_eq!((reversed.live_rows, reversed.limit_reached), (2, true));
    let exact = raw(vec![Slice::all()], false, true, 3);
    assert_eq!(c1s(&exact), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!((exact.live_rows, exact.limit_reached), (3, true));
    let beyond = raw(vec![Slice::all()], false, true, 4);
    assert_eq!((beyond.live_rows, beyond.limit_reached), (3, false));
    let up_to_3 = Slice {
        start: ClusteringBound::unbounded(),
        end: c1_bound(3, true),
    };
    let sliced = raw(vec![up_to_3], false, false, 0);
    assert_eq!(c1s(&sliced), vec![0, 1, 2, 3]);
    assert_eq!((sliced.live_rows, sliced.limit_reached), (2, false));
    assert_eq!(sliced.data.static_row, None);
    assert_eq!(
        sliced.data.range_tombstones, head.range_tombstones,
        "tombstones outside the slices too"
    );
    assert_eq!(sliced.data.partition, pk("p"));
    assert_eq!(sliced.data.table, spec.id);
}

/// Table ids that no other case uses, one per seed of a `read_raw` case.
fn next_table_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1_000);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Writes random mutations one by one, with flushes and compactions among
/// them; returns them and the clock after the last write.
fn write_history<E: Engine>(
    engine: &E,
    spec: &TableSpec,
    rng: &mut SplitMix,
    count: usize,
) -> (Vec<Mutation>, LocalTime) {
    let mut now = NOW;
    let mut all = Vec::with_capacity(count);
    for _ in 0..count {
        if rng.chance(10) {
            now = now.plus_seconds(rng.below(8) as i64);
        }
        let mutation = random_mutation(rng, spec, now);
        engine
            .write(std::slice::from_ref(&mutation), now)
            .expect("write");
        all.push(mutation);
        if rng.chance(3) {
            engine.flush().expect("flush");
        }
        if rng.chance(2) {
            engine.compact(spec.id, now).expect("compact");
        }
    }
    (all, now)
}

/// Reads of one partition: whole (forward, reversed, limited), two slices,
/// and random ones.
fn raw_reads(rng: &mut SplitMix, spec: &TableSpec, partition: &PartitionKey) -> Vec<PartitionRead> {
    let whole = full_read(spec.id, partition.clone());
    let mut reads = vec![
        whole.clone(),
        PartitionRead {
            reversed: true,
            ..whole.clone()
        },
        PartitionRead {
            row_limit: 2,
            ..whole.clone()
        },
        PartitionRead {
            reversed: true,
            row_limit: 1,
            include_static: false,
            ..whole.clone()
        },
        PartitionRead {
            slices: vec![
                Slice {
                    start: ClusteringBound::unbounded(),
                    end: c1_bound(0, true),
                },
                Slice {
                    start: c1_bound(1, false),
                    end: ClusteringBound::unbounded(),
                },
            ],
            reversed: rng.chance(50),
            row_limit: rng.below(3) as usize,
            ..whole
        },
    ];
    for _ in 0..4 {
        reads.push(PartitionRead {
            partition: partition.clone(),
            ..random_read(rng, spec)
        });
    }
    reads
}

/// Applies `raws` to `target`, whose table of the read is empty, and
/// answers `reads` from it, each at its time; empties the table again after.
fn read_through_raw<E: Engine>(
    target: &E,
    raws: Vec<RawPartition>,
    reads: &[(&PartitionRead, LocalTime)],
) -> Vec<Partition> {
    let mutations: Vec<Mutation> = raws.into_iter().map(|raw| raw.data).collect();
    target.write(&mutations, NOW).expect("write raw");
    let answers = reads
        .iter()
        .map(|(read, at)| target.read_partition(read, *at).expect("read"))
        .collect();
    for table in BTreeSet::from_iter(mutations.iter().map(|m| m.table)) {
        target.truncate(table).expect("truncate");
    }
    answers
}

/// Asserts what `read_raw` says of itself: rows in the order read, as many
/// live ones as the read returns, the limit reached exactly when it was.
fn assert_raw_consistent(
    spec: &TableSpec,
    raw: &RawPartition,
    read: &PartitionRead,
    answer: &Partition,
) {
    let context = format!("{read:?}");
    assert_eq!(raw.live_rows, answer.rows.len(), "{context}");
    assert_eq!(
        raw.limit_reached,
        read.row_limit > 0 && raw.live_rows == read.row_limit,
        "{context}"
    );
    let order = if read.reversed {
        Ordering::Greater
    } else {
        Ordering::Less
    };
    for pair in raw.data.rows.windows(2) {
        assert_eq!(
            compare_clustering(spec, &pair[0].0, &pair[1].0),
            order,
            "{context}"
        );
    }
}

/// What `read_raw` returns, written to an empty engine, answers the same
/// read there as in the source engine, limits included.
fn case_read_raw_round_trip<E: Engine>(source: &E, target: &E) {
    for seed in 0..6 {
        let mut rng = SplitMix::new(seed);
        let spec = test_table(next_table_id());
        source.create_table(spec.clone()).expect("create table");
        target.create_table(spec.clone()).expect("create table");
        let (_, now) = write_history(source, &spec, &mut rng, 80);
        for key in KEYS.map(pk) {
            for read in raw_reads(&mut rng, &spec, &key) {
                let at = now.plus_seconds(rng.below(25) as i64);
                let later = at.plus_seconds(30);
                let raw = source.read_raw(&read, at).expect("read raw");
                let want = source.read_partition(&read, at).expect("read");
                assert_raw_consistent(&spec, &raw, &read, &want);
                let mut reads = vec![(&read, at)];
                if read.row_limit == 0 {
                    // Without a limit every row of the slices travelled, so
                    // the copy also expires as the source does.
                    reads.push((&read, later));
                }
                let got = read_through_raw(target, vec![raw], &reads);
                let context = format!("seed {seed}: {read:?} at {at:?}");
                assert_same(&got[0], &want, &context);
                if let Some(later_answer) = got.get(1) {
                    let source_later = source.read_partition(&read, later).expect("read");
                    assert_same(later_answer, &source_later, &context);
                }
            }
        }
    }
}

/// Replicas that each missed some writes, reconciled by applying all their
/// `read_raw`s to one engine, answer as a replica that got every write.
/// (Reads without a limit: with one, a replica's rows past its limit may be
/// needed where another replica's tombstones hide rows within it, Cassandra's
/// short reads.)
fn case_read_raw_reconciles_replicas<E: Engine>(complete: &E, partial: &[E], coordinator: &E) {
    for seed in 0..6 {
        let mut rng = SplitMix::new(1_000 + seed);
        let spec = test_table(next_table_id());
        for engine in partial.iter().chain([complete, coordinator]) {
            engine.create_table(spec.clone()).expect("create table");
        }
        let (all, now) = write_history(complete, &spec, &mut rng, 80);
        for mutation in &all {
            // One partial replica gets the write, each other one by chance.
            let owner = rng.below(partial.len() as u64) as usize;
            for (i, replica) in partial.iter().enumerate() {
                if i == owner || rng.chance(50) {
                    replica
                        .write(std::slice::from_ref(mutation), now)
                        .expect("write");
                }
                if rng.chance(3) {
                    replica.flush().expect("flush");
                }
            }
        }
        let mut model = Model::default();
        model.apply(&all);
        for key in KEYS.map(pk) {
            for read in raw_reads(&mut rng, &spec, &key) {
                let read = PartitionRead {
                    row_limit: 0,
                    ..read
                };
                let at = now.plus_seconds(rng.below(25) as i64);
                let raws = partial
                    .iter()
                    .map(|replica| replica.read_raw(&read, at).expect("read raw"))
                    .collect();
                let got = read_through_raw(coordinator, raws, &[(&read, at)]);
                let want = complete.read_partition(&read, at).expect("read");
                let context = format!("seed {seed}: {read:?} at {at:?}");
                assert_same(&got[0], &want, &context);
                assert_same(&want, &model.read_partition(&spec, &read, at), &context);
            }
        }
    }
}

/// A fresh directory under the system temp dir.
pub fn tempdir(tag: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "rocksandra-{tag}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// A tiny deterministic generator (SplitMix64) so every model check is
/// replayable from its seed.
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One step of a model check.
#[derive(Clone, Debug)]
pub enum Op {
    Write(Vec<Mutation>),
    Read(PartitionRead, LocalTime),
    Flush,
    Compact,
}

const KEYS: [&str; 4] = ["p0", "p1", "p2", "p3"];
const C2: [&str; 3] = ["", "a", "b"];

fn random_clustering(rng: &mut SplitMix) -> Vec<Vec<u8>> {
    clustering(rng.below(4) as i32 - 1, C2[rng.below(3) as usize])
}

fn random_bound(rng: &mut SplitMix) -> ClusteringBound {
    let full = random_clustering(rng);
    let len = rng.below(3) as usize;
    ClusteringBound::around(full[..len].to_vec(), rng.chance(50))
}

fn random_cell(rng: &mut SplitMix, column: ColumnId, now: LocalTime) -> Cell {
    let timestamp = rng.below(12) as i64;
    let value = vec![b'a' + rng.below(3) as u8];
    let cell = match rng.below(6) {
        0 => Cell::tombstone(column, timestamp, now),
        1 => Cell::expiring(column, timestamp, 1 + rng.below(20) as i32, now, value),
        _ => Cell::live(column, timestamp, value),
    };
    if column == SET_COLUMN {
        // Some elements keep a written form beside their path, as decimal
        // keys do.
        let written = (rng.below(3) == 0).then(|| vec![rng.below(2) as u8]);
        cell.with_element_key((vec![b'x' + rng.below(3) as u8], written))
    } else {
        cell
    }
}

fn random_row_update(rng: &mut SplitMix, now: LocalTime, is_static: bool) -> RowUpdate {
    let mut update = RowUpdate::default();
    if !is_static && rng.chance(30) {
        let ttl = if rng.chance(30) {
            1 + rng.below(20) as i32
        } else {
            0
        };
        let expires = if ttl > 0 { now.0 + i64::from(ttl) } else { 0 };
        update.liveness = Some(LivenessInfo::new(rng.below(12) as i64, ttl, expires));
    }
    if !is_static && rng.chance(10) {
        update.deletion = Some(DeletionTime::new(rng.below(12) as i64, now.0));
    }
    if !is_static && rng.chance(10) {
        update
            .complex_deletions
            .push((SET_COLUMN, DeletionTime::new(rng.below(12) as i64, now.0)));
    }
    let columns: &[ColumnId] = if is_static {
        &[STATIC_COLUMN]
    } else {
        &[ColumnId(1), ColumnId(2), SET_COLUMN]
    };
    for _ in 0..rng.below(4) {
        let column = columns[rng.below(columns.len() as u64) as usize];
        update.cells.push(random_cell(rng, column, now));
    }
    update
}

fn random_mutation(rng: &mut SplitMix, spec: &TableSpec, now: LocalTime) -> Mutation {
    let mut m = Mutation::new(spec.id, pk(KEYS[rng.below(4) as usize]));
    if spec.clustering.is_empty() {
        match rng.below(10) {
            0 => m.partition_deletion = Some(DeletionTime::new(rng.below(12) as i64, now.0)),
            _ => m
                .rows
                .push((Vec::new(), random_row_update(rng, now, false))),
        }
        return m;
    }
    match rng.below(20) {
        0 => m.partition_deletion = Some(DeletionTime::new(rng.below(12) as i64, now.0)),
        1 | 2 => m.range_tombstones.push(RangeTombstone {
            start: random_bound(rng),
            end: random_bound(rng),
            deletion: DeletionTime::new(rng.below(12) as i64, now.0),
        }),
        3 | 4 => m.static_row = Some(random_row_update(rng, now, true)),
        _ => {
            for _ in 0..1 + rng.below(3) {
                let c = random_clustering(rng);
                m.rows.push((c, random_row_update(rng, now, false)));
            }
        }
    }
    m
}

/// A slice of a table without clustering columns: the whole partition,
/// none of it, or bounds with empty prefixes (an exclusive start excludes
/// the row).
fn random_unclustered_slices(rng: &mut SplitMix) -> Vec<Slice> {
    let empty_bound = |inclusive| ClusteringBound::around(Vec::new(), inclusive);
    match rng.below(5) {
        0 => Vec::new(),
        1 | 2 => vec![Slice {
            start: empty_bound(rng.chance(50)),
            end: empty_bound(rng.chance(50)),
        }],
        _ => vec![Slice::all()],
    }
}

fn random_read(rng: &mut SplitMix, spec: &TableSpec) -> PartitionRead {
    let table = spec.id;
    let slices = match rng.below(4) {
        _ if spec.clustering.is_empty() => random_unclustered_slices(rng),
        0 => vec![Slice::prefix(random_clustering(rng))],
        1 => vec![Slice {
            start: random_bound(rng),
            end: random_bound(rng),
        }],
        _ => vec![Slice::all()],
    };
    PartitionRead {
        table,
        partition: pk(KEYS[rng.below(4) as usize]),
        slices,
        reversed: rng.chance(30),
        include_static: rng.chance(70),
        row_limit: if rng.chance(30) {
            1 + rng.below(4) as usize
        } else {
            0
        },
    }
}

/// A random history of writes (out-of-order timestamps, TTLs, deletions of
/// every kind) interleaved with reads at advancing clocks.
pub fn random_ops(seed: u64, count: usize) -> Vec<Op> {
    random_ops_on(&test_table(7), seed, count)
}

/// `random_ops` for the table `spec` (`test_table` or `unclustered_table`).
pub fn random_ops_on(spec: &TableSpec, seed: u64, count: usize) -> Vec<Op> {
    let mut rng = SplitMix::new(seed);
    let mut now = NOW;
    let mut ops = Vec::with_capacity(count);
    for _ in 0..count {
        if rng.chance(10) {
            now = now.plus_seconds(rng.below(8) as i64);
        }
        ops.push(match rng.below(20) {
            0..=9 => Op::Write(
                (0..1 + rng.below(2))
                    .map(|_| random_mutation(&mut rng, spec, now))
                    .collect(),
            ),
            10 => Op::Flush,
            11 => Op::Compact,
            _ => Op::Read(
                random_read(&mut rng, spec),
                now.plus_seconds(rng.below(25) as i64),
            ),
        });
    }
    ops
}

/// Applies `ops` to the engine and to the model; every read must agree.
/// The table keeps the default gc_grace (10 days), so compactions purge
/// nothing a read could observe.
pub fn check_against_model<E: Engine>(engine: &E, ops: &[Op], seed: u64) {
    check_against_model_on(engine, &test_table(7), ops, seed)
}

/// `check_against_model` on the table `spec`, which `ops` were made for.
pub fn check_against_model_on<E: Engine>(engine: &E, spec: &TableSpec, ops: &[Op], seed: u64) {
    let spec = spec.clone();
    engine.create_table(spec.clone()).expect("create table");
    let mut model = Model::default();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Write(mutations) => {
                engine.write(mutations, NOW).expect("write");
                model.apply(mutations);
            }
            Op::Flush => engine.flush().expect("flush"),
            Op::Compact => engine.compact(spec.id, NOW).expect("compact"),
            Op::Read(read, at) => {
                let got = engine.read_partition(read, *at).expect("read");
                let want = model.read_partition(&spec, read, *at);
                assert_same(
                    &got,
                    &want,
                    &format!("seed {seed}, op {i}: {read:?} at {at:?}"),
                );
            }
        }
    }
}
