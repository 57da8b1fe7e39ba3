//! Cassandra 5.0's `floor` time functions (CASSANDRA-11871): a timestamp,
//! timeuuid or date rounded down to a multiple of a duration counted from a
//! start time (the epoch unless given), and a time of day rounded down to
//! a multiple of a duration shorter than a day.
//!
//! Durations with months are counted on the calendar as Cassandra counts
//! them, with `java.util.GregorianCalendar` in UTC: Julian dates before
//! 1582-10-15, day of month pinned to the month's length when months are
//! added, and the same estimate-then-step-back search (so its quirks, such
//! as a month-only floor past the value when the start's day of month is
//! later than the value's, are kept). Results checked against Cassandra 5.0.6.

use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;

use super::{date_of_millis, read_i64, temporal_millis, Kind};
use crate::error::{QueryError, Result};
use crate::term::literal::{civil_from_days, days_from_civil, MILLIS_PER_DAY};

const NANOS_PER_MILLI: i64 = 1_000_000;
const NANOS_PER_DAY: i64 = MILLIS_PER_DAY * NANOS_PER_MILLI;

/// Steps back from the estimated multiple of a duration with months and
/// days or time: fewer than the months between start and value divided by
/// the duration's months, so only values more than 80,000 years from their
/// start time can need more (Cassandra would loop as long).
const FLOOR_CALENDAR_STEPS_MAX: u32 = 1_000_000;

/// The overloads, in Cassandra's `TimeFcts` order: (value type, with a
/// start time) for timestamp, timeuuid and date, then time.
pub(super) fn candidates() -> Vec<(Kind, Vec<CqlType>, CqlType)> {
    use NativeType as N;
    let native = CqlType::Native;
    let mut all = Vec::new();
    for (value, start, result) in [
        (N::Timestamp, N::Timestamp, N::Timestamp),
        (N::Timeuuid, N::Timestamp, N::Timestamp),
        (N::Date, N::Date, N::Date),
    ] {
        let two = vec![native(value), native(N::Duration)];
        let mut three = two.clone();
        three.push(native(start));
        all.push((Kind::Floor, two, native(result)));
        all.push((Kind::Floor, three, native(result)));
    }
    all.push((
        Kind::Floor,
        vec![native(N::Time), native(N::Duration)],
        native(N::Time),
    ));
    all
}

/// A duration's parts, as Cassandra's `Duration` holds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub months: i32,
    pub days: i32,
    pub nanos: i64,
}

impl Step {
    fn decode(bytes: &[u8]) -> Result<Step> {
        match Value::deserialize(&CqlType::Native(NativeType::Duration), bytes)? {
            Value::Duration {
                months,
                days,
                nanos,
            } => Ok(Step {
                months,
                days,
                nanos,
            }),
            _ => Err(QueryError::Server(
                "a duration decoded as another type".into(),
            )),
        }
    }

    fn is_negative(self) -> bool {
        self.months < 0 || self.days < 0 || self.nanos < 0
    }

    /// The days and time part in milliseconds (below a millisecond dropped).
    fn millis(self) -> i64 {
        i64::from(self.days) * MILLIS_PER_DAY + self.nanos / NANOS_PER_MILLI
    }

    /// Cassandra's text of the duration, for messages.
    fn text(self) -> String {
        Value::Duration {
            months: self.months,
            days: self.days,
            nanos: self.nanos,
        }
        .to_string()
    }
}

/// Runs the overload with `arg_types` on serialized arguments: null (or
/// empty) when any argument is.
pub(super) fn call(arg_types: &[CqlType], args: &[Option<Vec<u8>>]) -> Result<Option<Vec<u8>>> {
    if args
        .iter()
        .any(|a| a.as_deref().is_none_or(<[u8]>::is_empty))
    {
        return Ok(None);
    }
    let present: Vec<&[u8]> = args.iter().filter_map(Option::as_deref).collect();
    let (Some(value_type), [value, duration, rest @ ..]) = (arg_types.first(), present.as_slice())
    else {
        return Err(QueryError::Server(format!(
            "floor called with {} arguments",
            args.len()
        )));
    };
    let step = Step::decode(duration)?;
    let start = rest.first().copied();
    match value_type.unfrozen() {
        CqlType::Native(NativeType::Time) => Ok(Some(
            floor_time(read_i64(value)?, step)?.to_be_bytes().to_vec(),
        )),
        CqlType::Native(NativeType::Date) => {
            if step.nanos != 0 {
                return Err(QueryError::invalid(format!(
                    "The floor on date values cannot be computed for the {} duration as precision is below 1 day",
                    step.text()
                )));
            }
            let start = start.map_or(Ok(0), |s| temporal_millis(value_type, s))?;
            let floor = floor_timestamp(temporal_millis(value_type, value)?, step, start)?;
            Ok(Some(date_of_millis(floor).to_be_bytes().to_vec()))
        }
        _ => {
            if step.nanos % NANOS_PER_MILLI != 0 {
                return Err(QueryError::invalid(format!(
                    "The floor cannot be computed for the {} duration as precision is below 1 millisecond",
                    step.text()
                )));
            }
            let start = start.map_or(Ok(0), read_i64)?;
            let floor = floor_timestamp(temporal_millis(value_type, value)?, step, start)?;
            Ok(Some(floor.to_be_bytes().to_vec()))
        }
    }
}

/// Cassandra's `Duration.floorTimestamp`: the greatest `start + n * step`
/// not after `time`, in milliseconds (Java's wrapping arithmetic kept).
pub(crate) fn floor_timestamp(time: i64, step: Step, start: i64) -> Result<i64> {
    if start > time {
        return Err(QueryError::invalid(
            "The floor function starting time is greater than the provided time",
        ));
    }
    if step.is_negative() {
        return Err(QueryError::invalid(
            "Negative durations are not supported by the floor function",
        ));
    }
    if step.months != 0 {
        return floor_by_months(time, step, start);
    }
    let millis = step.millis();
    if millis == 0 {
        return Ok(time);
    }
    let delta = time.wrapping_sub(start).wrapping_rem(millis);
    Ok(time.wrapping_sub(delta))
}

/// The calendar search of a duration with months: the multiple estimated
/// from the months between start and time, then stepped back while its
/// days and time overshoot `time`.
fn floor_by_months(time: i64, step: Step, start: i64) -> Result<i64> {
    let at_time = CalendarDate::at(time);
    let mut calendar = CalendarDate::at(start);
    let months_between = at_time
        .era_year()
        .wrapping_sub(calendar.era_year())
        .wrapping_mul(12)
        .wrapping_add(at_time.month - calendar.month);
    let mut multiplier = months_between.wrapping_div(step.months);
    calendar.add_months(multiplier.wrapping_mul(step.months));
    if step.days == 0 && step.nanos == 0 {
        return Ok(calendar.millis());
    }
    let millis = step.millis();
    let at = |calendar: &CalendarDate, multiplier: i32| {
        calendar
            .millis()
            .wrapping_add(i64::from(multiplier).wrapping_mul(millis))
    };
    let mut floor = at(&calendar, multiplier);
    let mut steps = 0;
    while floor > time {
        steps += 1;
        if steps > FLOOR_CALENDAR_STEPS_MAX {
            return Err(QueryError::invalid(format!(
                "The floor cannot be computed for the {} duration: the time is too far from the starting time",
                step.text()
            )));
        }
        multiplier = multiplier.wrapping_sub(1);
        calendar.add_months(step.months.wrapping_neg());
        floor = at(&calendar, multiplier);
    }
    Ok(start.max(floor))
}

/// Cassandra's `Duration.floorTime`: a time of day (nanoseconds) rounded
/// down to a multiple of a duration of at most a day.
pub(crate) fn floor_time(time: i64, step: Step) -> Result<i64> {
    if step.is_negative() {
        return Err(QueryError::invalid(
            "Negative durations are not supported by the floor function",
        ));
    }
    if step.months != 0 || step.days != 0 || step.nanos > NANOS_PER_DAY {
        return Err(QueryError::invalid(
            "For time values, the floor can only be computed for durations smaller that a day",
        ));
    }
    if step.nanos == 0 {
        return Ok(time);
    }
    Ok(time.wrapping_sub(time.wrapping_rem(step.nanos)))
}

// ---------------------------------------------------------------- calendar

/// The first day of the Gregorian calendar (1582-10-15), in days since the
/// epoch: earlier days are Julian dates, as in `GregorianCalendar`.
const GREGORIAN_CUTOVER_DAY: i64 = -141_427;

/// Days from Julian 0000-03-01 to 1970-01-01.
const JULIAN_EPOCH_SHIFT: i64 = 719_470;

/// A UTC date and time as `GregorianCalendar`'s fields hold it: the year
/// counted from 1 BC = 0, the month 0 to 11.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CalendarDate {
    year: i32,
    month: i32,
    day: i32,
    millis_of_day: i64,
}

impl CalendarDate {
    fn at(millis: i64) -> CalendarDate {
        let days = millis.div_euclid(MILLIS_PER_DAY);
        let (year, month, day) = if days < GREGORIAN_CUTOVER_DAY {
            julian_from_days(days)
        } else {
            civil_from_days(days)
        };
        CalendarDate {
            // i64 milliseconds span less than 300 million years.
            year: i32::try_from(year).unwrap_or(i32::MAX),
            month: month as i32 - 1,
            day: day as i32,
            millis_of_day: millis.rem_euclid(MILLIS_PER_DAY),
        }
    }

    fn millis(&self) -> i64 {
        let (year, month, day) = (
            i64::from(self.year),
            (self.month + 1) as u32,
            self.day as u32,
        );
        let days = if (year, month, day) < (1582, 10, 15) {
            days_from_julian(year, month, day)
        } else {
            days_from_civil(year, month, day)
        };
        days.wrapping_mul(MILLIS_PER_DAY)
            .wrapping_add(self.millis_of_day)
    }

    /// `Calendar.YEAR`: the year of its era (1 BC is 1).
    fn era_year(&self) -> i32 {
        if self.year > 0 {
            self.year
        } else {
            1i32.wrapping_sub(self.year)
        }
    }

    /// `Calendar.add(MONTH, amount)`: the day of month kept, or the
    /// month's last day when the month is shorter.
    fn add_months(&mut self, amount: i32) {
        let month = self.month.wrapping_add(amount);
        let years = if month >= 0 {
            month / 12
        } else {
            (month + 1) / 12 - 1
        };
        self.year = self.year.wrapping_add(years);
        self.month = month.rem_euclid(12);
        self.day = self.day.min(month_length(self.year, self.month));
    }
}

/// Days in `month` (0 to 11) of `year`: Julian leap years up to 1582,
/// Gregorian ones after (1582 is not a leap year in either).
fn month_length(year: i32, month: i32) -> i32 {
    let leap = year % 4 == 0 && (year <= 1582 || year % 100 != 0 || year % 400 == 0);
    match month {
        3 | 5 | 8 | 10 => 30,
        1 if leap => 29,
        1 => 28,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a Julian calendar date.
fn days_from_julian(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let (cycle, year_of_cycle) = (year.div_euclid(4), year.rem_euclid(4));
    let month = i64::from(month);
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + i64::from(day) - 1;
    cycle * 1461 + year_of_cycle * 365 + day_of_year - JULIAN_EPOCH_SHIFT
}

/// (year, month, day) of the Julian calendar date `days` after 1970-01-01.
fn julian_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + JULIAN_EPOCH_SHIFT;
    let (cycle, day_of_cycle) = (shifted.div_euclid(1461), shifted.rem_euclid(1461));
    let year_of_cycle = (day_of_cycle - day_of_cycle / 1460) / 365;
    let day_of_year = day_of_cycle - 365 * year_of_cycle;
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    (
        year_of_cycle + cycle * 4 + i64::from(month <= 2),
        month,
        day,
    )
}

#[cfg(test)]
mod tests;
