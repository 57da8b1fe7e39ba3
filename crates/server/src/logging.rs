//! Where the node's log lines go and at which levels: stderr, and with a
//! log directory (`--log-dir`, or `CASSANDRA_LOG_DIR` as Cassandra's
//! scripts read it) `system.log` there too, rotated by size as Cassandra's
//! (`file`); as text or JSON lines; the levels from `RUST_LOG`, changed at run time by
//! `nodetool setlogginglevel` through `LevelControl`.

pub mod file;
pub mod levels;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_log::AsLog;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layer, Layered, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

pub use file::Rotation;
use levels::{Level, LevelError, Levels, Logger};

/// The environment variable Cassandra's scripts take the log directory
/// from; `--log-dir` overrides it.
pub const LOG_DIR_VARIABLE: &str = "CASSANDRA_LOG_DIR";

/// The current log file is `system.log`, where Cassandra writes its own;
/// the rotated ones `system.log.YYYY-MM-DD[.N].gz`.
pub const LOG_FILE_NAME: &str = "system.log";

/// Lines waiting for the file writer's thread. When they are all taken,
/// the thread logging waits for the disk (the queue is not lossy): as
/// Cassandra's appenders, no line is ever dropped, and the lines of an
/// incident are worth more than a request's latency while the disk is
/// that slow. At about 200 bytes a line this is 2 MB at most.
pub const LOG_QUEUE_LINES_MAX: usize = 10_000;

/// How each line is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// tracing's human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `message`, the
    /// event's fields, `target`.
    Json,
}

/// The command line's choices (`Cli`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// None: stderr only.
    pub dir: Option<PathBuf>,
    pub format: LogFormat,
    /// The file's limits (`--log-max-file-size`, ...).
    pub rotation: Rotation,
}

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("cannot use the log directory {}: {source}", dir.display())]
    Directory {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the log file in {}: {source}", dir.display())]
    File {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot install the logger: {0}")]
    Install(#[from] tracing_subscriber::util::TryInitError),
}

/// Why `nodetool setlogginglevel` changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum SetLevelError {
    #[error("{0}")]
    Level(#[from] LevelError),
    #[error("{0}")]
    Filter(#[from] tracing_subscriber::filter::ParseError),
    #[error("cannot change the log levels: {0}")]
    Reload(#[source] tracing_subscriber::reload::Error),
}

/// The logger as installed: keep it until the process ends (dropping it
/// flushes the file's queue).
pub struct Logging {
    pub levels: LevelControl,
    /// The file writer's thread, flushed when dropped.
    _file: Option<WorkerGuard>,
    /// Why `RUST_LOG` was not used, to log once logging works.
    pub rust_log_refused: Option<String>,
}

type Filtered = Layered<reload::Layer<EnvFilter, Registry>, Registry>;
type Output = Box<dyn Layer<Filtered> + Send + Sync>;

/// Installs the process's logger. The configured levels are `RUST_LOG`'s
/// (`levels::DEFAULT_DIRECTIVES` when it is unset or invalid). With a
/// log directory, stderr shows INFO and above only, as Cassandra's
/// console does, and the file whatever the levels let through.
pub fn init(options: &LogOptions) -> Result<Logging, LoggingError> {
    let (configured, rust_log_refused) = configured_levels(std::env::var("RUST_LOG").ok());
    let filter = EnvFilter::try_new(configured.directives())
        .unwrap_or_else(|_| EnvFilter::new(levels::DEFAULT_DIRECTIVES));
    let (filter, handle) = reload::Layer::new(filter);
    let stderr_ansi = std::io::stderr().is_terminal();
    let mut outputs = Vec::new();
    let file = match &options.dir {
        None => {
            outputs.push(output(std::io::stderr, options.format, stderr_ansi));
            None
        }
        Some(dir) => {
            let (writer, guard) = file_writer(dir, options.rotation)?;
            let stderr = output(std::io::stderr, options.format, stderr_ansi);
            outputs.push(stderr.with_filter(LevelFilter::INFO).boxed());
            outputs.push(output(writer, options.format, false));
            Some(guard)
        }
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(outputs)
        .try_init()?;
    Ok(Logging {
        levels: LevelControl::new(handle, configured),
        _file: file,
        rust_log_refused,
    })
}

/// `RUST_LOG`'s levels, or the defaults and why it was refused.
fn configured_levels(rust_log: Option<String>) -> (Levels, Option<String>) {
    let Some(text) = rust_log.filter(|t| !t.trim().is_empty()) else {
        return (Levels::parse(levels::DEFAULT_DIRECTIVES), None);
    };
    let levels = Levels::parse(&text);
    match EnvFilter::try_new(levels.directives()) {
        Ok(_) => (levels, None),
        Err(e) => (
            Levels::parse(levels::DEFAULT_DIRECTIVES),
            Some(format!(
                "RUST_LOG={text} refused ({e}): logging at {}",
                levels::DEFAULT_DIRECTIVES
            )),
        ),
    }
}

/// One output's formatting layer.
fn output<W>(writer: W, format: LogFormat, ansi: bool) -> Output
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi);
    match format {
        LogFormat::Text => layer.boxed(),
        LogFormat::Json => layer.json().flatten_event(true).boxed(),
    }
}

/// `dir/system.log` and its rotated files, behind the bounded queue.
fn file_writer(
    dir: &Path,
    rotation: Rotation,
) -> Result<(tracing_appender::non_blocking::NonBlocking, WorkerGuard), LoggingError> {
    std::fs::create_dir_all(dir).map_err(|source| LoggingError::Directory {
        dir: dir.to_path_buf(),
        source,
    })?;
    let file = file::RotatingFile::open(dir, LOG_FILE_NAME, rotation).map_err(|source| {
        LoggingError::File {
            dir: dir.to_path_buf(),
            source,
        }
    })?;
    Ok(NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES_MAX)
        .lossy(false)
        .thread_name("rocksandra-log")
        .finish(file))
}

/// The running levels, for nodetool (`setlogginglevel`, `getlogginglevels`).
#[derive(Clone)]
pub struct LevelControl {
    inner: Arc<ControlInner>,
}

struct ControlInner {
    handle: reload::Handle<EnvFilter, Registry>,
    configured: Levels,
    current: Mutex<Levels>,
}

impl LevelControl {
    fn new(handle: reload::Handle<EnvFilter, Registry>, configured: Levels) -> LevelControl {
        LevelControl {
            inner: Arc::new(ControlInner {
                handle,
                current: Mutex::new(configured.clone()),
                configured,
            }),
        }
    }

    /// `nodetool getlogginglevels`' answer.
    pub fn table(&self) -> String {
        self.current().table()
    }

    /// `nodetool setlogginglevel [LOGGER [LEVEL]]`, Cassandra's way: no
    /// logger and no level go back to the configured levels; a logger
    /// without a level loses its own; both set it.
    pub fn set(&self, logger: &str, level: &str) -> Result<(), SetLevelError> {
        let mut current = self.current();
        let (logger, level) = (logger.trim(), level.trim());
        if logger.is_empty() && level.is_empty() {
            self.apply(&self.inner.configured)?;
            *current = self.inner.configured.clone();
            tracing::info!("log levels reset to the configured ones");
            return Ok(());
        }
        let parsed = Logger::parse(logger)?;
        let new_level = match level {
            "" => None,
            level => Some(Level::parse(level)?),
        };
        let mut next = current.clone();
        next.set(&parsed, new_level)?;
        self.apply(&next)?;
        *current = next;
        let level = new_level.map_or("the inherited level", Level::name);
        match parsed {
            Logger::Root => tracing::info!("set log level to {level} for the root logger"),
            Logger::Target(target) => tracing::info!(
                "set log level to {level} for classes under '{logger}' (tracing target {target})"
            ),
        }
        Ok(())
    }

    fn current(&self) -> std::sync::MutexGuard<'_, Levels> {
        self.inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Swaps the running filter, and raises or lowers the `log` crate's
    /// own maximum with it (its records are filtered before they become
    /// events).
    fn apply(&self, levels: &Levels) -> Result<(), SetLevelError> {
        let filter = EnvFilter::try_new(levels.directives())?;
        self.inner
            .handle
            .reload(filter)
            .map_err(SetLevelError::Reload)?;
        tracing_log::log::set_max_level(LevelFilter::current().as_log());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_levels_from_rust_log() {
        let default = Levels::parse(levels::DEFAULT_DIRECTIVES);
        assert_eq!(configured_levels(None), (default.clone(), None));
        assert_eq!(configured_levels(Some(" ".into())), (default.clone(), None));
        let (levels, refused) = configured_levels(Some("debug,hnsw_rs=off".into()));
        assert_eq!(levels.directives(), "debug,hnsw_rs=off");
        assert_eq!(refused, None);
        let (levels, refused) = configured_levels(Some("x=loud".into()));
        assert_eq!(levels, default);
        assert!(
            refused
                .as_deref()
                .is_some_and(|r| r.starts_with("RUST_LOG=x=loud refused")),
            "{refused:?}"
        );
    }
}
