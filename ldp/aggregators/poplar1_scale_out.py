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
   ``planned/w<window>-l<level>.json``, created once (:func:`~ldp.aggregators.poplar1_leader.plan_level`: a
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
(the second finds the first's). Its share enters the level exactly when that record exists. Unlike Prio3's jobs, a
Poplar1 job has no retry schedule nor ``max_job_attempts``: a failed attempt is claimed again once its lease ends.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any

from ldp.aggregators.poplar1_leader import _run_job, level_plans, plan_level
from ldp.aggregators.poplar1_records import LevelRecords, decode_param
from ldp.aggregators.records import job_key_parts
from ldp.aggregators.scale_out import claim, refresh_leader
from ldp.aggregators.state import LeaderTaskState
from ldp.errors import AggregatorError

__all__ = ["refresh_levels", "run_levels"]

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
    steps 2 and 3): each planned if it is not and this replica plans, its jobs claimed and run. Counts: ``jobs``,
    ``prepared``, ``refused``, ``held`` (claimed elsewhere), ``unplanned`` (waiting for the planner).
    ``collecting``: ``jobs_in_progress`` (503) unless ``only``'s jobs are all finished afterwards (step 4)."""
    if not collecting:
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
            totals.update(_drive(leader, state, window, param, jobs))
        if collecting:
            if jobs is not None and any(j not in levels.finished.get((window, level), {}) for j in jobs):
                refresh_levels(leader, state)  # finished meanwhile by other replicas?
            waiting = [j for j in jobs or () if j not in levels.finished.get((window, level), {})]
            if jobs is None or waiting:
                raise AggregatorError(f"level {level} of window {window}: "
                                      + ("its jobs are not planned yet (another replica plans)" if jobs is None else
                                         f"{len(waiting)} job(s) in progress at other replicas")
                                      + ": ask again shortly", "jobs_in_progress", 503)
    return totals


def _drive(leader: Any, state: LeaderTaskState, window: int, param: Any, jobs: list[str]) -> Counter[str]:
    """Each job of ``jobs`` not finished claimed (:func:`~ldp.aggregators.scale_out.claim`: its attempts read from
    the store's listing, the last one's time from its record) and run (one finished by another replica since the
    last refresh is skipped: its record is in the listing); counts."""
    levels, records, totals = _levels(state), _levels(state).records, Counter[str]()
    attempts: Counter[str] = Counter()
    finished = set(levels.finished.get((window, param.level), {}))
    for key in records.store.list(f"{levels.prefix}jobs/"):
        job_id, kind = job_key_parts(key)
        if kind == "attempt":
            attempts[job_id] += 1
        elif kind == "":
            finished.add(job_id)  # by another replica since the last refresh
    plans: dict[str, list[bytes]] | None = None
    for job_id in jobs:
        if job_id in finished:
            continue
        count = attempts[job_id]
        last = float(records.read(levels.job_key(job_id, f"attempt-{count}"))["at"]) if count else 0.0
        if claim(records, functools.partial(_attempt_key, levels, job_id), job_id, count, last, leader.clock(),
                 leader.job_lease) is None:
            totals["held"] += 1
            continue
        plans = plans if plans is not None else level_plans(levels, window, param.level)
        rec = _run_job(leader, state, window, param, job_id, plans[job_id])
        totals.update(jobs=1, prepared=len(rec["accepted"]), refused=len(rec["rejected"]))
    return totals


def _attempt_key(levels: LevelRecords, job_id: str, n: int) -> str:
    """A Poplar1 job's ``attempt-<n>`` record (beside its plan, in ``poplar1/jobs/``)."""
    return levels.job_key(job_id, f"attempt-{n}")
