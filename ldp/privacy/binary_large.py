"""Shuffled binary randomized response at any n: each dataset's δ(ε) from a few values of its count's law.

:mod:`ldp.privacy.binary_shuffle` computes each dataset's whole law, so its cost grows with n. Here the same search
(the intervals of :func:`~ldp.privacy.binary_intervals.interval_cuts`, each at the dataset that dominates it, both
directions) reads each dataset's law at a handful of points from its generating function, at a cost that does not
grow with n (10¹² users in under 0.2 s of CPU). The argument:

* **The loss is monotone, so δ is one threshold's.** The others' count f = Bin(a, p) + Bin(b, 1 − p) is a sum of
  Bernoulli counts, hence log-concave, so r(k) = f(k − 1)/f(k) is non-decreasing, and so is the loss
  ℓ(k) = ln(P(k)/Q(k)) = ln((p·r + q)/(q·r + p)) (p > 1/2, q = 1 − p). For ε < ε₀ (above, δ = 0: no loss exceeds
  ε₀) the losses above ε are those from t* = min{t : r(t) > R}, R = (e^ε·p − q)/(p − e^ε·q), and
  δ(ε) = S(t*), S(t) = Σ_{k≥t}(P(k) − e^ε·Q(k)) = A·f(t − 1) − (e^ε − 1)·G(t), A = p − e^ε·q, G(t) = Pr[Y >= t].
  S rises up to t* and falls after; given r(L) <= R < r(U) (certain, from bounds on r), S(t*) <= S(U) +
  Σ_{L<k<U} P(k)·(1 − e^(ε − ℓ(U − 1)))₊ (nothing when L = U − 1). The other direction of the dataset (a, b) is this
  one of (b, a) (the labels swapped, K ↦ n − K). Every t gives a lower bound on the dataset's ε:
  h(t) = ln(1 + ((p − q)·f(t − 1) − δ)/Pr_Q[K >= t]).
* **The law at a point, exactly.** With the tilt e^(s·k) (s > 0), f(k) = e^(K(s) − s·k)·f_s(k) and
  G(t) = e^(K(s) − s·t)·H_s(t), H_s(t) = Σ_{k≥t} e^(−s(k − t))·f_s(k), K the cumulant function and f_s the law of
  Bin(a, c₁) + Bin(b, c₂) with the c tilted, near its mean a well-conditioned number. The trapezoid rule with M
  nodes on the circle of f_s's characteristic function φ (times e^s/(e^s − e^(−iθ)) for H_s) gives f_s(k) (H_s(t))
  plus aliased terms, all non-negative, which Bernstein's inequality bounds (the tilted Bernoulli terms are within 1
  of their means), with e^(−sM/2) for the geometric weights; only the nodes where |φ(θ)| <= exp(−2V·sin²(θ/2))
  (V the tilted variance) may exceed e^−λ are summed, the others bounded. Phases and moduli are computed without
  cancellation (the linear phase from the exact tilted mean minus k, in rationals), and a first-order bound on the
  rounding is added.
* **Rounded parameters.** The tilted c are floats, off by a few units u: by Hölder's inequality a value v of f_s or
  H_s moves by a factor within exp(12u·Σσᵢ·√(2 ln(1/v))) (σᵢ the binomials' tilted deviations; 3·10⁻⁹ at 10¹²
  users), applied the pessimistic way; ln r(k) by at most 36u (the binomials tilted slightly apart change it by
  the gap times E[J | K = k] − E[J | K = k − 1], in [0, 1]: Efron 1965, log-concave summands).

The search is :mod:`ldp.privacy.binary_shuffle`'s: the smallest ε of the grid of :mod:`ldp.privacy.window_grid` at
which every interval's dataset, both directions, has its δ bound within δ (each one's ε found roughly first), so
the figure is non-increasing in n as there, up to the bounds' rounding (tested against the whole-law search).

Server side: numpy, imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ldp.privacy.binary_intervals import interval_cuts
from ldp.privacy.window_grid import eps_index, grid_search

__all__ = ["Side", "bound_at", "bracket", "delta_bound", "epsilon_lower", "large_epsilon"]

_U = 2.0**-53
"""The unit roundoff of a float."""
_DEPTH = 42.0
"""Truncation and aliasing are each bounded by e^−(_DEPTH + ln(1 + V)) (V the tilted variance): far below a value."""
_REACH = 8
"""The law is read at the guessed threshold ± this many points (the guess is off by a few)."""
_SLACK = 36 * _U
"""How far ln r(k) can be from ln(e^s·f_s(k − 1)/f_s(k)) with the tilted c rounded (module docstring)."""


@dataclass(frozen=True)
class Side:
    """One dataset of the others in one direction: ``a`` hold the value user 1 is compared at (each reports 1 with
    probability p), ``b`` the other (each reports 1 with probability q = 1 − p); δ is δ(P‖Q) (module docstring)."""

    a: int
    b: int
    p: float

    @property
    def q(self) -> float:
        return 1.0 - self.p  # exact: p in [1/2, 1)


@dataclass(frozen=True)
class _Read:
    """The tilted law at the points ``k``: f_s(k), D(k) = f_s(k − 1) − f_s(k) and H_s(k), each with an absolute error
    bound (``*_err``), the parameters' relative bound ``par``, and ln of e^(K(s) − s·k) with its error."""

    s: float
    k: Any
    f: Any
    f_err: Any
    d: Any
    d_err: Any
    h: Any
    h_err: Any
    par: Any
    scale: Any
    scale_err: Any


def _sinm(y: Any) -> Any:
    """sin(y) − y without cancellation near 0 (its series below |y| = 1/2)."""
    import numpy as np

    y2 = y * y
    series = -y * y2 / 6 * (1 - y2 / 20 * (1 - y2 / 42 * (1 - y2 / 72 * (1 - y2 / 110 * (1 - y2 / 156)))))
    return np.where(np.abs(y) < 0.5, series, np.sin(y) - y)


def _em2(x: float) -> float:
    """e^x − 1 − x without cancellation near 0."""
    if abs(x) >= 0.5:
        return math.expm1(x) - x
    term, total = x * x / 2, 0.0
    for j in range(3, 24):
        total += term
        term *= x / j
    return total


def _components(side: Side, s: float) -> list[tuple[int, float, float, float]]:
    """(count, untilted c₀, tilted c, its 1 − c) of each binomial, tilted by e^(s·x): c = c₀e^s/(1 − c₀ + c₀e^s),
    the smaller of c and 1 − c computed directly, the other as its complement."""
    out = []
    for count, c0 in ((side.a, side.p), (side.b, side.q)):
        if count == 0:
            continue
        up, down = c0 * math.exp(min(s, 0.0)), (1.0 - c0) * math.exp(-max(s, 0.0))
        c, cc = up / (up + down), down / (up + down)
        c, cc = (c, 1.0 - c) if c <= cc else (1.0 - cc, cc)
        out.append((count, c0, c, cc))
    return out


def _bern(x: Any, var: float) -> Any:
    """Bernstein's bound on Pr[Y − E Y >= x] (and on the lower tail) of a sum of independent Bernoulli counts of
    variance ``var``: exp(−x²/(2(var + x/3))), 1 for x <= 0."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 0, np.exp(-np.maximum(x, 0) ** 2 / (2 * (var + np.maximum(x, 0) / 3))), 1.0)


def _nodes(var: float, s: float, spread: float) -> tuple[int, Any, Any, float, float]:
    """M, the nodes' angles θ_j = 2πj/M kept (|φ| may exceed e^−depth), their weights (both signs of θ), the
    truncation bound on each skipped node's |integrand| and the depth."""
    import numpy as np

    depth = _DEPTH + math.log1p(var)
    x = depth / 3 + math.sqrt(depth * depth / 9 + 2 * var * depth)  # Bernstein at x: e^−depth
    m = max(2 * (x + spread) + 4, 16.0, 2 * (depth + 2 - math.log(-math.expm1(-s))) / s)
    m_int = int(math.ceil(m))
    half = m_int // 2
    ratio = depth / (2 * var) if var > 0 else 2.0
    keep = half if ratio >= 1 else min(half, int(2 * math.asin(math.sqrt(ratio)) * m_int / (2 * math.pi)) + 1)
    j = np.arange(keep + 1)
    w = np.where((j == 0) | (2 * j == m_int), 1.0, 2.0)
    skipped = math.exp(-2 * var * math.sin(math.pi * (keep + 1) / m_int) ** 2) if keep < half else 0.0
    return m_int, 2 * math.pi * j / m_int, w, skipped, depth


def _read(side: Side, s: float, ks: Any) -> _Read:
    """The tilted law at the consecutive points ``ks`` (module docstring), each value with its error bounds."""
    import numpy as np

    comps = _components(side, s)
    var = sum(n * c * cc for n, _, c, cc in comps)
    mean = sum((n * Fraction(c) if c <= cc else n - n * Fraction(cc) for n, _, c, cc in comps), Fraction(0))
    k0 = int(ks[0])
    d = float(mean - k0) - (ks - k0)  # the tilted mean minus k, exact to rounding
    m, theta, w, skipped, depth = _nodes(var, s, float(np.max(np.abs(d))) + 1)
    lm, ph, size = np.zeros(theta.size), np.zeros(theta.size), np.zeros(theta.size)
    half2 = np.sin(theta / 2) ** 2
    for n, _, c, cc in comps:
        lm_i = n / 2 * np.log1p(-4 * c * cc * half2)  # ln|1 − c + c·e^(iθ)|^n
        xr = -2 * (cc * np.sin(c * theta / 2) ** 2 + c * np.sin(cc * theta / 2) ** 2)
        xi = c * _sinm(cc * theta) - cc * _sinm(c * theta)
        ph_i = n * np.arctan2(xi, 1 + xr)  # n·(arg(1 − c + c·e^(iθ)) − cθ)
        lm, ph = lm + lm_i, ph + ph_i
        size += np.abs(lm_i) + np.abs(ph_i) + np.where(theta >= 0.5, 4 * n * theta, 0.0)
    phase = ph[:, None] + d[None, :] * theta[:, None]
    t = np.exp(lm)[:, None] * np.exp(1j * phase)
    eta = 16 * _U * (6 + math.log2(theta.size + 2) + size[:, None] + np.abs(phase - ph[:, None]))
    rho = math.exp(s)
    tail = rho / (math.expm1(s) + 2 * half2 + 1j * np.sin(theta))  # e^s/(e^s − e^(−iθ))
    step = -2 * half2 + 1j * np.sin(theta)  # e^(iθ) − 1
    wt = (w / m)[:, None]
    f = (wt * t.real).sum(axis=0)
    dd = (wt * (t * step[:, None]).real).sum(axis=0)
    h = (wt * (t * tail[:, None]).real).sum(axis=0)
    a_t = wt * np.abs(t) * eta
    gap = 1.0 - math.exp(-s * m)
    alias = _bern(m - d, var) + _bern(m + d, var)
    beta = _bern(m - np.abs(d), var)
    h_alias = beta / (1 - beta) + (math.exp(-s * m / 2) + _bern(m / 2 + d, var)) / gap
    f_err = a_t.sum(axis=0) + alias + skipped
    d_err = 2 * a_t.sum(axis=0) + _bern(m - d - 1, var) + _bern(m + d, var) + 2 * skipped
    h_err = (a_t * np.abs(tail)[:, None]).sum(axis=0) + h_alias + skipped / -math.expm1(-s)
    sigmas = sum(math.sqrt(n * c * cc) for n, _, c, cc in comps)
    floor = np.maximum(np.minimum(f - f_err, h - h_err), math.exp(-depth))
    par = np.expm1(12 * _U * sigmas * np.sqrt(2 * np.maximum(-np.log(floor), 1.0)) + 1e-18)
    scale, scale_err = _scale(side, s, ks)
    return _Read(s, ks, f, f_err, dd, d_err, h, h_err, par, scale, scale_err)


def _scale(side: Side, s: float, ks: Any) -> tuple[Any, Any]:
    """ln e^(K(s) − s·k) = Σ count·(ln(1 − c₀ + c₀e^s) − c₀s) + (Σ count·c₀ − k)·s at each k, and a bound on its
    rounding; the bracket as ln(1 + (1 − c₀)(e^(−c₀s) − 1 + c₀s) + c₀(e^((1−c₀)s) − 1 − (1−c₀)s)), no cancellation."""
    import numpy as np

    total, size, mean = 0.0, 0.0, Fraction(0)
    for count, c0 in ((side.a, side.p), (side.b, side.q)):
        if count:
            bracket = count * math.log1p((1 - c0) * _em2(-c0 * s) + c0 * _em2((1 - c0) * s))
            total, size, mean = total + bracket, size + abs(bracket), mean + count * Fraction(c0)
    k0 = int(ks[0])
    lin = (float(mean - k0) - (ks - k0)) * s
    return total + lin, 16 * _U * (size + np.abs(lin) + 1.0)


def _tilt(side: Side, t: float) -> float:
    """The tilt s whose law has mean t: a·p·x/(q + p·x) + b·q·x/(p + q·x) = t, x = e^s (its positive root)."""
    a, b, p, q = float(side.a), float(side.b), side.p, side.q
    t = min(max(t, 0.5), a + b - 0.5)
    c2, c1, c0 = p * q * (a + b - t), a * p * p + b * q * q - t * (p * p + q * q), -t * p * q
    root = math.sqrt(c1 * c1 - 4 * c2 * c0)
    x = (-c1 + root) / (2 * c2) if c1 < 0 else -2 * c0 / (c1 + root)
    return math.log(x)


@dataclass(frozen=True)
class _Cross:
    """The threshold found for ε: t = U, with r(L) <= R < r(U) certain, and the read around it."""

    lower: int
    upper: int
    read: _Read
    index: int


def _log_r(side: Side, rd: _Read) -> tuple[Any, Any]:
    """Bounds on ln r(k) = ln(f(k − 1)/f(k)) at the read's points (+∞ above the support, −∞ at its start)."""
    import numpy as np

    f_lo, f_hi = rd.f - rd.f_err, rd.f + rd.f_err
    d_lo, d_hi = rd.d - rd.d_err, rd.d + rd.d_err
    ok = f_lo > 0
    safe = np.where(ok, f_lo, 1.0)
    lo = np.where(ok, np.minimum(d_lo / safe, d_lo / np.where(ok, f_hi, 1.0)), -1.0)
    hi = np.where(ok, np.maximum(d_hi / safe, d_hi / np.where(ok, f_hi, 1.0)), np.inf)
    lo = np.where(lo > -1, np.log1p(np.maximum(lo, -1.0 + 2.0**-52)), -np.inf)
    hi = np.where(hi < np.inf, np.log1p(np.minimum(hi, 1e300)), np.inf)
    pad = _SLACK + 4 * _U * rd.s
    top, bottom = rd.k > side.a + side.b, rd.k <= 0
    lo = np.where(top, np.inf, np.where(bottom, -np.inf, rd.s + lo - pad))
    hi = np.where(top, np.inf, np.where(bottom, -np.inf, rd.s + hi + pad))
    return lo, hi


def _crossing(side: Side, log_ratio: float) -> _Cross | None:
    """The threshold t* = min{t : r(t) > R} for ln R = ``log_ratio``, bracketed: read around the mean of the law
    tilted by ln R (+1/2: r(t) ≈ e^s at the mean t − 1/2), re-centred (Newton, d ln r/dt ≈ 1/V) until some point
    certainly has r > R and some before it certainly r <= R. The tilt is at least 1/σ (σ² the untilted variance):
    near the mode the tail's geometric weights then still fall fast. ``None`` if that fails (no bound is claimed)."""
    import numpy as np

    floor = 1 / math.sqrt(max(sum(n * c * cc for n, _, c, cc in _components(side, 0.0)), 1.0))
    s = max(log_ratio, floor)
    centre = float(sum(n * c for n, _, c, _ in _components(side, log_ratio))) + 0.5
    for _ in range(8):
        k0 = int(round(centre))
        ks = np.arange(k0 - _REACH, k0 + _REACH + 1)
        rd = _read(side, s, ks)
        lo, hi = _log_r(side, rd)
        got = bracket(lo, hi, log_ratio)
        if got is not None:
            return _Cross(int(ks[got[0]]), int(ks[got[1]]), rd, got[1])
        var = sum(n * c * cc for n, _, c, cc in _components(side, s))
        mid = (lo[_REACH] + hi[_REACH]) / 2 if math.isfinite(lo[_REACH]) and math.isfinite(hi[_REACH]) else math.nan
        move = (log_ratio - mid) * var if math.isfinite(mid) else (_REACH if lo[-1] <= log_ratio else -_REACH)
        centre = k0 + max(-1e9, min(1e9, move if abs(move) >= 2 else math.copysign(_REACH, move)))
        s = max(_tilt(side, centre - 0.5), floor)
    return None


def bracket(lo: Any, hi: Any, log_ratio: float) -> tuple[int, int] | None:
    """Indices j < i of consecutive points with ln r <= ln R certain at j and ln r > ln R certain at i (the first
    such i), from the bounds ``lo``, ``hi`` on ln r; ``None`` if there are none."""
    import numpy as np

    margin = 8 * _U * abs(log_ratio)  # ln R rounded
    above = np.nonzero(lo > log_ratio + margin)[0]
    below = np.nonzero(hi <= log_ratio - margin)[0]
    if not above.size or not below.size or below[0] >= above[0]:
        return None
    return int(below[below < above[0]][-1]), int(above[0])


def _ratio(side: Side, eps: float) -> tuple[float, float, float]:
    """A = p − e^ε·q (rounded up), e^ε − 1 and ln R = ln(1 + (e^ε − 1)/A) for ε < ε₀."""
    e1 = math.expm1(eps)
    a = (side.p - side.q) - side.q * e1
    return a + 4 * _U * (side.p + side.q * (1 + e1)), e1, math.log1p(e1 / a)


def delta_bound(side: Side, eps: float) -> float:
    """An upper bound on δ(P‖Q)(ε) of the dataset ``side`` (module docstring): S at the certified threshold plus
    the off-threshold term, every read value moved the pessimistic way; 1.0 where no threshold could be certified."""
    if eps >= math.log(side.p / side.q):  # no loss exceeds ε₀
        return 0.0
    cross = _crossing(side, _ratio(side, eps)[2])
    if cross is None:
        return 1.0
    return bound_at(side, eps, cross.read, cross.lower - int(cross.read.k[0]), cross.index)


def bound_at(side: Side, eps: float, rd: _Read, j: int, i: int) -> float:
    """:func:`delta_bound` from a read whose points j < i (consecutive in between) have r(k_j) <= R < r(k_i) for
    certain: S(k_i), and the mass of P strictly between times (1 − e^(ε − ℓ(k_i − 1)))₊."""
    import numpy as np

    p, q = side.p, side.q
    a, e1, _ = _ratio(side, eps)
    if a <= 0:
        return 1.0
    grow = 1 + rd.par[i] + 1e-15
    before = (rd.f[i] + rd.d[i] + rd.f_err[i] + rd.d_err[i]) * math.exp(rd.s) * grow  # f_s(t − 1)·e^s, up
    tail = max(rd.h[i] - rd.h_err[i], 0.0) * (2 - grow)
    s_up = max(a * before - e1 * (1 - 4 * _U) * tail, 0.0) * math.exp(rd.scale[i] + rd.scale_err[i])
    if i - j <= 1:
        return float(s_up)
    f_up = (rd.f[j:i] + rd.f_err[j:i]) * (1 + rd.par[j:i]) * np.exp(rd.scale[j:i] + rd.scale_err[j:i])
    mass = float((p * f_up[:-1] + q * f_up[1:]).sum()) * (1 + 4 * _U)  # P(k) for L < k < U, up
    r_hi = math.exp(min(_log_r(side, rd)[1][i - 1], 700.0))
    loss_hi = math.log((p * r_hi + q) / (q * r_hi + p))  # ℓ(U − 1), up
    return float(s_up + mass * (max(-math.expm1(eps - loss_hi), 0.0) + 4 * _U))


def epsilon_lower(side: Side, delta: float, eps: float) -> float:
    """A lower bound on the dataset's ε at δ (direction P‖Q): h(t) at the threshold of ``eps`` (module docstring),
    every read value moved the pessimistic way; 0 where it gives none."""
    p, q = side.p, side.q
    if eps >= math.log(p / q):
        eps = math.log(p / q) * (1 - 1e-9)
    cross = _crossing(side, _ratio(side, eps)[2])
    if cross is None:
        return 0.0
    rd, i = cross.read, cross.index
    shrink, grow = 1 - rd.par[i] - 1e-15, 1 + rd.par[i] + 1e-15
    before_lo = max(rd.f[i] + rd.d[i] - rd.f_err[i] - rd.d_err[i], 0.0) * math.exp(rd.s) * shrink
    before_hi = (rd.f[i] + rd.d[i] + rd.f_err[i] + rd.d_err[i]) * math.exp(rd.s) * grow
    scale = math.exp(rd.scale[i])
    low, high = math.exp(-rd.scale_err[i]) * (1 - 4 * _U), math.exp(rd.scale_err[i]) * (1 + 4 * _U)
    gain = (p - q) * before_lo * scale * low - delta  # (p − q)·f(t − 1) − δ
    q_tail = ((rd.h[i] + rd.h_err[i]) * grow + q * before_hi) * scale * high  # Pr_Q[K >= t]
    if gain <= 0:
        return 0.0
    return max(math.log1p(gain / q_tail) * (1 - 4 * _U), 0.0)


def _approx(side: Side, delta: float, guess: float, eps0: float) -> float:
    """The side's ε at δ, approximately (to about 10⁻⁷, from above or below): the root of ln δ(ε) = ln δ, found
    in x = ln ε by safeguarded secant steps on the δ bound (ln δ is close to linear in x, of slope about −2 ln(1/δ))."""
    def gap(x: float) -> float:
        got = delta_bound(side, math.exp(x))
        return -math.inf if got <= 0 else math.log(got) - math.log(delta)

    top, bottom = math.log(eps0), math.log(1e-12)  # below 10⁻¹², the grid's floor: no search
    x0 = min(max(math.log(max(guess, 1e-12)), bottom), top - 1e-9)
    y0 = gap(x0)
    x1 = min(x0 + (y0 / (2 * math.log(1 / delta) + 1) if math.isfinite(y0) else -0.05), top - 1e-9)
    lo, hi = bottom, top  # gap(lo) > 0 >= gap(hi), but for the ends
    if y0 <= 0 and x0 == bottom:
        return 1e-12
    for _ in range(40):
        x1 = max(x1, bottom)
        y1 = gap(x1)
        if y1 <= 0 and x1 == bottom:
            return 1e-12
        lo, hi = (max(lo, x1), hi) if y1 > 0 else (lo, min(hi, x1))
        if abs(x1 - x0) < 1e-8 or hi - lo < 1e-8:
            break
        step = (x1 - x0) * y1 / (y0 - y1) if math.isfinite(y0) and math.isfinite(y1) and y0 != y1 else None
        x0, y0 = x1, y1
        x1 = x1 + step if step is not None else (x1 - 0.1 if y1 <= 0 else x1 + 0.1)
        if not lo < x1 < hi:  # outside the bracket: bisect
            x1 = (lo + hi) / 2
    return math.exp(min(x1, top))


@functools.lru_cache(maxsize=32)
def large_epsilon(eps0: float, n: int, delta: float) -> tuple[float, float]:
    """The central ε at ``delta`` (a grid δ) of n >= 3 shuffled binary RR reports of ε₀ > 0, valid for every dataset:
    the smallest grid ε at which every interval of :func:`~ldp.privacy.binary_intervals.interval_cuts` in both
    directions has its δ bound within δ, ε₀ if none below it; and a lower bound h for the real dataset at the worst
    interval's start (the exact ε of a real dataset, to its rounding: a lower bound on any valid figure). Cached."""
    p = 1.0 / (1.0 + math.exp(-eps0))
    sides = _sides(n, p)
    guess = _start(sides[0][0], delta)
    found = []
    for side, lo in sides:
        guess = _approx(side, delta, guess, eps0)
        found.append((guess, lo, side))
    found.sort(key=lambda f: -f[0])
    eps = _search([f[2] for f in found], delta, found[0][0], eps0)
    worst = found[0][1]
    lower = 0.0
    for side in (Side(worst, n - 1 - worst, p), Side(n - 1 - worst, worst, p)):
        lower = max(lower, epsilon_lower(side, delta, _approx(side, delta, found[0][0], eps0)))
    return eps, min(eps, lower)


def _sides(n: int, p: float) -> list[tuple[Side, int]]:
    """Each interval's dominating dataset (its first number of ones, and n − its end zeros) in both directions, with
    the interval's start."""
    cuts = interval_cuts(n)
    out = []
    for lo, end in zip(cuts[:-1], cuts[1:], strict=True):
        out += [(Side(lo, n - end, p), lo), (Side(n - end, lo, p), lo)]
    return out


def _search(sides: list[Side], delta: float, guess: float, eps0: float) -> float:
    """The smallest grid ε at which every side's δ bound is within δ (ε₀ if none below it): the grid search of
    :mod:`ldp.privacy.window_grid` from ``guess``, each step asking only the sides that failed at the largest failing
    grid ε below it (a side that passes at some ε passes above it)."""
    failing: dict[int, list[Side]] = {}

    def fails(eps: float) -> bool:
        j = eps_index(eps)
        below = [i for i in failing if i < j]
        now = [s for s in (failing[max(below)] if below else sides) if delta_bound(s, eps) > delta]
        if now:
            failing[j] = now
        return bool(now)

    return grid_search(fails, guess, eps0)


def _start(side: Side, delta: float) -> float:
    """A first ε for the secant steps: (p − q)/2·(e^s − 1), s the tilt whose mean is 0.8·√(2 ln(1/δ)) deviations up."""
    comps = _components(side, 0.0)
    up = 0.8 * math.sqrt(2 * math.log(1 / delta) * sum(n * c * cc for n, _, c, cc in comps))
    return max(math.expm1(_tilt(side, sum(n * c for n, _, c, _ in comps) + up)) * (side.p - side.q) * 0.5, 1e-9)
