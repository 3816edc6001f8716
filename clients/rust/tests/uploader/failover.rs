//! Failover over a list of endpoints: at once, sticky, one wait per full round, what does not fail over; through C
//! too.

use super::*;

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
