//! A `Snapshot` in the OpenMetrics text format, encoded by
//! `prometheus-client`: each scrape registers one collector over its
//! snapshot, under the `rocksandra` prefix. Counters get `_total` on their
//! samples; histograms are `_sum`, `_count` and cumulative `_bucket{le}`
//! samples ending in `+Inf`. Label values are escaped by the encoder (a
//! quoted table name may hold `"` or `\`).

use std::fmt::Write;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelValue, LabelValueEncoder, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rocksandra_query::auth_cache::{AuthCacheStats, CacheStats};
use rocksandra_query::metrics::{HistogramSnapshot, LATENCY_BUCKET_BOUNDS_NANOS};
use rocksandra_storage::{
    SstablesPerRead, StorageStats, TableStorageStats, SSTABLES_PER_READ_BOUNDS,
};

use super::{ProcessStats, Snapshot, TableSnapshot};

/// The `Content-Type` of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// What every metric's name starts with (then `_`).
pub const PREFIX: &str = "rocksandra";

const NANOS_PER_SECOND: f64 = 1e9;
const MICROS_PER_SECOND: f64 = 1e6;

type Result = std::result::Result<(), std::fmt::Error>;

pub fn render(snapshot: &Snapshot) -> String {
    let mut registry = Registry::with_prefix(PREFIX);
    registry.register_collector(Box::new(SnapshotCollector(snapshot.clone())));
    let mut out = String::new();
    // Writing to a `String` cannot fail, and every value here encodes.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// One scrape's figures, as `prometheus-client` collects them.
#[derive(Debug)]
struct SnapshotCollector(Snapshot);

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result {
        let snapshot = &self.0;
        let mut out = Families(&mut encoder);
        render_cql(&mut out, snapshot)?;
        render_client_requests(&mut out, snapshot)?;
        render_tables(&mut out, &snapshot.tables)?;
        render_pools(&mut out, snapshot)?;
        render_cluster(&mut out, snapshot)?;
        if let Some(caches) = &snapshot.auth_caches {
            render_auth_caches(&mut out, caches)?;
        }
        if let Some(storage) = &snapshot.storage {
            render_storage(&mut out, storage)?;
        }
        render_process(&mut out, &snapshot.process)
    }
}

fn render_cql(out: &mut Families<'_, '_>, snapshot: &Snapshot) -> Result {
    let server = &snapshot.server;
    let by_op = |value: fn(&super::RequestSnapshot) -> u64| {
        server
            .requests
            .iter()
            .map(move |r| ([("op", Label(r.kind.label()))], value(r)))
    };
    out.counters(
        "cql_requests",
        "CQL requests received, by opcode.",
        by_op(|r| r.started),
    )?;
    out.counters(
        "cql_errors",
        "CQL requests answered with an error, by opcode.",
        by_op(|r| r.failed),
    )?;
    out.histograms(
        "cql_request_latency_seconds",
        "Time from a CQL request's arrival to its answer, by opcode.",
        server
            .requests
            .iter()
            .map(|r| ([("op", Label(r.kind.label()))], &r.latency)),
    )?;
    out.gauge(
        "cql_requests_in_flight",
        "CQL requests received and not yet answered.",
        server.requests_in_flight,
    )?;
    out.gauge(
        "cql_connections",
        "Open CQL client connections.",
        server.connections,
    )?;
    out.histograms(
        "event_loop_lag_seconds",
        "How much later than asked a 10 ms sleep on the async runtime wakes.",
        [([], &server.event_loop_lag)],
    )?;
    out.gauge(
        "event_loop_lag_max_seconds",
        "The longest event-loop lag since the server started.",
        seconds(server.event_loop_lag_max_nanos),
    )
}

/// Cassandra's `ClientRequest` metrics: latency by scope and consistency
/// level (only the pairs used, so that a scrape stays small), failures by
/// scope.
fn render_client_requests(out: &mut Families<'_, '_>, snapshot: &Snapshot) -> Result {
    let scopes = &snapshot.client_requests;
    out.histograms(
        "client_request_latency_seconds",
        "Latency of the requests this node coordinated, by scope and consistency level.",
        scopes.iter().flat_map(|s| {
            s.latency
                .iter()
                .filter(|(_, histogram)| histogram.count() > 0)
                .map(|(level, histogram)| {
                    (
                        [
                            ("scope", Label(s.scope.label())),
                            ("cl", Label(level.name())),
                        ],
                        histogram,
                    )
                })
        }),
    )?;
    let by_scope = |value: fn(&rocksandra_query::metrics::ScopeSnapshot) -> u64| {
        scopes
            .iter()
            .map(move |s| ([("scope", Label(s.scope.label()))], value(s)))
    };
    out.counters(
        "client_request_timeouts",
        "Coordinated requests that timed out waiting for replicas, by scope.",
        by_scope(|s| s.timeouts),
    )?;
    out.counters(
        "client_request_unavailables",
        "Coordinated requests refused for too few live replicas, by scope.",
        by_scope(|s| s.unavailables),
    )?;
    out.counters(
        "client_request_failures",
        "Coordinated requests that replicas failed, by scope.",
        by_scope(|s| s.failures),
    )
}

/// A per-table gauge read from `Engine::table_stats`: name, help, value.
type TableGauge = (&'static str, &'static str, fn(&TableStorageStats) -> u64);

fn table_labels(t: &TableSnapshot) -> Labels<'_, 2> {
    [
        ("keyspace", Label(t.keyspace.as_str())),
        ("table", Label(t.table.as_str())),
    ]
}

fn render_tables(out: &mut Families<'_, '_>, tables: &[TableSnapshot]) -> Result {
    out.histograms(
        "table_read_latency_seconds",
        "Single-partition reads of the table this node coordinated.",
        tables.iter().map(|t| (table_labels(t), &t.read)),
    )?;
    out.histograms(
        "table_write_latency_seconds",
        "Writes to the table this node coordinated.",
        tables.iter().map(|t| (table_labels(t), &t.write)),
    )?;
    out.histograms(
        "table_range_latency_seconds",
        "Range reads (scans) of the table this node coordinated.",
        tables.iter().map(|t| (table_labels(t), &t.range)),
    )?;
    out.counters(
        "table_tombstones_scanned",
        "Deleted or expired rows reads of the table met.",
        tables
            .iter()
            .map(|t| (table_labels(t), t.tombstones_scanned)),
    )?;
    let stored: Vec<_> = tables
        .iter()
        .filter_map(|t| Some((table_labels(t), t.storage?)))
        .collect();
    let gauges: [TableGauge; 6] = [
        (
            "table_live_disk_space_used_bytes",
            "Size of the SST files the table reads now.",
            |s| s.live_sst_bytes,
        ),
        (
            "table_live_sstables",
            "SST files the table reads now.",
            |s| s.sst_files,
        ),
        (
            "table_memtable_bytes",
            "Memory of the table's active and immutable memtables.",
            |s| s.memtable_bytes,
        ),
        (
            "table_estimated_partitions",
            "RocksDB's estimate of the table's entries (at least its partitions).",
            |s| s.estimated_entries,
        ),
        (
            "table_pending_compactions",
            "1 when the table waits for a compaction RocksDB has not started, else 0.",
            |s| s.compactions_pending,
        ),
        (
            "table_pending_compaction_bytes",
            "Estimated bytes compactions still have to rewrite in the table.",
            |s| s.compaction_pending_bytes,
        ),
    ];
    for (name, help, value) in gauges {
        out.gauges(
            name,
            help,
            stored.iter().map(|(labels, s)| (*labels, value(s))),
        )?;
    }
    let mut family = out.0.encode_descriptor(
        "table_sstables_per_read",
        "SST files single-partition reads of the table looked into (a sample of the reads).",
        None,
        MetricType::Histogram,
    )?;
    for (labels, s) in &stored {
        encode_file_counts(&mut family.encode_family(labels)?, &s.sstables_per_read)?;
    }
    Ok(())
}

/// Cassandra's thread pools: the CQL requests (`Native-Transport-Requests`),
/// compactions (`CompactionExecutor`), and in a cluster the replica stages.
fn render_pools(out: &mut Families<'_, '_>, snapshot: &Snapshot) -> Result {
    let server = &snapshot.server;
    let requests_done: u64 = server.requests.iter().map(|r| r.latency.count()).sum();
    let in_flight = u64::try_from(server.requests_in_flight).unwrap_or(0);
    let mut pools: Vec<(&'static str, u64, u64, Option<u64>)> = vec![(
        "Native-Transport-Requests",
        in_flight,
        0,
        Some(requests_done),
    )];
    if let Some(storage) = &snapshot.storage {
        pools.push((
            "CompactionExecutor",
            storage.compactions_running,
            storage.compactions_pending,
            None,
        ));
    }
    for pool in &snapshot.cluster.pools {
        pools.push((pool.name, pool.active, pool.pending, Some(pool.completed)));
    }
    let label = |name: &'static str| [("pool", Label(name))];
    out.gauges(
        "thread_pool_active",
        "Tasks running in the pool.",
        pools
            .iter()
            .map(|(name, active, _, _)| (label(name), *active)),
    )?;
    out.gauges(
        "thread_pool_pending",
        "Tasks waiting for the pool.",
        pools
            .iter()
            .map(|(name, _, pending, _)| (label(name), *pending)),
    )?;
    out.counters(
        "thread_pool_completed",
        "Tasks the pool finished.",
        pools
            .iter()
            .filter_map(|(name, _, _, done)| Some((label(name), (*done)?))),
    )
}

fn render_cluster(out: &mut Families<'_, '_>, snapshot: &Snapshot) -> Result {
    let cluster = &snapshot.cluster;
    out.counters(
        "dropped_messages",
        "Internode requests refused unserved or never sent (queue full), by verb.",
        cluster
            .dropped
            .iter()
            .map(|(verb, n)| ([("verb", Label(verb.label()))], *n)),
    )?;
    out.counter(
        "hints_written",
        "Hints stored for replicas that missed a write.",
        cluster.hints_written,
    )?;
    out.counter(
        "hints_dropped",
        "Hints not stored: over the per-host limit, or too large.",
        cluster.hints_refused,
    )?;
    out.counter(
        "hints_delivered",
        "Hints replayed to their replica and acknowledged.",
        cluster.hints_delivered,
    )?;
    out.gauge(
        "hints_pending_bytes",
        "Bytes of hints kept for other nodes, not delivered yet.",
        cluster.hints_pending_bytes,
    )?;
    out.counter(
        "read_repair",
        "Blocking read repairs: reads whose replicas differed and were repaired.",
        cluster.read_repairs,
    )?;
    out.counters(
        "ann_searches",
        "ANN searches this replica answered, by what answered them: its graph, or a scan.",
        [
            (
                [("answered_by", Label("graph"))],
                cluster.ann_searches_graph,
            ),
            ([("answered_by", Label("scan"))], cluster.ann_searches_scan),
        ],
    )?;
    out.counters(
        "streaming_bytes",
        "Bytes of SST files streamed to (outgoing) and from (incoming) other nodes.",
        [
            (
                [("direction", Label("incoming"))],
                cluster.streamed_in_bytes,
            ),
            (
                [("direction", Label("outgoing"))],
                cluster.streamed_out_bytes,
            ),
        ],
    )
}

/// Cassandra's auth caches (`RolesCache`, `PermissionsCache`,
/// `CredentialsCache`): lookups answered from an entry, lookups that read
/// `system_auth`, and entries held, by cache.
fn render_auth_caches(out: &mut Families<'_, '_>, caches: &AuthCacheStats) -> Result {
    let by_cache = |value: fn(&CacheStats) -> u64| {
        [
            ("roles", &caches.roles),
            ("permissions", &caches.permissions),
            ("credentials", &caches.credentials),
        ]
        .map(|(name, stats)| ([("cache", Label(name))], value(stats)))
    };
    out.counters(
        "auth_cache_hits",
        "Auth cache lookups answered from an entry, by cache.",
        by_cache(|s| s.hits),
    )?;
    out.counters(
        "auth_cache_misses",
        "Auth cache lookups that read system_auth (the cache off, no entry, or one due), by cache.",
        by_cache(|s| s.misses),
    )?;
    out.gauges(
        "auth_cache_entries",
        "Entries an auth cache holds, by cache.",
        by_cache(|s| s.entries),
    )
}

fn render_storage(out: &mut Families<'_, '_>, storage: &StorageStats) -> Result {
    out.counter(
        "storage_write_stall_seconds",
        "Time writes were delayed or stopped for flushes and compactions to catch up.",
        storage.write_stall_micros as f64 / MICROS_PER_SECOND,
    )?;
    let counters: [(&str, &str, u64); 5] = [
        (
            "storage_rate_limited_bytes",
            "Bytes flushes and compactions wrote through the compaction_throughput cap.",
            storage.rate_limited_bytes,
        ),
        (
            "storage_block_cache_hits",
            "Block cache lookups that found the block.",
            storage.block_cache_hits,
        ),
        (
            "storage_block_cache_misses",
            "Block cache lookups that read the block from disk.",
            storage.block_cache_misses,
        ),
        (
            "storage_point_cache_hits",
            "Point reads of tables without clustering columns answered from the point cache.",
            storage.point_cache_hits,
        ),
        (
            "storage_point_cache_misses",
            "Point reads of tables without clustering columns that read the store.",
            storage.point_cache_misses,
        ),
    ];
    for (name, help, value) in counters {
        out.counter(name, help, value)?;
    }
    let gauges: [(&str, &str, u64); 9] = [
        (
            "storage_compaction_throughput_bytes",
            "The cap on what flushes and compactions write per second (compaction_throughput); 0: unthrottled.",
            storage.write_rate_limit_bytes.unwrap_or(0),
        ),
        (
            "storage_block_cache_usage_bytes",
            "Memory held by the block cache.",
            storage.block_cache_usage_bytes,
        ),
        (
            "storage_point_cache_bytes",
            "Memory held by the point cache (estimated).",
            storage.point_cache_bytes,
        ),
        (
            "storage_compaction_pending_bytes",
            "Estimated bytes compactions still have to rewrite.",
            storage.compaction_pending_bytes,
        ),
        (
            "storage_compactions_running",
            "Compactions running now.",
            storage.compactions_running,
        ),
        (
            "storage_compactions_pending",
            "Tables waiting for a compaction (Cassandra's pending compaction tasks).",
            storage.compactions_pending,
        ),
        (
            "storage_memtable_bytes",
            "Memory of the active and immutable memtables of every table.",
            storage.memtable_bytes,
        ),
        (
            "storage_sst_bytes",
            "Size of the live SST files of every table.",
            storage.sst_bytes,
        ),
        (
            "storage_read_only",
            "1 when storage refuses writes: after a failure, or while the last write found the disk full; else 0.",
            u64::from(storage.read_only),
        ),
    ];
    for (name, help, value) in gauges {
        out.gauge(name, help, value)?;
    }
    Ok(())
}

fn render_process(out: &mut Families<'_, '_>, process: &ProcessStats) -> Result {
    if let Some(bytes) = process.resident_bytes {
        out.gauge(
            "process_resident_memory_bytes",
            "Resident memory of the server process (VmRSS).",
            bytes,
        )?;
    }
    if let Some(bytes) = process.peak_resident_bytes {
        out.gauge(
            "process_peak_resident_memory_bytes",
            "The most memory the server process ever had resident (VmHWM).",
            bytes,
        )?;
    }
    if let Some(cpu) = process.cpu_seconds {
        out.counter(
            "process_cpu_seconds",
            "User and system CPU time of the server process.",
            cpu,
        )?;
    }
    Ok(())
}

fn seconds(nanos: u64) -> f64 {
    nanos as f64 / NANOS_PER_SECOND
}

/// A label value; the encoder escapes what the text format asks (`\`,
/// `"`, line feed).
#[derive(Clone, Copy, Debug)]
struct Label<'a>(&'a str);

impl EncodeLabelValue for Label<'_> {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result {
        encoder.write_str(self.0)
    }
}

/// A sample's labels: `[(name, value); N]`.
type Labels<'a, const N: usize> = [(&'static str, Label<'a>); N];

/// A counter or gauge value, as `prometheus-client` encodes it.
#[derive(Clone, Copy)]
enum Value {
    Integer(u64),
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Integer(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Integer(u64::try_from(v).unwrap_or(0))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

/// The families being encoded, with one descriptor (`# HELP`, `# TYPE`)
/// before the samples of each.
struct Families<'e, 'w>(&'e mut DescriptorEncoder<'w>);

impl Families<'_, '_> {
    fn counter(&mut self, name: &str, help: &str, value: impl Into<Value>) -> Result {
        self.one(MetricType::Counter, name, help, value.into())
    }

    fn gauge(&mut self, name: &str, help: &str, value: impl Into<Value>) -> Result {
        self.one(MetricType::Gauge, name, help, value.into())
    }

    fn counters<'l, const N: usize>(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels<'l, N>, u64)>,
    ) -> Result {
        self.labelled(MetricType::Counter, name, help, series)
    }

    fn gauges<'l, const N: usize>(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels<'l, N>, u64)>,
    ) -> Result {
        self.labelled(MetricType::Gauge, name, help, series)
    }

    /// A family of one sample without labels.
    fn one(&mut self, kind: MetricType, name: &str, help: &str, value: Value) -> Result {
        let mut family = self.0.encode_descriptor(name, help, None, kind)?;
        encode_value(&mut family, kind, value)
    }

    /// A family of counters or gauges, one sample per label set.
    fn labelled<'l, const N: usize>(
        &mut self,
        kind: MetricType,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels<'l, N>, u64)>,
    ) -> Result {
        let mut family = self.0.encode_descriptor(name, help, None, kind)?;
        for (labels, value) in series {
            encode_value(&mut family.encode_family(&labels)?, kind, value.into())?;
        }
        Ok(())
    }

    fn histograms<'l, 'h, const N: usize>(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels<'l, N>, &'h HistogramSnapshot)>,
    ) -> Result {
        let mut family = self
            .0
            .encode_descriptor(name, help, None, MetricType::Histogram)?;
        for (labels, histogram) in series {
            if N == 0 {
                encode_histogram(&mut family, histogram)?;
            } else {
                encode_histogram(&mut family.encode_family(&labels)?, histogram)?;
            }
        }
        Ok(())
    }
}

/// One counter or gauge sample (`kind` is one of the two).
fn encode_value(metric: &mut MetricEncoder<'_>, kind: MetricType, value: Value) -> Result {
    match (kind, value) {
        (MetricType::Counter, Value::Integer(v)) => {
            metric.encode_counter::<NoLabelSet, _, f64>(&v, None)
        }
        (MetricType::Counter, Value::Float(v)) => {
            metric.encode_counter::<NoLabelSet, _, f64>(&v, None)
        }
        (_, Value::Integer(v)) => metric.encode_gauge(&v),
        (_, Value::Float(v)) => metric.encode_gauge(&v),
    }
}

/// `+Inf` and `_count` both count every observation, so that they agree
/// even while requests are recorded during the scrape.
fn encode_histogram(metric: &mut MetricEncoder<'_>, histogram: &HistogramSnapshot) -> Result {
    let mut buckets: Vec<(f64, u64)> = LATENCY_BUCKET_BOUNDS_NANOS
        .iter()
        .zip(histogram.buckets)
        .map(|(bound, count)| (seconds(*bound), count))
        .collect();
    // The encoder writes `+Inf` for an infinite bound.
    buckets.push((
        f64::INFINITY,
        histogram.buckets.last().copied().unwrap_or(0),
    ));
    metric.encode_histogram::<NoLabelSet>(
        seconds(histogram.sum_nanos),
        histogram.count(),
        &buckets,
        None,
    )
}

/// A histogram of file counts, buckets bounded by file numbers.
fn encode_file_counts(metric: &mut MetricEncoder<'_>, histogram: &SstablesPerRead) -> Result {
    let mut buckets: Vec<(f64, u64)> = SSTABLES_PER_READ_BOUNDS
        .iter()
        .zip(histogram.buckets)
        .map(|(bound, count)| (*bound as f64, count))
        .collect();
    buckets.push((
        f64::INFINITY,
        histogram.buckets.last().copied().unwrap_or(0),
    ));
    metric.encode_histogram::<NoLabelSet>(
        histogram.files_sum as f64,
        histogram.count(),
        &buckets,
        None,
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use rocksandra_cluster::metrics::ClusterSnapshot;
    use rocksandra_query::metrics::{ClientRequestMetrics, Histogram, Scope};
    use rocksandra_wire::Consistency;

    use super::*;
    use crate::metrics::{RequestKind, ServerMetrics};

    fn snapshot(metrics: &ServerMetrics, storage: Option<StorageStats>) -> Snapshot {
        Snapshot {
            server: metrics.snapshot(),
            storage,
            process: ProcessStats {
                resident_bytes: Some(4096),
                peak_resident_bytes: Some(8192),
                cpu_seconds: Some(1.25),
            },
            client_requests: Vec::new(),
            tables: Vec::new(),
            cluster: ClusterSnapshot::alone(),
            auth_caches: None,
        }
    }

    #[test]
    fn auth_cache_counters_are_labelled_by_cache() {
        let mut s = snapshot(&ServerMetrics::default(), None);
        s.auth_caches = Some(AuthCacheStats {
            roles: CacheStats {
                hits: 5,
                misses: 2,
                entries: 1,
            },
            ..AuthCacheStats::default()
        });
        let text = render(&s);
        assert_eq!(
            value(&text, "rocksandra_auth_cache_hits_total{cache=\"roles\"}"),
            5.0
        );
        assert_eq!(
            value(&text, "rocksandra_auth_cache_misses_total{cache=\"roles\"}"),
            2.0
        );
        assert_eq!(
            value(&text, "rocksandra_auth_cache_entries{cache=\"roles\"}"),
            1.0
        );
        assert_eq!(
            value(
                &text,
                "rocksandra_auth_cache_hits_total{cache=\"credentials\"}"
            ),
            0.0
        );
    }

    /// The value of the sample written exactly as `series` (name and labels).
    fn value(text: &str, series: &str) -> f64 {
        let line = text
            .lines()
            .find(|line| {
                line.strip_prefix(series)
                    .is_some_and(|v| v.starts_with(' '))
            })
            .unwrap_or_else(|| panic!("no sample {series} in\n{text}"));
        line[series.len()..].trim().parse().expect("a number")
    }

    fn sstables_of(reads: &[u64]) -> SstablesPerRead {
        let mut histogram = SstablesPerRead::default();
        for files in reads {
            histogram.record(*files);
        }
        histogram
    }

    fn histogram_of(micros: &[u64]) -> HistogramSnapshot {
        let histogram = Histogram::default();
        for m in micros {
            histogram.record(Duration::from_micros(*m));
        }
        histogram.snapshot()
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_end_in_the_count() {
        let metrics = Arc::new(ServerMetrics::default());
        metrics.request_started(RequestKind::Batch).finish(false);
        metrics.request_started(RequestKind::Batch).finish(true);
        let mut snapshot = snapshot(&metrics, None);
        snapshot.server.requests[0].latency =
            histogram_of(&[10, 30, 30, 700, 20_000, 3_000_000, 60_000_000]);
        let text = render(&snapshot);
        let name = "rocksandra_cql_request_latency_seconds";
        let buckets: Vec<(String, f64)> = text
            .lines()
            .filter(|line| {
                line.starts_with(&format!("{name}_bucket{{le=")) && line.contains(",op=\"query\"}")
            })
            .map(|line| {
                let (series, count) = line.rsplit_once(' ').expect("sample");
                (series.to_string(), count.parse().expect("count"))
            })
            .collect();
        assert_eq!(buckets.len(), LATENCY_BUCKET_BOUNDS_NANOS.len() + 1);
        assert!(
            buckets.windows(2).all(|pair| pair[0].1 <= pair[1].1),
            "cumulative: {buckets:?}"
        );
        let (last_series, last_count) = buckets.last().expect("+Inf");
        assert!(
            last_series.ends_with("{le=\"+Inf\",op=\"query\"}"),
            "{last_series}"
        );
        let count = value(&text, &format!("{name}_count{{op=\"query\"}}"));
        assert_eq!((*last_count, count), (7.0, 7.0));
        let bucket = |i: usize| buckets[i].1;
        assert_eq!(bucket(0), 1.0, "10 µs <= 25 µs");
        assert_eq!(bucket(1), 3.0, "30 µs <= 50 µs");
        assert_eq!(bucket(5), 4.0, "700 µs <= 1 ms");
        assert_eq!(bucket(9), 5.0, "20 ms <= 25 ms");
        assert_eq!(bucket(16), 6.0, "3 s <= 5 s");
        assert_eq!(bucket(17), 6.0, "60 s is above every bound");
        let le: f64 = buckets[0]
            .0
            .split_once("le=\"")
            .and_then(|(_, v)| v.split_once('"'))
            .map(|(v, _)| v)
            .expect("le")
            .parse()
            .expect("a number");
        assert!((le - 0.000025).abs() < 1e-12, "{le}");
        let sum = value(&text, &format!("{name}_sum{{op=\"query\"}}"));
        assert!((sum - 63.02077).abs() < 1e-9, "sum {sum}");

        assert_eq!(
            value(&text, "rocksandra_cql_requests_total{op=\"batch\"}"),
            2.0
        );
        assert_eq!(
            value(&text, "rocksandra_cql_errors_total{op=\"batch\"}"),
            1.0
        );
        assert_eq!(value(&text, &format!("{name}_count{{op=\"batch\"}}")), 2.0);
        assert_eq!(
            value(&text, &format!("{name}_count{{op=\"execute\"}}")),
            0.0,
            "every op is exported, used or not"
        );
        assert_eq!(value(&text, "rocksandra_cql_requests_in_flight"), 0.0);
        assert_eq!(
            value(
                &text,
                "rocksandra_thread_pool_completed_total{pool=\"Native-Transport-Requests\"}"
            ),
            9.0,
            "every answered request: 7 queries and 2 batches"
        );
    }

    #[test]
    fn every_family_has_help_and_type_before_its_samples() {
        let metrics = ServerMetrics::default();
        let storage = StorageStats {
            write_stall_micros: 1_500_000,
            block_cache_hits: 7,
            point_cache_misses: 3,
            compactions_pending: 2,
            read_only: true,
            ..StorageStats::default()
        };
        let text = render(&snapshot(&metrics, Some(storage)));
        assert!(text.ends_with("# EOF\n"), "{text}");
        let mut declared: Vec<(String, String)> = Vec::new();
        for line in text.lines().filter(|l| *l != "# EOF") {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("name and type");
                assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
                assert!(
                    !declared.iter().any(|(n, _)| n == name),
                    "{name} declared twice"
                );
                declared.push((name.to_string(), kind.to_string()));
            } else if let Some(rest) = line.strip_prefix("# HELP ") {
                assert!(rest.split_once(' ').is_some(), "{line}");
            } else {
                let (family, kind) = declared.last().expect("a sample after its TYPE");
                assert!(line.starts_with(family.as_str()), "{line} outside {family}");
                assert!(line.starts_with("rocksandra_"), "{line}");
                if kind == "counter" {
                    let series = line.split([' ', '{']).next().unwrap_or_default();
                    assert!(series.ends_with("_total"), "{line}");
                }
            }
        }
        assert_eq!(
            value(&text, "rocksandra_storage_write_stall_seconds_total"),
            1.5
        );
        assert_eq!(
            value(&text, "rocksandra_storage_point_cache_misses_total"),
            3.0
        );
        assert_eq!(
            value(&text, "rocksandra_storage_block_cache_hits_total"),
            7.0
        );
        assert_eq!(value(&text, "rocksandra_storage_read_only"), 1.0);
        assert_eq!(
            value(
                &text,
                "rocksandra_thread_pool_pending{pool=\"CompactionExecutor\"}"
            ),
            2.0
        );
        assert_eq!(
            value(&text, "rocksandra_process_resident_memory_bytes"),
            4096.0
        );
        assert_eq!(value(&text, "rocksandra_process_cpu_seconds_total"), 1.25);
        assert_eq!(value(&text, "rocksandra_event_loop_lag_seconds_count"), 0.0);
        assert_eq!(value(&text, "rocksandra_cql_connections"), 0.0);
        // A node alone exports the cluster's families, at zero.
        assert_eq!(
            value(
                &text,
                "rocksandra_dropped_messages_total{verb=\"MUTATION\"}"
            ),
            0.0
        );
        assert_eq!(value(&text, "rocksandra_hints_written_total"), 0.0);
        assert_eq!(value(&text, "rocksandra_read_repair_total"), 0.0);
        assert_eq!(
            value(
                &text,
                "rocksandra_streaming_bytes_total{direction=\"incoming\"}"
            ),
            0.0
        );
        assert_eq!(
            value(&text, "rocksandra_thread_pool_active{pool=\"ReadStage\"}"),
            0.0
        );
        let without_storage = render(&snapshot(&metrics, None));
        assert!(!without_storage.contains("rocksandra_storage_"));
    }

    #[test]
    fn client_requests_and_tables_carry_their_labels() {
        let metrics = ServerMetrics::default();
        let client = ClientRequestMetrics::default();
        let ms = Duration::from_millis(2);
        client.record(Scope::Read, Consistency::One, ms, &Ok(()));
        client.record(Scope::Read, Consistency::LocalQuorum, ms, &Ok(()));
        let timeout: rocksandra_query::Result<()> =
            Err(rocksandra_query::QueryError::ReadTimeout {
                consistency: Consistency::All,
                received: 0,
                block_for: 2,
                data_present: false,
            });
        client.record(Scope::RangeSlice, Consistency::All, ms, &timeout);
        let mut snapshot = snapshot(&metrics, None);
        snapshot.client_requests = client.snapshot();
        snapshot.tables = vec![TableSnapshot {
            keyspace: "ks".into(),
            table: "we\"ird\\name".into(),
            read: histogram_of(&[40, 40]),
            write: histogram_of(&[90]),
            range: HistogramSnapshot::default(),
            tombstones_scanned: 12,
            storage: Some(rocksandra_storage::TableStorageStats {
                live_sst_bytes: 4096,
                sst_files: 2,
                compactions_pending: 1,
                compaction_pending_bytes: 65536,
                sstables_per_read: sstables_of(&[1, 1, 3]),
                ..Default::default()
            }),
        }];
        let text = render(&snapshot);
        let latency = "rocksandra_client_request_latency_seconds_count";
        assert_eq!(
            value(&text, &format!("{latency}{{scope=\"Read\",cl=\"ONE\"}}")),
            1.0
        );
        assert_eq!(
            value(
                &text,
                &format!("{latency}{{scope=\"Read\",cl=\"LOCAL_QUORUM\"}}")
            ),
            1.0
        );
        assert!(
            !text.contains("scope=\"Write\",cl="),
            "unused levels are left out"
        );
        assert_eq!(
            value(
                &text,
                "rocksandra_client_request_timeouts_total{scope=\"RangeSlice\"}"
            ),
            1.0
        );
        assert_eq!(
            value(
                &text,
                "rocksandra_client_request_unavailables_total{scope=\"CASWrite\"}"
            ),
            0.0
        );
        let table = "{keyspace=\"ks\",table=\"we\\\"ird\\\\name\"}";
        for (family, expected) in [
            ("rocksandra_table_read_latency_seconds_count", 2.0),
            ("rocksandra_table_write_latency_seconds_count", 1.0),
            ("rocksandra_table_tombstones_scanned_total", 12.0),
            ("rocksandra_table_live_disk_space_used_bytes", 4096.0),
            ("rocksandra_table_live_sstables", 2.0),
            ("rocksandra_table_pending_compactions", 1.0),
            ("rocksandra_table_pending_compaction_bytes", 65536.0),
            ("rocksandra_table_sstables_per_read_count", 3.0),
            ("rocksandra_table_sstables_per_read_sum", 5.0),
        ] {
            assert_eq!(
                value(&text, &format!("{family}{table}")),
                expected,
                "{family}"
            );
        }
    }
}
