"""Repeated collection with memoization: longitudinal GRR and memoized 1BitMean. Client side
(standard library only). See docs/protocols/longitudinal.md.

Both protocols keep a per-device secret (made with the CSPRNG, never sent, the same one a
:class:`~ldp.client.TelemetryClient` derives per metric) and derive from it, with
:class:`~ldp.randomness.KeyedRandomSource` (HMAC-SHA256), a *permanent* response per value, so
that repeated reports of one value reveal at most that response however many are sent
(:mod:`ldp.encoders.longitudinal_memo`); what such reports leak and are charged is in
:mod:`ldp.encoders.longitudinal_charges`.

L-GRR, protocol ``lgrr`` (RAPPOR's PRR/IRR for a k-ary value)
    Round 1 (memoized per value ``v``): ``m = GRR_{ε_perm}(v)`` with keep probability ``p1``.
    Round 2 (fresh per report): ``r = GRR(m)`` with keep probability ``p2``. A GRR is "keep with
    λ = p − q, else a uniform value of the whole domain", so two rounds compose to one GRR with
    ``λ = λ1·λ2``; one report is ε-LDP iff ``λ1·λ2 = (e^ε − 1)/(e^ε + k − 1)``, which gives
    ``λ2`` in closed form (needs ``ε < ε_perm``). Both rounds are :class:`GRRParams` (round 2 at
    ``ε2 = ln(1 + kλ2/(1 − λ2))``), so the realized probabilities are the client's, and the stated
    ε of one report is that of the realized ``p* = p1·p2 + (1 − p1)·q2``.

Memoized 1BitMean with α-point rounding (Ding, Kulkarni & Yekhanin, NeurIPS 2017 §4), ``memo-mean``
    ``[low, high]`` is cut into ``buckets`` = s equal buckets with edges ``j = 0..s``. A device
    holds a uniform offset α (64 bits, from its secret); ``x`` with ``u = s·(x − low)/(high − low)
    = j0 + φ`` is rounded up to edge ``j0 + 1`` iff ``α < φ`` (at the client's 2^-64 resolution),
    so ``E_α[j] = u``. The 1BitMean bit of edge ``j`` (``bernoulli(j/s) XOR bernoulli(q)``,
    ``q = 1/(1 + e^ε)``) is memoized from the secret; each report replays it, flipped with a
    fresh probability ``γ`` (output perturbation; γ = 0 replays it as is).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, partial
from typing import Any, ClassVar, Self

from ldp.encoders.base import DomainPrepare, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import refuse_range, refuse_relation, renaming
from ldp.encoders.base_draws import DrawRule, grr_draws
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.longitudinal_charges import (
    MAX_CHARGE_REPORTS,
    lgrr_leakage,
    memo_report_charge,
    memoized_charges,
    memoized_horizon_cost,
)
from ldp.encoders.longitudinal_memo import CHARGING, MEMO_ENTRIES, TWO_ROUND_RULES, _SecretEncoder, check_two_rounds
from ldp.encoders.numeric import DuchiParams, NumericParams
from ldp.encoders.randomized_response import GRRParams
from ldp.privacy.accountant import MemoizedCharge, PrivacyCost
from ldp.privacy.shuffle import ShuffleStructure, k_rr_structure
from ldp.randomness import KeyedRandomSource, RandomSource, bernoulli_threshold, check_probability, realized_probability
from ldp.reports import Field, Report, ReportBatch

__all__ = ["LGRRParams", "LGRREncoder", "MemoMeanParams", "MemoMeanEncoder", "CHARGING", "grr_draw",
           "lgrr_leakage", "memo_report_charge", "MAX_BUCKETS", "PLANNER_PERM_FACTOR", "memoized_charges",
           "memoized_horizon_cost", "MAX_CHARGE_REPORTS", "MEMO_ENTRIES"]

PLANNER_PERM_FACTOR = 4.0
"""The planner's ``epsilon_perm / ε`` for L-GRR and L-OUE: about the ratio of Google's RAPPOR defaults
(``ε∞ ≈ 4.4``, ``ε₁ ≈ 1.1``)."""
MAX_BUCKETS = 1 << 16
"""Most buckets of the memoized 1BitMean (a device memoizes at most ``buckets + 1`` bits)."""
_ALPHA_DOMAIN = b"ldp/longitudinal/alpha/v1\x00"


def grr_draw(params: GRRParams, index: int, rng: RandomSource) -> int:
    """One GRR response of ``index``: keep with probability ``p``, else a uniform other value."""
    if rng.bernoulli(params.p):
        return index
    other = rng.randbelow(params.domain_size - 1)
    return other + (other >= index)


@dataclass(frozen=True)
class LGRRParams(ProtocolParams):
    """L-GRR over ``domain_size`` values: permanent GRR at ``epsilon_perm`` (memoized), then a fresh
    GRR per report such that one report is ``epsilon``-LDP (``epsilon < epsilon_perm``)."""

    epsilon_perm: float
    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "lgrr"
    value_class: ClassVar[str | None] = "category"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "epsilon_perm": ParamInfo("the privacy budget of the permanent (memoized) response: the bound over every "
                                  "report of one value", (Range(min=0, min_exclusive=True, finite=True),))}
    refusal_rules: ClassVar[Mapping[str, str]] = TWO_ROUND_RULES
    draw_rule = DrawRule("`B(p2)`, then `R(d−1)` if false",
                         lambda s, pr, v: grr_draws(s, pr.instantaneous.p, pr.domain_size))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon_perm": 4.0, "epsilon": 1.0, "domain_size": 10},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon_perm", check_epsilon(self.epsilon_perm, "epsilon_perm"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.domain_size, "domain_size", 2, 2**32)
        check_two_rounds("L-GRR", self.epsilon, self.epsilon_perm)
        if self.labels is not None and isinstance(self.labels, (list, tuple)):
            object.__setattr__(self, "labels", tuple(self.labels))
        with renaming({"epsilon": "epsilon_perm"}):
            _ = self.permanent  # its checks (labels, keep probabilities) apply, its epsilon being epsilon_perm
        _ = self.instantaneous
        self.check_collectable()

    @classmethod
    def examples(cls) -> list[LGRRParams]:
        """Three values, and four labels (conformance suite)."""
        return [cls(2.0, 0.5, 3), cls(3.0, 1.0, 4, ("n", "e", "s", "w"))]

    @classmethod
    def audit_examples(cls) -> list[LGRRParams]:
        """The examples and two values (where the composed channel is the paper's two-path one)."""
        return [*cls.examples(), cls(1.0, 0.2, 2)]

    @cached_property
    def permanent(self) -> GRRParams:
        """Round 1, the memoized GRR at ``epsilon_perm`` (also the labels' index)."""
        return GRRParams(self.epsilon_perm, self.domain_size, self.labels)

    @cached_property
    def instantaneous(self) -> GRRParams:
        """Round 2: ``λ2 = λ*/λ1`` with ``λ* = (e^ε − 1)/(e^ε + k − 1)`` (module docstring)."""
        k, perm = self.domain_size, self.permanent
        lam = math.expm1(self.epsilon) / (math.expm1(self.epsilon) + k) / (perm.p - perm.q)
        if not 0.0 < lam < 1.0:
            raise refuse_relation(f"epsilon={self.epsilon} is not below the realized permanent ε "
                                  f"{perm.effective_epsilon} at domain_size={k}: no instantaneous round gives it",
                                  "epsilon<realized_epsilon_perm", "epsilon", "epsilon_perm", "domain_size")
        eps2 = math.log1p(k * lam / (1.0 - lam))
        try:
            return GRRParams(eps2, k)
        except ValueError as err:
            raise refuse_relation(f"the instantaneous round of these L-GRR parameters is not realizable: {err}",
                                  "instantaneous_realizable", "epsilon", "epsilon_perm", "domain_size") from None

    @property
    def p_star(self) -> float:
        """Realized ``Pr[report = v | v] = p1·p2 + (1 − p1)·q2``."""
        a, b = self.permanent, self.instantaneous
        return a.p * b.p + (1.0 - a.p) * b.q

    @property
    def q_star(self) -> float:
        """Realized ``Pr[report = u | v]`` for each ``u != v``: ``(1 − p*)/(k − 1)``."""
        return (1.0 - self.p_star) / (self.domain_size - 1)

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p*, q*)`` of one report (over fresh devices)."""
        return self.p_star, self.q_star

    @property
    def shuffle_structure(self) -> ShuffleStructure:
        """One report is k-RR with ``(p*, q*)`` (each device's permanent response is its own): k-RR's clone
        structure holds for one window; across windows the reports share that response (see
        :func:`ldp.privacy.over_time.protocol_over_time`)."""
        return k_rr_structure(self.p_star, self.q_star, self.domain_size)

    @cached_property
    def realized_epsilon(self) -> float:
        """ε of one report, ``ln(p*/q*)`` of the realized probabilities (computed exactly in rationals,
        as the exact audit does)."""
        k, p1, p2 = self.domain_size, Fraction(self.permanent.p), Fraction(self.instantaneous.p)
        ps = p1 * p2 + (1 - p1) * (1 - p2) / (k - 1)
        ratio = ps * (k - 1) / (1 - ps)
        return math.log(ratio.numerator) - math.log(ratio.denominator)

    @property
    def realized_epsilon_perm(self) -> float:
        """ε of the permanent response, which bounds every number of reports of one value."""
        return self.permanent.effective_epsilon

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """One report: ``max(epsilon, realized_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.realized_epsilon))

    @cached_property
    def memo_cap(self) -> PrivacyCost:
        """Every report of one value together: ``max(epsilon_perm, realized_epsilon_perm)``."""
        return PrivacyCost(max(self.epsilon_perm, self.realized_epsilon_perm))

    def leakage(self, t: int) -> float:
        """Exact worst-case ε of ``t`` reports of one value (:func:`lgrr_leakage`, realized probabilities)."""
        return lgrr_leakage(self.permanent.p, self.instantaneous.p, self.domain_size, check_int(t, "t", 1))

    @cached_property
    def report_charge(self) -> PrivacyCost:
        """The per-report charge ``c`` of ``charging="min"``: ``max_{t<=T} L(t)/t`` with ``T`` the first
        ``t`` at which ``t·c >= cap``, so ``min(t·c, cap)`` bounds ``L(t)`` for every t (beyond T, the
        cap does: every report is post-processing of the permanent response). The cap itself if no
        such T is found within :data:`MAX_CHARGE_REPORTS` reports (then ``"min"`` is ``"upfront"``)."""
        return memo_report_charge(self.privacy_cost, self.memo_cap, self.leakage)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("index", "uint", self.domain_size),)

    @property
    def aggregate_cells(self) -> int:
        return self.domain_size

    def index_of(self, value: Any) -> int:
        return self.permanent.index_of(value)

    def label_of(self, index: int) -> str:
        return self.permanent.label_of(index)

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: one report at ``ε``, the permanent response at ``epsilon_perm = 4ε``
        (:data:`PLANNER_PERM_FACTOR`)."""
        return cls(PLANNER_PERM_FACTOR * epsilon, epsilon, domain_size)

    def horizon_cost(self, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
        """Charged ``min(R·c, ε_perm)`` per value (``charging="min"``, the encoder's default)."""
        return memoized_horizon_cost(self, reports, distinct)


@dataclass(frozen=True)
class MemoMeanParams(NumericParams):
    """Memoized 1BitMean with α-point rounding to ``buckets`` buckets and output perturbation ``gamma``."""

    buckets: int = 16
    gamma: float = 0.0
    protocol: ClassVar[str] = "memo-mean"
    value_class: ClassVar[str | None] = "number"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "buckets": ParamInfo("the number of buckets the range is split into before the memoized response",
                             (Range(min=1, max=65536),))}
    draw_rule = DrawRule("`B(γ)`", lambda s, pr, v: s.B(pr.gamma_realized))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 1.0, "low": 0.0, "high": 1.0},)

    def __post_init__(self) -> None:
        self._check_common()
        check_int(self.buckets, "buckets", 1, MAX_BUCKETS)
        gamma = check_probability(self.gamma, "gamma")
        if not 0.0 <= gamma < 0.5:
            raise refuse_range(f"gamma (the output flip probability) must be in [0, 0.5), got {gamma}", self.gamma,
                               "gamma", min=0, max=0.5, max_exclusive=True)
        object.__setattr__(self, "gamma", gamma)
        _ = self.memo.q  # the 1BitMean's checks apply
        self.check_collectable()

    @cached_property
    def memo(self) -> DuchiParams:
        """The memoized 1BitMean bit's parameters (its ε bounds every report of one rounded value)."""
        return DuchiParams(self.epsilon, self.low, self.high, self.clip)

    @property
    def gamma_realized(self) -> float:
        return realized_probability(self.gamma)

    @property
    def q(self) -> float:
        """Realized ``Pr[report = 1 | x = low]`` of one report: ``γ + (1 − 2γ)·q_memo``."""
        g = self.gamma_realized
        return g + (1.0 - 2.0 * g) * self.memo.q

    @property
    def realized_epsilon(self) -> float:
        """ε of one report, ``ln((1 − q)/q)`` (the memoized bit's ε when γ = 0, less when γ > 0)."""
        return math.log1p((1.0 - 2.0 * self.q) / self.q)

    @property
    def memo_cap(self) -> PrivacyCost:
        """Every report of one rounded value together: the memoized bit's realized ε."""
        return self.memo.privacy_cost

    @classmethod
    def examples(cls) -> list[Self]:
        """Two buckets with output flips, four without (conformance suite)."""
        return [cls(1.0, 0.0, 10.0, buckets=2, gamma=0.1), cls(2.0, -1.0, 1.0, buckets=4)]

    def audit_inputs(self) -> list[float]:
        """The bucket edges: no α-point rounding there, so one device's law is every device's (the batch's)."""
        return [self.low + j * (self.high - self.low) / self.buckets for j in range(self.buckets + 1)]

    def rounding(self, x: float) -> tuple[int, float]:
        """``(j0, φ)`` with ``s·unit(x) = j0 + φ``, ``0 <= φ < 1`` (``j0 = s``, ``φ = 0`` at ``high``)."""
        u = self.unit(x) * self.buckets
        j0 = min(math.floor(u), self.buckets)
        return j0, (u - j0 if j0 < self.buckets else 0.0)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("bit", "uint", 2),)

    @property
    def aggregate_cells(self) -> int:
        return 2


class LGRREncoder(DomainPrepare, _SecretEncoder):
    """L-GRR client: values are labels or indices in ``[0, k)``. ``charging="min"`` charges
    :attr:`LGRRParams.report_charge` per report, at most ``epsilon_perm`` per value; ``"upfront"``
    charges ``epsilon_perm`` on a value's first report. ``prr_rng`` (audits, simulation) draws each
    value's permanent response from it instead of from the secret, once per encoder."""

    params: LGRRParams
    params_type: ClassVar[type[LGRRParams]] = LGRRParams

    def permanent_response(self, index: int) -> int:
        """The memoized round-1 response of ``index`` (the same for the same value, always)."""
        return self._memoized(index, partial(grr_draw, self.params.permanent, index))

    def randomize(self, prepared: int) -> Report:
        memo = self.permanent_response(prepared)
        return self._report({"index": grr_draw(self.params.instantaneous, memo, self._rng)})

    def charge_for(self, prepared: int) -> MemoizedCharge:
        pr = self.params
        return self._memoized_charge(prepared, pr.report_charge, pr.memo_cap)

    def encode_batch(self, values: Any, rng: Any = None, *, memo: Any = None) -> ReportBatch:
        """Vectorized reports (simulation): each row a fresh device, or the devices of ``memo``
        (:func:`ldp.batch.longitudinal.lgrr_memo`, one row of permanent responses per device)."""
        from ldp.batch.longitudinal import lgrr_encode_batch  # numpy, loaded only here

        return self._batch({"index": lgrr_encode_batch(self.params, values, rng, memo=memo)})


class MemoMeanEncoder(_SecretEncoder):
    """Memoized 1BitMean client: values are numbers in ``[low, high]``. The device's α comes from its
    secret (or ``alpha``, a 64-bit integer, for audits and tests). ``charging="min"`` charges one
    report's ε per report, at most the memoized bit's ε per rounded value; ``"upfront"`` charges that
    on a rounded value's first report. ``prr_rng`` draws the memoized bits from it, once per edge and
    encoder (audits)."""

    params: MemoMeanParams
    params_type: ClassVar[type[MemoMeanParams]] = MemoMeanParams

    def __init__(self, params: MemoMeanParams, *, alpha: int | None = None, **kwargs: Any) -> None:
        super().__init__(params, **kwargs)
        if alpha is None:
            alpha = KeyedRandomSource(self._secret, _ALPHA_DOMAIN + self._hex_fp).randbits(64)
        self.alpha = check_int(alpha, "alpha", 0, (1 << 64) - 1)

    def prepare(self, value: Any) -> int:
        """The rounded value: the edge index ``j`` in ``[0, buckets]`` (α-point rounding)."""
        j0, frac = self.params.rounding(self.params.check_value(value))
        return j0 + (self.alpha < bernoulli_threshold(frac))

    def memo_bit(self, j: int) -> int:
        """The memoized 1BitMean bit of edge ``j``: ``bernoulli(j/s) XOR bernoulli(q)``."""
        pr = self.params

        def draw(src: RandomSource) -> int:
            return int(src.bernoulli(j / pr.buckets) != src.bernoulli(pr.memo.q))

        return self._memoized(j, draw)

    def randomize(self, prepared: int) -> Report:
        bit = self.memo_bit(prepared)
        g = self.params.gamma_realized
        return self._report({"bit": bit ^ int(self._rng.bernoulli(g)) if g > 0 else bit})

    def charge_for(self, prepared: int) -> MemoizedCharge:
        pr = self.params
        return self._memoized_charge(prepared, pr.privacy_cost, pr.memo_cap)

    def encode_batch(self, values: Any, rng: Any = None, *, devices: Any = None) -> ReportBatch:
        """Vectorized reports (simulation): each row a fresh device, or the devices of ``devices``
        (:func:`ldp.batch.longitudinal.memo_mean_devices`: their α and memoized bits)."""
        from ldp.batch.longitudinal import memo_mean_encode_batch  # numpy, loaded only here

        return self._batch({"bit": memo_mean_encode_batch(self.params, values, rng, devices=devices)})
