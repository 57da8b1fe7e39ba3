//! `sum` and `avg` as Cassandra 5.0's `AggregateFcts` compute them, for
//! rows (`SELECT sum(v)`) and for the elements of a collection
//! (`collection_sum`, `collection_avg`, which reuse the aggregates):
//! integer sums wrap in the type, integer averages sum in 64 bits (then
//! exactly on overflow) and truncate, floating point uses Kahan summation
//! in doubles, decimals add exactly and average by a running mean rounded
//! HALF_EVEN at each step, and an empty input sums and averages to zero.

use num_bigint::BigInt;
use num_traits::{Signed, Zero};
use rocksandra_data::types::{CqlType, NativeType};

use super::Num;
use crate::error::{QueryError, Result};

/// Whether `sum`/`avg` exist for the type.
pub(crate) fn is_summable(ty: &CqlType) -> bool {
    matches!(ty.unfrozen(), CqlType::Native(t) if t.is_numeric())
}

/// `sum` (or `avg` when `avg`) of serialized values of `ty` (empty values
/// are left out, as nulls are).
pub(crate) fn sum_or_avg(avg: bool, ty: &CqlType, values: &[&[u8]]) -> Result<Vec<u8>> {
    let CqlType::Native(t) = ty.unfrozen() else {
        return Err(QueryError::invalid(format!("{ty} is not numeric")));
    };
    let numbers: Vec<Num> = values
        .iter()
        .filter(|v| !v.is_empty())
        .map(|v| Num::decode(ty, v))
        .collect::<Result<_>>()?;
    let count = numbers.len();
    Ok(match t {
        NativeType::Tinyint
        | NativeType::Smallint
        | NativeType::Int
        | NativeType::Bigint
        | NativeType::Counter => {
            // An exact sum: the wrapping sum in the type, and the average
            // of AvgAggregate (long sum, BigInteger past its overflow).
            let sum: i128 = numbers.iter().map(|n| i128::from(n.to_i64())).sum();
            let value = match (avg, count) {
                (false, _) => sum,
                (true, 0) => 0,
                (true, n) => sum / n as i128,
            };
            match t {
                NativeType::Tinyint => (value as i8).to_be_bytes().to_vec(),
                NativeType::Smallint => (value as i16).to_be_bytes().to_vec(),
                NativeType::Int => (value as i32).to_be_bytes().to_vec(),
                _ => (value as i64).to_be_bytes().to_vec(),
            }
        }
        NativeType::Float | NativeType::Double => {
            let result = kahan(&numbers, avg);
            if *t == NativeType::Float {
                (result as f32).to_be_bytes().to_vec()
            } else {
                result.to_be_bytes().to_vec()
            }
        }
        NativeType::Varint => {
            let sum: BigInt = numbers
                .iter()
                .map(|n| match n {
                    Num::Varint(v) => v.clone(),
                    other => BigInt::from(other.to_i64()),
                })
                .sum();
            let value = match (avg, count) {
                (false, _) => sum,
                (true, 0) => BigInt::zero(),
                (true, n) => sum / BigInt::from(n),
            };
            value.to_signed_bytes_be()
        }
        NativeType::Decimal => {
            let decimals: Vec<(BigInt, i32)> = numbers
                .into_iter()
                .map(|n| match n {
                    Num::Decimal(u, s) => (u, s),
                    _ => (BigInt::zero(), 0),
                })
                .collect();
            let (u, s) = if avg {
                running_mean(&decimals)
            } else {
                decimals
                    .iter()
                    .fold((BigInt::zero(), 0), |acc, d| add(&acc, d))
            };
            Num::Decimal(u, s).encode()
        }
        other => {
            return Err(QueryError::invalid(format!(
                "{} is not numeric",
                other.name()
            )))
        }
    })
}

/// FloatSumAggregate / FloatAvgAggregate: Kahan summation in doubles, the
/// plain sum kept for infinities, an exact sum once the double overflows.
fn kahan(numbers: &[Num], avg: bool) -> f64 {
    let (mut sum, mut compensation, mut simple) = (0f64, 0f64, 0f64);
    let mut big: Option<(BigInt, i32)> = None;
    for n in numbers {
        let d = n.to_f64();
        if let Some(b) = &big {
            big = Some(add(b, &exact_double(d)));
            continue;
        }
        simple += d;
        let previous = sum;
        let tmp = d - compensation;
        let rounded = sum + tmp;
        compensation = (rounded - sum) - tmp;
        sum = rounded;
        if avg && sum.is_infinite() && !d.is_infinite() {
            big = Some(add(&exact_double(previous), &exact_double(d)));
        }
    }
    let count = numbers.len();
    if avg && count == 0 {
        return 0.0;
    }
    if let Some((u, s)) = big {
        // bigSum.divide(count, HALF_EVEN).doubleValue()
        let q = divide_half_even(&u, &BigInt::from(count));
        return format!("{q}e{}", -i64::from(s)).parse().unwrap_or(f64::NAN);
    }
    let tmp = sum + compensation;
    let total = if tmp.is_nan() && simple.is_infinite() {
        simple
    } else {
        tmp
    };
    if avg {
        total / count as f64
    } else {
        total
    }
}

/// `BigDecimal.valueOf(d)` (finite values only reach here).
fn exact_double(d: f64) -> (BigInt, i32) {
    super::double_to_decimal(d).unwrap_or((BigInt::zero(), 0))
}

fn pow10(n: u32) -> BigInt {
    num_traits::pow(BigInt::from(10), n as usize)
}

fn add(a: &(BigInt, i32), b: &(BigInt, i32)) -> (BigInt, i32) {
    let scale = a.1.max(b.1);
    let ua = &a.0 * pow10((scale - a.1) as u32);
    let ub = &b.0 * pow10((scale - b.1) as u32);
    (ua + ub, scale)
}

/// `u / n` rounded HALF_EVEN to an integer.
fn divide_half_even(u: &BigInt, n: &BigInt) -> BigInt {
    let q = u / n;
    let r = u - &q * n;
    let twice = r.abs() * 2;
    let n_abs = n.abs();
    let away = twice > n_abs || (twice == n_abs && (&q % 2u8) != BigInt::zero());
    if away && !r.is_zero() {
        if u.is_negative() != n.is_negative() {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

/// avgFunctionForDecimal: avg += (x - avg) / count, each quotient at the
/// scale of its dividend, HALF_EVEN.
fn running_mean(values: &[(BigInt, i32)]) -> (BigInt, i32) {
    let mut avg = (BigInt::zero(), 0);
    for (count, x) in values.iter().enumerate() {
        let diff = add(x, &(-&avg.0, avg.1));
        let q = divide_half_even(&diff.0, &BigInt::from(count + 1));
        avg = add(&avg, &(q, diff.1));
    }
    avg
}
