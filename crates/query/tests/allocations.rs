//! Heap allocations of a prepared single-row read of the benchmark's `emp`
//! table through the executor (in-memory storage): a count that does not
//! depend on the machine's load, kept under a ceiling so that the read
//! path does not quietly grow new allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
mod common;
use common::memory_executor as executor;
use rocksandra_query::Request;
use rocksandra_wire::{ResultBody, Value};

/// The ceiling: the count measured when it was last lowered, and no more.
const ALLOCATIONS_PER_READ_MAX: f64 = 16.0;

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's layout contract is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, that is from System.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as for `dealloc`, with System's realloc contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn text(s: &str) -> Value {
    Value::Bytes(Bytes::copy_from_slice(s.as_bytes()))
}

#[test]
fn a_prepared_point_read_allocates_little() {
    let executor = executor();
    for cql in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.emp (emp_uname text PRIMARY KEY, emp_dept text, emp_first text, emp_last text)",
    ] {
        executor.query(cql, &Request::default()).expect("schema");
    }
    let insert = executor
        .prepare(
            "INSERT INTO ks.emp (emp_uname, emp_dept, emp_first, emp_last) VALUES (?, ?, ?, ?)",
            None,
        )
        .expect("prepares");
    let column = "x".repeat(300);
    for i in 0..100 {
        let request = Request {
            values: vec![
                text(&format!("emp-{i:012}")),
                text(&column),
                text(&column),
                text(&column),
            ],
            ..Request::default()
        };
        executor.execute(&insert.id, request).expect("inserts");
    }
    let select = executor
        .prepare(
            "SELECT emp_uname, emp_dept, emp_first, emp_last FROM ks.emp WHERE emp_uname = ?",
            None,
        )
        .expect("prepares");
    let prepared = executor.prepared(&select.id).expect("cached");
    const READS: u64 = 1000;
    let requests: Vec<Request> = (0..READS)
        .map(|i| Request {
            values: vec![text(&format!("emp-{:012}", i % 100))],
            skip_metadata: true,
            ..Request::default()
        })
        .collect();
    COUNTING.store(true, Ordering::SeqCst);
    for request in requests {
        let outcome = executor
            .execute_prepared(&prepared, request)
            .expect("reads");
        let ResultBody::Rows(rows) = outcome.body else {
            panic!("rows");
        };
        assert_eq!(rows.rows.len(), 1);
    }
    COUNTING.store(false, Ordering::SeqCst);
    let per_read = ALLOCATIONS.load(Ordering::SeqCst) as f64 / READS as f64;
    println!("allocations per prepared point read: {per_read:.2}");
    // 16 on 2026-11-29: 30 before the cell values were moved into the rows
    // instead of copied, 26 before a point read stopped building its
    // slice's bound keys, 22 before its header and row keys were built in
    // one buffer (`PointKeys`) and its partition key moved instead of
    // copied (bound value to key, last row's key), 17 before a one-column
    // partition key stopped being split into a list of components; a new
    // allocation on this path fails here.
    assert!(
        per_read <= ALLOCATIONS_PER_READ_MAX,
        "{per_read} allocations per read"
    );
}
