"""RAPPOR's simulation: its candidates are scored by the decoder's least squares over every one of them
(``selection="none"``), whose exact covariance is :func:`~ldp.decoders.rappor_decode.exact_count_covariance`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.encoders.rappor import RapporParams
from ldp.simulation.base import CandidateScoring, Simulation

__all__ = ["RapporSimulation"]


class RapporSimulation(Simulation):
    """RAPPOR's answers (:class:`~ldp.simulation.base.Simulation`): the candidates' Bloom rows
    (:class:`~ldp.decoders.rappor_decode.CandidateMap`) are what its decoder takes."""

    params_type = RapporParams

    def candidates(self, params: Any, d: int) -> list[str]:
        """The synthetic candidates the planner's variance is for
        (:func:`~ldp.decoders.rappor_decode.synthetic_rappor_candidates`: ``item0 …``, skipping any whose Bloom rows
        repeat an earlier one's)."""
        from ldp.decoders.rappor_decode import synthetic_rappor_candidates

        return synthetic_rappor_candidates(params, d)

    def scoring(self, params: Any, candidates: list[str]) -> CandidateScoring:
        """The least squares over every candidate and its exact variance (``ValueError`` when two candidates
        have the same Bloom rows in every cohort: the decoder cannot tell them apart)."""
        from ldp.decoders.rappor_decode import CandidateMap, exact_count_covariance

        cmap = CandidateMap.from_candidates(params, candidates)
        if cmap.duplicates:
            raise ValueError(f"RAPPOR with k·m = {params.num_bloombits}·{params.num_cohorts} Bloom rows cannot tell "
                             f"{len(candidates)} candidates apart; raise num_bloombits or num_cohorts")

        def variance(truth: np.ndarray) -> np.ndarray:
            return np.diag(exact_count_covariance(params, cmap, truth))

        # the simulations read the counts and the plain intervals only: no selection-adjusted intervals
        return CandidateScoring(cmap, variance, "estimates: least squares over every candidate (decode with "
                                "selection='none'); theory ignores the cohort-sampling noise",
                                {"selection": "none", "adjusted_intervals": False})
