"""One app's storage on disk: its segment files and its journal, each write fsynced before it is acknowledged.

Per app (``DATA/apps/<app>``): ``segments/open/`` holds the segment being appended to,
``segments/closed/`` the rotated ones (immutable, named ``<UTC yyyymmddTHHMMSSZ>-<seq:06d>.jsonl``),
``journal/journal.jsonl`` one line per stored batch (id, segment, end offset, counts, time).

:meth:`AppLog.commit` stores a group of batches: their lines appended to the open segment and fsynced, *then*
their journal lines appended and fsynced; a batch id in the journal is answered as a duplicate. On start,
:meth:`AppLog.recover` cuts each open segment back to the end of its last journaled batch (bytes past it belong
to batches never acknowledged, which their clients resend) and closes it, and rebuilds the batch ids and
counters of every segment from the journal, so a batch id is stored once, ever. Only one thread (the writer
of :mod:`ldp.collector.segments`) calls an :class:`AppLog`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ldp.collector.config import Limits
from ldp.collector.ingest import BatchCounts
from ldp.server.store import fsync_dir

__all__ = ["Batch", "Stored", "AppStats", "AppLog", "JOURNAL"]

logger = logging.getLogger(__name__)
JOURNAL = "journal.jsonl"


@dataclass(frozen=True)
class Stored:
    """The answer for a batch: its counts and whether the id had been stored before."""

    counts: BatchCounts
    duplicate: bool


@dataclass
class Batch:
    """One batch to store; ``done`` is called (from the writer thread) with :class:`Stored` or an exception."""

    app: str
    batch_id: str
    body: bytes
    counts: BatchCounts
    done: Callable[[Stored | BaseException], None]


def _segment_name(seq: int, now: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + f"-{seq:06d}.jsonl"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@dataclass
class AppStats:
    """Counters of one app (rebuilt from the journal on start, but ``duplicates``)."""

    batches: int = 0
    lines: int = 0
    accepted: int = 0
    bytes: int = 0
    duplicates: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    last_batch_at: float | None = None

    def add(self, counts: BatchCounts, size: int, at: float) -> None:
        self.batches += 1
        self.lines += counts.lines
        self.accepted += counts.accepted
        self.bytes += size
        self.rejected.update(counts.rejected)
        self.last_batch_at = at

    def to_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, "lines": self.lines, "accepted": self.accepted,
                "rejected": dict(sorted(self.rejected.items())), "bytes": self.bytes, "duplicates": self.duplicates,
                "last_batch_at": self.last_batch_at}


class AppLog:
    """One app's segments and journal. Only the writer thread calls its methods after :meth:`recover`."""

    def __init__(self, app_dir: Path, limits: Limits, clock: Callable[[], float] = time.time) -> None:
        self.dir, self.limits, self.clock = app_dir, limits, clock
        self.open_dir = app_dir / "segments" / "open"
        self.closed_dir = app_dir / "segments" / "closed"
        self.journal_path = app_dir / "journal" / JOURNAL
        self.index: dict[str, BatchCounts] = {}
        self.stats = AppStats()
        self._fd: int | None = None
        self._jfd: int | None = None
        self._name = ""
        self._size = 0
        self._opened_at = 0.0
        self._seq = 0

    # -- start -----------------------------------------------------------------------------------------
    def recover(self) -> dict[str, int]:
        """Read the journal (cutting a torn last line), cut each open segment back to its journaled
        end and close it; returns what was cut: ``{"journal_bytes": .., "segment_bytes": ..}``."""
        for d in (self.open_dir, self.closed_dir, self.journal_path.parent):
            d.mkdir(parents=True, exist_ok=True)
        ends, cut_journal = self._read_journal()
        names = [p.name for d in (self.open_dir, self.closed_dir) for p in d.glob("*.jsonl")]
        self._seq = max((int(n[-12:-6]) for n in names if n[-12:-6].isdigit()), default=0)
        cut_segments = 0
        for path in sorted(self.open_dir.glob("*.jsonl")):
            end = ends.get(path.name, 0)
            size = path.stat().st_size
            if size < end:
                logger.error("segment %s holds %d bytes, fewer than the %d journaled", path, size, end)
            elif size > end:
                cut_segments += size - end
                logger.warning("segment %s: cutting %d bytes past the last acknowledged batch", path, size - end)
                with open(path, "r+b") as fh:
                    fh.truncate(end)
                    os.fsync(fh.fileno())
            if min(size, end) > 0:
                os.replace(path, self.closed_dir / path.name)
                fsync_dir(self.closed_dir)
            else:
                path.unlink()
            fsync_dir(self.open_dir)
        self._jfd = os.open(self.journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        fsync_dir(self.journal_path.parent)
        return {"journal_bytes": cut_journal, "segment_bytes": cut_segments}

    def _read_journal(self) -> tuple[dict[str, int], int]:
        """Load the index and counters; the journaled end of each segment; bytes of a torn tail cut."""
        ends: dict[str, int] = {}
        if not self.journal_path.exists():
            return ends, 0
        data = self.journal_path.read_bytes()
        good = 0
        for n, line in enumerate(data.splitlines(keepends=True)):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("no newline")
                e = json.loads(line)
                counts = BatchCounts.from_dict(e)
                seg, end, batch_id, size, at = str(e["seg"]), int(e["end"]), str(e["id"]), int(e["bytes"]), e["t"]
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                if good + len(line) < len(data):
                    raise RuntimeError(f"{self.journal_path}: line {n + 1} is damaged ({exc}); the collector cannot "
                                       "know which batches it acknowledged") from None
                break
            good += len(line)
            ends[seg] = end
            self.index[batch_id] = counts
            self.stats.add(counts, size, float(at))
        if good < len(data):
            logger.warning("journal %s: cutting a torn last line (%d bytes)", self.journal_path, len(data) - good)
            with open(self.journal_path, "r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())
        return ends, len(data) - good

    # -- writing ---------------------------------------------------------------------------------------
    def _ensure_open(self) -> int:
        if self._fd is None:
            self._seq += 1
            now = self.clock()
            self._name = _segment_name(self._seq, now)
            self._fd = os.open(self.open_dir / self._name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            fsync_dir(self.open_dir)
            self._size, self._opened_at = 0, now
        return self._fd

    def commit(self, items: list[Batch]) -> list[tuple[Batch, Stored]]:
        """Store the new batches of ``items`` (one fsync of the segment, one of the journal) and
        return every item's answer; an ``OSError`` leaves both files as they were (when it can)."""
        answers: list[tuple[Batch, Stored]] = []
        new: list[Batch] = []
        here: dict[str, BatchCounts] = {}
        for it in items:
            prev = self.index.get(it.batch_id) or here.get(it.batch_id)
            if prev is not None:
                answers.append((it, Stored(prev, True)))
            else:
                here[it.batch_id] = it.counts
                new.append(it)
                answers.append((it, Stored(it.counts, False)))
        if not new:
            return answers
        fd, jfd = self._ensure_open(), self._jfd
        assert jfd is not None, "recover() first"
        start, at, end = self._size, self.clock(), self._size
        entries = []
        for it in new:
            end += len(it.body)
            entries.append(json.dumps({"id": it.batch_id, "seg": self._name, "end": end, **it.counts.to_dict(),
                                       "bytes": len(it.body), "t": round(at, 3)}, separators=(",", ":")))
        jstart = os.fstat(jfd).st_size
        try:
            _write_all(fd, b"".join(it.body for it in new))
            os.fsync(fd)
            _write_all(jfd, ("\n".join(entries) + "\n").encode("utf-8"))
            os.fsync(jfd)
        except OSError:
            for f, size in ((jfd, jstart), (fd, start)):
                try:
                    os.ftruncate(f, size)
                except OSError:  # pragma: no cover - the disk is gone; recovery cuts the segment on restart
                    logger.exception("cannot undo a failed write")
            raise
        self._size = end
        for it in new:
            self.index[it.batch_id] = it.counts
            self.stats.add(it.counts, len(it.body), at)
        return answers

    def detach(self, force: bool = False) -> Callable[[], None] | None:
        """Stop appending to the open segment when it is over its size or age (or ``force``) and not
        empty; return the step that moves it to ``closed/`` (rename, fsync of both folders), which the
        caller may run on another thread: every byte in it is fsynced already (each commit is), and a
        crash before the move leaves it in ``open/``, where :meth:`recover` closes it."""
        if self._fd is None or self._size == 0:
            return None
        if not force and self._size < self.limits.segment_max_bytes and \
                self.clock() - self._opened_at < self.limits.segment_max_seconds:
            return None
        os.close(self._fd)
        self._fd = None
        src, dst, size = self.open_dir / self._name, self.closed_dir / self._name, self._size

        def move() -> None:
            os.replace(src, dst)
            fsync_dir(dst.parent)
            fsync_dir(src.parent)
            logger.info("closed segment %s (%d bytes)", dst, size)

        return move

    def maybe_rotate(self, force: bool = False) -> bool:
        """Close the open segment now when it is over its size or age (or ``force``) and not empty."""
        move = self.detach(force)
        if move is not None:
            move()
        return move is not None

    def close(self) -> None:
        """Rotate the open segment (when not empty) and close the files."""
        self.maybe_rotate(force=True)
        if self._fd is not None:  # an empty segment
            os.close(self._fd)
            (self.open_dir / self._name).unlink(missing_ok=True)
            self._fd = None
        if self._jfd is not None:
            os.close(self._jfd)
            self._jfd = None

