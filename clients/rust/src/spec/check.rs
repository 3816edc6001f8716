//! The spec's checker: it walks the document, collecting every problem with its path (as `ldp/spec/schema.py`
//! words them), and the checks of one value each part of the spec makes (an object's keys, an integer's range, a
//! privacy cost). What the collection and each metric hold is checked in `collection` and `metric`.

use serde_json::{Map, Value};

use super::join;
use crate::cost::PrivacyCost;
use crate::pytext;
use crate::value::{f64_of, int_of, is_int, is_real};

mod collection;
mod metric;

#[derive(Default)]
pub(super) struct Checker {
    pub(super) errors: Vec<String>,
}

/// How the validator names a JSON value's type (`_kind`).
pub(super) fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Array(_) => "a list".into(),
        Value::String(_) => "a string".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Object(_) => "an object".into(),
        Value::Number(_) => format!("{} {}", crate::error::kind_of(v), num_text(v)),
    }
}

/// A value as the validator's messages show it: its JSON text (a number as given, a string in quotes).
pub(super) fn num_text(v: &Value) -> String {
    v.to_string()
}

pub(super) fn compact(v: &Value) -> String {
    pytext::compact_json(v).unwrap_or_default()
}

impl Checker {
    pub(super) fn fail(&mut self, path: &str, msg: impl AsRef<str>) {
        self.errors.push(format!("{path}: {}", msg.as_ref()));
    }

    pub(super) fn obj<'a>(
        &mut self,
        value: &'a Value,
        path: &str,
        required: &[&str],
        optional: &[&str],
    ) -> Option<&'a Map<String, Value>> {
        let Value::Object(m) = value else {
            self.fail(path, format!("must be an object, got {}", kind(value)));
            return None;
        };
        let mut allowed: Vec<&str> = required.iter().chain(optional).copied().collect();
        allowed.sort_unstable();
        let mut unknown: Vec<&String> = m.keys().filter(|k| !allowed.contains(&k.as_str())).collect();
        unknown.sort();
        for key in unknown {
            self.fail(&join(path, key), format!("unknown key (expected one of {})", allowed.join(", ")));
        }
        let mut missing: Vec<&str> = required.iter().filter(|k| !m.contains_key(**k)).copied().collect();
        missing.sort_unstable();
        for key in missing {
            self.fail(&join(path, key), "required");
        }
        Some(m)
    }

    pub(super) fn int(&mut self, value: &Value, path: &str, low: i64, high: i64, why: &str) -> Option<i64> {
        if !is_int(value) {
            self.fail(path, format!("must be an integer, got {}", kind(value)));
            return None;
        }
        match int_of(value) {
            Some(i) if i < low as i128 => self.fail(path, format!("must be >= {low}, got {}", num_text(value))),
            Some(i) if i <= high as i128 => return Some(i as i64),
            Some(_) => self.fail(path, format!("must be <= {} ({why}), got {}", high, num_text(value))),
            None => {
                if num_text(value).starts_with('-') {
                    self.fail(path, format!("must be >= {low}, got {}", num_text(value)))
                } else {
                    self.fail(path, format!("must be <= {} ({why}), got {}", high, num_text(value)))
                }
            }
        }
        None
    }

    pub(super) fn cost(&mut self, value: &Value, path: &str) -> Option<PrivacyCost> {
        let zero = Value::from(0);
        let (parts, wanted): (Vec<(Value, String)>, &str) = if value.is_object() {
            let m = self.obj(value, path, &["epsilon"], &["delta"])?;
            let eps = m.get("epsilon")?.clone();
            let delta = m.get("delta").cloned().unwrap_or(zero);
            (vec![(eps, join(path, "epsilon")), (delta, join(path, "delta"))], "a finite number")
        } else {
            (
                vec![(value.clone(), path.to_string()), (zero, path.to_string())],
                "a finite number (ε) or {\"epsilon\": ε, \"delta\": δ}",
            )
        };
        for (v, p) in &parts {
            if !is_real(v) || !f64_of(v).is_finite() {
                self.fail(p, format!("must be {wanted}, got {}", kind(v)));
                return None;
            }
        }
        let eps = f64_of(&parts[0].0);
        let delta = f64_of(&parts[1].0);
        if !(eps > 0.0) {
            self.fail(&parts[0].1, format!("must be > 0, got {}", num_text(&parts[0].0)));
        } else if !(0.0..1.0).contains(&delta) {
            self.fail(&parts[1].1, format!("must be in [0, 1), got {}", num_text(&parts[1].0)));
        } else {
            return Some(PrivacyCost::new(eps, delta));
        }
        None
    }

    pub(super) fn le(&mut self, small: Option<PrivacyCost>, big: Option<PrivacyCost>, path: &str, what: &str) {
        if let (Some(s), Some(b)) = (small, big) {
            if !s.fits_within(&b) {
                self.fail(path, format!("{s} exceeds {what} ({b})"));
            }
        }
    }

    /// A `description` at `path`: a string (absent: empty).
    pub(super) fn description(&mut self, value: Option<&Value>, path: &str) -> String {
        match value {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                self.fail(path, format!("must be a string, got {}", kind(other)));
                String::new()
            }
        }
    }
}
