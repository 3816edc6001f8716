//! One upload at a time per outbox, enforced (issue 73, item 3): concurrent `Uploader::upload` calls on one client,
//! from any threads and through any uploaders, and on the clients of one `FileStore` folder, take turns, so each
//! batch is sent once: POSTs = batches + retries, every report acknowledged in exactly one POST. A waiting call stops
//! at its own deadline having sent nothing; a call from the uploading thread itself is refused; clients of other
//! stores do not wait for each other. Against a real local collector on 127.0.0.1 that serves connections in
//! parallel (nothing mocked).
#![cfg(feature = "uploader")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use common::http::read_request;
use ldp_client::ledger::{FileStore, MemoryStore, StateStore};
use ldp_client::upload::{Stopped, UploadOptions, UploadResult, Uploader};
use ldp_client::{json, CollectionSpec, Error, TelemetryClient};

/// One POST as the collector saw it: its batch id, its lines and the status it answered.
#[derive(Clone, Debug)]
struct Post {
    batch: String,
    lines: Vec<String>,
    status: u16,
}

/// What the collector answers the POST numbered `n` (from 1): 200 (a sane acknowledgement) or 503.
type Answer = Box<dyn Fn(usize) -> u16 + Send + Sync>;

/// A held answer: the collector's handler waits until `release` (at most 30 s).
#[derive(Default)]
struct Hold {
    released: Mutex<bool>,
    wake: Condvar,
}

impl Hold {
    fn release(&self) {
        *self.released.lock().unwrap() = true;
        self.wake.notify_all();
    }

    fn wait(&self) {
        let released = self.released.lock().unwrap();
        drop(self.wake.wait_timeout_while(released, Duration::from_secs(30), |r| !*r).unwrap());
    }
}

/// A collector serving each connection on a thread of its own, recording every POST.
struct Collector {
    url: String,
    posts: Arc<Mutex<Vec<Post>>>,
    /// Answers of POSTs numbered in `held` wait for this.
    hold: Arc<Hold>,
    /// A POST was received (its number), for tests that wait for the first one.
    arrived: Arc<(Mutex<usize>, Condvar)>,
}

impl Collector {
    /// Answers by `answer`; the POSTs numbered in `held` wait for [`Hold::release`] before answering.
    fn start(answer: Answer, held: &[usize]) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/reports", listener.local_addr().unwrap());
        let posts = Arc::new(Mutex::new(Vec::new()));
        let hold = Arc::new(Hold::default());
        let arrived = Arc::new((Mutex::new(0), Condvar::new()));
        let answer = Arc::new(answer);
        let held: Arc<BTreeSet<usize>> = Arc::new(held.iter().copied().collect());
        let (p, h, a) = (posts.clone(), hold.clone(), arrived.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (posts, hold, arrived, answer, held) =
                    (p.clone(), h.clone(), a.clone(), answer.clone(), held.clone());
                thread::spawn(move || {
                    let Some((headers, body)) = read_request(&mut stream) else { return };
                    let get =
                        |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone()).unwrap_or_default();
                    let mut raw = Vec::new();
                    if get("content-encoding") == "gzip" {
                        flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut raw).unwrap();
                    } else {
                        raw = body;
                    }
                    let lines: Vec<String> = String::from_utf8(raw).unwrap().lines().map(str::to_string).collect();
                    let batch = get("ldp-batch-id");
                    let n = {
                        let mut count = arrived.0.lock().unwrap();
                        *count += 1;
                        arrived.1.notify_all();
                        *count
                    };
                    if held.contains(&n) {
                        hold.wait();
                    }
                    let status = answer(n);
                    let k = lines.len();
                    let body = if status == 200 {
                        format!(r#"{{"batch_id":"{batch}","accepted":{k},"rejected":{{}},"lines":{k}}}"#)
                    } else {
                        r#"{"error":"busy"}"#.to_string()
                    };
                    // Recorded before the answer goes: a client that read the answer finds its POST here.
                    posts.lock().unwrap().push(Post { batch, lines, status });
                    let head =
                        format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(body.as_bytes());
                });
            }
        });
        Collector { url, posts, hold, arrived }
    }

    fn posts(&self) -> Vec<Post> {
        self.posts.lock().unwrap().clone()
    }

    /// Waits until `n` POSTs arrived (at most 30 s).
    fn wait_for(&self, n: usize) {
        let count = self.arrived.0.lock().unwrap();
        let count = self.arrived.1.wait_timeout_while(count, Duration::from_secs(30), |c| *c < n).unwrap().0;
        assert!(*count >= n, "{} POST(s) arrived, waited for {n}", *count);
    }
}

fn spec() -> CollectionSpec {
    CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": "upload-turns", "budget": {"per_window": 1e6, "lifetime": 1e6},
                "upload": {"min_interval_seconds": 0, "max_batch": 7},
                "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                                  "budget": {"per_report": 1.0}}}}),
        "spec",
    )
    .unwrap()
}

fn client(store: impl StateStore + 'static) -> TelemetryClient {
    TelemetryClient::new(spec(), store).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ldp-upload-turns-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Options with no waits between tries (a 503 is retried at once) and room for retries.
fn options(url: &str, call_timeout: Option<Duration>) -> UploadOptions {
    let mut o = UploadOptions::new(&[url], "secret-token").unwrap();
    o.timeout = Duration::from_secs(30);
    o.call_timeout = call_timeout;
    o.max_attempts = 8;
    o.max_delay = Duration::ZERO;
    o.sleep = Box::new(|_| {});
    o.jitter = Box::new(|| 0.0);
    o
}

const THREADS: usize = 8;
const ROUNDS: usize = 25;

/// 8 threads × 25 × (record + upload), thread `t` on `clients[t % clients.len()]`, each upload through an
/// `Uploader` of its own; every call's result.
fn hammer(clients: &[Arc<TelemetryClient>], url: &str) -> Vec<UploadResult> {
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (client, start, url) = (clients[t % clients.len()].clone(), start.clone(), url.to_string());
            thread::spawn(move || {
                start.wait();
                (0..ROUNDS)
                    .map(|i| {
                        client.record("m", &json!((t + i) % 4)).unwrap();
                        Uploader::new(options(&url, None)).upload(client.as_ref()).unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    threads.into_iter().flat_map(|t| t.join().unwrap()).collect()
}

/// Every POST is a batch's first send or the retry of a refused one (POSTs = batches + retries), each batch was
/// acknowledged in exactly one POST and sent with the same lines every time, and the acknowledged lines are the
/// 200 reports.
fn check_each_report_once(collector: &Collector, results: &[UploadResult], clients: &[Arc<TelemetryClient>]) {
    let posts = collector.posts();
    let mut by_batch: BTreeMap<&str, Vec<&Post>> = BTreeMap::new();
    for p in &posts {
        by_batch.entry(&p.batch).or_default().push(p);
    }
    let retries = posts.iter().filter(|p| p.status != 200).count();
    assert_eq!(
        posts.len(),
        by_batch.len() + retries,
        "{} POSTs for {} batches and {retries} refusals: a batch was sent twice",
        posts.len(),
        by_batch.len()
    );
    for (batch, sent) in &by_batch {
        assert_eq!(
            sent.iter().filter(|p| p.status == 200).count(),
            1,
            "batch {batch} acknowledged {} times",
            sent.len()
        );
        assert!(sent.iter().all(|p| p.lines == sent[0].lines), "batch {batch} sent with other lines");
    }
    let acknowledged: usize = posts.iter().filter(|p| p.status == 200).map(|p| p.lines.len()).sum();
    assert_eq!(acknowledged, THREADS * ROUNDS);
    assert_eq!(results.iter().map(|r| r.acknowledged).sum::<u64>(), (THREADS * ROUNDS) as u64);
    assert_eq!(results.iter().map(|r| r.batches).sum::<u64>(), by_batch.len() as u64);
    for c in clients {
        assert_eq!(c.pending().unwrap(), 0);
    }
    assert_eq!(clients[0].uploaded().unwrap(), vec![("m".to_string(), (THREADS * ROUNDS) as u64)]);
}

#[test]
fn eight_threads_on_one_client_send_each_batch_once() {
    let collector = Collector::start(Box::new(|_| 200), &[]);
    let dir = temp_dir("one-client");
    let clients = [Arc::new(client(FileStore::open(&dir).unwrap()))];
    let results = hammer(&clients, &collector.url);
    check_each_report_once(&collector, &results, &clients);
    assert!(collector.posts().iter().all(|p| p.status == 200));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn refused_posts_are_retried_and_each_batch_still_acknowledged_once() {
    // Every 5th POST is a 503: the call retries it (at once: no waits in these options).
    let collector = Collector::start(Box::new(|n| if n % 5 == 0 { 503 } else { 200 }), &[]);
    let clients = [Arc::new(client(MemoryStore::new()))];
    let results = hammer(&clients, &collector.url);
    check_each_report_once(&collector, &results, &clients);
    assert!(collector.posts().iter().any(|p| p.status == 503));
}

#[test]
fn the_clients_of_one_folder_take_turns() {
    let collector = Collector::start(Box::new(|n| if n % 7 == 0 { 503 } else { 200 }), &[]);
    let dir = temp_dir("one-folder");
    // Two clients on one folder, one of them opened through another spelling of its path.
    let other = dir.join("..").join(dir.file_name().unwrap());
    let clients = [Arc::new(client(FileStore::open(&dir).unwrap())), Arc::new(client(FileStore::open(other).unwrap()))];
    let results = hammer(&clients, &collector.url);
    check_each_report_once(&collector, &results, &clients);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_waiting_call_stops_at_its_own_deadline_having_sent_nothing() {
    // The first POST is answered only once released: its call holds the client's turn until then.
    let collector = Collector::start(Box::new(|_| 200), &[1]);
    let c = Arc::new(client(MemoryStore::new()));
    for v in 0..3 {
        c.record("m", &json!(v)).unwrap();
    }
    let first = {
        let (c, url) = (c.clone(), collector.url.clone());
        thread::spawn(move || Uploader::new(options(&url, None)).upload(c.as_ref()).unwrap())
    };
    collector.wait_for(1);
    let waited = Uploader::new(options(&collector.url, Some(Duration::from_millis(200)))).upload(c.as_ref()).unwrap();
    assert_eq!((waited.stopped, waited.batches, waited.acknowledged), (Stopped::Deadline, 0, 0));
    assert_eq!(waited.next_upload_at, f64::NEG_INFINITY);
    // A call without a deadline waits for its turn, then finds nothing left to send.
    let patient = {
        let (c, url) = (c.clone(), collector.url.clone());
        thread::spawn(move || Uploader::new(options(&url, None)).upload(c.as_ref()).unwrap())
    };
    collector.hold.release();
    let first = first.join().unwrap();
    assert_eq!((first.stopped, first.batches, first.acknowledged), (Stopped::Empty, 1, 3));
    let patient = patient.join().unwrap();
    assert_eq!((patient.stopped, patient.batches, patient.acknowledged), (Stopped::Empty, 0, 0));
    assert_eq!(collector.posts().len(), 1, "the pinned batch was sent once");
    assert_eq!(c.pending().unwrap(), 0);
}

#[test]
fn clients_of_other_stores_do_not_wait_for_each_other() {
    let collector = Collector::start(Box::new(|_| 200), &[1]);
    let (a, b) = (Arc::new(client(MemoryStore::new())), Arc::new(client(MemoryStore::new())));
    a.record("m", &json!(1)).unwrap();
    b.record("m", &json!(2)).unwrap();
    let held = {
        let (a, url) = (a.clone(), collector.url.clone());
        thread::spawn(move || Uploader::new(options(&url, None)).upload(a.as_ref()).unwrap())
    };
    collector.wait_for(1);
    // `a`'s call holds its turn (its POST unanswered); `b`'s goes on, well within its deadline.
    let r = Uploader::new(options(&collector.url, Some(Duration::from_secs(20)))).upload(b.as_ref()).unwrap();
    assert_eq!((r.stopped, r.batches, r.acknowledged), (Stopped::Empty, 1, 1));
    collector.hold.release();
    assert_eq!(held.join().unwrap().acknowledged, 1);
    assert_eq!(collector.posts().len(), 2);
}

#[test]
fn an_upload_from_the_uploading_thread_is_refused() {
    // The first POST is refused with a 503, so the call sleeps; its sleep uploads the same client.
    let collector = Collector::start(Box::new(|n| if n == 1 { 503 } else { 200 }), &[]);
    let c = Arc::new(client(MemoryStore::new()));
    c.record("m", &json!(0)).unwrap();
    let inner: Arc<Mutex<Option<ldp_client::Result<UploadResult>>>> = Arc::default();
    let mut o = options(&collector.url, None);
    {
        let (c, url, inner) = (c.clone(), collector.url.clone(), inner.clone());
        o.sleep = Box::new(move |_| {
            *inner.lock().unwrap() = Some(Uploader::new(options(&url, None)).upload(c.as_ref()));
        });
    }
    let r = Uploader::new(o).upload(c.as_ref()).unwrap();
    assert_eq!((r.batches, r.acknowledged), (1, 1));
    let inner = inner.lock().unwrap().take().expect("the sleep ran");
    match inner {
        Err(Error::Value(m)) => assert!(m.contains("one upload at a time per outbox"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(collector.posts().len(), 2, "the 503, then the retry: the inner call sent nothing");
}

#[test]
fn the_c_interface_takes_turns_too() {
    use ldp_client::ffi::*;
    use std::ffi::CString;

    let collector = Collector::start(Box::new(|_| 200), &[]);
    let spec = br#"{"spec_version": 1, "name": "upload-turns", "budget": {"per_window": 1e6, "lifetime": 1e6},
        "upload": {"min_interval_seconds": 0, "max_batch": 3},
        "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                          "budget": {"per_report": 1.0}}}}"#;
    let (mut s, mut c) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: valid pointers; the handles are freed at the end, after every thread joined.
    unsafe {
        assert_eq!(ldp_spec_parse(spec.as_ptr(), spec.len(), &mut s), LdpStatus::LdpOk);
        assert_eq!(ldp_client_open_memory(s, std::ptr::null(), &mut c), LdpStatus::LdpOk);
    }
    let handle = c as usize; // an LdpClient may be used from any number of threads at once
    let start = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (url, start) = (CString::new(collector.url.as_str()).unwrap(), start.clone());
            thread::spawn(move || {
                let (token, metric) = (CString::new("secret-token").unwrap(), CString::new("m").unwrap());
                let c = handle as *mut LdpClient;
                start.wait();
                let mut acknowledged = 0;
                for i in 0..10 {
                    let mut result = LdpUploadResult::default();
                    // SAFETY: the handle is live until every thread joined; the strings outlive the calls.
                    unsafe {
                        let recorded = ldp_client_record_int(c, metric.as_ptr(), (t + i) % 4, std::ptr::null_mut());
                        assert_eq!(recorded, LdpStatus::LdpOk);
                        let url = url.as_ptr();
                        assert_eq!(
                            ldp_client_upload(c, &url, 1, token.as_ptr(), 30.0, 0.0, &mut result),
                            LdpStatus::LdpOk
                        );
                    }
                    acknowledged += result.acknowledged;
                }
                acknowledged
            })
        })
        .collect();
    let acknowledged: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(acknowledged, 40);
    let posts = collector.posts();
    let batches: BTreeSet<&str> = posts.iter().map(|p| p.batch.as_str()).collect();
    assert_eq!(posts.len(), batches.len(), "a batch was sent twice");
    assert_eq!(posts.iter().map(|p| p.lines.len()).sum::<usize>(), 40);
    // SAFETY: live handles, freed once.
    unsafe {
        ldp_client_free(c);
        ldp_spec_free(s);
    }
}
