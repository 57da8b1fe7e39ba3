//! The seam between statements and the user data they touch. The executor
//! hands every write and read of a user table to a `DataProxy`, with the
//! request's consistency level: `LocalProxy` on a single node (storage
//! directly), the cluster's coordinator when the node is one of many.
//! System tables kept in storage (`system_auth`, traces) stay local.

use std::sync::Arc;

use rocksandra_data::LocalTime;
use rocksandra_storage::{Engine, Mutation, Partition, PartitionRead, RangeScan, ScanPage};
use rocksandra_wire::{Consistency, WriteType};

use crate::executor::Executor;
use crate::schema::{Schema, Table};
use crate::Result;

/// How a write is to be acknowledged.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteOptions {
    pub consistency: Consistency,
    /// Reported in WRITE_TIMEOUT errors.
    pub write_type: WriteType,
    pub now: LocalTime,
}

/// Where user-table writes and reads go.
pub trait DataProxy: Send + Sync {
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
    /// One page of a token-ordered scan of `table` at `consistency`.
    fn scan(
        &self,
        schema: &Schema,
        table: &Table,
        scan: &RangeScan,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<ScanPage>;
}

/// The single-node proxy: this node holds every replica.
pub struct LocalProxy {
    engine: Arc<dyn Engine>,
}

impl LocalProxy {
    pub fn new(engine: Arc<dyn Engine>) -> LocalProxy {
        LocalProxy { engine }
    }
}

impl DataProxy for LocalProxy {
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
}

/// A held right to change the cluster's schema.
#[derive(Debug)]
pub struct SchemaLease(pub u64);

/// How schema changes happen in a cluster: one at a time cluster-wide,
/// each starting from the newest schema and reaching every live node
/// before it is answered.
pub trait SchemaSync: Send + Sync {
    /// Takes the cluster's schema lock and installs the newest schema on
    /// `executor` first.
    fn acquire(&self, executor: &Executor) -> Result<SchemaLease>;
    /// Sends `executor`'s (changed) schema to every live node, then
    /// releases the lock.
    fn publish(&self, executor: &Executor, lease: SchemaLease) -> Result<()>;
    /// Releases the lock without a change.
    fn release(&self, lease: SchemaLease);
}
