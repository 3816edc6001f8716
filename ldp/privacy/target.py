"""A metric's central guarantee over windows, as the spec's central target (``release.central``) is checked against
it: by ``ldp spec validate --shuffled N`` for a planned horizon, and by the ingest service over the windows it released
(:mod:`ldp.ingest.central`).

A device sends at most k reports of a metric in a window (its per-window cap over its per-report cost): locally, the
window costs it k·ε₀ (sequential composition), and no central figure is stated above that: per window at most
k·ε₀, over W windows at most W·k·ε₀ and the spec's lifetime cap (:meth:`MetricLoss.bound`).

**Each report in a shuffle of its own.** The window's reports lie in one or more shuffled segments (the ingest
service shuffles each segment on its own), each of at least n reports; a segment holding k_s <= k of the device's
reports holds n_s − k_s >= n − k others. Split those others into k_s groups of at least ⌊(n_s − k_s)/k_s⌋ each, and
give each of the device's reports its group: k_s sub-shuffles of at least ⌊n_s/k_s⌋ >= ⌊n/k⌋ reports, each holding
exactly one of the device's. The segment's multiset is the union of the sub-shuffles' multisets (a function of
them), so the analyst's view of the window is a post-processing of the k sub-shuffles' views; these use independent
randomness (every report is randomized afresh), so their privacy-loss laws compose by convolution, and each is one
report of ε₀ shuffled among at least ⌊n/k⌋ reports — bounded by every law of one report
(:func:`ldp.privacy.over_time._laws`: the clone pairs with the randomizer's structure, binary randomized response's
worst dataset, k-RR's blanket), whatever the others' data (more users is a post-processing of fewer: the extra
reports are independent of the device's). Sending fewer than k reports drops sub-shuffles (a post-processing too);
how many it sends must not depend on its data (the ledger's rule). So the window is bounded by k copies of one
report's law among ⌊n/k⌋ users, composed, whatever the split among segments: the segments' count does not enter
this argument.

The figure also takes, where smaller, the older argument: the k reports as one k·ε₀-LDP report (the analyst's
multiset is a function of the devices' k-tuples) shuffled among the at least ⌈n/k⌉ devices (Feldman, McMillan and
Talwar, FOCS 2021, Theorem 3.2). That holds for one segment only: with j segments, the device's reports may be split
among min(k, j) of them, and each segment's multiset is a function of its devices' parts, one randomizer of at most
k·ε₀ each, so that pair is composed min(k, j) times (the segments are shuffled independently); and the local k·ε₀.
Every one of these is an upper bound on the exact ε (the first is a post-processing argument, the others are
theorems), so the smallest is valid and never above k·ε₀; :mod:`ldp.privacy.over_time` composes the windows' laws
and keeps W·k·ε₀ among its figures.

A protocol that memoizes its responses shares one permanent response across windows (its reports are not fresh
randomizations given the earlier ones): no per-window composition is valid for it. For every protocol, memoized or
not, the spec's lifetime cap (``lifetime``: the smaller of the metric's and the collection's) bounds what a
device's reports of the metric ever cost locally, which holds against the analyst too: the cumulative guarantee is
never stated above it, and a target it meets is met whatever the windows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ldp.privacy.cost import PrivacyCost

__all__ = ["MetricLoss", "devices_among", "metric_loss", "window_releases", "meets"]


@dataclass(frozen=True)
class MetricLoss:
    """What one window of a metric costs a device before shuffling: ``per_report`` = k·ε₀, the window's local
    cost (``None``: nothing can be proven, ``reason`` says why), one ``report``'s ε₀ and the randomizer's
    ``structure``."""

    reports: int | None
    per_report: PrivacyCost | None
    structure: Any = None
    reason: str | None = None
    lifetime: PrivacyCost | None = None
    """The spec's lifetime cap on a device's cost for the metric (``None``: none)."""
    report: PrivacyCost | None = None
    """One report's cost ε₀ (``None`` where ``per_report`` is)."""

    def bound(self, epsilon: float | None, delta: float) -> tuple[float | None, float]:
        """The smaller of a composed guarantee (``None``: none) and the lifetime cap, as ``(ε, δ)``."""
        cap = self.lifetime
        if cap is not None and cap.delta <= delta and (epsilon is None or cap.epsilon < epsilon):
            return cap.epsilon, delta
        return epsilon, delta


def _memoizes(params: Any, horizon: int = 10**6) -> bool:
    """Whether the protocol caps a value's cost over a long horizon below sequential composition (it memoizes)."""
    one = params.privacy_cost
    return bool(params.horizon_cost(horizon, 1)[2].epsilon < horizon * one.epsilon * (1 - 1e-12))


def metric_loss(params: Any, reports: int | None, lifetime: PrivacyCost | None = None) -> MetricLoss:
    """The per-window loss of a protocol's ``params`` with at most ``reports`` reports of it per device and window
    (``None``: no per-window cap, so no per-window bound) and a device's ``lifetime`` cap for the metric."""
    one = params.privacy_cost
    if reports is None:
        return MetricLoss(None, None, reason="no per-window cap: a device's reports in a window are not bounded",
                          lifetime=lifetime)
    if one.delta > 0.0:
        return MetricLoss(reports, None, reason=f"a report costs {one} with δ > 0: the shuffle bound is for pure "
                                                "ε-LDP reports", lifetime=lifetime)
    if _memoizes(params):
        return MetricLoss(reports, None, reason=f"{params.protocol} memoizes its responses: the windows share one "
                                                "permanent response, so per-window guarantees do not compose",
                          lifetime=lifetime)
    return MetricLoss(reports, PrivacyCost(reports * one.epsilon), params.shuffle_structure, lifetime=lifetime,
                      report=PrivacyCost(one.epsilon))


def window_releases(loss: MetricLoss, n: int | None, segments: int = 1) -> list[Any]:
    """The :class:`~ldp.privacy.over_time.WindowRelease` list that bounds one window whose reports lie in
    ``segments`` shuffled segments of at least ``n`` reports each (``n`` ``None``: not shuffled): one release of
    the device's k reports of ε₀, whatever ``segments`` is (module docstring: each report in a shuffle of its own
    among at least ⌊n/k⌋), so one window never counts above its local k·ε₀."""
    from ldp.privacy.over_time import WindowRelease

    if loss.per_report is None or loss.reports is None:
        raise ValueError(f"no central bound: {loss.reason}")
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ValueError(f"segments must be an int >= 1, got {segments!r}")
    report = loss.report if loss.report is not None else PrivacyCost(loss.per_report.epsilon / loss.reports)
    return [WindowRelease(report, n, loss.structure, loss.reports, min(loss.reports, segments))]


def devices_among(n: int | None, reports: int) -> int | None:
    """The fewest devices ``n`` shuffled reports can come from when each sends at most ``reports`` (k) of them:
    ``⌈n/k⌉``, the crowd the k·ε₀ bound counts (its users are the devices, each one k·ε₀ randomizer; counting
    reports as users would overstate the crowd k times and understate ε). ``None`` stays ``None`` (not shuffled)."""
    if isinstance(reports, bool) or not isinstance(reports, int) or reports < 1:
        raise ValueError(f"reports (a device's reports of the metric in a window) must be an int >= 1, got {reports!r}")
    return None if n is None else -(-n // reports)


def meets(epsilon: float, delta: float, target: Any) -> bool:
    """Whether a guarantee (ε, δ) is within ``target`` (its ``epsilon`` and ``delta``)."""
    return bool(epsilon <= target.epsilon * (1 + 1e-12) and delta <= target.delta * (1 + 1e-12))
