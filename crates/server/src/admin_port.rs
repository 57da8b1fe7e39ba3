//! nodetool's port on this node (`admin_address:admin_port`): the
//! cluster's commands when the node is a member, its own when it runs
//! alone; with PasswordAuthenticator, only a superuser's login opens it.

use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use rocksandra_cluster::admin::listener::AdminService;
use rocksandra_cluster::admin::{self, AdminNode};
use rocksandra_cluster::message::{AdminCommand, RemoteError, Response};
use rocksandra_cluster::{ClusterConfig, ClusterNode};
use rocksandra_query::Executor;
use rocksandra_storage::Engine;

use crate::config::guardrails_runtime;
use crate::logging::LevelControl;
use crate::node::ApplyGuardrails;

/// What nodetool's commands act on.
pub enum AdminTarget {
    Member(Arc<ClusterNode>),
    /// A node without seeds: its ring is itself.
    Alone {
        config: Box<ClusterConfig>,
        engine: Arc<dyn Engine>,
        /// The compaction throughput in force (`setcompactionthroughput`).
        compaction_throughput: Arc<AtomicU32>,
        /// When the node started (milliseconds since the epoch).
        started_millis: u64,
    },
}

pub struct NodeAdmin {
    pub executor: Arc<Executor>,
    /// Puts guardrails changed by `setguardrailsconfig` in force.
    pub apply_guardrails: ApplyGuardrails,
    pub target: AdminTarget,
    /// The process's log levels (None: a node started without the
    /// binary's logger, as in tests, refuses the logging commands).
    pub log_levels: Option<LevelControl>,
}

impl AdminService for NodeAdmin {
    fn login_required(&self) -> bool {
        self.executor.auth_config().password_authenticator
    }

    fn login(&self, username: &str, password: &str) -> Result<(), rocksandra_query::QueryError> {
        self.executor.authenticate_superuser(username, password)
    }

    /// The logging commands are answered here: the process's logger is
    /// the server's, not the cluster's.
    fn run(&self, command: AdminCommand) -> Response {
        match (command, &self.log_levels) {
            (AdminCommand::GetLoggingLevels, Some(levels)) => Response::Text(levels.table()),
            (AdminCommand::SetLoggingLevel { logger, level }, Some(levels)) => {
                match levels.set(&logger, &level) {
                    Ok(()) => Response::Text(String::new()),
                    Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
                }
            }
            (
                AdminCommand::GetGuardrailsConfig {
                    category,
                    expand,
                    name,
                },
                _,
            ) => self.get_guardrails_config(category.as_deref(), expand, name.as_deref()),
            (AdminCommand::SetGuardrailsConfig { args }, _) => self.set_guardrails_config(&args),
            (command, _) => self.run_command(command),
        }
    }
}

impl NodeAdmin {
    /// `nodetool getguardrailsconfig` (`config::guardrails_runtime`).
    fn get_guardrails_config(
        &self,
        category: Option<&str>,
        expand: bool,
        name: Option<&str>,
    ) -> Response {
        let category = category
            .map(guardrails_runtime::Category::parse)
            .transpose();
        let text = category.and_then(|category| {
            guardrails_runtime::get_config(&self.executor.guardrails(), category, expand, name)
        });
        match text {
            Ok(text) => Response::Text(text),
            Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
        }
    }

    /// `nodetool setguardrailsconfig`: checked as at start, then in force
    /// at once; silent, as Cassandra's.
    fn set_guardrails_config(&self, args: &[String]) -> Response {
        match guardrails_runtime::set_config(&self.executor.guardrails(), args) {
            Ok(guardrails) => {
                (self.apply_guardrails)(guardrails);
                tracing::info!("guardrails changed by nodetool: {}", args.join(" "));
                Response::Text(String::new())
            }
            Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
        }
    }
}

impl NodeAdmin {
    fn run_command(&self, command: AdminCommand) -> Response {
        match &self.target {
            AdminTarget::Member(node) => node.admin(command),
            AdminTarget::Alone {
                config,
                engine,
                compaction_throughput,
                started_millis,
            } => {
                let node = AdminNode::alone(
                    ClusterConfig::clone(config),
                    self.executor.clone(),
                    engine.clone(),
                    compaction_throughput.clone(),
                    *started_millis,
                );
                admin::run_alone(&node, command)
            }
        }
    }
}
