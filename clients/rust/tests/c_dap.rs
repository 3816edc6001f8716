//! DAP-09 reports through the C interface (feature `prio`): `tests/c/prio3.c` (built as for tests/c_prio3.rs) makes
//! reports of each Prio3 type with `ldp_dap_report_with_random`, each compared byte for byte with the Rust API's
//! (`ReportBuilder::build_with_random`) over several HPKE suites; reports from the OS generator, decoded and opened
//! here by each aggregator's key; `ldp_dap_report_rand_len` and `ldp_dap_hpke_config_select`; refusals with their
//! status, type, code and fields; and the C snippet of docs/native-client.md's DAP-09 section, built and run. The boundary self-test of the program covers the DAP calls too
//! (tests/c_prio3.rs runs it, also under AddressSanitizer). tests in `clients/rust/interop` decode the same
//! reports with Janus's `janus_messages` and verify them with prio's aggregators.

#![cfg(all(unix, feature = "prio"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::cc;
use common::prio3::{hex, unhex};
use ldp_client::dap::{
    open_input_share, Aggregator, HpkeConfig, HpkeConfigList, HpkeKeypair, HpkeSuite, Report, ReportBuilder,
    AEAD_AES_256_GCM, AEAD_CHACHA20_POLY1305, KDF_HKDF_SHA512, KEM_P256_HKDF_SHA256, KEM_P521_HKDF_SHA512,
};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type};

/// A folder of this test process under cargo's scratch folder for integration tests.
fn program_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| cc::scratch_dir("ldp-c-dap"))
}

fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let exe = program_dir().join("prio3");
        let (cmd, out) = cc::compile_c("tests/c/prio3.c", &exe, &["-DLDP_CLIENT_PRIO"]);
        assert!(
            out.status.success(),
            "compiling tests/c/prio3.c failed ({cmd:?}):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        exe
    })
}

/// Runs the program on `records`: its lines.
fn run(records: &[String]) -> Vec<String> {
    let cases = program().with_file_name(format!("cases-{}", records.len()));
    std::fs::write(&cases, records.join("\n") + "\n").unwrap();
    let out = Command::new(program()).arg(&cases).output().expect("the C program runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "the C program failed:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout.lines().map(String::from).collect()
}

/// A key pair derived from `seed` (deterministic, so that the cases are too).
fn keypair(id: u8, suite: HpkeSuite, seed: u8) -> HpkeKeypair {
    HpkeKeypair::derive(id, suite, &[seed; 66]).unwrap()
}

/// The C program's `client` record of a type, and the measurement's integers.
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
    format!("client\t{name}\t{a}\t{b}\t{c}\t{}", hex(ctx))
}

fn ints(m: &Measurement) -> String {
    let v: Vec<u64> = match m {
        Measurement::Count(b) => vec![u64::from(*b)],
        Measurement::Sum(x) => vec![*x],
        Measurement::SumVec(xs) => xs.iter().map(|x| u64::try_from(*x).unwrap()).collect(),
        Measurement::Histogram(i) => vec![*i as u64],
        _ => unreachable!(),
    };
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

fn config_hex(c: &HpkeConfig) -> String {
    hex(&c.encode().unwrap())
}

/// The four types, a measurement of each, and the suites of the leader's and the helper's keys.
fn cases() -> Vec<(Prio3Type, Measurement, HpkeSuite, HpkeSuite)> {
    let d = HpkeSuite::DEFAULT;
    let p256 = HpkeSuite { kem_id: KEM_P256_HKDF_SHA256, kdf_id: KDF_HKDF_SHA512, aead_id: AEAD_CHACHA20_POLY1305 };
    let p521 = HpkeSuite { kem_id: KEM_P521_HKDF_SHA512, kdf_id: KDF_HKDF_SHA512, aead_id: AEAD_AES_256_GCM };
    vec![
        (Prio3Type::Count, Measurement::Count(true), d, d),
        (Prio3Type::Sum { max_measurement: 255 }, Measurement::Sum(200), d, p256),
        (Prio3Type::sum_vec(1000, 4), Measurement::SumVec(vec![0, 1, 999, 1000]), p521, d),
        (Prio3Type::histogram(10), Measurement::Histogram(7), p256, p521),
    ]
}

#[test]
fn c_reports_are_the_rust_apis_byte_for_byte() {
    let task_id = [0x5a; 32];
    let mut records = Vec::new();
    let mut want = Vec::new();
    for (i, (typ, m, leader_suite, helper_suite)) in cases().into_iter().enumerate() {
        let (leader, helper) = (keypair(1, leader_suite, 10 + i as u8), keypair(2, helper_suite, 20 + i as u8));
        let client = Prio3Client::new(typ, &task_id).unwrap();
        records.push(client_record(typ, &task_id));
        want.push(format!("client\tok\t{}", client.rand_len()));
        let builder = ReportBuilder::new(client, task_id, leader.config().clone(), helper.config().clone())
            .unwrap()
            .with_time_precision(3600)
            .unwrap();
        let (cl, ch) = (config_hex(leader.config()), config_hex(helper.config()));
        records.push(format!("rand_len\t{cl}\t{ch}"));
        want.push(format!("rand_len\t{}", builder.rand_len()));
        let report_id = [i as u8 + 1; 16];
        let rand: Vec<u8> = (0..builder.rand_len()).map(|j| (j * 7 + i) as u8).collect();
        let report = builder.build_with_random(&m, 1_700_000_000, &report_id, &rand).unwrap();
        records.push(format!(
            "report\t{}\t{}\t1700000000\t3600\t{cl}\t{ch}\t{}\t{}",
            ints(&m),
            hex(&task_id),
            hex(&report_id),
            hex(&rand)
        ));
        want.push(format!("report\t{}\t{}", hex(&report_id), hex(&report.encode().unwrap())));
        assert_eq!(report.metadata.time, 1_699_999_200);
    }
    // The most preferred supported config of a list.
    let p384 = HpkeConfig { id: 9, kem_id: 0x0011, ..keypair(9, HpkeSuite::DEFAULT, 3).config().clone() };
    let ok = keypair(4, HpkeSuite::DEFAULT, 4).config().clone();
    let list = HpkeConfigList(vec![p384.clone(), ok.clone()]).encode().unwrap();
    records.push(format!("select\t{}", hex(&list)));
    want.push(format!("selected\t{}", config_hex(&ok)));
    let got = run(&records);
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
}

#[test]
fn c_reports_from_the_os_generator_open_for_each_aggregator() {
    let task_id = [0x17; 32];
    let mut records = Vec::new();
    let mut keys = Vec::new();
    for (i, (typ, m, leader_suite, helper_suite)) in cases().into_iter().enumerate() {
        let (leader, helper) = (keypair(3, leader_suite, 30 + i as u8), keypair(4, helper_suite, 40 + i as u8));
        records.push(client_record(typ, b"ctx"));
        let (cl, ch) = (config_hex(leader.config()), config_hex(helper.config()));
        for _ in 0..2 {
            records.push(format!("report_os\t{}\t{}\t1700000123\t60\t{cl}\t{ch}", ints(&m), hex(&task_id)));
        }
        // What a Rust report of the same type looks like: the lengths of its shares.
        let rust = ReportBuilder::new(
            Prio3Client::new(typ, b"ctx").unwrap(),
            task_id,
            leader.config().clone(),
            helper.config().clone(),
        )
        .unwrap()
        .build(&m, 0)
        .unwrap();
        keys.push((leader, helper, rust));
    }
    let got = run(&records);
    let reports: Vec<&String> = got.iter().filter(|l| l.starts_with("report\t")).collect();
    assert_eq!(reports.len(), 8, "{got:#?}");
    let mut ids = std::collections::HashSet::new();
    for (i, line) in reports.iter().enumerate() {
        let (leader, helper, rust) = &keys[i / 2];
        let f: Vec<&str> = line.split('\t').collect();
        let report = Report::decode(&unhex(f[2])).unwrap();
        assert_eq!(hex(&report.metadata.report_id), f[1]);
        assert!(ids.insert(report.metadata.report_id), "a report ID drawn twice");
        assert_eq!(report.metadata.time, 1_700_000_100);
        assert_eq!(report.public_share.len(), rust.public_share.len());
        for (aggregator, kp) in [(Aggregator::Leader, leader), (Aggregator::Helper, helper)] {
            let c = report.encrypted_input_share(aggregator);
            let share = open_input_share(kp, aggregator, &task_id, &report.metadata, &report.public_share, c).unwrap();
            let rust_share = open_input_share(
                kp,
                aggregator,
                &task_id,
                &rust.metadata,
                &rust.public_share,
                rust.encrypted_input_share(aggregator),
            )
            .unwrap();
            assert_eq!(share.len(), rust_share.len(), "report {i}, the {aggregator}'s share");
            assert_ne!(share, rust_share);
        }
    }
}

#[test]
fn c_refusals_say_what_was_refused() {
    let (leader, helper) = (keypair(1, HpkeSuite::DEFAULT, 1), keypair(2, HpkeSuite::DEFAULT, 2));
    let (cl, ch) = (config_hex(leader.config()), config_hex(helper.config()));
    let task = hex(&[0; 32]);
    let records = vec![
        "client\tsum\t255\t0\t0\t-".to_string(),
        format!("report_os\t256\t{task}\t0\t1\t{cl}\t{ch}"),
        format!("report_os\t1\t{task}\t0\t0\t{cl}\t{ch}"),
        format!("report_os\t1\t{}\t0\t1\t{cl}\t{ch}", hex(&[0; 16])),
        format!("report_os\t1\t{task}\t0\t1\t{cl}00\t{ch}"),
        format!("report_os\t1\t{task}\t0\t1\t{cl}\t{cl}"),
        format!("rand_len\t{cl}\t{}", config_hex(&HpkeConfig { aead_id: 0xffff, ..helper.config().clone() })),
        format!("select\t{}", hex(&HpkeConfigList(vec![leader.config().clone()]).encode().unwrap()[..10])),
        "select\t0000".to_string(),
    ];
    let got = run(&records);
    let want: [(&str, &str, &str, &[&str]); 8] = [
        ("1", "ValueError", "value_range", &[r#""got":256"#, r#""max":255"#]),
        ("1", "ValueError", "param_range", &[r#""param":"time_precision""#]),
        ("1", "ValueError", "", &["task ID is 32 bytes, got 16"]),
        ("1", "ValueError", "", &["leader_config", "trailing"]),
        ("1", "ValueError", "", &["same public key"]),
        ("1", "ValueError", "", &["AEAD 0xffff is not supported"]),
        ("1", "ValueError", "", &["HpkeConfigList is malformed"]),
        ("1", "ValueError", "", &["empty"]),
    ];
    assert_eq!(got[0], "client\tok\t64");
    assert_eq!(got.len(), 1 + want.len(), "{got:#?}");
    for (line, (status, ty, code, words)) in got[1..].iter().zip(want) {
        let f: Vec<&str> = line.splitn(6, '\t').collect();
        assert_eq!(&f[..4], &["refused", status, ty, code], "{line}");
        for w in words {
            assert!(line.contains(w), "{line} lacks {w}");
        }
    }
}

/// The C snippet of docs/native-client.md's DAP-09 section, in a `main` of its own with two aggregators' config
/// lists and a task ID: it builds (`-Wall -Wextra -Werror -pedantic`) and makes a report that each aggregator opens.
#[test]
fn the_docs_c_snippet_builds_and_makes_a_report() {
    let page =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/native-client.md")).unwrap();
    let from = page.find("### DAP-09 reports").expect("the page's DAP-09 section");
    let start = from + page[from..].find("\n```c\n").expect("a C block") + "\n```c\n".len();
    let body = &page[start..start + page[start..].find("\n```").unwrap()];
    let (preamble, code): (Vec<&str>, Vec<&str>) = body.lines().partition(|l| l.starts_with('#'));
    // The body is printed where the snippet sends it (before it frees the report).
    let send = "{ size_t i; for (i = 0; i < body_len; i++) printf(\"%02x\", body[i]); printf(\"\\n\"); }";
    let code: Vec<&str> = code.into_iter().map(|l| if l.starts_with("/* ... PUT") { send } else { l }).collect();
    assert!(code.contains(&send), "the snippet sends the body in a `/* ... PUT` comment");
    let (leader, helper) = (keypair(1, HpkeSuite::DEFAULT, 5), keypair(2, HpkeSuite::DEFAULT, 6));
    let task_id = [0x3c; 32];
    let array = |name: &str, bytes: &[u8]| {
        let items: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
        format!(
            "static const uint8_t {name}[] = {{{}}};\nstatic const size_t {name}_len = {};\n",
            items.join(","),
            bytes.len()
        )
    };
    let program = format!(
        "{}\n#include <stdio.h>\n{}{}{}int main(void) {{\n{}\n    (void)task_id_len;\n    return 0;\n}}\n",
        preamble.join("\n"),
        array("task_id", &task_id),
        array("leader_list", &HpkeConfigList(vec![leader.config().clone()]).encode().unwrap()),
        array("helper_list", &HpkeConfigList(vec![helper.config().clone()]).encode().unwrap()),
        code.join("\n")
    );
    let dir = program_dir();
    let src = dir.join("docs_dap_snippet.c");
    std::fs::write(&src, program).unwrap();
    let exe = dir.join("docs_dap_snippet");
    let mut cmd = Command::new(cc::compiler());
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include"))
        .arg(&src)
        .arg(cc::static_library())
        .args(cc::native_static_libs())
        .arg("-o")
        .arg(&exe);
    cc::run(&mut cmd, "compiling the page's DAP-09 C snippet");
    let out = cc::run(&mut Command::new(&exe), "the page's DAP-09 C snippet");
    let report = Report::decode(&unhex(out.trim())).unwrap();
    assert_eq!(report.metadata.time % 86_400, 0);
    for (aggregator, kp) in [(Aggregator::Leader, &leader), (Aggregator::Helper, &helper)] {
        let c = report.encrypted_input_share(aggregator);
        open_input_share(kp, aggregator, &task_id, &report.metadata, &report.public_share, c).unwrap();
    }
}
