"""The helper as another implementation's leader drives it (issue 85, item 2): DAP-09's aggregation jobs, which name
no batch, so one job may hold reports of several windows; each window's part recorded once; a repeated job answered
from its records; a batch interval that is not one window refused ``batch_invalid``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from two_aggregators import T0, WINDOW, prio, world

from ldp.aggregators.codec import Interval
from ldp.aggregators.helper import part_id
from ldp.aggregators.messages import (
    AggregateShare,
    AggregateShareReq,
    AggregationJobInitReq,
    AggregationJobResp,
    PrepareInit,
    ReportShare,
    initialize,
    xor_checksum,
)
from ldp.errors import AggregatorError

JOB = "foreign-leader-job-0001"


def foreign_job(w: Any, reports: list[bytes]) -> tuple[AggregationJobInitReq, dict[bytes, Any]]:
    """A job as any DAP-09 leader makes it: each leader share opened, its preparation started (the binding's
    one-report operations), the prep share sent in an ``initialize`` message."""
    p = prio()
    vdaf = w.task.prio3()
    inits, states = [], {}
    for body in reports:
        r = p.DapReport.from_bytes(body)
        share = p.open_input_share(w.leader_key, role="leader", task_id=w.task.task_id, report_id=r.report_id,
                                   time=r.time, public_share=r.public_share, ciphertext=r.leader_ciphertext)
        states[r.report_id], prep_share = vdaf.verify_init(w.verify_key, 0, r.report_id, r.public_share, share)
        inits.append(PrepareInit(ReportShare(r.report_id, r.time, r.public_share, r.helper_ciphertext),
                                 initialize(prep_share)))
    return AggregationJobInitReq(tuple(inits)), states


def test_a_job_of_two_windows_is_prepared_in_two_parts_each_recorded_once(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    later = T0 + WINDOW
    w.now = later + 10
    reports = [w.report(1), w.report(2, time=later + 5), w.report(1), w.report(3, time=later + 5)]
    job, states = foreign_job(w, reports)
    answer = w.helper.aggregation_job(w.task.task_id, JOB, job.to_bytes())
    resps = AggregationJobResp.from_bytes(answer).prepare_resps
    assert [r.report_id for r in resps] == [i.report_share.report_id for i in job.prepare_inits]  # the job's order
    vdaf = w.task.prio3()
    outputs = {r.report_id: vdaf.verify_next(states[r.report_id], r.prep_msg) for r in resps}
    records = w.helper.records[w.task.task_id]
    assert {part_id(JOB, T0), part_id(JOB, later)} <= set(records.jobs)
    assert (records.window(T0).count, records.window(later).count) == (2, 2)
    # the same request again (a retry): the same answer from the records, nothing counted twice
    assert w.helper.aggregation_job(w.task.task_id, JOB, job.to_bytes()) == answer
    assert (records.window(T0).count, records.window(later).count) == (2, 2)
    w.restart_helper()
    assert w.helper.aggregation_job(w.task.task_id, JOB, job.to_bytes()) == answer  # after a restart too
    with pytest.raises(AggregatorError) as exc:  # the same ID, another request
        w.helper.aggregation_job(w.task.task_id, JOB, foreign_job(w, reports[:1])[0].to_bytes())
    assert exc.value.code == "job_mismatch"
    # the helper's share of each window opens and adds up with the leader's to the truth
    for window, ids in ((T0, [0, 2]), (later, [1, 3])):
        mine = vdaf.aggregate_init()
        for i in ids:
            mine.accumulate(outputs[job.prepare_inits[i].report_share.report_id])
        rids = [job.prepare_inits[i].report_share.report_id for i in ids]
        helper = records.window(window)
        assert helper.checksum == xor_checksum(rids)
        agg = vdaf.aggregate_share_from_field_elements(helper.share)
        truth = [0, 0, 0, 0]
        for i in ids:
            truth[[1, 2, 1, 3][i]] += 1
        assert vdaf.unshard([mine, agg], len(ids)) == truth


def test_abandoning_a_job_of_two_windows_takes_out_both_parts(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    later = T0 + WINDOW
    w.now = later + 10
    job, _ = foreign_job(w, [w.report(1), w.report(2, time=later + 5)])
    w.helper.aggregation_job(w.task.task_id, JOB, job.to_bytes())
    w.helper.abandon_job(w.task.task_id, JOB)
    records = w.helper.records[w.task.task_id]
    assert (records.window(T0).count, records.window(later).count) == (0, 0)
    with pytest.raises(AggregatorError) as exc:
        w.helper.aggregation_job(w.task.task_id, JOB, job.to_bytes())
    assert exc.value.code == "job_abandoned"


@pytest.mark.parametrize(("start", "duration"), [(T0, WINDOW // 2), (T0 + 60, WINDOW), (T0, 2 * WINDOW)])
def test_a_batch_interval_other_than_one_window_is_refused(tmp_path: Path, start: int, duration: int) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    w.now = T0 + 3 * WINDOW
    req = AggregateShareReq(Interval(start, duration), 0, bytes(32)).to_bytes()
    with pytest.raises(AggregatorError) as exc:
        w.helper.aggregate_share(w.task.task_id, req)
    assert (exc.value.code, exc.value.status) == ("batch_invalid", 400)


def test_an_aggregation_parameter_is_refused(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    job, _ = foreign_job(w, [w.report(1)])
    with pytest.raises(AggregatorError, match="no aggregation parameter"):
        w.helper.aggregation_job(w.task.task_id, JOB, AggregationJobInitReq(job.prepare_inits, b"x").to_bytes())
    req = AggregateShareReq(Interval(T0, WINDOW), 0, bytes(32), b"x").to_bytes()
    with pytest.raises(AggregatorError, match="no aggregation parameter"):
        w.helper.aggregate_share(w.task.task_id, req)


def test_the_helpers_share_is_dap_09s_aggregate_share(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    job, _ = foreign_job(w, [w.report(1)])
    w.helper.aggregation_job(w.task.task_id, JOB, job.to_bytes())
    w.now = T0 + WINDOW + 1
    agg = w.helper.records[w.task.task_id].window(T0)
    out = w.helper.aggregate_share(w.task.task_id, AggregateShareReq(Interval(T0, WINDOW), 1, agg.checksum).to_bytes())
    assert AggregateShare.from_bytes(out).to_bytes() == out


@pytest.mark.parametrize(("vdaf", "params", "values", "truth"), [
    ("Prio3Count", {}, [1, 0, 1, 1], [3]),
    ("Prio3Sum", {"max_measurement": 255}, [200, 17, 255], [472]),
    ("Prio3SumVec", {"length": 3, "max_measurement": 3}, [[1, 2, 3], [3, 0, 1]], [4, 2, 4]),
    ("Prio3Histogram", {"length": 5}, [0, 4, 4, 2], [1, 0, 1, 0, 2]),
])
def test_a_vdaf_08_task_counts_exactly_end_to_end(tmp_path: Path, vdaf: str, params: dict[str, int],
                                                  values: list[Any], truth: list[int]) -> None:
    """Issue 85, item 1: a task of VDAF-08 (what DAP-09 names), its reports made by prio 0.16.8 through the binding,
    prepared by both aggregators over DAP-09's messages and collected exactly (no noise)."""
    w = world(tmp_path, vdaf=vdaf, params=params, min_batch_size=1, draft=8)
    assert w.task.prio3().draft == 8 and len(w.verify_key) == 16
    for value in values:
        w.leader.upload(w.task.task_id, w.report(value))
    assert list(w.collect().sums) == truth


@pytest.mark.parametrize(("vdaf", "params", "value"), [("Prio3Histogram", {"length": 4}, 2), ("Prio3Count", {}, 1)])
def test_a_report_of_the_other_vdaf_draft_is_refused_and_never_counted(tmp_path: Path, vdaf: str,
                                                                       params: dict[str, int], value: Any) -> None:
    """A hostile or outdated device sends a draft-18 report to a VDAF-08 task: refused at the door where its shares'
    lengths differ, else (Prio3Count's shares have the same length in both drafts) refused in its job; counted by
    neither aggregator."""
    p = prio()
    w = world(tmp_path, vdaf=vdaf, params=params, min_batch_size=1, draft=8)
    other = getattr(p, vdaf)(ctx=w.task.task_id, **params)  # draft 18
    wrong = p.seal_report(other, value, task_id=w.task.task_id, time=T0 + 5, leader=w.leader_key.config,
                          helper=w.helper_key.config)
    try:
        w.leader.upload(w.task.task_id, wrong)
        at_door = False
    except AggregatorError as exc:
        assert exc.code == "invalid_message"
        at_door = True
    w.leader.upload(w.task.task_id, w.report(value))
    c = w.collect()
    assert c.report_count == 1 and (at_door or sum(c.refused.values()) == 1)
    assert at_door == (vdaf != "Prio3Count")
