"""One app's journals: what an open segment holds, batch by batch, and the batch ids seen once it is closed.

**The open segment's journal** (``journal/<segment name>``, :class:`SegmentJournal`) has one JSON line per batch
stored in that segment: ``id``, ``end`` (the segment's size after it), its counts (``lines``, ``accepted``,
``rejected``), ``bytes`` stored, ``w`` (the arrival window's start, Unix s: never a finer time) and ``rc``/``rl``/
``ru`` when some of its rejected lines cost reject budget / were left out / were not kept
(:mod:`ldp.ingest.rejects`). It is how a crash is recovered: bytes past the last ``end`` were never acknowledged.
When the segment closes its lines are shuffled and the file is removed, byte ranges and all; a last line
``{"closed_as": NAME}`` marks, until then, which closed segment it became.

**The seen index** (``journal/seen.jsonl``, :class:`SeenIndex`) keeps what outlives the close and nothing that
links a line to its batch: per batch ``{"id", "n": lines, "w"}`` (in a random order); per closed segment and
window the sums of its batches (``{"sum": ..., "w"}``: the app's counters); then ``{"closed": NAME}``, written
last, which commits the group (lines after the last marker are a torn write, cut on load). A batch id in either
journal is answered as a duplicate: with its counts while its segment is open, with its line count only once
closed.

**Compaction.** Ids whose window ended more than the dedup horizon (``Limits.dedup_horizon_seconds``) ago leave the
index (:meth:`SeenIndex.evict`); once they are half the file, or once one of them has been past the horizon for
:data:`STALE_SECONDS` (a day), :meth:`SeenIndex.compact` rewrites it atomically with a first ``{"base": ...}`` line
holding the sums it dropped. So the horizon is also how long an id stays on disk, within a day (and the minute
between two checks): with a device's batch salt, its ids could be recomputed from its reports, so they must not
stay. Exactly-once holds inside the horizon.

**A failed append never stays in front of the next one.** A write may stop midway (a full disk takes the bytes up
to its last free block, then says ``ENOSPC``; an fsync may fail after them): the bytes it left are cut off again at
once, with ``ftruncate`` on the raw descriptor (it needs no free space, and no buffer has to be flushed first, which
a full disk would refuse again), back to the size the file had before the write. When even that cut fails, the size
is kept and every later append (or compaction) makes the cut first, refusing while it cannot. So our own appends
only ever follow whole lines, and a damaged line can only be a file's last: a crash mid-write, which
:func:`read_lines` cuts on load. A damaged line *followed* by others is never ours: it is refused.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ldp.ingest.linefile import LineFile
from ldp.ingest.upload import BatchCounts
from ldp.jobs.store import fsync_dir

__all__ = ["AppStats", "ClosedCounts", "SegmentJournal", "SeenIndex", "SEEN", "coarse", "sums", "dump_lines",
           "read_lines"]

logger = logging.getLogger(__name__)
SEEN = "seen.jsonl"
STALE_SECONDS = 86400.0
"""The longest an id past the dedup horizon stays in ``seen.jsonl``: then the file is rewritten without it, however
few such ids there are."""


def coarse(t: float, granularity: float) -> float:
    """The start of the window of length ``granularity`` (s, from the Unix epoch) holding time ``t``."""
    return float(int(t // granularity) * granularity)


@dataclass(frozen=True)
class ClosedCounts:
    """A closed segment's batch as the seen index keeps it: its number of lines, nothing that ties it to them."""

    lines: int

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines}


@dataclass
class AppStats:
    """Counters of one app (rebuilt from the journals on start, but ``duplicates``). ``rejects_left_out``: rejected
    lines kept only as a ``rejects/`` entry; ``rejects_unkept``: rejected lines only counted (budget spent);
    ``compacted``: batches whose ids left the index past the dedup horizon. ``last_batch_at``: the start of the
    window of the last batch (arrival times are kept no finer)."""

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

    def add(self, counts: BatchCounts, size: int, at: float, left_out: int = 0, unkept: int = 0,
            batches: int = 1) -> None:
        self.batches += batches
        self.lines += counts.lines
        self.accepted += counts.accepted
        self.bytes += size
        self.rejected.update(counts.rejected)
        self.rejects_left_out += left_out
        self.rejects_unkept += unkept
        self.last_batch_at = at if self.last_batch_at is None else max(self.last_batch_at, at)

    def add_sum(self, s: dict[str, Any]) -> None:
        """Add a ``sum`` or ``base`` document (see :func:`sums`)."""
        self.add(BatchCounts.from_dict(s), int(s["bytes"]), float(s["w"]), int(s["rl"]), int(s["ru"]),
                 int(s["batches"]))

    def to_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, "lines": self.lines, "accepted": self.accepted,
                "rejected": dict(sorted(self.rejected.items())), "bytes": self.bytes, "duplicates": self.duplicates,
                "last_batch_at": self.last_batch_at, "rejects_left_out": self.rejects_left_out,
                "rejects_unkept": self.rejects_unkept, "compacted": self.compacted}


def sums(entries: Iterable[dict[str, Any]], w: float) -> dict[str, Any]:
    """The sums of segment-journal ``entries`` (or of ``sum`` documents) as one ``sum`` document of window ``w``."""
    s = AppStats()
    rc = 0
    for e in entries:
        if "batches" in e:
            s.add_sum(e)
        else:
            s.add(BatchCounts.from_dict(e), int(e["bytes"]), float(e["w"]), int(e.get("rl", 0)), int(e.get("ru", 0)))
        rc += int(e.get("rc", 0))
    return {"batches": s.batches, "lines": s.lines, "accepted": s.accepted,
            "rejected": dict(sorted(s.rejected.items())), "bytes": s.bytes, "rl": s.rejects_left_out,
            "ru": s.rejects_unkept, "rc": rc, "w": w}


def dump_lines(docs: Iterable[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs).encode("utf-8")


def _split_lines(data: bytes) -> list[bytes]:
    """``data``'s lines, each with its ``\n``, and what follows the last one (a torn write). Only ``\n`` ends a
    line: we write no other line break (JSON escapes them), and a torn tail holding a ``\r`` is still one tail."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def read_lines(path: Path, is_commit: Any = lambda d: True) -> tuple[list[dict[str, Any]], int]:
    """The JSON lines of ``path`` up to the last one ``is_commit`` accepts, and the bytes cut after it (a torn
    write: fsynced to the shorter size). A damaged line before a good one is an error: what was acknowledged
    cannot be known (our appends never follow a torn line: see the module's docstring)."""
    data = path.read_bytes() if path.exists() else b""
    docs: list[dict[str, Any]] = []
    good = committed = 0
    n_committed = 0
    for n, line in enumerate(_split_lines(data)):
        try:
            if not line.endswith(b"\n"):
                raise ValueError("no newline")
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            if good + len(line) < len(data):
                raise RuntimeError(f"{path}: line {n + 1} is damaged ({exc}); the ingest service cannot know which "
                                   "batches it acknowledged") from None
            break
        docs.append(doc)
        good += len(line)
        if is_commit(doc):
            committed, n_committed = good, len(docs)
    if committed < len(data):
        logger.warning("journal %s: cutting %d bytes of a torn write", path, len(data) - committed)
        with open(path, "r+b") as fh:
            fh.truncate(committed)
            os.fsync(fh.fileno())
    return docs[:n_committed], len(data) - committed


class SegmentJournal:
    """The journal of one open segment (``journal/<segment name>``); only the writer thread appends to it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        self.closed_as: str | None = None
        self._fd: int | None = None
        self._lines = LineFile(path)

    def load(self) -> int:
        """Read the file (cutting a torn last line: returns its bytes)."""
        docs, cut = read_lines(self.path)
        for d in docs:
            if "closed_as" in d:
                self.closed_as = str(d["closed_as"])
            else:
                self.entries.append(d)
        return cut

    @property
    def end(self) -> int:
        """The segment's size after the last batch journaled (0 before any)."""
        return int(self.entries[-1]["end"]) if self.entries else 0

    def open(self) -> None:
        """Create the file (its name made durable) for appending."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        fsync_dir(self.path.parent)

    @property
    def size(self) -> int:
        return os.fstat(self._fd).st_size if self._fd is not None else 0

    def append(self, entries: list[dict[str, Any]], after: tuple[int, bytes] | None = None,
               size: int | None = None) -> None:
        """Append and fsync ``entries`` (an ``OSError`` is the caller's to undo with :meth:`cut`; until it is,
        nothing more is appended); ``after``, ``size``: as :meth:`~ldp.ingest.linefile.LineFile.append`'s (the
        segment's bytes written and fsynced first, in the same call)."""
        if self._fd is None:
            self.open()
        assert self._fd is not None
        self._lines.append(dump_lines(entries), self._fd, undo=False, after=after, size=size)

    def note(self, entries: list[dict[str, Any]]) -> None:
        self.entries.extend(entries)

    def cut(self, size: int) -> None:
        """Truncate the file back to ``size`` bytes (undo a failed :meth:`append`)."""
        if self._fd is not None:
            self._lines.cut(size, self._fd)

    def mark_closed(self, name: str) -> None:
        """Record (fsynced) the closed segment this one becomes, before that file appears (a failed attempt cut
        back before the next)."""
        self._lines.append(dump_lines([{"closed_as": name}]), self._fd)
        self.closed_as = name

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SeenIndex:
    """``journal/seen.jsonl``: the batch ids of closed segments and the app's sums. The writer thread reads
    :attr:`index`; the thread closing segments appends (:meth:`add_closed`) and compacts."""

    def __init__(self, path: Path, horizon: float, granularity: float) -> None:
        self.path, self.horizon, self.granularity = path, horizon, granularity
        self.index: dict[str, ClosedCounts] = {}
        self.times: deque[tuple[float, str]] = deque()  # (window, id) in file order
        self.stats = AppStats()
        self.closed: set[str] = set()
        self.rejects_charged: list[tuple[float, int]] = []  # (window, bytes) of reject budget, for the day's budget
        self.entries = 0  # id lines in the file
        self.dead = 0  # of which have left the index
        self.oldest_dead: float | None = None  # the earliest window of those
        self._base: dict[str, Any] | None = None
        self._lines = LineFile(path)

    def load(self) -> int:
        """Read the file (cutting a torn write after the last commit marker: returns its bytes)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        docs, cut = read_lines(self.path, lambda d: "closed" in d or d.get("base") is True)
        for d in docs:
            self._take(d)
        return cut

    def _take(self, d: dict[str, Any]) -> None:
        if d.get("base") is True:
            self._base = d
            self.stats.add_sum(d)
            self.stats.compacted = int(d["batches"])
        elif "id" in d:
            w = float(d["w"])
            self.index[str(d["id"])] = ClosedCounts(int(d["n"]))
            self.times.append((w, str(d["id"])))
            self.entries += 1
        elif "sum" in d:
            self.stats.add_sum(d["sum"])
            self.rejects_charged.append((float(d["sum"]["w"]), int(d["sum"].get("rc", 0))))
        elif "closed" in d:
            self.closed.add(str(d["closed"]))

    def add_closed(self, name: str, entries: list[dict[str, Any]], count: bool = True) -> None:
        """Append (one fsync) the ids of a closed segment's batches, its sums per window, then its marker; the
        index takes the ids. ``count``: add the sums to :attr:`stats` (not when they were counted already, from
        the segment journal)."""
        by_window: dict[float, list[dict[str, Any]]] = {}
        for e in entries:
            by_window.setdefault(float(e["w"]), []).append(e)
        docs: list[dict[str, Any]] = [{"id": e["id"], "n": int(e["lines"]), "w": float(e["w"])} for e in entries]
        secrets.SystemRandom().shuffle(docs)  # not in arrival order either
        docs += [{"sum": sums(group, w), "w": w} for w, group in sorted(by_window.items())]
        docs.append({"closed": name})
        self._lines.append(dump_lines(docs))
        for d in docs:  # taken once durable: a failure below must not make the caller append the group again
            if "sum" in d and not count:
                continue
            self._take(d)
        w = max(float(e["w"]) for e in entries)
        os.utime(self.path, (w, w))  # dated by the window, not by the close
        fsync_dir(self.path.parent)

    # -- compaction ------------------------------------------------------------------------------------
    def _cutoff(self, now: float) -> float:
        """Windows that ended before this have left the horizon."""
        return now - self.horizon - self.granularity

    def evict(self, now: float) -> int:
        """Drop the ids of windows past the horizon from the index; returns how many."""
        cutoff, n = self._cutoff(now), 0
        while self.times and self.times[0][0] < cutoff:
            w, batch_id = self.times.popleft()
            self.index.pop(batch_id, None)
            self.oldest_dead = w if self.oldest_dead is None else min(self.oldest_dead, w)
            n += 1
        self.dead += n
        return n

    def compact(self, now: float, *, min_dead: int = 1000) -> bool:
        """Evict, and rewrite the file without the ids past the horizon (their sums folded into the base line) when
        the evicted ones are at least ``min_dead`` and half the file, or when one of them has been past the horizon
        for :data:`STALE_SECONDS`; ``True`` when rewritten. On an ``OSError`` the old file stays. A failed append is
        cut back first (the file then holds whole lines only); while it cannot be, no compaction."""
        self.evict(now)
        cutoff = self._cutoff(now)
        stale = self.oldest_dead is not None and self.oldest_dead < cutoff - STALE_SECONDS
        if not stale and (self.dead < max(min_dead, 1) or self.dead * 2 < self.entries):
            return False
        tmp = self.path.with_name(self.path.name + ".compact")
        old: list[dict[str, Any]] = [self._base] if self._base else []
        kept: list[dict[str, Any]] = []
        group: list[dict[str, Any]] = []  # the kept lines of the group read so far (up to its marker)
        try:
            self._lines.cut()
            for line in self.path.read_bytes().splitlines():
                d = json.loads(line)
                if d.get("base") is True:
                    continue
                old_line = ("id" in d or "sum" in d) and float(d["w"]) < cutoff
                if "sum" in d and old_line:
                    old.append(d["sum"])
                elif "closed" in d:
                    if group:  # a group wholly past the horizon loses its marker too
                        kept += [*group, d]
                    group = []
                elif not old_line:
                    group.append(d)
            kept += group
            base = {"base": True, **sums(old, max((float(s["w"]) for s in old), default=0.0))}
            with open(tmp, "wb") as fh:
                fh.write(dump_lines([base, *kept]))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            fsync_dir(self.path.parent)
        except OSError as exc:
            logger.warning("journal %s: compaction failed (%s); the old journal stays", self.path, exc.strerror)
            tmp.unlink(missing_ok=True)
            return False
        dropped = self.entries - sum("id" in d for d in kept)
        self._base, self.entries, self.dead, self.oldest_dead = base, self.entries - dropped, 0, None
        old_ids = [(w, i) for w, i in self.times if w < cutoff]  # dropped from the file, not yet evicted: now
        if old_ids:
            self.times = deque((w, i) for w, i in self.times if w >= cutoff)
            for _, batch_id in old_ids:
                self.index.pop(batch_id, None)
        self.stats.compacted = int(base["batches"])
        logger.info("journal %s: compacted %d ids older than the dedup horizon", self.path, dropped)
        return True
