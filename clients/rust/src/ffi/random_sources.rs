//! Random sources (tests and simulations; apps use the OS generator, the default): `LdpRandom`, shared by the
//! encoders and clients made with it.

use std::ffi::c_char;
use std::sync::{Arc, Mutex};

use super::handles::{free_handle, new_handle};
use super::last_error::guard;
use super::marshal::{c_bytes, c_str, invalid, out};
use super::LdpStatus;
use crate::error::{Error, Result};
use crate::random::{KeyedRandomSource, OsRandomSource, RandomSource, ReplaySource};

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
