"""A metric's central guarantee over windows, as the spec's central target (``release.central``) is checked against
it: by ``ldp spec validate --shuffled N`` for a planned horizon, and by the ingest service over the windows it released
(:mod:`ldp.ingest.central`).

A device sends at most k reports of a metric in a window (its per-window cap over its per-report cost). In one
shuffle, k reports of ε₀ count as one report of k·ε₀ (the analyst's multiset is a function of the multiset of the
devices' k-tuples, a k·ε₀-LDP randomizer; :mod:`ldp.privacy.shuffle`). The k-RR clone structure is a property of
one k-RR report, so it is used only when k = 1; k > 1 uses the generic bound of Feldman, McMillan and Talwar
(FOCS 2021, Theorem 3.2), which holds for any k·ε₀-LDP randomizer.

When a window's reports lie in j shuffled segments (the ingest service shuffles each segment on its own), a device's k
reports may be split among min(k, j) of them. Each part (k_i ≤ k reports, in a segment of n_i ≥ n reports) is a
k_i·ε₀-LDP randomizer, hence k·ε₀-LDP, shuffled among the parts of at least ⌈n/k⌉ devices (the theorem's users are
the devices, each sending at most k of the n_i ≥ n reports; counting reports as users would overstate the crowd k
times): by Theorem 3.2 its output is a post-processing of
the clone pair of (k·ε₀, n) (fewer clones, n − 1 trials at the same clone probability, is a post-processing of more
clones too), and the parts are independent shuffles, so composing min(k, j) such pairs bounds the window whatever
the split. With k = 1 the one report is in one segment: one pair, with the k-RR structure where the protocol has it.

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
    """What one window of a metric costs a device before shuffling: ``per_report`` = k·ε₀ (``None``: nothing
    can be proven, ``reason`` says why) and the randomizer's ``structure`` (only with k = 1)."""

    reports: int | None
    per_report: PrivacyCost | None
    structure: Any = None
    reason: str | None = None
    lifetime: PrivacyCost | None = None
    """The spec's lifetime cap on a device's cost for the metric (``None``: none)."""

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
    structure = params.shuffle_structure if reports == 1 else None
    return MetricLoss(reports, PrivacyCost(reports * one.epsilon), structure, lifetime=lifetime)


def window_releases(loss: MetricLoss, n: int | None, segments: int = 1) -> list[Any]:
    """The :class:`~ldp.privacy.over_time.WindowRelease` list that bounds one window whose reports lie in
    ``segments`` shuffled segments of at least ``n`` reports each, so of at least :func:`devices_among` devices
    (``n`` ``None``: not shuffled; module docstring)."""
    from ldp.privacy.over_time import WindowRelease

    if loss.per_report is None or loss.reports is None:
        raise ValueError(f"no central bound: {loss.reason}")
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ValueError(f"segments must be an int >= 1, got {segments!r}")
    parts = 1 if n is None else min(loss.reports, segments)
    return [WindowRelease(loss.per_report, devices_among(n, loss.reports), loss.structure)] * parts


def devices_among(n: int | None, reports: int) -> int | None:
    """The fewest devices ``n`` shuffled reports can come from when each sends at most ``reports`` (k) of them:
    ``⌈n/k⌉``, the crowd the shuffle bound counts (its users are the devices, each one k·ε₀ randomizer; counting
    reports as users would overstate the crowd k times and understate ε). ``None`` stays ``None`` (not shuffled)."""
    if isinstance(reports, bool) or not isinstance(reports, int) or reports < 1:
        raise ValueError(f"reports (a device's reports of the metric in a window) must be an int >= 1, got {reports!r}")
    return None if n is None else -(-n // reports)


def meets(epsilon: float, delta: float, target: Any) -> bool:
    """Whether a guarantee (ε, δ) is within ``target`` (its ``epsilon`` and ``delta``)."""
    return bool(epsilon <= target.epsilon * (1 + 1e-12) and delta <= target.delta * (1 + 1e-12))
