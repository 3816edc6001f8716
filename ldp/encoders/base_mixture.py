"""The law "uniform on ``[0, K)`` with probability ``γ``, else uniform on the value's own set of ``s`` outputs"
(blocked Hadamard Response, Projective Geometry Response and its hybrid), as their params share it: one index ``j``
in ``[0, K)``, and the exact privacy of the realized ``γ``. Client side: standard library only.

An output of the value's own set that is outside another value's has the worst ratio,
``(γ/K + (1 − γ)/s)/(γ/K) = 1 + K(1 − γ)/(γ·s)``; the charge is ``max(ε, ε*)`` with ``ε*`` its logarithm, computed
from the exact rational of the realized ``γ`` (:func:`~ldp.randomness.realized_probability`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cached_property

from ldp.privacy.accountant import PrivacyCost
from ldp.reports import Field

__all__ = ["OwnSetMixture"]


class OwnSetMixture:
    """The shared part of a params class whose law is the uniform-or-own-set mixture: it provides ``order``
    (``K``), ``own_set_size`` (``s``) and ``gamma`` (realized); this gives ``effective_epsilon``,
    ``privacy_cost``, the report ``schema`` (``j``, uint below ``K``) and ``aggregate_cells`` (``K``)."""

    epsilon: float

    @property
    def order(self) -> int:
        """``K``: reports are ``j`` in ``[0, K)``."""
        raise NotImplementedError

    @property
    def own_set_size(self) -> int:
        """``s``: the outputs of a value's own set."""
        raise NotImplementedError

    @property
    def gamma(self) -> float:
        """``γ``: the realized probability of the uniform branch."""
        raise NotImplementedError

    @cached_property
    def effective_epsilon(self) -> float:
        """``ln(1 + K(1 − γ)/(γ·s))`` of the realized ``γ``, exactly (rational ratio)."""
        g = Fraction(self.gamma)
        ratio = 1 + self.order * (1 - g) / (g * self.own_set_size)
        return math.log(ratio.numerator) - math.log(ratio.denominator)

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """``max(epsilon, effective_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.effective_epsilon))

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("j", "uint", self.order),)

    @property
    def aggregate_cells(self) -> int:
        return self.order
