"""Quantile sections of ``simulations/benchmark.py`` (registered by :func:`register`): issue 33, item 2a.

Targets: the estimate, CDF and four quantiles with CIs of a k = 1024 bucket histogram in under 50 ms (bucket-OUE
and bucket-GRR, whose covariance is kept in O(k)); the 95 % quantile CIs cover the interpolated quantile in at
least 90 % of exact simulated collections at every ε.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from ldp.decoders.histogram import BucketGRRAggregate, BucketOUEAggregate, DBitFlipAggregate
from ldp.encoders.histogram import BucketGRRParams, BucketOUEParams, DBitFlipParams
from ldp.simulation.histogram import interpolated_quantiles

K = 1024
QS = (0.5, 0.9, 0.95, 0.99)
N_ACC = 100_000


def latency(n: int, seed: int, k: int) -> tuple[tuple[float, ...], np.ndarray]:
    """Lognormal latencies (median 80 ms, σ = 0.8) in ``k`` log-spaced buckets from 0 to 4 s: edges and counts."""
    edges = tuple(np.round(np.geomspace(1.0, 4001.0, k + 1) - 1.0, 6).tolist())
    values = np.clip(np.random.default_rng(seed).lognormal(np.log(80.0), 0.8, n), 0.0, 4000.0)
    return edges, np.histogram(values, bins=edges)[0]


def register(b: ModuleType) -> None:
    """Add the quantile sections to the benchmark module ``b``."""

    @b.benchmark("quantiles_time")
    def quantiles_time(ctx: Any) -> dict[str, Any]:
        """Time of estimate() + quantiles(p50, p90, p95, p99) on k = 1024 buckets, n = 10^6 (aggregate given)."""
        edges, counts = latency(10**6, 90, K)
        out: dict[str, Any] = {"k": K, "n": 10**6, "quantiles": list(QS)}
        for name, params, agg_type in (("bucket-oue", BucketOUEParams(1.0, edges), BucketOUEAggregate),
                                       ("bucket-grr", BucketGRRParams(4.0, edges), BucketGRRAggregate)):
            agg = agg_type.simulate(params, counts, ctx.rng(91))
            timing, table = b.time_runs(lambda _, agg=agg: agg.estimate().quantiles(QS), ctx.sizes.repeats)
            only, _ = b.time_runs(lambda _, agg=agg: agg.estimate(), ctx.sizes.repeats)
            out[name] = {"estimate_and_quantiles_ms": 1e3 * timing["best_s"],
                         "estimate_only_ms": 1e3 * only["best_s"], "p50": float(table.estimate[0]),
                         **ctx.judge(f"{name}.estimate_and_quantiles_ms", 1e3 * timing["best_s"], "<", 50.0, "ms")}
        return out

    @b.benchmark("quantiles_accuracy")
    def quantiles_accuracy(ctx: Any) -> dict[str, Any]:
        """RMSE and 95 % CI coverage of p50 … p99 over exact simulated collections, k = 32 log buckets."""
        reps = 200 if ctx.sizes.repeats > 3 else 60
        edges, counts = latency(N_ACC, 92, 32)
        truth = interpolated_quantiles(edges, counts, QS)
        out: dict[str, Any] = {"n": N_ACC, "k": 32, "reps": reps,
                               "truth_ms": dict(zip(map(str, QS), truth.tolist(), strict=True))}
        for eps in (0.5, 1.0, 2.0, 4.0):
            for name, params, agg_type in (
                    ("bucket-grr", BucketGRRParams(eps, edges), BucketGRRAggregate),
                    ("bucket-oue", BucketOUEParams(eps, edges), BucketOUEAggregate),
                    ("dbitflip d=32", DBitFlipParams(eps, edges, d=32), DBitFlipAggregate)):
                gen = ctx.rng(93)
                tables = [agg_type.simulate(params, counts, gen).estimate().quantiles(QS) for _ in range(reps)]
                est = np.array([t.estimate for t in tables])
                cover = np.mean([(t.low <= truth) & (truth <= t.high) for t in tables], axis=0)
                rmse = np.sqrt(((est - truth) ** 2).mean(axis=0))
                row = {f"p{100 * q:g}": {"rmse_ms": float(r), "coverage": float(c)}
                       for q, r, c in zip(QS, rmse, cover, strict=True)}
                row.update(ctx.judge(f"{name} eps={eps}.min_coverage", float(cover.min()), ">=", 0.90, "fraction"))
                out[f"{name} eps={eps}"] = row
        return out
