"""Hadamard Response (Acharya, Sun, Zhang, AISTATS 2019): O(log d) bits per report. Client side.

With ``K`` the smallest power of 2 above ``d``, item ``v`` is row ``v + 1`` of the ``K×K`` Sylvester
Hadamard matrix ``H[i, j] = (−1)^popcount(i & j)`` (row 0, all ones, is unused). Its set
``C_v = {j : H[v+1, j] = +1}`` has ``K/2`` elements; the client reports ``j`` uniform in ``C_v`` with
probability ``p = e^ε/(e^ε+1)``, else uniform in the complement, as a ``uint`` of ``log2 K`` bits. So
each ``j ∈ C_v`` has probability ``2p/K`` and each other ``j`` ``2(1−p)/K``.

Two distinct rows agree on exactly half the columns, so some ``j`` is in ``C_v`` and not in ``C_u``: the
worst ratio is ``ε* = ln(p/(1−p))`` of the realized ``p`` (:func:`~ldp.randomness.realized_probability`);
the charge is ``max(ε, ε*)``.

Drawing: one ``bernoulli(p)`` (in or out), one ``randbelow(K)`` (``log2 K`` uniform bits), and if the parity
of ``j & (v+1)`` is not the one wanted, ``j`` is flipped at the lowest set bit of ``v + 1`` — a bijection
between the two halves, so ``j`` is exactly uniform on the chosen half.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from ldp.encoders.base import DomainPrepare, Encoder, ProtocolParams, check_epsilon
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.unary import UnaryParams
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import logistic_tail, realized_probability
from ldp.reports import Field, Report, ReportBatch

__all__ = ["HRParams", "HREncoder", "hr_order"]


def hr_order(domain_size: int) -> int:
    """``K``: the smallest power of 2 strictly above ``domain_size`` (rows 1..d of ``H_K`` are the items')."""
    return 1 << domain_size.bit_length()


@dataclass(frozen=True)
class HRParams(UnaryParams, ProtocolParams):
    """Hadamard Response at ``epsilon`` over ``domain_size`` values (optionally named by ``labels``).

    As a pure frequency oracle (:mod:`ldp.decoders.pure`): a report supports ``v`` when ``j ∈ C_v``,
    with ``p* = p`` (``p`` below) and ``q* = 1/2`` exactly (two rows' +1 sets share ``K/4`` columns)."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "hr"
    value_class: ClassVar[str | None] = "category"
    draw_rule = DrawRule("`B(p)`, `R(K)`", lambda s, pr, v: (s.B(pr.p), s.R(pr.order)))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 1.0, "domain_size": 100},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        self._check_unary(f"epsilon={self.epsilon}")
        self.check_collectable()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str]) -> HRParams:
        return cls(epsilon, len(labels), tuple(labels))

    @classmethod
    def examples(cls) -> list[HRParams]:
        """Three values (a Hadamard order of 4) and five (order 8) (conformance suite)."""
        return [cls(1.0, 3), cls(2.0, 5)]

    @classmethod
    def audit_examples(cls) -> list[HRParams]:
        """The examples and two values."""
        return [*cls.examples(), cls(0.5, 2)]

    @property
    def order(self) -> int:
        """``K``, the Hadamard order: reports are ``j`` in ``[0, K)``."""
        return hr_order(self.domain_size)

    @cached_property
    def p(self) -> float:
        """``Pr[j ∈ C_v | v] = e^ε/(e^ε+1)``, as realized."""
        return realized_probability(logistic_tail(-self.epsilon))

    @property
    def q(self) -> float:
        """``Pr[j ∈ C_v | u ≠ v] = 1/2`` exactly."""
        return 0.5

    @property
    def effective_epsilon(self) -> float:
        """``ln(p/(1−p))`` of the realized ``p``."""
        return super().effective_epsilon  # ln(p(1−q)/((1−p)q)) with q = 1/2

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


class HREncoder(DomainPrepare, Encoder):
    """Client encoder for :class:`HRParams`; values are labels or indices in ``[0, d)``."""

    params: HRParams
    params_type: ClassVar[type[HRParams]] = HRParams

    def randomize(self, prepared: int) -> Report:
        rng, pr = self._rng, self.params
        row = prepared + 1
        want = 0 if rng.bernoulli(pr.p) else 1  # parity of j & row: 0 inside C_v, 1 outside
        j = rng.randbelow(pr.order)
        if (j & row).bit_count() & 1 != want:
            j ^= row & -row
        return self._report({"j": j})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of value indices (:func:`ldp.batch.hadamard_response.hr_encode_batch`)."""
        from ldp.batch.hadamard_response import hr_encode_batch  # numpy, loaded only here

        return self._batch({"j": hr_encode_batch(self.params, values, rng)})
