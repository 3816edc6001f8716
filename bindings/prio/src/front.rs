//! The aggregators' HTTP front (issue 86, item 3): hyper's HTTP/1.1 server on a tokio runtime of its own accepts
//! connections, reads each request (head and body, under the body limit and the timeouts below) with the GIL
//! released, and queues it; Python takes the queued requests in batches (`HttpFront.next_requests`, which waits with
//! the GIL released) and answers each (`FrontRequest.respond`), and hyper writes the answer on its connection.
//!
//! Why: a DAP upload is one report per request, so the leader's door is as fast as its per-request cost. Under a
//! Python HTTP server that cost is tens of microseconds of interpreter time per request before the report is even
//! looked at, on the one core the GIL allows. Here the HTTP work runs on every core outside the GIL, as does the
//! leader's HPKE open of each upload (`front_request::Opener`, when the front is given the leader's key and tasks),
//! and Python sees a batch of uploads at a time: it checks them and writes them as one durable chunk before answering
//! any (group commit: the batch is what arrived while the previous one was written). Every answer, refusals included,
//! is Python's (`ldp.web.front`): this module moves bytes and opens shares, so the routes, their checks and their
//! problem documents stay the one service layer's.
//!
//! Limits: a request head must arrive within [`HEAD_TIMEOUT`], its body within [`BODY_TIMEOUT`]; a body longer than
//! `max_body` (declared, or found while reading) is not read further and is handed over as `too_large`, a body cut
//! off or late as `broken` or `timeout`, each for Python to answer (413, 400, 408). Requests still unanswered when the
//! front closes (after its grace) get a 503.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderName, HeaderValue, CONTENT_LENGTH};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use ldp_client::dap::TASK_ID_LEN;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use tokio::sync::{oneshot, watch};

use crate::dap::HpkeKeypair;
use crate::front_request::{FrontRequest, Opener, Pending};

/// The time a connection has to send a request's head (slow clients do not hold a connection forever).
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// The time a request has to send its body once its head arrived.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The listening socket's backlog.
const BACKLOG: i32 = 4096;

/// The queue between hyper's tasks and Python.
struct Shared {
    queue: Mutex<VecDeque<Pending>>,
    ready: Condvar,
    max_body: usize,
    closed: AtomicBool,
    opener: Option<Opener>,
    /// Requests read and not yet answered (handed to Python or about to be).
    inflight: AtomicUsize,
    /// Set when the front gives up on the requests Python has not answered (`close`, after its grace).
    abort: watch::Receiver<bool>,
}

/// Counts one request in flight for as long as it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        InFlight(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Shared {
    fn push(&self, pending: Pending) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).push_back(pending);
        self.ready.notify_one();
    }
}

/// The server (module docstring): listening from its construction until `close`.
#[pyclass(frozen, module = "ldp.prio")]
pub struct HttpFront {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    abort: watch::Sender<bool>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    address: SocketAddr,
}

fn listen(address: SocketAddr, reuse_port: bool) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(address), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&address.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

#[pymethods]
impl HttpFront {
    /// Listen on `host`:`port` (0: any free port; `address` says which) with `threads` runtime threads (default:
    /// the CPUs this process may run on); bodies up to `max_body` bytes are read. `reuse_port`: SO_REUSEPORT, so that
    /// several processes share the port (the kernel spreads connections over them). `keypair` and `upload_tasks`
    /// (the leader: each task's ID by its name in the upload path, base64url): each upload's leader share opened as
    /// it arrives (`FrontRequest.opened`). `OSError` when the address cannot be listened on.
    #[new]
    #[pyo3(signature = (host, port, *, max_body, threads = None, reuse_port = false, keypair = None, upload_tasks = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        host: &str,
        port: u16,
        max_body: usize,
        threads: Option<usize>,
        reuse_port: bool,
        keypair: Option<Py<HpkeKeypair>>,
        upload_tasks: Option<std::collections::HashMap<String, Vec<u8>>>,
    ) -> PyResult<Self> {
        let opener = match (keypair, upload_tasks) {
            (Some(keypair), Some(named)) => {
                let mut tasks = std::collections::HashMap::new();
                for (name, id) in named {
                    let id: [u8; TASK_ID_LEN] = id
                        .try_into()
                        .map_err(|_| PyValueError::new_err(format!("upload_tasks[{name:?}] is no 32-byte task ID")))?;
                    tasks.insert(name, id);
                }
                Some(Opener { keypair, tasks })
            }
            (None, None) => None,
            _ => return Err(PyValueError::new_err("keypair and upload_tasks go together")),
        };
        let ip: std::net::IpAddr =
            host.parse().map_err(|_| PyValueError::new_err(format!("host must be an IP address, got {host:?}")))?;
        let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
        if threads == 0 {
            return Err(PyValueError::new_err("threads must be positive"));
        }
        let listener = listen(SocketAddr::new(ip, port), reuse_port)
            .map_err(|e| PyOSError::new_err(format!("cannot listen on {host}:{port}: {e}")))?;
        let address = listener.local_addr().map_err(|e| PyOSError::new_err(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("ldp-http-front")
            .enable_all()
            .build()
            .map_err(|e| PyOSError::new_err(format!("cannot start the HTTP front's threads: {e}")))?;
        let (abort, aborted) = watch::channel(false);
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
            max_body,
            closed: AtomicBool::new(false),
            opener,
            inflight: AtomicUsize::new(0),
            abort: aborted,
        });
        let (stop, stopped) = watch::channel(false);
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|e| PyOSError::new_err(e.to_string()))?
        };
        runtime.spawn(accept(listener, shared.clone(), stopped));
        Ok(Self { shared, stop, abort, runtime: Mutex::new(Some(runtime)), address })
    }

    /// `(host, port)` listened on.
    #[getter]
    fn address(&self) -> (String, u16) {
        (self.address.ip().to_string(), self.address.port())
    }

    /// The requests queued, at most `max`, waiting up to `timeout` seconds for the first (the GIL released
    /// meanwhile): a list of `FrontRequest`, empty when none came (or the front is closed).
    #[pyo3(signature = (max, timeout))]
    fn next_requests<'py>(&self, py: Python<'py>, max: usize, timeout: f64) -> PyResult<Bound<'py, PyList>> {
        if !(timeout.is_finite() && timeout >= 0.0) {
            return Err(PyValueError::new_err("timeout must be a non-negative number of seconds"));
        }
        let shared = &self.shared;
        let batch: Vec<Pending> = py.detach(|| {
            let deadline = Instant::now() + Duration::from_secs_f64(timeout.min(3600.0));
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            while queue.is_empty() && !shared.closed.load(Ordering::Acquire) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                queue = shared.ready.wait_timeout(queue, left).unwrap_or_else(|p| p.into_inner()).0;
            }
            let n = queue.len().min(max.max(1));
            queue.drain(..n).collect()
        });
        let items = batch.into_iter().map(FrontRequest::from);
        PyList::new(py, items.map(|r| Bound::new(py, r)).collect::<PyResult<Vec<_>>>()?)
    }

    /// Stop taking connections; those open finish the requests they have sent and are closed.
    fn stop_accepting(&self) {
        let _ = self.stop.send(true);
    }

    /// Close the front: no more connections; requests not answered within `grace` seconds get a 503. Idempotent.
    #[pyo3(signature = (grace = 5.0))]
    fn close(&self, py: Python<'_>, grace: f64) {
        let _ = self.stop.send(true);
        let runtime = self.runtime.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(runtime) = runtime else { return };
        let grace = Duration::from_secs_f64(if grace.is_finite() { grace.clamp(0.0, 3600.0) } else { 0.0 });
        let shared = &self.shared;
        py.detach(|| {
            let deadline = Instant::now() + grace;
            while shared.inflight.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            shared.closed.store(true, Ordering::Release);
            shared.ready.notify_all();
            let _ = self.abort.send(true); // the requests still unanswered: 503
            let deadline = Instant::now() + Duration::from_secs(1);
            while shared.inflight.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            runtime.shutdown_timeout(Duration::from_millis(100));
        });
    }

    /// Requests waiting for Python now.
    fn queued(&self) -> usize {
        self.shared.queue.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

async fn accept(listener: tokio::net::TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection(stream, peer, shared.clone(), stop.clone()));
                }
                // out of file descriptors, or a connection reset before it was taken: wait, then go on
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let service = service_fn(move |req| handle(req, peer, shared.clone()));
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// The body read under the limit and the timeout: the bytes, or why not.
async fn read_body(body: Incoming, declared: Option<u64>, max: usize) -> Result<Bytes, &'static str> {
    if declared.is_some_and(|n| n > max as u64) {
        return Err("too_large");
    }
    match tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, max).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err("too_large"),
        Ok(Err(_)) => Err("broken"),
        Err(_) => Err("timeout"),
    }
}

async fn handle(
    req: Request<Incoming>,
    peer: SocketAddr,
    shared: Arc<Shared>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let declared = parts.headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let (body, body_error) = match read_body(body, declared, shared.max_body).await {
        Ok(bytes) => (bytes, None),
        Err(why) => (Bytes::new(), Some(why)),
    };
    let _inflight = InFlight::new(&shared.inflight);
    let (answer, answered) = oneshot::channel();
    let headers = parts.headers.iter().map(|(k, v)| (k.as_str().as_bytes().to_vec(), v.as_bytes().to_vec())).collect();
    if shared.closed.load(Ordering::Acquire) {
        return Ok(plain(StatusCode::SERVICE_UNAVAILABLE));
    }
    let path = parts.uri.path();
    let opened = match (&shared.opener, body_error) {
        (Some(opener), None) if parts.method == hyper::Method::PUT => {
            opener.task(path).map(|task_id| opener.open(task_id, &body))
        }
        _ => None,
    };
    shared.push(Pending {
        method: parts.method.as_str().to_owned(),
        path: path.to_owned(),
        opened,
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers,
        body,
        body_error,
        peer,
        answer,
    });
    let mut abort = shared.abort.clone();
    let answer = tokio::select! {
        answer = answered => answer.ok(),
        _ = abort.wait_for(|aborted| *aborted) => None,
    };
    Ok(match answer {
        Some((status, headers, body)) => {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) =
                    (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_bytes(&value))
                {
                    response.headers_mut().append(name, value);
                }
            }
            response
        }
        None => plain(StatusCode::SERVICE_UNAVAILABLE), // dropped unanswered, or the front closed
    })
}

fn plain(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}
