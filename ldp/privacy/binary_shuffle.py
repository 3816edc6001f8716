"""Shuffled binary randomized response, tight: the worst dataset of the others computed, not bounded by clones.

n users each send symmetric binary randomized response (the true bit with probability ``p = e^ε₀/(1 + e^ε₀)``);
shuffled, the analyst sees only the count K of 1s. With the other n − 1 users holding ``a`` ones and ``b`` zeros,
``K = Y + R₁``, ``Y = Bin(a, p) + Bin(b, 1 − p)`` of law f, and user 1's report R₁ is Bern(p) (holding 1) or
Bern(1 − p) (holding 0). The neighbouring laws are

    P(k) = p·f(k − 1) + (1 − p)·f(k),        Q(k) = (1 − p)·f(k − 1) + p·f(k),

and δ(ε) = Σ_k (P(k) − e^ε·Q(k))₊. The clone pair of :mod:`ldp.privacy.shuffle` tells the analyst how many others
were clones, which K does not: at ε₀ = 4, n = 10⁴, δ = 10⁻⁸ it states 0.515 where the worst dataset needs 0.405.
Here the worst dataset is searched for, and every figure holds for all of them at once:

* **fewer others, larger δ**: K with more others is K with fewer plus an independent count, the same in P and Q (a
  post-processing), so every dataset with ``a`` in ``[lo, hi]`` (and ``b = n − 1 − a``) is dominated by the one
  with ``lo`` ones and ``n − 1 − hi`` zeros: a finite set of intervals covers every dataset;
* **both directions**: swapping the labels 0 and 1 maps the dataset ``(a, b)`` in one direction to ``(b, a)`` in
  the other, so intervals over ``a`` in ``[0, n − 1]``, one direction, cover both;
* **one pair for all**: the pointwise largest of the intervals' privacy profiles δ(ε) is itself the profile of a pair
  dominating them all (the convex conjugate of the convex hull of their trade-off functions; Zhu, Dong and Wang,
  AISTATS 2022), so the connect-the-dots PLD of that profile (Doroshenko, Ghazi, Kamath, Kumar and Manurangsi,
  PETS 2022; ``dp-accounting``) dominates every window, and windows compose.

The search (issue 72): fixed intervals of the number of ones (:func:`interval_cuts`: 1/40 of the others each, finer
near 0 where the worst datasets are), the same fractions at every n, each evaluated at its dominating dataset and its
ε rounded up to the grid of :mod:`ldp.privacy.window_grid`: the figure is non-increasing in n by construction (up
to rounding; see that module for what is guaranteed). Up to :func:`exact_max` users (10⁷ at δ >= 10⁻¹⁰, 10⁴ at
δ below 10⁻²⁰⁰, at ε₀ <= 1: the work grows with ln(1/δ) and with n·p(1 − p), so the cap grows as 1/(p(1 − p)) above
ε₀ = 1); beyond, :mod:`ldp.privacy.binary_large` runs the same search on each dataset's law read at a few points
(its cost does not grow with n): 1.013–1.015× a real dataset's exact ε at δ = 10⁻⁸, ε₀ = 1 to 5.9, n = 10⁸ to
10¹² (the clone bound of :mod:`ldp.privacy.shuffle` was 1.23–1.46× there), in 0.13 to 0.2 s of CPU.
Each law f is exact to rounding: the
binomials by scipy at their modes and ratio products outward, convolved directly or, when long, by FFT with a
bound on its rounding added to δ; the mass left outside their windows is added to δ too.

Server side: numpy and scipy (the ``server`` extra), imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

from ldp.privacy.binary_intervals import interval_cuts
from ldp.privacy.window_grid import floor_delta, grid_search

__all__ = ["BINARY", "EXACT_MAX", "BinaryPair", "WorstCase", "binary_pair", "binary_rr_epsilon", "exact_max",
           "interval_cuts", "worst_case"]

BINARY = "binary RR (worst dataset)"
"""The method of a figure from this module (:class:`~ldp.privacy.shuffle.ShuffleGuarantee`)."""

_DIRECT = 2e7
"""Window products up to this are convolved directly (exact to rounding); longer ones by FFT."""
EXACT_MAX = 10**7
"""The most users whose datasets' whole laws are computed (at δ >= 10⁻¹⁰; fewer at smaller δ, :func:`exact_max`);
beyond, :mod:`ldp.privacy.binary_large` reads each at a few points."""
_CAPS = ((1e-10, 10**7), (1e-100, 10**6), (1e-200, 10**5), (0.0, 10**4))
"""(smallest grid δ, most users computed): the search's work grows with n and with ln(1/δ) (the windows reach
further); these keep one window's search under about 0.6 s of CPU (simulations/bench_window_epsilon.py). The cap
is non-decreasing in δ, so the figure stays non-increasing in δ (a larger δ gets at least as many users, and the
figure is non-increasing in n)."""
_TILT = 4.5
"""Standard deviations between the tilts' centres: each reads the entries within about ±4.8 of its own to 10⁻⁹."""
_GRID = 2**16
"""Grid points of the composable loss law (``WorstCase.losses``) over the losses that matter."""
_RHO = 1e-9
"""Every computed mass is within this share of the true one (binomial ratio products, sums, the FFT entries kept);
the pair's δ and survival are read with P and Q each moved that share the pessimistic way."""
_SHIFT = 2 * math.atanh(_RHO)
"""The most a loss ln(P/Q) can be off when P and Q each are off by ``_RHO``: losses are read that much higher."""


@dataclass(frozen=True)
class BinaryPair:
    """The neighbouring laws of K for one dataset, as its privacy losses ``loss`` = ln(P/Q) (sorted up) with the
    masses of P and Q at each, and ``extra``: mass left out (windows' tails, FFT rounding), added to every δ. Both
    directions: :meth:`delta` is the larger of δ(P‖Q) and δ(Q‖P), which covers the mirrored dataset too."""

    ones: int
    zeros: int
    loss: Any
    p: Any
    q: Any
    extra: float
    _sums: tuple[Any, Any, Any, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        import numpy as np

        def above(x: Any) -> Any:  # Σ over the losses from i up, small terms first (relative precision kept)
            return np.append(np.cumsum(x[::-1])[::-1], 0.0)

        def below(x: Any) -> Any:  # Σ over the losses below i
            return np.concatenate([[0.0], np.cumsum(x)])

        up, down = 1.0 + _RHO, 1.0 - _RHO  # the masses moved the pessimistic way: P up and Q down (forward)
        object.__setattr__(self, "_sums", (above(self.p) * up, above(self.q) * down, below(self.p) * down,
                                           below(self.q) * up))

    @property
    def up_total(self) -> float:
        """The pair's total mass (P's, which is Q's), ``extra`` included."""
        return float(max(self._sums[0][0], self._sums[3][-1])) + self.extra

    def delta(self, eps: Any) -> Any:
        """max(δ(P‖Q), δ(Q‖P)) at each ε >= 0 of ``eps``, plus ``extra``, clipped to [0, 1]:
        δ(P‖Q)(ε) = Σ_{L > ε} (P − e^ε·Q), δ(Q‖P)(ε) = Σ_{L < −ε} (Q − e^ε·P)."""
        import numpy as np

        e = np.asarray(eps, dtype=np.float64)
        up_p, up_q, down_p, down_q = self._sums
        i = np.searchsorted(self.loss, e - _SHIFT, side="right")
        j = np.searchsorted(self.loss, _SHIFT - e, side="left")
        forward = up_p[i] - np.exp(e) * up_q[i]
        backward = down_q[j] - np.exp(e) * down_p[j]
        return np.clip(np.maximum(forward, backward) + self.extra, 0.0, 1.0)

    def survival(self, grid: Any) -> Any:
        """At each loss l of ``grid``: the larger, over the two directions, of the mass of losses above l (P's of
        ln(P/Q), Q's of ln(Q/P)), ``extra`` counted above every l."""
        import numpy as np

        up_p, _, _, down_q = self._sums
        forward = up_p[np.searchsorted(self.loss, grid - _SHIFT, side="right")]
        backward = down_q[np.searchsorted(self.loss, _SHIFT - grid, side="left")]
        return np.maximum(forward, backward) + self.extra

    def range(self, tail: float) -> tuple[float, float]:
        """Losses within which both directions keep all but ``tail`` of their mass on each side."""
        import numpy as np

        up_p, up_q, down_p, down_q = self._sums
        hi = min(int(np.searchsorted(-up_p, -tail, side="left")), self.loss.size - 1)  # first with mass above <= tail
        lo = max(int(np.searchsorted(down_p, tail, side="right")) - 1, 0)  # last with mass below <= tail
        back_hi = max(int(np.searchsorted(down_q, tail, side="right")) - 1, 0)  # ln(Q/P) = −loss: mirrored
        back_lo = min(int(np.searchsorted(-up_q, -tail, side="left")), self.loss.size - 1)
        return (float(min(self.loss[lo], -self.loss[back_lo])), float(max(self.loss[hi], -self.loss[back_hi])))

    def epsilon(self, delta: float) -> float:
        """The smallest ε >= 0 with :meth:`delta` <= ``delta``, to a relative 10⁻⁹ and rounded up (``inf`` when not
        even the top loss is)."""
        import numpy as np

        if self.extra >= delta:
            return math.inf
        top = float(np.max(np.abs(self.loss)))
        if self.delta(top) > delta:
            return math.inf
        if self.delta(0.0) <= delta:
            return 0.0
        lo, hi = 0.0, top  # δ decreases in ε: bisect
        while hi - lo > 1e-9 * hi:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.delta(mid) > delta else (lo, mid)
        return hi


def _binomial(size: int, prob: float, tail: float) -> tuple[int, Any, float]:
    """Bin(size, prob) on its window of all but ``tail`` of each side: (first k, pmf, mass left out). The pmf from
    scipy's value at the mode and the exact ratios b(k+1)/b(k) multiplied outward."""
    import numpy as np

    from ldp.privacy.light_scipy import binom

    if size == 0:
        return 0, np.ones(1), 0.0
    mean, sd = size * prob, math.sqrt(size * prob * (1.0 - prob))
    reach = norm_isf(tail) + 2.0
    while True:  # a normal-sized window, widened until the exact tails beyond it are within ``tail`` each
        lo, hi = max(0, int(mean - reach * sd) - 1), min(size, int(mean + reach * sd) + 2)
        below, above = float(binom.cdf(lo - 1, size, prob)), float(binom.sf(hi, size, prob))
        if (below <= tail and above <= tail) or (lo == 0 and hi == size):
            break
        reach *= 1.25
    mode = min(max(int((size + 1) * prob), lo), hi)
    odds = prob / (1.0 - prob)
    up = np.arange(mode, hi)  # b(k+1)/b(k) = (size − k)/(k + 1)·odds
    down = np.arange(mode, lo, -1)  # b(k−1)/b(k) = k/(size − k + 1)/odds
    at_mode = float(binom.pmf(mode, size, prob))
    right = at_mode * np.cumprod((size - up) / (up + 1.0) * odds)
    left = at_mode * np.cumprod(down / (size - down + 1.0) / odds)
    pmf = np.concatenate([left[::-1], [at_mode], right])
    return lo, pmf, below + above


def _convolved(fa: Any, fb: Any, spread: float, reach: float) -> tuple[Any, float]:
    """The law of the sum of two independent counts of laws ``fa`` and ``fb``, each entry to a relative ``_RHO``, and
    the mass of the entries that could not be had that precisely (their values plus error bounds; set to 0).

    Short laws are convolved directly (sums of positive terms: relative rounding). Long ones by FFT, whose rounding
    is absolute, about u·log₂N·‖x‖₂‖y‖₂ per entry (Higham 2002, §24.1; times 8 here): each exponentially tilted,
    x(k)·e^(θk), at θ = 0, ±4.5/``spread``, … out to ``reach`` standard deviations, so that every entry is read
    from the tilt under which it is large and its relative error small."""
    import numpy as np

    from ldp.privacy.light_scipy import fftconvolve

    if fa.size * fb.size <= _DIRECT:
        return np.convolve(fa, fb), 0.0
    la, lb = np.log(np.maximum(fa, 1e-320)), np.log(np.maximum(fb, 1e-320))
    ka, kb, k = np.arange(fa.size), np.arange(fb.size), np.arange(fa.size + fb.size - 1)
    size = k.size
    best, err = np.zeros(size), np.full(size, np.inf)
    log_chernoff = np.full(size, np.inf)  # ln of min over the tilts of e^(-θk)·Σ fa(i)e^(θi)·Σ fb(j)e^(θj) >= f(k)
    steps = int(math.ceil(reach * (1.0 if reach < 12 else 1.6) / _TILT))  # far tails are not normal: reach further
    for theta in np.arange(-steps, steps + 1) * (_TILT / spread):
        ta, tb = theta * ka + la, theta * kb + lb
        ma, mb = float(ta.max()), float(tb.max())
        wa, wb = np.exp(ta - ma), np.exp(tb - mb)
        power = ma + mb - theta * k
        log_chernoff = np.minimum(log_chernoff, power + math.log(float(wa.sum())) + math.log(float(wb.sum())))
        scale = np.exp(np.minimum(power, 700.0))  # beyond: this tilt cannot read the entry (its bound is inf)
        norms = float(np.einsum("i,i->", wa, wa)) * float(np.einsum("i,i->", wb, wb))  # no BLAS threads
        bound = np.where(power > 700.0, np.inf, 8 * 2.2e-16 * math.log2(size) * math.sqrt(norms) * scale)
        better = bound < err
        best = np.where(better, np.maximum(fftconvolve(wa, wb), 0.0) * scale, best)
        err = np.where(better, bound, err)
    loose = err > _RHO * best
    chernoff = np.exp(np.minimum(log_chernoff[loose], 700.0))
    left_out = float(np.minimum(best[loose] + err[loose], chernoff).sum())
    best[loose] = 0.0
    return best, left_out


def binary_pair(ones: int, zeros: int, p: float, tail: float) -> BinaryPair:
    """The pair of one dataset of the others (``ones`` holding 1, ``zeros`` holding 0), user 1's report kept with
    probability ``p``; each binomial's window leaves out at most ``tail`` of each side (added to ``extra``, with
    whatever the convolution could not compute to a relative ``_RHO``)."""
    import numpy as np

    q = 1.0 - p
    lo_a, fa, out_a = _binomial(ones, p, tail)
    lo_b, fb, out_b = _binomial(zeros, q, tail)
    reach = norm_isf(tail) + 1.0 if tail < 0.5 else 1.0
    f, left_out = _convolved(fa, fb, math.sqrt(max((ones + zeros) * p * q, 1.0)), reach)
    f = np.concatenate([[0.0], f, [0.0]])
    before, at = f[:-1], f[1:]  # f(k − 1), f(k) for k from lo_a + lo_b to the window's end + 1
    p_k, q_k = p * before + q * at, q * before + p * at
    keep = (p_k > 0.0) & (q_k > 0.0)
    p_k, q_k = p_k[keep], q_k[keep]
    loss = np.log(p_k / q_k)  # increasing in k (f is log-concave), but sorted whatever rounding did
    if loss.size > 1 and not bool(np.all(loss[1:] >= loss[:-1])):
        order = np.argsort(loss, kind="stable")
        loss, p_k, q_k = loss[order], p_k[order], q_k[order]
    return BinaryPair(ones, zeros, loss, p_k, q_k, out_a + out_b + left_out)


def norm_isf(x: float) -> float:
    """The standard normal's upper quantile (scipy), for the tilts' reach."""
    from ldp.privacy.light_scipy import norm_isf

    return float(norm_isf(x))


@dataclass(frozen=True)
class WorstCase:
    """The search's result (module docstring): ``epsilon``, valid at ``delta`` for every dataset; ``lower``, the
    exact ε of the worst real dataset computed; ``datasets``, how many were computed; and, for composing windows,
    ``grid`` with ``survival``, the largest over the final intervals of their losses' mass above each grid point
    (both directions, left-out mass counted above), ``total``, their largest total mass, ``top`` = ε₀."""

    epsilon: float
    lower: float
    delta: float
    datasets: int
    grid: Any
    survival: Any
    total: float
    top: float
    levels: Any = None
    profile: Any = None

    def losses(self) -> tuple[Any, Any]:
        """A privacy-loss law stochastically larger than every dataset's, in both directions: the masses between
        grid points moved up to the next, below the grid to its first point, above it to ``top`` (no loss of binary
        RR exceeds ε₀). Composing such laws bounds δ for any datasets, one per window: δ(ε) = E[(1 − e^(ε − ΣLᵢ))₊]
        grows with each Lᵢ."""
        import numpy as np

        s = self.survival
        prob = np.concatenate([[self.total - s[0]], s[:-1] - s[1:], [s[-1]]])
        return np.append(self.grid, max(self.top, float(self.grid[-1]))), np.maximum(prob, 0.0)

    def hull_losses(self) -> tuple[Any, Any, float]:
        """The connect-the-dots privacy-loss law (losses, masses under P, mass at +∞) of one pair that every dataset
        is a post-processing of, in both directions (module docstring, "one pair for all"; Doroshenko et al. 2022).

        ``profile`` holds, at each ε >= 0 of ``levels``, an upper bound on every interval's δ in both directions;
        at −ε a pair's δ is 1 − e^−ε + e^−ε·δ(ε) of the other direction, so the same bound gives it there. In
        x = e^ε the pairs' δ is convex and decreasing, and so is their pointwise largest (the profile of the
        dominating pair H); the largest convex function below the bounds (their lower convex hull, with (0, 1) and
        the bounds raised to the last one so that it decreases) is at least H's δ everywhere and piecewise linear:
        the profile of a discrete pair whose Q puts the slope changes' mass at each vertex x (loss ln x, P-mass
        x·Q-mass), the rest of Q at −∞, and the last value at +∞ under P. That pair dominates H (its δ is larger at
        every ε), so composing its law, one per window, bounds δ for any datasets in either direction. At small n it
        is far tighter than :meth:`losses` (whose largest survival over intervals is no one pair's); its losses below
        ``grid`` are moved up to its first point."""
        import numpy as np

        eps, up = np.asarray(self.levels), np.asarray(self.profile)
        up = np.maximum(np.minimum(up, 1.0), up[-1])  # the last (the top loss's) the smallest: decreasing
        neg = 1.0 - np.exp(-eps[:0:-1]) + np.exp(-eps[:0:-1]) * up[:0:-1]  # at −ε, ε > 0, from the other side
        x = np.concatenate([[0.0], np.exp(-eps[:0:-1]), np.exp(eps)])
        y = np.concatenate([[1.0], np.maximum(neg, up[-1]), up])
        hull = _lower_hull(x, y)
        hx, hy = x[hull], y[hull]
        slopes = np.append(np.diff(hy) / np.diff(hx), 0.0)  # after the last vertex: constant
        q_mass = np.maximum(np.diff(slopes), 0.0)  # at the vertices after x = 0
        # losses below the composable grid's first point moved up to it, as :meth:`losses` does (stochastically
        # larger: δ of a composition grows with each loss), so that the composition's grid spans no more than there
        return np.maximum(np.log(hx[1:]), float(self.grid[0])), hx[1:] * q_mass, float(hy[-1])


@functools.lru_cache(maxsize=8)
def worst_case(eps0: float, n: int, delta: float) -> WorstCase:
    """Every dataset of the n − 1 others covered by the fixed intervals over the number of ones
    (:func:`~ldp.privacy.binary_intervals.interval_cuts`, module docstring), each evaluated at the dataset that
    dominates it; the figure at ``delta`` is the largest of their ε, each rounded up to the ε grid of
    :mod:`ldp.privacy.window_grid`. The binomials' windows leave out 10⁻¹⁰·δ (at least 10⁻³⁰⁶; it lands at the top
    loss) and the composable law's grid spans all but 10⁻⁹·δ of each side, enough for up to 1,000 windows composed
    at δ (more are still valid, on a coarser grid). Cached: one window's figure and its composition share one
    search."""
    import numpy as np

    p = 1.0 / (1.0 + math.exp(-eps0))
    others = n - 1
    tail, window = max(1e-9 * delta, 1e-305), max(1e-10 * delta, 1e-306)
    count = 0

    def pair(ones: int, zeros: int) -> BinaryPair:
        nonlocal count
        count += 1
        return binary_pair(ones, zeros, p, window)

    cuts = interval_cuts(n)
    first = pair(0, others - cuts[1] + 1)
    lo_l, hi_l = first.range(tail)
    span = max(hi_l - lo_l, 1e-12)
    grid = np.linspace(max(lo_l - span / 4, -eps0), min(hi_l + span / 4, eps0), _GRID)
    found: list[tuple[float, Any, float, int]] = []
    guess = 0.1
    levels = _levels(eps0)
    profile = np.zeros(levels.size)
    for lo, end in zip(cuts[:-1], cuts[1:], strict=True):
        pr = first if lo == 0 else pair(lo, n - end)
        guess = grid_search(functools.partial(_fails, pr, delta), guess, eps0)
        found.append((guess, pr.survival(grid), float(pr.up_total), lo))
        profile = np.maximum(profile, pr.delta(levels))
    worst = max(found, key=lambda f: f[0])
    lower = min(worst[0], pair(worst[3], others - worst[3]).epsilon(delta))
    return WorstCase(worst[0], lower, delta, count, grid, np.max(np.stack([f[1] for f in found]), axis=0),
                     max(f[2] for f in found), eps0, levels, profile)


def _levels(eps0: float) -> Any:
    """The ε >= 0 at which the pairs' profiles are kept for :meth:`WorstCase.hull_losses`: 0, even steps to ε₀ and
    geometric ones from 10⁻⁵·ε₀ (the figures at large n are small), up to ε₀ + 2·``_SHIFT`` (above every loss read)."""
    import numpy as np

    top = eps0 + 2 * _SHIFT
    return np.unique(np.concatenate([[0.0], np.linspace(0.0, top, 400), np.geomspace(1e-5 * eps0, top, 800)]))


def _lower_hull(x: Any, y: Any) -> list[int]:
    """The indices of the lower convex hull's vertices of the points (x, y), x increasing (monotone chain)."""
    hull: list[int] = []
    for i in range(len(x)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]  # drop b while it lies on or above the chord from a to i
            if (y[b] - y[a]) * (x[i] - x[a]) >= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return hull


def _fails(pr: BinaryPair, delta: float, eps: float) -> bool:
    """Whether ``pr`` needs more than δ at ε."""
    return bool(pr.delta(eps) > delta)


def binary_rr_epsilon(eps0: float, n: int, delta: float) -> tuple[float, float]:
    """The central ε at ``delta`` of n shuffled binary RR reports of ε₀, valid for every dataset (module docstring),
    and the exact ε of the worst real dataset found (a lower bound on any valid figure). δ is first rounded down to
    the grid of :func:`~ldp.privacy.window_grid.floor_delta`; beyond :func:`exact_max` users (10⁷ at δ >= 10⁻¹⁰,
    fewer at smaller δ) the same search reads each dataset's law at a few points
    (:func:`ldp.privacy.binary_large.large_epsilon`)."""
    grid_delta = floor_delta(delta)
    if n > exact_max(grid_delta, eps0):
        from ldp.privacy.binary_large import large_epsilon

        return large_epsilon(float(eps0), n, grid_delta)
    found = worst_case(float(eps0), n, grid_delta)
    return found.epsilon, found.lower


def exact_max(delta: float, eps0: float | None = None) -> int:
    """The most users whose datasets' whole laws are computed at (grid) ``delta`` (:data:`_CAPS`): 10⁷ down to 10⁴ at
    δ below 10⁻²⁰⁰ for ε₀ <= 1; more users' are read at a few points (:mod:`ldp.privacy.binary_large`).
    With ``eps0`` above 1 the cap grows as 1/(p(1 − p)), p = e^ε₀/(1 + e^ε₀): the search's work follows the others'
    count's variance n·p(1 − p) (its binomials' windows), about 0.9 s of CPU at the cap for every ε₀ measured
    (1, 2, 3, 5.9, 8 at δ = 10⁻⁸), so a larger ε₀ is computed exactly to more users (ε₀ = 5.9: 7.2·10⁸)."""
    cap = next(cap for least, cap in _CAPS if delta >= least)
    if eps0 is None or eps0 <= 1.0:
        return cap
    return int(cap * _variance(1.0) / _variance(min(float(eps0), 700.0)))


def _variance(eps0: float) -> float:
    """p(1 − p) of binary RR at ε₀, e^ε₀/(1 + e^ε₀)², to full precision."""
    return 1.0 / (2.0 + 2.0 * math.cosh(eps0))
