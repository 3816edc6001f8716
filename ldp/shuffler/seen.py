"""The batch ids the shuffler has mixed, for exactly-once by batch id across replicas and runs, in memory bounded
independently of how many ids are kept (issue 56, item 3).

**Digests.** An id is kept as its 16-byte digest ``blake2b(id, digest_size=16, person=b"ldp-batch-id")``
(:func:`id_digests`), a numpy array of dtype :data:`DIGEST_DTYPE` (``V16``: raw bytes, compared and sorted
bytewise over all 16 — unlike ``S16``, whose items lose their trailing zero bytes when read). The hash is
cryptographic, so a device cannot craft an id whose digest is another's; by chance, two of ``n`` ids collide with
probability at most ``n² / 2¹²⁹``: ≈ 1.5·10⁻²¹ at 10⁹ ids (one retry wrongly dropped, never a batch counted twice).

**Objects.** A run that mixed batches records their digests under ``apps/<app>/shuffler/seen/<run>/<p>.ids``, one
object per partition ``p`` (hex ``0``–``f``, the digest's first byte >> 4) holding at least one (an empty partition
has no object)::

    {"format": "ldp-seen/2", "run": "<run>", "at": <unix time>, "fence": <lease token or null>, "partition": <p>,
     "count": <n>}\\n
    <n × 16 bytes: the partition's digests, sorted bytewise, no repeat>

``<run>`` is ``YYYYmmddTHHMMSSZ-<8 hex>`` (UTC, the stage's run ids): a run's time is read from its KEY, to the
second below its ``at`` — a run at 12.7 s has key time 12 s, so it counts as *since* ``t`` when
``key time + 1 > t`` (it may be newer than ``t``: kept, conservatively) and as *older than* ``t`` when
``key time + 1 <= t`` (certainly older); the two are complements, so :meth:`SeenIds.prune` at ``t`` never removes
a run :meth:`SeenIds.mixed_before` at ``t`` would read. Records of the earlier format
(``seen/<run>.json`` = ``{"run", "at", "ids": [...]}``) still count: :meth:`SeenIds.migrate` (run first by
``mixed_before``) rewrites each as partition objects (fence ``null``), then deletes the JSON — killed midway, the
JSON is still there and the next migration rewrites the same objects. ``prune`` removes old ones of either format
from the listing alone.

**Checking** ``k`` candidates (:meth:`SeenIds.mixed_before`): one LIST, the candidates sorted once, then partition by
partition (only those holding a candidate) every selected run's object of that partition, read (at most
``io_threads`` reads in flight), checked, and searched — ``np.searchsorted`` over the digests' first 8 bytes as
integers, then the last 8 compared (exact: all 16 bytes). Memory: the candidates (16 B each), their sort order and
sorted words (24 B each) and flags (2 B each), and at most ``io_threads + 2`` objects (≈ 16 B × a run's ids / 16
each, 32 B while one is read) — whatever the number of ids or runs kept. Cost per run: one GET per (selected run,
partition) pair — 16 B read per id kept —, ``O(k log k)`` to sort the candidates and ``O(k_p log m_p)`` per object
of ``m_p`` digests; one PUT per partition recorded; no Python loop per id but the hashing. Pruning: one LIST and one
DELETE per object, no GET.

Damaged objects (a bad header, a size that is not 16 × count, digests unsorted, repeated or of another partition)
raise ``ValueError`` naming the object; the store's failures raise :class:`~ldp.errors.StorageError` (from the
store). Use in the stage::

    seen = SeenIds(store, app)
    digests = id_digests(batch_ids_in_chunk_order)
    keep = first_copies(digests) & ~seen.mixed_before(digests, at - dedup_seconds, exclude_run=run_id)
    ...
    seen.record(run_id, at, digests[keep], fence)
"""

from __future__ import annotations

import calendar
import functools
import hashlib
import json
import math
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from ldp.storage import Store, check_key

__all__ = ["FORMAT", "PARTITIONS", "DIGEST_DTYPE", "IO_THREADS", "SeenIds", "id_digests", "first_copies",
           "run_time"]

FORMAT = "ldp-seen/2"
PARTITIONS = 16
"""Partitions of the digests, by the first byte >> 4 (one is checked at a time)."""
DIGEST_SIZE = 16
DIGEST_DTYPE = np.dtype(f"V{DIGEST_SIZE}")
PERSON = b"ldp-batch-id"
IO_THREADS = 8
"""Requests to the store at a time (object stores are latency bound); also the objects read ahead."""
RUN_ID_RE = re.compile(r"(\d{8}T\d{6}Z)-[0-9a-f]{8}\Z")
_OBJECT_RE = re.compile(r"([^/]+)/([0-9a-f])\.ids\Z")
_LEGACY_RE = re.compile(r"([^/]+)\.json\Z")
_MAX_HEADER = 1024

_T = TypeVar("_T")
_R = TypeVar("_R")
_blake = functools.partial(hashlib.blake2b, digest_size=DIGEST_SIZE, person=PERSON)


def id_digests(ids: Sequence[str]) -> np.ndarray:
    """The digests of batch ``ids`` (module docstring), in order: a 1-d array of dtype :data:`DIGEST_DTYPE`."""
    if isinstance(ids, (str, bytes)):
        raise TypeError("id_digests takes a sequence of batch ids, not one")
    try:
        data = b"".join([_blake(i.encode()).digest() for i in ids])
    except AttributeError:
        raise TypeError("batch ids must be str") from None
    return np.frombuffer(data, DIGEST_DTYPE).copy()


def first_copies(digests: np.ndarray) -> np.ndarray:
    """``True`` at the first occurrence of each digest in array order (the stage keeps a batch's first copy)."""
    d = _as_digests(digests)
    order = np.argsort(d, kind="stable")
    ordered = d[order]
    first = np.ones(d.size, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    out = np.zeros(d.size, dtype=bool)
    out[order[first]] = True
    return out


def run_time(run_id: str) -> int:
    """The Unix second a run id names (``20241004T000000Z-1a2b3c4d`` → ``1728000000``): its *key time*, the run's
    ``at`` rounded down; ``ValueError`` if it is not a run id."""
    m = RUN_ID_RE.match(run_id) if isinstance(run_id, str) else None
    if m is None:
        raise ValueError(f"not a shuffler run id (YYYYmmddTHHMMSSZ-<8 hex>): {run_id!r}")
    return calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%SZ"))


def _as_digests(digests: np.ndarray) -> np.ndarray:
    if not isinstance(digests, np.ndarray) or digests.dtype != DIGEST_DTYPE or digests.ndim != 1:
        raise TypeError(f"digests must be a 1-d numpy array of dtype {DIGEST_DTYPE} (id_digests), got "
                        f"{getattr(digests, 'dtype', type(digests).__name__)} {getattr(digests, 'shape', '')}")
    return np.ascontiguousarray(digests)


def _partitions(sorted_digests: np.ndarray) -> np.ndarray:
    """Where each partition starts in sorted digests (``PARTITIONS + 1`` bounds)."""
    first = sorted_digests.view(np.uint8).reshape(-1, DIGEST_SIZE)[:, 0] >> 4
    return np.searchsorted(first, np.arange(PARTITIONS + 1))


def _words(digests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The high and low 8 bytes of each digest as native ``uint64`` (big-endian read: they order as the bytes)."""
    words = digests.view(">u8").reshape(-1, 2)
    return words[:, 0].astype(np.uint64), words[:, 1].astype(np.uint64)


def _found(kept_hi: np.ndarray, kept_lo: np.ndarray, repeats: bool, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Which digests (words ``hi``, ``lo``) are among the kept ones (sorted, distinct; ``repeats``: two share a high
    word) — exactly: both words equal."""
    if kept_hi.size == 0:
        return np.zeros(hi.size, dtype=bool)
    at = np.searchsorted(kept_hi, hi)  # the first kept digest whose high word is >= the candidate's
    if not repeats:  # the only kept digest that can equal it
        at = np.minimum(at, kept_hi.size - 1)
        equal: np.ndarray = (kept_hi[at] == hi) & (kept_lo[at] == lo)
        return equal
    found = np.zeros(hi.size, dtype=bool)
    todo = np.arange(hi.size)
    while todo.size:  # step through the kept digests sharing the high word (as many steps as the longest run)
        live = at < kept_hi.size
        todo, at = todo[live], at[live]
        live = kept_hi[at] == hi[todo]
        todo, at = todo[live], at[live]
        equal = kept_lo[at] == lo[todo]
        found[todo[equal]] = True
        todo, at = todo[~equal], at[~equal] + 1
    return found


def _stream(fn: Callable[[_T], _R], items: Sequence[_T], threads: int) -> Iterator[_R]:
    """``fn`` over ``items`` in order, ``threads`` at a time, read ahead at most ``threads`` results."""
    if not items:
        return
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ldp-seen-io")
    try:
        pending: deque[Future[_R]] = deque(pool.submit(fn, x) for x in items[:threads])
        following = threads
        while pending:
            result = pending.popleft().result()
            if following < len(items):
                pending.append(pool.submit(fn, items[following]))
                following += 1
            yield result
            del result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _each(fn: Callable[[_T], Any], items: Sequence[_T], threads: int) -> None:
    for _ in _stream(fn, items, threads):
        pass


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


class SeenIds:
    """The digests of the batch ids mixed by the runs of ``app``'s shuffler, in ``store`` (module docstring)."""

    def __init__(self, store: Store, app: str, *, io_threads: int = IO_THREADS) -> None:
        if not isinstance(app, str) or "/" in app:
            raise ValueError(f"an app name is one key part, got {app!r}")
        check_key(app)
        if not _is_int(io_threads) or io_threads < 1:
            raise ValueError(f"io_threads must be an int >= 1, got {io_threads!r}")
        self.store, self.app, self.io_threads = store, app, io_threads
        self.prefix = f"apps/{app}/shuffler/seen/"

    def _where(self, key: str) -> str:
        return f"{self.store.url}/{key}"

    def _key(self, run_id: str, p: int) -> str:
        return f"{self.prefix}{run_id}/{p:x}.ids"

    # -- writing ---------------------------------------------------------------------------------------------------
    def record(self, run_id: str, at: float, digests: np.ndarray, fence: int | None = None) -> None:
        """Record that run ``run_id`` (at Unix time ``at``, within the second its id names; ``fence``: the
        shuffler's lease token, only recorded) mixed ``digests`` (repeats are kept once). A rerun of the same run
        with the same digests rewrites the same bytes."""
        start = run_time(run_id)
        if isinstance(at, bool) or not isinstance(at, (int, float)) or not start <= at < start + 1:
            raise ValueError(f"at = {at!r} is not within the second run {run_id} names")
        if fence is not None and not _is_int(fence):
            raise ValueError(f"fence must be an int or None, got {fence!r}")
        self._write(run_id, float(at), np.unique(_as_digests(digests)), fence)

    def _write(self, run_id: str, at: float, unique: np.ndarray, fence: int | None) -> dict[int, str]:
        """Put the objects of the sorted distinct digests ``unique``; their keys by partition."""
        bounds = _partitions(unique)
        objects = {}
        for p in range(PARTITIONS):
            lo, hi = int(bounds[p]), int(bounds[p + 1])
            if hi > lo:
                head = {"format": FORMAT, "run": run_id, "at": at, "fence": fence, "partition": p, "count": hi - lo}
                objects[p] = (self._key(run_id, p), json.dumps(head).encode() + b"\n" + unique[lo:hi].tobytes())
        _each(lambda kv: self.store.put(*kv), list(objects.values()), self.io_threads)
        return {p: key for p, (key, _) in objects.items()}

    # -- the listing, the earlier format ---------------------------------------------------------------------------
    def _listing(self) -> tuple[dict[str, dict[int, str]], dict[str, str]]:
        """Per run, its objects by partition; and the records of the earlier format by run."""
        runs: dict[str, dict[int, str]] = {}
        legacy: dict[str, str] = {}
        for key in self.store.list(self.prefix):
            rel = key[len(self.prefix):]
            if (m := _OBJECT_RE.match(rel)) is not None and RUN_ID_RE.match(m.group(1)):
                runs.setdefault(m.group(1), {})[int(m.group(2), 16)] = key
            elif (m := _LEGACY_RE.match(rel)) is not None and RUN_ID_RE.match(m.group(1)):
                legacy[m.group(1)] = key
            else:
                raise ValueError(f"{self._where(key)} is neither a {FORMAT} object (<run>/<p>.ids) nor an id "
                                 "record of the earlier format (<run>.json)")
        return runs, legacy

    def _migrated(self) -> tuple[dict[str, dict[int, str]], int]:
        """The listing's runs once every record of the earlier format is rewritten (objects, then the JSON
        deleted), and how many were."""
        runs, legacy = self._listing()
        for run_id, key in legacy.items():
            data = self.store.get(key)
            try:
                doc = json.loads(data)
                ok = (isinstance(doc, dict) and doc.get("run") == run_id and isinstance(doc.get("ids"), list)
                      and all(isinstance(i, str) for i in doc["ids"]) and not isinstance(doc.get("at"), bool)
                      and isinstance(doc.get("at"), (int, float)) and math.isfinite(doc["at"]))
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"{self._where(key)} is not an id record of the earlier format "
                                 f'{{"run": "{run_id}", "at": <time>, "ids": [<str>...]}}')
            written = self._write(run_id, float(doc["at"]), np.unique(id_digests(doc["ids"])), None)
            runs.setdefault(run_id, {}).update(written)
            self.store.delete(key)
        return runs, len(legacy)

    def migrate(self) -> int:
        """Rewrite every id record of the earlier format as partition objects (then delete it); how many were."""
        return self._migrated()[1]

    # -- reading ---------------------------------------------------------------------------------------------------
    def _load(self, task: tuple[str, int, str]) -> tuple[np.ndarray, np.ndarray, bool]:
        """The digests of one object as their high and low 8-byte words (native integers: they compare as the
        bytes do), and whether two share a high word; checked (``ValueError`` naming the object if damaged)."""
        run_id, p, key = task
        data = self.store.get(key)
        nl = data.find(b"\n", 0, _MAX_HEADER)
        try:
            head = json.loads(data[:nl]) if nl > 0 else None
        except ValueError:
            head = None
        if not (isinstance(head, dict) and head.get("format") == FORMAT and head.get("run") == run_id
                and head.get("partition") == p and _is_int(head.get("count")) and head["count"] >= 0
                and isinstance(head.get("at"), (int, float)) and not isinstance(head["at"], bool)
                and (head.get("fence") is None or _is_int(head["fence"]))):
            raise ValueError(f"{self._where(key)} is damaged: no {FORMAT} header of run {run_id}, partition {p:x}")
        count, size = head["count"], len(data) - nl - 1
        if size != DIGEST_SIZE * count:
            raise ValueError(f"{self._where(key)} is damaged: {size} bytes of digests, its header says {count} × "
                             f"{DIGEST_SIZE}")
        hi, lo = _words(np.frombuffer(data, DIGEST_DTYPE, count=count, offset=nl + 1))
        same = hi[1:] == hi[:-1]
        ascending = np.all((hi[1:] > hi[:-1]) | (same & (lo[1:] > lo[:-1])))
        if count and not (hi[0] >> 60 == p == hi[-1] >> 60 and ascending):
            raise ValueError(f"{self._where(key)} is damaged: its digests are not sorted, distinct and all of "
                             f"partition {p:x}")
        return hi, lo, bool(same.any())

    def mixed_before(self, digests: np.ndarray, since: float, exclude_run: str | None = None) -> np.ndarray:
        """For each digest, whether a run other than ``exclude_run`` (the run checking: a rerun of it excludes
        itself), recorded since ``since`` (key time + 1 > ``since``), recorded it. Records of the earlier format
        are migrated first."""
        d = _as_digests(digests)
        if isinstance(since, bool) or not isinstance(since, (int, float)) or math.isnan(since):
            raise ValueError(f"since must be a number, got {since!r}")
        runs, _ = self._migrated()
        order = np.argsort(d)
        ordered = d[order]
        bounds = _partitions(ordered)
        tasks = [(run_id, p, parts[p]) for p in range(PARTITIONS) if bounds[p + 1] > bounds[p]
                 for run_id, parts in sorted(runs.items())
                 if run_id != exclude_run and run_time(run_id) + 1 > since and p in parts]
        hi, lo = _words(ordered)
        del ordered
        hits = np.zeros(d.size, dtype=bool)
        for (_, p, _), kept in zip(tasks, _stream(self._load, tasks, self.io_threads), strict=True):
            a, b = int(bounds[p]), int(bounds[p + 1])
            hits[a:b] |= _found(*kept, hi[a:b], lo[a:b])
            del kept
        out = np.empty(d.size, dtype=bool)
        out[order] = hits
        return out

    # -- forgetting --------------------------------------------------------------------------------------------------
    def prune(self, before: float) -> int:
        """Delete the objects (and records of the earlier format) of the runs certainly older than ``before``
        (key time + 1 <= ``before``), from the listing alone; how many objects were deleted."""
        if isinstance(before, bool) or not isinstance(before, (int, float)) or math.isnan(before):
            raise ValueError(f"before must be a number, got {before!r}")
        runs, legacy = self._listing()
        doomed = [k for run_id, parts in runs.items() if run_time(run_id) + 1 <= before for k in parts.values()]
        doomed += [k for run_id, k in legacy.items() if run_time(run_id) + 1 <= before]
        _each(self.store.delete, sorted(doomed), self.io_threads)
        return len(doomed)

    def __repr__(self) -> str:
        return f"SeenIds({self.store!r}, {self.app!r})"
