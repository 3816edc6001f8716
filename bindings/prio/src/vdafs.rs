//! The four Prio3 types as Python classes: one generic core (`Core<S>`, every operation once) and, per type, its
//! constructor, its measurement and its result (`Spec`).

use std::sync::{Arc, OnceLock};

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
use prio::vdaf::{
    Aggregatable, AggregateShare as CrateAggregateShare, Aggregator, Collector, OutputShare as CrateOutputShare,
    VerifyTransition,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList};

use crate::dap::HpkeKeypair;
use crate::errors::{refused, Op};
use crate::lengths::Lengths;
use crate::shares::{from_ints, AggregateShare, Field, OutputShare, Params, VerifyState, SEED_SIZE};

pub(crate) const VERIFY_KEY_SIZE: usize = SEED_SIZE;
pub(crate) const NONCE_SIZE: usize = 16;

type Vdaf<S> = Prio3<<S as Spec>::T, XofTurboShake128, SEED_SIZE>;
type Measurement<S> = <<S as Spec>::T as Type>::Measurement;
pub(crate) type State<S> = Prio3VerifyState<<S as Spec>::F, SEED_SIZE>;
pub(crate) type VerifierShare<S> = Prio3VerifierShare<<S as Spec>::F, SEED_SIZE>;
/// What `shard` gives Python: the nonce, the public share and one input share per aggregator.
type Sharded<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<Bound<'py, PyBytes>>);
/// The same as bytes (`Core::shard_bytes`).
pub(crate) type ShardedBytes = ([u8; NONCE_SIZE], Vec<u8>, Vec<Vec<u8>>);

/// What differs between the four types: the FLP type, its field, how a Python measurement becomes the crate's,
/// and how the crate's aggregate result becomes Python's.
pub(crate) trait Spec: 'static {
    type F: Field;
    type T: Type<Field = Self::F> + Send + Sync;

    /// The measurement, or an error: `Err(Ok(message))` a value out of range (a `PrioError`), `Err(Err(e))` a
    /// value of the wrong type (a `TypeError`).
    fn measurement(obj: &Bound<'_, PyAny>, params: &Params) -> Result<Measurement<Self>, PyResult<String>>;

    /// A valid measurement (every entry zero), which `Core::lengths` shards to learn the shares' lengths.
    fn zero(params: &Params) -> Measurement<Self>;

    fn result<'py>(py: Python<'py>, result: <Self::T as Type>::AggregateResult) -> PyResult<Bound<'py, PyAny>>;
}

fn int_in_range(obj: &Bound<'_, PyAny>, max: u128, what: &str) -> Result<u128, PyResult<String>> {
    if !obj.is_instance_of::<PyInt>() {
        let kind = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(Err(PyTypeError::new_err(format!("{what} must be an int, got {kind}"))));
    }
    match obj.extract::<u128>() {
        Ok(value) if value <= max => Ok(value),
        _ => Err(Ok(format!("{what} must be an int in [0, {max}], got {obj}"))),
    }
}

pub(crate) struct CountSpec;
pub(crate) struct SumSpec;
pub(crate) struct SumVecSpec;
pub(crate) struct HistogramSpec;

impl Spec for CountSpec {
    type F = Field64;
    type T = Count<Field64>;

    fn measurement(obj: &Bound<'_, PyAny>, _: &Params) -> Result<bool, PyResult<String>> {
        Ok(int_in_range(obj, 1, "the measurement (a count: 0, 1, False or True)")? == 1)
    }

    fn zero(_: &Params) -> bool {
        false
    }

    fn result<'py>(py: Python<'py>, result: u64) -> PyResult<Bound<'py, PyAny>> {
        Ok(result.into_pyobject(py)?.into_any())
    }
}

impl Spec for SumSpec {
    type F = Field64;
    type T = Sum<Field64>;

    fn measurement(obj: &Bound<'_, PyAny>, params: &Params) -> Result<u64, PyResult<String>> {
        let max = params.max_measurement.unwrap_or_default();
        Ok(int_in_range(obj, max, "the measurement (a sum's summand)")? as u64)
    }

    fn zero(_: &Params) -> u64 {
        0
    }

    fn result<'py>(py: Python<'py>, result: u64) -> PyResult<Bound<'py, PyAny>> {
        Ok(result.into_pyobject(py)?.into_any())
    }
}

impl Spec for SumVecSpec {
    type F = Field128;
    type T = SumVec<Field128, ParallelSum<Field128, Mul>>;

    fn measurement(obj: &Bound<'_, PyAny>, params: &Params) -> Result<Vec<u128>, PyResult<String>> {
        let (length, max) = (params.length.unwrap_or_default(), params.max_measurement.unwrap_or_default());
        if obj.is_instance_of::<pyo3::types::PyString>() || obj.is_instance_of::<PyBytes>() {
            return Err(Err(PyTypeError::new_err("the measurement must be a sequence of ints, got a string")));
        }
        let items = obj.try_iter().map_err(|_| {
            let kind = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            Err(PyTypeError::new_err(format!("the measurement must be a sequence of ints, got {kind}")))
        })?;
        let mut values = Vec::with_capacity(length);
        for (i, item) in items.enumerate() {
            let item = item.map_err(Err)?;
            values.push(int_in_range(&item, max, &format!("element {i} of the measurement"))?);
        }
        if values.len() != length {
            return Err(Ok(format!("the measurement must have {length} elements, got {}", values.len())));
        }
        Ok(values)
    }

    fn zero(params: &Params) -> Vec<u128> {
        vec![0; params.length.unwrap_or_default()]
    }

    fn result<'py>(py: Python<'py>, result: Vec<u128>) -> PyResult<Bound<'py, PyAny>> {
        Ok(result.into_pyobject(py)?.into_any())
    }
}

impl Spec for HistogramSpec {
    type F = Field128;
    type T = Histogram<Field128, ParallelSum<Field128, Mul>>;

    fn measurement(obj: &Bound<'_, PyAny>, params: &Params) -> Result<usize, PyResult<String>> {
        let length = params.length.unwrap_or_default();
        let what = format!("the measurement (a bucket index, below the length {length})");
        Ok(int_in_range(obj, length as u128 - 1, &what)? as usize)
    }

    fn zero(_: &Params) -> usize {
        0
    }

    fn result<'py>(py: Python<'py>, result: Vec<u128>) -> PyResult<Bound<'py, PyAny>> {
        Ok(result.into_pyobject(py)?.into_any())
    }
}

/// Every operation, once, for any of the four types.
pub(crate) struct Core<S: Spec> {
    pub(crate) vdaf: Vdaf<S>,
    params: Arc<Params>,
    pub(crate) ctx: Vec<u8>,
    /// The shares' lengths, learnt at the first call that needs them (`lengths.rs`).
    pub(crate) lengths: OnceLock<Lengths>,
    /// A helper's state, used only as the crate's decoding parameter of verifier shares and messages (it tells
    /// their lengths: how many verifier elements, whether a joint randomness part or seed follows).
    template: State<S>,
    joint_rand: bool,
}

pub(crate) fn fixed<'a, const N: usize>(
    py: Python<'_>,
    params: &Params,
    op: Op,
    what: &str,
    bytes: &'a [u8],
) -> PyResult<&'a [u8; N]> {
    bytes.try_into().map_err(|_| refused(py, params, op, format!("{what} must be {N} bytes, got {}", bytes.len())))
}

fn os_random(py: Python<'_>, params: &Params, len: usize) -> PyResult<Vec<u8>> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes)
        .map_err(|e| refused(py, params, Op::Shard, format!("the OS randomness failed: {e}")))?;
    Ok(bytes)
}

impl<S: Spec> Core<S> {
    fn new(
        py: Python<'_>,
        vdaf: Result<Vdaf<S>, prio::vdaf::VdafError>,
        params: Params,
        ctx: Vec<u8>,
    ) -> PyResult<Self> {
        let vdaf = vdaf.map_err(|e| refused(py, &params, Op::Parameters, e))?;
        // A helper's encoded state is its seed, then a joint randomness seed when the type has joint randomness.
        let zeros = [0u8; 2 * SEED_SIZE];
        let (template, joint_rand) = match State::<S>::get_decoded_with_param(&(&vdaf, 1), &zeros[..SEED_SIZE]) {
            Ok(state) => (state, false),
            Err(_) => (
                State::<S>::get_decoded_with_param(&(&vdaf, 1), &zeros)
                    .map_err(|e| refused(py, &params, Op::Parameters, e))?,
                true,
            ),
        };
        Ok(Core { vdaf, params: Arc::new(params), ctx, lengths: OnceLock::new(), template, joint_rand })
    }

    pub(crate) fn err(&self, py: Python<'_>, op: Op, what: impl std::fmt::Display) -> PyErr {
        refused(py, &self.params, op, what)
    }

    /// The random bytes `shard` takes: one seed per aggregator, twice that with joint randomness (the blinds).
    pub(crate) fn rand_size(&self) -> usize {
        let seeds = usize::from(self.params.num_aggregators) * SEED_SIZE;
        if self.joint_rand {
            2 * seeds
        } else {
            seeds
        }
    }

    fn shard<'py>(
        &self,
        py: Python<'py>,
        measurement: &Bound<'py, PyAny>,
        nonce: Option<&[u8]>,
        rand: Option<&[u8]>,
    ) -> PyResult<Sharded<'py>> {
        let (nonce, public_share, input_shares) = self.shard_bytes(py, measurement, nonce, rand)?;
        let inputs = input_shares.iter().map(|s| PyBytes::new(py, s)).collect();
        Ok((PyBytes::new(py, &nonce), PyBytes::new(py, &public_share), inputs))
    }

    /// `shard` as bytes: the nonce (drawn from the OS unless given), the public share and the input shares.
    pub(crate) fn shard_bytes(
        &self,
        py: Python<'_>,
        measurement: &Bound<'_, PyAny>,
        nonce: Option<&[u8]>,
        rand: Option<&[u8]>,
    ) -> PyResult<ShardedBytes> {
        let measurement = S::measurement(measurement, &self.params).map_err(|e| match e {
            Ok(message) => self.err(py, Op::Shard, message),
            Err(type_error) => type_error,
        })?;
        let nonce = match nonce {
            Some(nonce) => *fixed::<NONCE_SIZE>(py, &self.params, Op::Shard, "the nonce", nonce)?,
            None => os_random(py, &self.params, NONCE_SIZE)?.try_into().expect("16 bytes"),
        };
        let drawn;
        let rand = match rand {
            Some(rand) if rand.len() != self.rand_size() => {
                let message = format!("rand must be {} bytes, got {}", self.rand_size(), rand.len());
                return Err(self.err(py, Op::Shard, message));
            }
            Some(rand) => rand,
            None => {
                drawn = os_random(py, &self.params, self.rand_size())?;
                &drawn[..]
            }
        };
        let (public_share, input_shares) = self
            .vdaf
            .shard_with_random(&self.ctx, &measurement, &nonce, rand)
            .map_err(|e| self.err(py, Op::Shard, e))?;
        let encode = |value: &dyn EncodeDyn| value.encoded().map_err(|e| self.err(py, Op::Shard, e));
        let inputs = input_shares.iter().map(|s| encode(s)).collect::<PyResult<Vec<_>>>()?;
        Ok((nonce, encode(&public_share)?, inputs))
    }

    /// The VDAF's type and parameters.
    pub(crate) fn params(&self) -> &Params {
        &self.params
    }

    pub(crate) fn check_agg_id(&self, py: Python<'_>, op: Op, agg_id: usize) -> PyResult<()> {
        if agg_id >= usize::from(self.params.num_aggregators) {
            let message = format!("agg_id must be in [0, {}), got {agg_id}", self.params.num_aggregators);
            return Err(self.err(py, op, message));
        }
        Ok(())
    }

    fn verify_init<'py>(
        &self,
        py: Python<'py>,
        verify_key: &[u8],
        agg_id: usize,
        nonce: &[u8],
        public_share: &[u8],
        input_share: &[u8],
    ) -> PyResult<(VerifyState, Bound<'py, PyBytes>)> {
        let op = Op::VerifyInit;
        let verify_key = fixed::<VERIFY_KEY_SIZE>(py, &self.params, op, "the verify key", verify_key)?;
        let nonce = fixed::<NONCE_SIZE>(py, &self.params, op, "the nonce", nonce)?;
        self.check_agg_id(py, op, agg_id)?;
        let (state, share) = self
            .init_raw(verify_key, agg_id, nonce, public_share, input_share)
            .map_err(|message| self.err(py, op, message))?;
        let share = share.get_encoded().map_err(|e| self.err(py, op, e))?;
        Ok((self.state(agg_id, state), PyBytes::new(py, &share)))
    }

    /// `verify_init` on checked arguments (`agg_id` below the number of aggregators): the state and the verifier
    /// share, or the refusal's text. The batch calls (`batch.rs`) share it; it needs no Python.
    pub(crate) fn init_raw(
        &self,
        verify_key: &[u8; VERIFY_KEY_SIZE],
        agg_id: usize,
        nonce: &[u8; NONCE_SIZE],
        public_share: &[u8],
        input_share: &[u8],
    ) -> Result<(State<S>, VerifierShare<S>), String> {
        let public = Prio3PublicShare::<SEED_SIZE>::get_decoded_with_param(&self.vdaf, public_share)
            .map_err(|e| format!("the public share is no valid encoding ({e})"))?;
        let input = Prio3InputShare::<S::F, SEED_SIZE>::get_decoded_with_param(&(&self.vdaf, agg_id), input_share)
            .map_err(|e| format!("the input share is no valid encoding for aggregator {agg_id} ({e})"))?;
        self.vdaf.verify_init(verify_key, &self.ctx, agg_id, &(), nonce, &public, &input).map_err(|e| e.to_string())
    }

    /// A state of this VDAF for Python.
    pub(crate) fn state(&self, agg_id: usize, state: State<S>) -> VerifyState {
        VerifyState { params: self.params.clone(), agg_id, inner: Some(S::F::wrap_state(state)) }
    }

    /// Verifier share `i` (of a call's list) decoded, or the refusal's text.
    pub(crate) fn verifier_share_raw(&self, i: usize, bytes: &[u8]) -> Result<VerifierShare<S>, String> {
        VerifierShare::<S>::get_decoded_with_param(&self.template, bytes)
            .map_err(|e| format!("verifier share {i} is no valid encoding ({e})"))
    }

    /// `verifier_shares_to_message` of decoded shares: the encoded message, or the refusal's text.
    pub(crate) fn message_raw(&self, shares: Vec<VerifierShare<S>>) -> Result<Vec<u8>, String> {
        let message = self.vdaf.verifier_shares_to_message(&self.ctx, &(), shares).map_err(|e| e.to_string())?;
        message.get_encoded().map_err(|e| e.to_string())
    }

    fn verifier_shares_to_message<'py>(
        &self,
        py: Python<'py>,
        verifier_shares: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let op = Op::VerifierSharesToMessage;
        let mut shares = Vec::with_capacity(usize::from(self.params.num_aggregators));
        for (i, item) in verifier_shares.try_iter()?.enumerate() {
            let item = item?;
            let bytes = item
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err(format!("verifier share {i} must be bytes")))?
                .as_bytes();
            shares.push(self.verifier_share_raw(i, bytes).map_err(|message| self.err(py, op, message))?);
        }
        let message = self.message_raw(shares).map_err(|message| self.err(py, op, message))?;
        Ok(PyBytes::new(py, &message))
    }

    /// The crate's state inside a Python `VerifyState`, taken (the state is then used), or the refusal's text: a
    /// state of another VDAF, or one already used.
    pub(crate) fn take_state(&self, state: &mut VerifyState) -> Result<State<S>, String> {
        if *state.params != *self.params {
            return Err(format!("a verify state of {}, not of this VDAF", state.params));
        }
        let inner = state.inner.take().ok_or("this VerifyState was already used")?;
        S::F::unwrap_state(inner).ok_or_else(|| "a verify state of another field".to_string())
    }

    /// `verify_next` of a state taken from its `VerifyState` and an encoded message: the output share, or the
    /// refusal's text.
    pub(crate) fn next_raw(&self, state: State<S>, message: &[u8]) -> Result<CrateOutputShare<S::F>, String> {
        let message = Prio3VerifierMessage::<SEED_SIZE>::get_decoded_with_param(&self.template, message)
            .map_err(|e| format!("the verifier message is no valid encoding ({e})"))?;
        match self.vdaf.verify_next(&self.ctx, state, message).map_err(|e| e.to_string())? {
            VerifyTransition::Finish(out) => Ok(out),
            VerifyTransition::Continue(..) => Err("Prio3 asked for a second round".to_string()),
        }
    }

    fn verify_next(&self, py: Python<'_>, state: &Bound<'_, VerifyState>, message: &[u8]) -> PyResult<OutputShare> {
        let op = Op::VerifyNext;
        let inner = self.take_state(&mut state.borrow_mut()).map_err(|message| self.err(py, op, message))?;
        let out = self.next_raw(inner, message).map_err(|message| self.err(py, op, message))?;
        Ok(OutputShare { params: self.params.clone(), inner: S::F::wrap_output(out) })
    }

    /// An empty aggregate share, the crate's.
    pub(crate) fn empty_raw(&self) -> CrateAggregateShare<S::F> {
        self.vdaf.aggregate_init(&())
    }

    /// The crate's aggregate share for Python.
    pub(crate) fn aggregate_share(&self, share: CrateAggregateShare<S::F>) -> AggregateShare {
        AggregateShare { params: self.params.clone(), inner: S::F::wrap_aggregate(share) }
    }

    fn empty(&self) -> AggregateShare {
        self.aggregate_share(self.empty_raw())
    }

    fn aggregate(&self, py: Python<'_>, output_shares: &Bound<'_, PyAny>) -> PyResult<AggregateShare> {
        let mut share: CrateAggregateShare<S::F> = self.vdaf.aggregate_init(&());
        for item in output_shares.try_iter()? {
            let item = item?;
            let out = item.cast::<OutputShare>().map_err(|_| PyTypeError::new_err("aggregate takes OutputShares"))?;
            let out = out.get();
            if *out.params != *self.params {
                return Err(self.err(
                    py,
                    Op::Aggregate,
                    format!("an output share of {}, not of this VDAF", out.params),
                ));
            }
            let out = S::F::output_ref(&out.inner).ok_or_else(|| self.err(py, Op::Aggregate, "another field"))?;
            share.accumulate(out).map_err(|e| self.err(py, Op::Aggregate, e))?;
        }
        Ok(AggregateShare { params: self.params.clone(), inner: S::F::wrap_aggregate(share) })
    }

    fn unshard<'py>(
        &self,
        py: Python<'py>,
        aggregate_shares: &Bound<'py, PyAny>,
        num_measurements: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let op = Op::Unshard;
        let mut shares = Vec::with_capacity(usize::from(self.params.num_aggregators));
        for item in aggregate_shares.try_iter()? {
            let item = item?;
            let share = item
                .cast::<AggregateShare>()
                .map_err(|_| PyTypeError::new_err("unshard takes AggregateShares"))?
                .borrow();
            if *share.params != *self.params {
                return Err(self.err(py, op, format!("an aggregate share of {}, not of this VDAF", share.params)));
            }
            shares.push(S::F::aggregate_ref(&share.inner).ok_or_else(|| self.err(py, op, "another field"))?.clone());
        }
        if shares.len() != usize::from(self.params.num_aggregators) {
            let message = format!("takes {} aggregate shares, got {}", self.params.num_aggregators, shares.len());
            return Err(self.err(py, op, message));
        }
        let result = self.vdaf.unshard(&(), shares, num_measurements).map_err(|e| self.err(py, op, e))?;
        S::result(py, result)
    }

    fn aggregate_share_from_bytes(&self, py: Python<'_>, data: &[u8]) -> PyResult<AggregateShare> {
        let share = CrateAggregateShare::<S::F>::get_decoded_with_param(&(&self.vdaf, &()), data)
            .map_err(|e| self.err(py, Op::Decode, format!("not an aggregate share of this VDAF ({e})")))?;
        Ok(AggregateShare { params: self.params.clone(), inner: S::F::wrap_aggregate(share) })
    }

    fn aggregate_share_from_field_elements(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<AggregateShare> {
        let modulus = S::F::modulus_u128();
        let mut ints = Vec::with_capacity(self.vdaf.output_len());
        for (i, item) in values.try_iter()?.enumerate() {
            let item = item?;
            ints.push(int_in_range(&item, modulus - 1, &format!("field element {i}")).map_err(|e| match e {
                Ok(message) => self.err(py, Op::Decode, message),
                Err(type_error) => type_error,
            })?);
        }
        if ints.len() != self.vdaf.output_len() {
            let message =
                format!("an aggregate share has {} field elements, got {}", self.vdaf.output_len(), ints.len());
            return Err(self.err(py, Op::Decode, message));
        }
        Ok(AggregateShare { params: self.params.clone(), inner: S::F::wrap_aggregate(from_ints::<S::F>(&ints)) })
    }

    fn verify_state_from_bytes(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<VerifyState> {
        self.check_agg_id(py, Op::Decode, agg_id)?;
        let state = State::<S>::get_decoded_with_param(&(&self.vdaf, agg_id), data)
            .map_err(|e| self.err(py, Op::Decode, format!("not a verify state of aggregator {agg_id} ({e})")))?;
        Ok(VerifyState { params: self.params.clone(), agg_id, inner: Some(S::F::wrap_state(state)) })
    }

    fn modulus(&self) -> u128 {
        S::F::modulus_u128()
    }
}

/// `Encode` as a trait object (the public share and the input shares are encoded by one closure).
pub(crate) trait EncodeDyn {
    fn encoded(&self) -> Result<Vec<u8>, prio::codec::CodecError>;
}

impl<T: Encode> EncodeDyn for T {
    fn encoded(&self) -> Result<Vec<u8>, prio::codec::CodecError> {
        self.get_encoded()
    }
}

fn aggregators(py: Python<'_>, name: &'static str, num_aggregators: usize) -> PyResult<u8> {
    u8::try_from(num_aggregators).map_err(|_| {
        let params = Params { name, num_aggregators: 0, length: None, max_measurement: None, chunk_length: None };
        refused(py, &params, Op::Parameters, format!("num_aggregators must be in [2, 255], got {num_aggregators}"))
    })
}

/// The Python class of one type: its constructor (`$new`, given as tokens) and the common methods, each a call into
/// `Core`.
macro_rules! vdaf_class {
    ($class:ident, $spec:ty, $doc:literal, { $($new:tt)* }) => {
        #[doc = $doc]
        #[pyclass(frozen, module = "ldp.prio")]
        pub struct $class {
            pub(crate) core: Core<$spec>,
        }

        #[pymethods]
        impl $class {
            $($new)*

            /// Shard a measurement: `(nonce, public_share, input_shares)`, one input share per aggregator. The nonce
            /// (16 bytes) and the randomness (`rand_size` bytes) are drawn from the OS unless given (replays).
            #[pyo3(signature = (measurement, *, nonce = None, rand = None))]
            fn shard<'py>(
                &self, py: Python<'py>, measurement: &Bound<'py, PyAny>, nonce: Option<&[u8]>, rand: Option<&[u8]>,
            ) -> PyResult<Sharded<'py>> {
                self.core.shard(py, measurement, nonce, rand)
            }

            /// One aggregator's first step on one report: `(state, verifier_share)`; the verifier share (bytes) goes
            /// to whoever combines them (`verifier_shares_to_message`).
            fn verify_init<'py>(
                &self, py: Python<'py>, verify_key: &[u8], agg_id: usize, nonce: &[u8], public_share: &[u8],
                input_share: &[u8],
            ) -> PyResult<(VerifyState, Bound<'py, PyBytes>)> {
                self.core.verify_init(py, verify_key, agg_id, nonce, public_share, input_share)
            }

            /// Combine every aggregator's verifier share (in aggregator order) into the verifier message (bytes);
            /// refused when the report's proof does not verify.
            fn verifier_shares_to_message<'py>(
                &self, py: Python<'py>, verifier_shares: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyBytes>> {
                self.core.verifier_shares_to_message(py, verifier_shares)
            }

            /// One aggregator's last step: its output share of the report (the state is consumed); refused when the
            /// joint randomness does not match the message.
            fn verify_next(
                &self, py: Python<'_>, state: &Bound<'_, VerifyState>, verifier_message: &[u8],
            ) -> PyResult<OutputShare> {
                self.core.verify_next(py, state, verifier_message)
            }

            /// The helper's side of one aggregation job, in one call with the GIL released: per report
            /// `(report_id, time, public_share, helper_ciphertext, leader_verifier_share)`, its verifier message
            /// (bytes) or its refusal code (str); and the aggregate share of the reports that got a message.
            fn helper_prepare_batch<'py>(
                &self, py: Python<'py>, keypair: &Bound<'py, HpkeKeypair>, verify_key: &[u8], task_id: &[u8],
                reports: &Bound<'py, PyAny>,
            ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
                self.core.helper_prepare_batch(py, keypair, verify_key, task_id, reports)
            }

            /// The leader's first step on one aggregation job, in one call with the GIL released: per report
            /// `(report_id, time, public_share, leader_ciphertext, input_share or None)`, `(state, verifier_share)`
            /// or its refusal code (str).
            fn leader_init_batch<'py>(
                &self, py: Python<'py>, keypair: &Bound<'py, HpkeKeypair>, verify_key: &[u8], task_id: &[u8],
                reports: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyList>> {
                self.core.leader_init_batch(py, keypair, verify_key, task_id, reports)
            }

            /// The leader's last step on one aggregation job, in one call with the GIL released: `verify_next` of
            /// each state with its message, `True` where it succeeded (its output share accumulated), `False` where
            /// not; and the aggregate share.
            fn leader_finish_batch<'py>(
                &self, py: Python<'py>, states: &Bound<'py, PyAny>, messages: &Bound<'py, PyAny>,
            ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
                self.core.leader_finish_batch(py, states, messages)
            }

            /// The bytes of aggregator `agg_id`'s input share (0: the leader's, its field elements; a helper's is
            /// seeds), exactly as `shard` makes it and the crate decodes it.
            fn input_share_len(&self, py: Python<'_>, agg_id: usize) -> PyResult<usize> {
                self.core.input_share_len(py, agg_id)
            }

            /// The bytes of the public share, exactly as `shard` makes it (0 for a type without joint randomness).
            #[getter]
            fn public_share_len(&self, py: Python<'_>) -> PyResult<usize> {
                Ok(self.core.lengths(py)?.public_share)
            }

            /// Refuse (`PrioError`, operation `decode`) bytes that are not exactly one input share of aggregator
            /// `agg_id` of this VDAF: the crate's decoding, every byte consumed.
            fn check_input_share(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<()> {
                self.core.check_input_share(py, agg_id, data)
            }

            /// Refuse (`PrioError`, operation `decode`) bytes that are not exactly one public share of this VDAF.
            fn check_public_share(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
                self.core.check_public_share(py, data)
            }

            /// An empty aggregate share (every element zero), to `accumulate` output shares into.
            fn aggregate_init(&self) -> AggregateShare {
                self.core.empty()
            }

            /// The aggregate share of the given output shares.
            fn aggregate(&self, py: Python<'_>, output_shares: &Bound<'_, PyAny>) -> PyResult<AggregateShare> {
                self.core.aggregate(py, output_shares)
            }

            /// The aggregate result from every aggregator's aggregate share.
            fn unshard<'py>(
                &self, py: Python<'py>, aggregate_shares: &Bound<'py, PyAny>, num_measurements: usize,
            ) -> PyResult<Bound<'py, PyAny>> {
                self.core.unshard(py, aggregate_shares, num_measurements)
            }

            /// An aggregate share read back from its `to_bytes()`.
            fn aggregate_share_from_bytes(&self, py: Python<'_>, data: &[u8]) -> PyResult<AggregateShare> {
                self.core.aggregate_share_from_bytes(py, data)
            }

            /// An aggregate share from its field elements (ints in `[0, modulus)`).
            fn aggregate_share_from_field_elements(
                &self, py: Python<'_>, values: &Bound<'_, PyAny>,
            ) -> PyResult<AggregateShare> {
                self.core.aggregate_share_from_field_elements(py, values)
            }

            /// A verify state read back from its `to_bytes()`, for aggregator `agg_id`.
            fn verify_state_from_bytes(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<VerifyState> {
                self.core.verify_state_from_bytes(py, agg_id, data)
            }

            /// The application's context string every operation binds to.
            #[getter]
            fn ctx<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                PyBytes::new(py, &self.core.ctx)
            }

            #[getter]
            fn num_aggregators(&self) -> u8 {
                self.core.params.num_aggregators
            }

            /// The prime of the type's field.
            #[getter]
            fn modulus(&self) -> u128 {
                self.core.modulus()
            }

            /// The number of field elements in an output or aggregate share.
            #[getter]
            fn output_len(&self) -> usize {
                self.core.vdaf.output_len()
            }

            /// The bytes of randomness `shard` takes.
            #[getter]
            fn rand_size(&self) -> usize {
                self.core.rand_size()
            }

            #[getter]
            fn verify_key_size(&self) -> usize {
                VERIFY_KEY_SIZE
            }

            #[getter]
            fn nonce_size(&self) -> usize {
                NONCE_SIZE
            }

            fn __repr__(&self) -> String {
                self.core.params.to_string()
            }

            fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
                match other.cast::<$class>() {
                    Ok(other) => {
                        let other = &other.get().core;
                        *other.params == *self.core.params && other.ctx == self.core.ctx
                    }
                    Err(_) => false,
                }
            }

            fn __hash__(&self) -> u64 {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                self.core.params.to_string().hash(&mut h);
                self.core.ctx.hash(&mut h);
                h.finish()
            }
        }
    };
}

vdaf_class!(Prio3Count, CountSpec, "Prio3Count: each measurement is 0 or 1, the result their sum.", {
    #[new]
    #[pyo3(signature = (*, ctx, num_aggregators = 2))]
    fn new(py: Python<'_>, ctx: &[u8], num_aggregators: usize) -> PyResult<Self> {
        let shares = aggregators(py, "Prio3Count", num_aggregators)?;
        let params = Params {
            name: "Prio3Count",
            num_aggregators: shares,
            length: None,
            max_measurement: None,
            chunk_length: None,
        };
        Ok(Self { core: Core::new(py, Prio3::new_count(shares), params, ctx.to_vec())? })
    }

    fn __getnewargs_ex__(&self, py: Python<'_>) -> PyResult<((), Py<PyAny>)> {
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("ctx", PyBytes::new(py, &self.core.ctx))?;
        kwargs.set_item("num_aggregators", self.core.params.num_aggregators)?;
        Ok(((), kwargs.into_any().unbind()))
    }
});

vdaf_class!(
    Prio3Sum,
    SumSpec,
    "Prio3Sum: each measurement is an int in [0, max_measurement], the result their sum.",
    {
        #[new]
        #[pyo3(signature = (*, max_measurement, ctx, num_aggregators = 2))]
        fn new(py: Python<'_>, max_measurement: u64, ctx: &[u8], num_aggregators: usize) -> PyResult<Self> {
            let shares = aggregators(py, "Prio3Sum", num_aggregators)?;
            let params = Params {
                name: "Prio3Sum",
                num_aggregators: shares,
                length: None,
                max_measurement: Some(max_measurement.into()),
                chunk_length: None,
            };
            Ok(Self { core: Core::new(py, Prio3::new_sum(shares, max_measurement), params, ctx.to_vec())? })
        }

        #[getter]
        fn max_measurement(&self) -> u128 {
            self.core.params.max_measurement.unwrap_or_default()
        }

        fn __getnewargs_ex__(&self, py: Python<'_>) -> PyResult<((), Py<PyAny>)> {
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("max_measurement", self.max_measurement())?;
            kwargs.set_item("ctx", PyBytes::new(py, &self.core.ctx))?;
            kwargs.set_item("num_aggregators", self.core.params.num_aggregators)?;
            Ok(((), kwargs.into_any().unbind()))
        }
    }
);

vdaf_class!(
    Prio3SumVec,
    SumVecSpec,
    "Prio3SumVec: each measurement is `length` ints in [0, max_measurement], the result their element-wise sum.",
    {
        #[new]
        #[pyo3(signature = (*, length, max_measurement, chunk_length = None, ctx, num_aggregators = 2))]
        fn new(
            py: Python<'_>,
            length: usize,
            max_measurement: u128,
            chunk_length: Option<usize>,
            ctx: &[u8],
            num_aggregators: usize,
        ) -> PyResult<Self> {
            let shares = aggregators(py, "Prio3SumVec", num_aggregators)?;
            let bits = max_measurement.checked_ilog2().map_or(1, |b| b as usize + 1);
            let chunk = chunk_length.unwrap_or_else(|| optimal_chunk_length(length.saturating_mul(bits)));
            let params = Params {
                name: "Prio3SumVec",
                num_aggregators: shares,
                length: Some(length),
                max_measurement: Some(max_measurement),
                chunk_length: Some(chunk),
            };
            let vdaf = Prio3::new_sum_vec(shares, max_measurement, length, chunk);
            Ok(Self { core: Core::new(py, vdaf, params, ctx.to_vec())? })
        }

        #[getter]
        fn length(&self) -> usize {
            self.core.params.length.unwrap_or_default()
        }

        #[getter]
        fn max_measurement(&self) -> u128 {
            self.core.params.max_measurement.unwrap_or_default()
        }

        #[getter]
        fn chunk_length(&self) -> usize {
            self.core.params.chunk_length.unwrap_or_default()
        }

        fn __getnewargs_ex__(&self, py: Python<'_>) -> PyResult<((), Py<PyAny>)> {
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("length", self.length())?;
            kwargs.set_item("max_measurement", self.max_measurement())?;
            kwargs.set_item("chunk_length", self.chunk_length())?;
            kwargs.set_item("ctx", PyBytes::new(py, &self.core.ctx))?;
            kwargs.set_item("num_aggregators", self.core.params.num_aggregators)?;
            Ok(((), kwargs.into_any().unbind()))
        }
    }
);

vdaf_class!(
    Prio3Histogram,
    HistogramSpec,
    "Prio3Histogram: each measurement is a bucket index in [0, length), the result the count of each bucket.",
    {
        #[new]
        #[pyo3(signature = (*, length, chunk_length = None, ctx, num_aggregators = 2))]
        fn new(
            py: Python<'_>,
            length: usize,
            chunk_length: Option<usize>,
            ctx: &[u8],
            num_aggregators: usize,
        ) -> PyResult<Self> {
            let shares = aggregators(py, "Prio3Histogram", num_aggregators)?;
            let chunk = chunk_length.unwrap_or_else(|| optimal_chunk_length(length));
            let params = Params {
                name: "Prio3Histogram",
                num_aggregators: shares,
                length: Some(length),
                max_measurement: None,
                chunk_length: Some(chunk),
            };
            Ok(Self { core: Core::new(py, Prio3::new_histogram(shares, length, chunk), params, ctx.to_vec())? })
        }

        #[getter]
        fn length(&self) -> usize {
            self.core.params.length.unwrap_or_default()
        }

        #[getter]
        fn chunk_length(&self) -> usize {
            self.core.params.chunk_length.unwrap_or_default()
        }

        fn __getnewargs_ex__(&self, py: Python<'_>) -> PyResult<((), Py<PyAny>)> {
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("length", self.length())?;
            kwargs.set_item("chunk_length", self.chunk_length())?;
            kwargs.set_item("ctx", PyBytes::new(py, &self.core.ctx))?;
            kwargs.set_item("num_aggregators", self.core.params.num_aggregators)?;
            Ok(((), kwargs.into_any().unbind()))
        }
    }
);
