//! The four Prio3 types as Python classes, each of either draft (`draft=18`, the default, or `draft=8`): the object
//! holds the `Core` of its draft's backend (`Cores`, `cores.rs`), and every method is one call into it, whichever the
//! draft (`on_draft!`). Only the constructors differ by type; their draft-specific rules (no context string, `bits`)
//! are `params.rs`'s.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::backend::Backend;
use crate::cores::{bound, common, on_draft, Cores};
use crate::dap::HpkeKeypair;
use crate::shares::{AggregateShare, OutputShare, VerifyState};
use crate::spec::{CountSpec, HistogramSpec, SumSpec, SumVecSpec};
use crate::vdaf::Sharded;

/// The Python class of one type: its constructor and getters (`$own`, given as tokens) and the common methods, each
/// a call into the `Core` of its draft.
macro_rules! vdaf_class {
    ($class:ident, $spec:ty, $doc:literal, { $($own:tt)* }) => {
        #[doc = $doc]
        #[pyclass(frozen, module = "ldp.prio")]
        pub struct $class {
            pub(crate) core: Cores<$spec>,
        }

        #[pymethods]
        impl $class {
            $($own)*

            /// Shard a measurement: `(nonce, public_share, input_shares)`, one input share per aggregator. The nonce
            /// (16 bytes) is drawn from the OS unless given; so is the randomness (`rand_size` bytes), which draft 18
            /// alone takes given (replays).
            #[pyo3(signature = (measurement, *, nonce = None, rand = None))]
            fn shard<'py>(
                &self, py: Python<'py>, measurement: &Bound<'py, PyAny>, nonce: Option<&[u8]>, rand: Option<&[u8]>,
            ) -> PyResult<Sharded<'py>> {
                on_draft!(&self.core, c => c.shard(py, measurement, nonce, rand))
            }

            /// One aggregator's first step on one report: `(state, verifier_share)`; the verifier share (bytes) goes
            /// to whoever combines them (`verifier_shares_to_message`).
            fn verify_init<'py>(
                &self, py: Python<'py>, verify_key: &[u8], agg_id: usize, nonce: &[u8], public_share: &[u8],
                input_share: &[u8],
            ) -> PyResult<(VerifyState, Bound<'py, PyBytes>)> {
                on_draft!(&self.core, c => c.verify_init(py, verify_key, agg_id, nonce, public_share, input_share))
            }

            /// Combine every aggregator's verifier share (in aggregator order) into the verifier message (bytes);
            /// refused when the report's proof does not verify.
            fn verifier_shares_to_message<'py>(
                &self, py: Python<'py>, verifier_shares: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyBytes>> {
                on_draft!(&self.core, c => c.verifier_shares_to_message(py, verifier_shares))
            }

            /// One aggregator's last step: its output share of the report (the state is consumed); refused when the
            /// joint randomness does not match the message.
            fn verify_next(
                &self, py: Python<'_>, state: &Bound<'_, VerifyState>, verifier_message: &[u8],
            ) -> PyResult<OutputShare> {
                on_draft!(&self.core, c => c.verify_next(py, state, verifier_message))
            }

            /// The helper's side of one aggregation job, in one call with the GIL released: per report
            /// `(report_id, time, public_share, helper_ciphertext, leader_verifier_share)`, its verifier message
            /// (bytes) or its refusal code (str); and the aggregate share of the reports that got a message.
            fn helper_prepare_batch<'py>(
                &self, py: Python<'py>, keypair: &Bound<'py, HpkeKeypair>, verify_key: &[u8], task_id: &[u8],
                reports: &Bound<'py, PyAny>,
            ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
                on_draft!(&self.core, c => c.helper_prepare_batch(py, keypair, verify_key, task_id, reports))
            }

            /// The leader's first step on one aggregation job, in one call with the GIL released: per report
            /// `(report_id, time, public_share, leader_ciphertext, input_share or None)`, `(state, verifier_share)`
            /// or its refusal code (str).
            fn leader_init_batch<'py>(
                &self, py: Python<'py>, keypair: &Bound<'py, HpkeKeypair>, verify_key: &[u8], task_id: &[u8],
                reports: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyList>> {
                on_draft!(&self.core, c => c.leader_init_batch(py, keypair, verify_key, task_id, reports))
            }

            /// The leader's last step on one aggregation job, in one call with the GIL released: `verify_next` of
            /// each state with its message, `True` where it succeeded (its output share accumulated), `False` where
            /// not; and the aggregate share.
            fn leader_finish_batch<'py>(
                &self, py: Python<'py>, states: &Bound<'py, PyAny>, messages: &Bound<'py, PyAny>,
            ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
                on_draft!(&self.core, c => c.leader_finish_batch(py, states, messages))
            }

            /// The bytes of aggregator `agg_id`'s input share (0: the leader's, its field elements; a helper's is
            /// seeds), exactly as `shard` makes it and the crate decodes it.
            fn input_share_len(&self, py: Python<'_>, agg_id: usize) -> PyResult<usize> {
                on_draft!(&self.core, c => c.input_share_len(py, agg_id))
            }

            /// The bytes of the public share, exactly as `shard` makes it (0 for a type without joint randomness).
            #[getter]
            fn public_share_len(&self, py: Python<'_>) -> PyResult<usize> {
                on_draft!(&self.core, c => Ok(c.lengths(py)?.public_share))
            }

            /// Refuse (`PrioError`, operation `decode`) bytes that are not exactly one input share of aggregator
            /// `agg_id` of this VDAF: the crate's decoding, every byte consumed.
            fn check_input_share(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<()> {
                on_draft!(&self.core, c => c.check_input_share(py, agg_id, data))
            }

            /// Refuse (`PrioError`, operation `decode`) bytes that are not exactly one public share of this VDAF.
            fn check_public_share(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
                on_draft!(&self.core, c => c.check_public_share(py, data))
            }

            /// An empty aggregate share (every element zero), to `accumulate` output shares into.
            fn aggregate_init(&self, py: Python<'_>) -> PyResult<AggregateShare> {
                on_draft!(&self.core, c => c.empty(py))
            }

            /// The aggregate share of the given output shares.
            fn aggregate(&self, py: Python<'_>, output_shares: &Bound<'_, PyAny>) -> PyResult<AggregateShare> {
                on_draft!(&self.core, c => c.aggregate(py, output_shares))
            }

            /// The aggregate result from every aggregator's aggregate share.
            fn unshard<'py>(
                &self, py: Python<'py>, aggregate_shares: &Bound<'py, PyAny>, num_measurements: usize,
            ) -> PyResult<Bound<'py, PyAny>> {
                on_draft!(&self.core, c => c.unshard(py, aggregate_shares, num_measurements))
            }

            /// An aggregate share read back from its `to_bytes()`.
            fn aggregate_share_from_bytes(&self, py: Python<'_>, data: &[u8]) -> PyResult<AggregateShare> {
                on_draft!(&self.core, c => c.aggregate_share_from_bytes(py, data))
            }

            /// An aggregate share from its field elements (ints in `[0, modulus)`).
            fn aggregate_share_from_field_elements(
                &self, py: Python<'_>, values: &Bound<'_, PyAny>,
            ) -> PyResult<AggregateShare> {
                on_draft!(&self.core, c => c.aggregate_share_from_field_elements(py, values))
            }

            /// A verify state read back from its `to_bytes()`, for aggregator `agg_id`.
            fn verify_state_from_bytes(&self, py: Python<'_>, agg_id: usize, data: &[u8]) -> PyResult<VerifyState> {
                on_draft!(&self.core, c => c.verify_state_from_bytes(py, agg_id, data))
            }

            /// The application's context string every operation binds to (empty in draft 08, which has none).
            #[getter]
            fn ctx<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                PyBytes::new(py, self.core.ctx())
            }

            /// The VDAF draft: 18 or 8.
            #[getter]
            fn draft(&self) -> u8 {
                self.core.params().draft.number()
            }

            #[getter]
            fn num_aggregators(&self) -> u8 {
                self.core.params().num_aggregators
            }

            /// The prime of the type's field.
            #[getter]
            fn modulus(&self) -> u128 {
                on_draft!(&self.core, c => c.modulus())
            }

            /// The number of field elements in an output or aggregate share.
            #[getter]
            fn output_len(&self) -> usize {
                on_draft!(&self.core, c => c.backend.output_len())
            }

            /// The bytes of randomness `shard` takes (`None` in draft 08: its crate draws it).
            #[getter]
            fn rand_size(&self) -> Option<usize> {
                on_draft!(&self.core, c => c.backend.rand_size())
            }

            /// The verify key's bytes: 32 in draft 18, 16 in draft 08.
            #[getter]
            fn verify_key_size(&self) -> usize {
                on_draft!(&self.core, c => c.verify_key_size())
            }

            #[getter]
            fn nonce_size(&self) -> usize {
                crate::backend::NONCE_SIZE
            }

            fn __repr__(&self) -> String {
                self.core.params().to_string()
            }

            fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
                match other.cast::<$class>() {
                    Ok(other) => {
                        let other = &other.get().core;
                        other.params() == self.core.params() && other.ctx() == self.core.ctx()
                    }
                    Err(_) => false,
                }
            }

            fn __hash__(&self) -> u64 {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                self.core.params().to_string().hash(&mut h);
                self.core.ctx().hash(&mut h);
                h.finish()
            }

            fn __getnewargs_ex__<'py>(&self, py: Python<'py>) -> PyResult<((), Bound<'py, PyDict>)> {
                Ok(((), self.core.kwargs(py)?))
            }
        }
    };
}

vdaf_class!(Prio3Count, CountSpec, "Prio3Count: each measurement is 0 or 1, the result their sum.", {
    #[new]
    #[pyo3(signature = (*, ctx = None, num_aggregators = 2, draft = None))]
    #[pyo3(text_signature = "(*, ctx=None, num_aggregators=2, draft=18)")]
    fn new(
        py: Python<'_>,
        ctx: Option<&[u8]>,
        num_aggregators: usize,
        draft: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let params = common(py, "Prio3Count", draft, num_aggregators)?;
        Ok(Self { core: Cores::new(py, params, ctx)? })
    }
});

vdaf_class!(
    Prio3Sum,
    SumSpec,
    "Prio3Sum: each measurement is an int in [0, max_measurement] (draft 08: [0, 2**bits)), the result their sum.",
    {
        #[new]
        #[pyo3(signature = (*, max_measurement = None, bits = None, ctx = None, num_aggregators = 2, draft = None))]
        #[pyo3(text_signature = "(*, max_measurement=None, bits=None, ctx=None, num_aggregators=2, draft=18)")]
        fn new(
            py: Python<'_>,
            max_measurement: Option<u128>,
            bits: Option<usize>,
            ctx: Option<&[u8]>,
            num_aggregators: usize,
            draft: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let mut params = common(py, "Prio3Sum", draft, num_aggregators)?;
            bound(py, &mut params, max_measurement, bits)?;
            Ok(Self { core: Cores::new(py, params, ctx)? })
        }

        /// The largest measurement (draft 08: `2**bits - 1`).
        #[getter]
        fn max_measurement(&self) -> u128 {
            self.core.params().max_measurement.unwrap_or_default()
        }

        /// Draft 08's bit length of a measurement (`None` in draft 18).
        #[getter]
        fn bits(&self) -> Option<usize> {
            self.core.params().bits
        }
    }
);

vdaf_class!(
    Prio3SumVec,
    SumVecSpec,
    "Prio3SumVec: each measurement is `length` ints in [0, max_measurement] (draft 08: [0, 2**bits)), the result \
     their element-wise sum.",
    {
        #[new]
        #[pyo3(signature = (
            *, length, max_measurement = None, bits = None, chunk_length = None, ctx = None, num_aggregators = 2,
            draft = None
        ))]
        #[pyo3(text_signature = "(*, length, max_measurement=None, bits=None, chunk_length=None, ctx=None, \
                                 num_aggregators=2, draft=18)")]
        #[allow(clippy::too_many_arguments)]
        fn new(
            py: Python<'_>,
            length: usize,
            max_measurement: Option<u128>,
            bits: Option<usize>,
            chunk_length: Option<usize>,
            ctx: Option<&[u8]>,
            num_aggregators: usize,
            draft: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let mut params = common(py, "Prio3SumVec", draft, num_aggregators)?;
            params.length = Some(length);
            bound(py, &mut params, max_measurement, bits)?;
            let max = params.max_measurement.unwrap_or_default();
            let bits = params.bits.unwrap_or_else(|| max.checked_ilog2().map_or(1, |b| b as usize + 1));
            let optimal = || Cores::<SumVecSpec>::optimal_chunk_length(params.draft, length.saturating_mul(bits));
            params.chunk_length = Some(chunk_length.unwrap_or_else(optimal));
            Ok(Self { core: Cores::new(py, params, ctx)? })
        }

        #[getter]
        fn length(&self) -> usize {
            self.core.params().length.unwrap_or_default()
        }

        /// The largest element (draft 08: `2**bits - 1`).
        #[getter]
        fn max_measurement(&self) -> u128 {
            self.core.params().max_measurement.unwrap_or_default()
        }

        /// Draft 08's bit length of an element (`None` in draft 18).
        #[getter]
        fn bits(&self) -> Option<usize> {
            self.core.params().bits
        }

        #[getter]
        fn chunk_length(&self) -> usize {
            self.core.params().chunk_length.unwrap_or_default()
        }
    }
);

vdaf_class!(
    Prio3Histogram,
    HistogramSpec,
    "Prio3Histogram: each measurement is a bucket index in [0, length), the result the count of each bucket.",
    {
        #[new]
        #[pyo3(signature = (*, length, chunk_length = None, ctx = None, num_aggregators = 2, draft = None))]
        #[pyo3(text_signature = "(*, length, chunk_length=None, ctx=None, num_aggregators=2, draft=18)")]
        fn new(
            py: Python<'_>,
            length: usize,
            chunk_length: Option<usize>,
            ctx: Option<&[u8]>,
            num_aggregators: usize,
            draft: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let mut params = common(py, "Prio3Histogram", draft, num_aggregators)?;
            params.length = Some(length);
            let optimal = || Cores::<HistogramSpec>::optimal_chunk_length(params.draft, length);
            params.chunk_length = Some(chunk_length.unwrap_or_else(optimal));
            Ok(Self { core: Cores::new(py, params, ctx)? })
        }

        #[getter]
        fn length(&self) -> usize {
            self.core.params().length.unwrap_or_default()
        }

        #[getter]
        fn chunk_length(&self) -> usize {
            self.core.params().chunk_length.unwrap_or_default()
        }
    }
);
