//! Per-report Prio3 client sharding time (feature `prio`; never run as a timed test).
//!
//! `cargo run --release --features prio --example prio3_bench -- [SECONDS]`: for each case, one `Prio3Client` (two
//! aggregators, the recommended chunk length) shards the same measurement with fresh OS randomness, in batches of 100 after a warm-up batch,
//! for about SECONDS (default 2) per case; each shard includes drawing the nonce and randomness and encoding the
//! public share and both input shares. Prints one JSON object `{case: {"us_mean", "us_median_of_batches",
//! "us_best_batch", "calls", "batch", "public_share_bytes", "leader_share_bytes", "helper_share_bytes"}}`.

use std::time::{Duration, Instant};

use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type};
use ldp_client::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: f64 = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(2.0);
    let (sum_vec, histogram) = (Prio3Type::sum_vec, Prio3Type::histogram);
    let cases: Vec<(&str, Prio3Type, Measurement)> = vec![
        ("count", Prio3Type::Count, Measurement::Count(true)),
        ("sum, max 255", Prio3Type::Sum { max_measurement: 255 }, Measurement::Sum(100)),
        ("sum, max 2^32-1", Prio3Type::Sum { max_measurement: u64::from(u32::MAX) }, Measurement::Sum(123_456_789)),
        ("sumvec, 10 x max 255", sum_vec(255, 10), Measurement::SumVec((0..10).map(|i| i * 25).collect())),
        ("sumvec, 100 x max 65535", sum_vec(65_535, 100), Measurement::SumVec((0..100).map(|i| i * 600).collect())),
        ("histogram, 4 buckets", histogram(4), Measurement::Histogram(2)),
        ("histogram, 100 buckets", histogram(100), Measurement::Histogram(42)),
        ("histogram, 1000 buckets", histogram(1000), Measurement::Histogram(999)),
    ];
    let batch = 100;
    let mut out = serde_json::Map::new();
    for (name, typ, m) in cases {
        let client = Prio3Client::new(typ, b"ldp prio3_bench")?;
        let first = client.shard(&m)?;
        for _ in 1..batch {
            client.shard(&m)?;
        }
        let mut per_batch = Vec::new();
        let start = Instant::now();
        while per_batch.len() < 5 || start.elapsed() < Duration::from_secs_f64(seconds) {
            let t0 = Instant::now();
            for _ in 0..batch {
                std::hint::black_box(client.shard(std::hint::black_box(&m))?);
            }
            per_batch.push(t0.elapsed().as_secs_f64() * 1e6 / batch as f64);
        }
        let mean = per_batch.iter().sum::<f64>() / per_batch.len() as f64;
        per_batch.sort_by(f64::total_cmp);
        out.insert(
            name.to_string(),
            serde_json::json!({
                "type": format!("{typ:?}"),
                "us_mean": mean, "us_median_of_batches": per_batch[per_batch.len() / 2],
                "us_best_batch": per_batch[0], "calls": per_batch.len() * batch, "batch": batch,
                "public_share_bytes": first.public_share.len(), "leader_share_bytes": first.leader_share().len(),
                "helper_share_bytes": first.helper_share().len(),
            }),
        );
    }
    println!("{}", Value::Object(out));
    Ok(())
}
