//! Where a device's state and outbox live: in memory ([`MemoryStore`]), or in a folder of files safe against
//! crashes ([`FileStore`]). This module holds what every store is: the view, the transaction and the store traits.

use crate::error::{Error, Result};
use crate::upload::OutboxKey;

use super::state::DeviceState;

mod file;
mod memory;

pub use file::{FileStore, RESERVE_BYTES};
pub use memory::MemoryStore;

/// One report in the outbox: its local id, its metric and its upload line (an envelope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRecord {
    /// The local id (never reused, never sent).
    pub id: u64,
    /// The metric.
    pub metric: String,
    /// The upload line.
    pub line: String,
}

/// The bytes a report takes in the outbox for its cap (`max_outbox_bytes`): its envelope line's UTF-8 bytes and its
/// newline.
pub fn outbox_bytes(line: &str) -> u64 {
    line.len() as u64 + 1
}

/// What a read of a [`StateStore`] sees ([`StateStore::view_dyn`]): a consistent snapshot, changed by nothing.
pub trait StoreView {
    /// The device's state: `None` before the first commit.
    fn device(&self) -> Option<&DeviceState>;
    /// Reports committed and not yet dropped (plus, in a transaction, those appended in it).
    fn pending_count(&self) -> u64;
    /// The bytes of those reports for the outbox's cap: each one's envelope line and newline ([`outbox_bytes`]).
    fn pending_bytes(&self) -> u64;
    /// The `count` oldest committed reports (fewer if fewer are waiting).
    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>>;
}

/// What a [`StateStore`] transaction sees and changes. Nothing is written unless the transaction's closure returns
/// `Ok`, and nothing either when it changed nothing.
pub trait StoreTransaction: StoreView {
    /// The device's state: `None` before the first commit.
    fn state(&mut self) -> &mut Option<DeviceState>;
    /// Adds a report to the outbox, committed with the state.
    fn append(&mut self, record: OutboxRecord) -> Result<()>;
    /// Drops the `count` oldest committed reports (they were acknowledged).
    fn drop_head(&mut self, count: usize) -> Result<()>;
    /// Drops every report, committed or appended in this transaction (opting out).
    fn drop_all(&mut self) -> Result<()>;
}

/// Where a device's state and outbox live. [`StateStore::transact_dyn`] runs a closure exclusively (across threads,
/// and for [`FileStore`] across processes) and commits what it changed atomically: the state and the reports it
/// appended are both kept, or, if the closure fails or the process dies first, neither. A charge and the report it
/// pays for are therefore written together or not at all. [`StateStore::view_dyn`] reads without writing anything.
pub trait StateStore: Send + Sync {
    /// Runs `f` in one transaction.
    fn transact_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()>;

    /// Runs `f` on a consistent snapshot, writing nothing (the default: a transaction that changes nothing).
    fn view_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreView) -> Result<()>) -> Result<()> {
        self.transact_dyn(&mut |tx| f(tx))
    }

    /// Which state this is, for the uploader's "one upload at a time" ([`OutboxKey`]): the uploads of the clients of
    /// stores with equal keys take turns in a process. The default is this object ([`OutboxKey::of`]); a
    /// [`FileStore`] answers its folder, so that every client of one folder in a process takes turns. A store
    /// sharing its state with other objects answers the key of that state.
    fn upload_key(&self) -> OutboxKey {
        OutboxKey::of(self)
    }
}

/// [`StateStore::transact_dyn`] with a result.
pub(crate) fn transact<T>(
    store: &dyn StateStore,
    mut f: impl FnMut(&mut dyn StoreTransaction) -> Result<T>,
) -> Result<T> {
    let mut out = None;
    store.transact_dyn(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    out.ok_or_else(|| Error::Internal("a transaction returned nothing".into()))
}

/// [`StateStore::view_dyn`] with a result.
pub(crate) fn view<T>(store: &dyn StateStore, mut f: impl FnMut(&mut dyn StoreView) -> Result<T>) -> Result<T> {
    let mut out = None;
    store.view_dyn(&mut |v| {
        out = Some(f(v)?);
        Ok(())
    })?;
    out.ok_or_else(|| Error::Internal("a read returned nothing".into()))
}
