"""The leader's aggregation jobs (issue 71, item 3; issue 84, item 2): planned by window, bounded in reports and in
bytes, run with the helper, and never able to block a window.

**Planning.** The stored reports in no job, by window, cut into jobs of at most ``job_size`` reports and
``job_bytes`` bytes (a report counts its DAP bytes and :data:`REPORT_INIT_OVERHEAD`: a report's entry in the job,
its public share, the helper's ciphertext and the leader's verifier share, is never longer, the leader's own
ciphertext it replaces being longer than its verifier share). Each job's plan (its ID, window, reports) is recorded
before the helper is asked, so a leader killed mid-job redoes the same job.

**Attempts.** Each attempt is recorded before it is sent; a job that failed is tried again no sooner than
``RETRY_BASE · 2^(attempts-1)`` seconds after its last attempt (at most an hour; a job interrupted by the leader's
stop, at once when it starts again), and after ``max_job_attempts``
attempts it is **set aside** with its reason, shown on ``/status``, until the operator puts it back
(:meth:`~ldp.aggregators.leader.Leader.put_back`): a job that keeps failing delays no other job, and a window with
a job set aside is not released (``jobs_set_aside``). A helper that does not answer (``helper_unavailable``) or
refuses the leader's token stops the run (the next jobs would fail alike).

**In flight.** Up to ``jobs_in_flight`` jobs of one run are with the helper at once, from as many threads, each of
distinct reports; the helper prepares jobs of distinct reports at once too (:mod:`ldp.aggregators.helper`).

**Scaled out** (:mod:`ldp.aggregators.scale_out`): only the replica holding the planner lease plans, and a job's
attempt is claimed by creating its record (one replica gets each), held ``job_lease`` seconds.

**Splitting.** A job the helper cannot take, or whose answer the leader cannot use, is split in two until the
reports at fault are alone; each half is a new job (its ID derived from its parent's, so a leader killed while
splitting makes the same halves), and the parent's record says it was split. Two cases:

* the helper **refused the whole job** (any 4xx but 401 and 403: ``too_large``, ``invalid_message``…): it recorded
  nothing, so the halves go as they are; a job of one report refused so is that report's refusal, with the helper's
  code, recorded in the leader's job record (the helper counts every whole job it refuses, ``refused_jobs``);
* the helper **answered, but the answer cannot be used** (it does not decode, it is for other reports, the helper
  recorded this job ID from another request, or a report the helper finished does not finish at the leader: the two
  sides would count different reports): the helper has recorded the job, so the leader first records its intent
  and asks the helper to **abandon** it (``DELETE``: the helper takes the job's share and reports out), then splits
  it. A report alone whose answer still cannot be used is refused with ``helper_disagreed`` on the leader's side,
  and its job is abandoned on the helper's: neither counts it. A helper that does not say it took the job's share
  out (another implementation: DAP-09's ``DELETE`` discards a job's state, and Janus 0.7 keeps its share counted; or
  404/405) is not split after: the job is set aside instead.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ldp.aggregators.crashpoints import at
from ldp.aggregators.messages import (
    AggregationJobInitReq,
    AggregationJobResp,
    MessageError,
    PrepareInit,
    ReportError,
    ReportShare,
    initialize,
)
from ldp.aggregators.scale_out import lease_held
from ldp.errors import AggregatorError

if TYPE_CHECKING:
    import threading

    from ldp.aggregators.state import LeaderTaskState, StoredReport

__all__ = ["MAX_JOB_BYTES", "DEFAULT_JOB_BYTES", "DEFAULT_MAX_JOB_ATTEMPTS", "REPORT_INIT_OVERHEAD", "RETRY_BASE",
           "DISAGREED", "DEFAULT_JOBS_IN_FLIGHT", "MAX_JOBS_IN_FLIGHT", "plan_jobs", "child_job_ids", "new_job_id",
           "run_jobs", "retry_gate", "refused_whole", "aside_error"]

logger = logging.getLogger("ldp.aggregators")

MAX_JOB_BYTES = 64 * 2 ** 20
"""The helper's limit on a job's body (:data:`ldp.aggregators.routes.MAX_BODY` is this)."""
DEFAULT_JOB_BYTES = 16 * 2 ** 20
"""Bytes of reports per job (a quarter of the helper's limit)."""
DEFAULT_MAX_JOB_ATTEMPTS = 12
"""Attempts of a job before it is set aside (with :data:`RETRY_BASE` doubling to an hour: about half a day)."""
REPORT_INIT_OVERHEAD = 64
"""Bytes a report's entry in a job may take beyond its DAP bytes (module docstring; the entry's length prefixes)."""
RETRY_BASE = 30.0
"""Seconds before a job's second attempt; each next waits twice as long, at most an hour."""
DEFAULT_JOBS_IN_FLIGHT = 2
"""Jobs with the helper at once (module docstring): two keep both of a 2-core machine's cores busy."""
MAX_JOBS_IN_FLIGHT = 64
"""The most jobs in flight a leader takes (each holds a job's reports in memory, up to ``job_bytes``)."""
DISAGREED = "helper_disagreed"
"""The code of a report alone in a job whose answer the leader cannot use (module docstring)."""


class Leader(Protocol):
    """What the jobs use of :class:`~ldp.aggregators.leader.Leader` (which imports this module)."""

    helper: Any
    keypair: Any
    clock: Any
    job_size: int
    job_bytes: int
    max_job_attempts: int
    jobs_in_flight: int
    replica: str | None
    job_lease: float
    state_lock: threading.Lock

    def may_plan(self) -> bool: ...

    def pending(self, task_id: bytes) -> list[bytes]: ...

    def _report(self, state: LeaderTaskState, rid: bytes) -> StoredReport: ...

    def _consumed(self, state: LeaderTaskState, report_ids: list[bytes]) -> None: ...


def new_job_id() -> str:
    """A new aggregation job's ID: 16 random bytes, base64url (DAP)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode()


def plan_jobs(sizes: list[tuple[bytes, int]], job_size: int, job_bytes: int) -> list[list[bytes]]:
    """Reports (ID, bytes) cut in order into jobs of at most ``job_size`` reports and ``job_bytes`` bytes each
    (a report larger than ``job_bytes`` alone in its job)."""
    jobs: list[list[bytes]] = []
    current: list[bytes] = []
    used = 0
    for rid, size in sizes:
        cost = size + REPORT_INIT_OVERHEAD
        if current and (len(current) == job_size or used + cost > job_bytes):
            jobs.append(current)
            current, used = [], 0
        current.append(rid)
        used += cost
    if current:
        jobs.append(current)
    return jobs


def child_job_ids(job_id: str) -> tuple[str, str]:
    """The IDs of a split job's two halves: 22 base64url characters of SHA-256 of the parent's ID and the side
    (the same halves however often the split is redone)."""
    def child(side: bytes) -> str:
        digest = hashlib.sha256(b"ldp split job " + job_id.encode() + side).digest()
        return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()

    return child(b"/0"), child(b"/1")


def run_jobs(leader: Leader, state: LeaderTaskState, window: int | None, *, force: bool = False) -> Counter[str]:
    """The jobs of one task (under its lock): interrupted ones first, then the stored reports in no job, of one
    window or all; ``force`` (a collection) tries jobs whose next attempt is not due yet. Returns counts."""
    records = state.records
    totals: Counter[str] = Counter()
    for job_id, plan in records.plans():
        if job_id in records.jobs or job_id in records.aside:
            continue  # finished (or set aside) meanwhile: a half of a job split earlier in this loop
        if window is None or plan["window"] == window:
            totals.update(_attempt(leader, state, job_id, plan["window"],
                                   [bytes.fromhex(r) for r in plan["reports"]], force))
    by_window: dict[int, list[tuple[bytes, int]]] = {}
    for rid in leader.pending(state.task.task_id) if leader.may_plan() else []:
        stored = leader._report(state, rid)
        w = state.task.window(stored.report.time)
        if window is None or w == window:
            by_window.setdefault(w, []).append((rid, len(stored.body)))
    # up to jobs_in_flight jobs, each of its own reports, with the helper at once: one job's Python (its messages,
    # checks and records, under the GIL) runs while another's batch calls (the GIL released) fill the cores
    # (issue 86, item 2). The first error stops the planning; the jobs in flight finish, then it is raised.
    with ThreadPoolExecutor(leader.jobs_in_flight, thread_name_prefix="ldp-job") as pool:
        flying: set[Future[Counter[str]]] = set()
        try:
            for w, sizes in sorted(by_window.items()):
                for chunk in plan_jobs(sizes, leader.job_size, leader.job_bytes):
                    while len(flying) >= leader.jobs_in_flight:
                        done, flying = wait(flying, return_when=FIRST_COMPLETED)
                        for job in done:
                            totals.update(job.result())
                    job_id = _plan(leader, state, w, chunk)
                    flying.add(pool.submit(_attempt, leader, state, job_id, w, chunk, force))
        finally:
            finished, _ = wait(flying)
        for job in finished:
            totals.update(job.result())
    return totals


def _plan(leader: Leader, state: LeaderTaskState, window: int, report_ids: list[bytes],
          job_id: str | None = None) -> str:
    """Record a job's plan (a new random ID unless given); its ID."""
    job_id = job_id or new_job_id()
    plan = {"job": job_id, "window": window, "reports": [r.hex() for r in report_ids], "created": leader.clock()}
    state.records.write(state.records.plan_key(job_id), plan)
    with leader.state_lock:
        state.planned.update(report_ids)
    at("leader_job_planned")
    return job_id


def _attempt(leader: Leader, state: LeaderTaskState, job_id: str, window: int, report_ids: list[bytes],
             force: bool) -> Counter[str]:
    """One attempt of a job, if due (module docstring); counts."""
    records, now = state.records, leader.clock()
    if job_id in records.abandoned:  # the leader was killed between asking the helper to abandon it and splitting
        return _abandon_and_split(leader, state, job_id, window, report_ids, "abandoned before a restart")
    if (gated := retry_gate(leader, state, job_id, window, force)) is not None:
        return gated
    count, last = records.attempts.get(job_id, (0, 0.0))
    if leader.replica is not None and lease_held(count, last, now, leader.job_lease):
        return Counter(held=1)  # its last attempt is another replica's (or this one's), still within its lease
    if records.attempt(job_id, now) is None:
        return Counter(held=1)  # another replica claimed this attempt first: it holds the job
    try:
        return _send(leader, state, job_id, window, report_ids)
    except AggregatorError as exc:
        state.failures[job_id] = f"{exc.code}: {exc}"
        raise


def retry_gate(leader: Leader, state: LeaderTaskState, job_id: str, window: int, force: bool) -> Counter[str] | None:
    """Whether a job's next attempt may go (module docstring, *Attempts*), from its attempts so far
    (``state.records.attempts``: how many, the last's time): ``None`` if due; else ``set_aside`` (after
    ``max_job_attempts``: the job set aside with its last failure) or ``waiting`` (its last attempt failed in this
    process and ``now < last + min(3600, RETRY_BASE · 2^(a-1))`` after ``a`` attempts, unless ``force``). Prio3's
    jobs and Poplar1's (:mod:`ldp.aggregators.poplar1_scale_out`) alike."""
    now = leader.clock()
    count, last = state.records.attempts.get(job_id, (0, 0.0))
    if count >= leader.max_job_attempts:
        reason = state.failures.get(job_id, "each attempt stopped without an answer (the leader killed?)")
        state.records.set_aside(job_id, window, f"{count} attempts did not finish it; the last: {reason}", now)
        logger.error("job %s of task %s set aside after %d attempts: %s", job_id, state.task.id_text, count, reason)
        return Counter(set_aside=1)
    if job_id in state.failures and not force and now < last + min(3600.0, RETRY_BASE * 2 ** (count - 1)):
        return Counter(waiting=1)
    return None


def refused_whole(exc: AggregatorError) -> bool:
    """Whether the helper refused a whole job, having recorded nothing (module docstring, *Splitting*): a 4xx but
    401, 403, ``job_mismatch`` and ``job_abandoned`` (those mean it holds this job ID); ``helper_unavailable`` and
    5xx are failures to try again."""
    return (exc.code not in ("helper_unavailable", "job_mismatch", "job_abandoned")
            and exc.status not in (401, 403) and exc.status < 500)


def aside_error(what: str, job_ids: list[str]) -> AggregatorError:
    """The answer to a collection while jobs of its batch are set aside: ``jobs_set_aside`` (409)."""
    return AggregatorError(f"{what} has {len(job_ids)} job(s) set aside ({', '.join(job_ids)}): their reports are in "
                           f"neither side's count; put them back (POST /tasks/{{task}}/jobs/put_back) or wait",
                           "jobs_set_aside", 409)


@dataclass
class OpenedJob:
    """A job's first step at the leader (:func:`open_job`), before anything is sent or recorded: the reports it
    refuses at once, its Prio3 states, its ``AggregationJobInitReq``'s reports and the request's bytes (empty when
    no report is left to send)."""

    refused: dict[bytes, str]
    states: dict[bytes, Any]
    inits: list[PrepareInit]
    body: bytes


def open_job(leader: Leader, state: LeaderTaskState, window: int, report_ids: list[bytes]) -> OpenedJob:
    """A job's reports read, each share opened (unless kept from the door) and its preparation started in one call
    (the GIL released); nothing sent, nothing recorded."""
    task, records, vdaf = state.task, state.records, state.vdaf
    refused: dict[bytes, str] = {}
    todo: list[StoredReport] = []
    for rid in report_ids:
        if window in records.collections:
            refused[rid] = ReportError.batch_collected.code
        else:
            todo.append(leader._report(state, rid))
    started = vdaf.leader_init_batch(leader.keypair, state.verify_key, task.task_id, [
        (s.rid, s.report.time, s.report.public_share, s.report.leader_ciphertext, s.share) for s in todo])
    states: dict[bytes, Any] = {}
    inits: list[PrepareInit] = []
    for stored, outcome in zip(todo, started, strict=True):
        if isinstance(outcome, str):
            refused[stored.rid] = outcome
            if outcome == ReportError.hpke_unknown_config_id.code:
                logger.warning("report %s of task %s: its leader share is sealed to a key this leader no longer "
                               "holds (rotated?): refused", stored.rid.hex(), task.id_text)
            continue
        states[stored.rid], prep_share = outcome
        report = stored.report
        inits.append(PrepareInit(ReportShare(stored.rid, report.time, report.public_share, report.helper_ciphertext),
                                 initialize(prep_share)))
    body = AggregationJobInitReq(tuple(inits)).to_bytes() if inits else b""
    return OpenedJob(refused, states, inits, body)


def _send(leader: Leader, state: LeaderTaskState, job_id: str, window: int, report_ids: list[bytes]
          ) -> Counter[str]:
    """Prepare a job with the helper (module docstring): finished, split, or an error that stops the run."""
    task, records, vdaf = state.task, state.records, state.vdaf
    opened = open_job(leader, state, window, report_ids)
    refused, states, inits = opened.refused, opened.states, opened.inits
    share = vdaf.aggregate_init()
    accepted: list[bytes] = []
    if inits:
        try:
            answer = leader.helper.aggregation_job(task.task_id, job_id, opened.body)
        except AggregatorError as exc:
            if exc.code in ("job_mismatch", "job_abandoned"):
                return _abandon_and_split(leader, state, job_id, window, report_ids, f"{exc.code}: {exc}")
            if not refused_whole(exc):
                raise
            return _split(leader, state, job_id, window, report_ids, exc.code, f"the helper refused it: {exc}")
        outcome = _finish(state, inits, states, answer, refused)
        if isinstance(outcome, str):
            return _abandon_and_split(leader, state, job_id, window, report_ids, outcome)
        accepted, share = outcome
        at("leader_job_answered")
    records.finish_job(job_id, window, accepted, refused, share.field_elements())
    leader._consumed(state, report_ids)
    return Counter(prepared=len(accepted), refused=len(refused), jobs=1)


def _finish(state: LeaderTaskState, inits: list[PrepareInit], states: dict[bytes, Any], answer: bytes,
            refused: dict[bytes, str]) -> tuple[list[bytes], Any] | str:
    """The helper's answer applied: (the reports both finished, the job's share), or why it cannot be used."""
    try:
        resp = AggregationJobResp.from_bytes(answer)
        if [r.report_id for r in resp.prepare_resps] != [i.report_share.report_id for i in inits]:
            return "the helper answered for other reports"
        answered = [(r.report_id, r.prep_msg) for r in resp.prepare_resps if r.error is None]
    except MessageError as exc:  # no DAP-09 answer, or one that is not Prio3's one round (a finish message)
        return f"the helper's answer does not decode: {exc}"
    finished, share = state.vdaf.leader_finish_batch([states[rid] for rid, _ in answered],
                                                     [msg for _, msg in answered])
    if not all(finished):  # the helper counted a report the leader cannot: the two would disagree
        return "a report the helper finished does not finish at the leader"
    accepted: list[bytes] = []
    for r in resp.prepare_resps:
        if r.error is not None:
            refused[r.report_id] = r.error.code
        else:
            accepted.append(r.report_id)
    return accepted, share


def _split(leader: Leader, state: LeaderTaskState, job_id: str, window: int, report_ids: list[bytes], code: str,
           reason: str) -> Counter[str]:
    """Split a job the helper did not count (module docstring): two halves planned and run, the parent recorded as
    split; a job of one report is that report's refusal with ``code``."""
    records, task = state.records, state.task
    logger.warning("job %s of task %s (%d report(s)): %s", job_id, task.id_text, len(report_ids), reason)
    zero = [0] * records.length
    if len(report_ids) == 1:
        records.finish_job(job_id, window, [], {report_ids[0]: code}, zero, reason=reason)
        leader._consumed(state, report_ids)
        return Counter(refused=1, jobs=1)
    half = len(report_ids) // 2
    halves = list(zip(child_job_ids(job_id), (report_ids[:half], report_ids[half:]), strict=True))
    for child, part in halves:
        if records.job(child) is None:
            _plan(leader, state, window, part, child)
    at("leader_job_halved")
    records.finish_job(job_id, window, [], {}, zero, split_into=[c for c, _ in halves], reason=reason)
    totals = Counter(split=1)
    for child, part in halves:
        if child not in records.jobs and child not in records.aside:
            totals.update(_attempt(leader, state, child, window, part, force=True))
    return totals


def _abandon_and_split(leader: Leader, state: LeaderTaskState, job_id: str, window: int, report_ids: list[bytes],
                       reason: str) -> Counter[str]:
    """Abandon a job the helper recorded (the intent recorded first, then ``DELETE`` at the helper), then split it
    (module docstring)."""
    records = state.records
    records.abandon(job_id, reason)
    at("leader_job_abandoning")
    try:
        removed, why = leader.helper.abandon_job(state.task.task_id, job_id), "it did not say it took its share out"
    except AggregatorError as exc:
        if exc.status not in (404, 405):
            raise
        removed, why = False, f"it cannot abandon it ({exc.code}, HTTP {exc.status})"
    if not removed:
        # a helper of another implementation (DAP-09's DELETE discards a job's state, not its counted share): the
        # job cannot be split and sent again; set aside, for the operator (docs/two-aggregators.md §16)
        why = f"{reason}; the helper: {why} (another implementation?)"
        records.set_aside(job_id, window, why, leader.clock())
        logger.error("job %s of task %s set aside: %s", job_id, state.task.id_text, why)
        return Counter(set_aside=1)
    return _split(leader, state, job_id, window, report_ids, DISAGREED, reason)
