"""Durable, exactly-once storage of uploaded batches: the writer thread and its group commit.

Every app's batches go through one :class:`SegmentWriter`: :meth:`~SegmentWriter.submit` queues a batch (from
any thread; :class:`QueueFull` or :class:`WriterClosed` when it cannot), and one writer thread takes every batch
queued at once and commits them with one fsync of each file touched (group commit) through each app's
:class:`~ldp.ingest.applog.AppLog` (the segment files and the journal, recovered on :meth:`~SegmentWriter.start`).
A batch is acknowledged (its ``done`` called) only after its lines and then its journal line are fsynced. The slow,
non-urgent file work (moving rotated segments to ``closed/``, rewriting the ``DATA/ingest.json`` counters) runs
on a second thread, so that a batch never waits behind it; the heaviest of it (shuffling a closing segment's copy)
in a worker process (:class:`~ldp.ingest.closer.PartWriter`), in short slices, so that it neither holds the GIL
the event loop needs nor keeps a core or the disk from it for long.

**Storage errors heal.** A failed write (``ENOSPC``, ``EIO``) answers its batches 503 and puts the writer in error:
uploads get 503 with ``Retry-After`` and ``/healthz`` says why. Every :data:`PROBE_SECONDS` the writer thread cuts
the apps' files back where a write failed (:meth:`AppLog.repair`) and writes, fsyncs and removes a
:data:`PROBE_BYTES` probe file in the data folder; when that works the error is cleared and uploads are taken
again, without a restart. A segment move that fails is tried again later, without stopping uploads.
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
from typing import Any

from ldp.errors import QueueFull, WriterClosed
from ldp.ingest.applog import AppLog, Batch, Stored
from ldp.ingest.chunklog import ChunkLog
from ldp.ingest.claim import remember_claim, replica_claim
from ldp.ingest.closer import PartWriter, write_part
from ldp.ingest.config import AppConfig, IngestConfig
from ldp.ingest.journal import ClosedCounts, coarse
from ldp.ingest.upload import BatchCounts
from ldp.jobs.store import fsync_dir, write_all, write_atomic
from ldp.storage.lease import FencedStore, Lease
from ldp.storage.roles import RoleStore, replica_role

__all__ = ["Batch", "Stored", "AppLog", "SegmentWriter", "QueueFull", "WriterClosed", "granularity"]

logger = logging.getLogger(__name__)
_TICK = 0.25  # seconds between checks of segment age and of the counters file
PROBE_SECONDS = 1.0
"""Seconds between two probes of the storage while the writer is in error."""
PROBE_BYTES = 256 * 2**10
"""Size of the probe file: a write this big must work before uploads are taken again."""
COMPACT_SECONDS = 60.0
"""Seconds between two checks of the journals' dedup horizon (:meth:`~ldp.ingest.journal.SeenIndex.compact`) and
of the rejects' retention (:meth:`~ldp.ingest.rejects.RejectKeeper.expire`)."""


def granularity(app: AppConfig) -> float:
    """The window (s) an app's arrival times are coarsened to: its specs' shortest window, at most a day."""
    return float(min([86400, *(s.window_seconds for s in app.specs.values())]))


class SegmentWriter:
    """The writer thread of every app: :meth:`start` recovers and starts it, :meth:`submit`
    queues a batch (from any thread), :meth:`close` stores what is queued and stops."""

    def __init__(self, config: IngestConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.logs: dict[str, AppLog | ChunkLog] = {}
        self.claim: Lease | None = None
        """A replica's claim on its name in the shared store (:mod:`ldp.ingest.claim`), taken at :meth:`start`."""
        store = config.storage.open() if config.storage is not None else None
        if store is not None:
            assert config.replica is not None and config.storage is not None  # the config requires one
            store = RoleStore(store, replica_role(config.replica))  # its chunks and its claim, nothing else
            self.claim = replica_claim(store, config.replica, config.data_dir, config.storage.claim_seconds)
            store = FencedStore(store, self.claim)  # every chunk written under the claim, checked first
        for name, app in config.apps.items():
            if store is None:
                self.logs[name] = AppLog(config.app_dir(name), config.limits, clock, granularity(app))
            else:
                assert config.replica is not None
                self.logs[name] = ChunkLog(store, name, config.replica, config.app_dir(name), config.limits, clock,
                                           granularity(app))
        self.granularity = min((log.granularity for log in self.logs.values()), default=86400.0)
        """The window ``ingest.json``'s times are coarsened to (the apps' shortest)."""
        self._queue: queue.Queue[Batch | None] = queue.Queue(maxsize=config.limits.max_pending_batches)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.refused: Counter[str] = Counter()
        self.error: str | None = None
        self.error_since: float | None = None
        self.recovered: dict[str, Any] | None = None  # the last error healed: {"error", "since", "at"}
        self.warning: str | None = None  # a chore failed (tried again); uploads go on
        self.on_commit: Callable[[str, int, float], None] | None = None
        """Called by the writer thread after each app's group commit: (app, batches, seconds writing + fsyncing)."""
        self._probe_at = 0.0
        self._compact_at = time.monotonic()
        self.closing = False
        self.started_at = time.time()
        self._dirty = True
        self._counters_at = 0.0
        # the slow, non-urgent file work (moving rotated segments, rewriting ingest.json) runs on its own
        # thread, so that a batch never waits behind it for its fsync and its answer
        self.jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._chores: threading.Thread | None = None
        self.parts = PartWriter()
        """Writes the shuffled copies of closing segments in a worker process (:mod:`ldp.ingest.closer`), so that
        the close's work neither holds the GIL the event loop needs nor takes a core from it for long."""

    @property
    def healthy(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.error is None and not self.closing

    def health(self) -> dict[str, Any]:
        """What ``/healthz`` answers: ``status`` (``ok``, ``storage_error`` while writes fail and uploads are refused,
        ``closing``, ``stopped``), the error and since when, the last error healed, a chore's warning, the queue."""
        status = ("closing" if self.closing else "stopped" if self._thread is None or not self._thread.is_alive()
                  else "storage_error" if self.error is not None else "ok")
        doc: dict[str, Any] = {"status": status, "pending": self.pending}
        if self.error is not None:
            doc.update(error=self.error, error_since=self.error_since,
                       detail=f"uploads are refused; the storage is probed every {PROBE_SECONDS:g} s and uploads "
                              "resume by themselves when a write works")
        if self.recovered is not None:
            doc["recovered"] = self.recovered
        if self.warning is not None:
            doc["warning"] = self.warning
        return doc

    @property
    def pending(self) -> int:
        """Batches queued and not yet taken by the writer thread."""
        return self._queue.qsize()

    def take_claim(self) -> None:
        """A replica: take the claim on its name in the shared store and renew it from then on (``ldp serve`` does
        it before it listens; :meth:`start` if not yet). :class:`~ldp.errors.LeaseHeldError` naming the process that
        holds it; :class:`~ldp.errors.ConditionalWriteError` for a store without an exclusive create. Nothing for
        an ingest service on a local folder."""
        if self.claim is not None and self.claim.token is None:
            self.claim.start()
            remember_claim(self.claim, self.config.data_dir)

    def start(self) -> dict[str, dict[str, int]]:
        """Take a replica's claim (:meth:`take_claim`), recover every app (see :meth:`AppLog.recover`) and start
        the writer thread."""
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        self.take_claim()
        cut = {name: log.recover() for name, log in self.logs.items()}  # in-process: nothing is served yet
        for log in self.logs.values():
            if isinstance(log, AppLog):
                log.write_part = self.parts
            for close in log.deferred:
                self.jobs.put(close)
            log.deferred.clear()
        self._chores = threading.Thread(target=self._run_chores, name="ldp-collector-chores", daemon=True)
        self._chores.start()
        self._thread = threading.Thread(target=self._run, name="ldp-collector-writer", daemon=True)
        self._thread.start()
        return cut

    def known(self, app: str, batch_id: str) -> BatchCounts | ClosedCounts | None:
        """The counts of a batch id already stored for ``app`` (counted as a duplicate), else ``None``."""
        counts = self.logs[app].known(batch_id)  # dict lookups: no lock needed
        if counts is not None:
            with self._lock:
                self.logs[app].stats.duplicates += 1
                self._dirty = True
        return counts

    def submit(self, batch: Batch) -> None:
        """Queue ``batch``: :class:`QueueFull` or :class:`WriterClosed` when it cannot be."""
        if self.closing or not self.healthy:
            raise WriterClosed(self.error or "the ingest service is shutting down")
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
        self.parts.stop()
        for log in self.logs.values():
            if isinstance(log, AppLog):
                log.write_part = write_part  # nothing is served any more: in-process, no worker started for it
            try:
                log.close()
            except OSError:
                logger.exception("closing the segments of %s", log.dir)
        self.write_counters()
        if self.claim is not None:
            self.claim.stop()  # released: a replica started next under this name need not wait

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
            if self.error is not None:  # queued before the error: refused as the next uploads are
                for it in items:
                    it.done(WriterClosed(self.error))
                continue
            t0 = time.perf_counter()
            try:
                answers = self.logs[app].commit(items)
            except OSError as exc:
                self._fail(f"writing the segments of {app!r} failed: {exc.strerror or exc}")
                for it in items:
                    it.done(WriterClosed(self.error or "storage error"))
                continue
            if self.on_commit is not None:
                self.on_commit(app, len(items), time.perf_counter() - t0)
            with self._lock:
                self.logs[app].stats.duplicates += sum(stored.duplicate for _, stored in answers)
                self._dirty = True
            for it, stored in answers:
                it.done(stored)

    def _fail(self, error: str) -> None:
        """Enter the error state (uploads refused with 503 until :meth:`_probe` succeeds)."""
        if self.error is None:
            self.error_since = time.time()
        self.error = error
        self._probe_at = time.monotonic() + PROBE_SECONDS
        logger.error("%s; uploads are refused until the storage works again", error)

    def _probe(self) -> None:
        """Cut back what failed writes left, then write, fsync and remove a probe file: the error is cleared when
        all of it works."""
        try:
            if not all(log.repair() for log in self.logs.values()):
                raise OSError("a segment or journal cannot be cut back yet")
            path = self.config.data_dir / ".probe"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                write_all(fd, bytes(PROBE_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
                path.unlink(missing_ok=True)
            fsync_dir(self.config.data_dir)
        except OSError as exc:
            logger.debug("storage probe failed: %s", exc.strerror or exc)
            self._probe_at = time.monotonic() + PROBE_SECONDS
            return
        self.recovered = {"error": self.error, "since": self.error_since, "at": round(time.time(), 3)}
        logger.warning("storage works again after %.1f s: taking uploads (%s)",
                       time.time() - (self.error_since or time.time()), self.error)
        self.error = self.error_since = None

    def _maintain(self) -> None:
        """Rotate segments and refresh the counters: decided here, the file work queued as chores; probe the
        storage while in error; compact the journals now and then."""
        if self.error is not None and time.monotonic() >= self._probe_at:
            self._probe()
        for log in self.logs.values():
            try:
                move = log.detach()
            except OSError as exc:
                self._fail(f"rotating a segment of {log.dir} failed: {exc.strerror or exc}")
                continue
            if move is not None:
                self.jobs.put(move)
        now = time.monotonic()
        if now - self._compact_at >= COMPACT_SECONDS:  # on the chores thread, which appends to the seen index
            self._compact_at = now
            for log in self.logs.values():
                self.jobs.put(lambda log=log: log.seen.compact(time.time()))  # type: ignore[misc]
                self.jobs.put(lambda log=log: log.rejects.expire(log.clock()))  # type: ignore[misc]
        if self._dirty and now - self._counters_at >= 1.0 and self.jobs.empty():
            data = (json.dumps(self.counters(), indent=1) + "\n").encode()
            self.jobs.put(lambda: self._write_counters(data))
            self._counters_at = now

    def _run_chores(self) -> None:
        while (job := self.jobs.get()) is not None:
            try:
                job()
                self.warning = None
            except OSError as exc:
                self.warning = f"closing a segment failed: {exc.strerror or exc} (tried again in {PROBE_SECONDS:g} s)"
                logger.error("%s", self.warning)
                if not self.closing:  # else the segment stays in open/, where recover() closes it on the next start
                    retry = threading.Timer(PROBE_SECONDS, self.jobs.put, (job,))
                    retry.daemon = True
                    retry.start()
            finally:
                self.jobs.task_done()
        self.jobs.task_done()

    def counters(self) -> dict[str, Any]:
        """The ``ingest.json`` document."""
        with self._lock:
            refused = dict(sorted(self.refused.items()))
            self._dirty = False
        g = self.granularity
        return {"updated": coarse(time.time(), g), "started": coarse(self.started_at, g),
                "apps": {name: log.stats.to_dict() for name, log in self.logs.items()}, "refused": refused}

    def write_counters(self) -> None:
        """Rewrite ``DATA/ingest.json`` atomically."""
        self._write_counters((json.dumps(self.counters(), indent=1) + "\n").encode())

    def _write_counters(self, data: bytes) -> None:
        try:
            path = self.config.data_dir / "ingest.json"
            write_atomic(path, data)
            w = coarse(time.time(), self.granularity)
            os.utime(path, (w, w))  # its times say the window, not when the last batch came
        except OSError:
            logger.exception("cannot write ingest.json")
