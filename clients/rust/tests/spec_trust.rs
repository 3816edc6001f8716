//! The spec's per-metric `trust` against the Python client (`conformance/specs/trust.json`, written by
//! `conformance/spec_vectors.py`): the same canonical form and fingerprint byte for byte, the same trust per metric,
//! the same refusal of a record (a two-aggregator metric: `trust_model`), and a refused spec's errors at the same
//! paths in the same order, each `.trust` error with Python's text up to its `, got` (the value after it in this
//! client's notation).

use ldp_client::ledger::MemoryStore;
use ldp_client::{json, CollectionSpec, Error, RefusalCode, RefusalKind, TelemetryClient, TrustModel, Value};

const CLOCK: f64 = 1_764_000_000.0;

fn fixture() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/specs/trust.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("conformance/specs/trust.json")).expect("its JSON")
}

fn before_got(message: &str) -> &str {
    message.split(", got ").next().unwrap_or(message)
}

fn client(spec: CollectionSpec) -> TelemetryClient {
    TelemetryClient::builder(spec, MemoryStore::new()).clock(|| CLOCK).build().unwrap()
}

/// `e` is the refusal `want` (its type, code and fields: the message is this client's own).
fn check_refusal(want: &Value, e: &Error, what: &str) {
    let r = e.refusal().unwrap_or_else(|| panic!("{what}: not a refusal: {e:?}"));
    assert_eq!(want["type"].as_str(), Some(r.kind.as_str()), "{what}: {e}");
    assert_eq!(want["code"].as_str(), Some(r.code.as_str()), "{what}: {e}");
    assert_eq!(want["fields"], Value::Object(r.fields.clone()), "{what}: {e}");
    assert!(e.to_string().contains("two-aggregator"), "{what}: {e}");
}

#[test]
fn the_fixture_and_the_models() {
    let doc = fixture();
    assert_eq!(doc["format"], json!(1));
    let names: Vec<&str> = TrustModel::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(names, ["local", "shuffle", "two-aggregator", "two-aggregator+local"]);
    assert_eq!(TrustModel::default(), TrustModel::Local);
    assert_eq!(TrustModel::from_name("two-aggregator+local"), Some(TrustModel::TwoAggregatorLocal));
    assert_eq!(TrustModel::from_name("Local"), None);
}

#[test]
fn refused_specs_give_the_same_paths_and_the_trust_errors_pythons_texts() {
    let doc = fixture();
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
    }
}

#[test]
fn accepted_specs_give_pythons_canonical_form_fingerprint_trust_and_refusals() {
    let doc = fixture();
    for case in doc["cases"].as_array().unwrap().iter().filter(|c| c.get("fingerprint").is_some()) {
        let name = case["name"].as_str().unwrap();
        let spec = CollectionSpec::from_value(&case["spec"], name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(spec.canonical(), case["canonical"].as_str().unwrap(), "{name}");
        assert_eq!(spec.fingerprint(), case["fingerprint"].as_str().unwrap(), "{name}");
        let trust: serde_json::Map<String, Value> =
            spec.metrics.iter().map(|m| (m.name.clone(), json!(m.trust.as_str()))).collect();
        assert_eq!(Value::Object(trust), case["trust"], "{name}");
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
}

#[test]
fn a_two_aggregator_metric_is_refused_before_its_value_is_looked_at_with_nothing_spent() {
    let spec = CollectionSpec::parse(
        r#"{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
        "metrics": {"m": {"protocol": "oue", "params": {"epsilon": 1, "domain_size": 3}, "budget": {"per_report": 1},
                          "trust": "two-aggregator"}}}"#,
    )
    .unwrap();
    assert_eq!(spec.metric("m").unwrap().trust, TrustModel::TwoAggregator);
    let client = client(spec);
    for value in [json!(0), json!(7), json!("x"), Value::Null] {
        let e = client.record("m", &value).unwrap_err();
        let r = e.refusal().unwrap();
        assert_eq!((r.kind, r.code), (RefusalKind::Value, RefusalCode::TrustModel));
        assert_eq!(r.fields_json(), r#"{"metric":"m","trust":"two-aggregator"}"#);
    }
    let e = client.record_many(&[("m", json!(1))]).unwrap_err();
    assert!(matches!(&e, Error::Item { index: 0, metric, .. } if metric == "m"), "{e:?}");
    assert_eq!(e.refusal().map(|r| r.code), Some(RefusalCode::TrustModel));
    assert_eq!(client.spent(Some("m"), false).unwrap().epsilon, 0.0);
    assert_eq!(client.pending().unwrap(), 0);
}
