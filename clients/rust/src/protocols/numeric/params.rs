//! The parameters of `duchi`, `piecewise` and `hybrid`: the realized probabilities each draws with, and what a
//! report costs.

use serde_json::Value;

use super::{duchi_epsilon_of, next_probability, Bounds, HYBRID_THRESHOLD};
use crate::cost::PrivacyCost;
use crate::encoder::common_params;
use crate::error::{Refusal, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{realized_unchecked as realized, RandomSource};

/// Duchi's one-bit mechanism (`duchi`): `bit = B(unit(x)) XOR B(q)`, `q` the realized `σ(ε)` stepped up while its ε
/// exceeds ε.
#[derive(Debug)]
pub struct DuchiParams {
    values: ParamValues,
    fingerprint: String,
    /// ε, the bounds and `clip`.
    pub bounds: Bounds,
    /// The realized flip probability (`≈ 1/(1 + e^ε)`).
    pub q: f64,
}

impl DuchiParams {
    pub(super) fn new(values: ParamValues) -> Result<Self> {
        let bounds = Bounds::new(&values)?;
        let epsilon = bounds.epsilon;
        let mut q = realized(pymath::logistic_tail(epsilon));
        while q > 0.0 && q < 0.5 && duchi_epsilon_of(q) > epsilon {
            q = realized(next_probability(q, true));
        }
        if !(q > 0.0 && q < 0.5) {
            let rule = if q >= 0.5 { "epsilon_too_small" } else { "epsilon_too_large" };
            return Err(Refusal::relation(rule, &["epsilon"]).into());
        }
        check_collectable("duchi", &[PayloadField::uint("bit", 2)], 2)?;
        let fingerprint = fingerprint_of("duchi", &values);
        Ok(DuchiParams { values, fingerprint, bounds, q })
    }

    /// One bit of `x`.
    pub(super) fn bit(&self, rng: &mut dyn RandomSource, x: f64) -> Result<u64> {
        let a = rng.bernoulli(self.bounds.unit(x))?;
        let b = rng.bernoulli(self.q)?;
        Ok(u64::from(a != b))
    }
}

impl ProtocolParams for DuchiParams {
    common_params!("duchi");
    fn privacy_cost(&self) -> PrivacyCost {
        PrivacyCost::pure(duchi_epsilon_of(self.q))
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("bit", 2)]
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}

/// The Piecewise Mechanism over `cells` cells (`piecewise`): a window of `w` cells around the value with `p_in`, else
/// elsewhere.
#[derive(Debug)]
pub struct PiecewiseParams {
    values: ParamValues,
    fingerprint: String,
    /// ε, the bounds and `clip`.
    pub bounds: Bounds,
    /// The number of cells.
    pub cells: u64,
    /// The window width `w`.
    pub window: u64,
    /// The realized probability of the window, stepped down while its ε exceeds ε.
    pub p_in: f64,
}

impl PiecewiseParams {
    pub(super) fn new(values: ParamValues) -> Result<Self> {
        let bounds = Bounds::new(&values)?;
        let epsilon = bounds.epsilon;
        let cells = values.int("cells")? as u64;
        let window = ((cells as f64 * pymath::logistic_tail(epsilon / 2.0) + 0.5).floor() as i64)
            .clamp(1, cells as i64 - 1) as u64;
        let epsilon_of = |p: f64| {
            if p < 1.0 {
                pymath::log1p((p * cells as f64 - window as f64) / ((1.0 - p) * window as f64))
            } else {
                f64::INFINITY
            }
        };
        let mut p = realized(1.0 / (1.0 + ((cells - window) as f64 / window as f64) * pymath::exp(-epsilon)));
        while p > 0.0 && p < 1.0 && epsilon_of(p) > epsilon {
            p = realized(next_probability(p, false));
        }
        if p >= 1.0 {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon", "cells"]).into());
        }
        if !(epsilon_of(p) > 0.0) {
            return Err(Refusal::relation("epsilon_too_small", &["epsilon", "cells"]).into());
        }
        check_collectable("piecewise", &[PayloadField::uint("cell", cells)], cells as u128)?;
        let fingerprint = fingerprint_of("piecewise", &values);
        Ok(PiecewiseParams { values, fingerprint, bounds, cells, window, p_in: p })
    }

    fn realized_epsilon(&self) -> f64 {
        let (c, w) = (self.cells as f64, self.window as f64);
        pymath::log1p((self.p_in * c - w) / ((1.0 - self.p_in) * w))
    }

    /// One cell of `x`: `B(φ)` rounds the grid point, then `B(p_in)` and `R(w)` or `R(G − w)`.
    pub(super) fn cell(&self, rng: &mut dyn RandomSource, x: f64) -> Result<u64> {
        let m = self.cells - self.window;
        let u = self.bounds.unit(x) * m as f64;
        let mut k = (u.floor() as u64).min(m);
        let frac = if k < m { u - k as f64 } else { 0.0 };
        if rng.bernoulli(frac)? {
            k += 1;
        }
        if rng.bernoulli(self.p_in)? {
            return Ok(k + rng.randbelow(self.window)?);
        }
        let r = rng.randbelow(self.cells - self.window)?;
        Ok(if r < k { r } else { r + self.window })
    }
}

impl ProtocolParams for PiecewiseParams {
    common_params!("piecewise");
    fn privacy_cost(&self) -> PrivacyCost {
        PrivacyCost::pure(self.realized_epsilon())
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("cell", self.cells)]
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}

/// The hybrid mechanism (`hybrid`): the Piecewise Mechanism with `α = realized(1 − e^{−ε/2})` above ε*, else Duchi's.
#[derive(Debug)]
pub struct HybridParams {
    values: ParamValues,
    fingerprint: String,
    /// The number of Piecewise cells.
    pub cells: u64,
    /// Duchi's half.
    pub duchi: DuchiParams,
    /// The probability of the Piecewise half (0 at or below ε*).
    pub alpha: f64,
    /// The Piecewise half (only above ε*).
    pub piecewise: Option<PiecewiseParams>,
}

impl HybridParams {
    pub(super) fn new(values: ParamValues) -> Result<Self> {
        let bounds = Bounds::new(&values)?;
        let cells = values.int("cells")? as u64;
        let duchi = DuchiParams::new(bounds.values())?;
        let epsilon = bounds.epsilon;
        let alpha = if epsilon > HYBRID_THRESHOLD { realized(-pymath::expm1(-epsilon / 2.0)) } else { 0.0 };
        let piecewise = if alpha > 0.0 {
            let given = bounds.given().into_iter().chain([("cells", Value::from(cells))]);
            Some(PiecewiseParams::new(ParamValues::of(tables::PIECEWISE, given))?)
        } else {
            None
        };
        check_collectable(
            "hybrid",
            &[PayloadField::uint("pm", 2), PayloadField::uint("out", cells)],
            cells as u128 + 2,
        )?;
        let fingerprint = fingerprint_of("hybrid", &values);
        Ok(HybridParams { values, fingerprint, cells, duchi, alpha, piecewise })
    }
}

impl ProtocolParams for HybridParams {
    common_params!("hybrid");
    fn privacy_cost(&self) -> PrivacyCost {
        let d = duchi_epsilon_of(self.duchi.q);
        PrivacyCost::pure(match &self.piecewise {
            Some(pw) if self.alpha > 0.0 => d.max(pw.realized_epsilon()),
            _ => d,
        })
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("pm", 2), PayloadField::uint("out", self.cells)]
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}
