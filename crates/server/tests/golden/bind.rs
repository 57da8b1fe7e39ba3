//! `bind` values serialized for the prepared statement's bind columns, as
//! the Python driver serializes its literals (ints as milliseconds for a
//! timestamp, floats to the column's width, sequences to lists, sets and
//! vectors, dicts to maps).

use bytes::Bytes;
use num_bigint::BigInt;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::value::Value as CqlValue;
use rocksandra_wire::{ColumnSpec, Value};

use super::case::{BindValues, PyLiteral};

/// Positional wire values for the statement's bind columns; as the driver
/// does from v4 on, the columns given no value are unset.
pub fn bind_values(values: &BindValues, columns: &[ColumnSpec]) -> Result<Vec<Value>, String> {
    let mut ordered: Vec<&PyLiteral> = match values {
        BindValues::Positional(values) => values.iter().collect(),
        BindValues::Named(named) => columns
            .iter()
            .map(|c| {
                named
                    .iter()
                    .find(|(n, _)| *n == c.name)
                    .map_or(&PyLiteral::Unset, |(_, v)| v)
            })
            .collect(),
    };
    if ordered.len() < columns.len() {
        ordered.resize(columns.len(), &PyLiteral::Unset);
    }
    if ordered.len() > columns.len() {
        return Err(format!(
            "Too many arguments provided to bind() (got {}, expected {})",
            ordered.len(),
            columns.len()
        ));
    }
    ordered
        .into_iter()
        .zip(columns)
        .map(|(v, c)| wire_value(v, &c.cql_type))
        .collect()
}

fn wire_value(literal: &PyLiteral, ty: &CqlType) -> Result<Value, String> {
    Ok(match literal {
        PyLiteral::None => Value::Null,
        PyLiteral::Unset => Value::Unset,
        other => match with_null_elements(other, ty) {
            Some(bytes) => Value::Bytes(Bytes::from(bytes?)),
            None => Value::Bytes(Bytes::from(cql_value(other, ty)?.to_bytes())),
        },
    })
}

/// A list or set holding None, which the driver serializes as empty
/// elements (its `to_binary(None)` is `b''`); None when `literal` holds no
/// None element.
fn with_null_elements(literal: &PyLiteral, ty: &CqlType) -> Option<Result<Vec<u8>, String>> {
    let (PyLiteral::List(items) | PyLiteral::Tuple(items) | PyLiteral::Set(items)) = literal else {
        return None;
    };
    let (CqlType::List(element) | CqlType::Set(element)) = ty.unfrozen() else {
        return None;
    };
    if !items.iter().any(|i| matches!(i, PyLiteral::None)) {
        return None;
    }
    let mut out = (items.len() as i32).to_be_bytes().to_vec();
    for item in items {
        match item {
            PyLiteral::None => out.extend_from_slice(&0i32.to_be_bytes()),
            other => match cql_value(other, element) {
                Ok(value) => {
                    let bytes = value.to_bytes();
                    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                    out.extend_from_slice(&bytes);
                }
                Err(e) => return Some(Err(e)),
            },
        }
    }
    Some(Ok(out))
}

fn mismatch(literal: &PyLiteral, ty: &CqlType) -> String {
    format!("cannot bind {literal:?} to {ty}")
}

fn cql_value(literal: &PyLiteral, ty: &CqlType) -> Result<CqlValue, String> {
    let ty = ty.unfrozen();
    match (literal, ty) {
        (_, CqlType::Native(n)) => native_value(literal, *n).ok_or_else(|| mismatch(literal, ty)),
        (PyLiteral::List(items) | PyLiteral::Tuple(items) | PyLiteral::Set(items), _) => {
            sequence(items, ty).ok_or_else(|| mismatch(literal, ty))?
        }
        (PyLiteral::Dict(entries), CqlType::Map(k, v)) => entries
            .iter()
            .map(|(key, value)| Ok((cql_value(key, k)?, cql_value(value, v)?)))
            .collect::<Result<_, String>>()
            .map(CqlValue::Map),
        _ => Err(mismatch(literal, ty)),
    }
}

fn sequence(items: &[PyLiteral], ty: &CqlType) -> Option<Result<CqlValue, String>> {
    let all = |t: &CqlType| {
        items
            .iter()
            .map(|i| cql_value(i, t))
            .collect::<Result<Vec<_>, String>>()
    };
    Some(match ty {
        CqlType::List(e) => all(e).map(CqlValue::List),
        CqlType::Set(e) => all(e).map(CqlValue::Set),
        CqlType::Vector(e, _) => all(e).map(CqlValue::Vector),
        CqlType::Tuple(types) => items
            .iter()
            .zip(types)
            .map(|(i, t)| match i {
                PyLiteral::None => Ok(None),
                other => cql_value(other, t).map(Some),
            })
            .collect::<Result<_, String>>()
            .map(CqlValue::Tuple),
        _ => return None,
    })
}

fn native_value(literal: &PyLiteral, n: NativeType) -> Option<CqlValue> {
    Some(match (literal, n) {
        (PyLiteral::Str(s), NativeType::Text) => CqlValue::Text(s.clone()),
        (PyLiteral::Str(s), NativeType::Ascii) => CqlValue::Ascii(s.clone()),
        (PyLiteral::Bytes(b), NativeType::Blob) => CqlValue::Blob(b.clone()),
        (PyLiteral::Bool(b), NativeType::Boolean) => CqlValue::Boolean(*b),
        (PyLiteral::Int(i), NativeType::Int) => CqlValue::Int(i32::try_from(*i).ok()?),
        (PyLiteral::Int(i), NativeType::Bigint) => CqlValue::Bigint(i64::try_from(*i).ok()?),
        (PyLiteral::Int(i), NativeType::Counter) => CqlValue::Counter(i64::try_from(*i).ok()?),
        (PyLiteral::Int(i), NativeType::Smallint) => CqlValue::Smallint(i16::try_from(*i).ok()?),
        (PyLiteral::Int(i), NativeType::Tinyint) => CqlValue::Tinyint(i8::try_from(*i).ok()?),
        (PyLiteral::Int(i), NativeType::Varint) => CqlValue::Varint(BigInt::from(*i)),
        (PyLiteral::Int(i), NativeType::Timestamp) => CqlValue::Timestamp(i64::try_from(*i).ok()?),
        (PyLiteral::Int(i), NativeType::Float) => CqlValue::Float(*i as f32),
        (PyLiteral::Int(i), NativeType::Double) => CqlValue::Double(*i as f64),
        (PyLiteral::Float(f), NativeType::Float) => CqlValue::Float(*f as f32),
        (PyLiteral::Float(f), NativeType::Double) => CqlValue::Double(*f),
        (PyLiteral::Int(i), NativeType::Decimal) => CqlValue::Decimal {
            unscaled: BigInt::from(*i),
            scale: 0,
        },
        (PyLiteral::Str(s), NativeType::Decimal) => python_decimal(s)?,
        _ => return None,
    })
}

/// `Decimal(s)` for a plain number string (sign, digits, point, exponent),
/// as the driver serializes a string bound to a decimal: the digits as the
/// unscaled value, the exponent negated as the scale.
fn python_decimal(s: &str) -> Option<CqlValue> {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], s[at + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    if digits.trim_start_matches(['+', '-']).is_empty() || fraction.contains(['+', '-']) {
        return None;
    }
    let unscaled = digits.parse::<BigInt>().ok()?;
    let scale = i32::try_from(fraction.len()).ok()?.checked_sub(exponent)?;
    Some(CqlValue::Decimal { unscaled, scale })
}
