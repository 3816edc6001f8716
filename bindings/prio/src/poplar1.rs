//! Poplar1 (VDAF draft 18 §8: heavy hitters over two aggregators) as the Python class `Poplar1`, the prio crate
//! 0.18.1's (feature `experimental`), never rewritten: sharding is the native client's
//! (`ldp_client::poplar1::Poplar1Client`, the crate's `TestVectorClient::shard_with_random`: one implementation for
//! the devices and the simulations), and every aggregator step is the crate's `Aggregator` and `Collector`
//! (`verify_init`, `verifier_shares_to_message`, `verify_next`, `aggregate_init`, `unshard`,
//! `is_agg_param_valid`). This file checks what Python hands it (lengths, the level against the bit length, which
//! aggregation parameter a state or share is of) and turns every refusal into `ldp.errors.PrioError` naming the
//! operation; `poplar1_shares.rs` holds the values between calls.
//!
//! One report at one aggregator, for one aggregation parameter (its level and candidate prefixes): `verify_init`
//! (a state and a verifier share), then two rounds, each `verifier_shares_to_message` of both aggregators' shares
//! and `verify_next`: the first gives a new state and share (the sketch's second part), the second the output share
//! (the report's share of each candidate's count).

use ldp_client::poplar1::{Poplar1Client, MAX_BITS, NONCE_LEN, RAND_LEN, VERIFY_KEY_LEN};
use prio::codec::{Encode, ParameterizedDecode};
use prio::vdaf::poplar1::{
    Poplar1 as CratePoplar1, Poplar1AggregationParam, Poplar1FieldVec, Poplar1InputShare, Poplar1PublicShare,
    Poplar1VerifierMessage, Poplar1VerifierState,
};
use prio::vdaf::xof::XofTurboShake128;
use prio::vdaf::{Aggregatable, Aggregator, Collector, VerifyTransition};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::dap::HpkeKeypair;
use crate::errors::{refused, Op};
use crate::poplar1_batch as batch;
use crate::poplar1_shares::{bits_of, AggParam, AggregateShare, OutputShare, VerifyState};
use crate::vdaf::{sharded, Sharded};

type Vdaf = CratePoplar1<XofTurboShake128, VERIFY_KEY_LEN>;

/// Poplar1 of `bits`-bit measurements (1 to 256) and the application context `ctx`, for the leader (aggregator 0)
/// and the helper (1).
#[pyclass(frozen, module = "ldp.prio", name = "Poplar1")]
pub struct Poplar1 {
    pub(crate) client: Poplar1Client,
    pub(crate) vdaf: Vdaf,
    public_share_len: usize,
}

impl Poplar1 {
    pub(crate) fn err(&self, py: Python<'_>, op: Op, what: impl std::fmt::Display) -> PyErr {
        refused(py, &format!("Poplar1(bits={})", self.client.bits()), op, what)
    }

    /// Refuses a parameter whose level has no prefixes of this bit length.
    pub(crate) fn check_level(&self, py: Python<'_>, op: Op, agg_param: &Poplar1AggregationParam) -> PyResult<()> {
        let (level, bits) = (agg_param.level(), self.client.bits());
        if level >= bits {
            return Err(self.err(
                py,
                op,
                format!("level {level} is past the last level ({}) of {bits}-bit strings", bits - 1),
            ));
        }
        Ok(())
    }

    fn check_agg_id(&self, py: Python<'_>, op: Op, agg_id: usize) -> PyResult<()> {
        if agg_id > 1 {
            return Err(self.err(py, op, format!("agg_id must be 0 (the leader) or 1 (the helper), got {agg_id}")));
        }
        Ok(())
    }

    pub(crate) fn fixed<'a, const N: usize>(
        &self,
        py: Python<'_>,
        op: Op,
        what: &str,
        bytes: &'a [u8],
    ) -> PyResult<&'a [u8; N]> {
        bytes.try_into().map_err(|_| self.err(py, op, format!("{what} must be {N} bytes, got {}", bytes.len())))
    }

    fn shard_raw(
        &self,
        py: Python<'_>,
        measurement: &Bound<'_, PyAny>,
        nonce: Option<&[u8]>,
        rand: Option<&[u8]>,
    ) -> PyResult<ldp_client::poplar1::Poplar1Shares> {
        let op = Op::Shard;
        let bits = bits_of(measurement, "measurement")?;
        let shares = match (nonce, rand) {
            (None, None) => self.client.shard(&bits),
            (Some(nonce), Some(rand)) => {
                let nonce = self.fixed::<NONCE_LEN>(py, op, "the nonce", nonce)?;
                self.client.shard_with_random(&bits, nonce, rand)
            }
            (Some(nonce), None) => {
                let nonce = self.fixed::<NONCE_LEN>(py, op, "the nonce", nonce)?;
                let rand = crate::vdaf::os_random(RAND_LEN).map_err(|e| self.err(py, op, e))?;
                self.client.shard_with_random(&bits, nonce, &rand)
            }
            (None, Some(_)) => return Err(self.err(py, op, "rand= is given without nonce=: give both, for a replay")),
        };
        shares.map_err(|e| self.err(py, op, e))
    }

    fn decode_state(&self, py: Python<'_>, op: Op, agg_id: usize, data: &[u8]) -> PyResult<Poplar1VerifierState> {
        Poplar1VerifierState::get_decoded_with_param(&(&self.vdaf, agg_id), data)
            .map_err(|e| self.err(py, op, format!("no verification state ({e})")))
    }

    fn counts(&self, py: Python<'_>, agg_param: &AggParam, data: &[u8]) -> PyResult<Poplar1FieldVec> {
        self.check_level(py, Op::Decode, &agg_param.inner)?;
        Poplar1FieldVec::get_decoded_with_param(&(&self.vdaf, &*agg_param.inner), data).map_err(|e| {
            self.err(py, Op::Decode, format!("no share of {} counts ({e})", agg_param.inner.prefixes().len()))
        })
    }
}

#[pymethods]
impl Poplar1 {
    #[new]
    #[pyo3(signature = (bits, *, ctx))]
    fn new(py: Python<'_>, bits: usize, ctx: &[u8]) -> PyResult<Self> {
        let subject = format!("Poplar1(bits={bits})");
        let client = Poplar1Client::new(bits, ctx).map_err(|e| refused(py, &subject, Op::Parameters, e))?;
        // The public share's length follows from `bits` alone: the crate's, of the all-zero measurement.
        let zeros = client.shard_with_random(&vec![false; bits], &[0; NONCE_LEN], &[0; RAND_LEN]);
        let public_share_len = zeros.map_err(|e| refused(py, &subject, Op::Parameters, e))?.public_share.len();
        Ok(Poplar1 { vdaf: Vdaf::new_turboshake128(bits), client, public_share_len })
    }

    /// The bit length of a measurement.
    #[getter]
    fn bits(&self) -> usize {
        self.client.bits()
    }

    /// The application context string.
    #[getter]
    fn ctx<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.client.ctx())
    }

    /// Bytes of the verify key the aggregators share (32).
    #[getter]
    fn verify_key_size(&self) -> usize {
        VERIFY_KEY_LEN
    }

    /// Bytes of the sharding randomness `shard(rand=...)` takes (128).
    #[getter]
    fn rand_size(&self) -> usize {
        RAND_LEN
    }

    /// Bytes of aggregator `agg_id`'s input share (the same for both).
    fn input_share_len(&self, py: Python<'_>, agg_id: usize) -> PyResult<usize> {
        self.check_agg_id(py, Op::Decode, agg_id)?;
        Ok(self.client.input_share_len())
    }

    /// Bytes of the public share.
    #[getter]
    fn public_share_len(&self) -> usize {
        self.public_share_len
    }

    /// The longest bit length (256).
    #[classattr]
    fn max_bits() -> usize {
        MAX_BITS
    }

    /// Shard a measurement (`bits` bools, first bit first): `(nonce, public_share, [leader_share, helper_share])`.
    /// The nonce (16 bytes) and the randomness (`rand_size` bytes) are drawn from the OS unless given (a replay
    /// gives both, or the nonce alone).
    #[pyo3(signature = (measurement, *, nonce = None, rand = None))]
    fn shard<'py>(
        &self,
        py: Python<'py>,
        measurement: &Bound<'py, PyAny>,
        nonce: Option<&[u8]>,
        rand: Option<&[u8]>,
    ) -> PyResult<Sharded<'py>> {
        let s = self.shard_raw(py, measurement, nonce, rand)?;
        Ok(sharded(py, &s.nonce, &s.public_share, &s.input_shares))
    }

    /// Refuses (`PrioError`, operation `decode`) bytes that are not exactly one public share of this bit length.
    fn check_public_share(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        Poplar1PublicShare::get_decoded_with_param(&self.vdaf, data)
            .map(|_| ())
            .map_err(|e| self.err(py, Op::Decode, format!("no public share ({e})")))
    }

    /// Refuses bytes that are not exactly one input share of aggregator `agg_id`.
    fn check_input_share(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<()> {
        self.check_agg_id(py, Op::Decode, agg_id)?;
        Poplar1InputShare::<VERIFY_KEY_LEN>::get_decoded_with_param(&(&self.vdaf, agg_id), data)
            .map(|_| ())
            .map_err(|e| self.err(py, Op::Decode, format!("no input share ({e})")))
    }

    /// One aggregator's first step on one report for `agg_param`: `(state, verifier_share)` (the share goes to
    /// whoever combines them). The GIL is released while the crate evaluates the IDPF at every prefix.
    #[allow(clippy::too_many_arguments)]
    fn verify_init<'py>(
        &self,
        py: Python<'py>,
        verify_key: &[u8],
        agg_id: usize,
        agg_param: &AggParam,
        nonce: &[u8],
        public_share: &[u8],
        input_share: &[u8],
    ) -> PyResult<(VerifyState, Bound<'py, PyBytes>)> {
        let op = Op::VerifyInit;
        let key = self.fixed::<VERIFY_KEY_LEN>(py, op, "the verify key", verify_key)?;
        let nonce = self.fixed::<NONCE_LEN>(py, op, "the nonce", nonce)?;
        self.check_agg_id(py, op, agg_id)?;
        self.check_level(py, op, &agg_param.inner)?;
        let param = agg_param.inner.clone();
        let (ctx, vdaf) = (self.client.ctx(), &self.vdaf);
        let done = py.detach(|| {
            let public = Poplar1PublicShare::get_decoded_with_param(vdaf, public_share)
                .map_err(|e| format!("the public share does not decode ({e})"))?;
            let input = Poplar1InputShare::<VERIFY_KEY_LEN>::get_decoded_with_param(&(vdaf, agg_id), input_share)
                .map_err(|e| format!("the input share is no valid encoding for aggregator {agg_id} ({e})"))?;
            let (state, share) =
                vdaf.verify_init(key, ctx, agg_id, &param, nonce, &public, &input).map_err(|e| e.to_string())?;
            Ok::<_, String>((state, share.get_encoded().map_err(|e| e.to_string())?))
        });
        let (state, share) = done.map_err(|e| self.err(py, op, e))?;
        let state = VerifyState { agg_id, round: 0, agg_param: param, inner: Some(state) };
        Ok((state, PyBytes::new(py, &share)))
    }

    /// Combine both aggregators' verifier shares of one round (leader's first) into the verifier message, each
    /// decoded as the round of `state` (the caller's own state of that report) has them; refused when the sketch
    /// shows the report is no valid one-string encoding.
    fn verifier_shares_to_message<'py>(
        &self,
        py: Python<'py>,
        state: &Bound<'py, VerifyState>,
        verifier_shares: Vec<Vec<u8>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let op = Op::VerifierSharesToMessage;
        let state = state.borrow();
        let inner = state.inner.as_ref().ok_or_else(|| self.err(py, op, "the state was already used"))?;
        if verifier_shares.len() != 2 {
            return Err(self.err(py, op, format!("two verifier shares are needed, got {}", verifier_shares.len())));
        }
        let mut shares = Vec::with_capacity(2);
        for (i, bytes) in verifier_shares.iter().enumerate() {
            let share = Poplar1FieldVec::get_decoded_with_param(inner, bytes).map_err(|e| {
                self.err(py, op, format!("verifier share {i} of round {} does not decode ({e})", state.round))
            })?;
            shares.push(share);
        }
        let message = self.vdaf.verifier_shares_to_message(self.client.ctx(), &state.agg_param, shares);
        let message = message.map_err(|e| self.err(py, op, e))?;
        let bytes = message.get_encoded().map_err(|e| self.err(py, op, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// One aggregator's next step (the state is consumed): after round 0, `(state, verifier_share)` for round 1;
    /// after round 1, the report's `Poplar1OutputShare`.
    fn verify_next<'py>(
        &self,
        py: Python<'py>,
        state: &Bound<'py, VerifyState>,
        verifier_message: &[u8],
    ) -> PyResult<Bound<'py, PyAny>> {
        let op = Op::VerifyNext;
        let mut state = state.borrow_mut();
        let inner = state.inner.take().ok_or_else(|| self.err(py, op, "the state was already used"))?;
        let message = Poplar1VerifierMessage::get_decoded_with_param(&inner, verifier_message)
            .map_err(|e| self.err(py, op, format!("the verifier message does not decode ({e})")))?;
        let agg_param = state.agg_param.clone();
        match self.vdaf.verify_next(self.client.ctx(), inner, message).map_err(|e| self.err(py, op, e))? {
            VerifyTransition::Continue(next, share) => {
                let share = share.get_encoded().map_err(|e| self.err(py, op, e))?;
                let next = VerifyState { agg_id: state.agg_id, round: state.round + 1, agg_param, inner: Some(next) };
                Ok((next, PyBytes::new(py, &share)).into_pyobject(py)?.into_any())
            }
            VerifyTransition::Finish(out) => Ok(OutputShare { agg_param, inner: out }.into_pyobject(py)?.into_any()),
        }
    }

    /// A state of aggregator `agg_id` for `agg_param` from its `to_bytes()`.
    fn verify_state_from_bytes(
        &self,
        py: Python<'_>,
        agg_id: usize,
        agg_param: &AggParam,
        data: &[u8],
    ) -> PyResult<VerifyState> {
        self.check_agg_id(py, Op::Decode, agg_id)?;
        self.check_level(py, Op::Decode, &agg_param.inner)?;
        let inner = self.decode_state(py, Op::Decode, agg_id, data)?;
        let round = encoded_round(data);
        Ok(VerifyState { agg_id, round, agg_param: agg_param.inner.clone(), inner: Some(inner) })
    }

    /// An empty aggregate share of `agg_param`'s counts.
    fn aggregate_init(&self, py: Python<'_>, agg_param: &AggParam) -> PyResult<AggregateShare> {
        self.check_level(py, Op::Aggregate, &agg_param.inner)?;
        Ok(AggregateShare { agg_param: agg_param.inner.clone(), inner: self.vdaf.aggregate_init(&agg_param.inner) })
    }

    /// The aggregate share of `output_shares` (each of `agg_param`).
    fn aggregate(
        &self,
        py: Python<'_>,
        agg_param: &AggParam,
        output_shares: &Bound<'_, PyAny>,
    ) -> PyResult<AggregateShare> {
        let mut share = self.aggregate_init(py, agg_param)?;
        for out in output_shares.try_iter()? {
            let out = out?;
            let out = out
                .cast::<OutputShare>()
                .map_err(|_| PyTypeError::new_err("output_shares must hold Poplar1OutputShare"))?;
            let out = out.borrow();
            if *out.agg_param != *agg_param.inner {
                return Err(self.err(py, Op::Aggregate, "an output share of another aggregation parameter"));
            }
            share.inner.accumulate(&out.inner).map_err(|e| self.err(py, Op::Aggregate, e))?;
        }
        Ok(share)
    }

    /// An output share of `agg_param` from its `to_bytes()`.
    fn output_share_from_bytes(&self, py: Python<'_>, agg_param: &AggParam, data: &[u8]) -> PyResult<OutputShare> {
        Ok(OutputShare { agg_param: agg_param.inner.clone(), inner: self.counts(py, agg_param, data)? })
    }

    /// An aggregate share of `agg_param` from its `to_bytes()` (what an aggregator sends the collector).
    fn aggregate_share_from_bytes(
        &self,
        py: Python<'_>,
        agg_param: &AggParam,
        data: &[u8],
    ) -> PyResult<AggregateShare> {
        Ok(AggregateShare { agg_param: agg_param.inner.clone(), inner: self.counts(py, agg_param, data)? })
    }

    /// The collector's step: both aggregate shares of `agg_param` into each prefix's count (the crate's: a count is
    /// read as an int below 2^64).
    fn unshard<'py>(
        &self,
        py: Python<'py>,
        agg_param: &AggParam,
        agg_shares: Vec<PyRef<'py, AggregateShare>>,
        num_measurements: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        self.check_level(py, Op::Unshard, &agg_param.inner)?;
        if agg_shares.iter().any(|s| *s.agg_param != *agg_param.inner) {
            return Err(self.err(py, Op::Unshard, "an aggregate share of another aggregation parameter"));
        }
        let shares: Vec<Poplar1FieldVec> = agg_shares.iter().map(|s| s.inner.clone()).collect();
        let counts =
            self.vdaf.unshard(&agg_param.inner, shares, num_measurements).map_err(|e| self.err(py, Op::Unshard, e))?;
        PyList::new(py, counts)
    }

    /// Whether the crate lets a report be aggregated with `agg_param` after `previous` (the parameters it was
    /// aggregated with, oldest first): the level must grow, and each prefix must extend one of the last level's.
    #[staticmethod]
    fn is_agg_param_valid(agg_param: &AggParam, previous: Vec<PyRef<'_, AggParam>>) -> bool {
        let previous: Vec<Poplar1AggregationParam> = previous.iter().map(|p| (*p.inner).clone()).collect();
        <Vdaf as Aggregator<VERIFY_KEY_LEN, NONCE_LEN>>::is_agg_param_valid(&agg_param.inner, &previous)
    }

    /// The leader's round 0 of one aggregation job (`poplar1_batch.rs`; its docstring in `_native.pyi`).
    #[allow(clippy::too_many_arguments)]
    fn leader_init_batch<'py>(
        &self,
        py: Python<'py>,
        keypair: &Bound<'py, HpkeKeypair>,
        verify_key: &[u8],
        task_id: &[u8],
        agg_param: &AggParam,
        reports: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        batch::leader_init_batch(self, py, keypair, verify_key, task_id, agg_param, reports)
    }

    /// The helper's round 0 of one aggregation job (`poplar1_batch.rs`; its docstring in `_native.pyi`).
    #[allow(clippy::too_many_arguments)]
    fn helper_init_batch<'py>(
        &self,
        py: Python<'py>,
        keypair: &Bound<'py, HpkeKeypair>,
        verify_key: &[u8],
        task_id: &[u8],
        agg_param: &AggParam,
        reports: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        batch::helper_init_batch(self, py, keypair, verify_key, task_id, agg_param, reports)
    }

    /// The leader's round 1 of one aggregation job (`poplar1_batch.rs`; its docstring in `_native.pyi`).
    fn leader_continue_batch<'py>(
        &self,
        py: Python<'py>,
        states: &Bound<'py, PyAny>,
        messages: &Bound<'py, PyAny>,
        verifier_shares: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        batch::leader_continue_batch(self, py, states, messages, verifier_shares)
    }

    /// The leader's last step on one aggregation job (`poplar1_batch.rs`; its docstring in `_native.pyi`).
    fn leader_finish_batch<'py>(
        &self,
        py: Python<'py>,
        agg_param: &AggParam,
        states: &Bound<'py, PyAny>,
        messages: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
        batch::leader_finish_batch(self, py, agg_param, states, messages)
    }

    /// The helper's last step on one aggregation job (`poplar1_batch.rs`; its docstring in `_native.pyi`).
    fn helper_finish_batch<'py>(
        &self,
        py: Python<'py>,
        agg_param: &AggParam,
        states: &Bound<'py, PyAny>,
        messages: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
        batch::helper_finish_batch(self, py, agg_param, states, messages)
    }

    fn __repr__(&self) -> String {
        format!("Poplar1(bits={}, ctx={} bytes)", self.client.bits(), self.client.ctx().len())
    }
}

/// The round of an encoded verification state (the crate's encoding: the field's byte, then the sketch's round, 0
/// for the first, 1 for the second).
pub(crate) fn encoded_round(data: &[u8]) -> u8 {
    data.get(1).copied().unwrap_or_default()
}

/// The shares `seal_report` seals (the DAP path of a simulated device): the nonce, the public share, the inputs.
pub(crate) fn shard_bytes(
    py: Python<'_>,
    vdaf: &Poplar1,
    measurement: &Bound<'_, PyAny>,
    nonce: Option<&[u8]>,
    rand: Option<&[u8]>,
) -> PyResult<crate::vdaf::ShardedBytes> {
    let s = vdaf.shard_raw(py, measurement, nonce, rand)?;
    Ok((s.nonce, s.public_share, s.input_shares))
}
