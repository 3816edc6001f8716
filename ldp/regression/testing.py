"""Multiple-testing corrections for M hypotheses with p-values ``p_1 … p_M``.

* Bonferroni: reject ``H_i`` when ``p_i <= α/M``; controls the family-wise error rate at α under any
  dependence. Adjusted p-value ``min(1, M·p_i)``.
* Holm (1979, Scand. J. Statist. 6:65–70), step-down: with ``p_(1) <= … <= p_(M)``, reject ``H_(1), …,
  H_(k)`` for the largest k with ``p_(j) <= α/(M − j + 1)`` for every ``j <= k``; controls the family-wise
  error rate at α under any dependence, like Bonferroni, and rejects everything Bonferroni rejects (and
  often more). Adjusted p-value ``p̃_(i) = max_{j <= i} min(1, (M − j + 1)·p_(j))``.
* Benjamini & Hochberg (1995, JRSS B 57:289–300), step-up: with ``p_(1) <= … <= p_(M)``, let
  ``k = max{i : p_(i) <= i·α/M}`` and reject the k smallest; controls the false discovery rate at α
  for independent (or positively dependent, Benjamini & Yekutieli 2001) p-values. Adjusted p-value
  ``p̃_(i) = min_{j >= i} min(1, M·p_(j)/j)``, so that ``H_i`` is rejected iff ``p̃_i <= α``.

A nan p-value marks an untested hypothesis: it is never rejected, its adjusted p-value is nan, and
it still counts in M (the corrections stay valid for the hypotheses that were tested).
Inputs may have any shape; results have the same shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.regression.least_squares import _check_probability

__all__ = ["bonferroni", "holm", "benjamini_hochberg", "adjusted_p_values", "ADJUSTMENT_METHODS"]

ADJUSTMENT_METHODS = ("bonferroni", "holm", "bh")


def _check_p_values(p_values: Any) -> np.ndarray:
    try:
        p = np.asarray(p_values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"p-values must be numbers: {exc}") from None
    outside = ~np.isnan(p) & ~((p >= 0.0) & (p <= 1.0))
    if outside.any():
        bad = p[outside].ravel()[0]
        raise ValueError(f"p-values must lie in [0, 1] (nan for untested hypotheses), found {bad!r}")
    return p


def bonferroni(p_values: Any, alpha: float) -> np.ndarray:
    """Boolean mask of rejections, ``p_i <= α/M`` (M counts nan p-values, which are never rejected)."""
    a = _check_probability(alpha, "alpha")
    p = _check_p_values(p_values)
    if p.size == 0:
        return np.zeros(p.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        return p <= a / p.size


def _bh_order(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the non-nan p-values in ascending order (stable) and their sorted values."""
    flat = p.ravel()
    tested = np.flatnonzero(~np.isnan(flat))
    order = tested[np.argsort(flat[tested], kind="stable")]
    return order, flat[order]


def holm(p_values: Any, alpha: float) -> np.ndarray:
    """Boolean mask of Holm's step-down rejections at family-wise level α (see module docstring)."""
    a = _check_probability(alpha, "alpha")
    p = _check_p_values(p_values)
    reject = np.zeros(p.size, dtype=bool)
    order, sorted_p = _bh_order(p)
    m = p.size
    fails = np.flatnonzero(sorted_p > a / (m - np.arange(sorted_p.size)))
    k = int(fails[0]) if fails.size else sorted_p.size  # the first p_(j) above α/(M − j + 1) stops it
    reject[order[:k]] = True
    return reject.reshape(p.shape)


def benjamini_hochberg(p_values: Any, alpha: float) -> np.ndarray:
    """Boolean mask of the Benjamini–Hochberg step-up rejections at FDR level α (see module docstring)."""
    a = _check_probability(alpha, "alpha")
    p = _check_p_values(p_values)
    reject = np.zeros(p.size, dtype=bool)
    order, sorted_p = _bh_order(p)
    m = p.size
    below = sorted_p <= np.arange(1, sorted_p.size + 1) * a / m
    if below.any():
        k = int(np.flatnonzero(below)[-1])  # 0-based position of p_(k); ties with it are included
        reject[order[:k + 1]] = True
    return reject.reshape(p.shape)


def adjusted_p_values(p_values: Any, method: str) -> np.ndarray:
    """Adjusted p-values: ``"bonferroni"`` ``min(1, M·p)``; ``"holm"`` ``max_{j<=i} min(1, (M−j+1)·p_(j))``;
    ``"bh"`` ``min_{j>=i} min(1, M·p_(j)/j)``.

    nan stays nan. Rejecting ``adjusted <= α`` reproduces :func:`bonferroni` / :func:`holm` /
    :func:`benjamini_hochberg` (up to rounding exactly at the boundary).
    """
    if method not in ADJUSTMENT_METHODS:
        raise ValueError(f"method must be one of {ADJUSTMENT_METHODS}, got {method!r}")
    p = _check_p_values(p_values)
    m = p.size
    if method == "bonferroni":
        return np.minimum(1.0, m * p)
    adjusted = np.full(m, np.nan)
    order, sorted_p = _bh_order(p)
    if sorted_p.size and method == "holm":
        raw = (m - np.arange(sorted_p.size)) * sorted_p
        adjusted[order] = np.minimum(1.0, np.maximum.accumulate(raw))
    elif sorted_p.size:
        raw = m * sorted_p / np.arange(1, sorted_p.size + 1)
        adjusted[order] = np.minimum(1.0, np.minimum.accumulate(raw[::-1])[::-1])
    return adjusted.reshape(p.shape)
