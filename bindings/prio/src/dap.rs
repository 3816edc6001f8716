//! DAP-09 reports and HPKE for Python: the native client's `ldp_client::dap` (one implementation of the upload
//! encoding and the sealing for devices and aggregators), its types as Python classes and its calls as functions.
//! Every refusal is a `PrioError` naming the operation: `decode` (bytes that are no such message), `encode`, `seal`,
//! `open`, `parameters` (a key pair that cannot be made).

use ldp_client::dap::{
    self, Aggregator, HpkeCiphertext, HpkeConfig as ClientConfig, HpkeConfigList, HpkeKeypair as ClientKeypair,
    HpkeSuite, Report, ReportMetadata, REPORT_ID_LEN, TASK_ID_LEN,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList};

use crate::classes::{Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};
use crate::errors::{refused, Op};
use crate::vdaf::ShardedBytes;

pub(crate) fn err(py: Python<'_>, subject: &str, op: Op, what: impl std::fmt::Display) -> PyErr {
    refused(py, &subject, op, what)
}

/// An unsigned int argument: a `TypeError` for another type, a `PrioError` outside `[0, max]`.
pub(crate) fn uint(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    name: &str,
    max: u64,
    subject: &str,
    op: Op,
) -> PyResult<u64> {
    if !obj.is_instance_of::<PyInt>() {
        let kind = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(PyTypeError::new_err(format!("{name} must be an int, got {kind}")));
    }
    match obj.extract::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(err(py, subject, op, format!("{name} must be an int in [0, {max}], got {obj}"))),
    }
}

pub(crate) fn fixed<const N: usize>(
    py: Python<'_>,
    bytes: &[u8],
    name: &str,
    subject: &str,
    op: Op,
) -> PyResult<[u8; N]> {
    bytes.try_into().map_err(|_| err(py, subject, op, format!("{name} must be {N} bytes, got {}", bytes.len())))
}

pub(crate) fn role(py: Python<'_>, role: &str, subject: &str, op: Op) -> PyResult<Aggregator> {
    match role {
        "leader" => Ok(Aggregator::Leader),
        "helper" => Ok(Aggregator::Helper),
        other => Err(err(py, subject, op, format!("role must be \"leader\" or \"helper\", got {other:?}"))),
    }
}

/// DAP-09's `HpkeConfig`: an aggregator's (or the collector's) HPKE public key, its suite and its one-byte id.
#[pyclass(frozen, module = "ldp.prio", eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HpkeConfig {
    pub(crate) inner: ClientConfig,
}

#[pymethods]
impl HpkeConfig {
    /// The config encoded in `data` (all of it: trailing bytes are refused).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let inner = ClientConfig::decode(data).map_err(|e| err(py, "HpkeConfig", Op::Decode, e))?;
        Ok(HpkeConfig { inner })
    }

    /// DAP-09's encoding.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.inner.encode().map_err(|e| err(py, "HpkeConfig", Op::Encode, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The config's id, which each ciphertext sealed to it carries.
    #[getter]
    fn id(&self) -> u8 {
        self.inner.id
    }

    /// The KEM identifier (0x0020: DHKEM(X25519, HKDF-SHA256)).
    #[getter]
    fn kem_id(&self) -> u16 {
        self.inner.kem_id
    }

    /// The KDF identifier (0x0001: HKDF-SHA256).
    #[getter]
    fn kdf_id(&self) -> u16 {
        self.inner.kdf_id
    }

    /// The AEAD identifier (0x0001: AES-128-GCM).
    #[getter]
    fn aead_id(&self) -> u16 {
        self.inner.aead_id
    }

    /// The serialized public key.
    #[getter]
    fn public_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.public_key)
    }

    fn __repr__(&self) -> String {
        let c = &self.inner;
        format!(
            "HpkeConfig(id={}, kem_id=0x{:04x}, kdf_id=0x{:04x}, aead_id=0x{:04x}, public_key={})",
            c.id,
            c.kem_id,
            c.kdf_id,
            c.aead_id,
            ldp_client::bytes::hex(&c.public_key)
        )
    }

    /// Pickles as its encoding.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let from_bytes = slf.get_type().getattr("from_bytes")?;
        Ok((from_bytes, (slf.get().to_bytes(py)?,)))
    }
}

/// An HPKE key pair: the config to publish and its private key (a secret, never in its repr).
#[pyclass(frozen, module = "ldp.prio")]
pub struct HpkeKeypair {
    pub(crate) inner: ClientKeypair,
}

#[pymethods]
impl HpkeKeypair {
    /// A fresh key pair of DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM with id `config_id` (0 to 255),
    /// from the OS generator.
    #[staticmethod]
    fn generate(py: Python<'_>, config_id: &Bound<'_, PyAny>) -> PyResult<Self> {
        let id = uint(py, config_id, "config_id", 255, "HpkeKeypair", Op::Parameters)? as u8;
        let inner =
            ClientKeypair::generate(id, HpkeSuite::DEFAULT).map_err(|e| err(py, "HpkeKeypair", Op::Parameters, e))?;
        Ok(HpkeKeypair { inner })
    }

    /// The key pair of an encoded config and its private key, checked: the private key's public key must be the
    /// config's, and the suite one this binding seals with.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, config: &[u8], private_key: &[u8]) -> PyResult<Self> {
        let config = ClientConfig::decode(config).map_err(|e| err(py, "HpkeKeypair", Op::Decode, e))?;
        let inner =
            ClientKeypair::from_parts(config, private_key).map_err(|e| err(py, "HpkeKeypair", Op::Decode, e))?;
        Ok(HpkeKeypair { inner })
    }

    /// The public half.
    #[getter]
    fn config(&self) -> HpkeConfig {
        HpkeConfig { inner: self.inner.config().clone() }
    }

    /// The private key's bytes: a secret.
    #[getter]
    fn private_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.private_key())
    }

    fn __repr__(&self) -> String {
        format!("HpkeKeypair(config_id={}, private key hidden)", self.inner.config().id)
    }
}

/// DAP-09's `Report`: the report ID, the time, the public share and each aggregator's sealed input share.
#[pyclass(frozen, module = "ldp.prio", eq)]
#[derive(PartialEq, Eq)]
pub struct DapReport {
    inner: Report,
}

fn ciphertext_bytes<'py>(py: Python<'py>, c: &HpkeCiphertext) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &c.encode().map_err(|e| err(py, "DapReport", Op::Encode, e))?))
}

#[pymethods]
impl DapReport {
    /// The report encoded in `data` (all of it: trailing bytes are refused); its ciphertexts are not opened.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let inner = Report::decode(data).map_err(|e| err(py, "DapReport", Op::Decode, e))?;
        Ok(DapReport { inner })
    }

    /// DAP-09's encoding.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.inner.encode().map_err(|e| err(py, "DapReport", Op::Encode, e))?))
    }

    /// The report ID (16 bytes), which is also the VDAF nonce.
    #[getter]
    fn report_id<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.metadata.report_id)
    }

    /// Seconds since the Unix epoch, rounded down to the task's time precision.
    #[getter]
    fn time(&self) -> u64 {
        self.inner.metadata.time
    }

    /// The VDAF public share.
    #[getter]
    fn public_share<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.public_share)
    }

    /// The leader's sealed input share, in DAP's `HpkeCiphertext` encoding.
    #[getter]
    fn leader_ciphertext<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        ciphertext_bytes(py, &self.inner.leader_encrypted_input_share)
    }

    /// The helper's sealed input share, in DAP's `HpkeCiphertext` encoding.
    #[getter]
    fn helper_ciphertext<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        ciphertext_bytes(py, &self.inner.helper_encrypted_input_share)
    }

    fn __repr__(&self) -> String {
        format!(
            "DapReport(report_id={}, time={}, public_share={} bytes)",
            ldp_client::bytes::hex(&self.inner.metadata.report_id),
            self.inner.metadata.time,
            self.inner.public_share.len()
        )
    }
}

/// DAP-09's `HpkeConfigList` of `configs` (at least one, each id once), most preferred first.
#[pyfunction]
pub fn encode_hpke_config_list<'py>(py: Python<'py>, configs: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mut list = Vec::new();
    for (i, item) in configs.try_iter()?.enumerate() {
        let item = item?;
        let config = item
            .cast::<HpkeConfig>()
            .map_err(|_| PyTypeError::new_err(format!("configs[{i}] must be an HpkeConfig")))?;
        list.push(config.get().inner.clone());
    }
    let bytes = HpkeConfigList(list).encode().map_err(|e| err(py, "HpkeConfigList", Op::Encode, e))?;
    Ok(PyBytes::new(py, &bytes))
}

/// The configs of an encoded `HpkeConfigList` (all of `data`), in its order.
#[pyfunction]
pub fn decode_hpke_config_list<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
    let list = HpkeConfigList::decode(data).map_err(|e| err(py, "HpkeConfigList", Op::Decode, e))?;
    PyList::new(py, list.0.into_iter().map(|inner| HpkeConfig { inner }))
}

/// The shares of `measurement` by any of the four Prio3 classes or Poplar1, with the report ID as the nonce:
/// `(report ID, public share, input shares)`.
fn shard_any(
    py: Python<'_>,
    vdaf: &Bound<'_, PyAny>,
    measurement: &Bound<'_, PyAny>,
    nonce: Option<&[u8]>,
    rand: Option<&[u8]>,
) -> PyResult<ShardedBytes> {
    macro_rules! try_class {
        ($($class:ty),*) => {$(
            if let Ok(v) = vdaf.cast::<$class>() {
                let core = &v.get().core;
                if core.params().num_aggregators != 2 {
                    return Err(err(py, "seal_report", Op::Seal, format!(
                        "a DAP report has two aggregators (a leader and a helper); the VDAF has {}",
                        core.params().num_aggregators
                    )));
                }
                return core.shard_bytes(py, measurement, nonce, rand);
            }
        )*};
    }
    try_class!(Prio3Count, Prio3Sum, Prio3SumVec, Prio3Histogram);
    if let Ok(v) = vdaf.cast::<crate::poplar1::Poplar1>() {
        return crate::poplar1::shard_bytes(py, v.get(), measurement, nonce, rand);
    }
    let kind = vdaf.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    Err(PyTypeError::new_err(format!(
        "vdaf must be a Prio3Count, Prio3Sum, Prio3SumVec, Prio3Histogram or Poplar1, got {kind}"
    )))
}

/// A DAP-09 report of `measurement` (the simulated client's path): sharded by `vdaf` with the report ID as the
/// nonce, each input share sealed to its aggregator's config; the report's bytes.
#[pyfunction]
#[pyo3(signature = (vdaf, measurement, *, task_id, time, leader, helper, time_precision = None, report_id = None, rand = None))]
#[allow(clippy::too_many_arguments)]
pub fn seal_report<'py>(
    py: Python<'py>,
    vdaf: &Bound<'py, PyAny>,
    measurement: &Bound<'py, PyAny>,
    task_id: &[u8],
    time: &Bound<'py, PyAny>,
    leader: &Bound<'py, HpkeConfig>,
    helper: &Bound<'py, HpkeConfig>,
    time_precision: Option<&Bound<'py, PyAny>>,
    report_id: Option<&[u8]>,
    rand: Option<&[u8]>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (subject, op) = ("seal_report", Op::Seal);
    let task_id = fixed::<TASK_ID_LEN>(py, task_id, "task_id", subject, op)?;
    let time = uint(py, time, "time", u64::MAX, subject, op)?;
    let precision = match time_precision {
        Some(p) => uint(py, p, "time_precision", u64::MAX, subject, op)?,
        None => 1,
    };
    if precision == 0 {
        return Err(err(py, subject, op, "time_precision must be at least 1 second, got 0"));
    }
    if let Some(id) = report_id {
        fixed::<REPORT_ID_LEN>(py, id, "report_id", subject, op)?;
    }
    let (leader, helper) = (&leader.get().inner, &helper.get().inner);
    for (who, config) in [("leader", leader), ("helper", helper)] {
        config.check().map_err(|e| err(py, subject, op, format!("the {who}'s config: {e}")))?;
    }
    let (nonce, public_share, input_shares) = shard_any(py, vdaf, measurement, report_id, rand)?;
    let metadata = ReportMetadata { report_id: nonce, time: time - time % precision };
    let report =
        dap::seal_input_shares(&task_id, metadata, &public_share, [&input_shares[0], &input_shares[1]], leader, helper)
            .and_then(|r| r.encode())
            .map_err(|e| err(py, subject, op, e))?;
    Ok(PyBytes::new(py, &report))
}

/// An aggregator's input share of a report: its ciphertext (DAP's `HpkeCiphertext` encoding) opened with its key
/// pair under the report's task, ID, time and public share; the payload (the VDAF input share).
#[pyfunction]
#[pyo3(signature = (keypair, *, role, task_id, report_id, time, public_share, ciphertext))]
#[allow(clippy::too_many_arguments)]
pub fn open_input_share<'py>(
    py: Python<'py>,
    keypair: &Bound<'py, HpkeKeypair>,
    role: &str,
    task_id: &[u8],
    report_id: &[u8],
    time: &Bound<'py, PyAny>,
    public_share: &[u8],
    ciphertext: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let (subject, op) = ("open_input_share", Op::Open);
    let aggregator = self::role(py, role, subject, op)?;
    let task_id = fixed::<TASK_ID_LEN>(py, task_id, "task_id", subject, op)?;
    let report_id = fixed::<REPORT_ID_LEN>(py, report_id, "report_id", subject, op)?;
    let time = uint(py, time, "time", u64::MAX, subject, op)?;
    let ciphertext = HpkeCiphertext::decode(ciphertext).map_err(|e| err(py, subject, op, e))?;
    let metadata = ReportMetadata { report_id, time };
    let keypair = &keypair.get().inner;
    let payload = py
        .detach(|| dap::open_input_share(keypair, aggregator, &task_id, &metadata, public_share, &ciphertext))
        .map_err(|e| err(py, subject, op, e))?;
    Ok(PyBytes::new(py, &payload))
}

/// `plaintext` sealed to `config` with `info` and `aad` (RFC 9180 single-shot base mode, an ephemeral key from the
/// OS generator), in DAP's `HpkeCiphertext` encoding.
#[pyfunction]
pub fn hpke_seal<'py>(
    py: Python<'py>,
    config: &Bound<'py, HpkeConfig>,
    info: &[u8],
    aad: &[u8],
    plaintext: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let sealed = dap::seal(&config.get().inner, info, aad, plaintext)
        .and_then(|c| c.encode())
        .map_err(|e| err(py, "hpke_seal", Op::Seal, e))?;
    Ok(PyBytes::new(py, &sealed))
}

/// A ciphertext (DAP's `HpkeCiphertext` encoding) opened with `keypair` under `info` and `aad`: the plaintext.
#[pyfunction]
pub fn hpke_open<'py>(
    py: Python<'py>,
    keypair: &Bound<'py, HpkeKeypair>,
    info: &[u8],
    aad: &[u8],
    ciphertext: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let ciphertext = HpkeCiphertext::decode(ciphertext).map_err(|e| err(py, "hpke_open", Op::Open, e))?;
    let plaintext =
        dap::open(&keypair.get().inner, info, aad, &ciphertext).map_err(|e| err(py, "hpke_open", Op::Open, e))?;
    Ok(PyBytes::new(py, &plaintext))
}
