//! The `rocksandra` binary: flags, configuration, logging, the node's
//! service (CQL transport, metrics endpoint), and a clean stop on SIGTERM/SIGINT.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use rocksandra_server::config::Command;
use rocksandra_server::{nodetool, shutdown_signal, Cli, Config, Service};
use tracing::{error, info, warn};
use tracing_subscriber::EnvFilter;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(nodetool::cassandra_flags(std::env::args())) {
        Ok(cli) => cli,
        Err(e) if nodetool::invoked(std::env::args()) => return nodetool::usage_error(&e),
        Err(e) => e.exit(),
    };
    if let Some(Command::Nodetool(args)) = &cli.command {
        return nodetool::run(args.clone(), cli.config.as_deref());
    }
    init_logging();
    let config = match Config::load(&cli) {
        Ok(config) => config,
        Err(e) => {
            error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(warning) = config.unused_keys_warning() {
        warn!("{warning}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(config));
    // Storage is flushed and closed here, after the transport has stopped
    // and in-flight requests have finished (or the grace period ran out).
    match result {
        Ok(()) => {
            info!("stopped");
            ExitCode::SUCCESS
        }
        Err(message) => {
            error!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr; `RUST_LOG` filters them (default `info`, the ANN
/// graph crate's own lines at `warn`).
fn init_logging() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,hnsw_rs=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

async fn run(config: Config) -> Result<(), String> {
    let started = std::time::Instant::now();
    let service = Service::start(&config).await?;
    info!(
        cluster_name = %config.cluster_name,
        data = ?config.data_file_directories,
        "listening for CQL clients on {} ({}, ready in {} ms)",
        service.native_address(),
        service.native_encryption(),
        started.elapsed().as_millis()
    );
    match service.admin_address() {
        Some(address) => info!("nodetool connects to {address} (admin_port)"),
        None => info!("nodetool's port off (admin_port: 0)"),
    }
    match service.metrics_address() {
        Some(address) => info!("serving Prometheus metrics on http://{address}/metrics"),
        None => info!("Prometheus metrics endpoint off (prometheus_port: 0)"),
    }
    service.run(shutdown_signal()).await
}
