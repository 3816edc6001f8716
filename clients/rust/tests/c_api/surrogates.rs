//! Lone surrogates: a vector value may hold one (a Python string can, a Rust string cannot); these read the vectors
//! with each marked, and write such a value as a JSON escape or as WTF-8 bytes for the C program.

use super::*;

/// The marker of a lone surrogate `\udXXX` in a loaded vector file: `LONE-dxxx` between two U+FFFF, so that the
/// code unit survives (Rust strings cannot hold the surrogate itself; `common::LONE` keeps no code unit).
const LONE_MARK: char = '\u{FFFF}';

/// Replaces each lone surrogate escape of a JSON text by its marker (`common::mark_lone_surrogates`'s scan).
fn mark_lone(text: &str) -> String {
    let b = text.as_bytes();
    let unit = |i: usize| -> Option<u16> {
        if i + 6 <= b.len() && b[i] == b'\\' && b[i + 1] == b'u' {
            u16::from_str_radix(&text[i + 2..i + 6], 16).ok()
        } else {
            None
        }
    };
    let mut out = String::with_capacity(text.len());
    let (mut i, mut last) = (0, 0);
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(u)
                if (0xd800..0xdc00).contains(&u) && matches!(unit(i + 6), Some(v) if (0xdc00..0xe000).contains(&v)) =>
            {
                i += 12;
            }
            Some(u) if (0xd800..0xe000).contains(&u) => {
                out.push_str(&text[last..i]);
                out.push_str(&format!("{LONE_MARK}LONE-{u:04x}{LONE_MARK}"));
                i += 6;
                last = i;
            }
            _ => i += 2,
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Splits a text with lone surrogate markers into plain pieces and code units.
fn pieces(s: &str) -> Vec<Result<&str, u16>> {
    let mut out = Vec::new();
    let mut rest = s;
    let open = format!("{LONE_MARK}LONE-");
    while let Some(at) = rest.find(&open) {
        out.push(Ok(&rest[..at]));
        let after = &rest[at + open.len()..];
        out.push(Err(u16::from_str_radix(&after[..4], 16).unwrap()));
        rest = &after[4 + LONE_MARK.len_utf8()..];
    }
    out.push(Ok(rest));
    out
}

/// The JSON text of a value with each lone surrogate as its `\udXXX` escape (what Python's `json.dumps` writes).
pub(super) fn json_with_escapes(v: &Value) -> String {
    pieces(&serde_json::to_string(v).unwrap())
        .into_iter()
        .map(|p| match p {
            Ok(s) => s.to_string(),
            Err(u) => format!("\\u{u:04x}"),
        })
        .collect()
}

/// The bytes of a text with each lone surrogate as its WTF-8 (generalized UTF-8) encoding: not UTF-8.
pub(super) fn wtf8(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pieces(s) {
        match p {
            Ok(s) => out.extend_from_slice(s.as_bytes()),
            Err(u) => out.extend_from_slice(&[
                0xe0 | (u >> 12) as u8,
                0x80 | ((u >> 6) & 0x3f) as u8,
                0x80 | (u & 0x3f) as u8,
            ]),
        }
    }
    out
}

pub(super) fn has_lone(v: &Value) -> bool {
    serde_json::to_string(v).unwrap().contains(&format!("{LONE_MARK}LONE-"))
}

/// Python's refusals of NaN, inf and -inf for every metric of every vector file (tests/data/nonfinite_refusals.json).
pub(super) fn nonfinite_refusals() -> &'static Value {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let text = std::fs::read_to_string(manifest_dir().join("tests/data/nonfinite_refusals.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

pub(super) fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(vectors_dir().join(format!("{name}.json"))).expect("vector file");
    serde_json::from_str(&mark_lone(&text)).expect("vector JSON")
}

#[test]
fn lone_surrogate_markers_round_trip() {
    let v: Value = serde_json::from_str(&mark_lone(r#"["a\ud800b", "\ud83d\ude00", "\\ud800", "\udfff"]"#)).unwrap();
    assert!(has_lone(&v[0]) && !has_lone(&v[1]) && !has_lone(&v[2]) && has_lone(&v[3]));
    assert_eq!(json_with_escapes(&v[0]), r#""a\ud800b""#);
    assert_eq!(wtf8(v[0].as_str().unwrap()), b"a\xed\xa0\x80b");
    assert_eq!(wtf8(v[3].as_str().unwrap()), b"\xed\xbf\xbf");
    assert!(std::str::from_utf8(&wtf8(v[0].as_str().unwrap())).is_err());
}
