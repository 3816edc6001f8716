//! The client's errors. A refused parameter or value is an [`Error::Refusal`]: a [`Refusal`] says what was refused
//! by meaning (its [`RefusalKind`], [`RefusalCode`] and fields, the same in every client: docs/conformance.md,
//! "Refusals"); its message is this client's own.

use std::fmt;

use serde_json::{Map, Value};

use crate::cost::PrivacyCost;
use crate::value::{num_of, Num};

/// The scope of the collection's total budget in [`Error::BudgetExceeded`].
pub const ALL_METRICS: &str = "*";

/// Everything that can go wrong in the client, each kind with its own variant.
///
/// A protocol's refusal of a parameter or value is an [`Error::Refusal`], its [`Refusal`] telling what by meaning;
/// [`Error::python_type`] names the error's class as every client of `ldp` does (`ValueError`, `TypeError`, …).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A protocol refused a parameter or a value: what, by meaning ([`Refusal::code`], [`Refusal::fields`]).
    Refusal(Refusal),
    /// Another argument of the right type but a wrong value (Python's `ValueError`).
    Value(String),
    /// Another argument of the wrong type (Python's `TypeError`).
    Type(String),
    /// An invalid collection spec: every problem as `json.path: message` (Python's `SpecError`).
    Spec {
        /// Where the spec came from (`spec`, a file name).
        source: String,
        /// Each problem found, in document order.
        errors: Vec<String>,
    },
    /// A charge would exceed a cap: nothing was charged and no report was made (Python's `BudgetExceeded`).
    BudgetExceeded {
        /// The metric, or [`ALL_METRICS`] for the collection's total.
        scope: String,
        /// `"window"` or `"lifetime"`.
        period: String,
        /// What the report would have cost.
        requested: PrivacyCost,
        /// What the scope has spent in the period.
        spent: PrivacyCost,
        /// The scope's cap in the period.
        cap: PrivacyCost,
    },
    /// The ledger's state cannot be read or written safely (damaged file, lock not obtained in time, I/O error, a
    /// state missing beside traces of it).
    Ledger(String),
    /// The report would take the outbox past its cap (`max_outbox_bytes`): nothing was charged or stored
    /// (Python's `OutboxFull`). Uploading makes room.
    OutboxFull {
        /// Bytes waiting for upload (each pending report's envelope line and its newline, pinned batches included).
        pending_bytes: u64,
        /// The cap.
        max_bytes: u64,
        /// The refused item of a [`crate::TelemetryClient::record_many`] batch (`None` for `record`).
        item: Option<usize>,
    },
    /// The device opted out of collection ([`crate::TelemetryClient::opt_out`]): nothing was charged or stored
    /// (Python's `OptedOutError`).
    OptedOut(String),
    /// A replayed random source was asked for a draw it does not hold (conformance tests).
    Replay(String),
    /// An upload failed for now (network, deadline, 5xx, 408, 429): the batch stays queued and is retried.
    Transport(String),
    /// The collector refused a batch for good (a 4xx other than 408 and 429): retrying would not help.
    UploadRejected {
        /// The HTTP status.
        status: u16,
        /// The collector's reason, bounded.
        message: String,
    },
    /// An item of a [`crate::TelemetryClient::record_many`] batch was refused (nothing of the batch was kept):
    /// which item, its metric, and why.
    Item {
        /// The refused item's position in the batch.
        index: usize,
        /// Its metric.
        metric: String,
        /// Why it was refused (a [`Error::Refusal`] of its value, an unknown metric, …).
        error: Box<Error>,
    },
    /// A bad argument at the C interface (null pointer, invalid UTF-8, oversized input, wrong handle).
    InvalidArgument(String),
    /// A panic inside the library, caught at the C interface (a bug: please report it).
    Internal(String),
}

impl Error {
    pub(crate) fn value(message: impl Into<String>) -> Self {
        Error::Value(message.into())
    }

    pub(crate) fn type_(message: impl Into<String>) -> Self {
        Error::Type(message.into())
    }

    /// The refusal, if this error is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Error::Refusal(r) => Some(r),
            Error::Item { error, .. } => error.refusal(),
            _ => None,
        }
    }

    /// The error's class, as every client names it (`ValueError`, `TypeError`, `SpecError`, `BudgetExceeded`, …;
    /// a refusal is a `TypeError` or a `ValueError` by its [`RefusalKind`]).
    pub fn python_type(&self) -> &'static str {
        match self {
            Error::Refusal(r) => r.kind.as_str(),
            Error::Item { error, .. } => error.python_type(),
            Error::Value(_) | Error::InvalidArgument(_) => "ValueError",
            Error::Type(_) => "TypeError",
            Error::Spec { .. } => "SpecError",
            Error::BudgetExceeded { .. } => "BudgetExceeded",
            Error::Ledger(_) => "LedgerError",
            Error::OutboxFull { .. } => "OutboxFull",
            Error::OptedOut(_) => "OptedOutError",
            Error::Replay(_) => "ReplayError",
            Error::Transport(_) => "TransportError",
            Error::UploadRejected { .. } => "UploadRejected",
            Error::Internal(_) => "RuntimeError",
        }
    }

    /// This error with the parameter names of a refusal mapped by `rename` (other errors as they are): a protocol's
    /// refusal of a part it is built from, in its own names.
    pub(crate) fn renamed(self, rename: impl Fn(&str) -> Option<String>) -> Self {
        match self {
            Error::Refusal(r) => Error::Refusal(r.renamed(rename)),
            other => other,
        }
    }

    /// This error with field `name` set to `value` if it is a refusal (an attribute of a `multi`).
    pub(crate) fn with_field(self, name: &str, value: impl Into<Value>) -> Self {
        match self {
            Error::Refusal(r) => Error::Refusal(r.with(name, value)),
            other => other,
        }
    }

    /// A `param_relation` refusal (that `keep` accepts) restated as the same rule broken by `params`: a part's
    /// refusal that the protocol's own parameters cause together (an hh level's ε too large for its oracle).
    pub(crate) fn relation_of(self, params: &[&str], keep: impl Fn(&Refusal) -> bool) -> Self {
        match self {
            Error::Refusal(r) if r.code == RefusalCode::ParamRelation && keep(&r) => {
                let rule = r.fields.get("rule").and_then(Value::as_str).unwrap_or_default().to_string();
                Error::Refusal(Refusal::relation(&rule, params))
            }
            other => other,
        }
    }

    /// The message alone.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Refusal(r) => r.fmt(f),
            Error::Item { index, metric, error } => write!(f, "record_many item {index} ({metric:?}): {error}"),
            Error::Value(m)
            | Error::Type(m)
            | Error::Ledger(m)
            | Error::OptedOut(m)
            | Error::Replay(m)
            | Error::Transport(m)
            | Error::InvalidArgument(m)
            | Error::Internal(m) => f.write_str(m),
            Error::Spec { source, errors } => {
                write!(f, "{source}: {} error(s):", errors.len())?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
            Error::BudgetExceeded { scope, period, requested, spent, cap } => {
                let who = if scope == ALL_METRICS { "all metrics".to_string() } else { format!("metric {scope:?}") };
                write!(
                    f,
                    "privacy budget exceeded for {who} ({period}): spent {spent}, requested {requested}, cap {cap}"
                )
            }
            Error::OutboxFull { pending_bytes, max_bytes, item } => {
                if let Some(i) = item {
                    write!(f, "record_many item {i} does not fit: ")?;
                }
                write!(
                    f,
                    "the outbox is full: {pending_bytes} bytes wait for upload and the cap (max_outbox_bytes) is \
                     {max_bytes}; nothing was charged or stored (upload to make room)"
                )
            }
            Error::UploadRejected { status, message } => {
                write!(f, "the collector refused the batch ({status}): {message}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Refusal(r) => Some(r),
            Error::Item { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        Error::Refusal(r)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Ledger(e.to_string())
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

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
    /// `two-aggregator+local`), whose reports the client's randomizer does not build: nothing is recorded.
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

/// What a `rule` or `limit` id means, for messages.
fn rule_text(rule: &str) -> Option<&'static str> {
    Some(match rule {
        "distinct" => "the entries must be distinct",
        "below_resolution" => "a probability in (0, 2^-64) would be drawn with probability 0",
        "epsilon_too_large" => "epsilon is so large that a derived probability rounds to 0 or 1 (not private)",
        "epsilon_too_small" => "epsilon is so small that the derived probabilities are equal (no information)",
        "line_bytes" => "bytes of the longest upload line of one report",
        "aggregate_cells" => "counters of the server aggregate of one metric",
        "0<p<q<1" => "0 < p < q < 1 is needed",
        "attribute_name" => "a name must match [a-z][a-z0-9_]{0,30}",
        "decode_work" => "steps of the decoder's dynamic programme (K·q·t)",
        "distinct_edges" => "the range must hold branching^depth + 1 distinct bucket edges",
        "distinct_fields" => "the report fields must not collide",
        "edges_increasing" => "the edges must be strictly increasing",
        "epsilon<epsilon_perm" => "epsilon must be below epsilon_perm",
        "epsilon<realized_epsilon_perm" => "epsilon must be below the permanent round's realized epsilon",
        "field_name_characters" => "characters of a report field's name",
        "fields" => "fields of one report",
        "finite_epsilon" => "p, q and f must give a finite epsilon",
        "google_client" => "mode 'google' needs num_bloombits <= 32 and num_hashes <= 16",
        "groups" => "groups of prefixes",
        "grr_prefix_bits" => "bits of a prefix GRR domain",
        "h<=k" => "num_hashes must be at most num_bloombits",
        "hash_range" => "round(e^epsilon) + 1 must be at most 2^32",
        "hash_seed_room" => "hash_seed + word_num_hashes + fragment_num_hashes must be at most 2^32 - 1",
        "instantaneous_realizable" => "the instantaneous round's probabilities must be realizable",
        "leaf_weight" => "the leaf level (the last) must have a weight > 0",
        "leaves" => "buckets, branching^depth",
        "low<high" => "low must be below high",
        "multiple_of_fragment_length" => "length must be a multiple of fragment_length",
        "multiple_of_n" => "max_length must be a multiple of n",
        "p<q" => "p must be below q",
        "p_q_resolvable" => "p and q must differ at the client's 2^-64 resolution",
        "pad_not_in_alphabet" => "pad must not be in the alphabet",
        "positions" => "n-gram positions",
        "power_of_two" => "the width must be a power of two",
        "prime_field" => "q must be prime (the field F_q)",
        "prio3_encoded_length" => "field elements of one encoded Prio3 measurement",
        "replacement_in_alphabet" => "replacement must be a symbol of the alphabet",
        "two_blocks" => "hpg needs two blocks: at the given q, the domain must not fit in one block",
        "two_positions" => "max_length / n must be at least 2",
        "width_finite" => "high - low must be finite",
        _ => return None,
    })
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let get = |k: &str| self.fields.get(k);
        let text = |k: &str| match get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        let list = |k: &str| match get(k) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        };
        let json = |k: &str| get(k).map(Value::to_string).unwrap_or_default();
        if let Some(a) = get("attribute") {
            write!(f, "attribute {}: ", a.as_str().map(str::to_string).unwrap_or_else(|| a.to_string()))?;
        }
        let param = || match get("index") {
            Some(i) => format!("{}[{i}]", text("param")),
            None => text("param"),
        };
        let bounds = || {
            let mut parts = Vec::new();
            let flag = |k: &str| get(k) == Some(&Value::Bool(true));
            if let Some(m) = get("min") {
                parts.push(format!("{} {m}", if flag("min_exclusive") { ">" } else { ">=" }));
            }
            if let Some(m) = get("max") {
                parts.push(format!("{} {m}", if flag("max_exclusive") { "<" } else { "<=" }));
            }
            if flag("finite") {
                parts.push("finite".to_string());
            }
            parts.join(" and ")
        };
        match self.code {
            RefusalCode::MissingParams => write!(f, "missing parameters: {}", list("params")),
            RefusalCode::UnknownParams => write!(f, "unknown parameters: {}", list("params")),
            RefusalCode::ParamType => write!(f, "{} must be {}, got {}", param(), text("expected"), text("got")),
            RefusalCode::ParamRange => {
                write!(f, "{} is out of range: got {}, must be {}", param(), json("got"), bounds())
            }
            RefusalCode::ParamChoice => {
                write!(f, "{} must be one of {}, got {}", param(), list("choices"), json("got"))
            }
            RefusalCode::ParamLength => {
                write!(f, "{} has {} entries, must have {}", text("param"), json("got"), bounds())
            }
            RefusalCode::ParamRelation => {
                let rule = text("rule");
                write!(f, "parameters {} break the rule {rule}", list("params"))?;
                if let Some(i) = get("index") {
                    write!(f, " at entry {i}")?;
                }
                match rule_text(&rule) {
                    Some(t) => write!(f, ": {t}"),
                    None => Ok(()),
                }
            }
            RefusalCode::ParamLimit => {
                let limit = text("limit");
                write!(
                    f,
                    "these parameters need {} {} (limit {limit}), at most {} allowed",
                    json("got"),
                    rule_text(&limit).unwrap_or("units"),
                    json("max")
                )
            }
            RefusalCode::ValueType => write!(f, "the value must be {}, got {}", text("expected"), text("got")),
            RefusalCode::ValueRange => match get("index") {
                // An entry of a list value (a Prio3SumVec measurement).
                Some(i) => write!(f, "entry {i} of the value, {}, is out of range: must be {}", json("got"), bounds()),
                None => write!(f, "the value {} is out of range: must be {}", json("got"), bounds()),
            },
            RefusalCode::UnknownLabel => write!(f, "the value {} is not one of the declared labels", json("got")),
            RefusalCode::EmptyValue => f.write_str("the value is empty"),
            RefusalCode::ValueTooLong => {
                write!(f, "the value has {} {}, over the maximum of {}", json("got"), text("unit"), json("max"))
            }
            RefusalCode::NotInAlphabet => write!(f, "the value holds {}, not in the alphabet", json("char")),
            RefusalCode::NotEncodable => write!(f, "the value has no {} form", text("encoding")),
            RefusalCode::MissingAttributes => write!(f, "the record lacks attributes {}", list("attributes")),
            RefusalCode::UnknownAttributes => write!(f, "the record has unknown attributes {}", list("attributes")),
            RefusalCode::TrustModel => write!(
                f,
                "metric {} is collected in the two-aggregator mode (trust {}): its value is secret-shared between two \
                 aggregators, never sent randomized to one collector; the randomizing client does not build those \
                 reports (ldp_client::dap, feature prio, does): nothing is recorded",
                json("metric"),
                json("trust")
            ),
        }
    }
}

impl std::error::Error for Refusal {}
