//! Criterion benches of the engine on RocksDB: point reads served from the
//! block cache and from outside it (a table with clustering columns, read
//! through an iterator, and one without, the `emp` shape, read by point
//! lookups, from the block cache or from the engine's point cache),
//! single-row writes (WAL written, not synced: the periodic mode) alone or
//! 32 to a `WriteGroup`, a 100-row clustering slice, and the raw RocksDB
//! get underneath for comparison. Results: docs/benchmarks/.
//!
//! Run with the machine's RocksDB library:
//! `. scripts/rocksdb-env.sh && cargo bench -p rocksandra-storage-rocksdb`

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rocksandra_data::LocalTime;
use rocksandra_storage::api::{
    ClusteringBound, Durability, Engine, Mutation, PartitionKey, PartitionRead, RowUpdate, Slice,
    TableOptions, TableSpec,
};
use rocksandra_storage::cell::{Cell, ColumnId, LivenessInfo};
use rocksandra_storage::kv::KvStore;
use rocksandra_storage::testkit::{clustering, tempdir, test_table, unclustered_table};
use rocksandra_storage::KvEngine;
use rocksandra_storage_rocksdb::{open_engine, RocksConfig, RocksStore};

const NOW: LocalTime = LocalTime(1_700_000_000);
/// Rows of about 1 KB (three 300-byte cells), as the benchmark's `emp` table.
const CELL_BYTES: usize = 300;

struct Bench {
    engine: KvEngine<RocksStore>,
    spec: TableSpec,
    dir: PathBuf,
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn open(tag: &str, block_cache_bytes: usize) -> Bench {
    open_table(tag, block_cache_bytes, test_table(1))
}

/// A table without clustering columns (`emp`'s shape).
fn open_unclustered(tag: &str, block_cache_bytes: usize) -> Bench {
    open_table(tag, block_cache_bytes, unclustered_table(1))
}

fn open_table(tag: &str, block_cache_bytes: usize, spec: TableSpec) -> Bench {
    open_with(tag, block_cache_bytes, 0, spec)
}

/// `open_table` with a point cache of `point_cache_bytes` (the server's
/// default is a quarter of the block cache).
fn open_with(
    tag: &str,
    block_cache_bytes: usize,
    point_cache_bytes: usize,
    mut spec: TableSpec,
) -> Bench {
    let dir = tempdir(tag);
    let config = RocksConfig {
        durability: Durability::Periodic { period_ms: 10_000 },
        block_cache_bytes,
        point_cache_bytes,
        ..Default::default()
    };
    let engine = open_engine(&dir, config, Arc::new(|| NOW)).expect("open");
    spec.options = TableOptions::default();
    engine.create_table(spec.clone()).expect("create");
    Bench { engine, spec, dir }
}

fn key(i: u64) -> PartitionKey {
    PartitionKey::new(format!("employee-{i:010}").into_bytes())
}

fn row(timestamp: i64, cell_bytes: usize) -> RowUpdate {
    RowUpdate {
        liveness: Some(LivenessInfo::new(timestamp, 0, 0)),
        cells: (1..=3)
            .map(|c| Cell::live(ColumnId(c), timestamp, vec![b'a' + c as u8; cell_bytes]))
            .collect(),
        ..Default::default()
    }
}

/// The clustering of the one row of each partition.
fn row_clustering(spec: &TableSpec) -> Vec<Vec<u8>> {
    if spec.clustering.is_empty() {
        Vec::new()
    } else {
        clustering(1, "a")
    }
}

fn one_row(spec: &TableSpec, partition: u64, timestamp: i64) -> Mutation {
    let mut m = Mutation::new(spec.id, key(partition));
    m.rows
        .push((row_clustering(spec), row(timestamp, CELL_BYTES)));
    m
}

/// `partitions` partitions of one ~1 KB row, flushed to SST files.
fn load(bench: &Bench, partitions: u64) {
    for chunk in (0..partitions).collect::<Vec<_>>().chunks(1000) {
        let batch: Vec<Mutation> = chunk.iter().map(|&p| one_row(&bench.spec, p, 1)).collect();
        bench.engine.write(&batch, NOW).expect("load");
    }
    bench.engine.flush().expect("flush");
    bench.engine.compact(bench.spec.id, NOW).expect("compact");
}

fn point_read(spec: &TableSpec, partition: u64) -> PartitionRead {
    PartitionRead {
        table: spec.id,
        partition: key(partition),
        slices: vec![Slice::prefix(row_clustering(spec))],
        reversed: false,
        include_static: true,
        row_limit: 0,
    }
}

/// A cheap deterministic sequence over `0..n` (splitmix64).
struct Keys(u64);
impl Keys {
    fn next_below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// Reads `bench`'s first `partitions` partitions (every one holds a row),
/// warmed first when `warm`, as the bench `name`.
fn bench_point_reads(c: &mut Criterion, name: &str, bench: &Bench, partitions: u64, warm: bool) {
    if warm {
        for p in 0..partitions {
            bench
                .engine
                .read_partition(&point_read(&bench.spec, p), NOW)
                .expect("warm");
        }
    }
    let mut keys = Keys(partitions);
    c.bench_function(name, |b| {
        b.iter(|| {
            let p = keys.next_below(partitions);
            let partition = bench
                .engine
                .read_partition(&point_read(&bench.spec, p), NOW)
                .expect("read");
            assert_eq!(partition.rows.len(), 1);
            black_box(partition)
        })
    });
}

/// Every stored key of `bench`'s table, in order.
fn stored_keys(bench: &Bench) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let everything = rocksandra_storage::kv::KeyRange {
        start: Vec::new(),
        end: None,
    };
    bench
        .engine
        .store()
        .scan(bench.spec.id, &everything, false, &mut |k, _| {
            out.push(k.to_vec());
            std::ops::ControlFlow::Continue(())
        })
        .expect("scan");
    out
}

/// RocksDB gets of `bench`'s stored keys at random (warmed by the scan
/// that lists them), as the bench `name`: the floor under a point read.
fn bench_raw_gets(c: &mut Criterion, name: &str, bench: &Bench) {
    let keys = stored_keys(bench);
    let store = bench.engine.store();
    let mut next = Keys(1);
    c.bench_function(name, |b| {
        b.iter(|| {
            let k = &keys[next.next_below(keys.len() as u64) as usize];
            black_box(store.get(bench.spec.id, k).expect("get"))
        })
    });
}

/// Point reads of a table without clustering columns: one batched MultiGet
/// of the partition header and the row.
fn unclustered_reads(c: &mut Criterion) {
    // Block-cache hit: 10,000 rows (~10 MB, within the CPU's caches) and
    // 200,000 (~200 MB, as the benchmark's `emp` table, mostly outside).
    let hot = open_unclustered("bench-hot-emp", 256 << 20);
    load(&hot, 10_000);
    let name = "read/point without clustering, block-cache hit";
    bench_point_reads(c, name, &hot, 10_000, true);
    drop(hot);
    let big = open_unclustered("bench-big-emp", 1 << 30);
    load(&big, 200_000);
    let name = "read/point without clustering, 200,000 rows, block-cache hit";
    bench_point_reads(c, name, &big, 200_000, true);
    bench_raw_gets(
        c,
        "read/raw RocksDB get, 200,000 rows, block-cache hit",
        &big,
    );
    drop(big);
    let cached = open_with("bench-cached-emp", 1 << 30, 512 << 20, unclustered_table(1));
    load(&cached, 200_000);
    let name = "read/point without clustering, 200,000 rows, point-cache hit";
    bench_point_reads(c, name, &cached, 200_000, true);
    drop(cached);
    let cold = open_unclustered("bench-cold-emp", 8 << 20);
    load(&cold, 200_000);
    let name = "read/point without clustering, block-cache miss";
    bench_point_reads(c, name, &cold, 200_000, false);
}

fn reads(c: &mut Criterion) {
    // Block-cache hit: 10,000 rows (~10 MB), a 256 MiB cache, warmed.
    let hot = open("bench-hot", 256 << 20);
    load(&hot, 10_000);
    bench_point_reads(c, "read/point, block-cache hit", &hot, 10_000, true);
    let mut keys = Keys(1);
    c.bench_function("read/point of a missing partition (bloom filter)", |b| {
        b.iter(|| {
            let p = 1_000_000 + keys.next_below(1_000_000);
            let partition = hot
                .engine
                .read_partition(&point_read(&hot.spec, p), NOW)
                .expect("read");
            assert!(partition.rows.is_empty());
            black_box(partition)
        })
    });
    bench_raw_gets(c, "read/raw RocksDB get, block-cache hit", &hot);
    drop(hot);

    // Block-cache miss: 200,000 rows (~200 MB) against an 8 MiB cache, so
    // nearly every read loads its blocks (from the OS page cache).
    let cold = open("bench-cold", 8 << 20);
    load(&cold, 200_000);
    bench_point_reads(c, "read/point, block-cache miss", &cold, 200_000, false);
}

fn writes(c: &mut Criterion) {
    let bench = open("bench-write", 64 << 20);
    let mut n = 0u64;
    c.bench_function("write/one 1 KB row, WAL not synced", |b| {
        b.iter(|| {
            n += 1;
            bench
                .engine
                .write(&[one_row(&bench.spec, n, n as i64)], NOW)
                .expect("write")
        })
    });
    // As a connection's turn writes its inline requests (`WriteGroup`):
    // 32 rows queued, then one store write; the time is per row.
    let mut group = rocksandra_storage::WriteGroup::new();
    c.bench_function("write/one 1 KB row of 32 in a WriteGroup, per row", |b| {
        b.iter_custom(|rows| {
            let start = std::time::Instant::now();
            for i in 0..rows {
                n += 1;
                let write = one_row(&bench.spec, n, n as i64);
                group.run(i as i64, || {
                    bench.engine.write(&[write], NOW).expect("queue")
                });
                if i % 32 == 31 || i + 1 == rows {
                    group.run(0, || bench.engine.commit_deferred());
                    assert!(group.take_failures().is_empty());
                }
            }
            start.elapsed()
        })
    });
}

fn slices(c: &mut Criterion) {
    let bench = open("bench-slice", 256 << 20);
    let mut m = Mutation::new(bench.spec.id, key(0));
    for i in 0..1000 {
        m.rows.push((clustering(i, "row"), row(1, 30)));
    }
    bench.engine.write(&[m], NOW).expect("write");
    bench.engine.flush().expect("flush");
    bench.engine.compact(bench.spec.id, NOW).expect("compact");
    let read = PartitionRead {
        table: bench.spec.id,
        partition: key(0),
        slices: vec![Slice {
            start: ClusteringBound::around(clustering(450, "")[..1].to_vec(), true),
            end: ClusteringBound::unbounded(),
        }],
        reversed: false,
        include_static: false,
        row_limit: 100,
    };
    c.bench_function("read/slice of 100 rows from a 1,000-row partition", |b| {
        b.iter(|| {
            let partition = bench.engine.read_partition(&read, NOW).expect("read");
            assert_eq!(partition.rows.len(), 100);
            black_box(partition)
        })
    });
}

criterion_group!(benches, reads, unclustered_reads, writes, slices);
criterion_main!(benches);
