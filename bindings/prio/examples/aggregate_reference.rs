//! The honest reference of `simulations/bench_two_aggregators.py` (issue 86, item 1): what the two aggregators'
//! aggregate step must do, on the very reports the benchmark's aggregators take, through the crates alone.
//!
//! Per report, in one thread: the helper's HPKE open of its input share (the `hpke` crate, the DAP-09 suite
//! DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, with DAP-09's `info` and `InputShareAad`) and the
//! `PlaintextInputShare` read; then both aggregators' Prio3 preparation through the `prio` crate (draft 18): each
//! decodes the public share and its input share (the leader's as its door opened and kept it), runs `verify_init`
//! and encodes its verifier share; the shares are decoded and combined into the verifier message, which is encoded;
//! each decodes it, runs `verify_next` and accumulates its output share. Nothing else: no job messages, no records,
//! no Python. The wall time of each run over every report (after an untimed warm-up run): the best and the median;
//! the aggregate result of the last run, unsharded, for the benchmark to check against the truth.
//!
//! Input: the JSON file the benchmark writes (hex strings): `length` and `chunk_length` of its Prio3Histogram,
//! `verify_key`, `task_id` (also the draft-18 context string, as `ldp.aggregators.task.Task.prio3` makes it),
//! `helper_private_key` (X25519), and per report its `report_id`, `time`, `public_share`, `leader_share` (the
//! leader's opened input share) and `helper_ciphertext` (the encoded `HpkeCiphertext`).
//!
//! `cargo run --release --no-default-features --example aggregate_reference -- FILE REPEATS`; prints one JSON line.

use std::hint::black_box;
use std::time::Instant;

use hpke::aead::AesGcm128;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, Kem, OpModeR};
use prio::codec::{Encode, ParameterizedDecode};
use prio::vdaf::prio3::{Prio3Histogram, Prio3InputShare, Prio3PublicShare, Prio3VerifierMessage, Prio3VerifierShare};
use prio::vdaf::{Aggregatable, Aggregator, Collector, VerifyTransition};
use serde_json::Value;

type PrivateKey = <X25519HkdfSha256 as Kem>::PrivateKey;
type EncappedKey = <X25519HkdfSha256 as Kem>::EncappedKey;

/// DAP-09's HPKE `info` of the helper's input share: `"dap-09 input share" || 0x01 (client) || 0x03 (helper)`.
const HELPER_INFO: &[u8] = b"dap-09 input share\x01\x03";

struct Report {
    report_id: [u8; 16],
    aad: Vec<u8>,
    enc: EncappedKey,
    payload: Vec<u8>,
    public_share: Vec<u8>,
    leader_share: Vec<u8>,
}

fn hex(value: &Value) -> Vec<u8> {
    let text = value.as_str().expect("a hex string");
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex")).collect()
}

/// `bytes[at..]`'s first `size`-byte big-endian length and the opaque value after it; the position after both.
fn opaque(bytes: &[u8], at: usize, size: usize) -> (&[u8], usize) {
    let len = bytes[at..at + size].iter().fold(0usize, |n, b| n << 8 | usize::from(*b));
    (&bytes[at + size..at + size + len], at + size + len)
}

fn report(task_id: &[u8], value: &Value) -> Report {
    let (report_id, time, public_share) =
        (hex(&value["report_id"]), value["time"].as_u64().unwrap(), hex(&value["public_share"]));
    // InputShareAad: task ID, ReportMetadata (report ID, time), public share (opaque, 32-bit length)
    let mut aad = [task_id, &report_id, &time.to_be_bytes(), &(public_share.len() as u32).to_be_bytes()].concat();
    aad.extend_from_slice(&public_share);
    // HpkeCiphertext: config ID, enc (opaque, 16-bit length), payload (opaque, 32-bit length)
    let ciphertext = hex(&value["helper_ciphertext"]);
    let (enc, at) = opaque(&ciphertext, 1, 2);
    let (payload, _) = opaque(&ciphertext, at, 4);
    Report {
        report_id: report_id.try_into().expect("16-byte report ID"),
        aad,
        enc: EncappedKey::from_bytes(enc).expect("an X25519 encapsulated key"),
        payload: payload.to_vec(),
        public_share,
        leader_share: hex(&value["leader_share"]),
    }
}

/// The helper's opens alone, over every report (the HPKE part of [`run`], timed apart for the benchmark's reading).
fn opens(sk: &PrivateKey, reports: &[Report]) -> usize {
    reports.iter().map(|r| open(sk, r).len()).sum()
}

fn open(sk: &PrivateKey, r: &Report) -> Vec<u8> {
    hpke::single_shot_open::<AesGcm128, HkdfSha256, X25519HkdfSha256>(
        &OpModeR::Base,
        sk,
        &r.enc,
        HELPER_INFO,
        &r.payload,
        &r.aad,
    )
    .expect("the helper's share opens")
}

/// One run over every report: the aggregate result, unsharded.
fn run(vdaf: &Prio3Histogram, key: &[u8; 32], ctx: &[u8], sk: &PrivateKey, reports: &[Report]) -> Vec<u128> {
    let mut leader = vdaf.aggregate_init(&());
    let mut helper = vdaf.aggregate_init(&());
    for r in reports {
        let plaintext = open(sk, r);
        let (_extensions, at) = opaque(&plaintext, 0, 2); // PlaintextInputShare: extensions, then the payload
        let (helper_share, _) = opaque(&plaintext, at, 4);
        let mut states = Vec::with_capacity(2);
        let mut shares = Vec::with_capacity(2);
        for (agg_id, input) in [r.leader_share.as_slice(), helper_share].into_iter().enumerate() {
            let public = Prio3PublicShare::get_decoded_with_param(vdaf, &r.public_share).unwrap();
            let input = Prio3InputShare::get_decoded_with_param(&(vdaf, agg_id), input).unwrap();
            let (state, share) = vdaf.verify_init(key, ctx, agg_id, &(), &r.report_id, &public, &input).unwrap();
            shares.push(share.get_encoded().unwrap());
            states.push(state);
        }
        let decoded = shares
            .iter()
            .map(|s| Prio3VerifierShare::get_decoded_with_param(&states[0], s).unwrap())
            .collect::<Vec<_>>();
        let message = vdaf.verifier_shares_to_message(ctx, &(), decoded).unwrap().get_encoded().unwrap();
        for (state, aggregate) in states.into_iter().zip([&mut leader, &mut helper]) {
            let message = Prio3VerifierMessage::get_decoded_with_param(&state, &message).unwrap();
            match vdaf.verify_next(ctx, state, message).unwrap() {
                VerifyTransition::Finish(out) => aggregate.accumulate(&out).unwrap(),
                VerifyTransition::Continue(..) => panic!("Prio3 has one round"),
            }
        }
    }
    black_box((&leader, &helper));
    vdaf.unshard(&(), [leader, helper], reports.len()).unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    assert!(args.len() == 3, "usage: aggregate_reference FILE REPEATS");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&args[1]).expect("the input file")).unwrap();
    let repeats: usize = args[2].parse().expect("REPEATS");
    let (length, chunk) =
        (input["length"].as_u64().unwrap() as usize, input["chunk_length"].as_u64().unwrap() as usize);
    let vdaf = Prio3Histogram::new_histogram(2, length, chunk).unwrap();
    let key: [u8; 32] = hex(&input["verify_key"]).try_into().expect("a 32-byte verify key");
    let task_id = hex(&input["task_id"]);
    let sk = PrivateKey::from_bytes(&hex(&input["helper_private_key"])).expect("an X25519 private key");
    let reports: Vec<Report> = input["reports"].as_array().unwrap().iter().map(|v| report(&task_id, v)).collect();
    let (mut runs, mut open_runs) = (Vec::with_capacity(repeats), Vec::with_capacity(repeats));
    let mut result = Vec::new();
    for i in 0..=repeats {
        let start = Instant::now();
        result = run(&vdaf, &key, &task_id, &sk, &reports);
        let middle = Instant::now();
        black_box(opens(&sk, &reports));
        if i > 0 {
            runs.push((middle - start).as_secs_f64());
            open_runs.push(middle.elapsed().as_secs_f64());
        }
    }
    runs.sort_by(f64::total_cmp);
    open_runs.sort_by(f64::total_cmp);
    println!(
        "{{\"reports\": {}, \"repeats\": {repeats}, \"best_s\": {:.6}, \"median_s\": {:.6}, \"opens_best_s\": {:.6}, \
         \"result\": {result:?}}}",
        reports.len(),
        runs[0],
        runs[runs.len() / 2],
        open_runs[0]
    );
}
