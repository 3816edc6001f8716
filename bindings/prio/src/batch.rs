//! The aggregators' per-job loops, one call per job (`helper_prepare_batch`, `leader_init_batch`,
//! `leader_finish_batch` on every Prio3 class): the job's reports are read from Python first (every argument
//! checked, so that a malformed item refuses the whole call before any work or any state is used), then prepared
//! with the GIL released, then handed back. Each report goes through the same steps as the per-call path
//! (`prepare_init` of tests/prio/prepare_reference.py and the calls after it): the DAP-09 opening of
//! `ldp_client::dap`, and `Core`'s `init_raw`, `verifier_share_raw`, `message_raw` and `next_raw`, which the
//! per-call methods use too. A report that fails a step is not an error but its refusal code
//! (`ldp.aggregators.messages.ReportError`'s names).

use ldp_client::dap::{self, Aggregator as Role, HpkeCiphertext, ReportMetadata, REPORT_ID_LEN, TASK_ID_LEN};
use prio::vdaf::{Aggregatable, AggregateShare as CrateAggregateShare, OutputShare as CrateOutputShare};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyString, PyTuple};

use crate::backend::Backend;
use crate::dap::HpkeKeypair;
use crate::errors::Op;
use crate::parallel::{in_owned_parts, in_parts};
use crate::shares::{AggregateShare, VerifyState};
use crate::vdaf::{fixed, Core};

/// Why a report of a batch is refused: `ReportError`'s codes (Poplar1's batch calls too, `poplar1_batch.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The ciphertext is empty, or sealed to another config id than the key pair's.
    UnknownConfig,
    /// The ciphertext does not decode, or does not open (`dap::open_input_share`).
    Decrypt,
    /// The VDAF refused the report: its shares, its proof or its joint randomness.
    Invalid,
    /// The opened share is no input share of this aggregator (Poplar1's helper: `check_input_share`).
    InvalidMessage,
}

impl Refusal {
    pub(crate) fn code(self) -> &'static str {
        match self {
            Refusal::UnknownConfig => "hpke_unknown_config_id",
            Refusal::Decrypt => "hpke_decrypt_error",
            Refusal::Invalid => "vdaf_invalid",
            Refusal::InvalidMessage => "invalid_message",
        }
    }
}

/// `joint_rand_part_matches` of tests/prio/prepare_reference.py, the same checks in the same order: whether the public
/// share's joint randomness part for aggregator `agg_id` is the last seed (of `seed` bytes: the draft's) of that
/// aggregator's encoded verifier share (an empty public share, a type without joint randomness: `true`). Both drafts
/// lay them out so (VDAF-18 §7.2.6, VDAF-08 §7.2.2: a public share is the aggregators' parts in order, a verifier or
/// prepare share ends with its own part).
fn joint_rand_part_matches(public_share: &[u8], verifier_share: &[u8], agg_id: usize, seed: usize) -> bool {
    if public_share.is_empty() {
        return true;
    }
    let parts = public_share.len() / seed;
    if !public_share.len().is_multiple_of(seed) || agg_id >= parts || verifier_share.len() < seed {
        return false;
    }
    public_share[agg_id * seed..(agg_id + 1) * seed] == verifier_share[verifier_share.len() - seed..]
}

/// One report of a batch as Python gave it, its bytes still Python's (held, so that the slices of `Report` may be
/// read with the GIL released: a `bytes` object never changes).
pub(crate) struct Held<'py> {
    report_id: [u8; REPORT_ID_LEN],
    time: u64,
    public_share: Bound<'py, PyBytes>,
    ciphertext: Bound<'py, PyBytes>,
    last: Option<Bound<'py, PyBytes>>,
}

/// One report of a batch, borrowed from its `Held`.
pub(crate) struct Report<'a> {
    pub(crate) metadata: ReportMetadata,
    pub(crate) public_share: &'a [u8],
    pub(crate) ciphertext: &'a [u8],
    /// The helper's batch: the leader's verifier share; the leader's: the input share opened at the door, if any.
    pub(crate) last: Option<&'a [u8]>,
}

impl<'py> Held<'py> {
    pub(crate) fn report(&self) -> Report<'_> {
        Report {
            metadata: ReportMetadata { report_id: self.report_id, time: self.time },
            public_share: self.public_share.as_bytes(),
            ciphertext: self.ciphertext.as_bytes(),
            last: self.last.as_ref().map(|b| b.as_bytes()),
        }
    }
}

pub(crate) fn kind(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
}

/// A batch call of a VDAF: its core, and the operation its argument errors name.
struct Batch<'c, B: Backend> {
    core: &'c Core<B>,
    op: Op,
}

impl<'c, B: Backend> Batch<'c, B> {
    /// The checks every batch call makes: two aggregators (a leader and a helper), a verify key of the draft's size,
    /// a task ID of DAP's.
    fn check(&self, py: Python<'_>, verify_key: &[u8], task_id: &[u8]) -> PyResult<[u8; TASK_ID_LEN]> {
        let (params, op) = (self.core.params(), self.op);
        if params.num_aggregators != 2 {
            let message = format!(
                "a DAP aggregation job has two aggregators (a leader and a helper); the VDAF has {}",
                params.num_aggregators
            );
            return Err(self.core.err(py, op, message));
        }
        self.core.check_verify_key(py, op, verify_key)?;
        Ok(*fixed::<TASK_ID_LEN>(py, params, op, "the task ID", task_id)?)
    }

    /// The reports of a batch ([`read_reports`]), a wrong length or value refused naming this call.
    fn read<'py>(&self, py: Python<'py>, reports: &Bound<'py, PyAny>, last_optional: bool) -> PyResult<Vec<Held<'py>>> {
        read_reports(reports, last_optional, &|message| self.core.err(py, self.op, message))
    }
}

/// The reports of a batch, each a tuple `(report_id, time, public_share, ciphertext, last)`: `last` bytes, or also
/// `None` where `last_optional`. A `TypeError` (a value of another type) or `err`'s error (a wrong length or value,
/// a `PrioError` naming the call) names the report's index.
pub(crate) fn read_reports<'py>(
    reports: &Bound<'py, PyAny>,
    last_optional: bool,
    err: &dyn Fn(String) -> PyErr,
) -> PyResult<Vec<Held<'py>>> {
    let mut held = Vec::new();
    for (i, item) in reports.try_iter()?.enumerate() {
        let item = item?;
        let tuple = item.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err(format!("reports[{i}] must be a tuple of 5 items, got {}", kind(&item)))
        })?;
        if tuple.len() != 5 {
            let message = format!("reports[{i}] must have 5 items, got {}", tuple.len());
            return Err(err(message));
        }
        let bytes = |k: usize, name: &str| -> PyResult<Bound<'py, PyBytes>> {
            let value = tuple.get_item(k)?;
            value.cast_into::<PyBytes>().map_err(|e| {
                PyTypeError::new_err(format!("reports[{i}]: {name} must be bytes, got {}", kind(&e.into_inner())))
            })
        };
        let report_id = bytes(0, "the report ID")?;
        let report_id: [u8; REPORT_ID_LEN] = report_id.as_bytes().try_into().map_err(|_| {
            let message = format!(
                "reports[{i}]: the report ID must be {REPORT_ID_LEN} bytes, got {}",
                report_id.as_bytes().len()
            );
            err(message)
        })?;
        let time = tuple.get_item(1)?;
        if !time.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!("reports[{i}]: the time must be an int, got {}", kind(&time))));
        }
        let time = time.extract::<u64>().map_err(|_| {
            let message = format!("reports[{i}]: the time must be an int in [0, {}], got {time}", u64::MAX);
            err(message)
        })?;
        let public_share = bytes(2, "the public share")?;
        let ciphertext = bytes(3, "the ciphertext")?;
        let last = if last_optional {
            if tuple.get_item(4)?.is_none() {
                None
            } else {
                Some(bytes(4, "the input share (or None)")?)
            }
        } else {
            Some(bytes(4, "the leader's verifier share")?)
        };
        held.push(Held { report_id, time, public_share, ciphertext, last });
    }
    Ok(held)
}

/// This aggregator's input share of `report`: its ciphertext opened as `role`, or why not. The config id is
/// checked first (DAP's `HpkeCiphertext` starts with it), as `prepare_init` of tests/prio/prepare_reference.py does.
pub(crate) fn open(
    keypair: &dap::HpkeKeypair,
    role: Role,
    task_id: &[u8; TASK_ID_LEN],
    report: &Report<'_>,
) -> Result<Vec<u8>, Refusal> {
    match report.ciphertext.first() {
        Some(&id) if id == keypair.config().id => {}
        _ => return Err(Refusal::UnknownConfig),
    }
    let ciphertext = HpkeCiphertext::decode(report.ciphertext).map_err(|_| Refusal::Decrypt)?;
    dap::open_input_share(keypair, role, task_id, &report.metadata, report.public_share, &ciphertext)
        .map_err(|_| Refusal::Decrypt)
}

/// An error found with the GIL released that is no report's refusal (an output share that does not add up: cannot
/// happen with shares of one VDAF), raised as a `PrioError` of `aggregate` once the GIL is back.
type Fatal = String;

/// A batch's part as a thread finished it (`parallel::in_parts`): its per-report results and its aggregate share.
type Part<T, B> = (Vec<T>, CrateAggregateShare<<B as Backend>::F>);

/// A report the leader started: its state and its encoded verifier share.
type Started<B> = (<B as Backend>::State, Vec<u8>);

fn refusal_or_message<'py>(py: Python<'py>, result: &Result<Vec<u8>, Refusal>) -> Bound<'py, PyAny> {
    match result {
        Ok(message) => PyBytes::new(py, message).into_any(),
        Err(refusal) => PyString::new(py, refusal.code()).into_any(),
    }
}

impl<B: Backend> Core<B> {
    /// The parts of a batch put back together (`parallel::in_parts`): their per-report results in order, their
    /// aggregate shares merged; the first part's fatal error, if any.
    fn joined<T>(&self, parts: Vec<Result<Part<T, B>, Fatal>>, len: usize) -> Result<Part<T, B>, Fatal> {
        let mut share = self.empty_raw()?;
        let mut results = Vec::with_capacity(len);
        for part in parts {
            let (part_results, part_share) = part?;
            share.merge(&part_share).map_err(|e| e.to_string())?;
            results.extend(part_results);
        }
        Ok((results, share))
    }

    /// The helper's side of one aggregation job (its docstring in `_native.pyi`): per report, its verifier message
    /// or its refusal code; and the aggregate share of the reports that got a message.
    pub(crate) fn helper_prepare_batch<'py>(
        &self,
        py: Python<'py>,
        keypair: &Bound<'py, HpkeKeypair>,
        verify_key: &[u8],
        task_id: &[u8],
        reports: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
        let batch = Batch { core: self, op: Op::HelperPrepareBatch };
        let task_id = batch.check(py, verify_key, task_id)?;
        let held = batch.read(py, reports, false)?;
        let reports: Vec<Report<'_>> = held.iter().map(Held::report).collect();
        let keypair = &keypair.get().inner;
        let (results, share) = py
            .detach(|| -> Result<_, Fatal> {
                let parts = in_parts(&reports, |part| -> Result<_, Fatal> {
                    let mut share = self.empty_raw()?;
                    let mut results = Vec::with_capacity(part.len());
                    for report in part {
                        let result = self.helper_one(keypair, verify_key, &task_id, report);
                        if let Ok((_, out)) = &result {
                            share.accumulate(out).map_err(|e| e.to_string())?;
                        }
                        results.push(result.map(|(message, _)| message));
                    }
                    Ok((results, share))
                });
                self.joined(parts, reports.len())
            })
            .map_err(|e| self.err(py, Op::Aggregate, e))?;
        let results = PyList::new(py, results.iter().map(|r| refusal_or_message(py, r)))?;
        Ok((results, self.aggregate_share(share)))
    }

    /// One report of the helper's job: the verifier message and the helper's output share, or the refusal.
    fn helper_one(
        &self,
        keypair: &dap::HpkeKeypair,
        verify_key: &[u8],
        task_id: &[u8; TASK_ID_LEN],
        report: &Report<'_>,
    ) -> Result<(Vec<u8>, CrateOutputShare<B::F>), Refusal> {
        let input = open(keypair, Role::Helper, task_id, report)?;
        let invalid = |_| Refusal::Invalid;
        let nonce = &report.metadata.report_id;
        let (state, helper_share) =
            self.init_raw(verify_key, 1, nonce, report.public_share, &input).map_err(invalid)?;
        let encoded = B::encode_share(&helper_share).map_err(invalid)?;
        // the leader's verify_next would fail on a forged part for the helper: refused on both sides
        if !joint_rand_part_matches(report.public_share, &encoded, 1, B::SEED_SIZE) {
            return Err(Refusal::Invalid);
        }
        let leader_share = self.verifier_share_raw(0, report.last.unwrap_or_default()).map_err(invalid)?;
        let message = self.message_raw(vec![leader_share, helper_share]).map_err(invalid)?;
        let out = self.next_raw(state, &message).map_err(invalid)?;
        Ok((message, out))
    }

    /// The leader's first step on one aggregation job (its docstring in `_native.pyi`): per report, its state and
    /// verifier share, or its refusal code.
    pub(crate) fn leader_init_batch<'py>(
        &self,
        py: Python<'py>,
        keypair: &Bound<'py, HpkeKeypair>,
        verify_key: &[u8],
        task_id: &[u8],
        reports: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let batch = Batch { core: self, op: Op::LeaderInitBatch };
        let task_id = batch.check(py, verify_key, task_id)?;
        let held = batch.read(py, reports, true)?;
        let reports: Vec<Report<'_>> = held.iter().map(Held::report).collect();
        let keypair = &keypair.get().inner;
        let results: Vec<Result<Started<B>, Refusal>> = py.detach(|| {
            let parts = in_parts(&reports, |part| {
                part.iter().map(|report| self.leader_one(keypair, verify_key, &task_id, report)).collect::<Vec<_>>()
            });
            parts.into_iter().flatten().collect()
        });
        let mut items = Vec::with_capacity(results.len());
        for result in results {
            items.push(match result {
                Ok((state, share)) => {
                    let state = Bound::new(py, self.state(0, state))?.into_any();
                    PyTuple::new(py, [state, PyBytes::new(py, &share).into_any()])?.into_any()
                }
                Err(refusal) => PyString::new(py, refusal.code()).into_any(),
            });
        }
        PyList::new(py, items)
    }

    /// One report of the leader's job: its state and encoded verifier share, or the refusal.
    fn leader_one(
        &self,
        keypair: &dap::HpkeKeypair,
        verify_key: &[u8],
        task_id: &[u8; TASK_ID_LEN],
        report: &Report<'_>,
    ) -> Result<Started<B>, Refusal> {
        let opened;
        let input = match report.last {
            Some(share) => share, // opened at the leader's door
            None => {
                opened = open(keypair, Role::Leader, task_id, report)?;
                &opened[..]
            }
        };
        let nonce = &report.metadata.report_id;
        let (state, share) =
            self.init_raw(verify_key, 0, nonce, report.public_share, input).map_err(|_| Refusal::Invalid)?;
        Ok((state, B::encode_share(&share).map_err(|_| Refusal::Invalid)?))
    }

    /// The leader's last step on one aggregation job (its docstring in `_native.pyi`): `verify_next` of each state
    /// with its message, `True` where it gave an output share (accumulated), `False` where it was refused; and the
    /// aggregate share.
    pub(crate) fn leader_finish_batch<'py>(
        &self,
        py: Python<'py>,
        states: &Bound<'py, PyAny>,
        messages: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
        let op = Op::LeaderFinishBatch;
        let mut held_states = Vec::new();
        for (i, item) in states.try_iter()?.enumerate() {
            let item = item?;
            let state = item.cast_into::<VerifyState>().map_err(|e| {
                PyTypeError::new_err(format!("states[{i}] must be a VerifyState, got {}", kind(&e.into_inner())))
            })?;
            let params = state.try_borrow()?.params.clone();
            if *params != *self.params() {
                return Err(self.err(py, op, format!("states[{i}]: a verify state of {params}, not of this VDAF")));
            }
            held_states.push(state);
        }
        let mut held_messages = Vec::with_capacity(held_states.len());
        for (i, item) in messages.try_iter()?.enumerate() {
            let item = item?;
            held_messages.push(item.cast_into::<PyBytes>().map_err(|e| {
                PyTypeError::new_err(format!("messages[{i}] must be bytes, got {}", kind(&e.into_inner())))
            })?);
        }
        if held_states.len() != held_messages.len() {
            let message =
                format!("takes one message per state: {} states, {} messages", held_states.len(), held_messages.len());
            return Err(self.err(py, op, message));
        }
        // every argument checked: the states are taken now (a state already used, by an earlier call or earlier in
        // this list, is refused as verify_next refuses it)
        let mut taken = Vec::with_capacity(held_states.len());
        for state in &held_states {
            taken.push(self.take_state(&mut *state.try_borrow_mut()?).ok());
        }
        let pairs: Vec<(Option<B::State>, &[u8])> =
            taken.into_iter().zip(held_messages.iter().map(|m| m.as_bytes())).collect();
        let (finished, share) = py
            .detach(|| -> Result<_, Fatal> {
                let len = pairs.len();
                let parts = in_owned_parts(pairs, |part| -> Result<_, Fatal> {
                    let mut share: CrateAggregateShare<B::F> = self.empty_raw()?;
                    let mut finished = Vec::with_capacity(part.len());
                    for (state, message) in part {
                        let out = state.and_then(|state| self.next_raw(state, message).ok());
                        if let Some(out) = &out {
                            share.accumulate(out).map_err(|e| e.to_string())?;
                        }
                        finished.push(out.is_some());
                    }
                    Ok((finished, share))
                });
                self.joined(parts, len)
            })
            .map_err(|e| self.err(py, Op::Aggregate, e))?;
        let finished = PyList::new(py, finished)?;
        Ok((finished, self.aggregate_share(share)))
    }
}
