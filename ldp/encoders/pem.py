"""PEM, the prefix extending method (Wang, Li, Jha et al., "Locally differentially private heavy hitter
identification", IEEE TDSC 2019). Client side.

A value is a string of at most ``max_length`` bytes (``str`` is UTF-8 encoded; ``bytes`` are taken as
they are). It is padded with NUL bytes to exactly ``max_length`` bytes, ``L = 8·max_length`` bits, read
as a big-endian integer. Refused before any charge: an empty string, a string holding a NUL byte (the
pad), and a string over ``max_length`` bytes unless ``truncate=True`` (then cut to ``max_length`` bytes;
a ``str`` is cut at a character boundary, so it may lose up to 3 more bytes; a result left empty is
refused).

Users are split into ``G`` groups; group ``j`` reports the prefix of ``b_j = min(start_bits + j·step_bits,
L)`` bits of the padded string, ``G = 1 + ceil((L − start_bits)/step_bits)``. A client draws its group
uniformly (``randbelow(G)``, independent of the value) and reports its prefix through OLH with the full
ε: the prefix's 32-bit key ``k`` (the prefix itself when ``b_j ≤ 32``, else ``MurmurHash3_x86_32`` of its
``ceil(b_j/8)`` big-endian bytes under seed :data:`KEY_SEED`), then a uniform ``seed`` and
``y = GRR_[0,g)(lh_hash(k, seed, g))`` exactly as :class:`~ldp.encoders.local_hashing.OLHEncoder` does for
index ``k``. Report fields: ``group``, ``seed``, ``y``. The group is public and independent of the value,
so a report is exactly as private as one OLH report: ``privacy_cost`` is OLH's ``max(ε, ε*)`` of the
realized keep probability. Draw order: group, seed, keep bit, other value.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import mmh3

from ldp.accountant import PrivacyCost
from ldp.encoders.base import Encoder, ProtocolParams, check_epsilon, check_int, check_string_value
from ldp.encoders.local_hashing import SEED_RANGE, OLHParams, lh_hash
from ldp.reports import Field, Report, ReportBatch

__all__ = ["PEMParams", "PEMEncoder", "KEY_SEED", "prefix_key", "pad_value"]

KEY_SEED = 0x50454D  # "PEM"
"""MurmurHash3 seed of the 32-bit key of a prefix longer than 32 bits."""
MAX_START_BITS = 24
"""The server enumerates every prefix of ``start_bits`` bits: at most 2^24."""
MAX_STEP_BITS = 16
"""The server extends each kept prefix by every ``step_bits`` pattern: at most 2^16."""


def prefix_key(prefix: int, bits: int) -> int:
    """The 32-bit key OLH hashes for a ``bits``-bit prefix: the prefix itself up to 32 bits, else
    ``MurmurHash3_x86_32`` of its ``ceil(bits/8)`` big-endian bytes under :data:`KEY_SEED`."""
    if bits <= 32:
        return prefix
    return mmh3.hash(prefix.to_bytes((bits + 7) // 8, "big"), KEY_SEED, signed=False)


def pad_value(value: Any, max_length: int, truncate: bool, protocol: str = "pem") -> bytes:
    """``value`` (str as UTF-8, or bytes) checked and NUL-padded to ``max_length`` bytes (module docstring)."""
    check_string_value(value, protocol)
    raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if b"\x00" in raw:
        raise ValueError(f"{protocol} values must not contain a NUL byte (the pad)")
    if len(raw) > max_length:
        if not truncate:
            raise ValueError(f"{protocol} value of {len(raw)} bytes is over max_length={max_length} "
                             "(set truncate=True to cut it)")
        raw = raw[:max_length]
        if isinstance(value, str):  # cut at a character boundary: drop an incomplete trailing character
            raw = raw.decode("utf-8", "ignore").encode("utf-8")
    if not raw:
        raise ValueError(f"{protocol} values must be non-empty strings" + (" (after truncation)" if value else ""))
    return raw.ljust(max_length, b"\x00")


@dataclass(frozen=True)
class PEMParams(ProtocolParams):
    """PEM over OLH: ``epsilon`` per report, strings of up to ``max_length`` bytes, group prefixes of
    ``start_bits + j·step_bits`` bits (the last clipped to ``8·max_length``), and the server's default
    ``top_k`` (prefixes kept per round; it does not change reports). ``oracle`` is ``"olh"`` (the only
    one supported). ``truncate``: cut strings over ``max_length`` bytes instead of refusing them."""

    epsilon: float
    max_length: int = 10
    start_bits: int = 8
    step_bits: int = 8
    top_k: int = 32
    oracle: str = "olh"
    truncate: bool = False
    seed_range: int = SEED_RANGE
    protocol: ClassVar[str] = "pem"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.max_length, "max_length (bytes)", 1, 1 << 12)
        check_int(self.start_bits, "start_bits", 1, min(MAX_START_BITS, 8 * self.max_length))
        check_int(self.step_bits, "step_bits", 1, MAX_STEP_BITS)
        check_int(self.top_k, "top_k", 1, 1 << 16)
        check_int(self.seed_range, "seed_range", 1, SEED_RANGE)
        if self.oracle != "olh":
            raise ValueError(f"oracle must be 'olh' (the only frequency oracle PEM supports), got {self.oracle!r}")
        if not isinstance(self.truncate, bool):
            raise TypeError(f"truncate must be a bool, got {type(self.truncate).__name__}")
        check_int(self.groups, "groups (1 + ceil((8·max_length − start_bits)/step_bits))", 1, 1 << 16)
        self.olh  # noqa: B018  (OLH's checks: ε neither too large nor too small for the client)
        self.check_collectable()

    @cached_property
    def olh(self) -> OLHParams:
        """The oracle every group reports through (its ``g``, ``p``, ``q_star`` and cost; the domain is unused)."""
        return OLHParams(self.epsilon, 2, seed_range=self.seed_range)

    @property
    def total_bits(self) -> int:
        """``L = 8·max_length``."""
        return 8 * self.max_length

    @property
    def groups(self) -> int:
        """``G = 1 + ceil((L − start_bits)/step_bits)``."""
        return 1 + -(-(self.total_bits - self.start_bits) // self.step_bits)

    def prefix_bits(self, group: int) -> int:
        """``b_j = min(start_bits + j·step_bits, L)``."""
        check_int(group, "group", 0, self.groups - 1)
        return min(self.start_bits + group * self.step_bits, self.total_bits)

    @property
    def g(self) -> int:
        """OLH's hash range."""
        return self.olh.g

    @property
    def p(self) -> float:
        return self.olh.p

    @property
    def q_star(self) -> float:
        return self.olh.q_star

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """One OLH report's cost: every user reports once, in one group (user partitioning)."""
        return self.olh.privacy_cost

    @property
    def domain_size(self) -> None:
        return None

    @property
    def aggregate_cells(self) -> int:
        return self.groups

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("group", "uint", self.groups), Field("seed", "uint", self.seed_range),
                Field("y", "uint", self.g))

    def padded(self, value: Any) -> bytes:
        """The value as the client encodes it: checked, truncated if allowed, NUL-padded."""
        return pad_value(value, self.max_length, self.truncate)

    def key_of(self, value: Any, group: int) -> int:
        """The 32-bit key group ``group`` reports for ``value`` (a string, or its padded integer)."""
        padded = value if isinstance(value, int) else int.from_bytes(self.padded(value), "big")
        bits = self.prefix_bits(group)
        return prefix_key(padded >> (self.total_bits - bits), bits)


class PEMEncoder(Encoder):
    """Client encoder for :class:`PEMParams`; values are ``str`` or ``bytes`` (module docstring)."""

    params: PEMParams
    params_type: ClassVar[type[PEMParams]] = PEMParams

    def prepare(self, value: Any) -> int:
        return int.from_bytes(self.params.padded(value), "big")

    def randomize(self, prepared: int) -> Report:
        rng, pr = self._rng, self.params
        group = rng.randbelow(pr.groups)
        key, g = pr.key_of(prepared, group), pr.g
        seed = rng.randbelow(pr.seed_range)
        x = lh_hash(key, seed, g)
        if rng.bernoulli(pr.p):
            return self._report({"group": group, "seed": seed, "y": x})
        other = rng.randbelow(g - 1)  # uniform over the g-1 other hash values
        return self._report({"group": group, "seed": seed, "y": other + (other >= x)})

    def encode_batch(self, values: Any, rng: Any = None, *, candidates: Any = None, groups: Any = None) -> ReportBatch:
        """Vectorized reports (:func:`ldp.batch.pem.pem_encode_batch`): ``values`` are indices into
        ``candidates`` (strings), or strings when ``candidates`` is ``None``; ``groups`` (simulation only)
        fixes each report's group instead of drawing it uniformly."""
        from ldp.batch.pem import pem_encode_batch  # numpy, loaded only here

        return self._batch(pem_encode_batch(self.params, values, rng, candidates=candidates, groups=groups))
