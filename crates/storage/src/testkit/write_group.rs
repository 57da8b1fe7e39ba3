//! Cases for writes queued in a `WriteGroup` (`engine::group`): held back
//! until the group is committed, seen by every read inside the group's
//! requests, written together, each request failing alone, never lost.

use super::*;
use crate::engine::group::{DirectWrites, WriteGroup, WRITE_GROUP_BYTES_MAX};

/// Runs every case on fresh engines from `make` (with a point cache, so
/// that commits are checked to keep it coherent too).
pub fn run_write_group_suite<E: Engine + Sync>(make: &dyn Fn() -> E) {
    case_queued_writes_wait_for_the_commit(&make());
    case_reads_inside_a_request_see_queued_writes(&make());
    case_each_request_fails_alone(&make());
    case_direct_and_oversized_writes_are_written_at_once(&make());
    case_a_panicking_request_keeps_the_group(&make());
    case_readers_see_every_committed_write(&make());
    case_groups_are_written_together_or_left_whole(&make());
}

fn table<E: Engine>(engine: &E, id: u64) -> TableSpec {
    let spec = unclustered_table(id);
    engine.create_table(spec.clone()).expect("create table");
    spec
}

fn put(engine: &impl Engine, spec: &TableSpec, key: &str, ts: i64, value: &str) {
    let write = row_write(spec.id, key, vec![], cells(&[(1, ts, value)]));
    engine.write(&[write], NOW).expect("write");
}

fn get(engine: &impl Engine, spec: &TableSpec, key: &str) -> Option<String> {
    let partition = engine
        .read_partition(&full_read(spec.id, pk(key)), NOW)
        .expect("read");
    partition.rows.first().and_then(|row| {
        let cell = row.content.cells.iter().find(|c| c.column == ColumnId(1))?;
        Some(String::from_utf8_lossy(&cell.value).into_owned())
    })
}

fn commit(engine: &impl Engine, group: &mut WriteGroup) -> Vec<(i64, StorageError)> {
    group.run(0, || engine.commit_deferred());
    group.take_failures()
}

fn case_queued_writes_wait_for_the_commit<E: Engine>(engine: &E) {
    let spec = table(engine, 31);
    put(engine, &spec, "a", 1, "old");
    assert_eq!(get(engine, &spec, "a").as_deref(), Some("old"), "cached");
    let mut group = WriteGroup::new();
    group.run(1, || put(engine, &spec, "a", 2, "new"));
    group.run(2, || put(engine, &spec, "b", 2, "b"));
    assert!(group.is_pending());
    assert_eq!(
        get(engine, &spec, "a").as_deref(),
        Some("old"),
        "not yet written"
    );
    assert_eq!(get(engine, &spec, "b"), None, "not yet written");
    assert!(commit(engine, &mut group).is_empty());
    assert!(!group.is_pending());
    assert_eq!(get(engine, &spec, "a").as_deref(), Some("new"));
    assert_eq!(get(engine, &spec, "b").as_deref(), Some("b"));
}

fn case_reads_inside_a_request_see_queued_writes<E: Engine>(engine: &E) {
    let spec = table(engine, 32);
    let mut group = WriteGroup::new();
    group.run(1, || put(engine, &spec, "a", 1, "one"));
    let plain = group.run(2, || get(engine, &spec, "a"));
    assert_eq!(plain, None, "a plain read: the write is not answered yet");
    assert!(group.is_pending(), "a plain read leaves the group queued");
    let seen = group.run(3, || {
        let _direct = DirectWrites::hold();
        get(engine, &spec, "a")
    });
    assert_eq!(seen.as_deref(), Some("one"), "a read-before-write read");
    assert!(!group.is_pending(), "the read wrote the group");
    group.run(4, || put(engine, &spec, "a", 2, "two"));
    let scanned = group.run(5, || {
        let _direct = DirectWrites::hold();
        let scan = RangeScan {
            table: spec.id,
            token_start: rocksandra_data::Token(i64::MIN),
            token_end: rocksandra_data::Token(i64::MAX),
            resume_after: None,
            include_static: false,
            per_partition_limit: 0,
            row_limit: 10,
        };
        engine.scan(&scan, NOW).expect("scan").partitions.len()
    });
    assert_eq!(scanned, 1, "a scan inside a request");
    assert!(!group.is_pending(), "the scan wrote the group");
    assert_eq!(get(engine, &spec, "a").as_deref(), Some("two"));
    assert!(commit(engine, &mut group).is_empty());
}

fn case_each_request_fails_alone<E: Engine>(engine: &E) {
    let kept = table(engine, 33);
    let dropped = table(engine, 34);
    let mut group = WriteGroup::new();
    group.run(7, || put(engine, &kept, "a", 1, "kept"));
    group.run(8, || put(engine, &dropped, "a", 1, "lost"));
    group.run(9, || put(engine, &kept, "b", 1, "kept too"));
    engine.drop_table(dropped.id).expect("drop");
    let failures = commit(engine, &mut group);
    let failed: Vec<i64> = failures.iter().map(|(request, _)| *request).collect();
    assert_eq!(failed, vec![8], "{failures:?}");
    assert_eq!(get(engine, &kept, "a").as_deref(), Some("kept"));
    assert_eq!(get(engine, &kept, "b").as_deref(), Some("kept too"));
}

fn case_direct_and_oversized_writes_are_written_at_once<E: Engine>(engine: &E) {
    let spec = table(engine, 35);
    let mut group = WriteGroup::new();
    group.run(1, || {
        let _direct = DirectWrites::hold();
        put(engine, &spec, "a", 1, "direct");
    });
    assert!(!group.is_pending());
    assert_eq!(get(engine, &spec, "a").as_deref(), Some("direct"));
    let big = "x".repeat(WRITE_GROUP_BYTES_MAX / 2 + 1);
    group.run(2, || put(engine, &spec, "b", 1, &big));
    assert!(group.is_pending(), "under the bound: queued");
    group.run(3, || put(engine, &spec, "c", 1, &big));
    assert!(!group.is_pending(), "over the bound: written");
    assert_eq!(get(engine, &spec, "b").map(|v| v.len()), Some(big.len()));
    assert_eq!(get(engine, &spec, "c").map(|v| v.len()), Some(big.len()));
    assert!(commit(engine, &mut group).is_empty());
}

fn case_a_panicking_request_keeps_the_group<E: Engine>(engine: &E) {
    let spec = table(engine, 36);
    let mut group = WriteGroup::new();
    group.run(1, || put(engine, &spec, "a", 1, "kept"));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        group.run(2, || panic!("a request panics"))
    }));
    assert!(panicked.is_err());
    assert!(group.is_pending(), "the group came back");
    assert!(commit(engine, &mut group).is_empty());
    assert_eq!(get(engine, &spec, "a").as_deref(), Some("kept"));
}

/// One thread writes in groups of 1 to 7 requests, acknowledging a group's
/// writes only after its commit; two threads read: none may see less than
/// an acknowledged write (the point cache included).
fn case_readers_see_every_committed_write<E: Engine + Sync>(engine: &E) {
    use std::sync::atomic::{AtomicI64, Ordering};
    let spec = table(engine, 37);
    let keys = ["x", "y", "z"];
    let acknowledged: Vec<AtomicI64> = keys.iter().map(|_| AtomicI64::new(0)).collect();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut group = WriteGroup::new();
            let mut n = 0i64;
            for size in (0..1500).map(|g| g % 7 + 1) {
                let first = n + 1;
                for _ in 0..size {
                    n += 1;
                    let i = n as usize % keys.len();
                    group.run(n, || put(engine, &spec, keys[i], n, &n.to_string()));
                }
                assert!(commit(engine, &mut group).is_empty());
                for m in first..=n {
                    acknowledged[m as usize % keys.len()].fetch_max(m, Ordering::SeqCst);
                }
            }
        });
        for _ in 0..2 {
            scope.spawn(|| {
                for round in 0..15000usize {
                    let i = round % keys.len();
                    let floor = acknowledged[i].load(Ordering::SeqCst);
                    let seen = get(engine, &spec, keys[i]).map_or(0, |v| v.parse().unwrap_or(0));
                    assert!(seen >= floor, "{}: saw {seen} after {floor}", keys[i]);
                }
            });
        }
    });
}

/// Several connections' groups go to the store in one write when they
/// can; when that write fails, every entry is back in its group, and each
/// group's commit then gives each request its own outcome.
fn case_groups_are_written_together_or_left_whole<E: Engine>(engine: &E) {
    let kept = table(engine, 38);
    let dropped = table(engine, 39);
    let mut groups = vec![WriteGroup::new(), WriteGroup::new(), WriteGroup::new()];
    groups[0].run(1, || put(engine, &kept, "a", 1, "a"));
    groups[2].run(1, || put(engine, &kept, "b", 1, "b"));
    assert!(engine.write_groups_together(&mut groups));
    assert!(groups.iter().all(|g| !g.is_pending()), "written");
    assert_eq!(get(engine, &kept, "a").as_deref(), Some("a"));
    assert_eq!(get(engine, &kept, "b").as_deref(), Some("b"));
    assert!(
        !engine.write_groups_together(&mut groups),
        "nothing to write"
    );

    groups[0].run(1, || put(engine, &kept, "c", 2, "c"));
    groups[1].run(1, || put(engine, &dropped, "d", 2, "lost"));
    groups[1].run(2, || put(engine, &kept, "e", 2, "e"));
    engine.drop_table(dropped.id).expect("drop");
    assert!(
        !engine.write_groups_together(&mut groups),
        "one entry fails"
    );
    assert!(groups[0].is_pending() && groups[1].is_pending(), "put back");
    assert_eq!(get(engine, &kept, "c"), None, "nothing written");
    assert!(commit(engine, &mut groups[0]).is_empty());
    let failed: Vec<i64> = commit(engine, &mut groups[1])
        .iter()
        .map(|(r, _)| *r)
        .collect();
    assert_eq!(failed, vec![1], "only the request on the dropped table");
    assert_eq!(get(engine, &kept, "c").as_deref(), Some("c"));
    assert_eq!(get(engine, &kept, "e").as_deref(), Some("e"));
}
