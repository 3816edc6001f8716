"""Exact evaluations of shuffled k-RR on concrete datasets, written for the tests of :mod:`ldp.privacy.krr_shuffle`
and independent of it: the histogram's law is computed from the multinomial laws of the others' counts directly
(no blanket, no mixture over J), so they check its reduction as well as its arithmetic.

* :func:`x1_pair`: every other user holds x₁. The counts (N₀, N₁) on x₀, x₁ are sufficient (the rest of the histogram
  is uniform over the d − 2 other values given its size, the same under both inputs of user 1).
* :func:`third_pair`: every other user holds one value y outside {x₀, x₁}. (N₀, N₁, N_y) is sufficient (the
  rest of the histogram is uniform over the d − 3 remaining values given its size).

Each returns user 1's two laws P (holding x₀) and Q (holding x₁) over the statistic, cut at ``sd`` standard
deviations of each count (what is left out is below 10⁻¹⁸, so the δ computed from them is a lower bound, and
within 10⁻¹⁸ of the exact one).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom


def probabilities(eps0: float, d: int) -> tuple[float, float]:
    """k-RR's p (keep) and q (each other value) at ε₀ over d values."""
    e = math.exp(eps0)
    return e / (e + d - 1), 1 / (e + d - 1)


def _window(size: int, prob: float, sd: float) -> np.ndarray:
    mean, s = size * prob, math.sqrt(size * prob * (1 - prob))
    return np.arange(max(0, int(mean - sd * s) - 2), min(size, int(mean + sd * s) + 3) + 1)


def x1_pair(eps0: float, d: int, n: int, sd: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    """P and Q of (N₀, N₁) when the n − 1 others all hold x₁ (2-D arrays)."""
    p, q = probabilities(eps0, d)
    n0 = _window(n, q, sd)
    n1 = _window(n, p, sd)
    a, b = np.meshgrid(np.concatenate([[n0[0] - 1], n0]), np.concatenate([[n1[0] - 1], n1]), indexing="ij")
    # the others: N₀ ~ Bin(n − 1, q), then N₁ | N₀ ~ Bin(n − 1 − N₀, p/(1 − q))
    f = binom.pmf(a, n - 1, q) * binom.pmf(b, np.maximum(n - 1 - a, 0), p / (1 - q))
    f = np.where((a >= 0) & (b >= 0) & (a + b <= n - 1), f, 0.0)
    here, left, down = f[1:, 1:], f[:-1, 1:], f[1:, :-1]  # F(n0, n1), F(n0 − 1, n1), F(n0, n1 − 1)
    rest = 1 - p - q
    return p * left + q * down + rest * here, q * left + p * down + rest * here


def third_pair(eps0: float, d: int, n: int, sd: float = 9.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """P and Q of (N_y, N₀, N₁) when the n − 1 others all hold y, flattened to the outcomes of positive mass (one
    (P, Q) pair in a list)."""
    p, q = probabilities(eps0, d)
    n0 = _window(n, q, sd)
    n1 = _window(n, q, sd)
    a, b = np.meshgrid(np.concatenate([[n0[0] - 1], n0]), np.concatenate([[n1[0] - 1], n1]), indexing="ij")
    rest = (d - 3) * q

    def others(y: int) -> np.ndarray:  # N_y ~ Bin(n − 1, p), N₀ | N_y ~ Bin(n − 1 − N_y, q/(1 − p)), N₁ | both
        if y < 0:
            return np.zeros(a.shape)
        f = (binom.pmf(y, n - 1, p) * binom.pmf(a, max(n - 1 - y, 0), q / (1 - p))
             * binom.pmf(b, np.maximum(n - 1 - y - a, 0), min(1.0, q / (1 - p - q))))
        return np.where((a >= 0) & (b >= 0) & (y + a + b <= n - 1), f, 0.0)

    slices = []
    before = others(int(_window(n, p, sd)[0]) - 1)
    for y in _window(n, p, sd):
        f = others(int(y))
        here, at_0, at_1, at_y = f[1:, 1:], f[:-1, 1:], f[1:, :-1], before[1:, 1:]
        big_p = p * at_0 + q * at_1 + q * at_y + rest * here
        big_q = q * at_0 + p * at_1 + q * at_y + rest * here
        keep = (big_p > 0) | (big_q > 0)
        slices.append((big_p[keep], big_q[keep]))
        before = f
    return [(np.concatenate([s[0] for s in slices]), np.concatenate([s[1] for s in slices]))]


def delta(pair: tuple[np.ndarray, np.ndarray] | list[tuple[np.ndarray, np.ndarray]], eps: float) -> float:
    """max(δ(P‖Q), δ(Q‖P)) at ε (a list: the slices of one joint law, summed)."""
    pairs = pair if isinstance(pair, list) else [pair]
    e = math.exp(eps)
    forward = sum(float(np.maximum(big_p - e * big_q, 0).sum()) for big_p, big_q in pairs)
    backward = sum(float(np.maximum(big_q - e * big_p, 0).sum()) for big_p, big_q in pairs)
    return max(forward, backward)


def epsilon(pair: tuple[np.ndarray, np.ndarray] | list[tuple[np.ndarray, np.ndarray]], target: float,
            top: float) -> float:
    """The smallest ε (bisection to 10⁻⁶ relative) with :func:`delta` at most ``target``: the dataset's exact ε."""
    lo, hi = 0.0, top
    while hi - lo > 1e-6 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta(pair, mid) > target else (lo, mid)
    return hi
