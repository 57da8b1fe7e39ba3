//! `nodetool proxyhistograms` and `tablehistograms`: percentiles of the
//! latency histograms this node keeps (`rocksandra_query::metrics`) and
//! of the SST files sampled reads looked into (`SstablesPerRead`), in
//! Cassandra's tables. A histogram keeps counts per bucket, so a
//! percentile is the upper bound of the bucket it falls in (Cassandra's
//! are bucket bounds too, on finer buckets); what is not measured prints
//! as Cassandra prints an empty histogram.

use std::fmt::Write;

use rocksandra_query::metrics::{HistogramSnapshot, Scope, LATENCY_BUCKET_BOUNDS_NANOS};
use rocksandra_query::schema::{Schema, Table};
use rocksandra_storage::SstablesPerRead;

use super::{failed, AdminNode};
use crate::message::Response;

/// The rows of Cassandra's histogram tables.
const ROWS: [&str; 7] = ["50%", "75%", "95%", "98%", "99%", "Min", "Max"];
const QUANTILES: [f64; 5] = [0.5, 0.75, 0.95, 0.98, 0.99];

/// The observations of several histograms as one.
pub(crate) fn merged(histograms: impl Iterator<Item = HistogramSnapshot>) -> HistogramSnapshot {
    histograms.fold(HistogramSnapshot::default(), |mut all, h| {
        for (sum, n) in all.buckets.iter_mut().zip(h.buckets) {
            *sum = sum.saturating_add(n);
        }
        all.sum_nanos = all.sum_nanos.saturating_add(h.sum_nanos);
        all
    })
}

/// Bucket `index`'s upper bound in microseconds; the bucket above every
/// bound shows as the last bound (10 s).
fn upper_micros(index: usize) -> f64 {
    let last = LATENCY_BUCKET_BOUNDS_NANOS.len() - 1;
    LATENCY_BUCKET_BOUNDS_NANOS[index.min(last)] as f64 / 1_000.0
}

/// Bucket `index`'s lower bound (exclusive) in microseconds.
fn lower_micros(index: usize) -> f64 {
    match index {
        0 => 0.0,
        i => upper_micros(i - 1),
    }
}

/// 50%, 75%, 95%, 98%, 99%, Min and Max of `histogram` in microseconds,
/// all 0 without observations (Cassandra's empty histogram).
pub(crate) fn latency_micros(histogram: &HistogramSnapshot) -> [f64; 7] {
    percentiles(&histogram.buckets, upper_micros, lower_micros)
}

/// The rows of the `SSTables` column: files per read, Min the bound of
/// the lowest bucket used (its exact count up to 8 files).
pub(crate) fn sstables_per_read(histogram: &SstablesPerRead) -> [f64; 7] {
    let bound = |index| SstablesPerRead::bound(index) as f64;
    percentiles(&histogram.buckets, bound, bound)
}

/// The rows of `ROWS` for counts per bucket: each quantile the upper
/// bound of the bucket it falls in, Min the lower bound of the lowest
/// bucket used, Max the upper bound of the highest; all 0 when empty.
fn percentiles(
    buckets: &[u64],
    upper: impl Fn(usize) -> f64,
    lower: impl Fn(usize) -> f64,
) -> [f64; 7] {
    let count = buckets.iter().fold(0u64, |sum, n| sum.saturating_add(*n));
    let mut out = [0.0; 7];
    if count == 0 {
        return out;
    }
    for (slot, quantile) in out.iter_mut().zip(QUANTILES) {
        // The first bucket where the running count reaches the rank.
        let rank = (count as f64 * quantile).ceil() as u64;
        let mut seen = 0u64;
        for (index, n) in buckets.iter().enumerate() {
            seen = seen.saturating_add(*n);
            if seen >= rank {
                *slot = upper(index);
                break;
            }
        }
    }
    let used = || (0..buckets.len()).filter(|i| buckets[*i] > 0);
    out[5] = used().next().map_or(0.0, &lower);
    out[6] = used().next_back().map_or(0.0, &upper);
    out
}

/// Cassandra's `proxyhistograms` table for the columns given (Read,
/// Write, Range, CAS Read, CAS Write, View Write).
pub(crate) fn proxy_table(columns: &[[f64; 7]; 6]) -> String {
    let mut out = String::from("proxy histograms\n");
    let _ = writeln!(
        out,
        "{:<10}{:>19}{:>19}{:>19}{:>19}{:>19}{:>19}",
        "Percentile",
        "Read Latency",
        "Write Latency",
        "Range Latency",
        "CAS Read Latency",
        "CAS Write Latency",
        "View Write Latency"
    );
    let _ = writeln!(out, "{:<10}{}", "", format!("{:>19}", "(micros)").repeat(6));
    for (row, name) in ROWS.iter().enumerate() {
        let _ = write!(out, "{name:<10}");
        for column in columns {
            let _ = write!(out, "{:>19.2}", column[row]);
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// `nodetool proxyhistograms`: the requests this node coordinated, by
/// scope, every consistency level together. Views are written with their
/// base table's writes and not timed apart: that column is empty.
pub(crate) fn proxy_histograms(node: &AdminNode) -> Response {
    let scopes = node.executor().client_request_metrics().snapshot();
    let of = |scope: Scope| {
        let all = scopes
            .iter()
            .filter(|s| s.scope == scope)
            .flat_map(|s| s.latency.iter().map(|(_, h)| *h));
        latency_micros(&merged(all))
    };
    let columns = [
        of(Scope::Read),
        of(Scope::Write),
        of(Scope::RangeSlice),
        of(Scope::CasRead),
        of(Scope::CasWrite),
        [0.0; 7],
    ];
    Response::Text(proxy_table(&columns))
}

/// One table's figures for `tablehistograms`.
pub(crate) struct TableFigures {
    pub read: [f64; 7],
    pub write: [f64; 7],
    pub sstables: [f64; 7],
    /// Whether RocksDB holds SST files of the table.
    pub has_sst_files: bool,
}

/// Cassandra's `tablehistograms` section of one table. Partition sizes
/// and cell counts are not kept (NaN, with Cassandra's line when the
/// table has no SST files, the case where it prints them so).
pub(crate) fn table_section(keyspace: &str, table: &str, figures: &TableFigures) -> String {
    let mut out = String::new();
    if !figures.has_sst_files {
        out.push_str(
            "No SSTables exists, unable to calculate 'Partition Size' and 'Cell Count' percentiles\n",
        );
    }
    let _ = writeln!(out, "{keyspace}/{table} histograms");
    let _ = writeln!(
        out,
        "{:<10}{:>18}{:>18}{:>18}{:>18}{:>18}",
        "Percentile", "Read Latency", "Write Latency", "SSTables", "Partition Size", "Cell Count"
    );
    let _ = writeln!(
        out,
        "{:<10}{:>18}{:>18}{:>18}{:>18}{:>18}",
        "", "(micros)", "(micros)", "", "(bytes)", ""
    );
    for (row, name) in ROWS.iter().enumerate() {
        let _ = writeln!(
            out,
            "{name:<10}{:>18.2}{:>18.2}{:>18.2}{:>18.0}{:>18.0}",
            figures.read[row],
            figures.write[row],
            figures.sstables[row],
            f64::NAN,
            f64::NAN
        );
    }
    out.push('\n');
    out
}

/// The stored tables `tablehistograms` names: one, or all of them.
fn chosen<'s>(
    schema: &'s Schema,
    table: &Option<(String, String)>,
) -> Result<Vec<(&'s str, &'s Table)>, super::AdminError> {
    let Some((keyspace, name)) = table else {
        return Ok(schema
            .keyspaces
            .iter()
            .flat_map(|(k, ks)| ks.tables.values().map(move |t| (k.as_str(), &**t)))
            .filter(|(_, t)| !t.is_virtual)
            .collect());
    };
    let found = schema
        .keyspaces
        .get_key_value(keyspace)
        .and_then(|(k, ks)| Some((k.as_str(), &**ks.tables.get(name)?)))
        .filter(|(_, t)| !t.is_virtual);
    found
        .map(|t| vec![t])
        .ok_or_else(|| super::AdminError::UnknownHistogramTable {
            keyspace: keyspace.clone(),
            table: name.clone(),
        })
}

/// `nodetool tablehistograms [KEYSPACE TABLE | KEYSPACE.TABLE]`.
pub(crate) fn table_histograms(node: &AdminNode, table: &Option<(String, String)>) -> Response {
    let schema = node.executor().schema();
    let tables = match chosen(&schema, table) {
        Ok(tables) => tables,
        Err(e) => return failed(e),
    };
    let mut out = String::new();
    for (keyspace, table) in tables {
        let stored = node.engine.table_stats(table.storage_id);
        let figures = TableFigures {
            read: latency_micros(&table.metrics.read.snapshot()),
            write: latency_micros(&table.metrics.write.snapshot()),
            sstables: sstables_per_read(&stored.sstables_per_read),
            has_sst_files: stored.sst_files > 0,
        };
        out.push_str(&table_section(keyspace, &table.name, &figures));
    }
    Response::Text(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(buckets: &[(usize, u64)]) -> HistogramSnapshot {
        let mut h = HistogramSnapshot::default();
        for (index, n) in buckets {
            h.buckets[*index] = *n;
        }
        h
    }

    #[test]
    fn percentiles_are_bucket_bounds() {
        assert_eq!(latency_micros(&HistogramSnapshot::default()), [0.0; 7]);
        // 10 observations: 6 at <= 25 µs, 3 at <= 100 µs, 1 at <= 1 ms.
        let h = snapshot(&[(0, 6), (2, 3), (5, 1)]);
        assert_eq!(
            latency_micros(&h),
            [25.0, 100.0, 1000.0, 1000.0, 1000.0, 0.0, 1000.0]
        );
        // One slower than every bound: shown as the last bound.
        let h = snapshot(&[(3, 1), (BUCKETS_LAST, 1)]);
        assert_eq!(
            latency_micros(&h),
            [
                250.0,
                10_000_000.0,
                10_000_000.0,
                10_000_000.0,
                10_000_000.0,
                100.0,
                10_000_000.0
            ]
        );
    }

    const BUCKETS_LAST: usize = rocksandra_query::metrics::BUCKETS - 1;

    #[test]
    fn sstables_per_read_are_file_counts() {
        assert_eq!(sstables_per_read(&SstablesPerRead::default()), [0.0; 7]);
        let mut h = SstablesPerRead::default();
        for files in [1, 1, 1, 1, 1, 1, 1, 1, 3, 11] {
            h.record(files);
        }
        // 11 files fall in the bucket (10, 12].
        assert_eq!(
            sstables_per_read(&h),
            [1.0, 1.0, 12.0, 12.0, 12.0, 1.0, 12.0]
        );
        let mut memtable_only = SstablesPerRead::default();
        memtable_only.record(0);
        assert_eq!(sstables_per_read(&memtable_only), [0.0; 7]);
        // More files than every bound: shown as the last bound.
        let mut many = SstablesPerRead::default();
        many.record(1_000);
        assert_eq!(sstables_per_read(&many), [124.0; 7]);
    }

    #[test]
    fn merged_adds_bucket_by_bucket() {
        let all = merged([snapshot(&[(0, 1)]), snapshot(&[(0, 2), (4, 1)])].into_iter());
        assert_eq!(all.count(), 4);
        assert_eq!(all.buckets[0], 3);
    }

    #[test]
    fn proxy_table_in_cassandras_layout() {
        let mut columns = [[0.0; 7]; 6];
        columns[0] = [5722.0, 29521.0, 29521.0, 29521.0, 29521.0, 4769.0, 29521.0];
        let text = proxy_table(&columns);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "proxy histograms");
        assert_eq!(
            lines[1],
            "Percentile       Read Latency      Write Latency      Range Latency   CAS Read Latency  CAS Write Latency View Write Latency"
        );
        assert_eq!(
            lines[2],
            "                     (micros)           (micros)           (micros)           (micros)           (micros)           (micros)"
        );
        assert_eq!(
            lines[3],
            "50%                   5722.00               0.00               0.00               0.00               0.00               0.00"
        );
        assert_eq!(&lines[9][..10], "Max       ");
        assert_eq!(lines.len(), 11);
        assert!(text.ends_with("\n\n"));
    }

    #[test]
    fn table_section_in_cassandras_layout() {
        let figures = TableFigures {
            read: [215.0, 215.0, 215.0, 215.0, 215.0, 180.0, 215.0],
            write: [72.0, 149.0, 149.0, 149.0, 149.0, 61.0, 149.0],
            sstables: [1.0, 1.0, 2.0, 2.0, 2.0, 0.0, 2.0],
            has_sst_files: false,
        };
        let text = table_section("ks", "t", &figures);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "No SSTables exists, unable to calculate 'Partition Size' and 'Cell Count' percentiles"
        );
        assert_eq!(lines[1], "ks/t histograms");
        assert_eq!(
            lines[2],
            "Percentile      Read Latency     Write Latency          SSTables    Partition Size        Cell Count"
        );
        assert_eq!(
            lines[3],
            "                    (micros)          (micros)                             (bytes)                  "
        );
        assert_eq!(
            lines[4],
            "50%                   215.00             72.00              1.00               NaN               NaN"
        );
        assert_eq!(
            lines[9],
            "Min                   180.00             61.00              0.00               NaN               NaN"
        );
        assert!(text.ends_with("\n\n"));
        let flushed = TableFigures {
            has_sst_files: true,
            ..figures
        };
        assert!(table_section("ks", "t", &flushed).starts_with("ks/t histograms\n"));
    }
}
