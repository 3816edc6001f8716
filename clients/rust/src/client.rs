//! One device's client of one collection (Python's `ldp.client.TelemetryClient`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::bytes::{hmac_sha256, metric_secret};
use crate::cost::PrivacyCost;
use crate::encoder::{envelope_json, Encoder, EncoderOptions};
use crate::error::{Error, Result, ALL_METRICS};
use crate::ledger::{self, transact, DeviceState, OutboxRecord, PinnedPart, StateStore, StoreTransaction};
use crate::pytext::repr;
use crate::random::{OsRandomSource, RandomSource};
use crate::spec::CollectionSpec;
use crate::upload::{Batch, Outbox, PendingReport};

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

/// One device's client of one collection: [`TelemetryClient::record`] privatizes a value and puts its envelope in
/// the outbox; the upload functions send the outbox to `ldp serve` (this client is its [`Outbox`]).
///
/// `record` checks the value (Python's error type and text, nothing written), then in ONE store transaction checks
/// every cap, charges, randomizes and stores the envelope: the charge and the report are kept together or not at
/// all, so a crash never leaves a report without its charge. Budgets are the spec's, per window and over the
/// lifetime, for each metric and for the collection; a spent budget is an [`Error::BudgetExceeded`].
///
/// The device secret (32 bytes of the OS generator, made on first use, never sent) and the state live in the
/// store (a [`crate::ledger::FileStore`] in an app). A client is `Send + Sync`: every call runs under the store's
/// lock, and any number of clients, in threads or processes, may share one store folder.
pub struct TelemetryClient {
    spec: CollectionSpec,
    store: Box<dyn StateStore>,
    clock: Clock,
    rng: SharedRng,
    encoders: Mutex<HashMap<String, Encoder>>,
    device_secret: [u8; 32],
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

    /// The client; reads (or makes) the device's state.
    pub fn build(self) -> Result<TelemetryClient> {
        let rng = SharedRng(Arc::new(Mutex::new(self.rng.unwrap_or_else(|| Box::new(OsRandomSource::new())))));
        let mut r = rng.clone();
        let spec = self.spec;
        let device_secret = transact(self.store.as_ref(), |tx| {
            let state = tx.state();
            match state {
                None => {
                    let secret: [u8; 32] =
                        r.token_bytes(32)?.try_into().map_err(|_| Error::Internal("short secret".into()))?;
                    let salt: [u8; 32] =
                        r.token_bytes(32)?.try_into().map_err(|_| Error::Internal("short salt".into()))?;
                    *state = Some(DeviceState::new(&spec.name, secret, salt));
                    Ok(secret)
                }
                Some(s) if s.collection != spec.name => Err(Error::Ledger(format!(
                    "this state belongs to collection {}, not {}: use another store (a budget is never reset)",
                    repr(&s.collection),
                    repr(&spec.name)
                ))),
                Some(s) => Ok(s.secret),
            }
        })?;
        Ok(TelemetryClient {
            spec,
            store: self.store,
            clock: self.clock,
            rng,
            encoders: Mutex::new(HashMap::new()),
            device_secret,
        })
    }
}

fn state_of(tx: &mut dyn StoreTransaction) -> Result<&mut DeviceState> {
    tx.state().as_mut().ok_or_else(|| Error::Ledger("the client's state is gone".into()))
}

const BATCH_TAG: &[u8] = b"ldp/client/batch-id/v1\0";

/// `batch_id`: `HMAC-SHA256(salt, "ldp/client/batch-id/v1\0" ‖ ids joined by "," ‖ 0x00 ‖ lines joined by "\n")`,
/// its first 32 hex digits (Python's `ldp.client.uploader.batch_id`).
pub fn batch_id(salt: &[u8], ids: &[u64], lines: &[&str]) -> Result<String> {
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    let digest = hmac_sha256(salt, &[BATCH_TAG, ids.join(",").as_bytes(), &[0], lines.join("\n").as_bytes()])?;
    Ok(crate::bytes::hex(&digest[..16]))
}

impl TelemetryClient {
    /// A builder of the client of `spec` keeping its state in `store`.
    pub fn builder(spec: CollectionSpec, store: impl StateStore + 'static) -> ClientBuilder {
        ClientBuilder { spec, store: Box::new(store), clock: Box::new(system_clock), rng: None }
    }

    /// The client of `spec` keeping its state in `store`, with the system clock and the OS generator.
    pub fn new(spec: CollectionSpec, store: impl StateStore + 'static) -> Result<Self> {
        Self::builder(spec, store).build()
    }

    /// The collection spec.
    pub fn spec(&self) -> &CollectionSpec {
        &self.spec
    }

    fn with_encoder<T>(
        &self,
        metric: &str,
        state: &mut DeviceState,
        f: impl FnOnce(&mut Encoder, &mut DeviceState) -> Result<T>,
    ) -> Result<T> {
        let mut encoders =
            self.encoders.lock().map_err(|_| Error::Internal("the encoders' lock is poisoned".into()))?;
        if let Some(e) = encoders.get_mut(metric) {
            return f(e, state);
        }
        let m = self.spec.metric(metric)?;
        let protocol = m.protocol();
        let cohorts = protocol.assigned_cohorts(m.params.as_ref());
        let mut cohort = None;
        let mut committed = true; // a cohort drawn now is committed with this transaction, or not at all
        if cohorts > 0 {
            let key = format!("{metric}\0{}", m.params.fingerprint());
            match ledger_find(&state.cohorts, &key) {
                Some(c) => cohort = Some(c),
                None => {
                    committed = false;
                    let c = self.rng.clone().randbelow(cohorts as u64)? as u32;
                    state.cohorts.push((key, c));
                    cohort = Some(c);
                }
            }
        }
        let secret =
            if protocol.needs_secret { Some(metric_secret(&self.device_secret, metric)?.to_vec()) } else { None };
        let options = EncoderOptions { rng: Some(Box::new(self.rng.clone())), secret, cohort, prr_rng: None };
        let mut encoder = protocol.encoder(m.params.clone(), options)?;
        let out = f(&mut encoder, state);
        if committed && out.is_ok() {
            encoders.insert(metric.to_string(), encoder);
        }
        out
    }

    /// Privatizes `value` for `metric` and stores its envelope in the outbox; returns its outbox id. A bad value is
    /// an [`Error::Value`]/[`Error::Type`], a spent budget an [`Error::BudgetExceeded`]: both with nothing written.
    pub fn record(&self, metric: &str, value: &Value) -> Result<u64> {
        self.spec.metric(metric)?;
        let reading = (self.clock)();
        let spec = &self.spec;
        transact(self.store.as_ref(), |tx| {
            let state = state_of(tx)?;
            let window = ledger::advance(state, reading, spec.window_seconds)?;
            let line = self.with_encoder(metric, state, |encoder, state| {
                let prepared = encoder.prepare(value)?;
                let reservation = ledger::charge(state, spec, metric, prepared.charge(), window)?;
                let report = encoder.randomize(&prepared, reservation.epoch)?;
                Ok(envelope_json(spec.fingerprint(), metric, window as u64, &report))
            })?;
            let id = state.next_id;
            state.next_id = id + 1;
            tx.append(OutboxRecord { id, metric: metric.to_string(), line })?;
            Ok(id)
        })
    }

    /// The (ε, δ) spent on `metric` (`None`: the whole collection) in the current window, or over the lifetime.
    pub fn spent(&self, metric: Option<&str>, lifetime: bool) -> Result<PrivacyCost> {
        if let Some(m) = metric {
            self.spec.metric(m)?;
        }
        let reading = (self.clock)();
        transact(self.store.as_ref(), |tx| {
            let state = state_of(tx)?;
            let window = ledger::window_at(state, reading, self.spec.window_seconds)?;
            Ok(ledger::spent(state, metric.unwrap_or(ALL_METRICS), if lifetime { None } else { Some(window) }))
        })
    }

    /// The index of the current window (`floor(clock / window_seconds)`, never going back).
    pub fn current_window(&self) -> Result<i64> {
        let reading = (self.clock)();
        transact(self.store.as_ref(), |tx| ledger::window_at(state_of(tx)?, reading, self.spec.window_seconds))
    }

    /// Reports waiting for upload.
    pub fn pending(&self) -> Result<u64> {
        transact(self.store.as_ref(), |tx| Ok(tx.pending_count()))
    }

    /// Reports acknowledged by the collector so far, per metric.
    pub fn uploaded(&self) -> Result<Vec<(String, u64)>> {
        transact(self.store.as_ref(), |tx| Ok(state_of(tx)?.uploaded.clone()))
    }

    fn part(tx: &mut dyn StoreTransaction, p: &PinnedPart) -> Result<Batch> {
        let records = tx.head((p.last - p.first + 1) as usize)?;
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
        Ok(PinnedPart { id: batch_id(&state.salt, &ids, &lines)?, first: ids[0], last: ids[ids.len() - 1] })
    }
}

impl Outbox for TelemetryClient {
    fn next_batch(&self, limit: Option<usize>) -> Result<Option<Batch>> {
        if limit == Some(0) {
            return Err(Error::value("limit must be None or >= 1, got 0"));
        }
        let reading = (self.clock)();
        transact(self.store.as_ref(), |tx| {
            if let Some(p) = state_of(tx)?.parts.first().cloned() {
                return Self::part(tx, &p).map(Some);
            }
            let state = state_of(tx)?;
            let now = ledger::check_clock(reading)?.max(state.clock.unwrap_or(f64::NEG_INFINITY));
            if let Some(last) = state.last_upload {
                if now < last + self.spec.min_interval_seconds as f64 {
                    return Ok(None);
                }
            }
            let n = limit.unwrap_or(self.spec.max_batch).min(self.spec.max_batch);
            let records = tx.head(n)?;
            if records.is_empty() {
                return Ok(None);
            }
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
                match state.uploaded.iter_mut().find(|(m, _)| *m == r.metric) {
                    Some((_, n)) => *n += 1,
                    None => state.uploaded.push((r.metric.clone(), 1)),
                }
            }
            state.parts.remove(0);
            state.last_upload = Some(ledger::check_clock(reading)?.max(state.clock.unwrap_or(f64::NEG_INFINITY)));
            Ok(records.len())
        })
    }

    fn has_pending(&self) -> Result<bool> {
        Ok(self.pending()? > 0)
    }

    fn next_upload_at(&self) -> Result<f64> {
        transact(self.store.as_ref(), |tx| {
            Ok(state_of(tx)?.last_upload.map_or(f64::NEG_INFINITY, |l| l + self.spec.min_interval_seconds as f64))
        })
    }
}

fn ledger_find(v: &[(String, u32)], key: &str) -> Option<u32> {
    v.iter().find(|(k, _)| k == key).map(|(_, c)| *c)
}
