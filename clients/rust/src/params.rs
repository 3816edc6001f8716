//! Protocol parameters (Python's `ProtocolParams`): fields, `from_dict`, the canonical form the fingerprint hashes,
//! and the checks of `ldp/encoders/base.py`, refusing by code and fields.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

use crate::cost::PrivacyCost;
use crate::error::{kind_of, Error, Refusal, RefusalCode, Result};
use crate::pytext;
use crate::random::realized;
use crate::value::{f64_of, float_value, int_of, is_int, is_real};

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

/// Parameters from their `to_dict()` form, as Python's `ProtocolParams.from_dict`: unknown names are refused
/// (`unknown_params`, sorted), then missing required ones (`missing_params`, in field order); defaults fill the rest.
pub(crate) fn from_dict(_class_name: &str, fields: &'static [ParamField], d: &Value) -> Result<ParamValues> {
    let Value::Object(d) = d else {
        return Err(Error::type_(format!("parameters must be a JSON object, got {}", kind_of(d))));
    };
    let mut unknown: Vec<&str> =
        d.keys().map(String::as_str).filter(|k| !fields.iter().any(|f| f.name == *k)).collect();
    if !unknown.is_empty() {
        unknown.sort();
        return Err(Refusal::value(RefusalCode::UnknownParams).with("params", unknown).into());
    }
    let missing: Vec<&str> =
        fields.iter().filter(|f| f.default.is_none() && !d.contains_key(f.name)).map(|f| f.name).collect();
    if !missing.is_empty() {
        return Err(Refusal::type_(RefusalCode::MissingParams).with("params", missing).into());
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
        return Err(Refusal::param_type(name, "float", v).into());
    }
    let x = f64_of(v);
    if !(x > 0.0 && x.is_finite()) {
        return Err(Refusal::param_range(name, v.clone())
            .with("min", 0)
            .with("min_exclusive", true)
            .with("finite", true)
            .into());
    }
    Ok(x)
}

/// `check_int`: an int in `[low, high]` (`high` `None`: no upper bound). The refusal's `param` is the first word of
/// `name` (`"width (m)"` is `width`).
pub(crate) fn check_int(v: &Value, name: &str, low: i128, high: Option<i128>) -> Result<i128> {
    let name = name.split(' ').next().unwrap_or(name);
    if !is_int(v) {
        return Err(Refusal::param_type(name, "int", v).into());
    }
    let ok = match int_of(v) {
        Some(i) => i >= low && high.is_none_or(|h| i <= h),
        None => false,
    };
    if !ok {
        let mut r = Refusal::param_range(name, v.clone()).with("min", int_value(low));
        if let Some(h) = high {
            r = r.with("max", int_value(h));
        }
        return Err(r.into());
    }
    Ok(int_of(v).unwrap_or(low))
}

/// An int as a JSON value.
pub(crate) fn int_value(i: i128) -> Value {
    serde_json::from_str(&i.to_string()).unwrap_or(Value::Null)
}

/// `check_probability`: a real in [0, 1].
pub(crate) fn check_probability(v: &Value, name: &str) -> Result<f64> {
    if !is_real(v) {
        return Err(Refusal::param_type(name, "float", v).into());
    }
    let p = f64_of(v);
    if !(0.0..=1.0).contains(&p) {
        return Err(Refusal::param_range(name, v.clone()).with("min", 0).with("max", 1).into());
    }
    Ok(p)
}

/// `check_resolvable`: a probability the client does not round to 0 (unless it is 0).
pub(crate) fn check_resolvable(p: f64, name: &str) -> Result<f64> {
    if p > 0.0 && realized(p)? == 0.0 {
        return Err(Refusal::relation("below_resolution", &[name]).into());
    }
    Ok(p)
}

/// `LabeledDomain._check_labels`: labels, if given, are `domain_size` distinct strings.
pub(crate) fn check_labels(labels: &Value, domain_size: i128) -> Result<Option<Vec<String>>> {
    let items = match labels {
        Value::Null => return Ok(None),
        Value::Array(items) => items,
        other => return Err(Refusal::param_type("labels", "labels", other).into()),
    };
    if items.len() as i128 != domain_size {
        return Err(Refusal::value(RefusalCode::ParamLength)
            .with("param", "labels")
            .with("got", items.len())
            .with("min", int_value(domain_size))
            .with("max", int_value(domain_size))
            .into());
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) => out.push(s.clone()),
            _ => return Err(Refusal::param_type("labels", "string", item).with("index", i).into()),
        }
    }
    let mut sorted: Vec<&String> = out.iter().collect();
    sorted.sort();
    sorted.dedup();
    if sorted.len() != out.len() {
        return Err(Refusal::relation("distinct", &["labels"]).into());
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
/// [`MAX_AGGREGATE_CELLS`] counters, else a `param_limit` refusal.
pub(crate) fn check_collectable(protocol: &str, schema: &[PayloadField], aggregate_cells: u128) -> Result<()> {
    let line = max_line_bytes(protocol, schema);
    if line > MAX_LINE {
        return Err(Refusal::limit("line_bytes", line, MAX_LINE).into());
    }
    if aggregate_cells > MAX_AGGREGATE_CELLS as u128 {
        return Err(Refusal::limit("aggregate_cells", int_value(aggregate_cells as i128), MAX_AGGREGATE_CELLS).into());
    }
    Ok(())
}

/// `check_finite`: a finite real.
pub(crate) fn check_finite(v: &Value, name: &str) -> Result<f64> {
    if !is_real(v) {
        return Err(Refusal::param_type(name, "float", v).into());
    }
    let x = f64_of(v);
    if !x.is_finite() {
        return Err(Refusal::param_range(name, v.clone()).with("finite", true).into());
    }
    Ok(x)
}

/// `check_bool`: a bool.
pub(crate) fn check_bool(v: &Value, name: &str) -> Result<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(Refusal::param_type(name, "bool", other).into()),
    }
}
