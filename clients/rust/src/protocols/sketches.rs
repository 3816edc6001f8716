//! Apple's Count Mean Sketch and its Hadamard variant (`cms`, `hcms`; Apple's "Learning with Privacy at Scale",
//! 2017, `ldp/encoders/cms.py`, `hcms.py`): a string is hashed by one of `k` hash functions (`j = R(k)`) into
//! `[0, m)`. CMS reports the one-hot vector of that bucket with every bit flipped with `σ(ε/2)` (`BB(σ(ε/2), m)`);
//! HCMS reports one random Hadamard coefficient `row = R(m)` of it, flipped with `σ(ε)` (`B(σ(ε))`).

use std::sync::Arc;

use serde_json::Value;

use crate::bytes::murmur3;
use crate::cost::PrivacyCost;
use crate::encoder::{downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{Refusal, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{realized_unchecked as realized, threshold, BitMask, RandomSource};

/// The widest sketch.
pub const MAX_WIDTH: u64 = 1 << 24;

/// The parameters of `cms` and `hcms`.
#[derive(Debug)]
pub struct SketchParams {
    protocol: &'static str,
    values: ParamValues,
    fingerprint: String,
    /// The ε asked for.
    pub epsilon: f64,
    /// The flip probability (not rounded before its draw).
    pub flip_probability: f64,
    /// k, the number of hash functions.
    pub num_hashes: u64,
    /// m, the sketch width.
    pub width: u64,
    /// The seed of hash function 0 (function `j` uses `hash_seed + j`).
    pub hash_seed: u64,
    cost: PrivacyCost,
}

impl SketchParams {
    /// Python's sketch checks, in its order.
    pub(crate) fn new(protocol: &'static str, values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let (flip, per_flip) = if protocol == "cms" {
            (pymath::logistic_tail(epsilon / 2.0), 2.0)
        } else {
            (pymath::logistic_tail(epsilon), 1.0)
        };
        if threshold(flip)? == Some(0) {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon"]).into());
        }
        let k = values.int("num_hashes")? as u64;
        let m = values.int("width")? as u64;
        let hash_seed = values.int_at_most("hash_seed", (1 << 32) - k as i128)? as u64;
        check_collectable(protocol, &Self::schema_of(protocol, k, m), k as u128 * (m as u128 + 1))?;
        if protocol == "hcms" && !m.is_power_of_two() {
            return Err(Refusal::relation("power_of_two", &["width"]).into());
        }
        let r = realized(flip);
        let effective = per_flip * pymath::log((1.0 - r) / r);
        let fingerprint = fingerprint_of(protocol, &values);
        Ok(SketchParams {
            protocol,
            values,
            fingerprint,
            epsilon,
            flip_probability: flip,
            num_hashes: k,
            width: m,
            hash_seed,
            cost: PrivacyCost::pure(epsilon.max(effective)),
        })
    }

    fn schema_of(protocol: &str, k: u64, m: u64) -> Vec<PayloadField> {
        if protocol == "cms" {
            vec![PayloadField::uint("hash", k), PayloadField::bits("bits", m)]
        } else {
            vec![PayloadField::uint("hash", k), PayloadField::uint("row", m), PayloadField::uint("bit", 2)]
        }
    }

    /// The bucket of hash function `j` of `data`: `MurmurHash3_x86_32(data, hash_seed + j) mod m`.
    pub fn bucket(&self, data: &[u8], j: u64) -> u64 {
        murmur3(data, (self.hash_seed + j) as u32) as u64 % self.width
    }

    /// One CMS report of `data`: `(j, bits)`.
    pub(crate) fn draw_cms(&self, rng: &mut dyn RandomSource, data: &[u8]) -> Result<(u64, BitMask)> {
        let j = rng.randbelow(self.num_hashes)?;
        let h = self.bucket(data, j);
        let mut bits = rng.bernoulli_bits(self.flip_probability, self.width as usize)?;
        bits.flip(h as usize);
        Ok((j, bits))
    }

    /// One HCMS report of `data`: `(j, row, bit)`.
    pub(crate) fn draw_hcms(&self, rng: &mut dyn RandomSource, data: &[u8]) -> Result<(u64, u64, u64)> {
        let j = rng.randbelow(self.num_hashes)?;
        let row = rng.randbelow(self.width)?;
        let odd = (self.bucket(data, j) & row).count_ones() as u64 & 1;
        let kept = !rng.bernoulli(self.flip_probability)?;
        Ok((j, row, odd ^ u64::from(kept)))
    }
}

impl ProtocolParams for SketchParams {
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
        Self::schema_of(self.protocol, self.num_hashes, self.width)
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}

/// A sketch protocol's value: a string, hashed as its UTF-8 bytes.
pub(crate) fn sketch_bytes(value: &Value, _name: &str) -> Result<Vec<u8>> {
    match value {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        other => Err(Refusal::value_type("string_or_bytes", other).into()),
    }
}

struct Sketch(Arc<SketchParams>);

impl Mechanism for Sketch {
    type Checked = Vec<u8>;

    fn check(&mut self, value: &Value) -> Result<Vec<u8>> {
        sketch_bytes(value, if self.0.protocol == "cms" { "CMS" } else { "HCMS" })
    }

    fn charge(&mut self, _: &Vec<u8>) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, data: &Vec<u8>, _: Option<u64>) -> Result<Payload> {
        if self.0.protocol == "cms" {
            let (j, bits) = self.0.draw_cms(rng, data)?;
            return Ok(vec![("hash".into(), PayloadValue::Uint(j)), ("bits".into(), PayloadValue::Bits(bits))]);
        }
        let (j, row, bit) = self.0.draw_hcms(rng, data)?;
        Ok(vec![
            ("hash".into(), PayloadValue::Uint(j)),
            ("row".into(), PayloadValue::Uint(row)),
            ("bit".into(), PayloadValue::Uint(bit)),
        ])
    }
}

fn make(p: Arc<dyn ProtocolParams>, o: crate::encoder::EncoderOptions) -> Result<Encoder> {
    let params = downcast::<SketchParams>(&p)?;
    Ok(Encoder::new(p, o.rng, Sketch(params)))
}

/// The `cms` protocol.
pub(crate) static CMS: Protocol = Protocol {
    name: "cms",
    class_name: "CmsParams",
    table: tables::CMS,
    needs_secret: false,
    create: |v| Ok(Arc::new(SketchParams::new("cms", v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};

/// The `hcms` protocol.
pub(crate) static HCMS: Protocol = Protocol {
    name: "hcms",
    class_name: "HcmsParams",
    table: tables::HCMS,
    needs_secret: false,
    create: |v| Ok(Arc::new(SketchParams::new("hcms", v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};
