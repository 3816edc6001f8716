//! Prio3 client sharding for the two-aggregator mode (feature `prio`; VDAF draft 18, `draft-irtf-cfrg-vdaf-18`,
//! through the [`prio`](https://crates.io/crates/prio) crate).
//!
//! In the two-aggregator mode a device does not randomize its value: it splits the exact measurement into **secret
//! shares**, one for each of two non-colluding aggregators (the *leader* and the *helper*), plus a *public share*
//! both receive. Each share alone is indistinguishable from random bytes; only the sum of the aggregators' results
//! over many reports is ever reconstructed. The shares also carry a zero-knowledge proof, split the same way, that
//! lets the two aggregators check together that the measurement is valid (a count is 0 or 1, a sum is at most its
//! maximum, a histogram report has exactly one bucket) without either of them learning it: a malicious device can
//! add at most one valid measurement per report, never a huge or malformed one.
//!
//! ```
//! use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type};
//!
//! let client = Prio3Client::new(Prio3Type::Histogram { length: 4, chunk_length: 2 }, b"example.app/v1")?;
//! let shares = client.shard(&Measurement::Histogram(2))?;   // nonce and randomness from the OS generator
//! // Send shares.nonce and shares.public_share to both aggregators, shares.leader_share() only to the leader and
//! // shares.helper_share() only to the helper, each encrypted to its aggregator (crate::dap does it as DAP-09 does).
//! assert_eq!(shares.input_shares.len(), 2);
//! # Ok::<(), ldp_client::Error>(())
//! ```
//!
//! **Who gets what, and what each party can learn:**
//!
//! * [`Prio3Shares::nonce`]: 16 random bytes naming the report, public, sent to both aggregators (in DAP it is the
//!   report ID). Both aggregators must see the same nonce, and a nonce must never be used twice.
//! * [`Prio3Shares::public_share`]: sent to both. It holds only the *joint randomness parts* of the proof (one
//!   32-byte seed per aggregator for `SumVec` and `Histogram`; empty for `Count` and `Sum`): outputs of a hash of
//!   each share and a fresh secret blind, which reveal nothing about the measurement.
//! * [`Prio3Shares::leader_share`]: for the leader **only**: its share of the encoded measurement and of the proof
//!   (field elements; uniformly random on its own), and for `SumVec`/`Histogram` its joint-randomness blind.
//! * [`Prio3Shares::helper_share`]: for the helper **only**: a 32-byte seed from which the helper expands its
//!   shares (and its blind).
//!
//! Anyone holding *both* input shares can recover the measurement: each must reach its aggregator and no one else,
//! so each is encrypted to its aggregator: [`crate::dap::ReportBuilder`] makes the DAP-09 report that seals each
//! with HPKE (or the app sends each over its own authenticated channel). A single aggregator, or an observer of the public share and the nonce, learns nothing
//! about the measurement; the two together (with the *verify key* they share, which devices never see) learn
//! whether it is valid, and then only the aggregate of all reports (the sum, the per-bucket counts). Prio3 protects
//! the value against each aggregator; it adds no differential-privacy noise of its own: noise, if wanted, is the
//! aggregators' business.
//!
//! **Randomness.** [`Prio3Client::shard`] draws the nonce and the sharding randomness ([`Prio3Client::rand_len`]
//! bytes: seeds for the helper's share, the proof and the blinds) from the operating system's generator
//! (`getrandom`) at each call, with no pool in user space, so a forked child never repeats its parent's draws (two
//! reports with the same seeds would let the leader subtract one measurement from the other).
//! [`Prio3Client::shard_with_random`] takes both from the caller: for the VDAF's test vectors and tests only.
//!
//! The four types are the draft's: [`Prio3Type::Count`] (a measurement 0 or 1, the aggregate their sum),
//! [`Prio3Type::Sum`] (an integer in `[0, max_measurement]`), [`Prio3Type::SumVec`] (a vector of `length` such
//! integers, summed entrywise) and [`Prio3Type::Histogram`] (a bucket index in `[0, length)`, the aggregate the
//! count per bucket). `chunk_length` is the proof's chunk size: a trade-off of the proof's size against the work,
//! about the square root of the encoded measurement's length; [`Prio3Type::sum_vec`] and [`Prio3Type::histogram`]
//! pick the prio crate's `optimal_chunk_length`, as the aggregators' binding does when given none. The aggregators
//! must use exactly the same type, parameters (the chunk length too), number of aggregators and context `ctx` as the
//! devices, or every report fails verification.

use std::fmt;

use prio::codec::Encode;
use prio::field::{Field128, Field64, FieldElementWithInteger};
use prio::vdaf::prio3::{Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};
use prio::vdaf::test_utils::TestVectorClient;
use prio::vdaf::VdafError;
use serde_json::Value;

use crate::error::{Error, Refusal, RefusalCode, Result};

/// Bytes of a report's nonce.
pub const NONCE_LEN: usize = 16;

/// Bytes of a seed of the XOF (TurboSHAKE128) Prio3 uses: the helper's input share is one (two with joint
/// randomness), and `rand_len` is a multiple of it.
const SEED_LEN: usize = 32;

/// The longest application context string, in bytes: the XOF's domain separation tag (8 bytes and `ctx`) is at
/// most 65,535 bytes.
pub const MAX_CTX_LEN: usize = 65_535 - 8;

/// The most field elements an encoded measurement may have: `length` for a histogram, `length` times the bits of
/// `max_measurement` for a `SumVec` (2^20, a leader share of about 16 MiB already).
pub const MAX_ENCODED_LEN: usize = 1 << 20;

/// The default number of aggregators of [`Prio3Client::new`]: the leader and the helper.
const AGGREGATORS: u8 = 2;

/// A Prio3 type and its parameters, as the aggregators configure it too (more types may come: `#[non_exhaustive]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Prio3Type {
    /// Prio3Count: each measurement is 0 or 1 ([`Measurement::Count`]); the aggregate is the number of 1s.
    Count,
    /// Prio3Sum: each measurement is an integer in `[0, max_measurement]` ([`Measurement::Sum`]); the aggregate is
    /// their sum.
    Sum {
        /// The largest measurement, at least 1 and below the field's modulus (2^64 − 2^32 + 1).
        max_measurement: u64,
    },
    /// Prio3SumVec: each measurement is `length` integers in `[0, max_measurement]` ([`Measurement::SumVec`]); the
    /// aggregate is their entrywise sum. (Draft 18 bounds each entry by `max_measurement`; earlier drafts took a
    /// number of bits `b`, which is `max_measurement` 2^b − 1.)
    SumVec {
        /// The largest entry, at least 1 and below the field's modulus (about 2^128).
        max_measurement: u128,
        /// Entries of a measurement, at least 1.
        length: usize,
        /// The proof's chunk length, at least 1.
        chunk_length: usize,
    },
    /// Prio3Histogram: each measurement is a bucket index in `[0, length)` ([`Measurement::Histogram`]); the
    /// aggregate is the count of each bucket.
    Histogram {
        /// Buckets, at least 1.
        length: usize,
        /// The proof's chunk length, at least 1.
        chunk_length: usize,
    },
}

impl Prio3Type {
    /// Prio3SumVec of `length` entries in `[0, max_measurement]` with the recommended chunk length: the prio
    /// crate's `optimal_chunk_length` of the encoded length (`length` times the bits of `max_measurement`), which is
    /// also what the aggregators' binding (`ldp.prio`) takes when given none.
    pub fn sum_vec(max_measurement: u128, length: usize) -> Self {
        let bits = max_measurement.checked_ilog2().map_or(1, |b| b as usize + 1);
        Prio3Type::SumVec { max_measurement, length, chunk_length: default_chunk_length(bits.saturating_mul(length)) }
    }

    /// Prio3Histogram of `length` buckets with the recommended chunk length (the prio crate's
    /// `optimal_chunk_length` of `length`, as the aggregators' binding takes when given none).
    pub fn histogram(length: usize) -> Self {
        Prio3Type::Histogram { length, chunk_length: default_chunk_length(length) }
    }

    /// The draft's name of the type (`"Prio3Histogram"`).
    pub fn name(&self) -> &'static str {
        match self {
            Prio3Type::Count => "Prio3Count",
            Prio3Type::Sum { .. } => "Prio3Sum",
            Prio3Type::SumVec { .. } => "Prio3SumVec",
            Prio3Type::Histogram { .. } => "Prio3Histogram",
        }
    }

    /// Whether the type's proof uses joint randomness (the public share then holds one seed per aggregator).
    fn joint_randomness(&self) -> bool {
        matches!(self, Prio3Type::SumVec { .. } | Prio3Type::Histogram { .. })
    }
}

/// One device's measurement, of the kind its [`Prio3Type`] takes.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Measurement {
    /// For [`Prio3Type::Count`].
    Count(bool),
    /// For [`Prio3Type::Sum`]: at most `max_measurement`.
    Sum(u64),
    /// For [`Prio3Type::SumVec`]: `length` entries, each at most `max_measurement`.
    SumVec(Vec<u128>),
    /// For [`Prio3Type::Histogram`]: a bucket index below `length`.
    Histogram(usize),
}

impl Measurement {
    fn kind(&self) -> &'static str {
        match self {
            Measurement::Count(_) => "Prio3Count",
            Measurement::Sum(_) => "Prio3Sum",
            Measurement::SumVec(_) => "Prio3SumVec",
            Measurement::Histogram(_) => "Prio3Histogram",
        }
    }
}

/// The measurement is the device's secret: its `Debug` shows the kind only.
impl fmt::Debug for Measurement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Measurement::{}(..)", self.kind().trim_start_matches("Prio3"))
    }
}

/// A sharded measurement: what the device sends, encoded with the VDAF's codec (draft 18's wire format).
#[derive(Clone, PartialEq, Eq)]
pub struct Prio3Shares {
    /// The report's nonce: public, sent to both aggregators.
    pub nonce: [u8; NONCE_LEN],
    /// The public share: sent to both aggregators (empty for `Count` and `Sum`).
    pub public_share: Vec<u8>,
    /// One input share per aggregator, the leader's first: each for its aggregator only.
    pub input_shares: Vec<Vec<u8>>,
}

impl Prio3Shares {
    /// The leader's input share (aggregator 0): for the leader only.
    pub fn leader_share(&self) -> &[u8] {
        &self.input_shares[0]
    }

    /// The helper's input share (aggregator 1): for the helper only.
    pub fn helper_share(&self) -> &[u8] {
        &self.input_shares[1]
    }
}

/// The input shares are secrets: `Debug` shows their lengths only.
impl fmt::Debug for Prio3Shares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lengths: Vec<usize> = self.input_shares.iter().map(Vec::len).collect();
        f.debug_struct("Prio3Shares")
            .field("nonce", &crate::bytes::hex(&self.nonce))
            .field("public_share_len", &self.public_share.len())
            .field("input_share_lens", &lengths)
            .finish()
    }
}

/// The prio crate's VDAF of each type.
#[derive(Clone, Debug)]
enum Vdaf {
    Count(Prio3Count),
    Sum(Prio3Sum),
    SumVec(Prio3SumVec),
    Histogram(Prio3Histogram),
}

/// The client side of one Prio3 task: a type with its parameters, the number of aggregators and the application
/// context string. It shards measurements; it keeps no state between calls (`Send + Sync`, cheap to clone).
#[derive(Clone, Debug)]
pub struct Prio3Client {
    typ: Prio3Type,
    aggregators: u8,
    ctx: Vec<u8>,
    vdaf: Vdaf,
}

impl Prio3Client {
    /// The client of `typ` for two aggregators (leader and helper) with the application context `ctx` (the bytes
    /// both aggregators use for this task: at most [`MAX_CTX_LEN`]).
    ///
    /// Bad parameters are refused: `param_range` for a bound out of range (`param`, `got`, `min`, `max`),
    /// `param_length` for a `ctx` too long, `param_limit` (`limit` `"prio3_encoded_length"`) for a measurement
    /// whose encoding would pass [`MAX_ENCODED_LEN`] field elements; anything else the prio crate refuses is an
    /// [`Error::Value`] with its message.
    pub fn new(typ: Prio3Type, ctx: &[u8]) -> Result<Self> {
        Self::with_aggregators(typ, AGGREGATORS, ctx)
    }

    /// The client of `typ` for `aggregators` aggregators (2 to 254; the two-aggregator mode uses 2, the VDAF's
    /// test vectors also 3): one input share each.
    pub fn with_aggregators(typ: Prio3Type, aggregators: u8, ctx: &[u8]) -> Result<Self> {
        if !(2..=254).contains(&aggregators) {
            return Err(Refusal::param_range("aggregators", aggregators).with("min", 2).with("max", 254).into());
        }
        if ctx.len() > MAX_CTX_LEN {
            return Err(Refusal::value(RefusalCode::ParamLength)
                .with("param", "ctx")
                .with("got", ctx.len())
                .with("min", 0)
                .with("max", MAX_CTX_LEN)
                .into());
        }
        check_params(&typ)?;
        let vdaf = match typ {
            Prio3Type::Count => Prio3Count::new_count(aggregators).map(Vdaf::Count),
            Prio3Type::Sum { max_measurement } => Prio3Sum::new_sum(aggregators, max_measurement).map(Vdaf::Sum),
            Prio3Type::SumVec { max_measurement, length, chunk_length } => {
                Prio3SumVec::new_sum_vec(aggregators, max_measurement, length, chunk_length).map(Vdaf::SumVec)
            }
            Prio3Type::Histogram { length, chunk_length } => {
                Prio3Histogram::new_histogram(aggregators, length, chunk_length).map(Vdaf::Histogram)
            }
        }
        .map_err(|e| refused_by_prio(&typ, "parameters", e))?;
        Ok(Prio3Client { typ, aggregators, ctx: ctx.to_vec(), vdaf })
    }

    /// The type and its parameters.
    pub fn prio3_type(&self) -> Prio3Type {
        self.typ
    }

    /// The number of aggregators (of input shares).
    pub fn aggregators(&self) -> usize {
        usize::from(self.aggregators)
    }

    /// The application context string.
    pub fn ctx(&self) -> &[u8] {
        &self.ctx
    }

    /// Bytes of sharding randomness one report takes ([`Prio3Client::shard_with_random`]'s `rand`): a 32-byte
    /// seed per aggregator (the helpers' shares and the proof's randomness), twice that for the types with joint
    /// randomness (`SumVec`, `Histogram`: a blind per aggregator).
    pub fn rand_len(&self) -> usize {
        let seeds = if self.typ.joint_randomness() { 2 } else { 1 } * self.aggregators();
        seeds * SEED_LEN
    }

    /// Checks `measurement` against the type and its parameters (what [`Prio3Client::shard`] does first).
    ///
    /// Refused: a measurement of another type (`value_type`, `expected` the type's name, `got` the measurement's),
    /// one out of range (`value_range`: `got`, `min`, `max`, and for a `SumVec` entry its `index`), a `SumVec` of
    /// the wrong length (an [`Error::Value`] naming both lengths).
    pub fn check(&self, measurement: &Measurement) -> Result<()> {
        match (&self.typ, measurement) {
            (Prio3Type::Count, Measurement::Count(_)) => Ok(()),
            (Prio3Type::Sum { max_measurement }, Measurement::Sum(v)) => {
                if v > max_measurement {
                    return Err(Refusal::value_range(*v).with("min", 0).with("max", *max_measurement).into());
                }
                Ok(())
            }
            (Prio3Type::SumVec { max_measurement, length, .. }, Measurement::SumVec(v)) => {
                if v.len() != *length {
                    return Err(Error::value(format!(
                        "a Prio3SumVec measurement has {length} entries (the type's length), got {}",
                        v.len()
                    )));
                }
                if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| *x > max_measurement) {
                    return Err(Refusal::value_range(*x)
                        .with("min", 0)
                        .with("max", *max_measurement)
                        .with("index", i)
                        .into());
                }
                Ok(())
            }
            (Prio3Type::Histogram { length, .. }, Measurement::Histogram(i)) => {
                if i >= length {
                    return Err(Refusal::value_range(*i).with("min", 0).with("max", *length - 1).into());
                }
                Ok(())
            }
            (typ, m) => {
                Err(Refusal::type_(RefusalCode::ValueType).with("expected", typ.name()).with("got", m.kind()).into())
            }
        }
    }

    /// Shards `measurement` with a fresh nonce and fresh randomness from the OS generator: the shares to send
    /// (see the [module documentation](self) for who gets which). A measurement [`Prio3Client::check`] refuses is
    /// refused with nothing drawn; a failure of the OS generator is an [`Error::Internal`].
    pub fn shard(&self, measurement: &Measurement) -> Result<Prio3Shares> {
        self.check(measurement)?;
        let mut nonce = [0u8; NONCE_LEN];
        let mut rand = vec![0u8; self.rand_len()];
        let drawn = getrandom::fill(&mut nonce).and_then(|()| getrandom::fill(&mut rand));
        if let Err(e) = drawn {
            return Err(Error::Internal(format!("the OS random generator failed: {e}")));
        }
        let shares = self.shard_checked(measurement, &nonce, &rand);
        wipe(&mut rand);
        shares
    }

    /// Shards `measurement` with the caller's `nonce` and `rand` ([`Prio3Client::rand_len`] bytes): the same
    /// inputs always give the same shares. **For tests and the VDAF's test vectors only**: reusing a nonce or
    /// randomness, or drawing them from anything but a cryptographic generator, breaks the privacy of the
    /// measurement. A `rand` of another length is refused (an [`Error::Value`]).
    pub fn shard_with_random(
        &self,
        measurement: &Measurement,
        nonce: &[u8; NONCE_LEN],
        rand: &[u8],
    ) -> Result<Prio3Shares> {
        if rand.len() != self.rand_len() {
            return Err(Error::value(format!(
                "{} with {} aggregators takes {} bytes of sharding randomness, got {}",
                self.typ.name(),
                self.aggregators,
                self.rand_len(),
                rand.len()
            )));
        }
        self.check(measurement)?;
        self.shard_checked(measurement, nonce, rand)
    }

    /// Shards a checked measurement through the prio crate and encodes the shares.
    fn shard_checked(&self, measurement: &Measurement, nonce: &[u8; NONCE_LEN], rand: &[u8]) -> Result<Prio3Shares> {
        let ctx = self.ctx.as_slice();
        let refused = |e| refused_by_prio(&self.typ, "measurement", e);
        let (public_share, input_shares) = match (&self.vdaf, measurement) {
            (Vdaf::Count(v), Measurement::Count(m)) => {
                let (p, s) = v.shard_with_random(ctx, m, nonce, rand).map_err(refused)?;
                (encode(&p)?, encode_all(&s)?)
            }
            (Vdaf::Sum(v), Measurement::Sum(m)) => {
                let (p, s) = v.shard_with_random(ctx, m, nonce, rand).map_err(refused)?;
                (encode(&p)?, encode_all(&s)?)
            }
            (Vdaf::SumVec(v), Measurement::SumVec(m)) => {
                let (p, s) = v.shard_with_random(ctx, m, nonce, rand).map_err(refused)?;
                (encode(&p)?, encode_all(&s)?)
            }
            (Vdaf::Histogram(v), Measurement::Histogram(m)) => {
                let (p, s) = v.shard_with_random(ctx, m, nonce, rand).map_err(refused)?;
                (encode(&p)?, encode_all(&s)?)
            }
            _ => return Err(Error::Internal("a measurement of another type passed the check".into())),
        };
        Ok(Prio3Shares { nonce: *nonce, public_share, input_shares })
    }
}

/// The recommended chunk length of an encoded measurement of `n` field elements (1 past [`MAX_ENCODED_LEN`], which
/// [`Prio3Client::new`] refuses anyway).
fn default_chunk_length(n: usize) -> usize {
    if n > MAX_ENCODED_LEN {
        return 1;
    }
    prio::vdaf::prio3::optimal_chunk_length(n)
}

/// The checks of a type's parameters this crate makes itself, with refusals by meaning; the prio crate checks them
/// again.
fn check_params(typ: &Prio3Type) -> Result<()> {
    let at_least_one = |param: &str, got: usize| -> Result<()> {
        if got == 0 {
            return Err(Refusal::param_range(param, got).with("min", 1).into());
        }
        Ok(())
    };
    let encoded_length = |got: u128| -> Result<()> {
        if got > MAX_ENCODED_LEN as u128 {
            return Err(Refusal::limit("prio3_encoded_length", Value::from(got), MAX_ENCODED_LEN).into());
        }
        Ok(())
    };
    match *typ {
        Prio3Type::Count => Ok(()),
        Prio3Type::Sum { max_measurement } => {
            let max = Field64::modulus() - 1;
            if max_measurement == 0 || max_measurement > max {
                return Err(Refusal::param_range("max_measurement", max_measurement)
                    .with("min", 1)
                    .with("max", max)
                    .into());
            }
            Ok(())
        }
        Prio3Type::SumVec { max_measurement, length, chunk_length } => {
            let max = Field128::modulus() - 1;
            if max_measurement == 0 || max_measurement > max {
                return Err(Refusal::param_range("max_measurement", max_measurement)
                    .with("min", 1)
                    .with("max", max)
                    .into());
            }
            at_least_one("length", length)?;
            at_least_one("chunk_length", chunk_length)?;
            // Each entry is encoded in the bits of max_measurement.
            let bits = u128::from(max_measurement.ilog2() + 1);
            encoded_length(bits * length as u128)
        }
        Prio3Type::Histogram { length, chunk_length } => {
            at_least_one("length", length)?;
            at_least_one("chunk_length", chunk_length)?;
            encoded_length(length as u128)
        }
    }
}

/// The prio crate's refusal of a type's `what` (parameters, measurement), as this crate's error.
fn refused_by_prio(typ: &Prio3Type, what: &str, e: VdafError) -> Error {
    Error::value(format!("{} refused the {what} (prio crate): {e}", typ.name()))
}

fn encode(item: &impl Encode) -> Result<Vec<u8>> {
    item.get_encoded().map_err(|e| Error::Internal(format!("encoding a Prio3 share failed: {e}")))
}

fn encode_all<T: Encode>(items: &[T]) -> Result<Vec<Vec<u8>>> {
    items.iter().map(encode).collect()
}

/// Overwrites secret bytes before their memory is freed (best effort, as the OS source's pool does).
pub(crate) fn wipe(bytes: &mut [u8]) {
    bytes.fill(0);
    // Keeps the compiler from dropping the zeroing as a dead store.
    std::hint::black_box(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand_len_follows_the_type() {
        let count = Prio3Client::new(Prio3Type::Count, b"").unwrap();
        assert_eq!(count.rand_len(), 64);
        let hist = Prio3Client::with_aggregators(Prio3Type::Histogram { length: 4, chunk_length: 2 }, 3, b"").unwrap();
        assert_eq!(hist.rand_len(), 192);
    }

    #[test]
    fn debug_hides_the_secrets() {
        let c = Prio3Client::new(Prio3Type::Sum { max_measurement: 1000 }, b"ctx").unwrap();
        let s = c.shard(&Measurement::Sum(777)).unwrap();
        let text = format!("{s:?} {:?}", Measurement::Sum(777));
        assert!(!text.contains("777") && text.contains("input_share_lens"), "{text}");
    }
}
