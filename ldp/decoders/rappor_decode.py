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

Steps 1 and 2 are :mod:`ldp.decoders.rappor_fit`'s (:func:`~ldp.decoders.rappor_fit.fit_candidates`).

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
from ldp.decoders.rappor_fit import CandidateFit, bit_count_variance, fit_candidates
from ldp.decoders.rappor_map import CandidateMap, _name
from ldp.decoders.results import Estimates
from ldp.encoders.rappor import RapporParams

if TYPE_CHECKING:  # scipy and scikit-learn (via ldp.regression) load only when a map is built or a fit is made
    from ldp.decoders.rappor import RapporAggregate

__all__ = ["CandidateMap", "RapporEstimates", "decode", "exact_count_covariance", "synthetic_map",
           "synthetic_rappor_candidates", "bit_count_variance", "CORRECTIONS", "SELECTIONS"]

logger = logging.getLogger(__name__)

CORRECTIONS = ("bonferroni", "holm", "bh")
SELECTIONS = ("auto", "lasso", "none")


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
    _check_options(agg, alpha, correction, selection)
    from ldp.regression import benjamini_hochberg, bonferroni, holm  # scipy, scikit-learn

    pr = agg.params
    cmap = candidates if isinstance(candidates, CandidateMap) else CandidateMap.from_candidates(pr, candidates)
    if cmap.params.fingerprint != pr.fingerprint:
        raise ValueError("the candidate map was made for other RAPPOR parameters than the aggregate's")
    d = len(cmap.candidates)
    reps = np.flatnonzero(cmap.representative == np.arange(d))
    summary: dict[str, Any] = {"n": agg.n, "candidates": d, "distinct": len(reps), "alpha": alpha,
                               "correction": correction, "selected": 0, "detected": 0}
    if agg.n == 0 or d == 0:
        fit = CandidateFit(np.full(len(reps), np.nan), np.full(len(reps), np.nan), np.ones(len(reps)),
                           np.full(len(reps), np.nan), np.zeros(len(reps), dtype=bool),
                           {"min_detectable_fraction": float("nan")},
                           ["no reports: nothing can be estimated" if agg.n == 0 else "no candidates given"])
    else:
        fit = fit_candidates(agg, cmap, reps, alpha=alpha, correction=correction, selection=selection,
                             select_level=select_level, background=background)
    summary.update(fit.summary)
    summary["selected"] = int(fit.selected.sum())
    rule = {"bonferroni": bonferroni, "holm": holm, "bh": benjamini_hochberg}[correction]
    detected, adjusted = _detect(fit, rule, summary, correction, confidence, adjusted_intervals)
    summary["allocated_fraction"] = float(np.nansum(np.where(detected, fit.count, 0.0)) / agg.n) if agg.n else 0.0
    return _estimates(agg, cmap, reps, fit, detected, adjusted, summary, confidence)


def _check_options(agg: RapporAggregate, alpha: float, correction: str, selection: str) -> None:
    """``TypeError`` unless ``agg`` is a RAPPOR aggregate; ``ValueError`` for an option out of its range."""
    if not (isinstance(agg, Aggregate) and isinstance(agg.params, RapporParams)):  # a RapporAggregate
        raise TypeError(f"decode needs a RapporAggregate, got {type(agg).__name__}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")


def _detect(fit: CandidateFit, rule: Any, summary: dict[str, Any], correction: str, confidence: float,
            adjusted_intervals: bool) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Steps 3 and 4: which fitted candidates the correction's ``rule`` detects, its final cutoff, and their
    selection-adjusted intervals (NaN elsewhere, or everywhere when not ``adjusted_intervals``)."""
    alpha, big_m = summary["alpha"], max(summary["distinct"], 1)
    detected = rule(fit.pval, alpha)
    detected &= fit.selected  # a count of 0 is never a detection
    summary["detection_cutoff_z"] = cutoff = _cutoff(correction, alpha, big_m, int(detected.sum()))
    adj_low, adj_high = np.full(fit.count.size, np.nan), np.full(fit.count.size, np.nan)
    if not adjusted_intervals:
        summary["adjusted_intervals"] = False
    elif detected.any():
        from ldp.regression.selective import selection_adjusted_interval

        se = fit.se[detected]
        lo, hi = selection_adjusted_interval(fit.stat[detected] * se, se, cutoff, confidence)
        adj_low[detected], adj_high[detected] = np.maximum(lo, 0.0), np.maximum(hi, 0.0)  # counts are >= 0
    summary["detected"] = int(detected.sum())
    summary["expected_false_discoveries"] = alpha if correction != "bh" else alpha * int(detected.sum())
    return detected, (adj_low, adj_high)


def _estimates(agg: RapporAggregate, cmap: CandidateMap, reps: np.ndarray, fit: CandidateFit, detected: np.ndarray,
               adjusted: tuple[np.ndarray, np.ndarray], summary: dict[str, Any],
               confidence: float) -> RapporEstimates:
    """The result for every candidate: a group of indistinguishable ones has its count on its first member (the
    others name it in ``duplicate_of``); the notes, logged."""
    d = len(cmap.candidates)
    pos = np.searchsorted(reps, cmap.representative)
    own = cmap.representative == np.arange(d)
    names = [_name(c) for c in cmap.candidates]
    extra = {
        "z": fit.stat[pos], "p_value": fit.pval[pos], "detected": detected[pos], "selected": fit.selected[pos] & own,
        "adjusted_ci_low": adjusted[0][pos], "adjusted_ci_high": adjusted[1][pos],
        "duplicate_of": np.array([None if o else names[r] for o, r in zip(own, cmap.representative, strict=True)],
                                 dtype=object),
    }
    cnt, err = np.where(own, fit.count[pos], np.nan), np.where(own, fit.se[pos], np.nan)
    notes = list(fit.notes)
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
    return RapporEstimates("rappor", names, agg.n, cnt, err, confidence, _privacy(agg.params), extra, tuple(notes),
                           summary)


def _cutoff(correction: str, alpha: float, big_m: int, rejected: int) -> float:
    """The z a detected candidate had to exceed: the rule's final p-value threshold on the normal scale
    (Bonferroni ``α/M``; Holm ``α/(M − R + 1)`` at its last rejection; BH ``α·R/M``; ``R`` rejections)."""
    r = max(rejected, 1)
    level = {"bonferroni": alpha / big_m, "holm": alpha / (big_m - r + 1), "bh": alpha * r / big_m}[correction]
    return NormalDist().inv_cdf(1.0 - min(level, 0.5))


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
