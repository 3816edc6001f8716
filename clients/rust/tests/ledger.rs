//! The store's promises on the device (docs/client.md, "On the device: a bounded outbox, opting out, failing
//! closed"): reads write nothing (not even on a read-only folder), a full disk still lets an app open its store,
//! read it and acknowledge (the reserve), the outbox is bounded, a state missing beside traces of it is refused,
//! opting out deletes what it must and keeps the budget spent and the salt, and `counts` adds up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ldp_client::ledger::{outbox_bytes, FileStore, MemoryStore, StateStore, RESERVE_BYTES};
use ldp_client::upload::Outbox;
use ldp_client::{json, CollectionSpec, Counts, Error, TelemetryClient, Value, DEFAULT_MAX_OUTBOX_BYTES};

const NOW: f64 = 1_700_000_000.0;

/// A GRR metric `c` (ε = 1, 1.0 a report), RAPPOR in Google's mode `r` (memoized: 1.074… a report, 4.394… at most
/// per value, 64 cohorts), and a metric `two` whose lifetime allows two reports.
fn spec(min_interval: u64) -> CollectionSpec {
    CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": "ledger-test", "budget": {"per_window": 1000.0, "lifetime": 1000.0},
                "upload": {"min_interval_seconds": min_interval, "max_batch": 4},
                "metrics": {
                    "c": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                          "budget": {"per_report": 1.0}},
                    "r": {"protocol": "rappor", "params": {"num_bloombits": 32, "num_hashes": 2, "num_cohorts": 64,
                          "p": 0.5, "q": 0.75, "f": 0.5, "mode": "google"},
                          "budget": {"per_report": 1.074285864166728}},
                    "two": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                            "budget": {"per_report": 1.0, "lifetime": 2.0}}}}),
        "spec",
    )
    .unwrap()
}

fn client_with(
    store: impl StateStore + 'static,
    min_interval: u64,
    max_outbox: Option<u64>,
) -> ldp_client::Result<TelemetryClient> {
    let mut b = TelemetryClient::builder(spec(min_interval), store).clock(|| NOW);
    if let Some(m) = max_outbox {
        b = b.max_outbox_bytes(m);
    }
    b.build()
}

fn open(dir: &Path) -> ldp_client::Result<TelemetryClient> {
    client_with(FileStore::open(dir)?, 0, None)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ldp-ledger-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every file of a folder: its bytes, inode (Unix) and modification time. A file rewritten (even to the same bytes,
/// through a temporary file and a rename) gets a new inode and time.
fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, u64, SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            #[cfg(unix)]
            let ino = std::os::unix::fs::MetadataExt::ino(&meta);
            #[cfg(not(unix))]
            let ino = 0;
            (e.file_name().into_string().unwrap(), (std::fs::read(e.path()).unwrap(), ino, meta.modified().unwrap()))
        })
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    snapshot(dir).into_keys().collect()
}

fn state_doc(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("state.json")).unwrap()).unwrap()
}

fn eps(client: &TelemetryClient, metric: Option<&str>) -> f64 {
    client.spent(metric, true).unwrap().epsilon
}

// ---------------------------------------------------------------------------------------------------------------
// Reads write nothing

/// Every query the client has, on a store with reports waiting and a batch pinned, then with nothing due.
fn every_query(client: &TelemetryClient) {
    client.spent(None, false).unwrap();
    client.spent(Some("c"), true).unwrap();
    client.current_window().unwrap();
    client.pending().unwrap();
    client.pending_bytes().unwrap();
    client.uploaded().unwrap();
    client.has_pending().unwrap();
    client.next_upload_at().unwrap();
    client.is_opted_out().unwrap();
    client.counts().unwrap();
}

#[test]
fn opening_a_store_and_every_query_write_nothing() {
    let dir = temp_dir("reads");
    {
        let client = open(&dir).unwrap();
        for i in 0..6 {
            client.record("c", &json!(i % 4)).unwrap();
        }
        client.next_batch(None).unwrap().unwrap(); // a batch of 4 pinned, 2 more waiting
    }
    let before = snapshot(&dir);
    assert!(before.contains_key("state.json") && before.contains_key("outbox.0.log"), "{:?}", before.keys());
    // Opening it again, every query, and the next batch (the pinned one, returned again).
    let client = open(&dir).unwrap();
    every_query(&client);
    let pinned = client.next_batch(None).unwrap().unwrap();
    assert_eq!(pinned.reports.len(), 4);
    assert_eq!(client.next_batch(Some(1)).unwrap(), Some(pinned.clone()), "the pinned part comes back");
    assert_eq!(snapshot(&dir), before, "a read wrote to the folder");

    // Nothing due (the upload interval): next_batch answers None without writing.
    client.acknowledge_batch(&pinned.id, &pinned.ids()).unwrap();
    drop(client);
    let waiting = client_with(FileStore::open(&dir).unwrap(), 3600, None).unwrap();
    let before = snapshot(&dir);
    assert_eq!(waiting.next_batch(None).unwrap(), None, "the upload interval has not passed");
    every_query(&waiting);
    assert_eq!(snapshot(&dir), before, "a read wrote to the folder");
    // A change that changes nothing (acknowledging an unknown batch, splitting one) writes nothing either.
    assert_eq!(waiting.acknowledge_batch("0123", &[1]).unwrap(), 0);
    assert_eq!(waiting.split_batch("0123").unwrap(), 0);
    assert_eq!(snapshot(&dir), before, "a transaction that changed nothing wrote");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reads_leave_a_killed_process_leftovers_for_the_next_write_to_repair() {
    let dir = temp_dir("leftovers");
    let client = open(&dir).unwrap();
    client.record("c", &json!(1)).unwrap();
    drop(client);
    // What a killed process leaves: a temporary state file, and a torn tail on the log.
    std::fs::write(dir.join("state.json.123.deadbeef.tmp"), b"{half a state").unwrap();
    let log = dir.join("outbox.0.log");
    let committed = std::fs::metadata(&log).unwrap().len();
    let mut torn = std::fs::read(&log).unwrap();
    torn.extend_from_slice(b"99\tc\t{\"half");
    std::fs::write(&log, &torn).unwrap();
    let before = snapshot(&dir);
    let client = open(&dir).unwrap();
    every_query(&client);
    assert_eq!(client.pending().unwrap(), 1, "the torn tail is not a report");
    assert_eq!(snapshot(&dir), before, "a read repaired something");
    // The first write repairs both.
    client.record("c", &json!(2)).unwrap();
    assert!(!dir.join("state.json.123.deadbeef.tmp").exists(), "the temporary file is swept by a write");
    let lines = std::fs::read_to_string(&log).unwrap();
    assert!(!lines.contains("half"), "the torn tail is cut: {lines:?}");
    assert!(std::fs::metadata(&log).unwrap().len() > committed);
    assert_eq!(client.pending().unwrap(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The read-only child: opens the store in `LDP_READONLY_CHILD` (a folder it cannot write), queries it, and checks
/// that a record fails. Run by `a_read_only_folder_opens_and_answers_every_query`.
#[test]
fn readonly_child() {
    let Some(dir) = std::env::var_os("LDP_READONLY_CHILD") else { return };
    let dir = PathBuf::from(dir);
    assert!(std::fs::write(dir.join("probe"), b"x").is_err(), "the folder is writable: the test tests nothing");
    let client = open(&dir).unwrap();
    every_query(&client);
    assert_eq!(client.pending().unwrap(), 3);
    assert!(client.pending_bytes().unwrap() > 0);
    assert_eq!(eps(&client, None), 3.0);
    let batch = client.next_batch(None).unwrap().expect("the pinned batch");
    assert_eq!(batch.reports.len(), 3);
    match client.record("c", &json!(1)) {
        Err(Error::Ledger(_)) => {}
        other => panic!("a record in a read-only folder: {other:?}"),
    }
    println!("READONLY-OK");
}

/// A folder the app cannot write (a read-only mount, a full disk's cousin) still opens and answers every query. As
/// root, permissions do not bind, so the child runs as user and group 65534 (nobody).
#[cfg(unix)]
#[test]
fn a_read_only_folder_opens_and_answers_every_query() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = temp_dir("readonly");
    {
        let client = open(&dir).unwrap();
        for i in 0..3 {
            client.record("c", &json!(i)).unwrap();
        }
        client.next_batch(None).unwrap().unwrap();
    }
    for name in names(&dir) {
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = snapshot(&dir);
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(["--exact", "readonly_child", "--nocapture", "--test-threads=1"]).env("LDP_READONLY_CHILD", &dir);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        // The test binary must be readable and runnable by nobody: copy it where it is.
        let copy = dir.parent().unwrap().join(format!("ldp-ledger-readonly-exe-{}", std::process::id()));
        std::fs::copy(&exe, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        cmd = std::process::Command::new(&copy);
        cmd.args(["--exact", "readonly_child", "--nocapture", "--test-threads=1"])
            .env("LDP_READONLY_CHILD", &dir)
            .uid(65534)
            .gid(65534)
            .current_dir("/");
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("READONLY-OK"),
        "the read-only child failed (as root: {root}):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(snapshot(&dir), before);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    if root {
        let _ =
            std::fs::remove_file(dir.parent().unwrap().join(format!("ldp-ledger-readonly-exe-{}", std::process::id())));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------------------------
// Fail closed

#[test]
fn a_missing_state_beside_an_outbox_log_is_refused_and_nothing_is_deleted() {
    let dir = temp_dir("fail-closed");
    let client = open(&dir).unwrap();
    client.record("c", &json!(1)).unwrap();
    drop(client);
    std::fs::remove_file(dir.join("state.json")).unwrap();
    let before = snapshot(&dir);
    for attempt in 0..2 {
        let e = open(&dir).expect_err("a missing state beside its outbox opened as a new device");
        let text = e.to_string();
        assert!(matches!(e, Error::Ledger(_)), "{e:?}");
        assert!(
            text.contains("state.json is missing")
                && text.contains("outbox.0.log")
                && text.contains("delete the folder"),
            "attempt {attempt}: {text}"
        );
        assert!(!text.contains("state.reserve"), "the reserve is not a trace: {text}");
        assert_eq!(snapshot(&dir), before, "attempt {attempt}: the refused open changed the folder");
    }
    // A temporary state file alone is a trace too; the lock file alone is not.
    let dir2 = temp_dir("fail-closed-tmp");
    std::fs::write(dir2.join("state.json.7.abc.tmp"), b"{").unwrap();
    let e = open(&dir2).unwrap_err().to_string();
    assert!(e.contains("state.json.7.abc.tmp"), "{e}");
    assert!(dir2.join("state.json.7.abc.tmp").exists());
    let dir3 = temp_dir("fail-closed-lock");
    std::fs::write(dir3.join("lock"), b"").unwrap();
    let fresh = open(&dir3).unwrap();
    assert_eq!(fresh.pending().unwrap(), 0);
    for d in [dir, dir2, dir3] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_state_lost_under_an_open_client_is_refused_and_nothing_is_deleted() {
    let dir = temp_dir("fail-closed-open");
    let client = open(&dir).unwrap();
    client.record("c", &json!(1)).unwrap();
    std::fs::remove_file(dir.join("state.json")).unwrap();
    let before = snapshot(&dir);
    let e = client.record("c", &json!(2)).unwrap_err().to_string();
    assert!(e.contains("state.json is missing"), "{e}");
    assert!(client.pending().unwrap_err().to_string().contains("state.json is missing"));
    assert_eq!(snapshot(&dir), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_state_is_refused_and_says_how_to_start_over() {
    let dir = temp_dir("damaged");
    open(&dir).unwrap().record("c", &json!(1)).unwrap();
    std::fs::write(dir.join("state.json"), b"{\"device\": ").unwrap();
    let before = snapshot(&dir);
    let e = open(&dir).unwrap_err();
    assert!(matches!(e, Error::Ledger(_)) && e.to_string().contains("delete the folder"), "{e}");
    assert_eq!(snapshot(&dir), before);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------------------------
// The bounded outbox

/// The bytes of the lines waiting, read through the first batch (pinning it): the tests below keep at most
/// `max_batch` reports, so it holds them all.
fn waiting_bytes(client: &TelemetryClient) -> u64 {
    let batch = client.next_batch(None).unwrap().map(|b| b.reports).unwrap_or_default();
    assert_eq!(batch.len() as u64, client.pending().unwrap(), "one batch holds every report");
    batch.iter().map(|r| outbox_bytes(&r.line)).sum()
}

fn check_bounded(client: &TelemetryClient, cap: u64) {
    assert_eq!(client.max_outbox_bytes(), cap);
    let mut kept = 0;
    let refusal = loop {
        match client.record("c", &json!(kept % 4)) {
            Ok(_) => kept += 1,
            Err(e) => break e,
        }
        assert!(kept < 100, "never refused");
    };
    let Error::OutboxFull { pending_bytes, max_bytes, item } = refusal.clone() else { panic!("{refusal:?}") };
    assert_eq!((max_bytes, item), (cap, None));
    assert_eq!(pending_bytes, client.pending_bytes().unwrap());
    assert!(pending_bytes <= cap, "{pending_bytes} bytes kept under a cap of {cap}");
    assert_eq!(refusal.python_type(), "OutboxFull");
    assert!(refusal.to_string().contains(&format!("{pending_bytes} bytes wait for upload")), "{refusal}");
    assert!(refusal.to_string().contains(&cap.to_string()), "{refusal}");
    // Nothing charged or stored by the refusal.
    assert_eq!(client.pending().unwrap(), kept);
    assert_eq!(eps(client, Some("c")), kept as f64);
    // The count is each pending line plus its newline, pinned batches included.
    assert_eq!(waiting_bytes(client), pending_bytes);
    assert_eq!(client.pending_bytes().unwrap(), pending_bytes, "pinning changes nothing");
    // Uploading makes room.
    let batch = client.next_batch(None).unwrap().unwrap();
    client.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
    assert!(client.pending_bytes().unwrap() < pending_bytes);
    client.record("c", &json!(0)).unwrap();
}

#[test]
fn the_outbox_is_bounded_and_refuses_before_charging() {
    // Envelope lines of this GRR are about 120 bytes: room for 3.
    let cap = 400;
    check_bounded(&client_with(MemoryStore::new(), 0, Some(cap)).unwrap(), cap);
    let dir = temp_dir("bounded");
    check_bounded(&client_with(FileStore::open(&dir).unwrap(), 0, Some(cap)).unwrap(), cap);
    // Across a reopen the count is the same.
    let again = client_with(FileStore::open(&dir).unwrap(), 0, Some(cap)).unwrap();
    let bytes = again.pending_bytes().unwrap();
    assert_eq!(waiting_bytes(&again), bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_cap_is_one_mebibyte_and_zero_is_refused() {
    assert_eq!(DEFAULT_MAX_OUTBOX_BYTES, 1_048_576);
    assert_eq!(client_with(MemoryStore::new(), 0, None).unwrap().max_outbox_bytes(), 1_048_576);
    let e = client_with(MemoryStore::new(), 0, Some(0)).unwrap_err();
    assert_eq!(e, Error::Value("max_outbox_bytes must be a positive integer, got 0".into()));
}

#[test]
fn record_many_is_all_or_nothing_and_names_the_item_that_did_not_fit() {
    // Every line of metric c has the same length: room for three.
    let one = client_with(MemoryStore::new(), 0, None).unwrap();
    one.record("c", &json!(0)).unwrap();
    let line = one.pending_bytes().unwrap();
    let client = client_with(MemoryStore::new(), 0, Some(3 * line + line / 2)).unwrap();
    client.record("c", &json!(0)).unwrap();
    let items: Vec<(&str, Value)> = vec![("c", json!(1)), ("c", json!(2)), ("c", json!(3)), ("c", json!(0))];
    let e = client.record_many(&items).unwrap_err();
    let Error::OutboxFull { item, pending_bytes, .. } = e.clone() else { panic!("{e:?}") };
    assert_eq!(item, Some(2), "room for two more: item 2 is the first that does not fit");
    assert!(e.to_string().starts_with("record_many item 2 does not fit: the outbox is full"), "{e}");
    assert_eq!(pending_bytes, client.pending_bytes().unwrap());
    assert_eq!((client.pending().unwrap(), eps(&client, None)), (1, 1.0), "nothing of the batch kept");
    let ids = client.record_many(&items[..2]).unwrap();
    assert_eq!(ids.len(), 2);
    assert_eq!((client.pending().unwrap(), eps(&client, None)), (3, 3.0));
    // A bad value names its item, with nothing written; so does a budget refusal.
    let e = client.record_many(&[("c", json!(1)), ("c", json!(7))]).unwrap_err();
    assert!(e.to_string().starts_with("record_many item 1 (\"c\"): "), "{e}");
    let Error::Item { index: 1, metric, error } = &e else { panic!("{e:?}") };
    assert_eq!(metric, "c");
    assert!(matches!(error.as_ref(), Error::Refusal(_)), "{e:?}");
    assert_eq!(e.refusal().map(|r| r.code), Some(ldp_client::RefusalCode::ValueRange));
    assert_eq!(e.python_type(), "ValueError");
    let roomy = client_with(MemoryStore::new(), 0, None).unwrap();
    let e = roomy.record_many(&[("two", json!(1)), ("two", json!(2)), ("two", json!(3))]).unwrap_err();
    assert!(matches!(e, Error::BudgetExceeded { .. }), "{e:?}");
    assert_eq!((roomy.pending().unwrap(), eps(&roomy, None)), (0, 0.0));
    assert_eq!(roomy.record_many::<&str>(&[]).unwrap(), Vec::<u64>::new());
}

#[test]
fn a_state_written_before_the_cap_counts_its_reports_bytes() {
    let dir = temp_dir("legacy-cursor");
    let client = open(&dir).unwrap();
    for i in 0..3 {
        client.record("c", &json!(i)).unwrap();
    }
    let bytes = client.pending_bytes().unwrap();
    drop(client);
    // The cursor as the client wrote it before the cap existed: five numbers.
    let mut doc = state_doc(&dir);
    let cursor = doc["outbox"].as_array_mut().unwrap();
    assert_eq!(cursor.len(), 6);
    assert_eq!(cursor[5], json!(bytes));
    cursor.pop();
    std::fs::write(dir.join("state.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let before = snapshot(&dir);
    let client = open(&dir).unwrap();
    assert_eq!(client.pending_bytes().unwrap(), bytes);
    assert_eq!(snapshot(&dir), before);
    client.record("c", &json!(3)).unwrap();
    assert_eq!(state_doc(&dir)["outbox"].as_array().unwrap().len(), 6);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------------------------
// Opting out

#[test]
fn opting_out_deletes_what_it_must_keeps_the_budget_and_opting_in_starts_afresh() {
    let dir = temp_dir("opt-out");
    let client = open(&dir).unwrap();
    let other = open(&dir).unwrap(); // another client of the same folder (another process, say)
                                     // RAPPOR's memoized responses: a value's reports cost 1.074… each until 4.394… in all, then nothing.
    for _ in 0..5 {
        client.record("r", &json!("v0")).unwrap();
    }
    let capped = eps(&client, Some("r"));
    other.record("r", &json!("v0")).unwrap();
    assert_eq!(eps(&client, Some("r")), capped, "the memoized value is paid for");
    client.record("c", &json!(1)).unwrap();
    let pinned = client.next_batch(None).unwrap().unwrap();
    let line = pinned.reports[0].line.clone();
    let doc = state_doc(&dir);
    let (secret, salt) = (doc["device"]["secret"].clone(), doc["device"]["salt"].clone());
    assert!(secret.is_string() && !doc["device"]["cohorts"].as_object().unwrap().is_empty());
    let spent = (eps(&client, None), eps(&client, Some("c")));

    assert!(!client.is_opted_out().unwrap());
    client.opt_out().unwrap();
    for c in [&client, &other] {
        assert!(c.is_opted_out().unwrap());
        assert_eq!((c.pending().unwrap(), c.pending_bytes().unwrap()), (0, 0));
        assert!(!c.has_pending().unwrap());
        assert_eq!(c.next_batch(None).unwrap(), None, "an upload sends nothing");
        assert_eq!(c.next_upload_at().unwrap(), f64::INFINITY);
        assert_eq!((eps(c, None), eps(c, Some("c"))), spent, "the budget spent stays spent");
        let e = c.record("c", &json!(1)).unwrap_err();
        assert!(matches!(e, Error::OptedOut(_)) && e.python_type() == "OptedOutError", "{e:?}");
        assert!(matches!(c.record_many(&[("c", json!(1))]), Err(Error::OptedOut(_))));
        assert_eq!(eps(c, None), spent.0, "a refused record charged nothing");
    }
    assert_eq!(client.acknowledge_batch(&pinned.id, &pinned.ids()).unwrap(), 0, "the pinned batch is gone");
    let d = state_doc(&dir)["device"].clone();
    assert_eq!(
        (d["opted_out"].clone(), d["secret"].clone(), d["salt"].clone()),
        (json!(true), Value::Null, salt.clone()),
        "the secret is deleted, the salt kept (as every ldp client does)"
    );
    assert_eq!(d["discarded"], json!({"r": 6, "c": 1}), "the reports deleted unsent, per metric");
    let discarded = |n| Counts { reports: n, pending: 0, uploaded: 0, discarded: n };
    let counts = client.counts().unwrap();
    assert_eq!(counts.into_iter().collect::<Vec<_>>(), [("c".into(), discarded(1)), ("r".into(), discarded(6))]);
    for key in ["cohorts", "memo", "changes"] {
        assert_eq!(d[key], json!({}), "{key} kept");
    }
    assert_eq!(d["parts"], json!([]));
    assert!(!d["totals"].as_object().unwrap().is_empty(), "the totals are kept");
    for (name, (bytes, _, _)) in snapshot(&dir) {
        assert!(!String::from_utf8_lossy(&bytes).contains(&line), "{name} still holds a report");
    }
    // Idempotent: opting out again writes nothing; opting in twice draws one secret.
    let before = snapshot(&dir);
    client.opt_out().unwrap();
    other.opt_out().unwrap();
    assert_eq!(snapshot(&dir), before);

    other.opt_in().unwrap();
    let d = state_doc(&dir)["device"].clone();
    assert_eq!(d["opted_out"], json!(false));
    assert!(d["secret"].is_string() && d["secret"] != secret, "a fresh secret");
    assert_eq!(d["salt"], salt, "the salt kept");
    let before = snapshot(&dir);
    client.opt_in().unwrap();
    assert_eq!(snapshot(&dir), before, "opting in again writes nothing");
    assert!(!client.is_opted_out().unwrap());
    // The client that recorded before (its encoders cached) reports for the new device: the memoized value is
    // charged afresh and a cohort drawn anew.
    client.record("r", &json!("v0")).unwrap();
    assert!((eps(&client, Some("r")) - capped - 1.074285864166728).abs() < 1e-9, "charged afresh");
    assert!(!state_doc(&dir)["device"]["cohorts"].as_object().unwrap().is_empty());
    assert_eq!(client.pending().unwrap(), 1);
    assert!(client.next_batch(None).unwrap().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn opting_out_in_memory() {
    let client = client_with(MemoryStore::new(), 0, None).unwrap();
    client.record("c", &json!(1)).unwrap();
    client.opt_out().unwrap();
    assert!(client.is_opted_out().unwrap());
    assert_eq!(client.pending().unwrap(), 0);
    assert!(matches!(client.record("c", &json!(1)), Err(Error::OptedOut(_))));
    client.opt_in().unwrap();
    client.record("c", &json!(1)).unwrap();
    assert_eq!((client.pending().unwrap(), eps(&client, None)), (1, 2.0));
}

#[test]
fn a_state_an_older_client_opted_out_without_its_salt_opts_in_with_a_fresh_one() {
    let dir = temp_dir("opt-out-legacy");
    let client = open(&dir).unwrap();
    client.record("c", &json!(1)).unwrap();
    client.opt_out().unwrap();
    drop(client);
    // The state as this client wrote it before it kept the salt and counted what opting out deleted.
    let mut doc = state_doc(&dir);
    let device = doc["device"].as_object_mut().unwrap();
    device.insert("salt".into(), Value::Null);
    device.remove("discarded");
    std::fs::write(dir.join("state.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let before = snapshot(&dir);
    let client = open(&dir).unwrap();
    every_query(&client);
    assert!(client.is_opted_out().unwrap());
    assert!(client.counts().unwrap().is_empty(), "nothing counted as discarded then");
    assert_eq!(snapshot(&dir), before, "a read wrote to the folder");
    client.opt_in().unwrap();
    let d = state_doc(&dir)["device"].clone();
    assert!(d["secret"].is_string() && d["salt"].is_string(), "{d}");
    client.record("c", &json!(2)).unwrap();
    assert_eq!(client.next_batch(None).unwrap().unwrap().reports.len(), 1);
    // A state without the opted_out marker or the discarded counts (a collecting device, written before) reads too.
    let mut doc = state_doc(&dir);
    let device = doc["device"].as_object_mut().unwrap();
    device.remove("opted_out");
    device.remove("discarded");
    std::fs::write(dir.join("state.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let client = open(&dir).unwrap();
    assert!(!client.is_opted_out().unwrap());
    let want = Counts { reports: 1, pending: 1, uploaded: 0, discarded: 0 };
    assert_eq!(client.counts().unwrap().into_iter().collect::<Vec<_>>(), [("c".to_string(), want)]);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------------------------
// Counts

/// Five reports of two metrics: three sent, one deleted by opting out per metric; the counts at each step.
fn check_counts(client: &TelemetryClient) {
    let counts = |c: &TelemetryClient| -> Vec<(String, [u64; 4])> {
        let all = c.counts().unwrap();
        for (m, n) in &all {
            assert_eq!(n.reports, n.pending + n.uploaded + n.discarded, "{m}: {n:?}");
        }
        all.into_iter().map(|(m, n)| (m, [n.reports, n.pending, n.uploaded, n.discarded])).collect()
    };
    assert!(client.counts().unwrap().is_empty());
    for v in 0..3 {
        client.record("c", &json!(v)).unwrap();
    }
    client.record_many(&[("r", json!("a")), ("r", json!("b"))]).unwrap();
    assert_eq!(counts(client), [("c".into(), [3, 3, 0, 0]), ("r".into(), [2, 2, 0, 0])]);
    let batch = client.next_batch(None).unwrap().unwrap(); // c, c, c, r: a pinned batch is still pending
    assert_eq!(counts(client), [("c".into(), [3, 3, 0, 0]), ("r".into(), [2, 2, 0, 0])]);
    client.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
    assert_eq!(counts(client), [("c".into(), [3, 0, 3, 0]), ("r".into(), [2, 1, 1, 0])]);
    client.record("c", &json!(3)).unwrap();
    client.opt_out().unwrap();
    assert_eq!(counts(client), [("c".into(), [4, 0, 3, 1]), ("r".into(), [2, 0, 1, 1])]);
    client.opt_in().unwrap();
    client.record("c", &json!(0)).unwrap();
    assert_eq!(counts(client), [("c".into(), [5, 1, 3, 1]), ("r".into(), [2, 0, 1, 1])]);
}

#[test]
fn counts_add_up_per_metric_in_both_stores_and_write_nothing() {
    check_counts(&client_with(MemoryStore::new(), 0, None).unwrap());
    let dir = temp_dir("counts");
    check_counts(&open(&dir).unwrap());
    let before = snapshot(&dir);
    let again = open(&dir).unwrap();
    assert_eq!(again.counts().unwrap()["c"], Counts { reports: 5, pending: 1, uploaded: 3, discarded: 1 });
    assert_eq!(snapshot(&dir), before, "counts wrote to the folder");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------------------------
// A full disk: the reserve

fn reserve_len(dir: &Path) -> Option<u64> {
    std::fs::metadata(dir.join("state.reserve")).ok().map(|m| m.len())
}

#[test]
fn a_record_makes_the_reserve_reads_never_do_and_it_is_no_trace() {
    let dir = temp_dir("reserve");
    let client = open(&dir).unwrap();
    assert_eq!(reserve_len(&dir), None, "making the device's state records nothing: no reserve");
    client.record("c", &json!(1)).unwrap();
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "a record makes the reserve");
    assert!(std::fs::read(dir.join("state.reserve")).unwrap().iter().all(|b| *b == 0));
    // Gone (a full disk took it): reads do not make it again, nor do commits that keep no report.
    std::fs::remove_file(dir.join("state.reserve")).unwrap();
    let before = snapshot(&dir);
    let client = open(&dir).unwrap();
    every_query(&client);
    assert_eq!(snapshot(&dir), before, "a read wrote to the folder");
    let batch = client.next_batch(None).unwrap().unwrap();
    client.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
    assert_eq!(reserve_len(&dir), None);
    client.record("c", &json!(2)).unwrap();
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "the next record makes it again");
    // Not a trace: beside a missing state.json it is not named, and alone (with its temporary file) it opens as a
    // new device; the temporary file is swept by the first write, the reserve kept.
    let lone = temp_dir("reserve-lone");
    std::fs::write(lone.join("state.reserve"), vec![0; RESERVE_BYTES]).unwrap();
    std::fs::write(lone.join("state.reserve.77.abc.tmp"), b"\0\0").unwrap();
    let fresh = open(&lone).unwrap();
    assert_eq!(fresh.pending().unwrap(), 0);
    fresh.record("c", &json!(0)).unwrap();
    assert_eq!(names(&lone), ["lock", "outbox.0.log", "state.json", "state.reserve"]);
    for d in [dir, lone] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Writes `path` until the disk is full to its last byte: 4096-byte blocks until the disk refuses one, then single
/// bytes until it refuses one.
#[cfg(unix)]
fn fill_to_the_last_byte(path: &Path) {
    use std::io::Write;
    let full = |e: &std::io::Error| e.raw_os_error() == Some(libc::ENOSPC);
    let mut file = std::fs::File::create(path).unwrap();
    for block in [&[0xa5u8; 4096][..], &[0xa5u8][..]] {
        loop {
            match file.write(block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if full(&e) => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
    }
    match file.sync_all() {
        Err(e) if !full(&e) => panic!("{e}"),
        _ => {}
    }
}

/// Free blocks of the file system holding `dir`, as an unprivileged user may use them (`statvfs`'s `f_bavail`).
#[cfg(unix)]
fn blocks_available(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs fills the struct it is given; a zeroed statvfs is a valid value of it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut st) }, 0, "statvfs {}", dir.display());
    st.f_bavail as u64
}

/// The full-disk child: run by `a_full_disk_still_opens_reads_and_acknowledges` in a mount namespace of its own,
/// on a 1 MiB tmpfs mounted at `LDP_FULL_DISK_CHILD`.
#[cfg(unix)]
#[test]
fn full_disk_child() {
    let Some(dir) = std::env::var_os("LDP_FULL_DISK_CHILD") else { return };
    let dir = PathBuf::from(dir);
    {
        let client = open(&dir).unwrap();
        client.record("c", &json!(0)).unwrap();
        client.record("c", &json!(1)).unwrap();
    }
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "the records made the reserve");
    let fill = dir.join("fill");
    fill_to_the_last_byte(&fill);
    assert_eq!(blocks_available(&dir), 0, "the disk is not full");

    // Open, read, and a record refused for lack of room, which leaves the reserve alone.
    let client = open(&dir).unwrap();
    every_query(&client);
    assert_eq!(client.pending().unwrap(), 2);
    let e = client.record("c", &json!(2)).unwrap_err();
    assert!(matches!(&e, Error::Ledger(m) if m.contains("the disk is full")), "{e:?}");
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "a record took the reserve");
    assert_eq!((client.pending().unwrap(), eps(&client, None)), (2, 2.0), "the refused record kept nothing");

    // Pinning the batch and acknowledging it work: the reserve gives its room.
    let batch = client.next_batch(None).unwrap().expect("the batch");
    assert_eq!(batch.reports.len(), 2);
    assert_eq!(client.acknowledge_batch(&batch.id, &batch.ids()).unwrap(), 2);
    assert_eq!(client.pending().unwrap(), 0);
    assert_eq!(client.uploaded().unwrap(), [("c".to_string(), 2)]);
    assert_eq!(reserve_len(&dir), None, "the reserve gave its room");

    // Room again: the next record makes the reserve again.
    std::fs::remove_file(&fill).unwrap();
    client.record("c", &json!(3)).unwrap();
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "the reserve is back");
    let leftovers: Vec<String> = names(&dir).into_iter().filter(|n| n.ends_with(".tmp")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    println!("FULL-DISK-OK");
}

/// A disk filled to its last byte: the app still opens its store, reads it, and acknowledges what it uploaded (which
/// frees room), thanks to the reserve; a record fails and leaves the reserve. The child runs on a real 1 MiB tmpfs,
/// mounted in a user and mount namespace of its own (`unshare -rm`); where those are not allowed, the test is
/// skipped with a note.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_still_opens_reads_and_acknowledges() {
    use std::process::Command;
    let probe = Command::new("unshare").args(["-rm", "true"]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        let why = match probe {
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => e.to_string(),
        };
        println!("skipped: `unshare -rm true` fails ({why}): no user and mount namespace to mount a small tmpfs in");
        return;
    }
    let dir = temp_dir("full-disk");
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c"])
        .arg(
            r#"mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" --exact full_disk_child --nocapture --test-threads=1"#,
        )
        .arg("sh")
        .arg(&dir)
        .arg(std::env::current_exe().unwrap())
        .env("LDP_FULL_DISK_CHILD", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("FULL-DISK-OK"),
        "the full-disk child failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(names(&dir).is_empty(), "the tmpfs went with the child's namespace");
    let _ = std::fs::remove_dir_all(&dir);
}
