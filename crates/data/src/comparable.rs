//! Byte-comparable encoding of single key components, following Cassandra's
//! `utils/bytecomparable/ByteComparable.md`: unsigned byte order of the
//! encodings equals [`crate::value::compare`] order of the values.
//!
//! Layout of one component: a marker byte, then the value's body.
//! * `0x40` then the body for a present value (both directions: the marker
//!   is Cassandra's "next component" separator, never inverted);
//! * `0x3F` alone for the empty value ascending, `0x41` descending, so it
//!   sorts first ascending and last descending;
//! * descending inverts every byte of the body.
//!
//! Every encoding is strictly prefix-free (none is a prefix of another), so
//! a clustering key is the plain concatenation of its components and
//! compares correctly with or without anything after it. All markers lie in `0x10..=0xEF`, so a
//! caller may end a prefix with [`TERMINATOR`], [`BOUND_BEFORE`] or
//! [`BOUND_AFTER`] to build slice bounds, exactly as Cassandra does.
//!
//! Inside composite bodies (collections, tuples, UDTs, vectors) each element
//! is itself a component (marker + body), a null tuple field is
//! [`NULL_MARKER`], and variable-length sequences end with [`TERMINATOR`].

use crate::types::{CqlType, NativeType};
use crate::value::{
    normalize_decimal, parse_decimal, reorder_timestamp_bytes, split_collection, split_fields,
    split_vector, trim_trailing_nulls, vector_element_width, write_unsigned_vint, ValueError,
};

/// Precedes every present component.
pub const SEPARATOR: u8 = 0x40;
/// The empty value, ascending: below [`SEPARATOR`].
pub const EMPTY_ASCENDING: u8 = 0x3F;
/// The empty value, descending: above [`SEPARATOR`].
pub const EMPTY_DESCENDING: u8 = 0x41;
/// A null tuple or UDT field: below the empty value and every present value.
pub const NULL_MARKER: u8 = 0x3E;
/// Ends a variable-length sequence; also ends a full key.
pub const TERMINATOR: u8 = 0x38;
/// Ends a bound that sorts before every key with the same prefix.
pub const BOUND_BEFORE: u8 = 0x20;
/// Ends a bound that sorts after every key with the same prefix.
pub const BOUND_AFTER: u8 = 0x60;

/// Limit on zeros added to a decoded decimal to bring its scale into i32
/// range; a real value never needs more than its own digit count.
const DECIMAL_PADDING_DIGITS_MAX: i64 = 1 << 16;

/// Appends the byte-comparable encoding of the serialized `value` of `ty`.
pub fn encode(
    ty: &CqlType,
    value: &[u8],
    descending: bool,
    out: &mut Vec<u8>,
) -> Result<(), ValueError> {
    let start = out.len();
    if value.is_empty() && !is_field_sequence(ty) {
        out.push(if descending {
            EMPTY_DESCENDING
        } else {
            EMPTY_ASCENDING
        });
        return Ok(());
    }
    out.push(SEPARATOR);
    if let Err(error) = encode_body(ty, value, out) {
        out.truncate(start);
        return Err(error);
    }
    if descending {
        out[start + 1..].iter_mut().for_each(|b| *b = !*b);
    }
    Ok(())
}

/// Decodes one component written by [`encode`], returning the serialized
/// value (in canonical form) and advancing `input` past exactly it.
pub fn decode(ty: &CqlType, input: &mut &[u8], descending: bool) -> Result<Vec<u8>, ValueError> {
    let mut reader = Reader {
        bytes: input,
        position: 0,
        mask: 0,
    };
    let empty = if descending {
        EMPTY_DESCENDING
    } else {
        EMPTY_ASCENDING
    };
    let value = match reader.next()? {
        SEPARATOR => {
            reader.mask = if descending { 0xff } else { 0 };
            decode_body(ty, &mut reader)?
        }
        marker if marker == empty => Vec::new(),
        marker => {
            return Err(malformed(&format!(
                "unexpected component marker 0x{marker:02x}"
            )))
        }
    };
    *input = &input[reader.position..];
    Ok(value)
}

/// Whether decoding the encoding of a `ty` value may give other bytes than
/// the value's: decimals (anywhere in the type) are encoded by value, so
/// `1.50` decodes as `1.5` (Cassandra compares them equal but keeps the
/// bytes written).
pub fn may_normalize(ty: &CqlType) -> bool {
    ty.references(NativeType::Decimal)
}

/// The serialized `value` when it is not what decoding its encoding gives
/// back (only possible where [`may_normalize`]): the written form a store
/// keeps beside the key.
pub fn written_form(ty: &CqlType, value: &[u8]) -> Result<Option<Vec<u8>>, ValueError> {
    if !may_normalize(ty) {
        return Ok(None);
    }
    let mut encoded = Vec::with_capacity(value.len() + 4);
    encode(ty, value, false, &mut encoded)?;
    let mut input = encoded.as_slice();
    let decoded = decode(ty, &mut input, false)?;
    Ok((decoded != value).then(|| value.to_vec()))
}

/// Tuples and UDTs have no distinct empty value: zero bytes are a tuple
/// whose fields are all null, equal to any other all-null tuple.
fn is_field_sequence(ty: &CqlType) -> bool {
    matches!(ty.unfrozen(), CqlType::Tuple(_) | CqlType::Udt(_))
}

fn malformed(what: &str) -> ValueError {
    ValueError::Marshal(format!("Malformed byte-comparable key: {what}"))
}

fn wrong_length(ty: &dyn std::fmt::Display, length: usize) -> ValueError {
    ValueError::Marshal(format!("Invalid {ty} value of {length} bytes"))
}

// ---------------------------------------------------------------------------
// Encoding.
// ---------------------------------------------------------------------------

/// A nested component: marker and ascending body (the outermost `encode`
/// inverts the whole body for descending order).
fn encode_nested(ty: &CqlType, value: &[u8], out: &mut Vec<u8>) -> Result<(), ValueError> {
    encode(ty, value, false, out)
}

fn encode_body(ty: &CqlType, value: &[u8], out: &mut Vec<u8>) -> Result<(), ValueError> {
    match ty {
        CqlType::Native(t) => encode_native(*t, value, out),
        CqlType::Frozen(inner) => encode_body(inner, value, out),
        CqlType::Custom(_) => {
            encode_escaped(value, out);
            Ok(())
        }
        CqlType::List(element) | CqlType::Set(element) => {
            for item in split_collection(value, 1, "collection")? {
                encode_nested(element, item, out)?;
            }
            out.push(TERMINATOR);
            Ok(())
        }
        CqlType::Map(key, entry_value) => {
            for pair in split_collection(value, 2, "map")?.chunks(2) {
                encode_nested(key, pair[0], out)?;
                encode_nested(entry_value, pair[1], out)?;
            }
            out.push(TERMINATOR);
            Ok(())
        }
        CqlType::Tuple(types) => encode_fields(types, value, ty, out),
        CqlType::Udt(udt) => {
            let types: Vec<CqlType> = udt.fields.iter().map(|(_, t)| t.clone()).collect();
            encode_fields(&types, value, ty, out)
        }
        CqlType::Vector(element, dimension) => {
            // A fixed element count needs no terminator.
            for item in split_vector(element, *dimension, value)? {
                encode_nested(element, item, out)?;
            }
            Ok(())
        }
    }
}

/// Trailing nulls are dropped: they do not change the order (see `compare`).
fn encode_fields(
    types: &[CqlType],
    value: &[u8],
    ty: &CqlType,
    out: &mut Vec<u8>,
) -> Result<(), ValueError> {
    let fields = trim_trailing_nulls(split_fields(value, types.len(), ty)?);
    for (field, field_type) in fields.into_iter().zip(types) {
        match field {
            None => out.push(NULL_MARKER),
            Some(bytes) => encode_nested(field_type, bytes, out)?,
        }
    }
    out.push(TERMINATOR);
    Ok(())
}

fn encode_native(t: NativeType, value: &[u8], out: &mut Vec<u8>) -> Result<(), ValueError> {
    let fixed = |width: usize| -> Result<&[u8], ValueError> {
        if value.len() == width {
            Ok(value)
        } else {
            Err(wrong_length(&t.name(), value.len()))
        }
    };
    match t {
        NativeType::Counter | NativeType::Duration => {
            return Err(ValueError::NotKeyType(t.name().to_string()))
        }
        NativeType::Bigint | NativeType::Timestamp => encode_signed(fixed(8)?, out),
        NativeType::Int => encode_signed(fixed(4)?, out),
        NativeType::Smallint => encode_signed(fixed(2)?, out),
        NativeType::Tinyint => encode_signed(fixed(1)?, out),
        // Cassandra orders date and time as unsigned bytes.
        NativeType::Date => out.extend_from_slice(fixed(4)?),
        NativeType::Time => out.extend_from_slice(fixed(8)?),
        NativeType::Boolean => out.push(u8::from(fixed(1)?[0] != 0)),
        NativeType::Float => encode_float(fixed(4)?, out),
        NativeType::Double => encode_double(fixed(8)?, out),
        NativeType::Uuid => encode_uuid(fixed(16)?, out),
        NativeType::Timeuuid => encode_timeuuid(fixed(16)?, out)?,
        NativeType::Ascii | NativeType::Text | NativeType::Blob | NativeType::Inet => {
            encode_escaped(value, out)
        }
        NativeType::Varint if value.is_empty() => return Err(wrong_length(&"varint", 0)),
        NativeType::Varint => encode_varint(value, out),
        NativeType::Decimal => encode_decimal(value, out)?,
    }
    Ok(())
}

/// Two's complement with the sign bit flipped sorts as unsigned.
fn encode_signed(bytes: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(bytes);
    out[start] ^= 0x80;
}

fn encode_float(bytes: &[u8], out: &mut Vec<u8>) {
    let mut word = [0u8; 4];
    word.copy_from_slice(bytes);
    let order = crate::value::java_float_order(word) as u32 ^ (1 << 31);
    out.extend_from_slice(&order.to_be_bytes());
}

fn encode_double(bytes: &[u8], out: &mut Vec<u8>) {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    let order = crate::value::java_double_order(word) as u64 ^ (1 << 63);
    out.extend_from_slice(&order.to_be_bytes());
}

fn uuid_halves(bytes: &[u8]) -> (u64, u64) {
    let mut word = [0u8; 16];
    word.copy_from_slice(bytes);
    let value = u128::from_be_bytes(word);
    ((value >> 64) as u64, value as u64)
}

/// Version nibble first; version 1 then reads its timestamp most significant
/// first; others keep their digits in order.
fn encode_uuid(bytes: &[u8], out: &mut Vec<u8>) {
    let (msb, lsb) = uuid_halves(bytes);
    let version = (msb >> 12) & 0xf;
    let swizzled = if version == 1 {
        reorder_timestamp_bytes(msb)
    } else {
        (version << 60) | ((msb >> 4) & 0x0fff_ffff_ffff_f000) | (msb & 0xfff)
    };
    out.extend_from_slice(&swizzled.to_be_bytes());
    out.extend_from_slice(&lsb.to_be_bytes());
}

/// Timestamp first; the low half flips each byte's sign bit because
/// TimeUUIDType compares those bytes as signed.
fn encode_timeuuid(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), ValueError> {
    let (msb, lsb) = uuid_halves(bytes);
    if (msb >> 12) & 0xf != 1 {
        return Err(ValueError::Marshal(
            "Invalid version for TimeUUID type.".into(),
        ));
    }
    out.extend_from_slice(&reorder_timestamp_bytes(msb).to_be_bytes());
    out.extend_from_slice(&(lsb ^ 0x8080_8080_8080_8080).to_be_bytes());
    Ok(())
}

/// Variable-length bytes as ByteComparable.md escapes them: a run of n
/// zeros becomes `00 FE^(n-1) FF` (`FE` last if the run ends the value), and
/// a value not ending in zero gets a `00` terminator. A `00` is thus always
/// followed by `FE`/`FF` unless it ends the value.
///
/// That alone is only *weakly* prefix-free (`FE 00` is a prefix of `FE 00 FE`,
/// the encoding of `FE 00`): Cassandra relies on the next separator to close
/// the value. We close it ourselves with [`TERMINATOR`], so every component
/// is strictly prefix-free and compares correctly in both directions with
/// nothing after it, at the cost of one byte.
fn encode_escaped(value: &[u8], out: &mut Vec<u8>) {
    escape_zeros(value, out);
    out.push(TERMINATOR);
}

fn escape_zeros(value: &[u8], out: &mut Vec<u8>) {
    let mut rest = value;
    while let Some(position) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..position]);
        let run = rest[position..].iter().take_while(|&&b| b == 0).count();
        out.push(0x00);
        out.extend(std::iter::repeat_n(0xfe, run - 1));
        rest = &rest[position + run..];
        out.push(if rest.is_empty() { 0xfe } else { 0xff });
        if rest.is_empty() {
            return;
        }
    }
    out.extend_from_slice(rest);
    out.push(0x00);
}

/// Digits with redundant sign bytes stripped, led by the signed length:
/// `0xFF` (`0x00` if negative) per 128 digits, then `0x80 + (n - 1)`
/// (`0x7F - (n - 1)` if negative) for the n remaining.
fn encode_varint(value: &[u8], out: &mut Vec<u8>) {
    let negative = value.first().is_some_and(|b| b & 0x80 != 0);
    let sign_byte = if negative { 0xff } else { 0x00 };
    let mut digits = value;
    while digits.len() > 1 && digits[0] == sign_byte {
        digits = &digits[1..];
    }
    let mut remaining = digits.len();
    while remaining >= 128 {
        out.push(if negative { 0x00 } else { 0xff });
        remaining -= 128;
    }
    let length_byte = if negative {
        0x80 - remaining as u8
    } else {
        (0x7f + remaining) as u8
    };
    out.push(length_byte);
    out.extend_from_slice(digits);
}

/// Sign and base-100 exponent in a header byte, the exponent's bytes, then
/// base-100 mantissa digits as `0x80 + digit` (the first digit carrying the
/// sign), then `0x00`. Zero is the single byte `0x80`.
fn encode_decimal(value: &[u8], out: &mut Vec<u8>) -> Result<(), ValueError> {
    let (unscaled, scale) =
        parse_decimal(value).ok_or_else(|| wrong_length(&"decimal", value.len()))?;
    let normal = normalize_decimal(&unscaled, scale);
    if normal.digits.is_empty() {
        out.push(0x80);
        return Ok(());
    }
    let (exponent, mantissa) = base_100(normal.exponent, &normal.digits);
    let modulated = if normal.negative { -exponent } else { exponent };
    let exponent_bytes = minimal_twos_complement(modulated);
    let length = exponent_bytes.len() as i16 * modulated.signum() as i16;
    let base: i16 = if normal.negative { 0x00 } else { 0x80 };
    out.push((base + 0x40 + length) as u8);
    out.extend_from_slice(&exponent_bytes);
    out.extend(
        signed_mantissa(&mantissa, normal.negative)
            .into_iter()
            .map(|d| (0x80 + d) as u8),
    );
    out.push(0x00);
    Ok(())
}

/// Rewrites 0.d1d2... x 10^e as 0.m1m2... x 100^exponent (m1 != 0).
fn base_100(decimal_exponent: i64, digits: &[u8]) -> (i64, Vec<u8>) {
    let mut padded = Vec::with_capacity(digits.len() + 2);
    if decimal_exponent.rem_euclid(2) == 1 {
        padded.push(0);
    }
    padded.extend_from_slice(digits);
    if padded.len() % 2 == 1 {
        padded.push(0);
    }
    let exponent = (decimal_exponent + 1).div_euclid(2);
    (
        exponent,
        padded.chunks(2).map(|p| p[0] * 10 + p[1]).collect(),
    )
}

/// Mantissa digits of the signed value: negative numbers take the
/// base-100 complement so that the first digit is in -100..=-1 and the
/// rest in 0..=99, making every later digit add to the value.
fn signed_mantissa(digits: &[u8], negative: bool) -> Vec<i16> {
    let last = digits.len() - 1;
    digits
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let d = i16::from(d);
            match (negative, i == 0, i == last) {
                (false, _, _) => d,
                (true, true, true) => -d,
                (true, true, false) => -d - 1,
                (true, false, true) => 100 - d,
                (true, false, false) => 99 - d,
            }
        })
        .collect()
}

fn minimal_twos_complement(value: i64) -> Vec<u8> {
    if value == 0 {
        return Vec::new();
    }
    let bytes = value.to_be_bytes();
    let mut start = 0;
    while start < 7 {
        let redundant = (bytes[start] == 0x00 && bytes[start + 1] & 0x80 == 0)
            || (bytes[start] == 0xff && bytes[start + 1] & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

// ---------------------------------------------------------------------------
// Decoding.
// ---------------------------------------------------------------------------

/// Reads the input with every byte XORed by `mask` (0xFF inside a
/// descending body), so the decoders below only know the ascending form.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
    mask: u8,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).map(|b| b ^ self.mask)
    }

    fn next(&mut self) -> Result<u8, ValueError> {
        let byte = self.peek().ok_or_else(|| malformed("truncated"))?;
        self.position += 1;
        Ok(byte)
    }

    fn take(&mut self, n: usize) -> Result<Vec<u8>, ValueError> {
        let end = self
            .position
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| malformed("truncated"))?;
        let out = self.bytes[self.position..end]
            .iter()
            .map(|b| b ^ self.mask)
            .collect();
        self.position = end;
        Ok(out)
    }
}

/// A nested component: `Some(bytes)`, or `None` for a null field.
fn decode_nested(ty: &CqlType, reader: &mut Reader<'_>) -> Result<Option<Vec<u8>>, ValueError> {
    match reader.next()? {
        SEPARATOR => decode_body(ty, reader).map(Some),
        EMPTY_ASCENDING => Ok(Some(Vec::new())),
        NULL_MARKER => Ok(None),
        marker => Err(malformed(&format!(
            "unexpected element marker 0x{marker:02x}"
        ))),
    }
}

fn decode_present(ty: &CqlType, reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    decode_nested(ty, reader)?.ok_or_else(|| malformed("null inside a collection or vector"))
}

fn at_terminator(reader: &mut Reader<'_>) -> bool {
    let done = reader.peek() == Some(TERMINATOR);
    if done {
        reader.position += 1;
    }
    done
}

fn decode_body(ty: &CqlType, reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    match ty {
        CqlType::Native(t) => decode_native(*t, reader),
        CqlType::Frozen(inner) => decode_body(inner, reader),
        CqlType::Custom(_) => decode_escaped(reader),
        CqlType::List(element) | CqlType::Set(element) => {
            let mut items = Vec::new();
            while !at_terminator(reader) {
                items.push(decode_present(element, reader)?);
            }
            Ok(write_collection(items.len(), &items))
        }
        CqlType::Map(key, value) => {
            let mut items = Vec::new();
            while !at_terminator(reader) {
                items.push(decode_present(key, reader)?);
                items.push(decode_present(value, reader)?);
            }
            Ok(write_collection(items.len() / 2, &items))
        }
        CqlType::Tuple(types) => decode_fields(types.iter(), reader),
        CqlType::Udt(udt) => decode_fields(udt.fields.iter().map(|(_, t)| t), reader),
        CqlType::Vector(element, dimension) => decode_vector(element, *dimension, reader),
    }
}

fn write_collection(count: usize, items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + items.iter().map(|i| i.len() + 4).sum::<usize>());
    out.extend_from_slice(&(count as i32).to_be_bytes());
    for item in items {
        out.extend_from_slice(&(item.len() as i32).to_be_bytes());
        out.extend_from_slice(item);
    }
    out
}

/// The fields the encoding left out as trailing nulls come back as nulls:
/// Cassandra serializes every field of a tuple or UDT literal, and drivers
/// find map entries by the key's full serialization.
fn decode_fields<'t>(
    mut types: impl Iterator<Item = &'t CqlType>,
    reader: &mut Reader<'_>,
) -> Result<Vec<u8>, ValueError> {
    let mut out = Vec::new();
    while !at_terminator(reader) {
        let field_type = types
            .next()
            .ok_or_else(|| malformed("too many tuple fields"))?;
        match decode_nested(field_type, reader)? {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(field) => {
                out.extend_from_slice(&(field.len() as i32).to_be_bytes());
                out.extend_from_slice(&field);
            }
        }
    }
    for _ in types {
        out.extend_from_slice(&(-1i32).to_be_bytes());
    }
    Ok(out)
}

fn decode_vector(
    element: &CqlType,
    dimension: u32,
    reader: &mut Reader<'_>,
) -> Result<Vec<u8>, ValueError> {
    let fixed = vector_element_width(element);
    let mut out = Vec::new();
    for _ in 0..dimension {
        let item = decode_present(element, reader)?;
        match fixed {
            Some(width) if item.len() != width => {
                return Err(malformed("vector element of the wrong width"))
            }
            Some(_) => {}
            None => write_unsigned_vint(item.len() as u64, &mut out),
        }
        out.extend_from_slice(&item);
    }
    Ok(out)
}

fn decode_native(t: NativeType, reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    match t {
        NativeType::Counter | NativeType::Duration => {
            Err(ValueError::NotKeyType(t.name().to_string()))
        }
        NativeType::Bigint | NativeType::Timestamp => decode_signed(reader, 8),
        NativeType::Int => decode_signed(reader, 4),
        NativeType::Smallint => decode_signed(reader, 2),
        NativeType::Tinyint => decode_signed(reader, 1),
        NativeType::Date => reader.take(4),
        NativeType::Time => reader.take(8),
        NativeType::Boolean => match reader.next()? {
            byte @ (0 | 1) => Ok(vec![byte]),
            _ => Err(malformed("boolean")),
        },
        NativeType::Float => {
            let order = u32::from_be_bytes(take_array(reader)?) ^ (1 << 31);
            Ok(float_from_order(order as i32).to_be_bytes().to_vec())
        }
        NativeType::Double => {
            let order = u64::from_be_bytes(take_array(reader)?) ^ (1 << 63);
            Ok(double_from_order(order as i64).to_be_bytes().to_vec())
        }
        NativeType::Uuid => decode_uuid(reader),
        NativeType::Timeuuid => decode_timeuuid(reader),
        NativeType::Ascii | NativeType::Text | NativeType::Blob | NativeType::Inet => {
            decode_escaped(reader)
        }
        NativeType::Varint => decode_varint(reader),
        NativeType::Decimal => decode_decimal(reader),
    }
}

fn take_array<const N: usize>(reader: &mut Reader<'_>) -> Result<[u8; N], ValueError> {
    let bytes = reader.take(N)?;
    bytes.try_into().map_err(|_| malformed("truncated"))
}

fn decode_signed(reader: &mut Reader<'_>, width: usize) -> Result<Vec<u8>, ValueError> {
    let mut bytes = reader.take(width)?;
    if let Some(first) = bytes.first_mut() {
        *first ^= 0x80;
    }
    Ok(bytes)
}

/// Inverse of `java_float_order` (an involution on non-NaN bit patterns).
fn float_from_order(order: i32) -> f32 {
    f32::from_bits((order ^ (((order >> 31) as u32) >> 1) as i32) as u32)
}

fn double_from_order(order: i64) -> f64 {
    f64::from_bits((order ^ (((order >> 63) as u64) >> 1) as i64) as u64)
}

fn decode_uuid(reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    let swizzled = u64::from_be_bytes(take_array(reader)?);
    let lsb = u64::from_be_bytes(take_array(reader)?);
    let version = swizzled >> 60;
    let msb = if version == 1 {
        unreorder_timestamp_bytes(swizzled)
    } else {
        ((swizzled << 4) & 0xffff_ffff_ffff_0000) | (version << 12) | (swizzled & 0xfff)
    };
    Ok(((u128::from(msb) << 64) | u128::from(lsb))
        .to_be_bytes()
        .to_vec())
}

fn decode_timeuuid(reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    let reordered = u64::from_be_bytes(take_array(reader)?);
    let lsb = u64::from_be_bytes(take_array(reader)?) ^ 0x8080_8080_8080_8080;
    let msb = unreorder_timestamp_bytes(reordered);
    Ok(((u128::from(msb) << 64) | u128::from(lsb))
        .to_be_bytes()
        .to_vec())
}

/// Inverse of `reorder_timestamp_bytes`: back to time_low, time_mid, time_hi.
fn unreorder_timestamp_bytes(reordered: u64) -> u64 {
    (reordered << 32) | ((reordered >> 16) & 0xffff_0000) | (reordered >> 48)
}

fn decode_escaped(reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    let value = unescape_zeros(reader)?;
    match reader.next()? {
        TERMINATOR => Ok(value),
        _ => Err(malformed("variable-length value without its terminator")),
    }
}

fn unescape_zeros(reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    let mut out = Vec::new();
    loop {
        let byte = reader.next()?;
        if byte != 0 {
            out.push(byte);
            continue;
        }
        match reader.peek() {
            Some(0xff) => {
                reader.position += 1;
                out.push(0);
            }
            Some(0xfe) => {
                reader.position += 1;
                out.push(0);
                if !decode_zero_run(reader, &mut out) {
                    return Ok(out);
                }
            }
            _ => return Ok(out),
        }
    }
}

/// After `00 FE`: more `FE`s are more zeros; `FF` is a last zero followed
/// by more bytes (returns true); anything else ends the value (false).
fn decode_zero_run(reader: &mut Reader<'_>, out: &mut Vec<u8>) -> bool {
    loop {
        match reader.peek() {
            Some(0xfe) => {
                reader.position += 1;
                out.push(0);
            }
            Some(0xff) => {
                reader.position += 1;
                out.push(0);
                return true;
            }
            _ => return false,
        }
    }
}

fn decode_varint(reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    let first = reader.next()?;
    let negative = first < 0x80;
    let (long_length_byte, last_byte_for_zero) = if negative { (0x00, 0x80) } else { (0xff, 0x7f) };
    let mut length = 0usize;
    let mut header = first;
    while header == long_length_byte {
        length += 128;
        header = reader.next()?;
    }
    length += match (negative, header) {
        (_, h) if h == last_byte_for_zero && length > 0 => 0,
        (false, h @ 0x80..=0xfe) => usize::from(h - 0x7f),
        (true, h @ 0x01..=0x7f) => usize::from(0x80 - h),
        _ => return Err(malformed("varint length")),
    };
    let digits = reader.take(length)?;
    let needs_sign_byte = match digits.first() {
        Some(&d) => (d & 0x80 != 0) != negative,
        None => return Err(malformed("varint without digits")),
    };
    let mut out = Vec::with_capacity(digits.len() + 1);
    if needs_sign_byte {
        out.push(if negative { 0xff } else { 0x00 });
    }
    out.extend_from_slice(&digits);
    Ok(out)
}

fn decode_decimal(reader: &mut Reader<'_>) -> Result<Vec<u8>, ValueError> {
    let header = reader.next()?;
    if header == 0x80 {
        return Ok(vec![0, 0, 0, 0, 0]);
    }
    let negative = header < 0x80;
    let signed_length = i16::from(header & 0x7f) - 0x40;
    let length = usize::from(signed_length.unsigned_abs());
    if length > 8 {
        return Err(malformed("decimal exponent length"));
    }
    let exponent_bytes = reader.take(length)?;
    let mut modulated = if signed_length < 0 { -1i64 } else { 0 };
    for byte in exponent_bytes {
        modulated = (modulated << 8) | i64::from(byte);
    }
    let exponent = if negative {
        modulated.checked_neg()
    } else {
        Some(modulated)
    };
    let exponent = exponent.ok_or_else(|| malformed("decimal exponent"))?;
    let mantissa = decode_mantissa(reader, negative)?;
    decimal_bytes(mantissa, exponent)
}

/// Reads `0x80 + digit` bytes up to the `0x00` terminator into the signed
/// base-100 integer they spell, and their count.
fn decode_mantissa(
    reader: &mut Reader<'_>,
    negative: bool,
) -> Result<(num_bigint::BigInt, i64), ValueError> {
    let mut mantissa = num_bigint::BigInt::from(0);
    let mut count = 0i64;
    loop {
        let byte = reader.next()?;
        if byte == 0 {
            break;
        }
        let digit = i16::from(byte) - 0x80;
        let valid = match (count, negative) {
            (0, false) => (1..=99).contains(&digit),
            (0, true) => (-100..=-1).contains(&digit),
            _ => (0..=99).contains(&digit),
        };
        if !valid {
            return Err(malformed("decimal mantissa digit"));
        }
        mantissa = mantissa * 100 + digit;
        count += 1;
    }
    if count == 0 {
        return Err(malformed("decimal without mantissa"));
    }
    Ok((mantissa, count))
}

/// value = mantissa x 100^(exponent - count); written with trailing zeros
/// stripped, the canonical form of every equal decimal.
fn decimal_bytes(
    (mut unscaled, count): (num_bigint::BigInt, i64),
    exponent: i64,
) -> Result<Vec<u8>, ValueError> {
    use num_traits::Zero;
    let ten = num_bigint::BigInt::from(10);
    let mut scale = count
        .checked_sub(exponent)
        .and_then(|s| s.checked_mul(2))
        .ok_or_else(|| malformed("decimal scale"))?;
    // Trailing zeros are dropped down to scale 0 only: the encoding keeps the
    // value, not the scale, and `10` reads back better as 10 than as 1E+1.
    while scale > 0 && (&unscaled % &ten).is_zero() {
        unscaled /= &ten;
        scale -= 1;
    }
    if scale < i64::from(i32::MIN) {
        let padding = i64::from(i32::MIN) - scale;
        if padding > DECIMAL_PADDING_DIGITS_MAX {
            return Err(malformed("decimal out of range"));
        }
        unscaled *= num_traits::pow(ten, padding as usize);
        scale = i64::from(i32::MIN);
    }
    let scale = i32::try_from(scale).map_err(|_| malformed("decimal out of range"))?;
    let mut out = scale.to_be_bytes().to_vec();
    out.extend_from_slice(&unscaled.to_signed_bytes_be());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::arbitrary::{any_type, key_values};
    use crate::value::{compare, Value};
    use num_bigint::BigInt;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn parse(text: &str) -> CqlType {
        match CqlType::parse(text, &crate::types::NoUdts) {
            Ok(t) => t,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    fn encoded(ty: &CqlType, value: &[u8], descending: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if let Err(e) = encode(ty, value, descending, &mut out) {
            panic!("encoding {value:02x?} as {ty}: {e}");
        }
        out
    }

    /// The body after the separator, as ByteComparable.md's examples show it.
    fn body(ty: &str, value: Value) -> Vec<u8> {
        let mut out = encoded(&parse(ty), &value.to_bytes(), false);
        assert_eq!(out.remove(0), SEPARATOR);
        out
    }

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text
            .bytes()
            .filter_map(|b| (b as char).to_digit(16).map(|d| d as u8))
            .collect();
        digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect()
    }

    fn decimal(text: &str) -> Value {
        let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let unscaled: BigInt = format!("{integer}{fraction}").parse().unwrap_or_default();
        Value::Decimal {
            unscaled,
            scale: fraction.len() as i32 - exponent,
        }
    }

    #[test]
    fn spec_examples_fixed_width() {
        assert_eq!(body("int", Value::Int(1)), hex("80 00 00 01"));
        assert_eq!(body("smallint", Value::Smallint(-1)), hex("7F FF"));
        assert_eq!(body("tinyint", Value::Tinyint(0)), hex("80"));
        assert_eq!(body("int", Value::Int(i32::MAX)), hex("FF FF FF FF"));
        assert_eq!(
            body("bigint", Value::Bigint(i64::MIN)),
            hex("00 00 00 00 00 00 00 00")
        );
        assert_eq!(body("float", Value::Float(1.0)), hex("BF 80 00 00"));
        assert_eq!(body("float", Value::Float(0.0)), hex("80 00 00 00"));
        assert_eq!(body("float", Value::Float(-0.0)), hex("7F FF FF FF"));
        assert_eq!(body("float", Value::Float(-1.0)), hex("40 7F FF FF"));
        assert_eq!(
            body("double", Value::Double(1.0)),
            hex("BF F0 00 00 00 00 00 00")
        );
        assert_eq!(
            body("double", Value::Double(f64::INFINITY)),
            hex("FF F0 00 00 00 00 00 00")
        );
        assert_eq!(
            body("double", Value::Double(f64::NEG_INFINITY)),
            hex("00 0F FF FF FF FF FF FF")
        );
        assert_eq!(
            body("double", Value::Double(f64::NAN)),
            hex("FF F8 00 00 00 00 00 00")
        );
        // Every NaN is Java's canonical NaN, as Double.compare sees it.
        assert_eq!(
            body("double", Value::Double(-f64::NAN)),
            hex("FF F8 00 00 00 00 00 00")
        );
        let uuid = |s: &str| -> [u8; 16] { hex(s).try_into().unwrap_or([0; 16]) };
        let v4 = uuid("cc520882-9507-44fb-8fc9-b349ecdee658");
        assert_eq!(
            body("uuid", Value::Uuid(v4)),
            hex("4cc52088295074fb8fc9b349ecdee658")
        );
        let v1 = uuid("2a92d750-d8dc-11e6-a2de-cf8ecd4cf053");
        assert_eq!(
            body("uuid", Value::Uuid(v1)),
            hex("11e6d8dc2a92d750a2decf8ecd4cf053")
        );
        assert_eq!(
            body("timeuuid", Value::Timeuuid(v1)),
            hex("11e6d8dc2a92d750 225e4f0e4dcc70d3")
        );
    }

    #[test]
    fn spec_examples_variable_length_bytes() {
        // The spec's bytes, then our closing TERMINATOR (see `encode_escaped`).
        assert_eq!(body("blob", Value::Blob(hex("22 00"))), hex("22 00 FE 38"));
        assert_eq!(
            body("blob", Value::Blob(hex("22 00 00 33"))),
            hex("22 00 FE FF 33 00 38")
        );
        assert_eq!(
            body("blob", Value::Blob(hex("22 00 11"))),
            hex("22 00 FF 11 00 38")
        );
        assert_eq!(
            body("blob", Value::Blob(hex("22 00 00"))),
            hex("22 00 FE FE 38")
        );
        assert_eq!(
            body("inet", Value::Inet([127, 0, 0, 1].into())),
            hex("7F 00 FE FF 01 00 38")
        );
        assert_eq!(body("text", Value::Text("ab".into())), hex("61 62 00 38"));
    }

    #[test]
    fn spec_examples_varint() {
        let varint = |v: BigInt| body("varint", Value::Varint(v));
        assert_eq!(varint(0.into()), hex("80 00"));
        assert_eq!(varint(1.into()), hex("80 01"));
        assert_eq!(varint((-1).into()), hex("7F FF"));
        assert_eq!(varint(255.into()), hex("80 FF"));
        assert_eq!(varint((-256).into()), hex("7F 00"));
        assert_eq!(varint(65536.into()), hex("82 01 00 00"));
        assert_eq!(varint((-(1i64 << 32)).into()), hex("7C 00 00 00 00"));
        let mut big = hex("FF 80 01");
        big.extend([0; 128]);
        assert_eq!(varint(BigInt::from(1) << 1024usize), big);
        let mut negative = hex("00 00 80");
        negative.extend([0; 256]);
        assert_eq!(varint(-(BigInt::from(1) << 2048usize)), negative);
    }

    #[test]
    fn only_decimals_may_lose_their_written_form() {
        let bytes = |text: &str| decimal(text).to_bytes();
        let dec = CqlType::Native(NativeType::Decimal);
        let frozen = |t: CqlType| CqlType::Frozen(Box::new(t));
        let nested = frozen(CqlType::Map(
            Box::new(CqlType::Native(NativeType::Int)),
            Box::new(CqlType::Tuple(vec![
                CqlType::Native(NativeType::Text),
                dec.clone(),
            ])),
        ));
        assert!(may_normalize(&dec) && may_normalize(&nested));
        let varints = frozen(CqlType::List(Box::new(CqlType::Native(NativeType::Varint))));
        assert!(!may_normalize(&varints));
        // Written otherwise than the key decodes: kept.
        for text in ["1.50", "100", "0.000", "1.0"] {
            assert_eq!(
                written_form(&dec, &bytes(text)).expect("encodes"),
                Some(bytes(text)),
                "{text}"
            );
        }
        // Written as the key decodes: nothing to keep.
        for text in ["1.5", "1e2", "0", "-12.34"] {
            assert_eq!(
                written_form(&dec, &bytes(text)).expect("encodes"),
                None,
                "{text}"
            );
        }
        let int = CqlType::Native(NativeType::Int);
        assert_eq!(
            written_form(&int, &7i32.to_be_bytes()).expect("encodes"),
            None
        );
        let set = frozen(CqlType::Set(Box::new(dec.clone())));
        let one_fifty = Value::Set(vec![decimal("1.50")]).to_bytes();
        assert_eq!(
            written_form(&set, &one_fifty).expect("encodes"),
            Some(one_fifty)
        );
        assert!(written_form(&dec, &[1, 2]).is_err());
    }

    #[test]
    fn spec_examples_decimal() {
        for (text, expected) in [
            ("1.1", "C1 01 81 8A 00"),
            ("1", "C1 01 81 00"),
            ("0.01", "C0 81 00"),
            ("0", "80"),
            // ByteComparable.md prints 40 81 00 here, which would sort -0.01
            // above -0.0099; the algorithm it describes gives 7F.
            ("-0.01", "40 7F 00"),
            ("-1", "3F FF 7F 00"),
            ("-1.1", "3F FF 7E DA 00"),
            ("-98.9", "3F FF 1D 8A 00"),
            ("-99", "3F FF 1D 00"),
            ("-99.9", "3F FF 1C 8A 00"),
            ("-8.1e2000", "3E FC 17 77 DA 00"),
            ("-8.1e-2000", "42 03 E7 77 DA 00"),
            ("8.1e-2000", "BE FC 19 88 8A 00"),
            ("8.1e2000", "C2 03 E9 88 8A 00"),
        ] {
            assert_eq!(body("decimal", decimal(text)), hex(expected), "{text}");
        }
        // Equal decimals encode equally.
        assert_eq!(
            body("decimal", decimal("1.10")),
            body("decimal", decimal("1.1"))
        );
    }

    #[test]
    fn empty_and_null_markers() {
        let int = parse("int");
        assert_eq!(encoded(&int, &[], false), [EMPTY_ASCENDING]);
        assert_eq!(encoded(&int, &[], true), [EMPTY_DESCENDING]);
        assert_eq!(encoded(&int, &[0, 0, 0, 1], true), hex("40 7F FF FF FE"));
        let tuple = parse("tuple<int, int>");
        let null_then_one = Value::Tuple(vec![None, Some(Value::Int(1))]).to_bytes();
        assert_eq!(
            encoded(&tuple, &null_then_one, false),
            hex("40 3E 40 80 00 00 01 38")
        );
        // Zero bytes and all-null fields are the same tuple.
        assert_eq!(
            encoded(&tuple, &[], false),
            encoded(&tuple, &[0xff; 8], false)
        );
        let mut input: &[u8] = &[EMPTY_DESCENDING, 0x60];
        assert_eq!(decode(&int, &mut input, true), Ok(Vec::new()));
        assert_eq!(input, [0x60]);
    }

    #[test]
    fn trailing_null_fields_come_back_as_nulls() {
        let tuple = parse("tuple<int, int, int>");
        let value = Value::Tuple(vec![Some(Value::Int(1)), None, None]).to_bytes();
        let bytes = encoded(&tuple, &value, false);
        let mut input = bytes.as_slice();
        assert_eq!(decode(&tuple, &mut input, false), Ok(value));
        assert!(input.is_empty());
    }

    #[test]
    fn non_key_types_are_refused() {
        for ty in ["counter", "duration"] {
            let mut out = vec![1];
            let result = encode(&parse(ty), &[2, 2, 2], false, &mut out);
            assert!(matches!(result, Err(ValueError::NotKeyType(_))));
            assert_eq!(out, [1], "a failed encode leaves the output as it was");
        }
    }

    fn has_float(ty: &CqlType) -> bool {
        match ty {
            CqlType::Native(t) => matches!(
                t,
                NativeType::Float | NativeType::Double | NativeType::Decimal
            ),
            CqlType::Frozen(e) | CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) => {
                has_float(e)
            }
            CqlType::Map(k, v) => has_float(k) || has_float(v),
            CqlType::Tuple(_) | CqlType::Udt(_) | CqlType::Custom(_) => true,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn byte_order_equals_compare((ty, values) in key_values(2)) {
            let (a, b) = (&values[0], &values[1]);
            let expected = compare(&ty, a, b);
            let ascending = encoded(&ty, a, false).cmp(&encoded(&ty, b, false));
            let descending = encoded(&ty, a, true).cmp(&encoded(&ty, b, true));
            prop_assert_eq!(ascending, expected, "{} {:02x?} {:02x?}", ty, a, b);
            prop_assert_eq!(descending, expected.reverse());
        }

        #[test]
        fn components_concatenate_and_round_trip((ty, values) in key_values(2), descending: bool) {
            let mut key = Vec::new();
            for value in &values {
                prop_assert!(encode(&ty, value, descending, &mut key).is_ok());
            }
            key.push(BOUND_AFTER);
            let mut input = key.as_slice();
            for value in &values {
                let decoded = decode(&ty, &mut input, descending);
                prop_assert!(decoded.is_ok(), "{:?}", decoded);
                let decoded = decoded.unwrap_or_default();
                prop_assert_eq!(compare(&ty, &decoded, value), Ordering::Equal);
                // Decoding gives the canonical form: it encodes identically.
                prop_assert_eq!(encoded(&ty, &decoded, descending), encoded(&ty, value, descending));
                if !has_float(&ty) {
                    prop_assert_eq!(&decoded, value);
                }
            }
            prop_assert_eq!(input, &[BOUND_AFTER][..]);
        }

        #[test]
        fn encodings_are_prefix_free((ty, values) in key_values(2)) {
            let (a, b) = (encoded(&ty, &values[0], false), encoded(&ty, &values[1], false));
            if a != b {
                prop_assert!(!b.starts_with(&a) && !a.starts_with(&b));
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(ty in any_type(), bytes in proptest::collection::vec(any::<u8>(), 0..48), descending: bool) {
            let mut input = bytes.as_slice();
            if decode(&ty, &mut input, descending).is_ok() {
                prop_assert!(input.len() < bytes.len());
            }
            let mut out = Vec::new();
            let _ = encode(&ty, &bytes, descending, &mut out);
        }

        #[test]
        fn decoded_arbitrary_bytes_are_valid_values(ty in any_type(), bytes in proptest::collection::vec(any::<u8>(), 0..48)) {
            let mut input = bytes.as_slice();
            if let Ok(value) = decode(&ty, &mut input, false) {
                let mut out = Vec::new();
                // Whatever decodes must encode again without panicking.
                let _ = encode(&ty, &value, false, &mut out);
            }
        }
    }
}
