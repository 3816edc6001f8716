//! Prio3 sharding through the C interface (feature `prio`): `tests/c/prio3.c`, compiled with the system C compiler
//! against `include/ldp_client.h` (with `-DLDP_CLIENT_PRIO`) and the static library this `cargo test` built, shards
//! every report of the VDAF draft 18 vectors of two aggregators (at least one per type: the C interface is the
//! two-aggregator mode's) with `ldp_prio3_shard_with_random` and prints the nonce, the public share and both input
//! shares, compared here with the vector's byte for byte; refusals of bad parameters and measurements with their
//! status, type, code and fields; and a self-test of the boundary (null pointers, handles of the wrong kind, bad
//! lengths, sharding from the OS generator), also under AddressSanitizer. The negative vectors fail only at the
//! aggregators, which the C interface does not have: tests/prio3_vectors.rs replays them.

#![cfg(all(unix, feature = "prio"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::cc::{self, CProgram};
use common::prio3::{hex, measurement_u64s, vectors, TYPES};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type};
use ldp_client::Value;

/// `tests/c/prio3.c` and its flags, built into a folder of this test process under cargo's scratch folder.
fn c_program() -> &'static CProgram {
    static PROGRAM: OnceLock<CProgram> = OnceLock::new();
    PROGRAM.get_or_init(|| CProgram {
        source: "tests/c/prio3.c",
        flags: &["-DLDP_CLIENT_PRIO"],
        dir: cc::scratch_dir("ldp-c-prio3"),
    })
}

fn work_dir() -> &'static Path {
    &c_program().dir
}

fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| c_program().build("prio3"))
}

/// Runs `exe` with `arg` (and `env`): its stdout; panics with all it printed if it failed.
fn run(exe: &Path, arg: &Path, env: &[(&str, &str)]) -> String {
    cc::run_program(exe, &[arg], env)
}

/// The `client` record of a type: the C function's name and its integer parameters.
fn client_record(typ: Prio3Type, ctx: &[u8]) -> String {
    let (name, a, b, c) = match typ {
        Prio3Type::Count => ("count", 0, 0, 0),
        Prio3Type::Sum { max_measurement } => ("sum", max_measurement, 0, 0),
        Prio3Type::SumVec { max_measurement, length, chunk_length } => {
            ("sumvec", u64::try_from(max_measurement).unwrap(), length as u64, chunk_length as u64)
        }
        Prio3Type::Histogram { length, chunk_length } => ("histogram", length as u64, chunk_length as u64, 0),
        other => panic!("{other:?}: no C constructor"),
    };
    format!("client\t{name}\t{a}\t{b}\t{c}\t{}", if ctx.is_empty() { "-".into() } else { hex(ctx) })
}

fn list(values: &[u64]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    values.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// What a line of the C program must be.
enum Want {
    Exact(String),
    /// `refused`, with its status, type, code and fields (JSON; the message is the client's own: not empty).
    Refused(i32, &'static str, &'static str, &'static str),
}

#[test]
fn c_program_shards_the_vectors_byte_for_byte() {
    let mut script = Script::default();
    let per_type = vector_records(&mut script);
    for t in TYPES {
        assert!(per_type.get(t).is_some_and(|n| *n > 0), "no two-aggregator vector of {t}");
    }
    let replayed = script.want.len();
    // Refusals through C: parameters, then measurements of the last client (a Prio3Histogram of 4 buckets).
    parameter_records(&mut script);
    measurement_records(&mut script);

    let cases = work_dir().join("vectors.cases");
    std::fs::write(&cases, script.records.join("\n") + "\n").unwrap();
    let stdout = run(program(), &cases, &[]);
    let got: Vec<&str> = stdout.lines().collect();
    let want = &script.want;
    let mut wrong = Vec::new();
    for (i, (what, w)) in want.iter().enumerate() {
        let line = got.get(i).copied().unwrap_or("(no line)");
        if let Some(w) = mismatch(w, line) {
            wrong.push(format!("{what}:\n    got  {line:?}\n    want {w:?}"));
        }
    }
    assert!(
        wrong.is_empty() && got.len() == want.len(),
        "{} of {} lines differ ({} printed):\n{}",
        wrong.len(),
        want.len(),
        got.len(),
        wrong.iter().take(8).cloned().collect::<Vec<_>>().join("\n")
    );
    eprintln!(
        "C sharded {per_type:?} reports of the vectors ({replayed} lines) and checked {} refusals",
        want.len() - replayed
    );
}

/// The records of the C program, each with what it must print.
#[derive(Default)]
struct Script {
    records: Vec<String>,
    want: Vec<(String, Want)>,
}

impl Script {
    fn push(&mut self, record: String, what: &str, w: Want) {
        self.records.push(record);
        self.want.push((what.to_string(), w));
    }
}

/// Every report of the two-aggregator vectors: a client of its type, then each report sharded with its nonce and
/// randomness; the reports of each type.
fn vector_records(script: &mut Script) -> std::collections::HashMap<&'static str, usize> {
    let mut per_type = std::collections::HashMap::new();
    for v in vectors().iter().filter(|v| !v.is_bad() && v.aggregators() == 2) {
        let client = Prio3Client::new(v.prio3_type(), &v.ctx()).unwrap();
        let ok = Want::Exact(format!("client\tok\t{}", client.rand_len()));
        script.push(client_record(v.prio3_type(), &v.ctx()), &format!("{}: client", v.name), ok);
        for (i, r) in v.reports().iter().enumerate() {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            let record =
                format!("shard\t{}\t{}\t{}", list(&measurement_u64s(&r["measurement"])), s("nonce"), s("rand"));
            let shares: Vec<&str> = r["input_shares"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
            let line = format!("shares\t{}\t{}\t{}\t{}", s("nonce"), s("public_share"), shares[0], shares[1]);
            script.push(record, &format!("{} report {i}", v.name), Want::Exact(line));
            *per_type.entry(v.kind).or_insert(0) += 1;
        }
    }
    per_type
}

/// The shard record of `m` with fixed randomness, and the shares the Rust API makes of it (`{m}` in the record
/// stands for the measurement).
fn fixed(typ: Prio3Type, m: Measurement) -> (String, String) {
    let client = Prio3Client::new(typ, b"").unwrap();
    let rand = vec![7u8; client.rand_len()];
    let s = client.shard_with_random(&m, &[9; 16], &rand).unwrap();
    let line = format!(
        "shares\t{}\t{}\t{}\t{}",
        hex(&s.nonce),
        hex(&s.public_share),
        hex(s.leader_share()),
        hex(s.helper_share())
    );
    (format!("shard\t{}\t{}\t{}", "{m}", hex(&s.nonce), hex(&rand)), line)
}

/// Clients of bad parameters refused, and of the recommended chunk length (0) made as the Rust API's.
fn parameter_records(script: &mut Script) {
    script.push(
        "client\tsum\t0\t0\t0\t-".into(),
        "a sum of max 0",
        Want::Refused(
            1,
            "ValueError",
            "param_range",
            r#"{"param":"max_measurement","got":0,"min":1,"max":18446744069414584320}"#,
        ),
    );
    script.push(
        "client\tsumvec\t0\t10\t0\t-".into(),
        "a sum_vec of max 0",
        Want::Refused(
            1,
            "ValueError",
            "param_range",
            r#"{"param":"max_measurement","got":0,"min":1,"max":340282366920938462946865773367900766208}"#,
        ),
    );
    // Chunk length 0: the recommended one, the same as the Rust API's Prio3Type::sum_vec and ::histogram (prio's
    // optimal_chunk_length, the aggregators' binding's default): the same shares.
    let (record, line) = fixed(Prio3Type::sum_vec(255, 10), Measurement::SumVec((0..10).collect()));
    script.push(
        "client\tsumvec\t255\t10\t0\t-".into(),
        "a sum_vec of the recommended chunk length",
        Want::Exact("client\tok\t128".into()),
    );
    script.push(
        record.replace("{m}", "0,1,2,3,4,5,6,7,8,9"),
        "a sum_vec of the recommended chunk length shards as Rust's",
        Want::Exact(line),
    );
    let (record, line) = fixed(Prio3Type::histogram(100), Measurement::Histogram(42));
    script.push(
        "client\thistogram\t100\t0\t0\t-".into(),
        "a histogram of the recommended chunk length",
        Want::Exact("client\tok\t128".into()),
    );
    script.push(
        record.replace("{m}", "42"),
        "a histogram of the recommended chunk length shards as Rust's",
        Want::Exact(line),
    );
    script.push(
        "client\thistogram\t1048577\t1024\t0\t-".into(),
        "a histogram of 2^20 + 1 buckets",
        Want::Refused(
            1,
            "ValueError",
            "param_limit",
            r#"{"limit":"prio3_encoded_length","got":1048577,"max":1048576}"#,
        ),
    );
}

/// Measurements refused by clients of each type.
fn measurement_records(script: &mut Script) {
    let nonce = "00".repeat(16);
    let rand = "00".repeat(128);
    script.push("client\tcount\t0\t0\t0\t-".into(), "a count", Want::Exact("client\tok\t64".into()));
    script.push(
        format!("shard\t2\t{nonce}\t{}", "00".repeat(64)),
        "a count of 2",
        Want::Refused(1, "ValueError", "value_range", r#"{"got":2,"min":0,"max":1}"#),
    );
    script.push("client\tsum\t255\t0\t0\t-".into(), "a sum", Want::Exact("client\tok\t64".into()));
    script.push(
        format!("shard\t256\t{nonce}\t{}", "00".repeat(64)),
        "a sum over its max",
        Want::Refused(1, "ValueError", "value_range", r#"{"got":256,"min":0,"max":255}"#),
    );
    script.push("client\tsumvec\t1000\t2\t2\t-".into(), "a sum_vec", Want::Exact("client\tok\t128".into()));
    script.push(
        format!("shard\t5,1001\t{nonce}\t{rand}"),
        "a sum_vec entry over its max",
        Want::Refused(1, "ValueError", "value_range", r#"{"got":1001,"min":0,"max":1000,"index":1}"#),
    );
    script.push(format!("shard\t5\t{nonce}\t{rand}"), "a sum_vec of one entry", Want::Refused(1, "ValueError", "", ""));
    script.push("client\thistogram\t4\t2\t0\t-".into(), "a histogram", Want::Exact("client\tok\t128".into()));
    script.push(
        format!("shard\t4\t{nonce}\t{rand}"),
        "a bucket index past the histogram",
        Want::Refused(1, "ValueError", "value_range", r#"{"got":4,"min":0,"max":3}"#),
    );
    script.push(
        format!("shard\t18446744073709551615\t{nonce}\t{rand}"),
        "the largest bucket index",
        Want::Refused(1, "ValueError", "value_range", r#"{"got":18446744073709551615,"min":0,"max":3}"#),
    );
}

/// Why `line` is not what `w` wants (the wanted line), if it is not.
fn mismatch(w: &Want, line: &str) -> Option<String> {
    let ok = match w {
        Want::Exact(s) => line == s,
        Want::Refused(status, ty, code, fields) => {
            let f: Vec<&str> = line.splitn(6, '\t').collect();
            let same_fields = if fields.is_empty() {
                f.get(4) == Some(&"")
            } else {
                f.get(4).and_then(|t| serde_json::from_str::<Value>(t).ok())
                    == Some(serde_json::from_str::<Value>(fields).unwrap())
            };
            f.len() == 6
                && f[0] == "refused"
                && f[1] == status.to_string()
                && f[2] == *ty
                && f[3] == *code
                && same_fields
                && !f[5].is_empty()
        }
    };
    (!ok).then(|| match w {
        Want::Exact(s) => s.clone(),
        Want::Refused(s, t, c, f) => format!("refused\t{s}\t{t}\t{c}\t{f}\t…"),
    })
}

#[test]
fn c_program_selftest() {
    let stdout = run(program(), Path::new("--selftest"), &[]);
    let last = stdout.lines().last().unwrap_or("");
    assert!(last.starts_with("selftest: ") && last.ends_with(", 0 failed") && !stdout.contains("FAIL"), "{stdout}");
}

/// The self-test and the vectors again, built with AddressSanitizer and UndefinedBehaviorSanitizer (leaks
/// included). Skipped with a note where the compiler has no sanitizer runtime, unless `LDP_REQUIRE_ASAN` is set.
#[test]
fn c_program_under_address_sanitizer() {
    let Some(exe) = c_program().build_sanitized("prio3-asan") else { return };
    let env = cc::SANITIZER_ENV;
    let stdout = run(&exe, Path::new("--selftest"), &env);
    assert!(stdout.lines().last().is_some_and(|l| l.ends_with(", 0 failed")), "{stdout}");
    // One vector of each type through the sanitized build too.
    let mut records = Vec::new();
    for t in TYPES {
        let v = vectors().into_iter().find(|v| v.kind == t && !v.is_bad() && v.aggregators() == 2).unwrap();
        records.push(client_record(v.prio3_type(), &v.ctx()));
        let r = &v.reports()[0];
        let s = |k: &str| r[k].as_str().unwrap().to_string();
        records.push(format!("shard\t{}\t{}\t{}", list(&measurement_u64s(&r["measurement"])), s("nonce"), s("rand")));
    }
    let cases = work_dir().join("asan.cases");
    std::fs::write(&cases, records.join("\n") + "\n").unwrap();
    let stdout = run(&exe, &cases, &env);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("shares\t")).count(), TYPES.len(), "{stdout}");
}

/// The C snippet of docs/native-client.md's Prio3 section, in a `main` of its own: it builds (`-Wall -Wextra
/// -Werror -pedantic`, its own `#define LDP_CLIENT_PRIO`) and shards.
#[test]
fn the_docs_c_snippet_builds_and_shards() {
    let page =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/native-client.md")).unwrap();
    let from = page.find("## Prio3 sharding for the two-aggregator mode").expect("the page's Prio3 section");
    let start = from + page[from..].find("\n```c\n").expect("a C block") + "\n```c\n".len();
    let body = &page[start..start + page[start..].find("\n```").unwrap()];
    let (preamble, code): (Vec<&str>, Vec<&str>) = body.lines().partition(|l| l.starts_with('#'));
    let program = format!(
        "{}\n#include <stdio.h>\nint main(void) {{\n{}\n    printf(\"%lu %lu %lu\\n\", (unsigned long)pub_len, \
         (unsigned long)leader_len, (unsigned long)helper_len);\n    (void)nonce; (void)pub; (void)leader; \
         (void)helper;\n    return 0;\n}}\n",
        preamble.join("\n"),
        code.join("\n")
    );
    let src = work_dir().join("docs_snippet.c");
    std::fs::write(&src, program).unwrap();
    let exe = work_dir().join("docs_snippet");
    let mut cmd = Command::new(cc::compiler());
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include"))
        .arg(&src)
        .arg(cc::static_library())
        .args(cc::native_static_libs())
        .arg("-o")
        .arg(&exe);
    cc::run(&mut cmd, "compiling the page's Prio3 C snippet");
    // A histogram of 16 buckets: a 64-byte public share and helper share (seed and blind).
    let out = cc::run(&mut Command::new(&exe), "the page's Prio3 C snippet");
    let sizes: Vec<usize> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
    assert!(sizes.len() == 3 && sizes[0] == 64 && sizes[1] > 16 * 16 && sizes[2] == 64, "{out}");
}
