"""The synthetic candidate strings an open-domain protocol is planned and simulated on when none are given."""

from __future__ import annotations

__all__ = ["synthetic_candidates"]


def synthetic_candidates(d: int) -> list[str]:
    """The ``d`` strings ``item0 … item{d-1}``: what an open-domain protocol is planned on
    (:meth:`ldp.decoders.base.Aggregate.count_variance`) and simulated on when no candidates are given
    (:meth:`ldp.simulation.base.Simulation.candidates`), so that the planner's standard error is the simulation's."""
    return [f"item{i}" for i in range(d)]
