//! Means of numbers in `[low, high]` (`ldp/encoders/numeric.py`): Duchi et al.'s one-bit mechanism (`duchi`), the
//! Piecewise Mechanism (`piecewise`) and their hybrid (`hybrid`) of Wang et al. (ICDE 2019), and the memoized
//! 1BitMean (`memo-mean`; Ding, Kulkarni & Yekhanin, NeurIPS 2017 §4). A value is a finite number, clipped to
//! `[low, high]` when `clip` is set (refused otherwise); `unit(x) = (x − low)/(high − low)`.

use std::sync::Arc;

use serde_json::Value;

use super::memoized::Memo;
use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::{Refusal, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{realized_unchecked as realized, threshold, KeyedRandomSource, RandomSource};
use crate::value::{f64_of, float_value, is_real};

/// The largest number of Piecewise cells.
pub const MAX_CELLS: u64 = 1 << 16;
/// ε* of the hybrid mechanism: the root of `3t³ − t² + t − 7` at `t = e^{ε/2}`.
pub const HYBRID_THRESHOLD: f64 = 0.6093524930273091;

/// What every mean protocol checks first: ε, the bounds, `clip`.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// The ε asked for.
    pub epsilon: f64,
    /// The lower bound.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
    /// Whether values outside the bounds are clipped (else refused).
    pub clip: bool,
}

impl Bounds {
    fn new(values: &ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let low = values.float("low")?;
        let high = values.float("high")?;
        if !(low < high) {
            return Err(Refusal::relation("low<high", &["low", "high"]).into());
        }
        if !(high - low).is_finite() {
            return Err(Refusal::relation("width_finite", &["low", "high"]).into());
        }
        let clip = values.bool("clip")?;
        Ok(Bounds { epsilon, low, high, clip })
    }

    /// The parameters of `duchi` with these bounds.
    fn values(&self) -> ParamValues {
        ParamValues::of(tables::DUCHI, self.given())
    }

    /// ε and the bounds as parameter values (`duchi`'s, and the first of `piecewise`'s).
    fn given(&self) -> [(&'static str, Value); 4] {
        [
            ("epsilon", float_value(self.epsilon)),
            ("low", float_value(self.low)),
            ("high", float_value(self.high)),
            ("clip", Value::Bool(self.clip)),
        ]
    }

    /// A value as a double in `[low, high]` (Python's `check_value`).
    pub fn check_value(&self, protocol: &str, value: &Value) -> Result<f64> {
        if !is_real(value) {
            return Err(Refusal::value_type("float", value).into());
        }
        let _ = protocol;
        let mut x = f64_of(value);
        let range = || {
            Refusal::value_range(value.clone()).with("min", float_value(self.low)).with("max", float_value(self.high))
        };
        if !x.is_finite() {
            return Err(range().with("finite", true).into());
        }
        if !(self.low <= x && x <= self.high) {
            if !self.clip {
                return Err(range().into());
            }
            x = x.max(self.low).min(self.high);
        }
        Ok(x)
    }

    /// `(x − low)/(high − low)` clamped to `[0, 1]`.
    pub fn unit(&self, x: f64) -> f64 {
        ((x - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
    }
}

/// The next probability the client realizes above or below `p` (docs/conformance.md `next(q, up)`).
fn next_probability(p: f64, up: bool) -> f64 {
    if p < 1.0 / 2048.0 {
        let t = (p * 18446744073709551616.0) as i64 + if up { 1 } else { -1 };
        return t as f64 / 18446744073709551616.0;
    }
    if up {
        p.next_up()
    } else {
        p.next_down()
    }
}

fn duchi_epsilon_of(q: f64) -> f64 {
    if q > 0.0 {
        pymath::log1p((1.0 - 2.0 * q) / q)
    } else {
        f64::INFINITY
    }
}

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
    fn new(values: ParamValues) -> Result<Self> {
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
    fn bit(&self, rng: &mut dyn RandomSource, x: f64) -> Result<u64> {
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
    fn new(values: ParamValues) -> Result<Self> {
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
    fn cell(&self, rng: &mut dyn RandomSource, x: f64) -> Result<u64> {
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
    fn new(values: ParamValues) -> Result<Self> {
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

/// The encoder of `duchi`, `piecewise` and `hybrid`: the checked number, then the protocol's draws.
enum Numeric {
    Duchi(Arc<DuchiParams>),
    Piecewise(Arc<PiecewiseParams>),
    Hybrid(Arc<HybridParams>),
}

impl Mechanism for Numeric {
    type Checked = f64;

    fn check(&mut self, value: &Value) -> Result<f64> {
        match self {
            Numeric::Duchi(p) => p.bounds.check_value("duchi", value),
            Numeric::Piecewise(p) => p.bounds.check_value("piecewise", value),
            Numeric::Hybrid(p) => p.duchi.bounds.check_value("hybrid", value),
        }
    }

    fn charge(&mut self, _: &f64) -> Result<Charge> {
        Ok(Charge::Plain(match self {
            Numeric::Duchi(p) => p.privacy_cost(),
            Numeric::Piecewise(p) => p.privacy_cost(),
            Numeric::Hybrid(p) => p.privacy_cost(),
        }))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, x: &f64, _: Option<u64>) -> Result<Payload> {
        Ok(match self {
            Numeric::Duchi(p) => vec![("bit".into(), PayloadValue::Uint(p.bit(rng, *x)?))],
            Numeric::Piecewise(p) => vec![("cell".into(), PayloadValue::Uint(p.cell(rng, *x)?))],
            Numeric::Hybrid(p) => match &p.piecewise {
                Some(pw) if rng.bernoulli(p.alpha)? => {
                    vec![("pm".into(), PayloadValue::Uint(1)), ("out".into(), PayloadValue::Uint(pw.cell(rng, *x)?))]
                }
                _ => vec![
                    ("pm".into(), PayloadValue::Uint(0)),
                    ("out".into(), PayloadValue::Uint(p.duchi.bit(rng, *x)?)),
                ],
            },
        })
    }
}

/// The `duchi` protocol.
pub(crate) static DUCHI: Protocol = Protocol {
    name: "duchi",
    class_name: "DuchiParams",
    table: tables::DUCHI,
    needs_secret: false,
    create: |v| Ok(Arc::new(DuchiParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<DuchiParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Numeric::Duchi(params)))
    },
    cohorts: |_| 0,
};

/// The `piecewise` protocol.
pub(crate) static PIECEWISE: Protocol = Protocol {
    name: "piecewise",
    class_name: "PiecewiseParams",
    table: tables::PIECEWISE,
    needs_secret: false,
    create: |v| Ok(Arc::new(PiecewiseParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<PiecewiseParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Numeric::Piecewise(params)))
    },
    cohorts: |_| 0,
};

/// The `hybrid` protocol.
pub(crate) static HYBRID: Protocol = Protocol {
    name: "hybrid",
    class_name: "HybridParams",
    table: tables::HYBRID,
    needs_secret: false,
    create: |v| Ok(Arc::new(HybridParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<HybridParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Numeric::Hybrid(params)))
    },
    cohorts: |_| 0,
};

// ---------------------------------------------------------------------------------------------------------------
// memo-mean

/// Memoized 1BitMean with α-point rounding (`memo-mean`): `[low, high]` in `buckets` equal buckets; a device's
/// offset α (64 bits from its secret) rounds `x` to an edge `j`; the bit `B(j/s) XOR B(q)` of each edge is memoized
/// from the secret, each report flips it with a fresh `γ`.
#[derive(Debug)]
pub struct MemoMeanParams {
    values: ParamValues,
    fingerprint: String,
    /// The number of buckets.
    pub buckets: u64,
    /// The output flip probability, as given.
    pub gamma: f64,
    /// The memoized bit's parameters.
    pub memo: DuchiParams,
}

impl MemoMeanParams {
    fn new(values: ParamValues) -> Result<Self> {
        Bounds::new(&values)?;
        let buckets = values.int("buckets")? as u64;
        let gamma = values.float("gamma")?;
        let memo = DuchiParams::new(Bounds::new(&values)?.values())?;
        check_collectable("memo-mean", &[PayloadField::uint("bit", 2)], 2)?;
        let fingerprint = fingerprint_of("memo-mean", &values);
        Ok(MemoMeanParams { values, fingerprint, buckets, gamma, memo })
    }

    fn gamma_realized(&self) -> f64 {
        realized(self.gamma)
    }

    /// Realized `Pr[report = 1 | x = low]`: `γ + (1 − 2γ)·q_memo`.
    pub fn q(&self) -> f64 {
        let g = self.gamma_realized();
        g + (1.0 - 2.0 * g) * self.memo.q
    }

    /// Every report of one rounded value together: the memoized bit's ε.
    pub fn memo_cap(&self) -> PrivacyCost {
        self.memo.privacy_cost()
    }
}

impl ProtocolParams for MemoMeanParams {
    common_params!("memo-mean");
    fn privacy_cost(&self) -> PrivacyCost {
        let q = self.q();
        PrivacyCost::pure(pymath::log1p((1.0 - 2.0 * q) / q))
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("bit", 2)]
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}

struct MemoMean {
    params: Arc<MemoMeanParams>,
    memo: Memo<u64>,
    /// The device's α-point offset: the first 64 bits of the keyed stream
    /// `(secret, "ldp/longitudinal/alpha/v1\0" ‖ fp)`.
    alpha: u64,
}

impl Mechanism for MemoMean {
    /// The rounded value: the edge `j` in `[0, buckets]`.
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        let p = &self.params;
        let s = p.buckets;
        let u = p.memo.bounds.unit(p.memo.bounds.check_value("memo-mean", value)?) * s as f64;
        let j0 = (u.floor() as u64).min(s);
        let frac = if j0 < s { u - j0 as f64 } else { 0.0 };
        let up = match threshold(frac)? {
            None => true,
            Some(t) => self.alpha < t,
        };
        Ok(j0 + u64::from(up))
    }

    fn charge(&mut self, j: &u64) -> Result<Charge> {
        self.memo.charge(*j, self.params.privacy_cost(), self.params.memo_cap())
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, j: &u64, _: Option<u64>) -> Result<Payload> {
        let p = self.params.clone();
        let bit = self.memo.get(*j, |src| {
            let a = src.bernoulli(*j as f64 / p.buckets as f64)?;
            let b = src.bernoulli(p.memo.q)?;
            Ok(u64::from(a != b))
        })?;
        let g = p.gamma_realized();
        let out = if g > 0.0 { bit ^ u64::from(rng.bernoulli(g)?) } else { bit };
        Ok(vec![("bit".into(), PayloadValue::Uint(out))])
    }
}

fn make_memo_mean(p: Arc<dyn ProtocolParams>, mut o: EncoderOptions) -> Result<Encoder> {
    let params = downcast::<MemoMeanParams>(&p)?;
    let memo = Memo::new("memo-mean", params.fingerprint(), &mut o)?;
    let mut message = b"ldp/longitudinal/alpha/v1\0".to_vec();
    message.extend_from_slice(params.fingerprint().as_bytes());
    let alpha = KeyedRandomSource::new(memo.secret(), &message)?.bits(64)?;
    Ok(Encoder::new(p, o.rng, MemoMean { params, memo, alpha }))
}

/// The `memo-mean` protocol.
pub(crate) static MEMO_MEAN: Protocol = Protocol {
    name: "memo-mean",
    class_name: "MemoMeanParams",
    table: tables::MEMO_MEAN,
    needs_secret: true,
    create: |v| Ok(Arc::new(MemoMeanParams::new(v)?)),
    make_encoder: make_memo_mean,
    cohorts: |_| 0,
};
