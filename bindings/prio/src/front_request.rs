//! One request of the HTTP front (`front.rs`) as Python sees it (`FrontRequest`), what the front holds of it until
//! Python takes it (`Pending`), and the leader's uploads opened as they arrive (`Opener`).

use std::net::SocketAddr;
use std::sync::Mutex;

use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::StatusCode;
use ldp_client::dap::{self as client, Aggregator, Report, TASK_ID_LEN};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tokio::sync::oneshot;

use crate::dap::HpkeKeypair;

/// An answer: status, headers, body.
pub(crate) type Answer = (u16, Vec<(String, Vec<u8>)>, Vec<u8>);

/// A request read and waiting for Python.
pub(crate) struct Pending {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: String,
    pub(crate) headers: Vec<(Vec<u8>, Vec<u8>)>,
    pub(crate) body: Bytes,
    pub(crate) body_error: Option<&'static str>,
    pub(crate) peer: SocketAddr,
    pub(crate) opened: Option<Option<Vec<u8>>>,
    pub(crate) answer: oneshot::Sender<Answer>,
}

/// The leader's uploads opened as they arrive (`HttpFront`'s `keypair` and `upload_tasks`): the HPKE open, the
/// door's largest cost, on the front's threads as each upload's body is read, so that it overlaps the other
/// requests' reading and Python's checks and writes instead of running in Python's batch.
pub(crate) struct Opener {
    pub(crate) keypair: Py<HpkeKeypair>,
    pub(crate) tasks: std::collections::HashMap<String, [u8; TASK_ID_LEN]>,
}

impl Opener {
    /// The upload route's task ID of a raw path (`/tasks/{task}/reports`, the task as the front was given it).
    pub(crate) fn task(&self, path: &str) -> Option<&[u8; TASK_ID_LEN]> {
        let named = path.strip_prefix("/tasks/")?.strip_suffix("/reports")?;
        self.tasks.get(named)
    }

    /// The leader's input share of an upload's body: `None` when the body is no report or the share does not open
    /// (Python's checks then say which refusal it is).
    pub(crate) fn open(&self, task_id: &[u8; TASK_ID_LEN], body: &[u8]) -> Option<Vec<u8>> {
        let report = Report::decode(body).ok()?;
        let keypair = &self.keypair.get().inner;
        client::open_input_share(
            keypair,
            Aggregator::Leader,
            task_id,
            &report.metadata,
            &report.public_share,
            &report.leader_encrypted_input_share,
        )
        .ok()
    }
}

/// One request, as Python sees it: what was read, and `respond` (exactly once).
#[pyclass(frozen, module = "ldp.prio")]
pub struct FrontRequest {
    #[pyo3(get)]
    method: String,
    /// The path as sent (percent-encoded), without the query.
    #[pyo3(get)]
    path: String,
    /// The query string as sent, without its `?`.
    #[pyo3(get)]
    query: String,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Bytes,
    /// `None`, or why the body is not here: `too_large`, `timeout`, `broken`.
    #[pyo3(get)]
    body_error: Option<&'static str>,
    peer: SocketAddr,
    opened: Option<Option<Vec<u8>>>,
    answer: Mutex<Option<oneshot::Sender<Answer>>>,
}

impl From<Pending> for FrontRequest {
    fn from(p: Pending) -> Self {
        FrontRequest {
            method: p.method,
            path: p.path,
            query: p.query,
            headers: p.headers,
            body: p.body,
            body_error: p.body_error,
            peer: p.peer,
            opened: p.opened,
            answer: Mutex::new(Some(p.answer)),
        }
    }
}

#[pymethods]
impl FrontRequest {
    /// The body's bytes (empty when `body_error` is set).
    #[getter]
    fn body<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.body)
    }

    /// The headers as sent, names in lower case: a list of `(name, value)` byte pairs (ASGI's form).
    #[getter]
    fn headers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pairs = self.headers.iter().map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, k), PyBytes::new(py, v)]));
        PyList::new(py, pairs.collect::<PyResult<Vec<_>>>()?)
    }

    /// The first value of header `name` (any case) as text, or `None` (absent, or not visible ASCII).
    fn header(&self, name: &str) -> Option<String> {
        let name = name.to_ascii_lowercase();
        let (_, value) = self.headers.iter().find(|(k, _)| k.as_slice() == name.as_bytes())?;
        String::from_utf8(value.clone()).ok()
    }

    /// Whether the front opened this upload's leader share as it arrived (`HttpFront`'s `upload_tasks`).
    #[getter]
    fn open_tried(&self) -> bool {
        self.opened.is_some()
    }

    /// The leader's input share the front opened, or `None` (not tried, or it does not open).
    #[getter]
    fn opened<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.opened.as_ref()?.as_ref().map(|share| PyBytes::new(py, share))
    }

    /// The client's address: `(host, port)`.
    #[getter]
    fn peer(&self) -> (String, u16) {
        (self.peer.ip().to_string(), self.peer.port())
    }

    /// Answer the request: `status`, `headers` as `(name, value)` pairs, `body`. `RuntimeError` when it was answered
    /// already; `ValueError` for a status or header hyper cannot send. A request whose client has gone is answered
    /// all the same (the answer is dropped).
    #[pyo3(signature = (status, headers, body))]
    fn respond(&self, status: u16, headers: Vec<(String, Vec<u8>)>, body: Vec<u8>) -> PyResult<()> {
        if StatusCode::from_u16(status).is_err() {
            return Err(PyValueError::new_err(format!("{status} is no HTTP status")));
        }
        for (name, value) in &headers {
            if HeaderName::from_bytes(name.as_bytes()).is_err() || HeaderValue::from_bytes(value).is_err() {
                return Err(PyValueError::new_err(format!("the header {name:?} cannot be sent")));
            }
        }
        let sender = self.answer.lock().unwrap_or_else(|p| p.into_inner()).take();
        let sender = sender.ok_or_else(|| PyRuntimeError::new_err("this request was answered already"))?;
        let _ = sender.send((status, headers, body));
        Ok(())
    }

    /// Whether the request was answered.
    #[getter]
    fn answered(&self) -> bool {
        self.answer.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }
}
