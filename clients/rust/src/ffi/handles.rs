//! Handles: every handle the library returns points to a [`Tagged`] allocation whose first 8 bytes are its kind's
//! tag, so a handle of another kind (or a freed one) is refused instead of being read as the wrong type.

use std::ptr;

use super::marshal::invalid;
use super::{LdpClient, LdpEncoder, LdpPrepared, LdpRandom, LdpRequest, LdpSpec};
use crate::error::Result;

/// A handle's allocation: its kind's tag first, then the value. Every handle the library returns points to one, so
/// the first 8 bytes behind any live handle are a tag, and a handle of one kind passed where another is expected (a
/// spec for a client, say) is refused as `LDP_INVALID_ARGUMENT` instead of being read as the wrong type.
#[repr(C)]
struct Tagged<T> {
    tag: u64,
    value: T,
}

/// What a freed handle's tag is overwritten with before its memory goes (a second free is then ignored while the
/// allocator leaves the bytes alone).
const FREED: u64 = 0x6c64_7066_7265_6564; // "ldpfreed"

/// A kind of handle: its tag and its name in error messages.
pub(super) trait Handle: Sized {
    const TAG: u64;
    const KIND: &'static str;
}

macro_rules! handle_kind {
    ($($t:ty => $tag:expr, $kind:expr;)*) => {$(
        impl Handle for $t {
            const TAG: u64 = $tag;
            const KIND: &'static str = $kind;
        }
    )*};
}

handle_kind! {
    LdpSpec => 0x6c64_7073_7065_6331, "a spec";
    LdpRandom => 0x6c64_7072_6e64_3031, "a random source";
    LdpEncoder => 0x6c64_7065_6e63_3031, "an encoder";
    LdpPrepared => 0x6c64_7070_7265_7031, "a prepared value";
    LdpClient => 0x6c64_7063_6c6e_7431, "a client";
    LdpRequest => 0x6c64_7072_6571_3031, "a request";
}

/// A new handle holding `value`.
pub(super) fn new_handle<T: Handle>(value: T) -> *mut T {
    Box::into_raw(Box::new(Tagged { tag: T::TAG, value })).cast()
}

/// The value behind handle `p` if it is a live handle of `T`'s kind.
fn tagged<T: Handle>(p: *const T, what: &str) -> Result<*mut Tagged<T>> {
    if p.is_null() {
        return Err(invalid(format!("{what} is a null handle")));
    }
    // SAFETY: a non-null handle is one this library returned (a `Tagged` of some kind, at least 8 bytes, its tag
    // first) and the caller has not freed.
    let tag = unsafe { ptr::read(p.cast::<u64>()) };
    if tag != T::TAG {
        return Err(invalid(format!("{what} is not {} handle (a handle of another kind, or a freed one)", T::KIND)));
    }
    Ok(p.cast::<Tagged<T>>().cast_mut())
}

pub(super) fn handle<'a, T: Handle>(p: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: checked by `tagged`: a live handle of this kind.
    Ok(unsafe { &(*tagged(p, what)?).value })
}

pub(super) fn handle_mut<'a, T: Handle>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: as for `handle`, used by one thread at a time.
    Ok(unsafe { &mut (*tagged(p, what)?).value })
}

/// Frees handle `p` (null, or a handle of another kind, is ignored).
///
/// # Safety
/// `p` is null or a handle this library returned and the caller has not freed.
pub(super) unsafe fn free_handle<T: Handle>(p: *mut T) {
    if let Ok(t) = tagged(p, "handle") {
        ptr::write_volatile(&mut (*t).tag, FREED);
        drop(Box::from_raw(t));
    }
}
