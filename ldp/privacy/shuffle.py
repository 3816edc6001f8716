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
``m_c`` is the first x with a positive term (the two directions are equal by symmetry). ``D_c`` does not
increase with c (``P_{c+1}``, ``Q_{c+1}`` are ``P_c``, ``Q_c`` plus the same fair coin), so the sum over a group
of c is at most the group's mass times ``D`` at its first c; the lower tail of C (Chernoff bound) is charged
``D_0``, the upper tail goes into the last group, and each ``D_c`` sum is cut with a geometric bound on what
remains. :func:`delta_upper_bound` is therefore an upper bound on δ(ε) (up to floating-point rounding), and
:func:`shuffled_epsilon` returns the smallest ε it finds with that bound at most δ: a valid ε, never below the
true one. :func:`closed_form_epsilon` is the paper's Theorem 3.1, a looser check.

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

**Vectorised where numpy and scipy are installed** (:class:`_FastClones`, :func:`_fast_hockey_stick`): ``D_c`` in
closed form, ``u·S_c(m−1) − v·S_c(m)`` with S_c the Bin(c, 1/2) survival function (scipy; Boost's incomplete beta,
accurate at c = 10¹² where lgamma differences are not), C's masses from its exact CDF, at most 2,048 groups of one
width over C's window (each charged D at its first c: an upper bound, D_c non-increasing), every scipy value allowed
a relative 10⁻¹¹ error added the pessimistic way. One window at n = 10¹² takes about 0.1 s of CPU (it took 2–5 s);
the figures are slightly tighter than the standard-library path's (whose per-group and lgamma slack the tests
measure). The group boundaries depend on n, so the bound is not monotone in n by construction; the ε grid of
:mod:`ldp.privacy.window_grid` makes the figure so (tested at consecutive n up to 10¹²).

Without numpy: standard library only (the privacy layer is client code). The work grows like sqrt(n) at most:
measured, each value of the docs' table (ε₀ ≤ 8, n ≤ 10⁸, δ = 10⁻⁸) takes under a second.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ldp.extras import available
from ldp.privacy.binary_shuffle import BINARY, binary_rr_epsilon, exact_max
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.krr_shuffle import KRR, krr_epsilon
from ldp.privacy.window_grid import check_delta, floor_delta, grid_search

__all__ = ["ShuffleGuarantee", "ShuffleStructure", "canonical_n", "generic_structure", "geometric_n", "k_rr_structure",
           "shuffled_epsilon", "shuffled_cost", "closed_form_epsilon", "delta_upper_bound", "TRUST_ASSUMPTION"]

TRUST_ASSUMPTION = ("the shuffler is trusted and is not the analyst: it strips identifiers and permutes the n "
                    "reports (n distinct users, one report each); the central guarantee holds against the analyst "
                    "only, while the shuffler and anyone who sees a report in transit get the local one")

_SLACK = 1e-4
"""Relative share of δ spent on the truncated tails (the lower tail of C, each cut D_c sum)."""
_GROUP_GROWTH = 5e-3
"""Target log-ratio of D between the ends of a group of c values (the bound's looseness per group)."""


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


def _log_binom(c: int, k: int) -> float:
    """ln of C(c, k)·2^-c, the Bin(c, 1/2) law at k (0 <= k <= c)."""
    return math.lgamma(c + 1) - math.lgamma(k + 1) - math.lgamma(c - k + 1) - c * math.log(2)


def _hockey_stick(c: int, u: float, v: float, floor: float) -> float:
    """An upper bound on D_c (module docstring): the exact sum, cut once a geometric bound on the rest is below
    ``floor`` or a ``_SLACK`` share of the sum so far (that bound is added)."""
    m = int(v * (c + 1) / (u + v)) + 1  # first x with u·x > v·(c + 1 - x)
    while m > 1 and u * (m - 1) > v * (c + 2 - m):
        m -= 1
    while m <= c and u * m <= v * (c + 1 - m):
        m += 1
    log_prev = _log_binom(c, m - 1)  # b(m - 1)
    if log_prev < -745.0:  # the whole tail underflows: bound it by u·b(m-1)/(1 - ρ) in logs
        rho = (c - m + 1) / m
        return math.exp(min(0.0, math.log(u) + log_prev - math.log1p(-rho))) if rho < 1 else 0.0
    prev = math.exp(log_prev)
    total = 0.0
    x = m
    while x <= c + 1:
        for y in range(x, min(x + 64, c + 2)):
            cur = prev * (c - y + 1) / y  # b(y) from b(y - 1)
            total += u * prev - v * cur
            prev = cur
        x = min(x + 64, c + 2)
        # the rest, sum over y >= x of (u·b(y-1) - v·b(y)), is at most u·S(x - 1) <= u·b(x-1)/(1 - ρ_{x-1})
        if x <= c + 1:
            rest = u * prev / (1.0 - (c - x + 1) / x)
            if rest <= max(floor, _SLACK * total):
                return total + rest
    return total


class _Clones:
    """The law of C ~ Bin(n-1, α) cut into groups of c values, for :func:`delta_upper_bound`."""

    def __init__(self, alpha: float, n: int, delta: float) -> None:
        size, p = n - 1, alpha
        self.lower_tail = 0.0
        self.starts: list[int] = [0]
        self.masses: list[float] = [1.0]
        if size == 0:
            return
        mean, sd = size * p, math.sqrt(size * p * (1 - p))
        # lowest c: Pr[C < lo] <= exp(-size·KL(lo/size || p)) (Chernoff) at most _SLACK·δ
        budget = _SLACK * delta
        lo = max(0, int(mean - sd))
        while lo > 0 and _chernoff_lower(size, p, lo) > budget:
            lo = max(0, lo - max(1, int(sd / 4)))
        self.lower_tail = _chernoff_lower(size, p, lo) if lo > 0 else 0.0
        hi = min(size, int(mean + 5 * sd) + 1)
        # D_c falls like exp(-κc), κ about ln(1/δ)/mean near the answer: a group [a, a + w) overstates its share
        # of δ by about κw. Central groups get w0 = _GROUP_GROWTH/κ; elsewhere w grows so that each group's
        # overstatement, pmf(a)·w·e^(κ(mean - a))·κw, stays that of a central group.
        kappa = math.log(1 / delta) / max(mean, 1.0)
        w0 = _GROUP_GROWTH / kappa
        centre = max(0, int(mean - kappa * sd * sd))  # where pmf(c)·e^(-κc), the weight of c in δ, peaks
        log_peak = _log_pmf(size, p, centre) + kappa * (mean - centre)
        self.starts, self.masses = [], []
        k = lo
        ratio = p / (1 - p)
        pmf = math.exp(_log_pmf(size, p, k))
        while k < hi:
            shift = min(50.0, max(-50.0, log_peak - math.log(max(pmf, 1e-300)) - kappa * (mean - k)))
            width = w0 * math.exp(shift / 2)
            if k < centre:  # below the peak the widths shrink towards it: stop halfway there
                width = min(width, max(w0, (centre - k) / 2))
            width = max(1, int(width))
            start, mass = k, 0.0
            for _ in range(min(width, hi - k)):
                mass += pmf
                pmf *= (size - k) / (k + 1) * ratio
                k += 1
            pmf = math.exp(_log_pmf(size, p, k)) if k <= size else 0.0  # no drift across groups
            self.starts.append(start)
            self.masses.append(mass)
        # the last group runs to size: its mass is everything not counted below it
        self.starts.append(hi)
        self.masses.append(max(0.0, 1.0 - sum(self.masses)))


_FAST_GROUPS = 512
"""Groups of clone counts over C's window in the vectorised bound (:class:`_FastClones`): each of equal width
(512: within 0.03 % of 2,048 groups' figure, and a window at n = 10¹² in about 0.4 s of CPU instead of 2)."""
_ETA = 1e-11
"""Relative error allowed each scipy binomial tail (Boost's incomplete beta: about 10⁻¹⁴); the vectorised bound adds
that share of every term it subtracts or sums, so it stays an upper bound when scipy is off by that much."""


def _vectorised() -> bool:
    """Whether the vectorised clone bound (numpy and scipy) is used; the standard-library path otherwise."""
    return available("numpy", "scipy")


class _FastClones:
    """The law of C ~ Bin(n-1, α) for :func:`_fast_delta_bound`: ``lower_tail`` = Pr[C < lo] (charged ``D_0``),
    then groups ``[starts[j], starts[j+1])`` of one width each over ``[lo, hi)``, and ``[hi, n-1]`` as the last
    (each charged ``D`` at its first c, an upper bound since ``D_c`` does not increase with c). ``lo`` is where
    the Chernoff bound on the lower tail drops below ``_SLACK·δ``, ``hi`` = mean + 5 sd; every mass is the exact
    one from scipy's binomial CDF or survival function (whichever is the smaller tail) plus ``_ETA`` of the
    terms differenced."""

    def __init__(self, alpha: float, n: int, delta: float) -> None:
        import numpy as np
        from scipy.stats import binom

        size = n - 1
        if size == 0:
            self.lower_tail, self.starts, self.masses = 0.0, np.zeros(1), np.ones(1)
            return
        mean, sd = size * alpha, math.sqrt(size * alpha * (1 - alpha))
        budget = _SLACK * delta
        lo = max(0, int(mean - sd))
        while lo > 0 and _chernoff_lower(size, alpha, lo) > budget:
            lo = max(0, lo - max(1, int(sd / 4)))
        hi = max(lo + 1, min(size, int(mean + 5 * sd) + 1))
        width = max(1, -(-(hi - lo) // _FAST_GROUPS))
        bounds = np.arange(lo, hi, width, dtype=np.float64)
        bounds = np.append(bounds, float(hi)) if bounds[-1] < hi else bounds
        below = binom.cdf(bounds - 1, size, alpha)  # Pr[C < b]
        above = binom.sf(bounds - 1, size, alpha)  # Pr[C >= b]
        upper = above[:-1] <= 0.5  # difference the smaller tail: its rounding is relative to the group's tail
        diff = np.where(upper, above[:-1] - above[1:], below[1:] - below[:-1])
        err = _ETA * np.where(upper, above[:-1] + above[1:], below[1:] + below[:-1])
        self.lower_tail = float(below[0]) * (1 + _ETA)
        self.starts = bounds
        self.masses = np.append(np.maximum(diff, 0.0) + err, above[-1] * (1 + _ETA))


def _fast_hockey_stick(c: Any, u: float, v: float) -> Any:
    """Upper bounds on D_c at each c of the array ``c``, in closed form: with S(k) = Pr[Bin(c, 1/2) >= k] (scipy),
    ``D_c = Σ_{x >= m} (u·b(x-1) − v·b(x)) = u·S(m−1) − v·S(m)``. The first positive term m is computed in floats
    and may be off by one: the sum from m is the largest over starting points (the terms are positive from m on and
    not before), so the largest over m−1, m, m+1 is D_c; each has ``_ETA`` of ``u·S(m−1) + v·S(m)`` added."""
    import numpy as np
    from scipy.stats import binom

    m0 = np.floor(v * (c + 1) / (u + v)) + 1
    tails = [binom.sf(m0 + k - 1, c, 0.5) for k in (-2, -1, 0, 1)]  # S(m0-2), ..., S(m0+1)
    best = np.zeros_like(c, dtype=np.float64)
    for k in range(3):
        a, b = tails[k], tails[k + 1]
        best = np.maximum(best, u * a - v * b + _ETA * (u * a + v * b))
    return best


def _fast_delta_bound(clones: _FastClones, structure: ShuffleStructure, eps: float) -> float:
    """:func:`_delta_bound` vectorised: ``ι·(Pr[C < lo]·u + Σ_groups Pr[C ∈ group]·D_{first c})``."""
    import numpy as np

    if eps >= structure.epsilon_pair:
        return 0.0
    u, v = _uv(structure.epsilon_pair, eps)
    total = clones.lower_tail * u + float(np.dot(clones.masses, _fast_hockey_stick(clones.starts, u, v)))
    return min(structure.informative * total, 1.0)


def _uv(eps0: float, eps: float) -> tuple[float, float]:
    """u = (e^ε₀ - e^ε)/(e^ε₀ + 1) and v = (e^(ε+ε₀) - 1)/(e^ε₀ + 1), divided through by e^ε₀ so that no
    intermediate overflows for any ε < ε₀ <= 700 (e^(ε+ε₀) would past ε + ε₀ ≈ 709.8)."""
    lift = 1.0 + math.exp(-eps0)
    return -math.expm1(eps - eps0) / lift, math.exp(eps) * -math.expm1(-(eps + eps0)) / lift


def _log_pmf(size: int, p: float, k: int) -> float:
    return (math.lgamma(size + 1) - math.lgamma(k + 1) - math.lgamma(size - k + 1)
            + k * math.log(p) + (size - k) * math.log1p(-p))


def _chernoff_lower(size: int, p: float, k: int) -> float:
    """Pr[Bin(size, p) < k] <= exp(-size·KL(k/size || p)) for k <= size·p."""
    a = k / size
    if a >= p:
        return 1.0
    kl = (a * math.log(a / p) if a > 0 else 0.0) + (1 - a) * math.log((1 - a) / (1 - p))
    return math.exp(-size * kl)


def _delta_bound(clones: _Clones, structure: ShuffleStructure, eps: float, delta: float) -> float:
    eps0, iota = structure.epsilon_pair, structure.informative
    if eps >= eps0:
        return 0.0
    u, v = _uv(eps0, eps)
    floor = _SLACK * delta / max(1, len(clones.starts)) / iota
    total = clones.lower_tail * u  # c below the first group: D_c <= D_0 = u
    for start, mass in zip(clones.starts, clones.masses, strict=True):
        if mass > 0.0:
            total += mass * _hockey_stick(start, u, v, floor / max(mass, 1e-300))
    return min(iota * total, 1.0)


def _delta_bound_at(clones: _Clones, structure: ShuffleStructure, delta: float, eps: float) -> float:
    return _delta_bound(clones, structure, eps, delta)


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
        return _fast_delta_bound(_FastClones(structure.clone_probability, n, delta_scale), structure, float(eps))
    return _delta_bound(_Clones(structure.clone_probability, n, delta_scale), structure, float(eps), delta_scale)


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


_BINARY_REACH = 10
"""Binary RR's exact search answers up to this many times its cap of users (:func:`~ldp.privacy.binary_shuffle.
exact_max`); beyond, the clone bounds do (they are below the cap's figure there, so the figure stays monotone)."""
_KRR_MIN = 100
"""k-RR's blanket (:mod:`ldp.privacy.krr_shuffle`) answers from this many users (below, its bands are too coarse to
be monotone in n; the clone bounds answer)."""
_KRR_RATIO = 1.02
"""The geometric grid of n the blanket is evaluated on (:func:`geometric_n`)."""


def geometric_n(n: int) -> int:
    """The largest ⌊1.02^j⌋ at most ``n``. k-RR's blanket figure wanders by up to about 6·10⁻³ of itself from n
    to n + 1 (its bands of U move with n; measured at ε₀ = 0.05, d = 10, n ≈ 1,600), so it is evaluated on this
    grid, each step (2 %) lowering ε by about 1 %: non-increasing in n (checked across steps in every regime, not
    proven), at a cost of at most about 1 % of ε (a figure for fewer users is valid for more)."""
    j = int(math.floor(math.log(n) / math.log(_KRR_RATIO)))
    while math.floor(_KRR_RATIO ** (j + 1)) <= n:
        j += 1
    while j > 0 and math.floor(_KRR_RATIO ** j) > n:
        j -= 1
    return max(1, int(math.floor(_KRR_RATIO ** j)))


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
    found = [_search(eps0, users, grid_delta, generic_structure(eps0), closed_form_epsilon(eps0, users, grid_delta))]
    if structure is not None and structure.name != "generic" and structure.clone_probability < 1.0:
        found.append(_search(eps0, users, grid_delta, structure, None))
    if binary and structure is not None and structure.binary and structure.epsilon_pair <= _BINARY_MAX \
            and available("numpy", "scipy") and n <= _BINARY_REACH * exact_max(grid_delta):
        # without the server extra, the clone bound alone; past ten times the search's cap, its figure (that of the
        # cap's users, about √10 times the exact one at n) is far above the k-RR clone bound (1.2-1.4 times it)
        found.append((binary_rr_epsilon(structure.epsilon_pair, n, delta)[0], BINARY))
    d = structure.values if structure is not None else None
    if binary and d is not None and d >= 3 and n >= _KRR_MIN and available("numpy", "scipy"):
        exact = krr_epsilon(structure.epsilon_pair, d, geometric_n(n), delta) if structure is not None else None
        if exact is not None:
            found.append((exact[0], KRR))
    eps, name = min(found)
    if eps >= eps0 * (1 - 1e-3):
        return none
    return ShuffleGuarantee(eps, delta, eps0, n, "numerical" if name == "generic" else
                            name if name in (BINARY, KRR) else f"numerical {name}")


def _search(eps0: float, n: int, delta: float, structure: ShuffleStructure,
            closed: float | None) -> tuple[float, str]:
    """The smallest ε (to 1e-5 relative, rounded up) whose δ bound with ``structure`` is at most δ, and the
    structure's name."""
    bound: Callable[[float], float]
    if _vectorised():
        fast = _FastClones(structure.clone_probability, n, delta)
        bound = functools.partial(_fast_delta_bound, fast, structure)
    else:
        clones = _Clones(structure.clone_probability, n, delta)
        bound = functools.partial(_delta_bound_at, clones, structure, delta)

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
