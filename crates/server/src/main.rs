//! The `rocksandra` binary: flags, configuration, logging, the node's
//! service (CQL transport, metrics endpoint), and a clean stop on SIGTERM/SIGINT.

use std::process::ExitCode;

use clap::Parser;
use rocksandra_server::config::Command;
use rocksandra_server::logging::{self, LevelControl};
use rocksandra_server::{nodetool, shutdown_signal, Cli, Config, Service, ServiceError};
use tracing::{error, info, warn};

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
    if let Some(Command::Migrate(args)) = &cli.command {
        return rocksandra_server::migrate::run(args.clone());
    }
    let log_options = cli.log_options();
    // Kept to the end: dropping it flushes the log file.
    let logger = match logging::init(&log_options) {
        Ok(logger) => logger,
        Err(e) => {
            eprintln!("rocksandra: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(refused) = &logger.rust_log_refused {
        warn!("{refused}");
    }
    if let Some(dir) = &log_options.dir {
        info!("logging to {}", dir.join(logging::LOG_FILE_NAME).display());
    }
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
    let result = runtime.block_on(run(config, logger.levels.clone()));
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

async fn run(config: Config, log_levels: LevelControl) -> Result<(), ServiceError> {
    let started = std::time::Instant::now();
    let service = Service::start_with_log_levels(&config, Some(log_levels)).await?;
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
