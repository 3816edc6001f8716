//! What a report's VDAF bytes must be, for the leader's door (issue 84, item 1): each share's exact length, and
//! whether bytes are exactly one share of this VDAF.
//!
//! The lengths are those of the shares the crate's `shard` makes (VDAF-18 §7: a Prio3 public share is one joint
//! randomness part per aggregator, or nothing for a type without joint randomness; the leader's input share its
//! measurement and proof shares in field elements, then its blind; a helper's a seed, then its blind), learnt once
//! by sharding the all-zero measurement with fixed randomness: every report of the VDAF has them. The checks are the
//! crate's decoding (`ParameterizedDecode` of `Prio3InputShare` for an aggregator ID, of `Prio3PublicShare`), through
//! `get_decoded_with_param`, which refuses leftover bytes: a share that decodes is exactly one share, each field
//! element below the modulus. Nothing is computed here that the crate does not compute.

use prio::codec::ParameterizedDecode;
use prio::vdaf::prio3::{Prio3InputShare, Prio3PublicShare};
use prio::vdaf::test_utils::TestVectorClient;
use pyo3::prelude::*;

use crate::errors::Op;
use crate::shares::SEED_SIZE;
use crate::vdafs::{Core, EncodeDyn, Spec, NONCE_SIZE};

/// The encoded lengths of one report's shares, in bytes.
pub(crate) struct Lengths {
    /// The public share's.
    pub(crate) public_share: usize,
    /// Each aggregator's input share, by aggregator ID (0: the leader).
    pub(crate) input_shares: Vec<usize>,
}

impl<S: Spec> Core<S> {
    /// The shares' lengths: the first call shards the all-zero measurement (zero nonce and randomness), the others
    /// read what it learnt.
    pub(crate) fn lengths(&self, py: Python<'_>) -> PyResult<&Lengths> {
        if let Some(lengths) = self.lengths.get() {
            return Ok(lengths);
        }
        let rand = vec![0u8; self.rand_size()];
        let (public, inputs) = self
            .vdaf
            .shard_with_random(&self.ctx, &S::zero(self.params()), &[0u8; NONCE_SIZE], &rand)
            .map_err(|e| self.err(py, Op::Shard, e))?;
        let len = |value: &dyn EncodeDyn| value.encoded().map(|b| b.len()).map_err(|e| self.err(py, Op::Shard, e));
        let public_share = len(&public)?;
        let input_shares = inputs.iter().map(|s| len(s)).collect::<PyResult<Vec<_>>>()?;
        Ok(self.lengths.get_or_init(|| Lengths { public_share, input_shares }))
    }

    /// The bytes of aggregator `agg_id`'s input share (below the number of aggregators).
    pub(crate) fn input_share_len(&self, py: Python<'_>, agg_id: usize) -> PyResult<usize> {
        self.check_agg_id(py, Op::Decode, agg_id)?;
        Ok(self.lengths(py)?.input_shares[agg_id])
    }

    /// Refuse bytes that are not exactly one input share of aggregator `agg_id` of this VDAF.
    pub(crate) fn check_input_share(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<()> {
        let expected = self.input_share_len(py, agg_id)?;
        Prio3InputShare::<S::F, SEED_SIZE>::get_decoded_with_param(&(&self.vdaf, agg_id), data).map_err(|e| {
            let what =
                format!("{} bytes are no input share of aggregator {agg_id} (of {expected} bytes: {e})", data.len());
            self.err(py, Op::Decode, what)
        })?;
        Ok(())
    }

    /// Refuse bytes that are not exactly one public share of this VDAF.
    pub(crate) fn check_public_share(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let expected = self.lengths(py)?.public_share;
        Prio3PublicShare::<SEED_SIZE>::get_decoded_with_param(&self.vdaf, data).map_err(|e| {
            self.err(py, Op::Decode, format!("{} bytes are no public share (of {expected} bytes: {e})", data.len()))
        })?;
        Ok(())
    }
}
