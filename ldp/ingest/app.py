"""The ingest service's ASGI app (Starlette): ``POST /v1/reports`` and its CORS preflight, ``GET /healthz``, metrics.

:func:`create_app` builds it from a :class:`~ldp.ingest.config.IngestConfig`. The request
path: auth first (nothing is read before the token is known good), then the headers, then the body,
read as it streams in under the size limits and the body timeout (gunzipped on the fly within
``max_decompressed_bytes``), validated with the parser of ``ldp fold``, its accepted lines made canonical
(:mod:`ldp.ingest.canonical`: the clients' exact bytes, so that no line stands out in a shuffled segment),
queued to the writer (:class:`~ldp.ingest.segments.SegmentWriter`) and answered once fsynced. One JSON log
line per request on the ``ldp.ingest.access`` logger, never with a report line or a token; the request
counters and latency histogram of :mod:`ldp.ingest.metrics` (unless ``[metrics] enabled = false``).

It is built on the services' layer (:mod:`ldp.web`): the bearer header read by its one parser, the body under its
one limit, every refusal — an upload's, 404 and 405 — its problem document (``application/problem+json``, the
``error`` and ``detail`` the devices' uploaders read kept)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ldp.ingest.config import AppConfig, IngestConfig
from ldp.ingest.cors import Cors
from ldp.ingest.datafolder import hold_data_folder
from ldp.ingest.health import health_answer, is_operator, live_answer, operator_of
from ldp.ingest.metrics import IngestMetrics
from ldp.ingest.segments import Batch, QueueFull, SegmentWriter, Stored, WriterClosed
from ldp.ingest.upload import Gunzip, IngestError, check_batch_id, check_body, prepare_body
from ldp.protocols.registry import protocols
from ldp.web.app import service_app
from ldp.web.auth import CHALLENGE, bearer_digest, holder_of, holds
from ldp.web.body import check_length, read_body
from ldp.web.problems import code_for, problem

__all__ = ["create_app", "Hook", "ACCESS_LOGGER", "CONTENT_TYPES", "IngestApp"]

ACCESS_LOGGER = "ldp.ingest.access"
CONTENT_TYPES = ("application/x-ndjson", "application/jsonl")
Hook = Callable[[Starlette], "Awaitable[None] | None"]
"""A startup or shutdown hook: called with the app (its ``state.writer`` is the
:class:`~ldp.ingest.segments.SegmentWriter`, ``state.config`` the config); may be async."""
access_log = logging.getLogger(ACCESS_LOGGER)
logger = logging.getLogger(__name__)
_RETRY_AFTER = "1"
UPLOAD_PATH = "/v1/reports"


def _refused(exc: HTTPException) -> IngestError:
    """The layer's refusal (:mod:`ldp.web.body`: 413, 408) as the upload path's, with the layer's code."""
    return IngestError(exc.status_code, code_for(exc.status_code), exc.detail)


class _Auth:
    """Bearer token -> app, comparing SHA-256 digests in constant time against every app (:mod:`ldp.web.auth`).
    Only upload tokens are here: an analyst's or the scraper's token uploads nothing (the config refuses a token
    listed for two roles)."""

    def __init__(self, apps: Sequence[AppConfig]) -> None:
        self.apps = [(bytes.fromhex(a.token_sha256), a) for a in apps]

    def app_for(self, header: str | None) -> AppConfig | None:
        return holder_of(bearer_digest(header), self.apps)


def _check_headers(request: Request, config: IngestConfig) -> tuple[str, bool]:
    """The batch id and whether the body is gzip; :class:`IngestError` for bad headers."""
    ctype = request.headers.get("content-type", "")
    mime, *params = [p.strip().lower() for p in ctype.split(";")]
    charset = [p.split("=", 1)[1].strip(' "') for p in params if p.startswith("charset=")]
    if mime not in CONTENT_TYPES or any(c not in ("utf-8", "utf8") for c in charset):
        raise IngestError(415, "unsupported_media_type", f"Content-Type must be {' or '.join(CONTENT_TYPES)} "
                                                         "(charset utf-8)")
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise IngestError(415, "unsupported_encoding", "Content-Encoding must be gzip or absent")
    try:
        check_length(request, config.limits.max_body_bytes)  # the layer's one body limit, before a byte is read
    except HTTPException as exc:
        raise _refused(exc) from None
    return check_batch_id(request.headers.get("ldp-batch-id")), encoding == "gzip"


class _Memory:
    """Bytes of request bodies held by all requests together (``Limits.max_buffered_bytes``): a request
    takes what it holds as it streams in (received and inflated) and gives it back when answered. Only
    the event loop's thread touches it, so it needs no lock."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def account(self) -> _Held:
        """A context for one request: ``with memory.account() as take``; ``take(n)`` charges ``n`` more bytes
        (429 past the limit), all given back at the exit."""
        return _Held(self)


class _Held:
    """What one request holds of :class:`_Memory` (a plain class: the upload path's cost per request matters)."""

    __slots__ = ("memory", "held")

    def __init__(self, memory: _Memory) -> None:
        self.memory, self.held = memory, 0

    def __enter__(self) -> Callable[[int], None]:
        return self.take

    def __exit__(self, *exc: object) -> None:
        self.memory.used -= self.held
        self.held = 0

    def take(self, n: int) -> None:
        m = self.memory
        if m.used + n > m.limit:
            raise IngestError(429, "busy", "the ingest service holds too many request bodies at once; retry later")
        m.used += n
        self.held += n


async def _read_body(request: Request, config: IngestConfig, gzip: bool,
                     take: Callable[[int], None]) -> tuple[bytes, int]:
    """The (decompressed) body and its size on the wire, read under the layer's body limit and the body timeout
    (:func:`ldp.web.body.read_body`), gunzipped as it streams in; ``take`` charges the bytes held to the ingest
    service's memory budget (429 when it is spent)."""
    limits = config.limits
    unzip = Gunzip(limits.max_decompressed_bytes) if gzip else None
    parts: list[bytes] = []

    def keep(chunk: bytes) -> None:
        take(len(chunk))
        parts.append(chunk)

    def inflate(chunk: bytes) -> None:
        assert unzip is not None
        inflated = unzip.size
        unzip.feed(chunk)
        take(unzip.size - inflated)

    try:
        _, size = await read_body(request, limits.max_body_bytes, timeout=limits.body_timeout_seconds,
                                  sink=keep if unzip is None else inflate)
    except HTTPException as exc:
        raise _refused(exc) from None
    except ClientDisconnect:
        raise IngestError(400, "client_disconnected", "the client went away before the end of the body") from None
    return (unzip.finish() if unzip is not None else b"".join(parts)), size


class _Collector:
    def __init__(self, config: IngestConfig, writer: SegmentWriter) -> None:
        self.config, self.writer = config, writer
        self.auth = _Auth(list(config.apps.values()))
        self.memory = _Memory(config.limits.max_buffered_bytes)
        self.metrics: IngestMetrics | None = None
        self.cors = Cors(config.cors_origins) if config.cors_origins else None
        self.operator = operator_of(config)  # the operator's token: /healthz's details (ldp.ingest.health)

    async def reports(self, request: Request) -> Response:
        t0 = time.perf_counter()
        log: dict[str, Any] = {"method": request.method, "path": request.url.path, "app": None}
        try:
            response = await self._reports(request, log)
        except IngestError as err:
            log["error"] = err.reason
            self.writer.count_refusal(err.reason)
            headers = {"WWW-Authenticate": CHALLENGE} if err.status == 401 else None
            if err.status in (429, 503):
                headers = {"Retry-After": _RETRY_AFTER}
            response = problem(err.status, err.reason, err.detail, headers=headers)
            if err.status in (408, 413, 429) or err.reason == "unauthorized":  # the body may be left unread
                response.headers["Connection"] = "close"
        except Exception as exc:  # a bug: logged without its message, which could quote the body
            log["error"] = f"internal: {type(exc).__name__}"
            logger.error("internal error on %s (%s)", request.url.path, type(exc).__name__)
            response = problem(500, "internal", "the ingest service failed on this request")
        elapsed = time.perf_counter() - t0
        log.update(status=response.status_code, ms=round(elapsed * 1e3, 2))
        if self.metrics is not None:
            self.metrics.upload(response.status_code, elapsed)
        access_log.info("%s", json.dumps(log, separators=(",", ":")))
        return response

    async def _reports(self, request: Request, log: dict[str, Any]) -> Response:
        app = self.auth.app_for(request.headers.get("authorization"))
        if app is None:
            raise IngestError(401, "unauthorized", "a valid 'Authorization: Bearer <token>' header is required")
        log["app"] = app.name
        batch_id, gzip = _check_headers(request, self.config)
        log["batch_id"] = batch_id
        if self.writer.closing:
            raise IngestError(503, "unavailable", "the ingest service is shutting down")
        with self.memory.account() as take:  # the body counts against the budget until it is stored
            raw, log["bytes"] = await _read_body(request, self.config, gzip, take)
            known = self.writer.known(app.name, batch_id)
            if known is not None:
                stored = Stored(known, True)
            else:
                checked = check_body(prepare_body(raw, self.config.limits.max_lines), app.specs)
                stored = await self._store(app.name, batch_id, checked.body, checked.counts, checked.rejects)
        log.update(lines=stored.counts.lines, duplicate=stored.duplicate)
        return JSONResponse({"batch_id": batch_id, **stored.counts.to_dict(), "duplicate": stored.duplicate})

    async def _store(self, app: str, batch_id: str, body: bytes, counts: Any, spans: Any = None) -> Stored:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Stored] = loop.create_future()

        def settle(result: Stored | BaseException) -> None:
            if future.done():
                return
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

        def done(result: Stored | BaseException) -> None:  # in the writer thread
            loop.call_soon_threadsafe(settle, result)

        try:
            self.writer.submit(Batch(app, batch_id, body, counts, done, spans))
        except QueueFull:
            raise IngestError(429, "busy", "the write queue is full; retry later") from None
        except WriterClosed as exc:
            raise IngestError(503, "unavailable", str(exc)) from None
        try:
            return await asyncio.shield(future)
        except WriterClosed as exc:
            raise IngestError(503, "unavailable", str(exc)) from None

    def preflight(self, scope: Any) -> Response:
        """``OPTIONS /v1/reports`` with an ``Origin`` (:meth:`Cors.preflight`), logged and counted like an upload."""
        assert self.cors is not None
        log: dict[str, Any] = {"method": "OPTIONS", "path": UPLOAD_PATH}
        response = self.cors.preflight(scope["headers"], log)
        log["status"] = response.status_code
        if self.metrics is not None:
            self.metrics.count(UPLOAD_PATH, response.status_code)
        access_log.info("%s", json.dumps(log, separators=(",", ":")))
        return response

    async def healthz(self, request: Request) -> Response:
        """``GET /healthz`` and ``GET /readyz`` (readiness): 200 while uploads are taken, 503 (with why) while the
        storage fails, the writer stopped or the process is shutting down: a balancer sends no upload here then.
        Why in one coarse word to anyone, the details to the operator's token (:mod:`ldp.ingest.health`)."""
        operator = is_operator(request.headers.get("authorization"), self.operator)
        status, doc, headers = health_answer(self.writer.health(), self.config, operator)
        if self.metrics is not None:
            self.metrics.count(request.url.path, status)
        return JSONResponse(doc, status_code=status, headers=headers or None)

    async def livez(self, request: Request) -> Response:
        """``GET /livez`` (liveness): 200 whenever the process answers at all, storage errors included (they heal
        by themselves: restarting would not help); only a process that no longer answers is to be restarted. The
        replica's name to the operator's token only."""
        if self.metrics is not None:
            self.metrics.count("/livez", 200)
        doc, headers = live_answer(self.config, is_operator(request.headers.get("authorization"), self.operator))
        return JSONResponse(doc, headers=headers or None)

    async def metrics_page(self, request: Request) -> Response:
        """``GET /metrics``: the Prometheus page (a bearer token first, when ``[metrics] token_sha256`` is set). What
        moves with uploads is on it as published at the last interval boundary (:mod:`ldp.ingest.metrics`)."""
        metrics, want = self.metrics, self.config.metrics.token_sha256
        assert metrics is not None
        if want is not None and not holds(request.headers.get("authorization"), [want]):
            metrics.count("/metrics", 401)
            return problem(401, "unauthorized", "a valid 'Authorization: Bearer <token>' header is required",
                           headers={"WWW-Authenticate": CHALLENGE})
        body, content_type = await asyncio.to_thread(metrics.render, request.headers.get("accept"))
        metrics.count("/metrics", 200)
        return Response(body, media_type=content_type, headers={"Cache-Control": "no-store"})


class IngestApp(Starlette):
    """The Starlette app, with ``POST /v1/reports`` answered without its routing and error middlewares (six
    coroutine layers per upload): the handler turns every error into its answer itself. With ``cors_origins``,
    the upload's answer to a listed ``Origin`` carries the CORS headers, and ``OPTIONS /v1/reports`` with an
    ``Origin`` (a preflight) is answered here too (:mod:`ldp.ingest.cors`)."""

    uploads: Callable[[Request], Awaitable[Response]]
    preflights: Callable[[Any], Response]
    cors: Cors | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == UPLOAD_PATH:
            method, cors = scope["method"], self.cors
            if method == "POST":
                scope["app"] = self
                response = await self.uploads(Request(scope, receive, send))
                if cors is not None and (origin := cors.allowed(scope["headers"])) is not None:
                    cors.expose(origin, response)
                await response(scope, receive, send)
                return
            if method == "OPTIONS" and cors is not None and any(k == b"origin" for k, _ in scope["headers"]):
                await self.preflights(scope)(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


async def _call(hook: Hook, app: Starlette) -> None:
    result = hook(app)
    if inspect.isawaitable(result):
        await result


def _start_writer(writer: SegmentWriter) -> dict[str, dict[str, int]]:
    """Recover and open the segments (the bytes cut on recovery, per app), with the protocol registry loaded."""
    protocols()
    return writer.start()


def _lifespan(collector: _Collector, on_startup: Sequence[Hook], on_shutdown: Sequence[Hook]) -> Any:
    """The app's lifespan: the data folder held, the segments recovered and the writer started, the hooks, the
    metrics published; at the end the hooks (reversed) and the writer closed."""
    config, writer = collector.config, collector.writer

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # what the first upload would load otherwise (70 ms): anyio's asyncio backend, every protocol
        anyio.current_time()
        # one process per data folder, taken before anything in it is recovered or written (held already by
        # ldp serve, which took it before it built the app: then counted once more)
        with hold_data_folder(config.data_dir):
            cut = await asyncio.to_thread(_start_writer, writer)
            logger.info("ingest service started: data in %s, apps %s; cut on recovery: %s", config.data_dir,
                        ", ".join(sorted(config.apps)), json.dumps(cut))
            publisher: asyncio.Task[None] | None = None
            try:
                for hook in on_startup:
                    await _call(hook, app)
                if collector.metrics is not None:  # the counters rebuilt from the journals, before any upload
                    await asyncio.to_thread(collector.metrics.publish)
                    publisher = asyncio.create_task(collector.metrics.publish_every_interval())
                yield
            finally:
                writer.closing = True
                if publisher is not None:
                    publisher.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await publisher
                try:
                    for hook in reversed(on_shutdown):
                        await _call(hook, app)
                finally:
                    await asyncio.to_thread(writer.close)
                    logger.info("ingest service stopped: segments closed")

    return lifespan


def create_app(config: IngestConfig, *, extra_routes: Sequence[BaseRoute] = (), on_startup: Sequence[Hook] = (),
               on_shutdown: Sequence[Hook] = ()) -> Starlette:
    """The ingest service app (:func:`ldp.web.app.service_app`: the layer's answers, these routes). ``extra_routes``
    are added after ``/v1/reports``, ``/healthz`` and ``/metrics``; ``on_startup`` hooks run after the segments are
    recovered and the writer started, in order; ``on_shutdown`` hooks run (in reverse order) before the writer stores
    what is queued and closes the segments. Hooks see the writer as ``app.state.writer`` and the config as
    ``app.state.config``."""
    writer = SegmentWriter(config)
    collector = _Collector(config, writer)
    if config.metrics.enabled:
        collector.metrics = IngestMetrics(config, writer, buffered=lambda: collector.memory.used)
    routes = [Route(UPLOAD_PATH, collector.reports, methods=["POST"]),
              Route("/healthz", collector.healthz, methods=["GET"]),
              Route("/readyz", collector.healthz, methods=["GET"]),
              Route("/livez", collector.livez, methods=["GET"])]
    if collector.metrics is not None:
        routes.append(Route("/metrics", collector.metrics_page, methods=["GET"]))
    app = service_app([*routes, *extra_routes], refusals={IngestError: _refusal},
                      lifespan=_lifespan(collector, on_startup, on_shutdown), cls=IngestApp)
    assert isinstance(app, IngestApp)
    app.uploads, app.preflights, app.cors = collector.reports, collector.preflight, collector.cors
    app.state.writer = app.state.collector = writer  # collector: the name before issue 83, one more release
    app.state.config = config
    app.state.metrics = collector.metrics
    return app


def _refusal(request: Request, exc: Exception) -> Response:
    """An :class:`IngestError` out of a route other than the upload's (which answers its own): its problem."""
    assert isinstance(exc, IngestError)
    return problem(exc.status, exc.reason, exc.detail)
