//! The data step for one table: its token ring cut into ranges, `jobs`
//! workers each with a connection to both sides taking ranges off one
//! queue, the rows of a partition rewritten as batches pipelined on the
//! worker's target connection (`client::WRITES_IN_FLIGHT_MAX`), and each
//! range recorded in the checkpoint once all its batches are answered.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rocksandra_wire::{BatchType, ResultBody, Value};

use super::checkpoint::Checkpoint;
use super::client::{CqlClient, Login};
use super::row::{counter_writes, row_writes, ScannedRow, Statement};
use super::table::{quote, Storage, Table};
use super::values::bigint;
use super::MigrateError;

/// Where to copy from and to, and how.
#[derive(Clone)]
pub struct Endpoints {
    pub source: SocketAddr,
    pub source_login: Option<Login>,
    pub target: SocketAddr,
    pub target_login: Option<Login>,
    pub page_size: i32,
}

/// The Murmur3 ring `(i64::MIN, i64::MAX]` cut into `count` ranges `(lo, hi]`.
pub fn token_ranges(count: usize) -> Vec<(i64, i64)> {
    let count = count.max(1) as i128;
    let span = (i64::MAX as i128) - (i64::MIN as i128);
    (0..count)
        .map(|i| {
            let bound = |i: i128| (i64::MIN as i128 + span * i / count) as i64;
            (bound(i), bound(i + 1))
        })
        .collect()
}

struct Shared {
    table: Table,
    ranges: Vec<(i64, i64)>,
    pending: Mutex<VecDeque<usize>>,
    checkpoint: Arc<Mutex<Checkpoint>>,
    rows: AtomicU64,
    ranges_done: AtomicU64,
}

/// Copies the table's ranges the checkpoint does not list; the rows copied.
pub async fn copy_table(
    table: &Table,
    endpoints: &Endpoints,
    jobs: usize,
    checkpoint: Arc<Mutex<Checkpoint>>,
) -> Result<u64, MigrateError> {
    let (ranges, done) = {
        let checkpoint = lock(&checkpoint);
        (
            token_ranges(checkpoint.progress.ranges),
            checkpoint.table(&table.label()),
        )
    };
    let pending: VecDeque<usize> = (0..ranges.len())
        .filter(|i| !done.done.contains(i))
        .collect();
    let shared = Arc::new(Shared {
        table: table.clone(),
        ranges_done: AtomicU64::new(done.done.len() as u64),
        rows: AtomicU64::new(done.rows),
        ranges,
        pending: Mutex::new(pending),
        checkpoint,
    });
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..jobs.max(1) {
        workers.spawn(worker(shared.clone(), endpoints.clone()));
    }
    let mut first_error = None;
    while let Some(joined) = workers.join_next().await {
        let result = joined.map_err(|e| MigrateError::Data(format!("a copy worker failed: {e}")));
        if let Err(e) = result.and_then(|r| r) {
            // The others stop at their next range: nothing is left to take.
            lock_queue(&shared).clear();
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(shared.rows.load(Ordering::Relaxed)),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lock_queue(shared: &Shared) -> std::sync::MutexGuard<'_, VecDeque<usize>> {
    lock(&shared.pending)
}

async fn worker(shared: Arc<Shared>, endpoints: Endpoints) -> Result<(), MigrateError> {
    let mut source = CqlClient::connect(endpoints.source, endpoints.source_login.as_ref()).await?;
    let mut target = CqlClient::connect(endpoints.target, endpoints.target_login.as_ref()).await?;
    loop {
        let Some(index) = lock_queue(&shared).pop_front() else {
            return Ok(());
        };
        let range = shared.ranges[index];
        let rows = copy_range(
            &mut source,
            &mut target,
            &shared.table,
            range,
            endpoints.page_size,
        )
        .await?;
        let label = shared.table.label();
        lock(&shared.checkpoint).finish_range(&label, index, rows)?;
        let total = shared.rows.fetch_add(rows, Ordering::Relaxed) + rows;
        let done = shared.ranges_done.fetch_add(1, Ordering::Relaxed) + 1;
        report(&label, done, shared.ranges.len(), total);
    }
}

/// Progress on stderr: on a terminal a bar redrawn in place, otherwise a
/// line per finished range (for logs and scripts).
fn report(label: &str, done: u64, ranges: usize, rows: u64) {
    const BAR_WIDTH: usize = 30;
    let text = format!("{label}: {done}/{ranges} ranges, {rows} rows");
    if std::io::stderr().is_terminal() {
        let filled = (done as usize * BAR_WIDTH / ranges.max(1)).min(BAR_WIDTH);
        let bar = format!("{}{}", "#".repeat(filled), ".".repeat(BAR_WIDTH - filled));
        eprint!("\r[{bar}] {text}");
    } else {
        eprintln!("{text}");
    }
}

/// Ends a table's progress bar (its line stays on the terminal).
pub fn end_report() {
    if std::io::stderr().is_terminal() {
        eprintln!();
    }
}

/// Statements of one partition sent as one batch at most: the batch is
/// single-partition (atomic, with no size limit on Cassandra or here).
const BATCH_STATEMENTS_MAX: usize = 256;

/// Writes of consecutive rows of one partition, sent as one batch.
#[derive(Default)]
struct PartitionBatch {
    partition: Option<Vec<Option<Bytes>>>,
    statements: Vec<Statement>,
}

impl PartitionBatch {
    /// Whether the row opens a partition (and so writes its static cells);
    /// sends the previous partition's writes first.
    async fn start_row(
        &mut self,
        target: &mut CqlClient,
        row: &ScannedRow<'_>,
    ) -> Result<bool, MigrateError> {
        if self.partition.as_deref() == Some(row.partition_key()) {
            if self.statements.len() >= BATCH_STATEMENTS_MAX {
                self.flush(target).await?;
            }
            return Ok(false);
        }
        self.flush(target).await?;
        self.partition = Some(row.partition_key().to_vec());
        Ok(true)
    }

    /// Sends the writes gathered, pipelined: a row's writes are never
    /// split between two batches, so batches may be applied in any order.
    async fn flush(&mut self, target: &mut CqlClient) -> Result<(), MigrateError> {
        if self.statements.is_empty() {
            return Ok(());
        }
        let statements = std::mem::take(&mut self.statements);
        target.send_batch(BatchType::Unlogged, statements).await
    }
}

/// Copies the rows of one token range `(lo, hi]`; the rows scanned.
async fn copy_range(
    source: &mut CqlClient,
    target: &mut CqlClient,
    table: &Table,
    (lo, hi): (i64, i64),
    page_size: i32,
) -> Result<u64, MigrateError> {
    let scan = table.range_scan();
    let mut paging_state = None;
    let mut batch = PartitionBatch::default();
    let mut counter_partition: Option<Vec<Option<Bytes>>> = None;
    let mut rows = 0;
    loop {
        let bounds = vec![Value::Bytes(bigint(lo)), Value::Bytes(bigint(hi))];
        // Taken before the read: a delete issued after it is newer than
        // the marker of a key-only row read here.
        let read_micros = now_micros();
        let page = source.page(&scan, bounds, page_size, paging_state).await?;
        for cells in &page.rows.rows {
            let row = ScannedRow::new(table, cells)?;
            if table.is_counter() {
                let first = counter_partition.as_deref() != Some(row.partition_key());
                copy_counter_row(target, &row, first).await?;
                if first {
                    counter_partition = Some(row.partition_key().to_vec());
                }
            } else {
                let first = batch.start_row(target, &row).await?;
                let skip_lists = lists_on_target(target, &row, first).await?;
                batch
                    .statements
                    .extend(row_writes(&row, first, &skip_lists, read_micros)?);
            }
            rows += 1;
        }
        match page.next {
            Some(next) => paging_state = Some(next),
            None => {
                batch.flush(target).await?;
                target.drain().await?;
                return Ok(rows);
            }
        }
    }
}

fn now_micros() -> i64 {
    rocksandra_data::time::system_micros()
}

/// The target's values of some data columns of the scanned row: of its
/// row (`whole_key`), or of its partition's static columns.
async fn target_values(
    target: &mut CqlClient,
    row: &ScannedRow<'_>,
    columns: &[(usize, Option<Bytes>)],
    whole_key: bool,
) -> Result<Vec<Option<Bytes>>, MigrateError> {
    let table = row.table;
    let names: Vec<String> = table
        .data()
        .enumerate()
        .filter(|(i, _)| columns.iter().any(|(c, _)| c == i))
        .map(|(_, c)| quote(&c.name))
        .collect();
    // Static columns repeat on every row of the partition: one is enough.
    let limit = if whole_key { "" } else { " LIMIT 1" };
    let text = format!(
        "SELECT {} FROM {} WHERE {}{limit}",
        names.join(", "),
        table.qualified(),
        table.key_condition(whole_key)
    );
    match target.query(&text, row.key_values(whole_key)).await? {
        ResultBody::Rows(rows) => Ok(rows
            .rows
            .into_iter()
            .next()
            .unwrap_or_else(|| vec![None; names.len()])),
        other => Err(MigrateError::Data(format!("{text}: {other:?}"))),
    }
}

/// Appending to a list is not idempotent: a list the target already holds
/// equal (the row, or for a static list the partition, was copied before
/// a crash) is skipped, a different one refused. Static lists are looked
/// at with the partition's first row (`write_statics`), when they are
/// written.
async fn lists_on_target(
    target: &mut CqlClient,
    row: &ScannedRow<'_>,
    write_statics: bool,
) -> Result<Vec<usize>, MigrateError> {
    let mut skip = Vec::new();
    for is_static in [true, false] {
        let lists: Vec<(usize, Option<Bytes>)> = row
            .data_values(Storage::List, is_static)
            .into_iter()
            .filter(|(_, v)| v.is_some())
            .collect();
        if !row.writes(is_static, write_statics) || lists.is_empty() {
            continue;
        }
        let existing = target_values(target, row, &lists, !is_static).await?;
        for ((index, source), target) in lists.iter().zip(existing) {
            match target {
                None => {}
                Some(t) if Some(&t) == source.as_ref() => skip.push(*index),
                Some(_) => return Err(lists_differ(row)),
            }
        }
    }
    Ok(skip)
}

fn lists_differ(row: &ScannedRow<'_>) -> MigrateError {
    MigrateError::Unsupported(format!(
        "{}: a list on the target differs from the source's; appending would mix them",
        row.table.label()
    ))
}

/// The row's counters as deltas from the target's, and with the
/// partition's first row (`write_statics`) its static counters.
async fn copy_counter_row(
    target: &mut CqlClient,
    row: &ScannedRow<'_>,
    write_statics: bool,
) -> Result<(), MigrateError> {
    for is_static in [true, false] {
        let counters = row.data_values(Storage::Counter, is_static);
        if !row.writes(is_static, write_statics) || counters.is_empty() {
            continue;
        }
        let existing = target_values(target, row, &counters, !is_static).await?;
        if let Some((text, values)) = counter_writes(row, &counters, &existing, is_static)? {
            target.query(&text, values).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranges_cover_the_ring_without_gaps() {
        for count in [1, 3, 64] {
            let ranges = token_ranges(count);
            assert_eq!(ranges.len(), count);
            assert_eq!(ranges[0].0, i64::MIN);
            assert_eq!(ranges[count - 1].1, i64::MAX);
            assert!(ranges
                .windows(2)
                .all(|w| w[0].1 == w[1].0 && w[0].0 < w[0].1));
        }
    }
}
