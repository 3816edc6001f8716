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
import json
import logging
import math
import random
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ldp.client.transport import Answer, Opener, default_opener, post
from ldp.errors import UploadError, UploadProtocolError
from ldp.spec.schema import MAX_BATCH

__all__ = ["UploadError", "UploadProtocolError", "UploadResult", "Opener", "Outbox", "batch_id",
           "parse_retry_after", "backoff_delay", "check_answer", "default_opener", "upload", "BATCH_ID_CHARS",
           "MAX_ANSWER"]

logger = logging.getLogger(__name__)

BATCH_ID_CHARS = 32
MAX_ANSWER = 1 << 16
"""Bytes of a collector's answer read at most: a longer 2xx is a protocol error (a sane one is under 1 KiB)."""
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


# -- the answer ---------------------------------------------------------------------------------------------
def _show(value: object) -> str:
    text = repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return "".join(c if c.isprintable() else "?" for c in text)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"the answer repeats key {_show(next(k for k in keys if keys.count(k) > 1))}")
    return dict(pairs)


def _not_a_number(name: str) -> None:
    raise ValueError(f"the answer holds {name}")


def _count(answer: Mapping[str, Any], key: str) -> int:
    value = answer[key]
    if type(value) is not int or value < 0:
        raise ValueError(f"{key} is {_show(value)}, not an integer >= 0")
    return value


def check_answer(body: bytes, batch: str, sent: int) -> dict[str, Any]:
    """The collector's 2xx answer to part ``batch`` of ``sent`` lines, if it is sane, else ``ValueError`` saying
    what is wrong. Sane: one JSON object (no repeated key) with ``batch_id`` equal to ``batch``; ``accepted``,
    ``lines`` and each count of ``rejected`` (an object of reason names) integers >= 0, not booleans;
    ``accepted + sum(rejected) == lines``; ``lines == sent``, or, for ``"duplicate": true`` (the counts of the
    first delivery, whose part may have held items since acknowledged by other means), ``sent <= lines <=
    MAX_BATCH``, and ``accepted`` and ``rejected`` may both be absent (the collector keeps only the line count of
    a batch whose segment it shuffled); ``duplicate``, if given, a boolean. Other keys are ignored."""
    try:
        answer = json.loads(body.decode("utf-8"), object_pairs_hook=_no_duplicate_keys,
                            parse_constant=_not_a_number)
    except UnicodeDecodeError:
        raise ValueError("the answer is not UTF-8") from None
    except RecursionError:
        raise ValueError("the answer is nested too deeply") from None
    except ValueError as exc:
        if str(exc).startswith("the answer"):
            raise
        raise ValueError(f"the answer is not JSON ({str(exc)[:80]})") from None
    if not isinstance(answer, dict):
        raise ValueError(f"the answer is {type(answer).__name__}, not a JSON object")
    if "batch_id" in answer and answer["batch_id"] != batch:
        raise ValueError(f"the answer names batch {_show(answer['batch_id'])}, not {batch}")
    duplicate = answer.get("duplicate", False)
    if not isinstance(duplicate, bool):
        raise ValueError(f"duplicate is {_show(duplicate)}, not a boolean")
    counted = not (duplicate and "accepted" not in answer and "rejected" not in answer)
    needed = ("batch_id", "accepted", "rejected", "lines") if counted else ("batch_id", "lines")
    if missing := [k for k in needed if k not in answer]:
        raise ValueError(f"the answer lacks {', '.join(missing)}")
    lines = _count(answer, "lines")
    if counted:
        accepted, rejected = _count(answer, "accepted"), answer["rejected"]
        if not isinstance(rejected, dict):
            raise ValueError(f"rejected is {_show(rejected)}, not an object of counts by reason")
        for reason in rejected:
            if not (0 < len(reason) <= 100 and reason.isprintable()):
                raise ValueError(f"rejected names reason {_show(reason)}")
            _count(rejected, reason)
        if accepted + sum(rejected.values()) != lines:
            raise ValueError(f"accepted ({accepted}) + rejected ({sum(rejected.values())}) != lines ({lines})")
    if not (sent <= lines <= MAX_BATCH if duplicate else lines == sent):
        raise ValueError(f"the answer counts {lines} line(s); {sent} were sent")
    return answer


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


def _check(url: str, token: str, timeout: float, call_timeout: float | None, max_attempts: int,
           max_delay: float) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"upload url must be http(s)://host/..., got scheme {parts.scheme!r}")
    if not isinstance(token, str) or not token or not token.isascii() or not token.isprintable() or " " in token:
        raise ValueError("upload token must be a non-empty printable ASCII string without spaces")
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


def upload(client: Outbox, url: str, token: str, *, timeout: float = 30.0, call_timeout: float | None = None,
           max_attempts: int = 8, gzip: bool = True, max_delay: float = 300.0, opener: Opener | None = None,
           sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] | None = None) -> UploadResult:
    """Send pinned batch parts (pinning new batches from ``pending()``) until nothing is left, the upload
    interval stops it or ``call_timeout`` passes. See :meth:`ldp.client.TelemetryClient.upload`."""
    _check(url, token, timeout, call_timeout, max_attempts, max_delay)
    call_end = math.inf if call_timeout is None else time.monotonic() + call_timeout
    opener = opener or default_opener()
    clock = clock or time.time
    host = urllib.parse.urlsplit(url).hostname
    tally = _Tally()
    limit: int | None = None  # after a 413: new batches no larger than what was last split off
    stopped: _Stopped | None = None
    while stopped is None:
        if time.monotonic() >= call_end:
            stopped = "deadline"
            break
        if (part := client.next_batch(limit)) is None:
            break
        bid, items = part
        lines = [item.line for item in items]
        body = ("\n".join(lines) + "\n").encode("utf-8")
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson",
                   "Accept": "application/json", "Ldp-Batch-Id": bid}
        if gzip:
            body = gzip_module.compress(body, mtime=0)
            headers["Content-Encoding"] = "gzip"
        for attempt in range(1, max_attempts + 1):
            answer = post(opener, url, headers, body, min(time.monotonic() + timeout, call_end), MAX_ANSWER)
            status = answer.status
            logger.debug("upload of batch %s (%d line(s)) to %s: %s", bid, len(lines), host, status or answer.error)
            if status is not None and 200 <= status < 300:
                try:
                    if answer.over:
                        raise ValueError(f"the answer is over {MAX_ANSWER} bytes")
                    data = check_answer(answer.body, bid, len(lines))
                except ValueError as exc:
                    raise _fail(f"the collector's answer to batch {bid} is not sane: {exc}; nothing acknowledged",
                                answer, tally, client, str(exc), UploadProtocolError) from None
                done = client.acknowledge_batch(bid, [item.id for item in items])
                logger.debug("acknowledged %d uploaded report(s)", done)
                tally.add(data, done)
                break
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
            if time.monotonic() >= call_end:
                stopped = "deadline"
                break
            what = f"HTTP {status}" if status is not None else answer.error
            if attempt == max_attempts:
                raise _fail(f"batch {bid} not delivered after {max_attempts} attempt(s) (last: {what})",
                            answer, tally, client)
            wait = parse_retry_after(answer.retry_after, clock()) if status in _WAIT else None
            delay = min(max_delay, wait) if wait is not None else backoff_delay(attempt, max_delay)
            if time.monotonic() + delay >= call_end:
                stopped = "deadline"
                break
            logger.info("upload to %s: %s; retrying in %.3g s", host, what, delay)
            sleep(delay)
    next_at = client.next_upload_at()
    if stopped is None:
        stopped = "interval" if client.has_pending() else "empty"
    logger.info("uploaded %d batch(es) to %s: %d report(s) acknowledged, %d duplicate batch(es); stopped: %s",
                tally.batches, host, tally.acknowledged, tally.duplicates, stopped)
    return tally.result(stopped, next_at)


def _fail(message: str, answer: Answer, tally: _Tally, client: Outbox, reason: str | None = None,
          kind: type[UploadError] = UploadError) -> UploadError:
    logger.warning("upload stopped: %s", message)
    return kind(message, status=answer.status, reason=reason or answer.reason(),
                result=tally.result("error", client.next_upload_at()))
