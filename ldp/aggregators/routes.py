"""Each aggregator role's routes (Starlette), on the services' layer (:mod:`ldp.web`; issue 83, item 2).

:func:`create_app` is :func:`ldp.web.app.service_app` with these routes: the bearer tokens read by the layer's one
parser (the scheme case-insensitive) and compared by their SHA-256 in constant time, each request body under the
layer's one limit (413 before more is read: :data:`MAX_REPORT` for a report, :data:`MAX_BODY` for an aggregation
job, :data:`MAX_REQUEST` for the small JSON and share requests), and every refusal a problem document — an
:class:`~ldp.errors.AggregatorError` with DAP's type for its code (``urn:ietf:params:ppm:dap:error:<code>``, DAP-09
§3.2), a 401 with its ``WWW-Authenticate`` challenge; the layer's 404, 405 and 413 as ``about:blank``. An upload
whose ``Content-Type`` is not DAP's :data:`DAP_REPORT` is refused before its body is read (415, ``invalid_message``:
:meth:`_Routes.upload`). The route table is :mod:`ldp.aggregators.http`'s.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ldp.aggregators import collection_jobs
from ldp.aggregators.cors import AggregatorApp
from ldp.aggregators.jobs import MAX_JOB_BYTES
from ldp.aggregators.messages import ABANDONED_HEADER, MEDIA_TYPES, SHARE_REMOVED, ReportError
from ldp.aggregators.task import b64, unb64
from ldp.errors import AggregatorError
from ldp.web.app import service_app
from ldp.web.auth import CHALLENGE, DAP_AUTH_TOKEN, holds
from ldp.web.body import read_body
from ldp.web.pages import SECURITY_HEADERS
from ldp.web.problems import problem

__all__ = ["create_app", "media_type", "refusal", "upload_refusal", "task_of", "DAP_REPORT", "HPKE_CONFIG_LIST",
           "MAX_BODY", "MAX_REPORT", "MAX_REQUEST"]

DAP_REPORT = MEDIA_TYPES["Report"]
"""DAP-09's media type of an uploaded report (§4.4.2), as :data:`ldp.aggregators.http.DAP_REPORT` (what
:class:`~ldp.aggregators.http.LeaderClient` sends)."""
HPKE_CONFIG_LIST = MEDIA_TYPES["HpkeConfigList"]
"""DAP's HpkeConfigList (as :data:`ldp.aggregators.http.HPKE_CONFIG_LIST`, whose module imports this one only inside
``create_app``: the import graph has no cycle)."""
MAX_BODY = MAX_JOB_BYTES
"""An aggregation job's body (up to :data:`~ldp.aggregators.messages.MAX_JOB_REPORTS` prepared shares)."""
MAX_REPORT = 1 << 20
"""One DAP report."""
MAX_REQUEST = 4096
"""An aggregate share request, a collection's ``{"window": START}``."""


def refusal(exc: AggregatorError, named: str | None) -> Response:
    """An :class:`AggregatorError`'s answer: its problem document with DAP's type and, when the request names a task
    (``named``: its path's, or ``/hpke_config``'s ``task_id``), DAP-09's ``taskid`` (§3.2; a DAP client reads it:
    divviup-ts fails on a DAP problem without it); a 401 with the bearer challenge."""
    headers = {"WWW-Authenticate": CHALLENGE} if exc.status == 401 else None
    try:
        task_id = b64(unb64(named, 32, "task ID")) if named else None
    except ValueError:
        task_id = None  # no task ID at all: nothing to name
    return problem(exc.status, exc.code, str(exc), dap=True, headers=headers, task_id=task_id)


def _refusal(request: Request, exc: Exception) -> Response:
    """The layer's handler of :class:`AggregatorError`: :func:`refusal`, naming the request's task."""
    assert isinstance(exc, AggregatorError)
    return refusal(exc, request.path_params.get("task") or request.query_params.get("task_id"))


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value, lower case, its parameters dropped (RFC 9110 §8.3.1: the type and
    subtype are case-insensitive, the parameters follow a ``;``; DAP's media types define none); ``""`` for none."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def _expect(request: Request, message: str) -> None:
    """A request whose ``Content-Type`` is not ``message``'s DAP-09 media type is refused before its body is read
    (415, ``invalid_message``, as an upload's: :meth:`_Routes.upload`)."""
    want = MEDIA_TYPES[message]
    if media_type(request.headers.get("content-type")) != want:
        raise AggregatorError(f"the body of this route is DAP-09's {message}, sent as Content-Type: {want} (§9.5)",
                              "invalid_message", 415)


def upload_refusal(leader: Any, task_id: bytes, content_type: str | None) -> AggregatorError | None:
    """The refusal of an upload by its ``Content-Type`` (:meth:`_Routes.upload`), counted in the task's door counter;
    ``None`` for DAP's :data:`DAP_REPORT`. ``unrecognized_task`` (raised) for a task ``leader`` does not hold."""
    if media_type(content_type) == DAP_REPORT:
        return None
    state = leader.task_state(task_id)
    state.door[ReportError.invalid_message.code] += 1
    return AggregatorError(f"a report is uploaded as Content-Type: {DAP_REPORT} (DAP-09 §4.4.2)",
                           ReportError.invalid_message.code, 415)


def task_of(named: str) -> bytes:
    """The task ID a path names (base64url); ``unrecognized_task`` (404) for one that is none."""
    try:
        return unb64(named, 32, "task ID")
    except ValueError as exc:
        raise AggregatorError(str(exc), "unrecognized_task", 404) from None


def _task_id(request: Request) -> bytes:
    return task_of(request.path_params["task"])


class _Routes:
    """The handlers of one aggregator, with the token hashes each route takes."""

    def __init__(self, aggregator: Any, peer: str | None, collector: str | None, operator: str | None) -> None:
        self.aggregator, self.peer, self.collector, self.operator = aggregator, peer, collector, operator

    def require(self, request: Request, *hashes: str | None) -> None:
        if not holds(request.headers.get("authorization"), hashes, request.headers.get(DAP_AUTH_TOKEN)):
            raise AggregatorError("a bearer token is required (the peer's or the collector's)", "unauthorized", 401)

    async def hpke_config(self, request: Request) -> Response:
        """DAP-09's ``GET /hpke_config`` (§4.4.1): the aggregator's ``HpkeConfigList``; with the ``task_id`` query
        parameter (base64url), only for a task it holds (``unrecognized_task`` otherwise, and ``invalid_message``
        for a task ID that is none). One key serves every task, so the parameter may be left out."""
        if "task_id" in request.query_params:
            try:
                tid = unb64(request.query_params["task_id"], 32, "task_id")
            except ValueError as exc:
                raise AggregatorError(str(exc), "invalid_message") from None
            self.aggregator.task_state(tid)
        return Response(self.aggregator.hpke_config_list(), media_type=HPKE_CONFIG_LIST)

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def status(self, request: Request) -> Response:
        self.require(request, self.peer, self.collector, self.operator)
        return JSONResponse(await run_in_threadpool(self.aggregator.status))

    async def page(self, request: Request) -> Response:
        from ldp.aggregators.dashboard import render

        self.require(request, self.peer, self.collector, self.operator)
        return HTMLResponse(render(await run_in_threadpool(self.aggregator.status)), headers=SECURITY_HEADERS)

    async def upload(self, request: Request) -> Response:
        """One DAP report at the leader's door (:meth:`~ldp.aggregators.leader.Leader.upload`): 201, or a refusal.

        The body's media type is checked before a byte of it is read: DAP-09 §4.4.2 has a device upload its
        ``Report`` as :data:`DAP_REPORT`, and any other ``Content-Type`` (or none; compared by :func:`media_type`)
        is refused with HTTP 415 (RFC 9110 §15.5.16: content in a format the target resource does not take for this
        method) and DAP's ``invalid_message`` (DAP-09 §3.2: a message that could not be parsed or otherwise was
        invalid; DAP has no code of its own for a media type, and a body declared as something else is no report to
        this route). It is counted in the task's door counter (``refused_at_upload``) like every refused upload; for
        a task this leader does not hold the answer is ``unrecognized_task`` (404) instead."""
        tid = _task_id(request)
        if (refused := upload_refusal(self.aggregator, tid, request.headers.get("content-type"))) is not None:
            raise refused
        body, _ = await read_body(request, MAX_REPORT)
        await run_in_threadpool(self.aggregator.upload, tid, body)
        return Response(status_code=201)

    async def aggregation_job(self, request: Request) -> Response:
        """A job (the helper); a refusal of the whole job is counted by its code (``refused_jobs`` on
        ``/status``: the leader splits such a job until the reports at fault are alone, issue 84, item 2)."""
        return await self._job(request, "AggregationJobInitReq", self.aggregator.aggregation_job)

    async def continue_job(self, request: Request) -> Response:
        """DAP-09's ``POST`` of an ``AggregationJobContinueReq`` (the helper: Poplar1's second round, §4.5.2),
        checked and counted as a first round is (:meth:`aggregation_job`)."""
        return await self._job(request, "AggregationJobContinueReq", self.aggregator.aggregation_job_continue)

    async def _job(self, request: Request, message: str, handle: Any) -> Response:
        """A job's request of DAP-09 ``message`` (the leader's token, its media type, the job body's limit) given to
        ``handle(task ID, job ID, body)``; its ``AggregationJobResp``, or a refusal counted by its code."""
        self.require(request, self.peer)
        tid = _task_id(request)
        try:
            _expect(request, message)
            body, _ = await read_body(request, MAX_BODY)
            out = await run_in_threadpool(handle, tid, request.path_params["job"], body)
        except AggregatorError as exc:
            self.aggregator.refused_jobs[exc.code] += 1
            raise
        except HTTPException as exc:
            self.aggregator.refused_jobs["too_large" if exc.status_code == 413 else str(exc.status_code)] += 1
            raise
        return Response(out, media_type=MEDIA_TYPES["AggregationJobResp"])

    async def abandon_job(self, request: Request) -> Response:
        """``DELETE`` a job (the helper, :meth:`~ldp.aggregators.helper.Helper.abandon_job`): 204."""
        self.require(request, self.peer)
        tid = _task_id(request)
        await run_in_threadpool(self.aggregator.abandon_job, tid, request.path_params["job"])
        return Response(status_code=204, headers={ABANDONED_HEADER: SHARE_REMOVED})

    async def aggregate_share(self, request: Request) -> Response:
        self.require(request, self.peer)
        tid = _task_id(request)
        _expect(request, "AggregateShareReq")
        body, _ = await read_body(request, MAX_REQUEST)
        out = await run_in_threadpool(self.aggregator.aggregate_share, tid, body)
        return Response(out, media_type=MEDIA_TYPES["AggregateShare"])

    async def collection(self, request: Request) -> Response:
        self.require(request, self.collector)
        tid = _task_id(request)
        body, _ = await read_body(request, MAX_REQUEST)
        try:
            doc = json.loads(body)
            window, param = doc["window"], bytes.fromhex(doc.get("agg_param", ""))  # a Poplar1 level's parameter
        except (ValueError, KeyError, TypeError, AttributeError):
            raise AggregatorError('the body is {"window": START[, "agg_param": HEX]}', "invalid_message") from None
        if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window < 1 << 63:
            raise AggregatorError("window must be a non-negative integer (seconds)", "invalid_message")
        return JSONResponse(await run_in_threadpool(self.aggregator.collect, tid, window, param))

    async def create_collection_job(self, request: Request) -> Response:
        """DAP-09's ``PUT`` of a collection job (:func:`ldp.aggregators.collection_jobs.create_job`): 201."""
        self.require(request, self.collector)
        tid = _task_id(request)
        _expect(request, "CollectionReq")
        body, _ = await read_body(request, MAX_REQUEST)
        await run_in_threadpool(collection_jobs.create_job, self.aggregator, tid, request.path_params["job"], body)
        return Response(status_code=201)

    async def poll_collection_job(self, request: Request) -> Response:
        """DAP-09's ``POST`` of a collection job: 202 with ``Retry-After`` while its window is open, then 200 with
        the ``Collection`` (:func:`ldp.aggregators.collection_jobs.poll_job`)."""
        self.require(request, self.collector)
        tid = _task_id(request)
        await read_body(request, MAX_REQUEST)
        out, wait = await run_in_threadpool(collection_jobs.poll_job, self.aggregator, tid, request.path_params["job"])
        if out is None:
            return Response(status_code=202, headers={"Retry-After": str(wait)})
        return Response(out, media_type=MEDIA_TYPES["Collection"])

    async def delete_collection_job(self, request: Request) -> Response:
        self.require(request, self.collector)
        tid = _task_id(request)
        await run_in_threadpool(collection_jobs.delete_job, self.aggregator, tid, request.path_params["job"])
        return Response(status_code=204)

    async def put_back(self, request: Request) -> Response:
        """The leader's jobs set aside put back (the operator's token only): ``{"jobs": [ID, ...]}``, or ``{}`` for
        every one of the task (:meth:`~ldp.aggregators.leader.Leader.put_back`); the IDs put back, JSON."""
        self.require(request, self.operator)
        tid = _task_id(request)
        body, _ = await read_body(request, MAX_REQUEST)
        try:
            doc = json.loads(body or b"{}")
            jobs = doc.get("jobs") if isinstance(doc, dict) else False
        except ValueError:
            jobs = False
        if jobs is False or not (jobs is None or (isinstance(jobs, list) and all(isinstance(j, str) for j in jobs))):
            raise AggregatorError('the body is {"jobs": [JOB ID, ...]} or {} (every job set aside)', "invalid_message")
        try:
            done = await run_in_threadpool(self.aggregator.put_back, tid, jobs)
        except KeyError as exc:
            raise AggregatorError(str(exc.args[0]), "invalid_message") from None
        return JSONResponse({"put_back": done})


def routes(aggregator: Any, *, peer_token_sha256: str | None = None, collector_token_sha256: str | None = None,
           operator_token_sha256: str | None = None) -> list[Route]:
    """The routes of ``aggregator``'s role (:func:`create_app`)."""
    r = _Routes(aggregator, peer_token_sha256, collector_token_sha256, operator_token_sha256)
    both = [Route("/hpke_config", r.hpke_config, methods=["GET"]), Route("/healthz", r.healthz, methods=["GET"]),
            Route("/status", r.status, methods=["GET"]), Route("/", r.page, methods=["GET"])]
    if aggregator.role == "leader":
        return [*both, Route("/tasks/{task}/reports", r.upload, methods=["PUT"]),
                Route("/tasks/{task}/collections", r.collection, methods=["POST"]),
                Route("/tasks/{task}/collection_jobs/{job}", r.create_collection_job, methods=["PUT"]),
                Route("/tasks/{task}/collection_jobs/{job}", r.poll_collection_job, methods=["POST"]),
                Route("/tasks/{task}/collection_jobs/{job}", r.delete_collection_job, methods=["DELETE"]),
                Route("/tasks/{task}/jobs/put_back", r.put_back, methods=["POST"])]
    return [*both, Route("/tasks/{task}/aggregation_jobs/{job}", r.aggregation_job, methods=["PUT"]),
            Route("/tasks/{task}/aggregation_jobs/{job}", r.continue_job, methods=["POST"]),
            Route("/tasks/{task}/aggregation_jobs/{job}", r.abandon_job, methods=["DELETE"]),
            Route("/tasks/{task}/aggregate_shares", r.aggregate_share, methods=["POST"])]


def create_app(aggregator: Any, *, peer_token_sha256: str | None = None, collector_token_sha256: str | None = None,
               operator_token_sha256: str | None = None) -> Starlette:
    """The Starlette app of ``aggregator`` (a :class:`~ldp.aggregators.leader.Leader` or
    :class:`~ldp.aggregators.helper.Helper`): the helper's job routes take ``peer_token_sha256`` (the leader's
    token), the leader's collection route ``collector_token_sha256``; the status and its page also the
    operator's own ``operator_token_sha256``. Its two device routes answer web pages of any origin
    (:mod:`ldp.aggregators.cors`)."""
    app = service_app(routes(aggregator, peer_token_sha256=peer_token_sha256,
                             collector_token_sha256=collector_token_sha256,
                             operator_token_sha256=operator_token_sha256),
                      refusals={AggregatorError: _refusal}, cls=AggregatorApp)
    app.state.aggregator = aggregator
    return app
