//! Making a client: [`ClientBuilder`] (clock, randomness, the outbox's cap), reading the device's state or making it.

use std::sync::{Arc, Mutex};

use super::{system_clock, token32, Clock, Encoders, TelemetryClient, DEFAULT_MAX_OUTBOX_BYTES};
use crate::error::{Error, Result};
use crate::ledger::{transact, view, DeviceState, StateStore};
use crate::random::{OsRandomSource, RandomSource};
use crate::spec::CollectionSpec;

/// A random source shared by a client's encoders (one lock, one stream: a seeded simulation is reproducible).
#[derive(Clone)]
pub(super) struct SharedRng(pub(super) Arc<Mutex<Box<dyn RandomSource>>>);

impl RandomSource for SharedRng {
    fn bits(&mut self, k: u32) -> Result<u64> {
        self.0.lock().map_err(|_| Error::Internal("the random source's lock is poisoned".into()))?.bits(k)
    }
    fn wide_bits(&mut self, k: u32, into: &mut [u64]) -> Result<()> {
        self.0.lock().map_err(|_| Error::Internal("the random source's lock is poisoned".into()))?.wide_bits(k, into)
    }
    fn token_bytes(&mut self, n: usize) -> Result<Vec<u8>> {
        self.0.lock().map_err(|_| Error::Internal("the random source's lock is poisoned".into()))?.token_bytes(n)
    }
}

impl TelemetryClient {
    /// A builder of the client of `spec` keeping its state in `store`.
    pub fn builder(spec: CollectionSpec, store: impl StateStore + 'static) -> ClientBuilder {
        ClientBuilder {
            spec,
            store: Box::new(store),
            clock: Box::new(system_clock),
            rng: None,
            max_outbox_bytes: DEFAULT_MAX_OUTBOX_BYTES,
        }
    }

    /// The client of `spec` keeping its state in `store`, with the system clock and the OS generator.
    pub fn new(spec: CollectionSpec, store: impl StateStore + 'static) -> Result<Self> {
        Self::builder(spec, store).build()
    }
}

/// What [`TelemetryClient::builder`] makes a client with.
pub struct ClientBuilder {
    spec: CollectionSpec,
    store: Box<dyn StateStore>,
    clock: Clock,
    rng: Option<Box<dyn RandomSource>>,
    max_outbox_bytes: u64,
}

impl ClientBuilder {
    /// The clock (default: the system clock). The ledger never lets it go back.
    pub fn clock(mut self, clock: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// The randomness of reports and of the device secret (default: the OS generator). Another source is for
    /// tests and simulations only.
    pub fn rng(mut self, rng: impl RandomSource + 'static) -> Self {
        self.rng = Some(Box::new(rng));
        self
    }

    /// The most bytes of reports the outbox keeps waiting for upload (default [`DEFAULT_MAX_OUTBOX_BYTES`], 1 MiB):
    /// each pending report counts its envelope line's UTF-8 bytes plus one, pinned batches included. A report that
    /// would go past it is refused with [`Error::OutboxFull`] before anything is charged or stored. Positive: 0 is
    /// refused by [`ClientBuilder::build`].
    pub fn max_outbox_bytes(mut self, bytes: u64) -> Self {
        self.max_outbox_bytes = bytes;
        self
    }

    /// The client; reads the device's state, or makes it in a store that has none (the only write of an open).
    pub fn build(self) -> Result<TelemetryClient> {
        if self.max_outbox_bytes == 0 {
            return Err(Error::value("max_outbox_bytes must be a positive integer, got 0"));
        }
        let rng = SharedRng(Arc::new(Mutex::new(self.rng.unwrap_or_else(|| Box::new(OsRandomSource::new())))));
        let spec = self.spec;
        let check = |s: &DeviceState| -> Result<()> {
            if s.collection != spec.name {
                return Err(Error::Ledger(format!(
                    "this state belongs to collection {:?}, not {:?}: use another store (a budget is never reset)",
                    s.collection, spec.name
                )));
            }
            Ok(())
        };
        let exists = view(self.store.as_ref(), |v| v.device().map(check).transpose())?.is_some();
        if !exists {
            let mut r = rng.clone();
            transact(self.store.as_ref(), |tx| match tx.state() {
                Some(s) => check(s), // made meanwhile by another process
                state @ None => {
                    let (secret, salt) = (token32(&mut r)?, token32(&mut r)?);
                    *state = Some(DeviceState::new(&spec.name, secret, salt));
                    Ok(())
                }
            })?;
        }
        Ok(TelemetryClient {
            spec,
            store: self.store,
            clock: self.clock,
            rng,
            encoders: Mutex::new(Encoders::default()),
            max_outbox_bytes: self.max_outbox_bytes,
        })
    }
}
