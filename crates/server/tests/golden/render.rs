//! The canonical text of results, exactly as tests/golden/runner.py renders
//! them: column types, values (from the driver's Python objects), errors.

use num_bigint::{BigInt, Sign};
use rocksandra_data::types::CqlType;
use rocksandra_wire::ErrorResponse;

use super::case::{BindValues, PyLiteral};
use super::python::Py;

/// The CQL text of a result column's type, as the driver names it.
pub fn render_type(ty: &CqlType) -> String {
    match ty {
        CqlType::Native(n) => n.name().to_string(),
        CqlType::Vector(e, n) => format!("vector<{}, {n}>", render_type(e)),
        CqlType::Udt(udt) => format!("{}.{}", udt.keyspace, udt.name),
        CqlType::Tuple(items) => format!("tuple<{}>", join(items.iter().map(render_type))),
        CqlType::List(e) => format!("list<{}>", render_type(e)),
        CqlType::Set(e) => format!("set<{}>", render_type(e)),
        CqlType::Map(k, v) => format!("map<{}, {}>", render_type(k), render_type(v)),
        CqlType::Frozen(inner) => render_type(inner),
        CqlType::Custom(class) => format!("'{class}'"),
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// One value, as `render_value` prints the driver's object.
pub fn render_value(v: &Py) -> String {
    match v {
        Py::None => "null".into(),
        Py::Bool(b) => b.to_string(),
        Py::Int(n) => n.to_string(),
        Py::Float(f) => render_float(*f),
        Py::Decimal { unscaled, scale } => render_decimal(unscaled, *scale),
        Py::Str(s) => render_text(s),
        Py::Bytes(b) => format!("0x{}", hex(b)),
        Py::Uuid(u) => rocksandra_data::uuid::to_text(u),
        Py::Datetime(micros) => render_datetime(*micros),
        Py::Date(days) => render_date(*days),
        Py::Time(nanos) => rocksandra_data::value::format_time(*nanos),
        Py::Duration {
            months,
            days,
            nanos,
        } => render_duration(*months, *days, *nanos),
        Py::List(items) => format!("[{}]", join(items.iter().map(render_value))),
        Py::SortedSet(items) => format!("{{{}}}", join(items.iter().map(render_value))),
        Py::Map(entries) => format!(
            "{{{}}}",
            join(
                entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", render_value(k), render_value(v)))
            )
        ),
        Py::Tuple(items) => format!("({})", join(items.iter().map(render_value))),
        Py::NamedTuple(names, items) => format!(
            "{{{}}}",
            join(
                names
                    .iter()
                    .zip(items)
                    .map(|(n, v)| format!("{n}: {}", render_value(v)))
            )
        ),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Python's `repr(float)`: the shortest digits that read back, in fixed
/// notation for exponents -4..16, else `1e+16`-style.
pub fn render_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // The shortest digits that read back, rounded half-even on a tie as
    // Python's dtoa does (the shortest form alone may round half up).
    let shortest = format!("{:e}", f.abs());
    let (mantissa, _) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let precision = mantissa.chars().filter(char::is_ascii_digit).count() - 1;
    let sci = format!("{:.precision$e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = match digits.trim_end_matches('0') {
        "" => "0".to_string(),
        trimmed => trimmed.to_string(),
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let point = exponent + 1;
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let body = if !(-4 < point && point <= 16) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{first}{fraction}e{exp_sign}{:02}", exponent.abs())
    } else if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, fraction) = digits.split_at(point as usize);
        format!("{int}.{fraction}")
    };
    format!("{sign}{body}")
}

/// `str(Decimal('<unscaled>e<-scale>'))`: Python's to-scientific-string.
pub fn render_decimal(unscaled: &BigInt, scale: i32) -> String {
    let sign = if unscaled.sign() == Sign::Minus {
        "-"
    } else {
        ""
    };
    let digits = unscaled.magnitude().to_string();
    let exponent = -i64::from(scale);
    let left_digits = exponent + digits.len() as i64;
    let dot = if exponent <= 0 && left_digits > -6 {
        left_digits
    } else {
        1
    };
    let (int_part, fraction) = if dot <= 0 {
        (
            "0".to_string(),
            format!(".{}{digits}", "0".repeat((-dot) as usize)),
        )
    } else if dot as usize >= digits.len() {
        let zeros = "0".repeat(dot as usize - digits.len());
        (format!("{digits}{zeros}"), String::new())
    } else {
        let (int, fraction) = digits.split_at(dot as usize);
        (int.to_string(), format!(".{fraction}"))
    };
    let exp = if left_digits == dot {
        String::new()
    } else {
        format!("E{:+}", left_digits - dot)
    };
    format!("{sign}{int_part}{fraction}{exp}")
}

/// `'text'`: quotes doubled, backslashes doubled, unprintable characters as
/// Python's repr escapes them.
pub fn render_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for ch in s.chars() {
        match ch {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c if is_printable(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('\'');
    out
}

/// Python's `str.isprintable` for the categories it rejects that come up:
/// controls (Cc), separators other than space (Zs, Zl, Zp), the common
/// format characters (Cf), private use (Co) and non-characters.
fn is_printable(c: char) -> bool {
    let code = c as u32;
    let control = code < 0x20 || (0x7f..0xa0).contains(&code);
    let separator = matches!(
        code,
        0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x3000
    );
    let format = matches!(
        code,
        0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e | 0x200b..=0x200f
            | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff | 0xfff9..=0xfffb
            | 0xe0001 | 0xe0020..=0xe007f
    );
    let private = (0xe000..=0xf8ff).contains(&code) || code >= 0xf0000;
    let noncharacter = (0xfdd0..=0xfdef).contains(&code) || code & 0xfffe == 0xfffe;
    !(control || separator || format || private || noncharacter)
}

/// `strftime("%Y-%m-%dT%H:%M:%S.") + milliseconds + "Z"`.
fn render_datetime(micros: i64) -> String {
    let seconds = micros.div_euclid(1_000_000);
    let millis = micros.rem_euclid(1_000_000) / 1000;
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// `str(util.Date)`: the day, or the day count outside datetime's years.
fn render_date(days: i64) -> String {
    const FIRST_DAY: i64 = -719_162; // 0001-01-01
    const LAST_DAY: i64 = 2_932_896; // 9999-12-31
    if !(FIRST_DAY..=LAST_DAY).contains(&days) {
        return days.to_string();
    }
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Proleptic Gregorian (year, month, day) of a day count from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    rocksandra_data::value::civil_from_days(days)
}

/// Like Cassandra's `Duration.toString()`: `[-]NyNmoNdNhNmNsNmsNusNns`.
pub fn render_duration(months: i32, days: i32, nanos: i64) -> String {
    let negative = months < 0 || days < 0 || nanos < 0;
    let (months, days) = (i64::from(months).abs(), i64::from(days).abs());
    let mut nanos = i128::from(nanos).abs();
    let mut out = String::new();
    for (amount, unit) in [(months / 12, "y"), (months % 12, "mo"), (days, "d")] {
        if amount != 0 {
            out.push_str(&format!("{amount}{unit}"));
        }
    }
    const UNITS: [(i128, &str); 6] = [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (size, unit) in UNITS {
        if nanos >= size {
            out.push_str(&format!("{}{unit}", nanos / size));
            nanos %= size;
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    if negative {
        out.insert(0, '-');
    }
    out
}

/// Protocol error codes (native_protocol_v4.spec section 9) and their names.
const ERROR_NAMES: [(i32, &str); 20] = [
    (0x0000, "ServerError"),
    (0x000A, "ProtocolError"),
    (0x0100, "BadCredentials"),
    (0x1000, "Unavailable"),
    (0x1001, "Overloaded"),
    (0x1002, "IsBootstrapping"),
    (0x1003, "TruncateError"),
    (0x1100, "WriteTimeout"),
    (0x1200, "ReadTimeout"),
    (0x1300, "ReadFailure"),
    (0x1400, "FunctionFailure"),
    (0x1500, "WriteFailure"),
    (0x1600, "CDCWriteFailure"),
    (0x1700, "CASWriteUnknown"),
    (0x2000, "SyntaxError"),
    (0x2100, "Unauthorized"),
    (0x2200, "Invalid"),
    (0x2300, "ConfigError"),
    (0x2400, "AlreadyExists"),
    (0x2500, "Unprepared"),
];

/// `ERROR <Name>/0x<code> <message>`.
pub fn render_error(error: &ErrorResponse) -> String {
    let code = error.kind.code();
    let name = ERROR_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("ErrorMessage", |(_, n)| n);
    format!("ERROR {name}/0x{code:04x} {}", error.message)
}

/// A failure on the client's side (a cell the driver cannot decode).
pub fn render_client_error(kind: &str, message: &str) -> String {
    format!("ERROR client:{kind} {}", message.replace('\n', " "))
}

/// A bind marker's values, for the echo's `  -- bind ...` line.
pub fn render_bind(values: &BindValues) -> String {
    match values {
        BindValues::Positional(values) => join(values.iter().map(render_literal)),
        BindValues::Named(values) => format!(
            "{{{}}}",
            join(
                values
                    .iter()
                    .map(|(n, v)| format!("{n}: {}", render_literal(v)))
            )
        ),
    }
}

/// `render_value` of a Python literal (`UNSET` for an unset value).
fn render_literal(v: &PyLiteral) -> String {
    match v {
        PyLiteral::Unset => "UNSET".into(),
        PyLiteral::None => "null".into(),
        PyLiteral::Bool(b) => b.to_string(),
        PyLiteral::Int(n) => n.to_string(),
        PyLiteral::Float(f) => render_float(*f),
        PyLiteral::Str(s) => render_text(s),
        PyLiteral::Bytes(b) => format!("0x{}", hex(b)),
        PyLiteral::List(items) => format!("[{}]", join(items.iter().map(render_literal))),
        PyLiteral::Tuple(items) => format!("({})", join(items.iter().map(render_literal))),
        PyLiteral::Set(items) => {
            let mut sorted = items.clone();
            sorted.sort_by(literal_order);
            format!("{{{}}}", join(sorted.iter().map(render_literal)))
        }
        PyLiteral::Dict(entries) => format!(
            "{{{}}}",
            join(entries.iter().map(|(k, v)| format!(
                "{}: {}",
                render_literal(k),
                render_literal(v)
            )))
        ),
    }
}

/// `sorted()` of a set literal's (numbers or strings) items.
fn literal_order(a: &PyLiteral, b: &PyLiteral) -> std::cmp::Ordering {
    match (a, b) {
        (PyLiteral::Int(x), PyLiteral::Int(y)) => x.cmp(y),
        (PyLiteral::Float(x), PyLiteral::Float(y)) => x.total_cmp(y),
        (PyLiteral::Int(x), PyLiteral::Float(y)) => (*x as f64).total_cmp(y),
        (PyLiteral::Float(x), PyLiteral::Int(y)) => x.total_cmp(&(*y as f64)),
        (PyLiteral::Str(x), PyLiteral::Str(y)) => x.cmp(y),
        _ => std::cmp::Ordering::Equal,
    }
}
