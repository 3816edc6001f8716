"""SFP's simulation: words spelled in its alphabet, scored by the word sketch."""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.encoders.sfp import SfpParams
from ldp.simulation.base import CandidateScoring, Simulation, shortlex_words

__all__ = ["SfpSimulation"]


class SfpSimulation(Simulation):
    """SFP's answers (:class:`~ldp.simulation.base.Simulation`)."""

    params_type = SfpParams

    def candidates(self, params: Any, d: int) -> list[str]:
        """The first ``d`` words of at most ``length`` symbols of the alphabet, in shortlex order (``a, b, …, z,
        aa, ab, …`` with the default alphabet)."""
        return shortlex_words(params.alphabet, params.length, d, params.protocol)

    def scoring(self, params: Any, candidates: list[str]) -> CandidateScoring:
        """The word sketch's counts of the candidates and their exact variance (``ValueError`` when two
        candidates become the same word once replaced or truncated)."""
        from ldp.decoders.sketch import SketchAggregate

        prepared = [params.prepare_word(w).word for w in candidates]
        if len(set(prepared)) != len(prepared):
            raise ValueError("two candidates become the same SFP word once replaced or truncated")

        def variance(truth: np.ndarray) -> np.ndarray:
            return SketchAggregate.exact_variance(params.word_params, truth)

        return CandidateScoring(candidates, variance, "estimates: the word sketch's counts of the candidate words")
