//! `MeteredProxy`: the `DataProxy` that records the measures of `metrics`
//! around every call of the one it wraps: client request latency and
//! faults per scope and consistency level, and per table, read, write and
//! range latency and the tombstones reads met (through the `Table` the
//! statement already holds).

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rocksandra_data::LocalTime;
use rocksandra_storage::{
    Mutation, Partition, PartitionKey, PartitionRead, RangeScan, RawPartition, ScanPage,
};
use rocksandra_wire::Consistency;
use smallvec::SmallVec;

use crate::error::Result;
use crate::metrics::{ClientRequestMetrics, Scope, TableMetrics};
use crate::proxy::{AnnQuery, CasDecide, CasOptions, DataProxy, WriteOptions};
use crate::read_thresholds::ReadMet;
use crate::schema::{Schema, Table};

thread_local! {
    /// Set while this thread runs a compare-and-set: its reads are part of
    /// the CASWrite (Paxos, in Cassandra), not client reads of their own.
    static IN_CAS: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as running a compare-and-set while alive.
struct InCas {
    outer: bool,
}

impl InCas {
    fn enter() -> InCas {
        InCas {
            outer: IN_CAS.with(|flag| flag.replace(true)),
        }
    }
}

impl Drop for InCas {
    fn drop(&mut self) {
        IN_CAS.with(|flag| flag.set(self.outer));
    }
}

/// A `DataProxy` that records client request and table metrics around
/// the one it wraps.
pub struct MeteredProxy {
    inner: Arc<dyn DataProxy>,
    metrics: Arc<ClientRequestMetrics>,
}

impl MeteredProxy {
    pub fn new(inner: Arc<dyn DataProxy>, metrics: Arc<ClientRequestMetrics>) -> MeteredProxy {
        MeteredProxy { inner, metrics }
    }
}

/// The metrics of the tables `mutations` write, each once when they come
/// in a row (a statement's mutations do); index storage has none.
fn written_tables<'s>(
    schema: &'s Schema,
    mutations: &[Mutation],
) -> SmallVec<[&'s TableMetrics; 2]> {
    let mut tables = SmallVec::new();
    let mut previous = None;
    for mutation in mutations {
        if previous == Some(mutation.table) {
            continue;
        }
        previous = Some(mutation.table);
        if let Some((_, table)) = schema.table_by_storage_id(mutation.table) {
            tables.push(&*table.metrics);
        }
    }
    tables
}

/// Adds the deleted or expired rows a counted read met to its table's.
fn count_tombstones<T>(table: &Table, result: &Result<(T, ReadMet)>) {
    if let Ok((_, met)) = result {
        table
            .metrics
            .tombstones_scanned
            .fetch_add(met.tombstones, Ordering::Relaxed);
    }
}

impl DataProxy for MeteredProxy {
    fn counter_writes(&self) -> crate::proxy::CounterWrites {
        self.inner.counter_writes()
    }

    fn replicas_disk_usage(
        &self,
        schema: &Schema,
        mutations: &[Mutation],
    ) -> crate::disk_usage::DiskUsage {
        self.inner.replicas_disk_usage(schema, mutations)
    }

    fn write(
        &self,
        schema: &Schema,
        mutations: Vec<Mutation>,
        options: &WriteOptions,
    ) -> Result<()> {
        let started = Instant::now();
        let tables = written_tables(schema, &mutations);
        let result = self.inner.write(schema, mutations, options);
        let elapsed = started.elapsed();
        self.metrics
            .record(Scope::Write, options.consistency, elapsed, &result);
        for table in tables {
            table.write.record(elapsed);
        }
        result
    }

    fn read_partition(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<Partition> {
        let started = Instant::now();
        let result = self
            .inner
            .read_partition(schema, table, read, consistency, now);
        self.recorded_read(table, consistency, started, result)
    }

    fn read_partition_counted(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<(Partition, ReadMet)> {
        let started = Instant::now();
        let result = self
            .inner
            .read_partition_counted(schema, table, read, consistency, now);
        count_tombstones(table, &result);
        self.recorded_read(table, consistency, started, result)
    }

    fn read_raw(
        &self,
        schema: &Schema,
        table: &Table,
        read: &PartitionRead,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<RawPartition> {
        // Index and view maintenance's own reads: no client request.
        self.inner.read_raw(schema, table, read, consistency, now)
    }

    fn scan(
        &self,
        schema: &Schema,
        table: &Table,
        scan: &RangeScan,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<ScanPage> {
        let started = Instant::now();
        let result = self.inner.scan(schema, table, scan, consistency, now);
        self.recorded_scan(table, consistency, started, result)
    }

    fn scan_counted(
        &self,
        schema: &Schema,
        table: &Table,
        scan: &RangeScan,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<(ScanPage, ReadMet)> {
        let started = Instant::now();
        let result = self
            .inner
            .scan_counted(schema, table, scan, consistency, now);
        count_tombstones(table, &result);
        self.recorded_scan(table, consistency, started, result)
    }

    fn cas(
        &self,
        schema: &Schema,
        table: &Table,
        partition: &PartitionKey,
        options: &CasOptions,
        decide: &mut CasDecide<'_>,
    ) -> Result<()> {
        let started = Instant::now();
        let result = {
            let _in_cas = InCas::enter();
            self.inner.cas(schema, table, partition, options, decide)
        };
        self.metrics
            .record(Scope::CasWrite, options.serial, started.elapsed(), &result);
        result
    }

    /// Recorded as a range read, as Cassandra's top-K query is one.
    fn ann_top(
        &self,
        schema: &Schema,
        table: &Table,
        query: &AnnQuery,
        consistency: Consistency,
        now: LocalTime,
    ) -> Result<Option<Vec<Partition>>> {
        let started = Instant::now();
        let result = self.inner.ann_top(schema, table, query, consistency, now);
        if matches!(result, Ok(None)) {
            // Not answered: the caller's scan is recorded instead.
            return result;
        }
        self.recorded_scan(table, consistency, started, result)
    }

    fn truncate(&self, keyspace: &str, table: &str, here: &dyn Fn() -> Result<()>) -> Result<()> {
        self.inner.truncate(keyspace, table, here)
    }
}

impl MeteredProxy {
    fn recorded_read<T>(
        &self,
        table: &Table,
        consistency: Consistency,
        started: Instant,
        result: Result<T>,
    ) -> Result<T> {
        let elapsed = started.elapsed();
        if !IN_CAS.with(Cell::get) {
            self.metrics
                .record(Scope::of_read(consistency), consistency, elapsed, &result);
        }
        table.metrics.read.record(elapsed);
        result
    }

    fn recorded_scan<T>(
        &self,
        table: &Table,
        consistency: Consistency,
        started: Instant,
        result: Result<T>,
    ) -> Result<T> {
        let elapsed = started.elapsed();
        self.metrics
            .record(Scope::RangeSlice, consistency, elapsed, &result);
        table.metrics.range.record(elapsed);
        result
    }
}
