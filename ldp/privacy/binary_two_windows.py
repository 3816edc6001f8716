"""Two windows of shuffled binary randomized response among few users: the device's exact central ε against datasets
chosen adaptively, every dataset of each window enumerated.

**The pairs of one window.** Among n users, with the other n − 1 holding ``k`` ones, the analyst sees the count of
ones, K = Bin(k, p) + Bin(n − 1 − k, 1 − p) plus user 1's report (1 with probability p if it holds 1, 1 − p if 0;
p = e^ε₀/(e^ε₀ + 1)): P_k (user 1 holds 1) and Q_k (it holds 0) over 0..n. The count is the whole shuffled output,
so the n pairs (P_k, Q_k), k = 0..n − 1, are every dataset's; the other direction is among them too: (Q_k, P_k) is
(P_{n−1−k}, Q_{n−1−k}) with every bit flipped (K read as n − K), whose δ is the same.

**Two windows, adaptively** (the recursion behind adaptive composition: Dwork, Rothblum and Vadhan, FOCS 2010;
Kairouz, Oh and Viswanath, ICML 2015, for its optimal form). Window 2's dataset and direction may be chosen after
seeing window 1's output o (the users' data may react to what was published). Writing δ_k(x) = Σ (P_k − e^x·Q_k)₊,
the joint output's δ at ε is Σ_o Σ_o' (P(o)·P'_o(o') − e^ε·Q(o)·Q'_o(o'))₊ for window 1's pair (P, Q) and the pair
(P'_o, Q'_o) chosen after o, which is at most

    δ₂(ε) = max over window 1's k of Σ_o max over window 2's k' of Σ_o' (P_k(o)·P_k'(o') − e^ε·Q_k(o)·Q_k'(o'))₊,

and equal to it for the adversary that picks the maximising k' at each o: this is the exact δ of two windows against
adaptively chosen datasets (and at least the worst pair of fixed datasets: a window whose data does not change is a
post-processing of any pair, and gives less). Both windows' orders are taken, the larger kept, so the order in time
need not be known. Composing one dominating pair per window (:mod:`ldp.privacy.over_time`) bounds the same quantity
from above; at tiny n and large δ the hull pair that dominates every dataset is far from each of them, and this sum
is what it loosely bounds (two windows of ε₀ = 1 among n = 29 at δ = 0.094: 0.0431 here, 0.0475 composed).

**Computed.** The binomials from log-factorials (relative error below 10⁻¹² at these sizes), every P moved up and Q
down by :data:`~ldp.privacy.loss_lattice.RHO`, products below the smallest normal float charged 10⁻³⁰⁷ each (the δ's
asked are at least 10⁻²⁰⁰). A quick estimate through tail sums of each pair sorted by loss finds the answer's
neighbourhood; the grid search of :mod:`ldp.privacy.window_grid` then decides with the direct sums above, so the
figure is the smallest grid ε whose δ₂ is within δ — never below the exact one, and monotone in δ by construction.
The work is about n⁴ products per ε tried (n <= :data:`TWO_MAX`).

Server side: numpy (the ``server`` extra), imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ldp.privacy.loss_lattice import RHO
from ldp.privacy.window_grid import grid_search

__all__ = ["TWO_MAX", "TWO_WINDOWS", "binary_pairs", "two_window_delta", "two_window_epsilon"]

TWO_MAX = 48
"""The most users per window the two windows are enumerated for (about 5·10⁶ products per ε tried)."""
TWO_WINDOWS = "two windows, every dataset enumerated (adaptive, exact)"
"""The method name of a figure from this module."""
_CHARGE = 1e-307
"""What one product below the smallest normal float (2.2·10⁻³⁰⁸) may have been."""


@functools.lru_cache(maxsize=16)
def binary_pairs(eps0: float, n: int) -> tuple[Any, Any]:
    """P_k and Q_k (module docstring) for k = 0..n − 1, as two (n, n + 1) arrays, P moved up and Q down by RHO."""
    import numpy as np

    p = 1.0 / (1.0 + math.exp(-eps0))
    lf = np.array([math.lgamma(j + 1.0) for j in range(n + 1)])

    def binomial(size: int, prob: float) -> Any:
        j = np.arange(size + 1)
        return np.exp(lf[size] - lf[j] - lf[size - j] + j * math.log(prob) + (size - j) * math.log1p(-prob))

    big_p, big_q = np.zeros((n, n + 1)), np.zeros((n, n + 1))
    for k in range(n):
        others = np.convolve(binomial(k, p), binomial(n - 1 - k, 1.0 - p))  # the others' count of ones, 0..n − 1
        before, at = np.concatenate([[0.0], others]), np.concatenate([others, [0.0]])
        big_p[k], big_q[k] = p * before + (1 - p) * at, (1 - p) * before + p * at
    return big_p * (1 + RHO), big_q * (1 - RHO)


def two_window_delta(first: tuple[Any, Any], second: tuple[Any, Any], eps: float) -> float:
    """δ₂(ε) of the module docstring, window ``first``'s pairs then ``second``'s (each as :func:`binary_pairs`), by
    direct sums, with the charge for products below the smallest normal float."""
    import numpy as np

    (p1, q1), (p2, q2) = first, second
    e = math.exp(eps)
    worst = 0.0
    for k in range(p1.shape[0]):
        terms = p1[k][:, None, None] * p2[None] - (e * q1[k])[:, None, None] * q2[None]  # (o, k', o')
        worst = max(worst, float(np.maximum(terms, 0.0).sum(axis=2).max(axis=1).sum()))
    return worst + _CHARGE * int(p1.shape[1]) * int(p2.shape[1])


def _estimate(first: tuple[Any, Any], second: tuple[Any, Any], delta: float, top: float) -> float:
    """δ₂'s crossing of ``delta`` found with tail sums (cancellation makes it an estimate only): each pair of window
    2 sorted by loss once, every point ε − L(o) of window 1 looked up, bisection on ε."""
    import numpy as np

    (p1, q1), (p2, q2) = first, second

    def losses(big_p: Any, big_q: Any) -> Any:  # within ±top (binary RR's are within ±ε₀; ±inf where one underflowed)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.clip(np.nan_to_num(np.log(big_p) - np.log(big_q), nan=0.0), -top, top)

    loss2 = losses(p2, q2)
    order = np.argsort(loss2, axis=1)
    loss2 = np.take_along_axis(loss2, order, axis=1)
    up_p = np.cumsum(np.take_along_axis(p2, order, axis=1)[:, ::-1], axis=1)[:, ::-1]
    up_q = np.cumsum(np.take_along_axis(q2, order, axis=1)[:, ::-1], axis=1)[:, ::-1]
    up_p, up_q = np.hstack([up_p, np.zeros((len(up_p), 1))]), np.hstack([up_q, np.zeros((len(up_q), 1))])
    loss1, rows = losses(p1, q1), np.arange(p2.shape[0])[:, None]

    def delta_at(eps: float) -> float:
        y = (eps - loss1).ravel()  # every (k, o) of window 1
        at = np.stack([np.searchsorted(loss2[j], y, side="right") for j in range(len(loss2))])
        inner = np.maximum(up_p[rows, at] - np.exp(y)[None] * up_q[rows, at], 0.0).max(axis=0)
        return float((p1.ravel() * inner).reshape(p1.shape).sum(axis=1).max())

    lo, hi, f_lo, f_hi = 0.0, top, math.inf, -math.inf  # f = ln δ₂ − ln δ: > 0 at lo, <= 0 at hi
    for i in range(60):  # regula falsi on ln δ₂ (Illinois), a bisection step where a side is infinite or every 4th
        if hi - lo <= 1e-7 * hi:
            break
        finite = math.isfinite(f_lo) and math.isfinite(f_hi) and f_lo != f_hi and i % 4 != 3
        mid = hi - f_hi * (hi - lo) / (f_hi - f_lo) if finite else (lo + hi) / 2
        mid = mid if lo < mid < hi else (lo + hi) / 2
        value = delta_at(mid)
        f = math.log(value) - math.log(delta) if value > 0 else -math.inf
        if f > 0:
            lo, f_lo, f_hi = mid, f, f_hi / 2 if math.isfinite(f_hi) else f_hi
        else:
            hi, f_hi, f_lo = mid, f, f_lo / 2 if math.isfinite(f_lo) else f_lo
    return hi


@functools.lru_cache(maxsize=32)
def two_window_epsilon(first: tuple[float, int], second: tuple[float, int], delta: float) -> float:
    """The central ε at ``delta`` of two windows of shuffled binary randomized response, ``first`` and ``second``
    each (ε₀, n) with 2 <= n <= :data:`TWO_MAX`, against datasets chosen adaptively (module docstring): the smallest
    grid ε whose δ₂ in either order is within δ. ``ValueError`` outside n <= TWO_MAX, 0 < ε₀ <= 30 and
    10⁻²⁰⁰ <= δ < 1. Cached."""
    for eps0, n in (first, second):
        if not (2 <= n <= TWO_MAX and 0.0 < eps0 <= 30.0) or not 1e-200 <= delta < 1.0:
            raise ValueError(f"two windows are enumerated for 2 <= n <= {TWO_MAX}, 0 < ε₀ <= 30 and "
                             f"1e-200 <= δ < 1, got {first}, {second}, {delta}")
    a, b = binary_pairs(*first), binary_pairs(*second)
    orders = [(a, b)] if first == second else [(a, b), (b, a)]
    top = first[0] + second[0]
    guess = max(_estimate(x, y, delta, top) for x, y in orders)
    return grid_search(lambda e: max(two_window_delta(x, y, e) for x, y in orders) > delta, guess, top)
