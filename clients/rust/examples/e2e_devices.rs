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

mod common;

use std::path::Path;

use common::UploadTotals;
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
    let mut recorded = 0u64;
    let mut totals = UploadTotals::default();
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
        totals.add(result, client.pending()?);
    }
    let mut out = serde_json::Map::new();
    out.insert("recorded".into(), Value::from(recorded));
    totals.write(&mut out);
    out.insert("spec".into(), Value::from(spec.fingerprint()));
    println!("{}", Value::Object(out));
    Ok(())
}
