//! Poplar1's values between the aggregators' calls, as Python classes (`poplar1.rs` makes and takes them): the
//! aggregation parameter (the level and the candidate prefixes: the collector's question), one aggregator's
//! verification state of one report, its output share and its aggregate share. States and shares carry the
//! aggregation parameter they were made for, so that a share of another level or other prefixes is refused rather
//! than summed; the counts are the crate's `Poplar1FieldVec` (Field64 below the last level, Field255 at it).

use std::sync::Arc;

use prio::codec::{Decode, Encode};
use prio::field::{Field255, Field64, FieldElement};
use prio::idpf::IdpfInput;
use prio::vdaf::poplar1::{Poplar1AggregationParam, Poplar1FieldVec, Poplar1VerifierState};
use prio::vdaf::Aggregatable;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyList, PyTuple};

use crate::errors::{refused, Op};

/// What refusals of the aggregation parameter name.
const SUBJECT: &str = "Poplar1AggregationParam";

/// The most levels the draft's encoding holds (`level` is a `uint16`).
const MAX_LEVEL: usize = u16::MAX as usize;

/// A bit string from Python: a sequence of bools (or the ints 0 and 1), first bit first. A `TypeError` for anything
/// else; `what` names it.
pub(crate) fn bits_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<bool>> {
    if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<pyo3::types::PyString>() {
        let kind = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(PyTypeError::new_err(format!("{what} must be a sequence of bools (first bit first), got {kind}")));
    }
    let mut bits = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let bit = if item.is_instance_of::<PyBool>() {
            item.extract::<bool>()?
        } else if item.is_instance_of::<PyInt>() && matches!(item.extract::<u8>(), Ok(0 | 1)) {
            item.extract::<u8>()? == 1
        } else {
            return Err(PyTypeError::new_err(format!("{what} must hold bools (or the ints 0 and 1), got {item}")));
        };
        bits.push(bit);
    }
    Ok(bits)
}

fn bits_to_py<'py>(py: Python<'py>, bits: impl Iterator<Item = bool>) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, bits.collect::<Vec<_>>())
}

/// The aggregation parameter of one round of collection (draft 18 §8.2.6.6): the `level` of the prefix tree (0 for
/// the first bit) and the candidate prefixes of `level + 1` bits, sorted and without repeats. `to_bytes()` is the
/// draft's encoding (what DAP carries), read back by `from_bytes`.
#[pyclass(frozen, module = "ldp.prio", name = "Poplar1AggregationParam", eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct AggParam {
    pub(crate) inner: Arc<Poplar1AggregationParam>,
    encoded: Vec<u8>,
}

impl AggParam {
    fn of(py: Python<'_>, inner: Poplar1AggregationParam) -> PyResult<Self> {
        let encoded = inner.get_encoded().map_err(|e| refused(py, &SUBJECT, Op::Encode, e))?;
        Ok(AggParam { inner: Arc::new(inner), encoded })
    }

    pub(crate) fn level(&self) -> usize {
        self.inner.level()
    }
}

#[pymethods]
impl AggParam {
    /// The parameter of `level` (0 to 65,535) and `prefixes`: each a sequence of `level + 1` bools, the whole list
    /// sorted (as bit strings) without repeats, at least one. Refused (`PrioError`, operation `parameters`) naming
    /// the first prefix that breaks a rule.
    #[new]
    fn new(py: Python<'_>, level: usize, prefixes: &Bound<'_, PyAny>) -> PyResult<Self> {
        let refuse = |what: String| refused(py, &SUBJECT, Op::Parameters, what);
        if level > MAX_LEVEL {
            return Err(refuse(format!("level must be in [0, {MAX_LEVEL}], got {level}")));
        }
        let mut bits: Vec<Vec<bool>> = Vec::new();
        for (i, prefix) in prefixes.try_iter()?.enumerate() {
            let prefix = bits_of(&prefix?, &format!("prefix {i}"))?;
            if prefix.len() != level + 1 {
                let n = prefix.len();
                return Err(refuse(format!("prefix {i} has {n} bits; a prefix at level {level} has {}", level + 1)));
            }
            if let Some(last) = bits.last() {
                if prefix <= *last {
                    let how = if prefix == *last { "repeats prefix" } else { "sorts before prefix" };
                    return Err(refuse(format!("prefix {i} {how} {}: the prefixes must be sorted, unique", i - 1)));
                }
            }
            bits.push(prefix);
        }
        if bits.is_empty() {
            return Err(refuse("at least one prefix is needed".into()));
        }
        let prefixes = bits.iter().map(|b| IdpfInput::from_bools(b)).collect();
        let inner = Poplar1AggregationParam::try_from_prefixes(prefixes).map_err(|e| refuse(e.to_string()))?;
        Self::of(py, inner)
    }

    /// The parameter of its encoding (the crate's decoding: every byte read, the prefixes' rules checked).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let inner = Poplar1AggregationParam::get_decoded(data).map_err(|e| refused(py, &SUBJECT, Op::Decode, e))?;
        Self::of(py, inner)
    }

    /// The draft's encoding: `level` (u16), the number of prefixes (u32), each prefix packed first bit first.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.encoded)
    }

    /// The level (a prefix has `level + 1` bits).
    #[getter(level)]
    fn py_level(&self) -> usize {
        self.level()
    }

    /// The prefixes, each a tuple of bools.
    #[getter]
    fn prefixes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self.inner.prefixes().iter().map(|p| bits_to_py(py, p.iter())).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    fn __len__(&self) -> usize {
        self.inner.prefixes().len()
    }

    fn __repr__(&self) -> String {
        format!("Poplar1AggregationParam(level={}, {} prefixes)", self.level(), self.__len__())
    }
}

/// One aggregator's state of one report between its steps (`verify_init`, then `verify_next` once or twice): each
/// `verify_next` consumes it. `round` is 0 after `verify_init`, 1 after the first `verify_next`; `to_bytes()` is the
/// crate's encoding, read back by `Poplar1.verify_state_from_bytes`.
#[pyclass(module = "ldp.prio", name = "Poplar1VerifyState")]
pub struct VerifyState {
    pub(crate) agg_id: usize,
    pub(crate) round: u8,
    pub(crate) agg_param: Arc<Poplar1AggregationParam>,
    pub(crate) inner: Option<Poplar1VerifierState>,
}

#[pymethods]
impl VerifyState {
    /// The aggregator it belongs to (0 is the leader).
    #[getter]
    fn agg_id(&self) -> usize {
        self.agg_id
    }

    /// The verification round it waits for the message of (0 or 1).
    #[getter]
    fn round(&self) -> u8 {
        self.round
    }

    /// Whether `verify_next` consumed it.
    #[getter]
    fn used(&self) -> bool {
        self.inner.is_none()
    }

    /// The crate's encoding.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let subject = "Poplar1VerifyState";
        let state = self.inner.as_ref().ok_or_else(|| refused(py, &subject, Op::Encode, "already used"))?;
        let bytes = state.get_encoded().map_err(|e| refused(py, &subject, Op::Encode, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn __repr__(&self) -> String {
        let used = if self.inner.is_none() { ", used" } else { "" };
        format!(
            "Poplar1VerifyState(agg_id={}, level={}, round={}{used})",
            self.agg_id,
            self.agg_param.level(),
            self.round
        )
    }
}

/// `$body` with `$x` bound to the field vector of either variant of a `Poplar1FieldVec`.
macro_rules! each {
    ($vec:expr, $x:ident => $body:expr) => {
        match $vec {
            Poplar1FieldVec::Inner($x) => $body,
            Poplar1FieldVec::Leaf($x) => $body,
        }
    };
}

/// Field elements as Python ints, through their encoding (little-endian, the draft's).
fn ints<'py, F: FieldElement>(py: Python<'py>, elements: &[F]) -> PyResult<Bound<'py, PyList>> {
    let int = py.get_type::<PyInt>();
    let items = elements
        .iter()
        .map(|x| {
            let bytes: Vec<u8> = (*x).into();
            int.call_method1("from_bytes", (PyBytes::new(py, &bytes), "little"))
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// The field's prime as a Python int: the encoding of −1, plus one.
fn prime<'py, F: FieldElement>(py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
    let minus_one: Vec<u8> = (-F::one()).into();
    py.get_type::<PyInt>().call_method1("from_bytes", (PyBytes::new(py, &minus_one), "little"))?.add(1)
}

/// The Python ints `noise` (any sign and size) as field elements, modulo the field's prime.
fn field_ints<F: FieldElement>(py: Python<'_>, noise: &Bound<'_, PyAny>) -> PyResult<Vec<F>> {
    let p = prime::<F>(py)?;
    let mut out = Vec::new();
    for (i, value) in noise.try_iter()?.enumerate() {
        let value = value?;
        if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(format!("noise must hold ints, got {value} at {i}")));
        }
        let bytes: Vec<u8> = value.rem(&p)?.call_method1("to_bytes", (F::ENCODED_SIZE, "little"))?.extract()?;
        out.push(F::try_from(&bytes[..]).map_err(|e| PyTypeError::new_err(e.to_string()))?);
    }
    Ok(out)
}

/// Adds `noise` to `elements` elementwise, when the lengths agree (else the length of `noise`, nothing added).
fn add_ints<F: FieldElement>(py: Python<'_>, elements: &mut [F], noise: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let noise = field_ints::<F>(py, noise)?;
    if noise.len() != elements.len() {
        return Ok(Some(noise.len()));
    }
    elements.iter_mut().zip(noise).for_each(|(x, n)| *x += n);
    Ok(None)
}

/// A Poplar1 share of counts for Python: one per prefix of its aggregation parameter, in its field.
macro_rules! counts_class {
    ($class:ident, $name:literal, $doc:literal, { $($own:tt)* }) => {
        #[doc = $doc]
        #[pyclass(module = "ldp.prio", name = $name)]
        pub struct $class {
            pub(crate) agg_param: Arc<Poplar1AggregationParam>,
            pub(crate) inner: Poplar1FieldVec,
        }

        #[pymethods]
        impl $class {
            $($own)*

            /// The encoded field elements (little-endian, as the draft's test vectors show them).
            fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
                let bytes = self.inner.get_encoded().map_err(|e| refused(py, &$name, Op::Encode, e))?;
                Ok(PyBytes::new(py, &bytes))
            }

            /// The field elements as Python ints in `[0, modulus)`, one per prefix.
            fn field_elements<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                each!(&self.inner, v => ints(py, v))
            }

            /// The field's prime: Field64's below the last level, Field255's (2^255 − 19) at it.
            #[getter]
            fn modulus<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                match &self.inner {
                    Poplar1FieldVec::Inner(_) => prime::<Field64>(py),
                    Poplar1FieldVec::Leaf(_) => prime::<Field255>(py),
                }
            }

            /// The level of the aggregation parameter it counts the prefixes of.
            #[getter]
            fn level(&self) -> usize {
                self.agg_param.level()
            }

            fn __len__(&self) -> usize {
                each!(&self.inner, v => v.len())
            }

            fn __repr__(&self) -> String {
                format!("{}(level={}, {} prefixes)", $name, self.agg_param.level(), self.__len__())
            }
        }
    };
}

counts_class!(
    OutputShare,
    "Poplar1OutputShare",
    "One aggregator's output share of one report: its share of each prefix's count (0 or 1 in total).",
    {}
);
counts_class!(
    AggregateShare,
    "Poplar1AggregateShare",
    "An aggregator's share of each prefix's count over a batch: `accumulate` an output share, `merge` another \
     aggregate share (both in place, both of the same aggregation parameter), `add_integers(noise)` adds signed \
     ints to the counts modulo the field's prime (central noise on a share).",
    {
        /// Adds one output share of the same aggregation parameter.
        fn accumulate(&mut self, py: Python<'_>, output_share: &Bound<'_, OutputShare>) -> PyResult<()> {
            let out = output_share.borrow();
            self.check(py, &out.agg_param, "an output share")?;
            self.inner.accumulate(&out.inner).map_err(|e| refused(py, &"Poplar1AggregateShare", Op::Aggregate, e))
        }

        /// Adds another aggregate share of the same aggregation parameter.
        fn merge(&mut self, py: Python<'_>, other: &Bound<'_, AggregateShare>) -> PyResult<()> {
            let other = other.borrow();
            self.check(py, &other.agg_param, "an aggregate share")?;
            self.inner.merge(&other.inner).map_err(|e| refused(py, &"Poplar1AggregateShare", Op::Aggregate, e))
        }

        /// Adds `noise` (one signed int per prefix, of any size) to the counts, modulo the field's prime.
        fn add_integers(&mut self, py: Python<'_>, noise: &Bound<'_, PyAny>) -> PyResult<()> {
            let want = self.__len__();
            if let Some(got) = each!(&mut self.inner, v => add_ints(py, v, noise))? {
                let message = format!("noise must hold one int per prefix ({want}), got {got}");
                return Err(refused(py, &"Poplar1AggregateShare", Op::Aggregate, message));
            }
            Ok(())
        }
    }
);

impl AggregateShare {
    fn check(&self, py: Python<'_>, other: &Poplar1AggregationParam, what: &str) -> PyResult<()> {
        if *self.agg_param != *other {
            let message = format!("{what} of another aggregation parameter (level {})", other.level());
            return Err(refused(py, &"Poplar1AggregateShare", Op::Aggregate, message));
        }
        Ok(())
    }
}
