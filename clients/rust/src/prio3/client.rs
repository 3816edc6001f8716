//! [`Prio3Client`]: the client side of one Prio3 task, sharding measurements with the prio crate's VDAFs.

use prio::vdaf::prio3::{Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};
use prio::vdaf::test_utils::TestVectorClient;
use prio::vdaf::VdafError;

use super::types::check_params;
use super::{
    encode, encode_all, wipe, Measurement, Prio3Shares, Prio3Type, AGGREGATORS, MAX_CTX_LEN, NONCE_LEN, SEED_LEN,
};
use crate::error::{Error, Refusal, RefusalCode, Result};

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
    /// whose encoding would pass [`MAX_ENCODED_LEN`](super::MAX_ENCODED_LEN) field elements; anything else the prio
    /// crate refuses is an [`Error::Value`] with its message.
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
    /// (see the [module documentation](crate::prio3) for who gets which). A measurement [`Prio3Client::check`] refuses is
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

/// The prio crate's refusal of a type's `what` (parameters, measurement), as this crate's error.
fn refused_by_prio(typ: &Prio3Type, what: &str, e: VdafError) -> Error {
    Error::value(format!("{} refused the {what} (prio crate): {e}", typ.name()))
}
