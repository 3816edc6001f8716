"""The honest reference of the ``two_aggregators`` section (issue 86, item 1): the aggregate step's work done by the
crates alone, on the same reports, in the same run.

``bindings/prio/examples/aggregate_reference.rs`` (built here with ``cargo build --release --locked
--no-default-features --example aggregate_reference``) takes the reports the benchmark's aggregators take — their
report IDs, times, public shares, the helper's HPKE ciphertexts, the leader's input shares as its door opened them —
with the helper's private key, the verify key and the task ID, and does per report what the aggregate step must:
the helper's HPKE open through the ``hpke`` crate (the DAP-09 suite, ``info`` and AAD) and both aggregators' Prio3
preparation and aggregation through the ``prio`` crate, in one thread. Its best run over every report is the
reference the aggregate step (messages and durable records included) and the aggregators' Prio3 work alone (their
three batch calls, the helper's opens inside) are measured against, each a ratio of two paths timed in one run:
never a difference of timings.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench_prio import build_example, run_summary

__all__ = ["build_reference", "reference_path", "reference_doc", "reference_processes"]


def build_reference() -> Path | str:
    """The reference program, or why it could not be built."""
    return build_example("aggregate_reference")


def reference_doc(dep: Any, reports: list[Any], leader_shares: list[bytes]) -> dict[str, Any]:
    """The reference's input (module docstring): ``reports`` (decoded DAP reports of ``dep``'s draft-18
    Prio3Histogram task) with the leader's opened ``leader_shares``, the helper's private key, the verify key."""
    vdaf = dep.task.prio3()
    if dep.task.vdaf_draft != 18 or dep.task.vdaf != "Prio3Histogram":
        raise ValueError("the reference runs a draft-18 Prio3Histogram task")
    return {"length": int(dep.task.vdaf_params["length"]), "chunk_length": int(vdaf.chunk_length),
            "verify_key": dep.verify_key.hex(), "task_id": dep.task.task_id.hex(),
            "helper_private_key": bytes(dep.helper_key.private_key).hex(),
            "reports": [{"report_id": r.report_id.hex(), "time": r.time, "public_share": r.public_share.hex(),
                         "helper_ciphertext": bytes(r.helper_ciphertext).hex(), "leader_share": s.hex()}
                        for r, s in zip(reports, leader_shares, strict=True)]}


def reference_path(exe: Path, dep: Any, reports: list[Any], leader_shares: list[bytes], truth: list[int],
                   repeats: int) -> dict[str, Any]:
    """The reference's timings on ``reports`` (:func:`reference_doc`): its best and median run, reports/s, and
    whether its result is the truth."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="ldp-reference-") as f:
        json.dump(reference_doc(dep, reports, leader_shares), f)
        f.flush()
        done = subprocess.run([str(exe), f.name, str(repeats)], capture_output=True, text=True, check=True,
                              timeout=1800)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    n = len(reports)
    summary = run_summary(n, [out["best_s"]], out["result"] == truth)
    summary.update(median_s=out["median_s"], reports_per_s={"best": n / out["best_s"], "median": n / out["median_s"]})
    return summary


def reference_processes(exe: Path, doc_file: Path, processes: int, repeats: int = 3) -> float:
    """The machine's own scaling for this work: ``processes`` copies of the reference (one thread each) started
    together on the same input (``doc_file``: :func:`reference_doc` as JSON), each timing ``repeats`` runs after a
    warm-up; the slowest copy's median run in seconds (with one copy, its median). ``processes`` copies take
    ``processes`` times the reports in that time."""
    procs = [subprocess.Popen([str(exe), str(doc_file), str(repeats)], stdout=subprocess.PIPE, text=True)
             for _ in range(processes)]
    medians = []
    for proc in procs:
        stdout, _ = proc.communicate(timeout=1800)
        if proc.returncode:
            raise RuntimeError(f"the reference exited {proc.returncode}")
        medians.append(float(json.loads(stdout.strip().splitlines()[-1])["median_s"]))
    return max(medians)
