//! The uploader against real local HTTP servers (scripted replies on 127.0.0.1; nothing mocked): batches, exactly
//! once across retries, failover, 413, Retry-After, back-off, redirects refused, insane replies, trickling and
//! flooding replies, the call's deadline.
#![cfg(feature = "uploader")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ldp_client::ledger::MemoryStore;
use ldp_client::upload::{Stopped, UploadOptions, Uploader};
use ldp_client::{json, CollectionSpec, Error, TelemetryClient};

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

/// A request's headers (lower-case names) and body.
type Request = (Vec<(String, String)>, Vec<u8>);

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").map(|(_, v)| v.parse().ok())??;
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some((headers, body))
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
    let spec = CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": "upload-test", "budget": {"per_window": 1e6, "lifetime": 1e6},
                "upload": {"min_interval_seconds": 0, "max_batch": max_batch},
                "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                                  "budget": {"per_report": 1.0}}}}),
        "spec",
    )
    .unwrap();
    let c = TelemetryClient::new(spec, MemoryStore::new()).unwrap();
    for i in 0..reports {
        c.record("m", &json!(i % 4)).unwrap();
    }
    c
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
fn a_refused_connection_fails_over_to_the_next_endpoint() {
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/v1/reports", dead.local_addr().unwrap());
    drop(dead);
    let server = serve(vec![]);
    let c = client(3, 64);
    let r = Uploader::new(options(&[&dead_url, &server.url], Arc::default())).upload(&c).unwrap();
    assert_eq!(r.acknowledged, 3);
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
