//! `SELECT ... ORDER BY v ANN OF [..] LIMIT n`: Cassandra 5.0's vector
//! search over a column with a storage-attached index. Cassandra's checks,
//! in its order, then the rows the WHERE clause selects ranked by the
//! index's similarity function to the query vector (best first, rows
//! without a vector left out), at most LIMIT of them, in one page.
//!
//! Without a WHERE clause the candidates come from HNSW graphs
//! (`index::vector`): a node alone its own, a cluster's coordinator the
//! replies of one replica per token range, each from its graph
//! (`index::vector_local`), ranked here (`top_of_replies`). Otherwise the
//! ranking is exact: every selected row is scored, a page of rows at a
//! time, keeping the best LIMIT. On the same data both give the same rows
//! unless scores are nearly tied or the graph's recall misses one.

use rocksandra_cql::ast::{Expr, OrderingKind, Relation, RelationLhs, Select};

use super::{PagingState, Reader};
use crate::error::{QueryError, Result};
use crate::functions::vector::{decode_floats, Similarity};
use crate::index::vector::{clustering_key, Graph, RowKey};
use crate::restrict::{PartitionSelection, Restrictions};
use crate::rows::CqlRow;
use crate::schema::{Column, ColumnKind, Table};
use crate::term::{evaluate, EvalContext, Term};
use rocksandra_data::types::CqlType;
use rocksandra_data::NativeType;
use rocksandra_storage::Slice;

/// Cassandra's largest LIMIT of an ANN query.
pub const ANN_LIMIT_MAX: usize = 1000;

/// Rows read from storage at a time while ranking.
const READ_BATCH_ROWS: usize = 1000;

/// The ANN ordering of `select`, if it has one; refuses the orderings
/// Cassandra refuses next to it.
pub(super) fn ordering(select: &Select) -> Result<Option<(&str, &Expr)>> {
    let anns: Vec<_> = select
        .order_by
        .iter()
        .filter_map(|o| match &o.kind {
            OrderingKind::Ann(e) => Some((o.column.as_str(), e)),
            _ => None,
        })
        .collect();
    match anns.as_slice() {
        [] => Ok(None),
        [one] if select.order_by.len() == 1 => Ok(Some(*one)),
        [_] => Err(QueryError::invalid(
            "ANN ordering does not support any other ordering",
        )),
        _ => Err(QueryError::invalid(
            "Cannot specify more than one ANN ordering",
        )),
    }
}

/// What an ANN query ranks by, once Cassandra's checks passed.
pub(super) struct Ranking {
    column: usize,
    similarity: Similarity,
    query: Vec<f32>,
    pub(super) limit: usize,
}

fn indexed(table: &Table, column: &str) -> bool {
    table
        .indexes
        .iter()
        .any(|i| crate::index::target(i).is_some_and(|(_, c)| c == column))
}

/// Cassandra's checks of an ANN query (`StatementRestrictions`, then
/// `SelectStatement`), in its order, and the query vector and LIMIT.
pub(super) fn plan(
    table: &Table,
    select: &Select,
    restrictions: &Restrictions,
    (name, term): (&str, &Expr),
    (limit, aggregate): (Option<usize>, bool),
    ctx: &EvalContext<'_>,
) -> Result<Ranking> {
    let (column, float_vector) = vector_column(table, name)?;
    let query = query_vector(column, term, ctx)?;
    check_ordering(table, select, restrictions, (column, float_vector))?;
    let limit = check_limits(select, limit, aggregate)?;
    let similarity = crate::index::vector_similarity(table, &column.name);
    if similarity == Similarity::Cosine && query.iter().all(|x| *x == 0.0) {
        return Err(QueryError::invalid(crate::index::ZERO_VECTOR_COSINE));
    }
    Ok(Ranking {
        column: table.column_index(&column.name).unwrap_or_default(),
        similarity,
        query,
        limit,
    })
}

/// At PREPARE: the checks of `plan` that need no value, as Cassandra makes
/// them when it prepares the query. A bind marker's query vector and the
/// LIMIT's value (at most `ANN_LIMIT_MAX`) are checked when it runs.
pub(crate) fn check_prepared(
    table: &Table,
    select: &Select,
    restrictions: &Restrictions,
    (name, term): (&str, &Expr),
    aggregate: bool,
    ctx: &EvalContext<'_>,
) -> Result<()> {
    let (column, float_vector) = vector_column(table, name)?;
    if !matches!(term, Expr::Bind(_)) {
        query_vector(column, term, ctx)?;
    }
    check_ordering(table, select, restrictions, (column, float_vector))?;
    // Some LIMIT, whatever its value: only its absence is known here.
    let limit = select.limit.as_ref().map(|_| 1);
    check_limits(select, limit, aggregate).map(|_| ())
}

/// When the query runs, before its restrictions' values are bound: the
/// checks that need no value (LIMIT's absence among them: an unset LIMIT
/// is none), then the query vector, as Cassandra binds it first.
pub(super) fn check_before_values(
    table: &Table,
    select: &Select,
    (name, term): (&str, &Expr),
    (limit, aggregate): (Option<usize>, bool),
    ctx: &EvalContext<'_>,
) -> Result<()> {
    let (column, _) = vector_column(table, name)?;
    check_limits(select, limit.map(|_| 1), aggregate)?;
    query_vector(column, term, ctx).map(|_| ())
}

/// The ordering's column, and whether it is a vector of floats; refused
/// unless a vector or a list.
fn vector_column<'t>(table: &'t Table, name: &str) -> Result<(&'t Column, bool)> {
    let column = table
        .column(name)
        .ok_or_else(|| QueryError::undefined_column(name, &table.keyspace, &table.name))?;
    let float_vector = match column.ty.unfrozen() {
        CqlType::Vector(e, _) => **e == CqlType::Native(NativeType::Float),
        CqlType::List(_) => false,
        other => {
            return Err(QueryError::invalid(format!(
                "Unexpected receiver type '{other}'; only list and vector are expected"
            )))
        }
    };
    Ok((column, float_vector))
}

/// The query vector `term` gives.
fn query_vector(column: &Column, term: &Expr, ctx: &EvalContext<'_>) -> Result<Vec<f32>> {
    match evaluate(term, &column.ty, &column.name, ctx)? {
        Term::Value(bytes) => decode_floats(&bytes),
        Term::Null => Err(QueryError::invalid(format!(
            "Unsupported null value for column {}",
            column.name
        ))),
        Term::Unset => Err(QueryError::invalid(format!(
            "Unsupported unset value for column {}",
            column.name
        ))),
    }
}

/// The checks of the ordering column and the WHERE clause beside it.
fn check_ordering(
    table: &Table,
    select: &Select,
    restrictions: &Restrictions,
    (column, float_vector): (&Column, bool),
) -> Result<()> {
    check_equality_on(column, select)?;
    if !float_vector {
        return Err(QueryError::invalid(
            "ANN ordering is only supported on float vector indexes",
        ));
    };
    if !indexed(table, &column.name) {
        return Err(QueryError::invalid(
            "ANN ordering by vector requires the column to be indexed",
        ));
    }
    check_restricted_columns_indexed(table, select, restrictions)?;
    if !crate::index::sai_on(table, &column.name) {
        return Err(QueryError::invalid(super::ALLOW_FILTERING_MESSAGE));
    }
    if super::partition_key_in(table, &select.where_clause) {
        return Err(QueryError::invalid(
            "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported",
        ));
    }
    if select.distinct {
        // Cassandra's ANN ordering restricts the vector column.
        return Err(QueryError::invalid(
            "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns.",
        ));
    }
    Ok(())
}

/// A query without ANN may not restrict an indexed vector column.
pub(super) fn refuse_vector_restrictions(table: &Table, select: &Select) -> Result<()> {
    let restricts_indexed_vector = select.where_clause.iter().any(|r| match r {
        Relation::Compare {
            lhs: RelationLhs::Column(c),
            ..
        } => table.column(c.as_str()).is_some_and(|col| {
            matches!(col.ty.unfrozen(), CqlType::Vector(..)) && indexed(table, &col.name)
        }),
        _ => false,
    });
    if restricts_indexed_vector {
        return Err(QueryError::invalid(
            "Vector indexes only support ANN queries",
        ));
    }
    Ok(())
}

/// `v = [..]` beside `ORDER BY v ANN OF`: two restrictions of one column.
fn check_equality_on(column: &Column, select: &Select) -> Result<()> {
    let restricted = select.where_clause.iter().any(|r| {
        matches!(r, Relation::Compare { lhs: RelationLhs::Column(c), .. } if c.as_str() == column.name)
    });
    if restricted {
        return Err(QueryError::invalid(format!(
            "{} cannot be restricted by more than one relation if it includes an Equal",
            column.name
        )));
    }
    Ok(())
}

/// LIMIT (at most `ANN_LIMIT_MAX`), no PER PARTITION LIMIT, no aggregates.
fn check_limits(select: &Select, limit: Option<usize>, aggregate: bool) -> Result<usize> {
    if select.per_partition_limit.is_some() {
        return Err(QueryError::invalid(
            "Top-K queries do not support per-partition limits",
        ));
    }
    if aggregate || !select.group_by.is_empty() {
        return Err(QueryError::invalid(
            "Top-K queries can not be run with aggregation",
        ));
    }
    match limit {
        None => Err(QueryError::invalid(
            "Top-K queries must have a limit specified and the limit must be less than the query page size",
        )),
        Some(l) if l > ANN_LIMIT_MAX => Err(QueryError::invalid(format!(
            "Use of ANN OF in an ORDER BY clause requires a LIMIT that is not greater than {ANN_LIMIT_MAX}. LIMIT was {l}"
        ))),
        Some(l) => Ok(l),
    }
}

/// What Cassandra's replica refuses (a zero query vector under cosine
/// similarity) reaches the client as the replica's failure, as there.
pub(super) fn replica_refusal(node: std::net::IpAddr, e: QueryError) -> QueryError {
    if !matches!(&e, QueryError::Invalid(m) if m == crate::index::ZERO_VECTOR_COSINE) {
        return e;
    }
    tracing::error!("read refused: {e}");
    QueryError::read_failure(
        rocksandra_wire::Consistency::One,
        (0, 1),
        vec![(node, crate::error::UNKNOWN_FAILURE)],
    )
}

/// The level a top-K query runs at: ONE or LOCAL_ONE as asked, any other
/// level downgraded as Cassandra does (LOCAL_ONE for a level local to the
/// data center, else ONE).
pub(super) fn run_at(consistency: rocksandra_wire::Consistency) -> rocksandra_wire::Consistency {
    use rocksandra_wire::Consistency;
    match consistency {
        Consistency::LocalOne | Consistency::LocalQuorum | Consistency::LocalSerial => {
            Consistency::LocalOne
        }
        _ => Consistency::One,
    }
}

/// Cassandra's warnings for what an ANN query cannot have: a page smaller
/// than LIMIT, a consistency level above ONE (both then widened/lowered).
pub(super) fn warnings(request: &crate::request::Request, limit: usize) -> Vec<String> {
    use rocksandra_wire::Consistency;
    let mut out = Vec::new();
    if let Some(page) = request.page_size.filter(|p| *p > 0 && *p < limit) {
        out.push(format!(
            "Top-K queries do not support paging and the page size is set to {page}, which is less than LIMIT {limit}. The page size has been set to {limit} to match the LIMIT."
        ));
    }
    if !matches!(
        request.consistency,
        Consistency::One | Consistency::LocalOne
    ) {
        out.push(format!(
            "Top-K queries can only be run with consistency level ONE / LOCAL_ONE / NODE_LOCAL. Consistency level {} was requested. Downgrading the consistency level to {}.",
            request.consistency.name(),
            run_at(request.consistency).name()
        ));
    }
    out
}

/// Partition keys restricted only in part, and clustering or regular
/// columns restricted without an index, are refused.
fn check_restricted_columns_indexed(
    table: &Table,
    select: &Select,
    restrictions: &Restrictions,
) -> Result<()> {
    let refused = || {
        QueryError::invalid(
            "ANN ordering by vector requires all restricted column(s) to be indexed",
        )
    };
    let mut partition_restricted = false;
    let mut clustering_restricted = false;
    for relation in &select.where_clause {
        let names: Vec<&str> = match relation {
            Relation::Compare {
                lhs: RelationLhs::Column(c) | RelationLhs::Element { column: c, .. },
                ..
            } => vec![c.as_str()],
            Relation::Compare {
                lhs: RelationLhs::Columns(cs),
                ..
            } => cs.iter().map(|c| c.as_str()).collect(),
            _ => Vec::new(),
        };
        for name in names {
            let Some(column) = table.column(name) else {
                continue;
            };
            match column.kind {
                ColumnKind::PartitionKey => partition_restricted = true,
                ColumnKind::Clustering => clustering_restricted = true,
                _ if !indexed(table, name) => return Err(refused()),
                _ => {}
            }
        }
    }
    let partial_key =
        partition_restricted && matches!(restrictions.partition, PartitionSelection::Tokens { .. });
    // Clustering columns restricted outside one partition need an index.
    let clustering_unkeyed =
        clustering_restricted && !matches!(restrictions.partition, PartitionSelection::Keys(_));
    if partial_key || clustering_unkeyed {
        return Err(refused());
    }
    Ok(())
}

impl Ranking {
    /// The ranked column's id.
    pub(super) fn column_id(&self, table: &Table) -> rocksandra_storage::cell::ColumnId {
        table.columns[self.column].id
    }

    fn score(&self, row: &CqlRow) -> Option<f32> {
        let bytes = row.columns.get(self.column)?.value.as_deref()?;
        let vector = decode_floats(bytes).ok()?;
        (vector.len() == self.query.len()).then(|| self.similarity.score(&self.query, &vector))
    }

    /// Reads every row `reader` selects, a batch at a time, and keeps the
    /// best `limit` of them, best first (ties in the order read).
    pub(super) fn top_rows(&self, reader: &Reader<'_>) -> Result<Vec<CqlRow>> {
        let mut best: Vec<(f32, usize, CqlRow)> = Vec::new();
        let mut seen = 0usize;
        let mut state = PagingState::default();
        loop {
            let (rows, next) = reader.read(&state, READ_BATCH_ROWS)?;
            for row in rows {
                if let Some(score) = self.score(&row) {
                    best.push((score, seen, row));
                }
                seen += 1;
            }
            best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            best.truncate(self.limit);
            match next {
                Some(n) => state = n,
                None => break,
            }
        }
        Ok(best.into_iter().map(|(_, _, row)| row).collect())
    }
}

/// Whether an ANN query selects every row (no WHERE clause): the only
/// shape the graph answers, as it holds every row of the table.
pub(super) fn unrestricted(restrictions: &Restrictions) -> bool {
    matches!(
        restrictions.partition,
        PartitionSelection::Tokens {
            start: None,
            end: None
        }
    ) && restrictions.filters.is_empty()
        && restrictions.tuple_filters.is_empty()
        && !restrictions.clustering_restricted
}

impl Ranking {
    /// The best `limit` rows, from the graph's candidates: each read back
    /// and scored by its current vector; more candidates are asked for
    /// while fewer than `limit` live rows come back and the graph has more.
    pub(super) fn top_rows_from(&self, graph: &Graph, reader: &Reader<'_>) -> Result<Vec<CqlRow>> {
        let points = graph.points().max(1);
        let mut k = (self.limit * 4).max(32).min(points);
        loop {
            let candidates = graph.nearest(&self.query, k);
            let mut seen = std::collections::HashSet::new();
            let mut best: Vec<(f32, usize, CqlRow)> = Vec::new();
            for key in candidates.iter().filter(|key| seen.insert(*key)) {
                let Some(row) = read_row(reader, key)? else {
                    continue;
                };
                if let Some(score) = self.score(&row) {
                    best.push((score, best.len(), row));
                }
            }
            match next_step(self.limit, k, points, candidates.len(), best.len()) {
                Step::Done => {
                    best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                    best.truncate(self.limit);
                    return Ok(best.into_iter().map(|(_, _, row)| row).collect());
                }
                Step::Widen(wider) => k = wider,
                Step::Scan => return self.top_rows(reader),
            }
        }
    }
}

impl Ranking {
    /// The query the replicas answer (`DataProxy::ann_top`).
    pub(super) fn query(&self, table: &Table) -> crate::proxy::AnnQuery {
        crate::proxy::AnnQuery {
            column: self.column_id(table),
            vector: self.query.clone(),
            k: self.limit,
        }
    }

    /// The best `limit` rows of the replicas' replies: each row scored by
    /// its vector, a row answered twice kept once, best first, ties in key
    /// order (partition, then clustering), as a replica ranks them.
    pub(super) fn top_of_replies(
        &self,
        table: &Table,
        replies: Vec<rocksandra_storage::Partition>,
        now: rocksandra_data::LocalTime,
    ) -> Result<Vec<CqlRow>> {
        let mut seen = std::collections::HashSet::new();
        let mut best: Vec<(f32, CqlRow)> = Vec::new();
        for partition in replies {
            for row in crate::rows::partition_rows_owned(table, partition, now, false)? {
                if !seen.insert((row.partition.clone(), row.clustering.clone())) {
                    continue;
                }
                if let Some(score) = self.score(&row) {
                    best.push((score, row));
                }
            }
        }
        best.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.partition.cmp(&b.1.partition))
                .then_with(|| a.1.clustering.cmp(&b.1.clustering))
        });
        best.truncate(self.limit);
        Ok(best.into_iter().map(|(_, row)| row).collect())
    }
}

/// What a graph search does after one round of candidates.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Enough live rows, or every point was proposed.
    Done,
    /// Too few live rows: ask the graph for this many candidates.
    Widen(usize),
    /// The graph proposed fewer points than asked for, though it holds
    /// them (HNSW's recall is not 1, on small graphs too): too few rows
    /// came back, so every row is ranked by scan, as Cassandra's exact
    /// search would.
    Scan,
}

pub(crate) fn next_step(
    limit: usize,
    asked: usize,
    points: usize,
    proposed: usize,
    live: usize,
) -> Step {
    if live >= limit {
        Step::Done
    } else if proposed < asked {
        Step::Scan
    } else if asked >= points {
        Step::Done
    } else {
        Step::Widen((asked * 4).min(points))
    }
}

/// One row of the table as it is now, None when it is gone.
fn read_row(reader: &Reader<'_>, (partition, clustering): &RowKey) -> Result<Option<CqlRow>> {
    let slice = match clustering {
        Some(c) => Slice::prefix(c.clone()),
        None => Slice::all(),
    };
    let rows = reader.partition_read(&partition.key, vec![slice], 1, false)?;
    Ok(rows
        .into_iter()
        .find(|r| clustering_key(r.clustering.as_deref().unwrap_or_default()) == *clustering))
}

#[cfg(test)]
mod tests {
    use super::{next_step, Ranking, Step};
    use crate::functions::vector::Similarity;
    use crate::schema::{Column, ColumnKind, Table};
    use rocksandra_data::types::CqlType;
    use rocksandra_data::{LocalTime, NativeType};
    use rocksandra_storage::cell::{Cell, ColumnId, LiveRow, LivenessInfo};
    use rocksandra_storage::{Partition, PartitionKey, Row, TableId};

    /// `(k int PRIMARY KEY, v vector<float, 2>)`.
    fn table() -> Table {
        let column = |name: &str, ty, kind, id| Column {
            name: name.into(),
            ty,
            kind,
            position: 0,
            descending: false,
            id: ColumnId(id),
        };
        let vector = CqlType::Vector(Box::new(CqlType::Native(NativeType::Float)), 2);
        Table {
            keyspace: "ks".into(),
            name: "t".into(),
            id: [1; 16],
            storage_id: TableId(5),
            partition_key_count: 1,
            clustering_count: 0,
            next_column_id: 2,
            columns: vec![
                column(
                    "k",
                    CqlType::Native(NativeType::Int),
                    ColumnKind::PartitionKey,
                    0,
                ),
                column("v", vector, ColumnKind::Regular, 1),
            ],
            params: Default::default(),
            dropped: Vec::new(),
            indexes: Vec::new(),
            is_virtual: false,
            view: None,
            compact: None,
            masks: Default::default(),
            metrics: Default::default(),
        }
    }

    /// A replica's reply row: key `k`, vector `[x, 0]`.
    fn reply(k: i32, x: f32) -> Partition {
        let value = [x.to_be_bytes(), 0f32.to_be_bytes()].concat();
        Partition {
            key: PartitionKey::new(k.to_be_bytes().to_vec()),
            static_row: None,
            rows: vec![Row {
                clustering: Vec::new(),
                content: LiveRow {
                    liveness: Some(LivenessInfo::new(1, 0, 0)),
                    cells: vec![Cell::live(ColumnId(1), 1, value)],
                },
            }],
        }
    }

    #[test]
    fn top_k_queries_run_at_one_or_local_one() {
        use rocksandra_wire::Consistency;
        for (asked, run) in [
            (Consistency::One, Consistency::One),
            (Consistency::Quorum, Consistency::One),
            (Consistency::All, Consistency::One),
            (Consistency::EachQuorum, Consistency::One),
            (Consistency::LocalOne, Consistency::LocalOne),
            (Consistency::LocalQuorum, Consistency::LocalOne),
        ] {
            assert_eq!(super::run_at(asked), run, "{asked:?}");
        }
    }

    #[test]
    fn replies_are_merged_into_the_best_rows_once_each() {
        let table = table();
        let ranking = Ranking {
            column: 1,
            similarity: Similarity::Euclidean,
            query: vec![0.0, 0.0],
            limit: 3,
        };
        // Two replicas' replies: key 2 from both, keys 4 and 5 tied.
        let replies = vec![
            reply(1, 3.0),
            reply(2, 1.0),
            reply(5, 2.0),
            reply(2, 1.0),
            reply(4, -2.0),
            reply(3, 0.5),
        ];
        let rows = ranking
            .top_of_replies(&table, replies, LocalTime(1_700_000_000))
            .unwrap();
        let keys: Vec<PartitionKey> = rows.iter().map(|r| r.partition.clone()).collect();
        let key = |k: i32| PartitionKey::new(k.to_be_bytes().to_vec());
        let tied = if key(4) < key(5) { key(4) } else { key(5) };
        assert_eq!(keys, vec![key(3), key(2), tied]);
    }

    #[test]
    fn enough_live_rows_end_the_search() {
        assert_eq!(next_step(5, 32, 100, 32, 5), Step::Done);
        assert_eq!(next_step(5, 32, 100, 10, 7), Step::Done);
    }

    #[test]
    fn too_few_rows_widen_the_search_up_to_every_point() {
        assert_eq!(next_step(5, 32, 100, 32, 2), Step::Widen(100));
        assert_eq!(next_step(5, 8, 100, 8, 2), Step::Widen(32));
        assert_eq!(next_step(5, 100, 100, 100, 2), Step::Done);
    }

    #[test]
    fn a_graph_that_misses_points_falls_back_to_a_scan() {
        // Seven points, LIMIT 7: the graph proposed six.
        assert_eq!(next_step(7, 7, 7, 6, 6), Step::Scan);
        assert_eq!(next_step(5, 32, 100, 20, 3), Step::Scan);
    }
}
