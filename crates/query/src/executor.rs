//! The executor: parses and runs statements against the schema and the
//! storage engine. One instance serves every connection.
//!
//! Time and randomness come in through `Env`, so tests control them.
//! Schema changes are serialized by `ddl_lock`; a published schema is an
//! immutable `Arc<Schema>` swapped under `schema`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use md5::{Digest, Md5};
use rocksandra_cql::ast::{
    BindReceiver, CreateAggregate, CreateIndex, CreateMaterializedView, CreateTrigger, DropKind,
    DropObject, Modification, ParsedStatement, QualifiedName, Statement,
};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_storage::{Engine, TableId};
use rocksandra_wire::{
    ColumnSpec, ColumnsMetadata, Prepared, PreparedMetadata, ResultBody, RowsMetadata,
    SchemaChange, TableSpec,
};

use crate::auth::{self, AuthConfig};
use crate::authz;
use crate::ctx::{RunStatement, StatementCtx};
use crate::ddl::{self, DdlOutcome};
use crate::error::{QueryError, Result};
use crate::guard::StatementGuard;
use crate::guardrails::Guardrails;
use crate::index::entries::{stored_ids, stored_tables};
use crate::metered::MeteredProxy;
use crate::metrics::ClientRequestMetrics;
use crate::prepared_cache::PreparedCache;
pub use crate::request::{bind_values, Env, Outcome, Request};
use crate::schema::keyspace_of;
use crate::schema::{Schema, Table, SCHEMA_FILE};
use crate::settings::Settings;
use crate::snapshot::dropped_name;
use crate::tombstones::{TombstoneSettings, TombstoneThresholds};
use crate::{modify, select, NodeInfo};
use rocksandra_storage::fs::write_atomically;

/// A held right to change the cluster's schema.
#[derive(Debug)]
pub struct SchemaLease(pub u64);

/// How schema changes happen in a cluster: one at a time cluster-wide,
/// each starting from the newest schema and reaching every live node
/// before it is answered.
pub trait SchemaSync: Send + Sync {
    /// Takes the cluster's schema lock and installs the newest schema on
    /// `executor` first.
    fn acquire(&self, executor: &Executor) -> Result<SchemaLease>;
    /// Sends `executor`'s (changed) schema to every live node, then
    /// releases the lock.
    fn publish(&self, executor: &Executor, lease: SchemaLease) -> Result<()>;
    /// Releases the lock without a change.
    fn release(&self, lease: SchemaLease);
}

/// A prepared statement.
pub struct PreparedStatement {
    pub text: String,
    pub keyspace: Option<String>,
    pub parsed: ParsedStatement,
    pub bind_specs: Vec<ColumnSpec>,
    pub pk_indexes: Vec<u16>,
    pub result_specs: Vec<ColumnSpec>,
    pub result_metadata_id: Bytes,
    /// A read of one row by its full primary key, planned at PREPARE.
    pub point_read: Option<select::PointRead>,
}

impl PreparedStatement {
    /// A read of one partition (every partition key column bound): bounded
    /// work that takes no lock, short enough to run on a network thread.
    pub fn is_short_read(&self) -> bool {
        !self.pk_indexes.is_empty() && matches!(self.parsed.statement, Statement::Select(_))
    }

    /// A write to one partition without a condition: no read, no lock wait
    /// (only the WAL write, and its sync in batch mode).
    pub fn is_short_write(&self) -> bool {
        !self.pk_indexes.is_empty()
            && match &self.parsed.statement {
                Statement::Insert(i) => !i.if_not_exists,
                Statement::Update(u) => u.condition.is_none(),
                Statement::Delete(d) => d.condition.is_none(),
                _ => false,
            }
    }
}

impl RunStatement for Executor {
    fn run(
        &self,
        parsed: &ParsedStatement,
        request: &Request,
        values: &[rocksandra_wire::Value],
    ) -> Result<Outcome> {
        Executor::run(self, parsed, request, values)
    }
}

pub struct Executor {
    schema: RwLock<Arc<Schema>>,
    ddl_lock: Mutex<()>,
    schema_dir: Option<PathBuf>,
    engine: Arc<dyn Engine>,
    /// User data on a single node: storage directly.
    local: MeteredProxy,
    /// User data in a cluster: the coordinator, once set.
    cluster: std::sync::OnceLock<MeteredProxy>,
    /// Cassandra's client request metrics, recorded by both proxies.
    client_requests: Arc<ClientRequestMetrics>,
    /// Schema changes in a cluster: serialized and spread by this.
    schema_sync: std::sync::OnceLock<Arc<dyn SchemaSync>>,
    node: RwLock<NodeInfo>,
    prepared: Mutex<PreparedCache<PreparedStatement>>,
    env: Env,
    /// Serializes read-before-write statements (conditional updates, list
    /// index operations, counters) on this node.
    rmw_lock: Arc<crate::proxy::RmwLock>,
    /// What statements read of the node's configuration.
    settings: Settings,
    /// `materialized_views_enabled` (false by default, as in Cassandra 5.0).
    views_enabled: std::sync::atomic::AtomicBool,
    /// `dynamic_data_masking_enabled` (false by default, as in Cassandra 5.0).
    masking_enabled: std::sync::atomic::AtomicBool,
    /// `drop_compact_storage_enabled` (false by default, as in Cassandra 5.0).
    drop_compact_enabled: std::sync::atomic::AtomicBool,
    /// `user_defined_functions_enabled` (false by default, as in Cassandra 5.0).
    udfs_enabled: std::sync::atomic::AtomicBool,
    /// Where `auto_snapshot` puts the snapshot taken before DROP and
    /// TRUNCATE (`<data>/snapshots`); None: `auto_snapshot: false`.
    auto_snapshot: RwLock<Option<PathBuf>>,
    /// The HNSW graphs of SAI vector indexes (`index::vector`), on a node
    /// alone.
    vector_graphs: Arc<crate::index::vector::Graphs>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Executor {
    /// Builds the executor: system keyspaces, the stored schema from
    /// `schema_dir` (if any), and every stored table opened in the engine.
    pub fn open(
        engine: Arc<dyn Engine>,
        schema_dir: Option<PathBuf>,
        node: NodeInfo,
        env: Env,
    ) -> Result<Executor> {
        let mut schema = crate::system::builtin_schema();
        let mut loaded = false;
        if let Some(dir) = &schema_dir {
            let path = dir.join(SCHEMA_FILE);
            match std::fs::read(&path) {
                Ok(bytes) => {
                    schema.load_stored_json(&bytes)?;
                    loaded = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(QueryError::Server(format!(
                        "cannot read {}: {e}",
                        path.display()
                    )))
                }
            }
        }
        if !loaded {
            // Every fresh node starts with the same schema, so a new
            // cluster agrees before its first schema change.
            schema.version = crate::schema::INITIAL_SCHEMA_VERSION;
        }
        for table in stored_tables(&schema) {
            engine.create_table(table.storage_spec())?;
        }
        let rmw_lock = Arc::new(crate::proxy::RmwLock::default());
        let settings = Settings::default();
        let client_requests = Arc::new(ClientRequestMetrics::default());
        let local = crate::proxy::LocalProxy::new(
            engine.clone(),
            rmw_lock.clone(),
            settings.tombstones.clone(),
            settings.disk_usage.clone(),
        );
        let executor = Executor {
            schema: RwLock::new(Arc::new(schema)),
            ddl_lock: Mutex::new(()),
            schema_dir,
            local: MeteredProxy::new(Arc::new(local), client_requests.clone()),
            cluster: std::sync::OnceLock::new(),
            client_requests,
            schema_sync: std::sync::OnceLock::new(),
            engine,
            node: RwLock::new(node),
            prepared: Mutex::new(PreparedCache::new(
                crate::prepared_cache::DEFAULT_LIMIT_BYTES,
            )),
            env,
            rmw_lock,
            settings,
            views_enabled: std::sync::atomic::AtomicBool::new(false),
            masking_enabled: std::sync::atomic::AtomicBool::new(false),
            drop_compact_enabled: std::sync::atomic::AtomicBool::new(false),
            udfs_enabled: std::sync::atomic::AtomicBool::new(false),
            auto_snapshot: RwLock::new(None),
            vector_graphs: Arc::default(),
        };
        executor.vector_graphs.retain(&executor.schema(), &[]);
        Ok(executor)
    }

    /// `read_request_timeout` and `range_request_timeout` from the node's
    /// configuration, for reads on this node alone.
    pub fn set_read_timeouts(&self, timeouts: crate::deadline::ReadTimeouts) {
        self.settings.read_timeouts.set(timeouts);
    }

    /// `prepared_statements_cache_size` from the node's configuration.
    pub fn set_prepared_cache_bytes(&self, limit: u64) {
        lock(&self.prepared).set_limit(limit);
    }

    /// `user_defined_functions_enabled` from the node's configuration.
    pub fn set_user_defined_functions_enabled(&self, enabled: bool) {
        self.udfs_enabled
            .store(enabled, std::sync::atomic::Ordering::Relaxed);
    }

    fn user_defined_functions_enabled(&self) -> bool {
        self.udfs_enabled.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `materialized_views_enabled` from the node's configuration.
    pub fn set_materialized_views_enabled(&self, enabled: bool) {
        self.views_enabled
            .store(enabled, std::sync::atomic::Ordering::Relaxed);
    }

    /// `dynamic_data_masking_enabled` from the node's configuration.
    pub fn set_dynamic_data_masking_enabled(&self, enabled: bool) {
        self.masking_enabled
            .store(enabled, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn dynamic_data_masking_enabled(&self) -> bool {
        self.masking_enabled
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn materialized_views_enabled(&self) -> bool {
        self.views_enabled
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `drop_compact_storage_enabled` from the node's configuration.
    pub fn set_drop_compact_storage_enabled(&self, enabled: bool) {
        self.drop_compact_enabled
            .store(enabled, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn schema(&self) -> Arc<Schema> {
        self.schema
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// This node's data disk usage, which the server measures and the
    /// cluster gossips (`disk_usage`).
    pub fn local_disk_usage(&self) -> Arc<crate::disk_usage::LocalDiskUsage> {
        self.settings.disk_usage.clone()
    }

    /// Routes user data through `proxy` (the cluster's coordinator) from
    /// now on; can be set once.
    pub fn set_data_proxy(&self, proxy: Arc<dyn crate::proxy::DataProxy>) -> Result<()> {
        self.cluster
            .set(MeteredProxy::new(proxy, self.client_requests.clone()))
            .map_err(|_| QueryError::Server("the data proxy is already set".into()))?;
        // The cluster's storage hook feeds the graphs from now on.
        self.vector_graphs.observe_in_storage();
        Ok(())
    }

    /// This node's ANN graphs, which the cluster's replica feeds and
    /// searches (`index::vector`).
    pub fn vector_graphs(&self) -> Arc<crate::index::vector::Graphs> {
        self.vector_graphs.clone()
    }

    /// How many ANN graphs of SAI vector indexes are built and answer
    /// queries (`index::vector`).
    pub fn ann_graphs_ready(&self) -> usize {
        self.vector_graphs.usable_count()
    }

    /// At start, once the schema is loaded and before any write: the ANN
    /// graph of every SAI vector index, loaded from the data directory if
    /// saved there at `sequence_at_open` (the storage engine's sequence
    /// number when it opened, before the start's own writes), else built
    /// in the background (`index::vector::persist`). Returns how many
    /// were loaded.
    pub fn start_vector_graphs(&self, sequence_at_open: Option<u64>) -> usize {
        let Some(dir) = &self.schema_dir else {
            return 0;
        };
        let dir = dir.join(crate::index::vector::persist::GRAPHS_DIR);
        let now = rocksandra_data::LocalTime(self.now_micros().div_euclid(1_000_000));
        let schema = self.schema();
        self.vector_graphs
            .start_all(&dir, &schema, &self.engine, (sequence_at_open, now))
    }

    /// At a clean stop, once no write runs (the transport has stopped):
    /// writes every usable ANN graph to the data directory, for the next
    /// start. Returns how many were saved.
    pub fn save_vector_graphs(&self) -> usize {
        let Some(dir) = &self.schema_dir else {
            return 0;
        };
        let dir = dir.join(crate::index::vector::persist::GRAPHS_DIR);
        // Read before the graphs are written: a write after this makes
        // them stale (not loaded), never incomplete.
        let sequence = self.engine.latest_sequence_number();
        self.vector_graphs.save_all(&dir, &self.schema(), sequence)
    }

    /// What a statement may use of this node while it runs.
    pub(crate) fn ctx(&self) -> StatementCtx<'_> {
        let data: &dyn crate::proxy::DataProxy = match self.cluster.get() {
            Some(proxy) => proxy,
            None => &self.local,
        };
        StatementCtx {
            schema: self.schema(),
            data,
            clustered: self.cluster.get().is_some(),
            engine: &self.engine,
            env: &self.env,
            node: &self.node,
            rmw_lock: &self.rmw_lock,
            vector_graphs: &self.vector_graphs,
            settings: &self.settings,
            runner: self,
        }
    }

    /// Cassandra's client request metrics of this node as a coordinator.
    pub fn client_request_metrics(&self) -> &ClientRequestMetrics {
        &self.client_requests
    }

    /// The storage engine of this node.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.engine
    }

    pub fn node(&self) -> NodeInfo {
        self.node.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn now_micros(&self) -> i64 {
        (self.env.now_micros)()
    }

    /// The node's guardrails (cassandra.yaml, then `nodetool setguardrailsconfig`).
    pub fn set_guardrails(&self, guardrails: Guardrails) {
        self.settings.guardrails.store(Arc::new(guardrails));
    }

    /// The node's guardrails now, whoever asks.
    pub fn guardrails(&self) -> Guardrails {
        **self.settings.guardrails()
    }

    pub fn set_tombstone_thresholds(&self, thresholds: TombstoneThresholds) {
        self.settings.tombstones.set(thresholds);
    }

    /// The tombstone thresholds in force, for the cluster's replica to
    /// read as they change.
    pub fn tombstone_settings(&self) -> Arc<TombstoneSettings> {
        self.settings.tombstones.clone()
    }

    /// A partition as Cassandra's log lines name it: `ks.t:KEY`
    /// (`rows::partition_key_text`); a table this node does not know by
    /// its storage id.
    pub fn partition_name(&self, table: rocksandra_storage::TableId, key: &[u8]) -> String {
        let schema = self.ctx().schema();
        match schema.table_by_storage_id(table) {
            Some((_, t)) => {
                let key = crate::rows::partition_key_text(t, key);
                format!("{}.{}:{key}", t.keyspace, t.name)
            }
            None => format!("table {}:{}", table.0, hex::encode(key)),
        }
    }

    /// Sets `read_thresholds_enabled` and the read size thresholds.
    pub fn set_read_thresholds(&self, thresholds: crate::read_thresholds::ReadThresholds) {
        self.settings.read_thresholds.set(thresholds);
    }

    /// The read thresholds in force, for the cluster's coordinator.
    pub fn read_threshold_settings(&self) -> Arc<crate::read_thresholds::ReadThresholdSettings> {
        self.settings.read_thresholds.clone()
    }

    /// Sets how clients log in and whether permissions are checked. The
    /// default superuser is `setup_default_role`'s.
    pub fn enable_password_authentication(&self, config: AuthConfig) {
        *self
            .settings
            .auth
            .write()
            .unwrap_or_else(|p| p.into_inner()) = config;
    }

    /// With PasswordAuthenticator, creates the default superuser when no
    /// role exists (Cassandra's `setupDefaultRole`: `auth::default_role_step`
    /// decides, through the data proxy). An error is for the caller to
    /// retry later.
    pub fn setup_default_role(&self) -> Result<auth::DefaultRoleSetup> {
        auth::setup_default_role(&self.ctx(), self.auth_config())
    }

    pub fn auth_config(&self) -> AuthConfig {
        self.settings.auth_config()
    }

    /// Checks SASL PLAIN credentials.
    pub fn authenticate(&self, username: &str, password: &str) -> Result<()> {
        auth::authenticate(&self.ctx(), username, password)
    }

    /// Checks the credentials of a superuser (nodetool's login).
    pub fn authenticate_superuser(&self, username: &str, password: &str) -> Result<()> {
        auth::authenticate_superuser(&self.ctx(), username, password)
    }

    /// The roles, permissions and credentials caches' settings
    /// (`roles_validity`, ...); their entries go.
    pub fn configure_auth_caches(&self, caches: crate::auth_cache::AuthCacheSettings) {
        let own = &self.settings.auth_caches;
        own.roles.configure(caches.roles);
        own.permissions.configure(caches.permissions);
        own.credentials.configure(caches.credentials);
    }

    /// How often `refresh_auth_caches` should run: the shortest update
    /// interval of the caches with active update; None: never.
    pub fn auth_cache_refresh_interval(&self) -> Option<std::time::Duration> {
        self.settings
            .auth_caches
            .active_interval_ms()
            .map(std::time::Duration::from_millis)
    }

    /// Reloads every entry of the auth caches with active update
    /// (`*_cache_active_update`), through the data proxy.
    pub fn refresh_auth_caches(&self) {
        auth::refresh_auth_caches(&self.ctx());
    }

    /// Reloads the auth cache entries lookups found due for refresh (they
    /// were answered from the old entries): the server's refresher thread.
    pub fn reload_due_auth_entries(&self) {
        auth::reload_due_auth_entries(&self.ctx());
    }

    /// Waits until an auth cache queues a due reload, or `timeout`; true
    /// when one was queued.
    pub fn wait_for_due_auth_entries(&self, timeout: std::time::Duration) -> bool {
        self.settings.auth_caches.due.wait(timeout)
    }

    /// nodetool's `invalidate<cache>cache [roles...]` (`auth_cache::AuthCaches::invalidate`).
    pub fn invalidate_auth_cache(
        &self,
        cache: crate::auth_cache::CacheName,
        roles: &[String],
        resources: &[String],
    ) {
        self.settings
            .auth_caches
            .invalidate(cache, roles, resources);
    }

    /// The auth caches' hits, misses and entries, for the metrics endpoint.
    pub fn auth_cache_stats(&self) -> crate::auth_cache::AuthCacheStats {
        self.settings.auth_caches.stats()
    }

    pub fn authorizer_enabled(&self) -> bool {
        authz::authorizer_enabled(&self.ctx())
    }

    /// Writes a snapshot of every table, and the schema, to `dir` (which
    /// must not exist).
    pub fn snapshot(&self, dir: &Path) -> Result<()> {
        crate::snapshot::write(&*self.engine, &self.schema(), &self.node(), dir)
    }

    /// `nodetool import`: the data of one table from a snapshot directory
    /// (`import`).
    pub fn import(
        &self,
        request: &crate::import::ImportRequest,
    ) -> Result<rocksandra_storage::import::ImportCounts> {
        crate::import::import(&self.ctx(), request)
    }

    /// `auto_snapshot`: a snapshot under `dir` before every DROP of a
    /// table, view or keyspace and every TRUNCATE; None turns it off.
    pub fn set_auto_snapshot(&self, dir: Option<PathBuf>) {
        *self
            .auto_snapshot
            .write()
            .unwrap_or_else(|p| p.into_inner()) = dir;
    }

    /// Takes `<kind>-<milliseconds>-<name>` (Cassandra's names, e.g.
    /// `dropped-1764223200000-users`) when `auto_snapshot` is on.
    fn auto_snapshot(&self, kind: &str, name: &str) -> Result<()> {
        let dir = self
            .auto_snapshot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(parent) = dir else {
            return Ok(());
        };
        let millis = rocksandra_data::time::system_micros() / 1000;
        std::fs::create_dir_all(&parent)
            .map_err(|e| QueryError::Server(format!("cannot create {}: {e}", parent.display())))?;
        self.snapshot(&parent.join(format!("{kind}-{millis}-{name}")))
    }

    /// Runs `run` and, when the client asked for tracing, records its
    /// session and events in system_traces before the reply goes out
    /// (drivers read them right after); returns the session id then.
    pub fn traced(
        &self,
        trace: Option<crate::trace::TraceRequest>,
        run: impl FnOnce(&Executor) -> Result<Outcome>,
    ) -> (Result<Outcome>, Option<[u8; 16]>) {
        let Some(trace) = trace else {
            return (run(self), None);
        };
        let started_at = self.now_micros();
        let clock = std::time::Instant::now();
        let result = run(self);
        let elapsed = i64::try_from(clock.elapsed().as_micros()).unwrap_or(i64::MAX);
        let ctx = self.ctx();
        let session_id = crate::trace::new_trace_id(&ctx);
        let failure = result.as_ref().err();
        let session = trace.session(session_id, (started_at, elapsed), failure);
        match crate::trace::record_trace(&ctx, &session) {
            Ok(()) => (result, Some(session_id)),
            Err(e) => {
                tracing::warn!("cannot record a trace: {e}");
                (result, None)
            }
        }
    }

    /// Flushes storage (clean shutdown).
    pub fn flush(&self) -> Result<()> {
        Ok(self.engine.flush()?)
    }

    // ------------------------------------------------------------ entry points

    /// QUERY: parse and run one statement.
    pub fn query(&self, text: &str, request: &Request) -> Result<Outcome> {
        let parsed = rocksandra_cql::parse_statement(text)?;
        let values = bind_values(&parsed, request)?;
        self.run(&parsed, request, &values)
    }

    /// PREPARE, by a client not logged in (or by no one in particular).
    pub fn prepare(&self, text: &str, keyspace: Option<&str>) -> Result<Prepared> {
        self.prepare_for(text, keyspace, &Request::default())
    }

    /// PREPARE for `request`'s user: the refusals Cassandra makes when it
    /// prepares a statement, in the words for that user (the
    /// `allow_filtering` guardrail binds ordinary users only).
    pub fn prepare_for(
        &self,
        text: &str,
        keyspace: Option<&str>,
        request: &Request,
    ) -> Result<Prepared> {
        let parsed = rocksandra_cql::parse_statement(text)?;
        let schema = self.schema();
        let (bind_specs, pk_indexes) = self.bind_metadata(&schema, &parsed, keyspace)?;
        let result_specs = match &parsed.statement {
            Statement::Select(s) => select::result_specs(&self.ctx(), &schema, s, keyspace)?,
            _ => Vec::new(),
        };
        let statement = (&parsed.statement, keyspace);
        crate::prepare_checks::check(&self.ctx(), &schema, statement, request)?;
        let point_read = select::PointRead::compile(&self.ctx(), &schema, &parsed, keyspace);
        let id = statement_id(text, keyspace);
        let result_metadata_id = metadata_id(&result_specs);
        let prepared = Arc::new(PreparedStatement {
            text: text.to_string(),
            keyspace: keyspace.map(str::to_string),
            parsed,
            bind_specs: bind_specs.clone(),
            pk_indexes: pk_indexes.clone(),
            result_specs: result_specs.clone(),
            result_metadata_id: result_metadata_id.clone(),
            point_read,
        });
        let weight = crate::prepared_cache::weight(text.len());
        lock(&self.prepared).insert(id.clone(), prepared, weight);
        Ok(Prepared {
            id,
            result_metadata_id: Some(result_metadata_id),
            bind_metadata: PreparedMetadata {
                pk_indexes,
                columns: bind_specs,
            },
            result_metadata: RowsMetadata {
                columns: ColumnsMetadata::Specs(result_specs.into()),
                paging_state: None,
                new_metadata_id: None,
            },
        })
    }

    pub fn prepared(&self, id: &[u8]) -> Result<Arc<PreparedStatement>> {
        lock(&self.prepared)
            .get(id)
            .ok_or_else(|| QueryError::Unprepared(Bytes::copy_from_slice(id)))
    }

    /// EXECUTE of a prepared statement (the statement's keyspace applies
    /// when the request names none).
    pub fn execute(&self, id: &[u8], request: Request) -> Result<Outcome> {
        self.execute_prepared(&*self.prepared(id)?, request)
    }

    /// EXECUTE of a statement already looked up with `prepared`.
    pub fn execute_prepared(
        &self,
        prepared: &PreparedStatement,
        mut request: Request,
    ) -> Result<Outcome> {
        if request.keyspace.is_none() {
            request.keyspace = prepared.keyspace.clone();
        }
        let values = bind_values(&prepared.parsed, &request)?;
        // A SELECT with guardrails to check takes the general path.
        let point_read = prepared
            .point_read
            .as_ref()
            .filter(|_| !self.settings.guardrails().guards_select());
        if let Some(point) = point_read {
            let ctx = self.ctx();
            authz::authorize_statement(&ctx, &prepared.parsed.statement, &request)?;
            if let Some(outcome) = point.execute(&ctx, &request, &values) {
                return outcome;
            }
        }
        self.run(&prepared.parsed, &request, &values)
    }

    /// A BATCH message: each statement parsed or looked up, bound to its
    /// own values (`modify::batch_message`), then the whole written as one
    /// batch (`modify::execute_batch_message`), for `user` in `keyspace`.
    pub fn execute_batch(
        &self,
        batch: rocksandra_wire::Batch,
        keyspace: Option<String>,
        user: Option<String>,
    ) -> Result<Outcome> {
        let kind = modify::batch_message::kind(batch.batch_type);
        let base = modify::batch_message::base_request(&batch, keyspace, user);
        let prepared = |id: &[u8]| {
            let p = self.prepared(id)?;
            Ok((p.parsed.clone(), p.keyspace.clone()))
        };
        let statements = modify::batch_message::bind(batch, &base, prepared)?;
        modify::execute_batch_message(&self.ctx(), kind, statements, &base)
    }

    /// Runs a parsed statement with its bound values: authorized first
    /// (CassandraAuthorizer), then run, then the grants a schema change
    /// implies (the creator's, and none left on what was dropped).
    pub fn run(
        &self,
        parsed: &ParsedStatement,
        request: &Request,
        values: &[rocksandra_wire::Value],
    ) -> Result<Outcome> {
        let ctx = self.ctx();
        authz::authorize_statement(&ctx, &parsed.statement, request)?;
        let ran = self
            .run_statement(&ctx, parsed, request, values)
            .map_err(|e| self.refusal_when_prepared(&ctx, parsed, request, e));
        let outcome = ran.map(|outcome| self.grants_after(parsed, request, outcome));
        // Seen at once on this node, even after a failure that wrote
        // part of a change.
        self.settings
            .auth_caches
            .invalidate_after(&parsed.statement);
        outcome
    }

    /// Cassandra prepares every statement before it runs it, so where a
    /// statement run without PREPARE fails on a value (`m[null] = 1`:
    /// `Unsupported null map key`), the ALLOW FILTERING its preparation
    /// asks for is the refusal it answers. Checked only on that failure: a
    /// prepared statement passed these checks at PREPARE. (Only that
    /// refusal: the stand-in values of the checks can fail where the real
    /// ones do not get, as in `k = blobAsInt(0x)`.)
    fn refusal_when_prepared(
        &self,
        ctx: &StatementCtx<'_>,
        parsed: &ParsedStatement,
        request: &Request,
        error: QueryError,
    ) -> QueryError {
        if !matches!(error, QueryError::Invalid(_)) {
            return error;
        }
        let schema = self.schema();
        let keyspace = request.keyspace.as_deref();
        match crate::prepare_checks::check(ctx, &schema, (&parsed.statement, keyspace), request) {
            Err(refusal) if crate::guard::is_filtering_refusal(&refusal) => refusal,
            _ => error,
        }
    }

    /// The grants a schema change implies (`authz::after_schema_change`).
    fn grants_after(
        &self,
        parsed: &ParsedStatement,
        request: &Request,
        mut outcome: Outcome,
    ) -> Outcome {
        if outcome.schema_change.is_some() && !request.internal && self.authorizer_enabled() {
            // The schema changed already: a failure here is the client's
            // warning, not the statement's error. A new ctx, built only
            // here, sees the schema the statement made.
            let ctx = self.ctx();
            if let Err(e) = authz::after_schema_change(&ctx, &parsed.statement, request) {
                outcome.warnings.push(format!(
                    "CassandraAuthorizer failed to update permissions: {e}"
                ));
            }
        }
        outcome
    }

    /// Runs a statement within its guardrails (`crate::guardrails`).
    fn run_statement(
        &self,
        ctx: &StatementCtx<'_>,
        parsed: &ParsedStatement,
        request: &Request,
        values: &[rocksandra_wire::Value],
    ) -> Result<Outcome> {
        let guard = StatementGuard::check(ctx, &parsed.statement, request)?;
        let rewritten = guard.rewritten().map(|statement| ParsedStatement {
            statement,
            ..parsed.clone()
        });
        let parsed = rewritten.as_ref().unwrap_or(parsed);
        let outcome = self.dispatch(ctx, parsed, request, values, &guard);
        guard.finish(outcome)
    }

    fn dispatch(
        &self,
        ctx: &StatementCtx<'_>,
        parsed: &ParsedStatement,
        request: &Request,
        values: &[rocksandra_wire::Value],
        guard: &StatementGuard<'_>,
    ) -> Result<Outcome> {
        let session_ks = request.keyspace.as_deref();
        match &parsed.statement {
            Statement::Select(s) => select::execute(ctx, s, request, values),
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                modify::execute_single(ctx, &parsed.statement, request, values)
            }
            Statement::Batch(b) => modify::execute_batch_statement(ctx, b, request, values),
            Statement::Use(ks) => self.use_keyspace(ks.as_str()),
            Statement::Truncate(name) => self.truncate(name, session_ks),
            Statement::CreateKeyspace(s) => {
                let dcs = self.data_centers();
                let change = guard.wrap(|schema| ddl::create_keyspace(schema, s, &dcs));
                self.keyspace_ddl(s.name.as_str(), change)
            }
            Statement::AlterKeyspace(s) => {
                let dcs = self.data_centers();
                let change = guard.wrap(|schema| ddl::alter_keyspace(schema, s, &dcs));
                self.keyspace_ddl(s.name.as_str(), change)
            }
            Statement::CreateTable(s) => {
                let keyspace = keyspace_of(&s.name, session_ks)?;
                let random = self.env.random.clone();
                let masking = self.dynamic_data_masking_enabled();
                self.ddl(
                    guard.wrap(|schema| ddl::create_table(schema, keyspace, s, &*random, masking)),
                )
            }
            Statement::AlterTable(s) => {
                let keyspace = keyspace_of(&s.table, session_ks)?;
                let now = self.now_micros();
                let drop_compact = self
                    .drop_compact_enabled
                    .load(std::sync::atomic::Ordering::Relaxed);
                let flags = (drop_compact, self.dynamic_data_masking_enabled());
                self.ddl(
                    guard.wrap(|schema| crate::view::alter_table(schema, keyspace, s, now, flags)),
                )
            }
            Statement::CreateType(s) => {
                let keyspace = keyspace_of(&s.name, session_ks)?;
                self.ddl(|schema| ddl::create_type(schema, keyspace, s))
            }
            Statement::AlterType(s) => {
                let keyspace = keyspace_of(&s.name, session_ks)?;
                self.ddl(guard.wrap(|schema| ddl::alter_type(schema, keyspace, s)))
            }
            Statement::CreateIndex(s) => self.create_index(s, session_ks, guard),
            Statement::Drop(d) => self.drop_schema_object(d, session_ks),
            Statement::Describe(d) => {
                let schema = self.schema();
                let node = self.node();
                let result = crate::describe::describe(d, &schema, session_ks, &node)?;
                Ok(Outcome::rows(result.into_rows()))
            }
            Statement::CreateMaterializedView(s) => {
                self.create_materialized_view(s, session_ks, request, guard)
            }
            Statement::AlterMaterializedView(s) => {
                if !self.materialized_views_enabled() {
                    return Err(QueryError::invalid(crate::view::DISABLED));
                }
                self.ddl(|schema| crate::view::alter_view(schema, session_ks, s))
            }
            Statement::CreateTrigger(t) => self.create_trigger(t, session_ks),
            Statement::DropTrigger(t) => Err(QueryError::invalid(format!(
                "Trigger {} doesn't exist",
                t.name.as_str()
            ))),
            Statement::CreateFunction(_) | Statement::CreateAggregate(_)
                if !self.user_defined_functions_enabled() =>
            {
                Err(QueryError::invalid(crate::udf::DISABLED))
            }
            Statement::CreateFunction(s) => {
                let keyspace = crate::schema::keyspace_of(&s.name, session_ks)?;
                self.ddl(|schema| crate::ddl::udf::create_function(schema, keyspace, s))
            }
            Statement::CreateAggregate(s) => self.create_aggregate(ctx, s, session_ks),
            Statement::DropFunction(s) => {
                let keyspace = crate::schema::keyspace_of(&s.name, session_ks)?;
                self.ddl(|schema| crate::ddl::udf::drop_function(schema, keyspace, s))
            }
            Statement::CreateRole(s) => auth::create_role(ctx, s, request),
            Statement::AlterRole(s) => auth::alter_role(ctx, s, request),
            Statement::DropRole(s) => auth::drop_role(ctx, s, request),
            Statement::ListRoles(s) => auth::list_roles(ctx, Some(s), false, request),
            Statement::ListUsers => auth::list_roles(ctx, None, true, request),
            Statement::GrantPermissions(s) => authz::change_permissions(ctx, s, request, true),
            Statement::RevokePermissions(s) => authz::change_permissions(ctx, s, request, false),
            Statement::ListPermissions(s) => authz::list_permissions(ctx, s, request),
            Statement::GrantRole(s) => auth::change_role_membership(ctx, s, request, true),
            Statement::RevokeRole(s) => auth::change_role_membership(ctx, s, request, false),
        }
    }

    /// CREATE or ALTER KEYSPACE (`change`): the schema change, with
    /// Cassandra's replication factor warnings.
    fn keyspace_ddl(
        &self,
        keyspace: &str,
        change: impl FnOnce(&Schema) -> Result<DdlOutcome>,
    ) -> Result<Outcome> {
        let mut outcome = self.ddl(change)?;
        outcome.warnings = self.replication_warnings(keyspace);
        Ok(outcome)
    }

    /// USE: the keyspace must exist; the session switches to it.
    fn use_keyspace(&self, ks: &str) -> Result<Outcome> {
        let schema = self.schema();
        if schema.keyspace(ks).is_none() {
            return Err(QueryError::invalid(format!(
                "Keyspace '{}' does not exist",
                ks
            )));
        }
        Ok(Outcome {
            body: ResultBody::SetKeyspace(ks.to_string()),
            warnings: Vec::new(),
            schema_change: None,
        })
    }

    /// TRUNCATE of a user table (and its views): every storage table of
    /// it is emptied.
    fn truncate(&self, name: &QualifiedName, session_ks: Option<&str>) -> Result<Outcome> {
        let keyspace = keyspace_of(name, session_ks)?;
        let schema = self.schema();
        if crate::schema::is_system_keyspace(keyspace) {
            return Err(QueryError::Unauthorized(format!(
                "{keyspace} keyspace is not user-modifiable."
            )));
        }
        if schema.keyspace(keyspace).is_none() {
            return Err(QueryError::invalid(format!(
                "keyspace {keyspace} does not exist"
            )));
        }
        let Some(table) = schema.table(keyspace, name.name.as_str()) else {
            return Err(QueryError::invalid(format!(
                "table {} does not exist",
                name.name.as_str()
            )));
        };
        if table.is_view() {
            return Err(QueryError::invalid(
                "Cannot TRUNCATE materialized view directly; must truncate base table instead",
            ));
        }
        let table = table.name.clone();
        self.ctx()
            .data()
            .truncate(keyspace, &table, &|| self.truncate_here(keyspace, &table))?;
        Ok(Outcome::void())
    }

    /// This node's part of a TRUNCATE of `keyspace.table` (checked by the
    /// coordinator): the auto-snapshot, then every storage table of it and
    /// of its views emptied. A cluster's other nodes run it when asked.
    pub fn truncate_here(&self, keyspace: &str, table: &str) -> Result<()> {
        let schema = self.schema();
        let Some(table) = schema.table(keyspace, table) else {
            return Err(QueryError::invalid(format!(
                "table {keyspace}.{table} does not exist"
            )));
        };
        let views: Vec<TableId> = schema
            .keyspace(keyspace)
            .map(|ks| {
                crate::schema::views_of(ks, &table.name)
                    .map(|v| v.storage_id)
                    .collect()
            })
            .unwrap_or_default();
        self.auto_snapshot("truncated", &table.name)
            .map_err(|e| QueryError::Truncate(e.to_string()))?;
        let ids: Vec<TableId> = table.storage_ids().chain(views).collect();
        for id in &ids {
            self.engine
                .truncate(*id)
                .map_err(|e| QueryError::Truncate(e.to_string()))?;
        }
        self.vector_graphs.retain(&schema, &ids);
        Ok(())
    }

    /// DROP KEYSPACE, TABLE, TYPE, INDEX or MATERIALIZED VIEW.
    fn drop_schema_object(&self, d: &DropObject, session_ks: Option<&str>) -> Result<Outcome> {
        match d.kind {
            DropKind::Keyspace => {
                self.ddl(|schema| ddl::drop_keyspace(schema, d.name.name.as_str(), d.if_exists))
            }
            DropKind::Table => {
                let keyspace = keyspace_of(&d.name, session_ks)?;
                self.ddl(|schema| {
                    ddl::drop_table(schema, keyspace, d.name.name.as_str(), d.if_exists)
                })
            }
            DropKind::Type => {
                let keyspace = keyspace_of(&d.name, session_ks)?;
                self.ddl(|schema| {
                    ddl::drop_type(schema, keyspace, d.name.name.as_str(), d.if_exists)
                })
            }
            DropKind::Index => {
                let keyspace = keyspace_of(&d.name, session_ks)?;
                self.ddl(|schema| {
                    ddl::drop_index(schema, keyspace, d.name.name.as_str(), d.if_exists)
                })
            }
            DropKind::MaterializedView => {
                let keyspace = keyspace_of(&d.name, session_ks)?;
                self.ddl(|schema| {
                    crate::view::drop_view(schema, keyspace, d.name.name.as_str(), d.if_exists)
                })
            }
        }
    }

    /// CREATE INDEX: the schema change, then the index's entries written
    /// for the table's rows, with Cassandra's warning for a vector index.
    fn create_index(
        &self,
        s: &CreateIndex,
        session_ks: Option<&str>,
        guard: &StatementGuard<'_>,
    ) -> Result<Outcome> {
        let keyspace = keyspace_of(&s.table, session_ks)?;
        let mut outcome = self.ddl(guard.wrap(|schema| ddl::create_index(schema, keyspace, s)))?;
        let table = s.table.name.as_str();
        // A new ctx, whose schema has the index.
        let pending = crate::index::build::write_pending(&self.ctx(), keyspace, table)?;
        if !pending.is_empty() {
            self.ddl(|schema| crate::index::build::mark_built(schema, keyspace, table, &pending))?;
        }
        let schema = self.schema();
        let vector_sai = schema
            .table(keyspace, table)
            .is_some_and(|t| crate::index::has_vector_sai(t));
        if outcome.schema_change.is_some() && vector_sai {
            outcome
                .warnings
                .push(crate::index::VECTOR_USAGE_WARNING.to_string());
        }
        Ok(outcome)
    }

    /// CREATE AGGREGATE: the schema change, its INITCOND evaluated as a
    /// term of the state type.
    fn create_aggregate(
        &self,
        ctx: &StatementCtx<'_>,
        s: &CreateAggregate,
        session_ks: Option<&str>,
    ) -> Result<Outcome> {
        let keyspace = crate::schema::keyspace_of(&s.name, session_ks)?;
        let random = || (self.env.random)();
        let initial = |expr: &rocksandra_cql::ast::Expr,
                       ty: &rocksandra_data::types::CqlType|
         -> Result<Option<Vec<u8>>> {
            let schema = self.schema();
            let ctx = ctx.eval_context(&schema, keyspace, &[], &random);
            match crate::term::evaluate(expr, ty, "INITCOND", &ctx)? {
                crate::term::Term::Value(v) => Ok(Some(v)),
                _ => Ok(None),
            }
        };
        self.ddl(|schema| crate::ddl::udf::create_aggregate(schema, keyspace, s, &initial))
    }

    /// CREATE TRIGGER: refused on a view, else its class cannot be loaded
    /// (no trigger runs here).
    fn create_trigger(&self, t: &CreateTrigger, session_ks: Option<&str>) -> Result<Outcome> {
        let schema = self.schema();
        let keyspace = keyspace_of(&t.table, session_ks)?;
        let on_view = schema
            .lookup_table(keyspace, t.table.name.as_str())
            .is_ok_and(|table| table.is_view());
        if on_view {
            return Err(QueryError::invalid(
                "Cannot CREATE TRIGGER for a materialized view",
            ));
        }
        Err(QueryError::invalid(format!(
            "Trigger class '{}' couldn't be loaded",
            t.class
        )))
    }

    /// CREATE MATERIALIZED VIEW (when enabled): the schema change, then
    /// the view built from the base table's rows, with Cassandra's warning.
    fn create_materialized_view(
        &self,
        s: &CreateMaterializedView,
        session_ks: Option<&str>,
        request: &Request,
        guard: &StatementGuard<'_>,
    ) -> Result<Outcome> {
        if !self.materialized_views_enabled() {
            return Err(QueryError::invalid(crate::view::DISABLED));
        }
        let random = self.env.random.clone();
        let mut outcome = self
            .ddl(guard.wrap(|schema| crate::view::create_view(schema, session_ks, s, &*random)))?;
        if outcome.schema_change.is_some() {
            let keyspace = keyspace_of(&s.base_table, session_ks)?;
            let view_keyspace = s.name.keyspace.as_ref().map_or(keyspace, |k| k.as_str());
            // A new ctx, whose schema has the view.
            crate::view::build(&self.ctx(), view_keyspace, s.name.name.as_str(), request)?;
        }
        outcome
            .warnings
            .push(crate::view::USAGE_WARNING.to_string());
        Ok(outcome)
    }

    /// Cassandra's warnings for a replication factor above the node count.
    fn replication_warnings(&self, keyspace: &str) -> Vec<String> {
        let schema = self.schema();
        let Some(ks) = schema.keyspace(keyspace) else {
            return Vec::new();
        };
        let node = self.node();
        let nodes_in = |dc: &str| {
            usize::from(node.data_center == dc)
                + node.peers.iter().filter(|p| p.data_center == dc).count()
        };
        let mut warnings = Vec::new();
        let class = ks
            .replication
            .get("class")
            .map(String::as_str)
            .unwrap_or("");
        if class.ends_with("SimpleStrategy") {
            let rf: usize = ks
                .replication
                .get("replication_factor")
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            let nodes = 1 + node.peers.len();
            if rf > nodes {
                warnings.push(format!(
                    "Your replication factor {rf} for keyspace {keyspace} is higher than the number of nodes {nodes}"
                ));
            }
        } else {
            for (dc, rf) in &ks.replication {
                if dc == "class" {
                    continue;
                }
                let rf: usize = rf.parse().unwrap_or(0);
                let nodes = nodes_in(dc);
                if rf > nodes {
                    warnings.push(format!(
                        "Your replication factor {rf} for keyspace {keyspace} is higher than the number of nodes {nodes} for datacenter {dc}"
                    ));
                }
            }
        }
        warnings
    }

    fn data_centers(&self) -> Vec<String> {
        let node = self.node();
        let mut dcs = vec![node.data_center.clone()];
        for p in &node.peers {
            if !dcs.contains(&p.data_center) {
                dcs.push(p.data_center.clone());
            }
        }
        dcs
    }

    /// Runs a schema change: computes the new schema, applies its storage
    /// effects, persists and publishes it.
    pub(crate) fn ddl(
        &self,
        change: impl FnOnce(&Schema) -> Result<DdlOutcome>,
    ) -> Result<Outcome> {
        let Some(sync) = self.schema_sync.get() else {
            let _guard = lock(&self.ddl_lock);
            return self.apply_ddl(change);
        };
        // In a cluster: hold the cluster's schema lock, start from the
        // newest schema, and spread the result before answering.
        let lease = sync.acquire(self)?;
        let outcome = {
            let _guard = lock(&self.ddl_lock);
            self.apply_ddl(change)
        };
        match &outcome {
            Ok(o) if o.schema_change.is_some() => sync.publish(self, lease)?,
            _ => sync.release(lease),
        }
        outcome
    }

    fn apply_ddl(&self, change: impl FnOnce(&Schema) -> Result<DdlOutcome>) -> Result<Outcome> {
        let current = self.schema();
        let outcome = change(&current)?;
        let Some(mut next) = outcome.schema else {
            // IF [NOT] EXISTS made it a no-op: Cassandra answers VOID.
            return Ok(Outcome::void());
        };
        next.version = rocksandra_data::uuid::random_v4(&*self.env.random);
        next.epoch = current.epoch + 1;
        let kept = stored_ids(&next);
        let gone = stored_ids(&current)
            .into_iter()
            .filter(|id| !kept.contains(id));
        next.dropped_tables.extend(gone);
        let indexes = crate::index::build::storage_changes(&current, &next);
        // Tables are created before the schema naming them is stored, and
        // dropped after: a crash leaves at worst an unused column family.
        for table in outcome
            .effects
            .create
            .iter()
            .map(|t| &**t)
            .chain(&indexes.create)
        {
            self.engine.create_table(table.storage_spec())?;
        }
        for table in outcome
            .effects
            .alter
            .iter()
            .map(|t| &**t)
            .chain(&indexes.alter)
        {
            self.engine.alter_table(table.storage_spec())?;
        }
        if let Some(name) = dropped_name(&current, &outcome.effects.drop) {
            self.auto_snapshot("dropped", &name)?;
        }
        self.persist(&next)?;
        for id in outcome.effects.drop.iter().chain(&indexes.drop) {
            self.engine.drop_table(*id)?;
        }
        next.keep_metrics_of(&current);
        *self.schema.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        self.vector_graphs.retain(&self.schema(), &[]);
        Ok(Outcome {
            body: ResultBody::SchemaChange(outcome.change.clone()),
            warnings: Vec::new(),
            schema_change: Some(outcome.change),
        })
    }

    /// Serializes and spreads schema changes from now on (cluster mode);
    /// can be set once.
    pub fn set_schema_sync(&self, sync: Arc<dyn SchemaSync>) -> Result<()> {
        self.schema_sync
            .set(sync)
            .map_err(|_| QueryError::Server("the schema sync is already set".into()))
    }

    /// The schema as nodes exchange it: epoch, version and stored JSON.
    pub fn schema_blob(&self) -> (u64, [u8; 16], Vec<u8>) {
        let schema = self.schema();
        (schema.epoch, schema.version, schema.to_stored_json())
    }

    /// Adopts a schema another node sent when its epoch is newer than
    /// this node's: creates, alters and drops tables in storage to match,
    /// stores and publishes it. Returns the changes drivers are told of
    /// (none when the schema was not newer).
    pub fn install_schema(&self, epoch: u64, json: &[u8]) -> Result<Vec<SchemaChange>> {
        let _guard = lock(&self.ddl_lock);
        let current = self.schema();
        if epoch <= current.epoch {
            return Ok(Vec::new());
        }
        let mut next = crate::system::builtin_schema();
        next.load_stored_json(json)?;
        let changes = crate::schema::diff(&current, &next);
        let old: HashMap<TableId, crate::schema::Table> = stored_tables(&current)
            .into_iter()
            .map(|t| (t.storage_id, t))
            .collect();
        let stored = stored_tables(&next);
        let new_ids: std::collections::HashSet<TableId> =
            stored.iter().map(|t| t.storage_id).collect();
        let dropped: Vec<TableId> = old
            .keys()
            .filter(|id| !new_ids.contains(id))
            .copied()
            .collect();
        refuse_undeclared_drops(&old, &dropped, &next)?;
        for table in &stored {
            match old.get(&table.storage_id) {
                None => self.engine.create_table(table.storage_spec())?,
                Some(before) if before.storage_spec() != table.storage_spec() => {
                    self.engine.alter_table(table.storage_spec())?
                }
                Some(_) => {}
            }
        }
        if let Some(name) = dropped_name(&current, &dropped) {
            self.auto_snapshot("dropped", &name)?;
        }
        self.persist(&next)?;
        for id in dropped {
            self.engine.drop_table(id)?;
        }
        next.keep_metrics_of(&current);
        *self.schema.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        self.vector_graphs.retain(&self.schema(), &[]);
        Ok(changes)
    }

    /// This node's tokens (once a cluster allocated them).
    pub fn set_tokens(&self, tokens: Vec<i64>) {
        self.node.write().unwrap_or_else(|p| p.into_inner()).tokens = tokens;
    }

    /// Replaces what system.peers shows (the cluster's other nodes).
    pub fn set_peers(&self, peers: Vec<crate::PeerInfo>) {
        self.node.write().unwrap_or_else(|p| p.into_inner()).peers = peers;
    }

    fn persist(&self, schema: &Schema) -> Result<()> {
        let Some(dir) = &self.schema_dir else {
            return Ok(());
        };
        write_atomically(dir, SCHEMA_FILE, &schema.to_stored_json())
            .map_err(|e| QueryError::Server(format!("cannot store the schema: {e}")))
    }

    // ------------------------------------------------------------ prepared metadata

    fn bind_metadata(
        &self,
        schema: &Schema,
        parsed: &ParsedStatement,
        session_ks: Option<&str>,
    ) -> Result<(Vec<ColumnSpec>, Vec<u16>)> {
        if let Statement::Batch(batch) = &parsed.statement {
            // A prepared BATCH has no partition key indexes, as in Cassandra.
            return Ok((
                batch_bind_specs(schema, batch, parsed, session_ks)?,
                Vec::new(),
            ));
        }
        let table = statement_table(schema, &parsed.statement, session_ks)?;
        let spec = |name: &str, ty: CqlType| ColumnSpec {
            table: TableSpec {
                keyspace: table
                    .as_ref()
                    .map(|t| t.keyspace.clone())
                    .unwrap_or_default(),
                table: table.as_ref().map(|t| t.name.clone()).unwrap_or_default(),
            },
            name: name.to_string(),
            cql_type: ty,
        };
        let in_selectors = match &parsed.statement {
            Statement::Select(select) if table.is_some() => {
                crate::select::selector_marker_specs(&self.ctx(), schema, select, session_ks)?
            }
            _ => Vec::new(),
        };
        let mut specs = Vec::with_capacity(parsed.bind_variables.len());
        for var in &parsed.bind_variables {
            let selector = in_selectors.iter().find(|(i, ..)| *i == var.index);
            // The parser knows no receiver inside selectors.
            let (name, ty) = match selector {
                Some((_, name, ty)) => (name.clone(), ty.clone()),
                None => receiver_spec(schema, table.as_deref(), &var.receiver, session_ks)?,
            };
            let name = var
                .name
                .as_ref()
                .map(|n| n.as_str().to_string())
                .unwrap_or(name);
            specs.push(spec(&name, ty));
        }
        let mut pk_indexes = Vec::new();
        if let Some(table) = &table {
            let is_modification_or_select = matches!(
                parsed.statement,
                Statement::Select(_)
                    | Statement::Insert(_)
                    | Statement::Update(_)
                    | Statement::Delete(_)
            );
            if is_modification_or_select {
                for column in table.partition_key() {
                    let found = parsed.bind_variables.iter().position(|v| {
                        matches!(&v.receiver, BindReceiver::Column(c) if c.as_str() == column.name)
                    });
                    match found {
                        Some(i) => pk_indexes.push(i as u16),
                        None => {
                            pk_indexes.clear();
                            break;
                        }
                    }
                }
            }
        }
        Ok((specs, pk_indexes))
    }
}

/// The bind markers of a BATCH given as text: each statement's markers
/// (numbered in text order across the batch) bind columns of its own table.
fn batch_bind_specs(
    schema: &Schema,
    batch: &rocksandra_cql::ast::Batch,
    parsed: &ParsedStatement,
    session_ks: Option<&str>,
) -> Result<Vec<ColumnSpec>> {
    let mut specs = Vec::with_capacity(parsed.bind_variables.len());
    let mut variables = parsed.bind_variables.iter();
    for m in &batch.statements {
        let (name, text) = match m {
            Modification::Insert(s) => (&s.table, s.to_string()),
            Modification::Update(s) => (&s.table, s.to_string()),
            Modification::Delete(s) => (&s.table, s.to_string()),
        };
        let table = schema
            .lookup_table(keyspace_of(name, session_ks)?, name.name.as_str())?
            .clone();
        // The statement alone, printed and parsed again, says how many of
        // the batch's markers are its own.
        let count = rocksandra_cql::parse_statement(&text)
            .map_err(|e| QueryError::Server(format!("cannot reparse a batch statement: {e}")))?
            .bind_variables
            .len();
        for var in variables.by_ref().take(count) {
            let (name, ty) = receiver_spec(schema, Some(&table), &var.receiver, session_ks)?;
            let name = var
                .name
                .as_ref()
                .map(|n| n.as_str().to_string())
                .unwrap_or(name);
            specs.push(ColumnSpec {
                table: TableSpec {
                    keyspace: table.keyspace.clone(),
                    table: table.name.clone(),
                },
                name,
                cql_type: ty,
            });
        }
    }
    if specs.len() != parsed.bind_variables.len() {
        return Err(QueryError::Server(
            "the bind markers of a batch do not add up to its statements' markers".into(),
        ));
    }
    Ok(specs)
}

/// The table a DML statement works on, if any.
fn statement_table(
    schema: &Schema,
    statement: &Statement,
    session_ks: Option<&str>,
) -> Result<Option<Arc<Table>>> {
    let name = match statement {
        Statement::Select(s) => &s.table,
        Statement::Insert(s) => &s.table,
        Statement::Update(s) => &s.table,
        Statement::Delete(s) => &s.table,
        _ => return Ok(None),
    };
    let keyspace = keyspace_of(name, session_ks)?;
    Ok(Some(
        schema.lookup_table(keyspace, name.name.as_str())?.clone(),
    ))
}

/// The name and type of what a bind marker binds.
fn receiver_spec(
    schema: &Schema,
    table: Option<&Table>,
    receiver: &BindReceiver,
    session_ks: Option<&str>,
) -> Result<(String, CqlType)> {
    let native = |t: NativeType| CqlType::Native(t);
    let column = |name: &str| -> Result<CqlType> {
        let table =
            table.ok_or_else(|| QueryError::invalid("bind marker outside a table statement"))?;
        table.column(name).map(|c| c.ty.clone()).ok_or_else(|| {
            let label = rocksandra_data::types::quote_identifier_if_needed(name);
            QueryError::undefined_column(&label, &table.keyspace, &table.name)
        })
    };
    Ok(match receiver {
        BindReceiver::Column(c) => (c.as_str().to_string(), column(c.as_str())?),
        BindReceiver::Columns(cs) => {
            let mut types = Vec::new();
            for c in cs {
                types.push(column(c.as_str())?);
            }
            (
                format!(
                    "({})",
                    cs.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")
                ),
                CqlType::Tuple(types),
            )
        }
        BindReceiver::ElementKey(c) => match column(c.as_str())?.unfrozen() {
            CqlType::Map(k, _) => (format!("key({})", c.as_str()), (**k).clone()),
            CqlType::List(_) => (format!("idx({})", c.as_str()), native(NativeType::Int)),
            CqlType::Set(e) => (format!("key({})", c.as_str()), (**e).clone()),
            _ => (c.as_str().to_string(), native(NativeType::Blob)),
        },
        BindReceiver::ElementValue(c) => match column(c.as_str())?.unfrozen() {
            CqlType::Map(_, v) => (format!("value({})", c.as_str()), (**v).clone()),
            CqlType::List(e) | CqlType::Set(e) => (format!("value({})", c.as_str()), (**e).clone()),
            _ => (c.as_str().to_string(), native(NativeType::Blob)),
        },
        BindReceiver::Subtracted(c) => match column(c.as_str())? {
            CqlType::Map(k, _) => (c.as_str().to_string(), CqlType::Set(k)),
            other => (c.as_str().to_string(), other),
        },
        BindReceiver::Field { column: c, field } => match column(c.as_str())?.unfrozen() {
            CqlType::Udt(u) => {
                let ty = u
                    .fields
                    .iter()
                    .find(|(n, _)| n == field.as_str())
                    .map(|(_, t)| t.clone())
                    .ok_or_else(|| {
                        QueryError::invalid(format!(
                            "UDT column {} does not have a field named {}",
                            c.as_str(),
                            field.as_str()
                        ))
                    })?;
                (field.as_str().to_string(), ty)
            }
            _ => (field.as_str().to_string(), native(NativeType::Blob)),
        },
        BindReceiver::Token(_) => ("partition key token".into(), native(NativeType::Bigint)),
        BindReceiver::InValues(inner) => {
            let (name, ty) = receiver_spec(schema, table, inner, session_ks)?;
            (format!("in({name})"), CqlType::List(Box::new(ty)))
        }
        BindReceiver::Limit => ("[limit]".into(), native(NativeType::Int)),
        BindReceiver::PerPartitionLimit => {
            ("[per_partition_limit]".into(), native(NativeType::Int))
        }
        BindReceiver::Timestamp => ("[timestamp]".into(), native(NativeType::Bigint)),
        BindReceiver::Ttl => ("[ttl]".into(), native(NativeType::Int)),
        BindReceiver::Json => ("[json]".into(), native(NativeType::Text)),
        BindReceiver::Hinted(ty) => ("[hinted]".into(), hinted_type(schema, session_ks, ty)?),
        BindReceiver::Nested {
            step: rocksandra_cql::ast::NestedStep::FunctionArgument { function, position },
            ..
        } if is_from_json(function) => {
            // FunctionResolver.makeArgSpec: fromJson takes the JSON text.
            (format!("arg{position}"), native(NativeType::Text))
        }
        BindReceiver::Nested {
            parent,
            step: rocksandra_cql::ast::NestedStep::FunctionArgument { function, position },
        } if matches!(**parent, BindReceiver::Token(_))
            && is_system_function(function, "token") =>
        {
            // `token(k) > token(?)`: token()'s arguments are the partition key's.
            let table = table
                .ok_or_else(|| QueryError::invalid("bind marker outside a table statement"))?;
            let ty = table
                .partition_key()
                .get(*position)
                .map(|c| c.ty.clone())
                .unwrap_or(native(NativeType::Blob));
            (format!("arg{position}(system.token)"), ty)
        }
        BindReceiver::Nested { parent, step } => {
            let (name, ty) = receiver_spec(schema, table, parent, session_ks)?;
            (name, nested_receiver_type(step, ty.unfrozen()))
        }
        BindReceiver::Unknown => ("[unknown]".into(), native(NativeType::Blob)),
    })
}

/// `fromJson` or `system.fromJson`, in any case.
fn is_from_json(function: &QualifiedName) -> bool {
    is_system_function(function, "fromjson")
}

/// Whether `function` names the native function `name` (lower case),
/// unqualified or in `system`.
fn is_system_function(function: &QualifiedName, name: &str) -> bool {
    function.name.as_str().eq_ignore_ascii_case(name)
        && function
            .keyspace
            .as_ref()
            .is_none_or(|k| k.as_str().eq_ignore_ascii_case("system"))
}

/// The type of a marker inside a hinted term `(type) ?`: the type, resolved
/// among the session keyspace's types.
fn hinted_type(
    schema: &Schema,
    session_ks: Option<&str>,
    ty: &rocksandra_cql::TypeExpr,
) -> Result<CqlType> {
    let types = session_ks
        .and_then(|k| schema.keyspace(k))
        .map(|k| k.types.clone())
        .unwrap_or_default();
    ty.resolve(&crate::schema::KeyspaceTypes(&types))
        .map_err(|e| QueryError::invalid(format!("Unknown type {}", e.0)))
}

/// The type of a marker nested in its parent's term (an element, key,
/// value, tuple item or field of a value of type `ty`); blob when unknown.
fn nested_receiver_type(step: &rocksandra_cql::ast::NestedStep, ty: &CqlType) -> CqlType {
    use rocksandra_cql::ast::NestedStep;
    let native = |t: NativeType| CqlType::Native(t);
    match (step, ty) {
        (NestedStep::ListItem | NestedStep::SetItem, CqlType::List(e) | CqlType::Set(e)) => {
            (**e).clone()
        }
        (NestedStep::ListItem, CqlType::Vector(e, _)) => (**e).clone(),
        (NestedStep::MapKey, CqlType::Map(k, _)) => (**k).clone(),
        (NestedStep::MapValue, CqlType::Map(_, v)) => (**v).clone(),
        (NestedStep::TupleItem(i), CqlType::Tuple(items)) => {
            items.get(*i).cloned().unwrap_or(native(NativeType::Blob))
        }
        (NestedStep::UdtField(f), CqlType::Udt(u)) => u
            .fields
            .iter()
            .find(|(n, _)| n == f.as_str())
            .map(|(_, t)| t.clone())
            .unwrap_or(native(NativeType::Blob)),
        (NestedStep::InItem(_), CqlType::List(e)) => (**e).clone(),
        (NestedStep::InItem(_), other) => other.clone(),
        (NestedStep::ContainsValue, CqlType::Map(_, v)) => (**v).clone(),
        (NestedStep::ContainsValue, CqlType::List(e) | CqlType::Set(e)) => (**e).clone(),
        (NestedStep::ContainsKey | NestedStep::ElementKey, CqlType::Map(k, _)) => (**k).clone(),
        (NestedStep::ElementKey, CqlType::Set(e)) => (**e).clone(),
        (NestedStep::ElementKey, CqlType::List(_)) => native(NativeType::Int),
        (_, other) => other.clone(),
    }
}

/// Cassandra's prepared id: MD5 of the keyspace and the query text.
fn statement_id(text: &str, keyspace: Option<&str>) -> Bytes {
    let mut hasher = Md5::new();
    if let Some(k) = keyspace {
        hasher.update(k.as_bytes());
    }
    hasher.update(text.as_bytes());
    Bytes::copy_from_slice(&hasher.finalize())
}

/// v5 result metadata id: MD5 over the result column specs.
pub fn metadata_id(specs: &[ColumnSpec]) -> Bytes {
    let mut hasher = Md5::new();
    for s in specs {
        hasher.update(s.table.keyspace.as_bytes());
        hasher.update(s.table.table.as_bytes());
        hasher.update(s.name.as_bytes());
        hasher.update(s.cql_type.to_string().as_bytes());
    }
    Bytes::copy_from_slice(&hasher.finalize())
}

/// A schema from a peer may take away only the tables, views and index
/// stores a DDL statement dropped (recorded in `Schema::dropped_tables` by
/// the node that ran it): a schema that loses a table any other way (a
/// forged or corrupted push) is refused before anything is dropped.
fn refuse_undeclared_drops(
    old: &HashMap<TableId, crate::schema::Table>,
    dropped: &[TableId],
    next: &Schema,
) -> Result<()> {
    let undeclared = dropped
        .iter()
        .find(|id| !next.dropped_tables.contains(&id.0))
        .and_then(|id| old.get(id));
    match undeclared {
        None => Ok(()),
        Some(table) => Err(QueryError::Server(format!(
            "refusing schema version {} (epoch {}): it drops {}.{} without a DROP statement",
            rocksandra_data::uuid::to_text(&next.version),
            next.epoch,
            table.keyspace,
            table.name
        ))),
    }
}
