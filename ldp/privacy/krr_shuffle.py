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
* *bins of H₀*: given (m, π) the loss is 2·atanh(π·tanh(ε₀/2)·(2h/m − 1)), increasing in h, and P's mass over a
  run of h is a sum of binomial cdf differences (Σ Bin(m, ½)(h)·2h/m = Σ Bin(m − 1, ½)(h − 1)): runs of h (about
  ``_BINS`` across ±z standard deviations, one run for each side beyond) keep P's mass exactly and read the loss at
  the run's top (Q = P·e^(−loss)), which raises Σ P·(1 − e^(ε − loss))₊ at every ε and in every composition;
* *a loss lattice*: losses are then rounded up to 0, ±``_LOSS0``·(1 + ``_LOG_STEP``)^j (down for the lower bound)
  and merged there, so no sort of the components is needed;
* *cuts*: C below or above its window, U below its lowest band (a normal quantile, or 0 when that leaves out
  more), components of share at most ``_TAIL``·δ: their mass (each at most ``_TAIL``·δ) is charged at the top loss
  ε₀ (no loss of k-RR exceeds it) and added to δ.

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
δ falls with n (one more user is one more independent report: a post-processing). Groups of C and bins of H₀ have
fixed boundaries (they depend on c and δ only), beyond ``_N_MAX`` users the figure at ``_N_MAX`` is returned; but
U's bands move with n, so the computed bound is checked to be non-increasing in n in the tests (up to 10⁻⁴ of itself:
2·10⁻⁵ measured at n = 10⁵), not guaranteed.

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
"""Bands of that width on each side of U's mean; one more runs up from the top; below, bands of relative width
``_SHRINK`` down to each group's cut (little mass: their π* is looser)."""
_SHRINK = 0.2
"""Relative width of the bands of U below the fixed steps: π*'s odds exceed π's by at most 1/(1 − _SHRINK) there."""
_RHO = 1e-9
"""Every mass is taken within this share of the true one: P moved up and Q down."""
_SHIFT = 2 * math.atanh(_RHO) + 1e-12
"""Losses are read this much higher (float rounding of P and Q and of their logarithms)."""
_LATTICE = 2**32
"""ε is found on the lattice ε₀·j/2³² (monotone in δ by construction)."""
_BINS = 1000
"""Bins of H₀ across its window in a component (one value of H₀ a bin below that): the loss is read at each bin's
top, so ε is overstated by at most the loss's rise over one bin, about 4/_BINS of the loss at the window's edge."""
_LOG_STEP = 1e-4
"""Relative step of the lattice that losses are rounded to (ε moves by about this share)."""
_LOSS0 = 1e-15
"""The lattice's smallest non-zero |loss|."""
_N_MAX = 10**15
"""Beyond this many users the figure at ``_N_MAX`` is returned (valid for more users, module docstring; the same
cap at every δ, so it stays monotone in δ). The computation's cost does not grow with n; the cap keeps h, m and
2h − m exact in floats."""


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


def _bin_masses(bounds: Any, size: int, prob: float) -> Any:
    """Bin(size, prob)'s mass on each [b_i, b_{i+1}) of the sorted integer ``bounds``: differences of the cdf below
    the mean and of the sf above it (scipy's, which keep their relative precision in the tails, about 10⁻¹² as
    checked against exact sums), the bin across the mean as 1 − cdf − sf. Never negative."""
    import numpy as np
    from scipy.stats import binom

    bounds = np.asarray(bounds, dtype=np.int64)
    k = int(np.searchsorted(bounds - 1, size * prob, side="left"))  # bounds[:k] − 1 lie below the mean
    low = binom.cdf(bounds[:k] - 1, size, prob) if k else np.zeros(0)
    high = binom.sf(bounds[k:] - 1, size, prob) if k < len(bounds) else np.zeros(0)
    parts = [np.diff(low)]
    if 0 < k < len(bounds):
        parts.append(np.array([1.0 - float(low[-1]) - float(high[0])]))
    parts.append(-np.diff(high))
    return np.maximum(np.concatenate(parts), 0.0)


@dataclass(frozen=True)
class _Grid:
    """At c clones (m = c + 1 reports in S): bins [b_i, b_{i+1}) of H₀ over 0..m, with R = Σ Bin(m, ½)(h) and
    S = Σ Bin(m, ½)(h)·2h/m over each, and y = 2h/m − 1 at each bin's first and last h."""

    r: Any
    s: Any
    y_first: Any
    y_last: Any


def _grid(c: int, z: float) -> _Grid:
    """Bins of H₀ at c clones: stride-wide within ``z`` standard deviations of m/2 (the stride keeps the window to
    about ``_BINS`` bins; 1 below that), and one bin for each side beyond. The grid depends on c and δ only, not
    on n or π: groups keep the same bins at every n.

    Sums in closed form: Bin(m, ½)(h)·(2h/m) = Bin(c, ½)(h − 1), so over [b₁, b₂) Σ Bin(m, ½)(h)·y_h =
    ½·(Bin(c, ½)(b₁ − 1) − Bin(c, ½)(b₂ − 1)) (a telescoping sum); S = R + that."""
    import numpy as np
    from scipy.stats import binom

    m = c + 1
    sd = math.sqrt(m) / 2
    lo, hi = max(0, int(m / 2 - z * sd) - 1), min(m, int(m / 2 + z * sd) + 2)
    stride = max(1, -(-(hi - lo + 1) // _BINS))
    bounds = np.unique(np.concatenate([[0], np.arange(lo, hi + 1, stride), [hi + 1, m + 1]]))
    bounds = bounds[bounds <= m + 1]
    r = _bin_masses(bounds, m, 0.5)
    g = binom.pmf(bounds - 1, c, 0.5)
    first, last = bounds[:-1], bounds[1:] - 1
    s = np.maximum(r + 0.5 * (g[:-1] - g[1:]), 0.0)
    single = first == last  # one h: exact, no cancellation where 2h/m is small
    s[single] = r[single] * (2.0 * first[single] / m)
    return _Grid(r, s, (2.0 * first - m) / m, (2.0 * last - m) / m)


def _component(grid: _Grid, pis: Any, kappa: float, *, upper: bool) -> tuple[Any, Any]:
    """The pairs at (m, π) for each π of ``pis`` on the grid's bins (rows): P's mass Σ Bin(m, ½)(h)·(1 + πκy_h) =
    (1 − πκ)·R + πκ·S (two non-negative terms), its loss 2·atanh(πκy) (κ = tanh(ε₀/2): P(h)/Q(h) = (1 + πκy)/
    (1 − πκy)) read at the bin's last h (``upper``: the largest loss in the bin) or first h (the smallest). Rounding
    losses up with P's masses kept, Q = P·e^(−loss), only raises Σ P·(1 − e^(ε − loss))₊ for every ε, and every
    composition of such laws (the pessimistic privacy-loss law); rounding down only lowers them (the lower bound)."""
    import numpy as np

    pk = np.asarray(pis, dtype=float)[:, None] * kappa
    big_p = (1.0 - pk) * grid.r + pk * grid.s
    loss = 2.0 * np.arctanh(pk * (grid.y_last if upper else grid.y_first))
    return loss, big_p


class _Lattice:
    """Losses rounded to the lattice 0, ±_LOSS0·(1 + _LOG_STEP)^j (j >= 0): up for a figure, down for a lower bound
    (each loss moves by at most a share _LOG_STEP of itself, or to 0 or ±_LOSS0 near 0), P's masses summed per point
    (a merge of outcomes at one loss: the law is the same). Sorted by construction, no sort of the components."""

    def __init__(self, *, upper: bool) -> None:
        self.upper = upper
        self.codes: list[Any] = []
        self.masses: list[Any] = []

    def add(self, loss: Any, mass: Any) -> None:
        import numpy as np

        loss, mass = np.ravel(loss), np.ravel(mass)
        keep = mass > 0
        loss, mass = loss[keep], mass[keep]
        size = np.abs(loss)
        t = np.log(np.maximum(size, _LOSS0) / _LOSS0) / math.log1p(_LOG_STEP)
        away = self.upper == (loss > 0)  # round |loss| up (away from 0) or down (towards 0)
        j = np.where(away, np.ceil(t), np.floor(t))
        code = np.where(size < _LOSS0, np.where(away & (loss != 0), 1, 0), j.astype(np.int64) + 1)
        self.codes.append(np.where(loss < 0, -code, code).astype(np.int64))
        self.masses.append(mass)

    def law(self) -> tuple[Any, Any]:
        """The lattice's losses (sorted up) and P's masses on them (points with mass only)."""
        import numpy as np

        if not self.codes:
            return np.zeros(0), np.zeros(0)
        codes = np.concatenate(self.codes)
        low = int(codes.min())
        mass = np.bincount(codes - low, weights=np.concatenate(self.masses))
        at = np.nonzero(mass > 0)[0]
        code = at + low
        size = np.where(code == 0, 0.0, _LOSS0 * np.exp((np.abs(code) - 1) * math.log1p(_LOG_STEP)))
        return np.sign(code) * size, mass[at]


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
    bound beside it. Beyond ``_N_MAX`` users the figure at ``_N_MAX`` is returned (valid: the view with n users is a
    post-processing of the view with fewer). ``None`` is kept in the signature for callers (never returned now).
    ``ValueError`` for bad input. Cached."""
    _check(eps0, d, n, delta)
    return _compute(float(eps0), d, min(n, _N_MAX), float(delta))


def _compute(eps0: float, d: int, n: int, delta: float) -> KrrWorstCase:
    import numpy as np

    e0 = math.exp(eps0)
    q = 1.0 / (e0 + d - 1)
    iota = (e0 + 1.0) * q
    kappa = math.tanh(eps0 / 2.0)  # 2s − 1, s = e^ε₀/(e^ε₀ + 1)
    clone, outside = 2.0 * q, (d - 2) * q
    theta = outside / (1.0 - clone)
    tail = max(_TAIL * delta, 5e-324)
    z = _z(tail) + 1.0
    others = n - 1
    c_lo, c_hi, extra = _windows(others, clone, tail)
    extra *= iota
    # bands of U: fixed steps of its standard deviation about its mean, then one down to each group's cut
    mean_u = others * outside
    sd_u = math.sqrt(max(others * outside * (1 - outside), 1.0))
    step = max(1, int(_BANDS * sd_u))  # at small n, one band per value of U
    steps = [int(mean_u) + k * step for k in range(-_STEPS, _STEPS + 1)]
    while steps[0] > 1:  # below: bands of relative width _SHRINK, down to 1 (π* at most 1/(1 − _SHRINK) too high)
        steps.insert(0, min(steps[0] - 1, int(steps[0] * (1.0 - _SHRINK))))
    steps_u = np.array(steps)
    groups = _clone_groups(c_lo, c_hi)
    starts = np.array([c1 for c1, _ in groups] + [c_hi + 1])
    informative = iota * _bin_masses(starts, others, clone)  # Pr[J = 1, C in group]
    # the lower bound's groups of M = C + J: [c₁ + 2, c₁' + 1] (c₁' the next group's start), whose largest m is
    # c₁' + 1, the grid at c₁' clones (shared with the next group)
    low_informative = iota * _bin_masses(starts + 1, others, clone)
    low_total = low_informative + (1.0 - iota) * _bin_masses(starts + 2, others, clone)
    grids: dict[int, _Grid] = {}

    def grid_at(c: int) -> _Grid:
        if c not in grids:
            grids[c] = _grid(c, z)
        return grids[c]

    upper, lower = _Lattice(upper=True), _Lattice(upper=False)
    shares, components = 0.0, 0
    for k, (c1, c2) in enumerate(groups):
        if informative[k] > 0.0:
            rest = others - c2  # U given C = c2 is Bin(others − c2, θ): stochastically the smallest of the group
            # the lowest band starts at a normal quantile of U (its exact mass below charged) if that leaves out at
            # most 10⁻³·δ/(number of groups) (10⁻³·δ in all); else (U's lower tail is heavier, θ near 1) at 0
            cut = max(0, int(rest * theta - z * math.sqrt(rest * theta * (1 - theta))) - 1)
            for start in (cut, 0):
                bands = np.unique(np.concatenate([[start], steps_u[(steps_u > start) & (steps_u <= rest)]]))
                weights = _bin_masses(np.concatenate([[0], bands, [rest + 1]]), rest, theta)
                if informative[k] * weights[0] <= 1e-3 * delta / len(groups):
                    break
            extra += float(informative[k] * weights[0])  # U below the lowest band: charged
            pis = np.where(bands == 0, 1.0, 1.0 / (1.0 + 2.0 * bands / ((e0 + 1.0) * (c2 + 1))))
            share = informative[k] * weights[1:] / pis
            small = share <= tail  # charged at the top loss instead (at most _TAIL·δ per component)
            extra += float(share[small].sum())
            if not small.all():
                loss, big_p = _component(grid_at(c1), pis[~small], kappa, upper=True)
                upper.add(loss, big_p * share[~small][:, None])
                shares += float(share[~small].sum())
                components += int((~small).sum())
        # the lower bound: every other user on one value outside S (Jensen within the group, module docstring)
        if low_total[k] > 0.0:
            loss, big_p = _component(grid_at(int(starts[k + 1])), [low_informative[k] / low_total[k]], kappa,
                                     upper=False)
            lower.add(loss, big_p * low_total[k])
    pair = _assemble(upper, extra * (1 + _RHO), eps0)
    low = _assemble(lower, 0.0, eps0)
    eps = _epsilon(pair, delta, eps0, up=True)
    lower_eps = min(_epsilon(low, delta, eps0, up=False), eps)
    # the law to compose: the components' losses (read _SHIFT higher) under P, the mass the groups left at loss 0
    # (each group's weight beyond Pr[J = 1, group]/π*), the charges at ε₀
    loss = np.concatenate([np.minimum(pair.loss + _SHIFT, eps0), [0.0, eps0]])
    mass = np.concatenate([pair.p, [max(0.0, 1.0 - shares), pair.extra]])
    order = np.argsort(loss, kind="stable")
    return KrrWorstCase(eps, lower_eps, delta, components, loss[order], mass[order], eps0)


def _assemble(lattice: _Lattice, extra: float, top: float) -> _Pair:
    """One pair from a lattice: P's masses moved ``_RHO`` the pessimistic way (up for the figure, down for the lower
    bound), Q = P·e^(−loss) moved the other way (float rounding of the masses and of exp)."""
    import numpy as np

    shift = _SHIFT if lattice.upper else -_SHIFT
    loss, p = lattice.law()
    if not len(loss):
        return _Pair(np.zeros(1), np.zeros(1), np.zeros(1), extra, top, shift)
    q = p * np.exp(-loss)
    if lattice.upper:
        p, q = p * (1 + _RHO), q * (1 - _RHO)
    else:
        p, q = p * (1 - _RHO), q * (1 + _RHO)
    return _Pair(loss, p, q, extra, top, shift)


def krr_epsilon(eps0: float, d: int, n: int, delta: float) -> tuple[float, float] | None:
    """The central ε at ``delta`` of n shuffled k-RR reports (d >= 3 values, ε₀), valid for every dataset, and an
    exact lower bound on any valid figure; ``None`` where :func:`krr_worst_case` declines."""
    found = krr_worst_case(eps0, d, n, delta)
    return None if found is None else (found.epsilon, found.lower)
