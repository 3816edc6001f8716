"""divviup-ts, Divvi Up's published TypeScript DAP client, against ``ldp``'s two aggregators (issue 85, item 3).

``@divviup/dap`` 0.9.1 (DAP-09) with ``@divviup/prio3`` 0.8.0 (VDAF-08), pinned by tests/support/divviup/
package-lock.json, runs in Node (tests/support/divviup/upload.mjs) and uploads through its public API
(``new Task({...})``, ``task.sendMeasurement(m, {timestamp})``), as an app would, to an ``ldp`` leader on loopback
paired with an ``ldp`` helper (tests/support/loopback_aggregators.py), one VDAF-08 task per Prio3 type it has:
Prio3Count, Prio3Sum, Prio3SumVec and Prio3Histogram (all four of ``ldp``'s; divviup-ts has no other), its parameters
taken from the task file alone (docs/two-aggregators.md §16). Reports made by ``ldp`` itself (``ldp.prio.seal_report``
through the task's ``prio3()``, draft 8) go to the same window, and ``ldp collect`` must read back exactly the sum of
both (no noise), every report counted and none refused; a few reports of a 1,024-bucket histogram too.

The same Node process then times ``task.generateReport`` (Prio3 sharding and both HPKE seals, no upload) for a
16-bucket and a 1,024-bucket Prio3Histogram task; the numbers are printed (``pytest -s``) for the benchmarks.

A third test puts divviup-ts's reports and the TypeScript client's (its ``ldp-telemetry-client/dap`` entry, Node
devices of clients/typescript/test-support/dap-device.mjs) in one window of the example spec's two tasks, both on
VDAF-08 (the draft divviup-ts speaks), and ``ldp collect`` must count both exactly (issue 87, item 6).

A refusal reaches divviup-ts as its ``DAPError`` with DAP-09's type: ``ldp``'s problem documents carry DAP-09's
``taskid`` member (§3.2), which divviup-ts's ``DAPError`` reads unconditionally (without it, the app got a
``TypeError``, and ``sendMeasurement`` never retried after ``outdatedConfig``).

CI runs ``npm ci`` in tests/support/divviup (.ci/run) and sets ``LDP_REQUIRE_DIVVIUP=1``, so a missing install fails
there; elsewhere the tests skip and say to run it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from support.loopback_aggregators import LoopbackAggregators, TaskSpec, prio

from ldp.spec import CollectionSpec

HERE = Path(__file__).resolve().parents[1] / "support" / "divviup"
SCRIPT = HERE / "upload.mjs"
PACKAGE = HERE / "node_modules" / "@divviup" / "dap" / "package.json"
WINDOW = 86400
PRECISION = 3600
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""

TASKS = {
    "count": TaskSpec("Prio3Count", {}, window_seconds=WINDOW, time_precision=PRECISION, min_batch_size=10),
    "sum": TaskSpec("Prio3Sum", {"max_measurement": 255}, window_seconds=WINDOW, time_precision=PRECISION,
                    min_batch_size=10),
    "sumvec": TaskSpec("Prio3SumVec", {"length": 5, "max_measurement": 7}, window_seconds=WINDOW,
                       time_precision=PRECISION, min_batch_size=10),
    "histogram": TaskSpec("Prio3Histogram", {"length": 16}, window_seconds=WINDOW, time_precision=PRECISION,
                          min_batch_size=10),
}
BENCH = {"histogram1024": TaskSpec("Prio3Histogram", {"length": 1024}, window_seconds=WINDOW,
                                   time_precision=PRECISION)}
DIVVIUP_REPORTS = 200
LDP_REPORTS = 40


def _require(why: str) -> None:
    if os.environ.get("LDP_REQUIRE_DIVVIUP") == "1":
        pytest.fail(f"LDP_REQUIRE_DIVVIUP=1 but {why}", pytrace=False)
    pytest.skip(why)


def node() -> str:
    """Node (18 or later: its global ``fetch``) with divviup-ts installed in tests/support/divviup; else a skip, or
    a failure under ``LDP_REQUIRE_DIVVIUP=1``."""
    exe = shutil.which("node")
    if exe is None:
        _require("divviup-ts needs Node (18 or later) on PATH")
    assert exe is not None
    if not PACKAGE.exists():
        _require(f"divviup-ts is not installed: run `npm ci` in {HERE}")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 18:
        _require(f"divviup-ts needs Node 18 or later (its global fetch), found {version}")
    return exe


def run_node(job: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
    done = subprocess.run([node(), str(SCRIPT)], input=json.dumps(job), capture_output=True, text=True,
                          timeout=timeout, cwd=HERE)
    assert done.returncode == 0, f"node upload.mjs failed ({done.returncode}): {done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def client_task(d: LoopbackAggregators, name: str) -> dict[str, Any]:
    """divviup-ts's ``Task`` parameters (``ClientParameters & KnownVdafSpec``) for the ``ldp`` task ``name``, from
    its task file's fields alone, as docs/two-aggregators.md §16 maps them."""
    task = d.tasks[name]
    params = task.vdaf_params
    out: dict[str, Any] = {"id": task.id_text, "leader": task.leader_url, "helper": task.helper_url,
                           "timePrecisionSeconds": task.time_precision}
    if task.vdaf == "Prio3Count":
        out["type"] = "count"
    elif task.vdaf == "Prio3Sum":
        out.update(type="sum", bits=params["max_measurement"].bit_length())
    elif task.vdaf == "Prio3SumVec":
        out.update(type="sumVec", bits=params["max_measurement"].bit_length(), length=params["length"],
                   chunkLength=params["chunk_length"])
    else:
        out.update(type="histogram", length=params["length"], chunkLength=params["chunk_length"])
    return out


def measurements(kind: str, rng: random.Random, n: int) -> list[Any]:
    if kind == "count":
        return [rng.random() < 0.3 for _ in range(n)]
    if kind == "sum":
        return [rng.randrange(256) for _ in range(n)]
    if kind == "sumvec":
        return [[rng.randrange(8) for _ in range(5)] for _ in range(n)]
    return [min(15, int(rng.expovariate(0.25))) for _ in range(n)]


def truth(kind: str, values: list[Any]) -> list[int]:
    if kind == "count":
        return [sum(map(int, values))]
    if kind == "sum":
        return [sum(values)]
    if kind == "sumvec":
        return [sum(v[i] for v in values) for i in range(5)]
    return [values.count(b) for b in range(16)]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[LoopbackAggregators]:
    node()
    prio()
    d = LoopbackAggregators(tmp_path, {**TASKS, **BENCH})
    try:
        d.start_both()
        yield d
    finally:
        d.stop()


def test_divviup_ts_reports_are_counted_exactly_by_ldp(deployment: LoopbackAggregators) -> None:
    d = deployment
    rng = random.Random(85)
    ours = {kind: measurements(kind, rng, DIVVIUP_REPORTS) for kind in TASKS}
    theirs = {kind: measurements(kind, rng, LDP_REPORTS) for kind in TASKS}
    wide = [rng.randrange(1024) for _ in range(12)]  # a few reports of the benchmark's 1,024-bucket task too
    # divviup-ts's reports at 02:xx of the window (rounded down to the hour by the client), ldp's at 05:00: one window
    job = {"concurrency": 8,
           "uploads": [{"name": kind, "task": client_task(d, kind), "measurements": ours[kind],
                        "timestamp": T0 + 2 * PRECISION + 1234} for kind in TASKS]
           + [{"name": "histogram1024", "task": client_task(d, "histogram1024"), "measurements": wide,
               "timestamp": T0 + 3 * PRECISION}],
           "bench": [{"name": "Prio3Histogram, 16 buckets", "task": client_task(d, "histogram"), "measurement": 3,
                      "reports": 50},
                     {"name": "Prio3Histogram, 1,024 buckets", "task": client_task(d, "histogram1024"),
                      "measurement": 700, "reports": 10}]}
    started = time.monotonic()
    result = run_node(job)
    node_seconds = time.monotonic() - started
    uploads = {u["name"]: u for u in result["uploads"]}
    for kind in TASKS:
        statuses = d.upload(kind, d.reports(kind, [int(v) if kind == "count" else v for v in theirs[kind]],
                                            T0 + 5 * PRECISION))
        assert set(statuses) == {201}, (kind, statuses)
    print(f"\ndivviup-ts ({result['dap']}) on Node {result['node']}: its process {node_seconds:.1f} s")
    for kind in [*TASKS, "histogram1024"]:
        u = uploads[kind]
        print(f"  {kind}: {u['ok']}/{u['sent']} reports uploaded in {u['seconds']:.2f} s")
    for b in result["bench"]:
        print(f"  generateReport, {b['name']}: mean {b['mean_ms']:.2f} ms, median {b['median_ms']:.2f} ms "
              f"(min {b['min_ms']:.2f}, max {b['max_ms']:.2f}; {b['reports']} reports after a warm-up)")
    for kind in TASKS:
        assert uploads[kind]["errors"] == [] and uploads[kind]["ok"] == DIVVIUP_REPORTS, uploads[kind]
    assert uploads["histogram1024"]["errors"] == [] and uploads["histogram1024"]["ok"] == len(wide)
    started = time.monotonic()
    for kind in TASKS:
        _, collected = d.collect(kind, T0)
        assert collected is not None
        assert collected["sums"] == truth(kind, ours[kind] + theirs[kind]), kind
        assert collected["n"] == DIVVIUP_REPORTS + LDP_REPORTS and collected["refused"] == {}, (kind, collected)
        assert collected["central"]["release"] is None
    _, collected = d.collect("histogram1024", T0)
    assert collected is not None and collected["n"] == len(wide)
    assert collected["sums"] == [wide.count(b) for b in range(1024)]
    print(f"  ldp collect, five tasks: {time.monotonic() - started:.1f} s")
    # each aggregator prepared and counted every report of both clients, and refused none
    leader, helper = d.status("leader"), d.status("helper")
    for status in (leader, helper):
        for entry in status["tasks"]:
            assert entry["refused"] == {}, entry
    assert all(not entry.get("refused_at_upload") for entry in leader["tasks"]), leader
    assert all(b["mean_ms"] > 0 for b in result["bench"])


def test_a_refusal_by_ldp_reaches_divviup_ts_as_a_dap_error(tmp_path: Path) -> None:
    node()
    prio()
    d = LoopbackAggregators(tmp_path, {"count": TASKS["count"]})
    try:
        d.start_both()
        # a report a month ahead of the leader's clock: refused reportTooEarly (DAP-09 §4.4.2)
        result = run_node({"uploads": [{"name": "early", "task": client_task(d, "count"), "measurements": [True],
                                        "timestamp": int(time.time()) + 30 * 86400}]})
        assert d.status("leader")["tasks"][0]["refused_at_upload"] == {"report_too_early": 1}
    finally:
        d.stop()
    (upload,) = result["uploads"]
    assert upload["ok"] == 0
    (error,) = upload["errors"]
    assert (error["kind"], error.get("shortType"), error.get("status")) == ("DAPError", "reportTooEarly", 400), error


TS_DEVICE = ROOT / "clients" / "typescript" / "test-support" / "dap-device.mjs"
TS_WASM = ROOT / "clients" / "typescript" / "dist" / "dap" / "wasm" / "ldp_dap_bg.wasm"


def test_divviup_ts_and_the_typescript_client_land_in_one_window(tmp_path: Path) -> None:
    exe = node()
    if not TS_WASM.exists():
        why = "the TypeScript client's dap entry is not built (npm test in clients/typescript)"
        if os.environ.get("LDP_REQUIRE_TS_BUNDLE") == "1":
            pytest.fail(f"LDP_REQUIRE_TS_BUNDLE=1 but {why}", pytrace=False)
        pytest.skip(why)
    prio()
    doc = json.loads((ROOT / "examples" / "two_aggregators.json").read_text())
    del doc["release"]  # no noise: the counts must be exact
    spec = CollectionSpec.from_dict(doc)
    d = LoopbackAggregators(tmp_path, {"search_engine": TaskSpec("Prio3Histogram", draft=8),
                                       "crashed": TaskSpec("Prio3Count", draft=8)}, collection=spec)
    rng = random.Random(87)
    theirs = {"search_engine": [rng.randrange(4) for _ in range(30)], "crashed": [rng.random() < 0.4
                                                                                   for _ in range(30)]}
    ours: dict[str, list[Any]] = {"search_engine": [], "crashed": []}
    labels = spec.params("search_engine").labels
    tasks = {m: (tmp_path / "collector" / f"{m}.task.json").read_text() for m in ours}
    try:
        d.start_both()
        for device in range(4):
            job = {"spec": doc, "tasks": tasks, "state": str(tmp_path / f"device{device}"),
                   "clock": T0 + 4 * PRECISION + 97 * device, "records": [["search_engine", labels[device]],
                                                                          ["crashed", device % 2 == 0]]}
            out = subprocess.run([exe, str(TS_DEVICE)], input=json.dumps(job), capture_output=True, text=True,
                                 timeout=120, check=False)
            assert out.returncode == 0, out.stderr[-3000:]
            made = json.loads(out.stdout)
            assert made["refused"] == [] and made["result"]["accepted"] == 2, made
            for metric, measurements in made["made"].items():
                ours[metric] += [m[0] for m in measurements]
        result = run_node({"uploads": [{"name": m, "task": client_task(d, m), "measurements": theirs[m],
                                        "timestamp": T0 + 9 * PRECISION + 5} for m in theirs]})
        assert all(u["errors"] == [] and u["ok"] == 30 for u in result["uploads"]), result["uploads"]
        for metric in ours:
            _, collected = d.collect(metric, T0)
            assert collected is not None, d.log("leader")
            values = ours[metric] + [int(v) for v in theirs[metric]]
            assert collected["sums"] == spec.params(metric).prio3_fit().sums(values), metric
            assert collected["n"] == 34 and collected["refused"] == {}, collected
    finally:
        d.stop()
