//! Every operation of a Prio3 class, once, for any type of either draft (`Core<B>` over a `Backend`): the Python
//! arguments checked and read, the backend's call, its result handed back, every refusal a `PrioError` naming the
//! VDAF (its draft among its parameters) and the operation.

use std::sync::{Arc, OnceLock};

use prio::vdaf::{Aggregatable, AggregateShare as CrateAggregateShare, OutputShare as CrateOutputShare};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::backend::{AnyState, Backend, NONCE_SIZE};
use crate::errors::{refused, Op};
use crate::lengths::Lengths;
use crate::params::Params;
use crate::shares::{from_ints, AggregateShare, Field, OutputShare, VerifyState};
use crate::spec::{int_in_range, Spec};

/// What `shard` gives Python: the nonce, the public share and one input share per aggregator.
pub(crate) type Sharded<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<Bound<'py, PyBytes>>);

/// A report's shares as Python sees them, of any VDAF (Prio3's, Poplar1's): `(nonce, public_share, [input shares])`.
pub(crate) fn sharded<'py>(
    py: Python<'py>,
    nonce: &[u8],
    public_share: &[u8],
    input_shares: &[Vec<u8>],
) -> Sharded<'py> {
    let inputs = input_shares.iter().map(|s| PyBytes::new(py, s)).collect();
    (PyBytes::new(py, nonce), PyBytes::new(py, public_share), inputs)
}

/// The same as bytes (`Core::shard_bytes`).
pub(crate) type ShardedBytes = ([u8; NONCE_SIZE], Vec<u8>, Vec<Vec<u8>>);

/// `bytes` as an array of `N`, or a refusal naming `what` and both lengths.
pub(crate) fn fixed<'a, const N: usize>(
    py: Python<'_>,
    params: &Params,
    op: Op,
    what: &str,
    bytes: &'a [u8],
) -> PyResult<&'a [u8; N]> {
    bytes.try_into().map_err(|_| refused(py, params, op, format!("{what} must be {N} bytes, got {}", bytes.len())))
}

/// `len` bytes from the OS.
pub(crate) fn os_random(len: usize) -> Result<Vec<u8>, String> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).map_err(|e| format!("the OS randomness failed: {e}"))?;
    Ok(bytes)
}

/// One VDAF object: its backend (the crate's VDAF), parameters and context string.
pub(crate) struct Core<B: Backend> {
    pub(crate) backend: B,
    params: Arc<Params>,
    pub(crate) ctx: Vec<u8>,
    /// The shares' lengths, learnt at the first call that needs them (`lengths.rs`).
    pub(crate) lengths: OnceLock<Lengths>,
}

impl<B: Backend> Core<B> {
    pub(crate) fn new(py: Python<'_>, params: Params, ctx: Vec<u8>) -> PyResult<Self> {
        if params.draft != B::DRAFT {
            return Err(refused(py, &params, Op::Parameters, "built by the backend of another draft"));
        }
        let backend = B::new(&params).map_err(|e| refused(py, &params, Op::Parameters, e))?;
        Ok(Core { backend, params: Arc::new(params), ctx, lengths: OnceLock::new() })
    }

    pub(crate) fn err(&self, py: Python<'_>, op: Op, what: impl std::fmt::Display) -> PyErr {
        refused(py, &self.params, op, what)
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

    /// The field's prime (the crate's).
    pub(crate) fn modulus(&self) -> u128 {
        B::modulus()
    }

    /// The verify key's bytes in this draft.
    pub(crate) fn verify_key_size(&self) -> usize {
        B::VERIFY_KEY_SIZE
    }

    /// Refuse a verify key of another length than the draft's.
    pub(crate) fn check_verify_key(&self, py: Python<'_>, op: Op, verify_key: &[u8]) -> PyResult<()> {
        if verify_key.len() != B::VERIFY_KEY_SIZE {
            let message = format!("the verify key must be {} bytes, got {}", B::VERIFY_KEY_SIZE, verify_key.len());
            return Err(self.err(py, op, message));
        }
        Ok(())
    }

    pub(crate) fn shard<'py>(
        &self,
        py: Python<'py>,
        measurement: &Bound<'py, PyAny>,
        nonce: Option<&[u8]>,
        rand: Option<&[u8]>,
    ) -> PyResult<Sharded<'py>> {
        let (nonce, public_share, input_shares) = self.shard_bytes(py, measurement, nonce, rand)?;
        Ok(sharded(py, &nonce, &public_share, &input_shares))
    }

    /// `shard` as bytes: the nonce (drawn from the OS unless given), the public share and the input shares.
    pub(crate) fn shard_bytes(
        &self,
        py: Python<'_>,
        measurement: &Bound<'_, PyAny>,
        nonce: Option<&[u8]>,
        rand: Option<&[u8]>,
    ) -> PyResult<ShardedBytes> {
        let measurement = B::Spec::measurement(measurement, &self.params).map_err(|e| match e {
            Ok(message) => self.err(py, Op::Shard, message),
            Err(type_error) => type_error,
        })?;
        let nonce = match nonce {
            Some(nonce) => *fixed::<NONCE_SIZE>(py, &self.params, Op::Shard, "the nonce", nonce)?,
            None => os_random(NONCE_SIZE).map_err(|e| self.err(py, Op::Shard, e))?.try_into().expect("16 bytes"),
        };
        match (rand, self.backend.rand_size()) {
            (Some(_), None) => {
                let message = format!(
                    "rand= cannot be given: the prio crate {} (VDAF draft 08) has no public sharding with given \
                     randomness (its Client::shard draws it); shard with nonce= alone",
                    B::CRATE
                );
                return Err(self.err(py, Op::Shard, message));
            }
            (Some(rand), Some(size)) if rand.len() != size => {
                return Err(self.err(py, Op::Shard, format!("rand must be {size} bytes, got {}", rand.len())));
            }
            _ => {}
        }
        let (public_share, input_shares) =
            self.backend.shard(&self.ctx, &measurement, &nonce, rand).map_err(|e| self.err(py, Op::Shard, e))?;
        Ok((nonce, public_share, input_shares))
    }

    pub(crate) fn verify_init<'py>(
        &self,
        py: Python<'py>,
        verify_key: &[u8],
        agg_id: usize,
        nonce: &[u8],
        public_share: &[u8],
        input_share: &[u8],
    ) -> PyResult<(VerifyState, Bound<'py, PyBytes>)> {
        let op = Op::VerifyInit;
        self.check_verify_key(py, op, verify_key)?;
        let nonce = fixed::<NONCE_SIZE>(py, &self.params, op, "the nonce", nonce)?;
        self.check_agg_id(py, op, agg_id)?;
        let (state, share) = self
            .init_raw(verify_key, agg_id, nonce, public_share, input_share)
            .map_err(|message| self.err(py, op, message))?;
        let share = B::encode_share(&share).map_err(|e| self.err(py, op, e))?;
        Ok((self.state(agg_id, state), PyBytes::new(py, &share)))
    }

    /// `verify_init` on checked arguments (a verify key of the draft's size, `agg_id` below the number of
    /// aggregators): the state and the verifier share, or the refusal's text. The batch calls (`batch.rs`) share it;
    /// it needs no Python.
    pub(crate) fn init_raw(
        &self,
        verify_key: &[u8],
        agg_id: usize,
        nonce: &[u8; NONCE_SIZE],
        public_share: &[u8],
        input_share: &[u8],
    ) -> Result<(B::State, B::Share), String> {
        self.backend.init(verify_key, &self.ctx, agg_id, nonce, public_share, input_share)
    }

    /// A state of this VDAF for Python.
    pub(crate) fn state(&self, agg_id: usize, state: B::State) -> VerifyState {
        VerifyState { params: self.params.clone(), agg_id, inner: Some(Box::new(state)) }
    }

    /// Verifier share `i` (of a call's list) decoded, or the refusal's text.
    pub(crate) fn verifier_share_raw(&self, i: usize, bytes: &[u8]) -> Result<B::Share, String> {
        self.backend.decode_share(&format!("verifier share {i}"), bytes)
    }

    /// `verifier_shares_to_message` of decoded shares: the encoded message, or the refusal's text.
    pub(crate) fn message_raw(&self, shares: Vec<B::Share>) -> Result<Vec<u8>, String> {
        self.backend.message(&self.ctx, shares)
    }

    pub(crate) fn verifier_shares_to_message<'py>(
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
    /// state of another VDAF (another draft among them), or one already used.
    pub(crate) fn take_state(&self, state: &mut VerifyState) -> Result<B::State, String> {
        if *state.params != *self.params {
            return Err(format!("a verify state of {}, not of this VDAF", state.params));
        }
        let inner: Box<dyn AnyState> = state.inner.take().ok_or("this VerifyState was already used")?;
        let inner: Box<dyn std::any::Any> = inner;
        inner.downcast::<B::State>().map(|s| *s).map_err(|_| "a verify state of another draft or field".to_string())
    }

    /// `verify_next` of a state taken from its `VerifyState` and an encoded message: the output share, or the
    /// refusal's text.
    pub(crate) fn next_raw(&self, state: B::State, message: &[u8]) -> Result<CrateOutputShare<B::F>, String> {
        self.backend.next(&self.ctx, state, message)
    }

    pub(crate) fn verify_next(
        &self,
        py: Python<'_>,
        state: &Bound<'_, VerifyState>,
        message: &[u8],
    ) -> PyResult<OutputShare> {
        let op = Op::VerifyNext;
        let inner = self.take_state(&mut state.borrow_mut()).map_err(|message| self.err(py, op, message))?;
        let out = self.next_raw(inner, message).map_err(|message| self.err(py, op, message))?;
        Ok(OutputShare { params: self.params.clone(), inner: B::F::wrap_output(out) })
    }

    /// An empty aggregate share, the crate's.
    pub(crate) fn empty_raw(&self) -> Result<CrateAggregateShare<B::F>, String> {
        self.backend.empty()
    }

    /// The crate's aggregate share for Python.
    pub(crate) fn aggregate_share(&self, share: CrateAggregateShare<B::F>) -> AggregateShare {
        AggregateShare { params: self.params.clone(), inner: B::F::wrap_aggregate(share) }
    }

    pub(crate) fn empty(&self, py: Python<'_>) -> PyResult<AggregateShare> {
        Ok(self.aggregate_share(self.empty_raw().map_err(|e| self.err(py, Op::Aggregate, e))?))
    }

    pub(crate) fn aggregate(&self, py: Python<'_>, output_shares: &Bound<'_, PyAny>) -> PyResult<AggregateShare> {
        let op = Op::Aggregate;
        let mut share = self.empty_raw().map_err(|e| self.err(py, op, e))?;
        for item in output_shares.try_iter()? {
            let item = item?;
            let out = item.cast::<OutputShare>().map_err(|_| PyTypeError::new_err("aggregate takes OutputShares"))?;
            let out = out.get();
            if *out.params != *self.params {
                return Err(self.err(py, op, format!("an output share of {}, not of this VDAF", out.params)));
            }
            let out = B::F::output_ref(&out.inner).ok_or_else(|| self.err(py, op, "another field"))?;
            share.accumulate(out).map_err(|e| self.err(py, op, e))?;
        }
        Ok(self.aggregate_share(share))
    }

    pub(crate) fn unshard<'py>(
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
            shares.push(B::F::aggregate_ref(&share.inner).ok_or_else(|| self.err(py, op, "another field"))?.clone());
        }
        if shares.len() != usize::from(self.params.num_aggregators) {
            let message = format!("takes {} aggregate shares, got {}", self.params.num_aggregators, shares.len());
            return Err(self.err(py, op, message));
        }
        let result = self.backend.unshard(shares, num_measurements).map_err(|e| self.err(py, op, e))?;
        B::Spec::result(py, result)
    }

    pub(crate) fn aggregate_share_from_bytes(&self, py: Python<'_>, data: &[u8]) -> PyResult<AggregateShare> {
        let share = self
            .backend
            .decode_aggregate(data)
            .map_err(|e| self.err(py, Op::Decode, format!("not an aggregate share of this VDAF ({e})")))?;
        Ok(self.aggregate_share(share))
    }

    pub(crate) fn aggregate_share_from_field_elements(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<AggregateShare> {
        let (modulus, len) = (B::F::modulus_u128(), self.backend.output_len());
        let mut ints = Vec::with_capacity(len);
        for (i, item) in values.try_iter()?.enumerate() {
            let item = item?;
            ints.push(int_in_range(&item, modulus - 1, &format!("field element {i}")).map_err(|e| match e {
                Ok(message) => self.err(py, Op::Decode, message),
                Err(type_error) => type_error,
            })?);
        }
        if ints.len() != len {
            let message = format!("an aggregate share has {len} field elements, got {}", ints.len());
            return Err(self.err(py, Op::Decode, message));
        }
        Ok(self.aggregate_share(from_ints::<B::F>(&ints)))
    }

    pub(crate) fn verify_state_from_bytes(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<VerifyState> {
        self.check_agg_id(py, Op::Decode, agg_id)?;
        let state = self
            .backend
            .decode_state(agg_id, data)
            .map_err(|e| self.err(py, Op::Decode, format!("not a verify state of aggregator {agg_id} ({e})")))?;
        Ok(self.state(agg_id, state))
    }
}
