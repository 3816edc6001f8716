//! Prio3 client sharding for the two-aggregator mode (feature `prio`; VDAF draft 18, `draft-irtf-cfrg-vdaf-18`,
//! through the [`prio`](https://crates.io/crates/prio) crate 0.18.1, or VDAF draft 08 through prio 0.16.8: see
//! [`VdafDraft`]).
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
//! [`Prio3Client::shard_with_random`] takes both from the caller: for the VDAF's test vectors and tests only, and in
//! draft 18 only. In draft 08 the sharding randomness is drawn by prio 0.16.8's public `shard` itself, from
//! `getrandom` too (at each call, no pool: as fork-safe); prio 0.16.8 offers no public sharding with given
//! randomness, so a draft 08 client has none either.
//!
//! **Drafts.** [`VdafDraft::Draft18`] is the default ([`Prio3Client::new`]); [`Prio3Client::with_draft`] takes
//! [`VdafDraft::Draft08`], what the deployed DAP-09 stacks (Janus 0.7, divviup-ts, Firefox) speak:
//!
//! ```
//! use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type, VdafDraft};
//!
//! // Draft 08 has no context string, and bounds a sum by bits: max_measurement 2^b − 1 (here b = 8).
//! let client = Prio3Client::with_draft(VdafDraft::Draft08, Prio3Type::Sum { max_measurement: 255 }, b"")?;
//! let shares = client.shard(&Measurement::Sum(17))?;
//! assert_eq!((client.verify_key_len(), shares.helper_share().len()), (16, 48));
//! assert!(Prio3Client::with_draft(VdafDraft::Draft08, Prio3Type::Sum { max_measurement: 1000 }, b"").is_err());
//! # Ok::<(), ldp_client::Error>(())
//! ```
//!
//! The four types are the draft's: [`Prio3Type::Count`] (a measurement 0 or 1, the aggregate their sum),
//! [`Prio3Type::Sum`] (an integer in `[0, max_measurement]`), [`Prio3Type::SumVec`] (a vector of `length` such
//! integers, summed entrywise) and [`Prio3Type::Histogram`] (a bucket index in `[0, length)`, the aggregate the
//! count per bucket). `chunk_length` is the proof's chunk size: a trade-off of the proof's size against the work,
//! about the square root of the encoded measurement's length; [`Prio3Type::sum_vec`] and [`Prio3Type::histogram`]
//! pick the prio crate's `optimal_chunk_length` (draft 18's; [`Prio3Type::sum_vec_for`] and
//! [`Prio3Type::histogram_for`] the given draft's), as the aggregators' binding does when given none. The aggregators
//! must use exactly the same draft, type, parameters (the chunk length too), number of aggregators and context `ctx`
//! as the devices, or every report fails verification.
//!
//! Layout: the drafts (`draft`), the types and their parameters (`types`), each draft's VDAFs through its prio crate
//! (`draft18`, `draft08`), the client that shards (`client`); the constants, the measurement and the shares here.

mod client;
mod draft;
mod draft08;
mod draft18;
mod types;

use std::fmt;

use prio::codec::Encode;

pub use self::client::Prio3Client;
pub use self::draft::VdafDraft;
pub use self::types::Prio3Type;
use crate::error::{Error, Refusal, RefusalCode, Result};

/// Bytes of a report's nonce.
pub const NONCE_LEN: usize = 16;

/// The longest application context string, in bytes: the XOF's domain separation tag (8 bytes and `ctx`) is at
/// most 65,535 bytes (draft 18; draft 08 has no context string).
pub const MAX_CTX_LEN: usize = 65_535 - 8;

/// The most field elements an encoded measurement may have: `length` for a histogram, `length` times the bits of
/// `max_measurement` for a `SumVec` (2^20, a leader share of about 16 MiB already).
pub const MAX_ENCODED_LEN: usize = 1 << 20;

/// The default number of aggregators of [`Prio3Client::new`]: the leader and the helper.
const AGGREGATORS: u8 = 2;

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

/// A sharded measurement: what the device sends, encoded with the VDAF's codec (the wire format of the client's
/// draft).
#[derive(Clone, PartialEq, Eq)]
pub struct Prio3Shares {
    /// The report's nonce: public, sent to both aggregators.
    pub nonce: [u8; NONCE_LEN],
    /// The public share: sent to both aggregators (empty for `Count`, and for `Sum` in draft 18).
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

/// The shares of one sharded measurement, of any VDAF this crate shards (Prio3 here, Poplar1 in `crate::poplar1`):
/// the nonce (DAP's report ID), the public share (for both aggregators), one input share per aggregator, the
/// leader's first (each for its aggregator only). What DAP's envelope (`crate::dap`) and the C interface read.
pub(crate) trait VdafShares {
    /// The type's name in `Debug`.
    const NAME: &'static str;
    /// The report's nonce.
    fn nonce(&self) -> &[u8; NONCE_LEN];
    /// The public share.
    fn public_share(&self) -> &[u8];
    /// The input shares, the leader's first.
    fn input_shares(&self) -> &[Vec<u8>];

    /// `Debug` of shares: the input shares are secrets, so it shows their lengths only.
    fn fmt_debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lengths: Vec<usize> = self.input_shares().iter().map(Vec::len).collect();
        f.debug_struct(Self::NAME)
            .field("nonce", &crate::bytes::hex(self.nonce()))
            .field("public_share_len", &self.public_share().len())
            .field("input_share_lens", &lengths)
            .finish()
    }
}

impl VdafShares for Prio3Shares {
    const NAME: &'static str = "Prio3Shares";
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

/// The input shares are secrets: `Debug` shows their lengths only.
impl fmt::Debug for Prio3Shares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_debug(f)
    }
}

/// Refuses an application context string over [`MAX_CTX_LEN`] bytes (`param_length`); shared by Prio3 and Poplar1.
pub(crate) fn check_ctx_len(ctx: &[u8]) -> Result<()> {
    if ctx.len() > MAX_CTX_LEN {
        return Err(Refusal::value(RefusalCode::ParamLength)
            .with("param", "ctx")
            .with("got", ctx.len())
            .with("min", 0)
            .with("max", MAX_CTX_LEN)
            .into());
    }
    Ok(())
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
    fn rand_len_follows_the_draft() {
        let d08 = |typ, n| Prio3Client::with_draft_and_aggregators(VdafDraft::Draft08, typ, n, b"").unwrap().rand_len();
        // prio 0.16.8's random_size: 16-byte seeds, two per helper and one for the proof, a blind per aggregator
        // with joint randomness (draft 08's vectors: 48 and 80 bytes with 2 aggregators, 80 and 128 with 3).
        assert_eq!((d08(Prio3Type::Count, 2), d08(Prio3Type::Count, 3)), (48, 80));
        assert_eq!((d08(Prio3Type::Sum { max_measurement: 255 }, 2), d08(Prio3Type::histogram(4), 3)), (80, 128));
    }

    #[test]
    fn debug_hides_the_secrets() {
        let c = Prio3Client::new(Prio3Type::Sum { max_measurement: 1000 }, b"ctx").unwrap();
        let s = c.shard(&Measurement::Sum(777)).unwrap();
        let text = format!("{s:?} {:?}", Measurement::Sum(777));
        assert!(!text.contains("777") && text.contains("input_share_lens"), "{text}");
    }
}
