"""Confidence intervals after selection by a one-sided threshold (the "winner's curse").

An estimate ``β̂ ~ N(β, s²)`` that is reported only because ``β̂/s > c`` no longer has the law
``N(β, s²)``: given selection it is the normal truncated to ``(c·s, ∞)``, whose mean exceeds ``β``
by ``s·φ(c − β/s)/Φ̄(c − β/s)`` (the inverse Mills ratio). The naive interval ``β̂ ± z·s`` then
under-covers strings near the threshold and over-covers strong ones.

The selection-adjusted interval inverts the truncated-normal pivot

    F(β) = P(β̂' > β̂ | β̂' > c·s; β) = Φ̄((β̂ − β)/s) / Φ̄(c − β/s),

which is uniform on (0, 1) given selection and increasing in ``β``: the interval is
``{β : (1 − γ)/2 ≤ F(β) ≤ (1 + γ)/2}``, with exact coverage ``γ`` conditional on selection
(Lee, Sun, Sun & Taylor, *Ann. Statist.* 2016, for the general polyhedral case; Weinstein, Fithian
& Benjamini, *JASA* 2013, for a single threshold). No estimator of ``β`` is unbiased conditional on
selection (Putter & Rubinstein 1968): the adjusted *interval* is what can be made honest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["selection_adjusted_interval"]

_BISECTIONS = 60  # the bracket below shrinks 2^-60-fold: far below any standard error's precision


def _log_pivot(x: np.ndarray, mu: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``log F`` in units of the standard error: ``log Φ̄(x − μ) − log Φ̄(c − μ)``."""
    from scipy.special import log_ndtr

    return np.asarray(log_ndtr(mu - x) - log_ndtr(mu - c))


def selection_adjusted_interval(estimate: npt.ArrayLike, std_error: npt.ArrayLike, cutoff: npt.ArrayLike,
                                confidence: float = 0.95) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(low, high)`` for estimates reported because ``estimate/std_error > cutoff`` (module docstring).

    Arrays broadcast; entries with ``estimate/std_error ≤ cutoff`` (not selected), a non-positive or
    non-finite standard error give NaN. The bounds are in the estimate's units and may be negative."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    est, se, c = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (estimate, std_error, cutoff)))
    ok = np.isfinite(est) & np.isfinite(se) & (se > 0) & np.isfinite(c)
    x = np.where(ok, est / np.where(ok, se, 1.0), np.nan)
    ok &= x > c
    x, cc = np.where(ok, x, 1.0), np.where(ok, c, 0.0)
    bounds = []
    for target in ((1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0):
        bounds.append(np.where(ok, _solve(x, cc, np.log(target)) * np.where(ok, se, 1.0), np.nan))
    return bounds[0], bounds[1]


def _solve(x: np.ndarray, c: np.ndarray, log_target: float) -> Any:
    """The ``μ`` (in standard errors) with ``log F(μ) = log_target``, by bisection (``F`` increases in μ).

    Bracket: ``F(x) ≥ 1/2`` at ``μ = x`` and ``F → 1`` above, so the root lies below ``x + z``
    with ``Φ̄(−z) = target``; below, ``F(μ) ≤ Φ̄(x − μ)/Φ̄(c − μ) → 0`` as μ → −∞ at the rate
    ``exp(−(x − c)(c − μ))``: ``μ = c − (40 + |log target|)/(x − c) − 1`` is low enough."""
    lo = c - (40.0 - log_target) / np.maximum(x - c, 1e-12) - 1.0
    hi = x + 10.0
    for _ in range(_BISECTIONS + int(np.log2(max(float(np.max(hi - lo, initial=1.0)), 1.0))) + 1):
        mid = 0.5 * (lo + hi)
        below = _log_pivot(x, mid, c) < log_target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)
