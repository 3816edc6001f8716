//! The blocking uploader (feature `uploader`): `ldp_client_upload` sends a client's due batches over HTTP(S) itself,
//! failing over between replicas of one collector.
//!
//! Every item carries `#[cfg(feature = "uploader")]` itself: cbindgen reads this file on its own and puts each such
//! item under `#if defined(LDP_CLIENT_UPLOADER)` (cbindgen.toml's `[defines]`).

use std::ffi::c_char;

use super::handles::handle;
use super::last_error::guard;
use super::marshal::{c_str, invalid, out};
use super::{LdpClient, LdpStatus};

/// What `ldp_client_upload` did.
#[cfg(feature = "uploader")]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct LdpUploadResult {
    /// Batches acknowledged.
    pub batches: u64,
    /// Reports acknowledged and deleted from the outbox.
    pub acknowledged: u64,
    /// Lines the collector stored.
    pub accepted: u64,
    /// Lines the collector refused (all reasons).
    pub rejected: u64,
    /// Batches the collector had stored already.
    pub duplicates: u64,
    /// Why the call returned: 0 nothing left, 1 the upload interval, 2 the call's deadline.
    pub stopped: u32,
    /// Unix seconds from which the next batch may go (−infinity: at once).
    pub next_upload_at: f64,
}

/// Uploads the client's due batches over HTTP(S) (the `uploader` feature) into `*result`: `endpoints` is an array
/// of `n_endpoints` (1 to 64) distinct collector URLs (`https://host/v1/reports`), in the order they are tried, `token`
/// the app's bearer token, `timeout_seconds` the deadline of one request from connecting to the end of the reply
/// (≤ 0: 30 s), `call_timeout_seconds` that of the whole call (≤ 0: none). What was not acknowledged stays queued.
///
/// One collector is an array of one: `const char *url = "https://collector.example.com/v1/reports";` then
/// `ldp_client_upload(client, &url, 1, token, 0, 0, &result)`. Several are replicas of one collector (`ldp serve`
/// over shared storage, or balancers), failed over as the Rust `Uploader` does:
///
/// - each call starts with the first endpoint; once one acknowledged a batch, the next batches of the call go to it;
/// - no reply by the deadline, a connection error, 408, 503 or another 5xx sends the batch's next request to the next
///   endpoint (cyclically) at once; when every endpoint has failed in a row, the call waits (`Retry-After` of a 503,
///   else back-off growing with each full round) and goes on with the next endpoint;
/// - 429 waits on the same endpoint, 413 splits the batch on it, other 4xx stop the call with
///   `LDP_UPLOAD_REJECTED`;
/// - 8 requests per batch in all, whichever endpoints they went to (then `LDP_TRANSPORT_ERROR`).
///
/// The batch keeps its id on every endpoint: the collector side counts it once. To spread devices over replicas,
/// shuffle the array per device. Refused before anything is sent: a null or empty array or a null entry
/// (`LDP_INVALID_ARGUMENT`), a URL that is not `http(s)://host/...` or the same URL twice (`LDP_VALUE_ERROR`).
///
/// Two-aggregator reports (`ldp_client_add_task`, feature `prio`) go first, each alone to its task's leader (no
/// token), in the order they were recorded with the collector's batches: 201 and 409 `report_replayed` acknowledge
/// it, a 400 whose code no retry changes deletes it (counted in `rejected`), `report_too_early` keeps it and ends the
/// call (`stopped` 1), no answer, 408, 429 and 5xx are retried (8 requests), anything else is
/// `LDP_UPLOAD_REJECTED`, the report kept. A device with no report for the collector may pass no collector:
/// `endpoints` null, `n_endpoints` 0 and `token` null (refused with `LDP_VALUE_ERROR` while a report for the
/// collector waits).
///
/// One upload at a time per client: calls on one client from any threads, and on the clients of one state folder
/// in this process, take turns. A call that finds another one uploading waits for it, at most until its own
/// `call_timeout_seconds` (without one, as long as it takes), then sends what is still pending: what the other call
/// sent is not sent again. If its deadline passes while it waits, it returns `LDP_OK` with `stopped` 2, having sent
/// nothing. A call on the thread that is uploading the client already (from the log callback) is
/// `LDP_VALUE_ERROR`, nothing sent. Processes do not take turns: two uploading one folder at once may send a batch
/// twice, which the collector stores once (its batch id).
///
/// # Safety
/// Pointers valid as documented; `endpoints` holds `n_endpoints` NUL-terminated strings.
#[cfg(feature = "uploader")]
#[no_mangle]
pub unsafe extern "C" fn ldp_client_upload(
    client: *const LdpClient,
    endpoints: *const *const c_char,
    n_endpoints: usize,
    token: *const c_char,
    timeout_seconds: f64,
    call_timeout_seconds: f64,
    result: *mut LdpUploadResult,
) -> LdpStatus {
    use crate::upload::{Stopped, UploadOptions, Uploader};
    guard(|| {
        let o = self::out(result, "result")?;
        *o = LdpUploadResult::default();
        let c = handle(client, "client")?;
        let mut options = if n_endpoints == 0 && token.is_null() {
            UploadOptions::without_collector() // two-aggregator reports only
        } else {
            if endpoints.is_null() || n_endpoints == 0 || n_endpoints > 64 {
                return Err(invalid("endpoints must be an array of 1 to 64 URLs"));
            }
            let mut list = Vec::with_capacity(n_endpoints);
            for i in 0..n_endpoints {
                list.push(c_str(*endpoints.add(i), "an endpoint")?);
            }
            UploadOptions::new(&list, c_str(token, "token")?)?
        };
        if timeout_seconds.is_finite() && timeout_seconds > 0.0 {
            options.timeout = std::time::Duration::from_secs_f64(timeout_seconds.min(86400.0));
        }
        if call_timeout_seconds.is_finite() && call_timeout_seconds > 0.0 {
            options.call_timeout = Some(std::time::Duration::from_secs_f64(call_timeout_seconds.min(86400.0 * 7.0)));
        }
        let r = Uploader::new(options).upload(&c.client)?;
        *o = LdpUploadResult {
            batches: r.batches,
            acknowledged: r.acknowledged,
            accepted: r.accepted,
            rejected: r.rejected.iter().map(|(_, n)| n).sum(),
            duplicates: r.duplicates,
            stopped: match r.stopped {
                Stopped::Empty => 0,
                Stopped::Interval => 1,
                Stopped::Deadline => 2,
            },
            next_upload_at: r.next_upload_at,
        };
        Ok(())
    })
}
