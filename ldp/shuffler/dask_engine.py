"""The shuffler's Dask engine (``ldp shuffle --engine dask``, the ``dask`` extra): the chunks read, deduplicated,
stripped and permuted per window as Dask operations, so that a window larger than one machine's memory is mixed
across workers. The lease, the plan, the run record and its completion stay the stage's (:mod:`ldp.shuffler.stage`);
this engine supplies the chunk index and window counts the plan needs, and the ``Mix`` (a :class:`DaskEngine`).

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
report hides among its whole window, and a stem's parts count as one segment (:mod:`ldp.collector.amplification`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import secrets
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

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
from pandas.util import hash_array

from ldp.shuffler.chunks import decode_chunk, incoming_prefix
from ldp.shuffler.seen import DIGEST_DTYPE, PARTITIONS, SeenIds, first_copies, id_digests
from ldp.storage import Store, open_store
from ldp.storage.lease import FencedStore

__all__ = ["DaskEngine", "local_cluster", "store_spec", "PART_BYTES", "READ_BYTES", "STAGING_FORMAT"]

PART_BYTES = 64 * 2**20  # bytes of lines of a part on average: ceil(window bytes / PART_BYTES) parts
READ_BYTES = 16 * 2**20  # kept lines a mixing task reads at most (a larger chunk is one task): the P2P input pieces
SCAN_CHUNKS = 16  # chunks per task of the plan's scan (a chunk is one group commit of a replica: KB to a few MB)
IO_THREADS = 8  # requests to the store at a time within one task
PUBLISH_THREADS = 2  # parts copied at a time when publishing: the client holds at most this many
BLOCK_BYTES = 4 * 2**20  # lines counted and checksummed this many bytes at a time (their objects: a block's worth)
STAGING_FORMAT = "ldp-shuffle-staging/1"
_HASH_KEY = "ldp-shuffle-mset"  # SipHash key of the checksum (it detects, it does not hide: no secret)
_LOW31 = np.uint64(0x7FFFFFFF)
_TABLE = {"chunk": "int64", "pos": "int64", "hi": "uint64", "lo": "uint64", "window": "int64", "length": "int64",
          "count": "int64", "nbytes": "int64", "h1": "int64", "h2": "int64"}
_SUMS = ("count", "nbytes", "h1", "h2")
_PARTS = {"target": "int64", **{c: "int64" for c in _SUMS}, "metrics": "object", "key": "object"}
Spec = tuple[str, str]  # where a worker opens the store: its URL and its options as JSON


def _empty(types: Mapping[str, Any], index: str | None = None) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in types.items()},
                        index=None if index is None else pd.Index([], dtype="int64", name=index))


def staging_prefix(app: str, run_id: str | None = None) -> str:
    return f"apps/{app}/shuffler/staging/" + (f"{run_id}/" if run_id else "")


def store_spec(store: Any) -> Spec:
    """``(url, options as JSON)`` a worker opens ``store`` with (:func:`~ldp.storage.open_store`), under the wrappers
    (``inner``) around it: a folder (the workers must see it at the same path) or object storage."""
    while hasattr(store, "inner"):
        store = store.inner
    url, options = getattr(store, "url", None), getattr(store, "options", None)
    if not isinstance(url, str) or not (url.startswith("file://") or isinstance(options, dict)):
        raise TypeError(f"the dask engine's workers open the store themselves (a folder, object storage): {store!r}")
    return url, json.dumps(options or {}, sort_keys=True)


@functools.lru_cache(maxsize=4)
def _opened(url: str, options: str) -> Store:
    return open_store(url, json.loads(options) or None)


class _WorkerStore:
    """A worker's view of the store: reads anything; ``put`` only under ``writable`` (its run's staging)."""

    def __init__(self, spec: Spec, writable: str | None = None) -> None:
        self.inner, self.writable = _opened(*spec), writable
        self.url, self.get, self.exists, self.list = self.inner.url, self.inner.get, self.inner.exists, self.inner.list
        self.root_exists = self.inner.root_exists

    def put(self, key: str, data: bytes) -> None:
        if not (self.writable and key.startswith(self.writable)):
            self.create(key)
        self.inner.put(key, data)

    def create(self, key: str, *_: Any) -> NoReturn:
        raise PermissionError(f"a dask worker writes nothing but its run's staging, not {key}")

    delete = create


def _threads(fn: Callable[[Any], Any], items: Sequence[Any], n: int = IO_THREADS) -> list[Any]:
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="ldp-shuffle-dask") as pool:
        return list(pool.map(fn, items))


def _tally(data: bytes, metrics: Counter[str] | None = None, by_metric: Callable[[bytes], Any] | None = None
           ) -> list[int]:
    """The checksum of the lines of ``data`` — two 31-bit parts of each line's SipHash, summed: exact for up to
    2³² lines, whatever their order — counted :data:`BLOCK_BYTES` at a time; ``by_metric`` of each block added to
    ``metrics``."""
    sums, start = [0, 0], 0
    while start < len(data):
        end = data.find(b"\n", min(start + BLOCK_BYTES, len(data)) - 1) + 1 or len(data)
        block, start = data[start:end], end
        h = hash_array(np.array(block.split(b"\n")[:-1], dtype=object), hash_key=_HASH_KEY, categorize=False)
        sums = [sums[0] + int((h & _LOW31).sum()), sums[1] + int(((h >> np.uint64(32)) & _LOW31).sum())]
        if by_metric is not None and metrics is not None:
            metrics.update(by_metric(block))
    return sums


def _scan(part: list[tuple[int, str]], spec: Spec) -> pd.DataFrame:
    """The table's rows (one per batch) of chunks ``(index, key)``."""
    store = _WorkerStore(spec)
    rows, ids = [], []
    for (c, key), data in zip(part, _threads(store.get, [k for _, k in part]), strict=True):
        for pos, b in enumerate(decode_chunk(data, f"{store.url}/{key}")):
            rows.append((c, pos, b.window, b.length, b.count, len(b.lines), *_tally(b.lines)))
            ids.append(b.batch_id)
    cols = np.array(rows, dtype=np.int64).reshape(-1, 8)
    words = id_digests(ids).view(">u8").reshape(-1, 2).astype(np.uint64)
    return pd.DataFrame({"chunk": cols[:, 0], "pos": cols[:, 1], "hi": words[:, 0], "lo": words[:, 1],
                         **{c: cols[:, i] for i, c in enumerate(("window", "length", *_SUMS), start=2)}})


def _deduped(table: dd.DataFrame, *args: Any) -> dd.DataFrame:
    """``table`` in 16 partitions, ``p`` holding the digests of seen partition ``p`` (first byte >> 4), deduped."""
    return table.assign(nibble=(table["hi"] // 2**60).astype("int64")).set_index(
        "nibble", divisions=[*range(PARTITIONS), PARTITIONS - 1], shuffle_method="p2p").map_partitions(
        _dedup, *args, meta=_empty({**_TABLE, "keep": "bool"}, "nibble"))


def _dedup(df: pd.DataFrame, spec: Spec, app: str, since: float | None, run_id: str | None,
           ids: str | None) -> pd.DataFrame:
    """Rows of one digest partition with ``keep``: the id's first copy in (chunk, position) order, and (``since``)
    not mixed by another run since then; the kept digests staged at ``<ids><p>.ids``."""
    df = df.sort_values(["chunk", "pos"], kind="stable")
    pairs = np.stack([df["hi"].to_numpy(np.uint64), df["lo"].to_numpy(np.uint64)], axis=1).astype(">u8")
    digests = np.ascontiguousarray(pairs).view(DIGEST_DTYPE).reshape(-1)
    keep = first_copies(digests)
    if since is not None:
        keep &= ~SeenIds(_WorkerStore(spec), app).mixed_before(digests, since, exclude_run=run_id)
    if ids is not None and keep.any():
        p = int(df.index[0])
        assert (df.index == p).all(), "a digest partition holds one seen partition"
        _WorkerStore(spec, ids).put(f"{ids}{p:x}.ids", np.unique(digests[keep]).tobytes())
    return df.assign(keep=keep)


def _read(part: list[tuple[str, list[int]]], spec: Spec, windows: Mapping[tuple[int, int], tuple[int, int]],
          attempt: str) -> pd.DataFrame:
    """The kept lines of chunks ``(key, dropped positions)`` in the windows mixed (``(window, length)`` → (first
    part, parts)), each with its uniform 64-bit key from ``os.urandom``, and its part; ``attempt`` keys the task."""
    store = _WorkerStore(spec)
    buf, first, parts, counts = bytearray(), [], [], []
    for (key, dropped), data in zip(part, _threads(store.get, [k for k, _ in part]), strict=True):
        skip = set(dropped)
        for pos, b in enumerate(decode_chunk(data, f"{store.url}/{key}")):
            if (w := windows.get((b.window, b.length))) is not None and pos not in skip and b.lines:
                buf += b.lines
                first.append(w[0])
                parts.append(w[1])
                counts.append(b.count)
    ends = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10) + 1
    keys = np.frombuffer(os.urandom(8 * len(ends)), dtype=np.uint64)
    target = np.repeat(np.array(first, dtype=np.int64), counts) + ((keys >> np.uint64(32)) * np.repeat(
        np.array(parts, dtype=np.uint64), counts) >> np.uint64(32)).astype(np.int64)
    lines = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(ends), [None, pa.py_buffer(
        np.concatenate(([0], ends)).astype(np.int64)), pa.py_buffer(buf)])
    return pd.DataFrame({"target": target, "key": keys, "line": pd.arrays.ArrowExtensionArray(lines)})


def _stage_part(df: pd.DataFrame, spec: Spec, where: Sequence[str | None], by_metric: Callable[[bytes], Any],
                partition_info: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Part ``t`` (partition ``t``): its lines ordered by key, staged under ``where[t]`` (``None``: a withheld
    window, counted only); its lines, bytes, checksum and per-metric counts."""
    t = int(partition_info["number"]) if partition_info else int(df.index[0])
    col = pa.array(df["line"].array).take(pa.array(np.argsort(df["key"].to_numpy(), kind="stable")))
    col = (col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col).cast(pa.large_binary())
    data = b""
    if len(col):
        offsets = np.frombuffer(col.buffers()[1], dtype=np.int64)[col.offset:col.offset + len(col) + 1]
        data = col.buffers()[2].slice(offsets[0], offsets[-1] - offsets[0]).to_pybytes()
    del df, col
    metrics: Counter[str] = Counter()
    h, key = _tally(data, metrics, by_metric), ""
    if where[t] is not None and data:
        key = f"{where[t]}-{secrets.token_hex(4)}.part"  # this execution's own object: the one its result names
        _WorkerStore(spec, where[t]).put(key, data)
    return pd.DataFrame({"target": [t], "count": [data.count(b"\n")], "nbytes": [len(data)], "h1": [h[0]],
                         "h2": [h[1]], "metrics": [json.dumps(metrics)], "key": [key]})


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
    a :func:`local_cluster` of its own. ``by_metric``, ``entry``: the stage's own counting of a window's metrics and
    its anonymity entry (both engines record the same). Itself the stage's ``Mix``."""

    engine = "dask"

    def __init__(self, store: FencedStore, app: str, scheduler: str | None, by_metric: Callable[[bytes], Any],
                 entry: Callable[..., dict[str, Any]]) -> None:
        self.store, self.app, self.scheduler, self.by_metric, self.entry = store, app, scheduler, by_metric, entry
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

    def _get(self, x: Any) -> Any:  # optimized first: the blockwise steps of a part fused, none of them held
        return self.client.compute(x.optimize(), sync=True)

    def _scan(self, keys: list[str]) -> dd.DataFrame:
        parts = [[(i + j, k) for j, k in enumerate(keys[i:i + SCAN_CHUNKS])] for i in range(0, len(keys), SCAN_CHUNKS)]
        return self.client.persist(dd.from_map(_scan, parts, spec=self.spec, meta=_empty(_TABLE)).optimize())

    def plan_inputs(self, keys: list[str]) -> tuple[dict[str, Counter[tuple[int, int]]],
                                                    Callable[[set[tuple[int, int]]], dict[tuple[int, int], int]]]:
        """The index of chunks ``keys`` (per chunk, its batches per window) and the ``reports`` callback of
        :func:`~ldp.shuffler.stage.plan_run`, computed on the workers (their table kept for the mix)."""
        index: dict[str, Counter[tuple[int, int]]] = {k: Counter() for k in keys}
        if not keys:
            return index, lambda ready: {}
        table = self._scan(keys)
        self._table = (keys, table)
        for (c, *w), n in self._get(table.groupby(["chunk", "window", "length"]).size()).items():
            index[keys[c]][(int(w[0]), int(w[1]))] = int(n)

        def reports(ready: set[tuple[int, int]]) -> dict[tuple[int, int], int]:
            sel = table.map_partitions(lambda df: df[pd.MultiIndex.from_arrays([df["window"], df["length"]])
                                                     .isin(sorted(ready))])
            rows = _deduped(sel, self.spec, self.app, None, None, None)
            sums = self._get(rows[rows["keep"]].groupby(["window", "length"])["count"].sum())
            return {(int(w), int(length)): int(n) for (w, length), n in sums.items()}

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

            def publish(kp: tuple[int, str], stem: str = stem) -> None:
                if not store.exists(final := f"{stem}-p{kp[0]:05d}.jsonl"):
                    store.create(final, store.get(kp[1]))

            _threads(publish, list(enumerate(parts)), PUBLISH_THREADS)
            entry = self.entry(f"{stem}.jsonl" if parts else None, b"", m["batches"], m["replicas"], name, rec)
            anonymity[w] = {**entry, "reports": m["reports"], "by_metric": m["by_metric"], "parts": len(parts)}
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
        rows = self.client.persist(_deduped(self._scan(keys) if table is None else table, self.spec, app,
                                            float(rec["at"]) - dedup_seconds, rec["id"], f"{base}ids/").optimize())
        dropped = self._get(rows[~rows["keep"]][["chunk", "pos"]])
        sums = self._get(rows[rows["keep"]].groupby(["window", "length", "chunk"]).agg(
            {"pos": "count", **{c: "sum" for c in _SUMS}})).reset_index()
        del rows
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
        results = self._mix(keys, dropped, sums[sums["w"].isin(windows)], windows, where, attempt) if where else None
        for w in todo:  # each window's parts checked against its kept batches' sums, then its marker written
            first, m = windows.get(w, (0, 0))
            parts = results.loc[first:first + m - 1] if results is not None and m else _empty(_PARTS)
            kept = sums[sums["w"] == w]
            want, got = [int(kept[c].sum()) for c in _SUMS], [int(parts[c].sum()) for c in _SUMS]
            if got != want or len(parts) != m:
                raise RuntimeError(f"shuffler window {w}: its {len(parts)} of {m} mixed parts do not hold exactly its "
                                   f"kept lines (lines, bytes, checksums {got} for {want}): nothing published, the "
                                   "next run mixes it again")
            metrics = sum((Counter(json.loads(doc)) for doc in parts["metrics"]), Counter[str]())
            store.put(f"{stage}windows/{w.replace(':', '-')}.json", json.dumps({
                "format": STAGING_FORMAT, "window": w, "attempt": attempt, "reports": want[0], "by_metric": dict(
                    sorted(metrics.items())), "batches": int(kept["pos"].sum()), "replicas": kept["replica"].nunique(),
                "parts": [{"key": k, "lines": int(n)} for k, n in zip(parts["key"], parts["count"], strict=True) if k]},
                sort_keys=True).encode())
        return run

    def _mix(self, keys: list[str], dropped: pd.DataFrame, sums: pd.DataFrame, windows: dict[str, tuple[int, int]],
             where: list[str | None], attempt: str) -> pd.DataFrame:
        """The parts of ``windows`` (``w`` → (first part, parts)) staged; one row per part, by part."""
        drops = dropped.groupby("chunk")["pos"].agg(list).to_dict()
        nbytes = sums.groupby("chunk")["nbytes"].sum()  # chunks in order, cut every READ_BYTES of kept lines
        at = ((nbytes.cumsum() - nbytes) // READ_BYTES).to_numpy()
        groups = [[(keys[c], drops.get(c, [])) for c in nbytes.index[at == g]] for g in np.unique(at)]
        meta = _empty({"target": "int64", "key": "uint64", "line": pd.ArrowDtype(pa.large_binary())})
        spans = {tuple(map(int, w.split(":"))): span for w, span in windows.items()}
        lines = dd.from_map(_read, groups, spec=self.spec, windows=spans, attempt=attempt, meta=meta)
        shuffled = lines.set_index("target", divisions=[*range(len(where)), len(where) - 1], shuffle_method="p2p")
        out = shuffled.map_partitions(_stage_part, self.spec, where, self.by_metric, meta=_empty(_PARTS))
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
        _threads(self.store.delete, [k for r in run_ids for k in self.store.list(staging_prefix(self.app, r))])


def _json(store: FencedStore, key: str) -> dict[str, Any] | None:
    with contextlib.suppress(FileNotFoundError):
        return dict(json.loads(store.get(key)))
    return None
