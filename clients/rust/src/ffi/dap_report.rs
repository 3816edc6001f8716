//! The C interface of DAP-09 reports (feature `prio`; declared in the header under `LDP_CLIENT_PRIO`): a Prio3
//! measurement as the `Report` a leader accepts, each input share sealed with HPKE to its aggregator's
//! `HpkeConfig`. See `ldp_client::dap` for the draft, the encoding and what each party learns.
//!
//! A report's bytes exist only once it is sealed (its length follows from the type and the configs), so the call
//! returns them in an `LdpDapReport` handle, read through `ldp_dap_report_bytes` as `ldp_request_body` and the Prio3
//! shares are, rather than into a caller's buffer that a length query would have to size beforehand.
//!
//! Every item carries `#[cfg(feature = "prio")]` itself: cbindgen reads this file on its own and puts each such item
//! under `#if defined(LDP_CLIENT_PRIO)`. (Not named `dap.rs`: cbindgen reads src/ffi.rs as a crate root, and would
//! take `mod dap;` for src/dap.rs, the Rust API.)

use std::borrow::Borrow;
use std::ptr;

use super::handles::{free_handle, handle, new_handle, Handle};
use super::last_error::guard;
use super::marshal::{c_bytes, out, out_bytes, out_ptr};
use super::sharding::{measurement, LdpPrio3};
use super::LdpStatus;
use crate::dap::{DapBuilder, HpkeConfig, HpkeConfigList, Report, ReportVdaf, REPORT_ID_LEN, TASK_ID_LEN};
use crate::error::{Error, Result};

/// Bytes of a DAP report ID (`ldp_dap_report_id`), which is also the report's Prio3 nonce.
#[cfg(feature = "prio")]
pub const LDP_DAP_REPORT_ID_LEN: usize = 16;
#[cfg(feature = "prio")]
const _: () = assert!(LDP_DAP_REPORT_ID_LEN == REPORT_ID_LEN);

/// Bytes of a DAP task ID.
#[cfg(feature = "prio")]
pub const LDP_DAP_TASK_ID_LEN: usize = 32;
#[cfg(feature = "prio")]
const _: () = assert!(LDP_DAP_TASK_ID_LEN == TASK_ID_LEN);

/// One DAP-09 report (feature `prio`): its encoding, the body of the upload to the leader
/// (`PUT {leader}/tasks/{task-id}/reports`, media type `application/dap-report`).
#[cfg(feature = "prio")]
pub struct LdpDapReport {
    bytes: Vec<u8>,
    report_id: [u8; REPORT_ID_LEN],
}

#[cfg(feature = "prio")]
impl Handle for LdpDapReport {
    const TAG: u64 = 0x6c64_7064_6170_7274; // "ldpdaprt"
    const KIND: &'static str = "a DAP report";
}

/// The task arguments of a C report call, as the caller passed them: the task ID, the time precision and the
/// leader's and the helper's `HpkeConfig` (DAP's encodings). Shared by the Prio3 and the Poplar1 reports.
#[cfg(feature = "prio")]
pub(super) struct TaskArgs {
    pub(super) task_id: *const u8,
    pub(super) task_id_len: usize,
    pub(super) time_precision: u64,
    pub(super) leader_config: *const u8,
    pub(super) leader_config_len: usize,
    pub(super) helper_config: *const u8,
    pub(super) helper_config_len: usize,
}

#[cfg(feature = "prio")]
impl TaskArgs {
    /// The arguments of a `_rand_len` call: the configs alone (a zero task ID, a time precision of 1: neither
    /// changes the length).
    pub(super) fn configs(
        leader_config: *const u8,
        leader_config_len: usize,
        helper_config: *const u8,
        helper_config_len: usize,
    ) -> Self {
        static ZEROS: [u8; TASK_ID_LEN] = [0; TASK_ID_LEN];
        let (task_id, task_id_len, time_precision) = (ZEROS.as_ptr(), TASK_ID_LEN, 1);
        TaskArgs {
            task_id,
            task_id_len,
            time_precision,
            leader_config,
            leader_config_len,
            helper_config,
            helper_config_len,
        }
    }

    /// `client`'s report builder for this task: the task ID, both configs and the time precision, read and checked.
    pub(super) unsafe fn builder<C: ReportVdaf>(&self, client: C) -> Result<DapBuilder<C>> {
        let task_id: [u8; TASK_ID_LEN] = c_bytes(self.task_id, self.task_id_len, "task_id")?
            .try_into()
            .map_err(|_| Error::value(format!("a task ID is {TASK_ID_LEN} bytes, got {}", self.task_id_len)))?;
        let config = |p, len, who: &str| -> Result<HpkeConfig> {
            HpkeConfig::decode(c_bytes(p, len, who)?).map_err(|e| Error::value(format!("{who}: {e}")))
        };
        let leader = config(self.leader_config, self.leader_config_len, "leader_config")?;
        let helper = config(self.helper_config, self.helper_config_len, "helper_config")?;
        DapBuilder::new(client, task_id, leader, helper)?.with_time_precision(self.time_precision)
    }
}

/// The caller's report ID and randomness of a `_with_random` report call.
#[cfg(feature = "prio")]
pub(super) struct GivenRandom {
    pub(super) report_id: *const u8,
    pub(super) report_id_len: usize,
    pub(super) rand: *const u8,
    pub(super) rand_len: usize,
}

/// The report of one C call, of any VDAF, into a new `LdpDapReport`: the measurement `read` from the call's
/// arguments, sharded and sealed by `b`, with the OS generator's report ID and randomness or the caller's.
/// Checked in this order: the report ID, the randomness, the measurement.
#[cfg(feature = "prio")]
pub(super) unsafe fn sealed_report<C: ReportVdaf, M: Borrow<C::Measurement>>(
    b: &DapBuilder<C>,
    read: impl FnOnce(&C) -> Result<M>,
    time: u64,
    random: Option<GivenRandom>,
) -> Result<*mut LdpDapReport> {
    let report = match random {
        None => b.build(read(b.client())?.borrow(), time)?,
        Some(r) => {
            let id: &[u8; REPORT_ID_LEN] = c_bytes(r.report_id, r.report_id_len, "report_id")?
                .try_into()
                .map_err(|_| Error::value(format!("a report ID is {REPORT_ID_LEN} bytes, got {}", r.report_id_len)))?;
            let rand = c_bytes(r.rand, r.rand_len, "rand")?;
            b.build_with_random(read(b.client())?.borrow(), time, id, rand)?
        }
    };
    new_report(&report)
}

/// A report's handle.
#[cfg(feature = "prio")]
fn new_report(report: &Report) -> Result<*mut LdpDapReport> {
    Ok(new_handle(LdpDapReport { bytes: report.encode()?, report_id: report.metadata.report_id }))
}

/// The DAP-09 report of a measurement for the task `task_id` (`task_id_len` = 32 bytes) made at `time` (seconds
/// since the Unix epoch, rounded down to a multiple of `time_precision`, the task's, at least 1), its input shares
/// sealed to the leader's and the helper's `HpkeConfig` (each in DAP's encoding, as one entry of an aggregator's
/// `/hpke_config` list: `ldp_dap_hpke_config_select` picks it), into `*out` (free it with `ldp_dap_report_free`).
/// The report ID (the Prio3 nonce), the sharding randomness and each seal's ephemeral key come from the OS generator.
/// The measurement is as `ldp_prio3_shard` takes it, and `prio3` must be a client for two aggregators.
///
/// Refused: a measurement `ldp_prio3_shard` refuses (with its codes), a task ID of another length, a config that
/// does not decode, whose suite is not supported (supported: KEM 0x0020 X25519, 0x0010 P-256, 0x0012 P-521; KDF
/// 0x0001, 0x0003; AEAD 0x0001, 0x0002, 0x0003) or whose key is no valid key of its KEM, the same key for both
/// aggregators (`LDP_VALUE_ERROR`); a `time_precision` of 0 (`LDP_VALUE_ERROR`, `param_range`).
///
/// # Safety
/// `prio3` is a live handle; `measurement` points to `len` readable `uint64_t`s (or is null with 0); `task_id`,
/// `leader_config` and `helper_config` point to their lengths of readable bytes; `out` is a valid pointer.
#[cfg(feature = "prio")]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ldp_dap_report(
    prio3: *const LdpPrio3,
    measurement: *const u64,
    len: usize,
    task_id: *const u8,
    task_id_len: usize,
    time: u64,
    time_precision: u64,
    leader_config: *const u8,
    leader_config_len: usize,
    helper_config: *const u8,
    helper_config_len: usize,
    out: *mut *mut LdpDapReport,
) -> LdpStatus {
    let task = TaskArgs {
        task_id,
        task_id_len,
        time_precision,
        leader_config,
        leader_config_len,
        helper_config,
        helper_config_len,
    };
    out_ptr(out, "out", || {
        let b = task.builder(handle(prio3, "prio3")?.0.clone())?;
        sealed_report(&b, |c| self::measurement(c, measurement, len), time, None)
    })
}

/// Bytes of randomness `ldp_dap_report_with_random` takes for a report of `prio3` sealed to these configs, into
/// `*out`: the sharding randomness (`ldp_prio3_rand_len`), then the leader's and the helper's HPKE ephemeral key
/// material (32 bytes each for X25519 and P-256, 66 for P-521). Refused as `ldp_dap_report` refuses the configs.
///
/// # Safety
/// As `ldp_dap_report`; `out` is a valid pointer.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_report_rand_len(
    prio3: *const LdpPrio3,
    leader_config: *const u8,
    leader_config_len: usize,
    helper_config: *const u8,
    helper_config_len: usize,
    out: *mut usize,
) -> LdpStatus {
    let task = TaskArgs::configs(leader_config, leader_config_len, helper_config, helper_config_len);
    out_ptr(out, "out", || Ok(task.builder(handle(prio3, "prio3")?.0.clone())?.rand_len()))
}

/// `ldp_dap_report` with the caller's report ID (`report_id_len` = 16 bytes) and randomness (`rand_len` =
/// `ldp_dap_report_rand_len` bytes: the sharding randomness, then the leader's and the helper's ephemeral key
/// material): the same inputs always give the same bytes. **For tests only**: a report ID, randomness or ephemeral
/// key used twice, or not from a cryptographic generator, breaks the measurement's privacy. Other lengths are
/// `LDP_VALUE_ERROR`.
///
/// # Safety
/// As `ldp_dap_report`; `report_id` and `rand` point to their lengths of readable bytes.
#[cfg(feature = "prio")]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ldp_dap_report_with_random(
    prio3: *const LdpPrio3,
    measurement: *const u64,
    len: usize,
    task_id: *const u8,
    task_id_len: usize,
    time: u64,
    time_precision: u64,
    leader_config: *const u8,
    leader_config_len: usize,
    helper_config: *const u8,
    helper_config_len: usize,
    report_id: *const u8,
    report_id_len: usize,
    rand: *const u8,
    rand_len: usize,
    out: *mut *mut LdpDapReport,
) -> LdpStatus {
    let task = TaskArgs {
        task_id,
        task_id_len,
        time_precision,
        leader_config,
        leader_config_len,
        helper_config,
        helper_config_len,
    };
    let random = GivenRandom { report_id, report_id_len, rand, rand_len };
    out_ptr(out, "out", || {
        let b = task.builder(handle(prio3, "prio3")?.0.clone())?;
        sealed_report(&b, |c| self::measurement(c, measurement, len), time, Some(random))
    })
}

/// The report's encoding: `*bytes` points to `*len` bytes inside `report` (valid until it is freed). Send them to
/// the leader.
///
/// # Safety
/// `report` is a live handle; `bytes` and `len` are valid pointers.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_report_bytes(
    report: *const LdpDapReport,
    bytes: *mut *const u8,
    len: *mut usize,
) -> LdpStatus {
    out_bytes(bytes, len, || Ok(&handle(report, "report")?.bytes))
}

/// The report's ID: `*report_id` points to `LDP_DAP_REPORT_ID_LEN` (16) bytes inside `report` (valid until it is
/// freed). Public: it is in the report's bytes too.
///
/// # Safety
/// `report` is a live handle; `report_id` is a valid pointer.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_report_id(report: *const LdpDapReport, report_id: *mut *const u8) -> LdpStatus {
    out_ptr(report_id, "report_id", || Ok(handle(report, "report")?.report_id.as_ptr()))
}

/// Frees a report (null, or a handle of another kind, is ignored).
///
/// # Safety
/// `report` is null or a handle not freed before.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_report_free(report: *mut LdpDapReport) {
    free_handle(report);
}

/// The config to seal to from an aggregator's `HpkeConfigList` (`list`, `len` bytes: the body of its
/// `/hpke_config` answer): `*config` points to the `*config_len` bytes of the first entry (the most preferred) this
/// library can seal to, inside `list`. Refused: a list that does not decode, is empty or repeats an id
/// (`LDP_VALUE_ERROR`), and one with no supported entry (`LDP_VALUE_ERROR`, naming each entry's suite).
///
/// # Safety
/// `list` points to `len` readable bytes; `config` and `config_len` are valid pointers.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_hpke_config_select(
    list: *const u8,
    len: usize,
    config: *mut *const u8,
    config_len: *mut usize,
) -> LdpStatus {
    guard(|| {
        let (c, l) = (self::out(config, "config")?, self::out(config_len, "config_len")?);
        (*c, *l) = (ptr::null(), 0);
        let bytes = c_bytes(list, len, "list")?;
        let decoded = HpkeConfigList::decode(bytes)?;
        // The entries follow the list's 2-byte length, each as long as its encoding.
        let mut at = 2;
        for entry in &decoded.0 {
            let size = entry.encode()?.len();
            if entry.check().is_ok() {
                (*c, *l) = (bytes[at..].as_ptr(), size);
                return Ok(());
            }
            at += size;
        }
        let suites: Vec<String> = decoded.0.iter().map(|e| format!("config {}: {}", e.id, e.suite())).collect();
        Err(Error::value(format!("no HPKE config of the list can be sealed to ({})", suites.join("; "))))
    })
}
