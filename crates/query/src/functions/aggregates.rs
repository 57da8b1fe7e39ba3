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

/// The native aggregates, as a selection calls them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Aggregate {
    Count,
    Min,
    Max,
    Sum,
    Avg,
}

impl Aggregate {
    /// The native aggregate called `name` (in the `system` keyspace).
    pub(crate) fn named(name: &str) -> Option<Aggregate> {
        Some(match name {
            "count" => Aggregate::Count,
            "min" => Aggregate::Min,
            "max" => Aggregate::Max,
            "sum" => Aggregate::Sum,
            "avg" => Aggregate::Avg,
            _ => return None,
        })
    }
}

/// Whether `sum`/`avg` exist for the type.
pub(crate) fn is_summable(ty: &CqlType) -> bool {
    matches!(ty.unfrozen(), CqlType::Native(t) if t.is_numeric())
}

/// `sum` (or `avg` when `avg`) of serialized values of `ty` (empty values
/// are left out, as nulls are).
pub(crate) fn sum_or_avg(avg: bool, ty: &CqlType, values: &[&[u8]]) -> Result<Vec<u8>> {
    let mut acc = SumAvg::new(avg, ty)?;
    for v in values {
        acc.add(v)?;
    }
    Ok(acc.finish())
}

/// A running `sum` or `avg`, fed one value at a time: what a SELECT over
/// many rows keeps instead of the rows (the same arithmetic, in the same
/// order, as over a slice of them).
pub(crate) struct SumAvg {
    avg: bool,
    ty: CqlType,
    native: NativeType,
    count: usize,
    integer: i128,
    float: Kahan,
    varint: BigInt,
    decimal: (BigInt, i32),
}

impl SumAvg {
    pub(crate) fn new(avg: bool, ty: &CqlType) -> Result<SumAvg> {
        let native = match ty.unfrozen() {
            CqlType::Native(t) if t.is_numeric() => *t,
            CqlType::Native(t) => {
                return Err(QueryError::invalid(format!("{} is not numeric", t.name())))
            }
            _ => return Err(QueryError::invalid(format!("{ty} is not numeric"))),
        };
        Ok(SumAvg {
            avg,
            ty: ty.clone(),
            native,
            count: 0,
            integer: 0,
            float: Kahan::default(),
            varint: BigInt::zero(),
            decimal: (BigInt::zero(), 0),
        })
    }

    /// Adds one serialized value (an empty one is left out, as a null).
    pub(crate) fn add(&mut self, value: &[u8]) -> Result<()> {
        if value.is_empty() {
            return Ok(());
        }
        let n = Num::decode(&self.ty, value)?;
        self.count += 1;
        match self.native {
            NativeType::Float | NativeType::Double => self.float.add(n.to_f64(), self.avg),
            NativeType::Varint => {
                self.varint += match n {
                    Num::Varint(v) => v,
                    other => BigInt::from(other.to_i64()),
                }
            }
            NativeType::Decimal => {
                let x = match n {
                    Num::Decimal(u, s) => (u, s),
                    _ => (BigInt::zero(), 0),
                };
                self.decimal = if self.avg {
                    // avg += (x - avg) / count, HALF_EVEN at the dividend's scale.
                    let diff = add(&x, &(-&self.decimal.0, self.decimal.1));
                    let q = divide_half_even(&diff.0, &BigInt::from(self.count));
                    add(&self.decimal, &(q, diff.1))
                } else {
                    add(&self.decimal, &x)
                };
            }
            _ => self.integer += i128::from(n.to_i64()),
        }
        Ok(())
    }

    /// The serialized result (zero for no values).
    pub(crate) fn finish(self) -> Vec<u8> {
        let (avg, count) = (self.avg, self.count);
        match self.native {
            NativeType::Float | NativeType::Double => {
                let result = self.float.finish(avg, count);
                if self.native == NativeType::Float {
                    (result as f32).to_be_bytes().to_vec()
                } else {
                    result.to_be_bytes().to_vec()
                }
            }
            NativeType::Varint => match (avg, count) {
                (false, _) => self.varint,
                (true, 0) => BigInt::zero(),
                (true, n) => self.varint / BigInt::from(n),
            }
            .to_signed_bytes_be(),
            NativeType::Decimal => Num::Decimal(self.decimal.0, self.decimal.1).encode(),
            t => {
                // An exact sum: the wrapping sum in the type, and the average
                // of AvgAggregate (long sum, BigInteger past its overflow).
                let value = match (avg, count) {
                    (false, _) => self.integer,
                    (true, 0) => 0,
                    (true, n) => self.integer / n as i128,
                };
                match t {
                    NativeType::Tinyint => (value as i8).to_be_bytes().to_vec(),
                    NativeType::Smallint => (value as i16).to_be_bytes().to_vec(),
                    NativeType::Int => (value as i32).to_be_bytes().to_vec(),
                    _ => (value as i64).to_be_bytes().to_vec(),
                }
            }
        }
    }
}

/// FloatSumAggregate / FloatAvgAggregate: Kahan summation in doubles, the
/// plain sum kept for infinities, an exact sum once the double overflows.
#[derive(Default)]
struct Kahan {
    sum: f64,
    compensation: f64,
    simple: f64,
    big: Option<(BigInt, i32)>,
}

impl Kahan {
    fn add(&mut self, d: f64, avg: bool) {
        if let Some(b) = &self.big {
            self.big = Some(add(b, &exact_double(d)));
            return;
        }
        self.simple += d;
        let previous = self.sum;
        let tmp = d - self.compensation;
        let rounded = self.sum + tmp;
        self.compensation = (rounded - self.sum) - tmp;
        self.sum = rounded;
        if avg && self.sum.is_infinite() && !d.is_infinite() {
            self.big = Some(add(&exact_double(previous), &exact_double(d)));
        }
    }

    fn finish(self, avg: bool, count: usize) -> f64 {
        if avg && count == 0 {
            return 0.0;
        }
        if let Some((u, s)) = self.big {
            // bigSum.divide(count, HALF_EVEN).doubleValue()
            let q = divide_half_even(&u, &BigInt::from(count));
            return format!("{q}e{}", -i64::from(s)).parse().unwrap_or(f64::NAN);
        }
        let tmp = self.sum + self.compensation;
        let total = if tmp.is_nan() && self.simple.is_infinite() {
            self.simple
        } else {
            tmp
        };
        if avg {
            total / count as f64
        } else {
            total
        }
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
