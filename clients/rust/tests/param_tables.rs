//! The generic parameter reader ([`ParamValues`], driven by the tables `python conformance/docs_tables.py` generates
//! into `src/protocols/tables.rs` from the Python declarations): for every parameter of every protocol, a number just
//! outside each bound is refused as `param_range` by the first range check it fails, with exactly that range's
//! bounds (a dynamic one: the bound the protocol gives); a number inside every range is read; a string that is not
//! one of a choice's strings is refused as `param_choice` naming exactly them; a value of another type is refused
//! as `param_type`. Each protocol reads through its own table.

mod common;

use common::same_json;
use ldp_client::params::ParamValues;
use ldp_client::protocols::{
    self,
    tables::{Bound, ParamRange, ParamRow, ParamType, PARAM_TABLES},
};
use ldp_client::{json, Error, RefusalCode, RefusalKind, Result, Value};
use serde_json::Map;

/// The upper bound given to a range whose bound follows from other parameters.
const DYNAMIC_MAX: i64 = 7;

fn number(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn bound_value(b: Bound) -> Value {
    match b {
        Bound::Int(i) => json!(i),
        Bound::Float(x) => number(&format!("{x:?}")),
    }
}

fn as_f64(v: &Value) -> f64 {
    v.to_string().parse().unwrap()
}

/// Whether `x` passes range `r` (`max`: its upper bound), as Python's `Range.holds`.
fn holds(r: &ParamRange, max: Option<Bound>, x: f64) -> bool {
    let b = |b: Bound| as_f64(&bound_value(b));
    (!r.finite || x.is_finite())
        && r.min.is_none_or(|m| if r.min_exclusive { x > b(m) } else { x >= b(m) })
        && max.is_none_or(|m| if r.max_exclusive { x < b(m) } else { x <= b(m) })
}

fn max_of(r: &ParamRange) -> Option<Bound> {
    if r.dynamic {
        Some(Bound::Int(DYNAMIC_MAX))
    } else {
        r.max
    }
}

/// The parameters of `table` with `value` as `name` and null as every other required one (the reader reads only
/// the parameter asked for).
fn given(table: &'static [ParamRow], name: &str, value: Value) -> ParamValues {
    let mut d: Map<String, Value> =
        table.iter().filter(|r| r.default.is_none()).map(|r| (r.name.to_string(), Value::Null)).collect();
    d.insert(name.to_string(), value);
    ParamValues::from_dict(table, &Value::Object(d)).unwrap()
}

/// `row` read from `values` with its typed reader.
fn read(values: &ParamValues, row: &ParamRow) -> Result<Value> {
    Ok(match row.ty {
        ParamType::Float => number(&format!("{:?}", values.float(row.name)?)),
        ParamType::Int | ParamType::OptInt if row.ranges.iter().any(|r| r.dynamic) => {
            json!(values.int_at_most(row.name, DYNAMIC_MAX.into())? as i64)
        }
        ParamType::Int | ParamType::OptInt => json!(values.int(row.name)? as i64),
        ParamType::Bool => json!(values.bool(row.name)?),
        ParamType::Str => json!(values.choice(row.name)?),
        _ => unreachable!("{}: no typed reader", row.name),
    })
}

/// Numbers just outside each bound of `row` (Python's probes: the bound itself when excluded, else the next int or
/// float beyond it; ±∞ when a range wants finite numbers).
fn outside(row: &ParamRow) -> Vec<Value> {
    let int = matches!(row.ty, ParamType::Int | ParamType::OptInt);
    let mut out = vec![];
    for r in row.ranges {
        for (b, low, strict) in [(r.min, true, r.min_exclusive), (max_of(r), false, r.max_exclusive)] {
            let Some(b) = b else { continue };
            out.push(match b {
                _ if strict => bound_value(b),
                Bound::Int(i) if int => json!(if low { i - 1 } else { i + 1 }),
                _ => {
                    let x = as_f64(&bound_value(b));
                    number(&format!("{:?}", if low { x.next_down() } else { x.next_up() }))
                }
            });
        }
    }
    if row.ranges.iter().any(|r| r.finite) {
        out.extend([number("1e999"), number("-1e999")]);
    }
    out
}

/// The bounds themselves and the numbers just inside them: those every range takes.
fn inside(row: &ParamRow) -> Vec<Value> {
    let int = matches!(row.ty, ParamType::Int | ParamType::OptInt);
    let mut out = vec![];
    for r in row.ranges {
        for (b, low) in [(r.min, true), (max_of(r), false)] {
            let Some(b) = b else { continue };
            let x = as_f64(&bound_value(b));
            let candidates = match b {
                Bound::Int(i) if int => vec![json!(i), json!(if low { i + 1 } else { i - 1 })],
                _ => vec![bound_value(b), number(&format!("{:?}", if low { x.next_up() } else { x.next_down() }))],
            };
            out.extend(candidates.into_iter().filter(|v| row.ranges.iter().all(|r| holds(r, max_of(r), as_f64(v)))));
        }
    }
    out
}

#[test]
fn a_number_just_outside_a_bound_is_refused_with_exactly_that_range_s_bounds() {
    let mut probes = 0;
    for (protocol, table) in PARAM_TABLES {
        for row in table.iter().filter(|r| !r.ranges.is_empty()) {
            for value in outside(row) {
                let first = row.ranges.iter().find(|r| !holds(r, max_of(r), as_f64(&value))).unwrap();
                let mut want = json!({"param": row.name, "got": value.clone()});
                for (key, b) in [("min", first.min), ("max", max_of(first))] {
                    if let Some(b) = b {
                        want[key] = bound_value(b);
                    }
                }
                for (key, set) in [
                    ("min_exclusive", first.min_exclusive),
                    ("max_exclusive", first.max_exclusive),
                    ("finite", first.finite),
                ] {
                    if set {
                        want[key] = json!(true);
                    }
                }
                match read(&given(table, row.name, value.clone()), row) {
                    Err(Error::Refusal(r)) => {
                        let have = Value::Object(r.fields.clone());
                        assert_eq!(
                            (r.kind, r.code),
                            (RefusalKind::Value, RefusalCode::ParamRange),
                            "{protocol}.{}",
                            row.name
                        );
                        assert!(same_json(&have, &want), "{protocol}.{} = {value}: {have} against {want}", row.name);
                    }
                    other => panic!("{protocol}.{} = {value}: {other:?}", row.name),
                }
                probes += 1;
            }
            for value in inside(row) {
                let read = read(&given(table, row.name, value.clone()), row);
                assert!(read.is_ok(), "{protocol}.{} = {value}: {read:?}", row.name);
            }
        }
    }
    assert!(probes > 200, "{probes} probes");
}

#[test]
fn a_string_not_among_the_choices_is_refused_naming_exactly_them() {
    let mut choices = 0;
    for (protocol, table) in PARAM_TABLES {
        for row in table.iter().filter(|r| !r.choices.is_empty()) {
            for bad in [json!("zz-not-a-choice"), json!(1), Value::Null] {
                match read(&given(table, row.name, bad.clone()), row) {
                    Err(Error::Refusal(r)) => {
                        assert_eq!((r.kind, r.code), (RefusalKind::Value, RefusalCode::ParamChoice));
                        let want = json!({"param": row.name, "choices": row.choices, "got": bad});
                        assert_eq!(Value::Object(r.fields.clone()), want, "{protocol}.{}", row.name);
                    }
                    other => panic!("{protocol}.{} = {bad}: {other:?}", row.name),
                }
            }
            for choice in row.choices {
                assert_eq!(read(&given(table, row.name, json!(choice)), row).unwrap(), json!(choice));
            }
            choices += 1;
        }
    }
    assert!(choices >= 7, "{choices} choices");
}

#[test]
fn a_value_of_another_type_is_refused_as_param_type() {
    for (protocol, table) in PARAM_TABLES {
        for row in table.iter() {
            let (bad, expected) = match row.ty {
                ParamType::Float => (json!("1"), "float"),
                ParamType::Int | ParamType::OptInt => (number("1.0"), "int"),
                ParamType::Bool => (json!(1), "bool"),
                _ => continue,
            };
            match read(&given(table, row.name, bad.clone()), row) {
                Err(Error::Refusal(r)) => {
                    assert_eq!((r.kind, r.code), (RefusalKind::Type, RefusalCode::ParamType));
                    assert_eq!(r.field("expected"), Some(&json!(expected)), "{protocol}.{}", row.name);
                }
                other => panic!("{protocol}.{} = {bad}: {other:?}", row.name),
            }
        }
    }
}

#[test]
fn unknown_and_missing_parameters_are_refused_and_defaults_filled_from_the_table() {
    let grr = protocols::get("grr").unwrap().table;
    let refusal = |d: Value| match ParamValues::from_dict(grr, &d) {
        Err(Error::Refusal(r)) => (r.kind, r.code, Value::Object(r.fields)),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refusal(json!({"epsilon": 1.0, "zeta": 1, "alpha": 2})),
        (RefusalKind::Value, RefusalCode::UnknownParams, json!({"params": ["alpha", "zeta"]}))
    );
    assert_eq!(
        refusal(json!({})),
        (RefusalKind::Type, RefusalCode::MissingParams, json!({"params": ["epsilon", "domain_size"]}))
    );
    let olh = ParamValues::from_dict(protocols::get("olh").unwrap().table, &json!({"epsilon": 1, "domain_size": 4}));
    assert_eq!(
        olh.unwrap().to_dict(),
        json!({"epsilon": 1, "domain_size": 4, "labels": null, "seed_range": 4294967296u64})
    );
}

#[test]
fn every_protocol_reads_through_its_own_table_and_the_tables_are_sorted() {
    let names: Vec<&str> = PARAM_TABLES.iter().map(|(p, _)| *p).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted);
    assert_eq!(names, protocols::names());
    for (name, table) in PARAM_TABLES {
        assert_eq!(protocols::get(name).unwrap().table, *table, "{name}");
    }
}
