"""Range-query (hierarchical histogram, ``hh``) sections of ``simulations/benchmark.py`` (registered by
:func:`register`): issue 33, item 2b.

Targets: hh batch encode >= 1e6 reports/s (D = 1024, B = 4, ε = 1, the planner's oracles: GRR at level 1, OUE
below); fold + constrained inference of 10^6 reports <= 1 s; the exact covariance of the CDF at D = 1024 (what
quantiles take) <= 2 s; one ``encode()`` from the OS CSPRNG reported. The accuracy comparison with the published
methods is ``simulations/range_queries.py`` (minutes; its table is in docs/protocols/range-queries.md).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from ldp.decoders.range_tree import HHAggregate
from ldp.encoders.range_tree import HHEncoder, HHParams

D, N = 1024, 10**6


def register(b: ModuleType) -> None:
    """Add the hh sections to the benchmark module ``b``."""

    @b.benchmark("hh_batch_encode")
    def hh_batch_encode(ctx: Any) -> dict[str, Any]:
        values = ctx.rng(440).integers(0, D, N, dtype=np.uint16)
        return b.batch_encode_section(ctx, HHEncoder(HHParams.for_epsilon(1.0, D)), {"uint16": values}, 1e6)

    @b.benchmark("hh_decode")
    def hh_decode(ctx: Any) -> dict[str, Any]:
        """10^6 reports: fold (a positional popcount per level, a bincount of the GRR nodes), then the consistent
        buckets (constrained inference); then the CDF with its exact ``D × D`` covariance."""
        params = HHParams.for_epsilon(1.0, D)
        batch = HHEncoder(params).encode_batch(ctx.rng(441).integers(0, D, N), ctx.rng(442))

        def fold(_: Any) -> HHAggregate:
            agg = HHAggregate(params)
            agg.add(batch)
            return agg

        fold_t, agg = b.time_runs(fold, ctx.sizes.repeats)
        tree_t, tree = b.time_runs(lambda _: agg.tree(), ctx.sizes.repeats)
        est_t, _ = b.time_runs(lambda _: agg.estimate(), ctx.sizes.repeats)
        cdf_t, (_, cdf, _) = b.time_runs(lambda _: tree.cdf_table(), max(1, ctx.sizes.repeats // 2))
        out: dict[str, Any] = {"n": N, "params": params.to_dict(), "fold_s": fold_t, "consistency_s": tree_t,
                               "estimate_with_std_errors_s": est_t, "cdf_covariance_s": cdf_t,
                               "check_cdf_last": float(cdf[-1])}
        out["fold_and_consistency"] = ctx.judge("fold_and_consistency_s", fold_t["best_s"] + tree_t["best_s"], "<=",
                                                1.0, "s")
        out["cdf_covariance"] = ctx.judge("cdf_covariance_s", cdf_t["best_s"], "<=", 2.0, "s")
        return out

    @b.benchmark("hh_client_report")
    def hh_client_report(ctx: Any) -> dict[str, Any]:
        """One ``encode()`` (no ledger) from the OS CSPRNG, D = 1024, ε = 1."""
        s = ctx.sizes
        encoder = HHEncoder(HHParams.for_epsilon(1.0, D))
        b.log(f"  hh: {s.client_calls:,} calls, no ledger")
        row = b.client_path_timing(encoder, 17.0, s.client_calls, s.client_batch)
        row.update({"rng": b.CLIENT_RNG_NOTE, "params": encoder.params.to_dict()})
        return row
