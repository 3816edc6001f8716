//! `math.exp`, `math.log`, `math.log1p` and `math.expm1` as CPython computes them on the platform the Python client
//! runs on (glibc), so that derived probabilities and costs are the same doubles in every client and on every
//! platform (docs/conformance.md section 5).
//!
//! glibc's `exp` and `log` are within about 0.502 ulp, so nearly always correctly rounded; Apple's, Microsoft's and
//! musl's may differ in the last bit. `exp` and `log` here are correctly rounded: fixed-point arithmetic on
//! [`num_bigint::BigInt`] with 256 fractional bits, then one rounding half to even. They cost microseconds and run
//! for parameters, never per report. glibc's `log1p` and `expm1` are fdlibm's: those are the `libm` crate's (a port
//! of the same code), as they are.

use std::sync::OnceLock;

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};

const P: usize = 256;

struct Constants {
    one: BigInt,
    ln2: BigInt,
    half_ln2: BigInt,
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
        Constants { one: BigInt::one() << P, half_ln2: &ln2 >> 1usize, ln2, sqrt2: (BigInt::from(2) << (2 * P)).sqrt() }
    })
}

fn mul(a: &BigInt, b: &BigInt) -> BigInt {
    // Division truncates toward zero, as Java's BigInteger does.
    (a * b) / &constants().one
}

/// The exact value of a finite double: `x = m·2^e`.
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

/// The double nearest to `m·2^e`, half to even, with subnormals and overflow (`m·2^e` exactly, rounded once).
pub(crate) fn nearest_double(m: &BigInt, e: i32) -> f64 {
    if m.is_zero() {
        return 0.0;
    }
    let neg = m.sign() == Sign::Minus;
    let a = m.abs();
    let top = a.bits() as i64 - 1 + e as i64;
    if top > 1023 {
        return if neg { f64::NEG_INFINITY } else { f64::INFINITY };
    }
    let lsb = (top - 52).max(-1074);
    let shift = lsb - e as i64;
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
    // q ≤ 2^53: exact as a double; the scaling by a power of two is exact unless it overflows.
    let r = q.to_f64().unwrap_or(f64::INFINITY) * pow2(lsb);
    if neg {
        -r
    } else {
        r
    }
}

/// `2^k` as a double for `-1074 ≤ k ≤ 1023`, exactly (below the normal range, `2^(k+64)·2^-64`: the product of
/// two powers of two is exact down to the smallest subnormal).
fn pow2(k: i64) -> f64 {
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(((k + 64 + 1023) as u64) << 52) * f64::from_bits(((1023 - 64) as u64) << 52)
    }
}

fn exp_small(r: &BigInt) -> BigInt {
    let c = constants();
    let mut term = c.one.clone();
    let mut sum = c.one.clone();
    let mut n = 1u64;
    while !term.is_zero() {
        term = mul(&term, r) / BigInt::from(n);
        sum += &term;
        n += 1;
    }
    sum
}

/// Python's `math.exp(x)`, correctly rounded.
pub(crate) fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x == f64::INFINITY || x > 709.8 {
        return f64::INFINITY;
    }
    if x == f64::NEG_INFINITY || x < -745.2 {
        return 0.0;
    }
    if x.abs() < pow2(-60) {
        return 1.0 + x;
    }
    let c = constants();
    let fx = to_fixed(x);
    // Truncating division, as Java's BigInteger divide.
    let mut k = &fx / &c.ln2;
    let mut r = &fx - &k * &c.ln2;
    if r > c.half_ln2 {
        r -= &c.ln2;
        k += 1;
    } else if r < -&c.half_ln2 {
        r += &c.ln2;
        k -= 1;
    }
    nearest_double(&exp_small(&r), k.to_i32().unwrap_or(0) - P as i32)
}

fn log_near1(v: &BigInt) -> BigInt {
    let c = constants();
    let s = ((v - &c.one) << P) / (v + &c.one);
    let s2 = mul(&s, &s);
    let mut power = s;
    let mut sum = BigInt::zero();
    let mut k = 1u64;
    while !power.is_zero() {
        sum += &power / BigInt::from(k);
        power = mul(&power, &s2);
        k += 2;
    }
    sum << 1usize
}

/// Python's `math.log(x)` of a float, correctly rounded; NaN for `x < 0` or NaN (Python raises there).
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
    let len = m.bits() as i64;
    let mut v =
        if len - 1 > P as i64 { m >> (len - 1 - P as i64) as usize } else { m << (P as i64 - (len - 1)) as usize };
    let mut k = len - 1 + e as i64;
    if v > c.sqrt2 {
        v >>= 1usize;
        k += 1;
    }
    nearest_double(&(BigInt::from(k) * &c.ln2 + log_near1(&v)), -(P as i32))
}

/// Python's `math.log1p(x)` (glibc's is fdlibm's).
pub(crate) fn log1p(x: f64) -> f64 {
    libm::log1p(x)
}

/// Python's `math.expm1(x)` (glibc's is fdlibm's).
pub(crate) fn expm1(x: f64) -> f64 {
    libm::expm1(x)
}

/// `logistic_tail(x) = 1/(1 + e^x)`, with `e^-x` once `e^x` would overflow (x ≥ 700).
pub(crate) fn logistic_tail(x: f64) -> f64 {
    if x < 700.0 {
        1.0 / (1.0 + exp(x))
    } else {
        exp(-x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator of doubles.
    fn doubles(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
            })
            .collect()
    }

    #[test]
    fn exact_values_and_edges() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(1.0), std::f64::consts::E);
        assert_eq!(log(std::f64::consts::E), 1.0);
        assert_eq!(log(2.0), std::f64::consts::LN_2);
        assert_eq!(log(1.0), 0.0);
        assert!(exp(709.78).is_finite());
        assert_eq!(exp(710.0), f64::INFINITY);
        assert_eq!(exp(-746.0), 0.0);
        assert_eq!(exp(-745.0), 5e-324);
        assert_eq!(log(5e-324), -744.4400719213812);
        assert!(log(-1.0).is_nan() && exp(f64::NAN).is_nan());
        assert_eq!(log(0.0), f64::NEG_INFINITY);
        assert_eq!(nearest_double(&BigInt::from(3), -1), 1.5);
        assert_eq!(nearest_double(&BigInt::from(1), -1075), 0.0); // a tie at the smallest subnormal: to even (0)
        assert_eq!(nearest_double(&BigInt::from(3), -1075), 1e-323); // 1.5 ulps: to even (2 ulps)
    }

    /// Cases where glibc 2.36's `exp` is 1 ulp off, checked against a 80-digit `decimal` evaluation: the port gives
    /// the correctly rounded double.
    #[test]
    fn correctly_rounded_where_glibc_is_not() {
        for (x, bits) in [(46.942511706174145, 0x442a6c517fe1d964u64), (-566.176318503051, 0x0ce2210abe215fd1)] {
            assert_eq!(exp(x).to_bits(), bits, "exp({x})");
        }
    }

    /// The port and this platform's libm (glibc: under 1 ulp) agree but in rare cases, by one ulp at most.
    #[test]
    fn within_one_ulp_of_the_platform() {
        let mut off = 0;
        for x in doubles(4000, -50.0, 50.0, 1).into_iter().chain(doubles(2000, -745.0, 709.0, 2)) {
            let (a, b) = (exp(x), x.exp());
            if a != b {
                off += 1;
                assert!(a.to_bits().abs_diff(b.to_bits()) <= 1, "exp({x}): {a} vs {b}");
            }
        }
        for t in doubles(4000, -700.0, 690.0, 3) {
            let x = t.exp();
            let (a, b) = (log(x), x.ln());
            if a != b {
                off += 1;
                assert!(a.to_bits().abs_diff(b.to_bits()) <= 1, "log({x}): {a} vs {b}");
            }
        }
        assert!(off <= 30, "{off} of 10000 differ");
    }
}
