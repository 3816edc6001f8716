"""Subset Selection (Ye & Barg 2018; Wang et al. 2016, "ω-subset mechanism"). Client side.

With ``ω = max(1, ⌊d/(e^ε+1) + 1/2⌋)``, a user of value ``v`` reports a subset ``S`` of ``ω`` values of the
domain (as a ``bits`` field of length ``d``): with probability ``p = ωe^ε/(ωe^ε + d − ω)`` it contains ``v``
and ``ω − 1`` others drawn uniformly from the ``d − 1`` others, else ``ω`` of the ``d − 1`` others. So
``Pr[S | v] = p/C(d−1, ω−1)`` when ``v ∈ S`` and ``(1−p)/C(d−1, ω)`` when not: the worst ratio, between a
set holding ``v`` and not ``u`` and the other way round, is ``ε* = ln(p(d−ω)/((1−p)ω))`` of the realized
``p`` (:func:`~ldp.randomness.realized_probability`), which is ε up to rounding; the charge is ``max(ε, ε*)``.

Subsets are drawn exactly: Floyd's algorithm, one exact ``randbelow`` per element (as dBitFlip's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from ldp.encoders.base import DomainPrepare, Encoder, ProtocolParams, check_epsilon
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.unary import UnaryParams
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import RandomSource, logistic_tail, realized_probability
from ldp.reports import Report, ReportBatch, ReportError, bits_from_int

__all__ = ["SSParams", "SSEncoder", "floyd_subset", "subset_size"]


def subset_size(epsilon: float, domain_size: int) -> int:
    """``ω = max(1, ⌊d/(e^ε+1) + 1/2⌋)``: the subset size minimizing the variance, rounded half up."""
    return max(1, math.floor(domain_size * logistic_tail(epsilon) + 0.5))


def floyd_subset(n: int, k: int, rng: RandomSource) -> int:
    """A uniform ``k``-subset of ``range(n)`` as a bit mask (Floyd's algorithm: ``k`` exact ``randbelow``;
    :meth:`ldp.randomness.RandomSource.subset_mask`)."""
    return rng.subset_mask(n, k)


@dataclass(frozen=True)
class SSParams(UnaryParams, ProtocolParams):
    """Subset Selection at ``epsilon`` over ``domain_size`` values (optionally named by ``labels``).

    A pure frequency oracle (:mod:`ldp.decoders.pure`): a report supports ``v`` when ``v ∈ S``, with
    ``p* = p`` and ``q* = (ω − p)/(d − 1)`` (``p(ω−1)/(d−1) + (1−p)ω/(d−1)``)."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "ss"
    value_class: ClassVar[str | None] = "category"
    _unary_params: ClassVar[tuple[str, ...]] = ("epsilon", "domain_size")  # ω, p and q derive from both
    draw_rule = DrawRule("`B(p)`, then `R(d−ω+o)`, `R(d−ω+o+1)`, …, `R(d−1)`, with `o` = 1 if `B(p)` was true, "
                         "else 0", lambda s, pr, v: [s.R(j) for j in range(pr.domain_size - pr.omega + s.B(pr.p),
                                                                        pr.domain_size)])
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 1.0, "domain_size": 100},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        self._check_unary(f"epsilon={self.epsilon}")
        self.check_collectable()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str]) -> SSParams:
        return cls(epsilon, len(labels), tuple(labels))

    @classmethod
    def examples(cls) -> list[SSParams]:
        """Subsets of one of four values, and of two of six (conformance suite)."""
        return [cls(1.0, 4), cls(0.5, 6)]

    @classmethod
    def audit_examples(cls) -> list[SSParams]:
        """The examples and two values (a subset of one)."""
        return [*cls.examples(), cls(1.0, 2)]

    @cached_property
    def omega(self) -> int:
        """``ω``, the size of every reported subset (:func:`subset_size`)."""
        return subset_size(self.epsilon, self.domain_size)

    @cached_property
    def p(self) -> float:
        """``Pr[v ∈ S | v] = ωe^ε/(ωe^ε + d − ω)``, as realized."""
        w, d = self.omega, self.domain_size
        return realized_probability(logistic_tail(math.log((d - w) / w) - self.epsilon))

    @property
    def q(self) -> float:
        """``Pr[u ∈ S | v ≠ u] = (ω − p)/(d − 1)``."""
        return (self.omega - self.p) / (self.domain_size - 1)

    @property
    def effective_epsilon(self) -> float:
        """``ln(p(d−ω)/((1−p)ω))`` of the realized ``p``."""
        w, p = self.omega, self.p
        return math.log(p) - math.log1p(-p) + math.log((self.domain_size - w) / w)

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """``max(epsilon, effective_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.effective_epsilon))

    def validate(self, report: Report) -> None:
        """The schema's checks, then Subset Selection's rule: exactly ``ω`` ones."""
        super().validate(report)
        bits = report.payload["bits"]
        assert not isinstance(bits, int)  # a bit string: checked by the schema
        if bits.count() != self.omega:
            raise ReportError("bad_value", f"bits must have exactly omega={self.omega} ones, got {bits.count()}")


class SSEncoder(DomainPrepare, Encoder):
    """Client encoder for :class:`SSParams`; values are labels or indices in ``[0, d)``."""

    params: SSParams
    params_type: ClassVar[type[SSParams]] = SSParams

    def randomize(self, prepared: int) -> Report:
        pr, rng, v = self.params, self._rng, prepared
        own = rng.bernoulli(pr.p)
        others = floyd_subset(pr.domain_size - 1, pr.omega - own, rng)  # over the d − 1 others, v removed
        low = (1 << v) - 1
        mask = (others & low) | (others & ~low) << 1 | own << v
        return self._report({"bits": bits_from_int(mask, pr.domain_size)})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of value indices (:func:`ldp.batch.subset_selection.ss_encode_batch`)."""
        from ldp.batch.subset_selection import ss_encode_batch  # numpy, loaded only here

        return self._batch({"bits": ss_encode_batch(self.params, values, rng)})
