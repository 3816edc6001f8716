//! Privacy costs (Python's `ldp.accounting.PrivacyCost`).

use std::fmt;
use std::ops::Add;

/// An (ε, δ) privacy cost.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PrivacyCost {
    /// ε, the privacy loss bound.
    pub epsilon: f64,
    /// δ, the probability the bound may fail (0 for pure ε-LDP).
    pub delta: f64,
}

impl PrivacyCost {
    /// No cost.
    pub const ZERO: PrivacyCost = PrivacyCost { epsilon: 0.0, delta: 0.0 };

    /// A pure ε cost.
    pub const fn pure(epsilon: f64) -> Self {
        PrivacyCost { epsilon, delta: 0.0 }
    }

    /// An (ε, δ) cost.
    pub const fn new(epsilon: f64, delta: f64) -> Self {
        PrivacyCost { epsilon, delta }
    }

    /// Both parts at most `cap`'s, with Python's relative slack of 1e-9 (`PrivacyCost.fits_within`):
    /// `a <= b·(1 + 1e-9) + 1e-15` for ε and for δ.
    pub fn fits_within(&self, cap: &PrivacyCost) -> bool {
        fn fits(a: f64, b: f64) -> bool {
            a <= b * (1.0 + 1e-9) + 1e-15
        }
        fits(self.epsilon, cap.epsilon) && fits(self.delta, cap.delta)
    }
}

impl Add for PrivacyCost {
    type Output = PrivacyCost;
    fn add(self, o: PrivacyCost) -> PrivacyCost {
        PrivacyCost { epsilon: self.epsilon + o.epsilon, delta: self.delta + o.delta }
    }
}

impl fmt::Display for PrivacyCost {
    /// `ε=<x>`, then `, δ=<x>` when δ is not 0 (each the shortest text that reads back as the double).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ε={:?}", self.epsilon)?;
        if self.delta != 0.0 {
            write!(f, ", δ={:?}", self.delta)?;
        }
        Ok(())
    }
}
