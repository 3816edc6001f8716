"""Privacy costs, their composition, and the client's persistent budget ledger.

One accountant for the whole toolkit: encoders state a :class:`PrivacyCost`, the client's
:class:`BudgetLedger` (in :mod:`ldp.privacy.ledger`, also importable from here) charges it before any
randomness is drawn, and decoders and the central-DP regressions report what they release with
the same type. The costs and their composition are defined in :mod:`ldp.privacy.cost` (the lowest module of
:mod:`ldp.privacy`), the ledger in :mod:`ldp.privacy.ledger`; this module adds the central
:class:`PrivacyAccountant` and exports them all, so it sits above both.

Composition (Dwork & Roth, *The Algorithmic Foundations of DP*, 2014):

* sequential (Thm 3.16): ``(ε1, δ1) + (ε2, δ2) = (ε1 + ε2, δ1 + δ2)``;
* parallel, on disjoint data (McSherry 2009): ``(max εi, max δi)``;
* advanced (Thm 3.20): k-fold ``(ε, δ)`` is ``(ε·sqrt(2k ln(1/δ')) + k·ε·(e^ε − 1), k·δ + δ')``.
"""

from __future__ import annotations

from ldp.errors import BudgetExceeded, LedgerError
from ldp.privacy.cost import (
    ZERO_COST,
    ChangeCharge,
    MemoizedCharge,
    PrivacyCost,
    advanced_composition,
    cap_limits,
    check_real,
    clamped,
    compose_parallel,
    compose_sequential,
    first_exceeded,
)
from ldp.privacy.ledger import BudgetLedger, BudgetPolicy, Reservation
from ldp.privacy.shuffle import ShuffleGuarantee, shuffled_cost, shuffled_epsilon

__all__ = [
    "PrivacyCost",
    "ZERO_COST",
    "compose_sequential",
    "compose_parallel",
    "advanced_composition",
    "PrivacyAccountant",
    # the central guarantee of n shuffled reports (ldp.privacy.shuffle): shuffled_cost(per_report, n, delta)
    "ShuffleGuarantee",
    "shuffled_cost",
    "shuffled_epsilon",
    # the client's budget ledger, defined in ldp.privacy.ledger (its errors in ldp.errors) and exported here too
    "BudgetPolicy",
    "MemoizedCharge",
    "ChangeCharge",
    "Reservation",
    "BudgetExceeded",
    "LedgerError",
    "BudgetLedger",
]

# their names before they moved to ldp.privacy.cost (tests/privacy/test_ledger_batch.py imports two of them)
_check_real, _clamped, _cap_limits, _first_exceeded = check_real, clamped, cap_limits, first_exceeded


class PrivacyAccountant:
    """The central side's running total: every release (a fitted regression, a published
    estimate) is recorded with its :class:`PrivacyCost` under sequential composition, and a release
    that would exceed ``cap`` raises :class:`BudgetExceeded` before any noise is drawn."""

    def __init__(self, cap: PrivacyCost | None = None) -> None:
        self.cap = cap
        self.releases: list[tuple[str, PrivacyCost]] = []

    def __copy__(self) -> PrivacyAccountant:
        return self  # one running total: copies (scikit-learn's clone in cross-validation) share it

    def __deepcopy__(self, memo: dict[int, object]) -> PrivacyAccountant:
        return self

    @property
    def spent(self) -> PrivacyCost:
        return compose_sequential(c for _, c in self.releases)

    def spend(self, cost: PrivacyCost, label: str = "") -> None:
        """Record ``cost`` (or raise :class:`BudgetExceeded`, recording nothing)."""
        if self.cap is not None and not (self.spent + cost).fits_within(self.cap):
            raise BudgetExceeded(label or "central", "total", cost, self.spent, self.cap)
        self.releases.append((label, cost))

    def __repr__(self) -> str:
        return f"PrivacyAccountant(spent={self.spent}, cap={self.cap}, releases={len(self.releases)})"

