"""Every core (issue 86, items 2 and 5): the door (the leader's shares opened in one call), the two aggregators'
aggregate step, the whole pipeline (door, aggregate step, collection) and their Prio3 batch calls, with the process on
one core and on every core, alternating, on the same reports, in one run;
the ratio of the best runs, and the reports/s on every core. The benchmark pins itself to one CPU: this part runs on
all the CPUs the process was given (its affinity widened for it, then put back).

The batch calls cut a job's reports into one part per thread with the GIL released (``ldp.prio.set_batch_threads``,
bindings/prio/src/parallel.rs), and the leader keeps two jobs with the helper at once (``jobs_in_flight``), so that
one job's Python (the job messages, the checks, the records) runs while the other's batch calls fill the cores.

**The machine's own ceiling** (``machine``): the honest reference (:mod:`bench_reference`, one thread, the same
reports) as one process, and as one process per CPU started together, alternating with the other arms; the ratio is
the work per second of all the copies over one copy's. It is what these CPUs give this very work on all of them
against one (on a virtual machine whose CPUs share a physical core's units, far below their count), and the
aggregate step's ratio is read against it: ``aggregate_cores_over_machine``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["every_core", "cores_run"]


@contextlib.contextmanager
def every_core(cpus: set[int] | None) -> Iterator[int]:
    """The process's affinity widened to ``cpus`` (the CPUs it was given before it pinned itself) for the block;
    the number of CPUs it then has."""
    if cpus is None or not hasattr(os, "sched_getaffinity"):
        yield len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield len(cpus)
    finally:
        os.sched_setaffinity(0, before)


def cores_run(pipeline: Callable[[Path], dict[str, Any]], batch: Callable[[], tuple[float, bool]], n: int,
              runs: int, cpus: set[int] | None, machine: Callable[[int], float] | None = None) -> dict[str, Any]:
    """``pipeline(scratch)`` (one door + aggregate + collect run: its seconds and correctness) and ``batch()`` (the
    three batch calls on every report as one job) timed ``runs`` times each on one core (the process's affinity as
    the benchmark pinned it) and on every core (widened to ``cpus``), alternating; the binding's calls use as many
    threads as the process's CPUs (its default). ``machine(k)``: the seconds of a run of the reference's work when
    ``k`` copies run at once (module docstring), each arm's copies started under its affinity. The best of each and
    the ratios."""
    from ldp import prio

    prio.set_batch_threads(None)
    best: dict[tuple[str, int], float] = {}
    correct = True
    cores = len(cpus) if cpus else (os.cpu_count() or 1)
    arms = (1, cores)
    with tempfile.TemporaryDirectory(prefix="ldp-bench-cores-") as t:
        for run_no in range(runs + 1):
            for k in arms:
                with every_core(cpus if k > 1 else None):
                    one = pipeline(Path(t))
                    seconds, ok = batch()
                    # k copies do k times the work: their time per copy's share of it
                    ceiling = machine(k) / k if machine is not None else None
                correct = correct and one["correct"] and ok
                if run_no:  # the first is a warm-up
                    whole = one["door"] + one["aggregate"] + one["collect"]
                    for name, value in (("door", one["door"]), ("aggregate", one["aggregate"]), ("whole", whole),
                                        ("batch_calls", seconds), ("machine", ceiling)):
                        if value is not None:
                            best[name, k] = min(best.get((name, k), float("inf")), value)
    out: dict[str, Any] = {"cores": cores, "runs": runs, "all_results_correct": correct,
                           "one_core": "the process pinned to one CPU (the binding then works in one thread)"}
    for name in ("door", "aggregate", "whole", "batch_calls", "machine"):
        if (name, 1) in best:
            out[name] = {f"{k}_cores_us_per_report": best[name, k] * 1e6 / n for k in arms}
            out[name]["ratio"] = best[name, 1] / best[name, cores]
            out[name]["reports_per_s_every_core"] = n / best[name, cores]
    if "machine" in out:
        out["machine"]["what"] = ("the reference's work (one thread) as one process, and as one process per CPU "
                                  "started together: µs per report of all the copies' reports")
        out["aggregate_cores_over_machine"] = out["aggregate"]["ratio"] / out["machine"]["ratio"]
    return out
