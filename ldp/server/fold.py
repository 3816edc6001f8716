"""Folding one input's records into per-metric aggregates, with every rejection written down.

A :class:`Folder` routes each record to its metric with the collection specs, validates it, folds
the valid ones into one :class:`~ldp.decoders.base.Aggregate` per key (metric, parameter
fingerprint, and window when asked) and writes each rejected record to the rejects stream with its
reason. Guarantee: ``records == accepted + sum(rejected.values())`` at all times; nothing is
dropped. A rejection of a record whose spec and metric are known is also counted in that metric's
aggregate (``Aggregate.rejected``), as :meth:`Aggregate.add` does.

The counts are exact; the rejects file is capped: per input, the first :data:`REJECTS_CAP`
entries of each reason are written, and :meth:`Folder.close` then writes one summary line per
reason saying how many reports were not written (``"omitted": true``, ``records`` = their number),
so the ``records`` of an input's rejects lines still add up to its rejected count. Past the cap a
rejection costs a counter increment; lines that surely fail as ``not_json`` (:func:`junk_lines`)
and runs of identical short lines are rejected in bulk, without a Python step per line.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

import numpy as np

from ldp.decoders.base import Aggregate
from ldp.protocols import get_protocol
from ldp.reports import Report, ReportBatch, ReportError
from ldp.server.jsonl import match_lines, repeats, templates_for
from ldp.server.junk import junk_lines
from ldp.spec import CollectionSpec, EnvelopeError, MetricSpec, parse_envelope

__all__ = ["Key", "Folder", "key_name", "parse_key_name", "groups", "spec_index", "RAW_LIMIT", "REJECTS_CAP",
           "SERVER_REASONS"]

Key = tuple[str, str, "int | None"]
"""(metric, parameter fingerprint, window or ``None`` when windows are folded together)."""
logger = logging.getLogger(__name__)

RAW_LIMIT = 1000
"""Characters of a rejected record kept in the rejects file."""
REJECTS_CAP = 1000
"""Rejects entries written per reason and input; the rest are counted, and summed up by :meth:`Folder.close`."""
SERVER_REASONS = frozenset({"bad_row", "damaged_row_group"})
"""Reasons of the readers beyond :data:`ldp.spec.ENVELOPE_REASONS`: a CSV row that is not 4 cells; a
Parquet row group whose pages fail their checksums or cannot be decoded."""
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


class Folder:
    """Folds the records of one input (``source`` names it in the rejects) into aggregates.

    ``specs`` maps fingerprints to every spec version accepted; ``rejects`` is a text stream for
    the rejects file (``None``: count only); ``fast=False`` sends every line to the full parser."""

    def __init__(self, specs: Mapping[str, CollectionSpec], *, by_window: bool = False, source: str = "",
                 rejects: IO[str] | None = None, fast: bool = True, cap: int = REJECTS_CAP) -> None:
        self.specs = dict(specs)
        self.by_window, self.source, self.out, self.cap = by_window, source, rejects, cap
        self.templates = templates_for(self.specs) if fast else []
        self.aggregates: dict[Key, Aggregate] = {}
        self.records = self.accepted = self.blank = 0
        self.rejected: Counter[str] = Counter()
        self.written: Counter[str] = Counter()  # rejects entries written, by reason
        self.omitted: Counter[str] = Counter()  # reports rejected past the cap (not written), by reason
        self._first_omitted: dict[str, int] = {}
        self._closed = False

    # -- keys and aggregates ---------------------------------------------------------------------------
    def aggregate(self, metric: MetricSpec, window: int) -> Aggregate:
        """The aggregate a report of ``metric`` in ``window`` folds into (created empty on first use)."""
        key = (metric.name, metric.params_fingerprint, window if self.by_window else None)
        agg = self.aggregates.get(key)
        if agg is None:
            aggregate_type = get_protocol(metric.protocol).aggregate_type
            if aggregate_type is None:
                raise ValueError(f"protocol {metric.protocol!r} has no server aggregate")
            agg = self.aggregates[key] = aggregate_type(metric.params)
        return agg

    def metric_of(self, spec_fp: str, metric: str) -> MetricSpec | None:
        spec = self.specs.get(spec_fp)
        return None if spec is None else spec.metrics.get(metric)

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

    # -- lines (JSONL, and CSV rows made into lines) ---------------------------------------------------------
    def fold_lines(self, chunk: bytes, first_record: int, raws: Sequence[Any] | None = None, *,
                   numbers: np.ndarray | None = None, bounds: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Fold a chunk of whole lines (each ending in ``\\n``); line i is record ``first_record + i``
        (or ``numbers[i]`` when given).

        Lines in the client's exact form go through the vectorized fast path; junk (:func:`junk_lines`)
        is rejected in bulk; the rest through :func:`ldp.spec.parse_envelope` (same result, and the
        reason when rejected), once per run of identical short lines.
        ``raws[i]``: what the rejects file shows for line i (default: the line); ``bounds``: the lines' offsets
        from :func:`~ldp.server.jsonl.line_bounds`, when the caller has them."""
        matched, starts, ends, accepted = match_lines(chunk, self.templates, bounds)
        offsets = numbers if numbers is not None else np.arange(first_record, first_record + len(starts))
        raw_of = (lambda i: raws[i]) if raws else (lambda i: chunk[starts[i]:ends[i]])
        for m in matched:
            metric = self.specs[m.template.spec].metrics[m.template.metric]
            for window, rows in (groups(m.windows) if self.by_window else [(0, None)]):
                cols = m.columns if rows is None else {k: v[rows] for k, v in m.columns.items()}
                idx = m.rows if rows is None else m.rows[rows]
                batch = ReportBatch(metric.protocol, metric.params_fingerprint, tuple(metric.params.schema), cols)
                self.fold_batch(metric, window, batch, offsets[idx], _through(raw_of, idx))
        rest = np.flatnonzero(~accepted)
        if not rest.size:  # every line took the fast path (honest clients' uploads)
            return
        junk = junk_lines(chunk, starts[rest], ends[rest])  # surely not JSON: counted at once
        junk_rows, rest = rest[junk], rest[~junk]
        room = 0 if self.out is None else max(0, self.cap - self.written["not_json"])
        cuts = np.flatnonzero(~repeats(chunk, starts[rest], ends[rest], adjacent=rest))
        runs = np.append(cuts, len(rest))
        # in record order: each run of identical lines once through the full parser, and the junk lines
        # that may still be written (their detail from the parser); the other junk lines are only counted
        heads = np.concatenate((rest[cuts], junk_rows[:room]))
        kinds = np.concatenate((np.arange(len(cuts)), np.full(min(room, len(junk_rows)), -1)))
        pending: dict[int, tuple[Aggregate, list[Report]]] = {}
        order = np.argsort(heads, kind="stable")
        for i, k in zip(heads[order].tolist(), kinds[order].tolist(), strict=True):
            line = chunk[starts[i]:ends[i]]
            if k < 0:
                self.log(int(offsets[i]), "not_json", _parser_detail(line), raw_of(i))
            elif not line.strip():
                self.blank += int(runs[k + 1] - runs[k])
            elif runs[k + 1] - runs[k] == 1:
                self.fold_line(line, int(offsets[i]), raw_of(i), pending)
            else:
                self._fold_run(line, rest[runs[k]:runs[k + 1]], offsets, raw_of, pending)
        if len(junk_rows) > room:
            self.log_bulk("not_json", offsets[junk_rows[room:]],
                          lambda j: (_parser_detail(chunk[starts[junk_rows[room + j]]:ends[junk_rows[room + j]]]),
                                     raw_of(junk_rows[room + j])))
        self._flush(pending)

    def _fold_run(self, line: bytes, rows: np.ndarray, numbers: np.ndarray, raw_of: Callable[[int], Any],
                  pending: dict[int, tuple[Aggregate, list[Report]]]) -> None:
        """Lines ``rows`` of a chunk, all equal to ``line``: parsed once, then folded or rejected together."""
        outcome = self._check(line)
        if isinstance(outcome[0], str):
            reason, detail, agg = outcome
            self.log_bulk(reason, numbers[rows], lambda j: (detail, raw_of(int(rows[j]))))
            if agg is not None:
                agg.rejected[reason] += len(rows)
        else:
            agg, report = outcome
            pending.setdefault(id(agg), (agg, []))[1].extend([report] * len(rows))

    def fold_line(self, line: bytes | str, record: int, raw: Any,
                  pending: dict[int, tuple[Aggregate, list[Report]]] | None = None) -> None:
        """Parse, route and fold (or reject) one upload line. With ``pending``, accepted reports
        are collected there and folded by the caller's :meth:`_flush`."""
        outcome = self._check(line)
        if isinstance(outcome[0], str):
            reason, detail, agg = outcome
            self.reject(record, reason, detail, raw, agg=agg)
        elif pending is None:
            self._fold_reports(outcome[0], [outcome[1]])
        else:
            pending.setdefault(id(outcome[0]), (outcome[0], []))[1].append(outcome[1])

    def _check(self, line: bytes | str) -> tuple[str, str, Aggregate | None] | tuple[Aggregate, Report]:
        """``(aggregate, report)`` for a line to fold, or ``(reason, detail, aggregate or None)``."""
        try:
            env = parse_envelope(line)
        except EnvelopeError as err:
            return err.reason, err.detail, None
        spec = self.specs.get(env.spec)
        if spec is None:
            return "unknown_spec", f"no known spec has fingerprint {env.spec}", None
        metric = spec.metrics.get(env.metric)
        if metric is None:
            return "unknown_metric", f"no metric {env.metric!r} in spec {spec.name!r}", None
        agg = self.aggregate(metric, env.window)
        try:
            spec.route(env)
        except EnvelopeError as err:
            return err.reason, err.detail, agg
        return agg, env.report

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
        """Counts so far: ``records`` read (reports), ``accepted``, ``rejected`` by reason, ``blank``
        lines, and ``rejects_written`` (entries in the rejects file, summary lines aside)."""
        return {"records": self.records, "accepted": self.accepted, "rejected": dict(sorted(self.rejected.items())),
                "blank": self.blank, "rejects_written": sum(self.written.values())}
