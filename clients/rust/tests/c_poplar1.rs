//! Poplar1 sharding through the C interface (feature `poplar1`): `tests/c/poplar1.c`, compiled with the system C
//! compiler against `include/ldp_client.h` (`-DLDP_CLIENT_PRIO -DLDP_CLIENT_POPLAR1`) and the static library this
//! `cargo test` built, shards every report of VDAF draft 18's Poplar1 vectors (`conformance/dap/poplar1`) with
//! `ldp_poplar1_shard_with_random` (the measurement packed, first bit first) and prints the nonce, the public share
//! and both input shares, compared here with the vector's byte for byte; makes DAP-09 reports with
//! `ldp_poplar1_dap_report_with_random`, compared with the Rust API's ([`Poplar1ReportBuilder::build_with_random`]);
//! prints refusals with their status, type, code and fields; and runs a self-test of the boundary (null pointers,
//! handles of the wrong kind, bad lengths), also under AddressSanitizer. The negative vector fails only at the
//! aggregators, which the C interface does not have: tests/poplar1_vectors.rs replays it.

#![cfg(all(unix, feature = "poplar1"))]

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::cc::{self, CProgram};
use common::prio3::hex;
use ldp_client::dap::{HpkeKeypair, HpkeSuite, Poplar1ReportBuilder};
use ldp_client::poplar1::{Poplar1Client, RAND_LEN};
use ldp_client::Value;

/// `tests/c/poplar1.c` and its flags (`-Wno-unused-function`: prio3_io.h's helpers for Prio3 are not all used).
fn c_program() -> &'static CProgram {
    static PROGRAM: OnceLock<CProgram> = OnceLock::new();
    PROGRAM.get_or_init(|| CProgram {
        source: "tests/c/poplar1.c",
        flags: &["-DLDP_CLIENT_PRIO", "-DLDP_CLIENT_POPLAR1", "-Wno-unused-function"],
        dir: cc::scratch_dir("ldp-c-poplar1"),
    })
}

fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| c_program().build("poplar1"))
}

/// Runs `exe` on `records` (or `--selftest` when empty) with `env`: its lines; panics with all it printed if it failed.
fn run(exe: &Path, records: &[String], env: &[(&str, &str)]) -> Vec<String> {
    let arg = if records.is_empty() {
        PathBuf::from("--selftest")
    } else {
        let cases = c_program().dir.join(format!("cases-{}", records.len()));
        std::fs::write(&cases, records.join("\n") + "\n").unwrap();
        cases
    };
    cc::run_program(exe, &[&arg], env).lines().map(String::from).collect()
}

/// Bits packed first bit first, the spare low bits 0 (what the C interface takes).
fn pack(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
        out[i / 8] |= 0x80 >> (i % 8);
    }
    out
}

/// Every positive vector's client and report records, and the lines the program must print for them.
fn vector_records() -> (Vec<String>, Vec<String>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance/dap/poplar1");
    let mut names: Vec<_> =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    names.sort();
    let (mut records, mut want) = (Vec::new(), Vec::new());
    for name in names.iter().filter(|n| n.starts_with("Poplar1_") && n.ends_with(".json") && !n.contains("_bad_")) {
        let doc: Value = serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap();
        let bits = doc["bits"].as_u64().unwrap();
        records.push(format!("client\t{bits}\t{}", doc["ctx"].as_str().unwrap()));
        want.push(format!("client\tok\t{}", bits.div_ceil(8)));
        for r in doc["reports"].as_array().unwrap() {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            let m: Vec<bool> = r["measurement"].as_array().unwrap().iter().map(|b| b.as_bool().unwrap()).collect();
            records.push(format!("shard\t{}\t{}\t{}", hex(&pack(&m)), s("nonce"), s("rand")));
            let shares: Vec<&str> = r["input_shares"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
            want.push(format!("shares\t{}\t{}\t{}\t{}", s("nonce"), s("public_share"), shares[0], shares[1]));
        }
    }
    assert_eq!(want.iter().filter(|l| l.starts_with("shares")).count(), 6, "six positive vectors of one report each");
    (records, want)
}

#[test]
fn c_program_shards_the_vectors_byte_for_byte() {
    let (records, want) = vector_records();
    let got = run(program(), &records, &[]);
    assert_eq!(got, want);
}

/// A refusal line's status, type, code and fields (JSON; `null` when empty), its message checked not empty.
fn refusal(line: &str) -> (i32, String, String, Value) {
    let f: Vec<&str> = line.splitn(6, '\t').collect();
    assert!(f.len() == 6 && f[0] == "refused" && !f[5].is_empty(), "{line}");
    let fields = if f[4].is_empty() { Value::Null } else { serde_json::from_str(f[4]).unwrap() };
    (f[1].parse().unwrap(), f[2].into(), f[3].into(), fields)
}

#[test]
fn c_program_refuses_by_meaning_and_reports_as_rust() {
    let (leader, helper) = (
        HpkeKeypair::derive(1, HpkeSuite::DEFAULT, &[1; 32]).unwrap(),
        HpkeKeypair::derive(2, HpkeSuite::DEFAULT, &[2; 32]).unwrap(),
    );
    let (lc, hc) = (hex(&leader.config().encode().unwrap()), hex(&helper.config().encode().unwrap()));
    let client = Poplar1Client::new(11, b"app").unwrap();
    let builder = Poplar1ReportBuilder::new(client.clone(), [7; 32], leader.config().clone(), helper.config().clone())
        .unwrap()
        .with_time_precision(60)
        .unwrap();
    let m = client.measurement_from_bytes(&[0xc8, 0x20]).unwrap();
    let rand = vec![3u8; builder.rand_len()];
    let report = builder.build_with_random(&m, 125, &[8; 16], &rand).unwrap().encode().unwrap();
    let (task, id) = (hex(&[7; 32]), hex(&[8; 16]));
    let records = vec![
        "client\t0\t-".to_string(),
        format!("client\t257\t{}", hex(b"app")),
        format!("client\t11\t{}", hex(b"app")),
        format!("shard\tc820\t{}\t{}", hex(&[0; 16]), hex(&[0; RAND_LEN])),
        format!("shard\tc821\t{}\t{}", hex(&[0; 16]), hex(&[0; RAND_LEN])),
        format!("shard\tc8\t{}\t{}", hex(&[0; 16]), hex(&[0; RAND_LEN])),
        format!("shard\tc820\t{}\t{}", hex(&[0; 16]), hex(&[0; RAND_LEN - 1])),
        format!("rand_len\t{lc}\t{hc}"),
        format!("report\tc820\t{task}\t125\t60\t{lc}\t{hc}\t{id}\t{}", hex(&rand)),
        format!("report\tc820\t{task}\t125\t0\t{lc}\t{hc}\t{id}\t{}", hex(&rand)),
        format!("report\tc820\t{task}\t125\t60\t{lc}\t{lc}\t{id}\t{}", hex(&rand)),
    ];
    let got = run(program(), &records, &[]);
    assert_eq!(got.len(), records.len(), "{got:?}");
    let range = |param: &str, got: u64, min: u64, max: Option<u64>| {
        let mut v = serde_json::json!({"param": param, "got": got, "min": min});
        if let Some(max) = max {
            v["max"] = max.into();
        }
        v
    };
    assert_eq!(refusal(&got[0]), (1, "ValueError".into(), "param_range".into(), range("bits", 0, 1, Some(256))));
    assert_eq!(refusal(&got[1]), (1, "ValueError".into(), "param_range".into(), range("bits", 257, 1, Some(256))));
    assert_eq!(got[2], "client\tok\t2");
    let shares = client.shard_with_random(&m, &[0; 16], &[0; RAND_LEN]).unwrap();
    let line = [hex(&shares.nonce), hex(&shares.public_share), hex(shares.leader_share()), hex(shares.helper_share())];
    assert_eq!(got[3], format!("shares\t{}", line.join("\t")));
    for (i, why) in
        [(4, "the last 5 bits of its last byte 0"), (5, "is 2 bytes, got 1"), (6, "bytes of sharding randomness")]
    {
        let (status, ty, code, _) = refusal(&got[i]);
        assert!((status, ty.as_str(), code.as_str()) == (1, "ValueError", "") && got[i].contains(why), "{}", got[i]);
    }
    assert_eq!(got[7], format!("rand_len\t{}", RAND_LEN + 64));
    assert_eq!(got[8], format!("report\t{id}\t{}", hex(&report)));
    assert_eq!(refusal(&got[9]).2, "param_range", "a time precision of 0");
    assert!(refusal(&got[10]).0 == 1 && got[10].contains("same public key"), "{}", got[10]);
}

/// The C interface's record path for a spec's `poplar1` metric: `ldp_client_add_task` given its Poplar1 task (one of
/// other bits refused first), then every value of bits 64 of `conformance/specs/poplar1.json`'s measurements through
/// `ldp_client_record_string` (strings, as bytes) or `ldp_client_record_json` (the others): recorded (the pending
/// reports counting up) or refused with Python's code, the refusal a `ValueError` or a `TypeError` as Python's.
#[test]
fn c_program_records_strings_into_a_poplar1_metric_given_its_task() {
    let (doc, keys) = (common::poplar1::spec_doc(64), common::poplar1::Keys::new());
    let task = common::poplar1::task_doc(&doc, "new_words", 7, "https://leader.example", &keys);
    let mut bad = task.clone();
    bad["vdaf"]["bits"] = 32.into();
    let mut records = vec![
        format!("spec\t{doc}"),
        "record\tnew_words\t6869".to_string(),
        format!("task\t{bad}"),
        format!("task\t{task}"),
    ];
    let mut want = vec!["spec\tok".to_string(), "refused trust_model".into(), "refused".into(), "task\tok".into()];
    let (mut pending, doc) = (0, common::spec_replay::fixture("poplar1.json"));
    for m in doc["measurements"].as_array().unwrap().iter().filter(|m| m["bits"] == 64) {
        records.push(match m["value"].as_str() {
            Some(s) if !s.is_empty() => format!("record\tnew_words\t{}", hex(s.as_bytes())),
            Some(_) => "record\tnew_words\t-".to_string(),
            None => format!("recordjson\tnew_words\t{}", m["value"]),
        });
        want.push(match m.get("error").and_then(Value::as_str) {
            Some(code) => format!("refused {code}"),
            None => {
                pending += 1;
                format!("recorded\t{pending}")
            }
        });
    }
    let got = run(program(), &records, &[]);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        match w.strip_prefix("refused") {
            None => assert_eq!(g, w, "record {i}: {}", records[i]),
            Some(code) => {
                let (status, ty, got_code, _) = refusal(g);
                let kind = if got_code == "value_type" { (2, "TypeError") } else { (1, "ValueError") };
                assert_eq!((status, ty.as_str()), kind, "record {i}: {g}");
                assert!(code.is_empty() || got_code == code.trim(), "record {i}: {g}, want{code}");
            }
        }
    }
    assert!(pending >= 8 && want.len() > 20, "{pending} of {}", want.len());
}

#[test]
fn c_program_selftest() {
    let out = run(program(), &[], &[]);
    let last = out.last().map(String::as_str).unwrap_or("");
    assert!(
        last.starts_with("selftest: ") && last.ends_with(", 0 failed") && !out.iter().any(|l| l.contains("FAIL")),
        "{out:?}"
    );
}

/// The self-test and the vectors again, built with AddressSanitizer and UndefinedBehaviorSanitizer (leaks
/// included). Skipped with a note where the compiler has no sanitizer runtime, unless `LDP_REQUIRE_ASAN` is set.
#[test]
fn c_program_under_address_sanitizer() {
    let Some(exe) = c_program().build_sanitized("poplar1-asan") else { return };
    let out = run(&exe, &[], &cc::SANITIZER_ENV);
    assert!(out.last().is_some_and(|l| l.ends_with(", 0 failed")), "{out:?}");
    let (records, want) = vector_records();
    assert_eq!(run(&exe, &records, &cc::SANITIZER_ENV), want);
}
