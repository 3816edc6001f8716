"""Weighted least squares with rank detection and exact small-sample inference.

Model: ``y_i = x_i'β + e_i`` with independent errors, ``Var(e_i) = φ / w_i``. The estimator minimises
``Σ_i w_i (y_i − x_i'b)²``, i.e. ordinary least squares on the whitened problem
``(√w_i·x_i, √w_i·y_i)`` (Aitken 1935; Seber & Lee, *Linear Regression Analysis*, 2nd ed. 2003,
ch. 3, generalized least squares). With ``r`` the rank of the design and ``df = n − r``:

* ``Cov(b) = φ (X'WX)⁻¹`` and ``φ̂ = RSS_w / df`` is unbiased for φ (Seber & Lee ch. 3);
* under normal errors ``df·φ̂/φ ~ χ²_df`` independently of b, so ``(b_j − β_j)/se_j ~ t_df``
  (Seber & Lee ch. 3 and §5.1);
* when φ = 1 is known, ``(b_j − β_j)/se_j ~ N(0, 1)``.

``variance`` chooses the scale used for inference: ``"known"`` (φ = 1, z-tests), ``"estimated"``
(φ̂, t-tests) or ``"conservative"`` (``max(1, φ̂)``, t-tests: the variances ``1/w_i`` are a floor, the
noise being at least the known part).

Numerics: the whitened design is densified (it is (n, p) with p at most a few thousand for the
uses in this package: a decoder's selected support, a regression's covariates) and factorised by
Householder QR with column pivoting (Golub & Van Loan, *Matrix Computations*, 4th ed., §5.4).
The numerical rank is the number of pivots with ``|R_kk| > max(n, p)·eps·|R_00|``. When the design
is rank-deficient, the kept columns are chosen in column order, as R's ``lm`` does: a column is
*aliased* when its residual after projection on the earlier kept columns is below that same
tolerance; aliased columns get coefficient 0, infinite standard error and p-value 1, and the other
columns are fitted exactly as if the aliased ones were absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# scipy is imported inside the functions that use it: ``import ldp.regression`` (which exposes
# :func:`least_squares`) must not load scipy before a fit

__all__ = ["LeastSquaresFit", "least_squares", "VARIANCE_MODES", "ALTERNATIVES"]

VARIANCE_MODES = ("known", "estimated", "conservative")
ALTERNATIVES = ("greater", "less", "two-sided")


# ----------------------------------------------------------------------------------- validation

def _as_float(value: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None


def _check_design(X: Any) -> tuple[Any, int, int]:
    """A float64 (n, p) design, dense ndarray or scipy.sparse, with n, p >= 1 and finite entries."""
    import scipy.sparse as sp

    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D (n, p) matrix, got a {X.ndim}-D sparse array")
        X = X.tocsc().astype(np.float64)
        values = X.data
    else:
        X = _as_float(X, "X")
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D (n, p) matrix, got shape {X.shape}")
        values = X
    n, p = X.shape
    if n < 1 or p < 1:
        raise ValueError(f"X must have at least one row and one column, got shape {X.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("X must contain only finite values (found nan or inf)")
    return X, n, p


def _check_response(y: Any, n: int) -> np.ndarray:
    """A finite float64 vector of length n."""
    y = _as_float(y, "y")
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},) to match the {n} rows of X, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y must contain only finite values (found nan or inf)")
    return y


def _check_weights(weights: Any, n: int) -> np.ndarray:
    """Positive finite float64 weights of length n (all ones when None)."""
    if weights is None:
        return np.ones(n)
    w = _as_float(weights, "weights")
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},) to match the {n} rows of X, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite (found nan or inf)")
    if np.any(w <= 0):
        raise ValueError("weights must be strictly positive inverse variances (found a zero or negative weight)")
    return w


def _check_probability(value: Any, name: str) -> float:
    """A float strictly inside (0, 1)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return v


# ----------------------------------------------------------------------------------- result

@dataclass(frozen=True)
class LeastSquaresFit:
    """A weighted least-squares fit and what inference needs.

    ``cov = scale·(X'WX)⁻¹`` restricted to the non-aliased columns (the inverse exists there);
    rows and columns of aliased columns are 0 off the diagonal and ``inf`` on it, so that
    ``std_error = sqrt(diag(cov))`` is infinite for them. ``statistic`` is a z statistic when
    ``variance == "known"`` and a t statistic with ``df`` degrees of freedom otherwise.
    """

    coef: np.ndarray
    cov: np.ndarray
    std_error: np.ndarray
    dispersion: float
    scale: float
    df: int
    rank: int
    rss: float
    variance: str
    aliased: np.ndarray

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        """CDF of N(0, 1) when the variance is known, of t_df otherwise (scipy.special, vectorised)."""
        from scipy import special

        return special.ndtr(x) if self.variance == "known" else special.stdtr(self.df, x)

    def _quantile(self, q: float) -> float:
        from scipy import special

        return float(special.ndtri(q) if self.variance == "known" else special.stdtrit(self.df, q))

    def statistic(self) -> np.ndarray:
        """``coef / std_error`` (0 for aliased columns)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.coef / self.std_error

    def p_values(self, alternative: str = "greater") -> np.ndarray:
        """P-values of H0: β_j = 0 (β_j <= 0 for "greater", β_j >= 0 for "less").

        ``"greater"``: ``P(T >= t)``; ``"less"``: ``P(T <= t)``; ``"two-sided"``: ``P(|T| >= |t|)``,
        with T ~ N(0, 1) when ``variance == "known"`` and T ~ t_df otherwise. Aliased columns are not
        estimable and get p-value 1 (never significant).
        """
        if alternative not in ALTERNATIVES:
            raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
        t = self.statistic()
        if alternative == "greater":
            p = self._cdf(-t)  # P(T >= t) by symmetry
        elif alternative == "less":
            p = self._cdf(t)
        else:
            p = np.minimum(1.0, 2.0 * self._cdf(-np.abs(t)))
        p = np.asarray(p, dtype=np.float64)
        p[self.aliased] = 1.0
        return p

    def confidence_interval(self, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Two-sided ``coef ± q·std_error``, q the ``(1+confidence)/2`` quantile of N(0,1) or t_df.

        Aliased columns get ``(-inf, inf)``.
        """
        c = _check_probability(confidence, "confidence")
        q = self._quantile(0.5 + c / 2.0)
        half = q * self.std_error
        return self.coef - half, self.coef + half


# ----------------------------------------------------------------------------------- fitting

def _apply_qt(qr: np.ndarray, tau: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``Q'c`` for the Householder reflectors stored by LAPACK ``geqrf``/``geqp3`` (``dormqr``)."""
    import scipy.linalg.lapack

    k = tau.size
    if k == 0:
        return np.array(c, dtype=np.float64, order="F")
    lwork = max(1, c.shape[1]) * 64
    cq, _, info = scipy.linalg.lapack.dormqr("L", "T", qr[:, :k], tau, c, lwork)
    if info != 0:
        raise np.linalg.LinAlgError(f"applying Householder reflectors failed (LAPACK dormqr info={info})")
    return cq


def _sweep(M: np.ndarray, tol: float) -> np.ndarray:
    """Positions of the columns of M kept by a left-to-right Householder QR that skips a column when
    its part orthogonal to the kept ones has norm ``<= tol`` (LINPACK ``dqrdc2`` logic, R's ``lm``)."""
    M = np.array(M, dtype=np.float64, copy=True)
    kept: list[int] = []
    k = 0
    for j in range(M.shape[1]):
        v = M[k:, j]
        norm = float(np.linalg.norm(v))
        if norm <= tol:
            continue
        u = v.copy()
        u[0] += np.copysign(norm, v[0])  # H = I − 2uu'/u'u maps v to −sign(v_0)·‖v‖·e_1
        tail = M[k:, j + 1:]
        tail -= np.outer((2.0 / float(u @ u)) * u, u @ tail)
        kept.append(j)
        k += 1
    return np.asarray(kept, dtype=np.intp)


def _ordered_basis(C: np.ndarray, cy: np.ndarray, tol: float,
                   block: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Kept columns of ``C`` (rank × p, full row rank) chosen in column order, their R and ``Q'cy``.

    Blocked: within a block of columns :func:`_sweep` decides which are kept; the block's kept
    columns are then factorised by LAPACK and their reflectors applied to the later columns (and to
    ``cy``) at once, which leaves the later columns' residuals in orthonormal coordinates. Returns
    None when fewer than ``rank`` columns pass the tolerance (a borderline near-deficiency that
    the pivoted QR judged otherwise).
    """
    import scipy.linalg

    rank, p = C.shape
    work = np.asfortranarray(np.column_stack([C, cy]))  # residual coordinates; last column carries y
    remaining = np.arange(p)
    R_full = np.zeros((rank, p))
    qty = np.zeros(rank)
    kept: list[np.ndarray] = []
    k = 0
    while remaining.size and k < rank:
        nb = min(block, remaining.size)
        local = _sweep(work[:, :nb], tol)[: rank - k]
        rest = work[:, nb:]
        if local.size:
            kb = local.size
            (qr, tau), r_blk = scipy.linalg.qr(work[:, local], mode="raw", check_finite=False)
            rest = _apply_qt(qr, tau, rest)
            R_full[k:k + kb, remaining[local]] = np.triu(r_blk[:kb, :kb])
            R_full[k:k + kb, remaining[nb:]] = rest[:kb, :-1]
            qty[k:k + kb] = rest[:kb, -1]
            kept.append(remaining[local])
            k += kb
            rest = np.asfortranarray(rest[kb:, :])
        work, remaining = rest, remaining[nb:]
    if k < rank:
        return None
    cols = np.concatenate(kept)
    return cols, R_full[:, cols], qty


def least_squares(X: Any, y: Any, *, weights: Any = None, variance: str = "estimated") -> LeastSquaresFit:
    """Weighted least squares ``argmin_b Σ_i w_i (y_i − x_i'b)²`` with standard errors.

    ``X``: (n, p) dense array or any scipy.sparse matrix (densified after whitening); ``y``: (n,);
    ``weights``: (n,) positive inverse variances up to the scale φ (None: all ones); ``variance``:
    ``"known"`` (φ = 1), ``"estimated"`` (φ̂ = RSS_w/df) or ``"conservative"`` (max(1, φ̂)).
    See the module docstring for the formulas and the treatment of rank deficiency.
    """
    import scipy.linalg
    import scipy.sparse as sp

    if variance not in VARIANCE_MODES:
        raise ValueError(f"variance must be one of {VARIANCE_MODES}, got {variance!r}")
    X, n, p = _check_design(X)
    y = _check_response(y, n)
    w = _check_weights(weights, n)

    sw = np.sqrt(w)
    # one memory layout for dense and sparse input, so that both give bit-identical results
    A = X.toarray(order="F") if sp.issparse(X) else np.array(X, dtype=np.float64, order="F", copy=True)
    A *= sw[:, None]
    yw = sw * y

    rank, cols, R_K, qty = _kept_columns(A, yw, n, p)
    coef = np.zeros(p)
    if rank > 0:
        coef[cols] = scipy.linalg.solve_triangular(R_K, qty[:rank], check_finite=False)
    aliased = np.ones(p, dtype=bool)
    aliased[cols] = False

    resid = yw - A @ coef
    rss = float(resid @ resid)
    df = n - rank
    dispersion, scale = _dispersion(rss, n, rank, variance)
    cov = _covariance(R_K, cols, aliased, scale, rank)
    std_error = np.sqrt(np.diag(cov))

    for arr in (coef, cov, std_error, aliased):
        arr.setflags(write=False)
    return LeastSquaresFit(coef=coef, cov=cov, std_error=std_error, dispersion=float(dispersion),
                           scale=float(scale), df=int(df), rank=int(rank), rss=rss, variance=variance,
                           aliased=aliased)


def _kept_columns(A: np.ndarray, yw: np.ndarray, n: int, p: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The whitened design's pivoted QR (module docstring): ``(rank, kept columns, R_K, Q'·√W·y)``, the rank
    counting the ``|R_kk|`` above ``max(n, p)·ε·|R_11|``; when it is short of ``p``, the kept columns chosen in
    column order (:func:`_ordered_basis`, else the pivot's first)."""
    import scipy.linalg

    (qr, tau), R, piv = scipy.linalg.qr(A, mode="raw", pivoting=True, check_finite=False)
    qty_all = _apply_qt(qr, tau, yw[:, None])[:, 0]  # Q'·√W·y
    del qr
    d = np.abs(np.diag(R))
    tol = max(n, p) * np.finfo(np.float64).eps * float(d[0])
    above = d > tol
    rank = len(d) if above.all() else int(np.argmax(~above))

    if rank == p:  # full column rank: use the pivoted factorisation directly
        cols, R_K, qty = piv, R[:p, :p], qty_all[:p]
    elif rank > 0:  # choose the kept columns in column order
        C = np.empty((rank, p))
        C[:, piv] = R[:rank, :]  # coordinates of the columns in the rank-dimensional column space
        ordered = _ordered_basis(C, qty_all[:rank], tol)
        cols, R_K, qty = ordered if ordered is not None else (piv[:rank], R[:rank, :rank], qty_all[:rank])
    else:
        cols, R_K, qty = np.empty(0, dtype=np.intp), np.empty((0, 0)), np.empty(0)
    return rank, cols, R_K, qty


def _dispersion(rss: float, n: int, rank: int, variance: str) -> tuple[float, float]:
    """``(φ̂, scale)``: the dispersion ``RSS_w/df`` (NaN without residual degrees of freedom) and the scale of the
    errors the ``variance`` mode takes (``ValueError`` when it needs φ̂ and ``df = 0``)."""
    df = n - rank
    dispersion = rss / df if df > 0 else float("nan")
    if variance == "known":
        scale = 1.0
    elif df == 0:
        raise ValueError(
            f"the dispersion cannot be estimated: df = n - rank = {n} - {rank} = 0 leaves no residual "
            "degrees of freedom; use variance='known' if the weights are exact inverse variances")
    else:
        scale = dispersion if variance == "estimated" else max(1.0, dispersion)
    return dispersion, scale


def _covariance(R_K: np.ndarray, cols: np.ndarray, aliased: np.ndarray, scale: float, rank: int) -> np.ndarray:
    """``scale·(X_K'WX_K)⁻¹ = scale·(R_K'R_K)⁻¹`` on the kept columns, infinite variance on the aliased ones."""
    import scipy.linalg.lapack

    p = aliased.size
    cov = np.zeros((p, p))
    if rank > 0:
        R_inv, info = scipy.linalg.lapack.dtrtri(R_K, lower=0)  # kept columns have |R_kk| > tol > 0
        if info != 0:
            raise np.linalg.LinAlgError(f"triangular inverse failed (LAPACK dtrtri info={info})")
        cov[np.ix_(cols, cols)] = (R_inv @ R_inv.T) * scale  # (R'R)⁻¹ = (X_K'WX_K)⁻¹
    cov[aliased, aliased] = np.inf
    return cov
