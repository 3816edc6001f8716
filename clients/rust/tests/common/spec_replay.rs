//! The replay of a spec fixture of `conformance/specs/` (`trust.json`, `poplar1.json`: conformance/spec_vectors.py's
//! case format) through this client: an accepted spec's canonical form and fingerprint byte for byte, its trust per
//! metric, each record's refusal (type, code and fields) or success, and the reports pending after them; a refused
//! spec's errors at the same paths in the same order, each `.trust` error with Python's text up to its `, got` (the
//! value after it in this client's notation).

use ldp_client::ledger::MemoryStore;
use ldp_client::{json, CollectionSpec, Error, RefusalCode, TelemetryClient, Value};

/// The fixed clock of the fixtures' records.
pub const CLOCK: f64 = 1_764_000_000.0;

/// `conformance/specs/<name>`, decoded.
pub fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/specs").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("its JSON")
}

fn before_got(message: &str) -> &str {
    message.split(", got ").next().unwrap_or(message)
}

/// A fresh device of `spec` in memory, its clock [`CLOCK`], given no task.
pub fn client(spec: CollectionSpec) -> TelemetryClient {
    TelemetryClient::builder(spec, MemoryStore::new()).clock(|| CLOCK).build().unwrap()
}

/// `e` is the refusal `want` (its type, code and fields: the message is this client's own).
pub fn check_refusal(want: &Value, e: &Error, what: &str) {
    let r = e.refusal().unwrap_or_else(|| panic!("{what}: not a refusal: {e:?}"));
    assert_eq!(want["type"].as_str(), Some(r.kind.as_str()), "{what}: {e}");
    assert_eq!(want["code"].as_str(), Some(r.code.as_str()), "{what}: {e}");
    assert_eq!(want["fields"], Value::Object(r.fields.clone()), "{what}: {e}");
    if r.code == RefusalCode::TrustModel {
        assert!(e.to_string().contains("two-aggregator"), "{what}: {e}");
    }
}

/// Every refused case of `doc`: the same paths in the same order, and at each `.trust` path Python's message up to
/// its `, got`. Returns how many cases were replayed.
pub fn replay_refused(doc: &Value) -> usize {
    let mut n = 0;
    for case in doc["cases"].as_array().unwrap().iter().filter(|c| c.get("errors").is_some()) {
        let name = case["name"].as_str().unwrap();
        let Err(Error::Spec { errors, .. }) = CollectionSpec::from_value(&case["spec"], "spec") else {
            panic!("{name}: accepted")
        };
        let got: Vec<(&str, &str)> = errors.iter().map(|e| e.split_once(": ").unwrap()).collect();
        let want = case["errors"].as_array().unwrap();
        let paths: Vec<&str> = want.iter().map(|e| e["path"].as_str().unwrap()).collect();
        assert_eq!(got.iter().map(|(p, _)| *p).collect::<Vec<_>>(), paths, "{name}: {errors:#?}");
        for (w, (path, message)) in want.iter().zip(&got) {
            if !path.ends_with(".trust") {
                continue;
            }
            let python = w["message"].as_str().unwrap();
            assert_eq!(before_got(message), before_got(python), "{name}: {path}");
            assert_eq!(message.contains(", got "), python.contains(", got "), "{name}: {message}");
        }
        n += 1;
    }
    n
}

/// Every accepted case of `doc`: the canonical form, fingerprint and trust per metric; on a fresh device given no
/// task, each record (and the `record_many` call) refused as Python refused it, or recorded, and the reports pending.
/// Returns how many cases were replayed.
pub fn replay_accepted(doc: &Value) -> usize {
    let mut n = 0;
    for case in doc["cases"].as_array().unwrap().iter().filter(|c| c.get("fingerprint").is_some()) {
        let name = case["name"].as_str().unwrap();
        let spec = CollectionSpec::from_value(&case["spec"], name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(spec.canonical(), case["canonical"].as_str().unwrap(), "{name}");
        assert_eq!(spec.fingerprint(), case["fingerprint"].as_str().unwrap(), "{name}");
        let trust: serde_json::Map<String, Value> =
            spec.metrics.iter().map(|m| (m.name.clone(), json!(m.trust.as_str()))).collect();
        assert_eq!(Value::Object(trust), case["trust"], "{name}");
        n += 1;
        let Some(pending) = case.get("pending") else { continue };
        let client = client(spec);
        for (i, r) in case.get("records").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let (metric, what) = (r["metric"].as_str().unwrap(), format!("{name}: record {i} ({})", r["value"]));
            match (r.get("error"), client.record(metric, &r["value"])) {
                (None, Ok(_)) => {}
                (None, Err(e)) => panic!("{what}: {e}"),
                (Some(_), Ok(_)) => panic!("{what}: recorded"),
                (Some(want), Err(e)) => check_refusal(want, &e, &what),
            }
        }
        if let Some(many) = case.get("record_many") {
            let items: Vec<(String, Value)> = many["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| (i[0].as_str().unwrap().to_string(), i[1].clone()))
                .collect();
            match (many.get("error"), client.record_many(&items)) {
                (None, Ok(_)) => {}
                (None, Err(e)) => panic!("{name}: record_many: {e}"),
                (Some(_), Ok(_)) => panic!("{name}: record_many recorded"),
                (Some(want), Err(e)) => check_refusal(want, &e, &format!("{name}: record_many")),
            }
        }
        assert_eq!(json!(client.pending().unwrap()), *pending, "{name}");
    }
    n
}
