//! ANN graphs across a clean restart. At a clean stop every usable graph
//! is written to `<data directory>/vector_graphs`: hnsw_rs's own dump (the
//! graph, and the vectors) and a manifest of ours (what the graph is of,
//! the row of each point, the storage engine's sequence number at the
//! dump, the checksums of the crate's files). At start, before any write,
//! a graph whose manifest is intact, whose column still has the same index,
//! and which was saved at the sequence number storage opened with (nothing
//! was written since, so it holds every stored vector) is loaded; every
//! other indexed vector column's graph is rebuilt in the background. The
//! files are deleted once read: a graph is current for one start only.
//!
//! Manifest, `<table id>-<column id>.manifest`, little-endian:
//! magic `RVGM`, format version (u32), table id (u64), column id (u32),
//! similarity (u8: 0 cosine, 1 euclidean, 2 dot product), dimension (u32),
//! sequence number (u64), then for `.hnsw.graph` and `.hnsw.data` their
//! length (u64) and CRC32 (u32), the point count (u64), each point's row
//! (partition key: u32 length and bytes; clustering: u32 count, `u32::MAX`
//! for none, then each value's u32 length and bytes), and last the CRC32
//! of every byte before it. The crate's files are checked against their
//! checksums before the crate reads them: its loader panics (or exits the
//! process) on bytes it does not expect.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnsw::Hnsw;
use hnsw_rs::hnswio::HnswIo;
use rocksandra_data::LocalTime;
use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::{Engine, PartitionKey, TableId};

use super::{indexed_vector, Graph, Graphs, RowKey, ScoreDistance, GRAPH_POINTS_MAX};
use crate::functions::vector::Similarity;
use crate::schema::{Schema, Table};

/// Where saved graphs are, in the data directory.
pub const GRAPHS_DIR: &str = "vector_graphs";
const MANIFEST_MAGIC: [u8; 4] = *b"RVGM";
const FORMAT_VERSION: u32 = 1;
const MANIFEST_SUFFIX: &str = ".manifest";
/// hnsw_rs's files of a dump: `<basename>.hnsw.graph`, `<basename>.hnsw.data`.
const HNSW_SUFFIXES: [&str; 2] = [".hnsw.graph", ".hnsw.data"];
/// The clustering count of a row without clustering.
const NO_CLUSTERING: u32 = u32::MAX;
/// Bytes read at a time while checksumming the crate's files.
const CHECKSUM_CHUNK_BYTES: usize = 64 * 1024;

/// Why a graph was not saved or not loaded.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("malformed saved graph: {0}")]
    Malformed(&'static str),
    #[error("saved at sequence number {saved}, storage opened at {opened:?}: written since")]
    Stale { saved: u64, opened: Option<u64> },
    #[error("the column's index changed since the graph was saved")]
    IndexChanged,
    #[error("{0} points, more than a graph holds ({GRAPH_POINTS_MAX})")]
    TooManyPoints(u64),
    #[error("hnsw_rs: {0}")]
    Hnsw(String),
}

type Result<T> = std::result::Result<T, PersistError>;

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PersistError {
    let path = path.to_path_buf();
    move |source| PersistError::Io { what, path, source }
}

/// A column's graph: its table and column.
pub type GraphKey = (TableId, ColumnId);

fn basename((table, column): GraphKey) -> String {
    format!("{}-{}", table.0, column.0)
}

/// The length and CRC32 of one of the crate's files.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct FileSum {
    bytes: u64,
    crc: u32,
}

/// What a manifest says, but the rows.
#[derive(Debug, PartialEq)]
struct Header {
    key: GraphKey,
    similarity: Similarity,
    dimension: u32,
    sequence: u64,
    files: [FileSum; 2],
}

/// What a saved graph must be to be loaded: the column's index as the
/// schema has it now, and the sequence number storage opened with.
pub struct Expected {
    pub key: GraphKey,
    pub similarity: Similarity,
    pub dimension: usize,
    pub sequence: Option<u64>,
}

fn similarity_code(similarity: Similarity) -> u8 {
    match similarity {
        Similarity::Cosine => 0,
        Similarity::Euclidean => 1,
        Similarity::DotProduct => 2,
    }
}

fn similarity_of(code: u8) -> Result<Similarity> {
    match code {
        0 => Ok(Similarity::Cosine),
        1 => Ok(Similarity::Euclidean),
        2 => Ok(Similarity::DotProduct),
        _ => Err(PersistError::Malformed("unknown similarity")),
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    // Partition keys and clustering values are far below 4 GiB.
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn encode(header: &Header, rows: &[RowKey]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + rows.len() * 32);
    out.extend_from_slice(&MANIFEST_MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&header.key.0 .0.to_le_bytes());
    out.extend_from_slice(&header.key.1 .0.to_le_bytes());
    out.push(similarity_code(header.similarity));
    out.extend_from_slice(&header.dimension.to_le_bytes());
    out.extend_from_slice(&header.sequence.to_le_bytes());
    for file in header.files {
        out.extend_from_slice(&file.bytes.to_le_bytes());
        out.extend_from_slice(&file.crc.to_le_bytes());
    }
    out.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    for (partition, clustering) in rows {
        put_bytes(&mut out, &partition.key);
        match clustering {
            None => out.extend_from_slice(&NO_CLUSTERING.to_le_bytes()),
            Some(values) => {
                out.extend_from_slice(&(values.len() as u32).to_le_bytes());
                for value in values {
                    put_bytes(&mut out, value);
                }
            }
        }
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The bytes of a manifest not read yet.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(PersistError::Malformed("truncated manifest"));
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64> {
        self.array().map(u64::from_le_bytes)
    }

    fn bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.u32()? as usize;
        self.take(n).map(<[u8]>::to_vec)
    }
}

/// The manifest's header and rows, once its checksum, magic, version and
/// point count are right.
fn decode(manifest: &[u8]) -> Result<(Header, Vec<RowKey>)> {
    let Some(body_len) = manifest.len().checked_sub(4) else {
        return Err(PersistError::Malformed("truncated manifest"));
    };
    let (body, crc) = manifest.split_at(body_len);
    let mut crc_bytes = [0u8; 4];
    crc_bytes.copy_from_slice(crc);
    if crc32fast::hash(body) != u32::from_le_bytes(crc_bytes) {
        return Err(PersistError::Malformed("manifest checksum mismatch"));
    }
    let mut cursor = Cursor(body);
    if cursor.array::<4>()? != MANIFEST_MAGIC || cursor.u32()? != FORMAT_VERSION {
        return Err(PersistError::Malformed("not a manifest of this version"));
    }
    let key = (TableId(cursor.u64()?), ColumnId(cursor.u32()?));
    let similarity = similarity_of(cursor.array::<1>()?[0])?;
    let dimension = cursor.u32()?;
    let sequence = cursor.u64()?;
    let mut files = [FileSum::default(); 2];
    for file in &mut files {
        file.bytes = cursor.u64()?;
        file.crc = cursor.u32()?;
    }
    let header = Header {
        key,
        similarity,
        dimension,
        sequence,
        files,
    };
    let rows = decode_rows(&mut cursor)?;
    if !cursor.0.is_empty() {
        return Err(PersistError::Malformed("bytes after the rows"));
    }
    Ok((header, rows))
}

fn decode_rows(cursor: &mut Cursor<'_>) -> Result<Vec<RowKey>> {
    let points = cursor.u64()?;
    if points > GRAPH_POINTS_MAX as u64 {
        return Err(PersistError::TooManyPoints(points));
    }
    // Each row takes at least 8 bytes: no allocation beyond the file's.
    if points > (cursor.0.len() / 8) as u64 {
        return Err(PersistError::Malformed("more points than bytes"));
    }
    let mut rows = Vec::with_capacity(points as usize);
    for _ in 0..points {
        let partition = PartitionKey::new(cursor.bytes()?);
        let clustering = match cursor.u32()? {
            NO_CLUSTERING => None,
            count => Some(
                (0..count)
                    .map(|_| cursor.bytes())
                    .collect::<Result<Vec<_>>>()?,
            ),
        };
        rows.push((partition, clustering));
    }
    Ok(rows)
}

/// Syncs one of the crate's files and returns its length and CRC32.
fn sum_file(path: &Path, sync: bool) -> Result<FileSum> {
    let mut file = std::fs::File::open(path).map_err(io("open", path))?;
    if sync {
        file.sync_all().map_err(io("sync", path))?;
    }
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; CHECKSUM_CHUNK_BYTES];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buffer).map_err(io("read", path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        bytes += n as u64;
    }
    Ok(FileSum {
        bytes,
        crc: hasher.finalize(),
    })
}

fn hnsw_paths(dir: &Path, key: GraphKey) -> [PathBuf; 2] {
    let name = basename(key);
    HNSW_SUFFIXES.map(|suffix| dir.join(format!("{name}{suffix}")))
}

/// A panic of the crate, as an error.
fn unwinding<T>(f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        PersistError::Hnsw(format!("panicked: {text}"))
    })
}

/// Writes `graph` (the column `key`'s, built with `similarity`) to `dir`,
/// saved at storage's `sequence` number; the manifest goes last, so a
/// dump cut short has none.
pub fn save(
    dir: &Path,
    key: GraphKey,
    graph: &Graph,
    similarity: Similarity,
    sequence: u64,
) -> Result<usize> {
    // Inserts wait while the graph is written: it is the rows' graph.
    let rows = graph.rows.read().unwrap_or_else(|p| p.into_inner());
    let mut files = [FileSum::default(); 2];
    if !rows.is_empty() {
        let name = basename(key);
        let dumped = unwinding(|| graph.hnsw.file_dump(dir, &name))?
            .map_err(|e| PersistError::Hnsw(e.to_string()))?;
        if dumped != name {
            return Err(PersistError::Hnsw(format!("dumped as {dumped}")));
        }
        for (sum, path) in files.iter_mut().zip(hnsw_paths(dir, key)) {
            *sum = sum_file(&path, true)?;
        }
    }
    let header = Header {
        key,
        similarity,
        dimension: graph.dimension as u32,
        sequence,
        files,
    };
    let manifest = format!("{}{MANIFEST_SUFFIX}", basename(key));
    rocksandra_storage::fs::write_atomically(dir, &manifest, &encode(&header, &rows))
        .map_err(io("write", &dir.join(&manifest)))?;
    Ok(rows.len())
}

/// The graph saved in `dir` for `expected.key`, ready to answer; None when
/// there is none.
pub fn load(dir: &Path, expected: &Expected) -> Result<Option<Graph>> {
    let path = dir.join(format!("{}{MANIFEST_SUFFIX}", basename(expected.key)));
    let manifest = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", &path)(e)),
    };
    let (header, rows) = decode(&manifest)?;
    check(&header, expected)?;
    if rows.is_empty() {
        let graph = Graph::new(header.similarity, expected.dimension);
        graph.mark_built();
        return Ok(Some(graph));
    }
    for (sum, path) in header.files.iter().zip(hnsw_paths(dir, expected.key)) {
        if sum_file(&path, false)? != *sum {
            return Err(PersistError::Malformed(
                "graph file does not match its manifest",
            ));
        }
    }
    let hnsw = load_hnsw(dir, expected.key, header.similarity)?;
    if hnsw.get_nb_point() != rows.len() {
        return Err(PersistError::Malformed(
            "graph and manifest disagree on points",
        ));
    }
    let graph = Graph::with_hnsw(hnsw, rows, expected.dimension);
    graph.mark_built();
    Ok(Some(graph))
}

fn check(header: &Header, expected: &Expected) -> Result<()> {
    if header.key != expected.key
        || header.similarity != expected.similarity
        || header.dimension as usize != expected.dimension
    {
        return Err(PersistError::IndexChanged);
    }
    if Some(header.sequence) != expected.sequence {
        return Err(PersistError::Stale {
            saved: header.sequence,
            opened: expected.sequence,
        });
    }
    Ok(())
}

/// The crate's dump, read back with our distance. The loader borrows its
/// `HnswIo` for as long as the graph lives (for memory-mapped vectors,
/// which we do not use): it is leaked, a few hundred bytes per graph
/// loaded, once per start.
fn load_hnsw(
    dir: &Path,
    key: GraphKey,
    similarity: Similarity,
) -> Result<Hnsw<'static, f32, ScoreDistance>> {
    let loader: &'static HnswIo = Box::leak(Box::new(HnswIo::new(dir, &basename(key))));
    unwinding(|| loader.load_hnsw_with_dist(ScoreDistance(similarity)))?
        .map_err(|e| PersistError::Hnsw(e.to_string()))
}

/// Every file of the directory, deleted; a failure is logged.
fn clear(dir: &Path) {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::error!(
            "cannot delete the saved ANN graphs in {}: {e}",
            dir.display()
        ),
    }
}

/// `keyspace.table.column`, for logs.
pub(super) fn column_name(table: &Table, column: ColumnId) -> String {
    let name = table.columns.iter().find(|c| c.id == column);
    let name = name.map_or("?", |c| c.name.as_str());
    format!("{}.{}.{name}", table.keyspace, table.name)
}

impl Graphs {
    /// At a clean stop, once no write runs (the transport has stopped):
    /// writes every usable graph to `dir`, saved at storage's `sequence`
    /// number (read before, so that a write after it makes the graphs
    /// stale rather than incomplete). Returns how many were saved.
    pub fn save_all(&self, dir: &Path, schema: &Schema, sequence: Option<u64>) -> usize {
        let Some(sequence) = sequence else {
            return 0;
        };
        let usable: Vec<(GraphKey, Arc<Graph>)> = {
            let graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
            let usable = graphs.iter().filter(|(_, g)| g.usable());
            usable.map(|(k, g)| (*k, g.clone())).collect()
        };
        if usable.is_empty() {
            return 0;
        }
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!("cannot save the ANN graphs in {}: {e}", dir.display());
            return 0;
        }
        let mut saved = 0;
        for (key, graph) in usable {
            let Some((_, table)) = schema.table_by_storage_id(key.0) else {
                continue;
            };
            let Some((similarity, _)) = indexed_vector(table, key.1) else {
                continue;
            };
            let name = column_name(table, key.1);
            match save(dir, key, &graph, similarity, sequence) {
                Ok(points) => {
                    saved += 1;
                    tracing::info!("saved the ANN graph of {name}: {points} points");
                }
                Err(e) => tracing::warn!("cannot save the ANN graph of {name}: {e}"),
            }
        }
        saved
    }

    /// At start, once the schema is loaded and before any write: every
    /// indexed vector column gets its graph, loaded from `dir` when saved
    /// there at `sequence_at_open` (storage's sequence number when it
    /// opened), else built from storage in the background. The saved
    /// graphs are deleted then. Returns how many were loaded.
    pub fn start_all(
        self: &Arc<Self>,
        dir: &Path,
        schema: &Schema,
        engine: &Arc<dyn Engine>,
        (sequence_at_open, now): (Option<u64>, LocalTime),
    ) -> usize {
        let mut loaded = 0;
        for table in schema.tables().filter(|t| super::super::has_vector_sai(t)) {
            for column in &table.columns {
                let Some((similarity, dimension)) = indexed_vector(table, column.id) else {
                    continue;
                };
                let expected = Expected {
                    key: (table.storage_id, column.id),
                    similarity,
                    dimension,
                    sequence: sequence_at_open,
                };
                if self.start_one(dir, table, &expected, engine, now) {
                    loaded += 1;
                }
            }
        }
        clear(dir);
        loaded
    }

    /// One column's graph at start: loaded (true) or its build started.
    fn start_one(
        self: &Arc<Self>,
        dir: &Path,
        table: &Arc<Table>,
        expected: &Expected,
        engine: &Arc<dyn Engine>,
        now: LocalTime,
    ) -> bool {
        let name = column_name(table, expected.key.1);
        match load(dir, expected) {
            Ok(Some(graph)) => {
                let points = graph.points();
                let mut graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
                graphs.insert(expected.key, Arc::new(graph));
                tracing::info!(
                    "loaded the ANN graph of {name} saved at the last stop: {points} points"
                );
                return true;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("not loading the saved ANN graph of {name}: {e}"),
        }
        self.start_build(engine.clone(), table.clone(), expected.key.1, now);
        false
    }
}

#[cfg(test)]
mod tests;
