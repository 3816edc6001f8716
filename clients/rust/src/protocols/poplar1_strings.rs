//! The spec's string metric kind over two aggregators (`poplar1`, issue 89): a metric whose values are text strings,
//! shared exactly with the two aggregators as the two IDPF keys of Poplar1 (VDAF draft 18 §8; Boneh et al. 2021,
//! "Lightweight techniques for private heavy hitters"), whose collector walks the prefix tree and keeps the prefixes
//! whose noised count passes its threshold (`ldp collect --heavy-hitters`).
//!
//! ```json
//! "new_words": {"protocol": "poplar1", "params": {"bits": 64, "threshold": 20, "max_candidates": 1024},
//!               "budget": {"per_report": 1.0}, "trust": "two-aggregator"}
//! ```
//!
//! It has no local randomizer: the device shares the exact string, so it is a metric of the `two-aggregator` trust
//! model only (the spec checker refuses any other), and not one of the registry's protocols
//! ([`crate::protocols::get`] names the local ones). Its parameters: `bits`, a multiple of 8 in [8, 256] (strings of
//! `bits / 8` bytes); `threshold` T ≥ 1, the collector's; `max_candidates` in [2, 2^20], the most candidate prefixes
//! one level asks for.
//!
//! **A value** is a text string whose UTF-8 bytes are at most `bits / 8` and do not end in a 0x00 byte; its
//! *measurement* is those bytes right-padded with 0x00 to `bits / 8` bytes, the first bit the most significant of
//! the first byte ([`measurement_bytes`]; Python's `ldp.prio.poplar1.bits_of`). A trailing NUL is refused because
//! the padding would make `"ab"` and `"ab\0"` one string.
//!
//! Its [`Encoder`] checks values ([`Encoder::prepare`]) and makes no local report: a
//! [`TelemetryClient`](crate::TelemetryClient) given the metric's Poplar1 task (feature `poplar1`) seals the
//! measurement into a DAP-09 report for the task's two aggregators instead.

use std::sync::Arc;

use serde_json::Value;

use crate::cost::PrivacyCost;
use crate::encoder::{common_params, downcast, Charge, Encoder, Mechanism, Payload, Protocol};
use crate::error::{Error, Refusal, RefusalCode, Result};
use crate::params::{fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables::{Bound, ParamRange, ParamRow, ParamType};
use crate::random::RandomSource;

/// The protocol's name in a spec.
pub const NAME: &str = "poplar1";

/// The longest string, in bits (32 bytes): the Poplar1 client's bound (`ldp_client::poplar1::MAX_BITS`).
pub const MAX_BITS: i64 = 256;

/// The most candidate prefixes one level of the walk may ask for (2^20).
pub const MAX_CANDIDATES: i64 = 1 << 20;

const fn at_least(min: i64, max: Option<i64>) -> ParamRange {
    let max = match max {
        Some(m) => Some(Bound::Int(m)),
        None => None,
    };
    ParamRange {
        min: Some(Bound::Int(min)),
        max,
        min_exclusive: false,
        max_exclusive: false,
        finite: false,
        dynamic: false,
    }
}

/// The rule of a `bits` that is no multiple of 8 (`param_relation`; the spec reports it at `params.bits`).
pub const WHOLE_BYTES: &str = "whole_bytes";

/// The parameters of `poplar1`, in the order they are checked: `bits` (int, in [8, 256], a multiple of 8),
/// `threshold` (int, ≥ 1) and `max_candidates` (int, in [2, 2^20]); all required.
pub const TABLE: &[ParamRow] = &[
    ParamRow { name: "bits", ty: ParamType::Int, default: None, ranges: &[at_least(8, Some(MAX_BITS))], choices: &[] },
    ParamRow { name: "threshold", ty: ParamType::Int, default: None, ranges: &[at_least(1, None)], choices: &[] },
    ParamRow {
        name: "max_candidates",
        ty: ParamType::Int,
        default: None,
        ranges: &[at_least(2, Some(MAX_CANDIDATES))],
        choices: &[],
    },
];

/// The parameters of a `poplar1` metric (module documentation).
#[derive(Debug)]
pub struct Poplar1Params {
    values: ParamValues,
    fingerprint: String,
    /// The strings' length in bits (a multiple of 8).
    pub bits: u32,
    /// The collector's threshold T: a prefix is kept when its noised count is at least T.
    pub threshold: u64,
    /// The most candidate prefixes one level asks for.
    pub max_candidates: u64,
}

impl Poplar1Params {
    fn new(values: ParamValues) -> Result<Self> {
        let bits = values.int("bits")?;
        if bits % 8 != 0 {
            return Err(Refusal::relation(WHOLE_BYTES, &["bits"]).into());
        }
        let threshold = values.int("threshold")?;
        let max_candidates = values.int("max_candidates")?;
        let fingerprint = fingerprint_of(NAME, &values);
        // In range, so these fit: bits ≤ 256, the others checked ≥ 1 and at most 128 bits wide.
        Ok(Poplar1Params {
            values,
            fingerprint,
            bits: bits as u32,
            threshold: u64::try_from(threshold).unwrap_or(u64::MAX),
            max_candidates: max_candidates as u64,
        })
    }

    /// Bytes of a measurement: `bits / 8`.
    pub fn measurement_len(&self) -> usize {
        self.bits as usize / 8
    }
}

impl ProtocolParams for Poplar1Params {
    common_params!(NAME);

    /// Nothing locally: the exact string is shared, and the spec's `budget.per_report` is what a report is charged
    /// ([`CollectionSpec::report_charge`](crate::CollectionSpec::report_charge)).
    fn privacy_cost(&self) -> PrivacyCost {
        PrivacyCost::ZERO
    }

    /// No local report: no payload fields.
    fn schema(&self) -> Vec<PayloadField> {
        Vec::new()
    }
}

/// The measurement of `value` for `bits`-bit strings (`bits` a multiple of 8): its UTF-8 bytes right-padded with
/// 0x00 to `bits / 8` bytes. Refused, in this order (Python's `Poplar1Params.measurement_bytes`): a value that is
/// not a string (`value_type`, expected `string_or_bytes`, as every string protocol's); one of more than `bits / 8`
/// bytes (`value_too_long`, `unit` `bytes`); one ending in a NUL byte (`not_in_alphabet`, `char` NUL: the padding
/// would hide it; a NUL inside is kept).
pub fn measurement_bytes(bits: u32, value: &Value) -> Result<Vec<u8>> {
    let Value::String(text) = value else {
        return Err(Refusal::value_type("string_or_bytes", value).into());
    };
    let size = bits as usize / 8;
    let mut out = text.as_bytes().to_vec();
    if out.len() > size {
        return Err(Refusal::value(RefusalCode::ValueTooLong)
            .with("got", out.len())
            .with("max", size)
            .with("unit", "bytes")
            .into());
    }
    if out.last() == Some(&0) {
        return Err(Refusal::value(RefusalCode::NotInAlphabet).with("char", "\0").into());
    }
    out.resize(size, 0);
    Ok(out)
}

/// A checked value: its measurement's bytes ([`measurement_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StringMeasurement(pub(crate) Vec<u8>);

struct Poplar1Strings(Arc<Poplar1Params>);

impl Mechanism for Poplar1Strings {
    type Checked = StringMeasurement;

    fn check(&mut self, value: &Value) -> Result<StringMeasurement> {
        measurement_bytes(self.0.bits, value).map(StringMeasurement)
    }

    /// Nothing: a two-aggregator report is charged its task's charge.
    fn charge(&mut self, _: &StringMeasurement) -> Result<Charge> {
        Ok(Charge::Plain(PrivacyCost::ZERO))
    }

    fn draw(&mut self, _: &mut dyn RandomSource, _: &StringMeasurement, _: Option<u64>) -> Result<Payload> {
        Err(Error::value(
            "poplar1 has no local report: its strings are shared with two aggregators (give the client the metric's \
             Poplar1 task)",
        ))
    }
}

/// The `poplar1` metric kind (not in the registry of local protocols: module documentation).
pub(crate) static POPLAR1: Protocol = Protocol {
    name: NAME,
    class_name: "Poplar1Params",
    table: TABLE,
    needs_secret: false,
    create: |v| Ok(Arc::new(Poplar1Params::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<Poplar1Params>(&p)?;
        Ok(Encoder::new(p, o.rng, Poplar1Strings(params)))
    },
    cohorts: |_| 0,
};

#[cfg(all(test, feature = "poplar1"))]
const _: () = assert!(MAX_BITS as usize == crate::poplar1::MAX_BITS);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_padded_utf8_and_refused_by_code() {
        assert_eq!(measurement_bytes(32, &json!("ab")).unwrap(), b"ab\0\0");
        assert_eq!(measurement_bytes(16, &json!("é")).unwrap(), "é".as_bytes());
        assert_eq!(measurement_bytes(8, &json!("")).unwrap(), [0]);
        let code = |bits, v: Value| measurement_bytes(bits, &v).unwrap_err().refusal().map(|r| r.code);
        assert_eq!(code(16, json!("abc")), Some(RefusalCode::ValueTooLong));
        assert_eq!(code(16, json!("é!")), Some(RefusalCode::ValueTooLong), "3 bytes, 2 characters");
        assert_eq!(code(32, json!("ab\u{0}")), Some(RefusalCode::NotInAlphabet));
        assert_eq!(measurement_bytes(32, &json!("a\u{0}b")).unwrap(), b"a\0b\0", "a NUL inside is kept");
        for v in [json!(1), json!(true), Value::Null, json!(["a"])] {
            assert_eq!(code(32, v), Some(RefusalCode::ValueType));
        }
    }
}
