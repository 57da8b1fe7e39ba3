//! Constant text to serialized values: Cassandra's `AbstractType.fromString`
//! for the native types, with its marshal messages. Errors are the bare
//! message; the caller turns them into `QueryError::Invalid`.

use std::net::IpAddr;

use num_bigint::BigInt;
use rocksandra_data::types::NativeType;
use rocksandra_data::Value;

pub(crate) type MarshalResult<T> = std::result::Result<T, String>;

pub(crate) const NANOS_PER_DAY: i64 = 86_400_000_000_000;
pub(crate) const MILLIS_PER_DAY: i64 = 86_400_000;
/// The protocol's date 0 is this many days before 1970-01-01.
pub(crate) const DATE_EPOCH_OFFSET: i64 = 1 << 31;

/// Parses `text` as a value of `ty`, as Cassandra does for a constant of the
/// right kind. `now_millis` serves the `'now'` timestamp string.
pub(crate) fn from_string(ty: NativeType, text: &str, now_millis: i64) -> MarshalResult<Vec<u8>> {
    use NativeType as N;
    Ok(match ty {
        N::Ascii => {
            if let Some(c) = text.chars().find(|c| !c.is_ascii()) {
                return Err(format!(
                    "Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = {}",
                    c.len_utf16()
                ));
            }
            text.as_bytes().to_vec()
        }
        N::Text => text.as_bytes().to_vec(),
        N::Blob => {
            let digits = text.strip_prefix("0x").unwrap_or(text);
            hex::decode(digits).map_err(|_| format!("cannot parse '{digits}' as hex bytes"))?
        }
        N::Boolean => {
            if text.is_empty() {
                return Ok(Vec::new());
            }
            match text.to_ascii_lowercase().as_str() {
                "true" => vec![1],
                "false" => vec![0],
                _ => return Err(format!("Unable to make boolean from '{text}'")),
            }
        }
        N::Int => empty_or(text, || {
            parse_int::<i32>(text)
                .map(|v| v.to_be_bytes().to_vec())
                .ok_or_else(|| format!("Unable to make int from '{text}'"))
        })?,
        N::Bigint | N::Counter => empty_or(text, || {
            parse_int::<i64>(text)
                .map(|v| v.to_be_bytes().to_vec())
                .ok_or_else(|| format!("Unable to make long from '{text}'"))
        })?,
        N::Smallint => parse_int::<i16>(text)
            .map(|v| v.to_be_bytes().to_vec())
            .ok_or_else(|| format!("Unable to make short from '{text}'"))?,
        N::Tinyint => parse_int::<i8>(text)
            .map(|v| v.to_be_bytes().to_vec())
            .ok_or_else(|| format!("Unable to make byte from '{text}'"))?,
        N::Varint => empty_or(text, || {
            parse_varint(text)
                .map(|v| v.to_signed_bytes_be())
                .ok_or_else(|| format!("unable to make int from '{text}'"))
        })?,
        N::Decimal => empty_or(text, || {
            parse_decimal(text)
                .map(|(unscaled, scale)| Value::Decimal { unscaled, scale }.to_bytes())
                .ok_or_else(|| format!("unable to make BigDecimal from '{text}'"))
        })?,
        N::Float => empty_or(text, || {
            parse_java_double(text)
                .map(|v| (v as f32).to_be_bytes().to_vec())
                .ok_or_else(|| format!("Unable to make float from '{text}'"))
        })?,
        N::Double => empty_or(text, || {
            parse_java_double(text)
                .map(|v| v.to_be_bytes().to_vec())
                .ok_or_else(|| format!("Unable to make double from '{text}'"))
        })?,
        N::Uuid => empty_or(text, || {
            parse_uuid(text)
                .map(|u| u.to_vec())
                .ok_or_else(|| format!("Unable to make UUID from '{text}'"))
        })?,
        N::Timeuuid => empty_or(text, || {
            let uuid = parse_uuid(text)
                .ok_or_else(|| format!("Unknown timeuuid representation: {text}"))?;
            if uuid[6] >> 4 != 1 {
                return Err("TimeUUID supports only version 1 UUIDs".to_string());
            }
            Ok(uuid.to_vec())
        })?,
        N::Inet => empty_or(text, || {
            parse_inet(text)
                .map(|ip| Value::Inet(ip).to_bytes())
                .ok_or_else(|| format!("Unable to make inet address from '{text}'"))
        })?,
        N::Timestamp => empty_or(text, || {
            parse_timestamp(text, now_millis).map(|ms| ms.to_be_bytes().to_vec())
        })?,
        N::Date => parse_date(text)?.to_be_bytes().to_vec(),
        N::Time => parse_time(text)?.to_be_bytes().to_vec(),
        N::Duration => empty_or(text, || {
            parse_duration(text).map(|(months, days, nanos)| {
                Value::Duration {
                    months,
                    days,
                    nanos,
                }
                .to_bytes()
            })
        })?,
    })
}

/// Cassandra returns the empty value for empty text of most types.
fn empty_or(text: &str, parse: impl FnOnce() -> MarshalResult<Vec<u8>>) -> MarshalResult<Vec<u8>> {
    if text.is_empty() {
        Ok(Vec::new())
    } else {
        parse()
    }
}

/// Java's `Integer.parseInt` family: optional sign, ASCII digits.
fn parse_int<T: std::str::FromStr>(text: &str) -> Option<T> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

pub(crate) fn parse_varint(text: &str) -> Option<BigInt> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `new BigDecimal(text)`: sign, digits with an optional point, optional
/// exponent; the scale is the count of fraction digits minus the exponent.
pub(crate) fn parse_decimal(text: &str) -> Option<(BigInt, i32)> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => {
            let exp = &rest[i + 1..];
            (&rest[..i], parse_int::<i64>(exp)?)
        }
        None => (rest, 0),
    };
    let (int_part, fraction) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    if int_part.is_empty() && fraction.is_empty() {
        return None;
    }
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int_part) || !all_digits(fraction) {
        return None;
    }
    let digits = format!("{int_part}{fraction}");
    let mut unscaled: BigInt = digits.parse().ok()?;
    if negative {
        unscaled = -unscaled;
    }
    let scale = i64::try_from(fraction.len()).ok()?.checked_sub(exponent)?;
    Some((unscaled, i32::try_from(scale).ok()?))
}

/// Java's `Double.parseDouble` for the forms CQL's lexer produces.
pub(crate) fn parse_java_double(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    match unsigned {
        "NaN" => return Some(f64::NAN),
        "Infinity" => {
            return Some(if text.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        _ => {}
    }
    let body = unsigned
        .strip_suffix(['d', 'D', 'f', 'F'])
        .unwrap_or(unsigned);
    let valid = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && body.bytes().any(|b| b.is_ascii_digit());
    if !valid {
        return None;
    }
    let value: f64 = body.parse().ok()?;
    Some(if text.starts_with('-') { -value } else { value })
}

/// The canonical 8-4-4-4-12 hex form.
pub(crate) fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    rocksandra_data::uuid::parse_text(text)
}

/// An IP address; IPv4-mapped IPv6 addresses become IPv4 as in Java.
/// Host names are not resolved.
fn parse_inet(text: &str) -> Option<IpAddr> {
    let ip: IpAddr = match text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        // A bracketed literal is IPv6 only, as for InetAddress.getByName.
        Some(inner) => IpAddr::V6(inner.parse().ok()?),
        None => text
            .parse()
            .ok()
            .or_else(|| java_ipv4(text).map(IpAddr::V4))?,
    };
    Some(match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    })
}

/// The IPv4 forms Java's `IPAddressUtil.textToNumericFormatV4` reads besides
/// `a.b.c.d`: one to four decimal parts (leading zeros allowed), the last
/// filling the bytes left (`1.2.3` is 1.2.0.3, `1.2` is 1.0.0.2).
fn java_ipv4(text: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut value: u64 = 0;
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() || part.len() > 10 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u64 = part.parse().ok()?;
        let last = i + 1 == parts.len();
        let bits = if last { 8 * (4 - i as u32) } else { 8 };
        if n >> bits != 0 {
            return None;
        }
        value = (value << bits) | n;
    }
    Some(std::net::Ipv4Addr::from(u32::try_from(value).ok()?))
}

// ---------------------------------------------------------------- dates and times

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of days since 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// A tiny cursor over ASCII text for the date and time grammars.
struct Cursor<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Between `min` and `max` ASCII digits.
    fn digits(&mut self, min: usize, max: usize) -> Option<(i64, usize)> {
        let start = self.pos;
        while self.pos - start < max && self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        let count = self.pos - start;
        if count < min {
            return None;
        }
        let text = std::str::from_utf8(&self.text[start..self.pos]).ok()?;
        Some((text.parse().ok()?, count))
    }

    fn at_end(&self) -> bool {
        self.pos == self.text.len()
    }

    fn rest(&self) -> &[u8] {
        &self.text[self.pos.min(self.text.len())..]
    }
}

/// `yyyy-MM-dd` with a valid month and day; years of more than four digits
/// need a sign, as in ISO-8601.
fn parse_ymd(cursor: &mut Cursor<'_>) -> Option<(i64, u32, u32)> {
    let sign = match cursor.peek() {
        Some(b'-') => {
            cursor.pos += 1;
            -1
        }
        Some(b'+') => {
            cursor.pos += 1;
            1
        }
        _ => 0,
    };
    let (year, year_digits) = cursor.digits(4, 9)?;
    if year_digits > 4 && sign == 0 {
        return None;
    }
    let year = if sign < 0 { -year } else { year };
    if !cursor.eat(b'-') {
        return None;
    }
    let (month, _) = cursor.digits(2, 2)?;
    if !cursor.eat(b'-') {
        return None;
    }
    let (day, _) = cursor.digits(2, 2)?;
    let (month, day) = (u32::try_from(month).ok()?, u32::try_from(day).ok()?);
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some((year, month, day))
}

/// A date: raw unsigned days (epoch at 2^31) or `yyyy-mm-dd`.
pub(crate) fn parse_date(text: &str) -> MarshalResult<u32> {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<i64>()
            .ok()
            .filter(|d| (0..=i64::from(u32::MAX)).contains(d))
            .and_then(|d| u32::try_from(d).ok())
            .ok_or_else(|| format!("Unable to make unsigned int (for date) from: '{text}'"));
    }
    let coerce = || format!("Unable to coerce '{text}' to a formatted date (long)");
    let mut cursor = Cursor {
        text: text.as_bytes(),
        pos: 0,
    };
    let (year, month, day) = parse_ymd(&mut cursor).ok_or_else(coerce)?;
    if !cursor.at_end() {
        return Err(coerce());
    }
    let days = days_from_civil(year, month, day);
    if days < i64::from(i32::MIN) {
        return Err(format!(
            "Input date {text} is less than min supported date -5877641-06-23T00:00Z"
        ));
    }
    if days > i64::from(i32::MAX) {
        return Err(format!(
            "Input date {text} is greater than max supported date +5881580-07-11T00:00Z"
        ));
    }
    u32::try_from(days + DATE_EPOCH_OFFSET).map_err(|_| coerce())
}

/// A time of day: raw nanoseconds or `hh:mm:ss[.fffffffff]`.
pub(crate) fn parse_time(text: &str) -> MarshalResult<i64> {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<i64>()
            .ok()
            .filter(|n| (0..NANOS_PER_DAY).contains(n))
            .ok_or_else(|| format!("Unable to make long (for time) from: '{text}'"));
    }
    parse_time_strictly(text)
        .ok_or_else(|| format!("(TimeType) Unable to coerce '{text}' to a formatted time (long)"))
}

/// Cassandra's `hh:mm:ss[.fffffffff]`, where each part is a Java integer.
fn parse_time_strictly(text: &str) -> Option<i64> {
    let s = text.trim();
    let first = s.find(':')?;
    let second = first + 1 + s[first + 1..].find(':')?;
    if first == 0 || second + 1 >= s.len() {
        return None;
    }
    let hour: i64 = parse_int(&s[..first])?;
    let minute: i64 = parse_int(&s[first + 1..second])?;
    let after = &s[second + 1..];
    let (second_text, nanos) = match after.find('.') {
        Some(dot) if dot + 1 < after.len() => {
            let fraction = &after[dot + 1..];
            if fraction.len() > 9 || !fraction.as_bytes()[0].is_ascii_digit() {
                return None;
            }
            let padded = format!("{fraction:0<9}");
            (&after[..dot], parse_int::<i64>(&padded)?)
        }
        Some(_) => return None,
        None => (after, 0),
    };
    let second: i64 = parse_int(second_text)?;
    if !(0..24).contains(&hour) || !(0..60).contains(&minute) || !(0..60).contains(&second) {
        return None;
    }
    Some(((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nanos)
}

/// A timestamp: `now`, raw milliseconds, or a date with optional time and zone.
pub(crate) fn parse_timestamp(text: &str, now_millis: i64) -> MarshalResult<i64> {
    if text.eq_ignore_ascii_case("now") {
        return Ok(now_millis);
    }
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<i64>()
            .map_err(|_| format!("Unable to make long (for date) from: '{text}'"));
    }
    parse_date_time(text).ok_or_else(|| format!("Unable to parse a date/time from '{text}'"))
}

/// `yyyy-MM-dd[( |T)HH:mm[:ss[.fff]]][ ][zone]`, zone being `Z`, `±HH`,
/// `±HHMM`, `±HH:MM`, `UTC`, `GMT` or `UT` (optionally followed by an offset).
fn parse_date_time(text: &str) -> Option<i64> {
    let mut cursor = Cursor {
        text: text.as_bytes(),
        pos: 0,
    };
    let (year, month, day) = parse_lenient_ymd(&mut cursor)?;
    let mut millis_of_day = 0i64;
    let save = cursor.pos;
    if (cursor.eat(b' ') || cursor.eat(b'T')) && cursor.peek().is_some_and(|b| b.is_ascii_digit()) {
        let (hour, _) = cursor.digits(1, 2)?;
        if !cursor.eat(b':') {
            return None;
        }
        let (minute, _) = cursor.digits(1, 2)?;
        let mut second = 0;
        let mut millis = 0;
        if cursor.eat(b':') {
            second = cursor.digits(1, 2)?.0;
            if cursor.eat(b'.') {
                let (fraction, count) = cursor.digits(1, 9)?;
                let scale = 10i64.pow(u32::try_from(count).ok()?);
                millis = fraction * 1000 / scale;
            }
        }
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        millis_of_day = ((hour * 60 + minute) * 60 + second) * 1000 + millis;
    } else {
        cursor.pos = save;
    }
    let offset_minutes = parse_zone(&mut cursor)?;
    if !cursor.at_end() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    days.checked_mul(MILLIS_PER_DAY)?
        .checked_add(millis_of_day)?
        .checked_sub(offset_minutes.checked_mul(60_000)?)
}

/// The date of a timestamp, read as Cassandra's lenient formatter does:
/// a year of four digits or more, a month and a day of one or two digits,
/// and a day past the month's end (up to 31) moved back to its last day
/// (java.time's SMART resolution).
fn parse_lenient_ymd(cursor: &mut Cursor<'_>) -> Option<(i64, u32, u32)> {
    let negative = cursor.eat(b'-');
    if !negative {
        cursor.eat(b'+');
    }
    let (year, _) = cursor.digits(4, 9)?;
    let year = if negative { -year } else { year };
    if !cursor.eat(b'-') {
        return None;
    }
    let (month, _) = cursor.digits(1, 2)?;
    if !cursor.eat(b'-') {
        return None;
    }
    let (day, _) = cursor.digits(1, 2)?;
    let (month, day) = (u32::try_from(month).ok()?, u32::try_from(day).ok()?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some((year, month, day.min(days_in_month(year, month))))
}

/// The zone suffix in minutes east of UTC; no suffix means UTC.
fn parse_zone(cursor: &mut Cursor<'_>) -> Option<i64> {
    if cursor.at_end() {
        return Some(0);
    }
    let had_space = cursor.eat(b' ');
    let rest = cursor.rest();
    for name in [&b"UTC"[..], b"GMT", b"UT", b"Z"] {
        if rest.starts_with(name) {
            cursor.pos += name.len();
            if cursor.at_end() {
                return Some(0);
            }
            if name == b"Z" {
                return None;
            }
            return parse_offset(cursor);
        }
    }
    if had_space && cursor.at_end() {
        return None;
    }
    parse_offset(cursor)
}

fn parse_offset(cursor: &mut Cursor<'_>) -> Option<i64> {
    let sign = match cursor.peek()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    cursor.pos += 1;
    let (hours, _) = cursor.digits(2, 2)?;
    let colon = cursor.eat(b':');
    let minutes = if colon || cursor.peek().is_some_and(|b| b.is_ascii_digit()) {
        cursor.digits(2, 2)?.0
    } else {
        0
    };
    if hours > 18 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 60 + minutes))
}

// ---------------------------------------------------------------- durations

const NANOS_PER_MICRO: i64 = 1_000;
const NANOS_PER_MILLI: i64 = 1_000_000;
const NANOS_PER_SECOND: i64 = 1_000_000_000;
const NANOS_PER_MINUTE: i64 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: i64 = 60 * NANOS_PER_MINUTE;

const UNIT_NAMES: [&str; 11] = [
    "",
    "years",
    "months",
    "weeks",
    "days",
    "hours",
    "minutes",
    "seconds",
    "milliseconds",
    "microseconds",
    "nanoseconds",
];

/// Accumulates a duration unit by unit, in Cassandra's order and limits.
#[derive(Default)]
struct DurationBuilder {
    months: i64,
    days: i64,
    nanos: i64,
    current_unit: usize,
}

impl DurationBuilder {
    fn add(&mut self, unit: usize, amount: i64) -> MarshalResult<()> {
        if unit == self.current_unit {
            return Err(format!(
                "Invalid duration. The {} are specified multiple times",
                UNIT_NAMES[unit]
            ));
        }
        if unit < self.current_unit {
            return Err(format!(
                "Invalid duration. The {} should be after {}",
                UNIT_NAMES[self.current_unit], UNIT_NAMES[unit]
            ));
        }
        self.current_unit = unit;
        let (slot, per_unit, limit, name) = match unit {
            1 => (&mut self.months, 12, i64::from(i32::MAX), "months"),
            2 => (&mut self.months, 1, i64::from(i32::MAX), "months"),
            3 => (&mut self.days, 7, i64::from(i32::MAX), "days"),
            4 => (&mut self.days, 1, i64::from(i32::MAX), "days"),
            5 => (&mut self.nanos, NANOS_PER_HOUR, i64::MAX, "nanoseconds"),
            6 => (&mut self.nanos, NANOS_PER_MINUTE, i64::MAX, "nanoseconds"),
            7 => (&mut self.nanos, NANOS_PER_SECOND, i64::MAX, "nanoseconds"),
            8 => (&mut self.nanos, NANOS_PER_MILLI, i64::MAX, "nanoseconds"),
            9 => (&mut self.nanos, NANOS_PER_MICRO, i64::MAX, "nanoseconds"),
            _ => (&mut self.nanos, 1, i64::MAX, "nanoseconds"),
        };
        if amount > (limit - *slot) / per_unit {
            return Err(format!(
                "Invalid duration. The total number of {name} must be less or equal to {}",
                i32::MAX
            ));
        }
        *slot += amount * per_unit;
        Ok(())
    }

    fn build(self, negative: bool) -> MarshalResult<(i32, i32, i64)> {
        let sign = if negative { -1 } else { 1 };
        let months = i32::try_from(self.months).map_err(|_| "Invalid duration".to_string())?;
        let days = i32::try_from(self.days).map_err(|_| "Invalid duration".to_string())?;
        Ok((months * sign, days * sign, self.nanos * i64::from(sign)))
    }
}

/// Cassandra's `Duration.from`: `1h30m`, `P1Y2M3DT4H5M6S`, `P2W`,
/// `P0001-02-03T04:05:06`, each optionally negated.
pub(crate) fn parse_duration(input: &str) -> MarshalResult<(i32, i32, i64)> {
    let negative = input.starts_with('-');
    let source = if negative { &input[1..] } else { input };
    let unable = || format!("Unable to convert '{source}' to a duration");
    let mut builder = DurationBuilder::default();
    if let Some(iso) = source.strip_prefix('P') {
        if let Some(weeks) = iso.strip_suffix('W') {
            builder.add(3, iso_number(weeks, usize::MAX).ok_or_else(unable)?)?;
        } else if iso.contains('-') {
            parse_iso_alternative(iso, &mut builder).ok_or_else(unable)??;
        } else {
            parse_iso(iso, &mut builder).ok_or_else(unable)??;
        }
        return builder.build(negative);
    }
    let mut rest = source;
    if rest.is_empty() {
        return Err(unable());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(unable());
        }
        let number: i64 = rest[..digits].parse().map_err(|_| unable())?;
        rest = &rest[digits..];
        let (unit, length) = duration_unit(rest).ok_or_else(unable)?;
        rest = &rest[length..];
        builder.add(unit, number)?;
    }
    builder.build(negative)
}

/// The unit at the start of `text` as (unit index, byte length), trying the
/// two-letter units before `m`, as Cassandra's regular expression does.
fn duration_unit(text: &str) -> Option<(usize, usize)> {
    let lower: String = text.chars().take(2).collect::<String>().to_lowercase();
    let two = [("mo", 2), ("ms", 8), ("us", 9), ("µs", 9), ("ns", 10)];
    for (symbol, unit) in two {
        if lower.starts_with(symbol) && lower.chars().count() >= 2 {
            let length: usize = text.chars().take(2).map(char::len_utf8).sum();
            return Some((unit, length));
        }
    }
    let one = [("y", 1), ("w", 3), ("d", 4), ("h", 5), ("s", 7), ("m", 6)];
    for (symbol, unit) in one {
        if lower.starts_with(symbol) {
            return Some((unit, 1));
        }
    }
    None
}

fn iso_number(text: &str, max_digits: usize) -> Option<i64> {
    if text.is_empty() || text.len() > max_digits || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `[nY][nM][nD][T[nH][nM][nS]]` after the `P`.
fn parse_iso(iso: &str, builder: &mut DurationBuilder) -> Option<MarshalResult<()>> {
    let (date, time) = match iso.find('T') {
        Some(t) => (&iso[..t], Some(&iso[t + 1..])),
        None => (iso, None),
    };
    let mut parts: Vec<(usize, i64)> = Vec::new();
    parse_designators(date, &[('Y', 1), ('M', 2), ('D', 4)], &mut parts)?;
    if let Some(time) = time {
        parse_designators(time, &[('H', 5), ('M', 6), ('S', 7)], &mut parts)?;
    }
    Some(
        parts
            .into_iter()
            .try_for_each(|(unit, n)| builder.add(unit, n)),
    )
}

fn parse_designators(
    text: &str,
    designators: &[(char, usize)],
    parts: &mut Vec<(usize, i64)>,
) -> Option<()> {
    let mut rest = text;
    let mut next = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let number = iso_number(&rest[..digits], usize::MAX)?;
        let designator = rest[digits..].chars().next()?;
        let index = designators[next..]
            .iter()
            .position(|(d, _)| *d == designator)?;
        parts.push((designators[next + index].1, number));
        next += index + 1;
        rest = &rest[digits + 1..];
    }
    Some(())
}

/// `YYYY-MM-DDThh:mm:ss` after the `P`.
fn parse_iso_alternative(iso: &str, builder: &mut DurationBuilder) -> Option<MarshalResult<()>> {
    let bytes = iso.as_bytes();
    if bytes.len() != 19
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || bytes[10] != b'T'
        || bytes[13] != b':'
        || bytes[16] != b':'
    {
        return None;
    }
    let fields = [
        (1, &iso[0..4]),
        (2, &iso[5..7]),
        (4, &iso[8..10]),
        (5, &iso[11..13]),
        (6, &iso[14..16]),
        (7, &iso[17..19]),
    ];
    let mut parsed = Vec::with_capacity(fields.len());
    for (unit, text) in fields {
        parsed.push((unit, iso_number(text, 4)?));
    }
    Some(
        parsed
            .into_iter()
            .try_for_each(|(unit, n)| builder.add(unit, n)),
    )
}
