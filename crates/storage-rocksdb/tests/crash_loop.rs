//! Crash loop: a child process writes in batch-sync mode and is killed with
//! SIGKILL at random points; after each kill the engine is reopened and every
//! acknowledged write must be there.
//!
//! The child is this test binary itself, re-run with only `crash_writer_child`
//! selected and `CRASH_WRITER_DIR` set, so no separately built executable has
//! to be found on disk.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksandra_data::LocalTime;
use rocksandra_storage::api::{Durability, Engine, Mutation, RowUpdate};
use rocksandra_storage::cell::{Cell, ColumnId};
use rocksandra_storage::testkit::{clustering, full_read, pk, tempdir, test_table, SplitMix};
use rocksandra_storage_rocksdb::{open_engine, RocksConfig};

const ITERATIONS: usize = 25;
const DIR_VARIABLE: &str = "CRASH_WRITER_DIR";
const FIRST_ROW_VARIABLE: &str = "CRASH_WRITER_FIRST_ROW";
/// How long the parent waits for the child's first acknowledgement (opening
/// RocksDB with an unoptimised build can be slow on a loaded machine).
const FIRST_ACK_WAIT_MS_MAX: u64 = 60_000;
const NOW: LocalTime = LocalTime(1_700_000_000);

fn batch_config() -> RocksConfig {
    RocksConfig {
        durability: Durability::Batch,
        block_cache_bytes: 4 << 20,
        ..Default::default()
    }
}

fn partition_of(row: i32) -> String {
    format!("k{}", row % 50)
}

/// The child: writes rows from `CRASH_WRITER_FIRST_ROW` on and prints
/// `ack N` after each acknowledged write, until it is killed. Without
/// `CRASH_WRITER_DIR` (an ordinary test run) it does nothing.
#[test]
fn crash_writer_child() {
    let Some(dir) = std::env::var_os(DIR_VARIABLE) else {
        return;
    };
    let first: i32 = std::env::var(FIRST_ROW_VARIABLE)
        .ok()
        .and_then(|n| n.parse().ok())
        .expect("CRASH_WRITER_FIRST_ROW");
    let engine = open_engine(Path::new(&dir), batch_config(), Arc::new(|| NOW)).expect("open");
    let spec = test_table(7);
    engine.create_table(spec.clone()).expect("register table");
    let stdout = std::io::stdout();
    // The test harness may have printed `test crash_writer_child ... `
    // without a newline; start the acks on a line of their own.
    writeln!(stdout.lock()).expect("stdout");
    for i in first.. {
        let mut m = Mutation::new(spec.id, pk(&partition_of(i)));
        let update = RowUpdate {
            cells: vec![Cell::live(
                ColumnId(1),
                i64::from(i),
                i.to_be_bytes().to_vec(),
            )],
            ..Default::default()
        };
        m.rows.push((clustering(i, "r"), update));
        engine.write(&[m], NOW).expect("write");
        let mut out = stdout.lock();
        if writeln!(out, "ack {i}").and_then(|_| out.flush()).is_err() {
            return;
        }
    }
}

/// Runs the child until killed `kill_after` past its first acknowledgement;
/// returns the rows it acknowledged.
fn run_and_kill(dir: &Path, first_row: i32, kill_after: Duration) -> Vec<i32> {
    let exe = std::env::current_exe().expect("current exe");
    let mut child = Command::new(exe)
        .args([
            "crash_writer_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_VARIABLE, dir)
        .env(FIRST_ROW_VARIABLE, first_row.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the crash writer");
    let stdout = child.stdout.take().expect("child stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(n) = line
                .strip_prefix("ack ")
                .and_then(|n| n.parse::<i32>().ok())
            {
                if tx.send(n).is_err() {
                    break;
                }
            }
        }
    });
    let mut acked = Vec::new();
    match rx.recv_timeout(Duration::from_millis(FIRST_ACK_WAIT_MS_MAX)) {
        Ok(n) => acked.push(n),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the crash writer acknowledged nothing: {e}");
        }
    }
    let start = Instant::now();
    while start.elapsed() < kill_after {
        if let Ok(n) = rx.recv_timeout(Duration::from_millis(5)) {
            acked.push(n);
        }
    }
    child.kill().expect("SIGKILL the writer");
    let _ = child.wait();
    let _ = reader.join();
    // Acks printed before the kill count too.
    acked.extend(rx.try_iter());
    acked
}

#[test]
fn acknowledged_writes_survive_kill_dash_nine() {
    let dir = tempdir("crash-loop");
    let mut rng = SplitMix::new(0xC0FFEE);
    let mut next_row = 0i32;
    let mut total_acked = 0usize;
    for iteration in 0..ITERATIONS {
        let kill_after = Duration::from_millis(rng.below(300));
        let acked = run_and_kill(&dir, next_row, kill_after);
        let engine =
            open_engine(&dir, batch_config(), Arc::new(|| NOW)).expect("reopen after crash");
        let spec = test_table(7);
        engine.create_table(spec.clone()).expect("register table");
        for &i in &acked {
            let p = engine
                .read_partition(&full_read(spec.id, pk(&partition_of(i))), NOW)
                .expect("read");
            let found = p.rows.iter().any(|r| {
                r.clustering == clustering(i, "r")
                    && r.content.cells.first().map(|c| c.value.clone())
                        == Some(i.to_be_bytes().to_vec())
            });
            assert!(found, "iteration {iteration}: acknowledged row {i} lost");
        }
        total_acked += acked.len();
        next_row = acked.iter().max().map_or(next_row, |m| m + 1) + 1000;
    }
    eprintln!("{total_acked} acknowledged writes survived {ITERATIONS} kills");
    assert!(
        total_acked > ITERATIONS,
        "the writer acknowledged too few writes to test anything"
    );
    let _ = std::fs::remove_dir_all(dir);
}
