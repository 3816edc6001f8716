//! The device's privacy-budget ledger and outbox: its state, the budget rules, and the stores that keep them.

mod budget;
mod state;
mod store;

pub(crate) use budget::{advance, charge, spent, window_at};
pub use budget::{check_clock, Reservation, MAX_CLOCK};
pub(crate) use state::count_up;
pub use state::{DeviceState, PinnedPart, ScopeTotal};
pub use store::{
    outbox_bytes, FileStore, MemoryStore, OutboxRecord, StateStore, StoreTransaction, StoreView, RESERVE_BYTES,
};
pub(crate) use store::{transact, view};
