//! VDAF draft 08 through the `prio` crate 0.16.8 (renamed `prio08` in Cargo.toml): the four Prio3 VDAFs of a
//! [`Prio3Type`] and their sharding, through the crate's public API only.
//!
//! Draft 08 differs from draft 18 in what the client sees: no application context string; 16-byte seeds and verify
//! key; Prio3Sum over Field128 with joint randomness; and Prio3Sum and Prio3SumVec bounded by a number of bits `b`,
//! which this crate takes as the [`Prio3Type`]'s `max_measurement` 2^b − 1 (the aggregators calibrate their noise on
//! `max_measurement`, so it must be the real bound: any other value is refused, naming the nearest allowed ones).
//!
//! **Randomness.** prio 0.16.8 keeps `Prio3::shard_with_random` `pub(crate)`: its only public sharding is
//! `Client::shard`, which draws the sharding randomness itself from `getrandom` (0.2: the OS generator at each
//! call, no pool in user space, so a forked child never repeats its parent's draws). This crate draws the nonce
//! (from its own `getrandom`) and leaves the rest to prio. So a draft 08 client cannot shard with given randomness,
//! and its byte-for-byte replay of the draft's test vectors goes through prio's own `prio3_test::check_test_vec` on
//! the VDAF this module builds (the tests in `draft08/tests.rs`). prio drops its randomness buffer without
//! overwriting it (this crate wipes its own buffers).

use prio08::codec::Encode;
use prio08::vdaf::prio3::{Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};
use prio08::vdaf::{Aggregator, Client, VdafError};
use serde_json::Value;

use super::{Measurement, Prio3Type, NONCE_LEN};
use crate::error::{Error, Refusal, Result};

/// Bytes of draft 08's verify key: the `VERIFY_KEY_SIZE` of prio 0.16.8's `Aggregator` implementation (checked
/// below).
pub(super) const VERIFY_KEY_LEN: usize = 16;
const _: fn() = || {
    fn verify_key_of<V: Aggregator<VERIFY_KEY_LEN, NONCE_LEN>>() {}
    verify_key_of::<Prio3Count>();
    verify_key_of::<Prio3Histogram>();
};

/// The largest `b` of a Prio3Sum (prio 0.16.8's `new_sum`: 64 bits).
pub(super) const SUM_MAX_BITS: u32 = 64;

/// The largest `b` of a Prio3SumVec entry (prio 0.16.8's `SumVec::new`: one bit less than a u128).
pub(super) const SUM_VEC_MAX_BITS: u32 = 127;

/// The rule id of a `max_measurement` that is no 2^b − 1 (`param_relation`).
pub(super) const BITS_RULE: &str = "vdaf08_bits";

/// The rule id of a non-empty context string (`param_relation`).
pub(super) const NO_CTX_RULE: &str = "vdaf08_no_ctx";

/// prio 0.16.8's VDAF of each type.
#[derive(Clone, Debug)]
pub(super) enum Vdaf {
    Count(Prio3Count),
    Sum(Prio3Sum),
    SumVec(Prio3SumVec),
    Histogram(Prio3Histogram),
}

impl Vdaf {
    /// The VDAF of `typ` (its parameters checked already, [`bits`] among them) for `aggregators` aggregators.
    pub(super) fn new(typ: &Prio3Type, aggregators: u8) -> Result<Self> {
        let refused = |e| refused_by_prio(typ, "parameters", e);
        Ok(match *typ {
            Prio3Type::Count => Vdaf::Count(Prio3Count::new_count(aggregators).map_err(refused)?),
            Prio3Type::Sum { max_measurement } => {
                let bits = bits(u128::from(max_measurement))?;
                Vdaf::Sum(Prio3Sum::new_sum(aggregators, bits).map_err(refused)?)
            }
            Prio3Type::SumVec { max_measurement, length, chunk_length } => {
                let bits = bits(max_measurement)?;
                Vdaf::SumVec(Prio3SumVec::new_sum_vec(aggregators, bits, length, chunk_length).map_err(refused)?)
            }
            Prio3Type::Histogram { length, chunk_length } => {
                Vdaf::Histogram(Prio3Histogram::new_histogram(aggregators, length, chunk_length).map_err(refused)?)
            }
        })
    }

    /// Shards a checked measurement of `typ` with `nonce` and randomness prio draws from the OS generator, and
    /// encodes the shares (the public share, then the input shares).
    pub(super) fn shard(
        &self,
        typ: &Prio3Type,
        measurement: &Measurement,
        nonce: &[u8; NONCE_LEN],
    ) -> Result<(Vec<u8>, Vec<Vec<u8>>)> {
        let refused = |e| match e {
            VdafError::GetRandom(e) => Error::Internal(format!("the OS random generator failed (prio 0.16.8): {e}")),
            e => refused_by_prio(typ, "measurement", e),
        };
        match (self, measurement) {
            (Vdaf::Count(v), Measurement::Count(m)) => encoded(v.shard(m, nonce).map_err(refused)?),
            (Vdaf::Sum(v), Measurement::Sum(m)) => encoded(v.shard(&u128::from(*m), nonce).map_err(refused)?),
            (Vdaf::SumVec(v), Measurement::SumVec(m)) => encoded(v.shard(m, nonce).map_err(refused)?),
            (Vdaf::Histogram(v), Measurement::Histogram(m)) => encoded(v.shard(m, nonce).map_err(refused)?),
            _ => Err(Error::Internal("a measurement of another type passed the check".into())),
        }
    }
}

/// A public share and input shares of prio 0.16.8, encoded.
fn encoded<P: Encode, S: Encode>((public, inputs): (P, Vec<S>)) -> Result<(Vec<u8>, Vec<Vec<u8>>)> {
    Ok((encode(&public)?, inputs.iter().map(encode).collect::<Result<_>>()?))
}

fn encode(item: &impl Encode) -> Result<Vec<u8>> {
    item.get_encoded().map_err(|e| Error::Internal(format!("encoding a Prio3 share failed: {e}")))
}

/// The number of bits `b` of a `max_measurement` 2^b − 1 (at least 1; its range checked already); any other
/// value is refused, `param_relation` (`rule` `vdaf08_bits`) with the value `got` and the `nearest` allowed
/// values below and above it.
pub(super) fn bits(max_measurement: u128) -> Result<usize> {
    let floor = (max_measurement.saturating_add(1)).ilog2();
    if max_measurement.checked_add(1).is_some_and(u128::is_power_of_two) {
        return Ok(floor as usize);
    }
    let below = (1u128 << floor) - 1;
    let above = below.checked_mul(2).and_then(|x| x.checked_add(1));
    let nearest: Vec<Value> = [Some(below), above].into_iter().flatten().map(Value::from).collect();
    Err(Refusal::relation(BITS_RULE, &["max_measurement", "draft"])
        .with("got", max_measurement)
        .with("nearest", nearest)
        .into())
}

/// The recommended chunk length of an encoded measurement of `n` field elements (`n` at most
/// [`MAX_ENCODED_LEN`](super::MAX_ENCODED_LEN)): prio 0.16.8's `optimal_chunk_length`.
pub(super) fn optimal_chunk_length(n: usize) -> usize {
    prio08::vdaf::prio3::optimal_chunk_length(n)
}

/// prio 0.16.8's refusal of a type's `what` (parameters, measurement), as this crate's error.
fn refused_by_prio(typ: &Prio3Type, what: &str, e: VdafError) -> Error {
    Error::value(format!("{} refused the {what} (prio crate 0.16.8, VDAF draft 08): {e}", typ.name()))
}

#[cfg(test)]
#[path = "draft08/tests.rs"]
mod tests;
