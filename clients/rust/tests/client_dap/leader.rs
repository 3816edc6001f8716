//! Two-aggregator reports uploaded to a leader (feature `uploader`): a local HTTP server on 127.0.0.1 answering as
//! scripted (nothing mocked) stands for the leader, and for the collector when a test needs one. Every answer of
//! Python's `dap_upload.py` is tried: stored, replayed, refused for good (ldp's codes and DAP's problem types),
//! too early, retried (no answer, 5xx, 429 with `Retry-After`) and refused for the call (a wrong task or URL); the
//! lanes' order; no collector; a task not given; and the C interface.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Mutex;
use std::thread;

use ldp_client::upload::{Stopped, UploadOptions, UploadResult, Uploader};

use super::*;

/// What the leader does with one `PUT`: answer with a status, headers and a body, or read it and close.
#[derive(Clone)]
pub(super) enum Act {
    Reply(u16, Vec<(&'static str, String)>, String),
    Drop,
}

fn problem(status: u16, doc: Value) -> Act {
    Act::Reply(status, vec![("Content-Type", "application/problem+json".into())], doc.to_string())
}

fn dap_type(name: &str) -> Value {
    json!({"type": format!("urn:ietf:params:ppm:dap:error:{name}"), "title": "refused"})
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub(super) struct Seen {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

pub(super) struct Server {
    pub(super) base: String,
    pub(super) seen: Arc<Mutex<Vec<Seen>>>,
}

/// A server answering each `PUT` by `script` (then 201), and each `POST` (a collector's batch, sent without gzip)
/// with the sane answer counting its lines.
pub(super) fn serve(script: Vec<Act>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    thread::spawn(move || {
        let mut script = script.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some(request) = read(&mut stream) else { continue };
            s2.lock().unwrap().push(request.clone());
            if request.method == "POST" {
                let n = request.body.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
                let id = request.header("ldp-batch-id").unwrap_or_default();
                let sane = format!(r#"{{"batch_id":"{id}","accepted":{n},"rejected":{{}},"lines":{n}}}"#);
                respond(&mut stream, 200, &[], &sane);
                continue;
            }
            match script.next().unwrap_or(Act::Reply(201, vec![], String::new())) {
                Act::Reply(status, headers, body) => respond(&mut stream, status, &headers, &body),
                Act::Drop => drop(stream),
            }
        }
    });
    Server { base, seen }
}

fn read(stream: &mut TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let (method, path) = (words.next()?.to_string(), words.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let Some((k, v)) = line.trim_end().split_once(':') else { break };
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").map_or(Some(0), |(_, v)| v.parse().ok())?;
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Seen { method, path, headers, body })
}

fn respond(stream: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &str) {
    let mut out = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    let _ = stream.write_all(out.as_bytes());
}

/// A spec of one two-aggregator metric `m` (up to 100 reports a window) and one local metric `plain`.
fn upload_spec() -> Value {
    json!({"spec_version": 1, "name": "dap-upload", "window_seconds": DAY,
        "budget": {"per_window": 1000.0, "lifetime": 1000.0}, "upload": {"min_interval_seconds": 0},
        "metrics": {
            "m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 3},
                  "budget": {"per_report": 1.0, "per_window": 100.0}, "trust": "two-aggregator"},
            "plain": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 3}, "budget": {"per_report": 1.0}}}})
}

/// A client of `upload_spec()` whose task's leader is `server`, having recorded `metrics` (values 0, 1, 2, …).
fn device(server: &Server, metrics: &[&str]) -> TelemetryClient {
    let doc = upload_spec();
    let task = task_doc_of(&doc, "m", 18, &server.base, &keys());
    let c = TelemetryClient::builder(CollectionSpec::from_value(&doc, "spec").unwrap(), MemoryStore::new())
        .clock(|| NOW)
        .task_json("m", &task.to_string())
        .build()
        .unwrap();
    for (i, m) in metrics.iter().enumerate() {
        c.record(m, &json!(i % 3)).unwrap();
    }
    c
}

/// Options without a collector, their waits recorded in `sleeps`.
fn options(sleeps: &Arc<Mutex<Vec<Duration>>>, attempts: u32) -> UploadOptions {
    let mut o = UploadOptions::without_collector();
    let s = sleeps.clone();
    o.sleep = Box::new(move |d| s.lock().unwrap().push(d));
    o.jitter = Box::new(|| 0.5);
    o.timeout = Duration::from_secs(5);
    o.max_attempts = attempts;
    o
}

fn upload(c: &TelemetryClient, sleeps: &Arc<Mutex<Vec<Duration>>>) -> ldp_client::Result<UploadResult> {
    Uploader::new(options(sleeps, 3)).upload(c)
}

#[test]
fn each_report_goes_alone_to_its_leader_as_dap_says_and_is_acknowledged() {
    let server = serve(vec![]);
    let c = device(&server, &["m", "m", "m"]);
    let r = upload(&c, &Arc::default()).unwrap();
    assert_eq!((r.batches, r.acknowledged, r.accepted, r.duplicates), (3, 3, 3, 0));
    assert_eq!((r.stopped, c.pending().unwrap(), c.counts().unwrap()["m"].uploaded), (Stopped::Empty, 0, 3));
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    for s in seen.iter() {
        assert_eq!((s.method.as_str(), s.path.clone()), ("PUT", format!("/tasks/{}/reports", b64(&[18; 32]))));
        assert_eq!(s.header("content-type"), Some("application/dap-report"));
        assert_eq!(s.header("authorization"), None, "a leader takes reports without a token");
        let report = Report::decode(&s.body).unwrap();
        assert_eq!(report.metadata.time, 1_699_999_200);
    }
    let ids: std::collections::HashSet<[u8; 16]> =
        seen.iter().map(|s| Report::decode(&s.body).unwrap().metadata.report_id).collect();
    assert_eq!(ids.len(), 3, "each report its own ID");
}

/// What one first answer of the leader does to one report: the call's result or error, what stays pending, the
/// waits.
#[test]
fn every_answer_of_the_leader_does_what_pythons_client_does() {
    let too_early = problem(400, dap_type("reportTooEarly"));
    let retry_after = Act::Reply(429, vec![("Retry-After", "7".into())], String::new());
    // (first answers, accepted, duplicates, rejected, pending after, waits)
    type Case = (Vec<Act>, u64, u64, Vec<(&'static str, u64)>, u64, Vec<Duration>);
    let half = Duration::from_millis(500);
    let cases: Vec<(&str, Case)> = vec![
        ("201", (vec![], 1, 0, vec![], 0, vec![])),
        ("replayed", (vec![problem(409, json!({"code": "report_replayed"}))], 0, 1, vec![], 0, vec![])),
        (
            "too late",
            (vec![problem(400, json!({"code": "report_too_late"}))], 0, 0, vec![("report_too_late", 1)], 0, vec![]),
        ),
        (
            "DAP rejected",
            (vec![problem(400, dap_type("reportRejected"))], 0, 0, vec![("report_rejected", 1)], 0, vec![]),
        ),
        (
            "DAP outdated",
            (vec![problem(400, dap_type("outdatedConfig"))], 0, 0, vec![("outdated_config", 1)], 0, vec![]),
        ),
        (
            "hpke",
            (
                vec![problem(400, json!({"code": "hpke_decrypt_error"}))],
                0,
                0,
                vec![("hpke_decrypt_error", 1)],
                0,
                vec![],
            ),
        ),
        ("5xx", (vec![problem(500, json!({}))], 1, 0, vec![], 0, vec![half])),
        ("no answer", (vec![Act::Drop], 1, 0, vec![], 0, vec![half])),
        ("408", (vec![problem(408, json!({}))], 1, 0, vec![], 0, vec![half])),
        ("429", (vec![retry_after], 1, 0, vec![], 0, vec![Duration::from_secs(7)])),
        ("too early", (vec![too_early], 0, 0, vec![], 1, vec![])),
    ];
    for (name, (script, accepted, duplicates, rejected, pending, waits)) in cases {
        let server = serve(script);
        let c = device(&server, &["m"]);
        let sleeps = Arc::new(Mutex::new(Vec::new()));
        let r = upload(&c, &sleeps).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rejected: Vec<(String, u64)> = rejected.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
        assert_eq!((r.accepted, r.duplicates, r.rejected), (accepted, duplicates, rejected), "{name}");
        assert_eq!((c.pending().unwrap(), sleeps.lock().unwrap().clone()), (pending, waits), "{name}");
        let stopped = if pending > 0 { Stopped::Interval } else { Stopped::Empty };
        assert_eq!((r.stopped, r.acknowledged), (stopped, 1 - pending), "{name}");
        if pending > 0 {
            // Kept for a later call, which sends it.
            assert_eq!(upload(&c, &sleeps).unwrap().accepted, 1, "{name}");
            assert_eq!(c.pending().unwrap(), 0, "{name}");
        }
    }
}

#[test]
fn an_answer_no_retry_changes_stops_the_call_and_keeps_the_report() {
    let cases = [
        (problem(404, json!({"code": "unrecognized_task"})), 404, "unrecognized_task"),
        (Act::Reply(401, vec![], String::new()), 401, "HTTP 401"),
        (problem(400, json!({"code": "not_a_known_code"})), 400, "not_a_known_code"),
        (problem(409, json!({})), 409, "HTTP 409"),
        (Act::Reply(301, vec![("Location", "http://127.0.0.1:9/".into())], String::new()), 301, "HTTP 301"),
    ];
    for (act, status, reason) in cases {
        let server = serve(vec![act]);
        let c = device(&server, &["m", "m"]);
        let e = upload(&c, &Arc::default()).unwrap_err();
        assert!(
            matches!(&e, Error::UploadRejected { status: s, message } if *s == status && message.contains(reason)),
            "{e:?}"
        );
        assert_eq!((c.pending().unwrap(), server.seen.lock().unwrap().len()), (2, 1), "{reason}");
    }
    // Not delivered in max_attempts requests: a transport error, the report kept.
    let server = serve(vec![problem(503, json!({})), problem(503, json!({})), problem(503, json!({}))]);
    let c = device(&server, &["m"]);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let e = upload(&c, &sleeps).unwrap_err();
    assert!(matches!(&e, Error::Transport(m) if m.contains("after 3 attempt(s) (last: HTTP 503)")), "{e:?}");
    assert_eq!((c.pending().unwrap(), sleeps.lock().unwrap().len()), (1, 2));
}

#[test]
fn the_lanes_send_in_recording_order_to_the_collector_and_the_leader() {
    let server = serve(vec![]);
    let c = device(&server, &["plain", "m", "plain", "plain", "m"]);
    let mut o = UploadOptions::new(&[format!("{}/v1/reports", server.base)], "token").unwrap();
    o.gzip = false;
    let r = Uploader::new(o).upload(&c).unwrap();
    assert_eq!((r.batches, r.acknowledged, r.accepted, r.stopped), (4, 5, 5, Stopped::Empty));
    let seen = server.seen.lock().unwrap();
    let order: Vec<(&str, usize)> = seen
        .iter()
        .map(|s| (s.method.as_str(), if s.method == "POST" { s.body.split(|b| *b == b'\n').count() - 1 } else { 1 }))
        .collect();
    assert_eq!(order, vec![("POST", 1), ("PUT", 1), ("POST", 2), ("PUT", 1)]);
    assert_eq!(seen[0].header("authorization"), Some("Bearer token"));
}

#[test]
fn without_a_collector_a_report_for_it_refuses_the_call_before_anything_is_sent() {
    let server = serve(vec![]);
    let c = device(&server, &["m", "plain"]);
    let e = upload(&c, &Arc::default()).unwrap_err();
    assert!(matches!(&e, Error::Value(m) if m.contains("reports for the collector")), "{e:?}");
    assert_eq!((c.pending().unwrap(), server.seen.lock().unwrap().len()), (2, 0));
}

#[test]
fn a_report_whose_task_is_not_given_waits_for_a_client_that_has_it() {
    let server = serve(vec![]);
    let dir = std::env::temp_dir().join(format!("ldp-dap-no-task-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let doc = upload_spec();
    let spec = || CollectionSpec::from_value(&doc, "spec").unwrap();
    let task = task_doc_of(&doc, "m", 8, &server.base, &keys()).to_string();
    let with = TelemetryClient::builder(spec(), FileStore::open(&dir).unwrap()).task_json("m", &task).build().unwrap();
    with.record("m", &json!(1)).unwrap();
    let without = TelemetryClient::builder(spec(), FileStore::open(&dir).unwrap()).build().unwrap();
    let r = upload(&without, &Arc::default()).unwrap();
    assert_eq!((r.acknowledged, r.stopped, without.pending().unwrap()), (0, Stopped::Interval, 1));
    assert_eq!(upload(&with, &Arc::default()).unwrap().accepted, 1);
    assert_eq!(server.seen.lock().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "c-api")]
#[test]
fn the_c_interface_gives_a_task_records_and_uploads_without_a_collector() {
    use ldp_client::ffi::*;
    let server = serve(vec![]);
    let doc = upload_spec();
    let task = task_doc_of(&doc, "m", 18, &server.base, &keys()).to_string();
    let text = doc.to_string();
    unsafe {
        let mut spec = std::ptr::null_mut();
        assert_eq!(ldp_spec_parse(text.as_ptr(), text.len(), &mut spec), LdpStatus::LdpOk);
        let mut client = std::ptr::null_mut();
        assert_eq!(ldp_client_open_memory(spec, std::ptr::null(), &mut client), LdpStatus::LdpOk);
        let metric = std::ffi::CString::new("m").unwrap();
        let mut id = 0u64;
        assert_eq!(ldp_client_record_int(client, metric.as_ptr(), 1, &mut id), LdpStatus::LdpValueError);
        assert_eq!(ldp_client_add_task(client, task.as_ptr(), task.len()), LdpStatus::LdpOk);
        assert_eq!(ldp_client_record_int(client, metric.as_ptr(), 1, &mut id), LdpStatus::LdpOk);
        let bad = task.replace("\"m\"", "\"plain\"");
        assert_eq!(ldp_client_add_task(client, bad.as_ptr(), bad.len()), LdpStatus::LdpValueError);
        let mut result = LdpUploadResult::default();
        let status = ldp_client_upload(client, std::ptr::null(), 0, std::ptr::null(), 5.0, 0.0, &mut result);
        assert_eq!((status, result.accepted, result.acknowledged, result.stopped), (LdpStatus::LdpOk, 1, 1, 0));
        ldp_client_free(client);
        ldp_spec_free(spec);
    }
    assert_eq!(server.seen.lock().unwrap()[0].method, "PUT");
}
