"""One collection window of the instruments a spec declares, and the one value per metric it ends with.

:class:`WindowTally` adds up what a privatizing reader collects (delta temporality: each collection brings what
was measured since the last) for each metric whose ``otel`` key (:mod:`ldp.spec.otel`) names an instrument, and
:meth:`WindowTally.values` turns the window into one value per metric, as the table of :mod:`ldp.spec.otel` says:

* ``any``: ``True`` when the counter's sum (the histogram's count) is above 0, else ``False``; a window the process
  ran in always has one (index 1 or 0 for a protocol of two categories);
* ``sum``: the window's sum (0 when nothing was counted);
* ``last``: the gauge's last value (of the latest data point; none without a data point);
* ``mean``: ``sum / count`` of the histogram's observations (none without one);
* ``bucket``: the index of the spec's bucket that holds most observations, the lowest on a tie (none without one);
* ``attribute``: the value of the attribute counted most (the counter's sum, the histogram's count), the lowest
  category or smallest string on a tie; a value outside the categories is not counted (none when nothing is).

A histogram data point counts toward ``bucket`` only when the SDK's bucket bounds hold every bound of the spec
(each SDK bucket then lies in one spec bucket); the reader asks the SDK for such bounds. Points that cannot be
mapped are counted in :attr:`WindowTally.unfit` and never reported. The tally is plain JSON (:meth:`to_json`), so
that a process that stops mid-window can continue it at its next start (:mod:`ldp.otel.reader`). Standard library
only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ldp.spec.otel import OtelSource

__all__ = ["WindowTally", "Declared", "bucket_map", "next_collection_in", "TALLY_FORMAT", "MIN_COLLECT_SECONDS"]

TALLY_FORMAT = "ldp-otel-window/1"
"""The ``format`` of a saved tally."""


MIN_COLLECT_SECONDS = 0.05
"""The shortest wait between two timed collections."""


def next_collection_in(now: float, window_seconds: float, every: float) -> float:
    """Seconds from ``now`` (Unix seconds) to a reader's next timed collection: ``every``, or less, so that one
    collection falls at the end of the window (``floor(now / window_seconds)``). The SDK hands a reader what was
    measured since its last collection as one delta, counted in the window of that last collection; collecting at
    each window's end keeps a measurement in the window it was made in (up to the timer's delay). Never under
    :data:`MIN_COLLECT_SECONDS` (a timer that fired a hair early, or a clock that does not move, must not spin)."""
    return max(min(every, window_seconds - now % window_seconds), MIN_COLLECT_SECONDS)


@dataclass(frozen=True)
class Declared:
    """A metric the reader feeds: its name, its ``otel`` mapping, its protocol's class and categories."""

    metric: str
    source: OtelSource
    value_class: str
    categories: tuple[str, ...] | None = None


def bucket_map(sdk_bounds: Sequence[float], spec_bounds: Sequence[float]) -> list[int] | None:
    """For each SDK bucket (``len(sdk_bounds) + 1`` of them, OpenTelemetry's ``(b[i-1], b[i]]``), the spec bucket
    that holds it: the number of spec bounds below its upper bound. ``None`` when some spec bound is not an SDK bound
    (an SDK bucket would straddle two spec buckets)."""
    have = set(sdk_bounds)
    if any(b not in have for b in spec_bounds):
        return None
    uppers = [*sdk_bounds, math.inf]
    return [sum(1 for s in spec_bounds if s < u) for u in uppers]


@dataclass
class WindowTally:
    """What one window of measurements added up to, per declared metric (see the module)."""

    window: int
    totals: dict[str, float] = field(default_factory=dict)
    """``any`` and ``sum``: the sum (or count); ``mean``: the sum, with :attr:`counts`."""
    counts: dict[str, float] = field(default_factory=dict)
    """``mean``: the number of observations."""
    last: dict[str, tuple[int, float]] = field(default_factory=dict)
    """``last``: (time in ns, value) of the latest gauge point."""
    tallies: dict[str, dict[str, float]] = field(default_factory=dict)
    """``bucket``: count per spec bucket (as a string key); ``attribute``: total per attribute value."""
    unfit: int = 0
    """Data points of declared instruments that could not be mapped (a bucket bound missing, a value not a
    category, a non-string attribute): never reported."""
    closed: bool = False
    """The window's values were reported already (:meth:`ldp.otel.reader.PrivatizingMetricReader.close_window`):
    what comes later in it is dropped."""

    def add(self, declared: Declared, kind: str, points: Iterable[Any]) -> None:
        """Add an SDK metric's data points (delta temporality) to the metric ``declared``; ``kind``: the metric's
        data as seen (``counter``, ``updown_counter``, ``gauge`` or ``histogram``), already checked against the
        mapping's."""
        if self.closed:
            return
        name, src = declared.metric, declared.source
        for p in points:
            if src.value in ("any", "sum"):
                self.totals[name] = self.totals.get(name, 0.0) + float(p.count if kind == "histogram" else p.value)
            elif src.value == "last":
                t = int(p.time_unix_nano)
                if name not in self.last or t >= self.last[name][0]:
                    self.last[name] = (t, float(p.value))
            elif src.value == "mean":
                if p.count:
                    self.totals[name] = self.totals.get(name, 0.0) + float(p.sum)
                    self.counts[name] = self.counts.get(name, 0.0) + float(p.count)
            elif src.value == "bucket":
                self._add_buckets(name, src, p)
            else:
                self._add_attribute(declared, kind, p)

    def _add_buckets(self, name: str, src: OtelSource, p: Any) -> None:
        if not p.count:
            return
        assert src.buckets is not None
        where = bucket_map(list(p.explicit_bounds), src.buckets)
        if where is None:
            self.unfit += 1
            return
        tally = self.tallies.setdefault(name, {})
        for i, c in zip(where, p.bucket_counts, strict=True):
            if c:
                tally[str(i)] = tally.get(str(i), 0.0) + float(c)

    def _add_attribute(self, declared: Declared, kind: str, p: Any) -> None:
        amount = float(p.count if kind == "histogram" else p.value)
        if not amount:
            return
        value = (p.attributes or {}).get(declared.source.attribute)
        if value is None:
            return  # a point without the attribute says nothing of it
        if not isinstance(value, str) or (declared.categories is not None and value not in declared.categories):
            self.unfit += 1
            return
        tally = self.tallies.setdefault(declared.metric, {})
        tally[value] = tally.get(value, 0.0) + amount

    def values(self, declared: Iterable[Declared]) -> dict[str, Any]:
        """The window's value of each declared metric that has one (the module's rules), ready for
        ``TelemetryClient.record``."""
        out: dict[str, Any] = {}
        for d in declared:
            name, how = d.metric, d.source.value
            if how == "any":
                hit = self.totals.get(name, 0.0) > 0
                out[name] = hit if d.value_class == "boolean" else int(hit)
            elif how == "sum":
                out[name] = self.totals.get(name, 0.0)
            elif how == "last" and name in self.last:
                out[name] = self.last[name][1]
            elif how == "mean" and self.counts.get(name):
                out[name] = self.totals[name] / self.counts[name]
            elif how == "bucket" and (tally := self.tallies.get(name)):
                out[name] = _most(tally, key=int)
            elif how == "attribute" and (tally := self.tallies.get(name)):
                if d.categories is not None:
                    index = {v: i for i, v in enumerate(d.categories)}
                    out[name] = _most(tally, key=lambda v: index[v])
                else:
                    out[name] = _most(tally, key=lambda v: v)
        return out

    def to_json(self) -> dict[str, Any]:
        """The tally as plain JSON (:meth:`from_json` reads it back)."""
        return {"format": TALLY_FORMAT, "window": self.window, "closed": self.closed, "unfit": self.unfit,
                "totals": self.totals, "counts": self.counts,
                "last": {k: [t, v] for k, (t, v) in self.last.items()}, "tallies": self.tallies}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> WindowTally:
        """The tally :meth:`to_json` wrote; ``ValueError`` for anything else."""
        try:
            if doc.get("format") != TALLY_FORMAT:
                raise ValueError(f"not a window tally ({doc.get('format')!r})")
            window = doc["window"]
            if isinstance(window, bool) or not isinstance(window, int):
                raise ValueError("window must be an integer")
            out = cls(window, closed=bool(doc["closed"]), unfit=int(doc["unfit"]))
            out.totals = {str(k): _number(v) for k, v in doc["totals"].items()}
            out.counts = {str(k): _number(v) for k, v in doc["counts"].items()}
            out.last = {str(k): (int(t), _number(v)) for k, (t, v) in doc["last"].items()}
            out.tallies = {str(k): {str(i): _number(c) for i, c in t.items()} for k, t in doc["tallies"].items()}
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a window tally: {exc}") from None
        return out


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"not a finite number: {v!r}")
    return float(v)


def _most(tally: Mapping[str, float], key: Any) -> Any:
    """The key of the largest total, the least by ``key`` on a tie (returned as ``key`` gives it)."""
    best = max(tally.values())
    return min(key(k) for k, c in tally.items() if c == best)
