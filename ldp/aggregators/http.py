"""The aggregators over HTTP (issue 71, item 3): each role's routes, the leader's client of the helper, and the
collector's client of the leader. The routes are :mod:`ldp.aggregators.routes`' (Starlette, on the services' layer
:mod:`ldp.web`), imported by :func:`create_app` only: the clients need no HTTP server stack.

Routes, DAP-09's (§4.3–4.7; the task ID base64url in the path) and this project's own:

=======================================================  ==========  =================================================
``GET /hpke_config``                                      both        DAP's HpkeConfigList (``application/dap-hpke-
                                                                      config-list``): devices seal to it
``PUT /tasks/{task}/reports``                             leader      one DAP report (``application/dap-report``):
                                                                      201, or a refusal with its code
``PUT /tasks/{task}/aggregation_jobs/{job}``              helper      an aggregation job (leader's token)
``POST /tasks/{task}/aggregation_jobs/{job}``             helper      a Poplar1 job's second round (leader's token)
``DELETE /tasks/{task}/aggregation_jobs/{job}``           helper      abandon a job (leader's token; this project's)
``POST /tasks/{task}/aggregate_shares``                   helper      the helper's share of a window (leader's token)
``PUT|POST|DELETE /tasks/{task}/collection_jobs/{job}``   leader      a collection job: created, polled (202, then
                                                                      the Collection), deleted (collector's token)
``POST /tasks/{task}/collections``                        leader      ``{"window": START}``: the window's sealed shares
                                                                      (collector's token), JSON (this project's)
``POST /tasks/{task}/jobs/put_back``                      leader      jobs set aside tried again (operator's token)
``GET /status``                                           both        the counts (refusals by code, windows,
                                                                      releases and central ε), JSON (the
                                                                      operator's, the peer's or the collector's
                                                                      token)
``GET /``                                                 both        the same as a page (:mod:`~ldp.aggregators.
                                                                      dashboard`)
``GET /healthz``                                          both        ``ok``
=======================================================  ==========  =================================================

Every refusal is the services' problem document (RFC 9457, :mod:`ldp.web.problems`), ``application/problem+json``:
an aggregator's refusal has DAP-09's type for its code where one fits (``urn:ietf:params:ppm:dap:error:<type>``,
§3.2; :data:`ldp.web.problems.DAP_TYPES`) and its ``code`` (a peer's document without one is read by its type);
a path with no route (404), a method the route does not take (405, with ``Allow``) and a body over its route's
limit (413, ``too_large``) are ``about:blank`` with their code. Tokens are bearer tokens (``Authorization: Bearer``,
the scheme in any case, RFC 9110 §11.1), compared by their SHA-256 in constant time; the peer and the collector hold
different ones. A helper that does not answer, or answers 5xx without a DAP refusal, is retried by
:class:`HelperClient` with the same request (jobs are idempotent), then reported as ``helper_unavailable``.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from typing import Any

from ldp.aggregators.codec import MEDIA_TYPES, Interval
from ldp.aggregators.collection_messages import COLLECTION_JOB_ID_SIZE, CollectionReq
from ldp.aggregators.messages import ABANDONED_HEADER, SHARE_REMOVED
from ldp.aggregators.task import b64
from ldp.errors import AggregatorError
from ldp.web.auth import DAP_AUTH_TOKEN
from ldp.web.problems import DAP_ERROR, PROBLEM, STATUS_CODES, code_of

__all__ = ["create_app", "HelperClient", "LeaderClient", "DAP_REPORT", "HPKE_CONFIG_LIST", "PROBLEM"]

DAP_REPORT = "application/dap-report"
HPKE_CONFIG_LIST = "application/dap-hpke-config-list"


def create_app(aggregator: Any, *, peer_token_sha256: str | None = None, collector_token_sha256: str | None = None,
               operator_token_sha256: str | None = None) -> Any:
    """The Starlette app of ``aggregator`` (a :class:`~ldp.aggregators.leader.Leader` or
    :class:`~ldp.aggregators.helper.Helper`): :func:`ldp.aggregators.routes.create_app`."""
    from ldp.aggregators.routes import create_app as routes_app

    return routes_app(aggregator, peer_token_sha256=peer_token_sha256, collector_token_sha256=collector_token_sha256,
                      operator_token_sha256=operator_token_sha256)


def _request(method: str, url: str, body: bytes | None, token: str | None, content_type: str, timeout: float
             ) -> bytes:
    """One request; the body of a 2xx answer (:func:`_exchange`)."""
    return _exchange(method, url, body, token, content_type, timeout)[1]


def _exchange(method: str, url: str, body: bytes | None, token: str | None, content_type: str, timeout: float,
              token_header: str = "authorization") -> tuple[int, bytes, Any]:
    """One request; the status, body and headers of a 2xx answer, :class:`AggregatorError` with the problem's code
    for a 4xx or a DAP refusal, or ``OSError`` for no answer or another 5xx (the caller retries: the server
    failed). The token goes as ``Authorization: Bearer``, or as ``DAP-Auth-Token`` (``token_header``)."""
    headers = {"Content-Type": content_type}
    if token and token_header == "dap-auth-token":
        headers[DAP_AUTH_TOKEN] = token
    elif token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (the configured peer's URL)
            return int(resp.status), bytes(resp.read()), resp.headers
    except urllib.error.HTTPError as exc:
        data = exc.read()
        try:
            doc = json.loads(data)
            code, detail = code_of(doc), str(doc.get("detail") or doc.get("title", ""))
            if code is None:
                raise KeyError("code")
            # a refusal: DAP's type, or an aggregator's own code (helper_unavailable), not a server's failure
            refusal = str(doc.get("type", "")).startswith(DAP_ERROR) or code not in (*STATUS_CODES.values(), "internal")
        except (ValueError, KeyError, TypeError, AttributeError):
            code, detail, refusal = "invalid_message", data[:200].decode("utf-8", "replace"), False
        if exc.code >= 500 and not refusal:  # the server failed (not a refusal of this request): a retry may do
            raise OSError(f"{url} answered {exc.code}") from None
        raise AggregatorError(f"{detail} ({url} answered {exc.code})", code, exc.code) from None


class HelperClient:
    """The leader's way to the helper over HTTP (the :class:`~ldp.aggregators.leader.HelperPeer` protocol): each
    request retried ``attempts`` times, ``backoff`` seconds apart and doubling, when the helper does not answer or
    answers 5xx (its jobs are idempotent: a retry is the same request)."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0, attempts: int = 5, backoff: float = 0.5,
                 sleep: Any = time.sleep, token_header: str = "authorization") -> None:
        self.url, self.token, self.token_header = url.rstrip("/"), token, token_header
        self.timeout, self.attempts, self.backoff, self.sleep = timeout, attempts, backoff, sleep

    def _call(self, method: str, path: str, body: bytes, content_type: str = "application/octet-stream") -> bytes:
        return self._exchange(method, path, body, content_type)[1]

    def _exchange(self, method: str, path: str, body: bytes, content_type: str) -> tuple[int, bytes, Any]:
        wait = self.backoff
        for attempt in range(self.attempts):
            try:
                return _exchange(method, self.url + path, body, self.token, content_type, self.timeout,
                                 self.token_header)
            except OSError as exc:
                if attempt == self.attempts - 1:
                    raise AggregatorError(f"the helper at {self.url} did not answer ({exc})", "helper_unavailable",
                                          502) from None
                self.sleep(wait)
                wait *= 2
        raise AssertionError("unreachable")

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        return self._call("PUT", f"/tasks/{b64(task_id)}/aggregation_jobs/{job_id}", body,
                          MEDIA_TYPES["AggregationJobInitReq"])

    def aggregation_job_continue(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        """DAP-09's ``POST`` of an ``AggregationJobContinueReq`` (Poplar1's second round)."""
        return self._call("POST", f"/tasks/{b64(task_id)}/aggregation_jobs/{job_id}", body,
                          MEDIA_TYPES["AggregationJobContinueReq"])

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes:
        return self._call("POST", f"/tasks/{b64(task_id)}/aggregate_shares", body, MEDIA_TYPES["AggregateShareReq"])

    def abandon_job(self, task_id: bytes, job_id: str) -> bool:
        """``DELETE`` a job at the helper; whether the helper says it took the job's share out of its window
        (:data:`SHARE_REMOVED`: an ``ldp`` helper does; DAP-09's DELETE only discards a job's state)."""
        _, _, headers = self._exchange("DELETE", f"/tasks/{b64(task_id)}/aggregation_jobs/{job_id}", b"",
                                       "application/octet-stream")
        return str(headers.get(ABANDONED_HEADER, "")).strip().lower() == SHARE_REMOVED


class LeaderClient:
    """What devices and the collector send the leader: :meth:`upload` a DAP report, :meth:`collect` a window. A
    leader that does not answer (nothing listens, a timeout, a 5xx that is no refusal) is a ``ConnectionError``
    naming its URL; a refusal an :class:`~ldp.errors.AggregatorError` with its code."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 300.0,
                 token_header: str = "authorization", wait: float = 60.0, sleep: Any = time.sleep,
                 clock: Any = time.monotonic) -> None:
        self.url, self.token, self.timeout, self.token_header = url.rstrip("/"), token, timeout, token_header
        self.wait, self.sleep, self.clock = wait, sleep, clock

    def _call(self, method: str, url: str, body: bytes | None, token: str | None, content_type: str) -> bytes:
        return self._exchange(method, url, body, token, content_type)[1]

    def _exchange(self, method: str, url: str, body: bytes | None, token: str | None, content_type: str
                  ) -> tuple[int, bytes, Any]:
        try:
            return _exchange(method, url, body, token, content_type, self.timeout, self.token_header)
        except OSError as exc:
            who = f"the leader at {self.url}" if url.startswith(self.url + "/") else url
            reason = getattr(exc, "reason", None) or exc
            raise ConnectionError(f"{who} did not answer ({method} {url}): {reason}") from None

    def hpke_config(self, url: str | None = None) -> bytes:
        """An aggregator's HpkeConfigList (the leader's, or at ``url``)."""
        return self._call("GET", (url or self.url).rstrip("/") + "/hpke_config", None, None, HPKE_CONFIG_LIST)

    def upload(self, task_id: bytes, report: bytes) -> None:
        self._call("PUT", f"{self.url}/tasks/{b64(task_id)}/reports", report, None, DAP_REPORT)

    def collect(self, task_id: bytes, window: int, window_seconds: int, agg_param: bytes = b"") -> bytes:
        """DAP-09's collection flow (§4.7) for one window: a collection job created (``PUT`` of a
        ``CollectionReq``, with ``agg_param``: a Poplar1 level's parameter) and polled (``POST``) while the leader
        answers 202, each poll after its ``Retry-After`` (1 s when it names none), for at most ``wait`` seconds in
        all; the encoded ``Collection``. A leader that asks to wait past that (an ``ldp`` leader whose window has
        not ended names the time left) is ``window_open`` at once."""
        url = f"{self.url}/tasks/{b64(task_id)}/collection_jobs/{b64(secrets.token_bytes(COLLECTION_JOB_ID_SIZE))}"
        self._call("PUT", url, CollectionReq(Interval(window, window_seconds), agg_param).to_bytes(), self.token,
                   MEDIA_TYPES["CollectionReq"])
        deadline = self.clock() + self.wait
        while True:
            status, body, headers = self._exchange("POST", url, b"", self.token, "application/octet-stream")
            if status != 202:
                return body
            retry = _retry_after(headers.get("Retry-After"))
            if self.clock() + retry > deadline:
                raise AggregatorError(f"window {window} is not released yet: the leader asks to poll again in "
                                      f"{headers.get('Retry-After', '?')} s, past this collector's wait of "
                                      f"{self.wait:g} s (an ldp leader releases a window once, after its end)",
                                      "window_open", 400)
            self.sleep(retry)

    def collect_json(self, task_id: bytes, window: int, agg_param: bytes = b"") -> dict[str, Any]:
        """This project's own collection route (``POST /tasks/{task}/collections``, JSON): the same release, with
        the leader's figures; ``agg_param``: a Poplar1 level's parameter."""
        doc: dict[str, Any] = {"window": window, **({"agg_param": agg_param.hex()} if agg_param else {})}
        out = json.loads(self._call("POST", f"{self.url}/tasks/{b64(task_id)}/collections",
                                    json.dumps(doc).encode(), self.token, "application/json"))
        if not isinstance(out, dict):
            raise AggregatorError("the leader's collection is not a JSON object", "invalid_message", 502)
        return out

    def status(self) -> dict[str, Any]:
        out = json.loads(self._call("GET", f"{self.url}/status", None, self.token, "application/json"))
        return out if isinstance(out, dict) else {}


def _retry_after(value: str | None) -> float:
    """A ``Retry-After`` in seconds (RFC 9110 §10.2.3: delay-seconds; an HTTP date or nothing counts as 1 s)."""
    try:
        return max(0.0, float(int(str(value).strip())))
    except ValueError:
        return 1.0
