"""The TypeScript OpenTelemetry reader with two-aggregator metrics end to end in Node: devices made by
clients/typescript/test-support/otel-dap-device.mjs (the built package: ``ldp-telemetry-client/otel``'s
``PrivatizingMetricReader`` given ``twoAggregator`` from ``ldp-telemetry-client/dap``, the client's ``FileStore``)
measure the example spec's two metrics with plain OpenTelemetry JS code; at the window's end each reader records
the window and uploads its DAP reports to a loopback ``ldp`` leader paired with an ``ldp`` helper
(tests/support/loopback_aggregators.py), with no ingest service; ``ldp collect`` reads back exactly the sum of the
measurements the devices made (no noise: the spec without its central target), the exact attribute values of
``search_engine`` and the randomized bits of ``crashed``. The Python reader's twin is in
tests/otel/test_otel_reader_dap.py.

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

DEVICE = CLIENT / "test-support" / "otel-dap-device.mjs"
NEEDED = (DAP_WASM, CLIENT / "dist" / "otel" / "index.js",
          CLIENT / "node_modules" / "@opentelemetry" / "sdk-metrics")
WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
OTEL = {"search_engine": {"instrument": "browser.searches", "kind": "counter", "value": "attribute",
                          "attribute": "engine"},
        "crashed": {"instrument": "app.crashes", "kind": "counter", "value": "any"}}


def _node() -> str:
    return node_for(NEEDED, "the TypeScript client's otel and dap entries are not built (npm test in "
                            "clients/typescript)")


def test_node_readers_upload_to_a_loopback_leader_and_the_window_is_collected_exactly(tmp_path: Path) -> None:
    node = _node()
    doc = json.loads((ROOT / "examples" / "two_aggregators.json").read_text())
    del doc["release"]
    for name, otel in OTEL.items():
        doc["metrics"][name]["otel"] = otel
    spec = CollectionSpec.from_dict(doc)
    (tmp_path / "deploy").mkdir()
    agg = LoopbackAggregators(tmp_path / "deploy", {
        "search_engine": TaskSpec("Prio3Histogram", draft=18), "crashed": TaskSpec("Prio3Count", draft=8)},
        collection=spec)
    agg.start_both()
    made: dict[str, list[Any]] = {m: [] for m in OTEL}
    engines = ["engine_b", "other", "engine_b"]
    try:
        tasks = {m: (tmp_path / "deploy" / "collector" / f"{m}.task.json").read_text() for m in OTEL}
        for d, engine in enumerate(engines):
            job = {"spec": doc, "tasks": tasks, "state": str(tmp_path / f"device{d}"), "start": T0 + 800 * d + 9,
                   "end": NOW, "engines": {engine: 3, "engine_a": 1}, "crashes": d % 2}
            out = subprocess.run([node, str(DEVICE)], input=json.dumps(job), capture_output=True, text=True,
                                 timeout=120, check=False, cwd=CLIENT)
            assert out.returncode == 0, out.stderr[-3000:]
            device = json.loads(out.stdout)
            assert [r["outcome"] for r in device["reported"]] == [{"crashed": "recorded",
                                                                   "search_engine": "recorded"}], device
            assert device["pending"] == [], agg.log("leader")
            for metric, ms in device["made"].items():
                made[metric] += [m[0] for m in ms]
        assert made["search_engine"] == [1, 3, 1]  # the exact values' indexes
        for metric, measurements in made.items():
            _, collected = agg.collect(metric, T0)
            assert collected is not None, agg.log("leader")
            assert collected["sums"] == spec.params(metric).prio3_fit().sums(measurements), metric
            assert collected["n"] == len(engines) and collected["refused"] == {}
    finally:
        agg.stop()
