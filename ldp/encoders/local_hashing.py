"""Local hashing: BLH and OLH (Wang, Blocki, Li, Jha, USENIX Security 2017). Client side.

A report of a value ``v`` in a domain of ``d`` is a pair ``(seed, y)``:

* ``seed`` is drawn uniformly, exactly (``randbelow``), from ``[0, seed_range)`` (default ``2^32``,
  every MurmurHash3 seed); it names the hash function ``h_seed`` of the report;
* ``x = h_seed(v) = MurmurHash3_x86_32(uint32_LE(v), seed) mod g``: the hashed bytes are always the
  four little-endian bytes of the value's domain **index** (a label is first turned into its index in
  ``labels``; ``docs/protocols/local-hashing.md`` gives the bytes and test vectors);
* ``y`` is GRR over ``[0, g)`` of ``x``: ``x`` itself with ``p = e^ε/(e^ε+g−1)`` (realized at the
  client's 2^-64 resolution), else a uniform other value of ``[0, g)``.

BLH (protocol ``blh``) has ``g = 2``; OLH (``olh``) has ``g = floor(e^ε + 1/2) + 1`` (``round(e^ε) + 1``,
halves rounded up), the integer nearest the variance optimum ``e^ε + 1``. The seed is independent of the
value, so a report is exactly as private as the GRR over ``[0, g)``: ``ε* = ln(p(g−1)/(1−p))`` of the
realized ``p``, and the charge is ``max(ε, ε*)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Self

import mmh3

from ldp.encoders.base import DomainPrepare, Encoder, LabeledDomain, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import refuse_relation
from ldp.encoders.base_draws import DrawPrimitives, DrawRule, grr_draws
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import realized_probability
from ldp.reports import Field, Report, ReportBatch

__all__ = ["BLHParams", "BLHEncoder", "OLHParams", "OLHEncoder", "LocalHashingParams", "lh_hash", "olh_width",
           "SEED_RANGE"]

SEED_RANGE = 2**32
"""Default number of hash seeds a report draws from: every MurmurHash3 seed."""


def lh_hash(index: int, seed: int, g: int) -> int:
    """``h_seed(index) = MurmurHash3_x86_32(uint32_LE(index), seed) mod g`` (``0 <= index, seed < 2^32``)."""
    return mmh3.hash(index.to_bytes(4, "little"), seed, signed=False) % g


def olh_width(epsilon: float) -> int:
    """OLH's ``g = floor(e^ε + 1/2) + 1``: ``round(e^ε) + 1`` with halves rounded up."""
    if epsilon > 32.0:  # g would exceed 2**32 (from ε ≈ 22.2 on)
        raise refuse_relation(f"epsilon={epsilon} is too large for olh: g = round(e^ε) + 1 exceeds 2**32, the "
                              "range of a 32-bit hash", "hash_range", "epsilon")
    return math.floor(math.exp(epsilon) + 0.5) + 1


class LocalHashingParams(LabeledDomain, ProtocolParams):
    """What BLH and OLH share: the hash range ``g``, the realized GRR probabilities over ``[0, g)``, the
    seed range, the domain (``index_of`` / ``label_of``) and the wire format ``seed``, ``y`` (uints)."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None
    seed_range: int
    protocol: ClassVar[str]
    refusal_rules: ClassVar[Mapping[str, str]] = {"hash_range": "g = round(e^ε) + 1 must be at most 2^32, the range "
                                                                "of a 32-bit hash"}

    if TYPE_CHECKING:  # what each subclass defines

        @property
        def g(self) -> int:
            """The hash range: reports carry ``y`` in ``[0, g)``."""

    def _check(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.domain_size, "domain_size", 2, 2**32)
        check_int(self.seed_range, "seed_range", 1, SEED_RANGE)
        g = self.g
        if g > 2**32:
            raise refuse_relation(f"epsilon={self.epsilon} is too large for {self.protocol}: g = {g} exceeds "
                                  "2**32, the range of a 32-bit hash", "hash_range", "epsilon")
        if self.p >= 1.0:
            raise refuse_relation(f"epsilon={self.epsilon} is too large for {self.protocol}: the keep probability "
                                  "rounds to 1 at the client's resolution, so reports would not be private",
                                  "epsilon_too_large", "epsilon")
        if self.p <= self.q:
            raise refuse_relation(f"epsilon={self.epsilon} is too small for {self.protocol}: the keep probability "
                                  f"rounds to 1/g, so reports would carry no information", "epsilon_too_small",
                                  "epsilon")
        self._check_labels()
        self.check_collectable()

    @cached_property
    def p(self) -> float:
        """``Pr[y = h_seed(v)]``: ``e^ε/(e^ε+g−1)``, as the client realizes it."""
        return realized_probability(1.0 / (1.0 + (self.g - 1) * math.exp(-self.epsilon)))

    @property
    def q(self) -> float:
        """``Pr[y = u]`` for one given ``u != h_seed(v)``: ``(1−p)/(g−1)`` exactly as drawn."""
        return (1.0 - self.p) / (self.g - 1)

    @property
    def p_star(self) -> float:
        """``Pr[a report supports v | value v] = p``."""
        return self.p

    @property
    def q_star(self) -> float:
        """``Pr[a report supports v | value u != v] = 1/g`` (the hash of ``v`` is uniform, independent of ``u``'s)."""
        return 1.0 / self.g

    @property
    def effective_epsilon(self) -> float:
        """The ε of the realized GRR over ``[0, g)``: ``ln(p(g−1)/(1−p))``."""
        return math.log(self.p * (self.g - 1) / (1.0 - self.p))

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """``max(epsilon, effective_epsilon)``."""
        return PrivacyCost(max(self.epsilon, self.effective_epsilon))

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("seed", "uint", self.seed_range), Field("y", "uint", self.g))


    def hash_of(self, value: Any, seed: int) -> int:
        """``h_seed`` of a value (label or index): the bucket a report with this seed keeps w.p. ``p``."""
        return lh_hash(self.index_of(value), check_int(seed, "seed", 0, self.seed_range - 1), self.g)

    @classmethod
    def examples(cls) -> list[Self]:
        """Four values at ε = 1 and six at ε = 2, with every client's own hash function (conformance suite)."""
        return [cls(1.0, 4), cls(2.0, 6)]  # type: ignore[call-arg]  # each subclass's fields

    @classmethod
    def audit_examples(cls) -> list[Self]:
        """Four hash functions (``seed_range=4``): enumerable, and the law given a seed is GRR over ``[0, g)``."""
        return [cls(1.0, 3, seed_range=4), cls(2.0, 4, seed_range=3),  # type: ignore[call-arg]
                cls(0.5, 2, seed_range=4)]  # type: ignore[call-arg]

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: ``local hashing`` over the ``domain_size`` values at ``ε``."""
        return cls(epsilon, domain_size)  # type: ignore[call-arg]  # each subclass's fields

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """A frequency oracle over any number of values."""
        return True


def _lh_draws(s: DrawPrimitives, pr: LocalHashingParams, value: Any) -> object:
    """``R(seed_range)``, then a GRR over the ``g`` hash values (BLH's ``R(1)`` draws nothing)."""
    s.R(pr.seed_range)
    return grr_draws(s, pr.p, pr.g)


@dataclass(frozen=True)
class BLHParams(LocalHashingParams):
    """Binary local hashing: ``g = 2``."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    seed_range: int = SEED_RANGE
    protocol: ClassVar[str] = "blh"
    value_class: ClassVar[str | None] = "category"
    draw_rule = DrawRule("`R(seed_range)`, `B(p)`", _lh_draws)
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 2.5, "domain_size": 1000},)

    def __post_init__(self) -> None:
        self._check()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str]) -> BLHParams:
        return cls(epsilon, len(labels), tuple(labels))

    @property
    def g(self) -> int:
        """2."""
        return 2


@dataclass(frozen=True)
class OLHParams(LocalHashingParams):
    """Optimized local hashing: ``g = round(e^ε) + 1`` (:func:`olh_width`)."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    seed_range: int = SEED_RANGE
    protocol: ClassVar[str] = "olh"
    value_class: ClassVar[str | None] = "category"
    draw_rule = DrawRule("`R(seed_range)`, `B(p)`, then `R(g−1)` if false", _lh_draws)
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 2.5, "domain_size": 1000}, {"epsilon": 1.0, "domain_size": 50, "seed_range": 1000})

    def __post_init__(self) -> None:
        self._check()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str]) -> OLHParams:
        return cls(epsilon, len(labels), tuple(labels))

    @cached_property
    def g(self) -> int:
        """``floor(e^ε + 1/2) + 1``."""
        return olh_width(check_epsilon(self.epsilon))


class _LocalHashingEncoder(DomainPrepare, Encoder):
    """Shared by BLH and OLH (abstract: each subclass's ``randomize`` names its law for discovery)."""

    params: BLHParams | OLHParams

    def _lh_report(self, prepared: int) -> Report:
        rng, pr = self._rng, self.params
        g = pr.g
        seed = rng.randbelow(pr.seed_range)
        x = mmh3.hash(prepared.to_bytes(4, "little"), seed, signed=False) % g
        if rng.bernoulli(pr.p):
            return self._report({"seed": seed, "y": x})
        other = rng.randbelow(g - 1)  # uniform over the g-1 other hash values
        return self._report({"seed": seed, "y": other + (other >= x)})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of value indices (:func:`ldp.batch.local_hashing.lh_encode_batch`)."""
        from ldp.batch.local_hashing import lh_encode_batch  # numpy, loaded only here

        seeds, ys = lh_encode_batch(self.params, values, rng)
        return self._batch({"seed": seeds, "y": ys})


class BLHEncoder(_LocalHashingEncoder):
    """Client encoder for :class:`BLHParams`; values are labels or indices in ``[0, d)``."""

    params: BLHParams
    params_type: ClassVar[type[BLHParams]] = BLHParams

    def randomize(self, prepared: int) -> Report:
        return self._lh_report(prepared)


class OLHEncoder(_LocalHashingEncoder):
    """Client encoder for :class:`OLHParams`; values are labels or indices in ``[0, d)``."""

    params: OLHParams
    params_type: ClassVar[type[OLHParams]] = OLHParams

    def randomize(self, prepared: int) -> Report:
        return self._lh_report(prepared)
