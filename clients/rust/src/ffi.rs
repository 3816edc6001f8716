//! The C interface (`include/ldp_client.h`, generated from this file by cbindgen and checked by a test).
//!
//! Conventions: every function returns an [`LdpStatus`] (0 is success) and writes its results through out
//! pointers; on failure, [`ldp_last_error_message`] and [`ldp_last_error_type`] describe the error, and for a refused
//! parameter or value [`ldp_last_error_code`] and [`ldp_last_error_fields`] say what was refused by meaning. The last
//! error is the calling thread's, and it is kept until the thread's next FAILING call, as `errno` is: a call that
//! succeeds (any `ldp_*` function returning `LDP_OK`), a `_free` function, a count or a getter leaves it as it was,
//! so a caller may clean up before reading it. So read it only after a status that is not `LDP_OK`: after a
//! success it may describe an older failure. Each failing call replaces all four (a failure that is no refusal
//! empties the code and fields). Handles are opaque and freed by their own `_free` function (a null handle is ignored);
//! strings the library returns are freed with [`ldp_string_free`]. Inputs are UTF-8 byte ranges (pointer and
//! length) or NUL-terminated UTF-8 strings; a null pointer, invalid UTF-8 or an oversized input is an
//! `LDP_INVALID_ARGUMENT`, never a crash. A panic inside the library is caught and returned as `LDP_INTERNAL`.
//! Every handle carries a tag of its kind: a handle of another kind (a spec passed as a client) is an
//! `LDP_INVALID_ARGUMENT` too, and a `_free` function ignores it.
//!
//! Threads: an `LdpClient` may be used from any number of threads at once (its calls serialize on the store's
//! lock), and so may an `LdpPrio3`, `LdpPrio3Shares` and `LdpDapReport` (they never change); an `LdpEncoder`,
//! `LdpRandom` or `LdpRequest` by one thread at a time.
//!
//! The Prio3 sharding of the two-aggregator mode (feature `prio`, `ldp_prio3_*`) is in `src/ffi/sharding.rs`, its
//! DAP-09 reports (`ldp_dap_*`) in `src/ffi/dap_report.rs`.

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex};

use crate::client::TelemetryClient;
use crate::encoder::{envelope_json, Charge, Encoder, EncoderOptions, Prepared};
use crate::error::{Error, RefusalKind, Result};
use crate::ledger::{FileStore, MemoryStore};
use crate::random::{KeyedRandomSource, OsRandomSource, RandomSource, ReplaySource};
use crate::spec::CollectionSpec;
use crate::upload::{Batch, Outbox, Reply, UploadRequest};
use crate::Value;

/// The result of every call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdpStatus {
    /// Success.
    LdpOk = 0,
    /// A value or parameter of the right type but a wrong value (Python's `ValueError`).
    LdpValueError = 1,
    /// A value or parameter of the wrong type (Python's `TypeError`).
    LdpTypeError = 2,
    /// An invalid collection spec (every problem in the message).
    LdpSpecError = 3,
    /// A privacy budget would be exceeded: nothing was charged, no report was made.
    LdpBudgetExceeded = 4,
    /// The ledger's state cannot be read or written safely (damaged file, lock timeout, I/O).
    LdpLedgerError = 5,
    /// A null pointer, invalid UTF-8, an oversized input, or a handle of the wrong kind.
    LdpInvalidArgument = 6,
    /// A replayed random source ran out or was asked for another draw (conformance tests).
    LdpReplayError = 7,
    /// An upload failed for now: the batch stays queued and will be retried.
    LdpTransportError = 8,
    /// The collector refused a batch for good.
    LdpUploadRejected = 9,
    /// A bug in the library (a caught panic): please report it.
    LdpInternal = 10,
    /// The outbox is full (`max_outbox_bytes`): nothing was charged or stored; uploading makes room.
    LdpOutboxFull = 11,
    /// The device opted out (`ldp_client_opt_out`): nothing was charged or stored until `ldp_client_opt_in`.
    LdpOptedOut = 12,
}

impl From<&Error> for LdpStatus {
    fn from(e: &Error) -> Self {
        match e {
            Error::Refusal(r) => match r.kind {
                RefusalKind::Type => LdpStatus::LdpTypeError,
                RefusalKind::Value => LdpStatus::LdpValueError,
            },
            Error::Item { error, .. } => LdpStatus::from(error.as_ref()),
            Error::Value(_) => LdpStatus::LdpValueError,
            Error::Type(_) => LdpStatus::LdpTypeError,
            Error::Spec { .. } => LdpStatus::LdpSpecError,
            Error::BudgetExceeded { .. } => LdpStatus::LdpBudgetExceeded,
            Error::Ledger(_) => LdpStatus::LdpLedgerError,
            Error::InvalidArgument(_) => LdpStatus::LdpInvalidArgument,
            Error::Replay(_) => LdpStatus::LdpReplayError,
            Error::Transport(_) => LdpStatus::LdpTransportError,
            Error::UploadRejected { .. } => LdpStatus::LdpUploadRejected,
            Error::Internal(_) => LdpStatus::LdpInternal,
            Error::OutboxFull { .. } => LdpStatus::LdpOutboxFull,
            Error::OptedOut(_) => LdpStatus::LdpOptedOut,
        }
    }
}

/// The largest spec, value or reply a call accepts, in bytes (16 MiB).
pub const LDP_MAX_INPUT: usize = 1 << 24;

/// The longest wait `ldp_client_handle_reply` hands back for a `Retry-After`, in seconds (5 minutes, the built-in
/// uploader's default `max_delay`): a longer or absurd value from the collector is cut to it.
pub const LDP_MAX_RETRY_AFTER_SECONDS: u32 = 300;

/// The default cap of a client's outbox in bytes (1 MiB): `LdpClientOptions.max_outbox_bytes` 0 stands for it.
pub const LDP_DEFAULT_MAX_OUTBOX_BYTES: u64 = 1_048_576;
const _: () = assert!(LDP_DEFAULT_MAX_OUTBOX_BYTES == crate::client::DEFAULT_MAX_OUTBOX_BYTES);

/// The calling thread's last error: message, type, refusal code and refusal fields (JSON).
#[derive(Default)]
struct LastError {
    message: CString,
    ty: CString,
    code: CString,
    fields: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError::default());
}

fn set_error(e: &Error) {
    let text = |s: String| CString::new(s.replace('\0', "\\0")).unwrap_or_default();
    let (code, fields) = match e.refusal() {
        // serde_json escapes a NUL in a string as \u0000: the JSON text holds none.
        Some(r) => (text(r.code.as_str().into()), text(r.fields_json())),
        None => (CString::default(), CString::default()),
    };
    let last = LastError { message: text(e.to_string()), ty: text(e.python_type().into()), code, fields };
    LAST_ERROR.with(|l| *l.borrow_mut() = last);
}

/// Runs `f`, catching panics; the status of its result. A failure replaces the thread's last error; a success
/// leaves it as it was (as `errno`: the module's documentation says why).
fn guard(f: impl FnOnce() -> Result<()>) -> LdpStatus {
    let result = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Err(Error::Internal(format!("internal error (please report it): {what}")))
    });
    match result {
        Ok(()) => LdpStatus::LdpOk,
        Err(e) => {
            set_error(&e);
            LdpStatus::from(&e)
        }
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}

/// A NUL-terminated UTF-8 string argument.
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(invalid(format!("{what} is a null pointer")));
    }
    let bytes = CStr::from_ptr(p).to_bytes();
    if bytes.len() > LDP_MAX_INPUT {
        return Err(invalid(format!("{what} is over {LDP_MAX_INPUT} bytes")));
    }
    std::str::from_utf8(bytes).map_err(|e| invalid(format!("{what} is not valid UTF-8 ({e})")))
}

/// A byte range argument (`len` 0 with a null pointer is the empty range).
unsafe fn c_bytes<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    if len > LDP_MAX_INPUT {
        return Err(invalid(format!("{what} is over {LDP_MAX_INPUT} bytes ({len})")));
    }
    if p.is_null() {
        return if len == 0 { Ok(&[]) } else { Err(invalid(format!("{what} is a null pointer"))) };
    }
    Ok(std::slice::from_raw_parts(p, len))
}

unsafe fn c_utf8<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a str> {
    std::str::from_utf8(c_bytes(p, len, what)?).map_err(|e| invalid(format!("{what} is not valid UTF-8 ({e})")))
}

fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller passes a valid pointer or null; null is refused.
    unsafe { p.as_mut() }.ok_or_else(|| invalid(format!("{what} (an out pointer) is null")))
}

/// A handle's allocation: its kind's tag first, then the value. Every handle the library returns points to one, so
/// the first 8 bytes behind any live handle are a tag, and a handle of one kind passed where another is expected (a
/// spec for a client, say) is refused as `LDP_INVALID_ARGUMENT` instead of being read as the wrong type.
#[repr(C)]
struct Tagged<T> {
    tag: u64,
    value: T,
}

/// What a freed handle's tag is overwritten with before its memory goes (a second free is then ignored while the
/// allocator leaves the bytes alone).
const FREED: u64 = 0x6c64_7066_7265_6564; // "ldpfreed"

/// A kind of handle: its tag and its name in error messages.
trait Handle: Sized {
    const TAG: u64;
    const KIND: &'static str;
}

macro_rules! handle_kind {
    ($($t:ty => $tag:expr, $kind:expr;)*) => {$(
        impl Handle for $t {
            const TAG: u64 = $tag;
            const KIND: &'static str = $kind;
        }
    )*};
}

handle_kind! {
    LdpSpec => 0x6c64_7073_7065_6331, "a spec";
    LdpRandom => 0x6c64_7072_6e64_3031, "a random source";
    LdpEncoder => 0x6c64_7065_6e63_3031, "an encoder";
    LdpPrepared => 0x6c64_7070_7265_7031, "a prepared value";
    LdpClient => 0x6c64_7063_6c6e_7431, "a client";
    LdpRequest => 0x6c64_7072_6571_3031, "a request";
}

/// A new handle holding `value`.
fn new_handle<T: Handle>(value: T) -> *mut T {
    Box::into_raw(Box::new(Tagged { tag: T::TAG, value })).cast()
}

/// The value behind handle `p` if it is a live handle of `T`'s kind.
fn tagged<T: Handle>(p: *const T, what: &str) -> Result<*mut Tagged<T>> {
    if p.is_null() {
        return Err(invalid(format!("{what} is a null handle")));
    }
    // SAFETY: a non-null handle is one this library returned (a `Tagged` of some kind, at least 8 bytes, its tag
    // first) and the caller has not freed.
    let tag = unsafe { ptr::read(p.cast::<u64>()) };
    if tag != T::TAG {
        return Err(invalid(format!("{what} is not {} handle (a handle of another kind, or a freed one)", T::KIND)));
    }
    Ok(p.cast::<Tagged<T>>().cast_mut())
}

fn handle<'a, T: Handle>(p: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: checked by `tagged`: a live handle of this kind.
    Ok(unsafe { &(*tagged(p, what)?).value })
}

fn handle_mut<'a, T: Handle>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: as for `handle`, used by one thread at a time.
    Ok(unsafe { &mut (*tagged(p, what)?).value })
}

/// Frees handle `p` (null, or a handle of another kind, is ignored).
///
/// # Safety
/// `p` is null or a handle this library returned and the caller has not freed.
unsafe fn free_handle<T: Handle>(p: *mut T) {
    if let Ok(t) = tagged(p, "handle") {
        ptr::write_volatile(&mut (*t).tag, FREED);
        drop(Box::from_raw(t));
    }
}

fn new_string(s: String) -> Result<*mut c_char> {
    Ok(CString::new(s).map_err(|_| Error::Internal("a string with a NUL byte".into()))?.into_raw())
}

fn parse_value(text: &str) -> Result<Value> {
    crate::json::parse(text).map_err(|e| invalid(format!("the value is not one JSON document: {e}")))
}

/// The library's version (a static string).
#[no_mangle]
pub extern "C" fn ldp_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the calling thread's last error: of its last call that failed, kept through the successes since
/// (as `errno`; an empty string before the thread's first failure). Read it after a status that is not `LDP_OK`.
/// Valid until the thread's next failing call into the library; copy it to keep it.
#[no_mangle]
pub extern "C" fn ldp_last_error_message() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().message.as_ptr())
}

/// The class of the calling thread's last error, as every client of `ldp` names it (`ValueError`, `TypeError`,
/// `SpecError`, `BudgetExceeded`, …; empty before the thread's first failure). Kept as the message is; valid until
/// the thread's next failing call into the library.
#[no_mangle]
pub extern "C" fn ldp_last_error_type() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().ty.as_ptr())
}

/// The refusal code of the calling thread's last error when a protocol refused a parameter or a value
/// (`LDP_TYPE_ERROR` or `LDP_VALUE_ERROR`): a stable machine code such as `param_range`, `value_type` or
/// `unknown_label` (docs/conformance.md, "Refusals"). An empty string when the last error is no refusal (or before
/// the thread's first failure). Kept as the message is; valid until the thread's next failing call into the library.
#[no_mangle]
pub extern "C" fn ldp_last_error_code() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().code.as_ptr())
}

/// The fields of the calling thread's last refusal as a compact JSON object (`{"param":"epsilon","got":-1,
/// "min":0,"min_exclusive":true,"finite":true}`): each code's fields are listed in docs/conformance.md. A number
/// JSON cannot write (the NaN or infinity given to `ldp_client_record_double`) is `null`. An empty string when the
/// last error is no refusal (or before the thread's first failure). Kept as the message is; valid until the
/// thread's next failing call into the library.
#[no_mangle]
pub extern "C" fn ldp_last_error_fields() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().fields.as_ptr())
}

/// Frees a string the library returned (null is ignored).
///
/// # Safety
/// `s` is null or a string this library returned, not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(CString::from_raw(s));
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Specs

/// A validated collection spec.
pub struct LdpSpec(Arc<CollectionSpec>);

/// Parses and validates a collection spec (`json`, `len` bytes of UTF-8 JSON) into `*out`.
///
/// # Safety
/// `json` points to `len` readable bytes (or is null with `len` 0); `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn ldp_spec_parse(json: *const u8, len: usize, out: *mut *mut LdpSpec) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let text = c_utf8(json, len, "the spec")?;
        let spec = CollectionSpec::parse(text)?;
        *o = new_handle(LdpSpec(Arc::new(spec)));
        Ok(())
    })
}

/// Writes the spec's fingerprint (16 hex digits and a NUL) into `out`, which has room for 17 bytes.
///
/// # Safety
/// `spec` is a live spec handle; `out` points to 17 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ldp_spec_fingerprint(spec: *const LdpSpec, out: *mut c_char) -> LdpStatus {
    guard(|| {
        let spec = handle(spec, "spec")?;
        if out.is_null() {
            return Err(invalid("out is a null pointer"));
        }
        let fp = spec.0.fingerprint().as_bytes();
        ptr::copy_nonoverlapping(fp.as_ptr().cast::<c_char>(), out, fp.len().min(16));
        *out.add(fp.len().min(16)) = 0;
        Ok(())
    })
}

/// Frees a spec (null, or a handle of another kind, is ignored). Clients and encoders made from it keep their own
/// reference.
///
/// # Safety
/// `spec` is null or a spec handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_spec_free(spec: *mut LdpSpec) {
    free_handle(spec);
}

// ---------------------------------------------------------------------------------------------------------------
// Random sources (tests and simulations; apps use the OS generator, the default)

/// A random source shared by the handles using it.
#[derive(Clone)]
pub struct LdpRandom(Arc<Mutex<Box<dyn RandomSource>>>);

impl RandomSource for LdpRandom {
    fn bits(&mut self, k: u32) -> Result<u64> {
        self.0.lock().map_err(|_| Error::Internal("poisoned".into()))?.bits(k)
    }
    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        self.0.lock().map_err(|_| Error::Internal("poisoned".into()))?.wide_bits(k, into)
    }
    fn token_bytes(&mut self, n: usize) -> Result<Vec<u8>> {
        self.0.lock().map_err(|_| Error::Internal("poisoned".into()))?.token_bytes(n)
    }
}

fn new_random(src: impl RandomSource + 'static) -> *mut LdpRandom {
    new_handle(LdpRandom(Arc::new(Mutex::new(Box::new(src)))))
}

/// The OS generator (what every client uses by default).
///
/// # Safety
/// `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn ldp_random_os(out: *mut *mut LdpRandom) -> LdpStatus {
    guard(|| {
        // The out pointer first: an assignment evaluates its value before its place, so a null `out` would leak
        // the new handle.
        let o = self::out(out, "out")?;
        *o = new_random(OsRandomSource::new());
        Ok(())
    })
}

/// The keyed stream of `key` (non-empty) and `message`: the same key and message always give the same draws
/// (seeded simulations and tests).
///
/// # Safety
/// `key`/`message` point to their lengths of readable bytes; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn ldp_random_keyed(
    key: *const u8,
    key_len: usize,
    message: *const u8,
    message_len: usize,
    out: *mut *mut LdpRandom,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        let src = KeyedRandomSource::new(c_bytes(key, key_len, "key")?, c_bytes(message, message_len, "message")?)?;
        *o = new_random(src);
        Ok(())
    })
}

/// A source replaying recorded draws, given as text: `k:hex` pairs separated by commas (`64:1cab…,3:6`), the
/// conformance vectors' `draws`. Asked for a draw it does not hold, it fails with `LDP_REPLAY_ERROR`.
///
/// # Safety
/// `draws` is a NUL-terminated string; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn ldp_random_replay(draws: *const c_char, out: *mut *mut LdpRandom) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        let text = c_str(draws, "draws")?;
        let mut pairs = Vec::new();
        for item in text.split(',').filter(|s| !s.is_empty()) {
            let (k, hex) = item.split_once(':').ok_or_else(|| invalid(format!("draw {item:?} is not k:hex")))?;
            let k: u32 = k.parse().map_err(|_| invalid(format!("draw {item:?} has no bit count")))?;
            pairs.push((k, hex.to_string()));
        }
        *o = new_random(Replay(ReplaySource::new(&pairs)?));
        Ok(())
    })
}

struct Replay(ReplaySource);

impl RandomSource for Replay {
    fn bits(&mut self, k: u32) -> Result<u64> {
        self.0.bits(k)
    }
    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        self.0.wide_bits(k, into)
    }
    fn token_bytes(&mut self, n: usize) -> Result<Vec<u8>> {
        self.0.token_bytes(n)
    }
}

/// Frees a random source handle (null is ignored); encoders and clients using it keep their share.
///
/// # Safety
/// `random` is null or a handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_random_free(random: *mut LdpRandom) {
    free_handle(random);
}

// ---------------------------------------------------------------------------------------------------------------
// Encoders (no ledger: simulations, tests, apps with their own budget rules)

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

// ---------------------------------------------------------------------------------------------------------------
// Clients

/// One device's client of one collection: budget ledger, outbox, upload.
pub struct LdpClient {
    client: TelemetryClient,
    /// This handle's number: the requests it makes carry it.
    serial: u64,
}

/// Options of `ldp_client_open_with_options`. All zero (`LdpClientOptions options = {0};`) is every default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LdpClientOptions {
    /// The randomness: null for the OS generator (apps), a source for simulations and tests.
    pub random: *const LdpRandom,
    /// The most bytes of reports the outbox keeps waiting for upload (each report's envelope line and its newline,
    /// pinned batches included); a report that would go past it is refused with `LDP_OUTBOX_FULL`, nothing charged.
    /// 0: the default, `LDP_DEFAULT_MAX_OUTBOX_BYTES` (1 MiB).
    pub max_outbox_bytes: u64,
}

fn open_client(
    spec: *const LdpSpec,
    random: *const LdpRandom,
    max_outbox_bytes: u64,
    store: impl crate::ledger::StateStore + 'static,
) -> Result<LdpClient> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SERIAL: AtomicU64 = AtomicU64::new(1);
    let spec = handle(spec, "spec")?.0.as_ref().clone();
    let mut b = TelemetryClient::builder(spec, store);
    if !random.is_null() {
        b = b.rng(handle(random, "random")?.clone());
    }
    if max_outbox_bytes > 0 {
        b = b.max_outbox_bytes(max_outbox_bytes);
    }
    Ok(LdpClient { client: b.build()?, serial: SERIAL.fetch_add(1, Ordering::Relaxed) })
}

/// The client of `spec` keeping its state in the folder `state_dir` (created if missing; crash-safe, shared by the
/// app's processes). `random`: null for the OS generator (apps), a source for simulations.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_open(
    spec: *const LdpSpec,
    state_dir: *const c_char,
    random: *const LdpRandom,
    out: *mut *mut LdpClient,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let dir = c_str(state_dir, "state_dir")?;
        if dir.is_empty() {
            return Err(invalid("state_dir is empty"));
        }
        *o = new_handle(open_client(spec, random, 0, FileStore::open(dir)?)?);
        Ok(())
    })
}

/// `ldp_client_open` or `ldp_client_open_memory` with options: the client of `spec` keeping its state in the folder
/// `state_dir` (null: in memory), with `options` (null: every default; see `LdpClientOptions`). A folder whose
/// state is missing while traces of it remain (`outbox.*.log`, temporary state files) is refused with
/// `LDP_LEDGER_ERROR` naming them: delete the folder to start over as a new device.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_open_with_options(
    spec: *const LdpSpec,
    state_dir: *const c_char,
    options: *const LdpClientOptions,
    out: *mut *mut LdpClient,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let options =
            options.as_ref().copied().unwrap_or(LdpClientOptions { random: ptr::null(), max_outbox_bytes: 0 });
        let (random, max) = (options.random, options.max_outbox_bytes);
        let client = if state_dir.is_null() {
            open_client(spec, random, max, MemoryStore::new())?
        } else {
            let dir = c_str(state_dir, "state_dir")?;
            if dir.is_empty() {
                return Err(invalid("state_dir is empty"));
            }
            open_client(spec, random, max, FileStore::open(dir)?)?
        };
        *o = new_handle(client);
        Ok(())
    })
}

/// A client keeping its state in memory (simulations and tests; nothing survives the process).
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_open_memory(
    spec: *const LdpSpec,
    random: *const LdpRandom,
    out: *mut *mut LdpClient,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        *o = new_handle(open_client(spec, random, 0, MemoryStore::new())?);
        Ok(())
    })
}

fn record(client: *const LdpClient, metric: *const c_char, value: Value, id: *mut u64) -> Result<()> {
    let c = handle(client, "client")?;
    // SAFETY: the caller passes a NUL-terminated string.
    let metric = unsafe { c_str(metric, "metric") }?;
    let n = c.client.record(metric, &value)?;
    if !id.is_null() {
        // SAFETY: a non-null id is a valid pointer.
        unsafe { *id = n };
    }
    Ok(())
}

/// Records a value given as JSON (`value_json`, `len` bytes) for `metric`: checks it, charges the budget,
/// randomizes it and queues its line, all or nothing. `*id` (if not null) receives its outbox id.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_json(
    client: *const LdpClient,
    metric: *const c_char,
    value_json: *const u8,
    len: usize,
    id: *mut u64,
) -> LdpStatus {
    guard(|| record(client, metric, parse_value(c_utf8(value_json, len, "the value")?)?, id))
}

/// Records an integer (an index, a bit).
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_int(
    client: *const LdpClient,
    metric: *const c_char,
    value: i64,
    id: *mut u64,
) -> LdpStatus {
    guard(|| record(client, metric, Value::from(value), id))
}

/// Records a number (numeric protocols). NaN and infinities go through the protocol's checks as every other value
/// does, and are refused as Python refuses them, by the same status, code and fields: by a protocol that takes
/// numbers, `LDP_VALUE_ERROR` with code `value_range` and fields `got`, `min`, `max` and `"finite": true` (`got`
/// is `null` in `ldp_last_error_fields`: JSON has no NaN or infinity); by one that takes an index, a label or a
/// string, `LDP_TYPE_ERROR` with code `value_type` and `"got": "float"`. Nothing is charged or stored.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_double(
    client: *const LdpClient,
    metric: *const c_char,
    value: f64,
    id: *mut u64,
) -> LdpStatus {
    guard(|| record(client, metric, crate::value::real_value(value), id))
}

/// Records a string (`value`, `len` bytes of UTF-8: a label, a word, a URL).
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_string(
    client: *const LdpClient,
    metric: *const c_char,
    value: *const u8,
    len: usize,
    id: *mut u64,
) -> LdpStatus {
    guard(|| record(client, metric, Value::String(c_utf8(value, len, "the value")?.to_string()), id))
}

/// Records several values in ONE transaction (one `fsync` for all), all or nothing. `items_json` (`len` bytes of
/// UTF-8) is a JSON array of `[metric, value]` pairs: `[["app_category", "games"], ["dark_mode", 1]]`. Every value is
/// checked first (a bad one's message names its item: `record_many item 1 ("dark_mode"): …`), then each is charged
/// in order, seeing the ones before it; a spent budget (`LDP_BUDGET_EXCEEDED`), a full outbox (`LDP_OUTBOX_FULL`,
/// naming the first item that did not fit) or an opted-out device (`LDP_OPTED_OUT`) keeps none of them. On success
/// `ids` (null: not wanted) receives the items' outbox ids, in order; it has room for `ids_capacity` ids, and a
/// batch of more items is refused with `LDP_INVALID_ARGUMENT` before anything is recorded. An empty array records
/// nothing. Input that is not an array of `[string, value]` pairs is `LDP_INVALID_ARGUMENT`.
///
/// # Safety
/// `items_json` points to `len` readable bytes; `ids` is null or points to `ids_capacity` writable `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_many_json(
    client: *const LdpClient,
    items_json: *const u8,
    len: usize,
    ids: *mut u64,
    ids_capacity: usize,
) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        let text = c_utf8(items_json, len, "items_json")?;
        let doc = crate::json::parse(text).map_err(|e| invalid(format!("items_json is not one JSON document: {e}")))?;
        let Value::Array(list) = doc else {
            return Err(invalid("items_json must be a JSON array of [metric, value] pairs"));
        };
        let mut items = Vec::with_capacity(list.len());
        for (i, item) in list.into_iter().enumerate() {
            let pair = match item {
                Value::Array(pair) => <[Value; 2]>::try_from(pair).ok(),
                _ => None,
            };
            let Some([metric, value]) = pair else {
                return Err(invalid(format!("item {i} of items_json is not a [metric, value] pair")));
            };
            let Value::String(metric) = metric else {
                return Err(invalid(format!("item {i} of items_json does not start with a metric name (a string)")));
            };
            items.push((metric, value));
        }
        if !ids.is_null() && items.len() > ids_capacity {
            return Err(invalid(format!(
                "ids has room for {ids_capacity} id(s) and items_json holds {} items: nothing was recorded",
                items.len()
            )));
        }
        let recorded = c.client.record_many(&items)?;
        if !ids.is_null() {
            // SAFETY: the caller passes room for `ids_capacity` ids, at least `recorded.len()` (checked above).
            std::slice::from_raw_parts_mut(ids, recorded.len()).copy_from_slice(&recorded);
        }
        Ok(())
    })
}

/// What became of each metric's reports on this device, as a JSON object in `*json` (free it with
/// `ldp_string_free`): one member per metric with reports, sorted by name, each
/// `{"reports":n,"pending":n,"uploaded":n,"discarded":n}`: reports recorded, and of them waiting for upload,
/// acknowledged by the collector, and deleted unsent by `ldp_client_opt_out` (`reports` is always the sum of the
/// other three). `{}` before the first report. A read: it writes nothing.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_counts_json(client: *const LdpClient, json: *mut *mut c_char) -> LdpStatus {
    guard(|| {
        let o = self::out(json, "json")?;
        *o = ptr::null_mut();
        let c = handle(client, "client")?;
        let counts: serde_json::Map<String, Value> = c
            .client
            .counts()?
            .into_iter()
            .map(|(metric, n)| {
                let fields = [
                    ("reports", n.reports),
                    ("pending", n.pending),
                    ("uploaded", n.uploaded),
                    ("discarded", n.discarded),
                ];
                (metric, Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), Value::from(v))).collect()))
            })
            .collect();
        let text = serde_json::to_string(&Value::Object(counts))
            .map_err(|e| Error::Internal(format!("the counts cannot be written as JSON: {e}")))?;
        *o = new_string(text)?;
        Ok(())
    })
}

/// Reports waiting for upload, in `*count`.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_pending(client: *const LdpClient, count: *mut u64) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        *self::out(count, "count")? = c.client.pending()?;
        Ok(())
    })
}

/// Bytes waiting for upload as the outbox's cap counts them (each report's envelope line and newline), in `*bytes`.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_pending_bytes(client: *const LdpClient, bytes: *mut u64) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        *self::out(bytes, "bytes")? = c.client.pending_bytes()?;
        Ok(())
    })
}

/// Stops collection on this device (an app's privacy setting), in one crash-safe transaction: deletes every pending
/// report (counted as discarded by `ldp_client_counts_json`) and pinned batch, the device secret, the cohorts and
/// the memoized and charge-on-change records, and leaves a marker; the budget already spent and the upload salt
/// stay. Then every record is refused with `LDP_OPTED_OUT` before anything is charged, nothing is pending, no
/// request is made, in every process sharing the folder, until `ldp_client_opt_in`. Opting out again does nothing.
///
/// # Safety
/// `client` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_opt_out(client: *const LdpClient) -> LdpStatus {
    guard(|| handle(client, "client")?.client.opt_out())
}

/// Resumes collection after `ldp_client_opt_out`: removes the marker and draws a fresh device secret (new cohorts,
/// new memoized responses, each charged afresh when first used); the upload salt is the one kept. On a device that
/// did not opt out it does nothing.
///
/// # Safety
/// `client` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_opt_in(client: *const LdpClient) -> LdpStatus {
    guard(|| handle(client, "client")?.client.opt_in())
}

/// Whether the device opted out: `*opted_out` is 1 if so, else 0.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_opted_out(client: *const LdpClient, opted_out: *mut i32) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        *self::out(opted_out, "opted_out")? = i32::from(c.client.is_opted_out()?);
        Ok(())
    })
}

/// The (ε, δ) spent on `metric` (null: the whole collection) in the current window, or over the lifetime when
/// `lifetime` is non-zero.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_spent(
    client: *const LdpClient,
    metric: *const c_char,
    lifetime: i32,
    epsilon: *mut f64,
    delta: *mut f64,
) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        let m = if metric.is_null() { None } else { Some(c_str(metric, "metric")?) };
        let cost = c.client.spent(m, lifetime != 0)?;
        *self::out(epsilon, "epsilon")? = cost.epsilon;
        *self::out(delta, "delta")? = cost.delta;
        Ok(())
    })
}

/// Frees a client (null, or a handle of another kind, is ignored). Its state stays in its folder.
///
/// # Safety
/// `client` is null or a handle not freed before, and no other thread is using it.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_free(client: *mut LdpClient) {
    free_handle(client);
}

// ---------------------------------------------------------------------------------------------------------------
// Upload with the app's own HTTP stack

/// One upload request: `POST` it to the collector's `/v1/reports` URL with its headers and body, then pass the
/// reply to `ldp_client_handle_reply`.
pub struct LdpRequest {
    /// The serial number of the client handle that made it.
    client: u64,
    batch: Batch,
    request: UploadRequest,
    names: Vec<CString>,
    values: Vec<CString>,
}

/// The next batch to send as a request in `*request` (null when nothing is due: the outbox is empty or the upload
/// interval has not passed). The batch stays pinned until acknowledged: after a crash or a lost reply the same
/// request is made again, and the collector counts it once. `gzip` non-zero compresses the body.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_next_request(
    client: *const LdpClient,
    token: *const c_char,
    gzip: i32,
    request: *mut *mut LdpRequest,
) -> LdpStatus {
    guard(|| {
        let o = self::out(request, "request")?;
        *o = ptr::null_mut();
        let c = handle(client, "client")?;
        let token = c_str(token, "token")?;
        crate::upload::check_token(token)?;
        let Some(batch) = c.client.next_batch(None)? else { return Ok(()) };
        let req = UploadRequest::new(&batch, token, gzip != 0)?;
        let names = req.headers.iter().map(|(n, _)| CString::new(*n).unwrap_or_default()).collect();
        let values = req.headers.iter().map(|(_, v)| CString::new(v.as_str()).unwrap_or_default()).collect();
        *o = new_handle(LdpRequest { client: c.serial, batch, request: req, names, values });
        Ok(())
    })
}

/// The number of headers of a request.
///
/// # Safety
/// `request` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_header_count(request: *const LdpRequest) -> usize {
    handle(request, "request").map_or(0, |r| r.names.len())
}

/// Header `index` of a request: `*name` and `*value` point into the request (valid until it is freed).
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_header(
    request: *const LdpRequest,
    index: usize,
    name: *mut *const c_char,
    value: *mut *const c_char,
) -> LdpStatus {
    guard(|| {
        let r = handle(request, "request")?;
        if index >= r.names.len() {
            return Err(invalid(format!("header {index} of a request with {} headers", r.names.len())));
        }
        *self::out(name, "name")? = r.names[index].as_ptr();
        *self::out(value, "value")? = r.values[index].as_ptr();
        Ok(())
    })
}

/// The body of a request: `*body` points into the request (valid until it is freed), `*len` bytes.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_body(
    request: *const LdpRequest,
    body: *mut *const u8,
    len: *mut usize,
) -> LdpStatus {
    guard(|| {
        let r = handle(request, "request")?;
        *self::out(body, "body")? = r.request.body.as_ptr();
        *self::out(len, "len")? = r.request.body.len();
        Ok(())
    })
}

/// The number of reports in a request.
///
/// # Safety
/// `request` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_report_count(request: *const LdpRequest) -> usize {
    handle(request, "request").map_or(0, |r| r.batch.reports.len())
}

/// What to do after a reply (`ldp_client_handle_reply`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdpReplyAction {
    /// The batch was acknowledged and removed from the outbox: ask for the next request.
    LdpReplyDone = 0,
    /// The batch was split in two (the collector found it too large): ask for the next request at once.
    LdpReplySplit = 1,
    /// Retry the same request after `*wait_seconds` (the collector's `Retry-After`, at most
    /// `LDP_MAX_RETRY_AFTER_SECONDS`; shorten it as you see fit).
    LdpReplyRetryAfter = 2,
    /// Retry the same request after an exponential back-off with jitter (no reply, 408, 5xx).
    LdpReplyBackoff = 3,
    /// Do not retry this batch now: the call's status and error say why; the batch stays queued.
    LdpReplyFail = 4,
}

/// Applies the collector's reply to `request`: `status` the HTTP status (−1: no reply, the connection failed or
/// timed out), `body` the first bytes of the reply (read at most 65,536; `truncated` non-zero if it was longer),
/// `retry_after` the `Retry-After` header (null: absent). `*action` says what to do next; `*wait_seconds` is set
/// for `LDP_REPLY_RETRY_AFTER`, never above `LDP_MAX_RETRY_AFTER_SECONDS` (300). A failure returns its status
/// (`LDP_UPLOAD_REJECTED`, `LDP_TRANSPORT_ERROR`) with `*action` set to `LDP_REPLY_FAIL`. `request` must come from
/// this `client`'s `ldp_client_next_request`: a request of another client handle is `LDP_INVALID_ARGUMENT`, and
/// nothing is acknowledged.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_handle_reply(
    client: *const LdpClient,
    request: *const LdpRequest,
    status: i32,
    body: *const u8,
    body_len: usize,
    truncated: i32,
    retry_after: *const c_char,
    action: *mut LdpReplyAction,
    wait_seconds: *mut f64,
) -> LdpStatus {
    guard(|| {
        let a = self::out(action, "action")?;
        *a = LdpReplyAction::LdpReplyFail;
        let c = handle(client, "client")?;
        let r = handle(request, "request")?;
        if r.client != c.serial {
            return Err(invalid(
                "request was made by another client handle: hand the reply to the client whose \
                 ldp_client_next_request made it",
            ));
        }
        let body = c_bytes(body, body_len.min(crate::upload::MAX_ANSWER), "body")?;
        let retry = if retry_after.is_null() { None } else { Some(c_str(retry_after, "retry_after")?) };
        let status = match status {
            -1 => None,
            s => Some(
                u16::try_from(s)
                    .ok()
                    .filter(|s| (100..=599).contains(s))
                    .ok_or_else(|| invalid(format!("status {s} is not an HTTP status or -1")))?,
            ),
        };
        let over = truncated != 0 || body_len > crate::upload::MAX_ANSWER;
        match Reply::classify(status, body, over, retry, &r.batch, crate::client::system_clock()) {
            Reply::Acknowledge(_) => {
                c.client.acknowledge_batch(&r.batch.id, &r.batch.ids())?;
                *a = LdpReplyAction::LdpReplyDone;
            }
            Reply::Split => {
                c.client.split_batch(&r.batch.id)?;
                *a = LdpReplyAction::LdpReplySplit;
            }
            Reply::RetryAfter(s) => {
                *self::out(wait_seconds, "wait_seconds")? = s.clamp(0.0, f64::from(LDP_MAX_RETRY_AFTER_SECONDS));
                *a = LdpReplyAction::LdpReplyRetryAfter;
            }
            Reply::Backoff => *a = LdpReplyAction::LdpReplyBackoff,
            Reply::Fail(e) => return Err(e),
        }
        Ok(())
    })
}

/// Frees a request (null is ignored).
///
/// # Safety
/// `request` is null or a handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_free(request: *mut LdpRequest) {
    free_handle(request);
}

// ---------------------------------------------------------------------------------------------------------------
// The blocking uploader (feature `uploader`)

/// What `ldp_client_upload` did.
#[cfg(feature = "uploader")]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct LdpUploadResult {
    /// Batches acknowledged.
    pub batches: u64,
    /// Reports acknowledged and deleted from the outbox.
    pub acknowledged: u64,
    /// Lines the collector stored.
    pub accepted: u64,
    /// Lines the collector refused (all reasons).
    pub rejected: u64,
    /// Batches the collector had stored already.
    pub duplicates: u64,
    /// Why the call returned: 0 nothing left, 1 the upload interval, 2 the call's deadline.
    pub stopped: u32,
    /// Unix seconds from which the next batch may go (−infinity: at once).
    pub next_upload_at: f64,
}

/// Uploads the client's due batches over HTTP(S) (the `uploader` feature) into `*result`: `endpoints` is an array
/// of `n_endpoints` (1 to 64) distinct collector URLs (`https://host/v1/reports`), in the order they are tried, `token`
/// the app's bearer token, `timeout_seconds` the deadline of one request from connecting to the end of the reply
/// (≤ 0: 30 s), `call_timeout_seconds` that of the whole call (≤ 0: none). What was not acknowledged stays queued.
///
/// One collector is an array of one: `const char *url = "https://collector.example.com/v1/reports";` then
/// `ldp_client_upload(client, &url, 1, token, 0, 0, &result)`. Several are replicas of one collector (`ldp serve`
/// over shared storage, or balancers), failed over as the Rust `Uploader` does:
///
/// - each call starts with the first endpoint; once one acknowledged a batch, the next batches of the call go to it;
/// - no reply by the deadline, a connection error, 408, 503 or another 5xx sends the batch's next request to the next
///   endpoint (cyclically) at once; when every endpoint has failed in a row, the call waits (`Retry-After` of a 503,
///   else back-off growing with each full round) and goes on with the next endpoint;
/// - 429 waits on the same endpoint, 413 splits the batch on it, other 4xx stop the call with
///   `LDP_UPLOAD_REJECTED`;
/// - 8 requests per batch in all, whichever endpoints they went to (then `LDP_TRANSPORT_ERROR`).
///
/// The batch keeps its id on every endpoint: the collector side counts it once. To spread devices over replicas,
/// shuffle the array per device. Refused before anything is sent: a null or empty array or a null entry
/// (`LDP_INVALID_ARGUMENT`), a URL that is not `http(s)://host/...` or the same URL twice (`LDP_VALUE_ERROR`).
///
/// One upload at a time per client: calls on one client from any threads, and on the clients of one state folder
/// in this process, take turns. A call that finds another one uploading waits for it, at most until its own
/// `call_timeout_seconds` (without one, as long as it takes), then sends what is still pending: what the other call
/// sent is not sent again. If its deadline passes while it waits, it returns `LDP_OK` with `stopped` 2, having sent
/// nothing. A call on the thread that is uploading the client already (from the log callback) is
/// `LDP_VALUE_ERROR`, nothing sent. Processes do not take turns: two uploading one folder at once may send a batch
/// twice, which the collector stores once (its batch id).
///
/// # Safety
/// Pointers valid as documented; `endpoints` holds `n_endpoints` NUL-terminated strings.
#[cfg(feature = "uploader")]
#[no_mangle]
pub unsafe extern "C" fn ldp_client_upload(
    client: *const LdpClient,
    endpoints: *const *const c_char,
    n_endpoints: usize,
    token: *const c_char,
    timeout_seconds: f64,
    call_timeout_seconds: f64,
    result: *mut LdpUploadResult,
) -> LdpStatus {
    use crate::upload::{Stopped, UploadOptions, Uploader};
    guard(|| {
        let o = self::out(result, "result")?;
        *o = LdpUploadResult::default();
        let c = handle(client, "client")?;
        if endpoints.is_null() || n_endpoints == 0 || n_endpoints > 64 {
            return Err(invalid("endpoints must be an array of 1 to 64 URLs"));
        }
        let mut list = Vec::with_capacity(n_endpoints);
        for i in 0..n_endpoints {
            list.push(c_str(*endpoints.add(i), "an endpoint")?);
        }
        let mut options = UploadOptions::new(&list, c_str(token, "token")?)?;
        if timeout_seconds.is_finite() && timeout_seconds > 0.0 {
            options.timeout = std::time::Duration::from_secs_f64(timeout_seconds.min(86400.0));
        }
        if call_timeout_seconds.is_finite() && call_timeout_seconds > 0.0 {
            options.call_timeout = Some(std::time::Duration::from_secs_f64(call_timeout_seconds.min(86400.0 * 7.0)));
        }
        let r = Uploader::new(options).upload(&c.client)?;
        *o = LdpUploadResult {
            batches: r.batches,
            acknowledged: r.acknowledged,
            accepted: r.accepted,
            rejected: r.rejected.iter().map(|(_, n)| n).sum(),
            duplicates: r.duplicates,
            stopped: match r.stopped {
                Stopped::Empty => 0,
                Stopped::Interval => 1,
                Stopped::Deadline => 2,
            },
            next_upload_at: r.next_upload_at,
        };
        Ok(())
    })
}

/// Receives one log line of the library (the `uploader` feature): `level` 1 error, 2 warn, 3 info, 4 debug, 5 trace;
/// `line` a NUL-terminated UTF-8 string valid during the call only; `user` the pointer given to
/// `ldp_set_log_callback`.
#[cfg(feature = "uploader")]
pub type LdpLogCallback =
    Option<unsafe extern "C" fn(user: *mut std::ffi::c_void, level: std::ffi::c_int, line: *const c_char)>;

/// The `log` facade's logger that hands the library's lines to a C callback.
#[cfg(feature = "uploader")]
struct CallbackLogger {
    callback: unsafe extern "C" fn(*mut std::ffi::c_void, std::ffi::c_int, *const c_char),
    /// The caller's pointer, kept as an integer: the caller promised it may be used from any thread.
    user: usize,
    max: log::LevelFilter,
}

#[cfg(feature = "uploader")]
impl log::Log for CallbackLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= self.max && metadata.target().starts_with("ldp_client")
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let text = record.args().to_string().replace('\0', "\u{fffd}");
            if let Ok(line) = CString::new(text) {
                // SAFETY: the caller of `ldp_set_log_callback` promised a callback callable from any thread with
                // its `user` pointer; `line` outlives the call.
                unsafe {
                    (self.callback)(
                        self.user as *mut std::ffi::c_void,
                        record.level() as std::ffi::c_int,
                        line.as_ptr(),
                    )
                };
            }
        }
    }

    fn flush(&self) {}
}

/// Sends the library's log lines to `callback` (the `uploader` feature): the uploader's failovers, waits and stops
/// at level 3 (info) and 2 (warn), each request at 4 (debug); never a report line or the token. `max_level` (0 to
/// 5: 0 none, 1 error … 5 trace) is the most detailed level passed on. The callback runs on the thread that logs
/// (the one calling `ldp_client_upload`), so `callback` and `user` must be usable from any thread that uploads.
///
/// Once per process: the library logs through Rust's `log` facade, which takes one logger, so a second call (or a
/// process whose Rust code installed its own logger, which then receives the lines instead) is `LDP_VALUE_ERROR`.
/// A null callback or a level outside 0 to 5 is refused (`LDP_INVALID_ARGUMENT`, `LDP_VALUE_ERROR`) and installs
/// nothing.
///
/// # Safety
/// `callback` must be safe to call from any thread with `user`, for the rest of the process.
#[cfg(feature = "uploader")]
#[no_mangle]
pub unsafe extern "C" fn ldp_set_log_callback(
    callback: LdpLogCallback,
    user: *mut std::ffi::c_void,
    max_level: std::ffi::c_int,
) -> LdpStatus {
    guard(|| {
        let callback = callback.ok_or_else(|| invalid("callback is a null pointer"))?;
        let max = match max_level {
            0 => log::LevelFilter::Off,
            1 => log::LevelFilter::Error,
            2 => log::LevelFilter::Warn,
            3 => log::LevelFilter::Info,
            4 => log::LevelFilter::Debug,
            5 => log::LevelFilter::Trace,
            other => return Err(Error::Value(format!("max_level must be 0 (none) to 5 (trace), got {other}"))),
        };
        let logger = Box::new(CallbackLogger { callback, user: user as usize, max });
        log::set_logger(Box::leak(logger)).map_err(|_| {
            Error::Value("a logger is already installed in this process (ldp_set_log_callback works once)".into())
        })?;
        log::set_max_level(max);
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Prio3 sharding for the two-aggregator mode (feature `prio`): src/ffi/sharding.rs. (Not named `prio3`: cbindgen
// reads this file as a crate root, so it would take `mod prio3;` for src/prio3.rs, the Rust API, and export its
// constants; tests/header.rs hands it the files under src/ffi/ itself.)

#[cfg(feature = "prio")]
mod sharding;
#[cfg(feature = "prio")]
pub use sharding::*;

// DAP-09 reports of Prio3 measurements, sealed with HPKE (feature `prio`): src/ffi/dap_report.rs (not `dap`, for
// the same reason).
#[cfg(feature = "prio")]
mod dap_report;
#[cfg(feature = "prio")]
pub use dap_report::*;
