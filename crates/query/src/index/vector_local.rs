//! A replica's ANN search over its own data: the best `k` rows of the
//! token ranges a coordinator asks for, by the similarity of one vector
//! column to a query vector. What answers the cluster's `AnnSearch`
//! request, as each Cassandra replica searches its local SAI index.
//!
//! - From the column's graph (`index::vector`) when it is built and
//!   usable: its candidates are filtered by token range, read back from
//!   storage and scored by their current vector; more candidates are asked
//!   for while too few remain (`select::ann::next_step`, up to
//!   `WIDEN_POINTS_MAX`).
//! - Otherwise (no graph yet: its build is started; a graph that missed
//!   points; a search that would have to widen past `WIDEN_POINTS_MAX`)
//!   by an exact scan of the ranges.
//!
//! Rows come back as a range read returns them (one `Partition` per row,
//! its static row included, cells with their timestamps), best first, ties
//! in key order; at most `ANN_LIMIT_MAX`. The tombstones the reads met are
//! counted as a range read's are, and the search stops once past
//! `stop_past` (the replica then refuses it, as a range read).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rocksandra_data::{LocalTime, Token};
use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::{Engine, Partition, PartitionRead, RangeScan, Row, Slice};

use super::vector::{clustering_key, indexed_vector, Graph, Graphs, RowKey};
use crate::error::{QueryError, Result};
use crate::functions::vector::{decode_floats, Similarity};
use crate::schema::Table;
/// Cassandra's largest LIMIT of an ANN query: the most rows a replica returns.
pub use crate::select::ann::ANN_LIMIT_MAX;
use crate::select::ann::{next_step, Step};

/// The most graph points one search asks for; past it the ranges are
/// scanned instead.
pub const WIDEN_POINTS_MAX: usize = 65_536;

/// Rows read from storage at a time by the exact scan.
const SCAN_BATCH_ROWS: usize = 1000;

/// What a coordinator asks of one replica.
pub struct LocalSearch<'a> {
    pub table: &'a Arc<Table>,
    pub column: ColumnId,
    pub vector: &'a [f32],
    /// At most `ANN_LIMIT_MAX` rows are returned, whatever is asked.
    pub k: usize,
    /// Token intervals, both ends inclusive.
    pub ranges: &'a [(Token, Token)],
    /// The tombstones after which the search stops (the replica's
    /// `tombstone_failure_threshold`).
    pub stop_past: u64,
}

/// A replica's answer: its best rows, and whether its graph gave them.
#[derive(Debug)]
pub struct LocalTop {
    pub rows: Vec<Partition>,
    pub from_graph: bool,
    /// The tombstones the reads met (past `stop_past`: the search stopped
    /// there and its rows are incomplete).
    pub tombstones: u64,
}

/// The best rows of `search`'s ranges on this node (see the module doc).
pub fn search(
    graphs: &Arc<Graphs>,
    engine: &Arc<dyn Engine>,
    search: &LocalSearch<'_>,
    now: LocalTime,
) -> Result<LocalTop> {
    let (similarity, _) = indexed_vector(search.table, search.column).ok_or_else(|| {
        QueryError::invalid("ANN ordering by vector requires the column to be indexed")
    })?;
    let scorer = Scorer {
        column: search.column,
        similarity,
        query: search.vector,
    };
    let k = search.k.min(ANN_LIMIT_MAX);
    let table = search.table;
    let mut tombstones = Tombstones::new(search.stop_past);
    match graphs.usable(table.storage_id, search.column) {
        Some(graph) => {
            let graph_search = (&*graph, &scorer, k);
            let found = from_graph(graph_search, &**engine, search, &mut tombstones, now)?;
            if let Some(rows) = found.filter(|_| !tombstones.past()) {
                return Ok(tombstones.top(rows, true));
            }
        }
        None => graphs.start_build(engine.clone(), table.clone(), search.column, now),
    }
    if tombstones.past() {
        return Ok(tombstones.top(Vec::new(), false));
    }
    let rows = by_scan(&**engine, search, (&scorer, k), &mut tombstones, now)?;
    Ok(tombstones.top(rows, false))
}

/// The tombstones a search met, against where it stops.
struct Tombstones {
    met: u64,
    stop_past: u64,
}

impl Tombstones {
    fn new(stop_past: u64) -> Tombstones {
        Tombstones { met: 0, stop_past }
    }

    fn add(&mut self, met: u64) {
        self.met = self.met.saturating_add(met);
    }

    fn past(&self) -> bool {
        self.met > self.stop_past
    }

    /// What is left to a read of this search (never 0: a read stops past it).
    fn left(&self) -> u64 {
        self.stop_past.saturating_sub(self.met)
    }

    fn top(&self, rows: Vec<Partition>, from_graph: bool) -> LocalTop {
        LocalTop {
            rows,
            from_graph,
            tombstones: self.met,
        }
    }
}

/// Scores a row by its vector cell.
struct Scorer<'a> {
    column: ColumnId,
    similarity: Similarity,
    query: &'a [f32],
}

impl Scorer<'_> {
    fn score(&self, row: &Row) -> Option<f32> {
        let cell = row
            .content
            .cells
            .iter()
            .find(|c| c.column == self.column && !c.value.is_empty())?;
        let vector = decode_floats(&cell.value).ok()?;
        (vector.len() == self.query.len()).then(|| self.similarity.score(self.query, &vector))
    }
}

/// Whether `token` is in one of `ranges` (inclusive intervals).
pub fn in_ranges(token: Token, ranges: &[(Token, Token)]) -> bool {
    ranges.iter().any(|(s, e)| *s <= token && token <= *e)
}

/// The graph's answer, None when the ranges are to be scanned instead.
/// Each candidate row is read once, however often the search widens.
fn from_graph(
    (graph, scorer, k): (&Graph, &Scorer<'_>, usize),
    engine: &dyn Engine,
    search: &LocalSearch<'_>,
    tombstones: &mut Tombstones,
    now: LocalTime,
) -> Result<Option<Vec<Partition>>> {
    let points = graph.points().max(1);
    let mut asked = (k * 4).max(32).min(points);
    let mut read: HashMap<RowKey, Option<(f32, Partition)>> = HashMap::new();
    loop {
        let candidates = graph.nearest(search.vector, asked);
        let mut round = HashSet::new();
        let in_range = |key: &&RowKey| in_ranges(key.0.token, search.ranges);
        for key in candidates.iter().filter(in_range) {
            if !round.insert(key) || read.contains_key(key) {
                continue;
            }
            let (row, met) = read_row(engine, search.table, key, (tombstones.left(), now))?;
            tombstones.add(met);
            if tombstones.past() {
                return Ok(None);
            }
            let scored = row.and_then(|r| Some((r.rows.first().and_then(|x| scorer.score(x))?, r)));
            read.insert(key.clone(), scored);
        }
        let live = round
            .iter()
            .filter(|key| matches!(read.get(**key), Some(Some(_))));
        match next_step(k, asked, points, candidates.len(), live.count()) {
            Step::Done => {
                let best = round
                    .into_iter()
                    .filter_map(|key| read.remove(key).flatten());
                return Ok(Some(keep_best(best.collect(), k)));
            }
            Step::Widen(wider) if wider <= WIDEN_POINTS_MAX => asked = wider,
            Step::Widen(_) | Step::Scan => return Ok(None),
        }
    }
}

/// One row of the table as stored now (with its partition's static row),
/// None when it is gone; and the tombstones the read met.
fn read_row(
    engine: &dyn Engine,
    table: &Table,
    (partition, clustering): &RowKey,
    (stop_past, now): (u64, LocalTime),
) -> Result<(Option<Partition>, u64)> {
    let slice = match clustering {
        Some(c) => Slice::prefix(c.clone()),
        None => Slice::all(),
    };
    let read = PartitionRead {
        table: table.storage_id,
        partition: partition.clone(),
        slices: vec![slice],
        reversed: false,
        include_static: true,
        row_limit: 1,
    };
    let (mut found, met) = engine.read_partition_counted(&read, now, stop_past)?;
    found
        .rows
        .retain(|r| clustering_key(&r.clustering) == *clustering);
    Ok(((!found.rows.is_empty()).then_some(found), met))
}

/// Every row of the ranges scored, the best `k` kept.
fn by_scan(
    engine: &dyn Engine,
    search: &LocalSearch<'_>,
    (scorer, k): (&Scorer<'_>, usize),
    tombstones: &mut Tombstones,
    now: LocalTime,
) -> Result<Vec<Partition>> {
    let mut best = Vec::new();
    for (start, end) in search.ranges {
        let mut scan = RangeScan {
            table: search.table.storage_id,
            token_start: *start,
            token_end: *end,
            resume_after: None,
            include_static: true,
            per_partition_limit: 0,
            row_limit: SCAN_BATCH_ROWS,
        };
        loop {
            let (page, met) = engine.scan_counted(&scan, now, tombstones.left())?;
            tombstones.add(met);
            if tombstones.past() {
                return Ok(Vec::new());
            }
            for partition in page.partitions {
                best.extend(scored_rows(partition, scorer));
            }
            rank(&mut best, k);
            match page.next {
                Some(next) => scan.resume_after = Some(next),
                None => break,
            }
        }
    }
    Ok(keep_best(best, k))
}

/// A partition's rows that have a vector, one partition each.
fn scored_rows(partition: Partition, scorer: &Scorer<'_>) -> Vec<(f32, Partition)> {
    let Partition {
        key,
        static_row,
        rows,
    } = partition;
    rows.into_iter()
        .filter_map(|row| {
            let score = scorer.score(&row)?;
            let one = Partition {
                key: key.clone(),
                static_row: static_row.clone(),
                rows: vec![row],
            };
            Some((score, one))
        })
        .collect()
}

/// The `k` best, best first; ties in key order (partition, clustering).
pub fn keep_best(mut scored: Vec<(f32, Partition)>, k: usize) -> Vec<Partition> {
    rank(&mut scored, k);
    scored.into_iter().map(|(_, p)| p).collect()
}

/// Sorts best first (ties in key order) and keeps the first `k`.
fn rank(scored: &mut Vec<(f32, Partition)>, k: usize) {
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.key.cmp(&b.1.key))
            .then_with(|| first_clustering(&a.1).cmp(first_clustering(&b.1)))
    });
    scored.truncate(k);
}

fn first_clustering(p: &Partition) -> &[Vec<u8>] {
    p.rows
        .first()
        .map(|r| r.clustering.as_slice())
        .unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Column, ColumnKind, Index};
    use rocksandra_data::types::CqlType;
    use rocksandra_data::NativeType;
    use rocksandra_storage::cell::{Cell, DeletionTime, LiveRow, LivenessInfo};
    use rocksandra_storage::memory::MemoryStore;
    use rocksandra_storage::{KvEngine, Mutation, PartitionKey, RowUpdate, TableId};

    const NOW: LocalTime = LocalTime(1_700_000_000);

    /// `(k int, c int, v vector<float, 1>, PRIMARY KEY (k, c))`, v under an
    /// SAI index with euclidean similarity.
    fn table() -> Arc<Table> {
        let column = |name: &str, ty, kind, id| Column {
            name: name.into(),
            ty,
            kind,
            position: 0,
            descending: false,
            id: ColumnId(id),
        };
        let int = || CqlType::Native(NativeType::Int);
        let vector = CqlType::Vector(Box::new(CqlType::Native(NativeType::Float)), 1);
        let options = [
            ("class_name", "StorageAttachedIndex"),
            ("target", "v"),
            ("similarity_function", "euclidean"),
        ];
        let index = Index {
            name: "v_index".into(),
            kind: "CUSTOM".into(),
            options: options
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            storage_id: None,
            built: true,
        };
        Arc::new(Table {
            keyspace: "ks".into(),
            name: "t".into(),
            id: [1; 16],
            storage_id: TableId(5),
            partition_key_count: 1,
            clustering_count: 1,
            next_column_id: 3,
            columns: vec![
                column("k", int(), ColumnKind::PartitionKey, 0),
                column("c", int(), ColumnKind::Clustering, 1),
                column("v", vector, ColumnKind::Regular, 2),
            ],
            params: Default::default(),
            dropped: Vec::new(),
            indexes: vec![index],
            is_virtual: false,
            view: None,
            compact: None,
            masks: Default::default(),
            metrics: Default::default(),
        })
    }

    /// Rows (k, 0) with v = [k] for k in 0..live, and rows (0, 1..=dead)
    /// deleted.
    fn engine(table: &Table, live: i32, dead: i32) -> Arc<dyn Engine> {
        let engine = KvEngine::new(MemoryStore::new(Arc::new(|| NOW)));
        engine.create_table(table.storage_spec()).unwrap();
        let key = |k: i32| PartitionKey::new(k.to_be_bytes().to_vec());
        for k in 0..live {
            let mut m = Mutation::new(table.storage_id, key(k));
            let v = (k as f32).to_be_bytes().to_vec();
            let update = RowUpdate {
                liveness: Some(LivenessInfo::new(10, 0, 0)),
                cells: vec![Cell::live(ColumnId(2), 10, v)],
                ..RowUpdate::default()
            };
            m.rows.push((vec![0i32.to_be_bytes().to_vec()], update));
            engine.write(&[m], NOW).unwrap();
        }
        let mut m = Mutation::new(table.storage_id, key(0));
        for c in 1..=dead {
            let update = RowUpdate {
                deletion: Some(DeletionTime::new(10, NOW.0)),
                ..RowUpdate::default()
            };
            m.rows.push((vec![c.to_be_bytes().to_vec()], update));
        }
        engine.write(&[m], NOW).unwrap();
        Arc::new(engine)
    }

    fn keys(top: &LocalTop) -> Vec<Vec<u8>> {
        top.rows.iter().map(|p| p.key.key.clone()).collect()
    }

    #[test]
    fn without_a_graph_the_ranges_are_ranked_by_scan() {
        let table = table();
        let engine = engine(&table, 40, 0);
        let graphs = Arc::new(Graphs::default());
        let all = [(Token(i64::MIN), Token(i64::MAX))];
        let mut search = LocalSearch {
            table: &table,
            column: ColumnId(2),
            vector: &[10.2],
            k: 3,
            ranges: &all,
            stop_past: u64::MAX,
        };
        let top = super::search(&graphs, &engine, &search, NOW).unwrap();
        assert!(!top.from_graph);
        let want: Vec<Vec<u8>> = [10i32, 11, 9]
            .iter()
            .map(|k| k.to_be_bytes().to_vec())
            .collect();
        assert_eq!(keys(&top), want);
        // Only the rows of the ranges asked: those of 10's token left out.
        let token = PartitionKey::new(10i32.to_be_bytes().to_vec()).token;
        let around = [
            (Token(i64::MIN), Token(token.0 - 1)),
            (Token(token.0 + 1), Token(i64::MAX)),
        ];
        search.ranges = &around;
        let top = super::search(&graphs, &engine, &search, NOW).unwrap();
        let want: Vec<Vec<u8>> = [11i32, 9, 12]
            .iter()
            .map(|k| k.to_be_bytes().to_vec())
            .collect();
        assert_eq!(keys(&top), want);
        // The first search started the graph's build: once it is ready,
        // the graph answers, with the same rows.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while graphs.usable(table.storage_id, ColumnId(2)).is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the graph was not built"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let top = super::search(&graphs, &engine, &search, NOW).unwrap();
        assert!(top.from_graph);
        assert_eq!(keys(&top), want);
    }

    #[test]
    fn a_search_stops_once_past_its_tombstones() {
        let table = table();
        let engine = engine(&table, 5, 20);
        let graphs = Arc::new(Graphs::default());
        let all = [(Token(i64::MIN), Token(i64::MAX))];
        let search = LocalSearch {
            table: &table,
            column: ColumnId(2),
            vector: &[1.0],
            k: 3,
            ranges: &all,
            stop_past: 4,
        };
        let top = super::search(&graphs, &engine, &search, NOW).unwrap();
        assert!(top.tombstones > 4, "{top:?}");
        let search = LocalSearch {
            stop_past: 100,
            ..search
        };
        // New graphs: the scan again (the first search started a build).
        let graphs = Arc::new(Graphs::default());
        let top = super::search(&graphs, &engine, &search, NOW).unwrap();
        assert_eq!(top.tombstones, 20);
        assert_eq!(top.rows.len(), 3);
    }

    fn row_partition(key: &[u8], clustering: u8) -> Partition {
        Partition {
            key: PartitionKey::new(key.to_vec()),
            static_row: None,
            rows: vec![Row {
                clustering: vec![vec![clustering]],
                content: LiveRow::default(),
            }],
        }
    }

    #[test]
    fn candidates_are_kept_only_in_the_ranges_asked() {
        let ranges = [(Token(-10), Token(-5)), (Token(3), Token(3))];
        assert!(in_ranges(Token(-10), &ranges));
        assert!(in_ranges(Token(-5), &ranges));
        assert!(in_ranges(Token(3), &ranges));
        assert!(!in_ranges(Token(-4), &ranges));
        assert!(!in_ranges(Token(4), &ranges));
        assert!(!in_ranges(Token(0), &[]));
        let all = [(Token(i64::MIN), Token(i64::MAX))];
        assert!(in_ranges(Token(i64::MIN), &all) && in_ranges(Token(i64::MAX), &all));
    }

    #[test]
    fn the_best_are_kept_best_first_ties_in_key_order() {
        let a = row_partition(b"a", 1);
        let b1 = row_partition(b"b", 1);
        let b2 = row_partition(b"b", 2);
        let c = row_partition(b"c", 0);
        let scored = vec![
            (0.5, b2.clone()),
            (0.9, c.clone()),
            (0.5, b1.clone()),
            (0.1, a.clone()),
        ];
        let kept = keep_best(scored.clone(), 3);
        assert_eq!(kept, vec![c.clone(), b1.clone(), b2.clone()]);
        // The same rows in another order give the same answer.
        let mut reversed = scored;
        reversed.reverse();
        assert_eq!(keep_best(reversed, 3), kept);
        assert!(keep_best(Vec::new(), 3).is_empty());
    }
}
