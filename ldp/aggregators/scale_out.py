"""An aggregator over several processes sharing its store (issue 86, item 4; docs/scale-out.md).

``ldp serve --role leader|helper --replica NAME`` runs one replica of an aggregator: any number of them over the same
store, each under a name it claims in the store (``aggregators/<role>/replicas/<NAME>/lease/``, a lease of
:mod:`ldp.storage.lease`: a second process under a live name exits with status 3), instead of the one process per
role and store that holds the role's lease. What each guarantee needs is in the store, never in one process's memory:

* **Doors.** Each leader replica writes the uploads it takes as chunks of its own, ``reports/<NAME>/chunk-*``, and
  refuses the replays it can see (its own chunks, every report in a job). A report uploaded to two replicas is in
  two chunks: it is planned into one job only (below), so it is counted once.
* **Planning** is one process at a time: the replica that holds the planner lease
  (``aggregators/leader/planner/lease/``, taken over when its holder dies) reads every replica's chunks, and plans
  each report ID in no job into exactly one job (a report ID planned, prepared or twice in the chunks is planned once;
  a chunk all of whose reports are in finished jobs is deleted).
* **Driving** is any replica whose ``aggregate_every`` is not 0, Janus's job-driver model: a replica claims a job's
  next attempt by creating its ``attempt-<n>`` record (the store's create-if-absent: of two drivers exactly one gets
  attempt ``n``), and holds it for ``job_lease`` seconds, after which another driver may claim attempt ``n + 1``
  (the holder died). Attempts count toward ``max_job_attempts`` as before. A job's outcome is its record, created
  once: two drivers that ran the same job (a holder paused past its lease) produce the same request and the helper's
  recorded answer, and the second finds the first's record.
* **Helpers.** Each helper replica reads the records the others wrote before it prepares a job or releases a window
  (:meth:`~ldp.aggregators.records.TaskRecords.refresh`), so a report prepared in one replica's job is refused as a
  replay in another's; a window in which the records show a report counted in two jobs (two replicas racing on two
  jobs of one report from a misbehaving leader) is not released (``batch_mismatch``).
* **Collection** may be asked of any leader replica: it reads every record first, drives the window's jobs, and
  answers ``jobs_in_progress`` (a 202 to a DAP collection job's poll) while another replica holds one of them.
* **Poplar1 levels** (:mod:`ldp.aggregators.poplar1_scale_out`): the planner plans an admitted level's jobs once,
  every driver claims and runs them as it does Prio3's (:func:`claim`), and the level is released once all are
  finished.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from ldp.errors import LeaseHeldError, LeaseLostError

__all__ = ["REPLICA_NAME", "DEFAULT_JOB_LEASE", "replica_prefix", "Planner", "refresh_leader", "sweep_chunks",
           "check_replica_name", "lease_held", "claim"]

logger = logging.getLogger("ldp.aggregators")

REPLICA_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
"""A replica's name: 1 to 63 of a-z, 0-9, ``_`` and ``-`` (a store key's part), starting with a letter or digit."""
DEFAULT_JOB_LEASE = 60.0
"""Seconds a driver holds a job's attempt before another may claim the next (``job_lease``)."""


def check_replica_name(name: str) -> str:
    """``name`` if it is a replica's name (:data:`REPLICA_NAME`), else ``ValueError`` saying what one is."""
    if not REPLICA_NAME.match(name):
        raise ValueError(f"a replica's name is 1 to 63 of a-z, 0-9, '_' and '-', starting with a letter or digit; "
                         f"got {name!r}")
    return name


def replica_prefix(role: str, name: str) -> str:
    """Where replica ``name`` of ``role`` claims its name (module docstring)."""
    from ldp.storage.roles import aggregator_prefix

    return f"{aggregator_prefix(role)}replicas/{check_replica_name(name)}/lease/"


class Planner:
    """The planner lease of a scaled-out leader (module docstring): :meth:`holds` takes it when it is free (or its
    holder died) and keeps it, renewed, until :meth:`stop`."""

    def __init__(self, store: Any, ttl: float = 60.0) -> None:
        from ldp.storage.lease import Lease, dead_holder_here
        from ldp.storage.roles import aggregator_prefix

        self.lease = Lease(store, f"{aggregator_prefix('leader')}planner/lease/", "leader planner", ttl=ttl,
                           takeover=dead_holder_here)
        self.started = False

    def holds(self) -> bool:
        """Whether this process plans now (the lease held, or taken if free)."""
        if self.started:
            try:
                self.lease.ensure()
                return True
            except LeaseLostError:
                logger.warning("this replica lost the planner lease (paused past it?): another plans now")
                self.stop()
        try:
            self.lease.start()
        except LeaseHeldError:
            return False
        self.started = True
        return True

    def stop(self) -> None:
        if self.started:
            self.started = False
            try:
                self.lease.stop()
            except Exception as exc:  # noqa: BLE001 (stopping: a lease not released expires)
                logger.warning("the planner lease was not released (%s): it expires", exc)


def lease_held(count: int, last: float, now: float, lease: float) -> bool:
    """Whether a job's last attempt still holds it at ``now`` (module docstring, *Driving*): it has one (``count``
    attempts, the last begun at ``last``) and ``now < last + lease``. Prio3's jobs
    (:func:`ldp.aggregators.jobs.run_jobs`) and Poplar1's (:mod:`ldp.aggregators.poplar1_scale_out`) alike."""
    return count > 0 and now < last + lease


def claim(records: Any, key_of: Callable[[int], str], job_id: str, count: int, last: float, now: float,
          lease: float) -> int | None:
    """A job's next attempt claimed (module docstring, *Driving*): ``None`` while its last attempt holds it
    (:func:`lease_held`) or when another process created attempt ``count + 1`` first (the store's create-if-absent:
    of several claimants exactly one gets it); else its number, its record (``key_of(n)``, as
    :meth:`~ldp.aggregators.records.TaskRecords.attempt` writes Prio3's) created."""
    if lease_held(count, last, now, lease):
        return None
    n = count + 1
    return n if records.write(key_of(n), {"job": job_id, "attempt": n, "at": now}) else None


def refresh_leader(leader: Any, state: Any) -> None:
    """A leader replica's view of its task brought up to date from the store (module docstring): every record,
    every plan (its reports planned), and every chunk not read yet (its reports in no job taken; a report ID seen in
    another chunk is taken once). Chunks all of whose reports are in finished jobs are deleted."""
    from ldp.aggregators.records import job_key_parts

    records = state.records
    records.refresh()
    with leader.state_lock:
        state.seen.update(records.prepared)
    for key in leader.store.list(f"{records.prefix}jobs/"):
        job_id, kind = job_key_parts(key)
        if kind == "plan" and job_id not in state.plans_read:
            state.plans_read.add(job_id)
            plan = records.read(key)
            with leader.state_lock:
                state.planned.update(bytes.fromhex(r) for r in plan["reports"])
    for key in leader.store.list(f"{records.prefix}reports/"):
        if key not in state.chunks_read:
            state.chunks_read.add(key)
            leader._load_chunk(state, key)
    sweep_chunks(leader, state)


def sweep_chunks(leader: Any, state: Any) -> None:
    """Forget the reports in finished jobs (another replica's, too) and delete the chunks all of whose reports are:
    a report stored by two doors is finished with one copy, and the other's chunk is emptied here."""
    done = state.records.prepared
    with leader.state_lock:
        for rid in [rid for rid in state.stored if rid in done]:
            del state.stored[rid]
        emptied = [key for key, rids in state.chunks.items() if rids <= done]
        for key in emptied:
            del state.chunks[key]
    for key in emptied:
        leader.store.delete(key)
