//! [`MemoryStore`]: the state in memory (simulations, tests, an app that keeps nothing across restarts).

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

use super::{outbox_bytes, OutboxRecord, StateStore, StoreTransaction, StoreView};
use crate::error::{Error, Result};
use crate::ledger::DeviceState;

#[derive(Default)]
struct Memory {
    state: Option<Value>,
    outbox: VecDeque<OutboxRecord>,
    bytes: u64,
}

/// The state in memory (simulations, tests, an app that keeps nothing across restarts).
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Memory>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Memory>> {
        self.inner.lock().map_err(|_| Error::Ledger("the store's lock is poisoned".into()))
    }
}

struct MemoryTx<'a> {
    committed: &'a VecDeque<OutboxRecord>,
    committed_bytes: u64,
    state: Option<DeviceState>,
    appended: Vec<OutboxRecord>,
    dropped: usize,
    dropped_bytes: u64,
}

impl<'a> MemoryTx<'a> {
    /// A transaction (or a read) of what `memory` holds, changing nothing yet.
    fn begin(memory: &'a Memory) -> Result<Self> {
        Ok(MemoryTx {
            committed: &memory.outbox,
            committed_bytes: memory.bytes,
            state: memory.state.as_ref().map(DeviceState::from_value).transpose()?,
            appended: Vec::new(),
            dropped: 0,
            dropped_bytes: 0,
        })
    }
}

impl StoreView for MemoryTx<'_> {
    fn device(&self) -> Option<&DeviceState> {
        self.state.as_ref()
    }
    fn pending_count(&self) -> u64 {
        (self.committed.len() - self.dropped + self.appended.len()) as u64
    }
    fn pending_bytes(&self) -> u64 {
        self.committed_bytes - self.dropped_bytes + self.appended.iter().map(|r| outbox_bytes(&r.line)).sum::<u64>()
    }
    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>> {
        Ok(self.committed.iter().skip(self.dropped).take(count).cloned().collect())
    }
}

impl StoreTransaction for MemoryTx<'_> {
    fn state(&mut self) -> &mut Option<DeviceState> {
        &mut self.state
    }
    fn append(&mut self, record: OutboxRecord) -> Result<()> {
        self.appended.push(record);
        Ok(())
    }
    fn drop_head(&mut self, count: usize) -> Result<()> {
        let n = count.min(self.committed.len() - self.dropped);
        self.dropped_bytes +=
            self.committed.iter().skip(self.dropped).take(n).map(|r| outbox_bytes(&r.line)).sum::<u64>();
        self.dropped += n;
        Ok(())
    }
    fn drop_all(&mut self) -> Result<()> {
        self.appended.clear();
        self.dropped = self.committed.len();
        self.dropped_bytes = self.committed_bytes;
        Ok(())
    }
}

impl StateStore for MemoryStore {
    fn transact_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()> {
        let mut inner = self.lock()?;
        let mut tx = MemoryTx::begin(&inner)?;
        f(&mut tx)?;
        let bytes = tx.pending_bytes();
        let MemoryTx { state, appended, dropped, .. } = tx;
        inner.state = state.map(|s| s.to_value());
        inner.outbox.drain(..dropped);
        inner.outbox.extend(appended);
        inner.bytes = bytes;
        Ok(())
    }

    fn view_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreView) -> Result<()>) -> Result<()> {
        let inner = self.lock()?;
        f(&mut MemoryTx::begin(&inner)?)
    }
}
