"""A device's central guarantee across many windows: the privacy-loss distribution (PLD) of each window's release,
composed with Google's ``dp-accounting`` library, never the naive W·ε.

Each window a device reports in is one release against the analyst. Shuffled, its privacy is dominated by the clone
pair of :mod:`ldp.privacy.shuffle` (Feldman, McMillan and Talwar, FOCS 2021, Theorem 3.2: the shuffled output on
neighbouring datasets is one post-processing of P and of Q, for every ε at once), so the pair's PLD is a valid PLD for
the window, and PLDs compose by convolution (Meiser and Mohammadi, CCS 2018; Koskela, Jälkö and Honkela, AISTATS
2020; Doroshenko, Ghazi, Kamath, Kumar and Manurangsi, "Connect the dots", PETS 2022 — the method
``dp_accounting.pld`` implements). Not shuffled (or no amplification proven), a window is its local (ε₀, δ₀)
guarantee, whose worst-case PLD ``dp_accounting`` gives (``from_privacy_parameters``).

**The pair's PLD.** With A = e^ε_Δ/(e^ε_Δ + 1), given C = c clones the pair is P(x) = A·b_c(x−1) + (1−A)·b_c(x),
Q(x) = (1−A)·b_c(x−1) + A·b_c(x) over x = 0..c+1 (b_c the Bin(c, ½) law), so the privacy loss is
``L(x, c) = ln((A·x + (1−A)(c+1−x)) / ((1−A)·x + A(c+1−x)))``; a branch of weight 1 − ι has loss 0
(:class:`~ldp.privacy.shuffle.ShuffleStructure`). Every step below can only make the PLD stochastically larger, and
δ(ε) = E[(1 − e^(ε − ΣLᵢ))₊] grows with each Lᵢ, so the result stays an upper bound, composed or not:

* c is grouped: the values in ``[a, a + w)`` use the pair at c = a, which dominates them (P_{c+1}, Q_{c+1} are
  P_c, Q_c plus one fair coin); w = max(1, ⌊a·10⁻³⌋), so the loss scale is overstated by at most 0.05 %; the upper
  tail of C joins the last group, the lower tail (its exact mass, at most 10⁻³·min(τ, 10⁻¹⁸)) is charged at the
  largest loss;
* x beyond √(2 ln(2/that mass)) + 1 standard deviations of b_c (Hoeffding) is charged at the largest loss, with its
  exact mass from the binomial tails — never ``1 − Σp``, whose float rounding (~10⁻¹⁶) would be a floor under δ;
* every mass is raised by 10⁻⁹ of itself, more than scipy's rounding, so the PLD stays pessimistic;
* losses are rounded *up* to the grid (``pessimistic_estimate``); the largest losses, of total mass τ, go to the
  infinite loss (δ grows by τ per window, τ = 10⁻⁶·δ/W), the smallest are moved up to the first kept grid point.
  The cuts' charges fall within τ, so the grid spans only the body of the losses: a year at n = 10⁸ is about
  0.5 s of CPU.

The grid step is 10⁻³·ε̂/W, ε̂ an estimate of the composed ε, so rounding adds at most about 0.1 % of ε̂.

Server side: numpy, scipy and ``dp-accounting`` (the ``server`` extra) are imported when a function is called.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ldp.privacy.cost import PrivacyCost
from ldp.privacy.shuffle import ShuffleGuarantee, ShuffleStructure, generic_structure, shuffled_epsilon

__all__ = ["WindowRelease", "CentralOverTime", "central_over_time", "central_over_windows", "protocol_over_time",
           "shuffle_pld", "pair_losses", "METHOD"]

METHOD = "privacy-loss distributions composed with dp-accounting (PLD)"
BASIC = "the one-window figures at δ/W summed (basic composition)"
ADVANCED = "advanced composition (Dwork, Rothblum and Vadhan 2010) of the one-window figures at δ/(2W)"
ONE = "the window's own shuffling bound (one window)"
_GROUP = 1e-3
"""Relative width of a group of clone counts c (module docstring)."""
_PLD_MAX = 50.0
"""The largest local ε of a window not amplified that goes into the PLD; larger ones are added by basic composition
(valid; a PLD holds e^ε as a float, and at such ε nothing is gained by composing them optimally)."""
_CUT = 1e-3
"""What the cuts of C and of x may leave out, as a share of the top ``tail`` (module docstring)."""
_MAX_BINS = 2.0**20
"""The most grid points a window's body of losses is given (a year at n = 10⁸ needs about 15,000)."""
_MAX_COMPOSED_BINS = 2.0**22
"""The most grid points the composition's losses (W means plus 20 standard deviations) may need."""
_ROUNDING = 1e-9
"""Every mass is raised by this share: more than float rounding in scipy's binomial laws and their sums can take,
so the PLD stays pessimistic without ``1 − Σp`` charged at the top."""


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
    if local.delta == 0.0:
        figures += _compositions(kinds, delta)
    best, method = min(figures)
    return CentralOverTime(best, delta, w, tuple(singles.values()), naive, local, method=method,
                           notes=tuple(sorted(notes)))


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
    pairs = {r: _pair_of(r, singles[r], tail) for r in kinds}
    shapes = {r: _shape(pair, tail) if pair is not None else (2 * _cost_of(singles[r]).epsilon,) * 3
              for r, pair in pairs.items()}  # each window's (span, mean, sd) of losses; (2ε₀,)*3 bounds a local one
    spread = max(span for span, _, _ in shapes.values())
    composed = (sum(k * abs(shapes[r][1]) for r, k in kinds.items())
                + 20 * math.sqrt(sum(k * shapes[r][2] ** 2 for r, k in kinds.items())))
    step = max(1e-3 * estimate / w, spread / _MAX_BINS, composed / _MAX_COMPOSED_BINS)
    pld = None
    for release, k in kinds.items():
        pair = pairs[release]
        one = _discretized(*pair, step, tail) if pair is not None else _local_pld(_cost_of(singles[release]), step)
        one = one.self_compose(k, tail_mass_truncation=tail)
        pld = one if pld is None else pld.compose(one, tail_mass_truncation=tail)
    assert pld is not None
    noise = _fft_noise(pld)
    if noise >= delta / 2:  # below the FFT's rounding: no figure from the PLD (the compositions of the others stand)
        return math.inf
    return float(pld.get_epsilon_for_delta(delta - noise))


def _fft_noise(pld: Any) -> float:
    """What the FFT convolutions of ``dp-accounting``'s composition may have taken from δ: its rounding leaves
    entries wrong by about 10⁻¹⁹ each, some negative; ten times the most negative entry over every entry bounds what
    they sum to. (A PLD whose entries cannot be read is trusted only at δ >= 10⁻⁹, where that sum is negligible.)"""
    import numpy as np

    probs = getattr(getattr(pld, "_pmf_remove", None), "_probs", None)
    if probs is None or not isinstance(probs, np.ndarray) or probs.size == 0:
        return 1e-9
    return 10.0 * max(-float(probs.min()), 0.0) * probs.size


def _shape(pair: tuple[Any, Any], tail: float) -> tuple[float, float, float]:
    """Of losses ``pair`` = (loss, prob): their range once the largest and the smallest of mass ``tail`` each are cut
    off, their mean and their standard deviation."""
    import numpy as np

    loss, prob = pair
    order = np.argsort(loss)
    loss, prob = loss[order], prob[order]
    cum = np.cumsum(prob)
    lo = loss[min(int(np.searchsorted(cum, tail, side="right")), loss.size - 1)]
    hi = loss[max(int(np.searchsorted(cum, cum[-1] - tail, side="left")), 0)]
    mean = float(np.dot(prob, loss) / cum[-1])
    sd = math.sqrt(max(float(np.dot(prob, (loss - mean) ** 2) / cum[-1]), 0.0))
    return float(max(hi - lo, 0.0)), mean, sd


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


def _pair_of(release: WindowRelease, single: ShuffleGuarantee | PrivacyCost, tail: float) -> tuple[Any, Any] | None:
    """The clone pair's losses of a window whose shuffling amplifies (with the structure that gave its one-window
    figure), ``None`` for a window counted at its local (ε₀, δ₀)."""
    if not (isinstance(single, ShuffleGuarantee) and single.amplified):
        return None
    assert release.n is not None
    structure = release.structure if single.method != "numerical" and release.structure is not None \
        else generic_structure(release.per_report.epsilon)
    return pair_losses(structure, release.n, tail)


def _local_pld(cost: PrivacyCost, step: float) -> Any:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.from_privacy_parameters(_dp_params(cost), value_discretization_interval=step)


def _dp_params(cost: PrivacyCost) -> Any:
    from dp_accounting.pld import common

    return common.DifferentialPrivacyParameters(cost.epsilon, cost.delta)


def shuffle_pld(structure: ShuffleStructure, n: int, step: float, tail: float = 1e-18) -> Any:
    """The ``dp_accounting`` PLD of the clone pair of n shuffled reports with ``structure`` (module docstring),
    losses rounded up to multiples of ``step``; the largest losses of total mass ``tail`` go to the infinite loss."""
    if not (0.0 < step < math.inf and 0.0 <= tail < 1.0):
        raise ValueError(f"step must be > 0 and tail in [0, 1), got {step!r}, {tail!r}")
    return _discretized(*pair_losses(structure, n, tail), step, tail)


def pair_losses(structure: ShuffleStructure, n: int, tail: float = 1e-18) -> tuple[Any, Any]:
    """The privacy losses of the clone pair of n shuffled reports with ``structure`` and their masses under P
    (module docstring), as two arrays; each mass raised by ``_ROUNDING`` of itself.

    What the cuts leave out is computed, never inferred as ``1 − Σp`` (whose float rounding alone, ~10⁻¹⁶ a window,
    would dwarf a small δ): below ``lo`` clones, the binomial's lower tail; beyond the x kept of each group, the
    exact tails of b_c under P, both charged at the top loss. The cuts are set so that both are at most
    ``_CUT``·``tail`` of mass: their charge then joins the infinite loss with the rest of the top ``tail``, and the
    PLD's grid spans only the body, so a window's cost scales with ln(1/δ), not with the top loss over the step."""
    import numpy as np
    from scipy.stats import binom

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    if not 0.0 <= tail < 1.0:
        raise ValueError(f"tail must be in [0, 1), got {tail!r}")
    top = structure.epsilon_pair
    a_, b_ = 1.0 / (1.0 + math.exp(-top)), 1.0 / (1.0 + math.exp(top))  # A and 1 − A, each to full precision
    size, alpha = n - 1, structure.clone_probability
    edge = _CUT * min(tail, 1e-18) if tail > 0.0 else 1e-21  # what each cut may leave out (charged at the top)
    lo = int(binom.ppf(edge, size, alpha)) if size else 0
    hi = int(binom.isf(edge, size, alpha)) if size else 0
    lo, hi = max(0, min(lo, hi)), min(size, max(lo, hi))
    charged_top = float(binom.cdf(lo - 1, size, alpha)) if lo > 0 else 0.0  # C below lo: charged at the top loss
    starts = []
    at = lo
    while at <= hi:
        starts.append(at)
        at += max(1, int(at * _GROUP))
    begin = np.array(starts)
    masses = _group_masses(begin, np.array(starts[1:] + [size + 1]), size, alpha)
    begin, masses = begin[masses > 0.0], masses[masses > 0.0]
    sds = math.sqrt(2.0 * math.log(2.0 / edge)) + 1.0  # Hoeffding: b_c beyond sds·√c/2 of c/2 has mass < edge
    half = sds * np.sqrt(begin) / 2 + 2
    x0 = np.maximum(0, ((begin + 1) / 2 - half).astype(np.int64))
    x1 = np.minimum(begin + 1, ((begin + 1) / 2 + half).astype(np.int64))
    # every group's x in one array, c repeated beside it; b_c once over x0 - 1 .. x1, read at x - 1 and at x
    lengths = x1 - x0 + 1
    c = np.repeat(begin, lengths)
    within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    x = np.repeat(x0, lengths) + within
    spans = lengths + 1
    at = np.repeat(np.cumsum(spans) - spans, lengths) + within  # b_c(x - 1) in the array below
    b = binom.pmf(np.repeat(x0 - 1, spans) + np.arange(int(spans.sum())) - np.repeat(np.cumsum(spans) - spans, spans),
                  np.repeat(begin, spans), 0.5)
    p = a_ * b[at] + b_ * b[at + 1]
    num = a_ * x + b_ * (c + 1 - x)
    den = b_ * x + a_ * (c + 1 - x)
    outside = (a_ * (binom.cdf(x0 - 2, begin, 0.5) + binom.sf(x1 - 1, begin, 0.5))
               + b_ * (binom.cdf(x0 - 1, begin, 0.5) + binom.sf(x1, begin, 0.5)))
    charged_top += structure.informative * float((masses * outside).sum())
    losses = [np.zeros(1), np.log(num) - np.log(den)]
    probs = [np.array([1.0 - structure.informative]), structure.informative * np.repeat(masses, lengths) * p]
    loss = np.concatenate(losses + [np.array([top])])
    prob = np.concatenate(probs + [np.array([charged_top])]) * (1.0 + _ROUNDING)
    return loss, prob


def _discretized(loss: Any, prob: Any, step: float, tail: float) -> Any:
    """The PLD of losses ``loss`` of masses ``prob``: each loss rounded up to a multiple of ``step`` (pessimistic),
    the largest of total mass ``tail`` to the infinite loss, the smallest of total mass ``tail`` moved up."""
    import numpy as np
    from dp_accounting.pld import pld_pmf, privacy_loss_distribution as pld_lib

    order = np.argsort(loss, kind="stable")  # cut on the points, so the grid spans only what is kept
    loss, prob = loss[order], prob[order]
    infinity = 0.0
    if tail > 0.0:  # the top of total mass <= tail to the infinite loss, the bottom moved up
        from_top = np.cumsum(prob[::-1])
        cut = int(np.searchsorted(from_top, tail, side="right"))
        infinity = float(from_top[cut - 1]) if cut else 0.0
        loss, prob = loss[:loss.size - cut], prob[:prob.size - cut].copy()
        below = np.cumsum(prob)
        skip = int(np.searchsorted(below, tail, side="right"))
        if 0 < skip < prob.size:
            prob[skip] += below[skip - 1]
            loss, prob = loss[skip:], prob[skip:]
    index = np.ceil(loss / step + 1e-9).astype(np.int64)  # rounded up: a pessimistic PLD
    first = int(index.min())
    dense = np.bincount(index - first, weights=prob)
    pmf = pld_pmf.DensePLDPmf(step, first, dense, infinity, True)
    return pld_lib.PrivacyLossDistribution(pmf)


def _group_masses(starts: Any, ends: Any, size: int, alpha: float) -> Any:
    """P(start <= C < end) for C ~ Bin(size, alpha), each group from the tail it lies in (cdf below the median,
    sf above), so a tail group's mass keeps its relative precision instead of an absolute 10⁻¹⁶."""
    import numpy as np
    from scipy.stats import binom

    below = binom.cdf(ends - 1, size, alpha) - binom.cdf(starts - 1, size, alpha)
    above = binom.sf(starts - 1, size, alpha) - binom.sf(ends - 1, size, alpha)
    return np.maximum(np.where(ends - 1 <= size * alpha, below, above), 0.0)


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
