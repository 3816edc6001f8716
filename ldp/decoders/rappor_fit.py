"""Steps 1 and 2 of RAPPOR's count recovery (:func:`ldp.decoders.rappor_decode.decode`, whose module docstring
states the model): the design of the non-empty cohorts' rows, the selection (every distinguishable candidate, or
the non-negative lasso's), the weighted least squares, refitted while a candidate left out is significant by its
score test, and the optional background column of strings outside the candidates (:func:`fit_candidates`).

Server side: scipy and scikit-learn (through :mod:`ldp.regression`), imported when a fit is made.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch.threads import threads_for as _threads_for
from ldp.decoders.rappor_map import CandidateMap
from ldp.encoders.rappor import RapporParams

if TYPE_CHECKING:  # scipy and scikit-learn (via ldp.regression) load only when a map is built or a fit is made
    import scipy.sparse as sp

    from ldp.decoders.rappor import RapporAggregate

__all__ = ["CandidateFit", "bit_count_variance", "fit_candidates"]

logger = logging.getLogger("ldp.decoders.rappor_decode")
"""The decoder's logger: what a fit logs is the decode's."""

_MAX_LEVEL = 0.2  # z = 0.84: fewer candidates would make the lasso penalty vanish
_MISFIT = 2.0  # dispersion above which the result warns about unexplained mass
_MAX_ROUNDS = 5  # least-squares refits that add candidates significant by their score test
_FULL_FIT_WORK = 4e9  # rows·d² of the dense QR "auto" accepts for fitting every candidate (about 1 s)


def bit_count_variance(params: RapporParams, cohort_n: npt.ArrayLike,
                       true_bits: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[t_ci]`` given ``N_c`` (shape (m,) or broadcastable) and true bit counts ``T_ci``."""
    ps, qs = params.p_star, params.q_star
    n = np.asarray(cohort_n, dtype=np.float64)
    t = np.asarray(true_bits, dtype=np.float64)
    if n.ndim == 1 and t.ndim == 2:
        n = n[:, None]
    return (t * qs * (1 - qs) + (n - t) * ps * (1 - ps)) / (qs - ps) ** 2


@dataclass
class CandidateFit:
    """What steps 1 and 2 give for each distinct candidate (the representatives ``reps`` of
    :func:`fit_candidates`): its ``count`` (0 when not fitted), standard error ``se``, one-sided p-value ``pval`` and
    z ``stat`` (a candidate left out: those of its score test) and whether it was fitted (``selected``); the
    entries they add to the decode's summary, and its notes."""

    count: np.ndarray
    se: np.ndarray
    pval: np.ndarray
    stat: np.ndarray
    selected: np.ndarray
    summary: dict[str, Any]
    notes: list[str]


def fit_candidates(agg: RapporAggregate, cmap: CandidateMap, reps: np.ndarray, *, alpha: float, correction: str,
                   selection: str, select_level: float | None, background: bool) -> CandidateFit:
    """Steps 1 and 2 over the aggregate's non-empty cohorts (at least one report, at least one candidate): the
    smallest detectable fraction, the candidates fitted (:func:`_select`), the least squares refitted while one left
    out is significant at ``α/M`` (:func:`_refit`), and what the fit says (:func:`_take_fit`)."""
    big_m = max(len(reps), 1)
    out = CandidateFit(np.zeros(len(reps)), np.full(len(reps), np.nan), np.ones(len(reps)),
                       np.full(len(reps), np.nan), np.zeros(len(reps), dtype=bool), {}, [])
    x, y, w, null_var = _design(agg, cmap)
    xr = x if reps.size == x.shape[1] else x[:, reps]  # every candidate its own representative: x itself
    design, other = (_with_background(agg, xr), len(reps)) if background else (xr, -1)
    info = np.asarray(xr.multiply(xr).T @ (1.0 / null_var)).ravel()
    mdf = NormalDist().inv_cdf(1.0 - alpha / big_m) / np.sqrt(info) / agg.n
    out.summary["min_detectable_fraction"] = float(np.median(mdf))
    if mdf.min() > 1.0:
        out.notes.append(f"too few reports to detect anything: with n={agg.n} a candidate would need a fraction "
                         f"of at least {mdf.min():.3g} (> 1) of the clients to be detected")
    support = _select(out, design, y, w, x.shape[0], selection, select_level or min(
        _MAX_LEVEL, max(1.0 / big_m, alpha if correction == "bh" else 0.0)))
    if background:
        support = np.union1d(support, [other])
    if support.size > x.shape[0]:
        support = support[np.argsort(-info[support])][: x.shape[0]]
        out.notes.append("more candidates selected than rows; kept the most informative")
    fit, support = _refit(out, design, y, w, support, alpha / big_m, x.shape[0])
    if fit is not None:
        _take_fit(out, fit, support, other, agg.n)
    return out


def _select(out: CandidateFit, design: sp.csc_matrix, y: np.ndarray, w: np.ndarray, rows: int, selection: str,
            level: float) -> np.ndarray:
    """Step 1: the candidates fitted first. ``"auto"`` fits every one when they are at most half the ``rows`` and
    the fit stays near a second, else selects; ``"lasso"``: the non-negative lasso's support at ``level``."""
    candidates = out.count.size  # the distinct candidates (the background column is none)
    if selection == "auto":
        small = 2 * candidates <= rows and float(rows) * candidates ** 2 <= _FULL_FIT_WORK
        selection = "none" if small else "lasso"
    out.summary["selection"] = selection
    if selection != "lasso":
        return np.arange(design.shape[1])
    from ldp.regression import nonnegative_lasso  # scipy, scikit-learn

    out.notes.append("the lasso chose which candidates to fit: absent candidates it lets in take counts from the "
                     "true strings sharing their Bloom bits, so counts and intervals can be biased (fewer "
                     "candidates, or more cohorts or bits, allow fitting every one; see the RAPPOR docs)")
    with _threads_for(float(design.shape[0]) * candidates):  # one coordinate-descent pass, densely counted
        lasso = nonnegative_lasso(design, y, weights=w, level=level)
    out.summary["lasso_alpha"], out.summary["select_level"] = lasso.alpha, level
    logger.debug("rappor decode: lasso at level %.3g selected %d of %d candidates (penalty %.4g, "
                 "converged: %s)", level, lasso.support.size, candidates, lasso.alpha, lasso.converged)
    if not lasso.converged:
        logger.warning("rappor decode: the lasso did not converge; selection may be incomplete")
        out.notes.append("the lasso did not converge; selection may be incomplete")
    support: np.ndarray = lasso.support
    return support


def _refit(out: CandidateFit, design: sp.csc_matrix, y: np.ndarray, w: np.ndarray, support: np.ndarray,
           level: float, rows: int) -> tuple[Any, np.ndarray]:
    """Step 2: least squares on ``support``, refitted (at most ``_MAX_ROUNDS`` fits) while a candidate left out is
    significant at ``level`` by its score test, whose z, standard error and p-value it keeps; the last fit and the
    support."""
    added = 0
    for _ in range(_MAX_ROUNDS):  # refit while a left-out candidate is significant by its score test
        fit, resid, scale = _fit(design, y, w, support)
        rest = np.setdiff1d(np.arange(out.count.size), support)
        if rest.size:  # else every candidate is fitted: nothing to score
            out.stat[rest], out.se[rest] = _score(design[:, rest], resid, w, scale)
            out.pval[rest] = _upper_tail(out.stat[rest])
        missed = rest[out.pval[rest] < level]
        if not missed.size or support.size + missed.size >= rows:
            break
        support, added = np.union1d(support, missed), added + missed.size
    if added:
        out.notes.append(f"{added} candidates left out by the lasso were significant by their score test and were "
                         "added to the least-squares fit")
    return fit, support


def _take_fit(out: CandidateFit, fit: Any, support: np.ndarray, other: int, n: int) -> None:
    """The fitted candidates' counts, errors, p-values and z; the background's count (column ``other``, ``-1``:
    none) and the dispersion, each with its note."""
    cand = support != other
    if other >= 0:
        unexplained, unexplained_se = float(fit.coef[~cand][0]), float(fit.std_error[~cand][0])
        out.summary["unexplained"], out.summary["unexplained_se"] = unexplained, unexplained_se
        out.notes.append(f"an estimated {unexplained:.0f} ± {unexplained_se:.0f} clients "
                         f"({unexplained / n:.1%}) hold strings outside the candidates (fitted as a "
                         "background of random Bloom bits)")
    on = support[cand]
    out.count[on], out.se[on] = fit.coef[cand], fit.std_error[cand]
    out.pval[on], out.stat[on] = fit.p_values("greater")[cand], fit.statistic()[cand]
    out.selected[on] = True
    out.summary["dispersion"], out.summary["scale"] = fit.dispersion, fit.scale
    if fit.dispersion > _MISFIT:
        out.notes.append(f"the bits vary {fit.dispersion:.3g} times more than privacy noise explains: strings "
                         "missing from the candidates probably hold mass, and candidates sharing Bloom bits "
                         "with them may be detected falsely (errors are inflated by this factor's root)")


def _design(agg: RapporAggregate, cmap: CandidateMap) -> tuple[sp.csc_matrix, np.ndarray, np.ndarray, np.ndarray]:
    """Rows of non-empty cohorts: design X (rows × d) = diag(N_c/N)·pattern, y, weights, and null variances."""
    pr = agg.params
    k = pr.num_bloombits
    be = agg.bit_estimates()
    keep = np.repeat(agg.cohort_n > 0, k)
    n_row = np.repeat(agg.cohort_n, k)[keep].astype(np.float64)
    y = be.count.reshape(-1)[keep]
    var = np.maximum(be.variance.reshape(-1)[keep], 1e-12)
    null_var = np.maximum(bit_count_variance(pr, n_row, 0.0), 1e-12)
    x = cmap.pattern.copy() if keep.all() else cmap.pattern[np.flatnonzero(keep)].tocsc()
    x.data *= (n_row / agg.n)[x.indices]  # the pattern's values are 1: each becomes its row's N_c/N
    return x, y, 1.0 / var, null_var


def _with_background(agg: RapporAggregate, xr: sp.csc_matrix) -> sp.csc_matrix:
    """``xr`` with the background column: row ``(c, i)`` of a non-empty cohort holds ``(N_c/N)·β``,
    ``β = 1 − (1 − 1/k)^h`` (:func:`decode`)."""
    import scipy.sparse as sp

    pr = agg.params
    k, h = pr.num_bloombits, pr.num_hashes
    n_c = agg.cohort_n[agg.cohort_n > 0].astype(np.float64)
    beta = -np.expm1(h * np.log1p(-1.0 / k))
    col = np.repeat(n_c / agg.n * beta, k)[:, None]
    return sp.hstack([xr, sp.csc_matrix(col)], format="csc")


def _fit(xr: sp.csc_matrix, y: np.ndarray, w: np.ndarray, support: np.ndarray) -> tuple[Any, np.ndarray, float]:
    """Weighted least squares on ``support``: (fit or None, residuals, scale used for the errors); by the normal
    equations when they are well conditioned (:mod:`ldp.decoders.rappor_normal`), else by the pivoted QR."""
    from ldp.decoders.rappor_normal import normal_equations_fit
    from ldp.regression import least_squares

    if not support.size:
        return None, y, 1.0
    whole = support.size == xr.shape[1] and bool((support == np.arange(support.size)).all())
    xs = xr if whole else xr[:, support]  # every column, in order: xr itself
    variance = "conservative" if xr.shape[0] > support.size else "known"
    with _threads_for(float(support.size) ** 3):  # Cholesky and triangular inverse of XᵀWX
        fit: Any = normal_equations_fit(xs, y, w, variance)
    if fit is None:  # not clearly full rank: the pivoted QR, with its rank detection
        with _threads_for(float(xs.shape[0]) * xs.shape[1] ** 2):
            fit = least_squares(xs, y, weights=w, variance=variance)
    return fit, y - xs @ fit.coef, fit.scale


def _score(xo: sp.csc_matrix, resid: np.ndarray, w: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Score test of adding each column alone to the fitted model: ``z = x'W r / sqrt(scale·x'W x)``,
    and the standard error ``sqrt(scale / x'W x)`` of its count if it were added alone."""
    xwx = np.asarray(xo.multiply(xo).T @ w).ravel()
    return np.asarray(xo.T @ (w * resid)).ravel() / np.sqrt(scale * xwx), np.sqrt(scale / xwx)


def _upper_tail(z: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    return ndtr(-z)
