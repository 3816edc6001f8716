"""Benchmark section ``trust_models`` (issue 71, item 7): the standard error of one count at the same central ε
under each trust model — local, shuffle, two aggregators (Prio3 with central discrete Laplace), two aggregators
with local GRR inside — for n ∈ {10⁴, 10⁶} and d ∈ {2, 16, 1024} at ε = 1 (δ = 10⁻⁸ for the shuffle model), each
by its formula and by the spread of 200 simulated collections (:mod:`ldp.compare.trust`). The headline of the
two-aggregator work: what trusting one party less costs in accuracy, or buys."""

from __future__ import annotations

from types import ModuleType
from typing import Any

SIZES = (10**4, 10**6)
DOMAINS = (2, 16, 1024)


def register(b: ModuleType) -> None:
    """Add the ``trust_models`` section to the benchmark module ``b``."""

    @b.benchmark("trust_models")
    def trust_models(ctx: Any) -> dict[str, Any]:
        from ldp.compare.trust import simulate, trust_table

        repeats = 50 if ctx.quick else 200
        out: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-8, "count": 0, "repeats": repeats, "rows": []}
        for n in SIZES:
            for d in DOMAINS:
                rows = trust_table(n, d, 1.0)
                sim = simulate(rows, n, d, repeats=repeats, seed=ctx.seed)
                for r in rows:
                    out["rows"].append({**r.to_dict(), "n": n, "d": d, "simulated_se": sim[r.model],
                                        "simulated_over_formula": sim[r.model] / r.standard_error})
        return out
