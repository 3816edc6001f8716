//! One device's client of one collection (Python's `ldp.client.TelemetryClient`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::bytes::{hmac_sha256, metric_secret};
use crate::cost::PrivacyCost;
use crate::encoder::{envelope_json, Encoder, EncoderOptions};
use crate::error::{Error, Refusal, RefusalCode, Result, ALL_METRICS};
use crate::ledger::{
    self, count_up, outbox_bytes, transact, view, DeviceState, OutboxRecord, PinnedPart, StateStore, StoreTransaction,
    StoreView,
};
use crate::random::{OsRandomSource, RandomSource};
use crate::spec::CollectionSpec;
use crate::upload::{Batch, Outbox, OutboxKey, PendingReport};

/// Unix seconds now, from the system clock.
pub fn system_clock() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// A random source shared by a client's encoders (one lock, one stream: a seeded simulation is reproducible).
#[derive(Clone)]
struct SharedRng(Arc<Mutex<Box<dyn RandomSource>>>);

impl RandomSource for SharedRng {
    fn bits(&mut self, k: u32) -> Result<u64> {
        self.0.lock().map_err(|_| Error::Internal("the random source's lock is poisoned".into()))?.bits(k)
    }
    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        self.0.lock().map_err(|_| Error::Internal("the random source's lock is poisoned".into()))?.wide_bits(k, into)
    }
    fn token_bytes(&mut self, n: usize) -> Result<Vec<u8>> {
        self.0.lock().map_err(|_| Error::Internal("the random source's lock is poisoned".into()))?.token_bytes(n)
    }
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
/// the outbox; the upload functions send the outbox to `ldp serve` (this client is its [`Outbox`]).
///
/// `record` checks the value (a refusal by code and fields, nothing written), then in ONE store transaction checks
/// every cap, charges, randomizes and stores the envelope: the charge and the report are kept together or not at
/// all, so a crash never leaves a report without its charge. Budgets are the spec's, per window and over the
/// lifetime, for each metric and for the collection; a spent budget is an [`Error::BudgetExceeded`]. The outbox is
/// bounded ([`ClientBuilder::max_outbox_bytes`]): a report that would not fit is an [`Error::OutboxFull`], nothing
/// charged. [`TelemetryClient::opt_out`] stops collection on the device.
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

/// What [`TelemetryClient::builder`] makes a client with.
pub struct ClientBuilder {
    spec: CollectionSpec,
    store: Box<dyn StateStore>,
    clock: Clock,
    rng: Option<Box<dyn RandomSource>>,
    max_outbox_bytes: u64,
}

impl ClientBuilder {
    /// The clock (default: the system clock). The ledger never lets it go back.
    pub fn clock(mut self, clock: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// The randomness of reports and of the device secret (default: the OS generator). Another source is for
    /// tests and simulations only.
    pub fn rng(mut self, rng: impl RandomSource + 'static) -> Self {
        self.rng = Some(Box::new(rng));
        self
    }

    /// The most bytes of reports the outbox keeps waiting for upload (default [`DEFAULT_MAX_OUTBOX_BYTES`], 1 MiB):
    /// each pending report counts its envelope line's UTF-8 bytes plus one, pinned batches included. A report that
    /// would go past it is refused with [`Error::OutboxFull`] before anything is charged or stored. Positive: 0 is
    /// refused by [`ClientBuilder::build`].
    pub fn max_outbox_bytes(mut self, bytes: u64) -> Self {
        self.max_outbox_bytes = bytes;
        self
    }

    /// The client; reads the device's state, or makes it in a store that has none (the only write of an open).
    pub fn build(self) -> Result<TelemetryClient> {
        if self.max_outbox_bytes == 0 {
            return Err(Error::value("max_outbox_bytes must be a positive integer, got 0"));
        }
        let rng = SharedRng(Arc::new(Mutex::new(self.rng.unwrap_or_else(|| Box::new(OsRandomSource::new())))));
        let spec = self.spec;
        let check = |s: &DeviceState| -> Result<()> {
            if s.collection != spec.name {
                return Err(Error::Ledger(format!(
                    "this state belongs to collection {:?}, not {:?}: use another store (a budget is never reset)",
                    s.collection, spec.name
                )));
            }
            Ok(())
        };
        let exists = view(self.store.as_ref(), |v| v.device().map(check).transpose())?.is_some();
        if !exists {
            let mut r = rng.clone();
            transact(self.store.as_ref(), |tx| match tx.state() {
                Some(s) => check(s), // made meanwhile by another process
                state @ None => {
                    let (secret, salt) = (token32(&mut r)?, token32(&mut r)?);
                    *state = Some(DeviceState::new(&spec.name, secret, salt));
                    Ok(())
                }
            })?;
        }
        Ok(TelemetryClient {
            spec,
            store: self.store,
            clock: self.clock,
            rng,
            encoders: Mutex::new(Encoders::default()),
            max_outbox_bytes: self.max_outbox_bytes,
        })
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

const BATCH_TAG: &[u8] = b"ldp/client/batch-id/v1\0";

/// `batch_id`: `HMAC-SHA256(salt, "ldp/client/batch-id/v1\0" ‖ ids joined by "," ‖ 0x00 ‖ lines joined by "\n")`,
/// its first 32 hex digits (Python's `ldp.client.uploader.batch_id`).
pub fn batch_id(salt: &[u8], ids: &[u64], lines: &[&str]) -> Result<String> {
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    let digest = hmac_sha256(salt, &[BATCH_TAG, ids.join(",").as_bytes(), &[0], lines.join("\n").as_bytes()])?;
    Ok(crate::bytes::hex(&digest[..16]))
}

/// An item of [`TelemetryClient::record_many`] refused: [`Error::Item`] (`record_many item 2 ("metric"): …`).
fn name_item(item: Option<usize>, metric: &str, e: Error) -> Error {
    let Some(i) = item else { return e };
    match e {
        e @ (Error::Refusal(_) | Error::Value(_) | Error::Type(_)) => {
            Error::Item { index: i, metric: metric.to_string(), error: Box::new(e) }
        }
        other => other,
    }
}

impl TelemetryClient {
    /// A builder of the client of `spec` keeping its state in `store`.
    pub fn builder(spec: CollectionSpec, store: impl StateStore + 'static) -> ClientBuilder {
        ClientBuilder {
            spec,
            store: Box::new(store),
            clock: Box::new(system_clock),
            rng: None,
            max_outbox_bytes: DEFAULT_MAX_OUTBOX_BYTES,
        }
    }

    /// The client of `spec` keeping its state in `store`, with the system clock and the OS generator.
    pub fn new(spec: CollectionSpec, store: impl StateStore + 'static) -> Result<Self> {
        Self::builder(spec, store).build()
    }

    /// The collection spec.
    pub fn spec(&self) -> &CollectionSpec {
        &self.spec
    }

    /// The outbox's cap in bytes ([`ClientBuilder::max_outbox_bytes`]).
    pub fn max_outbox_bytes(&self) -> u64 {
        self.max_outbox_bytes
    }

    /// The encoder of `metric` for the device of `state`, made on first use. A cohort it draws is added to `state`
    /// (committed with the transaction) and the metric named in `fresh`: if the transaction fails, the caller drops
    /// those encoders, whose cohorts were never kept.
    fn encoder<'a>(
        &self,
        cache: &'a mut Encoders,
        fresh: &mut Vec<String>,
        metric: &str,
        state: &mut DeviceState,
    ) -> Result<&'a mut Encoder> {
        let secret = state.keys()?.secret;
        if cache.secret != Some(secret) {
            cache.by_metric.clear();
            cache.secret = Some(secret);
        }
        if !cache.by_metric.contains_key(metric) {
            let m = self.spec.metric(metric)?;
            let protocol = m.protocol();
            let cohorts = protocol.assigned_cohorts(m.params.as_ref());
            let mut cohort = None;
            if cohorts > 0 {
                let key = format!("{metric}\0{}", m.params.fingerprint());
                cohort = Some(match ledger_find(&state.cohorts, &key) {
                    Some(c) => c,
                    None => {
                        let c = self.rng.clone().randbelow(cohorts as u64)? as u32;
                        state.cohorts.push((key, c));
                        fresh.push(metric.to_string());
                        c
                    }
                });
            }
            let secret = if protocol.needs_secret { Some(metric_secret(&secret, metric)?.to_vec()) } else { None };
            let options = EncoderOptions { rng: Some(Box::new(self.rng.clone())), secret, cohort, prr_rng: None };
            cache.by_metric.insert(metric.to_string(), protocol.encoder(m.params.clone(), options)?);
        }
        cache.by_metric.get_mut(metric).ok_or_else(|| Error::Internal("an encoder vanished".into()))
    }

    /// Records `items` in one transaction, all or nothing (`many`: name the refused item in errors).
    fn record_items(&self, items: &[(&str, &Value)], many: bool) -> Result<Vec<u64>> {
        let item = |i: usize| many.then_some(i);
        for (i, (metric, _)) in items.iter().enumerate() {
            let m = self.spec.metric(metric).map_err(|e| name_item(item(i), metric, e))?;
            if m.trust.two_aggregator() {
                // A value the spec sends to two aggregators, secret-shared, is never randomized to one collector:
                // refused before the value is looked at (the Python client does the same).
                let refusal =
                    Refusal::value(RefusalCode::TrustModel).with("metric", *metric).with("trust", m.trust.as_str());
                return Err(name_item(item(i), metric, Error::Refusal(refusal)));
            }
        }
        let reading = (self.clock)();
        let spec = &self.spec;
        let mut cache = self.encoders.lock().map_err(|_| Error::Internal("the encoders' lock is poisoned".into()))?;
        let mut fresh = Vec::new();
        let result = transact(self.store.as_ref(), |tx| {
            fresh.clear();
            let waiting = tx.pending_bytes();
            let state = state_of(tx)?;
            state.keys()?; // opted out: refused before anything else
            if waiting >= self.max_outbox_bytes {
                // No report fits: refused before any value is checked or charged.
                return Err(Error::OutboxFull {
                    pending_bytes: waiting,
                    max_bytes: self.max_outbox_bytes,
                    item: item(0),
                });
            }
            let window = ledger::advance(state, reading, spec.window_seconds)?;
            // Every value is checked first (a bad one names its item), then each is charged in order.
            let mut prepared = Vec::with_capacity(items.len());
            for (i, (metric, value)) in items.iter().enumerate() {
                let encoder = self.encoder(&mut cache, &mut fresh, metric, state)?;
                prepared.push(encoder.prepare(value).map_err(|e| name_item(item(i), metric, e))?);
            }
            let mut lines = Vec::with_capacity(items.len());
            let mut needed = 0;
            for (i, ((metric, _), prepared)) in items.iter().zip(&prepared).enumerate() {
                let encoder = self.encoder(&mut cache, &mut fresh, metric, state)?;
                let reservation = ledger::charge(state, spec, metric, prepared.charge(), window)?;
                let report = encoder.randomize(prepared, reservation.epoch)?;
                let line = envelope_json(spec.fingerprint(), metric, window as u64, &report);
                needed += outbox_bytes(&line);
                if waiting + needed > self.max_outbox_bytes {
                    return Err(Error::OutboxFull {
                        pending_bytes: waiting,
                        max_bytes: self.max_outbox_bytes,
                        item: item(i),
                    });
                }
                lines.push(line);
            }
            let mut ids = Vec::with_capacity(items.len());
            for ((metric, _), line) in items.iter().zip(lines) {
                let state = state_of(tx)?;
                let id = state.next_id;
                state.next_id = id + 1;
                tx.append(OutboxRecord { id, metric: metric.to_string(), line })?;
                ids.push(id);
            }
            Ok(ids)
        });
        if result.is_err() {
            // Cohorts drawn in a transaction that was not kept: their encoders go too.
            for m in &fresh {
                cache.by_metric.remove(m);
            }
        }
        result
    }

    /// Privatizes `value` for `metric` and stores its envelope in the outbox; returns its outbox id. Refused with
    /// nothing written: a bad value ([`Error::Value`]/[`Error::Type`]), a spent budget ([`Error::BudgetExceeded`]),
    /// a full outbox ([`Error::OutboxFull`]), a device that opted out ([`Error::OptedOut`]).
    pub fn record(&self, metric: &str, value: &Value) -> Result<u64> {
        Ok(self.record_items(&[(metric, value)], false)?[0])
    }

    /// Records several `(metric, value)` pairs in ONE transaction (one `fsync` for all); returns their outbox ids, in
    /// order. All or nothing: every value is checked first (a bad one is an [`Error::Item`] naming its item, its
    /// metric and the error); then each is charged in order, seeing the ones before it; if one would break a cap
    /// ([`Error::BudgetExceeded`]) or not fit in the outbox ([`Error::OutboxFull`], whose `item` is the first that
    /// did not fit), nothing of the batch is charged or stored.
    pub fn record_many<'v, M: AsRef<str>>(&self, items: &'v [(M, Value)]) -> Result<Vec<u64>> {
        let items: Vec<(&str, &'v Value)> = items.iter().map(|(m, v)| (m.as_ref(), v)).collect();
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.record_items(&items, true)
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

    fn part(v: &mut dyn StoreView, p: &PinnedPart) -> Result<Batch> {
        let records = v.head((p.last - p.first + 1) as usize)?;
        if records.first().map(|r| r.id) != Some(p.first) || records.last().map(|r| r.id) != Some(p.last) {
            return Err(Error::Ledger(format!(
                "the client's state is damaged: pinned batch {} is not at the head of the outbox",
                p.id
            )));
        }
        Ok(Batch {
            id: p.id.clone(),
            reports: records.into_iter().map(|r| PendingReport { id: r.id, line: r.line }).collect(),
        })
    }

    fn pin(state: &DeviceState, records: &[OutboxRecord]) -> Result<PinnedPart> {
        let ids: Vec<u64> = records.iter().map(|r| r.id).collect();
        let lines: Vec<&str> = records.iter().map(|r| r.line.as_str()).collect();
        Ok(PinnedPart { id: batch_id(&state.keys()?.salt, &ids, &lines)?, first: ids[0], last: ids[ids.len() - 1] })
    }

    /// `Some(answer)`: what [`Outbox::next_batch`] answers without pinning anything (the pinned part, or `None`
    /// when nothing is due: opted out, empty, the upload interval); `None`: a new batch is due.
    fn due(&self, v: &mut dyn StoreView, reading: f64) -> Result<Option<Option<Batch>>> {
        let state = device_of(v)?;
        if state.opted_out() {
            return Ok(Some(None));
        }
        if let Some(p) = state.parts.first().cloned() {
            return Self::part(v, &p).map(|b| Some(Some(b)));
        }
        let now = ledger::check_clock(reading)?.max(state.clock.unwrap_or(f64::NEG_INFINITY));
        if state.last_upload.is_some_and(|last| now < last + self.spec.min_interval_seconds as f64)
            || v.pending_count() == 0
        {
            return Ok(Some(None));
        }
        Ok(None)
    }
}

impl Outbox for TelemetryClient {
    fn next_batch(&self, limit: Option<usize>) -> Result<Option<Batch>> {
        if limit == Some(0) {
            return Err(Error::value("limit must be None or >= 1, got 0"));
        }
        let reading = (self.clock)();
        // A read first: the pinned part, or nothing due, is answered without writing.
        if let Some(answer) = view(self.store.as_ref(), |v| self.due(v, reading))? {
            return Ok(answer);
        }
        transact(self.store.as_ref(), |tx| {
            if let Some(answer) = self.due(tx, reading)? {
                return Ok(answer); // another process pinned or sent meanwhile
            }
            let n = limit.unwrap_or(self.spec.max_batch).min(self.spec.max_batch);
            let records = tx.head(n)?;
            let state = state_of(tx)?;
            let p = Self::pin(state, &records)?;
            state.parts.push(p.clone());
            Ok(Some(Batch {
                id: p.id,
                reports: records.into_iter().map(|r| PendingReport { id: r.id, line: r.line }).collect(),
            }))
        })
    }

    fn split_batch(&self, batch: &str) -> Result<usize> {
        transact(self.store.as_ref(), |tx| {
            let parts = state_of(tx)?.parts.clone();
            let Some(i) = parts.iter().position(|p| p.id == batch) else { return Ok(0) };
            // Parts are contiguous from the head: read through this one.
            let through = tx.head((parts[i].last - parts[0].first + 1) as usize)?;
            let records: Vec<OutboxRecord> = through.into_iter().filter(|r| r.id >= parts[i].first).collect();
            let half = records.len().div_ceil(2);
            if records.len() >= 2 {
                let state = state_of(tx)?;
                let second = Self::pin(state, &records[half..])?;
                let first = Self::pin(state, &records[..half])?;
                state.parts.splice(i..=i, [first, second]);
            }
            Ok(half)
        })
    }

    fn acknowledge_batch(&self, batch: &str, ids: &[u64]) -> Result<usize> {
        let reading = (self.clock)();
        transact(self.store.as_ref(), |tx| {
            let Some(p) = state_of(tx)?.parts.first().cloned() else { return Ok(0) };
            if p.id != batch {
                if !state_of(tx)?.parts.iter().any(|q| q.id == batch) {
                    return Ok(0); // acknowledged already (another process)
                }
                return Err(Error::Ledger(format!(
                    "batch {batch} acknowledged before the part pinned ahead of it ({})",
                    p.id
                )));
            }
            let records = tx.head((p.last - p.first + 1) as usize)?;
            let wanted: std::collections::HashSet<u64> = ids.iter().copied().collect();
            if records.iter().any(|r| !wanted.contains(&r.id)) {
                return Err(Error::Ledger(format!("acknowledgement of batch {batch} does not cover its reports")));
            }
            tx.drop_head(records.len())?;
            let state = state_of(tx)?;
            for r in &records {
                count_up(&mut state.uploaded, &r.metric, 1);
            }
            state.parts.remove(0);
            state.last_upload = Some(ledger::check_clock(reading)?.max(state.clock.unwrap_or(f64::NEG_INFINITY)));
            Ok(records.len())
        })
    }

    fn has_pending(&self) -> Result<bool> {
        Ok(self.pending()? > 0)
    }

    /// The store's key ([`StateStore::upload_key`]): the clients of one [`crate::ledger::FileStore`] folder take
    /// turns to upload.
    fn upload_key(&self) -> OutboxKey {
        self.store.upload_key()
    }

    fn next_upload_at(&self) -> Result<f64> {
        view(self.store.as_ref(), |v| {
            let state = device_of(v)?;
            if state.opted_out() {
                return Ok(f64::INFINITY);
            }
            Ok(state.last_upload.map_or(f64::NEG_INFINITY, |l| l + self.spec.min_interval_seconds as f64))
        })
    }
}

fn ledger_find(v: &[(String, u32)], key: &str) -> Option<u32> {
    v.iter().find(|(k, _)| k == key).map(|(_, c)| *c)
}
