"""Shuffled k-ary randomized response at any d >= 3: the privacy blanket's pair, computed exactly through a sufficient
statistic, and an exact lower bound from a real dataset beside it.

k-RR over d values reports its input with probability ``p = e^ε₀/(e^ε₀ + d − 1)`` and each other value with
``q = 1/(e^ε₀ + d − 1)``. Every report is, with probability ``γ = d·q``, drawn uniformly from all d values whatever
the input (the "blanket"), and otherwise is the input itself: R(x) = (1 − γ)·1_x + γ·Unif (Balle, Bell, Gascón and
Nissim, "The privacy blanket of the shuffle model", CRYPTO 2019, §4). Koskela, Heikkilä and Honkela ("Tight
accounting in the shuffle model of differential privacy", arXiv:2106.00477) evaluate the resulting pair numerically
for k-RR; here it is reduced to a one-dimensional sum per group and bounded with stated dominations.

**The pair (valid for every dataset).** Tell the analyst which of the other n − 1 users were *not* blanket (it knows
their inputs, hence their reports): the real histogram is a function of that view, so the view's δ(ε) bounds the
real one. What is left is the histogram H of the B ~ Bin(n − 1, γ) blanket reports and user 1's, which holds x₀
(P) or x₁ (Q). Let M be H's count on S = {x₀, x₁}, J = 1 if user 1's report is in S (probability ι = p + q under
both), C ~ Bin(n − 1, 2q) the other blanket reports in S ("clones") and U ~ Bin(n − 1, (d − 2)q) those outside S;
M = C + J, and T = B + 1 − M (the count outside S) is U when J = 1. Outside S, user 1's report and a blanket one
are both uniform on the d − 2 values, and (M, T) has the same law under P and Q, so given (M, T) = (m, t) the pair
is the count H₀ of x₀:

    P = π·(Bern(s) ∗ Bin(m − 1, ½)) + (1 − π)·Bin(m, ½),   Q the same with Bern(1 − s),

``s = e^ε₀/(e^ε₀ + 1)``, π = Pr[J = 1 | m, t], whose odds are (e^ε₀ + 1)·m/(2t). δ(ε) is the average over (M, T)
of these pairs' δ. The pair does not depend on the dataset: no worst case is searched.

**Dominations used to compute it** (each one a post-processing, so they hold for every ε at once and for the
privacy-loss law that is composed over windows):

* *more clones, smaller δ*: at fixed π the pair at m + 1 is the pair at m plus one fair coin (the same kernel under
  P and Q), so a group of clone counts c = m − 1 in [c₁, c₂] is dominated by c₁;
* *larger π, larger δ*: the pair at π is the pair at π' >= π post-processed by "keep it with probability π/π',
  otherwise replace it by a fresh draw of Bin(m, ½)"; better, it *is* the mixture of the pair at π' (weight π/π')
  and of a zero-loss pair (Bin(m, ½) twice). So each group is the pair at (c₁, π*) with weight
  Pr[J = 1, group]/π*, the rest of its mass at loss 0, where π* bounds π over the group: π grows with m and falls
  with t = U, so π* = π(c₂ + 1, u) for a band U >= u;
* *fewer blanket reports outside S, larger π*: within a group of C, U is given the law Bin(n − 2 − c₂, θ) of the
  group's largest c (θ = (d − 2)q/(1 − 2q)), stochastically smaller than U's law given any c of the group (C and U
  are multinomial), and every band's weight is read from it: mass only moves to larger π*;
* *cuts*: C below or above its window, U below its lowest band, H₀ outside its window: their mass (each at most
  ``_TAIL``·δ) is charged at the top loss ε₀ (no loss of k-RR exceeds it) and added to δ.

Groups of C have relative width ``_GROUP`` (the loss scale is overstated by about half of it), bands of U are
``_BANDS`` steps of its standard deviation. δ(ε) = Σ (P − e^ε·Q)₊ over all components plus the charges; masses are
moved ``_RHO`` of themselves and losses ``_SHIFT`` the pessimistic way. The two directions are equal (swap x₀, x₁).

**A lower bound from a real dataset.** When every other user holds one value y outside S, the real histogram's
sufficient statistic is (M, count on y, H₀) and, given those, the pair is the one above with π = Pr[J = 1 | m, count
on y]; M has the same law (J + Bin(n − 1, 2q)). The pair's δ is convex in π (a sum of positive parts of affine
functions) and falls with m, so within a group of M its average is at least the pair at the group's largest m with
π = Pr[J = 1 | group] (Jensen); tails left out. That δ is below the real dataset's, so its ε (rounded down) is a
lower bound on any valid figure: :attr:`KrrWorstCase.lower`. The two are within a few per cent everywhere
measured, so the all-on-a-third-value dataset is (nearly) the worst case and the blanket pair is (nearly) tight.

**Monotone.** In δ: the ε returned is the smallest point of a fixed lattice (ε₀·j/2³²) where the computed δ(ε),
which does not depend on the δ asked for except through cuts of at most 10⁻¹⁰·δ, is within δ. In n: the true pair's
δ falls with n (one more user is one more independent report: a post-processing), but the computed bound regroups
at each n; it is checked to be non-increasing in n on grids of n in the tests, not guaranteed.

Server side: numpy and scipy (the ``server`` extra), imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["KRR", "KrrWorstCase", "krr_worst_case", "krr_epsilon"]

KRR = "k-RR blanket (exact sufficient statistic)"
"""The method name of a figure from this module."""

_TAIL = 1e-10
"""Each cut (C below and above its window, U below its lowest band, H₀ outside its window) leaves out at most this
share of δ, charged at the top loss."""
_GROUP = 2e-3
"""Relative width of a group of clone counts (at least 1)."""
_BANDS = 1.5
"""Width of a band of U, in standard deviations of U (π*'s odds then exceed π's by about 1.5/√U at most)."""
_STEPS = 3
"""Bands of that width on each side of U's mean; one more runs down to each group's cut and one up from the top
(little mass: their π* is looser)."""
_RHO = 1e-9
"""Every mass is taken within this share of the true one: P moved up and Q down."""
_SHIFT = 2 * math.atanh(_RHO) + 1e-12
"""Losses are read this much higher (float rounding of P and Q and of their logarithms)."""
_LATTICE = 2**32
"""ε is found on the lattice ε₀·j/2³² (monotone in δ by construction)."""
_MAX_ENTRIES = 3e7
"""The most entries (H₀ values summed over components) computed; beyond (n around 10¹¹ at d = 3) the function
declines (returns ``None``) and the caller keeps the clone bound."""


@dataclass(frozen=True)
class _Pair:
    """Losses ``loss`` (sorted up) with P's and Q's masses at each, and ``extra`` (mass charged at the top loss)."""

    loss: Any
    p: Any
    q: Any
    extra: float
    top: float
    shift: float = _SHIFT

    @functools.cached_property
    def _above(self) -> tuple[Any, Any]:
        import numpy as np

        up_p = np.append(np.cumsum(self.p[::-1])[::-1], 0.0)
        up_q = np.append(np.cumsum(self.q[::-1])[::-1], 0.0)
        return up_p, up_q

    def delta(self, eps: float) -> float:
        """Σ over losses above ε of (P − e^ε·Q), plus the charges (which sit at ε₀: counted while ε < ε₀)."""
        import numpy as np

        up_p, up_q = self._above
        i = int(np.searchsorted(self.loss, eps - self.shift, side="right"))
        body = max(float(up_p[i]) - math.exp(eps) * float(up_q[i]), 0.0)
        return min(1.0, body + (self.extra if eps < self.top else 0.0))


def _epsilon(pair: _Pair, delta: float, top: float, *, up: bool) -> float:
    """On the lattice ε = top·j/2³²: the smallest point with δ(ε) <= delta (``up``: a valid figure), or the largest
    with δ(ε) > delta (``up`` false: for a lower bound, the crossing lies above it)."""
    lo, hi = 0, _LATTICE  # δ(top) = 0 <= delta always (no loss exceeds ε₀)
    if pair.delta(0.0) <= delta:
        return 0.0
    while hi - lo > 1:  # invariant: δ(lo) > delta >= δ(hi)
        mid = (lo + hi) // 2
        if pair.delta(top * mid / _LATTICE) > delta:
            lo = mid
        else:
            hi = mid
    return top * (hi if up else lo) / _LATTICE


@dataclass(frozen=True)
class KrrWorstCase:
    """The result for n shuffled k-RR reports at ``delta``: ``epsilon``, valid for every dataset; ``lower``, an
    exact lower bound (the all-on-a-third-value dataset, module docstring); ``components``, how many grouped pairs
    were computed; ``loss`` and ``mass``, the dominating pair's privacy losses (sorted up) and P's masses, the
    charged mass at ``top`` = ε₀."""

    epsilon: float
    lower: float
    delta: float
    components: int
    loss: Any
    mass: Any
    top: float

    def losses(self) -> tuple[Any, Any]:
        """A privacy-loss law (losses sorted up, masses) of a pair that every dataset's shuffled k-RR output is a
        post-processing of, in either direction (the pair is symmetric): composing such laws, one per window,
        bounds δ for any datasets. The same contract as :meth:`ldp.privacy.binary_shuffle.WorstCase.losses`."""
        return self.loss, self.mass


def _check(eps0: float, d: int, n: int, delta: float) -> None:
    if isinstance(eps0, bool) or not isinstance(eps0, (int, float)) or not (0.0 < eps0 <= 50.0):
        raise ValueError(f"the local ε₀ must be a number in (0, 50], got {eps0!r}")
    if isinstance(d, bool) or not isinstance(d, int) or d < 3:
        raise ValueError(f"k-RR here needs d >= 3 values (d = 2: ldp.privacy.binary_shuffle), got {d!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (reports shuffled together, one per user) must be an int >= 1, got {n!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < delta < 1.0):
        raise ValueError(f"δ must be in (0, 1), got {delta!r}")


def _clone_groups(lo: int, hi: int) -> list[tuple[int, int]]:
    """Groups [c₁, c₂] covering lo..hi, boundaries at the fixed points 0, 1, 2, … with width max(1, ⌊c·_GROUP⌋)
    (the same cut points at every n, so groups at n and n + 1 agree where they overlap)."""
    groups = []
    c = lo
    while c <= hi:
        width = max(1, int(c * _GROUP))
        end = min(hi, (c // width + 1) * width - 1)  # aligned to multiples of the width: fixed boundaries
        groups.append((c, end))
        c = end + 1
    return groups


def _branches(c: int, s: float, tail: float) -> tuple[Any, Any, Any, float]:
    """At c clones, on the window of H₀ that leaves out at most ``tail`` of each branch on each side: the informative
    branch under P (Bern(s) ∗ Bin(c, ½)) and under Q (Bern(1 − s) ∗ Bin(c, ½)), the other branch (Bin(c + 1, ½)),
    and a bound on the mass of P (any π) outside the window."""
    import numpy as np
    from scipy.stats import binom

    m = c + 1
    sd = math.sqrt(m) / 2
    z = _z(tail) + 1.0
    lo, hi = max(0, int(m / 2 - z * sd) - 1), min(m, int(m / 2 + z * sd) + 2)
    h = np.arange(lo, hi + 1)
    g_before, g_at = binom.pmf(h - 1, c, 0.5), binom.pmf(h, c, 0.5)
    r = binom.pmf(h, m, 0.5)
    a = s * g_before + (1 - s) * g_at
    b = (1 - s) * g_before + s * g_at
    # the informative branch outside [lo, hi] needs Bin(c, ½) below lo or above hi − 1; the other, Bin(m, ½) outside
    out = float(binom.cdf(lo - 1, c, 0.5) + binom.sf(hi - 1, c, 0.5) + binom.cdf(lo - 1, m, 0.5)
                + binom.sf(hi, m, 0.5))
    return a, b, r, out


def _mixed(branches: tuple[Any, Any, Any, float], pi: float) -> tuple[Any, Any, Any]:
    """The pair at π from :func:`_branches`: (loss, P, Q) where both are positive."""
    import numpy as np

    a, b, r, _ = branches
    big_p, big_q = pi * a + (1 - pi) * r, pi * b + (1 - pi) * r
    keep = (big_p > 0) & (big_q > 0)
    big_p, big_q = big_p[keep], big_q[keep]
    return np.log(big_p) - np.log(big_q), big_p, big_q


@functools.lru_cache(maxsize=64)
def _z(tail: float) -> float:
    from scipy.stats import norm

    return float(norm.isf(min(tail, 0.25)))


def _windows(size: int, prob: float, tail: float) -> tuple[int, int, float]:
    """Bin(size, prob)'s window [lo, hi] leaving out at most ``tail`` on each side (found on scipy's cdf and sf,
    whose tails keep their relative precision where ``isf`` does not), and the mass left out."""
    from scipy.stats import binom

    if size == 0:
        return 0, 0, 0.0
    mean = size * prob
    lo_k, hi_k = 0, int(mean)  # largest lo with cdf(lo − 1) <= tail: bisect on cdf(k − 1) <= tail
    if float(binom.cdf(hi_k - 1, size, prob)) <= tail:
        lo_k = hi_k
    while hi_k - lo_k > 1:
        mid = (lo_k + hi_k) // 2
        lo_k, hi_k = (mid, hi_k) if float(binom.cdf(mid - 1, size, prob)) <= tail else (lo_k, mid)
    lo = lo_k
    a, b = int(mean), size  # smallest hi with sf(hi) <= tail
    if float(binom.sf(a, size, prob)) <= tail:
        b = a
    while b - a > 1:
        mid = (a + b) // 2
        a, b = (mid, b) if float(binom.sf(mid, size, prob)) > tail else (a, mid)
    hi = b
    out = (float(binom.cdf(lo - 1, size, prob)) if lo > 0 else 0.0) + float(binom.sf(hi, size, prob))
    return lo, hi, out


@functools.lru_cache(maxsize=16)
def krr_worst_case(eps0: float, d: int, n: int, delta: float) -> KrrWorstCase | None:
    """n shuffled reports of k-RR over d >= 3 values at ε₀ (p = e^ε₀/(e^ε₀ + d − 1)): the blanket pair computed
    through its sufficient statistic (module docstring), ε at ``delta`` valid for every dataset, with an exact lower
    bound beside it; ``None`` when the computation would exceed ``_MAX_ENTRIES`` (n beyond about 10¹¹ at d = 3,
    later at larger d: the caller keeps the clone bound). ``ValueError`` for bad input. Cached."""
    import numpy as np
    from scipy.stats import binom

    _check(eps0, d, n, delta)
    eps0, delta = float(eps0), float(delta)
    e0 = math.exp(eps0)
    q = 1.0 / (e0 + d - 1)
    iota = (e0 + 1.0) * q
    s = e0 / (e0 + 1.0)
    clone, outside = 2.0 * q, (d - 2) * q
    theta = outside / (1.0 - clone)
    tail = _TAIL * delta
    others = n - 1
    c_lo, c_hi, extra = _windows(others, clone, tail)
    extra *= iota
    # bands of U: fixed steps of its standard deviation about its mean, then one down to each group's cut
    mean_u = others * outside
    sd_u = math.sqrt(max(others * outside * (1 - outside), 1.0))
    groups = _clone_groups(c_lo, c_hi)
    width = 2 * (_z(tail) + 1.0) * math.sqrt(c_hi + 1) / 2 + 4
    if len(groups) * (_STEPS + 3) * width > _MAX_ENTRIES:
        return None
    step = max(1, int(_BANDS * sd_u))  # at small n, one band per value of U
    steps = [int(mean_u) + k * step for k in range(-_STEPS, _STEPS + 1)]
    z = _z(tail) + 1.0
    losses, ps, qs = [], [], []
    low_loss, low_p, low_q = [], [], []
    shares = 0.0
    for c1, c2 in groups:
        informative = iota * float(binom.cdf(c2, others, clone) - (binom.cdf(c1 - 1, others, clone) if c1 else 0.0))
        if informative <= 0.0:
            continue
        rest = others - c2  # U given C = c2 is Bin(others − c2, θ): stochastically the smallest of the group
        cut = max(0, int(rest * theta - z * math.sqrt(rest * theta * (1 - theta))) - 1)
        bands = sorted({cut} | {u for u in steps if u > cut})
        cdf = binom.cdf(np.array(bands) - 1, rest, theta)
        extra += informative * float(cdf[0])  # U below the lowest band: charged
        branches = _branches(c1, s, tail)
        for u, weight in zip(bands, np.append(cdf[1:], 1.0) - cdf, strict=True):
            if weight <= 0.0:
                continue
            pi = 1.0 if u == 0 else 1.0 / (1.0 + 2.0 * u / ((e0 + 1.0) * (c2 + 1)))
            loss, big_p, big_q = _mixed(branches, pi)
            share = informative * float(weight) / pi
            shares += share
            losses.append(loss)
            ps.append(big_p * share)
            qs.append(big_q * share)
            extra += share * branches[3]
        # the lower bound: every other user on one value outside S (Jensen within the group, module docstring)
        total = informative + (1 - iota) * float(binom.cdf(c2 + 1, others, clone) - binom.cdf(c1, others, clone))
        loss, big_p, big_q = _mixed(_branches(c2, s, tail), informative / total)
        low_loss.append(loss)
        low_p.append(big_p * total)
        low_q.append(big_q * total)
    pair = _assemble(losses, ps, qs, extra * (1 + _RHO), eps0, pessimistic=True)
    low = _assemble(low_loss, low_p, low_q, 0.0, eps0, pessimistic=False)
    eps = _epsilon(pair, delta, eps0, up=True)
    lower = min(_epsilon(low, delta, eps0, up=False), eps)
    # the law to compose: the components' losses (read _SHIFT higher) under P, the mass the groups left at loss 0
    # (each group's weight beyond Pr[J = 1, group]/π*), the charges at ε₀
    loss = np.concatenate([np.minimum(pair.loss + _SHIFT, eps0), [0.0, eps0]])
    mass = np.concatenate([pair.p, [max(0.0, 1.0 - shares), pair.extra]])
    order = np.argsort(loss, kind="stable")
    return KrrWorstCase(eps, lower, delta, len(losses), loss[order], mass[order], eps0)


def _assemble(losses: list[Any], ps: list[Any], qs: list[Any], extra: float, top: float, *,
              pessimistic: bool) -> _Pair:
    import numpy as np

    if not losses:
        return _Pair(np.zeros(1), np.zeros(1), np.zeros(1), extra, top, _SHIFT if pessimistic else -_SHIFT)
    loss, p, q = np.concatenate(losses), np.concatenate(ps), np.concatenate(qs)
    order = np.argsort(loss, kind="stable")
    loss, p, q = loss[order], p[order], q[order]
    if pessimistic:
        p, q = p * (1 + _RHO), q * (1 - _RHO)
    else:
        p, q = p * (1 - _RHO), q * (1 + _RHO)
    return _Pair(loss, p, q, extra, top, _SHIFT if pessimistic else -_SHIFT)


def krr_epsilon(eps0: float, d: int, n: int, delta: float) -> tuple[float, float] | None:
    """The central ε at ``delta`` of n shuffled k-RR reports (d >= 3 values, ε₀), valid for every dataset, and an
    exact lower bound on any valid figure; ``None`` where :func:`krr_worst_case` declines."""
    found = krr_worst_case(eps0, d, n, delta)
    return None if found is None else (found.epsilon, found.lower)
