"""Benchmark section ``door`` (issue 86, item 3): the leader's DAP-09 door over HTTP, held open-loop.

An ``ldp serve --role leader`` process (the binding's HTTP front, its uploads taken in batches: every check, the
leader's HPKE open, each batch one durable chunk before any 201) over a folder store in a temporary folder, and the
load generator beside it on the same machine (``bindings/prio/examples/door_load.rs``: hyper's client, uploads sent
at a fixed rate whatever the answers' pace, each latency counted from the moment its report was due). A 16-bucket
Prio3Histogram task; the reports sealed beforehand (``ldp.prio.seal_report``), each sent once.

For each offered rate: the reports answered 201 (all must be), the rate held (reports over the seconds from the
first due time to the last answer), latency p50/p90/p99/max, and the CPU seconds per report of the leader and of
the load generator (from ``/proc``). After the runs the store is read back: every report ID answered 201 is in
exactly one stored chunk (``stored_exactly``). Judged: at ``TARGET_RATE`` uploads/s, p99 ≤ ``TARGET_P99_MS``.

    python simulations/bench_door.py                    # 10,000/s for 6 s, then 14,000/s
    python simulations/bench_door.py --rates 5000 --seconds 2
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench_prio import build_example
from ldp_interop_api import LdpAggregator, free_port

TARGET_RATE = 10_000
TARGET_P99_MS = 20.0
BUCKETS = 16
WINDOW = 3600
PRECISION = 60
CONNECTIONS = 128


def _cpu_seconds(pid: int) -> float:
    """A process's user + system CPU seconds so far (``/proc/PID/stat``, its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _task(helper_url: str) -> tuple[Any, Any]:
    from ldp import prio
    from ldp.aggregators.task import Noise, Task

    collector = prio.HpkeKeypair.generate(7)
    task = Task(task_id=secrets.token_bytes(32), app="bench", metric="door", vdaf="Prio3Histogram",
                vdaf_params={"length": BUCKETS}, window_seconds=WINDOW, min_batch_size=100,
                leader_url="http://127.0.0.1:1/", helper_url=helper_url,
                collector_hpke_config=collector.config.to_bytes(), time_precision=PRECISION, noise=Noise())
    return task, collector


def seal_reports(task: Any, leader_config: Any, n: int) -> bytes:
    """``n`` reports of ``task`` (the chunk format: each prefixed by its length), sealed to the leader and a throwaway
    helper key, at the current time rounded down to the task's precision."""
    from ldp import prio
    from ldp.aggregators.records import join_chunk

    helper = prio.HpkeKeypair.generate(2).config
    vdaf = task.prio3()
    now = int(time.time())
    t = now - now % PRECISION
    return join_chunk(prio.seal_report(vdaf, i % BUCKETS, task_id=task.task_id, time=t, leader=leader_config,
                                       helper=helper, time_precision=PRECISION) for i in range(n))


def stored_ids(store: Path) -> list[bytes]:
    """Every report ID in the leader's stored chunks (with repeats, if any)."""
    from ldp.aggregators.messages import REPORT_ID_SIZE
    from ldp.aggregators.records import split_chunk

    return [body[:REPORT_ID_SIZE] for path in store.rglob("*.reports")
            for body in split_chunk(path.read_bytes())]


def one_rate(exe: Path, leader: LdpAggregator, task: Any, rate: int, seconds: float, work: Path,
             log: Any) -> dict[str, Any]:
    """One run at ``rate`` uploads/s (module docstring)."""
    import subprocess

    from ldp.aggregators.task import b64

    n = int(rate * seconds)
    config = _leader_config(leader)
    log(f"  sealing {n:,} reports ...")
    reports = work / f"reports-{rate}.bin"
    reports.write_bytes(seal_reports(task, config, n))
    before = _cpu_seconds(leader.proc.pid)
    done = subprocess.run([str(exe), leader.url.rstrip("/"), b64(task.task_id), str(reports), str(rate),
                           str(CONNECTIONS)], capture_output=True, text=True, check=True, timeout=600)
    leader_cpu = _cpu_seconds(leader.proc.pid) - before
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["held_rate"] = out["answered"] / out["seconds"] if out["seconds"] else 0.0
    out["leader_cpu_us_per_report"] = leader_cpu / n * 1e6
    out["load_cpu_us_per_report"] = out.pop("cpu_seconds") / n * 1e6
    out["all_created"] = out["statuses"].get("201", 0) == n
    log(f"  {rate:,}/s offered: held {out['held_rate']:,.0f}/s, p50 {out['p50_ms']:.1f} ms, p99 {out['p99_ms']:.1f} "
        f"ms, leader {out['leader_cpu_us_per_report']:.0f} µs/report, load generator "
        f"{out['load_cpu_us_per_report']:.0f} µs/report, statuses {out['statuses']}")
    return out


def _leader_config(leader: LdpAggregator) -> Any:
    """The leader's HPKE config, as devices fetch it (``GET /hpke_config``)."""
    from ldp import prio

    with urllib.request.urlopen(leader.url + "hpke_config", timeout=30) as resp:  # noqa: S310 (loopback)
        return prio.decode_hpke_config_list(resp.read())[0]


def run(rates: list[int], seconds: float, log: Any = print) -> dict[str, Any]:
    exe = build_example("door_load")
    if isinstance(exe, str):
        return {"skipped": exe}
    with tempfile.TemporaryDirectory(prefix="ldp-door-", dir=os.environ.get("LDP_BENCH_DIR")) as tmp:
        work = Path(tmp)
        leader = LdpAggregator(work / "leader", "leader", free_port(), aggregate_every=0)
        task, _ = _task("http://127.0.0.1:9/")
        leader.add("door", task, secrets.token_bytes(32), secrets.token_urlsafe(16), secrets.token_urlsafe(16))
        leader.restart()
        try:
            runs = {str(rate): one_rate(exe, leader, task, rate, seconds, work, log) for rate in rates}
        finally:
            leader.stop()
        ids = stored_ids(work / "leader" / "store")
        created = sum(r["statuses"].get("201", 0) for r in runs.values())
    judged = runs.get(str(TARGET_RATE))
    return {
        "what": "ldp serve --role leader (the binding's HTTP front, uploads in batches, group commit) under an "
                "open-loop load generator on the same machine; latency from each report's due time",
        "connections": CONNECTIONS, "seconds_per_rate": seconds, "runs": runs,
        "stored_exactly": len(ids) == len(set(ids)) == created,
        "target": {"rate": TARGET_RATE, "p99_ms": TARGET_P99_MS},
        "met": None if judged is None else bool(judged["all_created"] and judged["p99_ms"] <= TARGET_P99_MS
                                               and judged["held_rate"] >= 0.97 * TARGET_RATE),
        "cpus": os.cpu_count(),
    }


def opens_ceiling(n: int = 4000) -> dict[str, Any]:
    """The leader's HPKE opens alone (``ldp.prio.open_input_shares`` on every core, the reports sealed here): the
    door's ceiling on this machine, measured in the same run, which no door that opens every share can pass."""
    import time as _time

    from ldp import prio
    from ldp.aggregators.records import split_chunk

    keypair = prio.HpkeKeypair.generate(1)
    task, _ = _task("http://127.0.0.1:9/")
    reports = [prio.DapReport.from_bytes(b) for b in split_chunk(seal_reports(task, keypair.config, n))]
    items = [(r.report_id, r.time, r.public_share, r.leader_ciphertext) for r in reports]
    best = float("inf")
    for _ in range(3):
        t = _time.perf_counter()
        prio.open_input_shares(keypair, role="leader", task_id=task.task_id, reports=items)
        best = min(best, _time.perf_counter() - t)
    return {"reports": n, "threads": prio.batch_threads(), "opens_per_s": n / best}


def register(b: Any) -> None:
    """The ``door`` section of ``simulations/benchmark.py``: the target rate (judged: held, p99) and half of it."""

    @b.benchmark("door")
    def door(ctx: Any) -> dict[str, Any]:
        out = run([TARGET_RATE // 2, TARGET_RATE], 3.0 if ctx.quick else 6.0, log=b.log)
        if "runs" not in out:
            return out
        out["opens_ceiling"] = opens_ceiling()
        judged = out["runs"][str(TARGET_RATE)]
        out["judged"] = {
            "held": ctx.judge("door.held_uploads_per_s", judged["held_rate"], ">=", 0.97 * TARGET_RATE, "uploads/s"),
            "p99": ctx.judge("door.p99_ms", judged["p99_ms"], "<=", TARGET_P99_MS, "ms"),
            "half_rate_p99": ctx.judge("door.p99_ms_at_half_rate", out["runs"][str(TARGET_RATE // 2)]["p99_ms"],
                                       "<=", TARGET_P99_MS, "ms"),
        }
        out["held_over_opens_ceiling"] = judged["held_rate"] / out["opens_ceiling"]["opens_per_s"]
        return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rates", default=f"{TARGET_RATE},14000", help="offered uploads/s, comma-separated")
    p.add_argument("--seconds", type=float, default=6.0, help="seconds of load per rate")
    args = p.parse_args(argv)
    out = run([int(r) for r in args.rates.split(",")], args.seconds, log=lambda m: print(m, file=sys.stderr))
    print(json.dumps(out, indent=2))
    return 0 if out.get("stored_exactly") else 1


if __name__ == "__main__":
    raise SystemExit(main())
