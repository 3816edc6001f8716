"""Which protocols fit inside the two-aggregator mode (issue 71, item 5): a report whose payload is a valid Prio3
measurement can be secret-shared between two aggregators, so that local noise holds even if both collude and the
aggregators' sum is exactly the protocol's sufficient statistics.

A protocol answers :meth:`~ldp.encoders.base.ProtocolParams.prio3_fit` with a :class:`Prio3Fit` — the VDAF type
of VDAF draft 18 (§7), its parameters, the payload field that is the measurement, and the aggregate's state array
that the aggregators' result is — or ``None`` (does not fit). Those that fit:

=============  ==================  ===================================  ======================
protocol       Prio3 type          measurement                          aggregate state filled
=============  ==================  ===================================  ======================
``rr``         Prio3Count          the reported bit (0 or 1)            ``ones``
``grr``        Prio3Histogram      the reported index (< d)             ``counts``
``pgr``, hpg   Prio3Histogram      the reported point (< K)             ``counts``
``sue``, oue   Prio3SumVec, max 1  the reported bit vector (d bits)     ``ones``
=============  ==================  ===================================  ======================

The sum of the measurements is what the aggregate would have folded from the reports, so the ingest service debiases
it with the protocol's own estimator (:meth:`ldp.decoders.base.Aggregate.from_sums`). Standard library only: the
client imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field as _field
from typing import Any

__all__ = ["Prio3Fit", "PRIO3_TYPES"]

PRIO3_TYPES = ("Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram")
"""The Prio3 types the two-aggregator mode binds (the ``prio`` crate's, VDAF draft 18)."""


@dataclass(frozen=True)
class Prio3Fit:
    """How a protocol's report enters Prio3: the ``vdaf`` type (:data:`PRIO3_TYPES`), its ``params`` (``length``,
    ``max_measurement`` as :mod:`ldp.prio`'s types take them; the proof's chunk length is not one of them: device and
    aggregators both take the ``prio`` crate's optimal one for the length, so that they agree), the payload
    ``field`` whose value is the measurement, and the aggregate ``state`` array the summed measurements are."""

    vdaf: str
    field: str
    state: str
    params: Mapping[str, int] = _field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.vdaf not in PRIO3_TYPES:
            raise ValueError(f"vdaf must be one of {', '.join(PRIO3_TYPES)}, got {self.vdaf!r}")

    @property
    def length(self) -> int:
        """Entries of the aggregate: 1 (Count, Sum), or the vector's length."""
        return int(self.params.get("length", 1))

    def measurement(self, payload: Mapping[str, Any]) -> int | list[int]:
        """The Prio3 measurement of a report's ``payload``: an integer (Count, Sum, Histogram) or a list of
        integers (SumVec); ``ValueError`` when it is not one the VDAF accepts (its validity is checked again, by
        proof, at the aggregators)."""
        value = payload[self.field]
        if self.vdaf == "Prio3SumVec":
            bits = [int(b) for b in (value if not isinstance(value, str) else value)]
            if len(bits) != self.length or any(not 0 <= b <= self.params["max_measurement"] for b in bits):
                raise ValueError(f"not a {self.vdaf} measurement of length {self.length}: {value!r}")
            return bits
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"not a {self.vdaf} measurement: {value!r}")
        top = {"Prio3Count": 1, "Prio3Histogram": self.length - 1,
               "Prio3Sum": self.params.get("max_measurement", 0)}[self.vdaf]
        if not 0 <= value <= top:
            raise ValueError(f"not a {self.vdaf} measurement (0 to {top}): {value!r}")
        return value

    def sums(self, measurements: list[int | list[int]]) -> list[int]:
        """What the aggregators' result is for these measurements: their sum (a Histogram's index counted in its
        bucket), one entry per aggregate entry. The reference the two-aggregator tests compare with."""
        out = [0] * self.length
        for m in measurements:
            if isinstance(m, list):
                out = [a + b for a, b in zip(out, m, strict=True)]
            elif self.vdaf == "Prio3Histogram":
                out[m] += 1
            else:
                out[0] += m
        return out
