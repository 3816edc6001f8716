//! Local hashing (`ldp/encoders/local_hashing.py`; Wang, Blocki, Li & Jha, USENIX Security 2017): a report is a
//! random `seed` and a GRR over `[0, g)` of `h_seed(v) = MurmurHash3_x86_32(uint32_LE(v), seed) mod g`, kept with
//! `p = realized(1/(1 + (g − 1)·e^−ε))`. Optimized (`olh`): `g = floor(e^ε + 1/2) + 1`; binary (`blh`): `g = 2`.
//! Draws: `R(seed_range)`, `B(p)`, then `R(g − 1)` if false.

use std::sync::Arc;

use serde_json::Value;

use crate::bytes::murmur3;
use crate::cost::PrivacyCost;
use crate::encoder::{domain_index_of, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{Refusal, Result};
use crate::params::{check_collectable, check_labels, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{realized_unchecked as realized, RandomSource};

/// The default (and largest) seed range: a 32-bit seed.
pub const SEED_RANGE: u64 = 1 << 32;

/// `lh_hash`: `MurmurHash3_x86_32(uint32_LE(key), seed) mod g` (OLH, BLH and PEM's OLH groups).
pub fn lh_hash(key: u64, seed: u64, g: u64) -> u64 {
    murmur3(&(key as u32).to_le_bytes(), seed as u32) as u64 % g
}

/// OLH's `g = floor(e^ε + 1/2) + 1`, refused beyond a 32-bit hash's range.
pub(crate) fn olh_width(epsilon: f64) -> Result<u64> {
    if epsilon > 32.0 {
        return Err(Refusal::relation("hash_range", &["epsilon"]).into());
    }
    Ok((pymath::exp(epsilon) + 0.5).floor() as u64 + 1)
}

/// One local-hashing report of `index`: `(seed, y)`.
pub(crate) fn lh_draw(rng: &mut dyn RandomSource, seed_range: u64, g: u64, p: f64, index: u64) -> Result<(u64, u64)> {
    let seed = rng.randbelow(seed_range)?;
    let x = lh_hash(index, seed, g);
    if rng.bernoulli(p)? {
        return Ok((seed, x));
    }
    let other = rng.randbelow(g - 1)?;
    Ok((seed, other + u64::from(other >= x)))
}

/// The parameters of `olh` and `blh`.
#[derive(Debug)]
pub struct LocalHashingParams {
    protocol: &'static str,
    values: ParamValues,
    fingerprint: String,
    /// The ε asked for.
    pub epsilon: f64,
    /// The number of values.
    pub d: u64,
    /// The seed range.
    pub seed_range: u64,
    /// The hash range: reports carry `y` in `[0, g)`.
    pub g: u64,
    /// Pr[y = h_seed(v)], as the client realizes it.
    pub p: f64,
    /// The labels, if any.
    pub labels: Option<Vec<String>>,
    cost: PrivacyCost,
}

impl LocalHashingParams {
    /// Python's `_check`, in its order.
    pub(crate) fn new(protocol: &'static str, values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let d = values.int("domain_size")? as u64;
        let seed_range = values.int("seed_range")? as u64;
        let g = if protocol == "olh" { olh_width(epsilon)? } else { 2 };
        if g > 1 << 32 {
            return Err(Refusal::relation("hash_range", &["epsilon"]).into());
        }
        let p = realized(1.0 / (1.0 + (g - 1) as f64 * pymath::exp(-epsilon)));
        let q = (1.0 - p) / (g - 1) as f64;
        if p >= 1.0 {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon"]).into());
        }
        if p <= q {
            return Err(Refusal::relation("epsilon_too_small", &["epsilon"]).into());
        }
        let labels = check_labels(values.get("labels"), d as i128)?;
        check_collectable(protocol, &[PayloadField::uint("seed", seed_range), PayloadField::uint("y", g)], d as u128)?;
        let effective = pymath::log(p * (g - 1) as f64 / (1.0 - p));
        let fingerprint = fingerprint_of(protocol, &values);
        let cost = PrivacyCost::pure(epsilon.max(effective));
        Ok(LocalHashingParams { protocol, values, fingerprint, epsilon, d, seed_range, g, p, labels, cost })
    }

    /// Pr[y = u] for one given u ≠ h_seed(v).
    pub fn q(&self) -> f64 {
        (1.0 - self.p) / (self.g - 1) as f64
    }
}

impl ProtocolParams for LocalHashingParams {
    fn protocol(&self) -> &'static str {
        self.protocol
    }
    fn values(&self) -> &ParamValues {
        &self.values
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("seed", self.seed_range), PayloadField::uint("y", self.g)]
    }
}

struct LocalHashing(Arc<LocalHashingParams>);

impl Mechanism for LocalHashing {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        domain_index_of(self.0.protocol, self.0.d, self.0.labels.as_deref(), value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        let (seed, y) = lh_draw(rng, p.seed_range, p.g, p.p, *value)?;
        Ok(vec![("seed".into(), PayloadValue::Uint(seed)), ("y".into(), PayloadValue::Uint(y))])
    }
}

fn make(p: Arc<dyn ProtocolParams>, o: crate::encoder::EncoderOptions) -> Result<Encoder> {
    let params = downcast::<LocalHashingParams>(&p)?;
    Ok(Encoder::new(p, o.rng, LocalHashing(params)))
}

/// The `olh` protocol.
pub(crate) static OLH: Protocol = Protocol {
    name: "olh",
    class_name: "OLHParams",
    table: tables::OLH,
    needs_secret: false,
    create: |v| Ok(Arc::new(LocalHashingParams::new("olh", v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};

/// The `blh` protocol.
pub(crate) static BLH: Protocol = Protocol {
    name: "blh",
    class_name: "BLHParams",
    table: tables::BLH,
    needs_secret: false,
    create: |v| Ok(Arc::new(LocalHashingParams::new("blh", v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};
