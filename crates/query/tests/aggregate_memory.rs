//! An aggregate holds one batch of rows in memory, not every row it folds:
//! the peak of live heap bytes during a `SELECT count(*), sum(n), max(v)`
//! and a `GROUP BY` over 20,000 rows of 1 KB (about 20 MB) stays far below
//! the rows' size. Before aggregates were folded a batch at a time, the
//! whole table was read into memory first. An unpaged read of a few
//! columns holds its result and one batch, not the rows read whole.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod common;
use common::memory_executor as executor;
use rocksandra_query::Request;
use rocksandra_wire::ResultBody;

struct Tracking;

static TRACKING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grow(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if TRACKING.load(Ordering::Relaxed) {
            grow(layout.size());
        }
        // SAFETY: the caller's layout contract is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if TRACKING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(
                layout.size().min(LIVE.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
        }
        // SAFETY: `ptr` came from `alloc` above, that is from System.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if TRACKING.load(Ordering::Relaxed) {
            grow(new_size);
            LIVE.fetch_sub(
                layout.size().min(LIVE.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
        }
        // SAFETY: as for `dealloc`, with System's realloc contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

#[test]
fn an_aggregate_holds_one_batch_of_rows_not_the_table() {
    let executor = executor();
    let run = |cql: &str| executor.query(cql, &Request::default()).expect(cql);
    run("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    run("CREATE TABLE ks.t (p int, c int, n int, v text, PRIMARY KEY (p, c))");
    let value = "x".repeat(1000);
    const ROWS: i32 = 20_000;
    for i in 0..ROWS {
        run(&format!(
            "INSERT INTO ks.t (p, c, n, v) VALUES ({}, {i}, {i}, '{value}')",
            i % 7
        ));
    }
    let table_bytes = ROWS as usize * value.len();
    LIVE.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    TRACKING.store(true, Ordering::SeqCst);
    let outcome = run("SELECT count(*), sum(n), max(v) FROM ks.t");
    TRACKING.store(false, Ordering::SeqCst);
    let ResultBody::Rows(rows) = outcome.body else {
        panic!("rows");
    };
    let row = &rows.rows[0];
    let int = |i: usize| row[i].as_deref().map(|b| b.to_vec());
    assert_eq!(int(0), Some(i64::from(ROWS).to_be_bytes().to_vec()));
    let sum: i32 = (0..ROWS).sum();
    assert_eq!(int(1), Some(sum.to_be_bytes().to_vec()));
    let peak = PEAK.load(Ordering::SeqCst);
    println!("peak heap during the aggregate: {peak} bytes (rows: {table_bytes} bytes)");
    assert!(
        peak < table_bytes / 4,
        "the aggregate held {peak} bytes at its peak, for {table_bytes} bytes of rows"
    );

    // GROUP BY: 7 groups of about 2,900 rows each, folded as they come.
    LIVE.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    TRACKING.store(true, Ordering::SeqCst);
    let outcome = run("SELECT p, count(*), max(v) FROM ks.t GROUP BY p");
    TRACKING.store(false, Ordering::SeqCst);
    let ResultBody::Rows(rows) = outcome.body else {
        panic!("rows");
    };
    assert_eq!(rows.rows.len(), 7);
    let peak = PEAK.load(Ordering::SeqCst);
    println!("peak heap during the GROUP BY: {peak} bytes (rows: {table_bytes} bytes)");
    assert!(
        peak < table_bytes / 4,
        "the GROUP BY held {peak} bytes at its peak, for {table_bytes} bytes of rows"
    );

    // An unpaged read of the keys turns each batch into result rows before
    // reading the next: it holds the keys, not every row read whole.
    LIVE.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    TRACKING.store(true, Ordering::SeqCst);
    let outcome = run("SELECT p, c FROM ks.t");
    TRACKING.store(false, Ordering::SeqCst);
    let ResultBody::Rows(rows) = outcome.body else {
        panic!("rows");
    };
    assert_eq!(rows.rows.len(), ROWS as usize);
    assert!(rows.metadata.paging_state.is_none());
    let peak = PEAK.load(Ordering::SeqCst);
    println!("peak heap during the unpaged read: {peak} bytes (rows: {table_bytes} bytes)");
    assert!(
        peak < table_bytes / 2,
        "the unpaged read held {peak} bytes at its peak, for {table_bytes} bytes of rows"
    );
}
