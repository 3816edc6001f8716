//! Python's text forms, byte for byte: `repr(float)`, `format(x, ".Ng")`, `repr(str)`, and the canonical JSON that
//! fingerprints hash (`ldp/wire.py` `canonical_json`). docs/conformance.md section 4 is the rule; `primitives.json`
//! (`floats`, `texts`) checks it.

use std::fmt::Write;

use serde_json::Value;
use sha2::{Digest, Sha256};
use unicode_general_category::{get_general_category, GeneralCategory};

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

/// Python's `format(x, f".{precision}g")`: `precision` significant digits rounded half to even on the exact binary
/// value, positional when the exponent is in [−4, precision), trailing zeros and point removed.
pub fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let p = precision.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // Rust's `{:.Ne}` rounds the exact value half to even, as Python's formatting does.
    let s = format!("{:.*e}", p - 1, x.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    fn strip(s: String) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
    if exp >= -4 && exp < p as i32 {
        let body = if exp < 0 {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        } else {
            let e = exp as usize + 1;
            format!("{}.{}", &digits[..e], &digits[e..])
        };
        return format!("{sign}{}", strip(body));
    }
    format!("{sign}{}e{}", strip(format!("{}.{}", &digits[..1], &digits[1..])), exp_text(exp))
}

/// Python's `f"{x:.1f}"` of a finite `x` (half to even on the exact value).
pub fn fixed1(x: f64) -> String {
    format!("{x:.1}")
}

/// Python's `f"{n:,}"` of an integer.
pub fn thousands(n: i128) -> String {
    let s = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Whether Python's `str.isprintable()` holds for `c`: a character outside the categories Cc, Cf, Cs, Co, Cn, Zl,
/// Zp, Zs, or the ASCII space. The categories come from the `unicode-general-category` tables, whose Unicode
/// version may differ from the Python server's: a character assigned in between is classified differently.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::Surrogate
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::SpaceSeparator
    )
}

/// Python's `repr(s)`: in `'`, or `"` when `s` has a `'` and no `"`; `\\`, `\t`, `\n`, `\r` escaped; other
/// non-printable characters as `\xNN`, `\uNNNN` or `\UNNNNNNNN`.
pub fn repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        let code = c as u32;
        match c {
            _ if c == quote || c == '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ if code < 0x20 || code == 0x7f => {
                let _ = write!(out, "\\x{code:02x}");
            }
            _ if code < 0x7f => out.push(c),
            _ if is_printable(c) => out.push(c),
            _ if code <= 0xff => {
                let _ = write!(out, "\\x{code:02x}");
            }
            _ if code <= 0xffff => {
                let _ = write!(out, "\\u{code:04x}");
            }
            _ => {
                let _ = write!(out, "\\U{code:08x}");
            }
        }
    }
    out.push(quote);
    out
}

/// Python's list repr of strings: `['a', 'b']`.
pub(crate) fn str_list<S: AsRef<str>>(names: &[S]) -> String {
    let parts: Vec<String> = names.iter().map(|n| repr(n.as_ref())).collect();
    format!("[{}]", parts.join(", "))
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
        assert_eq!(format_g(0.125, 2), "0.12");
        assert_eq!(format_g(1.0, 6), "1");
        assert_eq!(format_g(1e-5, 6), "1e-05");
        assert_eq!(format_g(1234567.0, 6), "1.23457e+06");
        assert_eq!(thousands(-1234567), "-1,234,567");
        assert_eq!(fixed1(0.25), "0.2");
    }

    #[test]
    fn reprs_as_python_writes_them() {
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("a\u{7f}b\u{e9}\u{200b}"), "'a\\x7fbé\\u200b'");
    }
}
