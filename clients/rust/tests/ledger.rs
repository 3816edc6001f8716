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

#[path = "ledger/bounded_outbox.rs"]
mod bounded_outbox;
#[path = "ledger/counts.rs"]
mod counts;
#[path = "ledger/fail_closed.rs"]
mod fail_closed;
#[path = "ledger/full_disk.rs"]
mod full_disk;
#[path = "ledger/opting_out.rs"]
mod opting_out;
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

#[path = "ledger/reads.rs"]
mod reads;
