//! The uploader's two-aggregator lane (Python's `ldp/client/dap_upload.py`): the two-aggregator reports at the head
//! of the outbox, oldest first, each alone to its task's leader, `PUT {leader}/tasks/{task_id}/reports` with
//! `Content-Type: application/dap-report` (no token), under the call's deadline; what each answer does is
//! [`DapReply::classify`]'s. Nothing logged holds a report's bytes: only counts, codes, statuses and the leader's
//! host.

use std::time::{Duration, Instant};

use super::super::http::{send, Method, Response};
use super::super::options::host_of;
use super::super::{DapReply, DapUpload, Outbox, DAP_MEDIA_TYPE};
use super::{Call, Stopped, Uploader};
use crate::error::{Error, Result};

/// What became of one report.
enum Sent {
    /// The leader has it, or never will: delete it, counted by this answer.
    Settled(DapReply),
    /// Kept for a later call (`report_too_early`).
    Later,
    /// The call's deadline passed.
    Deadline,
}

impl Uploader {
    /// Sends the two-aggregator reports at the head of `outbox` until the head holds none; `Some(stopped)` when the
    /// call stops here (a report kept for later: [`Stopped::Interval`]; the deadline), else `None`. An answer no
    /// retry changes (a wrong task or URL), or a report not delivered in `max_attempts` requests, is the error, the
    /// report kept.
    pub(super) fn dap_lane(&mut self, outbox: &dyn Outbox, call: &mut Call) -> Result<Option<Stopped>> {
        while let Some(report) = outbox.next_dap_report()? {
            if call.past(Instant::now()) {
                return Ok(Some(Stopped::Deadline));
            }
            let reply = match self.send_report(&report, call)? {
                Sent::Settled(reply) => reply,
                Sent::Later => return Ok(Some(Stopped::Interval)),
                Sent::Deadline => return Ok(Some(Stopped::Deadline)),
            };
            if outbox.acknowledge_dap_report(report.id)? == 0 {
                continue; // another call deleted it meanwhile
            }
            let tally = &mut call.tally;
            tally.batches += 1;
            tally.acknowledged += 1;
            match reply {
                DapReply::Replayed => tally.duplicates += 1,
                DapReply::Gone(code) => match tally.rejected.iter_mut().find(|(r, _)| *r == code) {
                    Some((_, n)) => *n += 1,
                    None => tally.rejected.push((code, 1)),
                },
                _ => tally.accepted += 1,
            }
        }
        Ok(None)
    }

    /// One report to its leader, tried until an answer decides it: at most `max_attempts` requests, waiting
    /// `Retry-After` (429, 503; capped at `max_delay`) or a full-jitter back-off between them, unless the call's
    /// deadline would pass during the wait.
    fn send_report(&mut self, report: &DapUpload, call: &Call) -> Result<Sent> {
        let host = host_of(&report.url).unwrap_or_else(|_| "?".into());
        let headers = [
            ("Content-Type", DAP_MEDIA_TYPE.to_string()),
            ("Accept", "application/problem+json, application/json".to_string()),
        ];
        for attempt in 1..=self.options.max_attempts {
            let mut deadline = self.options.timeout;
            if let Some(end) = call.end {
                deadline = deadline.min(end.saturating_duration_since(Instant::now()));
            }
            let answer = send(Method::Put, &report.url, &headers, &report.body, deadline);
            log::debug!("DAP upload to {host}: {}", answer.what());
            let reply =
                DapReply::classify(answer.status, &answer.body, answer.retry_after.as_deref(), (self.options.clock)());
            let retry_after = match reply {
                DapReply::Stored | DapReply::Replayed => return Ok(Sent::Settled(reply)),
                DapReply::Gone(ref code) => {
                    log::warn!("the leader {host} refused a report for good ({code}): deleted");
                    return Ok(Sent::Settled(reply));
                }
                DapReply::Later => {
                    log::info!("the leader {host} refused a report as too early: kept for a later upload");
                    return Ok(Sent::Later);
                }
                DapReply::Fail(status, reason) => return Err(refused(&host, status, &reason)),
                DapReply::RetryAfter(s) => Some(s),
                _ => None,
            };
            if attempt == self.options.max_attempts {
                let e = undelivered(&host, self.options.max_attempts, &answer);
                log::warn!("upload stopped: {e}");
                return Err(e);
            }
            let wait = match retry_after {
                Some(s) => Duration::from_secs_f64(s.min(self.options.max_delay.as_secs_f64())),
                None => self.backoff(attempt),
            };
            if call.past(Instant::now() + wait) {
                return Ok(Sent::Deadline);
            }
            log::info!("DAP upload to {host}: {}; retrying in {wait:.3?}", answer.what());
            (self.options.sleep)(wait);
        }
        Ok(Sent::Deadline) // max_attempts 0: nothing sent
    }
}

/// The error of a refusal no retry changes.
fn refused(host: &str, status: u16, reason: &str) -> Error {
    let e = Error::UploadRejected {
        status,
        message: format!("the leader {host} refused a report with HTTP {status} ({reason}); the report is kept"),
    };
    log::warn!("upload stopped: {e}");
    e
}

/// The error of a report not delivered in `attempts` requests.
fn undelivered(host: &str, attempts: u32, last: &Response) -> Error {
    Error::Transport(format!(
        "a report was not delivered to the leader {host} after {attempts} attempt(s) (last: {})",
        last.what()
    ))
}
