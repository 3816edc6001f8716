//! A task file through the C interface (feature `prio`, `src/ffi/dap_task.rs`): `ldp_dap_task_new` reads the
//! `ldp-task/1` file a device is given, `ldp_dap_task_description` states its members as JSON, and
//! `ldp_dap_task_report_with_random` makes the reports of `tests/data/dap_reports.json` byte for byte (what the JVM
//! client replays through JNA); `ldp_dap_task_report` draws fresh randomness; refusals leave `*out` null and say why.

#![cfg(all(feature = "prio", feature = "c-api"))]

mod common;

use std::ffi::CStr;
use std::ptr;

use common::prio3::{hex, unhex};
use ldp_client::ffi::*;
use ldp_client::{json, Value};

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dap_reports.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        (0..=chunk.len()).for_each(|i| out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char));
    }
    out
}

fn task_json(vdaf: &Value) -> String {
    let f = fixture();
    let config = |role: &str| b64(&unhex(f[role]["config"].as_str().unwrap()));
    json!({"format": "ldp-task/1", "task_id": b64(&unhex(f["task_id"].as_str().unwrap())), "app": "a", "metric": "m",
           "vdaf": vdaf, "window_seconds": 86400, "time_precision": 3600, "leader_url": "https://leader.example",
           "local": null, "reports_per_window": 1, "hpke_configs": {"leader": config("leader"), "helper": config("helper")}})
    .to_string()
}

unsafe fn new_task(text: &str) -> Result<*mut LdpDapTask, String> {
    let mut task = ptr::null_mut();
    match ldp_dap_task_new(text.as_ptr(), text.len(), &mut task) {
        LdpStatus::LdpOk => Ok(task),
        _ => {
            assert!(task.is_null());
            Err(CStr::from_ptr(ldp_last_error_message()).to_string_lossy().into_owned())
        }
    }
}

unsafe fn bytes(report: *mut LdpDapReport) -> Vec<u8> {
    let (mut p, mut n) = (ptr::null(), 0usize);
    assert_eq!(ldp_dap_report_bytes(report, &mut p, &mut n), LdpStatus::LdpOk);
    let out = std::slice::from_raw_parts(p, n).to_vec();
    ldp_dap_report_free(report);
    out
}

#[test]
fn the_fixture_reports_byte_for_byte_and_the_description() {
    let f = fixture();
    for (i, case) in f["reports"].as_array().unwrap().iter().enumerate() {
        unsafe {
            let task = new_task(&task_json(&case["vdaf"])).unwrap();
            let (mut p, mut n) = (ptr::null(), 0usize);
            assert_eq!(ldp_dap_task_description(task, &mut p, &mut n), LdpStatus::LdpOk);
            let d: Value = serde_json::from_slice(std::slice::from_raw_parts(p, n)).unwrap();
            assert_eq!((d["vdaf"].as_str(), d["draft"].as_u64()), (case["vdaf"]["type"].as_str(), Some(18)));
            assert_eq!(
                (d["metric"].as_str(), d["trust"].as_str(), d["reports_per_window"].as_u64()),
                (Some("m"), Some("two-aggregator"), Some(1))
            );
            let rand: Vec<u8> = (0..d["rand_len"].as_u64().unwrap()).map(|j| (31 * j as usize + i) as u8).collect();
            let m: Vec<u64> = match &case["measurement"] {
                Value::Array(v) => v.iter().map(|x| x.as_u64().unwrap()).collect(),
                v => vec![v.as_u64().unwrap()],
            };
            let id = unhex(case["report_id"].as_str().unwrap());
            let mut report = ptr::null_mut();
            let status = ldp_dap_task_report_with_random(
                task,
                m.as_ptr(),
                m.len(),
                case["time"].as_u64().unwrap(),
                id.as_ptr(),
                id.len(),
                rand.as_ptr(),
                rand.len(),
                &mut report,
            );
            assert_eq!(status, LdpStatus::LdpOk);
            assert_eq!(hex(&bytes(report)), case["report"].as_str().unwrap(), "case {i}");
            let mut fresh = ptr::null_mut();
            assert_eq!(ldp_dap_task_report(task, m.as_ptr(), m.len(), 1_700_000_000, &mut fresh), LdpStatus::LdpOk);
            assert_ne!(hex(&bytes(fresh)), case["report"].as_str().unwrap());
            ldp_dap_task_free(task);
        }
    }
}

#[test]
fn refusals_say_why() {
    unsafe {
        assert!(new_task("{}").unwrap_err().contains("not an ldp-task/1 task file"));
        assert!(new_task("\u{0}x").unwrap_err().contains("JSON"));
        let task = new_task(&task_json(&json!({"type": "Prio3Count"}))).unwrap();
        let mut report = ptr::null_mut();
        let two = [1u64, 0];
        assert_eq!(ldp_dap_task_report(task, two.as_ptr(), 2, 1, &mut report), LdpStatus::LdpValueError);
        assert!(report.is_null());
        let bad = [7u64];
        assert_eq!(ldp_dap_task_report(task, bad.as_ptr(), 1, 1, &mut report), LdpStatus::LdpValueError);
        ldp_dap_task_free(task);
        ldp_dap_task_free(ptr::null_mut());
    }
}
