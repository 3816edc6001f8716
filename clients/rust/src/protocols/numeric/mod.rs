//! Means of numbers in `[low, high]` (`ldp/encoders/numeric.py`): Duchi et al.'s one-bit mechanism (`duchi`), the
//! Piecewise Mechanism (`piecewise`) and their hybrid (`hybrid`) of Wang et al. (ICDE 2019), and the memoized
//! 1BitMean (`memo-mean`; Ding, Kulkarni & Yekhanin, NeurIPS 2017 §4). A value is a finite number, clipped to
//! `[low, high]` when `clip` is set (refused otherwise); `unit(x) = (x − low)/(high − low)`.

use std::sync::Arc;

use serde_json::Value;

use crate::encoder::{downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{Refusal, Result};
use crate::params::{ParamValues, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::RandomSource;
use crate::value::{f64_of, float_value, is_real};

mod memo_mean;
mod params;

pub use memo_mean::MemoMeanParams;
pub(crate) use memo_mean::MEMO_MEAN;
pub use params::{DuchiParams, HybridParams, PiecewiseParams};

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
