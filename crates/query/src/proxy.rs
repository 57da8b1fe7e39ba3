//! The seam between statements and the user data they touch. The executor
//! hands every write and read of a user table to a `DataProxy`, with the
//! request's consistency level: `LocalProxy` on a single node (storage
//! directly), the cluster's coordinator when the node is one of many.
//! System tables kept in storage (`system_auth`, traces) stay local.

use std::sync::{Arc, Mutex};

use rocksandra_data::{LocalTime, Timestamp};
use rocksandra_storage::{
    Engine, Mutation, Partition, PartitionKey, PartitionRead, RangeScan, RawPartition, ScanPage,
};
use rocksandra_wire::{Consistency, WriteType};

use crate::disk_usage::DiskUsage;
use crate::read_thresholds::ReadMet;
use crate::schema::{Schema, Table};
use crate::tombstones::TombstoneSettings;
use crate::Result;

/// How a write is to be acknowledged.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteOptions {
    pub consistency: Consistency,
    /// Reported in WRITE_TIMEOUT errors.
    pub write_type: WriteType,
    pub now: LocalTime,
}

/// How a compare-and-set runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CasOptions {
    /// SERIAL or LOCAL_SERIAL: whose quorum the Paxos rounds need.
    pub serial: Consistency,
    /// The consistency the chosen update is committed at (the request's).
    pub commit: Consistency,
    /// Reported by timeouts of the Paxos rounds: CAS for conditional
    /// updates, COUNTER for counter updates.
    pub write_type: WriteType,
    pub now: LocalTime,
}

/// A compare-and-set's decision, called once per attempt with the write
/// timestamp of the attempt (None: the statement's own, on a single node;
/// in a cluster the Paxos ballot's). It reads what it needs through the
/// proxy (at the serial consistency's quorum) and returns the mutations to
/// apply, or None when the condition does not hold.
pub type CasDecide<'a> = dyn FnMut(Option<Timestamp>) -> Result<Option<Vec<Mutation>>> + 'a;

/// How a counter update (read, add, write the sum) is kept from racing
/// another one of the same counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterWrites {
    /// Under the node's read-before-write lock: every update of the data
    /// goes through this node.
    NodeLock,
    /// Each partition's updates as one compare-and-set without a
    /// condition: other coordinators update the same counters.
    PartitionCas,
}

/// An ANN query the replicas answer from their graphs
/// (`index::vector_local`): the best `k` rows of a table by the
/// similarity of `column` to `vector`.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnQuery {
    pub column: rocksandra_storage::cell::ColumnId,
    pub vector: Vec<f32>,
    /// At most `select::ann::ANN_LIMIT_MAX`.
    pub k: usize,
}

/// Where user-table writes and reads go.
pub trait DataProxy: Send + Sync {
    /// The worst data disk usage among the replicas of `mutations`, as
    /// each last told it (the `replica_disk_usage` guardrail).
    fn replicas_disk_usage(&self, schema: &Schema, mutations: &[Mutation]) -> DiskUsage;
    /// Applies each mutation (one partition each) to its replicas; returns
    /// once every one is acknowledged as `options.consistency` asks.
    /// `schema` places them (`Schema::table_by_storage_id`).
    fn write(
        &self,
        schema: &Schema,
        mutations: Vec<Mutation>,
        options: &WriteOptions,
    ) -> Result<()>;
    /// Reads one partition of `table` at `consistency`.
    fn read_partition(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<Partition>;
    /// `read_partition` and the tombstones it met (`Engine::
    /// read_partition_counted`; in a cluster, what this node's own replica
    /// read met, as only that reaches the client in Cassandra;
    /// `tombstones.rs`). A read past the failure threshold may stop early:
    /// its count is then past the threshold and the statement fails it.
    fn read_partition_counted(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<(Partition, ReadMet)> {
        Ok((
            self.read_partition(schema, table, read, consistency, now)?,
            ReadMet::default(),
        ))
    }
    /// The stored state of what `read` selects (tombstones and timestamps
    /// included, `Engine::read_raw`), merged from as many replicas as
    /// `consistency` asks for: what view maintenance reads before a write,
    /// and how index maintenance learns why an entry is stale.
    fn read_raw(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<RawPartition>;
    /// One page of a token-ordered scan of `table` at `consistency`.
    fn scan(
        &self,
        schema: &Schema,
        table: &Table,
        scan: &RangeScan,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<ScanPage>;
    /// `scan` and the tombstones it met (in a cluster, the most this node's
    /// own replica met for one of its requests), as
    /// `read_partition_counted`.
    fn scan_counted(
        &self,
        schema: &Schema,
        table: &Table,
        scan: &RangeScan,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<(ScanPage, ReadMet)> {
        Ok((
            self.scan(schema, table, scan, consistency, now)?,
            ReadMet::default(),
        ))
    }
    /// Runs `decide` and applies the mutations it returns (all of
    /// `partition` of `table`) so that no other compare-and-set of that
    /// partition, from any coordinator, comes between its reads and its
    /// write (linearizable, as Cassandra's lightweight transactions).
    fn cas(
        &self,
        schema: &Schema,
        table: &Table,
        partition: &PartitionKey,
        options: &CasOptions,
        decide: &mut CasDecide<'_>,
    ) -> Result<()>;
    /// How counter updates through this proxy keep from racing each other.
    fn counter_writes(&self) -> CounterWrites {
        CounterWrites::NodeLock
    }
    /// An ANN query over the whole of `table`, asked of one replica per
    /// token range (`consistency` is ONE or LOCAL_ONE: Cassandra runs
    /// top-K queries at ONE) which answers from its graph: at most `k`
    /// rows from each, as one-row partitions, for the caller to rank.
    /// None: this proxy has no such path (a node alone ranks with its own
    /// graph; peers too old to answer), and the caller ranks by scan.
    fn ann_top(
        &self,
        schema: &Schema,
        table: &Table,
        query: &AnnQuery,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<Option<Vec<Partition>>> {
        let _ = (schema, table, query, consistency, now);
        Ok(None)
    }
    /// TRUNCATE: empties `keyspace.table` (its views too) on every node.
    /// `here` is this node's part (its snapshot and truncation), all a
    /// node alone does; a cluster also asks every other node to run theirs.
    fn truncate(&self, keyspace: &str, table: &str, here: &dyn Fn() -> Result<()>) -> Result<()> {
        let _ = (keyspace, table);
        here()
    }
}

/// The single-node proxy: this node holds every replica.
pub struct LocalProxy {
    engine: Arc<dyn Engine>,
    /// This node's data disk usage, the one replica's.
    disk_usage: Arc<crate::disk_usage::LocalDiskUsage>,
    /// The node's read-before-write lock, under which compare-and-sets run.
    rmw_lock: Arc<RmwLock>,
    /// Counted reads stop past the failure threshold (the statement then
    /// fails them).
    tombstones: Arc<TombstoneSettings>,
}

impl LocalProxy {
    pub fn new(
        engine: Arc<dyn Engine>,
        rmw_lock: Arc<RmwLock>,
        tombstones: Arc<TombstoneSettings>,
        disk_usage: Arc<crate::disk_usage::LocalDiskUsage>,
    ) -> LocalProxy {
        LocalProxy {
            engine,
            disk_usage,
            rmw_lock,
            tombstones,
        }
    }
}

impl DataProxy for LocalProxy {
    fn replicas_disk_usage(&self, _schema: &Schema, _mutations: &[Mutation]) -> DiskUsage {
        self.disk_usage.get()
    }

    fn write(
        &self,
        _schema: &Schema,
        mutations: Vec<Mutation>,
        options: &WriteOptions,
    ) -> Result<()> {
        Ok(self.engine.write(&mutations, options.now)?)
    }

    fn read_partition(
        &self,
        _schema: &Schema,
        _table: &Table,
        read: &PartitionRead,
        _consistency: Consistency,
        now: LocalTime,
    ) -> Result<Partition> {
        Ok(self.engine.read_partition(read, now)?)
    }

    fn read_partition_counted(
        &self,
        _schema: &Schema,
        _table: &Table,
        read: &PartitionRead,
        _consistency: Consistency,
        now: LocalTime,
    ) -> Result<(Partition, ReadMet)> {
        let stop_past = self.tombstones.get().failure;
        let (partition, tombstones) = self.engine.read_partition_counted(read, now, stop_past)?;
        Ok((partition, tombstones.into()))
    }

    fn read_raw(
        &self,
        _schema: &Schema,
        _table: &Table,
        read: &PartitionRead,
        _consistency: Consistency,
        now: LocalTime,
    ) -> Result<RawPartition> {
        Ok(self.engine.read_raw(read, now)?)
    }

    fn scan(
        &self,
        _schema: &Schema,
        _table: &Table,
        scan: &RangeScan,
        _consistency: Consistency,
        now: LocalTime,
    ) -> Result<ScanPage> {
        Ok(self.engine.scan(scan, now)?)
    }

    fn scan_counted(
        &self,
        _schema: &Schema,
        _table: &Table,
        scan: &RangeScan,
        _consistency: Consistency,
        now: LocalTime,
    ) -> Result<(ScanPage, ReadMet)> {
        let stop_past = self.tombstones.get().failure;
        let (page, tombstones) = self.engine.scan_counted(scan, now, stop_past)?;
        Ok((page, tombstones.into()))
    }

    fn cas(
        &self,
        _schema: &Schema,
        _table: &Table,
        _partition: &PartitionKey,
        options: &CasOptions,
        decide: &mut CasDecide<'_>,
    ) -> Result<()> {
        let _guard = self.rmw_lock.hold();
        match decide(None)? {
            Some(mutations) if !mutations.is_empty() => {
                Ok(self.engine.write(&mutations, options.now)?)
            }
            _ => Ok(()),
        }
    }
}

/// Serializes read-before-write statements on this node (conditional
/// updates, list index operations, counters). Re-entrant on one thread: a
/// conditional update that also sets a list element holds it once.
#[derive(Default)]
pub struct RmwLock(Mutex<()>);

thread_local! {
    static RMW_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Held while alive; the outermost guard of a thread owns the mutex.
/// While held, the thread's writes are written at once, not queued in a
/// connection's `WriteGroup`: the next holder reads what this one wrote.
pub struct RmwGuard<'a> {
    _held: Option<std::sync::MutexGuard<'a, ()>>,
    _direct: rocksandra_storage::DirectWrites,
}

impl RmwLock {
    pub fn hold(&self) -> RmwGuard<'_> {
        let depth = RMW_DEPTH.with(|d| d.get());
        let held = (depth == 0).then(|| self.0.lock().unwrap_or_else(|p| p.into_inner()));
        RMW_DEPTH.with(|d| d.set(depth + 1));
        RmwGuard {
            _held: held,
            _direct: rocksandra_storage::DirectWrites::hold(),
        }
    }
}

impl Drop for RmwGuard<'_> {
    fn drop(&mut self) {
        RMW_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod rmw_tests {
    use super::*;

    #[test]
    fn the_lock_is_reentrant_on_one_thread_and_exclusive_across_threads() {
        let lock = Arc::new(RmwLock::default());
        let outer = lock.hold();
        let inner = lock.hold();
        drop(inner);
        let other = {
            let lock = lock.clone();
            std::thread::spawn(move || lock.0.try_lock().is_ok())
        };
        assert!(!other.join().expect("thread"), "held by the first thread");
        drop(outer);
        assert!(lock.0.try_lock().is_ok());
    }
}
