//! The checkpoint file: which token ranges of which tables are copied, so
//! a run started again after a crash skips them. Written whole and
//! atomically (`storage::fs::write_atomically`) after every finished range.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::MigrateError;

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The source, and the number of ranges each table's ring is cut into:
    /// a checkpoint from another source or split is refused.
    pub source: String,
    pub ranges: usize,
    /// `ks.t` -> finished range indexes and the rows they held.
    pub tables: BTreeMap<String, TableProgress>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableProgress {
    pub done: BTreeSet<usize>,
    pub rows: u64,
}

pub struct Checkpoint {
    path: PathBuf,
    pub progress: Progress,
}

impl Checkpoint {
    /// The file's progress, or a fresh one if it does not exist.
    pub fn open(path: &Path, source: &str, ranges: usize) -> Result<Checkpoint, MigrateError> {
        let fresh = Progress {
            source: source.into(),
            ranges,
            tables: BTreeMap::new(),
        };
        let progress = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<Progress>(&bytes)
                .map_err(|e| MigrateError::Checkpoint(format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => fresh.clone(),
            Err(e) => return Err(MigrateError::Checkpoint(format!("{}: {e}", path.display()))),
        };
        if progress.source != fresh.source || progress.ranges != fresh.ranges {
            return Err(MigrateError::Checkpoint(format!(
                "{} is of a run from {} in {} ranges, not {source} in {ranges}: remove it to start over",
                path.display(),
                progress.source,
                progress.ranges
            )));
        }
        Ok(Checkpoint {
            path: path.to_path_buf(),
            progress,
        })
    }

    pub fn table(&self, label: &str) -> TableProgress {
        self.progress.tables.get(label).cloned().unwrap_or_default()
    }

    pub fn finish_range(
        &mut self,
        label: &str,
        range: usize,
        rows: u64,
    ) -> Result<(), MigrateError> {
        let table = self.progress.tables.entry(label.to_string()).or_default();
        if table.done.insert(range) {
            table.rows += rows;
        }
        self.save()
    }

    fn save(&self) -> Result<(), MigrateError> {
        let bytes = serde_json::to_vec_pretty(&self.progress)
            .map_err(|e| MigrateError::Checkpoint(e.to_string()))?;
        let failed =
            |e: std::io::Error| MigrateError::Checkpoint(format!("{}: {e}", self.path.display()));
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                MigrateError::Checkpoint(format!("{}: not a file name", self.path.display()))
            })?;
        rocksandra_storage::fs::write_atomically(dir, name, &bytes).map_err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_ranges_survive_a_reopen_and_another_source_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("migrate.json");
        let mut checkpoint = Checkpoint::open(&path, "h:1", 8).expect("fresh");
        checkpoint.finish_range("ks.t", 3, 10).expect("saves");
        checkpoint.finish_range("ks.t", 3, 10).expect("saves");
        let again = Checkpoint::open(&path, "h:1", 8).expect("reads");
        assert_eq!(again.table("ks.t").done, BTreeSet::from([3]));
        assert_eq!(again.table("ks.t").rows, 10);
        assert!(Checkpoint::open(&path, "h:2", 8).is_err());
        assert!(Checkpoint::open(&path, "h:1", 16).is_err());
    }
}
