//! INSERT, UPDATE, DELETE and BATCH: statements become storage mutations,
//! written without reading except where CQL requires a read (list index
//! operations, removing list elements by value, conditions).

use std::collections::{BTreeMap, BTreeSet};

use rocksandra_cql::ast::{
    AssignOp, Assignment, Batch, BatchKind, ColumnTarget, Delete, Expr, Insert, InsertValues,
    Modification, Statement, Update, UsingParam,
};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::{LocalTime, Value};
use rocksandra_storage::cell::{Cell, ColumnId, DeletionTime, LivenessInfo};
use rocksandra_storage::layout::paths;
use rocksandra_storage::{
    ClusteringBound, Mutation, PartitionKey, PartitionRead, RangeTombstone, RowUpdate, Slice,
    TableId,
};

use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::guardrails::Guardrails;
use crate::proxy::{CasOptions, WriteOptions};
use crate::request::{Outcome, Request};
use crate::restrict::{analyze, PartitionSelection};
use crate::rows::partition_key_bytes;
use crate::schema::{Column, ColumnKind, Table};
use crate::term::{evaluate, EvalContext, Term};
use rocksandra_wire::{Consistency, WriteType};

pub mod batch_message;
mod cas;
mod named_rows;
mod written;

/// Longest TTL Cassandra accepts: 20 years.
pub const MAX_TTL_SECONDS: i32 = 630_720_000;

/// Statement-wide write parameters.
#[derive(Clone, Copy, Debug)]
struct WriteParams {
    timestamp: i64,
    /// 0 = no TTL.
    ttl: i32,
    now: LocalTime,
}

impl WriteParams {
    fn cell(&self, column: &Column, value: Vec<u8>) -> Cell {
        if self.ttl > 0 {
            Cell::expiring(column.id, self.timestamp, self.ttl, self.now, value)
        } else {
            Cell::live(column.id, self.timestamp, value)
        }
    }

    fn tombstone(&self, column: &Column) -> Cell {
        Cell::tombstone(column.id, self.timestamp, self.now)
    }

    fn deletion(&self) -> DeletionTime {
        DeletionTime::new(self.timestamp, self.now.0)
    }
}

/// A USING parameter's value; None when unset. A null TTL is 0 (no TTL,
/// not even the table's default), as in Cassandra's `Attributes`; a null
/// timestamp is refused.
fn int_param(
    expr: &Expr,
    name: &str,
    ty: NativeType,
    ctx: &EvalContext<'_>,
) -> Result<Option<i64>> {
    match evaluate(expr, &CqlType::Native(ty), name, ctx)? {
        Term::Value(b) => match Value::deserialize(&CqlType::Native(ty), &b)? {
            Value::Int(i) => Ok(Some(i64::from(i))),
            Value::Bigint(i) => Ok(Some(i)),
            _ => Ok(None),
        },
        Term::Null if name == "[ttl]" => Ok(Some(0)),
        Term::Null => Err(QueryError::invalid(format!("Invalid null value of {name}"))),
        Term::Unset => Ok(None),
    }
}

fn write_params(
    context: &StatementCtx<'_>,
    table: &Table,
    using: &[UsingParam],
    request: &Request,
    ctx: &EvalContext<'_>,
) -> Result<WriteParams> {
    let mut timestamp = None;
    let mut ttl = None;
    for u in using {
        match u {
            UsingParam::Timestamp(e) => {
                timestamp = int_param(e, "[timestamp]", NativeType::Bigint, ctx)?;
            }
            UsingParam::Ttl(e) => {
                let t = int_param(e, "[ttl]", NativeType::Int, ctx)?;
                if let Some(t) = t {
                    if t < 0 {
                        return Err(QueryError::invalid(format!(
                            "A TTL must be greater or equal to 0, but was {t}"
                        )));
                    }
                    if t > i64::from(MAX_TTL_SECONDS) {
                        return Err(QueryError::invalid(format!(
                            "ttl is too large. requested ({t}) maximum ({MAX_TTL_SECONDS})"
                        )));
                    }
                }
                ttl = t;
            }
        }
    }
    if timestamp == Some(i64::MIN) {
        return Err(QueryError::invalid(
            "Out of bound timestamp, must be in [-9223372036854775807, 9223372036854775807]",
        ));
    }
    Ok(WriteParams {
        timestamp: timestamp
            .or(request.timestamp)
            .unwrap_or_else(|| context.now_micros()),
        ttl: ttl.unwrap_or(i64::from(table.params.default_time_to_live)) as i32,
        now: context.local_now(request),
    })
}

fn modifiable_table(
    context: &StatementCtx<'_>,
    schema: &crate::schema::Schema,
    name: &rocksandra_cql::ast::QualifiedName,
    request: &Request,
) -> Result<std::sync::Arc<Table>> {
    let keyspace = crate::schema::keyspace_of(name, request.keyspace.as_deref())?;
    let table = schema.lookup_table(keyspace, name.name.as_str())?.clone();
    let internal_write = request.internal
        && !table.is_virtual
        && matches!(keyspace, "system_auth" | "system_traces");
    if !internal_write && (table.is_virtual || crate::schema::is_system_keyspace(keyspace)) {
        return Err(QueryError::Unauthorized(format!(
            "{keyspace} keyspace is not user-modifiable."
        )));
    }
    let _ = context;
    if table.is_view() {
        return Err(QueryError::invalid(
            "Cannot directly modify a materialized view",
        ));
    }
    Ok(table)
}

/// Runs one INSERT, UPDATE or DELETE.
pub fn execute_single(
    context: &StatementCtx<'_>,
    statement: &Statement,
    request: &Request,
    values: &[rocksandra_wire::Value],
) -> Result<Outcome> {
    let warning = write_consistency_levels(context, request)?;
    with_warnings(
        warning,
        execute_single_checked(context, statement, request, values),
    )
}

/// The `write_consistency_levels` guardrail, checked before anything else a
/// write or batch does: on its consistency and its serial consistency
/// (SERIAL when the request gives none).
fn write_consistency_levels(
    context: &StatementCtx<'_>,
    request: &Request,
) -> Result<Option<String>> {
    let active = |g: &Guardrails| {
        !g.write_consistency_levels_warned.is_empty()
            || !g.write_consistency_levels_disallowed.is_empty()
    };
    match crate::guard::guardrails_for(context, request, active)? {
        Some(g) => {
            let serial = request.serial_consistency.unwrap_or(Consistency::Serial);
            g.write_consistency_levels(request.consistency, serial)
        }
        None => Ok(None),
    }
}

/// The outcome with `warning` before its own warnings.
fn with_warnings(warning: Option<String>, outcome: Result<Outcome>) -> Result<Outcome> {
    let mut outcome = outcome?;
    if let Some(w) = warning {
        outcome.warnings.insert(0, w);
    }
    Ok(outcome)
}

fn execute_single_checked(
    context: &StatementCtx<'_>,
    statement: &Statement,
    request: &Request,
    values: &[rocksandra_wire::Value],
) -> Result<Outcome> {
    let mut mutations = Vec::new();
    let modification = match statement {
        Statement::Insert(i) => Modification::Insert(Insert::clone(i)),
        Statement::Update(u) => Modification::Update(Update::clone(u)),
        Statement::Delete(d) => Modification::Delete(Delete::clone(d)),
        _ => return Err(QueryError::Server("not a modification".into())),
    };
    if has_condition(&modification) {
        return cas::execute(context, &[(&modification, values, request.clone())], None);
    }
    check_write_consistency(context, &modification, request)?;
    let timestamp_warning = timestamp_bounds(context, &modification, request, values)?;
    if counter_cas(
        context,
        &[(&modification, values, request.clone())],
        &[],
        WriteType::Counter,
    )? {
        return Ok(Outcome::void());
    }
    let _guard = counter_lock(context, &[&modification], request)?;
    let written = collect_checked(context, &modification, request, values, &[], &mut mutations)?;
    let counter = _guard.is_some();
    let disk_warning = write(context, mutations, request, write_type(None, counter))?;
    let warnings = disk_warning
        .into_iter()
        .chain(timestamp_warning)
        .chain(written)
        .collect();
    Ok(Outcome {
        warnings,
        ..Outcome::void()
    })
}

/// `maximum_timestamp` and `minimum_timestamp` on the USING TIMESTAMP of
/// one statement that is not in a batch (Cassandra checks only those).
fn timestamp_bounds(
    context: &StatementCtx<'_>,
    m: &Modification,
    request: &Request,
    values: &[rocksandra_wire::Value],
) -> Result<Option<String>> {
    let using = using_of(m);
    if !using.iter().any(|u| matches!(u, UsingParam::Timestamp(_))) {
        return Ok(None);
    }
    let Some(g) = crate::guard::guardrails_for(context, request, Guardrails::guards_timestamps)?
    else {
        return Ok(None);
    };
    let schema = context.schema();
    let table = modifiable_table(context, &schema, table_name_of(m), request)?;
    let random = context.env.random.clone();
    let ctx = context.eval_context(&schema, &table.keyspace, values, &*random);
    let params = write_params(context, &table, using, request, &ctx)?;
    g.timestamp_bounds(params.timestamp, context.now_micros(), &table.name)
}

/// A counter partition's statements: (table, partition key components,
/// indexes of its statements in statement order).
type CounterGroup = (std::sync::Arc<Table>, Vec<Vec<u8>>, Vec<usize>);

/// Counter updates in a cluster: the statements of each partition run as
/// one compare-and-set without a condition (read, add, write the sum), so
/// that increments through different coordinators never overwrite each
/// other. False when they are not all counter updates of one partition
/// each (IN on the partition key): those take the node's lock below.
fn counter_cas(
    context: &StatementCtx<'_>,
    statements: &[(&Modification, &[rocksandra_wire::Value], Request)],
    batch_using: &[UsingParam],
    write_type: WriteType,
) -> Result<bool> {
    if context.data().counter_writes() != crate::proxy::CounterWrites::PartitionCas {
        return Ok(false);
    }
    let schema = context.schema();
    let random = context.env.random.clone();
    let mut groups: Vec<CounterGroup> = Vec::new();
    for (i, (m, values, request)) in statements.iter().enumerate() {
        let Modification::Update(update) = m else {
            return Ok(false);
        };
        let table = modifiable_table(context, &schema, &update.table, request)?;
        if !table.is_counter() {
            return Ok(false);
        }
        let ctx = context.eval_context(&schema, &table.keyspace, values, &*random);
        let Ok(assigned) = assigned_columns(&table, update) else {
            return Ok(false);
        };
        let static_only = writes_static_only(&table, update, &assigned);
        let modifying = Modifying::Update { static_only };
        let Ok(t) = targets(&table, &update.where_clause, &ctx, modifying) else {
            return Ok(false);
        };
        // Each partition (IN lists several) is its own compare-and-set.
        for pk in &t.keys {
            match groups
                .iter_mut()
                .find(|(g, k, _)| g.storage_id == table.storage_id && k == pk)
            {
                Some((_, _, members)) => members.push(i),
                None => groups.push((table.clone(), pk.clone(), vec![i])),
            }
        }
    }
    for (table, pk, members) in groups {
        let request = &statements[members[0]].2;
        let serial = serial_of(request);
        let options = CasOptions {
            serial,
            commit: request.consistency,
            write_type: write_type.clone(),
            now: context.local_now(request),
        };
        let partition = PartitionKey::new(partition_key_bytes(&pk));
        context
            .data()
            .cas(&schema, &table, &partition, &options, &mut |timestamp| {
                let mut mutations = Vec::new();
                for i in &members {
                    let (m, values, request) = &statements[*i];
                    let request = cas_request(request, serial, timestamp);
                    collect(context, m, &request, values, batch_using, &mut mutations)?;
                }
                // A statement with IN also wrote the other partitions: their
                // own rounds apply those.
                mutations.retain(|m| m.table == table.storage_id && m.partition == partition);
                Ok(Some(merge_mutations(mutations)))
            })?;
    }
    Ok(true)
}

/// Counter updates read before they write: they hold the node's
/// read-modify-write lock for the whole statement.
fn counter_lock<'a>(
    context: &'a StatementCtx<'a>,
    statements: &[&Modification],
    request: &Request,
) -> Result<Option<crate::proxy::RmwGuard<'a>>> {
    let schema = context.schema();
    for m in statements {
        if let Modification::Update(u) = m {
            let keyspace = crate::schema::keyspace_of(&u.table, request.keyspace.as_deref())?;
            if schema
                .table(keyspace, u.table.name.as_str())
                .is_some_and(|t| t.is_counter())
            {
                return Ok(Some(context.rmw_lock.hold()));
            }
        }
    }
    Ok(None)
}

/// `ConsistencyLevel.validateForWrite` / `validateCounterForWrite`: a
/// statement without a condition cannot be written at a serial consistency.
fn check_write_consistency(
    context: &StatementCtx<'_>,
    m: &Modification,
    request: &Request,
) -> Result<()> {
    if !matches!(
        request.consistency,
        Consistency::Serial | Consistency::LocalSerial
    ) {
        return Ok(());
    }
    let schema = context.schema();
    let table = modifiable_table(context, &schema, table_name_of(m), request)?;
    Err(QueryError::invalid(if table.is_counter() {
        "Counter operations are inherently non-serializable"
    } else {
        "You must use conditional updates for serializable writes"
    }))
}

/// Whether a statement's conditions test regular columns: then it
/// addresses a row even when it only writes static columns.
fn conditions_on_regular(
    table: &Table,
    condition: Option<&rocksandra_cql::ast::Condition>,
) -> bool {
    match condition {
        Some(rocksandra_cql::ast::Condition::Columns(conditions)) => conditions.iter().any(|c| {
            table.column(c.target.column().as_str()).map(|c| c.kind) == Some(ColumnKind::Regular)
        }),
        _ => false,
    }
}

/// Whether an UPDATE writes, and conditions on, static columns only (of
/// `assigned`, its assigned columns): then it names no row.
fn writes_static_only(table: &Table, update: &Update, assigned: &[&Column]) -> bool {
    assigned.iter().all(|c| c.kind == ColumnKind::Static)
        && !conditions_on_regular(table, update.condition.as_ref())
}

fn has_condition(m: &Modification) -> bool {
    match m {
        Modification::Insert(i) => i.if_not_exists,
        Modification::Update(u) => u.condition.is_some(),
        Modification::Delete(d) => d.condition.is_some(),
    }
}

/// Writes the mutations with their index entries and view updates; the
/// `replica_disk_usage` guardrail's warning, if it gave one.
fn write(
    context: &StatementCtx<'_>,
    mutations: Vec<Mutation>,
    request: &Request,
    write_type: WriteType,
) -> Result<Option<String>> {
    if mutations.is_empty() {
        return Ok(None);
    }
    let schema = context.schema();
    let disk_warning = replica_disk_usage(context, request, &schema, &mutations)?;
    // Index entries travel with the write they come from (same batch, same
    // consistency).
    let mut mutations = mutations;
    let entries = crate::index::entries::for_mutations(&schema, &mutations)
        .map_err(|e| replica_refusal(context, e, request, &write_type))?;
    let observed = context.vector_graphs.to_observe(&mutations);
    mutations.extend(entries);
    let merged = merge_mutations(mutations);
    let options = WriteOptions {
        consistency: request.consistency,
        write_type,
        now: context.local_now(request),
    };
    let failed = |e| replica_refusal(context, e, request, &options.write_type);
    if !crate::view::any_views(&schema, &merged) {
        context
            .data()
            .write(&schema, merged, &options)
            .map_err(failed)?;
        context.vector_graphs.observe(&observed);
        return Ok(disk_warning);
    }
    // Views are derived from the base rows' state before the write: no
    // other view-maintaining write of this node may come in between.
    let _guard = context.rmw_lock.hold();
    let merged =
        crate::view::with_view_updates(context, &schema, merged, request.consistency, options.now)?;
    context
        .data()
        .write(&schema, merged, &options)
        .map_err(failed)?;
    context.vector_graphs.observe(&observed);
    Ok(disk_warning)
}

/// The `replica_disk_usage` guardrail, on when the data disk usage
/// thresholds are set, for ordinary users (Cassandra's
/// `validateDiskUsage`, before an unconditional write is sent).
fn replica_disk_usage(
    context: &StatementCtx<'_>,
    request: &Request,
    schema: &crate::schema::Schema,
    mutations: &[Mutation],
) -> Result<Option<String>> {
    let active = |g: &Guardrails| g.data_disk_usage_percentage.is_enabled();
    if crate::guard::guardrails_for(context, request, active)?.is_none() {
        return Ok(None);
    }
    let worst = context.data().replicas_disk_usage(schema, mutations);
    let now_ms = u64::try_from(context.now_millis()).unwrap_or_default();
    context.settings.disk_usage.check_replicas(worst, now_ms)
}

/// What Cassandra's replica refuses (a zero vector under a cosine SAI
/// index) or fails on (its storage: an IO error, a full disk) reaches the
/// client as the replica's failure, as there.
fn replica_refusal(
    context: &StatementCtx<'_>,
    e: QueryError,
    request: &Request,
    write_type: &WriteType,
) -> QueryError {
    match &e {
        QueryError::Invalid(m) if m == crate::index::ZERO_VECTOR_COSINE => {
            tracing::error!("write refused: {e}");
        }
        // The storage logs its failure, once, not per write.
        QueryError::Storage(_) => {}
        _ => return e,
    }
    QueryError::local_write_failure(
        context.node().broadcast_address,
        request.consistency,
        write_type.clone(),
    )
}

/// Writes the index entries of a compare-and-set's mutations before its
/// round commits them: the entries are other partitions, which the round
/// does not carry. An entry whose write then does not commit is stale,
/// which searches tolerate and remove; one written after could be lost.
fn write_index_entries(
    context: &StatementCtx<'_>,
    mutations: &[Mutation],
    request: &Request,
) -> Result<()> {
    let schema = context.schema();
    let entries = crate::index::entries::for_mutations(&schema, mutations)?;
    if entries.is_empty() {
        return Ok(());
    }
    let options = WriteOptions {
        consistency: request.consistency,
        write_type: WriteType::Simple,
        now: context.local_now(request),
    };
    context
        .data()
        .write(&schema, merge_mutations(entries), &options)
}

/// The write type a timeout reports for a statement or batch.
fn write_type(kind: Option<BatchKind>, counter: bool) -> WriteType {
    match kind {
        _ if counter => WriteType::Counter,
        None => WriteType::Simple,
        Some(BatchKind::Logged) => WriteType::Batch,
        Some(BatchKind::Unlogged) => WriteType::UnloggedBatch,
        Some(BatchKind::Counter) => WriteType::Counter,
    }
}

/// The consistency of the reads a statement makes before it writes:
/// conditions read at the serial consistency's quorum.
fn read_before_write_consistency(request: &Request) -> Consistency {
    match request.serial_consistency {
        Some(Consistency::LocalSerial) => Consistency::LocalQuorum,
        Some(Consistency::Serial) => Consistency::Quorum,
        _ => request.consistency,
    }
}

/// Merges mutations of the same partition so a batch is one write each.
fn merge_mutations(mutations: Vec<Mutation>) -> Vec<Mutation> {
    let mut by_key: BTreeMap<(TableId, PartitionKey), Mutation> = BTreeMap::new();
    for m in mutations {
        match by_key.get_mut(&(m.table, m.partition.clone())) {
            Some(existing) => {
                existing.partition_deletion =
                    DeletionTime::merge(existing.partition_deletion, m.partition_deletion);
                existing.range_tombstones.extend(m.range_tombstones);
                if let Some(s) = m.static_row {
                    match &mut existing.static_row {
                        Some(e) => merge_row(e, s),
                        None => existing.static_row = Some(s),
                    }
                }
                existing.rows.extend(m.rows);
            }
            None => {
                by_key.insert((m.table, m.partition.clone()), m);
            }
        }
    }
    by_key.into_values().collect()
}

fn merge_row(into: &mut RowUpdate, from: RowUpdate) {
    into.liveness = LivenessInfo::merge(into.liveness, from.liveness);
    into.deletion = DeletionTime::merge(into.deletion, from.deletion);
    into.complex_deletions.extend(from.complex_deletions);
    into.cells.extend(from.cells);
}

/// A BATCH statement given as CQL text.
pub fn execute_batch_statement(
    context: &StatementCtx<'_>,
    batch: &Batch,
    request: &Request,
    values: &[rocksandra_wire::Value],
) -> Result<Outcome> {
    if batch.using.iter().any(|u| matches!(u, UsingParam::Ttl(_))) {
        return Err(QueryError::invalid(
            "Global TTL on the BATCH statement is not supported.",
        ));
    }
    let warning = write_consistency_levels(context, request)?;
    let statements: Vec<(&Modification, &[rocksandra_wire::Value], Request)> = batch
        .statements
        .iter()
        .map(|m| (m, values, request.clone()))
        .collect();
    if batch.statements.iter().any(has_condition) {
        check_batch_kinds(context, batch.kind, &statements, &batch.using)?;
        return with_warnings(
            warning,
            cas::execute(context, &statements, Some(&batch.using)),
        );
    }
    let outcome =
        execute_unconditional_batch(context, batch.kind, &statements, &batch.using, request);
    with_warnings(warning, outcome)
}

/// A batch without conditions: in a cluster, counter batches go through
/// the per-partition compare-and-set; otherwise the statements' mutations
/// are checked and written together.
fn execute_unconditional_batch(
    context: &StatementCtx<'_>,
    kind: BatchKind,
    statements: &[(&Modification, &[rocksandra_wire::Value], Request)],
    using: &[UsingParam],
    request: &Request,
) -> Result<Outcome> {
    check_batch_kinds(context, kind, statements, using)?;
    if counter_cas(context, statements, using, WriteType::Counter)? {
        return Ok(Outcome::void());
    }
    let mut mutations = Vec::new();
    let all: Vec<&Modification> = statements.iter().map(|(m, _, _)| *m).collect();
    let _guard = counter_lock(context, &all, request)?;
    let mut warnings = Vec::new();
    for (m, values, statement_request) in statements {
        let written =
            collect_checked(context, m, statement_request, values, using, &mut mutations)?;
        warnings.extend(written);
    }
    warnings.extend(verify_batch(context, kind, &mutations)?);
    let counter = _guard.is_some();
    let disk_warning = write(context, mutations, request, write_type(Some(kind), counter))?;
    warnings.splice(0..0, disk_warning);
    Ok(Outcome {
        warnings,
        ..Outcome::void()
    })
}

/// A BATCH message: statements with their own values and keyspace.
pub fn execute_batch_message(
    context: &StatementCtx<'_>,
    kind: BatchKind,
    statements: Vec<(Modification, Vec<rocksandra_wire::Value>, Option<String>)>,
    request: &Request,
) -> Result<Outcome> {
    for (m, _, keyspace) in &statements {
        crate::authz::authorize_modification(context, m, keyspace.as_deref(), request)?;
    }
    let timestamped = statements
        .iter()
        .any(|(m, _, _)| crate::guardrails::modification_uses_timestamp(m));
    if timestamped {
        if let Some(g) =
            crate::guard::guardrails_for(context, request, |g| !g.user_timestamps_enabled)?
        {
            g.user_timestamps()?;
        }
    }
    let warning = write_consistency_levels(context, request)?;
    let with_requests: Vec<(&Modification, &[rocksandra_wire::Value], Request)> = statements
        .iter()
        .map(|(m, values, keyspace)| {
            (
                m,
                values.as_slice(),
                Request {
                    keyspace: keyspace.clone(),
                    ..request.clone()
                },
            )
        })
        .collect();
    if statements.iter().any(|(m, _, _)| has_condition(m)) {
        return with_warnings(warning, cas::execute(context, &with_requests, Some(&[])));
    }
    let outcome = execute_unconditional_batch(context, kind, &with_requests, &[], request);
    with_warnings(warning, outcome)
}

/// `batch_size_warn_threshold` (Cassandra's default, 5 KiB).
pub const BATCH_SIZE_WARN_BYTES: u64 = 5 * 1024;
/// `batch_size_fail_threshold` (Cassandra's default, 50 KiB).
pub const BATCH_SIZE_FAIL_BYTES: u64 = 50 * 1024;
/// `unlogged_batch_across_partitions_warn_threshold` (Cassandra's default).
pub const UNLOGGED_BATCH_PARTITIONS_WARN: usize = 10;

/// Cassandra's checks of a batch spanning several partitions
/// (`BatchStatement.verifyBatchSize` and `verifyBatchType`): the size of its
/// data against the warn and fail thresholds, and for an unlogged batch the
/// number of partitions. Returns the client warnings.
fn verify_batch(
    context: &StatementCtx<'_>,
    kind: BatchKind,
    mutations: &[Mutation],
) -> Result<Vec<String>> {
    let schema = context.schema();
    // Cassandra counts one mutation per keyspace and partition key.
    let mut partitions = BTreeSet::new();
    let mut tables = BTreeSet::new();
    let mut size = 0u64;
    for m in mutations {
        let table = schema.tables().find(|t| t.storage_id == m.table);
        if let Some(t) = table {
            partitions.insert((t.keyspace.clone(), m.partition.key.clone()));
            tables.insert(format!("{}.{}", t.keyspace, t.name));
        }
        size += data_size(m, table.map(|t| t.as_ref()));
    }
    let mut warnings = Vec::new();
    if partitions.len() <= 1 {
        return Ok(warnings);
    }
    let names = format!(
        "[{}]",
        tables.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    if size > BATCH_SIZE_FAIL_BYTES {
        return Err(QueryError::invalid("Batch too large"));
    }
    if size > BATCH_SIZE_WARN_BYTES {
        warnings.push(format!(
            "Batch for {names} is of size {size}, exceeding specified threshold of \
             {BATCH_SIZE_WARN_BYTES} by {}.",
            size - BATCH_SIZE_WARN_BYTES
        ));
    }
    if kind == BatchKind::Unlogged && partitions.len() > UNLOGGED_BATCH_PARTITIONS_WARN {
        warnings.push(format!(
            "Unlogged batch covering {} partitions detected against table{} {names}. You should \
             use a logged batch for atomicity, or asynchronous writes for performance.",
            partitions.len(),
            if tables.len() == 1 { "" } else { "s" }
        ));
    }
    Ok(warnings)
}

/// The size Cassandra gives a partition update (`PartitionUpdate.dataSize`),
/// as measured against Cassandra 5.0.6 through its batch warnings: 29 bytes
/// per partition (deletion info and the static row's header), 21 per row plus
/// its clustering values, 12 more for an expiring row marker, 12 per
/// collection or UDT column, per cell 20 bytes plus the value and the element
/// path as serialized, and 16 per range tombstone plus its bounds' values.
fn data_size(m: &Mutation, table: Option<&Table>) -> u64 {
    let path_len = |cell: &Cell| -> u64 {
        let ty = table
            .and_then(|t| t.columns.iter().find(|c| c.id == cell.column))
            .map(|c| &c.ty);
        written::cassandra_path_len(ty, cell) as u64
    };
    let cells = |row: &RowUpdate| -> u64 {
        let mut complex: BTreeSet<ColumnId> =
            row.complex_deletions.iter().map(|(c, _)| *c).collect();
        let mut size = 0;
        for cell in &row.cells {
            size += 20 + cell.value.len() as u64;
            if cell.path.is_some() {
                complex.insert(cell.column);
                size += path_len(cell);
            }
        }
        size + 12 * complex.len() as u64
    };
    let bound = |b: &ClusteringBound| b.prefix.iter().map(|v| v.len() as u64).sum::<u64>();
    let mut size = 29 + m.static_row.as_ref().map_or(0, cells);
    size += m
        .range_tombstones
        .iter()
        .map(|rt| 16 + bound(&rt.start) + bound(&rt.end))
        .sum::<u64>();
    for (clustering, row) in &m.rows {
        size += 21 + clustering.iter().map(|c| c.len() as u64).sum::<u64>() + cells(row);
        if row.liveness.is_some_and(|l| l.is_expiring()) {
            size += 12;
        }
    }
    size
}

/// `BatchStatement.validate`: counter statements go in counter or unlogged
/// batches, alone, without a batch-wide timestamp.
fn check_batch_kinds(
    context: &StatementCtx<'_>,
    kind: BatchKind,
    statements: &[(&Modification, &[rocksandra_wire::Value], Request)],
    using: &[UsingParam],
) -> Result<()> {
    if kind == BatchKind::Counter && using.iter().any(|u| matches!(u, UsingParam::Timestamp(_))) {
        return Err(QueryError::invalid(
            "Cannot provide custom timestamp for counter BATCH",
        ));
    }
    let schema = context.schema();
    let (mut counters, mut others) = (false, false);
    for (m, _, request) in statements {
        let table = modifiable_table(context, &schema, table_name_of(m), request)?;
        if table.is_counter() {
            counters = true;
        } else {
            others = true;
        }
    }
    if kind == BatchKind::Counter && others {
        return Err(QueryError::invalid(
            "Cannot include non-counter statement in a counter batch",
        ));
    }
    if counters && others {
        return Err(QueryError::invalid(
            "Counter and non-counter mutations cannot exist in the same batch",
        ));
    }
    if kind == BatchKind::Logged && counters {
        return Err(QueryError::invalid(
            "Cannot include a counter statement in a logged batch",
        ));
    }
    Ok(())
}

/// Adds the mutations of one statement.
/// `collect` with the guardrails on the values written (`written`), for
/// the user they bind: their warnings, or the failure.
fn collect_checked(
    context: &StatementCtx<'_>,
    m: &Modification,
    request: &Request,
    values: &[rocksandra_wire::Value],
    batch_using: &[UsingParam],
    out: &mut Vec<Mutation>,
) -> Result<Vec<String>> {
    let start = out.len();
    collect(context, m, request, values, batch_using, out)?;
    let guardrails =
        crate::guard::guardrails_for(context, request, Guardrails::guards_written_values)?;
    let (Some(g), Some(first)) = (guardrails, out.get(start)) else {
        return Ok(Vec::new());
    };
    let schema = context.schema();
    let Some((_, table)) = schema.table_by_storage_id(first.table) else {
        return Ok(Vec::new());
    };
    let mut warnings = in_products(context, &g, table, m, values)?;
    warnings.extend(written::check(&g, table, m, &out[start..])?);
    Ok(warnings)
}

/// `in_select_cartesian_product` on the partition keys, then the
/// clustering keys, a modification's IN restrictions make.
fn in_products(
    context: &StatementCtx<'_>,
    g: &Guardrails,
    table: &Table,
    m: &Modification,
    values: &[rocksandra_wire::Value],
) -> Result<Vec<String>> {
    if !g.in_select_cartesian_product.is_enabled() || matches!(m, Modification::Insert(_)) {
        return Ok(Vec::new());
    }
    let schema = context.schema();
    let random = context.env.random.clone();
    let ctx = context.eval_context(&schema, &table.keyspace, values, &*random);
    let r = analyze(table, where_of(m), &ctx)?;
    let mut warnings = crate::guardrails::in_products(g, &r.partition_in_sizes, "partition key")?;
    let clustering = crate::guardrails::in_products(g, &r.clustering_in_sizes, "clustering key")?;
    warnings.extend(clustering);
    Ok(warnings)
}

fn collect(
    context: &StatementCtx<'_>,
    m: &Modification,
    request: &Request,
    values: &[rocksandra_wire::Value],
    batch_using: &[UsingParam],
    out: &mut Vec<Mutation>,
) -> Result<()> {
    let has_timestamp =
        |using: &[UsingParam]| using.iter().any(|u| matches!(u, UsingParam::Timestamp(_)));
    if has_timestamp(batch_using) && has_timestamp(using_of(m)) {
        return Err(QueryError::invalid(
            "Timestamp must be set either on BATCH or individual statements",
        ));
    }
    let schema = context.schema();
    let random = context.env.random.clone();
    match m {
        Modification::Insert(insert) => {
            let table = modifiable_table(context, &schema, &insert.table, request)?;
            let ctx = context.eval_context(&schema, &table.keyspace, values, &*random);
            let using: Vec<UsingParam> = batch_using.iter().chain(&insert.using).cloned().collect();
            let params = write_params(context, &table, &using, request, &ctx)?;
            insert_mutation(context, &table, insert, params, &ctx, out)
        }
        Modification::Update(update) => {
            let table = modifiable_table(context, &schema, &update.table, request)?;
            if table.is_counter() {
                if update.using.iter().any(|u| matches!(u, UsingParam::Ttl(_))) {
                    return Err(QueryError::invalid(
                        "Cannot provide custom TTL for counter updates",
                    ));
                }
                if update
                    .using
                    .iter()
                    .any(|u| matches!(u, UsingParam::Timestamp(_)))
                {
                    return Err(QueryError::invalid(
                        "Cannot provide custom timestamp for counter updates",
                    ));
                }
            }
            let ctx = context.eval_context(&schema, &table.keyspace, values, &*random);
            let using: Vec<UsingParam> = batch_using.iter().chain(&update.using).cloned().collect();
            let params = write_params(context, &table, &using, request, &ctx)?;
            update_mutation(context, &table, update, params, &ctx, request, out)
        }
        Modification::Delete(delete) => {
            let table = modifiable_table(context, &schema, &delete.table, request)?;
            let ctx = context.eval_context(&schema, &table.keyspace, values, &*random);
            let using: Vec<UsingParam> = batch_using.iter().chain(&delete.using).cloned().collect();
            if using.iter().any(|u| matches!(u, UsingParam::Ttl(_))) {
                return Err(QueryError::invalid(
                    "TTL cannot be used with DELETE statements",
                ));
            }
            if table.is_counter()
                && delete
                    .using
                    .iter()
                    .any(|u| matches!(u, UsingParam::Timestamp(_)))
            {
                return Err(QueryError::invalid(
                    "Cannot provide custom timestamp for counter updates",
                ));
            }
            let params = write_params(context, &table, &using, request, &ctx)?;
            delete_mutation(context, &table, delete, params, &ctx, request, out)
        }
    }
}

fn key_value(column: &Column, term: Term, single_component_key: bool) -> Result<Vec<u8>> {
    match term {
        Term::Value(v) => {
            if v.is_empty() && column.kind == ColumnKind::PartitionKey && single_component_key {
                // Only a whole partition key may not be empty.
                return Err(QueryError::invalid("Key may not be empty"));
            }
            if v.len() > usize::from(u16::MAX) && column.kind == ColumnKind::PartitionKey {
                return Err(QueryError::invalid(format!(
                    "Key length of {} is longer than maximum of {}",
                    v.len(),
                    u16::MAX
                )));
            }
            Ok(v)
        }
        Term::Null => Err(QueryError::invalid(format!(
            "Invalid null value in condition for column {}",
            column.name
        ))),
        Term::Unset => Err(QueryError::invalid(format!(
            "Invalid unset value for column {}",
            column.name
        ))),
    }
}

fn insert_mutation(
    context: &StatementCtx<'_>,
    table: &Table,
    insert: &Insert,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    out: &mut Vec<Mutation>,
) -> Result<()> {
    if table.is_counter() {
        return Err(QueryError::invalid(
            "INSERT statements are not allowed on counter tables, use UPDATE instead",
        ));
    }
    let (names, exprs): (Vec<String>, Vec<Expr>) = match &insert.values {
        InsertValues::Columns { columns, values } => {
            if columns.len() != values.len() {
                return Err(QueryError::invalid("Unmatched column names/values"));
            }
            (
                columns.iter().map(|c| c.as_str().to_string()).collect(),
                values.clone(),
            )
        }
        InsertValues::Json {
            value,
            default_unset,
        } => {
            return insert_json(context, table, value, *default_unset, params, ctx, out);
        }
    };
    let mut given: Vec<Option<Term>> = vec![None; table.columns.len()];
    for (name, expr) in names.iter().zip(&exprs) {
        let Some(i) = table.column_index(name) else {
            return Err(undefined_column(table, name));
        };
        if given[i].is_some() {
            return Err(QueryError::invalid("The column names contains duplicates"));
        }
        let column = &table.columns[i];
        given[i] = Some(evaluate(expr, &column.ty, &column.name, ctx)?);
    }
    insert_terms(context, table, names, given, params, out)
}

/// The mutation of an INSERT whose column values are evaluated.
fn insert_terms(
    context: &StatementCtx<'_>,
    table: &Table,
    names: Vec<String>,
    mut given: Vec<Option<Term>>,
    params: WriteParams,
    out: &mut Vec<Mutation>,
) -> Result<()> {
    let pk = insert_partition_key(table, &mut given, &names)?;
    let clustering = insert_clustering(table, &mut given, &names)?;
    check_compact_clustering(table, &clustering)?;
    let mut mutation = new_mutation(table, &pk);
    let mut row = RowUpdate::default();
    let mut static_row = RowUpdate::default();
    let static_only = clustering.is_empty() && table.clustering_count > 0;
    // A compact table's rows have no marker: they live by their values.
    if !static_only && table.compact.is_some() {
        let has_values = given.iter().any(Option::is_some);
        compact_row_value(table, has_values, params, &mut row)?;
    } else if !static_only {
        row.liveness = Some(if params.ttl > 0 {
            LivenessInfo::new(
                params.timestamp,
                params.ttl,
                params.now.plus_seconds(i64::from(params.ttl)).0,
            )
        } else {
            LivenessInfo::new(params.timestamp, 0, i64::MAX)
        });
    }
    for (i, term) in given.into_iter().enumerate() {
        let Some(term) = term else { continue };
        let column = &table.columns[i];
        let target = if column.kind == ColumnKind::Static {
            &mut static_row
        } else {
            &mut row
        };
        set_column(context, column, term, params, target)?;
    }
    if !static_row.cells.is_empty() || !static_row.complex_deletions.is_empty() {
        mutation.static_row = Some(static_row);
    }
    if !static_only {
        mutation.rows.push((clustering, row));
    }
    out.push(mutation);
    Ok(())
}

/// Takes an INSERT's partition key values out of `given`, refusing an
/// INSERT that leaves a part out.
fn insert_partition_key(
    table: &Table,
    given: &mut [Option<Term>],
    names: &[String],
) -> Result<Vec<Vec<u8>>> {
    let mut pk = Vec::new();
    for (i, column) in table.partition_key().iter().enumerate() {
        let Some(term) = given[i].take() else {
            return Err(QueryError::invalid(format!(
                "Some partition key parts are missing: {}",
                missing(table.partition_key(), names)
            )));
        };
        pk.push(key_value(column, term, table.partition_key_count == 1)?);
    }
    Ok(pk)
}

/// Takes an INSERT's clustering values out of `given`, refusing one left
/// out unless only static columns are set (the row is then not written) or
/// the trailing ones of a compact table's row (`named_rows`).
fn insert_clustering(
    table: &Table,
    given: &mut [Option<Term>],
    names: &[String],
) -> Result<Vec<Vec<u8>>> {
    let mut clustering = Vec::new();
    for (j, column) in table.clustering().iter().enumerate() {
        let i = table.partition_key_count + j;
        let Some(term) = given[i].take() else {
            if let Some(later) = table.clustering()[j + 1..]
                .iter()
                .zip(&given[i + 1..])
                .find_map(|(c, g)| g.as_ref().map(|_| c))
            {
                return Err(QueryError::invalid(format!(
                    "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{}\" is not restricted",
                    later.name, column.name
                )));
            }
            // A compact table's row may have a clustering prefix.
            if named_rows::insert_names_row(
                table.allows_clustering_prefix_rows(),
                j,
                table.clustering_count,
            ) {
                break;
            }
            // Static columns set, and nothing else: the clustering may be
            // left out (UpdateStatement's appliesOnlyToStaticColumns).
            let mut set = table
                .columns
                .iter()
                .zip(given.iter())
                .filter(|(_, g)| g.is_some());
            let only_static =
                set.clone().next().is_some() && set.all(|(c, _)| c.kind == ColumnKind::Static);
            if only_static && clustering.is_empty() {
                break;
            }
            return Err(QueryError::invalid(format!(
                "Some clustering keys are missing: {}",
                missing(table.clustering(), names)
            )));
        };
        clustering.push(key_value(column, term, false)?);
    }
    Ok(clustering)
}

/// UpdateStatement.addUpdateForKey on a compact table: a write that sets
/// no value sets the hidden empty value of a table declared without one,
/// and is refused by one that has a value column.
fn compact_row_value(
    table: &Table,
    has_values: bool,
    params: WriteParams,
    row: &mut RowUpdate,
) -> Result<()> {
    if has_values {
        return Ok(());
    }
    match table.columns.iter().find(|c| c.kind == ColumnKind::Regular) {
        Some(value) if crate::type_text::is_empty_type(&value.ty) => {
            row.cells.push(params.cell(value, Vec::new()));
            Ok(())
        }
        Some(value) => Err(QueryError::invalid(format!(
            "Column {} is mandatory for this COMPACT STORAGE table",
            value.name
        ))),
        None => Ok(()),
    }
}

/// A dense compact table with one clustering column keeps no row under an
/// empty clustering value (it once named the compact value).
fn check_compact_clustering(table: &Table, clustering: &[Vec<u8>]) -> Result<()> {
    let Some(compact) = &table.compact else {
        return Ok(());
    };
    match (clustering.first(), table.clustering().first()) {
        (Some(first), Some(column)) if compact.dense && !compact.compound && first.is_empty() => {
            Err(QueryError::invalid(format!(
                "Invalid empty or null value for column {}",
                column.name
            )))
        }
        _ => Ok(()),
    }
}

fn undefined_column(table: &Table, name: &str) -> QueryError {
    QueryError::undefined_column(
        &rocksandra_data::types::quote_identifier_if_needed(name),
        &table.keyspace,
        &table.name,
    )
}

/// `INSERT INTO t JSON '{...}' [DEFAULT UNSET]`: the document's columns as
/// an INSERT of those columns; absent columns are null (or left unset).
fn insert_json(
    context: &StatementCtx<'_>,
    table: &Table,
    value: &Expr,
    default_unset: bool,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    out: &mut Vec<Mutation>,
) -> Result<()> {
    let text_type = CqlType::Native(NativeType::Text);
    let text = match evaluate(value, &text_type, "[json]", ctx)? {
        Term::Value(bytes) => String::from_utf8(bytes)
            .map_err(|_| QueryError::invalid("JSON document is not UTF-8"))?,
        _ => return Err(QueryError::invalid("Got null for INSERT JSON values")),
    };
    let document = crate::json::parse_object(&text).map_err(|e| {
        QueryError::invalid(format!(
            "Could not decode JSON string as a map: {}. (String was: {text})",
            e.java()
        ))
    })?;
    let crate::json::Json::Map(entries) = document else {
        return Err(QueryError::invalid("Got null for INSERT JSON values"));
    };
    // Json.parseJson: the table's columns in Cassandra's order take their
    // value out of the document; what is left is unknown.
    let mut remaining: Vec<(String, &crate::json::Json)> = entries
        .iter()
        .map(|(key, json)| (crate::json::column_name(key), json))
        .collect();
    let mut names = Vec::new();
    let mut terms: Vec<Option<Term>> = vec![None; table.columns.len()];
    for i in json_column_order(table) {
        let column = &table.columns[i];
        if table.is_hidden(column) {
            continue;
        }
        let Some(at) = remaining.iter().position(|(name, _)| *name == column.name) else {
            continue;
        };
        let (name, json) = remaining.remove(at);
        let term = match crate::json::from_json(&column.ty, json, ctx.now_micros.div_euclid(1000)) {
            Ok(Some(b)) => Term::Value(b),
            Ok(None) => Term::Null,
            Err(crate::json::JsonValueError::Invalid(e)) => return Err(QueryError::invalid(e)),
            Err(crate::json::JsonValueError::Marshal(e)) => {
                return Err(QueryError::invalid(format!(
                    "Error decoding JSON value for {name}: {e}"
                )))
            }
        };
        terms[i] = Some(term);
        names.push(name);
    }
    if let Some((name, _)) = remaining.first() {
        return Err(QueryError::invalid(format!(
            "JSON values map contains unrecognized column: {name}"
        )));
    }
    // Cassandra's INSERT JSON names every column of the table, a compact
    // table's hidden ones too, which it then cannot find.
    if let Some(hidden) = table.columns.iter().find(|c| table.is_hidden(c)) {
        return Err(undefined_column(table, &hidden.name));
    }
    // A missing or null key column fails when the key is built, with the
    // message of a null key restriction.
    for (i, column) in table.columns.iter().enumerate() {
        if column.kind.is_primary_key()
            && !table.is_hidden(column)
            && !matches!(terms[i], Some(Term::Value(_)))
        {
            return Err(QueryError::invalid(format!(
                "Invalid null value in condition for column {}",
                column.name
            )));
        }
    }
    if !default_unset {
        for (i, column) in table.columns.iter().enumerate() {
            if terms[i].is_none() && !column.kind.is_primary_key() && !table.is_hidden(column) {
                terms[i] = Some(Term::Null);
            }
        }
    }
    insert_terms(context, table, names, terms, params, out)
}

/// The order of `TableMetadata.columns()`: a Java `HashMap` keyed by the
/// names' bytes (`ByteBuffer.hashCode`, spread, by bucket, then in the
/// order the key, clustering and other columns were added). INSERT JSON
/// converts (and reports the first bad) values in this order.
fn json_column_order(table: &Table) -> Vec<usize> {
    let n = table.columns.len();
    // HashMap's table: 16 buckets, doubled whenever it holds more than 3/4.
    let mut buckets = 16usize;
    while n > buckets * 3 / 4 {
        buckets *= 2;
    }
    let bucket = |name: &str| -> usize {
        let mut h: i32 = 1;
        for b in name.as_bytes().iter().rev() {
            h = h.wrapping_mul(31).wrapping_add(i32::from(*b as i8));
        }
        let spread = h ^ ((h as u32) >> 16) as i32;
        (spread as u32 as usize) & (buckets - 1)
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|i| bucket(&table.columns[*i].name));
    order
}

fn missing(columns: &[Column], given: &[String]) -> String {
    columns
        .iter()
        .filter(|c| !given.contains(&c.name))
        .map(|c| c.name.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

fn new_mutation(table: &Table, pk: &[Vec<u8>]) -> Mutation {
    Mutation::new(table.storage_id, PartitionKey::new(partition_key_bytes(pk)))
}

/// `column = term` for a whole column (INSERT value or UPDATE SET).
fn set_column(
    context: &StatementCtx<'_>,
    column: &Column,
    term: Term,
    params: WriteParams,
    row: &mut RowUpdate,
) -> Result<()> {
    if !column.ty.is_multi_cell() {
        match term {
            Term::Unset => {}
            Term::Null => row.cells.push(params.tombstone(column)),
            Term::Value(v) => row.cells.push(params.cell(column, v)),
        }
        return Ok(());
    }
    match term {
        Term::Unset => Ok(()),
        Term::Null => {
            row.complex_deletions
                .push((column.id, DeletionTime::new(params.timestamp, params.now.0)));
            Ok(())
        }
        Term::Value(bytes) => {
            // Overwriting a collection deletes what was there just before.
            row.complex_deletions.push((
                column.id,
                DeletionTime::new(params.timestamp - 1, params.now.0),
            ));
            add_elements(context, column, &bytes, params, row, false)
        }
    }
}

/// Element cells for the elements of a collection or UDT value.
fn add_elements(
    context: &StatementCtx<'_>,
    column: &Column,
    bytes: &[u8],
    params: WriteParams,
    row: &mut RowUpdate,
    prepend: bool,
) -> Result<()> {
    let value = Value::deserialize(&column.ty, bytes)?;
    match (&column.ty, value) {
        (CqlType::List(_), Value::List(items)) => {
            let n = items.len();
            // One clock reading for all prepended elements keeps their order.
            let prepend_base = prepend_micros(context);
            for (k, item) in items.into_iter().enumerate() {
                let id = if prepend {
                    prepend_timeuuid(context, prepend_base, n - k)
                } else {
                    list_timeuuid(context, params.timestamp, k)
                };
                row.cells.push(
                    params
                        .cell(column, item.to_bytes())
                        .with_path(paths::list_path(id)),
                );
            }
        }
        (CqlType::Set(e), Value::Set(items)) => {
            for item in items {
                let key = paths::element_key(e, &item.to_bytes())?;
                row.cells
                    .push(params.cell(column, Vec::new()).with_element_key(key));
            }
        }
        (CqlType::Map(k, _), Value::Map(entries)) => {
            for (key, value) in entries {
                let key = paths::element_key(k, &key.to_bytes())?;
                row.cells
                    .push(params.cell(column, value.to_bytes()).with_element_key(key));
            }
        }
        (CqlType::Udt(_), Value::Udt(fields)) => {
            for (i, field) in fields.into_iter().enumerate() {
                let path = paths::field_path(i);
                match field {
                    Some(v) => row
                        .cells
                        .push(params.cell(column, v.to_bytes()).with_path(path)),
                    None => row.cells.push(params.tombstone(column).with_path(path)),
                }
            }
        }
        _ => {
            return Err(QueryError::invalid(format!(
                "Invalid value for column {}",
                column.name
            )))
        }
    }
    Ok(())
}

/// A version-1 UUID for the `k`-th appended element at `timestamp` micros:
/// increasing with the write time, and after every element appended before
/// it by this node (`Settings::last_append_ticks`, as Cassandra's
/// `TimeUUID.Generator`: two statements of one batch share a timestamp,
/// and the second one's elements still come after the first one's);
/// unique per element.
fn list_timeuuid(context: &StatementCtx<'_>, timestamp: i64, k: usize) -> [u8; 16] {
    use std::sync::atomic::Ordering;
    // 100-ns intervals since 1582-10-15.
    let wanted = (timestamp as i128 * 10
        + i128::from(rocksandra_data::uuid::GREGORIAN_EPOCH_OFFSET_TICKS)
        + k as i128) as u64;
    let previous = context
        .settings
        .last_append_ticks
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(wanted.max(last.saturating_add(1)))
        })
        .unwrap_or_else(|last| last);
    let t = wanted.max(previous.saturating_add(1));
    rocksandra_data::uuid::time_v1(t, (context.env.random)())
}

/// Prepended elements get times before 2010-01-01, decreasing with each
/// prepend, as Cassandra's `Lists.PrecisionTime` does.
fn prepend_timeuuid(context: &StatementCtx<'_>, micros: i64, k: usize) -> [u8; 16] {
    let t = ((micros as i128) * 10
        + i128::from(rocksandra_data::uuid::GREGORIAN_EPOCH_OFFSET_TICKS)
        - k as i128) as u64;
    rocksandra_data::uuid::time_v1(t, (context.env.random)())
}

/// The time of a prepend: as far before 2010-01-01 as now is after it.
fn prepend_micros(context: &StatementCtx<'_>) -> i64 {
    const REFERENCE_MICROS: i64 = 1_262_304_000_000_000; // 2010-01-01
    REFERENCE_MICROS - (context.now_micros() - REFERENCE_MICROS)
}

/// Partition keys and clustering prefixes a WHERE clause designates for a
/// modification.
struct Targets {
    keys: Vec<Vec<Vec<u8>>>,
    slices: Vec<Slice>,
    exact: bool,
    restricted: bool,
}

impl Targets {
    /// An empty IN on the clustering key: Cassandra writes nothing at all.
    fn selects_no_row(&self) -> bool {
        self.restricted && self.slices.is_empty()
    }

    /// The clustering of each row the restrictions name, if they name rows.
    fn named_rows(&self, table: &Table) -> Option<Vec<Vec<Vec<u8>>>> {
        named_rows::named_rows(
            table.allows_clustering_prefix_rows(),
            self.exact,
            &self.slices,
        )
    }
}

/// Which modification a WHERE clause belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Modifying {
    /// An UPDATE, which names whole rows unless it writes (and conditions)
    /// only static columns.
    Update {
        static_only: bool,
    },
    Delete,
}

impl Modifying {
    fn statement(self) -> &'static str {
        match self {
            Modifying::Update { .. } => "UPDATE",
            Modifying::Delete => "DELETE",
        }
    }
}

fn targets(
    table: &Table,
    where_clause: &[rocksandra_cql::ast::Relation],
    ctx: &EvalContext<'_>,
    modifying: Modifying,
) -> Result<Targets> {
    let statement = modifying.statement();
    for r in where_clause {
        if let rocksandra_cql::ast::Relation::Compare { lhs, op, .. } = r {
            check_modification_relation(table, lhs, *op, statement)?;
        }
    }
    refuse_missing_partition_key(table, where_clause)?;
    if let Modifying::Update { static_only } = modifying {
        refuse_missing_clustering(table, where_clause, static_only)?;
    }
    refuse_non_key_relations(table, where_clause)?;
    let r = analyze(table, where_clause, ctx)?;
    if let Some(name) = &r.null_slice_bound {
        return Err(QueryError::invalid(format!(
            "Invalid null value for column {name}"
        )));
    }
    if let Some(e) = r.clustering_error {
        return Err(e);
    }
    let static_only = modifying == Modifying::Update { static_only: true };
    if static_only && r.clustering_restricted && table.clustering_count > 0 {
        return Err(QueryError::invalid(
            "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns",
        ));
    }
    let PartitionSelection::Keys(keys) = r.partition else {
        return Err(missing_partition_key(table, where_clause));
    };
    for key in &keys {
        for (column, v) in table.partition_key().iter().zip(key) {
            key_value(
                column,
                Term::Value(v.clone()),
                table.partition_key_count == 1,
            )?;
        }
    }
    Ok(Targets {
        keys,
        slices: r.slices,
        exact: r.clustering_is_exact,
        restricted: r.clustering_restricted,
    })
}

/// At PREPARE: the refusals of an UPDATE's WHERE clause that need no
/// value (its terms are stand-ins in `ctx`), as Cassandra refuses
/// them when it prepares the statement.
pub(crate) fn check_prepared_update(
    table: &Table,
    update: &Update,
    ctx: &EvalContext<'_>,
) -> Result<()> {
    debug_assert!(ctx.stand_ins);
    let assigned = assigned_columns(table, update)?;
    let static_only = writes_static_only(table, update, &assigned);
    let modifying = Modifying::Update { static_only };
    targets(table, &update.where_clause, ctx, modifying)?;
    let set = update
        .assignments
        .iter()
        .filter_map(|a| match (&a.target, a.op) {
            (ColumnTarget::Column(c), AssignOp::Set) => Some((c, &a.value)),
            _ => None,
        });
    check_prepared_calls(table, set, ctx)?;
    check_prepared_condition_calls(table, update.condition.as_ref(), ctx)
}

/// `check_prepared_update` for a DELETE.
pub(crate) fn check_prepared_delete(
    table: &Table,
    delete: &rocksandra_cql::ast::Delete,
    ctx: &EvalContext<'_>,
) -> Result<()> {
    debug_assert!(ctx.stand_ins);
    targets(table, &delete.where_clause, ctx, Modifying::Delete)?;
    check_prepared_condition_calls(table, delete.condition.as_ref(), ctx)
}

/// At PREPARE: an INSERT's column list and its key columns, as Cassandra
/// checks them when it prepares the statement (a partition key part or a
/// clustering column left out, one named after an unnamed one), and the
/// function calls among its values.
pub(crate) fn check_prepared_insert(
    table: &Table,
    insert: &Insert,
    ctx: &EvalContext<'_>,
) -> Result<()> {
    debug_assert!(ctx.stand_ins);
    let InsertValues::Columns { columns, values } = &insert.values else {
        return Ok(());
    };
    if table.is_counter() || columns.len() != values.len() {
        // Refused when it runs, before anything else is said of it.
        return Ok(());
    }
    let mut given: Vec<Option<Term>> = vec![None; table.columns.len()];
    for (name, expr) in columns.iter().zip(values) {
        let Some(i) = table.column_index(name.as_str()) else {
            return Err(undefined_column(table, name.as_str()));
        };
        if given[i].is_some() {
            return Err(QueryError::invalid("The column names contains duplicates"));
        }
        let column = &table.columns[i];
        given[i] = Some(evaluate(expr, &column.ty, &column.name, ctx)?);
    }
    let names: Vec<String> = columns.iter().map(|c| c.as_str().to_string()).collect();
    insert_partition_key(table, &mut given, &names)?;
    insert_clustering(table, &mut given, &names).map(|_| ())
}

/// At PREPARE: the function calls among a write's terms whose arguments
/// hold bind markers, each going to a column (`term::evaluate` with
/// stand-ins resolves them as when the statement runs: a call no type
/// settles is refused as ambiguous when prepared, as in Cassandra).
fn check_prepared_calls<'e>(
    table: &Table,
    terms: impl Iterator<Item = (&'e rocksandra_cql::ast::Ident, &'e Expr)>,
    ctx: &EvalContext<'_>,
) -> Result<()> {
    for (name, expr) in terms {
        let Some(column) = table.column(name.as_str()) else {
            continue;
        };
        if matches!(expr, Expr::Function { .. }) && crate::term::contains_bind_marker(expr) {
            evaluate(expr, &column.ty, &column.name, ctx)?;
        }
    }
    Ok(())
}

/// `check_prepared_calls` of the equalities and comparisons of IF.
fn check_prepared_condition_calls(
    table: &Table,
    condition: Option<&rocksandra_cql::ast::Condition>,
    ctx: &EvalContext<'_>,
) -> Result<()> {
    let Some(rocksandra_cql::ast::Condition::Columns(conditions)) = condition else {
        return Ok(());
    };
    let compared = conditions.iter().filter_map(|c| match (&c.target, c.op) {
        (ColumnTarget::Column(name), op) if op != rocksandra_cql::ast::Operator::In => {
            Some((name, &c.value))
        }
        _ => None,
    });
    check_prepared_calls(table, compared, ctx)
}

/// An UPDATE writes whole rows: no slice of clustering columns.
fn refuse_update_slice(
    table: &Table,
    where_clause: &[rocksandra_cql::ast::Relation],
) -> Result<()> {
    if cas::has_clustering_slice(table, where_clause) {
        return Err(QueryError::invalid(
            "Slice restrictions are not supported on the clustering columns in UPDATE statements",
        ));
    }
    Ok(())
}

/// Refuses a relation an UPDATE or DELETE cannot have: CONTAINS (KEY),
/// relations on non-frozen collections, on non-key columns, other than
/// EQ/IN on the partition key, and token().
fn check_modification_relation(
    table: &Table,
    lhs: &rocksandra_cql::ast::RelationLhs,
    op: rocksandra_cql::ast::Operator,
    statement: &str,
) -> Result<()> {
    match lhs {
        rocksandra_cql::ast::RelationLhs::Column(c) => {
            let Some(column) = table.column(c.as_str()) else {
                return Err(undefined_column(table, c.as_str()));
            };
            // Cassandra builds each relation's restriction (and refuses
            // it) before looking for non-key columns.
            match op {
                rocksandra_cql::ast::Operator::Contains => {
                    return Err(QueryError::invalid(format!(
                        "Cannot use {statement} with CONTAINS"
                    )))
                }
                rocksandra_cql::ast::Operator::ContainsKey => {
                    return Err(QueryError::invalid(format!(
                        "Cannot use {statement} with CONTAINS KEY"
                    )))
                }
                rocksandra_cql::ast::Operator::Eq
                | rocksandra_cql::ast::Operator::Lt
                | rocksandra_cql::ast::Operator::Lte
                | rocksandra_cql::ast::Operator::Gt
                | rocksandra_cql::ast::Operator::Gte
                | rocksandra_cql::ast::Operator::In
                    if column.ty.is_multi_cell()
                        && matches!(
                            column.ty,
                            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..)
                        ) =>
                {
                    let op_text = match op {
                        rocksandra_cql::ast::Operator::Eq => "=",
                        rocksandra_cql::ast::Operator::Lt => "<",
                        rocksandra_cql::ast::Operator::Lte => "<=",
                        rocksandra_cql::ast::Operator::Gt => ">",
                        rocksandra_cql::ast::Operator::Gte => ">=",
                        _ => "IN",
                    };
                    return Err(QueryError::invalid(format!(
                        "Collection column '{}' ({}) cannot be restricted by a '{op_text}' relation",
                        column.name, column.ty
                    )));
                }
                _ => {}
            }
            if column.kind == ColumnKind::PartitionKey
                && !matches!(
                    op,
                    rocksandra_cql::ast::Operator::Eq | rocksandra_cql::ast::Operator::In
                )
            {
                return Err(QueryError::invalid(format!(
                    "Only EQ and IN relation are supported on the partition key (unless you use the token() function) for {statement} statements"
                )));
            }
        }
        rocksandra_cql::ast::RelationLhs::Token(_) => {
            return Err(QueryError::invalid(format!(
                "The token function cannot be used in WHERE clauses for {statement} statements"
            )))
        }
        _ => {}
    }
    Ok(())
}

/// An UPDATE or DELETE names every partition key column (with `=` or IN).
fn refuse_missing_partition_key(
    table: &Table,
    where_clause: &[rocksandra_cql::ast::Relation],
) -> Result<()> {
    let given = relation_column_names(where_clause);
    if table
        .partition_key()
        .iter()
        .all(|c| given.contains(&c.name))
    {
        return Ok(());
    }
    Err(missing_partition_key(table, where_clause))
}

fn missing_partition_key(
    table: &Table,
    where_clause: &[rocksandra_cql::ast::Relation],
) -> QueryError {
    let given = column_relation_names(where_clause);
    QueryError::invalid(format!(
        "Some partition key parts are missing: {}",
        missing(table.partition_key(), &given)
    ))
}

/// An UPDATE of rows (not only of static columns) names every clustering
/// column, and Cassandra says so before it looks at how they are
/// restricted: no slice, then none missing.
fn refuse_missing_clustering(
    table: &Table,
    where_clause: &[rocksandra_cql::ast::Relation],
    static_only: bool,
) -> Result<()> {
    refuse_update_slice(table, where_clause)?;
    let given = relation_column_names(where_clause);
    // A compact table's restricted clustering columns are checked as a
    // SELECT's (Cassandra's `StatementRestrictions`).
    let compact_restricted =
        table.compact.is_some() && table.clustering().iter().any(|c| given.contains(&c.name));
    let missing_any = table.clustering().iter().any(|c| !given.contains(&c.name));
    if static_only || compact_restricted || !missing_any {
        return Ok(());
    }
    Err(QueryError::invalid(format!(
        "Some clustering keys are missing: {}",
        missing(table.clustering(), &given)
    )))
}

/// An UPDATE or DELETE restricts only primary key columns.
fn refuse_non_key_relations(
    table: &Table,
    where_clause: &[rocksandra_cql::ast::Relation],
) -> Result<()> {
    let non_key = relation_column_names(where_clause)
        .into_iter()
        .find(|name| table.column(name).is_some_and(|c| !c.kind.is_primary_key()));
    match non_key {
        Some(name) => Err(QueryError::invalid(format!(
            "Non PRIMARY KEY columns found in where clause: {name} "
        ))),
        None => Ok(()),
    }
}

/// The columns on the left of the WHERE clause's relations, alone or in
/// a multi-column relation.
fn relation_column_names(where_clause: &[rocksandra_cql::ast::Relation]) -> Vec<String> {
    let mut names = Vec::new();
    for r in where_clause {
        if let rocksandra_cql::ast::Relation::Compare { lhs, .. } = r {
            match lhs {
                rocksandra_cql::ast::RelationLhs::Column(c) => names.push(c.as_str().to_string()),
                rocksandra_cql::ast::RelationLhs::Columns(cs) => {
                    names.extend(cs.iter().map(|c| c.as_str().to_string()))
                }
                _ => {}
            }
        }
    }
    names
}

/// The columns named alone on the left of the WHERE clause's relations.
fn column_relation_names(where_clause: &[rocksandra_cql::ast::Relation]) -> Vec<String> {
    where_clause
        .iter()
        .filter_map(|r| match r {
            rocksandra_cql::ast::Relation::Compare {
                lhs: rocksandra_cql::ast::RelationLhs::Column(c),
                ..
            } => Some(c.as_str().to_string()),
            _ => None,
        })
        .collect()
}

/// The columns an UPDATE's assignments set, in order: no primary key
/// column, and no column set twice incompatibly (a whole-column SET with
/// anything else on it, or the same field twice).
fn assigned_columns<'t>(table: &'t Table, update: &Update) -> Result<Vec<&'t Column>> {
    let mut assigned: Vec<&Column> = Vec::new();
    for a in &update.assignments {
        let name = a.target.column().as_str();
        let Some(column) = table.column(name) else {
            return Err(undefined_column(table, name));
        };
        if column.kind.is_primary_key() {
            return Err(QueryError::invalid(format!(
                "PRIMARY KEY part {name} found in SET part"
            )));
        }
        let whole = matches!(a.target, ColumnTarget::Column(_)) && a.op == AssignOp::Set;
        let clashes = update.assignments.iter().zip(&assigned).any(|(other, c)| {
            c.name == column.name
                && (whole
                    || (matches!(other.target, ColumnTarget::Column(_))
                        && other.op == AssignOp::Set)
                    || matches!((&a.target, &other.target),
                        (ColumnTarget::Field { field: f, .. }, ColumnTarget::Field { field: g, .. })
                            if f == g))
        });
        if clashes {
            return Err(QueryError::syntax(format!(
                "Multiple incompatible setting of column {name}"
            )));
        }
        assigned.push(column);
    }
    Ok(assigned)
}

/// The clustering prefixes of the rows an UPDATE writes: none when it only
/// sets static columns without restricting clustering columns, else every
/// row selected, which needs every clustering column restricted exactly
/// (or the leading ones, in a compact table: `named_rows`).
fn updated_rows(
    table: &Table,
    update: &Update,
    t: &Targets,
    static_only: bool,
) -> Result<Vec<Vec<Vec<u8>>>> {
    if static_only && !t.restricted {
        return Ok(Vec::new());
    }
    t.named_rows(table).ok_or_else(|| {
        let given = column_relation_names(&update.where_clause);
        QueryError::invalid(format!(
            "Some clustering keys are missing: {}",
            missing(table.clustering(), &given)
        ))
    })
}

fn update_mutation(
    context: &StatementCtx<'_>,
    table: &Table,
    update: &Update,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    request: &Request,
    out: &mut Vec<Mutation>,
) -> Result<()> {
    let assigned = assigned_columns(table, update)?;
    let static_only = writes_static_only(table, update, &assigned);
    let t = targets(
        table,
        &update.where_clause,
        ctx,
        Modifying::Update { static_only },
    )?;
    if t.selects_no_row() {
        return Ok(());
    }
    let rows = updated_rows(table, update, &t, static_only)?;
    for clustering in &rows {
        check_compact_clustering(table, clustering)?;
    }
    for key in &t.keys {
        let mut mutation = new_mutation(table, key);
        let mut static_row = RowUpdate::default();
        let row_targets: Vec<&Vec<Vec<u8>>> = if table.clustering_count == 0 {
            vec![]
        } else {
            rows.iter().collect()
        };
        let mut regular_rows: Vec<(Vec<Vec<u8>>, RowUpdate)> = if table.clustering_count == 0 {
            vec![(Vec::new(), RowUpdate::default())]
        } else {
            row_targets
                .iter()
                .map(|c| ((*c).clone(), RowUpdate::default()))
                .collect()
        };
        for (a, column) in update.assignments.iter().zip(&assigned) {
            if column.kind == ColumnKind::Static {
                apply_assignment(
                    context,
                    table,
                    key,
                    None,
                    a,
                    column,
                    params,
                    ctx,
                    request,
                    out,
                    &mut static_row,
                )?;
            } else {
                for (clustering, row) in regular_rows.iter_mut() {
                    apply_assignment(
                        context,
                        table,
                        key,
                        Some(clustering.as_slice()),
                        a,
                        column,
                        params,
                        ctx,
                        request,
                        out,
                        row,
                    )?;
                }
            }
        }
        if !static_row.cells.is_empty() || !static_row.complex_deletions.is_empty() {
            mutation.static_row = Some(static_row);
        }
        mutation.rows = regular_rows
            .into_iter()
            .filter(|(_, r)| !r.cells.is_empty() || !r.complex_deletions.is_empty())
            .collect();
        out.push(mutation);
    }
    Ok(())
}

/// `l[index]` in SET or DELETE: the index term and what it is evaluated for.
struct ListElement<'a> {
    key: &'a Expr,
    name: &'a str,
    ctx: &'a EvalContext<'a>,
}

/// The `read_before_write_list_operations` guardrail on a list operation
/// that reads the stored list, checked before anything else it does.
fn list_read_before_write(
    context: &StatementCtx<'_>,
    request: &Request,
    operation: &str,
) -> Result<()> {
    let off = |g: &Guardrails| !g.read_before_write_list_operations_enabled;
    match crate::guard::guardrails_for(context, request, off)? {
        Some(g) => g.read_before_write_list_operations(operation),
        None => Ok(()),
    }
}

impl ListElement<'_> {
    /// The cell path of the element at the index, read from storage (the
    /// caller holds the read-modify-write lock); None when a deletion's
    /// index is unset. Setting an element of a null list is its own error,
    /// as in Cassandra.
    #[allow(clippy::too_many_arguments)]
    fn path(
        &self,
        context: &StatementCtx<'_>,
        table: &Table,
        pk: &[Vec<u8>],
        clustering: Option<&[Vec<u8>]>,
        column: &Column,
        request: &Request,
        setting: bool,
        pending: &RowUpdate,
    ) -> Result<Option<Vec<u8>>> {
        let operation = if setting {
            "Setting of list items by index requiring read before write"
        } else {
            "Removal of list items by index requiring read before write"
        };
        list_read_before_write(context, request, operation)?;
        let int = CqlType::Native(NativeType::Int);
        let k = match evaluate(self.key, &int, &format!("idx({})", self.name), self.ctx)? {
            Term::Value(k) => k,
            Term::Null => return Err(QueryError::invalid("Invalid null value for list index")),
            // Deleting at an unset index deletes nothing, as in Cassandra.
            Term::Unset if !setting => return Ok(None),
            Term::Unset => return Err(QueryError::invalid("Invalid unset value for list index")),
        };
        let index = match Value::deserialize(&int, &k)? {
            Value::Int(i) => i,
            _ => 0,
        };
        let stored = read_list(context, table, pk, clustering, column, request)?;
        let cells = with_pending_elements(stored, pending, column);
        if cells.is_empty() {
            return Err(QueryError::invalid(if setting {
                "Attempted to set an element on a list which is null"
            } else {
                "Attempted to delete an element from a list which is null"
            }));
        }
        let Some(cell) = usize::try_from(index).ok().and_then(|i| cells.get(i)) else {
            return Err(QueryError::invalid(format!(
                "List index {index} out of bound, list has size {}",
                cells.len()
            )));
        };
        Ok(Some(cell.path.clone().unwrap_or_default()))
    }
}

/// A list's stored element cells as this statement's earlier operations on
/// the row left them (Cassandra merges the pending updates into the row it
/// read): elements it deleted, or older than its deletion of the whole list,
/// are gone, elements it added are in, in list (path) order.
fn with_pending_elements(stored: Vec<Cell>, pending: &RowUpdate, column: &Column) -> Vec<Cell> {
    let deletions: Vec<&DeletionTime> = pending
        .complex_deletions
        .iter()
        .filter(|(id, _)| *id == column.id)
        .map(|(_, d)| d)
        .collect();
    let mut cells: BTreeMap<Vec<u8>, Cell> = stored
        .into_iter()
        .filter(|c| !deletions.iter().any(|d| d.shadows(c.timestamp)))
        .filter_map(|c| Some((c.path.clone()?, c)))
        .collect();
    for p in pending.cells.iter().filter(|p| p.column == column.id) {
        let Some(path) = &p.path else { continue };
        match p.kind {
            rocksandra_storage::cell::CellKind::Tombstone { .. } => {
                cells.remove(path);
            }
            _ => {
                cells.insert(path.clone(), p.clone());
            }
        }
    }
    cells.into_values().collect()
}

/// The latest cell of a counter among mutations not written yet (earlier
/// statements of the batch).
fn pending_counter<'m>(
    earlier: &'m [Mutation],
    table: &Table,
    pk: &[Vec<u8>],
    clustering: Option<&[Vec<u8>]>,
    column: &Column,
) -> Option<&'m Cell> {
    let key = partition_key_bytes(pk);
    earlier
        .iter()
        .filter(|m| m.table == table.storage_id && m.partition.key == key)
        .flat_map(|m| match clustering {
            None => m.static_row.iter().collect::<Vec<_>>(),
            Some(c) => m
                .rows
                .iter()
                .filter(|(rc, _)| rc.as_slice() == c)
                .map(|(_, r)| r)
                .collect(),
        })
        .flat_map(|r| r.cells.iter().filter(|c| c.column == column.id))
        .max_by_key(|c| c.timestamp.0)
}

/// Reads the current value of a multi-cell list column (for index
/// operations and removals by value): its element cells in order.
fn read_list(
    context: &StatementCtx<'_>,
    table: &Table,
    pk: &[Vec<u8>],
    clustering: Option<&[Vec<u8>]>,
    column: &Column,
    request: &Request,
) -> Result<Vec<Cell>> {
    let read = PartitionRead {
        table: table.storage_id,
        partition: PartitionKey::new(partition_key_bytes(pk)),
        slices: match clustering {
            Some(c) => vec![Slice::prefix(c.to_vec())],
            None => Vec::new(),
        },
        reversed: false,
        include_static: clustering.is_none(),
        row_limit: 1,
    };
    let partition = context.data().read_partition(
        &context.schema(),
        table,
        &read,
        read_before_write_consistency(request),
        context.local_now(request),
    )?;
    let row = match clustering {
        Some(_) => partition.rows.into_iter().next().map(|r| r.content),
        None => partition.static_row,
    };
    Ok(row
        .map(|r| {
            r.cells
                .into_iter()
                .filter(|c| c.column == column.id)
                .collect()
        })
        .unwrap_or_default())
}

/// The key of a map element being set or deleted.
fn map_key(key: &Expr, key_ty: &CqlType, name: &str, ctx: &EvalContext<'_>) -> Result<Vec<u8>> {
    match evaluate(key, key_ty, &format!("key({name})"), ctx)? {
        Term::Value(k) => Ok(k),
        Term::Null => Err(QueryError::invalid("Invalid null map key")),
        Term::Unset => Err(QueryError::invalid("Invalid unset map key")),
    }
}

/// Cassandra rewords the error of a map addition or subtraction operand
/// that does not fit (`Operation.Addition` and `Substraction`).
fn map_operand(
    operand: Result<Term>,
    column: &Column,
    operation: &str,
    expected: &str,
    value: &Expr,
) -> Result<Term> {
    match operand {
        Err(QueryError::Invalid(_)) if matches!(column.ty, CqlType::Map(..)) => {
            Err(QueryError::invalid(format!(
                "Value for a map {operation} has to be {expected}, but was: '{value}'"
            )))
        }
        other => other,
    }
}

/// The row an UPDATE assignment writes, and where its stored cells are read
/// from (counters, list removals and list indexes read before writing).
#[derive(Clone, Copy)]
struct AssignedRow<'a> {
    context: &'a StatementCtx<'a>,
    table: &'a Table,
    pk: &'a [Vec<u8>],
    clustering: Option<&'a [Vec<u8>]>,
    request: &'a Request,
}

impl AssignedRow<'_> {
    /// The stored element cells of list (or counter) `column` in this row.
    fn read_list(&self, column: &Column) -> Result<Vec<Cell>> {
        read_list(
            self.context,
            self.table,
            self.pk,
            self.clustering,
            column,
            self.request,
        )
    }
}

/// Pushes an element or field cell at `path`: a live cell for a value, a
/// tombstone for null, nothing for unset.
/// `key`: the element's path and written bytes (`paths::element_key`).
fn push_path_term(
    row: &mut RowUpdate,
    params: WriteParams,
    column: &Column,
    key: (Vec<u8>, Option<Vec<u8>>),
    term: Term,
) {
    match term {
        Term::Value(v) => row.cells.push(params.cell(column, v).with_element_key(key)),
        Term::Null => row.cells.push(params.tombstone(column).with_path(key.0)),
        Term::Unset => {}
    }
}

/// "frozen collection" or "non counter": what a non-multi-cell column is
/// called in the errors of `+` and `-` assignments.
fn non_multi_cell_kind(column: &Column) -> &'static str {
    if column.ty.is_collection() {
        "frozen collection"
    } else {
        "non counter"
    }
}

#[allow(clippy::too_many_arguments)]
fn apply_assignment(
    context: &StatementCtx<'_>,
    table: &Table,
    pk: &[Vec<u8>],
    clustering: Option<&[Vec<u8>]>,
    a: &Assignment,
    column: &Column,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    request: &Request,
    earlier: &[Mutation],
    row: &mut RowUpdate,
) -> Result<()> {
    let name = column.name.as_str();
    let target = AssignedRow {
        context,
        table,
        pk,
        clustering,
        request,
    };
    if a.op == AssignOp::Prepend && !matches!(column.ty.unfrozen(), CqlType::List(_)) {
        // The value is checked against the column first, as
        // Operation.Prepend.prepare does (and prints its text with a `-`).
        evaluate(&a.value, &column.ty, name, ctx)?;
        return Err(QueryError::invalid(format!(
            "Invalid operation ({name} = {} - {name}) for non list column {name}",
            a.value
        )));
    }
    if column.ty.is_counter() {
        return apply_counter_assignment(target, a, column, params, ctx, earlier, row);
    }
    match (&a.target, a.op) {
        (ColumnTarget::Column(_), AssignOp::Set) => {
            let term = evaluate(&a.value, &column.ty, name, ctx)?;
            set_column(context, column, term, params, row)
        }
        (ColumnTarget::Column(_), AssignOp::Add | AssignOp::Prepend | AssignOp::Subtract)
            if matches!(column.ty, CqlType::Udt(_)) =>
        {
            let symbol = if a.op == AssignOp::Subtract { "-" } else { "+" };
            Err(QueryError::invalid(format!(
                "Invalid operation ({name} = {name} {symbol} {}) for tuple column {name}",
                a.value
            )))
        }
        (ColumnTarget::Column(_), AssignOp::Add)
            if matches!(column.ty, CqlType::Map(..)) && map_literal_with_null(&a.value) =>
        {
            Err(QueryError::invalid(format!(
                "Value for a map addition has to be a map, but was: '{}'",
                null_text(&a.value)
            )))
        }
        (ColumnTarget::Column(_), AssignOp::Subtract)
            if matches!(column.ty, CqlType::Map(..)) && map_literal_with_null(&a.value) =>
        {
            Err(QueryError::invalid(format!(
                "Value for a map substraction has to be a set, but was: '{}'",
                null_text(&a.value)
            )))
        }
        (ColumnTarget::Column(_), AssignOp::Add | AssignOp::Prepend) => {
            add_to_collection(context, a, column, params, ctx, row)
        }
        (ColumnTarget::Column(_), AssignOp::Subtract) => {
            subtract_from_collection(target, a, column, params, ctx, row)
        }
        (ColumnTarget::Element { key, .. }, AssignOp::Set) => {
            set_element(target, key, a, column, params, ctx, row)
        }
        (ColumnTarget::Field { field, .. }, AssignOp::Set) => {
            set_field(field.as_str(), a, column, params, ctx, row)
        }
        _ => Err(QueryError::invalid(format!(
            "Invalid operation on column {name}"
        ))),
    }
}

/// `c = c + n` or `c = c - n` on a counter: reads the current value (an
/// earlier update in the statement or batch, else storage) and writes the
/// sum; setting a counter is an error.
fn apply_counter_assignment(
    target: AssignedRow<'_>,
    a: &Assignment,
    column: &Column,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    earlier: &[Mutation],
    row: &mut RowUpdate,
) -> Result<()> {
    let name = column.name.as_str();
    let term = evaluate(&a.value, &column.ty, name, ctx)?;
    let delta_sign = match (&a.target, a.op) {
        (ColumnTarget::Column(_), AssignOp::Add) => 1i64,
        (ColumnTarget::Column(_), AssignOp::Subtract) => -1i64,
        _ => {
            return Err(QueryError::invalid(format!(
                "Cannot set the value of counter column {name} (counters can only be incremented/decremented, not set)"
            )))
        }
    };
    let delta = match term {
        Term::Value(b) => <[u8; 8]>::try_from(b.as_slice())
            .map(i64::from_be_bytes)
            .unwrap_or(0),
        Term::Null => {
            return Err(QueryError::invalid(
                "Invalid null value for counter increment/decrement",
            ))
        }
        Term::Unset => return Ok(()),
    };
    // Single node: counters are read, changed and written under the
    // statement's read-modify-write lock (taken by the caller). An
    // update of the same counter earlier in the statement or batch is
    // not written yet: it is the value to add to.
    let value_of = |c: &Cell| {
        let v = <[u8; 8]>::try_from(c.value.as_slice())
            .map(i64::from_be_bytes)
            .unwrap_or(0);
        (v, c.timestamp.0)
    };
    let (current, last_write) = match row.cells.iter().rposition(|c| c.column == column.id) {
        Some(i) => value_of(&row.cells.remove(i)),
        None => {
            match pending_counter(earlier, target.table, target.pk, target.clustering, column) {
                Some(cell) => value_of(cell),
                None => target
                    .read_list(column)?
                    .first()
                    .map(value_of)
                    .unwrap_or((0, i64::MIN)),
            }
        }
    };
    let value = current.wrapping_add(delta_sign.wrapping_mul(delta));
    let timestamp = params.timestamp.max(last_write.saturating_add(1));
    row.cells.push(Cell::live(
        column.id,
        timestamp,
        value.to_be_bytes().to_vec(),
    ));
    Ok(())
}

/// `c = c + value` (or `c = value + c` for lists): adds the elements of a
/// non-frozen collection.
fn add_to_collection(
    context: &StatementCtx<'_>,
    a: &Assignment,
    column: &Column,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    row: &mut RowUpdate,
) -> Result<()> {
    let name = column.name.as_str();
    if !column.ty.is_multi_cell() {
        let what = non_multi_cell_kind(column);
        let text = if a.op == AssignOp::Prepend {
            format!("{name} = {} + {name}", a.value)
        } else {
            format!("{name} = {name} + {}", a.value)
        };
        return Err(QueryError::invalid(format!(
            "Invalid operation ({text}) for {what} column {name}"
        )));
    }
    let operand = evaluate(&a.value, &column.ty, name, ctx);
    match map_operand(operand, column, "addition", "a map", &a.value)? {
        Term::Value(bytes) => add_elements(
            context,
            column,
            &bytes,
            params,
            row,
            a.op == AssignOp::Prepend,
        ),
        Term::Null => Ok(()),
        Term::Unset => Ok(()),
    }
}

/// `c = c - value`: deletes set elements or map keys by path, and list
/// elements equal to any given value (read under the read-modify-write
/// lock).
fn subtract_from_collection(
    target: AssignedRow<'_>,
    a: &Assignment,
    column: &Column,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    row: &mut RowUpdate,
) -> Result<()> {
    let name = column.name.as_str();
    if !column.ty.is_multi_cell() {
        let what = non_multi_cell_kind(column);
        return Err(QueryError::invalid(format!(
            "Invalid operation ({name} = {name} - {}) for {what} column {name}",
            a.value
        )));
    }
    let value_type = match &column.ty {
        CqlType::Map(k, _) => CqlType::Set(k.clone()),
        other => other.clone(),
    };
    let operand = evaluate(&a.value, &value_type, name, ctx);
    let Term::Value(bytes) = map_operand(operand, column, "substraction", "a set", &a.value)?
    else {
        return Ok(());
    };
    match (&column.ty, Value::deserialize(&value_type, &bytes)?) {
        (CqlType::Set(e), Value::Set(items)) | (CqlType::Map(e, _), Value::Set(items)) => {
            for item in items {
                let path = paths::element_path(e, &item.to_bytes())?;
                row.cells.push(params.tombstone(column).with_path(path));
            }
        }
        (CqlType::List(e), Value::List(items)) => {
            let removal = "Removal of list items requiring read before write";
            list_read_before_write(target.context, target.request, removal)?;
            let _guard = target.context.rmw_lock.hold();
            let removed: Vec<Vec<u8>> = items.iter().map(Value::to_bytes).collect();
            for cell in target.read_list(column)? {
                if removed.iter().any(|r| {
                    rocksandra_data::value::compare(e, r, &cell.value) == std::cmp::Ordering::Equal
                }) {
                    if let Some(path) = cell.path {
                        row.cells.push(params.tombstone(column).with_path(path));
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// `m[key] = value` or `l[index] = value`: one element of a non-frozen map
/// or list (a list index is resolved against the stored list).
fn set_element(
    target: AssignedRow<'_>,
    key: &Expr,
    a: &Assignment,
    column: &Column,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    row: &mut RowUpdate,
) -> Result<()> {
    let name = column.name.as_str();
    match &column.ty {
        CqlType::Map(kt, vt) => {
            let k = map_key(key, kt, name, ctx)?;
            let key = paths::element_key(kt, &k)?;
            let term = evaluate(&a.value, vt, &format!("value({name})"), ctx)?;
            push_path_term(row, params, column, key, term);
            Ok(())
        }
        CqlType::List(et) => {
            let _guard = target.context.rmw_lock.hold();
            let element = ListElement { key, name, ctx };
            let path = element.path(
                target.context,
                target.table,
                target.pk,
                target.clustering,
                column,
                target.request,
                true,
                row,
            )?;
            let path = path.unwrap_or_default();
            let term = evaluate(&a.value, et, &format!("value({name})"), ctx)?;
            push_path_term(row, params, column, (path, None), term);
            Ok(())
        }
        other => {
            let what = if matches!(other, CqlType::Set(_)) {
                "set"
            } else if other.is_collection() {
                "frozen collection"
            } else {
                "non collection"
            };
            Err(QueryError::invalid(format!(
                "Invalid operation ({name}[{key}] = {}) for {what} column {name}",
                a.value
            )))
        }
    }
}

/// `u.field = value`: one field of a non-frozen UDT.
fn set_field(
    field: &str,
    a: &Assignment,
    column: &Column,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    row: &mut RowUpdate,
) -> Result<()> {
    let name = column.name.as_str();
    let CqlType::Udt(u) = &column.ty else {
        let what = if matches!(column.ty.unfrozen(), CqlType::Udt(_)) {
            "frozen UDT"
        } else {
            "non-UDT"
        };
        return Err(QueryError::invalid(format!(
            "Invalid operation ({name}.{field} = {}) for {what} column {name}",
            a.value
        )));
    };
    let Some(i) = u.fields.iter().position(|(n, _)| n == field) else {
        return Err(QueryError::invalid(format!(
            "UDT column {name} does not have a field named {field}"
        )));
    };
    let path = paths::field_path(i);
    let receiver = format!("{name}.{field}");
    let term = evaluate(&a.value, &u.fields[i].1, &receiver, ctx)?;
    push_path_term(row, params, column, (path, None), term);
    Ok(())
}

/// A map or set literal holding a null (`{'k': null}`, `{null}`).
fn map_literal_with_null(e: &Expr) -> bool {
    let null = |e: &Expr| matches!(e, Expr::Literal(rocksandra_cql::ast::Literal::Null));
    match e {
        Expr::Map(entries) => entries.iter().any(|(k, v)| null(k) || null(v)),
        Expr::Set(items) => items.iter().any(null),
        _ => false,
    }
}

/// A literal as Cassandra prints a raw term: nulls as `NULL`.
fn null_text(e: &Expr) -> String {
    let item = |e: &Expr| match e {
        Expr::Literal(rocksandra_cql::ast::Literal::Null) => "NULL".to_string(),
        other => other.to_string(),
    };
    match e {
        Expr::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{}: {}", item(k), item(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Expr::Set(items) => format!(
            "{{{}}}",
            items.iter().map(item).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

fn delete_mutation(
    context: &StatementCtx<'_>,
    table: &Table,
    delete: &Delete,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    request: &Request,
    out: &mut Vec<Mutation>,
) -> Result<()> {
    let t = targets(table, &delete.where_clause, ctx, Modifying::Delete)?;
    if t.selects_no_row() {
        return Ok(());
    }
    let deletion = params.deletion();
    for key in &t.keys {
        let mut mutation = new_mutation(table, key);
        if delete.targets.is_empty() {
            delete_whole(&mut mutation, &t, deletion);
            out.push(mutation);
            continue;
        }
        let mut static_row = RowUpdate::default();
        let mut regular = column_deletion_rows(table, delete, &t)?;
        for target in &delete.targets {
            let name = target.column().as_str();
            let Some(column) = table.column(name) else {
                return Err(undefined_column(table, name));
            };
            if column.kind.is_primary_key() {
                return Err(QueryError::invalid(format!(
                    "Invalid identifier {name} for deletion (should not be a PRIMARY KEY part)"
                )));
            }
            let rows: Vec<(Option<Vec<Vec<u8>>>, &mut RowUpdate)> =
                if column.kind == ColumnKind::Static {
                    vec![(None, &mut static_row)]
                } else {
                    regular
                        .iter_mut()
                        .map(|(c, r)| (Some(c.clone()), r))
                        .collect()
                };
            for (clustering, row) in rows {
                delete_target(
                    context,
                    table,
                    key,
                    clustering.as_deref(),
                    target,
                    column,
                    params,
                    ctx,
                    request,
                    row,
                )?;
            }
        }
        if !static_row.cells.is_empty() || !static_row.complex_deletions.is_empty() {
            mutation.static_row = Some(static_row);
        }
        mutation.rows = regular;
        out.push(mutation);
    }
    Ok(())
}

/// A DELETE without columns: the partition, the rows, or the clustering
/// ranges its WHERE clause selects.
fn delete_whole(mutation: &mut Mutation, t: &Targets, deletion: DeletionTime) {
    if !t.restricted {
        mutation.partition_deletion = Some(deletion);
    } else if t.exact {
        for s in &t.slices {
            mutation.rows.push((
                s.start.prefix.clone(),
                RowUpdate {
                    deletion: Some(deletion),
                    ..RowUpdate::default()
                },
            ));
        }
    } else {
        for s in &t.slices {
            mutation.range_tombstones.push(RangeTombstone {
                start: s.start.clone(),
                end: s.end.clone(),
                deletion,
            });
        }
    }
}

/// The rows a DELETE of columns writes to (none when it deletes only
/// static columns, which may then not restrict clustering columns); column
/// deletions need whole rows, not ranges.
fn column_deletion_rows(
    table: &Table,
    delete: &Delete,
    t: &Targets,
) -> Result<Vec<(Vec<Vec<u8>>, RowUpdate)>> {
    let mut regular: Vec<(Vec<Vec<u8>>, RowUpdate)> = Vec::new();
    // Cassandra finds the deleted columns before it looks at the rows.
    if let Some(target) = delete
        .targets
        .iter()
        .find(|target| table.column(target.column().as_str()).is_none())
    {
        return Err(undefined_column(table, target.column().as_str()));
    }
    let all_static = delete.targets.iter().all(|target| {
        table.column(target.column().as_str()).map(|c| c.kind) == Some(ColumnKind::Static)
    }) && !conditions_on_regular(table, delete.condition.as_ref());
    if all_static && t.restricted {
        return Err(QueryError::invalid(
            "Invalid restrictions on clustering columns since the DELETE statement modifies only static columns",
        ));
    }
    if !all_static {
        if !t.exact {
            return Err(QueryError::invalid(
                "Range deletions are not supported for specific columns",
            ));
        }
        regular = if table.clustering_count == 0 {
            vec![(Vec::new(), RowUpdate::default())]
        } else {
            t.slices
                .iter()
                .map(|s| (s.start.prefix.clone(), RowUpdate::default()))
                .collect()
        };
    }
    Ok(regular)
}

#[allow(clippy::too_many_arguments)]
fn delete_target(
    context: &StatementCtx<'_>,
    table: &Table,
    pk: &[Vec<u8>],
    clustering: Option<&[Vec<u8>]>,
    target: &ColumnTarget,
    column: &Column,
    params: WriteParams,
    ctx: &EvalContext<'_>,
    request: &Request,
    row: &mut RowUpdate,
) -> Result<()> {
    let name = column.name.as_str();
    match target {
        ColumnTarget::Column(_) => {
            if column.ty.is_multi_cell() {
                row.complex_deletions.push((column.id, params.deletion()));
            } else {
                row.cells.push(params.tombstone(column));
            }
            Ok(())
        }
        ColumnTarget::Element { key, .. } => match &column.ty {
            CqlType::Map(kt, _) => {
                let k = map_key(key, kt, name, ctx)?;
                let path = paths::element_path(kt, &k)?;
                row.cells.push(params.tombstone(column).with_path(path));
                Ok(())
            }
            CqlType::Set(kt) => {
                let k = match evaluate(key, kt, &format!("value({name})"), ctx)? {
                    Term::Value(k) => k,
                    Term::Null => return Err(QueryError::invalid("Invalid null set element")),
                    Term::Unset => return Ok(()),
                };
                let path = paths::element_path(kt, &k)?;
                row.cells.push(params.tombstone(column).with_path(path));
                Ok(())
            }
            CqlType::List(_) => {
                let _guard = context.rmw_lock.hold();
                let element = ListElement { key, name, ctx };
                let path =
                    element.path(context, table, pk, clustering, column, request, false, row)?;
                if let Some(path) = path {
                    row.cells.push(params.tombstone(column).with_path(path));
                }
                Ok(())
            }
            _ => Err(QueryError::invalid(format!(
                "Invalid deletion operation for {} column {name}",
                if column.ty.is_collection() {
                    "frozen collection"
                } else {
                    "non collection"
                }
            ))),
        },
        ColumnTarget::Field { field, .. } => {
            let CqlType::Udt(u) = &column.ty else {
                if matches!(column.ty.unfrozen(), CqlType::Udt(_)) {
                    return Err(QueryError::invalid(format!(
                        "Frozen UDT column {name} does not support field deletions"
                    )));
                }
                return Err(QueryError::invalid(format!(
                    "Invalid deletion operation for non-UDT column {name}"
                )));
            };
            let Some(i) = u.fields.iter().position(|(n, _)| n == field.as_str()) else {
                return Err(QueryError::invalid(format!(
                    "UDT column {name} does not have a field named {}",
                    field.as_str()
                )));
            };
            row.cells
                .push(params.tombstone(column).with_path(paths::field_path(i)));
            Ok(())
        }
    }
}

// ---------------------------------------------------------------- conditions

fn where_of(m: &Modification) -> &[rocksandra_cql::ast::Relation] {
    match m {
        Modification::Insert(_) => &[],
        Modification::Update(u) => &u.where_clause,
        Modification::Delete(d) => &d.where_clause,
    }
}

fn table_name_of(m: &Modification) -> &rocksandra_cql::ast::QualifiedName {
    match m {
        Modification::Insert(i) => &i.table,
        Modification::Update(u) => &u.table,
        Modification::Delete(d) => &d.table,
    }
}

fn using_of(m: &Modification) -> &[UsingParam] {
    match m {
        Modification::Insert(i) => &i.using,
        Modification::Update(u) => &u.using,
        Modification::Delete(d) => &d.using,
    }
}

/// The serial consistency of a compare-and-set: LOCAL_SERIAL when asked,
/// SERIAL otherwise (the drivers' default).
fn serial_of(request: &Request) -> Consistency {
    match request.serial_consistency {
        Some(Consistency::LocalSerial) => Consistency::LocalSerial,
        _ => Consistency::Serial,
    }
}

/// A statement's request inside a compare-and-set: reads at the serial
/// consistency's quorum, writes with the attempt's timestamp (the Paxos
/// ballot's in a cluster, as Cassandra writes them).
fn cas_request(
    request: &Request,
    serial: Consistency,
    timestamp: Option<rocksandra_data::Timestamp>,
) -> Request {
    Request {
        serial_consistency: Some(serial),
        timestamp: timestamp.map(|t| t.0).or(request.timestamp),
        ..request.clone()
    }
}
