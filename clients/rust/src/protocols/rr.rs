//! Randomized response: binary (`rr`; Warner 1965) and k-ary (`grr`; Kairouz, Bonawitz & Ramage 2016).

use std::sync::Arc;

use serde_json::Value;

use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, domain_index_of, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::{Refusal, Result};
use crate::params::{
    check_collectable, check_labels, check_resolvable, fingerprint_of, ParamValues, PayloadField, ProtocolParams,
};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{realized_unchecked as realized, RandomSource};
use crate::value::{int_of, is_int};

// ---------------------------------------------------------------------------------------------------------------
// rr

/// Binary randomized response (`rr`, `ldp/encoders/randomized_response.py`): a true bit is reported as 1 with
/// probability `q` if it is 1 and `p` if it is 0 (0 < p < q < 1); ε = max(ln(q/p), ln((1−p)/(1−q))) of the realized
/// p and q. Draws: `B(q)` for a 1, `B(p)` for a 0.
#[derive(Debug)]
pub struct BinaryRrParams {
    values: ParamValues,
    fingerprint: String,
    /// Pr[report 1 | bit 0].
    pub p: f64,
    /// Pr[report 1 | bit 1].
    pub q: f64,
    cost: PrivacyCost,
}

impl BinaryRrParams {
    fn new(values: ParamValues) -> Result<Self> {
        let p = values.float("p")?;
        let q = values.float("q")?;
        if !(0.0 < p && p < q && q < 1.0) {
            return Err(Refusal::relation("0<p<q<1", &["p", "q"]).into());
        }
        check_resolvable(p, "p")?;
        let (rp, rq) = (realized(p), realized(q));
        if rp == rq {
            return Err(Refusal::relation("p_q_resolvable", &["p", "q"]).into());
        }
        check_collectable("rr", &[PayloadField::uint("bit", 2)], 1)?;
        let epsilon = pymath::log(rq / rp).max(pymath::log((1.0 - rp) / (1.0 - rq)));
        let fingerprint = fingerprint_of("rr", &values);
        Ok(BinaryRrParams { values, fingerprint, p, q, cost: PrivacyCost::pure(epsilon) })
    }
}

impl ProtocolParams for BinaryRrParams {
    common_params!("rr");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("bit", 2)]
    }
    fn domain_size(&self) -> Option<u64> {
        Some(2)
    }
}

struct BinaryRr(Arc<BinaryRrParams>);

impl Mechanism for BinaryRr {
    type Checked = bool;

    fn check(&mut self, value: &Value) -> Result<bool> {
        match value {
            Value::Bool(b) => Ok(*b),
            _ if is_int(value) => match int_of(value) {
                Some(0) => Ok(false),
                Some(1) => Ok(true),
                _ => Err(Refusal::value_range(value.clone()).with("min", 0).with("max", 1).into()),
            },
            _ => Err(Refusal::value_type("bool_or_01", value).into()),
        }
    }

    fn charge(&mut self, _: &bool) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &bool, _: Option<u64>) -> Result<Payload> {
        let bit = rng.bernoulli(if *value { self.0.q } else { self.0.p })?;
        Ok(vec![("bit".into(), PayloadValue::Uint(bit as u64))])
    }
}

/// The `rr` protocol.
pub(crate) static RR: Protocol = Protocol {
    name: "rr",
    class_name: "BinaryRRParams",
    table: tables::RR,
    needs_secret: false,
    create: |v| Ok(Arc::new(BinaryRrParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<BinaryRrParams>(&p)?;
        Ok(Encoder::new(p, o.rng, BinaryRr(params)))
    },
    cohorts: |_| 0,
};

// ---------------------------------------------------------------------------------------------------------------
// grr

/// Generalized (k-ary) randomized response (`grr`): a value of `[0, d)` is kept with
/// `p = realized(1/(1 + (d − 1)·e^−ε))`, else a uniform other value is reported; charged
/// `max(ε, ln(p(d − 1)/(1 − p)))`. Draws: `B(p)`, then `R(d − 1)` if false.
#[derive(Debug)]
pub struct GrrParams {
    values: ParamValues,
    fingerprint: String,
    /// The ε asked for.
    pub epsilon: f64,
    /// The number of values.
    pub d: u64,
    /// The probability of reporting the true value, as the client realizes it.
    pub p: f64,
    /// The labels, if the domain has them.
    pub labels: Option<Vec<String>>,
    cost: PrivacyCost,
}

impl GrrParams {
    pub(crate) fn new(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let d = values.int("domain_size")? as u64;
        let p = realized(1.0 / (1.0 + (d - 1) as f64 * pymath::exp(-epsilon)));
        let q = (1.0 - p) / (d - 1) as f64;
        if p >= 1.0 {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon", "domain_size"]).into());
        }
        if p <= q {
            return Err(Refusal::relation("epsilon_too_small", &["epsilon", "domain_size"]).into());
        }
        let labels = check_labels(values.get("labels"), d as i128)?;
        check_collectable("grr", &[PayloadField::uint("index", d)], d as u128)?;
        let effective = pymath::log(p * (d - 1) as f64 / (1.0 - p));
        let fingerprint = fingerprint_of("grr", &values);
        Ok(GrrParams { values, fingerprint, epsilon, d, p, labels, cost: PrivacyCost::pure(epsilon.max(effective)) })
    }

    /// The index of a label or an int index (Python's `index_of`).
    pub fn index_of(&self, value: &Value) -> Result<u64> {
        domain_index_of("grr", self.d, self.labels.as_deref(), value)
    }
}

impl ProtocolParams for GrrParams {
    common_params!("grr");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("index", self.d)]
    }
}

/// `grr_draw`: keep `x` with probability `p`, else a uniform other value of `[0, d)`: `B(p)`, then `R(d − 1)`.
pub(crate) fn grr_draw(rng: &mut dyn RandomSource, p: f64, d: u64, x: u64) -> Result<u64> {
    if rng.bernoulli(p)? {
        return Ok(x);
    }
    let other = rng.randbelow(d - 1)?;
    Ok(other + u64::from(other >= x))
}

struct Grr(Arc<GrrParams>);

impl Mechanism for Grr {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.0.index_of(value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        Ok(vec![("index".into(), PayloadValue::Uint(grr_draw(rng, self.0.p, self.0.d, *value)?))])
    }
}

/// The `grr` protocol.
pub(crate) static GRR: Protocol = Protocol {
    name: "grr",
    class_name: "GRRParams",
    table: tables::GRR,
    needs_secret: false,
    create: |v| Ok(Arc::new(GrrParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<GrrParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Grr(params)))
    },
    cohorts: |_| 0,
};
