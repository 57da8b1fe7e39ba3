//! Log levels as nodetool sees them: the configured ones (`RUST_LOG`),
//! Cassandra's logger names turned into tracing targets, the changes
//! `setlogginglevel` makes and the table `getlogginglevels` prints. Pure:
//! `logging` turns `Levels::directives` into the running filter.

use std::collections::BTreeMap;
use std::fmt::Write;

/// The levels when `RUST_LOG` is unset or invalid: `info`, the ANN graph
/// crate's own lines at `warn`.
pub const DEFAULT_DIRECTIVES: &str = "info,hnsw_rs=warn";

/// The name `getlogginglevels` shows for the root level, as logback's.
pub const ROOT_LOGGER: &str = "ROOT";

/// Cassandra's own logger: every Rocksandra crate (their targets all start
/// with `rocksandra`: tracing targets match by prefix).
const CASSANDRA_LOGGER: &str = "org.apache.cassandra";
const ROCKSANDRA_TARGET: &str = "rocksandra";

/// Cassandra's packages (`org.apache.cassandra.PACKAGE...`) and the
/// Rocksandra target that does their work. A longer Java name maps by its
/// first package: `org.apache.cassandra.db.compaction` is storage's.
const CASSANDRA_PACKAGES: [(&str, &str); 17] = [
    ("auth", "rocksandra_query::auth"),
    ("batchlog", "rocksandra_cluster::batchlog"),
    ("config", "rocksandra_server::config"),
    ("cql3", "rocksandra_query"),
    ("db", "rocksandra_storage"),
    ("gms", "rocksandra_cluster::gossip"),
    ("hints", "rocksandra_cluster::hints"),
    ("index", "rocksandra_query::index"),
    ("locator", "rocksandra_cluster::ring"),
    ("metrics", "rocksandra_server::metrics"),
    ("net", "rocksandra_cluster::messaging"),
    ("repair", "rocksandra_cluster::repair"),
    ("schema", "rocksandra_query::schema"),
    ("service", "rocksandra_cluster"),
    ("streaming", "rocksandra_cluster::streaming"),
    ("tools", "rocksandra_cluster::admin"),
    ("transport", "rocksandra_server::transport"),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LevelError {
    #[error("unknown log level '{0}' (one of ALL, TRACE, DEBUG, INFO, WARN, ERROR, OFF)")]
    UnknownLevel(String),
    #[error(
        "no Rocksandra logger for '{name}': give a tracing target (such as rocksandra_query), \
         or org.apache.cassandra, optionally with one of its packages: {packages}"
    )]
    UnknownCassandraPackage { name: String, packages: String },
    #[error("'{0}' is not a logger name (letters, digits, '_', ':', '.' and '-' only)")]
    InvalidName(String),
    #[error("the level of the root logger cannot be removed, only changed")]
    RootLevelRemoved,
}

/// A level as logback names it (`ALL` is `TRACE` here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl Level {
    /// Case-insensitive, as logback's `Level.toLevel`; unlike it, an
    /// unknown name is an error rather than DEBUG.
    pub fn parse(text: &str) -> Result<Level, LevelError> {
        match text.to_ascii_uppercase().as_str() {
            "OFF" => Ok(Level::Off),
            "ERROR" => Ok(Level::Error),
            "WARN" => Ok(Level::Warn),
            "INFO" => Ok(Level::Info),
            "DEBUG" => Ok(Level::Debug),
            "TRACE" | "ALL" => Ok(Level::Trace),
            _ => Err(LevelError::UnknownLevel(text.to_string())),
        }
    }

    /// As `getlogginglevels` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Off => "OFF",
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        }
    }

    /// As a tracing filter directive spells it.
    fn directive(self) -> &'static str {
        match self {
            Level::Off => "off",
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }
}

/// What a logger name given to nodetool stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Logger {
    /// Every target without a level of its own (`ROOT`, or an empty name).
    Root,
    /// Events whose target starts with this one (`rocksandra_query`
    /// covers `rocksandra_query::select`).
    Target(String),
}

impl Logger {
    /// `""` and `ROOT` name the root level; `org.apache.cassandra` every
    /// Rocksandra target, and its packages the targets doing their work
    /// (`CASSANDRA_PACKAGES`); any other name is a tracing target as is.
    pub fn parse(name: &str) -> Result<Logger, LevelError> {
        let name = name.trim();
        if name.is_empty() || name.eq_ignore_ascii_case(ROOT_LOGGER) {
            return Ok(Logger::Root);
        }
        if name == CASSANDRA_LOGGER {
            return Ok(Logger::Target(ROCKSANDRA_TARGET.into()));
        }
        if let Some(class) = name.strip_prefix("org.apache.cassandra.") {
            let package = class.split('.').next().unwrap_or_default();
            return CASSANDRA_PACKAGES
                .iter()
                .find(|(known, _)| *known == package)
                .map(|(_, target)| Logger::Target(target.to_string()))
                .ok_or_else(|| LevelError::UnknownCassandraPackage {
                    name: name.to_string(),
                    packages: CASSANDRA_PACKAGES.map(|(package, _)| package).join(", "),
                });
        }
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '-');
        if name.chars().all(valid) {
            Ok(Logger::Target(name.to_string()))
        } else {
            Err(LevelError::InvalidName(name.to_string()))
        }
    }
}

/// The levels in force: the root's, each target's, and whatever else
/// `RUST_LOG` said (span and field filters), kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levels {
    root: Level,
    targets: BTreeMap<String, Level>,
    others: Vec<String>,
}

impl Levels {
    /// `RUST_LOG`'s directives: `LEVEL` for the root (ERROR when none is
    /// given, as `tracing_subscriber::EnvFilter::new`), `TARGET=LEVEL`
    /// for a target (the last one wins); anything else is kept for the
    /// filter to judge.
    pub fn parse(directives: &str) -> Levels {
        let mut levels = Levels {
            root: Level::Error,
            targets: BTreeMap::new(),
            others: Vec::new(),
        };
        for directive in directives.split(',').map(str::trim) {
            if directive.is_empty() {
                continue;
            }
            let parsed = match directive.split_once('=') {
                None => Level::parse(directive)
                    .ok()
                    .map(|level| (Logger::Root, level)),
                Some((target, level)) => match (Logger::parse(target), Level::parse(level)) {
                    (Ok(logger @ Logger::Target(_)), Ok(level)) if target == target.trim() => {
                        Some((logger, level))
                    }
                    _ => None,
                },
            };
            match parsed {
                Some((logger, level)) => levels.set(&logger, Some(level)).unwrap_or_default(),
                None => levels.others.push(directive.to_string()),
            }
        }
        levels
    }

    /// `level` for `logger`; None removes a target's own level, so that
    /// it follows the root's (or a shorter target's) again.
    pub fn set(&mut self, logger: &Logger, level: Option<Level>) -> Result<(), LevelError> {
        match (logger, level) {
            (Logger::Root, Some(level)) => self.root = level,
            (Logger::Root, None) => return Err(LevelError::RootLevelRemoved),
            (Logger::Target(target), Some(level)) => {
                self.targets.insert(target.clone(), level);
            }
            (Logger::Target(target), None) => {
                self.targets.remove(target);
            }
        }
        Ok(())
    }

    /// The filter's directives (`tracing_subscriber::EnvFilter` syntax).
    pub fn directives(&self) -> String {
        let targets = self
            .targets
            .iter()
            .map(|(target, level)| format!("{target}={}", level.directive()));
        std::iter::once(self.root.directive().to_string())
            .chain(targets)
            .chain(self.others.iter().cloned())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `nodetool getlogginglevels`' table, as Cassandra prints it: an
    /// empty line, then names left-aligned in 50 columns and levels
    /// right-aligned in 10, the root first.
    pub fn table(&self) -> String {
        let mut text = format!("\n{:<50}{:>10}\n", "Logger Name", "Log Level");
        let rows = std::iter::once((ROOT_LOGGER, self.root))
            .chain(self.targets.iter().map(|(t, level)| (t.as_str(), *level)));
        for (name, level) in rows {
            let _ = writeln!(text, "{name:<50}{:>10}", level.name());
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str) -> Result<Logger, LevelError> {
        Ok(Logger::Target(name.into()))
    }

    #[test]
    fn logger_names_map_to_targets() {
        for root in ["", " ", "ROOT", "root"] {
            assert_eq!(Logger::parse(root), Ok(Logger::Root), "{root:?}");
        }
        assert_eq!(Logger::parse("org.apache.cassandra"), target("rocksandra"));
        assert_eq!(
            Logger::parse("org.apache.cassandra.transport"),
            target("rocksandra_server::transport")
        );
        assert_eq!(
            Logger::parse("org.apache.cassandra.db.compaction.CompactionManager"),
            target("rocksandra_storage")
        );
        assert_eq!(
            Logger::parse("org.apache.cassandra.gms.Gossiper"),
            target("rocksandra_cluster::gossip")
        );
        assert_eq!(
            Logger::parse("rocksandra_query"),
            target("rocksandra_query")
        );
        assert_eq!(
            Logger::parse("rocksandra_server::transport::connection"),
            target("rocksandra_server::transport::connection")
        );
        assert_eq!(Logger::parse("hnsw_rs"), target("hnsw_rs"));
        assert_eq!(
            Logger::parse("com.datastax.driver"),
            target("com.datastax.driver")
        );
        assert!(matches!(
            Logger::parse("org.apache.cassandra.nosuch.Thing"),
            Err(LevelError::UnknownCassandraPackage { .. })
        ));
        for bad in ["a=b", "a,b", "a[span]", "a b", "x{f=1}"] {
            assert_eq!(
                Logger::parse(bad),
                Err(LevelError::InvalidName(bad.into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn levels_by_logback_names() {
        assert_eq!(Level::parse("debug"), Ok(Level::Debug));
        assert_eq!(Level::parse("WARN"), Ok(Level::Warn));
        assert_eq!(Level::parse("All"), Ok(Level::Trace));
        assert_eq!(Level::parse("off"), Ok(Level::Off));
        assert_eq!(
            Level::parse("LOUD"),
            Err(LevelError::UnknownLevel("LOUD".into()))
        );
    }

    #[test]
    fn rust_log_directives_round_trip() {
        let levels = Levels::parse(DEFAULT_DIRECTIVES);
        assert_eq!(levels.directives(), "info,hnsw_rs=warn");
        let levels = Levels::parse("rocksandra_query=debug, warn ,a[span{f=1}]=trace,x=loud");
        assert_eq!(
            levels.directives(),
            "warn,rocksandra_query=debug,a[span{f=1}]=trace,x=loud"
        );
        assert_eq!(Levels::parse("").directives(), "error");
        assert_eq!(
            Levels::parse("a=info,a=debug").directives(),
            "error,a=debug"
        );
    }

    #[test]
    fn set_and_remove_levels() {
        let mut levels = Levels::parse(DEFAULT_DIRECTIVES);
        let transport = Logger::Target("rocksandra_server::transport".into());
        levels.set(&transport, Some(Level::Debug)).expect("sets");
        levels.set(&Logger::Root, Some(Level::Warn)).expect("sets");
        assert_eq!(
            levels.directives(),
            "warn,hnsw_rs=warn,rocksandra_server::transport=debug"
        );
        levels.set(&transport, None).expect("removes");
        levels
            .set(&Logger::Target("absent".into()), None)
            .expect("removing what is not there is no error");
        assert_eq!(levels.directives(), "warn,hnsw_rs=warn");
        assert_eq!(
            levels.set(&Logger::Root, None),
            Err(LevelError::RootLevelRemoved)
        );
    }

    #[test]
    fn table_as_cassandra_prints_it() {
        let mut levels = Levels::parse(DEFAULT_DIRECTIVES);
        levels
            .set(&Logger::Target("rocksandra".into()), Some(Level::Debug))
            .expect("sets");
        let expected = [
            "",
            "Logger Name                                        Log Level",
            "ROOT                                                    INFO",
            "hnsw_rs                                                 WARN",
            "rocksandra                                             DEBUG",
            "",
        ]
        .join("\n");
        assert_eq!(levels.table(), expected);
    }
}
