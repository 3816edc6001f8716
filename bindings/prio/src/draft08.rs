//! VDAF draft 08, the draft every deployed DAP client speaks (Janus 0.7, janus_client 0.7, divviup-ts): the `prio`
//! crate 0.16.8 (`prio08`) behind `Backend`, generically over the four types (`Flp08`: per type, the FLP type and
//! constructor, and the binding's measurement and result in the crate's terms). Its operations are the crate's public
//! ones under their draft 08 names: `Client::shard`, `Aggregator::prepare_init`, `prepare_shares_to_prepare_message`,
//! `prepare_next`, `Collector::unshard`.
//!
//! What draft 08 differs in, as the crate has it: no context string (VDAF-08 binds none: the binding refuses a
//! non-empty `ctx` before a VDAF is built); Sum and SumVec bounded by `bits` (VDAF-08 §7.4), and Sum in Field128;
//! 16-byte seeds and verify keys. And what the crate does not offer: sharding with given randomness
//! (`shard_with_random` is crate-private in 0.16.8, so `shard` draws it, from the OS through the crate).
//!
//! Output and aggregate shares are converted to the binding's representation (prio 0.18.1's `Field64` and
//! `Field128`) element by element; `new` checks that the two crates' primes are the same, so the conversion is exact.

use prio::vdaf::{AggregateShare, OutputShare};
use prio08::codec::{Encode, ParameterizedDecode};
use prio08::field::{Field128, Field64, FieldElementWithInteger};
use prio08::flp::gadgets::{Mul, ParallelSum};
use prio08::flp::types::{Count, Histogram, Sum, SumVec};
use prio08::flp::Type;
use prio08::vdaf::prio3::{
    optimal_chunk_length, Prio3, Prio3InputShare, Prio3PrepareMessage, Prio3PrepareShare, Prio3PrepareState,
    Prio3PublicShare,
};
use prio08::vdaf::xof::XofTurboShake128;
use prio08::vdaf::{Aggregator, Client, Collector, PrepareTransition, VdafError};

use crate::backend::{undecodable, AnyState, Backend, Shards, NONCE_SIZE};
use crate::params::{Draft, Params};
use crate::shares::Field;
use crate::spec::{CountSpec, HistogramSpec, Spec, SumSpec, SumVecSpec};

/// Prio3's seed size in VDAF-08 (`Prio3<_, XofTurboShake128, 16>`): the verify key, each seed and joint randomness
/// part.
pub(crate) const SEED: usize = 16;

type Vdaf<S> = Prio3<<S as Flp08>::T, XofTurboShake128, SEED>;
type State<S> = Prio3PrepareState<<S as Flp08>::F, SEED>;
type Measurement<S> = <<S as Flp08>::T as Type>::Measurement;
type AggregateResult<S> = <<S as Flp08>::T as Type>::AggregateResult;
type Common<F> = <F as Field08>::Common;

/// A field of the crate 0.16.8 and the same prime in the binding's representation.
pub(crate) trait Field08: prio08::field::FftFriendlyFieldElement + Send + Sync + 'static {
    type Common: Field;
    /// The crate's prime.
    fn modulus_u128() -> u128;
    fn common(self) -> Self::Common;
    /// `value` is below the modulus (the primes are the same).
    fn from_common(value: Self::Common) -> Self;
}

macro_rules! field08 {
    ($field:ty, $common:ty, $int:ty) => {
        impl Field08 for $field {
            type Common = $common;
            fn modulus_u128() -> u128 {
                <$field as FieldElementWithInteger>::modulus().into()
            }
            fn common(self) -> $common {
                <$common as Field>::from_u128(<$int>::from(self).into())
            }
            fn from_common(value: $common) -> Self {
                Self::from(value.to_u128() as $int)
            }
        }
    };
}

field08!(Field64, prio::field::Field64, u64);
field08!(Field128, prio::field::Field128, u128);

/// One type in draft 08: its FLP type, its constructor, its measurement and result in the crate's terms.
pub(crate) trait Flp08: Spec {
    type F: Field08;
    type T: Type<Field = Self::F> + Send + Sync;

    fn vdaf(params: &Params) -> Result<Vdaf<Self>, VdafError>;
    fn to_crate(m: &Self::Measurement) -> Measurement<Self>;
    fn from_crate(r: AggregateResult<Self>) -> Self::Result;
}

impl Flp08 for CountSpec {
    type F = Field64;
    type T = Count<Field64>;

    fn vdaf(params: &Params) -> Result<Vdaf<Self>, VdafError> {
        Prio3::new_count(params.num_aggregators)
    }
    fn to_crate(m: &bool) -> bool {
        *m
    }
    fn from_crate(r: u64) -> u128 {
        r.into()
    }
}

impl Flp08 for SumSpec {
    type F = Field128;
    type T = Sum<Field128>;

    fn vdaf(params: &Params) -> Result<Vdaf<Self>, VdafError> {
        Prio3::new_sum(params.num_aggregators, params.bits.unwrap_or_default())
    }
    fn to_crate(m: &u128) -> u128 {
        *m
    }
    fn from_crate(r: u128) -> u128 {
        r
    }
}

impl Flp08 for SumVecSpec {
    type F = Field128;
    type T = SumVec<Field128, ParallelSum<Field128, Mul<Field128>>>;

    fn vdaf(p: &Params) -> Result<Vdaf<Self>, VdafError> {
        let (bits, length, chunk) = (p.bits.unwrap_or_default(), p.length.unwrap_or_default(), p.chunk_length);
        Prio3::new_sum_vec(p.num_aggregators, bits, length, chunk.unwrap_or(1))
    }
    fn to_crate(m: &Vec<u128>) -> Vec<u128> {
        m.clone()
    }
    fn from_crate(r: Vec<u128>) -> Vec<u128> {
        r
    }
}

impl Flp08 for HistogramSpec {
    type F = Field128;
    type T = Histogram<Field128, ParallelSum<Field128, Mul<Field128>>>;

    fn vdaf(p: &Params) -> Result<Vdaf<Self>, VdafError> {
        Prio3::new_histogram(p.num_aggregators, p.length.unwrap_or_default(), p.chunk_length.unwrap_or(1))
    }
    fn to_crate(m: &usize) -> usize {
        *m
    }
    fn from_crate(r: Vec<u128>) -> Vec<u128> {
        r
    }
}

/// The first byte of a draft 08 state's `to_bytes()`: its draft. A state is no message between parties (an
/// aggregator keeps it while the other answers), so the binding may mark it; draft 18's are the crate's encoding
/// alone. The two can then never be read one for the other: a draft 18 state's encoding is a multiple of 8 bytes
/// (field elements of 8 or 16 bytes, seeds of 32), a marked draft 08 state one byte more than such a multiple.
/// Without the mark they could (a Prio3Count leader's state is one Field64 element in both drafts).
const STATE_MARK: u8 = 8;

impl<F: Field08> AnyState for Prio3PrepareState<F, SEED> {
    fn encoded(&self) -> Result<Vec<u8>, String> {
        let mut bytes = vec![STATE_MARK];
        self.encode(&mut bytes).map_err(|e| e.to_string())?;
        Ok(bytes)
    }
}

fn common<F: Field08>(elements: &[F]) -> Vec<Common<F>> {
    elements.iter().map(|&x| x.common()).collect()
}

/// A draft 08 Prio3 VDAF of type `S`.
pub(crate) struct V08<S: Flp08> {
    vdaf: Vdaf<S>,
    /// A helper's state, used only as the crate's decoding parameter of prepare shares and messages.
    template: State<S>,
}

impl<S: Flp08> Backend for V08<S> {
    type Spec = S;
    type F = Common<S::F>;
    type State = State<S>;
    type Share = Prio3PrepareShare<S::F, SEED>;

    const DRAFT: Draft = Draft::D08;
    const CRATE: &'static str = "0.16.8";
    const VERIFY_KEY_SIZE: usize = SEED;
    const SEED_SIZE: usize = SEED;

    fn new(params: &Params) -> Result<Self, String> {
        if Self::modulus() != Common::<S::F>::modulus_u128() {
            return Err("the prio crates 0.16.8 and 0.18.1 disagree on the field's prime".to_string());
        }
        let vdaf = S::vdaf(params).map_err(|e| e.to_string())?;
        // A helper's encoded state is its measurement share's seed, then a joint randomness seed when the type has
        // joint randomness.
        let zeros = [0u8; 2 * SEED];
        let template = State::<S>::get_decoded_with_param(&(&vdaf, 1), &zeros[..SEED])
            .or_else(|_| State::<S>::get_decoded_with_param(&(&vdaf, 1), &zeros))
            .map_err(|e| e.to_string())?;
        Ok(V08 { vdaf, template })
    }

    fn optimal_chunk_length(measurement_length: usize) -> usize {
        optimal_chunk_length(measurement_length)
    }

    fn modulus() -> u128 {
        S::F::modulus_u128()
    }

    fn output_len(&self) -> usize {
        self.vdaf.output_len()
    }

    fn rand_size(&self) -> Option<usize> {
        None
    }

    fn shard(
        &self,
        _: &[u8],
        m: &S::Measurement,
        nonce: &[u8; NONCE_SIZE],
        rand: Option<&[u8]>,
    ) -> Result<Shards, String> {
        if rand.is_some() {
            return Err("the prio crate 0.16.8 has no public sharding with given randomness".to_string());
        }
        let (public, inputs) = self.vdaf.shard(&S::to_crate(m), nonce).map_err(|e| e.to_string())?;
        let inputs = inputs.iter().map(|s| s.get_encoded().map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
        Ok((public.get_encoded().map_err(|e| e.to_string())?, inputs))
    }

    fn check_input_share(&self, agg_id: usize, data: &[u8]) -> Result<(), String> {
        Prio3InputShare::<S::F, SEED>::get_decoded_with_param(&(&self.vdaf, agg_id), data)
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    fn check_public_share(&self, data: &[u8]) -> Result<(), String> {
        Prio3PublicShare::<SEED>::get_decoded_with_param(&self.vdaf, data).map_err(|e| e.to_string())?;
        Ok(())
    }

    fn init(
        &self,
        verify_key: &[u8],
        _: &[u8],
        agg_id: usize,
        nonce: &[u8; NONCE_SIZE],
        public_share: &[u8],
        input_share: &[u8],
    ) -> Result<(Self::State, Self::Share), String> {
        let verify_key: &[u8; SEED] = verify_key.try_into().map_err(|_| "the verify key's length".to_string())?;
        let public = Prio3PublicShare::<SEED>::get_decoded_with_param(&self.vdaf, public_share)
            .map_err(|e| undecodable("the public share", e))?;
        let input = Prio3InputShare::<S::F, SEED>::get_decoded_with_param(&(&self.vdaf, agg_id), input_share)
            .map_err(|e| format!("the input share is no valid encoding for aggregator {agg_id} ({e})"))?;
        self.vdaf.prepare_init(verify_key, agg_id, &(), nonce, &public, &input).map_err(|e| e.to_string())
    }

    fn encode_share(share: &Self::Share) -> Result<Vec<u8>, String> {
        share.get_encoded().map_err(|e| e.to_string())
    }

    fn decode_share(&self, what: &str, data: &[u8]) -> Result<Self::Share, String> {
        Self::Share::get_decoded_with_param(&self.template, data).map_err(|e| undecodable(what, e))
    }

    fn message(&self, _: &[u8], shares: Vec<Self::Share>) -> Result<Vec<u8>, String> {
        let message = self.vdaf.prepare_shares_to_prepare_message(&(), shares).map_err(|e| e.to_string())?;
        message.get_encoded().map_err(|e| e.to_string())
    }

    fn next(&self, _: &[u8], state: Self::State, message: &[u8]) -> Result<OutputShare<Self::F>, String> {
        let message = Prio3PrepareMessage::<SEED>::get_decoded_with_param(&self.template, message)
            .map_err(|e| undecodable("the verifier message", e))?;
        match self.vdaf.prepare_next(state, message).map_err(|e| e.to_string())? {
            PrepareTransition::Finish(out) => Ok(OutputShare::from(common(out.as_ref()))),
            PrepareTransition::Continue(..) => Err("Prio3 asked for a second round".to_string()),
        }
    }

    fn decode_state(&self, agg_id: usize, data: &[u8]) -> Result<Self::State, String> {
        match data.split_first() {
            Some((&STATE_MARK, encoded)) => {
                State::<S>::get_decoded_with_param(&(&self.vdaf, agg_id), encoded).map_err(|e| e.to_string())
            }
            _ => Err(format!("a draft 08 state's bytes start with {STATE_MARK} (its draft)")),
        }
    }

    fn empty(&self) -> Result<AggregateShare<Self::F>, String> {
        let share = self.vdaf.aggregate(&(), []).map_err(|e| e.to_string())?;
        Ok(AggregateShare::from(common(share.as_ref())))
    }

    fn decode_aggregate(&self, data: &[u8]) -> Result<AggregateShare<Self::F>, String> {
        let share = prio08::vdaf::AggregateShare::<S::F>::get_decoded_with_param(&(&self.vdaf, &()), data)
            .map_err(|e| e.to_string())?;
        Ok(AggregateShare::from(common(share.as_ref())))
    }

    fn unshard(&self, shares: Vec<AggregateShare<Self::F>>, num_measurements: usize) -> Result<S::Result, String> {
        let shares = shares.into_iter().map(|share| {
            let elements: Vec<S::F> = share.as_ref().iter().map(|&x| S::F::from_common(x)).collect();
            prio08::vdaf::AggregateShare::from(elements)
        });
        self.vdaf.unshard(&(), shares, num_measurements).map(S::from_crate).map_err(|e| e.to_string())
    }
}
