"""A spec's ``poplar1`` metric end to end (issue 89, item 3): devices record strings with
``TelemetryClient(..., tasks={metric: task file})``, each report a sealed Poplar1 DAP-09 report in the device's outbox,
charged the spec's ``budget.per_report``; they upload to a loopback ``ldp`` leader paired with an ``ldp`` helper
(tests/support/loopback_aggregators.py, the task written from the spec as ``ldp collect task`` writes it), and
``ldp collect --heavy-hitters`` with no ``--threshold`` walks the prefix tree at the spec's ``threshold`` (carried by
the task) and, without noise, finds exactly the strings held by at least that many devices."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.poplar1_e2e import HOLDERS, SPEC, T0, THRESHOLD, poplar1_aggregators, walk_found

from ldp.client import TelemetryClient
from ldp.errors import BudgetExceeded
from ldp.spec import CollectionSpec


def test_devices_record_strings_and_the_walk_finds_exactly_those_with_t_holders(tmp_path: Path) -> None:
    """Breaks if the client seals anything but the string's padded bits (the walk finds other strings), if the
    task written from the spec is not Poplar1 with its bits (the leader refuses the reports: fewer counted), if the
    charge is not ``per_report`` (the second report is not refused), or if the task does not carry the spec's
    threshold (the walk at the recommended T of no noise, 1, finds "no" and "z" too)."""
    spec = CollectionSpec.from_dict(SPEC)
    with poplar1_aggregators(tmp_path / "deploy") as (agg, task_file):
        files = {"new_words": task_file}
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
        found, doc = walk_found(tmp_path / "deploy", files["new_words"], tmp_path / "found.json")
        assert found == {"hi": 4, "é": 3}, (doc, agg.log("leader"))
        assert (doc["threshold"], doc["bits"], doc["report_count"]) == (THRESHOLD, 16, len(values))
