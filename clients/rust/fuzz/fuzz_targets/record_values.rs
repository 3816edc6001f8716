//! Any JSON value recorded for each metric of a spec with every protocol family registered: accepted (and then a
//! well-formed line) or refused with a Python error type, never a panic, never an over-spent budget.
#![no_main]

use ldp_client::ledger::MemoryStore;
use ldp_client::{CollectionSpec, Error, TelemetryClient};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else { return };
    let mut metrics = serde_json::Map::new();
    for (i, name) in ldp_client::protocols::names().into_iter().enumerate() {
        let doc = std::fs::read_to_string(format!("{}/../../../conformance/vectors/{name}.json", env!("CARGO_MANIFEST_DIR")));
        let Ok(doc) = doc.map(|d| serde_json::from_str::<serde_json::Value>(&d)) else { continue };
        let Ok(doc) = doc else { continue };
        if let Some(m) = doc["spec"]["metrics"].as_object().and_then(|m| m.values().next()) {
            metrics.insert(format!("m{i}"), m.clone());
        }
    }
    let spec = serde_json::json!({"spec_version": 1, "name": "fuzz", "budget": {"per_window": 1e9, "lifetime": 1e9},
                                  "metrics": metrics});
    let spec = CollectionSpec::from_value(&spec, "spec").expect("the vectors' metrics make a spec");
    let names: Vec<String> = spec.metrics.iter().map(|m| m.name.clone()).collect();
    let client = TelemetryClient::new(spec, MemoryStore::new()).expect("client");
    for name in &names {
        match client.record(name, &value) {
            Ok(_) | Err(Error::Value(_)) | Err(Error::Type(_)) => {}
            Err(other) => panic!("{name}: {other:?}"),
        }
    }
});
