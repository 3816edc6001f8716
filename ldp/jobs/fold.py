"""Folding batches of records into per-metric aggregates, with every rejection written down.

A :class:`Folder` consumes the batches a reader yields (:mod:`ldp.jobs.batches`: the one reading face of every
input format; :func:`ldp.jobs.readers.read_batches` gives them for a file). It parses nothing and calls no
reader: the batches arrive parsed and routed. It folds the reports of each batch into one
:class:`~ldp.decoders.base.Aggregate` per key (metric, parameter fingerprint, and window when asked), validating
them against the metric's schema (:meth:`Aggregate.add`), and writes each rejected record to the rejects stream
with its reason. Guarantee: ``records == accepted + sum(rejected.values())`` at all times; nothing is dropped. A
rejection of a record whose spec and metric are known is also counted in that metric's aggregate
(``Aggregate.rejected``), as :meth:`Aggregate.add` does.

The counts are exact; the rejects file is capped: per input, the first :data:`REJECTS_CAP`
entries of each reason are written, and :meth:`Folder.close` then writes one summary line per
reason saying how many reports were not written (``"omitted": true``, ``records`` = their number),
so the ``records`` of an input's rejects lines still add up to its rejected count. Past the cap a
rejection costs a counter increment: the readers hand rejected records over in bulk (:class:`RejectedEach`),
their text asked for only while the cap has room.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

import numpy as np

from ldp.decoders.base import Aggregate
from ldp.jobs.batches import (
    RAW_LIMIT,
    Batch,
    Blank,
    ColumnBatch,
    LineRuns,
    ParsedReports,
    ReadOptions,
    Rejected,
    RejectedEach,
)
from ldp.protocols import get_protocol
from ldp.reports import Report, ReportBatch, ReportError
from ldp.spec import CollectionSpec, MetricSpec

__all__ = ["Key", "Folder", "key_name", "parse_key_name", "spec_index", "RAW_LIMIT", "REJECTS_CAP",
           "SERVER_REASONS"]

Key = tuple[str, str, "int | None"]
"""(metric, parameter fingerprint, window or ``None`` when windows are folded together)."""
logger = logging.getLogger(__name__)

REJECTS_CAP = 1000
"""Rejects entries written per reason and input; the rest are counted, and summed up by :meth:`Folder.close`."""
SERVER_REASONS = frozenset({"bad_row", "damaged_row_group"})
"""Reasons of the readers beyond :data:`ldp.spec.ENVELOPE_REASONS`: a CSV row that is not 4 cells; a
Parquet row group whose pages fail their checksums or cannot be decoded."""
_KEY_RE = re.compile(r"([a-z][a-z0-9_]{0,31})\.([0-9a-f]{16})(?:\.w(0|[1-9][0-9]*))?\Z")
_Pending = dict[int, tuple[Aggregate, list[Report]]]


def key_name(key: Key) -> str:
    """``metric.fingerprint`` or ``metric.fingerprint.wWINDOW``: an aggregate's file name stem."""
    metric, fp, window = key
    return f"{metric}.{fp}" + ("" if window is None else f".w{window}")


def parse_key_name(name: str) -> Key:
    """The key of a :func:`key_name` (``ValueError`` otherwise)."""
    m = _KEY_RE.match(name)
    if m is None:
        raise ValueError(f"{name!r} is not an aggregate name (metric.fingerprint[.wWINDOW])")
    return m.group(1), m.group(2), None if m.group(3) is None else int(m.group(3))


def spec_index(specs: CollectionSpec | str | os.PathLike[str] | Sequence[Any] | Mapping[str, Any]
               ) -> dict[str, CollectionSpec]:
    """``{fingerprint: spec}`` from a spec, a path, or several of them (every version deployed)."""
    if isinstance(specs, Mapping):
        return dict(specs)
    items = [specs] if isinstance(specs, (CollectionSpec, str, os.PathLike)) else list(specs)
    out = {}
    for s in items:
        spec = s if isinstance(s, CollectionSpec) else CollectionSpec.load(s)
        out[spec.fingerprint] = spec
    if not out:
        raise ValueError("give at least one collection spec")
    return out


def raw_text(raw: Any) -> str:
    """A rejected record as text for the rejects file (bytes decoded with backslash escapes)."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw[:4 * RAW_LIMIT]).decode("utf-8", "backslashreplace")
    return raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"), default=str)


class Folder:
    """Folds the records of one input (``source`` names it in the rejects) into aggregates.

    ``specs`` maps fingerprints to every spec version accepted; ``rejects`` is a text stream for
    the rejects file (``None``: count only); ``fast=False`` asks its readers (:attr:`options`) to send every line
    to the full parser."""

    def __init__(self, specs: Mapping[str, CollectionSpec], *, by_window: bool = False, source: str = "",
                 rejects: IO[str] | None = None, fast: bool = True, cap: int = REJECTS_CAP) -> None:
        self.specs = dict(specs)
        self.by_window, self.source, self.out, self.cap = by_window, source, rejects, cap
        self.fast = fast
        self.aggregates: dict[Key, Aggregate] = {}
        self.records = self.accepted = self.blank = 0
        self.rejected: Counter[str] = Counter()
        self.written: Counter[str] = Counter()  # rejects entries written, by reason
        self.omitted: Counter[str] = Counter()  # reports rejected past the cap (not written), by reason
        self._first_omitted: dict[str, int] = {}
        self._closed = False

    # -- keys and aggregates ---------------------------------------------------------------------------
    def aggregate(self, metric: MetricSpec, window: int) -> Aggregate:
        """The aggregate a report of ``metric`` in ``window`` folds into (created empty on first use; one whose
        metric names candidates is told so, ``keep_pairs``: RAPPOR then keeps every pair's cells for their test)."""
        key = (metric.name, metric.params_fingerprint, window if self.by_window else None)
        agg = self.aggregates.get(key)
        if agg is None:
            aggregate_type = get_protocol(metric.protocol).aggregate_type
            if aggregate_type is None:
                raise ValueError(f"protocol {metric.protocol!r} has no server aggregate")
            agg = self.aggregates[key] = aggregate_type(metric.params)
            if metric.candidates is not None and hasattr(agg, "keep_pairs"):
                agg.keep_pairs = True
        return agg

    # -- rejections ------------------------------------------------------------------------------------
    def log(self, record: int, reason: str, detail: str, raw: Any, records: int = 1, offset: int | None = None) -> None:
        """Count ``records`` rejected reports under ``reason`` and write one rejects line (while
        fewer than ``cap`` were written for this reason)."""
        self.records += records
        self.rejected[reason] += records
        if self._over_cap(reason, record, records):
            return
        text = raw_text(raw)
        entry: dict[str, Any] = {"source": self.source, "record": record, "records": records, "reason": reason,
                                 "detail": detail}
        if offset is not None:
            entry["offset"] = offset
        entry["raw"] = text[:RAW_LIMIT]
        if len(text) > RAW_LIMIT:
            entry["raw_truncated"] = True
        self._write(entry)

    def log_bulk(self, reason: str, records: np.ndarray, describe: Callable[[int], tuple[str, Any]]) -> None:
        """Reject one report per record number in ``records`` (ascending) under ``reason``: counted at
        once; ``describe(i)`` gives the detail and raw text of ``records[i]``, asked only for the
        entries written (at most ``cap``)."""
        n = len(records)
        room = 0 if self.out is None else max(0, min(n, self.cap - self.written[reason]))
        for i in range(room):
            self.log(int(records[i]), reason, *describe(i))
        if n > room:
            self.records += n - room
            self.rejected[reason] += n - room
            self._over_cap(reason, int(records[room]), n - room)

    def _over_cap(self, reason: str, record: int, records: int) -> bool:
        """True (and the reports counted as omitted) when no more entries of ``reason`` are written."""
        if self.out is None:
            return True
        if self.written[reason] < self.cap:
            self.written[reason] += 1
            return False
        self.omitted[reason] += records
        self._first_omitted.setdefault(reason, record)
        return True

    def _write(self, entry: dict[str, Any]) -> None:
        self.out.write(json.dumps(entry, separators=(",", ":")) + "\n")  # type: ignore[union-attr]

    def close(self) -> None:
        """Write one summary line per reason whose entries were capped: ``records`` is the number of
        reports not written, ``record`` the first of them, ``omitted`` is ``true``. Once."""
        if self._closed:
            return
        self._closed = True
        for reason, n in sorted(self.omitted.items()):
            logger.debug("%s: %d more reports rejected as %s than the rejects file keeps (%d entries)",
                         self.source, n, reason, self.cap)
            self._write({"source": self.source, "record": self._first_omitted[reason], "records": n, "reason": reason,
                         "detail": f"{n} more reports rejected as {reason} are not written here (the first "
                                   f"{self.cap} entries of each reason of an input are)", "omitted": True})

    def reject(self, record: int, reason: str, detail: str, raw: Any, *, records: int = 1,
               agg: Aggregate | None = None, offset: int | None = None) -> None:
        """:meth:`log`, and count it in ``agg`` too (the record's metric is known)."""
        self.log(record, reason, detail, raw, records, offset)
        if agg is not None:
            agg.rejected[reason] += records

    # -- columnar batches ------------------------------------------------------------------------------
    def fold_batch(self, metric: MetricSpec, window: int, batch: ReportBatch, records: np.ndarray | int,
                   raw_of: Callable[[int], Any], offset: int | None = None) -> None:
        """Validate and fold a batch of ``metric`` (vectorized, :meth:`Aggregate.add`). ``records``:
        each row's record number (or the first row's, rows consecutive); ``raw_of(i)``: row i for the
        rejects file."""
        agg = self.aggregate(metric, window)

        def number(i: int) -> int:
            return records + i if isinstance(records, int) else int(records[i])

        def on_reject(item: Any, err: ReportError) -> None:
            if isinstance(item, int):
                self.log(number(item), err.reason, err.detail, raw_of(item), 1, offset)
            else:  # the whole batch (parameters or fields differ)
                self.log(number(0), err.reason, err.detail, raw_of(0), batch.n, offset)

        accepted = agg.add(batch, on_reject)
        self.accepted += accepted
        self.records += accepted

    # -- the batches of a reader ---------------------------------------------------------------------------
    @property
    def options(self) -> ReadOptions:
        """What a reader of this folder's inputs needs: its specs, windows kept apart or not, the fast path, the
        input's name."""
        return ReadOptions(self.specs, self.by_window, self.fast, self.source)

    def consume(self, batches: Iterable[Batch]) -> None:
        """Fold every batch of a reader (:func:`ldp.jobs.readers.read_batches`), in order."""
        item: Batch | None
        for item in batches:
            if isinstance(item, ColumnBatch):  # the common batch, without a second call
                self.fold_batch(item.metric, item.window, item.reports, item.records, item.raw_of, item.offset)
            else:
                self.fold(item)
            item = None  # let the batch (and the reader's chunk it refers to) go before the next is read

    def fold(self, item: Batch) -> None:
        """Fold one batch: its reports into their aggregate, its rejections into the counts and rejects file."""
        if isinstance(item, ColumnBatch):
            self.fold_batch(item.metric, item.window, item.reports, item.records, item.raw_of, item.offset)
        elif isinstance(item, LineRuns):
            self._fold_runs(item)
        else:
            self._step(item, None)

    def _step(self, item: Rejected | RejectedEach | ParsedReports | Blank, pending: _Pending | None) -> None:
        """One rejection, reports parsed one by one (folded now, or collected in ``pending``), or blank lines."""
        if isinstance(item, Rejected):
            self.log(item.record, item.reason, item.detail, item.raw, item.reports, item.offset)
            if item.metric is not None:
                self.aggregate(item.metric, item.window).rejected[item.reason] += item.reports
        elif isinstance(item, RejectedEach):
            self.log_bulk(item.reason, item.records, item.describe)
            if item.metric is not None:
                self.aggregate(item.metric, item.window).rejected[item.reason] += len(item.records)
        elif isinstance(item, ParsedReports):
            agg = self.aggregate(item.metric, item.window)
            if pending is None:
                self._fold_reports(agg, list(item.reports))
            else:
                pending.setdefault(id(agg), (agg, []))[1].extend(item.reports)
        elif isinstance(item, Blank):
            self.blank += item.lines
        else:
            raise TypeError(f"not a batch of a reader: {type(item).__name__}")

    def _fold_runs(self, runs: LineRuns) -> None:
        """The steps of a chunk in record order, with the junk lines the ``not_json`` cap has room for among them
        (their detail from the reader, while written); the other junk lines are counted after them, and the
        reports of the steps folded last, one :meth:`Aggregate.add` per aggregate."""
        junk = runs.junk
        n_junk = 0 if junk is None else len(junk.records)
        room = min(n_junk, 0 if self.out is None else max(0, self.cap - self.written["not_json"]))
        keys = np.fromiter((k for k, _ in runs.steps), dtype=np.int64, count=len(runs.steps))
        if room:
            keys = np.concatenate((keys, junk.records[:room]))  # type: ignore[union-attr]
        pending: _Pending = {}
        steps = runs.steps
        for i in np.argsort(keys, kind="stable").tolist():
            if i < len(steps):
                step = steps[i][1]
                if type(step) is Rejected and step.metric is None:  # the most common step, without a call
                    self.log(step.record, step.reason, step.detail, step.raw, step.reports, step.offset)
                else:
                    self._step(step, pending)
            else:
                j = i - len(runs.steps)
                self.log(int(junk.records[j]), "not_json", *junk.describe(j))  # type: ignore[union-attr]
        if n_junk > room:
            self.log_bulk("not_json", junk.records[room:], lambda j: junk.describe(room + j))  # type: ignore
        for agg, reports in pending.values():
            self._fold_reports(agg, reports)

    def _fold_reports(self, agg: Aggregate, reports: list[Report]) -> None:
        def impossible(item: Any, err: ReportError) -> None:  # routed reports are valid by construction
            raise AssertionError(f"a routed report was rejected: {err}")

        accepted = agg.add(reports, impossible)
        self.accepted += accepted
        self.records += accepted

    # -- summary ---------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counts so far: ``records`` read (reports), ``accepted``, ``rejected`` by reason, ``blank``
        lines, and ``rejects_written`` (entries in the rejects file, summary lines aside)."""
        return {"records": self.records, "accepted": self.accepted, "rejected": dict(sorted(self.rejected.items())),
                "blank": self.blank, "rejects_written": sum(self.written.values())}
