"""The Parquet layout (and any Arrow table in it), folded column by column: no Python loop per valid row.

Rows are checked with vectorized masks in the order :func:`ldp.spec.parse_envelope` checks an
envelope (``missing_key``, ``unknown_key``, ``bad_spec``, ``bad_metric``, ``bad_window``,
``bad_version``, ``bad_protocol``, ``bad_fingerprint``, ``unknown_spec``, ``unknown_metric``), then
grouped by (spec, metric, protocol, params[, window]): each group is routed once and its payload
columns become one :class:`~ldp.reports.ReportBatch` (``wrong_protocol``, ``wrong_fingerprint``,
``payload_mismatch``, ``bad_length``, then ``out_of_range`` and ``bad_value`` from the aggregate).
Only rejected rows are visited one by one, to write them to the rejects file.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

import numpy as np

from ldp.reports import ReportBatch
from ldp.server.fold import Folder, groups
from ldp.server.formats import PARQUET_KEYS, _pyarrow
from ldp.server.readers import InputError
from ldp.spec.envelope import MAX_WINDOW, METRIC_RE

__all__ = ["read_parquet", "fold_arrow", "BATCH_ROWS"]

BATCH_ROWS = 1 << 16
"""Rows decoded at a time: larger batches are no faster and let the allocator's high-water mark grow."""
_TEXT = ("spec", "metric", "protocol", "params")
_PATTERNS = {"spec": (re.compile(r"[0-9a-f]{16}\Z"), "bad_spec", "spec must be 16 lowercase hex digits"),
             "metric": (METRIC_RE, "bad_metric", "metric names match [a-z][a-z0-9_]{0,31}"),
             "protocol": (re.compile(r"[a-z][a-z0-9_-]{0,31}\Z"), "bad_protocol", "bad protocol name"),
             "params": (re.compile(r"[0-9a-f]{16}\Z"), "bad_fingerprint", "fingerprints are 16 lowercase hex digits")}


def read_parquet(path: str | os.PathLike[str], folder: Folder, batch_rows: int = BATCH_ROWS,
                 progress: Callable[[int], None] | None = None) -> None:
    """Fold a Parquet file in the layout of ``docs/server.md``, one record batch at a time (row i,
    1-based, is record i). Missing key columns or wrongly typed ones make an :class:`InputError`."""
    pa, pq = _pyarrow()
    try:
        # no pre-buffering of row groups, one thread: memory stays flat in the file's size
        pf = pq.ParquetFile(path, read_dictionary=list(_TEXT), pre_buffer=False, buffer_size=1 << 20)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{os.fspath(path)}: not a Parquet file: {exc}") from None
    _check_schema(pa, pf.schema_arrow, os.fspath(path))
    size, rows = os.path.getsize(path), max(pf.metadata.num_rows, 1)
    record = 1
    for batch in pf.iter_batches(batch_size=batch_rows, use_threads=False):
        fold_arrow(folder, batch, record)
        record += batch.num_rows
        if progress is not None:
            progress(int(size * batch.num_rows / rows))


def _check_schema(pa: Any, schema: Any, source: str) -> None:
    missing = [k for k in PARQUET_KEYS if k not in schema.names]
    if missing:
        raise InputError(f"{source}: Parquet columns {missing} missing (the layout: {', '.join(PARQUET_KEYS)}, "
                         "payload.<field>...)")
    for name in PARQUET_KEYS:
        t = schema.field(name).type
        t = t.value_type if pa.types.is_dictionary(t) else t
        ok = (pa.types.is_string(t) or pa.types.is_large_string(t)) if name in _TEXT else pa.types.is_integer(t)
        if not ok:
            want = "a string" if name in _TEXT else "an integer"
            raise InputError(f"{source}: Parquet column {name!r} must be {want} column, got {t}")


class _Columns:
    """One record batch's key columns as numpy arrays: dictionary codes (-1 for null) for text."""

    def __init__(self, pa: Any, batch: Any) -> None:
        import pyarrow.compute as pc

        self.batch, self.n = batch, batch.num_rows
        self.codes: dict[str, np.ndarray] = {}
        self.words: dict[str, list[str]] = {}
        self.nulls = any(batch.column(k).null_count for k in PARQUET_KEYS)
        for name in _TEXT:
            col = batch.column(name)
            if not pa.types.is_dictionary(col.type):
                col = pc.dictionary_encode(col)
            indices = pc.fill_null(col.indices, -1) if col.null_count else col.indices
            self.codes[name] = indices.to_numpy(zero_copy_only=False)
            self.words[name] = col.dictionary.to_pylist()
        self.null = np.zeros(self.n, dtype=bool)
        if self.nulls:
            for name in ("window", "v"):
                self.null |= batch.column(name).is_null().to_numpy(zero_copy_only=False)
            for name in _TEXT:
                self.null |= self.codes[name] < 0
        self.window = self._ints(pa, pc, "window")
        self.v = self._ints(pa, pc, "v")

    def _ints(self, pa: Any, pc: Any, name: str) -> np.ndarray:
        col = self.batch.column(name)
        if pa.types.is_uint64(col.type):  # above 2**53 is out of range anyway: keep it so in int64
            col = pc.min_element_wise(col, pa.scalar(MAX_WINDOW + 1, pa.uint64()))
        col = pc.fill_null(col, 0) if col.null_count else col
        return col.to_numpy(zero_copy_only=False)

    def text(self, name: str, i: int) -> str | None:
        c = int(self.codes[name][i])
        return None if c < 0 else self.words[name][c]

    def raw(self, i: int) -> dict[str, Any]:
        return {"spec": self.text("spec", i), "metric": self.text("metric", i),
                "window": None if self.null[i] else int(self.window[i]), "v": None if self.null[i] else int(self.v[i]),
                "protocol": self.text("protocol", i), "params": self.text("params", i)}

    def bad_words(self, name: str, bad: list[bool]) -> np.ndarray | None:
        """Rows whose ``name`` is a dictionary word flagged in ``bad`` (``None``: no such row)."""
        if not any(bad):
            return None
        return np.array(bad + [False])[self.codes[name]]


def _reject_rows(folder: Folder, cols: _Columns, rows: np.ndarray, first: int, reason: str, detail: str,
                 agg: Any = None) -> None:
    for i in rows.tolist():
        folder.reject(first + i, reason, detail, cols.raw(i), agg=agg)


def fold_arrow(folder: Folder, batch: Any, first_record: int) -> None:
    """Fold an Arrow ``RecordBatch`` (or ``Table``) in the Parquet layout; row i is record
    ``first_record + i``."""
    pa, _ = _pyarrow()
    if isinstance(batch, pa.Table):
        for b in batch.to_batches():
            fold_arrow(folder, b, first_record)
            first_record += b.num_rows
        return
    _check_schema(pa, batch.schema, folder.source)
    cols = _Columns(pa, batch)
    live = np.ones(cols.n, dtype=bool)
    everyone = [True]  # no row dropped yet: the groups can skip indexing

    def drop(mask: np.ndarray | None, reason: str, detail: str) -> None:
        if mask is None:
            return
        mask = mask & live
        if mask.any():
            _reject_rows(folder, cols, np.flatnonzero(mask), first_record, reason, detail)
            live[mask] = False
            everyone[0] = False

    drop(cols.null if cols.nulls else None, "missing_key", "a key column is null")
    for name in batch.schema.names:
        if name not in PARQUET_KEYS and not name.startswith("payload.") and batch.column(name).null_count < cols.n:
            drop(batch.column(name).is_valid().to_numpy(zero_copy_only=False), "unknown_key",
                 f"column {name!r} (no identifier or timestamp allowed)")
    for name in ("spec", "metric"):
        pattern, reason, detail = _PATTERNS[name]
        drop(cols.bad_words(name, [not pattern.match(w) for w in cols.words[name]]), reason, detail)
    if cols.n and (cols.window.min() < 0 or cols.window.max() > MAX_WINDOW):
        drop((cols.window < 0) | (cols.window > MAX_WINDOW), "bad_window", "window must be an integer in [0, 2**53]")
    if cols.n and (cols.v.min() != 1 or cols.v.max() != 1):
        drop(cols.v != 1, "bad_version", "supported format version is 1")
    for name in ("protocol", "params"):
        pattern, reason, detail = _PATTERNS[name]
        drop(cols.bad_words(name, [not pattern.match(w) for w in cols.words[name]]), reason, detail)
    drop(cols.bad_words("spec", [s not in folder.specs for s in cols.words["spec"]]), "unknown_spec",
         "no known spec has this fingerprint")
    if everyone[0]:
        _fold_groups(folder, pa, batch, cols, None, first_record, drop)
    elif live.any():
        _fold_groups(folder, pa, batch, cols, np.flatnonzero(live), first_record, drop)


def _fold_groups(folder: Folder, pa: Any, batch: Any, cols: _Columns, rows: np.ndarray | None, first: int,
                 drop: Callable[[np.ndarray | None, str, str], None]) -> None:
    """Split the live ``rows`` (``None``: all) by spec, metric, protocol, params (and window)."""
    code: np.ndarray | None = None
    for name in _TEXT:  # only the columns with more than one word tell groups apart
        if len(cols.words[name]) > 1:
            c = cols.codes[name] if rows is None else cols.codes[name][rows]
            code = c.astype(np.int64) if code is None else code * (len(cols.words[name]) + 1) + c
    for _, sub in (groups(code) if code is not None else [(0, None)]):
        part = rows if sub is None else (sub if rows is None else rows[sub])
        i = 0 if part is None else int(part[0])
        spec = folder.specs[cols.text("spec", i)]  # type: ignore[index]
        metric = spec.metrics.get(cols.text("metric", i))  # type: ignore[arg-type]
        if metric is None:
            mask = np.ones(cols.n, dtype=bool) if part is None else _mask(cols.n, part)
            drop(mask, "unknown_metric", f"no metric {cols.text('metric', i)!r} in spec {spec.name!r}")
            continue
        if not folder.by_window:
            _fold_group(folder, pa, batch, cols, part, first, metric, int(cols.window[i]))
            continue
        windows = cols.window if part is None else cols.window[part]
        for w, sub_w in groups(windows):
            _fold_group(folder, pa, batch, cols, part if sub_w is None else (sub_w if part is None else part[sub_w]),
                        first, metric, int(w))


def _mask(n: int, rows: np.ndarray) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[rows] = True
    return m


def _fold_group(folder: Folder, pa: Any, batch: Any, cols: _Columns, rows: np.ndarray | None, first: int,
                metric: Any, window: int) -> None:
    """Route one group (same spec, metric, protocol, params and window; ``rows`` ``None``: every
    row of the batch) and fold its payload."""
    agg = folder.aggregate(metric, window)
    i, size = (0, cols.n) if rows is None else (int(rows[0]), len(rows))
    pr = metric.params

    def every() -> np.ndarray:
        return np.arange(cols.n) if rows is None else rows

    def take(a: np.ndarray) -> np.ndarray:
        return a if rows is None else a[rows]

    def valid(col: Any) -> np.ndarray:
        return take(col.is_valid().to_numpy(zero_copy_only=False)) if col.null_count else np.ones(size, bool)

    if cols.text("protocol", i) != pr.protocol:
        return _reject_rows(folder, cols, every(), first, "wrong_protocol",
                            f"report: expected {pr.protocol!r}, got {cols.text('protocol', i)!r}", agg)
    if cols.text("params", i) != pr.fingerprint:
        return _reject_rows(folder, cols, every(), first, "wrong_fingerprint",
                            f"report: expected parameters {pr.fingerprint}, got {cols.text('params', i)}", agg)
    names = batch.schema.names
    mismatch = np.zeros(size, dtype=bool)
    wanted = {f"payload.{f.name}" for f in pr.schema}
    for name in names:  # payload fields this metric does not have must be null
        if name.startswith("payload.") and name not in wanted and batch.column(name).null_count < cols.n:
            mismatch |= valid(batch.column(name))
    negative, short = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
    columns: dict[str, np.ndarray] = {}
    for f in pr.schema:
        col = batch.column(f"payload.{f.name}") if f"payload.{f.name}" in names else None
        if col is not None and f.kind == "uint" and pa.types.is_integer(col.type):
            values = take((col.fill_null(0) if col.null_count else col).to_numpy(zero_copy_only=False))
            if values.dtype.kind == "i" and values.size and values.min() < 0:
                negative |= values < 0
            columns[f.name] = values
        elif col is not None and f.kind == "bits" and (pa.types.is_binary(col.type)
                                                        or pa.types.is_fixed_size_binary(col.type)):
            columns[f.name], good = _packed(col, rows, (f.size + 7) // 8)
            short |= ~good
        else:
            mismatch[:] = True
            break
        if col.null_count:
            mismatch |= ~valid(col)
    kinds = ", ".join(f"{f.name}: {f.kind}" for f in pr.schema)
    bad = mismatch | negative | short
    if bad.any():
        for mask, reason, detail in ((mismatch, "payload_mismatch", f"report: expected fields {kinds}"),
                                     (negative & ~mismatch, "bad_value", "report: uint fields are >= 0"),
                                     (short & ~mismatch & ~negative, "bad_length",
                                      "report: a bits field must have ceil(size/8) bytes")):
            if mask.any():
                _reject_rows(folder, cols, every()[mask], first, reason, detail, agg)
        keep = np.flatnonzero(~bad)
        if not keep.size:
            return
        columns = {k: v[keep] for k, v in columns.items()}
        kept: np.ndarray | None = every()[keep]
    else:
        kept = rows
    rb = ReportBatch(pr.protocol, pr.fingerprint, tuple(pr.schema), columns)
    numbers = first if kept is None else kept + first
    folder.fold_batch(metric, window, rb, numbers, lambda j: cols.raw(j if kept is None else int(kept[j])))


def _packed(col: Any, rows: np.ndarray | None, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows' (``None``: all) packed bits as an (n, width) uint8 array, and whether each row has
    ``width`` bytes."""
    rows = np.arange(len(col)) if rows is None and not _contiguous(col, width) else rows
    n = len(col) if rows is None else len(rows)
    buffers = col.buffers()
    if len(buffers) == 2:  # fixed_size_binary
        if col.type.byte_width != width:
            return np.zeros((n, width), np.uint8), np.zeros(n, bool)
        data = np.frombuffer(buffers[1], dtype=np.uint8)[col.offset * width:(col.offset + len(col)) * width]
        whole = data.reshape(-1, width)
        return (whole if rows is None else whole[rows]), np.ones(n, bool)
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[col.offset:col.offset + len(col) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    if rows is None:  # every row has exactly width bytes, back to back: no copy
        return data[offsets[0]:offsets[-1]].reshape(-1, width), np.ones(n, bool)
    start = offsets[rows]
    good = (offsets[rows + 1] - start) == width
    padded = np.concatenate([data, np.zeros(width, np.uint8)])
    return padded[np.where(good, start, 0)[:, None] + np.arange(width)], good


def _contiguous(col: Any, width: int) -> bool:
    """Whether every row of a binary column holds ``width`` bytes (or a fixed-size column)."""
    buffers = col.buffers()
    if len(buffers) == 2:
        return True
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[col.offset:col.offset + len(col) + 1]
    return bool((np.diff(offsets) == width).all())
