"""A Poplar1 level's jobs get Prio3's retry treatment (:mod:`ldp.aggregators.poplar1_scale_out`, using
:func:`ldp.aggregators.jobs.retry_gate`): each attempt recorded, a failed job tried again on the schedule, set aside
after ``max_job_attempts`` (its level's collection answers ``jobs_set_aside``, 409) until put back, and a job the
helper refuses whole split until the report at fault is alone; alone and with two leader replicas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from poplar1_world import VALUES, bodies, collect, counts, expected, param, poplar1_world
from two_aggregators import T0, WINDOW

from ldp.aggregators.jobs import RETRY_BASE
from ldp.errors import AggregatorError

LEASE = 30
ATTEMPTS = 3


class Failing:
    """The helper as the leader reaches it: the first round of any job holding report ``bad`` fails ``times`` times
    (every time: ``None``) with ``code`` (``helper_unavailable``: a failure to try again; a 4xx: a whole refusal);
    ``sent`` counts those first rounds."""

    def __init__(self, helper: Any, bad: bytes, times: int | None, code: str = "helper_unavailable",
                 status: int = 502) -> None:
        self.helper, self.bad, self.times, self.code, self.status, self.sent = helper, bad, times, code, status, 0

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        if self.bad in body:
            self.sent += 1
            if self.times is None or self.times > 0:
                self.times = None if self.times is None else self.times - 1
                raise AggregatorError("the helper failed this job", self.code, self.status)
        return bytes(self.helper.aggregation_job(task_id, job_id, body))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.helper, name)


def _alone(tmp_path: Path, times: int | None, **peer: Any) -> tuple[Any, Failing, list[bytes]]:
    """A leader alone (``max_job_attempts`` 3), the reports uploaded, its helper failing the first report's job."""
    w = poplar1_world(tmp_path)
    w.restart_leader(max_job_attempts=ATTEMPTS)
    reports = bodies(w)
    assert w.leader.upload_many(w.task.task_id, reports) == [None] * len(reports)
    w.leader.helper = peer_ = Failing(w.helper, reports[0][:16], times, **peer)
    return w, peer_, [r[:16] for r in reports]


def _replicas(tmp_path: Path, times: int | None) -> tuple[Any, Any, Any, Failing, list[bytes]]:
    """Two leader replicas a and b over one store (a plans: it asks first), each reaching the helper through one
    failing peer, the reports uploaded to a."""
    from ldp.aggregators.leader import Leader

    w = poplar1_world(tmp_path)
    reports = bodies(w)
    peer = Failing(w.helper, reports[0][:16], times)
    a, b = (Leader([w.task], w.leader_store(), w.leader_key, {w.task.task_id: w.verify_key}, peer,
                   clock=lambda: w.now, replica=name, job_lease=LEASE, max_job_attempts=ATTEMPTS,
                   **w.leader_options) for name in ("a", "b"))
    assert a.upload_many(w.task.task_id, reports) == [None] * len(reports)
    assert a.may_plan()
    w.now = T0 + WINDOW + 1
    return w, a, b, peer, [r[:16] for r in reports]


def _once(leader: Any, w: Any, rids: list[bytes], level: int) -> None:
    """Every report in exactly one finished job of ``level`` at the leader (a split job's record holds none)."""
    done = leader.task_state(w.task.task_id).poplar1.finished[(T0, level)].values()
    ids = [r for rec in done for r in [*rec["accepted"], *rec["rejected"]]]
    assert sorted(ids) == sorted(r.hex() for r in rids)


def _pass(leader: Any) -> dict[str, int]:
    """A background pass's counts (those not zero)."""
    return {k: v for k, v in leader.run_aggregation_jobs().items() if v}


def _ask(leader: Any, w: Any, level: int) -> AggregatorError:
    with pytest.raises(AggregatorError) as refused:
        leader.collect(w.task.task_id, T0, param(level))
    return refused.value


def test_a_job_failing_every_attempt_is_set_aside_then_put_back_alone(tmp_path: Path) -> None:
    """Three collections each send the failing job once (a collection does not wait for the schedule), the fourth
    sets it aside: 409, listed on /status and the page, not sent again. Put back (its attempts counted anew) with the
    helper working, the walk is exact, each report once. Without the gate the job is sent forever (``sent`` grows);
    without the set-aside check the level answers 503; without put_back's attempts reset it is set aside again."""
    from ldp.aggregators.dashboard import render

    w, peer, rids = _alone(tmp_path, None)
    w.now = T0 + WINDOW + 1
    for _ in range(ATTEMPTS):
        assert _ask(w.leader, w, 0).code == "helper_unavailable"
    for _ in range(2):
        refused = _ask(w.leader, w, 0)
        assert (refused.code, refused.status) == ("jobs_set_aside", 409) and "level 0" in str(refused)
    assert peer.sent == ATTEMPTS
    (aside,) = w.leader.status()["tasks"][0]["set_aside"]
    assert aside["attempts"] == ATTEMPTS and aside["window"] == T0 and "level 0: helper_unavailable" in aside["reason"]
    assert f"job {aside['job']}" in render(w.leader.status())
    w.restart_leader(max_job_attempts=ATTEMPTS, helper=peer)  # set aside for good, across restarts
    assert _ask(w.leader, w, 0).code == "jobs_set_aside" and peer.sent == ATTEMPTS
    peer.times = 0
    assert w.leader.put_back(w.task.task_id) == [aside["job"]]
    for level in (0, 1):
        assert counts(w, level, collect(w, level)) == expected(level)
        _once(w.leader, w, rids, level)
    assert peer.sent == ATTEMPTS + 2 and w.leader.status()["tasks"][0]["set_aside"] == []
    assert not [k for k in w.leader_store().list("") if ".attempt-" in k]  # alone: a finished job's attempts deleted


def test_a_transient_failure_is_retried_on_schedule_alone(tmp_path: Path) -> None:
    """The collection fails once; the background pass runs the other job and waits for the failed one until
    ``RETRY_BASE`` s after its attempt, then runs it; the level is exact. Without the schedule the pass sends it at
    once (``sent`` 2 before the time passes)."""
    w, peer, rids = _alone(tmp_path, 1)
    w.now = T0 + WINDOW + 1
    assert _ask(w.leader, w, 0).code == "helper_unavailable"
    assert _pass(w.leader) == {"waiting": 1, "jobs": 1, "prepared": len(VALUES) - 4}
    assert peer.sent == 1
    w.now += int(RETRY_BASE) - 1
    assert _pass(w.leader) == {"waiting": 1}
    w.now += 1
    assert _pass(w.leader) == {"jobs": 1, "prepared": 4}
    assert peer.sent == 2
    assert counts(w, 0, collect(w, 0)) == expected(0)
    _once(w.leader, w, rids, 0)


def test_a_job_the_helper_refuses_whole_is_split_until_the_report_is_alone(tmp_path: Path) -> None:
    """A 4xx for any job holding one report (the helper records nothing): the job halved, then its half, and the
    report alone refused with the helper's code on the leader's side; every other report counted once, both sides
    agreeing (the release checks the helper's count). Without the split the level is set aside, never released."""
    w, peer, rids = _alone(tmp_path, None, code="invalid_message", status=400)
    doc = collect(w, 0)
    assert doc["report_count"] == len(VALUES) - 1 and doc["refused"] == {"invalid_message": 1}
    assert counts(w, 0, doc) == expected(0, VALUES[1:])
    _once(w.leader, w, rids, 0)
    assert peer.sent == 3  # the job of 4, its half of 2, the report alone


def test_a_job_failing_every_attempt_is_set_aside_then_put_back_over_replicas(tmp_path: Path) -> None:
    """a's collection fails the job (attempt 1); while a's lease holds, b does not take it and a's collection is
    503; after it, b's pass tries it (attempt 2), then a's collection (attempt 3); then it is set aside, and the
    level answers 409 at either replica. Put back at a with the helper working, collected at b (which had read the
    job set aside: it reads the put-back at its next refresh): exact, each report once."""
    w, a, b, peer, rids = _replicas(tmp_path, None)
    assert _ask(a, w, 0).code == "helper_unavailable"
    assert _pass(b) == {"held": 1, "jobs": 1, "prepared": len(VALUES) - 4}  # a's attempt holds the failing job
    w.now += LEASE + 1
    with pytest.raises(AggregatorError, match="failed this job"):
        b.run_aggregation_jobs()
    w.now += LEASE + 1
    assert _ask(a, w, 0).code == "helper_unavailable"
    w.now += LEASE + 1
    assert peer.sent == ATTEMPTS
    for r in (a, b):
        refused = _ask(r, w, 0)
        assert (refused.code, refused.status) == ("jobs_set_aside", 409)
    assert peer.sent == ATTEMPTS
    assert [j["attempts"] for j in b.status()["tasks"][0]["set_aside"]] == [ATTEMPTS]
    peer.times = 0
    assert len(a.put_back(w.task.task_id)) == 1
    doc = b.collect(w.task.task_id, T0, param(0))
    assert counts(w, 0, doc) == expected(0)
    _once(b, w, rids, 0)
    a.stop()
    b.stop()


def test_a_transient_failure_is_retried_on_schedule_over_replicas(tmp_path: Path) -> None:
    """a's collection fails the job once; b runs the other job but not a's (held); a's own pass waits for the
    schedule, then runs it; b's collection is exact."""
    w, a, b, peer, rids = _replicas(tmp_path, 1)
    assert _ask(a, w, 0).code == "helper_unavailable"
    assert _pass(b) == {"held": 1, "jobs": 1, "prepared": len(VALUES) - 4}
    w.now += int(RETRY_BASE) - 1
    assert _pass(a) == {"waiting": 1}
    w.now += 1
    assert _pass(a) == {"jobs": 1, "prepared": 4}
    assert peer.sent == 2
    assert counts(w, 0, b.collect(w.task.task_id, T0, param(0))) == expected(0)
    _once(b, w, rids, 0)
    a.stop()
    b.stop()
