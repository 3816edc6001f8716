"""One Poplar1 level's jobs over 1 and over 2 leader replica processes (``docs/scale-out.md``; issue 89):
the level's wall time, each replica a real process (``--worker``) over one leader store and one helper store.

The parent seals ``--reports`` reports of ``--bits``-bit strings, takes them at a door replica, admits one level
(``--level``, every prefix of it up to ``--candidates``) and plans its jobs (``--job-size``) there, then starts
``k`` worker processes at once. Each is a leader replica (``aggregate_every``'s loop: its background pass,
:func:`ldp.aggregators.poplar1_scale_out.run_levels`, called until every job of the level is finished) with its own
in-process helper over the shared helper store. The level's time is from the workers' start to the last one's end,
process start-up (Python and the binding imported, the task's state read: ``startup_s``, measured apart by a worker
with no job left) included. The level is then released by a fresh replica and checked exact (``counts_exact``),
each job finished once (``jobs``). Both aggregators share this machine's cores: on 2 cores the helper's half of a
job competes with the other replica's leader half.

    python simulations/bench_poplar1_replicas.py --reports 4000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 3600


def _keys(doc: dict[str, Any]) -> tuple[Any, Any, Any]:
    from ldp import prio

    return tuple(prio.HpkeKeypair.from_bytes(bytes.fromhex(doc[f"{k}_config"]), bytes.fromhex(doc[f"{k}_private"]))
                 for k in ("collector", "leader", "helper"))  # type: ignore[return-value]


def _build(work: Path, name: str, **options: Any) -> tuple[Any, Any, Any]:
    """(leader replica ``name``, its helper, the setup document) over ``work``'s stores."""
    from ldp.aggregators.helper import Helper
    from ldp.aggregators.leader import Leader
    from ldp.aggregators.task import Task
    from ldp.storage import open_store

    doc = json.loads((work / "setup.json").read_text())
    task, (_, leader_key, helper_key) = Task.from_dict(doc["task"]), _keys(doc)
    verify = {task.task_id: bytes.fromhex(doc["verify_key"])}
    helper = Helper([task], open_store(work / "helper-store"), helper_key, verify, replicated=True)
    leader = Leader([task], open_store(work / "leader-store"), leader_key, verify, helper, replica=name,
                    job_size=doc["job_size"], report_expiry=10 ** 8, **options)
    return leader, helper, doc


def worker(work: Path, name: str) -> None:
    """A replica's background passes until the level's every job is finished (module docstring)."""
    from ldp.aggregators.poplar1_scale_out import refresh_levels

    leader, _, doc = _build(work, name)
    state = leader.task_state(bytes.fromhex(doc["task_id"]))
    ran = 0
    while True:
        ran += leader.run_aggregation_jobs().get("jobs", 0)
        with state.lock:
            refresh_levels(leader, state)
        done = state.poplar1.finished.get((doc["window"], doc["level"]), {})
        if len(done) >= doc["jobs"]:
            break
        time.sleep(0.05)
    leader.stop()
    print(json.dumps({"replica": name, "jobs": ran}))


def setup(work: Path, n: int, bits: int, level: int, candidates: int, job_size: int) -> dict[str, Any]:
    """Stores, task, keys, reports taken at a door and the level admitted and planned (module docstring)."""
    import numpy as np

    from ldp import prio
    from ldp.aggregators.poplar1_jobs import plan_level
    from ldp.aggregators.poplar1_scale_out import refresh_levels
    from ldp.aggregators.task import Noise, Task
    from ldp.prio.poplar1 import agg_param, bits_of

    collector, leader_key, helper_key = (prio.HpkeKeypair.generate(i) for i in (7, 1, 2))
    now = int(time.time())
    window = now - now % WINDOW - 2 * WINDOW
    task = Task(task_id=secrets.token_bytes(32), app="bench", metric="s", vdaf="Poplar1",
                vdaf_params={"bits": bits, "max_candidates": max(candidates, 2)}, window_seconds=WINDOW,
                min_batch_size=1, noise=Noise(), leader_url="http://127.0.0.1:1", helper_url="http://127.0.0.1:2",
                collector_hpke_config=collector.config.to_bytes())
    doc: dict[str, Any] = {"task": task.to_dict(), "task_id": task.task_id.hex(), "job_size": job_size,
                           "verify_key": secrets.token_bytes(task.prio3().verify_key_size).hex(),
                           "window": window, "level": level}
    for k, key in zip(("collector", "leader", "helper"), (collector, leader_key, helper_key), strict=True):
        doc[f"{k}_config"], doc[f"{k}_private"] = key.config.to_bytes().hex(), bytes(key.private_key).hex()
    (work / "setup.json").write_text(json.dumps(doc))
    values = np.random.default_rng(1).zipf(1.3, n) % (1 << bits)
    door, _, _ = _build(work, "door")
    vdaf = task.prio3()
    bodies = [prio.seal_report(vdaf, bits_of(int(v), bits), task_id=task.task_id, time=window + 5,
                               leader=leader_key.config, helper=helper_key.config) for v in values]
    assert door.upload_many(task.task_id, bodies) == [None] * n
    state = door.task_state(task.task_id)
    refresh_levels(door, state)  # a replica door's chunks are read by the planner, as any other door's
    prefixes = sorted({int(v) >> (bits - 1 - level) for v in values})[:candidates]
    param = state.poplar1.admit(task, window, agg_param(level, prefixes).to_bytes())
    jobs = plan_level(door, state, window, param)
    assert jobs is not None
    door.stop()
    doc.update(jobs=len(jobs), param=param.to_bytes().hex(),
               truth=[int(sum(1 for v in values if int(v) >> (bits - 1 - level) == p)) for p in prefixes])
    (work / "setup.json").write_text(json.dumps(doc))
    return doc


def _run(work: Path, names: list[str]) -> tuple[float, list[dict[str, Any]]]:
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", name, "--dir", str(work)], stdout=subprocess.PIPE,
                              text=True, cwd=ROOT) for name in names]
    outs = [p.communicate()[0] for p in procs]
    seconds = time.perf_counter() - start
    assert all(p.returncode == 0 for p in procs), outs
    return seconds, [json.loads(o.strip().splitlines()[-1]) for o in outs]


def measure(replicas: int, args: argparse.Namespace) -> dict[str, Any]:
    """The level's time over ``replicas`` worker processes, checked exact (module docstring)."""
    from ldp.aggregators.heavy_hitters import open_level

    with tempfile.TemporaryDirectory(prefix="ldp-p1r-") as tmp:
        work = Path(tmp)
        doc = setup(work, args.reports, args.bits, args.level, args.candidates, args.job_size)
        seconds, outs = _run(work, [f"r{i}" for i in range(replicas)])
        startup, _ = _run(work, ["late"])  # no job left: start-up and one pass alone
        leader, _, _ = _build(work, "check")
        out = leader.collect(bytes.fromhex(doc["task_id"]), doc["window"], bytes.fromhex(doc["param"]))
        from ldp.aggregators.task import Task
        from ldp.prio.poplar1 import Poplar1AggregationParam

        task, (collector, _, _) = Task.from_dict(doc["task"]), _keys(doc)
        counts = open_level(task, collector, Poplar1AggregationParam.from_bytes(bytes.fromhex(doc["param"])), out)
        leader.stop()
    return {"replicas": replicas, "level_s": round(seconds, 3), "startup_s": round(startup, 3),
            "jobs": doc["jobs"], "jobs_by_replica": {o["replica"]: o["jobs"] for o in outs},
            "counts_exact": list(counts) == doc["truth"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reports", type=int, default=4000)
    ap.add_argument("--bits", type=int, default=32)
    ap.add_argument("--level", type=int, default=15)
    ap.add_argument("--candidates", type=int, default=64)
    ap.add_argument("--job-size", type=int, default=250)
    ap.add_argument("--worker")
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.dir, args.worker)
        return
    rows = [measure(k, args) for k in (1, 2)]
    out = {"reports": args.reports, "bits": args.bits, "level": args.level, "cores": os.cpu_count(), "rows": rows,
           "speedup": round(rows[0]["level_s"] / rows[1]["level_s"], 2)}
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
