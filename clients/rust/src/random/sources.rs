//! The sources: the OS generator (every client's default), the keyed stream of memoized responses, and the
//! replaying and recording sources of the conformance tests and audits.

use hmac::Mac;
use num_bigint::BigUint;
use zeroize_lite::wipe;

use super::RandomSource;
use crate::bytes::{self, HmacSha256};
use crate::error::{Error, Result};

mod zeroize_lite {
    /// Overwrites `buf` with zeros (best effort; the pool never holds a byte twice).
    pub(super) fn wipe(buf: &mut [u8]) {
        buf.fill(0);
        // Keeps the compiler from dropping the zeroing as a dead store.
        std::hint::black_box(buf);
    }
}

/// `randbits(k)` from a byte stream, as Python's system and keyed sources read it: the next `ceil(k/8)` bytes as a
/// little-endian integer, keeping its low `k` bits.
fn stream_bits(next: &mut dyn FnMut(&mut [u8]) -> Result<()>, k: u32) -> Result<u64> {
    if k == 0 {
        return Ok(0);
    }
    if k > 64 {
        return Err(Error::value(format!("bits(k) takes 0 <= k <= 64, got {k}")));
    }
    let n = k.div_ceil(8) as usize;
    let mut eight = [0u8; 8];
    next(&mut eight[..n])?;
    let v = u64::from_le_bytes(eight);
    wipe(&mut eight);
    Ok(if k == 64 { v } else { v & ((1u64 << k) - 1) })
}

fn stream_wide_bits(next: &mut dyn FnMut(&mut [u8]) -> Result<()>, k: u32, into: &mut [u64]) -> Result<()> {
    into.fill(0);
    if k == 0 {
        return Ok(());
    }
    let words = k.div_ceil(64) as usize;
    if into.len() < words {
        return Err(Error::value(format!("wide_bits({k}) needs {words} words, got {}", into.len())));
    }
    let n = k.div_ceil(8) as usize;
    let mut buf = vec![0u8; n];
    next(&mut buf)?;
    for (i, b) in buf.iter().enumerate() {
        into[i / 8] |= (*b as u64) << (8 * (i % 8));
    }
    let rem = k & 63;
    if rem != 0 {
        into[words - 1] &= (1u64 << rem) - 1;
    }
    wipe(&mut buf);
    Ok(())
}

const POOL: usize = 4096;

/// Which process a pool was filled in: a value that differs between a process and any child `fork()` made of it.
///
/// On Unix a `pthread_atfork` child handler (registered on first use) moves a counter on in every child, so the
/// check per draw is one atomic load. Should the registration fail, the value is the process id instead (one
/// `getpid` per draw). Outside Unix there is no `fork()`, and the value never changes.
mod fork_epoch {
    #[cfg(unix)]
    #[allow(unsafe_code)]
    mod imp {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Once;

        static EPOCH: AtomicU64 = AtomicU64::new(0);
        static REGISTERED: AtomicBool = AtomicBool::new(false);
        static REGISTER: Once = Once::new();

        extern "C" fn in_child() {
            // Async-signal-safe: one atomic add, no allocation, no lock.
            EPOCH.fetch_add(1, Ordering::Relaxed);
        }

        pub(crate) fn current() -> u64 {
            REGISTER.call_once(|| {
                // SAFETY: registers a handler that only touches an atomic.
                let ok = unsafe { libc::pthread_atfork(None, None, Some(in_child)) } == 0;
                REGISTERED.store(ok, Ordering::Relaxed);
            });
            if REGISTERED.load(Ordering::Relaxed) {
                EPOCH.load(Ordering::Relaxed)
            } else {
                (1 << 63) | u64::from(std::process::id())
            }
        }
    }

    #[cfg(not(unix))]
    mod imp {
        pub(crate) fn current() -> u64 {
            0
        }
    }

    pub(crate) use imp::current;
}

/// The operating system's CSPRNG (`getrandom`: the kernel's generator on Linux and Android, `SecRandomCopyBytes`'
/// source on Apple platforms): every client's default. Bytes come from a pool refilled 4,096 bytes at a time, each
/// byte used by one draw at most and zeroed once used; [`RandomSource::token_bytes`] (secrets) reads fresh bytes,
/// never the pool.
///
/// **Fork-safe.** A pool copied into a child by `fork()` would make the child draw the very bytes its parent draws
/// next (the same noise in both processes' reports). The source therefore remembers which process filled its pool
/// and wipes the rest of the pool unused when that changes: on Unix a `pthread_atfork` handler marks every child of
/// `fork()` (the C library's, which every runtime's fork calls), checked at each draw by one atomic load.
pub struct OsRandomSource {
    pool: Box<[u8; POOL]>,
    offset: usize,
    /// The process (`fork_epoch::current`) that filled the pool.
    filled_in: u64,
}

impl OsRandomSource {
    /// A source reading the OS generator.
    pub fn new() -> Self {
        OsRandomSource { pool: Box::new([0u8; POOL]), offset: POOL, filled_in: fork_epoch::current() }
    }

    fn fill_os(buf: &mut [u8]) -> Result<()> {
        getrandom::fill(buf).map_err(|e| Error::Internal(format!("the OS random generator failed: {e}")))
    }

    fn next(&mut self, out: &mut [u8]) -> Result<()> {
        let len = out.len();
        if len > POOL {
            return Self::fill_os(out);
        }
        if self.offset < POOL && self.filled_in != fork_epoch::current() {
            // A forked child: the rest of the pool is also the parent's; drop it.
            wipe(&mut self.pool[self.offset..]);
            self.offset = POOL;
        }
        if self.offset + len > POOL {
            Self::fill_os(&mut self.pool[..])?;
            self.offset = 0;
            self.filled_in = fork_epoch::current();
        }
        out.copy_from_slice(&self.pool[self.offset..self.offset + len]);
        wipe(&mut self.pool[self.offset..self.offset + len]);
        self.offset += len;
        Ok(())
    }
}

impl Default for OsRandomSource {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for OsRandomSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OsRandomSource")
    }
}

impl RandomSource for OsRandomSource {
    fn bits(&mut self, k: u32) -> Result<u64> {
        stream_bits(&mut |b| self.next(b), k)
    }

    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        stream_wide_bits(&mut |b| self.next(b), k, into)
    }

    fn token_bytes(&mut self, n: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; n];
        Self::fill_os(&mut out)?;
        Ok(out)
    }
}

/// Deterministic randomness from a secret key and a message (Python's `KeyedRandomSource`): the stream
/// `HMAC-SHA256(key, message ‖ uint32_BE(0)) ‖ HMAC-SHA256(key, message ‖ uint32_BE(1)) ‖ …`. The same key and
/// message always give the same draws: what memoized (permanent) responses are drawn from, and what seeded
/// simulations use.
pub struct KeyedRandomSource {
    mac: HmacSha256,
    message: Vec<u8>,
    block: u32,
    buffer: [u8; 32],
    offset: usize,
}

impl KeyedRandomSource {
    /// The stream of `key` (non-empty) and `message`.
    pub fn new(key: &[u8], message: &[u8]) -> Result<Self> {
        Ok(KeyedRandomSource {
            mac: bytes::hmac(key)?,
            message: message.to_vec(),
            block: 0,
            buffer: [0; 32],
            offset: 32,
        })
    }

    fn next(&mut self, out: &mut [u8]) -> Result<()> {
        let mut done = 0;
        while done < out.len() {
            if self.offset == 32 {
                let mut mac = self.mac.clone();
                mac.update(&self.message);
                mac.update(&bytes::uint32_be(self.block));
                self.block = self.block.wrapping_add(1);
                self.buffer = mac.finalize().into_bytes().into();
                self.offset = 0;
            }
            let n = (out.len() - done).min(32 - self.offset);
            out[done..done + n].copy_from_slice(&self.buffer[self.offset..self.offset + n]);
            self.offset += n;
            done += n;
        }
        Ok(())
    }
}

impl std::fmt::Debug for KeyedRandomSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyedRandomSource(<secret>)")
    }
}

impl RandomSource for KeyedRandomSource {
    fn bits(&mut self, k: u32) -> Result<u64> {
        stream_bits(&mut |b| self.next(b), k)
    }

    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        stream_wide_bits(&mut |b| self.next(b), k, into)
    }
}

/// Replays recorded draws (Python's `ReplaySource`; the conformance vectors' `draws`): each `randbits(k)` returns
/// the next record after checking that its `k` is the one asked for; a different `k`, or a call past the end, is an
/// [`Error::Replay`] naming the position.
#[derive(Debug, Clone)]
pub struct ReplaySource {
    draws: Vec<(u32, Vec<u64>)>,
    next: usize,
}

impl ReplaySource {
    /// A source replaying `(k, hex value)` pairs.
    pub fn new<S: AsRef<str>>(draws: &[(u32, S)]) -> Result<Self> {
        let mut out = Vec::with_capacity(draws.len());
        for (i, (k, hex)) in draws.iter().enumerate() {
            let hex = hex.as_ref();
            let value = if !hex.is_empty() && hex.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
                BigUint::parse_bytes(hex.as_bytes(), 16)
            } else {
                None
            };
            let Some(value) = value.filter(|v| *k >= 1 && v.bits() <= *k as u64) else {
                return Err(Error::value(format!(
                    "draw {i}: expected (k >= 1, value in [0, 2**k)), got ({k}, '{hex}')"
                )));
            };
            let mut words = value.to_u64_digits();
            words.resize(k.div_ceil(64) as usize, 0);
            out.push((*k, words));
        }
        Ok(ReplaySource { draws: out, next: 0 })
    }

    fn take(&mut self, k: u32) -> Result<&[u64]> {
        let i = self.next;
        let Some((rk, _)) = self.draws.get(i) else {
            return Err(Error::Replay(format!(
                "draw {i}: randbits({k}) asked past the end of the {} recorded draws",
                self.draws.len()
            )));
        };
        if *rk != k {
            return Err(Error::Replay(format!("draw {i}: randbits({k}) asked where the recording has randbits({rk})")));
        }
        self.next += 1;
        Ok(&self.draws[i].1)
    }

    /// Records not consumed yet.
    pub fn remaining(&self) -> usize {
        self.draws.len() - self.next
    }
}

impl RandomSource for ReplaySource {
    fn bits(&mut self, k: u32) -> Result<u64> {
        if k == 0 {
            return Ok(0);
        }
        Ok(self.take(k)?[0])
    }

    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        into.fill(0);
        if k == 0 {
            return Ok(());
        }
        let v = self.take(k)?.to_vec();
        if into.len() < v.len() {
            return Err(Error::value(format!("wide_bits({k}) needs {} words, got {}", v.len(), into.len())));
        }
        into[..v.len()].copy_from_slice(&v);
        Ok(())
    }
}

/// Records every `randbits` call of an inner source as `(k, hex)` pairs a [`ReplaySource`] replays.
pub struct RecordingSource<R: RandomSource> {
    inner: R,
    draws: Vec<(u32, String)>,
}

impl<R: RandomSource> RecordingSource<R> {
    /// Records the draws of `inner`.
    pub fn new(inner: R) -> Self {
        RecordingSource { inner, draws: Vec::new() }
    }

    /// The draws so far.
    pub fn draws(&self) -> &[(u32, String)] {
        &self.draws
    }
}

impl<R: RandomSource> RandomSource for RecordingSource<R> {
    fn bits(&mut self, k: u32) -> Result<u64> {
        let v = self.inner.bits(k)?;
        if k > 0 {
            self.draws.push((k, format!("{v:x}")));
        }
        Ok(v)
    }

    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        self.inner.wide_bits(k, into)?;
        if k > 0 {
            let words = k.div_ceil(64) as usize;
            self.draws.push((k, BigUint::from_slice(&to_u32_digits(&into[..words])).to_str_radix(16)));
        }
        Ok(())
    }
}

fn to_u32_digits(words: &[u64]) -> Vec<u32> {
    words.iter().flat_map(|w| [*w as u32, (*w >> 32) as u32]).collect()
}
