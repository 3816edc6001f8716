"""The TypeScript client's two-aggregator metrics end to end in Node (issue 87, items 1, 4 and 6): devices made by
clients/typescript/test-support/dap-device.mjs (the built package: ``ldp-telemetry-client/dap``'s WebAssembly, the
client's ``FileStore``) record the example spec's two metrics with the task files ``ldp collect task`` writes, are
held to the k reports a window their tasks count, and upload to a loopback ``ldp`` leader paired with an ``ldp``
helper (tests/support/loopback_aggregators.py); ``ldp collect`` reads back exactly the sum of the measurements the
devices made (no noise, so the spec without its central target): ``search_engine``'s exact values (VDAF draft 18)
and ``crashed``'s randomized bits (``two-aggregator+local``, VDAF-08).

CI builds the client first (.ci/run) and sets ``LDP_REQUIRE_TS_BUNDLE=1``: without the build this test fails there
instead of skipping."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from support import ROOT
from support.loopback_aggregators import LoopbackAggregators, TaskSpec
from support.typescript import CLIENT, DAP_WASM, node_for

from ldp.spec import CollectionSpec

DEVICE = CLIENT / "test-support" / "dap-device.mjs"
WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
DEVICES = 8


def _node() -> str:
    return node_for([DAP_WASM], "the TypeScript client's dap entry is not built (npm test in clients/typescript)")


def test_node_devices_record_upload_and_the_aggregators_count_exactly(tmp_path: Path) -> None:
    node = _node()
    doc = json.loads((ROOT / "examples" / "two_aggregators.json").read_text())
    del doc["release"]
    spec = CollectionSpec.from_dict(doc)
    (tmp_path / "deploy").mkdir()
    agg = LoopbackAggregators(tmp_path / "deploy", {
        "search_engine": TaskSpec("Prio3Histogram", draft=18, time_precision=3600),
        "crashed": TaskSpec("Prio3Count", draft=8, time_precision=3600)}, collection=spec)
    agg.start_both()
    made: dict[str, list[Any]] = {"search_engine": [], "crashed": []}
    try:
        tasks = {m: (tmp_path / "deploy" / "collector" / f"{m}.task.json").read_text() for m in made}
        labels = spec.params("search_engine").labels
        for d in range(DEVICES):
            job = {"spec": doc, "tasks": tasks, "state": str(tmp_path / f"device{d}"), "clock": T0 + 700 * d + 11,
                   "records": [["search_engine", labels[d % 3]], ["crashed", d % 2 == 0], ["crashed", d % 3 == 0],
                               ["crashed", True]]}
            out = subprocess.run([node, str(DEVICE)], input=json.dumps(job), capture_output=True, text=True,
                                 timeout=120, check=False)
            assert out.returncode == 0, out.stderr[-3000:]
            device = json.loads(out.stdout)
            assert device["refused"] == [["crashed", "BudgetExceeded"]], device  # k = 2 a window
            assert (device["result"]["accepted"], device["result"]["stopped"], device["pending"]) == (3, "empty", 0)
            for metric, ms in device["made"].items():
                made[metric] += [m[0] for m in ms]
        for metric, measurements in made.items():
            _, collected = agg.collect(metric, T0)
            assert collected is not None, agg.log("leader")
            fit = spec.params(metric).prio3_fit()
            assert collected["sums"] == fit.sums(measurements), metric
            assert collected["n"] == len(measurements) == DEVICES * (1 if metric == "search_engine" else 2)
            assert collected["refused"] == {}
        assert made["search_engine"] == [d % 3 for d in range(DEVICES)]
    finally:
        agg.stop()
