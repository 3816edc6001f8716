//! The Prefix Extending Method (`pem`; Wang, Li, Jha et al., IEEE TDSC 2021, `ldp/encoders/pem.py`): a string of up
//! to `max_length` bytes, NUL-padded and read as one big-endian integer of `L = 8·max_length` bits; a report draws
//! its group `R(G)` and reports the group's `b_j`-bit prefix through OLH (its 32-bit key) or GRR over the whole
//! prefix domain (`oracle`: `"olh"`, `"grr"` or `"auto"`, per group the one of smaller null variance).

use std::sync::Arc;

use num_bigint::BigUint;
use num_traits::ToPrimitive;
use serde_json::Value;

use super::local_hashing::{lh_draw, LocalHashingParams};
use super::range_tree::null_variance;
use super::rr::{grr_draw, GrrParams};
use crate::bytes::murmur3;
use crate::cost::PrivacyCost;
use crate::encoder::{common_params, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{Error, Refusal, RefusalCode, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::random::RandomSource;
use crate::value::float_value;

/// The MurmurHash3 seed of a prefix over 32 bits.
pub const KEY_SEED: u32 = 0x50454D;
const MAX_START_BITS: i128 = 24;
const MAX_GRR_BITS: u64 = 16;

/// A group's oracle.
#[derive(Debug)]
pub enum GroupOracle {
    /// OLH of the prefix's 32-bit key (the shared [`PemParams::olh`]).
    Olh,
    /// GRR over the group's whole prefix domain.
    Grr(GrrParams),
}

/// PEM's parameters.
#[derive(Debug)]
pub struct PemParams {
    values: ParamValues,
    fingerprint: String,
    /// The ε of every group's oracle.
    pub epsilon: f64,
    /// The longest value, in bytes.
    pub max_length: u64,
    /// The first group's prefix bits.
    pub start_bits: u64,
    /// The bits each later group adds.
    pub step_bits: u64,
    /// The seed range of the OLH groups.
    pub seed_range: u64,
    /// Whether values over `max_length` bytes are cut.
    pub truncate: bool,
    /// The OLH oracle of the OLH groups (made when a group uses it).
    pub olh: Option<LocalHashingParams>,
    /// Each group's oracle.
    pub oracles: Vec<GroupOracle>,
    oracle: String,
}

impl PemParams {
    fn new(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let max_length = values.int("max_length")? as u64;
        let start_bits = values.int_at_most("start_bits", MAX_START_BITS.min(8 * max_length as i128))? as u64;
        let step_bits = values.int("step_bits")? as u64;
        values.int("top_k")?;
        let seed_range = values.int("seed_range")? as u64;
        let oracle = values.choice("oracle")?.to_string();
        let truncate = values.bool("truncate")?;
        let total = 8 * max_length;
        let groups = 1 + (total - start_bits).div_ceil(step_bits);
        if !(1..=1 << 16).contains(&groups) {
            return Err(Refusal::limit("groups", groups, 1u64 << 16).into());
        }
        let prefix_bits = |group: u64| (start_bits + group * step_bits).min(total);
        if oracle == "grr" && prefix_bits(groups - 1) > MAX_GRR_BITS {
            return Err(Refusal::limit("grr_prefix_bits", prefix_bits(groups - 1), MAX_GRR_BITS).into());
        }
        let bits: Vec<u64> = (0..groups).map(prefix_bits).collect();
        let (oracles, olh) = group_oracles(&oracle, &bits, epsilon, seed_range)?;
        let mut out = PemParams {
            values,
            fingerprint: String::new(),
            epsilon,
            max_length,
            start_bits,
            step_bits,
            seed_range,
            truncate,
            olh,
            oracles,
            oracle,
        };
        check_collectable("pem", &out.schema(), groups as u128)?;
        out.fingerprint = fingerprint_of("pem", &out.values);
        Ok(out)
    }

    fn total_bits(&self) -> u64 {
        8 * self.max_length
    }

    /// `G = 1 + ceil((L − start_bits)/step_bits)`.
    pub fn groups(&self) -> u64 {
        self.oracles.len() as u64
    }

    /// `b_j = min(start_bits + j·step_bits, L)`.
    pub fn prefix_bits(&self, group: u64) -> u64 {
        (self.start_bits + group * self.step_bits).min(self.total_bits())
    }

    fn olh_g(&self) -> u64 {
        self.olh.as_ref().map_or(0, |o| o.g)
    }

    /// Python's `pad_value`: the value's bytes checked, cut if allowed, NUL-padded to `max_length`.
    fn padded(&self, value: &Value) -> Result<Vec<u8>> {
        let Value::String(s) = value else {
            return Err(Refusal::value_type("string_or_bytes", value).into());
        };
        let mut raw = s.as_bytes().to_vec();
        if raw.contains(&0) {
            return Err(Refusal::value(RefusalCode::NotInAlphabet).with("char", "\0").into());
        }
        if raw.len() as u64 > self.max_length {
            if !self.truncate {
                return Err(Refusal::value(RefusalCode::ValueTooLong)
                    .with("got", raw.len())
                    .with("max", self.max_length)
                    .with("unit", "bytes")
                    .into());
            }
            raw.truncate(self.max_length as usize);
            raw = drop_incomplete_tail(raw);
        }
        if raw.is_empty() {
            return Err(Refusal::value(RefusalCode::EmptyValue).into());
        }
        raw.resize(self.max_length as usize, 0);
        Ok(raw)
    }

    /// The key group `group` reports for a padded value: the prefix up to 32 bits, else its MurmurHash3.
    fn key_of(&self, padded: &BigUint, group: u64) -> u64 {
        let bits = self.prefix_bits(group);
        let prefix = padded >> (self.total_bits() - bits) as usize;
        if bits <= 32 {
            return prefix.to_u64().unwrap_or(0);
        }
        let n = bits.div_ceil(8) as usize;
        let raw = prefix.to_bytes_be();
        let mut bytes = vec![0u8; n];
        let take = n.min(raw.len());
        bytes[n - take..].copy_from_slice(&raw[raw.len() - take..]);
        murmur3(&bytes, KEY_SEED) as u64
    }
}

/// Each group's oracle, the group's prefixes of `bits[j]` bits: `oracle` `olh` or `grr` for every group, else GRR
/// where it is allowed and of smaller variance than OLH; and the OLH oracle if a group uses it.
fn group_oracles(
    oracle: &str,
    bits: &[u64],
    epsilon: f64,
    seed_range: u64,
) -> Result<(Vec<GroupOracle>, Option<LocalHashingParams>)> {
    let mut olh: Option<LocalHashingParams> = None;
    let mut oracles = Vec::with_capacity(bits.len());
    for &prefix_bits in bits {
        let o = match oracle {
            "olh" => GroupOracle::Olh,
            "grr" => GroupOracle::Grr(group_grr(epsilon, prefix_bits)?),
            _ => {
                let g = if prefix_bits <= MAX_GRR_BITS { Some(group_grr(epsilon, prefix_bits)?) } else { None };
                match g {
                    Some(g) => {
                        if olh.is_none() {
                            olh = Some(olh_params(epsilon, seed_range)?);
                        }
                        let lh = olh.as_ref().ok_or_else(|| Error::Internal("olh".into()))?;
                        let q = (1.0 - g.p) / (g.d - 1) as f64;
                        if null_variance(g.p, q) < null_variance(lh.p, 1.0 / lh.g as f64) {
                            GroupOracle::Grr(g)
                        } else {
                            GroupOracle::Olh
                        }
                    }
                    None => GroupOracle::Olh,
                }
            }
        };
        oracles.push(o);
    }
    if olh.is_none() && oracles.iter().any(|o| matches!(o, GroupOracle::Olh)) {
        olh = Some(olh_params(epsilon, seed_range)?);
    }
    Ok((oracles, olh))
}

/// The GRR oracle of a group whose prefixes have `prefix_bits` bits. Its ε too large or too small for its prefixes
/// is a relation of PEM's own parameters.
fn group_grr(epsilon: f64, prefix_bits: u64) -> Result<GrrParams> {
    let domain_size = Value::from(1u64 << prefix_bits);
    GrrParams::new(ParamValues::of(tables::GRR, [("epsilon", float_value(epsilon)), ("domain_size", domain_size)]))
        .map_err(|e| {
            e.relation_of(&["epsilon", "max_length", "start_bits", "step_bits", "oracle"], |r| {
                r.fields.get("params").and_then(Value::as_array).is_some_and(|ps| ps.iter().any(|p| p == "domain_size"))
            })
        })
}

/// The OLH oracle of the OLH groups.
fn olh_params(epsilon: f64, seed_range: u64) -> Result<LocalHashingParams> {
    LocalHashingParams::new(
        "olh",
        ParamValues::of(
            tables::OLH,
            [
                ("epsilon", float_value(epsilon)),
                ("domain_size", Value::from(2)),
                ("seed_range", Value::from(seed_range)),
            ],
        ),
    )
}

/// UTF-8 cut mid-character: the incomplete trailing character dropped (`decode("utf-8", "ignore")`).
fn drop_incomplete_tail(raw: Vec<u8>) -> Vec<u8> {
    let Some(i) = raw.iter().rposition(|b| b & 0xc0 != 0x80) else { return raw };
    let lead = raw[i];
    let need = match lead {
        0..=0x7f => 1,
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    };
    if raw.len() - i < need {
        raw[..i].to_vec()
    } else {
        raw
    }
}

impl ProtocolParams for PemParams {
    common_params!("pem");
    fn privacy_cost(&self) -> PrivacyCost {
        let olh = self.olh.as_ref().map_or(0.0, |o| o.privacy_cost().epsilon);
        PrivacyCost::pure(
            self.oracles
                .iter()
                .map(|o| match o {
                    GroupOracle::Olh => olh,
                    GroupOracle::Grr(g) => g.privacy_cost().epsilon,
                })
                .fold(f64::NEG_INFINITY, f64::max),
        )
    }
    fn schema(&self) -> Vec<PayloadField> {
        let ys = if self.oracle == "olh" {
            self.olh_g()
        } else {
            (0..self.groups())
                .map(|j| match &self.oracles[j as usize] {
                    GroupOracle::Grr(_) => 1u64 << self.prefix_bits(j),
                    GroupOracle::Olh => self.olh_g(),
                })
                .max()
                .unwrap_or(0)
        };
        vec![
            PayloadField::uint("group", self.groups()),
            PayloadField::uint("seed", self.seed_range),
            PayloadField::uint("y", ys),
        ]
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}

struct Pem(Arc<PemParams>);

impl Mechanism for Pem {
    type Checked = BigUint;

    fn check(&mut self, value: &Value) -> Result<BigUint> {
        Ok(BigUint::from_bytes_be(&self.0.padded(value)?))
    }

    fn charge(&mut self, _: &BigUint) -> Result<Charge> {
        Ok(Charge::Plain(self.0.privacy_cost()))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &BigUint, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        let group = rng.randbelow(p.groups())?;
        let key = p.key_of(value, group);
        let (seed, y) = match &p.oracles[group as usize] {
            GroupOracle::Grr(g) => (0, grr_draw(rng, g.p, g.d, key)?),
            GroupOracle::Olh => {
                let lh = p.olh.as_ref().ok_or_else(|| Error::Internal("an OLH group without OLH".into()))?;
                lh_draw(rng, p.seed_range, lh.g, lh.p, key)?
            }
        };
        Ok(vec![
            ("group".into(), PayloadValue::Uint(group)),
            ("seed".into(), PayloadValue::Uint(seed)),
            ("y".into(), PayloadValue::Uint(y)),
        ])
    }
}

/// The `pem` protocol.
pub(crate) static PEM: Protocol = Protocol {
    name: "pem",
    class_name: "PEMParams",
    table: tables::PEM,
    needs_secret: false,
    create: |v| Ok(Arc::new(PemParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<PemParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Pem(params)))
    },
    cohorts: |_| 0,
};
