"""The shuffler stage (``ldp shuffle``): the chunks every replica wrote become anonymized segments, one per arrival
window, in which a report hides among *all* the reports of its window, whichever replica took them.

One run, for one app (Prochlo's Encode–Shuffle–Analyze; Apple's ingestion, thesis 004 §5.2.1):

1. **Finish** any earlier run that stopped midway (its record in ``apps/<app>/shuffler/runs/`` says ``started``).
2. **Plan.** Read every chunk under ``apps/<app>/incoming/`` (:mod:`ldp.shuffler.chunks`). A window is *ready*
   when its end is ``grace`` seconds past (a replica's commit in flight, or its clock a little behind, still lands
   before the window is mixed). A chunk is consumed when all its windows are ready; a window is released when all
   the chunks holding it are consumed (so it is mixed whole); one of fewer than ``min_reports`` reports is held
   for late chunks, then withheld for good (:func:`shuffle_app`). The run's record — the chunks, and a fresh random
   name per released window — is written before anything else.
3. **Mix.** Per window, the lines of its batches, each batch id once: a retry stored by two replicas (the answer
   lost, the device sent it again elsewhere) or twice by one is kept once, and an id already mixed by an earlier
   run within the dedup horizon is dropped. What linked a report to its sender — batch id, replica, arrival
   order and time finer than the window — is not written: the lines go out in a uniformly random order from the
   OS CSPRNG (:func:`ldp.collector.shuffle.shuffle_lines`), named ``<UTC window start>-<16 random hex>.jsonl``
   under ``apps/<app>/segments/closed/`` (the names the collector's shuffled storage uses), each written with
   :meth:`~ldp.storage.Store.create`.
4. **Record** the ids mixed (``shuffler/seen/<run>.json``, for later runs' deduplication), then the run as
   ``done`` with the anonymity set it achieved per window — reports in all, per metric, replicas, batches,
   duplicates dropped — and only then delete the chunks (or move them under ``apps/<app>/consumed/`` with
   ``keep_originals``), and mark the run ``closed``.

**Killed at any point, a rerun is idempotent**: before the record, nothing was written; after it, the chunks are
still there until the run is done, a window's segment is either whole or absent (objects are written whole), so the
rerun writes the missing ones from the same chunks, with the same deduplication (its own ids excluded), and counts
the same anonymity set.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ldp.collector.shuffle import closed_name, shuffle_lines
from ldp.shuffler.chunks import CHUNK_SUFFIX, ChunkBatch, decode_chunk, incoming_prefix
from ldp.errors import StorageError
from ldp.storage import Store
from ldp.storage.lease import DEFAULT_TTL_SECONDS, FencedStore, Lease

__all__ = ["RUN_FORMAT", "ShuffleRun", "shuffle_app", "shuffler_lease", "check_app_store", "DEFAULT_GRACE_SECONDS", "DEFAULT_DEDUP_SECONDS",
           "DEFAULT_HOLD_SECONDS"]

RUN_FORMAT = "ldp-shuffle-run/1"
IO_THREADS = 16
"""Requests to the store at a time when reading or removing chunks."""
DEFAULT_GRACE_SECONDS = 300.0
"""How long past a window's end its chunks may still arrive before it is mixed."""
DEFAULT_DEDUP_SECONDS = 7 * 86400.0
"""How long a mixed batch id is remembered (a retry later than this would be counted twice)."""
DEFAULT_HOLD_SECONDS = 7 * 86400.0
"""How long a window below ``min_reports`` waits for late chunks before it is withheld for good."""


@dataclass
class ShuffleRun:
    """What one run did: its id, the chunks consumed, per released window its segment and anonymity set, the
    windows held (not ready), duplicates dropped, and whether it finished an earlier run."""

    run_id: str | None
    chunks: list[str] = field(default_factory=list)
    windows: dict[str, dict[str, Any]] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    resumed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run_id, "chunks": len(self.chunks), "windows": self.windows, "held": self.held,
                "duplicates": self.duplicates, "resumed": self.resumed}


def _runs(app: str) -> str:
    return f"apps/{app}/shuffler/runs/"


def _seen(app: str) -> str:
    return f"apps/{app}/shuffler/seen/"


def _each(store: Store, fn: Callable[[str], Any], keys: list[str]) -> list[Any]:
    """``fn`` over ``keys`` in order, ``IO_THREADS`` requests to the store at a time (object stores answer each
    request in tens of ms: one at a time, a day of chunks would take hours to read)."""
    if len(keys) < 2:
        return [fn(k) for k in keys]
    with ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="ldp-shuffle-io") as pool:
        return list(pool.map(fn, keys))


def _read_chunks(store: Store, keys: list[str]) -> dict[str, list[ChunkBatch]]:
    datas = _each(store, store.get, keys)
    return {k: decode_chunk(data, f"{store.url}/{k}") for k, data in zip(keys, datas, strict=True)}


def _seen_ids(store: Store, app: str, since: float, exclude: str) -> set[str]:
    """The batch ids mixed by earlier runs (not ``exclude``) whose record is newer than ``since``."""
    out: set[str] = set()
    for key in store.list(_seen(app)):
        doc = json.loads(store.get(key))
        if doc["run"] != exclude and float(doc["at"]) >= since:
            out.update(doc["ids"])
    return out


def shuffler_lease(store: Store, app: str, ttl: float = DEFAULT_TTL_SECONDS) -> Lease:
    """The lease that makes one ``ldp shuffle`` of ``app`` run at a time (:mod:`ldp.storage.lease`), under
    ``apps/<app>/shuffler/lease/``."""
    return Lease(store, f"apps/{app}/shuffler/lease/", f"shuffler of {app}", ttl=ttl)


def check_app_store(store: Store, app: str) -> None:
    """Refuse a store (or an app) that is not there, naming what is missing, before anything is written to it: a
    typo in a timer's ``--store`` or ``--app`` must fail, not report "nothing to mix" for months. The app is there
    once a replica wrote a chunk of it or a shuffler ran for it."""
    if store.list(incoming_prefix(app)) or store.list(f"apps/{app}/shuffler/"):
        return
    if not store.root_exists():
        raise FileNotFoundError(f"no store at {store.url}: " + ("no such folder" if store.url.startswith("file://")
                                                                  else "no such bucket (or no access to it)"))
    others = sorted({k.split("/")[1] for k in store.list("apps/") if k.count("/") >= 2})[:10]
    raise FileNotFoundError(f"{store.url} holds nothing of app {app!r} (no apps/{app}/incoming/ chunks, no "
                            "apps/{app}/shuffler/ records): a wrong --store or --app? "
                            + (f"apps there: {', '.join(others)}" if others else "it holds no app at all"))


def shuffle_app(store: Store, app: str, *, now: float | None = None, grace_seconds: float = DEFAULT_GRACE_SECONDS,
                dedup_seconds: float = DEFAULT_DEDUP_SECONDS, keep_originals: bool = False,
                min_reports: int = 0, hold_seconds: float = DEFAULT_HOLD_SECONDS,
                lease_seconds: float = DEFAULT_TTL_SECONDS, lease: Lease | None = None) -> ShuffleRun:
    """One run of the stage for ``app`` (module docstring); what it did. A window of fewer than ``min_reports``
    reports (its batches counted once) is held — a report would hide among too few — until late chunks make it
    large enough, or ``hold_seconds`` past its end, when it is withheld for good: its chunks removed, nothing
    released (``withheld`` in its anonymity entry).

    The run holds the app's shuffler lease (:func:`shuffler_lease`, ``lease_seconds`` long, renewed while it runs;
    or ``lease``, not yet acquired) and writes only through it: :class:`~ldp.errors.LeaseHeldError` if another run
    holds it, :class:`~ldp.errors.LeaseLostError` (nothing more written) if this one loses it. A store or app that
    is not there is :class:`FileNotFoundError` (:func:`check_app_store`)."""
    now = time.time() if now is None else float(now)
    if not (grace_seconds >= 0 and dedup_seconds > 0 and hold_seconds >= 0):
        raise ValueError(f"grace_seconds and hold_seconds must be >= 0 and dedup_seconds > 0, got {grace_seconds}, "
                         f"{hold_seconds}, {dedup_seconds}")
    if isinstance(min_reports, bool) or not isinstance(min_reports, int) or min_reports < 0:
        raise ValueError(f"min_reports must be an int >= 0, got {min_reports!r}")
    check_app_store(store, app)
    lease = lease if lease is not None else shuffler_lease(store, app, lease_seconds)
    with lease.hold():
        return _run(FencedStore(store, lease), app, now, grace_seconds, dedup_seconds, keep_originals, min_reports,
                    hold_seconds)


def _run(store: FencedStore, app: str, now: float, grace_seconds: float, dedup_seconds: float,
         keep_originals: bool, min_reports: int, hold_seconds: float) -> ShuffleRun:
    """:func:`shuffle_app` once the lease is held: every write through ``store`` checks it first."""
    _prune_seen(store, app, now - 2 * dedup_seconds)
    resumed = []
    for key in store.list(_runs(app)):
        rec = json.loads(store.get(key))
        if rec.get("format") != RUN_FORMAT:
            raise ValueError(f"{store.url}/{key} is not an {RUN_FORMAT} record")
        if rec["state"] != "closed":
            _complete(store, app, rec, now, dedup_seconds, keep_originals)
            resumed.append(rec["id"])
    keys = [k for k in store.list(incoming_prefix(app)) if k.endswith(CHUNK_SUFFIX)]
    chunks = _read_chunks(store, keys)
    windows_of = {k: {(b.window, b.length) for b in bs} for k, bs in chunks.items()}
    ready = {w for ws in windows_of.values() for w in ws if now >= w[0] + w[1] + grace_seconds}
    small = _small_windows(chunks, ready, min_reports)
    withheld = {w for w in small if now >= w[0] + w[1] + grace_seconds + hold_seconds}
    ready -= small - withheld
    consumable = {k for k, ws in windows_of.items() if ws <= ready}
    blocked = {w for k, ws in windows_of.items() if k not in consumable for w in ws}
    released = sorted(w for w in ready if w not in blocked)
    consumed = sorted(k for k in consumable if windows_of[k] <= set(released))
    held = Counter(str(b.window) for k, bs in chunks.items() if k not in consumed for b in bs)
    if not consumed:
        return ShuffleRun(None, held=dict(sorted(held.items())), resumed=resumed)
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + f"-{secrets.token_hex(4)}"
    rec = {"format": RUN_FORMAT, "id": run_id, "state": "started", "at": now, "chunks": consumed, "fence": store.fence,
           "outputs": {f"{w}:{length}": None if (w, length) in withheld else closed_name(w, store.fence)
                       for w, length in released}, "min_reports": min_reports}
    if not store.create(f"{_runs(app)}{run_id}.json", json.dumps(rec, sort_keys=True).encode()):
        raise StorageError(0, f"{store.url}: a shuffler run {run_id} is already recorded (never overwritten)")
    done = _complete(store, app, rec, now, dedup_seconds, keep_originals, {k: chunks[k] for k in consumed})
    done.held, done.resumed = dict(sorted(held.items())), resumed
    return done


def _complete(store: FencedStore, app: str, rec: dict[str, Any], now: float, dedup_seconds: float, keep: bool,
              chunks: Mapping[str, list[ChunkBatch]] | None = None) -> ShuffleRun:
    """Do (or finish) the run ``rec``: write the missing segments, the ids, the record ``done``, then remove the
    chunks. Everything it computes depends only on the chunks and the earlier runs' ids."""
    run_id, keys = rec["id"], list(rec["chunks"])
    result = ShuffleRun(run_id, keys)
    if rec["state"] == "started":
        if chunks is None:
            chunks = _read_chunks(store, keys)
        before = _seen_ids(store, app, float(rec["at"]) - dedup_seconds, exclude=run_id)
        taken: set[str] = set()
        by_window: dict[str, list[tuple[str, ChunkBatch]]] = {}
        for key in keys:  # chunk order: the first copy of a batch is kept
            replica = key[len(incoming_prefix(app)):].split("/", 1)[0]
            for b in chunks[key]:
                if b.batch_id in before or b.batch_id in taken:
                    result.duplicates += 1
                    continue
                taken.add(b.batch_id)
                by_window.setdefault(f"{b.window}:{b.length}", []).append((replica, b))
        anonymity: dict[str, dict[str, Any]] = {}
        for window, name in rec["outputs"].items():
            items = by_window.get(window, [])
            data = b"".join(b.lines for _, b in items)
            key = None if name is None or not data else f"apps/{app}/segments/closed/{name}"
            if key is not None and not store.exists(key):
                store.create(key, bytes(shuffle_lines(data)))
            anonymity[window] = {"segment": key, "reports": data.count(b"\n"), "by_metric": _by_metric(data),
                                 "batches": len(items), "replicas": len({r for r, _ in items})}
            if name is None:
                anonymity[window]["withheld"] = f"fewer than min_reports = {rec.get('min_reports')} reports"
        store.put(f"{_seen(app)}{run_id}.json",
                  json.dumps({"run": run_id, "at": rec["at"], "ids": sorted(taken)}).encode())
        rec = {**rec, "state": "done", "anonymity": anonymity, "duplicates": result.duplicates, "finished": now,
               "finished_fence": store.fence}
        store.put(f"{_runs(app)}{run_id}.json", json.dumps(rec, sort_keys=True).encode())
    result.windows, result.duplicates = dict(rec["anonymity"]), int(rec["duplicates"])
    def consume(key: str) -> None:
        if keep and store.exists(key):
            store.put(f"apps/{app}/consumed/{key[len(incoming_prefix(app)):]}", store.get(key))
        store.delete(key)

    _each(store, consume, keys)
    store.put(f"{_runs(app)}{run_id}.json", json.dumps({**rec, "state": "closed"}, sort_keys=True).encode())
    return result


def _small_windows(chunks: Mapping[str, list[ChunkBatch]], ready: set[tuple[int, int]],
                   min_reports: int) -> set[tuple[int, int]]:
    """The ready windows with fewer than ``min_reports`` reports in these chunks, each batch id counted once."""
    if min_reports <= 0:
        return set()
    counts: Counter[tuple[int, int]] = Counter()
    ids: set[str] = set()
    for key in sorted(chunks):
        for b in chunks[key]:
            if (b.window, b.length) in ready and b.batch_id not in ids:
                ids.add(b.batch_id)
                counts[(b.window, b.length)] += b.count
    return {w for w in ready if counts[w] < min_reports}


def _prune_seen(store: Store, app: str, before: float) -> None:
    """Remove the id records older than ``before`` (twice the dedup horizon: never one still consulted)."""
    for key in store.list(_seen(app)):
        if float(json.loads(store.get(key))["at"]) < before:
            store.delete(key)


def _by_metric(data: bytes) -> dict[str, int]:
    """Reports per ``<spec>/<metric>`` of envelope lines (the set a report hides among is its own metric's)."""
    counts: Counter[str] = Counter()
    for line in data.splitlines():
        try:
            doc = json.loads(line)
            counts[f"{doc['spec']}/{doc['metric']}"] += 1
        except (ValueError, KeyError, TypeError):
            counts["(unparsed)"] += 1
    return dict(sorted(counts.items()))
