//! RAPPOR with unknown strings (`rappor-ngrams`; Fanti, Pihur & Erlingsson, PoPETs 2016,
//! `ldp/encoders/rappor_ngrams.py`): a string over `alphabet`, padded to `L` characters and cut into `P = L/n`
//! n-grams, is reported as three `"ldp"`-mode RAPPOR reports: the n-grams at a random pair of positions `(a, b)`
//! (`R(P(P−1)/2)`, lexicographic, drawn when the value is prepared: the charge depends on it) and the full string,
//! with secrets and cohorts derived from the metric secret. Charged `ε₁(full) + 2ε₁(gram)`, memoized per PRR triple
//! up to `ε∞(full) + 2ε∞(gram)`.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::rappor::{RapporParams, RAPPOR};
use crate::bytes::{hmac_sha256, sha256};
use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Prepared, Protocol,
};
use crate::error::{kind_of, Error, Refusal, RefusalCode, Result};
use crate::params::int_value;
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::random::{NoDraws, RandomSource};

/// The most n-gram positions.
pub const MAX_POSITIONS: i128 = 64;
const SUB_SECRET: &[u8] = b"ldp/rappor-ngrams/v1/";

/// `rappor-ngrams`'s parameters.
#[derive(Debug)]
pub struct RapporNgramsParams {
    values: ParamValues,
    fingerprint: String,
    /// The gram length.
    pub n: u64,
    /// L, the padded string length in characters.
    pub max_length: u64,
    /// The alphabet.
    pub alphabet: Vec<char>,
    /// The pad character.
    pub pad: char,
    /// Whether longer strings are cut.
    pub truncate: bool,
    /// The full string's RAPPOR.
    pub full: Arc<RapporParams>,
    /// The n-grams' RAPPOR.
    pub gram: Arc<RapporParams>,
}

impl RapporNgramsParams {
    fn new(values: ParamValues) -> Result<Self> {
        let n = values.int("n")? as u64;
        let max_length = values.int("max_length")? as u64;
        if !max_length.is_multiple_of(n) {
            return Err(Refusal::relation("multiple_of_n", &["max_length", "n"]).into());
        }
        let positions = max_length / n;
        if positions < 2 {
            return Err(Refusal::relation("two_positions", &["max_length", "n"]).into());
        }
        if positions as i128 > MAX_POSITIONS {
            return Err(Refusal::limit("positions", positions, int_value(MAX_POSITIONS)).into());
        }
        let alphabet = alphabet_of(&values)?;
        let pad = pad_of(&values, &alphabet)?;
        let truncate = values.bool("truncate")?;
        let full = rappor_of(&values, "")?;
        let gram = rappor_of(&values, "gram_").map_err(|e| e.renamed(gram_name))?;
        full.check_cost()?; // both RAPPORs must be private (finite ε₁)
        gram.check_cost().map_err(|e| e.renamed(gram_name))?;
        let mut out = RapporNgramsParams {
            values,
            fingerprint: String::new(),
            n,
            max_length,
            alphabet,
            pad,
            truncate,
            full: Arc::new(full),
            gram: Arc::new(gram),
        };
        let cells = out.full.num_cohorts as u128 * (out.full.num_bloombits as u128 + 1);
        check_collectable("rappor-ngrams", &out.schema(), cells)?;
        out.fingerprint = fingerprint_of("rappor-ngrams", &out.values);
        Ok(out)
    }

    /// P = L/n.
    pub fn positions(&self) -> u64 {
        self.max_length / self.n
    }

    fn pairs(&self) -> u64 {
        self.positions() * (self.positions() - 1) / 2
    }

    /// The value checked and padded with `pad` to `L` characters.
    fn padded(&self, value: &Value) -> Result<Vec<char>> {
        let Value::String(text) = value else {
            return Err(Refusal::value_type("string_or_bytes", value).into());
        };
        if text.is_empty() {
            return Err(Refusal::value(RefusalCode::EmptyValue).into());
        }
        let mut cps: Vec<char> = text.chars().collect();
        let bad: BTreeSet<char> = cps.iter().copied().filter(|c| !self.alphabet.contains(c)).collect();
        if !bad.is_empty() {
            let first = bad.into_iter().next().map(String::from).unwrap_or_default();
            return Err(Refusal::value(RefusalCode::NotInAlphabet).with("char", first).into());
        }
        if cps.len() as u64 > self.max_length {
            if !self.truncate {
                return Err(Refusal::value(RefusalCode::ValueTooLong)
                    .with("got", cps.len())
                    .with("max", self.max_length)
                    .with("unit", "characters")
                    .into());
            }
            cps.truncate(self.max_length as usize);
        }
        cps.resize(self.max_length as usize, self.pad);
        Ok(cps)
    }
}

/// The `alphabet`: a non-empty string of distinct characters.
fn alphabet_of(values: &ParamValues) -> Result<Vec<char>> {
    let alphabet: Vec<char> = match values.get("alphabet") {
        Value::String(a) if !a.is_empty() => a.chars().collect(),
        Value::String(_) => {
            return Err(Refusal::value(RefusalCode::ParamLength)
                .with("param", "alphabet")
                .with("got", 0)
                .with("min", 1)
                .into())
        }
        // Python refuses a non-string alphabet with a ValueError, its code param_type.
        other => {
            return Err(Refusal::value(RefusalCode::ParamType)
                .with("param", "alphabet")
                .with("expected", "string")
                .with("got", kind_of(other))
                .into())
        }
    };
    if alphabet.iter().collect::<BTreeSet<_>>().len() != alphabet.len() {
        return Err(Refusal::relation("distinct", &["alphabet"]).into());
    }
    Ok(alphabet)
}

/// The `pad` character: one character, not in `alphabet`.
fn pad_of(values: &ParamValues, alphabet: &[char]) -> Result<char> {
    let pad = match values.get("pad") {
        Value::String(p) if p.chars().count() == 1 => p.chars().next().unwrap_or('_'),
        Value::String(p) => {
            return Err(Refusal::value(RefusalCode::ParamLength)
                .with("param", "pad")
                .with("got", p.chars().count())
                .with("min", 1)
                .with("max", 1)
                .into())
        }
        other => {
            return Err(Refusal::value(RefusalCode::ParamType)
                .with("param", "pad")
                .with("expected", "string")
                .with("got", kind_of(other))
                .into())
        }
    };
    if alphabet.contains(&pad) {
        return Err(Refusal::relation("pad_not_in_alphabet", &["pad", "alphabet"]).into());
    }
    Ok(pad)
}

/// The RAPPOR of the full string (`prefix` empty: `num_bloombits`, `num_hashes`, `num_cohorts`, `p`, `q`, `f`) or
/// of the n-grams (`gram_`: `gram_bloombits`, `gram_hashes`, `gram_cohorts`, `gram_p`, …).
fn rappor_of(values: &ParamValues, prefix: &str) -> Result<RapporParams> {
    let k = |name: &str| values.get(&format!("{prefix}{name}")).clone();
    let (bits, hashes, cohorts) = if prefix.is_empty() {
        (k("num_bloombits"), k("num_hashes"), k("num_cohorts"))
    } else {
        (k("bloombits"), k("hashes"), k("cohorts"))
    };
    RapporParams::new(ParamValues::of(
        tables::RAPPOR,
        [
            ("num_bloombits", bits),
            ("num_hashes", hashes),
            ("num_cohorts", cohorts),
            ("p", k("p")),
            ("q", k("q")),
            ("f", k("f")),
            ("mode", Value::String("ldp".into())),
        ],
    ))
}

/// The n-gram RAPPOR's refusals name its parameters as they are named here (`gram_p`, `gram_bloombits`).
fn gram_name(n: &str) -> Option<String> {
    let short = match n {
        "num_bloombits" => "bloombits",
        "num_hashes" => "hashes",
        "num_cohorts" => "cohorts",
        "p" | "q" | "f" => n,
        _ => return None,
    };
    Some(format!("gram_{short}"))
}

impl ProtocolParams for RapporNgramsParams {
    common_params!("rappor-ngrams");
    fn privacy_cost(&self) -> PrivacyCost {
        PrivacyCost::pure(self.full.epsilon_one() + 2.0 * self.gram.epsilon_one())
    }
    fn schema(&self) -> Vec<PayloadField> {
        let p = self.positions();
        vec![
            PayloadField::uint("cohort", self.full.num_cohorts),
            PayloadField::bits("bits", self.full.num_bloombits),
            PayloadField::uint("gram_cohort", self.gram.num_cohorts),
            PayloadField::uint("pos_a", p),
            PayloadField::uint("pos_b", p),
            PayloadField::bits("gram_a", self.gram.num_bloombits),
            PayloadField::bits("gram_b", self.gram.num_bloombits),
        ]
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}

/// A checked value: the full string's RAPPOR preparation, its n-grams and the drawn pair.
struct NgramsValue {
    full: Prepared,
    grams: Vec<String>,
    a: u64,
    b: u64,
}

struct RapporNgrams {
    params: Arc<RapporNgramsParams>,
    full: Encoder,
    gram: Encoder,
    gram_cohort: u32,
}

impl RapporNgrams {
    fn gram_prepared(&mut self, v: &NgramsValue, pos: u64) -> Result<Prepared> {
        self.gram.prepare(&Value::String(format!("{pos}|{}", v.grams[pos as usize])))
    }
}

fn bits_of(payload: &Payload) -> Result<PayloadValue> {
    payload
        .iter()
        .find(|(k, _)| k == "bits")
        .map(|(_, v)| v.clone())
        .ok_or_else(|| Error::Internal("a RAPPOR report without bits".into()))
}

impl Mechanism for RapporNgrams {
    type Checked = NgramsValue;

    fn check(&mut self, _: &Value) -> Result<NgramsValue> {
        Err(Error::Internal("rappor-ngrams prepares with its source".into()))
    }

    fn check_with(&mut self, rng: &mut dyn RandomSource, value: &Value) -> Result<NgramsValue> {
        let p = self.params.clone();
        let padded = p.padded(value)?;
        let end = padded.iter().rposition(|c| *c != p.pad).map_or(0, |i| i + 1);
        let text: String = padded[..end].iter().collect();
        let full = self.full.prepare(&Value::String(text))?;
        let positions = p.positions();
        let mut index = rng.randbelow(p.pairs())?;
        let mut a = 0;
        while index >= positions - 1 - a {
            index -= positions - 1 - a;
            a += 1;
        }
        let n = p.n as usize;
        let grams = (0..positions as usize).map(|i| padded[i * n..(i + 1) * n].iter().collect()).collect();
        Ok(NgramsValue { full, grams, a, b: a + 1 + index })
    }

    fn charge(&mut self, v: &NgramsValue) -> Result<Charge> {
        let parts = [
            v.full.charge().clone(),
            self.gram_prepared(v, v.a)?.charge().clone(),
            self.gram_prepared(v, v.b)?.charge().clone(),
        ];
        let mut keys = Vec::new();
        for part in &parts {
            match part {
                Charge::Memoized { key, .. } => keys.extend_from_slice(key),
                _ => return Ok(Charge::Plain(self.params.privacy_cost())),
            }
        }
        let cap = PrivacyCost::pure(self.params.full.epsilon_inf() + 2.0 * self.params.gram.epsilon_inf());
        let one = self.params.privacy_cost();
        let key = sha256(&[SUB_SECRET, b"triple", &keys]).to_vec();
        Ok(Charge::Memoized { key, first: one, then: one, cap })
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, v: &NgramsValue, _: Option<u64>) -> Result<Payload> {
        let pa = self.gram_prepared(v, v.a)?;
        let ga = bits_of(&self.gram.draw_with(rng, &pa, None)?)?;
        let pb = self.gram_prepared(v, v.b)?;
        let gb = bits_of(&self.gram.draw_with(rng, &pb, None)?)?;
        let full = self.full.draw_with(rng, &v.full, None)?;
        let cohort = full.iter().find(|(k, _)| k == "cohort").map(|(_, v)| v.clone());
        Ok(vec![
            ("cohort".into(), cohort.ok_or_else(|| Error::Internal("a RAPPOR report without a cohort".into()))?),
            ("bits".into(), bits_of(&full)?),
            ("gram_cohort".into(), PayloadValue::Uint(self.gram_cohort as u64)),
            ("pos_a".into(), PayloadValue::Uint(v.a)),
            ("pos_b".into(), PayloadValue::Uint(v.b)),
            ("gram_a".into(), ga),
            ("gram_b".into(), gb),
        ])
    }
}

fn make(p: Arc<dyn ProtocolParams>, mut o: EncoderOptions) -> Result<Encoder> {
    let params = downcast::<RapporNgramsParams>(&p)?;
    let mut prr = o.prr_rng.take();
    let secret = match o.secret.take() {
        Some(s) => s,
        None if prr.is_some() => b"audit".to_vec(),
        None => return Err(Error::type_("rappor-ngrams needs the metric secret (EncoderOptions.secret)")),
    };
    let derived = |label: &str| hmac_sha256(&secret, &[SUB_SECRET, label.as_bytes()]);
    let derived_cohort = |label: &str, m: u64| -> Result<u32> {
        let d = derived(label)?;
        let top = u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
        Ok((top % m) as u32)
    };
    let (cohort, gram_cohort) = match prr.as_deref_mut() {
        Some(src) => (src.randbelow(params.full.num_cohorts)? as u32, src.randbelow(params.gram.num_cohorts)? as u32),
        None => (
            derived_cohort("cohort", params.full.num_cohorts)?,
            derived_cohort("gram_cohort", params.gram.num_cohorts)?,
        ),
    };
    // In an audit both sub-encoders draw their PRRs from the one audit source.
    let shared_prr = prr.map(crate::random::Shared::new);
    let sub = |rp: Arc<RapporParams>, label: &str, cohort: u32| -> Result<Encoder> {
        let options = EncoderOptions {
            rng: Some(Box::new(NoDraws)),
            secret: Some(derived(label)?.to_vec()),
            cohort: Some(cohort),
            prr_rng: shared_prr.clone().map(|s| Box::new(s) as Box<dyn RandomSource>),
        };
        RAPPOR.encoder(rp, options)
    };
    let full = sub(params.full.clone(), "full", cohort)?;
    let gram = sub(params.gram.clone(), "gram", gram_cohort)?;
    Ok(Encoder::new(p, o.rng, RapporNgrams { params, full, gram, gram_cohort }))
}

/// The `rappor-ngrams` protocol.
pub(crate) static RAPPOR_NGRAMS: Protocol = Protocol {
    name: "rappor-ngrams",
    class_name: "RapporNgramsParams",
    table: tables::RAPPOR_NGRAMS,
    needs_secret: true,
    create: |v| Ok(Arc::new(RapporNgramsParams::new(v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};
