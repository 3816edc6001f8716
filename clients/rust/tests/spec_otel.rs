//! The spec's per-metric `otel` against the Python client (`conformance/specs/otel.json`, written by
//! `conformance/otel_vectors.py`): the same canonical form and fingerprint byte for byte, the same normalized mapping
//! per metric, and a refused spec's errors at the same paths in the same order, each `.otel` error with Python's text
//! up to its `, got` (the whole text when it has none; the value after it in this client's notation).

use ldp_client::pytext::canonical_json;
use ldp_client::spec::otel::{self, ValueClass};
use ldp_client::{json, protocols, CollectionSpec, Error, OtelKind, OtelSource, OtelValue, Value};

fn fixture() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/specs/otel.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("conformance/specs/otel.json")).expect("its JSON")
}

fn before_got(message: &str) -> &str {
    message.split(", got ").next().unwrap_or(message)
}

fn cases(doc: &Value, key: &str) -> Vec<Value> {
    doc["cases"].as_array().unwrap().iter().filter(|c| c.get(key).is_some()).cloned().collect()
}

fn is_otel_path(path: &str) -> bool {
    path.ends_with(".otel") || path.contains(".otel.") || path.contains(".otel[")
}

#[test]
fn the_fixture_and_the_names() {
    let doc = fixture();
    assert_eq!(doc["format"], json!(1));
    assert_eq!(cases(&doc, "errors").len() + cases(&doc, "fingerprint").len(), doc["cases"].as_array().unwrap().len());
    let kinds: Vec<&str> = OtelKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(kinds, ["counter", "updown_counter", "histogram", "gauge"]);
    let values: Vec<&str> = OtelValue::ALL.iter().map(|v| v.as_str()).collect();
    assert_eq!(values, ["any", "sum", "last", "mean", "bucket", "attribute"]);
    assert_eq!(OtelKind::from_name("updown_counter"), Some(OtelKind::UpDownCounter));
    assert_eq!(OtelKind::from_name("Counter"), None);
    assert_eq!(OtelValue::from_name("ANY"), None);
    assert_eq!(OtelValue::Sum.kinds(), [OtelKind::Counter, OtelKind::UpDownCounter]);
    assert_eq!(OtelValue::Any.classes(), [ValueClass::Boolean, ValueClass::Category]);
}

#[test]
fn every_protocol_but_multi_has_a_class() {
    for name in protocols::names() {
        assert_eq!(otel::value_class(name).is_none(), name == "multi", "{name}");
    }
    assert_eq!(otel::value_class("rr"), Some(ValueClass::Boolean));
    assert_eq!(otel::value_class("hh").map(ValueClass::as_str), Some("number"));
    assert_eq!(otel::value_class("sfp"), Some(ValueClass::String));
}

#[test]
fn refused_specs_give_the_same_paths_and_the_otel_errors_pythons_texts() {
    let doc = fixture();
    let mut checked = 0;
    for case in cases(&doc, "errors") {
        let name = case["name"].as_str().unwrap();
        let Err(Error::Spec { errors, .. }) = CollectionSpec::from_value(&case["spec"], "spec") else {
            panic!("{name}: accepted")
        };
        let got: Vec<(&str, &str)> = errors.iter().map(|e| e.split_once(": ").unwrap()).collect();
        let want = case["errors"].as_array().unwrap();
        let paths: Vec<&str> = want.iter().map(|e| e["path"].as_str().unwrap()).collect();
        assert_eq!(got.iter().map(|(p, _)| *p).collect::<Vec<_>>(), paths, "{name}: {errors:#?}");
        for (w, (path, message)) in want.iter().zip(&got) {
            if !is_otel_path(path) {
                continue;
            }
            let python = w["message"].as_str().unwrap();
            assert_eq!(before_got(message), before_got(python), "{name}: {path}");
            assert_eq!(message.contains(", got "), python.contains(", got "), "{name}: {message}");
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} .otel errors");
}

#[test]
fn accepted_specs_give_pythons_canonical_form_fingerprint_and_mappings() {
    let doc = fixture();
    for case in cases(&doc, "fingerprint") {
        let name = case["name"].as_str().unwrap();
        let spec = CollectionSpec::from_value(&case["spec"], name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(spec.canonical(), case["canonical"].as_str().unwrap(), "{name}");
        assert_eq!(spec.fingerprint(), case["fingerprint"].as_str().unwrap(), "{name}");
        let want = case["otel"].as_object().unwrap();
        assert_eq!(want.len(), spec.metrics.len(), "{name}");
        for m in &spec.metrics {
            // Compared as canonical JSON: the same numbers whatever their text (`100.0`).
            let got = m.otel.as_ref().map_or(Value::Null, OtelSource::to_json);
            assert_eq!(canonical_json(&got).unwrap(), canonical_json(&want[&m.name]).unwrap(), "{name}: {}", m.name);
        }
    }
}

#[test]
fn the_mapping_in_rust_terms() {
    let doc = fixture();
    let case =
        cases(&doc, "fingerprint").into_iter().find(|c| c["name"].as_str().unwrap().starts_with("every")).unwrap();
    let spec = CollectionSpec::from_value(&case["spec"], "spec").unwrap();
    let otel_of = |name: &str| spec.metric(name).unwrap().otel.clone().unwrap();

    let c = otel_of("c_attr");
    assert_eq!((c.kind, c.value, c.attribute.as_deref()), (OtelKind::Counter, OtelValue::Attribute, Some("screen")));
    assert_eq!(c.values, None);
    let params = spec.metric("c_attr").unwrap().params.clone();
    assert_eq!(c.categories(params.as_ref()), Some(vec!["home".into(), "search".into(), "profile".into()]));

    let d = otel_of("d_values");
    let want: Vec<String> = vec!["dark".into(), "light".into(), "caf\u{e9}".into()];
    assert_eq!(d.values.as_ref(), Some(&want));
    assert_eq!(d.categories(spec.metric("d_values").unwrap().params.as_ref()), Some(want));

    let e = otel_of("e_bucket");
    assert_eq!(
        (e.kind, e.value, e.buckets.as_deref()),
        (OtelKind::Histogram, OtelValue::Bucket, Some(&[100.0, 250.5][..]))
    );
    assert_eq!(e.categories(spec.metric("e_bucket").unwrap().params.as_ref()), None);

    assert_eq!(otel_of("g_updown").kind, OtelKind::UpDownCounter);
    assert_eq!(otel_of("j_string").categories(spec.metric("j_string").unwrap().params.as_ref()), None);
    let n = otel_of("n_same");
    assert_eq!((n.instrument.as_str(), n.key()), ("APP.CRASHES", "app.crashes".to_string()));
    assert!(spec.metric("a_any").unwrap().otel.is_some());
}

#[test]
fn buckets_compare_exactly_and_become_floats() {
    let spec = |buckets: &str| {
        CollectionSpec::parse(
            &r#"{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
            "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3},
                              "budget": {"per_report": 1},
                              "otel": {"instrument": "a", "kind": "histogram", "value": "bucket",
                                       "buckets": BUCKETS}}}}"#
                .replace("BUCKETS", buckets),
        )
    };
    // 2^53 + 1 is above the double 2^53 for Python: increasing, though both become 2^53.
    let s = spec("[9007199254740992.0, 9007199254740993]").unwrap();
    let o = s.metric("m").unwrap().otel.clone().unwrap();
    assert_eq!(o.buckets, Some(vec![9007199254740992.0, 9007199254740992.0]));
    assert!(s.canonical().contains(r#""buckets":[9007199254740992.0,9007199254740992.0]"#), "{}", s.canonical());
    let s = spec("[1, 1e16]").unwrap();
    assert!(s.canonical().contains(r#""buckets":[1.0,1e+16]"#), "{}", s.canonical());
    for bad in ["[9007199254740993, 9007199254740992.0]", "[1, 1.0]", "[2, 1]"] {
        let Err(Error::Spec { errors, .. }) = spec(bad) else { panic!("{bad}: accepted") };
        assert_eq!(errors, ["metrics.m.otel.buckets: must be strictly increasing"], "{bad}");
    }
    let huge = format!("[1, 1{}]", "0".repeat(310)); // beyond the doubles: not finite for Python either
    for bad in ["[1, 1e400]", huge.as_str(), "[null, 1]"] {
        let Err(Error::Spec { errors, .. }) = spec(bad) else { panic!("{bad}: accepted") };
        assert_eq!(errors, ["metrics.m.otel.buckets: must be a non-empty list of finite numbers, got a list"], "{bad}");
    }
}

#[test]
fn a_spec_without_otel_keeps_its_fingerprint_and_a_mapping_changes_it() {
    let text = |otel: &str| {
        format!(
            r#"{{"spec_version": 1, "name": "app", "budget": {{"per_window": 4, "lifetime": 40}},
            "metrics": {{"m": {{"protocol": "rr", "params": {{"p": 0.25, "q": 0.75}},
                                "budget": {{"per_report": 1.0986122886681098}}{otel}}}}}}}"#
        )
    };
    let plain = CollectionSpec::parse(&text("")).unwrap();
    assert!(plain.metric("m").unwrap().otel.is_none());
    assert!(!plain.canonical().contains("otel"));
    let mapped =
        CollectionSpec::parse(&text(r#", "otel": {"instrument": "app.crashes", "kind": "counter", "value": "any"}"#))
            .unwrap();
    assert_ne!(plain.fingerprint(), mapped.fingerprint());
    assert!(mapped
        .canonical()
        .contains(r#""otel":{"instrument":"app.crashes","kind":"counter","value":"any"},"params""#));
}
