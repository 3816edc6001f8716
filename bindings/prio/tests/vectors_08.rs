//! VDAF draft 08's Prio3 test vectors of the four types the binding speaks (Prio3Count, Prio3Sum, Prio3SumVec,
//! Prio3Histogram: `src/vdaf/test_vec/08/Prio3{Count,Sum,SumVec,Histogram}_{0,1}.json` of the prio crate 0.16.8, read
//! where cargo downloaded it, as tests/prio/prio_support.py finds them) checked by the crate's own public
//! `prio3_test::check_test_vec` (feature `test-util`): sharding with each vector's nonce and randomness, byte for
//! byte (the crate's `shard_with_random` is crate-private, so the binding cannot replay that step: this test does),
//! then preparation, aggregation and unsharding. The VDAFs are built as the binding builds them (`src/draft08.rs`):
//! the crate's `new_count`, `new_sum(bits)`, `new_sum_vec(bits, length, chunk_length)`, `new_histogram(length,
//! chunk_length)`.
//!
//! `cargo test --locked --no-default-features --test vectors_08` (from bindings/prio; without the `python` feature:
//! a test binary cannot link pyo3's extension without a Python library).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use prio08::vdaf::prio3::Prio3;
use prio08::vdaf::prio3_test::{check_test_vec, check_test_vec_custom_de};
use serde_json::Value;

const PRIO_VERSION: &str = "0.16.8";
const TYPES: [&str; 4] = ["Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram"];

/// The crate's draft 08 vector folder: `cargo metadata` on this crate names the source of prio 0.16.8.
fn vector_dir() -> PathBuf {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--manifest-path", manifest])
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let prio = packages
        .iter()
        .find(|p| p["name"] == "prio" && p["version"] == PRIO_VERSION)
        .unwrap_or_else(|| panic!("bindings/prio does not depend on prio {PRIO_VERSION}"));
    let manifest_path = PathBuf::from(prio["manifest_path"].as_str().expect("manifest_path"));
    manifest_path.parent().expect("the crate's folder").join("src/vdaf/test_vec/08")
}

/// The vectors of `name` (`Prio3Sum` does not take `Prio3SumVec_0.json`), sorted.
fn vectors(name: &str) -> Vec<(String, String)> {
    let dir = vector_dir();
    let mut found: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            let file = path.file_name().and_then(|f| f.to_str()).unwrap_or_default();
            file.ends_with(".json") && file.split('_').next() == Some(name)
        })
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a vector file");
            (path.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect();
    found.sort();
    found
}

fn param(params: &HashMap<String, Value>, name: &str) -> usize {
    params[name].as_u64().unwrap_or_else(|| panic!("the vector's {name}")) as usize
}

/// A Prio3Count measurement as the vectors write it (0 or 1), for the crate's `bool`.
#[derive(Clone, serde::Deserialize)]
#[serde(transparent)]
struct CountMeasurement(u8);

impl From<CountMeasurement> for bool {
    fn from(value: CountMeasurement) -> bool {
        value.0 != 0
    }
}

#[test]
fn every_type_has_its_two_vectors() {
    for name in TYPES {
        let names: Vec<String> = vectors(name).into_iter().map(|(file, _)| file).collect();
        assert_eq!(names, [format!("{name}_0.json"), format!("{name}_1.json")], "{name}");
    }
}

#[test]
fn prio3_count() {
    for (file, text) in vectors("Prio3Count") {
        eprintln!("{file}");
        check_test_vec_custom_de::<CountMeasurement, bool, _, _, _, 16>(&text, |_, shares| {
            Prio3::new_count(shares).unwrap()
        });
    }
}

#[test]
fn prio3_sum() {
    for (file, text) in vectors("Prio3Sum") {
        eprintln!("{file}");
        check_test_vec(&text, |params, shares| Prio3::new_sum(shares, param(params, "bits")).unwrap());
    }
}

#[test]
fn prio3_sum_vec() {
    for (file, text) in vectors("Prio3SumVec") {
        eprintln!("{file}");
        check_test_vec(&text, |params, shares| {
            let (bits, length, chunk) = (param(params, "bits"), param(params, "length"), param(params, "chunk_length"));
            Prio3::new_sum_vec(shares, bits, length, chunk).unwrap()
        });
    }
}

#[test]
fn prio3_histogram() {
    for (file, text) in vectors("Prio3Histogram") {
        eprintln!("{file}");
        check_test_vec(&text, |params, shares| {
            Prio3::new_histogram(shares, param(params, "length"), param(params, "chunk_length")).unwrap()
        });
    }
}
