"""Local-hashing sections of ``simulations/benchmark.py`` (registered by :func:`register`): issue 19.

Targets: the OLH server folds 1e6 reports at d = 1024 in <= 2 s and at d = 65,536 in <= 60 s (single
core); batch encode >= 1e7 reports/s; one ``encode()`` from the OS CSPRNG <= 10 µs; OLH's per-user
variance (rounded g) / the optimum 4e^ε/(e^ε−1)² <= 1.05 at ε in {0.5, 1, 2, 4}; measured variance /
own exact formula in [0.95, 1.05] (aggregate-level simulation and real reports).
"""

from __future__ import annotations

import math
import time
from types import ModuleType
from typing import Any

import numpy as np

from ldp.decoders.local_hashing import LocalHashingAggregate, lh_per_user_variance
from ldp.encoders.local_hashing import BLHEncoder, BLHParams, LocalHashingParams, OLHEncoder, OLHParams

D = 1024
SERVER_N = 1_000_000
SERVER_CASES = ((1024, 2.0), (65_536, 60.0))  # (d, target seconds for SERVER_N reports)
REPS, N = 4000, 20_000  # variance ratio: sd of a ratio of variances from R draws ~ sqrt(2/(R-1)) = 0.022, so
# [0.95, 1.05] is 2.2 sd wide each side (32 judged ratios: one or two may fall outside by chance)
ENCODERS = {"olh": (OLHParams, OLHEncoder), "blh": (BLHParams, BLHEncoder)}


def optimum(eps: float) -> float:
    """The per-user variance optimum of a frequency oracle for all items, 4e^ε/(e^ε−1)² (Wang et al. 2017)."""
    e = math.exp(eps)
    return 4 * e / (e - 1) ** 2


def server_fold(params: OLHParams, n: int, gen: np.random.Generator) -> dict[str, Any]:
    """Seconds to fold ``n`` batch-encoded reports into a fresh aggregate and estimate (one run, one core)."""
    batch = OLHEncoder(params).encode_batch(gen.integers(0, params.domain_size, n), gen)
    agg = LocalHashingAggregate(params)
    t0 = time.perf_counter()
    agg.add(batch)
    agg.estimate()
    seconds = time.perf_counter() - t0
    return {"n": n, "d": params.domain_size, "g": params.g, "seconds": seconds,
            "pairs_per_ns": n * params.domain_size / seconds / 1e9, "check_n": agg.n == n}


def variance_row(params: LocalHashingParams, reps: int, gen: np.random.Generator, reports: bool) -> list[float]:
    """Measured variance / exact formula of items 0 (half the users) and 1 (1 %) over ``reps`` collections of N."""
    d = params.domain_size
    counts = np.zeros(d, dtype=np.int64)
    counts[0], counts[1] = N // 2, N // 100
    counts[2] = N - counts[0] - counts[1]
    values = np.repeat(np.arange(d), counts)
    enc = ENCODERS[params.protocol][1](params)
    est = np.empty((reps, 2))
    for i in range(reps):
        if reports:
            agg = LocalHashingAggregate(params)
            agg.add(enc.encode_batch(values, gen))
        else:
            agg = LocalHashingAggregate.simulate(params, counts, gen)
        est[i] = agg.estimate().count[:2]
    exact = LocalHashingAggregate.exact_variance(params, counts)[:2]
    return (est.var(axis=0, ddof=1) / exact).tolist()


def register(b: ModuleType) -> None:
    """Add the local-hashing sections to the benchmark module ``b``."""

    @b.benchmark("lh_server")
    def lh_server(ctx: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for d, target in SERVER_CASES:  # --quick: 10^5 reports at d = 1024, 2·10^4 at d = 65,536 (~1 ns per pair)
            n = SERVER_N if ctx.sizes.repeats > 3 else SERVER_N // 10 if d <= 1024 else SERVER_N // 50
            b.log(f"  olh eps=1: fold {n:,} reports at d={d:,}")
            row = server_fold(OLHParams(1.0, d), n, ctx.rng(80))
            row.update(ctx.judge(f"olh d={d}.seconds_per_1e6", row["seconds"] * SERVER_N / n, "<=", target, "s"))
            out[f"d={d}"] = row
        return out

    @b.benchmark("lh_batch_encode")
    def lh_batch_encode(ctx: Any) -> dict[str, Any]:
        values = ctx.rng(81).integers(0, D, ctx.sizes.batch_n, dtype=np.uint16)
        return {name: b.batch_encode_section(ctx, enc(params(1.0, D)), {"uint16": values}, 1e7)
                for name, (params, enc) in ENCODERS.items()}

    @b.benchmark("lh_client_report")
    def lh_client_report(ctx: Any) -> dict[str, Any]:
        s = ctx.sizes
        out: dict[str, Any] = {"rng": b.CLIENT_RNG_NOTE}
        for name, (params, enc) in ENCODERS.items():
            b.log(f"  {name}: {s.client_calls:,} calls, no ledger, d={D}")
            row = b.client_path_timing(enc(params(1.0, D)), 7, s.client_calls, s.client_batch)
            row.update(ctx.judge(f"{name}.us_mean", row["us_mean"], "<=", 10.0, "µs/report"))
            out[name] = row
        return out

    @b.benchmark("lh_variance")
    def lh_variance(ctx: Any) -> dict[str, Any]:
        """OLH's per-user variance with its rounded g / the optimum; measured variance / the exact formula over R
        aggregate-level simulations (and fewer collections of real reports) for a common and a rare item."""
        reps = REPS if ctx.sizes.repeats > 3 else 500
        out: dict[str, Any] = {"reps": reps, "n": N, "d": 64}
        for eps in (0.5, 1.0, 2.0, 4.0):
            row: dict[str, Any] = {}
            for name, (params_type, _) in ENCODERS.items():
                params = params_type(eps, 64)
                ratio = lh_per_user_variance(params) / optimum(eps)
                sim = variance_row(params, reps, ctx.rng(82), reports=False)
                real = variance_row(params, reps, ctx.rng(83), reports=True)
                row[name] = {"g": params.g, "per_user_over_optimum": ratio, "measured_over_exact_simulated": sim,
                             "measured_over_exact_reports": real}
                if name == "olh":
                    row[name]["optimum"] = ctx.judge(f"olh eps={eps}.per_user_over_optimum", ratio, "<=", 1.05,
                                                     "ratio")
                for how, ratios in (("simulated", sim), ("reports", real)):
                    row[name][f"within_{how}"] = [
                        ctx.judge(f"{name} eps={eps} {how}.measured_over_exact_{item}", r, op, bound, "ratio")
                        for item, r in zip(("common", "rare"), ratios, strict=True)
                        for op, bound in ((">=", 0.95), ("<=", 1.05))]
            out[f"eps={eps}"] = row
        return out
