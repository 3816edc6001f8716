//! The leader's door on many reports at once (issue 86): each report's input share opened exactly as
//! `open_input_share` opens one (`ldp_client::dap::open_input_share`), the reports spread over the cores with the GIL
//! released (`parallel::in_parts`). A share that does not decode or open is `None` in its place: the door refuses
//! that report (`hpke_decrypt_error`) and takes the others.

use ldp_client::dap::{self as client, HpkeCiphertext, ReportMetadata, REPORT_ID_LEN, TASK_ID_LEN};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::dap::{err, fixed, role, uint, HpkeKeypair};
use crate::errors::Op;
use crate::parallel::in_parts;

/// One report to open, its bytes still Python's (a `bytes` object never changes: read with the GIL released).
struct Held<'py> {
    metadata: ReportMetadata,
    public_share: Bound<'py, PyBytes>,
    ciphertext: Bound<'py, PyBytes>,
}

fn read<'py>(py: Python<'py>, reports: &Bound<'py, PyAny>, subject: &str, op: Op) -> PyResult<Vec<Held<'py>>> {
    let mut held = Vec::new();
    for (i, item) in reports.try_iter()?.enumerate() {
        let item = item?;
        let tuple = item.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err(format!("reports[{i}] must be a tuple (report_id, time, public_share, ciphertext)"))
        })?;
        if tuple.len() != 4 {
            return Err(err(py, subject, op, format!("reports[{i}] must have 4 items, got {}", tuple.len())));
        }
        let bytes = |k: usize, name: &str| -> PyResult<Bound<'py, PyBytes>> {
            tuple
                .get_item(k)?
                .cast_into::<PyBytes>()
                .map_err(|_| PyTypeError::new_err(format!("reports[{i}]: {name} must be bytes")))
        };
        let report_id = fixed::<REPORT_ID_LEN>(py, bytes(0, "the report ID")?.as_bytes(), "report_id", subject, op)?;
        let time = uint(py, &tuple.get_item(1)?, "time", u64::MAX, subject, op)?;
        held.push(Held {
            metadata: ReportMetadata { report_id, time },
            public_share: bytes(2, "the public share")?,
            ciphertext: bytes(3, "the ciphertext")?,
        });
    }
    Ok(held)
}

/// Each report's input share (`reports`: tuples `(report_id, time, public_share, ciphertext)`, the ciphertext in
/// DAP's `HpkeCiphertext` encoding) opened with `keypair` as `role`: the payloads in order, `None` for one that does
/// not decode or open. Arguments of the wrong type or size are refused whole, naming the item.
#[pyfunction]
#[pyo3(signature = (keypair, *, role, task_id, reports))]
pub fn open_input_shares<'py>(
    py: Python<'py>,
    keypair: &Bound<'py, HpkeKeypair>,
    role: &str,
    task_id: &[u8],
    reports: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let (subject, op) = ("open_input_shares", Op::Open);
    let aggregator = self::role(py, role, subject, op)?;
    let task_id = fixed::<TASK_ID_LEN>(py, task_id, "task_id", subject, op)?;
    let held = read(py, reports, subject, op)?;
    let items: Vec<(&ReportMetadata, &[u8], &[u8])> =
        held.iter().map(|h| (&h.metadata, h.public_share.as_bytes(), h.ciphertext.as_bytes())).collect();
    let keypair = &keypair.get().inner;
    let opened: Vec<Option<Vec<u8>>> = py.detach(|| {
        let parts = in_parts(&items, |part| {
            part.iter()
                .map(|(metadata, public_share, ciphertext)| {
                    let ciphertext = HpkeCiphertext::decode(ciphertext).ok()?;
                    client::open_input_share(keypair, aggregator, &task_id, metadata, public_share, &ciphertext).ok()
                })
                .collect::<Vec<_>>()
        });
        parts.into_iter().flatten().collect()
    });
    PyList::new(py, opened.iter().map(|o| o.as_ref().map(|payload| PyBytes::new(py, payload))))
}
