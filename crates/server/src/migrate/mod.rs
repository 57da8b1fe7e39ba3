//! `rocksandra migrate`: copies the schema and data of a live Cassandra
//! cluster (or another Rocksandra) into this one over CQL, keeping every
//! cell's write time and TTL; resumable from a checkpoint file; ends with
//! a row count and checksum per table on both sides. docs/migration.md
//! says what it keeps, what it approximates and what it refuses.

mod checkpoint;
mod client;
mod copy;
mod row;
mod schema;
mod table;
mod values;
mod verify;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use client::{CqlClient, Login};
use copy::Endpoints;
use table::Table;

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot reach {0}: {1}")]
    Connect(SocketAddr, String),
    #[error("{address}: {message}")]
    Server {
        address: SocketAddr,
        code: Option<i32>,
        message: String,
    },
    #[error("refused: {0}")]
    Unsupported(String),
    #[error("unexpected data: {0}")]
    Data(String),
    #[error("checkpoint: {0}")]
    Checkpoint(String),
}

/// `rocksandra migrate --from HOST:PORT [--to HOST:PORT] ...`
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct MigrateArgs {
    /// The source cluster's CQL address.
    #[arg(long, value_name = "HOST:PORT")]
    pub from: String,
    /// The target's CQL address.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:9042")]
    pub to: String,
    /// Keyspaces to copy (comma-separated); every non-system one by default.
    #[arg(long, value_name = "KS1,KS2", value_delimiter = ',')]
    pub keyspaces: Vec<String>,
    /// Login on the source (PasswordAuthenticator).
    #[arg(long, value_name = "USER")]
    pub username: Option<String>,
    /// Password of --username.
    #[arg(long, value_name = "PASSWORD")]
    pub password: Option<String>,
    /// Login on the target, if it asks for one.
    #[arg(long, value_name = "USER")]
    pub to_username: Option<String>,
    /// Password of --to-username.
    #[arg(long, value_name = "PASSWORD")]
    pub to_password: Option<String>,
    /// Finished token ranges, so that a run started again skips them.
    #[arg(long, value_name = "FILE", default_value = "migrate-checkpoint.json")]
    pub checkpoint: PathBuf,
    /// Token ranges each table's ring is cut into.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    pub ranges: u16,
    /// Ranges copied at once (each with a connection to both sides).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// Rows per page read from the source.
    #[arg(long, value_name = "ROWS", default_value_t = 500, value_parser = clap::value_parser!(i32).range(1..=100_000))]
    pub page_size: i32,
}

/// Runs the migration; progress on stderr, the per-table comparison on stdout.
pub fn run(args: MigrateArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("migrate: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(migrate(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("migrate: the copy differs from the source (see above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("migrate: {e}");
            ExitCode::FAILURE
        }
    }
}

fn address(text: &str) -> Result<SocketAddr, MigrateError> {
    let bad =
        |why: String| MigrateError::Usage(format!("{text} is not a HOST:PORT address: {why}"));
    let mut addresses = text.to_socket_addrs().map_err(|e| bad(e.to_string()))?;
    addresses
        .next()
        .ok_or_else(|| bad("it resolves to nothing".into()))
}

fn login(username: &Option<String>, password: &Option<String>) -> Option<Login> {
    username.as_ref().map(|username| Login {
        username: username.clone(),
        password: password.clone().unwrap_or_default(),
    })
}

/// The whole run; `Ok(false)` when a table's copy differs from its source.
async fn migrate(args: MigrateArgs) -> Result<bool, MigrateError> {
    let endpoints = Endpoints {
        source: address(&args.from)?,
        source_login: login(&args.username, &args.password),
        target: address(&args.to)?,
        target_login: login(&args.to_username, &args.to_password),
        page_size: args.page_size,
    };
    let mut source = CqlClient::connect(endpoints.source, endpoints.source_login.as_ref()).await?;
    let mut target = CqlClient::connect(endpoints.target, endpoints.target_login.as_ref()).await?;
    murmur3(&mut source).await?;
    murmur3(&mut target).await?;
    let (tables, after_data) = create_schema(&mut source, &mut target, &args.keyspaces).await?;
    let checkpoint =
        checkpoint::Checkpoint::open(&args.checkpoint, &args.from, usize::from(args.ranges))?;
    let checkpoint = Arc::new(Mutex::new(checkpoint));
    for table in &tables {
        let rows = copy::copy_table(
            table,
            &endpoints,
            usize::from(args.jobs),
            checkpoint.clone(),
        )
        .await?;
        copy::end_report();
        eprintln!("{}: copied, {rows} rows", table.label());
    }
    for item in &after_data {
        println!("{}", schema::create(&mut target, item, None).await?);
    }
    compare(&mut source, &mut target, &tables, args.page_size).await
}

/// Token ranges are Murmur3's on both sides.
async fn murmur3(client: &mut CqlClient) -> Result<(), MigrateError> {
    let rows = client
        .all_rows("SELECT partitioner FROM system.local", vec![])
        .await?;
    let partitioner = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if partitioner.ends_with("Murmur3Partitioner") {
        Ok(())
    } else {
        Err(MigrateError::Unsupported(format!(
            "partitioner {partitioner:?}: only Murmur3Partitioner's token ranges are supported"
        )))
    }
}

/// Checks every table first (one the copy cannot write refuses the whole
/// run, before anything is written), then creates keyspaces, types,
/// functions and tables; returns the tables and what waits for the data.
async fn create_schema(
    source: &mut CqlClient,
    target: &mut CqlClient,
    named: &[String],
) -> Result<(Vec<Table>, Vec<schema::Described>), MigrateError> {
    let keyspaces = schema::keyspaces(source, named).await?;
    let mut tables = Vec::new();
    let mut described = Vec::new();
    for keyspace in &keyspaces {
        for table in schema::tables(source, keyspace).await? {
            tables.push(table?);
        }
        described.extend(schema::describe(source, keyspace).await?);
    }
    let mut after_data = Vec::new();
    for item in described {
        if schema::after_data(&item.kind) {
            after_data.push(item);
            continue;
        }
        let table = tables
            .iter()
            .find(|t| item.kind == "table" && t.keyspace == item.keyspace && t.name == item.name);
        println!("{}", schema::create(target, &item, table).await?);
    }
    Ok((tables, after_data))
}

/// The final row count and checksum per table; false if any differs.
async fn compare(
    source: &mut CqlClient,
    target: &mut CqlClient,
    tables: &[Table],
    page_size: i32,
) -> Result<bool, MigrateError> {
    let mut same = true;
    for table in tables {
        let (from, to) = tokio::join!(
            verify::digest(source, table, page_size),
            verify::digest(target, table, page_size)
        );
        let (from, to) = (from?, to?);
        let verdict = if from == to { "same" } else { "DIFFERENT" };
        same &= from == to;
        println!(
            "{}: source {} rows (checksum {:016x}), target {} rows (checksum {:016x}): {verdict}",
            table.label(),
            from.rows,
            from.checksum,
            to.rows,
            to.checksum
        );
    }
    Ok(same)
}
