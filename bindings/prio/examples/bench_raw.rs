//! The raw side of `simulations/bench_prio.py`: the two aggregators' verification and aggregation of pre-sharded
//! reports through the `prio` crate's own API, timed as the Python side times the binding.
//!
//! Per report, exactly what the binding's path does: each aggregator decodes the public share and its input share
//! from bytes, runs `verify_init` and encodes its verifier share; the verifier shares are decoded and combined by
//! `verifier_shares_to_message`, whose message is encoded; each aggregator decodes the message, runs `verify_next`
//! and accumulates its output share into its aggregate share. One thread; the wall time of each run over the whole
//! batch (after an untimed warm-up run), the best and the median; the result unsharded from the last run's shares.
//!
//! `cargo run --release --locked --no-default-features --example bench_raw -- CASE REPORTS REPEATS`, CASE one of
//! `count`, `sum:MAX`, `sumvec:LENGTH:MAX`, `histogram:LENGTH`; prints one JSON line.

use std::hint::black_box;
use std::time::Instant;

use prio::codec::{Encode, ParameterizedDecode};
use prio::flp::Type;
use prio::vdaf::prio3::{
    optimal_chunk_length, Prio3, Prio3InputShare, Prio3PublicShare, Prio3VerifierMessage, Prio3VerifierShare,
};
use prio::vdaf::xof::XofTurboShake128;
use prio::vdaf::{Aggregatable, Aggregator, Client, Collector, VerifyTransition};

const CTX: &[u8] = b"ldp bench_prio";

struct Report {
    nonce: [u8; 16],
    public_share: Vec<u8>,
    input_shares: [Vec<u8>; 2],
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("OS randomness");
    bytes
}

/// The wall time (seconds) of each of `repeats` runs over `reports` (after one untimed warm-up run), and the
/// aggregate result of the last run.
fn time<T: Type>(vdaf: &Prio3<T, XofTurboShake128, 32>, reports: &[Report], repeats: usize) -> (Vec<f64>, String) {
    let key: [u8; 32] = random();
    let mut runs = Vec::with_capacity(repeats);
    let mut result = String::new();
    for run in 0..=repeats {
        let start = Instant::now();
        let mut leader = vdaf.aggregate_init(&());
        let mut helper = vdaf.aggregate_init(&());
        for report in reports {
            let mut states = Vec::with_capacity(2);
            let mut shares = Vec::with_capacity(2);
            for (agg_id, input) in report.input_shares.iter().enumerate() {
                let public = Prio3PublicShare::get_decoded_with_param(vdaf, &report.public_share).unwrap();
                let input = Prio3InputShare::get_decoded_with_param(&(vdaf, agg_id), input).unwrap();
                let (state, share) = vdaf.verify_init(&key, CTX, agg_id, &(), &report.nonce, &public, &input).unwrap();
                shares.push(share.get_encoded().unwrap());
                states.push(state);
            }
            let decoded = shares
                .iter()
                .map(|s| Prio3VerifierShare::get_decoded_with_param(&states[0], s).unwrap())
                .collect::<Vec<_>>();
            let message = vdaf.verifier_shares_to_message(CTX, &(), decoded).unwrap().get_encoded().unwrap();
            for (state, aggregate) in states.into_iter().zip([&mut leader, &mut helper]) {
                let message = Prio3VerifierMessage::get_decoded_with_param(&state, &message).unwrap();
                match vdaf.verify_next(CTX, state, message).unwrap() {
                    VerifyTransition::Finish(out) => aggregate.accumulate(&out).unwrap(),
                    VerifyTransition::Continue(..) => panic!("Prio3 has one round"),
                }
            }
        }
        black_box((&leader, &helper));
        let elapsed = start.elapsed().as_secs_f64();
        if run > 0 {
            runs.push(elapsed);
        }
        result = format!("{:?}", vdaf.unshard(&(), [leader, helper], reports.len()).unwrap());
    }
    (runs, result)
}

fn bench<T: Type>(case: &str, vdaf: Prio3<T, XofTurboShake128, 32>, measurements: Vec<T::Measurement>, repeats: usize) {
    let reports = measurements
        .iter()
        .map(|m| {
            let nonce = random();
            let (public, inputs) = vdaf.shard(CTX, m, &nonce).unwrap();
            Report {
                nonce,
                public_share: public.get_encoded().unwrap(),
                input_shares: [inputs[0].get_encoded().unwrap(), inputs[1].get_encoded().unwrap()],
            }
        })
        .collect::<Vec<_>>();
    let (mut runs, result) = time(&vdaf, &reports, repeats);
    runs.sort_by(f64::total_cmp);
    let (best, median) = (runs[0], runs[runs.len() / 2]);
    println!(
        "{{\"case\": \"{case}\", \"reports\": {}, \"repeats\": {repeats}, \"best_s\": {best:.6}, \
         \"median_s\": {median:.6}, \"result\": \"{result}\"}}",
        reports.len(),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench_raw CASE REPORTS REPEATS (CASE: count, sum:MAX, sumvec:LENGTH:MAX, histogram:LENGTH)";
    assert!(args.len() == 4, "{usage}");
    let (case, n, repeats) = (&args[1], args[2].parse::<usize>().expect(usage), args[3].parse::<usize>().expect(usage));
    let parts: Vec<&str> = case.split(':').collect();
    let num = |i: usize| parts.get(i).expect(usage).parse::<u128>().expect(usage);
    match parts[0] {
        "count" => bench(case, Prio3::new_count(2).unwrap(), (0..n).map(|i| i % 2 == 0).collect(), repeats),
        "sum" => {
            let max = num(1) as u64;
            bench(case, Prio3::new_sum(2, max).unwrap(), (0..n as u64).map(|i| i % (max + 1)).collect(), repeats)
        }
        "sumvec" => {
            let (length, max) = (num(1) as usize, num(2));
            let bits = max.ilog2() as usize + 1;
            let vdaf = Prio3::new_sum_vec(2, max, length, optimal_chunk_length(length * bits)).unwrap();
            let ms = (0..n).map(|i| (0..length).map(|j| ((i + j) as u128) % (max + 1)).collect()).collect();
            bench(case, vdaf, ms, repeats)
        }
        "histogram" => {
            let length = num(1) as usize;
            let vdaf = Prio3::new_histogram(2, length, optimal_chunk_length(length)).unwrap();
            bench(case, vdaf, (0..n).map(|i| i % length).collect(), repeats)
        }
        _ => panic!("{usage}"),
    }
}
