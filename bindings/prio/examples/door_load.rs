//! The door's open-loop load generator (issue 86, item 3; `simulations/bench_door.py` runs it): DAP-09 uploads sent
//! at a fixed rate, whatever the answers' pace, over keep-alive connections, each request's latency counted from the
//! moment it was due (not from when a connection was free to send it: a server that falls behind is charged for the
//! wait, with no coordinated omission).
//!
//! `door_load URL_BASE TASK_ID REPORTS_FILE RATE CONNECTIONS`: the reports (the leader's chunk format: each prefixed
//! by its u32 big-endian length), sent once each, report i due at i/RATE seconds, to `URL_BASE/tasks/TASK_ID/reports`
//! as `application/dap-report`. Prints one JSON line: the reports sent, the answers by status, the seconds from the
//! first due time to the last answer, latency percentiles (ms), and this program's CPU seconds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;

struct Plan {
    reports: Vec<Bytes>,
    rate: f64,
    start: Instant,
    next: AtomicUsize,
    host: String,
    path: String,
}

#[derive(Default)]
struct Outcome {
    latencies: Vec<f64>,
    statuses: std::collections::BTreeMap<u16, usize>,
    failed: usize,
}

fn read_reports(path: &str) -> Vec<Bytes> {
    let data = std::fs::read(path).expect("the reports file");
    let (mut out, mut pos) = (Vec::new(), 0);
    while pos + 4 <= data.len() {
        let n = u32::from_be_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        out.push(Bytes::copy_from_slice(&data[pos + 4..pos + 4 + n]));
        pos += 4 + n;
    }
    out
}

async fn worker(plan: Arc<Plan>, addr: String, outcome: Arc<Mutex<Outcome>>) {
    let mut sender = None;
    loop {
        let i = plan.next.fetch_add(1, Ordering::Relaxed);
        if i >= plan.reports.len() {
            return;
        }
        let due = plan.start + Duration::from_secs_f64(i as f64 / plan.rate);
        tokio::time::sleep_until(due.into()).await;
        if sender.is_none() {
            let Ok(stream) = tokio::net::TcpStream::connect(&addr).await else {
                outcome.lock().unwrap().failed += 1;
                continue;
            };
            let _ = stream.set_nodelay(true);
            let Ok((s, conn)) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await else {
                outcome.lock().unwrap().failed += 1;
                continue;
            };
            tokio::spawn(conn);
            sender = Some(s);
        }
        let req = Request::put(&plan.path)
            .header("host", &plan.host)
            .header("content-type", "application/dap-report")
            .body(Full::new(plan.reports[i].clone()))
            .unwrap();
        let result = sender.as_mut().unwrap().send_request(req).await;
        let mut out = outcome.lock().unwrap();
        match result {
            Ok(resp) => {
                let status = resp.status().as_u16();
                drop(out);
                let _ = resp.into_body().collect().await;
                let mut out = outcome.lock().unwrap();
                out.latencies.push(due.elapsed().as_secs_f64() * 1000.0);
                *out.statuses.entry(status).or_default() += 1;
            }
            Err(_) => {
                out.failed += 1;
                sender = None;
            }
        }
    }
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|x| x.parse::<f64>().ok()).sum());
    ticks / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        eprintln!("usage: door_load URL_BASE TASK_ID REPORTS_FILE RATE CONNECTIONS");
        std::process::exit(2);
    }
    let base = args[1].trim_end_matches('/').strip_prefix("http://").expect("an http:// URL").to_owned();
    let reports = read_reports(&args[3]);
    let rate: f64 = args[4].parse().expect("RATE");
    let connections: usize = args[5].parse().expect("CONNECTIONS");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let outcome = Arc::new(Mutex::new(Outcome::default()));
    let sent = reports.len();
    let began = runtime.block_on(async {
        let plan = Arc::new(Plan {
            reports,
            rate,
            start: Instant::now() + Duration::from_millis(200),
            next: AtomicUsize::new(0),
            host: base.clone(),
            path: format!("/tasks/{}/reports", args[2]),
        });
        let tasks: Vec<_> =
            (0..connections).map(|_| tokio::spawn(worker(plan.clone(), base.clone(), outcome.clone()))).collect();
        for t in tasks {
            let _ = t.await;
        }
        plan.start
    });
    let seconds = began.elapsed().as_secs_f64();
    let mut out = outcome.lock().unwrap();
    out.latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |q: f64| -> f64 {
        let l = &out.latencies;
        if l.is_empty() {
            return f64::NAN;
        }
        l[((q * l.len() as f64).ceil() as usize).clamp(1, l.len()) - 1]
    };
    let statuses: Vec<String> = out.statuses.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    println!(
        "{{\"sent\": {sent}, \"answered\": {}, \"failed\": {}, \"statuses\": {{{}}}, \"seconds\": {seconds:.4}, \
         \"rate\": {rate}, \"p50_ms\": {:.3}, \"p90_ms\": {:.3}, \"p99_ms\": {:.3}, \"max_ms\": {:.3}, \
         \"cpu_seconds\": {:.3}}}",
        out.latencies.len(),
        out.failed,
        statuses.join(", "),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0),
        cpu_seconds()
    );
}
