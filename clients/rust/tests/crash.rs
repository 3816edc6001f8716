//! The file store survives being killed: two child processes record reports (and acknowledge batches) on one state
//! folder and are SIGKILLed at random moments, 200 times. After every kill the store must open at once (never locked
//! out: the OS releases a dead process's lock), read whole (never corrupt), never exceed its cap (never over-spent),
//! and hold exactly the reports its charges paid for (no report without its charge, no charge without its report).
//!
//! The children are this test binary run again with `LDP_CRASH_CHILD` set (the `crash_child` test then works until
//! it is killed; without the variable it returns at once).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ldp_client::ledger::FileStore;
use ldp_client::upload::Outbox;
use ldp_client::{json, CollectionSpec, Error, TelemetryClient};

const KILLS: usize = 200;
const LIFETIME: f64 = 4000.0;

fn spec() -> CollectionSpec {
    CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": "crash-test", "budget": {"per_window": LIFETIME, "lifetime": LIFETIME},
                "upload": {"min_interval_seconds": 0, "max_batch": 7},
                "metrics": {"c": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                                  "budget": {"per_report": 1.1}}}}),
        "spec",
    )
    .unwrap()
}

fn open(dir: &Path, timeout: Duration) -> ldp_client::Result<TelemetryClient> {
    let mut store = FileStore::with_timeout(dir, timeout)?;
    store.set_compact_bytes(4096); // rewrite the log often: its copy is killed too
    TelemetryClient::builder(spec(), store).clock(|| 1_700_000_000.0).build()
}

/// The child: records and acknowledges until killed (or until the budget is spent, then only acknowledges).
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os("LDP_CRASH_CHILD") else { return };
    let client = open(Path::new(&dir), Duration::from_secs(30)).unwrap();
    let toggle = std::env::var_os("LDP_CRASH_OPT_OUT").is_some();
    let mut i = 0u64;
    loop {
        i += 1;
        match client.record("c", &json!(i % 4)) {
            Ok(_) | Err(Error::BudgetExceeded { .. }) => {}
            Err(Error::OptedOut(_)) if toggle => {}
            Err(e) => panic!("record: {e}"),
        }
        if toggle && i % 6 == 3 {
            client.opt_out().unwrap();
        }
        if toggle && i.is_multiple_of(6) {
            client.opt_in().unwrap();
        }
        if i.is_multiple_of(5) {
            if let Some(batch) = client.next_batch(None).unwrap() {
                client.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
            }
        }
    }
}

fn spawn_child(dir: &Path, opt_out: bool) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env("LDP_CRASH_CHILD", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if opt_out {
        cmd.env("LDP_CRASH_OPT_OUT", "1");
    }
    cmd.spawn().unwrap()
}

/// One round: two children work on `dir` (opting out and in too when `opt_out`) and are killed at random moments;
/// panics if one exited by itself (its error output in the message).
fn kill_two_children(dir: &Path, rng: &mut Lcg, opt_out: bool, round: usize) {
    let mut a = spawn_child(dir, opt_out);
    let mut b = spawn_child(dir, opt_out);
    std::thread::sleep(Duration::from_millis(5 + rng.below(40)));
    a.kill().unwrap();
    std::thread::sleep(Duration::from_millis(rng.below(15)));
    b.kill().unwrap();
    for child in [&mut a, &mut b] {
        let status = child.wait().unwrap();
        if status.code().is_some() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
            panic!("round {round}: the child exited ({status:?}) before it was killed:\n{err}");
        }
    }
}

/// A small deterministic generator for the kill times.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn two_processes_killed_200_times_never_over_spend_corrupt_or_lock_out() {
    let dir = tempfile_dir("crash");
    let mut rng = Lcg(0x6c64_7020_6372_6173);
    let cost = open(&dir, Duration::from_secs(5)).unwrap().spec().metrics[0].params.privacy_cost().epsilon;
    let started = Instant::now();
    let mut max_count = 0;
    for round in 0..KILLS / 2 {
        kill_two_children(&dir, &mut rng, false, round);
        // Never locked out: a dead process's lock is released by the OS.
        let t0 = Instant::now();
        let client = open(&dir, Duration::from_secs(2)).unwrap_or_else(|e| panic!("round {round}: locked out? {e}"));
        let pending = client.pending().unwrap_or_else(|e| panic!("round {round}: corrupt? {e}"));
        assert!(t0.elapsed() < Duration::from_secs(2), "round {round}: waited {:?} for the lock", t0.elapsed());
        let spent = client.spent(Some("c"), true).unwrap().epsilon;
        let uploaded: u64 = client.uploaded().unwrap().iter().map(|(_, n)| n).sum();
        // Never over-spent.
        assert!(spent <= LIFETIME * (1.0 + 1e-9), "round {round}: spent {spent} over {LIFETIME}");
        // Exactly the reports the charges paid for.
        let count = pending + uploaded;
        let paid = (spent / cost).round() as u64;
        assert!(
            (spent - paid as f64 * cost).abs() <= 1e-6,
            "round {round}: spent {spent} is not a whole number of reports"
        );
        assert_eq!(
            paid, count,
            "round {round}: {paid} reports charged, {count} exist ({pending} pending, {uploaded} uploaded)"
        );
        max_count = max_count.max(count);
    }
    // Reads repair nothing: the first write after the kills (opting out always changes the state) removes what the
    // killed children left.
    open(&dir, Duration::from_secs(2)).unwrap().opt_out().unwrap();
    let leftovers: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    assert!(max_count > 50, "the children made only {max_count} reports: the kills tested little");
    println!("{KILLS} kills in {:?}, {max_count} reports at most", started.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ldp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_lock_file_left_by_a_dead_process_never_blocks() {
    let dir = tempfile_dir("stale-lock");
    open(&dir, Duration::from_millis(500)).unwrap().record("c", &json!(0)).unwrap();
    std::fs::write(dir.join("lock"), b"").unwrap();
    std::fs::write(dir.join("state.json.123.deadbeef.tmp"), b"{half a state").unwrap();
    let client = open(&dir, Duration::from_millis(500)).unwrap();
    client.record("c", &json!(1)).unwrap();
    assert_eq!(client.pending().unwrap(), 2);
    assert!(!dir.join("state.json.123.deadbeef.tmp").exists(), "a killed process's temporary file is swept");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Opting out and in is one crash-safe transaction each: two children record, acknowledge, opt out and opt in on
/// one folder and are killed at random moments, 60 times. After every kill the store opens at once and whole; an
/// opted-out device holds no report; the budget spent never goes down (opting out keeps it) nor over its cap; and
/// each charged report is pending, uploaded, or counted as discarded by the opt-out that deleted it, exactly.
#[test]
fn killed_while_opting_out_and_in_never_corrupt_reset_or_keep_reports() {
    let dir = tempfile_dir("crash-opt-out");
    let mut rng = Lcg(0x6f70_7420_6f75_7421);
    let cost = open(&dir, Duration::from_secs(5)).unwrap().spec().metrics[0].params.privacy_cost().epsilon;
    let (mut last_spent, mut opted_out_seen, mut deleted_seen) = (0.0, 0, 0);
    for round in 0..30 {
        kill_two_children(&dir, &mut rng, true, round);
        let client = open(&dir, Duration::from_secs(2)).unwrap_or_else(|e| panic!("round {round}: locked out? {e}"));
        let pending = client.pending().unwrap_or_else(|e| panic!("round {round}: corrupt? {e}"));
        let bytes = client.pending_bytes().unwrap();
        let opted_out = client.is_opted_out().unwrap();
        let spent = client.spent(Some("c"), true).unwrap().epsilon;
        let uploaded: u64 = client.uploaded().unwrap().iter().map(|(_, n)| n).sum();
        assert_eq!(pending == 0, bytes == 0, "round {round}: {pending} reports in {bytes} bytes");
        if opted_out {
            opted_out_seen += 1;
            assert_eq!(pending, 0, "round {round}: an opted-out device holds reports");
            assert_eq!(client.next_batch(None).unwrap(), None);
        }
        assert!(spent >= last_spent, "round {round}: the budget spent went down from {last_spent} to {spent}");
        assert!(spent <= LIFETIME * (1.0 + 1e-9), "round {round}: spent {spent} over {LIFETIME}");
        let paid = (spent / cost).round() as u64;
        // Every charged report is pending, uploaded, or counted as discarded by the opt-out that deleted it.
        let counts = client.counts().unwrap().get("c").copied().unwrap_or_default();
        assert_eq!((counts.pending, counts.uploaded), (pending, uploaded), "round {round}: {counts:?}");
        assert_eq!(paid, counts.reports, "round {round}: {paid} charged, {counts:?}");
        if counts.discarded > 0 {
            deleted_seen += 1;
        }
        last_spent = spent;
    }
    assert!(opted_out_seen + deleted_seen > 0, "the children never opted out: the kills tested little");
    assert!(last_spent > 0.0, "the children recorded nothing");
    println!("60 kills: opted out after {opted_out_seen} rounds, reports deleted by an opt-out after {deleted_seen}");
    let _ = std::fs::remove_dir_all(&dir);
}
