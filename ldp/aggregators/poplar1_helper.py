"""The helper's side of a Poplar1 task (issue 89, item 2; ``docs/two-aggregators.md`` §17): a job's two rounds
(:mod:`ldp.aggregators.poplar1_messages`) and a level's release.

**First round** (:func:`init_job`, DAP-09's ``AggregationJobInitReq`` with the level's parameter): the parameter
admitted by the rules of :mod:`ldp.aggregators.poplar1_records` (a level once, levels in order, at most the task's
levels and candidates); the job's reports all of one window; each report refused with its code (a time not rounded,
VDAF bytes of another length or a share that is no Poplar1 share: ``invalid_message``; a ciphertext sealed to another
config id: ``hpke_unknown_config_id``; a share that does not open: ``hpke_decrypt_error``; a report already in a job
at this level: ``report_replayed``; a level released: ``batch_collected``; a sketch that fails, a malformed IDPF key:
``vdaf_invalid``), the others verified by the crate's round 0 with the leader's verifier share and answered
``continue`` (the reports that pass the checks verified in one call of the binding, ``helper_init_batch``). The answer
and the round-1 states (sealed to the records key) are recorded before the answer leaves; the same request again gets
the same answer (a job at a level already released is answered, every report ``batch_collected``, with nothing
recorded: there is nothing to continue).

**Second round** (:func:`continue_job`, ``AggregationJobContinueReq`` step 1): each report the leader continues is
finished with its verifier message (``vdaf_invalid`` when it does not verify), the others refused; the output
shares aggregated (both in one call, ``helper_finish_batch``) and the job recorded
(:meth:`~ldp.aggregators.poplar1_records.LevelRecords.finish_job`) before the answer leaves, so a repeated request is
answered from the record and no report is counted twice; a job not finished when its level was released (a stale
leader's) is refused, ``batch_collected``. Both records are in the store before the answer leaves (the crash point
``helper_job_recorded``, :mod:`ldp.aggregators.crashpoints`).

**Release** (:func:`aggregate_share`): the level released, then the window pruned once its last level is
(:mod:`ldp.aggregators.poplar1_prune`: the finished jobs' first rounds deleted).

A helper's tasks are prepared under the task's lock here (one job at a time per task), unlike Prio3's jobs; each
batch call releases the GIL and spreads the job's reports over threads (``ldp.prio.set_batch_threads``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

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
)
from ldp.aggregators.poplar1_messages import AggregationJobContinueReq, continue_message
from ldp.aggregators.poplar1_prune import prune
from ldp.aggregators.poplar1_records import LevelRecords, decode_param, release_level, write_json
from ldp.aggregators.state import TaskState
from ldp.errors import AggregatorError

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
        if (window, param.level) in levels.releases:  # every report batch_collected: nothing to continue
            return response
        rec = {"job": job_id, "window": window, "level": param.level, "param": param.to_bytes().hex(),
               "request_sha256": digest, "response": response.hex(),
               "reports": [p.report_share.report_id.hex() for p in init.prepare_inits],
               "rejected": {r.report_id.hex(): r.error.code for r in results if r.error is not None},
               "sealed_states": levels.records.sealer.seal_bytes(f"{job_id}.init", window,
                                                                 write_json(states).encode())}
        if not levels.records.write(levels.job_key(job_id, "init"), rec):
            rec = levels.records.read(levels.job_key(job_id, "init"))
        levels.taken.setdefault((window, param.level), set()).update(bytes.fromhex(r) for r in rec["reports"])
        at("helper_job_recorded")
        return bytes.fromhex(rec["response"])


def _checked(state: TaskState, window: int, param: Any, inits: list[PrepareInit]) -> list[ReportError | None]:
    """Each report's refusal before anything is opened (module docstring: a level released, a report replayed, a
    time not rounded or VDAF bytes of another length), ``None`` for those to verify."""
    task, levels = state.task, _levels(state)
    taken = levels.taken.get((window, param.level), set())
    released = (window, param.level) in levels.releases
    ok = fits(state.vdaf, [(p.report_share.public_share, p.report_share.encrypted_input_share) for p in inits])
    seen: set[bytes] = set()
    errors: list[ReportError | None] = []
    for p, fit in zip(inits, ok, strict=True):
        r, error = p.report_share, None
        if released:
            error = ReportError.batch_collected
        elif r.report_id in taken or r.report_id in seen:
            error = ReportError.report_replayed
        elif r.time % task.time_precision or not fit:
            error = ReportError.invalid_message
        seen.add(r.report_id)
        errors.append(error)
    return errors


def _first_round(helper: Any, state: TaskState, window: int, param: Any, inits: list[PrepareInit]
                 ) -> tuple[list[PrepareResp], dict[str, str]]:
    """Each report's round 0 at the helper, those :func:`_checked` passes in one call (``Poplar1.helper_init_batch``:
    open, ``check_input_share``, ``verify_init``, round 0's message with the leader's share, ``verify_next``; the
    GIL released): its answer, and the round-1 states of those continued (hex by ID)."""
    errors = _checked(state, window, param, inits)
    answers = iter(state.vdaf.helper_init_batch(helper.keypair, state.verify_key, state.task.task_id, param, [
        (p.report_share.report_id, p.report_share.time, p.report_share.public_share,
         p.report_share.encrypted_input_share, p.leader_prep_share)
        for p, error in zip(inits, errors, strict=True) if error is None]))
    results: list[PrepareResp] = []
    states: dict[str, str] = {}
    for p, error in zip(inits, errors, strict=True):
        rid = p.report_share.report_id
        if error is None:
            outcome = next(answers)
            if not isinstance(outcome, str):
                state1, msg0, next_share = outcome
                states[rid.hex()] = state1.hex()
                results.append(PrepareResp(rid, payload=continue_message(msg0, next_share)))
                continue
            error = ReportError[outcome]
        results.append(PrepareResp(rid, error=error))
    return results, states


def _finish_message(payload: bytes) -> bytes | None:
    """Round 1's verifier message of the leader's ``finish`` (``None`` for any other message: refused)."""
    from ldp.aggregators.messages import _ping_pong

    try:
        return _ping_pong(payload, 2, "finish")
    except MessageError:
        return None


def continue_job(helper: Any, state: TaskState, job_id: str, body: bytes) -> bytes:
    """A Poplar1 job's second round (module docstring); the encoded ``AggregationJobResp``: the reports continued
    finished and aggregated in one call (``Poplar1.helper_finish_batch``, the GIL released)."""
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
        if (window, param.level) in levels.releases:
            raise AggregatorError(f"job {job_id} is at level {param.level} of window {window}, released before it "
                                  "finished", "batch_collected", 409)
        states = json.loads(levels.records.sealer.open_bytes(f"{job_id}.init", window, init["sealed_states"]))
        rejected = {bytes.fromhex(r): c for r, c in init["rejected"].items()}
        items: list[tuple[bytes, bytes, bytes | None]] = []
        for item in req.prepare_continues:
            held = states.pop(item.report_id.hex(), None)
            if held is None:
                raise AggregatorError("the continue names a report this job did not continue", "invalid_message")
            items.append((item.report_id, bytes.fromhex(held), _finish_message(item.payload)))
        todo = [(rid, s, m) for rid, s, m in items if m is not None]
        finished, share = vdaf.helper_finish_batch(param, [s for _, s, _ in todo], [m for _, _, m in todo])
        accepted = {rid for (rid, _, _), ok in zip(todo, finished, strict=True) if ok}
        results = [PrepareResp(rid, finished=True) if rid in accepted
                   else PrepareResp(rid, error=ReportError.vdaf_invalid) for rid, _, _ in items]
        rejected.update({rid: ReportError.vdaf_invalid.code for rid, _, _ in items if rid not in accepted})
        rejected.update({bytes.fromhex(r): ReportError.vdaf_invalid.code for r in states})  # left out by the leader
        response = AggregationJobResp(tuple(results)).to_bytes()
        rec = levels.finish_job(job_id, window, param.level, [rid for rid, _, _ in items if rid in accepted], rejected,
                                share.to_bytes(), continue_sha256=digest, response=response.hex())
        at("helper_job_recorded")
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
        prune(helper, state)
    return AggregateShare(bytes.fromhex(rec["encrypted_share"])).to_bytes()
