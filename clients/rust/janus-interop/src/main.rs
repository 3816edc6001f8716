//! `janus-interop`: Divvi Up's published DAP client and collector (`janus_client` and `janus_collector` 0.7.145,
//! VDAF-08 through `prio` 0.16.8), used as a new user would, against `ldp`'s aggregators (issue 85, item 3).
//!
//! ```text
//! janus-interop upload --task FILE (--values JSON | --values-file FILE) [--time SECONDS] [--clients N]
//! janus-interop collect --task FILE --collector-key FILE --token-file FILE --window START
//! ```
//!
//! Both read an `ldp-task/1` file (`ldp collect task --vdaf 08`): the task ID, the Prio3 type and its parameters,
//! `time_precision`, `window_seconds` and the two aggregators' URLs. `upload` builds a `janus_client::Client`
//! (which fetches each aggregator's HPKE config from its `GET /hpke_config?task_id=…`) and uploads each value of
//! the JSON array (a Count's 0/1 or true/false, a Sum's integer, a SumVec's array of integers, a Histogram's bucket
//! index) with `upload_with_time` at `--time` (default: now; janus_client rounds it down to the time precision),
//! split over `--clients` clients uploading at once (default 8). It prints `{"uploaded": N}`. `collect` builds a
//! `janus_collector::Collector` from the collector's `ldp collect keygen` key file (its DAP `HpkeConfig` and
//! private key, base64url) and the token file, collects the time interval `[START, START + window_seconds)` and
//! prints `{"report_count": N, "interval": [START, DURATION], "result": R}`, R the aggregate (an integer, or an
//! array of integers). Errors go to stderr, with exit status 1 (2 for bad arguments); an aggregator's refusal with
//! its problem type as janus_core read it (the URI, and the DAP problem type it recognized).

use std::process::ExitCode;
use std::str::FromStr;
use std::time::Duration as StdDuration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use janus_collector::{AuthenticationToken, Collector, ExponentialBackoff};
use janus_core::hpke::{HpkeKeypair, HpkePrivateKey};
use janus_core::http::HttpErrorResponse;
use janus_messages::{Duration, HpkeConfig, Interval, Query, TaskId, Time};
use prio::codec::Decode;
use prio::vdaf;
use prio::vdaf::prio3::{optimal_chunk_length, Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};
use serde_json::Value;
use url::Url;

const USAGE: &str = "usage:
  janus-interop upload --task FILE (--values JSON | --values-file FILE) [--time SECONDS] [--clients N]
  janus-interop collect --task FILE --collector-key FILE --token-file FILE --window START";

type Error = Box<dyn std::error::Error + Send + Sync>;

fn fail<T>(message: impl Into<String>) -> Result<T, Error> {
    Err(message.into().into())
}

/// The Prio3 type of a task, with VDAF-08's parameters.
#[derive(Debug, Clone, Copy)]
enum Prio3Type {
    Count,
    Sum { bits: usize },
    SumVec { bits: usize, length: usize, chunk_length: usize },
    Histogram { length: usize, chunk_length: usize },
}

/// What the program takes from an `ldp-task/1` file.
#[derive(Debug)]
struct Task {
    id: TaskId,
    vdaf: Prio3Type,
    window_seconds: u64,
    time_precision: u64,
    leader: Url,
    helper: Url,
}

fn field_u64(object: &Value, key: &str, what: &str) -> Result<u64, Error> {
    match object.get(key).and_then(Value::as_u64) {
        Some(value) => Ok(value),
        None => fail(format!("{what}: `{key}` must be a non-negative integer")),
    }
}

fn field_str<'a>(object: &'a Value, key: &str, what: &str) -> Result<&'a str, Error> {
    match object.get(key).and_then(Value::as_str) {
        Some(value) => Ok(value),
        None => fail(format!("{what}: `{key}` must be a string")),
    }
}

/// The bit length of VDAF-08's Sum and SumVec, whose bound is `2^bits - 1`.
fn bits(max_measurement: u64) -> Result<usize, Error> {
    if max_measurement == 0 || max_measurement & max_measurement.wrapping_add(1) != 0 {
        return fail(format!(
            "VDAF-08 bounds a sum by a bit length: max_measurement must be 2^bits - 1, got {max_measurement}"
        ));
    }
    Ok((u64::BITS - max_measurement.leading_zeros()) as usize)
}

impl Task {
    fn load(path: &str) -> Result<Task, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        let data: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
        if data.get("format").and_then(Value::as_str) != Some("ldp-task/1") {
            return fail(format!("{path}: not an ldp-task/1 file"));
        }
        let vdaf = data.get("vdaf").ok_or_else(|| format!("{path}: no `vdaf` object"))?;
        let what = format!("{path}: vdaf");
        let draft = vdaf.get("draft").and_then(Value::as_u64).unwrap_or(18);
        if draft != 8 {
            return fail(format!("{path}: a task of VDAF draft {draft}; janus_client and janus_collector 0.7 speak VDAF-08 only (ldp collect task --vdaf 08)"));
        }
        let length = || field_u64(vdaf, "length", &what).map(|n| n as usize);
        let chunk = |measurement_length: usize| match vdaf.get("chunk_length") {
            None => Ok(optimal_chunk_length(measurement_length)),
            Some(_) => field_u64(vdaf, "chunk_length", &what).map(|n| n as usize),
        };
        let prio3 = match field_str(vdaf, "type", &what)? {
            "Prio3Count" => Prio3Type::Count,
            "Prio3Sum" => Prio3Type::Sum { bits: bits(field_u64(vdaf, "max_measurement", &what)?)? },
            "Prio3SumVec" => {
                let (bits, length) = (bits(field_u64(vdaf, "max_measurement", &what)?)?, length()?);
                Prio3Type::SumVec { bits, length, chunk_length: chunk(bits * length)? }
            }
            "Prio3Histogram" => {
                let length = length()?;
                Prio3Type::Histogram { length, chunk_length: chunk(length)? }
            }
            other => return fail(format!("{what}: unknown type {other:?}")),
        };
        let url = |key: &str| -> Result<Url, Error> {
            Ok(Url::parse(field_str(&data, key, path)?).map_err(|e| format!("{path}: {key}: {e}"))?)
        };
        Ok(Task {
            id: TaskId::from_str(field_str(&data, "task_id", path)?).map_err(|e| format!("{path}: task_id: {e}"))?,
            vdaf: prio3,
            window_seconds: field_u64(&data, "window_seconds", path)?,
            time_precision: data.get("time_precision").map_or(Ok(1), |_| field_u64(&data, "time_precision", path))?,
            leader: url("leader_url")?,
            helper: url("helper_url")?,
        })
    }
}

/// An aggregator's refusal as janus_core read it: its status, title and detail, its problem type's URI, and the DAP
/// problem type janus_core recognized in it (none: not one of DAP's).
fn problem(response: &HttpErrorResponse) -> String {
    format!(
        "{response} (type {}; DAP problem type {})",
        response.type_uri().unwrap_or("none"),
        response.dap_problem_type().map_or("none".to_string(), |t| format!("{t:?}"))
    )
}

// -- upload ---------------------------------------------------------------------------------------------------------

fn count_measurement(value: &Value) -> Result<bool, Error> {
    match value {
        Value::Bool(b) => Ok(*b),
        _ => match value.as_u64() {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => fail(format!("not a Prio3Count measurement (0, 1, false or true): {value}")),
        },
    }
}

fn integer(value: &Value, what: &str) -> Result<u64, Error> {
    value.as_u64().ok_or_else(|| format!("not a {what} measurement (an integer): {value}").into())
}

fn integers(value: &Value) -> Result<Vec<u128>, Error> {
    match value.as_array() {
        Some(items) => items.iter().map(|v| integer(v, "Prio3SumVec entry").map(u128::from)).collect(),
        None => fail(format!("not a Prio3SumVec measurement (an array of integers): {value}")),
    }
}

async fn upload<V>(
    task: &Task,
    vdaf: V,
    measurements: Vec<V::Measurement>,
    time: Time,
    clients: usize,
) -> Result<usize, Error>
where
    V: vdaf::Client<16> + Clone + Send + Sync + 'static,
    V::Measurement: Send + Sync + 'static,
{
    let total = measurements.len();
    let mut parts: Vec<Vec<V::Measurement>> = (0..clients.max(1)).map(|_| Vec::new()).collect();
    let parts_len = parts.len();
    for (i, m) in measurements.into_iter().enumerate() {
        parts[i % parts_len].push(m);
    }
    let mut set = tokio::task::JoinSet::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        let builder = janus_client::Client::builder(
            task.id,
            task.leader.clone(),
            task.helper.clone(),
            Duration::from_seconds(task.time_precision),
            vdaf.clone(),
        );
        set.spawn(async move {
            // One client per part: a janus_client::Client uploads one report at a time (it holds its HPKE configs'
            // lock through an upload), so the parts go at once through clients of their own.
            let client = builder.build().await?;
            for measurement in &part {
                client.upload_with_time(measurement, time).await?;
            }
            Ok::<usize, janus_client::Error>(part.len())
        });
    }
    let mut uploaded = 0;
    while let Some(joined) = set.join_next().await {
        uploaded += joined.map_err(|e| format!("an upload task failed: {e}"))?.map_err(|e| match e {
            janus_client::Error::Http(response) => format!("upload: {}", problem(&response)),
            e => format!("upload: {e}"),
        })?;
    }
    assert_eq!(uploaded, total);
    Ok(uploaded)
}

async fn run_upload(args: &Args) -> Result<String, Error> {
    let task = Task::load(args.required("--task")?)?;
    let values: Value = match (args.get("--values"), args.get("--values-file")) {
        (Some(text), None) => serde_json::from_str(text).map_err(|e| format!("--values: {e}"))?,
        (None, Some(path)) => serde_json::from_str(&std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?)
            .map_err(|e| format!("{path}: {e}"))?,
        _ => return fail("upload takes one of --values JSON and --values-file FILE"),
    };
    let values = values.as_array().ok_or("the values must be a JSON array")?;
    let time = match args.get("--time") {
        Some(text) => Time::from_seconds_since_epoch(text.parse().map_err(|e| format!("--time {text}: {e}"))?),
        None => Time::try_from(std::time::SystemTime::now())?,
    };
    let clients = match args.get("--clients") {
        Some(text) => text.parse().map_err(|e| format!("--clients {text}: {e}"))?,
        None => 8,
    };
    let uploaded = match task.vdaf {
        Prio3Type::Count => {
            let m = values.iter().map(count_measurement).collect::<Result<_, _>>()?;
            upload(&task, Prio3Count::new_count(2)?, m, time, clients).await?
        }
        Prio3Type::Sum { bits } => {
            let m = values.iter().map(|v| integer(v, "Prio3Sum").map(u128::from)).collect::<Result<_, _>>()?;
            upload(&task, Prio3Sum::new_sum(2, bits)?, m, time, clients).await?
        }
        Prio3Type::SumVec { bits, length, chunk_length } => {
            let m = values.iter().map(integers).collect::<Result<_, _>>()?;
            upload(&task, Prio3SumVec::new_sum_vec(2, bits, length, chunk_length)?, m, time, clients).await?
        }
        Prio3Type::Histogram { length, chunk_length } => {
            let m =
                values.iter().map(|v| integer(v, "Prio3Histogram").map(|n| n as usize)).collect::<Result<_, _>>()?;
            upload(&task, Prio3Histogram::new_histogram(2, length, chunk_length)?, m, time, clients).await?
        }
    };
    Ok(format!("{{\"uploaded\": {uploaded}}}"))
}

// -- collect --------------------------------------------------------------------------------------------------------

/// An aggregate result as JSON.
trait JsonResult {
    fn json(&self) -> String;
}

impl JsonResult for u64 {
    fn json(&self) -> String {
        self.to_string()
    }
}

impl JsonResult for u128 {
    fn json(&self) -> String {
        self.to_string()
    }
}

impl JsonResult for Vec<u128> {
    fn json(&self) -> String {
        format!("[{}]", self.iter().map(u128::to_string).collect::<Vec<_>>().join(", "))
    }
}

/// The collector's HPKE key pair from an `ldp collect keygen` file (`ldp-hpke-key/1`: the DAP `HpkeConfig` and the
/// private key, each unpadded base64url), as janus_core's `HpkeKeypair`.
fn collector_keypair(path: &str) -> Result<HpkeKeypair, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let data: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    if data.get("format").and_then(Value::as_str) != Some("ldp-hpke-key/1") {
        return fail(format!("{path}: not an ldp-hpke-key/1 file (ldp collect keygen)"));
    }
    let bytes = |key: &str| -> Result<Vec<u8>, Error> {
        let text = field_str(&data, key, path)?;
        Ok(URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).map_err(|e| format!("{path}: {key}: {e}"))?)
    };
    let config = HpkeConfig::get_decoded(&bytes("config")?).map_err(|e| format!("{path}: config: {e}"))?;
    Ok(HpkeKeypair::new(config, HpkePrivateKey::new(bytes("private_key")?)))
}

async fn collect<V>(
    task: &Task,
    vdaf: V,
    keypair: HpkeKeypair,
    token: AuthenticationToken,
    window: u64,
) -> Result<String, Error>
where
    V: vdaf::Collector<AggregationParam = ()>,
    V::AggregateResult: JsonResult,
{
    // Poll soon and often (the default waits 15 s first): a window that has ended is released at the first poll
    // or within seconds.
    let poll = ExponentialBackoff {
        initial_interval: StdDuration::from_millis(250),
        max_interval: StdDuration::from_secs(5),
        multiplier: 2.0,
        max_elapsed_time: Some(StdDuration::from_secs(300)),
        ..Default::default()
    };
    let collector = Collector::builder(task.id, task.leader.clone(), token, keypair, vdaf)
        .with_collect_poll_backoff(poll)
        .build()?;
    let interval = Interval::new(Time::from_seconds_since_epoch(window), Duration::from_seconds(task.window_seconds))?;
    let collection = collector.collect(Query::new_time_interval(interval), &()).await.map_err(|e| match e {
        janus_collector::Error::Http(response) => format!("collect: {}", problem(&response)),
        e => format!("collect: {e}"),
    })?;
    let (start, duration) = collection.interval();
    Ok(format!(
        "{{\"report_count\": {}, \"interval\": [{}, {}], \"result\": {}}}",
        collection.report_count(),
        start.timestamp(),
        duration.num_seconds(),
        collection.aggregate_result().json()
    ))
}

async fn run_collect(args: &Args) -> Result<String, Error> {
    let task = Task::load(args.required("--task")?)?;
    let keypair = collector_keypair(args.required("--collector-key")?)?;
    let token_path = args.required("--token-file")?;
    let token_text = std::fs::read_to_string(token_path).map_err(|e| format!("{token_path}: {e}"))?;
    let token = AuthenticationToken::new_bearer_token_from_string(token_text.trim())
        .map_err(|e| format!("{token_path}: {e}"))?;
    let window_text = args.required("--window")?;
    let window: u64 = window_text.parse().map_err(|e| format!("--window {window_text}: {e}"))?;
    if task.window_seconds == 0 || !window.is_multiple_of(task.window_seconds) {
        return fail(format!("--window {window} is not the start of a window of {} s", task.window_seconds));
    }
    match task.vdaf {
        Prio3Type::Count => collect(&task, Prio3Count::new_count(2)?, keypair, token, window).await,
        Prio3Type::Sum { bits } => collect(&task, Prio3Sum::new_sum(2, bits)?, keypair, token, window).await,
        Prio3Type::SumVec { bits, length, chunk_length } => {
            collect(&task, Prio3SumVec::new_sum_vec(2, bits, length, chunk_length)?, keypair, token, window).await
        }
        Prio3Type::Histogram { length, chunk_length } => {
            collect(&task, Prio3Histogram::new_histogram(2, length, chunk_length)?, keypair, token, window).await
        }
    }
}

// -- arguments ------------------------------------------------------------------------------------------------------

/// `--name value` pairs.
struct Args(Vec<(String, String)>);

impl Args {
    fn parse(items: &[String], known: &[&str]) -> Result<Args, String> {
        let mut out = Vec::new();
        let mut rest = items.iter();
        while let Some(name) = rest.next() {
            if !known.contains(&name.as_str()) {
                return Err(format!("unknown argument {name:?}"));
            }
            if out.iter().any(|(n, _)| n == name) {
                return Err(format!("{name} given twice"));
            }
            let value = rest.next().ok_or_else(|| format!("{name} needs a value"))?;
            out.push((name.clone(), value.clone()));
        }
        Ok(Args(out))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn required(&self, name: &str) -> Result<&str, Error> {
        self.get(name).ok_or_else(|| format!("{name} is required").into())
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (command, known): (&str, &[&str]) = match argv.first().map(String::as_str) {
        Some("upload") => ("upload", &["--task", "--values", "--values-file", "--time", "--clients"]),
        Some("collect") => ("collect", &["--task", "--collector-key", "--token-file", "--window"]),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let args = match Args::parse(&argv[1..], known) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("janus-interop {command}: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("janus-interop: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match command {
            "upload" => run_upload(&args).await,
            _ => run_collect(&args).await,
        }
    });
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("janus-interop {command}: {e}");
            ExitCode::FAILURE
        }
    }
}
