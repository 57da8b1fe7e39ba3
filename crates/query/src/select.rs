//! SELECT: restrictions to storage reads, rows to selectors, aggregates,
//! limits and paging.
//!
//! Paging state (opaque to clients, produced and read only here):
//! `0x01`, rows returned so far (u64), index of the current partition in a
//! key list (u32), then for a position: partition key (u32 length + bytes),
//! a flag (0: after the static-only row, 1: after a clustering), the
//! clustering values (u16 count, each u32 length + bytes), and the rows
//! already returned from that partition (u32).

use std::sync::Arc;

use bytes::Bytes;
use rocksandra_cql::ast::{Expr, OrderingKind, Select, Selection, Selector as AstSelector};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::{Token, Value};
use rocksandra_storage::{
    ClusteringBound, Partition, PartitionKey, PartitionRead, RangeScan, ScanPosition, Slice,
};
use rocksandra_wire::{ColumnSpec, ColumnsMetadata, Rows, RowsMetadata, TableSpec};

use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::functions::aggregates::Aggregate;
use crate::guardrails::Guardrails;
use crate::index::search::{self, IndexQuery};
use crate::read_thresholds::{
    self, FailureCounts, ReadMet, ReadReports, ReadThresholds, ReplicaMet, ResultSize,
};
use crate::request::{Outcome, Request};
use crate::restrict::{
    analyze, compare_prefix, compare_to_bound, PartitionSelection, Restrictions,
};
use crate::rows::{partition_key_bytes, partition_rows, partition_rows_owned, CqlRow};
use crate::schema::{ColumnKind, Schema, Table};
use crate::term::{evaluate, EvalContext, Term};

/// Rows read from storage per round trip when filtering or aggregating.
pub const READ_BATCH_ROWS: usize = 1000;
/// The first batch of a read that takes every row a batch at a time
/// (aggregates, unpaged reads): small, so that large rows are not read a
/// thousand at a time before their size is known.
const FIRST_BATCH_ROWS: usize = 64;
/// What each later batch of such a read is sized to hold (its values).
const BATCH_BYTES: usize = 4 << 20;

/// The size of the next batch of a read that takes every row a batch at a
/// time: about `BATCH_BYTES` of values, whatever the rows weigh, at most
/// `READ_BATCH_ROWS` rows.
#[derive(Debug, Clone, Copy)]
struct BatchSize(usize);

impl BatchSize {
    fn new() -> BatchSize {
        BatchSize(FIRST_BATCH_ROWS)
    }

    fn rows(self) -> usize {
        self.0
    }

    /// Sizes the next batch after the rows of the last.
    fn after(&mut self, rows: &[CqlRow]) {
        if rows.is_empty() {
            return;
        }
        let bytes: usize = rows.iter().map(CqlRow::value_bytes).sum();
        let per_row = (bytes / rows.len()).max(1);
        self.0 = (BATCH_BYTES / per_row).clamp(1, READ_BATCH_ROWS);
    }
}

/// Where the page after a full page of a key list starts.
enum FullPage {
    /// Inside the partition of its last row.
    Within(PagingState),
    /// After the `index`th partition, whose rows all came (its static row
    /// alone, its only row, or as many as PER PARTITION LIMIT takes).
    AfterPartition(usize),
}

impl FullPage {
    /// The paging state; none when the partition was the last key's, as
    /// Cassandra's partition pager is exhausted once nothing remains in
    /// its partition.
    fn state(self, last_key: bool) -> Option<PagingState> {
        match self {
            FullPage::Within(state) => Some(state),
            FullPage::AfterPartition(_) if last_key => None,
            FullPage::AfterPartition(index) => Some(PagingState {
                rows_so_far: 0,
                partition_index: (index + 1) as u32,
                position: None,
            }),
        }
    }
}

/// Where the read of one partition of a key list starts: its slices (after
/// the previous page's last row), the rows it already gave, and whether this
/// is its first read (which returns a static-only row).
struct KeyResume {
    slices: Vec<Slice>,
    in_partition: usize,
    first: bool,
}

/// Most rows a single unpaged result may hold before the query fails
/// instead of exhausting memory.
pub const UNPAGED_ROWS_MAX: usize = 1_000_000;

mod aggregate;
pub(crate) mod ann;
mod group_by;
mod metadata;
mod point;
mod user;
pub use point::PointRead;

/// One output column.
#[derive(Clone, Debug)]
enum Sel {
    Column(usize),
    /// `writetime()`, `maxwritetime()`, `ttl()`.
    Metadata(Box<metadata::Metadata>),
    CountStar,
    Aggregate {
        function: Aggregate,
        arg: Box<Sel>,
        ty: CqlType,
    },
    Token,
    Field {
        udt: Box<Sel>,
        index: usize,
    },
    Cast {
        arg: Box<Sel>,
        from: CqlType,
        to: CqlType,
    },
    Function {
        function: Box<crate::functions::Function>,
        args: Vec<Sel>,
        now_micros: i64,
    },
    Constant(Option<Vec<u8>>),
    /// A user-defined scalar function of selectors.
    UserFunction {
        function: Arc<crate::udf::UserFunction>,
        args: Vec<Sel>,
    },
    /// A user-defined aggregate of selectors.
    UserAggregate {
        plan: Arc<crate::udf::AggregatePlan>,
        args: Vec<Sel>,
    },
    ToJson {
        arg: Box<Sel>,
        ty: CqlType,
    },
    /// `a + b` and friends on numbers, `a + b` on text.
    Arith {
        op: rocksandra_cql::ast::BinaryOp,
        left: Box<Sel>,
        left_ty: CqlType,
        right: Box<Sel>,
        right_ty: CqlType,
        ty: CqlType,
    },
    /// `-a` on a number.
    Negate {
        arg: Box<Sel>,
        ty: NativeType,
    },
    /// `c[key]` on a set or map.
    Element {
        collection: Box<Sel>,
        ty: CqlType,
        key: Option<Vec<u8>>,
    },
    /// `c[from..to]` on a set or map.
    Range {
        collection: Box<Sel>,
        ty: CqlType,
        from: Option<Vec<u8>>,
        to: Option<Vec<u8>>,
    },
}

struct Output {
    sel: Sel,
    name: String,
    ty: CqlType,
}

fn is_aggregate(sel: &Sel) -> bool {
    match sel {
        Sel::CountStar | Sel::Aggregate { .. } | Sel::UserAggregate { .. } => true,
        Sel::UserFunction { args, .. } => args.iter().any(is_aggregate),
        Sel::Field { udt, .. } => is_aggregate(udt),
        Sel::Cast { arg, .. } | Sel::ToJson { arg, .. } | Sel::Negate { arg, .. } => {
            is_aggregate(arg)
        }
        Sel::Arith { left, right, .. } => is_aggregate(left) || is_aggregate(right),
        Sel::Element { collection, .. } | Sel::Range { collection, .. } => is_aggregate(collection),
        Sel::Function { args, .. } => args.iter().any(is_aggregate),
        _ => false,
    }
}

fn column_label(name: &str) -> String {
    rocksandra_data::types::quote_identifier_if_needed(name)
}

/// A planned selector: how to compute it, its column label and its type.
type Planned = (Sel, String, CqlType);

fn plan_selector(table: &Table, expr: &Expr, ctx: &EvalContext<'_>) -> Result<Planned> {
    let bigint = CqlType::Native(NativeType::Bigint);
    match expr {
        Expr::Column(c) => {
            let Some(i) = table.column_index(c.as_str()) else {
                return Err(QueryError::undefined_column(
                    &column_label(c.as_str()),
                    &table.keyspace,
                    &table.name,
                ));
            };
            Ok((
                Sel::Column(i),
                table.columns[i].name.clone(),
                table.columns[i].ty.clone(),
            ))
        }
        Expr::CountStar => Ok((Sel::CountStar, "count".into(), bigint)),
        Expr::Metadata { kind, column } => {
            let (target, label, _) = plan_selector(table, column, ctx)?;
            metadata::plan(table, *kind, target, &label)
        }
        Expr::Field { udt, field } => plan_field(table, udt, field.as_str(), ctx),
        // `(x)` inside a selector groups x; the label keeps the parentheses.
        Expr::Tuple(items) if items.len() == 1 => {
            let (sel, label, ty) = plan_selector(table, &items[0], ctx)?;
            Ok((sel, format!("({label})"), ty))
        }
        Expr::Cast { expr, ty } => plan_cast(table, expr, ty, ctx),
        Expr::Function { name, args } => plan_function(table, name, args, ctx),
        Expr::Element { collection, key } => {
            let target = plan_selector(table, collection, ctx)?;
            plan_element(target, key, ctx)
        }
        Expr::Slice {
            collection,
            from,
            to,
        } => {
            let target = plan_selector(table, collection, ctx)?;
            plan_slice(target, from.as_deref(), to.as_deref(), ctx)
        }
        Expr::Binary { op, left, right } => plan_arithmetic(table, *op, left, right, ctx),
        Expr::Negate(inner) if !is_arith_term(ungroup(inner)) => plan_negate(table, inner, ctx),
        Expr::TypeHint { ty, expr } => plan_type_hint(ty, expr, ctx),
        other => Err(QueryError::invalid(format!(
            "Cannot infer type for term {} in selection clause (try using a cast to force a type)",
            literal_label(other)
        ))),
    }
}

/// `udt.field`: the field of a UDT selector.
fn plan_field(table: &Table, udt: &Expr, field: &str, ctx: &EvalContext<'_>) -> Result<Planned> {
    let (sel, label, ty) = plan_selector(table, udt, ctx)?;
    let CqlType::Udt(u) = ty.unfrozen() else {
        return Err(QueryError::invalid(format!(
            "Invalid field selection: {label} of type {ty} is not a user type"
        )));
    };
    let Some(index) = u.fields.iter().position(|(n, _)| n == field) else {
        return Err(QueryError::invalid(format!(
            "{label} of type {ty} has no field {field}"
        )));
    };
    Ok((
        Sel::Field {
            udt: Box::new(sel),
            index,
        },
        // Cassandra names the field unquoted (`u.Tag`).
        format!("{label}.{field}"),
        u.fields[index].1.clone(),
    ))
}

/// `cast(x as type)`; a cast to the value's own type is the value itself.
fn plan_cast(
    table: &Table,
    expr: &Expr,
    ty: &rocksandra_cql::TypeExpr,
    ctx: &EvalContext<'_>,
) -> Result<Planned> {
    let (sel, label, from) = plan_selector(table, expr, ctx)?;
    let to = ty
        .resolve(&ctx.types)
        .map_err(|e| QueryError::invalid(format!("Unknown type {}", e.0)))?;
    let Some(source) = crate::functions::resolve_cast(&from, &to, &label)? else {
        return Ok((sel, label, from));
    };
    Ok((
        Sel::Cast {
            arg: Box::new(sel),
            from: source,
            to: to.clone(),
        },
        format!("cast({label} as {to})"),
        to,
    ))
}

/// A function call in a selection: token(), an aggregate, tojson() or a
/// native scalar function (fromjson() and other keyspaces' functions are
/// errors).
fn plan_function(
    table: &Table,
    name: &rocksandra_cql::ast::QualifiedName,
    args: &[Expr],
    ctx: &EvalContext<'_>,
) -> Result<Planned> {
    let fname = name.name.as_str();
    let in_system = name
        .keyspace
        .as_ref()
        .is_none_or(|ks| ks.as_str() == "system");
    if fname == "token"
        && in_system
        && args.len() == table.partition_key_count
        && args.iter().all(|a| !matches!(a, Expr::Column(_)))
    {
        return plan_token_of_values(table, args, ctx);
    }
    if fname == "token" && in_system {
        return plan_token_of_columns(table, args);
    }
    let aggregate = Aggregate::named(fname);
    if let (Some(Aggregate::Count), [Expr::Literal(_)]) = (aggregate, args) {
        // count(1) counts rows, like count(*).
        return Ok((
            Sel::CountStar,
            "count".into(),
            CqlType::Native(NativeType::Bigint),
        ));
    }
    if let Some(function) = aggregate {
        return plan_aggregate(table, name, function, args, ctx);
    }
    if let ("fromjson", None, [Expr::Column(c)]) = (fname, &name.keyspace, args) {
        // The argument is typed before the function's place is checked.
        let column = table.column(c.as_str()).ok_or_else(|| {
            QueryError::undefined_column(c.as_str(), &table.keyspace, &table.name)
        })?;
        if !matches!(
            column.ty,
            CqlType::Native(NativeType::Text | NativeType::Ascii)
        ) {
            return Err(QueryError::invalid(format!(
                "Function system.fromjson requires an argument of type text, but found argument {} of type {}",
                column_label(&column.name),
                column.ty
            )));
        }
    }
    if fname == "fromjson" && name.keyspace.is_none() {
        return Err(QueryError::invalid(
            "fromjson() cannot be used in the selection clause of a SELECT statement",
        ));
    }
    if fname == "tojson" && name.keyspace.is_none() {
        return plan_tojson(table, args, ctx);
    }
    let native = name
        .keyspace
        .as_ref()
        .is_none_or(|ks| ks.as_str() == "system")
        && crate::functions::exists(fname);
    if !native {
        if let Some(planned) = user::plan(table, name, args, ctx)? {
            return Ok(planned);
        }
    }
    if let Some(ks) = name.keyspace.as_ref().filter(|ks| ks.as_str() != "system") {
        return Err(QueryError::invalid(format!(
            "Unknown function '{}.{fname}'",
            ks.as_str()
        )));
    }
    if !crate::functions::exists(fname) {
        return Err(QueryError::invalid(format!("Unknown function '{fname}'")));
    }
    plan_scalar_function(table, name, args, ctx)
}

/// token() of values: a constant, the token of that partition key.
fn plan_token_of_values(table: &Table, args: &[Expr], ctx: &EvalContext<'_>) -> Result<Planned> {
    let mut components = Vec::new();
    for (a, column) in args.iter().zip(table.partition_key()) {
        match evaluate(a, &column.ty, &column.name, ctx)? {
            Term::Value(v) => components.push(v),
            _ => {
                return Err(QueryError::invalid(
                    "Invalid null value for partition key part",
                ))
            }
        }
    }
    let refs: Vec<&[u8]> = components.iter().map(Vec::as_slice).collect();
    let key = rocksandra_data::token::serialize_partition_key(&refs);
    let token = rocksandra_data::token::Token::murmur3(&key);
    Ok((
        Sel::Constant(Some(token.0.to_be_bytes().to_vec())),
        format!("system.token({})", labels(args.iter())),
        CqlType::Native(NativeType::Bigint),
    ))
}

/// token() of columns: all the partition key columns, in order.
fn plan_token_of_columns(table: &Table, args: &[Expr]) -> Result<Planned> {
    let mut cols = Vec::new();
    for a in args {
        let Expr::Column(c) = a else {
            return Err(QueryError::invalid(
                "token() only accepts partition key columns",
            ));
        };
        let Some(i) = table.column_index(c.as_str()) else {
            return Err(QueryError::undefined_column_name(c.as_str()));
        };
        cols.push(i);
    }
    let expected: Vec<usize> = (0..table.partition_key_count).collect();
    if cols.len() == expected.len() {
        // The function takes the partition key's types, argument by argument.
        for (position, (col, key)) in cols.iter().zip(table.partition_key()).enumerate() {
            let column = &table.columns[*col];
            if column.ty != key.ty {
                return Err(QueryError::invalid(format!(
                    "Type error: {} cannot be passed as argument {position} of function system.token of type {}",
                    column_label(&column.name),
                    key.ty
                )));
            }
        }
    }
    if cols != expected {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments in call to function system.token: {} required but {} provided",
            table.partition_key_count,
            cols.len()
        )));
    }
    let labels: Vec<String> = cols
        .iter()
        .map(|i| column_label(&table.columns[*i].name))
        .collect();
    Ok((
        Sel::Token,
        format!("system.token({})", labels.join(", ")),
        CqlType::Native(NativeType::Bigint),
    ))
}

/// count, min, max, sum or avg of one (non-aggregate) selector; sum and avg
/// pick their numeric overload as Cassandra's function resolution does.
fn plan_aggregate(
    table: &Table,
    name: &rocksandra_cql::ast::QualifiedName,
    function: Aggregate,
    args: &[Expr],
    ctx: &EvalContext<'_>,
) -> Result<Planned> {
    let fname = name.name.as_str();
    let called = match &name.keyspace {
        Some(_) => format!("system.{fname}"),
        None => fname.to_string(),
    };
    let summing = matches!(function, Aggregate::Sum | Aggregate::Avg);
    // sum and avg have one overload per numeric type; min and
    // max are factories taking any type; count has one argument.
    let signature = |t: &NativeType| format!("system.{fname} : ({t}) -> {t}", t = t.name());
    let none_match = || {
        QueryError::invalid(format!(
            "Invalid call to function {called}, none of its type signatures match (known type signatures: {})",
            NativeType::NUMERIC.iter().map(signature).collect::<Vec<_>>().join(", ")
        ))
    };
    let [arg] = args else {
        return Err(match function {
            Aggregate::Sum | Aggregate::Avg => none_match(),
            Aggregate::Min | Aggregate::Max => QueryError::invalid(format!(
                "Invalid number of arguments for function system.{fname}(any)"
            )),
            Aggregate::Count => QueryError::invalid(format!(
                "Invalid number of arguments in call to function system.{fname}: 1 required but {} provided",
                args.len()
            )),
        });
    };
    let (sel, label, ty) = plan_selector(table, arg, ctx)?;
    if is_aggregate(&sel) {
        return Err(QueryError::invalid(
            "aggregate functions cannot be used as arguments of aggregate functions",
        ));
    }
    let mut ty = ty;
    if summing {
        let exact = matches!(ty.unfrozen(), CqlType::Native(t) if t.is_numeric());
        if !exact {
            let weak: Vec<NativeType> = NativeType::NUMERIC
                .iter()
                .copied()
                .filter(|t| crate::functions::is_value_compatible(&CqlType::Native(*t), &ty))
                .collect();
            match weak.as_slice() {
                [] => return Err(none_match()),
                [only] => ty = CqlType::Native(*only),
                several => {
                    return Err(QueryError::invalid(format!(
                        "Ambiguous call to function {called} (can be matched by following signatures: {}): use type casts to disambiguate",
                        several.iter().map(signature).collect::<Vec<_>>().join(", ")
                    )))
                }
            }
        }
    }
    let out_ty = match function {
        Aggregate::Count => CqlType::Native(NativeType::Bigint),
        Aggregate::Min | Aggregate::Max if ty == CqlType::Native(NativeType::Timeuuid) => {
            legacy_timeuuid_type()
        }
        _ => ty.clone(),
    };
    Ok((
        Sel::Aggregate {
            function,
            arg: Box::new(sel),
            ty,
        },
        format!("system.{fname}({label})"),
        out_ty,
    ))
}

/// tojson(x); a literal argument has the type its literal prefers.
fn plan_tojson(table: &Table, args: &[Expr], ctx: &EvalContext<'_>) -> Result<Planned> {
    let [arg] = args else {
        return Err(QueryError::invalid(
            "Invalid number of arguments for function system.tojson(any)",
        ));
    };
    let (sel, label, ty) = match literal_type(arg) {
        Some(ty) => {
            let value = match evaluate(arg, &ty, "selection", ctx)? {
                Term::Value(v) => Some(v),
                _ => None,
            };
            (Sel::Constant(value), literal_label(arg), ty)
        }
        None => plan_selector(table, arg, ctx)?,
    };
    Ok((
        Sel::ToJson {
            arg: Box::new(sel),
            ty,
        },
        format!("system.tojson({label})"),
        CqlType::Native(NativeType::Text),
    ))
}

/// Whether a function argument is a term (a literal, bind marker or
/// collection, possibly grouped or negated) rather than a selector.
fn is_term_argument(a: &Expr) -> bool {
    match a {
        // `(x)` groups a selector x.
        Expr::Tuple(items) if items.len() == 1 => is_arith_term(ungroup(a)),
        Expr::Negate(inner) => is_arith_term(ungroup(inner)),
        _ => matches!(
            a,
            Expr::Literal(_)
                | Expr::Bind(_)
                | Expr::List(_)
                | Expr::Set(_)
                | Expr::Map(_)
                | Expr::Tuple(_)
                | Expr::Udt(_)
        ),
    }
}

/// The arguments of a function call in a selection: selectors planned,
/// terms left for the chosen overload's parameter types.
struct FunctionArgs {
    sels: Vec<Sel>,
    labels: Vec<String>,
    /// None for a term.
    types: Vec<Option<CqlType>>,
}

impl FunctionArgs {
    fn plan(table: &Table, args: &[Expr], ctx: &EvalContext<'_>) -> Result<FunctionArgs> {
        let mut out = FunctionArgs {
            sels: Vec::new(),
            labels: Vec::new(),
            types: Vec::new(),
        };
        for a in args {
            if is_term_argument(a) {
                out.sels.push(Sel::Constant(None));
                out.labels.push(literal_label(a));
                out.types.push(None);
            } else {
                let (s, l, t) = plan_selector(table, a, ctx)?;
                out.sels.push(s);
                out.labels.push(l);
                out.types.push(Some(t));
            }
        }
        Ok(out)
    }

    /// The arguments as overload resolution sees them.
    fn views<'e>(&'e self, args: &'e [Expr]) -> Vec<crate::functions::Arg<'e>> {
        args.iter()
            .zip(&self.types)
            .zip(&self.labels)
            .map(|((a, t), label)| match t {
                Some(t) => crate::functions::Arg::Selector(t, label),
                None => crate::term::term_arg(a),
            })
            .collect()
    }

    /// Evaluates the term arguments as the chosen parameter types.
    fn bind_terms(
        &mut self,
        args: &[Expr],
        params: &[CqlType],
        fname: &str,
        ctx: &EvalContext<'_>,
    ) -> Result<()> {
        for (k, a) in args.iter().enumerate() {
            // At PREPARE no value is bound: the marker's value comes at EXECUTE.
            let unbound = ctx.binds.is_empty() && crate::term::contains_bind_marker(a);
            if self.types[k].is_none() && !unbound {
                let ty = params
                    .get(k)
                    .cloned()
                    .unwrap_or(CqlType::Native(NativeType::Blob));
                let value = match evaluate(a, &ty, fname, ctx)? {
                    Term::Value(v) => Some(v),
                    _ => None,
                };
                self.sels[k] = Sel::Constant(value);
            }
        }
        Ok(())
    }
}

/// The result type Cassandra 5.0.6 gives `blobAsTimeuuid` and the min and
/// max of a timeuuid: its internal LegacyTimeUUIDType, a custom type that
/// drivers read as a blob.
fn legacy_timeuuid_type() -> CqlType {
    CqlType::Custom("org.apache.cassandra.db.marshal.LegacyTimeUUIDType".into())
}

/// A native scalar function: the overload chosen from the selector
/// arguments' types and the terms, whose values are then evaluated as the
/// chosen parameter types.
fn plan_scalar_function(
    table: &Table,
    name: &rocksandra_cql::ast::QualifiedName,
    args: &[Expr],
    ctx: &EvalContext<'_>,
) -> Result<Planned> {
    let fname = name.name.as_str();
    let mut planned = FunctionArgs::plan(table, args, ctx)?;
    let resolved =
        crate::functions::resolve_called(fname, &planned.views(args), name.keyspace.is_some())?;
    planned.bind_terms(args, resolved.arg_types(), fname, ctx)?;
    let FunctionArgs {
        sels: planned,
        labels,
        ..
    } = planned;
    let mut ty = resolved.return_type().clone();
    if matches!(fname, "blobastimeuuid" | "blob_as_timeuuid") {
        ty = legacy_timeuuid_type();
    }
    Ok((
        Sel::Function {
            function: Box::new(resolved),
            args: planned,
            now_micros: ctx.now_micros,
        },
        format!("system.{fname}({})", labels.join(", ")),
        ty,
    ))
}

/// `left op right`: the operation resolved from the operands' types (terms
/// take the operand type of the operation chosen; other selectors keep
/// theirs, as FunctionResolver over `_add` & co).
fn plan_arithmetic(
    table: &Table,
    op: rocksandra_cql::ast::BinaryOp,
    left: &Expr,
    right: &Expr,
    ctx: &EvalContext<'_>,
) -> Result<Planned> {
    use crate::functions::operations::{operand_text, resolve, Operand};
    // A parenthesised term is still a term; a parenthesised selector
    // is planned as such (its label keeps the parentheses).
    fn term_or(e: &Expr) -> &Expr {
        if is_arith_term(ungroup(e)) {
            ungroup(e)
        } else {
            e
        }
    }
    let (left, right) = (term_or(left), term_or(right));
    let plan_operand = |e: &Expr| -> Result<Option<Planned>> {
        if is_arith_term(e) {
            Ok(None)
        } else {
            plan_selector(table, e, ctx).map(Some)
        }
    };
    let (lp, rp) = (plan_operand(left)?, plan_operand(right)?);
    let operand = |e: &'_ Expr, p: &Option<Planned>| -> String {
        match p {
            Some((_, label, _)) => label.clone(),
            None => operand_text(e),
        }
    };
    let texts = (operand(left, &lp), operand(right, &rp));
    fn as_operand<'a>(e: &'a Expr, p: &'a Option<Planned>) -> Operand<'a> {
        match p {
            Some((_, _, ty)) => Operand::Typed(ty),
            None => Operand::Term(e, crate::term::test_assignment),
        }
    }
    let operation = resolve(
        crate::term::binary_op(op),
        as_operand(left, &lp),
        as_operand(right, &rp),
        (&texts.0, &texts.1),
        None,
    )?;
    let finish = |e: &Expr, p: Option<Planned>, t: NativeType| match p {
        Some((sel, label, _)) => Ok::<_, QueryError>((sel, label)),
        None => {
            let value = match evaluate(e, &CqlType::Native(t), "selection", ctx)? {
                Term::Value(v) => Some(v),
                _ => None,
            };
            Ok((Sel::Constant(value), e.to_string()))
        }
    };
    let (l, ll) = finish(left, lp, operation.left)?;
    let (r, rl) = finish(right, rp, operation.right)?;
    let symbol = crate::term::binary_op(op).symbol();
    let ty = CqlType::Native(operation.result);
    Ok((
        Sel::Arith {
            op,
            left: Box::new(l),
            left_ty: CqlType::Native(operation.left),
            right: Box::new(r),
            right_ty: CqlType::Native(operation.right),
            ty: ty.clone(),
        },
        format!("{ll} {symbol} {rl}"),
        ty,
    ))
}

/// `-x` of a numeric selector.
fn plan_negate(table: &Table, inner: &Expr, ctx: &EvalContext<'_>) -> Result<Planned> {
    let (sel, label, ty) = plan_selector(table, inner, ctx)?;
    let CqlType::Native(t) = ty.unfrozen() else {
        return Err(QueryError::invalid(format!(
            "the '-' operation is not supported on {label}"
        )));
    };
    if !t.is_numeric() {
        return Err(QueryError::invalid(
            "Invalid call to function _negate, none of its type signatures match",
        ));
    }
    let label = format!("-{label}");
    Ok((
        Sel::Negate {
            arg: Box::new(sel),
            ty: *t,
        },
        label,
        ty.clone(),
    ))
}

/// `(type) literal`: a constant of the hinted type.
fn plan_type_hint(
    ty: &rocksandra_cql::TypeExpr,
    expr: &Expr,
    ctx: &EvalContext<'_>,
) -> Result<Planned> {
    let ty = ty
        .resolve(&ctx.types)
        .map_err(|e| QueryError::invalid(format!("Unknown type {}", e.0)))?;
    let value = match evaluate(expr, &ty, "selection", ctx)? {
        Term::Value(v) => Some(v),
        _ => None,
    };
    Ok((
        Sel::Constant(value),
        format!("({ty}){}", literal_label(expr)),
        ty,
    ))
}

/// The receiver of an element or slice selection's key: a set's element
/// type or a map's key type, named as Cassandra names it.
fn selection_key(selection: &str, label: &str, ty: &CqlType) -> Result<(CqlType, CqlType, String)> {
    match ty.unfrozen() {
        CqlType::Map(k, v) => Ok(((**k).clone(), (**v).clone(), format!("key({label})"))),
        CqlType::Set(e) => Ok(((**e).clone(), (**e).clone(), format!("value({label})"))),
        CqlType::List(_) => Err(QueryError::invalid(format!(
            "{selection} selection is only allowed on sets and maps, but {label} is a list"
        ))),
        _ if selection == "Element" => Err(QueryError::invalid(format!(
            "Invalid element selection: {label} is of type {} is not a collection",
            crate::type_text::cql_type_text(ty)
        ))),
        _ => Err(QueryError::invalid(format!(
            "Invalid slice selection: {label} of type {} is not a collection",
            crate::type_text::cql_type_text(ty)
        ))),
    }
}

/// The value of an element key or slice bound; None for a bind marker at
/// PREPARE, when no values are bound yet, and for an unset slice bound,
/// which Cassandra takes as an open one.
fn selection_key_value(
    expr: &Expr,
    (key_ty, receiver): (&CqlType, &str),
    slice: bool,
    label: &str,
    ctx: &EvalContext<'_>,
) -> Result<Option<Vec<u8>>> {
    if matches!(expr, Expr::Bind(_)) && ctx.binds.is_empty() {
        return Ok(None);
    }
    let what = if slice { "slice" } else { "element" };
    match evaluate(expr, key_ty, receiver, ctx)? {
        Term::Value(v) => Ok(Some(v)),
        Term::Null => Err(QueryError::invalid(format!(
            "Invalid null value for {what} selection on {label}"
        ))),
        Term::Unset if slice => Ok(None),
        Term::Unset => Err(QueryError::invalid(format!(
            "Invalid unset value for {what} selection on {label}"
        ))),
    }
}

/// `c[key]` on a set or map selector.
fn plan_element(
    (sel, label, ty): (Sel, String, CqlType),
    key: &Expr,
    ctx: &EvalContext<'_>,
) -> Result<(Sel, String, CqlType)> {
    let (key_ty, out_ty, receiver) = selection_key("Element", &label, &ty)?;
    let key_value = selection_key_value(key, (&key_ty, &receiver), false, &label, ctx)?;
    Ok((
        Sel::Element {
            collection: Box::new(sel),
            ty: ty.clone(),
            key: key_value,
        },
        format!("{label}[{}]", literal_label(key)),
        out_ty,
    ))
}

/// `c[from..to]` on a set or map selector.
fn plan_slice(
    (sel, label, ty): (Sel, String, CqlType),
    from: Option<&Expr>,
    to: Option<&Expr>,
    ctx: &EvalContext<'_>,
) -> Result<(Sel, String, CqlType)> {
    let (key_ty, _, receiver) = selection_key("Slice", &label, &ty)?;
    let bound = |e: Option<&Expr>| match e {
        Some(e) => selection_key_value(e, (&key_ty, &receiver), true, &label, ctx),
        None => Ok(None),
    };
    let (from_value, to_value) = (bound(from)?, bound(to)?);
    let text = |e: Option<&Expr>| e.map(literal_label).unwrap_or_default();
    Ok((
        Sel::Range {
            collection: Box::new(sel),
            ty: ty.clone(),
            from: from_value,
            to: to_value,
        },
        format!("{label}[{}..{}]", text(from), text(to)),
        ty,
    ))
}

/// Whether a serialized key lies within a slice's bounds (both inclusive,
/// either open).
fn key_in_range(
    key_ty: &CqlType,
    key: &[u8],
    from: &Option<Vec<u8>>,
    to: &Option<Vec<u8>>,
) -> bool {
    use std::cmp::Ordering;
    let compare = |bound: &Vec<u8>| rocksandra_data::value::compare(key_ty, key, bound);
    from.as_ref().is_none_or(|f| compare(f) != Ordering::Less)
        && to.as_ref().is_none_or(|t| compare(t) != Ordering::Greater)
}

/// Cassandra's widening order for arithmetic results.
/// `(x)` in an arithmetic operand is grouping, not a one-element tuple.
fn ungroup(expr: &Expr) -> &Expr {
    match expr {
        Expr::Tuple(items) if items.len() == 1 => ungroup(&items[0]),
        other => other,
    }
}

/// An operand whose type comes from the operation it is in: a literal,
/// a bind marker, or the negation of one.
fn is_arith_term(e: &Expr) -> bool {
    match e {
        Expr::Literal(_) | Expr::Bind(_) => true,
        Expr::Negate(inner) => is_arith_term(ungroup(inner)),
        _ => false,
    }
}

/// The type an untyped literal takes where any type is accepted
/// (`toJson(1)`): its constant's preferred type, collections of those.
fn literal_type(e: &Expr) -> Option<CqlType> {
    use rocksandra_cql::ast::Literal;
    let native = |t| Some(CqlType::Native(t));
    match e {
        Expr::Literal(Literal::Integer(_)) => native(NativeType::Int),
        Expr::Literal(Literal::Float(_)) => native(NativeType::Double),
        Expr::Literal(Literal::String(_)) => native(NativeType::Text),
        Expr::Literal(Literal::Boolean(_)) => native(NativeType::Boolean),
        Expr::Literal(Literal::Uuid(_)) => native(NativeType::Uuid),
        Expr::Literal(Literal::Blob(_)) => native(NativeType::Blob),
        Expr::Literal(Literal::Duration(_)) => native(NativeType::Duration),
        Expr::List(items) => Some(CqlType::List(Box::new(
            literal_type(items.first()?)?.freeze(),
        ))),
        Expr::Set(items) => Some(CqlType::Set(Box::new(
            literal_type(items.first()?)?.freeze(),
        ))),
        Expr::Map(entries) => {
            let (k, v) = entries.first()?;
            Some(CqlType::Map(
                Box::new(literal_type(k)?.freeze()),
                Box::new(literal_type(v)?.freeze()),
            ))
        }
        _ => None,
    }
}

fn labels<'a>(items: impl Iterator<Item = &'a Expr>) -> String {
    items.map(literal_label).collect::<Vec<_>>().join(", ")
}

fn literal_label(expr: &Expr) -> String {
    use rocksandra_cql::ast::Literal;
    match expr {
        Expr::Literal(Literal::String(s)) => format!("'{}'", s.replace('\'', "''")),
        Expr::Literal(
            Literal::Integer(s)
            | Literal::Float(s)
            | Literal::Uuid(s)
            | Literal::Blob(s)
            | Literal::Duration(s),
        ) => s.clone(),
        Expr::Literal(Literal::Boolean(b)) => b.to_string(),
        Expr::Literal(Literal::Null) => "NULL".into(),
        Expr::List(items) => format!("[{}]", labels(items.iter())),
        Expr::Set(items) => format!("{{{}}}", labels(items.iter())),
        Expr::Tuple(items) => format!("({})", labels(items.iter())),
        Expr::Map(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", literal_label(k), literal_label(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Expr::Udt(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(f, v)| format!("{}: {}", column_label(f.as_str()), literal_label(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Expr::Bind(_) => "?".into(),
        _ => "?".into(),
    }
}

fn plan(table: &Table, select: &Select, ctx: &EvalContext<'_>) -> Result<Vec<Output>> {
    let mut outputs = Vec::new();
    match &select.selection {
        Selection::Wildcard => outputs = wildcard_outputs(table),
        Selection::Selectors(selectors) => {
            for AstSelector { expr, alias } in selectors {
                if matches!(expr, Expr::Tuple(_)) {
                    // A parenthesised selector is a tuple literal there.
                    return Err(QueryError::invalid(format!(
                        "Cannot infer type for term {expr} in selection clause (try using a cast to force a type)"
                    )));
                }
                let (sel, label, ty) = plan_selector(table, expr, ctx)?;
                outputs.push(Output {
                    sel,
                    name: alias
                        .as_ref()
                        .map(|a| a.as_str().to_string())
                        .unwrap_or(label),
                    ty,
                });
            }
        }
    }
    if select.distinct {
        check_distinct_selection(table, select, &outputs)?;
    }
    Ok(outputs)
}

/// `SELECT *`: the primary key columns in key order, then the static and
/// the regular columns, each by name (but a compact table's hidden ones).
fn wildcard_outputs(table: &Table) -> Vec<Output> {
    let mut outputs = Vec::new();
    let key_count = table.partition_key_count + table.clustering_count;
    let mut order: Vec<usize> = (0..key_count).collect();
    let mut statics: Vec<usize> = Vec::new();
    let mut regulars: Vec<usize> = Vec::new();
    for (i, c) in table.columns.iter().enumerate().skip(key_count) {
        if c.kind == ColumnKind::Static {
            statics.push(i);
        } else {
            regulars.push(i);
        }
    }
    statics.sort_by(|a, b| {
        table.columns[*a]
            .name
            .as_bytes()
            .cmp(table.columns[*b].name.as_bytes())
    });
    regulars.sort_by(|a, b| {
        table.columns[*a]
            .name
            .as_bytes()
            .cmp(table.columns[*b].name.as_bytes())
    });
    order.extend(statics);
    order.extend(regulars);
    if table.compact.is_some() {
        order.retain(|i| !table.is_hidden(&table.columns[*i]));
    }
    for i in order {
        outputs.push(Output {
            sel: Sel::Column(i),
            name: table.columns[i].name.clone(),
            ty: table.columns[i].ty.clone(),
        });
    }
    outputs
}

/// SelectStatement.validateDistinctSelection: the columns the selection
/// reads are partition key or static columns, and a scan of a token range
/// reads every partition key column.
fn check_distinct_selection(table: &Table, select: &Select, outputs: &[Output]) -> Result<()> {
    if select.per_partition_limit.is_some() {
        return Err(QueryError::invalid(
            "PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries",
        ));
    }
    let mut requested: Vec<usize> = Vec::new();
    for o in outputs {
        sel_columns(table, &o.sel, &mut requested);
    }
    for i in &requested {
        if !matches!(
            table.columns[*i].kind,
            ColumnKind::PartitionKey | ColumnKind::Static
        ) {
            return Err(QueryError::invalid(format!(
                "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                table.columns[*i].name
            )));
        }
    }
    let key_restricted = |i: usize| {
        select.where_clause.iter().any(|r| {
            matches!(r, rocksandra_cql::ast::Relation::Compare {
                lhs: rocksandra_cql::ast::RelationLhs::Column(c),
                op: rocksandra_cql::ast::Operator::Eq | rocksandra_cql::ast::Operator::In,
                ..
            } if table.column_index(c.as_str()) == Some(i))
        })
    };
    let key_range = !(0..table.partition_key_count).all(key_restricted);
    if key_range {
        if let Some(missing) = table
            .partition_key()
            .iter()
            .enumerate()
            .find(|(i, _)| !requested.contains(i))
        {
            return Err(QueryError::invalid(format!(
                "SELECT DISTINCT queries must request all the partition key columns (missing {})",
                missing.1.name
            )));
        }
    }
    Ok(())
}

/// The table columns a selector reads, in selection order, once each.
fn sel_columns(table: &Table, sel: &Sel, out: &mut Vec<usize>) {
    let mut add = |i: usize| {
        if !out.contains(&i) {
            out.push(i);
        }
    };
    match sel {
        Sel::Column(i) => add(*i),
        Sel::Metadata(m) => add(m.column),
        Sel::Token => (0..table.partition_key_count).for_each(add),
        Sel::Aggregate { arg, .. }
        | Sel::Cast { arg, .. }
        | Sel::ToJson { arg, .. }
        | Sel::Negate { arg, .. } => sel_columns(table, arg, out),
        Sel::Field { udt, .. } => sel_columns(table, udt, out),
        Sel::Element { collection, .. } | Sel::Range { collection, .. } => {
            sel_columns(table, collection, out)
        }
        Sel::Arith { left, right, .. } => {
            sel_columns(table, left, out);
            sel_columns(table, right, out);
        }
        Sel::Function { args, .. }
        | Sel::UserFunction { args, .. }
        | Sel::UserAggregate { args, .. } => args.iter().for_each(|a| sel_columns(table, a, out)),
        Sel::CountStar | Sel::Constant(_) => {}
    }
}

fn specs(table: &Table, outputs: &[Output]) -> Vec<ColumnSpec> {
    outputs
        .iter()
        .map(|o| ColumnSpec {
            table: TableSpec {
                keyspace: table.keyspace.clone(),
                table: table.name.clone(),
            },
            name: o.name.clone(),
            cql_type: o.ty.clone(),
        })
        .collect()
}

/// Result columns of a SELECT, for PREPARE.
pub fn result_specs(
    context: &StatementCtx<'_>,
    schema: &Schema,
    select: &Select,
    session_ks: Option<&str>,
) -> Result<Vec<ColumnSpec>> {
    let keyspace = crate::schema::keyspace_of(&select.table, session_ks)?;
    let table = schema.lookup_table(keyspace, select.table.name.as_str())?;
    let random = context.env.random.clone();
    let ctx = context.eval_context(schema, keyspace, &[], &*random);
    if select.json {
        return Ok(vec![ColumnSpec {
            table: TableSpec {
                keyspace: table.keyspace.clone(),
                table: table.name.clone(),
            },
            name: "[json]".into(),
            cql_type: CqlType::Native(NativeType::Text),
        }]);
    }
    // Bind markers are not known at PREPARE: selectors with terms fall back
    // to the types their functions declare.
    let outputs = plan(table, select, &ctx)?;
    Ok(specs(table, &outputs))
}

/// The markers that are arguments of native functions in a SELECT's
/// selectors and GROUP BY, with Cassandra's spec for each (`arg1(system.f)` of the
/// chosen overload's parameter type): the parser knows no receiver there.
pub fn selector_marker_specs(
    context: &StatementCtx<'_>,
    schema: &Schema,
    select: &Select,
    session_ks: Option<&str>,
) -> Result<Vec<(usize, String, CqlType)>> {
    let keyspace = crate::schema::keyspace_of(&select.table, session_ks)?;
    let table = schema.lookup_table(keyspace, select.table.name.as_str())?;
    let random = context.env.random.clone();
    let ctx = context.eval_context(schema, keyspace, &[], &*random);
    let mut out = Vec::new();
    if let Selection::Selectors(selectors) = &select.selection {
        for selector in selectors {
            function_markers(table, &selector.expr, &ctx, &mut out);
        }
    }
    // GROUP BY floor(ts, 1h, ?): function arguments too, which Cassandra
    // names `[selection]`.
    let mut grouping = Vec::new();
    for expr in &select.group_by {
        function_markers(table, expr, &ctx, &mut grouping);
    }
    out.extend(
        grouping
            .into_iter()
            .map(|(index, _, ty)| (index, "[selection]".to_string(), ty)),
    );
    Ok(out)
}

fn function_markers(
    table: &Table,
    expr: &Expr,
    ctx: &EvalContext<'_>,
    out: &mut Vec<(usize, String, CqlType)>,
) {
    let Expr::Function { name, args } = expr else {
        return;
    };
    let fname = name.name.as_str();
    let planned: Vec<Option<(String, CqlType)>> = args
        .iter()
        .map(|a| match is_term_argument(a) {
            true => None,
            false => plan_selector(table, a, ctx).ok().map(|(_, l, t)| (l, t)),
        })
        .collect();
    let views: Vec<crate::functions::Arg<'_>> = args
        .iter()
        .zip(&planned)
        .map(|(a, p)| match p {
            Some((label, t)) => crate::functions::Arg::Selector(t, label),
            None => crate::term::term_arg(a),
        })
        .collect();
    let Ok(function) = crate::functions::resolve_called(fname, &views, name.keyspace.is_some())
    else {
        return;
    };
    for (i, a) in args.iter().enumerate() {
        match a {
            Expr::Bind(marker) => {
                if let Some(ty) = function.arg_types().get(i) {
                    out.push((marker.index, format!("arg{i}(system.{fname})"), ty.clone()));
                }
            }
            nested => function_markers(table, nested, ctx, out),
        }
    }
}

fn limit_value(expr: &Option<Expr>, name: &str, ctx: &EvalContext<'_>) -> Result<Option<usize>> {
    let Some(e) = expr else { return Ok(None) };
    let int = CqlType::Native(NativeType::Int);
    match evaluate(e, &int, name, ctx)? {
        Term::Value(b) => match Value::deserialize(&int, &b)? {
            Value::Int(n) if n > 0 => Ok(Some(n as usize)),
            Value::Int(_) => Err(QueryError::invalid(format!(
                "{} must be strictly positive",
                // Cassandra says LIMIT for PER PARTITION LIMIT too.
                if name.is_empty() { "" } else { "LIMIT" }
            ))),
            _ => Ok(None),
        },
        Term::Null => Err(QueryError::invalid("Invalid null value of limit")),
        Term::Unset => Ok(None),
    }
}

/// Paging position.
#[derive(Clone, Debug, Default, PartialEq)]
struct PagingState {
    rows_so_far: u64,
    partition_index: u32,
    position: Option<Position>,
}

#[derive(Clone, Debug, PartialEq)]
struct Position {
    partition: Vec<u8>,
    clustering: Option<Vec<Vec<u8>>>,
    rows_in_partition: u32,
}

impl PagingState {
    fn encode(&self) -> Bytes {
        let mut out = vec![1u8];
        out.extend_from_slice(&self.rows_so_far.to_be_bytes());
        out.extend_from_slice(&self.partition_index.to_be_bytes());
        if let Some(p) = &self.position {
            out.extend_from_slice(&(p.partition.len() as u32).to_be_bytes());
            out.extend_from_slice(&p.partition);
            match &p.clustering {
                None => out.push(0),
                Some(c) => {
                    out.push(1);
                    out.extend_from_slice(&(c.len() as u16).to_be_bytes());
                    for v in c {
                        out.extend_from_slice(&(v.len() as u32).to_be_bytes());
                        out.extend_from_slice(v);
                    }
                }
            }
            out.extend_from_slice(&p.rows_in_partition.to_be_bytes());
        }
        Bytes::from(out)
    }

    fn decode(bytes: &[u8]) -> Result<PagingState> {
        // Cassandra answers a corrupt paging state with a protocol error; the
        // closest class that keeps the connection open is Invalid.
        let bad = || QueryError::invalid("Invalid value for the paging state");
        let mut r = bytes;
        let mut take = |n: usize| -> Result<Vec<u8>> {
            if r.len() < n {
                return Err(bad());
            }
            let (a, b) = r.split_at(n);
            r = b;
            Ok(a.to_vec())
        };
        if take(1)? != [1] {
            return Err(bad());
        }
        let rows_so_far = u64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?);
        let partition_index = u32::from_be_bytes(take(4)?.try_into().map_err(|_| bad())?);
        let mut state = PagingState {
            rows_so_far,
            partition_index,
            position: None,
        };
        let Ok(len) = take(4) else { return Ok(state) };
        let len = u32::from_be_bytes(len.try_into().map_err(|_| bad())?) as usize;
        let partition = take(len)?;
        let clustering = match take(1)?.first() {
            Some(0) => None,
            Some(1) => {
                let n = u16::from_be_bytes(take(2)?.try_into().map_err(|_| bad())?);
                let mut c = Vec::new();
                for _ in 0..n {
                    let l = u32::from_be_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
                    c.push(take(l)?);
                }
                Some(c)
            }
            _ => return Err(bad()),
        };
        let rows_in_partition = u32::from_be_bytes(take(4)?.try_into().map_err(|_| bad())?);
        state.position = Some(Position {
            partition,
            clustering,
            rows_in_partition,
        });
        Ok(state)
    }
}

/// Restricts slices to what comes after `last` in read order.
fn slices_after(table: &Table, slices: &[Slice], last: &[Vec<u8>], reversed: bool) -> Vec<Slice> {
    use std::cmp::Ordering;
    // In read order, a slice is read from its `near` bound to its `far` one;
    // `later` is how a clustering that comes after another compares to it.
    let later = if reversed {
        Ordering::Less
    } else {
        Ordering::Greater
    };
    let mut out = Vec::new();
    for s in slices {
        let (near, far) = if reversed {
            (&s.end, &s.start)
        } else {
            (&s.start, &s.end)
        };
        // Slices that end at or before `last` are done.
        if compare_to_bound(table, last, far, reversed) == later {
            continue;
        }
        // A slice that starts after `last` is read whole; one that started
        // resumes right after the row `last` (before the rows extending it,
        // when it is a compact table's prefix row).
        if compare_to_bound(table, last, near, !reversed) != later {
            out.push(s.clone());
            continue;
        }
        out.push(if reversed {
            Slice {
                start: s.start.clone(),
                end: ClusteringBound::before_row(last.to_vec()),
            }
        } else {
            Slice {
                start: ClusteringBound::after_row(last.to_vec()),
                end: s.end.clone(),
            }
        });
    }
    out
}

/// Reads rows in query order, page by page, applying filters and limits.
struct Reader<'a> {
    context: &'a StatementCtx<'a>,
    table: &'a Table,
    restrictions: &'a Restrictions,
    reversed: bool,
    distinct: bool,
    per_partition_limit: usize,
    include_static_only: bool,
    /// The request's local time, read once for every page of storage.
    now: rocksandra_data::LocalTime,
    schema: &'a Schema,
    consistency: rocksandra_wire::Consistency,
    /// The index that answers a query over a token range, if one does.
    index: Option<IndexQuery>,
    /// Deleted or expired rows the partition reads met (single node).
    tombstones: std::cell::Cell<u64>,
    /// When the page being read must end (`deadline`), set by `read`.
    deadline: std::cell::Cell<Option<crate::deadline::Deadline>>,
    /// With `read_thresholds_enabled`, the thresholds and what the reads
    /// reported (`read_thresholds.rs`); None (nothing kept) otherwise.
    thresholds: Option<ReadThresholdState>,
    /// The masks the user reads through (`masking`); None for clear values.
    masker: Option<crate::masking::Masker>,
}

/// What a reader keeps with `read_thresholds_enabled`: the reports of its
/// reads, each with the tokens it read (Cassandra warns per read), and the
/// tokens for the coordinator read size's warning.
struct ReadThresholdState {
    thresholds: ReadThresholds,
    reports: std::cell::RefCell<Vec<(String, ReadReports)>>,
    tokens: std::cell::RefCell<ReadTokens>,
}

/// The tokens a statement read, as Cassandra's `SelectStatement` names
/// them in the coordinator read size's warning.
#[derive(Default)]
enum ReadTokens {
    #[default]
    None,
    Partitions(Vec<i64>),
    Range(i64, i64),
}

impl std::fmt::Display for ReadTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadTokens::None => f.write_str("no token"),
            ReadTokens::Partitions(tokens) if tokens.len() == 1 => {
                write!(f, "token: {}", tokens[0])
            }
            ReadTokens::Partitions(tokens) => {
                let listed: Vec<String> = tokens.iter().map(i64::to_string).collect();
                write!(f, "tokens: [{}]", listed.join(", "))
            }
            ReadTokens::Range(start, end) => {
                let (start, end) = cassandra_range(*start, *end);
                write!(f, "token range: ({start}, {end})")
            }
        }
    }
}

/// Our inclusive token range as Cassandra's (start exclusive; the end of
/// the ring is the minimum token): the full ring is (MIN, MIN).
fn cassandra_range(start: i64, end: i64) -> (i64, i64) {
    let start = if start == i64::MIN { start } else { start - 1 };
    let end = if end == i64::MAX { i64::MIN } else { end };
    (start, end)
}

impl<'a> Reader<'a> {
    /// The reader of a SELECT: static-only rows are returned when neither
    /// clustering columns nor regular columns are restricted; DISTINCT
    /// reads no index.
    #[allow(clippy::too_many_arguments)]
    fn for_select(
        context: &'a StatementCtx<'a>,
        table: &'a Table,
        restrictions: &'a Restrictions,
        schema: &'a Schema,
        request: &Request,
        distinct: bool,
        reversed: bool,
        per_partition_limit: usize,
    ) -> Self {
        Reader {
            context,
            table,
            restrictions,
            reversed,
            distinct,
            per_partition_limit,
            include_static_only: !restrictions.clustering_restricted
                && restrictions
                    .filters
                    .iter()
                    .all(|f| table.columns[f.column].kind != ColumnKind::Regular),
            now: context.local_now(request),
            consistency: request.consistency,
            schema,
            index: if distinct {
                None
            } else {
                search::choose(table, restrictions)
            },
            tombstones: std::cell::Cell::new(0),
            deadline: std::cell::Cell::new(None),
            thresholds: context
                .read_thresholds()
                .map(|thresholds| ReadThresholdState {
                    thresholds,
                    reports: Default::default(),
                    tokens: Default::default(),
                }),
            masker: None,
        }
    }

    /// Takes in what one read met: its tombstones, and with
    /// `read_thresholds_enabled` the replicas' reports (on a node alone,
    /// this node's own, judged here: `bytes` measures what it loaded).
    /// A refusal fails the read (`QueryError::ReadAborted`).
    fn absorb(
        &self,
        met: ReadMet,
        label: impl FnOnce() -> String,
        bytes: impl FnOnce() -> u64,
    ) -> Result<()> {
        self.tombstones.set(self.tombstones.get() + met.tombstones);
        let Some(state) = &self.thresholds else {
            return Ok(());
        };
        let mut reports = met.reports;
        if !self.context.is_clustered() {
            let node = self.context.node().broadcast_address;
            let tombstones = self.context.tombstone_thresholds();
            let local = state.thresholds.local_size();
            let bytes = if local.is_some() { bytes() } else { 0 };
            let own = ReplicaMet {
                tombstones: met.tombstones,
                bytes,
            };
            reports.own_read(node, own, tombstones, local.unwrap_or_default());
        }
        if reports.is_refused() {
            let counts = FailureCounts {
                consistency: self.consistency,
                received: 0,
                block_for: 1,
            };
            let aborted = reports.abort(counts);
            return Err(aborted.unwrap_or_else(|| QueryError::Server("refused read".into())));
        }
        if !reports.is_empty() {
            // The requests of one scan (the same tokens) are one read.
            let label = label();
            let mut kept = state.reports.borrow_mut();
            match kept.iter_mut().find(|(l, _)| *l == label) {
                Some((_, same)) => same.merge(&reports),
                None => kept.push((label, reports)),
            }
        }
        Ok(())
    }

    /// Notes the tokens read, for the coordinator read size's warning.
    fn note_tokens(&self, read: ReadTokens) {
        let Some(state) = self
            .thresholds
            .as_ref()
            .filter(|s| s.thresholds.coordinator_size().is_some())
        else {
            return;
        };
        let mut tokens = state.tokens.borrow_mut();
        match (&mut *tokens, read) {
            (ReadTokens::Partitions(have), ReadTokens::Partitions(more)) => {
                for token in more {
                    if !have.contains(&token) {
                        have.push(token);
                    }
                }
            }
            (ReadTokens::Range(..), ReadTokens::Range(..)) => {}
            (slot, read) => *slot = read,
        }
    }
}

/// Where a read answered from an index stands.
#[derive(Default)]
struct IndexedProgress {
    rows: Vec<CqlRow>,
    /// Rows returned from the partition rows last came from, for PER
    /// PARTITION LIMIT.
    carried: Option<(PartitionKey, usize)>,
    /// The last row (or, for an index with an entry per partition, the
    /// last partition) answered: later entries for it are duplicates (a
    /// list holding the value twice has two).
    answered: Option<(PartitionKey, Option<Vec<Vec<u8>>>)>,
    /// Where the page stopped inside a partition found through an index
    /// with an entry per partition: its rows resume after that row.
    resume_in_partition: Option<Position>,
    /// Entries found stale, removed after each batch.
    stale: Vec<search::Entry>,
}

impl IndexedProgress {
    fn rows_in(&self, partition: &PartitionKey) -> usize {
        match &self.carried {
            Some((key, n)) if key == partition => *n,
            _ => 0,
        }
    }
}

/// The inclusive token interval of a token restriction; None when empty.
fn token_bounds(
    start: Option<(Token, bool)>,
    end: Option<(Token, bool)>,
) -> Option<(Token, Token)> {
    let token_start = match start {
        None => Token(i64::MIN),
        Some((t, true)) => t,
        Some((t, false)) => Token(t.0.checked_add(1)?),
    };
    let token_end = match end {
        // The minimum token as an end bound means the end of the ring,
        // as in Cassandra (`token(k) < -9223372036854775808` is everything).
        None => Token(i64::MAX),
        Some((t, _)) if t.0 == i64::MIN => Token(i64::MAX),
        Some((t, true)) => t,
        Some((t, false)) => Token(t.0 - 1),
    };
    (token_start <= token_end).then_some((token_start, token_end))
}

impl Reader<'_> {
    /// READ_TIMEOUT when the page being read is past its deadline: checked
    /// before each batch of storage reads.
    fn check_deadline(&self) -> Result<()> {
        match self.deadline.get() {
            Some(d) => d.check((self.context.env.now_micros)()),
            None => Ok(()),
        }
    }

    /// Reads up to `want` rows after `state`, returning them and the state
    /// after the last one (None when the data is exhausted).
    fn read(&self, state: &PagingState, want: usize) -> Result<(Vec<CqlRow>, Option<PagingState>)> {
        let (mut rows, next) = self.read_clear(state, want)?;
        if let Some(masker) = &self.masker {
            masker.mask(&mut rows)?;
        }
        Ok((rows, next))
    }

    /// [`Reader::read`] before the masks: the values as stored.
    fn read_clear(
        &self,
        state: &PagingState,
        want: usize,
    ) -> Result<(Vec<CqlRow>, Option<PagingState>)> {
        if self.table.is_virtual {
            return self.read_virtual(state, want);
        }
        let range = matches!(
            self.restrictions.partition,
            PartitionSelection::Tokens { .. }
        );
        self.deadline.set(Some(crate::deadline::Deadline::after(
            (self.context.env.now_micros)(),
            self.context.settings.read_timeouts.micros(range),
            self.consistency,
        )));
        match &self.restrictions.partition {
            PartitionSelection::Keys(keys) => self.read_keys(keys, state, want),
            PartitionSelection::Tokens { start, end } => match &self.index {
                Some(index) => self.read_indexed(index, *start, *end, state, want),
                None => self.read_range(*start, *end, state, want),
            },
        }
    }

    fn accept(&self, row: &CqlRow) -> Result<bool> {
        crate::restrict::row_passes(self.table, row, self.restrictions)
    }

    fn read_virtual(
        &self,
        state: &PagingState,
        want: usize,
    ) -> Result<(Vec<CqlRow>, Option<PagingState>)> {
        let node = self.context.node();
        let engine = self.context.engine();
        let stats = |id| engine.table_stats(id);
        let all = crate::system::rows(self.table, self.schema, &node, &stats);
        let mut rows = Vec::new();
        let mut index = state.partition_index as usize;
        let mut per_partition: Vec<(Vec<u8>, usize)> = Vec::new();
        while index < all.len() && rows.len() < want {
            let values = &all[index];
            index += 1;
            let pk: Vec<Vec<u8>> = values[..self.table.partition_key_count]
                .iter()
                .map(|v| v.clone().unwrap_or_default())
                .collect();
            let key = partition_key_bytes(&pk);
            let clustering: Vec<Vec<u8>> = values[self.table.partition_key_count
                ..self.table.partition_key_count + self.table.clustering_count]
                .iter()
                .map(|v| v.clone().unwrap_or_default())
                .collect();
            let row = CqlRow {
                partition: PartitionKey::new(key.clone()),
                clustering: Some(clustering.clone()),
                columns: values
                    .iter()
                    .map(|v| crate::rows::ColumnValue {
                        value: v.clone(),
                        writetimes: Default::default(),
                        ttls: Default::default(),
                    })
                    .collect(),
            };
            if let PartitionSelection::Keys(keys) = &self.restrictions.partition {
                if !keys.contains(&pk) {
                    continue;
                }
            }
            if self.restrictions.clustering_restricted
                && !self
                    .restrictions
                    .slices
                    .iter()
                    .any(|s| in_slice(self.table, &clustering, s))
            {
                continue;
            }
            if !self.accept(&row)? {
                continue;
            }
            let count = match per_partition.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    per_partition.push((key.clone(), 1));
                    1
                }
            };
            if self.per_partition_limit > 0 && count > self.per_partition_limit {
                continue;
            }
            rows.push(row);
        }
        if let PartitionSelection::Keys(keys) = &self.restrictions.partition {
            // IN results come back in key order (keys are sorted).
            let position = |r: &CqlRow| {
                let pk: Vec<Vec<u8>> = r.columns[..self.table.partition_key_count]
                    .iter()
                    .map(|c| c.value.clone().unwrap_or_default())
                    .collect();
                keys.iter().position(|k| *k == pk).unwrap_or(usize::MAX)
            };
            rows.sort_by_key(|r| position(r));
        }
        let next = (index < all.len() || rows.len() >= want).then_some(PagingState {
            rows_so_far: 0,
            partition_index: index as u32,
            position: None,
        });
        Ok((rows, next))
    }

    /// One partition of the table, at the query's consistency and time.
    fn read_partition(&self, read: &PartitionRead) -> Result<Partition> {
        let (partition, met) = self.context.data().read_partition_counted(
            self.schema,
            self.table,
            read,
            self.consistency,
            self.now,
        )?;
        let token = read.partition.token.0;
        let label = || format!("token={token}");
        self.absorb(met, label, || read_thresholds::partition_bytes(&partition))?;
        self.note_tokens(ReadTokens::Partitions(vec![token]));
        Ok(partition)
    }

    /// `first`: nothing of this partition was read before, so a live static
    /// row without rows stands for the partition (a resumed read that finds
    /// no more rows must not add it).
    fn partition_read(
        &self,
        key: &[u8],
        slices: Vec<Slice>,
        limit: usize,
        first: bool,
    ) -> Result<Vec<CqlRow>> {
        let read = PartitionRead {
            table: self.table.storage_id,
            partition: PartitionKey::new(key.to_vec()),
            slices,
            reversed: self.reversed,
            include_static: true,
            row_limit: limit,
        };
        let partition = self.read_partition(&read)?;
        partition_rows_owned(
            self.table,
            partition,
            self.now,
            self.include_static_only && first,
        )
    }

    fn read_keys(
        &self,
        keys: &[Vec<Vec<u8>>],
        state: &PagingState,
        want: usize,
    ) -> Result<(Vec<CqlRow>, Option<PagingState>)> {
        let mut rows = Vec::new();
        let mut index = state.partition_index as usize;
        let mut position = state.position.clone();
        while index < keys.len() {
            let key = partition_key_bytes(&keys[index]);
            let mut resume = KeyResume {
                slices: self.restrictions.slices.clone(),
                in_partition: 0,
                first: true,
            };
            if let Some(p) = position.take().filter(|p| p.partition == key) {
                let Some(c) = &p.clustering else {
                    // The static-only row was returned: nothing more here.
                    index += 1;
                    continue;
                };
                resume = KeyResume {
                    slices: slices_after(self.table, &resume.slices, c, self.reversed),
                    in_partition: p.rows_in_partition as usize,
                    first: false,
                };
            }
            let last_key = index + 1 == keys.len();
            if let Some(next) = self.read_key(index, &key, resume, &mut rows, want)? {
                return Ok((rows, next.state(last_key)));
            }
            index += 1;
        }
        Ok((rows, None))
    }

    /// Reads the rows of the `index`th partition of a key list into `rows`,
    /// in batches; returns where the next page starts when the page fills
    /// up.
    fn read_key(
        &self,
        index: usize,
        key: &[u8],
        resume: KeyResume,
        rows: &mut Vec<CqlRow>,
        want: usize,
    ) -> Result<Option<FullPage>> {
        let KeyResume {
            mut slices,
            mut in_partition,
            mut first,
        } = resume;
        let limited = self.per_partition_limit > 0;
        let filtering =
            !self.restrictions.filters.is_empty() || !self.restrictions.tuple_filters.is_empty();
        loop {
            let remaining_pp = match limited {
                true => self.per_partition_limit.saturating_sub(in_partition),
                false => usize::MAX,
            };
            if remaining_pp == 0 || slices.is_empty() {
                return Ok(None);
            }
            let batch = (want - rows.len())
                .min(READ_BATCH_ROWS)
                .min(remaining_pp)
                .max(1);
            let limit = if filtering { READ_BATCH_ROWS } else { batch };
            self.check_deadline()?;
            let got = self.partition_read(key, slices.clone(), limit, first)?;
            first = false;
            let exhausted = got.len() < limit || got.iter().any(|r| r.clustering.is_none());
            let mut last: Option<Vec<Vec<u8>>> = None;
            for row in got {
                last = row.clustering.clone();
                if !self.accept(&row)? {
                    continue;
                }
                in_partition += 1;
                // A static-only row or the only row a partition can hold.
                let only_row = row.clustering.is_none() || self.table.clustering_count == 0;
                rows.push(row);
                let partition_full = limited && in_partition >= self.per_partition_limit;
                if rows.len() >= want {
                    if only_row || partition_full {
                        return Ok(Some(FullPage::AfterPartition(index)));
                    }
                    return Ok(Some(FullPage::Within(PagingState {
                        rows_so_far: 0,
                        partition_index: index as u32,
                        position: Some(Position {
                            partition: key.to_vec(),
                            clustering: rows.last().and_then(|r| r.clustering.clone()),
                            rows_in_partition: in_partition as u32,
                        }),
                    })));
                }
                if partition_full {
                    break;
                }
            }
            match last {
                Some(c) if !exhausted => {
                    slices = slices_after(self.table, &slices, &c, self.reversed)
                }
                _ => return Ok(None),
            }
        }
    }

    fn read_range(
        &self,
        start: Option<(Token, bool)>,
        end: Option<(Token, bool)>,
        state: &PagingState,
        want: usize,
    ) -> Result<(Vec<CqlRow>, Option<PagingState>)> {
        let Some((token_start, token_end)) = token_bounds(start, end) else {
            return Ok((Vec::new(), None));
        };
        let mut resume = state.position.as_ref().map(|p| ScanPosition {
            partition: PartitionKey::new(p.partition.clone()),
            clustering: p.clustering.clone(),
            rows_returned_in_partition: p.rows_in_partition as usize,
        });
        let mut rows: Vec<CqlRow> = Vec::new();
        // Rows returned so far in the partition the scan stopped in: the
        // PER PARTITION LIMIT counts rows that passed the filters, so with
        // filters it is applied here, not by the storage scan.
        let mut carried: Option<(PartitionKey, usize)> = resume
            .as_ref()
            .map(|r| (r.partition.clone(), r.rows_returned_in_partition));
        loop {
            let scan = self.range_scan((token_start, token_end), resume.clone(), want - rows.len());
            self.check_deadline()?;
            let (page, met) = self.context.data().scan_counted(
                self.schema,
                self.table,
                &scan,
                self.consistency,
                self.now,
            )?;
            let range = (scan.token_start.0, scan.token_end.0);
            let label = || {
                let (start, end) = cassandra_range(range.0, range.1);
                format!("token range: ({start}, {end}]")
            };
            let bytes = || {
                page.partitions
                    .iter()
                    .map(read_thresholds::partition_bytes)
                    .sum()
            };
            self.absorb(met, label, bytes)?;
            self.note_tokens(ReadTokens::Range(range.0, range.1));
            for partition in &page.partitions {
                let already = match &carried {
                    Some((key, count)) if *key == partition.key => *count,
                    _ => 0,
                };
                let (in_partition, full) = self.keep_rows(partition, already, &mut rows, want)?;
                if full {
                    let state = self.full_page_state(&rows, in_partition);
                    return Ok((rows, Some(state)));
                }
                carried = Some((partition.key.clone(), in_partition));
            }
            match page.next {
                Some(n) => resume = Some(n),
                None => return Ok((rows, None)),
            }
        }
    }

    /// Whether a range read filters its rows here (regular-column filters or
    /// clustering restrictions), reading full batches from storage.
    fn range_filtering(&self) -> bool {
        !self.restrictions.filters.is_empty() || self.restrictions.clustering_restricted
    }

    /// The storage scan of one batch of a range read, `missing` rows short
    /// of the page.
    fn range_scan(
        &self,
        (token_start, token_end): (Token, Token),
        resume_after: Option<ScanPosition>,
        missing: usize,
    ) -> RangeScan {
        let filtering = self.range_filtering();
        RangeScan {
            table: self.table.storage_id,
            token_start,
            token_end,
            resume_after,
            include_static: true,
            per_partition_limit: if self.distinct {
                1
            } else if filtering {
                0
            } else {
                self.per_partition_limit
            },
            row_limit: if filtering {
                READ_BATCH_ROWS
            } else {
                missing.clamp(1, READ_BATCH_ROWS)
            },
        }
    }

    /// A scanned partition's CQL rows (DISTINCT: its first row, or its
    /// static row, without clustering).
    fn scanned_rows(&self, partition: &Partition) -> Result<Vec<CqlRow>> {
        let now = self.now;
        let mut rows = partition_rows(self.table, partition, now, self.include_static_only)?;
        if !self.distinct {
            return Ok(rows);
        }
        if rows.is_empty() && partition.static_row.as_ref().is_some_and(|s| s.exists()) {
            rows = partition_rows(self.table, partition, now, true)?;
        }
        rows.truncate(1);
        if let Some(r) = rows.first_mut() {
            r.clustering = None;
        }
        Ok(rows)
    }

    /// Adds to `rows` the rows of `partition` that pass the clustering
    /// slices, the filters and PER PARTITION LIMIT (`already` of them were
    /// returned before), stopping once a row makes `want`; returns the
    /// partition's count and whether the page is full.
    fn keep_rows(
        &self,
        partition: &Partition,
        already: usize,
        rows: &mut Vec<CqlRow>,
        want: usize,
    ) -> Result<(usize, bool)> {
        let mut in_partition = already;
        for row in self.scanned_rows(partition)? {
            if !self.in_clustering_slices(&row) || !self.accept(&row)? {
                continue;
            }
            if self.per_partition_limit > 0 && in_partition >= self.per_partition_limit {
                continue;
            }
            in_partition += 1;
            rows.push(row);
            if rows.len() >= want {
                return Ok((in_partition, true));
            }
        }
        Ok((in_partition, false))
    }

    /// Whether `row` is inside the clustering slices of a query that
    /// restricts clustering columns (always, when it does not).
    fn in_clustering_slices(&self, row: &CqlRow) -> bool {
        !self.restrictions.clustering_restricted
            || row.clustering.as_ref().is_some_and(|c| {
                self.restrictions
                    .slices
                    .iter()
                    .any(|s| in_slice(self.table, c, s))
            })
    }

    /// The paging state after a full page ending with `rows`' last row. A
    /// full page always carries one, as in Cassandra, even when the data
    /// ends exactly there; DISTINCT and static-only rows end their
    /// partition.
    fn full_page_state(&self, rows: &[CqlRow], in_partition: usize) -> PagingState {
        let last = rows
            .last()
            .map(|r| (r.partition.key.clone(), r.clustering.clone()));
        let (pk, clustering) = last.unwrap_or_default();
        PagingState {
            rows_so_far: 0,
            partition_index: 0,
            position: Some(Position {
                partition: pk,
                clustering: if self.distinct { None } else { clustering },
                rows_in_partition: in_partition as u32,
            }),
        }
    }

    /// A token-range query answered from an index (`index::search`): the
    /// candidate rows are the index's entries for the value looked up, in
    /// token, partition key and clustering order (a scan's order); each
    /// base row is re-read, used only while it still holds the value, and
    /// checked against every restriction like a scanned row. Entries the
    /// table no longer backs are skipped and removed.
    fn read_indexed(
        &self,
        query: &IndexQuery,
        start: Option<(Token, bool)>,
        end: Option<(Token, bool)>,
        state: &PagingState,
        want: usize,
    ) -> Result<(Vec<CqlRow>, Option<PagingState>)> {
        let Some((token_start, token_end)) = token_bounds(start, end) else {
            return Ok((Vec::new(), None));
        };
        let per_partition = query.per_partition(self.table);
        let mut progress = IndexedProgress::default();
        let mut from = search::token_start(token_start);
        if let Some(p) = &state.position {
            let key = PartitionKey::new(p.partition.clone());
            progress.carried = Some((key.clone(), p.rows_in_partition as usize));
            from = match (&p.clustering, per_partition) {
                (Some(_), true) => {
                    progress.resume_in_partition = Some(p.clone());
                    search::partition_start(&key)
                }
                (clustering, _) => query.after(self.table, &key, clustering.as_deref()),
            };
        }
        let to = search::token_end(token_end);
        loop {
            self.check_deadline()?;
            let (entries, tombstones) = query.read_entries(
                self.context,
                self.schema,
                self.table,
                self.consistency,
                self.now,
                &from,
                &to,
                READ_BATCH_ROWS,
            )?;
            let label = || {
                let (start, end) = cassandra_range(token_start.0, token_end.0);
                format!("token range: ({start}, {end}]")
            };
            self.absorb(tombstones, label, || 0)?;
            let exhausted = entries.len() < READ_BATCH_ROWS;
            if let Some(last) = entries.last() {
                from = search::after_entry(last);
            }
            let mut full = None;
            for group in entries.chunk_by(|a, b| a.partition == b.partition) {
                full = if per_partition {
                    self.answer_partition(query, group, &mut progress, want)?
                } else {
                    self.answer_rows(query, group, &mut progress, want)?
                };
                if full.is_some() {
                    break;
                }
            }
            let stale = std::mem::take(&mut progress.stale);
            query.clean(
                self.context,
                self.schema,
                self.table,
                self.consistency,
                self.now,
                &stale,
            );
            if full.is_some() || exhausted {
                return Ok((progress.rows, full));
            }
        }
    }

    /// The partition of one group of entries (all of one partition), read
    /// at the rows they name and its static row, with its CQL rows.
    fn read_entry_rows(&self, group: &[search::Entry]) -> Result<(Partition, Vec<CqlRow>)> {
        let mut slices: Vec<Slice> = Vec::new();
        for entry in group {
            if let Some(c) = &entry.row {
                if slices.last().is_none_or(|s| s.start.prefix != *c) {
                    slices.push(Slice::prefix(c.clone()));
                }
            }
        }
        let read = PartitionRead {
            table: self.table.storage_id,
            partition: group[0].partition.clone(),
            slices,
            reversed: false,
            include_static: true,
            row_limit: 0,
        };
        let partition = self.read_partition(&read)?;
        let rows = partition_rows(self.table, &partition, self.now, false)?;
        Ok((partition, rows))
    }

    /// The rows behind one partition's entries of a row-level index.
    fn answer_rows(
        &self,
        query: &IndexQuery,
        group: &[search::Entry],
        progress: &mut IndexedProgress,
        want: usize,
    ) -> Result<Option<PagingState>> {
        let key = &group[0].partition;
        let mut count = progress.rows_in(key);
        if self.per_partition_limit > 0 && count >= self.per_partition_limit {
            return Ok(None);
        }
        let (partition, rows) = self.read_entry_rows(group)?;
        // `rows` follows `partition.rows`, one for one.
        let position: std::collections::HashMap<&[Vec<u8>], usize> = partition
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.clustering.as_slice(), i))
            .collect();
        for entry in group {
            let duplicate = progress
                .answered
                .as_ref()
                .is_some_and(|(k, c)| k == key && *c == entry.row);
            if duplicate {
                continue;
            }
            let found = match &entry.row {
                Some(c) => position.get(c.as_slice()).copied(),
                None => None,
            };
            let live = match (&entry.row, found) {
                (Some(_), Some(i)) => Some(&partition.rows[i].content),
                (Some(_), None) => None,
                (None, _) => partition.static_row.as_ref(),
            };
            if !query.is_current(self.table, entry, live) {
                progress.stale.push(entry.clone());
                continue;
            }
            progress.answered = Some((key.clone(), entry.row.clone()));
            let row = match found {
                Some(i) => Some(rows[i].clone()),
                None if count == 0 => self.static_only_row(&partition)?,
                None => None,
            };
            let Some(row) = row else { continue };
            if !self.in_clustering_slices(&row) || !self.accept(&row)? {
                continue;
            }
            count += 1;
            progress.carried = Some((key.clone(), count));
            let clustering = row.clustering.clone();
            progress.rows.push(row);
            if progress.rows.len() >= want {
                return Ok(Some(PagingState {
                    rows_so_far: 0,
                    partition_index: 0,
                    position: Some(Position {
                        partition: key.key.clone(),
                        clustering,
                        rows_in_partition: count as u32,
                    }),
                }));
            }
            if self.per_partition_limit > 0 && count >= self.per_partition_limit {
                break;
            }
        }
        Ok(None)
    }

    /// The row standing for a partition with only static data (an index on
    /// a partition key component found its static row), when the query
    /// returns such rows and the partition has no live row.
    fn static_only_row(&self, partition: &Partition) -> Result<Option<CqlRow>> {
        if !self.include_static_only {
            return Ok(None);
        }
        let any_row = PartitionRead {
            table: self.table.storage_id,
            partition: partition.key.clone(),
            slices: vec![Slice::all()],
            reversed: false,
            include_static: false,
            row_limit: 1,
        };
        let rows = self.read_partition(&any_row)?;
        if !rows.rows.is_empty() {
            return Ok(None);
        }
        let static_only = Partition {
            key: partition.key.clone(),
            static_row: partition.static_row.clone(),
            rows: Vec::new(),
        };
        Ok(partition_rows(self.table, &static_only, self.now, true)?
            .into_iter()
            .next())
    }

    /// The rows of one partition found through an index with an entry per
    /// partition (a static column): all of them that the query selects,
    /// while the static row still holds the value.
    fn answer_partition(
        &self,
        query: &IndexQuery,
        group: &[search::Entry],
        progress: &mut IndexedProgress,
        want: usize,
    ) -> Result<Option<PagingState>> {
        let key = &group[0].partition;
        if progress.answered.as_ref().is_some_and(|(k, _)| k == key) {
            return Ok(None);
        }
        let static_row = PartitionRead {
            table: self.table.storage_id,
            partition: key.clone(),
            slices: Vec::new(),
            reversed: false,
            include_static: true,
            row_limit: 0,
        };
        let partition = self.read_partition(&static_row)?;
        let mut current = false;
        for entry in group {
            if query.is_current(self.table, entry, partition.static_row.as_ref()) {
                current = true;
            } else {
                progress.stale.push(entry.clone());
            }
        }
        if !current {
            return Ok(None);
        }
        progress.answered = Some((key.clone(), None));
        let position = progress
            .resume_in_partition
            .take()
            .filter(|p| p.partition == key.key);
        let state = PagingState {
            rows_so_far: 0,
            partition_index: 0,
            position,
        };
        let components = crate::rows::partition_components(self.table, &key.key)?;
        let (rows, next) = self.read_keys(&[components], &state, want - progress.rows.len())?;
        progress.rows.extend(rows);
        if progress.rows.len() < want {
            return Ok(None);
        }
        let position = match next {
            Some(PagingState {
                partition_index: 0,
                position: Some(p),
                ..
            }) => p,
            // The partition is done.
            _ => Position {
                partition: key.key.clone(),
                clustering: None,
                rows_in_partition: 0,
            },
        };
        Ok(Some(PagingState {
            rows_so_far: 0,
            partition_index: 0,
            position: Some(position),
        }))
    }
}

fn in_slice(table: &Table, clustering: &[Vec<u8>], slice: &Slice) -> bool {
    use std::cmp::Ordering;
    compare_to_bound(table, clustering, &slice.start, true) == Ordering::Greater
        && compare_to_bound(table, clustering, &slice.end, false) == Ordering::Less
}

/// How many partitions a SELECT with its partition key restricted by `IN`
/// reads; None without such an `IN`.
fn partition_keys_in(table: &Table, select: &Select, restrictions: &Restrictions) -> Option<usize> {
    match &restrictions.partition {
        PartitionSelection::Keys(keys) if partition_key_in(table, &select.where_clause) => {
            Some(keys.len())
        }
        _ => None,
    }
}

/// Whether a partition key column is restricted by `IN`.
fn partition_key_in(table: &Table, relations: &[rocksandra_cql::ast::Relation]) -> bool {
    use rocksandra_cql::ast::{Operator, Relation, RelationLhs};
    relations.iter().any(|r| {
        // An IN of one value is an `=` to Cassandra.
        let single = |rhs: &Expr| matches!(rhs, Expr::Tuple(values) if values.len() == 1);
        matches!(r, Relation::Compare { lhs: RelationLhs::Column(c), op: Operator::In, rhs }
            if !single(rhs)
                && table.column(c.as_str()).is_some_and(|c| c.kind == ColumnKind::PartitionKey))
    })
}

pub fn execute(
    context: &StatementCtx<'_>,
    select: &Select,
    request: &Request,
    values: &[rocksandra_wire::Value],
) -> Result<Outcome> {
    // A read a replica refused past a threshold names the query.
    execute_select(context, select, request, values)
        .map_err(|e| read_thresholds::named(e, &select.to_string()))
}

/// A SELECT from its statement to its answer: the table, the selection and
/// the restrictions resolved, the guardrails and refusals applied, then the
/// read shaped and answered.
fn execute_select(
    context: &StatementCtx<'_>,
    select: &Select,
    request: &Request,
    values: &[rocksandra_wire::Value],
) -> Result<Outcome> {
    let schema = context.schema();
    let keyspace = crate::schema::keyspace_of(&select.table, request.keyspace.as_deref())?;
    let table = schema
        .lookup_table(keyspace, select.table.name.as_str())?
        .clone();
    let random = context.env.random.clone();
    let ctx = context.eval_context(&schema, keyspace, values, &*random);
    let outputs = plan(&table, select, &ctx)?;
    if let Some(ann) = ann::ordering(select)? {
        let limit = limit_value(&select.limit, "[limit]", &ctx)?;
        let aggregate = outputs.iter().any(|o| is_aggregate(&o.sel));
        ann::check_before_values(&table, select, ann, (limit, aggregate), &ctx)?;
    }
    let restrictions = analyze(&table, &select.where_clause, &ctx)?;
    let guardrails = crate::guard::guardrails_for(context, request, Guardrails::guards_select)?;
    let guardrails = guardrails.as_deref();
    let clauses = (&*table, select, &restrictions);
    let mut warnings = statement_guardrails(guardrails, clauses, request)?;
    if let Some(ann) = ann::ordering(select)? {
        let read = (&table, &restrictions, &*schema);
        return execute_ann(context, select, request, read, &outputs, ann, &ctx);
    }
    check_restrictions(&table, select, &restrictions).map_err(|e| {
        if names_filtering_guardrail(&table, select, &restrictions) {
            crate::guard::filtering_refusal(context, e, request)
        } else {
            e
        }
    })?;
    crate::masking::authorize_where(context, request, &table, select)?;
    let shape = Shape::of(context, clauses, request, &outputs, &ctx)?;
    shape_warnings(guardrails, clauses, request, &shape, &mut warnings)?;
    let mut reader = Reader::for_select(
        context,
        &table,
        &restrictions,
        &schema,
        request,
        select.distinct,
        shape.reversed,
        shape.read_per_partition_limit(select.distinct),
    );
    reader.masker = crate::masking::Masker::for_read(context, request, &table, &ctx)?;
    let query = (&*table, &outputs[..], select);
    answer_select(context, query, request, &reader, &shape, warnings)
}

/// The guardrails' word on a SELECT before anything is read: a refusal, or
/// the warnings it starts with (none without guardrails).
fn statement_guardrails(
    guardrails: Option<&Guardrails>,
    (table, select, restrictions): (&Table, &Select, &Restrictions),
    request: &Request,
) -> Result<Vec<String>> {
    let Some(g) = guardrails else {
        return Ok(Vec::new());
    };
    let keys_in = partition_keys_in(table, select, restrictions);
    let read = (restrictions, request.consistency);
    crate::guardrails::select_checks(g, select, table, read, keys_in)
}

/// What a SELECT's clauses make of its read (`Shape::of`).
struct Shape {
    group_by: group_by::GroupBy,
    reversed: bool,
    limit: Option<usize>,
    per_partition_limit: Option<usize>,
    grouped: bool,
    aggregate: bool,
    /// ORDER BY over several IN partitions: sorted after the read.
    post_ordering: bool,
}

impl Shape {
    /// Decides the read's shape from GROUP BY, ORDER BY, LIMIT, PER
    /// PARTITION LIMIT and the selection's aggregates.
    fn of(
        context: &StatementCtx<'_>,
        (table, select, restrictions): (&Table, &Select, &Restrictions),
        request: &Request,
        outputs: &[Output],
        ctx: &EvalContext<'_>,
    ) -> Result<Shape> {
        let replica = || (context.node().broadcast_address, request.consistency);
        let group_by = group_by::plan(table, select, ctx, &replica)?;
        let reversed = order_by_reversal(table, select, restrictions, request)?;
        let limit = limit_value(&select.limit, "[limit]", ctx)?;
        let per_partition_limit =
            limit_value(&select.per_partition_limit, "[per_partition_limit]", ctx)?;
        let grouped = group_by.is_grouped();
        let aggregate = grouped || outputs.iter().any(|o| is_aggregate(&o.sel));
        // ORDER BY over several IN partitions: rows are sorted across
        // partitions after the read (which is never paged), so LIMIT applies
        // after the sort; each partition gives at most LIMIT rows.
        let post_ordering = !select.order_by.is_empty()
            && matches!(&restrictions.partition, PartitionSelection::Keys(keys) if keys.len() > 1);
        Ok(Shape {
            group_by,
            reversed,
            limit,
            per_partition_limit,
            grouped,
            aggregate,
            post_ordering,
        })
    }

    /// Decides how many rows the reader takes from each partition
    /// (`read_per_partition_limit`).
    fn read_per_partition_limit(&self, distinct: bool) -> usize {
        read_per_partition_limit(
            distinct,
            self.grouped,
            self.post_ordering,
            self.per_partition_limit,
            self.limit,
        )
    }
}

/// The warnings the read's shape adds: the paging guardrail (LIMIT counts
/// only when rows are not sorted after the read) and the aggregation
/// warnings.
fn shape_warnings(
    guardrails: Option<&Guardrails>,
    (table, select, restrictions): (&Table, &Select, &Restrictions),
    request: &Request,
    shape: &Shape,
    warnings: &mut Vec<String>,
) -> Result<()> {
    if let Some(g) = guardrails {
        let read_limit = shape.limit.filter(|_| !shape.post_ordering);
        let page_size = request.page_size;
        warnings.extend(crate::guardrails::paged_select(
            g,
            page_size,
            read_limit,
            shape.aggregate,
            &table.name,
        )?);
    }
    if shape.aggregate {
        warnings.extend(aggregation_warnings(select, restrictions));
    }
    Ok(())
}

/// Decides how a SELECT is answered: an aggregate folded over every row,
/// the groups of a GROUP BY page, an unpaged read a batch at a time, or one
/// page of rows.
fn answer_select(
    context: &StatementCtx<'_>,
    query: (&Table, &[Output], &Select),
    request: &Request,
    reader: &Reader<'_>,
    shape: &Shape,
    warnings: Vec<String>,
) -> Result<Outcome> {
    if shape.aggregate && !shape.grouped && !shape.post_ordering {
        return execute_aggregate(context, query, request, reader, warnings);
    }
    let window = PageWindow::of(request, shape.aggregate, shape.grouped, shape.limit)?;
    if shape.grouped && !shape.post_ordering {
        let window = aggregate::GroupWindow {
            group_by: &shape.group_by,
            per_partition: shape.per_partition_limit,
            offset: window.state.partition_index as usize,
            already: window.already,
            limit: shape.limit,
            remaining_limit: window.remaining_limit,
            page_size: request.page_size.filter(|p| *p > 0),
        };
        return execute_grouped(context, query, request, (reader, &window), warnings);
    }
    // Virtual tables are built whole on each read: read them at once.
    let (table, _, _) = query;
    let batched = !table.is_virtual && !shape.aggregate && !shape.grouped && !shape.post_ordering;
    if window.page_size.is_none() && batched {
        let want = rows_wanted(None, window.remaining_limit);
        return execute_unpaged(
            context,
            query,
            request,
            (reader, window.state, want),
            warnings,
        );
    }
    let page = Page { window, shape };
    answer_page(context, query, request, reader, &page, warnings)
}

/// How a page of a SELECT is read and answered (`answer_page`).
struct Page<'a> {
    window: PageWindow,
    shape: &'a Shape,
}

/// Reads one page of rows and builds its result: rows sorted across
/// partitions when asked, groups of a GROUP BY sorted after the read, the
/// paging state of the next page.
fn answer_page(
    context: &StatementCtx<'_>,
    (table, outputs, select): (&Table, &[Output], &Select),
    request: &Request,
    reader: &Reader<'_>,
    page: &Page<'_>,
    warnings: Vec<String>,
) -> Result<Outcome> {
    let shape = page.shape;
    let (mut rows, next) = read_page(reader, page)?;
    let mut warnings = warnings;
    let live = rows.len();
    check_reads(context, reader, (live, select), request, &mut warnings)?;
    // GROUP BY groups each partition's rows as read, then sorts the groups.
    if shape.post_ordering && !shape.grouped {
        let keep = page.window.remaining_limit.filter(|_| !shape.aggregate);
        let columns = order_by_prefix(table, select);
        sort_across_partitions(table, &mut rows, (shape.reversed, columns), keep);
    }
    if rows.len() > UNPAGED_ROWS_MAX {
        return Err(QueryError::invalid(format!(
            "Query returned more than {UNPAGED_ROWS_MAX} rows without paging"
        )));
    }
    let page_rows = if shape.grouped {
        grouped_page(table, outputs, request, &rows, page)?
    } else {
        let (query, read) = ((table, outputs), (&rows[..], next));
        rows_page(query, (request, reader), read, page, &mut warnings)?
    };
    answer((table, outputs, select), request, page_rows, warnings)
}

/// Reads a page's rows and the reader's next position: none when the page
/// wants no row; a GROUP BY page from the start (its pages count groups),
/// any other from the client's paging state.
fn read_page(reader: &Reader<'_>, page: &Page<'_>) -> Result<(Vec<CqlRow>, Option<PagingState>)> {
    let (window, shape) = (&page.window, page.shape);
    let want = rows_wanted(window.page_size, window.remaining_limit);
    if want == 0 {
        return Ok((Vec::new(), None));
    }
    let from_start = PagingState::default();
    let start = if shape.grouped {
        &from_start
    } else {
        &window.state
    };
    let rows = rows_to_read(want, shape.aggregate, shape.post_ordering);
    reader.read(start, rows)
}

/// A GROUP BY page's result rows (`grouped_rows`) and the paging state of
/// the next page, which counts groups.
fn grouped_page(
    table: &Table,
    outputs: &[Output],
    request: &Request,
    rows: &[CqlRow],
    page: &Page<'_>,
) -> Result<(ResultRows, Option<Bytes>)> {
    let (window, shape) = (&page.window, page.shape);
    let groups = GroupPaging {
        state: &window.state,
        limit: shape.limit,
        remaining_limit: window.remaining_limit,
        page_size: request.page_size.filter(|p| *p > 0),
    };
    let sort = shape.post_ordering.then_some(shape.reversed);
    let (result_rows, group_state) = grouped_rows(
        table,
        outputs,
        (rows, sort),
        &shape.group_by,
        shape.per_partition_limit,
        &groups,
    )?;
    Ok((result_rows, group_state.map(|s| s.encode())))
}

/// A page's result rows without GROUP BY (within the result size
/// thresholds) and the paging state of the next page: none once LIMIT is
/// reached, nor for an unpaged query.
fn rows_page(
    (table, outputs): (&Table, &[Output]),
    (request, reader): (&Request, &Reader<'_>),
    (rows, next): (&[CqlRow], Option<PagingState>),
    page: &Page<'_>,
    warnings: &mut Vec<String>,
) -> Result<(ResultRows, Option<Bytes>)> {
    let (window, shape) = (&page.window, page.shape);
    let returned = window.already + rows.len();
    let next =
        next.filter(|_| window.page_size.is_some() && shape.limit.is_none_or(|l| returned < l));
    let result_rows = selected_rows(table, outputs, rows, shape.aggregate)?;
    check_result_size(reader, table, request, &result_rows, warnings)?;
    let paging_state = next.map(|mut s| {
        s.rows_so_far = returned as u64;
        s.encode()
    });
    Ok((result_rows, paging_state))
}

/// An aggregate without GROUP BY (`aggregate`): one row, folded over
/// every row the query selects a batch at a time.
fn execute_aggregate(
    context: &StatementCtx<'_>,
    query: (&Table, &[Output], &Select),
    request: &Request,
    reader: &Reader<'_>,
    warnings: Vec<String>,
) -> Result<Outcome> {
    let (row, read) = aggregate::fold(query.0, query.1, reader)?;
    rows_outcome(
        context,
        query,
        (request, reader),
        read,
        (vec![row], None),
        warnings,
    )
}

/// The column's ANN graph (`index::vector`) when it can answer: a node
/// alone, a query without WHERE clause, a graph built and within its
/// limits. Otherwise None (the query is ranked by scan) and, on a node
/// alone, the graph's build is started if it is not under way.
fn ann_graph(
    context: &StatementCtx<'_>,
    table: &Arc<Table>,
    restrictions: &Restrictions,
    ranking: &ann::Ranking,
    now: rocksandra_data::LocalTime,
) -> Option<Arc<crate::index::vector::Graph>> {
    if context.is_clustered() || !ann::unrestricted(restrictions) {
        return None;
    }
    let column = ranking.column_id(table);
    let graphs = &context.vector_graphs;
    let graph = graphs.usable(table.storage_id, column);
    if graph.is_none() {
        graphs.start_build(context.engine.clone(), table.clone(), column, now);
    }
    graph
}

/// In a cluster, an ANN query without WHERE clause answered by one
/// replica per token range from its graph (`DataProxy::ann_top`), the
/// replies ranked here; None where that path is not open (a node alone, a
/// WHERE clause, peers too old), for the query to be ranked as before.
fn ann_replicas(
    context: &StatementCtx<'_>,
    (table, restrictions, schema): (&Arc<Table>, &Restrictions, &Schema),
    (ranking, consistency): (&ann::Ranking, rocksandra_wire::Consistency),
    now: rocksandra_data::LocalTime,
) -> Result<Option<Vec<CqlRow>>> {
    if !context.is_clustered() || !ann::unrestricted(restrictions) {
        return Ok(None);
    }
    let query = ranking.query(table);
    match context
        .data()
        .ann_top(schema, table, &query, consistency, now)?
    {
        Some(replies) => ranking.top_of_replies(table, replies, now).map(Some),
        None => Ok(None),
    }
}

/// A GROUP BY query's page (`aggregate::fold_groups`): its groups folded
/// as the rows come, read from the start (pages count groups).
fn execute_grouped(
    context: &StatementCtx<'_>,
    query: (&Table, &[Output], &Select),
    request: &Request,
    (reader, window): (&Reader<'_>, &aggregate::GroupWindow<'_>),
    warnings: Vec<String>,
) -> Result<Outcome> {
    let (rows, next, read) = aggregate::fold_groups(query.0, query.1, reader, window)?;
    let page = (rows, next.map(|s| s.encode()));
    rows_outcome(context, query, (request, reader), read, page, warnings)
}

/// An unpaged SELECT without aggregates, GROUP BY or ORDER BY across
/// partitions: up to `want` rows read a batch at a time, each batch turned
/// into result rows before the next is read, so the node holds the result
/// and one batch rather than every row read whole (`SELECT k` of a table of
/// large values holds the keys).
fn execute_unpaged(
    context: &StatementCtx<'_>,
    query: (&Table, &[Output], &Select),
    request: &Request,
    (reader, mut state, want): (&Reader<'_>, PagingState, usize),
    warnings: Vec<String>,
) -> Result<Outcome> {
    let mut result = Vec::new();
    let mut read = 0usize;
    let mut batch = BatchSize::new();
    while read < want {
        let (rows, next) = reader.read(&state, batch.rows().min(want - read))?;
        batch.after(&rows);
        read += rows.len();
        result.extend(selected_rows(query.0, query.1, &rows, false)?);
        match next {
            Some(next) => state = next,
            None => break,
        }
    }
    rows_outcome(
        context,
        query,
        (request, reader),
        read,
        (result, None),
        warnings,
    )
}

/// A SELECT's answer once its rows are computed: the tombstone check over
/// the `read` rows the reader met, SELECT JSON, the metadata and warnings.
fn rows_outcome(
    context: &StatementCtx<'_>,
    (table, outputs, select): (&Table, &[Output], &Select),
    (request, reader): (&Request, &Reader<'_>),
    read: usize,
    (rows, paging_state): (ResultRows, Option<Bytes>),
    mut warnings: Vec<String>,
) -> Result<Outcome> {
    check_reads(context, reader, (read, select), request, &mut warnings)?;
    check_result_size(reader, table, request, &rows, &mut warnings)?;
    let query = (table, outputs, select);
    answer(query, request, (rows, paging_state), warnings)
}

/// A SELECT's answer from its result rows: as JSON for SELECT JSON, with
/// the metadata (the next page's paging state in it) and the warnings.
fn answer(
    (table, outputs, select): (&Table, &[Output], &Select),
    request: &Request,
    (rows, paging_state): (ResultRows, Option<Bytes>),
    warnings: Vec<String>,
) -> Result<Outcome> {
    let rows = if select.json {
        json_rows(outputs, rows)?
    } else {
        rows
    };
    let mut outcome = Outcome::rows(Rows {
        metadata: result_metadata(table, outputs, select.json, request, paging_state),
        rows,
    });
    outcome.warnings = warnings;
    Ok(outcome)
}

/// The thresholds' word on what the statement's reads met: with
/// `read_thresholds_enabled`, Cassandra's warnings per read from the
/// replicas' reports (`read_thresholds.rs`); without, the tombstone
/// warning or failure of this node's reads (`tombstones.rs`).
fn check_reads(
    context: &StatementCtx<'_>,
    reader: &Reader<'_>,
    (live, select): (usize, &Select),
    request: &Request,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let Some(state) = &reader.thresholds else {
        let tombstones = reader.tombstones.get();
        let checked = context.check_tombstones(tombstones, live, select, request.consistency)?;
        warnings.extend(checked);
        return Ok(());
    };
    let reports = state.reports.borrow();
    if reports.is_empty() {
        return Ok(());
    }
    let cql = select.to_string();
    for (tokens, report) in reports.iter() {
        warnings.extend(report.warnings(&cql, tokens));
    }
    Ok(())
}

/// `coordinator_read_size_*` over the rows the statement returns
/// (`read_thresholds::ResultSize`): READ_FAILURE naming this node past the
/// fail threshold, a warning past the warn threshold.
fn check_result_size(
    reader: &Reader<'_>,
    table: &Table,
    request: &Request,
    rows: &ResultRows,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let Some(state) = &reader.thresholds else {
        return Ok(());
    };
    let Some(thresholds) = state.thresholds.coordinator_size() else {
        return Ok(());
    };
    let mut size = ResultSize::new(thresholds);
    let name = format!("{}.{}", table.keyspace, table.name);
    for row in rows {
        if let Err(fail) = size.before_row() {
            let text = format!(
                "{} with {}",
                read_thresholds::result_size_fail_text(&name, fail),
                state.tokens.borrow()
            );
            tracing::warn!("{text}");
            let counts = FailureCounts {
                consistency: request.consistency,
                received: 0,
                block_for: 1,
            };
            let node = reader.context.node().broadcast_address;
            let reasons = vec![(node, read_thresholds::READ_SIZE)];
            return Err(read_thresholds::read_failure(text, counts, reasons));
        }
        size.add(row.iter().flatten().map(|v| v.len() as u64).sum());
    }
    if let Some(warn) = size.past_warn() {
        let text = read_thresholds::result_size_warn_text(&name, warn);
        tracing::warn!("{text}");
        warnings.push(format!("{text} with {}", state.tokens.borrow()));
    }
    Ok(())
}

/// Cassandra's refusal of a query that would filter without ALLOW FILTERING.
const ALLOW_FILTERING_MESSAGE: &str = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";

/// An ANN query (`ann`): the best rows by similarity, in one page.
fn execute_ann(
    context: &StatementCtx<'_>,
    select: &Select,
    request: &Request,
    (table, restrictions, schema): (&Arc<Table>, &Restrictions, &Schema),
    outputs: &[Output],
    ann: (&str, &Expr),
    ctx: &EvalContext<'_>,
) -> Result<Outcome> {
    let limit = limit_value(&select.limit, "[limit]", ctx)?;
    let aggregate = outputs.iter().any(|o| is_aggregate(&o.sel));
    let ranking = ann::plan(table, select, restrictions, ann, (limit, aggregate), ctx)
        .map_err(|e| ann::replica_refusal(context.node().broadcast_address, e))?;
    crate::masking::authorize_where(context, request, table, select)?;
    let warnings = ann::warnings(request, ranking.limit);
    let at_one = Request {
        consistency: ann::run_at(request.consistency),
        ..request.clone()
    };
    let reader = Reader::for_select(
        context,
        table,
        restrictions,
        schema,
        &at_one,
        false,
        false,
        usize::MAX,
    );
    let now = context.local_now(request);
    // Ranked by the clear vectors, then masked for the user.
    let run_at = (&ranking, at_one.consistency);
    let mut rows = match ann_replicas(context, (table, restrictions, schema), run_at, now)? {
        Some(rows) => rows,
        None => match ann_graph(context, table, restrictions, &ranking, now) {
            Some(graph) => ranking.top_rows_from(&graph, &reader)?,
            None => ranking.top_rows(&reader)?,
        },
    };
    if let Some(masker) = crate::masking::Masker::for_read(context, request, table, ctx)? {
        masker.mask(&mut rows)?;
    }
    let read = rows.len();
    let result_rows = selected_rows(table, outputs, &rows, aggregate)?;
    let query = (&**table, outputs, select);
    rows_outcome(
        context,
        query,
        (request, &reader),
        read,
        (result_rows, None),
        warnings,
    )
}

/// Where a page of a SELECT starts and what bounds it.
struct PageWindow {
    /// The client's paging state (ignored by aggregates without GROUP BY).
    state: PagingState,
    /// Rows (or groups) returned by the earlier pages.
    already: usize,
    /// LIMIT minus `already`.
    remaining_limit: Option<usize>,
    /// The page size in rows; None for aggregates and unpaged queries.
    page_size: Option<usize>,
}

impl PageWindow {
    fn of(request: &Request, aggregate: bool, grouped: bool, limit: Option<usize>) -> Result<Self> {
        let state = match &request.paging_state {
            Some(b) if !aggregate || grouped => PagingState::decode(b)?,
            _ => PagingState::default(),
        };
        let already = state.rows_so_far as usize;
        let remaining_limit = limit.map(|l| l.saturating_sub(already));
        let page_size = if aggregate {
            None
        } else {
            request.page_size.filter(|p| *p > 0)
        };
        Ok(PageWindow {
            state,
            already,
            remaining_limit,
            page_size,
        })
    }
}

/// Rows this page may return: the page size, LIMIT's remainder, the
/// smaller of both, or the most an unpaged query returns.
fn rows_wanted(page_size: Option<usize>, remaining_limit: Option<usize>) -> usize {
    match (page_size, remaining_limit) {
        (Some(p), Some(l)) => p.min(l),
        (Some(p), None) => p,
        (None, Some(l)) => l,
        (None, None) => UNPAGED_ROWS_MAX,
    }
}

/// Rows to read for a page of `want`: every row for an aggregate, one more
/// than an unpaged query may return when rows are sorted after the read
/// (so an oversized result is refused), else `want`.
fn rows_to_read(want: usize, aggregate: bool, post_ordering: bool) -> usize {
    if aggregate {
        usize::MAX
    } else if post_ordering {
        UNPAGED_ROWS_MAX.saturating_add(1)
    } else {
        want
    }
}

/// A result's rows: each a value per selected column.
type ResultRows = Vec<Vec<Option<Bytes>>>;

/// How many rows the reader takes from each partition: one for DISTINCT,
/// no limit with GROUP BY (PER PARTITION LIMIT then counts groups), the
/// smaller of PER PARTITION LIMIT and LIMIT when rows are sorted across
/// partitions after the read, else PER PARTITION LIMIT (0 is no limit).
fn read_per_partition_limit(
    distinct: bool,
    grouped: bool,
    post_ordering: bool,
    per_partition_limit: Option<usize>,
    limit: Option<usize>,
) -> usize {
    if distinct {
        1
    } else if grouped {
        0
    } else if post_ordering {
        match (per_partition_limit.unwrap_or(0), limit.unwrap_or(0)) {
            (0, l) | (l, 0) => l,
            (p, l) => p.min(l),
        }
    } else {
        per_partition_limit.unwrap_or(0)
    }
}

/// The result rows of a query without GROUP BY: one aggregate row, or the
/// selection evaluated on each row read.
fn selected_rows(
    table: &Table,
    outputs: &[Output],
    rows: &[CqlRow],
    aggregate: bool,
) -> Result<ResultRows> {
    if aggregate {
        return Ok(vec![aggregate_row(table, outputs, rows)?]);
    }
    rows.iter()
        .map(|r| {
            outputs
                .iter()
                .map(|o| eval_sel(table, &o.sel, r).map(|v| v.map(Bytes::from)))
                .collect()
        })
        .collect()
}

/// At PREPARE: the refusals of a SELECT's WHERE clause, GROUP BY and
/// ORDER BY that need no value (its terms are stand-ins in `ctx`), as
/// Cassandra refuses them when it prepares the statement, in the order
/// `execute_select` makes them, an ANN query's among them
/// (`ann::check_prepared`). `filtering_guardrail`: the guardrails, when
/// `allow_filtering_enabled: false` binds the user preparing it.
pub(crate) fn check_prepared(
    table: &Table,
    select: &Select,
    ctx: &EvalContext<'_>,
    filtering_guardrail: Option<&Guardrails>,
) -> Result<()> {
    debug_assert!(ctx.stand_ins);
    let restrictions = analyze(table, &select.where_clause, ctx)?;
    if let Some(g) = filtering_guardrail {
        crate::guardrails::allow_filtering_keyword(g, select, table)?;
    }
    if let Some(ann) = ann::ordering(select)? {
        let aggregate = plan(table, select, ctx)?
            .iter()
            .any(|o| is_aggregate(&o.sel));
        return ann::check_prepared(table, select, &restrictions, ann, aggregate, ctx);
    }
    check_restrictions(table, select, &restrictions).map_err(|e| match filtering_guardrail {
        Some(_) if names_filtering_guardrail(table, select, &restrictions) => {
            crate::guard::filtering_disabled(e)
        }
        _ => e,
    })?;
    // The replica a grouping function's result names: none before a read.
    let no_replica = || (std::net::Ipv4Addr::UNSPECIFIED.into(), Default::default());
    group_by::plan(table, select, ctx, &no_replica)?;
    order_by_direction(table, select, &restrictions).map(|_| ())
}

/// The refusals of a SELECT's analysed restrictions (other than an ANN
/// query's), at PREPARE and again when it runs.
fn check_restrictions(table: &Table, select: &Select, restrictions: &Restrictions) -> Result<()> {
    ann::refuse_vector_restrictions(table, select)?;
    check_where_clause(table, select, restrictions)
}

/// Whether a refusal for want of ALLOW FILTERING is the one Cassandra words
/// for the `allow_filtering` guardrail's user: filtering on a column
/// outside the primary key, with no index in use. Filtering that only key
/// columns need (clustering columns outside a partition, or out of their
/// prefix), or an index's beside a filter, is refused in the usual words.
fn names_filtering_guardrail(table: &Table, select: &Select, restrictions: &Restrictions) -> bool {
    let non_key_filter = restrictions
        .filters
        .iter()
        .any(|f| !table.columns[f.column].kind.is_primary_key());
    non_key_filter
        && restrictions.clustering_error.is_none()
        && !crate::index::plan::classify(table, &select.where_clause, restrictions).uses_index
}

/// Refuses WHERE clauses Cassandra refuses once the restrictions are known:
/// indexes with a partition key IN or ORDER BY, clustering relations that
/// cannot select slices, filtering without ALLOW FILTERING (unless indexes
/// serve it), `= null` on a regular column and DISTINCT with clustering
/// restrictions.
fn check_where_clause(table: &Table, select: &Select, restrictions: &Restrictions) -> Result<()> {
    let index_use = crate::index::plan::classify(table, &select.where_clause, restrictions);
    if index_use.uses_index && partition_key_in(table, &select.where_clause) {
        return Err(QueryError::invalid(
            "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported",
        ));
    }
    // An index that serves every relation needing filtering stands in for
    // ALLOW FILTERING: the filtered scan below answers the query.
    // An indexed clustering column makes an out-of-prefix clustering
    // restriction a filter rather than an error, as in Cassandra.
    let filtering_allowed = select.allow_filtering || index_use.served;
    let clustering_contains = restrictions.filters.iter().any(|f| {
        matches!(
            f.op,
            rocksandra_cql::ast::Operator::Contains | rocksandra_cql::ast::Operator::ContainsKey
        ) && table.columns[f.column].kind == ColumnKind::Clustering
    });
    if clustering_contains && !filtering_allowed {
        return Err(QueryError::invalid(
            "Clustering columns can only be restricted with CONTAINS with a secondary index or filtering",
        ));
    }
    if restrictions.filters_after_multi_slice
        && (index_use.uses_index || index_use.clustering_indexed)
    {
        return Err(QueryError::invalid(
            "Multi-column slice restrictions cannot be used for filtering.",
        ));
    }
    let gap_lifted = restrictions.clustering_gap && index_use.queriable;
    if let (Some(e), false) = (
        &restrictions.clustering_error,
        filtering_allowed || index_use.clustering_indexed || gap_lifted,
    ) {
        return Err(e.clone());
    }
    if index_use.uses_index && !select.order_by.is_empty() {
        return Err(QueryError::invalid(
            "ORDER BY with 2ndary indexes is not supported, except for ANN queries.",
        ));
    }
    let needs_filtering = restrictions.needs_filtering
        || restrictions.clustering_error.is_some()
        || (restrictions.clustering_restricted
            && matches!(restrictions.partition, PartitionSelection::Tokens { .. }));
    if needs_filtering && !filtering_allowed && !table.is_virtual {
        return Err(QueryError::invalid(ALLOW_FILTERING_MESSAGE));
    }
    if let Some(filter) = restrictions.filters.iter().find(|f| {
        f.op == rocksandra_cql::ast::Operator::Eq
            && f.element_key.is_none()
            && matches!(f.values.as_slice(), [None])
            && !table.columns[f.column].kind.is_primary_key()
    }) {
        return Err(QueryError::invalid(format!(
            "Unsupported null value for column {}",
            table.columns[filter.column].name
        )));
    }
    let regular_filter = restrictions
        .filters
        .iter()
        .any(|f| table.columns[f.column].kind == ColumnKind::Regular);
    if select.distinct && (restrictions.clustering_restricted || regular_filter) {
        return Err(QueryError::invalid(
            "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns.",
        ));
    }
    Ok(())
}

/// Whether ORDER BY reads the partitions backwards: its columns must be a
/// prefix of the clustering columns, all in or all against their declared
/// order, on partitions restricted by EQ or IN (and IN without paging).
fn order_by_reversal(
    table: &Table,
    select: &Select,
    restrictions: &Restrictions,
    request: &Request,
) -> Result<bool> {
    let reversed = order_by_direction(table, select, restrictions)?;
    if let PartitionSelection::Keys(keys) = &restrictions.partition {
        if keys.len() > 1 && request.page_size.is_some() && !select.order_by.is_empty() {
            return Err(QueryError::invalid(
                "Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query",
            ));
        }
    }
    Ok(reversed)
}

/// Whether ORDER BY reverses the clustering order, refusing an ORDER BY
/// Cassandra refuses whatever the request (`order_by_reversal`).
fn order_by_direction(table: &Table, select: &Select, restrictions: &Restrictions) -> Result<bool> {
    if select.order_by.is_empty() {
        return Ok(false);
    }
    if !matches!(restrictions.partition, PartitionSelection::Keys(_)) {
        return Err(QueryError::invalid(
            "ORDER BY is only supported when the partition key is restricted by an EQ or an IN.",
        ));
    }
    let mut direction: Option<bool> = None;
    // The next clustering position ORDER BY may name: columns before it
    // may be skipped only when an equality restricts them.
    let mut next = 0;
    for o in &select.order_by {
        let Some(column) = table.column(o.column.as_str()) else {
            return Err(QueryError::invalid(format!(
                "Order by on unknown column {}",
                o.column.as_str()
            )));
        };
        if column.kind != ColumnKind::Clustering {
            return Err(QueryError::invalid(format!(
                "Order by is currently only supported on the clustered columns of the PRIMARY KEY, got {}",
                column.name
            )));
        }
        while next < column.position && restrictions.clustering_eq.get(next) == Some(&true) {
            next += 1;
        }
        if column.position != next {
            return Err(QueryError::invalid(
                "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY",
            ));
        }
        let desc = match &o.kind {
            OrderingKind::Asc => false,
            OrderingKind::Desc => true,
            OrderingKind::Ann(_) => {
                return Err(QueryError::invalid(
                    "ANN ordering requires a storage-attached index",
                ))
            }
        };
        next += 1;
        let rev = desc != column.descending;
        if let Some(d) = direction {
            if d != rev {
                return Err(QueryError::invalid("Unsupported order by relation"));
            }
        }
        direction = Some(rev);
    }
    Ok(direction.unwrap_or(false))
}

/// How many clustering columns ORDER BY sorts by: up to its last column
/// (the columns it skips are restricted to one value).
fn order_by_prefix(table: &Table, select: &Select) -> usize {
    select
        .order_by
        .iter()
        .filter_map(|o| table.column(o.column.as_str()))
        .map(|c| c.position + 1)
        .max()
        .unwrap_or(0)
}

/// Cassandra's warnings for an aggregation over several partitions (an IN)
/// or without a partition key (a token() restriction counts as one).
fn aggregation_warnings(select: &Select, restrictions: &Restrictions) -> Vec<String> {
    let mut warnings = Vec::new();
    match &restrictions.partition {
        PartitionSelection::Keys(keys) if keys.len() > 1 => warnings
            .push("Aggregation query used on multiple partition keys (IN restriction)".to_string()),
        PartitionSelection::Keys(_) => {}
        PartitionSelection::Tokens { .. }
            if !select.where_clause.iter().any(|r| {
                matches!(
                    r,
                    rocksandra_cql::ast::Relation::Compare {
                        lhs: rocksandra_cql::ast::RelationLhs::Token(_),
                        ..
                    }
                )
            }) =>
        {
            warnings.push("Aggregation query used without partition key".to_string())
        }
        PartitionSelection::Tokens { .. } => {}
    }
    warnings
}

/// Sorts rows of several partitions by the first `columns` clustering
/// columns, those ORDER BY names (ORDER BY over an IN), keeping the read
/// order of rows equal on them, as Cassandra's stable sort does; then keeps
/// the first `keep` (LIMIT's remainder), if given.
fn sort_across_partitions(
    table: &Table,
    rows: &mut Vec<CqlRow>,
    (reversed, columns): (bool, usize),
    keep: Option<usize>,
) {
    fn prefix(row: &CqlRow, columns: usize) -> &[Vec<u8>] {
        let clustering = row.clustering.as_deref().unwrap_or(&[]);
        &clustering[..columns.min(clustering.len())]
    }
    rows.sort_by(|a, b| {
        let o = compare_prefix(table, prefix(a, columns), prefix(b, columns));
        if reversed {
            o.reverse()
        } else {
            o
        }
    });
    if let Some(l) = keep {
        rows.truncate(l);
    }
}

/// The order of two rows of different partitions under ORDER BY.
fn clustering_order(table: &Table, a: &CqlRow, b: &CqlRow, reversed: bool) -> std::cmp::Ordering {
    let o = compare_prefix(
        table,
        a.clustering.as_deref().unwrap_or(&[]),
        b.clustering.as_deref().unwrap_or(&[]),
    );
    if reversed {
        o.reverse()
    } else {
        o
    }
}

/// Where a GROUP BY query's page starts and how far it may go: pages and
/// LIMIT count groups.
struct GroupPaging<'a> {
    /// The client's paging state (`partition_index` is the group offset).
    state: &'a PagingState,
    limit: Option<usize>,
    remaining_limit: Option<usize>,
    page_size: Option<usize>,
}

/// Splits rows into groups: runs of consecutive rows with equal grouping
/// values.
fn split_groups<'r>(
    table: &Table,
    rows: &'r [CqlRow],
    group_by: &group_by::GroupBy,
) -> Result<Vec<&'r [CqlRow]>> {
    let values = rows
        .iter()
        .map(|row| group_by.function_value(table, row))
        .collect::<Result<Vec<_>>>()?;
    let mut groups: Vec<&[CqlRow]> = Vec::new();
    let mut start = 0;
    for i in 1..=rows.len() {
        let boundary = i == rows.len()
            || !group_by.same_group((&rows[start], &values[start]), (&rows[i], &values[i]));
        if boundary {
            groups.push(&rows[start..i]);
            start = i;
        }
    }
    Ok(groups)
}

/// PER PARTITION LIMIT `n` of a GROUP BY query: at most `n` groups of each
/// partition.
fn limit_groups_per_partition(groups: &mut Vec<&[CqlRow]>, n: usize) {
    let mut seen: Vec<(&PartitionKey, usize)> = Vec::new();
    groups.retain(|g| {
        let key = &g[0].partition;
        match seen.iter_mut().find(|(k, _)| *k == key) {
            Some((_, count)) => {
                *count += 1;
                *count <= n
            }
            None => {
                seen.push((key, 1));
                true
            }
        }
    });
}

/// The result rows of a GROUP BY query (one aggregate row per group of
/// this page) and the paging state of the next page, if any. The rows come
/// in read order; with `sort` (ORDER BY over several partitions, reversed
/// or not) the groups are then sorted by their first rows, as Cassandra
/// sorts the result rows.
fn grouped_rows(
    table: &Table,
    outputs: &[Output],
    (rows, sort): (&[CqlRow], Option<bool>),
    group_by: &group_by::GroupBy,
    per_partition_limit: Option<usize>,
    paging: &GroupPaging<'_>,
) -> Result<(ResultRows, Option<PagingState>)> {
    let mut groups = split_groups(table, rows, group_by)?;
    if let Some(n) = per_partition_limit.filter(|n| *n > 0) {
        limit_groups_per_partition(&mut groups, n);
    }
    if let Some(reversed) = sort {
        groups.sort_by(|a, b| match (a.first(), b.first()) {
            (Some(a), Some(b)) => clustering_order(table, a, b, reversed),
            _ => a.len().cmp(&b.len()),
        });
    }
    let already = paging.state.rows_so_far as usize;
    let offset = (paging.state.partition_index as usize).min(groups.len());
    let mut take = groups.len() - offset;
    if let Some(l) = paging.remaining_limit {
        take = take.min(l);
    }
    let mut group_state = None;
    if let Some(p) = paging.page_size {
        if take >= p {
            take = p;
            let total = already + take;
            if paging.limit.is_none_or(|l| total < l) {
                group_state = Some(PagingState {
                    rows_so_far: total as u64,
                    partition_index: (offset + take) as u32,
                    position: None,
                });
            }
        }
    }
    let result_rows = groups[offset..offset + take]
        .iter()
        .map(|g| aggregate_row(table, outputs, g))
        .collect::<Result<_>>()?;
    Ok((result_rows, group_state))
}

/// The rows' metadata: the selection's columns (one `[json]` text column
/// for SELECT JSON), or only their count when the client skips metadata.
fn result_metadata(
    table: &Table,
    outputs: &[Output],
    json: bool,
    request: &Request,
    paging_state: Option<Bytes>,
) -> RowsMetadata {
    let specs = if json {
        vec![ColumnSpec {
            table: TableSpec {
                keyspace: table.keyspace.clone(),
                table: table.name.clone(),
            },
            name: "[json]".into(),
            cql_type: CqlType::Native(NativeType::Text),
        }]
    } else {
        specs(table, outputs)
    };
    RowsMetadata {
        columns: if request.skip_metadata {
            ColumnsMetadata::NoMetadata {
                column_count: specs.len() as u32,
            }
        } else {
            ColumnsMetadata::Specs(specs.into())
        },
        paging_state,
        new_metadata_id: None,
    }
}

fn json_rows(outputs: &[Output], rows: Vec<Vec<Option<Bytes>>>) -> Result<Vec<Vec<Option<Bytes>>>> {
    let mut out = Vec::new();
    for row in rows {
        let mut fields = Vec::new();
        for (o, v) in outputs.iter().zip(row) {
            // The name is escaped as a JSON string; a case-sensitive one is
            // also wrapped in escaped quotes, as Cassandra's Selection does.
            let quoted = rocksandra_data::value::json_string(&o.name);
            let name = if o.name.chars().any(|c| c.is_ascii_uppercase()) {
                format!("\"\\\"{}\\\"\"", &quoted[1..quoted.len() - 1])
            } else {
                quoted
            };
            let value = match v {
                None => "null".to_string(),
                Some(b) => Value::deserialize(&o.ty, &b)?.to_json(&o.ty),
            };
            fields.push(format!("{name}: {value}"));
        }
        out.push(vec![Some(Bytes::from(format!(
            "{{{}}}",
            fields.join(", ")
        )))]);
    }
    Ok(out)
}

/// A row's token for `token(k)`: its partition's, or, where a partition
/// key column is masked, that of the key values as read, masked or not, as
/// Cassandra's selector computes it.
fn row_token(table: &Table, row: &CqlRow) -> rocksandra_data::token::Token {
    let keys = 0..table.partition_key_count;
    if !table.columns[keys.clone()]
        .iter()
        .any(|c| table.masks.contains_key(&c.id))
    {
        return row.partition.token;
    }
    let values: Vec<&[u8]> = keys
        .map(|i| row.columns[i].value.as_deref().unwrap_or_default())
        .collect();
    rocksandra_data::token::Token::murmur3(&rocksandra_data::token::serialize_partition_key(
        &values,
    ))
}

fn eval_sel(table: &Table, sel: &Sel, row: &CqlRow) -> Result<Option<Vec<u8>>> {
    Ok(match sel {
        Sel::Column(i) => row.columns[*i].value.clone(),
        Sel::Metadata(m) => metadata::eval(table, m, row)?,
        Sel::Token => Some(row_token(table, row).0.to_be_bytes().to_vec()),
        Sel::Field { udt, index } => {
            let Some(bytes) = eval_sel(table, udt, row)? else {
                return Ok(None);
            };
            udt_field(&bytes, *index)
        }
        Sel::Cast { arg, from, to } => {
            let v = eval_sel(table, arg, row)?;
            crate::functions::cast(v.as_deref(), from, to)?
        }
        Sel::Function {
            function,
            args,
            now_micros,
        } => eval_function(table, function, args, *now_micros, row)?,
        Sel::Constant(v) => v.clone(),
        Sel::Arith {
            op,
            left,
            left_ty,
            right,
            right_ty,
            ty,
        } => eval_arith(table, *op, (left, left_ty), (right, right_ty), ty, row)?,
        Sel::Negate { arg, ty } => match eval_sel(table, arg, row)? {
            Some(b) => crate::functions::operations::negate(*ty, &b)?,
            None => None,
        },
        Sel::ToJson { arg, ty } => Some(
            match eval_sel(table, arg, row)? {
                Some(b) => Value::deserialize(ty, &b)?.to_json(ty),
                None => "null".to_string(),
            }
            .into_bytes(),
        ),
        Sel::Element {
            collection,
            ty,
            key,
        } => {
            let (Some(bytes), Some(key)) = (eval_sel(table, collection, row)?, key) else {
                return Ok(None);
            };
            element_of(ty, &bytes, key)?
        }
        Sel::Range {
            collection,
            ty,
            from,
            to,
        } => {
            let Some(bytes) = eval_sel(table, collection, row)? else {
                return Ok(None);
            };
            collection_slice(ty, &bytes, from, to)?
        }
        Sel::UserFunction { function, args } => {
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(eval_sel(table, a, row)?);
            }
            let refs: Vec<Option<&[u8]>> = values.iter().map(Option::as_deref).collect();
            function.call(&refs)?
        }
        Sel::CountStar | Sel::Aggregate { .. } | Sel::UserAggregate { .. } => None,
    })
}

/// A native function of selectors, called on their values.
fn eval_function(
    table: &Table,
    function: &crate::functions::Function,
    args: &[Sel],
    now_micros: i64,
    row: &CqlRow,
) -> Result<Option<Vec<u8>>> {
    let mut values = Vec::new();
    for a in args {
        values.push(eval_sel(table, a, row)?);
    }
    let random = || 0x5eed_u64;
    function.call(
        &values,
        &crate::functions::CallContext {
            now_micros,
            random: &random,
        },
    )
}

/// `left op right` of two selectors (null when either is null).
fn eval_arith(
    table: &Table,
    op: rocksandra_cql::ast::BinaryOp,
    (left, left_ty): (&Sel, &CqlType),
    (right, right_ty): (&Sel, &CqlType),
    ty: &CqlType,
    row: &CqlRow,
) -> Result<Option<Vec<u8>>> {
    let (Some(a), Some(b)) = (eval_sel(table, left, row)?, eval_sel(table, right, row)?) else {
        return Ok(None);
    };
    let (CqlType::Native(left), CqlType::Native(right), CqlType::Native(result)) =
        (left_ty, right_ty, ty)
    else {
        return Ok(None);
    };
    crate::functions::operations::Operation {
        op: crate::term::binary_op(op),
        left: *left,
        right: *right,
        result: *result,
    }
    .execute(&a, &b)
}

/// `c[key]` of a map (its value) or a set (the element, if present).
fn element_of(ty: &CqlType, bytes: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>> {
    Ok(match (ty.unfrozen(), Value::deserialize(ty, bytes)?) {
        (CqlType::Map(kt, _), Value::Map(entries)) => entries
            .into_iter()
            .find(|(k, _)| {
                rocksandra_data::value::compare(kt, &k.to_bytes(), key) == std::cmp::Ordering::Equal
            })
            .map(|(_, v)| v.to_bytes()),
        (CqlType::Set(et), Value::Set(items)) => items
            .into_iter()
            .find(|v| {
                rocksandra_data::value::compare(et, &v.to_bytes(), key) == std::cmp::Ordering::Equal
            })
            .map(|v| v.to_bytes()),
        _ => None,
    })
}

/// The elements of a set, or entries of a map, within a slice's bounds.
/// None of a non-frozen collection (whose value is built from its cells)
/// is null, as in Cassandra; none of a frozen one is an empty collection.
fn collection_slice(
    ty: &CqlType,
    bytes: &[u8],
    from: &Option<Vec<u8>>,
    to: &Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>> {
    let within = |kt: &CqlType, v: &Value| key_in_range(kt, &v.to_bytes(), from, to);
    let frozen = !ty.is_multi_cell();
    let sliced = match (ty.unfrozen(), Value::deserialize(ty, bytes)?) {
        (CqlType::Map(kt, _), Value::Map(entries)) => {
            let kept: Vec<_> = entries.into_iter().filter(|(k, _)| within(kt, k)).collect();
            (!kept.is_empty() || frozen).then_some(Value::Map(kept))
        }
        (CqlType::Set(et), Value::Set(items)) => {
            let kept: Vec<_> = items.into_iter().filter(|v| within(et, v)).collect();
            (!kept.is_empty() || frozen).then_some(Value::Set(kept))
        }
        _ => None,
    };
    Ok(sliced.map(|v| v.to_bytes()))
}

fn udt_field(bytes: &[u8], index: usize) -> Option<Vec<u8>> {
    let mut r = bytes;
    for i in 0..=index {
        if r.len() < 4 {
            return None;
        }
        let len = i32::from_be_bytes([r[0], r[1], r[2], r[3]]);
        r = &r[4..];
        if len < 0 {
            if i == index {
                return None;
            }
            continue;
        }
        let len = len as usize;
        if r.len() < len {
            return None;
        }
        if i == index {
            return Some(r[..len].to_vec());
        }
        r = &r[len..];
    }
    None
}

fn aggregate_row(table: &Table, outputs: &[Output], rows: &[CqlRow]) -> Result<Vec<Option<Bytes>>> {
    let mut out = Vec::new();
    for o in outputs {
        let v = aggregate_value(table, &o.sel, rows)?;
        out.push(v.map(Bytes::from));
    }
    Ok(out)
}

fn aggregate_value(table: &Table, sel: &Sel, rows: &[CqlRow]) -> Result<Option<Vec<u8>>> {
    match sel {
        Sel::CountStar => Ok(Some((rows.len() as i64).to_be_bytes().to_vec())),
        Sel::Aggregate { function, arg, ty } => {
            let mut values = Vec::new();
            for r in rows {
                if let Some(v) = eval_sel(table, arg, r)? {
                    values.push(v);
                }
            }
            match function {
                Aggregate::Count => Ok(Some((values.len() as i64).to_be_bytes().to_vec())),
                Aggregate::Min => Ok(values
                    .into_iter()
                    .min_by(|a, b| rocksandra_data::value::compare(ty, a, b))),
                Aggregate::Max => Ok(values
                    .into_iter()
                    .max_by(|a, b| rocksandra_data::value::compare(ty, a, b))),
                Aggregate::Sum | Aggregate::Avg => {
                    numeric_aggregate(*function, ty, &values).map(Some)
                }
            }
        }
        Sel::UserAggregate { plan, args } => {
            let mut state = crate::udf::AggregateState::new(plan.clone());
            for r in rows {
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    values.push(eval_sel(table, a, r)?);
                }
                let refs: Vec<Option<&[u8]>> = values.iter().map(Option::as_deref).collect();
                state.add(&refs)?;
            }
            state.finish()
        }
        other if is_aggregate(other) => {
            // Aggregates inside other selectors (count(*) + 1, toJson(sum(v))):
            // computed first, then the selector on the first row.
            let computed = with_aggregates(table, other, rows)?;
            match rows.first() {
                Some(r) => eval_sel(table, &computed, r),
                None => eval_sel(table, &computed, &empty_row(table)),
            }
        }
        other => Ok(match rows.first() {
            Some(r) => eval_sel(table, other, r)?,
            None => None,
        }),
    }
}

/// A row of nulls: what an aggregate's other selectors see when no row was
/// read.
fn empty_row(table: &Table) -> CqlRow {
    CqlRow {
        partition: PartitionKey::new(Vec::new()),
        clustering: None,
        columns: vec![Default::default(); table.columns.len()],
    }
}

/// A selector with each aggregate in it replaced by its value over `rows`.
fn with_aggregates(table: &Table, sel: &Sel, rows: &[CqlRow]) -> Result<Sel> {
    aggregate::map_aggregates(sel, &mut |node| {
        Ok(Sel::Constant(aggregate_value(table, node, rows)?))
    })
}

fn numeric_aggregate(function: Aggregate, ty: &CqlType, values: &[Vec<u8>]) -> Result<Vec<u8>> {
    let avg = function == Aggregate::Avg;
    if !crate::functions::aggregates::is_summable(ty) {
        return Err(QueryError::invalid(format!(
            "Invalid call to function system.{}: type {ty} is not numeric",
            if avg { "avg" } else { "sum" }
        )));
    }
    let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
    crate::functions::aggregates::sum_or_avg(avg, ty, &values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paging_state_round_trips() {
        let state = PagingState {
            rows_so_far: 7,
            partition_index: 3,
            position: Some(Position {
                partition: vec![0, 0, 0, 5],
                clustering: Some(vec![vec![1, 2], Vec::new()]),
                rows_in_partition: 2,
            }),
        };
        assert_eq!(PagingState::decode(&state.encode()).unwrap(), state);
        let bare = PagingState::default();
        assert_eq!(PagingState::decode(&bare.encode()).unwrap(), bare);
    }

    proptest! {
        /// Paging states come from clients: any bytes decode or fail, never panic.
        #[test]
        fn paging_state_decoding_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = PagingState::decode(&bytes);
        }

        /// Truncated or extended valid states never panic either.
        #[test]
        fn damaged_paging_states_never_panic(cut in 0usize..40, extra in proptest::collection::vec(any::<u8>(), 0..8)) {
            let state = PagingState {
                rows_so_far: 1,
                partition_index: 0,
                position: Some(Position {
                    partition: vec![9; 5],
                    clustering: Some(vec![vec![1; 3]]),
                    rows_in_partition: 1,
                }),
            };
            let mut bytes = state.encode().to_vec();
            bytes.truncate(cut);
            bytes.extend(extra);
            let _ = PagingState::decode(&bytes);
        }
    }
}
