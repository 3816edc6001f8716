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

#[path = "uploader/failover.rs"]
mod failover;
#[path = "uploader/server.rs"]
mod server;

use server::{serve, Act, Server};

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
