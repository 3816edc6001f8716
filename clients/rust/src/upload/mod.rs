//! Uploading the outbox to `ldp serve`: the exact request, the rules for the collector's reply, and (with the
//! `uploader` feature) a blocking uploader; and a two-aggregator metric's reports to their task's leader.
//!
//! An app with its own HTTP stack takes a [`Batch`] from [`Outbox::next_batch`], sends [`UploadRequest::new`]'s
//! method, headers and body, and hands the reply to [`Reply::classify`], which says what to do: acknowledge the batch
//! ([`Outbox::acknowledge_batch`]), split it ([`Outbox::split_batch`]), wait and retry, or give up. A two-aggregator
//! report at the head of the outbox ([`Outbox::next_dap_report`]) goes alone to its leader, the answer classified by
//! [`DapReply::classify`] ([`Outbox::acknowledge_dap_report`] once it is stored or never will be).

mod dap_reply;
#[cfg(feature = "uploader")]
mod http;
#[cfg(feature = "uploader")]
mod options;
mod request;
#[cfg(feature = "uploader")]
mod turns;
#[cfg(feature = "uploader")]
mod uploader;

pub use dap_reply::{dap_refusal_code, DapReply, DAP_GONE, DAP_MEDIA_TYPE};
#[cfg(feature = "uploader")]
pub use options::UploadOptions;
#[cfg(feature = "c-api")]
pub(crate) use request::check_token;
pub use request::{check_answer, parse_retry_after, Answer, Reply, UploadRequest, MAX_ANSWER, MAX_BATCH};
#[cfg(feature = "uploader")]
pub use uploader::{Stopped, UploadResult, Uploader};

use std::path::{Path, PathBuf};

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

/// A two-aggregator report at the head of the outbox ([`Outbox::next_dap_report`]), for its task's leader: sent
/// alone, `PUT url` with `Content-Type: application/dap-report` and `body` (DAP-09 §4.4.2; no token: a leader takes
/// reports from anyone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DapUpload {
    /// The local id (what [`Outbox::acknowledge_dap_report`] takes).
    pub id: u64,
    /// `{leader_url}/tasks/{task_id}/reports`, the task ID in unpadded base64url.
    pub url: String,
    /// The DAP-09 report's bytes.
    pub body: Vec<u8>,
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
    /// Which outbox this is, for the uploader's "one upload at a time" ([`OutboxKey`]): calls of `Uploader::upload`
    /// (feature `uploader`) on outboxes with equal keys take turns in a process. The default is this object
    /// ([`OutboxKey::of`]); a [`crate::TelemetryClient`] answers its store's
    /// ([`crate::ledger::StateStore::upload_key`]: a [`crate::ledger::FileStore`]'s folder, so that every client of
    /// one folder takes turns). An outbox sharing its state with other objects answers the key of that state.
    fn upload_key(&self) -> OutboxKey {
        OutboxKey::of(self)
    }
    /// The two-aggregator report at the head of the outbox (the two-aggregator lane), or `None`: the outbox is empty,
    /// the report at its head is for the collector ([`Outbox::next_batch`]'s lane), or it is a two-aggregator report
    /// of a metric whose task is not given now. The lanes share one queue, so reports leave in the order they were
    /// recorded. The default is `None`: an outbox of the collector's reports only.
    fn next_dap_report(&self) -> Result<Option<DapUpload>> {
        Ok(None)
    }
    /// Deletes the two-aggregator report `id` from the head of the outbox (its leader stored it, or never will),
    /// counted as uploaded; how many were deleted (0: it was not at the head, another call deleted it).
    fn acknowledge_dap_report(&self, _id: u64) -> Result<usize> {
        Ok(0)
    }
    /// Whether a report for the collector (not a two-aggregator one) waits: an upload with no collector URL is
    /// refused then. The default is [`Outbox::has_pending`].
    fn has_collector_pending(&self) -> Result<bool> {
        self.has_pending()
    }
}

/// The identity of an outbox's state, for "one upload at a time" ([`Outbox::upload_key`]): the uploads of outboxes
/// with equal keys take turns in a process. A state kept in a folder is keyed by the folder
/// ([`OutboxKey::folder`]), one in memory by the object holding it ([`OutboxKey::of`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OutboxKey(Key);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Folder(PathBuf),
    Object { address: usize, type_name: &'static str },
}

impl OutboxKey {
    /// The key of the state kept in folder `dir`. Give the folder's canonical path
    /// ([`std::fs::canonicalize`]: [`crate::ledger::FileStore::dir`] is one), so that two spellings of one folder
    /// make one key.
    pub fn folder(dir: &Path) -> Self {
        OutboxKey(Key::Folder(dir.to_path_buf()))
    }

    /// The key of the state held by `object`, in memory: its address and its type. Two live objects of one type
    /// never share an address (zero-sized types aside), so their keys differ; an object dropped while nothing
    /// uploads it leaves nothing behind, and one made later at the same address takes turns with no one but itself.
    pub fn of<T: ?Sized>(object: &T) -> Self {
        OutboxKey(Key::Object {
            address: object as *const T as *const () as usize,
            type_name: std::any::type_name::<T>(),
        })
    }
}
