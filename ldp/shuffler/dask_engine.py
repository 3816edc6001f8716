"""The shuffler's Dask engine (``ldp shuffle --engine dask``, the ``dask`` extra): the chunks read, deduplicated,
stripped and permuted per window as Dask operations, so that a window larger than one machine's memory is mixed
across workers. The lease, the plan, the run record and its completion stay the stage's (:mod:`ldp.shuffler.stage`);
this engine supplies the chunk index and window counts the plan needs, and the mix (an
:class:`~ldp.shuffler.engine.Engine`).

Workers open the store themselves (:func:`store_spec`) and write only under the run's staging prefix
``apps/<app>/shuffler/staging/<run>/``, unseen by analysts; the client writes each marker and publishes, through the
lease-checked store. No line reaches the client: only per-batch metadata.

1. **Plan**: one row per batch (chunk, position, id digest, window, lines, bytes, checksum), kept on the workers.
2. **Dedup**: the rows in 16 partitions by the digest's first byte >> 4 (:mod:`ldp.shuffler.seen`'s), each in
   (chunk, position) order: a batch is kept if it is its id's first copy and no earlier run within the horizon
   mixed it (:meth:`~ldp.shuffler.seen.SeenIds.mixed_before` on the worker); each stages its kept digests.
3. **Mix**: a window of ``B`` bytes kept gets ``M = ceil(B / PART_BYTES)`` parts. Tasks of at most ``READ_BYTES``
   keep only the lines (nothing of the batch, replica or order), each with an independent uniform 64-bit key from
   ``os.urandom`` on the worker; its part is the key's range, ``floor(key·M / 2⁶⁴)`` on the top 32 bits. A P2P
   shuffle (spilled to the workers' disks) brings each part to one task, which orders it by key and stages it.
   Memory per worker: a few parts and the P2P buffers, whatever the window's size.
4. **Check and mark**: a window's parts must hold exactly its kept lines — count, bytes, and two 31-bit sums of a
   SipHash per line (a multiset checksum: a part recomputed with other keys after a worker was lost cannot make a
   line go missing or twice unnoticed) — or nothing is published; then its marker names its parts. A rerun
   publishes a window from its marker and stages again only one without (a new attempt, in its own folder).
5. **Publish**: part ``k`` is copied with ``create`` to ``segments/closed/<stem>-p<k:05d>.jsonl`` (``<stem>``: the
   run record's name for the window; one there is left), then the ids are recorded. Staging is removed once the
   run is ``done`` (removed before, a kill would have the rerun mix a published window again).

**Uniformity.** The keys are independent and uniform, so the order by key is a uniform permutation of the window
(ties: probability below n²/2⁶⁵), and its parts, in order, are that order cut at fixed key values: random subsets
whose law does not depend on who sent which line. Seeing the parts is post-processing of the shuffled multiset: a
report hides among its whole window, and a stem's parts count as one segment (:mod:`ldp.pipeline.amplification`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import secrets
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    import dask
    import dask.dataframe as dd
    import distributed
    import pandas as pd
    import pyarrow as pa
except ImportError:  # pragma: no cover - the dask extra missing: say which
    from ldp.extras import require_extra

    require_extra("ldp shuffle --engine dask", "dask", ("dask", "distributed", "pandas", "pyarrow"))
    raise
import numpy as np
from dask.utils import parse_bytes
from distributed.system import MEMORY_LIMIT

from ldp.pipeline.chunks import incoming_prefix
from ldp.shuffler.dask_tasks import (
    METRIC_SUMS,
    PARTS,
    SUMS,
    TABLE,
    deduped,
    empty,
    found_lines,
    per_metric,
    read,
    scan,
    stage_part,
    store_spec,
    threads,
)
from ldp.shuffler.engine import anonymity_entry
from ldp.shuffler.lines import LineCounts, LineRules
from ldp.shuffler.seen import DIGEST_DTYPE, SeenIds
from ldp.storage.lease import FencedStore

__all__ = ["DaskEngine", "local_cluster", "store_spec", "PART_BYTES", "READ_BYTES", "STAGING_FORMAT"]

PART_BYTES = 64 * 2**20  # bytes of lines of a part on average: ceil(window bytes / PART_BYTES) parts
READ_BYTES = 16 * 2**20  # kept lines a mixing task reads at most (a larger chunk is one task): the P2P input pieces
SCAN_CHUNKS = 16  # chunks per task of the plan's scan (a chunk is one group commit of a replica: KB to a few MB)
PUBLISH_THREADS = 2  # parts copied at a time when publishing: the client holds at most this many
STAGING_FORMAT = "ldp-shuffle-staging/1"


def staging_prefix(app: str, run_id: str | None = None) -> str:
    return f"apps/{app}/shuffler/staging/" + (f"{run_id}/" if run_id else "")


def local_cluster(n_workers: int | None = None, memory_limit: str | int | None = None) -> distributed.LocalCluster:
    """Worker processes here for one run: ``n_workers`` (default: the cores, 1 to 4), a thread each, each with
    ``memory_limit`` (default: 3/4 of the memory, shared), P2P buffers of 1/16 of it, Arrow on ``malloc`` (trimmed)."""
    n = n_workers or max(1, min(4, os.cpu_count() or 1))
    limit = parse_bytes(memory_limit) if isinstance(memory_limit, str) else memory_limit or int(MEMORY_LIMIT * .75 / n)
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ"), "ARROW_DEFAULT_MEMORY_POOL": "system"}
    with dask.config.set({"distributed.p2p.comm.buffer": (b := max(16 * 2**20, limit // 16)),
                          "distributed.p2p.storage.buffer": b, "distributed.nanny.pre-spawn-environ": environ}):
        return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, memory_limit=limit,
                                        dashboard_address=":0", silence_logs=logging.ERROR)


class DaskEngine:
    """The Dask engine of one run over ``store`` (lease-checked), a context manager: on ``scheduler`` (an address) or
    a :func:`local_cluster` of its own (an :class:`~ldp.shuffler.engine.Engine`). ``rules``: the check of the lines
    (both engines mix and record the same)."""

    engine = "dask"

    def __init__(self, store: FencedStore, app: str, scheduler: str | None, rules: LineRules) -> None:
        self.store, self.app, self.scheduler, self.rules = store, app, scheduler, rules
        self.spec, self._stack = store_spec(store), contextlib.ExitStack()
        self.client: Any = None
        self._table: tuple[list[str], dd.DataFrame] | None = None

    def __enter__(self) -> DaskEngine:
        target = self.scheduler or self._stack.enter_context(local_cluster())
        self.client = self._stack.enter_context(distributed.Client(target, set_as_default=False))
        return self

    def __exit__(self, *exc: object) -> None:
        self._table = None
        self._stack.close()

    def _get(self, *xs: Any) -> Any:  # optimized first: the blockwise steps of a part fused, none of them held
        out = self.client.compute([x.optimize() for x in xs], sync=True)  # several: computed together
        return out[0] if len(xs) == 1 else out

    def _scan(self, keys: list[str]) -> dd.DataFrame:
        parts = [[(i + j, k) for j, k in enumerate(keys[i:i + SCAN_CHUNKS])] for i in range(0, len(keys), SCAN_CHUNKS)]
        return self.client.persist(dd.from_map(scan, parts, spec=self.spec, rules=self.rules,
                                               meta=empty(TABLE)).optimize())

    def plan_inputs(self, keys: list[str]) -> tuple[dict[str, Counter[tuple[int, int]]], Callable[
            [set[tuple[int, int]]], dict[tuple[int, int], dict[str, int]]]]:
        """The index of chunks ``keys`` (per chunk, its batches per window) and the ``reports`` callback of
        :func:`~ldp.shuffler.stage.plan_run`, computed on the workers (their table kept for the mix)."""
        index: dict[str, Counter[tuple[int, int]]] = {k: Counter() for k in keys}
        if not keys:
            return index, lambda ready: {}
        table = self._scan(keys)
        self._table = (keys, table)
        for (c, *w), n in self._get(table.groupby(["chunk", "window", "length"]).size()).items():
            index[keys[c]][(int(w[0]), int(w[1]))] = int(n)

        def reports(ready: set[tuple[int, int]]) -> dict[tuple[int, int], dict[str, int]]:
            sel = table.map_partitions(lambda df: df[pd.MultiIndex.from_arrays([df["window"], df["length"]])
                                                     .isin(sorted(ready))])
            rows = deduped(sel, self.spec, self.app, None, None, None)
            sums = self._get(rows[rows["keep"]].map_partitions(per_metric, meta=empty(METRIC_SUMS)).groupby(
                ["window", "length", "metric"])["count"].sum())
            out: dict[tuple[int, int], dict[str, int]] = {}
            for (w, length, m), n in sums.items():
                out.setdefault((int(w), int(length)), {})[str(m)] = int(n)
            return out

        return index, reports

    def __call__(self, store: FencedStore, app: str, rec: Mapping[str, Any], dedup_seconds: float,
                 chunks: Any = None) -> tuple[dict[str, dict[str, Any]], int]:
        """Mix the recorded run ``rec`` (module docstring): stage the windows no marker covers, publish, record the
        ids; the anonymity set per window and the duplicates dropped (``chunks``: unused, the workers read them)."""
        stage = staging_prefix(app, rec["id"])
        markers = {w: _json(store, f"{stage}windows/{w.replace(':', '-')}.json") for w in rec["outputs"]}
        run = _json(store, f"{stage}run.json")
        if run is None or None in markers.values():
            run = self._stage(store, app, rec, dedup_seconds, [w for w, m in markers.items() if m is None])
            markers = {w: _json(store, f"{stage}windows/{w.replace(':', '-')}.json") for w in rec["outputs"]}
        anonymity = {}
        for w, name in rec["outputs"].items():
            m = markers[w] or {}
            parts = [p["key"] for p in m["parts"]] if name is not None else []
            stem = f"apps/{app}/segments/closed/{str(name).removesuffix('.jsonl')}"

            def publish(kp: tuple[int, str], stem: str = stem) -> None:  # create-if-absent (segments: put only)
                store.create(f"{stem}-p{kp[0]:05d}.jsonl", store.get(kp[1]))

            threads(publish, list(enumerate(parts)), PUBLISH_THREADS)
            entry = anonymity_entry(f"{stem}.jsonl" if parts else None, m["by_metric"], m["batches"], m["replicas"],
                                    name, rec, w, m.get("found", {}))
            anonymity[w] = {**entry, "parts": len(parts)}
        seen = SeenIds(store, app)
        for key in run["ids"]:
            seen.record(rec["id"], float(rec["at"]), np.frombuffer(store.get(key), DIGEST_DTYPE), fence=store.fence)
        return anonymity, int(run["duplicates"])

    def _stage(self, store: FencedStore, app: str, rec: Mapping[str, Any], dedup_seconds: float,
               todo: list[str]) -> dict[str, Any]:
        """Dedup (its ``run.json``), then mix, check and mark the windows ``todo``."""
        stage, attempt = staging_prefix(app, rec["id"]), secrets.token_hex(4)
        base = f"{stage}{attempt}/"
        SeenIds(store, app).migrate()  # records of the earlier format rewritten here, under the lease
        keys, table = list(rec["chunks"]), None
        if self._table is not None and set(keys) <= set(self._table[0]):  # the plan's table: its rows of the run
            at = {k: i for i, k in enumerate(self._table[0])}
            keys, table = self._table[0], self._table[1][self._table[1]["chunk"].isin(sorted(at[k] for k in keys))]
        rows = self.client.persist(deduped(self._scan(keys) if table is None else table, self.spec, app,
                                            float(rec["at"]) - dedup_seconds, rec["id"], f"{base}ids/").optimize())
        kept_rows = rows[rows["keep"]]
        dropped, sums, by_metric, found = self._get(  # one round trip to the workers for the four
            rows[~rows["keep"]][["chunk", "pos"]],
            kept_rows.groupby(["window", "length", "chunk"]).agg({"pos": "count", **{c: "sum" for c in SUMS}}),
            kept_rows.map_partitions(per_metric, meta=empty(METRIC_SUMS)).groupby(
                ["window", "length", "metric"])[list(SUMS)].sum(),
            kept_rows.map_partitions(found_lines, meta=empty({"window": "int64", "length": "int64",
                                                              "found": "object"})))
        sums, by_metric = sums.reset_index(), by_metric.reset_index()
        del rows, kept_rows
        run = dict(format=STAGING_FORMAT, attempt=attempt, duplicates=len(dropped), ids=store.list(f"{base}ids/"))
        store.put(f"{stage}run.json", json.dumps(run, sort_keys=True).encode())
        sums["w"] = [f"{w}:{length}" for w, length in zip(sums["window"], sums["length"], strict=True)]
        sums["replica"] = [keys[c][len(incoming_prefix(app)):].split("/", 1)[0] for c in sums["chunk"]]
        windows: dict[str, tuple[int, int]] = {}
        where: list[str | None] = []
        for w in todo:
            if m := math.ceil(int(sums.loc[sums["w"] == w, "nbytes"].sum()) / PART_BYTES):
                windows[w] = (len(where), m)
                stem = None if rec["outputs"][w] is None else f"{base}{w.replace(':', '-')}/"
                where += [None if stem is None else f"{stem}{k:05d}" for k in range(m)]
        drops = {w: sorted(rec.get("drop", {}).get(w, {})) for w in windows}
        by_metric["w"] = [f"{w}:{length}" for w, length in zip(by_metric["window"], by_metric["length"],
                                                                strict=True)]
        found["w"] = [f"{w}:{length}" for w, length in zip(found["window"], found["length"], strict=True)]
        results = self._mix(keys, dropped, sums[sums["w"].isin(windows)], windows, where, attempt,
                            drops) if where else None
        for w in todo:  # each window's parts checked against its kept batches' sums, then its marker written
            first, m = windows.get(w, (0, 0))
            parts = results.loc[first:first + m - 1] if results is not None and m else empty(PARTS)
            kept = sums[sums["w"] == w]
            written = by_metric[(by_metric["w"] == w) & ~by_metric["metric"].isin(rec.get("drop", {}).get(w, {}))]
            want, got = [int(written[c].sum()) for c in SUMS], [int(parts[c].sum()) for c in SUMS]
            lines = LineCounts()
            for doc in found.loc[found["w"] == w, "found"]:
                lines.add(LineCounts(**json.loads(doc)))
            if got != want or len(parts) != m:
                raise RuntimeError(f"shuffler window {w}: its {len(parts)} of {m} mixed parts do not hold exactly its "
                                   f"kept lines (lines, bytes, checksums {got} for {want}): nothing published, the "
                                   "next run mixes it again")
            metrics = sum((Counter(json.loads(doc)) for doc in parts["metrics"]), Counter[str]())
            store.put(f"{stage}windows/{w.replace(':', '-')}.json", json.dumps({
                "format": STAGING_FORMAT, "window": w, "attempt": attempt, "reports": want[0],
                "found": lines.to_dict(), "by_metric": dict(
                    sorted(metrics.items())), "batches": int(kept["pos"].sum()), "replicas": kept["replica"].nunique(),
                "parts": [{"key": k, "lines": int(n)} for k, n in zip(parts["key"], parts["count"], strict=True) if k]},
                sort_keys=True).encode())
        return run

    def _mix(self, keys: list[str], dropped: pd.DataFrame, sums: pd.DataFrame, windows: dict[str, tuple[int, int]],
             where: list[str | None], attempt: str, withheld: Mapping[str, Sequence[str]]) -> pd.DataFrame:
        """The parts of ``windows`` (``w`` → (first part, parts)) staged; one row per part, by part."""
        drops = dropped.groupby("chunk")["pos"].agg(list).to_dict()
        nbytes = sums.groupby("chunk")["nbytes"].sum()  # chunks in order, cut every READ_BYTES of kept lines
        at = ((nbytes.cumsum() - nbytes) // READ_BYTES).to_numpy()
        groups = [[(keys[c], drops.get(c, [])) for c in nbytes.index[at == g]] for g in np.unique(at)]
        meta = empty({"target": "int64", "key": "uint64", "line": pd.ArrowDtype(pa.large_binary())})
        spans = {tuple(map(int, w.split(":"))): span for w, span in windows.items()}
        lines = dd.from_map(read, groups, spec=self.spec, windows=spans, attempt=attempt, rules=self.rules,
                            drops={tuple(map(int, w.split(":"))): d for w, d in withheld.items() if d}, meta=meta)
        shuffled = lines.set_index("target", divisions=[*range(len(where)), len(where) - 1], shuffle_method="p2p")
        out = shuffled.map_partitions(stage_part, self.spec, where, LineRules.metrics, meta=empty(PARTS))
        return self._get(out).set_index("target").sort_index()

    def prune(self, before: float) -> None:
        """Forget the ids of runs older than ``before``; remove the staging of runs no longer ``started``."""
        SeenIds(self.store, self.app).prune(before)
        prefix = staging_prefix(self.app)
        self.drop_staging([r for r in sorted({k[len(prefix):].split("/", 1)[0] for k in self.store.list(prefix)})
                           if (_json(self.store, f"apps/{self.app}/shuffler/runs/{r}.json") or {}).get("state")
                           != "started"])

    def drop_staging(self, run_ids: Sequence[str]) -> None:
        """Delete the staging of runs recorded ``done`` (or closed)."""
        threads(self.store.delete, [k for r in run_ids for k in self.store.list(staging_prefix(self.app, r))])


def _json(store: FencedStore, key: str) -> dict[str, Any] | None:
    with contextlib.suppress(FileNotFoundError):
        return dict(json.loads(store.get(key)))
    return None
