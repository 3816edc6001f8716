//! `ldp_client::dap::TaskFile` (feature `prio`): a task file as `ldp collect task` writes it, read by a device.
//!
//! * Its report builder replays `tests/data/dap_reports.json` byte for byte: each fixture report, made again from a
//!   task file holding the fixture's task ID, Prio3 type and both configs, with the fixture's randomness.
//! * Every member a device uses is read as the Python `Task` reads it (drafts, the recommended chunk length when the
//!   file has none, the local protocol, `reports_per_window`), the server-side members are left unread, and a
//!   malformed member is refused naming it.

#![cfg(feature = "prio")]

mod common;

use common::prio3::{hex, measurement, unhex};
use ldp_client::dap::TaskFile;
use ldp_client::prio3::{Prio3Type, VdafDraft};
use ldp_client::{json, Value};

fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dap_reports.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A task file as `ldp collect task` writes it, of the fixture's task, with `vdaf` and the extra members.
fn task_json(vdaf: &Value, extra: Value) -> String {
    let f = fixture();
    let hex_of = |role: &str| unhex(f[role]["config"].as_str().unwrap());
    let mut doc = json!({
        "format": "ldp-task/1", "task_id": b64(&unhex(f["task_id"].as_str().unwrap())), "app": "app", "metric": "m",
        "vdaf": vdaf, "window_seconds": 86400, "time_precision": 3600, "min_batch_size": 10,
        "noise": {"mechanism": "none"}, "leader_url": "https://leader.example", "helper_url": "https://helper.example",
        "collector_hpke_config": "AQ", "local": null,
        "hpke_configs": {"leader": b64(&hex_of("leader")), "helper": b64(&hex_of("helper"))},
    });
    for (k, v) in extra.as_object().unwrap() {
        doc[k] = v.clone();
    }
    doc.to_string()
}

#[test]
fn a_task_files_builder_replays_the_fixture_byte_for_byte() {
    let f = fixture();
    for (i, case) in f["reports"].as_array().unwrap().iter().enumerate() {
        let task = TaskFile::parse(&task_json(&case["vdaf"], json!({}))).unwrap();
        let builder = task.report_builder().unwrap();
        let rand: Vec<u8> = (0..builder.rand_len()).map(|j| (31 * j + i) as u8).collect();
        assert_eq!(hex(&rand[..builder.client().rand_len()]), case["vdaf_rand"].as_str().unwrap());
        let m = measurement(task.vdaf.name(), &case["measurement"]);
        let id: [u8; 16] = unhex(case["report_id"].as_str().unwrap()).try_into().unwrap();
        let report = builder.build_with_random(&m, case["time"].as_u64().unwrap(), &id, &rand).unwrap();
        assert_eq!(hex(&report.encode().unwrap()), case["report"].as_str().unwrap(), "case {i}");
    }
}

#[test]
fn the_members_a_device_uses_are_read_as_python_reads_them() {
    let local = json!({"protocol": "rr", "params": {"p": 0.25, "q": 0.75}});
    let text = task_json(&json!({"type": "Prio3Count", "draft": 8}), json!({"local": local, "reports_per_window": 2}));
    let task = TaskFile::parse(&text).unwrap();
    assert_eq!((task.draft, task.vdaf, task.trust()), (VdafDraft::Draft08, Prio3Type::Count, "two-aggregator+local"));
    assert_eq!((task.reports_per_window, task.window_seconds, task.time_precision), (Some(2), 86400, 3600));
    assert_eq!(task.local, Some(local));
    assert_eq!(task.task_id_text().len(), 43);
    assert_eq!(task.report_builder().unwrap().client().draft(), VdafDraft::Draft08);
    let hist = TaskFile::parse(&task_json(&json!({"type": "Prio3Histogram", "length": 100}), json!({}))).unwrap();
    assert_eq!(hist.vdaf, Prio3Type::histogram(100)); // the draft's recommended chunk length, draft 18 by default
    assert_eq!(hist.trust(), "two-aggregator");
    let later = task_json(&json!({"type": "Prio3Count"}), json!({"central": {"epsilon": 1}, "whatever": [1]}));
    assert!(TaskFile::parse(&later).is_ok()); // server-side members are not the device's
}

#[test]
fn malformed_members_are_refused_by_name() {
    let count = json!({"type": "Prio3Count"});
    let cases = [
        (json!({"format": "ldp-task/2"}), "not an ldp-task/1"),
        (json!({"task_id": "AAAA"}), "task_id must be 32 bytes"),
        (json!({"task_id": "a+b/"}), "task_id is not base64url"),
        (json!({"vdaf": {"type": "Prio3Count", "draft": 9}}), "vdaf.draft must be 8 or 18"),
        (json!({"vdaf": {"type": "Poplar1"}}), "not a Prio3 type"),
        (json!({"vdaf": {"type": "Prio3Count", "length": 3}}), "Prio3Count takes no length"),
        (json!({"vdaf": {"type": "Prio3Histogram"}}), "lacks vdaf.length"),
        (json!({"window_seconds": 0}), "window_seconds must be an integer"),
        (json!({"time_precision": 7000}), "time_precision must divide"),
        (json!({"leader_url": "ftp://x"}), "leader_url must be an http(s) URL"),
        (json!({"local": 3}), "local must be an object"),
        (json!({"reports_per_window": 0}), "reports_per_window must be an integer"),
        (json!({"hpke_configs": {"leader": "AQ"}}), "hpke_configs must be an object"),
        (json!({"hpke_configs": {"leader": "AQ", "helper": "AQ"}}), ""),
    ];
    for (extra, message) in cases {
        let vdaf = extra.get("vdaf").cloned().unwrap_or_else(|| count.clone());
        let err = TaskFile::parse(&task_json(&vdaf, extra.clone())).unwrap_err();
        assert!(err.message().contains(message), "{extra}: {}", err.message());
    }
    assert!(TaskFile::parse("[1]").unwrap_err().message().contains("a JSON object"));
    let none = TaskFile::parse(&task_json(&count, json!({"hpke_configs": null}))).unwrap();
    assert!(none.report_builder().unwrap_err().message().contains("has no hpke_configs"));
}
