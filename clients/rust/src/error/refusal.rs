//! A refusal by meaning ([`Refusal`]): its [`RefusalKind`], its [`RefusalCode`] and its fields, the same in every
//! client of `ldp` (docs/conformance.md, "Refusals").

use std::fmt;

use serde_json::{Map, Value};

use crate::value::{num_of, Num};

/// Whether a refusal is of the wrong kind of thing or of a wrong value of the right kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalKind {
    /// The wrong kind of thing (a string for a number): the vectors' `TypeError`.
    Type,
    /// The right kind, but out of range, unknown or breaking a rule: the vectors' `ValueError`.
    Value,
}

impl RefusalKind {
    /// `"TypeError"` or `"ValueError"`, as the conformance vectors name the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalKind::Type => "TypeError",
            RefusalKind::Value => "ValueError",
        }
    }
}

macro_rules! refusal_codes {
    ($($(#[$doc:meta])* $variant:ident = $text:literal,)*) => {
        /// What a refusal refused, a stable machine code (docs/conformance.md, "Refusals", lists each code's fields).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum RefusalCode {
            $($(#[$doc])* $variant,)*
        }

        impl RefusalCode {
            /// Every code, in the order of the documentation's table.
            pub const ALL: &'static [RefusalCode] = &[$(RefusalCode::$variant,)*];

            /// The code as the vectors write it (`"param_range"`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RefusalCode::$variant => $text,)*
                }
            }

            /// The code written `text` (`None` for an unknown one).
            pub fn from_name(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(RefusalCode::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

refusal_codes! {
    /// Required parameters are missing: `params`.
    MissingParams = "missing_params",
    /// Parameters the protocol does not have: `params`, sorted.
    UnknownParams = "unknown_params",
    /// Parameter `param` is not of the `expected` kind: `got` is the kind given.
    ParamType = "param_type",
    /// The number `got` given for `param` is out of its range (`min`, `max`, `min_exclusive`, `max_exclusive`,
    /// `finite`).
    ParamRange = "param_range",
    /// `got` is not one of the strings `choices` of `param`.
    ParamChoice = "param_choice",
    /// A list or string parameter `param` has `got` entries, not within `min`, `max`.
    ParamLength = "param_length",
    /// The parameters `params` break the rule `rule`.
    ParamRelation = "param_relation",
    /// A size that follows from the parameters, `got`, is over the limit `limit`, at most `max`.
    ParamLimit = "param_limit",
    /// The value is not of the `expected` kind: `got` is the kind given.
    ValueType = "value_type",
    /// The number `got` is outside `[min, max]`.
    ValueRange = "value_range",
    /// The string `got` is not one of the declared labels.
    UnknownLabel = "unknown_label",
    /// The string is empty.
    EmptyValue = "empty_value",
    /// The string has `got` units (`unit`), over `max`.
    ValueTooLong = "value_too_long",
    /// The string holds `char`, not in the alphabet.
    NotInAlphabet = "not_in_alphabet",
    /// The string has no form in `encoding`.
    NotEncodable = "not_encodable",
    /// A record lacks `attributes`.
    MissingAttributes = "missing_attributes",
    /// A record has `attributes` the protocol does not have.
    UnknownAttributes = "unknown_attributes",
    /// The spec sends the values of `metric` to the two-aggregator mode (`trust`: `two-aggregator` or
    /// `two-aggregator+local`) and the client has no task for it (none given, or a build without the `prio`
    /// feature): nothing is recorded.
    TrustModel = "trust_model",
}

impl fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused parameter or value, by meaning: the same [`kind`](Refusal::kind), [`code`](Refusal::code) and
/// [`fields`](Refusal::fields) in every client of `ldp` (the conformance vectors check them); its `Display` is this
/// client's own wording.
///
/// ```
/// # use ldp_client::{protocols, Error, RefusalCode, RefusalKind, json};
/// let err = protocols::get("grr").unwrap().params(&json!({"domain_size": 4, "epsilon": -1})).unwrap_err();
/// let Error::Refusal(r) = err else { panic!() };
/// assert_eq!((r.kind, r.code), (RefusalKind::Value, RefusalCode::ParamRange));
/// assert_eq!(r.field("param"), Some(&json!("epsilon")));
/// assert_eq!(r.fields_json(), r#"{"param":"epsilon","got":-1,"min":0,"min_exclusive":true,"finite":true}"#);
/// assert_eq!(r.to_string(), "epsilon is out of range: got -1, must be > 0 and finite");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Type or value refusal.
    pub kind: RefusalKind,
    /// What was refused.
    pub code: RefusalCode,
    /// The structured details, as JSON values (numbers keep their kind: `-1` given is the int `-1`).
    pub fields: Map<String, Value>,
}

impl Refusal {
    /// A refusal with no fields yet.
    pub fn new(kind: RefusalKind, code: RefusalCode) -> Self {
        Refusal { kind, code, fields: Map::new() }
    }

    /// A `ValueError` refusal of `code`.
    pub(crate) fn value(code: RefusalCode) -> Self {
        Refusal::new(RefusalKind::Value, code)
    }

    /// A `TypeError` refusal of `code`.
    pub(crate) fn type_(code: RefusalCode) -> Self {
        Refusal::new(RefusalKind::Type, code)
    }

    /// This refusal with field `name` set to `value`.
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.fields.insert(name.to_string(), value.into());
        self
    }

    /// `param_type`: parameter `param` is not of the `expected` kind.
    pub(crate) fn param_type(param: &str, expected: &str, given: &Value) -> Self {
        Refusal::type_(RefusalCode::ParamType)
            .with("param", param)
            .with("expected", expected)
            .with("got", kind_of(given))
    }

    /// `value_type`: a value is not of the `expected` kind.
    pub(crate) fn value_type(expected: &str, given: &Value) -> Self {
        Refusal::type_(RefusalCode::ValueType).with("expected", expected).with("got", kind_of(given))
    }

    /// `param_range` of `param`, the number given `got` (bounds added with [`Refusal::with`]).
    pub(crate) fn param_range(param: &str, got: impl Into<Value>) -> Self {
        Refusal::value(RefusalCode::ParamRange).with("param", param).with("got", got)
    }

    /// `value_range` of the number given `got`.
    pub(crate) fn value_range(got: impl Into<Value>) -> Self {
        Refusal::value(RefusalCode::ValueRange).with("got", got)
    }

    /// `param_relation`: `params` break `rule`.
    pub(crate) fn relation(rule: &str, params: &[&str]) -> Self {
        Refusal::value(RefusalCode::ParamRelation).with("params", names(params)).with("rule", rule)
    }

    /// `param_limit`: the size `got` over the limit `limit` (at most `max`).
    pub(crate) fn limit(limit: &str, got: impl Into<Value>, max: impl Into<Value>) -> Self {
        Refusal::value(RefusalCode::ParamLimit).with("limit", limit).with("got", got).with("max", max)
    }

    /// `param_choice`: `got` is not one of `choices` of `param`.
    pub(crate) fn choice(param: &str, choices: &[&str], got: &Value) -> Self {
        Refusal::value(RefusalCode::ParamChoice)
            .with("param", param)
            .with("choices", names(choices))
            .with("got", got.clone())
    }

    /// The value of field `name`, if the refusal has it.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }

    /// The fields as one compact JSON object (what the C interface's `ldp_last_error_fields` gives).
    pub fn fields_json(&self) -> String {
        /// A non-finite number (a NaN or ±inf the C interface was given) as `null`: the text stays JSON.
        fn strict(v: &Value) -> Value {
            match v {
                Value::Number(n) if matches!(num_of(n), Num::Float(x) if !x.is_finite()) => Value::Null,
                Value::Array(a) => Value::Array(a.iter().map(strict).collect()),
                Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), strict(v))).collect()),
                other => other.clone(),
            }
        }
        strict(&Value::Object(self.fields.clone())).to_string()
    }

    /// The parameter names of this refusal (`param`, or each of `params`) mapped by `rename`: a protocol's refusal of
    /// a part it is built from, in its own names.
    pub(crate) fn renamed(mut self, rename: impl Fn(&str) -> Option<String>) -> Self {
        if let Some(Value::String(p)) = self.fields.get_mut("param") {
            if let Some(n) = rename(p) {
                *p = n;
            }
        }
        if let Some(Value::Array(ps)) = self.fields.get_mut("params") {
            for p in ps.iter_mut() {
                if let Value::String(s) = p {
                    if let Some(n) = rename(s) {
                        *s = n;
                    }
                }
            }
        }
        self
    }
}

impl std::error::Error for Refusal {}

fn names(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| Value::String(s.to_string())).collect())
}

/// The kind of a JSON value, as a refusal's `got` names it: `null`, `bool`, `int`, `float`, `string`, `list`,
/// `object`.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) => match num_of(n) {
            Num::Float(_) => "float",
            _ => "int",
        },
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}
