"""Benchmark section ``binary_large`` (issue 88, item 3): shuffled binary randomized response past the whole-law
search's cap (:mod:`ldp.privacy.binary_large`, each dataset's law read at a few points), at n = 10⁸, 10¹⁰,
4.2·10¹⁰ and 10¹², ε₀ = 1, 3 and 5.9, δ = 10⁻⁸: one window's figure
(:func:`ldp.privacy.shuffle.shuffled_epsilon` with binary RR's structure) and its CPU seconds in a fresh interpreter
(scipy imported before the clock starts), and ``ratio``, the figure over the exact ε of one real dataset (the
n − 1 others all on one value, both directions: :func:`exact_all_zero`, scipy's binomial law at the exact
threshold), a lower bound on any valid figure; ``clone_ratio`` is the same for the k-RR clone bound alone (what
answered there before). Targets: ratio <= 1.1 and at most 1 s of CPU per figure.
``python simulations/bench_binary_large.py`` prints the table.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from types import ModuleType
from typing import Any

_ONE = r"""
import json, sys, time
import scipy.special, scipy.fft  # imports are not the answer's cost
from ldp.encoders.randomized_response import GRRParams
from ldp.privacy.shuffle import shuffled_epsilon
eps0, n, delta, binary = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
structure = GRRParams(eps0, 2).shuffle_structure
t = time.process_time()
g = shuffled_epsilon(eps0, n, delta, structure, binary=binary)
print(json.dumps({"epsilon": g.epsilon, "method": g.method, "cpu_s": time.process_time() - t}))
"""


def one_window(eps0: float, n: int, delta: float, binary: bool = True) -> dict[str, Any]:
    """One window's figure and its CPU seconds in a fresh interpreter (``binary`` false: the clone bounds alone)."""
    run = subprocess.run([sys.executable, "-c", _ONE, str(eps0), str(n), repr(delta), "1" if binary else "0"],
                         capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def _binomial_delta(eps: float, p: float, size: int, prob: float) -> float:
    """δ(P‖Q)(ε) with the others' count Bin(size, prob): the threshold from r(t) = t(1 − prob)/((size − t + 1)·prob)
    > R in closed form, S(t) = A·f(t − 1) − (e^ε − 1)·Pr[Y >= t] (scipy), the largest over the threshold ± 2."""
    from scipy.stats import binom

    q = 1 - p
    a = p - math.exp(eps) * q
    if a <= 0:
        return 0.0
    big_r = (math.exp(eps) * p - q) / a
    t0 = int((size + 1) * prob * big_r / ((1 - prob) + prob * big_r))
    return max(a * float(binom.pmf(t - 1, size, prob)) - math.expm1(eps) * float(binom.sf(t - 1, size, prob))
               for t in range(t0 - 2, t0 + 3))


def exact_all_zero(eps0: float, n: int, delta: float) -> float:
    """The exact ε at δ of the dataset with the n − 1 others all holding 0 (the other direction: all holding 1), by
    bisection: no valid figure is below it."""
    p = 1.0 / (1.0 + math.exp(-eps0))
    lo, hi = 0.0, eps0
    for _ in range(80):
        mid = (lo + hi) / 2
        worst = max(_binomial_delta(mid, p, n - 1, 1 - p), _binomial_delta(mid, p, n - 1, p))
        lo, hi = (mid, hi) if worst > delta else (lo, mid)
    return hi


def points(delta: float = 1e-8) -> list[dict[str, Any]]:
    """Every point of the section, measured."""
    rows = []
    for eps0 in (1.0, 3.0, 5.9):
        for n in (10**8, 10**10, 42 * 10**9, 10**12):
            got, clone = one_window(eps0, n, delta), one_window(eps0, n, delta, binary=False)
            exact = exact_all_zero(eps0, n, delta)
            rows.append({"eps0": eps0, "n": n, "delta": delta, **got, "exact_real_dataset": exact,
                         "ratio": got["epsilon"] / exact, "clone_ratio": clone["epsilon"] / exact})
    return rows


def register(b: ModuleType) -> None:
    """Add the ``binary_large`` section to the benchmark module ``b``."""

    @b.benchmark("binary_large")
    def binary_large(ctx: Any) -> dict[str, Any]:
        rows = points()
        for row in rows:
            key = f"binary_large[{row['eps0']},{row['n']:.1e}]"
            row["target_ratio"] = ctx.judge(f"{key}.ratio", row["ratio"], "<=", 1.1, "ratio")
            row["target_cpu"] = ctx.judge(f"{key}.cpu", row["cpu_s"], "<=", 1.0, "s")
        return {"points": rows}


if __name__ == "__main__":
    for row in points():
        print(f"ε₀ = {row['eps0']:<4} n = {row['n']:.1e}  ε = {row['epsilon']:.6g} ({row['method']})  "
              f"exact real dataset {row['exact_real_dataset']:.6g}  ratio {row['ratio']:.4f}  "
              f"clone bound's {row['clone_ratio']:.4f}  {row['cpu_s']:.3f} s CPU")
