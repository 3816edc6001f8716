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
    let mut i = 0u64;
    loop {
        i += 1;
        match client.record("c", &json!(i % 4)) {
            Ok(_) | Err(Error::BudgetExceeded { .. }) => {}
            Err(e) => panic!("record: {e}"),
        }
        if i.is_multiple_of(5) {
            if let Some(batch) = client.next_batch(None).unwrap() {
                client.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
            }
        }
    }
}

fn spawn(dir: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env("LDP_CRASH_CHILD", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
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
        let mut a = spawn(&dir);
        let mut b = spawn(&dir);
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
    std::fs::write(dir.join("lock"), b"").unwrap();
    std::fs::write(dir.join("state.json.123.deadbeef.tmp"), b"{half a state").unwrap();
    let client = open(&dir, Duration::from_millis(500)).unwrap();
    client.record("c", &json!(1)).unwrap();
    assert_eq!(client.pending().unwrap(), 1);
    assert!(!dir.join("state.json.123.deadbeef.tmp").exists(), "a killed process's temporary file is swept");
    let _ = std::fs::remove_dir_all(&dir);
}
