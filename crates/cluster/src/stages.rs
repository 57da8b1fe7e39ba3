//! Counts of the storage work this node runs for the cluster, by
//! Cassandra's stage names (`nodetool tpstats`): reads (`ReadStage`) and
//! writes (`MutationStage`) of local replicas, whether a peer or this
//! node coordinated them. There are no stage queues: work runs on the
//! thread that received it, so nothing is ever pending or blocked.
//!
//! The same engine is where this node applies every mutation as a replica
//! (its own coordinator's writes, peers' writes, hints, batchlog replay,
//! read repair, Paxos commits): the hook that shows them to its ANN graphs
//! (`observing`), and drops a table's graphs when its data changes by
//! other ways (streamed or imported files, truncation).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_query::index::vector::Graphs;
use rocksandra_storage::{
    Engine, Mutation, Partition, PartitionKey, PartitionRead, RangeScan, RawPartition, Result,
    ScanPage, StorageStats, TableId, TableSpec, TableStorageStats, TokenRange,
};

/// One stage's running and finished operations.
#[derive(Debug, Default)]
pub struct Stage {
    active: AtomicU64,
    completed: AtomicU64,
}

impl Stage {
    pub fn active(&self) -> u64 {
        self.active.load(Ordering::Relaxed)
    }

    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    fn run<T>(&self, work: impl FnOnce() -> T) -> T {
        self.active.fetch_add(1, Ordering::Relaxed);
        let _done = Done(self);
        work()
    }
}

/// Ends one operation of a stage, even when the work panics.
struct Done<'a>(&'a Stage);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Relaxed);
        self.0.completed.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Debug, Default)]
pub struct Stages {
    pub read: Stage,
    pub mutation: Stage,
}

impl Stages {
    /// The stages by Cassandra's names, in `nodetool tpstats`' order.
    /// Nothing queues (pending: 0).
    pub fn pools(&self) -> Vec<crate::metrics::PoolSnapshot> {
        [("MutationStage", &self.mutation), ("ReadStage", &self.read)]
            .into_iter()
            .map(|(name, stage)| crate::metrics::PoolSnapshot {
                name,
                active: stage.active(),
                pending: 0,
                completed: stage.completed(),
            })
            .collect()
    }
}

/// An engine that counts its reads and writes in `Stages` (and shows its
/// writes to the ANN graphs, when `observing`).
pub struct StagedEngine {
    inner: Arc<dyn Engine>,
    stages: Arc<Stages>,
    graphs: Option<Arc<Graphs>>,
}

impl StagedEngine {
    pub fn new(inner: Arc<dyn Engine>, stages: Arc<Stages>) -> StagedEngine {
        StagedEngine {
            inner,
            stages,
            graphs: None,
        }
    }

    /// Shows every write applied through this engine to `graphs`.
    pub fn observing(self, graphs: Arc<Graphs>) -> StagedEngine {
        StagedEngine {
            graphs: Some(graphs),
            ..self
        }
    }

    /// The write hook: `mutations` were applied (or queued in this
    /// thread's write group, which commits them).
    fn applied(&self, mutations: &[Mutation]) {
        if let Some(graphs) = &self.graphs {
            graphs.observe_applied(mutations);
        }
    }

    /// `table`'s data changed without passing through `write`.
    fn data_replaced(&self, table: TableId) {
        if let Some(graphs) = &self.graphs {
            graphs.forget_table(table);
        }
    }
}

impl Engine for StagedEngine {
    fn create_table(&self, spec: TableSpec) -> Result<()> {
        self.inner.create_table(spec)
    }
    fn alter_table(&self, spec: TableSpec) -> Result<()> {
        self.inner.alter_table(spec)
    }
    fn drop_table(&self, table: TableId) -> Result<()> {
        self.inner.drop_table(table)
    }
    fn truncate(&self, table: TableId) -> Result<()> {
        let result = self.inner.truncate(table);
        self.data_replaced(table);
        result
    }
    fn write(&self, mutations: &[Mutation], now: LocalTime) -> Result<()> {
        self.stages
            .mutation
            .run(|| self.inner.write(mutations, now))?;
        self.applied(mutations);
        Ok(())
    }
    fn commit_deferred(&self) {
        self.stages.mutation.run(|| self.inner.commit_deferred())
    }
    fn write_groups_together(&self, groups: &mut [rocksandra_storage::WriteGroup]) -> bool {
        self.stages
            .mutation
            .run(|| self.inner.write_groups_together(groups))
    }
    fn read_partition(&self, read: &PartitionRead, now: LocalTime) -> Result<Partition> {
        self.stages
            .read
            .run(|| self.inner.read_partition(read, now))
    }

    fn read_partition_counted(
        &self,
        read: &PartitionRead,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(Partition, u64)> {
        self.stages
            .read
            .run(|| self.inner.read_partition_counted(read, now, stop_past))
    }
    fn read_raw(&self, read: &PartitionRead, now: LocalTime) -> Result<RawPartition> {
        self.stages.read.run(|| self.inner.read_raw(read, now))
    }
    fn read_raw_counted(
        &self,
        read: &PartitionRead,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(RawPartition, u64)> {
        self.stages
            .read
            .run(|| self.inner.read_raw_counted(read, now, stop_past))
    }
    fn scan(&self, scan: &RangeScan, now: LocalTime) -> Result<ScanPage> {
        self.stages.read.run(|| self.inner.scan(scan, now))
    }
    fn scan_counted(
        &self,
        scan: &RangeScan,
        now: LocalTime,
        stop_past: u64,
    ) -> Result<(ScanPage, u64)> {
        self.stages
            .read
            .run(|| self.inner.scan_counted(scan, now, stop_past))
    }
    fn stream_out(&self, table: TableId, range: TokenRange, dir: &Path) -> Result<Vec<PathBuf>> {
        self.inner.stream_out(table, range, dir)
    }
    fn stream_in(&self, table: TableId, files: &[PathBuf]) -> Result<()> {
        let result = self.inner.stream_in(table, files);
        self.data_replaced(table);
        result
    }
    fn import(
        &self,
        table: TableId,
        source: &rocksandra_storage::import::ImportSource,
        work_dir: &Path,
    ) -> Result<rocksandra_storage::import::ImportCounts> {
        let result = self.inner.import(table, source, work_dir);
        self.data_replaced(table);
        result
    }
    fn partition_keys(
        &self,
        table: TableId,
        range: TokenRange,
        after: Option<&PartitionKey>,
        limit: usize,
    ) -> Result<Vec<PartitionKey>> {
        self.inner.partition_keys(table, range, after, limit)
    }
    fn cleanup(&self, table: TableId, keep: &[TokenRange]) -> Result<()> {
        self.inner.cleanup(table, keep)
    }
    fn snapshot(&self, dir: &Path) -> Result<()> {
        self.inner.snapshot(dir)
    }
    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }
    fn latest_sequence_number(&self) -> Option<u64> {
        self.inner.latest_sequence_number()
    }
    fn flush_table(&self, table: TableId) -> Result<()> {
        self.inner.flush_table(table)
    }
    fn set_compaction_throughput(&self, bytes_per_second: Option<u64>) -> bool {
        self.inner.set_compaction_throughput(bytes_per_second)
    }
    fn compact(&self, table: TableId, now: LocalTime) -> Result<()> {
        self.inner.compact(table, now)
    }
    fn purge_tombstones(&self, now: LocalTime) -> Result<usize> {
        self.inner.purge_tombstones(now)
    }
    fn stats(&self) -> StorageStats {
        self.inner.stats()
    }
    fn table_stats(&self, table: TableId) -> TableStorageStats {
        self.inner.table_stats(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_counts_finished_work_and_none_left_running() {
        let stage = Stage::default();
        let seen = stage.run(|| stage.active());
        assert_eq!(seen, 1);
        assert_eq!((stage.active(), stage.completed()), (0, 1));
        let _ = std::panic::catch_unwind(|| stage.run(|| panic!("engine bug")));
        assert_eq!((stage.active(), stage.completed()), (0, 2));
    }
}
