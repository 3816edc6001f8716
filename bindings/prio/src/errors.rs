//! Refusals as `ldp.errors.PrioError(message, operation)`: the class lives in `ldp/errors.py` (every exception of
//! `ldp` does), imported once.

use std::fmt::Display;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static PRIO_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The operations a refusal names (`PrioError.operation`): the method that refused, or `decode` for bytes read back
/// into a share or a DAP message outside an operation, `parameters` for a VDAF or a key that cannot be built,
/// `encode` for a DAP message that has no encoding, `seal` and `open` for HPKE and DAP reports (`dap.rs`), and the
/// batch calls' own names for their arguments (`batch.rs`, `poplar1_batch.rs`: a report refused inside a batch is a
/// code, not an error).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    Parameters,
    Shard,
    VerifyInit,
    VerifierSharesToMessage,
    VerifyNext,
    Aggregate,
    Unshard,
    Decode,
    Encode,
    Seal,
    Open,
    HelperPrepareBatch,
    LeaderInitBatch,
    LeaderFinishBatch,
    HelperInitBatch,
    LeaderContinueBatch,
    HelperFinishBatch,
}

impl Op {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Parameters => "parameters",
            Op::Shard => "shard",
            Op::VerifyInit => "verify_init",
            Op::VerifierSharesToMessage => "verifier_shares_to_message",
            Op::VerifyNext => "verify_next",
            Op::Aggregate => "aggregate",
            Op::Unshard => "unshard",
            Op::Decode => "decode",
            Op::Encode => "encode",
            Op::Seal => "seal",
            Op::Open => "open",
            Op::HelperPrepareBatch => "helper_prepare_batch",
            Op::LeaderInitBatch => "leader_init_batch",
            Op::LeaderFinishBatch => "leader_finish_batch",
            Op::HelperInitBatch => "helper_init_batch",
            Op::LeaderContinueBatch => "leader_continue_batch",
            Op::HelperFinishBatch => "helper_finish_batch",
        }
    }
}

/// A `PrioError` whose message is `"{subject}.{operation}: {what}"` (or `"{subject}: {what}"` for parameters).
pub(crate) fn refused(py: Python<'_>, subject: &dyn Display, op: Op, what: impl Display) -> PyErr {
    let message = match op {
        Op::Parameters => format!("{subject}: {what}"),
        _ => format!("{subject}.{}: {what}", op.name()),
    };
    match PRIO_ERROR.import(py, "ldp.errors", "PrioError") {
        Ok(cls) => match cls.call1((message, op.name())) {
            Ok(instance) => PyErr::from_value(instance),
            Err(err) => err,
        },
        Err(err) => err,
    }
}
