//! How to upload ([`UploadOptions`], feature `uploader`): the collector endpoints, the token, the deadlines and
//! the retry rules.

use std::fmt;
use std::time::Duration;

use super::request::check_token;
use crate::error::{Error, Result};

/// How to upload: the collector endpoints (`https://host/v1/reports`, several for failover: see
/// [`Uploader`](super::Uploader)), the app's bearer token, the deadline of one request from connecting to the end of
/// the reply (`timeout`), of the whole call (`call_timeout`), requests per batch part over all endpoints
/// (`max_attempts`), the back-off cap (`max_delay`) and `gzip`. `sleep`, `clock` (Unix seconds) and `jitter` (uniform
/// in [0, 1)) are for tests.
///
/// ```
/// use ldp_client::upload::UploadOptions;
///
/// // One collector.
/// let one = UploadOptions::new(&["https://collector.example.com/v1/reports"], "app-token")?;
/// // Replicas over shared storage: the first is tried first, the others when it cannot take a batch.
/// let replicas = ["https://a.collector.example.com/v1/reports", "https://b.collector.example.com/v1/reports"];
/// let options = UploadOptions::new(&replicas, "app-token")?;
/// assert_eq!(options.endpoints().len(), 2);
/// # let _ = one;
/// # Ok::<(), ldp_client::Error>(())
/// ```
pub struct UploadOptions {
    pub(super) endpoints: Vec<String>,
    pub(super) token: String,
    /// Seconds for one request, from connecting to the end of the reply (default 30 s).
    pub timeout: Duration,
    /// Seconds for the whole call (default: none).
    pub call_timeout: Option<Duration>,
    /// Tries per batch (default 8).
    pub max_attempts: u32,
    /// The longest wait between tries (default 300 s).
    pub max_delay: Duration,
    /// Compress bodies (default true).
    pub gzip: bool,
    /// Waits between tries (default: `std::thread::sleep`).
    pub sleep: Box<dyn Fn(Duration) + Send + Sync>,
    /// The time, in Unix seconds (default: the system clock), for `Retry-After` dates.
    pub clock: Box<dyn Fn() -> f64 + Send + Sync>,
    /// Uniform in [0, 1) (default: the OS generator), for the back-off's jitter.
    pub jitter: Box<dyn FnMut() -> f64 + Send + Sync>,
}

impl fmt::Debug for UploadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UploadOptions")
            .field("endpoints", &self.endpoints)
            .field("token", &"<secret>")
            .field("timeout", &self.timeout)
            .field("call_timeout", &self.call_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("max_delay", &self.max_delay)
            .field("gzip", &self.gzip)
            .finish_non_exhaustive()
    }
}

fn os_jitter() -> f64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

impl UploadOptions {
    /// Options for `endpoints` and the bearer `token`, with the defaults.
    ///
    /// `endpoints` is a non-empty list of distinct `http(s)://host/...` URLs (one URL is a list of one), in the
    /// order the uploader tries them. Callers who want to spread devices over replicas shuffle the list per device:
    /// the uploader itself always starts a call with the first. An empty list, an entry that is not such a URL or
    /// the same URL twice is a [`Error::Value`], before anything is sent.
    pub fn new<S: AsRef<str>>(endpoints: &[S], token: &str) -> Result<Self> {
        if endpoints.is_empty() {
            return Err(Error::value("endpoints: give at least one collector URL"));
        }
        let mut list: Vec<String> = Vec::with_capacity(endpoints.len());
        for e in endpoints {
            let e = e.as_ref();
            host_of(e)?;
            if let Some(first) = list.iter().position(|u| u == e) {
                return Err(Error::value(format!(
                    "upload urls name the same endpoint twice (entries {} and {})",
                    first + 1,
                    list.len() + 1
                )));
            }
            list.push(e.to_string());
        }
        check_token(token)?;
        Ok(UploadOptions { endpoints: list, token: token.to_string(), ..Self::without_collector() })
    }

    /// Options with no collector, for a device whose outbox holds two-aggregator reports only (they go to their
    /// tasks' leaders, which take no token): an upload with them is refused ([`Error::Value`], nothing sent) while
    /// a report for the collector waits. The other defaults as [`UploadOptions::new`]'s.
    pub fn without_collector() -> Self {
        UploadOptions {
            endpoints: Vec::new(),
            token: String::new(),
            timeout: Duration::from_secs(30),
            call_timeout: None,
            max_attempts: 8,
            max_delay: Duration::from_secs(300),
            gzip: true,
            sleep: Box::new(std::thread::sleep),
            clock: Box::new(crate::client::system_clock),
            jitter: Box::new(os_jitter),
        }
    }

    /// The endpoints, in the order they are tried (none: [`UploadOptions::without_collector`]).
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }
}

/// The `host[:port]` of an upload URL (what the log names: never the path, the query or user info), or the error
/// refusing the URL.
pub(super) fn host_of(url: &str) -> Result<String> {
    let bad = || Error::value(format!("upload url must be http(s)://host/..., got {url:?}"));
    let uri: ureq::http::Uri = url.parse().map_err(|_| bad())?;
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(bad)?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(bad());
    }
    Ok(match uri.port_u16() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}
