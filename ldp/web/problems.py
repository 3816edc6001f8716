"""The one refusal of both HTTP services: an RFC 9457 problem document (``application/problem+json``).

Every refusal, whichever route or layer it comes from — a token refused, a body over its limit, a path with no route
(404), a method the route does not take (405, with ``Allow``), a service's own refusal, an unexpected error (500) —
is one JSON object::

    {"error": CODE, "detail": "...", "type": "...", "title": "...", "status": 404, "code": CODE}

* ``type`` (RFC 9457 §3.1.1): DAP-09's problem type ``urn:ietf:params:ppm:dap:error:<type>`` of an aggregator's
  refusal (§3.2 asks a DAP server for a problem document whose ``type`` is in the DAP URN namespace; the type of each
  code: :data:`DAP_TYPES`), else ``about:blank`` (§4.2.1: no meaning beyond the status code; the refusal's ``code``
  says which).
* ``title`` (§3.1.3): the same for every occurrence of a type — the HTTP status phrase for ``about:blank``
  (§4.2.1), the code in words for a DAP type. ``detail`` (§3.1.4): this occurrence, never a report's content nor a
  token. ``status`` (§3.1.2): the response's status code.
* ``taskid``: DAP-09's member (§3.2) naming, in base64url, the task an aggregator's refusal is about, when the
  request names one.
* ``code`` and ``error``, extension members (§3.2): the refusal's code (``unauthorized``, ``too_large``,
  ``report_replayed``, ...). ``code`` is what the aggregators' clients read (:mod:`ldp.aggregators.http`);
  ``error`` is what the devices' uploaders read since the first release (Python, TypeScript, Kotlin: the JSON
  ``error``), kept first so that the Rust uploader's reason — the body's first bytes — starts as it always did.

The exception handlers (:func:`exception_handlers`) answer Starlette's :class:`~starlette.exceptions.HTTPException`
(its 404 and 405 among them) and any unexpected exception with this document; a service adds its own exception
classes (``ldp serve``'s :class:`~ldp.errors.IngestError`, the aggregators' :class:`~ldp.errors.AggregatorError`).
Starlette is imported when an answer is made, not with this module: the clients of the aggregators
(:class:`~ldp.aggregators.http.LeaderClient`, ``ldp collect``) read the same names without an HTTP server stack.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

__all__ = ["PROBLEM", "DAP_ERROR", "DAP_TYPES", "DAP_CODES", "code_of", "ABOUT_BLANK", "STATUS_CODES",
           "problem_document", "problem", "code_for", "exception_handlers", "Handler"]

PROBLEM = "application/problem+json"
"""RFC 9457 §3's media type."""
DAP_ERROR = "urn:ietf:params:ppm:dap:error:"
"""DAP's problem types (DAP-09 §3.2), followed by the code."""
DAP_TYPES: Mapping[str, str] = {
    "invalid_message": "invalidMessage", "job_mismatch": "invalidMessage", "unrecognized_task": "unrecognizedTask",
    "missing_task_id": "missingTaskID", "job_abandoned": "unrecognizedAggregationJob",
    "hpke_unknown_config_id": "outdatedConfig", "report_rejected": "reportRejected",
    "report_replayed": "reportRejected", "hpke_decrypt_error": "reportRejected", "batch_collected": "reportRejected",
    "report_too_late": "reportRejected", "report_too_early": "reportTooEarly", "batch_invalid": "batchInvalid",
    "budget_exhausted": "batchInvalid", "window_open": "batchInvalid", "batch_too_small": "invalidBatchSize",
    "batch_queried_too_many_times": "batchQueriedTooManyTimes", "batch_mismatch": "batchMismatch",
    "unauthorized": "unauthorizedRequest", "batch_overlap": "batchOverlap", "step_mismatch": "stepMismatch"}
"""DAP-09's problem type (§3.2, Table 1) of each aggregator refusal that falls under one: the upload refusals DAP-09
has no type of their own for are its ``reportRejected`` (a config it no longer has, ``outdatedConfig``); a job ID
sent again with another request is an ``invalidMessage``; an abandoned job is no longer known
(``unrecognizedAggregationJob``); a batch that cannot be released (its window open, the central target spent) is a
``batchInvalid``. A refusal outside every DAP-09 type (a job set aside, a helper that does not answer, a collection
job this leader does not hold) has the type ``about:blank``; every refusal keeps this project's ``code``."""
DAP_CODES: Mapping[str, str] = {"invalidMessage": "invalid_message", "unrecognizedTask": "unrecognized_task",
                                "missingTaskID": "missing_task_id",
                                "unrecognizedAggregationJob": "unrecognized_aggregation_job",
                                "outdatedConfig": "hpke_unknown_config_id", "reportRejected": "report_rejected",
                                "reportTooEarly": "report_too_early", "batchInvalid": "batch_invalid",
                                "invalidBatchSize": "batch_too_small",
                                "batchQueriedTooManyTimes": "batch_queried_too_many_times",
                                "batchMismatch": "batch_mismatch", "unauthorizedRequest": "unauthorized",
                                "batchOverlap": "batch_overlap", "stepMismatch": "step_mismatch"}
"""The code this project reads a DAP-09 problem type as, for a peer whose documents carry no ``code`` (another
implementation)."""
ABOUT_BLANK = "about:blank"
"""RFC 9457 §4.2.1: a problem with no more specific type; its title is the HTTP status phrase."""
STATUS_CODES: Mapping[int, str] = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                                   405: "method_not_allowed", 408: "body_timeout", 413: "too_large",
                                   415: "unsupported_media_type", 429: "busy", 500: "internal", 503: "unavailable"}
"""The code of a refusal that only has a status (an :class:`~starlette.exceptions.HTTPException`): the ingest
service's own words where it has them (``too_large``, ``busy``, ``body_timeout``)."""

Handler = Callable[["Request", Any], "Response"]
"""An exception handler: the request and the exception, the problem document to answer."""
logger = logging.getLogger(__name__)


def code_for(status: int) -> str:
    """:data:`STATUS_CODES`'s code for ``status``, else the status phrase in snake case (``internal`` unknown)."""
    if status in STATUS_CODES:
        return STATUS_CODES[status]
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "internal"


_RFC_9110_PHRASES = {413: "Content Too Large", 416: "Range Not Satisfiable", 422: "Unprocessable Content"}
"""RFC 9110's phrases where Python's :class:`~http.HTTPStatus` (before 3.13) has the older ones."""


def _phrase(status: int) -> str:
    """RFC 9110 §15's phrase of ``status`` (RFC 9457 §4.2.1: the title of an ``about:blank`` problem)."""
    if status in _RFC_9110_PHRASES:
        return _RFC_9110_PHRASES[status]
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem_document(status: int, code: str, detail: str, *, dap: bool = False) -> dict[str, Any]:
    """The document (module docstring): ``dap`` gives it DAP-09's type for ``code`` (:data:`DAP_TYPES`), where
    there is one; else ``about:blank``."""
    dap_type = DAP_TYPES.get(code) if dap else None
    title = code.replace("_", " ").capitalize() if dap_type else _phrase(status)
    return {"error": code, "detail": detail, "type": DAP_ERROR + dap_type if dap_type else ABOUT_BLANK,
            "title": title, "status": status, "code": code}


def code_of(doc: Mapping[str, Any]) -> str | None:
    """A problem document's refusal code: its ``code``, else the code of its DAP-09 type (:data:`DAP_CODES`: a
    peer of another implementation), else ``None``."""
    if isinstance(doc.get("code"), str):
        return str(doc["code"])
    kind = str(doc.get("type", ""))
    return DAP_CODES.get(kind.removeprefix(DAP_ERROR)) if kind.startswith(DAP_ERROR) else None


def problem(status: int, code: str, detail: str, *, dap: bool = False,
            headers: Mapping[str, str] | None = None, task_id: str | None = None) -> JSONResponse:
    """The answer: :func:`problem_document` as ``application/problem+json`` with ``status`` and ``headers``; with
    ``task_id`` (base64url), DAP-09's ``taskid`` member (§3.2: the task a DAP refusal is about)."""
    from starlette.responses import JSONResponse

    doc = problem_document(status, code, detail, dap=dap)
    if task_id is not None:
        doc["taskid"] = task_id
    return JSONResponse(doc, status_code=status, headers=dict(headers) if headers else None, media_type=PROBLEM)


_DETAILS = {404: "nothing is served at this path", 405: "this path takes other methods (Allow)"}


def _http_exception(request: Request, exc: Any) -> Response:
    """Starlette's :class:`HTTPException`: the routing's 404 and 405 (``Allow`` kept), and a route's own."""
    from starlette.exceptions import HTTPException

    assert isinstance(exc, HTTPException)
    status = exc.status_code
    detail = exc.detail if exc.detail and exc.detail != _phrase(status) else _DETAILS.get(status, _phrase(status))
    if status == 405 and exc.headers and "Allow" in exc.headers:
        detail = f"this path takes {exc.headers['Allow']}"
    return problem(status, code_for(status), detail, headers=exc.headers)


def _internal(request: Request, exc: Exception) -> Response:
    """Any other exception: a 500 problem document. Logged with its class only (its message could quote a body);
    Starlette's error middleware raises it on after the answer, for the server to log as it does."""
    logger.error("internal error on %s %s (%s)", request.method, request.url.path, type(exc).__name__)
    return problem(500, "internal", "the service failed on this request")


def _disconnected(request: Request, exc: Exception) -> Response:
    """The client went away before the end of its body: nobody reads the answer, but it is one like the others."""
    return problem(400, "client_disconnected", "the client went away before the end of the body")


def exception_handlers(refusals: Mapping[type[Exception], Handler] | None = None) -> dict[Any, Handler]:
    """Starlette's ``exception_handlers``: :class:`HTTPException`, a client gone mid-body and any other exception
    (500) as problem documents, and a service's own ``refusals`` (its exception classes, each with its handler)."""
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect

    return {HTTPException: _http_exception, ClientDisconnect: _disconnected, **(refusals or {}), Exception: _internal}
