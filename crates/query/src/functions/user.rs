//! How a call finds user-defined functions and aggregates: by exact
//! signature (DDL), and among the overloads of a name (terms and
//! selectors), with Cassandra's messages. It stands above the schema, whose
//! keyspaces hold them; `udf`, their definition, stands below it.

use rocksandra_data::types::CqlType;

use crate::error::{QueryError, Result};
use crate::udf::{type_text, UserAggregate, UserFunction};

// ---------------------------------------------------------------- lookup

/// The function of `keyspace` with this exact signature.
pub fn find_function<'a>(
    keyspace: &'a crate::schema::Keyspace,
    name: &str,
    types: &[CqlType],
) -> Option<&'a UserFunction> {
    keyspace
        .functions
        .iter()
        .find(|f| f.name == name && f.argument_types == types)
}

/// The aggregate of `keyspace` with this exact signature.
pub fn find_aggregate<'a>(
    keyspace: &'a crate::schema::Keyspace,
    name: &str,
    types: &[CqlType],
) -> Option<&'a UserAggregate> {
    keyspace
        .aggregates
        .iter()
        .find(|a| a.name == name && a.argument_types == types)
}

/// The state and final functions of an aggregate, from its keyspace.
pub fn aggregate_functions<'a>(
    keyspace: &'a crate::schema::Keyspace,
    aggregate: &UserAggregate,
) -> Result<(&'a UserFunction, Option<&'a UserFunction>)> {
    let mut state_args = vec![aggregate.state_type.clone()];
    state_args.extend(aggregate.argument_types.iter().cloned());
    let missing = |what: &str| {
        QueryError::Server(format!(
            "the {what} function of aggregate {}.{} is missing",
            aggregate.keyspace, aggregate.name
        ))
    };
    let state = find_function(keyspace, &aggregate.state_function, &state_args)
        .ok_or_else(|| missing("state"))?;
    let last = match &aggregate.final_function {
        Some(name) => Some(
            find_function(keyspace, name, std::slice::from_ref(&aggregate.state_type))
                .ok_or_else(|| missing("final"))?,
        ),
        None => None,
    };
    Ok((state, last))
}

// ---------------------------------------------------------------- overloads

/// The functions and aggregates of `keyspace` named `name`.
pub(crate) fn overloads<'a>(keyspace: &'a crate::schema::Keyspace, name: &str) -> Vec<Routine<'a>> {
    let mut out: Vec<Routine<'a>> = keyspace
        .functions
        .iter()
        .filter(|f| f.name == name)
        .map(Routine::Scalar)
        .collect();
    out.extend(
        keyspace
            .aggregates
            .iter()
            .filter(|a| a.name == name)
            .map(Routine::Aggregate),
    );
    out
}

/// One overload: a scalar function or an aggregate.
pub(crate) enum Routine<'a> {
    Scalar(&'a UserFunction),
    Aggregate(&'a UserAggregate),
}

impl Routine<'_> {
    pub(crate) fn types(&self) -> &[CqlType] {
        match self {
            Routine::Scalar(f) => &f.argument_types,
            Routine::Aggregate(a) => &a.argument_types,
        }
    }

    pub(crate) fn return_type(&self) -> &CqlType {
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

/// A call being resolved: the name as written and as resolved (`ks.f`),
/// and where a term's result goes (None in a selection).
pub(crate) struct Call<'c> {
    pub written: &'c str,
    pub resolved: &'c str,
    pub receiver: Option<&'c CqlType>,
}

fn fits(r: &Routine<'_>, args: &[crate::functions::Arg<'_>]) -> bool {
    let not = super::Assignment::NotAssignable;
    r.types().len() == args.len()
        && args
            .iter()
            .zip(r.types())
            .all(|(a, t)| crate::functions::test_arg(a, t) != not)
}

fn exact(r: &Routine<'_>, args: &[crate::functions::Arg<'_>]) -> bool {
    let exact = super::Assignment::Exact;
    args.iter()
        .zip(r.types())
        .all(|(a, t)| crate::functions::test_arg(a, t) == exact)
}

/// The one overload the arguments fit, with Cassandra's messages: of
/// several, those whose result cannot go to the receiver are left out.
pub(crate) fn choose<'r, 'a>(
    overloads: &'r [Routine<'a>],
    args: &[crate::functions::Arg<'_>],
    call: &Call<'_>,
) -> Result<&'r Routine<'a>> {
    if let [only] = overloads {
        return check_only(only, args, call.resolved);
    }
    let returns_to = |r: &Routine<'_>| {
        call.receiver
            .is_none_or(|t| crate::functions::is_value_compatible(t, r.return_type()))
    };
    let fitting: Vec<&Routine<'_>> = overloads
        .iter()
        .filter(|r| fits(r, args) && returns_to(r))
        .collect();
    let exact: Vec<&Routine<'_>> = fitting.iter().copied().filter(|r| exact(r, args)).collect();
    let signatures = |list: &[&Routine<'_>]| -> String {
        let mut all: Vec<String> = list.iter().map(|r| r.signature(call.resolved)).collect();
        all.sort();
        all.join(", ")
    };
    let written = call.written;
    match (exact.as_slice(), fitting.as_slice()) {
        ([one], _) | ([], [one]) => Ok(*one),
        (_, []) => {
            let all: Vec<&Routine<'_>> = overloads.iter().collect();
            Err(QueryError::invalid(format!(
                "Invalid call to function {written}, none of its type signatures match (known type signatures: {})",
                signatures(&all)
            )))
        }
        (_, several) => Err(QueryError::invalid(format!(
            "Ambiguous call to function {written} (can be matched by following signatures: {}): use type casts to disambiguate",
            signatures(several)
        ))),
    }
}

/// The only overload of a name: its arity and argument types checked.
fn check_only<'r, 'a>(
    only: &'r Routine<'a>,
    args: &[crate::functions::Arg<'_>],
    resolved: &str,
) -> Result<&'r Routine<'a>> {
    if only.types().len() != args.len() {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments in call to function {resolved}: {} required but {} provided",
            only.types().len(),
            args.len()
        )));
    }
    let not = super::Assignment::NotAssignable;
    let failed = args
        .iter()
        .zip(only.types())
        .enumerate()
        .find(|(_, (a, t))| crate::functions::test_arg(a, t) == not);
    if let Some((i, (arg, ty))) = failed {
        return Err(QueryError::invalid(format!(
            "Type error: {} cannot be passed as argument {i} of function {resolved} of type {}",
            crate::functions::arg_text(arg),
            type_text(ty)
        )));
    }
    Ok(only)
}
