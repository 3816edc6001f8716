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

use std::ptr;

use super::handles::{free_handle, handle, new_handle, Handle};
use super::last_error::guard;
use super::marshal::{c_bytes, out};
use super::sharding::{measurement, LdpPrio3};
use super::LdpStatus;
use crate::dap::{HpkeConfig, HpkeConfigList, Report, ReportBuilder, REPORT_ID_LEN, TASK_ID_LEN};
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

/// The report builder of one call: the client, the task ID, both configs and the time precision, checked.
#[cfg(feature = "prio")]
#[allow(clippy::too_many_arguments)]
unsafe fn builder(
    prio3: *const LdpPrio3,
    task_id: *const u8,
    task_id_len: usize,
    time_precision: u64,
    leader_config: *const u8,
    leader_config_len: usize,
    helper_config: *const u8,
    helper_config_len: usize,
) -> Result<ReportBuilder> {
    let client = handle(prio3, "prio3")?.0.clone();
    let (task_id, leader, helper) =
        task_and_configs(task_id, task_id_len, leader_config, leader_config_len, helper_config, helper_config_len)?;
    ReportBuilder::new(client, task_id, leader, helper)?.with_time_precision(time_precision)
}

/// The task ID and the leader's and the helper's configs of a call (DAP's encodings), read; shared with the
/// Poplar1 reports (`poplar1_sharding.rs`).
#[cfg(feature = "prio")]
pub(super) unsafe fn task_and_configs(
    task_id: *const u8,
    task_id_len: usize,
    leader_config: *const u8,
    leader_config_len: usize,
    helper_config: *const u8,
    helper_config_len: usize,
) -> Result<([u8; TASK_ID_LEN], HpkeConfig, HpkeConfig)> {
    let task_id: [u8; TASK_ID_LEN] = c_bytes(task_id, task_id_len, "task_id")?
        .try_into()
        .map_err(|_| Error::value(format!("a task ID is {TASK_ID_LEN} bytes, got {task_id_len}")))?;
    let config = |p, len, who: &str| -> Result<HpkeConfig> {
        HpkeConfig::decode(c_bytes(p, len, who)?).map_err(|e| Error::value(format!("{who}: {e}")))
    };
    let leader = config(leader_config, leader_config_len, "leader_config")?;
    let helper = config(helper_config, helper_config_len, "helper_config")?;
    Ok((task_id, leader, helper))
}

/// A report ID argument (`LDP_DAP_REPORT_ID_LEN` bytes).
#[cfg(feature = "prio")]
pub(super) unsafe fn report_id<'a>(report_id: *const u8, report_id_len: usize) -> Result<&'a [u8; REPORT_ID_LEN]> {
    c_bytes(report_id, report_id_len, "report_id")?
        .try_into()
        .map_err(|_| Error::value(format!("a report ID is {REPORT_ID_LEN} bytes, got {report_id_len}")))
}

#[cfg(feature = "prio")]
pub(super) fn new_report(report: &Report) -> Result<*mut LdpDapReport> {
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
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let b = builder(
            prio3,
            task_id,
            task_id_len,
            time_precision,
            leader_config,
            leader_config_len,
            helper_config,
            helper_config_len,
        )?;
        let m = self::measurement(b.client(), measurement, len)?;
        *o = new_report(&b.build(&m, time)?)?;
        Ok(())
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
    guard(|| {
        let o = self::out(out, "out")?;
        *o = 0;
        let zeros = [0u8; TASK_ID_LEN];
        let b = builder(
            prio3,
            zeros.as_ptr(),
            TASK_ID_LEN,
            1,
            leader_config,
            leader_config_len,
            helper_config,
            helper_config_len,
        )?;
        *o = b.rand_len();
        Ok(())
    })
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
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let b = builder(
            prio3,
            task_id,
            task_id_len,
            time_precision,
            leader_config,
            leader_config_len,
            helper_config,
            helper_config_len,
        )?;
        let report_id = self::report_id(report_id, report_id_len)?;
        let rand = c_bytes(rand, rand_len, "rand")?;
        let m = self::measurement(b.client(), measurement, len)?;
        *o = new_report(&b.build_with_random(&m, time, report_id, rand)?)?;
        Ok(())
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
    guard(|| {
        let (b, l) = (self::out(bytes, "bytes")?, self::out(len, "len")?);
        (*b, *l) = (ptr::null(), 0);
        let r = handle(report, "report")?;
        (*b, *l) = (r.bytes.as_ptr(), r.bytes.len());
        Ok(())
    })
}

/// The report's ID: `*report_id` points to `LDP_DAP_REPORT_ID_LEN` (16) bytes inside `report` (valid until it is
/// freed). Public: it is in the report's bytes too.
///
/// # Safety
/// `report` is a live handle; `report_id` is a valid pointer.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_report_id(report: *const LdpDapReport, report_id: *mut *const u8) -> LdpStatus {
    guard(|| {
        let o = self::out(report_id, "report_id")?;
        *o = ptr::null();
        *o = handle(report, "report")?.report_id.as_ptr();
        Ok(())
    })
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
