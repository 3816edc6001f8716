//! RAPPOR (`rappor`; Erlingsson, Pihur & Korolova, CCS 2014, `ldp/encoders/rappor.py`): a string's `h` Bloom bits in
//! `k` (within its cohort), a permanent randomized response (PRR) memoized per value from the metric secret, and an
//! instantaneous one (IRR) per report. `"ldp"` mode hashes with MurmurHash3 and draws the PRR from the keyed stream;
//! `"google"` mode is Google's client: MD5 Bloom bits and the PRR from one HMAC-SHA256 of the Bloom filter
//! (docs/conformance.md `rappor`). Charged ε₁ per report, memoized up to ε∞ per value.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::bytes::{hmac_sha256, md5, murmur3, uint32_be};
use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::{Error, Refusal, Result};
use crate::params::{
    check_collectable, check_int, check_resolvable, fingerprint_of, ParamValues, PayloadField, ProtocolParams,
};
use crate::protocols::tables;
use crate::pymath;
use crate::random::{realized_unchecked as realized, BitMask, KeyedRandomSource, RandomSource};

/// The most cohorts.
pub const MAX_COHORTS: u64 = 1 << 16;
const MEMO_ENTRIES: usize = 256;
const MEMO_MAX_VALUE: usize = 512;
const PRR_DOMAIN: &[u8] = b"ldp/rappor/prr/v1\0";
const MEMO_DOMAIN: &[u8] = b"ldp/rappor/memo/v1\0";

/// RAPPOR's parameters.
#[derive(Debug)]
pub struct RapporParams {
    values: ParamValues,
    fingerprint: String,
    /// k, the Bloom filter's bits.
    pub num_bloombits: u64,
    /// h, the hash functions.
    pub num_hashes: u64,
    /// m, the cohorts.
    pub num_cohorts: u64,
    /// Pr[IRR bit = 1 | PRR bit = 0].
    pub p: f64,
    /// Pr[IRR bit = 1 | PRR bit = 1].
    pub q: f64,
    /// The PRR's noise level.
    pub f: f64,
    /// `"ldp"` or `"google"`.
    pub mode: String,
    /// ε₁ and ε∞, computed once (a charge needs both on every report).
    epsilons: (f64, f64),
}

impl RapporParams {
    pub(crate) fn new(values: ParamValues) -> Result<Self> {
        let k = values.int("num_bloombits")?;
        let h = values.int("num_hashes")?;
        let m = values.int("num_cohorts")? as u64;
        if h > k {
            return Err(Refusal::relation("h<=k", &["num_hashes", "num_bloombits"]).into());
        }
        let p = check_resolvable(values.float("p")?, "p")?;
        let q = check_resolvable(values.float("q")?, "q")?;
        // Both of f's ranges, [0, 1] and [0, 1), before its resolution (Python checks that between them: a
        // probability it refuses is in (0, 2^-64), inside both).
        let f = check_resolvable(values.float("f")?, "f")?;
        if !(p < q) {
            return Err(Refusal::relation("p<q", &["p", "q"]).into());
        }
        let mode = values.choice("mode")?.to_string();
        let bits = k.min(i32::MAX as i128) as u64;
        let schema = [PayloadField::uint("cohort", m), PayloadField::bits("bits", bits)];
        check_collectable("rappor", &schema, m as u128 * (k as u128 + 1))?;
        let fingerprint = fingerprint_of("rappor", &values);
        Ok(RapporParams {
            values,
            fingerprint,
            num_bloombits: bits,
            num_hashes: h.min(i32::MAX as i128) as u64,
            num_cohorts: m,
            p,
            q,
            f,
            mode,
            epsilons: (0.0, 0.0),
        })
        .map(|mut out: RapporParams| {
            out.epsilons = (out.compute_epsilon_one(), out.compute_epsilon_inf());
            out
        })
    }

    /// The PRR's realized f: Google's `ceil(128f)/128`, else `realized(f)`.
    pub fn f_effective(&self) -> f64 {
        if self.mode == "google" {
            (self.f * 128.0).ceil() / 128.0
        } else {
            realized(self.f)
        }
    }

    fn stars(&self) -> (f64, f64) {
        let fe = self.f_effective();
        let (rp, rq) = (realized(self.p), realized(self.q));
        let common = 0.5 * fe * (rp + rq);
        (common + (1.0 - fe) * rp, common + (1.0 - fe) * rq)
    }

    /// ε₁ of one report: `h·|ln(q*(1 − p*)/(p*(1 − q*)))|`.
    pub fn epsilon_one(&self) -> f64 {
        self.epsilons.0
    }

    /// ε∞ of the PRR (every report of one value): `2h·ln((1 − f/2)/(f/2))`.
    pub fn epsilon_inf(&self) -> f64 {
        self.epsilons.1
    }

    fn compute_epsilon_one(&self) -> f64 {
        let (ps, qs) = self.stars();
        if ps <= 0.0 || qs >= 1.0 {
            return f64::INFINITY;
        }
        self.num_hashes as f64 * pymath::log((qs * (1.0 - ps)) / (ps * (1.0 - qs))).abs()
    }

    fn compute_epsilon_inf(&self) -> f64 {
        let fe = self.f_effective();
        if fe == 0.0 {
            f64::INFINITY
        } else {
            2.0 * self.num_hashes as f64 * pymath::log((1.0 - fe / 2.0) / (fe / 2.0))
        }
    }

    /// The Bloom filter of a value's bytes in `cohort`.
    pub fn bloom(&self, value: &[u8], cohort: u32) -> BitMask {
        let mut data = uint32_be(cohort).to_vec();
        data.extend_from_slice(value);
        let k = self.num_bloombits as usize;
        let mut bloom = BitMask::new(k);
        if self.mode == "google" {
            let digest = md5(&data);
            for byte in digest.iter().take(self.num_hashes as usize) {
                bloom.set(*byte as usize % k, true);
            }
        } else {
            for j in 0..self.num_hashes {
                bloom.set(murmur3(&data, j as u32) as usize % k, true);
            }
        }
        bloom
    }
}

impl ProtocolParams for RapporParams {
    common_params!("rappor");
    fn privacy_cost(&self) -> PrivacyCost {
        PrivacyCost::pure(self.epsilon_one())
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("cohort", self.num_cohorts), PayloadField::bits("bits", self.num_bloombits)]
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
    fn check_cost(&self) -> Result<()> {
        if self.epsilon_one().is_infinite() {
            return Err(Refusal::relation("finite_epsilon", &["p", "q", "f"]).into());
        }
        Ok(())
    }
}

/// A checked value: its Bloom filter, its PRR message, and (once drawn) its PRR and memo key.
struct RapporValue {
    bloom: BitMask,
    message: Vec<u8>,
    prr: OnceLock<BitMask>,
    memo_key: OnceLock<Vec<u8>>,
}

struct Rappor {
    params: Arc<RapporParams>,
    secret: Vec<u8>,
    cohort: u32,
    prr_rng: Option<Box<dyn RandomSource>>,
    fp: Vec<u8>,
    memo: HashMap<String, Arc<RapporValue>>,
}

impl Rappor {
    /// The PRR of a checked value: `(B AND NOT fmask) OR (uniform AND fmask)`.
    fn permanent_response(&mut self, v: &RapporValue) -> Result<BitMask> {
        if self.prr_rng.is_none() {
            if let Some(prr) = v.prr.get() {
                return Ok(prr.clone());
            }
        }
        let p = &self.params;
        let k = p.num_bloombits as usize;
        let (uniform, fmask) = if p.mode == "google" {
            let digest = hmac_sha256(&self.secret, &[&v.message])?;
            let mut uniform = BitMask::new(k);
            let mut fmask = BitMask::new(k);
            let threshold = p.f * 128.0;
            for (i, byte) in digest.iter().take(k).enumerate() {
                if byte & 1 != 0 {
                    uniform.set(i, true);
                }
                if ((byte >> 1) as f64) < threshold {
                    fmask.set(i, true);
                }
            }
            (uniform, fmask)
        } else {
            let mut keyed;
            let src: &mut dyn RandomSource = match self.prr_rng.as_deref_mut() {
                Some(src) => src,
                None => {
                    keyed = KeyedRandomSource::new(&self.secret, &v.message)?;
                    &mut keyed
                }
            };
            let fmask = src.bernoulli_bits(p.f, k)?;
            let uniform = src.bernoulli_bits(0.5, k)?;
            (uniform, fmask)
        };
        let prr = v.bloom.and_not(&fmask).or(&uniform.and(&fmask));
        if self.prr_rng.is_none() {
            let _ = v.prr.set(prr.clone());
        }
        Ok(prr)
    }
}

impl Mechanism for Rappor {
    type Checked = Arc<RapporValue>;

    fn check(&mut self, value: &Value) -> Result<Arc<RapporValue>> {
        let Value::String(s) = value else {
            return Err(Refusal::value_type("string_or_bytes", value).into());
        };
        let memoable = s.chars().count() <= MEMO_MAX_VALUE;
        if memoable {
            if let Some(v) = self.memo.get(s) {
                return Ok(v.clone());
            }
        }
        let bytes = s.as_bytes();
        let bloom = self.params.bloom(bytes, self.cohort);
        let message = if self.params.mode == "google" {
            let b: u32 = bloom.ones().iter().fold(0u32, |b, i| b | (1u32 << i));
            uint32_be(b).to_vec()
        } else {
            let mut m = PRR_DOMAIN.to_vec();
            m.extend_from_slice(&self.fp);
            m.extend_from_slice(&uint32_be(self.cohort));
            m.extend_from_slice(bytes);
            m
        };
        let v = Arc::new(RapporValue { bloom, message, prr: OnceLock::new(), memo_key: OnceLock::new() });
        if memoable {
            if self.memo.len() >= MEMO_ENTRIES {
                self.memo.clear();
            }
            self.memo.insert(s.clone(), v.clone());
        }
        Ok(v)
    }

    fn charge(&mut self, v: &Arc<RapporValue>) -> Result<Charge> {
        let one = self.params.privacy_cost();
        let inf = self.params.epsilon_inf();
        if inf.is_infinite() {
            return Ok(Charge::Plain(one));
        }
        let key = match v.memo_key.get() {
            Some(k) => k.clone(),
            None => {
                let k = hmac_sha256(&self.secret, &[MEMO_DOMAIN, &v.message])?.to_vec();
                let _ = v.memo_key.set(k.clone());
                k
            }
        };
        Ok(Charge::Memoized { key, first: one, then: one, cap: PrivacyCost::pure(inf) })
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, v: &Arc<RapporValue>, _: Option<u64>) -> Result<Payload> {
        let prr = self.permanent_response(v)?;
        let k = self.params.num_bloombits as usize;
        let pmask = rng.bernoulli_bits(self.params.p, k)?;
        let qmask = rng.bernoulli_bits(self.params.q, k)?;
        let bits = pmask.and_not(&prr).or(&qmask.and(&prr));
        Ok(vec![("cohort".into(), PayloadValue::Uint(self.cohort as u64)), ("bits".into(), PayloadValue::Bits(bits))])
    }
}

/// The `rappor` encoder. The device's cohort is [`EncoderOptions::cohort`] (a client draws it once and keeps it),
/// else drawn here. With [`EncoderOptions::prr_rng`] (audits, `"ldp"` mode only) the PRR is drawn from it on every
/// report (a fresh device per audit path).
fn make(p: Arc<dyn ProtocolParams>, mut o: EncoderOptions) -> Result<Encoder> {
    let params = downcast::<RapporParams>(&p)?;
    if params.mode == "google" && (params.num_bloombits > 32 || params.num_hashes > 16) {
        return Err(Refusal::relation("google_client", &["num_bloombits", "num_hashes", "mode"]).into());
    }
    params.check_cost()?;
    let prr_rng = o.prr_rng.take();
    let secret = match o.secret.take() {
        Some(s) => s,
        None if prr_rng.is_some() => b"audit".to_vec(),
        None => {
            return Err(Error::type_("rappor needs the metric secret (EncoderOptions.secret): its PRR derives from it"))
        }
    };
    let mut rng = o.rng.take().unwrap_or_else(|| Box::new(crate::random::OsRandomSource::new()));
    let cohort = match o.cohort {
        Some(c) => check_int(&Value::from(c), "cohort", 0, Some(params.num_cohorts as i128 - 1))? as u32,
        None => rng.randbelow(params.num_cohorts)? as u32,
    };
    if prr_rng.is_some() && params.mode == "google" {
        return Err(Error::value("prr_rng replaces the PRR derivation of 'ldp' mode only"));
    }
    let fp = params.fingerprint().as_bytes().to_vec();
    let m = Rappor { params, secret, cohort, prr_rng, fp, memo: HashMap::new() };
    Ok(Encoder::new(p, Some(rng), m))
}

/// The `rappor` protocol.
pub(crate) static RAPPOR: Protocol = Protocol {
    name: "rappor",
    class_name: "RapporParams",
    table: tables::RAPPOR,
    needs_secret: true,
    create: |v| Ok(Arc::new(RapporParams::new(v)?)),
    make_encoder: make,
    cohorts: |p| p.values().get("num_cohorts").as_u64().unwrap_or(0).min(MAX_COHORTS) as u32,
};
