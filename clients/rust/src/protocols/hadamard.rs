//! Hadamard Response (`hr`; Acharya, Sun & Zhang, AISTATS 2019) and Subset Selection (`ss`; Ye & Barg 2018, Wang et
//! al. 2016).

use std::sync::Arc;

use serde_json::Value;

use super::unary::{check_unary, unary_epsilon};
use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, domain_index_of, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::Result;
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{floyd, realized_unchecked as realized, BitMask, RandomSource};
use crate::rational::Rational;

/// Hadamard Response, one bit (`hr`): a value `v` is reported as a column `j` of the `K × K` Hadamard matrix (`K`
/// the smallest power of two above `d`), inside `C_v = {j : popcount(j AND (v + 1)) even}` with
/// `p = realized(σ(−ε))`, else outside. Draws: `B(p)`, `R(K)`.
#[derive(Debug)]
pub struct HrParams {
    values: ParamValues,
    fingerprint: String,
    /// The ε asked for.
    pub epsilon: f64,
    /// The number of values.
    pub d: u64,
    /// Pr[j ∈ C_v], as the client realizes it.
    pub p: f64,
    /// K, the Hadamard order: reports are `j` in `[0, K)`.
    pub order: u64,
    /// The labels, if any.
    pub labels: Option<Vec<String>>,
    cost: PrivacyCost,
}

impl HrParams {
    fn new(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let p = realized(pymath::logistic_tail(-epsilon));
        let (d, labels) = check_unary(&values, p, 0.5, &["epsilon"])?;
        let order = 1u64 << (64 - d.leading_zeros());
        check_collectable("hr", &[PayloadField::uint("j", order)], order as u128)?;
        let effective = unary_epsilon(&Rational::of(p), &Rational::of(0.5));
        let fingerprint = fingerprint_of("hr", &values);
        Ok(HrParams {
            values,
            fingerprint,
            epsilon,
            d,
            p,
            order,
            labels,
            cost: PrivacyCost::pure(epsilon.max(effective)),
        })
    }
}

impl ProtocolParams for HrParams {
    common_params!("hr");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("j", self.order)]
    }
}

struct Hr(Arc<HrParams>);

impl Mechanism for Hr {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        domain_index_of("hr", self.0.d, self.0.labels.as_deref(), value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let row = value + 1;
        let want = if rng.bernoulli(self.0.p)? { 0 } else { 1 }; // the parity of j AND row: 0 inside C_v
        let mut j = rng.randbelow(self.0.order)?;
        if (j & row).count_ones() % 2 != want {
            j ^= row & row.wrapping_neg();
        }
        Ok(vec![("j".into(), PayloadValue::Uint(j))])
    }
}

/// The `hr` protocol.
pub(crate) static HR: Protocol = Protocol {
    name: "hr",
    class_name: "HRParams",
    table: tables::HR,
    needs_secret: false,
    create: |v| Ok(Arc::new(HrParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<HrParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Hr(params)))
    },
    cohorts: |_| 0,
};

/// Subset Selection (`ss`): a report is a subset of `ω = max(1, floor(d·σ(ε) + 1/2))` values holding the value with
/// `p = realized(σ(ln((d − ω)/ω) − ε))`, the others uniform (Floyd's algorithm over the `d − 1` other values).
/// Draws: `B(p)`, then `R(d−ω+o)` … `R(d−1)`.
#[derive(Debug)]
pub struct SsParams {
    values: ParamValues,
    fingerprint: String,
    /// The ε asked for.
    pub epsilon: f64,
    /// The number of values.
    pub d: u64,
    /// ω, the size of every reported subset.
    pub omega: u64,
    /// Pr[v in the subset], as the client realizes it.
    pub p: f64,
    /// The labels, if any.
    pub labels: Option<Vec<String>>,
    cost: PrivacyCost,
}

impl SsParams {
    fn new(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        // d is checked by check_unary below; ω and p are computed first, as Python's lazy properties are, from the
        // given domain size (a bad one is refused before they are used).
        let d_raw = crate::value::int_of(values.get("domain_size")).unwrap_or(2).clamp(2, 1 << 32) as u64;
        let omega = 1u64.max((d_raw as f64 * pymath::logistic_tail(epsilon) + 0.5).floor() as u64);
        let p = realized(pymath::logistic_tail(pymath::log((d_raw - omega) as f64 / omega as f64) - epsilon));
        let q = (omega as f64 - p) / (d_raw - 1) as f64;
        let (d, labels) = check_unary(&values, p, q, &["epsilon", "domain_size"])?;
        check_collectable("ss", &[PayloadField::bits("bits", d)], d as u128)?;
        let effective = pymath::log(p) - pymath::log1p(-p) + pymath::log((d - omega) as f64 / omega as f64);
        let fingerprint = fingerprint_of("ss", &values);
        Ok(SsParams {
            values,
            fingerprint,
            epsilon,
            d,
            omega,
            p,
            labels,
            cost: PrivacyCost::pure(epsilon.max(effective)),
        })
    }
}

impl ProtocolParams for SsParams {
    common_params!("ss");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::bits("bits", self.d)]
    }
}

struct Ss(Arc<SsParams>);

impl Mechanism for Ss {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        domain_index_of("ss", self.0.d, self.0.labels.as_deref(), value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let d = self.0.d as usize;
        let v = *value as usize;
        let own = rng.bernoulli(self.0.p)?;
        let others = floyd(rng, d - 1, self.0.omega as usize - usize::from(own))?;
        let mut bits = BitMask::new(d);
        for i in others.ones() {
            bits.set(if i < v { i } else { i + 1 }, true);
        }
        bits.set(v, own);
        Ok(vec![("bits".into(), PayloadValue::Bits(bits))])
    }
}

/// The `ss` protocol.
pub(crate) static SS: Protocol = Protocol {
    name: "ss",
    class_name: "SSParams",
    table: tables::SS,
    needs_secret: false,
    create: |v| Ok(Arc::new(SsParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<SsParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Ss(params)))
    },
    cohorts: |_| 0,
};
