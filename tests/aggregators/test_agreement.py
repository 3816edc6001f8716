"""The two sides agree or say so (issue 84, item 4): a window's release compares the leader's and the helper's
counts and checksums; a mismatch is logged, shown on both sides' /status (``disagreements``) and the release refused
with ``batch_mismatch`` until they agree; each job is compared report by report (the reports the helper finished
must finish at the leader, or the job is abandoned and split: ldp.aggregators.jobs)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from support.scripts import load_script
from two_aggregators import T0, world

from ldp.errors import AggregatorError

_RefusesInItsAnswers = load_script("aggregator_faults")._RefusesInItsAnswers
"""A helper that counts every report in its records but answers each one refused (the silent disagreement the issue
found: leader 0 valid, helper 8)."""


def test_a_helper_that_counts_what_it_refused_is_a_disagreement_on_both_sides(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=5)
    w.leader.upload_many(w.task.task_id, [w.report(v % 4) for v in range(8)])
    w.leader.helper = _RefusesInItsAnswers(w.helper)
    with caplog.at_level(logging.ERROR, logger="ldp.aggregators"), pytest.raises(AggregatorError) as refused:
        w.collect()
    assert refused.value.code == "batch_mismatch"  # not batch_too_small: the two sides were compared first
    windows = {side.role: side.status()["tasks"][0] for side in (w.leader, w.helper)}
    assert windows["leader"]["windows"][str(T0)]["valid"] == 0 and windows["helper"]["windows"][str(T0)]["valid"] == 8
    for role, entry in windows.items():
        (alarm,) = entry["disagreements"]
        assert alarm["window"] == T0 and alarm["count"] == {"leader": 0, "helper": 8}[role], role
    assert "the helper disagrees" in caplog.text and "the leader disagrees" in caplog.text
    with pytest.raises(AggregatorError, match="nothing is released"):  # refused again until they agree
        w.collect()


class _MismatchOnce:
    """A helper whose first release answer is a mismatch (then itself)."""

    def __init__(self, helper: Any) -> None:
        self.helper, self.left = helper, 1

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes:
        if self.left:
            self.left -= 1
            raise AggregatorError("window: the leader aggregated 5 reports, this helper 6", "batch_mismatch", 409)
        return bytes(self.helper.aggregate_share(task_id, body))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.helper, name)


def test_a_disagreement_is_cleared_when_the_two_agree(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in (0, 1, 2, 3, 3)])
    w.leader.helper = _MismatchOnce(w.helper)
    with pytest.raises(AggregatorError):
        w.collect()
    assert w.leader.status()["tasks"][0]["disagreements"][0]["window"] == T0
    assert list(w.collect().sums) == [1, 1, 1, 2]
    assert w.leader.status()["tasks"][0]["disagreements"] == []


def test_a_small_window_that_agrees_is_only_too_small(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=10)
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in (0, 1)])
    with pytest.raises(AggregatorError) as refused:
        w.collect()
    assert refused.value.code == "batch_too_small" and "fewer than the task's minimum" in str(refused.value)
    assert all(side.status()["tasks"][0]["disagreements"] == [] for side in (w.leader, w.helper))


def test_the_page_shows_a_disagreement_on_both_sides(tmp_path: Path) -> None:
    from ldp.aggregators.dashboard import render

    w = world(tmp_path, params={"length": 4}, min_batch_size=5)
    w.leader.upload_many(w.task.task_id, [w.report(v % 4) for v in range(8)])
    assert "disagree" not in render(w.leader.status())
    w.leader.helper = _RefusesInItsAnswers(w.helper)
    with pytest.raises(AggregatorError):
        w.collect()
    for side, mine in ((w.leader, 0), (w.helper, 8)):
        page = render(side.status())
        assert "The two aggregators disagree" in page and f"this side counted {mine} reports" in page, side.role
