//! The C interface of Poplar1 client sharding (feature `poplar1`; declared in the header under
//! `LDP_CLIENT_POPLAR1`): `LdpPoplar1` (a bit length and the context, for the leader and the helper), the
//! `LdpPoplar1Shares` of one measurement, and its DAP-09 report (an `LdpDapReport`, read and freed by the
//! `ldp_dap_report_*` functions, which `LDP_CLIENT_PRIO` declares). See `ldp_client::poplar1` for what each share is
//! and who may see it.
//!
//! A measurement crosses the boundary packed: `ceil(bits / 8)` bytes, the first bit the most significant of the first
//! byte, the unused low bits of the last byte 0 (`ldp_client::poplar1::Poplar1Client::measurement_from_bytes`): a
//! 64-bit string is its 8 bytes.
//!
//! Every item carries `#[cfg(feature = "poplar1")]` itself: cbindgen reads this file on its own and puts each such
//! item under `#if defined(LDP_CLIENT_POPLAR1)` (cbindgen.toml's `[defines]`). (Not named `poplar1.rs`: cbindgen
//! reads src/ffi.rs as a crate root, and would take `mod poplar1;` for src/poplar1.rs, the Rust API.)

use super::dap_report::{sealed_report, GivenRandom, LdpDapReport, TaskArgs};
use super::handles::{free_handle, handle, new_handle, Handle};
use super::marshal::{c_bytes, out_bytes, out_ptr};
use super::sharding::{input_share, nonce};
use super::LdpStatus;
use crate::error::Result;
use crate::poplar1::{Poplar1Client, Poplar1Shares, MAX_BITS, RAND_LEN};

/// Bytes of sharding randomness one Poplar1 report takes (`ldp_poplar1_shard_with_random`'s `rand_len`).
#[cfg(feature = "poplar1")]
pub const LDP_POPLAR1_RAND_LEN: usize = 128;
#[cfg(feature = "poplar1")]
const _: () = assert!(LDP_POPLAR1_RAND_LEN == RAND_LEN);

/// The longest Poplar1 measurement, in bits (32-byte strings).
#[cfg(feature = "poplar1")]
pub const LDP_POPLAR1_MAX_BITS: usize = 256;
#[cfg(feature = "poplar1")]
const _: () = assert!(LDP_POPLAR1_MAX_BITS == MAX_BITS);

/// The client side of one Poplar1 task (feature `poplar1`): the bit length of the measurements and the application
/// context string, for the leader and the helper. It keeps no state between calls.
#[cfg(feature = "poplar1")]
pub struct LdpPoplar1(Poplar1Client);

/// One sharded Poplar1 measurement (feature `poplar1`): the nonce and the public share, for both aggregators, and
/// one input share per aggregator, each for that aggregator only.
#[cfg(feature = "poplar1")]
pub struct LdpPoplar1Shares(Poplar1Shares);

#[cfg(feature = "poplar1")]
impl Handle for LdpPoplar1 {
    const TAG: u64 = 0x6c64_7070_6f70_6c31; // "ldppopl1"
    const KIND: &'static str = "a Poplar1 client";
}

#[cfg(feature = "poplar1")]
impl Handle for LdpPoplar1Shares {
    const TAG: u64 = 0x6c64_7070_3173_6872; // "ldpp1shr"
    const KIND: &'static str = "Poplar1 shares";
}

/// A Poplar1 client (VDAF draft 18) of `bits`-bit measurements (1 to `LDP_POPLAR1_MAX_BITS`) and the application
/// context `ctx` (`ctx_len` bytes, at most 65,527; null with 0 is the empty context), into `*out` (free it with
/// `ldp_poplar1_free`). A `bits` out of range is `LDP_VALUE_ERROR` (`param_range`).
///
/// # Safety
/// `ctx` points to `ctx_len` readable bytes (or is null with 0); `out` is a valid pointer.
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_new(
    bits: usize,
    ctx: *const u8,
    ctx_len: usize,
    out: *mut *mut LdpPoplar1,
) -> LdpStatus {
    out_ptr(out, "out", || Ok(new_handle(LdpPoplar1(Poplar1Client::new(bits, c_bytes(ctx, ctx_len, "ctx")?)?))))
}

/// Bytes of a packed measurement of `poplar1`: `ceil(bits / 8)`; 0 for a null handle or one of another kind.
///
/// # Safety
/// `poplar1` is null or a live handle.
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_measurement_len(poplar1: *const LdpPoplar1) -> usize {
    handle(poplar1, "poplar1").map_or(0, |p| p.0.measurement_len())
}

/// The measurement of a C call: `len` packed bytes, as the client reads them.
#[cfg(feature = "poplar1")]
unsafe fn measurement(client: &Poplar1Client, bytes: *const u8, len: usize) -> Result<Vec<bool>> {
    client.measurement_from_bytes(c_bytes(bytes, len, "measurement")?)
}

/// Shards a measurement (`len` = `ldp_poplar1_measurement_len` packed bytes) with a fresh nonce and fresh
/// randomness from the OS generator into `*out` (free it with `ldp_poplar1_shares_free`). Refused
/// (`LDP_VALUE_ERROR`): another length, a spare bit of the last byte set.
///
/// Send the nonce and the public share to both aggregators, input share 0 to the leader only and input share 1 to
/// the helper only, each encrypted to its aggregator (`ldp_poplar1_dap_report` does it as DAP-09 does).
///
/// # Safety
/// `poplar1` is a live handle; `measurement` points to `len` readable bytes; `out` is a valid pointer.
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_shard(
    poplar1: *const LdpPoplar1,
    measurement: *const u8,
    len: usize,
    out: *mut *mut LdpPoplar1Shares,
) -> LdpStatus {
    out_ptr(out, "out", || {
        let client = &handle(poplar1, "poplar1")?.0;
        let m = self::measurement(client, measurement, len)?;
        Ok(new_handle(LdpPoplar1Shares(client.shard(&m)?)))
    })
}

/// `ldp_poplar1_shard` with the caller's nonce (`nonce_len` = 16 bytes) and sharding randomness (`rand_len` =
/// `LDP_POPLAR1_RAND_LEN` bytes, in the order of the draft's test vectors): the same inputs always give the same
/// shares. **For tests and the VDAF's test vectors only**: a nonce or randomness used twice, or not from a
/// cryptographic generator, breaks the measurement's privacy. Other lengths are `LDP_VALUE_ERROR`.
///
/// # Safety
/// As `ldp_poplar1_shard`; `nonce` and `rand` point to their lengths of readable bytes.
#[cfg(feature = "poplar1")]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ldp_poplar1_shard_with_random(
    poplar1: *const LdpPoplar1,
    measurement: *const u8,
    len: usize,
    nonce: *const u8,
    nonce_len: usize,
    rand: *const u8,
    rand_len: usize,
    out: *mut *mut LdpPoplar1Shares,
) -> LdpStatus {
    out_ptr(out, "out", || {
        let client = &handle(poplar1, "poplar1")?.0;
        let (nonce, rand) = (self::nonce(nonce, nonce_len)?, c_bytes(rand, rand_len, "rand")?);
        let m = self::measurement(client, measurement, len)?;
        Ok(new_handle(LdpPoplar1Shares(client.shard_with_random(&m, nonce, rand)?)))
    })
}

/// The report's nonce: `*nonce` points to 16 bytes inside `shares` (valid until it is freed). Public.
///
/// # Safety
/// `shares` is a live handle; `nonce` is a valid pointer.
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_shares_nonce(shares: *const LdpPoplar1Shares, nonce: *mut *const u8) -> LdpStatus {
    out_ptr(nonce, "nonce", || Ok(handle(shares, "shares")?.0.nonce.as_ptr()))
}

/// The public share: `*bytes` points to `*len` bytes inside `shares` (valid until it is freed). Send it to both
/// aggregators.
///
/// # Safety
/// `shares` is a live handle; `bytes` and `len` are valid pointers.
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_shares_public_share(
    shares: *const LdpPoplar1Shares,
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
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_shares_input_share(
    shares: *const LdpPoplar1Shares,
    aggregator: usize,
    bytes: *mut *const u8,
    len: *mut usize,
) -> LdpStatus {
    out_bytes(bytes, len, || {
        input_share(&handle(shares, "shares")?.0, aggregator, || "Poplar1 shares, which have 2".to_string())
    })
}

/// The DAP-09 report of a Poplar1 measurement (packed, as `ldp_poplar1_shard` takes it) for the task `task_id`
/// (32 bytes) made at `time` (rounded down to a multiple of `time_precision`, at least 1), its input shares sealed
/// to the leader's and the helper's `HpkeConfig` (DAP's encoding), into `*out` (an `LdpDapReport`: read it with
/// `ldp_dap_report_bytes` and `ldp_dap_report_id`, free it with `ldp_dap_report_free`). The report ID (the nonce),
/// the sharding randomness and each seal's ephemeral key come from the OS generator. Refused as `ldp_poplar1_shard`
/// refuses the measurement and as `ldp_dap_report` refuses the task ID, the configs and the time precision.
///
/// # Safety
/// `poplar1` is a live handle; `measurement`, `task_id`, `leader_config` and `helper_config` point to their lengths
/// of readable bytes; `out` is a valid pointer.
#[cfg(feature = "poplar1")]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ldp_poplar1_dap_report(
    poplar1: *const LdpPoplar1,
    measurement: *const u8,
    len: usize,
    task_id: *const u8,
    task_id_len: usize,
    time: u64,
    time_precision: u64,
    leader_config: *const u8,
    leader_config_len: usize,
    helper_config: *const u8,
    helper_config_len: usize,
    out: *mut *mut LdpDapReport,
) -> LdpStatus {
    let task = TaskArgs {
        task_id,
        task_id_len,
        time_precision,
        leader_config,
        leader_config_len,
        helper_config,
        helper_config_len,
    };
    out_ptr(out, "out", || {
        let b = task.builder(handle(poplar1, "poplar1")?.0.clone())?;
        sealed_report(&b, |c| self::measurement(c, measurement, len), time, None)
    })
}

/// Bytes of randomness `ldp_poplar1_dap_report_with_random` takes for a report sealed to these configs, into
/// `*out`: `LDP_POPLAR1_RAND_LEN`, then the leader's and the helper's HPKE ephemeral key material.
///
/// # Safety
/// As `ldp_poplar1_dap_report`; `out` is a valid pointer.
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_dap_report_rand_len(
    poplar1: *const LdpPoplar1,
    leader_config: *const u8,
    leader_config_len: usize,
    helper_config: *const u8,
    helper_config_len: usize,
    out: *mut usize,
) -> LdpStatus {
    let task = TaskArgs::configs(leader_config, leader_config_len, helper_config, helper_config_len);
    out_ptr(out, "out", || Ok(task.builder(handle(poplar1, "poplar1")?.0.clone())?.rand_len()))
}

/// `ldp_poplar1_dap_report` with the caller's report ID (16 bytes) and randomness
/// (`ldp_poplar1_dap_report_rand_len` bytes): the same inputs always give the same bytes. **For tests only**.
/// Other lengths are `LDP_VALUE_ERROR`.
///
/// # Safety
/// As `ldp_poplar1_dap_report`; `report_id` and `rand` point to their lengths of readable bytes.
#[cfg(feature = "poplar1")]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ldp_poplar1_dap_report_with_random(
    poplar1: *const LdpPoplar1,
    measurement: *const u8,
    len: usize,
    task_id: *const u8,
    task_id_len: usize,
    time: u64,
    time_precision: u64,
    leader_config: *const u8,
    leader_config_len: usize,
    helper_config: *const u8,
    helper_config_len: usize,
    report_id: *const u8,
    report_id_len: usize,
    rand: *const u8,
    rand_len: usize,
    out: *mut *mut LdpDapReport,
) -> LdpStatus {
    let task = TaskArgs {
        task_id,
        task_id_len,
        time_precision,
        leader_config,
        leader_config_len,
        helper_config,
        helper_config_len,
    };
    let random = GivenRandom { report_id, report_id_len, rand, rand_len };
    out_ptr(out, "out", || {
        let b = task.builder(handle(poplar1, "poplar1")?.0.clone())?;
        sealed_report(&b, |c| self::measurement(c, measurement, len), time, Some(random))
    })
}

/// Frees Poplar1 shares (null, or a handle of another kind, is ignored).
///
/// # Safety
/// `shares` is null or a handle not freed before.
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_shares_free(shares: *mut LdpPoplar1Shares) {
    free_handle(shares);
}

/// Frees a Poplar1 client (null, or a handle of another kind, is ignored).
///
/// # Safety
/// `poplar1` is null or a handle not freed before.
#[cfg(feature = "poplar1")]
#[no_mangle]
pub unsafe extern "C" fn ldp_poplar1_free(poplar1: *mut LdpPoplar1) {
    free_handle(poplar1);
}
