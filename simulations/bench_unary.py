"""Unary-encoding sections of ``simulations/benchmark.py`` (registered by :func:`register`): issue 19.

Targets: batch encode >= 1e6 reports/s for OUE at d = 1024; per-user variance / the optimum 4e^ε/(e^ε−1)²
<= 1.05 for OUE at ε in {0.5, 1, 2, 4}; measured variance / own exact formula in [0.95, 1.05].
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from ldp.decoders.unary import UnaryAggregate
from ldp.encoders.unary import OUEEncoder, OUEParams, SUEEncoder, SUEParams

D = 1024
REPS, N = 4000, 20_000  # variance ratio: sd of a ratio of variances from R draws ~ sqrt(2/(R-1)) = 0.022


def optimum(eps: float) -> float:
    """The per-user variance optimum of a frequency oracle for all items, 4e^ε/(e^ε−1)² (Wang et al. 2017)."""
    e = math.exp(eps)
    return 4 * e / (e - 1) ** 2


def register(b: ModuleType) -> None:
    """Add the unary-encoding sections to the benchmark module ``b``."""

    @b.benchmark("unary_batch_encode")
    def unary_batch_encode(ctx: Any) -> dict[str, Any]:
        values = ctx.rng(70).integers(0, D, ctx.sizes.batch_n // 10, dtype=np.uint16)  # 128-byte reports
        return {name: b.batch_encode_section(ctx, enc(params(1.0, D)), {"uint16": values}, 1e6)
                for name, (params, enc) in {"oue": (OUEParams, OUEEncoder), "sue": (SUEParams, SUEEncoder)}.items()}

    @b.benchmark("unary_client_report")
    def unary_client_report(ctx: Any) -> dict[str, Any]:
        s = ctx.sizes
        out: dict[str, Any] = {"rng": b.CLIENT_RNG_NOTE}
        for name, (params, enc) in {"oue": (OUEParams, OUEEncoder), "sue": (SUEParams, SUEEncoder)}.items():
            b.log(f"  {name}: {s.client_calls:,} calls, no ledger, d={D}")
            out[name] = b.client_path_timing(enc(params(1.0, D)), 7, s.client_calls, s.client_batch)
        return out

    @b.benchmark("unary_variance")
    def unary_variance(ctx: Any) -> dict[str, Any]:
        """Per-user variance of OUE's count / the optimum (exact formula, small f), and the measured variance
        over R aggregate-level simulations / the exact formula, for a rare and a common item."""
        reps = REPS if ctx.sizes.repeats > 3 else 500
        out: dict[str, Any] = {"reps": reps, "n": N, "d": 64}
        for eps in (0.5, 1.0, 2.0, 4.0):
            params = OUEParams(eps, 64)
            one = np.zeros(64, dtype=np.int64)
            one[63] = 1  # one user, not holding item 0: the per-user variance of a rare item's count
            per_user = float(UnaryAggregate.exact_variance(params, one)[0])
            counts = np.zeros(64, dtype=np.int64)
            counts[0], counts[1] = N // 2, N // 100
            counts[2] = N - counts[0] - counts[1]
            gen = ctx.rng(71)
            est = np.array([UnaryAggregate.simulate(params, counts, gen).estimate().count[:2] for _ in range(reps)])
            exact = UnaryAggregate.exact_variance(params, counts)[:2]
            ratio = (est.var(axis=0, ddof=1) / exact).tolist()
            row = {"per_user_over_optimum": per_user / optimum(eps), "measured_over_exact": ratio}
            row.update(ctx.judge(f"oue eps={eps}.per_user_over_optimum", per_user / optimum(eps), "<=", 1.05,
                                 "ratio"))
            out[f"eps={eps}"] = row
        return out
