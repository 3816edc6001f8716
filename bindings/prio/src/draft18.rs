//! VDAF draft 18: the `prio` crate 0.18.1 behind `Backend`, generically over the four types (`Flp18` says, per type,
//! which FLP type and constructor, and how the binding's measurement and result become the crate's). Sharding with
//! given randomness is the crate's `TestVectorClient::shard_with_random` (feature `test-util`).

use prio::codec::{Encode, ParameterizedDecode};
use prio::field::{Field128, Field64};
use prio::flp::gadgets::{Mul, ParallelSum};
use prio::flp::types::{Count, Histogram, Sum, SumVec};
use prio::flp::Type;
use prio::vdaf::prio3::{
    optimal_chunk_length, Prio3, Prio3InputShare, Prio3PublicShare, Prio3VerifierMessage, Prio3VerifierShare,
    Prio3VerifyState,
};
use prio::vdaf::test_utils::TestVectorClient;
use prio::vdaf::xof::XofTurboShake128;
use prio::vdaf::{AggregateShare, Aggregator, Collector, OutputShare, Vdaf as _, VdafError, VerifyTransition};

use crate::backend::{undecodable, AnyState, Backend, Shards, NONCE_SIZE};
use crate::params::{Draft, Params};
use crate::shares::Field;
use crate::spec::{CountSpec, HistogramSpec, Spec, SumSpec, SumVecSpec};

/// Prio3's seed size in VDAF-18: the verify key, each seed, each joint randomness part.
pub(crate) const SEED: usize = 32;

type Vdaf<S> = Prio3<<S as Flp18>::T, XofTurboShake128, SEED>;
type State<S> = Prio3VerifyState<<S as Flp18>::F, SEED>;
type Measurement<S> = <<S as Flp18>::T as Type>::Measurement;
type AggregateResult<S> = <<S as Flp18>::T as Type>::AggregateResult;

/// One type in draft 18: its FLP type, its constructor, its measurement and result in the crate's terms.
pub(crate) trait Flp18: Spec {
    type F: Field;
    type T: Type<Field = Self::F> + Send + Sync;

    fn vdaf(params: &Params) -> Result<Vdaf<Self>, VdafError>;
    fn to_crate(m: &Self::Measurement) -> Result<Measurement<Self>, String>;
    fn from_crate(r: AggregateResult<Self>) -> Self::Result;
}

impl Flp18 for CountSpec {
    type F = Field64;
    type T = Count<Field64>;

    fn vdaf(params: &Params) -> Result<Vdaf<Self>, VdafError> {
        Prio3::new_count(params.num_aggregators)
    }
    fn to_crate(m: &bool) -> Result<bool, String> {
        Ok(*m)
    }
    fn from_crate(r: u64) -> u128 {
        r.into()
    }
}

impl Flp18 for SumSpec {
    type F = Field64;
    type T = Sum<Field64>;

    fn vdaf(params: &Params) -> Result<Vdaf<Self>, VdafError> {
        let max = params.max_measurement.unwrap_or_default();
        let max = u64::try_from(max)
            .map_err(|_| VdafError::Uncategorized(format!("max_measurement must be below 2**64, got {max}")))?;
        Prio3::new_sum(params.num_aggregators, max)
    }
    fn to_crate(m: &u128) -> Result<u64, String> {
        u64::try_from(*m).map_err(|e| e.to_string())
    }
    fn from_crate(r: u64) -> u128 {
        r.into()
    }
}

impl Flp18 for SumVecSpec {
    type F = Field128;
    type T = SumVec<Field128, ParallelSum<Field128, Mul>>;

    fn vdaf(p: &Params) -> Result<Vdaf<Self>, VdafError> {
        let (max, length, chunk) = (p.max_measurement, p.length, p.chunk_length);
        Prio3::new_sum_vec(p.num_aggregators, max.unwrap_or_default(), length.unwrap_or_default(), chunk.unwrap_or(1))
    }
    fn to_crate(m: &Vec<u128>) -> Result<Vec<u128>, String> {
        Ok(m.clone())
    }
    fn from_crate(r: Vec<u128>) -> Vec<u128> {
        r
    }
}

impl Flp18 for HistogramSpec {
    type F = Field128;
    type T = Histogram<Field128, ParallelSum<Field128, Mul>>;

    fn vdaf(p: &Params) -> Result<Vdaf<Self>, VdafError> {
        Prio3::new_histogram(p.num_aggregators, p.length.unwrap_or_default(), p.chunk_length.unwrap_or(1))
    }
    fn to_crate(m: &usize) -> Result<usize, String> {
        Ok(*m)
    }
    fn from_crate(r: Vec<u128>) -> Vec<u128> {
        r
    }
}

impl<F: Field> AnyState for Prio3VerifyState<F, SEED> {
    fn encoded(&self) -> Result<Vec<u8>, String> {
        self.get_encoded().map_err(|e| e.to_string())
    }
}

/// A draft 18 Prio3 VDAF of type `S`.
pub(crate) struct V18<S: Flp18> {
    vdaf: Vdaf<S>,
    /// A helper's state, used only as the crate's decoding parameter of verifier shares and messages (it tells
    /// their lengths: how many verifier elements, whether a joint randomness part or seed follows).
    template: State<S>,
    joint_rand: bool,
}

impl<S: Flp18> Backend for V18<S> {
    type Spec = S;
    type F = S::F;
    type State = State<S>;
    type Share = Prio3VerifierShare<S::F, SEED>;

    const DRAFT: Draft = Draft::D18;
    const CRATE: &'static str = "0.18.1";
    const VERIFY_KEY_SIZE: usize = SEED;
    const SEED_SIZE: usize = SEED;

    fn new(params: &Params) -> Result<Self, String> {
        let vdaf = S::vdaf(params).map_err(|e| e.to_string())?;
        // A helper's encoded state is its seed, then a joint randomness seed when the type has joint randomness.
        let zeros = [0u8; 2 * SEED];
        let (template, joint_rand) = match State::<S>::get_decoded_with_param(&(&vdaf, 1), &zeros[..SEED]) {
            Ok(state) => (state, false),
            Err(_) => (State::<S>::get_decoded_with_param(&(&vdaf, 1), &zeros).map_err(|e| e.to_string())?, true),
        };
        Ok(V18 { vdaf, template, joint_rand })
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

    /// One seed per aggregator, twice that with joint randomness (the blinds): what `shard_with_random` takes.
    fn rand_size(&self) -> Option<usize> {
        let seeds = self.vdaf.num_aggregators() * SEED;
        Some(if self.joint_rand { 2 * seeds } else { seeds })
    }

    fn shard(
        &self,
        ctx: &[u8],
        m: &S::Measurement,
        nonce: &[u8; NONCE_SIZE],
        rand: Option<&[u8]>,
    ) -> Result<Shards, String> {
        let measurement = S::to_crate(m)?;
        let drawn;
        let rand = match rand {
            Some(rand) => rand,
            None => {
                drawn = crate::vdaf::os_random(self.rand_size().unwrap_or_default())?;
                &drawn[..]
            }
        };
        let (public, inputs) =
            self.vdaf.shard_with_random(ctx, &measurement, nonce, rand).map_err(|e| e.to_string())?;
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
        ctx: &[u8],
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
        self.vdaf.verify_init(verify_key, ctx, agg_id, &(), nonce, &public, &input).map_err(|e| e.to_string())
    }

    fn encode_share(share: &Self::Share) -> Result<Vec<u8>, String> {
        share.get_encoded().map_err(|e| e.to_string())
    }

    fn decode_share(&self, what: &str, data: &[u8]) -> Result<Self::Share, String> {
        Self::Share::get_decoded_with_param(&self.template, data).map_err(|e| undecodable(what, e))
    }

    fn message(&self, ctx: &[u8], shares: Vec<Self::Share>) -> Result<Vec<u8>, String> {
        let message = self.vdaf.verifier_shares_to_message(ctx, &(), shares).map_err(|e| e.to_string())?;
        message.get_encoded().map_err(|e| e.to_string())
    }

    fn next(&self, ctx: &[u8], state: Self::State, message: &[u8]) -> Result<OutputShare<S::F>, String> {
        let message = Prio3VerifierMessage::<SEED>::get_decoded_with_param(&self.template, message)
            .map_err(|e| undecodable("the verifier message", e))?;
        match self.vdaf.verify_next(ctx, state, message).map_err(|e| e.to_string())? {
            VerifyTransition::Finish(out) => Ok(out),
            VerifyTransition::Continue(..) => Err("Prio3 asked for a second round".to_string()),
        }
    }

    fn decode_state(&self, agg_id: usize, data: &[u8]) -> Result<Self::State, String> {
        State::<S>::get_decoded_with_param(&(&self.vdaf, agg_id), data).map_err(|e| e.to_string())
    }

    fn empty(&self) -> Result<AggregateShare<S::F>, String> {
        Ok(self.vdaf.aggregate_init(&()))
    }

    fn decode_aggregate(&self, data: &[u8]) -> Result<AggregateShare<S::F>, String> {
        AggregateShare::<S::F>::get_decoded_with_param(&(&self.vdaf, &()), data).map_err(|e| e.to_string())
    }

    fn unshard(&self, shares: Vec<AggregateShare<S::F>>, num_measurements: usize) -> Result<S::Result, String> {
        self.vdaf.unshard(&(), shares, num_measurements).map(S::from_crate).map_err(|e| e.to_string())
    }
}
