"""The Python client's two-aggregator metrics end to end (issue 87, items 3, 4 and 6): devices record the example
spec's two metrics with ``TelemetryClient(..., tasks=...)`` (the task files ``ldp collect task`` writes, both
aggregators' configs inside), each charged to its ledger and capped at the k reports a window its task counts; they
upload to a loopback ``ldp`` leader paired with an ``ldp`` helper (tests/support/loopback_aggregators.py), and
``ldp collect`` reads back exactly the sum of the measurements the devices made (no noise, so the spec without its
central target): the exact value's
histogram of ``search_engine`` (VDAF draft 18) and the randomized bits of ``crashed`` (``two-aggregator+local``,
VDAF-08, the draft the deployed DAP stack speaks). A second upload sends nothing again."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from support.loopback_aggregators import LoopbackAggregators, TaskSpec

from ldp.client import TelemetryClient
from ldp.client.dap import DapEncoder
from ldp.errors import BudgetExceeded
from ldp.spec import CollectionSpec

SPEC = ROOT / "examples" / "two_aggregators.json"
WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
DEVICES = 12


def test_devices_record_upload_and_the_aggregators_count_exactly(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(SPEC.read_text())
    del doc["release"]  # no central target: the count is read without noise, exactly
    spec = CollectionSpec.from_dict(doc)
    made: dict[str, list[Any]] = {"search_engine": [], "crashed": []}
    measure = DapEncoder.measurement

    def spy(self: DapEncoder, prepared: Any) -> Any:
        made[self.metric].append(out := measure(self, prepared))
        return out

    monkeypatch.setattr(DapEncoder, "measurement", spy)
    (tmp_path / "deploy").mkdir()
    agg = LoopbackAggregators(tmp_path / "deploy", {
        "search_engine": TaskSpec("Prio3Histogram", draft=18, time_precision=3600),
        "crashed": TaskSpec("Prio3Count", draft=8, time_precision=3600)}, collection=spec)
    agg.start_both()
    try:
        files = {m: tmp_path / "deploy" / "collector" / f"{m}.task.json" for m in made}
        labels = spec.params("search_engine").labels
        for d in range(DEVICES):
            at = float(T0 + 600 * d + 17)
            with TelemetryClient(spec, tmp_path / f"device{d}.db", clock=lambda at=at: at, tasks=files) as device:
                device.record("search_engine", labels[d % 3])
                device.record("crashed", d % 2 == 0)
                device.record("crashed", d % 3 == 0)
                with pytest.raises(BudgetExceeded):
                    device.record("crashed", True)
                result = device.upload()
                assert (result.accepted, result.stopped, result.rejected) == (3, "empty", {}), result
                assert device.upload().acknowledged == 0
        for metric, measurements in made.items():
            _, collected = agg.collect(metric, T0)
            assert collected is not None, agg.log("leader")
            fit = spec.params(metric).prio3_fit()
            assert collected["sums"] == fit.sums(measurements), metric
            assert collected["n"] == len(measurements) and collected["refused"] == {}
        assert made["search_engine"] == [d % 3 for d in range(DEVICES)]
    finally:
        agg.stop()
