"""Charge on change, protocol ``thresh``: a k-ary value whose lifetime cost grows with the number of times it
CHANGES, not with the number of reports (after Joseph, Roth, Ullman & Waggoner, "Local Differential Privacy for
Evolving Data", NeurIPS 2018). Client side (standard library only). See docs/protocols/changing-values.md.

A device's reports of one metric form a stream cut into **epochs**: the first report opens epoch 0, and each report
whose value differs from the previous report's opens the next epoch. An epoch's response is one GRR of its value at
``epsilon`` (``p = e^ε/(e^ε + k − 1)``), drawn from the device's secret, the epoch number and the value
(:class:`~ldp.randomness.KeyedRandomSource`, HMAC-SHA256), and replayed by every report of the epoch. The ledger
keeps the stream's epoch and a keyed hash of its last value (:class:`~ldp.privacy.cost.ChangeCharge`, never the
value) and charges ``ε`` for a report that opens an epoch, nothing for a replay: ``T`` reports with ``c`` changes
cost ``(c + 1)·ε`` whatever ``T`` is.

What reports leak: the responses of distinct epochs are independent GRRs, so between two trajectories with the same
change points (hence the same epochs) the reports leak exactly ``Σ_e ε·[v_e ≠ v'_e]``, at most ``(c + 1)·ε`` and
equal to it when every epoch's value differs (the exact audit enumerates it, :mod:`tests.protocols.test_thresh`).
The change points themselves are visible (a replay is identical, a new epoch's response is not always), as with
every memoized protocol.

A change back to an earlier value is a change: the new epoch draws a fresh response. Memoizing per distinct value
(L-GRR, RAPPOR) would replay the old one and charge only distinct values, which is cheaper for a device that
oscillates between a few values, but it needs a key per value ever held in the ledger, and a returning value's
reports are then identical to its earlier ones, which links the two periods and shows the return. Per change, the
device keeps O(1) state (the last value's key and the epoch), the report after a change carries no trace of the
periods before, and the cost is what THRESH bounds: the number of changes.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Self

from ldp.encoders.base import DomainPrepare, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.longitudinal import grr_draw
from ldp.encoders.longitudinal_memo import _SecretEncoder
from ldp.encoders.randomized_response import GRRParams
from ldp.privacy.accountant import ChangeCharge, PrivacyCost, Reservation
from ldp.randomness import KeyedRandomSource
from ldp.reports import Field, Report, ReportBatch

__all__ = ["ThreshParams", "ThreshEncoder"]

_EPOCH_DOMAIN = b"ldp/thresh/epoch/v1\x00"
_STREAM_DOMAIN = b"ldp/thresh/stream/v1\x00"
_VALUE_DOMAIN = b"ldp/thresh/value/v1\x00"


@dataclass(frozen=True)
class ThreshParams(ProtocolParams):
    """Charge on change over ``domain_size`` values: an epoch's GRR at ``epsilon``, replayed until the value
    changes."""

    epsilon: float
    domain_size: int
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "thresh"
    value_class: ClassVar[str | None] = "category"
    draw_rule = DrawRule("nothing (every draw is from the keyed stream)", lambda s, pr, v: None)
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 0.7, "domain_size": 100},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.domain_size, "domain_size", 2, 2**32)
        if self.labels is not None and isinstance(self.labels, (list, tuple)):
            object.__setattr__(self, "labels", tuple(self.labels))
        _ = self.grr  # GRR's checks: labels, and p realizable at the client's resolution
        self.check_collectable()

    @cached_property
    def grr(self) -> GRRParams:
        """An epoch's response: GRR at ``epsilon`` over the values (also the labels' index)."""
        return GRRParams(self.epsilon, self.domain_size, self.labels)

    @classmethod
    def examples(cls) -> list[Self]:
        """Three values, and four labels (conformance suite)."""
        return [cls(1.0, 3), cls(2.0, 4, ("n", "e", "s", "w"))]

    @property
    def privacy_cost(self) -> PrivacyCost:
        """One epoch's response (every report of an epoch together): GRR's ``max(ε, realized ε)``."""
        return self.grr.privacy_cost

    @property
    def p(self) -> float:
        return self.grr.p

    @property
    def q(self) -> float:
        return self.grr.q

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """GRR's ``(p, q)``: one report, over the devices' secrets."""
        return self.grr.support_probabilities

    def change_cost(self, changes: int) -> PrivacyCost:
        """What the ledger charges a stream with ``changes`` changes, however many reports: ``(c + 1)·ε``."""
        return self.privacy_cost.times(check_int(changes, "changes", 0) + 1)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("index", "uint", self.domain_size),)

    @property
    def aggregate_cells(self) -> int:
        return self.domain_size

    def index_of(self, value: Any) -> int:
        return self.grr.index_of(value)

    def label_of(self, index: int) -> str:
        return self.grr.label_of(index)

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: an epoch's response at ``ε``."""
        return cls(epsilon, domain_size)

    def horizon_cost(self, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
        """``(ε, ε, min(runs, R)·ε)``: a run of one value costs ε however long; ``distinct`` is read as the number
        of runs (``c + 1`` for ``c`` changes; the distinct values when no value comes back)."""
        one = self.privacy_cost
        return one, one, one.times(min(check_int(distinct, "distinct", 1), check_int(reports, "reports", 1)))


class ThreshEncoder(DomainPrepare, _SecretEncoder):
    """Charge-on-change client: values are labels or indices in ``[0, k)``. With a ledger (or in a
    :class:`~ldp.client.TelemetryClient`) the epoch is the ledger's, kept in its file with the charge (one
    transaction: a crash keeps both or neither); without one it is tracked in memory, from this encoder's first
    report. ``prr_rng`` (audits, simulation) draws each epoch's response from it instead of the secret."""

    params: ThreshParams
    params_type: ClassVar[type[ThreshParams]] = ThreshParams

    def __init__(self, params: ThreshParams, **kwargs: Any) -> None:
        super().__init__(params, **kwargs)
        self._last: int | None = None
        self.epoch = -1
        """The epoch of the last report (``-1`` before the first)."""
        self._responses: dict[tuple[int, int], int] = {}
        self._stream = hmac.new(self._secret, _STREAM_DOMAIN + self._hex_fp, hashlib.sha256).digest()

    def response(self, epoch: int, index: int) -> int:
        """Epoch ``epoch``'s response to value ``index``: GRR drawn from (secret, epoch, value)."""
        key = (epoch, index)
        if (memo := self._responses.get(key)) is not None:
            return memo
        src = self._prr_rng if self._prr_rng is not None else KeyedRandomSource(
            self._secret, _EPOCH_DOMAIN + self._hex_fp + epoch.to_bytes(8, "big") + index.to_bytes(4, "big"))
        memo = grr_draw(self.params.grr, index, src)
        if self._prr_rng is None:
            self._responses.clear()  # a function of (secret, epoch, value): only the current epoch's is kept
        self._responses[key] = memo
        return memo

    def _in_epoch(self, prepared: int, epoch: int) -> Report:
        self._last, self.epoch = prepared, epoch
        return self._report({"index": self.response(epoch, prepared)})

    def randomize(self, prepared: int) -> Report:
        """The report of ``prepared`` with the epoch tracked in memory (a new one if the value changed)."""
        return self._in_epoch(prepared, self.epoch + (prepared != self._last))

    def randomize_charged(self, prepared: int, reservation: Reservation) -> Report:
        """The report of ``prepared`` in the epoch the ledger charged (``reservation.epoch``)."""
        if reservation.epoch is None:
            raise ValueError("thresh reports need the epoch of a ChangeCharge; the reservation has none")
        return self._in_epoch(prepared, reservation.epoch)

    def charge_for(self, prepared: int) -> ChangeCharge:
        """ε when the value differs from the stream's last one (the ledger compares keyed hashes), else 0."""
        value = hmac.new(self._secret, _VALUE_DOMAIN + self._message(prepared), hashlib.sha256).digest()
        return ChangeCharge(self._stream, value, self.params.privacy_cost)

    def encode_batch(self, values: Any, rng: Any = None, *, panel: Any = None) -> ReportBatch:
        """Vectorized reports (simulation): each row a fresh device, or the devices of ``panel``
        (:class:`ldp.batch.thresh.ThreshPanel`: their last values and epochs' responses, updated)."""
        from ldp.batch.thresh import thresh_encode_batch  # numpy, loaded only here

        return self._batch({"index": thresh_encode_batch(self.params, values, rng, panel=panel)})
