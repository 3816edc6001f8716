"""The local shuffle engine (``ldp shuffle --engine local``, the default): the run's chunks read into this
process, each line made canonical (:mod:`ldp.shuffler.lines`), each window's kept lines permuted from the OS CSPRNG
(:func:`~ldp.pipeline.shuffle.shuffle_lines`) and written as one segment. An :class:`~ldp.shuffler.engine.Engine`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from ldp.pipeline.chunks import ChunkBatch, decode_chunk, incoming_prefix
from ldp.pipeline.shuffle import shuffle_lines
from ldp.shuffler.engine import anonymity_entry, each
from ldp.shuffler.lines import LineCounts, LineRules
from ldp.shuffler.plan import Window
from ldp.shuffler.seen import SeenIds, first_copies, id_digests
from ldp.storage import Store
from ldp.storage.lease import FencedStore

__all__ = ["LocalEngine", "checked", "mix_local", "read_chunks", "window_reports"]


class LocalEngine:
    """The local engine of a run (an :class:`~ldp.shuffler.engine.Engine`): the chunks read once by
    :meth:`plan_inputs`, in this process, serve the plan and the run's mix; nothing is staged."""

    engine = "local"

    def __init__(self, store: FencedStore, app: str, rules: LineRules) -> None:
        self.store, self.app, self.rules = store, app, rules
        self.chunks: dict[str, list[ChunkBatch]] = {}

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def prune(self, before: float) -> None:
        """Remove the id records older than ``before`` (twice the dedup horizon: never one still consulted), by
        their names alone (:meth:`~ldp.shuffler.seen.SeenIds.prune`)."""
        SeenIds(self.store, self.app).prune(before)

    def plan_inputs(self, keys: list[str]) -> tuple[dict[str, Counter[Window]],
                                                    Callable[[set[Window]], dict[Window, Counter[str]]]]:
        """The chunks' index (batches per window) and the report counter :func:`plan_run` asks."""
        self.chunks = read_chunks(self.store, keys, self.rules)
        index = {k: Counter((b.window, b.length) for b in bs) for k, bs in self.chunks.items()}
        return index, lambda ready: window_reports(self.chunks, ready)

    def drop_staging(self, run_ids: list[str]) -> None:
        """Nothing is staged."""

    def __call__(self, store: FencedStore, app: str, rec: Mapping[str, Any], dedup_seconds: float,
                 chunks: Mapping[str, list[ChunkBatch]] | None) -> tuple[dict[str, dict[str, Any]], int]:
        if chunks is None and all(k in self.chunks for k in rec["chunks"]):  # read for the plan already
            chunks = {k: self.chunks[k] for k in rec["chunks"]}
        return mix_local(store, app, rec, dedup_seconds, chunks, self.rules)


def read_chunks(store: Store, keys: list[str], rules: LineRules) -> dict[str, list[ChunkBatch]]:
    """The chunks' batches, their lines made canonical by ``rules`` (what was found in ``found``)."""
    datas = each(store, store.get, keys)
    return {k: [checked(b, rules) for b in decode_chunk(data, f"{store.url}/{k}")]
            for k, data in zip(keys, datas, strict=True)}


def checked(b: ChunkBatch, rules: LineRules) -> ChunkBatch:
    """``b`` with its lines canonical (:meth:`~ldp.shuffler.lines.LineRules.canonical`) and what was found."""
    lines, found = rules.canonical(b.lines)
    return ChunkBatch(b.batch_id, b.window, b.length, lines, found.to_dict())


def mix_local(store: FencedStore, app: str, rec: Mapping[str, Any], dedup_seconds: float,
               chunks: Mapping[str, list[ChunkBatch]] | None, rules: LineRules
               ) -> tuple[dict[str, dict[str, Any]], int]:
    """The local engine's mix (:class:`~ldp.shuffler.engine.Engine`): the run's chunks in this process's memory
    (their lines canonical), each window's lines but those of its withheld metrics permuted by
    :func:`~ldp.pipeline.shuffle.shuffle_lines` and written as one segment."""
    run_id, keys = rec["id"], list(rec["chunks"])
    if chunks is None:
        chunks = read_chunks(store, keys, rules)
    order = [(key[len(incoming_prefix(app)):].split("/", 1)[0], b) for key in keys for b in chunks[key]]
    digests = id_digests([b.batch_id for _, b in order])  # in chunk order: the first copy of a batch is kept
    seen = SeenIds(store, app)
    keep = first_copies(digests) & ~seen.mixed_before(digests, float(rec["at"]) - dedup_seconds, exclude_run=run_id)
    by_window: dict[str, list[tuple[str, ChunkBatch]]] = {}
    for (replica, b), kept in zip(order, keep.tolist(), strict=True):
        if kept:
            by_window.setdefault(f"{b.window}:{b.length}", []).append((replica, b))
    anonymity: dict[str, dict[str, Any]] = {}
    for window, name in rec["outputs"].items():
        items = by_window.get(window, [])
        data = LineRules.drop(b"".join(b.lines for _, b in items), rec.get("drop", {}).get(window, {}))
        key = None if name is None or not data else f"apps/{app}/segments/closed/{name}"
        if key is not None:  # create-if-absent: a rerun leaves a whole one as it is (never read: put only)
            store.create(key, bytes(shuffle_lines(data)))
        found = LineCounts()
        for _, b in items:
            found.add(LineCounts(**(b.found or {})))
        anonymity[window] = anonymity_entry(key, LineRules.metrics(data), len(items), len({r for r, _ in items}),
                                            name, rec, window, found.to_dict())
    seen.record(run_id, float(rec["at"]), digests[keep], fence=store.fence)
    return anonymity, int((~keep).sum())


def window_reports(chunks: Mapping[str, list[ChunkBatch]], ready: set[Window]) -> dict[Window, Counter[str]]:
    """The reports of the ``ready`` windows in these chunks per metric, each batch id counted once."""
    counts: dict[Window, Counter[str]] = {}
    ids: set[str] = set()
    for key in sorted(chunks):
        for b in chunks[key]:
            if (b.window, b.length) in ready and b.batch_id not in ids:
                ids.add(b.batch_id)
                counts.setdefault((b.window, b.length), Counter()).update(LineRules.metrics(b.lines))
    return counts
