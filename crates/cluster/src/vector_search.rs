//! ANN queries in a cluster (`ORDER BY v ANN OF [..] LIMIT n` without a
//! WHERE clause), as Cassandra's SAI answers them: the coordinator asks one
//! replica per token range, each searches its own graph of its own data
//! for the ranges it was given (`rocksandra_query::index::vector_local`),
//! and the query layer ranks the replies (`DataProxy::ann_top`).
//!
//! - Coordinator (`ann_top`): the ring's ranges cut as a scan cuts them,
//!   each given to its closest live replica (Unavailable when a range has
//!   none the consistency level accepts), the ranges of one replica sent in
//!   one `AnnSearch`; the replies are awaited for `range_request_timeout`
//!   (ReadTimeout past it). Top-K queries run at ONE (Cassandra downgrades
//!   every other level, with a warning): a level that needs more than one
//!   replica, or a replica whose gossiped messaging version predates
//!   `AnnSearch`, leaves the query to the scan path (None).
//! - Replica (`VectorReplica::serve`): answers from its graph, counting
//!   which searches the graph answered and which its exact scan did.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rocksandra_data::{LocalTime, Token};
use rocksandra_query::index::vector::Graphs;
use rocksandra_query::index::vector_local::{self, LocalSearch, ANN_LIMIT_MAX};
use rocksandra_query::proxy::AnnQuery;
use rocksandra_query::schema::{Schema, Table};
use rocksandra_query::tombstones::TombstoneThresholds;
use rocksandra_query::QueryError;
use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::{Engine, Partition, RangeScan, TableId};
use rocksandra_wire::Consistency;

use crate::coordinator::Shared;
use crate::message::{RemoteError, Request, Response};
use crate::messaging::SendError;
use crate::query_error::{queue_full, read_error};
use crate::replica::{judge, ReadQuery};
use crate::replies::Replies;
use crate::topology::Topology;

/// The node's schema as it is now; None while the node has none to give
/// (starting, or stopping).
pub type SchemaSource = Arc<dyn Fn() -> Option<Arc<Schema>> + Send + Sync>;

/// What a replica needs to answer `AnnSearch`: the node's graphs and
/// schema, and counts of how its searches were answered.
#[derive(Clone)]
pub struct VectorReplica {
    pub graphs: Arc<Graphs>,
    pub schema: SchemaSource,
    pub counts: Arc<AnnSearchCounts>,
}

/// This replica's ANN searches, by what answered them.
#[derive(Debug, Default)]
pub struct AnnSearchCounts {
    pub graph: AtomicU64,
    pub scan: AtomicU64,
}

/// Answers an `AnnSearch` (Err(request) for any other request), held to
/// the node's tombstone `thresholds` as a range read is. A node without
/// graphs (`vectors` None) refuses it.
pub fn serve(
    vectors: Option<&VectorReplica>,
    engine: &Arc<dyn Engine>,
    thresholds: TombstoneThresholds,
    request: Request,
) -> Result<Response, Request> {
    let Request::AnnSearch {
        table,
        column,
        vector,
        k,
        ranges,
        now,
    } = request
    else {
        return Err(request);
    };
    let Some(vectors) = vectors else {
        return Ok(refused("this node answers no ANN search"));
    };
    let search = Search {
        table: TableId(table),
        column: ColumnId(column),
        vector: &vector,
        k: k as usize,
        ranges: &ranges,
    };
    Ok(vectors.answer(engine, &search, (thresholds, now)))
}

fn refused(why: impl Into<String>) -> Response {
    Response::Error(RemoteError::Invalid(why.into()))
}

/// An `AnnSearch`'s fields.
struct Search<'a> {
    table: TableId,
    column: ColumnId,
    vector: &'a [f32],
    k: usize,
    ranges: &'a [(Token, Token)],
}

impl VectorReplica {
    fn answer(
        &self,
        engine: &Arc<dyn Engine>,
        search: &Search<'_>,
        (thresholds, now): (TombstoneThresholds, LocalTime),
    ) -> Response {
        if search.k > ANN_LIMIT_MAX {
            return refused(format!("an ANN search of more than {ANN_LIMIT_MAX} rows"));
        }
        let Some(schema) = (self.schema)() else {
            return Response::Error(RemoteError::Overloaded("node is starting".into()));
        };
        let Some((_, table)) = schema.table_by_storage_id(search.table) else {
            let table = search.table.0;
            return refused(format!("unknown table {table} (schemas disagree)"));
        };
        let local = LocalSearch {
            table,
            column: search.column,
            vector: search.vector,
            k: search.k,
            ranges: search.ranges,
            stop_past: thresholds.failure,
        };
        match vector_local::search(&self.graphs, engine, &local, now) {
            Ok(top) => {
                let query = ReadQuery::Ann {
                    table: search.table,
                    ranges: search.ranges.len(),
                };
                if let Err(refused) = judge(thresholds, top.tombstones, top.rows.len(), query) {
                    return Response::Error(refused);
                }
                let count = match top.from_graph {
                    true => &self.counts.graph,
                    false => &self.counts.scan,
                };
                count.fetch_add(1, Ordering::Relaxed);
                Response::AnnRows {
                    rows: top.rows,
                    from_graph: top.from_graph,
                }
            }
            Err(QueryError::Invalid(m)) => refused(m),
            Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
        }
    }
}

/// Token intervals (both ends inclusive) by the replica asked for them.
pub type RangesByReplica = BTreeMap<IpAddr, Vec<(Token, Token)>>;

/// Gives each piece of the ring (first token, last token, replicas) to the
/// replica `choose` picks among its replicas; neighbouring intervals of
/// one replica are joined. The first error of `choose` is returned.
pub fn group_by_replica(
    pieces: Vec<(Token, Token, Vec<IpAddr>)>,
    mut choose: impl FnMut(&[IpAddr]) -> Result<IpAddr, QueryError>,
) -> Result<RangesByReplica, QueryError> {
    let mut by_replica = RangesByReplica::new();
    for (start, end, replicas) in pieces {
        let chosen = choose(&replicas)?;
        let ranges = by_replica.entry(chosen).or_default();
        match ranges.last_mut() {
            Some(last) if last.1 .0.checked_add(1) == Some(start.0) => last.1 = end,
            _ => ranges.push((start, end)),
        }
    }
    Ok(by_replica)
}

/// The coordinator's side (see the module doc): the replies' rows, or None
/// when the query is left to the scan path.
pub fn ann_top(
    shared: &Shared,
    (schema, table): (&Schema, &Table),
    query: &AnnQuery,
    cl: Consistency,
    now: LocalTime,
) -> Result<Option<Vec<Partition>>, QueryError> {
    let topology = shared.topology();
    let Some(plan) = plan(&topology, schema, table, cl)? else {
        return Ok(None);
    };
    if !all_answer_ann(&topology, plan.keys()) {
        return Ok(None);
    }
    ask(shared, plan, (table, query), cl, now).map(Some)
}

/// Whether every one of `replicas` publishes a messaging version that
/// knows `AnnSearch` (an older peer would close the connection on it).
fn all_answer_ann<'a>(topology: &Topology, mut replicas: impl Iterator<Item = &'a IpAddr>) -> bool {
    replicas.all(|e| {
        topology
            .nodes
            .get(e)
            .is_some_and(|v| v.messaging_version >= crate::gossip::ANN_SEARCH_VERSION)
    })
}

/// Which replica is asked for which ranges; None at a level that needs
/// more than one replica.
fn plan(
    topology: &Topology,
    schema: &Schema,
    table: &Table,
    cl: Consistency,
) -> Result<Option<RangesByReplica>, QueryError> {
    let strategy = crate::coordinator::keyspace_strategy(schema, &table.keyspace);
    let requirement = crate::consistency::requirement(
        cl,
        crate::consistency::Operation::Read,
        &strategy,
        &topology.local_dc,
    )
    .map_err(crate::query_error::consistency_error)?;
    if requirement.block_for() != 1 {
        return Ok(None);
    }
    let whole = RangeScan {
        table: table.storage_id,
        token_start: Token(i64::MIN),
        token_end: Token(i64::MAX),
        resume_after: None,
        include_static: true,
        per_partition_limit: 0,
        row_limit: 0,
    };
    let pieces = crate::coordinator::scan_pieces(topology, &strategy, &whole);
    let choose = |replicas: &[IpAddr]| {
        let live = topology.live_by_proximity(replicas);
        let with_dcs = crate::coordinator::check_live(topology, &requirement, cl, &live)?;
        let first = with_dcs.iter().find(|(_, d)| requirement.counts(d));
        first
            .map(|(e, _)| *e)
            .ok_or_else(|| QueryError::Unavailable {
                consistency: cl,
                required: 1,
                alive: 0,
            })
    };
    group_by_replica(pieces, choose).map(Some)
}

/// Sends each replica its `AnnSearch` (this node's last, so the others
/// run meanwhile) and gathers the rows of every reply.
fn ask(
    shared: &Shared,
    plan: RangesByReplica,
    (table, query): (&Table, &AnnQuery),
    cl: Consistency,
    now: LocalTime,
) -> Result<Vec<Partition>, QueryError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let asked = plan.len();
    let mut order: Vec<(IpAddr, Vec<(Token, Token)>)> = plan.into_iter().collect();
    order.sort_by_key(|(e, _)| *e == shared.local);
    for (endpoint, ranges) in order {
        let request = Request::AnnSearch {
            table: table.storage_id.0,
            column: query.column.0,
            vector: query.vector.clone(),
            k: query.k.min(ANN_LIMIT_MAX) as u32,
            ranges,
            now,
        };
        shared.dispatch(endpoint, request, &tx);
    }
    drop(tx);
    let replies = Replies::within(rx, shared.timeouts.range);
    let mut rows = Vec::new();
    let mut received = 0;
    while received < asked {
        match replies.next() {
            Some((_, Ok(Response::AnnRows { rows: some, .. }))) => {
                received += 1;
                rows.extend(some);
            }
            Some((e, Ok(Response::Error(err)))) => {
                return Err(read_error(e, &err, cl, (received, asked)))
            }
            Some((_, Err(SendError::QueueFull(e)))) => return Err(queue_full(e)),
            Some(_) | None => {
                return Err(QueryError::ReadTimeout {
                    consistency: cl,
                    received: 0,
                    block_for: 1,
                    data_present: false,
                })
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn piece(start: i64, end: i64, replicas: &[u8]) -> (Token, Token, Vec<IpAddr>) {
        let replicas = replicas.iter().map(|r| ip(*r)).collect();
        (Token(start), Token(end), replicas)
    }

    #[test]
    fn ranges_go_to_the_chosen_replica_neighbours_joined() {
        let pieces = vec![
            piece(i64::MIN, -100, &[1, 2]),
            piece(-99, 0, &[2, 3]),
            piece(1, 50, &[1, 3]),
            piece(51, i64::MAX, &[1, 2]),
        ];
        // The first replica of each piece.
        let plan = group_by_replica(pieces.clone(), |r| Ok(r[0])).unwrap();
        assert_eq!(plan.len(), 2);
        assert_eq!(
            plan[&ip(1)],
            vec![(Token(i64::MIN), Token(-100)), (Token(1), Token(i64::MAX))]
        );
        assert_eq!(plan[&ip(2)], vec![(Token(-99), Token(0))]);
        // Node 1 down: its pieces go to the next replica.
        let plan = group_by_replica(pieces.clone(), |r| {
            Ok(*r.iter().find(|e| **e != ip(1)).unwrap())
        })
        .unwrap();
        assert_eq!(plan[&ip(2)].len(), 2, "{plan:?}");
        assert_eq!(plan[&ip(3)], vec![(Token(1), Token(50))]);
        assert!(!plan.contains_key(&ip(1)));
    }

    #[test]
    fn peers_that_do_not_know_ann_search_are_not_asked() {
        let mut older = crate::topology::tests::view(2, 200);
        older.messaging_version = 0;
        let views = vec![crate::topology::tests::view(1, 100), older];
        let topology = Topology::new(ip(1), "dc1".into(), views);
        assert!(all_answer_ann(&topology, [ip(1)].iter()));
        assert!(!all_answer_ann(&topology, [ip(1), ip(2)].iter()));
        // A node the topology does not know is not asked either.
        assert!(!all_answer_ann(&topology, [ip(9)].iter()));
    }

    #[test]
    fn a_range_without_a_replica_fails_the_plan() {
        let pieces = vec![piece(i64::MIN, 0, &[1]), piece(1, i64::MAX, &[2])];
        let unavailable = || QueryError::Unavailable {
            consistency: Consistency::One,
            required: 1,
            alive: 0,
        };
        let result = group_by_replica(pieces, |r| {
            if r == [ip(2)] {
                Err(unavailable())
            } else {
                Ok(r[0])
            }
        });
        assert_eq!(result.unwrap_err().to_string(), unavailable().to_string());
    }
}
