//! User-defined functions and aggregates in a selection: which one a call
//! names (by keyspace, name and argument types, as Cassandra's
//! `FunctionResolver` picks among overloads), and their planned form.

use std::sync::Arc;

use rocksandra_cql::ast::{Expr, QualifiedName};
use rocksandra_data::types::CqlType;

use super::{evaluate, is_aggregate, is_term_argument, literal_label, plan_selector, Planned, Sel};
use crate::error::{QueryError, Result};
use crate::functions::Arg;
use crate::schema::Table;
use crate::term::{Assignment, EvalContext, Term};
use crate::udf::{aggregate_functions, type_text, AggregatePlan, UserAggregate, UserFunction};

/// One overload: a scalar function or an aggregate.
enum Routine<'a> {
    Scalar(&'a UserFunction),
    Aggregate(&'a UserAggregate),
}

impl Routine<'_> {
    fn types(&self) -> &[CqlType] {
        match self {
            Routine::Scalar(f) => &f.argument_types,
            Routine::Aggregate(a) => &a.argument_types,
        }
    }

    fn return_type(&self) -> &CqlType {
        match self {
            Routine::Scalar(f) => &f.return_type,
            Routine::Aggregate(a) => &a.return_type,
        }
    }

    /// `ks.f : (int, int) -> int`, as Cassandra lists signatures.
    fn signature(&self, called: &str) -> String {
        let types: Vec<String> = self.types().iter().map(type_text).collect();
        format!(
            "{called} : ({}) -> {}",
            types.join(", "),
            type_text(self.return_type())
        )
    }
}

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
    let mut overloads: Vec<Routine<'_>> = crate::udf::functions_named(keyspace, fname)
        .map(Routine::Scalar)
        .collect();
    overloads.extend(
        keyspace
            .aggregates
            .iter()
            .filter(|a| a.name == fname)
            .map(Routine::Aggregate),
    );
    if overloads.is_empty() {
        return Ok(None);
    }
    let called = format!("{keyspace_name}.{fname}");
    let mut planned = Vec::new();
    let mut labels = Vec::new();
    let mut types: Vec<Option<CqlType>> = Vec::new();
    for a in args {
        if is_term_argument(a) {
            planned.push(Sel::Constant(None));
            labels.push(literal_label(a));
            types.push(None);
        } else {
            let (s, l, t) = plan_selector(table, a, ctx)?;
            planned.push(s);
            labels.push(l);
            types.push(Some(t));
        }
    }
    let views: Vec<Arg<'_>> = args
        .iter()
        .zip(&types)
        .zip(&labels)
        .map(|((a, t), label)| match t {
            Some(t) => Arg::Selector(t, label),
            None => Arg::Term(a),
        })
        .collect();
    let chosen = choose(&overloads, &views, &called)?;
    for (k, a) in args.iter().enumerate() {
        let unbound = ctx.binds.is_empty() && crate::term::contains_bind_marker(a);
        if types[k].is_none() && !unbound {
            let value = match evaluate(a, &chosen.types()[k], fname, ctx)? {
                Term::Value(v) => Some(v),
                _ => None,
            };
            planned[k] = Sel::Constant(value);
        }
    }
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

/// The one overload the arguments fit, with Cassandra's messages.
fn choose<'r, 'a>(
    overloads: &'r [Routine<'a>],
    args: &[Arg<'_>],
    called: &str,
) -> Result<&'r Routine<'a>> {
    let fits = |r: &Routine<'_>| {
        r.types().len() == args.len()
            && args
                .iter()
                .zip(r.types())
                .all(|(a, t)| crate::functions::test_arg(a, t) != Assignment::NotAssignable)
    };
    if let [only] = overloads {
        if only.types().len() != args.len() {
            return Err(QueryError::invalid(format!(
                "Invalid number of arguments in call to function {called}: {} required but {} provided",
                only.types().len(),
                args.len()
            )));
        }
        if !fits(only) {
            let (i, (arg, ty)) = args
                .iter()
                .zip(only.types())
                .enumerate()
                .find(|(_, (a, t))| crate::functions::test_arg(a, t) == Assignment::NotAssignable)
                .ok_or_else(|| QueryError::Server("no argument failed".into()))?;
            return Err(QueryError::invalid(format!(
                "Type error: {} cannot be passed as argument {i} of function {called} of type {}",
                crate::functions::arg_text(arg),
                type_text(ty)
            )));
        }
        return Ok(only);
    }
    let fitting: Vec<&Routine<'_>> = overloads.iter().filter(|r| fits(r)).collect();
    let exact: Vec<&Routine<'_>> = fitting
        .iter()
        .copied()
        .filter(|r| {
            args.iter()
                .zip(r.types())
                .all(|(a, t)| crate::functions::test_arg(a, t) == Assignment::Exact)
        })
        .collect();
    let signatures = |list: &[&Routine<'_>]| -> String {
        list.iter()
            .map(|r| r.signature(called))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (exact.as_slice(), fitting.as_slice()) {
        ([one], _) | ([], [one]) => Ok(*one),
        (_, []) => {
            let all: Vec<&Routine<'_>> = overloads.iter().collect();
            Err(QueryError::invalid(format!(
                "Invalid call to function {called}, none of its type signatures match (known type signatures: {})",
                signatures(&all)
            )))
        }
        (_, several) => Err(QueryError::invalid(format!(
            "Ambiguous call to function {called} (can be matched by following signatures: {}): use type casts to disambiguate",
            signatures(several)
        ))),
    }
}
