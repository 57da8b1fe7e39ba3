//! The RocksDB backend: `RocksStore` implements the storage `KvStore` seam on
//! one RocksDB instance, one column family per table, with the engine's merge
//! operator and compaction filter installed on every column family.
//!
//! Architecture invariant: this is the only crate that links RocksDB. It
//! decides nothing about Cassandra semantics: merging and purging call
//! `rocksandra_storage::merge`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{CStr, CString};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use rocksdb::compaction_filter::{CompactionFilter, Decision};
use rocksdb::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};
use rocksdb::merge_operator::MergeOperands;
use rocksdb::properties::{self, PropName};
use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, BottommostLevelCompaction, Cache,
    ColumnFamilyDescriptor, CompactOptions, DBCompactionStyle, DBCompressionType, DBWithThreadMode,
    DataBlockIndexType, IngestExternalFileOptions, MultiThreaded, Options, ReadOptions,
    SliceTransform, SstFileWriter, WriteBatch, WriteOptions,
};

use rocksandra_data::LocalTime;
use rocksandra_storage::api::{
    CompactionStyle, Compression, Durability, Result, SstablesPerRead, StorageError, StorageStats,
    TableId, TableOptions, TableStorageStats,
};
use rocksandra_storage::kv::{
    KeyRange, KeysVisitor, KvOp, KvStore, RangesVisitor, Rewrite, Visitor,
};
use rocksandra_storage::layout::keys::partition_prefix_len;
use rocksandra_storage::layout::table_options as table_options_file;
use rocksandra_storage::memory::Clock;
use rocksandra_storage::merge::{filter_entry_counted, merge_entry, FilterDecision};
use rocksandra_storage::partition_guard::{PartitionGuard, PartitionTally};
use rocksandra_storage::KvEngine;

mod rate_limit;
mod read_sample;
mod wal_location;

pub use rate_limit::RateLimit;
use read_sample::Sample;
pub use read_sample::SSTABLES_SAMPLE_EVERY;

type Db = DBWithThreadMode<MultiThreaded>;

/// Stream files are cut at this size (the seed system used 512 MiB); with
/// 64 MiB one always fits in an internode frame (`MAX_FRAME_BYTES`).
pub const STREAM_FILE_BYTES_MAX: u64 = 64 << 20;

/// Partitions with a tombstone past gc_grace, remembered between two calls of
/// `take_purge_candidates`; more are forgotten until a later compaction
/// reports them again.
pub const PURGE_CANDIDATES_MAX: usize = 100_000;

type Candidates = Arc<Mutex<BTreeSet<(u64, Vec<u8>)>>>;

/// The `partition_size` and `partition_tombstones` guardrails every
/// compaction filter reads when it starts (`RocksStore::set_partition_guard`).
type GuardSlot = Arc<RwLock<Option<PartitionGuard>>>;

/// How the RocksDB instance is sized and synced.
#[derive(Clone, Debug)]
pub struct RocksConfig {
    pub durability: Durability,
    /// One block cache shared by all tables.
    pub block_cache_bytes: usize,
    /// The engine's point cache (`KvEngine::with_point_cache`); 0: none.
    pub point_cache_bytes: usize,
    /// Limit on all memtables of all tables together.
    pub write_buffer_bytes_max: usize,
    /// Memtable size of one table.
    pub table_write_buffer_bytes: usize,
    /// Flushes and compactions at once (RocksDB's `max_background_jobs`);
    /// `background_jobs_for_compactions` turns a compaction count into it.
    pub background_jobs: i32,
    /// Where the write-ahead log lives; None keeps it in the DB directory.
    pub wal_dir: Option<PathBuf>,
    /// Bytes per second that flushes and compactions may write together
    /// (RocksDB's rate limiter); None leaves them unthrottled.
    pub write_rate_limit_bytes: Option<u64>,
}

/// The `max_background_jobs` that gives RocksDB `compactions` compaction
/// threads: it keeps a quarter of the jobs (at least one) for flushes.
/// Counts are taken between 1 and 65,536.
pub fn background_jobs_for_compactions(compactions: i32) -> i32 {
    let compactions = compactions.clamp(1, 1 << 16);
    let mut jobs = compactions + 1;
    while jobs - (jobs / 4).max(1) < compactions {
        jobs += 1;
    }
    jobs
}

impl Default for RocksConfig {
    fn default() -> Self {
        RocksConfig {
            durability: Durability::Periodic { period_ms: 10_000 },
            block_cache_bytes: 256 << 20,
            point_cache_bytes: 0,
            write_buffer_bytes_max: 256 << 20,
            table_write_buffer_bytes: 64 << 20,
            background_jobs: 2,
            wal_dir: None,
            write_rate_limit_bytes: None,
        }
    }
}

struct Shared {
    db: Db,
    /// The DB options, kept for their statistics (tickers are read from here).
    db_options: Options,
    config: RocksConfig,
    cache: Cache,
    clock: Clock,
    /// gc_grace_seconds per column family, read by compaction filters.
    gc_grace: RwLock<HashMap<String, Arc<AtomicI64>>>,
    failure: Mutex<Option<String>>,
    /// The last write or WAL sync found the data volume full. Not a latch:
    /// RocksDB resumes by itself once space is freed (its SstFileManager
    /// polls the free space), and the next write that succeeds clears it.
    out_of_space: AtomicBool,
    /// RocksDB's count of background errors when last looked at.
    background_errors: AtomicU64,
    stopping: AtomicBool,
    purge_candidates: Candidates,
    partition_guard: GuardSlot,
    /// Options of every table, mirrored in `TABLE_OPTIONS_FILE`.
    table_options: Mutex<BTreeMap<TableId, TableOptions>>,
    dir: PathBuf,
    /// The read options of every point lookup, made once: creating and
    /// destroying RocksDB's `ReadOptions` per read was 1% of a read's CPU.
    point_read_options: ReadOptions,
    /// The write rate of flushes and compactions (`compaction_throughput`).
    rate_limit: RateLimit,
    /// SST files per sampled partition read, by table (`read_sample`);
    /// a table's entry leaves with it.
    sstables_per_read: Mutex<HashMap<TableId, SstablesPerRead>>,
}

/// Options of every column family, which RocksDB needs before the schema is
/// loaded (`rocksandra_storage::layout::table_options`).
pub const TABLE_OPTIONS_FILE: &str = "TABLE-OPTIONS";

fn read_table_options(dir: &Path) -> Result<BTreeMap<TableId, TableOptions>> {
    match std::fs::read_to_string(dir.join(TABLE_OPTIONS_FILE)) {
        Ok(text) => Ok(table_options_file::decode(&text)?.into_iter().collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(StorageError::Io {
            action: "reading the table options file",
            detail: e.to_string(),
        }),
    }
}

/// Replaces the table options file atomically (write, sync, rename, sync).
fn write_table_options(dir: &Path, tables: &BTreeMap<TableId, TableOptions>) -> Result<()> {
    let io = |e: std::io::Error| StorageError::Io {
        action: "writing the table options file",
        detail: e.to_string(),
    };
    let list: Vec<(TableId, TableOptions)> =
        tables.iter().map(|(id, o)| (*id, o.clone())).collect();
    rocksandra_storage::fs::write_atomically(
        dir,
        TABLE_OPTIONS_FILE,
        table_options_file::encode(&list).as_bytes(),
    )
    .map_err(io)
}

pub struct RocksStore {
    shared: Arc<Shared>,
    syncer: Option<JoinHandle<()>>,
}

/// Opens a RocksDB-backed engine in `dir`.
pub fn open_engine(dir: &Path, config: RocksConfig, clock: Clock) -> Result<KvEngine<RocksStore>> {
    let point_cache_bytes = config.point_cache_bytes;
    Ok(KvEngine::new(RocksStore::open(dir, config, clock)?).with_point_cache(point_cache_bytes))
}

fn cf_name(table: TableId) -> String {
    format!("t{}", table.0)
}

/// `t` and the 20 digits of the largest table id.
const CF_NAME_BYTES_MAX: usize = 21;

/// `cf_name` written into `buffer`, without an allocation.
fn cf_name_in(table: TableId, buffer: &mut [u8; CF_NAME_BYTES_MAX]) -> &str {
    use std::io::Write;
    let mut rest = &mut buffer[..];
    // Always fits: `t` and at most 20 digits.
    let _ = write!(rest, "t{}", table.0);
    let len = CF_NAME_BYTES_MAX - rest.len();
    std::str::from_utf8(&buffer[..len]).unwrap_or("")
}

/// The table of a column family named by `cf_name` (None for `default`).
fn table_of(cf_name: &str) -> Option<TableId> {
    cf_name.strip_prefix('t')?.parse().ok().map(TableId)
}

/// Stream files being written: entries in key order, as merge entries (so
/// that ingestion merges them with the receiver's data), cut at
/// `STREAM_FILE_BYTES_MAX`.
struct StreamFiles<'a> {
    dir: &'a Path,
    /// RocksDB's defaults; a writer borrows them for its whole life.
    options: &'a Options,
    files: Vec<PathBuf>,
    writer: Option<(SstFileWriter<'a>, PathBuf)>,
}

impl<'a> StreamFiles<'a> {
    fn new(dir: &'a Path, options: &'a Options) -> StreamFiles<'a> {
        StreamFiles {
            dir,
            options,
            files: Vec::new(),
            writer: None,
        }
    }

    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let (mut writer, path) = match self.writer.take() {
            Some(open) => open,
            None => {
                let path = self.dir.join(format!("stream-{}.sst", self.files.len()));
                let writer = SstFileWriter::create(self.options);
                writer
                    .open(&path)
                    .map_err(rocks_error("opening a stream file"))?;
                (writer, path)
            }
        };
        writer
            .merge(key, value)
            .map_err(rocks_error("writing a stream file"))?;
        if writer.file_size() >= STREAM_FILE_BYTES_MAX {
            writer
                .finish()
                .map_err(rocks_error("finishing a stream file"))?;
            self.files.push(path);
        } else {
            self.writer = Some((writer, path));
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<PathBuf>> {
        if let Some((mut writer, path)) = self.writer.take() {
            writer
                .finish()
                .map_err(rocks_error("finishing a stream file"))?;
            self.files.push(path);
        }
        Ok(self.files)
    }
}

/// Opens `table` of the checkpoint in `source` read-only: RocksDB's info
/// log goes to `scratch`, so nothing in `source` is written or changed (its
/// files are hard links of a live store's).
fn open_checkpoint(source: &Path, table: TableId, scratch: &Path) -> Result<Db> {
    if !source.join("CURRENT").is_file() {
        return Err(StorageError::Invalid(format!(
            "{} is not a snapshot directory (it has no CURRENT file)",
            source.display()
        )));
    }
    let mut options = Options::default();
    options.set_db_log_dir(scratch);
    let mut table_options = Options::default();
    table_options.set_merge_operator_associative("rocksandra-row-merge", merge_operator);
    let descriptors = vec![
        ColumnFamilyDescriptor::new("default", Options::default()),
        ColumnFamilyDescriptor::new(cf_name(table), table_options),
    ];
    Db::open_cf_descriptors_read_only(&options, source, descriptors, false)
        .map_err(rocks_error("opening a snapshot"))
}

fn rocks_error(action: &'static str) -> impl Fn(rocksdb::Error) -> StorageError {
    move |e| {
        let detail = e.to_string();
        if is_no_space(&detail) {
            StorageError::NoSpace { action, detail }
        } else {
            StorageError::Io { action, detail }
        }
    }
}

/// RocksDB's text for its `NoSpace` status (an ENOSPC from the file
/// system, or its own SstFileManager's space limit).
fn is_no_space(error: &str) -> bool {
    error.contains("No space left on device")
}

/// A WAL whose append failed keeps failing with this until RocksDB
/// resumes on a new one: the consequence of an error that was reported
/// (and made the store read-only, unless it was a full disk) where it
/// happened, not a failure of its own.
fn is_earlier_error(error: &str) -> bool {
    error.contains("Writer has previous error")
}

impl RocksStore {
    /// Sets the `partition_size` and `partition_tombstones` guardrails
    /// that the compactions starting from now on check (None: none).
    pub fn set_partition_guard(&self, guard: Option<PartitionGuard>) {
        if let Ok(mut slot) = self.shared.partition_guard.write() {
            *slot = guard;
        }
    }

    pub fn open(dir: &Path, config: RocksConfig, clock: Clock) -> Result<RocksStore> {
        // HyperClockCache (RocksDB's recommended cache): lock-free lookups,
        // where the LRU cache's were a hash-chain walk under a shard mutex
        // on every read. Its table grows with the data (entry charge 0).
        wal_location::check(dir, config.wal_dir.as_deref())?;
        let cache = Cache::new_hyper_clock_cache(config.block_cache_bytes, 0);
        let mut db_options = Options::default();
        db_options.create_if_missing(true);
        db_options.create_missing_column_families(true);
        db_options.set_db_write_buffer_size(config.write_buffer_bytes_max);
        db_options.set_max_background_jobs(config.background_jobs);
        if let Some(dir) = &config.wal_dir {
            db_options.set_wal_dir(dir);
        }
        let rate_limit = RateLimit::install(&mut db_options, config.write_rate_limit_bytes);
        db_options.set_enable_pipelined_write(true);
        // A writer waiting for its write group's leader blocks instead of
        // spinning and yielding first: the spin was 8% of a write's CPU on
        // two cores, and turning it off took a write from 27.8 to 21.4 µs
        // (medians of 4 runs, docs/benchmarks/2026-11-27-write-path.md).
        db_options.set_enable_write_thread_adaptive_yield(false);
        // Write files back in the background every MiB, so the periodic WAL
        // sync (and SST syncs) find little left to write: a sync that must
        // write ten seconds of WAL holds writers up for tens of ms.
        db_options.set_wal_bytes_per_sync(1 << 20);
        db_options.set_bytes_per_sync(1 << 20);
        // Tickers only (write stalls, block cache hits and misses): the
        // cheapest level that keeps them, without histograms or timers.
        db_options.enable_statistics();
        db_options.set_statistics_level(StatsLevel::ExceptHistogramOrTimers);
        let existing = if dir.join("CURRENT").exists() {
            Db::list_cf(&db_options, dir).map_err(rocks_error("listing column families"))?
        } else {
            vec!["default".to_string()]
        };
        let stored = read_table_options(dir)?;
        let options_of = |name: &str| {
            table_of(name)
                .and_then(|t| stored.get(&t).cloned())
                .unwrap_or_default()
        };
        let gc_grace: HashMap<String, Arc<AtomicI64>> = existing
            .iter()
            .map(|name| {
                let grace = options_of(name).gc_grace_seconds;
                (name.clone(), Arc::new(AtomicI64::new(grace)))
            })
            .collect();
        let purge_candidates = Candidates::default();
        let partition_guard = GuardSlot::default();
        let descriptors: Vec<ColumnFamilyDescriptor> = existing
            .iter()
            .map(|name| {
                let options = table_options(
                    &config,
                    &cache,
                    &options_of(name),
                    FilterShared {
                        table: table_of(name),
                        gc_grace: gc_grace.get(name).cloned().unwrap_or_default(),
                        clock: clock.clone(),
                        candidates: purge_candidates.clone(),
                        guard: partition_guard.clone(),
                    },
                );
                ColumnFamilyDescriptor::new(name, options)
            })
            .collect();
        let db = Db::open_cf_descriptors(&db_options, dir, descriptors)
            .map_err(rocks_error("opening RocksDB"))?;
        let shared = Arc::new(Shared {
            db,
            db_options,
            config: config.clone(),
            cache,
            clock,
            gc_grace: RwLock::new(gc_grace),
            failure: Mutex::new(None),
            out_of_space: AtomicBool::new(false),
            background_errors: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            purge_candidates,
            partition_guard,
            table_options: Mutex::new(stored),
            dir: dir.to_path_buf(),
            point_read_options: ReadOptions::default(),
            rate_limit,
            sstables_per_read: Mutex::default(),
        });
        let syncer = match config.durability {
            Durability::Periodic { period_ms } => Some(spawn_syncer(shared.clone(), period_ms)?),
            Durability::Batch => None,
        };
        Ok(RocksStore { shared, syncer })
    }

    pub fn db(&self) -> &DBWithThreadMode<MultiThreaded> {
        &self.shared.db
    }

    /// Why the store refuses writes, if it does.
    pub fn failure(&self) -> Option<String> {
        self.shared.failure()
    }

    fn cf(&self, table: TableId) -> Result<Arc<rocksdb::BoundColumnFamily<'_>>> {
        // The name on the stack: this runs on every read.
        let mut buffer = [0u8; CF_NAME_BYTES_MAX];
        let name = cf_name_in(table, &mut buffer);
        self.shared
            .db
            .cf_handle(name)
            .ok_or(StorageError::UnknownTable(table))
    }
}

impl Shared {
    fn options_lock(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<TableId, TableOptions>>> {
        self.table_options
            .lock()
            .map_err(|_| StorageError::ReadOnly("table options lock poisoned".into()))
    }

    fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    fn fail(&self, reason: String) {
        if let Ok(mut f) = self.failure.lock() {
            if f.is_none() {
                eprintln!("rocksandra storage: entering read-only state: {reason}");
                *f = Some(reason);
            }
        }
    }

    /// An integer property of the DB, 0 when RocksDB does not report it.
    fn property(&self, name: &PropName) -> u64 {
        self.db.property_int_value(name).ok().flatten().unwrap_or(0)
    }

    /// An integer property summed over every column family.
    fn property_of_all_tables(&self, name: &PropName) -> u64 {
        let names: Vec<String> = self
            .gc_grace
            .read()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        names
            .iter()
            .filter_map(|cf| self.db.cf_handle(cf))
            .filter_map(|cf| self.db.property_int_value_cf(&cf, name).ok().flatten())
            .fold(0, u64::saturating_add)
    }

    /// Records what the last write or WAL sync found: the volume full, or
    /// room again.
    fn set_out_of_space(&self, full: bool) {
        if self.out_of_space.load(Ordering::Relaxed) != full
            && self.out_of_space.swap(full, Ordering::Relaxed) != full
        {
            match full {
                true => eprintln!(
                    "rocksandra storage: the data volume is full; writes are refused until \
                     space is freed (RocksDB checks every 5 seconds)"
                ),
                false => eprintln!("rocksandra storage: writes succeed again"),
            }
        }
    }

    /// Logs the background errors RocksDB met since the last look. Not a
    /// latch: RocksDB itself stops writes after a hard error (writes then
    /// fail, and `write_batch` makes the store read-only unless the disk
    /// is full), resumes by itself after a full disk, and keeps going
    /// after a soft one.
    fn check_background_errors(&self) {
        let n = self.background_error_count();
        let seen = self.background_errors.swap(n, Ordering::Relaxed);
        if n > seen {
            eprintln!(
                "rocksandra storage: RocksDB met {} background error(s) ({n} in all; \
                 its LOG in the data directory says which)",
                n - seen
            );
        }
    }

    /// RocksDB's count of background errors since it opened.
    fn background_error_count(&self) -> u64 {
        self.property(properties::BACKGROUND_ERRORS)
    }

    /// Records a sampled partition read of `table` (one in
    /// `SSTABLES_SAMPLE_EVERY`: the lock is not taken on other reads).
    fn record_sample(&self, table: TableId, sample: Option<Sample>) {
        let Some(sample) = sample else {
            return;
        };
        let files = sample.files();
        if let Ok(mut tables) = self.sstables_per_read.lock() {
            tables.entry(table).or_default().record(files);
        }
    }
}

fn spawn_syncer(shared: Arc<Shared>, period_ms: u64) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("wal-sync".into())
        .spawn(move || {
            let tick = Duration::from_millis(period_ms.clamp(1, 100));
            let mut waited = 0u64;
            let mut errors_seen = 0u64;
            while !shared.stopping.load(Ordering::Acquire) {
                std::thread::sleep(tick);
                waited += tick.as_millis() as u64;
                if waited < period_ms {
                    continue;
                }
                waited = 0;
                // A sync after a failed WAL append meets the failed writer,
                // and RocksDB counts that as a new write error, a fatal one
                // that ends its recovery from the full disk: no sync while
                // the disk is full or a background error has just come.
                shared.check_background_errors();
                let errors = shared.background_error_count();
                let new_errors = std::mem::replace(&mut errors_seen, errors) < errors;
                if new_errors || shared.out_of_space.load(Ordering::Relaxed) {
                    continue;
                }
                if let Err(e) = shared.db.flush_wal(true) {
                    let reason = format!("WAL sync failed: {e}");
                    // The WAL's unsynced tail is still in the memtables,
                    // which RocksDB flushes as it resumes.
                    if is_no_space(&reason) {
                        shared.set_out_of_space(true);
                    } else if !is_earlier_error(&reason) {
                        shared.fail(reason);
                    }
                }
            }
        })
        .map_err(|e| StorageError::Io {
            action: "starting the WAL sync thread",
            detail: e.to_string(),
        })
}

impl Drop for RocksStore {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        if let Some(handle) = self.syncer.take() {
            let _ = handle.join();
        }
        // Clean shutdown loses nothing whatever the sync mode.
        let _ = self.shared.db.flush_wal(true);
    }
}

/// What the compaction filters of one column family share with the store.
struct FilterShared {
    table: Option<TableId>,
    gc_grace: Arc<AtomicI64>,
    clock: Clock,
    candidates: Candidates,
    guard: GuardSlot,
}

/// The largest data block: a table's `chunk_length_in_kb` may be larger
/// (Cassandra accepts any power of 2), but a point read decodes one block.
const BLOCK_BYTES_MAX: u32 = 1 << 20;

/// RocksDB's data block size for `table`: its compression chunk length.
/// 16 KiB (Cassandra's default) against RocksDB's 4 KiB took writes from
/// 19.5 to 17.3 µs (medians) and reads larger than the cache from 40.6 to
/// 36.9 µs; reads in memory stayed inside the runs' spread
/// (docs/benchmarks/2026-11-27-ab-block-size.md). A quarter of the index
/// to search and of the blocks to miss in the cache.
fn block_size(table: &TableOptions) -> usize {
    table.block_bytes.clamp(1024, BLOCK_BYTES_MAX) as usize
}

/// The memtable bloom filter's size, as a share of the write buffer.
const MEMTABLE_BLOOM_RATIO: f64 = 0.015;

fn table_options(
    config: &RocksConfig,
    cache: &Cache,
    table: &TableOptions,
    filter: FilterShared,
) -> Options {
    let mut options = Options::default();
    options.set_merge_operator_associative("rocksandra-row-merge", merge_operator);
    options.set_compaction_filter_factory(PurgeFilterFactory {
        shared: filter,
        name: CString::from(c"rocksandra-purge"),
    });
    options.set_write_buffer_size(config.table_write_buffer_bytes);
    // A bloom filter of each memtable's keys: a point lookup of a key the
    // memtable does not hold (most of them) skips the skiplist search. It
    // takes this share of the write buffer, allocated with each memtable
    // (1 MiB of 64: about 12 bits per key for 100-byte rows).
    options.set_memtable_prefix_bloom_ratio(MEMTABLE_BLOOM_RATIO);
    options.set_memtable_whole_key_filtering(true);
    let mut block = BlockBasedOptions::default();
    block.set_block_cache(cache);
    if table.bloom_filter_fp_chance > 0.0 && table.bloom_filter_fp_chance < 1.0 {
        // bits per key for a false-positive rate p: -ln(p) / ln(2)^2.
        let bits = -table.bloom_filter_fp_chance.ln() / (std::f64::consts::LN_2.powi(2));
        block.set_bloom_filter(bits.clamp(1.0, 30.0), false);
    }
    // Partition blooms: a read of an absent partition, or of one that is
    // not in a file, skips that file (`scan_ranges` reads one partition).
    // Whole keys too: the point lookups of a table without clustering
    // columns (`get_many`) skip a file that holds the partition's row but
    // not its header, as is the rule.
    block.set_whole_key_filtering(true);
    options.set_prefix_extractor(SliceTransform::create(
        "rocksandra-partition",
        |key| &key[..partition_prefix_len(key).unwrap_or(key.len())],
        Some(|key| partition_prefix_len(key).is_some()),
    ));
    // Index and filters in the shared block cache (with high priority,
    // level 0's pinned), one block each per file.
    block.set_cache_index_and_filter_blocks(true);
    block.set_cache_index_and_filter_blocks_with_high_priority(true);
    block.set_index_type(BlockBasedIndexType::BinarySearch);
    block.set_pin_l0_filter_and_index_blocks_in_cache(true);
    // A hash index in each data block: a point lookup finds its key
    // without a binary search over the block's restart points.
    block.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
    block.set_data_block_hash_ratio(0.75);
    block.set_block_size(block_size(table));
    options.set_block_based_table_factory(&block);
    options.set_compression_type(match table.compression {
        Compression::None => DBCompressionType::None,
        Compression::Lz4 => DBCompressionType::Lz4,
        Compression::Zstd => DBCompressionType::Zstd,
    });
    match table.compaction {
        CompactionStyle::Leveled => {
            options.set_compaction_style(DBCompactionStyle::Level);
            options.set_level_compaction_dynamic_level_bytes(true);
        }
        CompactionStyle::Universal => options.set_compaction_style(DBCompactionStyle::Universal),
        CompactionStyle::TimeWindow => {
            // TTL-heavy data: universal compaction, with periodic compactions
            // so expired cells are purged even in cold files.
            options.set_compaction_style(DBCompactionStyle::Universal);
            let ttl = table.default_ttl_seconds.max(3600) as u64;
            options.set_periodic_compaction_seconds(ttl);
        }
    }
    options
}

fn merge_operator(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    match merge_entry(existing, operands.iter()) {
        Ok(merged) => Some(merged),
        Err(e) => {
            // Returning None fails the read or compaction with a corruption
            // error rather than silently losing data.
            eprintln!("rocksandra storage: merge failed: {e}");
            None
        }
    }
}

struct PurgeFilterFactory {
    shared: FilterShared,
    name: CString,
}

impl CompactionFilterFactory for PurgeFilterFactory {
    type Filter = PurgeFilter;

    fn create(&mut self, _context: CompactionFilterContext) -> PurgeFilter {
        let guard = self.shared.guard.read().ok().and_then(|g| g.clone());
        let tally = guard
            .filter(|g| g.thresholds.is_set())
            .zip(self.shared.table)
            .map(|(guard, table)| PartitionTally::new(guard, table));
        PurgeFilter {
            now: (self.shared.clock)(),
            gc_grace_seconds: self.shared.gc_grace.load(Ordering::Relaxed),
            table: self.shared.table,
            candidates: self.shared.candidates.clone(),
            changed: Vec::new(),
            name: self.name.clone(),
            tally,
        }
    }

    fn name(&self) -> &CStr {
        &self.name
    }
}

/// Expires TTLs and purges tombstones past gc_grace during compaction,
/// reports partition-level tombstones past gc_grace to the engine, and,
/// with the `partition_size` or `partition_tombstones` guardrail set, adds
/// up each partition it keeps (`PartitionTally`).
/// Through RocksDB's C API this sees plain values only: merge operands are
/// kept as they are, and a value merged by this compaction is seen by the
/// next one. A plain value hides every older version of its key, so each
/// value seen holds the complete history of its key.
struct PurgeFilter {
    now: LocalTime,
    gc_grace_seconds: i64,
    table: Option<TableId>,
    candidates: Candidates,
    changed: Vec<u8>,
    name: CString,
    tally: Option<PartitionTally>,
}

impl PurgeFilter {
    /// What the tally counts of an entry kept as `kept` (its value's
    /// length) under `key`.
    fn count(&mut self, key: &[u8], kept: usize, tombstones: u64) {
        let Some(tally) = &mut self.tally else { return };
        if let Some(prefix_len) = partition_prefix_len(key) {
            tally.entry(key, prefix_len, (key.len() + kept) as u64, tombstones);
        }
    }

    fn report(&self, partition_prefix: &[u8]) {
        let Some(table) = self.table else { return };
        if let Ok(mut set) = self.candidates.lock() {
            if set.len() < PURGE_CANDIDATES_MAX {
                set.insert((table.0, partition_prefix.to_vec()));
            }
        }
    }
}

impl CompactionFilter for PurgeFilter {
    fn filter(&mut self, _level: u32, key: &[u8], value: &[u8]) -> Decision {
        let times = (self.now, self.gc_grace_seconds);
        let (decision, tombstones) = filter_entry_counted(key, value, times, self.tally.is_some());
        match decision {
            FilterDecision::Keep => {
                self.count(key, value.len(), tombstones);
                Decision::Keep
            }
            FilterDecision::KeepUntilPushedDown { prefix_len } => {
                self.count(key, value.len(), tombstones);
                self.report(key.get(..prefix_len).unwrap_or(key));
                Decision::Keep
            }
            FilterDecision::Remove => Decision::Remove,
            FilterDecision::Change(bytes) => {
                self.count(key, bytes.len(), tombstones);
                // `Decision::Change` takes a `&'static [u8]` although RocksDB
                // only reads the slice until the callback returns; the bytes
                // live in `self.changed` instead of being leaked per entry.
                self.changed = bytes;
                // SAFETY: the only reader of the slice is the C shim that
                // called us (`rocksdb_compactionfilter_t::Filter` in
                // librocksdb-sys's rocksdb/db/c.cc), which copies it with
                // `new_value->assign(ptr, len)` right after this callback
                // returns. A filter made by a factory is used by one thread
                // at a time, so `self.changed` is neither written nor dropped
                // (the next `filter` call, or dropping the filter) before that
                // copy is done; the slice is never read after that.
                let slice: &'static [u8] =
                    unsafe { std::mem::transmute::<&[u8], &'static [u8]>(self.changed.as_slice()) };
                Decision::Change(slice)
            }
        }
    }

    fn name(&self) -> &CStr {
        &self.name
    }
}

impl KvStore for RocksStore {
    fn create_table(&self, table: TableId, options: &TableOptions) -> Result<()> {
        let name = cf_name(table);
        let gc_grace = {
            let mut map = self
                .shared
                .gc_grace
                .write()
                .map_err(|_| StorageError::ReadOnly("gc_grace lock poisoned".into()))?;
            map.entry(name.clone())
                .or_insert_with(|| Arc::new(AtomicI64::new(options.gc_grace_seconds)))
                .clone()
        };
        gc_grace.store(options.gc_grace_seconds, Ordering::Relaxed);
        if self.shared.db.cf_handle(&name).is_some() {
            // Reopened after a restart: only dynamic options can change.
            return self.set_options(table, options);
        }
        let cf_options = table_options(
            &self.shared.config,
            &self.shared.cache,
            options,
            FilterShared {
                table: Some(table),
                gc_grace,
                clock: self.shared.clock.clone(),
                candidates: self.shared.purge_candidates.clone(),
                guard: self.shared.partition_guard.clone(),
            },
        );
        let mut tables = self.shared.options_lock()?;
        tables.insert(table, options.clone());
        write_table_options(&self.shared.dir, &tables)?;
        self.shared
            .db
            .create_cf(&name, &cf_options)
            .map_err(rocks_error("creating a column family"))
    }

    fn set_options(&self, table: TableId, options: &TableOptions) -> Result<()> {
        let name = cf_name(table);
        if let Ok(map) = self.shared.gc_grace.read() {
            if let Some(g) = map.get(&name) {
                g.store(options.gc_grace_seconds, Ordering::Relaxed);
            }
        }
        let cf = self.cf(table)?;
        {
            let mut tables = self.shared.options_lock()?;
            let mut stored = options.clone();
            // RocksDB cannot switch the compaction style of a column family
            // in place: the style chosen at creation stays.
            if let Some(previous) = tables.get(&table) {
                stored.compaction = previous.compaction;
            }
            if tables.get(&table) != Some(&stored) {
                tables.insert(table, stored);
                write_table_options(&self.shared.dir, &tables)?;
            }
        }
        let compression = match options.compression {
            Compression::None => "kNoCompression",
            Compression::Lz4 => "kLZ4Compression",
            Compression::Zstd => "kZSTD",
        };
        let table_factory = format!("{{block_size={};}}", block_size(options));
        self.shared
            .db
            .set_options_cf(
                &cf,
                &[
                    ("compression", compression),
                    ("block_based_table_factory", &table_factory),
                ],
            )
            .map_err(rocks_error("changing table options"))
    }

    fn drop_table(&self, table: TableId) -> Result<()> {
        let name = cf_name(table);
        if let Ok(mut map) = self.shared.gc_grace.write() {
            map.remove(&name);
        }
        if let Ok(mut tables) = self.shared.sstables_per_read.lock() {
            tables.remove(&table);
        }
        {
            let mut tables = self.shared.options_lock()?;
            if tables.remove(&table).is_some() {
                write_table_options(&self.shared.dir, &tables)?;
            }
        }
        if self.shared.db.cf_handle(&name).is_none() {
            return Ok(());
        }
        self.shared
            .db
            .drop_cf(&name)
            .map_err(rocks_error("dropping a column family"))
    }

    fn truncate(&self, table: TableId) -> Result<()> {
        let cf = self.cf(table)?;
        let mut batch = WriteBatch::default();
        if let Some(end) = self.end_of_table(table)? {
            batch.delete_range_cf(&cf, Vec::new(), end);
        }
        self.write_batch(batch)
    }

    fn write(&self, ops: &[(TableId, KvOp)]) -> Result<()> {
        if let Some(reason) = self.shared.failure() {
            return Err(StorageError::ReadOnly(reason));
        }
        let mut batch = WriteBatch::default();
        // A group of writes (`WriteGroup`) is mostly one table's: its
        // handle is looked up once per run of that table.
        let mut handle: Option<(TableId, Arc<rocksdb::BoundColumnFamily<'_>>)> = None;
        for (table, op) in ops {
            let cf = match &handle {
                Some((t, cf)) if t == table => cf.clone(),
                _ => {
                    let cf = self.cf(*table)?;
                    handle = Some((*table, cf.clone()));
                    cf
                }
            };
            match op {
                KvOp::Merge { key, value } => batch.merge_cf(&cf, key, value),
                KvOp::DeleteRange { start, end } => {
                    let end = match end {
                        Some(end) => Some(end.clone()),
                        None => self.end_of_table(*table)?,
                    };
                    if let Some(end) = end {
                        if *start < end {
                            batch.delete_range_cf(&cf, start, &end);
                        }
                    }
                }
            }
        }
        self.write_batch(batch)
    }

    fn get(&self, table: TableId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.cf(table)?;
        self.shared
            .db
            .get_cf_opt(&cf, key, &self.shared.point_read_options)
            .map_err(rocks_error("reading"))
    }

    fn scan(
        &self,
        table: TableId,
        range: &KeyRange,
        reverse: bool,
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        let cf = self.cf(table)?;
        let mut read_options = ReadOptions::default();
        // Any range, across partitions: not limited by the prefix extractor.
        read_options.set_total_order_seek(true);
        read_options.set_iterate_lower_bound(range.start.clone());
        if let Some(end) = &range.end {
            read_options.set_iterate_upper_bound(end.clone());
        }
        let mut iter = self.shared.db.raw_iterator_cf_opt(&cf, read_options);
        if reverse {
            iter.seek_to_last();
        } else {
            iter.seek(&range.start);
        }
        while iter.valid() {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            if visit(key, value).is_break() {
                break;
            }
            if reverse {
                iter.prev();
            } else {
                iter.next();
            }
        }
        iter.status().map_err(rocks_error("scanning"))
    }

    fn get_many(&self, table: TableId, keys: &[&[u8]], visit: &mut KeysVisitor<'_>) -> Result<()> {
        let cf = self.cf(table)?;
        let sample = Sample::start();
        // Sorted keys of one partition: one MultiGet, which looks each sorted
        // run up once for all of them, with values pinned (not copied).
        let found = self.shared.db.batched_multi_get_cf_opt(
            &cf,
            keys,
            true,
            &self.shared.point_read_options,
        );
        self.shared.record_sample(table, sample);
        for (i, value) in found.into_iter().enumerate() {
            if let Some(value) = value.map_err(rocks_error("reading"))? {
                visit(i, &value);
            }
        }
        Ok(())
    }

    fn scan_ranges(
        &self,
        table: TableId,
        within: &KeyRange,
        ranges: &[(KeyRange, bool)],
        visit: &mut RangesVisitor<'_>,
    ) -> Result<()> {
        let cf = self.cf(table)?;
        let mut read_options = ReadOptions::default();
        // Within one partition: seeks use the partition prefix blooms.
        read_options.set_prefix_same_as_start(true);
        read_options.set_iterate_lower_bound(within.start.clone());
        if let Some(end) = &within.end {
            read_options.set_iterate_upper_bound(end.clone());
        }
        let mut iter = self.shared.db.raw_iterator_cf_opt(&cf, read_options);
        let mut sample = Sample::start();
        // End of the previous forward range, if the iterator stands on the
        // first key at or after it: the next forward range starting there
        // or later needs no seek when that key is already inside it.
        let mut forward_end: Option<&[u8]> = None;
        for (i, (range, reverse)) in ranges.iter().enumerate() {
            let before_end = |key: &[u8]| range.end.as_deref().is_none_or(|end| key < end);
            if *reverse {
                match &range.end {
                    Some(end) => {
                        iter.seek_for_prev(end);
                        if iter.key() == Some(end.as_slice()) {
                            iter.prev();
                        }
                    }
                    None => iter.seek_to_last(),
                }
            } else {
                let positioned = forward_end.is_some_and(|end| end <= range.start.as_slice())
                    && iter.key().is_some_and(|k| k >= range.start.as_slice());
                if !positioned {
                    iter.seek(&range.start);
                }
            }
            while let (Some(key), Some(value)) = (iter.key(), iter.value()) {
                let inside = if *reverse {
                    key >= range.start.as_slice()
                } else {
                    before_end(key)
                };
                if !inside {
                    break;
                }
                if visit(i, key, value).is_break() {
                    self.shared.record_sample(table, sample);
                    return iter.status().map_err(rocks_error("scanning"));
                }
                if *reverse {
                    iter.prev();
                } else {
                    iter.next();
                }
            }
            iter.status().map_err(rocks_error("scanning"))?;
            forward_end = if *reverse { None } else { range.end.as_deref() };
            if let Some(sample) = sample.as_mut() {
                sample.lookup_done();
            }
        }
        self.shared.record_sample(table, sample);
        Ok(())
    }

    fn export(&self, table: TableId, range: &KeyRange, dir: &Path) -> Result<Vec<PathBuf>> {
        let options = Options::default();
        let mut files = StreamFiles::new(dir, &options);
        let mut error = None;
        self.scan(
            table,
            range,
            false,
            &mut |key, value| match files.add(key, value) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    error = Some(e);
                    ControlFlow::Break(())
                }
            },
        )?;
        if let Some(e) = error {
            return Err(e);
        }
        files.finish()
    }

    fn export_checkpoint(
        &self,
        source: &Path,
        table: TableId,
        rewrite: &mut Rewrite<'_>,
        dir: &Path,
    ) -> Result<(Vec<PathBuf>, u64, u64)> {
        let checkpoint = open_checkpoint(source, table, dir)?;
        let cf = checkpoint
            .cf_handle(&cf_name(table))
            .ok_or(StorageError::UnknownTable(table))?;
        let mut read_options = ReadOptions::default();
        read_options.set_total_order_seek(true);
        read_options.fill_cache(false);
        let mut iter = checkpoint.raw_iterator_cf_opt(&cf, read_options);
        iter.seek_to_first();
        let options = Options::default();
        let mut files = StreamFiles::new(dir, &options);
        let (mut entries, mut written) = (0, 0);
        while let (Some(key), Some(value)) = (iter.key(), iter.value()) {
            entries += 1;
            if let Some(value) = rewrite(key, value)? {
                files.add(key, &value)?;
                written += 1;
            }
            iter.next();
        }
        iter.status().map_err(rocks_error("reading a snapshot"))?;
        Ok((files.finish()?, entries, written))
    }

    fn ingest(&self, table: TableId, files: &[PathBuf]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        if let Some(reason) = self.shared.failure() {
            return Err(StorageError::ReadOnly(reason));
        }
        let cf = self.cf(table)?;
        let mut options = IngestExternalFileOptions::default();
        options.set_move_files(false);
        self.shared
            .db
            .ingest_external_file_cf_opts(&cf, &options, files.to_vec())
            .map_err(rocks_error("ingesting stream files"))
    }

    fn checkpoint(&self, dir: &Path) -> Result<()> {
        let checkpoint = rocksdb::checkpoint::Checkpoint::new(&self.shared.db)
            .map_err(rocks_error("preparing a snapshot"))?;
        checkpoint
            .create_checkpoint(dir)
            .map_err(rocks_error("creating a snapshot"))?;
        let tables = self.shared.options_lock()?;
        write_table_options(dir, &tables)
    }

    fn flush(&self) -> Result<()> {
        self.shared
            .db
            .flush_wal(true)
            .map_err(rocks_error("syncing the WAL"))?;
        let names: Vec<String> = self
            .shared
            .gc_grace
            .read()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for name in names {
            if let Some(cf) = self.shared.db.cf_handle(&name) {
                self.shared
                    .db
                    .flush_cf(&cf)
                    .map_err(rocks_error("flushing memtables"))?;
            }
        }
        Ok(())
    }

    fn latest_sequence_number(&self) -> Option<u64> {
        Some(self.shared.db.latest_sequence_number())
    }

    fn set_write_rate_limit(&self, bytes_per_second: Option<u64>) -> bool {
        self.shared.rate_limit.set(bytes_per_second);
        true
    }

    fn flush_table(&self, table: TableId) -> Result<()> {
        let cf = self.cf(table)?;
        self.shared
            .db
            .flush_wal(true)
            .map_err(rocks_error("syncing the WAL"))?;
        self.shared
            .db
            .flush_cf(&cf)
            .map_err(rocks_error("flushing memtables"))
    }

    fn compact(&self, table: TableId) -> Result<()> {
        let cf = self.cf(table)?;
        let mut options = CompactOptions::default();
        options.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        // Values merged by a compaction are not passed to its filter, only
        // to the next one's: the second run purges what the first merged.
        for _ in 0..2 {
            self.shared
                .db
                .compact_range_cf_opt(&cf, None::<&[u8]>, None::<&[u8]>, &options);
        }
        self.shared.check_background_errors();
        Ok(())
    }

    fn take_purge_candidates(&self) -> Vec<(TableId, Vec<u8>)> {
        match self.shared.purge_candidates.lock() {
            Ok(mut set) => std::mem::take(&mut *set)
                .into_iter()
                .map(|(table, prefix)| (TableId(table), prefix))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn stats(&self) -> StorageStats {
        let shared = &self.shared;
        shared.check_background_errors();
        let ticker = |ticker| shared.db_options.get_ticker_count(ticker);
        StorageStats {
            write_stall_micros: ticker(Ticker::StallMicros),
            block_cache_hits: ticker(Ticker::BlockCacheHit),
            block_cache_misses: ticker(Ticker::BlockCacheMiss),
            block_cache_usage_bytes: shared.cache.get_usage() as u64,
            compaction_pending_bytes: shared
                .property_of_all_tables(properties::ESTIMATE_PENDING_COMPACTION_BYTES),
            compactions_running: shared.property(properties::NUM_RUNNING_COMPACTIONS),
            compactions_pending: shared.property_of_all_tables(properties::COMPACTION_PENDING),
            memtable_bytes: shared.property_of_all_tables(properties::CUR_SIZE_ALL_MEM_TABLES),
            sst_bytes: shared.property_of_all_tables(properties::LIVE_SST_FILES_SIZE),
            read_only: shared.failure().is_some() || shared.out_of_space.load(Ordering::Relaxed),
            write_rate_limit_bytes: shared.rate_limit.get(),
            rate_limited_bytes: shared.rate_limit.bytes_through(),
            // The engine above adds its point cache's figures.
            ..StorageStats::default()
        }
    }

    fn table_stats(&self, table: TableId) -> TableStorageStats {
        let Ok(cf) = self.cf(table) else {
            return TableStorageStats::default();
        };
        let db = &self.shared.db;
        let int = |name: &PropName| db.property_int_value_cf(&cf, name).ok().flatten();
        let int = |name| int(name).unwrap_or(0);
        let sst_files = (0..ROCKSDB_LEVELS)
            .filter_map(|level| {
                db.property_value_cf(&cf, properties::num_files_at_level(level))
                    .ok()
                    .flatten()
            })
            .filter_map(|files| files.trim().parse::<u64>().ok())
            .sum();
        TableStorageStats {
            sst_files,
            live_sst_bytes: int(properties::LIVE_SST_FILES_SIZE),
            total_sst_bytes: int(properties::TOTAL_SST_FILES_SIZE),
            memtable_bytes: int(properties::CUR_SIZE_ALL_MEM_TABLES),
            memtable_entries: int(properties::NUM_ENTRIES_ACTIVE_MEM_TABLE)
                .saturating_add(int(properties::NUM_ENTRIES_IMM_MEM_TABLES)),
            estimated_entries: int(properties::ESTIMATE_NUM_KEYS),
            compactions_pending: int(properties::COMPACTION_PENDING),
            compaction_pending_bytes: int(properties::ESTIMATE_PENDING_COMPACTION_BYTES),
            sstables_per_read: self
                .shared
                .sstables_per_read
                .lock()
                .ok()
                .and_then(|tables| tables.get(&table).copied())
                .unwrap_or_default(),
        }
    }
}

/// RocksDB's default number of LSM levels (`num_levels`, not changed here).
const ROCKSDB_LEVELS: usize = 7;

impl RocksStore {
    fn write_batch(&self, batch: WriteBatch) -> Result<()> {
        if let Some(reason) = self.shared.failure() {
            return Err(StorageError::ReadOnly(reason));
        }
        let mut options = WriteOptions::default();
        options.set_sync(matches!(self.shared.config.durability, Durability::Batch));
        match self.shared.db.write_opt(batch, &options) {
            Ok(()) => {
                self.shared.set_out_of_space(false);
                Ok(())
            }
            Err(e) => match rocks_error("writing")(e) {
                full @ StorageError::NoSpace { .. } => {
                    self.shared.set_out_of_space(true);
                    Err(full)
                }
                other => {
                    if let StorageError::Io { detail, .. } = &other {
                        if !is_earlier_error(detail) {
                            self.shared.fail(format!("write failed: {detail}"));
                        }
                    }
                    Err(other)
                }
            },
        }
    }

    /// A key greater than every key of the table, if it has any.
    fn end_of_table(&self, table: TableId) -> Result<Option<Vec<u8>>> {
        let cf = self.cf(table)?;
        let mut read_options = ReadOptions::default();
        read_options.set_total_order_seek(true);
        let mut iter = self.shared.db.raw_iterator_cf_opt(&cf, read_options);
        iter.seek_to_last();
        let last = iter.key().map(|k| {
            let mut end = k.to_vec();
            end.push(0);
            end
        });
        iter.status()
            .map_err(rocks_error("finding the end of a table"))?;
        Ok(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_told_from_other_io_errors() {
        // RocksDB's texts, as a full tmpfs gave them.
        let append = "IO error: No space left on device: While appending to file: \
                      /data/rocksdb/000004.log: No space left on device";
        let after = "IO error: Writer has previous error.";
        let other = "IO error: Input/output error: While fsync: a file descriptor";
        assert!(is_no_space(append) && !is_earlier_error(append));
        assert!(is_earlier_error(after) && !is_no_space(after));
        assert!(!is_no_space(other) && !is_earlier_error(other));
    }

    #[test]
    fn background_jobs_give_the_asked_compaction_threads() {
        for compactions in 1..=64 {
            let jobs = background_jobs_for_compactions(compactions);
            // RocksDB's split of max_background_jobs (GetBGJobLimits).
            let flushes = (jobs / 4).max(1);
            assert_eq!((jobs - flushes).max(1), compactions, "{jobs} jobs");
        }
        assert_eq!(background_jobs_for_compactions(1), 2);
        assert_eq!(background_jobs_for_compactions(0), 2);
    }

    #[test]
    fn column_family_name_on_the_stack_is_the_allocated_one() {
        for id in [0, 7, 10, 99, 1_000_000_007, u64::MAX] {
            let mut buffer = [0u8; CF_NAME_BYTES_MAX];
            assert_eq!(cf_name_in(TableId(id), &mut buffer), cf_name(TableId(id)));
            assert_eq!(
                table_of(cf_name_in(TableId(id), &mut buffer)),
                Some(TableId(id))
            );
        }
    }
}
