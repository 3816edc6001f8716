//! [`VdafDraft`]: which draft of the VDAF specification a client shards for, and what follows from it.

use std::fmt;

/// The draft of the VDAF specification (`draft-irtf-cfrg-vdaf`) a [`Prio3Client`](super::Prio3Client) shards for.
/// Both aggregators must run the same draft as the devices: a report of one draft fails verification under the
/// other (the XOF, the seed sizes, the field of `Sum` and the domain separation all differ).
///
/// * [`VdafDraft::Draft18`] (the default): draft 18, through the `prio` crate 0.18.1, with an application context
///   string; what this deployment's own aggregators (`ldp.prio`) run.
/// * [`VdafDraft::Draft08`]: draft 08, through the `prio` crate 0.16.8: what the deployed DAP-09 stacks speak
///   (Janus 0.7, `janus_client` 0.7, divviup-ts, Firefox). It has no context string, and bounds a `Sum` or a `SumVec`
///   entry by a number of bits `b` (the [`Prio3Type`](super::Prio3Type)'s `max_measurement` must be 2^b − 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum VdafDraft {
    /// `draft-irtf-cfrg-vdaf-08` (prio 0.16.8).
    Draft08,
    /// `draft-irtf-cfrg-vdaf-18` (prio 0.18.1): the default.
    #[default]
    Draft18,
}

impl VdafDraft {
    /// Every draft, oldest first.
    pub const ALL: [VdafDraft; 2] = [VdafDraft::Draft08, VdafDraft::Draft18];

    /// The draft's number: 8 or 18 (what the C interface takes).
    pub const fn number(self) -> u32 {
        match self {
            VdafDraft::Draft08 => 8,
            VdafDraft::Draft18 => 18,
        }
    }

    /// The draft numbered `number` (8 or 18), if this crate speaks it.
    pub const fn from_number(number: u32) -> Option<Self> {
        match number {
            8 => Some(VdafDraft::Draft08),
            18 => Some(VdafDraft::Draft18),
            _ => None,
        }
    }

    /// The draft's name: `"draft-irtf-cfrg-vdaf-08"`.
    pub fn name(self) -> &'static str {
        match self {
            VdafDraft::Draft08 => "draft-irtf-cfrg-vdaf-08",
            VdafDraft::Draft18 => "draft-irtf-cfrg-vdaf-18",
        }
    }

    /// The version of the `prio` crate that implements the draft here.
    pub fn prio_version(self) -> &'static str {
        match self {
            VdafDraft::Draft08 => "0.16.8",
            VdafDraft::Draft18 => "0.18.1",
        }
    }

    /// Bytes of the verify key the two aggregators share (devices never see it): 16 in draft 08, 32 in draft 18.
    /// Read from the prio crate's `Aggregator` implementation of the draft.
    pub fn verify_key_len(self) -> usize {
        match self {
            VdafDraft::Draft08 => super::draft08::VERIFY_KEY_LEN,
            VdafDraft::Draft18 => super::draft18::VERIFY_KEY_LEN,
        }
    }

    /// Bytes of a seed of the draft's XOF (TurboSHAKE128): the helper's input share is made of them, and so is the
    /// sharding randomness.
    pub(super) fn seed_len(self) -> usize {
        match self {
            VdafDraft::Draft08 => 16,
            VdafDraft::Draft18 => 32,
        }
    }

    /// Whether the draft has an application context string.
    pub fn has_ctx(self) -> bool {
        self != VdafDraft::Draft08
    }
}

impl fmt::Display for VdafDraft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
