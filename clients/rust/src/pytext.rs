//! Python's text forms that fingerprints and wire lines need byte for byte: `repr(float)` and the canonical JSON that
//! fingerprints hash (`ldp/wire.py` `canonical_json`). docs/conformance.md section 4 is the rule; `primitives.json`
//! (`floats`, `texts.canonical_json`) checks it. Error messages are this client's own: nothing here words them.

use std::fmt::Write;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::value::{num_of, Num};

/// The shortest round-trip digits of a finite `x > 0` and the decimal exponent of the first digit
/// (`x ≈ d.ddd × 10^exp`). Rust's `{:e}` gives the shortest digits that read back, the closest to `x` among them:
/// David Gay's mode 0, which Python's `repr` uses.
fn shortest_digits(x: f64) -> (String, i32) {
    let s = format!("{x:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    (digits, exp.parse().unwrap_or(0))
}

fn exp_text(exp: i32) -> String {
    format!("{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// `repr(float(x))`: `nan`, `inf`, `-inf`, else the shortest round-trip digits laid out by Python's rule:
/// scientific when the decimal exponent is below −4 or at least 16 (`1e-05`, `1e+16`), else positional with at least
/// one digit after the point (`1.0`, `0.0001`); `-0.0` keeps its sign.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let (digits, exp) = shortest_digits(x.abs());
    if !(-4..16).contains(&exp) {
        let mantissa = if digits.len() > 1 { format!("{}.{}", &digits[..1], &digits[1..]) } else { digits };
        return format!("{sign}{mantissa}e{}", exp_text(exp));
    }
    let point = exp + 1;
    let n = digits.len() as i32;
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point >= n {
        format!("{sign}{digits}{}.0", "0".repeat((point - n) as usize))
    } else {
        let p = point as usize;
        format!("{sign}{}.{}", &digits[..p], &digits[p..])
    }
}

/// A JSON string as Python's `json.dumps(..., ensure_ascii=True)` writes it.
pub(crate) fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Writes `value` as Python's `json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)`,
/// keys sorted by code point when `sort_keys`; ints as digits, floats by Python's repr.
pub(crate) fn write_json(out: &mut String, value: &Value, sort_keys: bool) -> Result<()> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::String(s) => json_string(out, s),
        Value::Number(n) => match num_of(n) {
            Num::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Num::Big(s) => out.push_str(&s),
            Num::Float(x) => {
                if !x.is_finite() {
                    return Err(Error::value("Out of range float values are not JSON compliant"));
                }
                out.push_str(&float_repr(x));
            }
        },
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, v, sort_keys)?;
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            let mut keys: Vec<&String> = m.keys().collect();
            if sort_keys {
                // UTF-8 byte order is code point order.
                keys.sort();
            }
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(out, k);
                out.push(':');
                write_json(out, &m[k.as_str()], sort_keys)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// Python's `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)`.
pub fn canonical_json(value: &Value) -> Result<String> {
    let mut out = String::new();
    write_json(&mut out, value, true)?;
    Ok(out)
}

/// Compact JSON, keys in their order (the ledger's state file, upload bodies).
pub(crate) fn compact_json(value: &Value) -> Result<String> {
    let mut out = String::new();
    write_json(&mut out, value, false)?;
    Ok(out)
}

/// The first 16 hex digits of SHA-256 of `text` as UTF-8.
pub(crate) fn sha256_hex16(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    crate::bytes::hex(&digest[..8])
}

/// `fingerprint(protocol, params)`: 16 hex digits naming a protocol and its parameters.
pub(crate) fn fingerprint(protocol: &str, params: &Value) -> Result<String> {
    let mut m = serde_json::Map::new();
    m.insert("protocol".into(), Value::String(protocol.into()));
    m.insert("params".into(), params.clone());
    Ok(sha256_hex16(&canonical_json(&Value::Object(m))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_python_writes_them() {
        for (x, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (123456789012345.6, "123456789012345.6"),
            (5e-324, "5e-324"),
            (0.0001, "0.0001"),
            (1.5e300, "1.5e+300"),
        ] {
            assert_eq!(float_repr(x), want);
        }
    }
}
