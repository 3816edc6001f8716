"""The Parquet layout (and any Arrow table in it), read into batches column by column: no Python loop per valid row.

Row i means the envelope ``{"spec", "metric", "window", "report": {"v", "protocol", "params",
"payload": {<field>: <value> for each non-null payload.<field>}}}`` plus one key per other non-null
column; a ``bits`` value of ceil(size/8) bytes with clean padding is its ``size`` bits, any other
byte string all its ``8*len`` bits. Rows are checked with vectorized masks in exactly the order
:func:`ldp.spec.parse_envelope` checks that envelope (the reference): ``missing_key`` (spec, metric,
window), ``unknown_key``, ``bad_spec``, ``bad_metric``, ``bad_window``, ``missing_key`` (v,
protocol, params), ``bad_version``, ``bad_protocol``, ``bad_fingerprint``, ``bad_payload``,
``bad_field``/``bad_value`` (first bad payload column), ``unknown_spec``; then grouped by the
exact (spec, metric, protocol, params[, window]) dictionary codes (a stable lexsort, no arithmetic
on codes) and each group routed once (``unknown_metric``, ``wrong_protocol``,
``wrong_fingerprint``, then per field in schema order ``payload_mismatch``, ``out_of_range``,
``bad_length``). Each group's valid rows make one :class:`~ldp.jobs.batches.ColumnBatch` over the Arrow
buffers; rejected rows go in bulk (:class:`~ldp.jobs.batches.RejectedEach`), visited only to be written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ldp.errors import InputError
from ldp.jobs.batches import Batch, BatchSink, ColumnBatch, ReadOptions, Rejected, RejectedEach
from ldp.jobs.formats_parquet import PARQUET_KEYS, _pyarrow, parquet_row_groups
from ldp.reports import MAX_BITS, MAX_FIELDS, ReportBatch
from ldp.spec import MetricSpec
from ldp.spec.envelope import MAX_WINDOW, METRIC_RE

__all__ = ["parquet_batches", "arrow_batches", "read_parquet", "fold_arrow", "BATCH_ROWS"]

BATCH_ROWS = 1 << 16
"""Rows decoded at a time: larger batches are no faster and let the allocator's high-water mark grow."""
_TEXT = ("spec", "metric", "protocol", "params")
_HEX16 = re.compile(r"[0-9a-f]{16}\Z")
_PATTERNS = {"spec": (_HEX16, "bad_spec", "spec must be 16 lowercase hex digits"),
             "metric": (METRIC_RE, "bad_metric", "metric names match [a-z][a-z0-9_]{0,31}"),
             "protocol": (re.compile(r"[a-z][a-z0-9_-]{0,31}\Z"), "bad_protocol", "bad protocol name"),
             "params": (_HEX16, "bad_fingerprint", "fingerprints are 16 lowercase hex digits")}
_FIELD_RE = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
_PREFIX = "payload."


def parquet_batches(path: str | os.PathLike[str], options: ReadOptions, batch_rows: int = BATCH_ROWS,
                    progress: Callable[[int], None] | None = None, *, unverified: bool = False) -> Iterator[Batch]:
    """The batches of a Parquet file in the layout of ``docs/jobs.md`` (row i, 1-based, is record i).

    Page checksums are verified: a row group whose pages fail (or cannot be decoded) is rejected
    whole as ``damaged_row_group``, counted with its row count from the footer, never folded. A
    file without page checksums is refused (:class:`InputError`) unless ``unverified``. Missing or
    wrongly typed key columns, or an unreadable footer, make an :class:`InputError`."""
    source = options.source or os.fspath(path)
    size = os.path.getsize(path)
    total = None
    item: Iterable[Any] | str | None  # None once read: a row group is let go before the next is decoded
    batch: Any  # a pyarrow RecordBatch, or None once read
    for record, rows, item in parquet_row_groups(path, batch_rows, source, unverified=unverified,
                                                 check_schema=lambda schema: _check_schema(schema, source)):
        if isinstance(item, str):  # a damaged row group: counted, never folded
            yield Rejected(record, "damaged_row_group", item, {"row_group_first_record": record, "rows": rows}, rows)
        else:
            for batch in item:
                yield from arrow_batches(batch, options, record)
                record += batch.num_rows
            batch = None
        item = None  # let the row group go before the next is decoded
        if progress is not None:
            total = total or max(_pyarrow()[1].read_metadata(path).num_rows, 1)
            progress(int(size * rows / total))


def read_parquet(path: str | os.PathLike[str], folder: BatchSink, batch_rows: int = BATCH_ROWS,
                 progress: Callable[[int], None] | None = None, *, unverified: bool = False) -> None:
    """Fold a Parquet file into ``folder`` (:func:`parquet_batches`)."""
    folder.consume(parquet_batches(path, folder.options, batch_rows, progress, unverified=unverified))


def _check_schema(schema: Any, source: str) -> None:
    pa, _ = _pyarrow()
    missing = [k for k in PARQUET_KEYS if k not in schema.names]
    if missing:
        raise InputError(f"{source}: Parquet columns {missing} missing (the layout: {', '.join(PARQUET_KEYS)}, "
                         "payload.<field>...)")
    if len(set(schema.names)) != len(schema.names):
        raise InputError(f"{source}: a Parquet column name appears twice")
    for name in PARQUET_KEYS:
        t = schema.field(name).type
        t = t.value_type if pa.types.is_dictionary(t) else t
        ok = (pa.types.is_string(t) or pa.types.is_large_string(t)) if name in _TEXT else pa.types.is_integer(t)
        if not ok:
            want = "a string" if name in _TEXT else "an integer"
            raise InputError(f"{source}: Parquet column {name!r} must be {want} column, got {t}")


def _valid(col: Any) -> np.ndarray:
    return col.is_valid().to_numpy(zero_copy_only=False) if col.null_count else np.ones(len(col), bool)


class _Columns:
    """One record batch's key columns as numpy arrays: dictionary codes (-1 for null) for text."""

    def __init__(self, pa: Any, batch: Any) -> None:
        import pyarrow.compute as pc

        self.batch, self.n = batch, batch.num_rows
        self.codes: dict[str, np.ndarray] = {}
        self.words: dict[str, list[str | None]] = {}
        for name in _TEXT:
            col = batch.column(name)
            if not pa.types.is_dictionary(col.type):
                col = pc.dictionary_encode(col)
            words = col.dictionary.to_pylist()
            codes = (col.indices.fill_null(0) if col.null_count else col.indices).to_numpy(zero_copy_only=False)
            if codes.dtype.kind == "u" or col.null_count or None in words:  # room for -1 (null), writable
                codes = codes.astype(np.int64)
                codes[~_valid(col.indices)] = -1
                if None in words:  # a null word is a null value
                    codes[np.array([w is None for w in words] + [True])[codes]] = -1
            self.codes[name], self.words[name] = codes, words
        self.null = {name: self.codes[name] < 0 for name in _TEXT}
        for name in ("window", "v"):
            self.null[name] = ~_valid(batch.column(name))
        self.window = self._ints(pa, pc, "window")
        self.v = self._ints(pa, pc, "v")
        self._valid: dict[str, np.ndarray] = {}
        self._values: dict[str, np.ndarray] = {}

    def valid(self, name: str) -> np.ndarray:
        """Whether each row of column ``name`` is non-null (computed once per batch)."""
        if name not in self._valid:
            self._valid[name] = _valid(self.batch.column(name))
        return self._valid[name]

    def values(self, name: str) -> np.ndarray:
        """An integer column's values, nulls as 0 (computed once per batch)."""
        if name not in self._values:
            col = self.batch.column(name)
            self._values[name] = (col.fill_null(0) if col.null_count else col).to_numpy(zero_copy_only=False)
        return self._values[name]

    def _ints(self, pa: Any, pc: Any, name: str) -> np.ndarray:
        col = self.batch.column(name)
        if pa.types.is_uint64(col.type):  # above 2**53 is out of range anyway: keep it so in int64
            col = pc.min_element_wise(col, pa.scalar(MAX_WINDOW + 1, pa.uint64()))
        col = pc.fill_null(col, 0) if col.null_count else col
        values = col.to_numpy(zero_copy_only=False)
        return values if values.dtype == np.int64 or values.dtype.itemsize < 8 else values.astype(np.int64)

    def text(self, name: str, i: int) -> str | None:
        c = int(self.codes[name][i])
        return None if c < 0 else self.words[name][c]

    def raw(self, i: int) -> dict[str, Any]:
        return {"spec": self.text("spec", i), "metric": self.text("metric", i),
                "window": None if self.null["window"][i] else int(self.window[i]),
                "v": None if self.null["v"][i] else int(self.v[i]),
                "protocol": self.text("protocol", i), "params": self.text("params", i)}

    def bad_words(self, name: str, live: np.ndarray, bad: Callable[[str], bool]) -> np.ndarray | None:
        """Live rows whose ``name`` is a word for which ``bad`` holds (``None``: no such row); only
        the words the live rows use are tested (dictionaries may hold many unused words)."""
        codes = self.codes[name]
        live_codes = codes[live & (codes >= 0)]
        if not live_codes.size:
            return None
        lo, hi = int(live_codes.min()), int(live_codes.max())
        used = [lo] if lo == hi else (lo + np.flatnonzero(np.bincount(live_codes - lo))).tolist()
        flagged = [c for c in used if bad(self.words[name][c])]  # type: ignore[arg-type]
        if not flagged:
            return None
        lut = np.zeros(len(self.words[name]) + 1, dtype=bool)  # the last entry: code -1 (null)
        lut[flagged] = True
        return lut[codes]


def _mismatch(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    """``word -> True`` when ``pattern`` does not match the word."""
    return lambda word: not pattern.match(word)


def _rejected(cols: _Columns, rows: np.ndarray, first: int, reason: str, detail: str,
              metric: MetricSpec | None = None, window: int = 0) -> RejectedEach:
    """Rows ``rows`` (ascending) rejected as ``reason``; a row's raw record is made only when written."""
    return RejectedEach(reason, rows + first, lambda j: (detail, cols.raw(int(rows[j]))), metric, window)


def arrow_batches(batch: Any, options: ReadOptions, first_record: int) -> Iterator[Batch]:
    """The batches of an Arrow ``RecordBatch`` (or ``Table``) in the Parquet layout; row i is record
    ``first_record + i``. Every row gets the reason :func:`ldp.spec.parse_envelope` would give."""
    pa, _ = _pyarrow()
    if isinstance(batch, pa.Table):
        for b in batch.to_batches():
            yield from arrow_batches(b, options, first_record)
            first_record += b.num_rows
        return
    yield from _record_batch(pa, batch, options, first_record)


def fold_arrow(folder: BatchSink, batch: Any, first_record: int) -> None:
    """Fold an Arrow ``RecordBatch`` (or ``Table``) in the Parquet layout into ``folder`` (:func:`arrow_batches`)."""
    folder.consume(arrow_batches(batch, folder.options, first_record))


def _record_batch(pa: Any, batch: Any, options: ReadOptions, first_record: int) -> list[Batch]:
    """One record batch's batches: the rejections of each check in turn, then each group's."""
    _check_schema(batch.schema, options.source)
    cols = _Columns(pa, batch)
    live = np.ones(cols.n, dtype=bool)
    out: list[Batch] = []

    def drop(mask: np.ndarray | None, reason: str, detail: str) -> None:
        if mask is None:
            return
        mask = mask & live
        if mask.any():
            out.append(_rejected(cols, np.flatnonzero(mask), first_record, reason, detail))
            live[mask] = False

    names = batch.schema.names
    payload = [name for name in names if name.startswith(_PREFIX)]
    drop(cols.null["spec"] | cols.null["metric"] | cols.null["window"], "missing_key",
         "envelope lacks spec, metric or window")
    for name in names:
        if name not in PARQUET_KEYS and name not in payload and batch.column(name).null_count < cols.n:
            drop(_valid(batch.column(name)), "unknown_key", f"column {name!r} (no identifier or timestamp allowed)")
    for name in ("spec", "metric"):
        pattern, reason, detail = _PATTERNS[name]
        drop(cols.bad_words(name, live, _mismatch(pattern)), reason, detail)
    drop((cols.window < 0) | (cols.window > MAX_WINDOW), "bad_window", "window must be an integer in [0, 2**53]")
    drop(cols.null["v"] | cols.null["protocol"] | cols.null["params"], "missing_key",
         "report lacks v, protocol or params")
    drop(cols.v != 1, "bad_version", "supported format version is 1")
    for name in ("protocol", "params"):
        pattern, reason, detail = _PATTERNS[name]
        drop(cols.bad_words(name, live, _mismatch(pattern)), reason, detail)
    count = _check_payload_values(pa, cols, payload, drop)
    specs = options.specs
    drop(cols.bad_words("spec", live, lambda w: w not in specs), "unknown_spec", "no known spec has this fingerprint")
    for part in _split(cols, np.flatnonzero(live), options.by_window):
        i = int(part[0])
        spec = specs[cols.text("spec", i)]  # type: ignore[index]
        metric = spec.envelope_metric(cols.text("metric", i))  # type: ignore[arg-type]
        if metric is None:
            out.append(_rejected(cols, part, first_record, "unknown_metric",
                                 f"no metric {cols.text('metric', i)!r} in spec {spec.name!r}"))
        else:
            out += _group(pa, cols, part, first_record, metric, int(cols.window[i]), payload, count[part],
                          options.by_window)
    return out


def _check_payload_values(pa: Any, cols: _Columns, payload: list[str],
                          drop: Callable[[np.ndarray | None, str, str], None]) -> np.ndarray:
    """``bad_payload`` (not 1 to MAX_FIELDS non-null fields), then per payload column in order the
    first ``bad_field`` (a bad name) or ``bad_value`` (a negative integer, an empty or over-long
    byte string, a value of another type): what building the :class:`~ldp.reports.Report` checks.
    Returns each row's number of non-null payload fields."""
    count = np.zeros(cols.n, dtype=np.int64)
    for name in payload:
        if cols.batch.column(name).null_count < cols.n:
            count += cols.valid(name)
    drop((count == 0) | (count > MAX_FIELDS), "bad_payload", f"payload must have 1..{MAX_FIELDS} fields")
    for name in payload:
        col = cols.batch.column(name)
        if col.null_count == len(col):
            continue
        valid = cols.valid(name)
        if not _FIELD_RE.match(name[len(_PREFIX):]):
            drop(valid, "bad_field", f"field names are [a-z][a-z0-9_]{{0,31}}, got {name[len(_PREFIX):]!r}")
        elif pa.types.is_integer(col.type):
            if pa.types.is_signed_integer(col.type):
                drop(valid & (cols.values(name) < 0), "bad_value",
                     f"{name}: uint out of [0, 2**64)")
        elif _is_binary(pa, col.type):
            lengths = _byte_lengths(pa, col)
            drop(valid & ((lengths == 0) | (lengths > MAX_BITS // 8)), "bad_value",
                 f"{name}: bit strings are 1..2**24 bits")
        else:
            drop(valid, "bad_value", f"{name}: expected an integer or packed bits, got {col.type}")
    return count


def _is_binary(pa: Any, t: Any) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t))


def _byte_lengths(pa: Any, col: Any) -> np.ndarray:
    import pyarrow.compute as pc

    if pa.types.is_fixed_size_binary(col.type):
        return np.full(len(col), col.type.byte_width, dtype=np.int64)
    return pc.binary_length(col).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)


def _split(cols: _Columns, rows: np.ndarray, by_window: bool) -> list[np.ndarray]:
    """The ``rows`` split into groups of equal spec, metric, protocol, params (and window) codes,
    each in row order: a stable lexsort of the code columns, cut where any column changes. No
    arithmetic on codes, so distinct identities never share a group whatever the dictionary sizes."""
    if not rows.size:
        return []
    every = rows.size == cols.n  # rows are ascending: then they are all the rows, in order
    keys = [cols.codes[name] for name in _TEXT] + ([cols.window] if by_window else [])
    keys = [k if every else k[rows] for k in keys]
    keys = [k for k in keys if k.min() != k.max()]  # constant columns tell no groups apart
    if not keys:
        return [rows]
    order = np.lexsort(keys[::-1])
    change = np.zeros(rows.size - 1, dtype=bool)
    for k in keys:
        s = k[order]
        change |= s[1:] != s[:-1]
    return [rows[part] for part in np.split(order, np.flatnonzero(change) + 1)]


def _group(pa: Any, cols: _Columns, rows: np.ndarray, first: int, metric: MetricSpec, window: int,
           payload: list[str], count: np.ndarray, by_window: bool) -> list[Batch]:
    """Route one group (same spec, metric, protocol, params and window: checked on every row): its rows failing
    the metric's schema rejected with the reason of ``validate_report``, then one batch of the others' payload."""
    i = int(rows[0])
    _check_one_group(cols, rows, window, by_window)
    pr = metric.params
    if cols.text("protocol", i) != pr.protocol:
        return [_rejected(cols, rows, first, "wrong_protocol",
                          f"report: expected {pr.protocol!r}, got {cols.text('protocol', i)!r}", metric, window)]
    if cols.text("params", i) != pr.fingerprint:
        return [_rejected(cols, rows, first, "wrong_fingerprint",
                          f"report: expected parameters {pr.fingerprint}, got {cols.text('params', i)}", metric,
                          window)]
    out, live, columns = _fields(pa, cols, rows, first, metric, window, payload, count)
    keep = np.flatnonzero(live)
    if not keep.size:
        return out
    if keep.size < rows.size:
        columns = {k: v[keep] for k, v in columns.items()}
    kept = rows[keep]
    rb = ReportBatch(pr.protocol, pr.fingerprint, tuple(pr.schema), columns)
    out.append(ColumnBatch(metric, window, rb, kept + first, lambda j: cols.raw(int(kept[j]))))
    return out


def _take(cols: _Columns, rows: np.ndarray, a: np.ndarray) -> np.ndarray:
    """A column's values at ``rows`` (ascending: all of them, or indexed)."""
    return a if rows.size == cols.n else a[rows]


def _check_one_group(cols: _Columns, rows: np.ndarray, window: int, by_window: bool) -> None:
    """``AssertionError`` unless every row of the group has its first row's spec, metric, protocol and params (and,
    ``by_window``, is in ``window``)."""
    i = int(rows[0])
    for name in _TEXT:
        if not (_take(cols, rows, cols.codes[name]) == cols.codes[name][i]).all():
            raise AssertionError(f"a group of rows mixes {name} values")
    if by_window and not (_take(cols, rows, cols.window) == window).all():
        raise AssertionError("a group of rows mixes windows")


def _fields(pa: Any, cols: _Columns, rows: np.ndarray, first: int, metric: MetricSpec, window: int,
            payload: list[str], count: np.ndarray) -> tuple[list[Batch], np.ndarray, dict[str, np.ndarray]]:
    """The group's payload fields checked against the metric's schema, field by field: the rejected rows (a batch
    per reason met, each row rejected once, for the first check it fails), which rows are left, and the fields'
    columns (over every row of the group)."""
    pr = metric.params
    live = np.ones(rows.size, dtype=bool)
    out: list[Batch] = []

    def drop(mask: np.ndarray, reason: str, detail: str) -> None:
        mask = mask & live
        if mask.any():
            out.append(_rejected(cols, rows[mask], first, reason, detail, metric, window))
            live[mask] = False

    kinds = ", ".join(f"{f.name}: {f.kind}" for f in pr.schema)
    drop(count != len(pr.schema), "payload_mismatch", f"report: expected fields {kinds}")
    columns: dict[str, np.ndarray] = {}
    for f in pr.schema:
        name = _PREFIX + f.name
        col = cols.batch.column(name) if name in payload else None
        if col is None or not (pa.types.is_integer(col.type) if f.kind == "uint" else _is_binary(pa, col.type)):
            drop(live, "payload_mismatch", f"report: field {f.name!r} must be {f.kind}")
            break
        drop(~_take(cols, rows, cols.valid(name)), "payload_mismatch", f"report: field {f.name!r} must be {f.kind}")
        if f.kind == "uint":
            values = _take(cols, rows, cols.values(name))
            if f.size <= np.iinfo(values.dtype).max:
                drop(values >= f.size, "out_of_range", f"report: {f.name} must be < {f.size}")
            columns[f.name] = values
        else:
            packed, good = _packed(col, rows, (f.size + 7) // 8)
            pad = (-f.size) % 8
            if pad:  # bits set past ``size``: more than size bits
                good &= (packed[:, -1] >> (8 - pad)) == 0
            drop(~good, "bad_length", f"report: {f.name} must have {f.size} bits")
            columns[f.name] = packed
    return out, live, columns


def _packed(col: Any, rows: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows' packed bits as an (n, width) uint8 array, and whether each row has ``width`` bytes."""
    n = len(rows)
    buffers = col.buffers()
    if len(buffers) == 2:  # fixed_size_binary
        if col.type.byte_width != width:
            return np.zeros((n, width), np.uint8), np.zeros(n, bool)
        data = np.frombuffer(buffers[1], dtype=np.uint8)[col.offset * width:(col.offset + len(col)) * width]
        return data.reshape(-1, width)[rows], np.ones(n, bool)
    wide = len(buffers) == 3 and col.type.id == _pyarrow()[0].large_binary().id
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if wide else np.int32)[col.offset:col.offset + len(col) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    if n == len(col) and rows[0] == 0 and rows[-1] == n - 1 and (np.diff(offsets) == width).all():
        return data[offsets[0]:offsets[-1]].reshape(-1, width), np.ones(n, bool)  # back to back: no copy
    start = offsets[rows]
    good = (offsets[rows + 1] - start) == width
    padded = np.concatenate([data, np.zeros(width, np.uint8)])
    return padded[np.where(good, start, 0)[:, None] + np.arange(width)], good
