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
uniformly (``randbelow(G)``, independent of the value) and reports its prefix with the full ε through
the group's frequency oracle (``oracle``; :meth:`PEMParams.oracle_of`):

* OLH: the prefix's 32-bit key ``k`` (the prefix itself when ``b_j ≤ 32``, else ``MurmurHash3_x86_32`` of
  its ``ceil(b_j/8)`` big-endian bytes under seed :data:`KEY_SEED`), then a uniform ``seed`` and
  ``y = GRR_[0,g)(lh_hash(k, seed, g))`` exactly as :class:`~ldp.encoders.local_hashing.OLHEncoder` does
  for index ``k``. Draw order: group, seed, keep bit, other value.
* GRR over the group's whole prefix domain ``[0, 2^b_j)`` (``b_j ≤`` :data:`MAX_GRR_BITS`): ``seed = 0``
  and ``y`` the prefix kept with GRR's ``p``, else a uniform other prefix, exactly as
  :class:`~ldp.encoders.randomized_response.GRREncoder` does. Draw order: group, keep bit, other value.

Report fields: ``group``, ``seed``, ``y`` for every oracle (``y < `` the largest range of a group; a
report is valid only within its own group's range, and a GRR group's seed is 0). The group is public and
independent of the value, so the worst likelihood ratio of a report is that of its group's oracle:
``privacy_cost`` is the largest ``max(ε, ε*)`` (ε* of the realized keep probability) of the oracles used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import groupby
from typing import Any, ClassVar, Self

import mmh3

from ldp.encoders.base import Encoder, ProtocolParams, check_epsilon, check_int, check_string_value
from ldp.encoders.base_checks import check_bool, check_choice, refuse_relation
from ldp.encoders.base_draws import DrawPrimitives, DrawRule, grr_draws
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.local_hashing import SEED_RANGE, OLHParams, lh_hash
from ldp.encoders.randomized_response import GRRParams
from ldp.errors import Refusal, RefusalValueError
from ldp.hashing import value_bytes
from ldp.privacy.accountant import PrivacyCost
from ldp.reports import Field, Report, ReportBatch, ReportError

__all__ = ["PEMParams", "PEMEncoder", "KEY_SEED", "MAX_GRR_BITS", "ORACLES", "prefix_key", "pad_value",
           "null_variance"]

KEY_SEED = 0x50454D  # "PEM"
"""MurmurHash3 seed of the 32-bit key of a prefix longer than 32 bits."""
MAX_START_BITS = 24
"""The server enumerates every prefix of ``start_bits`` bits: at most 2^24."""
MAX_STEP_BITS = 16
"""The server extends each kept prefix by every ``step_bits`` pattern: at most 2^16."""
MAX_GRR_BITS = 16
"""GRR reports a prefix over its whole domain: at most 2^16 values (longer prefixes use OLH)."""
ORACLES = ("olh", "grr", "auto")
"""``PEMParams.oracle``: OLH in every group, GRR in every group, or per group the smaller variance."""


def null_variance(p: float, q: float) -> float:
    """``V0 = q(1−q)/(p−q)²``: the variance per report of the unbiased count of a value nobody holds, for
    an oracle that supports the true value with probability ``p`` and any other given value with ``q``."""
    return q * (1.0 - q) / (p - q) ** 2


def prefix_key(prefix: int, bits: int) -> int:
    """The 32-bit key OLH hashes for a ``bits``-bit prefix: the prefix itself up to 32 bits, else
    ``MurmurHash3_x86_32`` of its ``ceil(bits/8)`` big-endian bytes under :data:`KEY_SEED`."""
    if bits <= 32:
        return prefix
    return mmh3.hash(prefix.to_bytes((bits + 7) // 8, "big"), KEY_SEED, signed=False)


def pad_value(value: Any, max_length: int, truncate: bool, protocol: str = "pem") -> bytes:
    """``value`` (str as UTF-8, or bytes) checked and NUL-padded to ``max_length`` bytes (module docstring)."""
    check_string_value(value, protocol)
    raw = value_bytes(value)
    if b"\x00" in raw:
        raise RefusalValueError(f"{protocol} values must not contain a NUL byte (the pad)", "not_in_alphabet",
                                char="\x00")
    if len(raw) > max_length:
        if not truncate:
            raise RefusalValueError(f"{protocol} value of {len(raw)} bytes is over max_length={max_length} "
                                    "(set truncate=True to cut it)", "value_too_long", got=len(raw), max=max_length,
                                    unit="bytes")
        raw = raw[:max_length]
        if isinstance(value, str):  # cut at a character boundary: drop an incomplete trailing character
            raw = raw.decode("utf-8", "ignore").encode("utf-8")
    if not raw:
        raise RefusalValueError(f"{protocol} values must be non-empty strings" + (" (after truncation)" if value
                                                                                  else ""), "empty_value")
    return raw.ljust(max_length, b"\x00")


def _pem_draws(s: DrawPrimitives, pr: PEMParams, value: Any) -> object:
    """The group, then its oracle's draws: a GRR over the group's prefixes, or OLH's seed and GRR over ``g``."""
    group = s.R(pr.groups)
    if pr.oracle_of(group) == "grr":
        return grr_draws(s, pr.grr(group).p, 1 << pr.prefix_bits(group))
    s.R(pr.seed_range)
    return grr_draws(s, pr.p, pr.g)


@dataclass(frozen=True)
class PEMParams(ProtocolParams):
    """PEM: ``epsilon`` per report, strings of up to ``max_length`` bytes, group prefixes of
    ``start_bits + j·step_bits`` bits (the last clipped to ``8·max_length``), and the server's default
    ``top_k`` (prefixes kept per round; it does not change reports). ``oracle``: ``"olh"`` (every group),
    ``"grr"`` (every group; each prefix domain at most 2^:data:`MAX_GRR_BITS`) or ``"auto"`` (per group,
    :meth:`oracle_of`). ``truncate``: cut strings over ``max_length`` bytes instead of refusing them."""

    epsilon: float
    max_length: int = 10
    start_bits: int = 8
    step_bits: int = 8
    top_k: int = 32
    oracle: str = "olh"
    truncate: bool = False
    seed_range: int = SEED_RANGE
    protocol: ClassVar[str] = "pem"
    value_class: ClassVar[str | None] = "string"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "max_length": ParamInfo("the longest value in UTF-8 bytes", (Range(min=1, max=4096),)),
        "start_bits": ParamInfo("the bits of the first prefix the rounds extend",
                                (Range(min=1, dynamic="at most min(24, 8·max_length)"),)),
        "step_bits": ParamInfo("the bits each round adds to the prefixes", (Range(min=1, max=16),)),
        "top_k": ParamInfo("the number of prefixes kept after each round", (Range(min=1, max=65536),)),
        "oracle": ParamInfo("the frequency oracle of each round: olh, grr, or auto (the lower variance)",
                            choices=ORACLES)}
    refusal_rules: ClassVar[Mapping[str, str]] = {
        **OLHParams.refusal_rules, "groups": "(a limit) the groups G = 1 + ceil((8·max_length − start_bits)/step_bits)",
        "grr_prefix_bits": "(a limit) the bits of a prefix GRR reports over its whole domain"}
    draw_rule = DrawRule("`R(G)`; in a GRR group `B(p_j)`, then `R(2^b_j − 1)` if false; in an OLH group "
                         "`R(seed_range)`, `B(p)`, then `R(g−1)` if false", _pem_draws)
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 2.0, "max_length": 2, "oracle": "grr"},
        {"epsilon": 2.0, "max_length": 6, "truncate": True})  # prefixes over 32 bits (KEY_SEED), truncation

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.max_length, "max_length (bytes)", 1, 1 << 12)
        check_int(self.start_bits, "start_bits", 1, min(MAX_START_BITS, 8 * self.max_length))
        check_int(self.step_bits, "step_bits", 1, MAX_STEP_BITS)
        check_int(self.top_k, "top_k", 1, 1 << 16)
        check_int(self.seed_range, "seed_range", 1, SEED_RANGE)
        check_choice(self.oracle, "oracle", ORACLES, f"oracle must be one of {', '.join(map(repr, ORACLES))}, "
                     f"got {self.oracle!r}")
        check_bool(self.truncate, "truncate")
        if not 1 <= self.groups <= 1 << 16:
            raise RefusalValueError(f"groups (1 + ceil((8·max_length − start_bits)/step_bits)) must be in [1, "
                                    f"{1 << 16}], got {self.groups}", "param_limit", limit="groups", got=self.groups,
                                    max=1 << 16)
        if self.oracle == "grr" and (bits := self.prefix_bits(self.groups - 1)) > MAX_GRR_BITS:
            raise RefusalValueError(f"oracle='grr' reports each prefix over its whole domain of 2^bits values, at "
                                    f"most 2^{MAX_GRR_BITS}: the last group's prefixes have {bits} bits (use "
                                    "oracle='auto', GRR where it is smaller and allowed, OLH elsewhere)",
                                    "param_limit", limit="grr_prefix_bits", got=bits, max=MAX_GRR_BITS)
        try:
            if "olh" in self.oracles:  # (GRR's checks ran in choosing: ε neither too large nor too small)
                self.olh  # noqa: B018  (OLH's checks: ε neither too large nor too small for the client)
        except Refusal as exc:  # a GRR group's ε too large or too small for its 2^b_j prefixes
            if exc.code != "param_relation" or "domain_size" not in exc.fields["params"]:
                raise
            raise refuse_relation(str(exc), exc.fields["rule"], "epsilon", "max_length", "start_bits", "step_bits",
                                  "oracle") from None
        self.check_collectable()

    @cached_property
    def olh(self) -> OLHParams:
        """The OLH oracle of the OLH groups (its ``g``, ``p``, ``q_star`` and cost; the domain is unused)."""
        return OLHParams(self.epsilon, 2, seed_range=self.seed_range)

    def grr(self, group: int) -> GRRParams:
        """GRR over group ``group``'s whole prefix domain, ``2^b_j`` values (up to 2^:data:`MAX_GRR_BITS`)."""
        bits = self.prefix_bits(group)
        if bits > MAX_GRR_BITS:
            raise RefusalValueError(f"group {group} has {bits}-bit prefixes: GRR over 2^{bits} values is over the "
                                    f"cap of 2^{MAX_GRR_BITS}", "param_limit", limit="grr_prefix_bits", got=bits,
                                    max=MAX_GRR_BITS)
        return _grr(self.epsilon, bits)

    @cached_property
    def oracles(self) -> tuple[str, ...]:
        """Each group's oracle, ``"olh"`` or ``"grr"``. With ``oracle="auto"``, GRR iff the group's domain
        ``d = 2^b_j`` is at most 2^:data:`MAX_GRR_BITS` and GRR's null variance per report is smaller than
        OLH's, both of the probabilities the client realizes (:func:`null_variance`):

            ``q(1−q)/(p−q)²`` (GRR: ``p``, ``q = (1−p)/(d−1)``)  <  ``q'(1−q')/(p'−q')²`` (OLH: ``p'``, ``q' = 1/g``).

        With the ideal ``p = e^ε/(e^ε+d−1)`` the left side is ``(e^ε+d−2)/(e^ε−1)²``, and with ``g = e^ε+1``
        the right is ``4e^ε/(e^ε−1)²`` (Wang et al., USENIX Security 2017), so GRR iff ``d − 2 < 3e^ε``;
        OLH's integer ``g`` moves the boundary slightly, which the realized comparison accounts for. A tie
        goes to OLH. The per-holder term ``a = (1−p−q')/(p−q')`` is left out: it is GRR's larger when its
        ``p`` is below OLH's (about 1/2, i.e. ``e^ε < d − 1``), and it dominates for prefixes held by few
        users in small groups at large ε, where "auto" can then detect less (docs/protocols/pem.md)."""
        if self.oracle == "olh":
            return ("olh",) * self.groups
        if self.oracle == "grr":
            for j in range(self.groups):
                self.grr(j)  # its checks: ε neither too large nor too small for the client
            return ("grr",) * self.groups
        out = []
        for j in range(self.groups):
            bits = self.prefix_bits(j)
            grr = _grr(self.epsilon, bits) if bits <= MAX_GRR_BITS else None
            use = grr is not None and null_variance(grr.p, grr.q) < null_variance(self.olh.p, self.olh.q_star)
            out.append("grr" if use else "olh")
        return tuple(out)

    @property
    def oracle_summary(self) -> str:
        """The groups' oracles in order, runs counted: ``"OLH"``, ``"GRR"`` or e.g. ``"GRR, OLH×9"``."""
        runs = [(o, len(list(same))) for o, same in groupby(self.oracles)]
        return ", ".join(o.upper() + (f"×{k}" if k > 1 and len(runs) > 1 else "") for o, k in runs)

    def oracle_of(self, group: int) -> str:
        """``"olh"`` or ``"grr"``: the oracle group ``group`` reports through (:attr:`oracles`)."""
        return self.oracles[check_int(group, "group", 0, self.groups - 1)]

    def group_pq(self, group: int) -> tuple[float, float]:
        """``(p, q')`` of group ``group``: a report supports the true prefix with probability ``p`` and any
        other given prefix with ``q'`` (OLH: ``p`` and ``1/g``; GRR: ``p`` and ``(1−p)/(d−1)``)."""
        if self.oracle_of(group) == "grr":
            grr = self.grr(group)
            return grr.p, grr.q
        return self.olh.p, self.olh.q_star

    def y_size(self, group: int) -> int:
        """The range of ``y`` in group ``group``'s reports: OLH's ``g`` or GRR's ``2^b_j``."""
        return 1 << self.prefix_bits(group) if self.oracle_of(group) == "grr" else self.olh.g

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
        """OLH's hash range (of the OLH groups)."""
        return self.olh.g

    @property
    def p(self) -> float:
        return self.olh.p

    @property
    def q_star(self) -> float:
        return self.olh.q_star

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """One report's cost, the largest of its oracles' (every user reports once, in one group whose
        choice is independent of the value: a report's likelihood ratio is that of its group's oracle)."""
        costs = [self.olh.privacy_cost if o == "olh" else self.grr(j).privacy_cost for j, o in enumerate(self.oracles)]
        return PrivacyCost(max(c.epsilon for c in costs))

    @property
    def domain_size(self) -> None:
        return None

    @classmethod
    def examples(cls) -> list[PEMParams]:
        """One-byte strings in two groups of 4 and 8 bits, OLH and mixed oracles (conformance suite)."""
        return [cls(2.0, max_length=1, start_bits=4, step_bits=4),
                cls(3.0, max_length=1, start_bits=4, step_bits=4, oracle="auto")]

    @classmethod
    def audit_examples(cls) -> list[PEMParams]:
        """As :meth:`examples` with three hash functions (``seed_range=3``): enumerable; and GRR in both groups."""
        return [cls(1.0, max_length=1, start_bits=4, step_bits=4, seed_range=3),
                cls(2.0, max_length=1, start_bits=4, step_bits=4, oracle="auto", seed_range=3),
                cls(0.5, max_length=1, start_bits=4, step_bits=4, oracle="grr", seed_range=3)]

    def audit_inputs(self) -> list[str]:
        """Strings apart in their first 4 bits (``a``, ``q``) and only in their last (``a``, ``b``)."""
        return ["a", "b", "q"]

    @property
    def aggregate_cells(self) -> int:
        return self.groups

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        ys = self.g if self.oracle == "olh" else max(self.y_size(j) for j in range(self.groups))
        return (Field("group", "uint", self.groups), Field("seed", "uint", self.seed_range), Field("y", "uint", ys))

    def validate(self, report: Report) -> None:
        """The schema's checks, then its group's: ``y`` within the group's range, a GRR group's seed 0."""
        super().validate(report)
        if self.oracle == "olh":
            return  # one range for every group: the schema's
        group, seed, y = (report.payload[k] for k in ("group", "seed", "y"))
        assert isinstance(group, int) and isinstance(seed, int) and isinstance(y, int)  # checked by the schema
        if y >= self.y_size(group):
            raise ReportError("out_of_range", f"y must be < {self.y_size(group)} in group {group}, got {y}")
        if seed and self.oracle_of(group) == "grr":
            raise ReportError("out_of_range", f"seed must be 0 in group {group} (GRR), got {seed}")

    def padded(self, value: Any) -> bytes:
        """The value as the client encodes it: checked, truncated if allowed, NUL-padded."""
        return pad_value(value, self.max_length, self.truncate)

    def key_of(self, value: Any, group: int) -> int:
        """The 32-bit key group ``group`` reports for ``value`` (a string, or its padded integer)."""
        padded = value if isinstance(value, int) else int.from_bytes(self.padded(value), "big")
        bits = self.prefix_bits(group)
        return prefix_key(padded >> (self.total_bits - bits), bits)

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: the defaults (10-byte strings, 8-bit steps, ``top_k = 32``) at ``ε``."""
        return cls(epsilon)


@lru_cache(maxsize=64)
def _grr(epsilon: float, bits: int) -> GRRParams:
    """GRR over the ``2^bits`` prefixes (shared by every params of one ε)."""
    return GRRParams(epsilon, 1 << bits)


class PEMEncoder(Encoder):
    """Client encoder for :class:`PEMParams`; values are ``str`` or ``bytes`` (module docstring)."""

    params: PEMParams
    params_type: ClassVar[type[PEMParams]] = PEMParams

    def prepare(self, value: Any) -> int:
        return int.from_bytes(self.params.padded(value), "big")

    def randomize(self, prepared: int) -> Report:
        rng, pr = self._rng, self.params
        group = rng.randbelow(pr.groups)
        if pr.oracle_of(group) == "grr":
            grr, x = pr.grr(group), pr.key_of(prepared, group)  # the prefix itself (at most 16 bits)
            if rng.bernoulli(grr.p):
                return self._report({"group": group, "seed": 0, "y": x})
            other = rng.randbelow(grr.domain_size - 1)  # uniform over the d-1 other prefixes
            return self._report({"group": group, "seed": 0, "y": other + (other >= x)})
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
