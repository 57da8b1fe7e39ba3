//! Cases for an engine with a point cache (`KvEngine::with_point_cache`):
//! every way stored entries change must be seen by the next read of a
//! partition that was read (and so cached) before.

use super::*;

/// Runs every case on fresh engines from `make`, which must have a point
/// cache.
pub fn run_point_cache_suite<E: Engine + Sync>(make: &dyn Fn() -> E) {
    case_writes_and_deletions_after_a_read(&make());
    case_ttl_expires_in_a_cached_row(&make());
    case_truncate_and_cleanup_after_a_read(&make());
    case_stream_in_after_a_read_of_an_absent_row(&make(), &make());
    case_purge_after_gc_grace_after_a_read(&make());
    case_readers_see_every_acknowledged_write(&make());
}

fn unclustered<E: Engine>(engine: &E) -> TableSpec {
    let spec = unclustered_table(21);
    engine.create_table(spec.clone()).expect("create table");
    spec
}

fn put(engine: &impl Engine, spec: &TableSpec, key: &str, ts: i64, value: &str) {
    let write = row_write(spec.id, key, vec![], cells(&[(1, ts, value)]));
    engine.write(&[write], NOW).expect("write");
}

/// The value of column 1 of `key`'s row, read twice (a miss, then a hit,
/// which must agree).
fn get(engine: &impl Engine, spec: &TableSpec, key: &str, now: LocalTime) -> Option<String> {
    let read = |_| {
        let partition = engine
            .read_partition(&full_read(spec.id, pk(key)), now)
            .expect("read");
        partition.rows.first().and_then(|row| {
            row.content
                .cells
                .iter()
                .find(|c| c.column == ColumnId(1))
                .map(|c| String::from_utf8_lossy(&c.value).into_owned())
        })
    };
    let first = read(0);
    assert_eq!(read(1), first, "a second read of {key} disagrees");
    first
}

fn case_writes_and_deletions_after_a_read<E: Engine>(engine: &E) {
    let spec = unclustered(engine);
    assert_eq!(get(engine, &spec, "a", NOW), None);
    put(engine, &spec, "a", 10, "one");
    assert_eq!(get(engine, &spec, "a", NOW).as_deref(), Some("one"));
    put(engine, &spec, "a", 20, "two");
    assert_eq!(get(engine, &spec, "a", NOW).as_deref(), Some("two"));
    put(engine, &spec, "a", 15, "older");
    assert_eq!(get(engine, &spec, "a", NOW).as_deref(), Some("two"));
    let mut deletion = Mutation::new(spec.id, pk("a"));
    deletion.partition_deletion = Some(DeletionTime::new(30, NOW.0));
    engine.write(&[deletion], NOW).expect("delete");
    assert_eq!(get(engine, &spec, "a", NOW), None);
    put(engine, &spec, "a", 25, "shadowed");
    assert_eq!(get(engine, &spec, "a", NOW), None);
    put(engine, &spec, "a", 40, "back");
    assert_eq!(get(engine, &spec, "a", NOW).as_deref(), Some("back"));
    assert_eq!(get(engine, &spec, "b", NOW), None, "another partition");
}

fn case_ttl_expires_in_a_cached_row<E: Engine>(engine: &E) {
    let spec = unclustered(engine);
    let update = RowUpdate {
        cells: vec![Cell::expiring(ColumnId(1), 10, 100, NOW, b"t".to_vec())],
        ..Default::default()
    };
    engine
        .write(&[row_write(spec.id, "a", vec![], update)], NOW)
        .expect("write");
    assert_eq!(
        get(engine, &spec, "a", NOW.plus_seconds(99)).as_deref(),
        Some("t")
    );
    assert_eq!(get(engine, &spec, "a", NOW.plus_seconds(100)), None);
}

fn case_truncate_and_cleanup_after_a_read<E: Engine>(engine: &E) {
    let spec = unclustered(engine);
    let keys: Vec<String> = (0..40).map(|p| format!("k{p}")).collect();
    for key in &keys {
        put(engine, &spec, key, 1, "v");
        assert!(get(engine, &spec, key, NOW).is_some());
    }
    let keep = TokenRange {
        start_exclusive: rocksandra_data::Token(0),
        end_inclusive: rocksandra_data::Token(i64::MAX / 2),
    };
    engine.cleanup(spec.id, &[keep]).expect("cleanup");
    for key in &keys {
        let present = get(engine, &spec, key, NOW).is_some();
        assert_eq!(present, keep.contains(pk(key).token), "{key} after cleanup");
    }
    engine.truncate(spec.id).expect("truncate");
    for key in &keys {
        assert_eq!(get(engine, &spec, key, NOW), None, "{key} after truncate");
    }
}

fn case_stream_in_after_a_read_of_an_absent_row<E: Engine>(source: &E, target: &E) {
    let spec = unclustered(source);
    unclustered(target);
    put(source, &spec, "a", 10, "streamed");
    assert_eq!(get(target, &spec, "a", NOW), None);
    let dir = tempdir("point-cache-stream");
    let files = source
        .stream_out(spec.id, TokenRange::full(), &dir)
        .expect("stream out");
    target.stream_in(spec.id, &files).expect("stream in");
    assert_eq!(get(target, &spec, "a", NOW).as_deref(), Some("streamed"));
    let _ = std::fs::remove_dir_all(dir);
}

fn case_purge_after_gc_grace_after_a_read<E: Engine>(engine: &E) {
    let mut spec = unclustered_table(22);
    spec.options.gc_grace_seconds = 60;
    engine.create_table(spec.clone()).expect("create table");
    for (key, deleted_at) in [("old", NOW.0 - 100), ("young", NOW.0)] {
        put(engine, &spec, key, 10, "before");
        let mut deletion = Mutation::new(spec.id, pk(key));
        deletion.partition_deletion = Some(DeletionTime::new(20, deleted_at));
        engine.write(&[deletion], NOW).expect("delete");
        assert_eq!(get(engine, &spec, key, NOW), None);
    }
    engine.compact(spec.id, NOW).expect("compact");
    for key in ["old", "young"] {
        assert_eq!(
            get(engine, &spec, key, NOW),
            None,
            "{key}: purging resurrects nothing"
        );
        put(engine, &spec, key, 15, "late");
    }
    // Past gc_grace the deletion is gone, so a write older than it is
    // visible again, as in Cassandra; within gc_grace it stays hidden.
    assert_eq!(get(engine, &spec, "old", NOW).as_deref(), Some("late"));
    assert_eq!(get(engine, &spec, "young", NOW), None);
}

/// A reader that starts after a write was acknowledged sees it, while
/// writes and reads of the same partitions run on other threads.
fn case_readers_see_every_acknowledged_write<E: Engine + Sync>(engine: &E) {
    use std::sync::atomic::{AtomicI64, Ordering};
    let spec = unclustered(engine);
    let keys = ["x", "y", "z"];
    let acknowledged: Vec<AtomicI64> = keys.iter().map(|_| AtomicI64::new(0)).collect();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for n in 1..=5000i64 {
                let i = n as usize % keys.len();
                put(engine, &spec, keys[i], n, &n.to_string());
                acknowledged[i].store(n, Ordering::SeqCst);
            }
        });
        for _ in 0..2 {
            scope.spawn(|| {
                for round in 0..15000usize {
                    let i = round % keys.len();
                    let floor = acknowledged[i].load(Ordering::SeqCst);
                    let read = engine
                        .read_partition(&full_read(spec.id, pk(keys[i])), NOW)
                        .expect("read");
                    let seen = read
                        .rows
                        .first()
                        .and_then(|r| r.content.cells.first())
                        .and_then(|c| std::str::from_utf8(&c.value).ok()?.parse::<i64>().ok())
                        .unwrap_or(0);
                    assert!(
                        seen >= floor,
                        "{}: saw {seen} after {floor} was acknowledged",
                        keys[i]
                    );
                }
            });
        }
    });
}
