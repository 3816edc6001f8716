"""Replicas of the leader of a Poplar1 task (:mod:`ldp.aggregators.poplar1_scale_out`; docs/scale-out.md): in-process
leader replicas over one store, a level's jobs planned once by the planner and claimed by any replica, a job run
twice counted once, and a replica killed mid-job leaving its job to another after its lease."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from two_aggregators import T0, WINDOW, world

from ldp.aggregators import crashpoints
from ldp.aggregators.heavy_hitters import collect_heavy_hitters
from ldp.errors import AggregatorError

BITS = 8
LEASE = 30
# 50 devices: 0x05 held by 20, 0xc8 by 12, 0x4d by 3 (below T = 10), 15 singletons; 7 jobs of at most 8 a level
VALUES = [5] * 20 + [200] * 12 + [77] * 3 + list(range(100, 115))
FOUND = {5: 20, 200: 12}
JOB_SIZE, JOBS = 8, 7


def _world(tmp_path: Path) -> Any:
    return world(tmp_path, vdaf="Poplar1", params={"bits": BITS, "max_candidates": 16}, min_batch_size=5,
                 job_size=JOB_SIZE)


def _replicas(w: Any, *names: str) -> list[Any]:
    """Leader replicas over the world's leader store (each its own store object), the reports uploaded to each
    door in turn, the clock past the window."""
    from ldp.aggregators.leader import Leader
    from ldp.prio.poplar1 import bits_of

    out = [Leader([w.task], w.leader_store(), w.leader_key, {w.task.task_id: w.verify_key}, w.helper,
                  clock=lambda: w.now, replica=name, job_lease=LEASE, **w.leader_options) for name in names]
    for i, door in enumerate(out):
        bodies = [w.report(bits_of(v, BITS)) for v in VALUES[i::len(out)]]
        assert door.upload_many(w.task.task_id, bodies) == [None] * len(bodies)
    w.now = T0 + WINDOW + 1
    return out


def _records(w: Any, kind: str, folder: str = "jobs") -> list[dict[str, Any]]:
    """The leader's Poplar1 job records of one kind (``""``: finished; ``plan``; ``attempt``), or every record of
    another folder (``planned``: each level's list of jobs)."""
    import json

    from ldp.aggregators.records import job_key_parts

    store = w.leader_store()
    keys = [k for k in store.list("") if f"/poplar1/{folder}/" in k
            and (folder != "jobs" or job_key_parts(k)[1] == kind)]
    return [json.loads(store.get(k)) for k in keys]


def _exactly_once(w: Any) -> Counter[str]:
    """Every level's reports in exactly one finished job, each job of a level's list finished once (the plans are
    pruned after the last level: the lists stay); the replicas that recorded the finished jobs, counted."""
    listed, done = _records(w, "", "planned"), _records(w, "")
    assert sorted(j for rec in listed for j in rec["jobs"]) == sorted(d["job"] for d in done)
    for level in {d["level"] for d in done}:
        rids = [r for d in done if d["level"] == level for r in [*d["accepted"], *d["rejected"]]]
        assert len(rids) == len(set(rids)) == len(VALUES)
    return Counter(d["replica"] for d in done)


def test_a_walk_over_replicas_spreads_the_jobs_and_finds_exactly_the_strings(tmp_path: Path,
                                                                               monkeypatch: Any) -> None:
    """Three doors; a collects (it plans: it holds the planner lease) and, while its first job of each level is with
    the helper, b's background pass claims every other job of the level. Without the claims b would run a's job
    too (two attempts); with two planners a report would be in two jobs; without the finished check a would release
    before b's jobs are in (a count short)."""
    w = _world(tmp_path)
    a, b, c = _replicas(w, "a", "b", "c")
    busy: list[bool] = []

    def b_meanwhile(point: str) -> None:
        if point == "leader_job_answered" and not busy:
            busy.append(True)
            try:
                b.run_aggregation_jobs()
            finally:
                busy.clear()

    monkeypatch.setattr(crashpoints, "_fault", b_meanwhile)
    found = collect_heavy_hitters(w.task, w.collector_key, lambda win, p: a.collect(w.task.task_id, win, p), T0,
                                  threshold=10)
    assert {int(s["bits"], 16): s["count"] for s in found["strings"]} == FOUND
    assert found["report_count"] == len(VALUES)
    ran = _exactly_once(w)
    assert ran["a"] == BITS and ran["b"] >= BITS and set(ran) == {"a", "b"}  # a: its first job of each level
    assert all(rec["attempt"] == 1 for rec in _records(w, "attempt"))  # each job claimed once
    assert c.run_aggregation_jobs() == {}  # every level released: nothing left to drive
    for r in (a, b, c):
        r.stop()


def test_replicas_running_at_once_finish_every_job_once(tmp_path: Path) -> None:
    """Two replicas' passes in two threads over a planned level: each job claimed by one (its attempt-1 created
    once), the level exact."""
    from ldp.aggregators.heavy_hitters import open_level
    from ldp.prio.poplar1 import agg_param

    w = _world(tmp_path)
    a, b = _replicas(w, "a", "b")
    param = agg_param(0, [0, 1])
    assert a.may_plan()  # a holds the planner lease: b admits level 0 but does not plan it
    with pytest.raises(AggregatorError, match="not planned yet"):
        b.collect(w.task.task_id, T0, param.to_bytes())
    errors: list[BaseException] = []

    def drive(r: Any) -> None:
        try:
            r.run_aggregation_jobs()
        except BaseException as exc:  # noqa: BLE001 (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=drive, args=(r,)) for r in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    doc = b.collect(w.task.task_id, T0, param.to_bytes())
    assert open_level(w.task, w.collector_key, param, doc) == [38, 12]
    _exactly_once(w)
    assert len(_records(w, "attempt")) == len(_records(w, "plan")) == JOBS
    a.stop()
    b.stop()


def test_a_job_run_by_two_replicas_is_counted_once(tmp_path: Path, monkeypatch: Any) -> None:
    """a pauses past its lease with its first job answered: b claims the job's next attempt and runs it (the helper
    answers both requests from its records), records it, then a finds b's record. A second record or a second
    count makes the level's count (or the helper's agreement) fail."""
    from ldp.aggregators.heavy_hitters import open_level
    from ldp.prio.poplar1 import agg_param

    w = _world(tmp_path)
    a, b = _replicas(w, "a", "b")
    paused: list[bool] = []

    def pause(point: str) -> None:
        if point == "leader_job_answered" and not paused:
            paused.append(True)
            w.now += LEASE + 1
            assert b.run_aggregation_jobs()["jobs"] == JOBS  # a's job too: its lease ran out

    monkeypatch.setattr(crashpoints, "_fault", pause)
    param = agg_param(0, [0, 1])
    doc = a.collect(w.task.task_id, T0, param.to_bytes())
    assert open_level(w.task, w.collector_key, param, doc) == [38, 12] and doc["report_count"] == len(VALUES)
    ran = _exactly_once(w)
    assert ran == {"b": JOBS}  # a's record was not written: b's stood
    assert sorted(r["attempt"] for r in _records(w, "attempt")) == [1] * JOBS + [2]
    helper_done = [k for k in w.helper_store().list("") if "/poplar1/jobs/" in k and k.count(".") == 1]
    assert len(helper_done) == JOBS
    a.stop()
    b.stop()


def test_a_replica_killed_mid_job_leaves_it_to_another_after_its_lease(tmp_path: Path, monkeypatch: Any) -> None:
    """a dies with its first job answered and unrecorded: b's collection is ``jobs_in_progress`` (a DAP-09 poll's
    202) while a's claim holds, then b runs the job and the level is exact. Without the claim b would run the job at
    once; without the finished check it would release a level a job short (the helper's count differs)."""
    from ldp.aggregators import collection_jobs
    from ldp.aggregators.codec import Interval
    from ldp.aggregators.collection_messages import CollectionReq
    from ldp.aggregators.heavy_hitters import open_level
    from ldp.prio.poplar1 import agg_param

    w = _world(tmp_path)
    a, b = _replicas(w, "a", "b")

    def die(point: str) -> None:
        if point == "leader_job_answered":
            monkeypatch.setattr(crashpoints, "_fault", None)
            raise RuntimeError("killed")

    monkeypatch.setattr(crashpoints, "_fault", die)
    first = agg_param(0, [0, 1]).to_bytes()
    with pytest.raises(RuntimeError, match="killed"):
        a.collect(w.task.task_id, T0, first)
    a.stop()  # dead: its planner lease goes too
    body = CollectionReq(Interval(T0, WINDOW), first).to_bytes()
    collection_jobs.create_job(b, w.task.task_id, "A" * 22, body)
    assert collection_jobs.poll_job(b, w.task.task_id, "A" * 22) == (None, 5)  # 202: a's claim holds its job
    with pytest.raises(AggregatorError) as held:
        b.collect(w.task.task_id, T0, first)
    assert held.value.code == "jobs_in_progress" and held.value.status == 503
    w.now += LEASE + 1
    out, _ = collection_jobs.poll_job(b, w.task.task_id, "A" * 22)
    assert out is not None
    doc = b.collect(w.task.task_id, T0, first)
    assert open_level(w.task, w.collector_key, agg_param(0, [0, 1]), doc) == [38, 12]
    assert _exactly_once(w) == {"b": JOBS}  # a's job too, after its lease
    b.stop()
