//! `system.size_estimates` and `system.table_estimates`: per table of the
//! user keyspaces, the estimated partitions and their mean size in each of
//! this node's primary token ranges, from the storage engine's figures
//! (Cassandra's `SizeEstimatesRecorder`, computed when read).

use rocksandra_data::token::Token;
use rocksandra_data::Value;
use rocksandra_storage::{TableId, TableStorageStats};

use super::{schema_keyspaces, Cells};
use crate::schema::{is_system_keyspace, Schema};
use crate::NodeInfo;

/// A token range `(start, end]`, not wrapping; `end == Token::MIN` ends at
/// the top of the ring, as Cassandra writes an unwrapped range.
type Range = (i64, i64);

/// The primary ranges of `local` among `ring` (every node's tokens): for
/// each local token, from the token before it. A range that wraps is cut
/// in two at the minimum token, as Cassandra's `Range.unwrap`.
pub fn primary_ranges(local: &[i64], ring: &[i64]) -> Vec<Range> {
    let mut ring: Vec<i64> = ring.to_vec();
    ring.sort_unstable();
    ring.dedup();
    let mut out = Vec::new();
    for &end in local {
        let Ok(at) = ring.binary_search(&end) else {
            continue;
        };
        let start = ring[(at + ring.len() - 1) % ring.len()];
        if start < end {
            out.push((start, end));
        } else {
            // Wraps (or a single token owns the whole ring).
            out.push((start, Token::MIN.0));
            if end != Token::MIN.0 {
                out.push((Token::MIN.0, end));
            }
        }
    }
    out.sort_unstable();
    out
}

/// The share of the ring a range covers.
fn ring_share((start, end): Range) -> f64 {
    let width = if end == Token::MIN.0 {
        (i64::MAX as i128) - (start as i128) + 1
    } else {
        (end as i128) - (start as i128)
    };
    width as f64 / 2f64.powi(64)
}

/// A table's partitions (the engine's entries, one per row or partition
/// record, memtables included) and mean partition size in bytes, from the
/// SST files only, as Cassandra's (a memtable's bytes are its arena, not
/// its data): 0 until something is flushed.
fn table_estimate(stats: &TableStorageStats) -> (f64, i64) {
    let partitions = stats.estimated_entries.max(stats.memtable_entries);
    let flushed = stats
        .estimated_entries
        .saturating_sub(stats.memtable_entries);
    let mean = match flushed {
        0 => 0,
        n => (stats.live_sst_bytes as f64 / n as f64).round() as i64,
    };
    (partitions as f64, mean)
}

/// One estimate row per (user table, range); `range_type` set for
/// `table_estimates`, left out for `size_estimates`.
pub fn rows(
    schema: &Schema,
    node: &NodeInfo,
    table_stats: &dyn Fn(TableId) -> TableStorageStats,
    range_type: Option<&'static str>,
) -> Vec<Cells> {
    let ring: Vec<i64> = match range_type {
        Some("local_primary") => local_dc_tokens(node),
        _ => all_tokens(node),
    };
    let ranges = primary_ranges(&node.tokens, &ring);
    let mut out = Vec::new();
    let keyspaces = schema_keyspaces(schema).filter(|k| !is_system_keyspace(&k.name));
    for keyspace in keyspaces {
        for table in keyspace.tables.values().filter(|t| !t.is_view()) {
            let (partitions, mean) = table_estimate(&table_stats(table.storage_id));
            for &range in &ranges {
                let mut row = Cells::default();
                row.text("keyspace_name", &keyspace.name)
                    .text("table_name", &table.name)
                    .text("range_start", &range.0.to_string())
                    .text("range_end", &range.1.to_string())
                    .set(
                        "partitions_count",
                        Value::Bigint((partitions * ring_share(range)).round() as i64),
                    )
                    .set("mean_partition_size", Value::Bigint(mean));
                if let Some(kind) = range_type {
                    row.text("range_type", kind);
                }
                out.push(row);
            }
        }
    }
    out
}

fn all_tokens(node: &NodeInfo) -> Vec<i64> {
    let peers = node.peers.iter().flat_map(|p| p.tokens.iter().copied());
    node.tokens.iter().copied().chain(peers).collect()
}

fn local_dc_tokens(node: &NodeInfo) -> Vec<i64> {
    let peers = node
        .peers
        .iter()
        .filter(|p| p.data_center == node.data_center)
        .flat_map(|p| p.tokens.iter().copied());
    node.tokens.iter().copied().chain(peers).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = i64::MIN;

    #[test]
    fn a_single_token_owns_the_ring_in_two_unwrapped_ranges() {
        assert_eq!(primary_ranges(&[0], &[0]), vec![(MIN, 0), (0, MIN)]);
        let share: f64 = primary_ranges(&[0], &[0]).into_iter().map(ring_share).sum();
        assert!((share - 1.0).abs() < 1e-9, "{share}");
    }

    #[test]
    fn each_local_token_starts_after_the_ring_token_before_it() {
        let ring = [-100, 0, 100, 200];
        assert_eq!(
            primary_ranges(&[0, 200], &ring),
            vec![(-100, 0), (100, 200)]
        );
        // The lowest token's range wraps from the highest.
        assert_eq!(
            primary_ranges(&[-100], &ring),
            vec![(MIN, -100), (200, MIN)]
        );
        assert!(primary_ranges(&[7], &ring).is_empty(), "not a ring token");
        let all: f64 = primary_ranges(&ring, &ring)
            .into_iter()
            .map(ring_share)
            .sum();
        assert!((all - 1.0).abs() < 1e-9, "{all}");
    }

    #[test]
    fn estimates_divide_partitions_by_ring_share() {
        let stats = TableStorageStats {
            estimated_entries: 1000,
            memtable_entries: 100,
            live_sst_bytes: 900_000,
            memtable_bytes: 4 << 20,
            ..TableStorageStats::default()
        };
        assert_eq!(table_estimate(&stats), (1000.0, 1000));
        let unflushed = TableStorageStats {
            estimated_entries: 50,
            memtable_entries: 50,
            memtable_bytes: 4 << 20,
            ..TableStorageStats::default()
        };
        assert_eq!(table_estimate(&unflushed), (50.0, 0));
        assert_eq!(table_estimate(&TableStorageStats::default()), (0.0, 0));
        assert!((ring_share((0, MIN)) - 0.5).abs() < 1e-9);
    }
}
