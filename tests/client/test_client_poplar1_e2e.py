"""A spec's ``poplar1`` metric end to end (issue 89, item 3): devices record strings with
``TelemetryClient(..., tasks={metric: task file})``, each report a sealed Poplar1 DAP-09 report in the device's outbox,
charged the spec's ``budget.per_report``; they upload to a loopback ``ldp`` leader paired with an ``ldp`` helper
(tests/support/loopback_aggregators.py, the task written from the spec as ``ldp collect task`` writes it), and
``ldp collect --heavy-hitters`` with no ``--threshold`` walks the prefix tree at the spec's ``threshold`` (carried by
the task) and, without noise, finds exactly the strings held by at least that many devices."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from support.loopback_aggregators import LoopbackAggregators, TaskSpec, ldp_command

from ldp.client import TelemetryClient
from ldp.errors import BudgetExceeded
from ldp.spec import CollectionSpec

WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
THRESHOLD = 3
HOLDERS = {"hi": 4, "é": 3, "no": 2, "z": 1}
"""10 devices: "hi" and "é" (2 bytes of UTF-8) at or above T = 3, "no" and "z" below."""
SPEC = {"spec_version": 1, "name": "words", "budget": {"per_window": 4, "lifetime": 100},
        "metrics": {"new_words": {"protocol": "poplar1", "params": {"bits": 16, "threshold": THRESHOLD,
                                                                    "max_candidates": 16},
                                  "budget": {"per_report": 2.0, "per_window": 2.0}, "trust": "two-aggregator"}}}


def test_devices_record_strings_and_the_walk_finds_exactly_those_with_t_holders(tmp_path: Path) -> None:
    """Breaks if the client seals anything but the string's padded bits (the walk finds other strings), if the
    task written from the spec is not Poplar1 with its bits (the leader refuses the reports: fewer counted), if the
    charge is not ``per_report`` (the second report is not refused), or if the task does not carry the spec's
    threshold (the walk at the recommended T of no noise, 1, finds "no" and "z" too)."""
    spec = CollectionSpec.from_dict(SPEC)
    (tmp_path / "deploy").mkdir()
    agg = LoopbackAggregators(tmp_path / "deploy", {"new_words": TaskSpec("Poplar1", draft=18)}, collection=spec)
    task = agg.tasks["new_words"]
    assert (task.vdaf, task.vdaf_params) == ("Poplar1", {"bits": 16, "max_candidates": 16, "threshold": THRESHOLD})
    agg.start_both()
    try:
        files = {"new_words": tmp_path / "deploy" / "collector" / "new_words.task.json"}
        values = [text for text, n in HOLDERS.items() for _ in range(n)]
        for d, text in enumerate(values):
            at = float(T0 + 600 * d + 17)
            with TelemetryClient(spec, tmp_path / f"device{d}.db", clock=lambda at=at: at, tasks=files) as device:
                device.record("new_words", text)
                if d == 0:  # per_window 2.0 over per_report 2.0: one report a window
                    with pytest.raises(BudgetExceeded):
                        device.record("new_words", text)
                result = device.upload()
                assert (result.accepted, result.stopped, result.rejected) == (1, "empty", {}), result
        out = tmp_path / "found.json"
        root = tmp_path / "deploy" / "collector"
        ldp_command("collect", "--task", str(files["new_words"]), "--key", str(root / "hpke.json"),
                    "--token-file", str(root / "leader.token"), "--window", str(T0), "--heavy-hitters",
                    "--out", str(out))
        doc: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        found = {bytes.fromhex(s["bits"]).rstrip(b"\0").decode("utf-8"): s["count"] for s in doc["strings"]}
        assert found == {"hi": 4, "é": 3}, (doc, agg.log("leader"))
        assert (doc["threshold"], doc["bits"], doc["report_count"]) == (THRESHOLD, 16, len(values))
    finally:
        agg.stop()
