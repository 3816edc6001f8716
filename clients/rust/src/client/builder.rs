//! Making a client: [`ClientBuilder`] (clock, randomness, the outbox's cap), reading the device's state or making it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use super::{system_clock, token32, Clock, DapTask, Encoders, TelemetryClient, DEFAULT_MAX_OUTBOX_BYTES};
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
            #[cfg(feature = "prio")]
            tasks: Vec::new(),
        }
    }

    /// The client of `spec` keeping its state in `store`, with the system clock and the OS generator.
    pub fn new(spec: CollectionSpec, store: impl StateStore + 'static) -> Result<Self> {
        Self::builder(spec, store).build()
    }
}

/// The tasks of a client's two-aggregator metrics, by metric.
type Tasks = HashMap<String, Arc<DapTask>>;

/// What [`TelemetryClient::builder`] makes a client with.
pub struct ClientBuilder {
    spec: CollectionSpec,
    store: Box<dyn StateStore>,
    clock: Clock,
    rng: Option<Box<dyn RandomSource>>,
    max_outbox_bytes: u64,
    /// The tasks given, by metric, each read when given (its error kept for `build`).
    #[cfg(feature = "prio")]
    tasks: Vec<(String, Result<crate::dap::AnyTaskFile>)>,
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

    /// The task of the two-aggregator `metric` (feature `prio`): its task file, read with
    /// [`TaskFile::parse`](crate::dap::TaskFile::parse) (`ldp collect task --leader-config … --helper-config …`
    /// writes it). Without it, [`TelemetryClient::record`] refuses the metric ([`RefusalCode::TrustModel`]).
    /// [`ClientBuilder::build`] checks it against the spec as the Python client does: the same metric, window, trust
    /// model, Prio3 type and parameters, reports a window (`reports_per_window`) and local protocol, and both
    /// aggregators' configs present; a difference, or a metric that is no two-aggregator metric of the spec, is an
    /// [`Error::Value`] naming it.
    ///
    /// ```
    /// use ldp_client::dap::{HpkeKeypair, HpkeSuite, TaskFile};
    /// use ldp_client::ledger::MemoryStore;
    /// use ldp_client::{json, CollectionSpec, PrivacyCost, TelemetryClient};
    ///
    /// let spec = CollectionSpec::parse(r#"{"spec_version": 1, "name": "app", "budget": {"per_window": 4,
    ///     "lifetime": 40}, "metrics": {"crashed": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75},
    ///     "budget": {"per_report": 1.1, "per_window": 2.2}, "trust": "two-aggregator+local"}}}"#)?;
    /// # use base64::{engine::general_purpose::URL_SAFE_NO_PAD as B64, Engine as _};
    /// # let b64 = |id| B64.encode(HpkeKeypair::generate(id, HpkeSuite::DEFAULT).unwrap().config().encode().unwrap());
    /// # let text = json!({"format": "ldp-task/1", "task_id": B64.encode([0u8; 32]), "app": "app",
    /// #     "metric": "crashed", "vdaf": {"type": "Prio3Count"}, "window_seconds": 86400, "time_precision": 3600,
    /// #     "leader_url": "https://leader.example", "reports_per_window": 2,
    /// #     "local": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}},
    /// #     "hpke_configs": {"leader": b64(1), "helper": b64(2)}}).to_string();
    /// // text: the task file `ldp collect task --leader-config … --helper-config …` wrote
    /// let task = TaskFile::parse(&text)?;
    /// let client = TelemetryClient::builder(spec, MemoryStore::new()).task("crashed", task).build()?;
    /// client.record("crashed", &json!(true))?;
    /// client.record("crashed", &json!(false))?;
    /// assert_eq!(client.spent(Some("crashed"), false)?, PrivacyCost::pure(2.0 * 3f64.ln())); // twice the local ε
    /// assert!(client.record("crashed", &json!(true)).is_err()); // the task counts 2 reports a window
    /// # Ok::<(), ldp_client::Error>(())
    /// ```
    ///
    /// [`RefusalCode::TrustModel`]: crate::RefusalCode::TrustModel
    ///
    /// A `poplar1` metric's task is a Poplar1 task (feature `poplar1`): a
    /// `dap::Poplar1TaskFile` (or an [`AnyTaskFile`](crate::dap::AnyTaskFile)) whose
    /// `bits` and `max_candidates` are the spec's, of the same metric, window, trust model and reports a window.
    #[cfg(feature = "prio")]
    pub fn task(mut self, metric: &str, task: impl Into<crate::dap::AnyTaskFile>) -> Self {
        self.tasks.push((metric.to_string(), Ok(task.into())));
        self
    }

    /// [`ClientBuilder::task`] with the task file's JSON text, a Prio3 or a Poplar1 task's
    /// ([`AnyTaskFile::parse`](crate::dap::AnyTaskFile::parse)); a file that does not parse is refused by
    /// [`ClientBuilder::build`].
    #[cfg(feature = "prio")]
    pub fn task_json(mut self, metric: &str, text: &str) -> Self {
        self.tasks.push((metric.to_string(), crate::dap::AnyTaskFile::parse(text)));
        self
    }

    /// The tasks given, each checked against `spec`.
    #[cfg(feature = "prio")]
    fn checked_tasks(tasks: Vec<(String, Result<crate::dap::AnyTaskFile>)>, spec: &CollectionSpec) -> Result<Tasks> {
        let mut out = HashMap::new();
        for (metric, file) in tasks {
            let file = file.map_err(|e| Error::value(format!("the task given for metric {metric:?}: {e}")))?;
            out.insert(metric.clone(), Arc::new(DapTask::new(spec, &metric, file)?));
        }
        Ok(out)
    }

    /// The client; reads the device's state, or makes it in a store that has none (the only write of an open).
    /// Refused before the store is touched: a zero outbox cap, a task that is not its metric's
    /// (`ClientBuilder::task`).
    pub fn build(self) -> Result<TelemetryClient> {
        if self.max_outbox_bytes == 0 {
            return Err(Error::value("max_outbox_bytes must be a positive integer, got 0"));
        }
        #[cfg(feature = "prio")]
        let tasks = Self::checked_tasks(self.tasks, &self.spec)?;
        #[cfg(not(feature = "prio"))]
        let tasks = Tasks::new();
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
            tasks: RwLock::new(tasks),
        })
    }
}
