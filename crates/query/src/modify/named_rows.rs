//! Which rows an INSERT or UPDATE names by its clustering restrictions:
//! full clustering keys, or in a COMPACT STORAGE table with several
//! clustering columns also a leading part of them (CASSANDRA-7990: Cassandra
//! stores a row whose clustering is a prefix and shows nulls for the rest).
//! Pure functions: the callers bring the table's flag and the slices their
//! restrictions selected.

use rocksandra_storage::Slice;

/// Whether an INSERT that names the first `given` clustering columns of a
/// table and none after them writes a row: only a table whose rows may have
/// a clustering prefix (`Table::allows_clustering_prefix_rows`) takes a
/// prefix, and never an empty one.
pub(super) fn insert_names_row(prefix_rows: bool, given: usize, clustering_count: usize) -> bool {
    given == clustering_count || (prefix_rows && given > 0)
}

/// The clustering of each row that restrictions selecting `slices` name:
/// each slice's key when equalities restricted every clustering column
/// (`exact`), or, in a table whose rows may have a clustering prefix, the
/// prefix of each slice that equalities on its leading columns made. None
/// when a slice is a range of rows (an empty prefix or a slice relation).
pub(super) fn named_rows(
    prefix_rows: bool,
    exact: bool,
    slices: &[Slice],
) -> Option<Vec<Vec<Vec<u8>>>> {
    let names_prefix = |s: &Slice| {
        prefix_rows
            && !s.start.prefix.is_empty()
            && s.start.inclusive
            && !s.start.exact_row
            && s.start == s.end
    };
    if exact || slices.iter().all(names_prefix) {
        Some(slices.iter().map(|s| s.start.prefix.clone()).collect())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_storage::ClusteringBound;

    fn values(v: &[u8]) -> Vec<Vec<u8>> {
        v.iter().map(|b| vec![*b]).collect()
    }

    #[test]
    fn an_insert_names_every_clustering_column_unless_prefix_rows_are_allowed() {
        assert!(insert_names_row(false, 2, 2));
        assert!(!insert_names_row(false, 1, 2));
        assert!(insert_names_row(true, 1, 2));
        assert!(insert_names_row(true, 2, 3));
        assert!(!insert_names_row(true, 0, 2), "an empty prefix is no row");
        assert!(insert_names_row(false, 0, 0), "no clustering columns");
    }

    #[test]
    fn equality_prefixes_name_rows_only_where_prefix_rows_are_allowed() {
        let prefixes = [Slice::prefix(values(&[1])), Slice::prefix(values(&[2]))];
        assert_eq!(named_rows(false, false, &prefixes), None);
        assert_eq!(
            named_rows(true, false, &prefixes),
            Some(vec![values(&[1]), values(&[2])])
        );
    }

    #[test]
    fn exact_keys_are_rows_and_ranges_never_are() {
        let full = [Slice::prefix(values(&[1, 2]))];
        assert_eq!(named_rows(false, true, &full), Some(vec![values(&[1, 2])]));
        assert_eq!(named_rows(true, true, &[]), Some(Vec::new()), "empty IN");
        let range = Slice {
            start: ClusteringBound::around(values(&[1]), false),
            end: ClusteringBound::unbounded(),
        };
        assert_eq!(named_rows(true, false, &[range]), None);
        assert_eq!(named_rows(true, false, &[Slice::all()]), None);
        let exact_row = Slice::row(values(&[1]));
        assert_eq!(named_rows(true, false, &[exact_row]), None);
    }
}
