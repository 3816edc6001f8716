"""Reading and validating one uploaded batch: the body's bytes (gunzipped within bounds), the
batch id, and the counts by reason from the parser of ``ldp fold``
(:func:`ldp.jobs.lines.fold_lines`), so the ingest service's answer and a later
``ldp fold`` of the segments agree line for line; then the body as it is stored, its accepted lines
canonical (:func:`check_body`, :mod:`ldp.ingest.canonical`)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ldp.errors import IngestError
from ldp.ingest.canonical import canonical_body
from ldp.ingest.rejects import RejectSpan, SpanFolder, find_rejects
from ldp.spec import CollectionSpec

__all__ = ["BATCH_ID_RE", "BatchCounts", "CheckedBody", "IngestError", "Gunzip", "check_batch_id", "count_lines",
           "check_lines", "check_body", "prepare_body", "MAX_GZIP_MEMBERS"]

BATCH_ID_RE = re.compile(r"[A-Za-z0-9._~-]{1,128}\Z")
"""A batch id (header ``Ldp-Batch-Id``)."""


@dataclass(frozen=True)
class BatchCounts:
    """What a batch held: ``lines`` (non-blank), ``accepted`` and ``rejected`` by reason."""

    lines: int
    accepted: int
    rejected: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "rejected": dict(self.rejected), "lines": self.lines}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BatchCounts:
        return cls(int(d["lines"]), int(d["accepted"]), {str(k): int(v) for k, v in d["rejected"].items()})


def check_batch_id(value: str | None) -> str:
    """The batch id of a request, or :class:`IngestError` 400."""
    if value is None or not BATCH_ID_RE.match(value):
        raise IngestError(400, "bad_batch_id", "the Ldp-Batch-Id header must be 1 to 128 characters of "
                                               "A-Z, a-z, 0-9, '.', '_', '~' and '-'")
    return value


MAX_GZIP_MEMBERS = 1024
"""Most gzip members in one body (RFC 1952 allows several, one after the other; each costs a decompressor)."""


class Gunzip:
    """A streaming gunzip that never holds more than ``limit`` decompressed bytes (413 beyond). A body of several
    gzip members (RFC 1952 §2.2, as ``cat a.gz b.gz`` makes) is their concatenated contents, as ``gzip -d`` gives;
    bytes after a member that do not start another are refused (400 ``bad_gzip``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._parts: list[bytes] = []
        self.size = 0
        self.members = 1

    def feed(self, data: bytes) -> None:
        """Decompress ``data``; raises :class:`IngestError` (400 bad gzip, 413 too large)."""
        while data:
            if self._z.eof:  # the next member starts
                if self.members >= MAX_GZIP_MEMBERS:
                    raise IngestError(400, "bad_gzip", f"more than {MAX_GZIP_MEMBERS} gzip members in one body")
                self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self.members += 1
            try:
                out = self._z.decompress(data, self.limit - self.size + 1)
            except zlib.error as exc:
                what = "the body is not valid gzip" if self.members == 1 else \
                    f"the data after gzip member {self.members - 1} is not a gzip member"
                raise IngestError(400, "bad_gzip", f"{what}: {exc}") from None
            self._take(out)
            if self._z.unconsumed_tail:  # the limit was reached with input left: too large
                raise IngestError(413, "too_large", f"the body decompresses to more than {self.limit} bytes")
            data = self._z.unused_data if self._z.eof else b""

    def _take(self, out: bytes) -> None:
        self.size += len(out)
        if self.size > self.limit:
            raise IngestError(413, "too_large", f"the body decompresses to more than {self.limit} bytes")
        self._parts.append(out)

    def finish(self) -> bytes:
        """The decompressed body (400 when the gzip stream is truncated)."""
        if not self._z.eof:
            raise IngestError(400, "bad_gzip", "the gzip stream is truncated")
        return b"".join(self._parts)


def prepare_body(body: bytes, max_lines: int) -> bytes:
    """Check a decompressed body (non-empty, UTF-8, at most ``max_lines`` lines) and return it
    ending in a newline, as it will be stored."""
    if not body:
        raise IngestError(400, "empty_body", "the body holds no line")
    try:
        if not body.isascii():  # ASCII is UTF-8 (the clients' lines are ASCII: no decoding to check them)
            body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(400, "not_utf8", f"the body is not UTF-8 (byte {exc.start})") from None
    if not body.endswith(b"\n"):
        body += b"\n"
    n = body.count(b"\n")
    if n > max_lines:
        raise IngestError(413, "too_many_lines", f"{n} lines in one batch; at most {max_lines}")
    return body


def count_lines(body: bytes, specs: Mapping[str, CollectionSpec]) -> BatchCounts:
    """Validate every line of ``body`` (whole lines, each ending in ``\\n``) exactly as
    ``ldp fold`` does; blank lines are not counted."""
    return check_lines(body, specs)[0]


def check_lines(body: bytes, specs: Mapping[str, CollectionSpec]) -> tuple[BatchCounts, list[RejectSpan]]:
    """:func:`count_lines`, and the byte span and reason of each rejected line (to store them within bounds)."""
    return _check(body, specs)[:2]


def _check(body: bytes, specs: Mapping[str, CollectionSpec]) -> tuple[BatchCounts, list[RejectSpan], SpanFolder]:
    folder, spans = find_rejects(body, specs)
    if not folder.records:
        raise IngestError(400, "empty_body", "the body holds only blank lines")
    return BatchCounts(folder.records, folder.accepted, dict(sorted(folder.rejected.items()))), spans, folder


@dataclass(frozen=True)
class CheckedBody:
    """A validated body as the ingest service stores it: ``body``, its accepted lines canonical; ``counts``, the answer
    to the device (those of the body as it came: canonical bytes change no count); ``rejects``, the byte span
    and reason of each rejected line in ``body`` (for :class:`~ldp.ingest.rejects.RejectKeeper`)."""

    body: bytes
    counts: BatchCounts
    rejects: list[RejectSpan]


def check_body(body: bytes, specs: Mapping[str, CollectionSpec]) -> CheckedBody:
    """:func:`check_lines`, and the body to store: every accepted line in the clients' canonical bytes, blank lines
    dropped, rejected lines as they came (:func:`ldp.ingest.canonical.canonical_body`, from the same pass of
    the validator). Stored verbatim, a line in another client's formatting would stand out in a shuffled segment
    and link that client's reports across windows."""
    counts, spans, folder = _check(body, specs)
    stored, spans = canonical_body(body, specs, folder, spans)
    return CheckedBody(stored, counts, spans)
