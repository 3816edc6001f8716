//! Uploading the outbox to `ldp serve`: the exact request, the rules for the collector's reply, and (with the
//! `uploader` feature) a blocking uploader.
//!
//! An app with its own HTTP stack takes a [`Batch`] from [`Outbox::next_batch`], sends [`UploadRequest::new`]'s
//! method, headers and body, and hands the reply to [`Reply::classify`], which says what to do: acknowledge the batch
//! ([`Outbox::acknowledge_batch`]), split it ([`Outbox::split_batch`]), wait and retry, or give up.

mod request;
#[cfg(feature = "uploader")]
mod uploader;

#[cfg(feature = "c-api")]
pub(crate) use request::check_token;
pub use request::{check_answer, parse_retry_after, Answer, Reply, UploadRequest, MAX_ANSWER, MAX_BATCH};
#[cfg(feature = "uploader")]
pub use uploader::{Stopped, UploadOptions, UploadResult, Uploader};

use crate::error::Result;

/// A report waiting in the outbox: its local id (never reused, never sent) and its upload line (an envelope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingReport {
    /// The local id.
    pub id: u64,
    /// The upload line.
    pub line: String,
}

/// A batch part pinned for upload: its id (the `Ldp-Batch-Id` header) and its reports, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The batch id.
    pub id: String,
    /// The reports.
    pub reports: Vec<PendingReport>,
}

impl Batch {
    /// The local ids of the reports (what [`Outbox::acknowledge_batch`] takes).
    pub fn ids(&self) -> Vec<u64> {
        self.reports.iter().map(|r| r.id).collect()
    }
}

/// What an uploader needs of a device's state (Python's `ldp.client.uploader.Outbox`): batches pinned in the state
/// until the collector acknowledged them, so that a retry, a crash or a lost reply resends the same lines under the
/// same batch id and the collector stores them once.
pub trait Outbox {
    /// The first pinned part, else a new batch of at most `limit` (and the spec's `max_batch`) of the oldest
    /// reports, pinned now; `None` when nothing is to be sent now (empty, or the upload interval has not passed).
    fn next_batch(&self, limit: Option<usize>) -> Result<Option<Batch>>;
    /// Pins the reports of part `batch` as two new parts; returns the size of the first.
    fn split_batch(&self, batch: &str) -> Result<usize>;
    /// Deletes the reports `ids` of part `batch` and unpins it, in one transaction; returns how many were there.
    fn acknowledge_batch(&self, batch: &str, ids: &[u64]) -> Result<usize>;
    /// Whether a report is waiting.
    fn has_pending(&self) -> Result<bool>;
    /// Unix seconds from which `next_batch` pins a new batch (negative infinity: at once).
    fn next_upload_at(&self) -> Result<f64>;
}
