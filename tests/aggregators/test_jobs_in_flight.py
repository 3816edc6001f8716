"""Jobs in flight (issue 86, item 2): the leader sends up to ``jobs_in_flight`` jobs of distinct reports at once,
and the helper prepares jobs of distinct reports at once, holding its task's lock only to check and reserve a job's
reports and to record it (:mod:`ldp.aggregators.state`). Each test holds one job inside the helper's batch call (a
gate on the VDAF) and checks what may and may not happen meanwhile: the outcome is always a serial order's."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from two_aggregators import T0, world

from ldp.errors import AggregatorError

WAIT = 60.0
"""Seconds any wait in these tests may take before it fails (never reached unless the code is wrong)."""


class GatedVdaf:
    """The task's VDAF, with ``helper_prepare_batch`` held at a gate for the calls whose reports include one of
    ``held`` (until :attr:`open` is set), and every call counted as it enters."""

    def __init__(self, vdaf: Any, held: set[bytes]) -> None:
        self.vdaf, self.held = vdaf, held
        self.entered = threading.Event()
        self.open = threading.Event()
        self.calls: list[list[bytes]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.vdaf, name)

    def helper_prepare_batch(self, *args: Any) -> Any:
        ids = [r[0] for r in args[-1]]
        self.calls.append(ids)
        if self.held & set(ids):
            self.entered.set()
            assert self.open.wait(WAIT), "the gate was never opened"
        return self.vdaf.helper_prepare_batch(*args)


def _bodies(w: Any, groups: list[list[int]]) -> tuple[list[bytes], list[list[bytes]]]:
    """Reports of the given measurements uploaded to the world's leader, and one job body per group (each job's
    request as the leader makes it: :func:`ldp.aggregators.jobs.open_job`)."""
    from ldp.aggregators import jobs

    reports = [[w.report(v) for v in group] for group in groups]
    flat = [r for group in reports for r in group]
    assert w.leader.upload_many(w.task.task_id, flat) == [None] * len(flat)
    state = w.leader.task_state(w.task.task_id)
    return [jobs.open_job(w.leader, state, T0, [r[:16] for r in group]).body for group in reports], reports


def _in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 (handed to the test)
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def _gate(w: Any, held: list[bytes]) -> GatedVdaf:
    state = w.helper.task_state(w.task.task_id)
    gate = GatedVdaf(state.vdaf, {r[:16] for r in held})
    state.vdaf = gate
    return gate


def test_the_helper_prepares_a_job_of_other_reports_while_one_is_held(tmp_path: Path) -> None:
    """Job A is held inside its batch call: job B, of other reports, is prepared and recorded meanwhile (the lock is
    not held around the batch call); then A finishes. Both count."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    (body_a, body_b), (reports_a, _) = _bodies(w, [[0, 1], [2, 3]])
    gate = _gate(w, reports_a)
    a, out_a = _in_thread(w.helper.aggregation_job, w.task.task_id, "A" * 22, body_a)
    assert gate.entered.wait(WAIT)
    w.helper.aggregation_job(w.task.task_id, "B" * 22, body_b)  # not blocked by A
    records = w.helper.task_state(w.task.task_id).records
    assert "B" * 22 in records.jobs and "A" * 22 not in records.jobs
    gate.open.set()
    a.join(WAIT)
    assert "error" not in out_a and records.window(T0).count == 4


def test_a_job_sharing_a_report_with_a_held_one_waits_and_refuses_it_as_a_replay(tmp_path: Path) -> None:
    """Job C holds a report of job A, which is held in its batch call: C does not reach its own batch call until A
    is recorded, and then refuses that report ``report_replayed`` (a serial order's outcome); the report counts
    once."""
    from ldp.aggregators.messages import AggregationJobResp

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    (body_a, body_c), (reports_a, _) = _bodies(w, [[0, 1], [2]])
    # C: its own report and A's first (a leader's bug, or two replicas racing)
    from ldp.aggregators.messages import AggregationJobInitReq

    a_init = AggregationJobInitReq.from_bytes(body_a).prepare_inits
    c_init = AggregationJobInitReq.from_bytes(body_c).prepare_inits
    body_c = AggregationJobInitReq((*c_init, a_init[0])).to_bytes()
    gate = _gate(w, reports_a)
    a, out_a = _in_thread(w.helper.aggregation_job, w.task.task_id, "A" * 22, body_a)
    assert gate.entered.wait(WAIT)
    c, out_c = _in_thread(w.helper.aggregation_job, w.task.task_id, "C" * 22, body_c)
    c.join(0.2)
    assert c.is_alive() and len(gate.calls) == 1  # C waits, outside any batch call, while A is held
    gate.open.set()
    a.join(WAIT)
    c.join(WAIT)
    assert "error" not in out_a and "error" not in out_c
    resps = AggregationJobResp.from_bytes(out_c["value"]).prepare_resps
    assert [r.error and r.error.code for r in resps] == [None, "report_replayed"]
    assert w.helper.task_state(w.task.task_id).records.window(T0).count == 3


def test_the_same_job_twice_at_once_is_prepared_once_and_answered_alike(tmp_path: Path) -> None:
    """The leader's retry of a job still being prepared (it timed out) waits for the first, then gets its recorded
    answer, byte for byte; the batch call ran once."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    (body,), (reports,) = _bodies(w, [[0, 1, 2]])
    gate = _gate(w, reports)
    first, out1 = _in_thread(w.helper.aggregation_job, w.task.task_id, "A" * 22, body)
    assert gate.entered.wait(WAIT)
    again, out2 = _in_thread(w.helper.aggregation_job, w.task.task_id, "A" * 22, body)
    again.join(0.2)
    assert again.is_alive()
    gate.open.set()
    first.join(WAIT)
    again.join(WAIT)
    assert out1["value"] == out2["value"] and len(gate.calls) == 1
    assert w.helper.task_state(w.task.task_id).records.window(T0).count == 3


def test_a_release_and_an_abandon_wait_for_the_jobs_they_concern(tmp_path: Path) -> None:
    """A release of window W asked while a job of W is held waits for it, and counts it; an abandon of a held job
    waits for it too, then takes its share out."""
    from ldp.aggregators.codec import Interval
    from ldp.aggregators.messages import AggregateShareReq, xor_checksum

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    (body_a, body_b), (reports_a, reports_b) = _bodies(w, [[0, 1], [3]])
    gate = _gate(w, reports_a + reports_b)
    a, _ = _in_thread(w.helper.aggregation_job, w.task.task_id, "A" * 22, body_a)
    assert gate.entered.wait(WAIT)
    abandon, out_abandon = _in_thread(w.helper.abandon_job, w.task.task_id, "A" * 22)
    abandon.join(0.2)
    assert abandon.is_alive()
    gate.open.set()
    a.join(WAIT)
    abandon.join(WAIT)
    records = w.helper.task_state(w.task.task_id).records
    assert out_abandon["value"] is True and records.window(T0).count == 0
    gate.open.clear()
    gate.entered.clear()
    b, _ = _in_thread(w.helper.aggregation_job, w.task.task_id, "B" * 22, body_b)
    assert gate.entered.wait(WAIT)
    w.now = T0 + 3600 + 1
    req = AggregateShareReq(Interval(T0, 3600), 1, xor_checksum([reports_b[0][:16]])).to_bytes()
    share, out_share = _in_thread(w.helper.aggregate_share, w.task.task_id, req)
    share.join(0.2)
    assert share.is_alive()  # released only once B is recorded: it then agrees with the leader's count of 1
    gate.open.set()
    b.join(WAIT)
    share.join(WAIT)
    assert "error" not in out_share, out_share.get("error")


def test_the_leader_sends_jobs_in_flight_at_once_and_counts_every_report(tmp_path: Path) -> None:
    """With ``jobs_in_flight=2`` two jobs are inside the helper's batch call at the same time (a barrier both must
    reach: with one job at a time it breaks); every report is counted once, and the collection is exact."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=5)
    state = w.helper.task_state(w.task.task_id)
    vdaf, barrier = state.vdaf, threading.Barrier(2, timeout=WAIT)
    met: list[bool] = []

    class Meeting:
        def __getattr__(self, name: str) -> Any:
            return getattr(vdaf, name)

        def helper_prepare_batch(self, *args: Any) -> Any:
            if not barrier.broken:
                try:
                    barrier.wait()
                except threading.BrokenBarrierError:
                    pass
                else:
                    met.append(True)
                    barrier.abort()  # met once: the next calls go straight through
            return vdaf.helper_prepare_batch(*args)

    state.vdaf = Meeting()
    w.restart_leader(jobs_in_flight=2)
    values = [i % 4 for i in range(23)]
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in values])
    done = w.leader.run_aggregation_jobs()
    assert done == {"prepared": 23, "refused": 0, "jobs": 5}
    assert met  # two jobs were inside the batch call at once (with one at a time, the barrier times out)
    assert list(w.collect().sums) == [values.count(b) for b in range(4)]


def test_the_first_error_stops_the_run_after_the_jobs_in_flight_finish(tmp_path: Path) -> None:
    """A helper that fails one job (``helper_unavailable``) stops the run: no job is planned after it, the job in
    flight beside it is recorded, and the next run finishes the rest."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=2)
    helper = w.helper
    calls: list[str] = []

    class Failing:
        def __getattr__(self, name: str) -> Any:
            return getattr(helper, name)

        def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
            calls.append(job_id)
            if len(calls) == 2:
                raise AggregatorError("down", "helper_unavailable", 503)
            return helper.aggregation_job(task_id, job_id, body)

    w.restart_leader(helper=Failing(), jobs_in_flight=2)
    values = [0, 1, 2, 3, 0, 1, 2, 3]
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in values])
    with pytest.raises(AggregatorError, match="down"):
        w.leader.run_aggregation_jobs()
    assert len(calls) <= 3  # at most the jobs in flight when it failed and one planned before it was seen
    w.restart_leader(helper=helper)
    w.now = T0 + 3600 + 1
    assert w.leader.run_aggregation_jobs(force=True)["prepared"] + 2 * (len(calls) - 1) == 8
    assert list(w.collect().sums) == [2, 2, 2, 2]


def test_jobs_in_flight_is_checked(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    for bad in (0, 65):
        with pytest.raises(ValueError, match="jobs_in_flight"):
            w.restart_leader(jobs_in_flight=bad)


def test_records_written_from_many_threads_at_once_count_each_job_once(tmp_path: Path) -> None:
    """Jobs finished from 8 threads while another thread keeps reading the records again (a replica's refresh),
    some jobs finished twice (a retry racing its first try): the window's count and checksum are each job's once."""
    from concurrent.futures import ThreadPoolExecutor

    from ldp.aggregators.messages import xor_checksum
    from ldp.aggregators.records import TaskRecords

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    records = w.helper.task_state(w.task.task_id).records
    twin = TaskRecords(w.helper_store(), "helper", w.task, records.modulus, records.length, records.sealer)
    ids = [[bytes([j, i]) * 8 for i in range(5)] for j in range(40)]
    stop = threading.Event()

    def finish(j: int) -> None:
        records.finish_job(f"job{j:02d}" + "A" * 16, T0, ids[j], {}, [1, 0, 0, 0], response="", request_sha256="")

    def refresh() -> None:
        while not stop.is_set():
            records.refresh()

    reader = threading.Thread(target=refresh, daemon=True)
    reader.start()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(finish, [*range(40), *range(0, 40, 3)]))
    stop.set()
    reader.join(WAIT)
    every = [r for job in ids for r in job]
    for recs in (records, twin):
        recs.refresh()
        agg = recs.window(T0)
        assert agg.count == 200 and agg.checksum == xor_checksum(every) and agg.share == [40, 0, 0, 0]
