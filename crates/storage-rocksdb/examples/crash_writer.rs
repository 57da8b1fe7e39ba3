//! Child process of the crash-loop test: writes rows in batch-sync mode and
//! prints `ack N` after each acknowledged write, until it is killed.
//! Usage: crash_writer DIR FIRST_ROW

use std::io::Write;
use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::api::{Durability, Engine, Mutation, RowUpdate};
use rocksandra_storage::cell::{Cell, ColumnId};
use rocksandra_storage::testkit::{clustering, pk, test_table};
use rocksandra_storage_rocksdb::{open_engine, RocksConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(first)) = (args.next(), args.next()) else {
        eprintln!("usage: crash_writer DIR FIRST_ROW");
        std::process::exit(2);
    };
    let first: i32 = first.parse().unwrap_or(0);
    let config = RocksConfig {
        durability: Durability::Batch,
        block_cache_bytes: 4 << 20,
        ..Default::default()
    };
    let engine = match open_engine(dir.as_ref(), config, Arc::new(|| LocalTime(1_700_000_000))) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    let spec = test_table(7);
    let _ = engine.create_table(spec.clone());
    let stdout = std::io::stdout();
    for i in first.. {
        let mut m = Mutation::new(spec.id, pk(&format!("k{}", i % 50)));
        let update = RowUpdate {
            cells: vec![Cell::live(ColumnId(1), i64::from(i), i.to_be_bytes().to_vec())],
            ..Default::default()
        };
        m.rows.push((clustering(i, "r"), update));
        if let Err(e) = engine.write(&[m], LocalTime(1_700_000_000)) {
            eprintln!("write failed: {e}");
            std::process::exit(1);
        }
        let mut out = stdout.lock();
        if writeln!(out, "ack {i}").and_then(|_| out.flush()).is_err() {
            std::process::exit(0);
        }
    }
}
