"""Apple's Hadamard Count Mean Sketch (HCMS), client side (apple-and-theory.md §2.1).

The client draws a hash index ``j`` uniformly from ``[k]`` and a Hadamard row ``r`` uniformly
from ``[m]`` (``m`` a power of two), and sends ``(j, r, bit)`` where the bit encodes
``b·H[h_j(value), r]``: the Sylvester Hadamard entry ``H[a, r] = (−1)^{popcount(a & r)}``, kept
with probability ``e^ε/(1+e^ε)`` and flipped with probability ``1/(1+e^ε)`` (bit 1 = +1). Only one
±1 value depends on the input: ε-LDP. Hashing is shared with CMS (:class:`~ldp.encoders.cms.SketchParams`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from ldp.encoders.base import Encoder, check_string_value
from ldp.encoders.base_checks import refuse_relation
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.cms import SketchParams, sketch_draws
from ldp.hashing import bucket_of_bytes, value_bytes
from ldp.randomness import logistic_tail
from ldp.reports import Field, Report, ReportBatch

__all__ = ["HcmsParams", "HcmsEncoder", "hadamard_entry"]


def hadamard_entry(a: int, row: int) -> int:
    """Sylvester Hadamard matrix entry ``H[a, row] = (−1)^{popcount(a AND row)}`` (+1 or −1)."""
    return -1 if (a & row).bit_count() & 1 else 1


@dataclass(frozen=True)
class HcmsParams(SketchParams):
    """Hadamard Count Mean Sketch: ε per report, k hash functions, width m (a power of two)."""

    epsilon: float
    num_hashes: int
    width: int
    hash_seed: int = 0
    protocol: ClassVar[str] = "hcms"
    value_class: ClassVar[str | None] = "string"
    refusal_rules: ClassVar[Mapping[str, str]] = {"power_of_two": "the width m must be a power of two"}
    draw_rule = DrawRule("`R(k)`, `R(m)`, `B(σ(ε))`", lambda s, pr, v: sketch_draws(s, pr))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 4.0, "num_hashes": 256, "width": 1024, "hash_seed": 7},)
    hadamard: ClassVar[bool] = True
    _epsilon_per_flip: ClassVar[float] = 1.0

    def __post_init__(self) -> None:
        self._check_sketch()
        if self.width & (self.width - 1):
            raise refuse_relation(f"HCMS width m must be a power of two (Hadamard transform), got {self.width}",
                                  "power_of_two", "width")

    @cached_property
    def flip_probability(self) -> float:
        """The one Hadamard coefficient is flipped with probability ``1/(1+e^ε)``."""
        return logistic_tail(self.epsilon)

    @property
    def c(self) -> float:
        """``c_ε = (e^ε+1)/(e^ε−1)`` (the full ε, not ε/2)."""
        e = math.exp(self.epsilon)
        return (e + 1) / (e - 1)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("hash", "uint", self.num_hashes), Field("row", "uint", self.width), Field("bit", "uint", 2))


class HcmsEncoder(Encoder):
    """Client encoder for :class:`HcmsParams`; values are str or bytes."""

    params: HcmsParams
    params_type: ClassVar[type[HcmsParams]] = HcmsParams

    def prepare(self, value: Any) -> bytes:
        """The value's hashed bytes (:func:`~ldp.hashing.value_bytes`): a bad value fails here, before any charge."""
        return value_bytes(check_string_value(value, "HCMS"))

    def draw(self, prepared: bytes) -> tuple[int, int, int]:
        """The payload's values in schema order: ``(j, row, bit)``; draws ``randbelow(k)``, ``randbelow(m)``,
        then the flip. The bit is 1 iff ``H[h_j(v), row]`` (+1 iff ``popcount(h_j(v) & row)`` is even) survives."""
        pr, rng = self.params, self._rng
        j = rng.randbelow(pr.num_hashes)
        row = rng.randbelow(pr.width)
        odd = (bucket_of_bytes(prepared, pr.width, pr.hash_seed + j) & row).bit_count() & 1
        return j, row, odd ^ (not rng.bernoulli(pr.flip_probability))

    def randomize(self, prepared: bytes) -> Report:
        j, row, bit = self.draw(prepared)
        return self._report({"hash": j, "row": row, "bit": bit})

    def encode_batch(self, values: Any, rng: Any = None, *, candidates: Any = None) -> ReportBatch:
        """Vectorized reports (``values``: indices into ``candidates`` or the strings; see :mod:`ldp.batch.sketch`)."""
        from ldp.batch.sketch import hcms_encode_batch  # numpy, loaded only here

        j, row, bit = hcms_encode_batch(self.params, values, rng, candidates=candidates)
        return self._batch({"hash": j, "row": row, "bit": bit})
