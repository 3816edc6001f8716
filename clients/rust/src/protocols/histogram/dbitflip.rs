//! dBitFlip (`dbitflip`; Ding, Kulkarni & Yekhanin, NeurIPS 2017): each device reports `d` sampled buckets, each
//! bit flipped with the protocol's probabilities.

use std::sync::Arc;

use serde_json::Value;

use super::{bucket_labels, Buckets};
use crate::cost::PrivacyCost;
use crate::encoder::{common_params, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{Refusal, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{floyd, realized_unchecked as realized, BitMask, RandomSource};

pub(super) fn sampled_bits_schema(k: u64) -> Vec<PayloadField> {
    vec![PayloadField::bits("sampled", k), PayloadField::bits("bits", k)]
}

/// A uniform `d`-subset of `[0, k)` by Floyd's algorithm (all of them when `d = k`, nothing drawn).
pub(super) fn floyd_sample(rng: &mut dyn RandomSource, k: usize, d: usize) -> Result<BitMask> {
    if d == k {
        let mut m = BitMask::new(k);
        for i in 0..k {
            m.set(i, true);
        }
        return Ok(m);
    }
    floyd(rng, k, d)
}

/// dBitFlip (`dbitflip`): each report samples `d` of the `k` buckets uniformly and sends, for each, a bit that is 1
/// with `p1 = realized(σ(−ε/2))` for the value's bucket, `p0 = realized(σ(ε/2))` otherwise. Charged
/// `max(ε_nominal, ε*)`.
#[derive(Debug)]
pub struct DBitFlipParams {
    values: ParamValues,
    fingerprint: String,
    /// ε, the edges and `clip`.
    pub buckets: Buckets,
    /// Buckets sampled per report.
    pub d: u64,
    /// Pr[bit = 1 | the value's bucket].
    pub p1: f64,
    /// Pr[bit = 1 | another bucket].
    pub p0: f64,
    /// Every `d`-subset of the buckets in lexicographic order, when there are at most 4,096 (else empty).
    subsets: Vec<BitMask>,
    cost: PrivacyCost,
}

impl DBitFlipParams {
    pub(super) fn new(values: ParamValues) -> Result<Self> {
        let buckets = Buckets::new(&values)?;
        let k = buckets.count();
        let d = values.int_at_most("d", k as i128)? as u64;
        let epsilon = buckets.epsilon;
        let p1 = realized(pymath::logistic_tail(-epsilon / 2.0));
        let p0 = realized(pymath::logistic_tail(epsilon / 2.0));
        if p0 == 0.0 || p1 >= 1.0 {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon"]).into());
        }
        if p1 <= p0 {
            return Err(Refusal::relation("epsilon_too_small", &["epsilon"]).into());
        }
        check_collectable("dbitflip", &sampled_bits_schema(k), 2 * k as u128)?;
        let subsets = Self::subsets(k as usize, d as usize);
        let fingerprint = fingerprint_of("dbitflip", &values);
        let nominal = if d >= 2 { epsilon } else { epsilon / 2.0 };
        let cost = PrivacyCost::pure(nominal.max(Self::effective_epsilon(p1, p0, d)));
        Ok(DBitFlipParams { values, fingerprint, buckets, d, p1, p0, subsets, cost })
    }

    fn subsets(k: usize, d: usize) -> Vec<BitMask> {
        let mut count: u128 = 1;
        for i in 0..d {
            count = count * (k - i) as u128 / (i + 1) as u128;
            if count > 4096 {
                return Vec::new();
            }
        }
        let mut out = Vec::new();
        let mut idx: Vec<usize> = (0..d).collect();
        loop {
            let mut m = BitMask::new(k);
            for &i in &idx {
                m.set(i, true);
            }
            out.push(m);
            let Some(i) = (0..d).rev().find(|&i| idx[i] != k - d + i) else { break };
            idx[i] += 1;
            for j in i + 1..d {
                idx[j] = idx[j - 1] + 1;
            }
        }
        out
    }

    pub(super) fn effective_epsilon(p1: f64, p0: f64, d: u64) -> f64 {
        let up = pymath::log(p1 / p0);
        let down = pymath::log((1.0 - p0) / (1.0 - p1));
        if d >= 2 {
            up + down
        } else {
            up.max(down)
        }
    }
}

impl ProtocolParams for DBitFlipParams {
    common_params!("dbitflip");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        sampled_bits_schema(self.buckets.count())
    }
    fn domain_size(&self) -> Option<u64> {
        Some(self.buckets.count())
    }
    fn labels(&self) -> Option<Vec<String>> {
        Some(bucket_labels(&self.buckets.edges))
    }
}

struct DBitFlip(Arc<DBitFlipParams>);

impl Mechanism for DBitFlip {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.0.buckets.of(value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.privacy_cost()))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        let (k, d, v) = (p.buckets.count() as usize, p.d as usize, *value as usize);
        let sampled = if d == k {
            floyd_sample(rng, k, d)?
        } else if !p.subsets.is_empty() {
            p.subsets[rng.randbelow(p.subsets.len() as u64)? as usize].clone()
        } else {
            floyd(rng, k, d)?
        };
        let mut bits = if d > 8 {
            rng.bernoulli_bits(p.p0, k)?.and(&sampled).and_not(&BitMask::single(k, v))
        } else {
            let mut b = BitMask::new(k);
            for j in sampled.ones() {
                if j != v && rng.bernoulli(p.p0)? {
                    b.set(j, true);
                }
            }
            b
        };
        if sampled.get(v) && rng.bernoulli(p.p1)? {
            bits.set(v, true);
        }
        Ok(vec![("sampled".into(), PayloadValue::Bits(sampled)), ("bits".into(), PayloadValue::Bits(bits))])
    }
}

/// The `dbitflip` protocol.
pub(crate) static DBITFLIP: Protocol = Protocol {
    name: "dbitflip",
    class_name: "DBitFlipParams",
    table: tables::DBITFLIP,
    needs_secret: false,
    create: |v| Ok(Arc::new(DBitFlipParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<DBitFlipParams>(&p)?;
        Ok(Encoder::new(p, o.rng, DBitFlip(params)))
    },
    cohorts: |_| 0,
};
