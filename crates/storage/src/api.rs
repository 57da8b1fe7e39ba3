//! The engine API: the narrow interface (write, read, stream) through which
//! the rest of Rocksandra reaches storage. Every implementation passes the
//! suite in `testkit`.

use std::path::{Path, PathBuf};

use rocksandra_data::{LocalTime, Token};
use serde::{Deserialize, Serialize};

pub use crate::cell::DroppedCells;
use crate::cell::{Cell, ColumnId, DeletionTime, LiveRow, LivenessInfo};
pub use crate::layout::keys::{ClusteringBound, ClusteringColumn};
use crate::layout::CorruptData;

/// Identifies a table's storage; assigned by the schema, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TableId(pub u64);

/// How a table's data is laid out in RocksDB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionStyle {
    /// Cassandra's LeveledCompactionStrategy.
    Leveled,
    /// SizeTieredCompactionStrategy / UnifiedCompactionStrategy.
    Universal,
    /// TimeWindowCompactionStrategy: TTL-heavy time series.
    TimeWindow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

/// Per-table storage options (from the table's CQL options).
#[derive(Clone, Debug, PartialEq)]
pub struct TableOptions {
    pub gc_grace_seconds: i64,
    pub compaction: CompactionStyle,
    pub compression: Compression,
    pub bloom_filter_fp_chance: f64,
    /// `default_time_to_live`, for choosing a TTL-aware compaction.
    pub default_ttl_seconds: i64,
    /// A row exists only while its primary-key liveness is live (live cells
    /// alone do not keep it): Cassandra's rule for a materialized view whose
    /// key holds a regular column of its base table.
    pub strict_liveness: bool,
    /// Rows may leave out trailing clustering values (a COMPACT STORAGE
    /// table with clustering columns, CASSANDRA-7990): their keys hold a
    /// clustering prefix. Elsewhere a row names every clustering column.
    pub clustering_prefix_rows: bool,
    /// The uncompressed size of a data block, in bytes: the table's
    /// `chunk_length_in_kb` (`compression`), as Cassandra's compression
    /// chunk, 16 KiB by default (`DEFAULT_BLOCK_BYTES`).
    pub block_bytes: u32,
}

/// Cassandra's default compression chunk (`chunk_length_in_kb: 16`).
pub const DEFAULT_BLOCK_BYTES: u32 = 16 * 1024;

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            gc_grace_seconds: 864_000,
            compaction: CompactionStyle::Universal,
            compression: Compression::Lz4,
            bloom_filter_fp_chance: 0.01,
            default_ttl_seconds: 0,
            strict_liveness: false,
            clustering_prefix_rows: false,
            block_bytes: DEFAULT_BLOCK_BYTES,
        }
    }
}

/// What the engine needs to know about a table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSpec {
    pub id: TableId,
    pub clustering: Vec<ClusteringColumn>,
    pub options: TableOptions,
    /// Columns dropped from the table (Cassandra's `dropped_columns`).
    pub dropped: Vec<DroppedCells>,
}

/// A partition: its serialized key (as Cassandra serializes partition keys)
/// and its token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "PartitionKeyFields")]
pub struct PartitionKey {
    pub token: Token,
    pub key: Vec<u8>,
}

impl PartitionKey {
    pub fn new(key: Vec<u8>) -> PartitionKey {
        PartitionKey {
            token: Token::murmur3(&key),
            key,
        }
    }
}

/// A `PartitionKey` as it arrives from another node, checked before use: a
/// token that is not the key's would store the partition where no read finds it.
#[derive(Deserialize)]
struct PartitionKeyFields {
    token: Token,
    key: Vec<u8>,
}

impl TryFrom<PartitionKeyFields> for PartitionKey {
    type Error = String;

    fn try_from(fields: PartitionKeyFields) -> Result<PartitionKey, String> {
        let key = PartitionKey::new(fields.key);
        if key.token == fields.token {
            Ok(key)
        } else {
            Err(format!(
                "partition key token {:?} is not the key's token {:?}",
                fields.token, key.token
            ))
        }
    }
}

/// Changes to one row: any of a primary-key marker, a row deletion, whole
/// collection deletions and cells.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowUpdate {
    pub liveness: Option<LivenessInfo>,
    pub deletion: Option<DeletionTime>,
    pub complex_deletions: Vec<(ColumnId, DeletionTime)>,
    pub cells: Vec<Cell>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeTombstone {
    pub start: ClusteringBound,
    pub end: ClusteringBound,
    pub deletion: DeletionTime,
}

/// All changes to one partition of one table. Applied without reading.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mutation {
    pub table: TableId,
    pub partition: PartitionKey,
    pub partition_deletion: Option<DeletionTime>,
    pub range_tombstones: Vec<RangeTombstone>,
    pub static_row: Option<RowUpdate>,
    pub rows: Vec<(Vec<Vec<u8>>, RowUpdate)>,
}

impl Mutation {
    pub fn new(table: TableId, partition: PartitionKey) -> Mutation {
        Mutation {
            table,
            partition,
            partition_deletion: None,
            range_tombstones: Vec::new(),
            static_row: None,
            rows: Vec::new(),
        }
    }
}

/// Which rows of a partition to read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRead {
    pub table: TableId,
    pub partition: PartitionKey,
    /// Clustering slices in clustering order, not overlapping; empty = none.
    /// Use `vec![Slice::all()]` for the whole partition.
    pub slices: Vec<Slice>,
    pub reversed: bool,
    pub include_static: bool,
    /// At most this many rows (0 = no limit).
    pub row_limit: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    pub start: ClusteringBound,
    pub end: ClusteringBound,
}

impl Slice {
    pub fn all() -> Slice {
        Slice {
            start: ClusteringBound::unbounded(),
            end: ClusteringBound::unbounded(),
        }
    }

    /// Exactly the row whose clustering is `clustering` (in a compact table,
    /// a prefix row without the rows extending it).
    pub fn row(clustering: Vec<Vec<u8>>) -> Slice {
        let at = |inclusive| ClusteringBound {
            prefix: clustering.clone(),
            inclusive,
            exact_row: true,
        };
        Slice {
            start: at(true),
            end: at(true),
        }
    }

    /// Exactly the rows whose clustering starts with `prefix`.
    pub fn prefix(prefix: Vec<Vec<u8>>) -> Slice {
        Slice {
            start: ClusteringBound::around(prefix.clone(), true),
            end: ClusteringBound::around(prefix, true),
        }
    }
}

/// A live row as a read returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub clustering: Vec<Vec<u8>>,
    pub content: LiveRow,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    pub key: PartitionKey,
    pub static_row: Option<LiveRow>,
    pub rows: Vec<Row>,
}

/// The stored state of what a `PartitionRead` selects (`Engine::read_raw`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawPartition {
    /// Applied to another engine, reproduces the read there. `rows` are in
    /// the order read: clustering order, or reverse clustering order for a
    /// reversed read.
    pub data: Mutation,
    /// Rows live at `now` among `data.rows`.
    pub live_rows: usize,
    /// The read stopped at `row_limit` live rows (more rows may follow).
    pub limit_reached: bool,
}

/// A token range `(start, end]` as Cassandra writes ranges; `start == end`
/// means the whole ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRange {
    pub start_exclusive: Token,
    pub end_inclusive: Token,
}

impl TokenRange {
    pub fn full() -> TokenRange {
        TokenRange {
            start_exclusive: Token(i64::MIN),
            end_inclusive: Token(i64::MIN),
        }
    }

    pub fn contains(&self, token: Token) -> bool {
        let (s, e) = (self.start_exclusive, self.end_inclusive);
        if s < e {
            s < token && token <= e
        } else {
            // Wrapping range (or the whole ring when s == e).
            token > s || token <= e
        }
    }
}

/// Where a paged scan stopped: after this row (or after the static row or
/// header of the partition when `clustering` is None).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanPosition {
    pub partition: PartitionKey,
    pub clustering: Option<Vec<Vec<u8>>>,
    /// Rows of this partition already returned (for per-partition limits).
    pub rows_returned_in_partition: usize,
}

/// A scan over partitions in token order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeScan {
    pub table: TableId,
    /// Tokens in `[start, end]`; Token(i64::MIN) as start means from the beginning.
    pub token_start: Token,
    pub token_end: Token,
    pub resume_after: Option<ScanPosition>,
    pub include_static: bool,
    /// Rows per partition (0 = all); for DISTINCT and PER PARTITION LIMIT.
    pub per_partition_limit: usize,
    /// Stop once this many rows (or static-only partitions) were returned.
    pub row_limit: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanPage {
    pub partitions: Vec<Partition>,
    /// Set when the limit stopped the scan: where the next page starts.
    pub next: Option<ScanPosition>,
}

/// How writes reach the disk, as Cassandra's `commitlog_sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// WAL written at once, synced every `period_ms` (acknowledged writes of
    /// the last period may be lost on power failure, not on a process crash).
    Periodic { period_ms: u64 },
    /// Every acknowledged write is synced; concurrent writers share one sync.
    Batch,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    #[error("unknown table {0:?}")]
    UnknownTable(TableId),
    #[error("table {0:?} already exists")]
    TableExists(TableId),
    #[error(transparent)]
    Corrupt(#[from] CorruptData),
    #[error("storage is read-only after an earlier failure: {0}")]
    ReadOnly(String),
    #[error("storage IO failed while {action}: {detail}")]
    Io {
        action: &'static str,
        detail: String,
    },
    /// The data volume is full. Nothing of the refused write is
    /// acknowledged, and unlike `Io` it does not make the storage
    /// read-only: writes succeed again once space is freed.
    #[error("no space left on the data volume while {action}: {detail}")]
    NoSpace {
        action: &'static str,
        detail: String,
    },
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl StorageError {
    /// Whether the storage itself failed (its disk: an IO error, a full
    /// volume, the read-only state after one), not the request: a write
    /// counts it as the replica's failure (Cassandra's WRITE_FAILURE).
    pub fn is_storage_failure(&self) -> bool {
        matches!(
            self,
            StorageError::Io { .. } | StorageError::NoSpace { .. } | StorageError::ReadOnly(_)
        )
    }
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// What an engine reports about itself for monitoring: counters since it
/// was opened and gauges of now. A backend without a figure reports 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Time writes were delayed or stopped so that flushes and compactions
    /// could catch up.
    pub write_stall_micros: u64,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_usage_bytes: u64,
    /// Point reads answered by the engine's point cache, and the others.
    pub point_cache_hits: u64,
    pub point_cache_misses: u64,
    pub point_cache_bytes: u64,
    /// Bytes compactions still have to rewrite to bring every table into shape.
    pub compaction_pending_bytes: u64,
    pub compactions_running: u64,
    /// Tables whose shape asks for a compaction that has not started yet.
    pub compactions_pending: u64,
    /// Active and immutable memtables of every table.
    pub memtable_bytes: u64,
    /// Live SST files of every table.
    pub sst_bytes: u64,
    /// Writes are refused: after an earlier failure (`StorageError::ReadOnly`),
    /// or because the last write found the data volume full (`NoSpace`).
    pub read_only: bool,
    /// The cap on what flushes and compactions write per second
    /// (`compaction_throughput`); None: unthrottled, or no cap at all.
    pub write_rate_limit_bytes: Option<u64>,
    /// Bytes flushes and compactions wrote through that cap.
    pub rate_limited_bytes: u64,
}

/// One table's storage figures (`nodetool tablestats`); zeros where the
/// backend does not know them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStorageStats {
    pub sst_files: u64,
    /// SST files the table reads now.
    pub live_sst_bytes: u64,
    /// Every SST file of the table, obsolete ones not yet deleted included.
    pub total_sst_bytes: u64,
    /// Active and immutable memtables.
    pub memtable_bytes: u64,
    pub memtable_entries: u64,
    /// The backend's estimate of the entries stored: a row or a
    /// partition-level record each, so at least the number of partitions.
    pub estimated_entries: u64,
    /// 1 when the table's shape asks for a compaction that has not started
    /// yet, else 0 (RocksDB's `compaction-pending`: not a count of tasks).
    pub compactions_pending: u64,
    /// Bytes compactions still have to rewrite to bring the table into shape.
    pub compaction_pending_bytes: u64,
    /// SST files sampled partition reads looked into (Cassandra's
    /// `SSTablesPerReadHistogram`); empty where the backend does not count.
    pub sstables_per_read: SstablesPerRead,
}

/// Upper bounds of `SstablesPerRead`'s buckets: exact up to 8 files, then
/// each about 1.2 times the one before, as Cassandra's estimated
/// histograms cut them.
pub const SSTABLES_PER_READ_BOUNDS: [u64; 24] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17, 20, 24, 29, 35, 42, 50, 60, 72, 86, 103, 124,
];

/// A histogram of how many SST files a partition read looked into: counts
/// per bucket of `SSTABLES_PER_READ_BOUNDS`, the last one above every bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SstablesPerRead {
    pub buckets: [u64; SSTABLES_PER_READ_BOUNDS.len() + 1],
    /// The files of every read recorded, together.
    pub files_sum: u64,
}

impl SstablesPerRead {
    pub fn record(&mut self, files: u64) {
        let bucket = SSTABLES_PER_READ_BOUNDS.partition_point(|bound| *bound < files);
        self.buckets[bucket] = self.buckets[bucket].saturating_add(1);
        self.files_sum = self.files_sum.saturating_add(files);
    }

    /// Reads recorded.
    pub fn count(&self) -> u64 {
        self.buckets.iter().fold(0, |sum, n| sum.saturating_add(*n))
    }

    /// The upper bound of bucket `index`; the bucket above every bound
    /// shows as the last bound.
    pub fn bound(index: usize) -> u64 {
        let last = SSTABLES_PER_READ_BOUNDS.len() - 1;
        SSTABLES_PER_READ_BOUNDS[index.min(last)]
    }
}

/// The storage engine: write, read, stream.
pub trait Engine: Send + Sync {
    fn create_table(&self, spec: TableSpec) -> Result<()>;
    /// Replaces the options of an existing table (clustering must not change).
    fn alter_table(&self, spec: TableSpec) -> Result<()>;
    fn drop_table(&self, table: TableId) -> Result<()>;
    /// Removes all data of a table.
    fn truncate(&self, table: TableId) -> Result<()>;
    /// Applies mutations atomically (one WAL record); durable per `Durability`.
    /// Inside `WriteGroup::run`, the mutations are queued in the group
    /// instead, written by `commit_deferred` (see `engine::group`).
    fn write(&self, mutations: &[Mutation], now: LocalTime) -> Result<()>;
    /// Inside `WriteGroup::run`: writes what the group queued for this
    /// engine, recording failures in the group. Every engine that wraps
    /// another forwards it, or queued writes would never be written.
    fn commit_deferred(&self);
    /// Writes the entries queued in `groups` together, as one store write,
    /// if every group holds this engine's entries only and that write
    /// succeeds (true: the groups are then empty). Otherwise writes nothing
    /// and leaves every entry where it was, for each group to be committed
    /// alone (false). An engine that cannot says false.
    fn write_groups_together(&self, groups: &mut [crate::WriteGroup]) -> bool {
        let _ = groups;
        false
    }
    fn read_partition(&self, read: &PartitionRead, now: LocalTime) -> Result<Partition>;
    /// `read_partition`, and the tombstones the read met on its way (what
    /// `tombstone_warn_threshold` and `tombstone_failure_threshold` count,
    /// as Cassandra does: dead cells, rows deleted on their own, two
    /// markers per range tombstone; `cell::RowTombstones`). The read stops
    /// once it has met more than `stop_past` (then its rows are incomplete
    /// and the count is past `stop_past`: the read is to fail, as
    /// Cassandra's stops with TombstoneOverwhelmingException). An engine
    /// that does not count says 0.
    fn read_partition_counted(
        &self,
        read: &PartitionRead,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(Partition, u64)> {
        let _ = stop_past;
        Ok((self.read_partition(read, now)?, 0))
    }
    /// The stored state of the rows `read` selects, tombstones and timestamps
    /// included, as a mutation that reproduces it when applied to another
    /// engine: what a coordinator reconciles replicas with. The partition
    /// deletion, every range tombstone of the partition and (with
    /// `include_static`) the static row are included; rows follow the slices
    /// and `reversed`; `row_limit` counts rows live at `now` (dead rows met
    /// before the limit is reached are included too). Cells are as stored:
    /// an expired cell stays an expiring cell.
    fn read_raw(&self, read: &PartitionRead, now: LocalTime) -> Result<RawPartition>;
    /// `read_raw`, counting and stopping as `read_partition_counted`.
    fn read_raw_counted(
        &self,
        read: &PartitionRead,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(RawPartition, u64)> {
        let _ = stop_past;
        Ok((self.read_raw(read, now)?, 0))
    }
    fn scan(&self, scan: &RangeScan, now: LocalTime) -> Result<ScanPage>;
    /// `scan`, and the tombstones it met, counting and stopping as
    /// `read_partition_counted`; an engine that does not count says 0.
    fn scan_counted(
        &self,
        scan: &RangeScan,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(ScanPage, u64)> {
        let _ = stop_past;
        Ok((self.scan(scan, now)?, 0))
    }
    /// Writes every entry of the token range (with tombstones and timestamps)
    /// to files in `dir`, to be ingested by another engine.
    fn stream_out(&self, table: TableId, range: TokenRange, dir: &Path) -> Result<Vec<PathBuf>>;
    fn stream_in(&self, table: TableId, files: &[PathBuf]) -> Result<()>;
    /// Loads the data of `source`'s table (a snapshot of an engine) into
    /// `table`, through the files of `stream_in` written in `work_dir`
    /// (created, and removed after): imported cells reconcile with the
    /// stored ones as streamed ones do. The snapshot is only read.
    fn import(
        &self,
        table: TableId,
        source: &crate::import::ImportSource,
        work_dir: &Path,
    ) -> Result<crate::import::ImportCounts> {
        let _ = (table, source, work_dir);
        Err(StorageError::Invalid(
            "this storage engine cannot import snapshots".into(),
        ))
    }
    /// The partitions stored in `range`, those holding only tombstones too,
    /// in token order: at most `limit` of them after `after` (repair walks
    /// a range with it, reading each partition's stored state).
    fn partition_keys(
        &self,
        table: TableId,
        range: TokenRange,
        after: Option<&PartitionKey>,
        limit: usize,
    ) -> Result<Vec<PartitionKey>>;
    /// Drops the data of every token not in `keep`.
    fn cleanup(&self, table: TableId, keep: &[TokenRange]) -> Result<()>;
    /// A consistent copy of all data in `dir` (hard links where possible).
    fn snapshot(&self, dir: &Path) -> Result<()>;
    /// Persists everything written so far (memtables, WAL).
    fn flush(&self) -> Result<()>;
    /// The sequence number of the last write applied, which survives a
    /// restart unchanged when nothing was written since: what tells a copy
    /// of derived state (an ANN graph saved at stop) that it is current.
    /// None from an engine without one (nothing is then taken as current).
    fn latest_sequence_number(&self) -> Option<u64> {
        None
    }
    /// Caps the bytes flushes and compactions write per second
    /// (`compaction_throughput`, `nodetool setcompactionthroughput`; None:
    /// unthrottled) while the engine runs; false when it has no such cap.
    fn set_compaction_throughput(&self, bytes_per_second: Option<u64>) -> bool {
        let _ = bytes_per_second;
        false
    }
    /// Persists what was written to one table (its memtables, and the
    /// WAL); an engine without per-table flushes flushes everything.
    fn flush_table(&self, table: TableId) -> Result<()> {
        let _ = table;
        self.flush()
    }
    /// Runs a full compaction of the table: applies TTL expiry and purges
    /// every tombstone past gc_grace, partition and range tombstones included.
    fn compact(&self, table: TableId, now: LocalTime) -> Result<()>;
    /// Purges the partition deletions and range tombstones past gc_grace that
    /// background compactions came across since the last call; returns how
    /// many were removed. The server calls it periodically.
    fn purge_tombstones(&self, now: LocalTime) -> Result<usize>;
    /// Counters and gauges for monitoring; cheap enough to call on every
    /// metrics scrape.
    fn stats(&self) -> StorageStats;
    /// One table's figures; zeros from an engine without them.
    fn table_stats(&self, table: TableId) -> TableStorageStats {
        let _ = table;
        TableStorageStats::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sstables_per_read_buckets_are_upper_bounds() {
        let mut h = SstablesPerRead::default();
        for files in [0, 1, 8, 9, 10, 11, 124, 125] {
            h.record(files);
        }
        let at = |bound: u64| SSTABLES_PER_READ_BOUNDS.iter().position(|b| *b == bound);
        let counted = |bound| at(bound).map(|i| h.buckets[i]);
        assert_eq!(
            [0, 1, 8, 10, 12, 124].map(counted),
            [Some(1), Some(1), Some(1), Some(2), Some(1), Some(1)]
        );
        assert_eq!(
            h.buckets[SSTABLES_PER_READ_BOUNDS.len()],
            1,
            "above every bound"
        );
        assert_eq!(h.count(), 8);
        assert_eq!(h.files_sum, 288);
        assert_eq!(SstablesPerRead::bound(SSTABLES_PER_READ_BOUNDS.len()), 124);
    }

    #[test]
    fn partition_keys_decode_only_with_their_own_token() {
        let key = PartitionKey::new(b"k".to_vec());
        let json = serde_json::to_string(&key).expect("encode");
        let decoded: PartitionKey = serde_json::from_str(&json).expect("decode");
        assert_eq!(decoded, key);
        let forged = PartitionKey {
            token: Token(key.token.0.wrapping_add(1)),
            ..key
        };
        let json = serde_json::to_string(&forged).expect("encode");
        let error = serde_json::from_str::<PartitionKey>(&json).expect_err("forged token");
        assert!(
            error.to_string().contains("is not the key's token"),
            "{error}"
        );
    }
}
