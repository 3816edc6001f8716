//! The C interface (`include/ldp_client.h`, generated from this file and the files under `src/ffi/` by cbindgen and
//! checked by a test).
//!
//! Conventions: every function returns an [`LdpStatus`] (0 is success) and writes its results through out
//! pointers; on failure, [`ldp_last_error_message`] and [`ldp_last_error_type`] describe the error, and for a refused
//! parameter or value [`ldp_last_error_code`] and [`ldp_last_error_fields`] say what was refused by meaning. The last
//! error is the calling thread's, and it is kept until the thread's next FAILING call, as `errno` is: a call that
//! succeeds (any `ldp_*` function returning `LDP_OK`), a `_free` function, a count or a getter leaves it as it was,
//! so a caller may clean up before reading it. So read it only after a status that is not `LDP_OK`: after a
//! success it may describe an older failure. Each failing call replaces all four (a failure that is no refusal
//! empties the code and fields). Handles are opaque and freed by their own `_free` function (a null handle is ignored);
//! strings the library returns are freed with [`ldp_string_free`]. Inputs are UTF-8 byte ranges (pointer and
//! length) or NUL-terminated UTF-8 strings; a null pointer, invalid UTF-8 or an oversized input is an
//! `LDP_INVALID_ARGUMENT`, never a crash. A panic inside the library is caught and returned as `LDP_INTERNAL`.
//! Every handle carries a tag of its kind: a handle of another kind (a spec passed as a client) is an
//! `LDP_INVALID_ARGUMENT` too, and a `_free` function ignores it.
//!
//! Threads: an `LdpClient` may be used from any number of threads at once (its calls serialize on the store's
//! lock), and so may an `LdpPrio3`, `LdpPrio3Shares`, `LdpPoplar1`, `LdpPoplar1Shares` and `LdpDapReport` (they
//! never change); an `LdpEncoder`, `LdpRandom` or `LdpRequest` by one thread at a time.
//!
//! Layout: this file holds the status, the limits and the version; a module per idea holds the rest, in the
//! header's order: the last error and the guard every call runs in (`last_error`), arguments and results across the
//! boundary (`marshal`), tagged handles (`handles`), then specs, random sources, encoders, clients, requests for the
//! app's own HTTP stack, the blocking uploader and its log callback (feature `uploader`). The Prio3 sharding of the
//! two-aggregator mode (feature `prio`, `ldp_prio3_*`) is in `src/ffi/sharding.rs` (its clients of a given VDAF
//! draft in `src/ffi/sharding_drafts.rs`), its DAP-09 reports (`ldp_dap_*`) in `src/ffi/dap_report.rs`; Poplar1's
//! sharding and reports (feature `poplar1`, `ldp_poplar1_*`) in `src/ffi/poplar1_sharding.rs`.

#![allow(unsafe_code)]

use std::ffi::c_char;

use crate::error::{Error, RefusalKind};

/// The result of every call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdpStatus {
    /// Success.
    LdpOk = 0,
    /// A value or parameter of the right type but a wrong value (Python's `ValueError`).
    LdpValueError = 1,
    /// A value or parameter of the wrong type (Python's `TypeError`).
    LdpTypeError = 2,
    /// An invalid collection spec (every problem in the message).
    LdpSpecError = 3,
    /// A privacy budget would be exceeded: nothing was charged, no report was made.
    LdpBudgetExceeded = 4,
    /// The ledger's state cannot be read or written safely (damaged file, lock timeout, I/O).
    LdpLedgerError = 5,
    /// A null pointer, invalid UTF-8, an oversized input, or a handle of the wrong kind.
    LdpInvalidArgument = 6,
    /// A replayed random source ran out or was asked for another draw (conformance tests).
    LdpReplayError = 7,
    /// An upload failed for now: the batch stays queued and will be retried.
    LdpTransportError = 8,
    /// The collector refused a batch for good.
    LdpUploadRejected = 9,
    /// A bug in the library (a caught panic): please report it.
    LdpInternal = 10,
    /// The outbox is full (`max_outbox_bytes`): nothing was charged or stored; uploading makes room.
    LdpOutboxFull = 11,
    /// The device opted out (`ldp_client_opt_out`): nothing was charged or stored until `ldp_client_opt_in`.
    LdpOptedOut = 12,
}

impl From<&Error> for LdpStatus {
    fn from(e: &Error) -> Self {
        match e {
            Error::Refusal(r) => match r.kind {
                RefusalKind::Type => LdpStatus::LdpTypeError,
                RefusalKind::Value => LdpStatus::LdpValueError,
            },
            Error::Item { error, .. } => LdpStatus::from(error.as_ref()),
            Error::Value(_) => LdpStatus::LdpValueError,
            Error::Type(_) => LdpStatus::LdpTypeError,
            Error::Spec { .. } => LdpStatus::LdpSpecError,
            Error::BudgetExceeded { .. } => LdpStatus::LdpBudgetExceeded,
            Error::Ledger(_) => LdpStatus::LdpLedgerError,
            Error::InvalidArgument(_) => LdpStatus::LdpInvalidArgument,
            Error::Replay(_) => LdpStatus::LdpReplayError,
            Error::Transport(_) => LdpStatus::LdpTransportError,
            Error::UploadRejected { .. } => LdpStatus::LdpUploadRejected,
            Error::Internal(_) => LdpStatus::LdpInternal,
            Error::OutboxFull { .. } => LdpStatus::LdpOutboxFull,
            Error::OptedOut(_) => LdpStatus::LdpOptedOut,
        }
    }
}

/// The largest spec, value or reply a call accepts, in bytes (16 MiB).
pub const LDP_MAX_INPUT: usize = 1 << 24;

/// The longest wait `ldp_client_handle_reply` hands back for a `Retry-After`, in seconds (5 minutes, the built-in
/// uploader's default `max_delay`): a longer or absurd value from the collector is cut to it.
pub const LDP_MAX_RETRY_AFTER_SECONDS: u32 = 300;

/// The default cap of a client's outbox in bytes (1 MiB): `LdpClientOptions.max_outbox_bytes` 0 stands for it.
pub const LDP_DEFAULT_MAX_OUTBOX_BYTES: u64 = 1_048_576;
const _: () = assert!(LDP_DEFAULT_MAX_OUTBOX_BYTES == crate::client::DEFAULT_MAX_OUTBOX_BYTES);

/// The library's version (a static string).
#[no_mangle]
pub extern "C" fn ldp_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// The modules, in the order of the header: tests/header.rs hands cbindgen the files in the order declared here.
// cbindgen reads this file as a crate root, so a `mod x;` here would make it read `src/x.rs` too: no module is named
// as one of the crate's (not `spec`, `random`, `client`, `prio3` or `dap`, which are the Rust API's modules).

mod last_error;
pub use last_error::{ldp_last_error_code, ldp_last_error_fields, ldp_last_error_message, ldp_last_error_type};
mod marshal;
pub use marshal::ldp_string_free;
mod handles;

mod specs;
pub use specs::*;
mod random_sources;
pub use random_sources::*;
mod encoders;
pub use encoders::*;
mod clients;
pub use clients::*;
mod requests;
pub use requests::*;

#[cfg(feature = "uploader")]
mod blocking_upload;
#[cfg(feature = "uploader")]
pub use blocking_upload::*;
#[cfg(feature = "uploader")]
mod log_callback;
#[cfg(feature = "uploader")]
pub use log_callback::*;

// DAP-09 reports of Prio3 measurements, sealed with HPKE (feature `prio`).
#[cfg(feature = "prio")]
mod dap_report;
#[cfg(feature = "prio")]
pub use dap_report::*;
// A two-aggregator task's file and its reports (feature `prio`).
#[cfg(feature = "prio")]
mod dap_task;
#[cfg(feature = "prio")]
pub use dap_task::*;

// Prio3 sharding for the two-aggregator mode (feature `prio`), and its clients of a given VDAF draft.
#[cfg(feature = "prio")]
mod sharding;
#[cfg(feature = "prio")]
pub use sharding::*;
#[cfg(feature = "prio")]
mod sharding_drafts;
#[cfg(feature = "prio")]
pub use sharding_drafts::*;

// Poplar1 sharding for heavy hitters over two aggregators, and its DAP-09 reports (feature `poplar1`).
#[cfg(feature = "poplar1")]
mod poplar1_sharding;
#[cfg(feature = "poplar1")]
pub use poplar1_sharding::*;
