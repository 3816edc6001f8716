"""A device's central guarantee across many windows: the privacy-loss distribution (PLD) of each window's release,
composed with Google's ``dp-accounting`` library, never the naive W·ε.

Each window a device reports in is one release against the analyst. Shuffled, its privacy is dominated by the clone
pair of :mod:`ldp.privacy.shuffle` (Feldman, McMillan and Talwar, FOCS 2021, Theorem 3.2: the shuffled output on
neighbouring datasets is one post-processing of P and of Q, for every ε at once), so the pair's PLD is a valid PLD for
the window, and PLDs compose by convolution (Meiser and Mohammadi, CCS 2018; Koskela, Jälkö and Honkela, AISTATS
2020; Doroshenko, Ghazi, Kamath, Kumar and Manurangsi, "Connect the dots", PETS 2022 — the method
``dp_accounting.pld`` implements). Not shuffled (or no amplification proven), a window is its local (ε₀, δ₀)
guarantee, whose worst-case PLD ``dp_accounting`` gives (``from_privacy_parameters``).

The clone pair's PLD, its cuts and its grid are :mod:`ldp.privacy.window_pld`'s; binary randomized response gets
the tighter one of :mod:`ldp.privacy.binary_shuffle`. The grid step is 10⁻³·ε̂/W, ε̂ an estimate of the composed ε,
so rounding adds at most about 0.1 % of ε̂.

Server side: numpy, scipy and ``dp-accounting`` (the ``server`` extra) are imported when a function is called.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ldp.privacy.binary_shuffle import BINARY, worst_case
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.shuffle import ShuffleGuarantee, ShuffleStructure, generic_structure, shuffled_epsilon
from ldp.privacy.window_pld import discretized, fft_noise, pair_losses, shape, shuffle_pld

__all__ = ["WindowRelease", "CentralOverTime", "central_over_time", "central_over_windows", "protocol_over_time",
           "shuffle_pld", "pair_losses", "METHOD"]

METHOD = "privacy-loss distributions composed with dp-accounting (PLD)"
BASIC = "the one-window figures at δ/W summed (basic composition)"
ADVANCED = "advanced composition (Dwork, Rothblum and Vadhan 2010) of the one-window figures at δ/(2W)"
ONE = "the window's own shuffling bound (one window)"
_PLD_MAX = 50.0
"""The largest local ε of a window not amplified that goes into the PLD; larger ones are added by basic composition
(valid; a PLD holds e^ε as a float, and at such ε nothing is gained by composing them optimally)."""
_MAX_BINS = 2.0**20
"""The most grid points a window's body of losses is given (a year at n = 10⁸ needs about 15,000)."""
_MAX_COMPOSED_BINS = 2.0**22
"""The most grid points the composition's losses (W means plus 20 standard deviations) may need."""


@dataclass(frozen=True)
class WindowRelease:
    """One window a device took part in: its report's local cost (k reports of ε₀ in the window: k·ε₀, as one
    report — :mod:`ldp.privacy.shuffle`'s rule), how many reports were shuffled together (``None``: not shuffled, the
    analyst sees the reports as sent), and what the bound may assume of the randomizer (``None``: generic)."""

    per_report: PrivacyCost
    n: int | None = None
    structure: ShuffleStructure | None = None


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

    require_extra("the central guarantee over windows", "server", ("numpy", "scipy", "dp_accounting"))
    if not releases:
        raise ValueError("no window to compose")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta < 1.0:
        raise ValueError(f"δ must be in (0, 1), got {delta!r}")
    kinds = Counter(releases)
    singles: dict[WindowRelease, ShuffleGuarantee | PrivacyCost] = {r: _one_window(r, delta) for r in kinds}
    w = len(releases)
    # windows of a huge local ε (no amplification; e^ε beyond what a PLD can hold) are added by basic composition
    big = {r: k for r, k in kinds.items() if not _amplified(singles[r]) and _cost_of(singles[r]).epsilon > _PLD_MAX}
    added = sum((_cost_of(singles[r]).times(k) for r, k in big.items()), PrivacyCost(0.0))
    rest = {r: k for r, k in kinds.items() if r not in big}
    budget = delta - added.delta
    if budget <= 0.0:
        raise ValueError(f"the windows' local δ₀ sum to {added.delta:g}: no central guarantee at δ = {delta:g}")
    eps = added.epsilon + (_composed(rest, singles, budget) if rest else 0.0)
    local = sum((r.per_report for r in releases), PrivacyCost(0.0))
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
    best, method = min(figures)
    return CentralOverTime(best, delta, w, tuple(singles.values()), naive, local, method=method,
                           notes=tuple(sorted(notes)))


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
    basic = sum(_one_window(r, delta / w).epsilon * k for r, k in kinds.items())
    at_half = {r: _one_window(r, delta / (2 * w)).epsilon for r in kinds}
    squares = sum(e * e * kinds[r] for r, e in at_half.items())
    drift = sum(e * math.expm1(e) * kinds[r] for r, e in at_half.items() if e < 700)
    out = [(basic, BASIC if w > 1 else ONE)]
    if all(e < 700 for e in at_half.values()):
        out.append((math.sqrt(2 * math.log(2 / delta) * squares) + drift, ADVANCED))
    return out


def _composed(kinds: dict[WindowRelease, int], singles: dict[WindowRelease, ShuffleGuarantee | PrivacyCost],
              delta: float) -> float:
    """The ε at ``delta`` of the windows' PLDs composed (``kinds``: each distinct window and how many). The grid
    step is 10⁻³ of the estimate over W, but never finer than a window's body of losses over ``_MAX_BINS`` nor the
    composition's over ``_MAX_COMPOSED_BINS``: a coarser grid only rounds more losses up (still valid), and no ε₀,
    n, δ or W can then ask for more memory than that."""
    w = sum(kinds.values())
    eps_w = [_epsilon_of(singles[r]) * k for r, k in kinds.items()]
    sq = sum(_epsilon_of(singles[r]) ** 2 * k for r, k in kinds.items())
    estimate = max(min(sum(eps_w), math.sqrt(2 * math.log(1 / delta) * sq) + sq / 2), 1e-12)
    tail = 1e-6 * delta / w
    pairs = {r: _pair_of(r, singles[r], delta, tail) for r in kinds}
    shapes = {r: shape(pair, tail) if pair is not None else (2 * _cost_of(singles[r]).epsilon,) * 3
              for r, pair in pairs.items()}  # each window's (span, mean, sd) of losses; (2ε₀,)*3 bounds a local one
    spread = max(span for span, _, _ in shapes.values())
    composed = (sum(k * abs(shapes[r][1]) for r, k in kinds.items())
                + 20 * math.sqrt(sum(k * shapes[r][2] ** 2 for r, k in kinds.items())))
    step = max(1e-3 * estimate / w, spread / _MAX_BINS, composed / _MAX_COMPOSED_BINS)
    pld = None
    for release, k in kinds.items():
        pair = pairs[release]
        one = discretized(*pair, step, tail) if pair is not None else _local_pld(_cost_of(singles[release]), step)
        one = one.self_compose(k, tail_mass_truncation=tail)
        pld = one if pld is None else pld.compose(one, tail_mass_truncation=tail)
    assert pld is not None
    noise = fft_noise(pld)
    if noise >= delta / 2:  # below the FFT's rounding: no figure from the PLD (the compositions of the others stand)
        return math.inf
    # dp-accounting's search divides the upper tail's mass by the lower's, which can be subnormal: the quotient then
    # overflows to inf, and inf is the right answer there (ε is at least that loss); only numpy's warning is silenced
    import numpy as np  # the server extra, checked by central_over_windows

    with np.errstate(over="ignore"):
        return float(pld.get_epsilon_for_delta(delta - noise))


def _amplified(g: ShuffleGuarantee | PrivacyCost) -> bool:
    return isinstance(g, ShuffleGuarantee) and g.amplified


def _one_window(release: WindowRelease, delta: float) -> ShuffleGuarantee | PrivacyCost:
    cost = release.per_report
    if release.n is None or cost.delta > 0.0:
        return cost
    return shuffled_epsilon(cost.epsilon, release.n, delta, release.structure)


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


def _pair_of(release: WindowRelease, single: ShuffleGuarantee | PrivacyCost, delta: float,
             tail: float) -> tuple[Any, Any] | None:
    """The losses of a window whose shuffling amplifies, by the method that gave its one-window figure: binary RR's
    law stochastically larger than every dataset's (:mod:`ldp.privacy.binary_shuffle`), or the clone pair's (with the
    structure that gave it); ``None`` for a window counted at its local (ε₀, δ₀)."""
    if not (isinstance(single, ShuffleGuarantee) and single.amplified):
        return None
    assert release.n is not None
    if single.method == BINARY and release.structure is not None:
        return worst_case(release.structure.epsilon_pair, release.n, delta).losses()
    structure = release.structure if single.method != "numerical" and release.structure is not None \
        else generic_structure(release.per_report.epsilon)
    return pair_losses(structure, release.n, tail)


def _local_pld(cost: PrivacyCost, step: float) -> Any:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.from_privacy_parameters(_dp_params(cost), value_discretization_interval=step)


def _dp_params(cost: PrivacyCost) -> Any:
    from dp_accounting.pld import common

    return common.DifferentialPrivacyParameters(cost.epsilon, cost.delta)


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
