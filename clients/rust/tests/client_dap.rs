//! Two-aggregator metrics through `TelemetryClient` (feature `prio`; Python's `ldp/client/dap.py`): the charges and
//! per-window caps (Python's numbers, bit for bit), the task checked against the spec, the measurement each report
//! carries (opened and aggregated by prio 0.16.8's aggregators, draft 08), the report's time in its charged window,
//! opting out, the file store killed while recording, and the C interface. The upload to a leader is in
//! `client_dap/leader.rs` (feature `uploader` too).

#![cfg(feature = "prio")]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::vdaf08::aggregate;
use ldp_client::dap::{open_input_share, Aggregator, HpkeKeypair, HpkeSuite, Report, TaskFile};
use ldp_client::ledger::{FileStore, MemoryStore};
use ldp_client::prio3::Prio3Type;
use ldp_client::random::KeyedRandomSource;
use ldp_client::upload::Outbox;
use ldp_client::{
    json, CollectionSpec, EncoderOptions, Error, PayloadValue, PrivacyCost, RefusalCode, TelemetryClient, Value,
};
use prio08::vdaf::prio3::{Prio3Count, Prio3Histogram};

#[cfg(feature = "uploader")]
#[path = "client_dap/leader.rs"]
mod leader;

/// 2023-11-14T22:13:20Z, in the window 19675 of a day.
const NOW: f64 = 1_700_000_000.0;
const DAY: i64 = 86_400;

/// The example spec of docs/two-aggregators.md (without its central target), and a local metric beside.
fn spec_doc() -> Value {
    json!({"spec_version": 1, "name": "example_browser", "window_seconds": DAY,
        "budget": {"per_window": 10.0, "lifetime": 400.0}, "upload": {"min_interval_seconds": 0},
        "metrics": {
            "search_engine": {"protocol": "grr",
                "params": {"epsilon": 1.0, "domain_size": 4, "labels": ["engine_a", "engine_b", "engine_c", "other"]},
                "budget": {"per_report": 1.0, "per_window": 1.0, "lifetime": 365.0}, "trust": "two-aggregator"},
            "crashed": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75},
                "budget": {"per_report": 1.1, "per_window": 2.2, "lifetime": 200.0}, "trust": "two-aggregator+local"},
            "plain": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 3}, "budget": {"per_report": 1.0}}}})
}

fn spec() -> CollectionSpec {
    CollectionSpec::from_value(&spec_doc(), "spec").unwrap()
}

/// The leader's and the helper's keys.
struct Keys {
    leader: HpkeKeypair,
    helper: HpkeKeypair,
}

fn keys() -> Keys {
    Keys {
        leader: HpkeKeypair::generate(1, HpkeSuite::DEFAULT).unwrap(),
        helper: HpkeKeypair::generate(2, HpkeSuite::DEFAULT).unwrap(),
    }
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The task file of `metric` of `spec_doc()` as `ldp collect task` writes it (VDAF `draft`), its leader at `url`.
fn task_doc(metric: &str, draft: u8, url: &str, keys: &Keys) -> Value {
    task_doc_of(&spec_doc(), metric, draft, url, keys)
}

/// The task file of `metric` of the spec `doc` (its task ID `draft` 32 times).
fn task_doc_of(doc: &Value, metric: &str, draft: u8, url: &str, keys: &Keys) -> Value {
    let m = &doc["metrics"][metric];
    let s = CollectionSpec::from_value(doc, "spec").unwrap();
    let vdaf = match m["protocol"].as_str().unwrap() {
        "rr" => json!({"type": "Prio3Count", "draft": draft}),
        _ => json!({"type": "Prio3Histogram", "length": m["params"]["domain_size"], "draft": draft}),
    };
    let local =
        (m["trust"] == "two-aggregator+local").then(|| json!({"protocol": m["protocol"], "params": m["params"]}));
    let config = |k: &HpkeKeypair| b64(&k.config().encode().unwrap());
    json!({"format": "ldp-task/1", "task_id": b64(&[draft; 32]), "app": doc["name"], "metric": metric,
        "vdaf": vdaf, "window_seconds": doc["window_seconds"], "time_precision": 3600, "min_batch_size": 1,
        "noise": {"mechanism": "none"}, "leader_url": url, "helper_url": "http://127.0.0.1:9/helper",
        "collector_hpke_config": "AQ", "local": local, "central": null,
        "reports_per_window": s.reports_per_window(metric).unwrap(),
        "hpke_configs": {"leader": config(&keys.leader), "helper": config(&keys.helper)}})
}

fn task(metric: &str, draft: u8, url: &str, keys: &Keys) -> TaskFile {
    TaskFile::parse(&task_doc(metric, draft, url, keys).to_string()).unwrap()
}

/// A client in memory at clock `NOW`, with the tasks of both two-aggregator metrics (VDAF draft 08).
fn client(keys: &Keys) -> TelemetryClient {
    TelemetryClient::builder(spec(), MemoryStore::new())
        .clock(|| NOW)
        .task("search_engine", task("search_engine", 8, "http://127.0.0.1:9", keys))
        .task("crashed", task("crashed", 8, "http://127.0.0.1:9", keys))
        .build()
        .unwrap()
}

/// The two-aggregator reports of `client`'s outbox, oldest first, taken out of it (the outbox as the uploader sees
/// it: the lane's head, then its acknowledgement).
fn take_reports(client: &TelemetryClient) -> Vec<(String, Report)> {
    let mut out = Vec::new();
    while let Some(r) = client.next_dap_report().unwrap() {
        assert_eq!(client.acknowledge_dap_report(r.id).unwrap(), 1);
        out.push((r.url, Report::decode(&r.body).unwrap()));
    }
    out
}

/// A report as the aggregators receive it: its ID (the nonce), its public share, each aggregator's input share.
type Opened = ([u8; 16], Vec<u8>, Vec<Vec<u8>>);

/// The shares of `reports` opened by each aggregator: what `common::vdaf08::aggregate` takes.
fn opened(keys: &Keys, task_id: &[u8; 32], reports: &[Report]) -> Vec<Opened> {
    let open = |r: &Report, kp: &HpkeKeypair, a: Aggregator| {
        open_input_share(kp, a, task_id, &r.metadata, &r.public_share, r.encrypted_input_share(a)).unwrap()
    };
    reports
        .iter()
        .map(|r| {
            let shares = vec![open(r, &keys.leader, Aggregator::Leader), open(r, &keys.helper, Aggregator::Helper)];
            (r.metadata.report_id, r.public_share.clone(), shares)
        })
        .collect()
}

fn parts(v: &[Opened]) -> Vec<common::vdaf08::Report<'_>> {
    v.iter().map(|(n, p, s)| (n, p.as_slice(), s.as_slice())).collect()
}

#[test]
fn charges_caps_and_reports_a_window_are_pythons_bit_for_bit() {
    // Python's CollectionSpec.report_charge, reports_per_window and device_window_cap of the same specs.
    let s = spec();
    assert_eq!(s.report_charge("crashed").unwrap(), PrivacyCost::new(1.0986122886681098, 0.0));
    assert_eq!(s.reports_per_window("crashed").unwrap(), Some(2));
    assert_eq!(s.device_window_cap("crashed").unwrap(), Some(PrivacyCost::new(2.1972245773362196, 0.0)));
    assert_eq!(s.report_charge("search_engine").unwrap(), PrivacyCost::new(1.0, 0.0));
    assert_eq!(s.device_window_cap("search_engine").unwrap(), Some(PrivacyCost::new(1.0, 0.0)));
    let caps = CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": "caps", "window_seconds": 3600,
            "budget": {"per_window": {"epsilon": 3.3, "delta": 1e-8}, "lifetime": {"epsilon": 100, "delta": 1e-6}},
            "metrics": {
                "a": {"protocol": "oue", "params": {"epsilon": 1.2, "domain_size": 5}, "budget": {"per_report": 1.5},
                      "trust": "two-aggregator+local"},
                "b": {"protocol": "sue", "params": {"epsilon": 0.7, "domain_size": 3},
                      "budget": {"per_report": {"epsilon": 0.7, "delta": 1e-9}}, "trust": "two-aggregator"},
                "c": {"protocol": "grr", "params": {"epsilon": 0.3, "domain_size": 3},
                      "budget": {"per_report": 0.3, "per_window": 0.9}}}}),
        "caps",
    )
    .unwrap();
    let got = |m: &str| {
        (caps.report_charge(m).unwrap(), caps.reports_per_window(m).unwrap(), caps.device_window_cap(m).unwrap())
    };
    assert_eq!(got("a"), (PrivacyCost::new(1.2, 0.0), Some(2), Some(PrivacyCost::new(2.4, 0.0))));
    assert_eq!(got("b"), (PrivacyCost::new(0.7, 1e-9), Some(4), Some(PrivacyCost::new(2.8, 4e-9))));
    // A local metric keeps its own cap.
    assert_eq!(got("c"), (PrivacyCost::new(0.3, 0.0), Some(3), Some(PrivacyCost::new(0.9, 0.0))));
}

#[test]
fn each_report_is_charged_capped_a_window_and_carries_its_measurement() {
    let keys = keys();
    let c = client(&keys);
    c.record("search_engine", &json!("engine_c")).unwrap();
    let e = c.record("search_engine", &json!("engine_a")).unwrap_err();
    assert!(
        matches!(&e, Error::BudgetExceeded { scope, period, .. } if scope == "search_engine" && period == "window")
    );
    c.record("crashed", &json!(true)).unwrap();
    c.record("crashed", &json!(false)).unwrap();
    let e = c.record("crashed", &json!(true)).unwrap_err();
    assert!(
        matches!(&e, Error::BudgetExceeded { scope, cap, .. } if scope == "crashed" && cap.epsilon == 2.0 * 3f64.ln())
    );
    assert_eq!(c.spent(Some("search_engine"), false).unwrap(), PrivacyCost::new(1.0, 0.0));
    assert_eq!(c.spent(Some("crashed"), false).unwrap().epsilon, 2.0 * 1.0986122886681098);
    c.record("plain", &json!(2)).unwrap();
    assert_eq!(c.pending().unwrap(), 4);
    let reports = take_reports(&c);
    assert_eq!(reports.len(), 3, "the collector's report is not the leader's");
    let url = format!("http://127.0.0.1:9/tasks/{}/reports", b64(&[8; 32]));
    assert!(reports.iter().all(|(u, r)| *u == url && r.metadata.time == 1_699_999_200), "the hour of NOW");
    let task_id = [8u8; 32];
    let hist = Prio3Type::histogram_for(ldp_client::prio3::VdafDraft::Draft08, 4);
    let Prio3Type::Histogram { chunk_length, .. } = hist else { unreachable!() };
    let search = opened(&keys, &task_id, &[reports[0].1.clone()]);
    let vdaf = Prio3Histogram::new_histogram(2, 4, chunk_length).unwrap();
    assert_eq!(aggregate(&vdaf, &parts(&search)).unwrap(), vec![0, 0, 1, 0], "the exact value, engine_c");
    let crashed = opened(&keys, &task_id, &[reports[1].1.clone(), reports[2].1.clone()]);
    assert!(aggregate(&Prio3Count::new_count(2).unwrap(), &parts(&crashed)).unwrap() <= 2);
    assert_eq!(c.counts().unwrap()["crashed"].uploaded, 2);
}

#[test]
fn a_local_reports_measurement_is_its_randomized_field() {
    // A seeded simulation: the client's randomness is KeyedRandomSource(seed, "d"), and an encoder drawing from the
    // same stream after the two 32-byte secrets the client drew at its start makes the same randomized reports.
    let keys = keys();
    let seed = [7u8; 16];
    let day = Arc::new(AtomicU64::new(0));
    let d = day.clone();
    let c = TelemetryClient::builder(spec(), MemoryStore::new())
        .clock(move || NOW + (d.load(Ordering::SeqCst) as i64 * DAY) as f64)
        .rng(KeyedRandomSource::new(&seed, b"d").unwrap())
        .task("crashed", task("crashed", 8, "http://127.0.0.1:9", &keys))
        .build()
        .unwrap();
    let mut twin_rng = KeyedRandomSource::new(&seed, b"d").unwrap();
    for _ in 0..2 {
        ldp_client::random::RandomSource::token_bytes(&mut twin_rng, 32).unwrap();
    }
    let params = spec().metric("crashed").unwrap().params.clone();
    let rr = ldp_client::protocols::get("rr").unwrap();
    let mut twin = rr.encoder(params, EncoderOptions { rng: Some(Box::new(twin_rng)), ..Default::default() }).unwrap();
    let values = [true, false, true, true, false, false, true, false, false, true];
    let mut want = Vec::new();
    for (i, value) in values.into_iter().enumerate() {
        day.store(i as u64, Ordering::SeqCst); // a window each: the cap is two reports a window
        c.record("crashed", &json!(value)).unwrap();
        let bit = twin.encode(&json!(value)).unwrap().get("bit").cloned();
        want.push(u64::from(bit == Some(PayloadValue::Uint(1))));
    }
    let reports = take_reports(&c);
    let got: Vec<u64> = reports
        .iter()
        .map(|(_, r)| {
            aggregate(&Prio3Count::new_count(2).unwrap(), &parts(&opened(&keys, &[8; 32], std::slice::from_ref(r))))
        })
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, want);
    assert!(want.iter().zip(values).any(|(w, v)| (*w == 1) != v), "some bit was flipped: the noise is in");
}

#[test]
fn the_report_time_is_clamped_into_the_charged_window() {
    // The ledger's clock never goes back: a reading before the last one charges the last one's window, and the
    // report carries that window's first second (rounded down to the task's hour).
    let keys = keys();
    let reading = Arc::new(AtomicU64::new((NOW as u64 + DAY as u64) * 1000));
    let r = reading.clone();
    let c = TelemetryClient::builder(spec(), MemoryStore::new())
        .clock(move || r.load(Ordering::SeqCst) as f64 / 1000.0)
        .task("crashed", task("crashed", 8, "http://127.0.0.1:9", &keys))
        .build()
        .unwrap();
    c.record("crashed", &json!(true)).unwrap();
    reading.store((NOW as u64 - 3 * DAY as u64) * 1000 + 500, Ordering::SeqCst);
    c.record("crashed", &json!(true)).unwrap();
    let times: Vec<u64> = take_reports(&c).iter().map(|(_, r)| r.metadata.time).collect();
    let window_start = (NOW as u64 + DAY as u64) / DAY as u64 * DAY as u64;
    assert_eq!(times, vec![1_700_085_600, window_start], "the hour of the reading, then its window's first second");
}

fn refused(doc: Value) -> String {
    let file = TaskFile::parse(&doc.to_string()).unwrap();
    let e = TelemetryClient::builder(spec(), MemoryStore::new()).task("crashed", file).build().unwrap_err();
    assert!(matches!(e, Error::Value(_)), "{e:?}");
    e.to_string()
}

#[test]
fn a_task_that_is_not_its_metrics_under_the_spec_is_refused_naming_the_difference() {
    let keys = keys();
    let good = task_doc("crashed", 18, "https://leader.example", &keys);
    let with = |k: &str, v: Value| {
        let mut d = good.clone();
        d[k] = v;
        d
    };
    let cases = [
        (with("metric", json!("search_engine")), "its metric is \"search_engine\""),
        (with("window_seconds", json!(3600)), "its window_seconds is 3600, the spec's 86400"),
        (with("local", Value::Null), "its trust is \"two-aggregator\", the spec's \"two-aggregator+local\""),
        (with("vdaf", json!({"type": "Prio3Histogram", "length": 2})), "its vdaf is \"Prio3Histogram\""),
        (with("reports_per_window", json!(3)), "its reports_per_window is 3, the spec's 2"),
        (with("reports_per_window", Value::Null), "its reports_per_window is null, the spec's 2"),
        (with("local", json!({"protocol": "rr", "params": {"p": 0.2, "q": 0.75}})), "its local is"),
        (with("local", json!({"protocol": "grr", "params": {"epsilon": 1, "domain_size": 2}})), "its local is"),
        (with("hpke_configs", Value::Null), "has no hpke_configs"),
    ];
    for (doc, want) in cases {
        let e = refused(doc);
        assert!(e.contains(want), "{want:?} not in {e}");
    }
    // Numbers compare by value, as Python's dict equality does: 0.25 and 2.5e-1 are one parameter.
    let same = with("local", json!({"protocol": "rr", "params": {"p": 2.5e-1, "q": 0.75}}));
    let file = TaskFile::parse(&same.to_string()).unwrap();
    TelemetryClient::builder(spec(), MemoryStore::new()).task("crashed", file).build().unwrap();
    // Another length of the histogram.
    let mut hist = task_doc("search_engine", 18, "https://leader.example", &keys);
    hist["vdaf"] = json!({"type": "Prio3Histogram", "length": 5});
    let file = TaskFile::parse(&hist.to_string()).unwrap();
    let e = TelemetryClient::builder(spec(), MemoryStore::new()).task("search_engine", file).build().unwrap_err();
    assert!(e.to_string().contains("has Prio3 parameters {\"length\":5}, the spec's metric {\"length\":4}"), "{e}");
    // A metric that is no two-aggregator one, and a file that does not parse.
    let e = TelemetryClient::builder(spec(), MemoryStore::new()).task("plain", task("crashed", 8, "http://x", &keys));
    let e = e.build().unwrap_err().to_string();
    assert!(e.contains("\"plain\" is no two-aggregator metric") && e.contains("crashed, search_engine"), "{e}");
    let e = TelemetryClient::builder(spec(), MemoryStore::new()).task_json("crashed", "{").build().unwrap_err();
    assert!(e.to_string().contains("the task given for metric \"crashed\": a task file is JSON"), "{e}");
}

#[test]
fn without_its_task_a_two_aggregator_metric_is_refused_and_nothing_spent() {
    let c = TelemetryClient::builder(spec(), MemoryStore::new()).clock(|| NOW).build().unwrap();
    let e = c.record("crashed", &json!(true)).unwrap_err();
    let r = e.refusal().expect("a refusal");
    assert_eq!(
        (r.code, r.fields_json()),
        (RefusalCode::TrustModel, r#"{"metric":"crashed","trust":"two-aggregator+local"}"#.into())
    );
    assert!(e.to_string().contains("no task was given for it (ClientBuilder::task"), "{e}");
    assert_eq!((c.pending().unwrap(), c.spent(None, true).unwrap()), (0, PrivacyCost::ZERO));
    // Given later, the task makes the metric recordable.
    c.add_task("crashed", task("crashed", 18, "http://127.0.0.1:9", &keys())).unwrap();
    c.record("crashed", &json!(true)).unwrap();
    assert_eq!(c.pending().unwrap(), 1);
}

#[test]
fn opting_out_deletes_the_pending_two_aggregator_reports_and_keeps_the_budget_spent() {
    let keys = keys();
    let c = client(&keys);
    c.record("search_engine", &json!(0)).unwrap();
    c.record("plain", &json!(1)).unwrap();
    c.record("crashed", &json!(false)).unwrap();
    let spent = c.spent(None, true).unwrap();
    c.opt_out().unwrap();
    assert_eq!((c.pending().unwrap(), c.next_dap_report().unwrap()), (0, None));
    assert_eq!(c.spent(None, true).unwrap(), spent);
    let counts = c.counts().unwrap();
    assert_eq!((counts["search_engine"].discarded, counts["crashed"].discarded), (1, 1));
    assert!(matches!(c.record("crashed", &json!(true)), Err(Error::OptedOut(_))));
    c.opt_in().unwrap();
    c.record("crashed", &json!(true)).unwrap();
}

#[test]
fn the_lanes_share_one_queue_each_sending_from_its_head() {
    let keys = keys();
    let c = client(&keys);
    c.record("plain", &json!(0)).unwrap();
    c.record("search_engine", &json!(1)).unwrap();
    c.record("plain", &json!(1)).unwrap();
    assert_eq!(c.next_dap_report().unwrap(), None, "a report for the collector is at the head");
    let batch = c.next_batch(None).unwrap().unwrap();
    assert_eq!(batch.reports.len(), 1, "the collector's batch stops at the two-aggregator report");
    c.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
    assert_eq!(c.next_batch(None).unwrap(), None);
    assert!(c.has_collector_pending().unwrap());
    assert_eq!(take_reports(&c).len(), 1);
    assert_eq!(c.next_batch(None).unwrap().unwrap().reports.len(), 1);
}

/// The child of the kill test: records and acknowledges two-aggregator reports until killed.
#[test]
fn dap_crash_child() {
    let Some(dir) = std::env::var_os("LDP_DAP_CRASH_CHILD") else { return };
    let c = crash_client(Path::new(&dir), Duration::from_secs(30)).unwrap();
    for i in 0u64.. {
        match c.record("m", &json!(i % 3)) {
            Ok(_) | Err(Error::BudgetExceeded { .. }) => {}
            Err(e) => panic!("record: {e}"),
        }
        if i % 3 == 0 {
            if let Some(r) = c.next_dap_report().unwrap() {
                c.acknowledge_dap_report(r.id).unwrap();
            }
        }
    }
}

const CRASH_LIFETIME: f64 = 150.0;

fn crash_client(dir: &Path, timeout: Duration) -> ldp_client::Result<TelemetryClient> {
    let spec = CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": "dap-crash", "window_seconds": DAY,
            "budget": {"per_window": CRASH_LIFETIME, "lifetime": CRASH_LIFETIME},
            "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 3},
                              "budget": {"per_report": 1.5}, "trust": "two-aggregator"}}}),
        "spec",
    )?;
    let keys = Keys {
        leader: HpkeKeypair::derive(1, HpkeSuite::DEFAULT, &[1; 32])?,
        helper: HpkeKeypair::derive(2, HpkeSuite::DEFAULT, &[2; 32])?,
    };
    let config = |k: &HpkeKeypair| b64(&k.config().encode().unwrap());
    let file = json!({"format": "ldp-task/1", "task_id": b64(&[3; 32]), "app": "dap-crash", "metric": "m",
        "vdaf": {"type": "Prio3Histogram", "length": 3}, "window_seconds": DAY, "leader_url": "http://127.0.0.1:9",
        "local": null, "reports_per_window": 100,
        "hpke_configs": {"leader": config(&keys.leader), "helper": config(&keys.helper)}});
    let mut store = FileStore::with_timeout(dir, timeout)?;
    store.set_compact_bytes(4096);
    TelemetryClient::builder(spec, store).clock(|| NOW).task_json("m", &file.to_string()).build()
}

fn spawn_child(dir: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "dap_crash_child", "--nocapture", "--test-threads=1"])
        .env("LDP_DAP_CRASH_CHILD", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Two processes record and acknowledge two-aggregator reports on one state folder and are SIGKILLed at set moments,
/// 40 times: after every kill the store opens at once and whole, never over its cap, and holds exactly the reports
/// its charges paid for (pending or acknowledged).
#[test]
fn killed_while_recording_two_aggregator_reports_never_over_spends_or_locks_out() {
    let dir = std::env::temp_dir().join(format!("ldp-dap-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cost = 1.5;
    let mut max_count = 0;
    for round in 0..20u64 {
        let (mut a, mut b) = (spawn_child(&dir), spawn_child(&dir));
        std::thread::sleep(Duration::from_millis(30 + round * 7 % 50));
        a.kill().unwrap();
        std::thread::sleep(Duration::from_millis(round * 3 % 11));
        b.kill().unwrap();
        let _ = (a.wait(), b.wait());
        let c = crash_client(&dir, Duration::from_secs(2)).unwrap_or_else(|e| panic!("round {round}: locked out? {e}"));
        let spent = c.spent(Some("m"), true).unwrap().epsilon;
        assert!(spent <= CRASH_LIFETIME * (1.0 + 1e-9), "round {round}: spent {spent}");
        let count = c.pending().unwrap() + c.uploaded().unwrap().iter().map(|(_, n)| n).sum::<u64>();
        assert_eq!((spent / cost).round() as u64, count, "round {round}: {spent} spent for {count} reports");
        assert!((spent - count as f64 * cost).abs() < 1e-9, "round {round}");
        max_count = max_count.max(count);
    }
    assert!(max_count > 10, "the children made only {max_count} reports: the kills tested little");
    let _ = std::fs::remove_dir_all(&dir);
}
