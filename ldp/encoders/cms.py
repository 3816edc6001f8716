"""Apple's private Count Mean Sketch (CMS), client side ("Learning with Privacy at Scale", 2017).

The client draws a hash index ``j`` uniformly from ``[k]``, encodes its value as the ±1 vector
of length ``m`` that is +1 only at ``h_j(value)``, flips every entry independently with
probability ``1/(1+e^{ε/2})`` and sends ``(j, m bits)`` (bit 1 = +1). Two values differ in at most
two entries, each with likelihood ratio at most ``e^{ε/2}``: ε-LDP (apple-and-theory.md §1.1).

Hash function ``j`` is :func:`ldp.hashing.bucket` with seed ``hash_seed + j`` (MurmurHash3 of the
value's UTF-8 bytes, mod ``m``). :class:`SketchParams` holds what CMS and HCMS share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Self

from bitarray import frozenbitarray

from ldp.encoders.base import Encoder, ProtocolParams, check_epsilon, check_int, check_string_value
from ldp.encoders.base_checks import refuse_relation
from ldp.encoders.base_draws import DrawPrimitives, DrawRule
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.hashing import MAX_SEED, bucket, bucket_of_bytes, buckets, value_bytes
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import bernoulli_threshold, logistic_tail
from ldp.reports import Field, Report, ReportBatch, bits_from_int

__all__ = ["SketchParams", "CmsParams", "CmsEncoder", "PLANNER_SKETCH"]

MAX_WIDTH = 1 << 24
PLANNER_SKETCH = (256, 1024)
"""``(num_hashes, width)`` of the planner's CMS and HCMS: the benchmark's sizes, where the collision term is
negligible."""


class SketchParams(ProtocolParams):
    """What CMS and HCMS parameters share: ε, ``num_hashes`` k, ``width`` m and the hash family."""
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "hash_seed": ParamInfo("the number of the hash family: distinct seeds give independent families",
                               (Range(min=0, dynamic="at most 2^32 − num_hashes"),))}

    epsilon: float
    num_hashes: int
    width: int
    hash_seed: int
    hadamard: ClassVar[bool] = False
    """Whether a report is one Hadamard coefficient of the sketch row (HCMS), not the whole row (CMS)."""

    def _check_sketch(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if bernoulli_threshold(self.flip_probability) == 0:
            raise refuse_relation(f"epsilon={self.epsilon} is too large: the flip probability rounds to 0 at the "
                                  "client's 2^-64 resolution, so reports would not be private", "epsilon_too_large",
                                  "epsilon")
        check_int(self.num_hashes, "num_hashes (k)", 1, 1 << 16)
        check_int(self.width, "width (m)", 2, MAX_WIDTH)
        check_int(self.hash_seed, "hash_seed", 0, MAX_SEED - self.num_hashes + 1)
        self.check_collectable()

    @property
    def k(self) -> int:
        return self.num_hashes

    @property
    def m(self) -> int:
        return self.width

    @property
    def aggregate_cells(self) -> int:
        """Reports per hash function and sums per hash function and bucket: ``k·(m+1)``."""
        return self.num_hashes * (self.width + 1)

    if TYPE_CHECKING:  # defined by each subclass
        @property
        def flip_probability(self) -> float:
            """Probability that the client flips one ±1 entry."""

        @property
        def c(self) -> float:
            """``c_ε``: ``1/c`` is the mean of a kept-or-flipped ±1 entry's sign."""

    _epsilon_per_flip: ClassVar[float] = 1.0  # ε = this × ln((1−p)/p) for flip probability p

    @property
    def effective_epsilon(self) -> float:
        """The ε the client really gives: the flip probability is ``floor(p·2^64)/2^64``, a hair
        below ``p``, so this is at least ``epsilon`` (equal to it up to ~1e-15 for ε below ~8)."""
        pq = bernoulli_threshold(self.flip_probability) / 2.0**64
        return self._epsilon_per_flip * math.log((1.0 - pq) / pq)

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """The cost charged per report: ``max(epsilon, effective_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.effective_epsilon))

    @property
    def domain_size(self) -> None:
        """Sketches estimate any string: no fixed domain."""
        return None

    def bucket_of(self, value: Any, j: int) -> int:
        """``h_j(value)``: bucket of ``value`` under hash function ``j`` in ``[0, m)``."""
        return bucket(value, self.width, self.hash_seed + j)

    def buckets_of(self, value: Any) -> list[int]:
        """``[h_0(value), ..., h_{k-1}(value)]`` (the value's bytes are made once)."""
        return buckets(value, self.width, range(self.hash_seed, self.hash_seed + self.num_hashes))

    @classmethod
    def examples(cls) -> list[Self]:
        """Narrow sketches (conformance suite: its statistics redraw ``hash_seed``, since the exact variance
        averages over the hash family)."""
        return [cls(2.0, 2, 8), cls(4.0, 4, 16, hash_seed=100)]  # type: ignore[call-arg]  # each subclass's fields

    @classmethod
    def audit_examples(cls) -> list[Self]:
        """At most 8 buckets: a CMS report's ``m`` bits are ``2^m`` outputs per hash function."""
        return [cls(1.0, 2, 4), cls(2.0, 3, 8, hash_seed=3)]  # type: ignore[call-arg]

    def audit_inputs(self) -> list[str]:
        """Two strings in different buckets under every hash function (they attain ε)."""
        words = [chr(c) for c in range(ord("a"), ord("z") + 1)]
        for a in words:
            for b in words:
                if all(self.bucket_of(a, j) != self.bucket_of(b, j) for j in range(self.num_hashes)):
                    return [a, b]
        raise ValueError(f"no two letters in different buckets under every hash function of {self}")

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: :data:`PLANNER_SKETCH` ``(k, m)`` at ``ε`` (the collision term is negligible)."""
        k, m = PLANNER_SKETCH
        return cls(epsilon, k, m, 0)  # type: ignore[call-arg]  # each subclass's fields

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """A frequency oracle over any strings (its count of an item is over the sketch's hashed buckets)."""
        return True


def sketch_draws(s: DrawPrimitives, sk: SketchParams) -> int:
    """A CMS report's draws, ``R(k)``, ``BB(flip, m)``, or an HCMS report's, ``R(k)``, ``R(m)``, ``B(flip)``; the
    hash function drawn."""
    j = s.R(sk.num_hashes)
    if sk.hadamard:
        s.R(sk.width)
        s.B(sk.flip_probability)
    else:
        s.BB(sk.flip_probability, sk.width)
    return j


@dataclass(frozen=True)
class CmsParams(SketchParams):
    """Count Mean Sketch: ε per report, k hash functions, width m (``hash_seed`` picks the family)."""

    epsilon: float
    num_hashes: int
    width: int
    hash_seed: int = 0
    protocol: ClassVar[str] = "cms"
    value_class: ClassVar[str | None] = "string"
    draw_rule = DrawRule("`R(k)`, `BB(σ(ε/2), m)`", lambda s, pr, v: sketch_draws(s, pr))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 4.0, "num_hashes": 256, "width": 1024},)
    _epsilon_per_flip: ClassVar[float] = 2.0  # two entries differ between inputs, each ln((1−p)/p) = ε/2

    def __post_init__(self) -> None:
        self._check_sketch()

    @cached_property
    def flip_probability(self) -> float:
        """Each ±1 entry is flipped with probability ``1/(1+e^{ε/2})``."""
        return logistic_tail(self.epsilon / 2)

    @property
    def c(self) -> float:
        """``c_ε = (e^{ε/2}+1)/(e^{ε/2}−1)``: ``1/c`` is the mean of a kept-or-flipped ±1 entry's sign."""
        e = math.exp(self.epsilon / 2)
        return (e + 1) / (e - 1)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("hash", "uint", self.num_hashes), Field("bits", "bits", self.width))


class CmsEncoder(Encoder):
    """Client encoder for :class:`CmsParams`; values are str or bytes."""

    params: CmsParams
    params_type: ClassVar[type[CmsParams]] = CmsParams

    def prepare(self, value: Any) -> bytes:
        """The value's hashed bytes (:func:`~ldp.hashing.value_bytes`): a bad value fails here, before any charge."""
        return value_bytes(check_string_value(value, "CMS"))

    def draw(self, prepared: bytes) -> tuple[int, frozenbitarray]:
        """The payload's values in schema order: ``(j, bits)`` (draws: ``randbelow(k)``, then the m flips)."""
        pr, rng = self.params, self._rng
        j = rng.randbelow(pr.num_hashes)
        onehot = 1 << bucket_of_bytes(prepared, pr.width, pr.hash_seed + j)
        return j, bits_from_int(onehot ^ rng.bernoulli_bits(pr.flip_probability, pr.width), pr.width)

    def randomize(self, prepared: bytes) -> Report:
        j, bits = self.draw(prepared)
        return self._report({"hash": j, "bits": bits})

    def encode_batch(self, values: Any, rng: Any = None, *, candidates: Any = None) -> ReportBatch:
        """Vectorized reports (``values``: indices into ``candidates`` or the strings; see :mod:`ldp.batch.sketch`)."""
        from ldp.batch.sketch import cms_encode_batch  # numpy, loaded only here

        j, bits = cms_encode_batch(self.params, values, rng, candidates=candidates)
        return self._batch({"hash": j, "bits": bits})
