"""Benchmark section ``over_time_tightness``: the central ε over W windows against exact lower bounds (issue 72,
items 1-3), and its CPU time.

* **windows without amplification at δ** (item 1): 30 windows of ε₀ = 4 among n = 1,000 at δ = 10⁻¹², and of
  ε₀ = 8 among 10⁴ — each window's own worst-case law composed, not 30·ε₀;
* **tiny δ** (item 2): ε₀ = 1, n = 10⁶, 30 windows, δ = 10⁻²⁰ … 10⁻³⁰⁰, for a generic randomizer and for binary RR;
* **the box's corners** (item 3): δ = 10⁻³⁰⁰ with 10⁴ windows.

The lower bound is a real dataset (every other user holding 0) whose shuffled pair is computed exactly and composed
W times in its worse direction with losses rounded down (``composed_epsilon(..., up=False)``): no valid figure is
below it.
"""

from __future__ import annotations

import math
import time
from types import ModuleType
from typing import Any


def _lower(eps0: float, n: int, delta: float, windows: int) -> float:
    from ldp.privacy.binary_shuffle import binary_pair
    from ldp.privacy.tilted_composition import LossLaw, composed_epsilon

    p = 1.0 / (1.0 + math.exp(-eps0))
    pair = binary_pair(0, n - 1, p, max(1e-12 * delta, 1e-306))
    return max(composed_epsilon([(LossLaw.of(pair.loss, pair.p), windows)], delta, up=False, accuracy=1e-2),
               composed_epsilon([(LossLaw.of(-pair.loss, pair.q), windows)], delta, up=False, accuracy=1e-2))


def register(b: ModuleType) -> None:
    """Add the ``over_time_tightness`` section to the benchmark module ``b``."""

    @b.benchmark("over_time_tightness")
    def over_time_tightness(ctx: Any) -> dict[str, Any]:
        from ldp.encoders.randomized_response import GRRParams
        from ldp.privacy.cost import PrivacyCost
        from ldp.privacy.over_time import central_over_time

        rows = []
        cases = [(4.0, 1000, 1e-12, 30), (8.0, 10**4, 1e-12, 30)]
        cases += [(1.0, 10**6, d, 30) for d in (1e-20, 1e-50, 1e-100, 1e-200, 1e-300)]
        for eps0, n, delta, windows in cases:
            rr = GRRParams(eps0, 2)
            row: dict[str, Any] = {"eps0": eps0, "n": n, "delta": delta, "windows": windows}
            for label, cost, structure in (("generic", PrivacyCost(eps0), None),
                                           ("binary RR", rr.privacy_cost, rr.shuffle_structure)):
                start = time.process_time()
                got = central_over_time(cost, n, delta, windows, structure)
                row[label] = {"epsilon": got.epsilon, "method": got.method,
                              "cpu_s": round(time.process_time() - start, 3)}
            row["exact_lower"] = _lower(eps0, n, delta, windows)
            row["binary_over_lower"] = row["binary RR"]["epsilon"] / row["exact_lower"]
            row["generic_over_lower"] = row["generic"]["epsilon"] / row["exact_lower"]
            tag = f"[{eps0},{n},{delta:g},{windows}]"
            if delta <= 1e-20:  # item 2: within 1.5x of an exact composition
                row["target"] = ctx.judge(f"over_time.tiny_delta{tag}", row["generic_over_lower"], "<=", 1.5, "x")
            row["binary_target"] = ctx.judge(f"over_time.binary{tag}", row["binary_over_lower"], "<=", 1.2, "x")
            rows.append(row)
        start = time.process_time()
        corner = central_over_time(PrivacyCost(1.0), 10**6, 1e-300, 10**4)
        return {"cases": rows, "corner_1e-300_1e4_windows": {"epsilon": corner.epsilon,
                                                              "cpu_s": round(time.process_time() - start, 3)}}
