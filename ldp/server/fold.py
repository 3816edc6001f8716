"""Folding one input's records into per-metric aggregates, with every rejection written down.

A :class:`Folder` routes each record to its metric with the collection specs, validates it, folds
the valid ones into one :class:`~ldp.decoders.base.Aggregate` per key (metric, parameter
fingerprint, and window when asked) and writes each rejected record to the rejects stream with its
reason. Guarantee: ``records == accepted + sum(rejected.values())`` at all times; nothing is
dropped. A rejection of a record whose spec and metric are known is also counted in that metric's
aggregate (``Aggregate.rejected``), as :meth:`Aggregate.add` does.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import IO, Any, Callable, Mapping, Sequence

import numpy as np

from ldp.decoders.base import Aggregate
from ldp.protocols import get_protocol
from ldp.reports import Report, ReportBatch, ReportError
from ldp.server.jsonl import match_lines, templates_for
from ldp.spec import CollectionSpec, EnvelopeError, MetricSpec, parse_envelope

__all__ = ["Key", "Folder", "key_name", "parse_key_name", "groups", "RAW_LIMIT", "SERVER_REASONS"]

Key = tuple[str, str, "int | None"]
"""(metric, parameter fingerprint, window or ``None`` when windows are folded together)."""
RAW_LIMIT = 1000
"""Characters of a rejected record kept in the rejects file."""
SERVER_REASONS = frozenset({"bad_row"})
"""Reasons of the readers beyond :data:`ldp.spec.ENVELOPE_REASONS`: a CSV row that is not 4 cells."""
_KEY_RE = re.compile(r"([a-z][a-z0-9_]{0,31})\.([0-9a-f]{16})(?:\.w(0|[1-9][0-9]*))?\Z")


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


def groups(values: np.ndarray) -> list[tuple[int, np.ndarray | None]]:
    """``(value, indices of the rows holding it)`` per distinct value, ascending; ``None`` for
    "every row" when there is one value (the common case: no copy, no sort)."""
    if not len(values):
        return []
    lo, hi = int(values.min()), int(values.max())
    if lo == hi:
        return [(lo, None)]
    if hi - lo < 1 << 12:
        present = np.flatnonzero(np.bincount(values - lo))
        return [(lo + int(p), np.flatnonzero(values == lo + p)) for p in present]
    order = np.argsort(values, kind="stable")
    cuts = np.flatnonzero(np.diff(values[order])) + 1
    return [(int(values[part[0]]), part) for part in np.split(order, cuts)]


def raw_text(raw: Any) -> str:
    """A rejected record as text for the rejects file (bytes decoded with backslash escapes)."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw[:4 * RAW_LIMIT]).decode("utf-8", "backslashreplace")
    return raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"), default=str)


class Folder:
    """Folds the records of one input (``source`` names it in the rejects) into aggregates.

    ``specs`` maps fingerprints to every spec version accepted; ``rejects`` is a text stream for
    the rejects file (``None``: count only); ``fast=False`` sends every line to the full parser."""

    def __init__(self, specs: Mapping[str, CollectionSpec], *, by_window: bool = False, source: str = "",
                 rejects: IO[str] | None = None, fast: bool = True) -> None:
        self.specs = dict(specs)
        self.by_window, self.source, self.out = by_window, source, rejects
        self.templates = templates_for(self.specs) if fast else []
        self.aggregates: dict[Key, Aggregate] = {}
        self.records = self.accepted = self.blank = 0
        self.rejected: Counter[str] = Counter()

    # -- keys and aggregates ---------------------------------------------------------------------------
    def aggregate(self, metric: MetricSpec, window: int) -> Aggregate:
        """The aggregate a report of ``metric`` in ``window`` folds into (created empty on first use)."""
        key = (metric.name, metric.params_fingerprint, window if self.by_window else None)
        agg = self.aggregates.get(key)
        if agg is None:
            agg = self.aggregates[key] = get_protocol(metric.protocol).aggregate_type(metric.params)
        return agg

    def metric_of(self, spec_fp: str, metric: str) -> MetricSpec | None:
        spec = self.specs.get(spec_fp)
        return None if spec is None else spec.metrics.get(metric)

    # -- rejections ------------------------------------------------------------------------------------
    def log(self, record: int, reason: str, detail: str, raw: Any, records: int = 1, offset: int | None = None) -> None:
        """Count ``records`` rejected reports under ``reason`` and write one rejects line."""
        self.records += records
        self.rejected[reason] += records
        if self.out is None:
            return
        text = raw_text(raw)
        entry: dict[str, Any] = {"source": self.source, "record": record, "records": records, "reason": reason,
                                 "detail": detail}
        if offset is not None:
            entry["offset"] = offset
        entry["raw"] = text[:RAW_LIMIT]
        if len(text) > RAW_LIMIT:
            entry["raw_truncated"] = True
        self.out.write(json.dumps(entry, separators=(",", ":")) + "\n")

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

    # -- lines (JSONL, and CSV rows made into lines) ---------------------------------------------------------
    def fold_lines(self, chunk: bytes, first_record: int, raws: Sequence[Any] | None = None) -> None:
        """Fold a chunk of whole lines (each ending in ``\\n``); line i is record ``first_record + i``.

        Lines in the client's exact form go through the vectorized fast path; the rest, one by one,
        through :func:`ldp.spec.parse_envelope` (same result, and the reason when rejected).
        ``raws[i]``: what the rejects file shows for line i (default: the line)."""
        matched, starts, ends, accepted = match_lines(chunk, self.templates)
        for m in matched:
            metric = self.specs[m.template.spec].metrics[m.template.metric]
            for window, rows in (groups(m.windows) if self.by_window else [(0, None)]):
                cols = m.columns if rows is None else {k: v[rows] for k, v in m.columns.items()}
                idx = m.rows if rows is None else m.rows[rows]
                batch = ReportBatch(metric.protocol, metric.params_fingerprint, tuple(metric.params.schema), cols)
                self.fold_batch(metric, window, batch, idx + first_record,
                                lambda i, idx=idx: raws[idx[i]] if raws else chunk[starts[idx[i]]:ends[idx[i]]])
        pending: dict[int, tuple[Aggregate, list[Report]]] = {}
        for i in np.flatnonzero(~accepted).tolist():  # the full parser, one line at a time
            line = chunk[starts[i]:ends[i]]
            if not line.strip():
                self.blank += 1
                continue
            self.fold_line(line, first_record + i, raws[i] if raws else line, pending)
        self._flush(pending)

    def fold_line(self, line: bytes | str, record: int, raw: Any,
                  pending: dict[int, tuple[Aggregate, list[Report]]] | None = None) -> None:
        """Parse, route and fold (or reject) one upload line. With ``pending``, accepted reports
        are collected there and folded by the caller's :meth:`_flush`."""
        try:
            env = parse_envelope(line)
        except EnvelopeError as err:
            self.reject(record, err.reason, err.detail, raw)
            return
        spec = self.specs.get(env.spec)
        if spec is None:
            self.reject(record, "unknown_spec", f"no known spec has fingerprint {env.spec}", raw)
            return
        metric = spec.metrics.get(env.metric)
        if metric is None:
            self.reject(record, "unknown_metric", f"no metric {env.metric!r} in spec {spec.name!r}", raw)
            return
        agg = self.aggregate(metric, env.window)
        try:
            spec.route(env)
        except EnvelopeError as err:
            self.reject(record, err.reason, err.detail, raw, agg=agg)
            return
        if pending is None:
            self._fold_reports(agg, [env.report])
        else:
            pending.setdefault(id(agg), (agg, []))[1].append(env.report)

    def _flush(self, pending: dict[int, tuple[Aggregate, list[Report]]]) -> None:
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
        """Counts so far: ``records`` read (reports), ``accepted``, ``rejected`` by reason, ``blank`` lines."""
        return {"records": self.records, "accepted": self.accepted, "rejected": dict(sorted(self.rejected.items())),
                "blank": self.blank}
