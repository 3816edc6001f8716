"""The aggregators over HTTP (issue 71, item 3): each role's routes (Starlette), the leader's client of the helper,
and the collector's client of the leader.

Routes, after DAP-09's (§4.4–4.6; the task ID base64url in the path):

=======================================================  ==========  =================================================
``GET /hpke_config``                                      both        DAP's HpkeConfigList (``application/dap-hpke-
                                                                      config-list``): devices seal to it
``PUT /tasks/{task}/reports``                             leader      one DAP report (``application/dap-report``):
                                                                      201, or a refusal with its code
``PUT /tasks/{task}/aggregation_jobs/{job}``              helper      an aggregation job (leader's token)
``POST /tasks/{task}/aggregate_shares``                   helper      the helper's share of a window (leader's token)
``POST /tasks/{task}/collections``                        leader      ``{"window": START}``: the window's sealed shares
                                                                      (collector's token), JSON
``GET /status``                                           both        the counts (refusals by code, windows,
                                                                      releases and central ε), JSON (the
                                                                      operator's, the peer's or the collector's
                                                                      token)
``GET /``                                                 both        the same as a page (:mod:`~ldp.aggregators.
                                                                      dashboard`)
``GET /healthz``                                          both        ``ok``
=======================================================  ==========  =================================================

A refusal is a problem document (RFC 9457, as DAP's): ``{"type": "urn:ietf:params:ppm:dap:error:<code>",
"title": ..., "code": <code>}`` with the refusal's status. Tokens are bearer tokens, compared by their SHA-256 in
constant time; the peer and the collector hold different ones. A helper that does not answer (or answers 5xx) is
retried by :class:`HelperClient` with the same request (jobs are idempotent), then reported as
``helper_unavailable``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
from typing import Any

from ldp.aggregators.task import b64, unb64
from ldp.errors import AggregatorError

__all__ = ["create_app", "HelperClient", "LeaderClient", "DAP_REPORT", "HPKE_CONFIG_LIST", "PROBLEM"]

DAP_REPORT = "application/dap-report"
HPKE_CONFIG_LIST = "application/dap-hpke-config-list"
PROBLEM = "application/problem+json"
MAX_BODY = 64 << 20
MAX_REPORT = 1 << 20


def _authorized(header: str | None, expected_sha256: str | None) -> bool:
    if expected_sha256 is None or not header or not header.startswith("Bearer "):
        return False
    got = hashlib.sha256(header[7:].strip().encode()).hexdigest()
    return hmac.compare_digest(got, expected_sha256)


def create_app(aggregator: Any, *, peer_token_sha256: str | None = None, collector_token_sha256: str | None = None,
               operator_token_sha256: str | None = None) -> Any:
    """The Starlette app of ``aggregator`` (a :class:`~ldp.aggregators.leader.Leader` or
    :class:`~ldp.aggregators.helper.Helper`): the helper's job routes take ``peer_token_sha256`` (the leader's
    token), the leader's collection route ``collector_token_sha256``; the status and its page also the
    operator's own ``operator_token_sha256``."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    def problem(exc: AggregatorError) -> Response:
        return JSONResponse({"type": f"urn:ietf:params:ppm:dap:error:{exc.code}", "title": str(exc),
                             "code": exc.code}, status_code=exc.status, media_type=PROBLEM)

    async def body_of(request: Request, limit: int) -> bytes:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise AggregatorError(f"the request body is larger than {limit} bytes", "invalid_message", 413)
            chunks.append(chunk)
        return b"".join(chunks)

    def task_id(request: Request) -> bytes:
        try:
            return unb64(request.path_params["task"], 32, "task ID")
        except ValueError as exc:
            raise AggregatorError(str(exc), "unrecognized_task", 404) from None

    def require(request: Request, *hashes: str | None) -> None:
        header = request.headers.get("authorization")
        if not any(_authorized(header, h) for h in hashes):
            raise AggregatorError("a bearer token is required (the peer's or the collector's)", "unauthorized", 401)

    def handler(fn: Any) -> Any:
        async def wrapped(request: Request) -> Response:
            try:
                return await fn(request)
            except AggregatorError as exc:
                return problem(exc)
        return wrapped

    async def hpke_config(request: Request) -> Response:
        return Response(aggregator.hpke_config_list(), media_type=HPKE_CONFIG_LIST)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def status(request: Request) -> Response:
        require(request, peer_token_sha256, collector_token_sha256, operator_token_sha256)
        return JSONResponse(await run_in_threadpool(aggregator.status))

    async def page(request: Request) -> Response:
        from starlette.responses import HTMLResponse

        from ldp.aggregators.dashboard import render

        require(request, peer_token_sha256, collector_token_sha256, operator_token_sha256)
        return HTMLResponse(render(await run_in_threadpool(aggregator.status)))

    async def upload(request: Request) -> Response:
        tid = task_id(request)
        body = await body_of(request, MAX_REPORT)
        await run_in_threadpool(aggregator.upload, tid, body)
        return Response(status_code=201)

    async def aggregation_job(request: Request) -> Response:
        require(request, peer_token_sha256)
        tid = task_id(request)
        body = await body_of(request, MAX_BODY)
        out = await run_in_threadpool(aggregator.aggregation_job, tid, request.path_params["job"], body)
        return Response(out, media_type="application/octet-stream")

    async def aggregate_share(request: Request) -> Response:
        require(request, peer_token_sha256)
        tid = task_id(request)
        body = await body_of(request, 4096)
        out = await run_in_threadpool(aggregator.aggregate_share, tid, body)
        return Response(out, media_type="application/octet-stream")

    async def collection(request: Request) -> Response:
        require(request, collector_token_sha256)
        tid = task_id(request)
        try:
            window = json.loads(await body_of(request, 4096))["window"]
        except (ValueError, KeyError, TypeError):
            raise AggregatorError('the body is {"window": START}', "invalid_message") from None
        if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window < 1 << 63:
            raise AggregatorError("window must be a non-negative integer (seconds)", "invalid_message")
        return JSONResponse(await run_in_threadpool(aggregator.collect, tid, window))

    routes = [Route("/hpke_config", handler(hpke_config), methods=["GET"]),
              Route("/healthz", handler(healthz), methods=["GET"]),
              Route("/status", handler(status), methods=["GET"]),
              Route("/", handler(page), methods=["GET"])]
    if aggregator.role == "leader":
        routes += [Route("/tasks/{task}/reports", handler(upload), methods=["PUT"]),
                   Route("/tasks/{task}/collections", handler(collection), methods=["POST"])]
    else:
        routes += [Route("/tasks/{task}/aggregation_jobs/{job}", handler(aggregation_job), methods=["PUT"]),
                   Route("/tasks/{task}/aggregate_shares", handler(aggregate_share), methods=["POST"])]
    app = Starlette(routes=routes)
    app.state.aggregator = aggregator
    return app


def _request(method: str, url: str, body: bytes | None, token: str | None, content_type: str, timeout: float
             ) -> bytes:
    """One request; the body of a 2xx answer, :class:`AggregatorError` with the problem's code for a 4xx, or
    ``OSError`` for no answer or a 5xx (the caller retries)."""
    headers = {"Content-Type": content_type}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (the configured peer's URL)
            return bytes(resp.read())
    except urllib.error.HTTPError as exc:
        data = exc.read()
        try:
            doc = json.loads(data)
            code, title = str(doc["code"]), str(doc.get("title", ""))
        except (ValueError, KeyError, TypeError):
            if exc.code >= 500:  # no problem document: the server failed, a retry may do
                raise OSError(f"{url} answered {exc.code}") from None
            code, title = "invalid_message", data[:200].decode("utf-8", "replace")
        raise AggregatorError(f"{title} ({url} answered {exc.code})", code, exc.code) from None


class HelperClient:
    """The leader's way to the helper over HTTP (the :class:`~ldp.aggregators.leader.HelperPeer` protocol): each
    request retried ``attempts`` times, ``backoff`` seconds apart and doubling, when the helper does not answer or
    answers 5xx (its jobs are idempotent: a retry is the same request)."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0, attempts: int = 5, backoff: float = 0.5,
                 sleep: Any = time.sleep) -> None:
        self.url, self.token = url.rstrip("/"), token
        self.timeout, self.attempts, self.backoff, self.sleep = timeout, attempts, backoff, sleep

    def _call(self, method: str, path: str, body: bytes) -> bytes:
        wait = self.backoff
        for attempt in range(self.attempts):
            try:
                return _request(method, self.url + path, body, self.token, "application/octet-stream",
                                self.timeout)
            except OSError as exc:
                if attempt == self.attempts - 1:
                    raise AggregatorError(f"the helper at {self.url} did not answer ({exc})", "helper_unavailable",
                                          502) from None
                self.sleep(wait)
                wait *= 2
        raise AssertionError("unreachable")

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        return self._call("PUT", f"/tasks/{b64(task_id)}/aggregation_jobs/{job_id}", body)

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes:
        return self._call("POST", f"/tasks/{b64(task_id)}/aggregate_shares", body)


class LeaderClient:
    """What devices and the collector send the leader: :meth:`upload` a DAP report, :meth:`collect` a window."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 300.0) -> None:
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout

    def hpke_config(self, url: str | None = None) -> bytes:
        """An aggregator's HpkeConfigList (the leader's, or at ``url``)."""
        return _request("GET", (url or self.url).rstrip("/") + "/hpke_config", None, None, HPKE_CONFIG_LIST,
                        self.timeout)

    def upload(self, task_id: bytes, report: bytes) -> None:
        _request("PUT", f"{self.url}/tasks/{b64(task_id)}/reports", report, None, DAP_REPORT, self.timeout)

    def collect(self, task_id: bytes, window: int) -> dict[str, Any]:
        out = json.loads(_request("POST", f"{self.url}/tasks/{b64(task_id)}/collections",
                                  json.dumps({"window": window}).encode(), self.token, "application/json",
                                  self.timeout))
        if not isinstance(out, dict):
            raise AggregatorError("the leader's collection is not a JSON object", "invalid_message", 502)
        return out

    def status(self) -> dict[str, Any]:
        out = json.loads(_request("GET", f"{self.url}/status", None, self.token, "application/json", self.timeout))
        return out if isinstance(out, dict) else {}
