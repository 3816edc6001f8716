//! A spec's `poplar1` metric recorded by `TelemetryClient` given its Poplar1 task (feature `poplar1`; Python's
//! `ldp/client/dap.py`): each string sealed as a Poplar1 DAP-09 report, queued with the other reports and charged the
//! spec's `per_report`; the report opens at both aggregators and counts exactly its string (the prio crate's
//! aggregators); every value of `conformance/specs/poplar1.json`'s measurements recorded or refused with Python's
//! code, nothing charged for a refused one; a task that is not the metric's under the spec refused when the client
//! is built; and the C interface's `ldp_client_add_task` and `ldp_client_record_string` on the same.

#![cfg(feature = "poplar1")]

mod common;

use common::poplar1::{leaf_counts, spec_doc, task_doc, Keys};
use common::spec_replay::fixture;
use ldp_client::dap::{AnyTaskFile, Poplar1TaskFile, Report, TaskFile};
use ldp_client::ledger::MemoryStore;
use ldp_client::upload::Outbox;
use ldp_client::{json, CollectionSpec, Error, RefusalCode, TelemetryClient, Value};

/// 2023-11-14T22:13:20Z.
const NOW: f64 = 1_700_000_000.0;

fn spec(doc: &Value) -> CollectionSpec {
    CollectionSpec::from_value(doc, "spec").unwrap()
}

/// A client of `doc` in memory at `NOW`, given the `new_words` task `task`.
fn client_with(doc: &Value, task: &Value) -> ldp_client::Result<TelemetryClient> {
    TelemetryClient::builder(spec(doc), MemoryStore::new())
        .clock(|| NOW)
        .task_json("new_words", &task.to_string())
        .build()
}

/// The two-aggregator reports of `client`'s outbox, oldest first, taken out of it: each's leader URL and report.
fn take_reports(client: &TelemetryClient) -> Vec<(String, Report)> {
    let mut out = Vec::new();
    while let Some(r) = client.next_dap_report().unwrap() {
        assert_eq!(client.acknowledge_dap_report(r.id).unwrap(), 1);
        out.push((r.url, Report::decode(&r.body).unwrap()));
    }
    out
}

#[test]
fn each_string_is_sealed_as_a_poplar1_report_that_counts_exactly_it() {
    let (doc, keys) = (spec_doc(16), Keys::new());
    let task = task_doc(&doc, "new_words", 9, "https://leader.example/", &keys);
    let client = client_with(&doc, &task).unwrap();
    let words = ["hi", "hi", "é", "", "z"];
    for w in words {
        client.record("new_words", &json!(w)).unwrap();
    }
    assert_eq!(client.pending().unwrap(), 5);
    assert_eq!(client.spent(Some("new_words"), false).unwrap().epsilon, 2.5, "the spec's per_report, 5 times");
    let reports = take_reports(&client);
    let url = format!("https://leader.example/tasks/{}/reports", task["task_id"].as_str().unwrap());
    assert!(reports.iter().all(|(u, r)| *u == url && r.metadata.time == 1_699_999_200), "{:?}", reports[0].0);
    let reports: Vec<Report> = reports.into_iter().map(|(_, r)| r).collect();
    // The candidates in lexicographic order (the aggregation parameter's).
    let candidates: [&[u8]; 5] = [b"\0\0", b"hi", b"hj", b"z\0", "é".as_bytes()];
    assert_eq!(leaf_counts(&keys, &[9; 32], 16, &reports, &candidates), [1, 2, 0, 1, 1]);
    // One by one: each report counts its own string and no other.
    for (w, r) in words.iter().zip(&reports) {
        let mut padded = w.as_bytes().to_vec();
        padded.resize(2, 0);
        let counts = leaf_counts(&keys, &[9; 32], 16, std::slice::from_ref(r), &candidates);
        let want: Vec<u64> = candidates.iter().map(|c| u64::from(*c == padded.as_slice())).collect();
        assert_eq!(counts, want, "{w:?}");
    }
}

#[test]
fn pythons_measurement_vectors_are_recorded_or_refused_by_code_with_nothing_charged() {
    let doc = spec_doc(64);
    let client = client_with(&doc, &task_doc(&doc, "new_words", 3, "https://leader.example", &Keys::new())).unwrap();
    let (mut recorded, mut refused) = (0, 0);
    for m in fixture("poplar1.json")["measurements"].as_array().unwrap().iter().filter(|m| m["bits"] == 64) {
        let before = (client.pending().unwrap(), client.spent(None, true).unwrap());
        match (m.get("error"), client.record("new_words", &m["value"])) {
            (None, Ok(_)) => recorded += 1,
            (Some(code), Err(e)) => {
                assert_eq!(e.refusal().map(|r| r.code.as_str()), code.as_str(), "{m}: {e}");
                assert_eq!((client.pending().unwrap(), client.spent(None, true).unwrap()), before, "{m}");
                refused += 1;
            }
            (_, got) => panic!("{m}: {got:?}"),
        }
    }
    assert!(recorded >= 8 && refused >= 8, "{recorded} recorded, {refused} refused");
    assert_eq!(client.pending().unwrap(), recorded);
    assert_eq!(client.spent(Some("new_words"), false).unwrap().epsilon, 0.5 * recorded as f64);
    // The refusal's fields, as Python's: a NUL at the end, a string too long, a number.
    let fields = |v: Value| client.record("new_words", &v).unwrap_err().refusal().unwrap().fields_json();
    assert_eq!(fields(json!("ab\u{0}")), r#"{"char":"\u0000"}"#);
    assert_eq!(fields(json!("123456789")), r#"{"got":9,"max":8,"unit":"bytes"}"#);
    assert_eq!(fields(json!(5)), r#"{"expected":"string_or_bytes","got":"int"}"#);
}

#[test]
fn the_strings_queue_with_the_other_reports_and_a_window_caps_them() {
    let doc = spec_doc(16);
    let keys = Keys::new();
    let mut doc_small = doc.clone();
    doc_small["metrics"]["new_words"]["budget"]["per_window"] = json!(1.0); // two reports a window
    let client = client_with(&doc_small, &task_doc(&doc_small, "new_words", 4, "http://127.0.0.1:9", &keys)).unwrap();
    let e = client.record_many(&[("new_words", json!("a")), ("dark_mode", json!(true))]).unwrap_err();
    assert!(matches!(&e, Error::Item { index: 1, metric, .. } if metric == "dark_mode"), "no task for it: {e:?}");
    assert_eq!(e.refusal().map(|r| r.code), Some(RefusalCode::TrustModel));
    assert_eq!(client.pending().unwrap(), 0, "all or nothing");
    let e = client.record_many(&[("new_words", json!("a")), ("new_words", json!("abc"))]).unwrap_err();
    assert!(matches!(&e, Error::Item { index: 1, .. }) && e.refusal().unwrap().code == RefusalCode::ValueTooLong);
    client.record_many(&[("new_words", json!("a")), ("new_words", json!("b"))]).unwrap();
    assert!(matches!(client.record("new_words", &json!("c")), Err(Error::BudgetExceeded { .. })));
    assert_eq!(client.counts().unwrap()["new_words"].pending, 2);
}

/// The error of a client of `doc` given `task` for `new_words`, or of `metric` when given.
fn refused(doc: &Value, task: &Value, metric: &str) -> String {
    let b = TelemetryClient::builder(spec(doc), MemoryStore::new()).task_json(metric, &task.to_string());
    let e = b.build().unwrap_err();
    assert!(matches!(e, Error::Value(_)), "{e:?}");
    e.to_string()
}

#[test]
fn a_task_that_is_not_the_metrics_under_the_spec_is_refused_when_the_client_is_made() {
    let (doc, keys) = (spec_doc(64), Keys::new());
    let good = task_doc(&doc, "new_words", 5, "https://leader.example", &keys);
    let with = |path: &[&str], v: Value| {
        let mut d = good.clone();
        let last = path.len() - 1;
        let slot = path[..last].iter().fold(&mut d, |d, k| &mut d[*k]);
        slot[path[last]] = v;
        d
    };
    let cases = [
        (
            with(&["vdaf", "bits"], json!(32)),
            r#"has Poplar1 parameters {"bits":32,"max_candidates":16}, the spec's metric {"bits":64,"max_candidates":16}"#,
        ),
        (with(&["vdaf", "max_candidates"], json!(32)), r#"has Poplar1 parameters {"bits":64,"max_candidates":32}"#),
        (with(&["metric"], json!("other")), "its metric is \"other\""),
        (with(&["window_seconds"], json!(3600)), "its window_seconds is 3600, the spec's 86400"),
        (with(&["reports_per_window"], json!(7)), "its reports_per_window is 7, the spec's 100"),
        (with(&["vdaf"], json!({"type": "Prio3Count"})), "its vdaf is \"Prio3Count\", the spec's \"Poplar1\""),
        (with(&["hpke_configs"], Value::Null), "has no hpke_configs"),
        (with(&["local"], json!({"protocol": "rr", "params": {"p": 0.25, "q": 0.75}})), "no local protocol"),
        (with(&["vdaf", "draft"], json!(8)), "vdaf.draft of a Poplar1 task must be 18"),
        (with(&["vdaf", "bits"], json!(257)), "bits must be an integer in [1, 256], got 257"),
        (with(&["vdaf", "max_candidates"], json!(1)), "vdaf.max_candidates must be at least 2"),
        (with(&["vdaf", "levels"], json!(65)), "levels must be an integer in [1, 64], got 65"),
        (with(&["vdaf", "chunk_length"], json!(2)), "Poplar1 takes no chunk_length"),
    ];
    for (task, want) in &cases {
        let e = refused(&doc, task, "new_words");
        assert!(e.contains(want), "{want:?} not in {e}");
    }
    // A Poplar1 task for the Prio3 metric.
    let e = refused(&doc, &with(&["metric"], json!("dark_mode")), "dark_mode");
    assert!(e.contains("its vdaf is \"Poplar1\", the spec's \"Prio3Count\""), "{e}");
    // The task's levels and threshold are the collector's: any is the device's task.
    client_with(&doc, &with(&["vdaf", "levels"], json!(8))).unwrap();
    client_with(&doc, &with(&["vdaf", "threshold"], json!(99))).unwrap();
}

#[test]
fn a_poplar1_task_file_is_read_by_its_kind() {
    let (doc, keys) = (spec_doc(64), Keys::new());
    let text = task_doc(&doc, "new_words", 5, "https://leader.example", &keys).to_string();
    let file = Poplar1TaskFile::parse(&text).unwrap();
    assert_eq!((file.bits, file.max_candidates, file.levels, file.threshold), (64, 16, None, Some(2)));
    assert_eq!((file.members.metric.as_str(), file.members.time_precision), ("new_words", 3600));
    assert_eq!(file.report_builder().unwrap().client().bits(), 64);
    assert!(matches!(AnyTaskFile::parse(&text).unwrap(), AnyTaskFile::Poplar1(_)));
    let e = TaskFile::parse(&text).unwrap_err().to_string();
    assert!(e.contains("a Poplar1 task is read by Poplar1TaskFile or AnyTaskFile"), "{e}");
    let client = TelemetryClient::builder(spec(&doc), MemoryStore::new()).task("new_words", file).build().unwrap();
    client.record("new_words", &json!("word")).unwrap();
}

#[cfg(feature = "c-api")]
#[test]
fn the_c_interface_gives_a_poplar1_task_and_records_strings() {
    use ldp_client::ffi::*;
    let (doc, keys) = (spec_doc(64), Keys::new());
    let task = task_doc(&doc, "new_words", 6, "https://leader.example", &keys).to_string();
    let bad = task.replace("\"bits\":64", "\"bits\":32");
    let text = doc.to_string();
    unsafe {
        let mut spec = std::ptr::null_mut();
        assert_eq!(ldp_spec_parse(text.as_ptr(), text.len(), &mut spec), LdpStatus::LdpOk);
        let mut client = std::ptr::null_mut();
        assert_eq!(ldp_client_open_memory(spec, std::ptr::null(), &mut client), LdpStatus::LdpOk);
        let metric = std::ffi::CString::new("new_words").unwrap();
        let record =
            |s: &str| ldp_client_record_string(client, metric.as_ptr(), s.as_ptr(), s.len(), std::ptr::null_mut());
        assert_eq!(record("hello"), LdpStatus::LdpValueError, "no task yet");
        assert_eq!(ldp_client_add_task(client, bad.as_ptr(), bad.len()), LdpStatus::LdpValueError);
        assert_eq!(ldp_client_add_task(client, task.as_ptr(), task.len()), LdpStatus::LdpOk);
        assert_eq!(record("hello"), LdpStatus::LdpOk);
        assert_eq!(record("too long!"), LdpStatus::LdpValueError);
        let code = std::ffi::CStr::from_ptr(ldp_last_error_code()).to_str().unwrap();
        assert_eq!(code, "value_too_long");
        let mut pending = 0u64;
        assert_eq!(ldp_client_pending(client, &mut pending), LdpStatus::LdpOk);
        assert_eq!(pending, 1);
        ldp_client_free(client);
        ldp_spec_free(spec);
    }
}
