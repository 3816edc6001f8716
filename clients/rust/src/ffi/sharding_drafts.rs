//! The C interface of the VDAF drafts (feature `prio`; declared in the header under `LDP_CLIENT_PRIO`): Prio3
//! clients of a given draft, `LDP_VDAF_DRAFT_08` (what deployed DAP-09 stacks speak: Janus 0.7, divviup-ts, Firefox)
//! or `LDP_VDAF_DRAFT_18` (what `ldp_prio3_new_count` and the other constructors without `_draft` make), and what
//! follows from a client's draft. See `ldp_client::prio3::VdafDraft`.
//!
//! One constructor per type with the draft first, rather than a draft setter on a client: an `LdpPrio3` never
//! changes (any number of threads may share it), and the draft decides which parameters are valid (draft 08 has no
//! context string and takes a Sum or SumVec bound 2^b − 1), so it is checked with them, once.
//!
//! Every item carries `#[cfg(feature = "prio")]` itself: cbindgen reads this file on its own and puts each such item
//! under `#if defined(LDP_CLIENT_PRIO)`.

use super::handles::handle;
use super::sharding::{histogram, new_prio3, sum_vec, LdpPrio3};
use super::LdpStatus;
use crate::prio3::{Prio3Type, VdafDraft};

/// VDAF draft 08 (`draft-irtf-cfrg-vdaf-08`, the prio crate 0.16.8): the `draft` of `ldp_prio3_new_count_draft` and
/// the other `_draft` constructors.
#[cfg(feature = "prio")]
pub const LDP_VDAF_DRAFT_08: u32 = 8;
#[cfg(feature = "prio")]
const _: () = assert!(matches!(VdafDraft::from_number(LDP_VDAF_DRAFT_08), Some(VdafDraft::Draft08)));

/// VDAF draft 18 (`draft-irtf-cfrg-vdaf-18`, the prio crate 0.18.1): what the constructors without `_draft` make.
#[cfg(feature = "prio")]
pub const LDP_VDAF_DRAFT_18: u32 = 18;
#[cfg(feature = "prio")]
const _: () = assert!(matches!(VdafDraft::from_number(LDP_VDAF_DRAFT_18), Some(VdafDraft::Draft18)));

/// `ldp_prio3_new_count` in VDAF draft `draft` (`LDP_VDAF_DRAFT_08` or `LDP_VDAF_DRAFT_18`; another is
/// `LDP_VALUE_ERROR`). Draft 08 has no context string: a `ctx_len` other than 0 is `LDP_VALUE_ERROR`
/// (`param_relation`, rule `vdaf08_no_ctx`).
///
/// # Safety
/// As `ldp_prio3_new_count`.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_new_count_draft(
    draft: u32,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPrio3,
) -> LdpStatus {
    new_prio3(draft, |_| Prio3Type::Count, ctx, ctx_len, out)
}

/// `ldp_prio3_new_sum` in VDAF draft `draft`. Draft 08 bounds a sum by a number of bits b: `max_measurement` must be
/// 2^b − 1 (1, 3, 7, ..., 2^64 − 1); another is `LDP_VALUE_ERROR` (`param_relation`, rule `vdaf08_bits`, its fields
/// `got` and `nearest`, the allowed values below and above it).
///
/// # Safety
/// As `ldp_prio3_new_count`.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_new_sum_draft(
    draft: u32,
    max_measurement: u64,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPrio3,
) -> LdpStatus {
    new_prio3(draft, |_| Prio3Type::Sum { max_measurement }, ctx, ctx_len, out)
}

/// `ldp_prio3_new_sum_vec` in VDAF draft `draft` (`chunk_length` 0: the draft's recommended one). Draft 08 takes a
/// `max_measurement` 2^b − 1 only, as `ldp_prio3_new_sum_draft`.
///
/// # Safety
/// As `ldp_prio3_new_count`.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_new_sum_vec_draft(
    draft: u32,
    max_measurement: u64,
    length: usize,
    chunk_length: usize,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPrio3,
) -> LdpStatus {
    new_prio3(draft, |d| sum_vec(d, max_measurement, length, chunk_length), ctx, ctx_len, out)
}

/// `ldp_prio3_new_histogram` in VDAF draft `draft` (`chunk_length` 0: the draft's recommended one).
///
/// # Safety
/// As `ldp_prio3_new_count`.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_new_histogram_draft(
    draft: u32,
    length: usize,
    chunk_length: usize,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPrio3,
) -> LdpStatus {
    new_prio3(draft, |d| histogram(d, length, chunk_length), ctx, ctx_len, out)
}

/// The client's VDAF draft (`LDP_VDAF_DRAFT_08` or `LDP_VDAF_DRAFT_18`); 0 for a null handle or one of another kind.
///
/// # Safety
/// `prio3` is null or a live handle.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_draft(prio3: *const LdpPrio3) -> u32 {
    handle(prio3, "prio3").map_or(0, |p| p.0.draft().number())
}

/// Bytes of the verify key the two aggregators of the client's draft share (devices never see it): 16 in draft 08,
/// 32 in draft 18; 0 for a null handle or one of another kind.
///
/// # Safety
/// `prio3` is null or a live handle.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_verify_key_len(prio3: *const LdpPrio3) -> usize {
    handle(prio3, "prio3").map_or(0, |p| p.0.verify_key_len())
}
