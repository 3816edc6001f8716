"""Chunks of upload lines (JSONL, and CSV rows made into lines) read into batches (:mod:`ldp.jobs.batches`).

:func:`line_batches` reads a chunk of whole lines: the lines in the client's exact form go through the vectorized
template path (:func:`ldp.jobs.jsonl.match_lines`) into one :class:`ColumnBatch` per (spec, metric[, window]);
of the rest, the lines that are surely not JSON (:func:`ldp.jobs.junk.junk_lines`) are rejected in bulk, and
each run of identical lines goes once through the full parser (:func:`ldp.spec.parse_envelope`), which gives the
reason of a rejection, and is routed by the specs (:func:`route_line`). Those outcomes make one
:class:`LineRuns`, in record order. Nothing here knows the fold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ldp.jobs.batches import (
    Batch,
    BatchSink,
    Blank,
    ColumnBatch,
    LineRuns,
    LineStep,
    ParsedReports,
    ReadOptions,
    Rejected,
    RejectedEach,
)
from ldp.jobs.jsonl import match_lines, repeats, templates_for
from ldp.jobs.junk import junk_lines
from ldp.reports import Report, ReportBatch
from ldp.spec import CollectionSpec, EnvelopeError, MetricSpec, parse_envelope

__all__ = ["line_batches", "line_batch", "route_line", "groups", "fold_lines"]

Routed = tuple[MetricSpec, int, Report]
"""A line's metric, window and report (valid for the metric)."""
Refused = tuple[str, str, "MetricSpec | None", int]
"""A line's rejection: reason, detail, and its metric and window when they are known."""


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


def route_line(line: bytes | str, specs: Mapping[str, CollectionSpec]) -> Routed | Refused:
    """Parse one upload line and route it by the specs: ``(metric, window, report)``, or
    ``(reason, detail, metric or None, window)`` (the reason :func:`ldp.spec.parse_envelope` or the routing gives)."""
    try:
        env = parse_envelope(line)
    except EnvelopeError as err:
        return err.reason, err.detail, None, 0
    spec = specs.get(env.spec)
    if spec is None:
        return "unknown_spec", f"no known spec has fingerprint {env.spec}", None, 0
    metric = spec.envelope_metric(env.metric)
    if metric is None:
        return "unknown_metric", f"no metric {env.metric!r} in spec {spec.name!r}", None, 0
    try:
        spec.route(env)
    except EnvelopeError as err:
        return err.reason, err.detail, metric, env.window
    return metric, env.window, env.report


def line_batch(line: bytes | str, record: int, raw: Any, specs: Mapping[str, CollectionSpec]
               ) -> Rejected | ParsedReports:
    """One upload line (record ``record``, shown as ``raw`` if rejected) through the full parser."""
    outcome = route_line(line, specs)
    if isinstance(outcome[0], str):
        reason, detail, metric, window = outcome
        return Rejected(record, reason, detail, raw, metric=metric, window=window)
    metric, window, report = outcome
    return ParsedReports(metric, window, (report,), (record,))


def _parser_detail(line: bytes) -> str:
    """The full parser's detail for a line it rejects."""
    try:
        parse_envelope(line)
    except EnvelopeError as err:
        return err.detail
    return ""


def _through(raw_of: Callable[[int], Any], rows: np.ndarray) -> Callable[[int], Any]:
    """``i -> raw_of(rows[i])``: the raw record of row ``i`` of a batch taken from ``rows`` of a chunk."""
    return lambda i: raw_of(rows[i])


def line_batches(chunk: bytes, first_record: int, options: ReadOptions, raws: Sequence[Any] | None = None, *,
                 numbers: np.ndarray | None = None, bounds: tuple[np.ndarray, np.ndarray] | None = None
                 ) -> Iterator[Batch]:
    """The batches of a chunk of whole lines (each ending in ``\\n``); line i is record ``first_record + i`` (or
    ``numbers[i]``, ascending, when given). ``raws[i]``: what the rejects file shows for line i (default: the
    line); ``bounds``: the lines' offsets from :func:`~ldp.jobs.jsonl.line_bounds`, when the caller has them.

    First one :class:`ColumnBatch` per template (and window, with ``options.by_window``) of the lines the
    vectorized path took; then, if any line is left, one :class:`LineRuns`."""
    specs = options.specs
    templates = templates_for(specs) if options.fast else []
    matched, starts, ends, accepted = match_lines(chunk, templates, bounds)
    offsets = numbers if numbers is not None else np.arange(first_record, first_record + len(starts))
    raw_of: Callable[[int], Any] = (lambda i: raws[i]) if raws else (lambda i: chunk[starts[i]:ends[i]])
    for m in matched:
        metric = specs[m.template.spec].metrics[m.template.metric]
        for window, rows in (groups(m.windows) if options.by_window else [(0, None)]):
            cols = m.columns if rows is None else {k: v[rows] for k, v in m.columns.items()}
            idx = m.rows if rows is None else m.rows[rows]
            batch = ReportBatch(metric.protocol, metric.params_fingerprint, tuple(metric.params.schema), cols)
            yield ColumnBatch(metric, window, batch, offsets[idx], _through(raw_of, idx))
    rest = np.flatnonzero(~accepted)
    if not rest.size:  # every line took the fast path (honest clients' uploads)
        return
    junk = junk_lines(chunk, starts[rest], ends[rest])  # surely not JSON: rejected in bulk
    junk_rows, rest = rest[junk], rest[~junk]
    cuts = np.flatnonzero(~repeats(chunk, starts[rest], ends[rest], adjacent=rest))
    runs = np.append(cuts, len(rest))
    steps: list[tuple[int, LineStep]] = []
    for k, i in enumerate(rest[cuts].tolist()):
        line, record, size = chunk[starts[i]:ends[i]], int(offsets[i]), int(runs[k + 1] - runs[k])
        if not line.strip():
            steps.append((record, Blank(size)))
        elif size == 1:
            steps.append((record, line_batch(line, record, raw_of(i), specs)))
        else:
            steps.append((record, _run(line, rest[runs[k]:runs[k + 1]], offsets, raw_of, specs)))
    bulk = None
    if junk_rows.size:
        def describe(j: int) -> tuple[str, Any]:
            row = int(junk_rows[j])
            return _parser_detail(chunk[starts[row]:ends[row]]), raw_of(row)

        bulk = RejectedEach("not_json", offsets[junk_rows], describe)
    yield LineRuns(steps, bulk)


def _run(line: bytes, rows: np.ndarray, numbers: np.ndarray, raw_of: Callable[[int], Any],
         specs: Mapping[str, CollectionSpec]) -> RejectedEach | ParsedReports:
    """Lines ``rows`` of a chunk, all equal to ``line``: parsed once, then folded or rejected together."""
    outcome = route_line(line, specs)
    if isinstance(outcome[0], str):
        reason, detail, metric, window = outcome
        return RejectedEach(reason, numbers[rows], lambda j: (detail, raw_of(int(rows[j]))), metric, window)
    metric, window, report = outcome
    return ParsedReports(metric, window, [report] * len(rows), numbers[rows])


def fold_lines(folder: BatchSink, chunk: bytes, first_record: int, raws: Sequence[Any] | None = None, *,
               numbers: np.ndarray | None = None, bounds: tuple[np.ndarray, np.ndarray] | None = None) -> None:
    """Fold a chunk of whole lines into ``folder`` (what ``Folder.fold_lines`` did): :func:`line_batches` with the
    folder's options, consumed by the folder."""
    folder.consume(line_batches(chunk, first_record, folder.options, raws, numbers=numbers, bounds=bounds))
