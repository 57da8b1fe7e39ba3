use super::*;

/// Milliseconds of 2016-02-03T10:15:24.123Z and friends.
const VALUE: i64 = 1_454_494_524_123;
const MINUTE: i64 = 60_000;
const JAN_1_2016: i64 = 1_451_606_400_000;
const JAN_31_2016: i64 = 1_454_198_400_000;
const MAR_1_2016: i64 = 1_456_790_400_000;
const MAR_5_2016_NOON: i64 = 1_457_179_200_000;
const MAR_31_2016: i64 = 1_459_382_400_000;

fn step(months: i32, days: i32, nanos: i64) -> Step {
    Step {
        months,
        days,
        nanos,
    }
}

fn error(result: Result<i64>) -> String {
    match result {
        Err(QueryError::Invalid(message)) => message,
        other => panic!("expected an invalid request, got {other:?}"),
    }
}

#[test]
fn timestamps_round_down_to_multiples_from_the_start() {
    let five_minutes = step(0, 0, 5 * MINUTE * NANOS_PER_MILLI);
    // 10:15:24.123 -> 10:15:00 from the epoch, 10:13:00 from 10:13:00.
    assert_eq!(floor_timestamp(VALUE, five_minutes, 0), Ok(VALUE - 24_123));
    let start = VALUE - 24_123 - 2 * MINUTE;
    assert_eq!(floor_timestamp(VALUE, five_minutes, start), Ok(start));
    assert_eq!(
        floor_timestamp(VALUE, step(0, 1, 0), 0),
        Ok(VALUE - 36_924_123)
    );
    // Nothing above the nanoseconds below a millisecond: the value itself.
    assert_eq!(floor_timestamp(VALUE, step(0, 0, 999_999), 0), Ok(VALUE));
    assert_eq!(floor_timestamp(VALUE, step(0, 0, 0), 0), Ok(VALUE));
    assert_eq!(floor_timestamp(start, five_minutes, start), Ok(start));
}

#[test]
fn timestamp_refusals_in_cassandras_order() {
    assert_eq!(
        error(floor_timestamp(0, step(0, 0, -1), 1)),
        "The floor function starting time is greater than the provided time"
    );
    assert_eq!(
        error(floor_timestamp(1, step(-1, 0, 0), 0)),
        "Negative durations are not supported by the floor function"
    );
}

#[test]
fn months_count_on_the_calendar() {
    assert_eq!(
        floor_timestamp(MAR_5_2016_NOON, step(1, 0, 0), 0),
        Ok(MAR_1_2016)
    );
    // 554 months since 1970: a multiple of 2, not of 3 (552) nor 12.
    assert_eq!(
        floor_timestamp(MAR_5_2016_NOON, step(2, 0, 0), 0),
        Ok(MAR_1_2016)
    );
    assert_eq!(
        floor_timestamp(MAR_5_2016_NOON, step(3, 0, 0), 0),
        Ok(JAN_1_2016)
    );
    assert_eq!(
        floor_timestamp(MAR_5_2016_NOON, step(12, 0, 0), 0),
        Ok(JAN_1_2016)
    );
    // Cassandra's estimate is not checked for months alone: from a 31st,
    // two months on is the 31st of March, after the value.
    assert_eq!(
        floor_timestamp(MAR_5_2016_NOON, step(1, 0, 0), JAN_31_2016),
        Ok(MAR_31_2016)
    );
    // With days, it steps back until not after the value: Jan 31 + 1mo1d
    // is Mar 1 (Feb 29 pinned, plus a day), + 2mo2d would be Apr 2.
    let month_and_day = step(1, 1, 0);
    assert_eq!(
        floor_timestamp(MAR_5_2016_NOON, month_and_day, JAN_31_2016),
        Ok(MAR_1_2016)
    );
    // Never before the start.
    assert_eq!(
        floor_timestamp(JAN_31_2016 + 1, month_and_day, JAN_31_2016),
        Ok(JAN_31_2016)
    );
}

#[test]
fn times_of_day_round_down_within_a_day() {
    let time = 36_924_123_456_789; // 10:15:24.123456789
    let ten_minutes = step(0, 0, 10 * MINUTE * NANOS_PER_MILLI);
    assert_eq!(floor_time(time, ten_minutes), Ok(36_600_000_000_000));
    assert_eq!(floor_time(time, step(0, 0, 1_000)), Ok(36_924_123_456_000));
    assert_eq!(floor_time(time, step(0, 0, NANOS_PER_DAY)), Ok(0));
    assert_eq!(floor_time(time, step(0, 0, 0)), Ok(time));
    let too_long =
        "For time values, the floor can only be computed for durations smaller that a day";
    assert_eq!(error(floor_time(time, step(0, 1, 0))), too_long);
    assert_eq!(
        error(floor_time(time, step(0, 0, NANOS_PER_DAY + 1))),
        too_long
    );
    assert_eq!(
        error(floor_time(time, step(0, 0, -1))),
        "Negative durations are not supported by the floor function"
    );
}

#[test]
fn calendar_is_julian_before_the_gregorian_cutover() {
    assert_eq!(days_from_julian(1969, 12, 19), 0);
    assert_eq!(days_from_julian(1582, 10, 4) + 1, GREGORIAN_CUTOVER_DAY);
    assert_eq!(days_from_civil(1582, 10, 15), GREGORIAN_CUTOVER_DAY);
    for days in (-800_000..30_000).step_by(97) {
        let (y, m, d) = julian_from_days(days);
        assert_eq!(days_from_julian(y, m, d), days, "{y}-{m}-{d}");
    }
    let day_before = CalendarDate::at((GREGORIAN_CUTOVER_DAY - 1) * MILLIS_PER_DAY);
    assert_eq!(
        (day_before.year, day_before.month, day_before.day),
        (1582, 9, 4)
    );
    let cutover = CalendarDate::at(GREGORIAN_CUTOVER_DAY * MILLIS_PER_DAY);
    assert_eq!((cutover.year, cutover.month, cutover.day), (1582, 9, 15));
    for millis in [-62_135_596_800_001, -12_219_292_800_000, 0, VALUE] {
        assert_eq!(CalendarDate::at(millis).millis(), millis);
    }
}

#[test]
fn added_months_pin_the_day_of_month() {
    let mut date = CalendarDate::at(JAN_31_2016);
    date.add_months(1);
    assert_eq!((date.year, date.month, date.day), (2016, 1, 29));
    date.add_months(-13);
    assert_eq!((date.year, date.month, date.day), (2015, 0, 29));
    // 1500 is a leap year of the Julian calendar.
    let mut julian = CalendarDate {
        year: 1500,
        month: 0,
        day: 31,
        millis_of_day: 0,
    };
    julian.add_months(1);
    assert_eq!(julian.day, 29);
    // Years of the era: 1 BC is year 0 counted from 1 BC = 0.
    let bc = CalendarDate::at(days_from_julian(0, 6, 1) * MILLIS_PER_DAY);
    assert_eq!((bc.year, bc.era_year()), (0, 1));
}

fn bytes(value: Value) -> Option<Vec<u8>> {
    Some(value.to_bytes())
}

fn types(names: &[NativeType]) -> Vec<CqlType> {
    names.iter().map(|t| CqlType::Native(*t)).collect()
}

#[test]
fn calls_check_the_duration_for_the_value_type() {
    use NativeType as N;
    let duration = |nanos| {
        bytes(Value::Duration {
            months: 0,
            days: 1,
            nanos,
        })
    };
    let date = bytes(Value::Date((1u32 << 31) + 16_834)); // 2016-02-03
    let on_date = call(
        &types(&[N::Date, N::Duration]),
        &[date.clone(), duration(0)],
    );
    assert_eq!(on_date, Ok(date.clone()));
    let message = |r: Result<Option<Vec<u8>>>| match r {
        Err(QueryError::Invalid(m)) => m,
        other => panic!("expected an invalid request, got {other:?}"),
    };
    assert_eq!(
        message(call(&types(&[N::Date, N::Duration]), &[date.clone(), duration(3_600_000_000_000)])),
        "The floor on date values cannot be computed for the 1d1h duration as precision is below 1 day"
    );
    let ts = bytes(Value::Timestamp(VALUE));
    assert_eq!(
        message(call(
            &types(&[N::Timestamp, N::Duration]),
            &[ts.clone(), duration(1_000)]
        )),
        "The floor cannot be computed for the 1d1us duration as precision is below 1 millisecond"
    );
    let with_start = types(&[N::Timestamp, N::Duration, N::Timestamp]);
    assert_eq!(
        call(&with_start, &[ts.clone(), duration(0), None]),
        Ok(None)
    );
    assert_eq!(
        call(&with_start, &[ts, duration(0), Some(Vec::new())]),
        Ok(None)
    );
}

#[test]
fn calendar_search_is_bounded() {
    // Year 100,000: about 1.2 million months from the epoch, so as many
    // steps back for a duration that is mostly days.
    let far = 3_093_527_980_800_000;
    let mostly_days = step(1, 50_000, 0);
    let refused = error(floor_timestamp(far, mostly_days, 0));
    assert!(
        refused.contains("too far from the starting time"),
        "{refused}"
    );
    // A duration of months and a day from a start a year back takes a step.
    let from_a_year_back = floor_timestamp(
        MAR_5_2016_NOON,
        step(1, 1, 0),
        JAN_1_2016 - 365 * MILLIS_PER_DAY,
    );
    assert!(from_a_year_back.is_ok_and(|f| f <= MAR_5_2016_NOON));
}
