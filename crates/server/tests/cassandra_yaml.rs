//! The `rocksandra` binary started with a Cassandra 5.0-shaped cassandra.yaml
//! (tests/fixtures/cassandra-5.0.yaml, plus a WAL directory): it warns once
//! about the keys it does not use, serves CQL, and writes its log where
//! `commitlog_directory` says.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rocksandra_wire::{ProtocolVersion, Response};

mod common;
use common::{query, Client};

/// A port nothing listens on right now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// Kills the node when the test ends, even on a failed assertion.
struct Node(Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until the node's log (stderr, in `log`) says it serves CQL.
fn wait_until_listening(node: &mut Node, log: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains("listening for CQL clients") {
            return text;
        }
        if let Ok(Some(status)) = node.0.try_wait() {
            panic!("the node exited ({status}):\n{text}");
        }
        assert!(Instant::now() < deadline, "no start in 60 s:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start(config: &Path, data: &Path, native_port: u16, log: &Path) -> Node {
    let storage_port = free_port();
    let stderr = std::fs::File::create(log).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_rocksandra"))
        .arg("--config")
        .arg(config)
        .arg("--data-dir")
        .arg(data)
        .args(["--native-port", &native_port.to_string()])
        .args(["--prometheus-port", "0"])
        .args(["--storage-port", &storage_port.to_string()])
        .args(["--seeds", &format!("127.0.0.1:{storage_port}")])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("the rocksandra binary starts");
    Node(child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cassandra_5_yaml_starts_the_binary_and_serves_cql() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wal = dir.path().join("commitlog");
    let mut yaml = include_str!("fixtures/cassandra-5.0.yaml").to_string();
    yaml.push_str(&format!("commitlog_directory: {}\n", wal.display()));
    let config = dir.path().join("cassandra.yaml");
    std::fs::write(&config, yaml).expect("write the config");
    let (native_port, log) = (free_port(), dir.path().join("node.log"));
    let mut node = start(&config, &dir.path().join("data"), native_port, &log);
    let text = wait_until_listening(&mut node, &log);

    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("keys accepted but not used by Rocksandra"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning:\n{text}");
    for key in [
        "partitioner",
        "concurrent_reads",
        "memtable_allocation_type",
    ] {
        assert!(warnings[0].contains(key), "{key} in {}", warnings[0]);
    }
    assert!(!warnings[0].contains("compaction_throughput"));

    let address = SocketAddr::from(([127, 0, 0, 1], native_port));
    let mut client = Client::ready(address, ProtocolVersion::V4).await;
    for (stream, statement) in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
        "INSERT INTO ks.t (k, v) VALUES (1, 10)",
    ]
    .into_iter()
    .enumerate()
    {
        let response = client.request(stream as i16 + 1, query(statement)).await;
        assert!(matches!(response, Response::Result(_)), "{statement}: {response:?}");
    }
    match client
        .request(9, query("SELECT v FROM ks.t WHERE k = 1"))
        .await
    {
        Response::Result(rocksandra_wire::ResultBody::Rows(rows)) => assert_eq!(rows.rows.len(), 1),
        other => panic!("expected rows, got {other:?}"),
    }
    let wal_files = std::fs::read_dir(&wal).expect("commitlog_directory exists");
    assert!(
        wal_files
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".log")),
        "RocksDB's write-ahead log is in commitlog_directory"
    );
    drop(node);
}
