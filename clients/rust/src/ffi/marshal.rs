//! Arguments and results across the C boundary: strings, byte ranges and out pointers checked on the way in
//! (a null pointer, invalid UTF-8 or an oversized input is an `LDP_INVALID_ARGUMENT`), strings handed out and freed.

use std::ffi::{c_char, CStr, CString};

use super::LDP_MAX_INPUT;
use crate::error::{Error, Result};
use crate::Value;

pub(super) fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}

/// A NUL-terminated UTF-8 string argument.
pub(super) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(invalid(format!("{what} is a null pointer")));
    }
    let bytes = CStr::from_ptr(p).to_bytes();
    if bytes.len() > LDP_MAX_INPUT {
        return Err(invalid(format!("{what} is over {LDP_MAX_INPUT} bytes")));
    }
    std::str::from_utf8(bytes).map_err(|e| invalid(format!("{what} is not valid UTF-8 ({e})")))
}

/// A byte range argument (`len` 0 with a null pointer is the empty range).
pub(super) unsafe fn c_bytes<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    if len > LDP_MAX_INPUT {
        return Err(invalid(format!("{what} is over {LDP_MAX_INPUT} bytes ({len})")));
    }
    if p.is_null() {
        return if len == 0 { Ok(&[]) } else { Err(invalid(format!("{what} is a null pointer"))) };
    }
    Ok(std::slice::from_raw_parts(p, len))
}

pub(super) unsafe fn c_utf8<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a str> {
    std::str::from_utf8(c_bytes(p, len, what)?).map_err(|e| invalid(format!("{what} is not valid UTF-8 ({e})")))
}

pub(super) fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller passes a valid pointer or null; null is refused.
    unsafe { p.as_mut() }.ok_or_else(|| invalid(format!("{what} (an out pointer) is null")))
}

/// The out-parameter calls of the two-aggregator functions (`ldp_prio3_*`, `ldp_dap_*`, `ldp_poplar1_*`: features
/// `prio`, which `poplar1` implies; the others set theirs inline).
#[cfg(feature = "prio")]
mod outs {
    use std::ptr;

    use super::out;
    use crate::error::Result;
    use crate::ffi::last_error::guard;
    use crate::ffi::LdpStatus;

    /// An out-parameter call, under `guard`: `*out` (the argument named `what`) is null first (so that a refusal leaves
    /// it null), then what `make` returns (a new handle, a pointer inside one). A null `out` is refused
    /// (`LDP_INVALID_ARGUMENT`).
    pub(in crate::ffi) fn out_ptr<P: Unset>(out: *mut P, what: &str, make: impl FnOnce() -> Result<P>) -> LdpStatus {
        guard(|| {
            let o = super::out(out, what)?;
            *o = P::UNSET;
            *o = make()?;
            Ok(())
        })
    }

    /// A byte-range out-parameter call, under `guard`: `*bytes` and `*len` are null and 0 first, then the range `get`
    /// returns (inside a live handle, valid until it is freed). A null `bytes` or `len` is refused.
    pub(in crate::ffi) fn out_bytes<'a>(
        bytes: *mut *const u8,
        len: *mut usize,
        get: impl FnOnce() -> Result<&'a [u8]>,
    ) -> LdpStatus {
        guard(|| {
            let (b, l) = (out(bytes, "bytes")?, out(len, "len")?);
            (*b, *l) = (ptr::null(), 0);
            let range = get()?;
            (*b, *l) = (range.as_ptr(), range.len());
            Ok(())
        })
    }

    /// What an out parameter is reset to before a call: a null pointer, 0.
    pub(in crate::ffi) trait Unset {
        const UNSET: Self;
    }

    impl<T> Unset for *mut T {
        const UNSET: Self = ptr::null_mut();
    }

    impl<T> Unset for *const T {
        const UNSET: Self = ptr::null();
    }

    impl Unset for usize {
        const UNSET: Self = 0;
    }
}

#[cfg(feature = "prio")]
pub(super) use outs::{out_bytes, out_ptr};

pub(super) fn new_string(s: String) -> Result<*mut c_char> {
    Ok(CString::new(s).map_err(|_| Error::Internal("a string with a NUL byte".into()))?.into_raw())
}

pub(super) fn parse_value(text: &str) -> Result<Value> {
    crate::json::parse(text).map_err(|e| invalid(format!("the value is not one JSON document: {e}")))
}

/// Frees a string the library returned (null is ignored).
///
/// # Safety
/// `s` is null or a string this library returned, not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(CString::from_raw(s));
    }
}
