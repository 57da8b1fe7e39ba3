//! The rocksandra server library: configuration, the CQL native transport,
//! the `RequestHandler` seam where query execution plugs in, and the
//! metrics the server keeps about itself.
//!
//! `main.rs` only parses flags and configuration, sets up logging, and runs
//! a `Service` (storage, transport, metrics endpoint) until a signal.

pub mod admin_port;
pub mod config;
pub mod disk_usage;
pub mod exec_handler;
pub mod handler;
pub mod logging;
pub mod metrics;
pub mod migrate;
pub mod node;
pub mod nodetool;
pub mod service;
pub mod transport;

pub use config::{Cli, Config, ConfigError};
pub use exec_handler::ExecutorHandler;
pub use handler::{
    Credentials, HandlerFuture, NotReadyHandler, Reply, RequestContext, RequestHandler, Session,
};
pub use service::{Service, ServiceError};
pub use transport::{EventSender, Server, TransportConfig, TransportError, TransportLimits};

/// Completes on the first SIGINT (Ctrl-C) or SIGTERM. If a signal handler
/// cannot be installed, that signal is logged and ignored: waiting forever
/// for it is better than shutting down at once.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for SIGINT: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(e) => {
                tracing::error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received, shutting down"),
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
    }
}
