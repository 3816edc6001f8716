"""One app's journal: a line per stored batch, the batch-id index built from it, and its compaction.

``journal/journal.jsonl`` holds one JSON line per stored batch: ``id``, ``seg`` (its segment), ``end`` (the segment's
size after it), its counts (``lines``, ``accepted``, ``rejected``), ``bytes`` stored and ``t`` (arrival, Unix s);
``rc``/``rl``/``ru`` when some of its rejected lines cost reject budget / were left out of the segment / were not kept
(:mod:`ldp.collector.rejects`). A batch id in the index is answered as a duplicate.

**Compaction.** The index would grow by about 400 bytes per batch forever. Batch ids older than the dedup horizon
(``Limits.dedup_horizon_seconds``) leave the index (:meth:`Journal.evict`), and when they make up half the file or
more, :meth:`Journal.compact` rewrites it: a first ``{"base": ...}`` line holds the sums of every dropped entry (so
the app's counters stay whole), then the entries inside the horizon; the new file replaces the old one atomically
(written, fsynced, renamed, folder fsynced). Exactly-once holds for every batch id inside the horizon; a batch
resent after it would be stored again (clients resend within minutes to days; the horizon's default is 90 days).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ldp.collector.ingest import BatchCounts
from ldp.server.store import fsync_dir, write_all

__all__ = ["AppStats", "Journal", "JOURNAL"]

logger = logging.getLogger(__name__)
JOURNAL = "journal.jsonl"


@dataclass
class AppStats:
    """Counters of one app (rebuilt from the journal on start, but ``duplicates``). ``rejects_left_out``: rejected
    lines kept only as a ``rejects/`` entry; ``rejects_unkept``: rejected lines only counted (budget spent);
    ``compacted``: batches whose ids left the index past the dedup horizon."""

    batches: int = 0
    lines: int = 0
    accepted: int = 0
    bytes: int = 0
    duplicates: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    last_batch_at: float | None = None
    rejects_left_out: int = 0
    rejects_unkept: int = 0
    compacted: int = 0

    def add(self, counts: BatchCounts, size: int, at: float, left_out: int = 0, unkept: int = 0) -> None:
        self.batches += 1
        self.lines += counts.lines
        self.accepted += counts.accepted
        self.bytes += size
        self.rejected.update(counts.rejected)
        self.rejects_left_out += left_out
        self.rejects_unkept += unkept
        self.last_batch_at = at if self.last_batch_at is None else max(self.last_batch_at, at)

    def to_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, "lines": self.lines, "accepted": self.accepted,
                "rejected": dict(sorted(self.rejected.items())), "bytes": self.bytes, "duplicates": self.duplicates,
                "last_batch_at": self.last_batch_at, "rejects_left_out": self.rejects_left_out,
                "rejects_unkept": self.rejects_unkept, "compacted": self.compacted}


def _base_of(entries: list[dict[str, Any]], base: dict[str, Any] | None) -> dict[str, Any]:
    """The ``base`` line: the sums of ``entries`` added to the previous base."""
    s = AppStats()
    if base:
        s.add(BatchCounts.from_dict(base), int(base["bytes"]), float(base["t"]), int(base["rl"]), int(base["ru"]))
        s.batches = int(base["batches"])
    for e in entries:
        s.add(BatchCounts.from_dict(e), int(e["bytes"]), float(e["t"]), int(e.get("rl", 0)), int(e.get("ru", 0)))
    return {"base": True, "batches": s.batches, "lines": s.lines, "accepted": s.accepted,
            "rejected": dict(sorted(s.rejected.items())), "bytes": s.bytes, "t": s.last_batch_at or 0.0,
            "rl": s.rejects_left_out, "ru": s.rejects_unkept}


class Journal:
    """The journal file of one app and what it says: :attr:`index`, :attr:`stats`, :attr:`ends` (each segment's
    journaled size). Only the writer thread calls it after :meth:`load`."""

    def __init__(self, path: Path, horizon: float) -> None:
        self.path, self.horizon = path, horizon
        self.index: dict[str, BatchCounts] = {}
        self.times: deque[tuple[float, str]] = deque()  # (arrival, id) in journal order
        self.stats = AppStats()
        self.ends: dict[str, int] = {}
        self.entries = 0  # lines in the file but the base
        self.dead = 0  # of which have left the index
        self._base: dict[str, Any] | None = None
        self._fd: int | None = None

    # -- reading ---------------------------------------------------------------------------------------
    def load(self, on_entry: Callable[[dict[str, Any]], None] = lambda e: None) -> int:
        """Read the file (cutting a torn last line: returns its bytes) and open it for appending."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = self.path.read_bytes() if self.path.exists() else b""
        good = 0
        for n, line in enumerate(data.splitlines(keepends=True)):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("no newline")
                self._load_line(json.loads(line), on_entry)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                if good + len(line) < len(data):
                    raise RuntimeError(f"{self.path}: line {n + 1} is damaged ({exc}); the collector cannot "
                                       "know which batches it acknowledged") from None
                break
            good += len(line)
        if good < len(data):
            logger.warning("journal %s: cutting a torn last line (%d bytes)", self.path, len(data) - good)
            with open(self.path, "r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        fsync_dir(self.path.parent)
        return len(data) - good

    def _load_line(self, e: dict[str, Any], on_entry: Callable[[dict[str, Any]], None]) -> None:
        if e.get("base") is True:
            b = self._base = e
            self.stats.add(BatchCounts.from_dict(b), int(b["bytes"]), float(b["t"]), int(b["rl"]), int(b["ru"]))
            self.stats.batches = self.stats.compacted = int(b["batches"])
            return
        counts = BatchCounts.from_dict(e)
        seg, end, batch_id, size, at = str(e["seg"]), int(e["end"]), str(e["id"]), int(e["bytes"]), float(e["t"])
        self.ends[seg] = end
        self.index[batch_id] = counts
        self.times.append((at, batch_id))
        self.entries += 1
        self.stats.add(counts, size, at, int(e.get("rl", 0)), int(e.get("ru", 0)))
        on_entry(e)

    # -- writing ---------------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        assert self._fd is not None, "load() first"
        return os.fstat(self._fd).st_size

    def append(self, entries: list[dict[str, Any]]) -> None:
        """Append and fsync ``entries`` (an ``OSError`` is the caller's to undo with :meth:`cut`)."""
        assert self._fd is not None, "load() first"
        write_all(self._fd, "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries).encode("utf-8"))
        os.fsync(self._fd)

    def cut(self, size: int) -> None:
        """Truncate the file back to ``size`` bytes (undo a failed :meth:`append`)."""
        assert self._fd is not None, "load() first"
        os.ftruncate(self._fd, size)

    def note(self, entries: list[dict[str, Any]], batches: list[tuple[BatchCounts, int, int, int]]) -> None:
        """Record appended ``entries`` in the index and counters (``batches``: counts, bytes, left out, unkept)."""
        for e, (counts, size, left_out, unkept) in zip(entries, batches, strict=True):
            self.index[e["id"]] = counts
            self.times.append((e["t"], e["id"]))
            self.entries += 1
            self.stats.add(counts, size, e["t"], left_out, unkept)

    # -- compaction ------------------------------------------------------------------------------------
    def evict(self, now: float) -> int:
        """Drop the ids that arrived before ``now - horizon`` from the index; returns how many."""
        cutoff, n = now - self.horizon, 0
        while self.times and self.times[0][0] < cutoff:
            _, batch_id = self.times.popleft()
            self.index.pop(batch_id, None)
            n += 1
        self.dead += n
        return n

    def compact(self, now: float, *, min_dead: int = 1000) -> bool:
        """Evict, and rewrite the file without the evicted entries when they are at least ``min_dead`` and half
        the file; ``True`` when rewritten. On an ``OSError`` the old file stays (logged; tried again later)."""
        self.evict(now)
        if self.dead < max(min_dead, 1) or self.dead * 2 < self.entries:
            return False
        cutoff = now - self.horizon
        tmp = self.path.with_name(self.path.name + ".compact")
        try:
            dropped: list[bytes] = []
            kept: list[bytes] = []
            for line in self.path.read_bytes().splitlines():
                e = json.loads(line)
                if e.get("base") is True:
                    continue
                (dropped if float(e["t"]) < cutoff else kept).append(line)
            base = _base_of([json.loads(x) for x in dropped], self._base)
            with open(tmp, "wb") as fh:
                fh.write(json.dumps(base, separators=(",", ":")).encode() + b"\n")
                fh.write(b"".join(x + b"\n" for x in kept))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            fsync_dir(self.path.parent)
        except OSError as exc:
            logger.warning("journal %s: compaction failed (%s); the old journal stays", self.path, exc.strerror)
            tmp.unlink(missing_ok=True)
            return False
        self.close()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND, 0o644)
        self._base, self.entries, self.dead = base, len(kept), 0
        self.stats.compacted = int(base["batches"])
        logger.info("journal %s: compacted %d entries older than the dedup horizon (%d kept)", self.path,
                    len(dropped), len(kept))
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
