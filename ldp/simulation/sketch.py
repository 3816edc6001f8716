"""The sketches' (CMS, HCMS) simulation: the de-biased sketch's counts of the candidates."""

from __future__ import annotations

import functools
from typing import Any

from ldp.decoders.sketch import SketchAggregate
from ldp.encoders.cms import CmsParams
from ldp.encoders.hcms import HcmsParams
from ldp.simulation.base import CandidateScoring, Simulation

__all__ = ["SketchSimulation"]


class SketchSimulation(Simulation):
    """CMS's and HCMS's answers (:class:`~ldp.simulation.base.Simulation`)."""

    params_type = (CmsParams, HcmsParams)

    def scoring(self, params: Any, candidates: list[str]) -> CandidateScoring:
        """The sketch's estimate of the candidates; :meth:`~ldp.decoders.sketch.SketchAggregate.exact_variance`
        averages over the draw of the hash functions too."""
        return CandidateScoring(candidates, functools.partial(SketchAggregate.exact_variance, params),
                                "estimates: the de-biased sketch's counts of the candidates; theory averages over "
                                "hash functions")
