//! Shared helpers of the integration tests: the conformance vectors, as serde_json reads them, building C
//! programs ([`cc`]), reading an HTTP request in the local collectors ([`http`]), CPU load ([`load`]), the prio
//! crate's Prio3 test vectors (`prio3` and `prio_source`, feature `prio`), VDAF draft 08's aggregators (`vdaf08`),
//! Poplar1's aggregators and task files (`poplar1`, feature `poplar1`),
//! a client with reports waiting ([`grr_client`]), and the replay of a spec fixture of `conformance/specs/`
//! ([`spec_replay`]).

#![allow(dead_code)]

pub mod cc;
pub mod http;
pub mod load;
#[cfg(feature = "poplar1")]
pub mod poplar1;
#[cfg(feature = "prio")]
pub mod prio3;
#[cfg(feature = "prio")]
pub mod prio_source;
pub mod spec_replay;
#[cfg(feature = "prio")]
pub mod vdaf08;

use std::path::PathBuf;

use ldp_client::ledger::MemoryStore;
use ldp_client::{json, CollectionSpec, TelemetryClient, Value};

/// `conformance/vectors` (or `$LDP_VECTORS`).
pub fn vectors_dir() -> PathBuf {
    std::env::var_os("LDP_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance/vectors"))
}

/// The protocol names of every vector file (all but primitives.json), sorted.
pub fn protocols() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(vectors_dir())
        .expect("conformance/vectors")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && n != "primitives.json")
        .map(|n| n.trim_end_matches(".json").to_string())
        .collect();
    out.sort();
    out
}

/// The marker that stands for a lone surrogate (`\udXXX` with no partner): Python strings can hold one, Rust
/// strings cannot, so such a value is checked at the C interface, where it arrives as invalid UTF-8.
pub const LONE: &str = "\u{FFFF}LONE-SURROGATE\u{FFFF}";

/// Replaces each lone surrogate escape of a JSON text by [`LONE`].
pub fn mark_lone_surrogates(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let unit = |i: usize| -> Option<u16> {
        if i + 6 <= b.len() && b[i] == b'\\' && b[i + 1] == b'u' {
            u16::from_str_radix(&text[i + 2..i + 6], 16).ok()
        } else {
            None
        }
    };
    let mut last = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if let Some(u) = unit(i) {
                if (0xd800..0xdc00).contains(&u) {
                    if matches!(unit(i + 6), Some(v) if (0xdc00..0xe000).contains(&v)) {
                        i += 12;
                        continue;
                    }
                    out.push_str(&text[last..i]);
                    out.push_str(LONE);
                    i += 6;
                    last = i;
                    continue;
                }
                if (0xdc00..0xe000).contains(&u) {
                    out.push_str(&text[last..i]);
                    out.push_str(LONE);
                    i += 6;
                    last = i;
                    continue;
                }
            }
            i += 2;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[last..]);
    out
}

/// The vector file of `name`, lone surrogates marked.
pub fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(vectors_dir().join(format!("{name}.json"))).expect("vector file");
    serde_json::from_str(&mark_lone_surrogates(&text)).expect("vector JSON")
}

/// Whether a value holds a marked lone surrogate.
pub fn has_lone(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(LONE),
        Value::Array(a) => a.iter().any(has_lone),
        Value::Object(m) => m.iter().any(|(k, v)| k.contains(LONE) || has_lone(v)),
        _ => false,
    }
}

/// Within `ulps` units in the last place (a cost from log/log1p may differ in its last digits between math
/// libraries: docs/conformance.md section 5).
pub fn close_ulps(a: f64, b: f64, ulps: f64) -> bool {
    if a == b {
        return true;
    }
    let scale = a.abs().max(b.abs()) * f64::EPSILON;
    (a - b).abs() <= ulps * scale
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number, got {v}"))
}

/// Two JSON values deep-equal as the vectors mean them: numbers of the same kind (a token with a fraction or an
/// exponent is a float, one without an int: `serde_json`'s `arbitrary_precision` keeps the token) and equal value.
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let float = |n: &serde_json::Number| n.to_string().contains(['.', 'e', 'E']);
            let (fx, fy) = (float(x), float(y));
            if fx != fy {
                return false;
            }
            if fx {
                x.to_string().parse::<f64>().ok() == y.to_string().parse::<f64>().ok()
            } else {
                x.to_string() == y.to_string()
            }
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// A client of a one-metric GRR spec named `name` (uploads of at most `max_batch` reports, no minimum interval),
/// in memory, with `reports` reports recorded: what the uploader tests send.
pub fn grr_client(name: &str, reports: usize, max_batch: usize) -> TelemetryClient {
    let spec = CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": name, "budget": {"per_window": 1e6, "lifetime": 1e6},
                "upload": {"min_interval_seconds": 0, "max_batch": max_batch},
                "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                                  "budget": {"per_report": 1.0}}}}),
        "spec",
    )
    .unwrap();
    let c = TelemetryClient::new(spec, MemoryStore::new()).unwrap();
    for i in 0..reports {
        c.record("m", &json!(i % 4)).unwrap();
    }
    c
}
