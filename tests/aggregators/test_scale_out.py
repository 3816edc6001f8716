"""A leader and a helper over several processes sharing each side's store (issue 86, item 4;
:mod:`ldp.aggregators.scale_out`): doors writing their own chunks, one planner at a time, jobs claimed by their
attempt records, helper replicas reading each other's records, and the whole run under SIGKILL at random
(``simulations/aggregator_replicas.py``): every report counted once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from two_aggregators import T0, prio, world

from ldp.errors import AggregatorError

SIMULATIONS = Path(__file__).resolve().parents[2] / "simulations"


def _replica(w: Any, name: str, **options: Any) -> Any:
    """A leader replica ``name`` of the world's task over the world's leader store (its own store object)."""
    from ldp.aggregators.leader import Leader

    return Leader([w.task], w.leader_store(), w.leader_key, {w.task.task_id: w.verify_key}, w.helper,
                  clock=lambda: w.now, replica=name, **{**(w.leader_options or {}), **options})


def _helper_replica(w: Any) -> Any:
    from ldp.aggregators.helper import Helper

    return Helper([w.task], w.helper_store(), w.helper_key, {w.task.task_id: w.verify_key}, clock=lambda: w.now,
                  replicated=True)


def test_a_report_in_two_doors_chunks_is_counted_once(tmp_path: Path) -> None:
    """Two doors each take a copy of one report (neither can see the other's) and reports of their own; a third
    replica plans and drives: each report is in one job, the chunks are deleted once done, and the collection
    counts each once."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    d1, d2, j1 = (_replica(w, n) for n in ("d1", "d2", "j1"))
    twice = w.report(3)
    assert d1.upload_many(w.task.task_id, [twice, w.report(0), w.report(1)]) == [None] * 3
    assert d2.upload_many(w.task.task_id, [twice, w.report(1)]) == [None, None]
    assert [e and e.code for e in d1.upload_many(w.task.task_id, [twice])] == ["report_replayed"]  # its own
    chunks = [k for k in w.leader_store().list("") if k.endswith(".reports")]
    assert {k.split("/")[-2] for k in chunks} == {"d1", "d2"}  # each door its own folder of chunks
    done = j1.run_aggregation_jobs()
    assert done["prepared"] == 4 and not done.get("refused")
    assert not [k for k in w.leader_store().list("") if k.endswith(".reports")]  # all in finished jobs: deleted
    w.leader = j1
    assert list(w.collect().sums) == [1, 2, 0, 1]
    assert j1.run_aggregation_jobs() == {}


def test_one_replica_plans_at_a_time_and_a_job_is_claimed_once(tmp_path: Path) -> None:
    """While one replica holds the planner lease another plans nothing (it drives the plans there are); a job's
    attempt is claimed by one replica, and the others leave it for ``job_lease`` seconds, then take it over (its
    holder died): the job is finished once."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    j1, j2 = _replica(w, "j1", job_lease=30), _replica(w, "j2", job_lease=30)
    assert j1.may_plan() and not j2.may_plan()
    j2.upload_many(w.task.task_id, [w.report(v) for v in (0, 1, 2)])
    state = j1.task_state(w.task.task_id)
    assert j2.run_aggregation_jobs() == {}  # not the planner: nothing planned, nothing to drive
    from ldp.aggregators import jobs, scale_out

    scale_out.refresh_leader(j1, state)
    (job,) = jobs.plan_jobs([(r, 10) for r in j1.pending(w.task.task_id)], 100, 1 << 20)
    job_id = jobs._plan(j1, state, T0, job)
    assert state.records.attempt(job_id, w.now) == 1  # j1 claims it, then dies before sending it
    assert j2.run_aggregation_jobs() == {"held": 1}
    w.now += 31  # its lease ran out: j2 takes the job over with the next attempt
    assert j2.run_aggregation_jobs() == {"prepared": 3, "refused": 0, "jobs": 1}
    assert j2.task_state(w.task.task_id).records.attempts[job_id][0] == 2
    j1.stop()
    assert j2.may_plan()  # the lease released: the next replica plans
    w.leader = j2
    assert list(w.collect().sums) == [1, 1, 1, 0]


def test_a_replica_collecting_waits_for_jobs_held_elsewhere(tmp_path: Path) -> None:
    """A collection asked of a replica while another holds one of the window's jobs is ``jobs_in_progress`` (503;
    a DAP collection job's poll answers 202), then released once the job is done."""
    from ldp.aggregators import collection_jobs

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    j1, j2 = _replica(w, "j1", job_lease=30), _replica(w, "j2", job_lease=30)
    j1.upload_many(w.task.task_id, [w.report(1), w.report(2)])
    state = j1.task_state(w.task.task_id)
    from ldp.aggregators import jobs, scale_out

    scale_out.refresh_leader(j1, state)
    job_id = jobs._plan(j1, state, T0, j1.pending(w.task.task_id))
    w.now = T0 + 3600 + 1
    state.records.attempt(job_id, w.now)  # j1 holds the job (then dies)
    with pytest.raises(AggregatorError) as held:
        j2.collect(w.task.task_id, T0)
    assert held.value.code == "jobs_in_progress" and held.value.status == 503
    from ldp.aggregators.codec import Interval
    from ldp.aggregators.collection_messages import CollectionReq

    body = CollectionReq(Interval(T0, 3600), b"").to_bytes()
    collection_jobs.create_job(j2, w.task.task_id, "A" * 22, body)
    assert collection_jobs.poll_job(j2, w.task.task_id, "A" * 22)[0] is None  # 202: ask again
    w.now += 31
    out, _ = collection_jobs.poll_job(j2, w.task.task_id, "A" * 22)
    assert out is not None


def test_helper_replicas_see_each_others_jobs_and_refuse_a_report_counted_twice(tmp_path: Path) -> None:
    """A helper replica reads the others' records before a job: a report another replica prepared is a replay. A
    window whose records count one report in two jobs (two replicas racing) is not released."""
    from ldp.aggregators.records import TaskRecords

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    h1, h2 = _helper_replica(w), _helper_replica(w)
    w.restart_leader(helper=h1)
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in (0, 1)])
    assert w.leader.run_aggregation_jobs()["prepared"] == 2
    # h2 serves the next request for the same reports (a leader's bug): they are replays there too
    body = _job_body(w, [w.report(2)])
    state2 = h2.task_state(w.task.task_id)
    h2.aggregation_job(w.task.task_id, "B" * 22, body)
    assert len(state2.records.prepared) == 3
    # two replicas that raced: the same report accepted in two job records
    records = h1.task_state(w.task.task_id).records
    rid = next(iter(records.prepared))
    twin = TaskRecords(w.helper_store(), "helper", w.task, records.modulus, records.length, records.sealer)
    twin.finish_job("C" * 22, T0, [rid], {}, [0] * records.length, response="", request_sha256="")
    w.now = T0 + 3600 + 1
    with pytest.raises(AggregatorError) as refused:
        w.leader.collect(w.task.task_id, T0)
    assert refused.value.code == "batch_mismatch" and "two jobs" in str(refused.value)


def _job_body(w: Any, reports: list[bytes]) -> bytes:
    """An ``AggregationJobInitReq`` for ``reports``, prepared by a throwaway leader replica of the world."""
    from ldp.aggregators import jobs

    leader = _replica(w, "tmp")
    state = leader.task_state(w.task.task_id)
    leader.upload_many(w.task.task_id, reports)
    from ldp.aggregators.scale_out import refresh_leader

    refresh_leader(leader, state)
    opened = jobs.open_job(leader, state, T0, [r[:16] for r in reports])
    leader.stop()
    return opened.body


def test_a_replicas_name_is_checked(tmp_path: Path) -> None:
    from ldp.aggregators.scale_out import check_replica_name, replica_prefix

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    for bad in ("", "A", "-x", "a/b", "x" * 64):
        with pytest.raises(ValueError, match="replica's name"):
            check_replica_name(bad)
        with pytest.raises(ValueError, match="replica's name"):
            _replica(w, bad)
    assert replica_prefix("helper", "h-1") == "aggregators/helper/replicas/h-1/lease/"
    with pytest.raises(ValueError, match="job_lease"):
        _replica(w, "ok", job_lease=0)


@pytest.mark.heavy  # handed out first under xdist (tests/conftest.py)
def test_every_report_counted_once_under_sigkill_at_random() -> None:
    """3 doors, 2 drivers and 2 helper replicas as processes, one of them killed with SIGKILL at random and started
    again, 6 times, while devices upload (some twice) and the jobs run: the collection is exact."""
    prio()
    done = subprocess.run([sys.executable, str(SIMULATIONS / "aggregator_replicas.py"), "--reports", "600",
                           "--kills", "6", "--seed", "86"], capture_output=True, text=True, timeout=600,
                          cwd=SIMULATIONS)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0 and out["exact"], (out, done.stderr[-3000:])
    assert len(out["killed"]) == 6 and out["collected"]["n"] == 600


def test_a_job_put_back_at_one_replica_is_tried_again_at_another(tmp_path: Path) -> None:
    """j1 sets a job aside after its attempts, and j2 reads that (its collection answers ``jobs_set_aside``, 409).
    Put back at j1 (its ``aside`` and ``attempt`` records deleted) and tried once more there (an ``attempt-1`` of the
    same name as the one j2 read before), j2's next refresh has it no longer aside and one attempt counted; once
    j1's lease runs out, j2's collection runs it and is exact. Before, j2 answered 409 until it restarted and
    counted the old attempts against the job."""
    from ldp.aggregators import jobs, scale_out

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    j1, j2 = (_replica(w, n, job_lease=30, max_job_attempts=2) for n in ("j1", "j2"))
    j1.upload_many(w.task.task_id, [w.report(1), w.report(2)])
    s1, s2 = j1.task_state(w.task.task_id), j2.task_state(w.task.task_id)
    scale_out.refresh_leader(j1, s1)
    job_id = jobs._plan(j1, s1, T0, j1.pending(w.task.task_id))
    assert [s1.records.attempt(job_id, w.now) for _ in range(2)] == [1, 2]
    s1.records.set_aside(job_id, T0, "the helper did not answer", w.now)
    w.now = T0 + 3600 + 1
    with pytest.raises(AggregatorError) as aside:
        j2.collect(w.task.task_id, T0)
    assert (aside.value.code, aside.value.status) == ("jobs_set_aside", 409)
    assert s2.records.attempts[job_id][0] == 2
    assert j1.put_back(w.task.task_id) == [job_id]
    assert s1.records.attempt(job_id, w.now) == 1  # tried again at once at j1, which then dies
    scale_out.refresh_leader(j2, s2)
    assert job_id not in s2.records.aside and s2.records.attempts[job_id][0] == 1
    with pytest.raises(AggregatorError) as held:
        j2.collect(w.task.task_id, T0)
    assert held.value.code == "jobs_in_progress"  # j1 holds its attempt for job_lease seconds
    w.now += 31
    w.leader = j2
    assert list(w.collect().sums) == [0, 1, 1, 0]
