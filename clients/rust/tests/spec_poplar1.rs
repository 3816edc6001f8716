//! The spec's string metric kind over two aggregators, `protocol: "poplar1"` (issue 89, item 3), against the Python
//! client (`conformance/specs/poplar1.json`, written by `conformance/poplar1_spec_vectors.py`): each accepted spec's
//! canonical form and fingerprint byte for byte, its trust per metric and its records refused on a device given no
//! task (`trust_model`, whatever the value); each refused spec's errors at the same paths in the same order (bad
//! params one by one, every other trust model, the trust checked only for valid params), the `.trust` ones with
//! Python's text up to its `, got`; and each value's measurement (`measurements`): its bytes in hex, or the code of
//! its refusal. The same replay as `conformance/specs/trust.json`'s (tests/common/spec_replay.rs); a client with a
//! task records the measurements in tests/client_poplar1.rs (feature `poplar1`).

mod common;

use common::spec_replay::{fixture, replay_accepted, replay_refused};
use ldp_client::bytes::hex;
use ldp_client::protocols::{self, poplar1_strings};
use ldp_client::{json, CollectionSpec, TrustModel, Value};

#[test]
fn accepted_specs_give_pythons_canonical_form_fingerprint_trust_and_refusals() {
    let doc = fixture("poplar1.json");
    assert_eq!(doc["format"], json!(1));
    assert_eq!(replay_accepted(&doc), 2);
}

#[test]
fn refused_specs_give_pythons_paths_in_order_and_its_trust_texts() {
    assert_eq!(replay_refused(&fixture("poplar1.json")), 3);
}

#[test]
fn each_values_measurement_is_pythons_bytes_or_refusal_code() {
    let doc = fixture("poplar1.json");
    let cases = doc["measurements"].as_array().unwrap();
    let (mut made, mut refused) = (0, 0);
    for m in cases {
        let bits = m["bits"].as_u64().unwrap() as u32;
        let got = poplar1_strings::measurement_bytes(bits, &m["value"]);
        match (m.get("hex"), m.get("error"), got) {
            (Some(want), None, Ok(bytes)) => {
                assert_eq!(hex(&bytes), want.as_str().unwrap(), "{m}");
                made += 1;
            }
            (None, Some(code), Err(e)) => {
                assert_eq!(e.refusal().map(|r| r.code.as_str()), code.as_str(), "{m}: {e}");
                refused += 1;
            }
            (_, _, got) => panic!("{m}: {got:?}"),
        }
    }
    assert!(made >= 20 && refused >= 20, "{made} measurements, {refused} refusals");
}

#[test]
fn a_poplar1_metric_is_the_two_aggregator_string_kind_outside_the_local_protocols() {
    let spec = CollectionSpec::parse(
        r#"{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
        "metrics": {"new_words": {"protocol": "poplar1", "params": {"bits": 64, "threshold": 20,
            "max_candidates": 1024}, "budget": {"per_report": 1.5}, "trust": "two-aggregator"}}}"#,
    )
    .unwrap();
    let m = spec.metric("new_words").unwrap();
    assert_eq!((m.trust, m.protocol().name, m.params.domain_size()), (TrustModel::TwoAggregator, "poplar1", None));
    assert_eq!(m.params.canonical_dict(), json!({"bits": 64, "threshold": 20, "max_candidates": 1024}));
    assert!(m.params.schema().is_empty() && m.params.privacy_cost().epsilon == 0.0);
    // Charged the spec's per_report; a window's cap: the reports the collection's per_window holds, ⌊4 / 1.5⌋ = 2.
    assert_eq!(spec.report_charge("new_words").unwrap().epsilon, 1.5);
    assert_eq!(spec.reports_per_window("new_words").unwrap(), Some(2));
    assert_eq!(spec.device_window_cap("new_words").unwrap().map(|c| c.epsilon), Some(3.0));
    // Not a local protocol: no encoder of the registry, no report of its own.
    assert!(protocols::get("poplar1").is_none() && !protocols::names().contains(&"poplar1"));
    let mut encoder = m.protocol().encoder(m.params.clone(), Default::default()).unwrap();
    let prepared = encoder.prepare(&json!("word")).unwrap();
    assert!(encoder.randomize(&prepared, None).unwrap_err().to_string().contains("no local report"));
    assert_eq!(encoder.prepare(&Value::Null).unwrap_err().refusal().unwrap().code.as_str(), "value_type");
}
