//! The blocking uploader (feature `uploader`): sends a device's outbox to `ldp serve` over HTTP(S) with `ureq`.

use std::fmt;
use std::io::Read;
use std::time::{Duration, Instant};

use super::request::{check_token, Reply, UploadRequest, MAX_ANSWER};
use super::{turns, Outbox};
use crate::error::{Error, Result};

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

/// How to upload: the collector endpoints (`https://host/v1/reports`, several for failover: see [`Uploader`]), the
/// app's bearer token, the deadline of one request from connecting to the end of the reply (`timeout`), of the whole
/// call (`call_timeout`), requests per batch part over all endpoints (`max_attempts`), the back-off cap
/// (`max_delay`) and `gzip`. `sleep`, `clock` (Unix seconds) and `jitter` (uniform in [0, 1)) are for tests.
///
/// ```
/// use ldp_client::upload::UploadOptions;
///
/// // One collector.
/// let one = UploadOptions::new(&["https://collector.example.com/v1/reports"], "app-token")?;
/// // Replicas over shared storage: the first is tried first, the others when it cannot take a batch.
/// let replicas = ["https://a.collector.example.com/v1/reports", "https://b.collector.example.com/v1/reports"];
/// let options = UploadOptions::new(&replicas, "app-token")?;
/// assert_eq!(options.endpoints().len(), 2);
/// # let _ = one;
/// # Ok::<(), ldp_client::Error>(())
/// ```
pub struct UploadOptions {
    endpoints: Vec<String>,
    token: String,
    /// Seconds for one request, from connecting to the end of the reply (default 30 s).
    pub timeout: Duration,
    /// Seconds for the whole call (default: none).
    pub call_timeout: Option<Duration>,
    /// Tries per batch (default 8).
    pub max_attempts: u32,
    /// The longest wait between tries (default 300 s).
    pub max_delay: Duration,
    /// Compress bodies (default true).
    pub gzip: bool,
    /// Waits between tries (default: `std::thread::sleep`).
    pub sleep: Box<dyn Fn(Duration) + Send + Sync>,
    /// The time, in Unix seconds (default: the system clock), for `Retry-After` dates.
    pub clock: Box<dyn Fn() -> f64 + Send + Sync>,
    /// Uniform in [0, 1) (default: the OS generator), for the back-off's jitter.
    pub jitter: Box<dyn FnMut() -> f64 + Send + Sync>,
}

impl fmt::Debug for UploadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UploadOptions")
            .field("endpoints", &self.endpoints)
            .field("token", &"<secret>")
            .field("timeout", &self.timeout)
            .field("call_timeout", &self.call_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("max_delay", &self.max_delay)
            .field("gzip", &self.gzip)
            .finish_non_exhaustive()
    }
}

fn os_jitter() -> f64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

impl UploadOptions {
    /// Options for `endpoints` and the bearer `token`, with the defaults.
    ///
    /// `endpoints` is a non-empty list of distinct `http(s)://host/...` URLs (one URL is a list of one), in the
    /// order the uploader tries them. Callers who want to spread devices over replicas shuffle the list per device:
    /// the uploader itself always starts a call with the first. An empty list, an entry that is not such a URL or
    /// the same URL twice is a [`Error::Value`], before anything is sent.
    pub fn new<S: AsRef<str>>(endpoints: &[S], token: &str) -> Result<Self> {
        if endpoints.is_empty() {
            return Err(Error::value("endpoints: give at least one collector URL"));
        }
        let mut list: Vec<String> = Vec::with_capacity(endpoints.len());
        for e in endpoints {
            let e = e.as_ref();
            host_of(e)?;
            if let Some(first) = list.iter().position(|u| u == e) {
                return Err(Error::value(format!(
                    "upload urls name the same endpoint twice (entries {} and {})",
                    first + 1,
                    list.len() + 1
                )));
            }
            list.push(e.to_string());
        }
        check_token(token)?;
        Ok(UploadOptions {
            endpoints: list,
            token: token.to_string(),
            timeout: Duration::from_secs(30),
            call_timeout: None,
            max_attempts: 8,
            max_delay: Duration::from_secs(300),
            gzip: true,
            sleep: Box::new(std::thread::sleep),
            clock: Box::new(crate::client::system_clock),
            jitter: Box::new(os_jitter),
        })
    }

    /// The endpoints, in the order they are tried.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }
}

/// The `host[:port]` of an upload URL (what the log names: never the path, the query or user info), or the error
/// refusing the URL.
fn host_of(url: &str) -> Result<String> {
    let bad = || Error::value(format!("upload url must be http(s)://host/..., got {url:?}"));
    let uri: ureq::http::Uri = url.parse().map_err(|_| bad())?;
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(bad)?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(bad());
    }
    Ok(match uri.port_u16() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

/// The reply to one request: status (`None`: no reply), the first bytes of the body, whether there were more, the
/// `Retry-After` header, or the transport error.
struct Answer {
    status: Option<u16>,
    body: Vec<u8>,
    over: bool,
    retry_after: Option<String>,
    error: Option<String>,
}

impl Answer {
    /// The status (`HTTP 503`) or the transport error, for messages and the log.
    fn what(&self) -> String {
        match (self.status, &self.error) {
            (Some(s), _) => format!("HTTP {s}"),
            (None, Some(e)) => e.clone(),
            (None, None) => "no answer".into(),
        }
    }
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

impl Uploader {
    /// An uploader with `options`.
    pub fn new(options: UploadOptions) -> Self {
        // The URLs were checked by `UploadOptions::new`.
        let hosts = options.endpoints.iter().map(|e| host_of(e).unwrap_or_else(|_| "?".into())).collect();
        Uploader { options, hosts }
    }

    fn post(&self, url: &str, request: &UploadRequest, deadline: Duration) -> Answer {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(deadline))
            .max_redirects(0)
            .max_redirects_will_error(false)
            .http_status_as_error(false)
            .user_agent(concat!("ldp-telemetry-client-rust/", env!("CARGO_PKG_VERSION")))
            .build();
        let agent = ureq::Agent::new_with_config(config);
        let mut builder = agent.post(url);
        for (name, value) in &request.headers {
            builder = builder.header(*name, value.as_str());
        }
        let mut response = match builder.send(&request.body[..]) {
            Ok(r) => r,
            Err(e) => {
                return Answer {
                    status: None,
                    body: Vec::new(),
                    over: false,
                    retry_after: None,
                    error: Some(e.to_string()),
                }
            }
        };
        let status = response.status().as_u16();
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
        let mut body = Vec::new();
        let read = response.body_mut().as_reader().take(MAX_ANSWER as u64 + 1).read_to_end(&mut body);
        if let Err(e) = read {
            // The reply was cut or timed out while its body was read: no usable reply, retried.
            return Answer {
                status: None,
                body: Vec::new(),
                over: false,
                retry_after: None,
                error: Some(e.to_string()),
            };
        }
        let over = body.len() > MAX_ANSWER;
        body.truncate(MAX_ANSWER);
        Answer { status: Some(status), body, over, retry_after, error: None }
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
        let past = |t: Instant| call_end.is_some_and(|end| t >= end);
        let n = self.options.endpoints.len();
        let mut current = 0; // the endpoint in use: the first, then the last one that acknowledged a part
        let mut tally = Tally::default();
        let mut limit = None;
        let mut stopped = None;
        'parts: while stopped.is_none() {
            if past(Instant::now()) {
                stopped = Some(Stopped::Deadline);
                break;
            }
            let Some(part) = outbox.next_batch(limit)? else { break };
            let request = UploadRequest::new(&part, &self.options.token, self.options.gzip)?;
            let mut failed = 0; // endpoints that failed in a row for this part since its last wait
            let mut rounds = 0; // the part's waits so far
            for attempt in 1..=self.options.max_attempts {
                let now = Instant::now();
                let mut deadline = self.options.timeout;
                if let Some(end) = call_end {
                    deadline = deadline.min(end.saturating_duration_since(now));
                }
                let answer = self.post(&self.options.endpoints[current], &request, deadline);
                log::debug!(
                    "upload of batch {} ({} line(s)) to {}: {}",
                    part.id,
                    part.reports.len(),
                    self.hosts[current],
                    answer.what()
                );
                let reply = Reply::classify(
                    answer.status,
                    &answer.body,
                    answer.over,
                    answer.retry_after.as_deref(),
                    &part,
                    (self.options.clock)(),
                );
                let retry_after = match reply {
                    Reply::Acknowledge(a) => {
                        let done = outbox.acknowledge_batch(&part.id, &part.ids())?;
                        log::debug!("acknowledged {done} uploaded report(s)");
                        tally.batches += 1;
                        tally.acknowledged += done as u64;
                        tally.accepted += a.accepted;
                        for (reason, n) in a.rejected {
                            match tally.rejected.iter_mut().find(|(r, _)| *r == reason) {
                                Some((_, m)) => *m += n,
                                None => tally.rejected.push((reason, n)),
                            }
                        }
                        tally.duplicates += u64::from(a.duplicate);
                        limit = None;
                        continue 'parts;
                    }
                    Reply::Split => {
                        let first = outbox.split_batch(&part.id)?;
                        log::info!(
                            "batch {} was too large for {}: split in two ({first} line(s) at most)",
                            part.id,
                            self.hosts[current]
                        );
                        limit = Some(first);
                        continue 'parts;
                    }
                    Reply::Fail(e) => {
                        log::warn!("upload stopped: {e}");
                        return Err(e);
                    }
                    Reply::RetryAfter(s) => Some(s),
                    Reply::Backoff => None,
                };
                if past(Instant::now()) {
                    stopped = Some(Stopped::Deadline);
                    break 'parts;
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
                let from = current;
                if answer.status != Some(429) && n > 1 {
                    // This replica cannot take the part now: the next one, at once while a round is not over.
                    current = (current + 1) % n;
                    failed += 1;
                    if failed < n {
                        log::info!(
                            "upload to {}: {}; failing over to {}",
                            self.hosts[from],
                            answer.what(),
                            self.hosts[current]
                        );
                        continue;
                    }
                }
                failed = 0;
                rounds += 1;
                let wait = match retry_after {
                    Some(s) => Duration::from_secs_f64(s.min(self.options.max_delay.as_secs_f64())),
                    None => self.backoff(rounds),
                };
                if past(Instant::now() + wait) {
                    stopped = Some(Stopped::Deadline);
                    break 'parts;
                }
                if current == from {
                    log::info!("upload to {}: {}; retrying in {wait:.3?}", self.hosts[from], answer.what());
                } else {
                    log::info!(
                        "upload to {}: {}; every endpoint failed: retrying on {} in {wait:.3?}",
                        self.hosts[from],
                        answer.what(),
                        self.hosts[current]
                    );
                }
                (self.options.sleep)(wait);
            }
        }
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
            self.hosts[current],
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
