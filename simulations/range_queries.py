#!/usr/bin/env python3
"""Range-query accuracy of ldp's hierarchical histograms (``hh``) against the published methods, on one simulated
latency-like population (issue 33, item 2b).

    python simulations/range_queries.py                 # D = 1024, n = 10^6, ε ∈ {0.5, 1, 2, 4} (about 2 minutes)
    python simulations/range_queries.py --quick         # D = 256, n = 10^5, 2 ε (seconds)

Population: latency in milliseconds, a mixture of a log-normal body (90 %) and a Cauchy tail (10 %) on
``[0, 1024)``, bucketed to ``D`` equal buckets. Queries: ranges ``[a, b]`` of buckets, uniform over all
``D(D+1)/2`` pairs (every length). The error is the MSE of the range's *fraction* of users.

Methods (each ε-LDP with one report per user):

* ``hh``: ldp's protocol at the planner's choice (``HHParams.for_epsilon``: B = 4 at D = 256 and 1024, a GRR or OUE
  oracle per level, weighted constrained inference). Exact MSE over every range from the exact covariance of the
  consistent CDF, and the MSE measured over ``--trials`` exact aggregate-level collections.
* ``hh_oue_b4``: ldp's ``hh`` restricted to CKS's configuration (B = 4, OUE at every level).
* ``cks_hh``: an independent re-implementation of CKS's HH_B (PVLDB 2019, §4): B = 4, users uniform over the h
  levels, OUE per level scaled by h (``1/π``), Hay et al.'s constrained inference with equal weights; measured.
* ``cks_haar``: an independent re-implementation of CKS's HaarHRR (§5): users uniform over the h = log₂ D levels of
  Haar detail coefficients (the total is n), each reporting its signed coefficient with Hadamard randomized response
  (a uniform row ``r`` of the Hadamard matrix, the sign ``s·H[r, k]`` kept with ``e^ε/(e^ε+1)``), the coefficients
  recovered by the fast Walsh–Hadamard transform, scaled by ``h/(2p−1)``; measured. Its analytic MSE (CKS's
  analysis, the per-coefficient variance ``h·n/(2p−1)²`` times the range's squared Haar weights, ``≤ 1/4`` for at
  most two coefficients per level) is printed beside it.
* ``flat_oue``: OUE over the D buckets, a range the sum of its buckets (exact: the buckets' variances add up).

Prints one JSON document: per ε, each method's MSE (fractions) and its ratio to the best published method's
(``min(cks_hh, cks_haar)`` measured).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from ldp.decoders.range_tree import HHAggregate  # noqa: E402
from ldp.decoders.range_tree_queries import exact_cdf_covariance  # noqa: E402
from ldp.encoders.range_tree import HHParams  # noqa: E402


def population(n: int, D: int, gen: np.random.Generator) -> np.ndarray:
    """Bucket counts of ``n`` latencies (log-normal body, Cauchy tail) on ``[0, 1024)`` cut into ``D`` buckets."""
    body = gen.lognormal(math.log(40.0), 0.6, size=n)
    tail = 120.0 + np.abs(gen.standard_cauchy(size=n)) * 150.0
    x = np.where(gen.random(n) < 0.9, body, tail)
    x = np.clip(x, 0.0, 1023.999)
    return np.bincount((x * D / 1024.0).astype(np.int64), minlength=D)


def all_range_mse(prefix_cov: np.ndarray) -> float:
    """Mean of ``Var(P_b − P_{a−1})`` over every ``0 ≤ a ≤ b < D`` from the prefix sums' covariance (``P_{−1} = 0``)."""
    D = prefix_cov.shape[0]
    c = np.zeros((D + 1, D + 1))
    c[1:, 1:] = prefix_cov
    return float(((D + 1) * np.trace(c) - c.sum()) / (D * (D + 1) / 2))


def random_ranges(q: int, D: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``q`` ranges uniform over the pairs ``a ≤ b``."""
    a, b = gen.integers(0, D, q), gen.integers(0, D, q)
    return np.minimum(a, b), np.maximum(a, b)


def measured_mse(est_prefix: list[np.ndarray], truth: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """MSE over trials and the given ranges, from estimated prefix sums (fractions)."""
    tp = np.concatenate([[0.0], np.cumsum(truth)])
    want = tp[b + 1] - tp[a]
    errs = [((p[b + 1] - p[a]) - want) ** 2 for p in (np.concatenate([[0.0], e]) for e in est_prefix)]
    return float(np.mean(errs))


# -- independent re-implementations of CKS's methods -----------------------------------------------------------
def cks_hh(t: np.ndarray, eps: float, B: int, gen: np.random.Generator) -> np.ndarray:
    """CKS's HH_B with OUE and Hay's equal-weight consistency: estimated leaf fractions (one collection)."""
    D, n = t.size, int(t.sum())
    h = round(math.log(D, B))
    q = 1.0 / (math.exp(eps) + 1.0)
    split = gen.multinomial(t, np.full(h, 1.0 / h))
    y = []
    for lv in range(h):
        f = split[:, lv].reshape(B ** (lv + 1), -1).sum(axis=1)
        ones = gen.binomial(f, 0.5) + gen.binomial(f.sum() - f, q)
        y.append(h * (ones - f.sum() * q) / (0.5 - q))
    # Hay et al. (VLDB 2010), Thm 3, equal variances: z_v = ((B^i − B^{i−1}) y_v + (B^{i−1} − 1) Σ z_c)/(B^i − 1)
    z = [a.astype(float) for a in y]
    for lv in range(h - 2, -1, -1):
        i = h - lv  # height of the level's nodes (leaves: 1)
        kids = z[lv + 1].reshape(-1, B).sum(axis=1)
        z[lv] = ((B**i - B ** (i - 1)) * y[lv] + (B ** (i - 1) - 1) * kids) / (B**i - 1)
    parent = np.array([float(n)])
    for lv in range(h):
        gap = (parent - z[lv].reshape(-1, B).sum(axis=1)) / B
        parent = z[lv] + np.repeat(gap, B)
    return parent / n


def fwht(a: np.ndarray) -> np.ndarray:
    """Unnormalized fast Walsh–Hadamard transform (Sylvester order) of a power-of-two vector."""
    a = a.astype(float).copy()
    step = 1
    while step < a.size:
        a = a.reshape(-1, 2, step)
        a = np.concatenate([a[:, 0] + a[:, 1], a[:, 0] - a[:, 1]], axis=1).reshape(-1)
        step *= 2
    return a


def cks_haar(t: np.ndarray, eps: float, gen: np.random.Generator) -> np.ndarray:
    """CKS's HaarHRR, every report drawn: estimated leaf fractions (one collection)."""
    D, n = t.size, int(t.sum())
    h = int(math.log2(D))
    p = math.exp(eps) / (math.exp(eps) + 1.0)
    x = np.repeat(np.arange(D), t)
    level = gen.integers(0, h, x.size)  # level j+1: 2^j coefficients, support 2^(h−j) buckets
    theta = []
    for j in range(h):
        xs = x[level == j]
        m, half = 1 << j, D >> (j + 1)
        k, s = xs // (2 * half), np.where((xs // half) % 2 == 0, 1.0, -1.0)
        r = gen.integers(0, m, xs.size)
        hk = np.where(np.bitwise_count((r & k).astype(np.uint64)) % 2 == 0, 1.0, -1.0)  # H[r, k]
        b = s * hk * np.where(gen.random(xs.size) < p, 1.0, -1.0)
        sums = np.bincount(r, weights=b, minlength=m)
        theta.append(h * fwht(sums) / (2 * p - 1))  # Σ_r H[r, k]·S_r, H symmetric
    counts = np.array([float(n)])
    for j in range(h):  # children of each node: (parent ± θ)/2
        counts = np.stack([(counts + theta[j]) / 2, (counts - theta[j]) / 2], axis=1).reshape(-1)
    return counts / n


def haar_analytic_mse(D: int, eps: float, n: int) -> float:
    """CKS-style analytic MSE of HaarHRR over every range (fractions): ``Σ_j Σ_k w_{j,k}²·h/(n(2p−1)²)``, the
    squared Haar weights of the range's two ends (prefix weights at each level)."""
    h = int(math.log2(D))
    p = math.exp(eps) / (math.exp(eps) + 1.0)
    per = h / (n * (2 * p - 1) ** 2)
    # weight of prefix [0, b] on the level-j coefficient holding b: (left overlap − right overlap)/support
    w = np.zeros((D + 1, h))
    for j in range(h):
        size = D >> j
        pos = np.arange(D + 1) % size
        w[:, j] = np.where(pos <= size // 2, pos, size - pos) / size
        w[np.arange(D + 1) % size == 0, j] = 0.0
    # Σ over pairs a < c of the range's squared weights: w_a² + w_c², less 2·w_a·w_c when a and c share the coefficient
    total = 0.0
    for j in range(h):
        size = D >> j
        wj = w[:, j]
        shared = np.bincount(np.arange(D + 1) // size, weights=wj)
        total += D * (wj**2).sum() - ((shared**2).sum() - (wj**2).sum())
    return total * per / (D * (D + 1) / 2)


def run(D: int, n: int, epsilons: list[float], trials: int, queries: int, seed: int) -> dict[str, Any]:
    gen = np.random.default_rng(seed)
    t = population(n, D, gen)
    truth = t / n
    a, b = random_ranges(queries, D, gen)
    out: dict[str, Any] = {"D": D, "n": n, "trials": trials, "queries": queries, "population": "lognormal+cauchy",
                           "results": {}}
    for eps in epsilons:
        res: dict[str, Any] = {}
        for name, params in (("hh", HHParams.for_epsilon(eps, D)),
                             ("hh_oue_b4", HHParams(eps, 0.0, float(D), 4, round(math.log(D, 4)), oracle="oue"))):
            cov = exact_cdf_covariance(params, t) / n**2
            est = [HHAggregate.simulate(params, t, gen).tree().leaves / n for _ in range(trials)]
            res[name] = {"params": params.to_dict(), "exact_mse": all_range_mse(cov),
                         "measured_mse": measured_mse([np.cumsum(e) for e in est], truth, a, b)}
        est = [cks_hh(t, eps, 4, gen) for _ in range(trials)]
        res["cks_hh"] = {"B": 4, "measured_mse": measured_mse([np.cumsum(e) for e in est], truth, a, b)}
        est = [cks_haar(t, eps, gen) for _ in range(trials)]
        res["cks_haar"] = {"measured_mse": measured_mse([np.cumsum(e) for e in est], truth, a, b),
                           "analytic_mse": haar_analytic_mse(D, eps, n)}
        q = 1.0 / (math.exp(eps) + 1.0)
        var_leaf = (truth * 0.25 + (1 - truth) * q * (1 - q)) / (n * (0.5 - q) ** 2)
        cum = np.concatenate([[0.0], np.cumsum(var_leaf)])
        lengths = cum[None, 1:] - cum[:-1, None]
        res["flat_oue"] = {"exact_mse": float(np.triu(lengths).sum() / (D * (D + 1) / 2))}
        best = min(res["cks_hh"]["measured_mse"], res["cks_haar"]["measured_mse"])
        for r in res.values():
            mse = r.get("exact_mse", r.get("measured_mse"))
            r["ratio_to_best_published"] = mse / best
        out["results"][str(eps)] = res
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="D = 256, n = 10^5, ε ∈ {1, 4}, 5 trials")
    ap.add_argument("--seed", type=int, default=20240733)
    args = ap.parse_args(argv)
    if args.quick:
        doc = run(256, 100_000, [1.0, 4.0], 5, 2000, args.seed)
    else:
        doc = run(1024, 1_000_000, [0.5, 1.0, 2.0, 4.0], 20, 5000, args.seed)
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
