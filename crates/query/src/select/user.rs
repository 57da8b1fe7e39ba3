//! User-defined functions and aggregates in a selection: which one a call
//! names (by keyspace, name and argument types, as Cassandra's
//! `FunctionResolver` picks among overloads), and their planned form.

use std::sync::Arc;

use rocksandra_cql::ast::{Expr, QualifiedName};

use super::{is_aggregate, FunctionArgs, Planned, Sel};
use crate::error::{QueryError, Result};
use crate::functions::user::{aggregate_functions, choose, Call, Routine};
use crate::schema::Table;
use crate::term::EvalContext;
use crate::udf::{AggregatePlan, UserAggregate, UserFunction};

/// The user-defined function or aggregate a call names, planned; None when
/// no user-defined one has that name (a native function may).
pub(super) fn plan(
    table: &Table,
    name: &QualifiedName,
    args: &[Expr],
    ctx: &EvalContext<'_>,
) -> Result<Option<Planned>> {
    let Some(schema) = ctx.schema else {
        return Ok(None);
    };
    let keyspace_name = name
        .keyspace
        .as_ref()
        .map_or(table.keyspace.as_str(), |k| k.as_str());
    let Some(keyspace) = schema.keyspace(keyspace_name) else {
        return Ok(None);
    };
    let fname = name.name.as_str();
    let overloads = crate::functions::user::overloads(keyspace, fname);
    if overloads.is_empty() {
        return Ok(None);
    }
    let called = format!("{keyspace_name}.{fname}");
    let mut planned = FunctionArgs::plan(table, args, ctx)?;
    let views = planned.views(args);
    let written = match &name.keyspace {
        Some(ks) => format!("{}.{fname}", ks.as_str()),
        None => fname.to_string(),
    };
    let call = Call {
        written: &written,
        resolved: &called,
        receiver: None,
    };
    let chosen = choose(&overloads, &views, &call)?;
    planned.bind_terms(args, chosen.types(), fname, ctx)?;
    let FunctionArgs {
        sels: planned,
        labels,
        ..
    } = planned;
    let label = format!("{called}({})", labels.join(", "));
    let out_ty = chosen.return_type().clone();
    let sel = match chosen {
        Routine::Scalar(f) => Sel::UserFunction {
            function: Arc::new(UserFunction::clone(f)),
            args: planned,
        },
        Routine::Aggregate(a) => {
            if planned.iter().any(is_aggregate) {
                return Err(QueryError::invalid(
                    "aggregate functions cannot be used as arguments of aggregate functions",
                ));
            }
            let (state, last) = aggregate_functions(keyspace, a)?;
            Sel::UserAggregate {
                plan: Arc::new(AggregatePlan {
                    aggregate: UserAggregate::clone(a),
                    state: state.clone(),
                    last: last.cloned(),
                }),
                args: planned,
            }
        }
    };
    Ok(Some((sel, label, out_ty)))
}
