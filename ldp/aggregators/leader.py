"""The leader aggregator (``ldp serve --role leader``; issue 71, item 3).

**At the door** (:meth:`Leader.upload`, DAP-09's ``PUT /tasks/{task}/reports``) the leader checks each report and
refuses it with DAP's code, or stores it with the reports arriving meanwhile before answering
(:mod:`ldp.aggregators.leader_door`). The leader is its store's one writer (``ldp serve`` holds the role's lease), or
one of its replicas (:mod:`ldp.aggregators.scale_out`).

**Aggregation jobs** (:meth:`Leader.run_aggregation_jobs`): the stored reports not yet in a job, by window, up to
``job_size`` per job. Each job's plan (its ID and report IDs) is recorded before the helper is asked, so a leader killed
mid-job redoes the same job (the same ID, the same request: preparation is deterministic) and the helper answers it
from its record: no report is lost or counted twice on either side (:mod:`ldp.aggregators.records`). The leader
opens its shares, sends its verifier shares, finishes each report the helper finished and refuses the others with
the helper's code (``vdaf_invalid`` for a measurement that is not one: two-hot, out of range).

**Collection** (:meth:`Leader.collect`, for ``ldp collect``): one window, once. The leader first aggregates the
window's stored reports, then asks the helper for its share (stating its own report count and checksum), releases
its own (:func:`ldp.aggregators.release.release`), and returns both sealed shares to the collector, with the
release's central (ε, δ) and the task's over every release so far.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol

from ldp._moved import renamed_method
from ldp.aggregators.aggregator import Aggregator
from ldp.aggregators.codec import Interval
from ldp.aggregators.commit import GroupCommit
from ldp.aggregators.jobs import (
    DEFAULT_JOB_BYTES,
    DEFAULT_JOBS_IN_FLIGHT,
    DEFAULT_MAX_JOB_ATTEMPTS,
    MAX_JOB_BYTES,
    MAX_JOBS_IN_FLIGHT,
    aside_error,
    run_jobs,
)
from ldp.aggregators.leader_door import CLOCK_TOLERANCE, DEFAULT_REPORT_EXPIRY, LeaderDoor
from ldp.aggregators.messages import (
    MAX_JOB_REPORTS,
    REPORT_ID_SIZE,
    AggregateShare,
    AggregateShareReq,
    MessageError,
)
from ldp.aggregators.records import TaskRecords, split_chunk
from ldp.aggregators.release import DEFAULT_DELTA, device_cost, device_figures, over_releases, release, release_cost
from ldp.aggregators.scale_out import DEFAULT_JOB_LEASE, Planner, check_replica_name, refresh_leader, sweep_chunks
from ldp.aggregators.state import LeaderTaskState, StoredReport
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError

__all__ = ["Leader", "HelperPeer", "DEFAULT_JOB_SIZE", "CLOCK_TOLERANCE"]

logger = logging.getLogger("ldp.aggregators")

DEFAULT_JOB_SIZE = 1000


class HelperPeer(Protocol):
    """How the leader reaches the helper: over HTTP (:class:`ldp.aggregators.http.HelperClient`) or, in tests and
    simulations, the :class:`~ldp.aggregators.helper.Helper` itself."""

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes: ...

    def aggregation_job_continue(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        """A job's second round (Poplar1's: :mod:`ldp.aggregators.poplar1_jobs`)."""
        ...

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes: ...

    def abandon_job(self, task_id: bytes, job_id: str) -> bool:
        """Whether the helper took the job's share out of its window (an ``ldp`` helper does)."""
        ...


class Leader(Aggregator[LeaderTaskState], LeaderDoor):
    """The leader (module docstring): ``helper`` is its peer. ``state_lock`` guards every task's reports at the door
    and in jobs (:class:`~ldp.aggregators.state.LeaderTaskState`'s ``seen``, ``stored``, ``chunks``, ``planned``)."""

    role = "leader"

    def __init__(self, tasks: Iterable[Task], store: Any, keypair: Any, verify_keys: Any, helper: HelperPeer, *,
                 job_size: int = DEFAULT_JOB_SIZE, report_expiry: int = DEFAULT_REPORT_EXPIRY,
                 job_bytes: int = DEFAULT_JOB_BYTES, max_job_attempts: int = DEFAULT_MAX_JOB_ATTEMPTS,
                 replica: str | None = None, job_lease: float = DEFAULT_JOB_LEASE,
                 jobs_in_flight: int = DEFAULT_JOBS_IN_FLIGHT, **options: Any) -> None:
        if not 1 <= job_size <= MAX_JOB_REPORTS:
            raise ValueError(f"job_size must be in [1, {MAX_JOB_REPORTS}], got {job_size}")
        if not 2 ** 16 <= job_bytes <= MAX_JOB_BYTES:
            raise ValueError(f"job_bytes must be in [64 KiB, {MAX_JOB_BYTES} B], got {job_bytes}")
        if max_job_attempts < 1:
            raise ValueError(f"max_job_attempts must be at least 1, got {max_job_attempts}")
        self.job_bytes, self.max_job_attempts = job_bytes, max_job_attempts
        if not 1 <= jobs_in_flight <= MAX_JOBS_IN_FLIGHT:
            raise ValueError(f"jobs_in_flight must be in [1, {MAX_JOBS_IN_FLIGHT}], got {jobs_in_flight}")
        self.jobs_in_flight = jobs_in_flight
        if report_expiry < 1:
            raise ValueError(f"report_expiry must be at least 1 s, got {report_expiry}")
        self.helper, self.job_size, self.report_expiry = helper, job_size, report_expiry
        self.replica = None if replica is None else check_replica_name(replica)
        if not 1 <= job_lease <= 86400:
            raise ValueError(f"job_lease must be in [1, 86400] s, got {job_lease}")
        self.job_lease = job_lease
        self.planner = None if replica is None else Planner(store)
        self.state_lock = threading.Lock()
        super().__init__(list(tasks), store, keypair, verify_keys, **options)

    def _task_state(self, task: Task, vdaf: Any, verify_key: bytes, records: TaskRecords) -> LeaderTaskState:
        """The task's state rebuilt from the store: its interrupted plans' reports, every report ID prepared or in a
        chunk, and the chunks' reports in no finished job."""
        state = LeaderTaskState(task, vdaf, verify_key, records)
        state.commit = GroupCommit(functools.partial(self._store_reports, state))
        state.planned = {bytes.fromhex(r) for _, plan in records.plans(aside=True) for r in plan["reports"]}
        state.seen = set(records.prepared)
        for key in self.store.list(f"{records.prefix}reports/"):
            self._load_chunk(state, key)
            state.chunks_read.add(key)
        state.plans_read = {job_id for job_id, _ in records.plans(aside=True)}
        return state

    def _load_chunk(self, state: LeaderTaskState, key: str) -> None:
        """Take a stored chunk's reports not in a finished job (a chunk whose reports all are: deleted)."""
        from ldp import prio

        prepared = state.records.prepared
        rids = set()
        try:
            bodies = split_chunk(self.store.get(key))
        except FileNotFoundError:  # deleted since it was listed (its reports all finished, by another replica)
            return
        with self.state_lock:
            for body in bodies:
                rid = body[:REPORT_ID_SIZE]
                rids.add(rid)
                state.seen.add(rid)
                if rid not in prepared and rid not in state.stored:  # a report in two replicas' chunks: taken once
                    state.stored[rid] = StoredReport(rid, body, prio.DapReport.from_bytes(body), None, key)
            if not rids <= prepared:
                state.chunks[key] = rids
        if rids <= prepared:
            self.store.delete(key)

    # -- aggregation jobs ---------------------------------------------------------------------------------------
    def pending(self, task_id: bytes) -> list[bytes]:
        """The stored reports of a task in no job yet."""
        state = self.task_state(task_id)
        with self.state_lock:
            return [rid for rid in state.stored if rid not in state.planned]

    def _report(self, state: LeaderTaskState, rid: bytes) -> StoredReport:
        with self.state_lock:
            return state.stored[rid]

    def _consumed(self, state: LeaderTaskState, report_ids: list[bytes]) -> None:
        """Reports now in a finished job: forgotten, and each chunk whose reports all are deleted (after the job's
        record, never before: a leader killed in between finds the chunk and skips its prepared reports)."""
        emptied = []
        with self.state_lock:
            for rid in report_ids:
                entry = state.stored.pop(rid, None)
                if entry is not None and (rids := state.chunks.get(entry.chunk)) is not None:
                    rids.discard(rid)
                    if not rids:
                        emptied.append(entry.chunk)
                        del state.chunks[entry.chunk]
        for key in emptied:
            self.store.delete(key)

    aggregate = renamed_method("Leader", "aggregate", "run_aggregation_jobs")

    def run_aggregation_jobs(self, task_id: bytes | None = None, window: int | None = None, *,
                             force: bool = False) -> dict[str, int]:
        """Run the aggregation jobs of one task (every task: ``None``), of one window or all
        (:func:`ldp.aggregators.jobs.run_jobs`; ``force``: also the jobs whose next attempt is not due). Returns
        counts: jobs, reports prepared, refused, jobs split, set aside, waiting."""
        totals: Counter[str] = Counter()
        for state in [self.task_state(task_id)] if task_id is not None else list(self.state.values()):
            if state.poplar1 is not None:  # prepared a level at a time once collected (poplar1_leader), by any
                from ldp.aggregators.poplar1_scale_out import run_levels  # replica when several (poplar1_scale_out)

                with state.lock:
                    totals.update(run_levels(self, state))
                continue
            with state.lock:
                if self.replica is not None:
                    refresh_leader(self, state)
                totals.update(run_jobs(self, state, window, force=force))
                if self.replica is not None:
                    sweep_chunks(self, state)
        return dict(totals)

    def may_plan(self) -> bool:
        """Whether this process plans jobs now: always, unless it is one replica of several (then only while it
        holds the planner lease: :mod:`ldp.aggregators.scale_out`)."""
        return self.planner is None or self.planner.holds()

    def stop(self) -> None:
        """Let go of what this process holds besides its store (a replica's planner lease)."""
        if self.planner is not None:
            self.planner.stop()

    def put_back(self, task_id: bytes, job_ids: Iterable[str] | None = None) -> list[str]:
        """Put jobs set aside back (every one: ``None``), their attempts counted anew; the IDs put back.
        ``KeyError`` naming a job that is not set aside (nothing is changed then)."""
        state = self.task_state(task_id)
        with state.lock:
            records = state.records
            wanted = list(records.aside) if job_ids is None else list(job_ids)
            if missing := [j for j in wanted if j not in records.aside]:
                raise KeyError(f"not set aside: {', '.join(missing)}")
            for job_id in wanted:
                records.put_back(job_id)
                state.failures.pop(job_id, None)
                if state.poplar1 is not None:  # a level's job: its attempts are in poplar1/jobs/
                    from ldp.aggregators.poplar1_scale_out import forget_attempts

                    forget_attempts(state, job_id)
        return wanted

    # -- collection ---------------------------------------------------------------------------------------------
    def collect(self, task_id: bytes, window: int, agg_param: bytes = b"") -> dict[str, Any]:
        """Release ``window`` of a task to the collector (module docstring): a JSON-ready dict with both sealed
        shares, the report count, the checksum, the noise, this release's central (ε, δ) and the one over every
        release of the task. A Poplar1 task's window is released a level at a time, ``agg_param`` naming it
        (:func:`ldp.aggregators.poplar1_leader.collect_level`)."""
        state = self.task_state(task_id)
        task, records = state.task, state.records
        if window % task.window_seconds:
            raise AggregatorError(f"a window starts at a multiple of {task.window_seconds} s, got {window}",
                                  "invalid_message")
        if self.clock() < window + task.window_seconds:
            raise AggregatorError(f"window {window} has not ended: it is collected once, after its end",
                                  "window_open", 400)
        if state.poplar1 is not None:
            from ldp.aggregators.poplar1_leader import collect_level

            return collect_level(self, state, window, agg_param)
        if agg_param:
            raise AggregatorError("Prio3 takes no aggregation parameter, the collection has one", "invalid_message")
        self.run_aggregation_jobs(task_id, window, force=True)
        if self.replica is not None and window not in records.collections:
            self._check_window_done(state, window)
        if aside := sorted(j for j, rec in records.aside.items() if rec.get("window") == window):
            raise aside_error(f"window {window}", aside)
        with state.lock:
            mine = records.window(window)
            already = records.collections.get(window)
            count, checksum = ((already["count"], bytes.fromhex(already["checksum"])) if already is not None
                               else (mine.count, mine.checksum))
            if already is None and count < task.min_batch_size:
                try:  # the two sides compared all the same: a helper that counted more raises the alarm
                    self._helper_share(state, window, count, checksum)
                except AggregatorError as exc:
                    if exc.code != "batch_too_small":
                        raise
                raise AggregatorError(f"window {window} holds {count} valid reports, fewer than the task's minimum "
                                      f"batch size {task.min_batch_size}", "batch_too_small", 400)
            helper = self._helper_share(state, window, count, checksum)
            rec = release(records, state.vdaf, window, count, checksum, source=self.noise_source, clock=self.clock)
            records.prune(self.clock(), self.job_retention)
        delta = task.central.delta if task.central is not None and task.central.delta else DEFAULT_DELTA
        cost = release_cost(rec)
        total = over_releases(records.collections.values(), delta)
        return {"task_id": task.id_text, "metric": task.metric, "window": window, "report_count": rec["count"],
                "checksum": rec["checksum"], "leader_share": rec["encrypted_share"],
                "helper_share": helper.encrypted_share.hex(), "noise": rec["noise"],
                "release_epsilon": None if cost is None else cost.to_dict(),
                "releases": len(records.collections),
                "cumulative_epsilon": None if total is None else total.to_dict(),
                "refused": dict(mine.rejected), **device_figures(task, records.collections.values(), rec)}

    def _check_window_done(self, state: LeaderTaskState, window: int) -> None:
        """A replica's collection: ``jobs_in_progress`` (503) while a job of the window is planned and neither
        finished nor set aside (another replica holds it), or a report of the window is in no job yet (not planned);
        a job set aside is answered ``jobs_set_aside`` (409) by :meth:`collect`."""
        records = state.records
        with self.state_lock:  # a planned report waits on its plan: unfinished, or set aside (then 409, below)
            waiting = [rid for rid, s in state.stored.items()
                       if state.task.window(s.report.time) == window and rid not in state.planned]
        unfinished = [j for j, plan in records.plans() if plan["window"] == window]
        if waiting or unfinished:
            raise AggregatorError(f"window {window} has {len(unfinished)} job(s) in progress at other replicas and "
                                  f"{len(waiting)} report(s) in none yet: ask again shortly", "jobs_in_progress", 503)

    def _helper_share(self, state: LeaderTaskState, window: int, count: int, checksum: bytes) -> Any:
        """The helper's sealed share of ``window``, asked stating this leader's count and checksum (issue 84, item
        4: the helper releases nothing unless they are its own). A ``batch_mismatch`` is a disagreement: logged,
        shown on ``/status`` and the page (``disagreements``) on both sides, and the release refused with that code
        until the two agree (a later collection that succeeds clears it)."""
        req = AggregateShareReq(Interval(window, state.task.window_seconds), count, checksum).to_bytes()
        try:
            resp = AggregateShare.from_bytes(self.helper.aggregate_share(state.task.task_id, req))
        except MessageError as exc:
            raise AggregatorError(f"the helper's aggregate share does not decode: {exc}", "helper_unavailable",
                                  502) from None
        except AggregatorError as exc:
            if exc.code == "batch_mismatch":
                state.disagreements[window] = {"window": window, "count": count, "checksum": checksum.hex(),
                                               "peer": str(exc), "since": self.clock()}
                logger.error("task %s window %d: the helper disagrees: %s", state.task.id_text, window, exc)
            raise
        state.disagreements.pop(window, None)
        return resp

    def status(self) -> dict[str, Any]:
        out = super().status()
        for entry, (task_id, state) in zip(out["tasks"], self.state.items(), strict=True):
            records = state.records
            entry["refused_at_upload"] = dict(state.door)
            entry["pending"] = len(self.pending(task_id))
            central = state.task.central
            delta = central.delta if central is not None else DEFAULT_DELTA
            total = over_releases(records.collections.values(), delta or DEFAULT_DELTA)
            entry["releases"] = [{"window": w, "count": r["count"], "noise": r["noise"],
                                  "epsilon": None if (c := release_cost(r)) is None else c.to_dict(),
                                  "device_epsilon": None if (d := device_cost(r, state.task.reports_per_window))
                                  is None else d.to_dict()}
                                 for w, r in sorted(records.collections.items())]
            entry["cumulative_epsilon"] = None if total is None else total.to_dict()
            entry["set_aside"] = [{k: rec.get(k) for k in ("job", "window", "reason", "attempts", "at")}
                                  for _, rec in sorted(records.aside.items())]
        return out
