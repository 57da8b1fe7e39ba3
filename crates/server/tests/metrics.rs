//! The Prometheus endpoint end to end: a whole node (`Service`, RocksDB in a
//! temporary directory) on free ports, CQL through the raw test client,
//! scrapes over real sockets; and the HTTP responder against bad requests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rocksandra_server::config::Config;
use rocksandra_server::metrics::http::{MetricsServer, Render, REQUEST_HEAD_BYTES_MAX};
use rocksandra_server::metrics::{MetricsSource, ServerMetrics};
use rocksandra_wire::{
    Batch, BatchQuery, BatchStatement, BatchType, Consistency, ErrorKind, Execute, Prepare,
    ProtocolVersion, Request, Response, ResultBody,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::{expect_result, int, params, query, Client, Node, WAIT};

// ---------------------------------------------------------------- http

/// An HTTP answer, split up.
struct Answer {
    status_line: String,
    head: String,
    body: String,
}

/// Sends `request` as is and reads the answer until the server closes.
async fn exchange(address: SocketAddr, request: &[u8]) -> Answer {
    let mut socket = TcpStream::connect(address).await.expect("connects");
    socket.write_all(request).await.expect("writes");
    let mut bytes = Vec::new();
    tokio::time::timeout(WAIT, socket.read_to_end(&mut bytes))
        .await
        .expect("the server answers and closes in time")
        .expect("reads");
    let text = String::from_utf8(bytes).expect("utf-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    Answer {
        status_line: head.lines().next().unwrap_or_default().to_string(),
        head: head.to_string(),
        body: body.to_string(),
    }
}

async fn scrape(address: SocketAddr) -> String {
    let answer = exchange(
        address,
        b"GET /metrics HTTP/1.1\r\nHost: test\r\nAccept: text/plain\r\n\r\n",
    )
    .await;
    assert_eq!(answer.status_line, "HTTP/1.1 200 OK");
    assert!(
        answer
            .head
            .contains("\r\nContent-Type: application/openmetrics-text; version=1.0.0"),
        "{}",
        answer.head
    );
    assert!(answer
        .head
        .contains(&format!("\r\nContent-Length: {}", answer.body.len())));
    answer.body
}

/// The value of the sample written exactly as `series` (name and labels).
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
        .parse()
        .expect("a number")
}

#[tokio::test]
async fn bad_http_gets_its_status_and_the_endpoint_stays_up() {
    let source = MetricsSource {
        server: Arc::new(ServerMetrics::default()),
        storage: None,
        executor: None,
        cluster: None,
    };
    let render: Render = Arc::new(move || source.render());
    let endpoint = MetricsServer::bind("127.0.0.1:0".parse().expect("address"), render)
        .await
        .expect("binds");
    let address = endpoint.local_addr();
    let serving = tokio::spawn(endpoint.run());

    let garbage = exchange(
        address,
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
    )
    .await;
    assert_eq!(garbage.status_line, "HTTP/1.1 400 Bad Request");

    let mut oversized = b"GET /metrics HTTP/1.1\r\nX-Filler: ".to_vec();
    oversized.resize(2 * REQUEST_HEAD_BYTES_MAX, b'a');
    let oversized = exchange(address, &oversized).await;
    assert_eq!(
        oversized.status_line,
        "HTTP/1.1 431 Request Header Fields Too Large"
    );

    let not_found = exchange(address, b"GET /status HTTP/1.1\r\n\r\n").await;
    assert_eq!(not_found.status_line, "HTTP/1.1 404 Not Found");

    let post = exchange(
        address,
        b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
    )
    .await;
    assert_eq!(post.status_line, "HTTP/1.1 405 Method Not Allowed");
    assert!(post.head.contains("\r\nAllow: GET"), "{}", post.head);

    // A client that sends half a head and stops writing.
    let mut half = TcpStream::connect(address).await.expect("connects");
    half.write_all(b"GET /metr").await.expect("writes");
    half.shutdown().await.expect("half-closes");
    let mut answer = String::new();
    tokio::time::timeout(WAIT, half.read_to_string(&mut answer))
        .await
        .expect("answered in time")
        .expect("reads");
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer}"
    );

    // A port check: connect, send nothing, close.
    drop(TcpStream::connect(address).await.expect("connects"));

    let text = scrape(address).await;
    assert!(text.contains("# TYPE rocksandra_cql_requests counter"));
    assert!(text.ends_with("# EOF\n"), "OpenMetrics text ends so");
    assert!(!text.contains("rocksandra_storage_"), "no storage here");
    serving.abort();
}

// ---------------------------------------------------------------- node

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrape_counts_cql_requests_and_reports_storage() {
    let config = Config {
        prometheus_port: Some(0),
        ..Config::default()
    };
    let node = Node::start(config).await;
    let native = node.native;
    let metrics = node.metrics.expect("the endpoint is on");
    assert_ne!(metrics.port(), 0, "the bound port is reported");

    let before = scrape(metrics).await;
    assert_eq!(
        sample(&before, "rocksandra_cql_requests_total{op=\"query\"}"),
        0.0
    );
    assert_eq!(sample(&before, "rocksandra_cql_connections"), 0.0);

    let mut client = Client::ready(native, ProtocolVersion::V5).await;
    run_every_kind_of_request(&mut client).await;
    // At least one wake-up of the 10 ms event-loop probe.
    tokio::time::sleep(Duration::from_millis(50)).await;

    let after = scrape(metrics).await;
    assert_cql_request_metrics(&after);
    assert_storage_and_process_metrics(&after);
    assert_client_request_and_table_metrics(&after);

    drop(client);
    node.stop().await;
}

/// Four QUERY (one of them failing), one PREPARE, one EXECUTE and one
/// BATCH, each answered.
async fn run_every_kind_of_request(client: &mut Client) {
    for statement in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
        "INSERT INTO ks.t (k, v) VALUES (1, 10)",
    ] {
        expect_result(client.request(2, query(statement)).await);
    }
    match client.request(3, query("SELECT * FROM ks.missing")).await {
        Response::Error(error) => assert_eq!(error.kind, ErrorKind::Invalid),
        other => panic!("expected an error, got {other:?}"),
    }
    let prepare = Prepare {
        query: "SELECT v FROM ks.t WHERE k = ?".to_string(),
        keyspace: None,
    };
    let ResultBody::Prepared(prepared) =
        expect_result(client.request(4, Request::Prepare(prepare)).await)
    else {
        panic!("PREPARE answers Prepared");
    };
    let execute = Execute {
        id: prepared.id.clone(),
        result_metadata_id: prepared.result_metadata_id.clone(),
        params: params(vec![int(1)]),
    };
    let ResultBody::Rows(rows) = expect_result(client.request(5, Request::Execute(execute)).await)
    else {
        panic!("EXECUTE of a SELECT answers Rows");
    };
    assert_eq!(rows.rows.len(), 1);
    let batch = Batch {
        batch_type: BatchType::Logged,
        statements: vec![BatchStatement {
            query: BatchQuery::Text("INSERT INTO ks.t (k, v) VALUES (2, 20)".to_string()),
            values: Vec::new(),
        }],
        consistency: Consistency::One,
        serial_consistency: None,
        default_timestamp_micros: None,
        keyspace: None,
        now_in_seconds: None,
    };
    expect_result(client.request(6, Request::Batch(batch)).await);
}

/// The native transport's requests, errors, latencies and connections as
/// `run_every_kind_of_request` left them.
fn assert_cql_request_metrics(after: &str) {
    let requests = |op: &str| {
        sample(
            after,
            &format!("rocksandra_cql_requests_total{{op=\"{op}\"}}"),
        )
    };
    let errors = |op: &str| {
        sample(
            after,
            &format!("rocksandra_cql_errors_total{{op=\"{op}\"}}"),
        )
    };
    let latency = "rocksandra_cql_request_latency_seconds";
    let answered = |op: &str| sample(after, &format!("{latency}_count{{op=\"{op}\"}}"));
    for (op, count) in [
        ("query", 4.0),
        ("prepare", 1.0),
        ("execute", 1.0),
        ("batch", 1.0),
    ] {
        assert_eq!(requests(op), count, "{op} requests");
        assert_eq!(answered(op), count, "{op} latencies");
        assert_eq!(
            sample(
                after,
                &format!("{latency}_bucket{{le=\"+Inf\",op=\"{op}\"}}")
            ),
            count
        );
    }
    assert!(requests("other") >= 1.0, "STARTUP is counted");
    assert_eq!(errors("query"), 1.0, "the SELECT of a missing table");
    assert_eq!(errors("batch") + errors("execute") + errors("prepare"), 0.0);
    assert!(sample(after, &format!("{latency}_sum{{op=\"query\"}}")) > 0.0);
    assert_eq!(sample(after, "rocksandra_cql_requests_in_flight"), 0.0);
    assert_eq!(sample(after, "rocksandra_cql_connections"), 1.0);
    assert!(sample(after, "rocksandra_event_loop_lag_seconds_count") >= 1.0);
    assert!(sample(after, "rocksandra_event_loop_lag_max_seconds") >= 0.0);
}

/// RocksDB's and the process's gauges after rows were written.
fn assert_storage_and_process_metrics(after: &str) {
    assert!(
        sample(after, "rocksandra_storage_memtable_bytes") > 0.0,
        "rows were written"
    );
    assert_eq!(sample(after, "rocksandra_storage_read_only"), 0.0);
    for name in [
        "rocksandra_storage_write_stall_seconds_total",
        "rocksandra_storage_block_cache_hits_total",
        "rocksandra_storage_block_cache_misses_total",
        "rocksandra_storage_block_cache_usage_bytes",
        "rocksandra_storage_compaction_pending_bytes",
        "rocksandra_storage_compactions_running",
        "rocksandra_storage_sst_bytes",
    ] {
        assert!(sample(after, name) >= 0.0, "{name}");
    }
    assert!(sample(after, "rocksandra_process_resident_memory_bytes") > 0.0);
    assert!(sample(after, "rocksandra_process_peak_resident_memory_bytes") > 0.0);
    assert!(sample(after, "rocksandra_process_cpu_seconds_total") > 0.0);
}

/// Cassandra's client request and table metrics after the workload.
fn assert_client_request_and_table_metrics(after: &str) {
    // Cassandra's client request and table metrics: the INSERT and the
    // BATCH wrote at ONE, the EXECUTE read at ONE.
    let coordinated = "rocksandra_client_request_latency_seconds_count";
    assert_eq!(
        sample(
            after,
            &format!("{coordinated}{{scope=\"Write\",cl=\"ONE\"}}")
        ),
        2.0
    );
    assert_eq!(
        sample(
            after,
            &format!("{coordinated}{{scope=\"Read\",cl=\"ONE\"}}")
        ),
        1.0
    );
    for scope in ["Read", "Write", "CASRead", "CASWrite", "RangeSlice"] {
        for family in ["timeouts", "unavailables", "failures"] {
            let series = format!("rocksandra_client_request_{family}_total{{scope=\"{scope}\"}}");
            assert_eq!(sample(after, &series), 0.0, "{series}");
        }
    }
    let table = "{keyspace=\"ks\",table=\"t\"}";
    assert_eq!(
        sample(
            after,
            &format!("rocksandra_table_write_latency_seconds_count{table}")
        ),
        2.0
    );
    assert_eq!(
        sample(
            after,
            &format!("rocksandra_table_read_latency_seconds_count{table}")
        ),
        1.0
    );
    assert!(sample(after, &format!("rocksandra_table_memtable_bytes{table}")) > 0.0);
    // Nothing flushed: no compaction waits for the table.
    for family in [
        "rocksandra_table_pending_compactions",
        "rocksandra_table_pending_compaction_bytes",
    ] {
        assert_eq!(sample(after, &format!("{family}{table}")), 0.0, "{family}");
    }
    // Nothing flushed: a sampled read looked into no SST file.
    assert_eq!(
        sample(
            after,
            &format!("rocksandra_table_sstables_per_read_sum{table}")
        ),
        0.0
    );
    assert!(
        sample(
            after,
            "rocksandra_thread_pool_completed_total{pool=\"Native-Transport-Requests\"}"
        ) >= 7.0
    );
}

// ---------------------------------------------------------------- dashboard

/// Every `rocksandra_*` metric name in `expr`.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("rocksandra_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        names.push(name);
    }
    names
}

/// Whether a series of `text` carries `label`.
fn has_label(text: &str, label: &str) -> bool {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .any(|l| l.contains(&format!("{{{label}=\"")) || l.contains(&format!(",{label}=\"")))
}

/// The labels of every `by (...)` clause in `expr`.
fn grouping_labels(expr: &str) -> Vec<String> {
    expr.split("by (")
        .skip(1)
        .flat_map(|after| {
            let inside = after.split(')').next().unwrap_or_default();
            inside
                .split(',')
                .map(|l| l.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grafana_dashboard_asks_only_for_what_a_node_exposes() {
    let config = Config {
        prometheus_port: Some(0),
        ..Config::default()
    };
    let node = Node::start(config).await;
    // A table read and written, so that its series and the client
    // request latency's per-level series exist.
    let mut client = Client::ready(node.native, ProtocolVersion::V5).await;
    for statement in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
        "INSERT INTO ks.t (k, v) VALUES (1, 10)",
        "SELECT * FROM ks.t WHERE k = 1",
    ] {
        expect_result(client.request(2, query(statement)).await);
    }
    let text = scrape(node.metrics.expect("the endpoint is on")).await;
    let dashboard: serde_json::Value = serde_json::from_str(include_str!(
        "../../../conf/grafana/rocksandra-dashboard.json"
    ))
    .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 10, "{} panels", panels.len());
    let mut exprs: Vec<String> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| t["expr"].as_str().expect("an expr").to_string())
        .collect();
    exprs.extend(
        dashboard["templating"]["list"]
            .as_array()
            .expect("variables")
            .iter()
            .filter_map(|v| v["definition"].as_str().map(str::to_string)),
    );
    let exposed = |name: &str| {
        text.lines()
            .any(|l| l.starts_with(name) && !l.starts_with('#'))
    };
    let mut checked = 0;
    for expr in &exprs {
        for name in metric_names(expr) {
            assert!(exposed(&name), "{name} (in {expr}) is not exposed:\n{text}");
            checked += 1;
        }
        for label in grouping_labels(expr) {
            // `instance` is Prometheus's own; `le` is every histogram's.
            if label == "instance" || label == "le" {
                continue;
            }
            assert!(
                has_label(&text, &label),
                "label {label} (in {expr}) is not exposed"
            );
        }
    }
    assert!(checked >= 40, "only {checked} metric references");
    drop(client);
    node.stop().await;
}
