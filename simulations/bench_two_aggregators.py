"""Benchmark section ``two_aggregators`` (issue 71, item 7): what the two-aggregator mode costs a device and the
aggregators, end to end on one core, beside the ``prio`` crate's raw API. Prints one JSON object when run alone.

**A device's report** (``reports``), per report, for a 16-bucket Prio3Histogram and a Prio3Count: a DAP-09 report,
that is Prio3 sharding with fresh OS randomness, both input shares sealed with HPKE (X25519, HKDF-SHA256,
AES-128-GCM) and the upload body encoded. ``rust``: ``ReportBuilder::build`` and ``Report::encode``; ``c``: the C
interface (``ldp_dap_report``, ``ldp_dap_report_bytes``, ``ldp_dap_report_free``, the functions a C app links), both
from ``clients/rust/examples/dap_bench.rs``, built here with ``cargo build --release --locked --features prio
--example dap_bench``; ``python``: ``ldp.prio.seal_report`` (the simulations' path). Each in batches of 100 after a
warm-up batch: the mean, the median batch and the best batch, in µs per report.

**The aggregators** (``aggregators``), in process (no HTTP: the leader calls the ``Helper`` object), a 16-bucket
histogram, each aggregator over its own folder store in a temporary folder: ``n`` reports sealed beforehand, then
timed separately, each run on a fresh pair of stores (setting them up is not timed) after a warm-up run:

* ``door``: ``Leader.upload_many`` (each report decoded and checked, the leader's share HPKE-opened, all stored as
  one chunk);
* ``aggregate``: ``Leader.run_aggregation_jobs`` (jobs of 1,000: both aggregators open their shares again and run
  Prio3's preparation, the job messages encoded and decoded, each job recorded on both sides);
* ``collect``: ``Leader.collect`` of the window (the clocks moved past its end first): the helper's and the leader's
  aggregate shares released, each with its noise (:data:`NOISE`), and sealed to the collector.

Reports/s of each and of the whole (``n`` over the sum), the best run and the median. Each aggregator adds its noise
to its share (:data:`NOISE`, discrete Laplace at ε = 1); the collected sums (opened with the collector's key, not
timed) are checked: every report counted, each sum within :data:`NOISE_TOLERANCE` of the truth.

**Against the honest reference** (:mod:`bench_reference`, issue 86): a Rust program that does, on these very
reports, what the aggregate step must — the helper's HPKE open (the ``hpke`` crate) and both aggregators' Prio3
preparation and aggregation (the ``prio`` crate) — in one thread, once beside each of this path's runs. Judged:
``aggregate_over_reference`` (the whole aggregate step, messages and durable records included, ≥ 0.5) and
``prio3_over_reference`` (the aggregators' three batch calls alone, the helper's opens inside, ≥ 0.9). Also against
``bench_prio``'s raw program (the crate's preparation, no HPKE) and its binding loop. Every ratio is two paths'
best reports/s timed in one run, never a difference of timings.

    python simulations/bench_two_aggregators.py            # 4000 reports, 3 rounds of 3 runs, 2 s per Rust case
    python simulations/bench_two_aggregators.py --quick    # 1000 reports, 1 round of 3 runs, 0.5 s
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_cores import cores_run
from bench_prio import CASES, best_round, build_raw, pin_one_cpu, python_path, raw_path, run_summary
from bench_reference import build_reference, reference_doc, reference_path, reference_processes

RUST = Path(__file__).resolve().parents[1] / "clients" / "rust"
CASE = "histogram:16"
"""The aggregators' case, one of ``bench_prio``'s."""
assert CASE in CASES
BUCKETS = 16
WINDOW = 3600
PRECISION = 60
T0 = 1_800_000_000 - 1_800_000_000 % WINDOW
"""The window the reports fall in; its reports are made at ``T0 + PRECISION``."""
BATCH = 100
STAGES = ("door", "aggregate", "collect")
NOISE = "laplace:1"
"""Each aggregator's noise on its aggregate share in the pipeline (issue 86, item 5: the whole pipeline, noise on):
discrete Laplace at ε = 1 per aggregator, calibrated to one device's change (a histogram's L1 sensitivity 2)."""
NOISE_TOLERANCE = 60
"""How far a noised sum may fall from the truth and still pass: the two aggregators' noise, each discrete Laplace of
scale 2, passes 60 with probability below 1e-11 per bucket."""
AGGREGATE_TARGET = 0.5
"""The aggregate step's reports/s at least this share of the reference's (issue 86, item 1)."""
PRIO3_TARGET = 0.9
"""The aggregators' Prio3 work alone (their batch calls) at least this share of the reference's."""
CORES_TARGET = 1.7
"""The aggregate step on 2 cores at least this many times as fast as on one (:mod:`bench_cores`)."""
WHOLE_TARGET = 5000.0
"""Reports/s of the whole pipeline (door, aggregate step, collection) on every core of this 2-core machine."""


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``fn()``'s wall time (seconds, the garbage collector off) and result."""
    was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        result = fn()
        return time.perf_counter() - t0, result
    finally:
        if was:
            gc.enable()


# -- a device's report ------------------------------------------------------------------------------------------

def build_dap_bench(build: bool = True) -> Path | str:
    """The Rust example's binary (built unless ``build`` is false: then the one built before, if any), or why there
    is none."""
    cargo = shutil.which("cargo")
    if cargo is None:
        return "not built: the Rust and C figures need cargo"
    if build:
        subprocess.run([cargo, "build", "--release", "--locked", "--quiet", "--features", "prio", "--example",
                        "dap_bench"], cwd=RUST, check=True, timeout=1800)
    meta = subprocess.run([cargo, "metadata", "--format-version", "1", "--no-deps", "--locked"], cwd=RUST,
                          capture_output=True, text=True, check=True, timeout=600)
    exe = Path(json.loads(meta.stdout)["target_directory"]) / "release" / "examples" / "dap_bench"
    if not build and not exe.is_file():
        return f"skipped: --no-device-build and no {exe} built before"
    return exe


def native_reports(exe: Path, seconds: float) -> dict[str, Any]:
    """The example's JSON: per case, the Rust API's and the C interface's µs per report."""
    done = subprocess.run([str(exe), str(seconds)], capture_output=True, text=True, check=True, timeout=600)
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _seal_batch(seal: Callable[[int], bytes], first: int) -> list[bytes]:
    return [seal(i) for i in range(first, first + BATCH)]


def python_reports(seal: Callable[[int], bytes], seconds: float, at_least: int = 0) -> tuple[dict[str, Any],
                                                                                               list[bytes]]:
    """``seal(i)`` (report ``i``'s bytes) timed as the example times: batches of :data:`BATCH` after a warm-up
    batch, for ``seconds`` and at least 5 batches, and until ``at_least`` reports are made; the timing and every
    report (the warm-up batch's too)."""
    reports = [seal(i) for i in range(BATCH)]
    per_batch: list[float] = []
    start = time.perf_counter()
    while len(per_batch) < 5 or time.perf_counter() - start < seconds or len(reports) < at_least:
        dt, made = _timed(functools.partial(_seal_batch, seal, len(reports)))
        reports.extend(made)
        per_batch.append(dt * 1e6 / BATCH)
    return ({"us_mean": statistics.fmean(per_batch), "us_median_of_batches": statistics.median(per_batch),
             "us_best_batch": min(per_batch), "calls": len(per_batch) * BATCH, "batch": BATCH,
             "report_bytes": len(reports[0])}, reports)


# -- the aggregators ----------------------------------------------------------------------------------------------

class Deployment:
    """One task with its three key pairs and verify key; a fresh leader and helper over new folder stores per run."""

    def __init__(self, draft: int = 18, noise: str = NOISE) -> None:
        from ldp import prio
        from ldp.aggregators.task import Noise, Task

        prio.require()
        self.collector, self.leader_key, self.helper_key = (prio.HpkeKeypair.generate(i) for i in (7, 1, 2))
        self.task = Task(task_id=secrets.token_bytes(32), app="bench", metric="m", vdaf="Prio3Histogram",
                         vdaf_params={"length": BUCKETS}, window_seconds=WINDOW, min_batch_size=100,
                         leader_url="http://127.0.0.1:1", helper_url="http://127.0.0.1:2",
                         collector_hpke_config=self.collector.config.to_bytes(), time_precision=PRECISION,
                         noise=Noise.parse(noise), vdaf_draft=draft)
        self.verify_key = secrets.token_bytes(self.task.prio3().verify_key_size)
        self.now = T0 + PRECISION + 10

    def seal(self, vdaf: Any, measurement: Any) -> bytes:
        from ldp import prio

        return prio.seal_report(vdaf, measurement, task_id=self.task.task_id, time=T0 + PRECISION,
                                leader=self.leader_key.config, helper=self.helper_key.config,
                                time_precision=PRECISION)

    def aggregators(self, root: Path) -> Any:
        """A new leader with its helper, over ``root``'s two folder stores, on this deployment's clock."""
        from ldp.aggregators.helper import Helper
        from ldp.aggregators.leader import Leader
        from ldp.storage import open_store

        self.now = T0 + PRECISION + 10
        keys = {self.task.task_id: self.verify_key}
        helper = Helper([self.task], open_store(root / "helper-store"), self.helper_key, keys, clock=self.clock)
        return Leader([self.task], open_store(root / "leader-store"), self.leader_key, keys, helper,
                      job_size=1000, clock=self.clock)

    def clock(self) -> int:
        return self.now


def pipeline_run(dep: Deployment, reports: list[bytes], truth: list[int], scratch: Path) -> dict[str, Any]:
    """One run of the door, the aggregation and the collection on fresh stores: each one's seconds, and whether
    every report was taken and prepared and the collected sums are the truth."""
    from ldp.aggregators.collect import open_collection

    task_id = dep.task.task_id
    with tempfile.TemporaryDirectory(dir=scratch) as root:
        leader = dep.aggregators(Path(root))
        door, refusals = _timed(lambda: leader.upload_many(task_id, reports))
        aggregate, counts = _timed(leader.run_aggregation_jobs)
        dep.now = T0 + WINDOW + 1  # a window is collected after its end
        collect, doc = _timed(lambda: leader.collect(task_id, T0))
    collection = open_collection(dep.task, dep.collector, doc)
    # each aggregator's noise on its share (NOISE): every report counted, each sum within reach of the noise
    within = all(abs(int(got) - want) <= NOISE_TOLERANCE for got, want in zip(collection.sums, truth, strict=True))
    ok = (not any(refusals) and counts.get("prepared") == len(reports) and not counts.get("refused")
          and collection.report_count == len(reports) and within
          and (dep.task.noise.mechanism != "none" or list(collection.sums) == truth))
    return {"door": door, "aggregate": aggregate, "collect": collect, "correct": ok}


def batch_calls_run(dep: Deployment, reports: list[Any], leader_shares: list[bytes]) -> tuple[float, bool]:
    """Seconds of the three Prio3 calls the aggregators make per job on ``reports`` (one job): the leader's
    ``leader_init_batch`` (its shares opened beforehand, as at its door), the helper's ``helper_prepare_batch``
    (which opens the helper's shares: :func:`hpke_opens_run` times those alone) and the leader's
    ``leader_finish_batch``; and whether every report was prepared and the two aggregate shares add up."""
    vdaf, key, task_id = dep.task.prio3(), dep.verify_key, dep.task.task_id
    lead = [(r.report_id, r.time, r.public_share, r.leader_ciphertext, s) for r, s in zip(reports, leader_shares,
                                                                                           strict=True)]
    result: dict[str, Any] = {}

    def calls() -> None:
        inits = vdaf.leader_init_batch(dep.leader_key, key, task_id, lead)
        helped = [(r.report_id, r.time, r.public_share, r.helper_ciphertext, vs)
                  for r, (_, vs) in zip(reports, inits, strict=True)]
        messages, helper_share = vdaf.helper_prepare_batch(dep.helper_key, key, task_id, helped)
        ok, leader_share = vdaf.leader_finish_batch([s for s, _ in inits], messages)
        result.update(ok=ok, shares=(leader_share, helper_share))

    seconds = _timed(calls)[0]
    counts = vdaf.unshard(list(result["shares"]), len(reports))
    truth = [sum(1 for i in range(len(reports)) if i % BUCKETS == b) for b in range(BUCKETS)]
    return seconds, all(result["ok"]) and list(counts) == truth


def hpke_opens_run(dep: Deployment, reports: list[Any]) -> float:
    """Seconds to open the helper's input share of every report (``reports`` decoded beforehand): the HPKE work of
    the aggregate step (the leader's share was opened at the door, and is kept)."""
    from ldp import prio

    open_share, key = prio.open_input_share, dep.helper_key
    task_id = dep.task.task_id

    def opens() -> None:
        for r in reports:
            open_share(key, role="helper", task_id=task_id, report_id=r.report_id, time=r.time,
                       public_share=r.public_share, ciphertext=r.helper_ciphertext)

    return _timed(opens)[0]


def _stage(n: int, runs: list[float], correct: bool) -> dict[str, Any]:
    out = run_summary(n, runs, correct)
    out["us_per_report"] = {"best": out["best_s"] * 1e6 / n, "median": out["median_s"] * 1e6 / n}
    return out


def run(n: int, repeats: int, rounds: int, seconds: float, log: Callable[[str], None] = print,
        device_build: bool = True, cpus: set[int] | None = None) -> dict[str, Any]:
    """Both parts (module docstring): ``n`` reports, ``repeats`` timed runs (after a warm-up) per round, ``rounds``
    rounds alternating with the raw API, ``seconds`` per Rust case and interface."""
    from ldp import prio

    prio.require()
    dep = Deployment()
    hist, count = dep.task.prio3(), prio.Prio3Count(ctx=dep.task.task_id)
    out: dict[str, Any] = {"prio_crate": prio.PRIO_VERSION, "vdaf_draft": prio.VDAF_DRAFT, "dap_draft": "dap-09",
                           "hpke_suite": "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM"}

    # a device's report
    exe = build_dap_bench(device_build)
    native = exe if isinstance(exe, str) else native_reports(exe, seconds)
    log(f"  python seal_report: histogram ({n:,} reports or more), count")
    py_hist, reports = python_reports(lambda i: dep.seal(hist, i % BUCKETS), seconds, n)
    py_count, _ = python_reports(lambda i: dep.seal(count, i % 2 == 0), seconds)
    rows: dict[str, Any] = {}
    for name, py in (("histogram, 16 buckets", py_hist), ("count", py_count)):
        row: dict[str, Any] = {"python": py}
        if isinstance(native, str):
            row["rust"] = row["c"] = native
        else:
            row.update(native[name])
            for side in ("rust", "c"):
                row[f"python_over_{side}"] = py["us_mean"] / native[name][side]["us_mean"]
        rows[name] = row
    out["reports"] = {"what": "µs per DAP-09 report: shard (fresh OS randomness), HPKE-seal both input shares, "
                              "encode; mean over batches of 100, the median batch and the best batch",
                      "cases": rows}

    # the aggregators
    reports = reports[:n]
    truth = [sum(1 for i in range(n) if i % BUCKETS == b) for b in range(BUCKETS)]
    decoded = [prio.DapReport.from_bytes(r) for r in reports]
    raw_exe, reference_exe = build_raw(), build_reference()
    stage_runs: dict[str, list[float]] = {s: [] for s in (*STAGES, "whole", "hpke_opens", "batch_calls",
                                                          "aggregate_vdaf08", "whole_vdaf08")}
    dep08 = Deployment(draft=8)  # the same pipeline on a VDAF-08 task (issue 85), alternating with draft 18's
    hist08 = dep08.task.prio3()
    reports08 = [dep08.seal(hist08, i % BUCKETS) for i in range(n)]
    leader_shares = [prio.open_input_share(dep.leader_key, role="leader", task_id=dep.task.task_id,
                                           report_id=r.report_id, time=r.time, public_share=r.public_share,
                                           ciphertext=r.leader_ciphertext) for r in decoded]
    correct = True
    raws, bindings, references = [], [], []
    with tempfile.TemporaryDirectory(prefix="ldp-bench-two-") as t:
        scratch = Path(t)
        for i in range(rounds):
            log(f"  round {i + 1}/{rounds}: {n:,} reports, {repeats} runs of the door, aggregate, collect; "
                f"the raw API and the binding")
            for run_no in range(repeats + 1):
                one = pipeline_run(dep, reports, truth, scratch)
                opens = hpke_opens_run(dep, decoded)
                batch, batch_ok = batch_calls_run(dep, decoded, leader_shares)
                one08 = pipeline_run(dep08, reports08, truth, scratch)
                if not isinstance(reference_exe, str):  # beside each run: a busy machine's slow spells hit both
                    ref = reference_path(reference_exe, dep, decoded, leader_shares, truth, 1)
                    references += [ref] if run_no else []
                correct = correct and one["correct"] and batch_ok and one08["correct"]
                if run_no:  # the first is a warm-up
                    for s in STAGES:
                        stage_runs[s].append(one[s])
                    stage_runs["whole"].append(sum(one[s] for s in STAGES))
                    stage_runs["hpke_opens"].append(opens)
                    stage_runs["batch_calls"].append(batch)
                    stage_runs["aggregate_vdaf08"].append(one08["aggregate"])
                    stage_runs["whole_vdaf08"].append(sum(one08[s] for s in STAGES))
            if not isinstance(raw_exe, str):
                raws.append(raw_path(raw_exe, CASE, n, repeats))
            bindings.append(python_path(CASE, n, repeats))
        log(f"  every core: the aggregate step, the batch calls and the reference in 1 thread and in every "
            f"core's, {rounds + 2} runs each, alternating")
        machine = None
        if not isinstance(reference_exe, str):
            doc_file = scratch / "reference.json"
            doc_file.write_text(json.dumps(reference_doc(dep, decoded, leader_shares)))
            machine = functools.partial(reference_processes, reference_exe, doc_file, repeats=2)
        cores = cores_run(lambda root: pipeline_run(dep, reports, truth, root),
                          lambda: batch_calls_run(dep, decoded, leader_shares), n, rounds + 2, cpus, machine)
        correct = correct and cores["all_results_correct"]
    stages = {s: _stage(n, stage_runs[s], correct) for s in stage_runs}
    out["aggregators"] = {
        "case": CASE, "reports": n, "runs": repeats * rounds, "rounds": rounds, "job_size": 1000,
        "stores": "two local folder stores (one per aggregator) in a temporary folder",
        "all_results_correct": correct,
        "what": {"door": "Leader.upload_many: decode, checks, the leader's HPKE open, one chunk written",
                 "aggregate": "Leader.run_aggregation_jobs: the helper's HPKE open (the leader's share opened at the "
                              "door and kept), both aggregators' Prio3 preparation and aggregation, the job "
                              "messages, each job recorded by both",
                 "collect": "Leader.collect: both aggregate shares released, each noised (laplace:1), and sealed to "
                            "the collector; a window's cost, nearly independent of its reports (its reports/s is "
                            "n over it)",
                 "whole": "door + aggregate + collect",
                 "hpke_opens": "ldp.prio.open_input_share of the helper's share of every report, timed apart: "
                               "the HPKE part of aggregate",
                 "batch_calls": "the aggregators' Prio3 calls on all the reports as one job (leader_init_batch on "
                                "the shares its door opened, helper_prepare_batch with its HPKE opens, "
                                "leader_finish_batch), without the job's messages and records",
                 "aggregate_vdaf08": "aggregate, on a VDAF-08 task (prio 0.16.8): the same reports' values and "
                                     "pipeline, run alternately with draft 18's",
                 "whole_vdaf08": "whole, on that VDAF-08 task"},
        **stages,
    }
    out["aggregators"]["vdaf08_over_vdaf18"] = {  # two paths timed in one run: best reports/s over best
        "aggregate": stages["aggregate_vdaf08"]["reports_per_s"]["best"] / stages["aggregate"]["reports_per_s"]["best"],
        "whole": stages["whole_vdaf08"]["reports_per_s"]["best"] / stages["whole"]["reports_per_s"]["best"]}
    raw: dict[str, Any] | str = raw_exe if isinstance(raw_exe, str) else best_round(raws)
    binding = best_round(bindings)
    reference: dict[str, Any] | str = reference_exe if isinstance(reference_exe, str) else best_round(references)
    out["raw_api"] = {"source": "the prio3_aggregators section's raw program and binding loop (bench_prio), run "
                                "here on the same case and n, alternating with this path",
                      "raw": raw, "binding_loop": binding}
    out["reference"] = {"source": "bindings/prio/examples/aggregate_reference.rs on these very reports, beside each "
                                  "run of this path: the helper's HPKE open (the hpke crate) and both aggregators' "
                                  "Prio3 preparation and aggregation (the prio crate), one thread",
                        "run": reference}
    out["every_core"] = cores
    out["ratio"] = _ratios(stages, raw, binding, reference)
    out["ratio"]["aggregate_cores_over_one"] = cores["aggregate"]["ratio"]
    out["ratio"]["batch_calls_cores_over_one"] = cores["batch_calls"]["ratio"]
    if "machine" in cores:
        out["ratio"]["machine_cores_over_one"] = cores["machine"]["ratio"]
        out["ratio"]["aggregate_cores_over_machine"] = cores["aggregate_cores_over_machine"]
    out["ratio"]["whole_reports_per_s_every_core"] = cores["whole"]["reports_per_s_every_core"]
    return out


def _ratios(stages: dict[str, Any], raw: dict[str, Any] | str, binding: dict[str, Any],
            reference: dict[str, Any] | str) -> dict[str, Any]:
    """Each path's best reports/s over another's, both timed in one run (alternating rounds): never a difference of
    timings."""
    rate = {name: stage["reports_per_s"]["best"] for name, stage in stages.items()}
    out: dict[str, Any] = {}
    if not isinstance(reference, str):
        ref = reference["reports_per_s"]["best"]
        out.update(aggregate_over_reference=rate["aggregate"] / ref, prio3_over_reference=rate["batch_calls"] / ref,
                   hpke_opens_over_reference=rate["hpke_opens"] / ref)
    if not isinstance(raw, str):
        raw_rate = raw["reports_per_s"]["best"]
        out.update(aggregate_over_raw=rate["aggregate"] / raw_rate, whole_over_raw=rate["whole"] / raw_rate,
                   binding_loop_over_raw=binding["reports_per_s"]["best"] / raw_rate)
    out["note"] = ("aggregate_over_reference (judged, >= 0.5): the aggregators' whole aggregate step (the helper's "
                   "HPKE opens, both aggregators' Prio3 batch calls, the leader-helper messages, each job recorded "
                   "durably by both) against the reference doing the same reports' opens and preparation through "
                   "the crates alone. prio3_over_reference (judged, >= 0.9): the aggregators' three batch calls "
                   "alone (the helper's opens inside) against the same reference. aggregate_over_raw and "
                   "whole_over_raw: against the crate's preparation without any HPKE (bench_prio's raw program).")
    return out


def register(b: Any) -> None:
    """Add the ``two_aggregators`` section to the benchmark module ``b`` (:func:`run` at its sizes; the aggregate
    step and the Prio3 work judged against the reference: :data:`AGGREGATE_TARGET`, :data:`PRIO3_TARGET`)."""

    @b.benchmark("two_aggregators")
    def two_aggregators(ctx: Any) -> dict[str, Any]:
        out = run(1000 if ctx.quick else 4000, 3, 1 if ctx.quick else 3, 0.5 if ctx.quick else 2.0, b.log,
                  ctx.device_build, ctx.cpus)
        ratio = out["ratio"]
        for name, target in (("aggregate_over_reference", AGGREGATE_TARGET), ("prio3_over_reference", PRIO3_TARGET),
                             ("aggregate_cores_over_one", CORES_TARGET),
                             ("whole_reports_per_s_every_core", WHOLE_TARGET)):
            if name in ratio:
                unit = "reports/s" if name.startswith("whole_reports") else "x"
                ratio[name] = ctx.judge(f"{name}[{CASE}]", ratio[name], ">=", target, unit)
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=None, help="reports (default 4000; --quick 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per round (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds, alternating with the raw API (default 3; "
                        "--quick 1)")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per device case and interface "
                        "(default 2; --quick 0.5)")
    parser.add_argument("--quick", action="store_true", help="1000 reports, 1 round, 0.5 s per device case")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the process (and the Rust programs) to "
                        "one CPU")
    parser.add_argument("--no-device-build", action="store_true", help="do not build the device program "
                        "(clients/rust's dap_bench example): use one built before, else skip the Rust and C figures")
    args = parser.parse_args(argv)
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    pinned = None if args.no_pin else pin_one_cpu()
    result = run(args.reports or (1000 if args.quick else 4000), args.repeats, args.rounds or (1 if args.quick else 3),
                 args.seconds or (0.5 if args.quick else 2.0), lambda m: print(m, file=sys.stderr, flush=True),
                 not args.no_device_build, cpus)
    result.update(pinned_cpu=pinned, python=platform.python_version(), machine=platform.machine())
    print(json.dumps(result, indent=1))
    return 0 if result["aggregators"]["all_results_correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
