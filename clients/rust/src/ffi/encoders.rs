//! Encoders (no ledger: simulations, tests, apps with their own budget rules): `LdpEncoder` checks a value into an
//! `LdpPrepared`, says what its report costs (`LdpCharge`) and randomizes it into an upload line.

use std::ffi::c_char;
use std::ptr;
use std::sync::Arc;

use super::handles::{free_handle, handle, handle_mut, new_handle};
use super::last_error::guard;
use super::marshal::{c_bytes, c_str, c_utf8, invalid, new_string, out, parse_value};
use super::{LdpRandom, LdpSpec, LdpStatus};
use crate::encoder::{envelope_json, Charge, Encoder, EncoderOptions, Prepared};
use crate::random::RandomSource;
use crate::spec::CollectionSpec;

/// The encoder of one metric of a spec, with no ledger.
pub struct LdpEncoder {
    encoder: Encoder,
    spec: Arc<CollectionSpec>,
    metric: String,
}

/// A checked value, ready to be charged and randomized.
pub struct LdpPrepared(Prepared);

/// What a report costs, as the ledger charges it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LdpCharge {
    /// 0: a plain cost (`epsilon`, `delta`); 1: a memoized response (`first_*` for the first report of `key_hex`,
    /// `epsilon`/`delta` each later one, never more than `cap_*`); 2: charged on change (`epsilon`/`delta` when
    /// `value_hex` differs from the stream `key_hex`'s last value).
    pub kind: u32,
    /// ε charged (each later report of a memoized key; a change).
    pub epsilon: f64,
    /// δ charged.
    pub delta: f64,
    /// The first report of a memoized key: ε.
    pub first_epsilon: f64,
    /// The first report of a memoized key: δ.
    pub first_delta: f64,
    /// The most a memoized key is ever charged: ε.
    pub cap_epsilon: f64,
    /// The most a memoized key is ever charged: δ.
    pub cap_delta: f64,
    /// The memo key or the change stream, in hex (64 digits and a NUL; empty for a plain cost).
    pub key_hex: [c_char; 65],
    /// The change value, in hex (64 digits and a NUL; empty unless `kind` is 2).
    pub value_hex: [c_char; 65],
}

fn hex_field(bytes: &[u8]) -> [c_char; 65] {
    let mut out = [0 as c_char; 65];
    for (i, c) in crate::bytes::hex(bytes).bytes().take(64).enumerate() {
        out[i] = c as c_char;
    }
    out
}

/// An encoder of `metric` of `spec`. `secret` (`secret_len` bytes, or null and 0) is the metric secret of a
/// memoizing protocol; `cohort` a RAPPOR device's cohort (−1: none); `random` the randomness (null: the OS
/// generator; the encoder shares the handle's source).
///
/// # Safety
/// Pointers valid as documented; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn ldp_encoder_new(
    spec: *const LdpSpec,
    metric: *const c_char,
    secret: *const u8,
    secret_len: usize,
    cohort: i64,
    random: *const LdpRandom,
    out: *mut *mut LdpEncoder,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let spec = handle(spec, "spec")?.0.clone();
        let metric = c_str(metric, "metric")?;
        let m = spec.metric(metric)?;
        let secret = if secret.is_null() && secret_len == 0 {
            None
        } else {
            Some(c_bytes(secret, secret_len, "secret")?.to_vec())
        };
        let cohort = match cohort {
            -1 => None,
            c => Some(u32::try_from(c).map_err(|_| invalid(format!("cohort must be -1 or in [0, 2^32), got {c}")))?),
        };
        let rng: Option<Box<dyn RandomSource>> =
            if random.is_null() { None } else { Some(Box::new(handle(random, "random")?.clone())) };
        let encoder = m.protocol().encoder(m.params.clone(), EncoderOptions { rng, secret, cohort, prr_rng: None })?;
        *o = new_handle(LdpEncoder { encoder, spec: spec.clone(), metric: metric.to_string() });
        Ok(())
    })
}

/// Checks a value given as JSON (`value_json`, `len` bytes): `3`, `"red"`, `0.25`, `[1, 0]`, … Draws nothing.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_encoder_prepare(
    encoder: *mut LdpEncoder,
    value_json: *const u8,
    len: usize,
    out: *mut *mut LdpPrepared,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let e = handle_mut(encoder, "encoder")?;
        let value = parse_value(c_utf8(value_json, len, "the value")?)?;
        *o = new_handle(LdpPrepared(e.encoder.prepare(&value)?));
        Ok(())
    })
}

/// What the prepared value's report costs.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_prepared_charge(prepared: *const LdpPrepared, out: *mut LdpCharge) -> LdpStatus {
    guard(|| {
        let p = handle(prepared, "prepared")?;
        let o = self::out(out, "out")?;
        let empty = [0 as c_char; 65];
        *o = match p.0.charge() {
            Charge::Plain(c) => LdpCharge {
                kind: 0,
                epsilon: c.epsilon,
                delta: c.delta,
                first_epsilon: c.epsilon,
                first_delta: c.delta,
                cap_epsilon: c.epsilon,
                cap_delta: c.delta,
                key_hex: empty,
                value_hex: empty,
            },
            Charge::Memoized { key, first, then, cap } => LdpCharge {
                kind: 1,
                epsilon: then.epsilon,
                delta: then.delta,
                first_epsilon: first.epsilon,
                first_delta: first.delta,
                cap_epsilon: cap.epsilon,
                cap_delta: cap.delta,
                key_hex: hex_field(key),
                value_hex: empty,
            },
            Charge::Change { stream, value, cost } => LdpCharge {
                kind: 2,
                epsilon: cost.epsilon,
                delta: cost.delta,
                first_epsilon: cost.epsilon,
                first_delta: cost.delta,
                cap_epsilon: cost.epsilon,
                cap_delta: cost.delta,
                key_hex: hex_field(stream),
                value_hex: hex_field(value),
            },
        };
        Ok(())
    })
}

/// Randomizes a prepared value into one upload line (the envelope: spec fingerprint, metric, `window`, report) in
/// `*line` (free it with `ldp_string_free`). `epoch` is the ledger's epoch of a charge-on-change protocol (−1:
/// none).
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_encoder_randomize(
    encoder: *mut LdpEncoder,
    prepared: *const LdpPrepared,
    epoch: i64,
    window: u64,
    line: *mut *mut c_char,
) -> LdpStatus {
    guard(|| {
        let o = self::out(line, "line")?;
        *o = ptr::null_mut();
        let e = handle_mut(encoder, "encoder")?;
        let p = handle(prepared, "prepared")?;
        let epoch = if epoch < 0 { None } else { Some(epoch as u64) };
        let report = e.encoder.randomize(&p.0, epoch)?;
        *o = new_string(envelope_json(e.spec.fingerprint(), &e.metric, window, &report))?;
        Ok(())
    })
}

/// Frees a prepared value (null is ignored).
///
/// # Safety
/// `prepared` is null or a handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_prepared_free(prepared: *mut LdpPrepared) {
    free_handle(prepared);
}

/// Frees an encoder (null is ignored).
///
/// # Safety
/// `encoder` is null or a handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_encoder_free(encoder: *mut LdpEncoder) {
    free_handle(encoder);
}
