"""A Poplar1 window pruned after its last level (issue 89, item 2; ``docs/two-aggregators.md`` §17), as a Prio3
window's job records are after its release (:meth:`~ldp.aggregators.records.TaskRecords.prune`).

A window of a Poplar1 task is **final** at an aggregator (:func:`final_windows`) once no new level of it can be
admitted (:func:`~ldp.aggregators.poplar1_records.admit_param`): a level ``bits − 1`` is recorded (a new level
would be at least ``bits``), or ``task.levels`` levels are; and every level recorded is released there, the last one
at least ``job_retention`` seconds ago (default 0: at once). What only further levels would need is then deleted
(:func:`prune`):

* at the leader, the window's stored reports (dropped from memory, and each chunk whose reports all are dropped
  deleted: :meth:`~ldp.aggregators.leader.Leader._consumed`, as a Prio3 job's reports once finished), and the plan
  of each of its finished jobs;
* at the helper, the first-round record of each of its finished jobs (its answer and its sealed verification
  states).

What a repeated request is answered from stays: each level's parameter (a level asked again with it is the same
collection; with another one, or a new level, it is refused), each finished job's record (the level's report IDs,
count and checksum, its refusals, and at the helper the answer a repeated second round gets), and each release (the
sealed shares answered again, with no fresh noise: :func:`~ldp.aggregators.poplar1_records.release_level` answers
the recorded one). A plan or first round whose job never finished is kept (as Prio3 keeps such a plan); a released
level runs no job again, and the helper refuses a second round at a released level (``batch_collected``).

**Crash-safe.** Each deletion is of a record whose content a kept record holds (a plan's reports are its finished
job's; a first round's outcome is its finished job's) or of reports no released level reads again, so a process
killed between two deletions leaves a window partly pruned whose every level is released: nothing runs for it again,
no level is admitted, and every release is answered from its record. The next prune on that aggregator (after its
next release, or when it starts: :meth:`~ldp.aggregators.aggregator.Aggregator.prune`) finishes the window: the
window is marked pruned (:attr:`~ldp.aggregators.poplar1_records.LevelRecords.pruned`, in memory) only after its
last deletion. A chunk read back by a leader started again holds the dropped reports still: they are dropped again.
"""

from __future__ import annotations

from typing import Any

from ldp.aggregators.poplar1_records import LevelRecords
from ldp.aggregators.state import TaskState

__all__ = ["final_windows", "prune"]


def final_windows(levels: LevelRecords, now: float, retention: float) -> list[int]:
    """The windows not yet pruned whose every level is released, the last ``retention`` seconds before ``now`` or
    more, and to which no level can be added (module docstring)."""
    task = levels.records.task
    bits = int(task.vdaf_params["bits"])
    out = []
    for window, recorded in sorted(levels.params.items()):
        if window in levels.pruned or not (max(recorded) == bits - 1 or len(recorded) >= task.levels):
            continue
        released = [levels.releases.get((window, lv)) for lv in recorded]
        if all(r is not None for r in released) and max(float(r.get("released_at", 0)) for r in released
                                                         if r is not None) + retention <= now:
            out.append(window)
    return out


def _job_records(levels: LevelRecords, window: int, kind: str) -> list[str]:
    """The keys of ``kind`` (``plan``, ``init``) of the jobs of ``window`` that have a finished record."""
    finished = {job for (w, _), jobs in levels.finished.items() if w == window for job in jobs}
    keys = levels.records.store.list(f"{levels.prefix}jobs/")
    return [key for key in keys if key.endswith(f".{kind}.json")
            and key.rsplit("/", 1)[1].removeprefix("job-").split(".", 1)[0] in finished]


def _drop_reports(leader: Any, state: Any, window: int) -> int:
    """The leader's stored reports of ``window`` forgotten and each chunk left empty deleted; the chunks deleted."""
    task = state.task
    with leader.state_lock:
        rids = [rid for rid, s in state.stored.items() if task.window(s.report.time) == window]
        before = set(state.chunks)
    leader._consumed(state, rids)
    with leader.state_lock:
        return len(before - set(state.chunks))


def prune(aggregator: Any, state: TaskState) -> int:
    """Prune every final window of a Poplar1 task at ``aggregator`` (its role's part: module docstring), under the
    task's lock (the caller's); the number of objects deleted (records and chunks)."""
    levels = state.poplar1
    if not isinstance(levels, LevelRecords):
        return 0
    deleted = 0
    for window in final_windows(levels, aggregator.clock(), aggregator.job_retention):
        kind = "plan" if aggregator.role == "leader" else "init"
        for key in _job_records(levels, window, kind):
            levels.records.store.delete(key)
            deleted += 1
        if aggregator.role == "leader":
            deleted += _drop_reports(aggregator, state, window)
        levels.pruned.add(window)
    return deleted
