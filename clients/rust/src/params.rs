//! Protocol parameters (Python's `ProtocolParams`): the values given, read through the protocol's generated table
//! ([`crate::protocols::tables`]: each parameter's type, default, range checks and choices, as the Python package
//! declares them), the canonical form the fingerprint hashes, and the checks of `ldp/encoders/base.py`, refusing by
//! code and fields.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

use crate::cost::PrivacyCost;
use crate::error::{kind_of, Error, Refusal, RefusalCode, Result};
use crate::protocols::tables::{Bound, Literal, ParamRange, ParamRow, ParamType};
use crate::pytext;
use crate::random::realized;
use crate::value::{f64_of, float_value, int_of, is_int, is_real};

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

/// A protocol's parameter values as given, one per row of its table ([`crate::protocols::tables`]), in declaration
/// order, and the reader of each: [`ParamValues::float`], [`ParamValues::int`], [`ParamValues::bool`] and
/// [`ParamValues::choice`] check the value against its row (its type, then each range check in order, or its
/// choices) and refuse it as Python's check does (`param_type`, `param_range` with exactly the row's bounds,
/// `param_choice`). A protocol reads its parameters in the order Python's `__post_init__` checks them, its
/// relations between them in between, so that the first refusal is Python's.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamValues {
    table: &'static [ParamRow],
    values: Vec<Value>,
}

impl ParamValues {
    /// Python's `ProtocolParams.from_dict`: `params` must be an object; unknown names are refused
    /// (`unknown_params`, sorted), then missing required ones (`missing_params`, in table order); defaults fill the
    /// rest. The values themselves are checked when read.
    pub fn from_dict(table: &'static [ParamRow], params: &Value) -> Result<Self> {
        let Value::Object(d) = params else {
            return Err(Error::type_(format!("parameters must be a JSON object, got {}", kind_of(params))));
        };
        let mut unknown: Vec<&str> =
            d.keys().map(String::as_str).filter(|k| !table.iter().any(|r| r.name == *k)).collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            return Err(Refusal::value(RefusalCode::UnknownParams).with("params", unknown).into());
        }
        let missing: Vec<&str> =
            table.iter().filter(|r| r.default.is_none() && !d.contains_key(r.name)).map(|r| r.name).collect();
        if !missing.is_empty() {
            return Err(Refusal::type_(RefusalCode::MissingParams).with("params", missing).into());
        }
        Ok(Self::of(table, d.iter().map(|(k, v)| (k.as_str(), v.clone()))))
    }

    /// The values `given` by name (the parameters a protocol builds for a part), the table's defaults for the
    /// others.
    pub(crate) fn of<'a>(table: &'static [ParamRow], given: impl IntoIterator<Item = (&'a str, Value)>) -> Self {
        let mut values: Vec<Value> = table.iter().map(|r| r.default.map_or(Value::Null, literal)).collect();
        for (name, v) in given {
            match table.iter().position(|r| r.name == name) {
                Some(i) => values[i] = v,
                None => debug_assert!(false, "{name}: not a parameter"),
            }
        }
        ParamValues { table, values }
    }

    /// The protocol's table: its parameters' rows.
    pub fn table(&self) -> &'static [ParamRow] {
        self.table
    }

    /// The value of parameter `name` as given (`Null` if there is no such parameter): a parameter its protocol
    /// parses itself (labels, edges, lists).
    pub fn get(&self, name: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.table.iter().position(|r| r.name == name).map_or(&NULL, |i| &self.values[i])
    }

    /// Every parameter and value, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.table.iter().map(|r| r.name).zip(self.values.iter())
    }

    /// `to_dict()`: every parameter, in order.
    pub fn to_dict(&self) -> Value {
        Value::Object(self.iter().map(|(n, v)| (n.to_string(), v.clone())).collect())
    }

    /// The row and value of parameter `name` (an error of this crate if its protocol has no such parameter).
    fn row(&self, name: &str) -> Result<(&'static ParamRow, &Value)> {
        match self.table.iter().position(|r| r.name == name) {
            Some(i) => Ok((&self.table[i], &self.values[i])),
            None => Err(Error::Internal(format!("{name}: not a parameter of this protocol"))),
        }
    }

    /// A `float` parameter: a real (`param_type`, `expected: "float"`), then each of its row's range checks.
    pub fn float(&self, name: &str) -> Result<f64> {
        let (row, v) = self.row(name)?;
        debug_assert_eq!(row.ty, ParamType::Float, "{name}");
        if !is_real(v) {
            return Err(Refusal::param_type(name, "float", v).into());
        }
        let x = f64_of(v);
        check_ranges(row, v, None, |b| match b {
            Bound::Int(b) => x.partial_cmp(&(b as f64)),
            Bound::Float(b) => x.partial_cmp(&b),
        })?;
        Ok(x)
    }

    /// An `int` parameter: an int (`param_type`, `expected: "int"`), then each of its row's range checks (an int
    /// beyond 128 bits is out of range). A range whose upper bound follows from other parameters checks only its
    /// static part here: see [`ParamValues::int_at_most`].
    pub fn int(&self, name: &str) -> Result<i128> {
        self.read_int(name, None)
    }

    /// An `int` parameter whose row has a range with a dynamic upper bound (`dynamic`): that range checked with
    /// `max` as its upper bound, which the refusal carries.
    pub fn int_at_most(&self, name: &str, max: i128) -> Result<i128> {
        self.read_int(name, Some(max))
    }

    fn read_int(&self, name: &str, dynamic: Option<i128>) -> Result<i128> {
        let (row, v) = self.row(name)?;
        debug_assert!(matches!(row.ty, ParamType::Int | ParamType::OptInt), "{name}");
        if !is_int(v) {
            return Err(Refusal::param_type(name, "int", v).into());
        }
        let i = int_of(v);
        check_ranges(row, v, dynamic, |b| match (i, b) {
            (None, _) => None, // beyond 128 bits: out of every range
            (Some(i), Bound::Int(b)) => Some(i.cmp(&i128::from(b))),
            (Some(i), Bound::Float(b)) => (i as f64).partial_cmp(&b),
        })?;
        Ok(i.unwrap_or_default())
    }

    /// A `bool` parameter (`param_type`, `expected: "bool"`).
    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.row(name)?.1 {
            Value::Bool(b) => Ok(*b),
            other => Err(Refusal::param_type(name, "bool", other).into()),
        }
    }

    /// A parameter that is a choice: one of its row's strings (`param_choice` naming them, whatever was given).
    pub fn choice(&self, name: &str) -> Result<&'static str> {
        let (row, v) = self.row(name)?;
        debug_assert!(!row.choices.is_empty(), "{name}");
        match row.choices.iter().find(|c| v.as_str() == Some(**c)) {
            Some(c) => Ok(c),
            None => Err(Refusal::choice(name, row.choices, v).into()),
        }
    }
}

/// Each range check of `row` in order on the value `given` (`cmp`: how it compares with a bound; `None`: it is
/// not comparable, and refused), the first it fails refused as `param_range` with exactly that range's bounds
/// (`dynamic`: the upper bound of a range whose bound follows from other parameters).
fn check_ranges(
    row: &ParamRow,
    given: &Value,
    dynamic: Option<i128>,
    cmp: impl Fn(Bound) -> Option<std::cmp::Ordering>,
) -> Result<()> {
    use std::cmp::Ordering::{Greater, Less};
    for r in row.ranges {
        let max = match (r.dynamic, dynamic) {
            (true, Some(m)) => Some(Bound::Int(i64::try_from(m).unwrap_or(i64::MAX))),
            _ => r.max,
        };
        let finite = !r.finite || f64_of(given).is_finite();
        let above = r.min.is_none_or(|b| matches!(cmp(b), Some(o) if o == Greater || (!r.min_exclusive && o != Less)));
        let below = max.is_none_or(|b| matches!(cmp(b), Some(o) if o == Less || (!r.max_exclusive && o != Greater)));
        if !(finite && above && below) {
            return Err(range_refusal(row.name, given, r, max).into());
        }
    }
    Ok(())
}

/// The `param_range` refusal of `given` by range `r` (its upper bound `max`): Python's `Range.fields()`.
fn range_refusal(name: &str, given: &Value, r: &ParamRange, max: Option<Bound>) -> Refusal {
    let mut out = Refusal::param_range(name, given.clone());
    for (key, bound) in [("min", r.min), ("max", max)] {
        if let Some(b) = bound {
            out = out.with(key, bound_value(b));
        }
    }
    for (key, set) in [("min_exclusive", r.min_exclusive), ("max_exclusive", r.max_exclusive), ("finite", r.finite)] {
        if set {
            out = out.with(key, true);
        }
    }
    out
}

/// A bound as JSON: an int as an int, a float as a float.
fn bound_value(b: Bound) -> Value {
    match b {
        Bound::Int(i) => Value::from(i),
        Bound::Float(x) => float_value(x),
    }
}

/// A default as JSON.
fn literal(l: Literal) -> Value {
    match l {
        Literal::Null => Value::Null,
        Literal::Bool(b) => Value::Bool(b),
        Literal::Int(i) => Value::from(i),
        Literal::Float(x) => float_value(x),
        Literal::Str(s) => Value::from(s),
        Literal::List(items) => Value::Array(items.iter().copied().map(literal).collect()),
    }
}

/// A protocol's validated parameters (Python's `ProtocolParams`), checked when made, in the order of the Python
/// `__post_init__`, so that the first error is Python's.
pub trait ProtocolParams: fmt::Debug + Send + Sync + Any {
    /// The protocol's name, as in a spec (`grr`, `rappor`, …).
    fn protocol(&self) -> &'static str;

    /// The parameter values as given.
    fn values(&self) -> &ParamValues;

    /// The protocol's table: its parameters' rows, in Python's declaration order.
    fn table(&self) -> &'static [ParamRow] {
        self.values().table()
    }

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

    /// The names of a fixed domain's values, in index order (Python's `params.labels`): the `labels` parameter of
    /// a protocol that has one, when given; the buckets' names (`"[a, b)"`, the last `"[a, b]"`) for the histogram
    /// protocols (`dbitflip`, `bucket-grr`, `bucket-oue`, `memo-dbitflip`, `hh`); `None` otherwise.
    fn labels(&self) -> Option<Vec<String>> {
        match self.values().get("labels") {
            Value::Array(items) => items.iter().map(|v| v.as_str().map(str::to_string)).collect(),
            _ => None,
        }
    }

    /// Checks what the parameters' cost needs beyond the constructor's checks (RAPPOR: a finite ε₁); a spec and an
    /// encoder refuse parameters that fail it.
    fn check_cost(&self) -> Result<()> {
        Ok(())
    }

    /// The dict the fingerprint hashes: float fields written as Python floats.
    fn canonical_dict(&self) -> Value {
        canonical_dict(self.values())
    }
}

/// The canonical dict of `values`: float parameters as floats, float lists as float lists.
pub(crate) fn canonical_dict(values: &ParamValues) -> Value {
    let mut out = Map::new();
    for (row, v) in values.table.iter().zip(values.values.iter()) {
        let c = match row.ty {
            ParamType::Float if is_real(v) => float_value(f64_of(v)),
            ParamType::Floats => match v {
                Value::Array(items) => Value::Array(items.iter().map(|x| float_value(f64_of(x))).collect()),
                other => other.clone(),
            },
            _ => v.clone(),
        };
        out.insert(row.name.to_string(), c);
    }
    Value::Object(out)
}

/// The fingerprint of `protocol` with these values.
pub(crate) fn fingerprint_of(protocol: &str, values: &ParamValues) -> String {
    // Values reaching here were checked (finite floats), so canonical JSON cannot fail.
    pytext::fingerprint(protocol, &canonical_dict(values)).unwrap_or_default()
}

/// `check_int`: an int in `[low, high]` (`high` `None`: no upper bound), for an int no table row describes (a list's
/// entry, a device's cohort) or whose Python check is not its row's. The refusal's `param` is the first word of
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
