//! The node as `main` runs it: storage and the executor opened, the CQL
//! transport, nodetool's port (unless `admin_port` is 0) and the metrics
//! endpoint (unless `prometheus_port` is 0) bound, then served until
//! shutdown, and storage flushed.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rocksandra_cluster::admin::listener::AdminListener;
use rocksandra_query::Executor;

use crate::admin_port::{AdminTarget, NodeAdmin};
use crate::config::Config;
use crate::exec_handler::ExecutorHandler;
use crate::logging::LevelControl;
use crate::metrics::http::{MetricsError, MetricsServer, Render};
use crate::metrics::{watch_event_loop, MetricsSource};
use crate::node::NodeError;
use crate::transport::{Server, TransportConfig, TransportError};

/// How long a node that has left the ring keeps answering the nodetool
/// connections still open (the decommission's own, any attached to it).
const ADMIN_CLOSE_GRACE: Duration = Duration::from_secs(10);

/// Why a node could not start, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Node(#[from] NodeError),
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    #[error("cannot listen for nodetool on {address} (admin_port): {source}")]
    AdminPort {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("flush at shutdown failed: {0}")]
    Flush(#[source] rocksandra_query::QueryError),
}

/// A node with its storage open and its listeners bound, ready to `run`.
pub struct Service {
    executor: Arc<Executor>,
    server: Server,
    metrics: Option<MetricsServer>,
    /// nodetool's port (None when `admin_port` is 0).
    admin: Option<AdminListener>,
    /// This node's membership of a cluster (None when it runs alone).
    cluster: Option<Arc<rocksandra_cluster::ClusterNode>>,
}

impl Service {
    /// Opens storage and binds every listener, so that the ports are known
    /// (and taken) before `run`.
    pub async fn start(config: &Config) -> Result<Service, ServiceError> {
        Service::start_with_log_levels(config, None).await
    }

    /// `start`, with the process's log levels for nodetool's
    /// `setlogginglevel` and `getlogginglevels` (which fail without).
    pub async fn start_with_log_levels(
        config: &Config,
        log_levels: Option<LevelControl>,
    ) -> Result<Service, ServiceError> {
        // TLS key material is read first: a bad file stops the node before
        // storage opens.
        let transport = TransportConfig::new(config)?;
        let node = crate::node::open(config)?;
        let inline_short_writes = config.commitlog_sync != crate::config::CommitlogSync::Batch;
        // In a cluster, requests may wait for other nodes: none runs on
        // the network thread.
        let handler = Arc::new(ExecutorHandler::new(
            node.executor.clone(),
            inline_short_writes && !config.clustered,
            !config.clustered,
        ));
        // A node joins its cluster before it opens the CQL port, as
        // Cassandra does: clients (and whoever waits for the port) see it
        // only once it owns its ranges. Events before then reach no client.
        let cluster_config = crate::node::cluster_config(config, &node)?;
        let cluster = if config.clustered {
            let events = handler.clone();
            let sink: rocksandra_cluster::EventSink = Arc::new(move |e| events.send_event(e));
            let joined = crate::node::join_cluster(cluster_config.clone(), &node, sink).await?;
            crate::node::schedule_default_role_setup(&node.executor, config.superuser_setup_delay)?;
            Some(joined)
        } else {
            None
        };
        let admin = bind_admin(config, cluster_config, &node, cluster.clone(), log_levels).await?;
        let server = Server::bind(transport, handler.clone()).await?;
        handler.set_events(server.events());
        let metrics = match config.prometheus_listen_address() {
            Some(address) => {
                let source = MetricsSource {
                    server: server.metrics(),
                    storage: Some(node.storage),
                    executor: Some(node.executor.clone()),
                    cluster: cluster.clone(),
                };
                let render: Render = Arc::new(move || source.render());
                let endpoint = MetricsServer::bind(address, render).await?;
                Some(endpoint)
            }
            None => None,
        };
        Ok(Service {
            executor: node.executor,
            server,
            metrics,
            admin,
            cluster,
        })
    }

    /// Where CQL clients connect (with the real port when bound to port 0).
    pub fn native_address(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// How CQL clients' connections are encrypted (`client_encryption_options`).
    pub fn native_encryption(&self) -> &'static str {
        self.server.encryption()
    }

    /// Where nodetool connects; None when the admin port is off.
    pub fn admin_address(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(AdminListener::local_addr)
    }

    /// Where Prometheus scrapes `/metrics`; None when the endpoint is off.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(MetricsServer::local_addr)
    }

    /// Serves until `shutdown` completes, then stops the transport (letting
    /// in-flight requests finish, up to its grace period) and the metrics
    /// endpoint, and makes everything acknowledged durable.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), ServiceError> {
        // The event-loop probe runs only for the endpoint, its only reader.
        let endpoint = self.metrics.map(|endpoint| {
            let probe = tokio::spawn(watch_event_loop(self.server.metrics(), "main".into()));
            (probe, tokio::spawn(endpoint.run()))
        });
        // A decommissioned node stops by itself once it has left the ring.
        let cluster = self.cluster.clone();
        let left = async move {
            match cluster {
                Some(node) => node.wait_until_left().await,
                None => std::future::pending().await,
            }
        };
        let has_left = Arc::new(AtomicBool::new(false));
        let has_left_flag = has_left.clone();
        self.server
            .run(async move {
                tokio::select! {
                    () = shutdown => {}
                    () = left => {
                        tracing::info!("decommissioned: this node left the ring and stops");
                        has_left_flag.store(true, Ordering::SeqCst);
                    }
                }
            })
            .await;
        match self.admin {
            // The decommission's nodetool (and any attached to it) gets its
            // answer before the process exits.
            Some(admin) if has_left.load(Ordering::SeqCst) => admin.close(ADMIN_CLOSE_GRACE).await,
            admin => drop(admin),
        }
        drop(self.cluster);
        if let Some((probe, endpoint)) = endpoint {
            probe.abort();
            endpoint.abort();
        }
        // No request runs any more: the transport's serving threads (and
        // their blocking pools) have ended.
        self.executor.save_vector_graphs();
        self.executor.flush().map_err(ServiceError::Flush)
    }
}

/// Binds nodetool's port, serving the cluster's commands or this node's.
async fn bind_admin(
    config: &Config,
    cluster_config: rocksandra_cluster::ClusterConfig,
    node: &crate::node::Node,
    cluster: Option<Arc<rocksandra_cluster::ClusterNode>>,
    log_levels: Option<LevelControl>,
) -> Result<Option<AdminListener>, ServiceError> {
    let Some(address) = config.admin_listen_address() else {
        return Ok(None);
    };
    let tls = cluster_config.tls.clone();
    let target = match cluster {
        Some(member) => AdminTarget::Member(member),
        None => AdminTarget::Alone {
            compaction_throughput: Arc::new(AtomicU32::new(
                cluster_config.compaction_throughput_mib,
            )),
            config: Box::new(cluster_config),
            engine: node.storage.clone(),
            started_millis: u64::try_from(rocksandra_data::time::system_micros() / 1_000)
                .unwrap_or(0),
        },
    };
    let service = Arc::new(NodeAdmin {
        executor: node.executor.clone(),
        apply_guardrails: node.apply_guardrails.clone(),
        target,
        log_levels,
    });
    AdminListener::bind(address, tls, service)
        .await
        .map(Some)
        .map_err(|source| ServiceError::AdminPort { address, source })
}
