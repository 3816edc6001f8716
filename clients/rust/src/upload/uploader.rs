//! The blocking uploader (feature `uploader`): sends a device's outbox to `ldp serve` over HTTP(S) with `ureq`.

use std::fmt;
use std::time::{Duration, Instant};

use super::http::{post, Response};
use super::options::host_of;
use super::request::{Reply, UploadRequest};
use super::{turns, Answer, Batch, Outbox, UploadOptions};
use crate::error::{Error, Result};

mod dap;

/// Why an upload call returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Nothing left to send.
    Empty,
    /// Reports wait, but the spec's upload interval has not passed.
    Interval,
    /// The call's deadline passed: what was not sent stays in the outbox.
    Deadline,
}

/// What one [`Uploader::upload`] call did (Python's `UploadResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct UploadResult {
    /// Batches acknowledged.
    pub batches: u64,
    /// Reports acknowledged and deleted from the outbox.
    pub acknowledged: u64,
    /// Lines the collector stored, summed over its answers.
    pub accepted: u64,
    /// Lines the collector refused, by reason.
    pub rejected: Vec<(String, u64)>,
    /// Batches the collector had stored already (a retry after a lost reply).
    pub duplicates: u64,
    /// Why the call returned.
    pub stopped: Stopped,
    /// Unix seconds from which the next batch may go (negative infinity: at once).
    pub next_upload_at: f64,
}

/// Sends a device's outbox to `ldp serve` (Python's `ldp.client.uploader.upload`): one `POST` per batch part with
/// `Authorization: Bearer`, `Content-Type: application/x-ndjson`, `Ldp-Batch-Id` and `Content-Encoding: gzip`.
///
/// - The part (its reports and id) is pinned in the outbox before it is first sent, so a retry, a crash or a lost
///   reply resends the same lines under the same id, to whichever endpoint, and the collector stores them once.
/// - The reply is classified by [`Reply::classify`]: a sane 2xx acknowledges the part; any other 2xx acknowledges
///   nothing; 413 splits the part; 429 and 503 wait `Retry-After` (capped at `max_delay`); no reply by the request's
///   deadline, connection errors, 408 and other 5xx back off with full jitter; `max_attempts` requests per part;
///   redirects are refused (they would carry the token elsewhere); any other status stops the call.
/// - One deadline per request covers connecting, sending and reading the whole reply, and the reply is read at most
///   64 KiB: a collector that trickles or floods its reply cannot hold the call or its memory.
/// - The call ends by `call_timeout`: the parts not sent stay in the outbox ([`Stopped::Deadline`]).
///
/// # Several endpoints: failover
///
/// The endpoints of [`UploadOptions`] are replicas of one collector (`ldp serve` over shared storage, or
/// balancers): the same part goes under the same batch id to whichever replica takes it, and the shuffler stage
/// downstream counts a batch once, so a part retried on another replica after a lost reply is counted once.
///
/// - Each call starts with the first endpoint. Once an endpoint acknowledged a part, the following parts of the
///   call go to it (sticky).
/// - A failure saying "this replica cannot take it now" — no reply by the request's deadline, a connection error,
///   408, 503 or another 5xx — sends the part's next request to the next endpoint of the list (cyclically), at
///   once, as long as some endpoint has not failed for this part since the last wait. When every endpoint has
///   failed in a row (a full round), the uploader waits as with one endpoint: the `Retry-After` of the round's last
///   reply if it was a 503 carrying one (capped at `max_delay`), else full-jitter back-off whose exponent is the
///   number of failed rounds (1 for the first wait, 2 for the second, …); the next round starts with the endpoint
///   after the last one tried. With one endpoint, every failure is a full round: the behaviour of one URL.
/// - 429 (the fleet asks to slow down) waits on the same endpoint; 413 splits the part on the same endpoint; any
///   other 4xx, a redirect or an insane 2xx stops the call (every replica would answer the same).
/// - `max_attempts` counts every request of a part, whichever endpoint it went to.
/// - Switching logs one `info` line (the [`log`](https://docs.rs/log) crate) naming both hosts and the status or
///   error.
///
/// Callers who want to spread devices over replicas shuffle the endpoint list per device; the uploader does not.
///
/// # Two-aggregator reports
///
/// The reports of a two-aggregator metric (recorded with its task: feature `prio`) wait in the same outbox and go to
/// their task's leader, each alone ([`Outbox::next_dap_report`]): `PUT {leader}/tasks/{task_id}/reports`, no token,
/// oldest first. The lanes share the outbox's queue: each call sends the two-aggregator reports at its head, then a
/// batch of the collector's reports behind them, and so on, so reports leave in the order they were recorded. The
/// leader's answer ([`DapReply::classify`](super::DapReply::classify)): 201 acknowledges the report (`accepted`);
/// 409 `report_replayed` too (`duplicates`); a 400 whose code no retry changes ([`DAP_GONE`](super::DAP_GONE))
/// deletes it, counted in `rejected` by code; 400 `report_too_early` keeps it and ends the call
/// ([`Stopped::Interval`]); no answer, 408, 429 and 5xx are retried on the same leader (`Retry-After`, else the
/// back-off), `max_attempts` requests a report, then an [`Error::Transport`]; anything else is an
/// [`Error::UploadRejected`], the report kept. A device with no report for the collector uploads with
/// [`UploadOptions::without_collector`].
///
/// # One upload at a time per outbox
///
/// Calls on one outbox take turns, from any threads and through any `Uploader`s: a call holds its outbox's turn
/// from start to end (one per [`Outbox::upload_key`] in the process: a [`crate::TelemetryClient`] is keyed by its
/// store, a [`crate::ledger::FileStore`] by its folder, so the clients of one folder take turns too).
///
/// - A call that finds another one uploading the outbox waits for it, at most until its own `call_timeout`
///   (without one, as long as it takes), then uploads what is still pending: the parts the other call acknowledged
///   are not sent again (often nothing is left: [`Stopped::Empty`] or [`Stopped::Interval`]). Waiting calls take
///   their turns in no set order.
/// - A call whose `call_timeout` passes while it waits returns [`Stopped::Deadline`] having sent nothing.
/// - A call from the thread that is uploading the outbox already (the options' `sleep`, or a logger, calling
///   `upload` on it) is an [`Error::Value`], nothing sent: it would wait for itself.
/// - Processes do not take turns: two processes uploading one folder at once may send a pinned part twice, which
///   the collector stores once (its batch id).
///
/// Nothing here logs a report line or the token.
pub struct Uploader {
    options: UploadOptions,
    hosts: Vec<String>,
}

impl fmt::Debug for Uploader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Uploader").field("options", &self.options).finish()
    }
}

#[derive(Default)]
struct Tally {
    batches: u64,
    acknowledged: u64,
    accepted: u64,
    rejected: Vec<(String, u64)>,
    duplicates: u64,
}

impl Tally {
    /// Adds a part the collector acknowledged: `done` reports deleted from the outbox, and the collector's `answer`.
    fn add(&mut self, done: usize, answer: Answer) {
        self.batches += 1;
        self.acknowledged += done as u64;
        self.accepted += answer.accepted;
        for (reason, n) in answer.rejected {
            match self.rejected.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, m)) => *m += n,
                None => self.rejected.push((reason, n)),
            }
        }
        self.duplicates += u64::from(answer.duplicate);
    }
}

/// Where a call is: its deadline, the endpoint in use, and what was acknowledged so far.
struct Call {
    end: Option<Instant>,
    /// The endpoint in use: the first, then the last one that acknowledged a part.
    current: usize,
    tally: Tally,
}

impl Call {
    /// Whether the call's deadline has passed at `t`.
    fn past(&self, t: Instant) -> bool {
        self.end.is_some_and(|end| t >= end)
    }
}

/// What became of a part.
enum PartEnd {
    /// Settled (acknowledged or split): the next part, of at most this many reports (`None`: the spec's
    /// `max_batch`).
    Next(Option<usize>),
    /// The call stops.
    Stop(Stopped),
}

/// What a reply to a part says: settled ([`PartEnd::Next`]'s limit), or to be tried again, after the collector's
/// `Retry-After` if it gave one.
enum Outcome {
    Settled(Option<usize>),
    Retry(Option<f64>),
}

/// When a part's next request goes: at once to the next endpoint, after a wait, or never (the call's deadline
/// would pass during the wait).
enum NextTry {
    Now,
    After(Duration),
    Deadline,
}

impl Uploader {
    /// An uploader with `options`.
    pub fn new(options: UploadOptions) -> Self {
        // The URLs were checked by `UploadOptions::new`.
        let hosts = options.endpoints.iter().map(|e| host_of(e).unwrap_or_else(|_| "?".into())).collect();
        Uploader { options, hosts }
    }

    /// Full jitter: uniform in `[0, min(max_delay, 2^(round − 1))]` seconds (`round` ≥ 1: the waits so far for the
    /// part, this one included).
    fn backoff(&mut self, round: u32) -> Duration {
        let cap = self.options.max_delay.as_secs_f64().min(2f64.powi(round.saturating_sub(1).min(1023) as i32));
        Duration::from_secs_f64((self.options.jitter)() * cap)
    }

    /// Sends the outbox's due batches, starting with the first endpoint (see [`Uploader`] for the failover rules);
    /// what was not acknowledged stays queued. An error (the collector refused a batch for good, a batch not
    /// delivered after `max_attempts` requests, an insane reply) returns with what was done before it in the error's
    /// message; the outbox keeps the batch. While another call uploads the same outbox, this one waits its turn,
    /// at most until its `call_timeout` ([`Stopped::Deadline`], nothing sent): see
    /// [one upload at a time](Uploader#one-upload-at-a-time-per-outbox).
    pub fn upload(&mut self, outbox: &dyn Outbox) -> Result<UploadResult> {
        let start = Instant::now();
        let call_end = self.options.call_timeout.map(|t| start + t);
        let Some(_turn) = turns::take(outbox.upload_key(), call_end)? else {
            log::info!("upload: another upload of this outbox ran past this call's deadline; nothing sent");
            return Ok(UploadResult {
                batches: 0,
                acknowledged: 0,
                accepted: 0,
                rejected: Vec::new(),
                duplicates: 0,
                stopped: Stopped::Deadline,
                next_upload_at: outbox.next_upload_at()?,
            });
        };
        if self.options.endpoints.is_empty() && outbox.has_collector_pending()? {
            return Err(Error::value(
                "the outbox holds reports for the collector: UploadOptions::new(endpoints, token) sends them",
            ));
        }
        let mut call = Call { end: call_end, current: 0, tally: Tally::default() };
        let mut limit = None;
        let mut stopped = None;
        while stopped.is_none() {
            if call.past(Instant::now()) {
                stopped = Some(Stopped::Deadline);
                break;
            }
            // The two-aggregator reports at the head first, then a batch of the collector's reports behind them.
            stopped = self.dap_lane(outbox, &mut call)?;
            if stopped.is_some() || self.options.endpoints.is_empty() {
                break;
            }
            let Some(part) = outbox.next_batch(limit)? else { break };
            match self.send_part(outbox, &part, &mut call, limit)? {
                PartEnd::Next(next) => limit = next,
                PartEnd::Stop(s) => stopped = Some(s),
            }
        }
        self.finish(outbox, call, stopped)
    }

    /// Sends `part` until a reply settles it, failing over and waiting as [`Uploader`] says, at most `max_attempts`
    /// requests (then an [`Error::Transport`]); `limit` is the part's, kept when no request is made.
    fn send_part(
        &mut self,
        outbox: &dyn Outbox,
        part: &Batch,
        call: &mut Call,
        limit: Option<usize>,
    ) -> Result<PartEnd> {
        let request = UploadRequest::new(part, &self.options.token, self.options.gzip)?;
        let mut failed = 0; // endpoints that failed in a row for this part since its last wait
        let mut rounds = 0; // the part's waits so far
        for attempt in 1..=self.options.max_attempts {
            let mut deadline = self.options.timeout;
            if let Some(end) = call.end {
                deadline = deadline.min(end.saturating_duration_since(Instant::now()));
            }
            let answer = post(&self.options.endpoints[call.current], &request, deadline);
            let host = &self.hosts[call.current];
            log::debug!("upload of batch {} ({} line(s)) to {host}: {}", part.id, part.reports.len(), answer.what());
            let retry_after = match self.settle(outbox, part, &answer, call)? {
                Outcome::Settled(next) => return Ok(PartEnd::Next(next)),
                Outcome::Retry(retry_after) => retry_after,
            };
            if call.past(Instant::now()) {
                return Ok(PartEnd::Stop(Stopped::Deadline));
            }
            if attempt == self.options.max_attempts {
                let e = Error::Transport(format!(
                    "batch {} not delivered after {} attempt(s) (last: {})",
                    part.id,
                    self.options.max_attempts,
                    answer.what()
                ));
                log::warn!("upload stopped: {e}");
                return Err(e);
            }
            match self.next_try(call, &answer, retry_after, &mut failed, &mut rounds) {
                NextTry::Now => {}
                NextTry::After(wait) => (self.options.sleep)(wait),
                NextTry::Deadline => return Ok(PartEnd::Stop(Stopped::Deadline)),
            }
        }
        Ok(PartEnd::Next(limit))
    }

    /// What the reply `answer` to `part` says ([`Reply::classify`]): an acknowledged part is deleted from the
    /// outbox and tallied, a part too large split; a refusal for good is the error.
    fn settle(&self, outbox: &dyn Outbox, part: &Batch, answer: &Response, call: &mut Call) -> Result<Outcome> {
        let reply = Reply::classify(
            answer.status,
            &answer.body,
            answer.over,
            answer.retry_after.as_deref(),
            part,
            (self.options.clock)(),
        );
        match reply {
            Reply::Acknowledge(a) => {
                let done = outbox.acknowledge_batch(&part.id, &part.ids())?;
                log::debug!("acknowledged {done} uploaded report(s)");
                call.tally.add(done, a);
                Ok(Outcome::Settled(None))
            }
            Reply::Split => {
                let first = outbox.split_batch(&part.id)?;
                log::info!(
                    "batch {} was too large for {}: split in two ({first} line(s) at most)",
                    part.id,
                    self.hosts[call.current]
                );
                Ok(Outcome::Settled(Some(first)))
            }
            Reply::Fail(e) => {
                log::warn!("upload stopped: {e}");
                Err(e)
            }
            Reply::RetryAfter(s) => Ok(Outcome::Retry(Some(s))),
            Reply::Backoff => Ok(Outcome::Retry(None)),
        }
    }

    /// After a failed request (`answer`): the next endpoint at once while a round is not over (not after a 429),
    /// else a wait (`retry_after`, capped at `max_delay`, or the back-off of the round), unless the call's deadline
    /// would pass during it. `failed` counts the endpoints that failed in a row since the last wait, `rounds` the
    /// waits.
    fn next_try(
        &mut self,
        call: &mut Call,
        answer: &Response,
        retry_after: Option<f64>,
        failed: &mut usize,
        rounds: &mut u32,
    ) -> NextTry {
        let n = self.options.endpoints.len();
        let from = call.current;
        if answer.status != Some(429) && n > 1 {
            // This replica cannot take the part now: the next one, at once while a round is not over.
            call.current = (call.current + 1) % n;
            *failed += 1;
            if *failed < n {
                let (what, to) = (answer.what(), &self.hosts[call.current]);
                log::info!("upload to {}: {what}; failing over to {to}", self.hosts[from]);
                return NextTry::Now;
            }
        }
        *failed = 0;
        *rounds += 1;
        let wait = match retry_after {
            Some(s) => Duration::from_secs_f64(s.min(self.options.max_delay.as_secs_f64())),
            None => self.backoff(*rounds),
        };
        if call.past(Instant::now() + wait) {
            return NextTry::Deadline;
        }
        if call.current == from {
            log::info!("upload to {}: {}; retrying in {wait:.3?}", self.hosts[from], answer.what());
        } else {
            log::info!(
                "upload to {}: {}; every endpoint failed: retrying on {} in {wait:.3?}",
                self.hosts[from],
                answer.what(),
                self.hosts[call.current]
            );
        }
        NextTry::After(wait)
    }

    /// The call's result, once it `stopped` (`None`: no part was due any more).
    fn finish(&self, outbox: &dyn Outbox, call: Call, stopped: Option<Stopped>) -> Result<UploadResult> {
        let Call { current, mut tally, .. } = call;
        let next_upload_at = outbox.next_upload_at()?;
        let stopped = match stopped {
            Some(s) => s,
            None if outbox.has_pending()? => Stopped::Interval,
            None => Stopped::Empty,
        };
        tally.rejected.sort();
        log::info!(
            "uploaded {} batch(es) to {}: {} report(s) acknowledged, {} duplicate batch(es); stopped: {stopped:?}",
            tally.batches,
            self.hosts.get(current).map_or("the aggregators", String::as_str),
            tally.acknowledged,
            tally.duplicates
        );
        Ok(UploadResult {
            batches: tally.batches,
            acknowledged: tally.acknowledged,
            accepted: tally.accepted,
            rejected: tally.rejected,
            duplicates: tally.duplicates,
            stopped,
            next_upload_at,
        })
    }
}
