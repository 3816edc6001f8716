"""The two-aggregator lane's upload (issue 87): each pending DAP report (:mod:`ldp.client.dap`) sent alone to its
task's leader, ``PUT {leader_url}/tasks/{task_id}/reports`` with ``Content-Type: application/dap-report`` (DAP-09
§4.4.2; no token: a leader takes reports from anyone), oldest first, under the call's deadline.

What each answer does with the report (the outbox row is deleted only once the leader has it, or never will):

* **201**: stored; acknowledged (``accepted``).
* **409** ``report_replayed``: stored before (an answer lost on the way back); acknowledged (``duplicates``).
* **400** with a code that no retry can change (:data:`GONE`: the report is malformed for the task, too old, its
  window already collected, sealed to a key the aggregator no longer has, or does not open): acknowledged and
  counted in ``rejected`` by code, logged as a warning; a DAP-09 leader of another implementation answers the same
  cases with a problem type (``reportRejected``, ``outdatedConfig``, ``invalidMessage``), taken alike.
* **400** ``report_too_early`` (``reportTooEarly``): the device's clock is ahead of the leader's; kept for a later
  call, and the lane goes on with the next report.
* no answer by the request's deadline, a connection error, 408, 429 or 5xx: tried again after ``Retry-After`` or a
  backoff with full jitter (:func:`~ldp.client.uploader.backoff_delay`), ``max_attempts`` tries a report; then
  :class:`~ldp.errors.UploadError`, the report kept.
* anything else (401, 404 ``unrecognized_task``, 415, …): :class:`~ldp.errors.UploadError`, the report kept: the
  task or the leader's URL is wrong, and every report would fail alike.

Nothing logged holds a report's bytes: only counts, codes, statuses and the leader's host. Standard library only.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ldp.client.dap import parse_dap_line
from ldp.client.transport import Answer, Opener, post
from ldp.client.uploader import _retryable, backoff_delay, parse_retry_after
from ldp.errors import UploadError

__all__ = ["DAP_MEDIA_TYPE", "GONE", "LATER", "DapLane", "refusal_code", "upload_dap"]

logger = logging.getLogger(__name__)

DAP_MEDIA_TYPE = "application/dap-report"
GONE = frozenset({"invalid_message", "report_too_late", "batch_collected", "hpke_unknown_config_id",
                  "hpke_decrypt_error", "report_rejected", "outdated_config", "vdaf_invalid"})
"""Refusal codes after which no retry can make the leader store the report: it is deleted and counted."""
LATER = frozenset({"report_too_early"})
"""Refusal codes after which the report waits for a later call."""
_MAX_ANSWER = 1 << 14
_DAP_TYPE = "urn:ietf:params:ppm:dap:error:"


def refusal_code(answer: Answer) -> str | None:
    """The refusal code of a leader's problem document: ``ldp``'s ``code``, else DAP's problem ``type`` in snake
    case (``reportTooEarly``: ``report_too_early``); ``None`` when the body says neither."""
    try:
        data = json.loads(answer.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    code = data.get("code")
    if isinstance(code, str) and re.fullmatch(r"[a-z_]{1,40}", code):
        return code
    kind = data.get("type")
    if isinstance(kind, str) and kind.startswith(_DAP_TYPE) and re.fullmatch(r"[A-Za-z]{1,40}", kind[len(_DAP_TYPE):]):
        return re.sub(r"(?<!^)([A-Z])", r"_\1", kind[len(_DAP_TYPE):]).lower()
    return None


@dataclass
class DapLane:
    """What :func:`upload_dap` needs of a client: its pending two-aggregator reports (``pending(limit)``: ``(id,
    metric, line)`` oldest first), their acknowledgement (``acknowledge(ids)``), each metric's leader URL, and when
    its ingest lane may upload next (for the result of a failed call)."""

    pending: Callable[[int], list[tuple[int, str, str]]]
    acknowledge: Callable[[list[int]], int]
    leaders: Mapping[str, str]
    next_upload_at: Callable[[], float]


class _Failed(NamedTuple):
    """A report the leader refused, or that could not be delivered: what :class:`~ldp.errors.UploadError` says."""

    message: str
    status: int | None
    reason: str


def upload_dap(lane: DapLane, tally: Any, *, timeout: float, call_end: float, max_attempts: int, max_delay: float,
               opener: Opener, sleep: Callable[[float], None], clock: Callable[[], float]) -> str | None:
    """Send the lane's reports (module docstring) until none is left or ``call_end`` (``time.monotonic``) passes;
    each answer counted into ``tally`` (the upload call's :class:`~ldp.client.uploader._Tally`). Returns
    ``"deadline"`` when the call's time ran out, else ``None``; raises :class:`~ldp.errors.UploadError`."""
    skip: set[int] = set()  # reports kept for a later call (too early, or a metric without its task now)
    while True:
        batch = [row for row in lane.pending(len(skip) + 64) if row[0] not in skip]
        if not batch:
            return None
        for outbox_id, metric, line in batch:
            if time.monotonic() >= call_end:
                return "deadline"
            leader = lane.leaders.get(metric)
            if leader is None:
                logger.info("a pending report of %r waits: no task was given for it", metric)
                skip.add(outbox_id)
                continue
            task_id, report = parse_dap_line(line)
            url = f"{leader.rstrip('/')}/tasks/{task_id}/reports"
            done = _send(url, report, timeout, call_end, max_attempts, max_delay, opener, sleep, clock)
            if isinstance(done, _Failed):
                logger.warning("upload stopped: %s", done.message)
                raise UploadError(done.message, status=done.status, reason=done.reason,
                                  result=tally.result("error", lane.next_upload_at()))
            if done is None:
                return "deadline"
            if done == "later":
                skip.add(outbox_id)
                continue
            acknowledged = lane.acknowledge([outbox_id])
            tally.batches += 1
            tally.acknowledged += acknowledged
            if done == "stored":
                tally.accepted += 1
            elif done == "replayed":
                tally.duplicates += 1
            else:
                tally.rejected[done] = tally.rejected.get(done, 0) + 1


def _send(url: str, report: bytes, timeout: float, call_end: float, max_attempts: int, max_delay: float,
          opener: Opener, sleep: Callable[[float], None], clock: Callable[[], float]) -> str | _Failed | None:
    """One report to its leader: ``"stored"``, ``"replayed"``, ``"later"``, a code of :data:`GONE`, ``None`` (the
    call's deadline passed), or why it failed (:class:`_Failed`)."""
    host = urllib.parse.urlsplit(url).netloc
    headers = {"Content-Type": DAP_MEDIA_TYPE, "Accept": "application/problem+json, application/json"}
    for attempt in range(1, max_attempts + 1):
        answer = post(opener, url, headers, report, min(time.monotonic() + timeout, call_end), _MAX_ANSWER,
                      method="PUT")
        status, code = answer.status, refusal_code(answer)
        logger.debug("DAP upload to %s: %s", host, status or answer.error)
        if status is not None and 200 <= status < 300:
            return "stored"
        if status == 409 and code == "report_replayed":
            return "replayed"
        if status == 400 and code in GONE:
            logger.warning("the leader %s refused a report for good (%s): deleted", host, code)
            return str(code)
        if status == 400 and code in LATER:
            logger.info("the leader %s refused a report as %s: kept for a later upload", host, code)
            return "later"
        if not _retryable(status):
            return _Failed(f"the leader {host} refused a report with HTTP {status} ({code or answer.reason()})",
                           status, code or answer.reason())
        if attempt == max_attempts:
            return _Failed(f"a report was not delivered to the leader {host} after {max_attempts} attempt(s) (last: "
                           f"{status or answer.error})", status, answer.reason())
        wait = parse_retry_after(answer.retry_after, clock()) if status in (429, 503) else None
        delay = min(max_delay, wait) if wait is not None else backoff_delay(attempt, max_delay)
        if not math.isfinite(call_end) or time.monotonic() + delay < call_end:
            logger.info("DAP upload to %s: %s; retrying in %.3g s", host, status or answer.error, delay)
            sleep(delay)
        else:
            return None
    return None
