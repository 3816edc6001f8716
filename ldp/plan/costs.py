"""The report costs of 0.1's planner, kept for one release: each protocol now answers itself —
:attr:`~ldp.encoders.base.ProtocolParams.report_bits`, :meth:`~ldp.encoders.base.ProtocolParams.horizon_cost`,
:func:`~ldp.encoders.longitudinal.memoized_charges`."""

from __future__ import annotations

from ldp.encoders.base import ProtocolParams
from ldp.encoders.longitudinal import memoized_charges as lgrr_charges
from ldp.privacy.accountant import PrivacyCost

__all__ = ["report_bits", "plan_privacy", "lgrr_charges"]


def report_bits(params: ProtocolParams, d: int) -> int:
    """Bits of one report's payload on the wire: ``params.report_bits``."""
    return params.report_bits


def plan_privacy(params: ProtocolParams, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
    """Per report, per distinct value, in all: ``params.horizon_cost(reports, distinct)``."""
    return params.horizon_cost(reports, distinct)
