"""Privacy costs and their composition: what an encoder states, a ledger charges and a release reports.

:class:`PrivacyCost` is an (ε, δ) guarantee; :class:`MemoizedCharge` a history-dependent charge (RAPPOR's
PRR); :class:`ChangeCharge` one made on each change of a stream's value (THRESH-style: :mod:`ldp.encoders.thresh`).
The cap arithmetic the ledger runs on floats (:func:`cap_limits`, :func:`first_exceeded`, :func:`clamped`) is here
too, beside the ``PrivacyCost`` arithmetic it must agree with. The lowest module of :mod:`ldp.privacy` (it imports
nothing of ldp); :mod:`ldp.privacy.accountant` exports all of it.

Composition (Dwork & Roth, *The Algorithmic Foundations of DP*, 2014):

* sequential (Thm 3.16): ``(ε1, δ1) + (ε2, δ2) = (ε1 + ε2, δ1 + δ2)``;
* parallel, on disjoint data (McSherry 2009): ``(max εi, max δi)``;
* advanced (Thm 3.20): k-fold ``(ε, δ)`` is ``(ε·sqrt(2k ln(1/δ')) + k·ε·(e^ε − 1), k·δ + δ')``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["PrivacyCost", "ZERO_COST", "MemoizedCharge", "ChangeCharge", "Charge", "compose_sequential",
           "compose_parallel", "advanced_composition", "check_real", "clamped", "cap_limits", "first_exceeded"]

_REL_TOL = 1e-9
"""Relative slack when comparing spending with a cap, so that 10 x 0.1 fits in 1.0 despite rounding."""


def check_real(x: float, name: str, *, upper: float = math.inf, upper_open: bool = False) -> float:
    """``x`` as a float: a real number (not a bool), finite, >= 0 and at most ``upper`` (below it if
    ``upper_open``); a ``TypeError`` or ``ValueError`` naming ``name`` otherwise."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    try:
        x = float(x)
    except OverflowError:  # an int beyond the double range
        x = math.inf
    if not (x >= 0.0 and math.isfinite(x)):
        raise ValueError(f"{name} must be finite and >= 0, got {x}")
    if x > upper or (upper_open and x == upper):
        raise ValueError(f"{name} must be {'<' if upper_open else '<='} {upper}, got {x}")
    return x


@dataclass(frozen=True)
class PrivacyCost:
    """An (ε, δ) differential-privacy guarantee (δ = 0 for pure ε-DP)."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check_real(self.delta, "delta", upper=1.0, upper_open=True))

    def __add__(self, other: PrivacyCost) -> PrivacyCost:
        """Sequential composition."""
        if not isinstance(other, PrivacyCost):
            return NotImplemented
        return PrivacyCost(self.epsilon + other.epsilon, min(self.delta + other.delta, math.nextafter(1.0, 0.0)))

    def times(self, k: int) -> PrivacyCost:
        """k-fold sequential composition: ``(k·ε, k·δ)``."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"number of compositions must be an int >= 0, got {k!r}")
        return PrivacyCost(k * self.epsilon, min(k * self.delta, math.nextafter(1.0, 0.0)))

    def fits_within(self, cap: PrivacyCost) -> bool:
        """``True`` if both ε and δ are at most the cap's (with a 1e-9 relative rounding slack)."""
        return _fits(self.epsilon, cap.epsilon) and _fits(self.delta, cap.delta)

    def to_dict(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "delta": self.delta}

    @classmethod
    def from_dict(cls, d: Mapping[str, float]) -> PrivacyCost:
        return cls(d["epsilon"], d.get("delta", 0.0))

    def __str__(self) -> str:
        return f"ε={self.epsilon:.6g}" + (f", δ={self.delta:.3g}" if self.delta else "")


ZERO_COST = PrivacyCost(0.0, 0.0)


@dataclass(frozen=True)
class MemoizedCharge:
    """A history-dependent charge for a memoized response (RAPPOR's PRR).

    The first report of ``key`` is charged ``first``; each later report ``then``; the total ever
    charged for ``key`` in its metric never exceeds ``cap`` (each increment is cut to fit).
    """

    key: bytes
    first: PrivacyCost
    then: PrivacyCost
    cap: PrivacyCost


@dataclass(frozen=True)
class ChangeCharge:
    """A charge made only when a stream's value changes (Joseph, Roth, Ullman & Waggoner, NeurIPS 2018).

    The ledger keeps, per ``stream`` of a metric, a keyed hash of the last ``value`` reported and an epoch
    counter (never the value itself). A report whose ``value`` differs from the last one, or the stream's first
    report, opens a new epoch and is charged ``cost``; a report of the same value is charged nothing. The epoch is
    returned in the :class:`~ldp.privacy.ledger.Reservation` (``epoch``): the encoder draws the epoch's response
    from (secret, epoch, value), so every response ever revealed is charged ``cost`` exactly once, and ``c``
    changes over any number of reports cost ``(c + 1)·cost``.
    """

    stream: bytes
    value: bytes
    cost: PrivacyCost


Charge = PrivacyCost | MemoizedCharge | ChangeCharge
"""What a ledger charges for one report."""


def _fits(amount: float, cap: float) -> bool:
    return amount <= cap * (1.0 + _REL_TOL) + 1e-15


_DELTA_MAX = math.nextafter(1.0, 0.0)


def clamped(eps: float, delta: float) -> tuple[float, float]:
    """A stored running total as ``(ε, δ)``, clamped like ``PrivacyCost(max(ε, 0), min(max(δ, 0), 1⁻))``;
    a NaN or infinite total raises the ``ValueError`` that ``PrivacyCost`` raises."""
    e, d = max(eps, 0.0), min(max(delta, 0.0), _DELTA_MAX)
    if not (e < math.inf and d >= 0.0):
        PrivacyCost(e, d)  # raises
    return e, d


def cap_limits(cap: PrivacyCost) -> tuple[float, float]:
    """The largest ε and δ totals that fit within ``cap``: the right-hand sides of :func:`_fits`."""
    return cap.epsilon * (1.0 + _REL_TOL) + 1e-15, cap.delta * (1.0 + _REL_TOL) + 1e-15


def first_exceeded(spent: list[tuple[float, float]], epsilon: float, delta: float,
                    limits: tuple[tuple[int, float, float], ...]) -> int:
    """The first ``k`` of ``limits`` (``(k, ε limit, δ limit)`` from :func:`cap_limits` of cap k)
    whose cap a charge of ``(epsilon, delta)`` on top of ``spent[k]`` would exceed, or -1.

    The ledger's per-charge cap check, on floats: the same as the first k for which
    ``not (PrivacyCost(*clamped(*spent[k])) + PrivacyCost(epsilon, delta)).fits_within(cap_k)``,
    raising where that raises (tests/privacy/test_ledger_batch.py checks it with hypothesis)."""
    for k, limit_epsilon, limit_delta in limits:
        se, sd = spent[k]
        if not (0.0 <= se < math.inf and 0.0 <= sd <= _DELTA_MAX):  # negative, NaN, inf: clamp or raise
            se, sd = clamped(se, sd)
        e = se + epsilon
        if e == math.inf:
            PrivacyCost(e, 0.0)  # raises the ValueError of the reference sum
        if e > limit_epsilon or min(sd + delta, _DELTA_MAX) > limit_delta:
            return k
    return -1


def compose_sequential(costs: Iterable[PrivacyCost]) -> PrivacyCost:
    """Basic sequential composition: sum of ε and of δ."""
    total = ZERO_COST
    for c in costs:
        total = total + c
    return total


def compose_parallel(costs: Iterable[PrivacyCost]) -> PrivacyCost:
    """Parallel composition over disjoint data: the maximum ε and the maximum δ."""
    costs = list(costs)
    if not costs:
        return ZERO_COST
    return PrivacyCost(max(c.epsilon for c in costs), max(c.delta for c in costs))


def advanced_composition(cost: PrivacyCost, k: int, delta_slack: float) -> PrivacyCost:
    """k-fold adaptive composition (Dwork, Rothblum & Vadhan 2010; Dwork & Roth Thm 3.20)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"number of compositions must be an int >= 1, got {k!r}")
    slack = check_real(delta_slack, "delta_slack", upper=1.0, upper_open=True)
    if slack == 0.0:
        raise ValueError("delta_slack must be > 0 for advanced composition")
    eps = cost.epsilon
    return PrivacyCost(
        eps * math.sqrt(2 * k * math.log(1 / slack)) + k * eps * math.expm1(eps),
        min(k * cost.delta + slack, math.nextafter(1.0, 0.0)),
    )
