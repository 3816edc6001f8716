"""One app's storage on disk: its segment files and journals, each write fsynced before it is acknowledged.

Per app (``DATA/apps/<app>``): ``segments/open/`` holds the segment being appended to (``<UTC>-<seq>.jsonl``, in
arrival order: the shuffler's buffer), ``journal/<its name>`` its batches (:class:`~ldp.ingest.journal.
SegmentJournal`), ``segments/closed/`` the closed segments: their lines in a random order (:mod:`ldp.ingest.
shuffle`), named and dated by their arrival window only; ``journal/seen.jsonl`` the batch ids of closed segments and
the sums (:class:`~ldp.ingest.journal.SeenIndex`), with nothing that ties a line to its batch.

:meth:`AppLog.commit` stores a group of batches: their lines appended to the open segment and fsynced, *then*
their journal lines appended and fsynced; a batch id in a journal is answered as a duplicate. **Closing** a
segment (:meth:`AppLog.finish_close`, on the chores thread; each step durable, the whole idempotent): its lines
shuffled into a new ``closed/.<name>.part`` (by the close worker, :mod:`ldp.ingest.closer`, out of the server's
GIL); the closed name chosen and written to its journal; the part renamed to it and dated to its window; its ids
and sums appended to the seen index; the open segment and its journal removed.
On start, :meth:`AppLog.recover` cuts each open segment back to the end of its last journaled batch (bytes past
it belong to batches never acknowledged, which their clients resend) and closes it, resuming a close where it
stopped, so a batch id is stored once within the dedup horizon. Rejected lines are stored within bounds
(:mod:`ldp.ingest.rejects`).

**A failed write** (a full disk, say) leaves both files as they were: the bytes written past the last acknowledged
batch are cut off again (``ftruncate``, which needs no free space) and the batches of that group are answered 503.
When even the cut fails, the app is *damaged*: it refuses writes until :meth:`AppLog.repair` has cut the files back,
which the writer tries every tick, so the ingest service recovers by itself once the disk does. Only one thread (the
writer of :mod:`ldp.ingest.segments`) calls an :class:`AppLog`.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ldp.ingest.closer import write_part
from ldp.ingest.config import Limits
from ldp.ingest.journal import (
    SEEN,
    AppStats,
    ClosedCounts,
    SeenIndex,
    SegmentJournal,
    coarse,
    dump_lines,
    read_lines,
    sums,
)
from ldp.ingest.rejects import RejectKeeper, RejectSpan
from ldp.ingest.upload import BatchCounts
from ldp.jobs.store import fsync_dir, write_atomic
from ldp.pipeline.shuffle import closed_name

__all__ = ["Batch", "Stored", "AppStats", "AppLog", "OLD_JOURNAL", "split_new"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stored:
    """The answer for a batch: its counts and whether the id had been stored before."""

    counts: BatchCounts | ClosedCounts
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
    """The byte spans of the body's rejected lines (:func:`ldp.ingest.rejects.find_rejects`)."""


def split_new(items: list[Batch], known: Callable[[str], BatchCounts | ClosedCounts | None]
              ) -> tuple[list[tuple[Batch, Stored]], list[Batch]]:
    """Every item's answer, and the items to store: a batch id ``known`` already, or earlier in ``items``, is
    answered as a duplicate with the counts first stored."""
    answers: list[tuple[Batch, Stored]] = []
    new: list[Batch] = []
    here: dict[str, BatchCounts] = {}
    for it in items:
        prev = known(it.batch_id) or here.get(it.batch_id)
        if prev is not None:
            answers.append((it, Stored(prev, True)))
        else:
            here[it.batch_id] = it.counts
            new.append(it)
            answers.append((it, Stored(it.counts, False)))
    return answers, new


OLD_JOURNAL = "journal.jsonl"
"""The journal of every batch before shuffled storage (one file, byte ranges kept): converted once on start."""


def _segment_name(seq: int, now: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + f"-{seq:06d}.jsonl"


class AppLog:
    """One app's segments and journals. Only the writer thread calls :meth:`commit`, :meth:`detach` and
    :meth:`repair` after :meth:`recover`; the closes it hands out run on one other thread.
    ``granularity``: the length (s) of the windows arrival times are coarsened to."""

    def __init__(self, app_dir: Path, limits: Limits, clock: Callable[[], float] = time.time,
                 granularity: float = 86400.0) -> None:
        self.dir, self.limits, self.clock, self.granularity = app_dir, limits, clock, granularity
        self.open_dir = app_dir / "segments" / "open"
        self.closed_dir = app_dir / "segments" / "closed"
        self.journal_dir = app_dir / "journal"
        self.seen = SeenIndex(self.journal_dir / SEEN, limits.dedup_horizon_seconds, granularity)
        self.rejects = RejectKeeper(app_dir / "rejects", limits.max_reject_line_bytes, limits.reject_bytes_per_day,
                                    limits.reject_retention_days)
        self.open_index: dict[str, BatchCounts] = {}  # ids of segments not closed yet
        self._journal: SegmentJournal | None = None
        self._fd: int | None = None
        self._name = ""
        self._size = 0
        self._opened_at = 0.0
        self._seq = 0
        self.damaged: tuple[int, int] | None = None  # (segment size, journal size) to cut back to
        self.deferred: list[Callable[[], None]] = []  # closes that failed on start, for the chores thread
        self.write_part: Callable[[Path, int, Path], None] = write_part
        """Writes a closing segment's shuffled, fsynced copy (:mod:`ldp.ingest.closer`): in-process, or in the
        close worker (:class:`~ldp.ingest.closer.PartWriter`, which the ingest service sets once recovered)."""

    def known(self, batch_id: str) -> BatchCounts | ClosedCounts | None:
        """The counts of a batch stored within the dedup horizon (only its line count once its segment closed)."""
        return self.open_index.get(batch_id) or self.seen.index.get(batch_id)

    def ids(self) -> set[str]:
        """Every batch id stored within the dedup horizon."""
        return set(self.open_index) | set(self.seen.index)

    @property
    def stats(self) -> AppStats:
        return self.seen.stats

    # -- start -----------------------------------------------------------------------------------------
    def recover(self) -> dict[str, int]:
        """Read the journals (cutting torn writes), cut each open segment back to its journaled end and close
        it; returns what was cut: ``{"journal_bytes": .., "segment_bytes": ..}``."""
        for d in (self.open_dir, self.closed_dir, self.journal_dir):
            d.mkdir(parents=True, exist_ok=True)
        if (self.journal_dir / OLD_JOURNAL).exists():
            convert_old_journal(self)
        cut_journal = self.seen.load()
        names = [p.name for d in (self.open_dir, self.journal_dir) for p in d.glob("*.jsonl") if p.name != SEEN]
        self._seq = max((int(n[-12:-6]) for n in names if n[-12:-6].isdigit()), default=0)
        cut_segments = 0
        for name in sorted(set(names)):
            journal = SegmentJournal(self.journal_dir / name)
            cut_journal += journal.load()
            path = self.open_dir / name
            size = path.stat().st_size if path.exists() else 0
            if size < journal.end and journal.closed_as is None:
                logger.error("segment %s holds %d bytes, fewer than the %d journaled", path, size, journal.end)
            elif size > journal.end and journal.closed_as is None:
                cut_segments += size - journal.end
                logger.warning("segment %s: cutting %d bytes past the last acknowledged batch", path,
                               size - journal.end)
                with open(path, "r+b") as fh:
                    fh.truncate(journal.end)
                    os.fsync(fh.fileno())
            try:
                self.finish_close(path, journal, count=True)
            except OSError as exc:  # a full disk, say: the close is a chore for later, the batches are known now
                logger.error("closing segment %s failed on start (%s); tried again later", path, exc.strerror)
                if journal.closed_as not in self.seen.closed:
                    for e in journal.entries:
                        self.open_index[e["id"]] = BatchCounts.from_dict(e)
                        self.stats.add(BatchCounts.from_dict(e), int(e["bytes"]), float(e["w"]), int(e.get("rl", 0)),
                                       int(e.get("ru", 0)))
                        self.rejects.charge_restored(float(e["w"]), int(e.get("rc", 0)))
                self.deferred.append(functools.partial(self.finish_close, path, journal))
        for w, charged in self.seen.rejects_charged:
            self.rejects.charge_restored(w, charged)
        self.seen.evict(self.clock())
        self.rejects.expire(self.clock())
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
                self._journal = SegmentJournal(self.journal_dir / self._name)
                self._journal.open()
            except OSError:
                os.close(fd)
                (self.open_dir / self._name).unlink(missing_ok=True)
                raise
            self._fd = fd
        return self._fd

    def commit(self, items: list[Batch]) -> list[tuple[Batch, Stored]]:
        """Store the new batches of ``items`` (one fsync of the segment, one of its journal) and
        return every item's answer; an ``OSError`` leaves both files as they were (see :meth:`repair`)."""
        if self.damaged is not None and not self.repair():
            raise OSError(f"the files of {self.dir.name} could not be cut back after a failed write")
        answers, new = split_new(items, self.known)
        if not new:
            return answers
        fd = self._ensure_open()
        journal = self._journal
        assert journal is not None
        at = self.clock()
        w = coarse(at, self.granularity)
        budget = (self.rejects.day, self.rejects.used)
        kept = [self.rejects.keep(it.body, it.rejects or [], at) for it in new]
        start, end, jstart = self._size, self._size, journal.size
        entries: list[dict[str, Any]] = []
        for it, k in zip(new, kept, strict=True):
            end += len(k.body)
            e: dict[str, Any] = {"id": it.batch_id, "end": end, **it.counts.to_dict(), "bytes": len(k.body), "w": w}
            e.update({key: v for key, v in (("rc", k.charged), ("rl", k.left_out), ("ru", k.unkept)) if v})
            entries.append(e)
        try:  # the segment's bytes written and fsynced, then the journal's lines: one call, one GIL release
            journal.append(entries, after=(fd, b"".join(k.body for k in kept)), size=jstart)
        except OSError:
            self.rejects.day, self.rejects.used = budget
            self.damaged = (start, jstart)
            self.repair()
            raise
        self._size = end
        self.rejects.append(b"".join(k.side for k in kept), at)
        journal.note(entries)
        for it, k in zip(new, kept, strict=True):
            self.open_index[it.batch_id] = it.counts
            self.stats.add(it.counts, len(k.body), w, k.left_out, k.unkept)
        return answers

    def repair(self) -> bool:
        """Cut the open segment and its journal back to their sizes before a failed write; ``True`` when done
        (or nothing to do)."""
        if self.damaged is None:
            return True
        seg_size, journal_size = self.damaged
        try:
            if self._fd is not None:
                os.ftruncate(self._fd, seg_size)
            if self._journal is not None:
                self._journal.cut(journal_size)
        except OSError as exc:
            logger.error("cannot cut the files of %s back after a failed write (%s); trying again", self.dir.name,
                         exc.strerror)
            return False
        self.damaged = None
        return True

    def detach(self, force: bool = False) -> Callable[[], None] | None:
        """Stop appending to the open segment when it is over its size or age (or ``force``) and not
        empty; return the step that closes it (:meth:`finish_close`), which the caller may run on another
        thread: every byte in it is fsynced already (each commit is), and a crash before the close is done
        leaves it in ``open/``, where :meth:`recover` resumes it."""
        if self._fd is None or self._size == 0 or self.damaged is not None:
            return None
        if not force and self._size < self.limits.segment_max_bytes and \
                self.clock() - self._opened_at < self.limits.segment_max_seconds:
            return None
        os.close(self._fd)
        self._fd = None
        journal, path = self._journal, self.open_dir / self._name
        assert journal is not None
        journal.close()
        self._journal = None
        return lambda: self.finish_close(path, journal)

    def finish_close(self, path: Path, journal: SegmentJournal, count: bool = False) -> None:
        """Close the segment at ``path`` (see the module's docstring), resuming where a crash stopped a previous
        attempt. ``count``: its batches are not in :attr:`stats` yet (on recovery)."""
        entries = journal.entries
        if not entries:  # nothing acknowledged in it
            path.unlink(missing_ok=True)
            journal.close()
            journal.path.unlink(missing_ok=True)
            return
        part = self.closed_dir / f".{path.name}.part"
        w = min(float(e["w"]) for e in entries)
        if journal.closed_as is None:
            if not path.exists():
                raise RuntimeError(f"{journal.path} lists batches but their segment {path} is gone")
            self.write_part(path, journal.end, part)  # the acknowledged bytes (a failed write may have left more)
            journal.mark_closed(closed_name(w))
        assert journal.closed_as is not None
        name = journal.closed_as
        dst = self.closed_dir / name
        if part.exists():
            os.replace(part, dst)
            os.utime(dst, (w, w))
            fsync_dir(self.closed_dir)
        if name not in self.seen.closed:
            self.seen.add_closed(name, entries, count=count)
        path.unlink(missing_ok=True)
        journal.path.unlink(missing_ok=True)
        fsync_dir(self.open_dir)
        fsync_dir(self.journal_dir)
        for e in entries:
            self.open_index.pop(e["id"], None)
        logger.info("closed segment %s (%d batches, shuffled)", dst, len(entries))

    def maybe_rotate(self, force: bool = False) -> bool:
        """Close the open segment now when it is over its size or age (or ``force``) and not empty."""
        close = self.detach(force)
        if close is not None:
            close()
        return close is not None

    def close(self) -> None:
        """Close the open segment (when not empty) and the files."""
        self.repair()
        self.maybe_rotate(force=True)
        if self._fd is not None:  # an empty segment, or one not cut back (recover() cuts it on the next start)
            os.close(self._fd)
            if self.damaged is None:
                (self.open_dir / self._name).unlink(missing_ok=True)
                if self._journal is not None:
                    self._journal.path.unlink(missing_ok=True)
            self._fd = None
        if self._journal is not None:
            self._journal.close()
            self._journal = None


def convert_old_journal(log: AppLog) -> None:
    """Convert ``journal/journal.jsonl`` (one file, byte ranges and times of every batch) to the seen index and the
    open segments' journals, then remove it; run again whole if interrupted. Segments closed before are left as
    they are: the fold has counted them by checksum."""
    old = log.journal_dir / OLD_JOURNAL
    docs, _ = read_lines(old)
    base: list[dict[str, Any]] = []
    groups: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        if d.get("base") is True:
            base.append({**d, "w": coarse(float(d["t"]), log.granularity), "rc": 0})
            continue
        e = {k: v for k, v in d.items() if k not in ("seg", "t")}
        e["w"] = coarse(float(d["t"]), log.granularity)
        groups.setdefault(str(d["seg"]), []).append(e)
    seen: list[dict[str, Any]] = [{"base": True, **sums(base, base[0]["w"])}] if base else []
    for seg, entries in groups.items():
        if (log.open_dir / seg).exists():
            write_atomic(log.journal_dir / seg, dump_lines(entries))
            continue
        seen += [{"id": e["id"], "n": int(e["lines"]), "w": e["w"]} for e in entries]
        seen += [{"sum": sums(entries, min(e["w"] for e in entries)), "w": min(e["w"] for e in entries)},
                 {"closed": seg}]
    write_atomic(log.journal_dir / SEEN, dump_lines(seen))
    old.unlink()
    fsync_dir(log.journal_dir)
    logger.warning("journal of %s converted to the shuffled layout (%d batches)", log.dir.name, len(docs))
