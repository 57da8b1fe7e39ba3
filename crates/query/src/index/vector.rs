//! Approximate nearest-neighbour graphs (HNSW, the `hnsw_rs` crate) for
//! the SAI vector indexes, over this node's own data: what answers `ORDER
//! BY v ANN OF [..] LIMIT n` without a WHERE clause, as Cassandra's
//! jvector graph does (in a cluster, each replica's for its ranges).
//!
//! - A graph is built in the background (thread `ann-graph-build`, one
//!   build at a time) from a scan of the table's storage, started at start
//!   (unless `persist` loads the one saved at the last clean stop) or by
//!   the first ANN query of its column; queries rank by scan until it is
//!   ready. It is registered before that scan, so the writes of the
//!   meantime reach it.
//! - Every write of the column adds a point (`observe`, once the write is
//!   applied, CAS included); nothing is removed.
//! - The graph only proposes candidates: each is read back from the table
//!   and ranked by its current vector and the exact score
//!   (`select::ann`). Deleted rows, older vectors and duplicates of a row
//!   drop out there, and more candidates are asked for while too few
//!   remain; a graph that proposes fewer points than asked for (a miss)
//!   hands the query to the exact scan. A graph is thrown away and
//!   rebuilt once it holds more than twice the points it was built with
//!   (plus `GRAPH_SLACK_POINTS`).
//! - In a cluster every node keeps the graphs of its own data: the writes
//!   it applies as a replica (whoever coordinated them, hints, batchlog
//!   replay, read repair, Paxos commits) are observed where the node
//!   applies them to storage (`observe_applied`, the cluster's engine
//!   hook), and data that arrives otherwise (streamed or imported files,
//!   truncation) drops the table's graphs (`forget_table`), to be rebuilt
//!   from storage. A replica answers the coordinator's ANN request from
//!   its graph for the token ranges asked (`index::vector_local`).
//!
//! Memory: a graph holds each vector once per write (and 16 links per
//! point); at most `GRAPH_POINTS_MAX` points per graph, past which the
//! column is ranked by scan.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::hnsw::Hnsw;
use rocksandra_data::LocalTime;
use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::{Engine, Mutation, PartitionKey, RangeScan, TableId};

use crate::functions::vector::{decode_floats, Similarity};
use crate::schema::{Schema, Table};

pub mod persist;

/// Links kept per point and layer (HNSW's M).
const GRAPH_CONNECTIONS: usize = 16;
/// Candidates explored while inserting (HNSW's ef_construction).
const GRAPH_EF_CONSTRUCTION: usize = 100;
const GRAPH_LAYERS: usize = 16;
/// The most points one graph holds; past it the column is ranked by scan.
pub const GRAPH_POINTS_MAX: usize = 2_000_000;
/// The points a new graph reserves room for (it grows past them).
const GRAPH_CAPACITY_HINT: usize = 16_384;
/// Points a graph may gain beyond twice its build size before a rebuild.
const GRAPH_SLACK_POINTS: usize = 10_000;

/// The distance the graph orders by: non-negative and finite (the crate
/// asserts the first and compares with `partial_cmp`), decreasing with
/// the similarity score.
struct ScoreDistance(Similarity);

impl Distance<f32> for ScoreDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        let score = self.0.score(a, b);
        let distance = match self.0 {
            // Scores in [0, 1].
            Similarity::Cosine | Similarity::Euclidean => (1.0 - score).max(0.0),
            // (1 + dot) / 2 is unbounded: squashed into (0, 1).
            Similarity::DotProduct => 1.0 / (1.0 + (2.0 * score).exp()),
        };
        if distance.is_finite() {
            distance
        } else {
            2.0
        }
    }
}

/// A row of the indexed table: its partition and clustering.
pub type RowKey = (PartitionKey, Option<Vec<Vec<u8>>>);

/// One column's graph.
pub struct Graph {
    hnsw: Hnsw<'static, f32, ScoreDistance>,
    /// The row of each point, by point id.
    rows: RwLock<Vec<RowKey>>,
    /// Set once the build's scan has been inserted.
    ready: AtomicBool,
    built_with: AtomicUsize,
    dimension: usize,
}

impl Graph {
    fn new(similarity: Similarity, dimension: usize) -> Graph {
        let hnsw = Hnsw::new(
            GRAPH_CONNECTIONS,
            GRAPH_CAPACITY_HINT,
            GRAPH_LAYERS,
            GRAPH_EF_CONSTRUCTION,
            ScoreDistance(similarity),
        );
        Graph::with_hnsw(hnsw, Vec::new(), dimension)
    }

    /// A graph of `hnsw`, whose point i is `rows[i]`'s (not built yet).
    fn with_hnsw(
        hnsw: Hnsw<'static, f32, ScoreDistance>,
        rows: Vec<RowKey>,
        dimension: usize,
    ) -> Graph {
        Graph {
            hnsw,
            rows: RwLock::new(rows),
            ready: AtomicBool::new(false),
            built_with: AtomicUsize::new(0),
            dimension,
        }
    }

    /// Adds a point for `row`'s vector; false once the graph is full.
    pub fn insert(&self, row: RowKey, vector: &[f32]) -> bool {
        if vector.len() != self.dimension {
            return true;
        }
        // The rows' lock also keeps searches out while a point goes in:
        // the crate does not search and insert at once.
        let mut rows = self.rows.write().unwrap_or_else(|p| p.into_inner());
        if rows.len() >= GRAPH_POINTS_MAX {
            return false;
        }
        rows.push(row);
        self.hnsw.insert_slice((vector, rows.len() - 1));
        true
    }

    /// Adds a batch of points (a build's), inserted by the crate's
    /// threads; false once the graph is full.
    fn insert_batch(&self, batch: Vec<(RowKey, Vec<f32>)>) -> bool {
        let mut rows = self.rows.write().unwrap_or_else(|p| p.into_inner());
        if rows.len() + batch.len() > GRAPH_POINTS_MAX {
            return false;
        }
        let was_empty = rows.is_empty();
        let mut points = Vec::with_capacity(batch.len());
        for (row, vector) in &batch {
            if vector.len() == self.dimension {
                rows.push(row.clone());
                points.push((vector.as_slice(), rows.len() - 1));
            }
        }
        // The crate links no point inserted while the graph has no entry
        // point yet: two first points inserted at once would leave one
        // unreachable. The first goes in alone.
        if was_empty && !points.is_empty() {
            self.hnsw.insert_slice(points.remove(0));
        }
        self.hnsw.parallel_insert_slice(&points);
        true
    }

    pub fn mark_built(&self) {
        let points = self.points();
        self.built_with.store(points, Ordering::Release);
        self.ready.store(true, Ordering::Release);
    }

    pub fn points(&self) -> usize {
        self.rows.read().map(|r| r.len()).unwrap_or(0)
    }

    /// Whether the graph answers queries: built, not full, not grown past
    /// twice its build.
    pub fn usable(&self) -> bool {
        let points = self.points();
        self.ready.load(Ordering::Acquire)
            && points < GRAPH_POINTS_MAX
            && points <= 2 * self.built_with.load(Ordering::Acquire) + GRAPH_SLACK_POINTS
    }

    /// The rows of the `k` points nearest `query` (several points may be
    /// one row), nearest first.
    pub fn nearest(&self, query: &[f32], k: usize) -> Vec<RowKey> {
        // A wider search than k finds the true neighbours more often.
        let ef = (2 * k).max(128);
        let rows = self.rows.read().unwrap_or_else(|p| p.into_inner());
        let found = self.hnsw.search(query, k, ef);
        found
            .iter()
            .filter_map(|n| rows.get(n.d_id).cloned())
            .collect()
    }
}

/// The graphs of this node, by table and column.
#[derive(Default)]
pub struct Graphs {
    graphs: Mutex<HashMap<(TableId, ColumnId), Arc<Graph>>>,
    /// The tables with an SAI index on a vector column (`track`): their
    /// writes are handed to `observe` once applied.
    vector_tables: RwLock<std::collections::HashSet<TableId>>,
    /// One build at a time.
    building: Mutex<()>,
    /// Set in a cluster, where the storage hook observes every write the
    /// node applies (`observe_applied`): statements do not copy theirs.
    observed_in_storage: AtomicBool,
}

impl Graphs {
    /// From now on writes are observed where the node applies them to
    /// storage (`observe_applied`; the node is a cluster member), not by
    /// the statements that make them (`to_observe` gives none).
    pub fn observe_in_storage(&self) {
        self.observed_in_storage.store(true, Ordering::Release);
    }

    /// The storage hook: adds the vectors of `mutations`, just applied by
    /// this node, to its graphs. A table without a vector index costs the
    /// check of an empty set.
    pub fn observe_applied(&self, mutations: &[Mutation]) {
        self.observe(&self.of_vector_tables(mutations));
    }

    /// Drops the graphs of `table`, whose data changed without passing
    /// through `observe_applied` (streamed or imported files, truncation):
    /// the next ANN query starts a rebuild from storage.
    pub fn forget_table(&self, table: TableId) {
        let mut graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
        graphs.retain(|(t, _), _| *t != table);
    }

    /// How many graphs are built and usable.
    pub fn usable_count(&self) -> usize {
        let graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
        graphs.values().filter(|g| g.usable()).count()
    }

    /// The column's graph if it is built and usable.
    pub fn usable(&self, table: TableId, column: ColumnId) -> Option<Arc<Graph>> {
        let graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
        graphs.get(&(table, column)).filter(|g| g.usable()).cloned()
    }

    /// Starts building the column's graph in the background, unless a
    /// usable one exists or one is being built: registers a new, empty
    /// graph (replacing an unusable one), then fills it from a scan of
    /// `table`'s storage on the build thread.
    pub fn start_build(
        self: &Arc<Self>,
        engine: Arc<dyn Engine>,
        table: Arc<Table>,
        column: ColumnId,
        now: LocalTime,
    ) {
        let Some((similarity, dimension)) = indexed_vector(&table, column) else {
            return;
        };
        let key = (table.storage_id, column);
        let graph = {
            let mut graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
            if graphs
                .get(&key)
                .is_some_and(|g| g.usable() || !g.ready.load(Ordering::Acquire))
            {
                return;
            }
            let graph = Arc::new(Graph::new(similarity, dimension));
            graphs.insert(key, graph.clone());
            graph
        };
        let graphs = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("ann-graph-build".into())
            .spawn(move || {
                let _one_at_a_time = graphs.building.lock().unwrap_or_else(|p| p.into_inner());
                let started = std::time::Instant::now();
                match fill(&graph, &*engine, &table, column, now) {
                    Ok(()) if !graph.ready.load(Ordering::Acquire) => tracing::info!(
                        "the ANN graph of {} would hold more than {GRAPH_POINTS_MAX} points: ranked by scan",
                        persist::column_name(&table, column),
                    ),
                    Ok(()) => tracing::info!(
                        "built the ANN graph of {} from storage: {} points in {} ms",
                        persist::column_name(&table, column),
                        graph.points(),
                        started.elapsed().as_millis()
                    ),
                    Err(e) => {
                        tracing::warn!(
                            "cannot build the ANN graph of {}.{}: {e}",
                            table.keyspace,
                            table.name
                        );
                        graphs.forget(key);
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start an ANN graph build: {e}");
            self.forget(key);
        }
    }

    fn forget(&self, key: (TableId, ColumnId)) {
        let mut graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
        graphs.remove(&key);
    }

    /// The mutations of `mutations` that `observe` must see once they are
    /// applied (those of tables with a vector SAI index); usually none.
    pub fn to_observe(&self, mutations: &[Mutation]) -> Vec<Mutation> {
        if self.observed_in_storage.load(Ordering::Acquire) {
            return Vec::new();
        }
        self.of_vector_tables(mutations)
    }

    /// The mutations of tables with a vector SAI index (copies; usually
    /// none, at the cost of the check of an empty set).
    fn of_vector_tables(&self, mutations: &[Mutation]) -> Vec<Mutation> {
        let tables = self.vector_tables.read().unwrap_or_else(|p| p.into_inner());
        if tables.is_empty() {
            return Vec::new();
        }
        mutations
            .iter()
            .filter(|m| tables.contains(&m.table))
            .cloned()
            .collect()
    }

    /// Forgets the graphs of tables or columns no longer indexed (after a
    /// schema change) and of `truncated` tables, and notes which tables
    /// have vector SAI indexes.
    pub fn retain(&self, schema: &Schema, truncated: &[TableId]) {
        let tables = schema
            .tables()
            .filter(|t| super::has_vector_sai(t))
            .map(|t| t.storage_id)
            .collect();
        *self
            .vector_tables
            .write()
            .unwrap_or_else(|p| p.into_inner()) = tables;
        let mut graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
        graphs.retain(|(table, column), _| {
            !truncated.contains(table)
                && schema
                    .table_by_storage_id(*table)
                    .is_some_and(|(_, t)| indexed_vector(t, *column).is_some())
        });
    }

    /// Adds the vectors `mutations` wrote to the graphs of their columns:
    /// called after the write is applied, so that a build starting
    /// meanwhile either scans the row or is registered in time to see it.
    pub fn observe(&self, mutations: &[Mutation]) {
        if mutations.is_empty() {
            return;
        }
        let graphs: Vec<((TableId, ColumnId), Arc<Graph>)> = {
            let all = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
            all.iter().map(|(k, g)| (*k, g.clone())).collect()
        };
        for m in mutations {
            for ((table, column), graph) in &graphs {
                if *table != m.table {
                    continue;
                }
                for (clustering, row) in &m.rows {
                    let cells = row.cells.iter().filter(|c| c.column == *column);
                    for cell in cells.filter(|c| !c.value.is_empty()) {
                        if let Ok(vector) = decode_floats(&cell.value) {
                            let key = (m.partition.clone(), clustering_key(clustering));
                            graph.insert(key, &vector);
                        }
                    }
                }
            }
        }
    }
}

/// Rows read from storage at a time while building.
const BUILD_BATCH_ROWS: usize = 1000;

/// Inserts every stored vector of `column` into `graph`, then marks it
/// built (unless it filled up: it then stays unusable).
fn fill(
    graph: &Graph,
    engine: &dyn Engine,
    table: &Table,
    column: ColumnId,
    now: LocalTime,
) -> crate::error::Result<()> {
    let index = table
        .columns
        .iter()
        .position(|c| c.id == column)
        .unwrap_or_default();
    let mut scan = RangeScan {
        table: table.storage_id,
        token_start: rocksandra_data::Token(i64::MIN),
        token_end: rocksandra_data::Token(i64::MAX),
        resume_after: None,
        include_static: false,
        per_partition_limit: 0,
        row_limit: BUILD_BATCH_ROWS,
    };
    loop {
        let page = engine.scan(&scan, now)?;
        let mut batch = Vec::new();
        for partition in page.partitions {
            for row in crate::rows::partition_rows_owned(table, partition, now, false)? {
                let value = row.columns.get(index).and_then(|c| c.value.as_deref());
                if let Some(Ok(vector)) = value.map(decode_floats) {
                    let clustering = clustering_key(row.clustering.as_deref().unwrap_or_default());
                    batch.push(((row.partition, clustering), vector));
                }
            }
        }
        if !graph.insert_batch(batch) {
            return Ok(());
        }
        match page.next {
            Some(next) => scan.resume_after = Some(next),
            None => break,
        }
    }
    graph.mark_built();
    Ok(())
}

/// A row's clustering as a row key: None for a table without clustering
/// columns (whose rows have an empty clustering).
pub fn clustering_key(clustering: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    (!clustering.is_empty()).then(|| clustering.to_vec())
}

/// The similarity and dimension of a vector column with an SAI index.
pub fn indexed_vector(table: &Table, column: ColumnId) -> Option<(Similarity, usize)> {
    let column = table.columns.iter().find(|c| c.id == column)?;
    let rocksandra_data::types::CqlType::Vector(_, dimension) = column.ty.unfrozen() else {
        return None;
    };
    if !super::sai_on(table, &column.name) {
        return None;
    }
    Some((
        super::vector_similarity(table, &column.name),
        *dimension as usize,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> RowKey {
        (PartitionKey::new(vec![i]), None)
    }

    #[test]
    fn the_graph_proposes_the_nearest_rows_first() {
        let graph = Graph::new(Similarity::Euclidean, 2);
        for i in 0..200u8 {
            graph.insert(key(i), &[f32::from(i), 0.0]);
        }
        graph.mark_built();
        assert!(graph.usable());
        let near = graph.nearest(&[50.2, 0.0], 3);
        assert_eq!(near, vec![key(50), key(51), key(49)]);
        // A second point for a row (an update) is proposed too.
        graph.insert(key(7), &[50.3, 0.0]);
        assert!(graph.nearest(&[50.3, 0.0], 2).contains(&key(7)));
    }

    #[test]
    fn points_inserted_after_searches_are_found() {
        let graph = Graph::new(Similarity::Euclidean, 2);
        for i in 0..400u16 {
            let t = f32::from(i) * 0.37;
            let r = 1.0 + f32::from(i) / 40.0;
            graph.insert(
                (PartitionKey::new(i.to_be_bytes().to_vec()), None),
                &[t.cos() * r, t.sin() * r],
            );
        }
        graph.mark_built();
        let _ = graph.nearest(&[0.5, 0.5], 40);
        graph.insert(key(250), &[50.0, 50.0]);
        assert_eq!(graph.nearest(&[50.0, 50.0], 40)[0], key(250));
    }

    #[test]
    fn every_point_of_a_small_batch_build_is_reachable() {
        // The race this guards against (two first points inserted at once)
        // is rare: many small builds give it its chances.
        for _ in 0..300 {
            let graph = Graph::new(Similarity::Euclidean, 2);
            let batch = (0..7u8)
                .map(|i| (key(i), vec![f32::from(i), f32::from(i) * 0.5]))
                .collect();
            assert!(graph.insert_batch(batch));
            graph.mark_built();
            let found: std::collections::HashSet<_> =
                graph.nearest(&[8.0, 8.0], 7).into_iter().collect();
            assert_eq!(found, (0..7u8).map(key).collect());
        }
    }

    #[test]
    fn distances_are_finite_and_not_negative() {
        for s in [
            Similarity::Cosine,
            Similarity::Euclidean,
            Similarity::DotProduct,
        ] {
            let d = ScoreDistance(s);
            for (a, b) in [
                ([0.0, 0.0], [1.0, 1.0]),
                ([1e30, 1e30], [1e30, 1e30]),
                ([1.0, 0.0], [-1.0, 0.0]),
            ] {
                let v = d.eval(&a, &b);
                assert!(v.is_finite() && v >= 0.0, "{s:?} {a:?} {b:?}: {v}");
            }
        }
    }

    /// Graphs holding a built graph of column 1 of tables 1 and 2.
    fn graphs_of_two_tables() -> (Graphs, Arc<Graph>) {
        let graphs = Graphs::default();
        let graph = Arc::new(Graph::new(Similarity::Euclidean, 1));
        graph.mark_built();
        for table in [TableId(1), TableId(2)] {
            let mut all = graphs.graphs.lock().unwrap();
            all.insert((table, ColumnId(1)), graph.clone());
        }
        (graphs, graph)
    }

    #[test]
    fn a_tables_graphs_are_dropped_when_its_data_is_replaced() {
        let (graphs, _) = graphs_of_two_tables();
        graphs.forget_table(TableId(1));
        assert!(graphs.usable(TableId(1), ColumnId(1)).is_none());
        assert!(graphs.usable(TableId(2), ColumnId(1)).is_some());
    }

    #[test]
    fn the_storage_hook_feeds_the_graphs_of_vector_indexed_tables_only() {
        let (graphs, graph) = graphs_of_two_tables();
        let mut write = Mutation::new(TableId(1), PartitionKey::new(vec![7]));
        let cell = rocksandra_storage::cell::Cell::live(ColumnId(1), 1, 2f32.to_be_bytes().into());
        let update = rocksandra_storage::RowUpdate {
            cells: vec![cell],
            ..Default::default()
        };
        write.rows.push((Vec::new(), update));
        // No table has a vector index yet: nothing is copied.
        graphs.observe_applied(std::slice::from_ref(&write));
        assert_eq!(graph.points(), 0);
        graphs.vector_tables.write().unwrap().insert(TableId(1));
        graphs.observe_in_storage();
        // Statements leave it to the hook, which adds the point.
        assert!(graphs.to_observe(std::slice::from_ref(&write)).is_empty());
        graphs.observe_applied(std::slice::from_ref(&write));
        assert_eq!(graph.points(), 1);
        assert_eq!(graph.nearest(&[2.0], 1), vec![key(7)]);
    }

    #[test]
    fn a_graph_grown_past_twice_its_build_is_not_used() {
        let graph = Graph::new(Similarity::Euclidean, 1);
        graph.insert(key(1), &[1.0]);
        assert!(!graph.usable(), "not built yet");
        graph.mark_built();
        for _ in 0..(2 + GRAPH_SLACK_POINTS) {
            graph.insert(key(1), &[1.0]);
        }
        assert!(!graph.usable());
    }
}
