"""Memoized dBitFlip, protocol ``memo-dbitflip``: dBitFlip with the permanent per-bucket response of Ding, Kulkarni
& Yekhanin (NeurIPS 2017, §3 and §4). Client side (standard library only). See docs/protocols/changing-values.md.

The device draws, once and for all from its secret (:class:`~ldp.randomness.KeyedRandomSource`, HMAC-SHA256), its
sample ``S`` of ``d`` of the ``k`` buckets (uniform, independent of any value), and for each value bucket ``v`` the
memoized response ``b(v)``: for every ``j ∈ S`` a bit that is 1 with probability ``p1 = e^{ε/2}/(e^{ε/2}+1)`` if
``j = v`` and ``p0 = 1/(e^{ε/2}+1)`` otherwise, independently over ``(j, v)``. A report of a value in bucket ``v``
sends ``(S, b(v))``, each bit flipped afresh with probability ``γ`` (output perturbation; ``γ = 0`` replays
``b(v)`` as is). Over the devices' secrets one report is dBitFlip with ``p_i' = γ + (1 − 2γ)·p_i``, so the server
uses dBitFlip's estimator and exact variance with these (:mod:`ldp.decoders.dbitflip_memo`).

What repeated reports leak (realized probabilities; ``up = ln(p1/p0)``, ``down = ln((1 − p0)/(1 − p1))``):

* **the same bucket**, any number of reports: at most the memoized response's ε (``memo_cap``: ``up + down`` for
  ``d >= 2``, ``max(up, down)`` for ``d = 1``, dBitFlip's ε); with ``γ = 0`` every replay is the first report.
  With ``γ > 0``, ``t`` reports leak at most ``t·privacy_cost`` (per bit, the log-likelihood ratio of t flipped
  copies is a concave function of their sum, as for memoized 1BitMean), so ``charging="min"`` charges one report's
  ε per report, capped at ``memo_cap`` per bucket;
* **a change of bucket** reveals the independent response of the new bucket. Between two trajectories with the
  same change pattern whose ``m`` runs hold distinct buckets, the responses leak exactly
  ``L(m) = min(m, d)·(up + down)`` (``max(up, down)`` when ``m = d = 1``): a response's log-ratio comes from the bits
  at its own bucket (up to ``up``) and at the other trajectory's bucket (up to ``down``), both only if sampled, and
  each sampled bucket is some run's bucket at most once in each trajectory (:meth:`MemoDBitFlipParams.change_leakage`).
  It is at most ``m·memo_cap``, what the ledger charges (one key per bucket);
* **the change points** are not covered: with ``γ = 0`` a changed response shows that the bucket changed (the
  exact audit of "no change" against "a change" is infinite); ``γ > 0`` makes it finite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Self

from ldp.encoders.base import ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import refuse_range
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.histogram import DBitFlipParams
from ldp.encoders.histogram_buckets import _SampledBits
from ldp.encoders.longitudinal_charges import memoized_charges, memoized_horizon_cost
from ldp.encoders.longitudinal_memo import _SecretEncoder
from ldp.privacy.accountant import MemoizedCharge, PrivacyCost
from ldp.randomness import KeyedRandomSource, RandomSource, check_probability, realized_probability
from ldp.reports import Report, ReportBatch, bits_from_int

__all__ = ["MemoDBitFlipParams", "MemoDBitFlipEncoder", "sample_mask", "memoized_charges"]

_SAMPLE_DOMAIN = b"ldp/dbitflip-memo/sample/v1\x00"


def sample_mask(k: int, d: int, src: RandomSource) -> int:
    """A uniform d-subset of ``range(k)`` as a bit mask, by Floyd's algorithm (``d`` exact ``randbelow``)."""
    return (1 << k) - 1 if d == k else src.subset_mask(k, d)


@dataclass(frozen=True)
class MemoDBitFlipParams(_SampledBits, ProtocolParams):
    """Memoized dBitFlip over the buckets of ``edges``: a permanent sample of ``d`` buckets, a permanent response
    per value bucket, each report's bits flipped with probability ``gamma``."""

    epsilon: float
    edges: tuple[float, ...]
    d: int = 1
    clip: bool = False
    gamma: float = 0.0
    protocol: ClassVar[str] = "memo-dbitflip"
    value_class: ClassVar[str | None] = "number"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "d": ParamInfo("the number of buckets a report samples and reports on",
                       (Range(min=1, dynamic="at most the number of buckets, len(edges) − 1"),))}
    draw_rule = DrawRule("`B(γ)` per sampled bucket", lambda s, pr, v: [s.B(pr.gamma_realized) for _ in range(pr.d)])
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 2.0, "edges": [float(i) for i in range(17)], "d": 8, "gamma": 0.05},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        self._check_buckets()
        check_int(self.d, "d", 1, self.num_buckets)
        gamma = check_probability(self.gamma, "gamma")
        if not 0.0 <= gamma < 0.5:
            raise refuse_range(f"gamma (the per-report flip probability) must be in [0, 0.5), got {gamma}",
                               self.gamma, "gamma", min=0, max=0.5, max_exclusive=True)
        object.__setattr__(self, "gamma", gamma)
        _ = self.memo  # dBitFlip's checks of epsilon (p0 > 0, p1 < 1, p0 < p1 at the client's resolution)
        self.check_collectable()

    @cached_property
    def memo(self) -> DBitFlipParams:
        """The memoized responses' dBitFlip (its ε bounds every report of one bucket)."""
        return DBitFlipParams(self.epsilon, self.edges, self.d, self.clip)

    @property
    def gamma_realized(self) -> float:
        return realized_probability(self.gamma)

    @property
    def p1(self) -> float:
        """``Pr[bit = 1]`` at the value's own sampled bucket in one report: ``γ + (1 − 2γ)·p1_memo``."""
        g = self.gamma_realized
        return g + (1.0 - 2.0 * g) * self.memo.p1

    @property
    def p0(self) -> float:
        """``Pr[bit = 1]`` at another sampled bucket in one report: ``γ + (1 − 2γ)·p0_memo``."""
        g = self.gamma_realized
        return g + (1.0 - 2.0 * g) * self.memo.p0

    @property
    def effective_epsilon(self) -> float:
        """The worst log-ratio of one report (dBitFlip's with ``p0``, ``p1``; less than the memo's when γ > 0)."""
        up, down = math.log(self.p1 / self.p0), math.log((1.0 - self.p0) / (1.0 - self.p1))
        return up + down if self.d >= 2 else max(up, down)

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """One report: the memoized dBitFlip's cost when γ = 0, else :attr:`effective_epsilon`."""
        return self.memo.privacy_cost if self.gamma_realized == 0.0 else PrivacyCost(self.effective_epsilon)

    @property
    def memo_cap(self) -> PrivacyCost:
        """Every report of one bucket together: the memoized response's cost."""
        return self.memo.privacy_cost

    @cached_property
    def report_charge(self) -> PrivacyCost:
        """``charging="min"``'s charge per report: one report's ε (the per-bit bound, module docstring)."""
        return self.privacy_cost

    def change_leakage(self, runs: int) -> float:
        """Exact worst ε of the memoized responses of ``runs`` runs holding distinct buckets, between two
        trajectories with the same change pattern: ``min(runs, d)·(up + down)``, ``max(up, down)`` if
        ``runs = d = 1`` (module docstring)."""
        m, p0, p1 = check_int(runs, "runs", 1, self.num_buckets), self.memo.p0, self.memo.p1
        up, down = math.log(p1 / p0), math.log((1.0 - p0) / (1.0 - p1))
        return max(up, down) if m == 1 and self.d == 1 else min(m, self.d) * (up + down)

    @classmethod
    def examples(cls) -> list[Self]:
        """Three buckets with two sampled, and four with two sampled and output flips (conformance suite)."""
        return [cls(2.0, (0.0, 1.0, 2.0, 4.0), d=2), cls(1.0, (0.0, 10.0, 20.0, 40.0, 80.0), d=2, gamma=0.1)]

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """Like dBitFlip's: one sampled bucket at ``2ε`` (a report costs ``ε``) over ``edges = 0, 1, …, d``."""
        return cls(2 * epsilon, tuple(float(i) for i in range(domain_size + 1)), d=1)

    def horizon_cost(self, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
        """Charged ``min(R·c, memo_cap)`` per bucket (``charging="min"``), ``distinct`` buckets at most."""
        return memoized_horizon_cost(self, reports, distinct)


class MemoDBitFlipEncoder(_SecretEncoder):
    """Memoized dBitFlip client: values are numbers in the edges' range. ``charging="min"`` charges one report's ε
    per report, at most :attr:`~MemoDBitFlipParams.memo_cap` per bucket; ``"upfront"`` charges the cap on a bucket's
    first report. ``prr_rng`` (audits, simulation) draws the sample and the memoized bits from it, once per encoder."""

    params: MemoDBitFlipParams
    params_type: ClassVar[type[MemoDBitFlipParams]] = MemoDBitFlipParams

    def __init__(self, params: MemoDBitFlipParams, **kwargs: Any) -> None:
        super().__init__(params, **kwargs)
        self._sampled: int | None = None

    def prepare(self, value: Any) -> int:
        return self.params.bucket_of(value)

    @property
    def sampled(self) -> int:
        """The device's permanent sample of ``d`` buckets (a bit mask), from its secret."""
        if self._sampled is None:
            pr = self.params
            src = self._prr_rng if self._prr_rng is not None else \
                KeyedRandomSource(self._secret, _SAMPLE_DOMAIN + self._hex_fp)
            self._sampled = sample_mask(pr.num_buckets, pr.d, src)
        return self._sampled

    def memo_bits(self, bucket: int) -> int:
        """The memoized response of value bucket ``bucket``: a bit per sampled bucket ``j`` (mask), 1 with
        probability ``p1`` if ``j = bucket`` else ``p0``, drawn in increasing ``j``."""
        sampled, p0, p1 = self.sampled, self.params.memo.p0, self.params.memo.p1

        def draw(src: RandomSource) -> int:
            bits, rest = 0, sampled
            while rest:
                low = rest & -rest
                if src.bernoulli(p1 if low == 1 << bucket else p0):
                    bits |= low
                rest ^= low
            return bits

        return self._memoized(bucket, draw)

    def randomize(self, prepared: int) -> Report:
        bits, sampled, k = self.memo_bits(prepared), self.sampled, self.params.num_buckets
        g = self.params.gamma_realized
        if g > 0:
            rest = sampled
            while rest:  # a fresh flip per sampled bucket, in increasing order
                low = rest & -rest
                if self._rng.bernoulli(g):
                    bits ^= low
                rest ^= low
        return self._report({"sampled": bits_from_int(sampled, k), "bits": bits_from_int(bits, k)})

    def charge_for(self, prepared: int) -> MemoizedCharge:
        pr = self.params
        return self._memoized_charge(prepared, pr.report_charge, pr.memo_cap)

    def encode_batch(self, values: Any, rng: Any = None, *, devices: Any = None) -> ReportBatch:
        """Vectorized reports of bucket indices (simulation): each row a fresh device, or the devices of
        ``devices`` (:func:`ldp.batch.dbitflip_memo.memo_dbitflip_devices`: their samples and memoized bits)."""
        from ldp.batch.dbitflip_memo import memo_dbitflip_encode_batch  # numpy, loaded only here

        sampled, bits = memo_dbitflip_encode_batch(self.params, values, rng, devices=devices)
        return self._batch({"sampled": sampled, "bits": bits})
