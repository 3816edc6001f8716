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

use serde_json::{Map, Value};

use crate::params::ProtocolParams;
use crate::value::float_value;

mod parse;

pub(super) use parse::parse;

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
