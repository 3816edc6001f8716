//! Values as the Python client sees them: a JSON value ([`serde_json::Value`]) stands for the Python value `json.loads`
//! makes of it, so that checks decide as Python's do (`int` and `float` stay apart: `1` is an int, `1.0` a float; ints
//! of any size keep their digits).

use serde_json::Number;
pub use serde_json::Value;

/// A JSON number classified as Python would read it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Num {
    /// An int that fits in an `i128`.
    Int(i128),
    /// An int too large for an `i128`, as its digits (with a leading `-` if negative).
    Big(String),
    /// A float.
    Float(f64),
}

/// How Python reads the number `n`: digits alone are an `int`, anything with a point or an exponent a `float`, and
/// so is a non-finite number ([`real_value`]: `NaN`, `inf`, `-inf`, which no JSON text holds).
pub(crate) fn num_of(n: &Number) -> Num {
    let text = n.to_string();
    if text.contains(|c: char| c == '.' || c.is_ascii_alphabetic()) {
        return Num::Float(text.parse::<f64>().unwrap_or(f64::NAN));
    }
    match text.parse::<i128>() {
        Ok(i) => Num::Int(i),
        Err(_) => Num::Big(text),
    }
}

/// Whether `v` is a Python `int` (not a bool).
pub(crate) fn is_int(v: &Value) -> bool {
    matches!(v, Value::Number(n) if !matches!(num_of(n), Num::Float(_)))
}

/// Whether `v` is a Python real (`int` or `float`, not a bool).
pub(crate) fn is_real(v: &Value) -> bool {
    matches!(v, Value::Number(_))
}

/// The int `v`, if it is one that fits in an `i128` (`None` for other values and for larger ints).
pub(crate) fn int_of(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => match num_of(n) {
            Num::Int(i) => Some(i),
            _ => None,
        },
        _ => None,
    }
}

/// A real as a double (Python's `float(x)`); NaN for non-numbers.
pub(crate) fn f64_of(v: &Value) -> f64 {
    match v {
        Value::Number(n) => match num_of(n) {
            Num::Int(i) => i as f64,
            Num::Big(s) => s.parse::<f64>().unwrap_or(f64::NAN),
            Num::Float(x) => x,
        },
        _ => f64::NAN,
    }
}

/// The Python float `x` as a value, NaN and ±inf included (the C interface's `ldp_client_record_double`), so that
/// a non-finite number reaches the protocols' checks and is refused there as Python refuses it: a `float` for a
/// type check (`value_type`, `"got": "float"`), not finite for a range check (`value_range` with `finite`). A
/// non-finite one is a number whose text is Rust's (`NaN`, `inf`, `-inf`): no JSON text holds it, and
/// [`crate::error::Refusal::fields_json`] writes it as `null`.
#[cfg(feature = "c-api")]
pub(crate) fn real_value(x: f64) -> Value {
    if x.is_finite() {
        float_value(x)
    } else {
        Value::Number(Number::from_string_unchecked(x.to_string()))
    }
}

/// A float value (written `1.0`, not `1`, in canonical JSON).
pub(crate) fn float_value(x: f64) -> Value {
    Number::from_f64(x).map(Value::Number).unwrap_or(Value::Null)
}
