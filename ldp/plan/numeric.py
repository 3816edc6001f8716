"""The planner for means of bounded numbers: Duchi's 1-bit mechanism, the Piecewise and the Hybrid Mechanism,
and the memoized 1BitMean for repeated collection (``memo-mean``).

Every number comes from the decoders' exact per-report variance ``Var[v | x]``
(:mod:`ldp.decoders.numeric`): the standard error of the mean of ``n`` reports is
``√(mean_i Var[v | x_i] / n)``. Without the users' values the planner takes the worst case over
``x ∈ [low, high]`` (Duchi's at the centre, the PM's at the ends, the Hybrid's flat), so the plan
holds whatever the values; with ``values`` it is exact for them. Since the variance is ``V/n``,
the ``n`` for a target standard error is ``⌈V/target²⌉``.

The recommendation ranks the three mechanisms by that variance at ``ε``. In the worst case the
Hybrid Mechanism is Duchi's below :data:`~ldp.encoders.numeric.HYBRID_THRESHOLD` (α = 0: Duchi,
with fewer bits, is named) and beats both above it (at 1024 cells, up to ε ≈ 8.5, beyond which the
discrete PM and it alternate as the PM's window is rounded); Duchi's beats the PM's below
:data:`~ldp.encoders.numeric.PM_CROSSOVER`. Local Laplace noise, variance ``2·(2/ε)²`` on ``[−1, 1]``,
is an analytic reference only (docs/protocols/numeric.md says why it is not a protocol here).

``memo-mean`` (one report per device per window) is planned like the others (its variance is Duchi's with
the flip probability ``q = γ + (1 − 2γ)·q_memo``); it is left out of the ranking, which compares one-shot
mechanisms, and its privacy over ``R`` reports of ``D`` distinct rounded values is the memoized bound
``min(R·ε₁, D·cap)``, not ``R·ε₁``.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.decoders.tabular import OneRowResult, cost_fields
from ldp.display.tables import key_values
from ldp.encoders.longitudinal import MemoMeanParams
from ldp.encoders.numeric import (
    HYBRID_THRESHOLD,
    HybridParams,
    NumericParams,
    PiecewiseParams,
)
from ldp.privacy.accountant import PrivacyCost

__all__ = ["MeanPlan", "default_mean_params", "laplace_variance", "mean_report_variance",
           "plan_mean", "ranked_mean_protocols", "recommend_mean", "solve_n_mean", "worst_case_variance"]

def ranked_mean_protocols() -> tuple[str, ...]:
    """The one-shot mean mechanisms :func:`recommend_mean` ranks: the registry's mean protocols whose encoder needs
    no device secret (``memo-mean``, memoized for repeated collection, is left out)."""
    from ldp.protocols import client_protocols, protocols_taking

    return tuple(name for name in protocols_taking("numbers") if not client_protocols()[name][1].needs_secret)


def default_mean_params(protocol: str, epsilon: float, low: float = 0.0, high: float = 1.0) -> NumericParams:
    """The planner's parameters from ε and the bounds: each mechanism's defaults (``cells=1024`` for
    the PM and the Hybrid; ``buckets=16``, ``gamma=0`` for memo-mean; no clipping)."""
    from ldp.protocols import get_protocol, protocols_taking

    if protocol not in protocols_taking("numbers"):
        raise ValueError(f"the mean planner knows {', '.join(protocols_taking('numbers'))}; got {protocol!r}")

    return get_protocol(protocol).params_type(epsilon, low, high)  # type: ignore[call-arg,return-value]  # a NumericParams


def laplace_variance(epsilon: float, low: float = -1.0, high: float = 1.0) -> float:
    """Per-report variance of local Laplace noise on ``[low, high]``: ``2·((high − low)/ε)²``
    (``8/ε²`` on ``[−1, 1]``). A reference curve, not a protocol."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    return 2.0 * ((high - low) / epsilon) ** 2


def mean_report_variance(params: NumericParams, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``Var[v | x]`` of one report of each value in ``x`` (the aggregate's exact formula)."""
    from ldp.protocols import get_protocol

    agg = get_protocol(params.protocol).aggregate_type
    return np.asarray(agg.report_variance(params, np.asarray(x, dtype=np.float64)), dtype=np.float64)


def _worst_case_grid(params: NumericParams) -> npt.NDArray[np.float64]:
    """Inputs where the worst case is attained or approached: the ends and the centre, and for a
    discrete PM eight points per input grid step (its variance is concave between grid points)."""
    steps = params.piecewise.steps if isinstance(params, HybridParams) and params.alpha > 0 else (
        params.steps if isinstance(params, PiecewiseParams) else 1)
    u = np.linspace(0.0, 1.0, min(8 * steps, 1 << 19) + 1)
    return params.low + (params.high - params.low) * np.union1d(u, [0.5])


def worst_case_variance(params: NumericParams) -> float:
    """The largest per-report variance over the values in ``[low, high]``."""
    return float(mean_report_variance(params, _worst_case_grid(params)).max())


def _per_report(params: NumericParams, values: npt.ArrayLike | None) -> float:
    if values is None:
        return worst_case_variance(params)
    from ldp.batch.numeric import checked_values

    x = checked_values(params, values)
    if x.size == 0:
        raise ValueError("values must not be empty")
    return float(mean_report_variance(params, x).mean())


@dataclass(frozen=True, repr=False)
class MeanPlan(OneRowResult):
    """What a mean collection will deliver: its standard error, report size and privacy spent (a one-row
    result table; :meth:`to_dict` is the nested document ``ldp plan --json`` prints)."""

    protocol: str
    params: NumericParams
    n: int
    report_variance: float
    std_error: float
    worst_case: bool
    laplace_std_error: float
    report_bits: int
    epsilon_per_report: PrivacyCost
    reports: int
    epsilon_total: PrivacyCost
    notes: tuple[str, ...] = field(default=())
    distinct_values: int = 1

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("protocol", "n", "report_variance", "std_error", "worst_case",
                                             "laplace_std_error", "report_bits", "reports", "distinct_values")}
        out.update(params=self.params.to_dict(), epsilon_per_report=self.epsilon_per_report.to_dict(),
                   epsilon_total=self.epsilon_total.to_dict(), notes=list(self.notes))
        return out

    def row(self) -> dict[str, Any]:
        """The plan's numbers as one row (each ε and δ a number)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in (
            "protocol", "n", "report_variance", "std_error", "worst_case", "laplace_std_error", "report_bits",
            "reports", "distinct_values")}
        out.update(low=self.params.low, high=self.params.high)
        return {**out, **cost_fields(self, ("epsilon_per_report", "epsilon_total"))}

    def metadata(self) -> dict[str, Any]:
        return {"params": self.params.to_dict(), "notes": list(self.notes)}

    def title(self) -> str:
        return (f"plan: {self.protocol}, n={self.n:,}, values in [{self.params.low:g}, {self.params.high:g}], "
                f"{self.epsilon_per_report} per report")

    def table(self, max_rows: int | None = None) -> str:
        """The plan as aligned ``name  value`` lines (``max_rows``: the views' common signature; one row)."""
        pr = self.params
        which = "worst case over the values" if self.worst_case else "for the given values"
        rows = [
            ("protocol", f"{self.protocol} {pr.to_dict()}"),
            ("users n, values in", f"{self.n:,}, [{pr.low:g}, {pr.high:g}]"),
            ("report size", f"{self.report_bits} bit{'s' * (self.report_bits != 1)}"),
            (f"SE of the mean ({which})", f"{self.std_error:.4g}"),
            ("SE with local Laplace (reference)", f"{self.laplace_std_error:.4g}"),
            ("ε per report", str(self.epsilon_per_report)),
            (f"ε in all, {self.reports} report{'s' * (self.reports != 1)}" + (
                f" of {self.distinct_values} rounded value{'s' * (self.distinct_values != 1)}"
                if isinstance(pr, MemoMeanParams) else ""), str(self.epsilon_total)),
        ]
        return "\n".join([key_values(rows)] + [f"note: {s}" for s in self.notes])


def _resolve(protocol: str | NumericParams, epsilon: float | None, low: float, high: float) -> NumericParams:
    if isinstance(protocol, NumericParams):
        return protocol
    if epsilon is None:
        raise ValueError("give the mechanism's parameters, or ε for the planner to choose them")
    return default_mean_params(protocol, epsilon, low, high)


def plan_mean(protocol: str | NumericParams, *, n: int, epsilon: float | None = None, low: float = 0.0,
              high: float = 1.0, values: npt.ArrayLike | None = None, reports: int = 1,
              distinct_values: int = 1) -> MeanPlan:
    """Plan the mean of ``n`` users' numbers: ``protocol`` is a name (with ``epsilon`` and the bounds)
    or a Params object. Without ``values`` the standard error is the worst case over the values;
    ``reports`` per user over the horizon compose sequentially, except for memo-mean, whose
    ``distinct_values`` rounded values cost at most the memoized bit's ε each."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"need n >= 1, got {n}")
    if isinstance(reports, bool) or int(reports) != reports or reports < 1:
        raise ValueError(f"reports must be >= 1, got {reports}")
    if isinstance(distinct_values, bool) or int(distinct_values) != distinct_values or distinct_values < 1:
        raise ValueError(f"distinct_values must be >= 1, got {distinct_values}")
    params = _resolve(protocol, epsilon, low, high)
    var = _per_report(params, values)
    lap = laplace_variance(params.privacy_cost.epsilon, params.low, params.high)
    notes: list[str] = []
    if isinstance(params, HybridParams) and params.alpha == 0:
        notes.append(f"at ε <= ε* = {HYBRID_THRESHOLD:.4f} the Hybrid Mechanism is Duchi's (α = 0), "
                     "which sends fewer bits")
    one = params.privacy_cost
    total = one.times(int(reports))
    if isinstance(params, MemoMeanParams):  # charging="min": one report's ε per report, the cap per rounded value
        total = PrivacyCost(min(reports * one.epsilon, min(distinct_values, reports) * params.memo_cap.epsilon))
        notes.append(f"memo-mean: the SE is that of one window (one report per device); a device pays at most "
                     f"{params.memo_cap} per rounded value (at most {params.buckets + 1} of them) however often "
                     "it reports")
    return MeanPlan(params.protocol, params, int(n), var, math.sqrt(var / n), values is None, math.sqrt(lap / n),
                    params.report_bits, one, int(reports), total, tuple(notes), int(distinct_values))


def solve_n_mean(protocol: str | NumericParams, target_se: float, *, epsilon: float | None = None, low: float = 0.0,
                 high: float = 1.0, values: npt.ArrayLike | None = None) -> int:
    """The fewest users for a standard error of the mean ``≤ target_se`` (in the values' units):
    ``⌈V/target²⌉`` with ``V`` the per-report variance (worst case, or at ``values``)."""
    if not (math.isfinite(target_se) and target_se > 0):
        raise ValueError(f"target_se must be finite and > 0, got {target_se}")
    var = _per_report(_resolve(protocol, epsilon, low, high), values)
    return max(1, math.ceil(var / target_se**2 * (1 - 1e-12)))


def recommend_mean(epsilon: float, *, n: int = 1_000_000, low: float = 0.0, high: float = 1.0,
                   values: npt.ArrayLike | None = None) -> list[MeanPlan]:
    """Plans of the one-shot mean mechanisms (:func:`ranked_mean_protocols`) at ``ε``, lowest standard error first
    (ties, as the Hybrid with α = 0 and Duchi's: fewer report bits first). Worst case over the values unless ``values``.
    A mechanism whose probabilities the client cannot realize at this ε (say Duchi's beyond ε ≈ 44) is left out."""
    plans, refused = [], []
    for name in ranked_mean_protocols():
        try:
            params = default_mean_params(name, epsilon, low, high)
        except ValueError as exc:
            refused.append(f"{name}: {exc}")
            continue
        plans.append(plan_mean(params, n=n, values=values))
    if not plans:
        raise ValueError("no mean mechanism works at this ε: " + "; ".join(refused))
    return sorted(plans, key=lambda pl: (round(pl.report_variance / max(plans[0].report_variance, 1e-300), 9),
                                         pl.report_bits))
