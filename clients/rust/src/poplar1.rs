//! Poplar1 client sharding for heavy hitters over two aggregators (feature `poplar1`; VDAF draft 18,
//! `draft-irtf-cfrg-vdaf-18` §8, through the [`prio`](https://crates.io/crates/prio) crate 0.18.1's `Poplar1`,
//! behind its `experimental` feature).
//!
//! A device holds a string of `bits` bits (its measurement: an app's home page, a new word, hashed or padded to a
//! fixed length). Poplar1 splits it into two keys of an *incremental distributed point function* (IDPF, Boneh et
//! al. 2021, "Lightweight techniques for private heavy hitters"): for every prefix `p` of every length, the two
//! aggregators' evaluations of their keys at `p` add up to 1 when `p` is a prefix of the string and to 0 otherwise,
//! and each key alone is indistinguishable from random. The collector then walks the prefix tree: at level `ℓ` it
//! asks the aggregators for the counts of a list of candidate prefixes of `ℓ + 1` bits (the *aggregation
//! parameter*), keeps those whose count passes a threshold, and extends them by one bit for the next level. Each
//! report also carries correlated randomness for a two-round *sketch* that lets the aggregators check together that
//! the device's keys encode exactly one string (a count of 0 or 1 per prefix) without learning it.
//!
//! ```
//! use ldp_client::poplar1::Poplar1Client;
//!
//! let client = Poplar1Client::new(16, b"example.app/v1")?;
//! let measurement = client.measurement_from_bytes(b"hi")?;    // 16 bits, the first bit first
//! let shares = client.shard(&measurement)?;                    // nonce and randomness from the OS generator
//! assert_eq!(shares.input_shares.len(), 2);
//! assert_eq!(shares.leader_share().len(), client.input_share_len());
//! # Ok::<(), ldp_client::Error>(())
//! ```
//!
//! **Who gets what** (as for [`crate::prio3`]): the nonce (the DAP report ID) and the public share (the IDPF's
//! correction words, one per level) go to both aggregators; the leader's input share (its IDPF key, its seed of
//! the correlated randomness and its shares of the sketch's correlations) only to the leader, the helper's only to
//! the helper, each sealed to its aggregator ([`crate::dap::Poplar1ReportBuilder`] makes DAP-09's report). Whoever
//! holds both input shares can recover the string. The aggregators learn the counts of the prefixes the collector
//! asks for, and nothing else of a single report; Poplar1 adds no noise of its own.
//!
//! **Randomness.** [`Poplar1Client::shard`] draws the nonce and [`RAND_LEN`] bytes of sharding randomness (two
//! 16-byte IDPF seeds, three 32-byte seeds of the correlated randomness) from the OS generator at each call, as
//! [`crate::prio3`] does (fork-safe: no pool in user space); [`Poplar1Client::shard_with_random`] takes them from
//! the caller, for the draft's test vectors and tests only. Both call the prio crate's public
//! `TestVectorClient::shard_with_random` (feature `test-util`; the crate's `Client::shard` draws from rand's thread
//! generator, which a forked child copies); nothing of the VDAF is implemented here.

use std::fmt;

use prio::codec::Encode;
use prio::idpf::IdpfInput;
use prio::vdaf::poplar1::Poplar1;
use prio::vdaf::test_utils::TestVectorClient;
use prio::vdaf::xof::XofTurboShake128;

use crate::error::{Error, Refusal, Result};
use crate::prio3::{check_ctx_len, VdafShares};
pub use crate::prio3::{MAX_CTX_LEN, NONCE_LEN};

/// Bytes of sharding randomness one report takes: two IDPF seeds of 16 bytes, then the leader's and the helper's
/// seeds of the correlated randomness and the seed of the authenticators, 32 bytes each (the order of the prio
/// crate's `TestVectorClient::shard_with_random` and of the draft's vectors' `rand`).
pub const RAND_LEN: usize = 2 * 16 + 3 * SEED_LEN;

/// Bytes of the verify key the two aggregators share (XofTurboShake128's seed).
pub const VERIFY_KEY_LEN: usize = SEED_LEN;

/// The longest measurement, in bits: 32-byte strings. A bound, so that a share's length is bounded too (the
/// aggregators' door checks lengths before decoding); the draft allows up to 2^16.
pub const MAX_BITS: usize = 256;

const SEED_LEN: usize = 32;

/// The prio crate's Poplar1 of draft 18: XofTurboShake128 with 32-byte seeds.
type Vdaf = Poplar1<XofTurboShake128, SEED_LEN>;

/// The client side of one Poplar1 task: the bit length of the measurements and the application context string.
/// It keeps no state between calls (`Send + Sync`, cheap to clone).
#[derive(Clone, Debug)]
pub struct Poplar1Client {
    bits: usize,
    ctx: Vec<u8>,
    vdaf: Vdaf,
}

impl Poplar1Client {
    /// The client of `bits`-bit measurements (1 to [`MAX_BITS`]) with the application context `ctx` (at most
    /// [`MAX_CTX_LEN`] bytes; the same bytes at both aggregators). Refused: `bits` out of range (`param_range`),
    /// a `ctx` too long (`param_length`).
    pub fn new(bits: usize, ctx: &[u8]) -> Result<Self> {
        if !(1..=MAX_BITS).contains(&bits) {
            return Err(Refusal::param_range("bits", bits).with("min", 1).with("max", MAX_BITS).into());
        }
        check_ctx_len(ctx)?;
        Ok(Poplar1Client { bits, ctx: ctx.to_vec(), vdaf: Vdaf::new_turboshake128(bits) })
    }

    /// The bit length of a measurement.
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// The application context string.
    pub fn ctx(&self) -> &[u8] {
        &self.ctx
    }

    /// Bytes of sharding randomness one report takes ([`RAND_LEN`]).
    pub fn rand_len(&self) -> usize {
        RAND_LEN
    }

    /// Bytes of a packed measurement ([`Poplar1Client::measurement_from_bytes`]): `ceil(bits / 8)`.
    pub fn measurement_len(&self) -> usize {
        self.bits.div_ceil(8)
    }

    /// Bytes of each input share: the IDPF key (16), the correlation seed (32), two 8-byte field elements per inner
    /// level (`bits - 1` of them) and two 32-byte ones for the leaves (draft 18 §8.2.6.2).
    pub fn input_share_len(&self) -> usize {
        16 + SEED_LEN + 16 * (self.bits - 1) + 64
    }

    /// The measurement of packed bytes: exactly [`Poplar1Client::measurement_len`] bytes, the first bit the most
    /// significant of the first byte (the draft's and the prio crate's order, as the aggregation parameter encodes
    /// prefixes); the unused low bits of the last byte must be 0. Refused otherwise (an [`Error::Value`]).
    pub fn measurement_from_bytes(&self, bytes: &[u8]) -> Result<Vec<bool>> {
        if bytes.len() != self.measurement_len() {
            return Err(Error::value(format!(
                "a Poplar1 measurement of {} bits is {} bytes, got {}",
                self.bits,
                self.measurement_len(),
                bytes.len()
            )));
        }
        let spare = 8 * bytes.len() - self.bits;
        if spare > 0 && bytes[bytes.len() - 1] & ((1u8 << spare) - 1) != 0 {
            return Err(Error::value(format!(
                "a Poplar1 measurement of {} bits must leave the last {spare} bits of its last byte 0",
                self.bits
            )));
        }
        Ok((0..self.bits).map(|i| bytes[i / 8] >> (7 - i % 8) & 1 == 1).collect())
    }

    /// Checks a measurement's length: `bits` bits (an [`Error::Value`] naming both lengths otherwise).
    pub fn check(&self, measurement: &[bool]) -> Result<()> {
        if measurement.len() != self.bits {
            return Err(Error::value(format!(
                "a Poplar1 measurement has {} bits (the task's bit length), got {}",
                self.bits,
                measurement.len()
            )));
        }
        Ok(())
    }

    /// Shards `measurement` with a fresh nonce and fresh randomness from the OS generator. A measurement
    /// [`Poplar1Client::check`] refuses is refused with nothing drawn; a failure of the OS generator is an
    /// [`Error::Internal`].
    pub fn shard(&self, measurement: &[bool]) -> Result<Poplar1Shares> {
        self.check(measurement)?;
        let os_failed = |e| Error::Internal(format!("the OS random generator failed: {e}"));
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(os_failed)?;
        let mut rand = [0u8; RAND_LEN];
        getrandom::fill(&mut rand).map_err(os_failed)?;
        let shares = self.shard_with_random(measurement, &nonce, &rand);
        crate::prio3::wipe(&mut rand);
        shares
    }

    /// Shards `measurement` with the caller's `nonce` and `rand` ([`RAND_LEN`] bytes): the same inputs always give
    /// the same shares. **For tests and the draft's test vectors only**: a nonce or randomness used twice, or not
    /// drawn from a cryptographic generator, breaks the measurement's privacy. A `rand` of another length is refused
    /// (an [`Error::Value`]).
    pub fn shard_with_random(
        &self,
        measurement: &[bool],
        nonce: &[u8; NONCE_LEN],
        rand: &[u8],
    ) -> Result<Poplar1Shares> {
        if rand.len() != RAND_LEN {
            return Err(Error::value(format!(
                "Poplar1 takes {RAND_LEN} bytes of sharding randomness, got {}",
                rand.len()
            )));
        }
        self.check(measurement)?;
        let input = IdpfInput::from_bools(measurement);
        let refused =
            |e| Error::value(format!("Poplar1 refused the measurement (prio crate 0.18.1, VDAF draft 18): {e}"));
        let (public, inputs) = self.vdaf.shard_with_random(&self.ctx, &input, nonce, rand).map_err(refused)?;
        let input_shares = inputs.iter().map(encode).collect::<Result<_>>()?;
        Ok(Poplar1Shares { nonce: *nonce, public_share: encode(&public)?, input_shares })
    }
}

/// A sharded measurement: what the device sends, in the draft's encoding.
#[derive(Clone, PartialEq, Eq)]
pub struct Poplar1Shares {
    /// The report's nonce: public, sent to both aggregators (DAP's report ID).
    pub nonce: [u8; NONCE_LEN],
    /// The public share (the IDPF's correction words): sent to both aggregators.
    pub public_share: Vec<u8>,
    /// The leader's input share, then the helper's: each for its aggregator only.
    pub input_shares: Vec<Vec<u8>>,
}

impl Poplar1Shares {
    /// The leader's input share (aggregator 0): for the leader only.
    pub fn leader_share(&self) -> &[u8] {
        &self.input_shares[0]
    }

    /// The helper's input share (aggregator 1): for the helper only.
    pub fn helper_share(&self) -> &[u8] {
        &self.input_shares[1]
    }
}

impl VdafShares for Poplar1Shares {
    const NAME: &'static str = "Poplar1Shares";
    fn nonce(&self) -> &[u8; NONCE_LEN] {
        &self.nonce
    }
    fn public_share(&self) -> &[u8] {
        &self.public_share
    }
    fn input_shares(&self) -> &[Vec<u8>] {
        &self.input_shares
    }
}

/// The input shares are secrets: `Debug` shows their lengths only (as `Prio3Shares`'s).
impl fmt::Debug for Poplar1Shares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_debug(f)
    }
}

fn encode(item: &impl Encode) -> Result<Vec<u8>> {
    item.get_encoded().map_err(|e| Error::Internal(format!("encoding a Poplar1 share failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_bounded() {
        for bits in [0, MAX_BITS + 1] {
            let Err(Error::Refusal(r)) = Poplar1Client::new(bits, b"") else { panic!("{bits} bits accepted") };
            assert_eq!(r.fields_json(), format!(r#"{{"param":"bits","got":{bits},"min":1,"max":{MAX_BITS}}}"#));
        }
        for bits in [1, 2, 64, MAX_BITS] {
            let c = Poplar1Client::new(bits, b"ctx").unwrap();
            let s = c.shard(&vec![true; bits]).unwrap();
            assert_eq!((s.leader_share().len(), s.helper_share().len()), (c.input_share_len(), c.input_share_len()));
        }
    }

    #[test]
    fn packed_measurements_are_read_first_bit_first() {
        let c = Poplar1Client::new(11, b"").unwrap();
        let m = c.measurement_from_bytes(&[0b1100_1000, 0b0010_0000]).unwrap();
        let want = [true, true, false, false, true, false, false, false, false, false, true];
        assert_eq!(m, want);
        assert!(c.measurement_from_bytes(&[0, 0b0000_0001]).is_err(), "a spare bit set");
        assert!(c.measurement_from_bytes(&[0]).is_err() && c.measurement_from_bytes(&[0; 3]).is_err());
        assert!(c.shard(&want[..10]).is_err() && c.shard_with_random(&want, &[0; 16], &[0; 127]).is_err());
    }

    #[test]
    fn debug_hides_the_secrets() {
        let c = Poplar1Client::new(8, b"").unwrap();
        let s = c.shard_with_random(&[true; 8], &[1; 16], &[7; RAND_LEN]).unwrap();
        let text = format!("{s:?}");
        assert!(text.contains("input_share_lens") && !text.contains(&crate::bytes::hex(s.helper_share())), "{text}");
    }
}
