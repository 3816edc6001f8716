"""The leader's side of a Poplar1 task (issue 89, item 2; ``docs/two-aggregators.md`` §17): one level of a window
collected with its aggregation parameter.

A Poplar1 report cannot be prepared before the collector names a level and its candidates, so the leader keeps the
window's reports (they are in no Prio3 job: :meth:`~ldp.aggregators.leader.Leader.run_aggregation_jobs` only
drives the levels already admitted) and, asked for a level (:func:`collect_level`):

1. admits the parameter (:func:`~ldp.aggregators.poplar1_records.admit_param`: a level once, in order, within the
   task's bounds; asked again with the same parameter, the level's recorded release is answered);
2. runs the level's jobs: first any planned and not finished (a leader killed mid-job redoes it with the same ID and
   the same requests: verification is deterministic, and the helper answers from its records), then the window's
   reports in no job of this level, ``job_size`` per job, each plan recorded before the helper is asked, then the
   level's list of jobs (:func:`plan_level`), each job's attempts recorded, retried, set aside or split as Prio3's
   (:mod:`ldp.aggregators.poplar1_scale_out`, which also spreads them over a leader's replicas). A job is
   DAP-09's two requests (:mod:`ldp.aggregators.poplar1_messages`): the leader's round-0 verifier shares, the
   helper's ``continue``; the leader's round 1 and its ``finish``, the helper's outcome. Each of the leader's steps
   is one call of the binding for the whole job (``leader_init_batch``, ``leader_continue_batch``,
   ``leader_finish_batch``: the loop in Rust over threads, the GIL released). A report either side refuses is
   refused by both, with its code, and counted;
3. asks the helper for its share (stating its count and checksum, and the parameter), releases its own
   (:func:`~ldp.aggregators.poplar1_records.release_level`), both noised with one level's noise (the task's noise
   for the whole walk split over its ``levels``), and answers both sealed shares with the level's (ε, δ) and the
   window's so far (every level released, composed: :func:`ldp.aggregators.release.over_releases`).
"""

from __future__ import annotations

import weakref
from typing import Any

from ldp.aggregators.codec import Interval
from ldp.aggregators.crashpoints import at as at_point
from ldp.aggregators.jobs import new_job_id, plan_jobs, refused_whole
from ldp.aggregators.messages import (
    AggregateShare,
    AggregateShareReq,
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
from ldp.aggregators.poplar1_prune import prune
from ldp.aggregators.poplar1_records import LevelRecords, release_level
from ldp.aggregators.release import over_releases, release_cost, target_delta
from ldp.aggregators.state import LeaderTaskState
from ldp.errors import AggregatorError

__all__ = ["collect_level", "walk_cost", "plan_level", "level_plans", "record_plan", "WholeRefusal", "mark"]


def walk_cost(task: Any, releases: list[dict[str, Any]]) -> Any:
    """The levels ``releases`` composed (:func:`~ldp.aggregators.release.over_releases`) at the δ the walk's
    calibration states its guarantee at (the noise's for the Gaussian, the task's target's for Laplace:
    :meth:`ldp.prio.heavy_hitters.WalkCalibration.cost`), per device; ``None`` without noise or releases."""
    delta = float(task.noise.delta) if task.noise.mechanism == "gaussian" else target_delta(task)
    return over_releases(releases, delta, task.reports_per_window)


def collect_level(leader: Any, state: LeaderTaskState, window: int, data: bytes) -> dict[str, Any]:
    """One level of ``window`` released (module docstring): a JSON-ready dict as
    :meth:`~ldp.aggregators.leader.Leader.collect`'s, with the parameter (``agg_param``, hex) and its ``level``."""
    task, levels = state.task, state.poplar1
    assert isinstance(levels, LevelRecords)
    with state.lock:
        from ldp.aggregators.poplar1_scale_out import refresh_levels, run_levels

        if leader.replica is not None:  # one of several processes: what the others recorded first
            refresh_levels(leader, state)
        param = levels.admit(task, window, data)
        if (window, param.level) not in levels.releases:
            run_levels(leader, state, (window, param.level), collecting=True)
        count = len(levels.batch(window, param.level)[0])
        checksum = levels.batch(window, param.level)[1]
        if (window, param.level) not in levels.releases and count < task.min_batch_size:
            raise AggregatorError(f"window {window} holds {count} valid reports at level {param.level}, fewer than "
                                  f"the task's minimum batch size {task.min_batch_size}", "batch_too_small", 400)
        req = AggregateShareReq(Interval(window, task.window_seconds), count, checksum, param.to_bytes())
        try:
            helper = AggregateShare.from_bytes(leader.helper.aggregate_share(task.task_id, req.to_bytes()))
        except MessageError as exc:
            raise AggregatorError(f"the helper's aggregate share does not decode: {exc}", "helper_unavailable",
                                  502) from None
        rec = release_level(levels, state.vdaf, param, window, count, checksum, source=leader.noise_source,
                            clock=leader.clock)
        prune(leader, state)  # the window's reports and plans once its last level is released (poplar1_prune)
    mine = [r for (w, _), r in sorted(levels.releases.items()) if w == window]
    cost, walk = release_cost(rec), walk_cost(task, mine)
    every = over_releases([*state.records.collections.values(), *levels.releases.values()], target_delta(task))
    return {"task_id": task.id_text, "metric": task.metric, "window": window, "level": param.level,
            "agg_param": param.to_bytes().hex(), "report_count": rec["count"], "checksum": rec["checksum"],
            "leader_share": rec["encrypted_share"], "helper_share": helper.encrypted_share.hex(),
            "noise": rec["noise"], "release_epsilon": None if cost is None else cost.to_dict(),
            "levels_released": len(mine), "walk_epsilon": None if walk is None else walk.to_dict(),
            "releases": len(levels.releases), "cumulative_epsilon": None if every is None else every.to_dict(),
            "refused": dict(rec.get("rejected", {}))}


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


class WholeRefusal(AggregatorError):
    """The helper refused a job's first round whole, having recorded nothing
    (:func:`~ldp.aggregators.jobs.refused_whole`): the job may be split (:mod:`ldp.aggregators.poplar1_scale_out`)."""


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


def _run_job(leader: Any, state: LeaderTaskState, window: int, param: Any, job_id: str, rids: list[bytes]
             ) -> dict[str, Any]:
    """One job's two rounds with the helper, then its record (module docstring): each round one batch call. The
    record in the store (another replica's, if it finished the same job first: the same requests, answered by the
    helper from its records)."""
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
                raise WholeRefusal(str(exc), exc.code, exc.status) from exc
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
