"""Past one machine: the same folding on a Dask cluster (``pip install 'ldp-telemetry[dask]'``).

* ``fold_files(..., engine="dask", scheduler=ADDRESS)`` (``ldp fold --engine dask``)
  folds each input file as one task on the workers (which must see the input paths); the client
  commits each result to the manifest as it arrives, so the job stays resumable and idempotent.
* :func:`fold_bag` (a bag of upload lines) and :func:`fold_dataframe` (a dataframe in
  the Parquet layout) fold every partition in parallel and merge the partial aggregates in a tree
  (``split_every`` at a time) on the cluster.

Merging is integer addition, so the aggregates are byte for byte those of the single-process path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ldp._moved import renamed_attributes
from ldp.decoders.base import Aggregate
from ldp.extras import install_hint
from ldp.jobs.fold import Folder, Key, spec_index
from ldp.jobs.inputs import is_remote
from ldp.jobs.store import merge_into, pack_parts, unpack_parts
from ldp.spec import CollectionSpec

__all__ = ["fold_inputs_on_dask", "fold_bag", "fold_dataframe", "DaskResult", "tree_reduce"]


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ImportError("the Dask engine needs dask and distributed: "
                          + install_hint("'dask[distributed]'", "dask")) from None
    return distributed


def _client(scheduler: Any) -> tuple[Any, bool]:
    """A ``distributed.Client``: the one given, one connected to an address, or a new local cluster."""
    distributed = _distributed()
    if isinstance(scheduler, distributed.Client):
        return scheduler, False
    if scheduler is None:
        return distributed.Client(distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                                           dashboard_address=":0")), True  # any free port
    return distributed.Client(scheduler), True


def fold_inputs_on_dask(tasks: Sequence[Any], docs: list[dict[str, Any]], by_window: bool, chunk_bytes: int,
                        fast: bool, scheduler: Any, parquet_unverified: bool = False, *,
                        fold_input: Callable[..., Any], storage_options: dict[str, Any] | None = None
                        ) -> Iterator[tuple[Any, Any]]:
    """Fold each input on the cluster with ``fold_input`` (:func:`ldp.jobs.job.fold_input`, which the job
    passes); yield ``(task, (blob, stats, rejects bytes))`` as they finish. An object-storage input is read by the
    worker itself (``storage_options``; credentials from the worker's environment)."""
    if not tasks:
        return
    distributed = _distributed()
    client, owned = _client(scheduler)
    try:
        futures = {client.submit(fold_input, t.path if is_remote(t.path) else os.path.abspath(t.path), t.fmt, docs,
                                 by_window, t.source, None, chunk_bytes, fast, parquet_unverified=parquet_unverified,
                                 storage_options=storage_options, pure=False): t
                   for t in tasks}
        for fut in distributed.as_completed(futures):
            yield futures[fut], fut.result()
    finally:
        if owned:
            cluster = client.cluster
            client.close()
            if cluster is not None:
                cluster.close()


@dataclass
class DaskResult:
    """Aggregates by key, counts, and the rejects lines (JSON; ``source`` is ``partition <i>``)."""

    aggregates: dict[Key, Aggregate]
    records: int = 0
    accepted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    blank: int = 0
    rejects: list[str] = field(default_factory=list)


def _specs(docs: list[dict[str, Any]]) -> dict[str, CollectionSpec]:
    specs = [CollectionSpec.from_dict(d) for d in docs]
    return {s.fingerprint: s for s in specs}


def _partial(folder: Folder, rejects: Any) -> tuple[bytes, dict[str, Any], list[str]]:
    folder.close()  # the summary line of each capped reason
    lines = rejects.getvalue().splitlines() if rejects is not None else []
    return pack_parts(folder.aggregates), folder.stats(), lines


def _fold_lines(lines: Sequence[str | bytes], index: int, docs: list[dict[str, Any]], by_window: bool, fast: bool,
                keep_rejects: bool) -> tuple[bytes, dict[str, Any], list[str]]:
    import io

    from ldp.jobs.lines import line_batch, line_batches

    out = io.StringIO() if keep_rejects else None
    folder = Folder(_specs(docs), by_window=by_window, source=f"partition {index}", rejects=out, fast=fast)
    encoded = [_encode(x).rstrip(b"\n") for x in lines]
    alone = [i for i, x in enumerate(encoded) if b"\n" in x]
    if alone:  # a line with a newline inside (not from read_text): the full parser, on its own
        folder.consume(line_batch(encoded[i], i + 1, encoded[i], folder.specs) for i in alone)
        encoded = [x if b"\n" not in x else b"" for x in encoded]
        folder.blank -= len(alone)
    folder.consume(line_batches(b"".join(x + b"\n" for x in encoded), 1, folder.options))
    return _partial(folder, out)


def _encode(line: str | bytes) -> bytes:
    """A line as bytes: ``read_text(errors="surrogateescape")`` lines get their original bytes back."""
    if isinstance(line, bytes):
        return line
    try:
        return line.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return line.encode("utf-8", "replace")


def _fold_frame(df: Any, index: int, docs: list[dict[str, Any]], by_window: bool,
                keep_rejects: bool) -> tuple[bytes, dict[str, Any], list[str]]:
    import io

    import pyarrow as pa

    from ldp.jobs.arrow import arrow_batches

    out = io.StringIO() if keep_rejects else None
    folder = Folder(_specs(docs), by_window=by_window, source=f"partition {index}", rejects=out)
    for name in df.columns:  # pandas turns integer columns with nulls into floats: back to integers
        if str(name).startswith("payload.") and df[name].dtype.kind == "f":
            df = df.assign(**{name: df[name].astype("UInt64")})
    folder.consume(arrow_batches(pa.Table.from_pandas(df, preserve_index=False), folder.options, 1))
    return _partial(folder, out)


def _combine(parts: Sequence[tuple[bytes, dict[str, Any], list[str]]]) -> tuple[bytes, dict[str, Any], list[str]]:
    """Merge partial results (aggregates by key, counts, rejects in order)."""
    merged: dict[Key, Aggregate] = {}
    stats: dict[str, Any] = {"records": 0, "accepted": 0, "blank": 0, "rejected": {}}
    rejects: list[str] = []
    for blob, s, rej in parts:
        merge_into(merged, unpack_parts(blob))
        for k in ("records", "accepted", "blank"):
            stats[k] += s[k]
        for reason, n in s["rejected"].items():
            stats["rejected"][reason] = stats["rejected"].get(reason, 0) + n
        rejects += rej
    return pack_parts(merged), stats, rejects


def tree_reduce(items: list[Any], combine: Any, split_every: int = 8) -> Any:
    """Combine delayed values ``split_every`` at a time, level by level, down to one."""
    from dask import delayed

    if split_every < 2:
        raise ValueError(f"split_every must be >= 2, got {split_every}")
    if not items:
        raise ValueError("nothing to reduce (no partitions)")
    while len(items) > 1:
        items = [delayed(combine)(items[i:i + split_every]) for i in range(0, len(items), split_every)]
    return items[0]


def _compute(partials: list[Any], split_every: int, client: Any) -> DaskResult:
    total = tree_reduce(partials, _combine, split_every)
    blob, stats, rejects = client.compute(total).result() if client is not None else total.compute()
    return DaskResult(unpack_parts(blob), stats["records"], stats["accepted"], dict(sorted(stats["rejected"].items())),
                      stats["blank"], rejects)


def fold_bag(bag: Any, specs: Any, *, by_window: bool = False, split_every: int = 8, client: Any = None,
                  fast: bool = True, keep_rejects: bool = True) -> DaskResult:
    """Fold a Dask bag of upload lines (``dask.bag.read_text(...)``) partition by partition and
    tree-merge the aggregates. ``client``: a ``distributed.Client`` (default: Dask's current scheduler)."""
    from dask import delayed

    docs = [s.to_dict() for s in spec_index(specs).values()]
    parts = [delayed(_fold_lines)(p, i, docs, by_window, fast, keep_rejects) for i, p in enumerate(bag.to_delayed())]
    return _compute(parts, split_every, client)


def fold_dataframe(df: Any, specs: Any, *, by_window: bool = False, split_every: int = 8, client: Any = None,
                        keep_rejects: bool = True) -> DaskResult:
    """Fold a Dask dataframe in the Parquet layout (``dask.dataframe.read_parquet(...)``; use
    ``dtype_backend="pyarrow"`` to keep integer columns with nulls as integers) the same way."""
    from dask import delayed

    docs = [s.to_dict() for s in spec_index(specs).values()]
    parts = [delayed(_fold_frame)(p, i, docs, by_window, keep_rejects) for i, p in enumerate(df.to_delayed())]
    return _compute(parts, split_every, client)


# issue 83's renames, the old names kept for one more release
__getattr__ = renamed_attributes(__name__, {"aggregate_bag": "fold_bag",
                                                 "aggregate_dataframe": "fold_dataframe"})
