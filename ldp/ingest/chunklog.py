"""One app's storage when the ingest service is a replica over shared storage (``[storage]`` in the config): each group
commit is one *chunk* object (:mod:`ldp.pipeline.chunks`), written whole, and a batch is acknowledged only after
its chunk is stored.

It stands where :class:`~ldp.ingest.applog.AppLog` stands for the local folder, and the writer thread
(:class:`~ldp.ingest.segments.SegmentWriter`) drives it the same way: :meth:`ChunkLog.commit` for a group of
batches, :meth:`ChunkLog.repair` as the probe while the store fails. There is nothing to rotate or close (a chunk
is complete once stored) and nothing to recover on start (nothing is acknowledged before its chunk is stored).

**Exactly once across replicas.** A device that lost an answer retries the same batch id, maybe against another
replica: both chunks then hold it. This log answers a retry it has itself stored since it started as a duplicate,
from memory; every other duplicate is removed by the shuffler stage, which reads every replica's chunks and keeps
each batch id once (:mod:`ldp.shuffler.stage`). Why there and not by a conditional write per batch id: the
conditional write would cost one request to the store per batch (at 10⁸ devices a day, 10⁸ requests, and a
listing-heavy shuffler over 10⁸ objects), while the group commit writes one object per commit whatever the
number of batches; and the shuffler must read every report and strip its batch id anyway.

**Rejected lines stay here.** A chunk holds the accepted lines of its batches only: every rejected line is kept in
this replica's data folder (``rejects/``, :mod:`ldp.ingest.rejects`), never in the shared store, whose chunks
the shuffler publishes to the analysts.

**The store failing** (down, slow past its timeouts, refusing): :meth:`commit` raises
:class:`~ldp.errors.StorageError`, the writer answers the group 503 (nothing acknowledged), goes into its error
state, and probes with :meth:`repair` (a small object written and removed) until the store works again.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from pathlib import Path

from ldp.errors import LeaseHeldError, StorageError
from ldp.ingest.applog import Batch, Stored, split_new
from ldp.ingest.config import Limits
from ldp.ingest.journal import AppStats, coarse
from ldp.ingest.rejects import RejectKeeper
from ldp.ingest.upload import BatchCounts
from ldp.pipeline.chunks import ChunkBatch, chunk_key, encode_chunk
from ldp.storage import Store

__all__ = ["ChunkLog"]


class _RecentIds:
    """The ids this log stored since it started, within the dedup horizon (the writer's ``seen`` chore calls
    :meth:`compact`)."""

    def __init__(self, horizon: float) -> None:
        self.horizon = horizon
        self.index: dict[str, tuple[BatchCounts, float]] = {}

    def compact(self, now: float) -> bool:
        old = [k for k, (_, at) in self.index.items() if at < now - self.horizon]
        for k in old:
            del self.index[k]
        return bool(old)


class ChunkLog:
    """One app's chunks in ``store``, written by replica ``replica`` (module docstring). ``app_dir`` is the local
    folder of what is not acknowledged data: the rejects kept for diagnosis."""

    def __init__(self, store: Store, app: str, replica: str, app_dir: Path, limits: Limits,
                 clock: Callable[[], float] = time.time, granularity: float = 86400.0) -> None:
        self.store, self.app, self.replica = store, app, replica
        self.dir, self.limits, self.clock, self.granularity = app_dir, limits, clock, granularity
        self.rejects = RejectKeeper(app_dir / "rejects", limits.max_reject_line_bytes, limits.reject_bytes_per_day,
                                    limits.reject_retention_days)
        self.seen = _RecentIds(limits.dedup_horizon_seconds)
        self.deferred: list[Callable[[], None]] = []
        self._stats = AppStats()
        self._seq = 0
        self.failed = False

    @property
    def stats(self) -> AppStats:
        return self._stats

    def recover(self) -> dict[str, int]:
        """Nothing to cut back: a chunk is stored whole or not at all. The rejects past their retention are
        deleted."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rejects.expire(self.clock())
        return {"journal_bytes": 0, "segment_bytes": 0}

    def known(self, batch_id: str) -> BatchCounts | None:
        hit = self.seen.index.get(batch_id)
        return None if hit is None else hit[0]

    def commit(self, items: list[Batch]) -> list[tuple[Batch, Stored]]:
        """Store the new batches of ``items`` as one chunk; every item's answer. :class:`StorageError` (and
        nothing stored, nothing acknowledged) when the store fails."""
        answers, new = split_new(items, self.known)
        if not new:
            return answers
        at = self.clock()
        w = coarse(at, self.granularity)
        budget = (self.rejects.day, self.rejects.used)
        kept = [self.rejects.keep(it.body, it.rejects or [], at, in_body=False) for it in new]
        batches = [ChunkBatch(it.batch_id, int(w), int(self.granularity),
                              k.body if not k.body or k.body.endswith(b"\n") else k.body + b"\n")
                   for it, k in zip(new, kept, strict=True)]
        self._seq += 1
        key = chunk_key(self.app, self.replica, at, self._seq, self.store.fence)
        try:
            if not self.store.create(key, encode_chunk(batches)):
                raise StorageError(errno.EEXIST, f"{self.store.url}: chunk {key} exists already: not overwritten "
                                                 "(another process writing under this replica's name?)")
        except StorageError:
            self.rejects.day, self.rejects.used = budget
            self.failed = True
            raise
        self.rejects.append(b"".join(k.side for k in kept), at)
        for it, k in zip(new, kept, strict=True):
            self.seen.index[it.batch_id] = (it.counts, at)
            self._stats.add(it.counts, len(k.body), w, k.left_out, k.unkept)
        return answers

    def repair(self) -> bool:
        """After a failed commit: ``True`` once a probe object can be written to and removed from the store."""
        if not self.failed:
            return True
        key = f"replicas/{self.replica}/probe"
        claim = self.store.lease
        try:
            if claim is not None:  # lost (a pause, the store down): taken again, unless another process holds it
                claim.start()
            self.store.put(key, b"probe")
            self.store.delete(key)
        except (StorageError, LeaseHeldError):
            return False
        self.failed = False
        return True

    def detach(self, force: bool = False) -> Callable[[], None] | None:
        """Nothing to rotate: every chunk is complete when stored."""
        return None

    def close(self) -> None:
        """Nothing open."""

    def __repr__(self) -> str:
        return f"ChunkLog({self.app!r} on {self.store.url}, replica {self.replica!r})"
