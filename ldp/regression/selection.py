"""Non-negative lasso selection with a penalty calibrated as a per-column entry test.

Problem (the lasso of Tibshirani 1996 with the sign constraint of the "positive lasso" of Efron,
Hastie, Johnstone & Tibshirani 2004):

    minimise  (1/(2n))·‖√W (y − X b)‖²  +  α·Σ_j b̃_j     subject to  b ≥ 0,

where ``b̃_j = b_j·‖√W x_j‖`` is the coefficient of the whitened column scaled to unit Euclidean
norm, ``x̃_j = √W x_j / ‖√W x_j‖``. It is solved by scikit-learn's coordinate descent
(``Lasso(positive=True, fit_intercept=False)``) on the standardized whitened design.

Choice of α. When the weights are exact inverse variances the whitened noise is N(0, I), so for a
column outside the model ``x̃_j'e ~ N(0, 1)`` (unit-norm column). By the KKT conditions of the
problem, column j leaves 0 only if ``x̃_j'r / n > α`` (r the whitened residual). Hence
``α = z_{1−level} / n`` makes a null column enter the empty model with probability ``level``; in an
orthogonal design the solution is soft thresholding, ``b̃_j = max(0, z_j − z_{1−level})`` with
``z_j = x̃_j'√W y``, so the selection is exactly the one-sided z-test at level ``level``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy import special

from ldp.regression.least_squares import _check_design, _check_probability, _check_response, _check_weights

__all__ = ["LassoSelection", "entry_threshold", "nonnegative_lasso"]


@dataclass(frozen=True)
class LassoSelection:
    """The non-negative lasso's selected columns and coefficients.

    ``coef`` is in the original column units (``b_j = b̃_j / ‖√W x_j‖``, all >= 0); ``support`` the
    ascending indices with ``coef > 0``; ``alpha`` the scikit-learn penalty used on the standardized
    whitened problem, ``threshold = n·alpha`` its z threshold and ``level = 1 − Φ(threshold)`` the
    probability that a null column enters the empty model.
    """

    support: np.ndarray
    coef: np.ndarray
    alpha: float
    threshold: float
    level: float
    n_iter: int
    converged: bool


def entry_threshold(level: float) -> float:
    """``z_{1−level}``: the standard normal upper ``level`` quantile (``Φ⁻¹(1 − level)``)."""
    return float(-special.ndtri(_check_probability(level, "level")))


def _standardized_whitened(X: Any, sw: np.ndarray) -> tuple[Any, np.ndarray]:
    """``√W X`` with non-zero columns scaled to unit norm, and the whitened column norms.

    Sparse input stays sparse (CSC): row and column scaling are applied to the stored values,
    which is the product ``diag(√w)·X·diag(1/norms)`` without forming the diagonal matrices.
    """
    if sp.issparse(X):
        Xw = sp.csc_matrix(X, dtype=np.float64, copy=True)
        Xw.sum_duplicates()
        Xw.data *= sw[Xw.indices]
        col_of_value = np.repeat(np.arange(Xw.shape[1]), np.diff(Xw.indptr))
        norms = np.sqrt(np.bincount(col_of_value, weights=Xw.data ** 2, minlength=Xw.shape[1]))
        with np.errstate(divide="ignore", invalid="ignore"):
            Xw.data /= norms[col_of_value]  # a stored value implies a non-zero norm unless it is 0
        Xw.data[~np.isfinite(Xw.data)] = 0.0  # explicit zeros in an all-zero column
        return Xw, norms
    Xw = np.asfortranarray(X * sw[:, None])
    norms = np.linalg.norm(Xw, axis=0)
    nonzero = norms > 0
    Xw[:, nonzero] /= norms[nonzero]
    return Xw, norms


def nonnegative_lasso(X: Any, y: Any, *, weights: Any = None, level: float | None = None,
                      alpha: float | None = None, max_iter: int = 10_000,
                      tol: float = 1e-6) -> LassoSelection:
    """Select columns by the non-negative lasso with ``alpha = z_{1−level}/n`` (or a given alpha).

    ``X``: (n, p) dense or scipy.sparse (kept sparse, CSC); ``y``: (n,); ``weights``: (n,) positive
    inverse variances (None: all ones). Give exactly one of ``level`` in (0, 1) or ``alpha > 0``.
    Columns that are zero after whitening are never selected. ``converged`` is False when
    coordinate descent used all ``max_iter`` passes (scikit-learn's ConvergenceWarning is not
    suppressed). See the module docstring for why ``level`` is the null entry probability.
    """
    X, n, p = _check_design(X)
    y = _check_response(y, n)
    w = _check_weights(weights, n)
    if (level is None) == (alpha is None):
        raise ValueError("give exactly one of level= (null entry probability) or alpha= (lasso penalty)")
    if level is not None:
        level = _check_probability(level, "level")
        threshold = entry_threshold(level)
        alpha = threshold / n
    else:
        try:
            alpha = float(alpha)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"alpha must be a positive number, got {alpha!r}") from None
        if not (math.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be positive and finite, got {alpha!r}")
        threshold = alpha * n
        level = float(special.ndtr(-threshold))
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if not (isinstance(tol, (int, float, np.floating)) and math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be positive and finite, got {tol!r}")

    sw = np.sqrt(w)
    Xs, norms = _standardized_whitened(X, sw)
    nonzero = np.flatnonzero(norms > 0)
    coef = np.zeros(p)
    n_iter, converged = 0, True
    if nonzero.size:
        if nonzero.size < p:
            Xs = Xs[:, nonzero]
        from sklearn.linear_model import Lasso  # scikit-learn loads only when a lasso is fitted

        model = Lasso(alpha=alpha, fit_intercept=False, positive=True, max_iter=int(max_iter), tol=float(tol),
                      selection="cyclic", copy_X=False)
        model.fit(Xs, sw * y)
        n_iter = int(np.max(model.n_iter_))
        converged = n_iter < max_iter
        coef[nonzero] = np.maximum(model.coef_, 0.0) / norms[nonzero]
    support = np.flatnonzero(coef > 0)
    coef.setflags(write=False)
    support.setflags(write=False)
    return LassoSelection(support=support, coef=coef, alpha=float(alpha), threshold=float(threshold),
                          level=float(level), n_iter=n_iter, converged=bool(converged))
