"""The planner for the memoized frequency oracles L-GRR and L-OUE: one report per device per window is GRR's or
OUE's with the realized probabilities of the two rounds (their ``count_variance``); over ``R`` reports a value is
charged ``min(R·c, ε_perm)`` (``charging="min"``, ``c`` = ``report_charge``) or ``ε_perm`` at once
(``"upfront"``): :func:`~ldp.encoders.longitudinal.memoized_charges`."""

from __future__ import annotations

from typing import Any, ClassVar

from ldp.encoders.base import ProtocolParams
from ldp.encoders.longitudinal import LGRRParams, memoized_charges
from ldp.encoders.unary import LOUEParams
from ldp.plan.planners import CountPlanner
from ldp.privacy.cost import PrivacyCost

__all__ = ["MemoizedPlanner"]


class MemoizedPlanner(CountPlanner):
    """L-GRR's and L-OUE's answers: the ε per value under both charging modes, and what the plan assumes."""

    params_type: ClassVar[tuple[type[ProtocolParams], ...]] = (LGRRParams, LOUEParams)

    def notes(self, params: Any, candidates: int) -> list[str]:
        return [f"{params.protocol}: the SE is that of one window (one report per device); charging=min charges "
                f"{params.report_charge} per report, at most {params.memo_cap} per value; ε in all is for it"]

    def per_value_by_charging(self, params: Any, reports: int) -> dict[str, PrivacyCost]:
        return memoized_charges(params, reports)
