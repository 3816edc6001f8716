"""Benchmark section ``shuffle_central`` (issue 49): the time to state a central guarantee.

* one window: :func:`ldp.privacy.shuffle.shuffled_epsilon` at ε₀ = 1, 4 and n = 10⁶, 10⁸, generic and with
  k-RR's clone structure (GRR over d = 2 and d = 10);
* a year of daily windows: :func:`ldp.privacy.over_time.central_over_time` (365 PLDs composed with
  ``dp-accounting``) at the same points;
* the collector's decision over 90 windows whose n differ (each window its own PLD: the worst case of
  :func:`ldp.collector.central.decide`'s composition, uncached).

Targets: one window under 1 s, a year under 15 s (docs/shuffling.md promises "a few seconds at most").
"""

from __future__ import annotations

from types import ModuleType
from typing import Any


def register(b: ModuleType) -> None:
    """Add the ``shuffle_central`` section to the benchmark module ``b``."""

    @b.benchmark("shuffle_central")
    def shuffle_central(ctx: Any) -> dict[str, Any]:
        from ldp.encoders.randomized_response import GRRParams
        from ldp.privacy.cost import PrivacyCost
        from ldp.privacy.over_time import WindowRelease, central_over_time, central_over_windows
        from ldp.privacy.shuffle import shuffled_epsilon

        out: dict[str, Any] = {"delta": 1e-8, "windows": 365, "points": []}
        repeats = max(1, ctx.sizes.repeats // 2)
        for eps0 in (1.0, 4.0):
            for n in (10**6, 10**8):
                for label, structure in (("generic", None), ("k-RR d=2", GRRParams(eps0, 2).shuffle_structure),
                                         ("k-RR d=10", GRRParams(eps0, 10).shuffle_structure)):
                    one, g = b.time_runs(lambda _, e=eps0, n=n, s=structure: shuffled_epsilon(e, n, 1e-8, s),
                                         repeats)
                    year, y = b.time_runs(lambda _, e=eps0, n=n, s=structure: central_over_time(
                        PrivacyCost(e), n, 1e-8, 365, s), repeats, warmup=0)
                    row = {"eps0": eps0, "n": n, "bound": label, "one_window_epsilon": g.epsilon,
                           "one_window_seconds": one, "year_epsilon": y.epsilon, "year_seconds": year}
                    row.update(ctx.judge(f"shuffle.one_window[{eps0},{n},{label}]", one["best_s"], "<=", 1.0, "s"))
                    row.update(ctx.judge(f"shuffle.year[{eps0},{n},{label}]", year["best_s"], "<=", 15.0, "s"))
                    out["points"].append(row)
        releases = [WindowRelease(PrivacyCost(1.0), 10_000 + 1_000 * i) for i in range(90)]
        mixed, m = b.time_runs(lambda _: central_over_windows(releases, 1e-6), 1, warmup=0)
        out["ninety_distinct_windows"] = {"epsilon": m.epsilon, "seconds": mixed}
        return out
