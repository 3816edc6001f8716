"""DAP-09's collection flow at the leader (``draft-ietf-ppm-dap-09`` §4.7; issue 85, item 2): the collector creates
a collection job (``PUT /tasks/{task}/collection_jobs/{job}`` with a :class:`CollectionReq`), polls it (``POST`` on
the same URL: 202 while its window is open, then 200 with the :class:`Collection`), and may delete it (``DELETE``:
204; the release stays).

* **A batch is one window** of the task (:func:`~ldp.aggregators.task.task_window`): another interval is refused
  ``batch_invalid`` when the job is created. A window is released once, with the noise of its one release
  (:func:`ldp.aggregators.release.release`): every job for it, and the JSON route (``POST /tasks/{task}/collections``,
  this project's own), gets the same shares, so a collector gains nothing by asking again (DAP-09 would refuse a
  second query of the batch, ``batch_queried_too_many_times``; answering with the same release is as safe).
* **The job is recorded** (``collection_jobs/job-<ID>.json`` in the leader's store, created once): a leader killed
  after the ``PUT`` finds it when polled. The same job ID with another request is refused (``job_mismatch``, 409).
* **Polling runs the collection** (:meth:`~ldp.aggregators.leader.Leader.collect`): the window's jobs, the helper's
  share, the leader's release. A window that has not ended answers 202 with ``Retry-After``; a refusal of the
  collection (too few reports, ``batch_too_small``; the central target, ``budget_exhausted``; a disagreement
  between the aggregators) is the poll's refusal.
* **The collection's interval is the window** (DAP-09 asks for the smallest interval of the task's time precision
  holding the batch's report times; the window holds them, and says nothing of when within it the reports came).
* **A Poplar1 task's job names a level** (issue 89): its ``CollectionReq`` carries the aggregation parameter (the
  level and its candidate prefixes, DAP-09 §4.7.1's ``agg_param``), which must decode as one (``invalid_message``
  otherwise, as for a Prio3 job that carries one); polling releases that level
  (:func:`ldp.aggregators.poplar1_leader.collect_level`: each level once, in order, within the task's bounds; the
  same parameter again is answered from its release), the shares sealed to the parameter as DAP-09's
  ``AggregateShareAad`` says.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ldp.aggregators.codec import HpkeCiphertext, Interval
from ldp.aggregators.collection_messages import COLLECTION_JOB_ID_SIZE, Collection, CollectionReq, MessageError
from ldp.aggregators.task import unb64
from ldp.errors import AggregatorError

__all__ = ["create_job", "poll_job", "delete_job", "job_key", "RETRY_AFTER"]

RETRY_AFTER = 60
"""Seconds a collector is asked to wait before polling a job whose window is open (at most; a window that ends
sooner is ready sooner)."""


def _job_id(text: str) -> bytes:
    try:
        return unb64(text, COLLECTION_JOB_ID_SIZE, "a collection job ID")
    except ValueError as exc:
        raise AggregatorError(str(exc), "invalid_message") from None


def job_key(records: Any, job_id: bytes) -> str:
    """Where a collection job is recorded in the leader's store."""
    return f"{records.prefix}collection_jobs/job-{job_id.hex()}.json"


def create_job(leader: Any, task_id: bytes, job_text: str, body: bytes) -> None:
    """Record a collection job (module docstring); idempotent for the same request."""
    from ldp.aggregators.task import task_window

    state = leader.task_state(task_id)
    job_id = _job_id(job_text)
    try:
        req = CollectionReq.from_bytes(body)
    except MessageError as exc:
        raise AggregatorError(str(exc), "invalid_message") from None
    if state.task.is_poplar1:
        from ldp.aggregators.poplar1_records import decode_param

        if not req.aggregation_parameter:
            raise AggregatorError("a Poplar1 collection job names its aggregation parameter (level and prefixes)",
                                  "invalid_message")
        decode_param(req.aggregation_parameter)
    elif req.aggregation_parameter:
        raise AggregatorError("Prio3 takes no aggregation parameter, the request has one", "invalid_message")
    window = task_window(state.task.window_seconds, req.interval)
    digest = hashlib.sha256(body).hexdigest()
    rec = {"job": job_id.hex(), "window": window, "request_sha256": digest, "created": leader.clock(),
           **({"agg_param": req.aggregation_parameter.hex()} if req.aggregation_parameter else {})}
    key = job_key(state.records, job_id)
    if not state.records.write(key, rec) and state.records.read(key).get("request_sha256") != digest:
        raise AggregatorError(f"collection job {job_text} was created with another request", "job_mismatch", 409)


def _record(leader: Any, task_id: bytes, job_text: str) -> tuple[Any, dict[str, Any]]:
    state = leader.task_state(task_id)
    try:
        return state, state.records.read(job_key(state.records, _job_id(job_text)))
    except FileNotFoundError:
        raise AggregatorError(f"no collection job {job_text} in this task (never created, or deleted)",
                              "unrecognized_collection_job", 404) from None


def poll_job(leader: Any, task_id: bytes, job_text: str) -> tuple[bytes | None, int]:
    """(the encoded :class:`Collection`, 0) once the window is released, or (``None``, seconds to wait) while it is
    open (module docstring)."""
    state, rec = _record(leader, task_id, job_text)
    window, seconds = int(rec["window"]), state.task.window_seconds
    wait = window + seconds - int(leader.clock())
    if wait > 0:
        return None, min(wait, RETRY_AFTER)
    try:
        doc = leader.collect(task_id, window, bytes.fromhex(rec.get("agg_param", "")))
    except AggregatorError as exc:
        if exc.code == "jobs_in_progress":  # another replica holds one of the window's jobs (docs/scale-out.md)
            return None, min(RETRY_AFTER, 5)
        raise
    shares = (HpkeCiphertext.from_bytes(bytes.fromhex(doc[k])) for k in ("leader_share", "helper_share"))
    return Collection(int(doc["report_count"]), Interval(window, seconds), *shares).to_bytes(), 0


def delete_job(leader: Any, task_id: bytes, job_text: str) -> None:
    """Forget a collection job (its window's release stays: a new job for it gets the same shares)."""
    state, _ = _record(leader, task_id, job_text)
    state.records.store.delete(job_key(state.records, _job_id(job_text)))
