//! Recording values: each checked, charged, randomized and queued in one store transaction, all or nothing.

use serde_json::Value;

use std::sync::Arc;

use super::{state_of, DapTask, Encoders, TelemetryClient};
use crate::bytes::metric_secret;
use crate::encoder::{envelope_json, Encoder, EncoderOptions};
use crate::error::{Error, Refusal, RefusalCode, Result};
use crate::ledger::{self, outbox_bytes, transact, DeviceState, OutboxRecord, StoreTransaction};
use crate::random::RandomSource;

/// The items of a record call, and the task of each (`None`: not a two-aggregator metric).
type Items<'a> = (&'a [(&'a str, &'a Value)], &'a [Option<Arc<DapTask>>]);

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

    /// Records `items` in one transaction, all or nothing (`many`: name the refused item in errors).
    fn record_items(&self, items: &[(&str, &Value)], many: bool) -> Result<Vec<u64>> {
        let item = |i: usize| many.then_some(i);
        let mut tasks: Vec<Option<Arc<DapTask>>> = Vec::with_capacity(items.len());
        for (i, (metric, _)) in items.iter().enumerate() {
            let m = self.spec.metric(metric).map_err(|e| name_item(item(i), metric, e))?;
            let task = if m.trust.two_aggregator() { self.task(metric)? } else { None };
            if m.trust.two_aggregator() && task.is_none() {
                // A value the spec sends to two aggregators, secret-shared, is never randomized to one collector:
                // without its task (or the `prio` feature) it is refused before the value is looked at (the Python
                // client does the same).
                let refusal =
                    Refusal::value(RefusalCode::TrustModel).with("metric", *metric).with("trust", m.trust.as_str());
                return Err(name_item(item(i), metric, Error::Refusal(refusal)));
            }
            tasks.push(task);
        }
        let reading = (self.clock)();
        let mut cache = self.encoders.lock().map_err(|_| Error::Internal("the encoders' lock is poisoned".into()))?;
        let mut fresh = Vec::new();
        let result = transact(self.store.as_ref(), |tx| {
            fresh.clear();
            self.record_in(tx, &mut cache, &mut fresh, (items, &tasks), many, reading)
        });
        if result.is_err() {
            // Cohorts drawn in a transaction that was not kept: their encoders go too.
            for m in &fresh {
                cache.by_metric.remove(m);
            }
        }
        result
    }

    /// The transaction of [`TelemetryClient::record_items`] at clock `reading`: every value checked first (a bad one
    /// names its item), then each charged and randomized in order (a two-aggregator metric's by its task: its
    /// charge, its sealed DAP report), its line fitting in the outbox, then all queued. The metrics whose encoders
    /// drew a cohort are named in `fresh`.
    fn record_in(
        &self,
        tx: &mut dyn StoreTransaction,
        cache: &mut Encoders,
        fresh: &mut Vec<String>,
        (items, tasks): Items<'_>,
        many: bool,
        reading: f64,
    ) -> Result<Vec<u64>> {
        let spec = &self.spec;
        let item = |i: usize| many.then_some(i);
        let waiting = tx.pending_bytes();
        let state = state_of(tx)?;
        state.keys()?; // opted out: refused before anything else
        if waiting >= self.max_outbox_bytes {
            // No report fits: refused before any value is checked or charged.
            return Err(Error::OutboxFull { pending_bytes: waiting, max_bytes: self.max_outbox_bytes, item: item(0) });
        }
        let window = ledger::advance(state, reading, spec.window_seconds)?;
        let mut prepared = Vec::with_capacity(items.len());
        for (i, (metric, value)) in items.iter().enumerate() {
            let encoder = self.encoder(cache, fresh, metric, state)?;
            prepared.push(encoder.prepare(value).map_err(|e| name_item(item(i), metric, e))?);
        }
        let mut lines = Vec::with_capacity(items.len());
        let mut needed = 0;
        for (i, (((metric, _), prepared), task)) in items.iter().zip(&prepared).zip(tasks).enumerate() {
            let encoder = self.encoder(cache, fresh, metric, state)?;
            let line = match task {
                Some(task) => {
                    ledger::charge(state, spec, metric, &task.charge(), window)?;
                    task.line(encoder, prepared, reading, window)?
                }
                None => {
                    let reservation = ledger::charge(state, spec, metric, prepared.charge(), window)?;
                    let report = encoder.randomize(prepared, reservation.epoch)?;
                    envelope_json(spec.fingerprint(), metric, window as u64, &report)
                }
            };
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
}

fn ledger_find(v: &[(String, u32)], key: &str) -> Option<u32> {
    v.iter().find(|(k, _)| k == key).map(|(_, c)| *c)
}
