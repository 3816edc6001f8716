//! One request of the blocking uploader over HTTP(S) with `ureq` (a batch to the collector, a report to its task's
//! leader): one deadline from connecting to the end of the
//! reply, no redirects, the reply read at most [`MAX_ANSWER`] bytes.

use std::io::Read;
use std::time::Duration;

use super::request::{UploadRequest, MAX_ANSWER};

/// The reply to one request: status (`None`: no reply), the first bytes of the body, whether there were more, the
/// `Retry-After` header, or the transport error.
pub(super) struct Response {
    pub(super) status: Option<u16>,
    pub(super) body: Vec<u8>,
    pub(super) over: bool,
    pub(super) retry_after: Option<String>,
    pub(super) error: Option<String>,
}

impl Response {
    /// The status (`HTTP 503`) or the transport error, for messages and the log.
    pub(super) fn what(&self) -> String {
        match (self.status, &self.error) {
            (Some(s), _) => format!("HTTP {s}"),
            (None, Some(e)) => e.clone(),
            (None, None) => "no answer".into(),
        }
    }
}

/// `POST`s `request` to `url`, all of it within `deadline`: the reply, or the transport error.
pub(super) fn post(url: &str, request: &UploadRequest, deadline: Duration) -> Response {
    send(Method::Post, url, &request.headers, &request.body, deadline)
}

/// The request's method: `POST` a batch to the collector, `PUT` a report to its task's leader.
#[derive(Clone, Copy)]
pub(super) enum Method {
    Post,
    Put,
}

/// Sends `body` with `headers` to `url` by `method`, all of it within `deadline`: the reply, or the transport error.
pub(super) fn send(
    method: Method,
    url: &str,
    headers: &[(&'static str, String)],
    body: &[u8],
    deadline: Duration,
) -> Response {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(deadline))
        .max_redirects(0)
        .max_redirects_will_error(false)
        .http_status_as_error(false)
        .user_agent(concat!("ldp-telemetry-client-rust/", env!("CARGO_PKG_VERSION")))
        .build();
    let agent = ureq::Agent::new_with_config(config);
    let mut builder = match method {
        Method::Post => agent.post(url),
        Method::Put => agent.put(url),
    };
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    let mut response = match builder.send(body) {
        Ok(r) => r,
        Err(e) => {
            return Response {
                status: None,
                body: Vec::new(),
                over: false,
                retry_after: None,
                error: Some(e.to_string()),
            }
        }
    };
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut body = Vec::new();
    let read = response.body_mut().as_reader().take(MAX_ANSWER as u64 + 1).read_to_end(&mut body);
    if let Err(e) = read {
        // The reply was cut or timed out while its body was read: no usable reply, retried.
        return Response { status: None, body: Vec::new(), over: false, retry_after: None, error: Some(e.to_string()) };
    }
    let over = body.len() > MAX_ANSWER;
    body.truncate(MAX_ANSWER);
    Response { status: Some(status), body, over, retry_after, error: None }
}
