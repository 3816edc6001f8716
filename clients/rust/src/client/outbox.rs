//! The client as the uploader's [`Outbox`]: batches pinned (their ids kept until acknowledged), split and
//! acknowledged in the device's state.

use super::{device_of, state_of, TelemetryClient};
use crate::bytes::hmac_sha256;
use crate::error::{Error, Result};
use crate::ledger::{self, count_up, transact, view, DeviceState, OutboxRecord, PinnedPart, StoreView};
#[cfg(feature = "prio")]
use crate::upload::DapUpload;
use crate::upload::{Batch, Outbox, OutboxKey, PendingReport};

/// An `info` line of the `log` facade (feature `uploader`; nothing without it).
#[cfg(feature = "prio")]
fn log_info(message: &str) {
    #[cfg(feature = "uploader")]
    log::info!("{message}");
    #[cfg(not(feature = "uploader"))]
    let _ = message;
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
    /// Whether `metric`'s reports go to two aggregators (the two-aggregator lane), not to the collector.
    fn two_aggregator(&self, metric: &str) -> bool {
        self.spec.metric(metric).is_ok_and(|m| m.trust.two_aggregator())
    }

    /// The collector's reports at the head of the outbox, at most `n`: up to the first two-aggregator report (the
    /// lanes share one queue, so each sends only from the head).
    fn collector_head(&self, v: &mut dyn StoreView, n: usize) -> Result<Vec<OutboxRecord>> {
        let mut records = v.head(n)?;
        let cut = records.iter().position(|r| self.two_aggregator(&r.metric)).unwrap_or(records.len());
        records.truncate(cut);
        Ok(records)
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
            || self.collector_head(v, 1)?.is_empty()
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
            let records = self.collector_head(tx, n)?;
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

    /// The report at the head of the outbox if it is a two-aggregator one whose task was given: its line's report,
    /// for the URL of its task's leader and the task ID the line names.
    #[cfg(feature = "prio")]
    fn next_dap_report(&self) -> Result<Option<DapUpload>> {
        let Some(head) =
            view(self.store.as_ref(), |v| Ok(if device_of(v)?.opted_out() { None } else { v.head(1)?.pop() }))?
        else {
            return Ok(None);
        };
        if !self.two_aggregator(&head.metric) {
            return Ok(None);
        }
        let Some(task) = self.task(&head.metric)? else {
            log_info(&format!("a pending report of {:?} waits: no task was given for it", head.metric));
            return Ok(None);
        };
        let (task_id, body) = super::dap::parse_dap_line(&head.line).ok_or_else(|| {
            Error::Ledger(format!("the client's state is damaged: outbox report {} is no DAP report line", head.id))
        })?;
        let url = format!("{}/tasks/{task_id}/reports", task.leader_url().trim_end_matches('/'));
        Ok(Some(DapUpload { id: head.id, url, body }))
    }

    fn acknowledge_dap_report(&self, id: u64) -> Result<usize> {
        transact(self.store.as_ref(), |tx| {
            let head = tx.head(1)?;
            let Some(r) = head.first().filter(|r| r.id == id && self.two_aggregator(&r.metric)) else { return Ok(0) };
            let metric = r.metric.clone();
            tx.drop_head(1)?;
            count_up(&mut state_of(tx)?.uploaded, &metric, 1);
            Ok(1)
        })
    }

    fn has_collector_pending(&self) -> Result<bool> {
        view(self.store.as_ref(), |v| {
            let n = usize::try_from(v.pending_count()).unwrap_or(usize::MAX);
            Ok(v.head(n)?.iter().any(|r| !self.two_aggregator(&r.metric)))
        })
    }

    /// The store's key ([`StateStore::upload_key`](crate::ledger::StateStore::upload_key)): the clients of one
    /// [`crate::ledger::FileStore`] folder take turns to upload.
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
