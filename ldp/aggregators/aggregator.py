"""What both aggregators share (issue 71, item 3; the base class of :class:`~ldp.aggregators.helper.Helper` and
:class:`~ldp.aggregators.leader.Leader`): their tasks, each with its state (:mod:`ldp.aggregators.state`: one
object per task ID), their records in their own role's prefix of their store, their HPKE key pair, the noise
source and the clock, and the answers both give: the HPKE config list and the status.

Each job's share is sealed at rest to the aggregator's ``records_key`` (:mod:`ldp.aggregators.sealing`; default its
HPKE key pair), and a released window's job records are deleted ``job_retention`` seconds after the release
(:meth:`Aggregator.prune`; default 0: at once).
"""

from __future__ import annotations

import random
import time as _time
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from ldp.aggregators.records import TaskRecords
from ldp.aggregators.release import task_terms
from ldp.aggregators.sealing import ShareSealer
from ldp.aggregators.state import TaskState
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError
from ldp.storage.base import Store
from ldp.storage.roles import RoleStore, aggregator_role

__all__ = ["Aggregator"]

S = TypeVar("S", bound=TaskState)


class Aggregator(Generic[S]):
    """What both aggregators share (module docstring): ``state`` holds each task's, by task ID (``S``: the role's
    state of a task, :class:`~ldp.aggregators.state.TaskState` or the leader's)."""

    role = ""

    def __init__(self, tasks: Sequence[Task], store: Store, keypair: Any, verify_keys: Mapping[bytes, bytes], *,
                 noise_source: random.Random | None = None, clock: Any = _time.time, records_key: Any = None,
                 job_retention: float = 0.0) -> None:
        if not job_retention >= 0:
            raise ValueError(f"job_retention must be at least 0 s, got {job_retention}")
        self.store = store if isinstance(store, RoleStore) else RoleStore(store, aggregator_role(self.role))
        self.keypair, self.clock, self.noise_source = keypair, clock, noise_source
        self.records_key = records_key if records_key is not None else keypair
        self.job_retention = job_retention
        self.state: dict[bytes, S] = {}
        for task in tasks:
            if task.task_id in self.state:
                raise ValueError(f"task {task.id_text} is given twice")
            key = verify_keys.get(task.task_id)
            vdaf = task.prio3()
            if not isinstance(key, bytes) or len(key) != vdaf.verify_key_size:
                raise ValueError(f"task {task.id_text} ({task.metric}): its verify key must be "
                                 f"{vdaf.verify_key_size} bytes (the secret both aggregators share)")
            sealer = ShareSealer(self.records_key, vdaf, self.role, task.task_id)
            modulus, length = (1, 0) if task.is_poplar1 else (vdaf.modulus, vdaf.output_len)  # Poplar1's: per level
            records = TaskRecords(self.store, self.role, task, modulus, length, sealer)
            self.state[task.task_id] = state = self._task_state(task, vdaf, key, records)
            if task.is_poplar1:
                from ldp.aggregators.poplar1_records import LevelRecords

                state.poplar1 = LevelRecords(records)
        self.prune()

    def _task_state(self, task: Task, vdaf: Any, verify_key: bytes, records: TaskRecords) -> S:
        """A task's state at this role, its records read from the store (each role's own)."""
        raise NotImplementedError

    def task_state(self, task_id: bytes) -> S:
        """The state of a task; ``unrecognized_task`` (404) for a task this aggregator does not hold."""
        try:
            return self.state[task_id]
        except KeyError:
            raise AggregatorError("no such task here", "unrecognized_task", 404) from None

    def task(self, task_id: bytes) -> Task:
        """A task (as :meth:`task_state`)."""
        return self.task_state(task_id).task

    @property
    def tasks(self) -> dict[bytes, Task]:
        """The tasks by ID, in the order given."""
        return {tid: s.task for tid, s in self.state.items()}

    @property
    def records(self) -> dict[bytes, TaskRecords]:
        """Each task's records by task ID (the objects the aggregator uses, not copies)."""
        return {tid: s.records for tid, s in self.state.items()}

    def prune(self) -> int:
        """Delete the job records of the windows released ``job_retention`` seconds ago or more, in every task
        (:meth:`~ldp.aggregators.records.TaskRecords.prune`; a Poplar1 task's: :mod:`ldp.aggregators.poplar1_prune`);
        the number of objects deleted."""
        from ldp.aggregators import poplar1_prune

        now = self.clock()
        total = 0
        for state in self.state.values():
            with state.lock:
                total += state.records.prune(now, self.job_retention)
                if state.poplar1 is not None:  # a Poplar1 window after its last level
                    total += poplar1_prune.prune(self, state)
        return total

    def hpke_config_list(self) -> bytes:
        """DAP's HpkeConfigList of this aggregator (devices seal its input shares to it)."""
        from ldp import prio

        return prio.encode_hpke_config_list([self.keypair.config])

    def status(self) -> dict[str, Any]:
        """Every task's counts (valid reports and refusals per window, collected windows), for ``/status``, with
        what the task promises (:func:`~ldp.aggregators.release.task_terms`: its noise, minimum batch size, each
        release's central (ε, δ) per report and per device, and the per-device figure over its releases)."""
        tasks = []
        for s in self.state.values():
            entry = s.records.summary()
            entry.update(task_terms(s.task, s.records.collections.values()))
            entry["disagreements"] = [dict(d) for _, d in sorted(s.disagreements.items())]
            if s.poplar1 is not None:
                entry["levels"] = s.poplar1.summary()
            tasks.append(entry)
        return {"role": self.role, "tasks": tasks}
