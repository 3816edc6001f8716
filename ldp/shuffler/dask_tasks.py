"""The Dask engine's tasks (:mod:`ldp.shuffler.dask_engine`), run on the workers: each opens the store itself
(:func:`store_spec`) and writes nothing but its run's staging (:class:`_WorkerStore`).

* :func:`scan`: one row per batch of a group of chunks — its lines made canonical (:mod:`ldp.shuffler.lines`), their
  count, bytes and checksum (:func:`tally`), in all and per metric;
* :func:`dedup`: a digest partition's rows marked ``keep`` (first copy, not mixed by an earlier run);
* :func:`read`: the kept lines of a group of chunks, canonical, without the withheld metrics' lines, each with its
  uniform random key and its part;
* :func:`stage_part`: a part's lines ordered by key and staged, with their sums.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.util import hash_array

from ldp.pipeline.chunks import decode_chunk
from ldp.shuffler.lines import LineCounts, LineRules
from ldp.shuffler.seen import DIGEST_DTYPE, PARTITIONS, SeenIds, first_copies, id_digests
from ldp.storage import Store, StoreWrapper, open_store

__all__ = ["scan", "deduped", "read", "stage_part", "per_metric", "found_lines", "tally", "store_spec", "empty",
           "TABLE", "SUMS", "METRIC_SUMS", "PARTS", "IO_THREADS", "BLOCK_BYTES"]

IO_THREADS = 8  # requests to the store at a time within one task
BLOCK_BYTES = 4 * 2**20  # lines counted and checksummed this many bytes at a time (their objects: a block's worth)

_HASH_KEY = "ldp-shuffle-mset"  # SipHash key of the checksum (it detects, it does not hide: no secret)
_LOW31 = np.uint64(0x7FFFFFFF)
TABLE = {"chunk": "int64", "pos": "int64", "hi": "uint64", "lo": "uint64", "window": "int64", "length": "int64",
          "count": "int64", "nbytes": "int64", "h1": "int64", "h2": "int64", "metrics": "object", "found": "object"}
SUMS = ("count", "nbytes", "h1", "h2")
METRIC_SUMS = {"window": "int64", "length": "int64", "metric": "object", **{c: "int64" for c in SUMS}}
PARTS = {"target": "int64", **{c: "int64" for c in SUMS}, "metrics": "object", "key": "object"}
Spec = tuple[str, str]  # where a worker opens the store: its URL and its options as JSON



def empty(types: Mapping[str, Any], index: str | None = None) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in types.items()},
                        index=None if index is None else pd.Index([], dtype="int64", name=index))


def store_spec(store: Store) -> Spec:
    """``(url, options as JSON)`` a worker opens ``store`` with (:func:`~ldp.storage.open_store`): its innermost
    store's :meth:`~ldp.storage.Store.spec`, a store declared ``distributed`` (a folder the workers see at the same
    path, object storage)."""
    if not isinstance(store, Store) or not store.capabilities.distributed:
        raise TypeError(f"the dask engine's workers open the store themselves (a folder, object storage): {store!r}")
    url, options = store.spec()
    return url, json.dumps(options, sort_keys=True)


@functools.lru_cache(maxsize=4)
def _opened(url: str, options: str) -> Store:
    return open_store(url, json.loads(options) or None)


class _WorkerStore(StoreWrapper):
    """A worker's view of the store: reads anything; ``put`` only under ``writable`` (its run's staging)."""

    def __init__(self, spec: Spec, writable: str | None = None) -> None:
        super().__init__(_opened(*spec))
        self.writable = writable

    def put(self, key: str, data: bytes) -> None:
        if not (self.writable and key.startswith(self.writable)):
            self.create(key)
        self.inner.put(key, data)

    def create(self, key: str, *_: Any) -> NoReturn:
        raise PermissionError(f"a dask worker writes nothing but its run's staging, not {key}")

    delete = create


def threads(fn: Callable[[Any], Any], items: Sequence[Any], n: int = IO_THREADS) -> list[Any]:
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="ldp-shuffle-dask") as pool:
        return list(pool.map(fn, items))


def tally(data: bytes, metrics: Counter[str] | None = None, by_metric: Callable[[bytes], Any] | None = None
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


def scan(part: list[tuple[int, str]], spec: Spec, rules: LineRules) -> pd.DataFrame:
    """The table's rows (one per batch) of chunks ``(index, key)``: its lines made canonical by ``rules``, their
    sums in all and per metric (``metrics``, JSON ``{metric: [lines, bytes, h1, h2]}``), what the check found."""
    store = _WorkerStore(spec)
    rows, ids, metrics, found = [], [], [], []
    for (c, key), data in zip(part, threads(store.get, [k for _, k in part]), strict=True):
        for pos, b in enumerate(decode_chunk(data, f"{store.url}/{key}")):
            lines, checked = rules.canonical(b.lines)
            per = {m: [piece.count(b"\n"), len(piece), *tally(piece)] for m, piece in LineRules.split(lines).items()}
            rows.append((c, pos, b.window, b.length, *(sum(v[i] for v in per.values()) for i in range(4))))
            ids.append(b.batch_id)
            metrics.append(json.dumps(per))
            found.append(json.dumps(checked.to_dict()))
    cols = np.array(rows, dtype=np.int64).reshape(-1, 8)
    words = id_digests(ids).view(">u8").reshape(-1, 2).astype(np.uint64)
    return pd.DataFrame({"chunk": cols[:, 0], "pos": cols[:, 1], "hi": words[:, 0], "lo": words[:, 1],
                         **{c: cols[:, i] for i, c in enumerate(("window", "length", *SUMS), start=2)},
                         "metrics": pd.Series(metrics, dtype=object), "found": pd.Series(found, dtype=object)})


def per_metric(df: pd.DataFrame) -> pd.DataFrame:
    """The sums of rows ``df`` per (window, length, metric), from their ``metrics``."""
    sums: dict[tuple[int, int, str], list[int]] = {}
    for w, length, doc in zip(df["window"].tolist(), df["length"].tolist(), df["metrics"], strict=True):
        for m, v in json.loads(doc).items():
            acc = sums.setdefault((w, length, m), [0, 0, 0, 0])
            for i in range(4):
                acc[i] += v[i]
    if not sums:
        return empty(METRIC_SUMS)
    keys, vals = list(sums), np.array(list(sums.values()), dtype=np.int64).reshape(-1, 4)
    return pd.DataFrame({"window": [k[0] for k in keys], "length": [k[1] for k in keys],
                         "metric": pd.Series([k[2] for k in keys], dtype=object),
                         **{c: vals[:, i] for i, c in enumerate(SUMS)}}).astype(METRIC_SUMS)


def found_lines(df: pd.DataFrame) -> pd.DataFrame:
    """What the line check found in rows ``df``, per (window, length), as JSON."""
    out: dict[tuple[int, int], LineCounts] = {}
    for w, length, doc in zip(df["window"].tolist(), df["length"].tolist(), df["found"], strict=True):
        out.setdefault((w, length), LineCounts()).add(LineCounts(**json.loads(doc)))
    return pd.DataFrame({"window": pd.Series([k[0] for k in out], dtype="int64"),
                         "length": pd.Series([k[1] for k in out], dtype="int64"),
                         "found": pd.Series([json.dumps(v.to_dict()) for v in out.values()], dtype=object)})


def deduped(table: dd.DataFrame, *args: Any) -> dd.DataFrame:
    """``table`` in 16 partitions, ``p`` holding the digests of seen partition ``p`` (first byte >> 4), deduped."""
    return table.assign(nibble=(table["hi"] // 2**60).astype("int64")).set_index(
        "nibble", divisions=[*range(PARTITIONS), PARTITIONS - 1], shuffle_method="p2p").map_partitions(
        dedup, *args, meta=empty({**TABLE, "keep": "bool"}, "nibble"))


def dedup(df: pd.DataFrame, spec: Spec, app: str, since: float | None, run_id: str | None,
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


def read(part: list[tuple[str, list[int]]], spec: Spec, windows: Mapping[tuple[int, int], tuple[int, int]],
          attempt: str, rules: LineRules, drops: Mapping[tuple[int, int], Sequence[str]]) -> pd.DataFrame:
    """The kept lines of chunks ``(key, dropped positions)`` in the windows mixed (``(window, length)`` → (first
    part, parts)), made canonical by ``rules``, but those of the window's withheld metrics (``drops``), each with
    its uniform 64-bit key from ``os.urandom``, and its part; ``attempt`` keys the task."""
    store = _WorkerStore(spec)
    buf, first, parts, counts = bytearray(), [], [], []
    for (key, dropped), data in zip(part, threads(store.get, [k for k, _ in part]), strict=True):
        skip = set(dropped)
        for pos, b in enumerate(decode_chunk(data, f"{store.url}/{key}")):
            if (w := windows.get((b.window, b.length))) is not None and pos not in skip and b.lines:
                lines = LineRules.drop(rules.canonical(b.lines)[0], drops.get((b.window, b.length), ()))
                buf += lines
                first.append(w[0])
                parts.append(w[1])
                counts.append(lines.count(b"\n"))
    ends = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10) + 1
    keys = np.frombuffer(os.urandom(8 * len(ends)), dtype=np.uint64)
    target = np.repeat(np.array(first, dtype=np.int64), counts) + ((keys >> np.uint64(32)) * np.repeat(
        np.array(parts, dtype=np.uint64), counts) >> np.uint64(32)).astype(np.int64)
    lines = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(ends), [None, pa.py_buffer(
        np.concatenate(([0], ends)).astype(np.int64)), pa.py_buffer(buf)])
    return pd.DataFrame({"target": target, "key": keys, "line": pd.arrays.ArrowExtensionArray(lines)})


def stage_part(df: pd.DataFrame, spec: Spec, where: Sequence[str | None], by_metric: Callable[[bytes], Any],
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
    h, key = tally(data, metrics, by_metric), ""
    if where[t] is not None and data:
        key = f"{where[t]}-{secrets.token_hex(4)}.part"  # this execution's own object: the one its result names
        _WorkerStore(spec, where[t]).put(key, data)
    return pd.DataFrame({"target": [t], "count": [data.count(b"\n")], "nbytes": [len(data)], "h1": [h[0]],
                         "h2": [h[1]], "metrics": [json.dumps(metrics)], "key": [key]})


