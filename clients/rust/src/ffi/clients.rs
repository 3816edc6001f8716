//! Clients: `LdpClient`, one device's client of one collection (budget ledger, outbox), opened on a state folder or
//! in memory; recording values, counts, opting out and in, the budget spent.

use std::ffi::c_char;
use std::ptr;

use super::handles::{free_handle, handle, new_handle};
use super::last_error::guard;
use super::marshal::{c_str, c_utf8, invalid, new_string, out, parse_value};
use super::{LdpRandom, LdpSpec, LdpStatus};
use crate::client::TelemetryClient;
use crate::error::{Error, Result};
use crate::ledger::{FileStore, MemoryStore};
use crate::Value;

/// One device's client of one collection: budget ledger, outbox, upload.
pub struct LdpClient {
    pub(super) client: TelemetryClient,
    /// This handle's number: the requests it makes carry it.
    pub(super) serial: u64,
}

/// Options of `ldp_client_open_with_options`. All zero (`LdpClientOptions options = {0};`) is every default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LdpClientOptions {
    /// The randomness: null for the OS generator (apps), a source for simulations and tests.
    pub random: *const LdpRandom,
    /// The most bytes of reports the outbox keeps waiting for upload (each report's envelope line and its newline,
    /// pinned batches included); a report that would go past it is refused with `LDP_OUTBOX_FULL`, nothing charged.
    /// 0: the default, `LDP_DEFAULT_MAX_OUTBOX_BYTES` (1 MiB).
    pub max_outbox_bytes: u64,
}

fn open_client(
    spec: *const LdpSpec,
    random: *const LdpRandom,
    max_outbox_bytes: u64,
    store: impl crate::ledger::StateStore + 'static,
) -> Result<LdpClient> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SERIAL: AtomicU64 = AtomicU64::new(1);
    let spec = handle(spec, "spec")?.0.as_ref().clone();
    let mut b = TelemetryClient::builder(spec, store);
    if !random.is_null() {
        b = b.rng(handle(random, "random")?.clone());
    }
    if max_outbox_bytes > 0 {
        b = b.max_outbox_bytes(max_outbox_bytes);
    }
    Ok(LdpClient { client: b.build()?, serial: SERIAL.fetch_add(1, Ordering::Relaxed) })
}

/// The client of `spec` keeping its state in the folder `state_dir` (created if missing; crash-safe, shared by the
/// app's processes). `random`: null for the OS generator (apps), a source for simulations.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_open(
    spec: *const LdpSpec,
    state_dir: *const c_char,
    random: *const LdpRandom,
    out: *mut *mut LdpClient,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let dir = c_str(state_dir, "state_dir")?;
        if dir.is_empty() {
            return Err(invalid("state_dir is empty"));
        }
        *o = new_handle(open_client(spec, random, 0, FileStore::open(dir)?)?);
        Ok(())
    })
}

/// `ldp_client_open` or `ldp_client_open_memory` with options: the client of `spec` keeping its state in the folder
/// `state_dir` (null: in memory), with `options` (null: every default; see `LdpClientOptions`). A folder whose
/// state is missing while traces of it remain (`outbox.*.log`, temporary state files) is refused with
/// `LDP_LEDGER_ERROR` naming them: delete the folder to start over as a new device.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_open_with_options(
    spec: *const LdpSpec,
    state_dir: *const c_char,
    options: *const LdpClientOptions,
    out: *mut *mut LdpClient,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        let options =
            options.as_ref().copied().unwrap_or(LdpClientOptions { random: ptr::null(), max_outbox_bytes: 0 });
        let (random, max) = (options.random, options.max_outbox_bytes);
        let client = if state_dir.is_null() {
            open_client(spec, random, max, MemoryStore::new())?
        } else {
            let dir = c_str(state_dir, "state_dir")?;
            if dir.is_empty() {
                return Err(invalid("state_dir is empty"));
            }
            open_client(spec, random, max, FileStore::open(dir)?)?
        };
        *o = new_handle(client);
        Ok(())
    })
}

/// A client keeping its state in memory (simulations and tests; nothing survives the process).
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_open_memory(
    spec: *const LdpSpec,
    random: *const LdpRandom,
    out: *mut *mut LdpClient,
) -> LdpStatus {
    guard(|| {
        let o = self::out(out, "out")?;
        *o = ptr::null_mut();
        *o = new_handle(open_client(spec, random, 0, MemoryStore::new())?);
        Ok(())
    })
}

fn record(client: *const LdpClient, metric: *const c_char, value: Value, id: *mut u64) -> Result<()> {
    let c = handle(client, "client")?;
    // SAFETY: the caller passes a NUL-terminated string.
    let metric = unsafe { c_str(metric, "metric") }?;
    let n = c.client.record(metric, &value)?;
    if !id.is_null() {
        // SAFETY: a non-null id is a valid pointer.
        unsafe { *id = n };
    }
    Ok(())
}

/// Records a value given as JSON (`value_json`, `len` bytes) for `metric`: checks it, charges the budget,
/// randomizes it and queues its line, all or nothing. `*id` (if not null) receives its outbox id.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_json(
    client: *const LdpClient,
    metric: *const c_char,
    value_json: *const u8,
    len: usize,
    id: *mut u64,
) -> LdpStatus {
    guard(|| record(client, metric, parse_value(c_utf8(value_json, len, "the value")?)?, id))
}

/// Records an integer (an index, a bit).
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_int(
    client: *const LdpClient,
    metric: *const c_char,
    value: i64,
    id: *mut u64,
) -> LdpStatus {
    guard(|| record(client, metric, Value::from(value), id))
}

/// Records a number (numeric protocols). NaN and infinities go through the protocol's checks as every other value
/// does, and are refused as Python refuses them, by the same status, code and fields: by a protocol that takes
/// numbers, `LDP_VALUE_ERROR` with code `value_range` and fields `got`, `min`, `max` and `"finite": true` (`got`
/// is `null` in `ldp_last_error_fields`: JSON has no NaN or infinity); by one that takes an index, a label or a
/// string, `LDP_TYPE_ERROR` with code `value_type` and `"got": "float"`. Nothing is charged or stored.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_double(
    client: *const LdpClient,
    metric: *const c_char,
    value: f64,
    id: *mut u64,
) -> LdpStatus {
    guard(|| record(client, metric, crate::value::real_value(value), id))
}

/// Records a string (`value`, `len` bytes of UTF-8: a label, a word, a URL). A `poplar1` metric's value (a string
/// shared exactly with two aggregators; its Poplar1 task given with `ldp_client_add_task`) is at most `bits / 8`
/// bytes and does not end in a NUL byte: refused otherwise, `LDP_VALUE_ERROR` with code `value_too_long` or
/// `not_in_alphabet` (`"char": "\u0000"`), nothing charged.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_string(
    client: *const LdpClient,
    metric: *const c_char,
    value: *const u8,
    len: usize,
    id: *mut u64,
) -> LdpStatus {
    guard(|| record(client, metric, Value::String(c_utf8(value, len, "the value")?.to_string()), id))
}

/// Records several values in ONE transaction (one `fsync` for all), all or nothing. `items_json` (`len` bytes of
/// UTF-8) is a JSON array of `[metric, value]` pairs: `[["app_category", "games"], ["dark_mode", 1]]`. Every value is
/// checked first (a bad one's message names its item: `record_many item 1 ("dark_mode"): …`), then each is charged
/// in order, seeing the ones before it; a spent budget (`LDP_BUDGET_EXCEEDED`), a full outbox (`LDP_OUTBOX_FULL`,
/// naming the first item that did not fit) or an opted-out device (`LDP_OPTED_OUT`) keeps none of them. On success
/// `ids` (null: not wanted) receives the items' outbox ids, in order; it has room for `ids_capacity` ids, and a
/// batch of more items is refused with `LDP_INVALID_ARGUMENT` before anything is recorded. An empty array records
/// nothing. Input that is not an array of `[string, value]` pairs is `LDP_INVALID_ARGUMENT`.
///
/// # Safety
/// `items_json` points to `len` readable bytes; `ids` is null or points to `ids_capacity` writable `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_record_many_json(
    client: *const LdpClient,
    items_json: *const u8,
    len: usize,
    ids: *mut u64,
    ids_capacity: usize,
) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        let text = c_utf8(items_json, len, "items_json")?;
        let doc = crate::json::parse(text).map_err(|e| invalid(format!("items_json is not one JSON document: {e}")))?;
        let Value::Array(list) = doc else {
            return Err(invalid("items_json must be a JSON array of [metric, value] pairs"));
        };
        let mut items = Vec::with_capacity(list.len());
        for (i, item) in list.into_iter().enumerate() {
            let pair = match item {
                Value::Array(pair) => <[Value; 2]>::try_from(pair).ok(),
                _ => None,
            };
            let Some([metric, value]) = pair else {
                return Err(invalid(format!("item {i} of items_json is not a [metric, value] pair")));
            };
            let Value::String(metric) = metric else {
                return Err(invalid(format!("item {i} of items_json does not start with a metric name (a string)")));
            };
            items.push((metric, value));
        }
        if !ids.is_null() && items.len() > ids_capacity {
            return Err(invalid(format!(
                "ids has room for {ids_capacity} id(s) and items_json holds {} items: nothing was recorded",
                items.len()
            )));
        }
        let recorded = c.client.record_many(&items)?;
        if !ids.is_null() {
            // SAFETY: the caller passes room for `ids_capacity` ids, at least `recorded.len()` (checked above).
            std::slice::from_raw_parts_mut(ids, recorded.len()).copy_from_slice(&recorded);
        }
        Ok(())
    })
}

/// What became of each metric's reports on this device, as a JSON object in `*json` (free it with
/// `ldp_string_free`): one member per metric with reports, sorted by name, each
/// `{"reports":n,"pending":n,"uploaded":n,"discarded":n}`: reports recorded, and of them waiting for upload,
/// acknowledged by the collector, and deleted unsent by `ldp_client_opt_out` (`reports` is always the sum of the
/// other three). `{}` before the first report. A read: it writes nothing.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_counts_json(client: *const LdpClient, json: *mut *mut c_char) -> LdpStatus {
    guard(|| {
        let o = self::out(json, "json")?;
        *o = ptr::null_mut();
        let c = handle(client, "client")?;
        let counts: serde_json::Map<String, Value> = c
            .client
            .counts()?
            .into_iter()
            .map(|(metric, n)| {
                let fields = [
                    ("reports", n.reports),
                    ("pending", n.pending),
                    ("uploaded", n.uploaded),
                    ("discarded", n.discarded),
                ];
                (metric, Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), Value::from(v))).collect()))
            })
            .collect();
        let text = serde_json::to_string(&Value::Object(counts))
            .map_err(|e| Error::Internal(format!("the counts cannot be written as JSON: {e}")))?;
        *o = new_string(text)?;
        Ok(())
    })
}

/// Reports waiting for upload, in `*count`.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_pending(client: *const LdpClient, count: *mut u64) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        *self::out(count, "count")? = c.client.pending()?;
        Ok(())
    })
}

/// Bytes waiting for upload as the outbox's cap counts them (each report's envelope line and newline), in `*bytes`.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_pending_bytes(client: *const LdpClient, bytes: *mut u64) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        *self::out(bytes, "bytes")? = c.client.pending_bytes()?;
        Ok(())
    })
}

/// Stops collection on this device (an app's privacy setting), in one crash-safe transaction: deletes every pending
/// report (counted as discarded by `ldp_client_counts_json`) and pinned batch, the device secret, the cohorts and
/// the memoized and charge-on-change records, and leaves a marker; the budget already spent and the upload salt
/// stay. Then every record is refused with `LDP_OPTED_OUT` before anything is charged, nothing is pending, no
/// request is made, in every process sharing the folder, until `ldp_client_opt_in`. Opting out again does nothing.
///
/// # Safety
/// `client` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_opt_out(client: *const LdpClient) -> LdpStatus {
    guard(|| handle(client, "client")?.client.opt_out())
}

/// Resumes collection after `ldp_client_opt_out`: removes the marker and draws a fresh device secret (new cohorts,
/// new memoized responses, each charged afresh when first used); the upload salt is the one kept. On a device that
/// did not opt out it does nothing.
///
/// # Safety
/// `client` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_opt_in(client: *const LdpClient) -> LdpStatus {
    guard(|| handle(client, "client")?.client.opt_in())
}

/// Whether the device opted out: `*opted_out` is 1 if so, else 0.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_opted_out(client: *const LdpClient, opted_out: *mut i32) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        *self::out(opted_out, "opted_out")? = i32::from(c.client.is_opted_out()?);
        Ok(())
    })
}

/// The (ε, δ) spent on `metric` (null: the whole collection) in the current window, or over the lifetime when
/// `lifetime` is non-zero.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_spent(
    client: *const LdpClient,
    metric: *const c_char,
    lifetime: i32,
    epsilon: *mut f64,
    delta: *mut f64,
) -> LdpStatus {
    guard(|| {
        let c = handle(client, "client")?;
        let m = if metric.is_null() { None } else { Some(c_str(metric, "metric")?) };
        let cost = c.client.spent(m, lifetime != 0)?;
        *self::out(epsilon, "epsilon")? = cost.epsilon;
        *self::out(delta, "delta")? = cost.delta;
        Ok(())
    })
}

/// Frees a client (null, or a handle of another kind, is ignored). Its state stays in its folder.
///
/// # Safety
/// `client` is null or a handle not freed before, and no other thread is using it.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_free(client: *mut LdpClient) {
    free_handle(client);
}
