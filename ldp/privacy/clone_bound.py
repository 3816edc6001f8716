"""Evaluating the clone pair's hockey-stick divergence (:mod:`ldp.privacy.shuffle`, FMT21 Theorem 3.2):
``δ(ε) = ι · Σ_c Pr[C = c] · D_c(ε)`` with ``C ~ Bin(n − 1, α)`` and
``D_c(ε) = Σ_{x ≥ m_c} (u·b_c(x − 1) − v·b_c(x))``, always from above.

``D_c`` does not increase with c (``P_{c+1}``, ``Q_{c+1}`` are ``P_c``, ``Q_c`` plus the same fair coin), so the sum
over a group of c is at most the group's mass times ``D`` at its first c; the lower tail of C (a Chernoff bound) is
charged ``D_0``, the upper tail goes into the last group, and each ``D_c`` sum is cut with a geometric bound on what
remains: :func:`delta_bound` is an upper bound on δ(ε), up to floating-point rounding.

**Standard library** (:class:`Clones`, :func:`hockey_stick`, :func:`delta_bound`): the privacy layer is client
code. Groups of c whose ends differ in ``D`` by about :data:`_GROUP_GROWTH` in log; the work grows like √n at most
(each value of the docs' table, ε₀ ≤ 8, n ≤ 10⁸, δ = 10⁻⁸, takes under a second).

**Vectorised where numpy and scipy are installed** (:class:`FastClones`, :func:`fast_hockey_stick`,
:func:`fast_delta_bound`): ``D_c`` in closed form, ``u·S_c(m − 1) − v·S_c(m)`` with ``S_c`` the Bin(c, 1/2) survival
function (scipy; Boost's incomplete beta, accurate at c = 10¹² where lgamma differences are not), C's masses from
its exact CDF, :data:`_FAST_GROUPS` groups of one width over C's window (each charged D at its first c), every scipy
value allowed a relative :data:`_ETA` error added the pessimistic way. One window at n = 10¹² takes 0.2–0.4 s of
CPU; the figures are slightly tighter than the standard-library path's (whose per-group and lgamma slack the tests
measure). The group boundaries depend on n, so neither bound is monotone in n by construction: the n grids and the
ε grid of :mod:`ldp.privacy.window_grid` make the figure so.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldp.privacy.shuffle import ShuffleStructure

__all__ = ["Clones", "FastClones", "delta_bound", "delta_bound_at", "fast_delta_bound", "fast_hockey_stick",
           "hockey_stick", "uv"]

_SLACK = 1e-4
"""Relative share of δ spent on the truncated tails (the lower tail of C, each cut D_c sum)."""
_GROUP_GROWTH = 5e-3
"""Target log-ratio of D between the ends of a group of c values (the bound's looseness per group)."""


def _log_binom(c: int, k: int) -> float:
    """ln of C(c, k)·2^-c, the Bin(c, 1/2) law at k (0 <= k <= c)."""
    return math.lgamma(c + 1) - math.lgamma(k + 1) - math.lgamma(c - k + 1) - c * math.log(2)


def hockey_stick(c: int, u: float, v: float, floor: float) -> float:
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


class Clones:
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
"""Groups of clone counts over C's window in the vectorised bound (:class:`FastClones`): each of equal width
(512: within 0.03 % of 2,048 groups' figure, and a window at n = 10¹² in about 0.4 s of CPU instead of 2)."""
_ETA = 1e-11
"""Relative error allowed each scipy binomial tail (Boost's incomplete beta: about 10⁻¹⁴); the vectorised bound adds
that share of every term it subtracts or sums, so it stays an upper bound when scipy is off by that much."""


class FastClones:
    """The law of C ~ Bin(n-1, α) for :func:`fast_delta_bound`: ``lower_tail`` = Pr[C < lo] (charged ``D_0``),
    then groups ``[starts[j], starts[j+1])`` of one width each over ``[lo, hi)``, and ``[hi, n-1]`` as the last
    (each charged ``D`` at its first c, an upper bound since ``D_c`` does not increase with c). ``lo`` is where
    the Chernoff bound on the lower tail drops below ``_SLACK·δ``, ``hi`` = mean + 5 sd; every mass is the exact
    one from scipy's binomial CDF or survival function (whichever is the smaller tail) plus ``_ETA`` of the
    terms differenced."""

    def __init__(self, alpha: float, n: int, delta: float) -> None:
        import numpy as np

        from ldp.privacy.light_scipy import binom

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


def fast_hockey_stick(c: Any, u: float, v: float) -> Any:
    """Upper bounds on D_c at each c of the array ``c``, in closed form: with S(k) = Pr[Bin(c, 1/2) >= k] (scipy),
    ``D_c = Σ_{x >= m} (u·b(x-1) − v·b(x)) = u·S(m−1) − v·S(m)``. The first positive term m is computed in floats
    and may be off by one: the sum from m is the largest over starting points (the terms are positive from m on and
    not before), so the largest over m−1, m, m+1 is D_c; each has ``_ETA`` of ``u·S(m−1) + v·S(m)`` added."""
    import numpy as np

    from ldp.privacy.light_scipy import binom

    m0 = np.floor(v * (c + 1) / (u + v)) + 1
    tails = [binom.sf(m0 + k - 1, c, 0.5) for k in (-2, -1, 0, 1)]  # S(m0-2), ..., S(m0+1)
    best = np.zeros_like(c, dtype=np.float64)
    for k in range(3):
        a, b = tails[k], tails[k + 1]
        best = np.maximum(best, u * a - v * b + _ETA * (u * a + v * b))
    return best


def fast_delta_bound(clones: FastClones, structure: ShuffleStructure, eps: float) -> float:
    """:func:`delta_bound` vectorised: ``ι·(Pr[C < lo]·u + Σ_groups Pr[C ∈ group]·D_{first c})``."""
    import numpy as np

    if eps >= structure.epsilon_pair:
        return 0.0
    u, v = uv(structure.epsilon_pair, eps)
    total = clones.lower_tail * u + float(np.dot(clones.masses, fast_hockey_stick(clones.starts, u, v)))
    return min(structure.informative * total, 1.0)


def uv(eps0: float, eps: float) -> tuple[float, float]:
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


def delta_bound(clones: Clones, structure: ShuffleStructure, eps: float, delta: float) -> float:
    eps0, iota = structure.epsilon_pair, structure.informative
    if eps >= eps0:
        return 0.0
    u, v = uv(eps0, eps)
    floor = _SLACK * delta / max(1, len(clones.starts)) / iota
    total = clones.lower_tail * u  # c below the first group: D_c <= D_0 = u
    for start, mass in zip(clones.starts, clones.masses, strict=True):
        if mass > 0.0:
            total += mass * hockey_stick(start, u, v, floor / max(mass, 1e-300))
    return min(iota * total, 1.0)


def delta_bound_at(clones: Clones, structure: ShuffleStructure, delta: float, eps: float) -> float:
    return delta_bound(clones, structure, eps, delta)
