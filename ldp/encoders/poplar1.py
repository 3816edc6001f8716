"""The spec's metric kind for strings over two aggregators (issue 89, item 3): ``protocol: "poplar1"``, the VDAF of
VDAF draft 18 §8 (Boneh, Boyle, Corrigan-Gibbs, Gilboa, Ishai, "Lightweight techniques for private heavy hitters",
IEEE S&P 2021), collected by the heavy-hitter walk of :mod:`ldp.aggregators.heavy_hitters`.

A metric of this kind has **no local randomizer**: the device splits the exact string into two IDPF keys, one per
aggregator (:mod:`ldp.prio.poplar1`), so its only trust model is ``two-aggregator`` and what one report costs the
device's ledger is the spec's ``budget.per_report`` (:meth:`~ldp.spec.CollectionSpec.report_charge`); against both
aggregators together its local ε is unbounded, so :attr:`Poplar1Params.privacy_cost` states none (it refuses).

The parameters (all required): ``bits``, the string's length in bits, a multiple of 8 in ``[8, 256]`` (strings of
``bits/8`` bytes; 256 is the native client's bound, ``ldp_client::poplar1::MAX_BITS``); ``threshold``, the
collector's T (a prefix is kept when its noised count is at least T); ``max_candidates``, the most candidate
prefixes of one level, in ``[2, 2^20]`` (the walk's bound, :func:`ldp.prio.heavy_hitters.check_levels`).

A value (:meth:`Poplar1Params.measurement_bytes`) is text (its UTF-8 bytes) or bytes, at most ``bits/8`` bytes, not
ending in a 0x00 byte (the pad would make ``"ab"`` and ``"ab\\0"`` one string); the measurement is those bytes
right-padded with 0x00 to ``bits/8`` bytes, its first bit the most significant bit of the first byte
(:func:`ldp.prio.poplar1.bits_of`). Standard library only: the client imports it (the binding is imported by
:mod:`ldp.client.dap` when a report is sealed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ldp.encoders.base import ProtocolParams, check_int, check_string_value
from ldp.encoders.base_checks import refuse_relation
from ldp.errors import RefusalValueError, ReportError
from ldp.hashing import value_bytes

if TYPE_CHECKING:
    from ldp.privacy.cost import PrivacyCost
    from ldp.reports import Field, Report

__all__ = ["Poplar1Params", "POPLAR1_VDAF", "MIN_BITS", "MAX_BITS", "MAX_CANDIDATES"]

POPLAR1_VDAF = "Poplar1"
"""The task's VDAF type of a metric of this kind (:data:`ldp.aggregators.task.POPLAR1`)."""
MIN_BITS, MAX_BITS = 8, 256
"""The string's length in bits: one byte to 32 (``ldp.prio.poplar1.MAX_BITS``, the native client's bound)."""
MAX_CANDIDATES = 1 << 20
"""The most candidate prefixes one level of the walk may ask (each costs every report one IDPF evaluation per
aggregator): the spec's bound on ``max_candidates``."""


@dataclass(frozen=True)
class Poplar1Params(ProtocolParams):
    """A string metric's parameters (module docstring): ``bits``, ``threshold``, ``max_candidates``."""

    bits: int
    threshold: int
    max_candidates: int

    protocol: ClassVar[str] = "poplar1"
    local_randomizer: ClassVar[bool] = False
    trust_models: ClassVar[tuple[str, ...]] = ("two-aggregator",)
    refusal_rules: ClassVar[dict[str, str]] = {
        "whole_bytes": "bits is a multiple of 8: a string is bits/8 whole bytes"}

    def __post_init__(self) -> None:
        check_int(self.bits, "bits", MIN_BITS, MAX_BITS)
        if self.bits % 8:
            raise refuse_relation(f"bits must be a multiple of 8 (a string of whole bytes), got {self.bits}",
                                  "whole_bytes", "bits")
        check_int(self.threshold, "threshold", 1)
        check_int(self.max_candidates, "max_candidates", 2, MAX_CANDIDATES)

    @property
    def length(self) -> int:
        """Bytes of a string: ``bits / 8``."""
        return self.bits // 8

    @property
    def schema(self) -> tuple[Field, ...]:
        """No envelope report: a report is a sealed DAP-09 report of the metric's task."""
        return ()

    @property
    def privacy_cost(self) -> PrivacyCost:
        """Refused: no local randomizer bounds what a report reveals to both aggregators together (the ledger is
        charged the spec's ``budget.per_report``)."""
        raise ValueError("poplar1 has no local randomizer: a report shares the exact string between two aggregators, "
                         "its local ε is unbounded (the device is charged the spec's budget.per_report)")

    @property
    def domain_size(self) -> int | None:
        return None

    @property
    def aggregate_cells(self) -> int:
        return 0

    def validate(self, report: Report) -> None:
        """Always :class:`~ldp.errors.ReportError` (``wrong_protocol``): no envelope carries a report of this kind
        (its reports are sealed DAP-09 reports for its task's leader), so the ingest service routes none."""
        raise ReportError("wrong_protocol", f"{self.protocol} reports are sealed DAP reports for the metric's task's "
                                            "leader, never envelopes")

    def task_vdaf(self) -> tuple[str, dict[str, int]]:
        """The VDAF type and the parameters a task of this metric must state (:mod:`ldp.aggregators.task`)."""
        return POPLAR1_VDAF, {"bits": self.bits, "max_candidates": self.max_candidates}

    def measurement_bytes(self, value: Any) -> bytes:
        """The ``bits/8`` bytes of ``value`` (module docstring), or its refusal: ``value_type`` (not text or
        bytes), ``not_encodable`` (a lone surrogate), ``value_too_long`` (over ``bits/8`` bytes of UTF-8),
        ``not_in_alphabet`` with ``char`` NUL (ends in a 0x00 byte), in that order."""
        check_string_value(value, self.protocol)
        raw = value_bytes(value)
        if len(raw) > self.length:
            raise RefusalValueError(f"{self.protocol} value of {len(raw)} bytes is over the metric's {self.length} "
                                    f"(bits={self.bits})", "value_too_long", got=len(raw), max=self.length,
                                    unit="bytes")
        if raw.endswith(b"\x00"):
            raise RefusalValueError(f"{self.protocol} values must not end in a NUL byte (the pad: 'ab' and 'ab\\0' "
                                    "would be one string)", "not_in_alphabet", char="\x00")
        return raw.ljust(self.length, b"\x00")
