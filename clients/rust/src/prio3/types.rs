//! The Prio3 types ([`Prio3Type`]) and the checks of their parameters this crate makes itself.

use prio::field::{Field128, Field64, FieldElementWithInteger};
use serde_json::Value;

use super::{draft08, draft18, VdafDraft, MAX_ENCODED_LEN};
use crate::error::{Refusal, Result};

/// A Prio3 type and its parameters, as the aggregators configure it too (more types may come: `#[non_exhaustive]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Prio3Type {
    /// Prio3Count: each measurement is 0 or 1 ([`Measurement::Count`](super::Measurement::Count)); the aggregate is the
    /// number of 1s.
    Count,
    /// Prio3Sum: each measurement is an integer in `[0, max_measurement]`
    /// ([`Measurement::Sum`](super::Measurement::Sum)); the aggregate is their sum.
    Sum {
        /// The largest measurement, at least 1 and below the field's modulus (2^64 − 2^32 + 1); in draft 08 any
        /// 2^b − 1 (b from 1 to 64).
        max_measurement: u64,
    },
    /// Prio3SumVec: each measurement is `length` integers in `[0, max_measurement]`
    /// ([`Measurement::SumVec`](super::Measurement::SumVec)); the aggregate is their entrywise sum. (Draft 18 bounds
    /// each entry by `max_measurement`; draft 08 takes a number of bits `b`, which is `max_measurement` 2^b − 1: a
    /// draft 08 client accepts only such a bound.)
    SumVec {
        /// The largest entry, at least 1 and below the field's modulus (about 2^128); in draft 08 any 2^b − 1 (b
        /// from 1 to 127).
        max_measurement: u128,
        /// Entries of a measurement, at least 1.
        length: usize,
        /// The proof's chunk length, at least 1.
        chunk_length: usize,
    },
    /// Prio3Histogram: each measurement is a bucket index in `[0, length)`
    /// ([`Measurement::Histogram`](super::Measurement::Histogram)); the aggregate is the count of each bucket.
    Histogram {
        /// Buckets, at least 1.
        length: usize,
        /// The proof's chunk length, at least 1.
        chunk_length: usize,
    },
}

impl Prio3Type {
    /// Prio3SumVec of `length` entries in `[0, max_measurement]` with draft 18's recommended chunk length:
    /// [`Prio3Type::sum_vec_for`] of [`VdafDraft::Draft18`].
    pub fn sum_vec(max_measurement: u128, length: usize) -> Self {
        Self::sum_vec_for(VdafDraft::Draft18, max_measurement, length)
    }

    /// Prio3SumVec of `length` entries in `[0, max_measurement]` with the recommended chunk length of `draft`: the
    /// `optimal_chunk_length` of the draft's prio crate for the encoded length (`length` times the bits of
    /// `max_measurement`), which is also what the aggregators' binding (`ldp.prio`) takes when given none.
    pub fn sum_vec_for(draft: VdafDraft, max_measurement: u128, length: usize) -> Self {
        let bits = max_measurement.checked_ilog2().map_or(1, |b| b as usize + 1);
        let chunk_length = default_chunk_length(draft, bits.saturating_mul(length));
        Prio3Type::SumVec { max_measurement, length, chunk_length }
    }

    /// Prio3Histogram of `length` buckets with draft 18's recommended chunk length: [`Prio3Type::histogram_for`] of
    /// [`VdafDraft::Draft18`].
    pub fn histogram(length: usize) -> Self {
        Self::histogram_for(VdafDraft::Draft18, length)
    }

    /// Prio3Histogram of `length` buckets with the recommended chunk length of `draft` (the `optimal_chunk_length`
    /// of the draft's prio crate for `length`, as the aggregators' binding takes when given none).
    pub fn histogram_for(draft: VdafDraft, length: usize) -> Self {
        Prio3Type::Histogram { length, chunk_length: default_chunk_length(draft, length) }
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

    /// Whether the type's proof uses joint randomness in `draft` (the public share then holds one seed per
    /// aggregator): `SumVec` and `Histogram`, and in draft 08 `Sum` too (a bit vector over Field128).
    pub(super) fn joint_randomness(&self, draft: VdafDraft) -> bool {
        match self {
            Prio3Type::Count => false,
            Prio3Type::Sum { .. } => draft == VdafDraft::Draft08,
            Prio3Type::SumVec { .. } | Prio3Type::Histogram { .. } => true,
        }
    }
}

/// The recommended chunk length in `draft` of an encoded measurement of `n` field elements (1 past
/// [`MAX_ENCODED_LEN`], which [`Prio3Client::new`](super::Prio3Client::new) refuses anyway).
pub(super) fn default_chunk_length(draft: VdafDraft, n: usize) -> usize {
    if n > MAX_ENCODED_LEN {
        return 1;
    }
    match draft {
        VdafDraft::Draft08 => draft08::optimal_chunk_length(n),
        VdafDraft::Draft18 => draft18::optimal_chunk_length(n),
    }
}

/// The largest `max_measurement` of a Sum and of a SumVec in `draft`: below the field's modulus in draft 18; 2^64 − 1
/// and 2^127 − 1 in draft 08 (the most bits prio 0.16.8 takes).
fn max_bounds(draft: VdafDraft) -> (u64, u128) {
    match draft {
        VdafDraft::Draft08 => {
            (u64::MAX >> (64 - draft08::SUM_MAX_BITS), u128::MAX >> (128 - draft08::SUM_VEC_MAX_BITS))
        }
        VdafDraft::Draft18 => (Field64::modulus() - 1, Field128::modulus() - 1),
    }
}

/// The checks of a type's parameters in `draft` this crate makes itself, with refusals by meaning; the prio crate
/// checks them again.
pub(super) fn check_params(draft: VdafDraft, typ: &Prio3Type) -> Result<()> {
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
            let max = max_bounds(draft).0;
            if max_measurement == 0 || max_measurement > max {
                return Err(Refusal::param_range("max_measurement", max_measurement)
                    .with("min", 1)
                    .with("max", max)
                    .into());
            }
            if draft == VdafDraft::Draft08 {
                draft08::bits(u128::from(max_measurement))?;
            }
            Ok(())
        }
        Prio3Type::SumVec { max_measurement, length, chunk_length } => {
            let max = max_bounds(draft).1;
            if max_measurement == 0 || max_measurement > max {
                return Err(Refusal::param_range("max_measurement", max_measurement)
                    .with("min", 1)
                    .with("max", max)
                    .into());
            }
            if draft == VdafDraft::Draft08 {
                draft08::bits(max_measurement)?;
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
