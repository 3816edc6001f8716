"""The client's uploader: ``TelemetryClient.upload`` sends the outbox to an ``ldp serve`` collector.

Standard library only (urllib); nothing of :mod:`ldp.client.runtime` is imported. The state side is the
pinned batch in the client's state file (table ``ldp_client_batch``), reached through the client's batch
methods (:class:`Outbox`: ``next_batch``, ``split_batch``, ``acknowledge_batch``); the HTTP side is one
``POST /v1/reports`` per batch part (:mod:`ldp.client.transport`: each request ends by its deadline), with

* ``Authorization: Bearer <token>``, ``Content-Type: application/x-ndjson``, ``Ldp-Batch-Id``, and
  ``Content-Encoding: gzip`` (``mtime`` 0: the body carries no timestamp) unless ``gzip=False``;
* a 2xx whose JSON is a sane answer for the part (:func:`check_answer`: its batch id, counts that add up
  to the lines sent) acknowledges it; any other 2xx raises :class:`UploadProtocolError`, acknowledging
  nothing; 413 splits the part in two (nothing was stored); 429/503 wait ``Retry-After`` (delta-seconds
  or HTTP date, capped at ``max_delay``); no answer by the request's deadline (``timeout``), connection
  errors, 408 and other 5xx retry with exponential backoff and full jitter (base 1 s, capped at
  ``max_delay``), ``max_attempts`` tries per part in all; any other status raises :class:`UploadError`.
  Redirects are refused (they would carry the token elsewhere).
* ``call_timeout`` bounds the whole call: no request, wait or retry goes past it; the parts not sent by
  then stay in the outbox (the one in flight stays pinned), and the result says ``stopped="deadline"``.

Nothing here logs a report line or the token: only counts, statuses, batch ids and the host.
"""

from __future__ import annotations

import datetime
import email.utils
import gzip as gzip_module
import hashlib
import hmac
import logging
import math
import random
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ldp.client.answer import _show, check_answer
from ldp.client.transport import Answer, Opener, default_opener, post
from ldp.errors import UploadError, UploadProtocolError

__all__ = ["UploadError", "UploadProtocolError", "UploadResult", "Opener", "Outbox", "batch_id",
           "parse_retry_after", "backoff_delay", "check_answer", "default_opener", "upload", "BATCH_ID_CHARS",
           "MAX_ANSWER"]

logger = logging.getLogger(__name__)

BATCH_ID_CHARS = 32
MAX_ANSWER = 1 << 16
"""Bytes of an ingest service's answer read at most: a longer 2xx is a protocol error (a sane one is under 1 KiB)."""
_BATCH_TAG = b"ldp/client/batch-id/v1\x00"
_WAIT = frozenset({429, 503})
_RNG = random.SystemRandom()
_Stopped = Literal["empty", "interval", "deadline", "error"]


@dataclass(frozen=True)
class UploadResult:
    """What one ``upload`` call did. ``acknowledged``: outbox items deleted; ``accepted`` and
    ``rejected`` (by reason): the server's counts summed over its answers (a duplicate answer repeats
    the first answer's counts); ``duplicates``: parts the server had already stored; ``stopped``:
    ``"empty"`` (nothing left), ``"interval"`` (the rest waits until ``next_upload_at``) or
    ``"deadline"`` (``call_timeout`` passed: the rest stays in the outbox), and ``"error"`` in the
    ``result`` of an :class:`UploadError`."""

    batches: int = 0
    acknowledged: int = 0
    accepted: int = 0
    rejected: Mapping[str, int] = field(default_factory=dict)
    duplicates: int = 0
    stopped: _Stopped = "empty"
    next_upload_at: float = float("-inf")

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


class Item(Protocol):
    """An outbox entry (:class:`~ldp.client.PendingItem`): its local ``id`` and the ``line`` to upload."""

    @property
    def id(self) -> int: ...

    @property
    def line(self) -> str: ...


class Outbox(Protocol):
    """What ``upload`` needs of a :class:`~ldp.client.TelemetryClient`: its batches, pinned in the state file."""

    def next_batch(self, limit: int | None = None) -> tuple[str, Sequence[Item]] | None: ...

    def split_batch(self, batch: str) -> int: ...

    def acknowledge_batch(self, batch: str, ids: list[int]) -> int: ...

    def has_pending(self) -> bool: ...

    def next_upload_at(self) -> float: ...


def batch_id(salt: bytes, ids: Sequence[int], lines: Sequence[str]) -> str:
    """``HMAC-SHA256(salt, tag || outbox ids || lines joined by "\\n")`` as hex, first 32 digits.

    Keyed with the device's random salt, so ids of two batches cannot be linked to each other or to
    their contents, and two devices sending identical lines get different ids. The outbox ids (local,
    never reused, never sent) make two batches of one device with identical lines differ too."""
    msg = _BATCH_TAG + ",".join(map(str, ids)).encode("ascii") + b"\x00" + "\n".join(lines).encode("utf-8")
    return hmac.new(salt, msg, hashlib.sha256).hexdigest()[:BATCH_ID_CHARS]


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or an HTTP date), ``None`` if unusable.

    A date in the past gives 0."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": UTC without a named zone (RFC 5322)
        when = when.replace(tzinfo=datetime.UTC)
    try:
        return max(0.0, when.timestamp() - now)
    except (OverflowError, ValueError, OSError):
        return None


def _retryable(status: int | None) -> bool:
    """No answer, 408, 429 or 5xx: try again (after a delay)."""
    return status is None or status in (408, 429) or status >= 500


def backoff_delay(attempt: int, max_delay: float, rng: random.Random = _RNG) -> float:
    """Full jitter: uniform in ``[0, min(max_delay, 2 ** (attempt - 1))]`` seconds (attempt >= 1)."""
    return rng.uniform(0.0, min(max_delay, 2.0 ** min(attempt - 1, 1023)))


@dataclass
class _Tally:
    batches: int = 0
    acknowledged: int = 0
    accepted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0

    def result(self, stopped: _Stopped, next_at: float) -> UploadResult:
        return UploadResult(self.batches, self.acknowledged, self.accepted, dict(sorted(self.rejected.items())),
                            self.duplicates, stopped, next_at)

    def add(self, answer: dict[str, Any], acknowledged: int) -> None:
        """Count a sane answer (:func:`check_answer`)."""
        self.batches += 1
        self.acknowledged += acknowledged
        self.accepted += answer.get("accepted", 0)
        for reason, n in answer.get("rejected", {}).items():
            self.rejected[reason] = self.rejected.get(reason, 0) + n
        self.duplicates += answer.get("duplicate") is True


# -- the call -----------------------------------------------------------------------------------------------
def _seconds(value: object) -> bool:
    """A finite number of seconds > 0 (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return 0 < float(value) < math.inf
    except OverflowError:  # an int beyond any float
        return False


def _endpoints(url: str | Sequence[str]) -> list[str]:
    """The ingest service endpoints of an upload call: one URL or a non-empty list of distinct http(s) URLs."""
    urls = [url] if isinstance(url, str) else list(url) if isinstance(url, Sequence) else None
    if urls is None or not urls:
        raise ValueError(f"upload url must be an http(s) URL or a non-empty list of them, got {_show(url)}")
    for one in urls:
        if not isinstance(one, str):
            raise ValueError(f"upload urls must be strings, got {_show(one)}")
        parts = urllib.parse.urlsplit(one)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upload url must be http(s)://host/..., got scheme {parts.scheme!r}")
    if len(set(urls)) != len(urls):
        raise ValueError("upload urls name the same endpoint twice")
    return urls


def _check(token: str, timeout: float, call_timeout: float | None, max_attempts: int, max_delay: float) -> None:
    if not isinstance(token, str) or not token or not token.isascii() or not token.isprintable() or " " in token:
        raise ValueError("upload token must be a non-empty printable ASCII string without spaces")
    _check_call(timeout, call_timeout, max_attempts, max_delay)


def _check_call(timeout: float, call_timeout: float | None, max_attempts: int, max_delay: float) -> None:
    """The arguments of an upload call but its endpoints and token (``ValueError`` naming the first bad one)."""
    if not _seconds(timeout):
        raise ValueError(f"timeout (seconds for one request, from connecting to the end of its answer) must be a "
                         f"finite number > 0, got {timeout!r}")
    if call_timeout is not None and not _seconds(call_timeout):
        raise ValueError(f"call_timeout (seconds for the whole upload call) must be None or a finite number > 0, "
                         f"got {call_timeout!r}")
    if isinstance(max_delay, bool) or not isinstance(max_delay, (int, float)) or not max_delay >= 0:
        raise ValueError(f"max_delay must be a number >= 0, got {max_delay!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")


def upload(client: Outbox, url: str | Sequence[str], token: str, *, timeout: float = 30.0,
           call_timeout: float | None = None, max_attempts: int = 8, gzip: bool = True, max_delay: float = 300.0,
           opener: Opener | None = None, sleep: Callable[[float], None] = time.sleep,
           clock: Callable[[], float] | None = None) -> UploadResult:
    """Send pinned batch parts (pinning new batches from ``pending()``) until nothing is left, the upload
    interval stops it or ``call_timeout`` passes. See :meth:`ldp.client.TelemetryClient.upload`.

    ``url`` is one ingest service endpoint or a list of them (replicas or balancers): each call starts with the
    first; a part whose attempt gets no answer, a connection error, 408 or a 5xx is sent next to the following
    endpoint at once, until every endpoint has failed in a row (a round), which waits as one endpoint does
    (``Retry-After`` of a 503, else backoff with the number of failed rounds as exponent); the endpoint that
    acknowledged a part takes the next ones. 429 and 413 stay on the endpoint. ``max_attempts`` counts every
    request of a part. The part keeps its batch id everywhere, so the shuffler counts it once."""
    urls = _endpoints(url)
    _check(token, timeout, call_timeout, max_attempts, max_delay)
    call_end = math.inf if call_timeout is None else time.monotonic() + call_timeout
    call = _Call(client, urls, [urllib.parse.urlsplit(u).netloc for u in urls], token, timeout, call_end,
                 max_attempts, max_delay, gzip, opener or default_opener(), sleep, clock or time.time)
    stopped: _Stopped | None = None
    while stopped is None:
        if time.monotonic() >= call_end:
            stopped = "deadline"
            break
        if (part := client.next_batch(call.limit)) is None:
            break
        stopped = _send_part(call, *part)
    next_at = client.next_upload_at()
    if stopped is None:
        stopped = "interval" if client.has_pending() else "empty"
    logger.info("uploaded %d batch(es) to %s: %d report(s) acknowledged, %d duplicate batch(es); stopped: %s",
                call.tally.batches, call.hosts[call.current], call.tally.acknowledged, call.tally.duplicates, stopped)
    return call.tally.result(stopped, next_at)


@dataclass
class _Call:
    """One upload call: its arguments, its deadline ``call_end`` (``time.monotonic()``), the endpoint in use
    (``current``: the first, then the last one that acknowledged a part), what was done (``tally``) and, after a
    413, the size new batches are held to (``limit``: no larger than what was last split off)."""

    client: Outbox
    urls: list[str]
    hosts: list[str]
    token: str
    timeout: float
    call_end: float
    max_attempts: int
    max_delay: float
    gzip: bool
    opener: Opener
    sleep: Callable[[float], None]
    clock: Callable[[], float]
    current: int = 0
    tally: _Tally = field(default_factory=_Tally)
    limit: int | None = None


def _request(call: _Call, bid: str, lines: list[str]) -> tuple[bytes, dict[str, str]]:
    """The body and headers of batch part ``bid``: its lines as JSON lines, gzipped unless ``gzip=False``."""
    body = ("\n".join(lines) + "\n").encode("utf-8")
    headers = {"Authorization": f"Bearer {call.token}", "Content-Type": "application/x-ndjson",
               "Accept": "application/json", "Ldp-Batch-Id": bid}
    if call.gzip:
        body = gzip_module.compress(body, mtime=0)
        headers["Content-Encoding"] = "gzip"
    return body, headers


def _send_part(call: _Call, bid: str, items: Sequence[Item]) -> _Stopped | None:
    """Send one batch part until it is acknowledged or split (``None``: go on with the next), the deadline passes
    (``"deadline"``) or it fails (:class:`UploadError`): failing over to the next endpoint, then waiting a round."""
    lines = [item.line for item in items]
    body, headers = _request(call, bid, lines)
    failed, rounds = 0, 0  # endpoints failed in a row for this part; full rounds waited
    for attempt in range(1, call.max_attempts + 1):
        host = call.hosts[call.current]
        answer = post(call.opener, call.urls[call.current], headers, body,
                      min(time.monotonic() + call.timeout, call.call_end), MAX_ANSWER)
        status = answer.status
        logger.debug("upload of batch %s (%d line(s)) to %s: %s", bid, len(lines), host, status or answer.error)
        if status is not None and 200 <= status < 300:
            _acknowledge(call, bid, items, answer)
            return None
        if status == 413:
            if len(items) == 1:
                raise _fail(f"the ingest service refused a single report as too large ({answer.reason()})",
                            answer, call.tally, call.client)
            call.limit = call.client.split_batch(bid)
            logger.info("batch %s was too large for %s: split in two (%d line(s) at most)", bid, host, call.limit)
            return None
        if not _retryable(status):
            raise _fail(f"the ingest service refused batch {bid} with HTTP {status}: {answer.reason()}",
                        answer, call.tally, call.client)
        if time.monotonic() >= call.call_end:
            return "deadline"
        what = f"HTTP {status}" if status is not None else answer.error
        if attempt == call.max_attempts:
            raise _fail(f"batch {bid} not delivered after {call.max_attempts} attempt(s) (last: {what})",
                        answer, call.tally, call.client)
        if status != 429 and len(call.urls) > 1:  # this replica cannot take it now: the next one
            call.current, failed = (call.current + 1) % len(call.urls), failed + 1
            if failed < len(call.urls):
                logger.info("upload to %s: %s; failing over to %s", host, what, call.hosts[call.current])
                continue
        failed, rounds = 0, rounds + 1
        wait = parse_retry_after(answer.retry_after, call.clock()) if status in _WAIT else None
        delay = min(call.max_delay, wait) if wait is not None else backoff_delay(rounds, call.max_delay)
        if time.monotonic() + delay >= call.call_end:
            return "deadline"
        logger.info("upload to %s: %s; retrying in %.3g s (on %s)", host, what, delay, call.hosts[call.current])
        call.sleep(delay)
    return None


def _acknowledge(call: _Call, bid: str, items: Sequence[Item], answer: Answer) -> None:
    """A 2xx to part ``bid``: acknowledge its items if the answer is sane (:func:`check_answer`), else raise
    :class:`UploadProtocolError`, acknowledging nothing."""
    try:
        if answer.over:
            raise ValueError(f"the answer is over {MAX_ANSWER} bytes")
        data = check_answer(answer.body, bid, len(items))
    except ValueError as exc:
        raise _fail(f"the ingest service's answer to batch {bid} is not sane: {exc}; nothing acknowledged",
                    answer, call.tally, call.client, str(exc), UploadProtocolError) from None
    done = call.client.acknowledge_batch(bid, [item.id for item in items])
    logger.debug("acknowledged %d uploaded report(s)", done)
    call.tally.add(data, done)


def _fail(message: str, answer: Answer, tally: _Tally, client: Outbox, reason: str | None = None,
          kind: type[UploadError] = UploadError) -> UploadError:
    logger.warning("upload stopped: %s", message)
    return kind(message, status=answer.status, reason=reason or answer.reason(),
                result=tally.result("error", client.next_upload_at()))
