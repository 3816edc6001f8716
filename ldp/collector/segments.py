"""Durable, exactly-once storage of uploaded batches: segment files, a journal, group commit.

Per app (``DATA/apps/<app>``): ``segments/open/`` holds the segment being appended to,
``segments/closed/`` the rotated ones (immutable, named ``<UTC yyyymmddTHHMMSSZ>-<seq:06d>.jsonl``),
``journal/journal.jsonl`` one line per stored batch (id, segment, end offset, counts, time).

A batch is acknowledged only after its lines are fsynced in the segment *and then* its journal
line is fsynced. One writer thread does all the writing; it takes every batch queued at once and
commits them with one fsync of each file touched (group commit). On start, each open segment is
cut back to the end of its last journaled batch (bytes past it belong to batches never
acknowledged, which their clients resend) and closed; the batch ids of every segment are
rebuilt from the journal, so a batch id is stored once, ever.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ldp.collector.config import CollectorConfig, Limits
from ldp.collector.ingest import BatchCounts
from ldp.errors import QueueFull, WriterClosed
from ldp.server.store import fsync_dir, write_atomic

__all__ = ["Batch", "Stored", "AppLog", "SegmentWriter", "JOURNAL", "QueueFull", "WriterClosed"]

logger = logging.getLogger(__name__)
JOURNAL = "journal.jsonl"
_TICK = 0.25  # seconds between checks of segment age and of the counters file


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


class SegmentWriter:
    """The writer thread of every app: :meth:`start` recovers and starts it, :meth:`submit`
    queues a batch (from any thread), :meth:`close` stores what is queued and stops."""

    def __init__(self, config: CollectorConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.logs = {name: AppLog(config.app_dir(name), config.limits, clock) for name in config.apps}
        self._queue: queue.Queue[Batch | None] = queue.Queue(maxsize=config.limits.max_pending_batches)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.refused: Counter[str] = Counter()
        self.error: str | None = None
        self.closing = False
        self.started_at = time.time()
        self._dirty = True
        self._counters_at = 0.0
        # the slow, non-urgent file work (moving rotated segments, rewriting ingest.json) runs on its own
        # thread, so that a batch never waits behind it for its fsync and its answer
        self.jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._chores: threading.Thread | None = None

    @property
    def healthy(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.error is None and not self.closing

    @property
    def pending(self) -> int:
        """Batches queued and not yet taken by the writer thread."""
        return self._queue.qsize()

    def start(self) -> dict[str, dict[str, int]]:
        """Recover every app (see :meth:`AppLog.recover`) and start the writer thread."""
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        cut = {name: log.recover() for name, log in self.logs.items()}
        self._chores = threading.Thread(target=self._run_chores, name="ldp-collector-chores", daemon=True)
        self._chores.start()
        self._thread = threading.Thread(target=self._run, name="ldp-collector-writer", daemon=True)
        self._thread.start()
        return cut

    def known(self, app: str, batch_id: str) -> BatchCounts | None:
        """The counts of a batch id already stored for ``app`` (counted as a duplicate), else ``None``."""
        counts = self.logs[app].index.get(batch_id)  # a dict lookup: no lock needed
        if counts is not None:
            with self._lock:
                self.logs[app].stats.duplicates += 1
                self._dirty = True
        return counts

    def submit(self, batch: Batch) -> None:
        """Queue ``batch``: :class:`QueueFull` or :class:`WriterClosed` when it cannot be."""
        if self.closing or not self.healthy:
            raise WriterClosed(self.error or "the collector is shutting down")
        try:
            self._queue.put_nowait(batch)
        except queue.Full:
            raise QueueFull() from None

    def count_refusal(self, reason: str) -> None:
        with self._lock:
            self.refused[reason] += 1
            self._dirty = True

    def close(self, timeout: float = 30.0) -> None:
        """Stop taking batches, store the queued ones, close every segment, write ``ingest.json``."""
        self.closing = True
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)
        if self._chores is not None and self._chores.is_alive():
            self.jobs.put(None)
            self._chores.join(timeout)
        for log in self.logs.values():
            try:
                log.close()
            except OSError:
                logger.exception("closing the segments of %s", log.dir)
        self.write_counters()

    # -- the thread ------------------------------------------------------------------------------------
    def _run(self) -> None:
        stop = False
        while not stop:
            try:
                items: list[Batch | None] = [self._queue.get(timeout=_TICK)]
            except queue.Empty:
                items = []
            while True:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = None in items
            batches = [it for it in items if it is not None]
            if batches:
                self._commit(batches)
            self._maintain()

    def _commit(self, batches: list[Batch]) -> None:
        by_app: dict[str, list[Batch]] = {}
        for b in batches:
            by_app.setdefault(b.app, []).append(b)
        for app, items in by_app.items():
            try:
                answers = self.logs[app].commit(items)
            except OSError as exc:
                self.error = f"writing the segments of {app!r} failed: {exc.strerror or exc}"
                logger.error("%s", self.error)
                for it in items:
                    it.done(WriterClosed(self.error))
                continue
            self.error = None
            with self._lock:
                self.logs[app].stats.duplicates += sum(stored.duplicate for _, stored in answers)
                self._dirty = True
            for it, stored in answers:
                it.done(stored)

    def _maintain(self) -> None:
        """Rotate segments and refresh the counters: decided here, the file work queued as chores."""
        for log in self.logs.values():
            try:
                move = log.detach()
            except OSError as exc:
                self.error = f"rotating a segment of {log.dir} failed: {exc.strerror or exc}"
                logger.error("%s", self.error)
                continue
            if move is not None:
                self.jobs.put(move)
        now = time.monotonic()
        if self._dirty and now - self._counters_at >= 1.0 and self.jobs.empty():
            data = (json.dumps(self.counters(), indent=1) + "\n").encode()
            self.jobs.put(lambda: self._write_counters(data))
            self._counters_at = now

    def _run_chores(self) -> None:
        while (job := self.jobs.get()) is not None:
            try:
                job()
            except OSError as exc:
                self.error = f"closing a segment or writing the counters failed: {exc.strerror or exc}"
                logger.error("%s", self.error)
            finally:
                self.jobs.task_done()
        self.jobs.task_done()

    def counters(self) -> dict[str, Any]:
        """The ``ingest.json`` document."""
        with self._lock:
            refused = dict(sorted(self.refused.items()))
            self._dirty = False
        return {"updated": round(time.time(), 3), "started": round(self.started_at, 3),
                "apps": {name: log.stats.to_dict() for name, log in self.logs.items()}, "refused": refused}

    def write_counters(self) -> None:
        """Rewrite ``DATA/ingest.json`` atomically."""
        self._write_counters((json.dumps(self.counters(), indent=1) + "\n").encode())

    def _write_counters(self, data: bytes) -> None:
        try:
            write_atomic(self.config.data_dir / "ingest.json", data)
        except OSError:
            logger.exception("cannot write ingest.json")
