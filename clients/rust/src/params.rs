//! Protocol parameters (Python's `ProtocolParams`): fields, `from_dict`, the canonical form the fingerprint hashes,
//! and the checks of `ldp/encoders/base.py` with Python's texts.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

use crate::cost::PrivacyCost;
use crate::error::{Error, Result};
use crate::pytext;
use crate::random::realized;
use crate::value::{f64_of, float_value, int_of, is_int, is_real, num_text, param_type_name, Num};

/// How a parameter is typed (its Python annotation): decides its canonical JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// A `float`: written `1.0` in canonical JSON even when given as `1`.
    Float,
    /// An `int`.
    Int,
    /// A `bool`.
    Bool,
    /// A `str`.
    Str,
    /// A tuple of floats.
    Floats,
    /// Optional labels (a tuple of strings or `None`).
    Labels,
    /// An optional string.
    OptStr,
    /// Anything else, written as given.
    Any,
}

/// A parameter field: its name, type and default (`None`: required).
#[derive(Debug, Clone)]
pub struct ParamField {
    /// The field's name.
    pub name: &'static str,
    /// Its type.
    pub ty: FieldType,
    /// Its default, as a JSON text (`None`: the field is required).
    pub default: Option<&'static str>,
}

impl ParamField {
    /// A required field.
    pub const fn required(name: &'static str, ty: FieldType) -> Self {
        ParamField { name, ty, default: None }
    }

    /// An optional field with a default given as JSON text (`"null"`, `"4"`, `"0.5"`, `"true"`).
    pub const fn optional(name: &'static str, ty: FieldType, default: &'static str) -> Self {
        ParamField { name, ty, default: Some(default) }
    }
}

/// The kind of a payload field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadKind {
    /// An unsigned integer below `size`.
    Uint,
    /// A string of `size` `0`/`1` characters.
    Bits,
}

/// One payload field of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadField {
    /// The field's name.
    pub name: Cow<'static, str>,
    /// Its kind.
    pub kind: PayloadKind,
    /// The bound of a `uint` or the length of a `bits` field.
    pub size: u64,
}

impl PayloadField {
    /// A `uint` field below `size`.
    pub const fn uint(name: &'static str, size: u64) -> Self {
        PayloadField { name: Cow::Borrowed(name), kind: PayloadKind::Uint, size }
    }

    /// A `bits` field of `size` bits.
    pub const fn bits(name: &'static str, size: u64) -> Self {
        PayloadField { name: Cow::Borrowed(name), kind: PayloadKind::Bits, size }
    }
}

/// The field values of a protocol's parameters as given (after `from_dict`), in field order.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamValues {
    values: Vec<(&'static str, Value)>,
}

impl ParamValues {
    /// Values given in field order (the parameters a protocol builds for a sub-protocol).
    pub(crate) fn new(values: Vec<(&'static str, Value)>) -> Self {
        ParamValues { values }
    }

    /// The value of field `name` (`Null` if there is no such field).
    pub fn get(&self, name: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| v).unwrap_or(&NULL)
    }

    /// Every field and value, in field order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.values.iter().map(|(n, v)| (*n, v))
    }

    /// `to_dict()`: every field, in order.
    pub fn to_dict(&self) -> Value {
        Value::Object(self.values.iter().map(|(n, v)| (n.to_string(), v.clone())).collect())
    }
}

/// A protocol's validated parameters (Python's `ProtocolParams`), checked when made, in the order of the Python
/// `__post_init__`, so that the first error is Python's.
pub trait ProtocolParams: fmt::Debug + Send + Sync + Any {
    /// The protocol's name, as in a spec (`grr`, `rappor`, …).
    fn protocol(&self) -> &'static str;

    /// The field values as given.
    fn values(&self) -> &ParamValues;

    /// The parameter fields, in Python's declaration order.
    fn fields(&self) -> &'static [ParamField];

    /// The ε (and δ) one report costs.
    fn privacy_cost(&self) -> PrivacyCost;

    /// The payload fields of a report, in order.
    fn schema(&self) -> Vec<PayloadField>;

    /// The fingerprint: 16 hex digits naming the protocol and these parameters; every report carries it.
    fn fingerprint(&self) -> &str;

    /// The number of distinct values of a fixed domain; `None` for open-domain (strings) and numeric protocols.
    fn domain_size(&self) -> Option<u64> {
        int_of(self.values().get("domain_size")).and_then(|d| u64::try_from(d).ok())
    }

    /// Checks what the parameters' cost needs beyond the constructor's checks (RAPPOR: a finite ε₁); a spec and an
    /// encoder refuse parameters that fail it.
    fn check_cost(&self) -> Result<()> {
        Ok(())
    }

    /// The dict the fingerprint hashes: float fields written as Python floats.
    fn canonical_dict(&self) -> Value {
        canonical_dict(self.fields(), self.values())
    }
}

/// The canonical dict of `values` of `fields`: float fields as floats, float tuples as float lists.
pub(crate) fn canonical_dict(fields: &[ParamField], values: &ParamValues) -> Value {
    let mut out = Map::new();
    for f in fields {
        let v = values.get(f.name);
        let c = match f.ty {
            FieldType::Float if is_real(v) => float_value(f64_of(v)),
            FieldType::Floats => match v {
                Value::Array(items) => Value::Array(items.iter().map(|x| float_value(f64_of(x))).collect()),
                other => other.clone(),
            },
            _ => v.clone(),
        };
        out.insert(f.name.to_string(), c);
    }
    Value::Object(out)
}

/// The fingerprint of `protocol` with these fields and values.
pub(crate) fn fingerprint_of(protocol: &str, fields: &[ParamField], values: &ParamValues) -> String {
    // Values reaching here were checked (finite floats), so canonical JSON cannot fail.
    pytext::fingerprint(protocol, &canonical_dict(fields, values)).unwrap_or_default()
}

/// Parameters from their `to_dict()` form, as Python's `ProtocolParams.from_dict`: an unknown name is a
/// `ValueError` (`unknown GRRParams parameters: ['x']`, sorted), a missing required one a `TypeError`
/// (`missing GRRParams parameters: ['domain_size']`, in field order); defaults fill the rest.
pub(crate) fn from_dict(class_name: &str, fields: &'static [ParamField], d: &Value) -> Result<ParamValues> {
    let Value::Object(d) = d else {
        return Err(Error::type_(format!(
            "{class_name} parameters must be an object, got {}",
            crate::value::type_name(d)
        )));
    };
    let mut unknown: Vec<&String> = d.keys().filter(|k| !fields.iter().any(|f| f.name == k.as_str())).collect();
    if !unknown.is_empty() {
        unknown.sort();
        return Err(Error::value(format!("unknown {class_name} parameters: {}", pytext::str_list(&unknown))));
    }
    let missing: Vec<&str> =
        fields.iter().filter(|f| f.default.is_none() && !d.contains_key(f.name)).map(|f| f.name).collect();
    if !missing.is_empty() {
        return Err(Error::type_(format!("missing {class_name} parameters: {}", pytext::str_list(&missing))));
    }
    let values = fields
        .iter()
        .map(|f| {
            let v = match d.get(f.name) {
                Some(v) => v.clone(),
                None => serde_json::from_str(f.default.unwrap_or("null")).unwrap_or(Value::Null),
            };
            (f.name, v)
        })
        .collect();
    Ok(ParamValues { values })
}

/// `check_epsilon`: a finite real > 0.
pub(crate) fn check_epsilon(v: &Value, name: &str) -> Result<f64> {
    if !is_real(v) {
        return Err(Error::type_(format!("{name} must be a real number, got {}", param_type_name(v))));
    }
    let x = f64_of(v);
    if !(x > 0.0 && x.is_finite()) {
        return Err(Error::value(format!("{name} must be finite and > 0, got {}", num_text(v))));
    }
    Ok(x)
}

/// `check_int`: an int in `[low, high]` (`high` `None`: no upper bound).
pub(crate) fn check_int(v: &Value, name: &str, low: i128, high: Option<i128>) -> Result<i128> {
    if !is_int(v) {
        return Err(Error::type_(format!("{name} must be an int, got {}", param_type_name(v))));
    }
    let ok = match int_of(v) {
        Some(i) => i >= low && high.is_none_or(|h| i <= h),
        None => false,
    };
    if !ok {
        let bound = match high {
            None => format!(">= {low}"),
            Some(h) => format!("in [{low}, {h}]"),
        };
        return Err(Error::value(format!("{name} must be {bound}, got {}", num_text(v))));
    }
    Ok(int_of(v).unwrap_or(low))
}

/// `check_probability`: a real in [0, 1] (the text shows it as a float).
pub(crate) fn check_probability(v: &Value, name: &str) -> Result<f64> {
    if !is_real(v) {
        return Err(Error::type_(format!("{name} must be a real number, got {}", param_type_name(v))));
    }
    let p = f64_of(v);
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::value(format!("{name} must be in [0, 1], got {}", pytext::float_repr(p))));
    }
    Ok(p)
}

/// `check_resolvable`: a probability the client does not round to 0 (unless it is 0).
pub(crate) fn check_resolvable(p: f64, name: &str) -> Result<f64> {
    if p > 0.0 && realized(p)? == 0.0 {
        return Err(Error::value(format!(
            "{name}={} is below the client's 2^-64 resolution: it would be drawn with probability 0 (use 0 if that \
             is meant, or a value >= 2^-64)",
            pytext::float_repr(p)
        )));
    }
    Ok(p)
}

/// `LabeledDomain._check_labels`: labels, if given, are `domain_size` distinct strings.
pub(crate) fn check_labels(labels: &Value, domain_size: i128) -> Result<Option<Vec<String>>> {
    let items = match labels {
        Value::Null => return Ok(None),
        Value::Array(items) => items,
        other => {
            return Err(Error::type_(format!(
                "labels must be a list of domain_size={domain_size} distinct strings (or None), got {}",
                param_type_name(other)
            )))
        }
    };
    if items.len() as i128 != domain_size {
        return Err(Error::value(format!("labels must have domain_size={domain_size} entries, got {}", items.len())));
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) => out.push(s.clone()),
            _ => return Err(Error::type_("labels must be strings")),
        }
    }
    let mut sorted: Vec<&String> = out.iter().collect();
    sorted.sort();
    sorted.dedup();
    if sorted.len() != out.len() {
        return Err(Error::value("labels must be distinct"));
    }
    Ok(Some(out))
}

/// The longest upload line a server job accepts, in bytes (`MAX_LINE`).
pub const MAX_LINE: u64 = 1 << 22;
/// The largest window index an envelope may carry.
pub const MAX_WINDOW: u64 = 1 << 53;
/// Counters a server aggregate of one metric may hold (2 GiB of int64).
pub const MAX_AGGREGATE_CELLS: u64 = 1 << 28;

/// `max_line_bytes`: the longest upload line (and its newline) a report with `schema` can make.
pub(crate) fn max_line_bytes(protocol: &str, schema: &[PayloadField]) -> u64 {
    let payload: Vec<String> = schema
        .iter()
        .map(|f| match f.kind {
            PayloadKind::Uint => format!("\"{}\":{}", f.name, f.size.saturating_sub(1)),
            PayloadKind::Bits => format!("\"{}\":\"\"", f.name),
        })
        .collect();
    let zeros = "0".repeat(16);
    let report =
        format!("{{\"v\":1,\"protocol\":\"{protocol}\",\"params\":\"{zeros}\",\"payload\":{{{}}}}}", payload.join(","));
    let envelope = format!(
        "{{\"spec\":\"{zeros}\",\"metric\":\"{}\",\"window\":{MAX_WINDOW},\"report\":{report}}}",
        "m".repeat(32)
    );
    let bits: u64 = schema.iter().filter(|f| f.kind == PayloadKind::Bits).map(|f| f.size).sum();
    envelope.len() as u64 + bits + 1
}

/// `ProtocolParams.check_collectable`: every upload line within [`MAX_LINE`] and the aggregate within
/// [`MAX_AGGREGATE_CELLS`] counters, else Python's `ValueError`.
pub(crate) fn check_collectable(protocol: &str, schema: &[PayloadField], aggregate_cells: u128) -> Result<()> {
    let line = max_line_bytes(protocol, schema);
    if line > MAX_LINE {
        return Err(Error::value(format!(
            "{protocol} reports of these parameters take up to {} bytes as an upload line, over the {}-byte limit of \
             every server job: all would be rejected",
            pytext::thousands(line as i128),
            pytext::thousands(MAX_LINE as i128)
        )));
    }
    if aggregate_cells > MAX_AGGREGATE_CELLS as u128 {
        return Err(Error::value(format!(
            "the {protocol} aggregate of these parameters needs {} counters ({} GiB), over the limit of {} (2 GiB)",
            pytext::thousands(aggregate_cells as i128),
            pytext::fixed1(aggregate_cells as f64 * 8.0 / (1u64 << 30) as f64),
            pytext::thousands(MAX_AGGREGATE_CELLS as i128)
        )));
    }
    Ok(())
}

/// Whether a JSON number is a float (for messages that distinguish).
#[allow(dead_code)]
pub(crate) fn is_float(v: &Value) -> bool {
    matches!(v, Value::Number(n) if matches!(crate::value::num_of(n), Num::Float(_)))
}
