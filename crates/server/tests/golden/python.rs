//! Cells as the Python driver decodes them (3.30, its Cython deserializers)
//! and Python's ordering of those objects, which the driver's `SortedSet`
//! uses for sets: the renderer works on these, so its output is the one
//! tests/golden/runner.py prints.

use std::cmp::Ordering;

use num_bigint::BigInt;
use rocksandra_data::types::CqlType;
use rocksandra_data::value::{Value, ValueError};

/// A decoded cell: the Python object the driver hands to the runner.
#[derive(Debug, Clone, PartialEq)]
pub enum Py {
    None,
    Bool(bool),
    Int(BigInt),
    Float(f64),
    /// `Decimal('<unscaled>e<-scale>')`.
    Decimal {
        unscaled: BigInt,
        scale: i32,
    },
    Str(String),
    Bytes(Vec<u8>),
    Uuid([u8; 16]),
    /// A naive UTC datetime, microseconds since 1970 (within years 1-9999).
    Datetime(i64),
    /// `util.Date`: days since 1970.
    Date(i64),
    /// `util.Time`: nanoseconds since midnight.
    Time(i64),
    Duration {
        months: i32,
        days: i32,
        nanos: i64,
    },
    List(Vec<Py>),
    /// `util.SortedSet`, in the order its insertions gave.
    SortedSet(Vec<Py>),
    /// `OrderedMapSerializedKey`: server order.
    Map(Vec<(Py, Py)>),
    Tuple(Vec<Py>),
    /// A UDT's namedtuple: field names (renamed as the driver renames them).
    NamedTuple(Vec<String>, Vec<Py>),
}

/// Decodes a cell of `ty`; an error is what the driver would raise.
pub fn decode(ty: &CqlType, bytes: &[u8]) -> Result<Py, String> {
    // A type the driver does not know (a custom class) reads zero bytes as
    // None too.
    if bytes.is_empty() && matches!(ty, CqlType::Custom(_)) {
        return Ok(Py::None);
    }
    match Value::deserialize(ty, bytes) {
        Ok(value) => from_value(ty, value),
        // The driver reads zero bytes of a non-string type as None.
        Err(ValueError::EmptyValue) => Ok(Py::None),
        Err(e) => Err(e.to_string()),
    }
}

fn from_value(ty: &CqlType, value: Value) -> Result<Py, String> {
    let ty = ty.unfrozen();
    Ok(match value {
        Value::Ascii(s) | Value::Text(s) => Py::Str(s),
        Value::Bigint(n) | Value::Counter(n) => Py::Int(n.into()),
        Value::Int(n) => Py::Int(n.into()),
        Value::Smallint(n) => Py::Int(n.into()),
        Value::Tinyint(n) => Py::Int(n.into()),
        Value::Varint(n) => Py::Int(n),
        Value::Blob(b) | Value::Custom(b) => Py::Bytes(b),
        Value::Boolean(b) => Py::Bool(b),
        Value::Double(f) => Py::Float(f),
        Value::Float(f) => Py::Float(f64::from(f)),
        Value::Decimal { unscaled, scale } => Py::Decimal { unscaled, scale },
        Value::Uuid(u) | Value::Timeuuid(u) => Py::Uuid(u),
        Value::Timestamp(ms) => Py::Datetime(datetime_micros(ms)?),
        Value::Date(d) => Py::Date(i64::from(d) - (1i64 << 31)),
        Value::Time(nanos) => time(nanos)?,
        Value::Duration {
            months,
            days,
            nanos,
        } => Py::Duration {
            months,
            days,
            nanos,
        },
        Value::Inet(ip) => Py::Str(inet_ntop(ip)),
        Value::List(items) | Value::Vector(items) => Py::List(elements(ty, items)?),
        Value::Set(items) => Py::SortedSet(sorted_set(elements(ty, items)?)),
        Value::Map(entries) => map(ty, entries)?,
        Value::Tuple(fields) => Py::Tuple(fields_of(tuple_types(ty), fields)?),
        Value::Udt(fields) => udt(ty, fields)?,
    })
}

fn element_type(ty: &CqlType) -> Result<&CqlType, String> {
    match ty {
        CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) => Ok(e),
        other => Err(format!("no element type in {other}")),
    }
}

fn elements(ty: &CqlType, items: Vec<Value>) -> Result<Vec<Py>, String> {
    let element = element_type(ty)?;
    items.into_iter().map(|v| from_value(element, v)).collect()
}

fn map(ty: &CqlType, entries: Vec<(Value, Value)>) -> Result<Py, String> {
    let CqlType::Map(key, value) = ty else {
        return Err(format!("a map value for {ty}"));
    };
    let pairs = entries
        .into_iter()
        .map(|(k, v)| Ok((from_value(key, k)?, from_value(value, v)?)))
        .collect::<Result<_, String>>()?;
    Ok(Py::Map(pairs))
}

fn tuple_types(ty: &CqlType) -> Vec<&CqlType> {
    match ty {
        CqlType::Tuple(types) => types.iter().collect(),
        CqlType::Udt(udt) => udt.fields.iter().map(|(_, t)| t).collect(),
        _ => Vec::new(),
    }
}

/// Fields, with the trailing ones the bytes left out as None.
fn fields_of(types: Vec<&CqlType>, fields: Vec<Option<Value>>) -> Result<Vec<Py>, String> {
    let mut out = Vec::with_capacity(types.len());
    let mut fields = fields.into_iter();
    for t in types {
        out.push(match fields.next().flatten() {
            Some(v) => from_value(t, v)?,
            None => Py::None,
        });
    }
    Ok(out)
}

fn udt(ty: &CqlType, fields: Vec<Option<Value>>) -> Result<Py, String> {
    let CqlType::Udt(udt) = ty else {
        return Err(format!("a UDT value for {ty}"));
    };
    let values = fields_of(tuple_types(ty), fields)?;
    let names: Vec<&str> = udt.fields.iter().map(|(n, _)| n.as_str()).collect();
    Ok(match namedtuple_fields(&udt.name, &names) {
        Some(fields) => Py::NamedTuple(fields, values),
        None => Py::Tuple(values),
    })
}

/// The driver's `_make_udt_tuple_type`: a namedtuple of the field names, or
/// of positional names (`field_N_`) for the invalid ones, or a plain tuple
/// when the type's own name is not a Python identifier.
fn namedtuple_fields(type_name: &str, names: &[&str]) -> Option<Vec<String>> {
    if !is_identifier(type_name) {
        return None;
    }
    let valid = |i: usize, name: &str| {
        is_identifier(name) && !name.starts_with('_') && !names[..i].contains(&name)
    };
    if names.iter().enumerate().all(|(i, n)| valid(i, n)) {
        return Some(names.iter().map(|n| n.to_string()).collect());
    }
    let renamed: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let alnum = name.chars().all(|c| c.is_alphanumeric() || c == '_');
            let digit_first = name.starts_with(|c: char| c.is_numeric());
            let bad = !alnum
                || is_keyword(name)
                || name.is_empty()
                || digit_first
                || name.starts_with('_');
            if bad {
                format!("field_{i}_")
            } else {
                name.to_string()
            }
        })
        .collect();
    let unique = renamed
        .iter()
        .enumerate()
        .all(|(i, n)| !renamed[..i].contains(n));
    unique.then_some(renamed)
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_');
    first_ok && chars.all(|c| c.is_alphanumeric() || c == '_') && !is_keyword(name)
}

fn is_keyword(name: &str) -> bool {
    const KEYWORDS: [&str; 35] = [
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    KEYWORDS.contains(&name)
}

/// `util.Time(nanos)`: the driver refuses values outside one day.
fn time(nanos: i64) -> Result<Py, String> {
    const DAY_NANOS: i64 = 86_400 * 1_000_000_000;
    if (0..DAY_NANOS).contains(&nanos) {
        Ok(Py::Time(nanos))
    } else {
        Err("Time value must be between 0 and 86399999999999".into())
    }
}

/// Microseconds of `epoch + timedelta(seconds=ms / 1000.0)`, with
/// timedelta's own rounding of a float (so far-off milliseconds drift as
/// they do in the driver).
fn datetime_micros(ms: i64) -> Result<i64, String> {
    const MIN_MICROS: i128 = -62_135_596_800_000_000;
    const MAX_MICROS: i128 = 253_402_300_799_999_999;
    let seconds = ms as f64 / 1000.0;
    let whole_seconds = seconds.trunc();
    let micros_float = (seconds - whole_seconds) * 1e6;
    let whole_micros = micros_float.trunc();
    let leftover = micros_float - whole_micros;
    let mut total = whole_seconds as i128 * 1_000_000 + whole_micros as i128;
    let mut rounded = leftover.round();
    if (rounded - leftover).abs() == 0.5 {
        let odd = (total & 1) as f64;
        rounded = 2.0 * ((leftover + odd) * 0.5).round() - odd;
    }
    total += rounded as i128;
    if (MIN_MICROS..=MAX_MICROS).contains(&total) {
        Ok(total as i64)
    } else {
        Err("date value out of range".into())
    }
}

/// glibc's `inet_ntop`, which the driver's inet decoding calls.
fn inet_ntop(ip: std::net::IpAddr) -> String {
    let v6 = match ip {
        std::net::IpAddr::V4(v4) => return v4.to_string(),
        std::net::IpAddr::V6(v6) => v6,
    };
    let words = v6.segments();
    let (base, len) = longest_zero_run(&words);
    let octets = v6.octets();
    let dotted = || {
        format!(
            "{}.{}.{}.{}",
            octets[12], octets[13], octets[14], octets[15]
        )
    };
    if base == Some(0) && (len == 6 || (len == 5 && words[5] == 0xffff)) {
        let mapped = if len == 5 { "ffff:" } else { "" };
        return format!("::{mapped}{}", dotted());
    }
    let mut out = String::new();
    let mut i = 0;
    while i < 8 {
        if base == Some(i) {
            out.push_str(if i == 0 { "::" } else { ":" });
            i += len;
            continue;
        }
        out.push_str(&format!("{:x}", words[i]));
        if i < 7 {
            out.push(':');
        }
        i += 1;
    }
    out
}

/// The first longest run of at least two zero words: (start, length).
fn longest_zero_run(words: &[u16; 8]) -> (Option<usize>, usize) {
    let (mut best, mut best_len) = (None, 0);
    let mut i = 0;
    while i < 8 {
        let run = words[i..].iter().take_while(|w| **w == 0).count();
        if run >= 2 && run > best_len {
            best = Some(i);
            best_len = run;
        }
        i += run.max(1);
    }
    (best, best_len)
}

// ---------------------------------------------------------------------------
// Python's comparisons, for SortedSet.
// ---------------------------------------------------------------------------

/// `<` or `>=`: the two comparisons SortedSet's insertion uses.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Lt,
    Ge,
}

/// `a == b` as Python answers it for these objects.
pub fn py_eq(a: &Py, b: &Py) -> bool {
    match (a, b) {
        (Py::Int(x), Py::Float(y)) | (Py::Float(y), Py::Int(x)) => int_to_f64(x) == *y,
        (Py::Int(_) | Py::Float(_), Py::Bool(_)) | (Py::Bool(_), Py::Int(_) | Py::Float(_)) => {
            numeric(a) == numeric(b)
        }
        (Py::Decimal { .. }, Py::Decimal { .. }) => decimal_cmp(a, b) == Some(Ordering::Equal),
        (Py::List(x), Py::List(y)) | (Py::SortedSet(x), Py::SortedSet(y)) => seq_eq(x, y),
        (Py::Tuple(x) | Py::NamedTuple(_, x), Py::Tuple(y) | Py::NamedTuple(_, y)) => seq_eq(x, y),
        (Py::Map(x), Py::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| py_eq(k1, k2) && py_eq(v1, v2))
        }
        _ => a == b,
    }
}

fn seq_eq(x: &[Py], y: &[Py]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| py_eq(a, b))
}

fn int_to_f64(n: &BigInt) -> f64 {
    n.to_string().parse().unwrap_or(f64::NAN)
}

fn numeric(v: &Py) -> Option<f64> {
    match v {
        Py::Bool(b) => Some(f64::from(u8::from(*b))),
        Py::Int(n) => Some(int_to_f64(n)),
        Py::Float(f) => Some(*f),
        _ => None,
    }
}

/// Python's `a < b` / `a >= b`; `None` is a TypeError.
fn py_compare(a: &Py, b: &Py, op: Op) -> Option<bool> {
    let ordering = match (a, b) {
        (Py::List(x), Py::List(y)) => return seq_compare(x, y, op),
        (Py::Tuple(x) | Py::NamedTuple(_, x), Py::Tuple(y) | Py::NamedTuple(_, y)) => {
            return seq_compare(x, y, op)
        }
        (Py::SortedSet(x), Py::SortedSet(y)) => return Some(set_compare(x, y, op)),
        (Py::Int(x), Py::Int(y)) => Some(x.cmp(y)),
        (Py::Str(x), Py::Str(y)) => Some(x.cmp(y)),
        (Py::Bytes(x), Py::Bytes(y)) => Some(x.cmp(y)),
        (Py::Uuid(x), Py::Uuid(y)) => Some(x.cmp(y)),
        (Py::Datetime(x), Py::Datetime(y))
        | (Py::Date(x), Py::Date(y))
        | (Py::Time(x), Py::Time(y)) => Some(x.cmp(y)),
        (Py::Decimal { .. }, Py::Decimal { .. }) => decimal_cmp(a, b),
        _ => {
            let (x, y) = (numeric(a)?, numeric(b)?);
            return Some(match op {
                Op::Lt => x < y,
                Op::Ge => x >= y,
            });
        }
    };
    let ordering = ordering?;
    Some(match op {
        Op::Lt => ordering == Ordering::Less,
        Op::Ge => ordering != Ordering::Less,
    })
}

/// Sequences compare at their first unequal item, else by length.
fn seq_compare(x: &[Py], y: &[Py], op: Op) -> Option<bool> {
    match x.iter().zip(y).find(|(a, b)| !py_eq(a, b)) {
        Some((a, b)) => py_compare(a, b, op),
        None => Some(match op {
            Op::Lt => x.len() < y.len(),
            Op::Ge => x.len() >= y.len(),
        }),
    }
}

/// SortedSet's `<` is a strict subset, `>=` a superset.
fn set_compare(x: &[Py], y: &[Py], op: Op) -> bool {
    let contains = |set: &[Py], item: &Py| set.iter().any(|e| py_eq(e, item));
    match op {
        Op::Lt => y.len() > x.len() && x.iter().all(|i| contains(y, i)),
        Op::Ge => y.iter().all(|i| contains(x, i)),
    }
}

fn decimal_cmp(a: &Py, b: &Py) -> Option<Ordering> {
    let (
        Py::Decimal {
            unscaled: u1,
            scale: s1,
        },
        Py::Decimal {
            unscaled: u2,
            scale: s2,
        },
    ) = (a, b)
    else {
        return None;
    };
    let scale = (*s1).max(*s2);
    let widen = |u: &BigInt, s: i32| u * BigInt::from(10).pow((scale - s).unsigned_abs());
    Some(widen(u1, *s1).cmp(&widen(u2, *s2)))
}

/// The driver's SortedSet built by adding `items` in order.
fn sorted_set(items: Vec<Py>) -> Vec<Py> {
    let mut set: Vec<Py> = Vec::with_capacity(items.len());
    for item in items {
        let i = find_insertion(&set, &item);
        if i < set.len() {
            if !py_eq(&set[i], &item) {
                set.insert(i, item);
            }
        } else {
            set.push(item);
        }
    }
    set
}

/// SortedSet._find_insertion: bisect_left, or a scan when some items
/// cannot be compared.
fn find_insertion(items: &[Py], x: &Py) -> usize {
    let (mut lo, mut hi) = (0, items.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        match py_compare(&items[mid], x, Op::Lt) {
            Some(true) => lo = mid + 1,
            Some(false) => hi = mid,
            None => return scan_insertion(items, x),
        }
    }
    lo
}

fn scan_insertion(items: &[Py], x: &Py) -> usize {
    let mut compared_one = false;
    let mut lo = 0;
    while lo < items.len() {
        if py_eq(&items[lo], x) {
            break;
        }
        match py_compare(&items[lo], x, Op::Ge) {
            Some(true) => break,
            Some(false) => compared_one = true,
            None if compared_one => break,
            None => {}
        }
        lo += 1;
    }
    lo
}
