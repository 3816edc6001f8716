//! The VDAF draft 18 test vectors of Prio3Count, Prio3Sum, Prio3SumVec and Prio3Histogram, read from the prio
//! crate's own source as cargo downloaded it (`src/vdaf/test_vec/18/` of the prio package in `cargo metadata`:
//! `prio_source`), or from `$LDP_PRIO_VECTORS`. Nothing of them is copied into this repository.

use std::path::PathBuf;
use std::sync::OnceLock;

use ldp_client::prio3::{Measurement, Prio3Type};
use ldp_client::Value;

/// The draft the vectors are of, and the prio version that ships them (Cargo.toml pins it).
pub const DRAFT: &str = "18";
pub const PRIO_VERSION: &str = "0.18.1";

/// The four types of the client API, as the vector files name them.
pub const TYPES: [&str; 4] = ["Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram"];

/// The folder of the draft's test vectors in the prio crate's source (or `$LDP_PRIO_VECTORS`).
pub fn vectors_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| super::prio_source::vectors_dir(PRIO_VERSION, DRAFT, "LDP_PRIO_VECTORS"))
}

/// One vector file: its name (`Prio3Histogram_bad_public_share`), its type (`Prio3Histogram`) and its JSON.
pub struct Vector {
    pub name: String,
    pub kind: &'static str,
    pub doc: Value,
}

impl Vector {
    /// Whether the vector is a negative one (`*_bad_*`: some operation must fail).
    pub fn is_bad(&self) -> bool {
        self.name.contains("_bad_")
    }

    /// The vector's type with its parameters.
    pub fn prio3_type(&self) -> Prio3Type {
        let int = |k: &str| self.doc[k].as_u64().unwrap_or_else(|| panic!("{}: no {k}", self.name));
        match self.kind {
            "Prio3Count" => Prio3Type::Count,
            "Prio3Sum" => Prio3Type::Sum { max_measurement: int("max_measurement") },
            "Prio3SumVec" => Prio3Type::SumVec {
                max_measurement: u128::from(int("max_measurement")),
                length: int("length") as usize,
                chunk_length: int("chunk_length") as usize,
            },
            "Prio3Histogram" => {
                Prio3Type::Histogram { length: int("length") as usize, chunk_length: int("chunk_length") as usize }
            }
            other => panic!("{other} is not a type of the client API"),
        }
    }

    /// The number of aggregators (`shares`).
    pub fn aggregators(&self) -> u8 {
        self.doc["shares"].as_u64().unwrap() as u8
    }

    pub fn ctx(&self) -> Vec<u8> {
        unhex(self.doc["ctx"].as_str().unwrap())
    }

    pub fn reports(&self) -> &[Value] {
        self.doc["reports"].as_array().unwrap()
    }
}

/// Every vector file of the four types, sorted by name (Prio3SumVecWithMultiproof, Prio3MultihotCountVec and the
/// other Prio3 types of the folder are not the client API's).
pub fn vectors() -> Vec<Vector> {
    let dir = vectors_dir();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for file in names {
        let name = file.trim_end_matches(".json").to_string();
        // `Prio3Sum_1` is a Prio3Sum vector, `Prio3SumVec_1` is not: the type is the name up to its first `_`.
        let Some(kind) = TYPES.iter().find(|t| name.split('_').next() == Some(**t)) else { continue };
        let text = std::fs::read_to_string(dir.join(&file)).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        out.push(Vector { name, kind, doc });
    }
    out
}

/// A report's measurement as the client API takes it.
pub fn measurement(kind: &str, v: &Value) -> Measurement {
    match kind {
        "Prio3Count" => Measurement::Count(match v.as_u64() {
            Some(0) => false,
            Some(1) => true,
            _ => panic!("a count measurement {v}"),
        }),
        "Prio3Sum" => Measurement::Sum(v.as_u64().unwrap()),
        "Prio3SumVec" => {
            Measurement::SumVec(v.as_array().unwrap().iter().map(|x| u128::from(x.as_u64().unwrap())).collect())
        }
        "Prio3Histogram" => Measurement::Histogram(v.as_u64().unwrap() as usize),
        other => panic!("{other}"),
    }
}

/// A report's measurement as the C interface takes it: unsigned integers.
pub fn measurement_u64s(v: &Value) -> Vec<u64> {
    match v {
        Value::Array(items) => items.iter().map(|x| x.as_u64().unwrap()).collect(),
        _ => vec![v.as_u64().unwrap()],
    }
}

pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s:?}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
