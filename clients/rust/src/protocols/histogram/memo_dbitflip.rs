//! The memoized dBitFlip (`memo-dbitflip`): a device's sampled buckets and their answers memoized per bucket, each
//! reported through a fresh randomized response.

use std::sync::Arc;

use serde_json::Value;

use super::dbitflip::{floyd_sample, sampled_bits_schema, DBitFlipParams};
use super::{bucket_labels, Buckets};
use crate::cost::PrivacyCost;
use crate::encoder::{common_params, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::Result;
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::memoized::Memo;
use crate::protocols::tables;
use crate::random::{realized_unchecked as realized, BitMask, KeyedRandomSource, RandomSource};
use crate::value::float_value;

/// Memoized dBitFlip (`memo-dbitflip`; Ding, Kulkarni & Yekhanin, NeurIPS 2017 §3–4): a permanent sample of `d`
/// buckets from the secret, a permanent response per value bucket, each report's bits flipped afresh with `γ`.
/// Charged one report's ε per report, capped at the memoized dBitFlip's ε per bucket.
#[derive(Debug)]
pub struct MemoDBitFlipParams {
    values: ParamValues,
    fingerprint: String,
    /// The per-report flip probability, as given.
    pub gamma: f64,
    /// The memoized responses' dBitFlip.
    pub memo: DBitFlipParams,
    cost: PrivacyCost,
}

impl MemoDBitFlipParams {
    fn new(values: ParamValues) -> Result<Self> {
        let buckets = Buckets::new(&values)?;
        let k = buckets.count();
        let d = values.int_at_most("d", k as i128)? as u64;
        let gamma = values.float("gamma")?;
        let edges = Value::Array(buckets.edges.iter().map(|e| float_value(*e)).collect());
        let memo = DBitFlipParams::new(ParamValues::of(
            tables::DBITFLIP,
            [
                ("epsilon", float_value(buckets.epsilon)),
                ("edges", edges),
                ("d", Value::from(d)),
                ("clip", Value::Bool(buckets.clip)),
            ],
        ))?;
        check_collectable("memo-dbitflip", &sampled_bits_schema(k), 2 * k as u128)?;
        let fingerprint = fingerprint_of("memo-dbitflip", &values);
        let g = realized(gamma);
        let cost = if g == 0.0 {
            memo.privacy_cost()
        } else {
            let p1 = g + (1.0 - 2.0 * g) * memo.p1;
            let p0 = g + (1.0 - 2.0 * g) * memo.p0;
            PrivacyCost::pure(DBitFlipParams::effective_epsilon(p1, p0, memo.d))
        };
        Ok(MemoDBitFlipParams { values, fingerprint, gamma, memo, cost })
    }

    fn gamma_realized(&self) -> f64 {
        realized(self.gamma)
    }

    /// Every report of one bucket together: the memoized dBitFlip's ε.
    pub fn memo_cap(&self) -> PrivacyCost {
        self.memo.privacy_cost()
    }
}

impl ProtocolParams for MemoDBitFlipParams {
    common_params!("memo-dbitflip");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        sampled_bits_schema(self.memo.buckets.count())
    }
    fn domain_size(&self) -> Option<u64> {
        Some(self.memo.buckets.count())
    }
    fn labels(&self) -> Option<Vec<String>> {
        Some(bucket_labels(&self.memo.buckets.edges))
    }
}

struct MemoDBitFlip {
    params: Arc<MemoDBitFlipParams>,
    memo: Memo<BitMask>,
    sampled: Option<BitMask>,
}

impl MemoDBitFlip {
    /// The device's permanent sample of `d` buckets, from its secret.
    fn sampled(&mut self) -> Result<BitMask> {
        if let Some(s) = &self.sampled {
            return Ok(s.clone());
        }
        let (k, d) = (self.params.memo.buckets.count() as usize, self.params.memo.d as usize);
        let s = match self.memo.audit_rng() {
            Some(src) => floyd_sample(src, k, d)?,
            None => {
                let mut message = b"ldp/dbitflip-memo/sample/v1\0".to_vec();
                message.extend_from_slice(self.params.fingerprint().as_bytes());
                floyd_sample(&mut KeyedRandomSource::new(self.memo.secret(), &message)?, k, d)?
            }
        };
        self.sampled = Some(s.clone());
        Ok(s)
    }
}

impl Mechanism for MemoDBitFlip {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.params.memo.buckets.of(value)
    }

    fn charge(&mut self, value: &u64) -> Result<Charge> {
        self.memo.charge(*value, self.params.privacy_cost(), self.params.memo_cap())
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let s = self.sampled()?;
        let p = self.params.clone();
        let (k, v) = (p.memo.buckets.count() as usize, *value as usize);
        let memo_bits = self.memo.get(*value, |src| {
            let mut b = BitMask::new(k);
            for j in s.ones() {
                if src.bernoulli(if j == v { p.memo.p1 } else { p.memo.p0 })? {
                    b.set(j, true);
                }
            }
            Ok(b)
        })?;
        let mut bits = memo_bits;
        let g = p.gamma_realized();
        if g > 0.0 {
            for j in s.ones() {
                if rng.bernoulli(g)? {
                    bits.flip(j);
                }
            }
        }
        Ok(vec![("sampled".into(), PayloadValue::Bits(s)), ("bits".into(), PayloadValue::Bits(bits))])
    }
}

/// The `memo-dbitflip` protocol.
pub(crate) static MEMO_DBITFLIP: Protocol = Protocol {
    name: "memo-dbitflip",
    class_name: "MemoDBitFlipParams",
    table: tables::MEMO_DBITFLIP,
    needs_secret: true,
    create: |v| Ok(Arc::new(MemoDBitFlipParams::new(v)?)),
    make_encoder: |p, mut o| {
        let params = downcast::<MemoDBitFlipParams>(&p)?;
        let memo = Memo::new("memo-dbitflip", params.fingerprint(), &mut o)?;
        Ok(Encoder::new(p, o.rng, MemoDBitFlip { params, memo, sampled: None }))
    },
    cohorts: |_| 0,
};
