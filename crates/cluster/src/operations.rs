//! Operations that move data between nodes, run by `nodetool` on a node's
//! blocking thread: decommission, removenode, rebuild and repair, with the
//! streaming sessions `nodetool netstats` shows while they run.
//!
//! Which ranges move where is decided by pure functions over rings
//! (`transfers`); the rest is I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rocksandra_data::LocalTime;
use rocksandra_query::schema::{Keyspace, Schema};
use rocksandra_storage::{TableId, TokenRange};

use crate::admin::AdminError;
use crate::gossip::{STATUS_LEAVING, STATUS_LEFT, STATUS_NORMAL};
use crate::message::{RemoteError, Request, Response};
use crate::node::ClusterNode;
use crate::repair::{self, MerkleTree};
use crate::ring::{Endpoint, MemberStatus, Ring, Strategy};
use crate::streaming::Progress;
use crate::streaming::STREAM_REQUEST_TIMEOUT;
use crate::topology::replicated_keyspaces;

mod error;
mod running;
pub use error::OperationError;
pub use running::{operation_key, Outcome, RunningOperations, RUNNING_OPERATIONS_MAX};

/// How long removenode waits for a node to pull a table's ranges from
/// another (`StreamFrom`: the whole stream, paced by the puller's source).
pub const STREAM_FROM_TIMEOUT: Duration = Duration::from_secs(12 * 3600);
/// Finished sessions `netstats` still lists.
pub const FINISHED_SESSIONS_KEPT: usize = 32;
/// How long a node waits for a status change (LEAVING, a removal) to reach
/// the others by gossip before it streams.
pub const STATUS_SPREAD_WAIT: Duration = Duration::from_secs(2);

/// One streaming session with one peer: what `nodetool netstats` shows.
#[derive(Clone, Debug)]
pub struct StreamSession {
    pub operation: &'static str,
    pub peer: IpAddr,
    pub sending: bool,
    pub ranges: usize,
    pub files_total: usize,
    pub files_done: usize,
    pub bytes_done: u64,
    pub started: Instant,
    pub finished: Option<Finished>,
}

/// How a streaming session ended, as `nodetool netstats` tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished {
    Completed(Duration),
    /// Why it failed, as the operation reported it.
    Failed(String),
}

/// Running and recently finished sessions of this node.
#[derive(Default)]
pub struct Sessions {
    list: Mutex<Vec<StreamSession>>,
    /// Bytes the sessions this node started moved, each way.
    pub(crate) streamed: crate::metrics::StreamedBytes,
}

impl Sessions {
    fn open(&self, operation: &'static str, peer: IpAddr, sending: bool, ranges: usize) -> usize {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        let finished = list.iter().filter(|s| s.finished.is_some()).count();
        if finished > FINISHED_SESSIONS_KEPT {
            if let Some(i) = list.iter().position(|s| s.finished.is_some()) {
                list.remove(i);
            }
        }
        list.push(StreamSession {
            operation,
            peer,
            sending,
            ranges,
            files_total: 0,
            files_done: 0,
            bytes_done: 0,
            started: Instant::now(),
            finished: None,
        });
        list.len() - 1
    }

    fn update(&self, id: usize, change: impl FnOnce(&mut StreamSession)) {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = list.get_mut(id) {
            change(s);
        }
    }

    /// Runs `stream` (given the session's id, returning bytes moved) as a
    /// session that ends finished or failed.
    fn run(
        &self,
        operation: &'static str,
        peer: IpAddr,
        sending: bool,
        ranges: usize,
        stream: impl FnOnce(usize) -> Result<u64, OperationError>,
    ) -> Result<u64, OperationError> {
        let id = self.open(operation, peer, sending, ranges);
        let started = Instant::now();
        let result = stream(id);
        self.update(id, |s| {
            if let Ok(bytes) = &result {
                s.bytes_done = *bytes;
            }
            s.finished = Some(match &result {
                Ok(_) => Finished::Completed(started.elapsed()),
                Err(e) => Finished::Failed(e.to_string()),
            });
        });
        result
    }

    /// Counts what a stream did (`streaming::Progress`) in session `id`.
    pub(crate) fn progress(&self, id: usize, progress: Progress) {
        self.update(id, |s| match progress {
            Progress::Files(n) => s.files_total += n,
            Progress::Bytes(n) => {
                s.bytes_done += n;
                self.streamed.record(s.sending, n);
            }
            Progress::FileDone => s.files_done += 1,
        });
    }

    fn bytes_done(&self, id: usize) -> u64 {
        let list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.get(id).map_or(0, |s| s.bytes_done)
    }

    pub fn snapshot(&self) -> Vec<StreamSession> {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// For each range `leaving` replicates now, the endpoints that replicate
/// it in `future` but not in `current`: where its data must go. Ranges
/// are `current`'s (each lies within one range of `future`).
pub fn transfers(
    current: &Ring,
    future: &Ring,
    strategy: &Strategy,
    leaving: Endpoint,
) -> Vec<(TokenRange, Vec<Endpoint>, Vec<Endpoint>)> {
    current
        .ranges(strategy)
        .into_iter()
        .filter(|(_, replicas)| replicas.contains(&leaving))
        .filter_map(|(range, replicas)| {
            let gaining: Vec<Endpoint> = future
                .replicas(strategy, range.end_inclusive)
                .into_iter()
                .filter(|e| !replicas.contains(e))
                .collect();
            (!gaining.is_empty()).then_some((range, replicas, gaining))
        })
        .collect()
}

/// Where a joining node takes its data from: for each range it will
/// replicate once it is normal, the current replica that gives the range
/// up (when it is alive; else another live current replica), grouped by
/// source.
///
/// Cassandra's consistent range movement: a write a quorum of the old
/// replicas acknowledged is on the replica that leaves the range or on a
/// quorum of those that stay, so the new replicas hold it on a quorum.
/// Streaming from a staying replica that missed it would leave the joiner
/// and that replica, a quorum of the new ones, without it.
pub fn bootstrap_sources(
    topology: &crate::topology::Topology,
    strategy: &Strategy,
    joining: Endpoint,
) -> BTreeMap<Endpoint, Vec<TokenRange>> {
    // The ring as it will be once the node is normal.
    let future = Ring::new(topology.nodes.values().map(|v| {
        let mut m = v.member.clone();
        if m.address == joining {
            m.status = MemberStatus::Normal;
        }
        m
    }));
    let mut by_source: BTreeMap<Endpoint, Vec<TokenRange>> = BTreeMap::new();
    for range in future.ranges_of(strategy, joining) {
        let current = topology.ring.replicas(strategy, range.end_inclusive);
        let staying = future.replicas(strategy, range.end_inclusive);
        let live = |e: &&Endpoint| **e != joining && topology.is_alive(**e);
        let source = current
            .iter()
            .filter(live)
            .find(|e| !staying.contains(e))
            .or_else(|| current.iter().find(live))
            .copied();
        if let Some(source) = source {
            by_source.entry(source).or_default().push(range);
        }
    }
    by_source
}

/// Why `leaving` cannot go: a keyspace would have fewer nodes than
/// replicas. Cassandra's message.
pub fn check_replication_after(
    topology: &crate::topology::Topology,
    schema: &rocksandra_query::schema::Schema,
    leaving: Endpoint,
) -> Result<(), OperationError> {
    let remaining: Vec<&crate::gossip::NodeView> = topology
        .nodes
        .values()
        .filter(|v| v.member.address != leaving && v.member.status == MemberStatus::Normal)
        .collect();
    let leaving_dc = topology.dc_of(leaving).unwrap_or_default();
    for (keyspace, strategy) in replicated_keyspaces(schema) {
        let (rf, nodes) = match &strategy {
            Strategy::Simple { rf } => (*rf, remaining.len()),
            Strategy::NetworkTopology { dcs } => match dcs.get(&leaving_dc) {
                Some(rf) => (
                    *rf,
                    remaining
                        .iter()
                        .filter(|v| v.member.dc == leaving_dc)
                        .count(),
                ),
                None => continue,
            },
            Strategy::Local => continue,
        };
        if rf > nodes {
            return Err(OperationError::NotEnoughNodes {
                keyspace: keyspace.name.clone(),
                rf,
                nodes: nodes + 1,
            });
        }
    }
    Ok(())
}

impl ClusterNode {
    /// Sends `table`'s data in `ranges` to `target` (push): written to
    /// files here, sent in chunks, ingested there.
    fn push_ranges(
        &self,
        operation: &'static str,
        target: IpAddr,
        table: TableId,
        ranges: &[TokenRange],
    ) -> Result<u64, OperationError> {
        self.sessions
            .run(operation, target, true, ranges.len(), |id| {
                let dir = self.streaming_dir("push", table);
                let result = crate::streaming::export(&*self.shared.engine, table, ranges, &dir)
                    .and_then(|paths| {
                        crate::streaming::send(
                            &*self.shared.messaging,
                            target,
                            table,
                            &paths,
                            (self.stream_server.chunk_bytes(), &self.stream_throttle),
                            &mut |p| self.sessions.progress(id, p),
                        )
                    })
                    .map_err(|source| OperationError::StreamTo {
                        peer: target,
                        source,
                    });
                let _ = std::fs::remove_dir_all(&dir);
                result.map(|()| self.sessions.bytes_done(id))
            })
    }

    /// Takes `table`'s data in `ranges` from `source` (pull), a range at a
    /// time: the source writes it to files, this node fetches them in
    /// chunks and ingests them.
    pub(crate) fn pull_ranges(
        &self,
        operation: &'static str,
        source: IpAddr,
        table: TableId,
        ranges: &[TokenRange],
    ) -> Result<u64, OperationError> {
        self.sessions
            .run(operation, source, false, ranges.len(), |id| {
                for range in ranges {
                    let dir = self.streaming_dir("pull", table);
                    let files = crate::streaming::fetch(
                        &*self.shared.messaging,
                        source,
                        (table, std::slice::from_ref(range)),
                        &dir,
                        &mut |p| self.sessions.progress(id, p),
                    )
                    .map_err(|e| {
                        let _ = std::fs::remove_dir_all(&dir);
                        OperationError::StreamFrom {
                            peer: source,
                            source: e,
                        }
                    })?;
                    crate::streaming::ingest(&*self.shared.engine, table, &files, &dir)
                        .map_err(OperationError::Ingest)?;
                }
                Ok(self.sessions.bytes_done(id))
            })
    }

    /// `nodetool decommission [--force]`: this node streams its ranges to
    /// the nodes that take them over, leaves the ring, and stops; without
    /// `force`, not when a keyspace would keep fewer nodes than replicas.
    pub(crate) fn decommission(self: &Arc<Self>, force: bool) -> Result<String, OperationError> {
        let local = self.config().broadcast_address;
        if self.status() != STATUS_NORMAL {
            return Err(OperationError::NotNormal(self.status()));
        }
        let topology = self.shared.topology();
        if !topology
            .nodes
            .values()
            .any(|v| v.member.address != local && v.member.status == MemberStatus::Normal)
        {
            return Err(OperationError::NoOtherNormalNode);
        }
        let schema = self.executor().schema();
        if !force {
            check_replication_after(&topology, &schema, local)?;
        }
        self.set_status_blocking(STATUS_LEAVING);
        std::thread::sleep(STATUS_SPREAD_WAIT);
        let topology = self.shared.topology();
        let future = Ring::new(
            topology
                .nodes
                .values()
                .filter(|v| v.member.address != local)
                .map(|v| v.member.clone()),
        );
        let started = Instant::now();
        let mut bytes = 0;
        for (keyspace, strategy) in replicated_keyspaces(&schema) {
            let mut plan: BTreeMap<IpAddr, Vec<TokenRange>> = BTreeMap::new();
            for (range, _, gaining) in transfers(&topology.ring, &future, &strategy, local) {
                for target in gaining {
                    plan.entry(target).or_default().push(range);
                }
            }
            for table in keyspace.storage_ids() {
                for (target, ranges) in &plan {
                    bytes += self
                        .push_ranges("Unbootstrap", *target, table, ranges)
                        .inspect_err(|_| self.set_status_blocking(STATUS_NORMAL))?;
                }
            }
        }
        let secs = started.elapsed().as_secs_f64().max(0.001);
        tracing::info!(
            "decommission streamed {bytes} bytes in {secs:.1} s ({:.1} MB/s)",
            bytes as f64 / secs / 1e6
        );
        // As Cassandra: the hints kept here go to the closest live normal
        // node, which delivers them.
        let heir = topology
            .nodes
            .values()
            .filter(|v| {
                v.member.address != local
                    && v.member.status == MemberStatus::Normal
                    && topology.is_alive(v.member.address)
            })
            .min_by_key(|v| (v.member.dc != topology.local_dc, v.member.address))
            .map(|v| v.member.address);
        if let Some(heir) = heir {
            crate::hints::deliver(&self.shared, &|_| false);
            let handed = crate::hints::hand_over(&self.shared, heir);
            if handed > 0 {
                tracing::info!("handed {handed} hints over to {heir}");
            }
        }
        self.set_status_blocking(STATUS_LEFT);
        // Marks the data directory first: a restart must not rejoin.
        let _ = std::fs::write(
            self.config()
                .data_dir
                .join(crate::node::DECOMMISSIONED_MARKER),
            b"decommissioned\n",
        );
        std::thread::sleep(STATUS_SPREAD_WAIT);
        self.announce_left();
        Ok(format!(
            "Decommissioned: streamed {bytes} bytes in {secs:.1} s; the node stops now.\n"
        ))
    }

    /// `nodetool removenode HOST_ID`: the ranges of a dead node are copied
    /// from the remaining replicas to the nodes that take them over, then
    /// the node is out of the ring.
    pub(crate) fn remove_node(self: &Arc<Self>, host_id: &str) -> Result<String, OperationError> {
        let id = crate::gossip::parse_hex16(&host_id.replace('-', ""))
            .ok_or_else(|| OperationError::NotAHostId(host_id.to_string()))?;
        let topology = self.shared.topology();
        let Some(dead) = topology.endpoint_of_host(id) else {
            return Err(OperationError::UnknownHostId(host_id.to_string()));
        };
        if dead == self.config().broadcast_address {
            return Err(OperationError::RemoveSelf);
        }
        if topology.is_alive(dead) {
            return Err(OperationError::RemoveAlive(dead));
        }
        let schema = self.executor().schema();
        self.publish_removal(id, false);
        std::thread::sleep(STATUS_SPREAD_WAIT);
        let future = Ring::new(
            topology
                .nodes
                .values()
                .filter(|v| v.member.address != dead)
                .map(|v| v.member.clone()),
        );
        let mut bytes = 0;
        for (keyspace, strategy) in replicated_keyspaces(&schema) {
            // (target, source) -> ranges
            let mut plan: BTreeMap<(IpAddr, IpAddr), Vec<TokenRange>> = BTreeMap::new();
            for (range, replicas, gaining) in transfers(&topology.ring, &future, &strategy, dead) {
                let Some(source) = replicas
                    .iter()
                    .copied()
                    .find(|e| *e != dead && topology.is_alive(*e))
                else {
                    tracing::warn!("removenode: no live replica holds {range:?}; its data is lost");
                    continue;
                };
                for target in gaining {
                    plan.entry((target, source)).or_default().push(range);
                }
            }
            for table_id in keyspace.storage_ids() {
                for ((target, source), ranges) in &plan {
                    bytes += if *target == self.config().broadcast_address {
                        self.pull_ranges("Restore replica count", *source, table_id, ranges)?
                    } else {
                        self.sessions.run(
                            "Restore replica count",
                            *target,
                            true,
                            ranges.len(),
                            |_| match self.shared.messaging.call(
                                *target,
                                Request::StreamFrom {
                                    table: table_id.0,
                                    ranges: ranges.clone(),
                                    source: *source,
                                },
                                STREAM_FROM_TIMEOUT,
                            ) {
                                Ok(Response::Text(n)) => Ok(n.trim().parse::<u64>().unwrap_or(0)),
                                Ok(other) => Err(OperationError::StreamFromAnswer {
                                    target: *target,
                                    answer: Box::new(other),
                                }),
                                Err(error) => Err(OperationError::StreamFromUnreachable {
                                    target: *target,
                                    error,
                                }),
                            },
                        )?
                    };
                }
            }
        }
        self.publish_removal(id, true);
        self.shared.hints.drop_host(id);
        Ok(format!(
            "Removed {host_id} (/{dead}); streamed {bytes} bytes.\n"
        ))
    }

    /// `nodetool rebuild [SOURCE_DC]`: streams every range this node
    /// replicates from another live replica.
    pub(crate) fn rebuild(&self, source_dc: Option<&str>) -> Result<String, OperationError> {
        let topology = self.shared.topology();
        let local = self.config().broadcast_address;
        let schema = self.executor().schema();
        let mut bytes = 0;
        for (keyspace, strategy) in replicated_keyspaces(&schema) {
            let mut by_source: BTreeMap<IpAddr, Vec<TokenRange>> = BTreeMap::new();
            for (range, replicas) in topology.ring.ranges(&strategy) {
                if !replicas.contains(&local) {
                    continue;
                }
                let source = replicas.into_iter().find(|e| {
                    *e != local
                        && topology.is_alive(*e)
                        && source_dc.is_none_or(|dc| topology.dc_of(*e).as_deref() == Some(dc))
                });
                if let Some(source) = source {
                    by_source.entry(source).or_default().push(range);
                }
            }
            for table in keyspace.storage_ids() {
                for (source, ranges) in &by_source {
                    bytes += self.pull_ranges("Rebuild", *source, table, ranges)?;
                }
            }
        }
        Ok(format!("Rebuild finished: {bytes} bytes received.\n"))
    }

    /// `nodetool repair [KEYSPACE [TABLE...]] [-pr]`: for each range this
    /// node replicates (its primary ranges with `-pr`), compares Merkle
    /// trees of every replica and syncs only the slices that differ: this
    /// node takes them from each replica, then sends the merged slices back.
    pub(crate) fn repair(
        &self,
        keyspace: Option<&str>,
        tables: &[String],
        primary_range: bool,
        only: Option<TokenRange>,
    ) -> Result<String, OperationError> {
        let topology = self.shared.topology();
        let local = self.config().broadcast_address;
        let schema = self.executor().schema();
        let keyspaces = repaired_keyspaces(&schema, keyspace)?;
        let now = LocalTime::of_micros(rocksandra_data::time::system_micros());
        let mut tally = RepairTally::default();
        for (keyspace, strategy) in keyspaces {
            let stores = repaired_stores(&keyspace, tables)?;
            for (range, replicas) in topology.ring.ranges(&strategy) {
                if !replicas.contains(&local) || primary_range && replicas.first() != Some(&local) {
                    continue;
                }
                let pieces = match only {
                    Some(only) => repair::intersect(range, only),
                    None => vec![range],
                };
                if pieces.is_empty() {
                    continue;
                }
                if let Some(down) = replicas.iter().find(|e| !topology.is_alive(**e)) {
                    return Err(OperationError::ReplicaDown { down: *down, range });
                }
                for ((name, table), range) in stores
                    .iter()
                    .flat_map(|t| pieces.iter().map(move |p| (t, *p)))
                {
                    let (differing, moved) = self.repair_range(*table, range, &replicas, now)?;
                    let name = format!("{}.{name}", keyspace.name);
                    tally.add(&name, range, differing, moved);
                }
            }
        }
        if let (Some(only), 0) = (only, tally.compared) {
            return Err(OperationError::RangeNotReplicated {
                start: only.start_exclusive.0,
                end: only.end_inclusive.0,
            });
        }
        let out = tally.finish();
        tracing::info!("{}", out.trim_end());
        Ok(out)
    }

    /// Repairs one range of one table; returns (differing slices, bytes).
    fn repair_range(
        &self,
        table: TableId,
        range: TokenRange,
        replicas: &[Endpoint],
        now: LocalTime,
    ) -> Result<(usize, u64), OperationError> {
        let local = self.config().broadcast_address;
        let depth = repair::DEFAULT_DEPTH;
        let mut trees = Vec::new();
        for replica in replicas {
            let leaves = if *replica == local {
                repair::leaf_hashes(&*self.shared.engine, table, range, depth, now)?
            } else {
                match self.shared.messaging.call(
                    *replica,
                    Request::MerkleTree {
                        table: table.0,
                        range,
                        depth,
                        now,
                    },
                    STREAM_REQUEST_TIMEOUT,
                ) {
                    Ok(Response::Merkle(leaves)) => leaves,
                    Ok(other) => {
                        return Err(OperationError::MerkleAnswer {
                            replica: *replica,
                            answer: Box::new(other),
                        })
                    }
                    Err(error) => {
                        return Err(OperationError::MerkleUnreachable {
                            replica: *replica,
                            error,
                        })
                    }
                }
            };
            trees.push((*replica, MerkleTree::new(leaves)));
        }
        let all: Vec<MerkleTree> = trees.iter().map(|(_, t)| t.clone()).collect();
        let differing = repair::differing_leaves(&all);
        if differing.is_empty() {
            return Ok((0, 0));
        }
        let slices = repair::coalesce(&repair::leaf_ranges(range, depth), &differing);
        let differing_set: BTreeSet<usize> = differing.iter().copied().collect();
        let mut bytes = 0;
        // Take every other replica's version of the slices, then send back
        // the union to each.
        for (replica, _) in trees.iter().filter(|(r, _)| *r != local) {
            bytes += self.pull_ranges("Repair", *replica, table, &slices)?;
        }
        for (replica, _) in trees.iter().filter(|(r, _)| *r != local) {
            bytes += self.push_ranges("Repair", *replica, table, &slices)?;
        }
        Ok((differing_set.len(), bytes))
    }

    /// Serves `StreamFrom` (pull from a third node).
    pub(crate) fn serve_streaming(&self, request: Request) -> Response {
        match request {
            Request::StreamFrom {
                table,
                ranges,
                source,
            } => match self.pull_ranges("Restore replica count", source, TableId(table), &ranges) {
                Ok(bytes) => Response::Text(bytes.to_string()),
                Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
            },
            other => Response::Error(RemoteError::Invalid(format!(
                "unexpected request {other:?}"
            ))),
        }
    }

    /// `nodetool netstats`.
    pub(crate) fn netstats(&self) -> String {
        let mode = match self.status() {
            STATUS_LEFT => "DECOMMISSIONED",
            other => other,
        };
        let mut out = format!("Mode: {mode}\n");
        let sessions = self.sessions.snapshot();
        if sessions.is_empty() {
            out.push_str("Not sending any streams.\n");
            return out;
        }
        for s in sessions {
            let (verb, done_verb) = if s.sending {
                ("Sending", "sent")
            } else {
                ("Receiving", "received")
            };
            let state = match &s.finished {
                None => format!("running for {:.1} s", s.started.elapsed().as_secs_f64()),
                Some(Finished::Completed(d)) => format!("completed in {:.1} s", d.as_secs_f64()),
                Some(Finished::Failed(e)) => format!("failed: {e}"),
            };
            let _ = writeln!(
                out,
                "{} /{} ({state})\n    {verb} {} ranges in {} files. Already {done_verb} {} files, {} bytes total",
                s.operation, s.peer, s.ranges, s.files_total, s.files_done, s.bytes_done
            );
        }
        out
    }
}

/// The replicated keyspaces a repair covers: all, or the one named.
fn repaired_keyspaces(
    schema: &Schema,
    keyspace: Option<&str>,
) -> Result<Vec<(Arc<Keyspace>, Strategy)>, OperationError> {
    let keyspaces: Vec<_> = replicated_keyspaces(schema)
        .into_iter()
        .filter(|(k, _)| keyspace.is_none_or(|name| k.name == name))
        .collect();
    match keyspace {
        Some(name) if keyspaces.is_empty() => Err(match schema.keyspace(name) {
            Some(_) => OperationError::NotReplicated(name.to_string()),
            None => AdminError::UnknownKeyspace(name.to_string()).into(),
        }),
        _ => Ok(keyspaces),
    }
}

/// The stores a repair of `keyspace` compares (all its tables, or those
/// named), each table with its indexes (`table.index`).
fn repaired_stores(
    keyspace: &Keyspace,
    tables: &[String],
) -> Result<Vec<(String, TableId)>, OperationError> {
    if let Some(missing) = tables
        .iter()
        .find(|n| !keyspace.tables.values().any(|t| t.name == **n))
    {
        return Err(AdminError::UnknownTable {
            keyspace: keyspace.name.clone(),
            table: missing.clone(),
        }
        .into());
    }
    let stores = keyspace
        .tables
        .values()
        .filter(|t| tables.is_empty() || tables.iter().any(|n| *n == t.name))
        .flat_map(|t| {
            let indexes = t
                .indexes
                .iter()
                .filter_map(|i| Some((format!("{}.{}", t.name, i.name), i.storage_id?)));
            std::iter::once((t.name.clone(), t.storage_id)).chain(indexes)
        })
        .collect();
    Ok(stores)
}

/// What a repair compared and streamed, and its report.
#[derive(Default)]
struct RepairTally {
    out: String,
    compared: usize,
    out_of_sync: usize,
    bytes: u64,
}

impl RepairTally {
    fn add(&mut self, store: &str, range: TokenRange, differing: usize, moved: u64) {
        self.compared += 1;
        self.bytes += moved;
        if differing > 0 {
            self.out_of_sync += 1;
            let _ = writeln!(
                self.out,
                "[{store}] range ({}, {}]: {differing} of {} slices out of sync, {moved} bytes streamed",
                range.start_exclusive.0,
                range.end_inclusive.0,
                1usize << repair::DEFAULT_DEPTH
            );
        }
    }

    fn finish(mut self) -> String {
        let _ = writeln!(
            self.out,
            "Repair completed: {} table ranges compared, {} out of sync, {} bytes streamed",
            self.compared, self.out_of_sync, self.bytes
        );
        self.out
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use rocksandra_data::Token;

    use super::*;
    use crate::ring::Member;

    fn member(last: u8, tokens: &[i64]) -> Member {
        Member {
            address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)),
            host_id: [last; 16],
            dc: "dc1".into(),
            rack: "r1".into(),
            tokens: tokens.iter().map(|t| Token(*t)).collect(),
            status: MemberStatus::Normal,
        }
    }

    #[test]
    fn a_leaving_node_hands_each_range_to_its_new_replica() {
        let members = vec![
            member(1, &[0, 300]),
            member(2, &[100, 400]),
            member(3, &[200, 500]),
        ];
        let leaving = members[2].address;
        let current = Ring::new(members.clone());
        let future = Ring::new(members.into_iter().filter(|m| m.address != leaving));
        let strategy = Strategy::Simple { rf: 2 };
        let moves = transfers(&current, &future, &strategy, leaving);
        // Every range node 3 held moves, to exactly the one node that
        // replicates it afterwards and not before.
        assert_eq!(moves.len(), current.ranges_of(&strategy, leaving).len());
        for (range, before, gaining) in &moves {
            assert!(before.contains(&leaving));
            assert_eq!(gaining.len(), 1, "{range:?}");
            let after = future.replicas(&strategy, range.end_inclusive);
            assert!(after.contains(&gaining[0]) && !before.contains(&gaining[0]));
        }
        // With RF equal to the node count nothing can move but the count
        // check refuses first; with RF 1 data moves to the successor.
        let one = transfers(&current, &future, &Strategy::Simple { rf: 1 }, leaving);
        assert_eq!(one.len(), 2);
    }

    #[test]
    fn a_joining_node_streams_from_the_replica_giving_the_range_up() {
        let view = |m: Member| crate::gossip::NodeView {
            rpc_address: m.address,
            member: m,
            alive: true,
            left: false,
            native_port: 9042,
            schema_version: [0; 16],
            schema_epoch: 0,
            generation: 1,
            removals: Vec::new(),
            load: None,
            disk_usage: Default::default(),
            messaging_version: crate::gossip::MESSAGING_VERSION,
        };
        let mut joining = member(4, &[150]);
        joining.status = MemberStatus::Joining;
        let views = vec![
            view(member(1, &[100])),
            view(member(2, &[200])),
            view(member(3, &[300])),
            view(joining.clone()),
        ];
        let topology = crate::topology::Topology::new(joining.address, "dc1".into(), views.clone());
        let strategy = Strategy::Simple { rf: 3 };
        // (100, 150] is replicated by 2, 3 and 1 now, by 4, 2 and 3 after:
        // node 1 gives it up and is the source (not 2, the first replica).
        let sources = bootstrap_sources(&topology, &strategy, joining.address);
        let giving_up = member(1, &[]).address;
        let expected_range = TokenRange {
            start_exclusive: Token(100),
            end_inclusive: Token(150),
        };
        assert!(sources
            .get(&giving_up)
            .is_some_and(|r| r.contains(&expected_range)));
        // With node 1 down another current replica serves.
        let mut down = views;
        down[0].alive = false;
        let topology = crate::topology::Topology::new(joining.address, "dc1".into(), down);
        let sources = bootstrap_sources(&topology, &strategy, joining.address);
        assert!(!sources.contains_key(&giving_up));
        assert!(sources.values().flatten().any(|r| *r == expected_range));
    }
}
