//! SST files per partition read (Cassandra's `SSTablesPerReadHistogram`),
//! sampled: RocksDB counts the files a read looks into only in its
//! per-thread perf context, which costs on every read it is switched on
//! for. So one partition read in `SSTABLES_SAMPLE_EVERY` on each thread
//! switches it on, counts, and switches it off; the others pay one
//! thread-local increment (no allocation, no lock).
//!
//! What is counted: the files whose bloom filter let the read in
//! (`bloom_sst_hit_count`, one per file and key or seek; RocksDB's Get
//! and iterator seeks consult a file's filter before reading it), so
//! files the filter rules out are not counted, as Cassandra does not
//! count the SSTables its bloom filters skip. A table without bloom
//! filter (`bloom_filter_fp_chance = 1.0`) counts 0.

use std::cell::{Cell, RefCell};

use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};

/// One partition read in this many, per thread, is sampled.
pub const SSTABLES_SAMPLE_EVERY: u32 = 64;

thread_local! {
    /// Partition reads on this thread since it started (wrapping).
    static READS: Cell<u32> = const { Cell::new(0) };
    /// This thread's handle on RocksDB's perf context, made at its first
    /// sample.
    static PERF: RefCell<Option<PerfContext>> = const { RefCell::new(None) };
}

/// A partition read being counted: the perf context is on for this thread
/// until it is dropped.
pub(crate) struct Sample {
    /// The counter where the current seek started.
    mark: u64,
    /// The most files one seek (or batch of keys) of this read looked into.
    files_max: u64,
}

impl Sample {
    /// Whether this partition read is sampled: the first one on each
    /// thread, then one in `SSTABLES_SAMPLE_EVERY`.
    pub(crate) fn start() -> Option<Sample> {
        let due = READS.with(|reads| {
            let n = reads.get();
            reads.set(n.wrapping_add(1));
            n % SSTABLES_SAMPLE_EVERY == 0
        });
        if !due {
            return None;
        }
        set_perf_stats(PerfStatsLevel::EnableCount);
        Some(Sample {
            mark: files_consulted(),
            files_max: 0,
        })
    }

    /// Ends one lookup of the read (a seek, or a batch of point keys):
    /// a read of several slices seeks several times into the same files,
    /// so the read counts its largest lookup, not their sum.
    pub(crate) fn lookup_done(&mut self) {
        let now = files_consulted();
        self.files_max = self.files_max.max(now.saturating_sub(self.mark));
        self.mark = now;
    }

    /// The files the read looked into.
    pub(crate) fn files(mut self) -> u64 {
        self.lookup_done();
        self.files_max
    }
}

impl Drop for Sample {
    fn drop(&mut self) {
        set_perf_stats(PerfStatsLevel::Disable);
    }
}

/// This thread's count of files whose bloom filter let a lookup in.
fn files_consulted() -> u64 {
    PERF.with(|perf| {
        perf.borrow_mut()
            .get_or_insert_with(PerfContext::default)
            .metric(PerfMetric::BloomSstHitCount)
    })
}
