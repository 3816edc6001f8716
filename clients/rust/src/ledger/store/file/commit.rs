//! Writing a commit: the appended reports, flushed, then the state that counts them (`state.json`, replaced
//! atomically); an emptied log is retired and a log mostly dropped is compacted.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::disk::{io_err, is_disk_full};
use super::tx::{Cursor, OutboxChanges};
use super::FileStore;
use crate::error::Error;
use crate::ledger::DeviceState;

/// Why a commit failed: writing a file, or anything else.
pub(super) enum CommitError {
    Io { path: PathBuf, source: std::io::Error },
    Other(Error),
}

impl CommitError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CommitError + '_ {
        move |source| CommitError::Io { path: path.to_path_buf(), source }
    }

    pub(super) fn disk_full(&self) -> bool {
        matches!(self, CommitError::Io { source, .. } if is_disk_full(source))
    }
}

impl From<CommitError> for Error {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::Io { path, source } => io_err(&path, source),
            CommitError::Other(e) => e,
        }
    }
}

/// A transaction to commit: the state it made, the cursor it started from, and what it changed in the outbox.
pub(super) struct Commit {
    pub(super) state: DeviceState,
    pub(super) cursor: Cursor,
    pub(super) outbox: OutboxChanges,
}

impl FileStore {
    /// Writes a commit: the appended reports, flushed, then the state that counts them. Nothing is kept unless it
    /// all succeeds, so a failed commit may be tried again.
    pub(super) fn commit(&self, commit: &Commit) -> std::result::Result<(), CommitError> {
        let Commit { state, outbox: changes, .. } = commit;
        let mut cursor = commit.cursor;
        // Each store removes what killed processes left once, before its first commit.
        if !self.swept.swap(true, std::sync::atomic::Ordering::Relaxed) {
            self.sweep(cursor.gen);
        }
        // The reports first, flushed; then the state that counts them.
        cursor.start += changes.dropped_bytes;
        cursor.count -= changes.dropped_count;
        cursor.first += changes.dropped_count;
        cursor.bytes -= changes.dropped_envelope_bytes;
        let path = self.log(cursor.gen);
        Self::append_reports(&path, &mut cursor, changes)?;
        let retired = self.roll_log(path, &mut cursor)?;
        self.write_state(state, &cursor)?;
        if let Some(r) = retired {
            let _ = fs::remove_file(r);
        }
        Ok(())
    }

    /// Appends the transaction's reports to log `path` past the committed end (cutting what lies past it), flushed,
    /// and counts them in `cursor`; with none to append, cuts a torn tail a killed process left.
    fn append_reports(
        path: &Path,
        cursor: &mut Cursor,
        changes: &OutboxChanges,
    ) -> std::result::Result<(), CommitError> {
        if changes.appended_count > 0 {
            let mut file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path)
                .map_err(CommitError::io(path))?;
            if file.metadata().map_err(CommitError::io(path))?.len() != cursor.end {
                file.set_len(cursor.end).map_err(CommitError::io(path))?;
            }
            file.seek(SeekFrom::Start(cursor.end)).map_err(CommitError::io(path))?;
            file.write_all(&changes.appended).map_err(CommitError::io(path))?;
            file.sync_all().map_err(CommitError::io(path))?;
            cursor.end += changes.appended.len() as u64;
            cursor.count += changes.appended_count;
            cursor.bytes += changes.appended_bytes;
        } else if cursor.count > 0 && fs::metadata(path).is_ok_and(|m| m.len() > cursor.end) {
            // A torn tail a killed process left: cut it (a later append would do it too).
            let file = OpenOptions::new().write(true).open(path).map_err(CommitError::io(path))?;
            file.set_len(cursor.end).map_err(CommitError::io(path))?;
        }
        Ok(())
    }

    /// Moves the outbox to a new log when the current one (`path`) is emptied, or when its dropped head is over the
    /// compaction threshold and half the file (the kept records copied, flushed); the log to delete once the state
    /// that no longer counts it is committed.
    fn roll_log(&self, path: PathBuf, cursor: &mut Cursor) -> std::result::Result<Option<PathBuf>, CommitError> {
        if cursor.count == 0 && (cursor.end > 0 || path.exists()) {
            cursor.gen += 1;
            cursor.start = 0;
            cursor.end = 0;
            cursor.bytes = 0;
            return Ok(Some(path));
        }
        if cursor.start > self.compact_bytes && cursor.start >= cursor.end - cursor.start {
            let old = self.log(cursor.gen);
            let fresh = self.log(cursor.gen + 1);
            (|| -> std::io::Result<()> {
                let mut src = File::open(&old)?;
                src.seek(SeekFrom::Start(cursor.start))?;
                let mut dst = File::create(&fresh)?;
                std::io::copy(&mut src.take(cursor.end - cursor.start), &mut dst)?;
                dst.sync_all()
            })()
            .map_err(CommitError::io(&fresh))?;
            cursor.gen += 1;
            cursor.end -= cursor.start;
            cursor.start = 0;
            return Ok(Some(old));
        }
        Ok(None)
    }

    /// Replaces `state.json` by the state and the outbox's cursor.
    fn write_state(&self, state: &DeviceState, cursor: &Cursor) -> std::result::Result<(), CommitError> {
        let mut doc = serde_json::Map::new();
        doc.insert("device".into(), state.to_value());
        doc.insert(
            "outbox".into(),
            Value::Array(
                [cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count, cursor.bytes]
                    .map(Value::from)
                    .to_vec(),
            ),
        );
        let text = crate::pytext::compact_json(&Value::Object(doc)).map_err(CommitError::Other)?;
        let target = self.state_path();
        self.write_atomically(&target, text.as_bytes()).map_err(CommitError::io(&target))
    }
}
