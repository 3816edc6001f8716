"""A fresh RAPPOR aggregate's first fold against a long-lived one's (issue 72, item 7): a section of
``simulations/benchmark.py``.

A fresh aggregate makes every cohort's first choice of bits (``ldp.batch.rappor_evidence``) in its first batch;
before issue 72 it chose after the batch's pass, from the batch's tail, and tested the batch's reports once more,
one cohort at a time (33 ms against 6–10 ms for 2·10⁶ reports, 16 cohorts). Now the cohorts choose from the
batch's head before the one pass, all at once. Target: ``fresh / long_lived <= 1.5`` (best of the runs, each ``add``
of the same batch: on a new aggregate, and on one that has folded it once). ``head_off`` times the previous path
(``BitsTogether(head=0)``: choices after the pass, then the second test pass) with the new choice code, for scale.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

N = 2 * 10**6


def first_fold(b: ModuleType, ctx: Any) -> dict[str, Any]:
    from ldp.batch import rappor_evidence
    from ldp.decoders.rappor import RapporAggregate
    from ldp.encoders.rappor import RapporEncoder, RapporParams

    repeats = max(5, ctx.sizes.repeats)
    urls = [f"https://site{i}.example/" for i in range(1000)]
    out: dict[str, Any] = {"n": N, "repeats": repeats, "cases": {}}
    for m in (16, 64):
        params = RapporParams(128, 2, m, 0.25, 0.75, 0.5)
        rng = ctx.rng(72)
        batch = RapporEncoder(params, secret=b"bench").encode_batch(rng.integers(0, len(urls), N), rng,
                                                                      candidates=urls)

        def folded(params: Any = params, batch: Any = batch) -> Any:
            agg = RapporAggregate(params)
            agg.add(batch)
            return agg

        def fresh_head_off(params: Any = params) -> Any:
            agg = RapporAggregate(params)
            agg._together = rappor_evidence.BitsTogether(params, head=0)
            return agg

        def add(agg: Any, batch: Any = batch) -> Any:
            return agg.add(batch)

        b.log(f"  m={m}: {N:,} reports, fresh / long-lived / head off")
        fresh, _ = b.time_runs(add, repeats, setup=lambda params=params: RapporAggregate(params))
        long_lived, _ = b.time_runs(add, repeats, setup=folded)
        head_off, _ = b.time_runs(add, repeats, setup=fresh_head_off)
        row = {"fresh_s": fresh, "long_lived_s": long_lived, "head_off_s": head_off,
               "ratio": fresh["best_s"] / long_lived["best_s"],
               "head_off_ratio": head_off["best_s"] / long_lived["best_s"]}
        row.update(ctx.judge(f"m{m}.fresh_over_long_lived", row["ratio"], "<=", 1.5, "ratio"))
        out["cases"][f"k128_m{m}"] = row
    return out


def register(b: ModuleType) -> None:
    """Add the ``rappor_first_fold`` section to the benchmark module ``b``."""

    @b.benchmark("rappor_first_fold")
    def rappor_first_fold(ctx: Any) -> dict[str, Any]:
        return first_fold(b, ctx)
