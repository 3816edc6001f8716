//! VDAF draft 08 through the C interface (feature `prio`): `tests/c/prio3.c` (built as for tests/c_prio3.rs) makes
//! clients with the `_draft` constructors and shards with them.
//!
//! * For each two-aggregator draft 08 vector of prio 0.16.8 (`Prio3{Count,Sum,SumVec,Histogram}_0`), a client of its
//!   parameters (`bits` b as `max_measurement` 2^b − 1) tells the vector's randomness length, draft 8 and a 16-byte
//!   verify key; each report's measurement sharded from the OS generator (`ldp_prio3_shard`) has the vector's share
//!   lengths, and prio 0.16.8's aggregators verify the C shares and aggregate them to the vector's result;
//!   `ldp_prio3_shard_with_random` is refused.
//! * The recommended chunk length (0) of draft 08 is prio 0.16.8's; a DAP-09 report of a draft 08 C client opens
//!   and aggregates; draft 18 through `_draft` shards as the Rust API; the draft's refusals have their codes and
//!   fields. The byte-for-byte replay of the draft 08 vectors is the crate's unit tests' (prio 0.16.8 has no public
//!   sharding with given randomness); the boundary self-test of the `_draft` functions runs in tests/c_prio3.rs.

#![cfg(all(unix, feature = "prio"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::prio3::{hex, unhex};
use common::vdaf08::{aggregate, Report as Shares};
use common::{cc, prio_source};
use ldp_client::dap::{open_input_share, Aggregator, HpkeKeypair, HpkeSuite, Report};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type, VdafDraft};
use ldp_client::Value;
use prio08::vdaf::prio3::{optimal_chunk_length, Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};

fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let exe = cc::scratch_dir("ldp-c-prio3-draft08").join("prio3");
        let (cmd, out) = cc::compile_c("tests/c/prio3.c", &exe, &["-DLDP_CLIENT_PRIO"]);
        assert!(out.status.success(), "compiling failed ({cmd:?}):\n{}", String::from_utf8_lossy(&out.stderr));
        exe
    })
}

/// Runs the program on `records`: its lines, one a record.
fn run(name: &str, records: &[String]) -> Vec<String> {
    let cases = program().with_file_name(name);
    std::fs::write(&cases, records.join("\n") + "\n").unwrap();
    let out = Command::new(program()).arg(&cases).output().expect("the C program runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "the C program failed:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<String> = stdout.lines().map(String::from).collect();
    assert_eq!(lines.len(), records.len(), "one line a record:\n{stdout}");
    lines
}

/// The nonce, public share and input shares of a `shares` line.
fn shares(line: &str) -> ([u8; 16], Vec<u8>, Vec<Vec<u8>>) {
    let f: Vec<&str> = line.split('\t').collect();
    assert!(f.len() == 5 && f[0] == "shares", "{line}");
    (unhex(f[1]).try_into().unwrap(), unhex(f[2]), vec![unhex(f[3]), unhex(f[4])])
}

/// A `refused` line's status, type, code and fields.
fn refused(line: &str) -> (String, Value) {
    let f: Vec<&str> = line.splitn(6, '\t').collect();
    assert!(f.len() == 6 && f[0] == "refused" && !f[5].is_empty(), "{line}");
    let fields = if f[4].is_empty() { Value::Null } else { serde_json::from_str(f[4]).unwrap() };
    (format!("{} {} {}", f[1], f[2], f[3]), fields)
}

/// The aggregate result of C-made shares (`shares` lines) under draft 08's VDAF of `kind` as prio 0.16.8 runs it.
fn aggregate_lines(kind: &str, doc: &Value, lines: &[&String]) -> Value {
    let parsed: Vec<_> = lines.iter().map(|l| shares(l)).collect();
    let reports: Vec<Shares> = parsed.iter().map(|(n, p, s)| (n, p.as_slice(), s.as_slice())).collect();
    let int = |k: &str| doc[k].as_u64().unwrap() as usize;
    match kind {
        "Prio3Count" => Value::from(aggregate(&Prio3Count::new_count(2).unwrap(), &reports).unwrap()),
        "Prio3Sum" => Value::from(aggregate(&Prio3Sum::new_sum(2, int("bits")).unwrap(), &reports).unwrap()),
        "Prio3SumVec" => {
            let vdaf = Prio3SumVec::new_sum_vec(2, int("bits"), int("length"), int("chunk_length")).unwrap();
            Value::from(aggregate(&vdaf, &reports).unwrap())
        }
        _ => {
            let vdaf = Prio3Histogram::new_histogram(2, int("length"), int("chunk_length")).unwrap();
            Value::from(aggregate(&vdaf, &reports).unwrap())
        }
    }
}

/// The client record of a draft 08 vector's parameters, and each report's measurement as C integers.
fn vector_records(doc: &Value, kind: &str) -> (String, Vec<String>) {
    let int = |k: &str| doc[k].as_u64().unwrap();
    let max = |bits: u64| u64::try_from((1u128 << bits) - 1).unwrap();
    let (name, a, b, c) = match kind {
        "Prio3Count" => ("count", 0, 0, 0),
        "Prio3Sum" => ("sum", max(int("bits")), 0, 0),
        "Prio3SumVec" => ("sumvec", max(int("bits")), int("length"), int("chunk_length")),
        _ => ("histogram", int("length"), int("chunk_length"), 0),
    };
    let measurements = doc["prep"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| match &r["measurement"] {
            Value::Array(xs) => xs.iter().map(|x| x.as_u64().unwrap().to_string()).collect::<Vec<_>>().join(","),
            x => x.as_u64().unwrap().to_string(),
        })
        .collect();
    (format!("client\t{name}\t{a}\t{b}\t{c}\t-\t8"), measurements)
}

#[test]
fn c_draft08_shards_have_the_vectors_lengths_and_aggregate_to_their_results() {
    let dir = prio_source::vectors_dir("0.16.8", "08", "LDP_PRIO08_VECTORS");
    for kind in ["Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram"] {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{kind}_0.json"))).unwrap()).unwrap();
        assert_eq!(doc["shares"], 2, "{kind}_0 is of two aggregators");
        let reports = doc["prep"].as_array().unwrap();
        let (client, measurements) = vector_records(&doc, kind);
        let mut records = vec![client];
        records.extend(measurements.iter().map(|m| format!("shard_os\t{m}")));
        let rand = reports[0]["rand"].as_str().unwrap();
        records.push(format!("shard\t{}\t{}\t{rand}", measurements[0], "00".repeat(16)));
        let lines = run(&format!("{kind}.cases"), &records);
        assert_eq!(lines[0], format!("client\tok\t{}\t8\t16", rand.len() / 2), "{kind}");
        let sharded: Vec<&String> = lines[1..=reports.len()].iter().collect();
        for (line, r) in sharded.iter().zip(reports) {
            let (_, public, inputs) = shares(line);
            let len = |v: &Value| v.as_str().unwrap().len() / 2;
            assert_eq!(public.len(), len(&r["public_share"]), "{kind}: public share");
            let want: Vec<usize> = r["input_shares"].as_array().unwrap().iter().map(len).collect();
            assert_eq!(inputs.iter().map(Vec::len).collect::<Vec<_>>(), want, "{kind}: input shares");
        }
        assert_eq!(aggregate_lines(kind, &doc, &sharded), doc["agg_result"], "{kind}: the aggregate");
        let (status, fields) = refused(lines.last().unwrap());
        assert_eq!((status.as_str(), fields), ("1 ValueError ", Value::Null), "{kind}: shard_with_random");
    }
}

/// Draft 08's recommended chunk length through C is prio 0.16.8's; draft 18 through `_draft` shards as the Rust
/// API; a DAP-09 report of a draft 08 C client opens for each aggregator and aggregates.
#[test]
fn c_draft_constructors_make_the_rust_apis_clients() {
    let (leader, helper) = (
        HpkeKeypair::derive(1, HpkeSuite::DEFAULT, &[1; 32]).unwrap(),
        HpkeKeypair::derive(2, HpkeSuite::DEFAULT, &[2; 32]).unwrap(),
    );
    let config = |k: &HpkeKeypair| hex(&k.config().encode().unwrap());
    let task_id = [0x77; 32];
    let d18 = Prio3Client::with_draft(VdafDraft::Draft18, Prio3Type::histogram(100), b"").unwrap();
    let rand = vec![5u8; d18.rand_len()];
    let want18 = d18.shard_with_random(&Measurement::Histogram(42), &[3; 16], &rand).unwrap();
    let records = [
        "client\thistogram\t100\t0\t0\t-\t8".to_string(),
        "shard_os\t42".into(),
        format!("report_os\t42\t{}\t1700000123\t3600\t{}\t{}", hex(&task_id), config(&leader), config(&helper)),
        "client\thistogram\t100\t0\t0\t-\t18".into(),
        format!("shard\t42\t{}\t{}", hex(&[3; 16]), hex(&rand)),
    ];
    let lines = run("constructors.cases", &records);
    assert_eq!(lines[0], "client\tok\t80\t8\t16");
    let hist = Prio3Histogram::new_histogram(2, 100, optimal_chunk_length(100)).unwrap();
    let (nonce, public, inputs) = shares(&lines[1]);
    let mut want = vec![0u128; 100];
    want[42] = 1;
    assert_eq!(aggregate(&hist, &[(&nonce, &public, &inputs)]).unwrap(), want);

    let f: Vec<&str> = lines[2].split('\t').collect();
    assert_eq!(f[0], "report", "{}", lines[2]);
    let report = Report::decode(&unhex(f[2])).unwrap();
    let md = report.metadata;
    let open = |k: &HpkeKeypair, a: Aggregator| {
        open_input_share(k, a, &task_id, &md, &report.public_share, report.encrypted_input_share(a)).unwrap()
    };
    let inputs = vec![open(&leader, Aggregator::Leader), open(&helper, Aggregator::Helper)];
    assert_eq!(aggregate(&hist, &[(&md.report_id, &report.public_share, &inputs)]).unwrap(), want);

    assert_eq!(lines[3], "client\tok\t128\t18\t32");
    let (n, p, s) = shares(&lines[4]);
    assert_eq!((n, p, s), (want18.nonce, want18.public_share, want18.input_shares));
}

#[test]
fn c_draft_refusals_have_their_codes_and_fields() {
    let records = [
        "client\tsum\t1000\t0\t0\t-\t8",
        "client\tsumvec\t300\t3\t0\t-\t8",
        "client\tcount\t0\t0\t0\t0a0b\t8",
        "client\tcount\t0\t0\t0\t-\t9",
        "client\tsum\t18446744073709551615\t0\t0\t-\t8",
        "client\tsum\t18446744073709551615\t0\t0\t-\t18",
    ]
    .map(String::from);
    let lines = run("refusals.cases", &records);
    let relation = "1 ValueError param_relation";
    let bits = |got: u64, nearest: [u64; 2]| serde_json::json!({"params": ["max_measurement", "draft"], "rule": "vdaf08_bits", "got": got, "nearest": nearest});
    assert_eq!(refused(&lines[0]), (relation.into(), bits(1000, [511, 1023])));
    assert_eq!(refused(&lines[1]), (relation.into(), bits(300, [255, 511])));
    let no_ctx = serde_json::json!({"params": ["ctx", "draft"], "rule": "vdaf08_no_ctx", "got": 2});
    assert_eq!(refused(&lines[2]), (relation.into(), no_ctx));
    assert_eq!(refused(&lines[3]).0, "1 ValueError ");
    assert!(lines[3].contains("VDAF draft 9 is not one this library speaks"), "{}", lines[3]);
    // 2^64 − 1 is a draft 08 bound (64 bits), over draft 18's field.
    assert_eq!(lines[4], "client\tok\t80\t8\t16");
    assert_eq!(refused(&lines[5]).0, "1 ValueError param_range");
}
