//! The request `ldp serve` accepts, and what its reply means.

use std::io::Write;

use serde_json::Value;

use super::Batch;
use crate::error::{Error, Result};
use crate::value::{int_of, is_int};

/// Bytes of a collector's reply read at most: a longer 2xx is a protocol error (a sane one is under 1 KiB).
pub const MAX_ANSWER: usize = 1 << 16;
/// The most lines a batch may have (the spec's `max_batch` limit).
pub const MAX_BATCH: u64 = 1 << 20;

/// One upload request: `POST` to the collector's `/v1/reports` with these headers and this body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRequest {
    /// Always `POST`.
    pub method: &'static str,
    /// The headers, in order: `Authorization`, `Content-Type`, `Accept`, `Ldp-Batch-Id`, and
    /// `Content-Encoding: gzip` when compressed.
    pub headers: Vec<(&'static str, String)>,
    /// The batch's lines, each ending in `\n`, gzip-compressed (mtime 0: the body carries no timestamp) or not.
    pub body: Vec<u8>,
}

/// Checks a bearer token: non-empty printable ASCII without spaces.
pub(crate) fn check_token(token: &str) -> Result<()> {
    if token.is_empty() || !token.bytes().all(|c| (0x21..=0x7e).contains(&c)) {
        return Err(Error::value("upload token must be a non-empty printable ASCII string without spaces"));
    }
    Ok(())
}

impl UploadRequest {
    /// The request of `batch` with bearer `token`, gzip-compressed when `gzip` (Python's uploader always
    /// compresses; the collector takes both).
    pub fn new(batch: &Batch, token: &str, gzip: bool) -> Result<Self> {
        check_token(token)?;
        if batch.reports.is_empty() {
            return Err(Error::value("a batch has at least one report"));
        }
        let mut body = Vec::with_capacity(batch.reports.iter().map(|r| r.line.len() + 1).sum());
        for r in &batch.reports {
            body.extend_from_slice(r.line.as_bytes());
            body.push(b'\n');
        }
        let mut headers = vec![
            ("Authorization", format!("Bearer {token}")),
            ("Content-Type", "application/x-ndjson".to_string()),
            ("Accept", "application/json".to_string()),
            ("Ldp-Batch-Id", batch.id.clone()),
        ];
        if gzip {
            let mut enc = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::default());
            enc.write_all(&body).map_err(|e| Error::Internal(format!("gzip: {e}")))?;
            body = enc.finish().map_err(|e| Error::Internal(format!("gzip: {e}")))?;
            headers.push(("Content-Encoding", "gzip".to_string()));
        }
        Ok(UploadRequest { method: "POST", headers, body })
    }
}

/// The collector's counts for one acknowledged batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// Lines stored.
    pub accepted: u64,
    /// Lines refused, by reason.
    pub rejected: Vec<(String, u64)>,
    /// Lines counted.
    pub lines: u64,
    /// Whether the collector had stored this batch already (a retry after a lost reply).
    pub duplicate: bool,
}

/// What to do with the collector's reply to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A sane 2xx: acknowledge the batch ([`super::Outbox::acknowledge_batch`] with [`Batch::ids`]).
    Acknowledge(Answer),
    /// 413: split the batch ([`super::Outbox::split_batch`]) and send the first part.
    Split,
    /// 429 or 503 with a usable `Retry-After`: retry after these seconds (cap them).
    RetryAfter(f64),
    /// No reply, 408, 429/503 without `Retry-After`, another 5xx: retry with exponential back-off and jitter.
    Backoff,
    /// A refusal retrying would not help (other 4xx, a redirect, a 413 of one report, an insane 2xx): keep the
    /// batch and report the error.
    Fail(Error),
}

impl Reply {
    /// Classifies a reply: `status` (`None`: no reply, the connection failed or timed out), the first
    /// [`MAX_ANSWER`] bytes of the body (`over`: the body was longer), the `Retry-After` header, the batch, and the
    /// time now (Unix seconds, for an HTTP-date `Retry-After`). The rules are the Python uploader's.
    pub fn classify(
        status: Option<u16>,
        body: &[u8],
        over: bool,
        retry_after: Option<&str>,
        batch: &Batch,
        now: f64,
    ) -> Reply {
        let Some(status) = status else { return Reply::Backoff };
        let reason = || {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).to_string();
            let clean: String = text.chars().map(|c| if (' '..='~').contains(&c) { c } else { '?' }).collect();
            clean
        };
        match status {
            200..=299 => {
                if over {
                    return Reply::Fail(Error::Transport(format!(
                        "the collector's answer to batch {} is not sane: the answer is over {MAX_ANSWER} bytes; nothing acknowledged",
                        batch.id
                    )));
                }
                match check_answer(body, &batch.id, batch.reports.len()) {
                    Ok(a) => Reply::Acknowledge(a),
                    Err(e) => Reply::Fail(Error::Transport(format!(
                        "the collector's answer to batch {} is not sane: {e}; nothing acknowledged",
                        batch.id
                    ))),
                }
            }
            413 if batch.reports.len() == 1 => Reply::Fail(Error::UploadRejected {
                status,
                message: format!("the collector refused a single report as too large ({})", reason()),
            }),
            413 => Reply::Split,
            300..=399 => Reply::Fail(Error::UploadRejected {
                status,
                message: format!(
                    "the collector redirected batch {} (HTTP {status}): refused, a redirect would carry the token elsewhere",
                    batch.id
                ),
            }),
            429 | 503 => match parse_retry_after(retry_after, now) {
                Some(s) => Reply::RetryAfter(s),
                None => Reply::Backoff,
            },
            408 | 500..=599 => Reply::Backoff,
            _ => Reply::Fail(Error::UploadRejected {
                status,
                message: format!("the collector refused batch {} with HTTP {status}: {}", batch.id, reason()),
            }),
        }
    }
}

fn show(v: &Value) -> String {
    let text = match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    let cut: String = if text.chars().count() <= 40 { text } else { text.chars().take(37).collect::<String>() + "..." };
    cut.chars().map(|c| if (' '..='~').contains(&c) { c } else { '?' }).collect()
}

fn count(answer: &serde_json::Map<String, Value>, key: &str) -> Result<u64, String> {
    let v = answer.get(key).unwrap_or(&Value::Null);
    match int_of(v).filter(|_| is_int(v)).and_then(|i| u64::try_from(i).ok()) {
        Some(n) => Ok(n),
        None => Err(format!("{key} is {}, not an integer >= 0", show(v))),
    }
}

/// The collector's 2xx answer to part `batch` of `sent` lines if it is sane (Python's `check_answer`), else what is
/// wrong: one JSON object (no repeated key) naming `batch`; `accepted`, `lines` and each count of `rejected`
/// integers ≥ 0; `accepted + sum(rejected) == lines`; `lines == sent`, or for a duplicate
/// `sent <= lines <= MAX_BATCH` (its counts may be absent).
pub fn check_answer(body: &[u8], batch: &str, sent: usize) -> Result<Answer, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the answer is not UTF-8".to_string())?;
    let answer = crate::json::parse(text)
        .map_err(|e| format!("the answer is not JSON ({})", e.chars().take(80).collect::<String>()))?;
    let Value::Object(a) = &answer else {
        return Err(format!("the answer is a JSON {}, not an object", crate::error::kind_of(&answer)));
    };
    if let Some(b) = a.get("batch_id") {
        if b.as_str() != Some(batch) {
            return Err(format!("the answer names batch {}, not {batch}", show(b)));
        }
    }
    let duplicate = match a.get("duplicate") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("duplicate is {}, not a boolean", show(other))),
    };
    let counted = !(duplicate && !a.contains_key("accepted") && !a.contains_key("rejected"));
    let needed: &[&str] = if counted { &["batch_id", "accepted", "rejected", "lines"] } else { &["batch_id", "lines"] };
    let missing: Vec<&str> = needed.iter().copied().filter(|k| !a.contains_key(*k)).collect();
    if !missing.is_empty() {
        return Err(format!("the answer lacks {}", missing.join(", ")));
    }
    let lines = count(a, "lines")?;
    let mut out = Answer { lines, duplicate, ..Default::default() };
    if counted {
        out.accepted = count(a, "accepted")?;
        let Some(rejected) = a.get("rejected").and_then(Value::as_object) else {
            return Err(format!("rejected is {}, not an object of counts by reason", show(&a["rejected"])));
        };
        let mut total: u64 = 0;
        for reason in rejected.keys() {
            if reason.is_empty() || reason.chars().count() > 100 || reason.chars().any(char::is_control) {
                return Err(format!("rejected names reason {}", show(&Value::String(reason.clone()))));
            }
            let n = count(rejected, reason)?;
            total = total.saturating_add(n);
            out.rejected.push((reason.clone(), n));
        }
        if out.accepted.checked_add(total) != Some(lines) {
            return Err(format!("accepted ({}) + rejected ({total}) != lines ({lines})", out.accepted));
        }
    }
    let ok = if duplicate { sent as u64 <= lines && lines <= MAX_BATCH } else { lines == sent as u64 };
    if !ok {
        return Err(format!("the answer counts {lines} line(s); {sent} were sent"));
    }
    Ok(out)
}

/// Seconds to wait from a `Retry-After` value: delta-seconds, or an HTTP date (a past one gives 0); `None` when
/// absent or unusable (Python's `parse_retry_after`).
pub fn parse_retry_after(value: Option<&str>, now: f64) -> Option<f64> {
    let v = value?.trim();
    if !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()) {
        return v.parse::<f64>().ok();
    }
    let when = httpdate::parse_http_date(v).ok()?;
    let secs = when.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64();
    Some((secs - now).max(0.0))
}
