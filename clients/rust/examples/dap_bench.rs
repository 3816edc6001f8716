//! Per-report time of a device's DAP-09 report (features `prio` and `c-api`; never run as a timed test).
//!
//! `cargo run --release --features prio --example dap_bench -- [SECONDS]`: for each case (a 16-bucket histogram, a
//! count), a device's whole report: Prio3 sharding with fresh OS randomness (the report ID, which is the nonce, and
//! the sharding randomness), each input share sealed with HPKE (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
//! AES-128-GCM, a fresh ephemeral key each) to its aggregator's config, and the report encoded: its upload body.
//!
//! * `rust`: the Rust API, `ReportBuilder::build` then `Report::encode`, the builder made once (as an app keeps it);
//! * `c`: the C interface, `ldp_dap_report`, `ldp_dap_report_bytes` and `ldp_dap_report_free` per report, the
//!   `LdpPrio3` handle made once (`ldp_prio3_new_*`) and both configs passed as their encoded bytes on every call, as
//!   a C app passes them (so each call also decodes and checks them). These are the `extern "C"` functions a C
//!   program links (`ldp_client::ffi`), called here directly.
//!
//! Each interface and case: batches of 100 reports after a warm-up batch, for about SECONDS (default 2) and at least
//! 5 batches. Prints one JSON object `{case: {"type", "measurement", "report_bytes", "rust": {..}, "c": {..}}}`,
//! each side with "us_mean", "us_median_of_batches", "us_best_batch", "calls" and "batch".

use std::time::{Duration, Instant};

use ldp_client::dap::{HpkeKeypair, HpkeSuite, ReportBuilder};
use ldp_client::ffi::{
    ldp_dap_report, ldp_dap_report_bytes, ldp_dap_report_free, ldp_prio3_free, ldp_prio3_new_count,
    ldp_prio3_new_histogram, LdpDapReport, LdpPrio3, LdpStatus,
};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type};
use ldp_client::Value;

type Failure = Box<dyn std::error::Error>;

const BATCH: usize = 100;
const TASK_ID: [u8; 32] = [7; 32];
/// A report's time (seconds since the epoch) and the task's time precision.
const TIME: u64 = 1_800_000_123;
const PRECISION: u64 = 60;

/// Per-report µs of `report` (which makes one report and returns its length), timed in batches after a warm-up.
fn time_batches(seconds: f64, mut report: impl FnMut() -> Result<usize, Failure>) -> Result<Value, Failure> {
    for _ in 0..BATCH {
        std::hint::black_box(report()?);
    }
    let mut per_batch = Vec::new();
    let start = Instant::now();
    while per_batch.len() < 5 || start.elapsed() < Duration::from_secs_f64(seconds) {
        let t0 = Instant::now();
        for _ in 0..BATCH {
            std::hint::black_box(report()?);
        }
        per_batch.push(t0.elapsed().as_secs_f64() * 1e6 / BATCH as f64);
    }
    let mean = per_batch.iter().sum::<f64>() / per_batch.len() as f64;
    per_batch.sort_by(f64::total_cmp);
    Ok(serde_json::json!({
        "us_mean": mean, "us_median_of_batches": per_batch[per_batch.len() / 2], "us_best_batch": per_batch[0],
        "calls": per_batch.len() * BATCH, "batch": BATCH,
    }))
}

fn check(status: LdpStatus, call: &str) -> Result<(), Failure> {
    if status == LdpStatus::LdpOk {
        Ok(())
    } else {
        Err(format!("{call} failed: {status:?}").into())
    }
}

/// One report through the C interface: made, its bytes read, freed; its length.
fn c_report(prio3: *const LdpPrio3, value: u64, leader: &[u8], helper: &[u8]) -> Result<usize, Failure> {
    let mut report: *mut LdpDapReport = std::ptr::null_mut();
    // SAFETY: `prio3` is a live handle; every pointer is to a live buffer of the length given beside it.
    let status = unsafe {
        ldp_dap_report(
            prio3,
            &value,
            1,
            TASK_ID.as_ptr(),
            TASK_ID.len(),
            TIME,
            PRECISION,
            leader.as_ptr(),
            leader.len(),
            helper.as_ptr(),
            helper.len(),
            &mut report,
        )
    };
    check(status, "ldp_dap_report")?;
    let (mut bytes, mut len) = (std::ptr::null(), 0usize);
    // SAFETY: `report` is the live handle just made; the out pointers are to locals.
    let status = unsafe { ldp_dap_report_bytes(report, &mut bytes, &mut len) };
    std::hint::black_box(bytes);
    // SAFETY: `report` is live and freed once.
    unsafe { ldp_dap_report_free(report) };
    check(status, "ldp_dap_report_bytes")?;
    Ok(len)
}

fn main() -> Result<(), Failure> {
    let seconds: f64 = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(2.0);
    let leader = HpkeKeypair::generate(1, HpkeSuite::DEFAULT)?;
    let helper = HpkeKeypair::generate(2, HpkeSuite::DEFAULT)?;
    let (leader_bytes, helper_bytes) = (leader.config().encode()?, helper.config().encode()?);
    let cases = [("histogram, 16 buckets", Prio3Type::histogram(16), 5u64), ("count", Prio3Type::Count, 1)];
    let mut out = serde_json::Map::new();
    for (name, typ, value) in cases {
        let measurement = match typ {
            Prio3Type::Count => Measurement::Count(value == 1),
            _ => Measurement::Histogram(usize::try_from(value)?),
        };
        let client = Prio3Client::new(typ, &TASK_ID)?;
        let builder = ReportBuilder::new(client, TASK_ID, leader.config().clone(), helper.config().clone())?
            .with_time_precision(PRECISION)?;
        let report_bytes = builder.build(&measurement, TIME)?.encode()?.len();
        let rust = time_batches(seconds, || Ok(builder.build(&measurement, TIME)?.encode()?.len()))?;

        let mut prio3: *mut LdpPrio3 = std::ptr::null_mut();
        // SAFETY: the context is TASK_ID (32 readable bytes); `prio3` is a local out pointer.
        let status = unsafe {
            match typ {
                Prio3Type::Count => ldp_prio3_new_count(TASK_ID.as_ptr(), TASK_ID.len(), &mut prio3),
                _ => ldp_prio3_new_histogram(16, 0, TASK_ID.as_ptr(), TASK_ID.len(), &mut prio3),
            }
        };
        check(status, "ldp_prio3_new_*")?;
        let c = time_batches(seconds, || {
            let len = c_report(prio3, value, &leader_bytes, &helper_bytes)?;
            if len != report_bytes {
                return Err(format!("the C report has {len} bytes, the Rust one {report_bytes}").into());
            }
            Ok(len)
        });
        // SAFETY: `prio3` is live and freed once.
        unsafe { ldp_prio3_free(prio3) };
        out.insert(
            name.to_string(),
            serde_json::json!({
                "type": format!("{typ:?}"), "measurement": value, "report_bytes": report_bytes,
                "rust": rust, "c": c?,
            }),
        );
    }
    println!("{}", Value::Object(out));
    Ok(())
}
