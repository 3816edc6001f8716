"""The one reading face of the server: what every reader yields and the fold consumes.

Imports go one way: the readers (:mod:`ldp.jobs.readers` for JSONL and CSV, :mod:`ldp.jobs.lines` for chunks of
upload lines, :mod:`ldp.jobs.binary` for binary frames, :mod:`ldp.jobs.arrow` for Parquet and Arrow) import this
module and know nothing about the fold; the fold (:class:`ldp.jobs.fold.Folder`) imports this module and no
reader. A reader takes :class:`ReadOptions` (the specs to route by, whether windows are kept apart, the input's
name) and yields :data:`Batch` items in record order; :func:`ldp.jobs.readers.read_batches` maps ``(path,
format)`` to that iterator. Each item is either routed reports (:class:`ColumnBatch`, :class:`ParsedReports`),
records already rejected by the reader (:class:`Rejected`, :class:`RejectedEach`), blank lines (:class:`Blank`) or
the lines of a chunk the full parser read (:class:`LineRuns`).

The reader parses and routes (the envelope's spec, metric and window); the fold validates the payloads against the
metric's schema (:meth:`ldp.decoders.base.Aggregate.add`), folds them into one aggregate per key, counts every
record and writes the rejects file under its caps. The fast paths stay columnar: a :class:`ColumnBatch` holds
the payload columns the template-matched JSONL lines were parsed into, the arrays of a binary frame (views of the
section's bytes) or the columns of an Arrow record batch, never a Python object per report.

Raw text of a rejected record is asked for only when the rejects file keeps it (``raw_of``, ``describe``): past a
reason's cap a rejection costs a counter increment, however many records a batch holds. Batches are plain slotted
dataclasses (not frozen: a frozen one costs five times as much to make, and an upload of a few lines makes
several), not to be changed once yielded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ldp.reports import Report, ReportBatch
from ldp.spec import CollectionSpec, MetricSpec

__all__ = ["RAW_LIMIT", "ReadOptions", "ColumnBatch", "ParsedReports", "Rejected", "RejectedEach", "Blank",
           "LineRuns", "Batch", "BatchSink", "record_numbers"]

RAW_LIMIT = 1000
"""Characters of a rejected record kept in the rejects file (readers keep ``4 * RAW_LIMIT`` bytes of a record they
skip, enough for any decoding of them)."""


@dataclass(slots=True)
class ReadOptions:
    """What a reader needs to know: the specs records are routed by (``{fingerprint: spec}``), whether windows are
    kept apart (``by_window``: reports of different windows never share a batch), whether the template fast path
    for JSONL lines is used (``fast``), and the input's name for errors (``source``)."""

    specs: Mapping[str, CollectionSpec]
    by_window: bool = False
    fast: bool = True
    source: str = ""


@dataclass(slots=True)
class ColumnBatch:
    """Reports routed to one metric and window, as columns (a :class:`~ldp.reports.ReportBatch`).

    ``records``: each row's record number (an array), or the first row's when the rows are consecutive (an int);
    ``raw_of(i)``: row ``i`` as the rejects file shows it (asked only for rows the aggregate rejects);
    ``offset``: the byte offset of the binary section the rows came from (in its rejects lines)."""

    metric: MetricSpec
    window: int
    reports: ReportBatch
    records: np.ndarray | int
    raw_of: Callable[[int], Any]
    offset: int | None = None


@dataclass(slots=True)
class ParsedReports:
    """Reports parsed one at a time by the full parser and routed to ``metric`` and ``window`` (valid by
    construction); ``records``: their record numbers. None at all still names the aggregate: it exists, empty (a
    binary section without frames)."""

    metric: MetricSpec
    window: int
    reports: Sequence[Report]
    records: Sequence[int] | np.ndarray = ()


@dataclass(slots=True)
class Rejected:
    """One rejects entry: ``reports`` reports from record ``record`` on, rejected as ``reason``. With ``metric``,
    the record's metric is known and the rejection is also counted in that metric's aggregate."""

    record: int
    reason: str
    detail: str
    raw: Any
    reports: int = 1
    offset: int | None = None
    metric: MetricSpec | None = None
    window: int = 0


@dataclass(slots=True)
class RejectedEach:
    """One rejected report per record number in ``records`` (ascending), all as ``reason``: counted at once;
    ``describe(i)`` gives the detail and raw record of ``records[i]``, asked only for the entries written. With
    ``metric``, also counted in that metric's aggregate."""

    reason: str
    records: np.ndarray
    describe: Callable[[int], tuple[str, Any]]
    metric: MetricSpec | None = None
    window: int = 0


@dataclass(slots=True)
class Blank:
    """Blank lines (or CSV rows): neither reports nor rejections."""

    lines: int


LineStep = Rejected | RejectedEach | ParsedReports | Blank


@dataclass(slots=True)
class LineRuns:
    """The lines of one chunk the template path did not take, in record order.

    ``steps``: ``(record number, outcome)`` per run of identical lines (each run parsed once by the full parser:
    rejected, reports, or blank); ``junk``: the lines surely rejected as ``not_json`` without parsing
    (:func:`ldp.jobs.junk.junk_lines`). The fold writes the junk lines the ``not_json`` cap still has room for
    in record order among the steps and counts the others after them; the steps' reports are folded last."""

    steps: list[tuple[int, LineStep]]
    junk: RejectedEach | None = None


Batch = ColumnBatch | ParsedReports | Rejected | RejectedEach | Blank | LineRuns
"""What a reader yields."""


def record_numbers(item: Batch) -> np.ndarray:
    """The record numbers of the reports in ``item``, folded or rejected (int64; blank lines have none): every
    record of an input is in exactly one batch, once."""
    if isinstance(item, ColumnBatch):
        n = item.reports.n
        return (np.arange(item.records, item.records + n, dtype=np.int64) if isinstance(item.records, int)
                else np.asarray(item.records, dtype=np.int64))
    if isinstance(item, Rejected):
        return np.arange(item.record, item.record + item.reports, dtype=np.int64)
    if isinstance(item, (ParsedReports, RejectedEach)):
        return np.asarray(item.records, dtype=np.int64)
    if isinstance(item, LineRuns):
        parts = [record_numbers(step) for _, step in item.steps]
        if item.junk is not None:
            parts.append(record_numbers(item.junk))
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return np.zeros(0, np.int64)


class BatchSink(Protocol):
    """What consumes a reader's batches (:class:`ldp.jobs.fold.Folder`): the compatibility wrappers that fold
    an input into a folder (``read_input(path, folder)``) need only this."""

    @property
    def options(self) -> ReadOptions: ...

    def consume(self, batches: Iterable[Batch]) -> None: ...

