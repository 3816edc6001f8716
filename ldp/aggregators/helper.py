"""The helper aggregator (``ldp serve --role helper``; issue 71, item 3; DAP-09's helper, issue 85).

The helper never sees a device: the leader forwards each report's public share and the helper's sealed input share
in an aggregation job (DAP-09's :class:`~ldp.aggregators.messages.AggregationJobInitReq`, with the leader's prep
share). The job names no batch (a time-interval task): the helper takes each report's window from its time, so a
job of another implementation's leader may hold several windows. For each report the helper refuses, with its code,
a report of a collected window (``batch_collected``), a report ID it prepared before (``report_replayed``: a leader
replaying a report to count it twice is stopped here), a time not rounded to the task's precision or shares of
another VDAF (``invalid_message``), a share that does not open (``hpke_*``) and a proof that does not verify
(``vdaf_invalid``, DAP's ``vdaf_prep_error``: both prep shares combined); it finishes the others, and answers each
report's prep message (a ping-pong ``finish``) so the leader finishes too.

**Exactly once.** A job's reports of one window are one record (:mod:`ldp.aggregators.records`; the job's own ID
when the job holds one window, as an ``ldp`` leader's always do, else an ID derived from the job's and the window,
:func:`part_id`), holding the answers, the report IDs and the part's aggregate share, created before the answer
leaves; a part's share counts when its record exists. A job repeated with the same ID and the same request (the
leader retrying after a timeout, or after either was killed) is answered from its records; the same ID with another
request is refused (``job_mismatch``). Jobs of a task are prepared one at a time, so that no two can take the same
report.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from collections import Counter
from typing import Any

from ldp._moved import renamed_method
from ldp.aggregators import poplar1_helper
from ldp.aggregators.aggregator import Aggregator
from ldp.aggregators.crashpoints import at
from ldp.aggregators.door import fits
from ldp.aggregators.messages import (
    AggregateShare,
    AggregateShareReq,
    AggregationJobInitReq,
    AggregationJobResp,
    MessageError,
    PrepareInit,
    PrepareResp,
    ReportError,
    finish,
)
from ldp.aggregators.records import TaskRecords
from ldp.aggregators.release import release
from ldp.aggregators.state import TaskState
from ldp.aggregators.task import Task, task_window
from ldp.errors import AggregatorError

__all__ = ["Aggregator", "Helper", "JOB_ID_RE", "part_id", "task_window"]

logger = logging.getLogger("ldp.aggregators")

JOB_ID_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
"""An aggregation job's ID: 16 to 64 base64url characters (DAP: 16 random bytes)."""


class Helper(Aggregator[TaskState]):
    """The helper (module docstring)."""

    role = "helper"

    def __init__(self, *args: Any, replicated: bool = False, **options: Any) -> None:
        super().__init__(*args, **options)
        self.refused_jobs: Counter[str] = Counter()
        """Whole jobs refused, by code (in memory: since the process started)."""
        self.replicated = replicated
        """One replica of several over the store: every record read again before a job or a release
        (:mod:`ldp.aggregators.scale_out`)."""

    def status(self) -> dict[str, Any]:
        out = super().status()
        out["refused_jobs"] = dict(self.refused_jobs)
        for entry, state in zip(out["tasks"], self.state.values(), strict=True):
            entry["abandoned_jobs"] = len(state.records.abandoned)
        return out

    def _task_state(self, task: Task, vdaf: Any, verify_key: bytes, records: TaskRecords) -> TaskState:
        return TaskState(task, vdaf, verify_key, records)

    aggregate = renamed_method("Helper", "aggregate", "aggregation_job")

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        """Prepare one aggregation job (module docstring); the encoded :class:`AggregationJobResp`. The task's lock
        is held to check and reserve the job's reports, and to record it, not while they are prepared (the batch
        call, the GIL released): jobs of distinct reports are prepared at once (:mod:`ldp.aggregators.state`)."""
        state = self.task_state(task_id)
        _check_job_id(job_id)
        if state.poplar1 is not None:
            return poplar1_helper.init_job(self, state, job_id, body)
        init = _decode(AggregationJobInitReq, body)
        if init.aggregation_parameter:
            raise AggregatorError("Prio3 takes no aggregation parameter, the job has one", "invalid_message")
        digest = hashlib.sha256(body).hexdigest()
        inits = list(init.prepare_inits)
        parts: dict[int, list[int]] = {}  # window -> positions of its reports in the job, in order
        for i, p in enumerate(inits):
            parts.setdefault(state.task.window(p.report_share.time), []).append(i)
        names = {w: job_id if len(parts) == 1 else part_id(job_id, w) for w in parts}
        # the VDAF bytes' checks (ldp.aggregators.door: pure functions of the task's VDAF), before the lock
        fit = fits(state.vdaf, [(p.report_share.public_share, p.report_share.encrypted_input_share) for p in inits])
        with state.lock:
            self._wait_for(state, job_id, names, frozenset(p.report_share.report_id for p in inits))
            answered: dict[int, bytes] = {}
            taken: dict[int, list[ReportError | bytes]] = {}
            for w, positions in parts.items():
                if (done := state.records.job(names[w])) is not None:
                    if done.get("request_sha256") != digest:
                        raise AggregatorError(f"job {names[w]} was prepared with another request", "job_mismatch",
                                              409)
                    answered[w] = bytes.fromhex(done["response"])
                else:
                    taken[w] = _check_reports(state, w, [inits[i] for i in positions], [fit[i] for i in positions])
                    state.running[names[w]] = (w, frozenset(inits[i].report_share.report_id for i in positions))
        prepared: dict[int, dict[str, Any]] = {}
        try:
            for w, checked in taken.items():
                prepared[w] = self._prepare(state, [inits[i] for i in parts[w]], checked)
        finally:
            with state.lock:
                try:  # each part prepared recorded (the records' create-if-absent: once, whoever is first)
                    for w, rec in prepared.items():
                        done = state.records.finish_job(names[w], w, request_sha256=digest, **rec)
                        answered[w] = bytes.fromhex(done["response"])
                        at("helper_job_recorded")
                finally:
                    for w in taken:
                        del state.running[names[w]]
                    state.idle.notify_all()
        if len(parts) == 1:  # one window (the usual job): its part's recorded answer is the job's, as it is
            return answered[next(iter(parts))]
        answers: list[PrepareResp | None] = [None] * len(inits)
        for w, positions in parts.items():
            for i, resp in zip(positions, AggregationJobResp.from_bytes(answered[w]).prepare_resps, strict=True):
                answers[i] = resp
        return AggregationJobResp(tuple(a for a in answers if a is not None)).to_bytes()

    def _wait_for(self, state: TaskState, job_id: str, names: dict[int, str], report_ids: frozenset[bytes]) -> None:
        """Under the task's lock: wait while another request prepares this job (the leader's retry) or any of its
        reports (then they are replays, as in a serial order); ``job_abandoned`` or ``job_mismatch`` (409) for a
        job recorded so, read again first when this helper is one replica of several."""
        def busy() -> bool:
            if self.replicated:
                state.records.refresh()
            recorded = _parts_of(state.records, job_id)
            if recorded & state.records.abandoned:
                raise AggregatorError(f"job {job_id} was abandoned: its reports go in other jobs", "job_abandoned",
                                      409)
            if not recorded <= set(names.values()):  # recorded, with other windows
                raise AggregatorError(f"job {job_id} was prepared with another request", "job_mismatch", 409)
            return any(name in state.running for name in names.values()) or any(
                not report_ids.isdisjoint(held) for _, held in state.running.values())

        state.wait_while(busy)

    def _prepare(self, state: TaskState, inits: list[PrepareInit], checked: list[ReportError | bytes]
                 ) -> dict[str, Any]:
        """One window's reports of a job, checked (:func:`_check_reports`), prepared out of the task's lock: the
        reports that passed opened, prepared, checked (the joint randomness part for the helper too: a forged one
        would fail only the leader's prepare_next, so it is refused on both sides), finished and aggregated in one
        call, the GIL released. The part's record (:meth:`TaskRecords.finish_job`'s arguments but its IDs)."""
        todo = [(p.report_share, c) for p, c in zip(inits, checked, strict=True) if isinstance(c, bytes)]
        answers, share = state.vdaf.helper_prepare_batch(self.keypair, state.verify_key, state.task.task_id, [
            (r.report_id, r.time, r.public_share, r.encrypted_input_share, leader) for r, leader in todo])
        answer = iter(answers)
        results: list[PrepareResp] = []
        accepted: list[bytes] = []
        refused: dict[bytes, str] = {}
        for p, error in zip(inits, checked, strict=True):
            rid = p.report_share.report_id
            if isinstance(error, bytes):
                outcome = next(answer)
                if isinstance(outcome, bytes):
                    accepted.append(rid)
                    results.append(PrepareResp(rid, payload=finish(outcome)))
                    continue
                error = ReportError[outcome]
            if rid not in refused and rid not in accepted:
                refused[rid] = error.code
            results.append(PrepareResp(rid, error=error))
        return {"accepted": accepted, "rejected": refused, "share": share.field_elements(),
                "response": AggregationJobResp(tuple(results)).to_bytes().hex()}

    def aggregation_job_continue(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        """A job's next round (DAP-09's ``POST`` of an ``AggregationJobContinueReq``): Poplar1's second round
        (:func:`ldp.aggregators.poplar1_helper.continue_job`); a Prio3 job has one round (``invalid_message``)."""
        state = self.task_state(task_id)
        _check_job_id(job_id)
        if state.poplar1 is None:
            raise AggregatorError("Prio3's jobs have one round: nothing to continue", "invalid_message")
        return poplar1_helper.continue_job(self, state, job_id, body)

    def abandon_job(self, task_id: bytes, job_id: str) -> bool:
        """Abandon a job at the leader's request (``DELETE .../aggregation_jobs/{job}``; issue 84, item 2): its
        share no longer counts, its reports may come again in other jobs, and the job ID is refused from now on
        (``job_abandoned``). The leader abandons a job whose answer it cannot use (it does not decode, it is for
        other reports, or the two sides finished different reports), then splits it. Idempotent; a job of a
        released window cannot be taken out of its release (``batch_collected``, 409)."""
        state = self.task_state(task_id)
        _check_job_id(job_id)
        with state.lock:
            state.wait_while(lambda: job_id in state.running or any(part_id(job_id, w) in state.running
                                                                     for w, _ in state.running.values()))
            records = state.records
            parts = sorted(_parts_of(records, job_id) | {job_id})
            for part in parts:
                window = records.jobs.get(part)
                if window is not None and window in records.collections:
                    raise AggregatorError(f"job {job_id} is in window {window}, already released",
                                          "batch_collected", 409)
            for part in parts:
                if records.abandon(part, "the leader abandoned it"):
                    logger.warning("job %s of task %s abandoned at the leader's request", part, state.task.id_text)
        at("helper_job_abandoned")
        return True  # its share and reports are out of their window (the answer's header says so over HTTP)

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes:
        """Release this helper's share of a window (:func:`ldp.aggregators.release.release`); the encoded
        :class:`AggregateShare`. The batch interval is one window (:func:`task_window`)."""
        state = self.task_state(task_id)
        if state.poplar1 is not None:
            return poplar1_helper.aggregate_share(self, state, body)
        req = _decode(AggregateShareReq, body)
        if req.aggregation_parameter:
            raise AggregatorError("Prio3 takes no aggregation parameter, the request has one", "invalid_message")
        window = task_window(state.task.window_seconds, req.interval)
        with state.lock:
            state.wait_while(lambda: any(w == window for w, _ in state.running.values()))  # its jobs recorded first
            if self.replicated:
                state.records.refresh()
            if window in state.records.conflicts and window not in state.records.collections:
                raise AggregatorError(f"window {window}: this helper's replicas counted a report in two jobs (a "
                                      "leader sent one report in two jobs at once): it is not released",
                                      "batch_mismatch", 409)
            try:
                rec = release(state.records, state.vdaf, window, req.report_count, req.checksum,
                              source=self.noise_source, clock=self.clock)
            except AggregatorError as exc:
                if exc.code == "batch_mismatch":  # issue 84, item 4: the two sides disagree, and say so
                    mine = state.records.window(window)
                    state.disagreements[window] = {
                        "window": window, "count": mine.count, "checksum": mine.checksum.hex(),
                        "peer": f"the leader counted {req.report_count} (checksum {req.checksum.hex()[:16]}…)",
                        "since": self.clock()}
                    logger.error("task %s window %d: the leader disagrees: %s", state.task.id_text, window, exc)
                raise
            state.disagreements.pop(window, None)
            state.records.prune(self.clock(), self.job_retention)
        return AggregateShare(bytes.fromhex(rec["encrypted_share"])).to_bytes()


def part_id(job_id: str, window: int) -> str:
    """The record ID of one window's reports of a job holding several (module docstring): 22 base64url
    characters of SHA-256 of the job's ID and the window."""
    digest = hashlib.sha256(f"ldp job part {job_id} {window}".encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def _check_reports(state: TaskState, window: int, inits: list[PrepareInit], fit: list[bool]
                   ) -> list[ReportError | bytes]:
    """Under the task's lock: each report of one window's part of a job refused with its code, or the leader's prep
    share to prepare it with (module docstring). The leader's door checks the VDAF bytes again (``fit``:
    :func:`ldp.aggregators.door.fits`, a public share of the task's VDAF, a sealed share of exactly its length): a
    leader's store written before them, or a leader that does not check, cannot make this helper open a padded
    share."""
    records, task = state.records, state.task
    checked: list[ReportError | bytes] = []
    in_job: set[bytes] = set()
    for p, fitting in zip(inits, fit, strict=True):
        r, error = p.report_share, None
        if window in records.collections:
            error = ReportError.batch_collected
        elif r.report_id in records.prepared or r.report_id in in_job:
            error = ReportError.report_replayed
        elif r.time % task.time_precision or not fitting:
            error = ReportError.invalid_message
        else:
            try:
                checked.append(p.leader_prep_share)
            except MessageError:
                error = ReportError.invalid_message
        in_job.add(r.report_id)
        if error is not None:
            checked.append(error)
    return checked


def _parts_of(records: TaskRecords, job_id: str) -> set[str]:
    """The records of a job: its own ID (a job of one window) or its parts' (:func:`part_id`), finished or
    abandoned."""
    ids = {job_id, *(part_id(job_id, w) for w in records.windows)}
    return {i for i in ids if i in records.jobs or i in records.abandoned}


def _check_job_id(job_id: str) -> None:
    if not JOB_ID_RE.match(job_id):
        raise AggregatorError(f"a job ID is 16 to 64 base64url characters, got {job_id[:80]!r}", "invalid_message")


def _decode(kind: Any, body: bytes) -> Any:
    """A request of the leader's decoded (``kind``: a message class of :mod:`ldp.aggregators.messages`);
    ``invalid_message`` otherwise."""
    try:
        return kind.from_bytes(body)
    except MessageError as exc:
        raise AggregatorError(str(exc), "invalid_message") from None
