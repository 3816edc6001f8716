"""The leader aggregator (``ldp serve --role leader``; issue 71, item 3).

**At the door** (:meth:`Leader.upload`, DAP-09's ``PUT /tasks/{task}/reports``) the leader decodes the DAP report
and refuses, each with its code: bytes that are no report (``invalid_message``), a time beyond the clock's
tolerance (``report_too_early``), a report of a window already collected (``batch_collected``), a leader share sealed
to another key (``hpke_unknown_config_id``) or that does not open (``hpke_decrypt_error``), and a report ID seen
before (``report_replayed``). A report is stored under its report ID with the store's create-if-absent, so a replay
cannot be stored twice whatever the timing.

**Aggregation jobs** (:meth:`Leader.aggregate`): the stored reports not yet in a job, by window, up to ``job_size``
per job. Each job's plan (its ID and report IDs) is recorded before the helper is asked, so a leader killed
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

import base64
import secrets
from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol

from ldp.aggregators.helper import Aggregator, at
from ldp.aggregators.messages import (
    MAX_JOB_REPORTS,
    AggregateShareReq,
    AggregateShareResp,
    AggregationJobInit,
    AggregationJobResp,
    MessageError,
    ReportError,
    ReportInit,
)
from ldp.aggregators.prepare import Prepared, prepare_init, sum_shares
from ldp.aggregators.records import TaskRecords
from ldp.aggregators.release import DEFAULT_DELTA, over_releases, release, release_cost
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError, PrioError

__all__ = ["Leader", "HelperPeer", "DEFAULT_JOB_SIZE", "CLOCK_TOLERANCE"]

DEFAULT_JOB_SIZE = 1000
CLOCK_TOLERANCE = 300
"""Seconds a report's time may be ahead of the leader's clock (devices' clocks drift)."""


class HelperPeer(Protocol):
    """How the leader reaches the helper: over HTTP (:class:`ldp.aggregators.http.HelperClient`) or, in tests and
    simulations, the :class:`~ldp.aggregators.helper.Helper` itself."""

    def aggregate(self, task_id: bytes, job_id: str, body: bytes) -> bytes: ...

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes: ...


def _job_id() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode()


class Leader(Aggregator):
    """The leader (module docstring): ``helper`` is its peer."""

    role = "leader"

    def __init__(self, tasks: Iterable[Task], store: Any, keypair: Any, verify_keys: Any, helper: HelperPeer, *,
                 job_size: int = DEFAULT_JOB_SIZE, **options: Any) -> None:
        super().__init__(list(tasks), store, keypair, verify_keys, **options)
        if not 1 <= job_size <= MAX_JOB_REPORTS:
            raise ValueError(f"job_size must be in [1, {MAX_JOB_REPORTS}], got {job_size}")
        self.helper, self.job_size = helper, job_size
        self.door: dict[bytes, Counter[str]] = {t: Counter() for t in self.tasks}
        self.planned: dict[bytes, set[bytes]] = {}
        for task_id, records in self.records.items():
            self.planned[task_id] = {bytes.fromhex(r) for _, plan in records.plans() for r in plan["reports"]}

    # -- the door ---------------------------------------------------------------------------------------------
    def upload(self, task_id: bytes, body: bytes) -> None:
        """Take one DAP report (module docstring); :class:`~ldp.errors.AggregatorError` with the refusal's code."""
        try:
            self._upload(task_id, body)
        except AggregatorError as exc:
            if task_id in self.door:
                self.door[task_id][exc.code] += 1
            raise

    def _upload(self, task_id: bytes, body: bytes) -> None:
        from ldp import prio

        task = self.task(task_id)
        records = self.records[task_id]
        try:
            report = prio.DapReport.from_bytes(body)
        except PrioError as exc:
            raise AggregatorError(f"not a DAP-09 report: {exc}", ReportError.invalid_message.code) from None
        if report.time > self.clock() + CLOCK_TOLERANCE:
            raise AggregatorError("the report's time is in the future", ReportError.report_too_early.code)
        if task.window(report.time) in records.collections:
            raise AggregatorError("the report's window was already collected", ReportError.batch_collected.code)
        if report.report_id in records.prepared:
            raise AggregatorError("this report ID was already uploaded", ReportError.report_replayed.code, 409)
        if not report.leader_ciphertext or report.leader_ciphertext[0] != self.keypair.config.id:
            raise AggregatorError("the leader's share is sealed to an unknown HPKE config: fetch /hpke_config again",
                                  ReportError.hpke_unknown_config_id.code)
        try:
            prio.open_input_share(self.keypair, role="leader", task_id=task_id, report_id=report.report_id,
                                  time=report.time, public_share=report.public_share,
                                  ciphertext=report.leader_ciphertext)
        except PrioError:
            raise AggregatorError("the leader's share does not open", ReportError.hpke_decrypt_error.code) from None
        if not self.store.create(records.report_key(report.report_id), bytes(body)):
            raise AggregatorError("this report ID was already uploaded", ReportError.report_replayed.code, 409)

    # -- aggregation jobs ---------------------------------------------------------------------------------------
    def pending(self, task_id: bytes) -> list[bytes]:
        """The stored reports of a task in no job yet."""
        records = self.records[task_id]
        taken = records.prepared | self.planned[task_id]
        out = []
        for key in self.store.list(f"{records.prefix}reports/"):
            rid = bytes.fromhex(key.rsplit("/", 1)[1].removesuffix(".report"))
            if rid not in taken:
                out.append(rid)
        return out

    def aggregate(self, task_id: bytes | None = None, window: int | None = None) -> dict[str, int]:
        """Run the aggregation jobs of one task (every task: ``None``), of one window or all: interrupted jobs
        first, then the stored reports in no job. Returns counts: jobs, reports prepared, refused."""
        totals: Counter[str] = Counter()
        for tid in [task_id] if task_id is not None else list(self.tasks):
            self.task(tid)
            with self.locks[tid]:
                totals.update(self._aggregate(tid, window))
        return dict(totals)

    def _aggregate(self, task_id: bytes, window: int | None) -> Counter[str]:
        from ldp import prio

        task, records = self.tasks[task_id], self.records[task_id]
        totals: Counter[str] = Counter()
        for job_id, plan in records.plans():
            if window is None or plan["window"] == window:
                totals.update(self._run_job(task, records, job_id, plan["window"],
                                            [bytes.fromhex(r) for r in plan["reports"]]))
        by_window: dict[int, list[bytes]] = {}
        for rid in self.pending(task_id):
            report = prio.DapReport.from_bytes(self.store.get(records.report_key(rid)))
            w = task.window(report.time)
            if window is None or w == window:
                by_window.setdefault(w, []).append(rid)
        for w, rids in sorted(by_window.items()):
            for start in range(0, len(rids), self.job_size):
                chunk = rids[start:start + self.job_size]
                job_id = _job_id()
                plan = {"job": job_id, "window": w, "reports": [r.hex() for r in chunk], "created": self.clock()}
                records.write(records.plan_key(job_id), plan)
                self.planned[task_id].update(chunk)
                at("leader_job_planned")
                totals.update(self._run_job(task, records, job_id, w, chunk))
        return totals

    def _run_job(self, task: Task, records: TaskRecords, job_id: str, window: int, report_ids: list[bytes]
                 ) -> Counter[str]:
        from ldp import prio

        vdaf, key = self.vdafs[task.task_id], self.verify_keys[task.task_id]
        refused: dict[bytes, str] = {}
        prepared: dict[bytes, Prepared] = {}
        inits: list[ReportInit] = []
        for rid in report_ids:
            report = prio.DapReport.from_bytes(self.store.get(records.report_key(rid)))
            if window in records.collections:
                refused[rid] = ReportError.batch_collected.code
                continue
            prep = prepare_init(vdaf, self.keypair, key, "leader", task.task_id, rid, report.time,
                                report.public_share, report.leader_ciphertext)
            if isinstance(prep, ReportError):
                refused[rid] = prep.code
                continue
            prepared[rid] = prep
            inits.append(ReportInit(rid, report.time, report.public_share, report.helper_ciphertext,
                                    prep.verifier_share))
        outputs: list[Any] = []
        accepted: list[bytes] = []
        if inits:
            body = AggregationJobInit(task.task_id, window, tuple(inits)).to_bytes()
            try:
                resp = AggregationJobResp.from_bytes(self.helper.aggregate(task.task_id, job_id, body))
            except MessageError as exc:
                raise AggregatorError(f"the helper's answer to job {job_id} does not decode: {exc}",
                                      "helper_unavailable", 502) from None
            if [r.report_id for r in resp.results] != [i.report_id for i in inits]:
                raise AggregatorError(f"the helper answered job {job_id} for other reports", "helper_unavailable", 502)
            for r in resp.results:
                if r.error is not None:
                    refused[r.report_id] = r.error.code
                    continue
                try:
                    outputs.append(vdaf.verify_next(prepared[r.report_id].state, r.message))
                except PrioError:  # the helper checks this cannot happen (prepare.joint_rand_part_matches)
                    refused[r.report_id] = ReportError.vdaf_invalid.code
                else:
                    accepted.append(r.report_id)
            at("leader_job_answered")
        records.finish_job(job_id, window, accepted, refused, sum_shares(vdaf, outputs))
        return Counter(prepared=len(accepted), refused=len(refused), jobs=1)

    # -- collection ---------------------------------------------------------------------------------------------
    def collect(self, task_id: bytes, window: int) -> dict[str, Any]:
        """Release ``window`` of a task to the collector (module docstring): a JSON-ready dict with both sealed
        shares, the report count, the checksum, the noise, this release's central (ε, δ) and the one over every
        release of the task."""
        task = self.task(task_id)
        if window % task.window_seconds:
            raise AggregatorError(f"a window starts at a multiple of {task.window_seconds} s, got {window}",
                                  "invalid_message")
        self.aggregate(task_id, window)
        records = self.records[task_id]
        with self.locks[task_id]:
            mine = records.window(window)
            already = records.collections.get(window)
            count, checksum = ((already["count"], bytes.fromhex(already["checksum"])) if already is not None
                               else (mine.count, mine.checksum))
            if already is None and count < task.min_batch_size:
                raise AggregatorError(f"window {window} holds {count} valid reports, fewer than the task's minimum "
                                      f"batch size {task.min_batch_size}", "batch_too_small", 400)
            req = AggregateShareReq(task_id, window, count, checksum).to_bytes()
            try:
                helper = AggregateShareResp.from_bytes(self.helper.aggregate_share(task_id, req))
            except MessageError as exc:
                raise AggregatorError(f"the helper's aggregate share does not decode: {exc}", "helper_unavailable",
                                      502) from None
            rec = release(records, self.vdafs[task_id], window, count, checksum, source=self.noise_source,
                          clock=self.clock)
        delta = task.central.delta if task.central is not None and task.central.delta else DEFAULT_DELTA
        cost = release_cost(rec)
        total = over_releases(records.collections.values(), delta)
        return {"task_id": task.id_text, "metric": task.metric, "window": window, "report_count": rec["count"],
                "checksum": rec["checksum"], "leader_share": rec["encrypted_share"],
                "helper_share": helper.encrypted_share.hex(), "noise": rec["noise"],
                "release_epsilon": None if cost is None else cost.to_dict(),
                "releases": len(records.collections),
                "cumulative_epsilon": None if total is None else total.to_dict(),
                "refused": dict(mine.rejected)}

    def status(self) -> dict[str, Any]:
        out = super().status()
        for entry, task_id in zip(out["tasks"], self.tasks, strict=True):
            records = self.records[task_id]
            entry["refused_at_upload"] = dict(self.door[task_id])
            entry["pending"] = len(self.pending(task_id))
            central = self.tasks[task_id].central
            delta = central.delta if central is not None else DEFAULT_DELTA
            total = over_releases(records.collections.values(), delta or DEFAULT_DELTA)
            entry["releases"] = [{"window": w, "count": r["count"], "noise": r["noise"],
                                  "epsilon": None if (c := release_cost(r)) is None else c.to_dict()}
                                 for w, r in sorted(records.collections.items())]
            entry["cumulative_epsilon"] = None if total is None else total.to_dict()
        return out
