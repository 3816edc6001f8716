"""A window's central ε, computed by one function wherever it is stated: the ingest service's dashboard and its
cumulative figure (:mod:`ldp.pipeline.amplification`, :mod:`ldp.ingest.central`), ``ldp shuffle``
(:mod:`ldp.shuffler.central`), ``ldp privacy --shuffled N`` (:mod:`ldp.cli.shuffled`) and ``ldp spec validate
--shuffled N`` (:mod:`ldp.spec.cli`).

:func:`window_guarantee` takes what the figure depends on: the metric's protocol params (their per-report ε₀ and
their ``shuffle_structure``, e.g. binary randomized response's, analysed exactly), the number of reports shuffled
together, δ, and how many reports a device sent in the window. A device's k reports of a window are bounded by
each report in a shuffle of its own among ⌊n/k⌋ (the randomizer's structure kept), or as one report of k·ε₀ among
⌈n/k⌉ devices, never above the local k·ε₀ (:mod:`ldp.privacy.target`, the rule the cumulative figure follows;
:func:`ldp.privacy.over_time.reports_window`). :func:`over_windows` is the guarantee over several windows
(:func:`ldp.privacy.over_time.central_over_windows`), one window being stated at its own figure, so that a window
released alone reads the same everywhere.

Lives below the ingest service and the shuffler (both import it) and imports only the privacy layer, so that the spec's
command (client code, which imports it when it runs) can too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ldp.privacy.cost import PrivacyCost
from ldp.privacy.over_time import CentralOverTime, WindowRelease, central_over_windows, window_figure
from ldp.privacy.shuffle import ShuffleGuarantee, ShuffleStructure

__all__ = ["DELTA", "ONE_WINDOW", "Randomizer", "over_windows", "release_guarantee", "window_guarantee",
           "window_release"]

DELTA = 1e-8
"""δ of the central guarantee the ingest service and the shuffler state."""
ONE_WINDOW = "one window: its own central ε"
"""The method of :func:`over_windows` over one window."""


class Randomizer(NamedTuple):
    """A randomizer known only by its per-report cost and its shuffle structure (a plan whose params are not at
    hand): what :func:`window_guarantee` reads of a protocol's params."""

    privacy_cost: PrivacyCost
    shuffle_structure: ShuffleStructure | None = None


def _reports(reports: int) -> int:
    if isinstance(reports, bool) or not isinstance(reports, int) or reports < 1:
        raise ValueError(f"reports (a device's reports of the metric in the window) must be an int >= 1, "
                         f"got {reports!r}")
    return reports


def window_release(params: Any, n: int | None, reports: int = 1) -> WindowRelease:
    """The window of a device that sent ``reports`` reports of ``params``' protocol, shuffled among ``n`` reports
    (``None``: not shuffled), with the protocol's ``shuffle_structure`` (module docstring)."""
    cost: PrivacyCost = params.privacy_cost
    return WindowRelease(cost, n, params.shuffle_structure, _reports(reports))


def release_guarantee(release: WindowRelease, delta: float) -> ShuffleGuarantee | None:
    """The central (ε, δ) of one window (:func:`ldp.privacy.shuffle.shuffled_epsilon` with the release's
    structure); ``None`` when no shuffling bound applies: the reports were not shuffled, or cost δ₀ > 0."""
    if release.n is None or release.per_report.delta > 0.0:
        return None
    g = window_figure(release, delta)
    assert isinstance(g, ShuffleGuarantee)  # shuffled, pure ε₀: a shuffling figure
    return g


def window_guarantee(params: Any, n: int, delta: float = DELTA, reports: int = 1) -> ShuffleGuarantee | None:
    """A window's central guarantee against the analyst: a device's ``reports`` reports of ``params``' protocol
    (anything with ``privacy_cost`` and ``shuffle_structure``: a protocol's params, a :class:`Randomizer`) among
    ``n`` reports shuffled together (from at least ``⌈n/reports⌉`` devices,
    :func:`~ldp.privacy.target.devices_among`), at ``delta``. ``None`` when a report costs δ₀ > 0 (the bound is for
    pure ε₀-LDP reports). ``ValueError`` for an ``n``, ``delta`` or ``reports`` out of range."""
    return release_guarantee(window_release(params, n, reports), delta)


def over_windows(releases: Sequence[WindowRelease], delta: float) -> CentralOverTime:
    """A device's central guarantee over ``releases`` (:func:`ldp.privacy.over_time.central_over_windows`: their
    privacy-loss distributions composed), except that one shuffled window is stated at its own figure
    (:func:`release_guarantee`): the privacy-loss distribution of one window can be a little below the window's
    search bound, and one window must read the same on every line that states it."""
    if len(releases) == 1 and (g := release_guarantee(releases[0], delta)) is not None:
        note = () if g.amplified else (f"no amplification proven at n={g.n:,}: the window counts at its local ε",)
        return CentralOverTime(g.epsilon, delta, 1, (g,), g.cost, releases[0].local, method=ONE_WINDOW,
                               notes=note)
    return central_over_windows(list(releases), delta)
