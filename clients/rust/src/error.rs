//! The client's errors. A refused parameter or value is an [`Error::Refusal`]: a [`Refusal`] says what was refused
//! by meaning (its [`RefusalKind`], [`RefusalCode`] and fields, the same in every client: docs/conformance.md,
//! "Refusals"); its message is this client's own.
//!
//! Layout: [`Error`] here; a refusal, its kind and code (`refusal`), and its message (`message`).

use std::fmt;

use serde_json::Value;

use crate::cost::PrivacyCost;

mod message;
mod refusal;

pub(crate) use refusal::kind_of;
pub use refusal::{Refusal, RefusalCode, RefusalKind};

/// The scope of the collection's total budget in [`Error::BudgetExceeded`].
pub const ALL_METRICS: &str = "*";

/// Everything that can go wrong in the client, each kind with its own variant.
///
/// A protocol's refusal of a parameter or value is an [`Error::Refusal`], its [`Refusal`] telling what by meaning;
/// [`Error::python_type`] names the error's class as every client of `ldp` does (`ValueError`, `TypeError`, …).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A protocol refused a parameter or a value: what, by meaning ([`Refusal::code`], [`Refusal::fields`]).
    Refusal(Refusal),
    /// Another argument of the right type but a wrong value (Python's `ValueError`).
    Value(String),
    /// Another argument of the wrong type (Python's `TypeError`).
    Type(String),
    /// An invalid collection spec: every problem as `json.path: message` (Python's `SpecError`).
    Spec {
        /// Where the spec came from (`spec`, a file name).
        source: String,
        /// Each problem found, in document order.
        errors: Vec<String>,
    },
    /// A charge would exceed a cap: nothing was charged and no report was made (Python's `BudgetExceeded`).
    BudgetExceeded {
        /// The metric, or [`ALL_METRICS`] for the collection's total.
        scope: String,
        /// `"window"` or `"lifetime"`.
        period: String,
        /// What the report would have cost.
        requested: PrivacyCost,
        /// What the scope has spent in the period.
        spent: PrivacyCost,
        /// The scope's cap in the period.
        cap: PrivacyCost,
    },
    /// The ledger's state cannot be read or written safely (damaged file, lock not obtained in time, I/O error, a
    /// state missing beside traces of it).
    Ledger(String),
    /// The report would take the outbox past its cap (`max_outbox_bytes`): nothing was charged or stored
    /// (Python's `OutboxFull`). Uploading makes room.
    OutboxFull {
        /// Bytes waiting for upload (each pending report's envelope line and its newline, pinned batches included).
        pending_bytes: u64,
        /// The cap.
        max_bytes: u64,
        /// The refused item of a [`crate::TelemetryClient::record_many`] batch (`None` for `record`).
        item: Option<usize>,
    },
    /// The device opted out of collection ([`crate::TelemetryClient::opt_out`]): nothing was charged or stored
    /// (Python's `OptedOutError`).
    OptedOut(String),
    /// A replayed random source was asked for a draw it does not hold (conformance tests).
    Replay(String),
    /// An upload failed for now (network, deadline, 5xx, 408, 429): the batch stays queued and is retried.
    Transport(String),
    /// The collector refused a batch for good (a 4xx other than 408 and 429): retrying would not help.
    UploadRejected {
        /// The HTTP status.
        status: u16,
        /// The collector's reason, bounded.
        message: String,
    },
    /// An item of a [`crate::TelemetryClient::record_many`] batch was refused (nothing of the batch was kept):
    /// which item, its metric, and why.
    Item {
        /// The refused item's position in the batch.
        index: usize,
        /// Its metric.
        metric: String,
        /// Why it was refused (a [`Error::Refusal`] of its value, an unknown metric, …).
        error: Box<Error>,
    },
    /// A bad argument at the C interface (null pointer, invalid UTF-8, oversized input, wrong handle).
    InvalidArgument(String),
    /// A panic inside the library, caught at the C interface (a bug: please report it).
    Internal(String),
}

impl Error {
    pub(crate) fn value(message: impl Into<String>) -> Self {
        Error::Value(message.into())
    }

    pub(crate) fn type_(message: impl Into<String>) -> Self {
        Error::Type(message.into())
    }

    /// The refusal, if this error is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Error::Refusal(r) => Some(r),
            Error::Item { error, .. } => error.refusal(),
            _ => None,
        }
    }

    /// The error's class, as every client names it (`ValueError`, `TypeError`, `SpecError`, `BudgetExceeded`, …;
    /// a refusal is a `TypeError` or a `ValueError` by its [`RefusalKind`]).
    pub fn python_type(&self) -> &'static str {
        match self {
            Error::Refusal(r) => r.kind.as_str(),
            Error::Item { error, .. } => error.python_type(),
            Error::Value(_) | Error::InvalidArgument(_) => "ValueError",
            Error::Type(_) => "TypeError",
            Error::Spec { .. } => "SpecError",
            Error::BudgetExceeded { .. } => "BudgetExceeded",
            Error::Ledger(_) => "LedgerError",
            Error::OutboxFull { .. } => "OutboxFull",
            Error::OptedOut(_) => "OptedOutError",
            Error::Replay(_) => "ReplayError",
            Error::Transport(_) => "TransportError",
            Error::UploadRejected { .. } => "UploadRejected",
            Error::Internal(_) => "RuntimeError",
        }
    }

    /// This error with the parameter names of a refusal mapped by `rename` (other errors as they are): a protocol's
    /// refusal of a part it is built from, in its own names.
    pub(crate) fn renamed(self, rename: impl Fn(&str) -> Option<String>) -> Self {
        match self {
            Error::Refusal(r) => Error::Refusal(r.renamed(rename)),
            other => other,
        }
    }

    /// This error with field `name` set to `value` if it is a refusal (an attribute of a `multi`).
    pub(crate) fn with_field(self, name: &str, value: impl Into<Value>) -> Self {
        match self {
            Error::Refusal(r) => Error::Refusal(r.with(name, value)),
            other => other,
        }
    }

    /// A `param_relation` refusal (that `keep` accepts) restated as the same rule broken by `params`: a part's
    /// refusal that the protocol's own parameters cause together (an hh level's ε too large for its oracle).
    pub(crate) fn relation_of(self, params: &[&str], keep: impl Fn(&Refusal) -> bool) -> Self {
        match self {
            Error::Refusal(r) if r.code == RefusalCode::ParamRelation && keep(&r) => {
                let rule = r.fields.get("rule").and_then(Value::as_str).unwrap_or_default().to_string();
                Error::Refusal(Refusal::relation(&rule, params))
            }
            other => other,
        }
    }

    /// The message alone.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Refusal(r) => r.fmt(f),
            Error::Item { index, metric, error } => write!(f, "record_many item {index} ({metric:?}): {error}"),
            Error::Value(m)
            | Error::Type(m)
            | Error::Ledger(m)
            | Error::OptedOut(m)
            | Error::Replay(m)
            | Error::Transport(m)
            | Error::InvalidArgument(m)
            | Error::Internal(m) => f.write_str(m),
            Error::Spec { source, errors } => {
                write!(f, "{source}: {} error(s):", errors.len())?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
            Error::BudgetExceeded { scope, period, requested, spent, cap } => {
                let who = if scope == ALL_METRICS { "all metrics".to_string() } else { format!("metric {scope:?}") };
                write!(
                    f,
                    "privacy budget exceeded for {who} ({period}): spent {spent}, requested {requested}, cap {cap}"
                )
            }
            Error::OutboxFull { pending_bytes, max_bytes, item } => {
                if let Some(i) = item {
                    write!(f, "record_many item {i} does not fit: ")?;
                }
                write!(
                    f,
                    "the outbox is full: {pending_bytes} bytes wait for upload and the cap (max_outbox_bytes) is \
                     {max_bytes}; nothing was charged or stored (upload to make room)"
                )
            }
            Error::UploadRejected { status, message } => {
                write!(f, "the collector refused the batch ({status}): {message}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Refusal(r) => Some(r),
            Error::Item { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        Error::Refusal(r)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Ledger(e.to_string())
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
