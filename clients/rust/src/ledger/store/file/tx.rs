//! A transaction of a [`FileStore`] ([`FileTx`]: the committed cursor and what the transaction changed) and a read
//! ([`FileView`]).

use super::FileStore;
use crate::error::{Error, Result};
use crate::ledger::store::{outbox_bytes, OutboxRecord, StoreTransaction, StoreView};
use crate::ledger::DeviceState;

/// The committed outbox: log `gen`, its committed bytes `start..end`, the id of its first report and their count,
/// and their envelope bytes (for the cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cursor {
    pub(super) gen: u64,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) first: u64,
    pub(super) count: u64,
    pub(super) bytes: u64,
}

pub(super) const EMPTY: Cursor = Cursor { gen: 0, start: 0, end: 0, first: 1, count: 0, bytes: 0 };

/// What a transaction changed in the outbox, beside the state.
#[derive(Default)]
pub(super) struct OutboxChanges {
    /// The records appended, as log lines.
    pub(super) appended: Vec<u8>,
    pub(super) appended_count: u64,
    /// Their envelope bytes (the cap's count).
    pub(super) appended_bytes: u64,
    /// The committed log bytes dropped from the head.
    pub(super) dropped_bytes: u64,
    pub(super) dropped_count: u64,
    /// Their envelope bytes (the cap's count).
    pub(super) dropped_envelope_bytes: u64,
}

impl OutboxChanges {
    pub(super) fn is_empty(&self) -> bool {
        self.appended_count == 0 && self.dropped_count == 0
    }
}

pub(super) struct FileTx<'a> {
    pub(super) store: &'a FileStore,
    pub(super) cursor: Cursor,
    pub(super) state: Option<DeviceState>,
    pub(super) outbox: OutboxChanges,
}

impl StoreView for FileTx<'_> {
    fn device(&self) -> Option<&DeviceState> {
        self.state.as_ref()
    }

    fn pending_count(&self) -> u64 {
        self.cursor.count - self.outbox.dropped_count + self.outbox.appended_count
    }

    fn pending_bytes(&self) -> u64 {
        self.cursor.bytes - self.outbox.dropped_envelope_bytes + self.outbox.appended_bytes
    }

    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>> {
        let c = self.cursor;
        let n = (count as u64).min(c.count - self.outbox.dropped_count) as usize;
        Ok(self
            .store
            .read_records(c.gen, c.start + self.outbox.dropped_bytes, c.end, n)?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }
}

impl StoreTransaction for FileTx<'_> {
    fn state(&mut self) -> &mut Option<DeviceState> {
        &mut self.state
    }

    fn append(&mut self, r: OutboxRecord) -> Result<()> {
        if r.line.contains('\n') || r.metric.contains(['\t', '\n']) {
            return Err(Error::InvalidArgument("a report line is one line".into()));
        }
        let o = &mut self.outbox;
        o.appended.extend_from_slice(format!("{}\t{}\t{}\n", r.id, r.metric, r.line).as_bytes());
        o.appended_count += 1;
        o.appended_bytes += outbox_bytes(&r.line);
        Ok(())
    }

    fn drop_head(&mut self, count: usize) -> Result<()> {
        let c = self.cursor;
        let o = &mut self.outbox;
        let n = (count as u64).min(c.count - o.dropped_count) as usize;
        let recs = self.store.read_records(c.gen, c.start + o.dropped_bytes, c.end, n)?;
        o.dropped_bytes += recs.iter().map(|(_, len)| len).sum::<u64>();
        o.dropped_envelope_bytes += recs.iter().map(|(r, _)| outbox_bytes(&r.line)).sum::<u64>();
        o.dropped_count += recs.len() as u64;
        Ok(())
    }

    fn drop_all(&mut self) -> Result<()> {
        let c = self.cursor;
        self.outbox = OutboxChanges {
            dropped_bytes: c.end - c.start,
            dropped_count: c.count,
            dropped_envelope_bytes: c.bytes,
            ..OutboxChanges::default()
        };
        Ok(())
    }
}

/// A read of a [`FileStore`]: the committed state under the shared lock.
pub(super) struct FileView<'a> {
    pub(super) store: &'a FileStore,
    pub(super) cursor: Cursor,
    pub(super) state: Option<DeviceState>,
}

impl StoreView for FileView<'_> {
    fn device(&self) -> Option<&DeviceState> {
        self.state.as_ref()
    }

    fn pending_count(&self) -> u64 {
        self.cursor.count
    }

    fn pending_bytes(&self) -> u64 {
        self.cursor.bytes
    }

    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>> {
        let c = self.cursor;
        let n = (count as u64).min(c.count) as usize;
        Ok(self.store.read_records(c.gen, c.start, c.end, n)?.into_iter().map(|(r, _)| r).collect())
    }
}
