//! The calling thread's last error (`ldp_last_error_*`), kept as `errno` is, and [`guard`], which runs every call:
//! it catches a panic and turns a failure into its status, recording the error for the thread.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::LdpStatus;
use crate::error::{Error, Result};

/// The calling thread's last error: message, type, refusal code and refusal fields (JSON).
#[derive(Default)]
struct LastError {
    message: CString,
    ty: CString,
    code: CString,
    fields: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError::default());
}

fn set_error(e: &Error) {
    let text = |s: String| CString::new(s.replace('\0', "\\0")).unwrap_or_default();
    let (code, fields) = match e.refusal() {
        // serde_json escapes a NUL in a string as \u0000: the JSON text holds none.
        Some(r) => (text(r.code.as_str().into()), text(r.fields_json())),
        None => (CString::default(), CString::default()),
    };
    let last = LastError { message: text(e.to_string()), ty: text(e.python_type().into()), code, fields };
    LAST_ERROR.with(|l| *l.borrow_mut() = last);
}

/// Runs `f`, catching panics; the status of its result. A failure replaces the thread's last error; a success
/// leaves it as it was (as `errno`: the module's documentation says why).
pub(super) fn guard(f: impl FnOnce() -> Result<()>) -> LdpStatus {
    let result = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Err(Error::Internal(format!("internal error (please report it): {what}")))
    });
    match result {
        Ok(()) => LdpStatus::LdpOk,
        Err(e) => {
            set_error(&e);
            LdpStatus::from(&e)
        }
    }
}

/// The message of the calling thread's last error: of its last call that failed, kept through the successes since
/// (as `errno`; an empty string before the thread's first failure). Read it after a status that is not `LDP_OK`.
/// Valid until the thread's next failing call into the library; copy it to keep it.
#[no_mangle]
pub extern "C" fn ldp_last_error_message() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().message.as_ptr())
}

/// The class of the calling thread's last error, as every client of `ldp` names it (`ValueError`, `TypeError`,
/// `SpecError`, `BudgetExceeded`, …; empty before the thread's first failure). Kept as the message is; valid until
/// the thread's next failing call into the library.
#[no_mangle]
pub extern "C" fn ldp_last_error_type() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().ty.as_ptr())
}

/// The refusal code of the calling thread's last error when a protocol refused a parameter or a value
/// (`LDP_TYPE_ERROR` or `LDP_VALUE_ERROR`): a stable machine code such as `param_range`, `value_type` or
/// `unknown_label` (docs/conformance.md, "Refusals"). An empty string when the last error is no refusal (or before
/// the thread's first failure). Kept as the message is; valid until the thread's next failing call into the library.
#[no_mangle]
pub extern "C" fn ldp_last_error_code() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().code.as_ptr())
}

/// The fields of the calling thread's last refusal as a compact JSON object (`{"param":"epsilon","got":-1,
/// "min":0,"min_exclusive":true,"finite":true}`): each code's fields are listed in docs/conformance.md. A number
/// JSON cannot write (the NaN or infinity given to `ldp_client_record_double`) is `null`. An empty string when the
/// last error is no refusal (or before the thread's first failure). Kept as the message is; valid until the
/// thread's next failing call into the library.
#[no_mangle]
pub extern "C" fn ldp_last_error_fields() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().fields.as_ptr())
}
