"""The helper aggregator (``ldp serve --role helper``; issue 71, item 3).

The helper never sees a device: the leader forwards each report's public share and the helper's sealed input share
in an aggregation job (:class:`~ldp.aggregators.messages.AggregationJobInit`, with the leader's verifier share).
For each report the helper refuses, with its code, a report of a collected window (``batch_collected``), a report ID
it prepared before (``report_replayed``: a leader replaying a report to count it twice is stopped here), a time
outside the job's window (``batch_mismatch``), a share that does not open (``hpke_*``) and a proof that does not
verify (``vdaf_invalid``: both verifier shares combined); it finishes the others, and answers each report's verifier
message so the leader finishes too.

**Exactly once.** A job's record (:mod:`ldp.aggregators.records`) holds the answer, the report IDs and the job's
aggregate share, and is created before the answer leaves; the job's share counts when the record exists. A job
repeated with the same ID and the same request (the leader retrying after a timeout, or after either was killed) is
answered from the record; the same ID with another request is refused (``job_mismatch``). Jobs of a task are
prepared one at a time, so that no two can take the same report.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from typing import Any

from ldp._moved import renamed_method
from ldp.aggregators.aggregator import Aggregator
from ldp.aggregators.crashpoints import at
from ldp.aggregators.door import check_report
from ldp.aggregators.messages import (
    AggregateShareReq,
    AggregateShareResp,
    AggregationJobInit,
    AggregationJobResp,
    MessageError,
    ReportError,
    ReportInit,
    ReportResp,
)
from ldp.aggregators.records import TaskRecords
from ldp.aggregators.release import release
from ldp.aggregators.state import TaskState
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError

__all__ = ["Aggregator", "Helper", "JOB_ID_RE"]

logger = logging.getLogger("ldp.aggregators")

JOB_ID_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
"""An aggregation job's ID: 16 to 64 base64url characters (DAP: 16 random bytes)."""


class Helper(Aggregator[TaskState]):
    """The helper (module docstring)."""

    role = "helper"

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.refused_jobs: Counter[str] = Counter()
        """Whole jobs refused, by code (in memory: since the process started)."""

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
        """Prepare one aggregation job; the encoded :class:`AggregationJobResp`."""
        state = self.task_state(task_id)
        if not JOB_ID_RE.match(job_id):
            raise AggregatorError(f"a job ID is 16 to 64 base64url characters, got {job_id[:80]!r}", "invalid_message")
        init = _decode(AggregationJobInit, body, task_id)
        digest = hashlib.sha256(body).hexdigest()
        with state.lock:
            if job_id in state.records.abandoned:
                raise AggregatorError(f"job {job_id} was abandoned: its reports go in other jobs", "job_abandoned",
                                      409)
            if (done := state.records.job(job_id)) is not None:
                if done.get("request_sha256") != digest:
                    raise AggregatorError(f"job {job_id} was prepared with another request", "job_mismatch", 409)
                return bytes.fromhex(done["response"])
            return self._prepare(state, job_id, init, digest)

    def _prepare(self, state: TaskState, job_id: str, init: AggregationJobInit, digest: str) -> bytes:
        task, records = state.task, state.records
        checked: list[ReportError | None] = []
        in_job: set[bytes] = set()
        for r in init.reports:
            error = None
            if init.window in records.collections:
                error = ReportError.batch_collected
            elif r.report_id in records.prepared or r.report_id in in_job:
                error = ReportError.report_replayed
            elif task.window(r.time) != init.window:
                error = ReportError.batch_mismatch
            elif r.time % task.time_precision or not _fits(state.vdaf, r):
                error = ReportError.invalid_message
            in_job.add(r.report_id)
            checked.append(error)
        # the reports that passed: opened, prepared, checked (the joint randomness part for the helper too: a forged
        # one would fail only the leader's verify_next, so it is refused on both sides), finished and aggregated in
        # one call, the GIL released
        answers, share = state.vdaf.helper_prepare_batch(self.keypair, state.verify_key, task.task_id, [
            (r.report_id, r.time, r.public_share, r.helper_ciphertext, r.leader_verifier_share)
            for r, error in zip(init.reports, checked, strict=True) if error is None])
        answer = iter(answers)
        results: list[ReportResp] = []
        accepted: list[bytes] = []
        refused: dict[bytes, str] = {}
        for r, error in zip(init.reports, checked, strict=True):
            if error is None:
                outcome = next(answer)
                if isinstance(outcome, bytes):
                    accepted.append(r.report_id)
                    results.append(ReportResp(r.report_id, message=outcome))
                    continue
                error = ReportError[outcome]
            if r.report_id not in refused and r.report_id not in accepted:
                refused[r.report_id] = error.code
            results.append(ReportResp(r.report_id, error=error))
        response = AggregationJobResp(tuple(results)).to_bytes()
        rec = records.finish_job(job_id, init.window, accepted, refused, share.field_elements(),
                                 request_sha256=digest, response=response.hex())
        at("helper_job_recorded")
        return bytes.fromhex(rec["response"])

    def abandon_job(self, task_id: bytes, job_id: str) -> None:
        """Abandon a job at the leader's request (``DELETE .../aggregation_jobs/{job}``; issue 84, item 2): its
        share no longer counts, its reports may come again in other jobs, and the job ID is refused from now on
        (``job_abandoned``). The leader abandons a job whose answer it cannot use (it does not decode, it is for
        other reports, or the two sides finished different reports), then splits it. Idempotent; a job of a
        released window cannot be taken out of its release (``batch_collected``, 409)."""
        state = self.task_state(task_id)
        if not JOB_ID_RE.match(job_id):
            raise AggregatorError(f"a job ID is 16 to 64 base64url characters, got {job_id[:80]!r}", "invalid_message")
        with state.lock:
            records = state.records
            window = records.jobs.get(job_id)
            if window is not None and window in records.collections:
                raise AggregatorError(f"job {job_id} is in window {window}, already released", "batch_collected",
                                      409)
            if records.abandon(job_id, "the leader abandoned it"):
                logger.warning("job %s of task %s abandoned at the leader's request", job_id, state.task.id_text)
        at("helper_job_abandoned")

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes:
        """Release this helper's share of a window (:func:`ldp.aggregators.release.release`); the encoded
        :class:`AggregateShareResp`."""
        state = self.task_state(task_id)
        req = _decode(AggregateShareReq, body, task_id)
        with state.lock:
            try:
                rec = release(state.records, state.vdaf, req.window, req.report_count, req.checksum,
                              source=self.noise_source, clock=self.clock)
            except AggregatorError as exc:
                if exc.code == "batch_mismatch":  # issue 84, item 4: the two sides disagree, and say so
                    mine = state.records.window(req.window)
                    state.disagreements[req.window] = {
                        "window": req.window, "count": mine.count, "checksum": mine.checksum.hex(),
                        "peer": f"the leader counted {req.report_count} (checksum {req.checksum.hex()[:16]}…)",
                        "since": self.clock()}
                    logger.error("task %s window %d: the leader disagrees: %s", state.task.id_text, req.window, exc)
                raise
            state.disagreements.pop(req.window, None)
            state.records.prune(self.clock(), self.job_retention)
        return AggregateShareResp(rec["count"], bytes.fromhex(rec["encrypted_share"])).to_bytes()


def _fits(vdaf: Any, report: ReportInit) -> bool:
    """Whether a report's public share decodes for the task's VDAF and its sealed share has exactly the VDAF's
    length (:func:`ldp.aggregators.door.check_report`, the leader's door checks, again: a leader's store written
    before them, or a leader that does not check, cannot make this helper open a padded share)."""
    try:
        check_report(vdaf, report)
    except AggregatorError:
        return False
    return True


def _decode(kind: Any, body: bytes, task_id: bytes) -> Any:
    """A request of the leader's decoded (``kind``: a message class of :mod:`ldp.aggregators.messages`), for the task
    its URL names; ``invalid_message`` otherwise."""
    try:
        message = kind.from_bytes(body)
    except MessageError as exc:
        raise AggregatorError(str(exc), "invalid_message") from None
    if message.task_id != task_id:
        raise AggregatorError(f"the {kind.__name__} names another task than its URL", "invalid_message")
    return message
