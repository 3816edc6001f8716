//! What the aggregators hold between calls: a verification state, an output share, an aggregate share. Each carries
//! the parameters of the VDAF that made it, so a share of another VDAF (another type, draft, length or number of
//! aggregators) is refused rather than silently mixed.

use std::sync::Arc;

use prio::codec::Encode;
use prio::field::{Field128, Field64, FieldElementWithInteger, NttFriendlyFieldElement};
use prio::vdaf::{Aggregatable, AggregateShare as CrateAggregateShare, OutputShare as CrateOutputShare};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList};

use crate::backend::AnyState;
use crate::errors::{refused, Op};
use crate::params::Params;

pub(crate) enum OutputInner {
    F64(CrateOutputShare<Field64>),
    F128(CrateOutputShare<Field128>),
}

#[derive(Clone)]
pub(crate) enum AggregateInner {
    F64(CrateAggregateShare<Field64>),
    F128(CrateAggregateShare<Field128>),
}

/// The two fields of the four Prio3 types (Field64: Count, and Sum in draft 18; Field128: SumVec, Histogram, and Sum
/// in draft 08), in prio 0.18.1's representation, which holds the output and aggregate shares of both drafts (the
/// primes are the same: `draft08.rs`); and the way each wraps into the enums above.
pub(crate) trait Field: NttFriendlyFieldElement + Send + Sync + 'static {
    fn wrap_output(share: CrateOutputShare<Self>) -> OutputInner;
    fn output_ref(share: &OutputInner) -> Option<&CrateOutputShare<Self>>;
    fn wrap_aggregate(share: CrateAggregateShare<Self>) -> AggregateInner;
    fn aggregate_ref(share: &AggregateInner) -> Option<&CrateAggregateShare<Self>>;
    fn to_u128(self) -> u128;
    /// `value` must be below the modulus.
    fn from_u128(value: u128) -> Self;
    fn modulus_u128() -> u128;
}

macro_rules! field {
    ($field:ty, $variant:ident, $int:ty) => {
        impl Field for $field {
            fn wrap_output(share: CrateOutputShare<Self>) -> OutputInner {
                OutputInner::$variant(share)
            }
            fn output_ref(share: &OutputInner) -> Option<&CrateOutputShare<Self>> {
                match share {
                    OutputInner::$variant(share) => Some(share),
                    _ => None,
                }
            }
            fn wrap_aggregate(share: CrateAggregateShare<Self>) -> AggregateInner {
                AggregateInner::$variant(share)
            }
            fn aggregate_ref(share: &AggregateInner) -> Option<&CrateAggregateShare<Self>> {
                match share {
                    AggregateInner::$variant(share) => Some(share),
                    _ => None,
                }
            }
            fn to_u128(self) -> u128 {
                <$int>::from(self) as u128
            }
            fn from_u128(value: u128) -> Self {
                Self::from(value as $int)
            }
            fn modulus_u128() -> u128 {
                <$field as FieldElementWithInteger>::modulus() as u128
            }
        }
    };
}

field!(Field64, F64, u64);
field!(Field128, F128, u128);

/// `$body` with `$x` bound to the field vector of either variant of an inner enum.
macro_rules! each {
    ($inner:expr, $enum:ident, $x:ident => $body:expr) => {
        match $inner {
            $enum::F64($x) => $body,
            $enum::F128($x) => $body,
        }
    };
}

fn elements_to_py<'py, F: Field>(py: Python<'py>, elements: &[F]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, elements.iter().map(|x| x.to_u128()))
}

fn encoded<'py, T: Encode>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyBytes>> {
    let bytes =
        value.get_encoded().map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("encoding failed: {e}")))?;
    Ok(PyBytes::new(py, &bytes))
}

/// One aggregator's state between `verify_init` and `verify_next` (used once: `verify_next` consumes it). Its
/// `to_bytes()` is the crate's encoding (its draft's crate), read back by the VDAF's `verify_state_from_bytes(agg_id,
/// data)`, so an aggregator can keep it while the other answers. It holds the state of either crate (`AnyState`); its
/// `Params` (the draft among them) keep it to its VDAF.
#[pyclass(module = "ldp.prio", name = "VerifyState")]
pub struct VerifyState {
    pub(crate) params: Arc<Params>,
    pub(crate) agg_id: usize,
    pub(crate) inner: Option<Box<dyn AnyState>>,
}

#[pymethods]
impl VerifyState {
    /// The aggregator this state belongs to (0 is the leader).
    #[getter]
    fn agg_id(&self) -> usize {
        self.agg_id
    }

    /// Whether `verify_next` has consumed it.
    #[getter]
    fn used(&self) -> bool {
        self.inner.is_none()
    }

    /// The crate's encoding of the state.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match &self.inner {
            Some(inner) => {
                let bytes = inner.encoded().map_err(|e| refused(py, &self.params, Op::Encode, e))?;
                Ok(PyBytes::new(py, &bytes))
            }
            None => Err(refused(py, &self.params, Op::Decode, "this VerifyState was already used by verify_next")),
        }
    }

    fn __repr__(&self) -> String {
        let used = if self.inner.is_none() { ", used" } else { "" };
        format!("VerifyState({}, agg_id={}{used})", self.params, self.agg_id)
    }
}

/// One aggregator's output share of one report: what `verify_next` gives, to be added to an aggregate share.
#[pyclass(frozen, module = "ldp.prio", name = "OutputShare")]
pub struct OutputShare {
    pub(crate) params: Arc<Params>,
    pub(crate) inner: OutputInner,
}

#[pymethods]
impl OutputShare {
    /// The encoded field elements (little-endian, as the draft's test vectors show them).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        each!(&self.inner, OutputInner, s => encoded(py, s))
    }

    /// The field elements as Python ints in `[0, modulus)`.
    fn field_elements<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        each!(&self.inner, OutputInner, s => elements_to_py(py, s.as_ref()))
    }

    fn __len__(&self) -> usize {
        each!(&self.inner, OutputInner, s => s.as_ref().len())
    }

    fn __repr__(&self) -> String {
        format!("OutputShare({}, {} elements)", self.params, self.__len__())
    }
}

/// An aggregator's share of the aggregate: mergeable (`accumulate` an output share, `merge` another aggregate
/// share, both in place), encoded by `to_bytes()` and read back by the VDAF's `aggregate_share_from_bytes`. Its
/// field elements are `field_elements()` (ints in `[0, modulus)`), so that noise can be added to a share:
/// `add_integers(noise)` adds signed ints of any size modulo the field's prime.
#[pyclass(module = "ldp.prio", name = "AggregateShare")]
pub struct AggregateShare {
    pub(crate) params: Arc<Params>,
    pub(crate) inner: AggregateInner,
}

impl AggregateShare {
    fn check_params(&self, py: Python<'_>, op: Op, other: &Params, what: &str) -> PyResult<()> {
        if *self.params != *other {
            return Err(refused(py, &self.params, op, format!("{what} of {other}, not of this VDAF")));
        }
        Ok(())
    }
}

#[pymethods]
impl AggregateShare {
    /// Add one output share (of the same VDAF) to this aggregate share.
    fn accumulate(&mut self, py: Python<'_>, output_share: &Bound<'_, OutputShare>) -> PyResult<()> {
        let out = output_share.get();
        self.check_params(py, Op::Aggregate, &out.params, "an output share")?;
        let result = match (&mut self.inner, &out.inner) {
            (AggregateInner::F64(a), OutputInner::F64(o)) => a.accumulate(o),
            (AggregateInner::F128(a), OutputInner::F128(o)) => a.accumulate(o),
            _ => return Err(refused(py, &self.params, Op::Aggregate, "an output share of another field")),
        };
        result.map_err(|e| refused(py, &self.params, Op::Aggregate, e))
    }

    /// Add another aggregate share (of the same VDAF: another batch, or another process's part) to this one.
    fn merge(slf: &Bound<'_, Self>, other: &Bound<'_, AggregateShare>) -> PyResult<()> {
        let py = slf.py();
        let other_inner = if other.is(slf) {
            slf.borrow().inner.clone() // merging a share with itself doubles it
        } else {
            let other = other.try_borrow()?;
            slf.borrow().check_params(py, Op::Aggregate, &other.params, "an aggregate share")?;
            other.inner.clone()
        };
        let mut this = slf.borrow_mut();
        let params = this.params.clone();
        let result = match (&mut this.inner, &other_inner) {
            (AggregateInner::F64(a), AggregateInner::F64(b)) => a.merge(b),
            (AggregateInner::F128(a), AggregateInner::F128(b)) => a.merge(b),
            _ => return Err(refused(py, &params, Op::Aggregate, "an aggregate share of another field")),
        };
        result.map_err(|e| refused(py, &params, Op::Aggregate, e))
    }

    /// The encoded field elements (little-endian, as the draft's test vectors show them).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        each!(&self.inner, AggregateInner, s => encoded(py, s))
    }

    /// The field elements as Python ints in `[0, modulus)`.
    fn field_elements<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        each!(&self.inner, AggregateInner, s => elements_to_py(py, s.as_ref()))
    }

    /// The field's prime: 2**64 - 2**32 + 1 (Count, and Sum in draft 18) or 2**128 - 28 * 2**64 + 1 (SumVec,
    /// Histogram, and Sum in draft 08).
    #[getter]
    fn modulus(&self) -> u128 {
        match &self.inner {
            AggregateInner::F64(_) => Field64::modulus_u128(),
            AggregateInner::F128(_) => Field128::modulus_u128(),
        }
    }

    /// Add `values` (one int per element, negative or larger than the modulus allowed) modulo the field's prime:
    /// central noise on a share, the wrap-around handled.
    fn add_integers(&mut self, py: Python<'_>, values: &Bound<'_, PyAny>) -> PyResult<()> {
        let modulus = self.modulus();
        let expected = self.__len__();
        let mut reduced = Vec::with_capacity(expected);
        for value in values.try_iter()? {
            let value = value?;
            if !value.is_instance_of::<PyInt>() {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "add_integers takes ints, got {}",
                    value.get_type().name()?
                )));
            }
            reduced.push(value.rem(modulus)?.extract::<u128>()?);
        }
        if reduced.len() != expected {
            return Err(refused(
                py,
                &self.params,
                Op::Aggregate,
                format!("add_integers takes {expected} values (one per element), got {}", reduced.len()),
            ));
        }
        let params = self.params.clone();
        let result = match &mut self.inner {
            AggregateInner::F64(a) => a.merge(&from_ints(&reduced)),
            AggregateInner::F128(a) => a.merge(&from_ints(&reduced)),
        };
        result.map_err(|e| refused(py, &params, Op::Aggregate, e))
    }

    /// A copy of this aggregate share.
    fn copy(&self) -> Self {
        AggregateShare { params: self.params.clone(), inner: self.inner.clone() }
    }

    fn __copy__(&self) -> Self {
        self.copy()
    }

    fn __len__(&self) -> usize {
        each!(&self.inner, AggregateInner, s => s.as_ref().len())
    }

    fn __repr__(&self) -> String {
        format!("AggregateShare({}, {} elements)", self.params, self.__len__())
    }
}

/// An aggregate share of ints already reduced below the field's modulus.
pub(crate) fn from_ints<F: Field>(values: &[u128]) -> CrateAggregateShare<F> {
    CrateAggregateShare::from(values.iter().map(|&v| F::from_u128(v)).collect::<Vec<F>>())
}
