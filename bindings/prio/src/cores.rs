//! A type's `Core` of either draft (`Cores`), as each Python class holds it, and what the classes' constructors share:
//! the common arguments, Sum's and SumVec's bound, the default chunk length of each draft's crate, the arguments that
//! make a VDAF again (pickling).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::backend::Backend;
use crate::draft08::{Flp08, V08};
use crate::draft18::{Flp18, V18};
use crate::params::{self, max_of_bits, Draft, Params};
use crate::vdaf::{Core, ShardedBytes};

/// A type's `Core`, of one draft or the other.
pub(crate) enum Cores<S: Flp18 + Flp08> {
    D18(Core<V18<S>>),
    D08(Core<V08<S>>),
}

/// `$body` with `$core` bound to the `Core` of either draft.
macro_rules! on_draft {
    ($cores:expr, $core:ident => $body:expr) => {
        match $cores {
            $crate::cores::Cores::D18($core) => $body,
            $crate::cores::Cores::D08($core) => $body,
        }
    };
}
pub(crate) use on_draft;

impl<S: Flp18 + Flp08> Cores<S> {
    /// The VDAF of `params` (its draft among them) and context string (`params::ctx`'s rule).
    pub(crate) fn new(py: Python<'_>, params: Params, ctx: Option<&[u8]>) -> PyResult<Self> {
        let ctx = params::ctx(py, &params, ctx)?;
        Ok(match params.draft {
            Draft::D18 => Cores::D18(Core::new(py, params, ctx)?),
            Draft::D08 => Cores::D08(Core::new(py, params, ctx)?),
        })
    }

    /// The crate's `optimal_chunk_length` of the draft, for a measurement of that many field elements.
    pub(crate) fn optimal_chunk_length(draft: Draft, measurement_length: usize) -> usize {
        match draft {
            Draft::D18 => V18::<S>::optimal_chunk_length(measurement_length),
            Draft::D08 => V08::<S>::optimal_chunk_length(measurement_length),
        }
    }

    pub(crate) fn params(&self) -> &Params {
        on_draft!(self, c => c.params())
    }

    pub(crate) fn ctx(&self) -> &[u8] {
        on_draft!(self, c => &c.ctx)
    }

    /// `shard` as bytes (`dap.rs`'s `seal_report`).
    pub(crate) fn shard_bytes(
        &self,
        py: Python<'_>,
        measurement: &Bound<'_, PyAny>,
        nonce: Option<&[u8]>,
        rand: Option<&[u8]>,
    ) -> PyResult<ShardedBytes> {
        on_draft!(self, c => c.shard_bytes(py, measurement, nonce, rand))
    }

    /// The constructor's keyword arguments that make this VDAF again (pickling): its parameters, context string,
    /// number of aggregators and draft.
    pub(crate) fn kwargs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (params, kwargs) = (self.params(), PyDict::new(py));
        if let Some(length) = params.length {
            kwargs.set_item("length", length)?;
        }
        match (params.bits, params.max_measurement) {
            (Some(bits), _) => kwargs.set_item("bits", bits)?,
            (None, Some(max)) => kwargs.set_item("max_measurement", max)?,
            (None, None) => {}
        }
        if let Some(chunk) = params.chunk_length {
            kwargs.set_item("chunk_length", chunk)?;
        }
        kwargs.set_item("ctx", PyBytes::new(py, self.ctx()))?;
        kwargs.set_item("num_aggregators", params.num_aggregators)?;
        kwargs.set_item("draft", params.draft.number())?;
        Ok(kwargs)
    }
}

/// The parameters every type starts from: its name, draft and number of aggregators.
pub(crate) fn common(
    py: Python<'_>,
    name: &'static str,
    draft: Option<&Bound<'_, PyAny>>,
    aggregators: usize,
) -> PyResult<Params> {
    let mut params = Params::bare(name, params::draft(py, name, draft)?);
    params.num_aggregators = params::aggregators(py, &params, aggregators)?;
    Ok(params)
}

/// Sum's and SumVec's bound: draft 18's `max_measurement`, draft 08's `bits` (given, or from a `max_measurement` of
/// `2**bits - 1`), and the largest value either way.
pub(crate) fn bound(
    py: Python<'_>,
    params: &mut Params,
    max_measurement: Option<u128>,
    bits: Option<usize>,
) -> PyResult<()> {
    params.bits = params::bits(py, params, max_measurement, bits)?;
    params.max_measurement = params.bits.map(max_of_bits).or(max_measurement);
    Ok(())
}
