"""A fresh RAPPOR aggregate's first fold against a long-lived one's (issue 72, item 7): a section of
``simulations/benchmark.py``.

A fresh aggregate makes every cohort's first choice of bits (``ldp.batch.rappor_evidence``) in its first batch;
before issue 72 it chose after the batch's pass, from the batch's tail, and tested the batch's reports once more,
one cohort at a time (33 ms against 6–10 ms for 2·10⁶ reports, 16 cohorts). Now the cohorts choose from the
batch's head before the one pass, all at once. Target: ``fresh / long_lived <= 1.5`` (best of the runs, each ``add``
of the same batch: on a new aggregate, and on one that has folded it once). ``head_off`` times the previous path
(``BitsTogether(head=0)``: choices after the pass, then the second test pass) with the new choice code, for scale.

The first choices alone (``first_choice``: ``BitsTogether._first_choices`` of the batch on a fresh aggregate's state,
the head's bookkeeping and the choice of every cohort) must cost at most half a long-lived ``add``
(``first_choice_over_long_lived <= 0.5``); ``choose`` times the choice itself (``chosen_sets_of``, every cohort's
1,024-row sample from the batch, in the fold kernel's ``choose_sets``) and ``choose_numpy`` its numpy reference, once,
for scale. Before the kernel's choice (m = 64): the first choices 29 ms, the fresh ``add`` 34.9 ms (2.94x).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

N = 2 * 10**6


def first_fold(b: ModuleType, ctx: Any) -> dict[str, Any]:
    import numpy as np

    from ldp.batch import bits, rappor_evidence
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
        cohorts = bits.group_column(batch.columns["cohort"])
        rows = np.ascontiguousarray(batch.columns["bits"], dtype=np.uint8)

        def fresh_state(params: Any = params, n: int = cohorts.size) -> Any:
            together = rappor_evidence.BitsTogether(params)
            return together, together.split(n)

        def first_choices(state: Any, cohorts: Any = cohorts, rows: Any = rows) -> Any:
            together, tested = state
            return together._first_choices(cohorts, rows, tested, None)

        sample = rappor_evidence.sample_rows(params)
        samples = [rows[cohorts == g][:sample] for g in range(m)]
        sizes = rappor_evidence.cooccurrence_sizes(params)

        def choose(kernel: Any, samples: Any = samples, sizes: Any = sizes, k: int = params.num_bloombits) -> Any:
            return rappor_evidence.chosen_sets_of(samples, k, sizes, kernel)

        first_choice, _ = b.time_runs(first_choices, repeats, setup=fresh_state)
        chosen, _ = b.time_runs(choose, repeats, setup=lambda: "compiled")
        chosen_numpy, _ = b.time_runs(choose, 1, setup=lambda: "numpy", warmup=0)
        row = {"fresh_s": fresh, "long_lived_s": long_lived, "head_off_s": head_off,
               "ratio": fresh["best_s"] / long_lived["best_s"],
               "head_off_ratio": head_off["best_s"] / long_lived["best_s"],
               "first_choice_s": first_choice, "choose_s": chosen, "choose_numpy_s": chosen_numpy,
               "sample_rows": sample, "choose_kernel": "compiled" if bits._foldkernel is not None else "numpy",
               "first_choice_over_long_lived": first_choice["best_s"] / long_lived["best_s"]}
        row.update(ctx.judge(f"m{m}.fresh_over_long_lived", row["ratio"], "<=", 1.5, "ratio"))
        row["first_choice_target"] = ctx.judge(f"m{m}.first_choice_over_long_lived",
                                               row["first_choice_over_long_lived"], "<=", 0.5, "ratio")
        out["cases"][f"k128_m{m}"] = row
    return out


def register(b: ModuleType) -> None:
    """Add the ``rappor_first_fold`` section to the benchmark module ``b``."""

    @b.benchmark("rappor_first_fold")
    def rappor_first_fold(ctx: Any) -> dict[str, Any]:
        return first_fold(b, ctx)
