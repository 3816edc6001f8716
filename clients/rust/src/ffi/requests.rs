//! Upload with the app's own HTTP stack: `LdpRequest`, the next batch as a request to send, and the collector's
//! reply applied to the client (`LdpReplyAction` says what to do next).

use std::ffi::{c_char, CString};
use std::ptr;

use super::handles::{free_handle, handle, new_handle};
use super::last_error::guard;
use super::marshal::{c_bytes, c_str, invalid, out};
use super::{LdpClient, LdpStatus, LDP_MAX_RETRY_AFTER_SECONDS};
use crate::upload::{Batch, Outbox, Reply, UploadRequest};

/// One upload request: `POST` it to the collector's `/v1/reports` URL with its headers and body, then pass the
/// reply to `ldp_client_handle_reply`.
pub struct LdpRequest {
    /// The serial number of the client handle that made it.
    client: u64,
    batch: Batch,
    request: UploadRequest,
    names: Vec<CString>,
    values: Vec<CString>,
}

/// The next batch to send as a request in `*request` (null when nothing is due: the outbox is empty or the upload
/// interval has not passed). The batch stays pinned until acknowledged: after a crash or a lost reply the same
/// request is made again, and the collector counts it once. `gzip` non-zero compresses the body.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_next_request(
    client: *const LdpClient,
    token: *const c_char,
    gzip: i32,
    request: *mut *mut LdpRequest,
) -> LdpStatus {
    guard(|| {
        let o = self::out(request, "request")?;
        *o = ptr::null_mut();
        let c = handle(client, "client")?;
        let token = c_str(token, "token")?;
        crate::upload::check_token(token)?;
        let Some(batch) = c.client.next_batch(None)? else { return Ok(()) };
        let req = UploadRequest::new(&batch, token, gzip != 0)?;
        let names = req.headers.iter().map(|(n, _)| CString::new(*n).unwrap_or_default()).collect();
        let values = req.headers.iter().map(|(_, v)| CString::new(v.as_str()).unwrap_or_default()).collect();
        *o = new_handle(LdpRequest { client: c.serial, batch, request: req, names, values });
        Ok(())
    })
}

/// The number of headers of a request.
///
/// # Safety
/// `request` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_header_count(request: *const LdpRequest) -> usize {
    handle(request, "request").map_or(0, |r| r.names.len())
}

/// Header `index` of a request: `*name` and `*value` point into the request (valid until it is freed).
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_header(
    request: *const LdpRequest,
    index: usize,
    name: *mut *const c_char,
    value: *mut *const c_char,
) -> LdpStatus {
    guard(|| {
        let r = handle(request, "request")?;
        if index >= r.names.len() {
            return Err(invalid(format!("header {index} of a request with {} headers", r.names.len())));
        }
        *self::out(name, "name")? = r.names[index].as_ptr();
        *self::out(value, "value")? = r.values[index].as_ptr();
        Ok(())
    })
}

/// The body of a request: `*body` points into the request (valid until it is freed), `*len` bytes.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_body(
    request: *const LdpRequest,
    body: *mut *const u8,
    len: *mut usize,
) -> LdpStatus {
    guard(|| {
        let r = handle(request, "request")?;
        *self::out(body, "body")? = r.request.body.as_ptr();
        *self::out(len, "len")? = r.request.body.len();
        Ok(())
    })
}

/// The number of reports in a request.
///
/// # Safety
/// `request` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_report_count(request: *const LdpRequest) -> usize {
    handle(request, "request").map_or(0, |r| r.batch.reports.len())
}

/// What to do after a reply (`ldp_client_handle_reply`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdpReplyAction {
    /// The batch was acknowledged and removed from the outbox: ask for the next request.
    LdpReplyDone = 0,
    /// The batch was split in two (the collector found it too large): ask for the next request at once.
    LdpReplySplit = 1,
    /// Retry the same request after `*wait_seconds` (the collector's `Retry-After`, at most
    /// `LDP_MAX_RETRY_AFTER_SECONDS`; shorten it as you see fit).
    LdpReplyRetryAfter = 2,
    /// Retry the same request after an exponential back-off with jitter (no reply, 408, 5xx).
    LdpReplyBackoff = 3,
    /// Do not retry this batch now: the call's status and error say why; the batch stays queued.
    LdpReplyFail = 4,
}

/// Applies the collector's reply to `request`: `status` the HTTP status (−1: no reply, the connection failed or
/// timed out), `body` the first bytes of the reply (read at most 65,536; `truncated` non-zero if it was longer),
/// `retry_after` the `Retry-After` header (null: absent). `*action` says what to do next; `*wait_seconds` is set
/// for `LDP_REPLY_RETRY_AFTER`, never above `LDP_MAX_RETRY_AFTER_SECONDS` (300). A failure returns its status
/// (`LDP_UPLOAD_REJECTED`, `LDP_TRANSPORT_ERROR`) with `*action` set to `LDP_REPLY_FAIL`. `request` must come from
/// this `client`'s `ldp_client_next_request`: a request of another client handle is `LDP_INVALID_ARGUMENT`, and
/// nothing is acknowledged.
///
/// # Safety
/// Pointers valid as documented.
#[no_mangle]
pub unsafe extern "C" fn ldp_client_handle_reply(
    client: *const LdpClient,
    request: *const LdpRequest,
    status: i32,
    body: *const u8,
    body_len: usize,
    truncated: i32,
    retry_after: *const c_char,
    action: *mut LdpReplyAction,
    wait_seconds: *mut f64,
) -> LdpStatus {
    guard(|| {
        let a = self::out(action, "action")?;
        *a = LdpReplyAction::LdpReplyFail;
        let c = handle(client, "client")?;
        let r = handle(request, "request")?;
        if r.client != c.serial {
            return Err(invalid(
                "request was made by another client handle: hand the reply to the client whose \
                 ldp_client_next_request made it",
            ));
        }
        let body = c_bytes(body, body_len.min(crate::upload::MAX_ANSWER), "body")?;
        let retry = if retry_after.is_null() { None } else { Some(c_str(retry_after, "retry_after")?) };
        let status = match status {
            -1 => None,
            s => Some(
                u16::try_from(s)
                    .ok()
                    .filter(|s| (100..=599).contains(s))
                    .ok_or_else(|| invalid(format!("status {s} is not an HTTP status or -1")))?,
            ),
        };
        let over = truncated != 0 || body_len > crate::upload::MAX_ANSWER;
        match Reply::classify(status, body, over, retry, &r.batch, crate::client::system_clock()) {
            Reply::Acknowledge(_) => {
                c.client.acknowledge_batch(&r.batch.id, &r.batch.ids())?;
                *a = LdpReplyAction::LdpReplyDone;
            }
            Reply::Split => {
                c.client.split_batch(&r.batch.id)?;
                *a = LdpReplyAction::LdpReplySplit;
            }
            Reply::RetryAfter(s) => {
                *self::out(wait_seconds, "wait_seconds")? = s.clamp(0.0, f64::from(LDP_MAX_RETRY_AFTER_SECONDS));
                *a = LdpReplyAction::LdpReplyRetryAfter;
            }
            Reply::Backoff => *a = LdpReplyAction::LdpReplyBackoff,
            Reply::Fail(e) => return Err(e),
        }
        Ok(())
    })
}

/// Frees a request (null is ignored).
///
/// # Safety
/// `request` is null or a handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn ldp_request_free(request: *mut LdpRequest) {
    free_handle(request);
}
