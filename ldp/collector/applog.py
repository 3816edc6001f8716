"""One app's storage on disk: its segment files and its journal, each write fsynced before it is acknowledged.

Per app (``DATA/apps/<app>``): ``segments/open/`` holds the segment being appended to,
``segments/closed/`` the rotated ones (immutable, named ``<UTC yyyymmddTHHMMSSZ>-<seq:06d>.jsonl``),
``journal/journal.jsonl`` one line per stored batch (id, segment, end offset, counts, time).

:meth:`AppLog.commit` stores a group of batches: their lines appended to the open segment and fsynced, *then*
their journal lines appended and fsynced; a batch id in the journal is answered as a duplicate. On start,
:meth:`AppLog.recover` cuts each open segment back to the end of its last journaled batch (bytes past it belong
to batches never acknowledged, which their clients resend) and closes it, and rebuilds the batch ids and
counters of every segment from the journal (:mod:`ldp.collector.journal`), so a batch id is stored once within
the dedup horizon. Rejected lines are stored within bounds (:mod:`ldp.collector.rejects`).

**A failed write** (a full disk, say) leaves both files as they were: the bytes written past the last acknowledged
batch are cut off again (``ftruncate``, which needs no free space) and the batches of that group are answered 503.
When even the cut fails, the app is *damaged*: it refuses writes until :meth:`AppLog.repair` has cut the files back,
which the writer tries every tick, so the collector recovers by itself once the disk does. Only one thread (the
writer of :mod:`ldp.collector.segments`) calls an :class:`AppLog`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ldp.collector.config import Limits
from ldp.collector.ingest import BatchCounts
from ldp.collector.journal import JOURNAL, AppStats, Journal
from ldp.collector.rejects import RejectKeeper, RejectSpan
from ldp.server.store import fsync_dir, write_all

__all__ = ["Batch", "Stored", "AppStats", "AppLog", "JOURNAL"]

logger = logging.getLogger(__name__)


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
    rejects: list[RejectSpan] | None = None
    """The byte spans of the body's rejected lines (:func:`ldp.collector.rejects.find_rejects`)."""


def _segment_name(seq: int, now: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + f"-{seq:06d}.jsonl"


class AppLog:
    """One app's segments and journal. Only the writer thread calls its methods after :meth:`recover`."""

    def __init__(self, app_dir: Path, limits: Limits, clock: Callable[[], float] = time.time) -> None:
        self.dir, self.limits, self.clock = app_dir, limits, clock
        self.open_dir = app_dir / "segments" / "open"
        self.closed_dir = app_dir / "segments" / "closed"
        self.journal_path = app_dir / "journal" / JOURNAL
        self.journal = Journal(self.journal_path, limits.dedup_horizon_seconds)
        self.rejects = RejectKeeper(app_dir / "rejects", limits.max_reject_line_bytes, limits.reject_bytes_per_day)
        self._fd: int | None = None
        self._name = ""
        self._size = 0
        self._opened_at = 0.0
        self._seq = 0
        self.damaged: tuple[int, int] | None = None  # (segment size, journal size) to cut back to

    @property
    def index(self) -> dict[str, BatchCounts]:
        """Batch id -> counts of every batch stored within the dedup horizon."""
        return self.journal.index

    @property
    def stats(self) -> AppStats:
        return self.journal.stats

    # -- start -----------------------------------------------------------------------------------------
    def recover(self) -> dict[str, int]:
        """Read the journal (cutting a torn last line), cut each open segment back to its journaled
        end and close it; returns what was cut: ``{"journal_bytes": .., "segment_bytes": ..}``."""
        for d in (self.open_dir, self.closed_dir):
            d.mkdir(parents=True, exist_ok=True)
        cut_journal = self.journal.load(lambda e: self.rejects.charge_restored(float(e["t"]), int(e.get("rc", 0))))
        self.journal.evict(self.clock())
        ends = self.journal.ends
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
        return {"journal_bytes": cut_journal, "segment_bytes": cut_segments}

    # -- writing ---------------------------------------------------------------------------------------
    def _ensure_open(self) -> int:
        if self._fd is None:
            self._seq += 1
            now = self.clock()
            self._name = _segment_name(self._seq, now)
            self._size, self._opened_at = 0, now
            fd = os.open(self.open_dir / self._name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            try:
                fsync_dir(self.open_dir)  # the new name is durable before a byte in it is acknowledged
            except OSError:
                os.close(fd)
                (self.open_dir / self._name).unlink(missing_ok=True)
                raise
            self._fd = fd
        return self._fd

    def commit(self, items: list[Batch]) -> list[tuple[Batch, Stored]]:
        """Store the new batches of ``items`` (one fsync of the segment, one of the journal) and
        return every item's answer; an ``OSError`` leaves both files as they were (see :meth:`repair`)."""
        if self.damaged is not None and not self.repair():
            raise OSError(f"the files of {self.dir.name} could not be cut back after a failed write")
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
        fd = self._ensure_open()
        at = self.clock()
        budget = (self.rejects.day, self.rejects.used)
        kept = [self.rejects.keep(it.body, it.rejects or [], at) for it in new]
        start, end, jstart = self._size, self._size, self.journal.size
        entries: list[dict[str, Any]] = []
        for it, k in zip(new, kept, strict=True):
            end += len(k.body)
            e: dict[str, Any] = {"id": it.batch_id, "seg": self._name, "end": end, **it.counts.to_dict(),
                                 "bytes": len(k.body), "t": round(at, 3)}
            e.update({key: v for key, v in (("rc", k.charged), ("rl", k.left_out), ("ru", k.unkept)) if v})
            entries.append(e)
        try:
            write_all(fd, b"".join(k.body for k in kept))
            os.fsync(fd)
            self.journal.append(entries)
        except OSError:
            self.rejects.day, self.rejects.used = budget
            self.damaged = (start, jstart)
            self.repair()
            raise
        self._size = end
        self.rejects.append(b"".join(k.side for k in kept), at)
        self.journal.note(entries, [(it.counts, len(k.body), k.left_out, k.unkept) for it, k in zip(new, kept,
                                                                                                     strict=True)])
        return answers

    def repair(self) -> bool:
        """Cut the open segment and the journal back to their sizes before a failed write; ``True`` when done
        (or nothing to do)."""
        if self.damaged is None:
            return True
        seg_size, journal_size = self.damaged
        try:
            if self._fd is not None:
                os.ftruncate(self._fd, seg_size)
            self.journal.cut(journal_size)
        except OSError as exc:
            logger.error("cannot cut the files of %s back after a failed write (%s); trying again", self.dir.name,
                         exc.strerror)
            return False
        self.damaged = None
        return True

    def detach(self, force: bool = False) -> Callable[[], None] | None:
        """Stop appending to the open segment when it is over its size or age (or ``force``) and not
        empty; return the step that moves it to ``closed/`` (rename, fsync of both folders), which the
        caller may run on another thread: every byte in it is fsynced already (each commit is), and a
        crash before the move leaves it in ``open/``, where :meth:`recover` closes it."""
        if self._fd is None or self._size == 0 or self.damaged is not None:
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
        self.repair()
        self.maybe_rotate(force=True)
        if self._fd is not None:  # an empty segment, or one not cut back (recover() cuts it on the next start)
            os.close(self._fd)
            if self.damaged is None:
                (self.open_dir / self._name).unlink(missing_ok=True)
            self._fd = None
        self.journal.close()
