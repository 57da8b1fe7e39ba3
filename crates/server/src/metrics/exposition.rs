//! A `Snapshot` as Prometheus text exposition format 0.0.4: per metric
//! family a `# HELP` and a `# TYPE` line, then its samples; histograms as
//! cumulative `_bucket{le}` samples ending in `+Inf`, then `_sum` and `_count`.
//! Names, help texts and label values are constants of this module, none
//! of which needs escaping.

use std::fmt::{Display, Write};

use rocksandra_storage::StorageStats;

use super::{HistogramSnapshot, Snapshot, LATENCY_BUCKET_BOUNDS_NANOS};

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const NANOS_PER_SECOND: f64 = 1e9;
const MICROS_PER_SECOND: f64 = 1e6;

pub fn render(snapshot: &Snapshot) -> String {
    let mut out = Text::default();
    render_requests(&mut out, snapshot);
    let server = &snapshot.server;
    out.gauge(
        "rocksandra_cql_requests_in_flight",
        "CQL requests received and not yet answered.",
        server.requests_in_flight,
    );
    out.gauge(
        "rocksandra_cql_connections",
        "Open CQL client connections.",
        server.connections,
    );
    out.histogram(
        "rocksandra_event_loop_lag_seconds",
        "How much later than asked a 10 ms sleep on the async runtime wakes.",
        &[(None, &server.event_loop_lag)],
    );
    out.gauge(
        "rocksandra_event_loop_lag_max_seconds",
        "The longest event-loop lag since the server started.",
        seconds(server.event_loop_lag_max_nanos),
    );
    if let Some(storage) = &snapshot.storage {
        render_storage(&mut out, storage);
    }
    render_process(&mut out, &snapshot.process);
    out.0
}

fn render_requests(out: &mut Text, snapshot: &Snapshot) {
    let requests = &snapshot.server.requests;
    let name = "rocksandra_cql_requests_total";
    out.header(name, "counter", "CQL requests received, by opcode.");
    for request in requests {
        out.sample(name, &[("op", request.kind.label())], request.started);
    }
    let name = "rocksandra_cql_errors_total";
    out.header(
        name,
        "counter",
        "CQL requests answered with an error, by opcode.",
    );
    for request in requests {
        out.sample(name, &[("op", request.kind.label())], request.failed);
    }
    let latencies: Vec<_> = requests
        .iter()
        .map(|request| (Some(request.kind.label()), &request.latency))
        .collect();
    out.histogram(
        "rocksandra_cql_request_latency_seconds",
        "Time from a CQL request's arrival to its answer, by opcode.",
        &latencies,
    );
}

fn render_storage(out: &mut Text, storage: &StorageStats) {
    out.counter(
        "rocksandra_storage_write_stall_seconds_total",
        "Time writes were delayed or stopped for flushes and compactions to catch up.",
        storage.write_stall_micros as f64 / MICROS_PER_SECOND,
    );
    out.counter(
        "rocksandra_storage_block_cache_hits_total",
        "Block cache lookups that found the block.",
        storage.block_cache_hits,
    );
    out.counter(
        "rocksandra_storage_block_cache_misses_total",
        "Block cache lookups that read the block from disk.",
        storage.block_cache_misses,
    );
    out.gauge(
        "rocksandra_storage_block_cache_usage_bytes",
        "Memory held by the block cache.",
        storage.block_cache_usage_bytes,
    );
    out.counter(
        "rocksandra_storage_point_cache_hits_total",
        "Point reads of tables without clustering columns answered from the point cache.",
        storage.point_cache_hits,
    );
    out.counter(
        "rocksandra_storage_point_cache_misses_total",
        "Point reads of tables without clustering columns that read the store.",
        storage.point_cache_misses,
    );
    out.gauge(
        "rocksandra_storage_point_cache_bytes",
        "Memory held by the point cache (estimated).",
        storage.point_cache_bytes,
    );
    out.gauge(
        "rocksandra_storage_compaction_pending_bytes",
        "Estimated bytes compactions still have to rewrite.",
        storage.compaction_pending_bytes,
    );
    out.gauge(
        "rocksandra_storage_compactions_running",
        "Compactions running now.",
        storage.compactions_running,
    );
    out.gauge(
        "rocksandra_storage_memtable_bytes",
        "Memory of the active and immutable memtables of every table.",
        storage.memtable_bytes,
    );
    out.gauge(
        "rocksandra_storage_sst_bytes",
        "Size of the live SST files of every table.",
        storage.sst_bytes,
    );
    out.gauge(
        "rocksandra_storage_read_only",
        "1 when storage refuses writes after a failure, else 0.",
        u8::from(storage.read_only),
    );
}

fn render_process(out: &mut Text, process: &super::ProcessStats) {
    if let Some(bytes) = process.resident_bytes {
        out.gauge(
            "rocksandra_process_resident_memory_bytes",
            "Resident memory of the server process (VmRSS).",
            bytes,
        );
    }
    if let Some(bytes) = process.peak_resident_bytes {
        out.gauge(
            "rocksandra_process_peak_resident_memory_bytes",
            "The most memory the server process ever had resident (VmHWM).",
            bytes,
        );
    }
    if let Some(cpu) = process.cpu_seconds {
        out.counter(
            "rocksandra_process_cpu_seconds_total",
            "User and system CPU time of the server process.",
            cpu,
        );
    }
}

fn seconds(nanos: u64) -> f64 {
    nanos as f64 / NANOS_PER_SECOND
}

/// The text being written. Writing to a `String` cannot fail, so the
/// `fmt::Result`s are dropped.
#[derive(Default)]
struct Text(String);

impl Text {
    fn header(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.0.push_str(name);
        if let Some(((first_name, first_value), rest)) = labels.split_first() {
            let _ = write!(self.0, "{{{first_name}=\"{first_value}\"");
            for (label, value) in rest {
                let _ = write!(self.0, ",{label}=\"{value}\"");
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    fn counter(&mut self, name: &str, help: &str, value: impl Display) {
        self.header(name, "counter", help);
        self.sample(name, &[], value);
    }

    fn gauge(&mut self, name: &str, help: &str, value: impl Display) {
        self.header(name, "gauge", help);
        self.sample(name, &[], value);
    }

    /// One histogram family: a series per `(op label, histogram)`.
    fn histogram(&mut self, name: &str, help: &str, series: &[(Option<&str>, &HistogramSnapshot)]) {
        self.header(name, "histogram", help);
        let bucket_name = format!("{name}_bucket");
        let sum_name = format!("{name}_sum");
        let count_name = format!("{name}_count");
        for (op, histogram) in series {
            let op_label: &[(&str, &str)] = match op {
                Some(op) => &[("op", op)],
                None => &[],
            };
            let mut cumulative = 0u64;
            for (bound, count) in LATENCY_BUCKET_BOUNDS_NANOS.iter().zip(histogram.buckets) {
                cumulative = cumulative.saturating_add(count);
                let le = seconds(*bound).to_string();
                self.sample(&bucket_name, &with_le(op_label, &le), cumulative);
            }
            // `+Inf` and `_count` both count every observation, so that
            // they agree even while requests are recorded during the scrape.
            let count = histogram.count();
            self.sample(&bucket_name, &with_le(op_label, "+Inf"), count);
            self.sample(&sum_name, op_label, seconds(histogram.sum_nanos));
            self.sample(&count_name, op_label, count);
        }
    }
}

fn with_le<'a>(labels: &[(&'a str, &'a str)], le: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut all = labels.to_vec();
    all.push(("le", le));
    all
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::metrics::{ProcessStats, RequestKind, ServerMetrics};

    fn snapshot(metrics: &ServerMetrics, storage: Option<StorageStats>) -> Snapshot {
        Snapshot {
            server: metrics.snapshot(),
            storage,
            process: ProcessStats {
                resident_bytes: Some(4096),
                peak_resident_bytes: Some(8192),
                cpu_seconds: Some(1.25),
            },
        }
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

    #[test]
    fn histogram_buckets_are_cumulative_and_end_in_the_count() {
        let metrics = Arc::new(ServerMetrics::default());
        let latency = &metrics.requests[RequestKind::Query.index()].latency;
        for micros in [10, 30, 30, 700, 20_000, 3_000_000, 60_000_000] {
            latency.record(Duration::from_micros(micros));
        }
        metrics.request_started(RequestKind::Batch).finish(false);
        metrics.request_started(RequestKind::Batch).finish(true);
        let text = render(&snapshot(&metrics, None));
        let name = "rocksandra_cql_request_latency_seconds";
        let buckets: Vec<(String, f64)> = text
            .lines()
            .filter(|line| line.starts_with(&format!("{name}_bucket{{op=\"query\"")))
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
        assert!(last_series.ends_with("le=\"+Inf\"}"), "{last_series}");
        let count = value(&text, &format!("{name}_count{{op=\"query\"}}"));
        assert_eq!((*last_count, count), (7.0, 7.0));
        let bucket = |le: &str| value(&text, &format!("{name}_bucket{{op=\"query\",le=\"{le}\"}}"));
        assert_eq!(bucket("0.000025"), 1.0);
        assert_eq!(bucket("0.00005"), 3.0);
        assert_eq!(bucket("0.001"), 4.0);
        assert_eq!(bucket("0.025"), 5.0);
        assert_eq!(bucket("5"), 6.0);
        assert_eq!(bucket("10"), 6.0, "60 s is above every bound");
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
            value(&text, "rocksandra_cql_requests_total{op=\"query\"}"),
            0.0,
            "recorded straight into the histogram, not through a timer"
        );
        assert_eq!(
            value(&text, &format!("{name}_count{{op=\"execute\"}}")),
            0.0,
            "every op is exported, used or not"
        );
        assert_eq!(value(&text, "rocksandra_cql_requests_in_flight"), 0.0);
    }

    #[test]
    fn every_family_has_help_and_type_before_its_samples() {
        let metrics = ServerMetrics::default();
        let storage = StorageStats {
            write_stall_micros: 1_500_000,
            block_cache_hits: 7,
            point_cache_misses: 3,
            read_only: true,
            ..StorageStats::default()
        };
        let text = render(&snapshot(&metrics, Some(storage)));
        let mut declared: Vec<String> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("name and type");
                assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
                assert!(
                    !declared.contains(&name.to_string()),
                    "{name} declared twice"
                );
                declared.push(name.to_string());
            } else if let Some(rest) = line.strip_prefix("# HELP ") {
                assert!(rest.split_once(' ').is_some(), "{line}");
            } else {
                let family = declared.last().expect("a sample after its TYPE");
                assert!(line.starts_with(family.as_str()), "{line} outside {family}");
                assert!(line.starts_with("rocksandra_"), "{line}");
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
            value(&text, "rocksandra_process_resident_memory_bytes"),
            4096.0
        );
        assert_eq!(value(&text, "rocksandra_process_cpu_seconds_total"), 1.25);
        assert_eq!(value(&text, "rocksandra_event_loop_lag_seconds_count"), 0.0);
        assert_eq!(value(&text, "rocksandra_cql_connections"), 0.0);
        let without_storage = render(&snapshot(&metrics, None));
        assert!(!without_storage.contains("rocksandra_storage_"));
    }
}
