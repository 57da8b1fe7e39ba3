//! Terms: literals, bind markers, collection/tuple/UDT literals, type hints
//! and function calls in INSERT values, SET clauses, WHERE relations and
//! USING parameters, evaluated against the type of what receives them.
//!
//! Cassandra decides a term's meaning from its receiver: `3` is an int for
//! an int column and a bigint for a bigint one, `{}` is a set or a map. So
//! [`evaluate`] takes the receiver's type and name, and [`test_assignment`]
//! answers Cassandra's `testAssignment` question (exact match, weakly
//! assignable, not assignable) that function overload resolution needs.
//! Error texts follow Cassandra 5.0 (`Constants`, `Lists`, `Sets`, `Maps`,
//! `Tuples`, `UserTypes`, `Vectors`, the marshal types); all are `Invalid`.

pub(crate) mod literal;

use std::cmp::Ordering;

use rocksandra_cql::ast::{self, Expr, Literal};
use rocksandra_data::types::{CqlType, NativeType, UdtType};
use rocksandra_data::value::{compare, validate};
use rocksandra_data::Value;

use crate::error::{QueryError, Result};
use crate::functions::{
    self, build_collection, is_value_compatible, Arg, Assignment, BinaryOp, CallContext, Num,
};
use crate::schema::KeyspaceTypes;

/// An evaluated term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    Null,
    /// An unset bind value (protocol v4+): leave the column unchanged.
    Unset,
    /// The value in its native-protocol serialized form.
    Value(Vec<u8>),
}

/// What evaluation may need besides the expression.
pub struct EvalContext<'a> {
    /// Values bound to the statement's markers, by marker index (named
    /// values are already placed by the caller).
    pub binds: &'a [rocksandra_wire::Value],
    /// The request's time, in microseconds since the epoch (for now(),
    /// currentTimestamp() and friends).
    pub now_micros: i64,
    /// The keyspace of the statement, for user types and functions.
    pub keyspace: &'a str,
    pub types: KeyspaceTypes<'a>,
    /// The schema, for user-defined functions (None where none can be
    /// called, such as a view's WHERE clause).
    pub schema: Option<&'a crate::schema::Schema>,
    /// Randomness for uuid() and the node part of timeuuids.
    pub random: &'a dyn Fn() -> u64,
    /// At PREPARE, before any value is bound: each term evaluates to a
    /// stand-in value of its receiver's type ([`stand_in`], [`evaluate`]),
    /// so the checks that need no value run when the statement is prepared.
    pub stand_ins: bool,
}

/// Evaluates `expr` as a value of type `receiver`, for the column (or bind
/// variable) named `receiver_name`, with Cassandra's error messages.
///
/// With `ctx.stand_ins` (at PREPARE) every term is a stand-in, as
/// Cassandra checks a term's value (null, empty, too long) only when it
/// runs the statement; a term without bind markers is evaluated first, as
/// Cassandra evaluates one when preparing (a literal of the wrong type, a
/// function failing on literals).
pub fn evaluate(
    expr: &Expr,
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    if !ctx.stand_ins {
        return evaluate_term(expr, receiver, receiver_name, ctx);
    }
    if !contains_bind_marker(expr) {
        evaluate_term(expr, receiver, receiver_name, ctx)?;
    } else if let Expr::Function { name, args } = expr {
        resolve_stand_in_call(name, args, receiver, receiver_name, ctx)?;
    }
    Ok(Term::Value(stand_in(receiver).to_bytes()))
}

/// At PREPARE, a native function call with a bind marker among its
/// arguments: the overload is chosen as when it runs, by its arguments and
/// its receiver, so a call that no type settles (`floor(?, 1h)` into a
/// timestamp) is refused as ambiguous when prepared, as in Cassandra; its
/// arguments are checked in turn against the chosen parameter types.
fn resolve_stand_in_call(
    name: &ast::QualifiedName,
    args: &[Expr],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<()> {
    let system = name
        .keyspace
        .as_ref()
        .is_none_or(|k| k.as_str() == "system");
    if system && name.name.as_str() == "tojson" {
        if let [Expr::Bind(_)] = args {
            // toJson takes any type: a bind marker alone has none.
            return Err(QueryError::invalid(
                "Cannot infer type of argument ? in call to function system.tojson(any): use type casts to disambiguate",
            ));
        }
    }
    let function_args: Vec<Arg<'_>> = args.iter().map(term_arg).collect();
    let is_native = name.name.as_str() != "fromjson"
        && user_function(name, &function_args, receiver, ctx)?.is_none();
    if !is_native {
        return Ok(());
    }
    let function = resolve_function(name, &function_args, receiver)?;
    let return_type = function.return_type();
    if !is_value_compatible(receiver, return_type) {
        return Err(QueryError::invalid(format!(
            "Type error: cannot assign result of function system.{} (type {return_type}) to {receiver_name} (type {receiver})",
            function.name()
        )));
    }
    for (i, (arg, arg_type)) in args.iter().zip(function.arg_types()).enumerate() {
        let arg_name = format!("arg{i}(system.{})", function.name());
        evaluate(arg, arg_type, &arg_name, ctx)?;
    }
    Ok(())
}

fn evaluate_term(
    expr: &Expr,
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    match expr {
        Expr::Literal(Literal::Null) => {
            if receiver.is_counter() {
                return Err(QueryError::invalid(
                    "Invalid null value for counter increment/decrement",
                ));
            }
            Ok(Term::Null)
        }
        Expr::Literal(l) => evaluate_constant(l, receiver, receiver_name, ctx),
        Expr::Bind(marker) => evaluate_bind(marker.index, receiver, ctx),
        Expr::Function { name, args }
            if name.keyspace.is_none() && name.name.as_str() == "fromjson" =>
        {
            evaluate_fromjson(args, receiver, receiver_name, ctx)
        }
        Expr::Function { name, args } => {
            evaluate_function(name, args, receiver, receiver_name, ctx)
        }
        Expr::TypeHint { ty, expr: inner } => {
            evaluate_type_hint(expr, ty, inner, receiver, receiver_name, ctx)
        }
        Expr::Binary { op, left, right } => {
            evaluate_arithmetic(*op, left, right, receiver, receiver_name, ctx)
        }
        Expr::Negate(inner) => evaluate_negation(inner, receiver, receiver_name, ctx),
        Expr::List(items) => evaluate_list(items, receiver, receiver_name, ctx),
        Expr::Set(items) => evaluate_set(items, receiver, receiver_name, ctx),
        Expr::Map(entries) => evaluate_map(entries, receiver, receiver_name, ctx),
        Expr::Udt(fields) => evaluate_udt(fields, receiver, receiver_name, ctx),
        Expr::Tuple(items) => evaluate_tuple(items, receiver, receiver_name, ctx),
        Expr::Column(_)
        | Expr::CountStar
        | Expr::Metadata { .. }
        | Expr::Cast { .. }
        | Expr::Element { .. }
        | Expr::Slice { .. }
        | Expr::Field { .. } => Err(QueryError::invalid(format!(
            "{expr} is not a valid term for {receiver_name}"
        ))),
    }
}

/// `fromJson(text)`: the JSON text as a value of the receiver's type.
fn evaluate_fromjson(
    args: &[Expr],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let [arg] = args else {
        return Err(QueryError::invalid(
            "Invalid number of arguments for function system.fromjson(text)",
        ));
    };
    let text_type = CqlType::Native(NativeType::Text);
    if let Expr::Literal(l) = arg {
        if !test_assignment(arg, &text_type).is_assignable() {
            let found = match l {
                Literal::Integer(_) => "int",
                Literal::Float(_) => "double",
                Literal::Boolean(_) => "boolean",
                Literal::Blob(_) => "blob",
                Literal::Uuid(_) => "uuid",
                Literal::Duration(_) => "duration",
                _ => "text",
            };
            return Err(QueryError::invalid(format!(
                "Function system.fromjson requires an argument of type text, but found argument {arg} of type {found}"
            )));
        }
    }
    let text = match evaluate(arg, &text_type, receiver_name, ctx)? {
        Term::Value(bytes) => String::from_utf8(bytes)
            .map_err(|_| QueryError::invalid("fromJson() argument is not UTF-8"))?,
        other => return Ok(other),
    };
    let failure = |message: String| QueryError::FunctionFailure {
        keyspace: "system".into(),
        function: "fromjson".into(),
        arg_types: vec!["text".into()],
        message,
    };
    let json = crate::json::parse(&text).map_err(|e| {
        failure(format!(
            "execution of 'system.fromjson[text]' failed: Could not decode JSON string '{text}': {}",
            e.java()
        ))
    })?;
    if *receiver == CqlType::Native(NativeType::Counter) {
        // `CounterColumnType.fromJSONObject` throws, uncaught: `n = n +
        // fromJson('2')` writes nothing.
        return Err(QueryError::java_exception(
            "java.lang.UnsupportedOperationException",
            None,
        ));
    }
    match crate::json::from_json(receiver, &json, ctx.now_micros.div_euclid(1000)) {
        Ok(Some(bytes)) => Ok(Term::Value(bytes)),
        Ok(None) => Ok(Term::Null),
        Err(crate::json::JsonValueError::Invalid(e)) => Err(QueryError::invalid(e)),
        Err(crate::json::JsonValueError::Marshal(e)) => Err(failure(format!(
            "org.apache.cassandra.serializers.MarshalException: {e}"
        ))),
    }
}

/// `(type) term`: the term as the hinted type, which must be assignable
/// to the receiver.
fn evaluate_type_hint(
    expr: &Expr,
    ty: &rocksandra_cql::TypeExpr,
    inner: &Expr,
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let hinted = ty
        .resolve(&ctx.types)
        .map_err(|e| QueryError::invalid(e.to_string()))?;
    if !test_assignment(inner, &hinted).is_assignable() {
        return Err(QueryError::invalid(format!(
            "Cannot cast value {inner} to type {ty}"
        )));
    }
    if !is_value_compatible(receiver, &hinted) {
        return Err(QueryError::invalid(format!(
            "Cannot assign value ({ty}){inner} to {receiver_name} of type {receiver}"
        )));
    }
    evaluate(inner, &hinted, &expr.to_string(), ctx)
}

/// A list literal, for a list or vector receiver.
fn evaluate_list(
    items: &[Expr],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    match receiver.unfrozen() {
        CqlType::List(element) => {
            let elements = collection_elements(items, element, receiver_name, "list", ctx)?;
            Ok(Term::Value(build_collection(&refs(&elements))))
        }
        CqlType::Vector(element, dimension) => {
            evaluate_vector(items, element, *dimension, receiver, receiver_name, ctx)
        }
        // Cassandra 5.0's list literals name a set, map or tuple receiver
        // this way (a tuple is always frozen in its CQL text).
        CqlType::Set(_) | CqlType::Map(..) => Err(QueryError::invalid(format!(
            "Unexpected receiver type '{receiver}'; only list and vector are expected"
        ))),
        CqlType::Tuple(_) => Err(QueryError::invalid(format!(
            "Unexpected receiver type 'frozen<{}>'; only list and vector are expected",
            receiver.unfrozen()
        ))),
        _ => Err(QueryError::invalid(format!(
            "Invalid list literal for {receiver_name} of type {receiver}"
        ))),
    }
}

/// A set literal (sorted, without duplicates); `{}` is also an empty map.
fn evaluate_set(
    items: &[Expr],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    match receiver.unfrozen() {
        CqlType::Set(element) => {
            let mut elements = collection_elements(items, element, receiver_name, "set", ctx)?;
            sort_unique(&mut elements, element);
            Ok(Term::Value(build_collection(&refs(&elements))))
        }
        // `{}` is parsed as a set; an empty map is the same literal.
        CqlType::Map(..) if items.is_empty() => Ok(Term::Value(build_collection(&[]))),
        _ => Err(QueryError::invalid(format!(
            "Invalid set literal for {receiver_name} of type {receiver}"
        ))),
    }
}

// ---------------------------------------------------------------- assignment tests

/// `expr` as an argument of a function call, tested by `test_assignment`.
pub fn term_arg(expr: &Expr) -> Arg<'_> {
    Arg::Term(expr, test_assignment)
}

/// Cassandra's `testAssignment`: whether `expr` can be a value of `receiver`,
/// and whether it is an exact match (which overload resolution prefers).
pub fn test_assignment(expr: &Expr, receiver: &CqlType) -> Assignment {
    let unfrozen = receiver.unfrozen();
    match expr {
        Expr::Literal(Literal::Null) => {
            if receiver.is_counter() {
                Assignment::NotAssignable
            } else {
                Assignment::Weak
            }
        }
        Expr::Literal(l) => test_constant(l, receiver),
        Expr::Bind(_) => Assignment::Weak,
        Expr::Function { name, .. }
            if name.keyspace.is_none() && name.name.as_str() == "fromjson" =>
        {
            Assignment::Weak
        }
        Expr::Function { name, args } => {
            let function_args: Vec<Arg<'_>> = args.iter().map(term_arg).collect();
            match resolve_function(name, &function_args, receiver) {
                Ok(function) if function.return_type().unfrozen() == unfrozen => Assignment::Exact,
                Ok(function) if !is_value_compatible(receiver, function.return_type()) => {
                    Assignment::NotAssignable
                }
                _ => Assignment::Weak,
            }
        }
        Expr::TypeHint { ty, .. } => match ty.resolve(&KeyspaceTypes(&[])) {
            Ok(hinted) if hinted.unfrozen() == unfrozen => Assignment::Exact,
            Ok(hinted) if !is_value_compatible(receiver, &hinted) => Assignment::NotAssignable,
            _ => Assignment::Weak,
        },
        Expr::Binary { .. } | Expr::Negate(_) => match unfrozen {
            CqlType::Native(t) if t.is_numeric() => Assignment::Weak,
            CqlType::Native(
                NativeType::Text | NativeType::Ascii | NativeType::Timestamp | NativeType::Date,
            ) => Assignment::Weak,
            _ => Assignment::NotAssignable,
        },
        Expr::List(items) => match unfrozen {
            CqlType::List(_) if items.is_empty() => Assignment::Weak,
            CqlType::List(element) => {
                Assignment::all(items.iter().map(|i| test_assignment(i, element)))
            }
            CqlType::Vector(element, dimension) if items.len() == *dimension as usize => {
                Assignment::all(items.iter().map(|i| test_assignment(i, element)))
            }
            _ => Assignment::NotAssignable,
        },
        Expr::Set(items) => match unfrozen {
            CqlType::Set(_) | CqlType::Map(..) if items.is_empty() => Assignment::Weak,
            CqlType::Set(element) => {
                Assignment::all(items.iter().map(|i| test_assignment(i, element)))
            }
            _ => Assignment::NotAssignable,
        },
        Expr::Map(entries) => match unfrozen {
            CqlType::Map(..) if entries.is_empty() => Assignment::Weak,
            CqlType::Map(key, value) => Assignment::all(
                entries
                    .iter()
                    .flat_map(|(k, v)| [test_assignment(k, key), test_assignment(v, value)]),
            ),
            _ => Assignment::NotAssignable,
        },
        Expr::Udt(fields) => match unfrozen {
            CqlType::Udt(udt) => {
                let all_fit = fields.iter().all(|(name, value)| {
                    udt.fields
                        .iter()
                        .find(|(field, _)| field == name.as_str())
                        .is_none_or(|(_, ty)| test_assignment(value, ty).is_assignable())
                });
                if all_fit {
                    Assignment::Weak
                } else {
                    Assignment::NotAssignable
                }
            }
            _ => Assignment::NotAssignable,
        },
        Expr::Tuple(items) => match tuple_components(unfrozen).as_deref() {
            Some(types)
                if items.len() <= types.len()
                    && items
                        .iter()
                        .zip(types)
                        .all(|(i, t)| test_assignment(i, t).is_assignable()) =>
            {
                Assignment::Weak
            }
            _ => Assignment::NotAssignable,
        },
        _ => Assignment::NotAssignable,
    }
}

// ---------------------------------------------------------------- constants

/// Cassandra's constant kinds, named as in its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConstantKind {
    String,
    Integer,
    Uuid,
    Float,
    Boolean,
    Hex,
    Duration,
}

impl ConstantKind {
    fn name(self) -> &'static str {
        match self {
            ConstantKind::String => "STRING",
            ConstantKind::Integer => "INTEGER",
            ConstantKind::Uuid => "UUID",
            ConstantKind::Float => "FLOAT",
            ConstantKind::Boolean => "BOOLEAN",
            ConstantKind::Hex => "HEX",
            ConstantKind::Duration => "DURATION",
        }
    }
}

/// The kind and raw text of a non-null literal.
fn constant(l: &Literal) -> (ConstantKind, String) {
    match l {
        Literal::String(s) => (ConstantKind::String, s.clone()),
        Literal::Integer(s) => (ConstantKind::Integer, s.clone()),
        Literal::Float(s) => (ConstantKind::Float, s.clone()),
        Literal::Boolean(b) => (ConstantKind::Boolean, b.to_string()),
        Literal::Uuid(s) => (ConstantKind::Uuid, s.clone()),
        Literal::Blob(s) => (ConstantKind::Hex, s.clone()),
        Literal::Duration(s) => (ConstantKind::Duration, s.clone()),
        Literal::Null => (ConstantKind::String, "NULL".to_string()),
    }
}

/// The type Cassandra prefers for a constant (`getPreferedTypeFor`).
fn preferred_type(kind: ConstantKind, text: &str) -> Option<NativeType> {
    use NativeType as N;
    Some(match kind {
        ConstantKind::String if text.is_ascii() => N::Ascii,
        ConstantKind::String => N::Text,
        ConstantKind::Integer => {
            let value = literal::parse_varint(text)?;
            if i32::try_from(&value).is_ok() {
                N::Int
            } else if i64::try_from(&value).is_ok() {
                N::Bigint
            } else {
                N::Varint
            }
        }
        ConstantKind::Uuid => match literal::parse_uuid(text) {
            Some(u) if u[6] >> 4 == 1 => N::Timeuuid,
            _ => N::Uuid,
        },
        ConstantKind::Float => {
            if float_is_exact_double(text) {
                N::Double
            } else {
                N::Decimal
            }
        }
        ConstantKind::Boolean => N::Boolean,
        ConstantKind::Hex => N::Blob,
        ConstantKind::Duration => N::Duration,
    })
}

/// Whether the decimal text equals the double it parses to, as Cassandra's
/// `BigDecimal.compareTo(BigDecimal.valueOf(double))`.
fn float_is_exact_double(text: &str) -> bool {
    let unsigned = text.trim_start_matches(['-', '+']);
    if unsigned == "NaN" || unsigned == "Infinity" {
        return true;
    }
    let Some(double) = literal::parse_java_double(text) else {
        return true;
    };
    let Some(exact) = literal::parse_decimal(text) else {
        return true;
    };
    let Some(rounded) = literal::parse_decimal(&Value::Double(double).to_string()) else {
        return true;
    };
    normalize_decimal(exact) == normalize_decimal(rounded)
}

/// The decimal without trailing zeros, so equal numbers compare equal.
fn normalize_decimal(
    (mut unscaled, scale): (num_bigint::BigInt, i32),
) -> (num_bigint::BigInt, i64) {
    use num_traits::Zero;
    if unscaled.is_zero() {
        return (unscaled, 0);
    }
    let ten = num_bigint::BigInt::from(10);
    let mut scale = i64::from(scale);
    while (&unscaled % &ten).is_zero() {
        unscaled /= &ten;
        scale -= 1;
    }
    (unscaled, scale)
}

fn test_constant(l: &Literal, receiver: &CqlType) -> Assignment {
    use NativeType as N;
    let (kind, text) = constant(l);
    let target = match receiver.unfrozen() {
        CqlType::Native(t) => *t,
        CqlType::Custom(_) => return Assignment::Weak,
        _ => return Assignment::NotAssignable,
    };
    if preferred_type(kind, &text) == Some(target) {
        return Assignment::Exact;
    }
    let fits = match kind {
        ConstantKind::String => matches!(
            target,
            N::Ascii | N::Text | N::Inet | N::Date | N::Time | N::Timestamp
        ),
        ConstantKind::Integer => matches!(
            target,
            N::Bigint
                | N::Counter
                | N::Date
                | N::Decimal
                | N::Double
                | N::Duration
                | N::Float
                | N::Int
                | N::Smallint
                | N::Time
                | N::Timestamp
                | N::Tinyint
                | N::Varint
        ),
        ConstantKind::Uuid => matches!(target, N::Uuid | N::Timeuuid),
        ConstantKind::Float => matches!(target, N::Decimal | N::Double | N::Float),
        ConstantKind::Boolean => target == N::Boolean,
        ConstantKind::Hex => target == N::Blob,
        ConstantKind::Duration => target == N::Duration,
    };
    if fits {
        Assignment::Weak
    } else {
        Assignment::NotAssignable
    }
}

fn evaluate_constant(
    l: &Literal,
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let (kind, text) = constant(l);
    if !test_constant(l, receiver).is_assignable() {
        return Err(QueryError::invalid(format!(
            "Invalid {} constant ({text}) for \"{receiver_name}\" of type {receiver}",
            kind.name()
        )));
    }
    let target = match receiver.unfrozen() {
        CqlType::Native(t) => *t,
        // Custom types take hex constants as their bytes.
        _ if kind == ConstantKind::Hex => NativeType::Blob,
        _ => {
            return Err(QueryError::invalid(format!(
                "Constants of custom type {receiver} are not supported"
            )))
        }
    };
    let target = if kind == ConstantKind::Hex {
        NativeType::Blob
    } else {
        target
    };
    literal::from_string(target, &text, ctx.now_micros.div_euclid(1000))
        .map(Term::Value)
        .map_err(QueryError::Invalid)
}

// ---------------------------------------------------------------- bind markers

fn evaluate_bind(index: usize, receiver: &CqlType, ctx: &EvalContext<'_>) -> Result<Term> {
    let value = ctx.binds.get(index).ok_or_else(|| {
        QueryError::invalid(format!(
            "There is no value for bind marker {index} ({} values were bound)",
            ctx.binds.len()
        ))
    })?;
    match value {
        rocksandra_wire::Value::Null => Ok(Term::Null),
        rocksandra_wire::Value::Unset => Ok(Term::Unset),
        rocksandra_wire::Value::Bytes(bytes) => {
            validate(receiver, bytes)?;
            Ok(Term::Value(normalize_bound(receiver, bytes)))
        }
    }
}

/// A valid value of `ty`, never null, unset or empty, that stands for a
/// term's value before the statement runs (`EvalContext::stand_ins`):
/// zero, `'0'`, an empty collection, a tuple or UDT of stand-ins.
pub fn stand_in(ty: &CqlType) -> Value {
    match ty {
        CqlType::Native(native) => native_stand_in(*native),
        CqlType::List(_) => Value::List(Vec::new()),
        CqlType::Set(_) => Value::Set(Vec::new()),
        CqlType::Map(..) => Value::Map(Vec::new()),
        CqlType::Tuple(fields) => Value::Tuple(fields.iter().map(|f| Some(stand_in(f))).collect()),
        CqlType::Udt(udt) => {
            Value::Udt(udt.fields.iter().map(|(_, f)| Some(stand_in(f))).collect())
        }
        CqlType::Vector(element, dimension) => {
            let element = stand_in(element);
            Value::Vector(vec![element; *dimension as usize])
        }
        CqlType::Frozen(inner) => stand_in(inner),
        CqlType::Custom(_) => Value::Custom(vec![0]),
    }
}

fn native_stand_in(native: NativeType) -> Value {
    match native {
        NativeType::Ascii => Value::Ascii("0".to_string()),
        NativeType::Text => Value::Text("0".to_string()),
        NativeType::Bigint => Value::Bigint(0),
        NativeType::Counter => Value::Counter(0),
        NativeType::Blob => Value::Blob(vec![0]),
        NativeType::Boolean => Value::Boolean(false),
        // 1970-01-01.
        NativeType::Date => Value::Date(1 << 31),
        NativeType::Decimal => Value::Decimal {
            unscaled: 0.into(),
            scale: 0,
        },
        NativeType::Double => Value::Double(0.0),
        NativeType::Duration => Value::Duration {
            months: 0,
            days: 0,
            nanos: 0,
        },
        NativeType::Float => Value::Float(0.0),
        NativeType::Inet => Value::Inet(std::net::Ipv4Addr::UNSPECIFIED.into()),
        NativeType::Int => Value::Int(0),
        NativeType::Smallint => Value::Smallint(0),
        NativeType::Time => Value::Time(0),
        NativeType::Timestamp => Value::Timestamp(0),
        NativeType::Timeuuid => Value::Timeuuid(rocksandra_data::uuid::time_v1(0, 0)),
        NativeType::Tinyint => Value::Tinyint(0),
        NativeType::Uuid => Value::Uuid([0; 16]),
        NativeType::Varint => Value::Varint(0.into()),
    }
}

/// Sets and maps from clients may come unsorted or with duplicates;
/// Cassandra rebuilds them in its comparator's order.
fn normalize_bound(receiver: &CqlType, bytes: &[u8]) -> Vec<u8> {
    let sorted = match receiver.unfrozen() {
        CqlType::Set(element) => split_elements(bytes).map(|mut elements| {
            sort_unique(&mut elements, element);
            build_collection(&refs(&elements))
        }),
        CqlType::Map(key, _) => split_elements(bytes).and_then(|elements| {
            if elements.len() % 2 != 0 {
                return None;
            }
            let entries = elements
                .chunks(2)
                .map(|pair| (pair[0].clone(), pair[1].clone()))
                .collect();
            Some(build_map(sort_entries(entries, key)))
        }),
        _ => None,
    };
    sorted.unwrap_or_else(|| bytes.to_vec())
}

fn split_elements(bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let (count, mut rest) = bytes.split_at_checked(4)?;
    let count = usize::try_from(i32::from_be_bytes(count.try_into().ok()?)).ok()?;
    let mut elements = Vec::with_capacity(count.min(bytes.len()));
    while !rest.is_empty() {
        let (length, tail) = rest.split_at_checked(4)?;
        let length = usize::try_from(i32::from_be_bytes(length.try_into().ok()?)).ok()?;
        let (element, tail) = tail.split_at_checked(length)?;
        elements.push(element.to_vec());
        rest = tail;
    }
    Some(elements)
}

// ---------------------------------------------------------------- functions

fn resolve_function(
    name: &ast::QualifiedName,
    args: &[Arg<'_>],
    receiver: &CqlType,
) -> Result<functions::Function> {
    let qualified = match &name.keyspace {
        Some(ks) if ks.as_str() != "system" => format!("{}.{}", ks.as_str(), name.name.as_str()),
        _ => name.name.as_str().to_string(),
    };
    if name
        .keyspace
        .as_ref()
        .is_some_and(|ks| ks.as_str() != "system")
    {
        return Err(QueryError::invalid(format!(
            "Unknown function {qualified} called"
        )));
    }
    functions::resolve_for(&qualified, args, name.keyspace.is_some(), Some(receiver))
}

fn evaluate_function(
    name: &ast::QualifiedName,
    args: &[Expr],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let function_args: Vec<Arg<'_>> = args.iter().map(term_arg).collect();
    if let Some(function) = user_function(name, &function_args, receiver, ctx)? {
        return evaluate_user_function(function, args, receiver, receiver_name, ctx);
    }
    let function = resolve_function(name, &function_args, receiver)?;
    let return_type = function.return_type();
    if !is_value_compatible(receiver, return_type) {
        return Err(QueryError::invalid(format!(
            "Type error: cannot assign result of function system.{} (type {return_type}) to {receiver_name} (type {receiver})",
            function.name()
        )));
    }
    let mut values = Vec::with_capacity(args.len());
    for (i, (arg, arg_type)) in args.iter().zip(function.arg_types()).enumerate() {
        let arg_name = format!("arg{i}(system.{})", function.name());
        values.push(match evaluate(arg, arg_type, &arg_name, ctx)? {
            Term::Value(bytes) => Some(bytes),
            Term::Null => None,
            Term::Unset => {
                return Err(QueryError::invalid(format!(
                    "Invalid unset value for argument in call to function {}",
                    function.name()
                )))
            }
        });
    }
    let call_context = CallContext {
        now_micros: ctx.now_micros,
        random: ctx.random,
    };
    Ok(match function.call(&values, &call_context)? {
        Some(bytes) => Term::Value(bytes),
        None => Term::Null,
    })
}

/// The user-defined function a call in a term names, if one does (a
/// native function of the same unqualified name wins, as in selections).
fn user_function<'s>(
    name: &ast::QualifiedName,
    args: &[Arg<'_>],
    receiver: &CqlType,
    ctx: &EvalContext<'s>,
) -> Result<Option<&'s crate::udf::UserFunction>> {
    let fname = name.name.as_str();
    let keyspace_name = match &name.keyspace {
        Some(ks) if ks.as_str() == "system" => return Ok(None),
        Some(ks) => ks.as_str(),
        None if functions::exists(fname) => return Ok(None),
        None => ctx.keyspace,
    };
    let Some(keyspace) = ctx.schema.and_then(|s| s.keyspace(keyspace_name)) else {
        return Ok(None);
    };
    let overloads = crate::functions::user::overloads(keyspace, fname);
    if overloads.is_empty() {
        return Ok(None);
    }
    let called = format!("{keyspace_name}.{fname}");
    let written = match &name.keyspace {
        Some(_) => called.clone(),
        None => fname.to_string(),
    };
    let call = crate::functions::user::Call {
        written: &written,
        resolved: &called,
        receiver: Some(receiver),
    };
    match crate::functions::user::choose(&overloads, args, &call)? {
        crate::functions::user::Routine::Scalar(f) => Ok(Some(*f)),
        crate::functions::user::Routine::Aggregate(_) => Err(QueryError::invalid(format!(
            "Aggregate functions are not supported within a term: {called}"
        ))),
    }
}

fn evaluate_user_function(
    function: &crate::udf::UserFunction,
    args: &[Expr],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let called = format!("{}.{}", function.keyspace, function.name);
    if !is_value_compatible(receiver, &function.return_type) {
        return Err(QueryError::invalid(format!(
            "Type error: cannot assign result of function {called} (type {}) to {receiver_name} (type {receiver})",
            function.return_type
        )));
    }
    let mut values = Vec::with_capacity(args.len());
    for (i, (arg, arg_type)) in args.iter().zip(&function.argument_types).enumerate() {
        let arg_name = format!("arg{i}({called})");
        values.push(match evaluate(arg, arg_type, &arg_name, ctx)? {
            Term::Value(bytes) => Some(bytes),
            Term::Null => None,
            Term::Unset => {
                return Err(QueryError::invalid(format!(
                    "Invalid unset value for argument in call to function {called}"
                )))
            }
        });
    }
    let refs: Vec<Option<&[u8]>> = values.iter().map(Option::as_deref).collect();
    Ok(match function.call(&refs)? {
        Some(bytes) => Term::Value(bytes),
        None => Term::Null,
    })
}

// ---------------------------------------------------------------- arithmetic

/// `(x)` in an arithmetic operand is grouping, not a one-element tuple.
fn ungroup(expr: &Expr) -> &Expr {
    match expr {
        Expr::Tuple(items) if items.len() == 1 => ungroup(&items[0]),
        other => other,
    }
}

pub(crate) fn binary_op(op: ast::BinaryOp) -> BinaryOp {
    match op {
        ast::BinaryOp::Add => BinaryOp::Add,
        ast::BinaryOp::Subtract => BinaryOp::Subtract,
        ast::BinaryOp::Multiply => BinaryOp::Multiply,
        ast::BinaryOp::Divide => BinaryOp::Divide,
        ast::BinaryOp::Remainder => BinaryOp::Remainder,
    }
}

/// Arithmetic on terms: the operation function Cassandra's resolver picks
/// for the receiver (numbers in the wider type, a timestamp or date plus or
/// minus a duration, text concatenation), each operand evaluated as its
/// argument type.
fn evaluate_arithmetic(
    op: ast::BinaryOp,
    left: &Expr,
    right: &Expr,
    receiver: &CqlType,
    _receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    use crate::functions::operations::{operand_text, resolve, Operand};
    let (left, right) = (ungroup(left), ungroup(right));
    let operation = resolve(
        binary_op(op),
        Operand::Term(left, test_assignment),
        Operand::Term(right, test_assignment),
        (&operand_text(left), &operand_text(right)),
        Some(receiver),
    )?;
    let name = |i: usize| format!("arg{i}(system.{})", operation.function_name());
    let a = evaluate(left, &CqlType::Native(operation.left), &name(0), ctx)?;
    let b = evaluate(right, &CqlType::Native(operation.right), &name(1), ctx)?;
    let (Term::Value(a), Term::Value(b)) = (a, b) else {
        return Ok(Term::Null);
    };
    Ok(match operation.execute(&a, &b)? {
        Some(v) => Term::Value(v),
        None => Term::Null,
    })
}

fn evaluate_negation(
    inner: &Expr,
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let inner = ungroup(inner);
    if !matches!(receiver.unfrozen(), CqlType::Native(t) if t.is_numeric()) {
        return Err(QueryError::invalid(format!(
            "the operation '-{inner}' cannot be assigned to {receiver_name} of type {receiver}"
        )));
    }
    match evaluate(inner, receiver, receiver_name, ctx)? {
        Term::Value(bytes) if !bytes.is_empty() => Ok(Term::Value(
            Num::decode(receiver, &bytes)?.negate().encode(),
        )),
        other => Ok(other),
    }
}

// ---------------------------------------------------------------- collections

fn refs(elements: &[Vec<u8>]) -> Vec<&[u8]> {
    elements.iter().map(Vec::as_slice).collect()
}

pub(crate) fn contains_bind_marker(expr: &Expr) -> bool {
    match expr {
        Expr::Bind(_) => true,
        Expr::Function { args, .. } => args.iter().any(contains_bind_marker),
        Expr::TypeHint { expr, .. } | Expr::Negate(expr) => contains_bind_marker(expr),
        Expr::Binary { left, right, .. } => {
            contains_bind_marker(left) || contains_bind_marker(right)
        }
        Expr::List(items) | Expr::Set(items) | Expr::Tuple(items) => {
            items.iter().any(contains_bind_marker)
        }
        Expr::Map(entries) => entries
            .iter()
            .any(|(k, v)| contains_bind_marker(k) || contains_bind_marker(v)),
        Expr::Udt(fields) => fields.iter().any(|(_, v)| contains_bind_marker(v)),
        _ => false,
    }
}

/// Whether a collection literal's element holds a bind marker the literal
/// itself refuses: one outside any nested collection literal, which
/// refuses its own (Cassandra's message names the innermost literal).
fn direct_bind_marker(item: &Expr) -> bool {
    !matches!(item, Expr::List(_) | Expr::Set(_) | Expr::Map(_)) && contains_bind_marker(item)
}

/// An element of a collection literal: neither null nor unset.
fn element_value(term: Term) -> Result<Vec<u8>> {
    match term {
        Term::Value(bytes) => Ok(bytes),
        Term::Null => Err(QueryError::invalid(
            "null is not supported inside collections",
        )),
        Term::Unset => Err(QueryError::invalid(
            "unset value is not supported inside collections",
        )),
    }
}

/// The elements of a list or set literal, checked as Cassandra does: every
/// element's type first, then each element's value.
fn collection_elements(
    items: &[Expr],
    element: &CqlType,
    receiver_name: &str,
    what: &str,
    ctx: &EvalContext<'_>,
) -> Result<Vec<Vec<u8>>> {
    for item in items {
        if !test_assignment(item, element).is_assignable() {
            return Err(QueryError::invalid(format!(
                "Invalid {what} literal for {receiver_name}: value {item} is not of type {element}"
            )));
        }
    }
    let spec = format!("value({receiver_name})");
    let mut terms = Vec::with_capacity(items.len());
    for item in items {
        if direct_bind_marker(item) {
            return Err(QueryError::invalid(format!(
                "Invalid {what} literal for {receiver_name}: bind variables are not supported inside collection literals"
            )));
        }
        terms.push(evaluate(item, element, &spec, ctx)?);
    }
    terms.into_iter().map(element_value).collect()
}

fn sort_unique(elements: &mut Vec<Vec<u8>>, element: &CqlType) {
    elements.sort_by(|a, b| compare(element, a, b));
    elements.dedup_by(|a, b| compare(element, a, b) == Ordering::Equal);
}

/// A serialized map entry: key and value bytes.
type Entry = (Vec<u8>, Vec<u8>);

/// Sorts map entries by key; of equal keys the last one wins, as in Java's
/// `TreeMap.put`.
fn sort_entries(entries: Vec<Entry>, key: &CqlType) -> Vec<Entry> {
    let mut entries: Vec<(usize, Entry)> = entries.into_iter().enumerate().collect();
    entries.sort_by(|(i, (a, _)), (j, (b, _))| compare(key, a, b).then(j.cmp(i)));
    entries.dedup_by(|(_, (a, _)), (_, (b, _))| compare(key, a, b) == Ordering::Equal);
    entries.into_iter().map(|(_, entry)| entry).collect()
}

fn build_map(entries: Vec<Entry>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for (key, value) in entries {
        for part in [key, value] {
            out.extend_from_slice(&(part.len() as i32).to_be_bytes());
            out.extend_from_slice(&part);
        }
    }
    out
}

fn evaluate_map(
    entries: &[(Expr, Expr)],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let CqlType::Map(key_type, value_type) = receiver.unfrozen() else {
        return Err(QueryError::invalid(format!(
            "Invalid map literal for {receiver_name} of type {receiver}"
        )));
    };
    for (key, value) in entries {
        if !test_assignment(key, key_type).is_assignable() {
            return Err(QueryError::invalid(format!(
                "Invalid map literal for {receiver_name}: key {key} is not of type {key_type}"
            )));
        }
        if !test_assignment(value, value_type).is_assignable() {
            return Err(QueryError::invalid(format!(
                "Invalid map literal for {receiver_name}: value {value} is not of type {value_type}"
            )));
        }
    }
    let (key_spec, value_spec) = (
        format!("key({receiver_name})"),
        format!("value({receiver_name})"),
    );
    let mut terms = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        if direct_bind_marker(key) || direct_bind_marker(value) {
            return Err(QueryError::invalid(format!(
                "Invalid map literal for {receiver_name}: bind variables are not supported inside collection literals"
            )));
        }
        let k = evaluate(key, key_type, &key_spec, ctx)?;
        terms.push((k, evaluate(value, value_type, &value_spec, ctx)?));
    }
    let mut pairs = Vec::with_capacity(terms.len());
    for (k, v) in terms {
        pairs.push((element_value(k)?, element_value(v)?));
    }
    Ok(Term::Value(build_map(sort_entries(pairs, key_type))))
}

// ---------------------------------------------------------------- vectors, tuples, UDTs

/// Byte width of a vector element written without a length, as Cassandra's
/// `VectorType` decides it.
fn fixed_vector_width(element: &CqlType) -> Option<usize> {
    use NativeType as N;
    match element.unfrozen() {
        CqlType::Native(N::Boolean) => Some(1),
        CqlType::Native(N::Int | N::Float) => Some(4),
        CqlType::Native(N::Bigint | N::Counter | N::Double | N::Timestamp) => Some(8),
        CqlType::Native(N::Uuid | N::Timeuuid) => Some(16),
        CqlType::Vector(inner, dimension) => {
            fixed_vector_width(inner)?.checked_mul(*dimension as usize)
        }
        _ => None,
    }
}

/// Cassandra's unsigned vint: leading one bits of the first byte count the
/// extra bytes.
fn write_unsigned_vint(value: u64, out: &mut Vec<u8>) {
    let size = ((639 - 9 * (value | 1).leading_zeros()) >> 6) as usize;
    if size == 1 {
        out.push(value as u8);
        return;
    }
    let bytes = value.to_be_bytes();
    if size == 9 {
        out.push(0xff);
        out.extend_from_slice(&bytes);
        return;
    }
    let mut encoded = bytes[8 - size..].to_vec();
    encoded[0] |= !(0xffu8 >> (size - 1));
    out.extend_from_slice(&encoded);
}

fn evaluate_vector(
    items: &[Expr],
    element: &CqlType,
    dimension: u32,
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    if items.len() != dimension as usize {
        return Err(QueryError::invalid(format!(
            "Invalid vector literal for {receiver_name} of type {receiver}; expected {dimension} elements, but given {}",
            items.len()
        )));
    }
    let spec = format!("value({receiver_name})");
    let fixed = fixed_vector_width(element).is_some();
    let mut out = Vec::new();
    for item in items {
        if !test_assignment(item, element).is_assignable() {
            return Err(QueryError::invalid(format!(
                "Invalid vector literal for {receiver_name}: value {item} is not of type {element}"
            )));
        }
        let bytes = match evaluate(item, element, &spec, ctx)? {
            Term::Value(bytes) => bytes,
            Term::Null => return Err(QueryError::invalid("null is not supported inside vectors")),
            Term::Unset => {
                return Err(QueryError::invalid(
                    "unset value is not supported inside vectors",
                ))
            }
        };
        if fixed {
            out.extend_from_slice(&bytes);
        } else {
            write_unsigned_vint(bytes.len() as u64, &mut out);
            out.extend_from_slice(&bytes);
        }
    }
    validate(receiver, &out)?;
    Ok(Term::Value(out))
}

/// Writes `[i32 length][bytes]`, or length -1 for null.
fn write_field(value: Option<&[u8]>, out: &mut Vec<u8>) {
    match value {
        Some(bytes) => {
            out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
            out.extend_from_slice(bytes);
        }
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
    }
}

fn evaluate_tuple(
    items: &[Expr],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let Some(types) = tuple_components(receiver.unfrozen()) else {
        return Err(QueryError::invalid(format!(
            "Invalid tuple type literal for {receiver_name} of type {receiver}"
        )));
    };
    for (i, item) in items.iter().enumerate() {
        let Some(component) = types.get(i) else {
            return Err(QueryError::invalid(format!(
                "Invalid tuple literal for {receiver_name}: too many elements. Type frozen<{}> expects {} but got {}",
                receiver.unfrozen(),
                types.len(),
                items.len()
            )));
        };
        if !test_assignment(item, component).is_assignable() {
            return Err(QueryError::invalid(format!(
                "Invalid tuple literal for {receiver_name}: component {i} is not of type {component}"
            )));
        }
    }
    let mut out = Vec::new();
    for (i, (item, component)) in items.iter().zip(&types).enumerate() {
        match evaluate(item, component, &format!("{receiver_name}[{i}]"), ctx)? {
            Term::Value(bytes) => write_field(Some(&bytes), &mut out),
            Term::Null => write_field(None, &mut out),
            Term::Unset => {
                return Err(QueryError::invalid(format!(
                    "Invalid unset value for tuple field number {i}"
                )))
            }
        }
    }
    Ok(Term::Value(out))
}

/// The component types a tuple literal fills in order: a tuple's, or a
/// user type's fields (Cassandra's `UserType` is a `TupleType`).
fn tuple_components(ty: &CqlType) -> Option<Vec<CqlType>> {
    match ty {
        CqlType::Tuple(types) => Some(types.clone()),
        CqlType::Udt(udt) => Some(udt.fields.iter().map(|(_, t)| t.clone()).collect()),
        _ => None,
    }
}

fn evaluate_udt(
    fields: &[(ast::Ident, Expr)],
    receiver: &CqlType,
    receiver_name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Term> {
    let CqlType::Udt(udt) = receiver.unfrozen() else {
        return Err(QueryError::invalid(format!(
            "Invalid user type literal for {receiver_name} of type {receiver}"
        )));
    };
    let value_of = |name: &str| {
        fields
            .iter()
            .rev()
            .find(|(f, _)| f.as_str() == name)
            .map(|(_, v)| v)
    };
    for (name, ty) in &udt.fields {
        if let Some(value) = value_of(name) {
            if !test_assignment(value, ty).is_assignable() {
                return Err(QueryError::invalid(format!(
                    "Invalid user type literal for {receiver_name}: field {name} is not of type {ty}"
                )));
            }
        }
    }
    let mut out = Vec::new();
    for (name, ty) in &udt.fields {
        let term = match value_of(name) {
            Some(value) => evaluate(value, ty, &format!("{receiver_name}.{name}"), ctx)?,
            None => Term::Null,
        };
        match term {
            Term::Value(bytes) => write_field(Some(&bytes), &mut out),
            Term::Null => write_field(None, &mut out),
            // Cassandra's unset marker is an empty buffer, which the
            // literal serializes as the field's empty value.
            Term::Unset => write_field(Some(&[]), &mut out),
        }
    }
    if let Some((unknown, _)) = fields
        .iter()
        .find(|(f, _)| !udt.fields.iter().any(|(name, _)| name == f.as_str()))
    {
        return Err(unknown_field(unknown.as_str(), udt));
    }
    Ok(Term::Value(out))
}

fn unknown_field(field: &str, udt: &UdtType) -> QueryError {
    QueryError::invalid(format!(
        "Unknown field '{field}' in value of user defined type {}",
        udt.name
    ))
}

#[cfg(test)]
mod tests;
