//! A node as a member of a cluster: starts messaging and gossip, picks its
//! tokens, keeps the topology current (and system.peers, and drivers'
//! events), replays hints, spreads schema changes, bootstraps its ranges,
//! and answers other nodes' requests.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rocksandra_data::Token;
use rocksandra_query::disk_usage::DiskUsage;
use rocksandra_query::{Executor, PeerInfo};
use rocksandra_storage::{Engine, TableId};
use rocksandra_wire::{Event, StatusChangeType, TopologyChangeType};

use crate::coordinator::{Coordinator, Shared, Timeouts};
use crate::gossip::{Gossip, LocalState, NodeView};
use crate::hints::Hints;
use crate::message::{AdminCommand, RemoteError, Request, Response};
use crate::messaging::{Handler, Messaging};
use crate::operations::OperationError;
use crate::replica::Replica;
use crate::ring::{allocate_tokens, MemberStatus, Ring};
use crate::schema_exchange::SchemaExchange;
use crate::stages::{StagedEngine, Stages};
use crate::tls::InternodeTls;
use crate::topology::Topology;
use crate::vector_search::AnnSearchCounts;

mod error;
pub use error::StartError;

/// How often the membership loop reads gossip.
pub const MEMBERSHIP_PERIOD: Duration = Duration::from_millis(250);
/// How often hints are offered to nodes that are back.
pub const HINT_REPLAY_PERIOD: Duration = Duration::from_secs(1);
/// How long a new node waits to hear of the cluster from its seeds.
pub const SEED_WAIT: Duration = Duration::from_secs(15);
pub use crate::schema_exchange::{SCHEMA_LOCK_LEASE, SCHEMA_TIMEOUT};
/// Where streams keep their files, under the data directory (emptied at
/// start).
pub const STREAMING_DIR: &str = "streaming";
/// A file in the data directory of a decommissioned node: it does not
/// start again (its data belongs to others now).
pub const DECOMMISSIONED_MARKER: &str = "decommissioned";

/// What a node needs to know to join.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    pub cluster_name: String,
    /// `endpoint_snitch` as configured (`nodetool describecluster`).
    pub endpoint_snitch: String,
    /// What other nodes know this node by (`broadcast_address`, else
    /// `listen_address`): its gossip identity, its place in the ring, the
    /// address peers connect to and show in system.peers.
    pub broadcast_address: IpAddr,
    /// Where it listens for other nodes (`listen_address`).
    pub listen_address: IpAddr,
    /// It listens on `broadcast_address` as well
    /// (`listen_on_broadcast_address`).
    pub listen_on_broadcast_address: bool,
    pub storage_port: u16,
    pub seeds: Vec<SocketAddr>,
    pub dc: String,
    pub rack: String,
    pub host_id: [u8; 16],
    /// Tokens kept from an earlier start; empty for a new node.
    pub tokens: Vec<Token>,
    pub num_tokens: usize,
    /// Where clients reach it (`broadcast_rpc_address`, else `rpc_address`).
    pub rpc_address: IpAddr,
    pub native_port: u16,
    /// For streaming files and the decommission marker.
    pub data_dir: PathBuf,
    /// A new node takes its ranges' data from the others before it serves.
    pub auto_bootstrap: bool,
    /// Hints are kept for replicas down at most this long; None: no hints
    /// (`hinted_handoff_enabled: false`).
    pub hint_window: Option<Duration>,
    /// How long the coordinator waits for replicas.
    pub timeouts: Timeouts,
    /// Where hints are kept (`hints_directory`).
    pub hints_dir: PathBuf,
    /// The `compaction_throughput` the storage engine was opened with,
    /// MiB/s; 0: unthrottled.
    pub compaction_throughput_mib: u32,
    /// TLS on the storage port (`server_encryption_options`); None: plain.
    pub tls: Option<Arc<InternodeTls>>,
    /// What this node sends in streams, bytes per second on average
    /// (`stream_throughput_outbound`); 0: unthrottled.
    pub stream_throughput_bytes: u64,
}

impl ClusterConfig {
    /// The addresses this node listens on for other nodes (internode TCP
    /// and gossip), `listen_address` first: `broadcast_address` too with
    /// `listen_on_broadcast_address`, when they differ.
    pub fn bind_addresses(&self) -> Vec<IpAddr> {
        let mut addresses = vec![self.listen_address];
        if self.listen_on_broadcast_address && self.broadcast_address != self.listen_address {
            addresses.push(self.broadcast_address);
        }
        addresses
    }
}

pub type EventSink = Arc<dyn Fn(Event) + Send + Sync>;

pub struct ClusterNode {
    config: ClusterConfig,
    pub shared: Arc<Shared>,
    /// The transport `shared` sends through, for fault injection.
    #[cfg(feature = "fault-injection")]
    messaging: Arc<Messaging>,
    executor: Arc<Executor>,
    gossip: Gossip,
    events: EventSink,
    status: Mutex<&'static str>,
    /// Tokens in use (allocated on first start).
    pub tokens: Vec<Token>,
    pulling_schema: AtomicBool,
    /// The load last published in gossip.
    published_load: AtomicU64,
    /// The data disk usage last published in gossip.
    published_disk_usage: Mutex<DiskUsage>,
    /// The compaction throughput in force (MiB/s, 0 unthrottled), shown
    /// by `getcompactionthroughput`; `setcompactionthroughput` applies it to
    /// the engine, then stores it here.
    pub compaction_throughput: Arc<AtomicU32>,
    /// Local replica reads and writes (`nodetool tpstats`).
    pub stages: Arc<Stages>,
    /// Internode requests dropped, by verb (`Messaging`'s).
    dropped: Arc<crate::metrics::DroppedMessages>,
    /// Schema changes: the lock (on the schema leader), pushes and pulls.
    schema: Arc<SchemaExchange>,
    /// Streaming sessions for `nodetool netstats`.
    pub(crate) sessions: crate::operations::Sessions,
    /// Long operations nodetool started, which a later nodetool attaches to.
    running: crate::operations::RunningOperations,
    /// The streams this node serves for its peers.
    pub(crate) stream_server: crate::streaming::StreamServer,
    /// Paces what this node sends in streams.
    pub(crate) stream_throttle: crate::streaming::Throttle,
    /// Dead nodes this node removes or has seen removed (host id, done),
    /// published under `KEY_REMOVALS`.
    removals: Mutex<Vec<([u8; 16], bool)>>,
    runtime: tokio::runtime::Handle,
    /// Becomes true when the node has left the ring (decommission).
    left: tokio::sync::watch::Sender<bool>,
}

/// Answers other nodes; set up before messaging starts, given the node
/// once it exists.
struct NodeHandler {
    node: OnceLock<Arc<ClusterNode>>,
    replica: Replica,
}

impl Handler for NodeHandler {
    fn handle(&self, from: IpAddr, request: Request) -> Response {
        let request = match self.replica.serve(request) {
            Ok(response) => return response,
            Err(other) => other,
        };
        match self.node.get() {
            Some(node) => node.handle(from, request),
            None => Response::Error(RemoteError::Overloaded("node is starting".into())),
        }
    }
}

/// A decommissioned node's data directory cannot join again.
fn check_not_decommissioned(config: &ClusterConfig) -> Result<(), StartError> {
    if config.data_dir.join(DECOMMISSIONED_MARKER).exists() {
        return Err(StartError::Decommissioned(config.data_dir.clone()));
    }
    Ok(())
}

/// The tables the cluster keeps in local storage: Paxos state, batchlog.
fn open_cluster_tables(engine: &dyn Engine) -> Result<(), StartError> {
    let table = |table| move |source| StartError::OpenTable { table, source };
    crate::paxos_store::open(engine).map_err(table("paxos state"))?;
    crate::batchlog::open(engine).map_err(table("batchlog"))
}

async fn start_messaging(
    config: &ClusterConfig,
    handler: Arc<NodeHandler>,
) -> Result<Arc<Messaging>, StartError> {
    Messaging::start(
        config.broadcast_address,
        &config.bind_addresses(),
        config.storage_port,
        config.cluster_name.clone(),
        handler,
        config.tls.clone(),
    )
    .await
    .map_err(StartError::Listen)
}

/// `dc` and `rack` encryption decide by the peers' places as the ring
/// knows them (a peer not known yet is spoken to over TLS).
fn install_encryption_rule(config: &ClusterConfig, messaging: &Messaging, shared: &Arc<Shared>) {
    let Some(encryption) = config.tls.as_ref().map(|tls| tls.encryption) else {
        return;
    };
    let shared = Arc::downgrade(shared);
    let (dc, rack) = (config.dc.clone(), config.rack.clone());
    messaging.set_encryption_rule(Box::new(move |peer| {
        let place = shared.upgrade().and_then(|s| s.topology().place_of(peer));
        let place = place.as_ref().map(|(d, r)| (d.as_str(), r.as_str()));
        encryption.should_encrypt((&dc, &rack), place)
    }));
}

/// What this node gossips about itself at start.
pub(crate) fn local_state(
    config: &ClusterConfig,
    executor: &Executor,
    new_node: bool,
) -> LocalState {
    let (epoch, version, _) = executor.schema_blob();
    LocalState {
        host_id: config.host_id,
        dc: config.dc.clone(),
        rack: config.rack.clone(),
        tokens: config.tokens.clone(),
        status: if new_node {
            crate::gossip::STATUS_JOINING
        } else {
            crate::gossip::STATUS_NORMAL
        },
        rpc_address: config.rpc_address,
        native_port: config.native_port,
        schema_version: version,
        schema_epoch: epoch,
    }
}

/// The ring of a node running alone: itself, as it would gossip itself.
pub(crate) fn topology_alone(config: &ClusterConfig, executor: &Executor) -> Topology {
    let state = local_state(config, executor, false);
    let values: std::collections::HashMap<String, String> =
        state.key_values().into_iter().collect();
    let get = |key: &str| values.get(key).cloned();
    let views = crate::gossip::parse_view(config.broadcast_address, 0, true, &get)
        .into_iter()
        .collect();
    Topology::new(config.broadcast_address, config.dc.clone(), views)
}

/// The ring as a new node that is not a seed sees it before it chooses
/// tokens: a normal node seen, gossip settled, and the joining nodes with
/// lower addresses done choosing.
async fn settled_ring(
    gossip: &Gossip,
    config: &ClusterConfig,
    messaging: &Messaging,
) -> Result<Vec<NodeView>, StartError> {
    let local = config.broadcast_address;
    let started = Instant::now();
    let mut probed = false;
    let mut views = gossip.view().await;
    while !views
        .iter()
        .any(|v| v.member.address != local && v.member.status == MemberStatus::Normal)
    {
        if !probed && started.elapsed() > SEED_WAIT / 3 {
            // Both ends say why a seed refuses this node, early.
            probe_seeds(&config.seeds, local, messaging).await;
            probed = true;
        }
        if started.elapsed() > SEED_WAIT {
            probe_seeds(&config.seeds, local, messaging).await;
            return Err(no_seed_answered(&config.seeds, messaging));
        }
        tokio::time::sleep(MEMBERSHIP_PERIOD).await;
        views = gossip.view().await;
    }
    views = until_stable(gossip, views, started).await;
    until_lower_joiners_chose(gossip, views, local, started).await
}

/// Connects to each seed but this node (`Messaging::probe`), so that a
/// refusal is logged on both ends and its cause known.
async fn probe_seeds(seeds: &[SocketAddr], local: IpAddr, messaging: &Messaging) {
    for seed in seeds.iter().filter(|s| s.ip() != local) {
        let _ = messaging.probe(seed.ip()).await;
    }
}

/// Cassandra's "Unable to contact any seeds", with the seeds and, for each
/// that could not be connected to, why (a refused TLS handshake, say).
fn no_seed_answered(seeds: &[SocketAddr], messaging: &Messaging) -> StartError {
    let causes: Vec<String> = seeds
        .iter()
        .filter_map(|s| Some(format!("{s}: {}", messaging.last_failure(s.ip())?)))
        .collect();
    StartError::NoSeedAnswered {
        seeds: seeds.to_vec(),
        causes,
        waited_secs: SEED_WAIT.as_secs(),
    }
}

/// Waits until gossip has settled (the same nodes and tokens for a second),
/// so tokens are not chosen from a partial ring.
async fn until_stable(
    gossip: &Gossip,
    mut views: Vec<NodeView>,
    started: Instant,
) -> Vec<NodeView> {
    let key = |v: &[NodeView]| -> Vec<(IpAddr, usize)> {
        v.iter()
            .map(|n| (n.member.address, n.member.tokens.len()))
            .collect()
    };
    let mut stable = 0;
    while stable < 4 && started.elapsed() < SEED_WAIT {
        tokio::time::sleep(MEMBERSHIP_PERIOD).await;
        let next = gossip.view().await;
        stable = if key(&next) == key(&views) {
            stable + 1
        } else {
            0
        };
        views = next;
    }
    views
}

/// Two nodes joining at once would split the same ranges at the same
/// midpoints: the one with the higher address waits until every joining
/// node below it has published its tokens.
async fn until_lower_joiners_chose(
    gossip: &Gossip,
    mut views: Vec<NodeView>,
    local: IpAddr,
    started: Instant,
) -> Result<Vec<NodeView>, StartError> {
    while started.elapsed() < SEED_WAIT * 2 {
        let waiting_for = views.iter().find(|v| {
            v.member.address < local
                && v.member.status == MemberStatus::Joining
                && v.member.tokens.is_empty()
                && v.alive
                && !v.left
        });
        let Some(other) = waiting_for else { break };
        tracing::info!(
            "waiting for {} (also joining) to choose its tokens",
            other.member.address
        );
        tokio::time::sleep(MEMBERSHIP_PERIOD).await;
        views = gossip.view().await;
    }
    Ok(views)
}

/// Starts gossip on the messaging port, announcing `state` with a new
/// generation (the start time in milliseconds).
async fn start_gossip(
    config: &ClusterConfig,
    state: &LocalState,
    messaging: &Arc<Messaging>,
) -> Result<Gossip, StartError> {
    let generation = (rocksandra_data::time::system_micros() / 1000) as u64;
    let port = messaging.port();
    let bind: Vec<SocketAddr> = config
        .bind_addresses()
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .collect();
    Gossip::start(
        SocketAddr::new(config.broadcast_address, port),
        &bind,
        &config.cluster_name,
        config.seeds.clone(),
        generation,
        state,
        messaging,
    )
    .await
    .map_err(StartError::from)
}

/// The node's tokens, published in gossip: a new node chooses them from
/// the ring it sees (a seed at once, another once the ring has settled);
/// a restarted node keeps its own.
async fn announce_tokens(
    config: &ClusterConfig,
    gossip: &Gossip,
    messaging: &Messaging,
    (new_node, is_seed): (bool, bool),
) -> Result<Vec<Token>, StartError> {
    let tokens = if new_node {
        let views = if is_seed {
            gossip.view().await
        } else {
            settled_ring(gossip, config, messaging).await?
        };
        choose_tokens(config, &views)
    } else {
        config.tokens.clone()
    };
    let token_text: Vec<String> = tokens.iter().map(|t| t.0.to_string()).collect();
    gossip
        .set(crate::gossip::KEY_TOKENS, token_text.join(","))
        .await;
    Ok(tokens)
}

/// A new node's tokens, balanced against the others' in `views`.
fn choose_tokens(config: &ClusterConfig, views: &[NodeView]) -> Vec<Token> {
    let local = config.broadcast_address;
    let others = Ring::new(
        views
            .iter()
            .filter(|v| v.member.address != local && !v.left)
            .map(|v| v.member.clone()),
    );
    let host_bits = config.host_id[..8].try_into().map_or(0, u64::from_be_bytes);
    let mut seed = rocksandra_data::time::system_micros() as u64 ^ host_bits;
    let mut random = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed ^ (seed >> 33)
    };
    allocate_tokens(&others, &config.dc, config.num_tokens.max(1), &mut random)
}

/// What this node's replica answers ANN searches with: the executor's
/// graphs and schema (held weakly: the executor holds the coordinator).
fn vector_replica(executor: &Arc<Executor>) -> crate::vector_search::VectorReplica {
    let weak = Arc::downgrade(executor);
    crate::vector_search::VectorReplica {
        graphs: executor.vector_graphs(),
        schema: Arc::new(move || weak.upgrade().map(|e| e.schema())),
        counts: Arc::default(),
    }
}

/// The membership loop, and the hint and batchlog replay threads.
fn spawn_background_loops(node: &Arc<ClusterNode>) -> Result<(), StartError> {
    let thread = |what| move |source| StartError::Thread { what, source };
    tokio::spawn(membership_loop(Arc::downgrade(node)));
    let weak = Arc::downgrade(node);
    std::thread::Builder::new()
        .name("hint-replay".into())
        .spawn(move || hint_loop(weak))
        .map_err(thread("hint replay"))?;
    let weak = Arc::downgrade(node);
    std::thread::Builder::new()
        .name("batchlog-replay".into())
        .spawn(move || batchlog_loop(weak))
        .map_err(thread("batchlog replay"))?;
    Ok(())
}

impl ClusterNode {
    /// Joins the cluster and routes `executor`'s data and schema changes
    /// through it.
    pub async fn start(
        config: ClusterConfig,
        engine: Arc<dyn Engine>,
        executor: Arc<Executor>,
        events: EventSink,
    ) -> Result<Arc<ClusterNode>, StartError> {
        check_not_decommissioned(&config)?;
        // What streams left behind when the process last stopped.
        let _ = std::fs::remove_dir_all(config.data_dir.join(STREAMING_DIR));
        open_cluster_tables(&*engine)?;
        let stages = Arc::new(Stages::default());
        let vectors = vector_replica(&executor);
        let staged = StagedEngine::new(engine, stages.clone()).observing(vectors.graphs.clone());
        let replica = Replica {
            engine: Arc::new(staged),
            tombstones: executor.tombstone_settings(),
            read_thresholds: executor.read_threshold_settings(),
            vectors: Some(vectors),
        };
        let handler = Arc::new(NodeHandler {
            node: OnceLock::new(),
            replica: replica.clone(),
        });
        let messaging = start_messaging(&config, handler.clone()).await?;
        let new_node = config.tokens.is_empty();
        let mut state = local_state(&config, &executor, new_node);
        let gossip = start_gossip(&config, &state, &messaging).await?;
        let local = config.broadcast_address;
        let is_seed = config.seeds.iter().any(|s| s.ip() == local);
        let joining = (new_node, is_seed);
        let tokens = announce_tokens(&config, &gossip, &messaging, joining).await?;
        state.tokens = tokens.clone();
        let hints = Hints::open(&config.hints_dir, config.hint_window)
            .map_err(StartError::HintsDirectory)?;
        let topology = Topology::new(local, config.dc.clone(), gossip.view().await);
        let shared = Shared::new(
            local,
            replica,
            messaging.clone(),
            topology,
            hints,
            Arc::new(rocksandra_data::time::system_micros),
            config.timeouts,
        )
        .map_err(StartError::Coordinator)?;
        install_encryption_rule(&config, &messaging, &shared);
        let compaction_throughput_mib = config.compaction_throughput_mib;
        let stream_throughput = config.stream_throughput_bytes;
        let dropped = messaging.dropped();
        let node = Arc::new(ClusterNode {
            config,
            shared: shared.clone(),
            #[cfg(feature = "fault-injection")]
            messaging,
            executor: executor.clone(),
            gossip,
            events: events.clone(),
            status: Mutex::new(state.status),
            tokens,
            pulling_schema: AtomicBool::new(false),
            published_load: AtomicU64::new(u64::MAX),
            published_disk_usage: Mutex::new(DiskUsage::NotAvailable),
            compaction_throughput: Arc::new(AtomicU32::new(compaction_throughput_mib)),
            stages,
            dropped,
            schema: SchemaExchange::new(
                shared.clone(),
                executor.clone(),
                events.clone(),
                Arc::new(std::thread::sleep),
            ),
            sessions: Default::default(),
            running: Default::default(),
            stream_server: crate::streaming::StreamServer::new(crate::streaming::chunk_bytes()),
            stream_throttle: crate::streaming::Throttle::new(stream_throughput),
            removals: Mutex::new(Vec::new()),
            runtime: tokio::runtime::Handle::current(),
            left: tokio::sync::watch::channel(false).0,
        });
        let _ = handler.node.set(node.clone());
        executor.set_data_proxy(Arc::new(Coordinator::new(shared)))?;
        executor.set_schema_sync(node.schema.sync())?;
        node.refresh().await;
        if new_node {
            if !is_seed {
                node.join_existing_cluster().await?;
            }
            node.set_status(crate::gossip::STATUS_NORMAL).await;
        }
        spawn_background_loops(&node)?;
        Ok(node)
    }

    /// A new node that is not a seed: waits for another normal node to be
    /// up, takes the newest schema and, with `auto_bootstrap`, streams its
    /// ranges.
    async fn join_existing_cluster(self: &Arc<Self>) -> Result<(), StartError> {
        let local = self.config.broadcast_address;
        let started = Instant::now();
        loop {
            self.refresh().await;
            let topology = self.shared.topology();
            let others_up = topology.nodes.values().any(|v| {
                v.alive && v.member.address != local && v.member.status == MemberStatus::Normal
            });
            if others_up {
                break;
            }
            if started.elapsed() > SEED_WAIT {
                return Err(StartError::NoOtherNodeUp);
            }
            tokio::time::sleep(MEMBERSHIP_PERIOD).await;
        }
        self.pull_newest_schema_async().await;
        if self.config.auto_bootstrap {
            // Wait until the others see this node joining, so they send it
            // the writes of its future ranges meanwhile.
            for _ in 0..8 {
                tokio::time::sleep(MEMBERSHIP_PERIOD).await;
                self.refresh().await;
            }
            let n = self.clone();
            tokio::task::spawn_blocking(move || n.bootstrap()).await??;
        }
        Ok(())
    }

    async fn set_status(self: &Arc<Self>, status: &'static str) {
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = status;
        self.gossip
            .set(crate::gossip::KEY_STATUS, status.to_string())
            .await;
        self.refresh().await;
    }

    /// `set_status` from a blocking thread.
    pub(crate) fn set_status_blocking(self: &Arc<Self>, status: &'static str) {
        self.runtime.block_on(self.set_status(status));
    }

    /// Completes once the node has left the ring (decommissioned): the
    /// server then stops.
    pub async fn wait_until_left(&self) {
        let mut left = self.left.subscribe();
        let _ = left.wait_for(|l| *l).await;
    }

    /// Gossip knows `host` has left the ring (decommissioned or removed).
    fn gossip_says_left(&self, host: [u8; 16]) -> bool {
        let removed = self
            .removals
            .lock()
            .map(|r| r.contains(&(host, true)))
            .unwrap_or(false);
        removed
            || self
                .runtime
                .block_on(self.gossip.view())
                .iter()
                .any(|v| v.member.host_id == host && v.left)
    }

    pub(crate) fn announce_left(&self) {
        self.left.send_replace(true);
    }

    /// Publishes that this node removes (`done` false) or has removed the
    /// node `host_id`.
    pub(crate) fn publish_removal(self: &Arc<Self>, host_id: [u8; 16], done: bool) {
        let text = {
            let mut removals = self.removals.lock().unwrap_or_else(|p| p.into_inner());
            removals.retain(|(id, _)| *id != host_id);
            removals.push((host_id, done));
            crate::gossip::format_removals(&removals)
        };
        self.runtime.block_on(async {
            self.gossip.set(crate::gossip::KEY_REMOVALS, text).await;
            self.refresh().await;
        });
    }

    pub fn status(&self) -> &'static str {
        *self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads gossip into a new topology: peers for system.peers, events
    /// for drivers, the local schema version for others to see.
    async fn refresh(self: &Arc<Self>) {
        let load = self.shared.engine.stats().sst_bytes;
        if self.published_load.swap(load, Ordering::Relaxed) != load {
            self.gossip
                .set(crate::gossip::KEY_LOAD, load.to_string())
                .await;
        }
        let disk_usage = self.executor.local_disk_usage().get();
        let published = std::mem::replace(
            &mut *self
                .published_disk_usage
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
            disk_usage,
        );
        if published != disk_usage {
            self.gossip
                .set(crate::gossip::KEY_DISK_USAGE, disk_usage.name().into())
                .await;
        }
        let views = self.gossip.view().await;
        let views_for_removals = views.clone();
        let next = Topology::new(self.config.broadcast_address, self.config.dc.clone(), views);
        let previous = self.shared.topology();
        self.emit_events(&previous, &next);
        let peers: Vec<PeerInfo> = next
            .nodes
            .values()
            .filter(|v| v.member.address != self.config.broadcast_address)
            .map(|v| PeerInfo {
                broadcast_address: v.member.address,
                rpc_address: v.rpc_address,
                native_port: v.native_port,
                data_center: v.member.dc.clone(),
                rack: v.member.rack.clone(),
                host_id: v.member.host_id,
                tokens: v.member.tokens.iter().map(|t| t.0).collect(),
                schema_version: v.schema_version,
            })
            .collect();
        self.executor.set_peers(peers);
        let newest = next
            .nodes
            .values()
            .filter(|v| v.alive)
            .map(|v| v.schema_epoch)
            .max()
            .unwrap_or(0);
        // Removals finished by others stay published here too, so a removed
        // node stays out of the ring whoever leaves later.
        let seen: Vec<[u8; 16]> = next_removed(&views_for_removals);
        let republish = {
            let mut removals = self.removals.lock().unwrap_or_else(|p| p.into_inner());
            for id in seen {
                if !removals.contains(&(id, true)) {
                    removals.retain(|(r, _)| *r != id);
                    removals.push((id, true));
                }
            }
            (published_removals(&next, self.config.broadcast_address) != *removals)
                .then(|| crate::gossip::format_removals(&removals))
        };
        if let Some(text) = republish {
            self.gossip.set(crate::gossip::KEY_REMOVALS, text).await;
        }
        self.shared.set_topology(next);
        let (epoch, version, _) = self.executor.schema_blob();
        let published = self
            .shared
            .topology()
            .nodes
            .get(&self.config.broadcast_address)
            .map(|v| (v.schema_epoch, v.schema_version));
        if published != Some((epoch, version)) {
            self.gossip
                .set(crate::gossip::KEY_SCHEMA_VERSION, hex::encode(version))
                .await;
            self.gossip
                .set(crate::gossip::KEY_SCHEMA_EPOCH, epoch.to_string())
                .await;
        }
        if newest > epoch {
            self.pull_newest_schema_async().await;
        }
    }

    fn emit_events(&self, previous: &Topology, next: &Topology) {
        let local = self.config.broadcast_address;
        let client_address = |v: &NodeView| SocketAddr::new(v.rpc_address, v.native_port);
        for (address, view) in &next.nodes {
            if *address == local {
                continue;
            }
            match previous.nodes.get(address) {
                None => {
                    if view.member.status == MemberStatus::Normal {
                        (self.events)(Event::TopologyChange {
                            change: TopologyChangeType::NewNode,
                            address: client_address(view),
                        });
                    }
                }
                Some(before) => {
                    if before.member.status != MemberStatus::Normal
                        && view.member.status == MemberStatus::Normal
                    {
                        (self.events)(Event::TopologyChange {
                            change: TopologyChangeType::NewNode,
                            address: client_address(view),
                        });
                    }
                    if before.alive != view.alive {
                        (self.events)(Event::StatusChange {
                            change: if view.alive {
                                StatusChangeType::Up
                            } else {
                                StatusChangeType::Down
                            },
                            address: client_address(view),
                        });
                    }
                }
            }
        }
        for (address, view) in &previous.nodes {
            if *address != local && !next.nodes.contains_key(address) {
                (self.events)(Event::TopologyChange {
                    change: TopologyChangeType::RemovedNode,
                    address: client_address(view),
                });
            }
        }
    }

    async fn pull_newest_schema_async(self: &Arc<Self>) {
        if self.pulling_schema.swap(true, Ordering::AcqRel) {
            return;
        }
        let node = self.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(e) = node.schema.pull_newest() {
                tracing::warn!("cannot pull the newest schema: {e}");
            }
            node.pulling_schema.store(false, Ordering::Release);
        })
        .await;
    }

    fn handle(self: &Arc<Self>, from: IpAddr, request: Request) -> Response {
        let request = match self.schema.handle(from, request) {
            Ok(response) => return response,
            Err(other) => other,
        };
        match request {
            Request::Truncate { keyspace, table } => {
                match self.executor.truncate_here(&keyspace, &table) {
                    Ok(()) => Response::Ack,
                    Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
                }
            }
            Request::StoreHint {
                host,
                written_at_micros,
                mutations,
            } => match self.shared.hints.store(host, written_at_micros, &mutations) {
                Ok(_) => Response::Ack,
                Err(e) => Response::Error(RemoteError::Failed(format!("cannot keep a hint: {e}"))),
            },
            request @ Request::StreamFrom { .. } => self.serve_streaming(request),
            request => {
                let base = self.config.data_dir.join(STREAMING_DIR);
                match self.stream_server.serve(
                    &*self.shared.engine,
                    &self.stream_throttle,
                    from,
                    request,
                    &base,
                ) {
                    Ok(response) => response,
                    Err(other) => Response::Error(RemoteError::Invalid(format!(
                        "unexpected request {other:?}"
                    ))),
                }
            }
        }
    }

    pub(crate) fn streaming_dir(&self, direction: &str, table: TableId) -> PathBuf {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        self.config.data_dir.join(STREAMING_DIR).join(format!(
            "{direction}-{}-{}",
            table.0,
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// Takes the data of this node's ranges from their current replicas
    /// (SST files written by the sources, ingested here).
    fn bootstrap(&self) -> Result<(), OperationError> {
        let topology = self.shared.topology();
        let schema = self.executor.schema();
        let local = self.config.broadcast_address;
        let started = Instant::now();
        let mut bytes = 0u64;
        for (keyspace, strategy) in crate::topology::replicated_keyspaces(&schema) {
            let by_source = crate::operations::bootstrap_sources(&topology, &strategy, local);
            for table in keyspace.storage_ids() {
                for (source, ranges) in &by_source {
                    bytes += self.pull_ranges("Bootstrap", *source, table, ranges)?;
                }
            }
        }
        let secs = started.elapsed().as_secs_f64().max(0.001);
        tracing::info!(
            "bootstrap streamed {bytes} bytes in {secs:.1} s ({:.1} MB/s)",
            bytes as f64 / secs / 1e6
        );
        Ok(())
    }

    /// Runs an operator command (the admin port's handler).
    pub fn admin(self: &Arc<Self>, command: AdminCommand) -> Response {
        let text = |result: crate::operations::Outcome| match result {
            Ok(t) => Response::Text(t),
            Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
        };
        if let Some(key) = crate::operations::operation_key(&command) {
            return text(
                self.running
                    .run_or_attach(key, || self.long_operation(command)),
            );
        }
        match command {
            AdminCommand::Netstats => Response::Text(self.netstats()),
            AdminCommand::GossipInfo => {
                crate::admin::gossip_info(&self.runtime.block_on(self.gossip.endpoint_states()))
            }
            AdminCommand::GetStreamThroughput { unit } => {
                crate::admin::stats::stream_throughput_line(self.stream_throttle.rate(), unit)
            }
            AdminCommand::SetStreamThroughput { value, unit } => {
                self.stream_throttle
                    .set_rate(crate::admin::stats::throughput_bytes(value, unit));
                Response::Text(String::new())
            }
            command @ (AdminCommand::Slow { .. }
            | AdminCommand::Failpoint { .. }
            | AdminCommand::Isolate { .. }) => self.fault_injection(command),
            other => crate::admin::run(&self.admin_node(), other),
        }
    }

    /// Runs one of the commands `operations::operation_key` names.
    fn long_operation(self: &Arc<Self>, command: AdminCommand) -> Result<String, OperationError> {
        match command {
            AdminCommand::Decommission { force } => self.decommission(force),
            AdminCommand::RemoveNode { host_id } => self.remove_node(&host_id),
            AdminCommand::Rebuild { source_dc } => self.rebuild(source_dc.as_deref()),
            AdminCommand::Repair {
                keyspace,
                tables,
                primary_range,
                range,
            } => self.repair(keyspace.as_deref(), &tables, primary_range, range),
            other => Err(OperationError::NotLong(Box::new(other))),
        }
    }

    /// The cluster's counters at this moment, for the metrics endpoint.
    /// Reads the hints directory's sizes: call it off the async threads.
    pub fn metrics(&self) -> crate::metrics::ClusterSnapshot {
        let hints = &self.shared.hints;
        let (sessions_in, sessions_out) = self.sessions.streamed.snapshot();
        let (served_in, served_out) = self.stream_server.streamed.snapshot();
        crate::metrics::ClusterSnapshot {
            dropped: self.dropped.snapshot(),
            hints_written: hints.counts.written.load(Ordering::Relaxed),
            hints_refused: hints.counts.refused.load(Ordering::Relaxed),
            hints_delivered: hints.counts.delivered.load(Ordering::Relaxed),
            hints_pending_bytes: hints.pending_bytes(),
            read_repairs: self.shared.read_repairs.load(Ordering::Relaxed),
            ann_searches_graph: self.ann_searches(|c| &c.graph),
            ann_searches_scan: self.ann_searches(|c| &c.scan),
            streamed_in_bytes: sessions_in.saturating_add(served_in),
            streamed_out_bytes: sessions_out.saturating_add(served_out),
            pools: self.stages.pools(),
        }
    }

    /// One count of this replica's ANN searches (`vector_search`).
    fn ann_searches(&self, count: fn(&AnnSearchCounts) -> &AtomicU64) -> u64 {
        let counts = self.shared.vectors.as_ref().map(|v| &*v.counts);
        counts.map_or(0, |c| count(c).load(Ordering::Relaxed))
    }

    /// This node as operator commands see it now.
    pub fn admin_node(&self) -> crate::admin::AdminNode {
        crate::admin::AdminNode::member(
            self.config.clone(),
            self.executor.clone(),
            self.shared.engine.clone(),
            self.compaction_throughput.clone(),
            crate::admin::MemberParts {
                topology: self.shared.topology(),
                status: self.status(),
                hints_pending: self.shared.hints.hosts().len(),
                stages: self.stages.clone(),
            },
        )
    }

    /// The test-only commands, in builds with the `fault-injection`
    /// feature (the test suites'); a release build refuses them, whoever
    /// sends them.
    #[cfg(feature = "fault-injection")]
    fn fault_injection(&self, command: AdminCommand) -> Response {
        match command {
            AdminCommand::Slow { millis } => {
                self.messaging
                    .slow(std::time::Duration::from_millis(millis));
                Response::Text(format!("answering other nodes {millis} ms late"))
            }
            AdminCommand::Failpoint { name } => match self.shared.arm_failpoint(&name) {
                Ok(()) => Response::Text(format!("failpoint {name} armed")),
                Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
            },
            AdminCommand::Isolate { peers } => {
                self.messaging.isolate(&peers);
                Response::Text(format!("isolated from {peers:?}"))
            }
            other => crate::admin::run(&self.admin_node(), other),
        }
    }

    #[cfg(not(feature = "fault-injection"))]
    fn fault_injection(&self, command: AdminCommand) -> Response {
        Response::Error(RemoteError::Failed(format!(
            "unknown command {command:?}: fault injection exists only in test builds"
        )))
    }

    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }

    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }
}

/// Host ids some node says it has removed.
fn next_removed(views: &[NodeView]) -> Vec<[u8; 16]> {
    let mut ids: Vec<[u8; 16]> = views
        .iter()
        .flat_map(|v| {
            v.removals
                .iter()
                .filter(|(_, done)| *done)
                .map(|(id, _)| *id)
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// What this node's gossip state says it removes.
fn published_removals(topology: &Topology, local: IpAddr) -> Vec<([u8; 16], bool)> {
    topology
        .nodes
        .get(&local)
        .map(|v| v.removals.clone())
        .unwrap_or_default()
}

async fn membership_loop(node: std::sync::Weak<ClusterNode>) {
    loop {
        tokio::time::sleep(MEMBERSHIP_PERIOD).await;
        let Some(node) = node.upgrade() else { return };
        node.refresh().await;
    }
}

fn hint_loop(node: std::sync::Weak<ClusterNode>) {
    loop {
        std::thread::sleep(HINT_REPLAY_PERIOD);
        let Some(node) = node.upgrade() else { return };
        let delivered = crate::hints::deliver(&node.shared, &|host| node.gossip_says_left(host));
        for (endpoint, result) in delivered {
            match result {
                Ok(n) if n > 0 => tracing::info!("replayed {n} hints to {endpoint}"),
                Ok(_) => {}
                Err(e) => tracing::warn!("cannot replay hints to {endpoint}: {e}"),
            }
        }
    }
}

fn batchlog_loop(node: std::sync::Weak<ClusterNode>) {
    loop {
        std::thread::sleep(crate::batchlog::REPLAY_PERIOD);
        let Some(node) = node.upgrade() else { return };
        node.replay_batchlog();
    }
}

impl ClusterNode {
    /// Replays the logged batches stored here whose coordinator did not
    /// remove them in time (it crashed, or its writes timed out): each is
    /// written again to every live replica (hints for the others), then
    /// removed. Mutations of tables dropped since are skipped.
    pub(crate) fn replay_batchlog(&self) {
        use crate::batchlog;
        let now_micros = rocksandra_data::time::system_micros();
        let now = rocksandra_data::LocalTime::of_micros(now_micros);
        let cutoff = now_micros.saturating_sub(batchlog::BATCHLOG_TIMEOUT.as_micros() as i64);
        let engine = &*self.shared.engine;
        let due = match batchlog::due(engine, cutoff, now, batchlog::REPLAY_PER_ROUND) {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!("cannot read the batchlog: {e}");
                return;
            }
        };
        if due.is_empty() {
            return;
        }
        let schema = self.executor.schema();
        let coordinator = Coordinator::new(self.shared.clone());
        let mut replayed = 0;
        for (id, entry) in due {
            let (written_at, done) = match entry {
                Err(e) => {
                    tracing::warn!("dropping an unreadable batchlog entry: {e}");
                    (i64::MAX - 1, true)
                }
                Ok(entry) => {
                    let mutations: Vec<_> = entry
                        .mutations
                        .into_iter()
                        .filter(|m| schema.keyspace_by_storage_id(m.table).is_some())
                        .collect();
                    let options = rocksandra_query::proxy::WriteOptions {
                        consistency: rocksandra_wire::Consistency::One,
                        write_type: rocksandra_wire::WriteType::Batch,
                        now: entry.now,
                    };
                    let done = mutations.is_empty()
                        || match coordinator.write_unlogged(&schema, mutations, &options) {
                            Ok(()) => true,
                            Err(e) => {
                                tracing::info!("batch replay failed, retried later: {e}");
                                false
                            }
                        };
                    (entry.written_at_micros, done)
                }
            };
            if done {
                replayed += 1;
                if let Err(e) = batchlog::remove(engine, id, written_at, now) {
                    tracing::warn!("cannot remove a replayed batch: {e}");
                }
            }
        }
        tracing::info!("replayed {replayed} logged batches from the batchlog");
    }
}
