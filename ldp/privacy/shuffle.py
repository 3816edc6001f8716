"""The central guarantee that shuffling buys: n reports from an ε₀-LDP randomizer, one per user, stripped of
identifiers and permuted by a shuffler the analyst does not control, are (ε, δ)-DP against the analyst.

The bound is the numerical one of Feldman, McMillan and Talwar, "Hiding among the clones: a simple and nearly
optimal analysis of privacy amplification by shuffling" (FOCS 2021, arXiv:2012.12803, Theorem 3.2 and Appendix E):
the shuffled output is (ε, δ)-DP if the pair of distributions below is (ε, δ)-indistinguishable. With
``p = e^-ε₀``, ``C ~ Bin(n-1, p)`` (the other users that are "clones" of the two differing ones),
``A ~ Bin(C, 1/2)`` and ``Δ ~ Bern(e^ε₀ / (e^ε₀ + 1))``, ``P = (A + Δ, C - A + 1 - Δ)`` and
``Q = (A + 1 - Δ, C - A + Δ)``. Their hockey-stick divergence is

    δ(ε) = Σ_c Pr[C = c] · D_c(ε),    D_c(ε) = Σ_{x ≥ m_c} (u·b_c(x-1) - v·b_c(x)),

where ``b_c`` is the Bin(c, 1/2) law, ``u = (e^ε₀ - e^ε)/(e^ε₀ + 1)``, ``v = (e^(ε+ε₀) - 1)/(e^ε₀ + 1)`` and
``m_c`` is the first x with a positive term (the two directions are equal by symmetry). :mod:`ldp.privacy.clone_bound`
bounds it from above (standard library, or vectorised with numpy and scipy), so :func:`delta_upper_bound` is an upper
bound on δ(ε) (up to floating-point rounding), and :func:`shuffled_epsilon` returns the smallest ε it finds with that
bound at most δ: a valid ε, never below the true one. :func:`closed_form_epsilon` is the paper's Theorem 3.1, a
looser check.

**Tighter for k-ary randomized response** (:func:`k_rr_structure`). The reduction only needs two facts about the
randomizer R, which :class:`ShuffleStructure` states: each other user's report is a "clone" — x₀ or x₁ with
probability ``α/2`` each — with probability ``α``, and user 1's report is, with probability ``ι`` ("informative"),
x₀ or x₁ with odds ``e^ε_Δ : 1``, and otherwise drawn from one law that is the same under x₀ and x₁ and recognisable
as such. For any ε₀-LDP randomizer, FMT21 give ``α = e^-ε₀``, ``ι = 1``, ``ε_Δ = ε₀`` (:func:`generic_structure`).
For k-RR over d values with keep probability p and q = (1-p)/(d-1) for each other value, every R(y) puts at least
q on each of x₀, x₁, so ``α = 2q``; user 1 reports x₀ or x₁ with probability ``ι = p + q`` (odds p : q, so
``ε_Δ = ln(p/q)``) and otherwise one of the d-2 other values uniformly, whatever its input (a report outside {x₀, x₁}
is the blanket's, which the analyst may be told). The pair is then the generic one with C ~ Bin(n-1, α), mixed
with a branch of privacy loss 0 of weight 1 - ι: ``δ(ε) = ι · Σ_c Pr[C = c]·D_c(ε)``. This is the clone
decomposition of Feldman, McMillan and Talwar's follow-up ("Stronger privacy amplification by shuffling for Rényi
and approximate differential privacy", SODA 2023), which uses a randomizer's own structure, specialised to k-RR;
Koskela et al. evaluate the same kind of pair numerically for shuffled k-RR. It is much tighter for small d (d = 2:
α = 2/(e^ε₀ + 1) > e^-ε₀), and looser than the generic one once d is large against e^ε₀ (few clones: a report
rarely lands on x₀ or x₁). Both are valid, so :func:`shuffled_epsilon` given a structure runs both and keeps the
smaller ε. The tests check the figures against exact evaluations of the shuffled k-RR histogram (never below them).

**One figure per window, monotone** (:func:`shuffled_epsilon`): binary randomized response's exact worst dataset
(:mod:`ldp.privacy.binary_shuffle`), k-RR's blanket (:mod:`ldp.privacy.krr_shuffle`) and the clone bounds each answer
where they are tight, on the grids of n and ε of :mod:`ldp.privacy.window_grid`, so the figure does not rise with n
or fall with δ.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ldp.extras import available
from ldp.privacy.binary_shuffle import BINARY, binary_rr_epsilon
from ldp.privacy.clone_bound import Clones, FastClones, delta_bound, delta_bound_at, fast_delta_bound
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.krr_shuffle import KRR, krr_epsilon
from ldp.privacy.krr_small import SMALL_MAX, small_krr_epsilon
from ldp.privacy.window_grid import check_delta, floor_delta, grid_search

__all__ = ["ShuffleGuarantee", "ShuffleStructure", "canonical_n", "generic_structure", "geometric_n", "k_rr_structure",
           "shuffled_epsilon", "shuffled_cost", "closed_form_epsilon", "delta_upper_bound", "TRUST_ASSUMPTION"]

TRUST_ASSUMPTION = ("the shuffler is trusted and is not the analyst: it strips identifiers and permutes the n "
                    "reports (n distinct users, one report each); the central guarantee holds against the analyst "
                    "only, while the shuffler and anyone who sees a report in transit get the local one")



@dataclass(frozen=True)
class ShuffleStructure:
    """What the clone reduction may assume about the local randomizer (module docstring): each other report is a
    clone with probability ``clone_probability`` (α); user 1's report is informative with probability
    ``informative`` (ι), then names its input with odds ``e^epsilon_pair : 1`` (ε_Δ). ``name`` says whose analysis
    it is (``"generic"``: any ε₀-LDP randomizer; ``"k-RR"``)."""

    name: str
    epsilon_pair: float
    clone_probability: float
    informative: float = 1.0

    def __post_init__(self) -> None:
        if not (0.0 < self.epsilon_pair < math.inf and 0.0 < self.clone_probability <= 1.0
                and 0.0 < self.informative <= 1.0):
            raise ValueError(f"a shuffle structure needs ε_Δ > 0 finite, 0 < α <= 1 and 0 < ι <= 1, got {self}")

    @property
    def values(self) -> int | None:
        """For k-RR, the number d of values its channel is over (from q = α/2 and p = ι − q: d = 1 + (1 − p)/q);
        ``None`` for another structure or one that is no k-RR channel."""
        if self.name != "k-RR" or self.clone_probability >= 1.0:
            return None
        q = self.clone_probability / 2
        p = self.informative - q
        d = round(1 + (1 - p) / q)
        return d if d >= 2 and abs(p + (d - 1) * q - 1.0) <= 1e-9 else None

    @property
    def binary(self) -> bool:
        """Symmetric binary randomized response (k-RR over two values: every report informative), which
        :mod:`ldp.privacy.binary_shuffle` analyses exactly."""
        return self.name == "k-RR" and abs(self.informative - 1.0) <= 1e-12

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "epsilon_pair": self.epsilon_pair, "clone_probability": self.clone_probability,
                "informative": self.informative}


def generic_structure(eps0: float) -> ShuffleStructure:
    """FMT21's structure of any ε₀-LDP randomizer: ``α = e^-ε₀``, ``ι = 1``, ``ε_Δ = ε₀``."""
    return ShuffleStructure("generic", eps0, math.exp(-eps0), 1.0)


def k_rr_structure(keep: float, other: float, d: int) -> ShuffleStructure:
    """The structure of k-ary randomized response over ``d >= 2`` values with the *realized* probabilities ``keep``
    (report the input) and ``other`` (report one given other value): ``α = 2·other``, ``ι = keep + other``,
    ``ε_Δ = ln(keep/other)`` (module docstring). ``ValueError`` unless ``keep + (d-1)·other`` is 1 (to 1e-12) and
    ``keep > other > 0``."""
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise ValueError(f"k-RR needs d >= 2 values, got {d!r}")
    if not (0.0 < other < keep < 1.0) or abs(keep + (d - 1) * other - 1.0) > 1e-12:
        raise ValueError(f"not a k-RR channel over {d} values: keep={keep!r}, other={other!r}")
    return ShuffleStructure("k-RR", math.log(keep / other), min(1.0, 2.0 * other), min(1.0, keep + other))


@dataclass(frozen=True)
class ShuffleGuarantee:
    """The central (ε, δ) of n shuffled ε₀-LDP reports, against the analyst; ``method`` is ``"numerical"``
    (the FMT21 numerical bound, generic), ``"numerical k-RR"`` (the same with k-RR's structure) or ``"none"`` (no
    amplification proven: ε = ε₀, δ = 0, the local guarantee)."""

    epsilon: float
    delta: float
    epsilon0: float
    n: int
    method: str
    trust: str = TRUST_ASSUMPTION

    @property
    def amplified(self) -> bool:
        return self.method != "none"

    @property
    def cost(self) -> PrivacyCost:
        """The guarantee as a :class:`~ldp.privacy.cost.PrivacyCost`."""
        return PrivacyCost(self.epsilon, self.delta)

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "epsilon0": self.epsilon0, "n": self.n,
                "method": self.method, "amplified": self.amplified, "trust": self.trust}

    def __str__(self) -> str:
        if not self.amplified:
            return f"ε={self.epsilon:.4g} (no amplification proven at n={self.n:,})"
        return f"ε={self.epsilon:.4g}, δ={self.delta:.3g} (n={self.n:,} shuffled reports of ε₀={self.epsilon0:.4g})"


_BINARY_MAX = 30.0
"""The largest ε₀ of binary RR analysed exactly (beyond, 1 − p is below 10⁻¹³ and the clone bound answers)."""
_MAX_EPS0 = 700.0
"""The largest ε₀ the bound is computed for (e^ε₀ must be a float); beyond, no gain can be proven for any n a
float can count (the clone probability e^-ε₀ is below 10⁻³⁰⁴)."""


def _check(eps0: float, n: int, delta: float, *, large: bool = False) -> tuple[float, int, float]:
    if isinstance(eps0, bool) or not isinstance(eps0, (int, float)) or not (0.0 <= eps0 < math.inf):
        raise ValueError(f"the local ε₀ must be a finite number >= 0, got {eps0!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (reports shuffled together, one per user) must be an int >= 1, got {n!r}")
    delta = check_delta(delta)
    if eps0 > _MAX_EPS0 and not large:
        raise ValueError(f"the local ε₀ must be at most 700 (e^ε₀ must be a float), got {eps0!r}")
    return float(eps0), n, float(delta)


def closed_form_epsilon(eps0: float, n: int, delta: float) -> float | None:
    """FMT21 Theorem 3.1: for ε₀ ≤ ln(n / (16 ln(2/δ))), the shuffle is (ε, δ)-DP with
    ``ε = ln(1 + (e^ε₀ - 1)/(e^ε₀ + 1) · (8 sqrt(e^ε₀ ln(4/δ) / n) + 8 e^ε₀ / n))``; ``None`` outside that regime."""
    eps0, n, delta = _check(eps0, n, delta)
    if n < 2 or eps0 > math.log(n / (16 * math.log(2 / delta))):
        return None
    e0 = math.exp(eps0)
    return math.log1p(math.expm1(eps0) / (e0 + 1) * (8 * math.sqrt(e0 * math.log(4 / delta) / n) + 8 * e0 / n))


def _vectorised() -> bool:
    """Whether the vectorised clone bound (numpy and scipy) is used; the standard-library path otherwise."""
    return available("numpy", "scipy")


def delta_upper_bound(eps0: float, n: int, eps: float, delta_scale: float = 1e-8,
                      structure: ShuffleStructure | None = None) -> float:
    """An upper bound on the δ at which n shuffled ε₀-LDP reports are ε-DP (FMT21's numerical bound, with
    ``structure``'s clones if given); the truncations spend at most about ``1e-4·delta_scale``."""
    eps0, n, delta_scale = _check(eps0, n, delta_scale)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"ε must be a number >= 0, got {eps!r}")
    if math.exp(-eps0) >= 1.0:  # ε₀ = 0 or below a float's resolution: ε₀-DP's own δ(ε), 0 at ε >= ε₀
        return max(0.0, (math.expm1(eps0) - math.expm1(eps)) / (math.exp(eps0) + 1.0))
    structure = structure or generic_structure(eps0)
    if _vectorised():
        return fast_delta_bound(FastClones(structure.clone_probability, n, delta_scale), structure, float(eps))
    return delta_bound(Clones(structure.clone_probability, n, delta_scale), structure, float(eps), delta_scale)


def canonical_n(n: int) -> int:
    """``n`` rounded down to four significant digits (``n`` itself below 10⁴). A figure valid for n' <= n users is
    valid for n: with more users the analyst's view is a post-processing of the view with fewer, the extra reports
    being independent of user 1's. The clone bounds group clone counts by widths that depend on n, so their last
    digits wander by about 10⁻⁵ from n to n + 1; evaluated at the canonical n they are constant
    between its steps, and each step (n' up by 10⁻⁴ to 10⁻³ of itself) lowers ε by 5·10⁻⁵ to 5·10⁻⁴ of itself,
    beyond that wander: non-increasing in n. It costs at most 0.05 % of ε."""
    if n < 10**4:
        return n
    unit: int = 10 ** (len(str(n)) - 4)
    return int(n // unit * unit)


_KRR_MIN = SMALL_MAX
"""k-RR's grouped blanket (:mod:`ldp.privacy.krr_shuffle`) answers from this many users; below, the blanket pair
summed over every outcome (:mod:`ldp.privacy.krr_small`)."""
_KRR_RATIO = 1.02
"""The geometric grid of n the blanket is evaluated on (:func:`geometric_n`)."""


def geometric_n(n: int) -> int:
    """The largest ⌊1.02^j⌋ at most ``n``. k-RR's blanket figure may wander a little from n to n + 1 (the cut of
    U's lower tail moves with n; its bands lie on lattices fixed by θ, :mod:`ldp.privacy.krr_shuffle`), so it is
    evaluated on this grid, each step (2 %) lowering ε by about 1 %: non-increasing in n (checked along the grid in
    72 settings from 100 to 4,000 users, not proven), at a cost of at most about 1 % of ε (a figure for fewer users
    is valid for more)."""
    j = int(math.floor(math.log(n) / math.log(_KRR_RATIO)))
    while math.floor(_KRR_RATIO ** (j + 1)) <= n:
        j += 1
    while j > 0 and math.floor(_KRR_RATIO ** j) > n:
        j -= 1
    return max(1, int(math.floor(_KRR_RATIO ** j)))


def krr_figure(eps_pair: float, d: int, n: int, delta: float) -> float:
    """k-RR's blanket figure over d >= 3 values at ε_Δ = ``eps_pair``, n >= 2 users, non-increasing in n by
    construction below :data:`_KRR_MIN` users: there the pair summed over every outcome
    (:func:`~ldp.privacy.krr_small.small_krr_epsilon`, whose exact δ falls with n: a post-processing); from there
    the grouped pair on the grid of :func:`geometric_n` (:func:`~ldp.privacy.krr_shuffle.krr_epsilon`), never
    above the figure at ``_KRR_MIN − 1`` users (valid for more users: a post-processing; one cached call), so the
    step from the one to the other cannot rise either. ε_Δ above 50 (no gain at such n) gives ε_Δ below 100 users."""
    if n < _KRR_MIN:
        return small_krr_epsilon(eps_pair, d, n, delta) if eps_pair <= 50.0 else eps_pair
    banded = krr_epsilon(eps_pair, d, geometric_n(n), delta)
    below = small_krr_epsilon(eps_pair, d, _KRR_MIN - 1, delta) if eps_pair <= 50.0 else math.inf
    return min(math.inf if banded is None else banded[0], below)


def shuffled_epsilon(eps0: float, n: int, delta: float, structure: ShuffleStructure | None = None, *,
                     binary: bool = True) -> ShuffleGuarantee:
    """The central (ε, δ) against the analyst of n shuffled reports, one per user, each from an ε₀-LDP
    randomizer: the smallest ε found whose :func:`delta_upper_bound` is at most δ (relative accuracy 1e-5,
    always rounded up). With a ``structure`` (e.g. :func:`k_rr_structure` of the reports' channel) the bound is
    also run with it and the smaller ε kept. Where that proves no gain (ε within 0.1 % of ε₀, e.g. n = 1) the
    result is ε₀ itself, δ = 0, ``method="none"``; so it is for ε₀ above 700 (a device's many reports of one window
    counted as one, say), where no gain can be proven. A binary RR structure (:attr:`ShuffleStructure.binary`) is
    also analysed exactly (:mod:`ldp.privacy.binary_shuffle`, method ``"binary RR (worst dataset)"``, numpy and
    scipy needed) unless ``binary`` is false."""
    eps0, n, delta = _check(eps0, n, delta, large=True)
    none = ShuffleGuarantee(eps0, 0.0, eps0, n, "none")
    if n < 2 or eps0 > _MAX_EPS0 or math.exp(-eps0) >= 1.0:  # nothing to gain, or ε₀ below a float's resolution
        return none
    if structure is not None and structure.epsilon_pair > eps0 * (1 + 1e-6):  # a realized channel: rounding
        raise ValueError(f"the structure's ε_Δ = {structure.epsilon_pair} exceeds the reports' ε₀ = {eps0}")
    grid_delta = floor_delta(delta)  # a figure valid at δ' <= δ is valid at δ (ldp.privacy.window_grid)
    users = canonical_n(n)  # fewer users: valid, and the figures below adapt their groups to n (module docstring)
    own = structure is not None and structure.name != "generic" and structure.clone_probability < 1.0
    found = []
    if not (own and structure is not None and dominates_generic(structure, eps0)):
        found.append(_search(eps0, users, grid_delta, generic_structure(eps0),
                             closed_form_epsilon(eps0, users, grid_delta)))
    if own and structure is not None:
        found.append(_search(eps0, users, grid_delta, structure, None))
    if binary and structure is not None and structure.binary and structure.epsilon_pair <= _BINARY_MAX \
            and available("numpy", "scipy"):  # without the server extra, the clone bound alone
        found.append((binary_rr_epsilon(structure.epsilon_pair, n, delta)[0], BINARY))
    d = structure.values if structure is not None else None
    if binary and structure is not None and d is not None and d >= 3 and available("numpy", "scipy"):
        found.append((krr_figure(structure.epsilon_pair, d, n, delta), KRR))
    eps, name = min(found)
    if eps >= eps0 * (1 - 1e-3):
        return none
    return ShuffleGuarantee(eps, delta, eps0, n, "numerical" if name == "generic" else
                            name if name in (BINARY, KRR) else f"numerical {name}")


def dominates_generic(structure: ShuffleStructure, eps0: float) -> bool:
    """Whether ``structure``'s clone pair is at most the generic one's for every ε (so the generic search can be
    skipped): at least as many clones (``α >= e^-ε₀``), ``ι <= 1`` and ``ε_Δ <= ε₀``. Then C is stochastically
    larger and ``D_c`` does not increase with c; ``D_c`` at ``ε_Δ`` is a garbling's of ``D_c`` at ε₀ (randomized
    response at a smaller ε is post-processed randomized response at a larger one), so not larger; and ``ι`` scales
    it down. Binary RR always qualifies (``α = 2/(e^ε₀ + 1)``), k-RR over d values when ``e^ε₀ >= d − 1``."""
    return (structure.clone_probability >= math.exp(-eps0) and structure.informative <= 1.0 + 1e-12
            and structure.epsilon_pair <= eps0 * (1 + 1e-9))  # rounding of a realized channel (either figure is valid)


def _search(eps0: float, n: int, delta: float, structure: ShuffleStructure,
            closed: float | None) -> tuple[float, str]:
    """The smallest ε (to 1e-5 relative, rounded up) whose δ bound with ``structure`` is at most δ, and the
    structure's name."""
    bound: Callable[[float], float]
    if _vectorised():
        fast = FastClones(structure.clone_probability, n, delta)
        bound = functools.partial(fast_delta_bound, fast, structure)
    else:
        clones = Clones(structure.clone_probability, n, delta)
        bound = functools.partial(delta_bound_at, clones, structure, delta)

    def excess(eps: float) -> float:  # ln δ̄(ε) - ln δ: > 0 not enough, <= 0 certified
        d = bound(eps)
        return math.log(d) - math.log(delta) if d > 0 else -math.inf

    if excess(0.0) <= 0:  # (0, δ)-DP already (the total variation is within δ): the grid's smallest ε
        return grid_search(lambda _: False, 0.0, eps0), structure.name
    lo, hi, f_lo, f_hi = 0.0, eps0, math.inf, -math.inf
    if closed is not None and closed < hi:
        f = excess(closed)
        if f <= 0:
            hi, f_hi = closed, f
        else:
            lo, f_lo = closed, f
    # regula falsi on ln δ̄ (Illinois variant), falling back to bisection where a side is infinite
    side = 0
    for _ in range(100):
        if hi - lo <= 1e-5 * hi:
            break
        if math.isfinite(f_lo) and math.isfinite(f_hi) and f_lo != f_hi:
            mid = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            if not (lo < mid < hi):
                mid = (lo + hi) / 2
        else:
            mid = (lo + hi) / 2
        f = excess(mid)
        if f <= 0:
            hi, f_hi = mid, f
            if side == -1:
                f_lo /= 2
            side = -1
        else:
            lo, f_lo = mid, f
            if side == 1:
                f_hi /= 2
            side = 1
    # the answer: the smallest grid ε whose bound is at most δ (ldp.privacy.window_grid), whatever path led here
    return grid_search(lambda e: excess(e) > 0, hi, eps0), structure.name


def shuffled_cost(per_report: PrivacyCost, n: int, delta: float,
                  structure: ShuffleStructure | None = None) -> ShuffleGuarantee:
    """:func:`shuffled_epsilon` for a per-report :class:`~ldp.privacy.cost.PrivacyCost`, which must be pure
    (δ = 0: the bound is for ε₀-LDP randomizers)."""
    if per_report.delta != 0.0:
        raise ValueError(f"the shuffling bound needs a pure ε₀-LDP report (δ = 0), got {per_report}")
    return shuffled_epsilon(per_report.epsilon, n, delta, structure)
