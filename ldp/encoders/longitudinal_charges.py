"""What repeated reports of one memoized value leak, and what the ledger charges for them: the exact worst-case
leakage ``L(t)`` of ``t`` L-GRR reports (:func:`lgrr_leakage`), the per-report charge of ``charging="min"`` that
bounds ``L(t)`` for every ``t`` (:func:`memo_report_charge`), and a memoized protocol's charges over a horizon
(:func:`memoized_charges`, :func:`memoized_horizon_cost`: L-GRR and L-OUE). Client side
(standard library only); re-exported by :mod:`ldp.encoders.longitudinal`, whose docstring describes the protocols."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ldp.privacy.accountant import PrivacyCost

__all__ = ["lgrr_leakage", "memo_report_charge", "memoized_charges", "memoized_horizon_cost", "MAX_CHARGE_REPORTS"]

MAX_CHARGE_REPORTS = 64
"""Most reports :meth:`~ldp.encoders.longitudinal.LGRRParams.report_charge` examines before it falls back to the
upfront charge."""


def _logaddexp(a: float, b: float) -> float:
    if a < b:
        a, b = b, a
    return a if b == -math.inf else a + math.log1p(math.exp(b - a))


def lgrr_leakage(p1: float, p2: float, k: int, t: int) -> float:
    """Exact worst log-likelihood ratio ``L(t)`` of ``t`` L-GRR reports of one value, over every
    report sequence and every pair of values, for keep probabilities ``p1`` (memoized) and ``p2``.

    ``Pr[r | v] ∝ q1·Σ_m ρ^{c_m} + (p1 − q1)·ρ^{c_v}`` with ``c_m`` the number of reports naming
    ``m`` and ``ρ = p2/q2``; it depends on the reports only through the counts. For values ``v, v'``
    with counts ``a >= b`` the ratio falls as ``S = Σ_m ρ^{c_m}`` grows, and for the other ``k − 2``
    values (``t − a − b`` reports) ``S`` is least when they are spread evenly (ρ^c is convex), so
    the worst case is a maximum over ``(a, b)``: ``O(t²)`` for any k."""
    q1, q2 = (1.0 - p1) / (k - 1), (1.0 - p2) / (k - 1)
    lr, d = math.log(p2 / q2), math.log(p1 - q1)
    lq1 = math.log(q1)
    worst = 0.0
    for a in range(t + 1):
        for b in range(min(a, t - a) + 1):
            rest, others = t - a - b, k - 2
            if others == 0:
                if rest:
                    continue
                log_s = _logaddexp(a * lr, b * lr)
            else:
                base, extra = divmod(rest, others)
                log_s = _logaddexp(a * lr, b * lr)
                log_s = _logaddexp(log_s, math.log(others - extra) + base * lr)
                if extra:
                    log_s = _logaddexp(log_s, math.log(extra) + (base + 1) * lr)
            num = _logaddexp(lq1 + log_s, d + a * lr)
            den = _logaddexp(lq1 + log_s, d + b * lr)
            worst = max(worst, num - den)
    return worst


def memo_report_charge(one: PrivacyCost, cap: PrivacyCost, leakage: Callable[[int], float]) -> PrivacyCost:
    """The per-report charge ``c`` of ``charging="min"`` given the exact leakage ``L(t)`` of t reports
    of one value: ``max_{t<=T} L(t)/t`` (at least ``one``) with ``T`` the first t at which ``t·c >= cap``;
    ``cap`` if there is no such T within :data:`MAX_CHARGE_REPORTS` reports."""
    c = one.epsilon
    for t in range(1, MAX_CHARGE_REPORTS + 1):
        c = max(c, leakage(t) / t)
        if t * c >= cap.epsilon:
            return PrivacyCost(min(c, cap.epsilon))
    return cap


def memoized_horizon_cost(params: Any, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
    """What the ledger charges a memoized protocol (``report_charge`` ``c`` per report, at most ``memo_cap`` per
    value; ``charging="min"``) over ``reports`` reports of ``distinct`` values: ``(ε per report, min(R·c, cap),
    min(R·c, min(D, R)·cap))``."""
    per_value = memoized_charges(params, reports)["min"]
    return params.privacy_cost, per_value, PrivacyCost(min(reports * params.report_charge.epsilon,
                                                          min(distinct, reports) * params.memo_cap.epsilon))


def memoized_charges(params: Any, reports: int) -> dict[str, PrivacyCost]:
    """What the ledger charges for ``reports`` reports of one value under each charging mode:
    ``min(R·c, cap)`` with ``c = report_charge`` (``"min"``), ``cap = memo_cap`` on the first (``"upfront"``)."""
    cap = params.memo_cap
    return {"min": PrivacyCost(min(reports * params.report_charge.epsilon, cap.epsilon)), "upfront": cap}
