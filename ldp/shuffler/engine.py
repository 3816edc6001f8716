"""The shuffle engines' contract (``ldp shuffle --engine``): what the run (:mod:`ldp.shuffler.stage`) asks of the
engine that reads the chunks and mixes them, whichever it is. The run owns the lease, the plan, the run record and
its completion; an engine owns reading and mixing:

* the local engine (:mod:`ldp.shuffler.local_engine`), in this process;
* the Dask engine (:mod:`ldp.shuffler.dask_engine`), on a cluster, so that a window larger than one machine's
  memory is mixed across workers.

The run picks one by name (:func:`ldp.shuffler.stage.open_engine`). Both record a window's anonymity set the same way
(:func:`anonymity_entry`) and read the store :data:`IO_THREADS` requests at a time (:func:`each`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from ldp.storage import Store

if TYPE_CHECKING:
    from ldp.pipeline.chunks import ChunkBatch
    from ldp.shuffler.plan import Reports, Window
    from ldp.storage.lease import FencedStore

__all__ = ["ENGINES", "Engine", "IO_THREADS", "anonymity_entry", "each"]

ENGINES = ("local", "dask")
"""The engines by name (``ldp shuffle --engine``)."""
IO_THREADS = 16
"""Requests to the store at a time when reading or removing chunks."""


class Engine(Protocol):
    """An engine of one run over the lease-checked store, a context manager (a cluster is started and stopped
    with it). Its calls, in the order the run makes them:

    1. :meth:`prune` the dedup records too old to be consulted (and, for an engine that stages, the staging of runs
       no longer ``started``);
    2. :meth:`plan_inputs` of the chunk keys the plan may consume: per chunk its batches per window, and the
       counter of each ready window's reports per metric (each batch id once) that the thresholds judge;
    3. ``engine(store, app, rec, dedup_seconds, chunks)`` — the **mix** of a recorded run: write its missing
       segments (created if absent, under the names in ``rec["outputs"]``) and the ids it mixed (excluding the
       batch ids of earlier runs within ``dedup_seconds``), return the anonymity set per window and the duplicate
       batches dropped. Idempotent: a rerun after a kill writes only what is missing, from the same chunks, to the
       same result; the same for a run resumed by the other engine's record being refused;
    4. :meth:`drop_staging` of the runs done with.
    """

    engine: str
    """Its name (:data:`ENGINES`), recorded in the run record: a run is finished by the engine that started it."""

    def __enter__(self) -> Engine: ...

    def __exit__(self, *exc: object) -> None: ...

    def prune(self, before: float) -> None: ...

    def plan_inputs(self, keys: list[str]) -> tuple[Mapping[str, Mapping[Window, int]], Reports]: ...

    def drop_staging(self, run_ids: list[str]) -> None: ...

    def __call__(self, store: FencedStore, app: str, rec: Mapping[str, Any], dedup_seconds: float,
                 chunks: Mapping[str, list[ChunkBatch]] | None) -> tuple[dict[str, dict[str, Any]], int]: ...


def each(store: Store, fn: Callable[[str], Any], keys: Iterable[str]) -> list[Any]:
    """``fn`` over ``keys`` in order, :data:`IO_THREADS` requests to the store at a time (object stores answer each
    request in tens of ms: one at a time, a day of chunks would take hours to read)."""
    keys = list(keys)
    if len(keys) < 2:
        return [fn(k) for k in keys]
    with ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="ldp-shuffle-io") as pool:
        return list(pool.map(fn, keys))


def anonymity_entry(key: str | None, by_metric: Mapping[str, int], batches: int, replicas: int, name: str | None,
                    rec: Mapping[str, Any], window: str, found: Mapping[str, int]) -> dict[str, Any]:
    """A window's anonymity set as a run records it: its segment, reports in all and per metric (those written),
    batches, replicas; the metrics withheld on their own (``{metric: [devices, threshold]}``), why the window was
    withheld whole; what the check of its lines found (:class:`~ldp.shuffler.lines.LineCounts`), when anything."""
    entry: dict[str, Any] = {"segment": key, "reports": sum(by_metric.values()), "by_metric": dict(
        sorted(by_metric.items())), "batches": batches, "replicas": replicas}
    if name is None:
        entry["withheld"] = f"every metric below its threshold (min_reports = {rec.get('min_reports')} at least)"
    if drop := rec.get("drop", {}).get(window):
        entry["withheld_metrics"] = drop
    if found:
        entry["lines"] = dict(found)
    return entry
