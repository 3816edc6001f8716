"""Benchmark section ``shuffle_central`` (issue 49): the time to state a central guarantee.

* one window: :func:`ldp.privacy.shuffle.shuffled_epsilon` at ε₀ = 1, 4 and n = 10⁶, 10⁸, generic and with
  k-RR's clone structure (GRR over d = 2 and d = 10);
* a year of daily windows: :func:`ldp.privacy.over_time.central_over_time` (365 PLDs composed with
  ``dp-accounting``) at the same points;
* the ingest service's decision over 90 windows whose n differ (each window its own PLD: the worst case of
  :func:`ldp.ingest.central.decide`'s composition, uncached).

* a year at n = 10⁸ in a fresh process (issue 59): the CPU seconds of the answer alone (imports excluded) and the
  process's peak RSS, at δ = 10⁻⁸ and 10⁻²⁰, generic and binary (k-RR d = 2).

* the command a user types for a year (issue 88, item 7): ``ldp privacy grr --epsilon 4 --d 10 --shuffled 1e8
  --delta 1e-8 --windows 365`` in a fresh process, its user CPU seconds with the interpreter's start and every import
  included (best and median of five), and the figure it prints; run as a user runs it, on every CPU and without the
  benchmark's own thread variables (OpenBLAS's idle threads spin about 0.2 s of CPU unless the command starts it on
  one thread, which it does), and whether the ``ldp`` modules are compiled at each start (no bytecode cached:
  ``PYTHONDONTWRITEBYTECODE`` with an editable install, about 0.1 s more).

Targets: one window under 1 s, a year under 15 s (docs/shuffling.md promises "a few seconds at most"); the year at
n = 10⁸ in at most 1 s of CPU and 200 MB of RSS; the command's year in at most 1 s of user CPU, start included.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import ModuleType
from typing import Any

_YEAR = r"""
import json, sys, time
import dp_accounting.pld, scipy.signal, scipy.stats  # imports are not the answer's cost
from ldp.encoders.randomized_response import GRRParams
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.over_time import central_over_time
eps0, delta, binary = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1"
structure = GRRParams(eps0, 2).shuffle_structure if binary else None
t = time.process_time()
r = central_over_time(PrivacyCost(eps0), 10**8, delta, 365, structure)
cpu = time.process_time() - t
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))  # not ru_maxrss: it keeps the
print(json.dumps({"epsilon": r.epsilon, "method": r.method, "cpu_s": cpu,  # forking parent's peak across exec
                  "peak_rss_mb": int(hwm.split()[1]) / 1024}))
"""


def _year_in_a_fresh_process(eps0: float, delta: float, binary: bool) -> dict[str, Any]:
    """One year's answer at n = 10⁸ in its own interpreter: its CPU time and the process's peak RSS."""
    run = subprocess.run([sys.executable, "-c", _YEAR, str(eps0), repr(delta), "1" if binary else "0"],
                         capture_output=True, text=True, check=True)
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


CLI_YEAR = ["privacy", "grr", "--epsilon", "4", "--d", "10", "--shuffled", "1e8", "--delta", "1e-8", "--windows", "365",
            "--json"]
"""The year's command of issue 88, item 7 (its JSON, so the figure is read back)."""


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
"""The thread counts the benchmark sets for itself (one), left out of the year command's environment."""


def _cli_year() -> dict[str, Any]:
    """``ldp`` + :data:`CLI_YEAR` in a fresh interpreter as a user runs it: every CPU (the caller lifts the
    benchmark's pinning) and none of :data:`THREAD_VARIABLES` (the benchmark's own single thread is not the user's:
    the command starts OpenBLAS on one thread by itself, :func:`ldp.cli.command._limit_blas_threads`). Its user and
    system CPU seconds (the child's rusage, start and imports included) and the figures it states."""
    import os
    import resource

    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run([sys.executable, "-m", "ldp.cli", *CLI_YEAR], capture_output=True, text=True, check=True,
                         env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    central = json.loads(run.stdout)["central"]
    return {"user_cpu_s": after.ru_utime - before.ru_utime, "sys_cpu_s": after.ru_stime - before.ru_stime,
            "one_window_epsilon": central["epsilon"], "year_epsilon": central["over_windows"]["epsilon"]}


def _compiled_each_start() -> bool:
    """Whether the ``ldp`` modules are compiled at every start of the command: no bytecode cached beside the
    sources and none written (``PYTHONDONTWRITEBYTECODE``, as with an editable install in this project's dev
    environment: about 0.1 s of CPU more than an installed package, whose bytecode pip writes)."""
    import os
    from pathlib import Path

    import ldp

    cached = any(Path(ldp.__file__).parent.glob("__pycache__/__init__.*.pyc"))
    return not cached and bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))


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
                    row["one_window_target"] = ctx.judge(f"shuffle.one_window[{eps0},{n},{label}]", one["best_s"],
                                                         "<=", 1.0, "s")
                    row["year_target"] = ctx.judge(f"shuffle.year[{eps0},{n},{label}]", year["best_s"], "<=", 15.0,
                                                   "s")
                    out["points"].append(row)
        releases = [WindowRelease(PrivacyCost(1.0), 10_000 + 1_000 * i) for i in range(90)]
        mixed, m = b.time_runs(lambda _: central_over_windows(releases, 1e-6), 1, warmup=0)
        out["ninety_distinct_windows"] = {"epsilon": m.epsilon, "seconds": mixed}
        out["year_at_1e8"] = []
        for delta in (1e-8, 1e-20):
            for binary in (False, True):
                row = {"eps0": 1.0, "delta": delta, "bound": "k-RR d=2" if binary else "generic",
                       **_year_in_a_fresh_process(1.0, delta, binary)}
                tag = f"[{delta:g},{row['bound']}]"
                row["cpu_target"] = ctx.judge(f"shuffle.year_1e8_cpu{tag}", row["cpu_s"], "<=", 1.0, "s")
                row["rss_target"] = ctx.judge(f"shuffle.year_1e8_rss{tag}", row["peak_rss_mb"], "<=", 200.0, "MB")
                out["year_at_1e8"].append(row)
        with b.all_cpus():
            runs = [_cli_year() for _ in range(5)]
        best = min(runs, key=lambda r: r["user_cpu_s"])
        times = sorted(r["user_cpu_s"] for r in runs)
        out["cli_year"] = {"command": "ldp " + " ".join(CLI_YEAR), **best, "user_cpu_s_median": times[2],
                           "user_cpu_s_runs": [r["user_cpu_s"] for r in runs],
                           "ldp_compiled_each_start": _compiled_each_start()}
        out["cli_year"]["cpu_target"] = ctx.judge("shuffle.cli_year_user_cpu", best["user_cpu_s"], "<=", 1.0, "s")
        return out
