//! Per-report `encode` time of the Rust client (run by `simulations/bench_rust.py`, never as a timed test).
//!
//! `cargo run --release --example encode_bench -- CASES [CALLS]`: CASES is a JSON object
//! `{case: {"protocol", "params", "value"}}`. For each case, one encoder from the OS generator encodes the value
//! CALLS times (after a warm-up) in batches of 1,000, each report turned into its JSON text as an upload needs;
//! prints one JSON object `{case: {"us_mean", "us_median_of_batches", "us_best_batch", "calls", "batch"}}`.

use std::time::Instant;

use ldp_client::{protocols, EncoderOptions, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let cases: Value = serde_json::from_str(args.get(1).ok_or("usage: encode_bench CASES [CALLS]")?)?;
    let calls: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(200_000);
    let batch = 1_000;
    let mut out = serde_json::Map::new();
    for (name, case) in cases.as_object().ok_or("CASES is an object")? {
        let protocol = protocols::get(case["protocol"].as_str().ok_or("protocol")?).ok_or("unknown protocol")?;
        let params = protocol.params(&case["params"])?;
        let options = EncoderOptions {
            secret: protocol.needs_secret.then(|| (0..32).collect()),
            cohort: (protocol.assigned_cohorts(params.as_ref()) > 0).then_some(0),
            ..Default::default()
        };
        let mut encoder = protocol.encoder(params, options)?;
        let value = &case["value"];
        let mut sink = 0usize;
        for _ in 0..batch {
            sink += encoder.encode(value)?.to_json().len();
        }
        let mut per_batch = Vec::with_capacity(calls / batch);
        for _ in 0..calls / batch {
            let t0 = Instant::now();
            for _ in 0..batch {
                sink += encoder.encode(value)?.to_json().len();
            }
            per_batch.push(t0.elapsed().as_secs_f64() * 1e6 / batch as f64);
        }
        let mean = per_batch.iter().sum::<f64>() / per_batch.len() as f64;
        per_batch.sort_by(f64::total_cmp);
        out.insert(
            name.clone(),
            serde_json::json!({
                "us_mean": mean, "us_median_of_batches": per_batch[per_batch.len() / 2],
                "us_best_batch": per_batch[0], "calls": per_batch.len() * batch, "batch": batch, "check": sink > 0,
            }),
        );
    }
    println!("{}", Value::Object(out));
    Ok(())
}
