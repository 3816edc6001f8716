"""Writes that land late, after another process of the same role took over (the stale-write cases of the
shuffler's tests, for the aggregators): each record is created once, so a stale copy is refused by the store and
the record already there stands; a chunk a stale leader stores late is read by the next leader and counted once."""

from __future__ import annotations

import random
from pathlib import Path

from two_aggregators import world

from ldp.aggregators.messages import AggregationJobInitReq, PrepareInit, ReportShare, initialize


def test_a_stale_helper_finishing_a_job_late_changes_nothing(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    stale = w.helper
    fresh = w.restart_helper()  # the taker, over the same store
    rng = random.Random(3)
    measurements = [rng.randrange(4) for _ in range(12)]
    reports = [w.report(m) for m in measurements]
    assert set(w.leader.upload_many(w.task.task_id, reports)) == {None}
    w.leader.run_aggregation_jobs()  # through the fresh helper
    # the stale helper receives the same job again (a retry that reached it late) and answers from the record
    records = fresh.records[w.task.task_id]
    job_key = w.helper.store.list(records.prefix + "jobs/")[0]
    rec = records.read(job_key)
    assert stale.records[w.task.task_id].job(rec["job"]) is not None
    counted = [r for key in fresh.store.list(records.prefix + "jobs/") for r in records.read(key)["accepted"]]
    assert len(counted) == len(set(counted)) == 12
    assert list(w.collect().sums) == [measurements.count(v) for v in range(4)]


def test_a_stale_helper_job_with_replayed_reports_is_refused_there(tmp_path: Path) -> None:
    from ldp import prio

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    stale = w.helper
    body = w.report(2)
    w.leader.upload(w.task.task_id, body)
    w.leader.run_aggregation_jobs()
    w.restart_helper()
    rep = prio.DapReport.from_bytes(body)
    job = AggregationJobInitReq((PrepareInit(ReportShare(rep.report_id, rep.time, rep.public_share,
                                                     rep.helper_ciphertext), initialize(b"\x00" * 8)),))
    from ldp.aggregators.messages import AggregationJobResp

    late = AggregationJobResp.from_bytes(stale.aggregation_job(w.task.task_id, "late-job-000000001", job.to_bytes()))
    assert late.prepare_resps[0].error is not None and late.prepare_resps[0].error.code == "report_replayed"
    assert list(w.collect().sums) == [0, 0, 1, 0]


def test_a_chunk_a_stale_leader_stores_late_is_counted_once(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    stale = w.leader
    first = [w.report(1) for _ in range(3)]
    assert set(stale.upload_many(w.task.task_id, first)) == {None}
    w.restart_leader()  # the taker reads the chunk
    late = [w.report(3) for _ in range(2)]
    retried = w.report(2)  # a device's retry: the new leader takes it, the stale one stores its first try late
    assert w.leader.upload_many(w.task.task_id, [retried]) == [None]
    w.leader.run_aggregation_jobs()
    assert set(stale.upload_many(w.task.task_id, late + [retried])) == {None}  # lands after the takeover
    w.restart_leader()  # the next leader finds the late chunk: its new reports pending, the prepared one not
    assert list(w.collect().sums) == [0, 3, 1, 2]
