//! Blocked Hadamard Response (`hr-block`; Acharya, Sun & Zhang, AISTATS 2019 §5, `ldp/encoders/hadamard_block.py`):
//! the `d` values dealt into `B` blocks (value `x` to block `x mod B`, row `⌊x/B⌋ + 1` of its `b × b` Hadamard
//! matrix, `b` the smallest power of two above `⌈d/B⌉`); a report `j` in `[0, K)`, `K = B·b`, is uniform with
//! `γ = realized(2B/(2B + expm1(ε)))`, else uniform on the `+1` half of the value's row. Charged
//! `max(ε, ln(1 + 2B(1 − γ)/γ))`. Draws: `B(γ)`, then `R(K)` if true, `R(b)` if false.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, domain_index_of, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::{Refusal, Result};
use crate::params::{check_collectable, check_labels, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{realized_unchecked as realized, RandomSource};
use crate::rational::Rational;

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

fn order(m: u64) -> u64 {
    1u64 << (64 - m.leading_zeros())
}

/// `γ = 2B/(2B + e^ε − 1)` before rounding (0 past ε = 700).
pub fn uniform_share(epsilon: f64, blocks: u64) -> f64 {
    if epsilon > 700.0 {
        0.0
    } else {
        2.0 * blocks as f64 / (2.0 * blocks as f64 + pymath::expm1(epsilon))
    }
}

fn rare_variance(gamma: f64, blocks: u64, d: u64) -> f64 {
    let m = ceil_div(d, blocks);
    gamma / (blocks as f64 * (1.0 - gamma) * (1.0 - gamma)) + (m - 1) as f64 / ((d - 1) as f64 * (1.0 - gamma))
}

/// The `B` in `[1, d]` of least variance for a rare value (Python's `best_blocks`).
pub fn best_blocks(epsilon: f64, d: u64) -> u64 {
    let root = {
        let mut x = (d as f64).sqrt() as u64;
        while x * x > d {
            x -= 1;
        }
        while (x + 1) * (x + 1) <= d {
            x += 1;
        }
        x
    } + 1;
    let mut candidates = BTreeSet::new();
    for b in 1..=d.min(2 * root) {
        candidates.insert(b);
    }
    for m in 1..=root {
        candidates.insert(ceil_div(d, m));
    }
    let (mut best, mut best_var) = (1, f64::INFINITY);
    for b in candidates {
        let g = uniform_share(epsilon, b);
        if !(g > 0.0 && g < 1.0) {
            continue;
        }
        let v = rare_variance(g, b, d);
        if v < best_var * (1.0 - 1e-12) {
            best = b;
            best_var = v;
        }
    }
    best
}

/// `hr-block`'s parameters (`blocks` resolved).
#[derive(Debug)]
pub struct HrBlockParams {
    values: ParamValues,
    fingerprint: String,
    /// The ε asked for.
    pub epsilon: f64,
    /// The number of values.
    pub d: u64,
    /// `B`, the number of blocks.
    pub blocks: u64,
    /// `γ`, the realized probability of the uniform branch.
    pub gamma: f64,
    /// `b`, a block's Hadamard order.
    pub block_order: u64,
    /// The labels, if any.
    pub labels: Option<Vec<String>>,
    cost: PrivacyCost,
}

impl HrBlockParams {
    /// Parameters with `blocks` resolved (`null`: [`best_blocks`], after the checks that precede it).
    fn create(values: ParamValues) -> Result<Self> {
        if !values.get("blocks").is_null() {
            return Self::new(values);
        }
        let eps = values.float("epsilon")?;
        let d = values.int("domain_size")? as u64;
        let blocks = Value::from(best_blocks(eps, d));
        let resolved = values.iter().map(|(n, v)| (n, if n == "blocks" { blocks.clone() } else { v.clone() }));
        Self::new(ParamValues::of(tables::HR_BLOCK, resolved))
    }

    fn new(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let d = values.int("domain_size")? as u64;
        let blocks = values.int_at_most("blocks", d as i128)? as u64;
        let gamma = realized(uniform_share(epsilon, blocks));
        if gamma <= 0.0 {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon", "domain_size", "blocks"]).into());
        }
        if gamma >= 1.0 {
            return Err(Refusal::relation("epsilon_too_small", &["epsilon", "domain_size", "blocks"]).into());
        }
        let labels = check_labels(values.get("labels"), d as i128)?;
        let block_order = order(ceil_div(d, blocks));
        let k = blocks * block_order;
        check_collectable("hr-block", &[PayloadField::uint("j", k)], k as u128)?;
        let (g, one) = (Rational::of(gamma), Rational::int(1));
        let effective = (&one + &(&(&Rational::int(2 * blocks as i64) * &(&one - &g)) / &g)).log_ratio();
        let fingerprint = fingerprint_of("hr-block", &values);
        Ok(HrBlockParams {
            values,
            fingerprint,
            epsilon,
            d,
            blocks,
            gamma,
            block_order,
            labels,
            cost: PrivacyCost::pure(epsilon.max(effective)),
        })
    }

    /// `K = B·b`.
    pub fn order(&self) -> u64 {
        self.blocks * self.block_order
    }
}

impl ProtocolParams for HrBlockParams {
    common_params!("hr-block");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("j", self.order())]
    }
}

struct HrBlock(Arc<HrBlockParams>);

impl Mechanism for HrBlock {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        domain_index_of("hr-block", self.0.d, self.0.labels.as_deref(), value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        if rng.bernoulli(p.gamma)? {
            return Ok(vec![("j".into(), PayloadValue::Uint(rng.randbelow(p.order())?))]);
        }
        let b = p.block_order;
        let row = value / p.blocks + 1;
        let mut pos = rng.randbelow(b)?;
        if (pos & row).count_ones() & 1 == 1 {
            pos ^= row & row.wrapping_neg();
        }
        Ok(vec![("j".into(), PayloadValue::Uint((value % p.blocks) * b + pos))])
    }
}

/// The `hr-block` protocol.
pub(crate) static HR_BLOCK: Protocol = Protocol {
    name: "hr-block",
    class_name: "HRBlockParams",
    table: tables::HR_BLOCK,
    needs_secret: false,
    create: |v| Ok(Arc::new(HrBlockParams::create(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<HrBlockParams>(&p)?;
        Ok(Encoder::new(p, o.rng, HrBlock(params)))
    },
    cohorts: |_| 0,
};
