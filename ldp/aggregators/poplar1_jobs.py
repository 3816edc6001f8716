"""The jobs of a Poplar1 level at the leader (issue 89, item 2; ``docs/two-aggregators.md`` §17): the level's plan
(:func:`plan_level`: the window's reports in no job of the level, ``job_size`` per job, each plan recorded before the
helper is asked, then the level's list of jobs) and one job run (:func:`run_job`: DAP-09's two requests,
:mod:`ldp.aggregators.poplar1_messages`; each of the leader's steps one call of the binding for the whole job,
``leader_init_batch``, ``leader_continue_batch``, ``leader_finish_batch``). :mod:`ldp.aggregators.poplar1_scale_out`
drives them (attempts, retries, replicas) and :mod:`ldp.aggregators.poplar1_leader` releases the level."""

from __future__ import annotations

import weakref
from typing import Any

from ldp.aggregators.crashpoints import at as at_point
from ldp.aggregators.jobs import new_job_id, plan_jobs, refused_whole
from ldp.aggregators.messages import (
    AggregationJobInitReq,
    AggregationJobResp,
    MessageError,
    PrepareInit,
    ReportError,
    ReportShare,
    finish,
    initialize,
)
from ldp.aggregators.poplar1_messages import AggregationJobContinueReq, PrepareContinue, read_continue
from ldp.aggregators.poplar1_records import LevelRecords
from ldp.aggregators.state import LeaderTaskState
from ldp.errors import AggregatorError

__all__ = ["plan_level", "level_plans", "record_plan", "mark", "run_job"]


_PLANS: weakref.WeakKeyDictionary[Any, dict[str, dict[str, Any]]] = weakref.WeakKeyDictionary()
"""Each :class:`LevelRecords`' plan records read so far, by key (a plan is created once, never changed)."""


def level_plans(levels: LevelRecords, window: int, level: int) -> dict[str, list[bytes]]:
    """The reports of each job planned at ``(window, level)``, by job ID (every plan record in the store)."""
    cache = _PLANS.setdefault(levels, {})
    out: dict[str, list[bytes]] = {}
    for key in levels.records.store.list(f"{levels.prefix}jobs/"):
        if not key.endswith(".plan.json"):
            continue
        if (plan := cache.get(key)) is None:
            plan = cache[key] = levels.records.read(key)
        if int(plan["window"]) == window and int(plan["level"]) == level:
            out[str(plan["job"])] = [bytes.fromhex(r) for r in plan["reports"]]
    return out


def plan_level(leader: Any, state: LeaderTaskState, window: int, param: Any) -> list[str] | None:
    """The level's job IDs, planned once (module docstring, step 2): its recorded list (``planned/w<window>-
    l<level>.json``) if there is one; else the plans already recorded for it (a planner stopped midway), then the
    window's reports in none cut into jobs of ``job_size``, each plan recorded before the helper is asked, then the
    list, created once. After the window's first level, only that level's reports are planned (a report a door
    replica took late is in no level). ``None`` when this process may not plan: another replica holds the planner
    lease (:meth:`~ldp.aggregators.leader.Leader.may_plan`, asked before every write, so a planner that lost it
    writes nothing more)."""
    levels, at = state.poplar1, (window, param.level)
    done_key = levels.level_key(window, param.level, "planned")
    if (done := levels.get(done_key)) is not None:
        return [str(j) for j in done["jobs"]]
    plans = level_plans(levels, window, param.level)
    taken = levels.taken.get(at, set()).union(*plans.values())
    first = min(levels.params.get(window, {param.level: b""}))
    first_plans = {} if first == param.level else level_plans(levels, window, first)
    allowed = set().union(*first_plans.values()) if first_plans else None
    with leader.state_lock:
        todo = [(rid, len(s.body)) for rid, s in state.stored.items() if state.task.window(s.report.time) == window
                and rid not in taken and (allowed is None or rid in allowed)]
    jobs = list(plans)
    for chunk in plan_jobs(todo, leader.job_size, leader.job_bytes):
        if not leader.may_plan():
            return None
        job_id = new_job_id()
        record_plan(levels, job_id, window, param.level, chunk)
        jobs.append(job_id)
        at_point("leader_job_planned")
    if not leader.may_plan():
        return None
    if not levels.records.write(done_key, {"window": window, "level": param.level, "jobs": jobs}):
        return [str(j) for j in levels.records.read(done_key)["jobs"]]
    return jobs


def record_plan(levels: LevelRecords, job_id: str, window: int, level: int, rids: list[bytes]) -> None:
    """A job's plan recorded (created once: a plan redone after a kill finds the first), before the helper is
    asked."""
    plan = {"job": job_id, "window": window, "level": level, "reports": [r.hex() for r in rids]}
    levels.records.write(levels.job_key(job_id, "plan"), plan)


def mark(leader: Any) -> dict[str, Any]:
    """What a finished job's record says of the process that ran it: the replica's name, if it is one."""
    return {"replica": leader.replica} if leader.replica is not None else {}


def _open(leader: Any, state: LeaderTaskState, param: Any, rids: list[bytes]
          ) -> tuple[dict[bytes, str], dict[bytes, Any], list[PrepareInit]]:
    """Each report's round 0 at the leader in one call (``Poplar1.leader_init_batch``: its share opened unless kept
    from the door, ``verify_init``; the GIL released): refusals, states, and the ``PrepareInit`` of those sent."""
    task = state.task
    stored = [leader._report(state, rid) for rid in rids]
    started = state.vdaf.leader_init_batch(leader.keypair, state.verify_key, task.task_id, param, [
        (rid, s.report.time, s.report.public_share, s.report.leader_ciphertext, s.share)
        for rid, s in zip(rids, stored, strict=True)])
    refused: dict[bytes, str] = {}
    states: dict[bytes, Any] = {}
    inits: list[PrepareInit] = []
    for rid, s, outcome in zip(rids, stored, started, strict=True):
        if isinstance(outcome, str):
            refused[rid] = outcome
            continue
        states[rid], mine = outcome
        r = s.report
        inits.append(PrepareInit(ReportShare(rid, r.time, r.public_share, r.helper_ciphertext), initialize(mine)))
    return refused, states, inits


def _continue(vdaf: Any, first: tuple[Any, ...], states: dict[bytes, Any], refused: dict[bytes, str]
              ) -> dict[bytes, tuple[Any, bytes]]:
    """The leader's round 1 on the helper's first answer in one call (``Poplar1.leader_continue_batch``:
    ``verify_next`` with round 0's message, round 1's message combined with the helper's share): the round-1 state
    and message of each report to finish, by ID; the others refused (the helper's code, or ``vdaf_invalid``)."""
    answered: list[tuple[bytes, bytes, bytes]] = []
    for resp in first:
        if resp.error is not None:
            refused[resp.report_id] = resp.error.code
            continue
        try:
            answered.append((resp.report_id, *read_continue(resp.payload or b"")))
        except MessageError:
            refused[resp.report_id] = ReportError.vdaf_invalid.code
    outcomes = vdaf.leader_continue_batch([states[rid] for rid, _, _ in answered], [m for _, m, _ in answered],
                                          [v for _, _, v in answered])
    finals: dict[bytes, tuple[Any, bytes]] = {}
    for (rid, _, _), outcome in zip(answered, outcomes, strict=True):
        if isinstance(outcome, str):
            refused[rid] = outcome
        else:
            finals[rid] = outcome
    return finals


def run_job(leader: Any, state: LeaderTaskState, window: int, param: Any, job_id: str, rids: list[bytes]
            ) -> dict[str, Any] | AggregatorError:
    """One job's two rounds with the helper, then its record (module docstring): each round one batch call. The
    record in the store (another replica's, if it finished the same job first: the same requests, answered by the
    helper from its records). A first round the helper refused whole, having recorded nothing
    (:func:`~ldp.aggregators.jobs.refused_whole`), is returned, not raised: the job may be split
    (:mod:`ldp.aggregators.poplar1_scale_out`); any other refusal is raised."""
    task, vdaf, levels = state.task, state.vdaf, state.poplar1
    refused, states, inits = _open(leader, state, param, rids)
    accepted: list[bytes] = []
    share = vdaf.aggregate_init(param)
    if inits:
        body = AggregationJobInitReq(tuple(inits), param.to_bytes()).to_bytes()
        try:
            answer = leader.helper.aggregation_job(task.task_id, job_id, body)
        except AggregatorError as exc:
            if refused_whole(exc):
                return exc
            raise
        first = _answer(answer, [i.report_share.report_id for i in inits])
        finals = _continue(vdaf, first, states, refused)
        body = AggregationJobContinueReq(1, tuple(PrepareContinue(rid, finish(message))
                                                  for rid, (_, message) in finals.items())).to_bytes()
        second = _answer(leader.helper.aggregation_job_continue(task.task_id, job_id, body), list(finals))
        done = [resp.report_id for resp in second if resp.finished]
        for resp in second:
            if not resp.finished:
                refused[resp.report_id] = resp.error.code if resp.error is not None else ReportError.vdaf_invalid.code
        finished, share = vdaf.leader_finish_batch(param, [finals[rid][0] for rid in done],
                                                   [finals[rid][1] for rid in done])
        for rid, ok in zip(done, finished, strict=True):  # a round-1 state finishes with its own message: always
            if ok:
                accepted.append(rid)
            else:
                refused[rid] = ReportError.vdaf_invalid.code
        at_point("leader_job_answered")
    return levels.finish_job(job_id, window, param.level, accepted, refused, share.to_bytes(), **mark(leader))


def _answer(body: bytes, rids: list[bytes]) -> tuple[Any, ...]:
    """The helper's ``AggregationJobResp`` for ``rids``, in order (``helper_unavailable`` for any other)."""
    try:
        resps = AggregationJobResp.from_bytes(body).prepare_resps
    except MessageError as exc:
        raise AggregatorError(f"the helper's answer does not decode: {exc}", "helper_unavailable", 502) from None
    if [r.report_id for r in resps] != rids:
        raise AggregatorError("the helper answered for other reports", "helper_unavailable", 502)
    return resps
