"""The frequency oracles side by side: exact variance of a rare item's count, and bytes per report.

:func:`ldp.plan.recommend` ranks with these numbers (docs/planner.md, "Ranking the protocols"):

* ``variance_per_user``: the exact ``Var[ĉ]/n`` of an item nobody holds (``f = 0``), from
  :func:`ldp.plan.count_variance` with the realized probabilities. For the pure oracles it is
  ``q*(1 − q*)/(p* − q*)²`` whatever ``n``; the sketches add their collision term, which grows with ``n``;
* ``variance_ratio``: that divided by :func:`optimal_variance` ``= 4e^ε/(e^ε − 1)²``, the per-user
  variance of OUE and OLH (Wang et al., USENIX Security 2017). GRR is below it when ``d < 3e^ε + 2``;
* ``report_bytes``: the bytes one report takes in a binary frame (docs/wire-format.md): a ``uint``
  field of range ``size`` takes the smallest of 1, 2, 4, 8 bytes that holds ``size − 1``, a ``bits``
  field ``⌈size/8⌉`` bytes; the frame's header and CRC, shared by up to a million reports, are left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ldp.decoders.tabular import ResultTable
from ldp.encoders.base import ProtocolParams
from ldp.frames import _uint_width
from ldp.plan.frequency import PLANNED_PROTOCOLS, Plan, count_variance, plan
from ldp.protocols import get_protocol

__all__ = ["FIXED_DOMAIN_ORACLES", "OracleScore", "Ranking", "frequency_oracles", "optimal_variance", "report_bytes",
           "score", "recommend"]


NEAR = 0.05
"""How close to the lowest variance a protocol must be for :attr:`Ranking.best_near_optimal`."""


def frequency_oracles(domain_size: int) -> tuple[str, ...]:
    """The planned protocols that are frequency oracles for ``domain_size`` categories (their params'
    :meth:`~ldp.encoders.base.ProtocolParams.frequency_oracle_for`): what :func:`recommend` ranks, in the order
    it lists equals: one made for exactly ``domain_size`` values (binary RR at ``d = 2``) first, then by name."""
    oracles = [get_protocol(p).params_type for p in PLANNED_PROTOCOLS]
    found = [t for t in oracles if t.frequency_oracle_for(domain_size)]
    found.sort(key=lambda t: (t.frequency_oracle_for(domain_size - 1) or t.frequency_oracle_for(domain_size + 1),
                              t.protocol))
    return tuple(t.protocol for t in found)


FIXED_DOMAIN_ORACLES = tuple(sorted(p for p in frequency_oracles(2)
                                    if get_protocol(p).params_type.for_epsilon(1.0, 2).domain_size is not None))
"""The fixed-domain frequency oracles (``rr`` only for ``d = 2``), by name: :func:`frequency_oracles` less the
open-domain ones (the sketches, RAPPOR), whose planned parameters take any value."""


def optimal_variance(epsilon: float) -> float:
    """``4e^ε/(e^ε − 1)²``: the per-user variance of a rare item's count under OUE and OLH."""
    return 4.0 * math.exp(epsilon) / math.expm1(epsilon) ** 2


def report_bytes(params: ProtocolParams) -> int:
    """Bytes of one report in a binary frame (its column widths; header and CRC left out)."""
    return sum(_uint_width(f.size - 1) if f.kind == "uint" else (f.size + 7) // 8 for f in params.schema)


@dataclass(frozen=True)
class OracleScore:
    """One oracle's numbers at ``(ε, d, n)`` (see the module docstring)."""

    protocol: str
    variance_per_user: float
    variance_ratio: float
    report_bytes: int


def score(plan: Plan, epsilon: float) -> OracleScore:
    """The score of a plan made at ``epsilon`` (the ratio's optimum is taken at that ε)."""
    var = count_variance(plan.params, plan.n, 0.0, plan.domain_size) / plan.n
    return OracleScore(plan.protocol, var, var / optimal_variance(epsilon), report_bytes(plan.params))


class Ranking(ResultTable, list[Plan]):
    """:func:`ldp.plan.recommend`'s plans, lowest variance of a rare item's count first (ties: fewer
    bytes), with each one's :class:`OracleScore` in ``scores`` and the protocols left out (and why)."""

    def __init__(self, plans: list[Plan], epsilon: float, left_out: dict[str, str] | None = None) -> None:
        self.epsilon = epsilon
        self.scores = {pl.protocol: score(pl, epsilon) for pl in plans}
        self.left_out = dict(left_out or {})
        key = {p: (round(s.variance_per_user, 9), s.report_bytes) for p, s in self.scores.items()}
        super().__init__(sorted(plans, key=lambda pl: key[pl.protocol]))

    @property
    def best_variance(self) -> str:
        """The protocol with the lowest variance of a rare item's count."""
        return self[0].protocol

    @property
    def best_size(self) -> str:
        """The protocol with the smallest reports (ties: the lower variance)."""
        return min(self, key=lambda pl: self.scores[pl.protocol].report_bytes).protocol

    @property
    def best_near_optimal(self) -> str:
        """The protocol with the smallest reports among those within :data:`NEAR` of the lowest variance (ties:
        the lower variance): where a few bytes buy what ``d`` bits do (PGR and its hybrid, OLH, blocked HR, by
        ε and ``d``)."""
        low = self.scores[self.best_variance].variance_per_user
        near = [pl for pl in self if self.scores[pl.protocol].variance_per_user <= low * (1 + NEAR)]
        return min(near, key=lambda pl: self.scores[pl.protocol].report_bytes).protocol

    def summary(self) -> str:
        """Which is best for variance, which for size, and which has the smallest reports within 5 % of the
        lowest variance, in one line each."""
        v, s, c = self.scores[self.best_variance], self.scores[self.best_size], self.scores[self.best_near_optimal]
        size = lambda b: f"{b} byte{'s' * (b != 1)}"  # noqa: E731
        return (f"lowest variance: {v.protocol} ({v.variance_ratio:.3f} × the optimum 4e^ε/(e^ε−1)², "
                f"{size(v.report_bytes)} a report)\nsmallest report: {s.protocol} ({size(s.report_bytes)}, "
                f"{s.variance_ratio:.3f} × the optimum)\nsmallest report within {100 * NEAR:g}% of the lowest "
                f"variance: {c.protocol} ({size(c.report_bytes)}, {c.variance_ratio:.3f} × the optimum)")

    def columns(self) -> dict[str, list[Any]]:
        """One row per protocol, best first: SE of a fraction, smallest detectable fraction, variance of a rare
        item's count over the optimum, report bits and frame bytes, ε per report."""
        sc = self.scores
        return {"protocol": [p.protocol for p in self], "std_error_fraction": [p.std_error_fraction for p in self],
                "min_detectable_fraction": [p.min_detectable_fraction for p in self],
                "variance_ratio": [sc[p.protocol].variance_ratio for p in self],
                "report_bits": [p.report_bits for p in self],
                "report_bytes": [sc[p.protocol].report_bytes for p in self],
                "epsilon_per_report": [p.epsilon_per_report.epsilon for p in self]}

    def metadata(self) -> dict[str, Any]:
        first = self[0] if self else None
        return {"epsilon": self.epsilon, "n": first.n if first else None,
                "domain_size": first.domain_size if first else None,
                "frequency": first.frequency if first else None, "left_out": dict(self.left_out),
                "notes": list(self.result_notes())}

    def title(self) -> str:
        if not self:
            return f"no protocol planned at ε={self.epsilon:g}"
        return (f"lowest variance of a rare item's count first, n={self[0].n:,}, d={self[0].domain_size:,}, "
                f"SE at frequency {100 * self[0].frequency:.4g}%")

    def result_notes(self) -> tuple[str, ...]:
        best = tuple(self.summary().split("\n")) if self else ()
        return best + tuple(f"{p} left out: {why}" for p, why in self.left_out.items())


def recommend(epsilon: float, domain_size: int, *, n: int = 1_000_000, frequency: float | None = None,
              alpha: float = 0.05) -> Ranking:
    """Plans of every frequency protocol applicable to ``(ε, d)`` (:func:`frequency_oracles`): the fixed-domain
    oracles (rr when ``d = 2``, grr, sue, oue, blh, olh, hr, ss), CMS, HCMS and RAPPOR (not where its defaults
    cannot separate ``d`` values), lowest exact variance of a rare item's count first (ties: fewer report bytes,
    then :func:`frequency_oracles`' order).

    The :class:`~ldp.plan.oracles.Ranking` also holds each one's variance / the optimum 4e^ε/(e^ε−1)²
    and bytes per report (``scores``), and names the best for variance and for size. An oracle whose
    parameters cannot be made at this ε (a probability that rounds to 0 or 1) is left out, with the reason
    in ``left_out``."""
    plans, left_out = [], {}
    for p in frequency_oracles(domain_size):
        try:
            plans.append(plan(p, n=n, domain_size=domain_size, epsilon=epsilon, frequency=frequency, alpha=alpha))
        except ValueError as e:
            left_out[p] = str(e)
    if not plans:
        raise ValueError(f"no frequency protocol can be planned at epsilon={epsilon}: " +
                         "; ".join(f"{p}: {why}" for p, why in left_out.items()))
    return Ranking(plans, epsilon, left_out)
