//! Refuses to open a DB whose write-ahead log moved while the old log still
//! holds writes: RocksDB reads only the log directory it is given, so those
//! writes would silently be gone.

use std::path::{Path, PathBuf};

use rocksandra_storage::api::{Result, StorageError};

/// Fails when the DB in `dir` last wrote its log elsewhere than `wal_dir`
/// (None: `dir` itself) and a log file left there is not empty.
pub(crate) fn check(dir: &Path, wal_dir: Option<&Path>) -> Result<()> {
    let Some(previous) = previous_wal_dir(dir) else {
        return Ok(());
    };
    let current = wal_dir.unwrap_or(dir);
    if same_dir(&previous, current) {
        return Ok(());
    }
    match unflushed_log(&previous) {
        None => Ok(()),
        Some(log) => Err(StorageError::Io {
            action: "checking the write-ahead log directory",
            detail: format!(
                "{} holds writes not yet flushed ({log}), but the log directory is now {}; \
                 flush the node (nodetool flush) with the old directory before moving it, \
                 or move the *.log files there",
                previous.display(),
                current.display()
            ),
        }),
    }
}

/// The log directory the newest `OPTIONS-*` file of `dir` names; None when
/// there is no DB there yet.
fn previous_wal_dir(dir: &Path) -> Option<PathBuf> {
    if !dir.join("CURRENT").exists() {
        return None;
    }
    let newest = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("OPTIONS-") && !n.ends_with(".dbtmp"))
        .max_by_key(|n| n[8..].parse::<u64>().unwrap_or(0))?;
    let text = std::fs::read_to_string(dir.join(newest)).ok()?;
    let named = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("wal_dir="))
        .find(|v| !v.is_empty());
    Some(named.map_or_else(|| dir.to_path_buf(), PathBuf::from))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The name of a non-empty `*.log` file in `dir`, if any.
fn unflushed_log(dir: &Path) -> Option<String> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .find(|e| {
            e.file_name().to_string_lossy().ends_with(".log")
                && e.metadata().is_ok_and(|m| m.len() > 0)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
}
