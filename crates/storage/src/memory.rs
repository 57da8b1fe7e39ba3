//! The in-memory key-value store: a `BTreeMap` per table, merging on write.
//! For simulation and fast tests; shares every rule with RocksDB through
//! `KvEngine` and `merge`.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rocksandra_data::LocalTime;

use crate::api::{Result, StorageError, TableId, TableOptions};
use crate::kv::{KeyRange, KvOp, KvStore, Visitor};
use crate::layout::stream_file;
use crate::merge::{filter_entry, merge_entry, FilterDecision};

type Table = BTreeMap<Vec<u8>, Vec<u8>>;

/// The clock compaction uses to expire TTLs and count gc_grace.
pub type Clock = Arc<dyn Fn() -> LocalTime + Send + Sync>;

pub struct MemoryStore {
    tables: RwLock<HashMap<TableId, (Table, TableOptions)>>,
    clock: Clock,
}

impl MemoryStore {
    pub fn new(clock: Clock) -> MemoryStore {
        MemoryStore {
            tables: RwLock::new(HashMap::new()),
            clock,
        }
    }

    fn poisoned() -> StorageError {
        StorageError::ReadOnly("memory store lock poisoned".into())
    }

    fn with_table<T>(&self, table: TableId, f: impl FnOnce(&Table) -> Result<T>) -> Result<T> {
        let tables = self.tables.read().map_err(|_| Self::poisoned())?;
        let (t, _) = tables
            .get(&table)
            .ok_or(StorageError::UnknownTable(table))?;
        f(t)
    }
}

/// An empty range (end at or before start) selects nothing; BTreeMap would panic.
fn is_empty(range: &KeyRange) -> bool {
    range.end.as_ref().is_some_and(|end| *end <= range.start)
}

fn bounds(range: &KeyRange) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (
        Bound::Included(range.start.clone()),
        match &range.end {
            Some(end) => Bound::Excluded(end.clone()),
            None => Bound::Unbounded,
        },
    )
}

fn io_error(action: &'static str, e: std::io::Error) -> StorageError {
    StorageError::Io {
        action,
        detail: e.to_string(),
    }
}

impl KvStore for MemoryStore {
    fn create_table(&self, table: TableId, options: &TableOptions) -> Result<()> {
        let mut tables = self.tables.write().map_err(|_| Self::poisoned())?;
        tables
            .entry(table)
            .or_insert_with(|| (Table::new(), options.clone()));
        Ok(())
    }

    fn set_options(&self, table: TableId, options: &TableOptions) -> Result<()> {
        let mut tables = self.tables.write().map_err(|_| Self::poisoned())?;
        let (_, o) = tables
            .get_mut(&table)
            .ok_or(StorageError::UnknownTable(table))?;
        *o = options.clone();
        Ok(())
    }

    fn drop_table(&self, table: TableId) -> Result<()> {
        let mut tables = self.tables.write().map_err(|_| Self::poisoned())?;
        tables.remove(&table);
        Ok(())
    }

    fn truncate(&self, table: TableId) -> Result<()> {
        let mut tables = self.tables.write().map_err(|_| Self::poisoned())?;
        if let Some((t, _)) = tables.get_mut(&table) {
            t.clear();
        }
        Ok(())
    }

    fn write(&self, ops: &[(TableId, KvOp)]) -> Result<()> {
        let mut tables = self.tables.write().map_err(|_| Self::poisoned())?;
        // Validate and compute everything first so the batch is atomic.
        let mut merged = Vec::with_capacity(ops.len());
        let mut pending: HashMap<(TableId, Vec<u8>), Vec<u8>> = HashMap::new();
        for (table, op) in ops {
            let (t, _) = tables
                .get(table)
                .ok_or(StorageError::UnknownTable(*table))?;
            if let KvOp::Merge { key, value } = op {
                let slot = (*table, key.clone());
                let existing = pending.get(&slot).or_else(|| t.get(key));
                let new = merge_entry(existing.map(|v| v.as_slice()), [value.as_slice()])?;
                pending.insert(slot, new.clone());
                merged.push(Some(new));
            } else {
                merged.push(None);
            }
        }
        for ((table, op), new) in ops.iter().zip(merged) {
            let Some((t, _)) = tables.get_mut(table) else {
                continue;
            };
            match (op, new) {
                (KvOp::Merge { key, .. }, Some(value)) => {
                    t.insert(key.clone(), value);
                }
                (KvOp::DeleteRange { start, end }, _) => {
                    let range = KeyRange {
                        start: start.clone(),
                        end: end.clone(),
                    };
                    if is_empty(&range) {
                        continue;
                    }
                    let doomed: Vec<Vec<u8>> =
                        t.range(bounds(&range)).map(|(k, _)| k.clone()).collect();
                    for k in doomed {
                        t.remove(&k);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn get(&self, table: TableId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with_table(table, |t| Ok(t.get(key).cloned()))
    }

    fn scan(
        &self,
        table: TableId,
        range: &KeyRange,
        reverse: bool,
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        if is_empty(range) {
            return self.with_table(table, |_| Ok(()));
        }
        self.with_table(table, |t| {
            let iter = t.range(bounds(range));
            let entries: Box<dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>> = if reverse {
                Box::new(iter.rev())
            } else {
                Box::new(iter)
            };
            for (k, v) in entries {
                if visit(k, v).is_break() {
                    break;
                }
            }
            Ok(())
        })
    }

    fn export(&self, table: TableId, range: &KeyRange, dir: &Path) -> Result<Vec<PathBuf>> {
        let bytes = self.with_table(table, |t| {
            let entries = if is_empty(range) {
                None
            } else {
                Some(t.range(bounds(range)))
            };
            Ok(stream_file::encode_entries(
                entries
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.as_slice(), v.as_slice())),
            ))
        })?;
        let path = dir.join("entries.rstr");
        std::fs::write(&path, bytes).map_err(|e| io_error("writing a stream file", e))?;
        Ok(vec![path])
    }

    fn ingest(&self, table: TableId, files: &[PathBuf]) -> Result<()> {
        let mut ops = Vec::new();
        for file in files {
            let bytes = std::fs::read(file).map_err(|e| io_error("reading a stream file", e))?;
            for (key, value) in stream_file::decode_entries(&bytes)? {
                ops.push((table, KvOp::Merge { key, value }));
            }
        }
        self.write(&ops)
    }

    fn checkpoint(&self, dir: &Path) -> Result<()> {
        let tables = self.tables.read().map_err(|_| Self::poisoned())?;
        std::fs::create_dir_all(dir).map_err(|e| io_error("creating a snapshot directory", e))?;
        for (id, (t, _)) in tables.iter() {
            let bytes =
                stream_file::encode_entries(t.iter().map(|(k, v)| (k.as_slice(), v.as_slice())));
            std::fs::write(dir.join(format!("table-{}.rstr", id.0)), bytes)
                .map_err(|e| io_error("writing a snapshot", e))?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn compact(&self, table: TableId) -> Result<()> {
        let now = (self.clock)();
        let mut tables = self.tables.write().map_err(|_| Self::poisoned())?;
        let (t, options) = tables
            .get_mut(&table)
            .ok_or(StorageError::UnknownTable(table))?;
        let gc_grace = options.gc_grace_seconds;
        let keys: Vec<Vec<u8>> = t.keys().cloned().collect();
        for key in keys {
            let Some(value) = t.get(&key) else { continue };
            match filter_entry(&key, value, now, gc_grace) {
                FilterDecision::Keep | FilterDecision::KeepUntilPushedDown { .. } => {}
                FilterDecision::Remove => {
                    t.remove(&key);
                }
                FilterDecision::Change(v) => {
                    t.insert(key, v);
                }
            }
        }
        Ok(())
    }
}
