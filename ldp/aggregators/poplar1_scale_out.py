"""Replicas of the leader of a Poplar1 task (``docs/scale-out.md``, *Two aggregators over many processes*;
``docs/two-aggregators.md`` §17): a level's jobs spread over the leader's replicas sharing its store.

Alone, a leader runs a level's jobs one after another inside the collection that asks for it
(:func:`ldp.aggregators.poplar1_leader.collect_level`). As one replica of several (``--replica NAME``), the work is
the scaled-out Prio3 jobs' (:mod:`ldp.aggregators.scale_out`), with the same records and leases:

1. **Admitting** a level is the collection's, at any replica: its parameter recorded once
   (:meth:`~ldp.aggregators.poplar1_records.LevelRecords.admit`), after every record the others wrote is read
   (:func:`refresh_levels`).
2. **Planning** is the replica's that holds the planner lease (the one Prio3's planning takes:
   :class:`~ldp.aggregators.scale_out.Planner`): the admitting replica if it holds it, else the holder at its next
   background pass. It reads every door's chunks and records each job's plan, then the level's list of jobs,
   ``planned/w<window>-l<level>.json``, created once (:func:`~ldp.aggregators.poplar1_jobs.plan_level`: a
   planner stopped midway is finished by the next; one that lost the lease writes nothing more).
3. **Driving**: every replica whose background loop runs (``aggregate_every`` > 0:
   :meth:`~ldp.aggregators.leader.Leader.run_aggregation_jobs`), and the replica collecting, claims each planned job
   of an admitted level not finished by creating its ``attempt-<n>`` record in ``poplar1/jobs/``
   (:func:`~ldp.aggregators.scale_out.claim`, held ``job_lease`` seconds, as Prio3's) and runs it.
4. **Releasing**: a collection is answered once the level's list is recorded and every job in it is finished;
   before, ``jobs_in_progress`` (503; a DAP-09 collection job's poll answers 202 with ``Retry-After``).

**Exactly once.** A job's plan is fixed before the helper is asked, and its requests follow from the plan
(verification is deterministic): two replicas running one job (the first paused past its lease) send the same two
requests, the helper answers the repeated ones from its records, and the leader's finished record is created once
(the second finds the first's). Its share enters the level exactly when that record exists.

**Failing jobs** are treated as Prio3's (:mod:`ldp.aggregators.jobs`), by a leader alone too (its collections and
its background pass go through :func:`run_levels`, without leases): each attempt recorded before it is sent, a failed
job tried again on Prio3's schedule and set aside after ``max_job_attempts`` with Prio3's record
(:func:`~ldp.aggregators.jobs.retry_gate`; its level's collection then answers ``jobs_set_aside``, 409, until
:meth:`~ldp.aggregators.leader.Leader.put_back`), and a job whose first round the helper refused whole split
(:func:`_split`). No abandon: after the helper recorded a first round, a failure is retried, then set aside.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any

from ldp.aggregators.crashpoints import at as at_point
from ldp.aggregators.jobs import aside_error, child_job_ids, retry_gate
from ldp.aggregators.poplar1_jobs import level_plans, mark, plan_level, record_plan, run_job
from ldp.aggregators.poplar1_records import LevelRecords, decode_param
from ldp.aggregators.records import job_key_parts
from ldp.aggregators.scale_out import claim, refresh_leader
from ldp.aggregators.state import LeaderTaskState
from ldp.errors import AggregatorError

__all__ = ["refresh_levels", "run_levels", "unfinished", "forget_attempts"]

_LEVEL_NAME = re.compile(r"/w(\d+)-l(\d+)\.json$")


def _levels(state: LeaderTaskState) -> LevelRecords:
    levels = state.poplar1
    assert isinstance(levels, LevelRecords)
    return levels


def refresh_levels(leader: Any, state: LeaderTaskState) -> None:
    """The replica's view brought up to date from the store: every door's chunks
    (:func:`~ldp.aggregators.scale_out.refresh_leader`), then the level records the others wrote (parameters,
    finished jobs, releases), each applied once (records are never changed)."""
    refresh_leader(leader, state)
    levels = _levels(state)
    records = levels.records
    with records.lock:
        for key in records.store.list(f"{levels.prefix}levels/"):
            if (m := _LEVEL_NAME.search(key)) and int(m[2]) not in levels.params.get(int(m[1]), {}):
                rec = records.read(key)
                levels.params.setdefault(int(rec["window"]), {})[int(rec["level"])] = bytes.fromhex(rec["param"])
        known = {job for jobs in levels.finished.values() for job in jobs}
        for key in records.store.list(f"{levels.prefix}jobs/"):
            job_id, kind = job_key_parts(key)
            if kind == "" and job_id not in known:
                levels._apply(records.read(key))
        for key in records.store.list(f"{levels.prefix}releases/"):
            if (m := _LEVEL_NAME.search(key)) and (int(m[1]), int(m[2])) not in levels.releases:
                levels.releases[(int(m[1]), int(m[2]))] = records.read(key)


def run_levels(leader: Any, state: LeaderTaskState, only: tuple[int, int] | None = None, *,
               collecting: bool = False) -> Counter[str]:
    """One pass over the admitted levels not released (one: ``only``), under the task's lock (module docstring,
    steps 2 and 3): each planned if it is not and this process plans, its jobs claimed and run. Counts: ``jobs``,
    ``prepared``, ``refused``, ``split``, ``set_aside``, ``waiting`` (not due), ``held`` (claimed elsewhere),
    ``unplanned`` (waiting for the planner). ``collecting`` (a collection: jobs run even if not due, as Prio3's):
    ``jobs_set_aside`` (409) while a job of ``only`` is set aside, else ``jobs_in_progress`` (503) unless its jobs
    are all finished afterwards (step 4)."""
    if not collecting and leader.replica is not None:
        refresh_levels(leader, state)
    levels, totals = _levels(state), Counter[str]()
    todo = [only] if only is not None else [(w, lv) for w, by_level in sorted(levels.params.items())
                                            for lv in sorted(by_level) if (w, lv) not in levels.releases]
    for window, level in todo:
        param = decode_param(levels.params[window][level])
        jobs = plan_level(leader, state, window, param)
        if jobs is None:
            totals["unplanned"] += 1
        else:
            totals.update(_drive(leader, state, window, param, jobs, collecting))
        if collecting:
            if jobs is not None and unfinished(levels, window, level, jobs) and leader.replica is not None:
                refresh_levels(leader, state)  # finished (or set aside) meanwhile by other replicas?
            waiting = unfinished(levels, window, level, jobs or [])
            if aside := sorted(j for j in waiting if j in levels.records.aside):
                raise aside_error(f"level {level} of window {window}", aside)
            if jobs is None or waiting:
                raise AggregatorError(f"level {level} of window {window}: "
                                      + ("its jobs are not planned yet (another replica plans)" if jobs is None else
                                         f"{len(waiting)} job(s) in progress at other replicas")
                                      + ": ask again shortly", "jobs_in_progress", 503)
    return totals


def unfinished(levels: LevelRecords, window: int, level: int, jobs: list[str]) -> list[str]:
    """The jobs of ``jobs`` with no finished record, in order, a split job's halves in its place (its record names
    them, ``split_into``): the level is complete when there are none."""
    done, out, todo = levels.finished.get((window, level), {}), [], list(jobs)
    while todo:
        job_id = todo.pop(0)
        if (rec := done.get(job_id)) is None:
            out.append(job_id)
        else:
            todo[:0] = [str(c) for c in rec.get("split_into", [])]
    return out


def _attempts(levels: LevelRecords) -> tuple[Counter[str], set[str]]:
    """From one listing of ``poplar1/jobs/``: each job's attempts, and the jobs finished (by any replica)."""
    attempts: Counter[str] = Counter()
    finished: set[str] = set()
    for key in levels.records.store.list(f"{levels.prefix}jobs/"):
        job_id, kind = job_key_parts(key)
        if kind == "attempt":
            attempts[job_id] += 1
        elif kind == "":
            finished.add(job_id)
    return attempts, finished


def _drive(leader: Any, state: LeaderTaskState, window: int, param: Any, jobs: list[str], force: bool
           ) -> Counter[str]:
    """Each job of ``jobs`` not finished (:func:`unfinished`; one finished by another replica since the last refresh
    is skipped: its record is in the listing) nor set aside, if its next attempt is due (Prio3's schedule and
    ``max_job_attempts``: :func:`~ldp.aggregators.jobs.retry_gate`, from its ``attempt-<n>`` records), claimed
    (:func:`~ldp.aggregators.scale_out.claim`; alone, at once: no lease) and run; a job the helper refused whole
    split (:func:`_split`), its halves run next; a failure recorded for the schedule, then raised. Counts."""
    levels, records, totals = _levels(state), _levels(state).records, Counter[str]()
    attempts, finished = _attempts(levels)
    plans: dict[str, list[bytes]] | None = None
    todo = unfinished(levels, window, param.level, jobs)
    while todo:
        job_id = todo.pop(0)
        if job_id in finished or job_id in records.aside:
            continue
        count = attempts[job_id]
        last = float(records.read(levels.job_key(job_id, f"attempt-{count}"))["at"]) if count else 0.0
        if count:
            records.attempts[job_id] = (count, last)  # the schedule's view (Prio3's)
        if (gated := retry_gate(leader, state, job_id, window, force)) is not None:
            totals.update(gated)
            continue
        now, lease = leader.clock(), leader.job_lease if leader.replica is not None else 0.0
        if claim(records, functools.partial(_attempt_key, levels, job_id), job_id, count, last, now, lease) is None:
            totals["held"] += 1
            continue
        attempts[job_id] += 1
        records.attempts[job_id] = (count + 1, now)
        plans = plans if plans is not None and job_id in plans else level_plans(levels, window, param.level)
        try:
            rec = run_job(leader, state, window, param, job_id, plans[job_id])
        except AggregatorError as exc:
            state.failures[job_id] = f"level {param.level}: {exc.code}: {exc}"
            raise
        if isinstance(rec, AggregatorError):  # the first round refused whole: split, as Prio3's
            halves = _split(leader, state, window, param, job_id, plans[job_id], rec)
            todo[:0] = halves
            totals.update(Counter(split=1) if halves else Counter(jobs=1, refused=1))
            continue
        state.failures.pop(job_id, None)
        if leader.replica is None:  # alone: its attempts serve no claim now (replicas keep them, as Prio3's)
            forget_attempts(state, job_id, attempts[job_id])
        totals.update(jobs=1, prepared=len(rec["accepted"]), refused=len(rec["rejected"]))
    return totals


def _split(leader: Any, state: LeaderTaskState, window: int, param: Any, job_id: str, rids: list[bytes],
           exc: AggregatorError) -> list[str]:
    """A job the helper refused whole, as Prio3's (:mod:`ldp.aggregators.jobs`, *Splitting*): the helper recorded
    nothing of it, so its two halves (IDs derived from its own: :func:`~ldp.aggregators.jobs.child_job_ids`) are
    planned, then its record says it was split (``split_into``, no report: each report stays in one finished job of
    the level, the replay rule); alone, its report is refused with the helper's code. The halves' IDs."""
    levels = _levels(state)
    zero, reason = state.vdaf.aggregate_init(param).to_bytes(), f"the helper refused it: {exc}"
    if len(rids) == 1:
        levels.finish_job(job_id, window, param.level, [], {rids[0]: exc.code}, zero, reason=reason, **mark(leader))
        return []
    half = len(rids) // 2
    halves = list(zip(child_job_ids(job_id), (rids[:half], rids[half:]), strict=True))
    for child, part in halves:
        record_plan(levels, child, window, param.level, part)
    at_point("leader_job_halved")
    levels.finish_job(job_id, window, param.level, [], {}, zero, split_into=[c for c, _ in halves], reason=reason,
                      **mark(leader))
    return [c for c, _ in halves]


def forget_attempts(state: LeaderTaskState, job_id: str, count: int | None = None) -> None:
    """A level's job's ``attempt-<n>`` records deleted (a job put back: its attempts counted anew, as Prio3's; a job
    finished by a leader alone, its ``count`` attempts known: no listing)."""
    levels = _levels(state)
    keys = ([k for k in levels.records.store.list(f"{levels.prefix}jobs/") if job_key_parts(k) == (job_id, "attempt")]
            if count is None else [_attempt_key(levels, job_id, n) for n in range(1, count + 1)])
    for key in keys:
        levels.records.store.delete(key)
    levels.records.attempts.pop(job_id, None)


def _attempt_key(levels: LevelRecords, job_id: str, n: int) -> str:
    """A Poplar1 job's ``attempt-<n>`` record (beside its plan, in ``poplar1/jobs/``)."""
    return levels.job_key(job_id, f"attempt-{n}")
