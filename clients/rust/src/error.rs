//! The client's errors. Texts are the Python client's, word for word (the conformance vectors check them), so a
//! message an app logs reads the same whichever client made it.

use std::fmt;

use crate::cost::PrivacyCost;
use crate::pytext;

/// The scope of the collection's total budget in [`Error::BudgetExceeded`].
pub const ALL_METRICS: &str = "*";

/// Everything that can go wrong in the client, each kind with its own variant.
///
/// [`Error::Value`] and [`Error::Type`] stand for Python's `ValueError` (the right type, a wrong value) and
/// `TypeError` (the wrong type): [`Error::python_type`] names the Python class, and the message is Python's.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A parameter or value of the right type but a wrong value (Python's `ValueError`).
    Value(String),
    /// A parameter or value of the wrong type (Python's `TypeError`).
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

    /// The Python exception class this error stands for (`ValueError`, `TypeError`, `SpecError`,
    /// `BudgetExceeded`, …).
    pub fn python_type(&self) -> &'static str {
        match self {
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

    /// The message alone (what Python's `str(exception)` gives).
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
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
                let who = if scope == ALL_METRICS {
                    "all metrics".to_string()
                } else {
                    format!("metric {}", pytext::repr(scope))
                };
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

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Ledger(e.to_string())
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
