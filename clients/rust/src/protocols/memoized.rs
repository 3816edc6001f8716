//! Memoized (permanent) responses derived from the metric secret (Python's `_SecretEncoder`,
//! `ldp/encoders/longitudinal_memo.py`; docs/conformance.md "Memoized protocols").
//!
//! The permanent response of index `i` is drawn from the keyed stream of
//! `(secret, "ldp/longitudinal/prr/v1\0" ‖ fp ‖ uint32_BE(i))`, the same every time, and its charge is memoized per
//! `i` with `memo_key = HMAC-SHA256(secret, "ldp/longitudinal/memo/v1\0" ‖ fp ‖ uint32_BE(i))`. With
//! [`EncoderOptions::prr_rng`] (audits) each response is drawn from that source once and kept.

use std::collections::HashMap;

use crate::bytes::{hmac_sha256, uint32_be};
use crate::cost::PrivacyCost;
use crate::encoder::{Charge, EncoderOptions};
use crate::error::{Error, Refusal, RefusalCode, Result};
use crate::pymath;
use crate::random::{KeyedRandomSource, RandomSource};

/// Memoized responses kept in memory (each recomputable from the secret).
pub const MEMO_ENTRIES: usize = 4096;
/// Most reports [`memo_report_charge`] examines before it falls back to the cap.
pub const MAX_CHARGE_REPORTS: u32 = 64;

const PRR_DOMAIN: &[u8] = b"ldp/longitudinal/prr/v1\0";
const MEMO_DOMAIN: &[u8] = b"ldp/longitudinal/memo/v1\0";

/// The permanent responses of one encoder, and their charges.
pub(crate) struct Memo<T> {
    secret: Vec<u8>,
    prr_rng: Option<Box<dyn RandomSource>>,
    fp: Vec<u8>,
    memo: HashMap<u64, T>,
}

impl<T: Clone> Memo<T> {
    /// Takes the secret (and the audit source) out of `options`; a `TypeError` if a secret is needed and missing.
    pub(crate) fn new(protocol: &str, fingerprint: &str, options: &mut EncoderOptions) -> Result<Self> {
        let prr_rng = options.prr_rng.take();
        let secret = match options.secret.take() {
            Some(s) => s,
            None if prr_rng.is_some() => b"audit".to_vec(),
            None => {
                return Err(Error::type_(format!(
                    "{protocol} needs the metric secret (EncoderOptions.secret): its permanent responses derive from it"
                )))
            }
        };
        if secret.is_empty() {
            return Err(Error::from(
                Refusal::type_(RefusalCode::ParamLength).with("param", "secret").with("got", 0).with("min", 1),
            ));
        }
        Ok(Memo { secret, prr_rng, fp: fingerprint.as_bytes().to_vec(), memo: HashMap::new() })
    }

    fn message(&self, domain: &[u8], index: u64) -> Vec<u8> {
        let mut m = Vec::with_capacity(domain.len() + self.fp.len() + 4);
        m.extend_from_slice(domain);
        m.extend_from_slice(&self.fp);
        m.extend_from_slice(&uint32_be(index as u32));
        m
    }

    /// The permanent response of `index`, drawn by `draw` from the keyed stream (or the audit source, once).
    pub(crate) fn get(&mut self, index: u64, draw: impl FnOnce(&mut dyn RandomSource) -> Result<T>) -> Result<T> {
        if let Some(v) = self.memo.get(&index) {
            return Ok(v.clone());
        }
        let value = match self.prr_rng.as_mut() {
            Some(src) => draw(src.as_mut())?,
            None => {
                let mut msg = self.message(PRR_DOMAIN, index);
                // The keyed stream's message is fp ‖ uint32_BE(i) after the domain; the key is the secret.
                let mut src = KeyedRandomSource::new(&self.secret, &msg)?;
                msg.fill(0);
                draw(&mut src)?
            }
        };
        if self.prr_rng.is_some() || self.memo.len() < MEMO_ENTRIES {
            self.memo.insert(index, value.clone());
        }
        Ok(value)
    }

    /// The memo key of `index`.
    pub(crate) fn key(&self, index: u64) -> Result<Vec<u8>> {
        let m = self.message(MEMO_DOMAIN, index);
        Ok(hmac_sha256(&self.secret, &[&m])?.to_vec())
    }

    /// `charging = "min"`: `one` per report, at most `cap` per memo key.
    pub(crate) fn charge(&self, index: u64, one: PrivacyCost, cap: PrivacyCost) -> Result<Charge> {
        Ok(Charge::Memoized { key: self.key(index)?, first: one, then: one, cap })
    }

    /// The audit source of permanent responses, if any (a protocol drawing more than one kind of permanent value
    /// draws them all from it in an audit).
    pub(crate) fn audit_rng(&mut self) -> Option<&mut (dyn RandomSource + 'static)> {
        self.prr_rng.as_deref_mut()
    }

    /// The secret (for protocols that derive more than the permanent responses from it).
    pub(crate) fn secret(&self) -> &[u8] {
        &self.secret
    }
}

/// The per-report charge of `charging="min"` (Python's `memo_report_charge`): `max_{t≤T} L(t)/t` (at least `one`)
/// with `T` the first `t` at which `t·c ≥ cap`; `cap` if there is none within [`MAX_CHARGE_REPORTS`].
pub(crate) fn memo_report_charge(one: PrivacyCost, cap: PrivacyCost, leakage: impl Fn(u32) -> f64) -> PrivacyCost {
    let mut c = one.epsilon;
    for t in 1..=MAX_CHARGE_REPORTS {
        c = c.max(leakage(t) / t as f64);
        if t as f64 * c >= cap.epsilon {
            return PrivacyCost::pure(c.min(cap.epsilon));
        }
    }
    cap
}

/// `log(e^a + e^b)` as Python's `_logaddexp`.
pub(crate) fn logaddexp(a0: f64, b0: f64) -> f64 {
    let a = a0.max(b0);
    let b = a0.min(b0);
    if b == f64::NEG_INFINITY {
        a
    } else {
        a + pymath::log1p(pymath::exp(b - a))
    }
}
