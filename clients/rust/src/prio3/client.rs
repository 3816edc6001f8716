//! [`Prio3Client`]: the client side of one Prio3 task, sharding measurements with the prio crate's VDAFs of its
//! draft (`draft18`, `draft08`).

use super::types::check_params;
use super::{
    check_ctx_len, draft08, draft18, wipe, Measurement, Prio3Shares, Prio3Type, VdafDraft, AGGREGATORS, NONCE_LEN,
};
use crate::error::{Error, Refusal, RefusalCode, Result};

/// The prio crate's VDAF of the client's draft.
#[derive(Clone, Debug)]
enum Vdaf {
    Draft08(draft08::Vdaf),
    Draft18(draft18::Vdaf),
}

/// The client side of one Prio3 task: the VDAF draft, a type with its parameters, the number of aggregators and the
/// application context string. It shards measurements; it keeps no state between calls (`Send + Sync`, cheap to
/// clone).
#[derive(Clone, Debug)]
pub struct Prio3Client {
    draft: VdafDraft,
    typ: Prio3Type,
    aggregators: u8,
    ctx: Vec<u8>,
    vdaf: Vdaf,
}

impl Prio3Client {
    /// The VDAF draft 18 client of `typ` for two aggregators (leader and helper) with the application context
    /// `ctx` (the bytes both aggregators use for this task: at most [`MAX_CTX_LEN`](super::MAX_CTX_LEN)).
    ///
    /// Bad parameters are refused: `param_range` for a bound out of range (`param`, `got`, `min`, `max`),
    /// `param_length` for a `ctx` too long, `param_limit` (`limit` `"prio3_encoded_length"`) for a measurement
    /// whose encoding would pass [`MAX_ENCODED_LEN`](super::MAX_ENCODED_LEN) field elements; anything else the prio
    /// crate refuses is an [`Error::Value`] with its message.
    pub fn new(typ: Prio3Type, ctx: &[u8]) -> Result<Self> {
        Self::with_draft(VdafDraft::Draft18, typ, ctx)
    }

    /// The client of `typ` in VDAF draft `draft` for two aggregators, with the application context `ctx`: as
    /// [`Prio3Client::new`], and for [`VdafDraft::Draft08`] two more refusals, both `param_relation`: a non-empty
    /// `ctx` (`rule` `"vdaf08_no_ctx"`: draft 08 has no context string), and a Sum or SumVec `max_measurement` that
    /// is no 2^b − 1 (`rule` `"vdaf08_bits"`, with `got` and the `nearest` allowed values below and above it).
    pub fn with_draft(draft: VdafDraft, typ: Prio3Type, ctx: &[u8]) -> Result<Self> {
        Self::with_draft_and_aggregators(draft, typ, AGGREGATORS, ctx)
    }

    /// The VDAF draft 18 client of `typ` for `aggregators` aggregators (2 to 254; the two-aggregator mode uses 2,
    /// the VDAF's test vectors also 3): one input share each.
    pub fn with_aggregators(typ: Prio3Type, aggregators: u8, ctx: &[u8]) -> Result<Self> {
        Self::with_draft_and_aggregators(VdafDraft::Draft18, typ, aggregators, ctx)
    }

    /// The client of `typ` in VDAF draft `draft` for `aggregators` aggregators (2 to 254), with the context `ctx`
    /// (refused as [`Prio3Client::with_draft`] refuses).
    pub fn with_draft_and_aggregators(draft: VdafDraft, typ: Prio3Type, aggregators: u8, ctx: &[u8]) -> Result<Self> {
        if !(2..=254).contains(&aggregators) {
            return Err(Refusal::param_range("aggregators", aggregators).with("min", 2).with("max", 254).into());
        }
        if !draft.has_ctx() && !ctx.is_empty() {
            return Err(Refusal::relation(draft08::NO_CTX_RULE, &["ctx", "draft"]).with("got", ctx.len()).into());
        }
        check_ctx_len(ctx)?;
        check_params(draft, &typ)?;
        let vdaf = match draft {
            VdafDraft::Draft08 => Vdaf::Draft08(draft08::Vdaf::new(&typ, aggregators)?),
            VdafDraft::Draft18 => Vdaf::Draft18(draft18::Vdaf::new(&typ, aggregators)?),
        };
        Ok(Prio3Client { draft, typ, aggregators, ctx: ctx.to_vec(), vdaf })
    }

    /// The VDAF draft the client shards for.
    pub fn draft(&self) -> VdafDraft {
        self.draft
    }

    /// Bytes of the verify key the aggregators of the client's draft share ([`VdafDraft::verify_key_len`]).
    pub fn verify_key_len(&self) -> usize {
        self.draft.verify_key_len()
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

    /// Bytes of sharding randomness one report takes. In draft 18 ([`Prio3Client::shard_with_random`]'s `rand`), a
    /// 32-byte seed per aggregator (the helpers' shares and the proof's randomness), twice that for the types with
    /// joint randomness (`SumVec`, `Histogram`: a blind per aggregator). In draft 08, what prio 0.16.8 draws from
    /// the OS generator for each report: 16-byte seeds, two per helper (its measurement and proof shares) and one
    /// for the proof, and a blind per aggregator for the types with joint randomness (`Sum`, `SumVec`,
    /// `Histogram`): 48 or 80 bytes with two aggregators.
    pub fn rand_len(&self) -> usize {
        let (n, joint) = (self.aggregators(), self.typ.joint_randomness(self.draft));
        let seeds = match self.draft {
            VdafDraft::Draft08 => 2 * (n - 1) + 1 + if joint { n } else { 0 },
            VdafDraft::Draft18 => n * if joint { 2 } else { 1 },
        };
        seeds * self.draft.seed_len()
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
    /// (see the [module documentation](crate::prio3) for who gets which). A measurement [`Prio3Client::check`]
    /// refuses is refused with nothing drawn; a failure of the OS generator is an [`Error::Internal`]. In draft 08
    /// this crate draws the nonce and prio 0.16.8 the sharding randomness, from the same OS generator (`getrandom`).
    pub fn shard(&self, measurement: &Measurement) -> Result<Prio3Shares> {
        self.check(measurement)?;
        let mut nonce = [0u8; NONCE_LEN];
        let os_failed = |e| Error::Internal(format!("the OS random generator failed: {e}"));
        getrandom::fill(&mut nonce).map_err(os_failed)?;
        let (public_share, input_shares) = match &self.vdaf {
            Vdaf::Draft08(v) => v.shard(&self.typ, measurement, &nonce)?,
            Vdaf::Draft18(v) => {
                let mut rand = vec![0u8; self.rand_len()];
                getrandom::fill(&mut rand).map_err(os_failed)?;
                let shares = v.shard_with_random(&self.typ, &self.ctx, measurement, &nonce, &rand);
                wipe(&mut rand);
                shares?
            }
        };
        Ok(Prio3Shares { nonce, public_share, input_shares })
    }

    /// Shards `measurement` with the caller's `nonce` and `rand` ([`Prio3Client::rand_len`] bytes): the same
    /// inputs always give the same shares. **For tests and the VDAF's test vectors only**: reusing a nonce or
    /// randomness, or drawing them from anything but a cryptographic generator, breaks the privacy of the
    /// measurement. A `rand` of another length is refused (an [`Error::Value`]).
    ///
    /// **Draft 18 only**: a draft 08 client refuses it (an [`Error::Value`]), since prio 0.16.8 has no public
    /// sharding with given randomness (its `shard_with_random` is `pub(crate)`; this crate uses prio's public API
    /// only, and reimplements none of the VDAF).
    pub fn shard_with_random(
        &self,
        measurement: &Measurement,
        nonce: &[u8; NONCE_LEN],
        rand: &[u8],
    ) -> Result<Prio3Shares> {
        let v = match &self.vdaf {
            Vdaf::Draft18(v) => v,
            Vdaf::Draft08(_) => {
                return Err(Error::value(format!(
                "a VDAF draft 08 client cannot shard with given randomness: prio {}, which implements draft 08, keeps \
                 its shard_with_random crate-private, and its public shard draws the randomness from the OS \
                 generator itself (use shard)",
                self.draft.prio_version()
            )))
            }
        };
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
        let (public_share, input_shares) = v.shard_with_random(&self.typ, &self.ctx, measurement, nonce, rand)?;
        Ok(Prio3Shares { nonce: *nonce, public_share, input_shares })
    }

    /// prio 0.16.8's VDAF of a draft 08 client, for the tests that replay draft 08's test vectors on it.
    #[cfg(test)]
    pub(super) fn draft08_vdaf(&self) -> Option<&draft08::Vdaf> {
        match &self.vdaf {
            Vdaf::Draft08(v) => Some(v),
            Vdaf::Draft18(_) => None,
        }
    }
}
