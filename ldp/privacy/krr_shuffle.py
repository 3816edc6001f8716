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
* *a loss lattice*: losses are then rounded up to 0, ±``LOSS0``·(1 + ``LOG_STEP``)^j (down for the lower bound)
  and merged there (:mod:`ldp.privacy.loss_lattice`), so no sort of the components is needed;
* *cuts*: C below or above its window, U below its lowest band (a normal quantile, or 0 when that leaves out
  more), components of share at most ``_TAIL``·δ: their mass (each at most ``_TAIL``·δ) is charged at the top loss
  ε₀ (no loss of k-RR exceeds it) and added to δ.

Groups of C have relative width ``_GROUP`` (the loss scale is overstated by about half of it); bands of U are
``_BANDS`` standard deviations of U given the group wide about the group's own mean, on a lattice fixed by θ.
δ(ε) = Σ (P − e^ε·Q)₊ over all components plus the charges; masses are moved ``RHO`` of themselves and losses
``SHIFT`` the pessimistic way. The two directions are equal (swap x₀, x₁).

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
U's bands lie on lattices fixed by θ (only the cut of U's lower tail and where the fine lattice starts move with n,
both far below U's mass), so the computed bound is checked to be non-increasing in n in the tests, not guaranteed.
Bands placed about U's marginal mean (before) put the mass of groups with many clones in 20 % bands: up to 18 %
above the exact sum at n = 100 to 150 (ε₀ = 0.05, d = 100), and rises of up to 1.9 % along the grid of n.

Server side: numpy and scipy (the ``server`` extra), imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ldp.privacy.loss_lattice import RHO, SHIFT, Lattice, Pair, assemble, lattice_epsilon

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
"""Fine bands run up to this many bands' widths above U's mean given the group; one more runs up from there; below
``z`` − 1 standard deviations under the mean, bands of relative width ``_SHRINK`` down to each group's cut."""
_SHRINK = 0.2
"""Relative width of the bands of U in its far lower tail: π*'s odds exceed π's by at most 1/(1 − _SHRINK) there."""
_BINS = 1000
"""Bins of H₀ across its window in a component (one value of H₀ a bin below that): the loss is read at each bin's
top, so ε is overstated by at most the loss's rise over one bin, about 4/_BINS of the loss at the window's edge."""
_N_MAX = 10**15
"""Beyond this many users the figure at ``_N_MAX`` is returned (valid for more users, module docstring; the same
cap at every δ, so it stays monotone in δ). The computation's cost does not grow with n; the cap keeps h, m and
2h − m exact in floats."""


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

    from ldp.privacy.light_scipy import binom

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

    from ldp.privacy.light_scipy import binom

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


@functools.lru_cache(maxsize=64)
def _z(tail: float) -> float:
    from ldp.privacy.light_scipy import norm_isf

    return float(norm_isf(min(tail, 0.25)))


def _windows(size: int, prob: float, tail: float) -> tuple[int, int, float]:
    """Bin(size, prob)'s window [lo, hi] leaving out at most ``tail`` on each side (found on scipy's cdf and sf,
    whose tails keep their relative precision where ``isf`` does not), and the mass left out."""
    from ldp.privacy.light_scipy import binom

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


@dataclass(frozen=True)
class _Blanket:
    """n shuffled k-RR reports at ε₀ over d values, as the computation reads them (the module docstring's names):
    e^ε₀, ι = p + q, κ = tanh(ε₀/2) = 2s − 1 (s = e^ε₀/(e^ε₀ + 1)), a blanket report's chances 2q to be a clone
    and (d − 2)q to fall outside S, θ = (d − 2)q/(1 − 2q), the n − 1 other users, the mass each cut may leave out
    (``tail``) and the normal quantile (plus one) of the windows ``z``."""

    eps0: float
    delta: float
    others: int
    e0: float
    iota: float
    kappa: float
    clone: float
    outside: float
    theta: float
    tail: float
    z: float

    @classmethod
    def of(cls, eps0: float, d: int, n: int, delta: float) -> _Blanket:
        e0 = math.exp(eps0)
        q = 1.0 / (e0 + d - 1)
        clone, outside = 2.0 * q, (d - 2) * q
        tail = max(_TAIL * delta, 5e-324)
        return cls(eps0, delta, n - 1, e0, (e0 + 1.0) * q, math.tanh(eps0 / 2.0), clone, outside,
                   outside / (1.0 - clone), tail, _z(tail) + 1.0)


def _compute(eps0: float, d: int, n: int, delta: float) -> KrrWorstCase:
    """The pair at n users (module docstring): C's window cut into groups of clone counts, each group's components
    over U's bands (the figure) and on one value outside S (the lower bound) rounded to the loss lattice, the charged
    mass beside them; ε of each on the lattice of ε, and the law to compose."""
    import numpy as np

    blanket = _Blanket.of(eps0, d, n, delta)
    c_lo, c_hi, extra = _windows(blanket.others, blanket.clone, blanket.tail)
    groups = _clone_groups(c_lo, c_hi)
    starts = np.array([c1 for c1, _ in groups] + [c_hi + 1])
    grids: dict[int, _Grid] = {}

    def grid_at(c: int) -> _Grid:
        if c not in grids:
            grids[c] = _grid(c, blanket.z)
        return grids[c]

    upper, extra, shares, components = _upper(blanket, groups, starts, grid_at, extra * blanket.iota)
    lower = _lower(blanket, starts, grid_at)
    pair = assemble(upper, extra * (1 + RHO), eps0)
    low = assemble(lower, 0.0, eps0)
    eps = lattice_epsilon(pair, delta, eps0, up=True)
    lower_eps = min(lattice_epsilon(low, delta, eps0, up=False), eps)
    loss, mass = _law(pair, shares, eps0)
    return KrrWorstCase(eps, lower_eps, delta, components, loss, mass, eps0)


def _root_edges(theta: float, lo: int, hi: int) -> Any:
    """U's fine band edges in (lo, hi]: ⌈(j·a)²⌉ for integers j, a = _BANDS·√(1 − θ)/2, the level sets of
    φ(u) = √u/a. A band's width 1/φ'(u) = _BANDS·√(u(1 − θ)) is :data:`_BANDS` standard deviations of U given C
    wherever U's mean is u (U given C is Bin(r, θ): mean rθ = u, variance u(1 − θ)); below one unit, each value of U
    is a band. The edges depend on θ only, not on n nor on the group: a given mass is banded alike at every n."""
    import numpy as np

    a = _BANDS * math.sqrt(max(1.0 - theta, 1e-300)) / 2.0
    j = np.arange(math.floor(math.sqrt(lo) / a), math.floor(math.sqrt(hi) / a) + 1, dtype=float)
    edges = np.unique(np.ceil((j * a) ** 2)).astype(np.int64)
    return edges[(edges > lo) & (edges <= hi)]


def _geometric_edges(lo: int, hi: int) -> list[int]:
    """U's coarse band edges in (lo, hi], for its far lower tail: 1, then ``u → max(u + 1, ⌊u/(1 − _SHRINK)⌋)``
    (each band read at its lowest U overstates π*'s odds by at most 1/(1 − _SHRINK)). Fixed: they depend on
    nothing."""
    edges, u = [], 1
    while u <= hi:
        if u > lo:
            edges.append(u)
        u = max(u + 1, int(u / (1.0 - _SHRINK)))
    return edges


def _bands(blanket: _Blanket, rest: int, informative: float, groups: int) -> tuple[Any, Any]:
    """A group's bands of U ~ Bin(``rest``, θ) and their weights (the first: U below the lowest band). U = 0 is a
    band alone (read at U = 0, π* = 1); the fine edges (:func:`_root_edges`) run from the normal quantile
    ``z`` − 1 standard deviations below U's mean to :data:`_STEPS`·:data:`_BANDS` above it, the coarse ones
    (:func:`_geometric_edges`) below, and the last band runs up to ``rest``. Each band is read at its lowest U, so
    any edges are valid; these are placed about the group's own law of U, on lattices that do not move with n (the
    figure's wander with n came from steps placed about U's marginal mean). The lowest band starts at a normal
    quantile of U (its exact mass below charged) if that leaves out at most 10⁻³·δ/(number of groups) (10⁻³·δ in
    all); else (U's lower tail is heavier, θ near 1) at 0."""
    import numpy as np

    theta = blanket.theta
    mean, sd = rest * theta, math.sqrt(rest * theta * (1 - theta))
    fine = max(0, int(mean - (blanket.z - 1.0) * sd))
    top = min(rest, int(mean + _STEPS * _BANDS * sd) + 1)
    cut = max(0, int(mean - blanket.z * sd) - 1)
    for start in (cut, 0):
        edges = [[start], _geometric_edges(start, fine), _root_edges(theta, max(start, fine), top)]
        bands = np.unique(np.concatenate(edges).astype(np.int64))
        bands = bands[bands >= start]
        weights = _bin_masses(np.concatenate([[0], bands, [rest + 1]]), rest, theta)
        if informative * weights[0] <= 1e-3 * blanket.delta / groups:
            break
    return bands, weights


def _upper(blanket: _Blanket, groups: list[tuple[int, int]], starts: Any, grid_at: Callable[[int], _Grid],
           extra: float) -> tuple[Lattice, float, float, int]:
    """The figure's components: each group of C at its smallest count c₁ and, for each band of U, at π* (the group's
    largest count, the band's lowest U), weighted Pr[J = 1, group, band]/π*. Returns their lattice, ``extra`` plus
    the mass charged at the top loss, the components' total weight and their number."""
    import numpy as np

    informative = blanket.iota * _bin_masses(starts, blanket.others, blanket.clone)  # Pr[J = 1, C in group]
    upper = Lattice(upper=True)
    shares, components = 0.0, 0
    for k, (c1, c2) in enumerate(groups):
        if informative[k] > 0.0:
            rest = blanket.others - c2  # U given C = c2 is Bin(others − c2, θ): stochastically the group's smallest
            bands, weights = _bands(blanket, rest, informative[k], len(groups))
            extra += float(informative[k] * weights[0])  # U below the lowest band: charged
            pis = np.where(bands == 0, 1.0, 1.0 / (1.0 + 2.0 * bands / ((blanket.e0 + 1.0) * (c2 + 1))))
            share = informative[k] * weights[1:] / pis
            small = share <= blanket.tail  # charged at the top loss instead (at most _TAIL·δ per component)
            extra += float(share[small].sum())
            if not small.all():
                loss, big_p = _component(grid_at(c1), pis[~small], blanket.kappa, upper=True)
                upper.add(loss, big_p * share[~small][:, None])
                shares += float(share[~small].sum())
                components += int((~small).sum())
    return upper, extra, shares, components


def _lower(blanket: _Blanket, starts: Any, grid_at: Callable[[int], _Grid]) -> Lattice:
    """The lower bound's components: every other user on one value outside S (Jensen within the group, module
    docstring). Its groups of M = C + J are [c₁ + 2, c₁' + 1] (c₁' the next group's start), whose largest m is
    c₁' + 1, the grid at c₁' clones (shared with the next group)."""
    low_informative = blanket.iota * _bin_masses(starts + 1, blanket.others, blanket.clone)
    low_total = low_informative + (1.0 - blanket.iota) * _bin_masses(starts + 2, blanket.others, blanket.clone)
    lower = Lattice(upper=False)
    for k in range(len(starts) - 1):
        if low_total[k] > 0.0:
            loss, big_p = _component(grid_at(int(starts[k + 1])), [low_informative[k] / low_total[k]],
                                     blanket.kappa, upper=False)
            lower.add(loss, big_p * low_total[k])
    return lower


def _law(pair: Pair, shares: float, eps0: float) -> tuple[Any, Any]:
    """The law to compose (losses sorted up, masses): the components' losses (read ``SHIFT`` higher) under P, the
    mass the groups left at loss 0 (each group's weight beyond Pr[J = 1, group]/π*), the charges at ε₀."""
    import numpy as np

    loss = np.concatenate([np.minimum(pair.loss + SHIFT, eps0), [0.0, eps0]])
    mass = np.concatenate([pair.p, [max(0.0, 1.0 - shares), pair.extra]])
    order = np.argsort(loss, kind="stable")
    return loss[order], mass[order]


def krr_epsilon(eps0: float, d: int, n: int, delta: float) -> tuple[float, float] | None:
    """The central ε at ``delta`` of n shuffled k-RR reports (d >= 3 values, ε₀), valid for every dataset, and an
    exact lower bound on any valid figure; ``None`` where :func:`krr_worst_case` declines."""
    found = krr_worst_case(eps0, d, n, delta)
    return None if found is None else (found.epsilon, found.lower)
