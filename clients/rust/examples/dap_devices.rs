//! The devices of `tests/clients/test_rust_dap_e2e.py` and `tests/clients/test_rust_poplar1_e2e.py`:
//! `dap_devices SPEC DEVICES STATES SEED METRIC=TASK...`. A task file is a Prio3 task's, or (a build with the
//! `poplar1` feature) a `poplar1` metric's Poplar1 task, whose values are strings.
//!
//! Each device `d` of the DEVICES file (a JSON list of `{"at": <Unix seconds>, "values": [[metric, value], ...]}`)
//! opens a `TelemetryClient` on its own `FileStore` folder `STATES/d<d>` with its clock fixed at `at` and the task
//! files given (`METRIC=TASK`: the metric's task file, `ldp collect task` wrote it), records its values unless that
//! folder already holds a state (a second run resumes: it only uploads what is left; a value refused for the budget
//! is counted, not an error), and uploads with no collector: each two-aggregator report to its task's leader.
//! Prints one JSON line: `recorded`, `refused` (by metric), `acknowledged`, `accepted`, `rejected`, `duplicates`,
//! `pending` (left after the upload), `spent` (each device's lifetime ε per metric, as the ledger holds it) and
//! `payloads` (by metric, the randomized payload of each report of a `two-aggregator+local` metric recorded now).
//!
//! SIMULATION: each device's noise comes from `KeyedRandomSource(SEED, "device/<d>")` so that the test's outcome is
//! fixed; a real device uses the default OS generator. The payloads are made again by a twin encoder drawing from
//! the same stream in the client's order (the client's two 32-byte secrets first, then each randomized report): the
//! measurement each sealed report carries, which the aggregators' sums must equal.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::UploadTotals;
use ldp_client::bytes::from_hex;
use ldp_client::ledger::FileStore;
use ldp_client::random::{KeyedRandomSource, RandomSource};
use ldp_client::upload::{UploadOptions, Uploader};
use ldp_client::{CollectionSpec, Encoder, EncoderOptions, Error, TelemetryClient, TrustModel, Value};
use serde_json::{json, Map};

/// One stream shared by a device's twin encoders, as the client's encoders share its source.
#[derive(Clone)]
struct Shared(Arc<Mutex<KeyedRandomSource>>);

impl RandomSource for Shared {
    fn bits(&mut self, k: u32) -> ldp_client::Result<u64> {
        self.0.lock().unwrap().bits(k)
    }
    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> ldp_client::Result<()> {
        self.0.lock().unwrap().wide_bits(k, into)
    }
    fn token_bytes(&mut self, n: usize) -> ldp_client::Result<Vec<u8>> {
        self.0.lock().unwrap().token_bytes(n)
    }
}

/// What the run did, over all devices.
#[derive(Default)]
struct Totals {
    recorded: u64,
    refused: BTreeMap<String, u64>,
    payloads: BTreeMap<String, Vec<Value>>,
    spent: Vec<Value>,
    out: Map<String, Value>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, spec_path, devices_path, states, seed, tasks @ ..] = &args[..] else {
        return Err("usage: dap_devices SPEC DEVICES STATES SEED METRIC=TASK...".into());
    };
    let spec = CollectionSpec::parse(&std::fs::read_to_string(spec_path)?)?;
    let devices: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(devices_path)?)?;
    let mut files = Vec::new();
    for t in tasks {
        let (metric, path) = t.split_once('=').ok_or("a task is METRIC=PATH")?;
        files.push((metric.to_string(), std::fs::read_to_string(path)?));
    }
    let seed = from_hex(seed)?;
    let mut totals = Totals::default();
    let mut uploads = UploadTotals::default();
    for (d, device) in devices.iter().enumerate() {
        let folder = Path::new(states).join(format!("d{d}"));
        let fresh = !folder.join("state.json").exists();
        let at = device["at"].as_f64().ok_or("a device's at is a number")?;
        let rng = KeyedRandomSource::new(&seed, format!("device/{d}").as_bytes())?;
        let mut builder = TelemetryClient::builder(spec.clone(), FileStore::open(&folder)?).clock(move || at).rng(rng);
        for (metric, text) in &files {
            builder = builder.task_json(metric, text);
        }
        let client = builder.build()?;
        if fresh {
            record(&client, &spec, device, (&seed, d), &mut totals)?;
        }
        let result = Uploader::new(UploadOptions::without_collector()).upload(&client)?;
        uploads.add(result, client.pending()?);
        let spent: Map<String, Value> = spec
            .metrics
            .iter()
            .map(|m| Ok((m.name.clone(), json!(client.spent(Some(&m.name), true)?.epsilon))))
            .collect::<ldp_client::Result<_>>()?;
        totals.spent.push(Value::Object(spent));
    }
    uploads.write(&mut totals.out);
    let Totals { recorded, refused, payloads, spent, mut out } = totals;
    out.insert("recorded".into(), json!(recorded));
    out.insert("refused".into(), json!(refused));
    out.insert("payloads".into(), json!(payloads));
    out.insert("spent".into(), json!(spent));
    println!("{}", Value::Object(out));
    Ok(())
}

/// Records device `d`'s values on `client`; each randomized payload of a `two-aggregator+local` metric made again
/// by the twin encoders (`seed`'s stream of the device, after the client's two secrets).
fn record(
    client: &TelemetryClient,
    spec: &CollectionSpec,
    device: &Value,
    (seed, d): (&[u8], usize),
    totals: &mut Totals,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut stream = Shared(Arc::new(Mutex::new(KeyedRandomSource::new(seed, format!("device/{d}").as_bytes())?)));
    stream.token_bytes(32)?; // the device secret
    stream.token_bytes(32)?; // the upload salt
    let mut twins: BTreeMap<String, Encoder> = BTreeMap::new();
    for item in device["values"].as_array().ok_or("a device's values is a list")? {
        let (metric, value) = (item[0].as_str().ok_or("a metric name")?, &item[1]);
        match client.record(metric, value) {
            Ok(_) => totals.recorded += 1,
            Err(Error::BudgetExceeded { .. }) => {
                *totals.refused.entry(metric.to_string()).or_default() += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        let m = spec.metric(metric)?;
        if m.trust != TrustModel::TwoAggregatorLocal {
            continue;
        }
        if !twins.contains_key(metric) {
            let options = EncoderOptions { rng: Some(Box::new(stream.clone())), ..Default::default() };
            twins.insert(metric.to_string(), m.protocol().encoder(m.params.clone(), options)?);
        }
        let report = twins.get_mut(metric).ok_or("a twin")?.encode(value)?;
        let doc: Value = serde_json::from_str(&report.to_json())?;
        totals.payloads.entry(metric.to_string()).or_default().push(doc["payload"].clone());
    }
    Ok(())
}
