//! Deadlines that hold under load (issue 73, item 2): with two CPU hogs spinning beside the test, the uploader is
//! cut at its request's deadline (`timeout`) and at its call's (`call_timeout`) by a collector that never accepts
//! the connection, one that reads the request and never answers, one that reads nothing of a request larger than the
//! sockets' buffers, and ones that trickle their answer (the status line and headers, or the body) one byte per
//! 100 ms. Each call ends between its deadline and five times it; a deadline
//! not kept lets each misbehaviour run its 30 s. The batch stays pinned for the next call. Real local servers on
//! 127.0.0.1, nothing mocked.
#![cfg(feature = "uploader")]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use common::http::read_request;
use common::load::CpuHogs;
use ldp_client::ledger::MemoryStore;
use ldp_client::upload::{Outbox, Stopped, UploadOptions, Uploader};
use ldp_client::{json, CollectionSpec, Error, TelemetryClient};

/// The time between two trickled bytes.
const GAP: Duration = Duration::from_millis(100);
/// The deadline under test.
const DEADLINE: Duration = Duration::from_secs(1);
/// A call ends before this many deadlines (thread switches on a loaded machine cost milliseconds).
const LOADED: u32 = 5;
/// How long each misbehaviour lasts at most (then the connection is closed): what a deadline not kept costs.
const HOLD: Duration = Duration::from_secs(30);
/// The bytes trickled: [`HOLD`] of them.
const TRICKLED: usize = 300;

/// How the collector misbehaves.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Never accepts the connection (the kernel completes it: the request is sent, and nothing comes back).
    Unaccepted,
    /// Reads the request, then holds the connection without a byte of answer.
    Silent,
    /// The status line and headers one byte per [`GAP`] (a header that never ends).
    TrickleHeaders,
    /// A 200's status line and headers at once, then its body one byte per [`GAP`].
    TrickleBody,
    /// Reads nothing of the request (its own test: a body larger than the sockets' buffers cannot be sent).
    Unread,
}

/// A collector misbehaving as `mode` says, for [`HOLD`] at most or until dropped; its URL.
struct Collector {
    url: String,
    closing: Arc<AtomicBool>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Relaxed);
    }
}

/// Sleeps [`HOLD`] from `start`, or until `closing`.
fn hold(start: Instant, closing: &AtomicBool) {
    while !closing.load(Ordering::Relaxed) && start.elapsed() < HOLD {
        thread::sleep(GAP);
    }
}

/// Writes `bytes` one per [`GAP`] until done, the peer gone or `closing`.
fn trickle(stream: &mut TcpStream, bytes: &[u8], closing: &AtomicBool) {
    for b in bytes {
        if closing.load(Ordering::Relaxed) || stream.write_all(&[*b]).is_err() {
            return;
        }
        thread::sleep(GAP);
    }
}

fn collector(mode: Mode) -> Collector {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/reports", listener.local_addr().unwrap());
    let closing = Arc::new(AtomicBool::new(false));
    let c = closing.clone();
    if let Mode::Unaccepted = mode {
        // Closing the listener resets the connection waiting in its backlog.
        thread::spawn(move || {
            hold(Instant::now(), &c);
            drop(listener);
        });
        return Collector { url, closing };
    }
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let closing = c.clone();
            thread::spawn(move || {
                let start = Instant::now();
                if read_request(&mut stream).is_none() {
                    return;
                }
                match mode {
                    Mode::Unaccepted | Mode::Unread => unreachable!(),
                    Mode::Silent => hold(start, &closing),
                    Mode::TrickleHeaders => {
                        let head = format!("HTTP/1.1 200 OK\r\nX-Padding: {}", "a".repeat(TRICKLED));
                        trickle(&mut stream, &head.as_bytes()[..TRICKLED], &closing);
                    }
                    Mode::TrickleBody => {
                        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {TRICKLED}\r\n\r\n");
                        let _ = stream.write_all(head.as_bytes());
                        trickle(&mut stream, &[b' '; TRICKLED], &closing);
                    }
                }
            });
        }
    });
    Collector { url, closing }
}

fn client(reports: usize) -> TelemetryClient {
    common::grr_client("upload-deadline", reports, 64)
}

fn options(url: &str) -> UploadOptions {
    let mut o = UploadOptions::new(&[url], "secret-token").unwrap();
    o.sleep = Box::new(|d| panic!("no wait expected, asked for {d:?}"));
    o
}

/// Asserts that `elapsed` is at least the deadline (the call was cut by it, not before) and below [`LOADED`] times
/// it, and that the hogs spun all along.
fn check_time(mode: Mode, what: &str, elapsed: Duration, hogs: &CpuHogs, before: &[u64]) {
    let after = hogs.counts();
    assert!(after.iter().zip(before).all(|(a, b)| a > b), "the hogs stopped: {before:?} then {after:?}");
    assert!(elapsed >= DEADLINE, "{mode:?}: {what} ended before its deadline, after {elapsed:?}");
    assert!(elapsed < DEADLINE * LOADED, "{mode:?}: {what} took {elapsed:?}, over {LOADED} times its {DEADLINE:?}");
}

/// The request's deadline (`timeout`) ends the only attempt: a transport error naming it, the part pinned.
fn request_deadline_holds_under_load(mode: Mode) {
    let server = collector(mode);
    let c = client(3);
    let mut o = options(&server.url);
    o.timeout = DEADLINE;
    o.max_attempts = 1;
    let hogs = CpuHogs::start(2);
    let before = hogs.counts();
    let t0 = Instant::now();
    let e = Uploader::new(o).upload(&c).unwrap_err();
    let elapsed = t0.elapsed();
    check_time(mode, "a request", elapsed, &hogs, &before);
    drop(hogs);
    assert!(matches!(e, Error::Transport(_)), "{mode:?}: {e}");
    assert!(e.to_string().contains("after 1 attempt(s) (last: timeout"), "{mode:?}: {e}");
    assert_eq!(c.pending().unwrap(), 3);
    assert_eq!(c.next_batch(None).unwrap().map(|b| b.reports.len()), Some(3), "the part stays pinned");
}

/// The call's deadline (`call_timeout`) cuts a request whose own deadline is a minute: `Stopped::Deadline`.
fn call_deadline_holds_under_load(mode: Mode) {
    let server = collector(mode);
    let c = client(2);
    let mut o = options(&server.url);
    o.timeout = Duration::from_secs(60);
    o.call_timeout = Some(DEADLINE);
    let hogs = CpuHogs::start(2);
    let before = hogs.counts();
    let t0 = Instant::now();
    let r = Uploader::new(o).upload(&c).unwrap();
    let elapsed = t0.elapsed();
    check_time(mode, "a call", elapsed, &hogs, &before);
    drop(hogs);
    assert_eq!((r.stopped, r.batches, r.acknowledged), (Stopped::Deadline, 0, 0), "{mode:?}");
    assert_eq!(c.pending().unwrap(), 2);
    assert_eq!(c.next_batch(None).unwrap().map(|b| b.reports.len()), Some(2), "the part stays pinned");
}

#[test]
fn an_unread_request_ends_at_the_request_deadline_under_load() {
    // A collector that accepts the connection and reads nothing until the client gave up, then counts what the
    // client had written into the sockets' buffers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/reports", listener.local_addr().unwrap());
    let (gave_up, wait) = mpsc::channel::<()>();
    let (count, received) = mpsc::channel();
    thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else { return };
        let _ = wait.recv_timeout(HOLD);
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let (mut n, mut buf) = (0, vec![0u8; 1 << 16]);
        while let Ok(k @ 1..) = stream.read(&mut buf) {
            n += k;
        }
        let _ = count.send(n);
    });
    // 16 MiB of lines, sent uncompressed: more than the sockets' buffers hold (4 MiB or so on Linux).
    let spec = CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": "upload-deadline", "budget": {"per_window": 1e9, "lifetime": 1e9},
                "upload": {"min_interval_seconds": 0, "max_batch": 1 << 20},
                "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                                  "budget": {"per_report": 1.0}}}}),
        "spec",
    )
    .unwrap();
    let c = TelemetryClient::builder(spec, MemoryStore::new()).max_outbox_bytes(1 << 30).build().unwrap();
    let items: Vec<(&str, ldp_client::Value)> = (0..10_000).map(|i| ("m", json!(i % 4))).collect();
    while c.pending_bytes().unwrap() < 16 << 20 {
        c.record_many(&items).unwrap();
    }
    let body = c.pending_bytes().unwrap() as usize;
    let mut o = options(&url);
    o.timeout = DEADLINE;
    o.max_attempts = 1;
    o.gzip = false;
    let hogs = CpuHogs::start(2);
    let before = hogs.counts();
    let t0 = Instant::now();
    let e = Uploader::new(o).upload(&c).unwrap_err();
    check_time(Mode::Unread, "a request", t0.elapsed(), &hogs, &before);
    drop(hogs);
    assert!(e.to_string().contains("after 1 attempt(s) (last: timeout"), "{e}");
    gave_up.send(()).unwrap();
    let received = received.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(received < body, "the sockets took the whole request ({received} bytes): the send never blocked");
}

#[test]
fn an_unaccepted_connection_ends_at_the_request_deadline_under_load() {
    request_deadline_holds_under_load(Mode::Unaccepted);
}

#[test]
fn a_silent_collector_ends_at_the_request_deadline_under_load() {
    request_deadline_holds_under_load(Mode::Silent);
}

#[test]
fn trickled_headers_end_at_the_request_deadline_under_load() {
    request_deadline_holds_under_load(Mode::TrickleHeaders);
}

#[test]
fn a_trickled_body_ends_at_the_request_deadline_under_load() {
    request_deadline_holds_under_load(Mode::TrickleBody);
}

#[test]
fn a_silent_collector_ends_at_the_call_deadline_under_load() {
    call_deadline_holds_under_load(Mode::Silent);
}

#[test]
fn trickled_headers_end_at_the_call_deadline_under_load() {
    call_deadline_holds_under_load(Mode::TrickleHeaders);
}

#[test]
fn a_trickled_body_ends_at_the_call_deadline_under_load() {
    call_deadline_holds_under_load(Mode::TrickleBody);
}
