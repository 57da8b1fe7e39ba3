//! Streaming a table's token ranges between nodes: the source writes the
//! ranges' data to files (`Engine::stream_out`, SST files on RocksDB), they
//! travel in one `Response::Files`, and the receiver ingests them
//! (`Engine::stream_in`). Bootstrap uses it today.

use std::path::Path;

use rocksandra_storage::{Engine, TableId, TokenRange};

/// Files of one stream: (name unique within the stream, content).
pub type StreamFiles = Vec<(String, Vec<u8>)>;

/// Writes `table`'s data in `ranges` under `work_dir` (removed afterwards)
/// and returns the files' contents.
pub fn export(
    engine: &dyn Engine,
    table: TableId,
    ranges: &[TokenRange],
    work_dir: &Path,
) -> Result<StreamFiles, String> {
    let result = (|| {
        let mut files = Vec::new();
        for (i, range) in ranges.iter().enumerate() {
            let sub = work_dir.join(i.to_string());
            std::fs::create_dir_all(&sub).map_err(|e| e.to_string())?;
            for path in engine
                .stream_out(table, *range, &sub)
                .map_err(|e| e.to_string())?
            {
                let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
                // Numbered, not named after the file: a wrapping range is
                // exported in two parts whose files share names.
                files.push((format!("{i}-{}.sst", files.len()), bytes));
            }
        }
        Ok(files)
    })();
    let _ = std::fs::remove_dir_all(work_dir);
    result
}

/// Ingests a stream's files into `table`, written under `work_dir` first
/// (removed afterwards). Returns the bytes received.
pub fn import(
    engine: &dyn Engine,
    table: TableId,
    files: StreamFiles,
    work_dir: &Path,
) -> Result<usize, String> {
    if files.is_empty() {
        return Ok(0);
    }
    let result = (|| {
        std::fs::create_dir_all(work_dir).map_err(|e| e.to_string())?;
        let mut paths = Vec::new();
        let mut bytes = 0;
        for (name, content) in files {
            let safe: String = name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                .collect();
            let path = work_dir.join(format!("{safe}.sst"));
            if path.exists() {
                return Err(format!("a stream sent two files named {name:?}"));
            }
            bytes += content.len();
            std::fs::write(&path, content).map_err(|e| e.to_string())?;
            paths.push(path);
        }
        engine
            .stream_in(table, &paths)
            .map_err(|e| e.to_string())
            .map(|()| bytes)
    })();
    let _ = std::fs::remove_dir_all(work_dir);
    result
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rocksandra_data::{LocalTime, Token};
    use rocksandra_storage::cell::{Cell, ColumnId};
    use rocksandra_storage::memory::MemoryStore;
    use rocksandra_storage::testkit::{full_read, pk, tempdir, test_table};
    use rocksandra_storage::{KvEngine, Mutation, RowUpdate};

    use super::*;

    const NOW: LocalTime = LocalTime(1_700_000_000);

    fn engine() -> KvEngine<MemoryStore> {
        let engine = KvEngine::new(MemoryStore::new(Arc::new(|| NOW)));
        engine.create_table(test_table(1)).expect("create table");
        engine
    }

    #[test]
    fn every_partition_of_a_wrapping_range_arrives() {
        let table = TableId(1);
        let source = engine();
        let writes: Vec<Mutation> = (0..200)
            .map(|p| {
                let mut m = Mutation::new(table, pk(&format!("k{p}")));
                m.rows.push((
                    vec![1i32.to_be_bytes().to_vec(), b"a".to_vec()],
                    RowUpdate {
                        cells: vec![Cell::live(ColumnId(1), 5, b"v".to_vec())],
                        ..Default::default()
                    },
                ));
                m
            })
            .collect();
        source.write(&writes, NOW).expect("write");
        // Two ranges, one wrapping past the ring's end (exported in two parts).
        let ranges = [
            TokenRange {
                start_exclusive: Token(5_000_000_000_000_000_000),
                end_inclusive: Token(-5_000_000_000_000_000_000),
            },
            TokenRange {
                start_exclusive: Token(-1_000_000_000_000_000_000),
                end_inclusive: Token(1_000_000_000_000_000_000),
            },
        ];
        let files = export(&source, table, &ranges, &tempdir("export")).expect("export");
        let target = engine();
        import(&target, table, files, &tempdir("import")).expect("import");
        let mut expected = 0;
        for p in 0..200 {
            let key = pk(&format!("k{p}"));
            let inside = ranges.iter().any(|r| r.contains(key.token));
            let got = target
                .read_partition(&full_read(table, key.clone()), NOW)
                .expect("read");
            assert_eq!(!got.rows.is_empty(), inside, "k{p} (token {:?})", key.token);
            expected += usize::from(inside);
        }
        // Both sides of the wrap held partitions, so both parts were sent.
        assert!(ranges[0].contains(Token(i64::MIN)) && expected > 0);
        let below = (0..200).filter(|p| pk(&format!("k{p}")).token.0 < -5_000_000_000_000_000_000);
        let above = (0..200).filter(|p| pk(&format!("k{p}")).token.0 > 5_000_000_000_000_000_000);
        assert!(below.count() > 0 && above.count() > 0);
    }

    #[test]
    fn duplicate_file_names_are_refused() {
        let target = engine();
        let files = vec![("a".to_string(), vec![1]), ("a".to_string(), vec![2])];
        let error = import(&target, TableId(1), files, &tempdir("dup")).expect_err("duplicate");
        assert!(error.contains("two files named"), "{error}");
    }
}
