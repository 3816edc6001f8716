//! The C interface of Prio3 client sharding (feature `prio`; declared in the header under `LDP_CLIENT_PRIO`): the
//! two-aggregator mode's `LdpPrio3` (a type, its parameters and the context, for two aggregators) and the
//! `LdpPrio3Shares` of one measurement. See `ldp_client::prio3` for what each share is and who may see it.
//!
//! Every item carries `#[cfg(feature = "prio")]` itself: cbindgen reads this file on its own and puts each such item
//! under `#if defined(LDP_CLIENT_PRIO)` (cbindgen.toml's `[defines]`).

use super::handles::{free_handle, handle, new_handle, Handle};
use super::marshal::{c_bytes, invalid, out_bytes, out_ptr};
use super::sharding_drafts::LDP_VDAF_DRAFT_18;
use super::LdpStatus;
use crate::error::{Refusal, RefusalCode, Result};
use crate::prio3::{Measurement, Prio3Client, Prio3Shares, Prio3Type, VdafDraft, VdafShares, NONCE_LEN};

/// Bytes of a Prio3 report's nonce (`ldp_prio3_shares_nonce`).
#[cfg(feature = "prio")]
pub const LDP_PRIO3_NONCE_LEN: usize = 16;
#[cfg(feature = "prio")]
const _: () = assert!(LDP_PRIO3_NONCE_LEN == NONCE_LEN);

/// The client side of one Prio3 task (feature `prio`): a Prio3 type with its parameters and the application context
/// string, for two aggregators (the leader and the helper). It keeps no state between calls.
#[cfg(feature = "prio")]
pub struct LdpPrio3(pub(super) Prio3Client);

/// One sharded measurement (feature `prio`): the nonce and the public share, for both aggregators, and one input
/// share per aggregator, each for that aggregator only.
#[cfg(feature = "prio")]
pub struct LdpPrio3Shares(Prio3Shares);

#[cfg(feature = "prio")]
impl Handle for LdpPrio3 {
    const TAG: u64 = 0x6c64_7070_7269_6f33; // "ldpprio3"
    const KIND: &'static str = "a Prio3 client";
}

#[cfg(feature = "prio")]
impl Handle for LdpPrio3Shares {
    const TAG: u64 = 0x6c64_7070_3373_6872; // "ldpp3shr"
    const KIND: &'static str = "Prio3 shares";
}

/// The Prio3 client of the draft numbered `draft` (8 or 18; another is `LDP_VALUE_ERROR`), of the type `typ` makes
/// for that draft, into `*out`.
#[cfg(feature = "prio")]
pub(super) unsafe fn new_prio3(
    draft: u32,
    typ: impl FnOnce(VdafDraft) -> Prio3Type,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPrio3,
) -> LdpStatus {
    out_ptr(out, "out", || {
        let ctx = c_bytes(ctx, ctx_len, "ctx")?;
        let draft = VdafDraft::from_number(draft).ok_or_else(|| {
            crate::Error::value(format!(
                "VDAF draft {draft} is not one this library speaks: 8 (LDP_VDAF_DRAFT_08) or 18 (LDP_VDAF_DRAFT_18)"
            ))
        })?;
        Ok(new_handle(LdpPrio3(Prio3Client::with_draft(draft, typ(draft), ctx)?)))
    })
}

/// A SumVec type of `draft` (`chunk_length` 0: the draft's recommended one).
#[cfg(feature = "prio")]
pub(super) fn sum_vec(draft: VdafDraft, max_measurement: u64, length: usize, chunk_length: usize) -> Prio3Type {
    let max = u128::from(max_measurement);
    match chunk_length {
        0 => Prio3Type::sum_vec_for(draft, max, length),
        _ => Prio3Type::SumVec { max_measurement: max, length, chunk_length },
    }
}

/// A Histogram type of `draft` (`chunk_length` 0: the draft's recommended one).
#[cfg(feature = "prio")]
pub(super) fn histogram(draft: VdafDraft, length: usize, chunk_length: usize) -> Prio3Type {
    match chunk_length {
        0 => Prio3Type::histogram_for(draft, length),
        _ => Prio3Type::Histogram { length, chunk_length },
    }
}

/// A Prio3Count client (measurements 0 or 1; the aggregate is their sum) of VDAF draft 18 and the application
/// context `ctx` (`ctx_len` bytes, at most 65,527; null with 0 is the empty context), into `*out` (free it with
/// `ldp_prio3_free`). `ldp_prio3_new_count_draft` and the other `_draft` constructors take the draft (8 or 18).
///
/// # Safety
/// `ctx` points to `ctx_len` readable bytes (or is null with 0); `out` is a valid pointer.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_new_count(ctx: *const u8, ctx_len: usize, out: *mut *mut LdpPrio3) -> LdpStatus {
    new_prio3(LDP_VDAF_DRAFT_18, |_| Prio3Type::Count, ctx, ctx_len, out)
}

/// A Prio3Sum client (measurements 0 to `max_measurement`, at least 1; the aggregate is their sum) of VDAF draft 18
/// and the context `ctx`, into `*out`. A bad `max_measurement` is `LDP_VALUE_ERROR` (`param_range`).
///
/// # Safety
/// As `ldp_prio3_new_count`.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_new_sum(
    max_measurement: u64,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPrio3,
) -> LdpStatus {
    new_prio3(LDP_VDAF_DRAFT_18, |_| Prio3Type::Sum { max_measurement }, ctx, ctx_len, out)
}

/// A Prio3SumVec client of VDAF draft 18 (measurements of `length` entries, each 0 to `max_measurement`; the
/// aggregate is their entrywise sum; `chunk_length` the proof's chunk length, as the aggregators configure it, 0
/// for the recommended one: the prio crate's `optimal_chunk_length`, what the aggregators' binding takes when given
/// none) of the context `ctx`, into `*out`. A zero `max_measurement` or `length` is `LDP_VALUE_ERROR`
/// (`param_range`), and so is a measurement whose encoding would take over 2^20 field elements (`param_limit`).
///
/// # Safety
/// As `ldp_prio3_new_count`.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_new_sum_vec(
    max_measurement: u64,
    length: usize,
    chunk_length: usize,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPrio3,
) -> LdpStatus {
    new_prio3(LDP_VDAF_DRAFT_18, |d| sum_vec(d, max_measurement, length, chunk_length), ctx, ctx_len, out)
}

/// A Prio3Histogram client of VDAF draft 18 (measurements are bucket indexes below `length`; the aggregate is the
/// count of each bucket; `chunk_length` the proof's chunk length, 0 for the recommended one, as for
/// `ldp_prio3_new_sum_vec`) of the context `ctx`, into `*out`. A zero `length` is `LDP_VALUE_ERROR`
/// (`param_range`), a `length` over 2^20 too (`param_limit`).
///
/// # Safety
/// As `ldp_prio3_new_count`.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_new_histogram(
    length: usize,
    chunk_length: usize,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPrio3,
) -> LdpStatus {
    new_prio3(LDP_VDAF_DRAFT_18, |d| histogram(d, length, chunk_length), ctx, ctx_len, out)
}

/// Bytes of sharding randomness one report takes: in draft 18 `ldp_prio3_shard_with_random`'s `rand_len`, 64 for
/// Count and Sum, 128 for SumVec and Histogram; in draft 08 what the prio crate draws from the OS generator for each
/// report (48 for Count, 80 for the others); 0 for a null handle or one of another kind.
///
/// # Safety
/// `prio3` is null or a live handle.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_rand_len(prio3: *const LdpPrio3) -> usize {
    handle(prio3, "prio3").map_or(0, |p| p.0.rand_len())
}

/// The measurement of a C call: `len` unsigned integers, read as the client's type takes them.
#[cfg(feature = "prio")]
pub(super) unsafe fn measurement(client: &Prio3Client, values: *const u64, len: usize) -> Result<Measurement> {
    if len > crate::prio3::MAX_ENCODED_LEN {
        return Err(invalid(format!("measurement has {len} values, over {}", crate::prio3::MAX_ENCODED_LEN)));
    }
    if values.is_null() && len > 0 {
        return Err(invalid("measurement is a null pointer"));
    }
    let values: &[u64] = if len == 0 { &[] } else { std::slice::from_raw_parts(values, len) };
    let typ = client.prio3_type();
    let one = || -> Result<u64> {
        match values {
            [v] => Ok(*v),
            _ => Err(crate::Error::value(format!("a {} measurement is one value, got {len}", typ.name()))),
        }
    };
    Ok(match typ {
        Prio3Type::Count => match one()? {
            0 => Measurement::Count(false),
            1 => Measurement::Count(true),
            v => {
                return Err(Refusal::value(RefusalCode::ValueRange).with("got", v).with("min", 0).with("max", 1).into())
            }
        },
        Prio3Type::Sum { .. } => Measurement::Sum(one()?),
        Prio3Type::SumVec { .. } => Measurement::SumVec(values.iter().map(|&v| u128::from(v)).collect()),
        Prio3Type::Histogram { length, .. } => {
            let v = one()?;
            // An index past usize (on a 32-bit target) is out of range as any index ≥ length.
            let i = usize::try_from(v).map_err(|_| {
                Refusal::value(RefusalCode::ValueRange).with("got", v).with("min", 0).with("max", length - 1)
            })?;
            Measurement::Histogram(i)
        }
    })
}

/// The nonce argument of a `_shard_with_random` call (`NONCE_LEN` bytes); shared with Poplar1's.
#[cfg(feature = "prio")]
pub(super) unsafe fn nonce<'a>(nonce: *const u8, nonce_len: usize) -> Result<&'a [u8; NONCE_LEN]> {
    c_bytes(nonce, nonce_len, "nonce")?
        .try_into()
        .map_err(|_| crate::Error::value(format!("a nonce is {NONCE_LEN} bytes, got {nonce_len}")))
}

/// Input share `aggregator` of `shares` (any VDAF's); another `aggregator` is `LDP_INVALID_ARGUMENT`, the shares
/// named by `what`.
#[cfg(feature = "prio")]
pub(super) fn input_share<S: VdafShares>(
    shares: &S,
    aggregator: usize,
    what: impl FnOnce() -> String,
) -> Result<&[u8]> {
    let share = shares.input_shares().get(aggregator);
    share.map(Vec::as_slice).ok_or_else(|| invalid(format!("aggregator {aggregator} of {}", what())))
}

/// Shards a measurement with a fresh nonce and fresh randomness from the OS generator into `*out` (free it with
/// `ldp_prio3_shares_free`). The measurement is `len` unsigned integers: Count `{0}` or `{1}`; Sum `{value}`;
/// SumVec the `length` entries; Histogram `{bucket index}`.
///
/// Refused: a value out of range (`LDP_VALUE_ERROR`, code `value_range` with `got`, `min`, `max`, and `index` for
/// a SumVec entry), the wrong number of values (`LDP_VALUE_ERROR`, no code), a null `measurement` with `len` > 0
/// (`LDP_INVALID_ARGUMENT`).
///
/// Send the nonce and the public share to both aggregators, input share 0 to the leader only and input share 1 to
/// the helper only, each encrypted to its aggregator: whoever holds both input shares can recover the measurement.
///
/// # Safety
/// `prio3` is a live handle; `measurement` points to `len` readable `uint64_t`s (or is null with 0); `out` is a
/// valid pointer.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_shard(
    prio3: *const LdpPrio3,
    measurement: *const u64,
    len: usize,
    out: *mut *mut LdpPrio3Shares,
) -> LdpStatus {
    out_ptr(out, "out", || {
        let client = &handle(prio3, "prio3")?.0;
        let m = self::measurement(client, measurement, len)?;
        Ok(new_handle(LdpPrio3Shares(client.shard(&m)?)))
    })
}

/// `ldp_prio3_shard` with the caller's nonce (`nonce_len` = 16 bytes) and sharding randomness (`rand_len` =
/// `ldp_prio3_rand_len` bytes): the same inputs always give the same shares. **For tests and the VDAF's test
/// vectors only**: a nonce or randomness used twice, or not from a cryptographic generator, breaks the
/// measurement's privacy. Other lengths are `LDP_VALUE_ERROR`. VDAF draft 18 only: a draft 08 client is
/// `LDP_VALUE_ERROR` (the prio crate of draft 08 has no public sharding with given randomness).
///
/// # Safety
/// As `ldp_prio3_shard`; `nonce` and `rand` point to their lengths of readable bytes.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_shard_with_random(
    prio3: *const LdpPrio3,
    measurement: *const u64,
    len: usize,
    nonce: *const u8,
    nonce_len: usize,
    rand: *const u8,
    rand_len: usize,
    out: *mut *mut LdpPrio3Shares,
) -> LdpStatus {
    out_ptr(out, "out", || {
        let client = &handle(prio3, "prio3")?.0;
        let (nonce, rand) = (self::nonce(nonce, nonce_len)?, c_bytes(rand, rand_len, "rand")?);
        let m = self::measurement(client, measurement, len)?;
        Ok(new_handle(LdpPrio3Shares(client.shard_with_random(&m, nonce, rand)?)))
    })
}

/// The report's nonce: `*nonce` points to `LDP_PRIO3_NONCE_LEN` (16) bytes inside `shares` (valid until it is
/// freed). Public: send it to both aggregators with the shares.
///
/// # Safety
/// `shares` is a live handle; `nonce` is a valid pointer.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_shares_nonce(shares: *const LdpPrio3Shares, nonce: *mut *const u8) -> LdpStatus {
    out_ptr(nonce, "nonce", || Ok(handle(shares, "shares")?.0.nonce.as_ptr()))
}

/// The public share: `*bytes` points to `*len` bytes inside `shares` (valid until it is freed; `*len` is 0 for
/// Count and Sum). Send it to both aggregators.
///
/// # Safety
/// `shares` is a live handle; `bytes` and `len` are valid pointers.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_shares_public_share(
    shares: *const LdpPrio3Shares,
    bytes: *mut *const u8,
    len: *mut usize,
) -> LdpStatus {
    out_bytes(bytes, len, || Ok(&handle(shares, "shares")?.0.public_share))
}

/// The input share of aggregator `aggregator` (0: the leader, 1: the helper): `*bytes` points to `*len` bytes inside
/// `shares` (valid until it is freed). Send it to that aggregator only, encrypted to it. Another `aggregator` is
/// `LDP_INVALID_ARGUMENT`.
///
/// # Safety
/// `shares` is a live handle; `bytes` and `len` are valid pointers.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_shares_input_share(
    shares: *const LdpPrio3Shares,
    aggregator: usize,
    bytes: *mut *const u8,
    len: *mut usize,
) -> LdpStatus {
    out_bytes(bytes, len, || {
        let s = &handle(shares, "shares")?.0;
        input_share(s, aggregator, || format!("shares for {} aggregators", s.input_shares.len()))
    })
}

/// Frees shares (null, or a handle of another kind, is ignored).
///
/// # Safety
/// `shares` is null or a handle not freed before.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_shares_free(shares: *mut LdpPrio3Shares) {
    free_handle(shares);
}

/// Frees a Prio3 client (null, or a handle of another kind, is ignored).
///
/// # Safety
/// `prio3` is null or a handle not freed before.
#[cfg(feature = "prio")]
#[no_mangle]
pub unsafe extern "C" fn ldp_prio3_free(prio3: *mut LdpPrio3) {
    free_handle(prio3);
}
