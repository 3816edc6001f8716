"""The objects an ingest service replica writes to shared storage and the shuffler stage reads: *chunks*.

A chunk is one group commit of one replica: the batches it stored at once, each with what the shuffler needs to
deduplicate it across replicas and to mix it with the other reports of its arrival window, and nothing more::

    #batch <batch id> <window start> <window length> <lines>\\n
    <line>\\n
    ...

``window start`` and ``window length`` are integers (seconds, UTC): the arrival window, coarsened as the
ingest service's journals are (:func:`ldp.ingest.journal.coarse`). A chunk lives at
``apps/<app>/incoming/<replica>/<UTC>-<seq>.chunk`` (:func:`chunk_key`): one replica's names never collide with
another's, and its own sort in commit order. Batch ids are checked as the ingest service checks them
(:data:`ldp.ingest.upload.BATCH_ID_RE`); a batch's lines are framed by their count (any bytes but a newline).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ldp.storage.roles import incoming

__all__ = ["ChunkBatch", "encode_chunk", "decode_chunk", "chunk_key", "incoming_prefix", "CHUNK_SUFFIX"]

CHUNK_SUFFIX = ".chunk"
_HEADER = re.compile(rb"#batch ([A-Za-z0-9._~-]{1,128}) (\d{1,12}) (\d{1,9}) (\d{1,9})\Z")


@dataclass(frozen=True)
class ChunkBatch:
    """One batch of a chunk: its id, its arrival window ``[window, window + length)`` and its lines (each ending
    in a newline); ``found``: what the shuffler's check of its lines found (:mod:`ldp.shuffler.lines`), once
    checked."""

    batch_id: str
    window: int
    length: int
    lines: bytes
    found: Mapping[str, int] | None = field(default=None, compare=False)

    @property
    def count(self) -> int:
        return self.lines.count(b"\n")


def encode_chunk(batches: Iterable[ChunkBatch]) -> bytes:
    """The bytes of a chunk holding ``batches`` (module docstring); ``ValueError`` for a batch that is not one."""
    out: list[bytes] = []
    for b in batches:
        header = f"#batch {b.batch_id} {b.window} {b.length} {b.count}".encode()
        if not _HEADER.match(header) or b.length < 1:
            raise ValueError(f"not a chunk batch: {header!r}")
        if b.lines and not b.lines.endswith(b"\n"):
            raise ValueError(f"batch {b.batch_id}: its lines must end with a newline")
        out += [header, b"\n", b.lines]
    return b"".join(out)


def decode_chunk(data: bytes, where: str = "chunk") -> list[ChunkBatch]:
    """The batches of a chunk; ``ValueError`` naming ``where`` and the byte offset when it is not one (a chunk is
    written whole, so a damaged one is a fault to report, never to skip silently)."""
    out: list[ChunkBatch] = []
    pos, size = 0, len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        m = _HEADER.match(data[pos:end]) if end >= 0 else None
        if m is None:
            raise ValueError(f"{where}: not a batch header at byte {pos}")
        n = int(m.group(4))
        start = cursor = end + 1
        for _ in range(n):
            nl = data.find(b"\n", cursor)
            if nl < 0:
                raise ValueError(f"{where}: batch {m.group(1).decode()} at byte {pos} is cut short")
            cursor = nl + 1
        out.append(ChunkBatch(m.group(1).decode(), int(m.group(2)), int(m.group(3)), data[start:cursor]))
        pos = cursor
    return out


incoming_prefix = incoming
"""``apps/<app>/incoming/`` (every replica's chunks), or one replica's (:mod:`ldp.storage.roles`)."""


def chunk_key(app: str, replica: str, at: float, seq: int, fence: int | None = None) -> str:
    """``apps/<app>/incoming/<replica>/<UTC>-f<fence:06d>-<seq:010d>.chunk``: ``fence`` is the replica's claim
    token (:mod:`ldp.ingest.claim`) and ``seq`` counts the chunks of that claim, so a key never repeats, whatever
    the clock says (without ``fence``, the older ``<UTC>-<seq:010d>.chunk``)."""
    claim = "" if fence is None else f"f{int(fence):06d}-"
    return f"{incoming_prefix(app, replica)}{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(at))}-{claim}{seq:010d}" \
           f"{CHUNK_SUFFIX}"
