"""A device's central guarantee across many windows: the privacy-loss law of each window's release composed, never
the naive W·ε.

Each window a device reports in is one release against the analyst. Shuffled, its privacy is dominated by the clone
pair of :mod:`ldp.privacy.shuffle` (Feldman, McMillan and Talwar, FOCS 2021, Theorem 3.2: the shuffled output on
neighbouring datasets is one post-processing of P and of Q, for every ε at once), and for binary randomized response
by the worst dataset's law of :mod:`ldp.privacy.binary_shuffle`; these laws hold whatever δ is asked, so a window
whose shuffling shows no gain at δ on its own is still composed with its own law, never charged ε₀ (thirty windows of
ε₀ = 4 among n = 1,000 at δ = 10⁻¹²: about 12.3, not 120). Not shuffled, a window is its local (ε₀, δ₀) guarantee,
whose worst case is randomized response's law (Kairouz, Oh and Viswanath, ICML 2015). Every law is stochastically
larger than the window's privacy loss under every dataset, and the laws compose by convolution (Meiser and
Mohammadi, CCS 2018; Koskela, Jälkö and Honkela, AISTATS 2020).

The composition is :mod:`ldp.privacy.tilted_composition`'s: exact under an exponential tilt with every rounding
bounded, so δ down to 10⁻³⁰⁰ is reached, not the 10⁻¹⁹ floor of an FFT's absolute rounding; its connect-the-dots
splits (Doroshenko, Ghazi, Kamath, Kumar and Manurangsi, PETS 2022) keep the grid's drift within about 0.1 % of ε.
Each kind of window takes, of the laws proven for it, the one with the smallest Chernoff figure; the result is the
smallest of that composition, its Chernoff bound, the local cost, and the basic and advanced compositions of the
one-window figures.

Server side: numpy and scipy (the ``server`` extra) are imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ldp.extras import available
from ldp.privacy.binary_large_law import window_law
from ldp.privacy.binary_shuffle import exact_max, worst_case
from ldp.privacy.binary_two_windows import TWO_MAX, TWO_WINDOWS, two_window_epsilon
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.krr_shuffle import krr_worst_case
from ldp.privacy.krr_small import SMALL_MAX, small_blanket
from ldp.privacy.shuffle import (
    _BINARY_MAX,
    ShuffleGuarantee,
    ShuffleStructure,
    dominates_generic,
    generic_structure,
    shuffled_epsilon,
)
from ldp.privacy.tilted_composition import LossLaw, chernoff, composed_epsilon, local_law
from ldp.privacy.window_pld import pair_losses, shuffle_pld

__all__ = ["WindowRelease", "CentralOverTime", "central_over_time", "central_over_windows", "protocol_over_time",
           "reports_window", "window_figure", "shuffle_pld", "pair_losses", "METHOD", "REPORTS"]

METHOD = "privacy-loss laws composed exactly (PLD)"
BASIC = "the one-window figures at δ/W summed (basic composition)"
ADVANCED = "advanced composition (Dwork, Rothblum and Vadhan 2010) of the one-window figures at δ/(2W)"
ONE = "the window's own shuffling bound (one window)"
REPORTS = "k reports, each shuffled among n/k (composed)"
"""The method of a device's k > 1 reports of a window bounded through their own shuffles (:func:`reports_window`)."""
_LAW_MAX = 10**7
"""The most users binary RR's worst-case law is searched for over windows at ε₀ <= 1 (up to about 3 s of CPU at
δ = 10⁻²⁰⁰; one window's own figure stops sooner, :func:`ldp.privacy.binary_shuffle.exact_max`), more at larger ε₀
in the proportion of that function's caps (the work follows n·p(1 − p)); beyond, the law of
:func:`ldp.privacy.binary_large_law.window_law` (each dataset's law read at a few points)."""
_PLD_MAX = 50.0
"""The largest local ε of a window not amplified that goes into the PLD; larger ones are added by basic composition
(valid; at such ε nothing is gained by composing them optimally)."""


@dataclass(frozen=True)
class WindowRelease:
    """One window a device took part in: one report's local cost ``per_report`` (ε₀), how many reports were shuffled
    together (``None``: not shuffled, the analyst sees the reports as sent; with several shuffled segments, the
    smallest), what the bound may assume of the randomizer (``None``: generic), and ``reports``, the most reports
    the device sent in the window (k: the window's local cost is k·ε₀, :attr:`local`).

    With k > 1 the window is bounded by the device's k reports each in a shuffle of its own (module docstring of
    :mod:`ldp.privacy.target`): k copies of one report's law among ⌊n/k⌋ users, composed; also by the k reports as
    one k·ε₀ report among ⌈n/k⌉ devices in each of min(k, ``segments``) shuffled segments (the segments the
    window's reports lie in: each segment's part of the device's reports is one randomizer of at most k·ε₀, and
    the segments are shuffled independently, so these compose; with one segment, once), and by the local k·ε₀;
    the smallest figure is kept."""

    per_report: PrivacyCost
    n: int | None = None
    structure: ShuffleStructure | None = None
    reports: int = 1
    segments: int = 1

    def __post_init__(self) -> None:
        for name in ("reports", "segments"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} (a device's reports in the window, resp. the window's shuffled segments) "
                                 f"must be an int >= 1, got {value!r}")

    @property
    def parts(self) -> int:
        """How many shuffled segments the device's k reports can be split among: min(k, segments)."""
        return min(self.reports, self.segments)

    @property
    def local(self) -> PrivacyCost:
        """The window's local cost: its k reports composed, k·(ε₀, δ₀)."""
        return self.per_report.times(self.reports)


@dataclass(frozen=True)
class CentralOverTime:
    """The central (ε, δ) of a device across ``windows`` windows, against the analyst. ``one_window`` is each
    distinct window's own guarantee (the first of each kind), ``naive`` the sum of the one-window figures (basic
    composition, for comparison), ``local`` the composed local cost (what the device's ledger charges)."""

    epsilon: float
    delta: float
    windows: int
    one_window: tuple[ShuffleGuarantee | PrivacyCost, ...]
    naive: PrivacyCost
    local: PrivacyCost
    method: str = METHOD
    notes: tuple[str, ...] = field(default=())

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(self.epsilon, self.delta)

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "windows": self.windows, "method": self.method,
                "one_window": [g.to_dict() for g in self.one_window], "naive": self.naive.to_dict(),
                "local": self.local.to_dict(), "notes": list(self.notes)}

    def __str__(self) -> str:
        return f"ε={self.epsilon:.4g}, δ={self.delta:.3g} over {self.windows:,} windows ({self.method})"


def central_over_time(per_report: PrivacyCost, n: int | None, delta: float, windows: int,
                      structure: ShuffleStructure | None = None) -> CentralOverTime:
    """:func:`central_over_windows` of ``windows`` identical windows of ``n`` shuffled reports."""
    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
        raise ValueError(f"windows must be an int >= 1, got {windows!r}")
    return central_over_windows([WindowRelease(per_report, n, structure)] * windows, delta)


def central_over_windows(releases: Sequence[WindowRelease], delta: float) -> CentralOverTime:
    """The device's central (ε, δ) over ``releases``: each window's PLD (the clone pair's where shuffling proves
    amplification, with the structure that gives the smaller one-window ε; the local (ε₀, δ₀) otherwise), composed.
    ``δ`` is the total; a window's local δ₀ is part of its PLD (its infinite-loss mass)."""
    from ldp.extras import require_extra

    require_extra("the central guarantee over windows", "server", ("numpy", "scipy"))
    if not releases:
        raise ValueError("no window to compose")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta < 1.0:
        raise ValueError(f"δ must be in (0, 1), got {delta!r}")
    kinds = Counter(releases)
    singles: dict[WindowRelease, ShuffleGuarantee | PrivacyCost] = {r: window_figure(r, delta) for r in kinds}
    w = len(releases)
    # windows of a huge local ε (no amplification; e^ε beyond what a PLD can hold) are added by basic composition
    big = {r: k for r, k in kinds.items() if not _amplified(singles[r]) and _cost_of(singles[r]).epsilon > _PLD_MAX}
    added = sum((_cost_of(singles[r]).times(k) for r, k in big.items()), PrivacyCost(0.0))
    rest = {r: k for r, k in kinds.items() if r not in big}
    budget = delta - added.delta
    if budget <= 0.0:
        raise ValueError(f"the windows' local δ₀ sum to {added.delta:g}: no central guarantee at δ = {delta:g}")
    eps = added.epsilon + (_composed(rest, budget) if rest else 0.0)
    local = sum((r.local for r in releases), PrivacyCost(0.0))
    naive = sum((_cost_of(singles[r]) for r in releases), PrivacyCost(0.0))
    notes = {_note(singles[r]) for r in releases} - {""}
    if big:
        notes.add(f"windows of local ε above {_PLD_MAX:g} (not amplified) are added by basic composition")
    # the smallest of the valid figures: the PLDs composed, the local cost, and (pure reports) the two compositions
    # of one-window figures at a share of δ, which a PLD's fixed tail costs can exceed at very small δ
    figures = [(eps, METHOD)]
    if local.delta <= delta:
        figures.append((local.epsilon, METHOD))
    if local.delta == 0.0 and eps > _compositions_floor(kinds, singles, delta):
        figures += _compositions(kinds, delta)
    figures += _two_binary(releases, delta)
    best, method = min(figures)
    return CentralOverTime(best, delta, w, tuple(singles.values()), naive, local, method=method,
                           notes=tuple(sorted(notes)))


def _two_binary(releases: Sequence[WindowRelease], delta: float) -> list[tuple[float, str]]:
    """Two windows of one binary RR report each among at most :data:`~ldp.privacy.binary_two_windows.TWO_MAX` users:
    their exact figure against adaptively chosen datasets, every dataset enumerated
    (:func:`~ldp.privacy.binary_two_windows.two_window_epsilon`; the composed hull laws can be 1.1–1.8× it there)."""
    if len(releases) != 2 or not 1e-200 <= delta < 1.0:
        return []
    windows = []
    for r in releases:
        s = r.structure
        if r.reports != 1 or r.n is None or not 2 <= r.n <= TWO_MAX or not _shuffles(r) or s is None \
                or not s.binary or s.epsilon_pair > _BINARY_MAX:
            return []
        windows.append((s.epsilon_pair, r.n))
    return [(two_window_epsilon(windows[0], windows[1], delta), TWO_WINDOWS)]


def _compositions_floor(kinds: dict[WindowRelease, int], singles: dict[WindowRelease, ShuffleGuarantee | PrivacyCost],
                        delta: float) -> float:
    """A lower bound on both of :func:`_compositions`' figures from the one-window figures at δ (each at δ/W or
    δ/(2W) is at least as large): when the PLD's figure is below it, they need not be computed."""
    eps = {r: _epsilon_of(singles[r]) for r in kinds}
    basic = sum(e * kinds[r] for r, e in eps.items())
    squares = sum(e * e * kinds[r] for r, e in eps.items())
    return min(basic, math.sqrt(2 * math.log(2 / delta) * squares))


def _compositions(kinds: dict[WindowRelease, int], delta: float) -> list[tuple[float, str]]:
    """For windows of pure reports: the one-window figures at δ/W summed (basic composition, total δ), and their
    advanced composition at δ/(2W) each (ε' = sqrt(2 ln(2/δ) Σεᵢ²) + Σεᵢ(e^εᵢ − 1), Dwork, Rothblum and Vadhan
    2010, Theorem III.3; δ/2 + W·δ/(2W) = δ). Both valid whatever the PLD's grid."""
    w = sum(kinds.values())
    if delta / (2 * w) < 1e-300:  # one window's figure is not computed below δ = 10⁻³⁰⁰ (window_grid)
        return []
    basic = sum(window_figure(r, delta / w).epsilon * k for r, k in kinds.items())
    at_half = {r: window_figure(r, delta / (2 * w)).epsilon for r in kinds}
    squares = sum(e * e * kinds[r] for r, e in at_half.items())
    drift = sum(e * math.expm1(e) * kinds[r] for r, e in at_half.items() if e < 700)
    out = [(basic, BASIC if w > 1 else ONE)]
    if all(e < 700 for e in at_half.values()):
        out.append((math.sqrt(2 * math.log(2 / delta) * squares) + drift, ADVANCED))
    return out


def _composed(kinds: dict[WindowRelease, int], delta: float) -> float:
    """The ε at ``delta`` of the windows' loss laws composed (``kinds``: each distinct window and how many): each
    kind's law the one of :func:`_laws` with the smallest figure over its own windows (a law standing for ``m``
    releases of the window is taken ``m`` times per window), the laws composed under an exponential tilt
    (:func:`~ldp.privacy.tilted_composition.composed_epsilon`) and by the Chernoff bound, the smaller kept. Both
    are valid at any δ down to 10⁻³⁰⁰."""
    chosen, alone = [], math.inf
    total = sum(k * r.reports for r, k in kinds.items())  # the most laws composed, for each law's share of the tail
    for release, k in kinds.items():
        options = [(law, m * k) for law, m in _laws(release, delta, total)]
        bounds = [chernoff([option], delta)[0] for option in options]  # a cheap first sort: a law whose Chernoff
        keep = [(o, b) for o, b in zip(options, bounds, strict=True) if b <= 2 * min(bounds)]  # is 2x is not taken
        figures = [min(composed_epsilon([o], delta), b) for o, b in keep]  # each law's figure alone
        alone = min(figures)
        chosen.append(keep[figures.index(alone)][0])
    if len(chosen) == 1:  # one kind: its law's own figure is the composition
        return alone
    return min(composed_epsilon(chosen, delta), chernoff(chosen, delta)[0])


def _laws(release: WindowRelease, delta: float, windows: int) -> list[tuple[LossLaw, int]]:
    """Every loss law this toolkit proves for one window, each with how many times it is composed for the window,
    each stochastically larger than the window's privacy loss under every dataset, in both directions (any of them
    composes validly). For one report: its local (ε₀, δ₀) worst case; when shuffled (pure ε₀, n >= 2), whether or
    not one window alone shows a gain at δ, the clone pair's (generic and with the randomizer's structure) and, for
    binary randomized response, the worst dataset's law, for k-RR over d >= 3 values the privacy blanket's
    (:mod:`ldp.privacy.krr_shuffle`). For k > 1 reports: the local k·ε₀ once, one report's local law k times, every
    law of one report among ⌊n/k⌋ users k times (each report in a shuffle of its own, :mod:`ldp.privacy.target`),
    and the generic clone pair of one k·ε₀ report among ⌈n/k⌉ devices once per segment the reports can be split
    among (:attr:`WindowRelease.parts`)."""
    k = release.reports
    if k == 1:
        return [(law, 1) for law in _report_laws(release, delta, windows)]
    cost = release.per_report
    laws = [(local_law(k * cost.epsilon, min(k * cost.delta, 1.0)), 1)] if k * cost.epsilon <= 700.0 else []
    one = WindowRelease(cost, None if release.n is None else release.n // k, release.structure)
    laws += [(law, k) for law in _report_laws(one, delta, windows)]
    if _shuffles(release) and k * cost.epsilon <= 700.0:
        tail = max(1e-6 * delta / windows, 1e-306)
        crowd = -(-release.n // k)  # type: ignore[operator]  # _shuffles: n is an int
        laws.append((LossLaw.of(*pair_losses(generic_structure(k * cost.epsilon), crowd, tail)), release.parts))
    return laws


def _shuffles(release: WindowRelease) -> bool:
    """Whether a shuffling bound applies to the window's reports: shuffled among n >= 2, pure ε₀ in (0, 700]."""
    eps0 = release.per_report.epsilon
    return not (release.n is None or release.n < 2 or release.per_report.delta > 0.0 or not 0.0 < eps0 <= 700.0
                or math.exp(-eps0) >= 1.0)


def _report_laws(release: WindowRelease, delta: float, windows: int) -> list[LossLaw]:
    """The laws of one report's window (:func:`_laws` with k = 1)."""
    cost = release.per_report
    laws = [local_law(cost.epsilon, cost.delta)]
    n = release.n
    if not _shuffles(release) or n is None:
        return laws
    eps0 = cost.epsilon
    tail = max(1e-6 * delta / windows, 1e-306)  # charged at the top loss (finite): at most 10⁻⁶·δ in all
    s = release.structure
    own = s is not None and s.name != "generic" and s.clone_probability < 1.0
    # the generic pair is left out where the structure's pair is at most it for every ε (dominates_generic): its
    # privacy profile, hence its trade-off function, is then dominated, and so is every composition of it
    structures = [] if own and s is not None and dominates_generic(s, eps0) else [generic_structure(eps0)]
    if own and s is not None:
        structures.append(s)
    for structure in structures:
        laws.append(LossLaw.of(*pair_losses(structure, n, tail)))
    if s is not None and s.binary and s.epsilon_pair <= _BINARY_MAX and delta >= 1e-300 \
            and n <= _LAW_MAX * exact_max(1.0, s.epsilon_pair) // exact_max(1.0):
        found = worst_case(s.epsilon_pair, n, delta)
        laws += [LossLaw.of(*found.losses()), LossLaw.of(*found.hull_losses())]  # each valid; the tighter is kept
    elif s is not None and s.binary and s.epsilon_pair <= _BINARY_MAX and delta >= 1e-300:  # beyond: read at points
        laws.append(LossLaw.of(*window_law(s.epsilon_pair, n, delta, tail)))
    d = s.values if s is not None else None
    blanket = krr_worst_case(s.epsilon_pair, d, n, delta) if s is not None and d is not None and d >= 3 else None
    if blanket is not None:
        laws.append(LossLaw.of(*blanket.losses()))
    if s is not None and d is not None and d >= 3 and n < SMALL_MAX and s.epsilon_pair <= 50.0:
        laws.append(LossLaw.of(*small_blanket(s.epsilon_pair, d, n).losses()))  # the same pair, every outcome
    return laws


def _amplified(g: ShuffleGuarantee | PrivacyCost) -> bool:
    return isinstance(g, ShuffleGuarantee) and g.amplified


@functools.lru_cache(maxsize=256)
def window_figure(release: WindowRelease, delta: float) -> ShuffleGuarantee | PrivacyCost:
    """One window's own figure at ``delta``: its local cost when not shuffled (or δ₀ > 0); one report's
    :func:`~ldp.privacy.shuffle.shuffled_epsilon`; k reports' :func:`reports_window`. Cached: the one-window line
    and the composition over windows read the same figure (``ldp privacy … --windows``)."""
    if release.n is None or release.per_report.delta > 0.0:
        return release.local
    if release.reports == 1:
        return shuffled_epsilon(release.per_report.epsilon, release.n, delta, release.structure)
    return reports_window(release, delta)


@functools.lru_cache(maxsize=256)
def reports_window(release: WindowRelease, delta: float) -> ShuffleGuarantee:
    """One shuffled window of k > 1 reports of ε₀ a device: the smallest of the local k·ε₀, the k reports as one
    k·ε₀ report among ⌈n/k⌉ devices (:func:`~ldp.privacy.shuffle.shuffled_epsilon`; in each of the
    min(k, segments) segments the reports can be split among, at δ/that each, summed) and, with numpy and scipy, the
    composed laws of :func:`_laws` (each report in a shuffle of its own among ⌊n/k⌋: :mod:`ldp.privacy.target`),
    without them one report's figure among ⌊n/k⌋ at δ/k summed k times (basic composition). Never above k·ε₀."""
    k, eps0, n = release.reports, release.per_report.epsilon, release.n
    if n is None or release.per_report.delta > 0.0:
        raise ValueError("a window of reports not shuffled, or of δ₀ > 0, has no shuffled figure")
    local, parts = k * eps0, release.parts
    figures: list[tuple[float, str]] = []
    if delta / parts >= 1e-300:  # the k-tuple as one k·ε₀ report in each of its parts' segments, at δ/parts each
        whole = shuffled_epsilon(local, -(-n // k), delta / parts)
        figures.append((parts * whole.epsilon, whole.method))
    if available("numpy", "scipy"):
        figures.append((_composed({release: 1}, delta), REPORTS))
    elif delta / k >= 1e-300:  # without the server extra: the k sub-shuffles' figures at δ/k summed
        figures.append((k * shuffled_epsilon(eps0, n // k, delta / k, release.structure).epsilon, REPORTS))
    eps, method = min(figures, default=(local, "none"))
    if eps >= local * (1 - 1e-3):
        return ShuffleGuarantee(local, 0.0, local, n, "none")
    return ShuffleGuarantee(eps, delta, local, n, method)


def _epsilon_of(g: ShuffleGuarantee | PrivacyCost) -> float:
    return g.epsilon


def _cost_of(g: ShuffleGuarantee | PrivacyCost) -> PrivacyCost:
    return g.cost if isinstance(g, ShuffleGuarantee) else g


def _note(g: ShuffleGuarantee | PrivacyCost) -> str:
    if isinstance(g, ShuffleGuarantee):
        return "" if g.amplified else f"no amplification proven at n={g.n:,}: those windows count at their local ε"
    if g.delta > 0.0:
        return "reports with δ₀ > 0 are not amplified (the clone bound is for pure ε₀-LDP reports): local (ε₀, δ₀)"
    return "windows not shuffled count at their local ε"


def protocol_over_time(params: Any, n: int | None, delta: float, windows: int) -> CentralOverTime:
    """A device's central guarantee over ``windows`` windows of a protocol's ``params`` (one report per window,
    ``n`` reports shuffled together per window, ``None``: not shuffled), with the protocol's
    ``shuffle_structure``.

    A protocol that memoizes its responses (RAPPOR, L-GRR, the memoized means: its ``horizon_cost`` caps a
    value's reports) shares one permanent response across windows, so a window's report is not a fresh ε₀-LDP
    randomization of the value given the earlier ones and the windows' PLDs may not be composed. Over more than one
    window such a protocol is given its local lifetime cost for one value (``horizon_cost(windows, 1)``: all the
    reports are post-processing of the permanent response), which holds against the analyst too, with a note."""
    one = params.privacy_cost
    structure = params.shuffle_structure
    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
        raise ValueError(f"windows must be an int >= 1, got {windows!r}")
    lifetime = params.horizon_cost(windows, 1)[2]
    if windows > 1 and lifetime.epsilon < one.epsilon * windows * (1 - 1e-12):
        single = central_over_windows([WindowRelease(one, n, structure)], delta)
        return CentralOverTime(lifetime.epsilon, max(lifetime.delta, 0.0), windows, single.one_window,
                               single.naive.times(windows), lifetime, method="local lifetime bound (memoized)",
                               notes=(f"{params.protocol} memoizes its responses: the windows share one permanent "
                                      "response, so per-window amplification is not composed; the figure is the "
                                      "local lifetime cost of one value (each new value adds as much)",))
    return central_over_windows([WindowRelease(one, n, structure)] * windows, delta)
