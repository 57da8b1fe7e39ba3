//! Crash loop: a child process writes in batch-sync mode and is killed with
//! SIGKILL at random points; after each kill the engine is reopened and every
//! acknowledged write must be there.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksandra_data::LocalTime;
use rocksandra_storage::api::{Durability, Engine};
use rocksandra_storage::testkit::{clustering, full_read, pk, tempdir, test_table, SplitMix};
use rocksandra_storage_rocksdb::{open_engine, RocksConfig};

const ITERATIONS: usize = 25;

fn crash_writer() -> PathBuf {
    // Test binaries live in target/<profile>/deps; examples in target/<profile>/examples.
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target profile dir");
    profile_dir.join("examples").join("crash_writer")
}

#[test]
fn acknowledged_writes_survive_kill_dash_nine() {
    let writer = crash_writer();
    assert!(writer.exists(), "build the example first: {}", writer.display());
    let dir = tempdir("crash-loop");
    let mut rng = SplitMix::new(0xC0FFEE);
    let mut next_row = 0i32;
    let mut total_acked = 0usize;
    for iteration in 0..ITERATIONS {
        let mut child = Command::new(&writer)
            .arg(&dir)
            .arg(next_row.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn crash_writer");
        let stdout = child.stdout.take().expect("child stdout");
        let kill_after = Duration::from_millis(50 + rng.below(400));
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("ack ").and_then(|n| n.parse::<i32>().ok()) {
                    if tx.send(n).is_err() {
                        break;
                    }
                }
            }
        });
        let start = Instant::now();
        let mut acked = Vec::new();
        while start.elapsed() < kill_after {
            if let Ok(n) = rx.recv_timeout(Duration::from_millis(5)) {
                acked.push(n);
            }
        }
        child.kill().expect("SIGKILL the writer");
        let _ = child.wait();
        let _ = reader.join();
        // Acks already printed before the kill count too.
        acked.extend(rx.try_iter());
        let config = RocksConfig {
            durability: Durability::Batch,
            block_cache_bytes: 4 << 20,
            ..Default::default()
        };
        let engine =
            open_engine(&dir, config, Arc::new(|| LocalTime(1_700_000_000))).expect("reopen after crash");
        let spec = test_table(7);
        engine.create_table(spec.clone()).expect("register table");
        for &i in &acked {
            let p = engine
                .read_partition(&full_read(spec.id, pk(&format!("k{}", i % 50))), LocalTime(1_700_000_000))
                .expect("read");
            let found = p.rows.iter().any(|r| {
                r.clustering == clustering(i, "r")
                    && r.content.cells.first().map(|c| c.value.clone()) == Some(i.to_be_bytes().to_vec())
            });
            assert!(found, "iteration {iteration}: acknowledged row {i} lost");
        }
        total_acked += acked.len();
        next_row = acked.iter().max().map_or(next_row, |m| m + 1) + 1000;
    }
    assert!(total_acked > ITERATIONS, "the writer acknowledged too few writes to test anything");
    let _ = std::fs::remove_dir_all(dir);
}
