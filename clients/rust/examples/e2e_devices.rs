//! The devices of `tests/clients/test_rust_e2e.py`: `e2e_devices SPEC DEVICES STATES URL TOKEN SEED`.
//!
//! For each device `d` of the DEVICES file (a JSON list of `[metric, value]` lists), opens a `TelemetryClient` on its
//! own `FileStore` folder `STATES/d<d>`, records its values unless that folder already holds a state (a second run
//! resumes: it only uploads what is left), and uploads through the `Uploader` to URL (one collector URL, or several
//! separated by commas: the endpoint list, failed over in that order). Prints one JSON line:
//! `recorded`, `acknowledged`, `accepted`, `rejected`, `duplicates`, `pending` (left after the upload) and `spec`
//! (the spec's fingerprint).
//!
//! SIMULATION: each device's noise comes from `KeyedRandomSource(SEED, "device/<d>")` so that the test's outcome is
//! fixed; a real device uses the default OS generator.

use std::path::Path;

use ldp_client::bytes::from_hex;
use ldp_client::ledger::FileStore;
use ldp_client::random::KeyedRandomSource;
use ldp_client::upload::{UploadOptions, Uploader};
use ldp_client::{CollectionSpec, TelemetryClient, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, spec_path, devices_path, states, url, token, seed] = &args[..] else {
        return Err("usage: e2e_devices SPEC DEVICES STATES URL TOKEN SEED".into());
    };
    let spec = CollectionSpec::parse(&std::fs::read_to_string(spec_path)?)?;
    let devices: Vec<Vec<(String, Value)>> = serde_json::from_str(&std::fs::read_to_string(devices_path)?)?;
    let seed = from_hex(seed)?;
    let endpoints: Vec<&str> = url.split(',').collect();
    let mut uploader = Uploader::new(UploadOptions::new(&endpoints, token)?);
    let (mut recorded, mut acknowledged, mut accepted, mut duplicates, mut pending) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut rejected = serde_json::Map::new();
    for (d, values) in devices.iter().enumerate() {
        let folder = Path::new(states).join(format!("d{d}"));
        let fresh = !folder.join("state.json").exists();
        let rng = KeyedRandomSource::new(&seed, format!("device/{d}").as_bytes())?;
        let client = TelemetryClient::builder(spec.clone(), FileStore::open(&folder)?).rng(rng).build()?;
        if fresh {
            for (metric, value) in values {
                client.record(metric, value)?;
                recorded += 1;
            }
        }
        let result = uploader.upload(&client)?;
        acknowledged += result.acknowledged;
        accepted += result.accepted;
        duplicates += result.duplicates;
        for (reason, n) in result.rejected {
            let old = rejected.get(&reason).and_then(Value::as_u64).unwrap_or(0);
            rejected.insert(reason, Value::from(old + n));
        }
        pending += client.pending()?;
    }
    println!(
        "{}",
        serde_json::json!({"recorded": recorded, "acknowledged": acknowledged, "accepted": accepted,
                           "rejected": rejected, "duplicates": duplicates, "pending": pending,
                           "spec": spec.fingerprint()})
    );
    Ok(())
}
