"""The memoizing client of repeated collection: an encoder keyed by a per-device secret (never sent), from which
each value's permanent response is derived (:class:`~ldp.randomness.KeyedRandomSource`, HMAC-SHA256) and kept, and
whose charge is memoized per value (``charging="min"`` or ``"upfront"``). L-GRR, memoized 1BitMean
(:mod:`ldp.encoders.longitudinal`) and L-OUE (:mod:`ldp.encoders.unary`) subclass its ``_SecretEncoder``."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from ldp.encoders.base import Encoder, ProtocolParams, client_secret
from ldp.encoders.base_checks import check_choice, refuse_relation
from ldp.privacy.accountant import MemoizedCharge, PrivacyCost
from ldp.randomness import KeyedRandomSource, RandomSource

__all__ = ["CHARGING", "MEMO_ENTRIES", "TWO_ROUND_RULES", "check_two_rounds"]

CHARGING = ("min", "upfront")
TWO_ROUND_RULES: Mapping[str, str] = {
    "epsilon<epsilon_perm": "a report's ε must be below the permanent response's (it is post-processing of it)",
    "epsilon<realized_epsilon_perm": "ε must be below the permanent round's realized ε (no instantaneous round "
                                     "gives it otherwise)",
    "instantaneous_realizable": "the instantaneous round's probabilities must be realizable at the client's 2^-64 "
                                "resolution",
}
"""The rules of L-GRR's and L-OUE's two rounds (their ``param_relation`` refusals)."""


def check_two_rounds(name: str, epsilon: float, epsilon_perm: float) -> None:
    """``ValueError`` unless a report's ``epsilon`` is below the permanent round's ``epsilon_perm`` (``name``: the
    protocol's, ``"L-GRR"``)."""
    if not epsilon < epsilon_perm:
        raise refuse_relation(f"{name} needs epsilon < epsilon_perm (a report is post-processing of the permanent "
                              f"response, so it cannot leak more), got epsilon={epsilon}, epsilon_perm={epsilon_perm}",
                              "epsilon<epsilon_perm", "epsilon", "epsilon_perm")
MEMO_ENTRIES = 4096
"""Memoized responses an encoder keeps in memory (each recomputable from the secret; beyond, recomputed)."""
_PRR_DOMAIN = b"ldp/longitudinal/prr/v1\x00"
_MEMO_DOMAIN = b"ldp/longitudinal/memo/v1\x00"


class _SecretEncoder(Encoder):
    """An encoder whose memoized responses derive from a per-device secret (``needs_secret``)."""

    needs_secret: ClassVar[bool] = True

    def __init__(self, params: ProtocolParams, *, secret: bytes | str | None = None, rng: Any = None,
                 ledger: Any = None, metric: str | None = None, charging: str = "min",
                 prr_rng: RandomSource | None = None, simulation: bool = False) -> None:
        super().__init__(params, rng=rng, ledger=ledger, metric=metric, simulation=simulation)
        check_choice(charging, "charging", CHARGING, f"charging must be one of {CHARGING}, got {charging!r}")
        self._secret = client_secret(secret, self._rng)
        self.charging = charging
        self._prr_rng = prr_rng
        self._memo: dict[int, int] = {}
        self._hex_fp = self._fp.encode("ascii")

    @classmethod
    def for_audit(cls, params: Any, source: RandomSource) -> Self:
        """Under a fixed secret, the permanent response drawn from ``source`` too (a fresh device per path)."""
        return cls(params, secret=b"audit", rng=source, prr_rng=source, simulation=True)

    @property
    def secret(self) -> bytes:
        """The device's secret (read-only: the memoized responses derive from it)."""
        return self._secret

    def state(self) -> dict[str, Any]:
        """What the app must persist to keep memoization: ``{"secret": hex}``."""
        return {"secret": self._secret.hex()}

    def _message(self, index: int) -> bytes:
        return self._hex_fp + index.to_bytes(4, "big")

    def _memoized(self, index: int, draw: Callable[[RandomSource], int]) -> int:
        """The memoized response of ``index``: ``draw`` from the keyed randomness of (secret, index),
        or, with ``prr_rng`` (audits, simulation), from it once per index and kept by this encoder
        (HMAC modelled as a random function)."""
        if (memo := self._memo.get(index)) is not None:
            return memo
        if self._prr_rng is not None:  # every draw kept: it must never be redrawn
            memo = self._memo[index] = draw(self._prr_rng)
            return memo
        memo = draw(KeyedRandomSource(self._secret, _PRR_DOMAIN + self._message(index)))
        if len(self._memo) < MEMO_ENTRIES:  # a function of (secret, index): keeping it changes no output
            self._memo[index] = memo
        return memo

    def _memoized_charge(self, index: int, one: PrivacyCost, cap: PrivacyCost) -> MemoizedCharge:
        """``min``: ``one`` per report, at most ``cap`` per memo key; ``upfront``: ``cap`` on the first."""
        key = hmac.new(self._secret, _MEMO_DOMAIN + self._message(index), hashlib.sha256).digest()
        if self.charging == "upfront":
            return MemoizedCharge(key, first=cap, then=PrivacyCost(0.0), cap=cap)
        return MemoizedCharge(key, first=one, then=one, cap=cap)
