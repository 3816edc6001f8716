"""Blocked Hadamard Response sections of ``simulations/benchmark.py`` (registered by :func:`register`): issue 33.

Targets: hr-block batch encode >= 1e7 reports/s and fold + decode of 10^6 reports <= 1 s (d = 1024 and
65,536, ε = 4); one ``encode()`` from the OS CSPRNG <= 10 µs; at every ε ∈ {0.5, 1, 2, 4, 8} and d ∈ {16, 1024}
(Zipf(1.1) users, n = 10^5) hr-block's exact MSE <= pure-ldp's HR's, whose MSE is measured live when pure-ldp
imports (``LDP_PEER_SITE``: a site-packages directory holding it, appended to ``sys.path``; "not installed"
otherwise) beside ours (``simulations/peer_hr_mse.py``, which runs the same comparison standalone). The MSE of
ldp's hr, grr, oue and olh at the planner's parameters is reported on the same population (exact aggregate-level
simulations), not judged.
"""

from __future__ import annotations

import math
import os
import sys
from types import ModuleType
from typing import Any

import numpy as np
import peer_hr_mse

from ldp.decoders.hadamard_block import HRBlockAggregate
from ldp.encoders.hadamard_block import HRBlockEncoder, HRBlockParams
from ldp.plan import default_params
from ldp.protocols import get_protocol

ENCODE_D, DECODE_DS, N = 1024, (1024, 65_536), 10**6
OTHERS = ("grr", "oue", "olh")


def _peer() -> str | None:
    """``None`` when pure-ldp's HR imports (after appending ``LDP_PEER_SITE``), else why not."""
    site = os.environ.get("LDP_PEER_SITE")
    if site and site not in sys.path:
        sys.path.append(site)
    return peer_hr_mse.peer_available()


def _others_mse(eps: float, d: int, n: int, reps: int, gen: np.random.Generator) -> dict[str, Any]:
    """Measured (exact aggregate-level simulations) and exact MSE of the frequencies for grr, oue, olh."""
    truth = peer_hr_mse.zipf_counts(d, n)
    out: dict[str, Any] = {}
    for name in OTHERS:
        params, agg_type = default_params(name, eps, d), get_protocol(name).aggregate_type
        sq = [float(np.mean((agg_type.simulate(params, truth, gen).estimate().count - truth) ** 2))
              for _ in range(reps)]
        out[name] = {"mse": float(np.mean(sq)) / n**2,
                     "exact": float(np.mean(agg_type.exact_variance(params, truth))) / n**2}
    return out


def register(b: ModuleType) -> None:
    """Add the blocked-HR sections to the benchmark module ``b``."""

    @b.benchmark("hr_block_batch_encode")
    def hr_block_batch_encode(ctx: Any) -> dict[str, Any]:
        values = ctx.rng(330).integers(0, ENCODE_D, N, dtype=np.uint16)
        return b.batch_encode_section(ctx, HRBlockEncoder(HRBlockParams(4.0, ENCODE_D)), {"uint16": values}, 1e7)

    @b.benchmark("hr_block_decode")
    def hr_block_decode(ctx: Any) -> dict[str, Any]:
        """10^6 reports at ε = 4: fold (a bincount of K outputs) and estimate (a FWHT per block)."""
        out: dict[str, Any] = {"n": N}
        for d in DECODE_DS:
            params = HRBlockParams(4.0, d)
            batch = HRBlockEncoder(params).encode_batch(ctx.rng(331).integers(0, d, N), ctx.rng(332))

            def decode(_: Any, params: HRBlockParams = params, batch: Any = batch) -> Any:
                agg = HRBlockAggregate(params)
                agg.add(batch)
                return agg.estimate()

            timing, est = b.time_runs(decode, ctx.sizes.repeats)
            row: dict[str, Any] = {"params": params.to_dict(), "K": params.order, "seconds": timing,
                                   "check_items": len(est.items)}
            row.update(ctx.judge(f"d={d}.decode_s", timing["best_s"], "<=", 1.0, "s"))
            out[f"d={d}"] = row
        return out

    @b.benchmark("hr_block_client_report")
    def hr_block_client_report(ctx: Any) -> dict[str, Any]:
        """One ``encode()`` (no ledger) from the OS CSPRNG, ε = 4, d = 1024."""
        s = ctx.sizes
        encoder = HRBlockEncoder(HRBlockParams(4.0, ENCODE_D))
        b.log(f"  hr-block: {s.client_calls:,} calls, no ledger")
        row = b.client_path_timing(encoder, 1000, s.client_calls, s.client_batch)
        row.update({"rng": b.CLIENT_RNG_NOTE, "params": encoder.params.to_dict()})
        row.update(ctx.judge("hr_block.us_mean", row["us_mean"], "<=", 10.0, "µs/report"))
        return row

    @b.benchmark("hr_block_mse")
    def hr_block_mse(ctx: Any) -> dict[str, Any]:
        """MSE of the frequencies, Zipf(1.1) population of 10^5 users: hr-block (planner's B), hr, pure-ldp's HR
        (live, when it imports), grr, oue, olh; exact beside measured."""
        reps = 3 if ctx.quick else 20
        missing = _peer()
        out: dict[str, Any] = {"n": 100_000, "reps": reps, "population": "zipf(1.1)",
                               "pure_ldp": missing or "measured live"}
        gen = ctx.rng(333)
        for d in peer_hr_mse.DOMAINS:
            for eps in peer_hr_mse.EPSILONS:
                b.log(f"  ε={eps:g} d={d}")
                row = peer_hr_mse.measure(eps, d, 100_000, reps, ctx.seed, peer=missing is None)
                row["others"] = _others_mse(eps, d, 100_000, reps, gen)
                e = math.exp(eps)
                per_user = HRBlockAggregate.count_variance(HRBlockParams.for_epsilon(eps, d), 1e6, 0.0, d) / 1e6
                row["hr_block_rare_over_optimum"] = per_user / (4 * e / (e - 1) ** 2)
                if missing is None:
                    row.update(ctx.judge(f"eps={eps} d={d}.hr_block_over_pure_ldp_exact", row["exact_ratio"], "<=",
                                         1.0 + 1e-9, "ratio"))
                out[f"eps={eps} d={d}"] = row
        return out
