"""The named points of the aggregators' work where the crash tests kill the process (issue 71, item 6), shared by
both roles.

Each role calls :func:`at` at the points where a kill is the hardest to survive (the exactly-once argument of
:mod:`ldp.aggregators.records`):

=========================  ==========================================================================================
``helper_job_recorded``    the helper: a job's record is in the store, its answer not yet sent (the leader's retry
                           is answered from the record)
``leader_job_planned``     the leader: a job's plan is in the store, the helper not yet asked (the next leader redoes
                           the job under the same ID)
``leader_job_answered``    the leader: the helper answered, the leader's own record not yet written
``leader_job_abandoning``  the leader: its intent to abandon a job recorded, the helper not yet told
``leader_job_halved``      the leader: a split job's halves planned, the parent's record not yet written
``helper_job_abandoned``   the helper: a job's abandonment recorded, its answer not yet sent
=========================  ==========================================================================================

A test installs its hook by setting :data:`_fault` in this module (in a process it starts: ``tests/aggregators/
test_loopback.py`` kills the helper with ``os._exit`` at the point its ``LDP_TEST_CRASH_AT`` names); with no hook,
:func:`at` does nothing.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["POINTS", "at"]

POINTS = ("helper_job_recorded", "leader_job_planned", "leader_job_answered", "leader_job_abandoning",
          "leader_job_halved", "helper_job_abandoned")
"""Every point :func:`at` is called with (module docstring)."""

_fault: Callable[[str], object] | None = None
"""The crash tests' hook, called with each point's name (``None``: nothing happens)."""


def at(point: str) -> None:
    """A named point of an aggregator's work (:data:`POINTS`): the crash tests' hook is called here."""
    if _fault is not None:
        _fault(point)
