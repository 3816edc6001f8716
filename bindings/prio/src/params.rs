//! A VDAF's identity (`Params`: its type, its draft and parameters, not its context string), which every share
//! carries so that a share of another VDAF is refused rather than mixed; and the rules of the constructors'
//! arguments that do not depend on the type: the draft, the context string, the number of aggregators, and draft
//! 08's `bits` against `max_measurement`.

use std::fmt;

use pyo3::prelude::*;
use pyo3::types::PyInt;

use crate::errors::{refused, Op};

/// The VDAF drafts this binding speaks, oldest first (the module's `VDAF_DRAFTS`).
pub(crate) const DRAFTS: [u8; 2] = [8, 18];

/// Which draft (and so which `prio` crate) a VDAF object is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Draft {
    /// VDAF-08: the prio crate 0.16.8 (`prio08`, `src/draft08.rs`).
    D08,
    /// VDAF-18: the prio crate 0.18.1 (`src/draft18.rs`).
    D18,
}

impl Draft {
    pub(crate) fn number(self) -> u8 {
        match self {
            Draft::D08 => 8,
            Draft::D18 => 18,
        }
    }
}

/// A VDAF's identity: its type, draft and parameters (not its context string). Shares compare these before mixing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    pub(crate) name: &'static str,
    pub(crate) draft: Draft,
    pub(crate) num_aggregators: u8,
    pub(crate) length: Option<usize>,
    /// The largest measurement (Sum) or element (SumVec): draft 18's parameter, draft 08's `2**bits - 1`.
    pub(crate) max_measurement: Option<u128>,
    /// Draft 08's parameter of Sum and SumVec (VDAF-08 §7.4): each measurement or element in `[0, 2**bits)`.
    pub(crate) bits: Option<usize>,
    pub(crate) chunk_length: Option<usize>,
}

impl Params {
    /// The parameters of a type before its own are known (the subject of the refusals of the common arguments).
    pub(crate) fn bare(name: &'static str, draft: Draft) -> Params {
        Params { name, draft, num_aggregators: 2, length: None, max_measurement: None, bits: None, chunk_length: None }
    }
}

impl fmt::Display for Params {
    /// `Prio3SumVec(length=3, max_measurement=7, chunk_length=2, num_aggregators=2)`, and for draft 08 its
    /// parameters (`bits` rather than `max_measurement`) followed by `draft 08`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        if let Some(length) = self.length {
            write!(f, "length={length}, ")?;
        }
        match (self.bits, self.max_measurement) {
            (Some(bits), _) => write!(f, "bits={bits}, ")?,
            (None, Some(max)) => write!(f, "max_measurement={max}, ")?,
            (None, None) => {}
        }
        if let Some(chunk) = self.chunk_length {
            write!(f, "chunk_length={chunk}, ")?;
        }
        write!(f, "num_aggregators={}", self.num_aggregators)?;
        match self.draft {
            Draft::D08 => write!(f, ", draft 08)"),
            Draft::D18 => write!(f, ")"),
        }
    }
}

/// The `draft` argument: 18 when not given, else exactly the int 8 or 18.
pub(crate) fn draft(py: Python<'_>, name: &'static str, draft: Option<&Bound<'_, PyAny>>) -> PyResult<Draft> {
    let Some(obj) = draft else { return Ok(Draft::D18) };
    let number = if obj.is_exact_instance_of::<PyInt>() { obj.extract::<i64>().ok() } else { None };
    match number {
        Some(8) => Ok(Draft::D08),
        Some(18) => Ok(Draft::D18),
        _ => {
            let got = obj.repr().map(|r| r.to_string()).unwrap_or_default();
            let what = format!("draft must be one of the VDAF drafts this binding speaks, 8 or 18 (ints), got {got}");
            Err(refused(py, &name, Op::Parameters, what))
        }
    }
}

/// The context string: draft 18 binds every operation to one (required, as before drafts were a parameter); draft
/// 08 has none, so it must be empty (the default there).
pub(crate) fn ctx(py: Python<'_>, params: &Params, ctx: Option<&[u8]>) -> PyResult<Vec<u8>> {
    match (params.draft, ctx) {
        (Draft::D18, Some(ctx)) => Ok(ctx.to_vec()),
        (Draft::D18, None) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{}() missing the keyword argument 'ctx' (the application's context string: VDAF draft 18 binds every \
             operation to it)",
            params.name
        ))),
        (Draft::D08, None) => Ok(Vec::new()),
        (Draft::D08, Some([])) => Ok(Vec::new()),
        (Draft::D08, Some(ctx)) => {
            let what = format!(
                "VDAF draft 08 has no context string (VDAF-08 binds no application context): ctx must be empty \
                 (b\"\", the default for draft 8), got {} bytes",
                ctx.len()
            );
            Err(refused(py, params, Op::Parameters, what))
        }
    }
}

/// The number of aggregators as the crates take it: at least two (a Prio3 share of one aggregator would be the
/// measurement; the crate 0.16.8 does not refuse it), at most what a byte holds (the crates may refuse fewer).
pub(crate) fn aggregators(py: Python<'_>, params: &Params, num_aggregators: usize) -> PyResult<u8> {
    match u8::try_from(num_aggregators) {
        Ok(n) if n >= 2 => Ok(n),
        _ => {
            let subject = Params { num_aggregators: 0, ..params.clone() };
            let what = format!("num_aggregators must be in [2, 255], got {num_aggregators}");
            Err(refused(py, &subject, Op::Parameters, what))
        }
    }
}

/// `2**bits - 1`, the largest value of `bits` bits (0 for no bits; the crates refuse `bits` their field cannot
/// hold before this is asked).
pub(crate) fn max_of_bits(bits: usize) -> u128 {
    match bits {
        0 => 0,
        1..=128 => u128::MAX >> (128 - bits),
        _ => u128::MAX,
    }
}

/// Draft 08's `bits` for Sum and SumVec: `bits=` itself, or `max_measurement=` when it is `2**bits - 1`; exactly one
/// of them. Draft 18 takes `max_measurement=` alone (`None` returned: it has no `bits`).
pub(crate) fn bits(
    py: Python<'_>,
    params: &Params,
    max_measurement: Option<u128>,
    bits: Option<usize>,
) -> PyResult<Option<usize>> {
    let refuse = |what: String| Err(refused(py, params, Op::Parameters, what));
    match (params.draft, max_measurement, bits) {
        (Draft::D18, Some(_), None) => Ok(None),
        (Draft::D18, _, Some(bits)) => refuse(format!(
            "bits={bits} is draft 08's parameter (VDAF-08 §7.4); draft 18 takes max_measurement= (any int, not only \
             2**bits - 1)"
        )),
        (_, None, None) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{}() missing the keyword argument 'max_measurement'{}",
            params.name,
            if params.draft == Draft::D08 { " (or, for draft 8, 'bits')" } else { "" }
        ))),
        (Draft::D08, Some(max), Some(bits)) => {
            refuse(format!("takes bits= or max_measurement=, not both (got bits={bits} and max_measurement={max})"))
        }
        (Draft::D08, None, Some(bits)) => Ok(Some(bits)),
        // 2**bits - 1 is `bits` ones: adding one carries past every bit
        (Draft::D08, Some(max), None) if max & max.wrapping_add(1) == 0 => {
            Ok(Some((128 - max.leading_zeros()) as usize))
        }
        (Draft::D08, Some(max), None) => refuse(not_all_ones(max)),
    }
}

/// Why draft 08 refuses a `max_measurement` that is not `2**bits - 1` (so not 0 either): the nearest values it
/// takes, and `bits=`.
fn not_all_ones(max: u128) -> String {
    let below = max.ilog2() as usize; // 2**below - 1 < max < 2**(below + 1) - 1
    let above = match below + 1 {
        128 => "none above".to_string(),
        bits => format!("{} (bits={bits})", max_of_bits(bits)),
    };
    format!(
        "VDAF draft 08 bounds a measurement by its bit length (VDAF-08 §7.4): max_measurement must be 2**bits - 1, \
         got {max}; the nearest it takes are {} (bits={below}) and {above}; or give bits= instead",
        max_of_bits(below)
    )
}
