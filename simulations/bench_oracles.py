"""Hadamard Response and Subset Selection sections of ``simulations/benchmark.py`` (:func:`register`): issue 19.

Targets: HR batch encode >= 1e7 reports/s; HR decode (fold + one FWHT + estimates) of 10^6 reports at
d = 65,536 <= 1 s; one HR ``encode()`` from the OS CSPRNG <= 10 µs; SS per-user variance / the optimum
4e^ε/(e^ε−1)² <= 1.05 at ε ∈ {0.5, 1, 2, 4} with d = 1024 ≫ e^ε; measured variance / exact formula in
[0.95, 1.05] for both. SS encode is reported, not judged (no target: a report is d bits, O(d) work).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from ldp.decoders.hadamard_response import HRAggregate
from ldp.decoders.subset_selection import SSAggregate
from ldp.encoders.hadamard_response import HREncoder, HRParams
from ldp.encoders.subset_selection import SSEncoder, SSParams

EPSILONS = (0.5, 1.0, 2.0, 4.0)
DECODE_D, DECODE_N = 65_536, 10**6
SS_D = 1024  # d ≫ e^ε at every ε above: where SS is meant to be optimal
VAR_D, VAR_N = 64, 5000  # the measured-variance check: R aggregate-level collections of n users over d values


def optimum(eps: float) -> float:
    """The per-user variance optimum ``4e^ε/(e^ε−1)²`` (Wang et al. 2017)."""
    e = math.exp(eps)
    return 4 * e / (e - 1) ** 2


def per_user_variance(aggregate_type: Any, params: Any) -> float:
    """Exact per-user variance of a zero-count item: ``Var[ĉ_v]/n`` at ``f_v = 0`` (n = 10^6)."""
    counts = np.zeros(params.domain_size, np.int64)
    counts[-1] = 10**6
    return float(aggregate_type.exact_variance(params, counts)[0]) / 10**6


def zipf_counts(n: int, d: int, s: float = 1.1) -> np.ndarray:
    """``n`` users over ``d`` values by a Zipf(s) law, the remainder on the most frequent value."""
    w = 1.0 / np.arange(1, d + 1) ** s
    counts = np.floor(n * w / w.sum()).astype(np.int64)
    counts[0] += n - counts.sum()
    return counts


def register(b: ModuleType) -> None:
    """Add the HR and SS sections to the benchmark module ``b``."""

    @b.benchmark("hr_ss_batch_encode")
    def hr_ss_batch_encode(ctx: Any) -> dict[str, Any]:
        n = ctx.sizes.batch_n
        hr_values = ctx.rng(190).integers(0, DECODE_D, n)
        ss_values = ctx.rng(191).integers(0, SS_D, min(n // 100, 10**5))  # ~4e4 reports/s: 10^4 with --quick
        return {"hr": b.batch_encode_section(ctx, HREncoder(HRParams(1.0, DECODE_D)), {"hr": hr_values}, 1e7),
                "ss": b.batch_encode_section(ctx, SSEncoder(SSParams(1.0, SS_D)), {"ss": ss_values}, None)}

    @b.benchmark("hr_decode")
    def hr_decode(ctx: Any) -> dict[str, Any]:
        """10^6 HR reports at d = 65,536: fold (a bincount) and estimate (one FWHT of K = 131,072)."""
        params = HRParams(1.0, DECODE_D)
        batch = HREncoder(params).encode_batch(ctx.rng(192).integers(0, DECODE_D, DECODE_N), ctx.rng(193))

        def decode(_: Any) -> Any:
            agg = HRAggregate(params)
            agg.add(batch)
            return agg.estimate()

        timing, est = b.time_runs(decode, ctx.sizes.repeats)
        row: dict[str, Any] = {"n": DECODE_N, "d": DECODE_D, "K": params.order, "seconds": timing,
                               "check_items": len(est.items)}
        row.update(ctx.judge("hr.decode_s", timing["best_s"], "<=", 1.0, "s"))
        return row

    @b.benchmark("hr_ss_client_report")
    def hr_ss_client_report(ctx: Any) -> dict[str, Any]:
        """One ``encode()`` (no ledger) from the OS CSPRNG: HR <= 10 µs; SS reported (d = 1024, ω = 275)."""
        s = ctx.sizes
        out: dict[str, Any] = {"rng": b.CLIENT_RNG_NOTE}
        for name, encoder in (("hr", HREncoder(HRParams(1.0, DECODE_D))), ("ss", SSEncoder(SSParams(1.0, SS_D)))):
            b.log(f"  {name}: {s.client_calls:,} calls, no ledger")
            row = b.client_path_timing(encoder, 1234 % encoder.params.domain_size, s.client_calls, s.client_batch)
            row["params"] = encoder.params.to_dict()
            if name == "hr":
                row.update(ctx.judge("hr.us_mean", row["us_mean"], "<=", 10.0, "µs/report"))
            out[name] = row
        return out

    @b.benchmark("hr_ss_variance")
    def hr_ss_variance(ctx: Any) -> dict[str, Any]:
        """Exact per-user variance / the optimum at d = 1024 (SS judged <= 1.05; HR reported: it is
        (e^ε+1)²/(4e^ε) by its formula), and the measured variance of R simulated collections / the exact
        formula (summed over the d items; sd of the ratio <= sqrt(2/(R−1)))."""
        reps = 2000 if ctx.sizes.repeats > 3 else 400
        truth = zipf_counts(VAR_N, VAR_D)
        out: dict[str, Any] = {"reps": reps, "n": VAR_N, "d": VAR_D, "population": "Zipf(1.1)",
                               "ratio_tolerance_4sd": 4 * math.sqrt(2 / (reps - 1))}
        for eps in EPSILONS:
            hr, ss = HRParams(eps, SS_D), SSParams(eps, SS_D)
            row: dict[str, Any] = {"ss_omega": ss.omega}
            row["hr_over_optimum"] = per_user_variance(HRAggregate, hr) / optimum(eps)
            row["ss_over_optimum"] = ss_ratio = per_user_variance(SSAggregate, ss) / optimum(eps)
            row["ss"] = ctx.judge(f"ss.eps{eps}.over_optimum", ss_ratio, "<=", 1.05, "ratio")
            for name, agg_type, params in (("hr", HRAggregate, HRParams(eps, VAR_D)),
                                           ("ss", SSAggregate, SSParams(eps, VAR_D))):
                b.log(f"  {name} ε={eps}: {reps} simulations of n={VAR_N:,}")
                gen = ctx.rng(194)
                est = np.array([agg_type.simulate(params, truth, gen).estimate().count for _ in range(reps)])
                ratio = float(est.var(axis=0, ddof=1).sum() / agg_type.exact_variance(params, truth).sum())
                bias = float(np.max(np.abs(est.mean(axis=0) - truth)
                                    / np.sqrt(agg_type.exact_variance(params, truth) / reps)))
                row[f"{name}_measured_over_exact"] = {"ratio": ratio, "max_bias_in_se": bias,
                                                      "low": ctx.judge(f"{name}.eps{eps}.variance_ratio_low",
                                                                       ratio, ">=", 0.95, "ratio"),
                                                      "high": ctx.judge(f"{name}.eps{eps}.variance_ratio_high",
                                                                        ratio, "<=", 1.05, "ratio")}
            out[f"eps={eps}"] = row
        return out
