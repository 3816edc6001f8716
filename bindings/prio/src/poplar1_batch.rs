//! Poplar1's aggregation jobs in one call per step (issue 89, items 2 and 4), as Prio3's `batch.rs` does for its
//! one round: the job's arguments read from Python and checked first (a malformed item refuses the whole call
//! before any work or any state is used), the reports verified with the GIL released and spread over threads
//! (`parallel::in_parts`), the results handed back in order; a report that fails a step is its refusal code
//! (`ldp.aggregators.messages.ReportError`'s names), not an error.
//!
//! A DAP-09 job of Poplar1 (VDAF draft 18 §8's two rounds, `ldp/aggregators/poplar1_messages.py`) is five calls:
//!
//! 1. `leader_init_batch`: per report, the leader's share opened (unless opened at its door) and `verify_init` as
//!    aggregator 0: its round-0 state and verifier share (sent to the helper in `initialize`);
//! 2. `helper_init_batch`: per report, the helper's share opened, checked as an input share of aggregator 1,
//!    `verify_init`, round 0's message combined with the leader's share (`verifier_shares_to_message`), and
//!    `verify_next`: its round-1 state (encoded, for its records), the message and its round-1 verifier share
//!    (answered in `continue`);
//! 3. `leader_continue_batch`: per report, `verify_next` with round 0's message, and round 1's message combined
//!    with the helper's share (sent in `finish`), the round-1 state kept;
//! 4. `helper_finish_batch` and 5. `leader_finish_batch`: `verify_next` with round 1's message, each output share
//!    accumulated into the job's aggregate share.
//!
//! Every step is the crate's (`Aggregator::verify_init`, `verifier_shares_to_message`, `verify_next`,
//! `Aggregatable::accumulate`), each refusal at the point the per-call path of `poplar1.rs` refuses it, so that a
//! job gives byte for byte the states, shares and aggregate shares of the per-report loop it replaces
//! (tests/prio/test_poplar1_batch.py runs both).

use std::sync::Arc;

use ldp_client::dap::{self, Aggregator as Role, TASK_ID_LEN};
use ldp_client::poplar1::VERIFY_KEY_LEN;
use prio::codec::{Encode, ParameterizedDecode};
use prio::vdaf::poplar1::{
    Poplar1AggregationParam, Poplar1FieldVec, Poplar1InputShare, Poplar1PublicShare, Poplar1VerifierMessage,
    Poplar1VerifierState,
};
use prio::vdaf::{Aggregatable, Aggregator, VerifyTransition};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::batch::{kind, open, read_reports, Held, Refusal, Report};
use crate::dap::HpkeKeypair;
use crate::errors::Op;
use crate::parallel::{in_owned_parts, in_parts};
use crate::poplar1::{encoded_round, Poplar1};
use crate::poplar1_shares::{AggParam, AggregateShare, VerifyState};

/// An error found with the GIL released that is no report's refusal (output shares of one parameter that do not
/// add up: cannot happen), raised as a `PrioError` of `aggregate` once the GIL is back.
type Fatal = String;

/// A started report: its state and its verifier share (encoded, or the crate's).
type Started<S> = (Poplar1VerifierState, S);

/// The helper's round 0 of one report: its round-1 state (encoded), round 0's verifier message, its round-1 share.
type HelperRound = (Vec<u8>, Vec<u8>, Vec<u8>);

/// A report the leader's round 1 goes on with: its round-0 state and parameter (`None`: none to use), round 0's
/// message and the helper's round-1 verifier share.
type Pending<'a> = (Option<(Poplar1VerifierState, Arc<Poplar1AggregationParam>)>, (&'a [u8], &'a [u8]));

/// A finished part of a job (`in_owned_parts`): whether each report gave an output share, and their sum.
type Finished = (Vec<bool>, Poplar1FieldVec);

fn invalid<E>(_: E) -> Refusal {
    Refusal::Invalid
}

/// Each item of `obj` as bytes (a `TypeError` naming `name[i]` for any other type).
fn bytes_list<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let mut out = Vec::new();
    for (i, item) in obj.try_iter()?.enumerate() {
        out.push(
            item?.cast_into::<PyBytes>().map_err(|e| {
                PyTypeError::new_err(format!("{name}[{i}] must be bytes, got {}", kind(&e.into_inner())))
            })?,
        );
    }
    Ok(out)
}

/// Each item of `obj` as a `Poplar1VerifyState` (a `TypeError` naming `states[i]` for any other type).
fn states_list<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, VerifyState>>> {
    let mut out = Vec::new();
    for (i, item) in obj.try_iter()?.enumerate() {
        out.push(item?.cast_into::<VerifyState>().map_err(|e| {
            PyTypeError::new_err(format!("states[{i}] must be a Poplar1VerifyState, got {}", kind(&e.into_inner())))
        })?);
    }
    Ok(out)
}

fn code<'py>(py: Python<'py>, refusal: Refusal) -> Bound<'py, PyAny> {
    PyString::new(py, refusal.code()).into_any()
}

impl Poplar1 {
    /// The checks of a job's first calls: a verify key and a task ID of their sizes, a level of this bit length.
    fn job_args<'k>(
        &self,
        py: Python<'_>,
        op: Op,
        verify_key: &'k [u8],
        task_id: &[u8],
        agg_param: &AggParam,
    ) -> PyResult<(&'k [u8; VERIFY_KEY_LEN], [u8; TASK_ID_LEN])> {
        let key = self.fixed::<VERIFY_KEY_LEN>(py, op, "the verify key", verify_key)?;
        let task_id = *self.fixed::<TASK_ID_LEN>(py, op, "the task ID", task_id)?;
        self.check_level(py, op, &agg_param.inner)?;
        Ok((key, task_id))
    }

    /// `verify_init` of one report as `agg_id` on its decoded input share (the public share decoded here: refused,
    /// as the per-call `verify_init` refuses it).
    fn init_one(
        &self,
        key: &[u8; VERIFY_KEY_LEN],
        agg_id: usize,
        param: &Poplar1AggregationParam,
        report: &Report<'_>,
        input: &Poplar1InputShare<VERIFY_KEY_LEN>,
    ) -> Result<Started<Poplar1FieldVec>, Refusal> {
        let public = Poplar1PublicShare::get_decoded_with_param(&self.vdaf, report.public_share).map_err(invalid)?;
        let nonce = &report.metadata.report_id;
        self.vdaf.verify_init(key, self.client.ctx(), agg_id, param, nonce, &public, input).map_err(invalid)
    }

    /// The leader's round 0 of one report: its state and encoded verifier share, or the refusal.
    fn leader_one(
        &self,
        keypair: &dap::HpkeKeypair,
        key: &[u8; VERIFY_KEY_LEN],
        task_id: &[u8; TASK_ID_LEN],
        param: &Poplar1AggregationParam,
        report: &Report<'_>,
    ) -> Result<Started<Vec<u8>>, Refusal> {
        let opened;
        let input = match report.last {
            Some(share) => share, // opened at the leader's door
            None => {
                opened = open(keypair, Role::Leader, task_id, report)?;
                &opened[..]
            }
        };
        let input = Poplar1InputShare::get_decoded_with_param(&(&self.vdaf, 0), input).map_err(invalid)?;
        let (state, share) = self.init_one(key, 0, param, report, &input)?;
        Ok((state, share.get_encoded().map_err(invalid)?))
    }

    /// The helper's round 0 of one report (module docstring, step 2), or the refusal: `invalid_message` for a
    /// share that opens but is no input share of the helper (`check_input_share` of the per-call path).
    fn helper_one(
        &self,
        keypair: &dap::HpkeKeypair,
        key: &[u8; VERIFY_KEY_LEN],
        task_id: &[u8; TASK_ID_LEN],
        param: &Poplar1AggregationParam,
        report: &Report<'_>,
    ) -> Result<HelperRound, Refusal> {
        let input = open(keypair, Role::Helper, task_id, report)?;
        let input =
            Poplar1InputShare::get_decoded_with_param(&(&self.vdaf, 1), &input).map_err(|_| Refusal::InvalidMessage)?;
        let (state, mine) = self.init_one(key, 1, param, report, &input)?;
        let leader =
            Poplar1FieldVec::get_decoded_with_param(&state, report.last.unwrap_or_default()).map_err(invalid)?;
        let ctx = self.client.ctx();
        let message = self.vdaf.verifier_shares_to_message(ctx, param, [leader, mine]).map_err(invalid)?;
        let encoded = message.get_encoded().map_err(invalid)?;
        match self.vdaf.verify_next(ctx, state, message).map_err(invalid)? {
            VerifyTransition::Continue(next, share) => {
                Ok((next.get_encoded().map_err(invalid)?, encoded, share.get_encoded().map_err(invalid)?))
            }
            VerifyTransition::Finish(_) => Err(Refusal::Invalid),
        }
    }

    /// The leader's round 1 of one report: `verify_next` of its round-0 state with round 0's `message`, then round
    /// 1's message of its share and the helper's (`theirs`); the round-1 state and that message, encoded.
    fn continue_one(
        &self,
        state: Poplar1VerifierState,
        param: &Poplar1AggregationParam,
        message: &[u8],
        theirs: &[u8],
    ) -> Result<Started<Vec<u8>>, Refusal> {
        let ctx = self.client.ctx();
        let message = Poplar1VerifierMessage::get_decoded_with_param(&state, message).map_err(invalid)?;
        let VerifyTransition::Continue(next, mine) = self.vdaf.verify_next(ctx, state, message).map_err(invalid)?
        else {
            return Err(Refusal::Invalid);
        };
        let theirs = Poplar1FieldVec::get_decoded_with_param(&next, theirs).map_err(invalid)?;
        let message = self.vdaf.verifier_shares_to_message(ctx, param, [mine, theirs]).map_err(invalid)?;
        Ok((next, message.get_encoded().map_err(invalid)?))
    }

    /// The output share of a round-1 state finished with round 1's `message`, or `None` (refused).
    fn finish_one(&self, state: Poplar1VerifierState, message: &[u8]) -> Option<Poplar1FieldVec> {
        let message = Poplar1VerifierMessage::get_decoded_with_param(&state, message).ok()?;
        match self.vdaf.verify_next(self.client.ctx(), state, message).ok()? {
            VerifyTransition::Finish(out) => Some(out),
            VerifyTransition::Continue(..) => None,
        }
    }

    /// Each item's state (`state_of`: `None` when there is none to finish) finished with its message, over threads;
    /// which gave an output share, in order, and the sum of those.
    fn finish_all<T: Send>(
        &self,
        param: &Poplar1AggregationParam,
        items: Vec<(T, &[u8])>,
        state_of: impl Fn(T) -> Option<Poplar1VerifierState> + Sync,
    ) -> Result<Finished, Fatal> {
        let len = items.len();
        let parts = in_owned_parts(items, |part| -> Result<Finished, Fatal> {
            let mut share = self.vdaf.aggregate_init(param);
            let mut finished = Vec::with_capacity(part.len());
            for (state, message) in part {
                let out = state_of(state).and_then(|state| self.finish_one(state, message));
                if let Some(out) = &out {
                    share.accumulate(out).map_err(|e| e.to_string())?;
                }
                finished.push(out.is_some());
            }
            Ok((finished, share))
        });
        let (mut finished, mut share) = (Vec::with_capacity(len), self.vdaf.aggregate_init(param));
        for part in parts {
            let (part_finished, part_share) = part?;
            share.merge(&part_share).map_err(|e| e.to_string())?;
            finished.extend(part_finished);
        }
        Ok((finished, share))
    }

    /// The finished lists for Python (`finish_all`'s, a fatal error raised as `aggregate`'s).
    fn finished<'py>(
        &self,
        py: Python<'py>,
        agg_param: &Arc<Poplar1AggregationParam>,
        done: Result<Finished, Fatal>,
    ) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
        let (finished, share) = done.map_err(|e| self.err(py, Op::Aggregate, e))?;
        Ok((PyList::new(py, finished)?, AggregateShare { agg_param: agg_param.clone(), inner: share }))
    }
}

/// Round 0 of one job at either aggregator (`leader`: the reports' leader shares are read, maybe opened at its
/// door): the job's arguments checked and its reports read first, then `one` run on each report with the GIL
/// released, spread over threads (`in_parts`), the results in the reports' order.
#[allow(clippy::too_many_arguments)]
fn round_zero<'py, T: Send>(
    vdaf: &Poplar1,
    py: Python<'py>,
    op: Op,
    leader: bool,
    verify_key: &[u8],
    task_id: &[u8],
    agg_param: &AggParam,
    reports: &Bound<'py, PyAny>,
    one: impl Fn(&[u8; VERIFY_KEY_LEN], &[u8; TASK_ID_LEN], &Report<'_>) -> Result<T, Refusal> + Sync,
) -> PyResult<Vec<Result<T, Refusal>>> {
    let (key, task_id) = vdaf.job_args(py, op, verify_key, task_id, agg_param)?;
    let held = read_reports(reports, leader, &|message| vdaf.err(py, op, message))?;
    let reports: Vec<Report<'_>> = held.iter().map(Held::report).collect();
    Ok(py.detach(|| {
        let parts = in_parts(&reports, |part| part.iter().map(|r| one(key, &task_id, r)).collect::<Vec<_>>());
        parts.into_iter().flatten().collect()
    }))
}

/// Per report, `item` of its result or its refusal code, as a Python list in the reports' order.
fn per_report<'py, T>(
    py: Python<'py>,
    results: impl IntoIterator<Item = Result<T, Refusal>>,
    mut item: impl FnMut(T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let items = results
        .into_iter()
        .map(|result| match result {
            Ok(done) => item(done),
            Err(refusal) => Ok(code(py, refusal)),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// The leader's round 0 of one job (its docstring in `_native.pyi`): per report `(state, verifier_share)` or its
/// refusal code.
pub(crate) fn leader_init_batch<'py>(
    vdaf: &Poplar1,
    py: Python<'py>,
    keypair: &Bound<'py, HpkeKeypair>,
    verify_key: &[u8],
    task_id: &[u8],
    agg_param: &AggParam,
    reports: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let (keypair, param) = (&keypair.get().inner, &*agg_param.inner);
    let results =
        round_zero(vdaf, py, Op::LeaderInitBatch, true, verify_key, task_id, agg_param, reports, |key, id, r| {
            vdaf.leader_one(keypair, key, id, param, r)
        })?;
    per_report(py, results, |(state, share)| {
        let state = VerifyState { agg_id: 0, round: 0, agg_param: agg_param.inner.clone(), inner: Some(state) };
        Ok(PyTuple::new(py, [Bound::new(py, state)?.into_any(), PyBytes::new(py, &share).into_any()])?.into_any())
    })
}

/// The helper's round 0 of one job (its docstring in `_native.pyi`): per report `(state, message, verifier_share)`
/// or its refusal code.
pub(crate) fn helper_init_batch<'py>(
    vdaf: &Poplar1,
    py: Python<'py>,
    keypair: &Bound<'py, HpkeKeypair>,
    verify_key: &[u8],
    task_id: &[u8],
    agg_param: &AggParam,
    reports: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let (keypair, param) = (&keypair.get().inner, &*agg_param.inner);
    let results =
        round_zero(vdaf, py, Op::HelperInitBatch, false, verify_key, task_id, agg_param, reports, |key, id, r| {
            vdaf.helper_one(keypair, key, id, param, r)
        })?;
    per_report(py, results, |(state, message, share): HelperRound| {
        Ok(PyTuple::new(py, [PyBytes::new(py, &state), PyBytes::new(py, &message), PyBytes::new(py, &share)])?
            .into_any())
    })
}

/// The leader's round 1 of one job (its docstring in `_native.pyi`): per report `(state, message)` or its refusal
/// code. Only round-0 states are used (another one is refused unused, as `verify_continue` refuses it).
pub(crate) fn leader_continue_batch<'py>(
    vdaf: &Poplar1,
    py: Python<'py>,
    states: &Bound<'py, PyAny>,
    messages: &Bound<'py, PyAny>,
    verifier_shares: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let op = Op::LeaderContinueBatch;
    let held = states_list(states)?;
    let (messages, shares) = (bytes_list(messages, "messages")?, bytes_list(verifier_shares, "verifier_shares")?);
    if held.len() != messages.len() || held.len() != shares.len() {
        let (s, m, v) = (held.len(), messages.len(), shares.len());
        let message = format!("takes one message and one verifier share per state: {s} states, {m}, {v}");
        return Err(vdaf.err(py, op, message));
    }
    // every argument checked: the states are taken now (a state used already, here or before, is refused)
    let mut taken = Vec::with_capacity(held.len());
    let mut owners = Vec::with_capacity(held.len());
    for state in &held {
        let mut state = state.try_borrow_mut()?;
        owners.push((state.agg_id, state.agg_param.clone()));
        let inner = if state.round == 0 { state.inner.take() } else { None };
        taken.push(inner.map(|inner| (inner, state.agg_param.clone())));
    }
    let pairs = messages.iter().map(|m| m.as_bytes()).zip(shares.iter().map(|v| v.as_bytes()));
    let items: Vec<Pending<'_>> = taken.into_iter().zip(pairs).collect();
    let results: Vec<Result<Started<Vec<u8>>, Refusal>> = py.detach(|| {
        let parts = in_owned_parts(items, |part| {
            let one = |(state, (message, theirs)): Pending<'_>| {
                let (state, param) = state.ok_or(Refusal::Invalid)?;
                vdaf.continue_one(state, &param, message, theirs)
            };
            part.into_iter().map(one).collect::<Vec<_>>()
        });
        parts.into_iter().flatten().collect()
    });
    let owned = results.into_iter().zip(owners).map(|(result, owner)| result.map(|done| (done, owner)));
    per_report(py, owned, |((state, message), (agg_id, agg_param))| {
        let state = VerifyState { agg_id, round: 1, agg_param, inner: Some(state) };
        Ok(PyTuple::new(py, [Bound::new(py, state)?.into_any(), PyBytes::new(py, &message).into_any()])?.into_any())
    })
}

/// The leader's last step on one job (its docstring in `_native.pyi`): which round-1 states finished with their
/// messages, and the aggregate share of their output shares.
pub(crate) fn leader_finish_batch<'py>(
    vdaf: &Poplar1,
    py: Python<'py>,
    agg_param: &AggParam,
    states: &Bound<'py, PyAny>,
    messages: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
    let op = Op::LeaderFinishBatch;
    vdaf.check_level(py, op, &agg_param.inner)?;
    let held = states_list(states)?;
    let messages = bytes_list(messages, "messages")?;
    for (i, state) in held.iter().enumerate() {
        if *state.try_borrow()?.agg_param != *agg_param.inner {
            return Err(vdaf.err(py, op, format!("states[{i}] is a state of another aggregation parameter")));
        }
    }
    if held.len() != messages.len() {
        let message = format!("takes one message per state: {} states, {} messages", held.len(), messages.len());
        return Err(vdaf.err(py, op, message));
    }
    let mut items = Vec::with_capacity(held.len());
    for (state, message) in held.iter().zip(messages.iter()) {
        let mut state = state.try_borrow_mut()?;
        let inner = if state.round == 1 { state.inner.take() } else { None }; // verify_finish's rule
        items.push((inner, message.as_bytes()));
    }
    let param = &*agg_param.inner;
    let done = py.detach(|| vdaf.finish_all(param, items, |state| state));
    vdaf.finished(py, &agg_param.inner, done)
}

/// The helper's last step on one job (its docstring in `_native.pyi`): its round-1 states as its records hold
/// them (encoded), which finished with their messages, and the aggregate share of their output shares.
pub(crate) fn helper_finish_batch<'py>(
    vdaf: &Poplar1,
    py: Python<'py>,
    agg_param: &AggParam,
    states: &Bound<'py, PyAny>,
    messages: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyList>, AggregateShare)> {
    let op = Op::HelperFinishBatch;
    vdaf.check_level(py, op, &agg_param.inner)?;
    let (states, messages) = (bytes_list(states, "states")?, bytes_list(messages, "messages")?);
    if states.len() != messages.len() {
        let message = format!("takes one message per state: {} states, {} messages", states.len(), messages.len());
        return Err(vdaf.err(py, op, message));
    }
    let items: Vec<(&[u8], &[u8])> =
        states.iter().map(|s| s.as_bytes()).zip(messages.iter().map(|m| m.as_bytes())).collect();
    let param = &*agg_param.inner;
    let decode = |data: &[u8]| {
        let state = Poplar1VerifierState::get_decoded_with_param(&(&vdaf.vdaf, 1), data).ok()?;
        (encoded_round(data) == 1).then_some(state) // verify_finish's rule on verify_state_from_bytes's round
    };
    let done = py.detach(|| vdaf.finish_all(param, items, decode));
    vdaf.finished(py, &agg_param.inner, done)
}
