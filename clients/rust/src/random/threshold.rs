//! The threshold of a Bernoulli draw (docs/randomness.md).

use crate::error::{Error, Result};

/// The threshold `T = floor(p·2^64)` of `B(p)`: `None` when `T = 2^64` (`p = 1`), else `T`. Scaling a double by
/// 2^64 is exact, and so is its floor below 2^64. `p` must be in [0, 1] (NaN refused).
pub fn threshold(p: f64) -> Result<Option<u64>> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::value(format!("p must be in [0, 1], got {p:?}")));
    }
    let scaled = p * 18446744073709551616.0; // 2^64, exact
    if scaled >= 18446744073709551616.0 {
        return Ok(None);
    }
    Ok(Some(scaled as u64))
}

/// The probability a client's `B(p)` really has: `floor(p·2^64)/2^64` (`realized_probability`).
pub fn realized(p: f64) -> Result<f64> {
    Ok(match threshold(p)? {
        None => 1.0,
        // Below 2^64 the floor has at most 53 significant bits, so it converts exactly.
        Some(t) => t as f64 / 18446744073709551616.0,
    })
}

/// [`realized`] of a probability the caller has already checked to be in [0, 1].
pub(crate) fn realized_unchecked(p: f64) -> f64 {
    realized(p).unwrap_or(f64::NAN)
}
