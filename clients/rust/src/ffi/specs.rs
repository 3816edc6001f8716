//! Specs: `LdpSpec`, a validated collection spec, parsed from JSON and fingerprinted.

use std::ffi::c_char;
use std::ptr;
use std::sync::Arc;

use super::handles::{free_handle, handle, new_handle};
use super::last_error::guard;
use super::marshal::{c_utf8, invalid, out};
use super::LdpStatus;
use crate::spec::CollectionSpec;

/// A validated collection spec.
pub struct LdpSpec(pub(super) Arc<CollectionSpec>);

/// Parses and validates a collection spec (`json`, `len` bytes of UTF-8 JSON) into `*out`.
///
/// # Safety
/// `json` points to `len` readable bytes (or is null with `len` 0); `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn ldp_spec_parse(json: *const u8, len: usize, out: *mut *mut LdpSpec) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let text = c_utf8(json, len, "the spec")?;
        let spec = CollectionSpec::parse(text)?;
        *o = new_handle(LdpSpec(Arc::new(spec)));
        Ok(())
    })
}

/// Writes the spec's fingerprint (16 hex digits and a NUL) into `out`, which has room for 17 bytes.
///
/// # Safety
/// `spec` is a live spec handle; `out` points to 17 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ldp_spec_fingerprint(spec: *const LdpSpec, out: *mut c_char) -> LdpStatus {
    guard(|| {
        let spec = handle(spec, "spec")?;
        if out.is_null() {
            return Err(invalid("out is a null pointer"));
        }
        let fp = spec.0.fingerprint().as_bytes();
        ptr::copy_nonoverlapping(fp.as_ptr().cast::<c_char>(), out, fp.len().min(16));
        *out.add(fp.len().min(16)) = 0;
        Ok(())
    })
}

/// Frees a spec (null, or a handle of another kind, is ignored). Clients and encoders made from it keep their own
/// reference.
///
/// # Safety
/// `spec` is null or a spec handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_spec_free(spec: *mut LdpSpec) {
    free_handle(spec);
}
