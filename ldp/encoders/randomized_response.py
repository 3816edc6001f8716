"""Randomized response: binary (forced response, general p/q form) and k-ary (GRR). Client side.

Binary RR (Warner 1965; forced-response coin scheme of Dwork & Roth §3.2, seed 004 §3.2.2)
    A true bit ``x`` is reported as 1 with probability ``q`` if ``x = 1`` and ``p`` if ``x = 0``
    (``0 < p < q < 1``). Forced response with truth probability α and forced-"yes" probability β
    is ``p = (1-α)β``, ``q = α + (1-α)β``; fair coins (α = β = 1/2) give p = 1/4, q = 3/4.
    ε = max(ln(q/p), ln((1-p)/(1-q))).

Generalized randomized response (GRR, k-RR / direct encoding; Wang et al., USENIX Security 2017)
    A value ``v`` in a domain of ``d`` is reported as itself with probability
    ``p = e^ε/(e^ε+d-1)`` and as each other value with ``q = 1/(e^ε+d-1)``; it is ε-LDP.

Realized probabilities
    The client draws Bernoulli(p) as ``floor(p·2^64)/2^64`` (:mod:`ldp.randomness`). Both
    protocols state the ε of those realized probabilities, and refuse parameters the client cannot
    realize (a probability below 2^-64, p and q equal at that resolution, a GRR whose keep
    probability rounds to 1), so a claimed ε is never smaller than the exact audit's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Self

from ldp.encoders.base import DomainPrepare, Encoder, LabeledDomain, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import refuse_range, refuse_relation, refuse_type
from ldp.encoders.base_draws import DrawRule, grr_draws
from ldp.encoders.base_fields import PROBABILITY, ParamInfo
from ldp.encoders.base_vdaf import Prio3Fit
from ldp.privacy.accountant import PrivacyCost
from ldp.privacy.shuffle import ShuffleStructure, k_rr_structure
from ldp.randomness import check_probability, check_resolvable, logistic_tail, realized_probability
from ldp.reports import Field, Report, ReportBatch

__all__ = ["BinaryRRParams", "BinaryRREncoder", "GRRParams", "GRREncoder"]


@dataclass(frozen=True)
class BinaryRRParams(ProtocolParams):
    """Binary randomized response: ``Pr[report 1 | 0] = p``, ``Pr[report 1 | 1] = q``, 0 < p < q < 1."""

    p: float
    q: float
    protocol: ClassVar[str] = "rr"
    value_class: ClassVar[str | None] = "boolean"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "p": ParamInfo("the probability of answering yes when the truth is no", (PROBABILITY,)),
        "q": ParamInfo("the probability of answering yes when the truth is yes (above p)", (PROBABILITY,))}
    refusal_rules: ClassVar[Mapping[str, str]] = {
        "0<p<q<1": "0 < p < q < 1 (a finite ε, a truthful bias)",
        "p_q_resolvable": "p and q must differ at the client's 2^-64 resolution"}
    draw_rule = DrawRule("`B(q)` for a 1, `B(p)` for a 0", lambda s, pr, v: s.B(pr.q if v else pr.p))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"p": 0.1, "q": 0.9},)

    def __post_init__(self) -> None:
        p, q = check_probability(self.p, "p"), check_probability(self.q, "q")
        if not 0.0 < p < q < 1.0:
            raise refuse_relation(f"binary RR needs 0 < p < q < 1 (finite ε, truthful bias), got p={p}, q={q}",
                                  "0<p<q<1", "p", "q")
        check_resolvable(p, "p")
        if realized_probability(p) == realized_probability(q):
            raise refuse_relation(f"p={p!r} and q={q!r} are equal at the client's 2^-64 resolution: reports would "
                                  "carry no information", "p_q_resolvable", "p", "q")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)
        self.check_collectable()

    @classmethod
    def from_epsilon(cls, epsilon: float) -> BinaryRRParams:
        """Symmetric (Warner) RR at ε: ``q = e^ε/(1+e^ε)``, ``p = 1 - q``."""
        eps = check_epsilon(epsilon)
        p, q = logistic_tail(eps), logistic_tail(-eps)
        if q == 1.0:
            raise refuse_relation(f"epsilon={eps} is too large for binary RR: q = 1/(1+e^-ε) rounds to 1 in double "
                                  "precision, so reports would not be private", "epsilon_too_large", "epsilon")
        return cls(p, q)

    @classmethod
    def forced_response(cls, truth_prob: float = 0.5, yes_prob: float = 0.5) -> BinaryRRParams:
        """Answer truthfully with probability α = ``truth_prob``, else "yes" with β = ``yes_prob``."""
        a, b = check_probability(truth_prob, "truth_prob"), check_probability(yes_prob, "yes_prob")
        if not (0.0 < a < 1.0 and 0.0 < b < 1.0):
            name, given = ("truth_prob", truth_prob) if not 0.0 < a < 1.0 else ("yes_prob", yes_prob)
            raise refuse_range(f"forced response needs 0 < truth_prob < 1 and 0 < yes_prob < 1, got {a}, {b}", given,
                               name, min=0, max=1, min_exclusive=True, max_exclusive=True)
        return cls((1.0 - a) * b, a + (1.0 - a) * b)

    @classmethod
    def examples(cls) -> list[BinaryRRParams]:
        """Warner's symmetric RR and an asymmetric forced response (conformance suite)."""
        return [cls(0.25, 0.75), cls.forced_response(0.3, 0.8)]

    @classmethod
    def audit_examples(cls) -> list[BinaryRRParams]:
        """The examples, an asymmetric pair whose ε is the other ratio's (``(1−p)/(1−q)``), and a large ε."""
        return [*cls.examples(), cls(0.1, 0.6), cls.from_epsilon(4.0)]

    @property
    def epsilon(self) -> float:
        """ε = max(ln(q/p), ln((1-p)/(1-q))) of the realized p and q (equal to p and q above 2^-11)."""
        p, q = realized_probability(self.p), realized_probability(self.q)
        return max(math.log(q / p), math.log((1.0 - p) / (1.0 - q)))

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        return PrivacyCost(self.epsilon)

    @property
    def shuffle_structure(self) -> ShuffleStructure | None:
        """Symmetric RR (``p + q == 1`` exactly as realized: Warner's) is k-RR over two values, whose clone
        structure tightens the shuffled ε; an asymmetric forced response gets the generic bound (``None``)."""
        p, q = realized_probability(self.p), realized_probability(self.q)
        return k_rr_structure(q, p, 2) if p + q == 1.0 and p < q else None

    @property
    def domain_size(self) -> int:
        return 2

    @property
    def aggregate_cells(self) -> int:
        return 1

    @property
    def response_matrix(self) -> tuple[tuple[float, ...], ...]:
        """``[[1−p, 1−q], [p, q]]``: report bit ``y`` given value ``x`` (bit y supports value y)."""
        return ((1.0 - self.p, 1.0 - self.q), (self.p, self.q))

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("bit", "uint", 2),)

    def prio3_fit(self) -> Prio3Fit:
        """The reported bit, counted by Prio3Count (its sum is :class:`~ldp.decoders.randomized_response.RRAggregate`'s
        ``ones``)."""
        return Prio3Fit("Prio3Count", "bit", "ones")

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: symmetric (Warner) RR at ``ε``, for ``domain_size = 2`` only."""
        if domain_size != 2:
            raise ValueError(f"rr is binary: it needs domain_size 2, got {domain_size}; use grr for more values")
        return cls.from_epsilon(epsilon)  # type: ignore[return-value]  # from_epsilon builds cls

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """A frequency oracle for two values only."""
        return domain_size == 2

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> BinaryRRParams:
        """rr's own options: forced response (``truth_prob`` α, ``yes_prob`` β; a coin of 1/2 for the one not
        given), else the flip probabilities ``p`` and ``q`` (both), else symmetric RR at ``epsilon``, else forced
        response with fair coins."""
        truth, yes, p, q = (options.get(k) for k in ("truth_prob", "yes_prob", "p", "q"))
        if truth is not None or yes is not None:
            return cls.forced_response(truth if truth is not None else 0.5, yes if yes is not None else 0.5)
        if p is not None or q is not None:
            if p is None or q is None:
                raise ValueError("rr with --p/--q needs both")
            return cls(p, q)
        if options.get("epsilon") is not None:
            return cls.from_epsilon(options["epsilon"])
        return cls.forced_response()

    def with_epsilon(self, epsilon: float) -> Self:
        """Symmetric (Warner) RR at ``ε`` (:meth:`from_epsilon`): ``p`` and ``q`` follow from ε alone."""
        return type(self).from_epsilon(epsilon)  # type: ignore[return-value]  # from_epsilon builds cls


@dataclass(frozen=True)
class GRRParams(LabeledDomain, ProtocolParams):
    """Generalized randomized response over ``domain_size`` values, optionally named by ``labels``."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "grr"
    value_class: ClassVar[str | None] = "category"
    draw_rule = DrawRule("`B(p)`, then `R(d−1)` if false", lambda s, pr, v: grr_draws(s, pr.p, pr.domain_size))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 0.7, "domain_size": 100},
        {"epsilon": 1.0, "domain_size": 3, "labels": ["caf\u00e9", "\u65e5\u672c", "\U0001f600 \"q\"\\"]})

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.domain_size, "domain_size", 2, 2**32)
        if self.p >= 1.0:
            raise refuse_relation(f"epsilon={self.epsilon} is too large for domain_size={self.domain_size}: the keep "
                                  "probability rounds to 1 at the client's resolution, so reports would not be "
                                  "private", "epsilon_too_large", "epsilon", "domain_size")
        if self.p <= self.q:
            raise refuse_relation(f"epsilon={self.epsilon} is too small for domain_size={self.domain_size}: the keep "
                                  "probability rounds to 1/d, so reports would carry no information",
                                  "epsilon_too_small", "epsilon", "domain_size")
        self._check_labels()
        self.check_collectable()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str]) -> GRRParams:
        return cls(epsilon, len(labels), tuple(labels))

    @classmethod
    def examples(cls) -> list[GRRParams]:
        """Three indices, and four labels (conformance suite)."""
        return [cls(1.0, 3), cls.from_labels(2.0, ["red", "green", "blue", "grey"])]

    @classmethod
    def audit_examples(cls) -> list[GRRParams]:
        """The examples, two values at a large ε, and eight at a small one."""
        return [*cls.examples(), cls(3.0, 2), cls(0.5, 8)]

    @cached_property
    def p(self) -> float:
        """Probability of reporting the true value, ``e^ε/(e^ε+d-1)``, as the client realizes it."""
        return realized_probability(1.0 / (1.0 + (self.domain_size - 1) * math.exp(-self.epsilon)))

    @property
    def q(self) -> float:
        """Probability of reporting one given other value, ``1/(e^ε+d-1)``: ``(1-p)/(d-1)`` exactly
        as the client draws it (a uniform other value when it does not keep)."""
        return (1.0 - self.p) / (self.domain_size - 1)

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, q)``: a report names the user's value or one given other value."""
        return self.p, self.q

    @property
    def shuffle_structure(self) -> ShuffleStructure:
        """k-RR's clone structure (:func:`~ldp.privacy.shuffle.k_rr_structure`) of the realized ``p``, ``q``."""
        return k_rr_structure(self.p, self.q, self.domain_size)

    @property
    def effective_epsilon(self) -> float:
        """The ε of the realized probabilities, ``ln(p(d-1)/(1-p))``: ``epsilon`` up to rounding
        (~1e-16 relative for ε below ~10); near the resolution limit it may differ more."""
        return math.log(self.p * (self.domain_size - 1) / (1.0 - self.p))

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """The cost charged per report: ``max(epsilon, effective_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.effective_epsilon))

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("index", "uint", self.domain_size),)

    def prio3_fit(self) -> Prio3Fit:
        """The reported index, one-hot in Prio3Histogram over the d values (its sum is
        :class:`~ldp.decoders.randomized_response.GRRAggregate`'s ``counts``)."""
        return Prio3Fit("Prio3Histogram", "index", "counts",
                        {"length": self.domain_size})

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: ``GRR`` over the ``domain_size`` values at ``ε``."""
        return cls(epsilon, domain_size)

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """A frequency oracle over any number of values."""
        return True

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Self:
        """GRR from ``epsilon`` and ``d``, both needed (no planner's choice for a missing one)."""
        if options.get("epsilon") is None or options.get("d") is None:
            raise ValueError("grr needs --epsilon and --d")
        return cls(options["epsilon"], options["d"])



class BinaryRREncoder(Encoder):
    """Client encoder for :class:`BinaryRRParams`; values are ``bool`` or ``0``/``1``."""

    params: BinaryRRParams
    params_type: ClassVar[type[BinaryRRParams]] = BinaryRRParams

    def prepare(self, value: Any) -> int:
        if value is True or value is False:
            return int(value)
        if isinstance(value, int):
            if value in (0, 1):
                return value
            raise refuse_range(f"binary RR values must be 0 or 1, got {value}", value, min=0, max=1)
        raise refuse_type(f"binary RR values must be bool or 0/1, got {type(value).__name__}", value, "bool_or_01")

    def randomize(self, prepared: int) -> Report:
        return self._report(self.randomize_payload(prepared))

    def randomize_payload(self, prepared: int) -> dict[str, Any]:
        return {"bit": int(self._rng.bernoulli(self.params.q if prepared else self.params.p))}

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        from ldp.batch.randomized_response import rr_encode_batch  # numpy, loaded only here

        return self._batch({"bit": rr_encode_batch(self.params, values, rng)})


class GRREncoder(DomainPrepare, Encoder):
    """Client encoder for :class:`GRRParams`; values are labels or indices in ``[0, d)``."""

    params: GRRParams
    params_type: ClassVar[type[GRRParams]] = GRRParams

    def randomize(self, prepared: int) -> Report:
        return self._report(self.randomize_payload(prepared))

    def randomize_payload(self, prepared: int) -> dict[str, Any]:
        rng, pr = self._rng, self.params
        if rng.bernoulli(pr.p):
            return {"index": prepared}
        other = rng.randbelow(pr.domain_size - 1)  # uniform over the d-1 other values
        return {"index": other + (other >= prepared)}

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized GRR: keep each value with probability p, else a uniform other value."""
        from ldp.batch.randomized_response import grr_encode_batch  # numpy, loaded only here

        return self._batch({"index": grr_encode_batch(self.params, values, rng)})
