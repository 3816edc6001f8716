"""Prio3 through the Python binding against the ``prio`` crate's own API (issue 71): the two aggregators'
verification and aggregation, in reports per second on one core. Prints one JSON object.

Per report, both paths do the same work on the same kind of pre-sharded report (its public share and two input
shares, as bytes): each aggregator decodes them and runs ``verify_init`` (its verifier share encoded), the two
verifier shares are decoded and combined by ``verifier_shares_to_message`` (the message encoded), and each
aggregator decodes the message, runs ``verify_next`` and accumulates its output share into its aggregate share.
The Python path is :mod:`ldp.prio` (a loop over the reports, a call per operation); the raw path is
``bindings/prio/examples/bench_raw.rs`` (the crate alone, built here with ``cargo build --release --locked
--no-default-features --example bench_raw``), timed the same way: the wall time of each run over the whole batch
after an untimed warm-up run (the garbage collector off in Python), the best and the median of the runs, the
process (and so the Rust child) pinned to one CPU unless ``--no-pin``; the two paths alternate over three rounds and
each keeps its best round, so that a burst of load on a shared machine does not land on one path only. Sharding is
the client's and is not timed. Both paths' results are checked against the truth. The target: the binding's
reports/s at least 0.8 times the raw API's, on every case (judged on the best runs).

    python simulations/bench_prio.py                   # every case, 4000 reports, 3 rounds of 5 runs
    python simulations/bench_prio.py --quick           # 1000 reports, 3 runs, 1 round
    python simulations/bench_prio.py --cases count,histogram:256 --reports 10000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CRATE = Path(__file__).resolve().parents[1] / "bindings" / "prio"
CASES = ("count", "sum:255", "sumvec:8:255", "histogram:16", "histogram:256")
"""``count``, ``sum:MAX``, ``sumvec:LENGTH:MAX``, ``histogram:LENGTH`` (the raw program takes the same)."""
CTX = b"ldp bench_prio"
TARGET = 0.8


def measurements(case: str, n: int) -> tuple[Any, list[Any], Any]:
    """The VDAF, the ``n`` measurements and their true aggregate: the raw program's measurements, the same rule."""
    import ldp.prio as prio

    kind, *args = case.split(":")
    nums = [int(a) for a in args]
    if kind == "count":
        ms: list[Any] = [i % 2 == 0 for i in range(n)]
        return prio.Prio3Count(ctx=CTX), ms, sum(ms)
    if kind == "sum":
        ms = [i % (nums[0] + 1) for i in range(n)]
        return prio.Prio3Sum(max_measurement=nums[0], ctx=CTX), ms, sum(ms)
    if kind == "sumvec":
        length, top = nums
        ms = [[(i + j) % (top + 1) for j in range(length)] for i in range(n)]
        truth = [sum(column) for column in zip(*ms, strict=True)]
        return prio.Prio3SumVec(length=length, max_measurement=top, ctx=CTX), ms, truth
    if kind == "histogram":
        ms = [i % nums[0] for i in range(n)]
        return prio.Prio3Histogram(length=nums[0], ctx=CTX), ms, [ms.count(b) for b in range(nums[0])]
    raise SystemExit(f"unknown case {case!r}: count, sum:MAX, sumvec:LENGTH:MAX or histogram:LENGTH")


def python_path(case: str, n: int, repeats: int) -> dict[str, Any]:
    """The binding's timings of ``case``: best and median seconds, reports/s, and whether the result is right."""
    vdaf, ms, truth = measurements(case, n)
    reports = [vdaf.shard(m) for m in ms]
    key = os.urandom(vdaf.verify_key_size)
    verify_init, to_message, verify_next = vdaf.verify_init, vdaf.verifier_shares_to_message, vdaf.verify_next
    runs, result = [], None
    for run in range(repeats + 1):
        was = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter()
            leader, helper = vdaf.aggregate_init(), vdaf.aggregate_init()
            leader_add, helper_add = leader.accumulate, helper.accumulate
            for nonce, public, (leader_in, helper_in) in reports:
                leader_state, leader_vs = verify_init(key, 0, nonce, public, leader_in)
                helper_state, helper_vs = verify_init(key, 1, nonce, public, helper_in)
                message = to_message((leader_vs, helper_vs))
                leader_add(verify_next(leader_state, message))
                helper_add(verify_next(helper_state, message))
            dt = time.perf_counter() - t0
        finally:
            if was:
                gc.enable()
        if run:
            runs.append(dt)
        result = vdaf.unshard([leader, helper], n)
    return run_summary(n, runs, result == truth)


def run_summary(n: int, runs: list[float], correct: bool) -> dict[str, Any]:
    """Timed runs of ``n`` reports each (seconds): the best and the median, reports/s, whether the result is right."""
    best, median = min(runs), statistics.median(runs)
    return {"best_s": best, "median_s": median, "reports_per_s": {"best": n / best, "median": n / median},
            "result_correct": correct}


def build_example(name: str) -> Path | str:
    """The binding crate's example ``name`` built without the Python extension (a program timing the crates
    alone), or why it could not be built."""
    cargo = shutil.which("cargo")
    if cargo is None:
        return f"not built: {name} needs cargo"
    subprocess.run([cargo, "build", "--release", "--locked", "--quiet", "--no-default-features", "--example", name],
                   cwd=CRATE, check=True, timeout=1800)
    meta = subprocess.run([cargo, "metadata", "--format-version", "1", "--no-deps", "--locked"], cwd=CRATE,
                          capture_output=True, text=True, check=True, timeout=600)
    return Path(json.loads(meta.stdout)["target_directory"]) / "release" / "examples" / name


def build_raw() -> Path | str:
    """The raw benchmark program, or why it could not be built."""
    return build_example("bench_raw")


def raw_path(exe: Path, case: str, n: int, repeats: int) -> dict[str, Any]:
    """The crate's own timings of ``case`` (the raw program, on the same CPU), checked against the truth."""
    done = subprocess.run([str(exe), case, str(n), str(repeats)], capture_output=True, text=True, check=True,
                          timeout=1800)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    _, _, truth = measurements(case, n)
    correct = out["result"].replace(" ", "") == json.dumps(truth).replace(" ", "").lower()
    summary = run_summary(n, [out["best_s"]], correct)
    summary.update(median_s=out["median_s"], reports_per_s={"best": n / out["best_s"], "median": n / out["median_s"]})
    return summary


def best_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the best run (a busy machine slows some rounds), every round's result checked (each round a
    :func:`run_summary`: ``best_s`` and ``result_correct``)."""
    best = dict(min(rounds, key=lambda r: r["best_s"]))
    best["result_correct"] = all(r["result_correct"] for r in rounds)
    best["rounds_best_s"] = [r["best_s"] for r in rounds]
    return best


def run(cases: list[str], n: int, repeats: int, rounds: int = 3) -> dict[str, Any]:
    """Every case on both paths (``rounds`` rounds, the paths alternating in each), the ratio and its target."""
    import ldp.prio as prio

    prio.require()
    exe = build_raw()
    out: dict[str, Any] = {"reports": n, "repeats": repeats, "rounds": rounds, "prio_crate": prio.PRIO_VERSION,
                           "vdaf_draft": prio.VDAF_DRAFT, "cases": {}}
    for case in cases:
        print(f"  {case}: {n:,} reports, {rounds} rounds of {repeats} runs", file=sys.stderr, flush=True)
        row: dict[str, Any] = {}
        pythons, raws = [], []
        for i in range(rounds):
            if i % 2 == 0 or isinstance(exe, str):
                pythons.append(python_path(case, n, repeats))
            if not isinstance(exe, str):
                raws.append(raw_path(exe, case, n, repeats))
            if i % 2 == 1 and not isinstance(exe, str):
                pythons.append(python_path(case, n, repeats))
        row["python"] = best_round(pythons)
        if isinstance(exe, str):
            row["raw"] = exe
        else:
            row["raw"] = best_round(raws)
            ratio = row["python"]["reports_per_s"]["best"] / row["raw"]["reports_per_s"]["best"]
            row["ratio"] = {"measured": ratio, "target": {"op": ">=", "value": TARGET}, "meets_target": ratio >= TARGET}
        out["cases"][case] = row
    ratios = [c["ratio"] for c in out["cases"].values() if "ratio" in c]
    correct = all(c["python"]["result_correct"] and (isinstance(c["raw"], str) or c["raw"]["result_correct"])
                  for c in out["cases"].values())
    out["all_results_correct"] = correct
    out["all_targets_met"] = bool(ratios) and all(r["meets_target"] for r in ratios) and correct
    return out


def pin_one_cpu() -> int | None:
    """Pin this process (and so the programs it starts) to the lowest CPU it may run on, as ``benchmark.py`` does
    unless ``--no-pin``: the CPU, or ``None`` where affinity cannot be set."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def register(b: Any) -> None:
    """Add the ``prio3_aggregators`` section to the benchmark module ``b`` (:func:`run` at its sizes; each case's
    ratio judged against :data:`TARGET`)."""

    @b.benchmark("prio3_aggregators")
    def prio3_aggregators(ctx: Any) -> dict[str, Any]:
        out = run(list(CASES), 1000 if ctx.quick else 4000, 3 if ctx.quick else 5, 1 if ctx.quick else 3)
        for case, row in out["cases"].items():
            if "ratio" in row:
                row["ratio"] = ctx.judge(f"prio3.binding_over_raw[{case}]", row["ratio"]["measured"], ">=", TARGET,
                                         "x")
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases (default: %(default)s)")
    parser.add_argument("--reports", type=int, default=None, help="reports per run (default 4000; --quick 1000)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per path (default 5; --quick 3)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of both paths, alternating (default 3; "
                        "--quick 1): the best round of each path is kept")
    parser.add_argument("--quick", action="store_true", help="1000 reports, 3 runs, 1 round")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the process (and the raw program) to one CPU")
    args = parser.parse_args(argv)
    n = args.reports or (1000 if args.quick else 4000)
    repeats = args.repeats or (3 if args.quick else 5)
    pinned = None if args.no_pin else pin_one_cpu()
    rounds = args.rounds or (1 if args.quick else 3)
    result = run([c for c in args.cases.split(",") if c], n, repeats, rounds)
    result.update(pinned_cpu=pinned, python=platform.python_version(), machine=platform.machine(),
                  load_average=[round(x, 2) for x in os.getloadavg()])
    print(json.dumps(result, indent=1))
    return 0 if result["all_results_correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
