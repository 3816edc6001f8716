"""Unary encoding: SUE, OUE (Wang, Blocki, Li, Jha, USENIX Security 2017) and longitudinal OUE. Client side.

A value ``v`` of a domain of ``d`` is one-hot encoded as ``d`` bits; each bit is then reported
independently: bit ``v`` is 1 with probability ``p``, every other bit with probability ``q``.

* SUE (symmetric, protocol ``sue``; = basic one-time RAPPOR): ``p = e^{ε/2}/(e^{ε/2}+1)``, ``q = 1 − p``.
* OUE (optimized, protocol ``oue``): ``p = 1/2``, ``q = 1/(e^ε+1)``.

Two values change the laws of two bits only, so the worst ratio is ``ε* = ln(p(1−q)/((1−p)q))``; it
is computed from the realized probabilities (``floor(p·2^64)/2^64``, :func:`~ldp.randomness.realized_probability`)
and the charge is ``max(ε, ε*)``, never below the exact audit's.

L-OUE (protocol ``loue``; L-OSUE/L-SUE of Arcolezi et al., 2021)
    Round 1, memoized per value from the device secret (exactly as L-GRR,
    :class:`~ldp.encoders.longitudinal.LGRRParams`): an OUE (``permanent="oue"``, L-OSUE) or SUE
    (``"sue"``, L-SUE = basic RAPPOR) response at ``epsilon_perm``, with bit probabilities ``p1``, ``q1``.
    Round 2, fresh per report: each bit kept with ``p2``, flipped with ``1 − p2``. A report's bit is 1
    with ``p* = 1/2 + λ2(p1 − 1/2)`` (own bit) and ``q* = 1/2 + λ2(q1 − 1/2)`` (others), ``λ2 = 2p2 − 1``,
    and ``ln(p*(1−q*)/((1−p*)q*)) = ε`` is a quadratic in λ2 (solved in closed form below). Over ``t``
    reports of one value only bits ``v`` and ``v'`` differ in law, each through its own permanent bit, so
    the exact leakage is ``L(t) = max_c f(c) − min_c f(c)`` with ``f(c)`` the log-ratio of ``c`` ones in
    ``t`` reports of one bit (:func:`loue_leakage`); the ledger charges per report the smallest ``c``
    with ``min(t·c, ε_perm) >= L(t)`` (:func:`~ldp.encoders.longitudinal.memo_report_charge`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, ClassVar, Self

from ldp.encoders.base import DomainPrepare, Encoder, LabeledDomain, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import check_choice, refuse_relation, renaming
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.base_vdaf import Prio3Fit
from ldp.encoders.longitudinal_charges import _logaddexp, memo_report_charge
from ldp.encoders.longitudinal_memo import TWO_ROUND_RULES, _SecretEncoder, check_two_rounds
from ldp.privacy.accountant import MemoizedCharge, PrivacyCost
from ldp.randomness import RandomSource, logistic_tail, realized_probability
from ldp.reports import Field, Report, ReportBatch, bits_from_int

__all__ = ["SUEParams", "SUEEncoder", "OUEParams", "OUEEncoder", "LOUEParams", "LOUEEncoder", "UnaryParams",
           "unary_draw", "unary_epsilon", "loue_leakage", "PERMANENT"]

PERMANENT = ("oue", "sue")


def unary_epsilon(p: float | Fraction, q: float | Fraction) -> float:
    """``ln(p(1−q)/((1−p)q))``: the worst log-ratio of a unary report whose own bit is 1 w.p. ``p``, others ``q``."""
    ratio = Fraction(p) * (1 - Fraction(q)) / ((1 - Fraction(p)) * Fraction(q))
    return math.log(ratio.numerator) - math.log(ratio.denominator)


def unary_draw(p: float, q: float, d: int, index: int, rng: RandomSource) -> int:
    """The ``d`` report bits of ``index`` as an int: bit ``index`` Bernoulli(p), the others Bernoulli(q)."""
    own = 1 << index
    bits = rng.bernoulli_bits(q, d) & ~own
    return bits | own if rng.bernoulli(p) else bits


class UnaryParams(LabeledDomain):
    """What SUE, OUE, L-OUE and bucketized OUE share: ``domain_size``, ``labels``, the realized bit
    probabilities ``p`` (own bit) and ``q`` (every other bit), and the wire format ``bits`` (d bits)."""

    domain_size: int
    labels: tuple[str, ...] | None
    protocol: ClassVar[str]
    _unary_params: ClassVar[tuple[str, ...]] = ("epsilon",)  # what p and q derive from (the refusals' params)

    if TYPE_CHECKING:  # what each subclass defines
        @property
        def p(self) -> float: ...  # realized Pr[bit v = 1 | value v]
        @property
        def q(self) -> float: ...  # realized Pr[bit u = 1 | value v], u != v

    def _check_unary(self, what: str) -> None:
        """The domain, the labels, and that ``p``, ``q`` are realizable and informative (``what``: the ε named)."""
        check_int(self.domain_size, "domain_size", 2, 2**32)
        if self.q <= 0.0 or self.p >= 1.0:
            raise refuse_relation(f"{what} is too large for {self.protocol}: a bit probability rounds to 0 or 1 at "
                                  "the client's resolution, so reports would not be private", "epsilon_too_large",
                                  *self._unary_params)
        if self.p <= self.q:
            raise refuse_relation(f"{what} is too small for {self.protocol}: p and q are equal at the client's "
                                  "resolution, so reports would carry no information", "epsilon_too_small",
                                  *self._unary_params)
        self._check_labels()

    @property
    def effective_epsilon(self) -> float:
        """The exact worst log-ratio of one report's realized law, ``ln(p(1−q)/((1−p)q))``."""
        return unary_epsilon(self.p, self.q)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("bits", "bits", self.domain_size),)

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: ``the protocol`` over the ``domain_size`` values at ``ε``."""
        return cls(epsilon, domain_size)  # type: ignore[call-arg]  # each subclass's fields

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """A frequency oracle over any number of values (SUE, OUE, HR, SS; L-OUE's memoized reports are not)."""
        return True



@dataclass(frozen=True)
class SUEParams(UnaryParams, ProtocolParams):
    """Symmetric unary encoding (basic one-time RAPPOR): every bit kept w.p. ``e^{ε/2}/(e^{ε/2}+1)``."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "sue"
    value_class: ClassVar[str | None] = "category"

    def prio3_fit(self) -> Prio3Fit:
        """The reported bit vector, summed by Prio3SumVec (one bit an entry); its sum is
        :class:`~ldp.decoders.unary.UnaryAggregate`'s ``ones``."""
        return Prio3Fit("Prio3SumVec", "bits", "ones",
                        {"length": self.domain_size, "max_measurement": 1})

    draw_rule = DrawRule("`BB(q, d)`, `B(p)`", lambda s, pr, v: (s.BB(pr.q, pr.domain_size), s.B(pr.p)))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 1.5, "domain_size": 40},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        self._check_unary(f"epsilon={self.epsilon}")
        self.check_collectable()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str]) -> SUEParams:
        return cls(epsilon, len(labels), tuple(labels))

    @classmethod
    def examples(cls) -> list[SUEParams]:
        """Two indices, and four labels (conformance suite)."""
        return [cls(1.0, 2), cls.from_labels(2.0, ["a", "b", "c", "d"])]

    @cached_property
    def p(self) -> float:
        """``e^{ε/2}/(e^{ε/2}+1)``, as realized."""
        return realized_probability(logistic_tail(-self.epsilon / 2))

    @cached_property
    def q(self) -> float:
        """``1/(e^{ε/2}+1)``, as realized."""
        return realized_probability(logistic_tail(self.epsilon / 2))

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """``max(epsilon, effective_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.effective_epsilon))

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, q)``: a report's bit v is 1 with probability p if v is the user's value, else q."""
        return self.p, self.q


@dataclass(frozen=True)
class OUEParams(UnaryParams, ProtocolParams):
    """Optimized unary encoding: own bit 1 w.p. 1/2, every other bit w.p. ``1/(e^ε+1)``."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "oue"
    value_class: ClassVar[str | None] = "category"

    def prio3_fit(self) -> Prio3Fit:
        """The reported bit vector, summed by Prio3SumVec (one bit an entry); its sum is
        :class:`~ldp.decoders.unary.UnaryAggregate`'s ``ones``."""
        return Prio3Fit("Prio3SumVec", "bits", "ones",
                        {"length": self.domain_size, "max_measurement": 1})

    draw_rule = DrawRule("`BB(q, d)`, `B(1/2)`", lambda s, pr, v: (s.BB(pr.q, pr.domain_size), s.B(0.5)))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 1.5, "domain_size": 40},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        self._check_unary(f"epsilon={self.epsilon}")
        self.check_collectable()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str]) -> OUEParams:
        return cls(epsilon, len(labels), tuple(labels))

    @classmethod
    def examples(cls) -> list[OUEParams]:
        """Eleven values at ε = 0.7 (rows of two bytes), three at ε = 3 (conformance suite)."""
        return [cls(0.7, 11), cls(3.0, 3)]

    @classmethod
    def audit_examples(cls) -> list[OUEParams]:
        return [cls(0.5, 2), cls(3.0, 3), cls(1.0, 4)]  # enumerable: two, three and four values

    @property
    def p(self) -> float:
        """1/2 (exactly realized)."""
        return 0.5

    @cached_property
    def q(self) -> float:
        """``1/(e^ε+1)``, as realized."""
        return realized_probability(logistic_tail(self.epsilon))

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """``max(epsilon, effective_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.effective_epsilon))

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, q)``: a report's bit v is 1 with probability p if v is the user's value, else q."""
        return self.p, self.q


class _UnaryEncoder(DomainPrepare, Encoder):
    """Shared by SUE and OUE (abstract: each subclass's ``randomize`` names its law for discovery)."""

    params: SUEParams | OUEParams

    def _unary_report(self, prepared: int) -> Report:
        pr = self.params
        bits = unary_draw(pr.p, pr.q, pr.domain_size, prepared, self._rng)
        return self._report({"bits": bits_from_int(bits, pr.domain_size)})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of value indices (packed rows, :func:`ldp.batch.unary.unary_encode_batch`)."""
        from ldp.batch.unary import unary_encode_batch  # numpy, loaded only here

        return self._batch({"bits": unary_encode_batch(self.params, values, rng)})


class SUEEncoder(_UnaryEncoder):
    """Client encoder for :class:`SUEParams`; values are labels or indices in ``[0, d)``."""

    params: SUEParams
    params_type: ClassVar[type[SUEParams]] = SUEParams

    def randomize(self, prepared: int) -> Report:
        return self._unary_report(prepared)


class OUEEncoder(_UnaryEncoder):
    """Client encoder for :class:`OUEParams`; values are labels or indices in ``[0, d)``."""

    params: OUEParams
    params_type: ClassVar[type[OUEParams]] = OUEParams

    def randomize(self, prepared: int) -> Report:
        return self._unary_report(prepared)


def loue_leakage(p1: float, q1: float, flip: float, t: int) -> float:
    """Exact worst log-ratio ``L(t)`` of ``t`` L-OUE reports of one value (module docstring): with
    ``P_π(c) = π·(1−f)^c·f^{t−c} + (1−π)·f^c·(1−f)^{t−c}`` the law of ``c`` ones in one bit's ``t``
    reports when its permanent bit is 1 w.p. ``π``, ``L(t) = max_c f(c) − min_c f(c)``, ``f = ln(P_p1/P_q1)``."""
    keep, fl = math.log1p(-flip), math.log(flip)

    def log_p(pi: float, c: int) -> float:
        return _logaddexp(math.log(pi) + c * keep + (t - c) * fl, math.log1p(-pi) + c * fl + (t - c) * keep)

    f = [log_p(p1, c) - log_p(q1, c) for c in range(t + 1)]
    return max(f) - min(f)


@dataclass(frozen=True)
class LOUEParams(UnaryParams, ProtocolParams):
    """Longitudinal unary encoding: a permanent OUE (or SUE) response at ``epsilon_perm``, memoized, then
    each bit kept or flipped afresh per report so that one report is ``epsilon``-LDP (< ``epsilon_perm``)."""

    epsilon_perm: float
    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    permanent: str = "oue"
    protocol: ClassVar[str] = "loue"
    value_class: ClassVar[str | None] = "category"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "epsilon_perm": ParamInfo("the privacy budget of the permanent (memoized) response: the bound over every "
                                  "report of one value", (Range(min=0, min_exclusive=True, finite=True),)),
        "permanent": ParamInfo("the unary encoding of the permanent round: oue or sue", choices=PERMANENT)}
    refusal_rules: ClassVar[Mapping[str, str]] = TWO_ROUND_RULES
    draw_rule = DrawRule("`BB(flip, d)`", lambda s, pr, v: s.BB(pr.flip, pr.domain_size))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon_perm": 4.0, "epsilon": 1.0, "domain_size": 10},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon_perm", check_epsilon(self.epsilon_perm, "epsilon_perm"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_choice(self.permanent, "permanent", PERMANENT, f"permanent must be one of {PERMANENT}, got "
                     f"{self.permanent!r}")
        check_two_rounds("L-OUE", self.epsilon, self.epsilon_perm)
        with renaming({"epsilon": "epsilon_perm"}):
            _ = self.perm  # the permanent round's checks (its epsilon is epsilon_perm)
        _ = self.flip  # the instantaneous round exists
        self._check_unary(f"epsilon={self.epsilon}")
        self.check_collectable()

    @cached_property
    def perm(self) -> SUEParams | OUEParams:
        """Round 1, the memoized OUE or SUE at ``epsilon_perm``."""
        kind = OUEParams if self.permanent == "oue" else SUEParams
        check_int(self.domain_size, "domain_size", 2, 2**32)
        return kind(self.epsilon_perm, self.domain_size)

    @cached_property
    def flip(self) -> float:
        """Round 2's realized flip probability ``(1 − λ2)/2``, λ2 the root of the quadratic
        ``ab(E−1)λ² + (a−b)(E+1)λ/2 − (E−1)/4 = 0`` (``a = p1 − 1/2``, ``b = q1 − 1/2``, ``E = e^ε``)."""
        a, b, e1 = self.perm.p - 0.5, self.perm.q - 0.5, math.expm1(self.epsilon)
        qa, qb, qc = a * b * e1, (a - b) * (e1 + 2.0) / 2.0, e1 / 4.0
        disc = qb * qb + 4.0 * qa * qc
        lam = 2.0 * qc / (qb + math.sqrt(disc)) if disc >= 0.0 else math.inf
        if not 0.0 < lam < 1.0:
            raise refuse_relation(f"epsilon={self.epsilon} is not below the realized permanent ε "
                                  f"{self.perm.effective_epsilon}: no instantaneous round gives it",
                                  "epsilon<realized_epsilon_perm", "epsilon", "epsilon_perm", "permanent")
        flip = realized_probability((1.0 - lam) / 2.0)
        if flip <= 0.0:
            raise refuse_relation(f"the instantaneous round of these L-OUE parameters is not realizable: its flip "
                                  f"probability {(1.0 - lam) / 2.0!r} rounds to 0 at the client's resolution",
                                  "instantaneous_realizable", "epsilon", "epsilon_perm", "permanent")
        return flip

    def _star(self, pi: Fraction) -> Fraction:
        f = Fraction(self.flip)
        return pi * (1 - f) + (1 - pi) * f

    @cached_property
    def p(self) -> float:
        """Realized ``p* = p1(1 − flip) + (1 − p1)·flip``."""
        return float(self._star(Fraction(self.perm.p)))

    @cached_property
    def q(self) -> float:
        """Realized ``q* = q1(1 − flip) + (1 − q1)·flip``."""
        return float(self._star(Fraction(self.perm.q)))

    @cached_property
    def realized_epsilon(self) -> float:
        """ε of one report from the realized p*, q* (in rationals, as the exact audit computes it)."""
        return unary_epsilon(self._star(Fraction(self.perm.p)), self._star(Fraction(self.perm.q)))

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """One report: ``max(epsilon, realized_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.realized_epsilon))

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, q)``: a report's bit v is 1 with probability p if v is the user's value, else q."""
        return self.p, self.q

    @classmethod
    def examples(cls) -> list[LOUEParams]:
        """A permanent OUE and a permanent SUE, three values each (conformance suite)."""
        return [cls(2.0, 0.5, 3), cls(1.0, 0.9, 3, permanent="sue")]

    @cached_property
    def memo_cap(self) -> PrivacyCost:
        """Every report of one value together: the permanent response's cost."""
        return self.perm.privacy_cost

    def leakage(self, t: int) -> float:
        """Exact worst-case ε of ``t`` reports of one value (:func:`loue_leakage`, realized probabilities)."""
        return loue_leakage(self.perm.p, self.perm.q, self.flip, check_int(t, "t", 1))

    @cached_property
    def report_charge(self) -> PrivacyCost:
        """The per-report charge of ``charging="min"`` (:func:`~ldp.encoders.longitudinal.memo_report_charge`)."""
        return memo_report_charge(self.privacy_cost, self.memo_cap, self.leakage)

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: one report at ``ε``, the permanent response at ``epsilon_perm = 4ε``
        (:data:`~ldp.encoders.longitudinal.PLANNER_PERM_FACTOR`)."""
        from ldp.encoders.longitudinal import PLANNER_PERM_FACTOR

        return cls(PLANNER_PERM_FACTOR * epsilon, epsilon, domain_size)

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """No: made for repeated collection (one report per window), planned and charged as such."""
        return False

    def horizon_cost(self, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
        """Charged ``min(R·c, ε_perm)`` per value (``charging="min"``, the encoder's default)."""
        from ldp.encoders.longitudinal import memoized_horizon_cost

        return memoized_horizon_cost(self, reports, distinct)


class LOUEEncoder(DomainPrepare, _SecretEncoder):
    """L-OUE client: values are labels or indices in ``[0, d)``. The permanent response of each value
    comes from the device secret (as :class:`~ldp.encoders.longitudinal.LGRREncoder`'s); ``charging``
    and ``prr_rng`` as there."""

    params: LOUEParams
    params_type: ClassVar[type[LOUEParams]] = LOUEParams

    def permanent_response(self, index: int) -> int:
        """The memoized round-1 bits of ``index`` as an int (the same for the same value, always)."""
        perm = self.params.perm
        return self._memoized(index, partial(unary_draw, perm.p, perm.q, perm.domain_size, index))

    def randomize(self, prepared: int) -> Report:
        pr = self.params
        bits = self.permanent_response(prepared) ^ self._rng.bernoulli_bits(pr.flip, pr.domain_size)
        return self._report({"bits": bits_from_int(bits, pr.domain_size)})

    def charge_for(self, prepared: int) -> MemoizedCharge:
        pr = self.params
        return self._memoized_charge(prepared, pr.report_charge, pr.memo_cap)

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of fresh devices (each bit Bernoulli(p*) or Bernoulli(q*), independent)."""
        from ldp.batch.unary import unary_encode_batch  # numpy, loaded only here

        return self._batch({"bits": unary_encode_batch(self.params, values, rng)})
