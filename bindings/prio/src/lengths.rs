//! What a report's VDAF bytes must be, for the leader's door (issue 84, item 1): each share's exact length, and
//! whether bytes are exactly one share of this VDAF.
//!
//! The lengths are those of the shares the crate's `shard` makes (VDAF-18 §7 and VDAF-08 §7: a Prio3 public share is
//! one joint randomness part per aggregator, or nothing for a type without joint randomness; the leader's input share
//! its measurement and proof shares in field elements, then its blind; a helper's seeds, then its blind), learnt once
//! by sharding the all-zero measurement with a zero nonce (the randomness drawn: lengths do not depend on it): every
//! report of the VDAF has them. The checks are the crate's decoding (`ParameterizedDecode` of `Prio3InputShare` for
//! an aggregator ID, of `Prio3PublicShare`), through `get_decoded_with_param`, which refuses leftover bytes: a share
//! that decodes is exactly one share, each field element below the modulus. Nothing is computed here that the crate
//! does not compute.

use pyo3::prelude::*;

use crate::backend::{Backend, NONCE_SIZE};
use crate::errors::Op;
use crate::spec::Spec;
use crate::vdaf::Core;

/// The encoded lengths of one report's shares, in bytes.
pub(crate) struct Lengths {
    /// The public share's.
    pub(crate) public_share: usize,
    /// Each aggregator's input share, by aggregator ID (0: the leader).
    pub(crate) input_shares: Vec<usize>,
}

impl<B: Backend> Core<B> {
    /// The shares' lengths: the first call shards the all-zero measurement, the others read what it learnt.
    pub(crate) fn lengths(&self, py: Python<'_>) -> PyResult<&Lengths> {
        if let Some(lengths) = self.lengths.get() {
            return Ok(lengths);
        }
        let zero = B::Spec::zero(self.params());
        let (public, inputs) =
            self.backend.shard(&self.ctx, &zero, &[0u8; NONCE_SIZE], None).map_err(|e| self.err(py, Op::Shard, e))?;
        let lengths = Lengths { public_share: public.len(), input_shares: inputs.iter().map(Vec::len).collect() };
        Ok(self.lengths.get_or_init(|| lengths))
    }

    /// The bytes of aggregator `agg_id`'s input share (below the number of aggregators).
    pub(crate) fn input_share_len(&self, py: Python<'_>, agg_id: usize) -> PyResult<usize> {
        self.check_agg_id(py, Op::Decode, agg_id)?;
        Ok(self.lengths(py)?.input_shares[agg_id])
    }

    /// Refuse bytes that are not exactly one input share of aggregator `agg_id` of this VDAF.
    pub(crate) fn check_input_share(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<()> {
        let expected = self.input_share_len(py, agg_id)?;
        self.backend.check_input_share(agg_id, data).map_err(|e| {
            let what =
                format!("{} bytes are no input share of aggregator {agg_id} (of {expected} bytes: {e})", data.len());
            self.err(py, Op::Decode, what)
        })
    }

    /// Refuse bytes that are not exactly one public share of this VDAF.
    pub(crate) fn check_public_share(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let expected = self.lengths(py)?.public_share;
        self.backend.check_public_share(data).map_err(|e| {
            self.err(py, Op::Decode, format!("{} bytes are no public share (of {expected} bytes: {e})", data.len()))
        })
    }
}
