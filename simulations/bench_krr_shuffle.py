"""Benchmark section ``krr_shuffle`` (issue 72, item 5): one window of shuffled k-RR at any d >= 3 by the blanket
pair (:func:`ldp.privacy.krr_shuffle.krr_worst_case`): its CPU time, its ε, its exact lower bound and the clone
bound it replaces, at ε₀ = 1, 4, d = 3, 10, 100, n = 10⁴, 10⁶, 10⁸, δ = 10⁻⁸. Target: one window under 1 s."""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any


def register(b: ModuleType) -> None:
    """Add the ``krr_shuffle`` section to the benchmark module ``b``."""

    @b.benchmark("krr_shuffle")
    def krr_shuffle(ctx: Any) -> dict[str, Any]:
        from ldp.encoders.randomized_response import GRRParams
        from ldp.privacy import krr_shuffle as module
        from ldp.privacy.shuffle import shuffled_epsilon

        out: dict[str, Any] = {"delta": 1e-8, "points": []}
        for eps0 in (1.0, 4.0):
            for d in (3, 10, 100):
                for n in (10**4, 10**6, 10**8):
                    module.krr_worst_case.cache_clear()
                    start = time.process_time()
                    found = module.krr_worst_case(eps0, d, n, 1e-8)
                    cpu = time.process_time() - start
                    clone = shuffled_epsilon(eps0, n, 1e-8, GRRParams(eps0, d).shuffle_structure).epsilon
                    row = {"eps0": eps0, "d": d, "n": n, "cpu_s": cpu, "clone_epsilon": clone,
                           "epsilon": None if found is None else found.epsilon,
                           "lower": None if found is None else found.lower}
                    row["target"] = ctx.judge(f"krr_shuffle.one_window[{eps0},{d},{n}]", cpu, "<=", 1.0, "s")
                    out["points"].append(row)
        return out
