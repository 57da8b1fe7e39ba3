//! `nodetool tablestats [KEYSPACE[.TABLE]...]`, Cassandra's layout with
//! the figures RocksDB gives per table (SST files and bytes, memtables,
//! its key estimate) and the reads and writes this node coordinated
//! (`Table::metrics`, what the metrics endpoint exports): counts and mean
//! latencies, NaN for a table nobody used, as Cassandra prints it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use rocksandra_data::value::java_double;
use rocksandra_query::metrics::HistogramSnapshot;
use rocksandra_query::schema::{Keyspace, Schema, Table};
use rocksandra_storage::TableStorageStats;

use super::histograms::merged;
use super::AdminNode;
use super::{failed, tables::unknown_keyspace, AdminError};
use crate::message::Response;

/// Keyspace name to the tables asked for (None: all of them).
type Chosen = BTreeMap<String, Option<BTreeSet<String>>>;

/// `names` (`ks` or `ks.table`) as a choice checked against the schema;
/// every keyspace when empty.
fn choose(schema: &Schema, names: &[String]) -> Result<Chosen, AdminError> {
    let mut chosen = Chosen::new();
    if names.is_empty() {
        chosen.extend(schema.keyspaces.keys().map(|k| (k.clone(), None)));
    }
    for name in names {
        let (keyspace, table) = match name.split_once('.') {
            Some((k, t)) => (k, Some(t)),
            None => (name.as_str(), None),
        };
        let ks = schema
            .keyspace(keyspace)
            .ok_or_else(|| unknown_keyspace(keyspace))?;
        let entry = chosen
            .entry(keyspace.to_string())
            .or_insert_with(|| Some(BTreeSet::new()));
        match (table, entry) {
            (None, entry) => *entry = None,
            (Some(_), None) => {}
            (Some(t), Some(set)) => {
                if !ks.tables.contains_key(t) {
                    return Err(AdminError::UnknownTable {
                        keyspace: keyspace.to_string(),
                        table: t.to_string(),
                    });
                }
                set.insert(t.to_string());
            }
        }
    }
    Ok(chosen)
}

/// The stored tables of `keyspace` that were chosen.
fn tables_of<'a>(keyspace: &'a Keyspace, only: &Option<BTreeSet<String>>) -> Vec<&'a Table> {
    keyspace
        .tables
        .values()
        .filter(|t| !t.is_virtual)
        .filter(|t| only.as_ref().is_none_or(|set| set.contains(&t.name)))
        .map(|t| &**t)
        .collect()
}

pub(crate) fn table_stats(node: &AdminNode, names: &[String]) -> Response {
    let schema = node.executor().schema();
    let chosen = match choose(&schema, names) {
        Ok(chosen) => chosen,
        Err(e) => return failed(e),
    };
    let keyspaces: Vec<(&str, Vec<&Table>)> = chosen
        .iter()
        .filter_map(|(name, only)| {
            let tables = tables_of(schema.keyspace(name)?, only);
            (!tables.is_empty()).then_some((name.as_str(), tables))
        })
        .collect();
    let total: usize = keyspaces.iter().map(|(_, t)| t.len()).sum();
    let mut out = format!("Total number of tables: {total}\n----------------\n");
    for (name, tables) in keyspaces {
        let _ = writeln!(out, "Keyspace: {name}");
        let reads = merged(tables.iter().map(|t| t.metrics.read.snapshot()));
        let writes = merged(tables.iter().map(|t| t.metrics.write.snapshot()));
        let _ = writeln!(out, "\tRead Count: {}", reads.count());
        let _ = writeln!(out, "\tRead Latency: {} ms", mean_millis(&reads));
        let _ = writeln!(out, "\tWrite Count: {}", writes.count());
        let _ = writeln!(out, "\tWrite Latency: {} ms", mean_millis(&writes));
        out.push_str("\tPending Flushes: 0\n");
        for table in tables {
            let stats = node.engine.table_stats(table.storage_id);
            out.push_str(&table_lines(table, &stats));
        }
        out.push_str("----------------\n");
    }
    Response::Text(out)
}

/// A keyspace's mean latency as Cassandra prints it (a Java double),
/// NaN without observations.
fn mean_millis(histogram: &HistogramSnapshot) -> String {
    java_double(histogram.mean_millis().unwrap_or(f64::NAN))
}

/// A table's mean latency as Cassandra prints it (`%.3f`), NaN without reads.
fn millis(histogram: &HistogramSnapshot) -> String {
    histogram
        .mean_millis()
        .map_or_else(|| "NaN".to_string(), |ms| format!("{ms:.3}"))
}

/// Reads per write, 0 without writes (Cassandra's).
fn read_write_ratio(reads: u64, writes: u64) -> f64 {
    match writes {
        0 => 0.0,
        w => reads as f64 / w as f64,
    }
}

fn table_lines(table: &Table, s: &TableStorageStats) -> String {
    let reads = table.metrics.read.snapshot();
    let writes = table.metrics.write.snapshot();
    let lines: [(&str, String); 21] = [
        ("Table", table.name.clone()),
        ("SSTable count", s.sst_files.to_string()),
        ("Old SSTable count", "0".into()),
        ("Space used (live)", s.live_sst_bytes.to_string()),
        ("Space used (total)", s.total_sst_bytes.to_string()),
        ("Space used by snapshots (total)", "0".into()),
        (
            "Number of partitions (estimate)",
            s.estimated_entries.to_string(),
        ),
        ("Memtable cell count", s.memtable_entries.to_string()),
        ("Memtable data size", s.memtable_bytes.to_string()),
        ("Local read count", reads.count().to_string()),
        ("Local read latency", format!("{} ms", millis(&reads))),
        ("Local write count", writes.count().to_string()),
        ("Local write latency", format!("{} ms", millis(&writes))),
        (
            "Local read/write ratio",
            format!("{:.5}", read_write_ratio(reads.count(), writes.count())),
        ),
        ("Pending flushes", "0".into()),
        ("Percent repaired", "0.0".into()),
        ("Bloom filter false positives", "0".into()),
        ("Compacted partition minimum bytes", "0".into()),
        ("Compacted partition maximum bytes", "0".into()),
        ("Compacted partition mean bytes", "0".into()),
        ("Dropped Mutations", "0".into()),
    ];
    let mut out = String::new();
    for (label, value) in lines {
        let _ = writeln!(out, "\t\t{label}: {value}");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rocksandra_query::metrics::Histogram;

    use super::*;

    #[test]
    fn latencies_and_ratio_as_cassandra_prints_them() {
        let histogram = Histogram::default();
        assert_eq!(mean_millis(&histogram.snapshot()), "NaN");
        assert_eq!(millis(&histogram.snapshot()), "NaN");
        histogram.record(Duration::from_micros(100));
        histogram.record(Duration::from_micros(113));
        assert_eq!(mean_millis(&histogram.snapshot()), "0.1065");
        histogram.record(Duration::from_micros(300));
        assert_eq!(millis(&histogram.snapshot()), "0.171");
        assert_eq!(read_write_ratio(1, 2), 0.5);
        assert_eq!(read_write_ratio(3, 0), 0.0);
        assert_eq!(format!("{:.5}", read_write_ratio(7, 20)), "0.35000");
    }
}
