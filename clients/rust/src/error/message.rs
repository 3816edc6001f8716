//! A refusal's message: this client's own wording of its code and fields (the code and fields are the same in every
//! client; the message is not).

use std::fmt;

use serde_json::{Map, Value};

use super::{Refusal, RefusalCode};

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
        "vdaf08_bits" => "VDAF draft 08 bounds a sum by a number of bits b: max_measurement must be 2^b - 1",
        "vdaf08_no_ctx" => "VDAF draft 08 has no application context string: ctx must be empty",
        "width_finite" => "high - low must be finite",
        _ => return None,
    })
}

/// A refusal's fields as its message shows them.
struct Shown<'a>(&'a Map<String, Value>);

impl Shown<'_> {
    fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k)
    }

    /// A field as text: a string without its quotes, any other value as JSON.
    fn text(&self, k: &str) -> String {
        match self.get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        }
    }

    /// A list field, its entries joined by commas (strings without their quotes).
    fn list(&self, k: &str) -> String {
        match self.get(k) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        }
    }

    /// A field as JSON.
    fn json(&self, k: &str) -> String {
        self.get(k).map(Value::to_string).unwrap_or_default()
    }

    /// The refused parameter, with its entry's index if any (`weights[2]`).
    fn param(&self) -> String {
        match self.get("index") {
            Some(i) => format!("{}[{i}]", self.text("param")),
            None => self.text("param"),
        }
    }

    /// The range the value must be in (`> 0 and finite`).
    fn bounds(&self) -> String {
        let mut parts = Vec::new();
        let flag = |k: &str| self.get(k) == Some(&Value::Bool(true));
        if let Some(m) = self.get("min") {
            parts.push(format!("{} {m}", if flag("min_exclusive") { ">" } else { ">=" }));
        }
        if let Some(m) = self.get("max") {
            parts.push(format!("{} {m}", if flag("max_exclusive") { "<" } else { "<=" }));
        }
        if flag("finite") {
            parts.push("finite".to_string());
        }
        parts.join(" and ")
    }

    /// A broken rule between parameters (`param_relation`).
    fn relation(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = self.text("rule");
        write!(f, "parameters {} break the rule {rule}", self.list("params"))?;
        if let Some(i) = self.get("index") {
            write!(f, " at entry {i}")?;
        }
        if let Some(t) = rule_text(&rule) {
            write!(f, ": {t}")?;
        }
        // The value given and the nearest allowed ones, when the refusal names them (`vdaf08_bits`).
        if let (Some(got), Some(Value::Array(_))) = (self.get("got"), self.get("nearest")) {
            write!(f, " (got {got}; nearest allowed: {})", self.list("nearest"))?;
        }
        Ok(())
    }

    /// A size over its limit (`param_limit`).
    fn limit(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limit = self.text("limit");
        write!(
            f,
            "these parameters need {} {} (limit {limit}), at most {} allowed",
            self.json("got"),
            rule_text(&limit).unwrap_or("units"),
            self.json("max")
        )
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = Shown(&self.fields);
        if let Some(a) = s.get("attribute") {
            write!(f, "attribute {}: ", a.as_str().map(str::to_string).unwrap_or_else(|| a.to_string()))?;
        }
        let (param, got) = (s.param(), s.json("got"));
        match self.code {
            RefusalCode::MissingParams => write!(f, "missing parameters: {}", s.list("params")),
            RefusalCode::UnknownParams => write!(f, "unknown parameters: {}", s.list("params")),
            RefusalCode::ParamType => write!(f, "{param} must be {}, got {}", s.text("expected"), s.text("got")),
            RefusalCode::ParamRange => write!(f, "{param} is out of range: got {got}, must be {}", s.bounds()),
            RefusalCode::ParamChoice => write!(f, "{param} must be one of {}, got {got}", s.list("choices")),
            RefusalCode::ParamLength => {
                write!(f, "{} has {got} entries, must have {}", s.text("param"), s.bounds())
            }
            RefusalCode::ParamRelation => s.relation(f),
            RefusalCode::ParamLimit => s.limit(f),
            RefusalCode::ValueType => write!(f, "the value must be {}, got {}", s.text("expected"), s.text("got")),
            RefusalCode::ValueRange => match s.get("index") {
                // An entry of a list value (a Prio3SumVec measurement).
                Some(i) => write!(f, "entry {i} of the value, {got}, is out of range: must be {}", s.bounds()),
                None => write!(f, "the value {got} is out of range: must be {}", s.bounds()),
            },
            RefusalCode::UnknownLabel => write!(f, "the value {got} is not one of the declared labels"),
            RefusalCode::EmptyValue => f.write_str("the value is empty"),
            RefusalCode::ValueTooLong => {
                write!(f, "the value has {got} {}, over the maximum of {}", s.text("unit"), s.json("max"))
            }
            RefusalCode::NotInAlphabet => write!(f, "the value holds {}, not in the alphabet", s.json("char")),
            RefusalCode::NotEncodable => write!(f, "the value has no {} form", s.text("encoding")),
            RefusalCode::MissingAttributes => write!(f, "the record lacks attributes {}", s.list("attributes")),
            RefusalCode::UnknownAttributes => write!(f, "the record has unknown attributes {}", s.list("attributes")),
            RefusalCode::TrustModel => write!(
                f,
                "metric {} is collected in the two-aggregator mode (trust {}): its value is secret-shared between two \
                 aggregators, never sent randomized to one collector, and {}: nothing is recorded",
                s.json("metric"),
                s.json("trust"),
                if cfg!(feature = "prio") {
                    "no task was given for it (ClientBuilder::task, or ldp_client_add_task in C, with the task file \
                     `ldp collect task --leader-config ... --helper-config ...` wrote)"
                } else {
                    "this build of the client lacks the cargo feature `prio` that makes those reports (build it with \
                     --features prio)"
                }
            ),
        }
    }
}
