//! Arithmetic operators as Cassandra 5.0 has them (`OperationFcts`): one
//! native function per operator and pair of operand types (`_add(int,
//! bigint)`, ...), chosen by its `FunctionResolver`, computing in the
//! result type (the wider of the two, floating point when either is) with
//! Java's semantics; timestamps and dates plus or minus a duration; text
//! concatenation.

use num_bigint::BigInt;
use num_traits::{Signed, Zero};
use rocksandra_cql::ast::Expr;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;

use super::{double_to_decimal, is_value_compatible, Assignment, AssignmentTest, BinaryOp, Num};
use crate::error::{QueryError, Result};

use NativeType as N;

/// An operand as the resolver sees it: a selector or column of a known
/// type, or a term whose type follows from the function chosen.
#[derive(Clone, Copy)]
pub(crate) enum Operand<'a> {
    Typed(&'a CqlType),
    Term(&'a Expr, AssignmentTest),
}

impl Operand<'_> {
    fn test(&self, param: NativeType) -> Assignment {
        let param = CqlType::Native(param);
        match self {
            Operand::Typed(ty) if ty.unfrozen() == &param => Assignment::Exact,
            Operand::Typed(ty) if is_value_compatible(&param, ty) => Assignment::Weak,
            Operand::Typed(_) => Assignment::NotAssignable,
            Operand::Term(e, test) => test(e, &param),
        }
    }

    fn is_marker(&self) -> bool {
        matches!(self, Operand::Term(Expr::Bind(_), _))
    }
}

/// One operation function: `left op right -> result`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Operation {
    pub op: BinaryOp,
    pub left: NativeType,
    pub right: NativeType,
    pub result: NativeType,
}

fn is_floating(t: NativeType) -> bool {
    matches!(t, N::Float | N::Double | N::Decimal)
}

fn size(t: NativeType) -> usize {
    match t {
        N::Tinyint => 1,
        N::Smallint => 2,
        N::Int | N::Float => 4,
        N::Bigint | N::Double | N::Counter => 8,
        _ => usize::MAX,
    }
}

/// `OperationFcts.returnType`.
pub(crate) fn return_type(left: NativeType, right: NativeType) -> NativeType {
    let size = size(left).max(size(right));
    if is_floating(left) || is_floating(right) {
        match size {
            4 => N::Float,
            8 => N::Double,
            _ => N::Decimal,
        }
    } else {
        match size {
            1 => N::Tinyint,
            2 => N::Smallint,
            4 => N::Int,
            8 => N::Bigint,
            _ => N::Varint,
        }
    }
}

/// The operation functions of an operator, in Cassandra's order.
fn candidates(op: BinaryOp) -> Vec<Operation> {
    let mut all = Vec::new();
    for left in NativeType::NUMERIC {
        for right in NativeType::NUMERIC {
            all.push(Operation {
                op,
                left,
                right,
                result: return_type(left, right),
            });
        }
    }
    if matches!(op, BinaryOp::Add | BinaryOp::Subtract) {
        for temporal in [N::Timestamp, N::Date] {
            all.push(Operation {
                op,
                left: temporal,
                right: N::Duration,
                result: temporal,
            });
        }
    }
    if op == BinaryOp::Add {
        for text in [N::Ascii, N::Text] {
            all.push(Operation {
                op,
                left: text,
                right: text,
                result: text,
            });
        }
    }
    all
}

/// `FunctionResolver.pickBestMatch` for an operator: the first exact
/// match, or the only weakly assignable candidate (the one of the
/// receiver's type when several are and no operand is a bind marker).
/// `texts` are the operands as written, for the messages.
pub(crate) fn resolve(
    op: BinaryOp,
    left: Operand<'_>,
    right: Operand<'_>,
    texts: (&str, &str),
    receiver: Option<&CqlType>,
) -> Result<Operation> {
    let mut compatible = Vec::new();
    for candidate in candidates(op) {
        if let Some(receiver) = receiver {
            let result = CqlType::Native(candidate.result);
            if receiver.unfrozen() != &result && !is_value_compatible(receiver, &result) {
                continue;
            }
        }
        match (left.test(candidate.left), right.test(candidate.right)) {
            (Assignment::NotAssignable, _) | (_, Assignment::NotAssignable) => {}
            (Assignment::Exact, Assignment::Exact) => return Ok(candidate),
            _ => compatible.push(candidate),
        }
    }
    match compatible.as_slice() {
        [] => Err(QueryError::invalid(format!(
            "the '{}' operation is not supported between {} and {}",
            op.symbol(),
            texts.0,
            texts.1
        ))),
        [only] => Ok(*only),
        several => {
            if let (Some(CqlType::Native(r)), false) = (
                receiver.map(CqlType::unfrozen),
                left.is_marker() || right.is_marker(),
            ) {
                if let Some(found) = several.iter().find(|c| c.left == *r && c.right == *r) {
                    return Ok(*found);
                }
            }
            Err(QueryError::invalid(format!(
                "Ambiguous '{}' operation with args {} and {}: use type hint to disambiguate, example '(int) ?'",
                op.symbol(),
                texts.0,
                texts.1
            )))
        }
    }
}

/// How an operand prints in the resolver's messages (`NULL` for null).
pub(crate) fn operand_text(e: &Expr) -> String {
    match e {
        Expr::Literal(rocksandra_cql::ast::Literal::Null) => "NULL".into(),
        other => other.to_string(),
    }
}

impl Operation {
    pub(crate) fn function_name(&self) -> &'static str {
        match self.op {
            BinaryOp::Add => "_add",
            BinaryOp::Subtract => "_substract",
            BinaryOp::Multiply => "_multiply",
            BinaryOp::Divide => "_divide",
            BinaryOp::Remainder => "_modulo",
        }
    }

    /// `OperationExecutionException`: a FUNCTION_FAILURE naming the
    /// operand types.
    fn failed(&self, reason: &str) -> QueryError {
        QueryError::FunctionFailure {
            keyspace: "system".into(),
            function: self.function_name().into(),
            arg_types: vec![self.left.name().into(), self.right.name().into()],
            message: format!(
                "the operation '{} {} {}' failed: {reason}",
                self.left.name(),
                self.op.symbol(),
                self.right.name()
            ),
        }
    }

    /// Runs the operation on serialized operands (null or empty: null).
    pub(crate) fn execute(&self, a: &[u8], b: &[u8]) -> Result<Option<Vec<u8>>> {
        if a.is_empty() || b.is_empty() {
            return Ok(None);
        }
        match self.result {
            N::Text | N::Ascii => {
                let mut joined = a.to_vec();
                joined.extend_from_slice(b);
                Ok(Some(joined))
            }
            N::Timestamp | N::Date => self.temporal(a, b).map(Some),
            _ => {
                let x = Num::decode(&CqlType::Native(self.left), a)?;
                let y = Num::decode(&CqlType::Native(self.right), b)?;
                Ok(Some(self.numeric(&x, &y)?.encode()))
            }
        }
    }

    fn numeric(&self, x: &Num, y: &Num) -> Result<Num> {
        let op = self.op;
        macro_rules! int_op {
            ($a:expr, $b:expr, $variant:path) => {{
                let (a, b) = ($a, $b);
                $variant(match op {
                    BinaryOp::Add => a.wrapping_add(b),
                    BinaryOp::Subtract => a.wrapping_sub(b),
                    BinaryOp::Multiply => a.wrapping_mul(b),
                    BinaryOp::Divide | BinaryOp::Remainder if b == 0 => {
                        return Err(self.failed("/ by zero"))
                    }
                    BinaryOp::Divide => a.wrapping_div(b),
                    BinaryOp::Remainder => a.wrapping_rem(b),
                })
            }};
        }
        macro_rules! float_op {
            ($a:expr, $b:expr, $variant:path) => {{
                let (a, b) = ($a, $b);
                $variant(match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Subtract => a - b,
                    BinaryOp::Multiply => a * b,
                    BinaryOp::Divide => a / b,
                    BinaryOp::Remainder => a % b,
                })
            }};
        }
        Ok(match self.result {
            N::Tinyint => int_op!(x.to_i32() as i8, y.to_i32() as i8, Num::Tinyint),
            N::Smallint => int_op!(x.to_i32() as i16, y.to_i32() as i16, Num::Smallint),
            N::Int => int_op!(x.to_i32(), y.to_i32(), Num::Int),
            N::Bigint => int_op!(x.to_i64(), y.to_i64(), Num::Bigint),
            N::Counter => int_op!(x.to_i64(), y.to_i64(), Num::Counter),
            N::Float => float_op!(x.to_f64() as f32, y.to_f64() as f32, Num::Float),
            N::Double => float_op!(x.to_f64(), y.to_f64(), Num::Double),
            N::Varint => {
                let (a, b) = (to_big_integer(x), to_big_integer(y));
                Num::Varint(match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Subtract => a - b,
                    BinaryOp::Multiply => a * b,
                    BinaryOp::Divide | BinaryOp::Remainder if b.is_zero() => {
                        return Err(self.failed("BigInteger divide by zero"))
                    }
                    BinaryOp::Divide => a / b,
                    BinaryOp::Remainder => a % b,
                })
            }
            _ => {
                let a = to_big_decimal(x).map_err(|e| self.failed(&e))?;
                let b = to_big_decimal(y).map_err(|e| self.failed(&e))?;
                let (u, s) = match op {
                    BinaryOp::Add | BinaryOp::Subtract => {
                        let scale = a.1.max(b.1);
                        let (ua, ub) = (align(&a, scale), align(&b, scale));
                        (
                            if op == BinaryOp::Add {
                                ua + ub
                            } else {
                                ua - ub
                            },
                            scale,
                        )
                    }
                    BinaryOp::Multiply => (&a.0 * &b.0, a.1.saturating_add(b.1)),
                    BinaryOp::Divide => {
                        if b.0.is_zero() {
                            return Err(self.failed("BigInteger divide by zero"));
                        }
                        decimal_divide(&a, &b)
                    }
                    BinaryOp::Remainder => {
                        if b.0.is_zero() {
                            return Err(self.failed(if a.0.is_zero() {
                                "Division undefined"
                            } else {
                                "Division by zero"
                            }));
                        }
                        let scale = a.1.max(b.1);
                        let (ua, ub) = (align(&a, scale), align(&b, scale));
                        let quotient = &ua / &ub;
                        (ua - quotient * ub, scale)
                    }
                };
                Num::Decimal(u, s)
            }
        })
    }

    fn temporal(&self, a: &[u8], b: &[u8]) -> Result<Vec<u8>> {
        let duration = Value::deserialize(&CqlType::Native(N::Duration), b)?;
        let Value::Duration {
            months,
            days,
            nanos,
        } = duration
        else {
            return Err(QueryError::Server("not a duration".into()));
        };
        let sign = if self.op == BinaryOp::Subtract { -1 } else { 1 };
        let (m, d, n) = (
            i64::from(months) * sign,
            i64::from(days) * sign,
            nanos * sign,
        );
        if self.result == N::Date {
            if nanos != 0 {
                return Err(self.failed(&format!(
                    "The duration must have a day precision. Was: {duration}"
                )));
            }
            let Value::Date(day) = Value::deserialize(&CqlType::Native(N::Date), a)? else {
                return Err(QueryError::Server("not a date".into()));
            };
            let millis = (i64::from(day) - (1 << 31)) * MILLIS_PER_DAY;
            let result = add_to(millis, m, d, 0);
            let day = result.div_euclid(MILLIS_PER_DAY) + (1 << 31);
            return Ok((day as u32).to_be_bytes().to_vec());
        }
        let millis = i64::from_be_bytes(a.try_into().unwrap_or([0; 8]));
        Ok(add_to(millis, m, d, n).to_be_bytes().to_vec())
    }
}

const MILLIS_PER_DAY: i64 = 86_400_000;

/// `Duration.addTo` on a UTC time: months through the calendar (the day of
/// the month kept, or the month's last day), then days, then nanoseconds
/// truncated to milliseconds.
fn add_to(millis: i64, months: i64, days: i64, nanos: i64) -> i64 {
    if months == 0 {
        return millis
            .wrapping_add(days.wrapping_mul(MILLIS_PER_DAY))
            .wrapping_add(nanos / 1_000_000);
    }
    let day = millis.div_euclid(MILLIS_PER_DAY);
    let time_of_day = millis.rem_euclid(MILLIS_PER_DAY);
    let (y, m, d) = crate::term::literal::civil_from_days(day);
    let total = y * 12 + (i64::from(m) - 1) + months;
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    let last = days_in_month(ny, nm as u32);
    let nd = d.min(last);
    let new_day = days_from_civil(ny, nm as u32, nd);
    (new_day + days) * MILLIS_PER_DAY + time_of_day + nanos / 1_000_000
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `IntegerType.toBigInteger`: a varint as is, anything else its `longValue()`.
fn to_big_integer(n: &Num) -> BigInt {
    match n {
        Num::Varint(v) => v.clone(),
        other => BigInt::from(other.to_i64()),
    }
}

/// `DecimalType.toBigDecimal`: decimals and varints exactly, anything else
/// through its `doubleValue()` (`BigDecimal.valueOf`).
fn to_big_decimal(n: &Num) -> std::result::Result<(BigInt, i32), String> {
    match n {
        Num::Decimal(u, s) => Ok((u.clone(), *s)),
        Num::Varint(v) => Ok((v.clone(), 0)),
        other => {
            let d = other.to_f64();
            if d.is_nan() {
                return Err("A NaN cannot be converted into a decimal".into());
            }
            if d.is_infinite() {
                return Err("An infinite number cannot be converted into a decimal".into());
            }
            double_to_decimal(d).map_err(|e| e.to_string())
        }
    }
}

fn pow10(n: u32) -> BigInt {
    num_traits::pow(BigInt::from(10), n as usize)
}

/// The unscaled value of a decimal at a larger or equal scale.
fn align(d: &(BigInt, i32), scale: i32) -> BigInt {
    &d.0 * pow10((scale - d.1).max(0) as u32)
}

/// `BigDecimal.precision()`: the digits of the unscaled value.
fn precision(u: &BigInt) -> i32 {
    if u.is_zero() {
        1
    } else {
        u.abs().to_string().len() as i32
    }
}

/// `DecimalType.divide`: at least 32 digits of scale (more for small
/// quotients, at most 1000), HALF_UP, trailing zeros stripped.
pub(crate) fn decimal_divide(a: &(BigInt, i32), b: &(BigInt, i32)) -> (BigInt, i32) {
    const MIN_SCALE: i32 = 32;
    let first = (precision(&a.0) - a.1) - (precision(&b.0) - b.1);
    let scale = (MIN_SCALE - first).max(a.1).max(b.1).clamp(MIN_SCALE, 1000);
    // a / b at `scale`: a.u * 10^(scale - a.s + b.s) / b.u, rounded half up.
    let shift = scale - a.1 + b.1;
    let (numerator, denominator) = if shift >= 0 {
        (&a.0 * pow10(shift as u32), b.0.clone())
    } else {
        (a.0.clone(), &b.0 * pow10((-shift) as u32))
    };
    let quotient = &numerator / &denominator;
    let remainder = &numerator - &quotient * &denominator;
    let mut q = quotient;
    if (remainder.abs() * 2) >= denominator.abs() {
        let negative = numerator.is_negative() != denominator.is_negative();
        q += if negative { -1 } else { 1 };
    }
    strip_trailing_zeros(q, scale)
}

/// `BigDecimal.stripTrailingZeros` (zero is `0`, scale 0).
pub(crate) fn strip_trailing_zeros(mut u: BigInt, mut scale: i32) -> (BigInt, i32) {
    if u.is_zero() {
        return (u, 0);
    }
    let ten = BigInt::from(10);
    while (&u % &ten).is_zero() {
        u /= &ten;
        scale -= 1;
    }
    (u, scale)
}

/// `_negate`: a number of the same type (integers wrap).
pub(crate) fn negate(ty: NativeType, bytes: &[u8]) -> Result<Option<Vec<u8>>> {
    if bytes.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        Num::decode(&CqlType::Native(ty), bytes)?.negate().encode(),
    ))
}
