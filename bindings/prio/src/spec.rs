//! The four Prio3 types as Python sees them, whatever the draft: how a Python measurement becomes the binding's
//! (checked against the type's parameters) and how an aggregate result becomes Python's. Each draft's module
//! (`draft18.rs`, `draft08.rs`) turns these into its crate's measurement and back.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString};

use crate::params::Params;

/// A measurement that cannot be taken: `Ok(message)` a value out of range (a `PrioError`), `Err(e)` a value of the
/// wrong type (a `TypeError`).
pub(crate) type Refusal = PyResult<String>;

/// What one type is in Python, draft aside.
pub(crate) trait Spec: Send + Sync + 'static {
    /// The measurement, checked: in range for the VDAF's parameters.
    type Measurement;
    /// The aggregate result.
    type Result;

    fn measurement(obj: &Bound<'_, PyAny>, params: &Params) -> Result<Self::Measurement, Refusal>;

    /// A valid measurement (every entry zero), which `Core::lengths` shards to learn the shares' lengths.
    fn zero(params: &Params) -> Self::Measurement;

    fn result<'py>(py: Python<'py>, result: Self::Result) -> PyResult<Bound<'py, PyAny>>;
}

/// An int in `[0, max]`: a `TypeError` for another type, a refusal's message outside the range.
pub(crate) fn int_in_range(obj: &Bound<'_, PyAny>, max: u128, what: &str) -> Result<u128, Refusal> {
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
    type Measurement = bool;
    type Result = u128;

    fn measurement(obj: &Bound<'_, PyAny>, _: &Params) -> Result<bool, Refusal> {
        Ok(int_in_range(obj, 1, "the measurement (a count: 0, 1, False or True)")? == 1)
    }

    fn zero(_: &Params) -> bool {
        false
    }

    fn result<'py>(py: Python<'py>, result: u128) -> PyResult<Bound<'py, PyAny>> {
        Ok(result.into_pyobject(py)?.into_any())
    }
}

impl Spec for SumSpec {
    type Measurement = u128;
    type Result = u128;

    fn measurement(obj: &Bound<'_, PyAny>, params: &Params) -> Result<u128, Refusal> {
        int_in_range(obj, params.max_measurement.unwrap_or_default(), "the measurement (a sum's summand)")
    }

    fn zero(_: &Params) -> u128 {
        0
    }

    fn result<'py>(py: Python<'py>, result: u128) -> PyResult<Bound<'py, PyAny>> {
        Ok(result.into_pyobject(py)?.into_any())
    }
}

impl Spec for SumVecSpec {
    type Measurement = Vec<u128>;
    type Result = Vec<u128>;

    fn measurement(obj: &Bound<'_, PyAny>, params: &Params) -> Result<Vec<u128>, Refusal> {
        let (length, max) = (params.length.unwrap_or_default(), params.max_measurement.unwrap_or_default());
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
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
    type Measurement = usize;
    type Result = Vec<u128>;

    fn measurement(obj: &Bound<'_, PyAny>, params: &Params) -> Result<usize, Refusal> {
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
