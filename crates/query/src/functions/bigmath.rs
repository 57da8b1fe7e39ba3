//! `exp`, `log` and `log10` of decimals as Cassandra 5.0 computes them
//! (`DecimalType`, through big-math's `BigDecimalMath`): to as many
//! significant digits as the argument has, at least 32, rounded HALF_EVEN.
//! Computed in fixed point with guard digits, then rounded.

use num_bigint::BigInt;
use num_traits::{Signed, Zero};

fn pow10(n: u32) -> BigInt {
    num_traits::pow(BigInt::from(10), n as usize)
}

fn digits(u: &BigInt) -> i64 {
    if u.is_zero() {
        1
    } else {
        u.abs().to_string().len() as i64
    }
}

/// The precision Cassandra asks for: the argument's, at least 32.
pub(crate) fn precision_for(u: &BigInt) -> u32 {
    digits(u).clamp(32, 10_000) as u32
}

/// A decimal `(unscaled, scale)` as fixed point with `f` fraction digits.
fn to_fixed(u: &BigInt, s: i32, f: u32) -> BigInt {
    let shift = i64::from(f) - i64::from(s);
    if shift >= 0 {
        u * pow10(shift as u32)
    } else {
        u / pow10((-shift) as u32)
    }
}

/// Rounds fixed point `v` (`f` fraction digits) to `p` significant digits,
/// HALF_EVEN.
fn round_significant(v: BigInt, f: u32, p: u32) -> (BigInt, i32) {
    let drop = digits(&v) - i64::from(p);
    if drop <= 0 {
        return (v, f as i32);
    }
    let divisor = pow10(drop as u32);
    let q = &v / &divisor;
    let r = &v - &q * &divisor;
    let twice = r.abs() * 2;
    let away = twice > divisor || (twice == divisor && (&q % 2u8) != BigInt::zero());
    let q = if away {
        if v.is_negative() {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    };
    // Rounding up may add a digit (999.. -> 1000..): keep p digits.
    if digits(&q) > i64::from(p) {
        return (q / 10, f as i32 - drop as i32 - 1);
    }
    (q, f as i32 - drop as i32)
}

/// e^y for fixed point |y| < 1 (Taylor series).
fn exp_small(y: &BigInt, one: &BigInt) -> BigInt {
    let mut sum = one.clone();
    let mut term = one.clone();
    let mut n = 1u32;
    loop {
        term = &term * y / (one * n);
        if term.is_zero() {
            return sum;
        }
        sum += &term;
        n += 1;
    }
}

/// `exp` of a decimal.
pub(crate) fn exp(u: &BigInt, s: i32) -> (BigInt, i32) {
    let p = precision_for(u);
    if u.is_negative() {
        // e^-x = 1 / e^x, with enough digits for a tiny result.
        let (eu, es) = exp(&-u, s);
        let f = p + 20 + (digits(&eu) - i64::from(es)).max(0) as u32;
        let one = pow10(f);
        let denominator = to_fixed(&eu, es, f);
        let v = &one * &one / denominator;
        return round_significant(v, f, p);
    }
    // Integer digits of the result: about x / ln 10.
    let x_float: f64 = format!("{u}e{}", -i64::from(s)).parse().unwrap_or(0.0);
    let int_digits = (x_float / std::f64::consts::LN_10).ceil().max(0.0) as u32;
    let f = p + 30;
    let one = pow10(f);
    let x = to_fixed(u, s, f);
    // Halve until below 1/2, then square back.
    let mut k = 0u32;
    let mut y = x;
    while y > &one / 2u8 {
        y /= 2u8;
        k += 1;
    }
    let guard = k / 3 + 5;
    let f2 = f + guard + int_digits;
    let one2 = pow10(f2);
    let y2 = &y * pow10(guard + int_digits);
    let mut r = exp_small(&y2, &one2);
    for _ in 0..k {
        r = &r * &r / &one2;
    }
    round_significant(r, f2, p)
}

/// atanh(1/n) in fixed point (`one` = 10^f).
fn atanh_inverse(n: u32, one: &BigInt) -> BigInt {
    let n2 = BigInt::from(n) * n;
    let mut power = one / n; // 1/n^(2k+1)
    let mut sum = power.clone();
    let mut k = 1u32;
    loop {
        power /= &n2;
        let term = &power / (2 * k + 1);
        if term.is_zero() {
            return sum;
        }
        sum += term;
        k += 1;
    }
}

/// ln of a fixed point z in [1, 2): 2 atanh((z-1)/(z+1)).
fn ln_near_one(z: &BigInt, one: &BigInt) -> BigInt {
    let t = (z - one) * one / (z + one);
    let t2 = &t * &t / one;
    let mut power = t.clone();
    let mut sum = t;
    let mut k = 1u32;
    loop {
        power = &power * &t2 / one;
        let term = &power / (2 * k + 1);
        if term.is_zero() {
            return sum * 2;
        }
        sum += term;
        k += 1;
    }
}

/// ln(x) in fixed point with `f` fraction digits, for x > 0.
fn ln_fixed(u: &BigInt, s: i32, f: u32) -> BigInt {
    let one = pow10(f);
    let ln2 = atanh_inverse(3, &one) * 2;
    let ln10 = &ln2 * 3 + atanh_inverse(9, &one) * 2;
    // x = y * 10^e with y in [1, 10).
    let e = digits(u) - 1 - i64::from(s);
    let y = to_fixed(u, (i64::from(s) + e) as i32, f);
    // y = z * 2^j with z in [1, 2).
    let mut z = y;
    let mut j = 0i64;
    while z >= &one * 2 {
        z /= 2u8;
        j += 1;
    }
    ln_near_one(&z, &one) + ln2 * j + ln10 * e
}

/// `log` of a positive decimal.
pub(crate) fn ln(u: &BigInt, s: i32) -> Option<(BigInt, i32)> {
    if !u.is_positive() {
        return None;
    }
    let p = precision_for(u);
    let f = p + 30;
    Some(round_significant(ln_fixed(u, s, f), f, p))
}

/// `log10` of a positive decimal.
pub(crate) fn log10(u: &BigInt, s: i32) -> Option<(BigInt, i32)> {
    if !u.is_positive() {
        return None;
    }
    let p = precision_for(u);
    let f = p + 30;
    let one = pow10(f);
    let ln2 = atanh_inverse(3, &one) * 2;
    let ln10 = &ln2 * 3 + atanh_inverse(9, &one) * 2;
    let v = ln_fixed(u, s, f) * &one / ln10;
    Some(round_significant(v, f, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str) -> (BigInt, i32) {
        let (int, frac) = text.split_once('.').unwrap_or((text, ""));
        (
            (int.to_string() + frac).parse().expect("digits"),
            frac.len() as i32,
        )
    }

    fn show((u, s): (BigInt, i32)) -> String {
        format!("{u}e{}", -s)
    }

    #[test]
    fn matches_cassandra() {
        // Recorded against Cassandra 5.0.6 (golden case `functions`).
        let (u, s) = dec("3.14159");
        assert_eq!(
            show(exp(&u, s)),
            show(dec("23.140631226954963164517207589888"))
        );
        assert_eq!(
            show(ln(&u, s).unwrap()),
            show(dec("1.1447290411851783812164125804362"))
        );
        assert_eq!(
            show(log10(&u, s).unwrap()),
            show(dec("0.49714950586112326857863885149637"))
        );
    }
}
