//! Checking a metric's `otel` key (Python's `parse_otel`): the instrument, its kind and value, the attribute, the
//! declared values or buckets, and whether they fit the metric's protocol.

use std::cmp::Ordering;

use num_bigint::BigInt;
use serde_json::{Map, Value};

use super::{value_class, OtelKind, OtelSource, OtelValue, ValueClass, MAX_ATTRIBUTE_LENGTH};
use crate::params::ProtocolParams;
use crate::rational::Rational;
use crate::spec::check::{compact, kind, Checker};
use crate::spec::join;
use crate::value::{f64_of, num_of, Num};

/// OpenTelemetry's instrument names: `[A-Za-z][A-Za-z0-9_./-]{0,254}` (`INSTRUMENT_RE`).
fn is_instrument(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 255
        && b[0].is_ascii_alphabetic()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-'))
}

/// A value as the messages show it after `got` (`_shown`): a string as JSON text, anything else by its kind.
fn shown(v: &Value) -> String {
    match v {
        Value::String(_) => compact(v),
        other => kind(other),
    }
}

/// A finite JSON number, as Python reads it (`_finite`: an int beyond the doubles is not).
fn finite(v: &Value) -> bool {
    matches!(v, Value::Number(_)) && f64_of(v).is_finite()
}

/// An exact real: a JSON number compared as Python compares an `int` and a `float`.
enum Real {
    Int(BigInt),
    Float(f64),
}

impl Real {
    fn of(v: &Value) -> Option<Real> {
        let Value::Number(n) = v else { return None };
        Some(match num_of(n) {
            Num::Int(i) => Real::Int(BigInt::from(i)),
            Num::Big(s) => Real::Int(s.parse().ok()?),
            Num::Float(x) => Real::Float(x),
        })
    }

    /// `self < other`, exactly (finite values).
    fn lt(&self, other: &Real) -> bool {
        match (self, other) {
            (Real::Int(a), Real::Int(b)) => a < b,
            (Real::Float(a), Real::Float(b)) => a < b,
            (Real::Int(a), Real::Float(b)) => Rational::of(*b).cmp_int(a) == Ordering::Less,
            (Real::Float(a), Real::Int(b)) => Rational::of(*a).cmp_int(b) == Ordering::Greater,
        }
    }
}

/// The `otel` key at `path` (a metric's), checked on its own and against `params` (`None`: the params were refused,
/// so only the key's own rules are checked): Python's `parse_otel`, its errors at the same paths in the same order.
pub(in crate::spec) fn parse(
    ck: &mut Checker,
    raw: &Value,
    path: &str,
    params: Option<&dyn ProtocolParams>,
) -> Option<OtelSource> {
    let o = ck.obj(raw, path, &["instrument", "kind", "value"], &["attribute", "values", "buckets"])?;
    let before = ck.errors.len();
    let instrument = o.get("instrument").and_then(Value::as_str).filter(|s| is_instrument(s));
    if let Some(v) = o.get("instrument").filter(|_| instrument.is_none()) {
        ck.fail(
            &join(path, "instrument"),
            format!("instrument names match [A-Za-z][A-Za-z0-9_./-]{{0,254}} (OpenTelemetry's rule), got {}", shown(v)),
        );
    }
    let kind_ = o.get("kind").and_then(Value::as_str).and_then(OtelKind::from_name);
    if let Some(v) = o.get("kind").filter(|_| kind_.is_none()) {
        let names: Vec<&str> = OtelKind::ALL.iter().map(|k| k.as_str()).collect();
        ck.fail(&join(path, "kind"), format!("must be one of {}, got {}", names.join(", "), shown(v)));
    }
    let value = o.get("value").and_then(Value::as_str).and_then(OtelValue::from_name);
    match (o.get("value"), value, kind_) {
        (Some(v), None, _) => {
            let names: Vec<&str> = OtelValue::ALL.iter().map(|v| v.as_str()).collect();
            ck.fail(&join(path, "value"), format!("must be one of {}, got {}", names.join(", "), shown(v)));
        }
        (_, Some(v), Some(k)) if !v.kinds().contains(&k) => {
            let kinds: Vec<&str> = v.kinds().iter().map(|k| k.as_str()).collect();
            ck.fail(&join(path, "value"), format!("'{v}' reads a {} instrument, got kind '{k}'", kinds.join(" or ")));
        }
        _ => {}
    }
    let attribute = attribute(ck, o, path, value);
    let buckets = buckets(ck, o, path, value);
    let values = values(ck, o, path, value);
    if let (Some(p), Some(v)) = (params, value) {
        // `values` as given (a null one as left out), for its count.
        fits(ck, path, v, p, o.get("values").filter(|v| !v.is_null()), buckets.as_deref());
    }
    if ck.errors.len() != before {
        return None;
    }
    Some(OtelSource { instrument: instrument?.to_string(), kind: kind_?, value: value?, attribute, values, buckets })
}

fn attribute(ck: &mut Checker, o: &Map<String, Value>, path: &str, value: Option<OtelValue>) -> Option<String> {
    let apath = join(path, "attribute");
    let Some(attribute) = o.get("attribute") else {
        if value == Some(OtelValue::Attribute) {
            ck.fail(&apath, "required with value 'attribute'");
        }
        return None;
    };
    match attribute {
        _ if value != Some(OtelValue::Attribute) => ck.fail(&apath, "only with value 'attribute'"),
        Value::String(s) if (1..=MAX_ATTRIBUTE_LENGTH).contains(&s.chars().count()) => return Some(s.clone()),
        other => ck.fail(
            &apath,
            format!("must be an attribute key of 1 to {MAX_ATTRIBUTE_LENGTH} characters, got {}", shown(other)),
        ),
    }
    None
}

fn values(ck: &mut Checker, o: &Map<String, Value>, path: &str, value: Option<OtelValue>) -> Option<Vec<String>> {
    let raw = o.get("values")?;
    let vpath = join(path, "values");
    let strings: Option<Vec<String>> = match raw {
        Value::Array(items) if !items.is_empty() => items.iter().map(|v| v.as_str().map(str::to_string)).collect(),
        _ => None,
    };
    if value != Some(OtelValue::Attribute) {
        ck.fail(&vpath, "only with value 'attribute'");
    } else if let Some(strings) = strings {
        let mut sorted: Vec<&String> = strings.iter().collect();
        sorted.sort();
        sorted.dedup();
        if sorted.len() == strings.len() {
            return Some(strings);
        }
        ck.fail(&vpath, "must be distinct, got a value twice");
    } else {
        ck.fail(&vpath, format!("must be a non-empty list of strings, got {}", kind(raw)));
    }
    None
}

fn buckets(ck: &mut Checker, o: &Map<String, Value>, path: &str, value: Option<OtelValue>) -> Option<Vec<f64>> {
    let bpath = join(path, "buckets");
    let Some(raw) = o.get("buckets") else {
        if value == Some(OtelValue::Bucket) {
            ck.fail(&bpath, "required with value 'bucket'");
        }
        return None;
    };
    let reals: Option<Vec<Real>> = match raw {
        Value::Array(items) if !items.is_empty() && items.iter().all(finite) => items.iter().map(Real::of).collect(),
        _ => None,
    };
    if value != Some(OtelValue::Bucket) {
        ck.fail(&bpath, "only with value 'bucket'");
    } else if let Some(reals) = reals {
        if reals.windows(2).all(|w| w[0].lt(&w[1])) {
            return raw.as_array().map(|items| items.iter().map(f64_of).collect());
        }
        ck.fail(&bpath, "must be strictly increasing");
    } else {
        ck.fail(&bpath, format!("must be a non-empty list of finite numbers, got {}", kind(raw)));
    }
    None
}

/// The mapping against the protocol (`_fits`): its class, the number of categories, `clip` for numbers (`values`:
/// as given, `None` when left out; `buckets`: as checked, `None` when refused or left out).
fn fits(
    ck: &mut Checker,
    path: &str,
    value: OtelValue,
    params: &dyn ProtocolParams,
    values: Option<&Value>,
    buckets: Option<&[f64]>,
) {
    let protocol = params.protocol();
    let vpath = join(path, "value");
    let Some(class) = value_class(protocol) else {
        ck.fail(&vpath, format!("{protocol} has no OpenTelemetry mapping (only the protocols of one value do)"));
        return;
    };
    if !value.classes().contains(&class) {
        ck.fail(
            &vpath,
            format!("'{value}' gives {}, which {protocol} does not encode (it takes {})", value.noun(), class.noun()),
        );
        return;
    }
    let size = params.domain_size();
    let size_text = size.map_or_else(|| "None".to_string(), |d| d.to_string());
    let count_is = |n: usize| size == Some(n as u64);
    if value == OtelValue::Any && class == ValueClass::Category && size != Some(2) {
        ck.fail(&vpath, format!("'any' gives a boolean: {protocol} needs domain_size 2 for it, got {size_text}"));
    } else if class == ValueClass::Number && params.values().get("clip") != &Value::Bool(true) {
        ck.fail(
            &vpath,
            format!(
                "'{value}' gives any number: set params.clip to true, so that {protocol} clips a value outside its \
                 range instead of refusing it"
            ),
        );
    } else if value == OtelValue::Bucket && buckets.is_some_and(|b| !count_is(b.len() + 1)) {
        let n = buckets.map_or(0, <[f64]>::len);
        ck.fail(
            &join(path, "buckets"),
            format!("{n} bounds make {} buckets: {protocol} has domain_size {size_text}", n + 1),
        );
    } else if value == OtelValue::Attribute && class == ValueClass::Category {
        match values {
            Some(Value::Array(items)) if !items.is_empty() && !count_is(items.len()) => ck.fail(
                &join(path, "values"),
                format!("{} values for {protocol}'s domain_size {size_text}", items.len()),
            ),
            None if params.labels().is_none() => {
                ck.fail(&join(path, "values"), format!("required: {protocol} has no labels to name its categories"))
            }
            _ => {}
        }
    } else if value == OtelValue::Attribute && values.is_some() {
        ck.fail(&join(path, "values"), format!("only for a protocol of categories: {protocol} takes any string"));
    }
}
