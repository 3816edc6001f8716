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
import random
import re
import threading
import time as _time
from collections.abc import Mapping, Sequence
from typing import Any

from ldp.aggregators.messages import (
    AggregateShareReq,
    AggregateShareResp,
    AggregationJobInit,
    AggregationJobResp,
    MessageError,
    ReportError,
    ReportResp,
)
from ldp.aggregators.records import TaskRecords
from ldp.aggregators.release import release
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError
from ldp.storage.base import Store
from ldp.storage.roles import RoleStore, aggregator_role

__all__ = ["Aggregator", "Helper", "JOB_ID_RE", "at"]

_fault: Any = None
"""The crash tests' hook, called at each named point (``None``: nothing happens)."""


def at(point: str) -> None:
    """A named point of an aggregator's work (``helper_job_recorded``: a job's record is in the store, its answer
    not yet sent; ``leader_job_planned``, ``leader_job_answered``): the crash tests kill the process here."""
    if _fault is not None:
        _fault(point)

JOB_ID_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
"""An aggregation job's ID: 16 to 64 base64url characters (DAP: 16 random bytes)."""


class Aggregator:
    """What both aggregators share: their tasks, their records (in their own role's prefix of their store), their
    HPKE key pair and the verify keys."""

    role = ""

    def __init__(self, tasks: Sequence[Task], store: Store, keypair: Any, verify_keys: Mapping[bytes, bytes], *,
                 noise_source: random.Random | None = None, clock: Any = _time.time) -> None:
        self.store = store if isinstance(store, RoleStore) else RoleStore(store, aggregator_role(self.role))
        self.keypair, self.clock, self.noise_source = keypair, clock, noise_source
        self.tasks: dict[bytes, Task] = {}
        self.vdafs: dict[bytes, Any] = {}
        self.records: dict[bytes, TaskRecords] = {}
        self.verify_keys: dict[bytes, bytes] = {}
        self.locks: dict[bytes, threading.Lock] = {}
        for task in tasks:
            if task.task_id in self.tasks:
                raise ValueError(f"task {task.id_text} is given twice")
            key = verify_keys.get(task.task_id)
            vdaf = task.prio3()
            if not isinstance(key, bytes) or len(key) != vdaf.verify_key_size:
                raise ValueError(f"task {task.id_text} ({task.metric}): its verify key must be "
                                 f"{vdaf.verify_key_size} bytes (the secret both aggregators share)")
            self.tasks[task.task_id], self.vdafs[task.task_id], self.verify_keys[task.task_id] = task, vdaf, key
            self.records[task.task_id] = TaskRecords(self.store, self.role, task, vdaf.modulus, vdaf.output_len)
            self.locks[task.task_id] = threading.Lock()

    def task(self, task_id: bytes) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise AggregatorError("no such task here", "unrecognized_task", 404) from None

    def hpke_config_list(self) -> bytes:
        """DAP's HpkeConfigList of this aggregator (devices seal its input shares to it)."""
        from ldp import prio

        return prio.encode_hpke_config_list([self.keypair.config])

    def status(self) -> dict[str, Any]:
        """Every task's counts (valid reports and refusals per window, collected windows), for ``/status``."""
        return {"role": self.role, "tasks": [self.records[t].summary() for t in self.tasks]}


class Helper(Aggregator):
    """The helper (module docstring)."""

    role = "helper"

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        """Prepare one aggregation job; the encoded :class:`AggregationJobResp`."""
        task = self.task(task_id)
        if not JOB_ID_RE.match(job_id):
            raise AggregatorError(f"a job ID is 16 to 64 base64url characters, got {job_id[:80]!r}", "invalid_message")
        init = _decode(AggregationJobInit, body, task_id)
        digest = hashlib.sha256(body).hexdigest()
        records = self.records[task_id]
        with self.locks[task_id]:
            if (done := records.job(job_id)) is not None:
                if done.get("request_sha256") != digest:
                    raise AggregatorError(f"job {job_id} was prepared with another request", "job_mismatch", 409)
                return bytes.fromhex(done["response"])
            return self._prepare(task, records, job_id, init, digest)

    def _prepare(self, task: Task, records: TaskRecords, job_id: str, init: AggregationJobInit, digest: str) -> bytes:
        vdaf, key = self.vdafs[task.task_id], self.verify_keys[task.task_id]
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
            elif r.time % task.time_precision:
                error = ReportError.invalid_message
            in_job.add(r.report_id)
            checked.append(error)
        # the reports that passed: opened, prepared, checked (the joint randomness part for the helper too: a forged
        # one would fail only the leader's verify_next, so it is refused on both sides), finished and aggregated in
        # one call, the GIL released
        answers, share = vdaf.helper_prepare_batch(self.keypair, key, task.task_id, [
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

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes:
        """Release this helper's share of a window (:func:`ldp.aggregators.release.release`); the encoded
        :class:`AggregateShareResp`."""
        self.task(task_id)
        req = _decode(AggregateShareReq, body, task_id)
        with self.locks[task_id]:
            rec = release(self.records[task_id], self.vdafs[task_id], req.window, req.report_count, req.checksum,
                          source=self.noise_source, clock=self.clock)
        return AggregateShareResp(rec["count"], bytes.fromhex(rec["encrypted_share"])).to_bytes()


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
