//! CQL values and their serialized form (the native protocol's value bytes,
//! which is also how cells store them): decoding, validation, Cassandra's
//! comparator over serialized bytes, and CQL-literal / JSON text.

use std::cmp::Ordering;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use num_bigint::{BigInt, Sign};
use num_traits::Zero;

use crate::types::{quote_identifier_if_needed, CqlType, NativeType, UdtType};

/// A decoded CQL value. Nulls only appear as tuple or UDT fields; a null
/// column is the absence of a `Value`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Ascii(String),
    Bigint(i64),
    Blob(Vec<u8>),
    Boolean(bool),
    Counter(i64),
    /// Days since -5877641-06-23, i.e. 2^31 is 1970-01-01, as the protocol sends it.
    Date(u32),
    Decimal {
        unscaled: BigInt,
        scale: i32,
    },
    Double(f64),
    Duration {
        months: i32,
        days: i32,
        nanos: i64,
    },
    Float(f32),
    Inet(IpAddr),
    Int(i32),
    Smallint(i16),
    Text(String),
    /// Nanoseconds since midnight.
    Time(i64),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    Timeuuid([u8; 16]),
    Tinyint(i8),
    Uuid([u8; 16]),
    Varint(BigInt),
    List(Vec<Value>),
    /// Elements in serialized order (Cassandra keeps sets sorted).
    Set(Vec<Value>),
    /// Entries in serialized order (Cassandra keeps maps sorted by key).
    Map(Vec<(Value, Value)>),
    /// Fields in order; fewer fields than the type declares means trailing nulls.
    Tuple(Vec<Option<Value>>),
    /// Fields in declared order; fewer fields than declared means trailing nulls.
    Udt(Vec<Option<Value>>),
    Vector(Vec<Value>),
    Custom(Vec<u8>),
}

/// Why bytes are not a valid value of a type. Marshal texts follow
/// Cassandra's `MarshalException` messages so clients see familiar errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Zero bytes for a type where Cassandra accepts that as the "empty
    /// value" (distinct from null). [`Value`] cannot hold it; callers decide.
    #[error("empty value")]
    EmptyValue,
    #[error("{0}")]
    Marshal(String),
    /// The type has no byte-comparable form (duration, counter, non-frozen collections).
    #[error("{0} values cannot be part of a key")]
    NotKeyType(String),
}

fn marshal(message: impl Into<String>) -> ValueError {
    ValueError::Marshal(message.into())
}

/// Whether serialized bytes are Cassandra's "empty value": zero bytes, legal
/// for most native types and sorting before every other value.
pub fn is_empty_value(bytes: &[u8]) -> bool {
    bytes.is_empty()
}

// ---------------------------------------------------------------------------
// Reading helpers shared with `comparable`.
// ---------------------------------------------------------------------------

/// Splits `n` bytes off the front of `input`.
fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if input.len() < n {
        return None;
    }
    let (head, tail) = input.split_at(n);
    *input = tail;
    Some(head)
}

fn read_i32(input: &mut &[u8]) -> Option<i32> {
    let bytes = take(input, 4)?;
    Some(i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn array<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
    bytes.try_into().ok()
}

/// Cassandra's unsigned vint (`VIntCoding`): the count of leading one bits in
/// the first byte is the count of extra bytes that follow.
pub(crate) fn write_unsigned_vint(value: u64, out: &mut Vec<u8>) {
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
    let start = out.len();
    out.extend_from_slice(&bytes[8 - size..]);
    out[start] |= !(0xffu8 >> (size - 1));
}

pub(crate) fn read_unsigned_vint(input: &mut &[u8]) -> Option<u64> {
    let first = *take(input, 1)?.first()?;
    let extra = first.leading_ones() as usize;
    let mut value = u64::from(first & 0xffu8.checked_shr(extra as u32).unwrap_or(0));
    for &byte in take(input, extra)? {
        value = (value << 8) | u64::from(byte);
    }
    Some(value)
}

fn write_signed_vint(value: i64, out: &mut Vec<u8>) {
    write_unsigned_vint(((value << 1) ^ (value >> 63)) as u64, out);
}

fn read_signed_vint(input: &mut &[u8]) -> Option<i64> {
    let raw = read_unsigned_vint(input)?;
    Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// Splits a list or set (`count` then length-prefixed elements) or a map
/// (`count` then key, value, key, value...). Null elements are invalid.
pub(crate) fn split_collection<'a>(
    bytes: &'a [u8],
    per_entry: usize,
    what: &str,
) -> Result<Vec<&'a [u8]>, ValueError> {
    let truncated = || marshal(format!("Not enough bytes to read a {what}"));
    let mut input = bytes;
    let count = read_i32(&mut input).ok_or_else(truncated)?;
    let count = usize::try_from(count)
        .map_err(|_| marshal(format!("Invalid negative size {count} for a {what}")))?;
    // Each element needs at least its 4-byte length: caps what a forged count can allocate.
    let mut elements = Vec::with_capacity(count.saturating_mul(per_entry).min(input.len() / 4));
    for _ in 0..count.saturating_mul(per_entry) {
        let length = read_i32(&mut input).ok_or_else(truncated)?;
        let length = usize::try_from(length)
            .map_err(|_| marshal(format!("null is not supported inside a {what}")))?;
        elements.push(take(&mut input, length).ok_or_else(truncated)?);
    }
    if !input.is_empty() {
        return Err(marshal(format!(
            "Unexpected extraneous bytes after {what} value"
        )));
    }
    Ok(elements)
}

/// Splits a tuple or UDT into at most `arity` fields (`None` for null).
/// Fewer fields than the arity is legal: trailing fields are null.
pub(crate) fn split_fields<'a>(
    bytes: &'a [u8],
    arity: usize,
    what: &dyn fmt::Display,
) -> Result<Vec<Option<&'a [u8]>>, ValueError> {
    let mut input = bytes;
    let mut fields = Vec::with_capacity(arity.min(bytes.len() / 4));
    while !input.is_empty() {
        if fields.len() == arity {
            return Err(marshal(format!(
                "Expected {arity} {} for {what} column, but got more",
                if arity == 1 { "value" } else { "values" }
            )));
        }
        let index = fields.len();
        let truncated = || marshal(format!("Not enough bytes to read {index}th component"));
        let length = read_i32(&mut input).ok_or_else(truncated)?;
        fields.push(match usize::try_from(length) {
            Ok(length) => Some(take(&mut input, length).ok_or_else(truncated)?),
            Err(_) => None,
        });
    }
    Ok(fields)
}

/// The byte width of a vector element when Cassandra writes it without a
/// length prefix (`AbstractType.valueLengthIfFixed`). smallint, tinyint,
/// date and time are *not* fixed-length there.
pub(crate) fn vector_element_width(ty: &CqlType) -> Option<usize> {
    match ty {
        CqlType::Native(NativeType::Boolean) => Some(1),
        CqlType::Native(NativeType::Int | NativeType::Float) => Some(4),
        CqlType::Native(
            NativeType::Bigint | NativeType::Counter | NativeType::Double | NativeType::Timestamp,
        ) => Some(8),
        CqlType::Native(NativeType::Uuid | NativeType::Timeuuid) => Some(16),
        CqlType::Vector(element, dimension) => {
            vector_element_width(element)?.checked_mul(*dimension as usize)
        }
        CqlType::Frozen(inner) => vector_element_width(inner),
        _ => None,
    }
}

/// Splits a vector of `dimension` elements.
pub(crate) fn split_vector<'a>(
    element: &CqlType,
    dimension: u32,
    bytes: &'a [u8],
) -> Result<Vec<&'a [u8]>, ValueError> {
    let dimension = dimension as usize;
    if let Some(width) = vector_element_width(element) {
        let expected = width.saturating_mul(dimension);
        if bytes.len() != expected || width == 0 {
            return Err(marshal(format!(
                "Expected {expected} bytes for a vector of {dimension} {element} but got {}",
                bytes.len()
            )));
        }
        return Ok(bytes.chunks_exact(width).collect());
    }
    let mut input = bytes;
    let mut elements = Vec::with_capacity(dimension.min(bytes.len()));
    for _ in 0..dimension {
        let truncated = || marshal(format!("Not enough bytes to read a vector of {dimension}"));
        let length = read_unsigned_vint(&mut input).ok_or_else(truncated)?;
        let length = usize::try_from(length).map_err(|_| truncated())?;
        elements.push(take(&mut input, length).ok_or_else(truncated)?);
    }
    if !input.is_empty() {
        return Err(marshal(format!(
            "Unexpected {} extraneous bytes after vector value",
            input.len()
        )));
    }
    Ok(elements)
}

// ---------------------------------------------------------------------------
// Validation.
// ---------------------------------------------------------------------------

/// Whether Cassandra accepts zero bytes as a value of this native type.
/// The types added in 2.2+ (smallint, tinyint, date, time, duration) do not.
fn allows_empty(t: NativeType) -> bool {
    !matches!(
        t,
        NativeType::Smallint
            | NativeType::Tinyint
            | NativeType::Date
            | NativeType::Time
            | NativeType::Duration
    )
}

fn expect_length(bytes: &[u8], length: usize, message: &str) -> Result<(), ValueError> {
    if bytes.len() == length {
        Ok(())
    } else {
        Err(marshal(format!("{message} ({})", bytes.len())))
    }
}

fn validate_native(t: NativeType, bytes: &[u8]) -> Result<(), ValueError> {
    if bytes.is_empty() && allows_empty(t) {
        return Ok(());
    }
    match t {
        NativeType::Bigint | NativeType::Counter => {
            expect_length(bytes, 8, "Expected 8 or 0 byte long")
        }
        NativeType::Int => expect_length(bytes, 4, "Expected 4 or 0 byte int"),
        NativeType::Smallint => expect_length(bytes, 2, "Expected 2 bytes for a smallint"),
        NativeType::Tinyint => expect_length(bytes, 1, "Expected 1 byte for a tinyint"),
        NativeType::Boolean => expect_length(bytes, 1, "Expected 1 or 0 byte value"),
        NativeType::Double => expect_length(bytes, 8, "Expected 8 or 0 byte value for a double"),
        NativeType::Float => expect_length(bytes, 4, "Expected 4 or 0 byte value for a float"),
        NativeType::Date => expect_length(bytes, 4, "Expected 4 byte long for date"),
        NativeType::Time => expect_length(bytes, 8, "Expected 8 byte long for time"),
        NativeType::Timestamp => expect_length(bytes, 8, "Expected 8 or 0 byte long for date"),
        NativeType::Uuid => expect_length(bytes, 16, "UUID should be 16 or 0 bytes"),
        NativeType::Timeuuid => validate_timeuuid(bytes),
        NativeType::Inet => validate_inet(bytes),
        NativeType::Ascii => validate_ascii(bytes),
        NativeType::Text => std::str::from_utf8(bytes)
            .map(|_| ())
            .map_err(|_| marshal("String didn't validate.")),
        NativeType::Blob => Ok(()),
        NativeType::Varint => Ok(()),
        NativeType::Decimal => validate_decimal(bytes),
        NativeType::Duration => decode_duration(bytes).map(|_| ()),
    }
}

fn validate_timeuuid(bytes: &[u8]) -> Result<(), ValueError> {
    expect_length(bytes, 16, "UUID should be 16 or 0 bytes")?;
    match bytes.get(6) {
        Some(byte) if byte >> 4 != 1 => Err(marshal("Invalid version for TimeUUID type.")),
        _ => Ok(()),
    }
}

fn validate_inet(bytes: &[u8]) -> Result<(), ValueError> {
    match bytes.len() {
        0 | 4 | 16 => Ok(()),
        _ => Err(marshal(format!(
            "Expected 4 or 16 byte inetaddress; got 0x{}",
            hex::encode(bytes)
        ))),
    }
}

fn validate_ascii(bytes: &[u8]) -> Result<(), ValueError> {
    match bytes.iter().find(|b| !b.is_ascii()) {
        Some(b) => Err(marshal(format!("Invalid byte for ascii: {}", *b as i8))),
        None => Ok(()),
    }
}

fn validate_decimal(bytes: &[u8]) -> Result<(), ValueError> {
    match bytes.len() {
        0 => Ok(()),
        1..=3 => Err(marshal(format!(
            "Expected 0 or at least 4 bytes ({})",
            bytes.len()
        ))),
        4 => Err(marshal("Zero length BigInteger")),
        _ => Ok(()),
    }
}

/// Checks that `bytes` are a valid serialized value of `ty`. Empty values
/// are accepted wherever Cassandra accepts them.
pub fn validate(ty: &CqlType, bytes: &[u8]) -> Result<(), ValueError> {
    match ty {
        CqlType::Native(t) => validate_native(*t, bytes),
        CqlType::Frozen(inner) => validate(inner, bytes),
        CqlType::Custom(_) => Ok(()),
        CqlType::List(element) | CqlType::Set(element) => {
            let what = collection_name(ty);
            for item in split_collection(bytes, 1, what)? {
                validate(element, item)?;
            }
            Ok(())
        }
        CqlType::Map(key, value) => {
            for pair in split_collection(bytes, 2, "map")?.chunks(2) {
                validate(key, pair[0])?;
                validate(value, pair[1])?;
            }
            Ok(())
        }
        CqlType::Tuple(types) => validate_fields(types.iter(), bytes, ty),
        CqlType::Udt(udt) => validate_fields(udt.fields.iter().map(|(_, t)| t), bytes, ty),
        CqlType::Vector(element, dimension) => {
            if bytes.is_empty() {
                return Ok(());
            }
            for item in split_vector(element, *dimension, bytes)? {
                validate(element, item)?;
            }
            Ok(())
        }
    }
}

fn validate_fields<'t>(
    types: impl ExactSizeIterator<Item = &'t CqlType>,
    bytes: &[u8],
    ty: &CqlType,
) -> Result<(), ValueError> {
    let fields = split_fields(bytes, types.len(), ty)?;
    for (field, field_type) in fields.into_iter().zip(types) {
        if let Some(field) = field {
            validate(field_type, field)?;
        }
    }
    Ok(())
}

fn collection_name(ty: &CqlType) -> &'static str {
    match ty.unfrozen() {
        CqlType::Set(_) => "set",
        CqlType::Map(..) => "map",
        _ => "list",
    }
}

// ---------------------------------------------------------------------------
// Deserialization.
// ---------------------------------------------------------------------------

impl Value {
    /// Decodes serialized bytes of `ty`. Never panics; zero bytes for a type
    /// that allows the empty value give [`ValueError::EmptyValue`].
    pub fn deserialize(ty: &CqlType, bytes: &[u8]) -> Result<Value, ValueError> {
        match ty {
            CqlType::Native(t) => deserialize_native(*t, bytes),
            CqlType::Frozen(inner) => Value::deserialize(inner, bytes),
            CqlType::Custom(_) => Ok(Value::Custom(bytes.to_vec())),
            CqlType::List(element) | CqlType::Set(element) => {
                let what = collection_name(ty);
                let items = non_empty(bytes)
                    .and_then(|b| split_collection(b, 1, what))?
                    .into_iter()
                    .map(|item| deserialize_nested(element, item, ty))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(match ty {
                    CqlType::Set(_) => Value::Set(items),
                    _ => Value::List(items),
                })
            }
            CqlType::Map(key, value) => {
                let entries = non_empty(bytes).and_then(|b| split_collection(b, 2, "map"))?;
                let pairs = entries
                    .chunks(2)
                    .map(|p| {
                        Ok((
                            deserialize_nested(key, p[0], ty)?,
                            deserialize_nested(value, p[1], ty)?,
                        ))
                    })
                    .collect::<Result<Vec<_>, ValueError>>()?;
                Ok(Value::Map(pairs))
            }
            CqlType::Tuple(types) => deserialize_fields(types.iter(), bytes, ty).map(Value::Tuple),
            CqlType::Udt(udt) => {
                deserialize_fields(udt.fields.iter().map(|(_, t)| t), bytes, ty).map(Value::Udt)
            }
            CqlType::Vector(element, dimension) => {
                let items = non_empty(bytes)
                    .and_then(|b| split_vector(element, *dimension, b))?
                    .into_iter()
                    .map(|item| deserialize_nested(element, item, ty))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Value::Vector(items))
            }
        }
    }
}

fn non_empty(bytes: &[u8]) -> Result<&[u8], ValueError> {
    if bytes.is_empty() {
        Err(ValueError::EmptyValue)
    } else {
        Ok(bytes)
    }
}

/// An empty value nested in a collection, tuple or vector is valid in
/// Cassandra but has no [`Value`] form; say so instead of `EmptyValue`,
/// which would wrongly suggest the whole value is empty.
fn deserialize_nested(ty: &CqlType, bytes: &[u8], parent: &CqlType) -> Result<Value, ValueError> {
    Value::deserialize(ty, bytes).map_err(|e| match e {
        ValueError::EmptyValue => marshal(format!(
            "an empty {ty} value inside a {parent} cannot be represented"
        )),
        other => other,
    })
}

fn deserialize_fields<'t>(
    types: impl ExactSizeIterator<Item = &'t CqlType>,
    bytes: &[u8],
    ty: &CqlType,
) -> Result<Vec<Option<Value>>, ValueError> {
    let fields = split_fields(bytes, types.len(), ty)?;
    fields
        .into_iter()
        .zip(types)
        .map(|(field, field_type)| {
            field
                .map(|f| deserialize_nested(field_type, f, ty))
                .transpose()
        })
        .collect()
}

fn deserialize_native(t: NativeType, bytes: &[u8]) -> Result<Value, ValueError> {
    validate_native(t, bytes)?;
    if bytes.is_empty() && allows_empty(t) && !is_string_like(t) {
        return Err(ValueError::EmptyValue);
    }
    decode_valid_native(t, bytes).ok_or_else(|| marshal(format!("invalid {} value", t.name())))
}

fn is_string_like(t: NativeType) -> bool {
    matches!(t, NativeType::Ascii | NativeType::Text | NativeType::Blob)
}

/// Decodes bytes that `validate_native` accepted; `None` cannot happen then,
/// but keeps this free of panics.
fn decode_valid_native(t: NativeType, bytes: &[u8]) -> Option<Value> {
    Some(match t {
        NativeType::Ascii => Value::Ascii(String::from_utf8(bytes.to_vec()).ok()?),
        NativeType::Text => Value::Text(String::from_utf8(bytes.to_vec()).ok()?),
        NativeType::Blob => Value::Blob(bytes.to_vec()),
        NativeType::Bigint => Value::Bigint(i64::from_be_bytes(array(bytes)?)),
        NativeType::Counter => Value::Counter(i64::from_be_bytes(array(bytes)?)),
        NativeType::Timestamp => Value::Timestamp(i64::from_be_bytes(array(bytes)?)),
        NativeType::Time => Value::Time(i64::from_be_bytes(array(bytes)?)),
        NativeType::Int => Value::Int(i32::from_be_bytes(array(bytes)?)),
        NativeType::Date => Value::Date(u32::from_be_bytes(array(bytes)?)),
        NativeType::Smallint => Value::Smallint(i16::from_be_bytes(array(bytes)?)),
        NativeType::Tinyint => Value::Tinyint(i8::from_be_bytes(array(bytes)?)),
        NativeType::Boolean => Value::Boolean(*bytes.first()? != 0),
        NativeType::Double => Value::Double(f64::from_be_bytes(array(bytes)?)),
        NativeType::Float => Value::Float(f32::from_be_bytes(array(bytes)?)),
        NativeType::Uuid => Value::Uuid(array(bytes)?),
        NativeType::Timeuuid => Value::Timeuuid(array(bytes)?),
        NativeType::Inet => Value::Inet(decode_inet(bytes)?),
        NativeType::Varint => Value::Varint(BigInt::from_signed_bytes_be(bytes)),
        NativeType::Decimal => {
            let (scale, unscaled) = bytes.split_at_checked(4)?;
            Value::Decimal {
                unscaled: BigInt::from_signed_bytes_be(unscaled),
                scale: i32::from_be_bytes(array(scale)?),
            }
        }
        NativeType::Duration => decode_duration(bytes).ok()?,
    })
}

fn decode_inet(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => Some(IpAddr::V4(Ipv4Addr::from(array::<4>(bytes)?))),
        16 => Some(IpAddr::V6(Ipv6Addr::from(array::<16>(bytes)?))),
        _ => None,
    }
}

fn decode_duration(bytes: &[u8]) -> Result<Value, ValueError> {
    if bytes.len() < 3 {
        return Err(marshal(format!(
            "Expected at least 3 bytes for a duration ({})",
            bytes.len()
        )));
    }
    let mut input = bytes;
    let truncated = || marshal("Not enough bytes to read a duration");
    let months = read_signed_vint(&mut input).ok_or_else(truncated)?;
    let days = read_signed_vint(&mut input).ok_or_else(truncated)?;
    let nanos = read_signed_vint(&mut input).ok_or_else(truncated)?;
    if !input.is_empty() {
        return Err(marshal("Unexpected extraneous bytes after duration value"));
    }
    let (Ok(months), Ok(days)) = (i32::try_from(months), i32::try_from(days)) else {
        return Err(marshal("The duration months or days are out of range"));
    };
    let signs = [
        i64::from(months).signum(),
        i64::from(days).signum(),
        nanos.signum(),
    ];
    if signs.contains(&1) && signs.contains(&-1) {
        return Err(marshal(format!(
            "The duration months, days and nanoseconds must be all of the same sign ({months}, {days}, {nanos})"
        )));
    }
    Ok(Value::Duration {
        months,
        days,
        nanos,
    })
}

// ---------------------------------------------------------------------------
// Serialization.
// ---------------------------------------------------------------------------

impl Value {
    /// Appends the native protocol (v4/v5) bytes of this value.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        match self {
            Value::Ascii(s) | Value::Text(s) => out.extend_from_slice(s.as_bytes()),
            Value::Blob(b) | Value::Custom(b) => out.extend_from_slice(b),
            Value::Bigint(v) | Value::Counter(v) | Value::Timestamp(v) | Value::Time(v) => {
                out.extend_from_slice(&v.to_be_bytes())
            }
            Value::Int(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Date(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Smallint(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Tinyint(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Boolean(v) => out.push(u8::from(*v)),
            Value::Double(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Float(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Uuid(v) | Value::Timeuuid(v) => out.extend_from_slice(v),
            Value::Inet(IpAddr::V4(a)) => out.extend_from_slice(&a.octets()),
            Value::Inet(IpAddr::V6(a)) => out.extend_from_slice(&a.octets()),
            Value::Varint(v) => out.extend_from_slice(&v.to_signed_bytes_be()),
            Value::Decimal { unscaled, scale } => {
                out.extend_from_slice(&scale.to_be_bytes());
                out.extend_from_slice(&unscaled.to_signed_bytes_be());
            }
            Value::Duration {
                months,
                days,
                nanos,
            } => {
                write_signed_vint(i64::from(*months), out);
                write_signed_vint(i64::from(*days), out);
                write_signed_vint(*nanos, out);
            }
            Value::List(items) | Value::Set(items) => {
                write_count(items.len(), out);
                items
                    .iter()
                    .for_each(|item| write_prefixed(Some(item), out));
            }
            Value::Map(entries) => {
                write_count(entries.len(), out);
                for (key, value) in entries {
                    write_prefixed(Some(key), out);
                    write_prefixed(Some(value), out);
                }
            }
            Value::Tuple(fields) | Value::Udt(fields) => {
                fields.iter().for_each(|f| write_prefixed(f.as_ref(), out));
            }
            Value::Vector(items) => serialize_vector(items, out),
        }
    }

    /// The native protocol bytes of this value.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.serialize(&mut out);
        out
    }

    /// Whether Cassandra writes this value without a length inside a vector
    /// (mirrors [`vector_element_width`], decided from the value alone).
    fn is_fixed_width_in_vector(&self) -> bool {
        match self {
            Value::Boolean(_)
            | Value::Int(_)
            | Value::Float(_)
            | Value::Bigint(_)
            | Value::Counter(_)
            | Value::Double(_)
            | Value::Timestamp(_)
            | Value::Uuid(_)
            | Value::Timeuuid(_) => true,
            Value::Vector(items) => items.first().is_some_and(Value::is_fixed_width_in_vector),
            _ => false,
        }
    }
}

fn write_count(count: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&(count as i32).to_be_bytes());
}

/// Writes `[i32 length][bytes]`, or length -1 for null, patching the length
/// in place so nested values are serialized only once.
fn write_prefixed(value: Option<&Value>, out: &mut Vec<u8>) {
    let Some(value) = value else {
        out.extend_from_slice(&(-1i32).to_be_bytes());
        return;
    };
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    value.serialize(out);
    let length = (out.len() - start - 4) as i32;
    out[start..start + 4].copy_from_slice(&length.to_be_bytes());
}

fn serialize_vector(items: &[Value], out: &mut Vec<u8>) {
    let fixed = items.first().is_some_and(Value::is_fixed_width_in_vector);
    for item in items {
        if fixed {
            item.serialize(out);
        } else {
            let bytes = item.to_bytes();
            write_unsigned_vint(bytes.len() as u64, out);
            out.extend_from_slice(&bytes);
        }
    }
}

// ---------------------------------------------------------------------------
// Comparison.
// ---------------------------------------------------------------------------

/// Cassandra's comparator for serialized values of `ty` (`AbstractType.compare`).
/// The empty value sorts first. Malformed bytes never panic: they fall back
/// to unsigned byte order.
pub fn compare(ty: &CqlType, a: &[u8], b: &[u8]) -> Ordering {
    let ty = ty.unfrozen();
    // Tuples have no separate empty value: zero bytes is a tuple of nulls.
    if let CqlType::Tuple(types) = ty {
        return compare_fields(types.iter(), a, b, ty).unwrap_or_else(|| a.cmp(b));
    }
    if let CqlType::Udt(udt) = ty {
        return compare_fields(udt.fields.iter().map(|(_, t)| t), a, b, ty)
            .unwrap_or_else(|| a.cmp(b));
    }
    match (a.is_empty(), b.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => compare_non_empty(ty, a, b).unwrap_or_else(|| a.cmp(b)),
    }
}

fn compare_non_empty(ty: &CqlType, a: &[u8], b: &[u8]) -> Option<Ordering> {
    match ty {
        CqlType::Native(t) => compare_native(*t, a, b),
        CqlType::List(element) | CqlType::Set(element) => {
            let (x, y) = (
                split_collection(a, 1, "").ok()?,
                split_collection(b, 1, "").ok()?,
            );
            Some(compare_sequences(&x, &y, |_| element))
        }
        CqlType::Map(key, value) => {
            let (x, y) = (
                split_collection(a, 2, "").ok()?,
                split_collection(b, 2, "").ok()?,
            );
            Some(compare_sequences(&x, &y, |i| {
                if i % 2 == 0 {
                    key
                } else {
                    value
                }
            }))
        }
        CqlType::Vector(element, dimension) => {
            let x = split_vector(element, *dimension, a).ok()?;
            let y = split_vector(element, *dimension, b).ok()?;
            Some(compare_sequences(&x, &y, |_| element))
        }
        _ => None,
    }
}

/// Element-wise, then the shorter sequence first.
fn compare_sequences<'t>(
    x: &[&[u8]],
    y: &[&[u8]],
    type_at: impl Fn(usize) -> &'t CqlType,
) -> Ordering {
    x.iter()
        .zip(y)
        .enumerate()
        .map(|(i, (p, q))| compare(type_at(i), p, q))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| x.len().cmp(&y.len()))
}

/// Field-wise with null before any value. Missing trailing fields are nulls,
/// so trailing nulls never make a tuple larger. (Cassandra's own loop also
/// treats a trailing *empty* field like a null; that makes its order
/// non-transitive, so here an empty field is a value, as it is mid-tuple.)
fn compare_fields<'t>(
    types: impl ExactSizeIterator<Item = &'t CqlType>,
    a: &[u8],
    b: &[u8],
    ty: &CqlType,
) -> Option<Ordering> {
    let types: Vec<&CqlType> = types.collect();
    let x = trim_trailing_nulls(split_fields(a, types.len(), ty).ok()?);
    let y = trim_trailing_nulls(split_fields(b, types.len(), ty).ok()?);
    let fields = x.iter().zip(&y).zip(&types);
    for ((p, q), field_type) in fields {
        let order = match (p, q) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(p), Some(q)) => compare(field_type, p, q),
        };
        if order.is_ne() {
            return Some(order);
        }
    }
    Some(x.len().cmp(&y.len()))
}

pub(crate) fn trim_trailing_nulls<T>(mut fields: Vec<Option<T>>) -> Vec<Option<T>> {
    while matches!(fields.last(), Some(None)) {
        fields.pop();
    }
    fields
}

fn compare_native(t: NativeType, a: &[u8], b: &[u8]) -> Option<Ordering> {
    match t {
        NativeType::Bigint | NativeType::Counter | NativeType::Timestamp => {
            Some(i64::from_be_bytes(array(a)?).cmp(&i64::from_be_bytes(array(b)?)))
        }
        NativeType::Int => Some(i32::from_be_bytes(array(a)?).cmp(&i32::from_be_bytes(array(b)?))),
        NativeType::Smallint => {
            Some(i16::from_be_bytes(array(a)?).cmp(&i16::from_be_bytes(array(b)?)))
        }
        NativeType::Tinyint => {
            Some(i8::from_be_bytes(array(a)?).cmp(&i8::from_be_bytes(array(b)?)))
        }
        NativeType::Boolean => {
            let (x, y): ([u8; 1], [u8; 1]) = (array(a)?, array(b)?);
            Some((x[0] != 0).cmp(&(y[0] != 0)))
        }
        NativeType::Float => Some(java_float_order(array(a)?).cmp(&java_float_order(array(b)?))),
        NativeType::Double => Some(java_double_order(array(a)?).cmp(&java_double_order(array(b)?))),
        NativeType::Uuid => Some(compare_uuid(array(a)?, array(b)?)),
        NativeType::Timeuuid => Some(compare_timeuuid(array(a)?, array(b)?)),
        NativeType::Varint => {
            Some(BigInt::from_signed_bytes_be(a).cmp(&BigInt::from_signed_bytes_be(b)))
        }
        NativeType::Decimal => compare_decimal(a, b),
        // ascii, text, blob, inet, date, time (BYTE_ORDER in Cassandra, also
        // for time), duration (not orderable, byte order keeps it total).
        _ => Some(a.cmp(b)),
    }
}

/// An integer ordered as Java's `Float.compare`: -0.0 < 0.0, every NaN equal
/// and above +Infinity.
pub(crate) fn java_float_order(bytes: [u8; 4]) -> i32 {
    let value = f32::from_be_bytes(bytes);
    let bits = if value.is_nan() {
        0x7fc0_0000
    } else {
        i32::from_be_bytes(bytes)
    };
    // Negative floats order backwards by magnitude: flip their 31 low bits.
    bits ^ (((bits >> 31) as u32) >> 1) as i32
}

/// An integer ordered as Java's `Double.compare`.
pub(crate) fn java_double_order(bytes: [u8; 8]) -> i64 {
    let value = f64::from_be_bytes(bytes);
    let bits = if value.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        i64::from_be_bytes(bytes)
    };
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

/// `TimeUUIDType.reorderTimestampBytes`: time_hi (with the version nibble on
/// top), time_mid, time_low, so the 60-bit timestamp reads most significant first.
pub(crate) fn reorder_timestamp_bytes(msb: u64) -> u64 {
    (msb << 48) | ((msb << 16) & 0xffff_0000_0000) | (msb >> 32)
}

fn halves(uuid: [u8; 16]) -> (u64, u64) {
    let value = u128::from_be_bytes(uuid);
    ((value >> 64) as u64, value as u64)
}

/// `UUIDType`: version first, then the timestamp for version 1 (the raw most
/// significant half otherwise), then the least significant half, all unsigned.
fn compare_uuid(a: [u8; 16], b: [u8; 16]) -> Ordering {
    let ((msb_a, lsb_a), (msb_b, lsb_b)) = (halves(a), halves(b));
    let (version_a, version_b) = ((msb_a >> 12) & 0xf, (msb_b >> 12) & 0xf);
    let time_order = if version_a == 1 {
        (reorder_timestamp_bytes(msb_a) as i64).cmp(&(reorder_timestamp_bytes(msb_b) as i64))
    } else {
        msb_a.cmp(&msb_b)
    };
    version_a
        .cmp(&version_b)
        .then(time_order)
        .then(lsb_a.cmp(&lsb_b))
}

/// `TimeUUIDType`: timestamp first (signed, as Java compares longs), then the
/// clock sequence and node as *signed* bytes, kept for compatibility.
fn compare_timeuuid(a: [u8; 16], b: [u8; 16]) -> Ordering {
    let ((msb_a, _), (msb_b, _)) = (halves(a), halves(b));
    let signed = |u: [u8; 16]| -> [i8; 8] { std::array::from_fn(|i| u[8 + i] as i8) };
    (reorder_timestamp_bytes(msb_a) as i64)
        .cmp(&(reorder_timestamp_bytes(msb_b) as i64))
        .then(signed(a).cmp(&signed(b)))
}

/// A decimal in normal form: sign, the decimal exponent `e` such that
/// |value| = 0.d1d2... x 10^e with d1 != 0, and the digits without trailing
/// zeros. Zero has no digits.
pub(crate) struct NormalDecimal {
    pub negative: bool,
    pub exponent: i64,
    pub digits: Vec<u8>,
}

pub(crate) fn normalize_decimal(unscaled: &BigInt, scale: i32) -> NormalDecimal {
    let mut digits: Vec<u8> = unscaled
        .magnitude()
        .to_string()
        .bytes()
        .map(|c| c - b'0')
        .collect();
    let exponent = digits.len() as i64 - i64::from(scale);
    while digits.last() == Some(&0) {
        digits.pop();
    }
    NormalDecimal {
        negative: unscaled.sign() == Sign::Minus,
        exponent,
        digits,
    }
}

pub(crate) fn parse_decimal(bytes: &[u8]) -> Option<(BigInt, i32)> {
    let (scale, unscaled) = bytes.split_at_checked(4)?;
    if unscaled.is_empty() {
        return None;
    }
    Some((
        BigInt::from_signed_bytes_be(unscaled),
        i32::from_be_bytes(array(scale)?),
    ))
}

/// `BigDecimal.compareTo`: by numeric value, so 1.0 equals 1.00. Compares
/// exponents before digits, so a scale of 2^31 costs nothing.
fn compare_decimal(a: &[u8], b: &[u8]) -> Option<Ordering> {
    let (ua, sa) = parse_decimal(a)?;
    let (ub, sb) = parse_decimal(b)?;
    let sign_order = ua.sign().cmp(&ub.sign());
    if sign_order.is_ne() || ua.is_zero() {
        return Some(sign_order);
    }
    let (x, y) = (normalize_decimal(&ua, sa), normalize_decimal(&ub, sb));
    let magnitude = x
        .exponent
        .cmp(&y.exponent)
        .then_with(|| x.digits.cmp(&y.digits));
    Some(if x.negative {
        magnitude.reverse()
    } else {
        magnitude
    })
}

// ---------------------------------------------------------------------------
// Text forms.
// ---------------------------------------------------------------------------

impl fmt::Display for Value {
    /// The CQL literal. UDTs print without field names (use
    /// [`Value::to_cql_literal`] to get `{name: value}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&literal(self, None))
    }
}

impl Value {
    /// The CQL literal of this value, with UDT field names taken from `ty`.
    pub fn to_cql_literal(&self, ty: &CqlType) -> String {
        literal(self, Some(ty))
    }

    /// Cassandra's `toJson()` text of this value.
    pub fn to_json(&self, ty: &CqlType) -> String {
        json(self, Some(ty))
    }
}

/// The type of element `index` of a collection, tuple or vector type.
fn child_type(ty: Option<&CqlType>, index: usize, map_value: bool) -> Option<&CqlType> {
    match ty?.unfrozen() {
        CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) => Some(e),
        CqlType::Map(k, v) => Some(if map_value { v } else { k }),
        CqlType::Tuple(types) => types.get(index),
        CqlType::Udt(udt) => udt.fields.get(index).map(|(_, t)| t),
        _ => None,
    }
}

fn udt_type(ty: Option<&CqlType>) -> Option<&UdtType> {
    match ty?.unfrozen() {
        CqlType::Udt(udt) => Some(udt),
        _ => None,
    }
}

fn literal(value: &Value, ty: Option<&CqlType>) -> String {
    let nested = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| literal(v, child_type(ty, i, false)))
            .collect()
    };
    match value {
        Value::Ascii(s) | Value::Text(s) => quote_cql_string(s),
        Value::Blob(b) | Value::Custom(b) => format!("0x{}", hex::encode(b)),
        Value::Timestamp(ms) => format!("'{}'", format_timestamp(*ms, true)),
        Value::Date(days) => format!("'{}'", format_date(*days)),
        Value::Time(nanos) => format!("'{}'", format_time(*nanos)),
        Value::Inet(ip) => format!("'{}'", format_inet(ip)),
        Value::List(items) | Value::Vector(items) => format!("[{}]", nested(items).join(", ")),
        Value::Set(items) => format!("{{{}}}", nested(items).join(", ")),
        Value::Map(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}: {}",
                        literal(k, child_type(ty, 0, false)),
                        literal(v, child_type(ty, 0, true))
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Tuple(fields) => {
            let arity = match ty.map(CqlType::unfrozen) {
                Some(CqlType::Tuple(types)) => types.len().max(fields.len()),
                _ => fields.len(),
            };
            let parts: Vec<String> = (0..arity)
                .map(|i| match fields.get(i) {
                    Some(Some(v)) => literal(v, child_type(ty, i, false)),
                    _ => "null".to_string(),
                })
                .collect();
            format!("({})", parts.join(", "))
        }
        Value::Udt(fields) => udt_literal(fields, ty),
        other => scalar_text(other),
    }
}

fn udt_literal(fields: &[Option<Value>], ty: Option<&CqlType>) -> String {
    let Some(udt) = udt_type(ty) else {
        let parts: Vec<String> = fields
            .iter()
            .map(|f| {
                f.as_ref()
                    .map_or_else(|| "null".to_string(), |v| literal(v, None))
            })
            .collect();
        return format!("{{{}}}", parts.join(", "));
    };
    let parts: Vec<String> = udt
        .fields
        .iter()
        .enumerate()
        .map(|(i, (name, field_type))| {
            let text = match fields.get(i) {
                Some(Some(v)) => literal(v, Some(field_type)),
                _ => "null".to_string(),
            };
            format!("{}: {text}", quote_identifier_if_needed(name))
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Text shared by CQL literals and JSON for numbers, booleans, uuids, durations.
fn scalar_text(value: &Value) -> String {
    match value {
        Value::Bigint(v) | Value::Counter(v) => v.to_string(),
        Value::Int(v) => v.to_string(),
        Value::Smallint(v) => v.to_string(),
        Value::Tinyint(v) => v.to_string(),
        Value::Boolean(v) => v.to_string(),
        Value::Varint(v) => v.to_string(),
        Value::Decimal { unscaled, scale } => java_big_decimal(unscaled, *scale),
        Value::Double(v) => java_double(*v),
        Value::Float(v) => java_float(*v),
        Value::Uuid(u) | Value::Timeuuid(u) => crate::uuid::to_text(u),
        Value::Duration {
            months,
            days,
            nanos,
        } => format_duration(*months, *days, *nanos),
        other => literal(other, None),
    }
}

fn json(value: &Value, ty: Option<&CqlType>) -> String {
    let nested = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| json(v, child_type(ty, i, false)))
            .collect()
    };
    match value {
        Value::Ascii(s) | Value::Text(s) => json_string(s),
        Value::Blob(b) | Value::Custom(b) => format!("\"0x{}\"", hex::encode(b)),
        Value::Timestamp(ms) => format!("\"{}\"", format_timestamp(*ms, false)),
        Value::Date(days) => format!("\"{}\"", format_date(*days)),
        Value::Time(nanos) => format!("\"{}\"", format_time(*nanos)),
        Value::Inet(ip) => format!("\"{}\"", format_inet(ip)),
        Value::Uuid(_) | Value::Timeuuid(_) | Value::Duration { .. } => {
            format!("\"{}\"", scalar_text(value))
        }
        // JSON has no NaN or Infinity; Cassandra writes null.
        Value::Double(v) if !v.is_finite() => "null".to_string(),
        Value::Float(v) if !v.is_finite() => "null".to_string(),
        Value::List(items) | Value::Set(items) | Value::Vector(items) => {
            format!("[{}]", nested(items).join(", "))
        }
        Value::Map(entries) => json_map(entries, ty),
        Value::Tuple(fields) => {
            let arity = match ty.map(CqlType::unfrozen) {
                Some(CqlType::Tuple(types)) => types.len().max(fields.len()),
                _ => fields.len(),
            };
            let parts: Vec<String> = (0..arity)
                .map(|i| match fields.get(i) {
                    Some(Some(v)) => json(v, child_type(ty, i, false)),
                    _ => "null".to_string(),
                })
                .collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Udt(fields) => json_udt(fields, ty),
        other => scalar_text(other),
    }
}

/// JSON object keys must be strings: non-string keys are quoted as text.
fn json_map(entries: &[(Value, Value)], ty: Option<&CqlType>) -> String {
    let parts: Vec<String> = entries
        .iter()
        .map(|(k, v)| {
            let key = json(k, child_type(ty, 0, false));
            let key = if key.starts_with('"') {
                key
            } else {
                json_string(&key)
            };
            format!("{key}: {}", json(v, child_type(ty, 0, true)))
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

fn json_udt(fields: &[Option<Value>], ty: Option<&CqlType>) -> String {
    let udt = udt_type(ty);
    let count = udt.map_or(fields.len(), |u| u.fields.len().max(fields.len()));
    let parts: Vec<String> = (0..count)
        .map(|i| {
            let (name, field_type) = match udt.and_then(|u| u.fields.get(i)) {
                Some((name, t)) => (name.clone(), Some(t)),
                None => (format!("field{i}"), None),
            };
            // Cassandra double-quotes case-sensitive names inside the JSON key.
            let name = if name == name.to_lowercase() {
                name
            } else {
                format!("\"{name}\"")
            };
            let text = match fields.get(i) {
                Some(Some(v)) => json(v, field_type),
                _ => "null".to_string(),
            };
            format!("{}: {text}", json_string(&name))
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

fn quote_cql_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `s` as a JSON string literal, quotes included (Jackson's escaping).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Java's `InetAddress.getHostAddress`: IPv6 uncompressed, and IPv4-mapped
/// IPv6 addresses shown as IPv4 (Java decodes them as `Inet4Address`).
fn format_inet(ip: &IpAddr) -> String {
    match ip {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let parts: Vec<String> = a.segments().iter().map(|s| format!("{s:x}")).collect();
                parts.join(":")
            }
        },
    }
}

/// Proleptic Gregorian (year, month, day) of a day count from 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn format_year(year: i64) -> String {
    if (0..=9999).contains(&year) {
        format!("{year:04}")
    } else if year > 9999 {
        format!("+{year}")
    } else {
        format!("-{:04}", -year)
    }
}

fn format_day(days_since_epoch: i64) -> String {
    let (year, month, day) = civil_from_days(days_since_epoch);
    format!("{}-{month:02}-{day:02}", format_year(year))
}

fn format_date(days: u32) -> String {
    format_day(i64::from(days) - (1i64 << 31))
}

const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// `HH:MM:SS.nnnnnnnnn`; values outside a day (Cassandra only checks the
/// length) print as the raw nanosecond count.
/// A `time` value as CQL prints it (`HH:MM:SS.nnnnnnnnn`); the bare
/// number outside a day.
pub fn format_time(nanos: i64) -> String {
    if !(0..NANOS_PER_DAY).contains(&nanos) {
        return nanos.to_string();
    }
    let seconds = nanos / 1_000_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:09}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        nanos % 1_000_000_000
    )
}

/// CQL literal form `2011-02-03 04:05:00.000000+0000` (as cqlsh prints),
/// or the toJson form `2011-02-03 04:05:00.000Z`.
fn format_timestamp(millis: i64, cql_literal: bool) -> String {
    let days = millis.div_euclid(86_400_000);
    let ms_of_day = millis.rem_euclid(86_400_000);
    let seconds = ms_of_day / 1000;
    let time = format!(
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    let fraction = ms_of_day % 1000;
    if cql_literal {
        format!("{} {time}.{fraction:03}000+0000", format_day(days))
    } else {
        format!("{} {time}.{fraction:03}Z", format_day(days))
    }
}

/// Cassandra's `TimestampType.getString`: `2011-02-03T04:05:00.000Z`.
pub fn timestamp_iso8601(millis: i64) -> String {
    format_timestamp(millis, false).replacen(' ', "T", 1)
}

/// Cassandra's `Duration.toString`: `1y2mo3d4h5m6s7ms8us9ns`, largest units
/// first, zero units left out.
fn format_duration(months: i32, days: i32, nanos: i64) -> String {
    let mut out = String::new();
    if months < 0 || days < 0 || nanos < 0 {
        out.push('-');
    }
    let mut append = |value: u64, divisor: u64, unit: &str| -> u64 {
        if value == 0 || value < divisor {
            return value;
        }
        out.push_str(&format!("{}{unit}", value / divisor));
        value % divisor
    };
    let months_left = append(u64::from(months.unsigned_abs()), 12, "y");
    append(months_left, 1, "mo");
    append(u64::from(days.unsigned_abs()), 1, "d");
    let mut rest = nanos.unsigned_abs();
    for (divisor, unit) in [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        rest = append(rest, divisor, unit);
    }
    out
}

/// Java's `Double.toString` (JDK 17, the JVM Cassandra 5.0 runs on): plain
/// between 10^-3 and 10^7, otherwise `d.dddE±n`; always at least one
/// fractional digit.
pub fn java_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    let plain = (1e-3..1e7).contains(&v.abs());
    let scientific = match java_integral_digits(v, 53) {
        Some(text) => text,
        None => java_two_digits_if_one(
            format!("{v:e}"),
            format!("{v:.1e}"),
            java_double_estimate(v),
            |t| t.parse::<f64>().ok() == Some(v),
        ),
    };
    java_float_text(&scientific, v == 0.0, plain)
}

/// Java's `Float.toString` (JDK 17).
pub fn java_float(v: f32) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    let plain = (1e-3..1e7).contains(&v.abs());
    let scientific = match java_integral_digits(f64::from(v), 24) {
        Some(text) => text,
        None => java_two_digits_if_one(
            format!("{v:e}"),
            format!("{v:.1e}"),
            java_float_estimate(v),
            |t| t.parse::<f32>().ok() == Some(v),
        ),
    };
    java_float_text(&scientific, v == 0.0, plain)
}

/// JDK 17's `FloatingDecimal` always generates a second digit after a
/// first one it placed by its estimate of the decimal exponent: where the
/// shortest digits that read back as the value are one, Java prints the
/// two-digit decimal closest to it (`Double.MIN_VALUE`, 4.94e-324, shortest
/// `5e-324`, is `4.9E-324`). Where the estimate is one too high its first
/// digit is a zero it drops, and the next one may end the digits (`2 *
/// Double.MIN_VALUE` is `1.0E-323`). Only subnormals, with few bits left,
/// have a closest two-digit decimal other than the one digit and a zero.
/// `shortest` and `two_digits` are Rust's `{:e}` and `{:.1e}` texts of the
/// value; `estimate` is `FloatingDecimal.estimateDecExp`'s.
fn java_two_digits_if_one(
    shortest: String,
    two_digits: String,
    estimate: i32,
    reads_back: impl Fn(&str) -> bool,
) -> String {
    let mantissa = shortest
        .split_once('e')
        .map_or(shortest.as_str(), |(m, _)| m);
    let one_digit = mantissa.trim_start_matches('-').len() == 1;
    let (two_mantissa, two_exponent) = two_digits.split_once('e').unwrap_or((&two_digits, ""));
    let first_digit_placed = two_exponent.parse::<i32>().ok() == Some(estimate);
    if one_digit && first_digit_placed && !two_mantissa.ends_with('0') && reads_back(&two_digits) {
        two_digits
    } else {
        shortest
    }
}

/// `FloatingDecimal.estimateDecExp`: floor of a linear estimate of the
/// decimal exponent of `significand` (in [1, 2)) times 2^`binary_exponent`,
/// with Java's own truncated constants (its floor is what must agree).
#[allow(clippy::approx_constant)]
fn java_estimated_decimal_exponent(significand: f64, binary_exponent: i32) -> i32 {
    let estimate = (significand - 1.5) * 0.289529654
        + 0.176091259
        + f64::from(binary_exponent) * 0.301029995663981;
    estimate.floor() as i32
}

/// A finite value's significand in [1, 2) and binary exponent, from the
/// `mantissa_bits` stored bits of an IEEE value with `exponent` and exponent
/// `bias` (subnormals normalized; zero as 1 * 2^0, its estimate unused).
fn binary_parts(mantissa: u64, exponent: i32, mantissa_bits: u32, bias: i32) -> (f64, i32) {
    if exponent == 0 && mantissa == 0 {
        return (1.0, 0);
    }
    if exponent == 0 {
        let top = 63 - mantissa.leading_zeros() as i32;
        let significand = mantissa as f64 / (1u64 << top) as f64;
        (significand, top - (bias - 1) - mantissa_bits as i32)
    } else {
        let significand = 1.0 + mantissa as f64 / (1u64 << mantissa_bits) as f64;
        (significand, exponent - bias)
    }
}

fn java_double_estimate(v: f64) -> i32 {
    let bits = v.abs().to_bits();
    let (significand, binary) = binary_parts(bits & ((1 << 52) - 1), (bits >> 52) as i32, 52, 1023);
    java_estimated_decimal_exponent(significand, binary)
}

fn java_float_estimate(v: f32) -> i32 {
    let bits = u64::from(v.abs().to_bits());
    let (significand, binary) = binary_parts(bits & ((1 << 23) - 1), (bits >> 23) as i32, 23, 127);
    java_estimated_decimal_exponent(significand, binary)
}

/// JDK 17's `FloatingDecimal` prints an integral value in [1, 2^63) from
/// its exact digits, less the ones below the type's precision (rounded),
/// rather than the shortest digits that round-trip: `123456789f` is
/// `1.23456792E8`. The `{:e}` text of those digits, or None for other values.
fn java_integral_digits(v: f64, significant_bits: i32) -> Option<String> {
    // FloatingDecimal.insignificantDigitsNumber.
    const INSIGNIFICANT: [u32; 64] = [
        0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 8, 8,
        9, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 15,
        16, 16, 16, 17, 17, 17, 18, 18, 18, 19,
    ];
    let a = v.abs();
    if a < 1.0 || a.fract() != 0.0 {
        return None;
    }
    let bin_exp = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    if bin_exp > 62 {
        return None;
    }
    let mut value = a as u64;
    let mut exponent: i32 = 0;
    if bin_exp > significant_bits {
        let p2 = (bin_exp - significant_bits - 1) as usize;
        let insignificant = if p2 > 1 && p2 < INSIGNIFICANT.len() {
            INSIGNIFICANT[p2]
        } else {
            0
        };
        if insignificant > 0 {
            let pow10 = 10u64.pow(insignificant);
            let residue = value % pow10;
            value /= pow10;
            exponent += insignificant as i32;
            if residue >= pow10 / 2 {
                value += 1;
            }
        }
    }
    while value.is_multiple_of(10) {
        value /= 10;
        exponent += 1;
    }
    let digits = value.to_string();
    exponent += digits.len() as i32 - 1;
    let sign = if v < 0.0 { "-" } else { "" };
    let rest = if digits.len() > 1 { &digits[1..] } else { "0" };
    Some(format!("{sign}{}.{rest}e{exponent}", &digits[..1]))
}

/// Builds Java's layout from Rust's shortest `{:e}` text (`-1.25e-5`).
fn java_float_text(scientific: &str, zero: bool, plain: bool) -> String {
    let (sign, body) = match scientific.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", scientific),
    };
    if zero {
        return format!("{sign}0.0");
    }
    let (mantissa, exponent) = body.split_once('e').unwrap_or((body, "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !plain {
        let rest = if digits.len() > 1 { &digits[1..] } else { "0" };
        return format!("{sign}{}.{rest}E{exponent}", &digits[..1]);
    }
    if exponent < 0 {
        let zeros = "0".repeat((-exponent - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let integer_len = exponent as usize + 1;
    if digits.len() <= integer_len {
        let zeros = "0".repeat(integer_len - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        format!(
            "{sign}{}.{}",
            &digits[..integer_len],
            &digits[integer_len..]
        )
    }
}

/// Java's `BigDecimal.toString`: plain unless the scale is negative or the
/// number is tiny, then `d.dddE±n`. Its length is bounded by the digits.
fn java_big_decimal(unscaled: &BigInt, scale: i32) -> String {
    let sign = if unscaled.sign() == Sign::Minus {
        "-"
    } else {
        ""
    };
    let digits = unscaled.magnitude().to_string();
    let adjusted = digits.len() as i64 - 1 - i64::from(scale);
    if scale >= 0 && adjusted >= -6 {
        let scale = scale as usize;
        if scale == 0 {
            return format!("{sign}{digits}");
        }
        if digits.len() > scale {
            let point = digits.len() - scale;
            return format!("{sign}{}.{}", &digits[..point], &digits[point..]);
        }
        return format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()));
    }
    let fraction = if digits.len() > 1 {
        format!(".{}", &digits[1..])
    } else {
        String::new()
    };
    format!(
        "{sign}{}{fraction}E{}{adjusted}",
        &digits[..1],
        if adjusted > 0 { "+" } else { "" }
    )
}

/// Proptest strategies for CQL types and values, shared with `comparable`'s tests.
#[cfg(test)]
pub(crate) mod arbitrary {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// Native types that can be keys (all but counter and duration).
    pub(crate) const KEY_NATIVES: [NativeType; 18] = [
        NativeType::Ascii,
        NativeType::Bigint,
        NativeType::Blob,
        NativeType::Boolean,
        NativeType::Date,
        NativeType::Decimal,
        NativeType::Double,
        NativeType::Float,
        NativeType::Inet,
        NativeType::Int,
        NativeType::Smallint,
        NativeType::Text,
        NativeType::Time,
        NativeType::Timestamp,
        NativeType::Timeuuid,
        NativeType::Tinyint,
        NativeType::Uuid,
        NativeType::Varint,
    ];

    fn udt(fields: Vec<CqlType>) -> CqlType {
        CqlType::Udt(UdtType {
            keyspace: "ks".into(),
            name: "address".into(),
            fields: fields
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    (
                        if i == 0 {
                            "Street".into()
                        } else {
                            format!("f{i}")
                        },
                        t,
                    )
                })
                .collect(),
        })
    }

    fn frozen(t: CqlType) -> CqlType {
        CqlType::Frozen(Box::new(t))
    }

    /// Types that can be primary key components, nested up to two levels.
    pub(crate) fn key_type() -> impl Strategy<Value = CqlType> {
        let leaf = proptest::sample::select(KEY_NATIVES.to_vec()).prop_map(CqlType::Native);
        leaf.prop_recursive(2, 12, 3, |inner| {
            prop_oneof![
                inner
                    .clone()
                    .prop_map(|e| frozen(CqlType::List(Box::new(e)))),
                inner
                    .clone()
                    .prop_map(|e| frozen(CqlType::Set(Box::new(e)))),
                (inner.clone(), inner.clone())
                    .prop_map(|(k, v)| frozen(CqlType::Map(Box::new(k), Box::new(v)))),
                vec(inner.clone(), 1..4).prop_map(CqlType::Tuple),
                vec(inner.clone(), 1..4).prop_map(|f| frozen(udt(f))),
                (inner, 1u32..4).prop_map(|(e, n)| CqlType::Vector(Box::new(e), n)),
            ]
        })
    }

    /// Every type, including ones that cannot be keys.
    pub(crate) fn any_type() -> impl Strategy<Value = CqlType> {
        prop_oneof![
            4 => key_type(),
            1 => Just(CqlType::Native(NativeType::Counter)),
            1 => Just(CqlType::Native(NativeType::Duration)),
            1 => key_type().prop_map(|e| CqlType::List(Box::new(e))),
            1 => Just(CqlType::Custom("org.example.Custom".into())),
        ]
    }

    fn special_bytes() -> impl Strategy<Value = u8> {
        prop_oneof![Just(0u8), Just(0xfe), Just(0xff), Just(0x80), any::<u8>()]
    }

    fn integer<T: Arbitrary + Copy + std::fmt::Debug + 'static>(edges: [T; 3]) -> BoxedStrategy<T> {
        prop_oneof![
            1 => proptest::sample::select(edges.to_vec()),
            3 => any::<T>(),
        ]
        .boxed()
    }

    fn big_integer() -> BoxedStrategy<BigInt> {
        prop_oneof![
            (-300i64..300).prop_map(BigInt::from),
            any::<i64>().prop_map(BigInt::from),
            vec(special_bytes(), 1..20).prop_map(|b| BigInt::from_signed_bytes_be(&b)),
        ]
        .boxed()
    }

    fn decimal() -> BoxedStrategy<Value> {
        let scale =
            prop_oneof![4 => -6i32..8, 1 => Just(i32::MAX), 1 => Just(i32::MIN), 1 => any::<i32>()];
        let trailing_zeros = 0u32..3;
        (big_integer(), scale, trailing_zeros)
            .prop_map(|(unscaled, scale, zeros)| {
                let factor = BigInt::from(10u32.pow(zeros));
                let scale = scale.checked_add(zeros as i32).unwrap_or(scale);
                Value::Decimal {
                    unscaled: unscaled * factor,
                    scale,
                }
            })
            .boxed()
    }

    fn double() -> BoxedStrategy<f64> {
        prop_oneof![
            3 => any::<f64>(),
            1 => proptest::sample::select(vec![
                0.0,
                -0.0,
                f64::NAN,
                f64::from_bits(0xfff8_0000_0000_0001),
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN_POSITIVE,
                1.0,
                -1.0,
            ]),
            2 => proptest::num::f64::ANY,
        ]
        .boxed()
    }

    fn float() -> BoxedStrategy<f32> {
        prop_oneof![
            3 => proptest::num::f32::ANY,
            1 => proptest::sample::select(vec![
                0.0f32,
                -0.0,
                f32::NAN,
                f32::from_bits(0xffc0_0001),
                f32::INFINITY,
                f32::NEG_INFINITY,
            ]),
        ]
        .boxed()
    }

    fn uuid(version: Option<u8>) -> BoxedStrategy<[u8; 16]> {
        let versions = match version {
            Some(v) => Just(v).boxed(),
            None => prop_oneof![Just(1u8), Just(4u8), 0u8..16].boxed(),
        };
        (any::<[u8; 16]>(), versions)
            .prop_map(|(mut bytes, version)| {
                bytes[6] = (bytes[6] & 0x0f) | (version << 4);
                bytes
            })
            .boxed()
    }

    fn native_value(t: NativeType) -> BoxedStrategy<Value> {
        match t {
            NativeType::Ascii => vec(prop_oneof![Just(0u8), 0u8..0x80], 0..8)
                .prop_map(|b| Value::Ascii(b.into_iter().map(char::from).collect()))
                .boxed(),
            NativeType::Text => vec(prop_oneof![Just('\0'), Just('a'), any::<char>()], 0..6)
                .prop_map(|c| Value::Text(c.into_iter().collect()))
                .boxed(),
            NativeType::Blob => vec(special_bytes(), 0..8).prop_map(Value::Blob).boxed(),
            NativeType::Bigint => integer([i64::MIN, i64::MAX, 0])
                .prop_map(Value::Bigint)
                .boxed(),
            NativeType::Counter => any::<i64>().prop_map(Value::Counter).boxed(),
            NativeType::Timestamp => integer([i64::MIN, -1, 0])
                .prop_map(Value::Timestamp)
                .boxed(),
            NativeType::Time => prop_oneof![0..NANOS_PER_DAY, any::<i64>()]
                .prop_map(Value::Time)
                .boxed(),
            NativeType::Int => integer([i32::MIN, i32::MAX, 0])
                .prop_map(Value::Int)
                .boxed(),
            NativeType::Date => integer([0, u32::MAX, 1 << 31])
                .prop_map(Value::Date)
                .boxed(),
            NativeType::Smallint => integer([i16::MIN, -1, 0]).prop_map(Value::Smallint).boxed(),
            NativeType::Tinyint => integer([i8::MIN, -1, 0]).prop_map(Value::Tinyint).boxed(),
            NativeType::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
            NativeType::Double => double().prop_map(Value::Double).boxed(),
            NativeType::Float => float().prop_map(Value::Float).boxed(),
            NativeType::Uuid => uuid(None).prop_map(Value::Uuid).boxed(),
            NativeType::Timeuuid => uuid(Some(1)).prop_map(Value::Timeuuid).boxed(),
            NativeType::Inet => prop_oneof![
                any::<[u8; 4]>().prop_map(|b| IpAddr::V4(b.into())),
                any::<[u8; 16]>().prop_map(|b| IpAddr::V6(b.into())),
            ]
            .prop_map(Value::Inet)
            .boxed(),
            NativeType::Varint => big_integer().prop_map(Value::Varint).boxed(),
            NativeType::Decimal => decimal(),
            NativeType::Duration => prop_oneof![
                (0..i32::MAX, 0..i32::MAX, 0..i64::MAX),
                (i32::MIN..=0, i32::MIN..=0, i64::MIN..=0),
                (Just(0), Just(0), any::<i64>()),
            ]
            .prop_map(|(months, days, nanos)| Value::Duration {
                months,
                days,
                nanos,
            })
            .boxed(),
        }
    }

    fn fields(types: Vec<CqlType>) -> BoxedStrategy<Vec<Option<Value>>> {
        let arity = types.len();
        let each: Vec<_> = types
            .iter()
            .map(|t| proptest::option::weighted(0.8, value_of(t)))
            .collect();
        (each, 0..=arity)
            .prop_map(|(mut fields, keep)| {
                fields.truncate(keep.max(1).min(fields.len()));
                fields
            })
            .boxed()
    }

    /// A value of `ty`.
    pub(crate) fn value_of(ty: &CqlType) -> BoxedStrategy<Value> {
        match ty {
            CqlType::Native(t) => native_value(*t),
            CqlType::Frozen(inner) => value_of(inner),
            CqlType::Custom(_) => vec(any::<u8>(), 0..6).prop_map(Value::Custom).boxed(),
            CqlType::List(e) => vec(value_of(e), 0..4).prop_map(Value::List).boxed(),
            CqlType::Set(e) => vec(value_of(e), 0..4).prop_map(Value::Set).boxed(),
            CqlType::Map(k, v) => vec((value_of(k), value_of(v)), 0..3)
                .prop_map(Value::Map)
                .boxed(),
            CqlType::Tuple(types) => fields(types.clone()).prop_map(Value::Tuple).boxed(),
            CqlType::Udt(u) => fields(u.fields.iter().map(|(_, t)| t.clone()).collect())
                .prop_map(Value::Udt)
                .boxed(),
            CqlType::Vector(e, n) => vec(value_of(e), *n as usize)
                .prop_map(Value::Vector)
                .boxed(),
        }
    }

    /// Serialized bytes of `ty`: usually a value, sometimes the empty value.
    pub(crate) fn bytes_of(ty: &CqlType) -> BoxedStrategy<Vec<u8>> {
        prop_oneof![
            9 => value_of(ty).prop_map(|v| v.to_bytes()),
            1 => Just(Vec::new()),
        ]
        .boxed()
    }

    /// A key type with `n` serialized values of it.
    pub(crate) fn key_values(n: usize) -> impl Strategy<Value = (CqlType, Vec<Vec<u8>>)> {
        key_type().prop_flat_map(move |ty| {
            let values = vec(bytes_of(&ty), n);
            (Just(ty), values)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::arbitrary::*;
    use super::*;
    use proptest::prelude::*;

    fn native(t: NativeType) -> CqlType {
        CqlType::Native(t)
    }

    fn parse(text: &str) -> CqlType {
        match CqlType::parse(text, &crate::types::NoUdts) {
            Ok(t) => t,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    fn address() -> CqlType {
        CqlType::Udt(UdtType {
            keyspace: "ks".into(),
            name: "address".into(),
            fields: vec![
                ("street".into(), native(NativeType::Text)),
                ("Zip".into(), native(NativeType::Int)),
            ],
        })
    }

    fn uuid(text: &str) -> [u8; 16] {
        let digits: Vec<u8> = text
            .bytes()
            .filter(|b| *b != b'-')
            .map(|b| (b as char).to_digit(16).unwrap_or(0) as u8)
            .collect();
        std::array::from_fn(|i| digits[2 * i] << 4 | digits[2 * i + 1])
    }

    fn round_trip(ty: &CqlType, value: &Value) -> Result<Value, ValueError> {
        Value::deserialize(ty, &value.to_bytes())
    }

    #[test]
    fn marshal_messages_follow_cassandra() {
        let error = |t, bytes: &[u8]| {
            Value::deserialize(&native(t), bytes)
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(
            error(NativeType::Int, &[0; 3]).as_deref(),
            Some("Expected 4 or 0 byte int (3)")
        );
        assert_eq!(
            error(NativeType::Bigint, &[0; 3]).as_deref(),
            Some("Expected 8 or 0 byte long (3)")
        );
        assert_eq!(
            error(NativeType::Smallint, &[]).as_deref(),
            Some("Expected 2 bytes for a smallint (0)")
        );
        assert_eq!(
            error(NativeType::Ascii, &[0xc3]).as_deref(),
            Some("Invalid byte for ascii: -61")
        );
        assert_eq!(
            error(NativeType::Text, &[0xff]).as_deref(),
            Some("String didn't validate.")
        );
        let v0 = uuid("2a92d750-d8dc-01e6-a2de-cf8ecd4cf053");
        assert_eq!(
            error(NativeType::Timeuuid, &v0).as_deref(),
            Some("Invalid version for TimeUUID type.")
        );
        assert!(validate(&parse("list<int>"), &[0, 0, 0, 1, 0, 0, 0, 9]).is_err());
    }

    #[test]
    fn empty_values() {
        assert!(is_empty_value(&[]));
        for t in [
            NativeType::Int,
            NativeType::Bigint,
            NativeType::Uuid,
            NativeType::Varint,
            NativeType::Decimal,
            NativeType::Inet,
        ] {
            assert_eq!(
                Value::deserialize(&native(t), &[]),
                Err(ValueError::EmptyValue),
                "{t:?}"
            );
            assert_eq!(validate(&native(t), &[]), Ok(()));
        }
        assert_eq!(
            Value::deserialize(&native(NativeType::Text), &[]),
            Ok(Value::Text(String::new()))
        );
        assert_eq!(
            Value::deserialize(&native(NativeType::Blob), &[]),
            Ok(Value::Blob(Vec::new()))
        );
        assert!(validate(&native(NativeType::Date), &[]).is_err());
        // An empty tuple is a tuple of nulls, not an empty value.
        assert_eq!(
            Value::deserialize(&parse("tuple<int, text>"), &[]),
            Ok(Value::Tuple(vec![]))
        );
        // Nested empties are valid, but have no `Value`.
        let list_with_empty_int = [0, 0, 0, 1, 0, 0, 0, 0];
        assert_eq!(validate(&parse("list<int>"), &list_with_empty_int), Ok(()));
        assert!(matches!(
            Value::deserialize(&parse("list<int>"), &list_with_empty_int),
            Err(ValueError::Marshal(_))
        ));
    }

    #[test]
    fn wire_format_of_composites() {
        let list = Value::List(vec![Value::Int(1), Value::Int(2)]);
        assert_eq!(
            list.to_bytes(),
            [0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2]
        );
        let tuple = Value::Tuple(vec![Some(Value::Tinyint(7)), None]);
        assert_eq!(tuple.to_bytes(), [0, 0, 0, 1, 7, 0xff, 0xff, 0xff, 0xff]);
        let floats = Value::Vector(vec![Value::Float(1.0), Value::Float(2.0)]);
        assert_eq!(floats.to_bytes(), [0x3f, 0x80, 0, 0, 0x40, 0, 0, 0]);
        let texts = Value::Vector(vec![Value::Text("ab".into()), Value::Text(String::new())]);
        assert_eq!(texts.to_bytes(), [2, b'a', b'b', 0]);
        assert_eq!(round_trip(&parse("vector<text, 2>"), &texts), Ok(texts));
        let smallints = Value::Vector(vec![Value::Smallint(1)]);
        assert_eq!(
            smallints.to_bytes(),
            [2, 0, 1],
            "smallint is variable-width in vectors"
        );
        let varint = Value::Varint(BigInt::from(-129));
        assert_eq!(varint.to_bytes(), [0xff, 0x7f]);
        let decimal = Value::Decimal {
            unscaled: BigInt::from(255),
            scale: 2,
        };
        assert_eq!(decimal.to_bytes(), [0, 0, 0, 2, 0, 0xff]);
    }

    #[test]
    fn durations_use_zigzag_vints() {
        let d = Value::Duration {
            months: 1,
            days: -0,
            nanos: 2,
        };
        assert_eq!(d.to_bytes(), [2, 0, 4]);
        let big = Value::Duration {
            months: i32::MIN,
            days: i32::MIN,
            nanos: i64::MIN,
        };
        assert_eq!(
            round_trip(&native(NativeType::Duration), &big),
            Ok(big.clone())
        );
        assert_eq!(big.to_bytes().len(), 5 + 5 + 9);
        let mixed = Value::Duration {
            months: 1,
            days: -1,
            nanos: 0,
        }
        .to_bytes();
        assert!(Value::deserialize(&native(NativeType::Duration), &mixed).is_err());
    }

    #[test]
    fn comparator_quirks() {
        let cmp = |t: &str, a: &Value, b: &Value| compare(&parse(t), &a.to_bytes(), &b.to_bytes());
        use Ordering::*;
        assert_eq!(cmp("int", &Value::Int(-1), &Value::Int(1)), Less);
        assert_eq!(
            compare(&parse("int"), &[], &Value::Int(i32::MIN).to_bytes()),
            Less
        );
        assert_eq!(
            cmp("double", &Value::Double(-0.0), &Value::Double(0.0)),
            Less
        );
        assert_eq!(
            cmp(
                "double",
                &Value::Double(f64::NAN),
                &Value::Double(f64::INFINITY)
            ),
            Greater
        );
        assert_eq!(
            cmp("float", &Value::Float(f32::NAN), &Value::Float(-f32::NAN)),
            Equal
        );
        let d = |u: i64, s: i32| Value::Decimal {
            unscaled: BigInt::from(u),
            scale: s,
        };
        assert_eq!(cmp("decimal", &d(10, 1), &d(100, 2)), Equal);
        assert_eq!(cmp("decimal", &d(-1, 0), &d(1, i32::MAX)), Less);
        assert_eq!(cmp("decimal", &d(1, i32::MIN), &d(9, 0)), Greater);
        assert_eq!(compare(&parse("varint"), &[0, 0, 5], &[5]), Equal);
        assert_eq!(compare(&parse("boolean"), &[2], &[1]), Equal);
        // Cassandra orders time and date as unsigned bytes.
        assert_eq!(cmp("time", &Value::Time(-1), &Value::Time(1)), Greater);
        let v1_early = Value::Uuid(uuid("ffffffff-ffff-11e6-a2de-cf8ecd4cf053"));
        let v1_late = Value::Uuid(uuid("00000000-0000-11e7-a2de-cf8ecd4cf053"));
        let v4 = Value::Uuid(uuid("00000000-0000-4000-8000-000000000000"));
        assert_eq!(cmp("uuid", &v1_early, &v1_late), Less);
        assert_eq!(cmp("uuid", &v1_late, &v4), Less);
        let t = |s| Value::Timeuuid(uuid(s));
        assert_eq!(
            cmp(
                "timeuuid",
                &t("ffffffff-0000-11e6-0000-000000000000"),
                &t("00000000-0001-11e6-0000-000000000000")
            ),
            Less
        );
        // The low half compares as signed bytes: 0x80 < 0x7f.
        assert_eq!(
            cmp(
                "timeuuid",
                &t("00000000-0000-1000-8000-000000000000"),
                &t("00000000-0000-1000-7f00-000000000000")
            ),
            Less
        );
        let list = |v: &[i32]| Value::List(v.iter().copied().map(Value::Int).collect());
        assert_eq!(cmp("frozen<list<int>>", &list(&[1]), &list(&[1, 0])), Less);
        assert_eq!(
            cmp("frozen<list<int>>", &list(&[2]), &list(&[1, 5])),
            Greater
        );
        let tuple = |f: Vec<Option<Value>>| Value::Tuple(f);
        assert_eq!(
            cmp(
                "tuple<int, int>",
                &tuple(vec![None]),
                &tuple(vec![Some(Value::Int(i32::MIN))])
            ),
            Less
        );
        assert_eq!(
            cmp(
                "tuple<int, int>",
                &tuple(vec![Some(Value::Int(1)), None]),
                &tuple(vec![Some(Value::Int(1))])
            ),
            Equal
        );
        assert_eq!(
            compare(&parse("tuple<int>"), &[], &[0xff, 0xff, 0xff, 0xff]),
            Equal
        );
    }

    #[test]
    fn cql_literals() {
        let text = |v: Value| v.to_string();
        assert_eq!(text(Value::Text("it's".into())), "'it''s'");
        assert_eq!(text(Value::Blob(vec![0xca, 0xfe])), "0xcafe");
        assert_eq!(
            text(Value::Timestamp(1_296_705_900_000)),
            "'2011-02-03 04:05:00.000000+0000'"
        );
        assert_eq!(
            text(Value::Timestamp(-1)),
            "'1969-12-31 23:59:59.999000+0000'"
        );
        assert_eq!(text(Value::Date((1 << 31) + 15_008)), "'2011-02-03'");
        assert_eq!(
            text(Value::Time(14_700_000_000_001)),
            "'04:05:00.000000001'"
        );
        assert_eq!(
            text(Value::Uuid(uuid("2a92d750-d8dc-11e6-a2de-cf8ecd4cf053"))),
            "2a92d750-d8dc-11e6-a2de-cf8ecd4cf053"
        );
        assert_eq!(
            text(Value::Set(vec![Value::Int(1), Value::Int(2)])),
            "{1, 2}"
        );
        assert_eq!(
            text(Value::List(vec![Value::Int(1), Value::Int(2)])),
            "[1, 2]"
        );
        assert_eq!(
            text(Value::Map(vec![(Value::Text("a".into()), Value::Int(1))])),
            "{'a': 1}"
        );
        assert_eq!(
            text(Value::Tuple(vec![
                Some(Value::Int(1)),
                Some(Value::Text("a".into())),
                None
            ])),
            "(1, 'a', null)"
        );
        let udt = Value::Udt(vec![Some(Value::Text("Main".into()))]);
        assert_eq!(
            udt.to_cql_literal(&address()),
            "{street: 'Main', \"Zip\": null}"
        );
        assert_eq!(
            text(Value::Inet(
                "::1".parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
            )),
            "'0:0:0:0:0:0:0:1'"
        );
        assert_eq!(
            text(Value::Duration {
                months: 14,
                days: 3,
                nanos: 3_723_000_000_123
            }),
            "1y2mo3d1h2m3s123ns"
        );
        assert_eq!(
            text(Value::Duration {
                months: 0,
                days: -2,
                nanos: 0
            }),
            "-2d"
        );
    }

    #[test]
    fn java_number_text() {
        let double = |v: f64| Value::Double(v).to_string();
        assert_eq!(double(1.0), "1.0");
        assert_eq!(double(-0.0), "-0.0");
        assert_eq!(double(0.001), "0.001");
        assert_eq!(double(0.0001), "1.0E-4");
        assert_eq!(double(1234567.0), "1234567.0");
        assert_eq!(double(12345678.9), "1.23456789E7");
        assert_eq!(double(f64::NAN), "NaN");
        assert_eq!(double(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(Value::Float(0.1).to_string(), "0.1");
        assert_eq!(Value::Float(1e10).to_string(), "1.0E10");
        let decimal = |u: i64, s: i32| {
            Value::Decimal {
                unscaled: BigInt::from(u),
                scale: s,
            }
            .to_string()
        };
        assert_eq!(decimal(123, 2), "1.23");
        assert_eq!(decimal(-5, 3), "-0.005");
        assert_eq!(decimal(123, -2), "1.23E+4");
        assert_eq!(decimal(1, 7), "1E-7");
        assert_eq!(decimal(0, 0), "0");
        assert_eq!(decimal(1, i32::MIN).len(), "1E+2147483648".len());
    }

    #[test]
    fn java_prints_two_digits_where_the_shortest_is_one() {
        // JDK 17's texts of the first multiples of the smallest subnormal.
        let doubles: Vec<String> = (1..=12)
            .map(|i| Value::Double(f64::from_bits(i)).to_string())
            .collect();
        assert_eq!(
            doubles.join(" "),
            "4.9E-324 1.0E-323 1.5E-323 2.0E-323 2.5E-323 3.0E-323 3.5E-323 4.0E-323 4.4E-323 4.9E-323 5.4E-323 5.9E-323"
        );
        let floats: Vec<String> = (1..=12)
            .map(|i| Value::Float(f32::from_bits(i)).to_string())
            .collect();
        assert_eq!(
            floats.join(" "),
            "1.4E-45 2.8E-45 4.2E-45 5.6E-45 7.0E-45 8.4E-45 9.8E-45 1.1E-44 1.3E-44 1.4E-44 1.5E-44 1.7E-44"
        );
        assert_eq!(Value::Double(-f64::from_bits(1)).to_string(), "-4.9E-324");
        assert_eq!(Value::Double(f64::from_bits(1000)).to_string(), "4.94E-321");
        // Elsewhere one digit is that digit and a zero.
        assert_eq!(Value::Double(0.3).to_string(), "0.3");
        assert_eq!(Value::Double(5e-5).to_string(), "5.0E-5");
        assert_eq!(Value::Double(4.9e-5).to_string(), "4.9E-5");
    }

    #[test]
    fn json_text() {
        let json = |v: Value, t: &str| v.to_json(&parse(t));
        assert_eq!(json(Value::Text("a\"b\n".into()), "text"), "\"a\\\"b\\n\"");
        assert_eq!(
            json(Value::Timestamp(1_296_705_900_000), "timestamp"),
            "\"2011-02-03 04:05:00.000Z\""
        );
        assert_eq!(json(Value::Blob(vec![0xca, 0xfe]), "blob"), "\"0xcafe\"");
        assert_eq!(json(Value::Double(f64::NAN), "double"), "null");
        assert_eq!(json(Value::Bigint(-3), "bigint"), "-3");
        let map = Value::Map(vec![(Value::Int(1), Value::Text("a".into()))]);
        assert_eq!(json(map, "map<int, text>"), "{\"1\": \"a\"}");
        let keyed_by_list = Value::Map(vec![(
            Value::List(vec![Value::Text("x".into())]),
            Value::Boolean(true),
        )]);
        assert_eq!(
            json(keyed_by_list, "map<frozen<list<text>>, boolean>"),
            "{\"[\\\"x\\\"]\": true}"
        );
        assert_eq!(
            json(Value::Tuple(vec![Some(Value::Int(1))]), "tuple<int, int>"),
            "[1, null]"
        );
        let udt = Value::Udt(vec![Some(Value::Text("Main".into())), Some(Value::Int(7))]);
        assert_eq!(
            udt.to_json(&address()),
            "{\"street\": \"Main\", \"\\\"Zip\\\"\": 7}"
        );
        assert_eq!(
            json(Value::Uuid([0; 16]), "uuid"),
            "\"00000000-0000-0000-0000-000000000000\""
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn serialize_deserialize_round_trip((ty, value) in any_type().prop_flat_map(|t| (Just(t.clone()), value_of(&t)))) {
            let bytes = value.to_bytes();
            prop_assert_eq!(validate(&ty, &bytes), Ok(()));
            match Value::deserialize(&ty, &bytes) {
                Ok(decoded) => prop_assert_eq!(decoded.to_bytes(), bytes),
                // Only the empty value (an empty blob-like custom value aside) may refuse.
                Err(e) => prop_assert!(bytes.is_empty() || matches!(e, ValueError::Marshal(_)), "{e}"),
            }
            // Text forms never panic.
            let _ = (value.to_cql_literal(&ty), value.to_json(&ty), value.to_string());
        }

        #[test]
        fn compare_is_antisymmetric_and_reflexive((ty, values) in key_values(2)) {
            let (a, b) = (&values[0], &values[1]);
            prop_assert_eq!(compare(&ty, a, a), Ordering::Equal);
            prop_assert_eq!(compare(&ty, a, b), compare(&ty, b, a).reverse());
        }

        #[test]
        fn arbitrary_bytes_never_panic(ty in any_type(), a in proptest::collection::vec(any::<u8>(), 0..40), b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = Value::deserialize(&ty, &a);
            let _ = validate(&ty, &a);
            let _ = compare(&ty, &a, &b);
            if let Ok(value) = Value::deserialize(&ty, &a) {
                let _ = (value.to_cql_literal(&ty), value.to_json(&ty));
            }
        }
    }
}
