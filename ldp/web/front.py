"""A service's ASGI app served through the binding's HTTP front (:class:`ldp.prio.HttpFront`; issue 86, item 3).

The front (hyper, in Rust) reads every request with the GIL released and queues it; one thread here takes the
queued requests in batches. A service may take a batch route's requests itself (``batch``: the leader's uploads,
:class:`ldp.aggregators.uploads.UploadBatches`, checked, opened and stored together before any is answered); every
other request is run through the app on an event loop of its own, as an ASGI server would (HTTP scope, the body in
one message, the lifespan's startup before the first request and its shutdown at the end), so that the routes, the
tokens and the problem documents are the one service layer's (:mod:`ldp.web.app`) whichever server runs them.

A body the front did not read (``body_error``) is answered as the layer answers it: over the front's limit, 413
(by the route when the request declared its length, so that its own limit and its token check come first; by
:func:`body_refusal` otherwise); cut off, 400 ``client_disconnected``; late, 408.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from ldp.web.problems import code_for, problem

__all__ = ["Front", "answer", "body_refusal", "BATCH"]

logger = logging.getLogger("ldp.web")

BATCH = 4096
"""The most requests taken from the front at once."""
BODY_TIMEOUT = 30
"""The front's bound on a body (``ldp_prio``'s ``BODY_TIMEOUT``), said in the 408."""


def answer(request: Any, response: Any) -> None:
    """Answer a front request with a Starlette ``Response`` (its status, headers and rendered body)."""
    request.respond(response.status_code, [(k.decode("latin-1"), v) for k, v in response.raw_headers], response.body)


def body_refusal(request: Any, max_body: int) -> Any:
    """The answer to a request whose body the front did not read (module docstring), or ``None`` when the app is to
    answer it (a declared length over the limit: the route refuses it with its own)."""
    why = request.body_error
    if why == "too_large":
        if request.header("content-length") is not None:
            return None
        return problem(413, "too_large", f"the body is over {max_body} bytes", headers={"Connection": "close"})
    if why == "timeout":
        return problem(408, code_for(408), f"the body took over {BODY_TIMEOUT} s", headers={"Connection": "close"})
    return problem(400, "client_disconnected", "the client went away before the end of the body")


class Front:
    """``app`` served on ``host``:``port`` through :class:`ldp.prio.HttpFront` (module docstring): :meth:`start`,
    then :meth:`stop`. ``batch`` takes a batch of requests and returns those it did not take (each it took, it
    answers); ``max_body``: the largest body any route takes; ``gather``: the least seconds between two batches'
    starts while requests keep coming (fewer, larger batches: the leader writes one chunk per batch); ``workers``: the
    batches served at once (``batch`` must then be safe to call from several threads); ``error_headers``: the
    headers of a 500 the front answers itself, by method and decoded path; ``options``:
    :class:`ldp.prio.HttpFront`'s others (``threads``, ``reuse_port``, the leader's ``keypair`` and
    ``upload_tasks``)."""

    def __init__(self, app: Any, host: str, port: int, *, max_body: int,
                 batch: Callable[[list[Any]], list[Any]] | None = None, gather: float = 0.0, workers: int = 1,
                 error_headers: Callable[[str, str], list[tuple[bytes, bytes]]] | None = None,
                 **options: Any) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.app, self.host, self.port, self.max_body, self.batch = app, host, port, max_body, batch
        self.error_headers = error_headers
        self.gather, self.workers = gather, workers
        self.options = options
        self.http: Any = None
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, name="ldp-front-app", daemon=True)
        self._dispatcher = threading.Thread(target=self._dispatch, name="ldp-front", daemon=True)
        self._stopping = threading.Event()
        self._lifespan: _Lifespan | None = None
        self._calls: set[Any] = set()

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` listened on (after :meth:`start`)."""
        host, port = self.http.address
        return host, port

    def start(self) -> None:
        """Run the app's lifespan startup (its failure raised here), then listen and serve."""
        from ldp import prio

        self._loop_thread.start()
        self._lifespan = _Lifespan(self.app)
        try:
            asyncio.run_coroutine_threadsafe(self._lifespan.startup(), self.loop).result()
            self.http = prio.HttpFront(self.host, self.port, max_body=self.max_body, **self.options)
        except BaseException:
            self._end_loop()
            raise
        self._dispatcher.start()

    def stop(self, grace: float = 5.0) -> None:
        """Stop: no new connections, the requests sent answered (up to ``grace`` seconds), then the lifespan's
        shutdown."""
        if self.http is None:
            return
        self.http.stop_accepting()
        self._stopping.set()
        self._dispatcher.join(timeout=grace)
        pending = list(self._calls)
        if pending:
            asyncio.run_coroutine_threadsafe(asyncio.wait(pending, timeout=grace), self.loop).result()
        self.http.close(grace)
        self._end_loop()

    def _end_loop(self) -> None:
        if self._lifespan is not None and self._lifespan.started:
            try:
                asyncio.run_coroutine_threadsafe(self._lifespan.shutdown(), self.loop).result(timeout=60)
            except Exception as exc:  # noqa: BLE001 (logged: the server is stopping all the same)
                logger.error("the app's lifespan shutdown failed: %s", exc)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._loop_thread.join(timeout=10)
        if not self._loop_thread.is_alive():
            self.loop.close()

    def _take(self, since: float) -> list[Any]:
        """The next batch: the requests queued, and those arriving until ``gather`` seconds after ``since`` (the
        previous batch's start; none is waited for once that has passed)."""
        import time

        requests = self.http.next_requests(BATCH, 0.05 if self._stopping.is_set() else 0.2)
        while requests and len(requests) < BATCH and (left := since + self.gather - time.monotonic()) > 0:
            requests += self.http.next_requests(BATCH - len(requests), left)
        return requests

    def _dispatch(self) -> None:
        """Take batches until stopped and drained, each served by one of ``workers`` threads (a batch's checks
        beside another's durable write), at most two per worker waiting: the front queues the rest meanwhile."""
        import time
        from concurrent.futures import ThreadPoolExecutor

        slots = threading.BoundedSemaphore(2 * self.workers)
        began = 0.0
        with ThreadPoolExecutor(self.workers, thread_name_prefix="ldp-front-batch") as pool:
            while True:
                requests = self._take(began)
                began = time.monotonic()
                if not requests:
                    if self._stopping.is_set():
                        return
                    continue
                slots.acquire()
                pool.submit(self._serve, requests).add_done_callback(lambda _: slots.release())

    def _serve(self, requests: list[Any]) -> None:
        """One batch: the batch route's requests answered, the others handed to the app."""
        rest = requests
        if self.batch is not None:
            try:
                rest = self.batch(requests)
            except Exception as exc:  # noqa: BLE001 (every request still gets an answer: 500)
                logger.error("the batch route failed (%s)", type(exc).__name__)
                for r in requests:
                    if not r.answered:
                        answer(r, self._internal_error(r))
                rest = []
        for request in rest:
            self.loop.call_soon_threadsafe(self._begin, request)

    def _internal_error(self, request: Any) -> Any:
        """The 500 problem the front answers when the service failed on ``request``, with the headers
        ``error_headers`` gives for its method and decoded path (an aggregator's CORS headers on its device routes:
        a browser reads the failure instead of a network error, as behind another ASGI server)."""
        response = problem(500, "internal", "the service failed on this request")
        if self.error_headers is not None:
            response.raw_headers.extend(self.error_headers(request.method, unquote(request.path)))
        return response

    def _begin(self, request: Any) -> None:
        task = self.loop.create_task(self._call(request))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _call(self, request: Any) -> None:
        """One request through the app (module docstring); a 500 problem if the app fails to answer."""
        try:
            refusal = body_refusal(request, self.max_body) if request.body_error else None
            if refusal is not None:
                answer(request, refusal)
                return
            status, headers, body = await _asgi_call(self.app, request, self.address, self._lifespan)
        except Exception as exc:  # noqa: BLE001 (logged by its class: its message could quote a body)
            logger.error("internal error on %s %s (%s)", request.method, request.path, type(exc).__name__)
            answer(request, self._internal_error(request))
            return
        request.respond(status, headers, body)


async def _asgi_call(app: Any, request: Any, server: tuple[str, int], lifespan: _Lifespan | None
                     ) -> tuple[int, list[tuple[str, bytes]], bytes]:
    """Run one HTTP request through an ASGI app: its status, headers and whole body."""
    path = request.path
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": request.method, "scheme": "http", "path": unquote(path), "raw_path": path.encode("latin-1"),
             "query_string": request.query.encode("latin-1"), "root_path": "", "headers": request.headers,
             "client": tuple(request.peer), "server": server,
             "state": dict(lifespan.state) if lifespan is not None else {}}
    body = b"" if request.body_error else request.body
    sent = {"request": False}
    done = asyncio.Event()
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if not sent["request"]:
            sent["request"] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                done.set()

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    if "status" not in start:
        raise RuntimeError("the app sent no response")
    headers = [(bytes(k).decode("latin-1"), bytes(v)) for k, v in start.get("headers", [])]
    return int(start["status"]), headers, b"".join(chunks)


class _Lifespan:
    """The ASGI lifespan protocol, as a server runs it: startup before serving, shutdown after."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self.started = False
        self._inbox: asyncio.Queue[dict[str, Any]] | None = None
        self._outbox: asyncio.Queue[dict[str, Any]] | None = None
        self._task: Any = None

    async def startup(self) -> None:
        self._inbox, self._outbox = asyncio.Queue(), asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        self._task = asyncio.get_running_loop().create_task(self.app(scope, self._inbox.get, self._outbox.put))
        await self._inbox.put({"type": "lifespan.startup"})
        reply = await self._reply()
        if reply["type"] == "lifespan.startup.failed":
            raise RuntimeError(f"the app's startup failed: {reply.get('message', '')}")
        self.started = True

    async def shutdown(self) -> None:
        assert self._inbox is not None
        await self._inbox.put({"type": "lifespan.shutdown"})
        reply = await self._reply()
        if reply["type"] == "lifespan.shutdown.failed":
            raise RuntimeError(f"the app's shutdown failed: {reply.get('message', '')}")
        self.started = False

    async def _reply(self) -> dict[str, Any]:
        """The app's next lifespan message (an app that returns without one does not take the lifespan: as if it
        had completed)."""
        assert self._outbox is not None
        getter = asyncio.ensure_future(self._outbox.get())
        await asyncio.wait({getter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if getter.done():
            return getter.result()
        getter.cancel()
        if self._task.exception() is not None:
            raise RuntimeError(f"the app's lifespan failed: {self._task.exception()}")
        return {"type": "lifespan.startup.complete"}
