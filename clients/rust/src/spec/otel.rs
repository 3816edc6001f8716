//! A metric's `otel` key (`ldp/spec/otel.py`): which OpenTelemetry instrument feeds the metric, and how one window
//! of it becomes one value.
//!
//! ```json
//! "otel": {"instrument": "app.screen.views", "kind": "counter", "value": "attribute", "attribute": "screen"}
//! ```
//!
//! The spec checks each mapping on its own and against the metric's protocol when it is read, with the Python
//! client's rules, paths and texts, so that an instrument whose window value could not be encoded is refused before
//! anything is measured:
//!
//! | `value`     | `kind`                  | the window's value                                | protocols           |
//! |-------------|-------------------------|---------------------------------------------------|---------------------|
//! | `any`       | counter, histogram      | whether anything was counted (sum, or count, > 0) | `rr`; a 2-value one |
//! | `sum`       | counter, updown_counter | the window's sum                                  | numbers (clip)      |
//! | `last`      | gauge                   | the last value observed                           | numbers (clip)      |
//! | `mean`      | histogram               | sum / count of the window's observations          | numbers (clip)      |
//! | `bucket`    | histogram               | the bucket of `buckets` holding most observations | categories          |
//! | `attribute` | counter, histogram      | the value of `attribute` counted most (`values`)  | categories, strings |
//!
//! (clip: the protocol's params have `clip: true`, so that a value outside its range is clipped, not refused;
//! `values`: the attribute values naming the categories, by default the protocol's labels.)
//!
//! Ties go to the lowest bucket or category, or the smallest string. A mapping is part of the spec's canonical form
//! (so of its fingerprint) when present; a spec without one keeps the fingerprint it had before the key existed.

use std::cmp::Ordering;

use num_bigint::BigInt;
use serde_json::{Map, Value};

use super::check::{compact, kind, Checker};
use super::join;
use crate::params::ProtocolParams;
use crate::rational::Rational;
use crate::value::{f64_of, float_value, num_of, Num};

/// The longest `attribute` key, in characters (Python's `MAX_ATTRIBUTE_LENGTH`).
pub const MAX_ATTRIBUTE_LENGTH: usize = 255;

/// The kind of OpenTelemetry instrument a mapping reads (`KINDS`); the observable instruments aggregate as their
/// synchronous kin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OtelKind {
    /// A counter (monotonic sums).
    Counter,
    /// An up-down counter (sums that may decrease).
    UpDownCounter,
    /// A histogram (a distribution of observations).
    Histogram,
    /// A gauge (the last value observed).
    Gauge,
}

impl OtelKind {
    /// Every kind, in the spec's order.
    pub const ALL: [OtelKind; 4] = [OtelKind::Counter, OtelKind::UpDownCounter, OtelKind::Histogram, OtelKind::Gauge];

    /// The spec's spelling (`"updown_counter"`).
    pub fn as_str(self) -> &'static str {
        match self {
            OtelKind::Counter => "counter",
            OtelKind::UpDownCounter => "updown_counter",
            OtelKind::Histogram => "histogram",
            OtelKind::Gauge => "gauge",
        }
    }

    /// The kind spelled `text` (`None` for any other text: the spelling is exact, `"Counter"` is none).
    pub fn from_name(text: &str) -> Option<Self> {
        OtelKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

impl std::fmt::Display for OtelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one window of an instrument's measurements becomes the metric's one value (`VALUES`: the module's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OtelValue {
    /// Whether anything was counted in the window (its sum, or count, > 0): a boolean.
    Any,
    /// The window's sum: a number.
    Sum,
    /// The last value observed: a number.
    Last,
    /// The mean of the window's observations (sum / count): a number.
    Mean,
    /// The bucket of [`OtelSource::buckets`] holding most observations: a category.
    Bucket,
    /// The value of [`OtelSource::attribute`] counted most: a category or a string.
    Attribute,
}

impl OtelValue {
    /// Every value, in the spec's order.
    pub const ALL: [OtelValue; 6] =
        [OtelValue::Any, OtelValue::Sum, OtelValue::Last, OtelValue::Mean, OtelValue::Bucket, OtelValue::Attribute];

    /// The spec's spelling (`"attribute"`).
    pub fn as_str(self) -> &'static str {
        match self {
            OtelValue::Any => "any",
            OtelValue::Sum => "sum",
            OtelValue::Last => "last",
            OtelValue::Mean => "mean",
            OtelValue::Bucket => "bucket",
            OtelValue::Attribute => "attribute",
        }
    }

    /// The value spelled `text` (`None` for any other text).
    pub fn from_name(text: &str) -> Option<Self> {
        OtelValue::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The instrument kinds it reads (`KINDS_OF`).
    pub fn kinds(self) -> &'static [OtelKind] {
        match self {
            OtelValue::Any | OtelValue::Attribute => &[OtelKind::Counter, OtelKind::Histogram],
            OtelValue::Sum => &[OtelKind::Counter, OtelKind::UpDownCounter],
            OtelValue::Last => &[OtelKind::Gauge],
            OtelValue::Mean | OtelValue::Bucket => &[OtelKind::Histogram],
        }
    }

    /// The protocol classes it can feed (`CLASSES_OF`; `Any` a category protocol only of 2 values).
    pub fn classes(self) -> &'static [ValueClass] {
        match self {
            OtelValue::Any => &[ValueClass::Boolean, ValueClass::Category],
            OtelValue::Sum | OtelValue::Last | OtelValue::Mean => &[ValueClass::Number],
            OtelValue::Bucket => &[ValueClass::Category],
            OtelValue::Attribute => &[ValueClass::Category, ValueClass::String],
        }
    }

    /// What it gives, as the messages say it (`"a boolean"`).
    fn noun(self) -> &'static str {
        match self {
            OtelValue::Any => "a boolean",
            OtelValue::Sum | OtelValue::Last | OtelValue::Mean => "a number",
            OtelValue::Bucket => "a category",
            OtelValue::Attribute => "a category or a string",
        }
    }
}

impl std::fmt::Display for OtelValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a protocol encodes (`VALUE_CLASSES`): a boolean, a category (an index or label of a fixed domain), a number
/// (in `[low, high]`) or a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueClass {
    /// `rr`.
    Boolean,
    /// `grr`, `oue`, `sue`, `olh`, `blh`, `hr`, `hr-block`, `ss`, `thresh`, `lgrr`, `loue`, `pgr`, `hpg`.
    Category,
    /// `duchi`, `hybrid`, `piecewise`, `memo-mean`, `bucket-grr`, `bucket-oue`, `dbitflip`, `memo-dbitflip`, `hh`.
    Number,
    /// `cms`, `hcms`, `rappor`, `rappor-ngrams`, `pem`, `sfp`.
    String,
}

impl ValueClass {
    /// The Python spelling (`"category"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ValueClass::Boolean => "boolean",
            ValueClass::Category => "category",
            ValueClass::Number => "number",
            ValueClass::String => "string",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            ValueClass::Boolean => "a boolean",
            ValueClass::Category => "a category",
            ValueClass::Number => "a number",
            ValueClass::String => "a string",
        }
    }
}

/// What the protocol called `protocol` encodes (`value_class`); `None` for `multi` (several questions in one
/// report) and any other name: such a metric has no mapping.
pub fn value_class(protocol: &str) -> Option<ValueClass> {
    Some(match protocol {
        "rr" => ValueClass::Boolean,
        "grr" | "oue" | "sue" | "olh" | "blh" | "hr" | "hr-block" | "ss" | "thresh" | "lgrr" | "loue" | "pgr"
        | "hpg" => ValueClass::Category,
        "duchi" | "hybrid" | "piecewise" | "memo-mean" | "bucket-grr" | "bucket-oue" | "dbitflip" | "memo-dbitflip"
        | "hh" => ValueClass::Number,
        "cms" | "hcms" | "rappor" | "rappor-ngrams" | "pem" | "sfp" => ValueClass::String,
        _ => return None,
    })
}

/// The OpenTelemetry instrument that feeds a metric, and how (the module's table): a spec's per-metric `otel`,
/// checked against the metric's protocol ([`MetricSpec::otel`](super::MetricSpec::otel)).
#[derive(Debug, Clone, PartialEq)]
pub struct OtelSource {
    /// The instrument's name as the spec writes it (OpenTelemetry's rule: a letter, then up to 254 letters, digits,
    /// `_`, `.`, `-` or `/`); matched case-insensitively ([`OtelSource::key`]).
    pub instrument: String,
    /// The instrument's kind.
    pub kind: OtelKind,
    /// How one window of it becomes one value.
    pub value: OtelValue,
    /// The attribute key whose value is the metric's value (set exactly when `value` is [`OtelValue::Attribute`]).
    pub attribute: Option<String>,
    /// The attribute values naming the protocol's categories, in index order (only with
    /// [`OtelValue::Attribute`] and a protocol of categories; `None`: the protocol's labels, or a string protocol).
    pub values: Option<Vec<String>>,
    /// The histogram's upper bounds, strictly increasing (set exactly when `value` is [`OtelValue::Bucket`]):
    /// OpenTelemetry's explicit buckets, bucket `i` holding `(b[i-1], b[i]]`, so `buckets.len() + 1` categories.
    pub buckets: Option<Vec<f64>>,
}

impl OtelSource {
    /// The instrument's name as matched: ASCII lowercase (the name is ASCII).
    pub fn key(&self) -> String {
        self.instrument.to_ascii_lowercase()
    }

    /// The attribute values of the categories, in index order: [`OtelSource::values`], else the labels of
    /// `params` (the metric's: [`ProtocolParams::labels`]); `None` when neither is set.
    pub fn categories(&self, params: &dyn ProtocolParams) -> Option<Vec<String>> {
        self.values.clone().or_else(|| params.labels())
    }

    /// The mapping as the spec's canonical form holds it (Python's `to_dict()`): `instrument`, `kind`, `value`,
    /// then `attribute`, `values` and `buckets` (floats) when set.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("instrument".into(), Value::String(self.instrument.clone()));
        out.insert("kind".into(), Value::String(self.kind.as_str().into()));
        out.insert("value".into(), Value::String(self.value.as_str().into()));
        if let Some(a) = &self.attribute {
            out.insert("attribute".into(), Value::String(a.clone()));
        }
        if let Some(v) = &self.values {
            out.insert("values".into(), Value::Array(v.iter().cloned().map(Value::String).collect()));
        }
        if let Some(b) = &self.buckets {
            out.insert("buckets".into(), Value::Array(b.iter().copied().map(float_value).collect()));
        }
        Value::Object(out)
    }
}

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
pub(super) fn parse(
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
