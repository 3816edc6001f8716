"""What an aggregator holds of each of its tasks in memory: one :class:`TaskState` per task ID (issue 83, item 3),
the leader's own part in :class:`LeaderTaskState`.

The durable part is the task's records (:class:`~ldp.aggregators.records.TaskRecords`: each job, plan and release
created once in the store); everything else here is rebuilt from the store when an aggregator starts (the leader's
reports from its chunks), except the leader's door counters, which start again from zero.

The locks are the aggregator's, unchanged by where the state lives. At the leader, a task's runs of jobs, its
releases and put-backs are taken one at a time under its :attr:`TaskState.lock`; within a run, up to
``jobs_in_flight`` jobs of distinct reports are with the helper at once (:func:`ldp.aggregators.jobs.run_jobs`).
At the helper, the lock is held to check a job's reports and reserve them (:attr:`TaskState.running`), and again
to record the job, not while its reports are prepared: two jobs of distinct reports are prepared at once, a job
whose reports (or ID) another job holds waits for it, and a release or an abandon waits for the jobs it concerns
(:attr:`TaskState.idle`), so the outcome is always that of some serial order. The records have their own lock
(:class:`~ldp.aggregators.records.TaskRecords`). The leader's door and its jobs share
:attr:`LeaderTaskState.seen`, ``stored``, ``chunks`` and ``planned`` under the leader's one ``state_lock``
(:class:`~ldp.aggregators.leader.Leader`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ldp.aggregators.commit import GroupCommit
from ldp.aggregators.records import TaskRecords
from ldp.aggregators.task import Task

__all__ = ["TaskState", "LeaderTaskState", "StoredReport"]


@dataclass(eq=False)
class TaskState:
    """One task at one aggregator: the public task, its Prio3 instance (:meth:`~ldp.aggregators.task.Task.prio3`),
    the verify key both aggregators share, the task's records, the lock its jobs and releases are taken under, and
    the windows the two sides disagree on."""

    task: Task
    vdaf: Any
    verify_key: bytes
    records: TaskRecords
    lock: threading.Lock = field(default_factory=threading.Lock)
    disagreements: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The windows whose release the two sides disagree on (counts or checksums), by window: in memory, shown on
    ``/status`` and logged; cleared when a release of the window succeeds (issue 84, item 4)."""
    running: dict[str, tuple[int, frozenset[bytes]]] = field(default_factory=dict)
    """The helper's jobs being prepared (out of :attr:`lock`), by part ID: each one's window and report IDs."""
    idle: threading.Condition = field(init=False)
    """Notified (under :attr:`lock`) whenever a job leaves :attr:`running`."""
    poplar1: Any = None
    """A Poplar1 task's level records (:class:`~ldp.aggregators.poplar1_records.LevelRecords`), else ``None``."""

    def __post_init__(self) -> None:
        self.idle = threading.Condition(self.lock)

    def wait_while(self, busy: Callable[[], bool]) -> None:
        """Wait (holding :attr:`lock`, which the wait lets go of) until ``busy()`` is false."""
        while busy():
            self.idle.wait()


@dataclass(eq=False)
class StoredReport:
    """A report taken at the leader's door: its ID, its bytes, the report decoded, the leader's input share opened at
    the door (``None`` once read back from its chunk after a restart: opened again when prepared) and its chunk's
    key."""

    rid: bytes
    body: bytes
    report: Any
    share: bytes | None
    chunk: str = ""


@dataclass(eq=False, kw_only=True)
class LeaderTaskState(TaskState):
    """One task at the leader: the :class:`TaskState`, and

    * ``door``: the refusals at upload by code (in memory only: since the process started);
    * ``seen``: every report ID stored or prepared (an ID is taken here before its report is written, so that two
      copies racing in are one stored and one refused);
    * ``stored``: the stored reports in no finished job, by ID;
    * ``chunks``: each chunk object's report IDs in no finished job (a chunk is deleted once none is left);
    * ``planned``: the report IDs of the jobs planned (recorded before the helper is asked);
    * ``failures``: each job's last failure (in memory: the reason a job set aside gives);
    * ``commit``: the door's group commit (:mod:`ldp.aggregators.commit`), which stores the reports arriving
      together as one chunk."""

    commit: GroupCommit[StoredReport] = field(init=False)
    door: Counter[str] = field(default_factory=Counter)
    seen: set[bytes] = field(default_factory=set)
    stored: dict[bytes, StoredReport] = field(default_factory=dict)
    chunks: dict[str, set[bytes]] = field(default_factory=dict)
    planned: set[bytes] = field(default_factory=set)
    failures: dict[str, str] = field(default_factory=dict)
    plans_read: set[str] = field(default_factory=set)
    """A replica's (:mod:`ldp.aggregators.scale_out`): the plans it has read, by job ID."""
    chunks_read: set[str] = field(default_factory=set)
    """A replica's: the chunk keys it has read (every replica's chunks)."""
