//! The uploader against real local HTTP servers (scripted replies on 127.0.0.1; nothing mocked): batches, exactly
//! once across retries, failover over an endpoint list (at once, sticky, one wait per full round, what does not
//! fail over; through C too), 413, Retry-After, back-off, redirects refused, insane replies, trickling and flooding
//! replies, the call's deadline.
#![cfg(feature = "uploader")]

mod common;

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::http::read_request;
use ldp_client::upload::{Stopped, UploadOptions, Uploader};
use ldp_client::{json, Error, TelemetryClient};

/// What the server does with one request.
#[derive(Clone)]
enum Act {
    /// A sane 200 for the batch.
    Ok,
    /// A status with headers and a body.
    Reply(u16, Vec<(&'static str, String)>, String),
    /// Read the request, then close without a reply.
    Drop,
    /// Headers, then one byte of body every 200 ms.
    Trickle,
    /// A 200 streaming this many bytes of body.
    Flood(usize),
    /// Read the request, then hold the connection this long without a reply.
    Hang(Duration),
}

#[derive(Clone, Debug)]
struct Seen {
    batch_id: String,
    lines: Vec<String>,
    gzip: bool,
    auth: String,
}

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    written: Arc<Mutex<usize>>,
}

fn serve(script: Vec<Act>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/reports", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let written = Arc::new(Mutex::new(0usize));
    let (s2, w2) = (seen.clone(), written.clone());
    thread::spawn(move || {
        let mut script = script.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some((headers, body)) = read_request(&mut stream) else { continue };
            let get = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone()).unwrap_or_default();
            let gzip = get("content-encoding") == "gzip";
            let raw = if gzip {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut out).unwrap();
                out
            } else {
                body
            };
            let text = String::from_utf8(raw).unwrap();
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            let batch_id = get("ldp-batch-id");
            s2.lock().unwrap().push(Seen {
                batch_id: batch_id.clone(),
                lines: lines.clone(),
                gzip,
                auth: get("authorization"),
            });
            let n = lines.len();
            let sane = format!(r#"{{"batch_id":"{batch_id}","accepted":{n},"rejected":{{}},"lines":{n}}}"#);
            match script.next().unwrap_or(Act::Ok) {
                Act::Ok => respond(&mut stream, 200, &[], &sane),
                Act::Reply(status, headers, body) => {
                    let body = if body == "SANE" { sane } else { body };
                    respond(&mut stream, status, &headers, &body)
                }
                Act::Drop => drop(stream),
                Act::Trickle => {
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
                    for _ in 0..50 {
                        if stream.write_all(b" ").is_err() {
                            break;
                        }
                        thread::sleep(Duration::from_millis(200));
                    }
                }
                Act::Flood(total) => {
                    let _ = stream.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n").as_bytes());
                    let chunk = vec![b'x'; 64 * 1024];
                    let mut sent = 0;
                    while sent < total {
                        match stream.write(&chunk) {
                            Ok(n) if n > 0 => sent += n,
                            _ => break,
                        }
                    }
                    *w2.lock().unwrap() = sent;
                }
                Act::Hang(d) => {
                    thread::sleep(d);
                    drop(stream);
                }
            }
        }
    });
    Server { url, seen, written }
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

fn client(reports: usize, max_batch: usize) -> TelemetryClient {
    common::grr_client("upload-test", reports, max_batch)
}

fn options(urls: &[&str], sleeps: Arc<Mutex<Vec<Duration>>>) -> UploadOptions {
    let mut o = UploadOptions::new(urls, "secret-token").unwrap();
    o.sleep = Box::new(move |d| sleeps.lock().unwrap().push(d));
    o.jitter = Box::new(|| 0.5);
    o.timeout = Duration::from_secs(2);
    o
}

#[test]
fn batches_are_sent_gzipped_and_acknowledged() {
    let server = serve(vec![]);
    let c = client(130, 64);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let r = Uploader::new(options(&[&server.url], sleeps)).upload(&c).unwrap();
    assert_eq!((r.batches, r.acknowledged, r.accepted, r.stopped), (3, 130, 130, Stopped::Empty));
    assert_eq!(c.pending().unwrap(), 0);
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.iter().map(|s| s.lines.len()).collect::<Vec<_>>(), vec![64, 64, 2]);
    assert!(seen.iter().all(|s| s.gzip && s.auth == "Bearer secret-token" && s.batch_id.len() == 32));
    assert!(seen[0].lines[0].starts_with("{\"spec\":\""));
}

#[test]
fn a_lost_reply_resends_the_same_batch_under_the_same_id() {
    let server = serve(vec![Act::Drop, Act::Ok]);
    let c = client(5, 64);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let r = Uploader::new(options(&[&server.url], sleeps.clone())).upload(&c).unwrap();
    assert_eq!(r.acknowledged, 5);
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].batch_id, seen[1].batch_id);
    assert_eq!(seen[0].lines, seen[1].lines);
    assert_eq!(sleeps.lock().unwrap().len(), 1, "one back-off");
}

#[test]
fn too_large_splits_the_batch() {
    let server = serve(vec![Act::Reply(413, vec![], "too large".into())]);
    let c = client(10, 64);
    let r = Uploader::new(options(&[&server.url], Arc::default())).upload(&c).unwrap();
    assert_eq!(r.acknowledged, 10);
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.iter().map(|s| s.lines.len()).collect::<Vec<_>>(), vec![10, 5, 5]);
}

#[test]
fn retry_after_is_obeyed_and_capped() {
    let server = serve(vec![
        Act::Reply(429, vec![("Retry-After", "7".into())], String::new()),
        Act::Reply(503, vec![("Retry-After", "100000".into())], String::new()),
    ]);
    let c = client(2, 64);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let mut o = options(&[&server.url], sleeps.clone());
    o.max_delay = Duration::from_secs(60);
    Uploader::new(o).upload(&c).unwrap();
    assert_eq!(*sleeps.lock().unwrap(), vec![Duration::from_secs(7), Duration::from_secs(60)]);
}

#[test]
fn redirects_and_other_refusals_keep_the_batch() {
    for act in [
        Act::Reply(302, vec![("Location", "http://elsewhere.example/".into())], String::new()),
        Act::Reply(401, vec![], "no".into()),
    ] {
        let server = serve(vec![act]);
        let c = client(4, 64);
        let e = Uploader::new(options(&[&server.url], Arc::default())).upload(&c).unwrap_err();
        assert!(matches!(e, Error::UploadRejected { .. }), "{e}");
        assert_eq!(c.pending().unwrap(), 4);
        assert_eq!(server.seen.lock().unwrap().len(), 1, "a redirect is not followed");
    }
}

#[test]
fn an_insane_success_acknowledges_nothing() {
    for body in [
        r#"{"batch_id":"x","accepted":4,"rejected":{},"lines":4}"#.to_string(),
        "not json".to_string(),
        r#"{"accepted":1,"rejected":{},"lines":1}"#.to_string(),
    ] {
        let server = serve(vec![Act::Reply(200, vec![], body)]);
        let c = client(4, 64);
        let e = Uploader::new(options(&[&server.url], Arc::default())).upload(&c).unwrap_err();
        assert!(e.to_string().contains("not sane"), "{e}");
        assert_eq!(c.pending().unwrap(), 4);
    }
}

#[test]
fn a_trickling_reply_is_cut_by_the_request_deadline_and_retried() {
    let server = serve(vec![Act::Trickle, Act::Ok]);
    let c = client(2, 64);
    let mut o = options(&[&server.url], Arc::default());
    o.timeout = Duration::from_millis(800);
    let t0 = Instant::now();
    let r = Uploader::new(o).upload(&c).unwrap();
    assert_eq!(r.acknowledged, 2);
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
}

#[test]
fn a_flooding_reply_is_read_only_up_to_its_bound() {
    let total = 64 << 20;
    let server = serve(vec![Act::Flood(total)]);
    let c = client(2, 64);
    let e = Uploader::new(options(&[&server.url], Arc::default())).upload(&c).unwrap_err();
    assert!(e.to_string().contains("over 65536 bytes"), "{e}");
    assert_eq!(c.pending().unwrap(), 2);
    thread::sleep(Duration::from_millis(300));
    let written = *server.written.lock().unwrap();
    assert!(written < total / 4, "the server could write {written} bytes: the reply was read whole");
}

#[test]
fn the_call_deadline_leaves_the_rest_queued() {
    let server = serve(vec![Act::Trickle, Act::Trickle, Act::Trickle]);
    let c = client(2, 64);
    let mut o = options(&[&server.url], Arc::default());
    o.call_timeout = Some(Duration::from_millis(900));
    let t0 = Instant::now();
    let r = Uploader::new(o).upload(&c).unwrap();
    assert_eq!(r.stopped, Stopped::Deadline);
    assert_eq!(c.pending().unwrap(), 2);
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[test]
fn options_refuse_bad_endpoints_and_tokens() {
    assert!(UploadOptions::new(&["ftp://x/"], "t").is_err());
    assert!(UploadOptions::new::<&str>(&[], "t").is_err());
    assert!(UploadOptions::new(&["https://x.example/v1/reports"], "with space").is_err());
    assert!(UploadOptions::new(&["https://x.example/v1/reports"], "").is_err());
}

// ---------------------------------------------------------------------------------------------------------------
// Failover over a list of endpoints

/// The `log` lines of the `ldp_client` crate emitted by the current thread (the uploader runs in the test's thread).
struct Capture;

thread_local! {
    static LINES: RefCell<Vec<(log::Level, String)>> = const { RefCell::new(Vec::new()) };
}

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        if record.target().starts_with("ldp_client") {
            LINES.with(|l| l.borrow_mut().push((record.level(), record.args().to_string())));
        }
    }
    fn flush(&self) {}
}

/// Installs the capturing logger (once per process) and clears this thread's lines.
fn capture_logs() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        log::set_logger(&Capture).unwrap();
        log::set_max_level(log::LevelFilter::Debug);
    });
    LINES.with(|l| l.borrow_mut().clear());
}

/// This thread's captured lines.
fn logged() -> Vec<(log::Level, String)> {
    LINES.with(|l| l.borrow().clone())
}

/// A URL of a loopback port nothing listens on (bound, then closed).
fn dead_url() -> String {
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/reports", dead.local_addr().unwrap());
    drop(dead);
    url
}

/// `host:port` of a loopback URL.
fn host(url: &str) -> &str {
    url.trim_start_matches("http://").trim_end_matches("/v1/reports")
}

fn requests(server: &Server) -> usize {
    server.seen.lock().unwrap().len()
}

fn batch_ids(server: &Server) -> Vec<String> {
    server.seen.lock().unwrap().iter().map(|s| s.batch_id.clone()).collect()
}

/// 130 reports in parts of 64: the first part fails on the first endpoint as `first` says and goes to the second at
/// once (no wait); the second acknowledges every part once, and takes the next parts directly (sticky).
fn fails_over_at_once_and_sticks(first_url: &str, first: Option<&Server>, timeout: Duration, reason: &str) {
    let second = serve(vec![]);
    let c = client(130, 64);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let mut o = options(&[first_url, &second.url], sleeps.clone());
    o.timeout = timeout;
    capture_logs();
    let r = Uploader::new(o).upload(&c).unwrap();
    assert_eq!((r.batches, r.acknowledged, r.accepted, r.duplicates, r.stopped), (3, 130, 130, 0, Stopped::Empty));
    assert_eq!(c.pending().unwrap(), 0);
    assert!(sleeps.lock().unwrap().is_empty(), "no wait: {:?}", sleeps.lock().unwrap());
    let ids = batch_ids(&second);
    assert_eq!(ids.len(), 3, "each part once on the second endpoint");
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    if let Some(first) = first {
        assert_eq!(batch_ids(first), vec![ids[0].clone()], "the first endpoint saw the first part only (sticky)");
    }
    let lines = logged();
    let switches: Vec<_> = lines.iter().filter(|(_, m)| m.contains("failing over")).collect();
    assert_eq!(switches.len(), 1, "one switch in the call: {lines:?}");
    let (level, line) = switches[0];
    assert_eq!(*level, log::Level::Info, "{line}");
    assert!(line.contains(host(first_url)) && line.contains(host(&second.url)), "{line}");
    assert!(line.contains(reason), "{line}");
    assert!(lines.iter().all(|(_, m)| !m.contains("secret-token") && !m.contains("{\"spec\"")), "{lines:?}");
}

#[test]
fn a_refused_connection_fails_over_at_once_and_sticks() {
    let dead = dead_url();
    // The reason is ureq's text of the connection error ("io: Connection refused (os error 111)").
    fails_over_at_once_and_sticks(&dead, None, Duration::from_secs(2), "io: ");
}

#[test]
fn a_503_fails_over_at_once_and_sticks() {
    let first = serve(vec![Act::Reply(503, vec![("Retry-After", "30".into())], String::new())]);
    fails_over_at_once_and_sticks(&first.url.clone(), Some(&first), Duration::from_secs(2), "HTTP 503");
}

#[test]
fn a_timeout_fails_over_at_once_and_sticks() {
    let first = serve(vec![Act::Hang(Duration::from_secs(5))]);
    let t0 = Instant::now();
    fails_over_at_once_and_sticks(&first.url.clone(), Some(&first), Duration::from_millis(400), "timeout");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
}

#[test]
fn other_5xx_and_408_fail_over_too() {
    for status in [500, 502, 504, 408] {
        let first = serve(vec![Act::Reply(status, vec![], "busy".into())]);
        let second = serve(vec![]);
        let c = client(3, 64);
        let sleeps = Arc::new(Mutex::new(Vec::new()));
        let r = Uploader::new(options(&[&first.url, &second.url], sleeps.clone())).upload(&c).unwrap();
        assert_eq!(r.acknowledged, 3, "{status}");
        assert_eq!((requests(&first), requests(&second)), (1, 1), "{status}");
        assert!(sleeps.lock().unwrap().is_empty(), "{status}");
    }
}

#[test]
fn each_call_starts_with_the_first_endpoint() {
    let first = serve(vec![Act::Reply(503, vec![], String::new())]);
    let second = serve(vec![]);
    let c = client(2, 64);
    let mut uploader = Uploader::new(options(&[&first.url, &second.url], Arc::default()));
    assert_eq!(uploader.upload(&c).unwrap().acknowledged, 2);
    assert_eq!((requests(&first), requests(&second)), (1, 1));
    c.record("m", &json!(1)).unwrap();
    assert_eq!(uploader.upload(&c).unwrap().acknowledged, 1);
    assert_eq!((requests(&first), requests(&second)), (2, 1), "the second call began with the first endpoint");
}

#[test]
fn one_endpoint_waits_after_every_failure() {
    let server = serve(vec![Act::Reply(500, vec![], String::new()); 4]);
    let c = client(2, 64);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let mut o = options(&[&server.url], sleeps.clone());
    o.max_attempts = 4;
    let e = Uploader::new(o).upload(&c).unwrap_err();
    assert!(matches!(e, Error::Transport(_)) && e.to_string().contains("after 4 attempt(s) (last: HTTP 500)"), "{e}");
    let want: Vec<Duration> = [0.5, 1.0, 2.0].iter().map(|s| Duration::from_secs_f64(*s)).collect();
    assert_eq!(*sleeps.lock().unwrap(), want, "a full round per failure: jitter 0.5 of 2^(round - 1)");
    assert_eq!(requests(&server), 4);
}

#[test]
fn every_endpoint_failing_waits_once_per_full_round() {
    let servers: Vec<Server> = (0..3).map(|_| serve(vec![Act::Reply(500, vec![], String::new()); 8])).collect();
    let c = client(4, 64);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let urls: Vec<&str> = servers.iter().map(|s| s.url.as_str()).collect();
    let mut o = options(&urls, sleeps.clone());
    o.max_attempts = 7;
    let e = Uploader::new(o).upload(&c).unwrap_err();
    assert!(matches!(e, Error::Transport(_)) && e.to_string().contains("after 7 attempt(s)"), "{e}");
    // Rounds 0,1,2 | wait 2^0 * 0.5 | 0,1,2 | wait 2^1 * 0.5 | 0: seven requests, the last fails the call.
    let want: Vec<Duration> = [0.5, 1.0].iter().map(|s| Duration::from_secs_f64(*s)).collect();
    assert_eq!(*sleeps.lock().unwrap(), want);
    assert_eq!(servers.iter().map(requests).collect::<Vec<_>>(), vec![3, 2, 2]);
    let ids: Vec<String> = servers.iter().flat_map(batch_ids).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "the same batch id everywhere: {ids:?}");
    assert_eq!(c.pending().unwrap(), 4);
}

#[test]
fn a_round_ending_in_a_503_waits_its_retry_after_then_starts_over() {
    let first = serve(vec![Act::Reply(500, vec![], String::new())]);
    let second = serve(vec![Act::Reply(503, vec![("Retry-After", "7".into())], String::new())]);
    let c = client(130, 64);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let r = Uploader::new(options(&[&first.url, &second.url], sleeps.clone())).upload(&c).unwrap();
    assert_eq!((r.batches, r.acknowledged), (3, 130));
    assert_eq!(*sleeps.lock().unwrap(), vec![Duration::from_secs(7)]);
    // 500, 503 (the round: wait), then the first endpoint again, which takes this part and the next two.
    assert_eq!((requests(&first), requests(&second)), (4, 1));
}

#[test]
fn slow_down_and_too_large_stay_on_the_endpoint() {
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let second = serve(vec![]);
    for (act, slept) in [
        (Act::Reply(429, vec![("Retry-After", "3".into())], String::new()), Some(Duration::from_secs(3))),
        (Act::Reply(429, vec![], String::new()), Some(Duration::from_millis(500))),
        (Act::Reply(413, vec![], "too large".into()), None),
    ] {
        sleeps.lock().unwrap().clear();
        let first = serve(vec![act]);
        let c = client(10, 64);
        let r = Uploader::new(options(&[&first.url, &second.url], sleeps.clone())).upload(&c).unwrap();
        assert_eq!(r.acknowledged, 10);
        assert_eq!(*sleeps.lock().unwrap(), slept.into_iter().collect::<Vec<_>>());
        assert!(requests(&first) >= 2);
    }
    assert_eq!(requests(&second), 0, "never switched");
}

#[test]
fn refusals_stop_without_failing_over() {
    for act in [
        Act::Reply(400, vec![], "bad".into()),
        Act::Reply(401, vec![], "no".into()),
        Act::Reply(200, vec![], "not json".into()),
        Act::Reply(302, vec![("Location", "http://elsewhere.example/".into())], String::new()),
    ] {
        let first = serve(vec![act]);
        let second = serve(vec![]);
        let c = client(4, 64);
        assert!(Uploader::new(options(&[&first.url, &second.url], Arc::default())).upload(&c).is_err());
        assert_eq!(c.pending().unwrap(), 4);
        assert_eq!((requests(&first), requests(&second)), (1, 0));
    }
}

#[test]
fn max_attempts_counts_the_requests_to_every_endpoint() {
    let first = serve(vec![Act::Reply(503, vec![], String::new()); 4]);
    let second = serve(vec![Act::Reply(503, vec![], String::new()); 4]);
    let c = client(2, 64);
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let mut o = options(&[&first.url, &second.url], sleeps.clone());
    o.max_attempts = 3;
    let e = Uploader::new(o).upload(&c).unwrap_err();
    assert!(e.to_string().contains("after 3 attempt(s) (last: HTTP 503)"), "{e}");
    assert_eq!((requests(&first), requests(&second)), (2, 1));
    assert_eq!(*sleeps.lock().unwrap(), vec![Duration::from_millis(500)]);
}

#[test]
fn bad_endpoint_lists_are_refused() {
    let message = |list: &[&str]| UploadOptions::new(list, "t").unwrap_err().to_string();
    assert!(message(&[]).contains("at least one collector URL"));
    let twice =
        message(&["https://a.example/v1/reports", "https://b.example/v1/reports", "https://a.example/v1/reports"]);
    assert!(twice.contains("the same endpoint twice (entries 1 and 3)"), "{twice}");
    for bad in [
        &["https://a.example/v1/reports", "ftp://b.example/"][..],
        &["not a url"],
        &["https://a.example/v1/reports", ""],
        &["/v1/reports"],
        &["mailto:someone@example.com"],
    ] {
        assert!(message(bad).contains("upload url must be http(s)://host/..."), "{bad:?}: {}", message(bad));
    }
    let urls = ["https://a.example/v1/reports", "http://b.example:8080/v1/reports"];
    assert_eq!(UploadOptions::new(&urls, "t").unwrap().endpoints(), urls);
    assert_eq!(UploadOptions::new(&[urls[0]], "t").unwrap().endpoints(), &urls[..1]);
}

#[test]
fn the_c_interface_takes_an_endpoint_list() {
    use ldp_client::ffi::*;
    let spec = br#"{"spec_version": 1, "name": "upload-test", "budget": {"per_window": 1e6, "lifetime": 1e6},
        "upload": {"min_interval_seconds": 0, "max_batch": 64},
        "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                          "budget": {"per_report": 1.0}}}}"#;
    let server = serve(vec![]);
    let (dead, live) = (CString::new(dead_url()).unwrap(), CString::new(server.url.as_str()).unwrap());
    let token = CString::new("secret-token").unwrap();
    let metric = CString::new("m").unwrap();
    let last = || unsafe { CStr::from_ptr(ldp_last_error_message()) }.to_string_lossy().into_owned();
    unsafe {
        let mut s = std::ptr::null_mut();
        assert_eq!(ldp_spec_parse(spec.as_ptr(), spec.len(), &mut s), LdpStatus::LdpOk);
        let mut c = std::ptr::null_mut();
        assert_eq!(ldp_client_open_memory(s, std::ptr::null(), &mut c), LdpStatus::LdpOk);
        for v in 0..3 {
            assert_eq!(ldp_client_record_int(c, metric.as_ptr(), v, std::ptr::null_mut()), LdpStatus::LdpOk);
        }
        let mut result = LdpUploadResult::default();
        let upload = |list: &[*const c_char], result: &mut LdpUploadResult| {
            ldp_client_upload(c, list.as_ptr(), list.len(), token.as_ptr(), 2.0, 0.0, result)
        };
        assert_eq!(upload(&[live.as_ptr(), live.as_ptr()], &mut result), LdpStatus::LdpValueError);
        assert!(last().contains("the same endpoint twice"), "{}", last());
        assert_eq!(upload(&[], &mut result), LdpStatus::LdpInvalidArgument);
        assert_eq!(upload(&[live.as_ptr(), std::ptr::null()], &mut result), LdpStatus::LdpInvalidArgument);
        assert_eq!(requests(&server), 0, "nothing sent before the list was checked");
        assert_eq!(upload(&[dead.as_ptr(), live.as_ptr()], &mut result), LdpStatus::LdpOk, "{}", last());
        assert_eq!((result.batches, result.acknowledged, result.duplicates, result.stopped), (1, 3, 0, 0));
        assert_eq!(requests(&server), 1);
        ldp_client_record_int(c, metric.as_ptr(), 1, std::ptr::null_mut());
        assert_eq!(upload(&[live.as_ptr()], &mut result), LdpStatus::LdpOk, "a list of one: {}", last());
        assert_eq!(result.acknowledged, 1);
        ldp_client_free(c);
        ldp_spec_free(s);
    }
}
