//! The node's settings that statements read (from cassandra.yaml, set by
//! the server as it starts): how clients log in, the guardrails, the
//! tombstone thresholds, the read timeouts and the auth caches. A leaf of the statement
//! modules: it knows no statement.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};

use arc_swap::ArcSwap;
use rocksandra_wire::Consistency;

use crate::auth_cache::AuthCaches;
use crate::deadline::TimeoutSettings;
use crate::disk_usage::LocalDiskUsage;
use crate::guardrails::Guardrails;
use crate::tombstones::TombstoneSettings;

/// How clients log in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthConfig {
    pub password_authenticator: bool,
    /// `authorizer: CassandraAuthorizer`: permissions are checked.
    pub cassandra_authorizer: bool,
    /// bcrypt cost (`auth_bcrypt_gensalt_log2_rounds`, Cassandra's default 10).
    pub bcrypt_cost: u32,
    /// `auth_read_consistency_level`: reads of roles (other than the
    /// default superuser), their members and their permissions.
    pub read_consistency: Consistency,
    /// `auth_write_consistency_level`: writes of the same.
    pub write_consistency: Consistency,
}

/// Cassandra 5.0's `auth_read_consistency_level` default.
pub const DEFAULT_AUTH_READ_CONSISTENCY: Consistency = Consistency::LocalQuorum;
/// Cassandra 5.0's `auth_write_consistency_level` default.
pub const DEFAULT_AUTH_WRITE_CONSISTENCY: Consistency = Consistency::EachQuorum;

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            password_authenticator: false,
            cassandra_authorizer: false,
            bcrypt_cost: 10,
            read_consistency: DEFAULT_AUTH_READ_CONSISTENCY,
            write_consistency: DEFAULT_AUTH_WRITE_CONSISTENCY,
        }
    }
}

/// The settings in force; the executor owns them, statements read them.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) auth: RwLock<AuthConfig>,
    /// Cassandra's guardrails (`crate::guardrails`): the defaults until
    /// set; `nodetool setguardrailsconfig` replaces them while the node runs.
    /// Read on every statement: a load takes no lock and no reference count.
    pub(crate) guardrails: ArcSwap<Guardrails>,
    /// `tombstone_warn_threshold` and `tombstone_failure_threshold`,
    /// shared with the cluster's replica (`Executor::tombstone_settings`).
    pub(crate) tombstones: Arc<TombstoneSettings>,
    /// `read_thresholds_enabled` and the read size thresholds, shared with
    /// the cluster's replica and coordinator (`Executor::read_threshold_settings`).
    pub(crate) read_thresholds: Arc<crate::read_thresholds::ReadThresholdSettings>,
    /// `read_request_timeout` and `range_request_timeout` (`deadline`).
    pub(crate) read_timeouts: TimeoutSettings,
    /// The roles, permissions and credentials caches (`auth_cache`).
    pub(crate) auth_caches: AuthCaches,
    /// This node's data disk usage, as the server last measured it
    /// (`disk_usage`).
    pub(crate) disk_usage: Arc<LocalDiskUsage>,
    /// The time of the last list element this node appended (100-ns
    /// intervals since 1582-10-15), so that appends follow each other in
    /// the order they are made (`modify::list_timeuuid`).
    pub(crate) last_append_ticks: AtomicU64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            auth: RwLock::new(AuthConfig::default()),
            guardrails: ArcSwap::from_pointee(Guardrails::DEFAULT),
            tombstones: Arc::default(),
            read_thresholds: Arc::default(),
            read_timeouts: TimeoutSettings::new(Default::default()),
            auth_caches: AuthCaches::default(),
            disk_usage: Arc::default(),
            last_append_ticks: AtomicU64::new(0),
        }
    }
}

impl Settings {
    pub(crate) fn auth_config(&self) -> AuthConfig {
        *self.auth.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The node's guardrails now, whoever asks.
    pub(crate) fn guardrails(&self) -> arc_swap::Guard<Arc<Guardrails>> {
        self.guardrails.load()
    }
}
