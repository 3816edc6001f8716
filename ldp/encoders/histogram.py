"""Histograms of numbers: dBitFlip and bucketized GRR over the buckets of ``edges``. Client side.

Buckets
    ``edges`` are strictly increasing finite floats; bucket ``i`` is ``[edges[i], edges[i+1])`` and the
    last bucket is closed, ``[edges[k-1], edges[k]]``. A value outside ``[edges[0], edges[k]]`` is a
    client error unless ``clip=True``, which puts it in the first or last bucket
    (:mod:`ldp.encoders.histogram_buckets`).

dBitFlip (Ding, Kulkarni, Yekhanin, NeurIPS 2017)
    Each report samples ``d`` of the ``k`` buckets uniformly without replacement (independently of the
    value) and, for each sampled bucket ``j``, sends a bit that is 1 with probability
    ``p1 = e^{ε/2}/(e^{ε/2}+1)`` if ``j`` is the value's bucket and ``p0 = 1/(e^{ε/2}+1)`` otherwise.
    Wire: ``sampled`` (k bits, exactly d ones) and ``bits`` (k bits, zero outside ``sampled``).

    Privacy, from the realized probabilities ``p0``, ``p1`` (:func:`ldp.randomness.realized_probability`):
    the sampled set has the same law for every input, and two inputs change at most the bits of their
    two buckets. With ``d >= 2`` both may be sampled, so the worst ratio is
    ``ε* = ln(p1/p0) + ln((1-p0)/(1-p1))`` (``= ε`` when ``p0 + p1 = 1``); with ``d = 1`` at most one of
    them is, and ``ε* = max(ln(p1/p0), ln((1-p0)/(1-p1))) ≈ ε/2``. The charge is ``max(ε_nominal, ε*)``
    with ``ε_nominal = ε`` (``ε/2`` for ``d = 1``): exactly the audited ε, never below it.

Bucketized GRR and OUE
    GRR (:class:`~ldp.encoders.randomized_response.GRRParams`) or OUE (:class:`~ldp.encoders.unary.OUEParams`)
    over the ``k`` bucket indices, with the bucket labels as its labels; its law, cost and aggregate are
    GRR's or OUE's (OUE has the lower variance when ``k > 3e^ε + 2``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Self

from ldp.encoders.base import Encoder, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import refuse_relation, renaming
from ldp.encoders.base_draws import DrawPrimitives, DrawRule, grr_draws
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.histogram_buckets import MAX_BUCKETS, _Buckets, _SampledBits, bucket_index, bucket_labels, check_edges
from ldp.encoders.randomized_response import GRREncoder, GRRParams
from ldp.encoders.unary import OUEEncoder, OUEParams
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import logistic_tail, realized_probability
from ldp.reports import Field, Report, ReportBatch, bits_from_int

__all__ = ["MAX_BUCKETS", "check_edges", "bucket_labels", "bucket_index", "DBitFlipParams", "DBitFlipEncoder",
           "BucketGRRParams", "BucketGRREncoder", "BucketOUEParams", "BucketOUEEncoder"]


def _dbitflip_draws(s: DrawPrimitives, pr: DBitFlipParams, value: Any) -> None:
    """The sampled buckets (a subset's number, or Floyd's draws), then the flips of the sampled buckets."""
    k, d, b = pr.num_buckets, pr.d, pr.bucket_of(value)
    if d == k:
        sampled = (1 << k) - 1
    elif math.comb(k, d) <= 4096:
        subsets = [sum(1 << i for i in c) for c in itertools.combinations(range(k), d)]
        sampled = subsets[s.R(len(subsets))]
    else:
        sampled = 0
        for j in range(k - d, k):
            t = s.R(j + 1)
            sampled |= 1 << (j if sampled >> t & 1 else t)
    if d > 8:
        s.BB(pr.p0, k)
    else:
        for i in range(k):
            if sampled >> i & 1 and i != b:
                s.B(pr.p0)
    if sampled >> b & 1:
        s.B(pr.p1)


@dataclass(frozen=True)
class DBitFlipParams(_SampledBits, ProtocolParams):
    """dBitFlip over the buckets of ``edges``: each report carries ``d`` of the ``k`` buckets' bits."""

    epsilon: float
    edges: tuple[float, ...]
    d: int = 1
    clip: bool = False
    protocol: ClassVar[str] = "dbitflip"
    value_class: ClassVar[str | None] = "number"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "d": ParamInfo("the number of buckets a report samples and reports on",
                       (Range(min=1, dynamic="at most the number of buckets, len(edges) − 1"),))}
    draw_rule = DrawRule("the sample (nothing if `d = k`; `R(C(k, d))` if `C(k, d) <= 4096`; else `R(k−d+1)`, …, "
                         "`R(k)`), then `BB(p0, k)` if `d > 8`, else `B(p0)` per sampled bucket other than the "
                         "value's, then `B(p1)` if the value's bucket is sampled", _dbitflip_draws)
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 2.0, "edges": [0.0, 10.0, 20.0, 40.0, 80.0], "d": 2},  # 6 subsets: one randbelow
        {"epsilon": 2.0, "edges": [float(i) for i in range(17)], "d": 8},  # 12,870 subsets: Floyd's algorithm
        {"epsilon": 2.0, "edges": [float(i) for i in range(21)], "d": 10})  # d > 8

    @classmethod
    def examples(cls) -> list[DBitFlipParams]:
        """One bit of three unequal buckets; two of four; three of eleven (a report's rows span two bytes)."""
        return [cls(1.0, (0.0, 1.0, 2.0, 4.0)), cls(2.0, (-1.0, 0.0, 0.5, 1.0, 3.0), d=2),
                cls(1.0, tuple(float(i) for i in range(12)), d=3)]

    @classmethod
    def audit_examples(cls) -> list[DBitFlipParams]:
        """Enumerable: one and two of the few buckets, every bucket (``d = k``), and nine of nine (``d > 8``)."""
        return [cls(1.0, (0.0, 1.0, 2.0, 4.0)), cls(2.0, (-1.0, 0.0, 0.5, 1.0, 3.0), d=2),
                cls(0.5, (0.0, 1.0, 2.0, 3.0, 4.0), d=4), cls(2.0, tuple(float(i) for i in range(10)), d=9)]

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        self._check_buckets()
        check_int(self.d, "d", 1, self.num_buckets)
        if self.p0 == 0.0 or self.p1 >= 1.0:
            raise refuse_relation(f"epsilon={self.epsilon} is too large for dBitFlip: 1/(e^(ε/2)+1) rounds to 0 at "
                                  "the client's resolution, so reports would not be private", "epsilon_too_large",
                                  "epsilon")
        if self.p1 <= self.p0:
            raise refuse_relation(f"epsilon={self.epsilon} is too small for dBitFlip: p0 and p1 are equal at the "
                                  "client's resolution, so reports would carry no information", "epsilon_too_small",
                                  "epsilon")
        self.check_collectable()

    @cached_property
    def p1(self) -> float:
        """Probability of a 1 for the value's own bucket, ``e^{ε/2}/(e^{ε/2}+1)``, as realized."""
        return realized_probability(logistic_tail(-self.epsilon / 2))

    @cached_property
    def p0(self) -> float:
        """Probability of a 1 for a sampled bucket that is not the value's, ``1/(e^{ε/2}+1)``, as realized."""
        return realized_probability(logistic_tail(self.epsilon / 2))

    @property
    def effective_epsilon(self) -> float:
        """The exact worst log-ratio of the realized law (module docstring)."""
        up, down = math.log(self.p1 / self.p0), math.log((1.0 - self.p0) / (1.0 - self.p1))
        return up + down if self.d >= 2 else max(up, down)

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """``max(ε_nominal, effective_epsilon)``; ``ε_nominal`` is ``epsilon``, or ``epsilon/2`` when d = 1."""
        nominal = self.epsilon if self.d >= 2 else self.epsilon / 2
        return PrivacyCost(max(nominal, self.effective_epsilon))

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: one bucket per report (Microsoft's one-bit setting) at ``epsilon = 2ε``, so that
        a report costs ``ε``, over the buckets ``edges = 0, 1, …, domain_size``."""
        return cls(2 * epsilon, tuple(range(domain_size + 1)), d=1)


@functools.cache
def _subset_masks(k: int, d: int) -> tuple[int, ...]:
    """Every d-subset of ``range(k)`` as a bit mask (empty when there are more than 4,096: kept small)."""
    if math.comb(k, d) > 4096:
        return ()
    return tuple(sum(1 << i for i in c) for c in itertools.combinations(range(k), d))


class DBitFlipEncoder(Encoder):
    """Client encoder for :class:`DBitFlipParams`; values are real numbers in the edges' range."""

    params: DBitFlipParams
    params_type: ClassVar[type[DBitFlipParams]] = DBitFlipParams

    def prepare(self, value: Any) -> int:
        return self.params.bucket_of(value)

    def _sample(self) -> int:
        """A uniform d-subset of the k buckets as a bit mask: one ``randbelow`` into the list of all
        d-subsets when there are at most 4,096 of them, else Floyd's algorithm (d exact ``randbelow``)."""
        k, d = self.params.num_buckets, self.params.d
        if d == k:
            return (1 << k) - 1
        subsets = _subset_masks(k, d)
        if subsets:
            return subsets[self._rng.randbelow(len(subsets))]
        return self._rng.subset_mask(k, d)

    def randomize(self, prepared: int) -> Report:
        pr, rng, k = self.params, self._rng, self.params.num_buckets
        sampled = self._sample()
        own = 1 << prepared
        if pr.d > 8:  # many sampled buckets: all k lanes at once, bit-sliced (about log2(k) + 2 planes)
            bits = rng.bernoulli_bits(pr.p0, k) & sampled & ~own
        else:  # a few: one draw per sampled bucket (the same law, fewer draws)
            bits, rest = 0, sampled & ~own
            while rest:
                low = rest & -rest
                if rng.bernoulli(pr.p0):
                    bits |= low
                rest ^= low
        if sampled & own and rng.bernoulli(pr.p1):
            bits |= own
        return self._report({"sampled": bits_from_int(sampled, k), "bits": bits_from_int(bits, k)})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized dBitFlip of bucket indices (:func:`ldp.batch.histogram.bucketize` maps numbers to them)."""
        from ldp.batch.histogram import dbitflip_encode_batch  # numpy, loaded only here

        sampled, bits = dbitflip_encode_batch(self.params, values, rng)
        return self._batch({"sampled": sampled, "bits": bits})


@dataclass(frozen=True)
class BucketGRRParams(_Buckets, ProtocolParams):
    """GRR over the buckets of ``edges`` (the bucket labels are its values)."""

    epsilon: float
    edges: tuple[float, ...]
    clip: bool = False
    protocol: ClassVar[str] = "bucket-grr"
    value_class: ClassVar[str | None] = "number"
    draw_rule = DrawRule("`B(p)`, then `R(k−1)` if false", lambda s, pr, v: grr_draws(s, pr.grr.p, pr.num_buckets))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 1.0, "edges": [0.0, 0.1, 0.2, 0.30000000000000004], "clip": True},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        self._check_buckets()
        with renaming({"domain_size": "edges"}):
            _ = self.grr  # GRR's own checks of epsilon against the number of buckets
        self.check_collectable()

    @cached_property
    def grr(self) -> GRRParams:
        """The GRR these parameters run: ``epsilon`` over the ``k`` bucket labels."""
        return GRRParams(self.epsilon, self.num_buckets, self.labels)

    @property
    def privacy_cost(self) -> PrivacyCost:
        return self.grr.privacy_cost

    @property
    def support_probabilities(self) -> tuple[float, float]:  # GRR's (p, q) over the buckets
        return self.grr.support_probabilities

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.grr.schema

    @property
    def aggregate_cells(self) -> int:
        return self.grr.aggregate_cells


class BucketGRREncoder(Encoder):
    """Client encoder for :class:`BucketGRRParams`: a number's bucket, reported by GRR's encoder."""

    params: BucketGRRParams
    params_type: ClassVar[type[BucketGRRParams]] = BucketGRRParams

    def __init__(self, params: BucketGRRParams, **options: Any) -> None:
        super().__init__(params, **options)
        # GRR's law, drawing from this encoder's source (checked for seeding above; no ledger of its own)
        self._grr = GRREncoder(self.params.grr, rng=self._rng, simulation=True)

    def prepare(self, value: Any) -> int:
        return self.params.bucket_of(value)

    def randomize(self, prepared: int) -> Report:
        return self._report(self._grr.randomize_payload(prepared))

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized GRR of bucket indices (:func:`ldp.batch.histogram.bucketize` maps numbers to them)."""
        return self._batch(dict(self._grr.encode_batch(values, rng).columns))


@dataclass(frozen=True)
class BucketOUEParams(_Buckets, ProtocolParams):
    """OUE over the buckets of ``edges`` (the bucket labels are its values)."""

    epsilon: float
    edges: tuple[float, ...]
    clip: bool = False
    protocol: ClassVar[str] = "bucket-oue"
    value_class: ClassVar[str | None] = "number"
    draw_rule = DrawRule("`BB(q, k)`, `B(1/2)`", lambda s, pr, v: (s.BB(pr.q, pr.num_buckets), s.B(0.5)))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 1.0, "edges": [0.0, 1.0, 10.0, 100.0], "clip": True},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        self._check_buckets()
        _ = self.oue  # OUE's own checks of epsilon
        self.check_collectable()

    @cached_property
    def oue(self) -> OUEParams:
        """The OUE these parameters run: ``epsilon`` over the ``k`` bucket labels."""
        return OUEParams(self.epsilon, self.num_buckets, self.labels)

    @property
    def p(self) -> float:
        return self.oue.p

    @property
    def q(self) -> float:
        return self.oue.q

    @property
    def support_probabilities(self) -> tuple[float, float]:  # OUE's bit probabilities (p, q) over the buckets
        return self.p, self.q

    @property
    def privacy_cost(self) -> PrivacyCost:
        return self.oue.privacy_cost

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.oue.schema

    @property
    def aggregate_cells(self) -> int:
        return self.oue.aggregate_cells


class BucketOUEEncoder(Encoder):
    """Client encoder for :class:`BucketOUEParams`: a number's bucket, reported by OUE's encoder."""

    params: BucketOUEParams
    params_type: ClassVar[type[BucketOUEParams]] = BucketOUEParams

    def __init__(self, params: BucketOUEParams, **options: Any) -> None:
        super().__init__(params, **options)
        # OUE's law, drawing from this encoder's source (checked for seeding above; no ledger of its own)
        self._oue = OUEEncoder(self.params.oue, rng=self._rng, simulation=True)

    def prepare(self, value: Any) -> int:
        return self.params.bucket_of(value)

    def randomize(self, prepared: int) -> Report:
        return self._report(dict(self._oue.randomize(prepared).payload))

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized OUE of bucket indices (:func:`ldp.batch.histogram.bucketize` maps numbers to them)."""
        return self._batch(dict(self._oue.encode_batch(values, rng).columns))
