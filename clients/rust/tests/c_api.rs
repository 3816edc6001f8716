//! The C interface as a C program sees it: `tests/c/vectors.c`, compiled with the system C compiler (`$CC`, else
//! `cc`) against `include/ldp_client.h` and linked with the static library `cargo test` built (`libldp_client.a`),
//! replays every conformance vector of a registered protocol through `ldp_spec_parse`, `ldp_random_replay`,
//! `ldp_encoder_new`, `ldp_encoder_prepare`, `ldp_prepared_charge` and `ldp_encoder_randomize`, refuses every
//! refusal value with the vectors' status, type, code and fields (`ldp_last_error_code`, `ldp_last_error_fields`),
//! and checks the contract at the boundary (null pointers, bad UTF-8, oversized inputs) and the client API end to end
//! (`--selftest`).
//!
//! The C program parses no JSON: this test writes each vector file as a line-based case file (`tests/c/vectors.c`
//! describes the records), and compares every printed line with the vector's byte for byte (costs to 4 ulps).

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{cc, close_ulps, f, protocols, same_json, vectors_dir};
use ldp_client::{protocols as registry, CollectionSpec, Value};

/// `LdpStatus` values (include/ldp_client.h).
const LDP_VALUE_ERROR: i32 = 1;
const LDP_TYPE_ERROR: i32 = 2;
const LDP_INVALID_ARGUMENT: i32 = 6;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A folder of this test process under cargo's scratch folder for integration tests (older ones are removed).
fn work_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| cc::scratch_dir("ldp-c-api"))
}

/// `tests/c/vectors.c` compiled with `flags` into `work_dir()/name`: the command and its output.
fn compile_vectors(name: &str, flags: &[&str]) -> (Command, std::process::Output, PathBuf) {
    let exe = work_dir().join(name);
    let (cmd, out) = cc::compile_c("tests/c/vectors.c", &exe, flags);
    (cmd, out, exe)
}

/// `tests/c/vectors.c`, compiled and linked once per test process.
fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let (cmd, out, exe) = compile_vectors("vectors", &[]);
        assert!(
            out.status.success(),
            "compiling tests/c/vectors.c failed ({cmd:?}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        exe
    })
}

/// Runs the C program; its stdout.
fn run(args: &[&Path]) -> String {
    let out = Command::new(program()).args(args).output().expect("the C program runs");
    let stdout = String::from_utf8(out.stdout).expect("the C program prints UTF-8");
    assert!(
        out.status.success(),
        "the C program failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Undoes the C program's escapes of a message.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------------------
// Lone surrogates

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
fn json_with_escapes(v: &Value) -> String {
    pieces(&serde_json::to_string(v).unwrap())
        .into_iter()
        .map(|p| match p {
            Ok(s) => s.to_string(),
            Err(u) => format!("\\u{u:04x}"),
        })
        .collect()
}

/// The bytes of a text with each lone surrogate as its WTF-8 (generalized UTF-8) encoding: not UTF-8.
fn wtf8(s: &str) -> Vec<u8> {
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

fn has_lone(v: &Value) -> bool {
    serde_json::to_string(v).unwrap().contains(&format!("{LONE_MARK}LONE-"))
}

/// Python's refusals of NaN, inf and -inf for every metric of every vector file (tests/data/nonfinite_refusals.json).
fn nonfinite_refusals() -> &'static Value {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let text = std::fs::read_to_string(manifest_dir().join("tests/data/nonfinite_refusals.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(vectors_dir().join(format!("{name}.json"))).expect("vector file");
    serde_json::from_str(&mark_lone(&text)).expect("vector JSON")
}

// ---------------------------------------------------------------------------------------------------------------
// Case files and what the C program must print

/// One line the C program must print.
enum Want {
    Exact(String),
    Charge(Value),
    /// A refusal checked by status, type, code and fields (the message is this client's own: not empty).
    Refused {
        status: i32,
        ty: String,
        code: String,
        fields: Value,
    },
    /// A refusal checked by status, type and the message's beginning (lone surrogates).
    RefusedLike {
        status: i32,
        ty: &'static str,
        prefix: &'static str,
    },
}

struct Expected {
    what: String,
    want: Want,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes the case file of one vector file; what the C program must print for it.
fn case_file(name: &str, doc: &Value, path: &Path) -> Vec<Expected> {
    let mut records: Vec<String> = Vec::new();
    let mut want = Vec::new();
    let mut expect = |what: String, w: Want| want.push(Expected { what: format!("{name}: {what}"), want: w });

    records.push(format!("spec\t{}", serde_json::to_string(&doc["spec"]).unwrap()));
    expect("spec".into(), Want::Exact(format!("fingerprint\t{}", doc["spec_fingerprint"].as_str().unwrap())));

    for (i, c) in doc["cases"].as_array().unwrap().iter().enumerate() {
        // A case whose value holds a lone surrogate cannot reach a Rust string (tests/vectors.rs says why); its
        // value's refusal at the boundary is checked with the refusals below.
        if c["reports"].as_array().unwrap().iter().any(|r| has_lone(&r["value"])) {
            continue;
        }
        let draws: Vec<String> = c["draws"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| format!("{}:{}", d[0].as_u64().unwrap(), d[1].as_str().unwrap()))
            .collect();
        records.push(format!(
            "case\t{}\t{}\t{}\t{}\t{}",
            c["metric"].as_str().unwrap(),
            c["window"].as_u64().unwrap(),
            c.get("metric_secret").and_then(Value::as_str).unwrap_or("-"),
            c.get("cohort").and_then(Value::as_u64).map_or(-1, |x| x as i64),
            draws.join(",")
        ));
        expect(format!("case {i}"), Want::Exact("case\tok".into()));
        // The ledger's epoch of a charge-on-change protocol, as tests/vectors.rs computes it: it starts at 0 and
        // moves on each time the change value differs from the last one.
        let mut epoch: i64 = -1;
        let mut last: Option<String> = None;
        for (j, r) in c["reports"].as_array().unwrap().iter().enumerate() {
            let charge = &r["charge"];
            let report_epoch = match charge.get("change_value").and_then(Value::as_str) {
                Some(v) => {
                    if last.as_deref() != Some(v) {
                        epoch += 1;
                    }
                    last = Some(v.to_string());
                    epoch
                }
                None => -1,
            };
            records.push(format!("report\t{}\t{report_epoch}", serde_json::to_string(&r["value"]).unwrap()));
            let what = format!("case {i} report {j} (value {})", r["value"]);
            expect(format!("{what}: charge"), Want::Charge(charge.clone()));
            expect(format!("{what}: line"), Want::Exact(format!("line\t{}", r["line"].as_str().unwrap())));
        }
    }

    let spec = CollectionSpec::from_value(&doc["spec"], "spec").unwrap();
    let refusals = doc.get("refusals").and_then(|r| r.get("values")).and_then(Value::as_array);
    for (i, item) in refusals.into_iter().flatten().enumerate() {
        let metric = item["metric"].as_str().unwrap();
        let m = spec.metric(metric).unwrap();
        let protocol = m.protocol();
        let secret = if protocol.needs_secret { "73" } else { "-" };
        let cohort = if protocol.assigned_cohorts(m.params.as_ref()) > 0 { 0 } else { -1 };
        let value = &item["value"];
        let what = format!("refusal {i} (value {})", json_with_escapes(value));
        if !has_lone(value) {
            records.push(format!("refuse\t{metric}\t{secret}\t{cohort}\t{}", serde_json::to_string(value).unwrap()));
            let error = &item["error"];
            let ty = error["type"].as_str().unwrap().to_string();
            let status = match ty.as_str() {
                "ValueError" => LDP_VALUE_ERROR,
                "TypeError" => LDP_TYPE_ERROR,
                other => panic!("{name} {what}: a refusal of type {other}"),
            };
            let code = error["code"].as_str().unwrap().to_string();
            expect(what, Want::Refused { status, ty, code, fields: error["fields"].clone() });
            continue;
        }
        // The one documented divergence from Python: a value holding a lone surrogate. Python refuses it with its
        // own text (a TypeError or ValueError of the protocol, or "value is not encodable as UTF-8"); through C it
        // cannot even arrive as a string: as a JSON escape serde_json refuses the lone surrogate, and as bytes
        // (WTF-8) it is not UTF-8. Either way the call is an LDP_INVALID_ARGUMENT, never a report.
        records.push(format!("refuse\t{metric}\t{secret}\t{cohort}\t{}", json_with_escapes(value)));
        expect(
            format!("{what} as a JSON escape"),
            Want::RefusedLike {
                status: LDP_INVALID_ARGUMENT,
                ty: "ValueError",
                prefix: "the value is not one JSON document: ",
            },
        );
        records.push(format!(
            "refusehex\t{metric}\t{secret}\t{cohort}\t{}",
            hex(&wtf8(&serde_json::to_string(value).unwrap()))
        ));
        expect(
            format!("{what} as WTF-8 in JSON"),
            Want::RefusedLike {
                status: LDP_INVALID_ARGUMENT,
                ty: "ValueError",
                prefix: "the value is not valid UTF-8",
            },
        );
        if let Value::String(s) = value {
            records.push(format!("recordhex\t{metric}\t{}", hex(&wtf8(s))));
            expect(
                format!("{what} as WTF-8 bytes to ldp_client_record_string"),
                Want::RefusedLike {
                    status: LDP_INVALID_ARGUMENT,
                    ty: "ValueError",
                    prefix: "the value is not valid UTF-8",
                },
            );
        }
    }

    // NaN and ±inf, which no vector file holds (strict JSON): Python's refusals of them for every metric
    // (tests/data/nonfinite_refusals.py writes them), replayed through ldp_client_record_double.
    let nonfinite = &nonfinite_refusals()[name];
    assert_eq!(
        nonfinite["spec_fingerprint"], doc["spec_fingerprint"],
        "{name}: rerun tests/data/nonfinite_refusals.py"
    );
    let items = nonfinite["refusals"].as_array().unwrap();
    assert_eq!(items.len(), 3 * doc["spec"]["metrics"].as_object().unwrap().len(), "{name}: NaN, inf, -inf per metric");
    for item in items {
        let (metric, value, error) =
            (item["metric"].as_str().unwrap(), item["value"].as_str().unwrap(), &item["error"]);
        records.push(format!("recorddouble\t{metric}\t{value}"));
        let ty = error["type"].as_str().unwrap().to_string();
        let status = if ty == "TypeError" { LDP_TYPE_ERROR } else { LDP_VALUE_ERROR };
        let code = error["code"].as_str().unwrap().to_string();
        expect(
            format!("{metric}: ldp_client_record_double({value})"),
            Want::Refused { status, ty, code, fields: error["fields"].clone() },
        );
    }

    let mut text = records.join("\n");
    text.push('\n');
    assert!(!text.contains('\r'), "{name}: a record holds a carriage return");
    std::fs::write(path, text).unwrap();
    want
}

/// What is wrong with the C program's line `got` for `want`, if anything.
fn mismatch(want: &Want, got: &str) -> Option<String> {
    match want {
        Want::Exact(w) => (w != got).then(|| format!("want {w:?}")),
        Want::Charge(c) => {
            let fields: Vec<&str> = got.split('\t').collect();
            if fields.len() != 10 || fields[0] != "charge" {
                return Some(format!("want a charge like {c}"));
            }
            let num = |i: usize| fields[i].parse::<f64>().unwrap_or(f64::NAN);
            let cost = |e: usize, d: usize, v: &Value| {
                close_ulps(num(e), f(&v["epsilon"]), 4.0) && close_ulps(num(d), f(&v["delta"]), 4.0)
            };
            let ok = if let Some(key) = c.get("memo_key") {
                fields[1] == "1"
                    && cost(2, 3, &c["then"])
                    && cost(4, 5, &c["first"])
                    && cost(6, 7, &c["cap"])
                    && fields[8] == key.as_str().unwrap()
                    && fields[9] == "-"
            } else if let Some(stream) = c.get("change_stream") {
                fields[1] == "2"
                    && cost(2, 3, &c["cost"])
                    && fields[8] == stream.as_str().unwrap()
                    && fields[9] == c["change_value"].as_str().unwrap()
            } else {
                fields[1] == "0" && cost(2, 3, c) && fields[8] == "-" && fields[9] == "-"
            };
            (!ok).then(|| format!("want the charge {c}"))
        }
        Want::Refused { status, ty, code, fields } => {
            let got: Vec<&str> = got.splitn(6, '\t').collect();
            let have: Option<Value> = got.get(4).and_then(|t| serde_json::from_str(&unescape(t)).ok());
            let same = got.len() == 6
                && got[0] == "refused"
                && got[1] == status.to_string()
                && got[2] == ty
                && got[3] == code
                && have.is_some_and(|h| same_json(fields, &h))
                && !got[5].is_empty();
            (!same).then(|| format!("want \"refused\\t{status}\\t{ty}\\t{code}\\t{fields}\\t…\""))
        }
        Want::RefusedLike { status, ty, prefix } => {
            let fields: Vec<&str> = got.splitn(6, '\t').collect();
            let same = fields.len() == 6
                && fields[0] == "refused"
                && fields[1] == status.to_string()
                && fields[2] == *ty
                && fields[3].is_empty()
                && fields[4].is_empty()
                && unescape(fields[5]).starts_with(prefix);
            (!same).then(|| format!("want \"refused\\t{status}\\t{ty}\\t\\t\\t{prefix}…\""))
        }
    }
}

#[test]
fn c_program_replays_the_conformance_vectors() {
    let dir = work_dir();
    let mut files = Vec::new();
    let mut want = Vec::new();
    for name in protocols() {
        if registry::get(&name).is_none() {
            continue;
        }
        let path = dir.join(format!("{name}.cases"));
        want.extend(case_file(&name, &load(&name), &path));
        files.push(path);
    }
    assert_eq!(files.len(), registry::names().len(), "a case file per registered protocol");
    let args: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let stdout = run(&args);
    let got: Vec<&str> = stdout.lines().collect();

    let mut wrong = Vec::new();
    for (i, w) in want.iter().enumerate() {
        let line = got.get(i).copied().unwrap_or("(no line)");
        if let Some(why) = mismatch(&w.want, line) {
            wrong.push(format!("{}:\n    got  {line:?}\n    {why}", w.what));
        }
    }
    assert!(
        wrong.is_empty() && got.len() == want.len(),
        "{} of {} lines of the C program differ from the vectors ({} printed), the first ones:\n{}",
        wrong.len(),
        want.len(),
        got.len(),
        wrong.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
    let reports = want.iter().filter(|w| matches!(w.want, Want::Charge(_))).count();
    let refusals = want.iter().filter(|w| matches!(w.want, Want::Refused { .. } | Want::RefusedLike { .. })).count();
    assert!(reports > 0 && refusals > 0, "{reports} reports and {refusals} refusals replayed");
    eprintln!("C replayed {reports} reports and {refusals} refusals of {} protocols", files.len());
}

#[test]
fn c_program_selftest() {
    let state = work_dir().join("state");
    let stdout = run(&[Path::new("--selftest"), &state]);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        last.starts_with("selftest: ") && last.ends_with(", 0 failed") && !stdout.contains("FAIL"),
        "the C self-test failed:\n{stdout}"
    );
}

/// The self-test again, built with AddressSanitizer and UndefinedBehaviorSanitizer (leaks included): handles of the
/// wrong kind, freed null handles and every other boundary check touch no memory they must not. Skipped with a note
/// where the compiler has no sanitizer runtime, unless `LDP_REQUIRE_ASAN` is set (CI sets it).
#[test]
fn c_program_selftest_under_address_sanitizer() {
    let (cmd, out, exe) =
        compile_vectors("vectors-asan", &["-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"]);
    if !out.status.success() {
        let why = format!("{cmd:?}:\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(
            std::env::var_os("LDP_REQUIRE_ASAN").is_none(),
            "no sanitizer build, and LDP_REQUIRE_ASAN is set: {why}"
        );
        eprintln!("skipped: the C compiler cannot build with -fsanitize=address ({why})");
        return;
    }
    let state = work_dir().join("state-asan");
    let run = Command::new(&exe)
        .args([Path::new("--selftest"), &state])
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=23")
        .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && stdout.lines().last().is_some_and(|l| l.ends_with(", 0 failed")),
        "the self-test under the sanitizers failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    assert!(!stderr.contains("ERROR: AddressSanitizer") && !stderr.contains("runtime error"), "{stderr}");
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

/// The header compiles as C++ (its `extern "C"` guards), with and without the uploader's and Prio3's functions, and
/// `module.modulemap` makes it the Clang module `LdpClient` (what Swift imports). Each check runs where its compiler
/// is installed (`$CXX` or `c++`; `clang`) and is skipped with a note otherwise.
#[test]
fn header_compiles_as_cpp_and_as_a_clang_module() {
    let root = manifest_dir();
    let dir = work_dir().join("header");
    std::fs::create_dir_all(&dir).unwrap();
    let cxx = cc::cxx_compiler();
    if cc::runs(&cxx) {
        let src = dir.join("header.cpp");
        std::fs::write(
            &src,
            "#include \"ldp_client.h\"\n\
             int main() { LdpStatus s = LDP_OK; LdpReplyAction a = LDP_REPLY_DONE; \
             return static_cast<int>(s) + static_cast<int>(a) + (ldp_version() == nullptr); }\n",
        )
        .unwrap();
        for defines in [&[][..], &["-DLDP_CLIENT_UPLOADER"], &["-DLDP_CLIENT_UPLOADER", "-DLDP_CLIENT_PRIO"]] {
            let mut cmd = Command::new(&cxx);
            cmd.args(["-std=c++11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I"])
                .arg(root.join("include"))
                .args(defines)
                .arg(&src);
            cc::run(&mut cmd, "compiling the header as C++");
        }
    } else {
        eprintln!("skipped: no C++ compiler ({cxx})");
    }
    if cc::runs("clang") {
        let src = dir.join("module.m");
        std::fs::write(
            &src,
            "@import LdpClient;\nint main(void) { LdpStatus s = LDP_OK; return (int)s + (ldp_version() == 0); }\n",
        )
        .unwrap();
        let mut cmd = Command::new("clang");
        cmd.args(["-x", "objective-c", "-fmodules", "-fsyntax-only", "-Werror"])
            .arg(format!("-fmodules-cache-path={}", dir.join("modules").display()))
            .arg(format!("-fmodule-map-file={}", root.join("module.modulemap").display()))
            .arg(&src);
        cc::run(&mut cmd, "importing the Clang module LdpClient");
    } else {
        eprintln!("skipped: no clang to check module.modulemap");
    }
}
