"""A Poplar1 window pruned after its last level (issue 89, item 2; ``ldp.aggregators.poplar1_prune``): the leader's
stored reports and its finished jobs' plans, the helper's finished jobs' first rounds deleted; the parameters,
finished jobs and releases kept, so that every level asked again gets the same answer, before and after a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from poplar1_world import (
    BITS,
    VALUES,
    bodies,
    collect,
    counts,
    expected,
    held,
    param,
    poplar1_world,
)
from two_aggregators import T0, WINDOW

from ldp.aggregators.task import Noise
from ldp.errors import AggregatorError

SHARES = ("leader_share", "helper_share", "report_count", "checksum", "refused")


def _same(a: dict, b: dict) -> bool:
    return all(a[k] == b[k] for k in SHARES)


def test_the_last_level_prunes_the_window_and_every_level_is_answered_again(tmp_path: Path) -> None:
    """Without the prune the chunks, plans and first rounds stay (the store assertions fail); a prune deleting a
    finished job, a parameter or a release makes a level asked again refused, recounted (another count) or noised
    afresh (other shares); a helper recording a stale leader's late job at a released level leaves a first round
    that is never pruned."""
    w = poplar1_world(tmp_path, noise=Noise("laplace", 2.0), seed=11)
    w.leader.upload_many(w.task.task_id, bodies(w))
    first = collect(w, 0)
    before = held(w.leader, w), held(w.helper, w)
    assert before[0]["chunk"] and len(before[0]["plan"]) == 2 and len(before[1]["init"]) == 2  # not final yet
    last = collect(w, BITS - 1)
    lead, helper = held(w.leader, w), held(w.helper, w)
    assert lead["chunk"] == lead["plan"] == helper["init"] == []
    assert len(lead["job"]) == len(helper["job"]) == 4 and len(lead["release"]) == len(helper["release"]) == 2
    assert w.leader.pending(w.task.task_id) == []
    for _ in range(2):  # asked again, then again after both restart: the recorded releases
        assert _same(collect(w, 0), first) and _same(collect(w, BITS - 1), last)
        w.restart_helper(noise_source=None)
        w.restart_leader()
    assert w.leader.status()["tasks"][0]["levels"][1]["valid"] == len(VALUES)
    from ldp.prio.poplar1 import agg_param

    with pytest.raises(AggregatorError) as other:  # the level's parameter kept: another one is refused
        w.leader.collect(w.task.task_id, T0, agg_param(BITS - 1, [1, 2]).to_bytes())
    assert other.value.code == "batch_queried_too_many_times"
    late = w.leader.upload_many(w.task.task_id, bodies(w, [1], time=T0 + 9))
    assert late[0] is not None and late[0].code == "batch_collected"
    assert _stale_job(w, bodies(w, [2])[0]) == "batch_collected" and held(w.helper, w)["init"] == []


def _stale_job(w: Any, body: bytes) -> str | None:
    """A stale leader's job of one report at the last level, sent to the helper: the report's refusal code."""
    from ldp import prio
    from ldp.aggregators.messages import AggregationJobInitReq, AggregationJobResp, PrepareInit, ReportShare, initialize

    r = prio.DapReport.from_bytes(body)
    init = PrepareInit(ReportShare(r.report_id, r.time, r.public_share, r.helper_ciphertext), initialize(b"\0" * 8))
    req = AggregationJobInitReq((init,), param(BITS - 1)).to_bytes()
    (resp,) = AggregationJobResp.from_bytes(w.helper.aggregation_job(w.task.task_id, "S" * 22, req)).prepare_resps
    error = resp.error
    return None if error is None else str(error.code)


def test_a_window_is_pruned_after_the_tasks_levels_and_not_before(tmp_path: Path) -> None:
    """``levels`` 1 of 2 bits: level 0 is the window's last (a prune waiting for level ``bits − 1`` keeps the
    reports); with ``levels`` 2 a window collected at level 0 only keeps them, and its next level counts exactly."""
    w = poplar1_world(tmp_path / "one", levels=1)
    w.leader.upload_many(w.task.task_id, bodies(w))
    collect(w, 0)
    assert held(w.leader, w)["chunk"] == held(w.helper, w)["init"] == []
    w2 = poplar1_world(tmp_path / "two")
    w2.leader.upload_many(w2.task.task_id, bodies(w2))
    collect(w2, 0)
    assert held(w2.leader, w2)["chunk"] and held(w2.helper, w2)["init"]
    assert counts(w2, 1, collect(w2, 1)) == expected(1)


def test_a_chunk_shared_with_an_open_window_stays_until_that_window_is_pruned(tmp_path: Path) -> None:
    """One chunk holds both windows' reports: deleting it with the first window would lose the second's reports
    (its counts then fall to zero)."""
    w = poplar1_world(tmp_path)
    later = [2, 2, 3]
    w.now = T0 + WINDOW + 5
    assert w.leader.upload_many(w.task.task_id, bodies(w) + bodies(w, later, time=T0 + WINDOW + 1)) == [None] * 10
    (chunk,) = held(w.leader, w)["chunk"]
    collect(w, 0)
    collect(w, 1)
    assert held(w.leader, w)["chunk"] == [chunk] and held(w.leader, w)["plan"] == []
    w.restart_leader()  # the chunk read back: the pruned window's reports dropped again, the other's kept
    assert len(w.leader.pending(w.task.task_id)) == len(later)
    assert [counts(w, lv, collect(w, lv, T0 + WINDOW)) for lv in (0, 1)] == [expected(lv, later) for lv in (0, 1)]
    assert held(w.leader, w)["chunk"] == []


def test_with_retention_the_window_is_pruned_when_an_aggregator_starts_after_it(tmp_path: Path) -> None:
    """``job_retention``: nothing deleted at the release; the start of each aggregator past it prunes (without
    the prune at start the records stay)."""
    w = poplar1_world(tmp_path)
    w.restart_helper(job_retention=600)
    w.restart_leader(job_retention=600)
    w.leader.upload_many(w.task.task_id, bodies(w))
    docs = [collect(w, lv) for lv in (0, 1)]
    assert held(w.leader, w)["plan"] and held(w.helper, w)["init"]
    w.now += 601
    w.restart_helper(job_retention=600)
    w.restart_leader(job_retention=600)
    assert held(w.leader, w)["chunk"] == held(w.leader, w)["plan"] == held(w.helper, w)["init"] == []
    assert all(_same(collect(w, lv), docs[lv]) for lv in (0, 1))
