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
   level's list of jobs (:func:`~ldp.aggregators.poplar1_jobs.plan_level`), each job's attempts recorded,
   retried, set aside or split as Prio3's (:mod:`ldp.aggregators.poplar1_scale_out`, which also spreads them over a
   leader's replicas). A job is
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

from typing import Any

from ldp.aggregators.codec import Interval
from ldp.aggregators.messages import (
    AggregateShare,
    AggregateShareReq,
    MessageError,
)
from ldp.aggregators.poplar1_prune import prune
from ldp.aggregators.poplar1_records import LevelRecords, release_level
from ldp.aggregators.release import over_releases, release_cost, target_delta
from ldp.aggregators.state import LeaderTaskState
from ldp.errors import AggregatorError

__all__ = ["collect_level", "walk_cost"]


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
