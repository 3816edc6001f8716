//! One device's client of one collection (Python's `ldp.client.TelemetryClient`).
//!
//! Layout: the client, its state and the queries here; making a client (`builder`), recording values (`record`),
//! the client as the uploader's outbox (`outbox`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};

use crate::cost::PrivacyCost;
use crate::encoder::Encoder;
use crate::error::{Error, Result, ALL_METRICS};
use crate::ledger::{self, count_up, transact, view, DeviceState, StateStore, StoreTransaction, StoreView};
use crate::random::RandomSource;
use crate::spec::CollectionSpec;

mod builder;
#[cfg(feature = "prio")]
mod dap;
mod outbox;
mod record;

/// Without the `prio` feature no task can be given, so no two-aggregator report is made (such a metric is refused:
/// [`crate::RefusalCode::TrustModel`]): the task type has no value.
#[cfg(not(feature = "prio"))]
mod dap {
    use crate::encoder::{Charge, Encoder, Prepared};
    use crate::error::Result;

    #[derive(Debug)]
    pub(crate) enum DapTask {}

    impl DapTask {
        pub(crate) fn charge(&self) -> Charge {
            match *self {}
        }
        pub(crate) fn line(&self, _: &mut Encoder, _: &Prepared, _: f64, _: i64) -> Result<String> {
            match *self {}
        }
    }
}

use dap::DapTask;

pub use builder::ClientBuilder;
use builder::SharedRng;
pub use outbox::batch_id;

/// Unix seconds now, from the system clock.
pub fn system_clock() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// How a [`TelemetryClient`] reads the time: Unix seconds.
pub type Clock = Box<dyn Fn() -> f64 + Send + Sync>;

/// The default cap of the outbox: 1 MiB of envelope lines waiting for upload.
pub const DEFAULT_MAX_OUTBOX_BYTES: u64 = 1 << 20;

/// What became of one metric's reports on a device ([`TelemetryClient::counts`]): `reports` recorded, and of them
/// `pending` (waiting for upload), `uploaded` (acknowledged by the collector) and `discarded` (deleted unsent by
/// [`TelemetryClient::opt_out`]). Always `reports == pending + uploaded + discarded`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// Reports recorded.
    pub reports: u64,
    /// Reports waiting for upload (pinned batches included).
    pub pending: u64,
    /// Reports the collector acknowledged.
    pub uploaded: u64,
    /// Reports deleted unsent by opting out.
    pub discarded: u64,
}

/// One device's client of one collection: [`TelemetryClient::record`] privatizes a value and puts its envelope in
/// the outbox; the upload functions send the outbox to `ldp serve` (this client is its
/// [`Outbox`](crate::upload::Outbox)).
///
/// `record` checks the value (a refusal by code and fields, nothing written), then in ONE store transaction checks
/// every cap, charges, randomizes and stores the envelope: the charge and the report are kept together or not at
/// all, so a crash never leaves a report without its charge. Budgets are the spec's, per window and over the
/// lifetime, for each metric and for the collection; a spent budget is an [`Error::BudgetExceeded`]. The outbox is
/// bounded ([`ClientBuilder::max_outbox_bytes`]): a report that would not fit is an [`Error::OutboxFull`], nothing
/// charged. [`TelemetryClient::opt_out`] stops collection on the device.
///
/// A two-aggregator metric (feature `prio`) is recorded once its task is given (`ClientBuilder::task`): each value
/// charged ([`CollectionSpec::report_charge`], capped at [`CollectionSpec::device_window_cap`] a window), sealed as a
/// DAP-09 report to the task's two aggregators and queued in the same outbox, for its leader
/// ([`Outbox::next_dap_report`](crate::upload::Outbox::next_dap_report); the `Uploader` sends it).
///
/// The device secret (32 bytes of the OS generator, made on first use, never sent) and the state live in the
/// store (a [`crate::ledger::FileStore`] in an app). Queries (`spent`, `pending`, …) only read it. A client is
/// `Send + Sync`: every call runs under the store's lock, and any number of clients, in threads or processes, may
/// share one store folder. The uploader's calls on one client, or on the clients of one folder, take turns in a
/// process (one upload at a time per outbox, keyed by [`StateStore::upload_key`]).
pub struct TelemetryClient {
    spec: CollectionSpec,
    store: Box<dyn StateStore>,
    clock: Clock,
    rng: SharedRng,
    encoders: Mutex<Encoders>,
    max_outbox_bytes: u64,
    /// The tasks of the two-aggregator metrics given (feature `prio`), by metric.
    tasks: RwLock<HashMap<String, Arc<DapTask>>>,
}

/// The encoders of one device secret (a secret drawn anew, by an opt-in here or in another process, drops them: their
/// metric secrets and cohorts were the old device's).
#[derive(Default)]
struct Encoders {
    secret: Option<[u8; 32]>,
    by_metric: HashMap<String, Encoder>,
}

impl fmt::Debug for TelemetryClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryClient").field("collection", &self.spec.name).finish_non_exhaustive()
    }
}

fn token32(r: &mut dyn RandomSource) -> Result<[u8; 32]> {
    r.token_bytes(32)?.try_into().map_err(|_| Error::Internal("a short secret".into()))
}

fn state_of(tx: &mut dyn StoreTransaction) -> Result<&mut DeviceState> {
    tx.state().as_mut().ok_or_else(|| Error::Ledger("the client's state is gone".into()))
}

fn device_of(v: &dyn StoreView) -> Result<&DeviceState> {
    v.device().ok_or_else(|| Error::Ledger("the client's state is gone".into()))
}

impl TelemetryClient {
    /// The collection spec.
    pub fn spec(&self) -> &CollectionSpec {
        &self.spec
    }

    /// The outbox's cap in bytes ([`ClientBuilder::max_outbox_bytes`]).
    pub fn max_outbox_bytes(&self) -> u64 {
        self.max_outbox_bytes
    }

    /// Gives this client the task of two-aggregator `metric` (feature `prio`), as [`ClientBuilder::task`] does, or
    /// replaces the one it had (the aggregators' keys rotated: reports recorded before keep their seal and go to
    /// the task ID they name). Refused, nothing changed: a metric of the spec that is no two-aggregator metric, a
    /// task file that is not this metric's task under the spec ([`ClientBuilder::task`] says what is checked).
    #[cfg(feature = "prio")]
    pub fn add_task(&self, metric: &str, task: impl Into<crate::dap::AnyTaskFile>) -> Result<()> {
        let task = Arc::new(DapTask::new(&self.spec, metric, task.into())?);
        let mut tasks = self.tasks.write().map_err(|_| Error::Internal("the tasks' lock is poisoned".into()))?;
        tasks.insert(metric.to_string(), task);
        Ok(())
    }

    /// The task of `metric`, if it was given.
    fn task(&self, metric: &str) -> Result<Option<Arc<DapTask>>> {
        let tasks = self.tasks.read().map_err(|_| Error::Internal("the tasks' lock is poisoned".into()))?;
        Ok(tasks.get(metric).cloned())
    }

    /// Stops collection on this device, in one crash-safe transaction: deletes every pending report (counted per
    /// metric as discarded, see [`TelemetryClient::counts`]) and pinned batch, the device secret, the cohorts, and
    /// the memoized and charge-on-change records, and leaves a marker. The budget already spent stays spent, and the
    /// upload salt is kept (it keys batch ids and the ledger's keyed records, which are deleted), as every ldp client
    /// does. From then on `record` is refused with [`Error::OptedOut`] before anything is charged, `pending` is 0,
    /// an upload sends nothing and `next_upload_at` is +∞, in every process sharing the store. Idempotent: opting
    /// out again writes nothing.
    pub fn opt_out(&self) -> Result<()> {
        let mut cache = self.encoders.lock().map_err(|_| Error::Internal("the encoders' lock is poisoned".into()))?;
        transact(self.store.as_ref(), |tx| {
            if state_of(tx)?.opted_out() {
                return Ok(());
            }
            let pending = tx.head(usize::try_from(tx.pending_count()).unwrap_or(usize::MAX))?;
            tx.drop_all()?;
            let state = state_of(tx)?;
            for r in &pending {
                count_up(&mut state.discarded, &r.metric, 1);
            }
            state.forget();
            Ok(())
        })?;
        *cache = Encoders::default();
        Ok(())
    }

    /// Resumes collection after [`TelemetryClient::opt_out`]: removes the marker and draws a fresh device secret, so
    /// that cohorts are drawn anew and memoized responses are new ones, each charged afresh when first used. The
    /// salt is the one kept (a state an older version of this client opted out kept none: a fresh one is drawn
    /// then). Idempotent: on a device that did not opt out it writes nothing.
    pub fn opt_in(&self) -> Result<()> {
        let mut r = self.rng.clone();
        transact(self.store.as_ref(), |tx| {
            let state = state_of(tx)?;
            if state.opted_out() {
                state.renew(token32(&mut r)?, || token32(&mut r))?;
            }
            Ok(())
        })
    }

    /// Whether the device opted out ([`TelemetryClient::opt_out`]).
    pub fn is_opted_out(&self) -> Result<bool> {
        view(self.store.as_ref(), |v| Ok(device_of(v)?.opted_out()))
    }

    /// The (ε, δ) spent on `metric` (`None`: the whole collection) in the current window, or over the lifetime.
    pub fn spent(&self, metric: Option<&str>, lifetime: bool) -> Result<PrivacyCost> {
        if let Some(m) = metric {
            self.spec.metric(m)?;
        }
        let reading = (self.clock)();
        view(self.store.as_ref(), |v| {
            let state = device_of(v)?;
            let window = ledger::window_at(state, reading, self.spec.window_seconds)?;
            Ok(ledger::spent(state, metric.unwrap_or(ALL_METRICS), if lifetime { None } else { Some(window) }))
        })
    }

    /// The index of the current window (`floor(clock / window_seconds)`, never going back).
    pub fn current_window(&self) -> Result<i64> {
        let reading = (self.clock)();
        view(self.store.as_ref(), |v| ledger::window_at(device_of(v)?, reading, self.spec.window_seconds))
    }

    /// Reports waiting for upload.
    pub fn pending(&self) -> Result<u64> {
        view(self.store.as_ref(), |v| Ok(v.pending_count()))
    }

    /// Bytes waiting for upload, as the outbox's cap counts them (each report's envelope line and newline).
    pub fn pending_bytes(&self) -> Result<u64> {
        view(self.store.as_ref(), |v| Ok(v.pending_bytes()))
    }

    /// Reports acknowledged by the collector so far, per metric.
    pub fn uploaded(&self) -> Result<Vec<(String, u64)>> {
        view(self.store.as_ref(), |v| Ok(device_of(v)?.uploaded.clone()))
    }

    /// What became of the reports of each metric recorded on this device (the metrics with at least one report,
    /// sorted): how many were recorded, and of them how many wait for upload, were acknowledged by the collector, and
    /// were deleted unsent by [`TelemetryClient::opt_out`]; always `reports == pending + uploaded + discarded`. A
    /// read: it writes nothing, and reads the pending reports' lines to tell their metrics.
    pub fn counts(&self) -> Result<BTreeMap<String, Counts>> {
        view(self.store.as_ref(), |v| {
            let pending = v.head(usize::try_from(v.pending_count()).unwrap_or(usize::MAX))?;
            let state = device_of(v)?;
            let mut out: BTreeMap<String, Counts> = BTreeMap::new();
            for r in pending {
                out.entry(r.metric).or_default().pending += 1;
            }
            for (metric, n) in &state.uploaded {
                out.entry(metric.clone()).or_default().uploaded = *n;
            }
            for (metric, n) in &state.discarded {
                out.entry(metric.clone()).or_default().discarded = *n;
            }
            for c in out.values_mut() {
                c.reports = c.pending + c.uploaded + c.discarded;
            }
            Ok(out)
        })
    }
}
