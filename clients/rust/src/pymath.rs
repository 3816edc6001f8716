//! `math.exp`, `math.log`, `math.log1p` and `math.expm1` as CPython computes them on the platform the Python client
//! runs on (glibc), so that derived probabilities and costs are the same doubles in every client and on every
//! platform (docs/conformance.md section 5). A port of the Kotlin client's `PyMath`.
//!
//! glibc's `exp` and `log` are within about 0.502 ulp, so nearly always correctly rounded; Apple's, Microsoft's and
//! musl's may differ in the last bit. `exp` and `log` here are correctly rounded: fixed-point arithmetic on
//! [`num_bigint::BigInt`] with [`P`] = 256 fractional bits, then one rounding half to even ([`nearest_double`]).
//! They cost microseconds and run for parameters, never per report. glibc's `log1p` and `expm1` are fdlibm's: those
//! are the `libm` crate's (a port of the same code), as they are.
//!
//! Fixed-point values are `BigInt`s `v` standing for `v·2^-P`. Divisions truncate toward zero and right shifts
//! floor, as `java.math.BigInteger`'s do, so that every intermediate is the Kotlin port's.

use std::sync::OnceLock;

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};

/// Fractional bits of the fixed-point arithmetic.
const P: usize = 256;

struct Constants {
    /// 1, i.e. `2^P`.
    one: BigInt,
    /// ln 2.
    ln2: BigInt,
    /// ln 2 / 2.
    half_ln2: BigInt,
    /// √2, floored.
    sqrt2: BigInt,
}

fn constants() -> &'static Constants {
    static C: OnceLock<Constants> = OnceLock::new();
    C.get_or_init(|| {
        // ln 2 with P fractional bits: Σ_{k≥1} 1/(k·2^k), summed with 32 guard bits.
        let one = BigInt::one() << (P + 32);
        let mut sum = BigInt::zero();
        for k in 1..P + 64 {
            sum += &one / (BigInt::from(k) << k);
        }
        let ln2 = sum >> 32usize;
        Constants {
            one: BigInt::one() << P,
            half_ln2: &ln2 >> 1usize,
            ln2,
            // floor(√(2·2^2P)) = floor(√2·2^P).
            sqrt2: (BigInt::from(2) << (2 * P)).sqrt(),
        }
    })
}

/// The fixed-point product `a·b/2^P`, truncated toward zero (Java's `BigInteger.divide` by `2^P`).
fn mul(a: &BigInt, b: &BigInt) -> BigInt {
    let p = a * b;
    if p.is_negative() {
        -((-p) >> P)
    } else {
        p >> P
    }
}

/// The exact value of a finite double: `x = m·2^e` (`e = -1074` for zeros and subnormals).
fn decompose(x: f64) -> (BigInt, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let mut m = bits & 0xf_ffff_ffff_ffff;
    let e = if biased == 0 {
        -1074
    } else {
        m |= 1 << 52;
        biased - 1075
    };
    let big = BigInt::from(m);
    (if bits >> 63 != 0 { -big } else { big }, e)
}

/// A finite double as a fixed-point value, floored to `P` fractional bits.
fn to_fixed(x: f64) -> BigInt {
    let (m, e) = decompose(x);
    let s = e + P as i32;
    if s >= 0 {
        m << s as usize
    } else {
        // An arithmetic shift floors, as Java's shiftRight does.
        m >> (-s) as usize
    }
}

/// The double nearest to `m·2^e`, half to even, with subnormals and overflow to ±∞ (`m·2^e` exactly, rounded
/// once). Zero gives `+0.0`; a negative `m` whose value rounds to zero gives `-0.0`.
pub(crate) fn nearest_double(m: &BigInt, e: i32) -> f64 {
    if m.is_zero() {
        return 0.0;
    }
    let neg = m.sign() == Sign::Minus;
    let a = m.abs();
    let top = a.bits() as i64 - 1 + i64::from(e);
    if top > 1023 {
        return if neg { f64::NEG_INFINITY } else { f64::INFINITY };
    }
    let r = if top < -1076 {
        // |m·2^e| < 2^(top+1) ≤ 2^-1076, under half the smallest subnormal: zero (what the general case gives, without
        // shifting by up to 2^31 bits).
        0.0
    } else {
        let lsb = (top - 52).max(-1074);
        let shift = lsb - i64::from(e); // ≥ bits − 53 ≥ −52
        let q = if shift > 0 {
            let mut q = &a >> shift as usize;
            let rem = &a - (&q << shift as usize);
            let half = BigInt::one() << (shift - 1) as usize;
            if rem > half || (rem == half && q.is_odd()) {
                q += 1;
            }
            q
        } else {
            a << (-shift) as usize
        };
        // q ≤ 2^53: exact as a double; the scaling by a power of two is exact unless it overflows (to ∞).
        q.to_f64().unwrap_or(f64::INFINITY) * pow2(lsb)
    };
    if neg {
        -r
    } else {
        r
    }
}

/// `2^k` as a double for `-1074 ≤ k ≤ 1023`, exactly (below the normal range, `2^(k+64)·2^-64`: the product of
/// two powers of two is exact down to the smallest subnormal).
fn pow2(k: i64) -> f64 {
    debug_assert!((-1074..=1023).contains(&k));
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(((k + 64 + 1023) as u64) << 52) * f64::from_bits(((1023 - 64) as u64) << 52)
    }
}

/// `e^r` for a fixed-point `|r| ≤ ln2/2`: the Taylor series `Σ_{n≥0} r^n/n!`, each term truncated, summed until a
/// term truncates to zero.
fn exp_small(r: &BigInt) -> BigInt {
    let c = constants();
    let mut term = c.one.clone();
    let mut sum = c.one.clone();
    let mut n = 1u64;
    while !term.is_zero() {
        term = mul(&term, r) / n;
        sum += &term;
        n += 1;
    }
    sum
}

/// Python's `math.exp(x)` as on glibc, but correctly rounded on every platform.
///
/// `x = k·ln2 + r` with an integer `k` and `|r| ≤ ln2/2` (in fixed point with 256 fractional bits), then
/// `e^x = 2^k·e^r` with `e^r` from its Taylor series ([`exp_small`]), rounded once to the nearest double, half to
/// even. NaN gives NaN, `x > 709.8` gives +∞ (beyond `ln(f64::MAX) ≈ 709.7827`), `x < -745.2` gives 0 (below
/// `ln(2^-1075) ≈ -745.1332`), and `|x| < 2^-60` gives `1 + x`.
pub(crate) fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x > 709.8 {
        return f64::INFINITY;
    }
    if x < -745.2 {
        return 0.0;
    }
    if x.abs() < pow2(-60) {
        return 1.0 + x;
    }
    let c = constants();
    let fx = to_fixed(x);
    // Truncating division, as Java's BigInteger.divide.
    let mut k = &fx / &c.ln2;
    let mut r = &fx - &k * &c.ln2;
    if r > c.half_ln2 {
        r -= &c.ln2;
        k += 1;
    } else if r < -&c.half_ln2 {
        r += &c.ln2;
        k -= 1;
    }
    // |k| ≤ 1076.
    nearest_double(&exp_small(&r), k.to_i32().unwrap_or(0) - P as i32)
}

/// `ln v` for a fixed-point `v` in `[√2/2, √2]`: `2·artanh(s) = 2·Σ_{j≥0} s^(2j+1)/(2j+1)` with `s = (v−1)/(v+1)`
/// (`|s| ≤ 0.172`), each term truncated, summed until a power of `s` truncates to zero.
fn log_near1(v: &BigInt) -> BigInt {
    let c = constants();
    let s = ((v - &c.one) << P) / (v + &c.one);
    let s2 = mul(&s, &s);
    let mut power = s;
    let mut sum = BigInt::zero();
    let mut k = 1u64;
    while !power.is_zero() {
        sum += &power / k;
        power = mul(&power, &s2);
        k += 2;
    }
    sum << 1usize
}

/// Python's `math.log(x)` (natural logarithm) of a float as on glibc, but correctly rounded on every platform.
///
/// `x = v·2^k` with `v` in `(√2/2, √2]` (exact, in fixed point with 256 fractional bits), then
/// `ln x = k·ln2 + ln v` with `ln v` from the `artanh` series ([`log_near1`]), rounded once to the nearest double,
/// half to even. Where Python raises, this returns what libm does: NaN for `x < 0` (−∞ included) and NaN, −∞ for
/// ±0; +∞ gives +∞ and 1 gives +0.
pub(crate) fn log(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return f64::INFINITY;
    }
    if x == 1.0 {
        return 0.0;
    }
    let c = constants();
    let (m, e) = decompose(x);
    let len = m.bits() as i64; // 1..=53
    let p = P as i64;
    let mut v = if len - 1 > p { m >> (len - 1 - p) as usize } else { m << (p - (len - 1)) as usize };
    let mut k = len - 1 + i64::from(e);
    if v > c.sqrt2 {
        v >>= 1usize;
        k += 1;
    }
    nearest_double(&(BigInt::from(k) * &c.ln2 + log_near1(&v)), -(P as i32))
}

/// Python's `math.log1p(x)`, `ln(1 + x)`: glibc's is fdlibm's, and so is the `libm` crate's (a port of the same
/// code, so the same double on every platform).
pub(crate) fn log1p(x: f64) -> f64 {
    libm::log1p(x)
}

/// Python's `math.expm1(x)`, `e^x − 1`: glibc's is fdlibm's, and so is the `libm` crate's (a port of the same
/// code, so the same double on every platform).
pub(crate) fn expm1(x: f64) -> f64 {
    libm::expm1(x)
}

/// `logistic_tail(x) = 1/(1 + e^x)` with this module's [`exp`], and `e^-x` once `e^x` would overflow (`x ≥ 700`),
/// as in docs/conformance.md.
pub(crate) fn logistic_tail(x: f64) -> f64 {
    if x < 700.0 {
        1.0 / (1.0 + exp(x))
    } else {
        exp(-x)
    }
}

#[cfg(test)]
mod tests;
