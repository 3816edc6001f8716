//! The C interface of a two-aggregator task's file (feature `prio`; under `LDP_CLIENT_PRIO` in the header): the
//! `ldp-task/1` document `ldp collect task` writes, read as a device reads it (`ldp_client::dap::TaskFile`), and its
//! reports, each an `LdpDapReport` (`ldp_dap_report_bytes`). What the JVM client (Kotlin, through JNA) and any C
//! app use to record a two-aggregator metric without assembling the Prio3 client, task ID and configs themselves.
//!
//! Every item carries `#[cfg(feature = "prio")]` itself, as in `dap_report.rs` (cbindgen reads this file alone).

use std::ptr;

use super::dap_report::{sealed_report, GivenRandom, LdpDapReport};
use super::handles::{free_handle, handle, new_handle, Handle};
use super::last_error::guard;
use super::marshal::{c_bytes, out, out_ptr};
use super::sharding::measurement;
use super::{LdpClient, LdpStatus};
use crate::dap::{AnyTaskFile, ReportBuilder, TaskFile};
use crate::error::Error;
use crate::prio3::Prio3Type;

/// A task file, read and checked, and the builder of its reports (feature `prio`).
#[cfg(feature = "prio")]
pub struct LdpDapTask {
    builder: ReportBuilder,
    description: String,
}

#[cfg(feature = "prio")]
impl Handle for LdpDapTask {
    const TAG: u64 = 0x6c64_7064_6170_746b; // "ldpdaptk"
    const KIND: &'static str = "a DAP task";
}

/// The members of a task a device uses, as one JSON object (`ldp_dap_task_description`).
#[cfg(feature = "prio")]
fn describe(file: &TaskFile, builder: &ReportBuilder) -> String {
    let length = match file.vdaf {
        Prio3Type::SumVec { length, .. } | Prio3Type::Histogram { length, .. } => length,
        _ => 1,
    };
    serde_json::json!({
        "task_id": file.task_id_text(), "app": file.app, "metric": file.metric, "leader_url": file.leader_url,
        "trust": file.trust(), "window_seconds": file.window_seconds, "time_precision": file.time_precision,
        "reports_per_window": file.reports_per_window, "local": file.local, "vdaf": file.vdaf.name(),
        "length": length, "draft": file.draft.number(), "rand_len": builder.rand_len(),
    })
    .to_string()
}

/// The task of a task file (`json`, `len` bytes of UTF-8 JSON: what `ldp collect task --leader-config …
/// --helper-config …` wrote) into `*out` (free it with `ldp_dap_task_free`). Refused (`LDP_VALUE_ERROR`, the message
/// naming the member): a document that is no `ldp-task/1` task file, a member a device uses that is malformed, a
/// file without both aggregators' configs (`hpke_configs`) or with configs this library cannot seal to.
///
/// # Safety
/// `json` points to `len` readable bytes; `out` is a valid pointer.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_task_new(json: *const u8, len: usize, out: *mut *mut LdpDapTask) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let text = std::str::from_utf8(c_bytes(json, len, "json")?)
            .map_err(|_| Error::value("a task file is UTF-8 JSON text"))?;
        let file = TaskFile::parse(text)?;
        let builder = file.report_builder()?;
        let description = describe(&file, &builder);
        *o = new_handle(LdpDapTask { builder, description });
        Ok(())
    })
}

/// The members of the task a device uses, as a JSON object: `task_id` (base64url), `app`, `metric`, `leader_url`,
/// `trust`, `window_seconds`, `time_precision`, `reports_per_window` (null: the spec caps none), `local` (the local
/// protocol, or null), `vdaf` (the Prio3 type's name), `length`, `draft` (8 or 18) and `rand_len` (the randomness
/// `ldp_dap_task_report_with_random` takes). `*json` points to `*len` bytes inside `task` (valid until it is freed).
///
/// # Safety
/// `task` is a live handle; `json` and `len` are valid pointers.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_task_description(
    task: *const LdpDapTask,
    json: *mut *const u8,
    len: *mut usize,
) -> LdpStatus {
    guard(|| {
        let (j, l) = (self::out(json, "json")?, self::out(len, "len")?);
        (*j, *l) = (ptr::null(), 0);
        let t = handle(task, "task")?;
        (*j, *l) = (t.description.as_ptr(), t.description.len());
        Ok(())
    })
}

/// The DAP-09 report of a measurement (as `ldp_prio3_shard` takes it: `len` values) made at `time` (Unix seconds,
/// rounded down to the task's precision), its report ID, sharding randomness and ephemeral keys from the OS generator,
/// into `*out` (free it with `ldp_dap_report_free`). Refused as `ldp_dap_report` refuses a measurement.
///
/// # Safety
/// `task` is a live handle; `measurement` points to `len` readable `uint64_t`s (or is null with 0); `out` is valid.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_task_report(
    task: *const LdpDapTask,
    measurement: *const u64,
    len: usize,
    time: u64,
    out: *mut *mut LdpDapReport,
) -> LdpStatus {
    out_ptr(out, "out", || {
        let b = handle(task, "task")?.builder.dap();
        sealed_report(b, |c| self::measurement(c, measurement, len), time, None)
    })
}

/// `ldp_dap_task_report` with the caller's report ID (`report_id_len` = 16 bytes) and randomness (`rand_len` = the
/// description's `rand_len` bytes): the same inputs give the same bytes. **For tests only** (VDAF draft 18): a report
/// ID or randomness used twice, or not from a cryptographic generator, breaks the measurement's privacy.
///
/// # Safety
/// As `ldp_dap_task_report`; `report_id` and `rand` point to their lengths of readable bytes.
#[cfg(feature = "prio")]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ldp_dap_task_report_with_random(
    task: *const LdpDapTask,
    measurement: *const u64,
    len: usize,
    time: u64,
    report_id: *const u8,
    report_id_len: usize,
    rand: *const u8,
    rand_len: usize,
    out: *mut *mut LdpDapReport,
) -> LdpStatus {
    let random = GivenRandom { report_id, report_id_len, rand, rand_len };
    out_ptr(out, "out", || {
        let b = handle(task, "task")?.builder.dap();
        sealed_report(b, |c| self::measurement(c, measurement, len), time, Some(random))
    })
}

/// Gives `client` the task of a two-aggregator metric: the task file in `json` (`len` bytes of UTF-8 JSON, what `ldp
/// collect task --leader-config … --helper-config …` wrote), for the metric it names. Until a metric has its task,
/// `ldp_client_record_*` refuse it (`LDP_VALUE_ERROR`, code `trust_model`); with it, each value recorded is charged
/// to the ledger (the spec's `per_report` for `two-aggregator`, the protocol's ε for `two-aggregator+local`; at
/// most the task's `reports_per_window` reports a window), made into a DAP-09 report sealed to both aggregators, and
/// queued; `ldp_client_upload` sends it to the task's leader. A task given again replaces the first (rotated keys).
/// A `poplar1` metric's task is a Poplar1 task (`"vdaf": {"type": "Poplar1", "bits": …, "max_candidates": …}`;
/// a library built with the feature "poplar1"): its values are strings (`ldp_client_record_string`, or a JSON
/// string), each shared exactly as a Poplar1 report. Refused (`LDP_VALUE_ERROR`, the message naming the member),
/// nothing changed: a document that is no task file, a metric that is no two-aggregator metric of the client's
/// spec, a task that is not the metric's under the spec (window, trust model, VDAF and its parameters, reports a
/// window, local protocol), no `hpke_configs`, a Poplar1 task in a library without the feature "poplar1". The task
/// is the client handle's, not the state folder's: give it each time the client is opened.
///
/// # Safety
/// `client` is a live handle; `json` points to `len` readable bytes.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_client_add_task(client: *const LdpClient, json: *const u8, len: usize) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        let text = std::str::from_utf8(c_bytes(json, len, "json")?)
            .map_err(|_| Error::value("a task file is UTF-8 JSON text"))?;
        let file = AnyTaskFile::parse(text)?;
        let metric = file.metric().to_string();
        c.client.add_task(&metric, file)
    })
}

/// Frees a task (null, or a handle of another kind, is ignored).
///
/// # Safety
/// `task` is null or a handle not freed before.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_dap_task_free(task: *mut LdpDapTask) {
    free_handle(task);
}
