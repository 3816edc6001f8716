//! The trait over the drafts: what the binding asks of one Prio3 VDAF of one `prio` crate, in bytes and in the
//! field elements of the binding's output and aggregate shares. Each crate version has one module that implements it,
//! generically over the four types: `draft18.rs` (prio 0.18.1, VDAF-18) and `draft08.rs` (prio 0.16.8, VDAF-08), each
//! a thin adapter over its crate's public API (decode, call, encode). Everything above it (`vdaf.rs`, `batch.rs`,
//! `lengths.rs`, the Python classes of `classes.rs`) is written once for both drafts.
//!
//! Output and aggregate shares are held in one representation for both drafts, the vectors of prio 0.18.1's
//! `Field64` and `Field128` (`shares.rs`): the two crates' fields are the same primes (draft08.rs checks it as each
//! VDAF is built), so a draft 08 output share converts element by element and the same aggregate shares serve both.
//! Their `Params` (the draft among them) keep one draft's shares from another's VDAF.

use std::any::Any;
use std::fmt::Display;

use prio::vdaf::{AggregateShare, OutputShare};

use crate::params::{Draft, Params};
use crate::shares::Field;
use crate::spec::Spec;

/// A report's nonce (its DAP report ID), in both drafts.
pub(crate) const NONCE_SIZE: usize = 16;

/// What `shard` makes, encoded: the public share and one input share per aggregator.
pub(crate) type Shards = (Vec<u8>, Vec<Vec<u8>>);

/// A verification state of either crate, as a Python `VerifyState` holds it: its encoding, and (`Any`) the state
/// itself, which only the backend of its own draft and field takes back.
pub(crate) trait AnyState: Any + Send + Sync {
    /// The crate's encoding of the state.
    fn encoded(&self) -> Result<Vec<u8>, String>;
}

/// The refusal's text for bytes that do not decode as `what` (`"the public share"`, `"verifier share 1"`, …).
pub(crate) fn undecodable(what: &str, e: impl Display) -> String {
    format!("{what} is no valid encoding ({e})")
}

/// One Prio3 VDAF of one crate. Errors are the refusal's text (the caller names the VDAF and the operation).
pub(crate) trait Backend: Sized + Send + Sync + 'static {
    /// The type as Python sees it.
    type Spec: Spec;
    /// The field of its output and aggregate shares, in the binding's representation.
    type F: Field;
    /// The crate's verification state.
    type State: AnyState;
    /// The crate's verifier share ("prepare share" in draft 08), decoded.
    type Share: Send;

    const DRAFT: Draft;
    /// The crate's version (for messages).
    const CRATE: &'static str;
    /// The verify key's bytes (the crate's Prio3 seed size).
    const VERIFY_KEY_SIZE: usize;
    /// A seed's bytes: a joint randomness part in a public share or at the end of a verifier share.
    const SEED_SIZE: usize;

    /// The VDAF of `params` (type, number of aggregators, `bits` or `max_measurement`, length, chunk length).
    fn new(params: &Params) -> Result<Self, String>;

    /// The crate's `optimal_chunk_length` for a measurement of that many field elements.
    fn optimal_chunk_length(measurement_length: usize) -> usize;

    /// The field's prime, the crate's own.
    fn modulus() -> u128;

    fn output_len(&self) -> usize;

    /// The bytes of randomness `shard` takes when given, or `None` when the crate has no public sharding with given
    /// randomness.
    fn rand_size(&self) -> Option<usize>;

    /// The crate's sharding: with the given randomness (`Some`, of `rand_size` bytes), else drawn by the crate.
    fn shard(
        &self,
        ctx: &[u8],
        measurement: &<Self::Spec as Spec>::Measurement,
        nonce: &[u8; NONCE_SIZE],
        rand: Option<&[u8]>,
    ) -> Result<Shards, String>;

    /// Refuse bytes that are not exactly one input share of aggregator `agg_id` (the codec's error).
    fn check_input_share(&self, agg_id: usize, data: &[u8]) -> Result<(), String>;

    /// Refuse bytes that are not exactly one public share (the codec's error).
    fn check_public_share(&self, data: &[u8]) -> Result<(), String>;

    /// The crate's first step for aggregator `agg_id` (below the number of aggregators; `verify_key` of
    /// `VERIFY_KEY_SIZE` bytes): the shares decoded, then its state and verifier share.
    fn init(
        &self,
        verify_key: &[u8],
        ctx: &[u8],
        agg_id: usize,
        nonce: &[u8; NONCE_SIZE],
        public_share: &[u8],
        input_share: &[u8],
    ) -> Result<(Self::State, Self::Share), String>;

    fn encode_share(share: &Self::Share) -> Result<Vec<u8>, String>;

    /// A verifier share from its bytes (`what` names it in the refusal).
    fn decode_share(&self, what: &str, data: &[u8]) -> Result<Self::Share, String>;

    /// The crate's combination of every aggregator's verifier share into the verifier message, encoded.
    fn message(&self, ctx: &[u8], shares: Vec<Self::Share>) -> Result<Vec<u8>, String>;

    /// The crate's last step: the message decoded, then the output share.
    fn next(&self, ctx: &[u8], state: Self::State, message: &[u8]) -> Result<OutputShare<Self::F>, String>;

    /// A state of aggregator `agg_id` from its encoding.
    fn decode_state(&self, agg_id: usize, data: &[u8]) -> Result<Self::State, String>;

    /// The crate's empty aggregate share.
    fn empty(&self) -> Result<AggregateShare<Self::F>, String>;

    /// An aggregate share from its encoding, by the crate's decoding.
    fn decode_aggregate(&self, data: &[u8]) -> Result<AggregateShare<Self::F>, String>;

    /// The crate's aggregate result of every aggregator's aggregate share.
    fn unshard(
        &self,
        shares: Vec<AggregateShare<Self::F>>,
        num_measurements: usize,
    ) -> Result<<Self::Spec as Spec>::Result, String>;
}
