"""The client's uploader: ``TelemetryClient.upload`` sends the outbox to an ``ldp serve`` collector.

Standard library only (urllib); nothing of :mod:`ldp.client.runtime` is imported. The state side is the
pinned batch in the client's state file (table ``ldp_client_batch``), reached through the client's batch
methods (:class:`Outbox`: ``next_batch``, ``split_batch``, ``acknowledge_batch``); the HTTP side is one
``POST /v1/reports`` per batch part, with

* ``Authorization: Bearer <token>``, ``Content-Type: application/x-ndjson``, ``Ldp-Batch-Id``, and
  ``Content-Encoding: gzip`` (``mtime`` 0: the body carries no timestamp) unless ``gzip=False``;
* a 2xx whose JSON names the batch id acknowledges the part; 413 splits it in two (nothing was
  stored); 429/503 wait ``Retry-After`` (delta-seconds or HTTP date, capped at ``max_delay``);
  connection errors, 408, other 5xx and unreadable 2xx answers retry with exponential backoff and
  full jitter (base 1 s, capped at ``max_delay``), ``max_attempts`` tries per part in all; any other
  status raises :class:`UploadError`. Redirects are refused (they would carry the token elsewhere).

Nothing here logs a report line or the token: only counts, statuses, batch ids and the host.
"""

from __future__ import annotations

import datetime
import email.utils
import gzip as gzip_module
import hashlib
import hmac
import http.client
import json
import logging
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ldp.errors import UploadError

__all__ = ["UploadError", "UploadResult", "Opener", "Outbox", "batch_id", "parse_retry_after", "backoff_delay",
           "default_opener", "upload", "BATCH_ID_CHARS"]

logger = logging.getLogger(__name__)

BATCH_ID_CHARS = 32
_BATCH_TAG = b"ldp/client/batch-id/v1\x00"
_WAIT = frozenset({429, 503})
_MAX_ANSWER = 1 << 20  # bytes of a response body read at most
_RNG = random.SystemRandom()


@dataclass(frozen=True)
class UploadResult:
    """What one ``upload`` call did. ``acknowledged``: outbox items deleted; ``accepted`` and
    ``rejected`` (by reason): the server's counts summed over its answers (a duplicate answer repeats
    the first answer's counts); ``duplicates``: parts the server had already stored; ``stopped``:
    ``"empty"`` (nothing left) or ``"interval"`` (the rest waits until ``next_upload_at``), and
    ``"error"`` in the ``result`` of an :class:`UploadError`."""

    batches: int = 0
    acknowledged: int = 0
    accepted: int = 0
    rejected: Mapping[str, int] = field(default_factory=dict)
    duplicates: int = 0
    stopped: Literal["empty", "interval", "error"] = "empty"
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


class Opener(Protocol):
    """What ``upload`` needs of a ``urllib.request.OpenerDirector``."""

    def open(self, fullurl: urllib.request.Request, data: None = None, timeout: float = ...) -> Any: ...


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: following one would send the token and the reports to another address."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:
        return None


def default_opener() -> urllib.request.OpenerDirector:
    """urllib's opener (proxies from the environment, HTTPS with the system's CAs), redirects refused."""
    return urllib.request.build_opener(_NoRedirect())


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
    """No answer, 408, 429, 5xx, or a 2xx that did not name the batch: try again (after a delay)."""
    return status is None or status in (408, 429) or status >= 500 or 200 <= status < 300


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

    def result(self, stopped: Literal["empty", "interval", "error"], next_at: float) -> UploadResult:
        return UploadResult(self.batches, self.acknowledged, self.accepted, dict(sorted(self.rejected.items())),
                            self.duplicates, stopped, next_at)

    def add(self, answer: dict[str, Any], acknowledged: int) -> None:
        self.batches += 1
        self.acknowledged += acknowledged
        if _is_int(answer.get("accepted")):
            self.accepted += answer["accepted"]
        rejected = answer.get("rejected")
        if isinstance(rejected, dict):
            for reason, n in rejected.items():
                if isinstance(reason, str) and _is_int(n):
                    self.rejected[reason] = self.rejected.get(reason, 0) + n
        self.duplicates += answer.get("duplicate") is True


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


class _Answer:
    """One exchange: ``status`` (``None``: no HTTP answer), ``Retry-After`` and body, or the connection error."""

    def __init__(self, status: int | None, retry_after: str | None = None, body: bytes = b"",
                 error: str = "") -> None:
        self.status, self.retry_after, self.body, self.error = status, retry_after, body, error

    def json(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def reason(self) -> str:
        data = self.json()
        if data is not None and isinstance(data.get("error"), str):
            return str(data["error"])[:100]
        return self.error or f"HTTP {self.status}"


def _post(opener: Opener, url: str, headers: dict[str, str], body: bytes, timeout: float) -> _Answer:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with opener.open(request, timeout=timeout) as response:
            return _Answer(response.status, response.headers.get("Retry-After"), response.read(_MAX_ANSWER))
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                answer = exc.read(_MAX_ANSWER)
            except (OSError, http.client.HTTPException):
                answer = b""
            return _Answer(exc.code, exc.headers.get("Retry-After"), answer)
    except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets, RemoteDisconnected
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        return _Answer(None, error=f"{type(exc).__name__}: {reason}"[:200])


def _check(url: str, token: str, timeout: float, max_attempts: int, max_delay: float) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"upload url must be http(s)://host/..., got scheme {parts.scheme!r}")
    if not isinstance(token, str) or not token or not token.isascii() or not token.isprintable() or " " in token:
        raise ValueError("upload token must be a non-empty printable ASCII string without spaces")
    if not timeout > 0 or not max_delay >= 0:
        raise ValueError(f"timeout must be > 0 and max_delay >= 0, got {timeout!r}, {max_delay!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")


def upload(client: Outbox, url: str, token: str, *, timeout: float = 30.0, max_attempts: int = 8,
           gzip: bool = True, max_delay: float = 300.0, opener: Opener | None = None,
           sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] | None = None) -> UploadResult:
    """Send pinned batch parts (pinning new batches from ``pending()``) until nothing is left or the
    upload interval stops it. See :meth:`ldp.client.TelemetryClient.upload`."""
    _check(url, token, timeout, max_attempts, max_delay)
    opener = opener or default_opener()
    clock = clock or time.time
    host = urllib.parse.urlsplit(url).hostname
    tally = _Tally()
    limit: int | None = None  # after a 413: new batches no larger than what was last split off
    while (part := client.next_batch(limit)) is not None:
        bid, items = part
        lines = [item.line for item in items]
        body = ("\n".join(lines) + "\n").encode("utf-8")
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson",
                   "Accept": "application/json", "Ldp-Batch-Id": bid}
        if gzip:
            body = gzip_module.compress(body, mtime=0)
            headers["Content-Encoding"] = "gzip"
        for attempt in range(1, max_attempts + 1):
            answer = _post(opener, url, headers, body, timeout)
            status = answer.status
            logger.debug("upload of batch %s (%d line(s)) to %s: %s", bid, len(lines), host, status or answer.error)
            if status is not None and 200 <= status < 300:
                data = answer.json()
                if data is not None and data.get("batch_id") == bid:
                    done = client.acknowledge_batch(bid, [item.id for item in items])
                    logger.debug("acknowledged %d uploaded report(s)", done)
                    tally.add(data, done)
                    break
                answer.error = "a 2xx answer without this batch's id"
            if status == 413:
                if len(items) == 1:
                    raise _fail(f"the collector refused a single report as too large ({answer.reason()})",
                                answer, tally, client)
                limit = client.split_batch(bid)
                logger.info("batch %s was too large for %s: split in two (%d line(s) at most)", bid, host, limit)
                break
            if not _retryable(status):
                raise _fail(f"the collector refused batch {bid} with HTTP {status}: {answer.reason()}",
                            answer, tally, client)
            if attempt == max_attempts:
                what = f"HTTP {status}" if status is not None else answer.error
                raise _fail(f"batch {bid} not delivered after {max_attempts} attempt(s) (last: {what})",
                            answer, tally, client)
            wait = parse_retry_after(answer.retry_after, clock()) if status in _WAIT else None
            delay = min(max_delay, wait) if wait is not None else backoff_delay(attempt, max_delay)
            logger.info("upload to %s: %s; retrying in %.3g s", host, f"HTTP {status}" if status else answer.error,
                        delay)
            sleep(delay)
    next_at = client.next_upload_at()
    stopped: Literal["empty", "interval"] = "interval" if client.has_pending() else "empty"
    logger.info("uploaded %d batch(es) to %s: %d report(s) acknowledged, %d duplicate batch(es); stopped: %s",
                tally.batches, host, tally.acknowledged, tally.duplicates, stopped)
    return tally.result(stopped, next_at)


def _fail(message: str, answer: _Answer, tally: _Tally, client: Outbox) -> UploadError:
    logger.warning("upload stopped: %s", message)
    return UploadError(message, status=answer.status, reason=answer.reason(),
                       result=tally.result("error", client.next_upload_at()))
