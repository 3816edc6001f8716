//! Any JSON value recorded for a metric of every registered protocol (one metric per protocol, from its vector
//! file's spec): accepted (a report charged and queued) or refused with a Python error type, never a panic, never
//! another kind of error.
#![no_main]

use std::sync::OnceLock;

use ldp_client::ledger::MemoryStore;
use ldp_client::{CollectionSpec, Error, TelemetryClient, Value};
use libfuzzer_sys::fuzz_target;

fn spec() -> &'static CollectionSpec {
    static SPEC: OnceLock<CollectionSpec> = OnceLock::new();
    SPEC.get_or_init(|| {
        let mut metrics = serde_json::Map::new();
        for (i, name) in ldp_client::protocols::names().into_iter().enumerate() {
            let path = format!("{}/../../../conformance/vectors/{name}.json", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(path).expect("vector file");
            // Lone surrogates (in refusal values only) are not JSON serde_json reads: blank them first.
            let doc: Value = serde_json::from_str(&blank_lone_surrogates(&text)).expect("vector JSON");
            if let Some(m) = doc["spec"]["metrics"].as_object().and_then(|m| m.values().next()) {
                metrics.insert(format!("m{i}"), m.clone());
            }
        }
        let spec = serde_json::json!({"spec_version": 1, "name": "fuzz",
                                      "budget": {"per_window": 1e12, "lifetime": 1e12}, "metrics": metrics});
        CollectionSpec::from_value(&spec, "spec").expect("the vectors' metrics make a spec")
    })
}

/// `text` with every `\\uD800`–`\\uDFFF` escape that is not half of a pair replaced by `?`.
fn blank_lone_surrogates(text: &str) -> String {
    let unit = |i: usize| -> Option<u16> {
        let b = text.as_bytes();
        (i + 6 <= b.len() && b[i] == b'\\' && b[i + 1] == b'u').then(|| u16::from_str_radix(&text[i + 2..i + 6], 16).ok())?
    };
    let mut out = String::with_capacity(text.len());
    let (mut i, mut last) = (0, 0);
    while i < text.len() {
        match unit(i) {
            Some(u) if (0xd800..0xdc00).contains(&u) && matches!(unit(i + 6), Some(v) if (0xdc00..0xe000).contains(&v)) => i += 12,
            Some(u) if (0xd800..0xe000).contains(&u) => {
                out.push_str(&text[last..i]);
                out.push('?');
                i += 6;
                last = i;
            }
            _ if text.as_bytes()[i] == b'\\' => i += 2,
            _ => i += 1,
        }
    }
    out.push_str(&text[last..]);
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(value) = serde_json::from_str::<Value>(text) else { return };
    let spec = spec();
    let client = TelemetryClient::new(spec.clone(), MemoryStore::new()).expect("client");
    for m in &spec.metrics {
        match client.record(&m.name, &value) {
            Ok(_) | Err(Error::Refusal(_)) | Err(Error::Value(_)) | Err(Error::Type(_)) => {}
            Err(other) => panic!("{}: {other:?}", m.name),
        }
    }
});
