"""The helper's side of a Poplar1 task (issue 89, item 2; ``docs/two-aggregators.md`` §17): a job's two rounds
(:mod:`ldp.aggregators.poplar1_messages`) and a level's release.

**First round** (:func:`init_job`, DAP-09's ``AggregationJobInitReq`` with the level's parameter): the parameter
admitted by the rules of :mod:`ldp.aggregators.poplar1_records` (a level once, levels in order, at most the task's
levels and candidates); the job's reports all of one window; each report refused with its code (a time not rounded,
VDAF bytes of another length or a share that is no Poplar1 share: ``invalid_message``; a share that does not open:
``hpke_decrypt_error``; a report already in a job at this level: ``report_replayed``; a level released:
``batch_collected``; a sketch that fails, a malformed IDPF key: ``vdaf_invalid``), the others verified by the
crate's round 0 with the leader's verifier share and answered ``continue``. The answer and the round-1 states
(sealed to the records key) are recorded before the answer leaves; the same request again gets the same answer.

**Second round** (:func:`continue_job`, ``AggregationJobContinueReq`` step 1): each report the leader continues is
finished with its verifier message (``vdaf_invalid`` when it does not verify), the others refused; the output
shares aggregated and the job recorded (:meth:`~ldp.aggregators.poplar1_records.LevelRecords.finish_job`) before
the answer leaves, so a repeated request is answered from the record and no report is counted twice.

A helper's tasks are prepared under the task's lock here (one job at a time per task), unlike Prio3's batch calls.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ldp.aggregators.door import HELPER, fits
from ldp.aggregators.messages import (
    AggregateShare,
    AggregateShareReq,
    AggregationJobInitReq,
    AggregationJobResp,
    MessageError,
    PrepareInit,
    PrepareResp,
    ReportError,
)
from ldp.aggregators.poplar1_messages import AggregationJobContinueReq, continue_message
from ldp.aggregators.poplar1_records import LevelRecords, decode_param, release_level, write_json
from ldp.aggregators.state import TaskState
from ldp.errors import AggregatorError, PrioError

__all__ = ["init_job", "continue_job", "aggregate_share"]


def _levels(state: TaskState) -> LevelRecords:
    levels = state.poplar1
    assert isinstance(levels, LevelRecords)
    return levels


def _decode(cls: Any, body: bytes) -> Any:
    try:
        return cls.from_bytes(body)
    except MessageError as exc:
        raise AggregatorError(str(exc), "invalid_message") from None


def init_job(helper: Any, state: TaskState, job_id: str, body: bytes) -> bytes:
    """A Poplar1 job's first round (module docstring); the encoded ``AggregationJobResp``."""
    task, levels = state.task, _levels(state)
    init = _decode(AggregationJobInitReq, body)
    windows = {task.window(p.report_share.time) for p in init.prepare_inits}
    if len(windows) > 1:
        raise AggregatorError("a Poplar1 job holds reports of one window", "invalid_message")
    digest = hashlib.sha256(body).hexdigest()
    with state.lock:
        if (done := levels.get(levels.job_key(job_id, "init"))) is not None:
            if done["request_sha256"] != digest:
                raise AggregatorError(f"job {job_id} was prepared with another request", "job_mismatch", 409)
            return bytes.fromhex(done["response"])
        if not windows:
            return AggregationJobResp(()).to_bytes()
        window = windows.pop()
        param = levels.admit(task, window, init.aggregation_parameter)
        results, states = _first_round(helper, state, window, param, list(init.prepare_inits))
        response = AggregationJobResp(tuple(results)).to_bytes()
        rec = {"job": job_id, "window": window, "level": param.level, "param": param.to_bytes().hex(),
               "request_sha256": digest, "response": response.hex(),
               "reports": [p.report_share.report_id.hex() for p in init.prepare_inits],
               "rejected": {r.report_id.hex(): r.error.code for r in results if r.error is not None},
               "sealed_states": levels.records.sealer.seal_bytes(f"{job_id}.init", window,
                                                                 write_json(states).encode())}
        if not levels.records.write(levels.job_key(job_id, "init"), rec):
            rec = levels.records.read(levels.job_key(job_id, "init"))
        levels.taken.setdefault((window, param.level), set()).update(bytes.fromhex(r) for r in rec["reports"])
        return bytes.fromhex(rec["response"])


def _first_round(helper: Any, state: TaskState, window: int, param: Any, inits: list[PrepareInit]
                 ) -> tuple[list[PrepareResp], dict[str, str]]:
    """Each report's round 0 at the helper: its answer, and the round-1 states of those continued (hex by ID)."""
    from ldp import prio
    from ldp.prio.poplar1 import verify_continue

    task, vdaf, levels = state.task, state.vdaf, _levels(state)
    taken = levels.taken.get((window, param.level), set())
    released = (window, param.level) in levels.releases
    ok = fits(vdaf, [(p.report_share.public_share, p.report_share.encrypted_input_share) for p in inits])
    seen: set[bytes] = set()
    results: list[PrepareResp] = []
    states: dict[str, str] = {}
    for p, fit in zip(inits, ok, strict=True):
        r, error = p.report_share, None
        if released:
            error = ReportError.batch_collected
        elif r.report_id in taken or r.report_id in seen:
            error = ReportError.report_replayed
        elif r.time % task.time_precision or not fit:
            error = ReportError.invalid_message
        seen.add(r.report_id)
        if error is None:
            try:
                share = prio.open_input_share(helper.keypair, role="helper", task_id=task.task_id,
                                              report_id=r.report_id, time=r.time, public_share=r.public_share,
                                              ciphertext=r.encrypted_input_share)
            except PrioError:
                error = ReportError.hpke_decrypt_error
        if error is None:
            try:
                vdaf.check_input_share(HELPER, share)
            except PrioError:
                error = ReportError.invalid_message
        if error is None:
            try:
                state0, mine = vdaf.verify_init(state.verify_key, HELPER, param, r.report_id, r.public_share, share)
                msg0 = vdaf.verifier_shares_to_message(state0, [p.leader_prep_share, mine])
                state1, next_share = verify_continue(vdaf, state0, msg0)
            except (PrioError, MessageError):
                error = ReportError.vdaf_invalid
        if error is not None:
            results.append(PrepareResp(r.report_id, error=error))
            continue
        states[r.report_id.hex()] = state1.to_bytes().hex()
        results.append(PrepareResp(r.report_id, payload=continue_message(msg0, next_share)))
    return results, states


def continue_job(helper: Any, state: TaskState, job_id: str, body: bytes) -> bytes:
    """A Poplar1 job's second round (module docstring); the encoded ``AggregationJobResp``."""
    from ldp.aggregators.messages import _ping_pong
    from ldp.prio.poplar1 import verify_finish

    vdaf, levels = state.vdaf, _levels(state)
    req = _decode(AggregationJobContinueReq, body)
    if req.step != 1:
        raise AggregatorError(f"a Poplar1 job has one continue step (1), got step {req.step}", "invalid_message")
    digest = hashlib.sha256(body).hexdigest()
    with state.lock:
        if (done := levels.get(levels.job_key(job_id))) is not None:
            if done.get("continue_sha256") != digest:
                raise AggregatorError(f"job {job_id} was finished with another request", "job_mismatch", 409)
            return bytes.fromhex(done["response"])
        init = levels.get(levels.job_key(job_id, "init"))
        if init is None:
            raise AggregatorError(f"no aggregation job {job_id} to continue", "unrecognized_aggregation_job", 404)
        window, param = int(init["window"]), decode_param(bytes.fromhex(init["param"]))
        states = json.loads(levels.records.sealer.open_bytes(f"{job_id}.init", window, init["sealed_states"]))
        rejected = {bytes.fromhex(r): c for r, c in init["rejected"].items()}
        outs, results = [], []
        for item in req.prepare_continues:
            held = states.pop(item.report_id.hex(), None)
            if held is None:
                raise AggregatorError("the continue names a report this job did not continue", "invalid_message")
            try:
                state1 = vdaf.verify_state_from_bytes(HELPER, param, bytes.fromhex(held))
                outs.append((item.report_id, verify_finish(vdaf, state1, _ping_pong(item.payload, 2, "finish"))))
                results.append(PrepareResp(item.report_id, finished=True))
            except (PrioError, MessageError):
                rejected[item.report_id] = ReportError.vdaf_invalid.code
                results.append(PrepareResp(item.report_id, error=ReportError.vdaf_invalid))
        rejected.update({bytes.fromhex(r): ReportError.vdaf_invalid.code for r in states})  # left out by the leader
        share = vdaf.aggregate(param, [o for _, o in outs])
        response = AggregationJobResp(tuple(results)).to_bytes()
        rec = levels.finish_job(job_id, window, param.level, [rid for rid, _ in outs], rejected, share.to_bytes(),
                                continue_sha256=digest, response=response.hex())
        return bytes.fromhex(rec["response"])


def aggregate_share(helper: Any, state: TaskState, body: bytes) -> bytes:
    """The helper's release of one level of a window (:func:`~ldp.aggregators.poplar1_records.release_level`): the
    request's parameter must be the level's recorded one."""
    from ldp.aggregators.task import task_window

    levels = _levels(state)
    req = _decode(AggregateShareReq, body)
    window = task_window(state.task.window_seconds, req.interval)
    param = decode_param(req.aggregation_parameter)
    with state.lock:
        if levels.params.get(window, {}).get(param.level) != req.aggregation_parameter:
            raise AggregatorError(f"level {param.level} of window {window} was not aggregated with this parameter",
                                  "invalid_message")
        rec = release_level(levels, state.vdaf, param, window, req.report_count, req.checksum,
                            source=helper.noise_source, clock=helper.clock)
    return AggregateShare(bytes.fromhex(rec["encrypted_share"])).to_bytes()
