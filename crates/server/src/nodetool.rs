//! `rocksandra nodetool`: Cassandra's nodetool commands, parsed with clap,
//! sent to a running node over its storage port, the node's answer printed.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;

use clap::error::{ContextKind, ErrorKind};
use rocksandra_cluster::admin::Credentials;
use rocksandra_cluster::message::{AdminCommand, AuthCacheName, TableSelection, ThroughputUnit};
use rocksandra_cluster::tls::InternodeTls;

use crate::config::guardrails_runtime::GuardrailsCommandError;
use crate::config::{Config, ConfigError, ADMIN_PORT_DEFAULT};
use crate::transport::tls::TlsConfigError;

/// A command line that makes no command for the node: Cassandra's
/// nodetool usage texts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    #[error("import requires keyspace, table name and directories")]
    ImportArguments,
    #[error("--keyspace is required with --table or --all-tables")]
    KeyspaceRequired,
    #[error("No resource options allowed without a <role> being specified")]
    ResourcesWithoutRole,
    #[error("No resource options specified")]
    NoResources,
    #[error(
        "A single <role> is only supported / you have a typo in the resource options spelling"
    )]
    OneRole,
    #[error("tablehistograms requires keyspace and table name arguments")]
    HistogramTableName,
    #[error("tablehistograms requires <keyspace> <table> or <keyspace.table> format argument.")]
    HistogramArguments,
    #[error("No enum constant org.apache.cassandra.schema.CompactionParams.TombstoneOption.{0}")]
    Granularity(String),
    #[error("refresh requires ks and cf args")]
    RefreshArguments,
    #[error(
        "refresh loads files placed in a table's data directory, and this node keeps no directory per table: restore {keyspace}.{table} from a snapshot with nodetool import {keyspace} {table} SNAPSHOT_DIRECTORY"
    )]
    Refresh { keyspace: String, table: String },
    #[error("You cannot use more than one flag with this command")]
    OneFlag,
    #[error(
        "Snapshots hold every keyspace on this node: clear a whole snapshot (-t TAG or --all) without naming keyspaces ({0})"
    )]
    SnapshotKeyspaces(String),
    #[error("Specify snapshot name or --all")]
    NoSnapshotName,
    #[error("Specify only one of snapshot name or --all")]
    SnapshotNameAndAll,
    #[error(
        "Specify only one guardrail name to get the configuration of or no name \
         to get the configuration of all of them."
    )]
    OneGuardrailName,
    #[error("{0}")]
    Guardrails(#[from] GuardrailsCommandError),
    #[error("{0}")]
    Repair(#[from] rocksandra_cluster::admin::RepairArgsError),
}

/// Why nodetool could not set up its TLS from `--config FILE`.
#[derive(Debug, thiserror::Error)]
pub enum NodetoolTlsError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Tls(#[from] TlsConfigError),
}

/// `rocksandra nodetool [-h HOST] [-p PORT] [-u USER -pw PASSWORD] COMMAND [ARGS...]`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct NodetoolArgs {
    /// The node's admin address (`admin_address`; `-H` too, as before).
    #[arg(long, short = 'h', short_alias = 'H', default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Its admin port (`admin_port`).
    #[arg(long, short = 'p', default_value_t = ADMIN_PORT_DEFAULT)]
    pub port: u16,
    /// The superuser to log in as, when the node runs PasswordAuthenticator.
    #[arg(long, short = 'u')]
    pub username: Option<String>,
    /// Its password (`-pw`, as Cassandra's nodetool spells it).
    #[arg(long)]
    pub password: Option<String>,
    /// Print help (`nodetool help COMMAND` for one command's).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    #[command(subcommand)]
    pub command: NodetoolCommand,
}

/// A keyspace and some of its tables (all of them when none is named).
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct Tables {
    /// Every keyspace when left out.
    pub keyspace: Option<String>,
    /// Every table of the keyspace when left out.
    pub tables: Vec<String>,
}

impl Tables {
    fn selection(self) -> TableSelection {
        TableSelection {
            keyspace: self.keyspace,
            tables: self.tables,
        }
    }
}

/// `nodetool import`'s options, as Cassandra 5.0's. Only `--no-tokens`
/// (and `--quick`, which implies it) changes what is done: the files of a
/// snapshot are only read, never moved, levelled, verified apart or
/// indexed apart, and the node's caches are always cleared of the table.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ImportArgs {
    /// Keep the level on the new sstables (no effect: RocksDB places ingested data)
    #[arg(short = 'l', long = "keep-level")]
    keep_level: bool,
    /// Keep any repaired information from the sstables (no effect: nothing is marked repaired)
    #[arg(short = 'r', long = "keep-repaired")]
    keep_repaired: bool,
    /// Don't verify new sstables (no effect: every value read is checked)
    #[arg(short = 'v', long = "no-verify")]
    no_verify: bool,
    /// Don't verify that all tokens in the new sstable are owned by the current node (import them all)
    #[arg(short = 't', long = "no-tokens")]
    no_tokens: bool,
    /// Don't invalidate the row cache when importing (no effect: the cache is always cleared)
    #[arg(short = 'c', long = "no-invalidate-caches")]
    no_invalidate_caches: bool,
    /// Do a quick import without verifying sstables, clearing row cache or checking in which data directory to put the file
    #[arg(short = 'q', long = "quick")]
    quick: bool,
    /// Run an extended verify, verifying all values in the new sstables (always done)
    #[arg(short = 'e', long = "extended-verify")]
    extended_verify: bool,
    /// Copy data from source directories instead of moving them (always: the snapshot is only read)
    #[arg(short = 'p', long = "copy-data")]
    copy_data: bool,
    /// Require existing index components for SSTables with attached indexes (no effect: indexes are written again)
    #[arg(long = "require-index-components")]
    require_index_components: bool,
    /// Skip SSTable-attached index checksum validation (no effect)
    #[arg(long = "no-index-validation")]
    no_index_validation: bool,
    /// The keyspace, table name and directories to import sstables from
    args: Vec<String>,
}

impl ImportArgs {
    fn into_admin(self) -> Result<AdminCommand, UsageError> {
        let [keyspace, table, dirs @ ..] = self.args.as_slice() else {
            return Err(UsageError::ImportArguments);
        };
        if dirs.is_empty() {
            return Err(UsageError::ImportArguments);
        }
        Ok(AdminCommand::Import {
            keyspace: keyspace.clone(),
            table: table.clone(),
            // The node resolves paths against its own working directory:
            // a relative one is made absolute here, where it was meant.
            dirs: dirs.iter().map(|d| absolute(d)).collect(),
            all_tokens: self.no_tokens || self.quick,
        })
    }
}

/// `invalidatepermissionscache [<role> <resource options>]`, as Cassandra's.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct PermissionsCacheArgs {
    /// The role whose entries go (every entry when none).
    pub role: Vec<String>,
    /// Invalidate permissions for 'ALL KEYSPACES'
    #[arg(long = "all-keyspaces")]
    pub all_keyspaces: bool,
    /// Keyspace to invalidate permissions for
    #[arg(long)]
    pub keyspace: Option<String>,
    /// Invalidate permissions for 'ALL TABLES'
    #[arg(long = "all-tables")]
    pub all_tables: bool,
    /// Table to invalidate permissions for (you must specify --keyspace for using this option)
    #[arg(long)]
    pub table: Option<String>,
    /// Invalidate permissions for 'ALL ROLES'
    #[arg(long = "all-roles")]
    pub all_roles: bool,
    /// A specific role for which permissions are to be invalidated
    #[arg(long = "role")]
    pub of_role: Option<String>,
    /// Invalidate permissions for 'ALL FUNCTIONS'
    #[arg(long = "all-functions")]
    pub all_functions: bool,
    /// Keyspace to invalidate permissions for all its functions
    #[arg(long = "functions-in-keyspace")]
    pub functions_in_keyspace: Option<String>,
    /// Invalidate permissions for 'ALL MBEANS'
    #[arg(long = "all-mbeans")]
    pub all_mbeans: bool,
}

impl PermissionsCacheArgs {
    /// The stored names of the resources the options name.
    fn resources(&self) -> Result<Vec<String>, UsageError> {
        let mut names = Vec::new();
        let mut flag = |set: bool, name: &str| {
            if set {
                names.push(name.to_string());
            }
        };
        flag(self.all_keyspaces, "data");
        flag(self.all_roles, "roles");
        flag(self.all_functions, "functions");
        flag(self.all_mbeans, "mbean");
        match (&self.keyspace, &self.table, self.all_tables) {
            (None, Some(_), _) | (None, None, true) => return Err(UsageError::KeyspaceRequired),
            (Some(k), Some(t), _) => names.push(format!("data/{k}/{t}")),
            (Some(k), None, true) => names.push(format!("data/{k}/*")),
            (Some(k), None, false) => names.push(format!("data/{k}")),
            (None, None, false) => {}
        }
        names.extend(self.of_role.iter().map(|r| format!("roles/{r}")));
        names.extend(
            self.functions_in_keyspace
                .iter()
                .map(|k| format!("functions/{k}")),
        );
        Ok(names)
    }

    fn into_admin(self) -> Result<AdminCommand, UsageError> {
        let resources = self.resources()?;
        match (self.role.as_slice(), resources.is_empty()) {
            ([], true) => {}
            ([], false) => return Err(UsageError::ResourcesWithoutRole),
            ([_], false) => {}
            ([_], true) => return Err(UsageError::NoResources),
            _ => return Err(UsageError::OneRole),
        }
        Ok(AdminCommand::InvalidateAuthCache {
            cache: AuthCacheName::Permissions,
            roles: self.role,
            resources,
        })
    }
}

fn absolute(dir: &str) -> String {
    std::path::absolute(dir)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| dir.to_string())
}

/// `tablehistograms`' arguments: `KEYSPACE TABLE`, `KEYSPACE.TABLE`, or
/// none (every table), with Cassandra's usage errors.
fn histogram_table(args: &[String]) -> Result<Option<(String, String)>, UsageError> {
    match args {
        [] => Ok(None),
        [keyspace, table] => Ok(Some((keyspace.clone(), table.clone()))),
        [name] => match name.split('.').collect::<Vec<_>>().as_slice() {
            [keyspace, table] => Ok(Some((keyspace.to_string(), table.to_string()))),
            _ => Err(UsageError::HistogramTableName),
        },
        _ => Err(UsageError::HistogramArguments),
    }
}

/// `nodetool garbagecollect`'s options, as Cassandra 5.0's. Either
/// granularity does the same here: a full compaction keeps one version
/// of each cell and drops what tombstones past gc_grace cover.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct GarbageCollectArgs {
    /// Granularity of garbage removal. ROW (default) removes deleted partitions and rows, CELL also removes overwritten or deleted cells.
    #[arg(short = 'g', long = "granularity", default_value = "ROW")]
    granularity: String,
    /// Number of sstables to cleanup simultanously, set to 0 to use all available compaction threads (no effect: tables are compacted one after another)
    #[arg(short = 'j', long = "jobs", default_value_t = 1)]
    jobs: u32,
    #[command(flatten)]
    tables: Tables,
}

/// Cassandra's tombstone options (`CompactionParams.TombstoneOption`).
const GRANULARITIES: [&str; 3] = ["NONE", "ROW", "CELL"];

impl GarbageCollectArgs {
    fn into_admin(self) -> Result<AdminCommand, UsageError> {
        if !GRANULARITIES.contains(&self.granularity.as_str()) {
            return Err(UsageError::Granularity(self.granularity));
        }
        Ok(AdminCommand::GarbageCollect {
            selection: self.tables.selection(),
            granularity: self.granularity,
            jobs: self.jobs,
        })
    }
}

/// Cassandra's refresh loads sstables placed in the table's data
/// directory; this node keeps no directory per table.
fn refresh(args: &[String]) -> Result<AdminCommand, UsageError> {
    let [keyspace, table] = args else {
        return Err(UsageError::RefreshArguments);
    };
    Err(UsageError::Refresh {
        keyspace: keyspace.clone(),
        table: table.clone(),
    })
}

/// The commands, named as Cassandra's.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
#[command(rename_all = "lower")]
pub enum NodetoolCommand {
    /// Print cluster information (state, load, IDs, ...)
    Status {
        /// Ownership as this keyspace replicates data.
        keyspace: Option<String>,
    },
    /// Print information about the token ring
    Ring,
    /// Print node information (uptime, load, ...)
    Info,
    /// Shows the token ranges info of a given keyspace
    DescribeRing { keyspace: String },
    /// Print the name, snitch, partitioner and schema version of a cluster
    DescribeCluster,
    /// Print cassandra version
    Version,
    /// Print the end points that owns the key
    GetEndpoints {
        keyspace: String,
        table: String,
        /// The partition key as text (`a:b` for a composite key).
        key: String,
    },
    /// Flush one or more tables
    Flush(Tables),
    /// Drain the node (flush every table)
    Drain,
    /// Force a (major) compaction on one or more tables
    Compact(Tables),
    /// Triggers the immediate cleanup of keys no longer belonging to a node
    Cleanup(Tables),
    /// Take a snapshot (of every keyspace: the named ones are checked)
    Snapshot {
        /// The name of the snapshot (default: the time in milliseconds).
        #[arg(short = 't', long = "tag")]
        tag: Option<String>,
        keyspaces: Vec<String>,
    },
    /// Lists all the snapshots along with the size on disk and true size
    ListSnapshots,
    /// Remove the snapshot with the given name, or all snapshots
    ClearSnapshot {
        /// Remove the snapshot with a given name.
        #[arg(short = 't')]
        tag: Option<String>,
        /// Removes all snapshots.
        #[arg(long)]
        all: bool,
        /// Refused: a snapshot holds every keyspace here.
        keyspaces: Vec<String>,
    },
    /// Import new SSTables to the system (here: one table's data from snapshot directories)
    Import(ImportArgs),
    /// Load newly placed SSTables to the system without restart (deprecated: use import)
    Refresh {
        /// The keyspace and table name
        args: Vec<String>,
    },
    /// Print the MB/s throughput cap for compaction in the system
    GetCompactionThroughput,
    /// Set the MB/s throughput cap for compaction (stored; the rate set at start stays)
    SetCompactionThroughput { value_in_mb: u32 },
    /// Print statistics on compactions
    CompactionStats,
    /// Print statistics on tables
    TableStats {
        /// `KEYSPACE` or `KEYSPACE.TABLE`; every keyspace when none.
        names: Vec<String>,
    },
    /// Print usage statistics of thread pools (local replica reads and writes)
    TpStats,
    /// Print statistic histograms for network operations
    ProxyHistograms,
    /// Print statistic histograms for a given table
    TableHistograms {
        /// `KEYSPACE TABLE` or `KEYSPACE.TABLE`; every table when none.
        args: Vec<String>,
    },
    /// Shows the gossip information for the cluster
    GossipInfo,
    /// Print runtime configuration of guardrails.
    GetGuardrailsConfig {
        /// Category of guardrails to filter, can be one of 'values',
        /// 'thresholds', 'flags', 'others'.
        #[arg(short = 'c', long = "category")]
        category: Option<String>,
        /// Expand all guardrail names so they reflect their counterparts in
        /// cassandra.yaml
        #[arg(long)]
        expand: bool,
        /// Specific name of a guardrail to get configuration of.
        args: Vec<String>,
    },
    /// Modify runtime configuration of guardrails.
    SetGuardrailsConfig {
        /// SETTER VALUE...: a threshold's fail value then its warn value
        /// (null disables), a flag's true or false, a list's items (null
        /// or [] empties it).
        #[arg(allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Remove deleted data from one or more tables (a full compaction of each)
    GarbageCollect(GarbageCollectArgs),
    /// Repair one or more tables ([-pr] [-full] [-st T -et T] [KEYSPACE [TABLE...]])
    Repair {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Rebuild data by streaming from other nodes
    Rebuild { source_dc: Option<String> },
    /// Print network information on provided host
    Netstats,
    /// Print the throughput cap for streaming in the system in rounded megabits. For precise number, please, use option -d
    GetStreamThroughput {
        /// Print the throughput cap for streaming in MiB/s
        #[arg(short = 'm', long = "mib")]
        mib: bool,
        /// Print the throughput cap for streaming in precise Mbits (double)
        #[arg(short = 'd', long = "precise-mbit")]
        precise: bool,
    },
    /// Set the throughput cap for streaming in the system, or 0 to disable throttling
    SetStreamThroughput {
        /// Value in megabits, 0 to disable throttling
        value: u32,
        /// Use MiB/s as the unit
        #[arg(short = 'm', long = "mib")]
        mib: bool,
    },
    /// Decommission the *node I am connecting to*
    Decommission {
        /// Force decommission of this node even when it reduces the number of replicas to below configured RF
        #[arg(short = 'f', long)]
        force: bool,
    },
    /// Remove a dead node by its host ID
    RemoveNode { host_id: String },
    /// Set the log level threshold for a given class (logger). If both
    /// class and level are empty, it will reset to the initial configuration
    SetLoggingLevel {
        /// `org.apache.cassandra[.PACKAGE]`, `ROOT`, or a tracing target
        /// such as `rocksandra_query`.
        class: Option<String>,
        /// ALL, TRACE, DEBUG, INFO, WARN, ERROR or OFF; none removes the
        /// logger's own level.
        level: Option<String>,
    },
    /// Get the runtime logging levels
    #[command(alias = "getlogginglevel")]
    GetLoggingLevels,
    /// Invalidate the roles cache
    InvalidateRolesCache {
        /// Only these roles' entries.
        roles: Vec<String>,
    },
    /// Invalidate the credentials cache
    InvalidateCredentialsCache {
        /// Only these roles' entries.
        roles: Vec<String>,
    },
    /// Invalidate the permissions cache
    InvalidatePermissionsCache(PermissionsCacheArgs),
    /// Test only: answer other nodes' requests late (0 heals).
    #[cfg(feature = "fault-injection")]
    #[command(hide = true)]
    Slow { millis: u64 },
    /// Test only: arm a named failpoint.
    #[cfg(feature = "fault-injection")]
    #[command(hide = true)]
    Failpoint { name: String },
    /// Test only: drop every message to and from these peers (none heals).
    #[cfg(feature = "fault-injection")]
    #[command(hide = true)]
    Isolate { peers: Vec<IpAddr> },
}

impl NodetoolCommand {
    /// What Cassandra's nodetool prints before it runs the command.
    pub fn notice(&self) -> Option<&'static str> {
        match self {
            NodetoolCommand::Import(args) if args.quick => Some(
                "Doing a quick import - skipping sstable verification and row cache invalidation",
            ),
            NodetoolCommand::Refresh { .. } => {
                Some("nodetool refresh is deprecated, use nodetool import instead")
            }
            _ => None,
        }
    }

    /// What the node is asked; errors are Cassandra's usage texts.
    pub fn into_admin(self) -> Result<AdminCommand, UsageError> {
        use NodetoolCommand as N;
        Ok(match self {
            N::Status { keyspace } => AdminCommand::Status { keyspace },
            N::Ring => AdminCommand::Ring,
            N::Info => AdminCommand::Info,
            N::DescribeRing { keyspace } => AdminCommand::DescribeRing { keyspace },
            N::DescribeCluster => AdminCommand::DescribeCluster,
            N::Version => AdminCommand::Version,
            N::GetEndpoints {
                keyspace,
                table,
                key,
            } => AdminCommand::GetEndpoints {
                keyspace,
                table,
                key,
            },
            N::Flush(tables) => AdminCommand::Flush(tables.selection()),
            N::Drain => AdminCommand::Drain,
            N::Compact(tables) => AdminCommand::Compact(tables.selection()),
            N::Cleanup(tables) => AdminCommand::Cleanup(tables.selection()),
            N::Snapshot { tag, keyspaces } => AdminCommand::Snapshot {
                tag: tag.unwrap_or_else(default_snapshot_tag),
                keyspaces,
            },
            N::ListSnapshots => AdminCommand::ListSnapshots,
            N::ClearSnapshot {
                tag,
                all,
                keyspaces,
            } => clear_snapshot(tag, all, &keyspaces)?,
            N::Import(args) => args.into_admin()?,
            N::Refresh { args } => refresh(&args)?,
            N::GetCompactionThroughput => AdminCommand::GetCompactionThroughput,
            N::SetCompactionThroughput { value_in_mb } => AdminCommand::SetCompactionThroughput {
                mib_per_second: value_in_mb,
            },
            N::CompactionStats => AdminCommand::CompactionStats,
            N::TableStats { names } => AdminCommand::TableStats { names },
            N::TpStats => AdminCommand::TpStats,
            N::ProxyHistograms => AdminCommand::ProxyHistograms,
            N::TableHistograms { args } => AdminCommand::TableHistograms {
                table: histogram_table(&args)?,
            },
            N::GossipInfo => AdminCommand::GossipInfo,
            N::GarbageCollect(args) => args.into_admin()?,
            N::Repair { args } => rocksandra_cluster::admin::repair_command(&args)?,
            N::Rebuild { source_dc } => AdminCommand::Rebuild { source_dc },
            N::Netstats => AdminCommand::Netstats,
            N::GetStreamThroughput { mib, precise } => AdminCommand::GetStreamThroughput {
                unit: match (mib, precise) {
                    (true, true) => return Err(UsageError::OneFlag),
                    (true, false) => ThroughputUnit::Mebibytes,
                    (false, true) => ThroughputUnit::PreciseMegabits,
                    (false, false) => ThroughputUnit::Megabits,
                },
            },
            N::SetStreamThroughput { value, mib } => AdminCommand::SetStreamThroughput {
                value,
                unit: if mib {
                    ThroughputUnit::Mebibytes
                } else {
                    ThroughputUnit::Megabits
                },
            },
            N::Decommission { force } => AdminCommand::Decommission { force },
            N::RemoveNode { host_id } => AdminCommand::RemoveNode { host_id },
            N::SetLoggingLevel { class, level } => AdminCommand::SetLoggingLevel {
                logger: class.unwrap_or_default(),
                level: level.unwrap_or_default(),
            },
            N::GetLoggingLevels => AdminCommand::GetLoggingLevels,
            N::GetGuardrailsConfig {
                category,
                expand,
                args,
            } => get_guardrails_config(category, expand, args)?,
            N::SetGuardrailsConfig { args } => AdminCommand::SetGuardrailsConfig { args },
            N::InvalidateRolesCache { roles } => AdminCommand::InvalidateAuthCache {
                cache: AuthCacheName::Roles,
                roles,
                resources: Vec::new(),
            },
            N::InvalidateCredentialsCache { roles } => AdminCommand::InvalidateAuthCache {
                cache: AuthCacheName::Credentials,
                roles,
                resources: Vec::new(),
            },
            N::InvalidatePermissionsCache(args) => args.into_admin()?,
            #[cfg(feature = "fault-injection")]
            N::Slow { millis } => AdminCommand::Slow { millis },
            #[cfg(feature = "fault-injection")]
            N::Failpoint { name } => AdminCommand::Failpoint { name },
            #[cfg(feature = "fault-injection")]
            N::Isolate { peers } => AdminCommand::Isolate { peers },
        })
    }
}

/// Cassandra's default snapshot name: the time in milliseconds.
fn default_snapshot_tag() -> String {
    (rocksandra_data::time::system_micros() / 1_000).to_string()
}

fn clear_snapshot(
    tag: Option<String>,
    all: bool,
    keyspaces: &[String],
) -> Result<AdminCommand, UsageError> {
    match (tag, all) {
        _ if !keyspaces.is_empty() => Err(UsageError::SnapshotKeyspaces(keyspaces.join(", "))),
        (None, false) => Err(UsageError::NoSnapshotName),
        (Some(_), true) => Err(UsageError::SnapshotNameAndAll),
        (tag, _) => Ok(AdminCommand::ClearSnapshot { tag }),
    }
}

/// `getguardrailsconfig`'s arguments, checked as Cassandra's nodetool
/// checks them before it asks the node.
fn get_guardrails_config(
    category: Option<String>,
    expand: bool,
    mut args: Vec<String>,
) -> Result<AdminCommand, UsageError> {
    if let Some(category) = &category {
        crate::config::guardrails_runtime::Category::parse(category)?;
    }
    if args.len() > 1 {
        return Err(UsageError::OneGuardrailName);
    }
    let name = args.pop();
    if name.is_some() && category.is_some() {
        return Err(GuardrailsCommandError::NameWithCategory.into());
    }
    Ok(AdminCommand::GetGuardrailsConfig {
        category,
        expand,
        name,
    })
}

/// Runs one command against the node and prints its answer. With
/// `config` (`rocksandra --config FILE nodetool ...`), it speaks TLS as
/// that file's `server_encryption_options` say, presenting its keystore.
pub fn run(args: NodetoolArgs, config: Option<&Path>) -> ExitCode {
    if let Some(notice) = args.command.notice() {
        println!("{notice}");
    }
    let command = match args.command.into_admin() {
        Ok(command) => command,
        Err(e) => {
            eprintln!("nodetool: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tls = match config.map(internode_tls).transpose() {
        Ok(tls) => tls.flatten(),
        Err(e) => {
            eprintln!("nodetool: {e}");
            return ExitCode::FAILURE;
        }
    };
    let credentials = args.username.map(|username| Credentials {
        username,
        password: args.password.unwrap_or_default(),
    });
    let address = SocketAddr::new(args.host, args.port);
    match rocksandra_cluster::admin::call(address, command, tls.as_ref(), credentials.as_ref()) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nodetool: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The storage port's TLS as the configuration file at `path` sets it.
fn internode_tls(path: &Path) -> Result<Option<InternodeTls>, NodetoolTlsError> {
    let config = Config::from_file(path)?;
    Ok(crate::transport::tls::internode_tls(
        &config.server_encryption,
    )?)
}

/// The command line with Cassandra's `-pw` (a flag clap cannot spell) as
/// `--password`, in nodetool's options only.
pub fn cassandra_flags(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut in_nodetool = false;
    args.map(|arg| {
        in_nodetool |= arg == "nodetool";
        if in_nodetool && arg == "-pw" {
            "--password".to_string()
        } else {
            arg
        }
    })
    .collect()
}

/// Whether this command line is a nodetool one (its parse errors are
/// nodetool's).
pub fn invoked(mut args: impl Iterator<Item = String>) -> bool {
    args.any(|a| a == "nodetool")
}

/// A command line clap refused, reported as Cassandra's nodetool does;
/// help asked for is printed and is no error.
pub fn usage_error(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::FAILURE;
        }
        ErrorKind::InvalidSubcommand | ErrorKind::UnknownArgument => {
            let unexpected = e
                .get(ContextKind::InvalidSubcommand)
                .or_else(|| e.get(ContextKind::InvalidArg))
                .map(|v| v.to_string())
                .unwrap_or_default();
            eprintln!("nodetool: Found unexpected parameters: [{unexpected}]");
        }
        _ => {
            let text = e.render().to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            eprint!("nodetool: {text}");
        }
    }
    eprintln!("See 'nodetool help' or 'nodetool help <command>'.");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::config::{Cli, Command};

    fn parse(words: &str) -> Result<NodetoolArgs, clap::Error> {
        let line = ["rocksandra", "nodetool"]
            .into_iter()
            .chain(words.split_whitespace());
        match Cli::try_parse_from(line)?.command {
            Some(Command::Nodetool(args)) => Ok(args),
            _ => panic!("no nodetool in {words}"),
        }
    }

    /// The command, or the words of clap's or nodetool's refusal.
    fn admin(words: &str) -> Result<AdminCommand, String> {
        parse(words)
            .map_err(|e| e.to_string())?
            .command
            .into_admin()
            .map_err(|e| e.to_string())
    }

    fn selection(keyspace: Option<&str>, tables: &[&str]) -> TableSelection {
        TableSelection {
            keyspace: keyspace.map(str::to_string),
            tables: tables.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn host_and_port_as_cassandra_and_as_before() {
        let args = parse("status").expect("parses");
        assert_eq!(args.host, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(args.port, ADMIN_PORT_DEFAULT);
        assert_eq!(args.username, None);
        let line = cassandra_flags(
            "rocksandra nodetool -u cassandra -pw secret status"
                .split(' ')
                .map(str::to_string),
        );
        let args = match Cli::try_parse_from(line).expect("parses").command {
            Some(Command::Nodetool(args)) => args,
            _ => panic!("no nodetool"),
        };
        assert_eq!(args.username.as_deref(), Some("cassandra"));
        assert_eq!(args.password.as_deref(), Some("secret"));
        for flags in ["-h 127.0.0.12", "-H 127.0.0.12", "--host 127.0.0.12"] {
            let args = parse(&format!("{flags} -p 7001 status")).expect(flags);
            assert_eq!(args.host, IpAddr::from([127, 0, 0, 12]), "{flags}");
            assert_eq!(args.port, 7001);
        }
    }

    #[test]
    fn keyspace_and_tables_of_flush_compact_cleanup() {
        assert_eq!(
            admin("flush"),
            Ok(AdminCommand::Flush(selection(None, &[])))
        );
        assert_eq!(
            admin("compact ks"),
            Ok(AdminCommand::Compact(selection(Some("ks"), &[])))
        );
        assert_eq!(
            admin("cleanup ks t1 t2"),
            Ok(AdminCommand::Cleanup(selection(Some("ks"), &["t1", "t2"])))
        );
    }

    #[test]
    fn unknown_commands_and_options_are_unexpected_parameters() {
        for (words, kind) in [
            ("nosuch", ErrorKind::InvalidSubcommand),
            ("flush --nosuch", ErrorKind::UnknownArgument),
            ("version extra", ErrorKind::UnknownArgument),
        ] {
            let e = parse(words).expect_err(words);
            assert_eq!(e.kind(), kind, "{words}");
        }
        assert_eq!(
            usage_error(&parse("nosuch").expect_err("")),
            ExitCode::FAILURE
        );
    }

    #[test]
    fn decommission_forced_or_not() {
        assert_eq!(
            admin("decommission"),
            Ok(AdminCommand::Decommission { force: false })
        );
        for forced in ["decommission --force", "decommission -f"] {
            assert_eq!(
                admin(forced),
                Ok(AdminCommand::Decommission { force: true })
            );
        }
    }

    #[test]
    fn stream_throughput_commands() {
        let get = |unit| Ok(AdminCommand::GetStreamThroughput { unit });
        assert_eq!(admin("getstreamthroughput"), get(ThroughputUnit::Megabits));
        assert_eq!(
            admin("getstreamthroughput -m"),
            get(ThroughputUnit::Mebibytes)
        );
        assert_eq!(
            admin("getstreamthroughput -d"),
            get(ThroughputUnit::PreciseMegabits)
        );
        assert_eq!(
            admin("setstreamthroughput 200"),
            Ok(AdminCommand::SetStreamThroughput {
                value: 200,
                unit: ThroughputUnit::Megabits
            })
        );
        assert_eq!(
            admin("setstreamthroughput -m 24"),
            Ok(AdminCommand::SetStreamThroughput {
                value: 24,
                unit: ThroughputUnit::Mebibytes
            })
        );
        assert!(admin("setstreamthroughput fast").is_err());
        assert_eq!(
            admin("getstreamthroughput -m -d"),
            Err("You cannot use more than one flag with this command".into())
        );
    }

    #[test]
    fn auth_cache_commands_take_cassandras_arguments() {
        let invalidate = |cache, roles: &[&str], resources: &[&str]| {
            Ok(AdminCommand::InvalidateAuthCache {
                cache,
                roles: roles.iter().map(|r| r.to_string()).collect(),
                resources: resources.iter().map(|r| r.to_string()).collect(),
            })
        };
        assert_eq!(
            admin("invalidaterolescache"),
            invalidate(AuthCacheName::Roles, &[], &[])
        );
        assert_eq!(
            admin("invalidaterolescache a b"),
            invalidate(AuthCacheName::Roles, &["a", "b"], &[])
        );
        assert_eq!(
            admin("invalidatecredentialscache a"),
            invalidate(AuthCacheName::Credentials, &["a"], &[])
        );
        assert_eq!(
            admin("invalidatepermissionscache"),
            invalidate(AuthCacheName::Permissions, &[], &[])
        );
        assert_eq!(
            admin("invalidatepermissionscache alice --keyspace ks --table t --all-roles"),
            invalidate(
                AuthCacheName::Permissions,
                &["alice"],
                &["roles", "data/ks/t"]
            )
        );
        assert_eq!(
            admin("invalidatepermissionscache alice --all-keyspaces --keyspace ks --all-tables"),
            invalidate(
                AuthCacheName::Permissions,
                &["alice"],
                &["data", "data/ks/*"]
            )
        );
        for (words, error) in [
            (
                "invalidatepermissionscache alice",
                "No resource options specified",
            ),
            (
                "invalidatepermissionscache --all-keyspaces",
                "No resource options allowed without a <role> being specified",
            ),
            (
                "invalidatepermissionscache alice --table t",
                "--keyspace is required with --table or --all-tables",
            ),
        ] {
            assert_eq!(admin(words), Err(error.to_string()), "{words}");
        }
    }

    #[test]
    fn snapshot_commands() {
        assert_eq!(
            admin("snapshot -t before ks1 ks2"),
            Ok(AdminCommand::Snapshot {
                tag: "before".into(),
                keyspaces: vec!["ks1".into(), "ks2".into()],
            })
        );
        assert!(matches!(
            admin("snapshot"),
            Ok(AdminCommand::Snapshot { tag, .. }) if tag.parse::<u64>().is_ok()
        ));
        assert_eq!(
            admin("clearsnapshot -t x"),
            Ok(AdminCommand::ClearSnapshot {
                tag: Some("x".into())
            })
        );
        assert_eq!(
            admin("clearsnapshot --all"),
            Ok(AdminCommand::ClearSnapshot { tag: None })
        );
        for bad in [
            "clearsnapshot",
            "clearsnapshot -t x --all",
            "clearsnapshot -t x ks",
        ] {
            assert!(admin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn other_commands() {
        assert_eq!(
            admin("getendpoints ks t 42"),
            Ok(AdminCommand::GetEndpoints {
                keyspace: "ks".into(),
                table: "t".into(),
                key: "42".into(),
            })
        );
        assert_eq!(
            admin("setcompactionthroughput 16"),
            Ok(AdminCommand::SetCompactionThroughput { mib_per_second: 16 })
        );
        assert!(admin("setcompactionthroughput fast").is_err());
        assert_eq!(
            admin("tablestats ks ks2.t"),
            Ok(AdminCommand::TableStats {
                names: vec!["ks".into(), "ks2.t".into()]
            })
        );
        assert!(matches!(
            admin("repair -pr ks t"),
            Ok(AdminCommand::Repair {
                primary_range: true,
                ..
            })
        ));
        assert!(admin("repair -st 5").is_err());
        assert_eq!(
            admin("describering ks"),
            Ok(AdminCommand::DescribeRing {
                keyspace: "ks".into()
            })
        );
    }

    #[test]
    fn histogram_and_gossip_commands() {
        assert_eq!(admin("proxyhistograms"), Ok(AdminCommand::ProxyHistograms));
        assert_eq!(admin("gossipinfo"), Ok(AdminCommand::GossipInfo));
        let one = Ok(AdminCommand::TableHistograms {
            table: Some(("ks".into(), "t".into())),
        });
        assert_eq!(admin("tablehistograms ks t"), one);
        assert_eq!(admin("tablehistograms ks.t"), one);
        assert_eq!(
            admin("tablehistograms"),
            Ok(AdminCommand::TableHistograms { table: None })
        );
        assert_eq!(
            admin("tablehistograms ks"),
            Err("tablehistograms requires keyspace and table name arguments".into())
        );
        assert_eq!(
            admin("tablehistograms ks t extra"),
            Err(
                "tablehistograms requires <keyspace> <table> or <keyspace.table> format argument."
                    .into()
            )
        );
    }

    #[test]
    fn garbagecollect_takes_cassandras_options() {
        assert_eq!(
            admin("garbagecollect"),
            Ok(AdminCommand::GarbageCollect {
                selection: selection(None, &[]),
                granularity: "ROW".into(),
                jobs: 1,
            })
        );
        assert_eq!(
            admin("garbagecollect -g CELL -j 2 ks t u"),
            Ok(AdminCommand::GarbageCollect {
                selection: selection(Some("ks"), &["t", "u"]),
                granularity: "CELL".into(),
                jobs: 2,
            })
        );
        assert_eq!(
            admin("garbagecollect --granularity NONE --jobs 0 ks"),
            Ok(AdminCommand::GarbageCollect {
                selection: selection(Some("ks"), &[]),
                granularity: "NONE".into(),
                jobs: 0,
            })
        );
        assert_eq!(
            admin("garbagecollect -g row ks"),
            Err(
                "No enum constant org.apache.cassandra.schema.CompactionParams.TombstoneOption.row"
                    .into()
            )
        );
        assert!(admin("garbagecollect -j many").is_err());
    }

    #[test]
    fn logging_commands() {
        let set = |logger: &str, level: &str| {
            Ok(AdminCommand::SetLoggingLevel {
                logger: logger.into(),
                level: level.into(),
            })
        };
        assert_eq!(admin("setlogginglevel"), set("", ""));
        assert_eq!(
            admin("setlogginglevel org.apache.cassandra.transport"),
            set("org.apache.cassandra.transport", "")
        );
        assert_eq!(
            admin("setlogginglevel rocksandra_query DEBUG"),
            set("rocksandra_query", "DEBUG")
        );
        assert!(admin("setlogginglevel a DEBUG extra").is_err());
        for words in ["getlogginglevels", "getlogginglevel"] {
            assert_eq!(admin(words), Ok(AdminCommand::GetLoggingLevels), "{words}");
        }
    }

    #[test]
    fn guardrails_config_commands_are_read_as_cassandras() {
        let get = |category: Option<&str>, expand, name: Option<&str>| {
            Ok(AdminCommand::GetGuardrailsConfig {
                category: category.map(str::to_string),
                expand,
                name: name.map(str::to_string),
            })
        };
        assert_eq!(admin("getguardrailsconfig"), get(None, false, None));
        assert_eq!(
            admin("getguardrailsconfig -c flags"),
            get(Some("flags"), false, None)
        );
        assert_eq!(
            admin("getguardrailsconfig --expand keyspaces_threshold"),
            get(None, true, Some("keyspaces_threshold"))
        );
        assert!(admin("getguardrailsconfig -c nope").is_err());
        assert!(admin("getguardrailsconfig a b").is_err());
        assert!(admin("getguardrailsconfig -c flags a").is_err());
        assert_eq!(
            admin("setguardrailsconfig keyspaces_threshold 10 -1"),
            Ok(AdminCommand::SetGuardrailsConfig {
                args: ["keyspaces_threshold", "10", "-1"]
                    .map(String::from)
                    .to_vec()
            })
        );
    }

    #[test]
    #[cfg(not(feature = "fault-injection"))]
    fn fault_injection_commands_are_unknown_outside_test_builds() {
        for words in [
            "slow 250",
            "failpoint crash-after-batchlog",
            "isolate 127.0.0.1",
        ] {
            let e = parse(words).expect_err(words);
            assert_eq!(e.kind(), ErrorKind::InvalidSubcommand, "{words}");
        }
    }

    #[test]
    #[cfg(feature = "fault-injection")]
    fn fault_injection_commands() {
        assert_eq!(admin("slow 250"), Ok(AdminCommand::Slow { millis: 250 }));
        assert!(admin("slow soon").is_err());
        assert_eq!(
            admin("failpoint crash-after-batchlog"),
            Ok(AdminCommand::Failpoint {
                name: "crash-after-batchlog".into()
            })
        );
        assert_eq!(
            admin("isolate"),
            Ok(AdminCommand::Isolate { peers: vec![] })
        );
    }

    #[test]
    fn import_takes_cassandras_arguments_and_refresh_points_to_it() {
        assert_eq!(
            admin("import ks t /snapshots/T"),
            Ok(AdminCommand::Import {
                keyspace: "ks".into(),
                table: "t".into(),
                dirs: vec!["/snapshots/T".into()],
                all_tokens: false,
            })
        );
        let quick = admin("import -q -p --keep-level ks t /a relative").expect("parses");
        let here = std::env::current_dir().expect("cwd").join("relative");
        assert_eq!(
            quick,
            AdminCommand::Import {
                keyspace: "ks".into(),
                table: "t".into(),
                dirs: vec!["/a".into(), here.display().to_string()],
                all_tokens: true,
            }
        );
        let no_tokens = admin("import --no-tokens ks t /a").expect("parses");
        assert!(matches!(
            no_tokens,
            AdminCommand::Import {
                all_tokens: true,
                ..
            }
        ));
        let usage = Err("import requires keyspace, table name and directories".to_string());
        assert_eq!(admin("import ks t"), usage);
        assert_eq!(admin("import"), usage);
        assert_eq!(
            admin("refresh ks"),
            Err("refresh requires ks and cf args".to_string())
        );
        let refresh = admin("refresh ks t").expect_err("no table directories");
        assert!(
            refresh.contains("nodetool import ks t SNAPSHOT_DIRECTORY"),
            "{refresh}"
        );
        let notice = parse("refresh ks t").expect("parses").command.notice();
        assert_eq!(
            notice,
            Some("nodetool refresh is deprecated, use nodetool import instead")
        );
    }
}
