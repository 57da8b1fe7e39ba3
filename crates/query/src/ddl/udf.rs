//! CREATE/DROP FUNCTION and AGGREGATE as pure functions from one schema to
//! the next, with Cassandra 5.0's checks and messages
//! (`CreateFunctionStatement`, `CreateAggregateStatement`,
//! `DropFunctionStatement`, `DropAggregateStatement`).

use std::sync::Arc;

use rocksandra_cql::ast::{CreateAggregate, CreateFunction, DropFunction, Expr, Literal};
use rocksandra_cql::TypeExpr;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_wire::{SchemaChange, SchemaChangeTarget, SchemaChangeType};

use crate::ddl::{existing_keyspace, DdlOutcome, StorageEffects};
use crate::error::{QueryError, Result};
use crate::functions::user::{find_aggregate, find_function};
use crate::schema::{is_system_keyspace, Keyspace, KeyspaceTypes, Schema};
use crate::udf::{compile_body, type_text, Signature, UserAggregate, UserFunction};

fn function_target(
    keyspace: &str,
    name: &str,
    types: Vec<String>,
    aggregate: bool,
) -> SchemaChangeTarget {
    let (keyspace, name) = (keyspace.to_string(), name.to_string());
    match aggregate {
        true => SchemaChangeTarget::Aggregate {
            keyspace,
            name,
            arg_types: types,
        },
        false => SchemaChangeTarget::Function {
            keyspace,
            name,
            arg_types: types,
        },
    }
}

fn outcome(
    schema: Option<Schema>,
    change_type: SchemaChangeType,
    target: SchemaChangeTarget,
) -> DdlOutcome {
    DdlOutcome {
        schema,
        change: SchemaChange {
            change_type,
            target,
        },
        effects: StorageEffects::default(),
    }
}

fn with_keyspace(schema: &Schema, keyspace: Keyspace) -> Schema {
    let mut next = schema.clone();
    next.keyspaces
        .insert(keyspace.name.clone(), Arc::new(keyspace));
    next
}

fn check_modifiable(keyspace: &str) -> Result<()> {
    if is_system_keyspace(keyspace) {
        return Err(QueryError::Unauthorized(format!(
            "{keyspace} keyspace is not user-modifiable."
        )));
    }
    Ok(())
}

fn check_not_frozen(types: &[TypeExpr], what: &str) -> Result<()> {
    match types.iter().find(|t| matches!(t, TypeExpr::Frozen(_))) {
        Some(t) => Err(QueryError::invalid(format!(
            "{what} '{t}' cannot be frozen; remove frozen<> modifier from '{t}'"
        ))),
        None => Ok(()),
    }
}

fn resolve(keyspace: &Keyspace, ty: &TypeExpr) -> Result<CqlType> {
    ty.resolve(&KeyspaceTypes(&keyspace.types))
        .map_err(|e| QueryError::invalid(format!("Unknown type {}.{}", keyspace.name, e.0)))
}

fn resolve_all(keyspace: &Keyspace, types: &[TypeExpr]) -> Result<Vec<CqlType>> {
    types.iter().map(|t| resolve(keyspace, t)).collect()
}

fn raw_texts(types: &[TypeExpr]) -> Vec<String> {
    types.iter().map(ToString::to_string).collect()
}

/// Cassandra's `AbstractType.isCompatibleWith` for the native types a
/// function can return here (varchar is text): the same type.
fn compatible(new: &CqlType, old: &CqlType) -> bool {
    new == old
}

pub fn create_function(
    schema: &Schema,
    keyspace: &str,
    stmt: &CreateFunction,
) -> Result<DdlOutcome> {
    let name = stmt.name.name.as_str();
    if stmt.or_replace && stmt.if_not_exists {
        return Err(QueryError::invalid(
            "Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives",
        ));
    }
    check_modifiable(keyspace)?;
    let names: Vec<String> = stmt
        .arguments
        .iter()
        .map(|(n, _)| n.as_str().to_string())
        .collect();
    let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
    if distinct.len() != names.len() {
        return Err(QueryError::invalid(format!(
            "Duplicate argument names for given function {name} with argument names [{}]",
            names.join(", ")
        )));
    }
    let raw_types: Vec<TypeExpr> = stmt.arguments.iter().map(|(_, t)| t.clone()).collect();
    check_not_frozen(&raw_types, "Argument")?;
    check_not_frozen(std::slice::from_ref(&stmt.return_type), "Return type")?;
    let ks = existing_keyspace(schema, keyspace)?;
    let argument_types = resolve_all(ks, &raw_types)?;
    let return_type = resolve(ks, &stmt.return_type)?;
    let language = stmt.language.as_str().to_ascii_lowercase();
    if language != "java" {
        return Err(QueryError::invalid(format!(
            "Invalid language '{language}' for function '{keyspace}.{name}'"
        )));
    }
    let signature = Signature {
        names: &names,
        types: &argument_types,
        return_type: &return_type,
        called_on_null_input: stmt.called_on_null_input,
    };
    let compiled = compile_body(&signature, &stmt.body).map_err(|what| {
        QueryError::invalid(format!(
            "Could not compile function '{keyspace}.{name}' from Java source: unsupported construct (this server runs a subset of Java, see docs/compatibility.md): {what}"
        ))
    })?;
    let function = UserFunction {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
        argument_names: names,
        argument_types,
        return_type,
        called_on_null_input: stmt.called_on_null_input,
        language,
        body: stmt.body.clone(),
        compiled: Arc::new(compiled),
    };
    let target = function_target(keyspace, name, raw_texts(&raw_types), false);
    let decision = check_replace_function(ks, &function, stmt)?;
    Ok(created(schema, ks, decision, target, move |next| {
        next.functions
            .retain(|f| !(f.name == function.name && f.argument_types == function.argument_types));
        next.functions.push(function);
    }))
}

/// What a CREATE makes of `decision`: nothing for IF NOT EXISTS on an
/// existing definition, else the keyspace `change` makes, the definition
/// created or updated.
fn created(
    schema: &Schema,
    ks: &Keyspace,
    decision: Replace,
    target: SchemaChangeTarget,
    change: impl FnOnce(&mut Keyspace),
) -> DdlOutcome {
    let change_type = match decision {
        Replace::Keep => return outcome(None, SchemaChangeType::Created, target),
        Replace::New => SchemaChangeType::Created,
        Replace::Existing => SchemaChangeType::Updated,
    };
    let mut next = Keyspace::clone(ks);
    change(&mut next);
    outcome(Some(with_keyspace(schema, next)), change_type, target)
}

enum Replace {
    /// IF NOT EXISTS on an existing one: nothing changes.
    Keep,
    New,
    Existing,
}

/// IF NOT EXISTS and OR REPLACE against what exists: `Err` when that
/// decides (a new definition, or nothing to do), else the definition the
/// new one replaces, still to be checked.
fn directives<'a, T>(
    existing: Option<&'a T>,
    kind: &str,
    name: &str,
    if_not_exists: bool,
    or_replace: bool,
) -> Result<std::result::Result<&'a T, Replace>> {
    let Some(existing) = existing else {
        return Ok(Err(Replace::New));
    };
    if if_not_exists {
        return Ok(Err(Replace::Keep));
    }
    if !or_replace {
        return Err(QueryError::invalid(format!(
            "{kind} '{name}' already exists"
        )));
    }
    Ok(Ok(existing))
}

fn check_replace_function(
    ks: &Keyspace,
    function: &UserFunction,
    stmt: &CreateFunction,
) -> Result<Replace> {
    let name = &function.name;
    if find_aggregate(ks, name, &function.argument_types).is_some() {
        return Err(QueryError::invalid(format!(
            "Function '{name}' cannot replace an aggregate"
        )));
    }
    let found = find_function(ks, name, &function.argument_types);
    let existing = match directives(found, "Function", name, stmt.if_not_exists, stmt.or_replace)? {
        Ok(existing) => existing,
        Err(decided) => return Ok(decided),
    };
    if existing.called_on_null_input != function.called_on_null_input {
        return Err(QueryError::invalid(format!(
            "Function '{name}' must have {} directive",
            match function.called_on_null_input {
                true => "CALLED ON NULL INPUT",
                false => "RETURNS NULL ON NULL INPUT",
            }
        )));
    }
    if !compatible(&function.return_type, &existing.return_type) {
        return Err(QueryError::invalid(format!(
            "Cannot replace function '{name}', the new return type {} is not compatible with the return type {} of existing function",
            function.return_type, existing.return_type
        )));
    }
    Ok(Replace::Existing)
}

/// Evaluates INITCOND as a value of the state type (None: null).
pub type InitialCondition<'a> = dyn Fn(&Expr, &CqlType) -> Result<Option<Vec<u8>>> + 'a;

pub fn create_aggregate(
    schema: &Schema,
    keyspace: &str,
    stmt: &CreateAggregate,
    initial_condition: &InitialCondition<'_>,
) -> Result<DdlOutcome> {
    let name = stmt.name.name.as_str();
    if stmt.or_replace && stmt.if_not_exists {
        return Err(QueryError::invalid(
            "Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives",
        ));
    }
    check_modifiable(keyspace)?;
    let is_tuple = |t: &TypeExpr| matches!(t, TypeExpr::Frozen(inner) if matches!(**inner, TypeExpr::Tuple(_)));
    let frozen_args: Vec<TypeExpr> = stmt
        .argument_types
        .iter()
        .filter(|t| !is_tuple(t))
        .cloned()
        .collect();
    check_not_frozen(&frozen_args, "Argument")?;
    if !is_tuple(&stmt.state_type) {
        check_not_frozen(std::slice::from_ref(&stmt.state_type), "State type")?;
    }
    let ks = existing_keyspace(schema, keyspace)?;
    let argument_types = resolve_all(ks, &stmt.argument_types)?;
    let state_type = resolve(ks, &stmt.state_type)?;
    let (state_function, return_type) =
        aggregate_functions(ks, keyspace, stmt, &argument_types, &state_type)?;
    let initial = match &stmt.initial_condition {
        Some(expr) => initial_state(expr, &state_type, initial_condition)?,
        None => None,
    };
    if !state_function.called_on_null_input && initial.is_none() {
        return Err(QueryError::invalid(format!(
            "Cannot create aggregate '{name}' without INITCOND because state function {keyspace}.{} does not accept 'null' arguments",
            stmt.state_function.as_str()
        )));
    }
    let aggregate = UserAggregate {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
        argument_types,
        state_function: stmt.state_function.as_str().to_string(),
        state_type,
        final_function: stmt.final_function.as_ref().map(|f| f.as_str().to_string()),
        initial_condition: initial,
        return_type,
    };
    let target = function_target(keyspace, name, raw_texts(&stmt.argument_types), true);
    let decision = check_replace_aggregate(ks, &aggregate, stmt)?;
    Ok(created(schema, ks, decision, target, move |next| {
        next.aggregates.retain(|a| {
            !(a.name == aggregate.name && a.argument_types == aggregate.argument_types)
        });
        next.aggregates.push(aggregate);
    }))
}

/// The state function, and the return type (the final function's, else
/// the state function's).
fn aggregate_functions<'a>(
    ks: &'a Keyspace,
    keyspace: &str,
    stmt: &CreateAggregate,
    argument_types: &[CqlType],
    state_type: &CqlType,
) -> Result<(&'a UserFunction, CqlType)> {
    let mut state_args = vec![state_type.clone()];
    state_args.extend(argument_types.iter().cloned());
    let mut raw_state_args = vec![stmt.state_type.to_string()];
    raw_state_args.extend(raw_texts(&stmt.argument_types));
    let state_name = format!(
        "{keyspace}.{}({})",
        stmt.state_function.as_str(),
        raw_state_args.join(", ")
    );
    let sfunc = stmt.state_function.as_str();
    let Some(state_function) = find_function(ks, sfunc, &state_args) else {
        if find_aggregate(ks, sfunc, &state_args).is_some() {
            return Err(QueryError::invalid(format!(
                "State function {state_name} isn't a scalar function"
            )));
        }
        return Err(QueryError::invalid(format!(
            "State function {state_name} doesn't exist"
        )));
    };
    if &state_function.return_type != state_type {
        return Err(QueryError::invalid(format!(
            "State function {state_name} return type must be the same as the first argument type - check STYPE, argument and return types"
        )));
    }
    let Some(final_name) = &stmt.final_function else {
        return Ok((state_function, state_function.return_type.clone()));
    };
    let final_text = format!("{keyspace}.{}({})", final_name.as_str(), stmt.state_type);
    let final_args = std::slice::from_ref(state_type);
    match find_function(ks, final_name.as_str(), final_args) {
        Some(f) => Ok((state_function, f.return_type.clone())),
        None if find_aggregate(ks, final_name.as_str(), final_args).is_some() => {
            Err(QueryError::invalid(format!(
                "Final function {final_text} isn't a scalar function"
            )))
        }
        None => Err(QueryError::invalid(format!(
            "Final function {final_text} doesn't exist"
        ))),
    }
}

/// INITCOND as a value of the state type, with Cassandra's checks.
fn initial_state(
    expr: &Expr,
    state_type: &CqlType,
    evaluate: &InitialCondition<'_>,
) -> Result<Option<Vec<u8>>> {
    let value = evaluate(expr, state_type)?;
    let empty_allowed = matches!(
        state_type,
        CqlType::Native(NativeType::Text | NativeType::Ascii | NativeType::Blob)
    );
    let is_null_literal = matches!(expr, Expr::Literal(Literal::Null));
    if let Some(bytes) = &value {
        if bytes.is_empty() && !empty_allowed && !is_null_literal {
            return Err(QueryError::invalid(
                "INITCOND must not be empty for all types except TEXT, ASCII, BLOB",
            ));
        }
    }
    Ok(value)
}

fn check_replace_aggregate(
    ks: &Keyspace,
    aggregate: &UserAggregate,
    stmt: &CreateAggregate,
) -> Result<Replace> {
    let name = &aggregate.name;
    if find_function(ks, name, &aggregate.argument_types).is_some() {
        return Err(QueryError::invalid(format!(
            "Aggregate '{name}' cannot replace a function"
        )));
    }
    let found = find_aggregate(ks, name, &aggregate.argument_types);
    let existing = match directives(
        found,
        "Aggregate",
        name,
        stmt.if_not_exists,
        stmt.or_replace,
    )? {
        Ok(existing) => existing,
        Err(decided) => return Ok(decided),
    };
    if !compatible(&aggregate.return_type, &existing.return_type) {
        return Err(QueryError::invalid(format!(
            "Cannot replace aggregate '{name}', the new return type {} isn't compatible with the return type {} of existing function",
            aggregate.return_type, existing.return_type
        )));
    }
    Ok(Replace::Existing)
}

/// DROP FUNCTION or DROP AGGREGATE (`stmt.aggregate`).
pub fn drop_function(schema: &Schema, keyspace: &str, stmt: &DropFunction) -> Result<DdlOutcome> {
    let fname = stmt.name.name.as_str();
    let (word, kind) = match stmt.aggregate {
        true => ("AGGREGATE", "Aggregate"),
        false => ("FUNCTION", "Function"),
    };
    let shown = match &stmt.argument_types {
        Some(types) => format!("{keyspace}.{fname}({})", raw_texts(types).join(", ")),
        None => format!("{keyspace}.{fname}"),
    };
    let missing = || QueryError::invalid(format!("{kind} '{shown}' doesn't exist"));
    let noop = || {
        let target = function_target(keyspace, fname, Vec::new(), stmt.aggregate);
        Ok(outcome(None, SchemaChangeType::Dropped, target))
    };
    let Some(ks) = schema.keyspace(keyspace) else {
        return if stmt.if_exists {
            noop()
        } else {
            Err(missing())
        };
    };
    let overloads = ks.functions.iter().filter(|f| f.name == fname).count()
        + ks.aggregates.iter().filter(|a| a.name == fname).count();
    if overloads > 1 && stmt.argument_types.is_none() {
        return Err(QueryError::invalid(format!(
            "'DROP {word} {fname}' matches multiple function definitions; specify the argument types by issuing a statement like 'DROP {word} {fname} (type, type, ...)'. You can use cqlsh 'DESCRIBE {word} {fname}' command to find all overloads"
        )));
    }
    if let Some(types) = &stmt.argument_types {
        check_not_frozen(types, "Argument")?;
    }
    let types = match &stmt.argument_types {
        Some(types) => Some(resolve_all(ks, types)?),
        None => None,
    };
    let matches =
        |name: &str, args: &[CqlType]| name == fname && types.as_deref().is_none_or(|t| t == args);
    let mut next = Keyspace::clone(ks);
    let dropped_types = if stmt.aggregate {
        let Some(found) = ks
            .aggregates
            .iter()
            .find(|a| matches(&a.name, &a.argument_types))
        else {
            return if stmt.if_exists {
                noop()
            } else {
                Err(missing())
            };
        };
        let types = found.argument_types.clone();
        next.aggregates
            .retain(|a| !(a.name == fname && a.argument_types == types));
        types
    } else {
        let Some(found) = ks
            .functions
            .iter()
            .find(|f| matches(&f.name, &f.argument_types))
        else {
            return if stmt.if_exists {
                noop()
            } else {
                Err(missing())
            };
        };
        check_unused(ks, found, &shown)?;
        let types = found.argument_types.clone();
        next.functions
            .retain(|f| !(f.name == fname && f.argument_types == types));
        types
    };
    let target = function_target(
        keyspace,
        fname,
        dropped_types.iter().map(type_text).collect(),
        stmt.aggregate,
    );
    Ok(outcome(
        Some(with_keyspace(schema, next)),
        SchemaChangeType::Dropped,
        target,
    ))
}

/// A function an aggregate or a column mask uses cannot be dropped.
fn check_unused(ks: &Keyspace, function: &UserFunction, shown: &str) -> Result<()> {
    let users: Vec<String> = ks
        .aggregates
        .iter()
        .filter(|a| {
            let state = a.state_function == function.name
                && function.argument_types.first() == Some(&a.state_type)
                && function.argument_types.get(1..) == Some(&a.argument_types[..]);
            let last = a.final_function.as_deref() == Some(function.name.as_str())
                && function.argument_types == [a.state_type.clone()];
            state || last
        })
        .map(|a| format!("{}.{}", a.keyspace, a.name))
        .collect();
    if !users.is_empty() {
        return Err(QueryError::invalid(format!(
            "Function '{shown}' is still referenced by aggregates {}",
            users.join(", ")
        )));
    }
    let masking: Vec<&str> = ks
        .tables
        .values()
        .filter(|t| crate::masking::uses(t, function))
        .map(|t| t.name.as_str())
        .collect();
    if masking.is_empty() {
        return Ok(());
    }
    Err(QueryError::invalid(format!(
        "Function '{shown}' is still referenced by column masks in tables {}",
        masking.join(", ")
    )))
}
