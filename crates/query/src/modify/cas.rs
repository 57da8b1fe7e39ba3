//! Lightweight transactions: conditional INSERT, UPDATE, DELETE and
//! batches, run as Cassandra 5.0's `CQL3CasRequest` runs them.
//!
//! Each conditional statement puts its condition on one row of the
//! partition (`IF NOT EXISTS`, `IF EXISTS`, or column conditions) or on the
//! partition's static row (a statement that only touches static columns,
//! and conditions on static columns). One read of those rows decides them
//! all: the named rows, or the first live row of the partition when only
//! the static row has conditions, with the columns the statements update
//! or test. When every condition holds, all statements' mutations are
//! written in the same compare-and-set; when one does not, the result is
//! `[applied] = false` with the rows read, through every column (`IF
//! [NOT] EXISTS`) or the conditions' columns (primary key first in a
//! batch), as Cassandra's `buildCasFailureResultSet` shows them.

use std::sync::Arc;

use rocksandra_cql::ast::{
    AssignOp, ColumnCondition, ColumnTarget, Condition, Expr, Modification, Operator, Relation,
    RelationLhs, UsingParam,
};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_storage::{PartitionKey, PartitionRead, Slice};
use rocksandra_wire::{Consistency, WriteType};

use super::{
    cas_request, collect, collect_checked, merge_mutations, missing, modifiable_table,
    read_before_write_consistency, serial_of, table_name_of, targets, undefined_column, using_of,
    where_of, write_index_entries, Modifying, Targets,
};
use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::proxy::CasOptions;
use crate::request::{Outcome, Request};
use crate::rows::{partition_components, partition_key_bytes, ColumnValue, CqlRow};
use crate::schema::{ColumnKind, Table};
use crate::term::{evaluate, EvalContext, Term};

type Statement<'a> = (&'a Modification, &'a [rocksandra_wire::Value], Request);

/// Runs statements of which at least one has a condition (one statement,
/// or a batch when `batch_using` is given): all conditions are checked
/// and, when all hold, all statements are applied, atomically with respect
/// to other conditional and read-before-write statements.
pub(super) fn execute(
    context: &StatementCtx<'_>,
    statements: &[Statement<'_>],
    batch_using: Option<&[UsingParam]>,
) -> Result<Outcome> {
    let is_batch = batch_using.is_some();
    let using = batch_using.unwrap_or(&[]);
    let mut prepared = Vec::with_capacity(statements.len());
    for (m, values, request) in statements {
        prepared.push(prepare(context, m, values, request, using, is_batch)?);
    }
    let Some(first) = prepared.first() else {
        return Err(QueryError::invalid("empty batch"));
    };
    let table = first.table.clone();
    if is_batch {
        check_conditional_batch(using, &prepared, first)?;
    }
    let request = &statements[0].2;
    check_commit_consistency(request)?;
    let cas = CasRequest::build(&table, &prepared, is_batch)?;
    let serial = serial_of(request);
    let options = CasOptions {
        serial,
        commit: request.consistency,
        write_type: WriteType::Cas,
        now: context.local_now(request),
    };
    let partition = PartitionKey::new(partition_key_bytes(&first.pk));
    let mut outcome = None;
    // The applied mutations the ANN graphs see once committed.
    let mut observed = Vec::new();
    context.data().cas(
        &context.schema(),
        &table,
        &partition,
        &options,
        &mut |timestamp| {
            let read_request = cas_request(request, serial, timestamp);
            let current = cas.read(context, &partition, &read_request)?;
            if !cas.holds(&current)? {
                outcome = Some(cas.failure(&current));
                return Ok(None);
            }
            let mut mutations = Vec::new();
            let mut warnings = Vec::new();
            for (m, values, request) in statements {
                let request = cas_request(request, serial, timestamp);
                let written = collect_checked(context, m, &request, values, using, &mut mutations)?;
                warnings.extend(written);
            }
            let mutations = merge_mutations(mutations);
            write_index_entries(context, &mutations, request)?;
            observed = context.vector_graphs.to_observe(&mutations);
            let mut applied = applied_rows(&table, true, &[], Vec::new());
            applied.warnings = warnings;
            outcome = Some(applied);
            let schema = context.schema();
            if !crate::view::any_views(&schema, &mutations) {
                return Ok(Some(mutations));
            }
            let now = context.local_now(request);
            let quorum = if serial == Consistency::LocalSerial {
                Consistency::LocalQuorum
            } else {
                Consistency::Quorum
            };
            crate::view::with_view_updates(context, &schema, mutations, quorum, now).map(Some)
        },
    )?;
    context.vector_graphs.observe(&observed);
    outcome.ok_or_else(|| QueryError::Server("compare-and-set made no decision".into()))
}

/// BatchStatement.validate for a conditional batch (no custom timestamp),
/// then one table and one partition for every statement.
fn check_conditional_batch(
    using: &[UsingParam],
    prepared: &[Prepared],
    first: &Prepared,
) -> Result<()> {
    if using.iter().any(|u| matches!(u, UsingParam::Timestamp(_))) {
        return Err(QueryError::invalid(
            "Cannot provide custom timestamp for conditional BATCH",
        ));
    }
    if prepared
        .iter()
        .any(|p| p.table.storage_id != first.table.storage_id)
    {
        return Err(QueryError::invalid(
            "Batch with conditions cannot span multiple tables",
        ));
    }
    if prepared.iter().any(|p| p.pk != first.pk) {
        return Err(QueryError::invalid(
            "Batch with conditions cannot span multiple partitions",
        ));
    }
    Ok(())
}

/// A conditional update commits at a non-serial consistency.
fn check_commit_consistency(request: &Request) -> Result<()> {
    if matches!(
        request.consistency,
        Consistency::Serial | Consistency::LocalSerial
    ) {
        return Err(QueryError::invalid(format!(
            "{} is not supported as conditional update commit consistency. Use ANY if you mean \
             \"make sure it is accepted but I don't care how many replicas commit it for \
             non-SERIAL reads\"",
            request.consistency.name()
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------- statements

/// One statement of a compare-and-set, checked and bound.
struct Prepared {
    table: Arc<Table>,
    pk: Vec<Vec<u8>>,
    /// The row its conditions are on; None for the static row.
    row: Option<Vec<Vec<u8>>>,
    kind: Kind,
    /// It writes regular rows (all clustering columns given, or a table
    /// without clustering columns).
    updates_regular: bool,
    /// It writes static columns.
    updates_static: bool,
    /// Columns it reads to compute its mutation (list operations by index
    /// or value): read with the conditions' columns.
    reads: Vec<usize>,
}

enum Kind {
    /// A statement of a conditional batch without a condition of its own.
    Unconditional,
    NotExists,
    Exists,
    Columns {
        regular: Vec<Bound>,
        statics: Vec<Bound>,
    },
}

fn prepare(
    context: &StatementCtx<'_>,
    m: &Modification,
    values: &[rocksandra_wire::Value],
    request: &Request,
    batch_using: &[UsingParam],
    is_batch: bool,
) -> Result<Prepared> {
    let schema = context.schema();
    let table = modifiable_table(context, &schema, table_name_of(m), request)?;
    let random = context.env.random.clone();
    let ctx = context.eval_context(&schema, &table.keyspace, values, &*random);
    // Conditions are prepared first, as ModificationStatement.Parsed does.
    let mut kind = condition_kind(&table, m, &ctx)?;
    let (regular_conditions, static_conditions) = match &kind {
        Kind::Columns { regular, statics } => (!regular.is_empty(), !statics.is_empty()),
        _ => (false, false),
    };
    if let Modification::Insert(_) = m {
        return prepare_insert(context, m, request, values, batch_using, table, kind);
    }

    // UPDATE and DELETE: which columns the statement writes.
    let delete = matches!(m, Modification::Delete(_));
    let op_columns = written_columns(&table, m)?;
    let is_static = |i: &usize| table.columns[*i].kind == ColumnKind::Static;
    // A DELETE of whole rows applies to the regular columns.
    let ops_regular =
        (delete && op_columns.is_empty()) || op_columns.iter().any(|(i, _)| !is_static(i));
    let ops_static = op_columns.iter().any(|(i, _)| is_static(i));
    let static_only = !ops_regular && !regular_conditions && (ops_static || static_conditions);
    let written = Written {
        static_only,
        regular: ops_regular,
        regular_conditions,
    };
    let (t, pk) = conditional_targets(&table, m, &ctx, &written, is_batch)?;
    let row = if static_only && !t.restricted && table.clustering_count > 0 {
        None
    } else if table.clustering_count == 0 {
        Some(Vec::new())
    } else {
        t.slices.first().map(|s| s.start.prefix.clone())
    };
    if row.is_none() && !static_only {
        // A range deletion in a conditional batch: it has no condition.
        kind = Kind::Unconditional;
    }
    let reads_before_write = op_columns.iter().any(|(_, reads)| *reads);
    if !reads_before_write {
        // Errors Cassandra reports when it prepares the statement (values
        // of the wrong type, ...) come before the read, not after it.
        collect(context, m, request, values, batch_using, &mut Vec::new())?;
    }
    Ok(Prepared {
        updates_regular: table.clustering_count == 0 || t.restricted,
        updates_static: ops_static,
        reads: op_columns
            .iter()
            .filter(|(_, reads)| *reads)
            .map(|(i, _)| *i)
            .collect(),
        pk,
        row,
        kind,
        table,
    })
}

/// The statement's condition, its values bound: none, IF NOT EXISTS, IF
/// EXISTS or column conditions (regular and static apart). Conditional
/// statements take no custom timestamp and no counter table but INSERT's.
fn condition_kind(table: &Table, m: &Modification, ctx: &EvalContext<'_>) -> Result<Kind> {
    let timestamp = using_of(m)
        .iter()
        .any(|u| matches!(u, UsingParam::Timestamp(_)));
    let condition = match m {
        Modification::Insert(i) => i.if_not_exists.then_some(&Condition::Exists),
        Modification::Update(u) => u.condition.as_ref(),
        Modification::Delete(d) => d.condition.as_ref(),
    };
    let kind = match (m, condition) {
        (_, None) => Kind::Unconditional,
        (Modification::Insert(_), Some(_)) => Kind::NotExists,
        (_, Some(Condition::Exists)) => Kind::Exists,
        (_, Some(Condition::Columns(conditions))) => {
            if timestamp {
                return Err(QueryError::invalid(
                    "Cannot provide custom timestamp for conditional updates",
                ));
            }
            let mut regular = Vec::new();
            let mut statics = Vec::new();
            for c in conditions {
                let bound = Bound::bind(table, c, ctx)?;
                if table.columns[bound.column].kind == ColumnKind::Static {
                    statics.push(bound);
                } else {
                    regular.push(bound);
                }
            }
            Kind::Columns { regular, statics }
        }
    };
    if !matches!(kind, Kind::Unconditional) {
        if table.is_counter() && !matches!(m, Modification::Insert(_)) {
            return Err(QueryError::invalid(
                "Conditional updates are not supported on counter tables",
            ));
        }
        if timestamp {
            return Err(QueryError::invalid(
                "Cannot provide custom timestamp for conditional updates",
            ));
        }
    }
    Ok(kind)
}

/// A conditional INSERT: its own mutation says where it writes (its
/// values, or its JSON document, give the key and the static-only case).
fn prepare_insert(
    context: &StatementCtx<'_>,
    m: &Modification,
    request: &Request,
    values: &[rocksandra_wire::Value],
    batch_using: &[UsingParam],
    table: Arc<Table>,
    kind: Kind,
) -> Result<Prepared> {
    let mut mutations = Vec::new();
    collect(context, m, request, values, batch_using, &mut mutations)?;
    let Some(mutation) = mutations.into_iter().next() else {
        return Err(QueryError::Server("INSERT without a mutation".into()));
    };
    let pk = partition_components(&table, &mutation.partition.key)?;
    let row = mutation.rows.first().map(|(c, _)| c.clone());
    Ok(Prepared {
        updates_regular: row.is_some(),
        updates_static: mutation.static_row.is_some(),
        table,
        pk,
        row,
        kind,
        reads: Vec::new(),
    })
}

/// The columns an UPDATE's assignments or a DELETE's targets write (no
/// primary key column), each with whether it is read before writing (list
/// operations by index or value).
fn written_columns(table: &Table, m: &Modification) -> Result<Vec<(usize, bool)>> {
    let mut op_columns: Vec<(usize, bool)> = Vec::new();
    match m {
        Modification::Update(u) => {
            for a in &u.assignments {
                let name = a.target.column().as_str();
                let Some(i) = table.column_index(name) else {
                    return Err(undefined_column(table, name));
                };
                if table.columns[i].kind.is_primary_key() {
                    return Err(QueryError::invalid(format!(
                        "PRIMARY KEY part {name} found in SET part"
                    )));
                }
                let list = matches!(table.columns[i].ty, CqlType::List(_));
                let reads = list
                    && (matches!(a.target, ColumnTarget::Element { .. })
                        || a.op == AssignOp::Subtract);
                op_columns.push((i, reads));
            }
        }
        Modification::Delete(d) => {
            for target in &d.targets {
                let name = target.column().as_str();
                let Some(i) = table.column_index(name) else {
                    return Err(undefined_column(table, name));
                };
                if table.columns[i].kind.is_primary_key() {
                    return Err(QueryError::invalid(format!(
                        "Invalid identifier {name} for deletion (should not be a PRIMARY KEY part)"
                    )));
                }
                let list = matches!(table.columns[i].ty, CqlType::List(_));
                op_columns.push((i, list && matches!(target, ColumnTarget::Element { .. })));
            }
        }
        Modification::Insert(_) => {}
    }
    Ok(op_columns)
}

/// What a conditional UPDATE or DELETE writes and conditions, as its WHERE
/// clause checks need it.
struct Written {
    /// Only static columns (written or conditioned).
    static_only: bool,
    /// Some regular column (or whole rows, for a DELETE).
    regular: bool,
    /// Some condition on a regular column.
    regular_conditions: bool,
}

/// The rows a conditional UPDATE or DELETE targets and its one partition
/// key: no clustering slice in an UPDATE, clustering columns restricted
/// exactly unless only static columns are touched, and no IN on the
/// partition key or clustering columns.
fn conditional_targets(
    table: &Table,
    m: &Modification,
    ctx: &EvalContext<'_>,
    written: &Written,
    is_batch: bool,
) -> Result<(Targets, Vec<Vec<u8>>)> {
    let delete = matches!(m, Modification::Delete(_));
    let where_clause = where_of(m);
    let (statement, modifying) = if delete {
        ("DELETE", Modifying::Delete)
    } else {
        let static_only = written.static_only;
        ("UPDATE", Modifying::Update { static_only })
    };
    let t = targets(table, where_clause, ctx, modifying)?;
    if written.static_only && t.restricted {
        return Err(QueryError::invalid(format!(
            "Invalid restrictions on clustering columns since the {statement} statement modifies only static columns"
        )));
    }
    // A compact table's conditional INSERT or UPDATE may name a row by a
    // clustering prefix; a DELETE of one is a range deletion.
    let names_rows = t.restricted && (t.exact || (!delete && t.named_rows(table).is_some()));
    let all_clustering = table.clustering_count == 0 || names_rows;
    if !written.static_only && !all_clustering {
        if !delete {
            return Err(QueryError::invalid(format!(
                "Some clustering keys are missing: {}",
                missing(table.clustering(), &relation_columns(where_clause))
            )));
        }
        if written.regular {
            return Err(QueryError::invalid(
                "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns",
            ));
        }
        if written.regular_conditions {
            return Err(QueryError::invalid(
                "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns",
            ));
        }
    }
    let pk_in = where_clause.iter().any(|r| {
        matches!(r, Relation::Compare { op: Operator::In, lhs: RelationLhs::Column(c), .. }
            if table.column(c.as_str()).map(|c| c.kind) == Some(ColumnKind::PartitionKey))
    });
    let [pk] = t.keys.as_slice() else {
        return Err(partition_in_error(is_batch, delete));
    };
    if pk_in {
        return Err(partition_in_error(is_batch, delete));
    }
    if has_clustering_in(table, where_clause) {
        return Err(QueryError::invalid(format!(
            "IN on the clustering key columns is not supported with conditional {}",
            if delete { "deletions" } else { "updates" }
        )));
    }
    let pk = pk.clone();
    Ok((t, pk))
}

fn partition_in_error(is_batch: bool, delete: bool) -> QueryError {
    if is_batch {
        // Cassandra 5.0.6 throws an IllegalArgumentException here, which
        // reaches the client as a server error.
        return QueryError::Server(
            "java.lang.IllegalArgumentException: Batch with conditions cannot span multiple partitions (you cannot use IN on the partition key)"
                .into(),
        );
    }
    QueryError::invalid(format!(
        "IN on the partition key is not supported with conditional {}",
        if delete { "deletions" } else { "updates" }
    ))
}

/// The columns named on the left of the WHERE clause's relations.
fn relation_columns(where_clause: &[Relation]) -> Vec<String> {
    where_clause
        .iter()
        .flat_map(|r| match r {
            Relation::Compare {
                lhs: RelationLhs::Column(c),
                ..
            } => vec![c.as_str().to_string()],
            Relation::Compare {
                lhs: RelationLhs::Columns(cs),
                ..
            } => cs.iter().map(|c| c.as_str().to_string()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn is_clustering(table: &Table, name: &str) -> bool {
    table.column(name).map(|c| c.kind) == Some(ColumnKind::Clustering)
}

/// A slice (`<`, `<=`, `>`, `>=`) on clustering columns.
pub(super) fn has_clustering_slice(table: &Table, where_clause: &[Relation]) -> bool {
    where_clause.iter().any(|r| match r {
        Relation::Compare { lhs, op, .. } => {
            let slice = matches!(
                op,
                Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
            );
            slice
                && match lhs {
                    RelationLhs::Column(c) => is_clustering(table, c.as_str()),
                    RelationLhs::Columns(cs) => cs.iter().any(|c| is_clustering(table, c.as_str())),
                    _ => false,
                }
        }
        _ => false,
    })
}

/// `IN` on clustering columns (one or several values).
fn has_clustering_in(table: &Table, where_clause: &[Relation]) -> bool {
    where_clause.iter().any(|r| match r {
        Relation::Compare {
            lhs,
            op: Operator::In,
            ..
        } => match lhs {
            RelationLhs::Column(c) => is_clustering(table, c.as_str()),
            RelationLhs::Columns(cs) => cs.iter().any(|c| is_clustering(table, c.as_str())),
            _ => false,
        },
        _ => false,
    })
}

// ---------------------------------------------------------------- conditions

/// A column condition with its values bound (`ColumnCondition.Bound`).
struct Bound {
    column: usize,
    access: Access,
    /// The type of what is compared (the column, element or field).
    ty: CqlType,
    /// The comparison (`=` for `IN`).
    op: Operator,
    /// One value, or the values of an `IN`; None is null.
    values: Vec<Option<Vec<u8>>>,
}

enum Access {
    Whole,
    MapKey(Vec<u8>),
    ListIndex(i32),
    Field(usize),
}

impl Bound {
    /// Prepares and binds one condition (`ColumnCondition.Raw.prepare`,
    /// then the primary key check of `prepareColumnConditions`).
    fn bind(table: &Table, c: &ColumnCondition, ctx: &EvalContext<'_>) -> Result<Bound> {
        let name = c.target.column().as_str();
        let Some(i) = table.column_index(name) else {
            return Err(undefined_column(table, name));
        };
        let column = &table.columns[i];
        if column.ty.is_counter() {
            return Err(QueryError::invalid(
                "Conditions on counters are not supported",
            ));
        }
        let (access, ty, receiver) = Self::access(c, column, ctx)?;
        Self::check_duration_slice(c, &ty)?;
        let (op, values) = Self::values(c, &ty, &receiver, ctx)?;
        if column.kind.is_primary_key() {
            return Err(QueryError::invalid(format!(
                "PRIMARY KEY column '{name}' cannot have IF conditions"
            )));
        }
        Ok(Bound {
            column: i,
            access,
            ty,
            op,
            values,
        })
    }

    /// What the condition compares: the whole column, a list element, a
    /// map value or a UDT field; with its type and the receiver name its
    /// values are evaluated for.
    fn access(
        c: &ColumnCondition,
        column: &crate::schema::Column,
        ctx: &EvalContext<'_>,
    ) -> Result<(Access, CqlType, String)> {
        let name = c.target.column().as_str();
        Ok(match &c.target {
            ColumnTarget::Column(_) => (Access::Whole, column.ty.clone(), name.to_string()),
            ColumnTarget::Element { key, .. } => match column.ty.unfrozen() {
                CqlType::List(element) => {
                    let int = CqlType::Native(NativeType::Int);
                    let index = match evaluate(key, &int, &format!("idx({name})"), ctx)? {
                        Term::Value(b) => {
                            i32::from_be_bytes(b.as_slice().try_into().unwrap_or([0; 4]))
                        }
                        _ => {
                            return Err(QueryError::invalid(
                                "Invalid null value for list element access",
                            ))
                        }
                    };
                    (
                        Access::ListIndex(index),
                        (**element).clone(),
                        format!("value({name})"),
                    )
                }
                CqlType::Map(key_type, value_type) => {
                    let k = match evaluate(key, key_type, &format!("key({name})"), ctx)? {
                        Term::Value(b) => b,
                        // Cassandra looks the unset value (an empty buffer)
                        // up as a key: the empty key, usually absent.
                        Term::Unset => Vec::new(),
                        Term::Null => {
                            return Err(QueryError::invalid(
                                "Invalid null value for map element access",
                            ))
                        }
                    };
                    (
                        Access::MapKey(k),
                        (**value_type).clone(),
                        format!("value({name})"),
                    )
                }
                CqlType::Set(_) => {
                    return Err(QueryError::invalid(format!(
                        "Invalid element access syntax for set column {name}"
                    )))
                }
                _ => {
                    return Err(QueryError::invalid(format!(
                        "Invalid element access syntax for non-collection column {name}"
                    )))
                }
            },
            ColumnTarget::Field { field, .. } => {
                let CqlType::Udt(udt) = column.ty.unfrozen() else {
                    return Err(QueryError::invalid(format!(
                        "Invalid field access on non-UDT column {name}"
                    )));
                };
                let Some(f) = udt.fields.iter().position(|(n, _)| n == field.as_str()) else {
                    return Err(QueryError::invalid(format!(
                        "Unknown field {} for column {name}",
                        field.as_str()
                    )));
                };
                (
                    Access::Field(f),
                    udt.fields[f].1.clone(),
                    format!("{name}.{}", field.as_str()),
                )
            }
        })
    }

    /// Slice conditions on durations (or on values holding some) are
    /// refused, as in Cassandra.
    fn check_duration_slice(c: &ColumnCondition, ty: &CqlType) -> Result<()> {
        if matches!(
            c.op,
            Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
        ) && ty.references_duration()
        {
            let what = match ty.unfrozen() {
                CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) => Some("collections"),
                CqlType::Tuple(_) => Some("tuples"),
                CqlType::Udt(_) => Some("UDTs"),
                _ => None,
            };
            return Err(QueryError::invalid(match what {
                Some(w) => {
                    format!("Slice conditions are not supported on {w} containing durations")
                }
                None => format!(
                    "Slice conditions ( {} ) are not supported on durations",
                    c.op.as_str()
                ),
            }));
        }
        Ok(())
    }

    /// The condition's operator and values: the element of CONTAINS (KEY),
    /// the values of IN (compared with `=`; unset ones left out), or one
    /// value (None is null).
    fn values(
        c: &ColumnCondition,
        ty: &CqlType,
        receiver: &str,
        ctx: &EvalContext<'_>,
    ) -> Result<(Operator, Vec<Option<Vec<u8>>>)> {
        let value = |expr: &Expr, ty: &CqlType, receiver: &str| -> Result<Option<Vec<u8>>> {
            match evaluate(expr, ty, receiver, ctx)? {
                Term::Value(b) => Ok(Some(b)),
                Term::Null => Ok(None),
                Term::Unset => Err(QueryError::invalid("Invalid 'unset' value in condition")),
            }
        };
        Ok(match c.op {
            Operator::ContainsKey | Operator::Contains => {
                let element = match (c.op, ty.unfrozen()) {
                    (Operator::ContainsKey, CqlType::Map(k, _)) => {
                        Some(((**k).clone(), format!("key({receiver})")))
                    }
                    (Operator::ContainsKey, _) => {
                        return Err(QueryError::invalid(format!(
                            "Cannot use CONTAINS KEY on non-map column {receiver}"
                        )))
                    }
                    (_, CqlType::List(e) | CqlType::Set(e) | CqlType::Map(_, e)) => {
                        Some(((**e).clone(), format!("value({receiver})")))
                    }
                    _ => None,
                };
                let Some((element, element_receiver)) = element else {
                    return Err(QueryError::invalid(format!(
                        "Cannot use CONTAINS on non-collection column {receiver}"
                    )));
                };
                (c.op, vec![value(&c.value, &element, &element_receiver)?])
            }
            Operator::In => {
                let values = match &c.value {
                    Expr::Tuple(items) => items
                        .iter()
                        .map(|e| match evaluate(e, ty, receiver, ctx)? {
                            Term::Value(b) => Ok(Some(Some(b))),
                            Term::Null => Ok(Some(None)),
                            // An unset value in an IN list is left out.
                            Term::Unset => Ok(None),
                        })
                        .collect::<Result<Vec<_>>>()?
                        .into_iter()
                        .flatten()
                        .collect(),
                    marker => {
                        let list = CqlType::List(Box::new(ty.clone().freeze()));
                        match evaluate(marker, &list, receiver, ctx)? {
                            Term::Value(b) => split_collection(&b, 1)
                                .ok_or_else(|| {
                                    QueryError::invalid("Invalid list for IN condition")
                                })?
                                .into_iter()
                                .map(|v| v.map(<[u8]>::to_vec))
                                .collect(),
                            Term::Null => {
                                return Err(QueryError::invalid(
                                    "Invalid null list in IN condition",
                                ))
                            }
                            Term::Unset => {
                                return Err(QueryError::invalid(
                                    "Invalid 'unset' value in condition",
                                ))
                            }
                        }
                    }
                };
                (Operator::Eq, values)
            }
            op => (op, vec![value(&c.value, ty, receiver)?]),
        })
    }

    /// Whether the condition holds on a row (None: the row does not exist).
    fn applies(&self, table: &Table, row: Option<&CqlRow>) -> Result<bool> {
        let column = &table.columns[self.column];
        let current = row.and_then(|r| r.columns[self.column].value.as_deref());
        let Some(actual) = self.accessed_value(column, current)? else {
            return Ok(false);
        };
        match self.op {
            Operator::Contains | Operator::ContainsKey => self.contains_applies(actual),
            op if matches!(self.access, Access::Whole)
                && matches!(
                    column.ty,
                    CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..)
                ) =>
            {
                self.collection_applies(op, actual)
            }
            op => {
                for value in &self.values {
                    if compare_with_operator(op, &self.ty, value.as_deref(), actual.as_deref())? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// What the condition compares in the column's `current` value: the
    /// value, a map value, a list element or a UDT field (inner None when
    /// absent; outer None when the column holds no map, so the condition
    /// does not apply). A negative list index is an error.
    fn accessed_value(
        &self,
        column: &crate::schema::Column,
        current: Option<&[u8]>,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let actual: Option<Vec<u8>> = match (&self.access, current) {
            (_, None) => None,
            (Access::Whole, Some(b)) => Some(b.to_vec()),
            (Access::MapKey(k), Some(b)) => {
                let CqlType::Map(key_type, _) = column.ty.unfrozen() else {
                    return Ok(None);
                };
                let items = split_collection(b, 2).unwrap_or_default();
                items
                    .chunks(2)
                    .find(|kv| {
                        kv[0].is_some_and(|key| {
                            rocksandra_data::value::compare(key_type, key, k)
                                == std::cmp::Ordering::Equal
                        })
                    })
                    .and_then(|kv| kv[1].map(<[u8]>::to_vec))
            }
            (Access::ListIndex(i), Some(b)) => {
                if *i < 0 {
                    return Err(QueryError::invalid(format!(
                        "Invalid negative list index {i}"
                    )));
                }
                split_collection(b, 1)
                    .unwrap_or_default()
                    .get(*i as usize)
                    .copied()
                    .flatten()
                    .map(<[u8]>::to_vec)
            }
            (Access::Field(f), Some(b)) => split_fields(b)
                .get(*f)
                .copied()
                .flatten()
                .map(<[u8]>::to_vec),
        };
        if let (Access::ListIndex(i), None) = (&self.access, current) {
            if *i < 0 {
                return Err(QueryError::invalid(format!(
                    "Invalid negative list index {i}"
                )));
            }
        }
        Ok(Some(actual))
    }

    /// CONTAINS or CONTAINS KEY on the collection `actual`.
    fn contains_applies(&self, actual: Option<Vec<u8>>) -> Result<bool> {
        let Some(value) = &self.values[0] else {
            return Err(QueryError::invalid(format!(
                "Invalid comparison with null for operator \"{}\"",
                self.op.as_str()
            )));
        };
        let Some(actual) = actual else {
            return Ok(false);
        };
        let (per, pick, element) = match self.ty.unfrozen() {
            CqlType::List(e) | CqlType::Set(e) => (1, 0, &**e),
            CqlType::Map(k, _) if self.op == Operator::ContainsKey => (2, 0, &**k),
            CqlType::Map(_, v) => (2, 1, &**v),
            _ => return Ok(false),
        };
        let items = split_collection(&actual, per).unwrap_or_default();
        Ok(items.chunks(per).any(|item| {
            item[pick].is_some_and(|x| {
                rocksandra_data::value::compare(element, x, value) == std::cmp::Ordering::Equal
            })
        }))
    }

    /// A condition on a whole non-frozen collection: no cells compares as
    /// the empty collection (MultiCellCollectionBound).
    fn collection_applies(&self, op: Operator, actual: Option<Vec<u8>>) -> Result<bool> {
        for value in &self.values {
            match value {
                None => match op {
                    Operator::Eq if actual.is_none() => return Ok(true),
                    Operator::Eq => continue,
                    Operator::Neq => return Ok(actual.is_some()),
                    _ => {
                        return Err(QueryError::invalid(format!(
                            "Invalid comparison with null for operator \"{}\"",
                            op.as_str()
                        )))
                    }
                },
                Some(v) => {
                    let empty = 0i32.to_be_bytes().to_vec();
                    let a = actual.as_deref().unwrap_or(&empty);
                    if compare_with(op, &self.ty, a, v) {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }
}

/// `ColumnCondition.Bound.compareWithOperator`: `actual op value`.
fn compare_with_operator(
    op: Operator,
    ty: &CqlType,
    value: Option<&[u8]>,
    actual: Option<&[u8]>,
) -> Result<bool> {
    match (value, actual) {
        (None, _) => match op {
            Operator::Eq => Ok(actual.is_none()),
            Operator::Neq => Ok(actual.is_some()),
            _ => Err(QueryError::invalid(format!(
                "Invalid comparison with null for operator \"{}\"",
                op.as_str()
            ))),
        },
        (Some(_), None) => Ok(op == Operator::Neq),
        (Some(v), Some(a)) => Ok(compare_with(op, ty, a, v)),
    }
}

fn compare_with(op: Operator, ty: &CqlType, actual: &[u8], value: &[u8]) -> bool {
    use std::cmp::Ordering;
    let o = rocksandra_data::value::compare(ty, actual, value);
    match op {
        Operator::Eq => o == Ordering::Equal,
        Operator::Neq => o != Ordering::Equal,
        Operator::Lt => o == Ordering::Less,
        Operator::Lte => o != Ordering::Greater,
        Operator::Gt => o == Ordering::Greater,
        Operator::Gte => o != Ordering::Less,
        _ => false,
    }
}

/// The elements of a serialized list or set (`per` = 1) or the keys and
/// values of a map (`per` = 2); None for a malformed value.
fn split_collection(bytes: &[u8], per: usize) -> Option<Vec<Option<&[u8]>>> {
    let count = i32::from_be_bytes(bytes.get(..4)?.try_into().ok()?);
    let mut pos = 4;
    let mut out = Vec::new();
    for _ in 0..usize::try_from(count).ok()?.checked_mul(per)? {
        let len = i32::from_be_bytes(bytes.get(pos..pos + 4)?.try_into().ok()?);
        pos += 4;
        if len < 0 {
            out.push(None);
            continue;
        }
        let end = pos.checked_add(len as usize)?;
        out.push(Some(bytes.get(pos..end)?));
        pos = end;
    }
    Some(out)
}

/// The fields of a serialized UDT (fewer than declared: trailing nulls).
fn split_fields(bytes: &[u8]) -> Vec<Option<&[u8]>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 4 <= bytes.len() {
        let len = i32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap_or([0; 4]));
        pos += 4;
        if len < 0 {
            out.push(None);
            continue;
        }
        let end = (pos + len as usize).min(bytes.len());
        out.push(Some(&bytes[pos..end]));
        pos = end;
    }
    out
}

// ---------------------------------------------------------------- the request

/// A row's condition in the request (`CQL3CasRequest.RowCondition`).
enum RowCondition<'a> {
    NotExists,
    Exists,
    Columns(Vec<&'a Bound>),
}

/// The conditions of all statements on one partition (`CQL3CasRequest`).
struct CasRequest<'a> {
    table: Arc<Table>,
    /// Conditions on regular rows, by clustering, in clustering order.
    rows: Vec<(Vec<Vec<u8>>, RowCondition<'a>)>,
    static_condition: Option<RowCondition<'a>>,
    /// Which columns the read returns (`columnsToRead`), by column index.
    read: Vec<bool>,
    /// The failure result's columns: None for every column (`IF [NOT]
    /// EXISTS` somewhere), else the conditions' (after the primary key in
    /// a batch).
    report: Option<Vec<usize>>,
}

impl<'a> CasRequest<'a> {
    fn build(table: &Arc<Table>, prepared: &'a [Prepared], is_batch: bool) -> Result<Self> {
        let mut cas = CasRequest {
            table: table.clone(),
            rows: Vec::new(),
            static_condition: None,
            read: vec![false; table.columns.len()],
            report: Some(if is_batch {
                (0..table.partition_key_count + table.clustering_count).collect()
            } else {
                Vec::new()
            }),
        };
        let mut updates_regular = false;
        let mut updates_static = false;
        for p in prepared {
            updates_regular |= p.updates_regular;
            for i in &p.reads {
                cas.read[*i] = true;
            }
            match &p.kind {
                Kind::Unconditional => continue,
                Kind::NotExists | Kind::Exists => {
                    cas.add_exists(p.row.as_deref(), matches!(p.kind, Kind::NotExists))?;
                    cas.report = None;
                }
                Kind::Columns { regular, statics } => {
                    if !regular.is_empty() {
                        cas.add_columns(p.row.as_deref(), regular)?;
                    }
                    if !statics.is_empty() {
                        cas.add_columns(None, statics)?;
                    }
                    for b in regular.iter().chain(statics) {
                        cas.read[b.column] = true;
                        if let Some(report) = &mut cas.report {
                            if !report.contains(&b.column) {
                                report.push(b.column);
                            }
                        }
                    }
                }
            }
            updates_static |= p.updates_static;
        }
        for (i, column) in table.columns.iter().enumerate() {
            match column.kind {
                ColumnKind::Static if updates_static => cas.read[i] = true,
                ColumnKind::Regular if updates_regular => cas.read[i] = true,
                _ => {}
            }
        }
        cas.rows
            .sort_by(|(a, _), (b, _)| crate::restrict::compare_prefix(table, a, b));
        Ok(cas)
    }

    fn get(&mut self, row: Option<&[Vec<u8>]>) -> Option<&mut RowCondition<'a>> {
        match row {
            None => self.static_condition.as_mut(),
            Some(clustering) => self
                .rows
                .iter_mut()
                .find(|(c, _)| c.as_slice() == clustering)
                .map(|(_, condition)| condition),
        }
    }

    fn set(&mut self, row: Option<&[Vec<u8>]>, condition: RowCondition<'a>) {
        match row {
            None => self.static_condition = Some(condition),
            Some(clustering) => self.rows.push((clustering.to_vec(), condition)),
        }
    }

    /// `addExistsCondition`: the same condition twice is one; anything
    /// else on the same row is refused.
    fn add_exists(&mut self, row: Option<&[Vec<u8>]>, not_exists: bool) -> Result<()> {
        match self.get(row) {
            Some(RowCondition::NotExists) if not_exists => Ok(()),
            Some(RowCondition::Exists) if !not_exists => Ok(()),
            Some(RowCondition::NotExists | RowCondition::Exists) => Err(QueryError::invalid(
                "Cannot mix IF EXISTS and IF NOT EXISTS conditions for the same row",
            )),
            Some(RowCondition::Columns(_)) => Err(QueryError::invalid(format!(
                "Cannot mix IF conditions and IF {}EXISTS for the same row",
                if not_exists { "NOT " } else { "" }
            ))),
            None => {
                let condition = if not_exists {
                    RowCondition::NotExists
                } else {
                    RowCondition::Exists
                };
                self.set(row, condition);
                Ok(())
            }
        }
    }

    /// `addConditions`: column conditions of several statements on one row
    /// add up.
    fn add_columns(&mut self, row: Option<&[Vec<u8>]>, bounds: &'a [Bound]) -> Result<()> {
        match self.get(row) {
            Some(RowCondition::Columns(existing)) => {
                existing.extend(bounds.iter());
                Ok(())
            }
            // Cassandra's message says NOT EXISTS for IF EXISTS too.
            Some(_) => Err(QueryError::invalid(
                "Cannot mix IF conditions and IF NOT EXISTS for the same row",
            )),
            None => {
                self.set(row, RowCondition::Columns(bounds.iter().collect()));
                Ok(())
            }
        }
    }

    /// Reads the rows the conditions are on (`CQL3CasRequest.readCommand`).
    fn read(
        &self,
        context: &StatementCtx<'_>,
        partition: &PartitionKey,
        request: &Request,
    ) -> Result<Current> {
        let table = &self.table;
        let read = self.partition_read(partition);
        let now = context.local_now(request);
        let stored = context.data().read_partition(
            &context.schema(),
            table,
            &read,
            read_before_write_consistency(request),
            now,
        )?;
        let pk = partition_components(table, &partition.key)?;
        let mut base = vec![ColumnValue::default(); table.columns.len()];
        for (i, component) in pk.into_iter().enumerate() {
            base[i].value = Some(component);
        }
        let (static_ids, regular_ids) = (
            self.read_ids(ColumnKind::Static),
            self.read_ids(ColumnKind::Regular),
        );
        let mut static_exists = false;
        if let Some(static_row) = &stored.static_row {
            static_exists = static_row
                .cells
                .iter()
                .any(|c| static_ids.contains(&c.column));
            crate::rows::fill_columns(table, static_row, true, now, &mut base)?;
        }
        self.mask(&mut base);
        let mut rows = Vec::new();
        for row in &stored.rows {
            let exists = row.content.liveness.is_some()
                || row
                    .content
                    .cells
                    .iter()
                    .any(|c| regular_ids.contains(&c.column));
            if !exists {
                continue;
            }
            let mut columns = base.clone();
            for (j, value) in row.clustering.iter().enumerate() {
                columns[table.partition_key_count + j].value = Some(value.clone());
            }
            crate::rows::fill_columns(table, &row.content, false, now, &mut columns)?;
            self.mask(&mut columns);
            rows.push(CqlRow {
                partition: stored.key.clone(),
                clustering: Some(row.clustering.clone()),
                columns,
            });
        }
        let static_row = CqlRow {
            partition: partition.clone(),
            clustering: None,
            columns: base,
        };
        Ok(Current {
            static_row: static_exists.then_some(static_row),
            rows,
        })
    }

    /// The read of the rows the conditions are on: the static row with the
    /// first live row (static conditions only), the whole partition (no
    /// clustering columns), or the conditioned rows.
    fn partition_read(&self, partition: &PartitionKey) -> PartitionRead {
        let table = &self.table;
        let (slices, row_limit) = if self.rows.is_empty() {
            // Only the static row has conditions: the first live row tells
            // an empty partition from one without static content.
            (vec![Slice::all()], 1)
        } else if table.clustering_count == 0 {
            (vec![Slice::all()], 0)
        } else {
            (
                self.rows
                    .iter()
                    .map(|(c, _)| Slice::row(c.clone()))
                    .collect(),
                0,
            )
        };
        PartitionRead {
            table: table.storage_id,
            partition: partition.clone(),
            slices,
            reversed: false,
            include_static: true,
            row_limit,
        }
    }

    /// The ids of the columns of `kind` the read returns.
    fn read_ids(&self, kind: ColumnKind) -> Vec<rocksandra_storage::cell::ColumnId> {
        self.table
            .columns
            .iter()
            .enumerate()
            .filter(|(i, c)| c.kind == kind && self.read[*i])
            .map(|(_, c)| c.id)
            .collect()
    }

    /// Clears the columns the read does not return.
    fn mask(&self, columns: &mut [ColumnValue]) {
        for (i, column) in self.table.columns.iter().enumerate() {
            if !column.kind.is_primary_key() && !self.read[i] {
                columns[i] = ColumnValue::default();
            }
        }
    }

    /// `CQL3CasRequest.appliesTo`: the static row's condition, then the
    /// rows' in clustering order.
    fn holds(&self, current: &Current) -> Result<bool> {
        if let Some(condition) = &self.static_condition {
            if !condition_holds(&self.table, condition, current.static_row.as_ref())? {
                return Ok(false);
            }
        }
        for (clustering, condition) in &self.rows {
            let row = current
                .rows
                .iter()
                .find(|r| r.clustering.as_deref() == Some(clustering.as_slice()));
            if !condition_holds(&self.table, condition, row)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `[applied] = false` with the rows read (or the static row alone).
    fn failure(&self, current: &Current) -> Outcome {
        let columns: Vec<usize> = match &self.report {
            Some(c) => c.clone(),
            None => wildcard_order(&self.table),
        };
        let rows: Vec<&CqlRow> = if current.rows.is_empty() {
            current.static_row.iter().collect()
        } else {
            current.rows.iter().collect()
        };
        let values = rows
            .iter()
            .map(|r| {
                columns
                    .iter()
                    .map(|i| r.columns[*i].value.clone())
                    .collect()
            })
            .collect();
        applied_rows(&self.table, false, &columns, values)
    }
}

/// The columns of `SELECT *`: the primary key, then static and regular
/// columns each by name.
fn wildcard_order(table: &Table) -> Vec<usize> {
    let keys = table.partition_key_count + table.clustering_count;
    let mut rest: Vec<usize> = (keys..table.columns.len()).collect();
    rest.sort_by_key(|i| {
        let c = &table.columns[*i];
        (c.kind != ColumnKind::Static, c.name.as_bytes())
    });
    (0..keys).chain(rest).collect()
}

/// What the read found: the static row (None when it has nothing among the
/// columns read) and the live rows, with their static values.
struct Current {
    static_row: Option<CqlRow>,
    rows: Vec<CqlRow>,
}

fn condition_holds(
    table: &Table,
    condition: &RowCondition<'_>,
    row: Option<&CqlRow>,
) -> Result<bool> {
    match condition {
        RowCondition::NotExists => Ok(row.is_none()),
        RowCondition::Exists => Ok(row.is_some()),
        RowCondition::Columns(bounds) => {
            for b in bounds {
                if !b.applies(table, row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

/// The `[applied]` result: the flag, then on failure the given columns of
/// each row.
fn applied_rows(
    table: &Table,
    applied: bool,
    columns: &[usize],
    rows: Vec<Vec<Option<Vec<u8>>>>,
) -> Outcome {
    use rocksandra_wire::{ColumnSpec, ColumnsMetadata, Rows, RowsMetadata, TableSpec};
    let spec = |name: &str, ty: CqlType| ColumnSpec {
        table: TableSpec {
            keyspace: table.keyspace.clone(),
            table: table.name.clone(),
        },
        name: name.to_string(),
        cql_type: ty,
    };
    let flag = Some(bytes::Bytes::from(vec![u8::from(applied)]));
    let mut specs = vec![spec("[applied]", CqlType::Native(NativeType::Boolean))];
    if rows.is_empty() {
        return Outcome::rows(Rows {
            metadata: RowsMetadata {
                columns: ColumnsMetadata::Specs(specs.into()),
                paging_state: None,
                new_metadata_id: None,
            },
            rows: vec![vec![flag]],
        });
    }
    for i in columns {
        specs.push(spec(&table.columns[*i].name, table.columns[*i].ty.clone()));
    }
    let rows = rows
        .into_iter()
        .map(|values| {
            std::iter::once(flag.clone())
                .chain(values.into_iter().map(|v| v.map(bytes::Bytes::from)))
                .collect()
        })
        .collect();
    Outcome::rows(Rows {
        metadata: RowsMetadata {
            columns: ColumnsMetadata::Specs(specs.into()),
            paging_state: None,
            new_metadata_id: None,
        },
        rows,
    })
}
