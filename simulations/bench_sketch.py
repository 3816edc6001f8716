"""CMS and HCMS sections of ``simulations/benchmark.py`` (registered by :func:`register`).

Targets (issue 5): batch encode k=256, m=1024: CMS >= 1e6, HCMS >= 1.5e7 reports/s; aggregate
CMS >= 2e6, HCMS >= 2e7 reports/s; estimates for 100,000 candidates <= 1 s; empirical variance /
exact formula in [0.95, 1.05] over 200 repetitions.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from ldp.decoders.sketch import SketchAggregate, sketch_variance
from ldp.encoders.cms import CmsEncoder, CmsParams
from ldp.encoders.hcms import HcmsEncoder, HcmsParams

EPS = 4.0  # Apple's per-donation ε for emoji and words
KINDS = {"cms": (CmsParams(EPS, 256, 1024), CmsEncoder), "hcms": (HcmsParams(EPS, 256, 1024), HcmsEncoder)}
TARGETS = {"cms": (1e6, 2e6), "hcms": (1.5e7, 2e7)}
CANDIDATES = [f"emoji-{i:04d}" for i in range(2000)]


class _WithCandidates:
    def __init__(self, encoder: Any) -> None:
        self.params, self._enc = encoder.params, encoder

    def encode_batch(self, values: Any, rng: Any) -> Any:
        return self._enc.encode_batch(values, rng, candidates=CANDIDATES)


def register(b: ModuleType) -> None:
    """Add the sketch sections to the benchmark module ``b``."""

    def values(ctx: Any) -> np.ndarray:
        n = ctx.sizes.batch_n // 10  # CMS reports are 128 bytes: 10^6 rows (10^5 quick)
        return ctx.rng(50).integers(0, len(CANDIDATES), n, dtype=np.uint16)

    for name, (params, encoder_type) in KINDS.items():
        encode_target, aggregate_target = TARGETS[name]

        def encode(ctx: Any, params: Any = params, encoder_type: Any = encoder_type, target: float = encode_target):
            return b.batch_encode_section(ctx, _WithCandidates(encoder_type(params)), {"uint16": values(ctx)}, target)

        def aggregate(ctx: Any, params: Any = params, encoder_type: Any = encoder_type,
                      target: float = aggregate_target):
            import bench_fold  # issue 16: CMS >= 1e7 reports/s from binary frames, bytes/s vs memory bandwidth

            batch = encoder_type(params).encode_batch(values(ctx), ctx.rng(51), candidates=CANDIDATES)
            frames_target = 1e7 if isinstance(params, CmsParams) else None
            return bench_fold.fold_section(b, ctx, lambda: SketchAggregate(params), batch, target, frames_target)

        b.benchmark(f"{name}_batch_encode")(encode)
        b.benchmark(f"{name}_aggregate")(aggregate)

    @b.benchmark("sketch_estimate_100k")
    def sketch_estimate(ctx: Any) -> dict[str, Any]:
        cands = [f"word-{i:06d}" for i in range(100_000)]
        out: dict[str, Any] = {"candidates": len(cands)}
        for name, (params, _) in KINDS.items():
            agg = SketchAggregate.simulate(params, {c: 1000 // (i + 1) + 1 for i, c in enumerate(cands[:500])},
                                           ctx.rng(52))
            timing, est = b.time_runs(lambda _, agg=agg: agg.estimate(cands), ctx.sizes.repeats)
            row = {"seconds": timing, "n": agg.n, "detected": int(est.extra["detected"].sum())}
            row.update(ctx.judge(f"{name}.seconds", timing["best_s"], "<=", 1.0, "s"))
            out[name] = row
        return out

    @b.benchmark("sketch_variance_ratio")
    def sketch_variance_ratio(ctx: Any) -> dict[str, Any]:
        """Empirical variance over 200 collections (new hash functions each) / the exact formula."""
        reps = 200
        truth = {f"w{i}": 20_000 // (i + 1) for i in range(50)}
        t = np.array(list(truth.values()), float)
        n = int(t.sum())
        out: dict[str, Any] = {"repetitions": reps, "n": n, "population": "50 words, counts 20000/(i+1)",
                               "note": "ratio of the mean variance over the 50 items; sd of one ratio ~ sqrt(2/199)"}
        for name, (params, _) in KINDS.items():
            small = type(params)(EPS, 64, 1024)
            est = np.array([SketchAggregate.simulate(type(params)(EPS, 64, 1024, hash_seed=7919 * r), truth,
                                                     ctx.rng(1000 + r)).estimate(list(truth)).count
                            for r in range(reps)])
            theory = sketch_variance(small, t, n, (t**2).sum() - t**2)
            ratio = float(est.var(axis=0, ddof=1).mean() / theory.mean())
            row = {"params": small.to_dict(), "empirical_over_exact": ratio,
                   "per_item_ratio_range": [float(x) for x in np.percentile(est.var(axis=0, ddof=1) / theory, [5, 95])],
                   "ratio_tolerance_one_item": 4 * math.sqrt(2 / (reps - 1))}
            row.update(ctx.judge(f"{name}.empirical_over_exact_low", ratio, ">=", 0.95, "ratio"))
            row.update({"high": ctx.judge(f"{name}.empirical_over_exact_high", ratio, "<=", 1.05, "ratio")})
            out[name] = row
        return out

    @b.benchmark("sketch_client_report")
    def sketch_client_report(ctx: Any) -> dict[str, Any]:
        """Issue 16: one ``encode()`` (no ledger) from the OS CSPRNG, k=256, m=1024: CMS <= 10 µs, HCMS <= 5 µs."""
        s = ctx.sizes
        out: dict[str, Any] = {"rng": b.CLIENT_RNG_NOTE}
        for name, target, peer in (("cms", 10.0, b.PEER_CLIENT_US["cms_k256_m1024"]),
                                   ("hcms", 5.0, b.PEER_CLIENT_US["hcms"])):
            params, encoder_type = KINDS[name]
            b.log(f"  {name}: {s.client_calls:,} calls, no ledger")
            row = b.client_path_timing(encoder_type(params), "emoji-0042", s.client_calls, s.client_batch)
            row.update({"params": params.to_dict(), "peer_pure_ldp_us": peer})
            row.update(ctx.judge(f"{name}.us_mean", row["us_mean"], "<=", target, "µs/report"))
            out[name] = row
        return out
