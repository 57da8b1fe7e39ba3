//! The key-value seam under the engine: what a backend (RocksDB, or the
//! in-memory store) must offer. Keys and values are opaque here; their layout
//! belongs to `layout`, their merging to `merge`.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use crate::api::{Result, StorageError, StorageStats, TableId, TableOptions, TableStorageStats};

/// One change in an atomic batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvOp {
    /// Combine `value` with what is stored, through `merge::merge_entry`.
    Merge { key: Vec<u8>, value: Vec<u8> },
    /// Remove every key in `[start, end)`; `end: None` means to the end.
    DeleteRange {
        start: Vec<u8>,
        end: Option<Vec<u8>>,
    },
}

/// Called for each entry of a scan; `Break` stops the scan.
pub type Visitor<'a> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a;

/// Rewrites a stored entry (key, value) for `export_checkpoint`: the value
/// to write, or None to leave the entry out.
pub type Rewrite<'a> = dyn FnMut(&[u8], &[u8]) -> Result<Option<Vec<u8>>> + 'a;

/// Called by `get_many` for each key found, with the key's index.
pub type KeysVisitor<'a> = dyn FnMut(usize, &[u8]) + 'a;

/// Called for each entry of `scan_ranges` with the index of its range;
/// `Break` stops the whole scan.
pub type RangesVisitor<'a> = dyn FnMut(usize, &[u8], &[u8]) -> ControlFlow<()> + 'a;

/// Keys in `[start, end)`; `end: None` means to the end of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Vec<u8>,
    pub end: Option<Vec<u8>>,
}

pub trait KvStore: Send + Sync + 'static {
    fn create_table(&self, table: TableId, options: &TableOptions) -> Result<()>;
    fn set_options(&self, table: TableId, options: &TableOptions) -> Result<()>;
    fn drop_table(&self, table: TableId) -> Result<()>;
    /// Removes every entry of the table.
    fn truncate(&self, table: TableId) -> Result<()>;
    /// Applies all ops atomically.
    fn write(&self, ops: &[(TableId, KvOp)]) -> Result<()>;
    fn get(&self, table: TableId, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Point lookups of several keys of one table, as one read: calls
    /// `visit(i, value)` for each `keys[i]` that is stored, in the order
    /// given. `keys` are in key order. A backend may serve them in one
    /// batch, without an iterator (`KvEngine`'s read of a table without
    /// clustering columns).
    fn get_many(&self, table: TableId, keys: &[&[u8]], visit: &mut KeysVisitor<'_>) -> Result<()> {
        for (i, key) in keys.iter().enumerate() {
            if let Some(value) = self.get(table, key)? {
                visit(i, &value);
            }
        }
        Ok(())
    }
    /// Visits entries of the range in key order (or reverse), until `visit`
    /// breaks.
    fn scan(
        &self,
        table: TableId,
        range: &KeyRange,
        reverse: bool,
        visit: &mut Visitor<'_>,
    ) -> Result<()>;
    /// Visits several ranges, in the order given, each forward or reversed
    /// (`(range, reverse)`), as one read: a backend may serve them with one
    /// iterator, which is what makes a partition read one seek. Every range
    /// lies within `within`; forward ranges that follow each other are in key
    /// order and do not overlap.
    fn scan_ranges(
        &self,
        table: TableId,
        within: &KeyRange,
        ranges: &[(KeyRange, bool)],
        visit: &mut RangesVisitor<'_>,
    ) -> Result<()> {
        let _ = within;
        for (i, (range, reverse)) in ranges.iter().enumerate() {
            let mut stopped = false;
            self.scan(table, range, *reverse, &mut |k, v| {
                let flow = visit(i, k, v);
                stopped = flow.is_break();
                flow
            })?;
            if stopped {
                break;
            }
        }
        Ok(())
    }
    /// Writes the entries of `range` to files in `dir`.
    fn export(&self, table: TableId, range: &KeyRange, dir: &Path) -> Result<Vec<PathBuf>>;
    /// Adds entries from files written by `export`, merging with what is stored.
    fn ingest(&self, table: TableId, files: &[PathBuf]) -> Result<()>;
    /// Writes the entries of table `table` of the checkpoint in `source` (a
    /// `checkpoint` of another store, opened read-only and left as it is)
    /// to files in `dir` for `ingest`, each value passed through `rewrite`
    /// (None leaves the entry out). Returns the files, the entries read and
    /// the entries written.
    fn export_checkpoint(
        &self,
        source: &Path,
        table: TableId,
        rewrite: &mut Rewrite<'_>,
        dir: &Path,
    ) -> Result<(Vec<PathBuf>, u64, u64)> {
        let _ = (source, table, rewrite, dir);
        Err(StorageError::Invalid(
            "this storage backend cannot read snapshots of a running node".into(),
        ))
    }
    fn checkpoint(&self, dir: &Path) -> Result<()>;
    fn flush(&self) -> Result<()>;
    /// `Engine::latest_sequence_number`; None by default.
    fn latest_sequence_number(&self) -> Option<u64> {
        None
    }
    /// Caps the bytes flushes and compactions write per second (None:
    /// unthrottled); false when the backend has no such cap.
    fn set_write_rate_limit(&self, bytes_per_second: Option<u64>) -> bool {
        let _ = bytes_per_second;
        false
    }
    /// One table's memtables (and the WAL); everything when the backend
    /// cannot flush a table alone.
    fn flush_table(&self, table: TableId) -> Result<()> {
        let _ = table;
        self.flush()
    }
    fn compact(&self, table: TableId) -> Result<()>;
    /// Partitions (table, partition prefix) whose partition deletion or range
    /// tombstone a compaction found past gc_grace since the last call. Such
    /// tombstones are kept by `merge::filter_entry` until the engine has
    /// pushed them down (`engine::purge`). A backend may report nothing, and
    /// may forget candidates beyond a bound: later compactions report them
    /// again, and `compact` finds every one.
    fn take_purge_candidates(&self) -> Vec<(TableId, Vec<u8>)> {
        Vec::new()
    }
    /// Counters and gauges for monitoring (`Engine::stats`); a backend
    /// without them (the in-memory store) reports zeros.
    fn stats(&self) -> StorageStats {
        StorageStats::default()
    }
    /// One table's figures (`Engine::table_stats`); zeros by default.
    fn table_stats(&self, table: TableId) -> TableStorageStats {
        let _ = table;
        TableStorageStats::default()
    }
}
