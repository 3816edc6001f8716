"""Privacy-loss laws composed exactly at any δ, down to 10⁻³⁰⁰: convolution under an exponential tilt, with every
rounding bounded and added.

Each window gives a law of its privacy loss L = ln(P/Q) under P, stochastically larger than every dataset's in both
directions (``(loss, prob)``, with mass ``infinite`` at L = +∞); the windows compose by convolution, and the
composed release is (ε, δ)-DP with

    δ(ε) = P(S = +∞) + E[(1 − e^(ε − S))₊; S < ∞],      S = Σᵢ Lᵢ,

which grows with each Lᵢ, so stochastically larger laws give an upper bound (Meiser and Mohammadi, CCS 2018;
Koskela, Jälkö and Honkela, AISTATS 2020).

**Why tilt.** An FFT convolution is exact only to about 10⁻¹⁶ of its largest entry: at δ = 10⁻²⁰ and below, the
entries that make δ are beneath that floor (``dp-accounting``'s PLDs stop there). Under the exponential tilt
(Esscher transform) w(l) = m(l)·e^(θl), convolution commutes with the tilt — the tilt of a convolution is the
convolution of the tilts — and δ(ε) = Σ_{s > ε} w*(s)·e^(−θs)·(1 − e^(ε − s)). With θ the saddle point of the
Chernoff bound at the answer, the tilted composed law peaks where δ is made, so the entries that matter carry a
relative, not an absolute, rounding error.

**Every step only raises δ** (``"up"``; ``"down"`` lowers it, for exact lower bounds):

* losses rounded *up* to a grid of step h (S overstated by at most W·h);
* a law's lowest losses moved up to its first kept point, where their tilted weight, so moved, is below 10⁻²⁵ of
  the largest; its highest losses, of total mass at most a share of 10⁻⁶·δ, moved to +∞ (their mass added to δ);
  the same cuts after each convolution;
* each FFT's rounding bounded per entry by 8·u·log₂N·‖x‖₂·‖y‖₂ (Higham, *Accuracy and Stability of Numerical
  Algorithms*, 2002, §24.1), carried through later convolutions (E_xy ≤ E_x‖y‖₁ + E_y‖x‖₁ + N·E_x·E_y) and added
  to every entry when δ is read;
* the probability that some Lᵢ is +∞ bounded by the sum of the windows' (a union bound).

The **Chernoff bound** (``chernoff``) is also valid by itself: (1 − e^(−x))₊ ≤ c(λ)·e^(λx) with
c(λ) = λ^λ/(λ + 1)^(λ+1) for every λ > 0, so δ(ε) ≤ P(S = ∞) + c(λ)·e^(−λε)·Πᵢ E[e^(λLᵢ); Lᵢ < ∞] — the
Rényi-DP conversion of Canonne, Kamath and Steinke (NeurIPS 2020, Proposition 12) with each window's exact moment.
It gives the tilt θ and the grid's scale, and stands where the composition could not be computed finely enough.

Server side: numpy and scipy (the ``server`` extra), imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LossLaw", "chernoff", "composed_epsilon", "local_law"]

_U = 2.2e-16
"""Unit roundoff of a double."""
_LOW = 1e-25
"""The tilted weight, relative to the largest, below which a law's lowest losses are moved up together."""
_TOP_SHARE = 1e-6
"""The share of δ the cuts to +∞ may spend, in all."""
_MAX_POINTS = 2**20
"""The most grid points a composed law is given; a coarser grid only rounds more losses up."""
_COARSE = 4096
"""Cells of a law's coarse copy (:attr:`LossLaw.coarse`), on which λ and θ are searched."""
_ACCURACY = 1e-3
"""The grid step, as a share of the Chernoff figure over the number of windows: W·h adds at most 0.1 % to ε."""


@dataclass(frozen=True)
class LossLaw:
    """A window's privacy-loss law under P: finite ``loss`` values with masses ``prob`` (need not be sorted; masses
    may sum to less than 1 − ``infinite`` when the rest is known to be lower, never to more), and mass ``infinite``
    at +∞."""

    loss: Any
    prob: Any
    infinite: float = 0.0

    @classmethod
    def of(cls, loss: Any, prob: Any, infinite: float = 0.0) -> LossLaw:
        """The law of ``loss`` and ``prob`` with zero masses dropped (``ValueError`` for a negative or non-finite
        mass or loss)."""
        import numpy as np

        loss, prob = np.asarray(loss, dtype=np.float64).ravel(), np.asarray(prob, dtype=np.float64).ravel()
        if loss.shape != prob.shape or not (np.all(np.isfinite(loss)) and np.all(np.isfinite(prob))) \
                or bool(np.any(prob < 0)) or not (0.0 <= infinite <= 1.0):
            raise ValueError("a privacy-loss law needs finite losses and masses >= 0 of one shape, infinite in [0, 1]")
        keep = prob > 0.0
        return cls(loss[keep], prob[keep], float(infinite))

    def cut(self, tail: float) -> LossLaw:
        """The law with its largest losses, of total mass at most ``tail``, moved to +∞ (stochastically larger)."""
        import numpy as np

        if tail <= 0.0 or self.loss.size == 0:
            return self
        order = np.argsort(self.loss, kind="stable")
        loss, prob = self.loss[order], self.prob[order]
        from_top = np.cumsum(prob[::-1])
        drop = int(np.searchsorted(from_top, tail, side="right"))
        if drop == 0:
            return self
        drop = min(drop, loss.size - 1)  # keep one finite loss
        return LossLaw(loss[:loss.size - drop], prob[:prob.size - drop], self.infinite + float(from_top[drop - 1]))

    @functools.cached_property
    def coarse(self) -> LossLaw:
        """The law with its losses rounded up to at most ``_COARSE`` cells over their range: stochastically larger
        (so its moments bound this law's for λ > 0), for searching λ and θ cheaply."""
        import numpy as np

        if self.loss.size <= _COARSE:
            return self
        lo, hi = float(self.loss.min()), float(self.loss.max())
        if hi <= lo:  # one loss (ε₀ so small that every loss rounds to it): one cell already
            return LossLaw(np.array([lo]), np.array([float(self.prob.sum())]), self.infinite)
        width = (hi - lo) / (_COARSE - 1)
        cell = np.minimum(np.ceil((self.loss - lo) / width), _COARSE - 1).astype(np.int64)
        mass = np.bincount(cell, weights=self.prob, minlength=_COARSE)
        keep = mass > 0.0
        return LossLaw(np.minimum(lo + np.arange(_COARSE)[keep] * width, hi), mass[keep], self.infinite)

    def log_mgf(self, lam: Any) -> Any:
        """ln E[e^(λL); L < ∞] at each λ of ``lam`` (exact to rounding: a log-sum-exp)."""
        import numpy as np

        from ldp.privacy.light_scipy import logsumexp

        lam = np.atleast_1d(np.asarray(lam, dtype=np.float64))
        log_p = np.log(self.prob)
        rows = max(1, 2**22 // max(self.loss.size, 1))  # a few million terms at a time
        return np.concatenate([logsumexp(log_p[None, :] + lam[i:i + rows, None] * self.loss[None, :], axis=1)
                               for i in range(0, lam.size, rows)])


def local_law(epsilon: float, delta: float = 0.0) -> LossLaw:
    """The worst-case law of an (ε, δ)-DP release (Kairouz, Oh and Viswanath, ICML 2015): +∞ with mass δ, +ε with
    (1 − δ)·e^ε/(1 + e^ε), −ε with (1 − δ)/(1 + e^ε)."""
    keep = 1.0 / (1.0 + math.exp(-epsilon))
    return LossLaw.of([epsilon, -epsilon], [(1.0 - delta) * keep, (1.0 - delta) * (1.0 - keep)], delta)


def _log_c(lam: Any) -> Any:
    """ln c(λ) = λ·ln λ − (λ + 1)·ln(λ + 1), the constant of (1 − e^(−x))₊ ≤ c(λ)·e^(λx)."""
    import numpy as np

    return lam * np.log(lam) - (lam + 1.0) * np.log1p(lam)


def chernoff(laws: Sequence[tuple[LossLaw, int]], delta: float) -> tuple[float, float]:
    """The Chernoff bound's ε at ``delta`` of the laws composed (each with its count) and its λ (module docstring):
    min over λ > 0 of (Σ kᵢ·ln Mᵢ(λ) + ln c(λ) − ln(δ − P(∞)))/λ, on a log grid then refined. ``inf`` (λ = 1) when
    the infinite masses alone reach δ."""
    import numpy as np

    rest = delta - sum(k * law.infinite for law, k in laws)
    if rest <= 0.0:
        return math.inf, 1.0

    def figure(lam: Any, exact: bool = False) -> Any:
        total = sum(k * (law if exact else law.coarse).log_mgf(lam) for law, k in laws)
        return (total + _log_c(lam) - math.log(rest)) / lam

    grid = np.geomspace(1e-4, 1e7, 241)
    values = figure(grid)  # the coarse laws' moments are larger: a search, the figure then read exactly
    best = int(np.argmin(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    for _ in range(60):  # golden section on ln λ (the figure is quasi-convex in λ near its minimum)
        a, b = math.log(lo), math.log(hi)
        m1, m2 = math.exp(b - 0.618 * (b - a)), math.exp(a + 0.618 * (b - a))
        f1, f2 = figure(np.array([m1, m2]))
        lo, hi = (lo, m2) if f1 <= f2 else (m1, hi)
        if hi / lo < 1 + 1e-6:
            break
    lam = math.sqrt(lo * hi)
    eps = float(figure(np.array([lam]), exact=True)[0])
    return max(eps, 0.0), lam


@dataclass
class _Tilted:
    """A law on the grid under the tilt θ: the untilted mass at index j (loss (first + j)·h) is
    w[j]·exp(log_scale − θ·(first + j)·h), each w[j] within ``err`` of the truth (absolute, in w's units), and
    ``infinite`` the mass at +∞."""

    w: Any
    first: int
    log_scale: float
    err: float
    infinite: float


class _Composer:
    def __init__(self, step: float, theta: float, up: bool, top_budget: float) -> None:
        self.h, self.theta, self.up, self.top_budget = step, theta, up, top_budget

    def tilt(self, law: LossLaw) -> _Tilted:
        """``law`` on the grid, tilted and cut. ``up``: each loss l in [a, a + h) split between a and a + h with
        the share α = (e^(a+h−l) − 1)/(e^h − 1) at a, which keeps E[e^(−L)] (module docstring); ``down``: each loss
        rounded down."""
        import numpy as np

        h = self.h
        cell = np.floor(law.loss / h)
        if self.up:
            at = np.clip(np.expm1(h - (law.loss - cell * h)) / math.expm1(h), 0.0, 1.0)
            index = np.concatenate([cell, cell + 1.0]).astype(np.int64)
            mass = np.concatenate([law.prob * at, law.prob * (1.0 - at)])
        else:
            index, mass = cell.astype(np.int64), law.prob
        first = int(index.min())
        return self._trimmed(np.bincount(index - first, weights=mass), first, law.infinite)

    def _trimmed(self, mass: Any, first: int, infinite: float) -> _Tilted:
        """Untilted masses on the grid from ``first`` to the tilted form, cut (module docstring)."""
        import numpy as np

        with np.errstate(divide="ignore"):
            logw = np.log(mass) + self.theta * self.h * (first + np.arange(mass.size))
        top = float(logw.max())
        w = np.exp(logw - top)
        out = _Tilted(w, first, top, 0.0, infinite)
        return self._cut(out)

    def _cut(self, t: _Tilted) -> _Tilted:
        """The cuts of the module docstring on a tilted law: its top to +∞ within the budget (dropped when
        ``down``), its bottom moved up (dropped when ``down``) where their moved weight is below ``_LOW``."""
        import numpy as np

        w, h, theta = t.w, self.h, self.theta
        n = w.size
        j = np.arange(n)
        log_w = np.log(np.maximum(w + t.err, 1e-320))  # each entry's bound (an underflowed one counts as 1e-320)
        log_mass = log_w + t.log_scale - theta * h * (t.first + j)  # untilted
        infinite = t.infinite
        # top: the longest suffix whose untilted mass is within the budget goes to +∞
        log_top = np.logaddexp.accumulate(log_mass[::-1])[::-1]
        budget = math.log(self.top_budget) if self.top_budget > 0.0 else -math.inf
        cut_top = max(int(np.searchsorted(-log_top, -budget, side="left")), 1)  # first j with suffix <= budget
        if cut_top < n:
            if self.up:
                infinite += math.exp(float(log_top[cut_top]))
            w, log_w, j, n = w[:cut_top], log_w[:cut_top], j[:cut_top], cut_top
        # bottom: the longest prefix whose weight, all moved up to its end, stays below _LOW (the largest is 1)
        log_moved = np.logaddexp.accumulate(log_w - theta * h * j) + theta * h * (j + 1)  # w[:i+1] moved to i+1
        cut_low = int(np.searchsorted(log_moved, math.log(_LOW), side="right"))  # w[:cut_low] moved to cut_low
        first = t.first
        if 0 < cut_low < n:
            add = math.exp(float(log_moved[cut_low - 1]))
            w = w[cut_low:].copy()
            if self.up:
                w[0] += add
            first += cut_low
        peak = float(w.max()) if w.size else 1.0
        if not peak > 0.0:
            peak = 1.0
        return _Tilted(w / peak, first, t.log_scale + math.log(peak), t.err / peak, infinite)

    def convolve(self, a: _Tilted, b: _Tilted) -> _Tilted:
        import numpy as np

        from ldp.privacy.light_scipy import fftconvolve

        size = a.w.size + b.w.size - 1
        if a.w.size * b.w.size <= 4e6:  # direct: sums of non-negative products, a relative rounding
            z = np.convolve(a.w, b.w)
            own = _U * min(a.w.size, b.w.size) * float(z.max())
        else:
            z = np.maximum(fftconvolve(a.w, b.w), 0.0)
            own = 8 * _U * math.log2(size) * math.sqrt(float(np.dot(a.w, a.w)) * float(np.dot(b.w, b.w)))
        err = own + a.err * float(b.w.sum()) + b.err * float(a.w.sum()) + min(a.w.size, b.w.size) * a.err * b.err
        infinite = min(1.0, a.infinite + b.infinite)
        return self._cut(_Tilted(z, a.first + b.first, a.log_scale + b.log_scale, err, infinite))

    def power(self, t: _Tilted, k: int) -> _Tilted:
        result: _Tilted | None = None
        base = t
        while k:
            if k & 1:
                result = base if result is None else self.convolve(result, base)
            k >>= 1
            if k:
                base = self.convolve(base, base)
        assert result is not None
        return result

    def log_delta(self, t: _Tilted, eps: float) -> float:
        """ln δ(ε) of the composed law (module docstring), the rounding bound added (``up``) or taken (``down``)."""
        import numpy as np

        from ldp.privacy.light_scipy import logsumexp

        s = (t.first + np.arange(t.w.size)) * self.h
        above = s > eps
        if self.up:
            w = t.w[above] + t.err
        else:
            w = np.maximum(t.w[above] - t.err, 0.0)
        with np.errstate(divide="ignore"):
            terms = np.log(w) + t.log_scale - self.theta * s[above] + np.log(-np.expm1(eps - s[above]))
        finite = float(logsumexp(terms)) if terms.size else -math.inf
        if self.up and t.infinite > 0.0:
            return float(np.logaddexp(finite, math.log(t.infinite)))
        return finite


def composed_epsilon(laws: Sequence[tuple[LossLaw, int]], delta: float, *, up: bool = True,
                     max_points: int = _MAX_POINTS, accuracy: float = _ACCURACY) -> float:
    """The smallest ε whose δ(ε) of the laws composed (each law with its count) is at most ``delta``, to a relative
    10⁻⁹, by convolution under an exponential tilt (module docstring); with ``up`` false a lower bound instead
    (losses rounded down, cut mass dropped, rounding taken off: for exact lower-bound oracles). ``inf`` when the
    infinite masses reach δ. The grid step is 10⁻³ of the Chernoff figure over W, coarsened so that the composed
    law never needs more than ``max_points`` points (``accuracy`` sets that 10⁻³)."""

    laws = [(law, int(k)) for law, k in laws if k > 0]
    if not laws or not 0.0 < delta < 1.0:
        raise ValueError(f"give one or more laws and δ in (0, 1), got {len(laws)} and {delta!r}")
    windows = sum(k for _, k in laws)
    # the far tails, of mass 10⁻⁶·δ in all, to +∞ (down: dropped): they would rule the tilt (e^(θL) at the top)
    laws = [(law.cut(_TOP_SHARE * delta / (2 * windows)), k) for law, k in laws]
    bound, lam = chernoff(laws, delta)
    if not math.isfinite(bound):
        return math.inf
    if bound <= 0.0 and up:  # the Chernoff bound already gives ε = 0
        return 0.0
    natural = (math.log(1.0 / delta) + 1.0) / max(bound, 1e-12)  # the tilt that makes δ's scale e^(−θε) alone
    theta = min(_saddle(laws, bound, lam), 100.0 * natural)
    span = max(float(law.loss.max() - law.loss.min()) for law, _ in laws)
    sd = math.sqrt(sum(k * _variance(law) for law, k in laws))
    scale = max(bound, 1e-12)
    # up: the answer's resolution (1e-3·ε) and the splits' drift (W·max(θ, 1)·h²/8 on ε, at most 1e-3·ε);
    # down: losses rounded down by up to h each (W·h at most 1e-3·ε); never more than max_points points
    drift = windows * max(min(theta, 10.0 * natural), 1.0)
    fine = min(accuracy * scale, math.sqrt(8 * accuracy * scale / drift)) if up else accuracy * scale / windows
    step = max(fine, span / max_points, min(30.0 * sd + span, windows * span) / max_points)
    composer = _Composer(step, theta, up, _TOP_SHARE * delta / (4 * windows + 2) if up else 0.0)
    total: _Tilted | None = None
    for law, k in laws:
        part = composer.power(composer.tilt(law), k)
        total = part if total is None else composer.convolve(total, part)
    assert total is not None
    if up and total.infinite >= delta:
        return math.inf
    log_target = math.log(delta)
    lo_s, hi_s = float(total.first * step) - step, float((total.first + total.w.size) * step)
    if composer.log_delta(total, max(lo_s, 0.0)) <= log_target:
        return max(lo_s, 0.0) if lo_s > 0 else 0.0
    if composer.log_delta(total, hi_s) > log_target:
        return math.inf
    lo, hi = max(lo_s, 0.0), hi_s  # δ decreases in ε: bisect
    while hi - lo > 1e-9 * max(hi, 1e-12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if composer.log_delta(total, mid) > log_target else (lo, mid)
    return hi if up else lo


def _variance(law: LossLaw) -> float:
    """The variance of a law's finite losses (masses renormalised)."""
    import numpy as np

    total = float(law.prob.sum())
    mean = float(np.dot(law.prob, law.loss)) / total
    return float(np.dot(law.prob, (law.loss - mean) ** 2)) / total


def _saddle(laws: Sequence[tuple[LossLaw, int]], eps: float, lam: float) -> float:
    """The tilt θ at which the composed law's tilted mean is ``eps`` (Σ kᵢ·(ln Mᵢ)'(θ) = ε, by bisection on the
    increasing derivative), near the Chernoff λ; 0 when even θ = 0 puts the mean above ε."""
    def slope(theta: float) -> float:
        e = 1e-6 * max(theta, 1e-3)
        up = sum(k * float(law.coarse.log_mgf(theta + e)[0]) for law, k in laws)
        down = sum(k * float(law.coarse.log_mgf(max(theta - e, 0.0))[0]) for law, k in laws)
        return (up - down) / (theta + e - max(theta - e, 0.0))

    if slope(0.0) >= eps:
        return 0.0
    lo, hi = 0.0, max(lam, 1.0)
    while slope(hi) < eps and hi < 1e8:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) < eps else (lo, mid)
        if hi - lo < 1e-6 * hi:
            break
    return hi
