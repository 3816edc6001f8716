"""Exact lower bounds for a device's k reports of binary randomized response in one shuffle, written for the tests,
independent of :mod:`ldp.privacy.over_time` and :mod:`ldp.privacy.target`.

n reports are shuffled together: the device's k (its values all 0, or all 1: the neighbouring datasets) and n − k
others, ``ones`` of them holding 1 and the rest 0. The analyst sees only the count K of reported 1s, so the window's
law under each dataset is that of K: the others' count (Bin(ones, p) + Bin(rest, 1 − p)) plus the device's
(Bin(k, 1 − p) holding 0, Bin(k, p) holding 1), p = e^ε₀/(1 + e^ε₀). Its hockey-stick divergence δ(ε), the larger of
the two directions, is the exact δ of that one dataset: a valid guarantee is never below the ε it gives at δ.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom


def _count_law(ones: int, zeros: int, p: float) -> np.ndarray:
    """The law of Bin(ones, p) + Bin(zeros, 1 − p) over 0..ones + zeros (direct, or FFT when long)."""
    a = binom.pmf(np.arange(ones + 1), ones, p)
    b = binom.pmf(np.arange(zeros + 1), zeros, 1.0 - p)
    if min(a.size, b.size) < 2000:
        return np.convolve(a, b)
    from scipy.signal import fftconvolve  # long laws: FFT, absolute rounding ~1e-16, far below the δ asked

    return np.maximum(fftconvolve(a, b), 0.0)


def k_reports_delta(eps0: float, k: int, n: int, ones: int, eps: float) -> float:
    """δ(ε) of the count K for the dataset above (the larger direction)."""
    p = 1.0 / (1.0 + math.exp(-eps0))
    others = _count_law(ones, n - k - ones, p)
    law0 = np.convolve(others, binom.pmf(np.arange(k + 1), k, 1.0 - p))
    law1 = np.convolve(others, binom.pmf(np.arange(k + 1), k, p))
    e = math.exp(eps)
    return float(max(np.maximum(law0 - e * law1, 0.0).sum(), np.maximum(law1 - e * law0, 0.0).sum()))


def k_reports_epsilon(eps0: float, k: int, n: int, ones: int, delta: float) -> float:
    """The smallest ε (bisection, to 1e-6, rounded down: a lower bound) with δ(ε) <= ``delta`` for the dataset."""
    lo, hi = 0.0, k * eps0
    if k_reports_delta(eps0, k, n, ones, 0.0) <= delta:
        return 0.0
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2
        if k_reports_delta(eps0, k, n, ones, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return lo


def worst_k_reports_epsilon(eps0: float, k: int, n: int, delta: float, points: int = 9) -> float:
    """The largest :func:`k_reports_epsilon` over ``points`` datasets (the others' ones from 0 to half of them):
    still a lower bound on the worst case."""
    rest = n - k
    return max(k_reports_epsilon(eps0, k, n, int(round(rest * f / (2 * (points - 1)))), delta)
               for f in range(points))


def _krr_counts(size: int, probs: tuple[float, float, float]) -> np.ndarray:
    """The joint law of the counts on values 0 and 1 of ``size`` independent reports drawn from ``probs`` (over
    values 0, 1, 2), as an array indexed [N0, N1] (the multinomial, N2 = size − N0 − N1)."""
    from scipy.stats import multinomial

    n0, n1 = np.meshgrid(np.arange(size + 1), np.arange(size + 1), indexing="ij")
    rest = size - n0 - n1
    ok = rest >= 0
    counts = np.stack([n0, n1, np.maximum(rest, 0)], -1)
    return np.where(ok, multinomial.pmf(counts, size, list(probs)), 0.0)


def krr3_k_reports_epsilon(eps0: float, k: int, n: int, others: str, delta: float) -> float:
    """The exact ε at ``delta`` of the shuffled histogram of 3-RR (keep p = e^ε₀/(e^ε₀ + 2), each other value q) when
    a device's k reports hold value 0 (P) or value 1 (Q) and the n − k others all hold value 2 (``"third"``) or
    value 1 (``"x1"``): a real dataset, so a lower bound on any valid figure (bisection, rounded down)."""
    from scipy.signal import fftconvolve

    p = math.exp(eps0) / (math.exp(eps0) + 2.0)
    q = 1.0 / (math.exp(eps0) + 2.0)
    rest = _krr_counts(n - k, (q, q, p) if others == "third" else (q, p, q))
    law0 = np.maximum(fftconvolve(rest, _krr_counts(k, (p, q, q))), 0.0)
    law1 = np.maximum(fftconvolve(rest, _krr_counts(k, (q, p, q))), 0.0)

    def delta_at(eps: float) -> float:
        e = math.exp(eps)
        return float(max(np.maximum(law0 - e * law1, 0.0).sum(), np.maximum(law1 - e * law0, 0.0).sum()))

    lo, hi = 0.0, k * eps0
    if delta_at(0.0) <= delta:
        return 0.0
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if delta_at(mid) <= delta else (mid, hi)
    return lo
