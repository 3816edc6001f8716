"""What a shuffler run mixes: the plan every engine computes from the chunks' index and the reports per metric.

**Ready.** A window is ready ``grace`` seconds past its end (a replica's commit in flight, or its clock a little
behind, still lands before it is mixed). A chunk is consumed when all its windows are released; a window is released
when it is ready and every chunk holding it is consumed, so it is mixed whole.

**Thresholds per metric, in devices** (issues 57 and 70). A report hides among the reports *of its own metric* in
its segment (:mod:`ldp.shuffler.central`), so a threshold is judged per (window, metric), each metric against its own
(:class:`Thresholds`: its spec's ``release.min_reports``, at least the run's floor ``--min-reports``). It counts
**devices**, not reports: a device may send up to ``k`` reports of a metric in a window — the per-window cap its
ledger enforces over the metric's per-report cost (:meth:`~ldp.spec.CollectionSpec.reports_per_window`) — so ``n``
reports come from at least ``ceil(n / k)`` devices, and that lower bound is what must reach the threshold. A metric
whose spec was not given has no known ``k``: its reports count as one device at most (released only under a
threshold of 1), and without a floor it has no threshold at all and is withheld. docs/shuffling.md argues the design,
and what a device that ignores its cap can do to the count.

* a metric below its threshold in a released window is **withheld on its own**: its lines are written to no
  segment, its device count and threshold recorded (``withheld_metrics``); the window's other metrics are released;
* a window in which *every* metric is below its threshold is **held** (nothing in it could be released yet) for late
  chunks, up to ``hold`` seconds past the point it was ready, then **withheld** whole, its chunks removed.

A metric is never held back by another, and a released metric never waits for a small one. A late chunk of an
already-released window is mixed by a later run into a segment of its own, judged on its own reports: its
metrics' anonymity set is that segment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Window", "Plan", "plan_run", "Thresholds", "window_key"]

Window = tuple[int, int]
"""An arrival window: ``(start, length)`` in seconds."""

Reports = Callable[[set[Window]], Mapping[Window, Mapping[str, int]]]
"""The reports of the given windows per ``<spec fingerprint>/<metric>``, each batch id counted once."""


def window_key(w: Window) -> str:
    """``"<start>:<length>"``, a window as run records key it."""
    return f"{w[0]}:{w[1]}"


class Thresholds:
    """The threshold of each ``<spec fingerprint>/<metric>``, in devices (a callable): its spec's
    ``release.min_reports``, at least ``floor``; ``floor`` alone for a metric of a spec not given; ``None`` when
    neither says one (the metric is withheld). :meth:`devices` counts the devices behind a number of reports."""

    def __init__(self, specs: Iterable[Any], floor: int | None = None) -> None:
        if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int) or floor < 0):
            raise ValueError(f"min_reports must be an int >= 0, got {floor!r}")

        self.floor = floor
        self.own: dict[str, int | None] = {}
        self.per_device: dict[str, int | None] = {}
        for spec in specs:
            for name in spec.metrics:
                key = f"{spec.fingerprint}/{name}"
                given = [v for v in (floor, spec.release_for(name).min_reports) if v is not None]
                self.own[key] = max(given) if given else None
                self.per_device[key] = spec.reports_per_window(name)

    def __call__(self, metric: str) -> int | None:
        return self.own.get(metric, self.floor)

    def missing(self) -> list[str]:
        """The metrics of the specs given that have no threshold (no ``release.min_reports`` and no floor)."""
        return sorted(m for m, t in self.own.items() if t is None)

    def devices(self, metric: str, reports: int) -> int:
        """The fewest devices that can have sent ``reports`` reports of ``metric`` in one window: ``ceil(reports /
        k)``, ``k`` the most one device may send there (its spec's per-window cap over the per-report cost); a
        metric of a spec not given (``k`` unknown), at most one."""
        k = self.per_device.get(metric)
        if reports <= 0:
            return 0
        return 1 if k is None else -(-int(reports) // k)

    def below(self, metric: str, reports: int) -> list[int | None] | None:
        """``[devices, threshold]`` when ``metric``'s ``reports`` in a window fall short of its threshold (a
        threshold of ``None``: there is none, always short), else ``None``."""
        t, d = self(metric), self.devices(metric, reports)
        return [d, t] if t is None or d < t else None


@dataclass
class Plan:
    """What a run will do (:func:`plan_run`): the chunks it consumes (sorted), the windows it releases (sorted),
    among them those withheld whole, and per released window the metrics withheld on their own (``{metric: [devices,
    threshold]}``); the batches left per window (not ready, or held)."""

    consumed: list[str]
    released: list[Window]
    withheld: set[Window]
    held: dict[str, int]
    drop: dict[Window, dict[str, list[int | None]]] = field(default_factory=dict)


def plan_run(index: Mapping[str, Mapping[Window, int]], reports: Reports, now: float, grace_seconds: float,
             hold_seconds: float, threshold: Thresholds) -> Plan:
    """The plan of a run from the chunks' ``index`` (per chunk key, its batches per window) and ``reports`` (the
    reports per metric of the ready windows: ``threshold`` counts their devices), under the module docstring's
    rules. Every engine plans with this."""
    windows_of = {k: set(ws) for k, ws in index.items()}
    ready = {w for ws in windows_of.values() for w in ws if now >= w[0] + w[1] + grace_seconds}
    counts = reports(ready) if ready else {}
    drop: dict[Window, dict[str, list[int | None]]] = {}
    small: set[Window] = set()
    for w in ready:
        per = counts.get(w, {})
        below = {m: short for m, n in sorted(per.items()) if (short := threshold.below(m, int(n))) is not None}
        if below and len(below) == len(per):
            small.add(w)
        elif below:
            drop[w] = below
    withheld = {w for w in small if now >= w[0] + w[1] + grace_seconds + hold_seconds}
    ready -= small - withheld
    consumable = {k for k, ws in windows_of.items() if ws <= ready}
    blocked = {w for k, ws in windows_of.items() if k not in consumable for w in ws}
    released = sorted(w for w in ready if w not in blocked)
    consumed = sorted(k for k in consumable if windows_of[k] <= set(released))
    held: Counter[str] = Counter()
    for k, ws in index.items():
        if k not in consumed:
            for (start, _), n in ws.items():
                held[str(start)] += n
    return Plan(consumed, released, withheld, dict(sorted(held.items())),
                {w: d for w, d in sorted(drop.items()) if w in released})
