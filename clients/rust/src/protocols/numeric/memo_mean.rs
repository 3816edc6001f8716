//! Memoized 1BitMean with α-point rounding (`memo-mean`; Ding, Kulkarni & Yekhanin, NeurIPS 2017 §4).

use std::sync::Arc;

use serde_json::Value;

use super::{Bounds, DuchiParams};
use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::Result;
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::memoized::Memo;
use crate::protocols::tables;
use crate::pymath;
use crate::random::{realized_unchecked as realized, threshold, KeyedRandomSource, RandomSource};

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
    pub(super) fn new(values: ParamValues) -> Result<Self> {
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
