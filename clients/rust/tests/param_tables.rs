//! The generated parameter tables (`src/protocols/tables.rs`, written by `python conformance/docs_tables.py` from
//! the Python declarations) agree with the fields each protocol of this crate declares: the same names in the same
//! order, the same defaults, compatible types. A protocol added to the Python package shows up here first.

use ldp_client::params::FieldType;
use ldp_client::protocols::{self, tables::PARAM_TABLES};

/// Whether this crate's field type reads what the table's type says (`ints` and `optint` have no variant of their
/// own here: `level_weights` is parsed by its protocol, `blocks` is an int or null).
fn compatible(ty: FieldType, table: &str) -> bool {
    matches!(
        (ty, table),
        (FieldType::Float, "float")
            | (FieldType::Int, "int" | "optint")
            | (FieldType::Bool, "bool")
            | (FieldType::Str, "str")
            | (FieldType::Floats, "floats")
            | (FieldType::Labels, "labels")
            | (FieldType::OptStr, "optstr")
            | (FieldType::Any, "ints" | "any")
    )
}

#[test]
fn every_protocol_s_fields_are_the_generated_table_s() {
    for name in protocols::names() {
        let protocol = protocols::get(name).unwrap();
        let (_, rows) = PARAM_TABLES.iter().find(|(p, _)| *p == name).unwrap_or_else(|| panic!("{name}: no table"));
        let ours: Vec<&str> = protocol.fields.iter().map(|f| f.name).collect();
        let theirs: Vec<&str> = rows.iter().map(|r| r.name).collect();
        assert_eq!(ours, theirs, "{name}: the fields");
        for (field, row) in protocol.fields.iter().zip(rows.iter()) {
            assert!(compatible(field.ty, row.ty), "{name}.{}: {:?} against {}", field.name, field.ty, row.ty);
            let ours = field.default.map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap());
            let theirs = row.default.map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap());
            let same = match (&ours, &theirs) {
                (Some(a), Some(b)) => a == b || a.as_f64().is_some() && a.as_f64() == b.as_f64(),
                (None, None) => true,
                _ => false,
            };
            assert!(same, "{name}.{}: default {ours:?} against {theirs:?}", field.name);
            assert!(!row.doc.is_empty(), "{name}.{}: no meaning", field.name);
        }
    }
}

#[test]
fn the_table_has_every_protocol_once_sorted() {
    let names: Vec<&str> = PARAM_TABLES.iter().map(|(p, _)| *p).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted);
    for name in protocols::names() {
        assert!(names.contains(&name), "{name}");
    }
}
