//! Cases for rows whose clustering is a prefix (`TableOptions::
//! clustering_prefix_rows`, a COMPACT STORAGE table's rows that leave out
//! trailing clustering columns): written only where the table allows them,
//! read back in clustering order before the rows extending them (in ASC
//! and DESC columns alike), selected by exact-row bounds without their
//! extensions, covered by range tombstones over their prefix, and resumed
//! after by a paged scan.

use super::*;

pub(super) fn run<E: Engine>(make: &dyn Fn() -> E) {
    case_prefix_rows_only_where_allowed(&make());
    case_prefix_rows_sort_first_and_read_back(&make());
    case_exact_bounds_and_tombstones(&make());
    case_scan_resumes_after_a_prefix_row(&make());
}

/// `test_table` (int ASC, text DESC) with prefix rows allowed.
fn prefix_table<E: Engine>(engine: &E, id: u64) -> TableSpec {
    let mut spec = test_table(id);
    spec.options.clustering_prefix_rows = true;
    engine.create_table(spec.clone()).expect("create table");
    spec
}

fn first(c1: i32) -> Vec<Vec<u8>> {
    vec![c1.to_be_bytes().to_vec()]
}

fn write<E: Engine>(engine: &E, spec: &TableSpec, c: Vec<Vec<u8>>, value: &str) {
    let w = row_write(spec.id, "a", c, cells(&[(1, 10, value)]));
    engine.write(&[w], NOW).expect("write");
}

fn clusterings(p: &Partition) -> Vec<Vec<Vec<u8>>> {
    p.rows.iter().map(|r| r.clustering.clone()).collect()
}

fn case_prefix_rows_only_where_allowed<E: Engine>(engine: &E) {
    let plain = test_table(21);
    engine.create_table(plain.clone()).expect("create table");
    for c in [first(1), Vec::new()] {
        let w = row_write(plain.id, "a", c, cells(&[(1, 10, "v")]));
        assert!(matches!(
            engine.write(&[w], NOW),
            Err(StorageError::Invalid(_))
        ));
    }
    let spec = prefix_table(engine, 22);
    let empty = row_write(spec.id, "a", Vec::new(), cells(&[(1, 10, "v")]));
    assert!(matches!(
        engine.write(&[empty], NOW),
        Err(StorageError::Invalid(_))
    ));
    write(engine, &spec, first(1), "p");
    assert_eq!(clusterings(&read_full(engine, &spec, "a")), vec![first(1)]);
}

fn case_prefix_rows_sort_first_and_read_back<E: Engine>(engine: &E) {
    let spec = prefix_table(engine, 23);
    write(engine, &spec, clustering(1, "b"), "1b");
    write(engine, &spec, clustering(1, ""), "1-");
    write(engine, &spec, first(1), "1");
    write(engine, &spec, first(0), "0");
    write(engine, &spec, clustering(2, "a"), "2a");
    let expected = vec![
        first(0),
        first(1),
        clustering(1, "b"),
        clustering(1, ""),
        clustering(2, "a"),
    ];
    assert_eq!(clusterings(&read_full(engine, &spec, "a")), expected);
    let mut reversed = full_read(spec.id, pk("a"));
    reversed.reversed = true;
    let p = engine.read_partition(&reversed, NOW).expect("read");
    let mut backwards = expected.clone();
    backwards.reverse();
    assert_eq!(clusterings(&p), backwards);
    let mut one = full_read(spec.id, pk("a"));
    one.slices = vec![Slice::prefix(first(1))];
    let p = engine.read_partition(&one, NOW).expect("read");
    assert_eq!(clusterings(&p), expected[1..4].to_vec());
}

fn case_exact_bounds_and_tombstones<E: Engine>(engine: &E) {
    let spec = prefix_table(engine, 24);
    write(engine, &spec, first(1), "1");
    write(engine, &spec, clustering(1, "b"), "1b");
    let mut exact = full_read(spec.id, pk("a"));
    exact.slices = vec![Slice::row(first(1))];
    let p = engine.read_partition(&exact, NOW).expect("read");
    assert_eq!(clusterings(&p), vec![first(1)]);
    exact.slices = vec![Slice {
        start: ClusteringBound::after_row(first(1)),
        end: ClusteringBound::unbounded(),
    }];
    let p = engine.read_partition(&exact, NOW).expect("read");
    assert_eq!(clusterings(&p), vec![clustering(1, "b")]);
    // A range deletion of everything with c1 = 1 and c2 > 'c' (DESC: the
    // start of c1 = 1 up to 'c') covers the prefix row, not 'b'.
    let mut range = Mutation::new(spec.id, pk("a"));
    range.range_tombstones.push(RangeTombstone {
        start: ClusteringBound::around(first(1), true),
        end: ClusteringBound::around(clustering(1, "c"), false),
        deletion: DeletionTime::new(20, NOW.0),
    });
    engine.write(&[range], NOW).expect("delete");
    assert_eq!(
        clusterings(&read_full(engine, &spec, "a")),
        vec![clustering(1, "b")]
    );
}

fn case_scan_resumes_after_a_prefix_row<E: Engine>(engine: &E) {
    let spec = prefix_table(engine, 25);
    write(engine, &spec, first(1), "1");
    write(engine, &spec, clustering(1, "b"), "1b");
    write(engine, &spec, clustering(2, "a"), "2a");
    let mut scan = full_scan(spec.id);
    scan.row_limit = 1;
    let mut seen = Vec::new();
    loop {
        let page = engine.scan(&scan, NOW).expect("scan");
        seen.extend(page.partitions.iter().flat_map(clusterings));
        match page.next {
            Some(next) => scan.resume_after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, vec![first(1), clustering(1, "b"), clustering(2, "a")]);
}
