"""RAPPOR count recovery: least squares on the candidates (after a lasso when they are many), tests, intervals.

Model. Row ``(c, i)`` (cohort-major, bit-minor) holds ``y_ci = t_ci``, the unbiased estimate of
how many clients of cohort ``c`` have Bloom bit ``i`` set (:class:`~ldp.decoders.rappor.BitEstimates`).
With ``n_v`` clients holding candidate ``v`` spread over cohorts in proportion to their sizes,
``E[y_ci] = Σ_v X_(ci),v · n_v`` where ``X_(ci),v = B_v,c,i · N_c/N`` (``B`` = the candidate's
Bloom bits in cohort ``c``: its :class:`~ldp.decoders.rappor_map.CandidateMap`, re-exported here), so the
coefficients are counts of clients.

1. **Selection** (``selection="auto"``): every one of the ``M`` distinguishable candidates is fitted
   when ``M`` is at most half the rows (``m·k`` over non-empty cohorts), so absent candidates cannot
   take counts from true ones; otherwise a non-negative lasso on the whitened design selects first,
   its penalty set so a null candidate enters with probability ``level`` (``1/M``, or ``max(1/M, α)``
   for BH; :func:`ldp.regression.nonnegative_lasso`). ``"none"`` / ``"lasso"`` force either.
2. **Least squares** on the fitted candidates, weighted by ``1/Var̂[t_ci]``, with covariance
   ``max(1, φ̂)·(XᵀWX)⁻¹``: ``φ̂`` (weighted RSS / df) above 1 means variation the model does not
   explain (strings missing from the candidates, cohort sampling), and inflates the errors. Candidates
   the lasso left out get a score test on the residuals; any significant at ``α/M`` joins the fit.
   Solved through the Cholesky factor of ``XᵀWX`` when it is well conditioned, else by the pivoted QR of
   :func:`ldp.regression.least_squares` (:mod:`ldp.decoders.rappor_normal`: the same fit up to rounding, a tenth
   of the work: 1,024 candidates over 16 cohorts of 128 bits in 0.03–0.06 s instead of 0.3–0.6 s).
3. **Tests**: one-sided ``H0: n_v = 0`` by the t statistic over the ``M`` candidates:
   Benjamini–Hochberg FDR at ``α`` (default), Bonferroni at ``α/M`` or Holm's step-down (family-wise
   rate ``α``); only fitted candidates can be detected.
4. **Intervals**: ``count ± z·SE`` for a string named in advance; for detected strings also the
   selection-adjusted interval given ``z`` above the correction's final cutoff
   (:func:`ldp.regression.selective.selection_adjusted_interval`, clipped at 0), which corrects the
   winner's curse. The count stays the unconditional least-squares estimate.

Candidates whose Bloom bits coincide in every cohort cannot be told apart: they are one
hypothesis; the count goes to the first of the group, the others name it in ``duplicate_of``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch.threads import threads_for as _threads_for
from ldp.decoders.base import Aggregate
from ldp.decoders.candidates import synthetic_candidates
from ldp.decoders.rappor_map import CandidateMap, _name
from ldp.decoders.results import Estimates
from ldp.encoders.rappor import RapporParams

if TYPE_CHECKING:  # scipy and scikit-learn (via ldp.regression) load only when a map is built or a fit is made
    import scipy.sparse as sp

    from ldp.decoders.rappor import RapporAggregate

__all__ = ["CandidateMap", "RapporEstimates", "decode", "exact_count_covariance", "synthetic_map",
           "synthetic_rappor_candidates", "bit_count_variance", "CORRECTIONS", "SELECTIONS"]

logger = logging.getLogger(__name__)

CORRECTIONS = ("bonferroni", "holm", "bh")
SELECTIONS = ("auto", "lasso", "none")


def bit_count_variance(params: RapporParams, cohort_n: npt.ArrayLike,
                       true_bits: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[t_ci]`` given ``N_c`` (shape (m,) or broadcastable) and true bit counts ``T_ci``."""
    ps, qs = params.p_star, params.q_star
    n = np.asarray(cohort_n, dtype=np.float64)
    t = np.asarray(true_bits, dtype=np.float64)
    if n.ndim == 1 and t.ndim == 2:
        n = n[:, None]
    return (t * qs * (1 - qs) + (n - t) * ps * (1 - ps)) / (qs - ps) ** 2


_MAX_LEVEL = 0.2  # z = 0.84: fewer candidates would make the lasso penalty vanish
_MISFIT = 2.0  # dispersion above which the result warns about unexplained mass
_MAX_ROUNDS = 5  # least-squares refits that add candidates significant by their score test
_FULL_FIT_WORK = 4e9  # rows·d² of the dense QR "auto" accepts for fitting every candidate (about 1 s)


@dataclass(frozen=True, repr=False)
class RapporEstimates(Estimates):
    """Per-candidate counts with standard errors, CIs, p-values and detection, plus a summary."""

    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def detected(self) -> np.ndarray:
        return self.extra["detected"]

    def detected_items(self) -> list[str]:
        return [it for it, d in zip(self.items, self.detected, strict=True) if d]

    def sorted(self) -> RapporEstimates:
        """Rows by decreasing estimated count (candidates without an estimate last)."""
        order = np.argsort(-np.nan_to_num(self.count, nan=-np.inf), kind="stable")
        return replace(self, items=[self.items[i] for i in order], count=self.count[order],
                       std_error=self.std_error[order], extra={k: np.asarray(v)[order] for k, v in self.extra.items()})

    def table(self, max_rows: int | None = 40) -> str:
        s = self.summary
        head = (f"candidates={s.get('candidates')} distinct={s.get('distinct')} selected={s.get('selected')} "
                f"detected={s.get('detected')} ({s.get('correction')}, alpha={s.get('alpha')}); "
                f"min detectable fraction={s.get('min_detectable_fraction', float('nan')):.4g}")
        return head + "\n" + super().table(max_rows)

    def metadata(self) -> dict[str, Any]:
        """:meth:`Estimates.metadata` and the decode's ``summary`` (in :meth:`to_json` and ``to_pandas().attrs``)."""
        summary = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in self.summary.items()}
        return {**super().metadata(), "summary": summary}


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


def decode(agg: RapporAggregate, candidates: CandidateMap | Sequence[str | bytes], *, alpha: float = 0.05,
           correction: str = "bh", confidence: float = 0.95, selection: str = "auto",
           select_level: float | None = None, background: bool = False,
           adjusted_intervals: bool = True) -> RapporEstimates:
    """Estimate how many clients hold each candidate, test which are present (module docstring).

    ``selection``: ``"auto"`` (default) fits every distinguishable candidate when there are at most
    half as many as rows (``m·k`` over non-empty cohorts) and the fit stays near a second
    (``rows·d² ≤ 4·10⁹``), else selects by the lasso first;
    ``"none"`` always fits every candidate, ``"lasso"`` always selects.

    ``background``: also fit the clients whose strings are not among the candidates, as one column whose
    Bloom bits are those of a random string, ``E[y_ci] ∋ (N_c/N)·β·n_other`` with ``β = 1 − (1 − 1/k)^h`` the
    chance a given bit is one of a string's ``h`` hashed bits: without it their bits are explained by the
    candidates sharing them, whose counts then sit above the truth. ``summary["unexplained"]`` (with
    ``unexplained_se``) is the estimate of ``n_other``.

    ``adjusted_intervals``: whether to compute the detected candidates' selection-adjusted intervals
    (``extra["adjusted_ci_low"]``, ``extra["adjusted_ci_high"]``; module docstring, step 4). ``False`` skips them,
    for a caller that never reads them (a simulation of the counts): both columns are then NaN for every candidate,
    as they are for an undetected one, and ``summary["adjusted_intervals"]`` is ``False`` (absent by default); the
    counts, standard errors, tests and detections are the same."""
    if not (isinstance(agg, Aggregate) and isinstance(agg.params, RapporParams)):  # a RapporAggregate
        raise TypeError(f"decode needs a RapporAggregate, got {type(agg).__name__}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    from ldp.regression import benjamini_hochberg, bonferroni, holm, nonnegative_lasso  # scipy, scikit-learn

    pr = agg.params
    cmap = candidates if isinstance(candidates, CandidateMap) else CandidateMap.from_candidates(pr, candidates)
    if cmap.params.fingerprint != pr.fingerprint:
        raise ValueError("the candidate map was made for other RAPPOR parameters than the aggregate's")
    d = len(cmap.candidates)
    reps = np.flatnonzero(cmap.representative == np.arange(d))
    big_m = max(len(reps), 1)
    z_test = NormalDist().inv_cdf(1.0 - alpha / big_m)
    summary: dict[str, Any] = {"n": agg.n, "candidates": d, "distinct": len(reps), "alpha": alpha,
                               "correction": correction, "selected": 0, "detected": 0}
    notes: list[str] = []
    count, se = np.full(len(reps), np.nan), np.full(len(reps), np.nan)
    pval, stat = np.ones(len(reps)), np.full(len(reps), np.nan)
    selected = np.zeros(len(reps), dtype=bool)
    if agg.n == 0 or d == 0:
        notes.append("no reports: nothing can be estimated" if agg.n == 0 else "no candidates given")
        summary["min_detectable_fraction"] = float("nan")
    else:
        x, y, w, null_var = _design(agg, cmap)
        xr = x if reps.size == x.shape[1] else x[:, reps]  # every candidate its own representative: x itself
        design, other = (_with_background(agg, xr), len(reps)) if background else (xr, -1)
        info = np.asarray(xr.multiply(xr).T @ (1.0 / null_var)).ravel()
        mdf = z_test / np.sqrt(info) / agg.n
        summary["min_detectable_fraction"] = float(np.median(mdf))
        if mdf.min() > 1.0:
            notes.append(f"too few reports to detect anything: with n={agg.n} a candidate would need a fraction "
                         f"of at least {mdf.min():.3g} (> 1) of the clients to be detected")
        if selection == "auto":
            small = 2 * len(reps) <= x.shape[0] and float(x.shape[0]) * len(reps) ** 2 <= _FULL_FIT_WORK
            selection = "none" if small else "lasso"
        summary["selection"] = selection
        if selection == "lasso":
            notes.append("the lasso chose which candidates to fit: absent candidates it lets in take counts from the "
                         "true strings sharing their Bloom bits, so counts and intervals can be biased (fewer "
                         "candidates, or more cohorts or bits, allow fitting every one; see the RAPPOR docs)")
            level = select_level or min(_MAX_LEVEL, max(1.0 / big_m, alpha if correction == "bh" else 0.0))
            with _threads_for(float(xr.shape[0]) * xr.shape[1]):  # one coordinate-descent pass, densely counted
                lasso = nonnegative_lasso(design, y, weights=w, level=level)
            support = lasso.support
            summary["lasso_alpha"], summary["select_level"] = lasso.alpha, level
            logger.debug("rappor decode: lasso at level %.3g selected %d of %d candidates (penalty %.4g, "
                         "converged: %s)", level, lasso.support.size, len(reps), lasso.alpha, lasso.converged)
            if not lasso.converged:
                logger.warning("rappor decode: the lasso did not converge; selection may be incomplete")
                notes.append("the lasso did not converge; selection may be incomplete")
        else:
            support = np.arange(design.shape[1])
        if background:
            support = np.union1d(support, [other])
        count[:] = 0.0
        if support.size > x.shape[0]:
            support = support[np.argsort(-info[support])][: x.shape[0]]
            notes.append("more candidates selected than rows; kept the most informative")
        added = 0
        for _ in range(_MAX_ROUNDS):  # refit while a left-out candidate is significant by its score test
            fit, resid, scale = _fit(design, y, w, support)
            rest = np.setdiff1d(np.arange(len(reps)), support)
            if rest.size:  # else every candidate is fitted: nothing to score
                stat[rest], se[rest] = _score(design[:, rest], resid, w, scale)
                pval[rest] = _upper_tail(stat[rest])
            missed = rest[pval[rest] < alpha / big_m]
            if not missed.size or support.size + missed.size >= x.shape[0]:
                break
            support, added = np.union1d(support, missed), added + missed.size
        if added:
            notes.append(f"{added} candidates left out by the lasso were significant by their score test and were "
                         "added to the least-squares fit")
        if fit is not None:
            cand = support != other
            if background:
                unexplained, unexplained_se = float(fit.coef[~cand][0]), float(fit.std_error[~cand][0])
                summary["unexplained"], summary["unexplained_se"] = unexplained, unexplained_se
                notes.append(f"an estimated {unexplained:.0f} ± {unexplained_se:.0f} clients "
                             f"({unexplained / agg.n:.1%}) hold strings outside the candidates (fitted as a "
                             "background of random Bloom bits)")
            on = support[cand]
            count[on], se[on] = fit.coef[cand], fit.std_error[cand]
            pval[on], stat[on] = fit.p_values("greater")[cand], fit.statistic()[cand]
            selected[on] = True
            summary["dispersion"], summary["scale"] = fit.dispersion, fit.scale
            if fit.dispersion > _MISFIT:
                notes.append(f"the bits vary {fit.dispersion:.3g} times more than privacy noise explains: strings "
                             "missing from the candidates probably hold mass, and candidates sharing Bloom bits "
                             "with them may be detected falsely (errors are inflated by this factor's root)")
        summary["selected"] = int(selected.sum())
    detected = {"bonferroni": bonferroni, "holm": holm, "bh": benjamini_hochberg}[correction](pval, alpha)
    detected &= selected  # a count of 0 is never a detection
    summary["detection_cutoff_z"] = cutoff = _cutoff(correction, alpha, big_m, int(detected.sum()))
    adj_low, adj_high = np.full(len(reps), np.nan), np.full(len(reps), np.nan)
    if not adjusted_intervals:
        summary["adjusted_intervals"] = False
    elif detected.any():
        from ldp.regression.selective import selection_adjusted_interval

        lo, hi = selection_adjusted_interval(stat[detected] * se[detected], se[detected], cutoff, confidence)
        adj_low[detected], adj_high[detected] = np.maximum(lo, 0.0), np.maximum(hi, 0.0)  # counts are >= 0
    summary["detected"] = int(detected.sum())
    summary["expected_false_discoveries"] = alpha if correction != "bh" else alpha * int(detected.sum())
    summary["allocated_fraction"] = float(np.nansum(np.where(detected, count, 0.0)) / agg.n) if agg.n else 0.0
    # back to every candidate
    pos = np.searchsorted(reps, cmap.representative)
    own = cmap.representative == np.arange(d)
    names = [_name(c) for c in cmap.candidates]
    extra = {
        "z": stat[pos], "p_value": pval[pos], "detected": detected[pos], "selected": selected[pos] & own,
        "adjusted_ci_low": adj_low[pos], "adjusted_ci_high": adj_high[pos],
        "duplicate_of": np.array([None if o else names[r] for o, r in zip(own, cmap.representative, strict=True)],
                                 dtype=object),
    }
    cnt, err = np.where(own, count[pos], np.nan), np.where(own, se[pos], np.nan)
    dups = cmap.duplicates
    if dups:
        groups = "; ".join(" = ".join(g[:4]) + (" ..." if len(g) > 4 else "") for g in dups[:5])
        notes.append(f"{sum(len(g) - 1 for g in dups)} candidates are indistinguishable from another "
                     f"(same Bloom bits in every cohort); each group's count is on its first member: {groups}")
    if summary["selected"] < d:
        notes.append("candidates not selected by the lasso have count 0; their standard error and z are those of "
                     "adding each one alone to the fitted model (a score test)")
    logger.info("rappor decode: n=%d, %d candidate(s), %d selected, %d detected", agg.n, d, summary["selected"],
                summary["detected"])
    for note in notes:
        logger.info("rappor decode: note: %s", note)
    return RapporEstimates("rappor", names, agg.n, cnt, err, confidence, _privacy(pr), extra, tuple(notes), summary)


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


def _cutoff(correction: str, alpha: float, big_m: int, rejected: int) -> float:
    """The z a detected candidate had to exceed: the rule's final p-value threshold on the normal scale
    (Bonferroni ``α/M``; Holm ``α/(M − R + 1)`` at its last rejection; BH ``α·R/M``; ``R`` rejections)."""
    r = max(rejected, 1)
    level = {"bonferroni": alpha / big_m, "holm": alpha / (big_m - r + 1), "bh": alpha * r / big_m}[correction]
    return NormalDist().inv_cdf(1.0 - min(level, 0.5))


def _upper_tail(z: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    return ndtr(-z)


def _privacy(pr: RapporParams) -> Any:
    try:
        return pr.privacy_cost
    except ValueError:
        return None


def exact_count_covariance(params: RapporParams, cmap: CandidateMap,
                           true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact covariance of the least-squares counts when the fit holds exactly the true candidates,
    with ``N = Σ n_v`` clients split evenly over the cohorts (no cohort-sampling noise):
    ``(XᵀΣ⁻¹X)⁻¹`` with ``X = pattern/m`` and ``Σ = diag(Var[t_ci])`` (:func:`bit_count_variance`)."""
    info = _exact_information(params, cmap, true_counts)
    with _threads_for(float(info.shape[0]) ** 3):
        return np.linalg.inv(info)


def _exact_information(params: RapporParams, cmap: CandidateMap, true_counts: npt.ArrayLike) -> np.ndarray:
    """``XᵀΣ⁻¹X`` of :func:`exact_count_covariance` (dense, ``d × d``)."""
    t = np.asarray(true_counts, dtype=np.float64)
    if t.shape != (len(cmap.candidates),):
        raise ValueError(f"need one true count per candidate ({len(cmap.candidates)}), got shape {t.shape}")
    import scipy.sparse as sp

    m = params.num_cohorts
    x = cmap.pattern / m
    true_bits = x @ t
    var = bit_count_variance(params, t.sum() / m, true_bits)
    out: np.ndarray = (x.T @ sp.diags(1.0 / var) @ x).toarray()
    return out


@lru_cache(maxsize=8)
def synthetic_rappor_candidates(params: RapporParams, d: int) -> list[str]:
    """The ``d`` synthetic candidates RAPPOR is planned and simulated on: the first of
    :func:`~ldp.decoders.candidates.synthetic_candidates` (``item0, item1, …``) whose Bloom rows, over every cohort,
    differ from every earlier one's (a decoder cannot tell two with the same rows apart); ``ValueError`` when there
    are more candidates than Bloom rows ``k·m`` or the first ``64·d`` names do not give ``d`` such rows."""
    pool = d
    while d <= params.num_cohorts * params.num_bloombits:  # more candidates than rows: never apart
        names = synthetic_candidates(pool)
        rep = CandidateMap.from_candidates(params, names).representative
        kept = [name for i, name in enumerate(names) if rep[i] == i]
        if len(kept) >= d:
            return kept[:d]
        if pool >= 64 * d:
            break
        pool = min(2 * pool, 64 * d)
    raise ValueError(f"RAPPOR with k·m = {params.num_bloombits}·{params.num_cohorts} Bloom rows cannot tell "
                     f"{d} candidates apart; raise num_bloombits or num_cohorts")


def synthetic_map(params: RapporParams, d: int) -> CandidateMap:
    """The map of the ``d`` synthetic candidates (:func:`synthetic_rappor_candidates`: the ones a simulation uses by
    default) the planner's variance is computed on."""
    return CandidateMap.from_candidates(params, synthetic_rappor_candidates(params, d))
