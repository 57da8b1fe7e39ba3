//! Opening a node: its identity (host id, tokens) kept in the data
//! directory, the RocksDB engine, and the executor over them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksandra_data::LocalTime;
use rocksandra_query::guardrails::{partition_violation, Guardrails};
use rocksandra_query::{Env, Executor, NodeInfo};
use rocksandra_storage::partition_guard::{
    Limits, Measure, PartitionGuard, PartitionThresholds, Violation,
};
use rocksandra_storage::{Durability, Engine};
use serde::{Deserialize, Serialize};

use crate::config::{CommitlogSync, Config, ValueError};
use crate::disk_usage::DiskUsageError;

/// Why a node could not open, join its cluster or start its threads; the
/// server prints these words before it exits.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("cannot create {}: {source}", dir.display())]
    CreateDirectory {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    IdentityUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    IdentityMalformed {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{0}")]
    IdentityEncoding(#[source] serde_json::Error),
    #[error("cannot write {}: {source}", path.display())]
    IdentityUnwritable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open storage in {}: {source}", dir.display())]
    Storage {
        dir: PathBuf,
        source: rocksandra_storage::StorageError,
    },
    /// The executor could not open (its stored schema).
    #[error("{0}")]
    Executor(#[source] rocksandra_query::QueryError),
    #[error("cannot set up authentication: {0}")]
    Authentication(#[source] rocksandra_query::QueryError),
    /// A background thread ("the tombstone purge thread", ...).
    #[error("cannot start {what}: {source}")]
    Thread {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("{0}")]
    DiskUsage(#[from] DiskUsageError),
    #[error("{0}")]
    Seeds(#[from] ValueError),
    #[error("{0}")]
    InternodeTls(#[from] crate::transport::tls::TlsConfigError),
    #[error("{0}")]
    Cluster(#[from] rocksandra_cluster::node::StartError),
}

impl NodeError {
    fn thread(what: &'static str) -> impl FnOnce(std::io::Error) -> NodeError {
        move |source| NodeError::Thread { what, source }
    }
}

/// What a node keeps about itself across restarts (`node.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeIdentity {
    pub host_id: [u8; 16],
    pub tokens: Vec<i64>,
}

const NODE_FILE: &str = "node.json";

impl NodeIdentity {
    /// Reads the identity of `dir`, or creates one (random host id and
    /// `num_tokens` random tokens; no tokens when `num_tokens` is 0, for a
    /// cluster to allocate) and stores it.
    pub fn load_or_create(
        dir: &Path,
        num_tokens: u32,
        random: &dyn Fn() -> u64,
    ) -> Result<NodeIdentity, NodeError> {
        let path = dir.join(NODE_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|source| NodeError::IdentityMalformed { path, source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let host_id = rocksandra_data::uuid::random_v4(random);
                let mut tokens: Vec<i64> = (0..num_tokens)
                    .map(|_| random() as i64)
                    .filter(|t| *t != i64::MIN)
                    .collect();
                tokens.sort_unstable();
                tokens.dedup();
                let identity = NodeIdentity { host_id, tokens };
                identity.store(dir)?;
                Ok(identity)
            }
            Err(source) => Err(NodeError::IdentityUnreadable { path, source }),
        }
    }
}

impl NodeIdentity {
    /// Writes `node.json` atomically.
    pub fn store(&self, dir: &Path) -> Result<(), NodeError> {
        let bytes = serde_json::to_vec_pretty(self).map_err(NodeError::IdentityEncoding)?;
        rocksandra_storage::fs::write_atomically(dir, NODE_FILE, &bytes).map_err(|source| {
            NodeError::IdentityUnwritable {
                path: dir.join(NODE_FILE),
                source,
            }
        })
    }
}

/// The data directory: the first of `data_file_directories`.
pub fn data_dir(config: &Config) -> PathBuf {
    config
        .data_file_directories
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from(crate::config::DATA_DIRECTORY_DEFAULT))
}

/// How often partition deletions and range tombstones that compactions found
/// past gc_grace are pushed down and purged (`Engine::purge_tombstones`).
pub const TOMBSTONE_PURGE_PERIOD: std::time::Duration = std::time::Duration::from_secs(60);

fn local_clock(env: &Env) -> rocksandra_storage::memory::Clock {
    let now = env.now_micros.clone();
    Arc::new(move || LocalTime(now().div_euclid(1_000_000)))
}

/// A background thread that ends once the engine is dropped.
fn spawn_tombstone_purger(
    engine: &Arc<dyn Engine>,
    clock: rocksandra_storage::memory::Clock,
) -> Result<(), NodeError> {
    let engine = Arc::downgrade(engine);
    std::thread::Builder::new()
        .name("tombstone-purge".into())
        .spawn(move || loop {
            std::thread::sleep(TOMBSTONE_PURGE_PERIOD);
            let Some(engine) = engine.upgrade() else {
                return;
            };
            if let Err(e) = engine.purge_tombstones(clock()) {
                eprintln!("rocksandra: purging tombstones failed: {e}");
            }
        })
        .map(drop)
        .map_err(NodeError::thread("the tombstone purge thread"))
}

/// An opened node: the executor, and the storage under it (which the
/// metrics endpoint asks for its figures).
pub struct Node {
    pub executor: Arc<Executor>,
    pub storage: Arc<dyn Engine>,
    pub identity: NodeIdentity,
    pub dir: PathBuf,
    /// Puts guardrails in force while the node runs.
    pub apply_guardrails: ApplyGuardrails,
}

/// Puts guardrails in force while the node runs (`nodetool
/// setguardrailsconfig`): the executor's, and the partition guardrails of
/// the storage engine's compactions.
pub type ApplyGuardrails = Arc<dyn Fn(Guardrails) + Send + Sync>;

/// Opens storage and the executor for `config`.
pub fn open(config: &Config) -> Result<Node, NodeError> {
    let dir = data_dir(config);
    std::fs::create_dir_all(&dir).map_err(|source| NodeError::CreateDirectory {
        dir: dir.clone(),
        source,
    })?;
    let env = Env::system();
    // In a cluster, tokens are allocated once the ring is known.
    let num_tokens = if config.clustered {
        0
    } else {
        config.num_tokens.max(1)
    };
    let identity = NodeIdentity::load_or_create(&dir, num_tokens, &*env.random)?;
    let clock = local_clock(&env);
    let rocks = rocks_config(config);
    let rocks = Arc::new(
        rocksandra_storage_rocksdb::open_engine(&dir.join("rocksdb"), rocks, clock).map_err(
            |source| NodeError::Storage {
                dir: dir.clone(),
                source,
            },
        )?,
    );
    let engine: Arc<dyn Engine> = rocks.clone();
    // Before the start's own writes (system tables, the default role): the
    // sequence number saved ANN graphs must have been saved at.
    let sequence_at_open = engine.latest_sequence_number();
    let node = NodeInfo {
        cluster_name: config.cluster_name.clone(),
        listen_address: config.listen_address,
        broadcast_address: config.advertised_address(),
        rpc_address: config.advertised_rpc_address(),
        native_port: config.native_transport_port,
        storage_port: config.storage_port,
        data_center: config.data_center.clone(),
        rack: config.rack.clone(),
        host_id: identity.host_id,
        tokens: identity.tokens.clone(),
        peers: Vec::new(),
    };
    spawn_tombstone_purger(&engine, local_clock(&env))?;
    let executor = Executor::open(engine.clone(), Some(dir.clone()), node, env)
        .map_err(NodeError::Executor)?;
    // Every node keeps the graphs of its own data, in a cluster too (its
    // replica answers ANN searches from them; the cluster's engine hook
    // feeds them once it starts).
    executor.start_vector_graphs(sequence_at_open);
    executor.enable_password_authentication(rocksandra_query::auth::AuthConfig {
        password_authenticator: config.authenticator == crate::config::Authenticator::Password,
        cassandra_authorizer: config.authorizer == crate::config::Authorizer::Cassandra,
        bcrypt_cost: config.auth_bcrypt_gensalt_log2_rounds,
        read_consistency: config.auth_read_consistency_level,
        write_consistency: config.auth_write_consistency_level,
    });
    executor.configure_auth_caches(config.auth_caches);
    // A node alone has no peers to wait for: its default role is set up
    // now, so that cassandra/cassandra logs in as soon as the port opens.
    // A node of a cluster does it once it has joined
    // (`schedule_default_role_setup`).
    if !config.clustered {
        executor
            .setup_default_role()
            .map_err(NodeError::Authentication)?;
    }
    executor.set_materialized_views_enabled(config.materialized_views_enabled);
    executor.set_drop_compact_storage_enabled(config.drop_compact_storage_enabled);
    executor.set_user_defined_functions_enabled(config.user_defined_functions_enabled);
    executor.set_dynamic_data_masking_enabled(config.dynamic_data_masking_enabled);
    executor.set_guardrails(config.guardrails);
    executor.set_auto_snapshot(config.auto_snapshot.then(|| dir.join("snapshots")));
    executor.set_tombstone_thresholds(config.tombstone_thresholds);
    executor.set_read_thresholds(config.read_thresholds);
    executor.set_read_timeouts(rocksandra_query::deadline::ReadTimeouts {
        read: config.request_timeouts.read,
        range: config.request_timeouts.range,
    });
    executor.set_prepared_cache_bytes(config.prepared_statements_cache_bytes);
    let executor = Arc::new(executor);
    spawn_auth_cache_refresher(&executor)?;
    crate::disk_usage::spawn_monitor(&executor, &engine, &dir, config)?;
    let guard = partition_guard(&config.guardrails, &executor);
    rocks.store().set_partition_guard(guard);
    let apply_guardrails: ApplyGuardrails = {
        let executor = executor.clone();
        Arc::new(move |guardrails: Guardrails| {
            executor.set_guardrails(guardrails);
            let guard = partition_guard(&guardrails, &executor);
            rocks.store().set_partition_guard(guard);
        })
    };
    Ok(Node {
        executor,
        storage: engine,
        identity,
        dir,
        apply_guardrails,
    })
}

/// The `partition_size` and `partition_tombstones` guardrails for the
/// engine's compactions (None when neither is set): a partition past one
/// is logged in Cassandra's words, naming it through the executor's schema.
fn partition_guard(guardrails: &Guardrails, executor: &Arc<Executor>) -> Option<PartitionGuard> {
    let limits = |t: rocksandra_query::guardrails::Threshold| Limits {
        warn: u64::try_from(t.warn).ok().filter(|w| *w > 0),
        fail: u64::try_from(t.fail).ok().filter(|f| *f > 0),
    };
    let thresholds = PartitionThresholds {
        size: limits(guardrails.partition_size),
        tombstones: limits(guardrails.partition_tombstones),
    };
    if !thresholds.is_set() {
        return None;
    }
    let executor = Arc::downgrade(executor);
    let report = move |v: &Violation| {
        let Some(executor) = executor.upgrade() else {
            return;
        };
        let what = executor.partition_name(v.table, &v.key);
        let tombstones = v.measure == Measure::Tombstones;
        let line = partition_violation(&what, tombstones, (v.value, v.threshold), v.failure);
        if v.failure {
            tracing::error!("{line}");
        } else {
            tracing::warn!("{line}");
        }
    };
    Some(PartitionGuard {
        thresholds,
        report: Arc::new(report),
    })
}

/// The longest the auth cache refresher waits at a time (it holds the
/// executor while it waits).
const AUTH_REFRESH_WAIT_MAX: Duration = Duration::from_secs(1);

/// The auth caches' background reloads, on one thread: the entries that
/// lookups found due for refresh, as soon as they are queued (Caffeine's
/// `refreshAfterWrite`), and with `*_cache_active_update` every entry of
/// those caches every update interval (Cassandra's `CacheRefresher`). It
/// ends with the executor.
fn spawn_auth_cache_refresher(executor: &Arc<Executor>) -> Result<(), NodeError> {
    let active = executor.auth_cache_refresh_interval();
    let executor = Arc::downgrade(executor);
    let mut last_active = Instant::now();
    std::thread::Builder::new()
        .name("auth-cache-refresh".into())
        .spawn(move || loop {
            let Some(executor) = executor.upgrade() else {
                return;
            };
            let wait = active.map_or(AUTH_REFRESH_WAIT_MAX, |a| a.min(AUTH_REFRESH_WAIT_MAX));
            if executor.wait_for_due_auth_entries(wait) {
                executor.reload_due_auth_entries();
            }
            if active.is_some_and(|interval| last_active.elapsed() >= interval) {
                last_active = Instant::now();
                executor.refresh_auth_caches();
            }
        })
        .map(drop)
        .map_err(NodeError::thread("the auth cache refresher"))
}

/// What the cluster layer (and nodetool's port) needs of the configuration
/// and of this node; the storage port's TLS is read here.
pub fn cluster_config(
    config: &Config,
    node: &Node,
) -> Result<rocksandra_cluster::ClusterConfig, NodeError> {
    Ok(rocksandra_cluster::ClusterConfig {
        cluster_name: config.cluster_name.clone(),
        endpoint_snitch: config.endpoint_snitch.clone(),
        broadcast_address: config.advertised_address(),
        listen_address: config.listen_address,
        listen_on_broadcast_address: config.listen_on_broadcast_address,
        storage_port: config.storage_port,
        seeds: config.seed_addresses()?,
        dc: config.data_center.clone(),
        rack: config.rack.clone(),
        host_id: node.identity.host_id,
        tokens: node
            .identity
            .tokens
            .iter()
            .map(|t| rocksandra_data::Token(*t))
            .collect(),
        num_tokens: config.num_tokens.max(1) as usize,
        rpc_address: config.advertised_rpc_address(),
        native_port: config.native_transport_port,
        data_dir: node.dir.clone(),
        auto_bootstrap: config.auto_bootstrap,
        hint_window: config
            .hinted_handoff_enabled
            .then_some(config.max_hint_window),
        timeouts: config.request_timeouts,
        hints_dir: config
            .hints_directory
            .clone()
            .unwrap_or_else(|| node.dir.join("hints")),
        compaction_throughput_mib: config.compaction_throughput_bytes.map_or(0, |bytes| {
            u32::try_from(bytes.div_ceil(1 << 20)).unwrap_or(u32::MAX)
        }),
        tls: crate::transport::tls::internode_tls(&config.server_encryption)?.map(Arc::new),
        stream_throughput_bytes: config.stream_throughput_bytes,
    })
}

/// Joins the cluster `cluster` names (gossip, internode messaging, the
/// coordinator), keeping the tokens a new node was given.
pub async fn join_cluster(
    cluster: rocksandra_cluster::ClusterConfig,
    node: &Node,
    events: rocksandra_cluster::EventSink,
) -> Result<Arc<rocksandra_cluster::ClusterNode>, NodeError> {
    let joined = rocksandra_cluster::ClusterNode::start(
        cluster,
        node.storage.clone(),
        node.executor.clone(),
        events,
    )
    .await?;
    let tokens: Vec<i64> = joined.tokens.iter().map(|t| t.0).collect();
    if tokens != node.identity.tokens {
        NodeIdentity {
            host_id: node.identity.host_id,
            tokens: tokens.clone(),
        }
        .store(&node.dir)?;
        node.executor.set_tokens(tokens);
    }
    Ok(joined)
}

/// Cassandra's `scheduleSetupTask`: waits `delay`, then runs `attempt`
/// until it succeeds, waiting `delay` again after each failure. `attempt`
/// returns None once there is nothing left to do it for (the node
/// stopped). Returns how many attempts ran.
pub fn retry_after_delay<E: std::fmt::Display>(
    delay: std::time::Duration,
    sleep: &mut dyn FnMut(std::time::Duration),
    attempt: &mut dyn FnMut() -> Option<Result<(), E>>,
) -> usize {
    let mut attempts = 0;
    loop {
        sleep(delay);
        attempts += 1;
        match attempt() {
            None | Some(Ok(())) => return attempts,
            Some(Err(e)) => {
                tracing::warn!("CassandraRoleManager skipped default role setup: {e}");
                tracing::info!("Setup task failed with error, rescheduling");
            }
        }
    }
}

/// In a cluster, once the node has joined: after `delay`, the default
/// superuser is created if no role exists in the cluster
/// (`Executor::setup_default_role`, through the coordinator), retried
/// every `delay` until the cluster answers. A background thread that ends
/// with the executor.
pub fn schedule_default_role_setup(
    executor: &Arc<Executor>,
    delay: std::time::Duration,
) -> Result<(), NodeError> {
    if !executor.auth_config().password_authenticator {
        return Ok(());
    }
    let executor = Arc::downgrade(executor);
    std::thread::Builder::new()
        .name("default-role-setup".into())
        .spawn(move || {
            retry_after_delay(delay, &mut std::thread::sleep, &mut || {
                let executor = executor.upgrade()?;
                Some(executor.setup_default_role().map(drop))
            });
        })
        .map(drop)
        .map_err(NodeError::thread("the default role setup"))
}

/// The RocksDB settings `config` asks for; the storage defaults for the rest.
pub fn rocks_config(config: &Config) -> rocksandra_storage_rocksdb::RocksConfig {
    use rocksandra_storage_rocksdb::{background_jobs_for_compactions, RocksConfig};
    let defaults = RocksConfig::default();
    let to_usize = |bytes: u64| usize::try_from(bytes).unwrap_or(usize::MAX);
    let block_cache = block_cache_bytes(config);
    RocksConfig {
        durability: match config.commitlog_sync {
            CommitlogSync::Batch => Durability::Batch,
            CommitlogSync::Periodic => Durability::Periodic {
                period_ms: config.commitlog_sync_period.as_millis().max(1) as u64,
            },
        },
        block_cache_bytes: to_usize(block_cache),
        point_cache_bytes: to_usize(
            config
                .point_cache_bytes
                .unwrap_or_else(|| crate::config::point_cache_default(block_cache)),
        ),
        write_buffer_bytes_max: config
            .memtable_space_bytes
            .map_or(defaults.write_buffer_bytes_max, to_usize),
        background_jobs: config
            .concurrent_compactors
            .map_or(defaults.background_jobs, |n| {
                background_jobs_for_compactions(i32::try_from(n).unwrap_or(i32::MAX))
            }),
        wal_dir: config.commitlog_directory.clone(),
        write_rate_limit_bytes: config.compaction_throughput_bytes,
        ..defaults
    }
}

/// The configured block cache, or one sized from the machine's memory
/// (`MemTotal` of /proc/meminfo; the smallest default where it cannot be read).
fn block_cache_bytes(config: &Config) -> u64 {
    config.block_cache_bytes.unwrap_or_else(|| {
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| meminfo_total_bytes(&text))
            .unwrap_or(0);
        crate::config::block_cache_default(total)
    })
}

/// `MemTotal` of /proc/meminfo, in bytes.
fn meminfo_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod default_role_tests {
    use super::retry_after_delay;
    use std::time::Duration;

    #[test]
    fn the_setup_waits_the_delay_before_each_attempt_until_one_succeeds() {
        let delay = Duration::from_millis(10_000);
        let mut slept = Vec::new();
        let mut answers = vec![
            Some(Err("some nodes were not ready")),
            Some(Err("some nodes were not ready")),
            Some(Ok(())),
        ]
        .into_iter();
        let attempts = retry_after_delay(delay, &mut |d| slept.push(d), &mut || {
            answers.next().flatten()
        });
        assert_eq!(attempts, 3);
        assert_eq!(slept, vec![delay; 3]);
    }

    #[test]
    fn the_setup_stops_once_the_node_is_gone() {
        let mut slept = 0;
        let attempts = retry_after_delay(Duration::ZERO, &mut |_| slept += 1, &mut || {
            None::<Result<(), &str>>
        });
        assert_eq!((attempts, slept), (1, 1));
    }
}

#[cfg(test)]
mod memory_tests {
    use super::meminfo_total_bytes;

    #[test]
    fn total_memory_is_read_from_meminfo() {
        let text = "MemTotal:       24634480 kB\nMemFree:        1000 kB\n";
        assert_eq!(meminfo_total_bytes(text), Some(24_634_480 * 1024));
        assert_eq!(meminfo_total_bytes("MemFree: 1 kB\n"), None);
        assert_eq!(meminfo_total_bytes("MemTotal: x kB\n"), None);
    }
}

#[cfg(test)]
mod rocks_config_tests {
    use super::rocks_config;
    use crate::config::Config;
    use std::path::PathBuf;

    fn rocks(yaml: &str) -> rocksandra_storage_rocksdb::RocksConfig {
        match Config::from_yaml(yaml, "rocksandra.yaml") {
            Ok(config) => rocks_config(&config),
            Err(e) => panic!("{yaml}: {e}"),
        }
    }

    #[test]
    fn storage_keys_set_the_rocksdb_options() {
        let defaults = rocksandra_storage_rocksdb::RocksConfig::default();
        let plain = rocks("block_cache_size: 64MiB\n");
        assert_eq!(plain.block_cache_bytes, 64 << 20);
        assert_eq!(
            plain.point_cache_bytes,
            16 << 20,
            "a quarter of the block cache"
        );
        let cached = rocks("block_cache_size: 64MiB\npoint_cache_size: 0MiB\n");
        assert_eq!(cached.point_cache_bytes, 0, "0MiB turns it off");
        assert_eq!(
            plain.write_buffer_bytes_max,
            defaults.write_buffer_bytes_max
        );
        assert_eq!(plain.background_jobs, defaults.background_jobs);
        assert_eq!((plain.wal_dir, plain.write_rate_limit_bytes), (None, None));
        let tuned = rocks(
            "block_cache_size: 64MiB\ncommitlog_directory: /fast/wal\n\
             memtable_heap_space_in_mb: 96\nmemtable_offheap_space: 32MiB\n\
             compaction_throughput: 24MiB/s\nconcurrent_compactors: 6\n",
        );
        assert_eq!(tuned.wal_dir, Some(PathBuf::from("/fast/wal")));
        assert_eq!(tuned.write_buffer_bytes_max, 128 << 20);
        assert_eq!(tuned.write_rate_limit_bytes, Some(24 << 20));
        assert_eq!(tuned.background_jobs, 7, "6 compactions and 1 flush");
        assert_eq!(
            rocks("compaction_throughput: 0B/s\n").write_rate_limit_bytes,
            None
        );
    }
}
