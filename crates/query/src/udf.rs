//! User-defined functions and aggregates (`user_defined_functions_enabled`):
//! what a keyspace holds of them, their stored form, and how one runs.
//! It names no module above the schema, which holds its types.
//!
//! - [`UserFunction`]: a scalar function; its Java body is compiled by
//!   [`java::compile`] at CREATE (a documented subset, refused otherwise)
//!   and at load, and run by [`UserFunction::call`] on serialized values.
//! - [`UserAggregate`]: a state function, a state type, an optional final
//!   function and initial state, folded by [`AggregateState`].
//!
//! CREATE/DROP FUNCTION/AGGREGATE are `ddl::udf`; finding the function a
//! call names is `functions::user`.

use std::sync::Arc;

use rocksandra_data::types::{CqlType, NativeType};
use serde::{Deserialize, Serialize};

use crate::error::{QueryError, Result};

pub mod java;

/// The refusal when `user_defined_functions_enabled` is false (Cassandra's
/// default).
pub const DISABLED: &str =
    "User-defined functions are disabled in cassandra.yaml - set user_defined_functions_enabled=true to enable";

/// A user-defined scalar function.
#[derive(Clone, Debug, PartialEq)]
pub struct UserFunction {
    pub keyspace: String,
    pub name: String,
    pub argument_names: Vec<String>,
    pub argument_types: Vec<CqlType>,
    pub return_type: CqlType,
    pub called_on_null_input: bool,
    pub language: String,
    pub body: String,
    pub compiled: Arc<java::Body>,
}

/// A user-defined aggregate.
#[derive(Clone, Debug, PartialEq)]
pub struct UserAggregate {
    pub keyspace: String,
    pub name: String,
    pub argument_types: Vec<CqlType>,
    pub state_function: String,
    pub state_type: CqlType,
    pub final_function: Option<String>,
    /// The serialized initial state (`INITCOND`), None when absent.
    pub initial_condition: Option<Vec<u8>>,
    pub return_type: CqlType,
}

/// The Java type a CQL type is given as in a function body, or None
/// outside the supported subset. As in Cassandra, a function that returns
/// null on null input sees primitives (`int`, `double`), one called on null
/// input their boxes (`Integer`, `Double`), for arguments and result.
pub fn java_type(ty: &CqlType, called_on_null_input: bool) -> Option<java::Ty> {
    use java::{Prim, Ty};
    let CqlType::Native(native) = ty else {
        return None;
    };
    let number = |p: Prim| match called_on_null_input {
        true => Ty::Boxed(p),
        false => Ty::Prim(p),
    };
    Some(match native {
        NativeType::Int => number(Prim::Int),
        NativeType::Bigint | NativeType::Counter => number(Prim::Long),
        NativeType::Smallint => number(Prim::Short),
        NativeType::Tinyint => number(Prim::Byte),
        NativeType::Double => number(Prim::Double),
        NativeType::Float => number(Prim::Float),
        NativeType::Boolean => number(Prim::Bool),
        NativeType::Text | NativeType::Ascii => Ty::Str,
        _ => return None,
    })
}

/// A serialized CQL value as the Java value a body sees.
fn to_java(ty: &CqlType, bytes: Option<&[u8]>) -> Result<java::Val> {
    use java::Val;
    let Some(bytes) = bytes else {
        return Ok(Val::Null);
    };
    let bad = || QueryError::invalid(format!("Invalid value for type {ty}"));
    let fixed = |n: usize| -> Result<&[u8]> { (bytes.len() == n).then_some(bytes).ok_or_else(bad) };
    let CqlType::Native(native) = ty else {
        return Err(bad());
    };
    Ok(match native {
        NativeType::Int => Val::Int(i32::from_be_bytes(fixed(4)?.try_into().map_err(|_| bad())?)),
        NativeType::Bigint | NativeType::Counter => {
            Val::Long(i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad())?))
        }
        NativeType::Smallint => {
            Val::Short(i16::from_be_bytes(fixed(2)?.try_into().map_err(|_| bad())?))
        }
        NativeType::Tinyint => {
            Val::Byte(i8::from_be_bytes(fixed(1)?.try_into().map_err(|_| bad())?))
        }
        NativeType::Double => {
            Val::Double(f64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad())?))
        }
        NativeType::Float => {
            Val::Float(f32::from_be_bytes(fixed(4)?.try_into().map_err(|_| bad())?))
        }
        NativeType::Boolean => Val::Bool(fixed(1)?[0] != 0),
        NativeType::Text | NativeType::Ascii => {
            Val::Str(String::from_utf8(bytes.to_vec()).map_err(|_| bad())?)
        }
        _ => return Err(bad()),
    })
}

/// A Java value back to the serialized form of `ty` (the body's return
/// type was checked at CREATE, so the kinds match).
fn from_java(ty: &CqlType, value: java::Val) -> Option<Vec<u8>> {
    use java::Val;
    Some(match value {
        Val::Null => return None,
        Val::Bool(b) => vec![u8::from(b)],
        Val::Byte(n) => n.to_be_bytes().to_vec(),
        Val::Short(n) => n.to_be_bytes().to_vec(),
        Val::Int(n) => n.to_be_bytes().to_vec(),
        Val::Long(n) => n.to_be_bytes().to_vec(),
        Val::Float(f) => f.to_be_bytes().to_vec(),
        Val::Double(d) => d.to_be_bytes().to_vec(),
        Val::Str(s) => {
            debug_assert!(matches!(ty, CqlType::Native(_)));
            s.into_bytes()
        }
    })
}

impl UserFunction {
    /// Runs the function on serialized arguments (None is null): null
    /// without running when it returns null on null input.
    pub fn call(&self, args: &[Option<&[u8]>]) -> Result<Option<Vec<u8>>> {
        if !self.called_on_null_input && args.iter().any(Option::is_none) {
            return Ok(None);
        }
        self.run(args)
    }

    /// Runs the body whatever its arguments.
    fn run(&self, args: &[Option<&[u8]>]) -> Result<Option<Vec<u8>>> {
        let mut values = Vec::with_capacity(args.len());
        for (ty, arg) in self.argument_types.iter().zip(args) {
            values.push(to_java(ty, *arg)?);
        }
        match self.compiled.call(values) {
            Ok(v) => Ok(from_java(&self.return_type, v)),
            // Cassandra's message is the exception's text alone.
            Err(exception) => Err(QueryError::FunctionFailure {
                keyspace: self.keyspace.clone(),
                function: self.name.clone(),
                arg_types: self.argument_types.iter().map(type_text).collect(),
                message: exception,
            }),
        }
    }
}

/// A function's type as its schema rows and signatures show it (the
/// UDF-facing form: frozen collections unfrozen is Cassandra's; our subset
/// holds only native types).
pub fn type_text(ty: &CqlType) -> String {
    crate::type_text::cql_type_text(ty)
}

/// INITCOND as the CQL literal `system_schema.aggregates` and DESCRIBE
/// show (None when absent or null).
pub fn initial_condition_literal(aggregate: &UserAggregate) -> Option<String> {
    let bytes = aggregate.initial_condition.as_ref()?;
    let value = rocksandra_data::Value::deserialize(&aggregate.state_type, bytes).ok()?;
    Some(value.to_cql_literal(&aggregate.state_type))
}

/// An aggregate with the functions it runs, as a query plans it.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregatePlan {
    pub aggregate: UserAggregate,
    pub state: UserFunction,
    pub last: Option<UserFunction>,
}

/// The running state of one user-defined aggregate over one group
/// (Cassandra's `UDAggregate`: the state starts as INITCOND; a row whose
/// arguments hold a null leaves it unchanged when the state function
/// returns null on null input; the final function sees the state even
/// when it is null).
#[derive(Debug)]
pub struct AggregateState {
    plan: Arc<AggregatePlan>,
    state: Option<Vec<u8>>,
}

impl AggregateState {
    pub fn new(plan: Arc<AggregatePlan>) -> Self {
        let state = plan.aggregate.initial_condition.clone();
        AggregateState { plan, state }
    }

    /// Folds one row's arguments into the state.
    pub fn add(&mut self, args: &[Option<&[u8]>]) -> Result<()> {
        let function = &self.plan.state;
        if !function.called_on_null_input && args.iter().any(Option::is_none) {
            return Ok(());
        }
        let mut all: Vec<Option<&[u8]>> = Vec::with_capacity(args.len() + 1);
        all.push(self.state.as_deref());
        all.extend_from_slice(args);
        self.state = function.run(&all)?;
        Ok(())
    }

    /// The aggregate's result: the final function of the state, or the state.
    pub fn finish(self) -> Result<Option<Vec<u8>>> {
        match &self.plan.last {
            Some(f) => f.run(&[self.state.as_deref()]),
            None => Ok(self.state),
        }
    }
}

// ---------------------------------------------------------------- stored form

/// A function as `schema.json` keeps it (types as CQL text).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredFunction {
    name: String,
    argument_names: Vec<String>,
    argument_types: Vec<String>,
    return_type: String,
    called_on_null_input: bool,
    language: String,
    body: String,
}

/// An aggregate as `schema.json` keeps it (the initial state in hex).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredAggregate {
    name: String,
    argument_types: Vec<String>,
    state_function: String,
    state_type: String,
    final_function: Option<String>,
    initial_condition: Option<String>,
    return_type: String,
}

impl UserFunction {
    pub fn to_stored(&self) -> StoredFunction {
        StoredFunction {
            name: self.name.clone(),
            argument_names: self.argument_names.clone(),
            argument_types: self.argument_types.iter().map(type_text).collect(),
            return_type: type_text(&self.return_type),
            called_on_null_input: self.called_on_null_input,
            language: self.language.clone(),
            body: self.body.clone(),
        }
    }

    pub fn from_stored(
        keyspace: &str,
        stored: StoredFunction,
        parse: &dyn Fn(&str) -> Result<CqlType>,
    ) -> Result<UserFunction> {
        let argument_types = stored
            .argument_types
            .iter()
            .map(|t| parse(t))
            .collect::<Result<Vec<_>>>()?;
        let return_type = parse(&stored.return_type)?;
        let signature = Signature {
            names: &stored.argument_names,
            types: &argument_types,
            return_type: &return_type,
            called_on_null_input: stored.called_on_null_input,
        };
        let compiled = compile_body(&signature, &stored.body).map_err(|e| {
            QueryError::Server(format!("stored function {keyspace}.{}: {e}", stored.name))
        })?;
        Ok(UserFunction {
            keyspace: keyspace.to_string(),
            name: stored.name,
            argument_names: stored.argument_names,
            argument_types,
            return_type,
            called_on_null_input: stored.called_on_null_input,
            language: stored.language,
            body: stored.body,
            compiled: Arc::new(compiled),
        })
    }
}

impl UserAggregate {
    pub fn to_stored(&self) -> StoredAggregate {
        StoredAggregate {
            name: self.name.clone(),
            argument_types: self.argument_types.iter().map(type_text).collect(),
            state_function: self.state_function.clone(),
            state_type: type_text(&self.state_type),
            final_function: self.final_function.clone(),
            initial_condition: self.initial_condition.as_ref().map(hex::encode),
            return_type: type_text(&self.return_type),
        }
    }

    pub fn from_stored(
        keyspace: &str,
        stored: StoredAggregate,
        parse: &dyn Fn(&str) -> Result<CqlType>,
    ) -> Result<UserAggregate> {
        let initial_condition = match &stored.initial_condition {
            Some(text) => Some(hex::decode(text).map_err(|e| {
                QueryError::Server(format!("stored aggregate {keyspace}.{}: {e}", stored.name))
            })?),
            None => None,
        };
        Ok(UserAggregate {
            keyspace: keyspace.to_string(),
            argument_types: stored
                .argument_types
                .iter()
                .map(|t| parse(t))
                .collect::<Result<Vec<_>>>()?,
            state_type: parse(&stored.state_type)?,
            return_type: parse(&stored.return_type)?,
            name: stored.name,
            state_function: stored.state_function,
            final_function: stored.final_function,
            initial_condition,
        })
    }
}

/// What a body is compiled for.
pub struct Signature<'a> {
    pub names: &'a [String],
    pub types: &'a [CqlType],
    pub return_type: &'a CqlType,
    pub called_on_null_input: bool,
}

/// Compiles a body for this signature; the error names what the subset
/// does not hold.
pub fn compile_body(
    signature: &Signature<'_>,
    body: &str,
) -> std::result::Result<java::Body, String> {
    let nullable = signature.called_on_null_input;
    let mut params = Vec::new();
    for (name, ty) in signature.names.iter().zip(signature.types) {
        let java = java_type(ty, nullable).ok_or_else(|| format!("arguments of type {ty}"))?;
        params.push((name.clone(), java));
    }
    let return_type = signature.return_type;
    let returns =
        java_type(return_type, nullable).ok_or_else(|| format!("the return type {return_type}"))?;
    java::compile(body, &params, returns)
}

#[cfg(test)]
mod tests;
