//! Apple's Sequence Fragment Puzzle (`sfp`; "Learning with Privacy at Scale", 2017, `ldp/encoders/sfp.py`): a word
//! over `alphabet` (other characters replaced by `replacement` or refused; cut to `length` when `truncate`) is
//! reported as a CMS/HCMS report of the whole word and one of the fragment record `h ‖ fragment` at a random
//! position `R(L/r)`, `h` a `hash_bits`-bit hash of the word. Charged the sum of the two sketches' ε.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::sketches::SketchParams;
use crate::bytes::murmur3;
use crate::cost::PrivacyCost;
use crate::encoder::{common_params, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{kind_of, Refusal, RefusalCode, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::random::RandomSource;
use crate::value::float_value;

/// SFP's parameters.
#[derive(Debug)]
pub struct SfpParams {
    values: ParamValues,
    fingerprint: String,
    /// The alphabet's symbols then the pad (a symbol's index is its position here).
    pub symbols: Vec<char>,
    /// The pad symbol.
    pub pad: char,
    /// L, the padded word length.
    pub length: u64,
    /// r, the fragment length.
    pub fragment_length: u64,
    /// The bits of the word hash in a fragment record.
    pub hash_bits: u64,
    /// The replacement of characters outside the alphabet (`None`: refused).
    pub replacement: Option<char>,
    /// Whether words longer than L are cut.
    pub truncate: bool,
    /// The word's sketch.
    pub word: SketchParams,
    /// The fragments' sketch.
    pub fragment: SketchParams,
    index: HashMap<char, usize>,
}

fn sketch(part: &str, kind: &'static str, eps: f64, k: i128, width: &Value, seed: i128) -> Result<SketchParams> {
    let v = ParamValues::of(
        if kind == "cms" { tables::CMS } else { tables::HCMS },
        [
            ("epsilon", float_value(eps)),
            ("num_hashes", Value::from(k as u64)),
            ("width", width.clone()),
            ("hash_seed", Value::from(seed as u64)),
        ],
    );
    // The sketch's refusals in SFP's names: the word sketch's width is word_width.
    SketchParams::new(kind, v)
        .map_err(|e| e.renamed(|n| matches!(n, "epsilon" | "num_hashes" | "width").then(|| format!("{part}_{n}"))))
}

/// Python's `_check_symbols`: a string of `low` to `high` characters (refused with a `ValueError` either way).
fn check_symbols(value: &Value, param: &str, low: usize, high: Option<usize>) -> Result<Vec<char>> {
    let Value::String(s) = value else {
        return Err(Refusal::value(RefusalCode::ParamType)
            .with("param", param)
            .with("expected", "string")
            .with("got", kind_of(value))
            .into());
    };
    let cps: Vec<char> = s.chars().collect();
    if cps.len() < low || high.is_some_and(|h| cps.len() > h) {
        let mut r =
            Refusal::value(RefusalCode::ParamLength).with("param", param).with("got", cps.len()).with("min", low);
        if let Some(h) = high {
            r = r.with("max", h);
        }
        return Err(r.into());
    }
    Ok(cps)
}

impl SfpParams {
    fn new(values: ParamValues) -> Result<Self> {
        let word_epsilon = values.float("word_epsilon")?;
        let fragment_epsilon = values.float("fragment_epsilon")?;
        let (cps, pad) = alphabet_and_pad(&values)?;
        let length = values.int("length")? as u64;
        let fragment_length = values.int_at_most("fragment_length", length as i128)? as u64;
        if !length.is_multiple_of(fragment_length) {
            return Err(Refusal::relation("multiple_of_fragment_length", &["length", "fragment_length"]).into());
        }
        let hash_bits = values.int("hash_bits")? as u64;
        let word_sketch = values.choice("word_sketch")?;
        let fragment_sketch = values.choice("fragment_sketch")?;
        let hash_seed = values.int("hash_seed")?;
        let wk = values.int("word_num_hashes")?;
        let fk = values.int("fragment_num_hashes")?;
        if hash_seed + wk + fk > 0xffff_ffff {
            return Err(
                Refusal::relation("hash_seed_room", &["hash_seed", "word_num_hashes", "fragment_num_hashes"]).into()
            );
        }
        let replacement = replacement_of(&values, &cps)?;
        let truncate = values.bool("truncate")?;
        let mut symbols = cps;
        symbols.push(pad);
        let index = symbols.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        let word = sketch("word", word_sketch, word_epsilon, wk, values.get("word_width"), hash_seed)?;
        let fragment =
            sketch("fragment", fragment_sketch, fragment_epsilon, fk, values.get("fragment_width"), hash_seed + wk)?;
        let mut out = SfpParams {
            values,
            fingerprint: String::new(),
            symbols,
            pad,
            length,
            fragment_length,
            hash_bits,
            replacement,
            truncate,
            word,
            fragment,
            index,
        };
        let cells = |s: &SketchParams| s.num_hashes as u128 * (s.width as u128 + 1);
        let total = cells(&out.word) + out.num_positions() as u128 * cells(&out.fragment);
        check_collectable("sfp", &out.schema(), total)?;
        out.fingerprint = fingerprint_of("sfp", &out.values);
        Ok(out)
    }

    /// The number of fragment positions, `L/r`.
    pub fn num_positions(&self) -> u64 {
        self.length / self.fragment_length
    }

    /// Seed of the word hash `h` (after both sketches' seeds).
    pub fn word_hash_seed(&self) -> u64 {
        self.word.hash_seed + self.word.num_hashes + self.fragment.num_hashes
    }

    /// Python's `prepare_word`: the word (replaced, truncated) padded to L symbols, and its hash.
    fn prepare_word(&self, value: &Value) -> Result<PreparedWord> {
        let Value::String(s) = value else {
            return Err(Refusal::value_type("string", value).into());
        };
        if s.is_empty() {
            return Err(Refusal::value(RefusalCode::EmptyValue).into());
        }
        let ok = |c: &char| self.index.contains_key(c) && *c != self.pad;
        let mut cps: Vec<char> = s.chars().collect();
        if let Some(bad) = cps.iter().find(|c| !ok(c)) {
            let Some(r) = self.replacement else {
                return Err(Refusal::value(RefusalCode::NotInAlphabet).with("char", bad.to_string()).into());
            };
            cps = cps.into_iter().map(|c| if ok(&c) { c } else { r }).collect();
        }
        if cps.len() as u64 > self.length {
            if !self.truncate {
                return Err(Refusal::value(RefusalCode::ValueTooLong)
                    .with("got", cps.len())
                    .with("max", self.length)
                    .with("unit", "characters")
                    .into());
            }
            cps.truncate(self.length as usize);
        }
        let word: String = cps.iter().collect();
        let padded: Vec<usize> =
            (0..self.length as usize).map(|i| self.index[cps.get(i).unwrap_or(&self.pad)]).collect();
        let data = word.into_bytes();
        let hash = murmur3(&data, self.word_hash_seed() as u32) as u64 % (1u64 << self.hash_bits);
        Ok(PreparedWord { padded, hash, data })
    }

    /// `h ‖ fragment`: `h` big-endian, then each symbol's index (1 or 2 bytes each).
    fn fragment_record(&self, word: &PreparedWord, position: u64) -> Vec<u8> {
        let hash_bytes = self.hash_bits.div_ceil(8) as usize;
        let two = self.symbols.len() > 256;
        let mut out = Vec::with_capacity(hash_bytes + 2 * self.fragment_length as usize);
        for i in 0..hash_bytes {
            out.push((word.hash >> (8 * (hash_bytes - 1 - i))) as u8);
        }
        let r = self.fragment_length as usize;
        for s in 0..r {
            let idx = word.padded[position as usize * r + s];
            if two {
                out.push((idx >> 8) as u8);
            }
            out.push(idx as u8);
        }
        out
    }
}

/// The `alphabet` (distinct symbols, at most 2^16 − 2) and the `pad` symbol (not in the alphabet).
fn alphabet_and_pad(values: &ParamValues) -> Result<(Vec<char>, char)> {
    let cps = check_symbols(values.get("alphabet"), "alphabet", 1, None)?;
    let mut sorted = cps.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != cps.len() {
        return Err(Refusal::relation("distinct", &["alphabet"]).into());
    }
    let pad = check_symbols(values.get("pad"), "pad", 1, Some(1))?[0];
    if cps.contains(&pad) {
        return Err(Refusal::relation("pad_not_in_alphabet", &["pad", "alphabet"]).into());
    }
    if cps.len() > (1 << 16) - 2 {
        return Err(Refusal::value(RefusalCode::ParamLength)
            .with("param", "alphabet")
            .with("got", cps.len())
            .with("min", 1)
            .with("max", (1 << 16) - 2)
            .into());
    }
    Ok((cps, pad))
}

/// The `replacement` symbol of characters outside the alphabet (null: none), one of the alphabet's.
fn replacement_of(values: &ParamValues, cps: &[char]) -> Result<Option<char>> {
    Ok(match values.get("replacement") {
        Value::Null => None,
        rep => {
            let c = check_symbols(rep, "replacement", 1, Some(1))?[0];
            if !cps.contains(&c) {
                return Err(Refusal::relation("replacement_in_alphabet", &["replacement", "alphabet"]).into());
            }
            Some(c)
        }
    })
}

const WORD_NAMES: [&str; 4] = ["word_hash", "word_bits", "word_row", "word_bit"];
const FRAGMENT_NAMES: [&str; 4] = ["fragment_hash", "fragment_bits", "fragment_row", "fragment_bit"];

fn prefixed(fields: Vec<PayloadField>, names: &[&'static str; 4]) -> Vec<PayloadField> {
    fields
        .into_iter()
        .map(|f| {
            let name = match f.name.as_ref() {
                "hash" => names[0],
                "bits" => names[1],
                "row" => names[2],
                _ => names[3],
            };
            PayloadField { name: name.into(), ..f }
        })
        .collect()
}

impl ProtocolParams for SfpParams {
    common_params!("sfp");
    fn privacy_cost(&self) -> PrivacyCost {
        PrivacyCost::pure(self.word.privacy_cost().epsilon + self.fragment.privacy_cost().epsilon)
    }
    fn schema(&self) -> Vec<PayloadField> {
        let mut out = vec![PayloadField::uint("position", self.num_positions())];
        out.extend(prefixed(self.word.schema(), &WORD_NAMES));
        out.extend(prefixed(self.fragment.schema(), &FRAGMENT_NAMES));
        out
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}

/// A word as the client encodes it: its padded symbol indices, its hash and its UTF-8 bytes.
struct PreparedWord {
    padded: Vec<usize>,
    hash: u64,
    data: Vec<u8>,
}

struct Sfp(Arc<SfpParams>);

fn sketch_payload(
    s: &SketchParams,
    rng: &mut dyn RandomSource,
    data: &[u8],
    names: &[&'static str; 4],
) -> Result<Payload> {
    if s.protocol() == "cms" {
        let (j, bits) = s.draw_cms(rng, data)?;
        return Ok(vec![(names[0].into(), PayloadValue::Uint(j)), (names[1].into(), PayloadValue::Bits(bits))]);
    }
    let (j, row, bit) = s.draw_hcms(rng, data)?;
    Ok(vec![
        (names[0].into(), PayloadValue::Uint(j)),
        (names[2].into(), PayloadValue::Uint(row)),
        (names[3].into(), PayloadValue::Uint(bit)),
    ])
}

impl Mechanism for Sfp {
    type Checked = PreparedWord;

    fn check(&mut self, value: &Value) -> Result<PreparedWord> {
        self.0.prepare_word(value)
    }

    fn charge(&mut self, _: &PreparedWord) -> Result<Charge> {
        Ok(Charge::Plain(self.0.privacy_cost()))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, w: &PreparedWord, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        let position = rng.randbelow(p.num_positions())?;
        let mut out = vec![("position".into(), PayloadValue::Uint(position))];
        out.extend(sketch_payload(&p.word, rng, &w.data, &WORD_NAMES)?);
        out.extend(sketch_payload(&p.fragment, rng, &p.fragment_record(w, position), &FRAGMENT_NAMES)?);
        Ok(out)
    }
}

/// The `sfp` protocol.
pub(crate) static SFP: Protocol = Protocol {
    name: "sfp",
    class_name: "SfpParams",
    table: tables::SFP,
    needs_secret: false,
    create: |v| Ok(Arc::new(SfpParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<SfpParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Sfp(params)))
    },
    cohorts: |_| 0,
};
