//! VDAF draft 18 through the `prio` crate 0.18.1: the four Prio3 VDAFs of a [`Prio3Type`], sharding with the
//! randomness this crate draws (prio's `TestVectorClient::shard_with_random`, its only public sharding with given
//! randomness: prio's own `shard` draws from rand's thread generator, which a forked child copies).

use prio::vdaf::prio3::{Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};
use prio::vdaf::test_utils::TestVectorClient;
use prio::vdaf::{Aggregator, VdafError};

use super::{encode, encode_all, Measurement, Prio3Type, NONCE_LEN};
use crate::error::{Error, Result};

/// Bytes of draft 18's verify key: the `VERIFY_KEY_SIZE` of prio's `Aggregator` implementation (checked below).
pub(super) const VERIFY_KEY_LEN: usize = 32;
const _: fn() = || {
    fn verify_key_of<V: Aggregator<VERIFY_KEY_LEN, NONCE_LEN>>() {}
    verify_key_of::<Prio3Count>();
    verify_key_of::<Prio3Histogram>();
};

/// The prio crate's VDAF of each type.
#[derive(Clone, Debug)]
pub(super) enum Vdaf {
    Count(Prio3Count),
    Sum(Prio3Sum),
    SumVec(Prio3SumVec),
    Histogram(Prio3Histogram),
}

/// The public share and the input shares, encoded.
pub(super) type Encoded = (Vec<u8>, Vec<Vec<u8>>);

impl Vdaf {
    /// The VDAF of `typ` (its parameters checked already) for `aggregators` aggregators.
    pub(super) fn new(typ: &Prio3Type, aggregators: u8) -> Result<Self> {
        match *typ {
            Prio3Type::Count => Prio3Count::new_count(aggregators).map(Vdaf::Count),
            Prio3Type::Sum { max_measurement } => Prio3Sum::new_sum(aggregators, max_measurement).map(Vdaf::Sum),
            Prio3Type::SumVec { max_measurement, length, chunk_length } => {
                Prio3SumVec::new_sum_vec(aggregators, max_measurement, length, chunk_length).map(Vdaf::SumVec)
            }
            Prio3Type::Histogram { length, chunk_length } => {
                Prio3Histogram::new_histogram(aggregators, length, chunk_length).map(Vdaf::Histogram)
            }
        }
        .map_err(|e| refused_by_prio(typ, "parameters", e))
    }

    /// Shards a checked measurement of `typ` with the given nonce and randomness, and encodes the shares.
    pub(super) fn shard_with_random(
        &self,
        typ: &Prio3Type,
        ctx: &[u8],
        measurement: &Measurement,
        nonce: &[u8; NONCE_LEN],
        rand: &[u8],
    ) -> Result<Encoded> {
        let refused = |e| refused_by_prio(typ, "measurement", e);
        Ok(match (self, measurement) {
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
        })
    }
}

/// The recommended chunk length of an encoded measurement of `n` field elements (`n` at most
/// [`MAX_ENCODED_LEN`](super::MAX_ENCODED_LEN)): prio 0.18.1's `optimal_chunk_length`.
pub(super) fn optimal_chunk_length(n: usize) -> usize {
    prio::vdaf::prio3::optimal_chunk_length(n)
}

/// The prio crate's refusal of a type's `what` (parameters, measurement), as this crate's error.
fn refused_by_prio(typ: &Prio3Type, what: &str, e: VdafError) -> Error {
    Error::value(format!("{} refused the {what} (prio crate 0.18.1, VDAF draft 18): {e}", typ.name()))
}
