"""The RAPPOR decoder's weighted least squares by its normal equations, when they are well conditioned.

:func:`ldp.regression.least_squares` densifies the whitened design and factorises it by Householder QR with
column pivoting: ``2·rows·p² − 2p³/3`` flops in LAPACK's ``geqp3``, whose pivoting keeps half of the work out of
level-3 BLAS. For the decoder's usual fit (``p`` up to half the ``rows = k·m``: 3.6·10⁹ flops at
``k = 128, m = 16`` and 1,024 candidates, 0.3–0.6 s on one core) that was nearly all of the decode. The design
is sparse (a candidate has at most ``h`` ones per cohort), so the Gram matrix ``G = XᵀWX`` costs a sparse product
(``Σ_rows nnz_row²`` multiply-adds, about 6·10⁵ there), and the Cholesky factor ``G = RᵀR`` with ``R⁻¹`` for
the standard errors costs ``2p³/3`` flops in level-3 BLAS: about a tenth of the QR.

The normal equations square the condition number, and ``least_squares`` also detects rank deficiency (aliased
columns): :func:`normal_equations_fit` therefore works on ``G`` equilibrated to a unit diagonal and answers only
when LAPACK's estimate of its reciprocal condition number (``dpocon``, 1-norm) is at least :data:`MIN_RCOND`
(``κ(G) ≤ 10⁸``, so ``κ(√W X) ≤ 10⁴``: far from the QR's rank tolerance of ``max(rows, p)·ε`` on ``|R_kk|``, so
``least_squares`` would have kept every column). Its coefficients and standard errors then differ from
``least_squares``' by rounding, at most of order ``κ(G)·ε`` relative (both solve the same full-rank problem;
the QR's own error has a ``κ(√W X)²`` term when the residual is not zero). Otherwise it returns ``None`` and the
caller fits by ``least_squares``, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["MIN_RCOND", "NormalFit", "gram", "normal_equations_fit"]

MIN_RCOND = 1e-8
"""Smallest estimated reciprocal 1-norm condition number of the equilibrated ``XᵀWX`` solved by Cholesky."""


@dataclass(frozen=True)
class NormalFit:
    """What the decoder reads of a :class:`~ldp.regression.LeastSquaresFit`, from a full-rank fit: ``coef``,
    ``std_error = sqrt(scale·diag((XᵀWX)⁻¹))``, ``dispersion = RSS_w/df``, ``scale`` (1 when ``variance`` is
    ``"known"``, else ``max(1, dispersion)``: the decoder's ``"conservative"``), ``df = rows − p``."""

    coef: np.ndarray
    std_error: np.ndarray
    dispersion: float
    scale: float
    df: int
    rss: float
    variance: str

    def statistic(self) -> np.ndarray:
        """``coef / std_error``."""
        return self.coef / self.std_error

    def p_values(self, alternative: str = "greater") -> np.ndarray:
        """One-sided ``P(T >= t)`` (the decoder's only use), ``T ~ N(0, 1)`` when the variance is known, else
        ``t_df``: the formula of :meth:`~ldp.regression.LeastSquaresFit.p_values`."""
        if alternative != "greater":
            raise ValueError(f"a normal-equations fit gives one-sided 'greater' p-values only, got {alternative!r}")
        from scipy import special

        t = -self.statistic()
        return np.asarray(special.ndtr(t) if self.variance == "known" else special.stdtr(self.df, t), np.float64)


def gram(xw: sp.spmatrix | sp.sparray) -> np.ndarray:
    """``xwᵀ·xw`` as a dense (p, p) array, by the sparse product (``Σ_rows nnz_row²`` multiply-adds)."""
    return np.asarray((xw.T @ xw).toarray(), dtype=np.float64)


def normal_equations_fit(x: sp.spmatrix | sp.sparray, y: np.ndarray, w: np.ndarray,
                         variance: str) -> NormalFit | None:
    """Weighted least squares ``argmin_b Σ_i w_i (y_i − x_i'b)²`` through the Cholesky factor of the equilibrated
    ``XᵀWX`` (module docstring), or ``None`` when that matrix is not clearly full rank and well conditioned
    (``dpocon``'s estimate below :data:`MIN_RCOND`, a failed factorisation or a zero column): then fit by
    :func:`ldp.regression.least_squares`. ``variance``: ``"known"`` (scale 1) or ``"conservative"``
    (``max(1, RSS_w/df)``, needs ``rows > p``)."""
    import scipy.linalg.lapack as lapack
    import scipy.sparse as sp

    n, p = x.shape
    if variance not in ("known", "conservative") or p == 0 or (variance == "conservative" and n <= p):
        return None
    sw = np.sqrt(w)
    xw = sp.csc_matrix(x, dtype=np.float64, copy=True)
    xw.sum_duplicates()
    xw.data *= sw[xw.indices]
    col = np.repeat(np.arange(p), np.diff(xw.indptr))
    norms = np.sqrt(np.bincount(col, weights=xw.data ** 2, minlength=p))  # ‖√W x_j‖: √diag(XᵀWX)
    if not np.all(norms > 0.0):
        return None
    d = 1.0 / norms
    xw.data *= d[col]  # unit columns: their Gram matrix is XᵀWX equilibrated to a unit diagonal
    g = gram(xw)
    if xw.data.min() >= 0.0:  # a non-negative matrix: its 1-norm is the largest column sum, Gᵀ1 = xwᵀ(xw·1)
        anorm = float(np.max(xw.T @ (xw @ np.ones(p))))
    else:
        anorm = float(np.abs(g).sum(axis=0).max())
    chol, info = lapack.dpotrf(g, lower=0, clean=1, overwrite_a=1)
    if info != 0:
        return None
    rcond, info = lapack.dpocon(chol, anorm)
    if info != 0 or not rcond >= MIN_RCOND:
        return None
    rhs = np.asarray(xw.T @ (sw * y)).ravel()  # D·XᵀW y
    z, info = lapack.dpotrs(chol, rhs)
    if info != 0:
        return None
    rinv, info = lapack.dtrtri(chol, lower=0, overwrite_c=1)
    if info != 0:
        return None
    coef = d * z
    inv_diag = d * d * np.einsum("ij,ij->i", rinv, rinv)  # diag(G⁻¹) = D·diag(R⁻¹R⁻ᵀ)·D
    resid = y - np.asarray(x @ coef).ravel()
    rss = float(np.dot(w * resid, resid))
    df = n - p
    dispersion = rss / df if df > 0 else float("nan")
    scale = 1.0 if variance == "known" else max(1.0, dispersion)
    std_error = np.sqrt(scale * inv_diag)
    for arr in (coef, std_error):
        arr.setflags(write=False)
    return NormalFit(coef=coef, std_error=std_error, dispersion=float(dispersion), scale=float(scale), df=int(df),
                     rss=rss, variance=variance)
