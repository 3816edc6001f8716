"""Benchmark section ``krr_shuffle`` (issue 72, items 3 and 5): one window of shuffled k-RR at any d >= 3 by the
blanket pair (:func:`ldp.privacy.krr_shuffle.krr_worst_case`): its CPU time (fresh cache, scipy already imported),
its ε, its exact lower bound and the clone bound it replaces, at ε₀ = 1, 4, d = 3, 10, 100, n = 10⁴ … 10¹²,
δ = 10⁻⁸ and 10⁻³⁰⁰. Target: one window under 1 s.

Measured after (CPU s, fresh cache, 2-core machine; ratio = ε / exact lower bound). Before: at δ = 10⁻³⁰⁰,
0.7–3.2 s for n = 10⁶ … 10⁹ (d = 3, ε₀ = 1, n = 10⁶: 3.23 s); at n = 10¹², δ = 10⁻⁸, d = 10: 7.9 s.

=====  ===  =====  ==================  ==================
ε₀     d    n      δ = 10⁻⁸ (s, ratio)  δ = 10⁻³⁰⁰ (s, ratio)
=====  ===  =====  ==================  ==================
1      3    1e4      0.118     1.0045    0.576     1.0545
1      3    1e6      0.029     1.0059    0.097     1.0084
1      3    1e8      0.011     1.0073    0.014     1.0051
1      3    1e10     0.010     1.0075    0.008     1.0028
1      3    1e12     0.013     1.0121    0.009     1.0024
1      10   1e4      0.176     1.0048    1.433     1.1466
1      10   1e6      0.041     1.0071    0.134     1.0109
1      10   1e8      0.012     1.0080    0.019     1.0057
1      10   1e10     0.010     1.0083    0.008     1.0041
1      10   1e12     0.015     1.0143    0.010     1.0026
1      100  1e4      0.116     1.0015    0.753     1.1657
1      100  1e6      0.064     1.0062    0.329     1.2379
1      100  1e8      0.018     1.0083    0.047     1.0043
1      100  1e10     0.010     1.0109    0.012     1.0049
1      100  1e12     0.012     1.0277    0.010     1.0031
4      3    1e4      0.188     1.0011    2.149     1.0534
4      3    1e6      0.075     1.0037    0.267     1.0034
4      3    1e8      0.016     1.0061    0.036     1.0033
4      3    1e10     0.009     1.0065    0.010     1.0031
4      3    1e12     0.011     1.0075    0.008     1.0024
4      10   1e4      0.168     1.0029    1.126     1.1182
4      10   1e6      0.074     1.0041    0.275     1.0062
4      10   1e8      0.018     1.0062    0.038     1.0032
4      10   1e10     0.010     1.0065    0.012     1.0040
4      10   1e12     0.012     1.0076    0.009     1.0027
4      100  1e4      0.099     1.0040    0.676     1.1002
4      100  1e6      0.077     1.0061    0.348     1.0139
4      100  1e8      0.019     1.0069    0.054     1.0037
4      100  1e10     0.010     1.0075    0.012     1.0036
4      100  1e12     0.011     1.0082    0.008     1.0029
=====  ===  =====  ==================  ==================

Open: n = 10⁴ at δ = 10⁻³⁰⁰ (up to 2.1 s, ratio up to 1.17; ε = ε₀ at ε₀ = 4, d = 3) and d = 100,
ε₀ = 1, n = 10⁶ at δ = 10⁻³⁰⁰ (1.24x): U's lowest bands."""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

DELTAS = (1e-8, 1e-300)
SIZES = (10**4, 10**6, 10**8, 10**10, 10**12)


def register(b: ModuleType) -> None:
    """Add the ``krr_shuffle`` section to the benchmark module ``b``."""

    @b.benchmark("krr_shuffle")
    def krr_shuffle(ctx: Any) -> dict[str, Any]:
        import scipy.stats  # noqa: F401  (imported before timing: the import is not the computation)

        from ldp.encoders.randomized_response import GRRParams
        from ldp.privacy import krr_shuffle as module
        from ldp.privacy.shuffle import shuffled_epsilon

        out: dict[str, Any] = {"deltas": list(DELTAS), "points": []}
        for delta in DELTAS:
            for eps0 in (1.0, 4.0):
                for d in (3, 10, 100):
                    for n in SIZES:
                        module.krr_worst_case.cache_clear()
                        start = time.process_time()
                        found = module.krr_worst_case(eps0, d, n, delta)
                        cpu = time.process_time() - start
                        clone = shuffled_epsilon(eps0, n, delta, GRRParams(eps0, d).shuffle_structure,
                                                 binary=False).epsilon
                        row = {"eps0": eps0, "d": d, "n": n, "delta": delta, "cpu_s": cpu, "clone_epsilon": clone,
                               "epsilon": None if found is None else found.epsilon,
                               "lower": None if found is None else found.lower}
                        row["target"] = ctx.judge(f"krr_shuffle.one_window[{eps0},{d},{n},{delta:g}]", cpu, "<=",
                                                  1.0, "s")
                        out["points"].append(row)
        return out
