//! The coordinator: any node runs a request's reads and writes against the
//! replicas of the data, as the consistency level asks (Cassandra's
//! StorageProxy).
//!
//! - Writes go to every live natural and pending replica; the call returns
//!   once each mutation has enough acknowledgements. Down replicas, and
//!   replicas that fail or stay silent until the timeout, get a hint.
//! - A logged batch spanning several partitions is first stored on one or
//!   two other nodes (`batchlog`), which replay it should this node die
//!   before it was applied.
//! - Reads ask the closest replica for data and the others for digests
//!   (speculating on one more replica when an answer is late); on a
//!   mismatch, every answering replica sends its stored state, the
//!   coordinator reconciles them (storage's own reconciliation, on an
//!   in-memory engine) and repairs the replicas that differ before it
//!   answers (blocking read repair).
//! - Scans walk the ring's ranges in token order, one replica per range at
//!   ONE and comparing pages of several at higher levels.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rocksandra_data::{LocalTime, Timestamp, Token};
use rocksandra_query::disk_usage::DiskUsage;
use rocksandra_query::proxy::{AnnQuery, CasDecide, CasOptions, DataProxy, WriteOptions};
use rocksandra_query::read_thresholds::{ReadMet, ReadThresholdSettings};
use rocksandra_query::schema::{Schema, Table};
use rocksandra_query::tombstones::TombstoneSettings;

use crate::query_error::{consistency_error, failure_counts, queue_full, read_error, remote_error};
use crate::read_reports::ReportBook;
use crate::replica::ReadLimits;
use rocksandra_query::error::UNKNOWN_FAILURE;
use rocksandra_query::QueryError;
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::{
    Engine, KvEngine, Mutation, Partition, PartitionKey, PartitionRead, RangeScan, RawPartition,
    ScanPage, ScanPosition, TokenRange,
};
use rocksandra_wire::{Consistency, WriteType};

use crate::batchlog::{self, BatchEntry, Candidate};
use crate::consistency::{requirement, Operation, Requirement};
use crate::hints::Hints;
use crate::message::{digest, RemoteError, Request, Response};
use crate::messaging::{Reply, SendError, Transport};
use crate::paxos::{
    after_promises, propose_outcome, Ballot, BallotClock, NextStep, Participants, PaxosKey,
    PrepareAnswer, Proposal, ProposeOutcome, CAS_CONTENTION_TIMEOUT, CONTENTION_BACKOFF_MAX,
};
use crate::replica::{self, Replica};
use crate::replies::Replies;
use crate::ring::{MemberStatus, Strategy};
use crate::topology::Topology;

/// Cassandra's default `write_request_timeout`.
pub const WRITE_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Cassandra's default `read_request_timeout`.
pub const READ_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Cassandra's default `range_request_timeout`.
pub const RANGE_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the coordinator waits for replicas: Cassandra's
/// `read_request_timeout`, `write_request_timeout`, `range_request_timeout`,
/// `cas_contention_timeout` (the time a lightweight transaction retries
/// under contention) and `truncate_request_timeout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub read: Duration,
    pub write: Duration,
    pub range: Duration,
    pub cas_contention: Duration,
    pub truncate: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            read: READ_REQUEST_TIMEOUT,
            write: WRITE_REQUEST_TIMEOUT,
            range: RANGE_REQUEST_TIMEOUT,
            cas_contention: CAS_CONTENTION_TIMEOUT,
            truncate: crate::truncate::TRUNCATE_REQUEST_TIMEOUT,
        }
    }
}
/// A read answer later than this makes the coordinator ask one more replica.
pub const SPECULATIVE_RETRY_AFTER: Duration = Duration::from_millis(50);
/// Writes whose slow replicas are still watched (to hint the ones that
/// never answer) after the client was answered; beyond it they are not.
pub const WRITE_FOLLOWUPS_MAX: usize = 10_000;

/// Test-only faults `nodetool failpoint NAME` arms.
pub const FAILPOINTS: [&str; 1] = [CRASH_AFTER_BATCHLOG];
/// The coordinator aborts the process once a logged batch is stored in the
/// batchlog, before any of its mutations is sent (a coordinator crash).
pub const CRASH_AFTER_BATCHLOG: &str = "crash-after-batchlog";

/// What the coordinator shares with the node's loops.
pub struct Shared {
    pub local: IpAddr,
    pub engine: Arc<dyn Engine>,
    /// The tombstone thresholds this node's replica reads answer to.
    pub tombstones: Arc<TombstoneSettings>,
    /// `read_thresholds_enabled` and the read size thresholds.
    pub read_thresholds: Arc<ReadThresholdSettings>,
    /// This node's ANN graphs, which answer `AnnSearch` (None: no graphs).
    pub vectors: Option<crate::vector_search::VectorReplica>,
    /// How requests reach other nodes (`Messaging`, or a simulated network).
    pub messaging: Arc<dyn Transport>,
    pub topology: RwLock<Arc<Topology>>,
    pub hints: Hints,
    pub now_micros: Arc<dyn Fn() -> i64 + Send + Sync>,
    pub timeouts: Timeouts,
    /// When each node was first seen down (`now_micros`), for the hint
    /// window.
    pub down_since: RwLock<HashMap<IpAddr, i64>>,
    followups: std::sync::mpsc::SyncSender<Followup>,
    /// This coordinator's Paxos ballots.
    ballots: std::sync::Mutex<BallotClock>,
    /// Numbers this coordinator's logged batches.
    batch_sequence: AtomicU32,
    /// Armed failpoints: bit i for `FAILPOINTS[i]` (read on every logged
    /// batch, so no lock).
    failpoints: AtomicU32,
    /// Blocking read repairs this coordinator ran (reads that found
    /// replicas differing and wrote the merged answer to them).
    pub read_repairs: AtomicU64,
}

/// A node's ballot tie-breaker: its address (unique among live nodes).
fn proposer_id(local: IpAddr) -> [u8; 16] {
    match local {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// Replicas a write still waits on after the client was answered.
struct Followup {
    replies: Replies,
    outstanding: HashMap<IpAddr, Vec<Mutation>>,
}

/// A failpoint name that is not one of `FAILPOINTS`.
#[derive(Debug, thiserror::Error)]
#[error("unknown failpoint {name} (known: {})", FAILPOINTS.join(", "))]
pub struct UnknownFailpoint {
    pub name: String,
}

impl Shared {
    pub fn new(
        local: IpAddr,
        replica: Replica,
        messaging: Arc<dyn Transport>,
        topology: Topology,
        hints: Hints,
        now_micros: Arc<dyn Fn() -> i64 + Send + Sync>,
        timeouts: Timeouts,
    ) -> std::io::Result<Arc<Shared>> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Followup>(WRITE_FOLLOWUPS_MAX);
        let shared = Arc::new(Shared {
            local,
            engine: replica.engine,
            tombstones: replica.tombstones,
            read_thresholds: replica.read_thresholds,
            vectors: replica.vectors,
            messaging,
            topology: RwLock::new(Arc::new(topology)),
            hints,
            now_micros,
            timeouts,
            down_since: RwLock::new(HashMap::new()),
            followups: tx,
            ballots: std::sync::Mutex::new(BallotClock::new(proposer_id(local))),
            batch_sequence: AtomicU32::new(0),
            failpoints: AtomicU32::new(0),
            read_repairs: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("write-followup".into())
            .spawn(move || {
                // Deadlines come in order: each job is waited for in turn.
                while let Ok(job) = rx.recv() {
                    let Some(shared) = weak.upgrade() else { return };
                    shared.finish_followup(job);
                }
            })?;
        Ok(shared)
    }

    /// The next Paxos ballot of this coordinator (above `above`).
    fn next_ballot(&self, above: Option<Ballot>) -> Ballot {
        let now = (self.now_micros)();
        self.ballots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next(now, above)
    }

    /// Arms the failpoint `name` (one of `FAILPOINTS`).
    pub fn arm_failpoint(&self, name: &str) -> Result<(), UnknownFailpoint> {
        let Some(i) = FAILPOINTS.iter().position(|f| *f == name) else {
            return Err(UnknownFailpoint {
                name: name.to_string(),
            });
        };
        self.failpoints.fetch_or(1 << i, Ordering::Relaxed);
        Ok(())
    }

    fn failpoint_armed(&self, name: &str) -> bool {
        FAILPOINTS
            .iter()
            .position(|f| *f == name)
            .is_some_and(|i| self.failpoints.load(Ordering::Relaxed) & (1 << i) != 0)
    }

    /// What this node's replica reads answer to.
    pub fn read_limits(&self) -> ReadLimits {
        ReadLimits::new(&self.tombstones, &self.read_thresholds)
    }

    pub fn topology(&self) -> Arc<Topology> {
        self.topology
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Installs the next topology, noting when nodes were first seen down
    /// (the hint window counts from then).
    pub fn set_topology(&self, next: Topology) {
        let now = (self.now_micros)();
        if let Ok(mut down) = self.down_since.write() {
            for (address, view) in &next.nodes {
                if view.alive {
                    down.remove(address);
                } else {
                    down.entry(*address).or_insert(now);
                }
            }
        }
        *self.topology.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
    }

    /// Keeps `mutations` for `endpoint` until it is back (unless it has
    /// been down longer than the hint window).
    pub fn hint(&self, topology: &Topology, endpoint: IpAddr, mutations: &[Mutation]) {
        let Some(host) = topology.host_id(endpoint) else {
            return;
        };
        let now = (self.now_micros)();
        let down_for = self
            .down_since
            .read()
            .ok()
            .and_then(|d| d.get(&endpoint).copied())
            .map(|since| Duration::from_micros(now.saturating_sub(since).max(0) as u64))
            .unwrap_or_default();
        if !self.hints.accepts(down_for) {
            return;
        }
        if let Err(e) = self.hints.store(host, now, mutations) {
            tracing::warn!("cannot store a hint for {endpoint}: {e}");
        }
    }

    /// Hands a write's slower replicas to the follow-up thread, after
    /// settling the answers already in: with a transport that answers at
    /// once (the simulation) nothing is left to the thread's timing.
    fn follow_up(&self, mut job: Followup) {
        while let Some(reply) = job.replies.ready() {
            self.settle_followup(&mut job, reply);
        }
        if !job.outstanding.is_empty() {
            // A full queue: these replicas get no hint if they never answer
            // (repair fixes them).
            let _ = self.followups.try_send(job);
        }
    }

    /// An answer to a followed-up write: a replica that failed gets a hint.
    fn settle_followup(&self, job: &mut Followup, (endpoint, result): Reply) {
        let mutations = job.outstanding.remove(&endpoint);
        if let (Some(m), false) = (mutations, matches!(result, Ok(Response::Ack))) {
            self.hint(&self.topology(), endpoint, &m);
        }
    }

    fn finish_followup(&self, mut job: Followup) {
        while !job.outstanding.is_empty() {
            let Some(reply) = job.replies.next() else {
                break;
            };
            self.settle_followup(&mut job, reply);
        }
        let topology = self.topology();
        for (endpoint, mutations) in job.outstanding {
            self.hint(&topology, endpoint, &mutations);
        }
    }

    /// Runs `request` here (a local replica) or sends it; local answers go
    /// to the same channel.
    pub(crate) fn dispatch(
        &self,
        endpoint: IpAddr,
        request: Request,
        reply: &std::sync::mpsc::Sender<Reply>,
    ) {
        if endpoint == self.local {
            let vectors = self.vectors.as_ref();
            let thresholds = self.tombstones.get();
            let response = crate::vector_search::serve(vectors, &self.engine, thresholds, request)
                .or_else(|request| replica::serve(&*self.engine, self.read_limits(), request))
                .unwrap_or_else(|_| {
                    Response::Error(RemoteError::Invalid("not a data request".into()))
                });
            let _ = reply.send((endpoint, Ok(response)));
        } else {
            self.messaging.send(endpoint, request, reply.clone());
        }
    }
}

impl Shared {
    /// Sends the same request to every target, remote ones first so they
    /// run while the local one does; their answers, awaited for `timeout`.
    fn ask_all(
        &self,
        targets: &[IpAddr],
        timeout: Duration,
        request: impl Fn() -> Request,
    ) -> Replies {
        let (tx, rx) = std::sync::mpsc::channel::<Reply>();
        self.send_all(targets, request, &tx);
        Replies::within(rx, timeout)
    }

    /// `ask_all` with the caller's channel (to ask more later on it).
    fn send_all(
        &self,
        targets: &[IpAddr],
        request: impl Fn() -> Request,
        reply: &std::sync::mpsc::Sender<Reply>,
    ) {
        let mut order = targets.to_vec();
        order.sort_by_key(|e| *e == self.local);
        for e in order {
            self.dispatch(e, request(), reply);
        }
    }
}

pub struct Coordinator {
    shared: Arc<Shared>,
}

impl Coordinator {
    pub fn new(shared: Arc<Shared>) -> Coordinator {
        Coordinator { shared }
    }
}

/// The mutations at `indexes`, copied for one replica.
fn pick(mutations: &[Mutation], indexes: &[usize]) -> Vec<Mutation> {
    indexes.iter().map(|i| mutations[*i].clone()).collect()
}

/// The WriteTimeout of a write some replica sets did not acknowledge: the
/// figures of the one furthest from its level.
/// The acknowledgements received and needed by the mutation furthest
/// from its consistency level.
fn shortfall(tracks: &[WriteTrack]) -> (usize, usize) {
    tracks
        .iter()
        .filter(|t| !t.done())
        .min_by_key(|t| t.acked.len())
        .map(|t| (t.acked.len(), t.requirement.block_for()))
        .unwrap_or((0, 1))
}

fn write_timeout(tracks: &[WriteTrack], options: &WriteOptions) -> QueryError {
    let (received, block_for) = shortfall(tracks);
    QueryError::WriteTimeout {
        consistency: options.consistency,
        received,
        block_for,
        write_type: options.write_type.clone(),
    }
}

/// WRITE_FAILURE for a write whose `failed` replicas leave a mutation
/// short of its consistency level.
fn write_failure(
    tracks: &[WriteTrack],
    options: &WriteOptions,
    failed: Vec<(IpAddr, u16)>,
) -> QueryError {
    QueryError::write_failure(
        options.consistency,
        shortfall(tracks),
        failed,
        options.write_type.clone(),
    )
}

/// Err(Unavailable) unless the `live` replicas satisfy `requirement`;
/// returns them with their data centers.
pub(crate) fn check_live(
    topology: &Topology,
    requirement: &Requirement,
    cl: Consistency,
    live: &[IpAddr],
) -> Result<Vec<(IpAddr, String)>, QueryError> {
    let with_dcs = topology.with_dcs(live);
    let refs: Vec<(IpAddr, &str)> = with_dcs.iter().map(|(e, d)| (*e, d.as_str())).collect();
    requirement
        .check_available(cl, &refs)
        .map_err(consistency_error)?;
    Ok(with_dcs)
}

pub(crate) fn keyspace_strategy(schema: &Schema, keyspace: &str) -> Strategy {
    schema
        .keyspace(keyspace)
        .map(|k| Strategy::from_replication(&k.replication))
        .unwrap_or(Strategy::Local)
}

struct WriteTrack {
    requirement: Requirement,
    acked: Vec<String>,
}

impl WriteTrack {
    fn done(&self) -> bool {
        let dcs: Vec<&str> = self.acked.iter().map(String::as_str).collect();
        self.requirement.is_satisfied(&dcs)
    }
}

/// Where a write's mutations go and what each needs (one topology
/// snapshot for the whole write).
struct WritePlan {
    topology: Arc<Topology>,
    tracks: Vec<WriteTrack>,
    per_endpoint: BTreeMap<IpAddr, Vec<usize>>,
    down: Vec<(IpAddr, usize)>,
}

/// Partitions a batch spans (mutations of several tables of one keyspace
/// and partition count once, as Cassandra's per-keyspace mutations).
fn partitions_spanned(schema: &Schema, mutations: &[Mutation]) -> usize {
    let mut keys: Vec<(&str, &[u8])> = mutations
        .iter()
        .map(|m| {
            let keyspace = schema
                .keyspace_by_storage_id(m.table)
                .map(|k| k.name.as_str())
                .unwrap_or_default();
            (keyspace, m.partition.key.as_slice())
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

impl Coordinator {
    /// Places each mutation and checks its replicas are alive enough
    /// (Unavailable before anything is sent).
    fn plan_write(
        topology: Arc<Topology>,
        schema: &Schema,
        mutations: &[Mutation],
        cl: Consistency,
    ) -> Result<WritePlan, QueryError> {
        let mut tracks = Vec::with_capacity(mutations.len());
        let mut per_endpoint: BTreeMap<IpAddr, Vec<usize>> = BTreeMap::new();
        let mut down: Vec<(IpAddr, usize)> = Vec::new();
        for (i, m) in mutations.iter().enumerate() {
            let Some(keyspace) = schema.keyspace_by_storage_id(m.table) else {
                return Err(QueryError::invalid("unknown table"));
            };
            let strategy = Strategy::from_replication(&keyspace.replication);
            let natural = topology.replicas(&strategy, m.partition.token);
            let pending = topology.pending(&strategy, m.partition.token);
            let pending_dcs: Vec<String> = topology
                .with_dcs(&pending)
                .into_iter()
                .map(|(_, dc)| dc)
                .collect();
            let pending_refs: Vec<&str> = pending_dcs.iter().map(String::as_str).collect();
            // Pending replicas raise the bar (Cassandra's block-for).
            let requirement = requirement(cl, Operation::Write, &strategy, &topology.local_dc)
                .map_err(consistency_error)?
                .with_pending(cl, &pending_refs);
            let live: Vec<IpAddr> = natural
                .iter()
                .chain(pending.iter())
                .copied()
                .filter(|e| topology.is_alive(*e))
                .collect();
            if cl != Consistency::Any {
                check_live(&topology, &requirement, cl, &live)?;
            }
            for e in natural.iter().chain(pending.iter()) {
                if topology.is_alive(*e) {
                    per_endpoint.entry(*e).or_default().push(i);
                } else {
                    down.push((*e, i));
                }
            }
            tracks.push(WriteTrack {
                requirement,
                acked: Vec::new(),
            });
        }
        Ok(WritePlan {
            topology,
            tracks,
            per_endpoint,
            down,
        })
    }

    /// Applies the mutations as planned; returns once each has enough
    /// acknowledgements, hinting the replicas that are down or silent.
    fn execute_write(
        &self,
        plan: WritePlan,
        mutations: Vec<Mutation>,
        options: &WriteOptions,
    ) -> Result<(), QueryError> {
        let shared = &self.shared;
        let WritePlan {
            topology,
            mut tracks,
            per_endpoint,
            down,
        } = plan;
        let cl = options.consistency;
        let dc = |e: IpAddr| topology.dc_of(e).unwrap_or_default();
        for (e, i) in &down {
            shared.hint(&topology, *e, std::slice::from_ref(&mutations[*i]));
            if cl == Consistency::Any {
                tracks[*i].acked.push(dc(*e));
            }
        }
        let (tx, rx) = std::sync::mpsc::channel::<Reply>();
        let mut outstanding = self.send_remote(&per_endpoint, &mutations, options.now, &tx);
        // Replicas that failed the write (their storage: an IO error, a
        // full disk), each with Cassandra's reason code (UNKNOWN).
        let mut failed: Vec<(IpAddr, u16)> = Vec::new();
        if let Some(indexes) = per_endpoint.get(&shared.local) {
            match shared.engine.write(&pick(&mutations, indexes), options.now) {
                Ok(()) => {
                    for i in indexes {
                        tracks[*i].acked.push(topology.local_dc.clone());
                    }
                }
                // The storage logs its failure, once, not per write.
                Err(e) if e.is_storage_failure() => failed.push((shared.local, UNKNOWN_FAILURE)),
                Err(e) => return Err(e.into()),
            }
        }
        let replies = Replies::within(rx, self.shared.timeouts.write);
        let mut failure: Option<QueryError> = None;
        while !tracks.iter().all(WriteTrack::done) && !outstanding.is_empty() {
            let Some((e, result)) = replies.next() else {
                break;
            };
            let indexes = outstanding.remove(&e).unwrap_or_default();
            if matches!(result, Ok(Response::Ack)) {
                for i in indexes {
                    tracks[i].acked.push(dc(e));
                }
                continue;
            }
            shared.hint(&topology, e, &pick(&mutations, &indexes));
            match &result {
                Ok(Response::Error(RemoteError::Failed(_))) => failed.push((e, UNKNOWN_FAILURE)),
                Ok(Response::Error(err)) => {
                    failure.get_or_insert(remote_error(e, err));
                }
                _ => {}
            }
        }
        if !tracks.iter().all(WriteTrack::done) {
            for (e, indexes) in &outstanding {
                shared.hint(&topology, *e, &pick(&mutations, indexes));
            }
            if !outstanding.is_empty() {
                return Err(write_timeout(&tracks, options));
            }
            // Every replica answered and some failed: WRITE_FAILURE when
            // replicas failed, as in Cassandra, else the refusal.
            return Err(match failure {
                Some(e) if failed.is_empty() => e,
                _ => write_failure(&tracks, options, failed),
            });
        }
        if !outstanding.is_empty() {
            let outstanding = outstanding
                .into_iter()
                .map(|(e, indexes)| (e, pick(&mutations, &indexes)))
                .collect();
            let job = Followup {
                replies,
                outstanding,
            };
            shared.follow_up(job);
        }
        Ok(())
    }

    /// Sends each remote replica its mutations; returns who owes a reply,
    /// and for which mutations.
    fn send_remote(
        &self,
        per_endpoint: &BTreeMap<IpAddr, Vec<usize>>,
        mutations: &[Mutation],
        now: LocalTime,
        tx: &std::sync::mpsc::Sender<Reply>,
    ) -> HashMap<IpAddr, Vec<usize>> {
        let mut outstanding = HashMap::new();
        for (e, indexes) in per_endpoint {
            if *e == self.shared.local {
                continue;
            }
            let request = Request::Mutate {
                mutations: pick(mutations, indexes),
                now,
            };
            self.shared.messaging.send(*e, request, tx.clone());
            outstanding.insert(*e, indexes.clone());
        }
        outstanding
    }

    /// A write without the batchlog (also how stored batches are replayed).
    pub(crate) fn write_unlogged(
        &self,
        schema: &Schema,
        mutations: Vec<Mutation>,
        options: &WriteOptions,
    ) -> Result<(), QueryError> {
        let topology = self.shared.topology();
        let plan = Self::plan_write(topology, schema, &mutations, options.consistency)?;
        self.execute_write(plan, mutations, options)
    }

    /// A logged batch: stored on the batchlog nodes first, applied, then
    /// removed from them (`batchlog`).
    fn write_logged(
        &self,
        schema: &Schema,
        mutations: Vec<Mutation>,
        options: &WriteOptions,
    ) -> Result<(), QueryError> {
        let shared = &self.shared;
        let topology = shared.topology();
        let written_at_micros = (shared.now_micros)();
        let sequence = shared.batch_sequence.fetch_add(1, Ordering::Relaxed);
        // As Cassandra: the batchlog's own availability first, then the
        // mutations'.
        let mut holders = batchlog_holders(&topology, sequence);
        if holders.is_empty() {
            if options.consistency != Consistency::Any {
                // Cassandra asks TWO of the (no) chosen batchlog nodes.
                return Err(QueryError::Unavailable {
                    consistency: Consistency::Two,
                    required: 2,
                    alive: 0,
                });
            }
            holders = vec![shared.local];
        }
        let plan = Self::plan_write(topology, schema, &mutations, options.consistency)?;
        let id = batchlog::batch_id(written_at_micros, shared.local, sequence);
        let entry = BatchEntry {
            written_at_micros,
            now: options.now,
            mutations: mutations.clone(),
        };
        let timeout = shared.timeouts.write;
        let replies = shared.ask_all(&holders, timeout, || Request::BatchStore {
            id,
            entry: entry.clone(),
        });
        let mut stored = 0;
        for (e, result) in replies.wait() {
            match result {
                Ok(Response::Ack) => stored += 1,
                Ok(Response::Error(err)) => return Err(remote_error(e, &err)),
                _ => break,
            }
            if stored == holders.len() {
                break;
            }
        }
        if stored < holders.len() {
            return Err(QueryError::WriteTimeout {
                consistency: if holders.len() == 1 {
                    Consistency::One
                } else {
                    Consistency::Two
                },
                received: stored,
                block_for: holders.len(),
                write_type: WriteType::BatchLog,
            });
        }
        if shared.failpoint_armed(CRASH_AFTER_BATCHLOG) {
            tracing::error!("failpoint {CRASH_AFTER_BATCHLOG}: aborting with batch stored");
            std::process::abort();
        }
        self.execute_write(plan, mutations, options)?;
        // Applied as asked: the holders may forget it (not waited for; a
        // lost removal only makes a harmless replay).
        let _ = shared.ask_all(&holders, timeout, || Request::BatchRemove {
            id,
            written_at_micros,
            now: options.now,
        });
        Ok(())
    }
}

/// The live nodes of the coordinator's data center that keep its next
/// logged batch (`batchlog::endpoints`); `seed` varies the choice.
fn batchlog_holders(topology: &Topology, seed: u32) -> Vec<IpAddr> {
    let local_rack = topology
        .nodes
        .get(&topology.local)
        .map(|v| v.member.rack.clone())
        .unwrap_or_default();
    let candidates: Vec<Candidate> = topology
        .nodes
        .values()
        .filter(|v| v.member.dc == topology.local_dc && v.member.status == MemberStatus::Normal)
        .map(|v| Candidate {
            address: v.member.address,
            rack: v.member.rack.clone(),
            alive: topology.is_alive(v.member.address),
        })
        .collect();
    let mut state = u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut pick = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    batchlog::endpoints(topology.local, &local_rack, &candidates, &mut pick)
}

impl DataProxy for Coordinator {
    /// Every replica of each mutation, natural and pending, up or down, as
    /// Cassandra's `validateDiskUsage` asks them.
    fn replicas_disk_usage(&self, schema: &Schema, mutations: &[Mutation]) -> DiskUsage {
        let topology = self.shared.topology();
        let mut worst = DiskUsage::NotAvailable;
        for m in mutations {
            let Some(keyspace) = schema.keyspace_by_storage_id(m.table) else {
                continue;
            };
            let strategy = Strategy::from_replication(&keyspace.replication);
            let replicas = topology.replicas(&strategy, m.partition.token);
            let pending = topology.pending(&strategy, m.partition.token);
            for e in replicas.iter().chain(pending.iter()) {
                if let Some(view) = topology.nodes.get(e) {
                    worst = worst.max(view.disk_usage);
                }
            }
        }
        worst
    }

    /// Other coordinators update the same counters: each partition's
    /// updates run as one compare-and-set.
    fn counter_writes(&self) -> rocksandra_query::proxy::CounterWrites {
        rocksandra_query::proxy::CounterWrites::PartitionCas
    }

    fn truncate(
        &self,
        keyspace: &str,
        table: &str,
        here: &dyn Fn() -> Result<(), QueryError>,
    ) -> Result<(), QueryError> {
        let others = crate::truncate::targets(&self.shared.topology())?;
        let timeout = self.shared.timeouts.truncate;
        let replies = self.shared.ask_all(&others, timeout, || Request::Truncate {
            keyspace: keyspace.to_string(),
            table: table.to_string(),
        });
        here()?;
        crate::truncate::await_answers(&replies, others.len())
    }

    fn write(
        &self,
        schema: &Schema,
        mutations: Vec<Mutation>,
        options: &WriteOptions,
    ) -> Result<(), QueryError> {
        if options.write_type == WriteType::Batch && partitions_spanned(schema, &mutations) > 1 {
            self.write_logged(schema, mutations, options)
        } else {
            self.write_unlogged(schema, mutations, options)
        }
    }

    fn read_partition(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        cl: Consistency,
        now: LocalTime,
    ) -> Result<Partition, QueryError> {
        Ok(self.read_partition_counted(schema, table, read, cl, now)?.0)
    }

    /// The tombstones this node's own replica read met, the statement's to
    /// check against the thresholds (it alone answering, or among the
    /// replicas asked); 0 when only other nodes were asked: each replica
    /// checks its own read (`replica.rs`), and as in Cassandra only the
    /// coordinator's read warns the client.
    fn read_partition_counted(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        cl: Consistency,
        now: LocalTime,
    ) -> Result<(Partition, ReadMet), QueryError> {
        if matches!(cl, Consistency::Serial | Consistency::LocalSerial) {
            return Ok((
                self.read_serial(schema, table, read, cl, now)?,
                ReadMet::default(),
            ));
        }
        let (topology, plan) = self.plan_read(schema, table, read, cl)?;
        if plan.is_local(self.shared.local) {
            let stop_past = self.shared.tombstones.get().failure;
            let (partition, tombstones) = self
                .shared
                .engine
                .read_partition_counted(read, now, stop_past)?;
            let mut book = self.report_book();
            let counts = failure_counts(cl, 0, 1);
            let met = (std::slice::from_ref(&partition), tombstones);
            book.own_read(self.shared.local, met, counts)?;
            return Ok((partition, book.met(tombstones)));
        }
        self.read_with_digests(&topology, table, read, cl, now, &plan)
    }

    fn read_raw(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        cl: Consistency,
        now: LocalTime,
    ) -> Result<RawPartition, QueryError> {
        let (_, plan) = self.plan_read(schema, table, read, cl)?;
        if plan.is_local(self.shared.local) {
            // As this node's replica serves it: counted, and refused past
            // the failure threshold.
            let thresholds = self.shared.tombstones.get();
            let (raw, tombstones) =
                self.shared
                    .engine
                    .read_raw_counted(read, now, thresholds.failure)?;
            let query = replica::ReadQuery::Partition(read);
            replica::judge(thresholds, tombstones, raw.live_rows, query)
                .map_err(|e| read_error(self.shared.local, &e, cl, (0, 1)))?;
            return Ok(raw);
        }
        let (asked, spares) = plan
            .candidates
            .split_at(plan.block_for.min(plan.candidates.len()));
        let asked: Vec<(IpAddr, [u8; 16])> = asked.iter().map(|e| (*e, [0; 16])).collect();
        let raws = self.read_raws(read, cl, now, &asked, spares, plan.block_for)?;
        if let [(_, raw)] = raws.as_slice() {
            return Ok(raw.clone());
        }
        let merged = merged_engine(table, now)?;
        for (_, raw) in &raws {
            merged.write(std::slice::from_ref(&raw.data), now)?;
        }
        Ok(merged.read_raw(read, now)?)
    }

    fn scan(
        &self,
        schema: &Schema,
        table: &Table,
        scan: &RangeScan,
        cl: Consistency,
        now: LocalTime,
    ) -> Result<ScanPage, QueryError> {
        Ok(self.scan_counted(schema, table, scan, cl, now)?.0)
    }

    /// The tombstones counted are the most this node's replica met for one
    /// request (each piece's replicas checked their own thresholds;
    /// `read_partition_counted`).
    fn scan_counted(
        &self,
        schema: &Schema,
        table: &Table,
        scan: &RangeScan,
        cl: Consistency,
        now: LocalTime,
    ) -> Result<(ScanPage, ReadMet), QueryError> {
        let topology = self.shared.topology();
        let strategy = keyspace_strategy(schema, &table.keyspace);
        let requirement = requirement(cl, Operation::Read, &strategy, &topology.local_dc)
            .map_err(consistency_error)?;
        let pieces = scan_pieces(&topology, &strategy, scan);
        let mut page = ScanPage {
            partitions: Vec::new(),
            next: None,
        };
        let mut returned = 0usize;
        let mut tombstones = ReadMet::default();
        let mut resume = scan.resume_after.clone();
        let mut i = 0;
        while i < pieces.len() {
            // Neighbouring pieces with the same replicas are one request.
            let (start, mut end, replicas) = pieces[i].clone();
            let mut j = i + 1;
            while j < pieces.len() && pieces[j].2 == replicas {
                end = pieces[j].1;
                j += 1;
            }
            i = j;
            let live = topology.live_by_proximity(&replicas);
            let with_dcs = check_live(&topology, &requirement, cl, &live)?;
            let candidates: Vec<IpAddr> = with_dcs
                .iter()
                .filter(|(_, d)| requirement.counts(d))
                .map(|(e, _)| *e)
                .collect();
            let limit = if scan.row_limit == 0 {
                0
            } else {
                scan.row_limit - returned
            };
            let sub = RangeScan {
                token_start: start,
                token_end: end,
                resume_after: resume.take(),
                row_limit: limit,
                ..scan.clone()
            };
            let (part, met) = self.scan_piece(
                &topology,
                table,
                &sub,
                cl,
                now,
                &candidates[..requirement.block_for().min(candidates.len())],
            )?;
            tombstones.tombstones = tombstones.tombstones.max(met.tombstones);
            tombstones.reports.merge(&met.reports);
            returned += part
                .partitions
                .iter()
                .map(|p| p.rows.len().max(1))
                .sum::<usize>();
            page.partitions.extend(part.partitions);
            if part.next.is_some() {
                page.next = part.next;
                return Ok((page, tombstones));
            }
            if scan.row_limit > 0 && returned >= scan.row_limit {
                break;
            }
        }
        Ok((page, tombstones))
    }

    /// One replica per token range answers from its graph
    /// (`vector_search`).
    fn ann_top(
        &self,
        schema: &Schema,
        table: &Table,
        query: &AnnQuery,
        cl: Consistency,
        now: LocalTime,
    ) -> Result<Option<Vec<Partition>>, QueryError> {
        crate::vector_search::ann_top(&self.shared, (schema, table), query, cl, now)
    }

    fn cas(
        &self,
        schema: &Schema,
        table: &Table,
        partition: &PartitionKey,
        options: &CasOptions,
        decide: &mut CasDecide<'_>,
    ) -> Result<(), QueryError> {
        let strategy = keyspace_strategy(schema, &table.keyspace);
        crate::consistency::validate_cas_commit(options.commit, &strategy)
            .map_err(consistency_error)?;
        let (topology, plan) = self.paxos_plan(
            schema,
            table,
            partition,
            options.serial,
            options.now,
            options.write_type.clone(),
        )?;
        // The commit's consistency must be reachable before anything is
        // proposed.
        if options.commit != Consistency::Any {
            let pending_refs: Vec<&str> = plan.pending_dcs.iter().map(String::as_str).collect();
            let commit_requirement = requirement(
                options.commit,
                Operation::Write,
                &strategy,
                &topology.local_dc,
            )
            .map_err(consistency_error)?
            .with_pending(options.commit, &pending_refs);
            let live: Vec<IpAddr> = plan
                .replicas
                .iter()
                .copied()
                .filter(|e| topology.is_alive(*e))
                .collect();
            check_live(&topology, &commit_requirement, options.commit, &live)?;
        }
        let commit_write_type = match options.write_type {
            WriteType::Cas => WriteType::Simple,
            ref other => other.clone(),
        };
        self.run_paxos(&topology, &plan, options.commit, commit_write_type, decide)
    }
}

/// The replicas a single-partition read contacts, closest first.
struct ReadPlan {
    candidates: Vec<IpAddr>,
    block_for: usize,
}

impl ReadPlan {
    /// One answer is enough and this node gives it: no messages.
    fn is_local(&self, local: IpAddr) -> bool {
        self.block_for == 1 && self.candidates.first() == Some(&local)
    }

    fn new(
        topology: &Topology,
        strategy: &Strategy,
        token: Token,
        cl: Consistency,
    ) -> Result<ReadPlan, QueryError> {
        let requirement = requirement(cl, Operation::Read, strategy, &topology.local_dc)
            .map_err(consistency_error)?;
        let live = topology.live_replicas_by_proximity(strategy, token);
        let with_dcs = check_live(topology, &requirement, cl, &live)?;
        let candidates = match &requirement {
            // EACH_QUORUM: the first replicas of each dc in turn.
            Requirement::EachDc { counts } => {
                let mut chosen = Vec::new();
                for (dc, n) in counts {
                    chosen.extend(
                        with_dcs
                            .iter()
                            .filter(|(_, d)| d == dc)
                            .take(*n)
                            .map(|(e, _)| *e),
                    );
                }
                let extra: Vec<IpAddr> = with_dcs
                    .iter()
                    .map(|(e, _)| *e)
                    .filter(|e| !chosen.contains(e))
                    .collect();
                chosen.extend(extra);
                chosen
            }
            _ => with_dcs
                .iter()
                .filter(|(_, d)| requirement.counts(d))
                .map(|(e, _)| *e)
                .collect(),
        };
        Ok(ReadPlan {
            candidates,
            block_for: requirement.block_for(),
        })
    }
}

/// One read with digests in flight: who was asked, and what came back.
struct DigestRound<'a> {
    plan: &'a ReadPlan,
    /// How many candidates have been asked.
    asked: usize,
    speculated: bool,
    data: Option<(IpAddr, Partition)>,
    digests: Vec<(IpAddr, [u8; 16])>,
    data_asked_of: IpAddr,
    failed: usize,
    /// This node: only its own replica's tombstones reach the client.
    local: IpAddr,
    /// The tombstones this node's replica met, if it was asked (Cassandra
    /// with its default `read_thresholds_enabled: false` warns the client
    /// of the coordinator's own read only; other replicas just log).
    tombstones: u64,
    /// With `read_thresholds_enabled`, every replica's report.
    book: ReportBook,
}

impl<'a> DigestRound<'a> {
    /// The first requests: one for data, digests from the others the level
    /// needs, remote requests first so they run while local ones do.
    fn start(plan: &'a ReadPlan, local: IpAddr) -> (Self, Vec<(IpAddr, bool)>) {
        let mut order: Vec<(IpAddr, bool)> = plan.candidates[..plan.block_for]
            .iter()
            .enumerate()
            .map(|(i, e)| (*e, i != 0))
            .collect();
        order.sort_by_key(|(e, _)| *e == local);
        let round = DigestRound {
            plan,
            asked: order.len(),
            speculated: false,
            data: None,
            digests: Vec::new(),
            data_asked_of: plan.candidates[0],
            failed: 0,
            local,
            tombstones: 0,
            book: ReportBook::default(),
        };
        (round, order)
    }

    fn received(&self) -> usize {
        self.digests.len() + usize::from(self.data.is_some())
    }

    fn done(&self) -> bool {
        self.data.is_some() && self.digests.len() + 1 >= self.plan.block_for
    }

    /// Everyone asked has answered and there is no one left to ask (a
    /// failure asks the next candidate): waiting cannot help.
    fn exhausted(&self) -> bool {
        self.received() + self.failed >= self.asked
    }

    fn can_speculate(&self) -> bool {
        !self.speculated && self.asked < self.plan.candidates.len()
    }

    fn next_candidate(&mut self) -> Option<IpAddr> {
        let extra = *self.plan.candidates.get(self.asked)?;
        self.asked += 1;
        Some(extra)
    }

    /// Takes one reply; returns the request to send next, if any (a failed
    /// replica is replaced by the next candidate, for data if it owed data;
    /// a replica that met too many tombstones fails the read, as the
    /// others hold the same tombstones).
    fn on_reply(
        &mut self,
        reply: Reply,
        consistency: Consistency,
    ) -> Result<Option<(IpAddr, bool)>, QueryError> {
        match reply {
            (
                e,
                Ok(Response::Data {
                    partition,
                    tombstones,
                    bytes,
                }),
            ) => {
                self.met(e, tombstones, bytes);
                match self.data {
                    None => self.data = Some((e, partition)),
                    Some(_) => self.digests.push((e, digest(&partition))),
                }
            }
            (
                e,
                Ok(Response::Digest {
                    digest,
                    tombstones,
                    bytes,
                }),
            ) => {
                self.met(e, tombstones, bytes);
                self.digests.push((e, digest));
            }
            (
                e,
                Ok(Response::Error(
                    err
                    @ (RemoteError::TooManyTombstones { .. } | RemoteError::ReadTooLarge { .. }),
                )),
            ) => {
                let needed = (self.received(), self.plan.block_for);
                let counts = failure_counts(consistency, needed.0, needed.1);
                if let Some(aborted) = self.book.refused(e, &err, counts) {
                    return Err(aborted);
                }
                return Err(read_error(e, &err, consistency, needed));
            }
            (e, other) => {
                self.failed += 1;
                let Some(extra) = self.next_candidate() else {
                    return match &other {
                        Ok(Response::Error(err)) => Err(remote_error(e, err)),
                        _ => Ok(None),
                    };
                };
                let wants_data = e == self.data_asked_of;
                if wants_data {
                    self.data_asked_of = extra;
                }
                return Ok(Some((extra, !wants_data)));
            }
        }
        Ok(None)
    }

    fn met(&mut self, replica: IpAddr, tombstones: u64, bytes: u64) {
        if replica == self.local {
            self.tombstones = tombstones;
        }
        self.book.answered(replica, tombstones, bytes);
    }

    /// Speculative retry: one more replica, for data if the data is late.
    fn speculate(&mut self) -> Option<(IpAddr, bool)> {
        self.speculated = true;
        let extra = self.next_candidate()?;
        Some((extra, self.data.is_some()))
    }

    fn timeout(&self, consistency: Consistency) -> QueryError {
        QueryError::ReadTimeout {
            consistency,
            received: self.received(),
            block_for: self.plan.block_for,
            data_present: self.data.is_some(),
        }
    }
}

impl Coordinator {
    fn read_with_digests(
        &self,
        topology: &Topology,
        table: &Table,
        read: &PartitionRead,
        cl: Consistency,
        now: LocalTime,
        plan: &ReadPlan,
    ) -> Result<(Partition, ReadMet), QueryError> {
        let shared = &self.shared;
        let (tx, rx) = std::sync::mpsc::channel::<Reply>();
        let ask = |(e, digest_only): (IpAddr, bool)| {
            let request = Request::Read {
                read: read.clone(),
                now,
                digest: digest_only,
            };
            shared.dispatch(e, request, &tx)
        };
        let (mut round, first) = DigestRound::start(plan, shared.local);
        round.book = self.report_book();
        first.into_iter().for_each(ask);
        let started = Instant::now();
        let replies = Replies::within(rx, shared.timeouts.read);
        while !round.done() {
            if round.exhausted() {
                return Err(round.timeout(cl));
            }
            let speculate_at = if round.can_speculate() {
                started + SPECULATIVE_RETRY_AFTER
            } else {
                replies.deadline()
            };
            match replies.next_by(speculate_at) {
                Some(reply) => round.on_reply(reply, cl)?.into_iter().for_each(ask),
                None if !replies.expired() && !round.speculated => {
                    round.speculate().into_iter().for_each(ask)
                }
                None => return Err(round.timeout(cl)),
            }
        }
        let Some((data_from, data)) = round.data else {
            return Err(QueryError::Server("read finished without data".into()));
        };
        let tombstones = ReadMet {
            tombstones: round.tombstones,
            reports: std::mem::take(&mut round.book).met(0).reports,
        };
        let expected = digest(&data);
        if round.digests.iter().all(|(_, d)| *d == expected) {
            return Ok((data, tombstones));
        }
        // Mismatch: reconcile everyone who answered, repair who differs.
        let mut answered = round.digests;
        answered.push((data_from, expected));
        let spares: Vec<IpAddr> = plan
            .candidates
            .iter()
            .copied()
            .filter(|c| !answered.iter().any(|(e, _)| e == c))
            .collect();
        let partition = self.reconcile(
            topology,
            table,
            read,
            cl,
            now,
            &answered,
            &spares,
            plan.block_for,
        )?;
        Ok((partition, tombstones))
    }

    /// The reports of one read (`read_reports`), kept only with
    /// `read_thresholds_enabled`.
    fn report_book(&self) -> ReportBook {
        ReportBook::new(&self.shared.read_thresholds, &self.shared.tombstones)
    }

    /// Which replicas a read of one partition asks, and how many must answer.
    fn plan_read(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        cl: Consistency,
    ) -> Result<(Arc<Topology>, ReadPlan), QueryError> {
        let topology = self.shared.topology();
        let strategy = keyspace_strategy(schema, &table.keyspace);
        let plan = ReadPlan::new(&topology, &strategy, read.partition.token, cl)?;
        Ok((topology, plan))
    }

    /// Reads the stored state of every replica in `answered` (a replica
    /// that fails meanwhile is replaced by one of `spares`; at least `need`
    /// must answer), merges it and repairs the replicas whose digest differs
    /// from the merged answer (and the spares that stood in).
    #[allow(clippy::too_many_arguments)]
    fn reconcile(
        &self,
        topology: &Topology,
        table: &Table,
        read: &PartitionRead,
        cl: Consistency,
        now: LocalTime,
        answered: &[(IpAddr, [u8; 16])],
        spares: &[IpAddr],
        need: usize,
    ) -> Result<Partition, QueryError> {
        let raws = self.read_raws(read, cl, now, answered, spares, need)?;
        let merged = merged_engine(table, now)?;
        let mut union: Vec<Mutation> = Vec::new();
        for (_, raw) in &raws {
            merged.write(std::slice::from_ref(&raw.data), now)?;
            union.push(raw.data.clone());
        }
        let result = merged.read_partition(read, now)?;
        // Short read protection: a replica that stopped at the limit may
        // hold more rows the others' tombstones do not cover.
        let short = read.row_limit > 0
            && result.rows.len() < read.row_limit
            && raws.iter().any(|(_, r)| r.limit_reached);
        let result = if short {
            let unlimited = PartitionRead {
                row_limit: 0,
                ..read.clone()
            };
            let raws = self.read_raws(&unlimited, cl, now, answered, spares, need)?;
            union.clear();
            for (_, raw) in &raws {
                merged.write(std::slice::from_ref(&raw.data), now)?;
                union.push(raw.data.clone());
            }
            merged.read_partition(read, now)?
        } else {
            result
        };
        let good = digest(&result);
        let stood_in = spares
            .iter()
            .copied()
            .filter(|s| raws.iter().any(|(e, _)| e == s));
        let stale: Vec<IpAddr> = answered
            .iter()
            .filter(|(_, d)| *d != good)
            .map(|(e, _)| *e)
            .chain(stood_in)
            .collect();
        self.repair(topology, &stale, union, cl, now)?;
        Ok(result)
    }

    fn read_raws(
        &self,
        read: &PartitionRead,
        cl: Consistency,
        now: LocalTime,
        from: &[(IpAddr, [u8; 16])],
        spares: &[IpAddr],
        need: usize,
    ) -> Result<Vec<(IpAddr, RawPartition)>, QueryError> {
        let order: Vec<IpAddr> = from.iter().map(|(e, _)| *e).collect();
        let (tx, rx) = std::sync::mpsc::channel::<Reply>();
        let request = || Request::ReadRaw {
            read: read.clone(),
            now,
        };
        self.shared.send_all(&order, request, &tx);
        let mut asked = order.len();
        let mut spares = spares.iter();
        let replies = Replies::within(rx, self.shared.timeouts.read);
        let mut raws = Vec::new();
        let mut done = 0;
        while done < asked {
            let Some((e, result)) = replies.next() else {
                break;
            };
            done += 1;
            match result {
                Ok(Response::Raw(raw)) => raws.push((e, raw)),
                Ok(Response::Error(err)) => {
                    return Err(read_error(e, &err, cl, (raws.len(), need.max(1))))
                }
                // A replica died since it answered: another stands in.
                _ => {
                    if let Some(spare) = spares.next() {
                        self.shared.dispatch(*spare, request(), &tx);
                        asked += 1;
                    }
                }
            }
        }
        if raws.len() < need.max(1) {
            return Err(QueryError::ReadTimeout {
                consistency: cl,
                received: raws.len(),
                block_for: need.max(1),
                data_present: true,
            });
        }
        Ok(raws)
    }

    /// Blocking read repair: `union` to every stale replica, acknowledged
    /// before the read is answered.
    fn repair(
        &self,
        topology: &Topology,
        stale: &[IpAddr],
        union: Vec<Mutation>,
        cl: Consistency,
        now: LocalTime,
    ) -> Result<(), QueryError> {
        if stale.is_empty() {
            return Ok(());
        }
        self.shared.read_repairs.fetch_add(1, Ordering::Relaxed);
        let timeout = self.shared.timeouts.write;
        let replies = self.shared.ask_all(stale, timeout, || Request::Mutate {
            mutations: union.clone(),
            now,
        });
        let mut pending: HashSet<IpAddr> = stale.iter().copied().collect();
        while !pending.is_empty() {
            let Some((e, result)) = replies.next() else {
                for e in &pending {
                    self.shared.hint(topology, *e, &union);
                }
                return Err(QueryError::ReadTimeout {
                    consistency: cl,
                    received: stale.len() - pending.len(),
                    block_for: stale.len(),
                    data_present: true,
                });
            };
            pending.remove(&e);
            if !matches!(result, Ok(Response::Ack)) {
                self.shared.hint(topology, e, &union);
            }
        }
        Ok(())
    }

    /// One scan request over `targets` (one at ONE); with several, their
    /// pages must agree or the page's partitions are reconciled one by one.
    /// Also returns the tombstones this node met, if it is a target (only
    /// its own read's reach the client, as in Cassandra; `DigestRound`).
    #[allow(clippy::too_many_arguments)]
    fn scan_piece(
        &self,
        topology: &Topology,
        table: &Table,
        sub: &RangeScan,
        cl: Consistency,
        now: LocalTime,
        targets: &[IpAddr],
    ) -> Result<(ScanPage, ReadMet), QueryError> {
        let mut book = self.report_book();
        if targets == [self.shared.local] {
            let stop_past = self.shared.tombstones.get().failure;
            let (page, tombstones) = self.shared.engine.scan_counted(sub, now, stop_past)?;
            let met = (page.partitions.as_slice(), tombstones);
            book.own_read(self.shared.local, met, failure_counts(cl, 0, 1))?;
            return Ok((page, book.met(tombstones)));
        }
        let timeout = self.shared.timeouts.range;
        let replies = self.shared.ask_all(targets, timeout, || Request::Scan {
            scan: sub.clone(),
            now,
        });
        let mut pages: Vec<(IpAddr, ScanPage)> = Vec::new();
        let mut tombstones = 0u64;
        while pages.len() < targets.len() {
            match replies.next() {
                Some((
                    e,
                    Ok(Response::Page {
                        page,
                        tombstones: met,
                        bytes,
                    }),
                )) => {
                    if e == self.shared.local {
                        tombstones = met;
                    }
                    book.answered(e, met, bytes);
                    pages.push((e, page));
                }
                Some((e, Ok(Response::Error(err)))) => {
                    let counts = failure_counts(cl, pages.len(), targets.len());
                    if let Some(aborted) = book.refused(e, &err, counts) {
                        return Err(aborted);
                    }
                    let needed = (pages.len(), targets.len());
                    return Err(read_error(e, &err, cl, needed));
                }
                Some((_, Err(SendError::QueueFull(e)))) => return Err(queue_full(e)),
                Some(_) | None => {
                    return Err(QueryError::ReadTimeout {
                        consistency: cl,
                        received: pages.len(),
                        block_for: targets.len(),
                        data_present: !pages.is_empty(),
                    })
                }
            }
        }
        let first = pages[0].1.clone();
        if pages.iter().all(|(_, p)| *p == first) {
            return Ok((first, book.met(tombstones)));
        }
        let page = self.reconcile_pages(topology, table, sub, cl, now, &pages)?;
        Ok((page, book.met(tombstones)))
    }

    /// Pages that disagree: every partition any of them holds, up to where
    /// the first of them stopped, read again with reconciliation.
    #[allow(clippy::too_many_arguments)]
    fn reconcile_pages(
        &self,
        topology: &Topology,
        table: &Table,
        sub: &RangeScan,
        cl: Consistency,
        now: LocalTime,
        pages: &[(IpAddr, ScanPage)],
    ) -> Result<ScanPage, QueryError> {
        let stop = pages
            .iter()
            .filter_map(|(_, p)| p.next.as_ref().map(|n| n.partition.clone()))
            .min();
        let mut keys: Vec<rocksandra_storage::PartitionKey> = pages
            .iter()
            .flat_map(|(_, p)| p.partitions.iter().map(|x| x.key.clone()))
            .filter(|k| stop.as_ref().is_none_or(|s| k <= s))
            .collect();
        keys.sort();
        keys.dedup();
        let replicas: Vec<(IpAddr, [u8; 16])> = pages.iter().map(|(e, _)| (*e, [0; 16])).collect();
        let mut out = ScanPage {
            partitions: Vec::new(),
            next: None,
        };
        for key in keys {
            let resume = sub
                .resume_after
                .as_ref()
                .filter(|r| r.partition == key)
                .and_then(|r| r.clustering.clone());
            let read = PartitionRead {
                table: sub.table,
                partition: key.clone(),
                slices: vec![match resume {
                    Some(after) => rocksandra_storage::Slice {
                        start: rocksandra_storage::ClusteringBound::after_row(after),
                        end: rocksandra_storage::ClusteringBound::unbounded(),
                    },
                    None => rocksandra_storage::Slice::all(),
                }],
                reversed: false,
                include_static: sub.include_static,
                row_limit: sub.per_partition_limit,
            };
            let partition = self.reconcile(
                topology,
                table,
                &read,
                cl,
                now,
                &replicas,
                &[],
                replicas.len(),
            )?;
            if partition.rows.is_empty() && partition.static_row.is_none() {
                continue;
            }
            if stop.as_ref() == Some(&key) {
                out.next = Some(ScanPosition {
                    partition: key.clone(),
                    clustering: partition.rows.last().map(|r| r.clustering.clone()),
                    rows_returned_in_partition: partition.rows.len().max(1),
                });
            }
            out.partitions.push(partition);
        }
        if stop.is_some() && out.next.is_none() {
            // The stop partition vanished in reconciliation: resume after
            // the last partition returned, or after the stop key.
            out.next = stop.map(|partition| ScanPosition {
                partition,
                clustering: None,
                rows_returned_in_partition: 0,
            });
        }
        Ok(out)
    }
}

/// An in-memory engine holding one table, to reconcile replicas' states.
fn merged_engine(table: &Table, now: LocalTime) -> Result<KvEngine<MemoryStore>, QueryError> {
    let engine = KvEngine::new(MemoryStore::new(Arc::new(move || now)));
    engine.create_table(table.storage_spec())?;
    Ok(engine)
}

/// The scan's token interval cut at the ring's tokens, in token order:
/// (first token, last token, replicas) with both ends inclusive.
pub(crate) fn scan_pieces(
    topology: &Topology,
    strategy: &Strategy,
    scan: &RangeScan,
) -> Vec<(Token, Token, Vec<IpAddr>)> {
    let ranges: Vec<(TokenRange, Vec<IpAddr>)> = match strategy {
        Strategy::Local => Vec::new(),
        _ => topology.ring.ranges(strategy),
    };
    let mut start = scan.token_start;
    if let Some(position) = &scan.resume_after {
        start = start.max(position.partition.token);
    }
    let end = scan.token_end;
    if ranges.is_empty()
        || ranges.len() == 1 && ranges[0].0.start_exclusive == ranges[0].0.end_inclusive
    {
        let replicas = ranges
            .first()
            .map(|(_, r)| r.clone())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| vec![topology.local]);
        return vec![(start, end, replicas)];
    }
    // Linear pieces over [MIN, MAX]: the wrapping range splits in two.
    let mut linear: Vec<(Token, Token, Vec<IpAddr>)> = Vec::new();
    for (range, replicas) in &ranges {
        let (s, e) = (range.start_exclusive.0, range.end_inclusive.0);
        if s < e {
            linear.push((Token(s + 1), Token(e), replicas.clone()));
        } else {
            linear.push((Token(i64::MIN), Token(e), replicas.clone()));
            if s < i64::MAX {
                linear.push((Token(s + 1), Token(i64::MAX), replicas.clone()));
            }
        }
    }
    linear.sort_by_key(|(s, _, _)| *s);
    linear
        .into_iter()
        .filter(|(s, e, _)| *e >= start && *s <= end)
        .map(|(s, e, r)| (s.max(start), e.min(end), r))
        .collect()
}

// ------------------------------------------------------------------ Paxos

/// One compare-and-set's fixed facts: where its rounds go and what they need.
struct PaxosPlan {
    key: PaxosKey,
    serial: Consistency,
    participants: Participants<IpAddr>,
    /// Every natural and pending replica (commits go to all of them).
    replicas: Vec<IpAddr>,
    strategy: Strategy,
    pending_dcs: Vec<String>,
    ttl_seconds: i32,
    now: LocalTime,
    /// Reported by the rounds' timeouts.
    write_type: WriteType,
}

enum Prepared {
    Promised(Vec<(IpAddr, Option<Proposal>, Option<Proposal>)>),
    Rejected(Ballot),
}

impl Coordinator {
    fn paxos_plan(
        &self,
        schema: &Schema,
        table: &Table,
        partition: &PartitionKey,
        serial: Consistency,
        now: LocalTime,
        write_type: WriteType,
    ) -> Result<(Arc<Topology>, PaxosPlan), QueryError> {
        let topology = self.shared.topology();
        let strategy = keyspace_strategy(schema, &table.keyspace);
        let mut natural = topology.replicas(&strategy, partition.token);
        if natural.is_empty() {
            natural.push(self.shared.local);
        }
        let pending = topology.pending(&strategy, partition.token);
        let describe = |endpoints: &[IpAddr]| -> Vec<(IpAddr, String, bool)> {
            endpoints
                .iter()
                .map(|e| {
                    (
                        *e,
                        topology.dc_of(*e).unwrap_or_default(),
                        topology.is_alive(*e),
                    )
                })
                .collect()
        };
        let (natural_info, pending_info) = (describe(&natural), describe(&pending));
        let natural_refs: Vec<(IpAddr, &str, bool)> = natural_info
            .iter()
            .map(|(e, d, a)| (*e, d.as_str(), *a))
            .collect();
        let pending_refs: Vec<(IpAddr, &str, bool)> = pending_info
            .iter()
            .map(|(e, d, a)| (*e, d.as_str(), *a))
            .collect();
        let participants =
            crate::paxos::participants(&natural_refs, &pending_refs, serial, &topology.local_dc)
                .map_err(consistency_error)?;
        let pending_dcs = pending_info.iter().map(|(_, d, _)| d.clone()).collect();
        let plan = PaxosPlan {
            key: PaxosKey {
                table: table.storage_id,
                partition: partition.clone(),
            },
            serial,
            participants,
            replicas: natural.iter().chain(pending.iter()).copied().collect(),
            strategy,
            pending_dcs,
            ttl_seconds: crate::paxos::state_ttl_seconds(i64::from(table.params.gc_grace_seconds)),
            now,
            write_type,
        };
        Ok((topology, plan))
    }

    fn round_timeout(&self, plan: &PaxosPlan, received: usize) -> QueryError {
        QueryError::WriteTimeout {
            consistency: plan.serial,
            received,
            block_for: plan.participants.required,
            write_type: plan.write_type.clone(),
        }
    }

    /// Phase 1 at the participants: a quorum of promises or the first
    /// refusal.
    fn paxos_prepare(&self, plan: &PaxosPlan, ballot: Ballot) -> Result<Prepared, QueryError> {
        let live = &plan.participants.live;
        let timeout = self.shared.timeouts.write;
        let replies = self
            .shared
            .ask_all(live, timeout, || Request::PaxosPrepare {
                key: plan.key.clone(),
                ballot,
                ttl_seconds: plan.ttl_seconds,
                now: plan.now,
            });
        let mut promises = Vec::new();
        let mut failed = 0;
        while promises.len() < plan.participants.required {
            let Some((e, answer)) = replies.next() else {
                return Err(self.round_timeout(plan, promises.len()));
            };
            match answer {
                Ok(Response::PaxosPrepared(PrepareAnswer::Promise {
                    accepted,
                    committed,
                })) => promises.push((e, accepted, committed)),
                Ok(Response::PaxosPrepared(PrepareAnswer::Reject { highest })) => {
                    return Ok(Prepared::Rejected(highest));
                }
                other => {
                    failed += 1;
                    if live.len() - failed < plan.participants.required {
                        return Err(match other {
                            Ok(Response::Error(err)) => remote_error(e, &err),
                            _ => self.round_timeout(plan, promises.len()),
                        });
                    }
                }
            }
        }
        Ok(Prepared::Promised(promises))
    }

    /// Phase 2 at the participants. Waits until a quorum accepted, every
    /// participant refused, or a quorum is out of reach with some accepts.
    /// A replica that failed to answer may have accepted: a round without
    /// a quorum in which one failed is Partial, never Refused.
    fn paxos_propose(
        &self,
        plan: &PaxosPlan,
        proposal: &Proposal,
    ) -> Result<(ProposeOutcome, usize), QueryError> {
        let live = &plan.participants.live;
        let timeout = self.shared.timeouts.write;
        let replies = self
            .shared
            .ask_all(live, timeout, || Request::PaxosPropose {
                key: plan.key.clone(),
                proposal: proposal.clone(),
                ttl_seconds: plan.ttl_seconds,
                now: plan.now,
            });
        let (mut accepts, mut refusals, mut failures) = (0, 0, 0);
        loop {
            let answered = refusals + failures;
            let outcome =
                propose_outcome(accepts, answered, live.len(), plan.participants.required);
            if outcome == ProposeOutcome::Refused && failures > 0 {
                // A failed replica may have accepted (its answer lost), so
                // the update may still be chosen: unknown, as Cassandra.
                return Ok((ProposeOutcome::Partial, accepts));
            }
            if outcome != ProposeOutcome::Pending {
                return Ok((outcome, accepts));
            }
            match replies.next() {
                Some((_, Ok(Response::PaxosAccepted(true)))) => accepts += 1,
                Some((_, Ok(Response::PaxosAccepted(false)))) => refusals += 1,
                Some(_) => failures += 1,
                None => return Err(self.round_timeout(plan, accepts)),
            }
        }
    }

    /// Commits `proposal` on every replica (hints for the down ones) and
    /// waits as `cl` asks (not at all for ANY).
    fn paxos_commit(
        &self,
        topology: &Topology,
        plan: &PaxosPlan,
        proposal: &Proposal,
        cl: Consistency,
        write_type: WriteType,
    ) -> Result<(), QueryError> {
        let pending_refs: Vec<&str> = plan.pending_dcs.iter().map(String::as_str).collect();
        let requirement = requirement(cl, Operation::Write, &plan.strategy, &topology.local_dc)
            .map_err(consistency_error)?
            .with_pending(cl, &pending_refs);
        let (live, down): (Vec<IpAddr>, Vec<IpAddr>) =
            plan.replicas.iter().partition(|e| topology.is_alive(**e));
        for e in &down {
            self.shared.hint(topology, *e, &proposal.mutations);
        }
        let timeout = self.shared.timeouts.write;
        let replies = self
            .shared
            .ask_all(&live, timeout, || Request::PaxosCommit {
                key: plan.key.clone(),
                proposal: proposal.clone(),
                ttl_seconds: plan.ttl_seconds,
                now: plan.now,
            });
        let dc = |e: IpAddr| topology.dc_of(e).unwrap_or_default();
        let mut acked: Vec<String> = Vec::new();
        let mut outstanding: HashMap<IpAddr, Vec<Mutation>> = live
            .iter()
            .map(|e| (*e, proposal.mutations.clone()))
            .collect();
        let done = |acked: &[String]| {
            cl == Consistency::Any || {
                let dcs: Vec<&str> = acked.iter().map(String::as_str).collect();
                requirement.is_satisfied(&dcs)
            }
        };
        while !done(&acked) && !outstanding.is_empty() {
            let Some((e, result)) = replies.next() else {
                break;
            };
            let mutations = outstanding.remove(&e);
            match (result, mutations) {
                (Ok(Response::Ack), _) => acked.push(dc(e)),
                (_, Some(m)) => self.shared.hint(topology, e, &m),
                (_, None) => {}
            }
        }
        if !done(&acked) {
            for (e, m) in &outstanding {
                self.shared.hint(topology, *e, m);
            }
            return Err(QueryError::WriteTimeout {
                consistency: cl,
                received: acked.len(),
                block_for: requirement.block_for(),
                write_type,
            });
        }
        if !outstanding.is_empty() {
            // The slower replicas are hinted if they never answer.
            self.shared.follow_up(Followup {
                replies,
                outstanding,
            });
        }
        Ok(())
    }

    /// Sends the most recent commit to the promising replicas that lack it
    /// and waits for them (failures only mean another round).
    fn paxos_repair_commit(&self, plan: &PaxosPlan, commit: &Proposal, replicas: &[IpAddr]) {
        let timeout = self.shared.timeouts.write;
        let replies = self
            .shared
            .ask_all(replicas, timeout, || Request::PaxosCommit {
                key: plan.key.clone(),
                proposal: commit.clone(),
                ttl_seconds: plan.ttl_seconds,
                now: plan.now,
            });
        // Failures only mean another round: the answers are not read.
        let _ = replies.wait().take(replicas.len()).count();
    }

    /// A random pause below `CONTENTION_BACKOFF_MAX` after a lost round.
    fn contention_backoff(&self) {
        let seed = ((self.shared.now_micros)() as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
        let max = CONTENTION_BACKOFF_MAX.as_micros() as u64;
        std::thread::sleep(Duration::from_micros(seed % max.max(1)));
    }

    /// Cassandra's `doPaxos`: rounds until `decide`'s update (empty for a
    /// SERIAL read, or when it returns None) is chosen, finishing earlier
    /// in-progress updates on the way; then commits it at `commit_cl`.
    #[allow(clippy::too_many_arguments)]
    fn run_paxos(
        &self,
        topology: &Topology,
        plan: &PaxosPlan,
        commit_cl: Consistency,
        commit_write_type: WriteType,
        decide: &mut CasDecide<'_>,
    ) -> Result<(), QueryError> {
        let replay_cl = if plan.serial == Consistency::LocalSerial {
            Consistency::LocalQuorum
        } else {
            Consistency::Quorum
        };
        let started = Instant::now();
        let mut above: Option<Ballot> = None;
        while started.elapsed() < self.shared.timeouts.cas_contention {
            let ballot = self.shared.next_ballot(above);
            let promises = match self.paxos_prepare(plan, ballot)? {
                Prepared::Rejected(highest) => {
                    above = Some(highest);
                    self.contention_backoff();
                    continue;
                }
                Prepared::Promised(p) => p,
            };
            let now_micros = (self.shared.now_micros)();
            match after_promises(&promises, now_micros, plan.ttl_seconds) {
                NextStep::FinishInProgress(in_progress) => {
                    let refreshed = Proposal {
                        ballot,
                        mutations: in_progress.mutations,
                    };
                    match self.paxos_propose(plan, &refreshed)? {
                        (ProposeOutcome::Accepted, _) => self.paxos_commit(
                            topology,
                            plan,
                            &refreshed,
                            replay_cl,
                            WriteType::Simple,
                        )?,
                        _ => self.contention_backoff(),
                    }
                }
                NextStep::RepairCommit { commit, replicas } => {
                    self.paxos_repair_commit(plan, &commit, &replicas);
                }
                NextStep::Proceed => {
                    let mutations = decide(Some(Timestamp(ballot.micros)))?.unwrap_or_default();
                    let proposal = Proposal { ballot, mutations };
                    match self.paxos_propose(plan, &proposal)? {
                        (ProposeOutcome::Accepted, _) => {
                            // Empty updates are not committed (Cassandra).
                            if !proposal.is_empty() {
                                self.paxos_commit(
                                    topology,
                                    plan,
                                    &proposal,
                                    commit_cl,
                                    commit_write_type,
                                )?;
                            }
                            return Ok(());
                        }
                        // An update partly accepted may still be chosen by
                        // a later round (finishing it): its outcome is
                        // unknown, and deciding again could apply it twice.
                        // An empty one changes nothing either way, so it
                        // is simply retried (Cassandra times out there too).
                        (ProposeOutcome::Partial, accepts) if !proposal.is_empty() => {
                            return Err(self.round_timeout(plan, accepts))
                        }
                        _ => {
                            above = Some(ballot);
                            self.contention_backoff();
                        }
                    }
                }
            }
        }
        Err(self.round_timeout(plan, 0))
    }

    /// A SERIAL or LOCAL_SERIAL read: a Paxos round with an empty update
    /// (finishing any update in progress), then a read at the matching
    /// quorum (Cassandra's `readWithPaxos`).
    fn read_serial(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        serial: Consistency,
        now: LocalTime,
    ) -> Result<Partition, QueryError> {
        let (topology, plan) =
            self.paxos_plan(schema, table, &read.partition, serial, now, WriteType::Cas)?;
        let quorum = if serial == Consistency::LocalSerial {
            Consistency::LocalQuorum
        } else {
            Consistency::Quorum
        };
        let result = self.run_paxos(&topology, &plan, quorum, WriteType::Simple, &mut |_| {
            Ok(None)
        });
        match result {
            Err(QueryError::WriteTimeout { .. }) => {
                return Err(QueryError::ReadTimeout {
                    consistency: serial,
                    received: 0,
                    block_for: plan.participants.required,
                    data_present: false,
                })
            }
            other => other?,
        }
        self.read_partition(schema, table, read, quorum, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_query::read_thresholds;
    use rocksandra_query::tombstones::READ_TOO_MANY_TOMBSTONES;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn partition() -> Partition {
        Partition {
            key: PartitionKey::new(b"k".to_vec()),
            static_row: None,
            rows: Vec::new(),
        }
    }

    /// A round over replicas 1 and 2 whose data and digest answers met 7
    /// and 12 tombstones; `local` coordinates.
    fn round_tombstones(local: IpAddr) -> u64 {
        let plan = ReadPlan {
            candidates: vec![ip(1), ip(2)],
            block_for: 2,
        };
        let (mut round, _) = DigestRound::start(&plan, local);
        let data = Response::Data {
            partition: partition(),
            tombstones: 7,
            bytes: 0,
        };
        let digest_answer = Response::Digest {
            digest: digest(&partition()),
            tombstones: 12,
            bytes: 0,
        };
        assert_eq!(
            round.on_reply((ip(1), Ok(data)), Consistency::Quorum),
            Ok(None)
        );
        assert_eq!(
            round.on_reply((ip(2), Ok(digest_answer)), Consistency::Quorum),
            Ok(None)
        );
        assert!(round.done());
        round.tombstones
    }

    #[test]
    fn a_digest_round_keeps_only_the_coordinators_own_tombstones() {
        // Cassandra (read_thresholds_enabled: false) warns the client of
        // the coordinator's own read; other replicas only log.
        assert_eq!(round_tombstones(ip(1)), 7);
        assert_eq!(round_tombstones(ip(2)), 12);
        assert_eq!(round_tombstones(ip(9)), 0);
    }

    /// The reports of a read with `read_thresholds_enabled`, warn 5 and
    /// fail 50 tombstones, local sizes 1000 and 4000 bytes.
    fn enabled_book() -> ReportBook {
        use rocksandra_query::read_thresholds::{ReadThresholds, SizeThresholds};
        use rocksandra_query::tombstones::TombstoneThresholds;
        let read = ReadThresholdSettings::default();
        read.set(ReadThresholds {
            enabled: true,
            local_read_size: SizeThresholds {
                warn: Some(1000),
                fail: Some(4000),
            },
            ..ReadThresholds::default()
        });
        let tombstones = TombstoneSettings::default();
        tombstones.set(TombstoneThresholds {
            warn: 5,
            failure: 50,
        });
        ReportBook::new(&read, &tombstones)
    }

    #[test]
    fn with_read_thresholds_every_replica_reports_to_the_coordinator() {
        let plan = ReadPlan {
            candidates: vec![ip(1), ip(2), ip(3)],
            block_for: 3,
        };
        let (mut round, _) = DigestRound::start(&plan, ip(1));
        round.book = enabled_book();
        let answers = [
            Response::Data {
                partition: partition(),
                tombstones: 7,
                bytes: 1500,
            },
            Response::Digest {
                digest: digest(&partition()),
                tombstones: 12,
                bytes: 999,
            },
            Response::Digest {
                digest: digest(&partition()),
                tombstones: 5,
                bytes: 1000,
            },
        ];
        for (i, answer) in answers.into_iter().enumerate() {
            let from = ip(i as u8 + 1);
            assert_eq!(
                round.on_reply((from, Ok(answer)), Consistency::All),
                Ok(None)
            );
        }
        assert!(round.done());
        let met = std::mem::take(&mut round.book).met(round.tombstones);
        assert_eq!(met.tombstones, 7);
        // Past warn 5: replicas 1 and 2, the most 12; sizes from 1000 on.
        assert_eq!(met.reports.tombstone_warnings.nodes(), &[ip(1), ip(2)]);
        assert_eq!(met.reports.tombstone_warnings.max(), 12);
        assert_eq!(met.reports.size_warnings.nodes(), &[ip(1), ip(3)]);
        assert_eq!(met.reports.size_warnings.max(), 1500);
        // Off, nothing is kept.
        let (mut off, _) = DigestRound::start(&plan, ip(1));
        let data = Response::Data {
            partition: partition(),
            tombstones: 70,
            bytes: 0,
        };
        off.on_reply((ip(1), Ok(data)), Consistency::All).unwrap();
        assert!(std::mem::take(&mut off.book).met(0).reports.is_empty());
    }

    #[test]
    fn with_read_thresholds_a_refusal_fails_the_read_with_the_reports() {
        let plan = ReadPlan {
            candidates: vec![ip(1), ip(2), ip(3)],
            block_for: 2,
        };
        for (refusal, text) in [
            (
                RemoteError::TooManyTombstones { tombstones: 51 },
                "1 nodes scanned over 51 tombstones and aborted the query Q \
                 (see tombstone_failure_threshold): READ_TOO_MANY_TOMBSTONES from /127.0.0.1",
            ),
            (
                RemoteError::ReadTooLarge { bytes: 4001 },
                "1 nodes loaded over 4001 bytes and aborted the query Q \
                 (see local_read_size_fail_threshold): READ_SIZE from /127.0.0.1",
            ),
        ] {
            let (mut round, _) = DigestRound::start(&plan, ip(9));
            round.book = enabled_book();
            let digest_answer = Response::Digest {
                digest: [0; 16],
                tombstones: 9,
                bytes: 0,
            };
            round
                .on_reply((ip(2), Ok(digest_answer)), Consistency::Quorum)
                .unwrap();
            let refused = Response::Error(refusal);
            match round.on_reply((ip(1), Ok(refused)), Consistency::Quorum) {
                Err(aborted @ QueryError::ReadAborted(_)) => {
                    let failure = read_thresholds::named(aborted, "Q");
                    assert_eq!(failure.to_string(), format!("Operation failed - {text}"));
                    match failure {
                        QueryError::ReadFailure {
                            received,
                            block_for,
                            ..
                        } => assert_eq!((received, block_for), (1, 2)),
                        other => panic!("not a read failure: {other:?}"),
                    }
                }
                other => panic!("not aborted: {other:?}"),
            }
        }
    }

    #[test]
    fn a_replica_past_its_failure_threshold_fails_the_read() {
        let plan = ReadPlan {
            candidates: vec![ip(1), ip(2), ip(3)],
            block_for: 2,
        };
        let (mut round, _) = DigestRound::start(&plan, ip(9));
        let digest_answer = Response::Digest {
            digest: [0; 16],
            tombstones: 0,
            bytes: 0,
        };
        round
            .on_reply((ip(2), Ok(digest_answer)), Consistency::Quorum)
            .unwrap();
        let refused = Response::Error(RemoteError::TooManyTombstones { tombstones: 51 });
        // Not retried on the spare: the read fails at once.
        match round.on_reply((ip(1), Ok(refused)), Consistency::Quorum) {
            Err(QueryError::ReadFailure {
                consistency,
                received,
                block_for,
                reasons,
                message,
            }) => {
                assert_eq!(
                    (consistency, received, block_for),
                    (Consistency::Quorum, 1, 2)
                );
                assert_eq!(reasons, vec![(ip(1), READ_TOO_MANY_TOMBSTONES)]);
                assert!(message.contains("READ_TOO_MANY_TOMBSTONES from /127.0.0.1"));
            }
            other => panic!("not a read failure: {other:?}"),
        }
    }

    #[test]
    fn other_refusals_keep_their_kind() {
        let overloaded = RemoteError::Overloaded("busy".into());
        assert!(matches!(
            read_error(ip(1), &overloaded, Consistency::One, (0, 1)),
            QueryError::Overloaded(_)
        ));
    }
}
