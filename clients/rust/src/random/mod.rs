//! The random choices a client encoder makes (Python's `ldp.randomness.RandomSource`; docs/randomness.md and
//! docs/conformance.md section 3).
//!
//! The only entropy call is `randbits(k)`, a uniform integer in `[0, 2^k)`: [`RandomSource::bits`] for `k ≤ 64`,
//! [`RandomSource::wide_bits`] for any `k`. Encoders draw only through [`RandomSource::bernoulli`],
//! [`RandomSource::bernoulli_bits`], [`RandomSource::randbelow`] and [`RandomSource::token_bytes`], whose `randbits`
//! sequences are Python's, so a source that replays Python's stream makes Python's reports.

mod bitmask;
mod sources;
mod threshold;

pub use bitmask::BitMask;
pub use sources::{KeyedRandomSource, OsRandomSource, RecordingSource, ReplaySource};
pub(crate) use threshold::realized_unchecked;
pub use threshold::{realized, threshold};

use crate::error::{Error, Result};

/// A source of `randbits(k)` draws and the draws built on them.
///
/// A source is not shareable between threads at once (`&mut self`): give each thread its own, or lock around it
/// (the client's runtime does).
pub trait RandomSource: Send {
    /// `randbits(k)` for `0 ≤ k ≤ 64`: a uniform value in `[0, 2^k)`; `k = 0` gives 0 and draws nothing.
    fn bits(&mut self, k: u32) -> Result<u64>;

    /// `randbits(k)` for any `k ≥ 1`, into `into`'s first `ceil(k/64)` words, little-endian, bits above `k` zero
    /// (and later words zeroed). One call is one `randbits(k)` draw, even when `k ≤ 64`.
    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()>;

    /// `B(p)`: true with probability `floor(p·2^64)/2^64`; one `randbits(64)` compared with the threshold, drawn
    /// only when the threshold is strictly between 0 and 2^64 (so `p = 0` and `p = 1` draw nothing).
    fn bernoulli(&mut self, p: f64) -> Result<bool> {
        match threshold(p)? {
            None => Ok(true),
            Some(0) => Ok(false),
            Some(t) => Ok(self.bits(64)? < t),
        }
    }

    /// `BB(p, n)`: an `n`-bit mask of independent `B(p)` lanes by the bit-sliced comparison: one `randbits(n)` per
    /// bit plane of the uniform lanes, from plane 63 down, stopping once no lane is tied with the threshold or the
    /// threshold's remaining bits are all zero.
    fn bernoulli_bits(&mut self, p: f64, n: usize) -> Result<BitMask> {
        let t = threshold(p)?;
        let mut out = BitMask::new(n);
        if n == 0 || t == Some(0) {
            return Ok(out);
        }
        let Some(t) = t else {
            out.words_mut().fill(u64::MAX);
            out.trim();
            return Ok(out);
        };
        let k = u32::try_from(n).map_err(|_| Error::value(format!("number of bits too large: {n}")))?;
        if n <= 64 {
            let full = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            let mut below = 0u64;
            let mut tied = full;
            for plane in (0..64).rev() {
                let r = self.bits(k)?;
                let bit = 1u64 << plane;
                if t & bit != 0 {
                    below |= tied & !r;
                    tied &= r;
                } else {
                    tied &= !r;
                }
                if tied == 0 || t & (bit - 1) == 0 {
                    break;
                }
            }
            out.words_mut()[0] = below & full;
            return Ok(out);
        }
        let words = out.words().len();
        let mut tied = BitMask::from_words(n, vec![u64::MAX; words]).words().to_vec();
        let mut r = vec![0u64; words];
        let w = out.words_mut();
        for plane in (0..64).rev() {
            self.wide_bits(k, &mut r)?;
            let bit = 1u64 << plane;
            let mut any = 0u64;
            if t & bit != 0 {
                for i in 0..words {
                    w[i] |= tied[i] & !r[i];
                    tied[i] &= r[i];
                    any |= tied[i];
                }
            } else {
                for i in 0..words {
                    tied[i] &= !r[i];
                    any |= tied[i];
                }
            }
            if any == 0 || t & (bit - 1) == 0 {
                break;
            }
        }
        out.trim();
        Ok(out)
    }

    /// `R(n)`: a uniform integer in `[0, n)` by rejection: `randbits(bit_length(n − 1))` until below `n`; nothing
    /// is drawn for `n = 1`. `1 ≤ n ≤ 2^62`.
    fn randbelow(&mut self, n: u64) -> Result<u64> {
        if !(1..=1u64 << 62).contains(&n) {
            return Err(Error::value(format!("randbelow needs an int n >= 1, got {n}")));
        }
        if n == 1 {
            return Ok(0);
        }
        let k = 64 - (n - 1).leading_zeros();
        loop {
            let r = self.bits(k)?;
            if r < n {
                return Ok(r);
            }
        }
    }

    /// `n` uniform bytes: one `randbits(8n)`, little-endian.
    fn token_bytes(&mut self, n: usize) -> Result<Vec<u8>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let k = u32::try_from(8 * n).map_err(|_| Error::value(format!("too many bytes: {n}")))?;
        let mut w = vec![0u64; (8 * n).div_ceil(64)];
        self.wide_bits(k, &mut w)?;
        Ok((0..n).map(|i| (w[i / 8] >> (8 * (i % 8))) as u8).collect())
    }
}

impl<R: RandomSource + ?Sized> RandomSource for Box<R> {
    fn bits(&mut self, k: u32) -> Result<u64> {
        (**self).bits(k)
    }
    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        (**self).wide_bits(k, into)
    }
    fn bernoulli(&mut self, p: f64) -> Result<bool> {
        (**self).bernoulli(p)
    }
    fn bernoulli_bits(&mut self, p: f64, n: usize) -> Result<BitMask> {
        (**self).bernoulli_bits(p, n)
    }
    fn randbelow(&mut self, n: u64) -> Result<u64> {
        (**self).randbelow(n)
    }
    fn token_bytes(&mut self, n: usize) -> Result<Vec<u8>> {
        (**self).token_bytes(n)
    }
}

/// Floyd's sampling of `k` distinct lanes of `[0, n)` (Python's `floyd_sample`): for `j` in `n−k .. n`, draw
/// `t = R(j + 1)` and take `t`, or `j` if `t` is taken already. `k ≤ n`.
pub(crate) fn floyd(rng: &mut dyn RandomSource, n: usize, k: usize) -> Result<BitMask> {
    let mut chosen = BitMask::new(n);
    for j in n - k..n {
        let t = rng.randbelow(j as u64 + 1)? as usize;
        let lane = if chosen.get(t) { j } else { t };
        chosen.set(lane, true);
    }
    Ok(chosen)
}

/// The source of a part encoder of a composite protocol, which draws from the composite's source
/// (`Encoder::draw_with`), never from its own: any draw here is a bug, reported as such.
pub(crate) struct NoDraws;

impl RandomSource for NoDraws {
    fn bits(&mut self, _: u32) -> Result<u64> {
        Err(Error::Internal("a part encoder drew from its own source".into()))
    }

    fn wide_bits(&mut self, _: u32, _: &mut [u64]) -> Result<()> {
        Err(Error::Internal("a part encoder drew from its own source".into()))
    }
}

/// One source shared by several holders (an audit's permanent-response source, given to a composite's parts).
#[derive(Clone)]
pub(crate) struct Shared(std::sync::Arc<std::sync::Mutex<Box<dyn RandomSource>>>);

impl Shared {
    pub(crate) fn new(src: Box<dyn RandomSource>) -> Self {
        Shared(std::sync::Arc::new(std::sync::Mutex::new(src)))
    }

    fn with<T>(&self, f: impl FnOnce(&mut dyn RandomSource) -> Result<T>) -> Result<T> {
        let mut guard = self.0.lock().map_err(|_| Error::Internal("a shared source's lock is poisoned".into()))?;
        f(guard.as_mut())
    }
}

impl RandomSource for Shared {
    fn bits(&mut self, k: u32) -> Result<u64> {
        self.with(|s| s.bits(k))
    }
    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        self.with(|s| s.wide_bits(k, into))
    }
    fn bernoulli(&mut self, p: f64) -> Result<bool> {
        self.with(|s| s.bernoulli(p))
    }
    fn bernoulli_bits(&mut self, p: f64, n: usize) -> Result<BitMask> {
        self.with(|s| s.bernoulli_bits(p, n))
    }
    fn randbelow(&mut self, n: u64) -> Result<u64> {
        self.with(|s| s.randbelow(n))
    }
    fn token_bytes(&mut self, n: usize) -> Result<Vec<u8>> {
        self.with(|s| s.token_bytes(n))
    }
}
