//! Cassandra's native (system) scalar functions, shared by terms and selectors.
//!
//! The interface:
//! - [`resolve`] picks a function by name and arguments ([`Arg`]: a known
//!   type, or an untyped term tested the way Cassandra's `FunctionResolver`
//!   does), with Cassandra's messages for unknown names, wrong arity, type
//!   errors and ambiguity;
//! - [`Function::call`] runs it on serialized arguments (`None` is null) with
//!   the request's time and randomness from a [`CallContext`];
//! - [`cast`] / [`can_cast`] are `CAST(x AS type)` (Cassandra's `CastFcts`).
//!
//! Names are matched as given: the parser lower-cases unquoted names, so
//! `toTimestamp` arrives as `totimestamp`. Both the 5.0 snake_case names and
//! the legacy names (`to_timestamp`, `totimestamp`) resolve.
//!
//! Not here: `token`, `ttl`, `writetime`, `toJson`/`fromJson`, aggregates and
//! user-defined functions (the executor owns those).

use std::cmp::Ordering;

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive};
use rocksandra_cql::ast::Expr;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::uuid;
use rocksandra_data::value::{compare, validate};
use rocksandra_data::Value;

use crate::error::{QueryError, Result};
use crate::term::literal::{civil_from_days, parse_decimal, DATE_EPOCH_OFFSET, MILLIS_PER_DAY};

pub(crate) mod aggregates;
mod bigmath;
mod floor;
mod masking;
pub(crate) mod operations;
pub mod user;
pub mod vector;

/// What a function call may need besides its arguments.
pub struct CallContext<'a> {
    /// The request's time, in microseconds since the epoch.
    pub now_micros: i64,
    /// Randomness for `uuid()` and the clock sequence and node of timeuuids.
    pub random: &'a dyn Fn() -> u64,
}

/// Cassandra's `AssignmentTestable.TestResult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assignment {
    Exact,
    Weak,
    NotAssignable,
}

impl Assignment {
    pub(crate) fn is_assignable(self) -> bool {
        self != Assignment::NotAssignable
    }

    /// `TestResult.testAll`: exact if all are, not assignable if any is not.
    pub(crate) fn all(results: impl IntoIterator<Item = Assignment>) -> Assignment {
        let mut all_exact = true;
        for result in results {
            match result {
                Assignment::NotAssignable => return Assignment::NotAssignable,
                Assignment::Weak => all_exact = false,
                Assignment::Exact => {}
            }
        }
        if all_exact {
            Assignment::Exact
        } else {
            Assignment::Weak
        }
    }
}

/// How a term fits a parameter type (Cassandra's `testAssignment`). The
/// caller supplies it with the term (`term::test_assignment`): a term may
/// itself be a function call, whose overloads are resolved here in turn.
pub type AssignmentTest = fn(&Expr, &CqlType) -> Assignment;

/// One argument of a call, as far as resolution can see it.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'e> {
    /// The argument's type is known: a column, a function result, a cast.
    Typed(&'e CqlType),
    /// A selector of a known type, with its text for messages.
    Selector(&'e CqlType, &'e str),
    /// A term whose type depends on where it goes: a literal, a bind
    /// marker, a collection literal; and how it fits a type.
    Term(&'e Expr, AssignmentTest),
}

/// A resolved native function.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    name: String,
    kind: Kind,
    arg_types: Vec<CqlType>,
    return_type: CqlType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Now,
    Uuid,
    CurrentTimestamp,
    CurrentDate,
    CurrentTime,
    MinTimeuuid,
    MaxTimeuuid,
    ToDate,
    ToTimestamp,
    ToUnixTimestamp,
    Floor,
    ToBlob,
    FromBlob,
    Abs,
    Exp,
    Log,
    Log10,
    Round,
    MapKeys,
    MapValues,
    CollectionCount,
    CollectionMin,
    CollectionMax,
    CollectionSum,
    CollectionAvg,
    MaskNull,
    MaskDefault,
    MaskReplace,
    MaskInner,
    MaskOuter,
    MaskHash,
    Similarity(vector::Similarity),
}

impl Function {
    /// The name as called (`totimestamp` or `to_timestamp`).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn arg_types(&self) -> &[CqlType] {
        &self.arg_types
    }

    pub fn return_type(&self) -> &CqlType {
        &self.return_type
    }

    /// False for functions whose result changes from call to call (`now()`,
    /// `uuid()`, `current*()`), which Cassandra never evaluates at prepare time.
    pub fn is_deterministic(&self) -> bool {
        !matches!(
            self.kind,
            Kind::Now | Kind::Uuid | Kind::CurrentTimestamp | Kind::CurrentDate | Kind::CurrentTime
        )
    }

    /// Whether Cassandra takes the function for monotonic (so GROUP BY
    /// accepts it) when the arguments marked in `constant` are fixed
    /// values and the others come from the row: the `to_*` conversions,
    /// and `floor` of a value by constant duration and start time.
    pub fn is_monotonic(&self, constant: &[bool]) -> bool {
        match self.kind {
            Kind::ToDate | Kind::ToTimestamp | Kind::ToUnixTimestamp => true,
            Kind::Floor => match constant.split_first() {
                Some((value, rest)) => !*value && rest.iter().all(|c| *c),
                None => false,
            },
            _ => false,
        }
    }

    /// Cassandra's text of a partial application (`PartiallyAppliedScalarFunction`):
    /// the signature with `(constant)` after the types of fixed arguments.
    pub fn partial_signature(&self, constant: &[bool]) -> String {
        let args: Vec<String> = self
            .arg_types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if constant.get(i).copied().unwrap_or(false) {
                    format!("{t}(constant)")
                } else {
                    t.to_string()
                }
            })
            .collect();
        format!(
            "system.{} : ({}) -> {}",
            self.name,
            args.join(", "),
            self.return_type
        )
    }

    /// Cassandra's `system.name : (types) -> type`.
    pub fn signature(&self) -> String {
        let args: Vec<String> = self.arg_types.iter().map(ToString::to_string).collect();
        format!(
            "system.{} : ({}) -> {}",
            self.name,
            args.join(", "),
            self.return_type
        )
    }

    /// Runs the function. `args` are serialized values, `None` for null.
    pub fn call(&self, args: &[Option<Vec<u8>>], ctx: &CallContext<'_>) -> Result<Option<Vec<u8>>> {
        if args.len() != self.arg_types.len() {
            return Err(QueryError::invalid(format!(
                "Invalid number of arguments in call to function system.{}: {} required but {} provided",
                self.name,
                self.arg_types.len(),
                args.len()
            )));
        }
        let first = args.first().and_then(Option::as_deref);
        let first_type = self.arg_types.first();
        Ok(match self.kind {
            Kind::Now => Some(timeuuid_at(ctx.now_micros, (ctx.random)()).to_vec()),
            Kind::Uuid => Some(uuid::random_v4(ctx.random).to_vec()),
            Kind::CurrentTimestamp => Some(ctx.now_micros.div_euclid(1000).to_be_bytes().to_vec()),
            Kind::CurrentDate => Some(
                date_of_millis(ctx.now_micros.div_euclid(1000))
                    .to_be_bytes()
                    .to_vec(),
            ),
            Kind::CurrentTime => {
                let micros_of_day = ctx.now_micros.rem_euclid(MILLIS_PER_DAY * 1000);
                Some((micros_of_day * 1000).to_be_bytes().to_vec())
            }
            Kind::MinTimeuuid | Kind::MaxTimeuuid => match first.filter(|b| !b.is_empty()) {
                None => None,
                Some(bytes) => {
                    let millis = read_i64(bytes)?;
                    let uuid = if self.kind == Kind::MinTimeuuid {
                        min_timeuuid(millis)
                    } else {
                        max_timeuuid(millis)
                    };
                    Some(uuid.to_vec())
                }
            },
            Kind::ToDate | Kind::ToTimestamp | Kind::ToUnixTimestamp => {
                match (first.filter(|b| !b.is_empty()), first_type) {
                    (Some(bytes), Some(ty)) => {
                        let millis = temporal_millis(ty, bytes)?;
                        Some(match self.kind {
                            Kind::ToDate => date_of_millis(millis).to_be_bytes().to_vec(),
                            _ => millis.to_be_bytes().to_vec(),
                        })
                    }
                    _ => None,
                }
            }
            Kind::Floor => floor::call(&self.arg_types, args)?,
            Kind::ToBlob => first.map(<[u8]>::to_vec),
            Kind::FromBlob => match first {
                None => None,
                Some(bytes) => {
                    if validate(&self.return_type, bytes).is_err() {
                        return Err(QueryError::invalid(format!(
                            "In call to function system.{}, value 0x{} is not a valid binary representation for type {}",
                            self.name,
                            hex::encode(bytes),
                            self.return_type
                        )));
                    }
                    Some(bytes.to_vec())
                }
            },
            Kind::Abs | Kind::Exp | Kind::Log | Kind::Log10 | Kind::Round => {
                match (first.filter(|b| !b.is_empty()), first_type) {
                    (Some(bytes), Some(ty)) => {
                        let number = Num::decode(ty, bytes)?;
                        Some(math(self.kind, number)?.encode())
                    }
                    _ => None,
                }
            }
            Kind::MapKeys
            | Kind::MapValues
            | Kind::CollectionCount
            | Kind::CollectionMin
            | Kind::CollectionMax
            | Kind::CollectionSum
            | Kind::CollectionAvg => match (first, first_type) {
                (Some(bytes), Some(ty)) => self.collection_function(ty, bytes)?,
                _ => None,
            },
            Kind::MaskNull
            | Kind::MaskDefault
            | Kind::MaskReplace
            | Kind::MaskInner
            | Kind::MaskOuter
            | Kind::MaskHash => masking::call(self, args)?,
            Kind::Similarity(kind) => vector::call(&self.name, kind, args)?,
        })
    }

    fn collection_function(&self, ty: &CqlType, bytes: &[u8]) -> Result<Option<Vec<u8>>> {
        let elements = split_collection(bytes)?;
        let (element_type, items): (&CqlType, Vec<&[u8]>) = match ty.unfrozen() {
            CqlType::Map(key, value) => {
                let pairs = elements.chunks(2);
                if elements.len() % 2 != 0 {
                    return Err(QueryError::invalid("Not enough bytes to read a map"));
                }
                match self.kind {
                    Kind::MapKeys => (key, pairs.map(|p| p[0]).collect()),
                    Kind::MapValues => (value, pairs.map(|p| p[1]).collect()),
                    _ => (value, pairs.map(|p| p[1]).collect()),
                }
            }
            CqlType::List(e) | CqlType::Set(e) => (e, elements),
            other => return Err(QueryError::invalid(format!("{other} is not a collection"))),
        };
        Ok(match self.kind {
            Kind::MapKeys => {
                let mut keys = items;
                keys.sort_by(|a, b| compare(element_type, a, b));
                keys.dedup_by(|a, b| compare(element_type, a, b) == Ordering::Equal);
                Some(build_collection(&keys))
            }
            Kind::MapValues => Some(build_collection(&items)),
            Kind::CollectionCount => {
                let count = i32::try_from(items.len()).unwrap_or(i32::MAX);
                Some(count.to_be_bytes().to_vec())
            }
            Kind::CollectionMin => items
                .iter()
                .min_by(|a, b| compare(element_type, a, b))
                .map(|b| b.to_vec()),
            Kind::CollectionMax => items
                .iter()
                .max_by(|a, b| compare(element_type, a, b))
                .map(|b| b.to_vec()),
            Kind::CollectionSum | Kind::CollectionAvg => Some(aggregates::sum_or_avg(
                self.kind == Kind::CollectionAvg,
                element_type,
                &items,
            )?),
            _ => None,
        })
    }
}

// ---------------------------------------------------------------- resolution

fn native(t: NativeType) -> CqlType {
    CqlType::Native(t)
}

/// The overloads registered under `name`, in Cassandra's order.
fn candidates(name: &str) -> Vec<(Kind, Vec<CqlType>, CqlType)> {
    use NativeType as N;
    let fixed = |kind, args: &[NativeType], ret| {
        vec![(kind, args.iter().map(|t| native(*t)).collect(), native(ret))]
    };
    match name {
        "now" | "current_timeuuid" | "currenttimeuuid" => fixed(Kind::Now, &[], N::Timeuuid),
        "uuid" => fixed(Kind::Uuid, &[], N::Uuid),
        "current_timestamp" | "currenttimestamp" => {
            fixed(Kind::CurrentTimestamp, &[], N::Timestamp)
        }
        "current_date" | "currentdate" => fixed(Kind::CurrentDate, &[], N::Date),
        "current_time" | "currenttime" => fixed(Kind::CurrentTime, &[], N::Time),
        "min_timeuuid" | "mintimeuuid" => fixed(Kind::MinTimeuuid, &[N::Timestamp], N::Timeuuid),
        "max_timeuuid" | "maxtimeuuid" => fixed(Kind::MaxTimeuuid, &[N::Timestamp], N::Timeuuid),
        "to_date" | "todate" => [N::Timeuuid, N::Timestamp]
            .into_iter()
            .flat_map(|t| fixed(Kind::ToDate, &[t], N::Date))
            .collect(),
        "to_timestamp" | "totimestamp" => [N::Timeuuid, N::Date]
            .into_iter()
            .flat_map(|t| fixed(Kind::ToTimestamp, &[t], N::Timestamp))
            .collect(),
        "to_unix_timestamp" | "tounixtimestamp" => [N::Timeuuid, N::Timestamp, N::Date]
            .into_iter()
            .flat_map(|t| fixed(Kind::ToUnixTimestamp, &[t], N::Bigint))
            .collect(),
        "floor" => floor::candidates(),
        "abs" | "exp" | "log" | "log10" | "round" => {
            let kind = match name {
                "abs" => Kind::Abs,
                "exp" => Kind::Exp,
                "log" => Kind::Log,
                "log10" => Kind::Log10,
                _ => Kind::Round,
            };
            NativeType::NUMERIC
                .into_iter()
                .flat_map(|t| fixed(kind, &[t], t))
                .collect()
        }
        _ => blob_candidates(name),
    }
}

/// `<type>asblob`, `<type>_as_blob`, `blobas<type>`, `blob_as_<type>`.
fn blob_candidates(name: &str) -> Vec<(Kind, Vec<CqlType>, CqlType)> {
    let to_blob = name
        .strip_suffix("_as_blob")
        .or_else(|| name.strip_suffix("asblob"));
    if let Some(t) = to_blob.and_then(NativeType::from_name) {
        if t != NativeType::Blob {
            return vec![(Kind::ToBlob, vec![native(t)], native(NativeType::Blob))];
        }
    }
    let from_blob = name
        .strip_prefix("blob_as_")
        .or_else(|| name.strip_prefix("blobas"));
    if let Some(t) = from_blob.and_then(NativeType::from_name) {
        if t != NativeType::Blob {
            return vec![(Kind::FromBlob, vec![native(NativeType::Blob)], native(t))];
        }
    }
    Vec::new()
}

fn collection_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "map_keys" => Kind::MapKeys,
        "map_values" => Kind::MapValues,
        "collection_count" => Kind::CollectionCount,
        "collection_min" => Kind::CollectionMin,
        "collection_max" => Kind::CollectionMax,
        "collection_sum" => Kind::CollectionSum,
        "collection_avg" => Kind::CollectionAvg,
        _ => return None,
    })
}

/// Whether `name` is one of the native masking functions (`mask_inner`, ...).
pub(crate) fn is_masking(name: &str) -> bool {
    masking::mask_kind(name).is_some()
}

/// Whether `name` is a native scalar function handled here.
pub fn exists(name: &str) -> bool {
    collection_kind(name).is_some()
        || masking::mask_kind(name).is_some()
        || vector::similarity_kind(name).is_some()
        || !candidates(name).is_empty()
}

pub(crate) fn arg_text(arg: &Arg<'_>) -> String {
    match arg {
        Arg::Typed(t) => t.to_string(),
        Arg::Selector(_, label) => label.to_string(),
        Arg::Term(e, _) => e.to_string(),
    }
}

pub(crate) fn test_arg(arg: &Arg<'_>, param: &CqlType) -> Assignment {
    match arg {
        Arg::Typed(t) | Arg::Selector(t, _) => {
            if t.unfrozen() == param.unfrozen() {
                Assignment::Exact
            } else if is_value_compatible(param, t) {
                Assignment::Weak
            } else {
                Assignment::NotAssignable
            }
        }
        Arg::Term(e, test) => test(e, param),
    }
}

/// Finds the native function `name` for `args`, as Cassandra's `FunctionResolver`.
pub fn resolve(name: &str, args: &[Arg<'_>]) -> Result<Function> {
    resolve_called(name, args, true)
}

/// [`resolve`], for a call written with (`qualified`) or without its
/// keyspace, which the messages naming the call repeat.
pub fn resolve_called(name: &str, args: &[Arg<'_>], qualified: bool) -> Result<Function> {
    resolve_for(name, args, qualified, None)
}

/// [`resolve_called`] for a value going to `receiver` when it is known (a
/// term): among several overloads, those whose result cannot go there are
/// left out, as Cassandra's `FunctionResolver` does.
pub fn resolve_for(
    name: &str,
    args: &[Arg<'_>],
    qualified: bool,
    receiver: Option<&CqlType>,
) -> Result<Function> {
    let called = if qualified {
        format!("system.{name}")
    } else {
        name.to_string()
    };
    if let Some(kind) = collection_kind(name) {
        return resolve_collection(name, kind, args);
    }
    if let Some(kind) = masking::mask_kind(name) {
        return masking::resolve(name, kind, args);
    }
    if let Some(kind) = vector::similarity_kind(name) {
        return vector::resolve(name, kind, args);
    }
    let all = candidates(name);
    if all.is_empty() {
        return Err(QueryError::invalid(format!(
            "Unknown function {name} called"
        )));
    }
    let build = |(kind, arg_types, return_type): (Kind, Vec<CqlType>, CqlType)| Function {
        name: name.to_string(),
        kind,
        arg_types,
        return_type,
    };
    if let [(_, params, _)] = all.as_slice() {
        if params.len() != args.len() {
            return Err(QueryError::invalid(format!(
                "Invalid number of arguments in call to function system.{name}: {} required but {} provided",
                params.len(),
                args.len()
            )));
        }
        check_assignable(name, args, params)?;
        return Ok(build(all.into_iter().next().ok_or_else(|| {
            QueryError::Server("a single candidate vanished".to_string())
        })?));
    }
    let signatures: Vec<String> = all.iter().map(|c| build(c.clone()).signature()).collect();
    let mut compatible = Vec::new();
    for candidate in all {
        let returns_elsewhere = receiver.is_some_and(|r| !is_value_compatible(r, &candidate.2));
        if candidate.1.len() != args.len() || returns_elsewhere {
            continue;
        }
        let results: Vec<Assignment> = args
            .iter()
            .zip(&candidate.1)
            .map(|(a, p)| test_arg(a, p))
            .collect();
        if results.iter().all(|r| *r == Assignment::Exact) {
            return Ok(build(candidate));
        }
        if results.iter().all(|r| *r != Assignment::NotAssignable) {
            compatible.push(candidate);
        }
    }
    match compatible.len() {
        0 => Err(QueryError::invalid(format!(
            "Invalid call to function {called}, none of its type signatures match (known type signatures: {})",
            signatures.join(", ")
        ))),
        1 => Ok(build(compatible.remove(0))),
        _ => {
            let matching: Vec<String> = compatible
                .into_iter()
                .map(|c| build(c).signature())
                .collect();
            Err(QueryError::invalid(format!(
                "Ambiguous call to function {called} (can be matched by following signatures: {}): use type casts to disambiguate",
                matching.join(", ")
            )))
        }
    }
}

/// Refuses an argument that cannot be passed as its parameter's type.
/// A constant's type when it is known without a receiver (Cassandra's
/// `getCompatibleTypeIfKnown`: a string is ascii unless it has other
/// characters).
pub(crate) fn constant_type(literal: &rocksandra_cql::ast::Literal) -> Option<NativeType> {
    use rocksandra_cql::ast::Literal;
    Some(match literal {
        Literal::String(text) if text.is_ascii() => NativeType::Ascii,
        Literal::String(_) => NativeType::Text,
        Literal::Integer(_) => NativeType::Int,
        Literal::Float(_) => NativeType::Double,
        Literal::Boolean(_) => NativeType::Boolean,
        Literal::Uuid(_) => NativeType::Uuid,
        Literal::Blob(_) => NativeType::Blob,
        Literal::Duration(_) => NativeType::Duration,
        Literal::Null => return None,
    })
}

fn check_assignable(name: &str, args: &[Arg<'_>], params: &[CqlType]) -> Result<()> {
    for (i, (arg, param)) in args.iter().zip(params).enumerate() {
        if test_arg(arg, param) == Assignment::NotAssignable {
            return Err(QueryError::invalid(format!(
                "Type error: {} cannot be passed as argument {i} of function system.{name} of type {param}",
                arg_text(arg)
            )));
        }
    }
    Ok(())
}

/// The 5.0 collection functions take any collection of the right kind, so
/// the argument's type must be known.
fn resolve_collection(name: &str, kind: Kind, args: &[Arg<'_>]) -> Result<Function> {
    let [arg] = args else {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments for function system.{name}(collection) ({} given, 1 expected)",
            args.len()
        )));
    };
    let inferred;
    let ty = match arg {
        Arg::Typed(ty) | Arg::Selector(ty, _) => *ty,
        Arg::Term(e, _) => match literal_collection_type(e) {
            Some(t) => {
                inferred = t;
                &inferred
            }
            None => {
                return Err(QueryError::invalid(format!(
                    "Cannot infer type of argument {} in call to function system.{name}({}): use type casts to disambiguate",
                    arg_text(arg),
                    match kind {
                        Kind::MapKeys | Kind::MapValues => "map",
                        _ => "collection",
                    }
                )))
            }
        },
    };
    let wrong = || {
        QueryError::invalid(format!(
            "Function system.{name} requires a {} argument, but found argument {} of type {ty}",
            match kind {
                Kind::MapKeys | Kind::MapValues => "map",
                Kind::CollectionCount => "collection",
                Kind::CollectionSum | Kind::CollectionAvg => "numeric set/list",
                _ => "set/list",
            },
            arg_text(arg)
        ))
    };
    let return_type = match (kind, ty.unfrozen()) {
        (Kind::MapKeys, CqlType::Map(k, _)) => CqlType::Set(k.clone()),
        (Kind::MapValues, CqlType::Map(_, v)) => CqlType::List(v.clone()),
        (Kind::CollectionCount, CqlType::Map(..) | CqlType::List(_) | CqlType::Set(_)) => {
            native(NativeType::Int)
        }
        (Kind::CollectionMin | Kind::CollectionMax, CqlType::List(e) | CqlType::Set(e)) => {
            (**e).clone()
        }
        (Kind::CollectionSum | Kind::CollectionAvg, CqlType::List(e) | CqlType::Set(e)) if matches!(e.unfrozen(), CqlType::Native(t) if t.is_numeric()) => {
            (**e).clone()
        }
        _ => return Err(wrong()),
    };
    Ok(Function {
        name: name.to_string(),
        kind,
        arg_types: vec![(*ty).clone()],
        return_type,
    })
}

/// The type a collection literal is known to have (`getCompatibleTypeIfKnown`):
/// its elements' when they are integers (int), floats (double), booleans,
/// uuids or durations; strings could be several types and leave it unknown.
fn literal_collection_type(e: &Expr) -> Option<CqlType> {
    use rocksandra_cql::ast::Literal;
    fn element(e: &Expr) -> Option<CqlType> {
        Some(CqlType::Native(match e {
            Expr::Literal(Literal::Integer(_)) => NativeType::Int,
            Expr::Literal(Literal::Float(_)) => NativeType::Double,
            Expr::Literal(Literal::Boolean(_)) => NativeType::Boolean,
            Expr::Literal(Literal::Uuid(_)) => NativeType::Uuid,
            Expr::Literal(Literal::Duration(_)) => NativeType::Duration,
            _ => return None,
        }))
    }
    match e {
        Expr::List(items) => Some(CqlType::List(Box::new(element(items.first()?)?))),
        Expr::Set(items) => Some(CqlType::Set(Box::new(element(items.first()?)?))),
        Expr::Map(entries) => {
            let (k, v) = entries.first()?;
            Some(CqlType::Map(Box::new(element(k)?), Box::new(element(v)?)))
        }
        _ => None,
    }
}

/// Cassandra's `isValueCompatibleWith`: whether bytes of `other` are valid
/// bytes of `receiver` with the same meaning.
pub fn is_value_compatible(receiver: &CqlType, other: &CqlType) -> bool {
    use NativeType as N;
    let (receiver, other) = (receiver.unfrozen(), other.unfrozen());
    if receiver == other {
        return true;
    }
    match (receiver, other) {
        (CqlType::Native(N::Blob), CqlType::Native(_)) => true,
        (CqlType::Native(r), CqlType::Native(o)) => matches!(
            (r, o),
            (N::Text, N::Ascii)
                | (N::Bigint, N::Timestamp)
                | (N::Timestamp, N::Bigint)
                | (
                    N::Varint,
                    N::Int | N::Bigint | N::Smallint | N::Tinyint | N::Timestamp
                )
                | (N::Date, N::Int)
                | (N::Uuid, N::Timeuuid)
        ),
        (CqlType::List(r), CqlType::List(o)) | (CqlType::Set(r), CqlType::Set(o)) => {
            is_value_compatible(r, o)
        }
        (CqlType::Map(rk, rv), CqlType::Map(ok, ov)) => {
            rk.unfrozen() == ok.unfrozen() && is_value_compatible(rv, ov)
        }
        _ => false,
    }
}

// ---------------------------------------------------------------- time uuids

/// `UUIDGen.MIN_CLOCK_SEQ_AND_NODE`: the smallest least-significant half in
/// Cassandra's signed-byte order.
const MIN_CLOCK_SEQ_AND_NODE: u64 = 0x8080_8080_8080_8080;
const MAX_CLOCK_SEQ_AND_NODE: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// A version-1 UUID at `micros` since the Unix epoch, clock sequence and
/// node taken from `random` (with the IETF variant).
pub fn timeuuid_at(micros: i64, random: u64) -> [u8; 16] {
    uuid::time_v1(uuid::ticks_of_unix_micros(micros), random)
}

fn millis_to_ticks(millis: i64) -> u64 {
    uuid::ticks_of_unix_micros(millis.saturating_mul(1_000))
}

/// `minTimeuuid`: the smallest timeuuid of that millisecond.
pub fn min_timeuuid(millis: i64) -> [u8; 16] {
    uuid::from_halves(
        uuid::v1_msb(millis_to_ticks(millis)),
        MIN_CLOCK_SEQ_AND_NODE,
    )
}

/// `maxTimeuuid`: the largest timeuuid of that millisecond.
pub fn max_timeuuid(millis: i64) -> [u8; 16] {
    uuid::from_halves(
        uuid::v1_msb(millis_to_ticks(millis).wrapping_add(9_999)),
        MAX_CLOCK_SEQ_AND_NODE,
    )
}

/// Milliseconds since the Unix epoch of a version-1 UUID.
pub fn timeuuid_unix_millis(uuid: &[u8]) -> Result<i64> {
    let bytes: [u8; 16] = uuid.try_into().map_err(|_| {
        QueryError::invalid(format!("UUID should be 16 or 0 bytes ({})", uuid.len()))
    })?;
    let ticks = uuid::v1_ticks(&bytes);
    Ok((ticks / 10_000) as i64 - uuid::GREGORIAN_EPOCH_OFFSET_TICKS / 10_000)
}

fn read_i64(bytes: &[u8]) -> Result<i64> {
    let array: [u8; 8] = bytes
        .try_into()
        .map_err(|_| QueryError::invalid(format!("Expected 8 or 0 byte long ({})", bytes.len())))?;
    Ok(i64::from_be_bytes(array))
}

/// The protocol's date of a time in milliseconds, truncating toward zero
/// as Cassandra's `Duration.ofMillis(ms).toDays()` does.
fn date_of_millis(millis: i64) -> u32 {
    let days = millis / MILLIS_PER_DAY;
    (days + DATE_EPOCH_OFFSET).clamp(0, i64::from(u32::MAX)) as u32
}

/// Milliseconds since the epoch of a timeuuid, timestamp or date value.
fn temporal_millis(ty: &CqlType, bytes: &[u8]) -> Result<i64> {
    match ty.unfrozen() {
        CqlType::Native(NativeType::Timeuuid) => timeuuid_unix_millis(bytes),
        CqlType::Native(NativeType::Date) => {
            let array: [u8; 4] = bytes.try_into().map_err(|_| {
                QueryError::invalid(format!("Expected 4 byte long for date ({})", bytes.len()))
            })?;
            let days = i64::from(u32::from_be_bytes(array)) - DATE_EPOCH_OFFSET;
            Ok(days * MILLIS_PER_DAY)
        }
        _ => read_i64(bytes),
    }
}

// ---------------------------------------------------------------- collections

/// Splits a serialized list, set or map into its elements (keys and values
/// alternate for maps).
fn split_collection(bytes: &[u8]) -> Result<Vec<&[u8]>> {
    let truncated = || QueryError::invalid("Not enough bytes to read a collection");
    let mut input = bytes;
    let read_i32 = |input: &mut &[u8]| -> Result<i32> {
        let (head, tail) = input.split_at_checked(4).ok_or_else(truncated)?;
        *input = tail;
        Ok(i32::from_be_bytes([head[0], head[1], head[2], head[3]]))
    };
    let count = read_i32(&mut input)?;
    let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0).min(bytes.len()));
    loop {
        if input.is_empty() {
            break;
        }
        let length = usize::try_from(read_i32(&mut input)?).map_err(|_| truncated())?;
        let (element, tail) = input.split_at_checked(length).ok_or_else(truncated)?;
        out.push(element);
        input = tail;
    }
    Ok(out)
}

/// Serializes a list or set from element bytes.
pub(crate) fn build_collection(elements: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + elements.iter().map(|e| e.len() + 4).sum::<usize>());
    out.extend_from_slice(&(elements.len() as i32).to_be_bytes());
    for element in elements {
        out.extend_from_slice(&(element.len() as i32).to_be_bytes());
        out.extend_from_slice(element);
    }
    out
}

// ---------------------------------------------------------------- numbers

/// The arithmetic operators, shared with term evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Remainder,
}

impl BinaryOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Remainder => "%",
        }
    }
}

/// A decoded number of one of CQL's numeric types, with Java's semantics
/// for overflow (integers wrap) and conversions.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Num {
    Tinyint(i8),
    Smallint(i16),
    Int(i32),
    Bigint(i64),
    Counter(i64),
    Float(f32),
    Double(f64),
    Decimal(BigInt, i32),
    Varint(BigInt),
}

fn not_numeric(ty: &CqlType) -> QueryError {
    QueryError::invalid(format!("{ty} is not a numeric type"))
}

impl Num {
    pub(crate) fn decode(ty: &CqlType, bytes: &[u8]) -> Result<Num> {
        let value = Value::deserialize(ty, bytes)?;
        Ok(match value {
            Value::Tinyint(v) => Num::Tinyint(v),
            Value::Smallint(v) => Num::Smallint(v),
            Value::Int(v) => Num::Int(v),
            Value::Bigint(v) => Num::Bigint(v),
            Value::Counter(v) => Num::Counter(v),
            Value::Float(v) => Num::Float(v),
            Value::Double(v) => Num::Double(v),
            Value::Decimal { unscaled, scale } => Num::Decimal(unscaled, scale),
            Value::Varint(v) => Num::Varint(v),
            _ => return Err(not_numeric(ty)),
        })
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            Num::Tinyint(v) => v.to_be_bytes().to_vec(),
            Num::Smallint(v) => v.to_be_bytes().to_vec(),
            Num::Int(v) => v.to_be_bytes().to_vec(),
            Num::Bigint(v) | Num::Counter(v) => v.to_be_bytes().to_vec(),
            Num::Float(v) => v.to_be_bytes().to_vec(),
            Num::Double(v) => v.to_be_bytes().to_vec(),
            Num::Decimal(unscaled, scale) => Value::Decimal {
                unscaled: unscaled.clone(),
                scale: *scale,
            }
            .to_bytes(),
            Num::Varint(v) => v.to_signed_bytes_be(),
        }
    }

    pub(crate) fn to_f64(&self) -> f64 {
        match self {
            Num::Tinyint(v) => f64::from(*v),
            Num::Smallint(v) => f64::from(*v),
            Num::Int(v) => f64::from(*v),
            Num::Bigint(v) | Num::Counter(v) => *v as f64,
            Num::Float(v) => f64::from(*v),
            Num::Double(v) => *v,
            Num::Decimal(unscaled, scale) => decimal_to_f64(unscaled, *scale),
            Num::Varint(v) => v.to_f64().unwrap_or(f64::NAN),
        }
    }

    /// Java's `Number.longValue()`: truncation, saturating for floating point,
    /// the low 64 bits for big numbers.
    pub(crate) fn to_i64(&self) -> i64 {
        match self {
            Num::Tinyint(v) => i64::from(*v),
            Num::Smallint(v) => i64::from(*v),
            Num::Int(v) => i64::from(*v),
            Num::Bigint(v) | Num::Counter(v) => *v,
            Num::Float(v) => *v as i64,
            Num::Double(v) => *v as i64,
            Num::Decimal(unscaled, scale) => low_i64(&decimal_to_bigint(unscaled, *scale)),
            Num::Varint(v) => low_i64(v),
        }
    }

    /// Java's `Number.intValue()`.
    pub(crate) fn to_i32(&self) -> i32 {
        match self {
            Num::Float(v) => *v as i32,
            Num::Double(v) => *v as i32,
            other => other.to_i64() as i32,
        }
    }

    fn to_bigint(&self) -> BigInt {
        match self {
            Num::Decimal(unscaled, scale) => decimal_to_bigint(unscaled, *scale),
            Num::Varint(v) => v.clone(),
            other => BigInt::from(other.to_i64()),
        }
    }

    /// `(unscaled, scale)` as Cassandra converts to decimal (`BigDecimal.valueOf`).
    fn to_decimal(&self) -> Result<(BigInt, i32)> {
        Ok(match self {
            Num::Decimal(unscaled, scale) => (unscaled.clone(), *scale),
            Num::Varint(v) => (v.clone(), 0),
            Num::Float(_) | Num::Double(_) => double_to_decimal(self.to_f64())?,
            other => (BigInt::from(other.to_i64()), 0),
        })
    }

    /// Converts to the numeric type `to`, as `CAST` does.
    pub(crate) fn convert(&self, to: NativeType) -> Result<Num> {
        Ok(match to {
            NativeType::Tinyint => Num::Tinyint(self.to_i32() as i8),
            NativeType::Smallint => Num::Smallint(self.to_i32() as i16),
            NativeType::Int => Num::Int(self.to_i32()),
            NativeType::Bigint => Num::Bigint(self.to_i64()),
            NativeType::Counter => Num::Counter(self.to_i64()),
            NativeType::Float => Num::Float(self.to_f64() as f32),
            NativeType::Double => Num::Double(self.to_f64()),
            NativeType::Decimal => {
                let (unscaled, scale) = self.to_decimal()?;
                Num::Decimal(unscaled, scale)
            }
            NativeType::Varint => Num::Varint(self.to_bigint()),
            other => return Err(not_numeric(&native(other))),
        })
    }

    pub(crate) fn negate(&self) -> Num {
        match self {
            Num::Tinyint(v) => Num::Tinyint(v.wrapping_neg()),
            Num::Smallint(v) => Num::Smallint(v.wrapping_neg()),
            Num::Int(v) => Num::Int(v.wrapping_neg()),
            Num::Bigint(v) => Num::Bigint(v.wrapping_neg()),
            Num::Counter(v) => Num::Counter(v.wrapping_neg()),
            Num::Float(v) => Num::Float(-v),
            Num::Double(v) => Num::Double(-v),
            Num::Decimal(u, s) => Num::Decimal(-u, *s),
            Num::Varint(v) => Num::Varint(-v),
        }
    }
}

fn low_i64(v: &BigInt) -> i64 {
    let (sign, digits) = v.to_u64_digits();
    let low = digits.first().copied().unwrap_or(0);
    match sign {
        num_bigint::Sign::Minus => (low as i64).wrapping_neg(),
        _ => low as i64,
    }
}

fn pow10(exponent: u32) -> BigInt {
    num_traits::pow(BigInt::from(10), exponent as usize)
}

/// `BigDecimal.toBigInteger()`: truncation toward zero.
fn decimal_to_bigint(unscaled: &BigInt, scale: i32) -> BigInt {
    if scale <= 0 {
        let shift = u32::try_from(-i64::from(scale))
            .unwrap_or(u32::MAX)
            .min(100_000);
        unscaled * pow10(shift)
    } else {
        unscaled / pow10(u32::try_from(scale).unwrap_or(u32::MAX).min(100_000))
    }
}

fn decimal_to_f64(unscaled: &BigInt, scale: i32) -> f64 {
    let text = format!("{unscaled}e{}", -i64::from(scale));
    text.parse().unwrap_or(f64::NAN)
}

/// `BigDecimal.valueOf(double)`: the decimal of Java's `Double.toString`.
/// NaN and the infinities throw Java's NumberFormatException, which
/// Cassandra does not catch (`CAST(NaN AS decimal)` is a server error).
fn double_to_decimal(value: f64) -> Result<(BigInt, i32)> {
    if !value.is_finite() {
        let message = format!(
            "Character {} is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark.",
            if value.is_nan() { "N" } else { "I" }
        );
        return Err(QueryError::java_exception(
            "java.lang.NumberFormatException",
            Some(&message),
        ));
    }
    let text = Value::Double(value).to_string();
    parse_decimal(&text)
        .ok_or_else(|| QueryError::Server(format!("cannot read back the double {text}")))
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Exp => "exp",
        Kind::Log => "log",
        Kind::Log10 => "log10",
        _ => "abs",
    }
}

fn math(kind: Kind, number: Num) -> Result<Num> {
    // Java's narrowing of the double result: saturating to int or long,
    // then truncating to byte or short.
    let float = |f: fn(f64) -> f64| -> Result<Num> {
        let result = f(number.to_f64());
        Ok(match &number {
            Num::Float(_) => Num::Float(result as f32),
            Num::Double(_) => Num::Double(result),
            Num::Decimal(u, s) => {
                let exact = match kind {
                    Kind::Exp => Some(bigmath::exp(u, *s)),
                    Kind::Log => bigmath::ln(u, *s),
                    _ => bigmath::log10(u, *s),
                };
                let Some((unscaled, scale)) = exact else {
                    return Err(QueryError::FunctionFailure {
                        keyspace: "system".into(),
                        function: kind_name(kind).into(),
                        arg_types: vec!["decimal".into()],
                        message: format!(
                            "execution of 'system.{}[decimal]' failed: java.lang.ArithmeticException: {}",
                            kind_name(kind),
                            if kind == Kind::Log {
                                "Natural log of number zero or less"
                            } else {
                                "Log10 of number zero or less"
                            }
                        ),
                    });
                };
                Num::Decimal(unscaled, scale)
            }
            Num::Varint(_) => Num::Varint(BigInt::from(result as i64)),
            Num::Tinyint(_) => Num::Tinyint(result as i32 as i8),
            Num::Smallint(_) => Num::Smallint(result as i32 as i16),
            Num::Int(_) => Num::Int(result as i32),
            Num::Bigint(_) => Num::Bigint(result as i64),
            Num::Counter(_) => Num::Counter(result as i64),
        })
    };
    match kind {
        Kind::Abs => Ok(match number {
            Num::Tinyint(v) => Num::Tinyint(v.wrapping_abs()),
            Num::Smallint(v) => Num::Smallint(v.wrapping_abs()),
            Num::Int(v) => Num::Int(v.wrapping_abs()),
            Num::Bigint(v) => Num::Bigint(v.wrapping_abs()),
            Num::Counter(v) => Num::Counter(v.wrapping_abs()),
            Num::Float(v) => Num::Float(v.abs()),
            Num::Double(v) => Num::Double(v.abs()),
            Num::Decimal(u, s) => Num::Decimal(u.abs(), s),
            Num::Varint(v) => Num::Varint(v.abs()),
        }),
        Kind::Exp => float(f64::exp),
        Kind::Log => float(f64::ln),
        Kind::Log10 => float(f64::log10),
        _ => Ok(match number {
            // Java's Math.round: half up, then back to the type.
            Num::Float(v) => Num::Float((v + 0.5).floor() as i32 as f32),
            Num::Double(v) => Num::Double((v + 0.5).floor() as i64 as f64),
            Num::Decimal(u, s) if s > 0 => {
                let divisor = pow10(u32::try_from(s).unwrap_or(u32::MAX).min(100_000));
                let doubled: BigInt = (&u * BigInt::from(2)).abs() + &divisor;
                let rounded: BigInt = doubled / (&divisor * BigInt::from(2));
                Num::Decimal(if u.is_negative() { -rounded } else { rounded }, 0)
            }
            // setScale(0) of a decimal with a negative scale.
            Num::Decimal(u, s) => Num::Decimal(
                u * pow10(u32::try_from(-i64::from(s)).unwrap_or(0).min(100_000)),
                0,
            ),
            other => other,
        }),
    }
}

// ---------------------------------------------------------------- CAST

/// The argument types of Cassandra's `cast_as_<to>` functions (`CastFcts`).
fn cast_sources(to: NativeType) -> Vec<NativeType> {
    use NativeType as N;
    let numeric = || NativeType::NUMERIC.iter().copied();
    match to {
        N::Tinyint
        | N::Smallint
        | N::Int
        | N::Bigint
        | N::Float
        | N::Double
        | N::Decimal
        | N::Varint => {
            let mut sources: Vec<NativeType> = numeric().filter(|t| *t != to).collect();
            if to == N::Bigint {
                sources.push(N::Timestamp);
            }
            sources
        }
        N::Text | N::Ascii => numeric()
            .chain(if to == N::Text {
                vec![N::Ascii]
            } else {
                Vec::new()
            })
            .chain([
                N::Inet,
                N::Boolean,
                N::Timeuuid,
                N::Timestamp,
                N::Date,
                N::Time,
                N::Uuid,
            ])
            .collect(),
        N::Date => vec![N::Timeuuid, N::Timestamp],
        N::Timestamp => vec![N::Timeuuid, N::Date],
        _ => Vec::new(),
    }
}

/// Whether Cassandra's `CastFcts` has a conversion from `from` to `to`.
pub fn can_cast(from: &CqlType, to: &CqlType) -> bool {
    let (CqlType::Native(f), CqlType::Native(t)) = (from.unfrozen(), to.unfrozen()) else {
        return false;
    };
    f == t || cast_sources(*t).contains(f)
}

/// `CAST(arg AS to)` resolved as Cassandra does: the value itself when it
/// already has the type (None), else the `cast_as_<to>` function whose
/// argument type fits `from` exactly, or the only one it fits weakly (its
/// argument type is returned). `label` is the argument as written.
pub fn resolve_cast(from: &CqlType, to: &CqlType, label: &str) -> Result<Option<CqlType>> {
    if from.unfrozen() == to.unfrozen() {
        return Ok(None);
    }
    let CqlType::Native(t) = to.unfrozen() else {
        return Err(QueryError::invalid(format!(
            "{label} cannot be cast to {to}"
        )));
    };
    let sources = cast_sources(*t);
    if sources.is_empty() {
        return Err(QueryError::invalid(format!(
            "{label} cannot be cast to {to}"
        )));
    }
    let signature = |s: &NativeType| {
        format!(
            "system.cast_as_{} : ({}) -> {}",
            t.name(),
            s.name(),
            t.name()
        )
    };
    if let CqlType::Native(f) = from.unfrozen() {
        if sources.contains(f) {
            return Ok(Some(from.clone()));
        }
    }
    let weak: Vec<NativeType> = sources
        .iter()
        .copied()
        .filter(|s| is_value_compatible(&CqlType::Native(*s), from))
        .collect();
    match weak.as_slice() {
        [] => Err(QueryError::invalid(format!(
            "Invalid call to function system.cast_as_{}, none of its type signatures match (known type signatures: {})",
            t.name(),
            sources.iter().map(signature).collect::<Vec<_>>().join(", ")
        ))),
        [only] => Ok(Some(CqlType::Native(*only))),
        several => Err(QueryError::invalid(format!(
            "Ambiguous call to function system.cast_as_{} (can be matched by following signatures: {}): use type casts to disambiguate",
            t.name(),
            several.iter().map(signature).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// `CAST(value AS to)` for a value of type `from`; the empty value and
/// null give null.
pub fn cast(value: Option<&[u8]>, from: &CqlType, to: &CqlType) -> Result<Option<Vec<u8>>> {
    if !can_cast(from, to) {
        return Err(QueryError::invalid(format!(
            "{from} cannot be cast to {to}"
        )));
    }
    let Some(bytes) = value else {
        return Ok(None);
    };
    if from.unfrozen() == to.unfrozen() {
        return Ok(Some(bytes.to_vec()));
    }
    if bytes.is_empty() {
        return Ok(None);
    }
    let (CqlType::Native(from_native), CqlType::Native(to_native)) =
        (from.unfrozen(), to.unfrozen())
    else {
        return Ok(None);
    };
    use NativeType as N;
    Ok(Some(match (*from_native, *to_native) {
        (f, t) if f.is_numeric() && t.is_numeric() => {
            Num::decode(from, bytes)?.convert(t)?.encode()
        }
        (N::Timestamp, N::Bigint) => bytes.to_vec(),
        (_, N::Text | N::Ascii) => text_of(from, bytes)?.into_bytes(),
        (N::Timeuuid | N::Date | N::Timestamp, N::Date) => {
            date_of_millis(temporal_millis(from, bytes)?)
                .to_be_bytes()
                .to_vec()
        }
        (_, _) => temporal_millis(from, bytes)?.to_be_bytes().to_vec(),
    }))
}

/// The text `CAST(x AS text)` gives: Java's `toString` of the value, and
/// ISO-8601 UTC for timestamps.
fn text_of(ty: &CqlType, bytes: &[u8]) -> Result<String> {
    let value = Value::deserialize(ty, bytes)?;
    Ok(match value {
        Value::Ascii(s) | Value::Text(s) => s,
        Value::Timestamp(ms) => iso_timestamp(ms),
        Value::Date(_) | Value::Time(_) | Value::Inet(_) => {
            let text = value.to_string();
            text.trim_matches('\'').to_string()
        }
        other => other.to_string(),
    })
}

/// `yyyy-MM-dd'T'HH:mm:ss.SSSZ` in UTC.
fn iso_timestamp(millis: i64) -> String {
    let days = millis.div_euclid(MILLIS_PER_DAY);
    let ms_of_day = millis.rem_euclid(MILLIS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let seconds = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        ms_of_day % 1000
    )
}

#[cfg(test)]
mod tests;
