"""The planner for SFP (sketched fragments): a word's count is the word sketch's (its ``count_variance``); a word
is discovered when its fragments are detected in the fragment sketch of one position, which ``n/P`` users report
on average (``P = num_positions``, ``L/r``), over the grid of ``2^bits·|Σ|^r`` records (an approximation: the
binomial split over the positions is ignored); a count detected among ``n/P`` users is ``P`` times that among
all ``n``."""

from __future__ import annotations

from typing import ClassVar

from ldp.encoders.sfp import SfpParams
from ldp.plan.planners import CountPlanner, CountVariance, min_detectable

__all__ = ["SfpPlanner"]


class SfpPlanner(CountPlanner):
    """SFP's answers: detection in one position's fragment sketch, among its records."""

    params_type: ClassVar[type[SfpParams]] = SfpParams

    def min_detectable_count(self, params: SfpParams, n: float, domain_size: int, candidates: int, *, alpha: float,
                             power: float, f2: float | None, variance: CountVariance) -> tuple[float, int]:
        """The count whose fragments one position's ``n/P`` users detect among the ``2^bits·|Σ|^r`` records of
        the fragment sketch (its collisions: the other records spread evenly), times ``P``."""
        frag, users, records = params.fragment_params, n / params.num_positions, params.num_records
        found = min_detectable(lambda f: variance(frag, users, f, records, None), users, alpha, records, power)
        return found * params.num_positions, records

    def notes(self, params: SfpParams, candidates: int) -> list[str]:
        return [f"discovery: fragments are tested among {candidates:,} records by about n/{params.num_positions} "
                "users per position (the split over positions is ignored)"]
