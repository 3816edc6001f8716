//! Exact rationals (Python's `Fraction`), for the realized ε of composed probabilities.

use std::ops::{Add, Div, Mul, Sub};

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{One, Signed, Zero};

use crate::pymath;

/// An exact rational, always reduced, with a positive denominator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rational {
    num: BigInt,
    den: BigInt,
}

impl Rational {
    /// `n/d`, reduced (`d` non-zero).
    pub(crate) fn new(n: BigInt, d: BigInt) -> Self {
        let (mut n, mut d) = (n, d);
        if d.is_negative() {
            n = -n;
            d = -d;
        }
        let g = n.gcd(&d);
        if g > BigInt::one() {
            n /= &g;
            d /= &g;
        }
        Rational { num: n, den: d }
    }

    /// `math.fsum`: the correctly rounded sum of finite doubles.
    pub(crate) fn fsum(xs: impl IntoIterator<Item = f64>) -> f64 {
        xs.into_iter().fold(Rational::int(0), |acc, x| &acc + &Rational::of(x)).to_f64()
    }

    /// An integer.
    pub(crate) fn int(n: i64) -> Self {
        Rational { num: BigInt::from(n), den: BigInt::one() }
    }

    /// The exact value of a finite double (`Fraction(x)`).
    pub(crate) fn of(x: f64) -> Self {
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let mut m = bits & 0xf_ffff_ffff_ffff;
        let e = if biased == 0 {
            -1074
        } else {
            m |= 1 << 52;
            biased - 1075
        };
        let mut big = BigInt::from(m);
        if bits >> 63 != 0 {
            big = -big;
        }
        if e >= 0 {
            Rational::new(big << e as usize, BigInt::one())
        } else {
            Rational::new(big, BigInt::one() << (-e) as usize)
        }
    }

    /// How the integer `i` compares with this rational.
    pub(crate) fn cmp_int(&self, i: &BigInt) -> std::cmp::Ordering {
        (i * &self.den).cmp(&self.num)
    }

    /// `float(Fraction)`: correctly rounded (a quotient of 70+ bits with a sticky bit, rounded once).
    pub(crate) fn to_f64(&self) -> f64 {
        if self.num.is_zero() {
            return 0.0;
        }
        let a = self.num.abs();
        let shift = 0i64.max(70 - (a.bits() as i64 - self.den.bits() as i64));
        let (q, r) = (a << shift as usize).div_rem(&self.den);
        let mut q = q << 1usize;
        if !r.is_zero() {
            q |= BigInt::one();
        }
        let v = pymath::nearest_double(&q, (-shift - 1) as i32);
        if self.num.sign() == Sign::Minus {
            -v
        } else {
            v
        }
    }

    /// `math.log(num) - math.log(den)` of the reduced fraction, as Python computes the log of a ratio of two ints
    /// (each int converted to the nearest double first).
    pub(crate) fn log_ratio(&self) -> f64 {
        pymath::log(pymath::nearest_double(&self.num, 0)) - pymath::log(pymath::nearest_double(&self.den, 0))
    }
}

impl Add for &Rational {
    type Output = Rational;
    fn add(self, o: &Rational) -> Rational {
        Rational::new(&self.num * &o.den + &o.num * &self.den, &self.den * &o.den)
    }
}

impl Sub for &Rational {
    type Output = Rational;
    fn sub(self, o: &Rational) -> Rational {
        Rational::new(&self.num * &o.den - &o.num * &self.den, &self.den * &o.den)
    }
}

impl Mul for &Rational {
    type Output = Rational;
    fn mul(self, o: &Rational) -> Rational {
        Rational::new(&self.num * &o.num, &self.den * &o.den)
    }
}

impl Div for &Rational {
    type Output = Rational;
    fn div(self, o: &Rational) -> Rational {
        Rational::new(&self.num * &o.den, &self.den * &o.num)
    }
}
