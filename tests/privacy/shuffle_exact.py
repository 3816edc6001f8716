"""Exact evaluations written for the tests, independent of :mod:`ldp.privacy.shuffle` and :mod:`ldp.privacy.pld`.

* :func:`krr_delta`: the hockey-stick divergence δ(ε) of the *real* shuffled k-RR output (the histogram of n
  reports) between user 1 holding x₀ and x₁, when the other n − 1 users all hold the same value ``others``
  (``"third"``: a value other than x₀, x₁; ``"x1"``: x₁ itself). A lower bound on the true worst case over
  datasets: a valid guarantee is never below it.

  The histogram N of n reports, user 1's drawn from R(x_b) and the others' from r = R(y), has
  ``Pr_b[N] = Mult_n(N; r) · Σ_o R(x_b)(o) N_o / (n r_o)`` (user 1's report is one of the n, the others a
  multinomial of n − 1). So δ(ε) = Σ_N Mult_n(N; r) · max(0, T₀ − e^ε T₁) / n with T_b = Σ_o R(x_b)(o)/r_o · N_o.
* :func:`pair_delta`: δ(ε) of the clone pair (FMT21 Theorem 3.2's P, Q with C ~ Bin(n − 1, α), mixed with a
  loss-0 branch of weight 1 − ι) summed over every c with scipy, no grouping and no cut.
* :func:`composed_pair_delta`: δ(ε) of that pair composed ``w`` times, by exact enumeration of the privacy-loss
  values (small n only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import binom, multinomial


def krr_delta(p: float, q: float, d: int, n: int, eps: float, others: str = "third", sd: float = 12.0) -> float:
    """δ(ε) of shuffled k-RR (keep p, each other value q) on the dataset above; cells beyond ``sd`` standard
    deviations of a count carry less than 1e-30 and are left out (so the value is a lower bound too)."""
    return krr_deltas(p, q, d, n, [eps], others, sd)[0]


def krr_deltas(p: float, q: float, d: int, n: int, eps: Sequence[float], others: str = "third",
               sd: float = 12.0) -> list[float]:
    """:func:`krr_delta` at each ε of ``eps``, the histogram's law computed once for all of them."""
    if others == "x1":  # categories x0, x1, rest: r = (q, p, (d-2)q); T0 = (p/q) N0 + (q/p) N1 + N_rest, T1 = n
        n0 = _window(n, q, sd)
        n1 = _window(n, p, sd)
        N0, N1 = np.meshgrid(n0, n1, indexing="ij")
        rest = n - N0 - N1
        ok = rest >= 0
        pmf = np.where(ok, multinomial.pmf(np.stack([N0, N1, np.maximum(rest, 0)], -1), n, [q, p, 1 - p - q]), 0.0)
        t0 = (p / q) * N0 + (q / p) * N1 + rest
        return [float((pmf * np.maximum(t0 - math.exp(e) * n, 0.0)).sum() / n) for e in eps]
    if d < 3:
        raise ValueError("a third value needs d >= 3")
    # categories x0, x1, y, rest: r = (q, q, p, (d-3)q); T0 = (p/q) N0 + N1 + (q/p) Ny + Nrest, T1 swaps p/q and 1
    ny = _window(n, p, sd)
    m = _window(n, 2 * q, sd)  # N0 + N1
    totals = [0.0] * len(eps)
    for mm in m:
        n0 = np.arange(0, mm + 1)
        N0, NY = np.meshgrid(n0, ny, indexing="ij")
        N1 = mm - N0
        rest = n - mm - NY
        ok = rest >= 0
        counts = np.stack([N0, N1, NY, np.maximum(rest, 0)], -1)
        pmf = np.where(ok, multinomial.pmf(counts, n, [q, q, p, 1 - p - 2 * q]), 0.0)
        t0 = (p / q) * N0 + N1 + (q / p) * NY + rest
        t1 = N0 + (p / q) * N1 + (q / p) * NY + rest
        for i, e in enumerate(eps):
            totals[i] += float((pmf * np.maximum(t0 - math.exp(e) * t1, 0.0)).sum())
    return [total / n for total in totals]


def _window(n: int, prob: float, sd: float) -> np.ndarray:
    mean, s = n * prob, math.sqrt(n * prob * (1 - prob))
    return np.arange(max(0, int(mean - sd * s - 5)), min(n, int(mean + sd * s + 5)) + 1)


def pair_delta(eps_pair: float, alpha: float, iota: float, n: int, eps: float) -> float:
    """δ(ε) of the clone pair, every c and x summed (scipy's binomial pmf)."""
    return pair_deltas(eps_pair, alpha, iota, n, [eps])[0]


def pair_deltas(eps_pair: float, alpha: float, iota: float, n: int, eps: Sequence[float]) -> list[float]:
    """:func:`pair_delta` at each ε of ``eps``, each c's laws computed once for all of them."""
    a = math.exp(eps_pair) / (math.exp(eps_pair) + 1)
    cs = np.arange(0, n)
    wc = binom.pmf(cs, n - 1, alpha)
    keep = wc > 1e-40
    totals = [0.0] * len(eps)
    for c, w in zip(cs[keep], wc[keep], strict=True):
        x = np.arange(0, c + 2)
        lo, hi = binom.pmf(x - 1, c, 0.5), binom.pmf(x, c, 0.5)
        P, Q = a * lo + (1 - a) * hi, (1 - a) * lo + a * hi
        for i, e in enumerate(eps):
            totals[i] += w * float(np.maximum(P - math.exp(e) * Q, 0.0).sum())
    return [iota * total for total in totals]


def pair_losses(eps_pair: float, alpha: float, iota: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The privacy-loss values ln(P/Q) of the clone pair and their probabilities under P (the loss-0 branch
    included), every outcome listed."""
    a = math.exp(eps_pair) / (math.exp(eps_pair) + 1)
    losses, probs = [np.zeros(1)], [np.array([1.0 - iota])]
    for c in range(n):
        w = binom.pmf(c, n - 1, alpha)
        if w < 1e-40:
            continue
        x = np.arange(0, c + 2)
        lo, hi = binom.pmf(x - 1, c, 0.5), binom.pmf(x, c, 0.5)
        P, Q = a * lo + (1 - a) * hi, (1 - a) * lo + a * hi
        losses.append(np.log(P / Q))
        probs.append(iota * w * P)
    return np.concatenate(losses), np.concatenate(probs)


def composed_pair_delta(eps_pair: float, alpha: float, iota: float, n: int, w: int, eps: float) -> float:
    """δ(ε) of the clone pair composed ``w`` times: E_P[max(0, 1 − e^(ε − L₁ − … − L_w))], the losses
    enumerated exactly (their values merged to 1e-12)."""
    loss, prob = pair_losses(eps_pair, alpha, iota, n)
    keys = np.round(loss, 12)
    loss, inverse = np.unique(keys, return_inverse=True)
    prob = np.bincount(inverse, weights=prob)
    total_l, total_p = np.zeros(1), np.ones(1)
    for _ in range(w):
        total_l = np.round((total_l[:, None] + loss[None, :]).ravel(), 12)
        total_p = (total_p[:, None] * prob[None, :]).ravel()
        total_l, inv = np.unique(total_l, return_inverse=True)
        total_p = np.bincount(inv, weights=total_p)
    return float((total_p * np.maximum(1.0 - np.exp(eps - total_l), 0.0)).sum())


def worst_krr_delta(p: float, q: float, d: int, n: int, eps: float) -> float:
    """max over every dataset of the other n − 1 users (each multiset of values) and both directions of the δ(ε)
    of the real shuffled k-RR histogram, user 1 holding value 0 or 1: the exact worst case (tiny n, d only)."""
    from itertools import combinations_with_replacement

    def histogram(inputs: tuple[int, ...]) -> dict[tuple[int, ...], float]:
        law: dict[tuple[int, ...], float] = {tuple([0] * d): 1.0}
        for x in inputs:
            step: dict[tuple[int, ...], float] = {}
            for counts, pr in law.items():
                for o in range(d):
                    key = counts[:o] + (counts[o] + 1,) + counts[o + 1:]
                    step[key] = step.get(key, 0.0) + pr * (p if o == x else q)
            law = step
        return law

    worst = 0.0
    for others in combinations_with_replacement(range(d), n - 1):
        a, b = histogram((0, *others)), histogram((1, *others))
        for u, v in ((a, b), (b, a)):
            worst = max(worst, sum(max(pr - math.exp(eps) * v.get(k, 0.0), 0.0) for k, pr in u.items()))
    return worst


def composed_rr_delta(eps0: float, delta0: float, k: int, eps: float) -> float:
    """δ(ε) of k (ε₀, δ₀)-DP mechanisms composed, at their worst case (Kairouz, Oh and Viswanath 2015): the
    privacy loss is ε₀·(k − 2j) with probability C(k, j)·a^(k−j)·(1−a)^j, a = e^ε₀/(1+e^ε₀), given that none of the
    k δ₀-events happened (otherwise infinite)."""
    a = math.exp(eps0) / (1 + math.exp(eps0))
    j = np.arange(k + 1)
    pr = binom.pmf(j, k, 1 - a)
    finite = float((pr * np.maximum(1.0 - np.exp(eps - eps0 * (k - 2 * j)), 0.0)).sum())
    none = (1 - delta0) ** k
    return 1 - none + none * finite
