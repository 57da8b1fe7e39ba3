//! rocksandra-loadgen: the benchmark's CQL load, the same against Apache
//! Cassandra and Rocksandra.
//!
//! ```text
//! rocksandra-loadgen ready  --host H:P [--timeout-s 300]
//! rocksandra-loadgen schema --host H:P
//! rocksandra-loadgen load   --host H:P --rows N [--concurrency 256]
//! rocksandra-loadgen run    --host H:P --rows N --duration-s S
//!                           [--read-rate R] [--write-rate W]   (ops/s; 0 = none)
//!                           [--readers 128] [--writers 128] [--max-rate]
//! ```
//!
//! `run` is an open-model load: operation i of a kind is due at
//! `start + i / rate`, whatever happened to earlier ones, and its latency is
//! measured from that intended time, so time spent queued behind a stalled
//! server counts (no coordinated omission). At most `readers` reads and
//! `writers` writes are in flight, as the seed's 128 readers and writers.
//! With `--max-rate` each kind runs closed-loop at full speed instead
//! (throughput search; latency then from the actual send).
//!
//! Every command prints one JSON object on stdout.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::client::PoolSize;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

const KEYSPACE: &str = "bench";
/// `emp` as NDBench defines it; three ~330-byte text columns make ~1 KB rows.
const COLUMN_BYTES: usize = 330;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Latencies above this are clamped (and still counted).
const HISTOGRAM_MAX_US: u64 = 120_000_000;

struct Args {
    command: String,
    host: String,
    rows: u64,
    concurrency: usize,
    duration: Duration,
    read_rate: f64,
    write_rate: f64,
    readers: usize,
    writers: usize,
    max_rate: bool,
    timeout: Duration,
    connections: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut raw = std::env::args().skip(1);
    let command = raw.next().ok_or("missing command: ready|schema|load|run")?;
    let mut args = Args {
        command,
        host: "127.0.0.1:9042".into(),
        rows: 1_000_000,
        concurrency: 256,
        duration: Duration::from_secs(30),
        read_rate: 0.0,
        write_rate: 0.0,
        readers: 128,
        writers: 128,
        max_rate: false,
        timeout: Duration::from_secs(300),
        connections: 4,
    };
    while let Some(flag) = raw.next() {
        if flag == "--max-rate" {
            args.max_rate = true;
            continue;
        }
        let value = raw.next().ok_or(format!("{flag} needs a value"))?;
        let number = || value.parse::<f64>().map_err(|_| format!("{flag}: bad number {value:?}"));
        match flag.as_str() {
            "--host" => args.host = value.clone(),
            "--rows" => args.rows = number()? as u64,
            "--concurrency" => args.concurrency = number()? as usize,
            "--duration-s" => args.duration = Duration::from_secs_f64(number()?),
            "--read-rate" => args.read_rate = number()?,
            "--write-rate" => args.write_rate = number()?,
            "--readers" => args.readers = number()? as usize,
            "--writers" => args.writers = number()? as usize,
            "--timeout-s" => args.timeout = Duration::from_secs_f64(number()?),
            "--connections" => args.connections = number()? as usize,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.rows == 0 {
        return Err("--rows must be positive".into());
    }
    Ok(args)
}

#[tokio::main]
async fn main() {
    let result = match parse_args() {
        Ok(args) => run_command(args).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(report) => println!("{report}"),
        Err(e) => {
            eprintln!("rocksandra-loadgen: {e}");
            std::process::exit(1);
        }
    }
}

async fn run_command(args: Args) -> Result<Value, String> {
    match args.command.as_str() {
        "ready" => ready(&args).await,
        "schema" => schema(&args).await,
        "load" => load(&args).await,
        "run" => run(&args).await,
        other => Err(format!("unknown command {other:?}")),
    }
}

async fn connect(args: &Args) -> Result<Session, String> {
    let profile = ExecutionProfile::builder()
        .consistency(Consistency::One)
        .request_timeout(Some(REQUEST_TIMEOUT))
        .build();
    SessionBuilder::new()
        .known_node(&args.host)
        .pool_size(PoolSize::PerHost(
            std::num::NonZeroUsize::new(args.connections.max(1)).ok_or("connections")?,
        ))
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await
        .map_err(|e| format!("connecting to {}: {e}", args.host))
}

/// Waits until a query succeeds; reports how long that took.
async fn ready(args: &Args) -> Result<Value, String> {
    let start = Instant::now();
    loop {
        if let Ok(session) = connect(args).await {
            if session
                .query_unpaged("SELECT release_version FROM system.local", ())
                .await
                .is_ok()
            {
                return Ok(json!({ "ready_after_ms": start.elapsed().as_millis() as u64 }));
            }
        }
        if start.elapsed() > args.timeout {
            return Err(format!("no answer from {} in {:?}", args.host, args.timeout));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn schema(args: &Args) -> Result<Value, String> {
    let session = connect(args).await?;
    for statement in [
        format!(
            "CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {KEYSPACE}.emp (emp_uname text PRIMARY KEY, \
             emp_dept text, emp_first text, emp_last text)"
        ),
    ] {
        session
            .query_unpaged(statement.as_str(), ())
            .await
            .map_err(|e| format!("{statement}: {e}"))?;
    }
    session
        .await_schema_agreement()
        .await
        .map_err(|e| format!("schema agreement: {e}"))?;
    Ok(json!({ "schema": "ok" }))
}

fn uname(i: u64) -> String {
    format!("emp-{i:012}")
}

/// A column value derived from the key and a version, varied enough that
/// compression does not erase it.
fn column(i: u64, version: u64, which: u64) -> String {
    let mut state = i
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(version.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(which);
    let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ";
    (0..COLUMN_BYTES)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            alphabet[(state % alphabet.len() as u64) as usize] as char
        })
        .collect()
}

struct Statements {
    insert: PreparedStatement,
    select: PreparedStatement,
}

async fn prepare(session: &Session) -> Result<Statements, String> {
    let insert = session
        .prepare(format!(
            "INSERT INTO {KEYSPACE}.emp (emp_uname, emp_dept, emp_first, emp_last) VALUES (?, ?, ?, ?)"
        ))
        .await
        .map_err(|e| format!("prepare insert: {e}"))?;
    let select = session
        .prepare(format!(
            "SELECT emp_uname, emp_dept, emp_first, emp_last FROM {KEYSPACE}.emp WHERE emp_uname = ?"
        ))
        .await
        .map_err(|e| format!("prepare select: {e}"))?;
    Ok(Statements { insert, select })
}

async fn write_row(
    session: &Session,
    statements: &Statements,
    i: u64,
    version: u64,
) -> Result<(), String> {
    session
        .execute_unpaged(
            &statements.insert,
            (
                uname(i),
                column(i, version, 1),
                column(i, version, 2),
                column(i, version, 3),
            ),
        )
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

async fn read_row(session: &Session, statements: &Statements, i: u64) -> Result<(), String> {
    let result = session
        .execute_unpaged(&statements.select, (uname(i),))
        .await
        .map_err(|e| e.to_string())?;
    let rows = result.into_rows_result().map_err(|e| e.to_string())?;
    if rows.rows_num() != 1 {
        return Err(format!("{} rows for {}", rows.rows_num(), uname(i)));
    }
    Ok(())
}

/// Preloads rows 0..N at full speed with `concurrency` writes in flight.
async fn load(args: &Args) -> Result<Value, String> {
    let session = Arc::new(connect(args).await?);
    let statements = Arc::new(prepare(&session).await?);
    let start = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let errors = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut workers = Vec::new();
    for _ in 0..args.concurrency.max(1) {
        let (session, statements, next, errors) = (
            session.clone(),
            statements.clone(),
            next.clone(),
            errors.clone(),
        );
        let rows = args.rows;
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= rows {
                    return;
                }
                // Retried: a preload must be complete.
                let mut attempts = 0;
                while let Err(e) = write_row(&session, &statements, i, 0).await {
                    errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    attempts += 1;
                    if attempts >= 10 {
                        eprintln!("giving up on row {i}: {e}");
                        break;
                    }
                }
            }
        }));
    }
    for w in workers {
        w.await.map_err(|e| e.to_string())?;
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(json!({
        "rows": args.rows,
        "seconds": seconds,
        "rows_per_second": args.rows as f64 / seconds,
        "errors": errors.load(std::sync::atomic::Ordering::Relaxed),
    }))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
}

struct Recorder {
    histogram: Mutex<Histogram<u64>>,
    errors: std::sync::atomic::AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Recorder {
    fn new() -> Result<Recorder, String> {
        Ok(Recorder {
            histogram: Mutex::new(
                Histogram::new_with_bounds(1, HISTOGRAM_MAX_US, 3).map_err(|e| e.to_string())?,
            ),
            errors: std::sync::atomic::AtomicU64::new(0),
            first_error: Mutex::new(None),
        })
    }

    fn record(&self, latency: Duration, result: Result<(), String>) {
        match result {
            Ok(()) => {
                let us = (latency.as_micros() as u64).clamp(1, HISTOGRAM_MAX_US);
                if let Ok(mut h) = self.histogram.lock() {
                    let _ = h.record(us);
                }
            }
            Err(e) => {
                self.errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Ok(mut first) = self.first_error.lock() {
                    first.get_or_insert(e);
                }
            }
        }
    }

    fn report(&self, seconds: f64, target_rate: f64) -> Value {
        let h = match self.histogram.lock() {
            Ok(h) => h.clone(),
            Err(_) => return json!({ "error": "histogram lock poisoned" }),
        };
        let ms = |us: u64| us as f64 / 1000.0;
        let percentiles: Vec<Value> = [
            50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0,
        ]
        .iter()
        .map(|&q| json!([q, ms(h.value_at_quantile(q / 100.0))]))
        .collect();
        json!({
            "target_rate": target_rate,
            "count": h.len(),
            "errors": self.errors.load(std::sync::atomic::Ordering::Relaxed),
            "first_error": self.first_error.lock().ok().and_then(|e| e.clone()),
            "throughput": h.len() as f64 / seconds,
            "mean_ms": h.mean() / 1000.0,
            "p50_ms": ms(h.value_at_quantile(0.50)),
            "p99_ms": ms(h.value_at_quantile(0.99)),
            "p999_ms": ms(h.value_at_quantile(0.999)),
            "max_ms": ms(h.max()),
            "percentiles_ms": percentiles,
        })
    }
}

struct Load {
    session: Arc<Session>,
    statements: Arc<Statements>,
    rows: u64,
}

impl Load {
    async fn one(&self, kind: Kind, seq: u64) -> Result<(), String> {
        let i = spread(seq) % self.rows;
        match kind {
            Kind::Read => read_row(&self.session, &self.statements, i).await,
            Kind::Write => write_row(&self.session, &self.statements, i, seq + 1).await,
        }
    }
}

/// Uniformly spread key choice (splitmix64 of the sequence number).
fn spread(seq: u64) -> u64 {
    let mut z = seq.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Open model: sends operation i at start + i/rate, at most `in_flight` at once.
/// The schedule runs on an OS thread (sub-millisecond sleeps; tokio's timer
/// ticks in milliseconds, which would add up to a millisecond to every
/// latency) and hands each operation to the runtime.
async fn fixed_rate(
    load: Arc<Load>,
    kind: Kind,
    rate: f64,
    in_flight: usize,
    duration: Duration,
    recorder: Arc<Recorder>,
    seq_base: u64,
) {
    let slots = Arc::new(Semaphore::new(in_flight.max(1)));
    let runtime = tokio::runtime::Handle::current();
    let schedule_slots = slots.clone();
    let scheduler = std::thread::spawn(move || {
        let start = Instant::now();
        let total = (rate * duration.as_secs_f64()) as u64;
        for sent in 0..total {
            let intended = start + Duration::from_secs_f64(sent as f64 / rate);
            let now = Instant::now();
            if intended > now {
                std::thread::sleep(intended - now);
            }
            // Blocks while `in_flight` operations are outstanding: the wait
            // counts in the latency, measured from `intended`.
            let Ok(permit) = futures::executor::block_on(schedule_slots.clone().acquire_owned())
            else {
                return;
            };
            let (load, recorder) = (load.clone(), recorder.clone());
            let seq = seq_base + sent;
            runtime.spawn(async move {
                let result = load.one(kind, seq).await;
                recorder.record(intended.elapsed(), result);
                drop(permit);
            });
        }
    });
    let _ = tokio::task::spawn_blocking(move || scheduler.join()).await;
    // Every slot back: every operation has finished.
    let _ = slots.acquire_many(in_flight.max(1) as u32).await;
}

/// Closed loop: `workers` tasks each sending the next operation at once.
async fn max_rate(
    load: Arc<Load>,
    kind: Kind,
    workers: usize,
    duration: Duration,
    recorder: Arc<Recorder>,
    seq_base: u64,
) {
    let next = Arc::new(std::sync::atomic::AtomicU64::new(seq_base));
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for _ in 0..workers.max(1) {
        let (load, recorder, next) = (load.clone(), recorder.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                let seq = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let sent = Instant::now();
                let result = load.one(kind, seq).await;
                recorder.record(sent.elapsed(), result);
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// CPU seconds this process has used (user + system).
fn own_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) in parentheses.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line: 11 and 12 after ')'.
    (ticks(11) + ticks(12)) / 100.0
}

async fn run(args: &Args) -> Result<Value, String> {
    let session = Arc::new(connect(args).await?);
    let statements = Arc::new(prepare(&session).await?);
    let load = Arc::new(Load {
        session,
        statements,
        rows: args.rows,
    });
    let reads = Arc::new(Recorder::new()?);
    let writes = Arc::new(Recorder::new()?);
    let cpu_before = own_cpu_seconds();
    let start = Instant::now();
    let mut tasks = Vec::new();
    let seq_base = spread(start.elapsed().as_nanos() as u64 ^ std::process::id() as u64) >> 20;
    for (kind, rate, in_flight, recorder, base) in [
        (Kind::Read, args.read_rate, args.readers, reads.clone(), seq_base),
        (Kind::Write, args.write_rate, args.writers, writes.clone(), seq_base + (1 << 40)),
    ] {
        if rate <= 0.0 && !(args.max_rate && in_flight > 0) {
            continue;
        }
        let (load, duration) = (load.clone(), args.duration);
        if args.max_rate {
            if in_flight == 0 {
                continue;
            }
            tasks.push(tokio::spawn(max_rate(
                load, kind, in_flight, duration, recorder, base,
            )));
        } else {
            tasks.push(tokio::spawn(fixed_rate(
                load, kind, rate, in_flight, duration, recorder, base,
            )));
        }
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu = own_cpu_seconds() - cpu_before;
    Ok(json!({
        "seconds": seconds,
        "mode": if args.max_rate { "closed-loop max rate" } else { "fixed rate, open model" },
        "client_cpu_seconds": cpu,
        "client_cpu_cores": cpu / seconds,
        "reads": reads.report(seconds, args.read_rate),
        "writes": writes.report(seconds, args.write_rate),
    }))
}
