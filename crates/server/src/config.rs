//! Node configuration: the `rocksandra.yaml` file (keys named as in
//! `cassandra.yaml`), its defaults, Cassandra's duration and data-size
//! strings, and the command-line flags that override the file.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use rocksandra_cluster::coordinator::Timeouts;
use rocksandra_query::read_thresholds::{self, ReadThresholds, SizeThresholds};
use rocksandra_wire::Consistency;
use serde::Deserialize;
use thiserror::Error;

mod auth_caches;
mod cassandra_keys;
mod encryption;
mod guardrails;
pub(crate) use guardrails::runtime as guardrails_runtime;
mod interfaces;
pub mod reference;
pub use encryption::{
    ClientAuth, EncryptionOptions, PemSource, ServerEncryption, TlsPolicy, TlsVersion, CLIENT_KEY,
    PEM_SSL_CONTEXT_FACTORY, SERVER_KEY,
};

/// `cluster_name` when none is configured (Cassandra's default).
pub const CLUSTER_NAME_DEFAULT: &str = "Test Cluster";
/// `native_transport_port` when none is configured.
pub const NATIVE_TRANSPORT_PORT_DEFAULT: u16 = 9042;
/// `data_file_directories` when none is configured.
pub const DATA_DIRECTORY_DEFAULT: &str = "./data";
/// `commitlog_sync_period` when none is configured (Cassandra's 10s).
pub const COMMITLOG_SYNC_PERIOD_DEFAULT: Duration = Duration::from_secs(10);
/// Cassandra's `max_hint_window` default.
pub const MAX_HINT_WINDOW_DEFAULT: Duration = Duration::from_secs(3 * 3600);
/// Cassandra's `cassandra.superuser_setup_delay_ms` default.
pub const SUPERUSER_SETUP_DELAY_DEFAULT: Duration = Duration::from_secs(10);
/// `num_tokens` when none is configured (Cassandra 4+'s default).
pub const NUM_TOKENS_DEFAULT: u32 = 16;
/// Cassandra's `stream_throughput_outbound` default, 24MiB/s.
pub const DEFAULT_STREAM_THROUGHPUT_BYTES: u64 = 24 << 20;
/// Most `num_tokens` accepted; more vnodes than this only costs memory.
pub const NUM_TOKENS_MAX: u32 = 1024;
/// `native_transport_max_frame_size` when none is configured (16 MiB).
pub const MAX_FRAME_BYTES_DEFAULT: u64 = rocksandra_wire::MAX_FRAME_BYTES_DEFAULT;
/// Smallest `native_transport_max_frame_size`: below this even a STARTUP
/// or a short QUERY does not fit.
pub const MAX_FRAME_BYTES_MIN: u64 = 4 * 1024;
/// Largest `native_transport_max_frame_size`: the frame length field is an i32.
pub const MAX_FRAME_BYTES_MAX: u64 = i32::MAX as u64;
/// Client connections served at once when `native_transport_max_concurrent_connections`
/// is unset or -1 (Cassandra's "unlimited"): we always keep a bound, because every
/// connection holds buffers and a task.
pub const MAX_CONNECTIONS_DEFAULT: usize = 1024;
/// Requests in flight on one connection before further ones get OVERLOADED.
/// Above the Java driver's default of 1024 requests per connection.
pub const MAX_REQUESTS_PER_CONNECTION_DEFAULT: usize = 2048;
/// Requests in flight over all connections before further ones get OVERLOADED.
pub const MAX_REQUESTS_DEFAULT: usize = 16_384;
/// `native_transport_max_request_data_in_flight` when unset. Cassandra takes
/// a tenth of the JVM heap; we have no heap, so a fixed 256 MiB: what
/// Cassandra picks for a 2.5 GiB heap, sixteen default-sized (16 MiB) frames.
pub const MAX_REQUEST_BYTES_IN_FLIGHT_DEFAULT: u64 = 256 * 1024 * 1024;
/// `native_transport_max_request_data_in_flight_per_ip` when unset: a
/// quarter of the global default, as Cassandra's 1/40 of the heap is a
/// quarter of its 1/10.
pub const MAX_REQUEST_BYTES_IN_FLIGHT_PER_IP_DEFAULT: u64 = MAX_REQUEST_BYTES_IN_FLIGHT_DEFAULT / 4;
/// The smallest block cache `block_cache_default` picks.
pub const BLOCK_CACHE_BYTES_MIN: u64 = 256 * 1024 * 1024;
/// The share of the machine's memory the block cache gets when
/// `block_cache_size` is not set: RocksDB's cache holds uncompressed blocks,
/// the OS page cache the compressed files, and memtables, compactions and
/// the rest of the process need the remainder.
pub const BLOCK_CACHE_MEMORY_FRACTION: u64 = 4;
/// The block cache size when `block_cache_size` is not set: a quarter of
/// the machine's memory, at least `BLOCK_CACHE_BYTES_MIN`.
pub fn block_cache_default(total_memory_bytes: u64) -> u64 {
    (total_memory_bytes / BLOCK_CACHE_MEMORY_FRACTION).max(BLOCK_CACHE_BYTES_MIN)
}

/// The point cache's share of the block cache when `point_cache_size` is
/// not set.
pub const POINT_CACHE_BLOCK_CACHE_FRACTION: u64 = 4;
/// The point cache size when `point_cache_size` is not set: a quarter of
/// the block cache's.
pub fn point_cache_default(block_cache_bytes: u64) -> u64 {
    block_cache_bytes / POINT_CACHE_BLOCK_CACHE_FRACTION
}

/// `prometheus_address` when none is configured: metrics stay on this host
/// unless an operator opens them up.
pub const PROMETHEUS_ADDRESS_DEFAULT: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// `prometheus_port` when none is configured (ScyllaDB's); 0 turns the
/// metrics endpoint off.
pub const PROMETHEUS_PORT_DEFAULT: u16 = 9180;
/// `admin_address` when none is configured: nodetool from this host only.
pub const ADMIN_ADDRESS_DEFAULT: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// `admin_port` when none is configured (Cassandra's JMX port).
pub const ADMIN_PORT_DEFAULT: u16 = 7199;
/// Most `concurrent_compactors` accepted.
pub const CONCURRENT_COMPACTORS_MAX: i64 = 256;
/// `endpoint_snitch` when none is configured.
pub const ENDPOINT_SNITCH_DEFAULT: &str = "SimpleSnitch";
/// Data center of this node when none is configured (as SimpleSnitch reports it).
pub const DATA_CENTER_DEFAULT: &str = "datacenter1";
/// Rack of this node when none is configured (as SimpleSnitch reports it).
pub const RACK_DEFAULT: &str = "rack1";
/// Cassandra's `storage_port`.
pub const STORAGE_PORT_DEFAULT: u16 = 7000;
/// The seed provider class Cassandra ships, and the only one we know.
pub const SIMPLE_SEED_PROVIDER: &str = "org.apache.cassandra.locator.SimpleSeedProvider";

/// An invalid configuration: a bad file, a bad value, or an unknown key.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read configuration file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid configuration in {file}: {message}")]
    Parse { file: String, message: String },
    #[error(
        "Invalid yaml. Please remove properties [{keys}] from your {file}: \
         neither Rocksandra nor Cassandra 5.0 knows them"
    )]
    UnknownKeys { keys: String, file: String },
    #[error("invalid value for {key}: {message}")]
    InvalidValue { key: &'static str, message: String },
    /// A guardrail key's value, in Cassandra's words.
    #[error("Invalid guardrails configuration: {0}")]
    Guardrails(#[from] guardrails::GuardrailError),
    /// Two settings that contradict each other, in Cassandra's words.
    #[error("{0}")]
    Conflict(String),
    #[error("both {new_key} and its legacy form {legacy_key} are set; keep one")]
    BothSet {
        new_key: &'static str,
        legacy_key: &'static str,
    },
}

fn invalid(key: &'static str, message: impl ToString) -> ConfigError {
    ConfigError::InvalidValue {
        key,
        message: message.to_string(),
    }
}

/// A value that does not parse as its kind (a duration, a data size, a
/// seed address); the key it came from is added by the caller.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValueError {
    #[error("'{0}' is not a duration such as 10s or 10000ms")]
    NotADuration(String),
    #[error("'{0}' is not a data size such as 16MiB, 512KiB or 100B")]
    NotADataSize(String),
    #[error("'{0}' is not a data rate such as 64MiB/s, 512KiB/s or 0B/s")]
    NotADataRate(String),
    #[error("'{0}' is too large")]
    TooLarge(String),
    #[error("'{0}' is too long")]
    TooLong(String),
    #[error("'{0}' is zero: a log size limit must be at least 1B")]
    ZeroLogSize(String),
    #[error("seed {0:?} is not an IP address (or address:port)")]
    NotASeed(String),
}

/// How the commit log reaches the disk (`commitlog_sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommitlogSync {
    /// Acknowledge writes at once; sync every `commitlog_sync_period`.
    Periodic,
    /// Acknowledge writes only after they are synced.
    Batch,
}

/// Who may connect (`authenticator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authenticator {
    /// No login (Cassandra's default).
    AllowAll,
    /// SASL PLAIN, checked against the roles in `system_auth`.
    Password,
}

impl Authenticator {
    /// The Java class name sent in AUTHENTICATE, which drivers match on.
    pub fn class_name(self) -> &'static str {
        match self {
            Authenticator::AllowAll => "org.apache.cassandra.auth.AllowAllAuthenticator",
            Authenticator::Password => "org.apache.cassandra.auth.PasswordAuthenticator",
        }
    }

    fn parse(name: &str) -> Result<Authenticator, ConfigError> {
        match short_class_name(name) {
            "AllowAllAuthenticator" => Ok(Authenticator::AllowAll),
            "PasswordAuthenticator" => Ok(Authenticator::Password),
            _ => Err(invalid(
                "authenticator",
                format!("'{name}' (expected AllowAllAuthenticator or PasswordAuthenticator)"),
            )),
        }
    }
}

/// What an authenticated user may do (`authorizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authorizer {
    /// Everything (Cassandra's default).
    AllowAll,
    /// Permissions granted to roles, stored in `system_auth`.
    Cassandra,
}

impl Authorizer {
    fn parse(name: &str) -> Result<Authorizer, ConfigError> {
        match short_class_name(name) {
            "AllowAllAuthorizer" => Ok(Authorizer::AllowAll),
            "CassandraAuthorizer" => Ok(Authorizer::Cassandra),
            _ => Err(invalid(
                "authorizer",
                format!("'{name}' (expected AllowAllAuthorizer or CassandraAuthorizer)"),
            )),
        }
    }
}

/// `org.apache.cassandra.auth.PasswordAuthenticator` -> `PasswordAuthenticator`.
/// GossipingPropertyFileSnitch's file, read next to the yaml.
pub const RACKDC_FILE: &str = "cassandra-rackdc.properties";

/// `key=value` (or `key: value`) lines of a Java properties file, without
/// `#` and `!` comments; enough for cassandra-rackdc.properties.
fn java_properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with('!'))
        .filter_map(|line| {
            let split = line.find(['=', ':'])?;
            let (key, value) = line.split_at(split);
            Some((key.trim().to_string(), value[1..].trim().to_string()))
        })
        .collect()
}

fn short_class_name(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The seeds this node contacts to join a cluster (`seed_provider`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedProvider {
    pub class_name: String,
    /// `host` or `host:port` entries of the `seeds` parameter, trimmed.
    pub seeds: Vec<String>,
}

impl Default for SeedProvider {
    fn default() -> Self {
        SeedProvider {
            class_name: SIMPLE_SEED_PROVIDER.to_string(),
            seeds: vec!["127.0.0.1:7000".to_string()],
        }
    }
}

/// The validated configuration of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub cluster_name: String,
    /// Address this node listens on for other nodes (and for clients
    /// unless `rpc_address` is set).
    pub listen_address: IpAddr,
    /// What other nodes know this node by when it differs from
    /// `listen_address` (a node behind NAT): gossip, the ring,
    /// system.peers, system.local's broadcast_address.
    pub broadcast_address: Option<IpAddr>,
    /// Listen for other nodes on `broadcast_address` too
    /// (`listen_on_broadcast_address`).
    pub listen_on_broadcast_address: bool,
    /// Address for CQL clients when it differs from `listen_address`.
    pub rpc_address: Option<IpAddr>,
    /// The CQL address told to drivers (system.local, system.peers, gossip)
    /// when it differs from the one the node listens on: required with a
    /// wildcard `rpc_address`.
    pub broadcast_rpc_address: Option<IpAddr>,
    pub native_transport_port: u16,
    pub data_file_directories: Vec<PathBuf>,
    pub commitlog_sync: CommitlogSync,
    pub commitlog_sync_period: Duration,
    pub num_tokens: u32,
    pub seed_provider: SeedProvider,
    /// Seeds were given (`seed_provider` in the file, or `--seeds`): the
    /// node joins a cluster (gossip and internode messaging on
    /// `storage_port`). Without them it runs alone.
    pub clustered: bool,
    /// Port for other nodes (internode TCP, gossip UDP).
    pub storage_port: u16,
    /// A new node takes its ranges' data from the cluster before serving.
    pub auto_bootstrap: bool,
    /// Coordinators keep hints for down replicas (`hinted_handoff_enabled`)
    /// for at most `max_hint_window` of a replica's downtime.
    pub hinted_handoff_enabled: bool,
    pub max_hint_window: Duration,
    /// How long a coordinator waits for replicas (`read_request_timeout`,
    /// `write_request_timeout`, `range_request_timeout`,
    /// `cas_contention_timeout`, `truncate_request_timeout`).
    pub request_timeouts: Timeouts,
    pub authenticator: Authenticator,
    pub authorizer: Authorizer,
    pub endpoint_snitch: String,
    pub data_center: String,
    pub rack: String,
    /// Largest frame (header and body) a client may send.
    pub max_frame_bytes: u64,
    /// Client connections served at once.
    pub max_connections: usize,
    /// Requests in flight on one connection.
    pub max_requests_per_connection: usize,
    /// Requests in flight over all connections.
    pub max_requests: usize,
    /// Client connections from one IP address
    /// (`native_transport_max_concurrent_connections_per_ip`); None: no limit.
    pub max_connections_per_ip: Option<usize>,
    /// A connection without a byte read or written for this long is closed
    /// (`native_transport_idle_timeout`); None (`0ms`): never.
    pub idle_timeout: Option<Duration>,
    /// Bytes of requests being processed over all connections
    /// (`native_transport_max_request_data_in_flight`).
    pub max_request_bytes_in_flight: u64,
    /// The same, per client IP address
    /// (`native_transport_max_request_data_in_flight_per_ip`).
    pub max_request_bytes_in_flight_per_ip: u64,
    /// RocksDB block cache size (`block_cache_size`); None sizes it from
    /// the machine's memory at startup (`block_cache_default`).
    pub block_cache_bytes: Option<u64>,
    /// The point cache's size (`point_cache_size`); None: a quarter of the
    /// block cache (`point_cache_default`).
    pub point_cache_bytes: Option<u64>,
    /// Address of nodetool's port (`admin_address`).
    pub admin_address: IpAddr,
    /// Its port (`admin_port`); None when configured as 0 (no nodetool).
    /// `Some(0)`, which a file cannot ask for, binds a free port (tests).
    pub admin_port: Option<u16>,
    /// Address of the Prometheus metrics endpoint (`prometheus_address`).
    pub prometheus_address: IpAddr,
    /// Its port (`prometheus_port`); None when configured as 0, which turns
    /// the endpoint off. `Some(0)`, which a file cannot ask for, binds a
    /// free port (for tests; `Service::metrics_address` tells which).
    pub prometheus_port: Option<u16>,
    /// bcrypt cost of stored passwords (PasswordAuthenticator).
    pub auth_bcrypt_gensalt_log2_rounds: u32,
    /// The levels roles, role members and permissions are read and written
    /// at (`auth_read_consistency_level`, `auth_write_consistency_level`;
    /// the default superuser keeps QUORUM).
    pub auth_read_consistency_level: Consistency,
    pub auth_write_consistency_level: Consistency,
    /// The roles, permissions and credentials caches (`roles_validity`,
    /// `roles_update_interval`, `roles_cache_max_entries`, and the same for
    /// `permissions_*` and `credentials_*`).
    pub auth_caches: rocksandra_query::auth_cache::AuthCacheSettings,
    /// How long a node in a cluster waits after joining before it looks for
    /// roles and creates the default superuser if there is none, and
    /// between attempts (`superuser_setup_delay_ms`, Cassandra's system
    /// property `cassandra.superuser_setup_delay_ms`, 10 s).
    pub superuser_setup_delay: Duration,
    /// How often the data disk usage guardrails measure the data volume
    /// (`disk_usage_monitor_interval_ms`, Cassandra's system property
    /// `cassandra.disk_usage.monitor_interval_ms`, 30 s).
    pub disk_usage_monitor_interval: Duration,
    /// `data_disk_usage_max_disk_size` as written, for the message that
    /// refuses one larger than the data volume (the guardrails hold it in
    /// bytes).
    pub data_disk_usage_max_disk_size: Option<String>,
    /// TLS for CQL clients (`client_encryption_options`).
    pub client_encryption: EncryptionOptions,
    /// TLS between nodes (`server_encryption_options`).
    pub server_encryption: ServerEncryption,
    /// A snapshot before every DROP and TRUNCATE (`auto_snapshot`, true
    /// as in Cassandra).
    pub auto_snapshot: bool,
    /// `tombstone_warn_threshold` and `tombstone_failure_threshold`.
    pub tombstone_thresholds: rocksandra_query::tombstones::TombstoneThresholds,
    /// `read_thresholds_enabled` (false) and the `coordinator_read_size_*`,
    /// `local_read_size_*` and `row_index_read_size_*` thresholds (unset).
    pub read_thresholds: rocksandra_query::read_thresholds::ReadThresholds,
    /// CREATE MATERIALIZED VIEW is allowed (`materialized_views_enabled`,
    /// legacy `enable_materialized_views`; off by default, as in Cassandra).
    pub materialized_views_enabled: bool,
    /// ALTER TABLE ... DROP COMPACT STORAGE is allowed
    /// (`drop_compact_storage_enabled`, legacy `enable_drop_compact_storage`;
    /// off by default, as in Cassandra).
    pub drop_compact_storage_enabled: bool,
    /// CREATE FUNCTION and CREATE AGGREGATE are allowed
    /// (`user_defined_functions_enabled`, legacy
    /// `enable_user_defined_functions`; off by default, as in Cassandra).
    pub user_defined_functions_enabled: bool,
    /// Columns may be masked (`MASKED WITH`, `dynamic_data_masking_enabled`;
    /// off by default, as in Cassandra).
    pub dynamic_data_masking_enabled: bool,
    /// The prepared-statement cache's bound in bytes
    /// (`prepared_statements_cache_size`, legacy `_mb`; empty is Cassandra's
    /// "auto", 10 MiB here).
    pub prepared_statements_cache_bytes: u64,
    /// RocksDB's write-ahead log directory (`commitlog_directory`); None:
    /// inside the data directory.
    pub commitlog_directory: Option<PathBuf>,
    /// Where a coordinator keeps hints for down replicas
    /// (`hints_directory`); None: `hints` in the data directory.
    pub hints_directory: Option<PathBuf>,
    /// Memtable budget of all tables (`memtable_heap_space` plus
    /// `memtable_offheap_space`); None: the storage default.
    pub memtable_space_bytes: Option<u64>,
    /// Write rate of compactions and flushes (`compaction_throughput`);
    /// None (configured as 0): unthrottled.
    pub compaction_throughput_bytes: Option<u64>,
    /// Compactions at once (`concurrent_compactors`); None: the storage default.
    pub concurrent_compactors: Option<u32>,
    /// What a node sends in streams, bytes per second on average
    /// (`stream_throughput_outbound`); 0: unthrottled.
    pub stream_throughput_bytes: u64,
    /// Cassandra's guardrails (`config::guardrails`).
    pub guardrails: rocksandra_query::guardrails::Guardrails,
    /// Cassandra keys the file set that Rocksandra does not use, in file order.
    pub unused_keys: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cluster_name: CLUSTER_NAME_DEFAULT.to_string(),
            listen_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            broadcast_address: None,
            listen_on_broadcast_address: false,
            rpc_address: None,
            broadcast_rpc_address: None,
            native_transport_port: NATIVE_TRANSPORT_PORT_DEFAULT,
            data_file_directories: vec![PathBuf::from(DATA_DIRECTORY_DEFAULT)],
            commitlog_sync: CommitlogSync::Periodic,
            commitlog_sync_period: COMMITLOG_SYNC_PERIOD_DEFAULT,
            num_tokens: NUM_TOKENS_DEFAULT,
            seed_provider: SeedProvider::default(),
            clustered: false,
            storage_port: STORAGE_PORT_DEFAULT,
            auto_bootstrap: true,
            hinted_handoff_enabled: true,
            max_hint_window: MAX_HINT_WINDOW_DEFAULT,
            request_timeouts: Timeouts::default(),
            authenticator: Authenticator::AllowAll,
            authorizer: Authorizer::AllowAll,
            endpoint_snitch: ENDPOINT_SNITCH_DEFAULT.to_string(),
            data_center: DATA_CENTER_DEFAULT.to_string(),
            rack: RACK_DEFAULT.to_string(),
            max_frame_bytes: MAX_FRAME_BYTES_DEFAULT,
            max_connections: MAX_CONNECTIONS_DEFAULT,
            max_requests_per_connection: MAX_REQUESTS_PER_CONNECTION_DEFAULT,
            max_requests: MAX_REQUESTS_DEFAULT,
            max_connections_per_ip: None,
            idle_timeout: None,
            max_request_bytes_in_flight: MAX_REQUEST_BYTES_IN_FLIGHT_DEFAULT,
            max_request_bytes_in_flight_per_ip: MAX_REQUEST_BYTES_IN_FLIGHT_PER_IP_DEFAULT,
            block_cache_bytes: None,
            point_cache_bytes: None,
            admin_address: ADMIN_ADDRESS_DEFAULT,
            admin_port: Some(ADMIN_PORT_DEFAULT),
            prometheus_address: PROMETHEUS_ADDRESS_DEFAULT,
            prometheus_port: Some(PROMETHEUS_PORT_DEFAULT),
            auth_bcrypt_gensalt_log2_rounds: 10,
            auth_read_consistency_level: rocksandra_query::settings::DEFAULT_AUTH_READ_CONSISTENCY,
            auth_write_consistency_level:
                rocksandra_query::settings::DEFAULT_AUTH_WRITE_CONSISTENCY,
            auth_caches: Default::default(),
            superuser_setup_delay: SUPERUSER_SETUP_DELAY_DEFAULT,
            disk_usage_monitor_interval: crate::disk_usage::MONITOR_INTERVAL,
            data_disk_usage_max_disk_size: None,
            client_encryption: EncryptionOptions::default(),
            server_encryption: ServerEncryption::default(),
            auto_snapshot: true,
            tombstone_thresholds: Default::default(),
            read_thresholds: Default::default(),
            materialized_views_enabled: false,
            drop_compact_storage_enabled: false,
            user_defined_functions_enabled: false,
            dynamic_data_masking_enabled: false,
            prepared_statements_cache_bytes: rocksandra_query::prepared_cache::DEFAULT_LIMIT_BYTES,
            commitlog_directory: None,
            hints_directory: None,
            memtable_space_bytes: None,
            compaction_throughput_bytes: None,
            concurrent_compactors: None,
            stream_throughput_bytes: DEFAULT_STREAM_THROUGHPUT_BYTES,
            guardrails: rocksandra_query::guardrails::Guardrails::DEFAULT,
            unused_keys: Vec::new(),
        }
    }
}

impl Config {
    /// What other nodes know this node by: `broadcast_address`, else
    /// `listen_address`.
    pub fn advertised_address(&self) -> IpAddr {
        self.broadcast_address.unwrap_or(self.listen_address)
    }

    /// The CQL address drivers are told: `broadcast_rpc_address`, else
    /// `rpc_address`, else `listen_address`.
    pub fn advertised_rpc_address(&self) -> IpAddr {
        self.broadcast_rpc_address
            .or(self.rpc_address)
            .unwrap_or(self.listen_address)
    }

    /// The address CQL clients connect to: `rpc_address`, else `listen_address`.
    pub fn native_address(&self) -> SocketAddr {
        let ip = self.rpc_address.unwrap_or(self.listen_address);
        SocketAddr::new(ip, self.native_transport_port)
    }

    /// Where nodetool connects; None when the admin port is off.
    pub fn admin_listen_address(&self) -> Option<SocketAddr> {
        let port = self.admin_port?;
        Some(SocketAddr::new(self.admin_address, port))
    }

    /// Where the metrics endpoint listens; None when it is off.
    pub fn prometheus_listen_address(&self) -> Option<SocketAddr> {
        let port = self.prometheus_port?;
        Some(SocketAddr::new(self.prometheus_address, port))
    }

    /// Reads and validates a YAML file.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let file_name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut config = Config::from_yaml(&text, &file_name)?;
        let rackdc = path.with_file_name(RACKDC_FILE);
        if short_class_name(&config.endpoint_snitch) == "GossipingPropertyFileSnitch"
            && rackdc.exists()
        {
            config.apply_rackdc(&rackdc)?;
        }
        Ok(config)
    }

    /// The data centre and rack of `cassandra-rackdc.properties` (`dc=`,
    /// `rack=`), as GossipingPropertyFileSnitch reads them; they win over
    /// the yaml's `data_center` and `rack`.
    fn apply_rackdc(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let properties = java_properties(&text);
        for (key, slot) in [("dc", &mut self.data_center), ("rack", &mut self.rack)] {
            match properties.get(key) {
                Some(value) if !value.is_empty() => *slot = value.clone(),
                Some(_) => {
                    return Err(ConfigError::Parse {
                        file: RACKDC_FILE.to_string(),
                        message: format!("{key} is empty"),
                    })
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Parses and validates YAML text; `file_name` names it in errors.
    pub fn from_yaml(text: &str, file_name: &str) -> Result<Config, ConfigError> {
        let parse_error = |e: serde_norway::Error| ConfigError::Parse {
            file: file_name.to_string(),
            message: e.to_string(),
        };
        // An empty file (or one with only comments) is YAML null: all defaults.
        let value: serde_norway::Value = serde_norway::from_str(text).map_err(parse_error)?;
        if value.is_null() {
            return FileConfig::default().into_config();
        }
        // Deserializing from the text (not `value`) keeps key paths and line
        // numbers in serde_norway's error messages.
        let mut ignored = Vec::new();
        let deserializer = serde_norway::Deserializer::from_str(text);
        let file: FileConfig = serde_ignored::deserialize(deserializer, |path| {
            ignored.push(key_path(&path));
        })
        .map_err(parse_error)?;
        let (unused, unknown): (Vec<String>, Vec<String>) = ignored
            .into_iter()
            .partition(|key| cassandra_keys::is_cassandra_only(key));
        if !unknown.is_empty() {
            return Err(ConfigError::UnknownKeys {
                keys: unknown.join(", "),
                file: file_name.to_string(),
            });
        }
        let mut config = file.into_config()?;
        config.unused_keys = unused;
        Ok(config)
    }

    /// The one startup warning naming the Cassandra keys the file set that
    /// Rocksandra does not use; None when there are none.
    pub fn unused_keys_warning(&self) -> Option<String> {
        (!self.unused_keys.is_empty()).then(|| {
            format!(
                "cassandra.yaml keys accepted but not used by Rocksandra: {}",
                self.unused_keys.join(", ")
            )
        })
    }

    /// Loads the file named by `--config` (or the defaults) and applies the
    /// other flags on top.
    pub fn load(cli: &Cli) -> Result<Config, ConfigError> {
        let mut config = match &cli.config {
            Some(path) => Config::from_file(path)?,
            None => Config::default(),
        };
        config.apply_overrides(cli);
        config.check_addresses()?;
        Ok(config)
    }

    /// Flags win over the file.
    pub fn apply_overrides(&mut self, cli: &Cli) {
        if let Some(dir) = &cli.data_dir {
            self.data_file_directories = vec![dir.clone()];
        }
        if let Some(address) = cli.listen_address {
            self.listen_address = address;
        }
        if let Some(address) = cli.rpc_address {
            self.rpc_address = Some(address);
        }
        if let Some(port) = cli.native_port {
            self.native_transport_port = port;
        }
        if let Some(port) = cli.prometheus_port {
            self.prometheus_port = port_or_off(port);
        }
        if let Some(address) = cli.admin_address {
            self.admin_address = address;
        }
        if let Some(port) = cli.admin_port {
            self.admin_port = port_or_off(port);
        }
        if let Some(seeds) = &cli.seeds {
            self.seed_provider.seeds = split_seeds(seeds);
            self.clustered = true;
        }
        if let Some(dc) = &cli.dc {
            self.data_center = dc.clone();
        }
        if let Some(rack) = &cli.rack {
            self.rack = rack.clone();
        }
        if let Some(n) = cli.num_tokens {
            self.num_tokens = n;
        }
        if let Some(port) = cli.storage_port {
            self.storage_port = port;
        }
    }

    /// The seeds' internode addresses (`host` or `host:port`; the port
    /// defaults to this node's `storage_port`).
    pub fn seed_addresses(&self) -> Result<Vec<SocketAddr>, ValueError> {
        self.seed_provider
            .seeds
            .iter()
            .map(|s| {
                s.parse::<SocketAddr>()
                    .or_else(|_| {
                        s.parse::<IpAddr>()
                            .map(|ip| SocketAddr::new(ip, self.storage_port))
                    })
                    .map_err(|_| ValueError::NotASeed(s.clone()))
            })
            .collect()
    }
}

/// `seed_provider.0.extra` for an ignored key, without serde's `?` for options.
fn key_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => join_key(key_path(parent), &index.to_string()),
        Path::Map { parent, key } => join_key(key_path(parent), key),
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => key_path(parent),
    }
}

fn join_key(parent: String, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// `rocksandra --version`: the version and the build profile, which the
/// benchmark harness records with every result.
const LONG_VERSION: &str = if cfg!(debug_assertions) {
    concat!(env!("CARGO_PKG_VERSION"), " (debug build)")
} else {
    concat!(env!("CARGO_PKG_VERSION"), " (release build)")
};

/// `rocksandra [--config FILE] [--data-dir DIR] [--listen-address ADDR]
/// [--rpc-address ADDR] [--native-port PORT] [--prometheus-port PORT]`
#[derive(Debug, Clone, Default, PartialEq, Eq, Parser)]
#[command(
    name = "rocksandra",
    version,
    long_version = LONG_VERSION,
    about = "A Cassandra-compatible database on RocksDB"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// YAML configuration file (keys as in cassandra.yaml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Data directory (replaces data_file_directories).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Address for other nodes, and for CQL clients unless --rpc-address is given.
    #[arg(long, value_name = "ADDR")]
    pub listen_address: Option<IpAddr>,
    /// Address for CQL clients.
    #[arg(long, value_name = "ADDR")]
    pub rpc_address: Option<IpAddr>,
    /// Port for CQL clients (native_transport_port).
    #[arg(long, value_name = "PORT")]
    pub native_port: Option<u16>,
    /// Port of the Prometheus metrics endpoint (prometheus_port); 0 turns it off.
    #[arg(long, value_name = "PORT")]
    pub prometheus_port: Option<u16>,
    /// Address of nodetool's port (admin_address; each node on one machine
    /// needs its own address or port).
    #[arg(long, value_name = "ADDR")]
    pub admin_address: Option<IpAddr>,
    /// nodetool's port (admin_port, 7199); 0 turns it off.
    #[arg(long, value_name = "PORT")]
    pub admin_port: Option<u16>,
    /// Seeds to join a cluster through, comma-separated (`127.0.0.1` or
    /// `127.0.0.1:7000`); a node naming itself starts a new cluster.
    #[arg(long, value_name = "ADDRS")]
    pub seeds: Option<String>,
    /// Data center of this node.
    #[arg(long, value_name = "DC")]
    pub dc: Option<String>,
    /// Rack of this node.
    #[arg(long, value_name = "RACK")]
    pub rack: Option<String>,
    /// Tokens (vnodes) of a new node.
    #[arg(long, value_name = "N")]
    pub num_tokens: Option<u32>,
    /// Port for other nodes (storage_port).
    #[arg(long, value_name = "PORT")]
    pub storage_port: Option<u16>,
    /// Directory of `system.log` (rotated by size, as Cassandra's; default
    /// `$CASSANDRA_LOG_DIR` when set); without one, logs go to stderr only.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// How log lines are written: `text` or `json` (one object a line).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t)]
    pub log_format: crate::logging::LogFormat,
    /// `system.log` is rotated once past this size (logback's
    /// `maxFileSize`; default 50MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_log_size)]
    pub log_max_file_size: Option<u64>,
    /// Days of rotated log files kept (logback's `maxHistory`; default 7).
    #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..))]
    pub log_max_history: Option<u32>,
    /// The rotated log files together, at most; the oldest go first
    /// (logback's `totalSizeCap`; default 5GiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_log_size)]
    pub log_total_size_cap: Option<u64>,
}

/// A log size limit: a data size (`50MiB`), not zero.
fn parse_log_size(text: &str) -> Result<u64, ValueError> {
    match parse_data_size(text)? {
        0 => Err(ValueError::ZeroLogSize(text.to_string())),
        bytes => Ok(bytes),
    }
}

impl Cli {
    /// Where and how the node logs: `--log-dir`, else `CASSANDRA_LOG_DIR`
    /// as Cassandra's scripts read it (set and not empty).
    pub fn log_options(&self) -> crate::logging::LogOptions {
        self.log_options_with(std::env::var_os(crate::logging::LOG_DIR_VARIABLE))
    }

    fn log_options_with(&self, variable: Option<std::ffi::OsString>) -> crate::logging::LogOptions {
        let from_variable = variable.filter(|dir| !dir.is_empty()).map(PathBuf::from);
        let defaults = crate::logging::Rotation::default();
        crate::logging::LogOptions {
            dir: self.log_dir.clone().or(from_variable),
            format: self.log_format,
            rotation: crate::logging::Rotation {
                max_file_size: self.log_max_file_size.unwrap_or(defaults.max_file_size),
                max_history_days: self.log_max_history.unwrap_or(defaults.max_history_days),
                total_size_cap: self.log_total_size_cap.unwrap_or(defaults.total_size_cap),
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum Command {
    /// Operator commands against a running node, as Cassandra's nodetool
    /// (`rocksandra nodetool help` lists them).
    #[command(disable_help_flag = true, arg_required_else_help = true)]
    Nodetool(crate::nodetool::NodetoolArgs),
    /// Copies the schema and data of a live Cassandra cluster into a
    /// Rocksandra node over CQL, keeping write times and TTLs
    /// (docs/migration.md).
    Migrate(crate::migrate::MigrateArgs),
}

fn split_seeds(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The file as written: every key optional, legacy spellings included.
/// Unknown keys are caught by `serde_ignored` in `Config::from_yaml`, which
/// names them better than `deny_unknown_fields` would.
#[derive(Debug, Default, Deserialize)]
struct FileConfig {
    cluster_name: Option<String>,
    listen_address: Option<String>,
    listen_interface: Option<String>,
    listen_interface_prefer_ipv6: Option<bool>,
    broadcast_address: Option<String>,
    listen_on_broadcast_address: Option<bool>,
    rpc_address: Option<String>,
    rpc_interface: Option<String>,
    rpc_interface_prefer_ipv6: Option<bool>,
    broadcast_rpc_address: Option<String>,
    native_transport_port: Option<u16>,
    data_file_directories: Option<Vec<PathBuf>>,
    commitlog_sync: Option<CommitlogSync>,
    commitlog_sync_period: Option<String>,
    commitlog_sync_period_in_ms: Option<u64>,
    num_tokens: Option<u32>,
    seed_provider: Option<Vec<FileSeedProvider>>,
    authenticator: Option<ClassName>,
    authorizer: Option<ClassName>,
    endpoint_snitch: Option<String>,
    data_center: Option<String>,
    rack: Option<String>,
    native_transport_max_frame_size: Option<String>,
    native_transport_max_frame_size_in_mb: Option<u64>,
    native_transport_max_concurrent_connections: Option<i64>,
    native_transport_max_requests_per_connection: Option<i64>,
    native_transport_max_concurrent_requests: Option<i64>,
    native_transport_max_concurrent_connections_per_ip: Option<i64>,
    native_transport_idle_timeout: Option<String>,
    native_transport_idle_timeout_in_ms: Option<u64>,
    native_transport_max_request_data_in_flight: Option<String>,
    native_transport_max_concurrent_requests_in_bytes: Option<i64>,
    native_transport_max_request_data_in_flight_per_ip: Option<String>,
    native_transport_max_concurrent_requests_in_bytes_per_ip: Option<i64>,
    block_cache_size: Option<String>,
    point_cache_size: Option<String>,
    prometheus_address: Option<String>,
    admin_address: Option<String>,
    admin_port: Option<u16>,
    prometheus_port: Option<u16>,
    /// The single `host:port` key this file format reserved before the
    /// endpoint existed; still read, but not together with the two above.
    prometheus_listen_address: Option<SocketAddr>,
    auth_bcrypt_gensalt_log2_rounds: Option<u32>,
    auth_read_consistency_level: Option<String>,
    auth_write_consistency_level: Option<String>,
    superuser_setup_delay_ms: Option<u64>,
    disk_usage_monitor_interval_ms: Option<u64>,
    roles_validity: Option<String>,
    roles_validity_in_ms: Option<u64>,
    roles_update_interval: Option<String>,
    roles_update_interval_in_ms: Option<i64>,
    roles_cache_max_entries: Option<i64>,
    roles_cache_active_update: Option<bool>,
    permissions_validity: Option<String>,
    permissions_validity_in_ms: Option<u64>,
    permissions_update_interval: Option<String>,
    permissions_update_interval_in_ms: Option<i64>,
    permissions_cache_max_entries: Option<i64>,
    permissions_cache_active_update: Option<bool>,
    credentials_validity: Option<String>,
    credentials_validity_in_ms: Option<u64>,
    credentials_update_interval: Option<String>,
    credentials_update_interval_in_ms: Option<i64>,
    credentials_cache_max_entries: Option<i64>,
    credentials_cache_active_update: Option<bool>,
    storage_port: Option<u16>,
    auto_bootstrap: Option<bool>,
    hinted_handoff_enabled: Option<bool>,
    max_hint_window: Option<String>,
    max_hint_window_in_ms: Option<u64>,
    read_request_timeout: Option<String>,
    read_request_timeout_in_ms: Option<u64>,
    write_request_timeout: Option<String>,
    write_request_timeout_in_ms: Option<u64>,
    range_request_timeout: Option<String>,
    range_request_timeout_in_ms: Option<u64>,
    cas_contention_timeout: Option<String>,
    cas_contention_timeout_in_ms: Option<u64>,
    truncate_request_timeout: Option<String>,
    truncate_request_timeout_in_ms: Option<u64>,
    client_encryption_options: Option<encryption::FileClientEncryption>,
    server_encryption_options: Option<encryption::FileServerEncryption>,
    auto_snapshot: Option<bool>,
    tombstone_warn_threshold: Option<u64>,
    tombstone_failure_threshold: Option<u64>,
    read_thresholds_enabled: Option<bool>,
    coordinator_read_size_warn_threshold: Option<String>,
    coordinator_read_size_fail_threshold: Option<String>,
    local_read_size_warn_threshold: Option<String>,
    local_read_size_fail_threshold: Option<String>,
    row_index_read_size_warn_threshold: Option<String>,
    row_index_read_size_fail_threshold: Option<String>,
    materialized_views_enabled: Option<bool>,
    enable_materialized_views: Option<bool>,
    drop_compact_storage_enabled: Option<bool>,
    enable_drop_compact_storage: Option<bool>,
    user_defined_functions_enabled: Option<bool>,
    enable_user_defined_functions: Option<bool>,
    dynamic_data_masking_enabled: Option<bool>,
    prepared_statements_cache_size: Option<String>,
    prepared_statements_cache_size_mb: Option<u64>,
    commitlog_directory: Option<PathBuf>,
    hints_directory: Option<PathBuf>,
    memtable_heap_space: Option<String>,
    memtable_heap_space_in_mb: Option<u64>,
    memtable_offheap_space: Option<String>,
    memtable_offheap_space_in_mb: Option<u64>,
    compaction_throughput: Option<String>,
    compaction_throughput_mb_per_sec: Option<u64>,
    concurrent_compactors: Option<i64>,
    stream_throughput_outbound: Option<String>,
    stream_throughput_outbound_megabits_per_sec: Option<u64>,
    keyspaces_warn_threshold: Option<i64>,
    keyspaces_fail_threshold: Option<i64>,
    tables_warn_threshold: Option<i64>,
    tables_fail_threshold: Option<i64>,
    columns_per_table_warn_threshold: Option<i64>,
    columns_per_table_fail_threshold: Option<i64>,
    secondary_indexes_per_table_warn_threshold: Option<i64>,
    secondary_indexes_per_table_fail_threshold: Option<i64>,
    materialized_views_per_table_warn_threshold: Option<i64>,
    materialized_views_per_table_fail_threshold: Option<i64>,
    fields_per_udt_warn_threshold: Option<i64>,
    fields_per_udt_fail_threshold: Option<i64>,
    page_size_warn_threshold: Option<i64>,
    page_size_fail_threshold: Option<i64>,
    partition_keys_in_select_warn_threshold: Option<i64>,
    partition_keys_in_select_fail_threshold: Option<i64>,
    in_select_cartesian_product_warn_threshold: Option<i64>,
    in_select_cartesian_product_fail_threshold: Option<i64>,
    partition_size_warn_threshold: Option<String>,
    partition_size_fail_threshold: Option<String>,
    partition_tombstones_warn_threshold: Option<i64>,
    partition_tombstones_fail_threshold: Option<i64>,
    column_value_size_warn_threshold: Option<String>,
    column_value_size_fail_threshold: Option<String>,
    collection_size_warn_threshold: Option<String>,
    collection_size_fail_threshold: Option<String>,
    items_per_collection_warn_threshold: Option<i64>,
    items_per_collection_fail_threshold: Option<i64>,
    vector_dimensions_warn_threshold: Option<i64>,
    vector_dimensions_fail_threshold: Option<i64>,
    read_consistency_levels_warned: Option<Vec<String>>,
    read_consistency_levels_disallowed: Option<Vec<String>>,
    write_consistency_levels_warned: Option<Vec<String>>,
    write_consistency_levels_disallowed: Option<Vec<String>>,
    minimum_replication_factor_warn_threshold: Option<i64>,
    minimum_replication_factor_fail_threshold: Option<i64>,
    maximum_replication_factor_warn_threshold: Option<i64>,
    maximum_replication_factor_fail_threshold: Option<i64>,
    data_disk_usage_percentage_warn_threshold: Option<i64>,
    data_disk_usage_percentage_fail_threshold: Option<i64>,
    data_disk_usage_max_disk_size: Option<String>,
    user_timestamps_enabled: Option<bool>,
    group_by_enabled: Option<bool>,
    drop_truncate_table_enabled: Option<bool>,
    drop_keyspace_enabled: Option<bool>,
    secondary_indexes_enabled: Option<bool>,
    compact_tables_enabled: Option<bool>,
    alter_table_enabled: Option<bool>,
    allow_filtering_enabled: Option<bool>,
    simplestrategy_enabled: Option<bool>,
    read_before_write_list_operations_enabled: Option<bool>,
    uncompressed_tables_enabled: Option<bool>,
    zero_ttl_on_twcs_warned: Option<bool>,
    zero_ttl_on_twcs_enabled: Option<bool>,
    vector_type_enabled: Option<bool>,
    table_properties_warned: Option<Vec<String>>,
    table_properties_ignored: Option<Vec<String>>,
    table_properties_disallowed: Option<Vec<String>>,
    maximum_timestamp_warn_threshold: Option<String>,
    maximum_timestamp_fail_threshold: Option<String>,
    minimum_timestamp_warn_threshold: Option<String>,
    minimum_timestamp_fail_threshold: Option<String>,
}

/// `- class_name: ...\n  parameters:\n    - seeds: "a,b"`
#[derive(Debug, Deserialize)]
struct FileSeedProvider {
    class_name: String,
    #[serde(default)]
    parameters: Vec<BTreeMap<String, String>>,
}

/// Cassandra 5 accepts `authenticator: Name` and `authenticator: {class_name: Name}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ClassName {
    Plain(String),
    Parameterized { class_name: String },
}

impl ClassName {
    fn name(&self) -> &str {
        match self {
            ClassName::Plain(name) | ClassName::Parameterized { class_name: name } => name,
        }
    }
}

impl FileConfig {
    #[allow(
        clippy::too_many_lines,
        reason = "one table: each setting from its key or its default"
    )]
    fn into_config(mut self) -> Result<Config, ConfigError> {
        let defaults = Config::default();
        let (prometheus_address, prometheus_port) = self.prometheus()?;
        let (admin_address, admin_port) = self.admin()?;
        let (client_encryption, server_encryption) = self.encryption()?;
        let storage = self.storage(&defaults)?;
        let timeouts = self.request_timeouts(defaults.request_timeouts)?;
        let transport = self.native_transport(&defaults)?;
        let addresses = self.addresses(&defaults)?;
        let durations = self.durations(&defaults)?;
        let bcrypt_rounds = self.bcrypt_rounds(&defaults)?;
        let auth_read_consistency_level = auth_consistency(
            "auth_read_consistency_level",
            self.auth_read_consistency_level.as_deref(),
            defaults.auth_read_consistency_level,
        )?;
        let auth_write_consistency_level = auth_consistency(
            "auth_write_consistency_level",
            self.auth_write_consistency_level.as_deref(),
            defaults.auth_write_consistency_level,
        )?;
        let auth_caches = self.auth_caches()?;
        let flags = self.feature_flags(&defaults)?;
        let stream_throughput_bytes = self.stream_throughput(defaults.stream_throughput_bytes)?;
        let guardrails = self.guardrails()?;
        let read_thresholds = self.read_thresholds()?;
        let config = Config {
            cluster_name: self.cluster_name.unwrap_or(defaults.cluster_name),
            listen_address: addresses.listen,
            broadcast_address: addresses.broadcast,
            listen_on_broadcast_address: self
                .listen_on_broadcast_address
                .unwrap_or(defaults.listen_on_broadcast_address),
            rpc_address: addresses.rpc,
            broadcast_rpc_address: addresses.broadcast_rpc,
            native_transport_port: self
                .native_transport_port
                .unwrap_or(defaults.native_transport_port),
            data_file_directories: self
                .data_file_directories
                .unwrap_or(defaults.data_file_directories),
            commitlog_sync: self.commitlog_sync.unwrap_or(defaults.commitlog_sync),
            commitlog_sync_period: durations.commitlog_sync_period,
            num_tokens: self.num_tokens.unwrap_or(defaults.num_tokens),
            clustered: self.seed_provider.is_some(),
            seed_provider: match self.seed_provider {
                Some(providers) => seed_provider(providers)?,
                None => defaults.seed_provider,
            },
            storage_port: self.storage_port.unwrap_or(defaults.storage_port),
            auto_bootstrap: self.auto_bootstrap.unwrap_or(defaults.auto_bootstrap),
            hinted_handoff_enabled: self
                .hinted_handoff_enabled
                .unwrap_or(defaults.hinted_handoff_enabled),
            max_hint_window: durations.max_hint_window,
            request_timeouts: timeouts,
            authenticator: match self.authenticator {
                Some(name) => Authenticator::parse(name.name())?,
                None => defaults.authenticator,
            },
            authorizer: match self.authorizer {
                Some(name) => Authorizer::parse(name.name())?,
                None => defaults.authorizer,
            },
            endpoint_snitch: self.endpoint_snitch.unwrap_or(defaults.endpoint_snitch),
            data_center: self.data_center.unwrap_or(defaults.data_center),
            rack: self.rack.unwrap_or(defaults.rack),
            max_frame_bytes: transport.max_frame_bytes,
            max_connections: transport.max_connections,
            max_requests_per_connection: transport.max_requests_per_connection,
            max_requests: transport.max_requests,
            max_connections_per_ip: transport.max_connections_per_ip,
            idle_timeout: transport.idle_timeout,
            max_request_bytes_in_flight: transport.max_request_bytes_in_flight,
            max_request_bytes_in_flight_per_ip: transport.max_request_bytes_in_flight_per_ip,
            prepared_statements_cache_bytes: storage.prepared_statements_cache_bytes,
            block_cache_bytes: storage.block_cache_bytes,
            point_cache_bytes: storage.point_cache_bytes,
            prometheus_address,
            admin_address,
            admin_port,
            prometheus_port,
            auth_bcrypt_gensalt_log2_rounds: bcrypt_rounds,
            auth_read_consistency_level,
            auth_write_consistency_level,
            auth_caches,
            superuser_setup_delay: self
                .superuser_setup_delay_ms
                .map_or(defaults.superuser_setup_delay, Duration::from_millis),
            disk_usage_monitor_interval: self
                .disk_usage_monitor_interval_ms
                .filter(|ms| *ms > 0)
                .map_or(defaults.disk_usage_monitor_interval, Duration::from_millis),
            data_disk_usage_max_disk_size: self.data_disk_usage_max_disk_size.clone(),
            client_encryption,
            server_encryption,
            auto_snapshot: self.auto_snapshot.unwrap_or(defaults.auto_snapshot),
            tombstone_thresholds: rocksandra_query::tombstones::TombstoneThresholds {
                warn: self
                    .tombstone_warn_threshold
                    .unwrap_or(defaults.tombstone_thresholds.warn),
                failure: self
                    .tombstone_failure_threshold
                    .unwrap_or(defaults.tombstone_thresholds.failure),
            },
            read_thresholds,
            materialized_views_enabled: flags.materialized_views,
            drop_compact_storage_enabled: flags.drop_compact_storage,
            user_defined_functions_enabled: flags.user_defined_functions,
            dynamic_data_masking_enabled: self
                .dynamic_data_masking_enabled
                .unwrap_or(defaults.dynamic_data_masking_enabled),
            commitlog_directory: storage.commitlog_directory,
            hints_directory: non_empty_dir("hints_directory", self.hints_directory)?,
            memtable_space_bytes: storage.memtable_space_bytes,
            compaction_throughput_bytes: storage.compaction_throughput_bytes,
            concurrent_compactors: storage.concurrent_compactors,
            stream_throughput_bytes,
            guardrails,
            unused_keys: Vec::new(),
        };
        config.validate()?;
        Ok(config)
    }
}

/// The node's own addresses, parsed.
struct Addresses {
    listen: IpAddr,
    broadcast: Option<IpAddr>,
    rpc: Option<IpAddr>,
    broadcast_rpc: Option<IpAddr>,
}

/// `materialized_views_enabled`, `drop_compact_storage_enabled` and
/// `user_defined_functions_enabled`.
struct FeatureFlags {
    materialized_views: bool,
    drop_compact_storage: bool,
    user_defined_functions: bool,
}

/// The durations that have a legacy `_in_ms` name beside their own.
struct LegacyDurations {
    commitlog_sync_period: Duration,
    max_hint_window: Duration,
}

impl FileConfig {
    fn addresses(&self, defaults: &Config) -> Result<Addresses, ConfigError> {
        let optional = |key: &'static str, text: &Option<String>| {
            text.as_deref()
                .map(|text| parse_address(key, text))
                .transpose()
        };
        let listen = self.bound_address(
            ("listen_address", &self.listen_address),
            ("listen_interface", &self.listen_interface),
            self.listen_interface_prefer_ipv6,
        )?;
        let rpc = self.bound_address(
            ("rpc_address", &self.rpc_address),
            ("rpc_interface", &self.rpc_interface),
            self.rpc_interface_prefer_ipv6,
        )?;
        Ok(Addresses {
            listen: listen.unwrap_or(defaults.listen_address),
            broadcast: optional("broadcast_address", &self.broadcast_address)?,
            rpc,
            broadcast_rpc: optional("broadcast_rpc_address", &self.broadcast_rpc_address)?,
        })
    }

    /// An address to bind, given as an address or as an interface's name
    /// (not both, as Cassandra says).
    fn bound_address(
        &self,
        (address_key, address): (&'static str, &Option<String>),
        (interface_key, interface): (&'static str, &Option<String>),
        prefer_ipv6: Option<bool>,
    ) -> Result<Option<IpAddr>, ConfigError> {
        match (address, interface) {
            (Some(_), Some(_)) => Err(interfaces::both_set(address_key, interface_key)),
            (Some(text), None) => parse_address(address_key, text).map(Some),
            (None, Some(name)) => interfaces::interface_address(
                interface_key,
                name,
                prefer_ipv6.unwrap_or(false),
                &interfaces::machine_interfaces(),
            )
            .map(Some),
            (None, None) => Ok(None),
        }
    }

    fn durations(&mut self, defaults: &Config) -> Result<LegacyDurations, ConfigError> {
        let commitlog_sync_period = pick_legacy(
            (
                "commitlog_sync_period",
                self.commitlog_sync_period.take(),
                |text| parse_duration(&text).map_err(|m| invalid("commitlog_sync_period", m)),
            ),
            (
                "commitlog_sync_period_in_ms",
                self.commitlog_sync_period_in_ms,
                |ms| Ok(Duration::from_millis(ms)),
            ),
        )?
        .unwrap_or(defaults.commitlog_sync_period);
        let max_hint_window = pick_legacy(
            ("max_hint_window", self.max_hint_window.take(), |text| {
                parse_duration(&text).map_err(|m| invalid("max_hint_window", m))
            }),
            ("max_hint_window_in_ms", self.max_hint_window_in_ms, |ms| {
                Ok(Duration::from_millis(ms))
            }),
        )?
        .unwrap_or(defaults.max_hint_window);
        Ok(LegacyDurations {
            commitlog_sync_period,
            max_hint_window,
        })
    }

    /// The guardrails that switch a feature on, each with its legacy name.
    fn feature_flags(&self, defaults: &Config) -> Result<FeatureFlags, ConfigError> {
        let materialized_views = pick_legacy(
            (
                "materialized_views_enabled",
                self.materialized_views_enabled,
                Ok,
            ),
            (
                "enable_materialized_views",
                self.enable_materialized_views,
                Ok,
            ),
        )?
        .unwrap_or(defaults.materialized_views_enabled);
        let drop_compact_storage = pick_legacy(
            (
                "drop_compact_storage_enabled",
                self.drop_compact_storage_enabled,
                Ok,
            ),
            (
                "enable_drop_compact_storage",
                self.enable_drop_compact_storage,
                Ok,
            ),
        )?
        .unwrap_or(defaults.drop_compact_storage_enabled);
        let user_defined_functions = pick_legacy(
            (
                "user_defined_functions_enabled",
                self.user_defined_functions_enabled,
                Ok,
            ),
            (
                "enable_user_defined_functions",
                self.enable_user_defined_functions,
                Ok,
            ),
        )?
        .unwrap_or(defaults.user_defined_functions_enabled);
        Ok(FeatureFlags {
            materialized_views,
            drop_compact_storage,
            user_defined_functions,
        })
    }

    fn bcrypt_rounds(&self, defaults: &Config) -> Result<u32, ConfigError> {
        match self.auth_bcrypt_gensalt_log2_rounds {
            Some(r) if (4..=31).contains(&r) => Ok(r),
            Some(r) => Err(invalid(
                "auth_bcrypt_gensalt_log2_rounds",
                format!("{r} (expected 4 to 31)"),
            )),
            None => Ok(defaults.auth_bcrypt_gensalt_log2_rounds),
        }
    }
}

/// `auth_read_consistency_level` or `auth_write_consistency_level`: a name
/// of Cassandra's `ConsistencyLevel` enum, exactly as its `valueOf` takes
/// it (upper case). Cassandra reads the key only when auth first needs it,
/// so a wrong name breaks its logins; here the node refuses to start, with
/// Cassandra's words. NODE_LOCAL, Cassandra's internal level, is refused.
fn auth_consistency(
    key: &'static str,
    value: Option<&str>,
    default: Consistency,
) -> Result<Consistency, ConfigError> {
    let Some(name) = value else {
        return Ok(default);
    };
    if name == "NODE_LOCAL" {
        return Err(invalid(
            key,
            "NODE_LOCAL (Cassandra's internal level) is not supported",
        ));
    }
    Consistency::ALL
        .into_iter()
        .find(|level| level.name() == name)
        .ok_or_else(|| {
            invalid(
                key,
                format!("No enum constant org.apache.cassandra.db.ConsistencyLevel.{name}"),
            )
        })
}

impl FileConfig {
    /// `admin_address` and `admin_port` (None when it is 0: off).
    fn admin(&self) -> Result<(IpAddr, Option<u16>), ConfigError> {
        let ip = match &self.admin_address {
            Some(text) => parse_address("admin_address", text)?,
            None => ADMIN_ADDRESS_DEFAULT,
        };
        Ok((
            ip,
            port_or_off(self.admin_port.unwrap_or(ADMIN_PORT_DEFAULT)),
        ))
    }

    /// `client_encryption_options` and `server_encryption_options`.
    fn encryption(&mut self) -> Result<(EncryptionOptions, ServerEncryption), ConfigError> {
        let client = match self.client_encryption_options.take() {
            Some(options) => options.into_options()?,
            None => EncryptionOptions::default(),
        };
        let server = match self.server_encryption_options.take() {
            Some(options) => options.into_options()?,
            None => ServerEncryption::default(),
        };
        Ok((client, server))
    }

    /// `prometheus_address` and `prometheus_port`, or the legacy
    /// `prometheus_listen_address` standing for both.
    fn prometheus(&self) -> Result<(IpAddr, Option<u16>), ConfigError> {
        if let Some(legacy) = self.prometheus_listen_address {
            let new_key = match (&self.prometheus_address, self.prometheus_port) {
                (None, None) => return Ok((legacy.ip(), port_or_off(legacy.port()))),
                (Some(_), _) => "prometheus_address",
                (None, Some(_)) => "prometheus_port",
            };
            return Err(ConfigError::BothSet {
                new_key,
                legacy_key: "prometheus_listen_address",
            });
        }
        let ip = match &self.prometheus_address {
            Some(text) => parse_address("prometheus_address", text)?,
            None => PROMETHEUS_ADDRESS_DEFAULT,
        };
        let port = self.prometheus_port.unwrap_or(PROMETHEUS_PORT_DEFAULT);
        Ok((ip, port_or_off(port)))
    }
}

/// The CQL port's limits read from Cassandra's `native_transport_*` keys.
struct NativeTransportSettings {
    max_frame_bytes: u64,
    max_connections: usize,
    max_requests_per_connection: usize,
    max_requests: usize,
    max_connections_per_ip: Option<usize>,
    idle_timeout: Option<Duration>,
    max_request_bytes_in_flight: u64,
    max_request_bytes_in_flight_per_ip: u64,
}

impl FileConfig {
    fn request_timeouts(&self, defaults: Timeouts) -> Result<Timeouts, ConfigError> {
        Ok(Timeouts {
            read: request_timeout(
                ("read_request_timeout", self.read_request_timeout.clone()),
                (
                    "read_request_timeout_in_ms",
                    self.read_request_timeout_in_ms,
                ),
                defaults.read,
            )?,
            write: request_timeout(
                ("write_request_timeout", self.write_request_timeout.clone()),
                (
                    "write_request_timeout_in_ms",
                    self.write_request_timeout_in_ms,
                ),
                defaults.write,
            )?,
            range: request_timeout(
                ("range_request_timeout", self.range_request_timeout.clone()),
                (
                    "range_request_timeout_in_ms",
                    self.range_request_timeout_in_ms,
                ),
                defaults.range,
            )?,
            cas_contention: request_timeout(
                (
                    "cas_contention_timeout",
                    self.cas_contention_timeout.clone(),
                ),
                (
                    "cas_contention_timeout_in_ms",
                    self.cas_contention_timeout_in_ms,
                ),
                defaults.cas_contention,
            )?,
            truncate: request_timeout(
                (
                    "truncate_request_timeout",
                    self.truncate_request_timeout.clone(),
                ),
                (
                    "truncate_request_timeout_in_ms",
                    self.truncate_request_timeout_in_ms,
                ),
                defaults.truncate,
            )?,
        })
    }

    fn native_transport(&self, defaults: &Config) -> Result<NativeTransportSettings, ConfigError> {
        Ok(NativeTransportSettings {
            max_frame_bytes: data_size_or_legacy_mb(
                (
                    "native_transport_max_frame_size",
                    self.native_transport_max_frame_size.clone(),
                ),
                (
                    "native_transport_max_frame_size_in_mb",
                    self.native_transport_max_frame_size_in_mb,
                ),
            )?
            .unwrap_or(defaults.max_frame_bytes),
            max_connections: match self.native_transport_max_concurrent_connections {
                None | Some(-1) => MAX_CONNECTIONS_DEFAULT,
                Some(n) => positive("native_transport_max_concurrent_connections", n)?,
            },
            max_requests_per_connection: match self.native_transport_max_requests_per_connection {
                None => defaults.max_requests_per_connection,
                Some(n) => positive("native_transport_max_requests_per_connection", n)?,
            },
            max_requests: match self.native_transport_max_concurrent_requests {
                None => defaults.max_requests,
                Some(n) => positive("native_transport_max_concurrent_requests", n)?,
            },
            max_connections_per_ip: match self.native_transport_max_concurrent_connections_per_ip {
                // Cassandra enforces the limit only when it is above 0.
                None | Some(-1 | 0) => None,
                Some(n) => Some(positive(
                    "native_transport_max_concurrent_connections_per_ip",
                    n,
                )?),
            },
            idle_timeout: idle_timeout(
                self.native_transport_idle_timeout.clone(),
                self.native_transport_idle_timeout_in_ms,
            )?,
            max_request_bytes_in_flight: data_size_or_legacy_bytes(
                (
                    "native_transport_max_request_data_in_flight",
                    self.native_transport_max_request_data_in_flight.clone(),
                ),
                (
                    "native_transport_max_concurrent_requests_in_bytes",
                    self.native_transport_max_concurrent_requests_in_bytes,
                ),
            )?
            .unwrap_or(defaults.max_request_bytes_in_flight),
            max_request_bytes_in_flight_per_ip: data_size_or_legacy_bytes(
                (
                    "native_transport_max_request_data_in_flight_per_ip",
                    self.native_transport_max_request_data_in_flight_per_ip
                        .clone(),
                ),
                (
                    "native_transport_max_concurrent_requests_in_bytes_per_ip",
                    self.native_transport_max_concurrent_requests_in_bytes_per_ip,
                ),
            )?
            .unwrap_or(defaults.max_request_bytes_in_flight_per_ip),
        })
    }
}

/// A directory key's value: unset, or a path that is not empty.
fn non_empty_dir(key: &'static str, dir: Option<PathBuf>) -> Result<Option<PathBuf>, ConfigError> {
    match dir {
        Some(dir) if dir.as_os_str().is_empty() => Err(invalid(key, "must not be empty")),
        dir => Ok(dir),
    }
}

/// The RocksDB settings read from Cassandra's keys.
struct StorageSettings {
    commitlog_directory: Option<PathBuf>,
    block_cache_bytes: Option<u64>,
    point_cache_bytes: Option<u64>,
    prepared_statements_cache_bytes: u64,
    memtable_space_bytes: Option<u64>,
    compaction_throughput_bytes: Option<u64>,
    concurrent_compactors: Option<u32>,
}

impl FileConfig {
    fn storage(&self, defaults: &Config) -> Result<StorageSettings, ConfigError> {
        let commitlog_directory =
            non_empty_dir("commitlog_directory", self.commitlog_directory.clone())?;
        let concurrent_compactors = match self.concurrent_compactors {
            None => None,
            Some(n @ 1..=CONCURRENT_COMPACTORS_MAX) => Some(n as u32),
            Some(n) => {
                return Err(invalid(
                    "concurrent_compactors",
                    format!("{n} is outside 1..={CONCURRENT_COMPACTORS_MAX}"),
                ))
            }
        };
        let block_cache_bytes = match &self.block_cache_size {
            Some(text) => Some(parse_data_size(text).map_err(|m| invalid("block_cache_size", m))?),
            None => defaults.block_cache_bytes,
        };
        let point_cache_bytes = match &self.point_cache_size {
            Some(text) => Some(parse_data_size(text).map_err(|m| invalid("point_cache_size", m))?),
            None => defaults.point_cache_bytes,
        };
        let prepared_statements_cache_bytes = data_size_or_legacy_mb(
            (
                "prepared_statements_cache_size",
                self.prepared_statements_cache_size.clone(),
            ),
            (
                "prepared_statements_cache_size_mb",
                self.prepared_statements_cache_size_mb,
            ),
        )?
        .unwrap_or(defaults.prepared_statements_cache_bytes);
        Ok(StorageSettings {
            commitlog_directory,
            block_cache_bytes,
            point_cache_bytes,
            prepared_statements_cache_bytes,
            memtable_space_bytes: self.memtable_space()?,
            compaction_throughput_bytes: self.compaction_throughput()?,
            concurrent_compactors,
        })
    }

    /// `memtable_heap_space` plus `memtable_offheap_space` (or their `_in_mb`
    /// names): Rocksandra has one memtable budget, not a heap.
    fn memtable_space(&self) -> Result<Option<u64>, ConfigError> {
        let heap = data_size_or_legacy_mb(
            ("memtable_heap_space", self.memtable_heap_space.clone()),
            ("memtable_heap_space_in_mb", self.memtable_heap_space_in_mb),
        )?;
        let offheap = data_size_or_legacy_mb(
            (
                "memtable_offheap_space",
                self.memtable_offheap_space.clone(),
            ),
            (
                "memtable_offheap_space_in_mb",
                self.memtable_offheap_space_in_mb,
            ),
        )?;
        if heap.is_none() && offheap.is_none() {
            return Ok(None);
        }
        let key = if heap.is_some() {
            "memtable_heap_space"
        } else {
            "memtable_offheap_space"
        };
        match heap.unwrap_or(0).checked_add(offheap.unwrap_or(0)) {
            Some(0) => Err(invalid(key, "the memtable space must be more than 0")),
            Some(bytes) => Ok(Some(bytes)),
            None => Err(invalid(key, "too large")),
        }
    }

    /// `stream_throughput_outbound` (`24MiB/s`) or legacy
    /// `stream_throughput_outbound_megabits_per_sec`; 0 is unthrottled.
    /// `read_thresholds_enabled` and the size thresholds, each pair checked
    /// as Cassandra checks them at startup.
    fn read_thresholds(&self) -> Result<ReadThresholds, ConfigError> {
        let size =
            |key: &'static str, value: &Option<String>| -> Result<Option<u64>, ConfigError> {
                match value.as_deref().map(str::trim) {
                    None | Some("") | Some("null") => Ok(None),
                    Some(text) => parse_data_size(text).map(Some).map_err(|m| invalid(key, m)),
                }
            };
        let pair = |name: &'static str,
                    fail_key: &'static str,
                    warn_key,
                    warn: &Option<String>,
                    fail: &Option<String>| {
            let thresholds = SizeThresholds {
                warn: size(warn_key, warn)?,
                fail: size(fail_key, fail)?,
            };
            let written = |bytes: u64| written_size(bytes, warn.as_deref(), fail.as_deref());
            read_thresholds::validate(name, thresholds, written)
                .map_err(|m| invalid(fail_key, m))?;
            Ok::<_, ConfigError>(thresholds)
        };
        Ok(ReadThresholds {
            enabled: self.read_thresholds_enabled.unwrap_or(false),
            coordinator_read_size: pair(
                "coordinator_read_size",
                "coordinator_read_size_fail_threshold",
                "coordinator_read_size_warn_threshold",
                &self.coordinator_read_size_warn_threshold,
                &self.coordinator_read_size_fail_threshold,
            )?,
            local_read_size: pair(
                "local_read_size",
                "local_read_size_fail_threshold",
                "local_read_size_warn_threshold",
                &self.local_read_size_warn_threshold,
                &self.local_read_size_fail_threshold,
            )?,
            row_index_read_size: pair(
                "row_index_read_size",
                "row_index_read_size_fail_threshold",
                "row_index_read_size_warn_threshold",
                &self.row_index_read_size_warn_threshold,
                &self.row_index_read_size_fail_threshold,
            )?,
        })
    }

    fn stream_throughput(&self, default: u64) -> Result<u64, ConfigError> {
        const KEY: &str = "stream_throughput_outbound";
        const LEGACY: &str = "stream_throughput_outbound_megabits_per_sec";
        let rate = pick_legacy(
            (
                KEY,
                self.stream_throughput_outbound.clone(),
                |text: String| parse_data_rate(&text).map_err(|m| invalid(KEY, m)),
            ),
            // Cassandra's conversion: a megabit is 125,000 bytes.
            (
                LEGACY,
                self.stream_throughput_outbound_megabits_per_sec,
                |mbit: u64| {
                    mbit.checked_mul(125_000)
                        .ok_or_else(|| invalid(LEGACY, "too large"))
                },
            ),
        )?;
        Ok(rate.unwrap_or(default))
    }

    /// `compaction_throughput` (`64MiB/s`) or legacy
    /// `compaction_throughput_mb_per_sec`; 0 is unthrottled (None).
    fn compaction_throughput(&self) -> Result<Option<u64>, ConfigError> {
        const KEY: &str = "compaction_throughput";
        const LEGACY: &str = "compaction_throughput_mb_per_sec";
        let rate = pick_legacy(
            (KEY, self.compaction_throughput.clone(), |text: String| {
                parse_data_rate(&text).map_err(|m| invalid(KEY, m))
            }),
            (LEGACY, self.compaction_throughput_mb_per_sec, |mb: u64| {
                mb.checked_mul(1 << 20)
                    .ok_or_else(|| invalid(LEGACY, "too large"))
            }),
        )?;
        Ok(rate.filter(|bytes| *bytes > 0))
    }
}

/// A configured metrics port: 0 turns the endpoint off, as in ScyllaDB.
fn port_or_off(port: u16) -> Option<u16> {
    (port != 0).then_some(port)
}

impl Config {
    /// Cassandra's rules, in its words: no node can be reached at a
    /// wildcard address, so only `rpc_address` may be one, and then
    /// `broadcast_rpc_address` says where drivers connect.
    fn check_addresses(&self) -> Result<(), ConfigError> {
        let named = [
            ("listen_address", Some(self.listen_address)),
            ("broadcast_address", self.broadcast_address),
            ("broadcast_rpc_address", self.broadcast_rpc_address),
        ];
        for (key, address) in named {
            if let Some(address) = address.filter(IpAddr::is_unspecified) {
                return Err(invalid(
                    key,
                    format!("{key} cannot be a wildcard address ({address})!"),
                ));
            }
        }
        match (self.rpc_address, self.broadcast_rpc_address) {
            (Some(rpc), None) if rpc.is_unspecified() => Err(invalid(
                "broadcast_rpc_address",
                format!(
                    "If rpc_address is set to a wildcard address ({rpc}), then you must set \
                     broadcast_rpc_address to a value other than {rpc}"
                ),
            )),
            _ => Ok(()),
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.check_addresses()?;
        if self.cluster_name.is_empty() {
            return Err(invalid("cluster_name", "must not be empty"));
        }
        if self.data_file_directories.is_empty() {
            return Err(invalid(
                "data_file_directories",
                "needs at least one directory",
            ));
        }
        if self.data_file_directories.len() > 1 {
            return Err(invalid(
                "data_file_directories",
                format!(
                    "{} directories given; Rocksandra stores data in exactly one \
                     (spread disks with RAID or LVM instead)",
                    self.data_file_directories.len()
                ),
            ));
        }
        if !(1..=NUM_TOKENS_MAX).contains(&self.num_tokens) {
            return Err(invalid(
                "num_tokens",
                format!("{} is outside 1..={NUM_TOKENS_MAX}", self.num_tokens),
            ));
        }
        if !(MAX_FRAME_BYTES_MIN..=MAX_FRAME_BYTES_MAX).contains(&self.max_frame_bytes) {
            return Err(invalid(
                "native_transport_max_frame_size",
                format!(
                    "{} bytes is outside {MAX_FRAME_BYTES_MIN}..={MAX_FRAME_BYTES_MAX}",
                    self.max_frame_bytes
                ),
            ));
        }
        if self.commitlog_sync_period.is_zero() {
            return Err(invalid("commitlog_sync_period", "must be more than 0"));
        }
        // Cassandra refuses it too: permissions need a logged-in role.
        if self.authorizer == Authorizer::Cassandra && self.authenticator == Authenticator::AllowAll
        {
            return Err(invalid(
                "authorizer",
                "AllowAllAuthenticator can't be used with CassandraAuthorizer",
            ));
        }
        Ok(())
    }
}

/// A data size (`16MiB`) under its modern key, or a number of MiB under
/// its legacy one (`..._mb`, `..._in_mb`); not both.
fn data_size_or_legacy_mb(
    modern: (&'static str, Option<String>),
    legacy: (&'static str, Option<u64>),
) -> Result<Option<u64>, ConfigError> {
    pick_legacy(
        (modern.0, modern.1, |text: String| {
            parse_data_size(&text).map_err(|m| invalid(modern.0, m))
        }),
        (legacy.0, legacy.1, |mb: u64| {
            mb.checked_mul(1024 * 1024)
                .ok_or_else(|| invalid(legacy.0, "too large"))
        }),
    )
}

/// A byte limit given as a data size, or by its legacy `_in_bytes` key
/// where -1 (Cassandra's old "default") means unset. Zero is accepted, as
/// Cassandra 4.0+ does: every request is then over the limit.
fn data_size_or_legacy_bytes(
    modern: (&'static str, Option<String>),
    legacy: (&'static str, Option<i64>),
) -> Result<Option<u64>, ConfigError> {
    let legacy_value = match legacy.1 {
        Some(-1) => None,
        value => value,
    };
    pick_legacy(
        (modern.0, modern.1, |text: String| {
            parse_data_size(&text).map_err(|m| invalid(modern.0, m))
        }),
        (legacy.0, legacy_value, |bytes: i64| {
            u64::try_from(bytes)
                .map_err(|_| invalid(legacy.0, format!("{bytes} (expected -1 or at least 0)")))
        }),
    )
}

/// `native_transport_idle_timeout` (or legacy `_in_ms`); 0 turns it off.
fn idle_timeout(
    modern: Option<String>,
    legacy_ms: Option<u64>,
) -> Result<Option<Duration>, ConfigError> {
    const KEY: &str = "native_transport_idle_timeout";
    let timeout = pick_legacy(
        (KEY, modern, |text: String| {
            parse_duration(&text).map_err(|m| invalid(KEY, m))
        }),
        ("native_transport_idle_timeout_in_ms", legacy_ms, |ms| {
            Ok(Duration::from_millis(ms))
        }),
    )?;
    match timeout {
        Some(t) if t.is_zero() => Ok(None),
        Some(t) if t < Duration::from_millis(1) => Err(invalid(
            KEY,
            format!("{t:?} (expected 0ms or at least 1ms)"),
        )),
        t => Ok(t),
    }
}

/// A `*_request_timeout` (or its legacy `_in_ms` key): at least 1ms.
fn request_timeout(
    modern: (&'static str, Option<String>),
    legacy: (&'static str, Option<u64>),
    default: Duration,
) -> Result<Duration, ConfigError> {
    let key = modern.0;
    let timeout = pick_legacy(
        (key, modern.1, |text: String| {
            parse_duration(&text).map_err(|m| invalid(key, m))
        }),
        (legacy.0, legacy.1, |ms| Ok(Duration::from_millis(ms))),
    )?;
    match timeout {
        None => Ok(default),
        Some(t) if t < Duration::from_millis(1) => {
            Err(invalid(key, format!("{t:?} (expected at least 1ms)")))
        }
        Some(t) => Ok(t),
    }
}

/// Takes the modern key or its legacy spelling, refusing both at once.
fn pick_legacy<A, B, T>(
    modern: (
        &'static str,
        Option<A>,
        impl FnOnce(A) -> Result<T, ConfigError>,
    ),
    legacy: (
        &'static str,
        Option<B>,
        impl FnOnce(B) -> Result<T, ConfigError>,
    ),
) -> Result<Option<T>, ConfigError> {
    match (modern.1, legacy.1) {
        (Some(_), Some(_)) => Err(ConfigError::BothSet {
            new_key: modern.0,
            legacy_key: legacy.0,
        }),
        (Some(value), None) => (modern.2)(value).map(Some),
        (None, Some(value)) => (legacy.2)(value).map(Some),
        (None, None) => Ok(None),
    }
}

fn positive(key: &'static str, value: i64) -> Result<usize, ConfigError> {
    usize::try_from(value)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(key, format!("{value} (expected a positive number)")))
}

/// An IP literal, or `localhost` (the value cassandra.yaml ships with).
fn parse_address(key: &'static str, text: &str) -> Result<IpAddr, ConfigError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    text.parse()
        .map_err(|_| invalid(key, format!("'{text}' is not an IP address")))
}

fn seed_provider(providers: Vec<FileSeedProvider>) -> Result<SeedProvider, ConfigError> {
    let mut providers = providers.into_iter();
    let (Some(provider), None) = (providers.next(), providers.next()) else {
        return Err(invalid(
            "seed_provider",
            "needs exactly one class_name entry",
        ));
    };
    if short_class_name(&provider.class_name) != "SimpleSeedProvider" {
        return Err(invalid(
            "seed_provider",
            format!(
                "unknown class '{}' (expected {SIMPLE_SEED_PROVIDER})",
                provider.class_name
            ),
        ));
    }
    let mut seeds = Vec::new();
    for parameters in &provider.parameters {
        for (name, value) in parameters {
            if name != "seeds" {
                return Err(invalid(
                    "seed_provider",
                    format!("unknown parameter '{name}' (expected seeds)"),
                ));
            }
            seeds.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
        }
    }
    Ok(SeedProvider {
        class_name: provider.class_name,
        seeds,
    })
}

/// Splits `10000ms` into (10000, "ms").
fn split_number(text: &str) -> Option<(u64, &str)> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    Some((number.parse().ok()?, unit.trim()))
}

/// A Cassandra 4+ duration string: a whole number and one of `d`, `h`, `m`,
/// `s`, `ms`, `us` (or `µs`), `ns`; units are case-insensitive.
pub fn parse_duration(text: &str) -> Result<Duration, ValueError> {
    let bad = || ValueError::NotADuration(text.to_string());
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let nanos_per_unit: u64 = match unit.to_ascii_lowercase().as_str() {
        "d" => 86_400_000_000_000,
        "h" => 3_600_000_000_000,
        "m" => 60_000_000_000,
        "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "us" | "µs" => 1_000,
        "ns" => 1,
        _ => return Err(bad()),
    };
    let nanos = number
        .checked_mul(nanos_per_unit)
        .ok_or_else(|| ValueError::TooLong(text.to_string()))?;
    Ok(Duration::from_nanos(nanos))
}

/// A Cassandra 4+ data-size string: a whole number and one of `B`, `KiB`,
/// `MiB`, `GiB` (case-sensitive, as Cassandra's `DataStorageSpec`).
pub fn parse_data_size(text: &str) -> Result<u64, ValueError> {
    let bad = || ValueError::NotADataSize(text.to_string());
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let bytes_per_unit: u64 = match unit {
        "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    number
        .checked_mul(bytes_per_unit)
        .ok_or_else(|| ValueError::TooLarge(text.to_string()))
}

/// A size threshold as the yaml wrote it (`warn` or `fail`, whichever
/// holds `bytes`), as Cassandra's messages print it.
fn written_size(bytes: u64, warn: Option<&str>, fail: Option<&str>) -> String {
    [warn, fail]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|text| parse_data_size(text) == Ok(bytes))
        .map_or_else(|| format!("{bytes}B"), str::to_string)
}

/// A Cassandra 4+ data rate: a whole number and one of `B/s`, `KiB/s`,
/// `MiB/s` (as Cassandra's `DataRateSpec`).
pub fn parse_data_rate(text: &str) -> Result<u64, ValueError> {
    let bad = || ValueError::NotADataRate(text.to_string());
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let bytes_per_unit: u64 = match unit {
        "B/s" => 1,
        "KiB/s" => 1 << 10,
        "MiB/s" => 1 << 20,
        _ => return Err(bad()),
    };
    number
        .checked_mul(bytes_per_unit)
        .ok_or_else(|| ValueError::TooLarge(text.to_string()))
}

impl fmt::Display for CommitlogSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CommitlogSync::Periodic => "periodic",
            CommitlogSync::Batch => "batch",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Config, ConfigError> {
        Config::from_yaml(yaml, "rocksandra.yaml")
    }

    fn parse_ok(yaml: &str) -> Config {
        match parse(yaml) {
            Ok(config) => config,
            Err(e) => panic!("{yaml:?} should parse: {e}"),
        }
    }

    fn error_text(yaml: &str) -> String {
        match parse(yaml) {
            Ok(config) => panic!("{yaml:?} should fail, got {config:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn empty_file_gives_the_defaults() {
        let config = parse_ok("# nothing but a comment\n");
        assert_eq!(config, Config::default());
        assert_eq!(config.cluster_name, "Test Cluster");
        assert_eq!(
            config.native_address(),
            "127.0.0.1:9042".parse().expect("addr")
        );
        assert_eq!(config.data_file_directories, vec![PathBuf::from("./data")]);
        assert_eq!(config.commitlog_sync, CommitlogSync::Periodic);
        assert_eq!(config.commitlog_sync_period, Duration::from_secs(10));
        assert_eq!(config.num_tokens, 16);
        assert_eq!(config.authenticator, Authenticator::AllowAll);
        assert_eq!(config.max_frame_bytes, 16 * 1024 * 1024);
        assert_eq!(config.max_connections, MAX_CONNECTIONS_DEFAULT);
        assert_eq!(parse_ok(""), Config::default());
    }

    #[test]
    fn cassandra_style_file_parses() {
        let config = parse_ok(
            r#"
cluster_name: 'My Cluster'
listen_address: 10.0.0.5
rpc_address:
native_transport_port: 19042
data_file_directories:
    - /var/lib/rocksandra/data
commitlog_sync: batch
commitlog_sync_period: 2s
num_tokens: 8
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "10.0.0.1:7000, 10.0.0.2"
authenticator: PasswordAuthenticator
authorizer: org.apache.cassandra.auth.CassandraAuthorizer
roles_validity: 0ms
permissions_validity: 2000ms
credentials_validity: 2s
endpoint_snitch: GossipingPropertyFileSnitch
data_center: dc2
rack: r7
native_transport_max_frame_size: 32MiB
native_transport_max_concurrent_connections: -1
native_transport_max_requests_per_connection: 100
native_transport_max_concurrent_requests: 1000
block_cache_size: 1GiB
point_cache_size: 96MiB
prepared_statements_cache_size: 2MiB
prometheus_address: 0.0.0.0
prometheus_port: 9500
"#,
        );
        assert_eq!(config.cluster_name, "My Cluster");
        assert_eq!(
            config.listen_address,
            "10.0.0.5".parse::<IpAddr>().expect("ip")
        );
        assert_eq!(config.rpc_address, None, "an empty rpc_address means unset");
        assert_eq!(
            config.native_address(),
            "10.0.0.5:19042".parse().expect("addr")
        );
        assert_eq!(
            config.data_file_directories,
            vec![PathBuf::from("/var/lib/rocksandra/data")]
        );
        assert_eq!(config.commitlog_sync, CommitlogSync::Batch);
        assert_eq!(config.commitlog_sync_period, Duration::from_secs(2));
        assert_eq!(config.num_tokens, 8);
        assert_eq!(
            config.seed_provider.seeds,
            vec!["10.0.0.1:7000", "10.0.0.2"]
        );
        assert_eq!(config.authenticator, Authenticator::Password);
        assert_eq!(config.authorizer, Authorizer::Cassandra);
        assert_eq!(config.auth_caches.roles.validity_ms, 0);
        assert_eq!(config.auth_caches.permissions.validity_ms, 2_000);
        assert_eq!(config.auth_caches.credentials.validity_ms, 2_000);
        assert!(config.unused_keys.is_empty(), "{:?}", config.unused_keys);
        assert_eq!(config.endpoint_snitch, "GossipingPropertyFileSnitch");
        assert_eq!(
            (config.data_center.as_str(), config.rack.as_str()),
            ("dc2", "r7")
        );
        assert_eq!(config.max_frame_bytes, 32 << 20);
        assert_eq!(
            config.max_connections, MAX_CONNECTIONS_DEFAULT,
            "-1 keeps our bound"
        );
        assert_eq!(config.max_requests_per_connection, 100);
        assert_eq!(config.max_requests, 1000);
        assert_eq!(config.block_cache_bytes, Some(1 << 30));
        assert_eq!(config.prepared_statements_cache_bytes, 2 << 20);
        assert_eq!(block_cache_default(24 << 30), 6 << 30);
        assert_eq!(block_cache_default(512 << 20), BLOCK_CACHE_BYTES_MIN);
        assert_eq!(config.point_cache_bytes, Some(96 << 20));
        assert_eq!(parse_ok("").point_cache_bytes, None);
        assert_eq!(point_cache_default(1 << 30), 256 << 20);
        assert_eq!(
            config.prometheus_listen_address(),
            Some("0.0.0.0:9500".parse().expect("addr"))
        );
    }

    #[test]
    fn prometheus_endpoint_defaults_to_localhost_9180_and_port_0_turns_it_off() {
        let metrics = |yaml: &str| parse_ok(yaml).prometheus_listen_address();
        let address = |text: &str| Some(text.parse::<SocketAddr>().expect("addr"));
        assert_eq!(metrics(""), address("127.0.0.1:9180"));
        assert_eq!(
            metrics("prometheus_port: 9999\n"),
            address("127.0.0.1:9999")
        );
        assert_eq!(
            metrics("prometheus_address: localhost\n"),
            address("127.0.0.1:9180")
        );
        assert_eq!(metrics("prometheus_address: ::1\n"), address("[::1]:9180"));
        assert_eq!(metrics("prometheus_port: 0\n"), None);
        assert_eq!(
            metrics("prometheus_listen_address: 10.0.0.1:9500\n"),
            address("10.0.0.1:9500"),
            "the reserved single key still works"
        );
        assert_eq!(metrics("prometheus_listen_address: 10.0.0.1:0\n"), None);
        assert_eq!(
            error_text("prometheus_listen_address: 10.0.0.1:9500\nprometheus_port: 9180\n"),
            "both prometheus_port and its legacy form prometheus_listen_address are set; \
             keep one"
        );
        assert!(error_text("prometheus_address: metrics-host\n").contains("prometheus_address"));
        assert!(error_text("prometheus_port: 70000\n").contains("rocksandra.yaml"));
    }

    #[test]
    fn client_limits_parse_with_cassandra_defaults() {
        let defaults = parse_ok("");
        assert_eq!(defaults.idle_timeout, None);
        assert_eq!(defaults.max_connections_per_ip, None);
        assert_eq!(defaults.max_request_bytes_in_flight, 256 << 20);
        assert_eq!(defaults.max_request_bytes_in_flight_per_ip, 64 << 20);
        let config = parse_ok(
            "native_transport_idle_timeout: 60s\n\
             native_transport_max_concurrent_connections_per_ip: 8\n\
             native_transport_max_request_data_in_flight: 10MiB\n\
             native_transport_max_request_data_in_flight_per_ip: 512KiB\n",
        );
        assert_eq!(config.idle_timeout, Some(Duration::from_secs(60)));
        assert_eq!(config.max_connections_per_ip, Some(8));
        assert_eq!(config.max_request_bytes_in_flight, 10 << 20);
        assert_eq!(config.max_request_bytes_in_flight_per_ip, 512 << 10);
        // Cassandra's "off" spellings.
        let off = parse_ok(
            "native_transport_idle_timeout: 0ms\n\
             native_transport_max_concurrent_connections_per_ip: -1\n",
        );
        assert_eq!((off.idle_timeout, off.max_connections_per_ip), (None, None));
        let zero = parse_ok(
            "native_transport_max_concurrent_connections_per_ip: 0\n\
             native_transport_max_request_data_in_flight: 0B\n",
        );
        assert_eq!(zero.max_connections_per_ip, None);
        assert_eq!(zero.max_request_bytes_in_flight, 0);
    }

    #[test]
    fn client_limits_accept_the_legacy_keys() {
        let config = parse_ok(
            "native_transport_idle_timeout_in_ms: 1500\n\
             native_transport_max_concurrent_requests_in_bytes: 4096\n\
             native_transport_max_concurrent_requests_in_bytes_per_ip: -1\n",
        );
        assert_eq!(config.idle_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(config.max_request_bytes_in_flight, 4096);
        assert_eq!(
            config.max_request_bytes_in_flight_per_ip, MAX_REQUEST_BYTES_IN_FLIGHT_PER_IP_DEFAULT,
            "-1 is the old spelling of the default"
        );
        assert!(error_text(
            "native_transport_idle_timeout: 1s\nnative_transport_idle_timeout_in_ms: 1000\n"
        )
        .starts_with("both native_transport_idle_timeout"));
    }

    #[test]
    fn client_limits_out_of_range_name_their_key() {
        for (yaml, key) in [
            (
                "native_transport_idle_timeout: 10\n",
                "native_transport_idle_timeout",
            ),
            (
                "native_transport_idle_timeout: 500us\n",
                "native_transport_idle_timeout",
            ),
            (
                "native_transport_max_concurrent_connections_per_ip: -2\n",
                "native_transport_max_concurrent_connections_per_ip",
            ),
            (
                "native_transport_max_request_data_in_flight: -1B\n",
                "native_transport_max_request_data_in_flight",
            ),
            (
                "native_transport_max_request_data_in_flight_per_ip: 1MB\n",
                "native_transport_max_request_data_in_flight_per_ip",
            ),
            (
                "native_transport_max_concurrent_requests_in_bytes: -5\n",
                "native_transport_max_concurrent_requests_in_bytes",
            ),
        ] {
            let message = error_text(yaml);
            assert!(
                message.starts_with(&format!("invalid value for {key}:")),
                "{yaml}: {message}"
            );
        }
    }

    #[test]
    fn prometheus_port_flag_overrides_the_file() {
        let mut config = parse_ok("prometheus_address: 10.0.0.5\nprometheus_port: 0\n");
        assert_eq!(config.prometheus_listen_address(), None);
        config.apply_overrides(&Cli::parse_from([
            "rocksandra",
            "--prometheus-port",
            "9500",
        ]));
        assert_eq!(
            config.prometheus_listen_address(),
            Some("10.0.0.5:9500".parse().expect("addr"))
        );
        config.apply_overrides(&Cli::parse_from(["rocksandra", "--prometheus-port", "0"]));
        assert_eq!(config.prometheus_listen_address(), None);
    }

    #[test]
    fn unknown_keys_are_named() {
        assert_eq!(
            error_text("cluster_name: x\nfoo: 1\nconcurrent_reads: 32\nbar: 2\n"),
            "Invalid yaml. Please remove properties [foo, bar] from your rocksandra.yaml: \
             neither Rocksandra nor Cassandra 5.0 knows them"
        );
        assert!(
            error_text("seed_provider:\n  - class_name: SimpleSeedProvider\n    extra: 1\n")
                .contains("[seed_provider.0.extra]")
        );
        assert!(
            error_text("commitlog_sync_period_in_sec: 10\n")
                .contains("[commitlog_sync_period_in_sec]"),
            "a misspelt legacy name is not a Cassandra key"
        );
    }

    #[test]
    fn hints_directory_is_read_and_must_not_be_empty() {
        assert_eq!(parse_ok("").hints_directory, None);
        let config = parse_ok("hints_directory: /srv/hints\n");
        assert_eq!(config.hints_directory, Some(PathBuf::from("/srv/hints")));
        assert!(error_text("hints_directory: ''\n").contains("hints_directory"));
    }

    #[test]
    fn request_timeouts_parse_with_cassandra_defaults() {
        let defaults = parse_ok("").request_timeouts;
        assert_eq!(defaults.read, Duration::from_secs(5));
        assert_eq!(defaults.write, Duration::from_secs(2));
        assert_eq!(defaults.range, Duration::from_secs(10));
        assert_eq!(defaults.cas_contention, Duration::from_secs(1));
        assert_eq!(defaults.truncate, Duration::from_secs(60));
        let set = parse_ok(
            "read_request_timeout: 20ms\nwrite_request_timeout_in_ms: 15\n\
             range_request_timeout: 3s\ncas_contention_timeout: 250ms\n\
             truncate_request_timeout_in_ms: 5000\n",
        )
        .request_timeouts;
        assert_eq!(set.read, Duration::from_millis(20));
        assert_eq!(set.write, Duration::from_millis(15));
        assert_eq!(set.range, Duration::from_secs(3));
        assert_eq!(set.cas_contention, Duration::from_millis(250));
        assert_eq!(set.truncate, Duration::from_secs(5));
        assert!(error_text("read_request_timeout: 0ms\n").contains("read_request_timeout"));
        assert!(
            error_text("write_request_timeout: 1s\nwrite_request_timeout_in_ms: 1000\n")
                .contains("write_request_timeout")
        );
    }

    #[test]
    fn cassandra_keys_are_accepted_and_named_in_one_warning() {
        let config = parse_ok(
            "cluster_name: c\nconcurrent_reads: 64\ncounter_write_request_timeout_in_ms: 5000\n\
             internode_compression: dc\n\
             cross_node_timeout: true\n",
        );
        assert_eq!(config.cluster_name, "c");
        assert_eq!(
            config.unused_keys,
            vec![
                "concurrent_reads",
                "counter_write_request_timeout_in_ms",
                "internode_compression",
                "cross_node_timeout"
            ]
        );
        assert_eq!(
            config.unused_keys_warning().as_deref(),
            Some(
                "cassandra.yaml keys accepted but not used by Rocksandra: concurrent_reads, \
                 counter_write_request_timeout_in_ms, internode_compression, cross_node_timeout"
            )
        );
        assert_eq!(parse_ok("cluster_name: c\n").unused_keys_warning(), None);
    }

    #[test]
    fn read_thresholds_as_cassandra_reads_them() {
        let off = parse_ok("").read_thresholds;
        assert_eq!(off, ReadThresholds::default());
        assert!(!off.enabled);
        let on = parse_ok(
            "read_thresholds_enabled: true\n\
             coordinator_read_size_warn_threshold: 2KiB\n\
             coordinator_read_size_fail_threshold: 8KiB\n\
             local_read_size_warn_threshold: 4KiB\n\
             local_read_size_fail_threshold:\n\
             row_index_read_size_fail_threshold: 1MiB\n",
        )
        .read_thresholds;
        assert!(on.enabled);
        let pair = |warn, fail| SizeThresholds { warn, fail };
        assert_eq!(on.coordinator_read_size, pair(Some(2048), Some(8192)));
        assert_eq!(on.local_read_size, pair(Some(4096), None));
        assert_eq!(on.row_index_read_size, pair(None, Some(1 << 20)));
        // Cassandra 5.0.6's startup check, as it words it.
        let refused =
            parse("local_read_size_warn_threshold: 2KiB\nlocal_read_size_fail_threshold: 1KiB\n")
                .map(|_| ())
                .unwrap_err()
                .to_string();
        assert!(
            refused.contains(
                "local_read_size_fail_threshold (1KiB) must be greater than or equal to \
                 local_read_size_warn_threshold (2KiB)"
            ),
            "{refused}"
        );
        assert!(parse("coordinator_read_size_warn_threshold: 2kb\n").is_err());
    }

    #[test]
    fn stream_throughput_as_cassandra_reads_it() {
        assert_eq!(parse_ok("").stream_throughput_bytes, 24 << 20);
        let rate = |yaml: &str| parse_ok(yaml).stream_throughput_bytes;
        assert_eq!(rate("stream_throughput_outbound: 0MiB/s"), 0);
        assert_eq!(rate("stream_throughput_outbound: 512KiB/s"), 512 << 10);
        // The legacy key is in megabits, 125,000 bytes each.
        assert_eq!(
            rate("stream_throughput_outbound_megabits_per_sec: 200"),
            25_000_000
        );
        let both =
            "stream_throughput_outbound: 1MiB/s\nstream_throughput_outbound_megabits_per_sec: 8";
        assert!(parse(both).is_err());
        let error = parse("stream_throughput_outbound: fast").expect_err("not a rate");
        assert!(
            error.to_string().contains("stream_throughput_outbound"),
            "{error}"
        );
    }

    #[test]
    fn a_stock_cassandra_5_yaml_parses() {
        let text = include_str!("../tests/fixtures/cassandra-5.0.yaml");
        let config = parse_ok(text);
        assert_eq!(config.cluster_name, "Test Cluster");
        assert_eq!(
            config.native_address(),
            "127.0.0.1:9042".parse().expect("addr")
        );
        assert_eq!(config.memtable_space_bytes, Some(4 << 30));
        assert_eq!(config.compaction_throughput_bytes, Some(64 << 20));
        assert_eq!(config.concurrent_compactors, Some(2));
        let warning = config.unused_keys_warning().expect("a warning");
        for key in [
            "allocate_tokens_for_local_replication_factor",
            "partitioner",
            "concurrent_reads",
            "internode_compression",
            "memtable_allocation_type",
            "memtable",
            "crypto_provider",
            "storage_compatibility_mode",
        ] {
            assert!(
                config.unused_keys.iter().any(|k| k == key),
                "{key}: {warning}"
            );
        }
        for used in [
            "cluster_name",
            "compaction_throughput",
            "memtable_heap_space",
            "server_encryption_options",
        ] {
            assert!(!config.unused_keys.iter().any(|k| k == used), "{used}");
        }
        // Its server_encryption_options (internode_encryption: none, a JKS
        // keystore) leave the storage port plain.
        assert_eq!(
            config.server_encryption.internode,
            rocksandra_cluster::tls::InternodeEncryption::None
        );
    }

    #[test]
    fn storage_keys_reach_the_config() {
        let defaults = parse_ok("");
        assert_eq!(defaults.commitlog_directory, None);
        assert_eq!(defaults.memtable_space_bytes, None);
        assert_eq!(defaults.compaction_throughput_bytes, None);
        assert_eq!(defaults.concurrent_compactors, None);
        let config = parse_ok(
            "commitlog_directory: /wal\nmemtable_heap_space: 512MiB\n\
             memtable_offheap_space: 128MiB\ncompaction_throughput: 16MiB/s\n\
             concurrent_compactors: 4\n",
        );
        assert_eq!(config.commitlog_directory, Some(PathBuf::from("/wal")));
        assert_eq!(config.memtable_space_bytes, Some(640 << 20));
        assert_eq!(config.compaction_throughput_bytes, Some(16 << 20));
        assert_eq!(config.concurrent_compactors, Some(4));
        let legacy = parse_ok(
            "memtable_heap_space_in_mb: 100\nmemtable_offheap_space_in_mb: 28\n\
             compaction_throughput_mb_per_sec: 8\n",
        );
        assert_eq!(legacy.memtable_space_bytes, Some(128 << 20));
        assert_eq!(legacy.compaction_throughput_bytes, Some(8 << 20));
        assert_eq!(
            parse_ok("memtable_offheap_space: 1GiB\n").memtable_space_bytes,
            Some(1 << 30)
        );
        for unthrottled in [
            "compaction_throughput: 0MiB/s\n",
            "compaction_throughput_mb_per_sec: 0\n",
        ] {
            assert_eq!(parse_ok(unthrottled).compaction_throughput_bytes, None);
        }
        assert_eq!(
            parse_ok("compaction_throughput: 512KiB/s\n").compaction_throughput_bytes,
            Some(512 << 10)
        );
    }

    #[test]
    fn storage_keys_out_of_range_name_their_key() {
        for (yaml, key) in [
            ("commitlog_directory: ''\n", "commitlog_directory"),
            ("memtable_heap_space: 0MiB\n", "memtable_heap_space"),
            ("memtable_heap_space: 512MB\n", "memtable_heap_space"),
            (
                "memtable_offheap_space_in_mb: 0\n",
                "memtable_offheap_space",
            ),
            ("compaction_throughput: 64MiB\n", "compaction_throughput"),
            ("compaction_throughput: 64MB/s\n", "compaction_throughput"),
            ("concurrent_compactors: 0\n", "concurrent_compactors"),
            ("concurrent_compactors: 257\n", "concurrent_compactors"),
            ("data_file_directories: [/a, /b]\n", "data_file_directories"),
        ] {
            let message = error_text(yaml);
            assert!(
                message.starts_with(&format!("invalid value for {key}:")),
                "{yaml}: {message}"
            );
        }
        assert!(error_text("data_file_directories: [/a, /b]\n").contains("2 directories given"));
        assert!(
            error_text("compaction_throughput: 1MiB/s\ncompaction_throughput_mb_per_sec: 1\n")
                .starts_with("both compaction_throughput and its legacy form")
        );
        assert!(
            error_text("memtable_heap_space: 1MiB\nmemtable_heap_space_in_mb: 1\n")
                .starts_with("both memtable_heap_space and its legacy form")
        );
    }

    #[test]
    fn gossiping_property_file_snitch_reads_rackdc_next_to_the_yaml() {
        let dir = tempfile::tempdir().expect("tempdir");
        let yaml = dir.path().join("cassandra.yaml");
        let snitch = "endpoint_snitch: GossipingPropertyFileSnitch\ndata_center: yaml-dc\n";
        std::fs::write(&yaml, snitch).expect("write");
        let config = Config::from_file(&yaml).expect("no properties file: the yaml's");
        assert_eq!(
            (config.data_center.as_str(), config.rack.as_str()),
            ("yaml-dc", "rack1")
        );
        let rackdc = dir.path().join(RACKDC_FILE);
        std::fs::write(
            &rackdc,
            "# where\ndc=DC-East\n  rack : r7\nprefer_local=true\n",
        )
        .expect("write");
        let config = Config::from_file(&yaml).expect("parses");
        assert_eq!(
            (config.data_center.as_str(), config.rack.as_str()),
            ("DC-East", "r7")
        );
        std::fs::write(&yaml, "endpoint_snitch: SimpleSnitch\n").expect("write");
        let config = Config::from_file(&yaml).expect("parses");
        assert_eq!(
            config.data_center, DATA_CENTER_DEFAULT,
            "other snitches ignore the file"
        );
        std::fs::write(&yaml, snitch).expect("write");
        std::fs::write(&rackdc, "dc=\n").expect("write");
        let error = Config::from_file(&yaml).expect_err("empty dc").to_string();
        assert!(
            error.contains(RACKDC_FILE) && error.contains("dc is empty"),
            "{error}"
        );
    }

    #[test]
    fn rpc_address_follows_listen_address_unless_given() {
        let config = parse_ok(
            "listen_address: 10.1.1.1\nrpc_address: 0.0.0.0\nbroadcast_rpc_address: 10.1.1.2\n",
        );
        assert_eq!(
            config.native_address(),
            "0.0.0.0:9042".parse().expect("addr")
        );
        assert_eq!(
            config.advertised_rpc_address(),
            "10.1.1.2".parse::<IpAddr>().expect("ip")
        );
        let config = parse_ok("listen_address: 10.1.1.1\nrpc_address: 10.1.1.3\n");
        assert_eq!(
            config.advertised_rpc_address(),
            "10.1.1.3".parse::<IpAddr>().expect("ip")
        );
        let config = parse_ok("listen_address: localhost\n");
        assert_eq!(
            config.native_address(),
            "127.0.0.1:9042".parse().expect("addr")
        );
        assert!(error_text("listen_address: my-host\n").contains("listen_address"));
    }

    #[test]
    fn legacy_keys_work_but_not_together_with_the_new_ones() {
        let config = parse_ok(
            "commitlog_sync_period_in_ms: 2500\nnative_transport_max_frame_size_in_mb: 8\n\
             prepared_statements_cache_size_mb: 3\n",
        );
        assert_eq!(config.prepared_statements_cache_bytes, 3 << 20);
        assert_eq!(
            parse_ok("prepared_statements_cache_size:\n").prepared_statements_cache_bytes,
            10 << 20,
            "empty is Cassandra's auto"
        );
        assert_eq!(config.commitlog_sync_period, Duration::from_millis(2500));
        assert_eq!(config.max_frame_bytes, 8 << 20);
        assert_eq!(
            error_text("commitlog_sync_period: 10s\ncommitlog_sync_period_in_ms: 10000\n"),
            "both commitlog_sync_period and its legacy form commitlog_sync_period_in_ms \
             are set; keep one"
        );
    }

    #[test]
    fn user_defined_functions_take_their_old_name_too() {
        assert!(!parse_ok("").user_defined_functions_enabled);
        assert!(parse_ok("user_defined_functions_enabled: true\n").user_defined_functions_enabled);
        assert!(parse_ok("enable_user_defined_functions: true\n").user_defined_functions_enabled);
        assert_eq!(
            error_text(
                "user_defined_functions_enabled: true\nenable_user_defined_functions: true\n"
            ),
            "both user_defined_functions_enabled and its legacy form \
             enable_user_defined_functions are set; keep one"
        );
    }

    #[test]
    fn duration_strings() {
        assert_eq!(parse_duration("10000ms"), Ok(Duration::from_millis(10_000)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10S"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("5us"), Ok(Duration::from_micros(5)));
        assert_eq!(parse_duration("5µs"), Ok(Duration::from_micros(5)));
        assert_eq!(parse_duration("7ns"), Ok(Duration::from_nanos(7)));
        for bad in [
            "",
            "10",
            "ms",
            "-1s",
            "1.5s",
            "10 sec",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(error_text("commitlog_sync_period: 10\n").contains("commitlog_sync_period"));
        assert!(error_text("commitlog_sync_period: 0ms\n").contains("more than 0"));
    }

    #[test]
    fn data_size_strings() {
        assert_eq!(parse_data_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_data_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_data_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_data_size("100B"), Ok(100));
        for bad in ["16", "16MB", "16mib", "MiB", "-1B", "99999999999999GiB"] {
            assert!(parse_data_size(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(error_text("native_transport_max_frame_size: 1B\n").contains("outside"));
    }

    #[test]
    fn auth_consistency_levels_take_cassandras_enum_names() {
        let defaults = parse_ok("cluster_name: x\n");
        assert_eq!(
            defaults.auth_read_consistency_level,
            Consistency::LocalQuorum
        );
        assert_eq!(
            defaults.auth_write_consistency_level,
            Consistency::EachQuorum
        );
        for level in Consistency::ALL {
            let config = parse_ok(&format!(
                "auth_read_consistency_level: {0}\nauth_write_consistency_level: {0}\n",
                level.name()
            ));
            assert_eq!(config.auth_read_consistency_level, level);
            assert_eq!(config.auth_write_consistency_level, level);
        }
        // valueOf is exact: no lower case, no blanks, no codes.
        for bad in ["one", "Quorum", "LOCAL-QUORUM", "' ONE'", "1", "NODE_LOCAL"] {
            let text = error_text(&format!("auth_write_consistency_level: {bad}\n"));
            assert!(
                text.contains("auth_write_consistency_level"),
                "{bad}: {text}"
            );
        }
        assert!(error_text("auth_read_consistency_level: one\n")
            .contains("No enum constant org.apache.cassandra.db.ConsistencyLevel.one"));
    }

    #[test]
    fn bad_values_are_reported_with_their_key() {
        assert!(error_text("commitlog_sync: group\n").contains("commitlog_sync"));
        assert!(error_text("authenticator: LdapAuthenticator\n").contains("authenticator"));
        assert!(error_text("num_tokens: 0\n").contains("num_tokens"));
        assert!(
            error_text("native_transport_max_concurrent_connections: 0\n")
                .contains("native_transport_max_concurrent_connections")
        );
        assert!(error_text("native_transport_port: 70000\n").contains("rocksandra.yaml"));
        assert!(error_text("seed_provider:\n  - class_name: Foo\n").contains("seed_provider"));
        assert!(error_text("cluster_name: [unclosed\n").contains("rocksandra.yaml"));
    }

    #[test]
    fn cassandra_authorizer_needs_an_authenticator() {
        let error = error_text("authorizer: CassandraAuthorizer\n");
        assert!(
            error.contains("AllowAllAuthenticator can't be used with CassandraAuthorizer"),
            "{error}"
        );
    }

    #[test]
    fn authenticator_accepts_cassandra5_parameterized_form() {
        let config = parse_ok("authenticator:\n  class_name: PasswordAuthenticator\n");
        assert_eq!(config.authenticator, Authenticator::Password);
    }

    #[test]
    fn broadcast_address_is_what_other_nodes_are_told() {
        let ip = |text: &str| text.parse::<IpAddr>().expect("ip");
        let config = parse_ok("listen_address: 10.1.1.1\n");
        assert_eq!(config.advertised_address(), ip("10.1.1.1"));
        assert!(!config.listen_on_broadcast_address);
        let config = parse_ok(
            "listen_address: 10.1.1.1\nbroadcast_address: 192.0.2.7\n\
             listen_on_broadcast_address: true\n",
        );
        assert_eq!(config.listen_address, ip("10.1.1.1"));
        assert_eq!(config.advertised_address(), ip("192.0.2.7"));
        assert!(config.listen_on_broadcast_address);
        assert!(config.unused_keys.is_empty(), "{:?}", config.unused_keys);
        assert!(error_text("broadcast_address: my-host\n").contains("broadcast_address"));
    }

    #[test]
    fn interfaces_name_the_addresses_to_bind() {
        let config = Config::from_yaml("listen_interface: lo\nrpc_interface: lo\n", "t.yaml")
            .expect("loopback interface");
        assert_eq!(config.listen_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(config.rpc_address, Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        for (yaml, text) in [
            (
                "listen_address: 127.0.0.1\nlisten_interface: lo\n",
                "Set listen_address OR listen_interface, not both",
            ),
            (
                "rpc_address: 127.0.0.1\nrpc_interface: lo\n",
                "Set rpc_address OR rpc_interface, not both",
            ),
            (
                "listen_interface: no-such-interface\n",
                "Configured listen_interface \"no-such-interface\" could not be found",
            ),
        ] {
            let error = Config::from_yaml(yaml, "t.yaml")
                .expect_err(yaml)
                .to_string();
            assert!(error.contains(text), "{yaml}: {error}");
        }
    }

    #[test]
    fn wildcard_addresses_are_refused_in_cassandra_words() {
        for (yaml, text) in [
            (
                "listen_address: 0.0.0.0\n",
                "listen_address cannot be a wildcard address (0.0.0.0)!",
            ),
            (
                "broadcast_address: '::'\n",
                "broadcast_address cannot be a wildcard address (::)!",
            ),
            (
                "broadcast_rpc_address: 0.0.0.0\n",
                "broadcast_rpc_address cannot be a wildcard address (0.0.0.0)!",
            ),
            (
                "rpc_address: 0.0.0.0\n",
                "If rpc_address is set to a wildcard address (0.0.0.0), then you must set \
                 broadcast_rpc_address to a value other than 0.0.0.0",
            ),
        ] {
            let error = error_text(yaml);
            assert!(error.contains(text), "{yaml:?}: {error}");
        }
        // The flags are checked too, once they are applied.
        let cli = Cli::parse_from(["rocksandra", "--listen-address", "0.0.0.0"]);
        let error = Config::load(&cli).expect_err("wildcard").to_string();
        assert!(
            error.contains("listen_address cannot be a wildcard address (0.0.0.0)!"),
            "{error}"
        );
    }

    #[test]
    fn flags_override_the_file() {
        let mut config = parse_ok("listen_address: 10.0.0.5\nnative_transport_port: 1\n");
        let cli = Cli::parse_from([
            "rocksandra",
            "--data-dir",
            "/tmp/d",
            "--listen-address",
            "127.0.0.2",
            "--native-port",
            "9999",
        ]);
        config.apply_overrides(&cli);
        assert_eq!(config.data_file_directories, vec![PathBuf::from("/tmp/d")]);
        assert_eq!(
            config.native_address(),
            "127.0.0.2:9999".parse().expect("addr")
        );
        let cli = Cli::parse_from(["rocksandra", "--rpc-address", "127.0.0.3"]);
        config.apply_overrides(&cli);
        assert_eq!(
            config.native_address(),
            "127.0.0.3:9999".parse().expect("addr")
        );
        assert_eq!(
            config.listen_address,
            "127.0.0.2".parse::<IpAddr>().expect("ip")
        );
    }

    #[test]
    fn load_reads_the_config_flag() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("node.yaml");
        std::fs::write(&path, "cluster_name: from file\nbogus: true\n").expect("write");
        let cli = Cli {
            config: Some(path.clone()),
            ..Cli::default()
        };
        match Config::load(&cli) {
            Err(e) => assert!(e.to_string().contains("[bogus] from your node.yaml"), "{e}"),
            Ok(c) => panic!("should fail: {c:?}"),
        }
        std::fs::write(&path, "cluster_name: from file\n").expect("write");
        assert_eq!(Config::load(&cli).expect("loads").cluster_name, "from file");
        let missing = Cli {
            config: Some(dir.path().join("missing.yaml")),
            ..Cli::default()
        };
        assert!(matches!(
            Config::load(&missing),
            Err(ConfigError::Read { .. })
        ));
    }

    #[test]
    fn no_arguments_means_defaults() {
        let cli = Cli::parse_from(["rocksandra"]);
        assert_eq!(cli, Cli::default());
        assert_eq!(Config::load(&cli).expect("defaults"), Config::default());
    }

    #[test]
    fn log_directory_from_the_flag_or_cassandra_log_dir() {
        use crate::logging::LogFormat;
        let variable = |dir: &str| Some(std::ffi::OsString::from(dir));
        let cli = Cli::parse_from(["rocksandra"]);
        assert_eq!(cli.log_options_with(None).dir, None);
        assert_eq!(cli.log_options_with(variable("")).dir, None);
        assert_eq!(
            cli.log_options_with(variable("/var/log/c")).dir,
            Some(PathBuf::from("/var/log/c"))
        );
        assert_eq!(cli.log_options_with(None).format, LogFormat::Text);
        let cli = Cli::parse_from(["rocksandra", "--log-dir", "logs", "--log-format", "json"]);
        let options = cli.log_options_with(variable("/var/log/c"));
        assert_eq!(options.dir, Some(PathBuf::from("logs")));
        assert_eq!(options.format, LogFormat::Json);
        assert!(Cli::try_parse_from(["rocksandra", "--log-format", "xml"]).is_err());
    }

    #[test]
    fn log_rotation_limits_default_to_cassandras() {
        use crate::logging::Rotation;
        let cli = Cli::parse_from(["rocksandra"]);
        let rotation = cli.log_options_with(None).rotation;
        assert_eq!(rotation, Rotation::default());
        assert_eq!(rotation.max_file_size, 50 << 20);
        assert_eq!(rotation.max_history_days, 7);
        assert_eq!(rotation.total_size_cap, 5 << 30);
        let cli = Cli::parse_from([
            "rocksandra",
            "--log-max-file-size",
            "1KiB",
            "--log-max-history",
            "2",
            "--log-total-size-cap",
            "10MiB",
        ]);
        let rotation = cli.log_options_with(None).rotation;
        assert_eq!(
            rotation,
            Rotation {
                max_file_size: 1024,
                max_history_days: 2,
                total_size_cap: 10 << 20,
            }
        );
        for bad in [
            ["--log-max-file-size", "0B"],
            ["--log-max-file-size", "50MB"],
            ["--log-max-history", "0"],
            ["--log-total-size-cap", "lots"],
        ] {
            let args = ["rocksandra", bad[0], bad[1]];
            assert!(Cli::try_parse_from(args).is_err(), "{bad:?} accepted");
        }
    }
}
