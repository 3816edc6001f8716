//! The spec's per-metric `trust` against the Python client (`conformance/specs/trust.json`, written by
//! `conformance/spec_vectors.py`): the same canonical form and fingerprint byte for byte, the same trust per metric,
//! the same refusal of a record (a two-aggregator metric: `trust_model`), and a refused spec's errors at the same
//! paths in the same order, each `.trust` error with Python's text up to its `, got` (the value after it in this
//! client's notation).

mod common;

use common::spec_replay::{client, fixture, replay_accepted, replay_refused};
use ldp_client::{json, CollectionSpec, Error, RefusalCode, RefusalKind, TrustModel, Value};

#[test]
fn the_fixture_and_the_models() {
    let doc = fixture("trust.json");
    assert_eq!(doc["format"], json!(1));
    let names: Vec<&str> = TrustModel::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(names, ["local", "shuffle", "two-aggregator", "two-aggregator+local"]);
    assert_eq!(TrustModel::default(), TrustModel::Local);
    assert_eq!(TrustModel::from_name("two-aggregator+local"), Some(TrustModel::TwoAggregatorLocal));
    assert_eq!(TrustModel::from_name("Local"), None);
}

#[test]
fn refused_specs_give_the_same_paths_and_the_trust_errors_pythons_texts() {
    assert!(replay_refused(&fixture("trust.json")) > 0);
}

#[test]
fn accepted_specs_give_pythons_canonical_form_fingerprint_trust_and_refusals() {
    assert!(replay_accepted(&fixture("trust.json")) > 0);
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
