//! What the server measures about itself, and the Prometheus endpoint that
//! exports it: CQL requests by kind (counts, errors, latency histograms),
//! requests in flight and connections, event-loop pauses; and, gathered at
//! scrape time from where they are recorded, Cassandra's client request
//! and table metrics (`rocksandra_query::metrics`), the cluster's
//! (`rocksandra_cluster::metrics`: thread pools, dropped messages, hints,
//! read repair, streaming), storage figures from `Engine::stats` and
//! `Engine::table_stats`, and the process's memory and CPU.
//!
//! Recording is lock-free and cheap (a few relaxed atomic adds per request):
//! the transport records on every request. Everything else is read when a
//! scrape arrives. `exposition` encodes a `Snapshot` with `prometheus-client`,
//! `http` serves it, `process` reads `/proc`.

pub mod exposition;
pub mod http;
pub mod process;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksandra_cluster::metrics::ClusterSnapshot;
use rocksandra_cluster::ClusterNode;
use rocksandra_query::metrics::{Histogram, HistogramSnapshot, ScopeSnapshot};
use rocksandra_query::Executor;
use rocksandra_storage::{Engine, StorageStats, TableStorageStats};
use rocksandra_wire::Opcode;

use self::process::ProcessStats;

/// How long the event-loop probe sleeps between wake-ups; the lag is how
/// much later than this it wakes.
pub const EVENT_LOOP_PROBE_INTERVAL: Duration = Duration::from_millis(10);

/// Tables whose series a scrape exports at most (by keyspace and table
/// name order); more are left out, so one scrape stays bounded.
pub const TABLE_SERIES_MAX: usize = 1024;

/// The `op` label: CQL requests by opcode. QUERY, EXECUTE, BATCH and PREPARE
/// are the work; `Other` is the rest of the protocol (OPTIONS, STARTUP,
/// AUTH_RESPONSE, REGISTER, and whatever a client sends out of place).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    Query,
    Execute,
    Batch,
    Prepare,
    Other,
}

impl RequestKind {
    pub const ALL: [RequestKind; 5] = [
        RequestKind::Query,
        RequestKind::Execute,
        RequestKind::Batch,
        RequestKind::Prepare,
        RequestKind::Other,
    ];

    pub fn of(opcode: Opcode) -> RequestKind {
        match opcode {
            Opcode::Query => RequestKind::Query,
            Opcode::Execute => RequestKind::Execute,
            Opcode::Batch => RequestKind::Batch,
            Opcode::Prepare => RequestKind::Prepare,
            _ => RequestKind::Other,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            RequestKind::Query => "query",
            RequestKind::Execute => "execute",
            RequestKind::Batch => "batch",
            RequestKind::Prepare => "prepare",
            RequestKind::Other => "other",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Default)]
struct RequestMetrics {
    started: AtomicU64,
    failed: AtomicU64,
    latency: Histogram,
}

/// The transport's and the event loop's measurements. One per server,
/// shared by every connection.
#[derive(Debug, Default)]
pub struct ServerMetrics {
    requests: [RequestMetrics; RequestKind::ALL.len()],
    requests_in_flight: AtomicI64,
    connections: AtomicI64,
    event_loop_lag: Histogram,
    event_loop_lag_max_nanos: AtomicU64,
}

impl ServerMetrics {
    /// Counts a request as it arrives; the timer records its end.
    pub fn request_started(self: &Arc<Self>, kind: RequestKind) -> RequestTimer {
        self.requests[kind.index()]
            .started
            .fetch_add(1, Ordering::Relaxed);
        self.requests_in_flight.fetch_add(1, Ordering::Relaxed);
        RequestTimer {
            metrics: self.clone(),
            kind,
            started: Instant::now(),
            finished: false,
        }
    }

    /// Counts a client connection while the returned guard lives.
    pub fn connection_opened(self: &Arc<Self>) -> ConnectionGuard {
        self.connections.fetch_add(1, Ordering::Relaxed);
        ConnectionGuard {
            metrics: self.clone(),
        }
    }

    pub fn record_event_loop_lag(&self, lag: Duration) {
        self.event_loop_lag.record(lag);
        let nanos = u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX);
        self.event_loop_lag_max_nanos
            .fetch_max(nanos, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ServerSnapshot {
        ServerSnapshot {
            requests: RequestKind::ALL.map(|kind| {
                let metrics = &self.requests[kind.index()];
                RequestSnapshot {
                    kind,
                    started: metrics.started.load(Ordering::Relaxed),
                    failed: metrics.failed.load(Ordering::Relaxed),
                    latency: metrics.latency.snapshot(),
                }
            }),
            requests_in_flight: self.requests_in_flight.load(Ordering::Relaxed),
            connections: self.connections.load(Ordering::Relaxed),
            event_loop_lag: self.event_loop_lag.snapshot(),
            event_loop_lag_max_nanos: self.event_loop_lag_max_nanos.load(Ordering::Relaxed),
        }
    }

    fn request_finished(&self, kind: RequestKind, elapsed: Duration, failed: bool) {
        let metrics = &self.requests[kind.index()];
        metrics.latency.record(elapsed);
        if failed {
            metrics.failed.fetch_add(1, Ordering::Relaxed);
        }
        self.requests_in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One request in flight. `finish` records its latency and outcome; a
/// timer dropped unfinished (its task was cancelled) counts as an error.
#[derive(Debug)]
pub struct RequestTimer {
    metrics: Arc<ServerMetrics>,
    kind: RequestKind,
    started: Instant,
    finished: bool,
}

impl RequestTimer {
    /// `failed`: the request was answered with an ERROR.
    pub fn finish(mut self, failed: bool) {
        self.record(failed);
    }

    fn record(&mut self, failed: bool) {
        if !self.finished {
            self.finished = true;
            let elapsed = self.started.elapsed();
            self.metrics.request_finished(self.kind, elapsed, failed);
        }
    }
}

impl Drop for RequestTimer {
    fn drop(&mut self) {
        self.record(true);
    }
}

/// An open client connection, counted until dropped.
#[derive(Debug)]
pub struct ConnectionGuard {
    metrics: Arc<ServerMetrics>,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.metrics.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Sleeps `EVENT_LOOP_PROBE_INTERVAL` in a loop and records how late each
/// wake-up is: a worker thread busy with blocking work, or too many ready
/// tasks, delays every connection the same way. Tokio's timer has
/// millisecond resolution, so up to about 1 ms of lag is the clock, not a pause.
/// A wake-up `EVENT_LOOP_LATE_LOG` late or more is logged (at most once per
/// `EVENT_LOOP_LATE_LOG_EVERY` per loop) with where the loop's thread spent
/// the interval: running, waiting for a CPU, or neither (blocked or asleep).
pub async fn watch_event_loop(metrics: Arc<ServerMetrics>, name: String) {
    let mut logged_at: Option<Instant> = None;
    loop {
        let slept_at = Instant::now();
        let before = process::ThreadTimes::read();
        tokio::time::sleep(EVENT_LOOP_PROBE_INTERVAL).await;
        let elapsed = slept_at.elapsed();
        let lag = elapsed.saturating_sub(EVENT_LOOP_PROBE_INTERVAL);
        metrics.record_event_loop_lag(lag);
        let quiet = logged_at.is_some_and(|at| at.elapsed() < EVENT_LOOP_LATE_LOG_EVERY);
        if lag >= EVENT_LOOP_LATE_LOG && !quiet {
            logged_at = Some(Instant::now());
            let after = process::ThreadTimes::read();
            tracing::warn!("{}", late_wakeup_text(&name, elapsed, lag, before, after));
        }
    }
}

/// A probe wake-up this late is logged.
pub const EVENT_LOOP_LATE_LOG: Duration = Duration::from_millis(10);
/// One loop logs a late wake-up at most this often.
pub const EVENT_LOOP_LATE_LOG_EVERY: Duration = Duration::from_secs(1);

/// What a late wake-up's log line says: how late, and (when both readings
/// are of this thread) how the interval split into running, waiting for a
/// CPU (runnable, not scheduled), and the rest (blocked in a system call,
/// or idle in the event loop's poll).
fn late_wakeup_text(
    name: &str,
    elapsed: Duration,
    lag: Duration,
    before: Option<process::ThreadTimes>,
    after: Option<process::ThreadTimes>,
) -> String {
    let ms = |nanos: u64| nanos as f64 / 1e6;
    let late = lag.as_secs_f64() * 1e3;
    match (before, after) {
        (Some(before), Some(after)) if before.thread == after.thread => {
            let running = after.running_ns.saturating_sub(before.running_ns);
            let waiting = after.waiting_ns.saturating_sub(before.waiting_ns);
            let wall = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
            let rest = wall.saturating_sub(running).saturating_sub(waiting);
            format!(
                "event loop {name} woke {late:.1} ms late: of its {:.1} ms it ran {:.1} ms, \
                 waited {:.1} ms for a CPU, and was blocked or idle {:.1} ms",
                ms(wall),
                ms(running),
                ms(waiting),
                ms(rest),
            )
        }
        _ => format!("event loop {name} woke {late:.1} ms late"),
    }
}

/// `ServerMetrics` at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSnapshot {
    pub requests: [RequestSnapshot; RequestKind::ALL.len()],
    pub requests_in_flight: i64,
    pub connections: i64,
    pub event_loop_lag: HistogramSnapshot,
    pub event_loop_lag_max_nanos: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestSnapshot {
    pub kind: RequestKind,
    /// Requests received, finished or not.
    pub started: u64,
    /// Requests answered with an ERROR (or cancelled).
    pub failed: u64,
    /// Latency of finished requests.
    pub latency: HistogramSnapshot,
}

/// Everything one scrape exports.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub server: ServerSnapshot,
    /// None when the server runs without storage (tests of the transport).
    pub storage: Option<StorageStats>,
    pub process: ProcessStats,
    /// Cassandra's client request metrics; empty without an executor.
    pub client_requests: Vec<ScopeSnapshot>,
    /// Per table, in keyspace and table name order.
    pub tables: Vec<TableSnapshot>,
    /// The cluster's counters; zeros for a node alone.
    pub cluster: ClusterSnapshot,
    /// The roles, permissions and credentials caches; None without an
    /// executor.
    pub auth_caches: Option<rocksandra_query::auth_cache::AuthCacheStats>,
}

/// One table's metrics at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSnapshot {
    pub keyspace: String,
    pub table: String,
    pub read: HistogramSnapshot,
    pub write: HistogramSnapshot,
    pub range: HistogramSnapshot,
    pub tombstones_scanned: u64,
    /// None when the server runs without storage.
    pub storage: Option<TableStorageStats>,
}

/// Where a scrape's figures come from.
#[derive(Clone)]
pub struct MetricsSource {
    pub server: Arc<ServerMetrics>,
    pub storage: Option<Arc<dyn Engine>>,
    /// The schema (whose tables hold their metrics) and the client request
    /// metrics; None in tests of the transport alone.
    pub executor: Option<Arc<Executor>>,
    /// This node's membership of a cluster; None when it runs alone.
    pub cluster: Option<Arc<ClusterNode>>,
}

impl MetricsSource {
    /// Reads every figure now. Blocking (storage properties, `/proc`, the
    /// hints directory): call it off the async threads.
    pub fn snapshot(&self) -> Snapshot {
        let storage = self.storage.as_deref();
        Snapshot {
            server: self.server.snapshot(),
            storage: storage.map(|engine| engine.stats()),
            process: ProcessStats::read(),
            client_requests: self
                .executor
                .as_ref()
                .map(|e| e.client_request_metrics().snapshot())
                .unwrap_or_default(),
            tables: self
                .executor
                .as_ref()
                .map(|e| table_snapshots(e, storage))
                .unwrap_or_default(),
            cluster: self
                .cluster
                .as_ref()
                .map_or_else(ClusterSnapshot::alone, |node| node.metrics()),
            auth_caches: self.executor.as_ref().map(|e| e.auth_cache_stats()),
        }
    }

    /// The exposition text of `snapshot`.
    pub fn render(&self) -> String {
        exposition::render(&self.snapshot())
    }
}

/// The stored tables (and views) of the published schema, at most
/// `TABLE_SERIES_MAX`: a dropped table is gone from the schema, and so
/// from the scrape.
fn table_snapshots(executor: &Executor, storage: Option<&dyn Engine>) -> Vec<TableSnapshot> {
    let schema = executor.schema();
    schema
        .keyspaces
        .values()
        .filter(|keyspace| !keyspace.is_virtual)
        .flat_map(|keyspace| keyspace.tables.values())
        .filter(|table| !table.is_virtual)
        .take(TABLE_SERIES_MAX)
        .map(|table| TableSnapshot {
            keyspace: table.keyspace.clone(),
            table: table.name.clone(),
            read: table.metrics.read.snapshot(),
            write: table.metrics.write.snapshot(),
            range: table.metrics.range.snapshot(),
            tombstones_scanned: table.metrics.tombstones_scanned.load(Ordering::Relaxed),
            storage: storage.map(|engine| engine.table_stats(table.storage_id)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_count_requests_errors_and_in_flight() {
        let metrics = Arc::new(ServerMetrics::default());
        let query = metrics.request_started(RequestKind::Query);
        let batch = metrics.request_started(RequestKind::Batch);
        let other = metrics.request_started(RequestKind::Other);
        assert_eq!(metrics.snapshot().requests_in_flight, 3);
        query.finish(false);
        batch.finish(true);
        drop(other);
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.requests_in_flight, 0);
        let by_kind = |kind: RequestKind| snapshot.requests[kind.index()];
        assert_eq!(by_kind(RequestKind::Query).started, 1);
        assert_eq!(by_kind(RequestKind::Query).failed, 0);
        assert_eq!(by_kind(RequestKind::Query).latency.count(), 1);
        assert_eq!(by_kind(RequestKind::Batch).failed, 1);
        assert_eq!(
            by_kind(RequestKind::Other).failed,
            1,
            "a dropped timer is a cancelled request"
        );
        assert_eq!(by_kind(RequestKind::Execute).started, 0);
        for kind in RequestKind::ALL {
            assert_eq!(by_kind(kind).kind, kind);
        }
    }

    #[test]
    fn connections_are_counted_while_their_guard_lives() {
        let metrics = Arc::new(ServerMetrics::default());
        let first = metrics.connection_opened();
        let second = metrics.connection_opened();
        assert_eq!(metrics.snapshot().connections, 2);
        drop(first);
        drop(second);
        assert_eq!(metrics.snapshot().connections, 0);
    }

    #[test]
    fn event_loop_lag_keeps_its_maximum() {
        let metrics = ServerMetrics::default();
        metrics.record_event_loop_lag(Duration::from_millis(3));
        metrics.record_event_loop_lag(Duration::from_millis(40));
        metrics.record_event_loop_lag(Duration::from_millis(1));
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.event_loop_lag_max_nanos, 40_000_000);
        assert_eq!(snapshot.event_loop_lag.count(), 3);
        assert_eq!(snapshot.event_loop_lag.sum_nanos, 44_000_000);
    }

    #[test]
    fn a_late_wake_up_says_where_the_time_went() {
        let thread = std::thread::current().id();
        let at = |running_ns, waiting_ns| process::ThreadTimes {
            thread,
            running_ns,
            waiting_ns,
        };
        let text = late_wakeup_text(
            "cql-core-0",
            Duration::from_millis(30),
            Duration::from_millis(20),
            Some(at(1_000_000, 500_000)),
            Some(at(9_000_000, 15_500_000)),
        );
        assert_eq!(
            text,
            "event loop cql-core-0 woke 20.0 ms late: of its 30.0 ms it ran 8.0 ms, \
             waited 15.0 ms for a CPU, and was blocked or idle 7.0 ms"
        );
        let unknown = late_wakeup_text(
            "main",
            Duration::ZERO,
            Duration::from_millis(12),
            None,
            None,
        );
        assert_eq!(unknown, "event loop main woke 12.0 ms late");
    }

    #[tokio::test]
    async fn the_event_loop_probe_records_wake_ups_and_pauses() {
        let metrics = Arc::new(ServerMetrics::default());
        let probe = tokio::spawn(watch_event_loop(metrics.clone(), "test".into()));
        tokio::time::sleep(EVENT_LOOP_PROBE_INTERVAL * 3).await;
        // Blocks the only thread of this runtime: the probe wakes late.
        std::thread::sleep(Duration::from_millis(60));
        tokio::time::sleep(EVENT_LOOP_PROBE_INTERVAL * 3).await;
        probe.abort();
        let snapshot = metrics.snapshot();
        assert!(snapshot.event_loop_lag.count() >= 2, "{snapshot:?}");
        assert!(
            snapshot.event_loop_lag_max_nanos >= 40_000_000,
            "a 60 ms pause shows: {snapshot:?}"
        );
    }
}
