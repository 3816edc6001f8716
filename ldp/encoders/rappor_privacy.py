"""RAPPOR's privacy: what its parameters cost (:class:`RapporPrivacy`, the base of
:class:`~ldp.encoders.rappor.RapporParams`). Standard library only.

Per report, ``Pr[S_i = 1 | B_i = 1] = q* = f(p+q)/2 + (1−f)q`` and ``Pr[S_i = 1 | B_i = 0] = p* =
f(p+q)/2 + (1−f)p``. Privacy (Erlingsson, Pihur & Korolova, CCS 2014, §3; google/rappor
``ComputePrivacyGuarantees``): ``ε₁ = h·|ln(q*(1−p*)/(p*(1−q*)))|`` for one report and
``ε∞ = 2h·ln((1−f/2)/(f/2))`` for any number of reports of one value (an observer learns at most the permanent
response ``B'``).
"""

from __future__ import annotations

import math
from functools import cached_property

from ldp.encoders.base_checks import refuse_relation
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import realized_probability

__all__ = ["RapporPrivacy"]


class RapporPrivacy:
    """The privacy of :class:`~ldp.encoders.rappor.RapporParams`: ``h`` hashes, IRR ``p``/``q``, PRR ``f``, mode."""

    num_hashes: int
    p: float
    q: float
    f: float
    mode: str

    @property
    def f_effective(self) -> float:
        """The f the client really applies: ``floor(f·2^64)/2^64`` (f itself above 2^-11), or
        ``ceil(128 f)/128`` in Google mode."""
        return math.ceil(self.f * 128) / 128 if self.mode == "google" else realized_probability(self.f)

    @property
    def q_star(self) -> float:
        """``Pr[report bit = 1 | Bloom bit = 1] = f(p+q)/2 + (1−f)q`` (realized f, p, q)."""
        f, p, q = self.f_effective, realized_probability(self.p), realized_probability(self.q)
        return 0.5 * f * (p + q) + (1.0 - f) * q

    @property
    def p_star(self) -> float:
        """``Pr[report bit = 1 | Bloom bit = 0] = f(p+q)/2 + (1−f)p`` (realized f, p, q)."""
        f, p, q = self.f_effective, realized_probability(self.p), realized_probability(self.q)
        return 0.5 * f * (p + q) + (1.0 - f) * p

    @property
    def epsilon_one(self) -> float:
        """ε₁ = h·|ln(q*(1−p*) / (p*(1−q*)))|: one report (``inf`` if p* = 0 or q* = 1)."""
        ps, qs = self.p_star, self.q_star
        if ps <= 0.0 or qs >= 1.0:
            return math.inf
        return self.num_hashes * abs(math.log(qs * (1.0 - ps) / (ps * (1.0 - qs))))

    @property
    def epsilon_inf(self) -> float:
        """ε∞ = 2h·ln((1−f/2)/(f/2)): any number of reports of one value (``inf`` if f = 0)."""
        f = self.f_effective
        return math.inf if f == 0.0 else 2 * self.num_hashes * math.log((1.0 - f / 2) / (f / 2))

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """The cost of one report, ε₁ (a ``ValueError`` if these parameters give no finite ε₁)."""
        if math.isinf(self.epsilon_one):
            raise refuse_relation("these RAPPOR parameters give no finite ε₁ (p* = 0 or q* = 1): reports are not "
                                  "private", "finite_epsilon", "p", "q", "f")
        return PrivacyCost(self.epsilon_one)

    def horizon_cost(self, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
        """The memoized PRR caps one value at ``ε∞`` however often it is reported: per value
        ``min(R·ε₁, ε∞)``, in all ``min(R·ε₁, min(D, R)·ε∞)``."""
        one = self.privacy_cost
        if not math.isfinite(self.epsilon_inf):
            return one, one.times(reports), one.times(reports)
        per_value = PrivacyCost(min(reports * one.epsilon, self.epsilon_inf))
        return one, per_value, PrivacyCost(min(reports * one.epsilon, min(distinct, reports) * self.epsilon_inf))
