"""RAPPOR's test of the candidates' own pairs (:mod:`ldp.jobs.rappor_poisoning` states its null law): which cells
it reads (``pair_grid``, ``pair_bins`` or the fold's two halves), which statistic it takes on them (the common-share
likelihood ratio, over at most :data:`~ldp.batch.rappor_pair_bins.RATIO_COHORTS` honest mixtures; the cross-fitted
sum; the one-sided linear sum) and the Bonferroni p-value over the candidates. The laws and the fits are
:mod:`ldp.jobs.rappor_pair_law`'s and :mod:`ldp.jobs.rappor_shared_share`'s."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from ldp.batch.rappor_pair_bins import RATIO_COHORTS
from ldp.jobs.poisoning import LawCheck, _check_alpha, _verdict
from ldp.jobs.rappor_pair_law import (
    PAIR_MIN,
    RATIO_BINS,
    SCREEN,
    _screened,
    candidate_cells,
    candidate_laws,
    candidate_pairs,
    pair_types,
    reference_law,
)

__all__ = ["candidate_pair_check"]

_Found = tuple[int, float, float, str, str]
"""The most extreme candidate's row, its statistic, the Bonferroni p-value and the message's two parts."""


def _linear_z(params: Any, cells: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
              fake: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``(D,)``: the self-normalised sum of fixed one-sided weights over each candidate's binned cells (mean 0 for
    filters holding both bits or neither, ``<= 0`` for one alone, 1 for a fake report)."""
    from ldp.jobs.rappor_shared_share import linear_scores, one_sided_weights

    exact = [al == be for al, be, _ in pair_types(params)]
    return linear_scores(cells, one_sided_weights(laws, fake, reference_law(params) @ laws, exact))


def _binned_statistic(params: Any, cells: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
                      fake: npt.NDArray[np.float64], d: int, bins: int, shortlist: int) -> _Found:
    """:func:`candidate_pair_check` on binned cells: the most extreme candidate, its ``z``, the Bonferroni ``p``
    over ``d`` and the message's two parts (a self-normalised sum, ``N(0, 1)`` on honest data whatever the mix)."""
    z = _linear_z(params, cells, laws, fake)
    worst = int(np.argmax(z))
    total = float(z[worst])
    p = float(min(1.0, d * stats.norm.sf(total)))
    return worst, total, p, f"{bins} bins of the 1s", f"z {total:.2f} of a sum of mean <= 0 for every honest report"


def _grid_statistic(params: Any, cells: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
                    fake: npt.NDArray[np.float64], d: int, bins: int, shortlist: int) -> _Found:
    """:func:`candidate_pair_check` on exact cells (or cells of ``bins`` bins of ``L``): the common-share
    likelihood ratios of the ``shortlist`` of largest score (the others 0), the largest as ``χ²₁``, Bonferroni
    over ``d``."""
    from ldp.jobs.rappor_shared_share import shared_share_ratios

    top = _screened(cells, laws, fake, shortlist)
    ratios = np.zeros(d)
    ratios[top] = shared_share_ratios(cells[top], laws, fake)
    worst = int(np.argmax(ratios))
    total = float(ratios[worst])
    p = float(min(1.0, d * stats.chi2.sf(total, 1))) if total > 0 else 1.0
    how = "every number of 1s" if bins >= params.num_bloombits + 1 else f"{bins} bins of the 1s"
    return worst, total, p, how, f"likelihood ratio {total:,.1f} beyond every honest mixture"


def _distinct(params: Any, pairs: npt.NDArray[np.intp], used: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """One candidate (its row) per distinct pattern of pairs over the tested cohorts ``used``, among those with a
    pair in some of them: the ``D`` of the Bonferroni correction."""
    key = np.where(pairs[:, used, 0] >= 0, pairs[:, used, 0] * params.num_bloombits + pairs[:, used, 1], -1)
    live = (key >= 0).any(axis=1) if used.size else np.zeros(pairs.shape[0], bool)
    if not live.any():
        return np.zeros(0, np.intp)
    _, first = np.unique(key[live], axis=0, return_index=True)
    out: npt.NDArray[np.intp] = np.flatnonzero(live)[np.asarray(first)]
    return out


def _cross_fitted(params: Any, g: npt.NDArray[np.int64], tested: tuple[Any, Any, Any], candidates: list[Any],
                  shortlist: int) -> _Found:
    """:func:`candidate_pair_check` on the fold's two halves ``g`` (``(2, m, B, T)``) with fewer than
    :data:`~ldp.jobs.rappor_pair_law.RATIO_BINS` bins: the cross-fitted sum
    (:func:`ldp.jobs.rappor_cross_fit.cross_fit_statistic`) of the ``shortlist`` of largest score among the
    ``4·shortlist`` of largest fixed-weight ``z``; ``tested``: every candidate's pairs, the rows tested, the cohorts
    used."""
    from ldp.jobs.rappor_cross_fit import cross_fit_statistic

    pairs, rows, used = tested
    laws, fake = candidate_laws(params, True)
    cells = np.stack([candidate_cells(params, half, pairs[rows], used) for half in g])
    pre = np.argsort(-_linear_z(params, cells.sum(axis=0), laws, fake), kind="stable")[:4 * shortlist]
    top = pre[_screened(cells.sum(axis=0)[pre], laws, fake, shortlist)]  # a fit for 4·shortlist at most
    return cross_fit_statistic(params, g, cells, top, (laws, fake, pair_types(params)), candidates, pairs, rows,
                               used)


def _whole_cells(params: Any, whole: npt.NDArray[np.int64], tested: tuple[Any, Any, Any], linear: bool,
                 shortlist: int) -> _Found:
    """:func:`candidate_pair_check` on whole cells ``whole`` (``pair_grid``, ``pair_bins``, or the sum of the
    fold's two halves): the linear sum (``linear``: too few bins) or the ratio, the ratio beyond
    :data:`~ldp.batch.rappor_pair_bins.RATIO_COHORTS` cohorts over the cohorts summed in that many runs
    (:func:`~ldp.jobs.rappor_shared_share.pooled_cohorts`)."""
    from ldp.jobs.rappor_shared_share import pooled_cohorts

    pairs, rows, used = tested
    laws, fake = candidate_laws(params, whole.ndim == 3)
    cells = candidate_cells(params, whole, pairs[rows], used)
    pooled = not linear and used.size > RATIO_COHORTS
    if pooled:
        cells = pooled_cohorts(cells, RATIO_COHORTS)
    statistic = _binned_statistic if linear else _grid_statistic
    worst, total, p, how, what = statistic(params, cells, laws, fake, rows.size, whole.shape[1], shortlist)
    return worst, total, p, how + (f", the cohorts summed in {RATIO_COHORTS} runs" if pooled else ""), what


def candidate_pair_check(params: Any, grid: npt.ArrayLike, candidates: Any, alpha: float, reports: int,
                         shortlist: int = SCREEN) -> LawCheck:
    """The candidates' own pairs (:mod:`ldp.jobs.rappor_poisoning`): for each candidate string ``s`` its pair
    of bits in every cohort with at least :data:`PAIR_MIN` reports (:func:`candidate_pairs`) and their cells
    (every report counted, :func:`candidate_cells`). From ``pair_grid`` (exact cells): ``T_s`` the common-share
    likelihood ratio (:func:`ldp.jobs.rappor_shared_share.shared_share_ratios`), taken as ``χ²₁`` (one parameter
    on its boundary: asymptotically ``½χ²₀ + ½χ²₁``), ``p = min(1, D·P(χ²₁ >= max_s T_s))``; the ratios of the
    ``shortlist`` of largest score are computed (:func:`_screened`), the others count 0. From ``pair_bins`` with
    at least :data:`RATIO_BINS` bins of ``L`` (or the sum of the fold's two halves): the same ratio on the binned
    cells (their laws exact, :func:`candidate_laws`). Beyond :data:`RATIO_COHORTS` tested cohorts, exact or binned,
    the ratio is taken over the cohorts summed in :data:`RATIO_COHORTS` runs
    (:func:`~ldp.jobs.rappor_shared_share.pooled_cohorts`: fitted one by one, 64 honest mixtures on their faces
    add up gains that break its law). From the fold's two halves (``(2, m, B, T)``, kept beyond
    :data:`RATIO_COHORTS` cohorts) with fewer bins: ``z_s`` the cross-fitted sum
    (:func:`ldp.jobs.rappor_cross_fit.cross_fit_statistic`) of the ``shortlist`` of largest score among the
    ``4·shortlist`` of largest fixed-weight ``z`` (the others 0), ``p = min(1, D·P(N(0, 1) >= max_s z_s))``.
    Otherwise (fewer bins, or an aggregate without halves): ``z_s`` the self-normalised sum of fixed weights of mean
    ``<= 0`` for every honest type (0 for filters holding both bits or neither) and 1 for a fake report
    (:func:`_linear_z`), ``p = min(1, D·P(N(0, 1) >= max_s z_s))``: its null law needs no honest mix inside the
    types' hull (with few bins the likelihood ratio's asymptotic law fails where the mix sits on the hull's faces:
    one filter in ``k/2`` holds a given bit). Bonferroni over the ``D`` distinct candidates (distinct pairs across
    the cohorts) with a pair in some tested cohort: every candidate counts in ``D``, so which are computed may
    depend on the data."""
    pr = params.protocol
    alpha = _check_alpha(alpha)
    g = np.asarray(grid, dtype=np.int64)
    k = params.num_bloombits  # the fold's two halves (ldp.batch.rappor_pair_bins.halves_source), not pair_grid:
    halves = g.ndim == 4 and g.shape[0] == 2 and g.shape[-1] == (k + 1) * (k + 2) // 2
    whole = g.sum(axis=0) if halves else g
    binned = whole.ndim == 3
    pairs = candidate_pairs(params, candidates)  # (D, m, 2)
    counted = (whole[:, :, 0].sum(axis=1) if binned else whole[:, :, 0, 0].sum(axis=1)) if g.size else np.zeros(0)
    used = np.flatnonzero(counted >= PAIR_MIN)
    rows = _distinct(params, pairs, used)
    d = int(rows.size)
    if d == 0:
        return LawCheck("pair_candidates", pr, int(reports), 0.0, 0.0, 0.0, 0.0, 1.0, alpha, "ok",
                        f"{pr}: the candidates' own pairs of bits: no cohort has {PAIR_MIN} reports, or no candidate "
                        f"has two bits (ok at {alpha:g})")
    linear = binned and whole.shape[1] < RATIO_BINS
    tested = (pairs, rows, used)
    worst, total, p, how, what = (_cross_fitted(params, g, tested, list(candidates), shortlist) if halves and linear
                                  else _whole_cells(params, whole, tested, linear, shortlist))
    verdict = _verdict(p, alpha)
    names = list(candidates)
    msg = (f"{pr}: a candidate's own bits set together: {what} for {names[int(rows[worst])]!r} (one fake share "
           f"over {used.size} cohorts, {how}; most extreme of {d} candidates, Bonferroni p <= {p:.2g}, {verdict} "
           f"at {alpha:g})")
    if linear:
        return LawCheck("pair_candidates", pr, int(reports), total, 0.0, 1.0, total, p, alpha, verdict, msg)
    sd = float(np.sqrt(2.0))  # χ²₁'s mean and standard deviation, for the check's z
    return LawCheck("pair_candidates", pr, int(reports), total, 1.0, sd, (total - 1.0) / sd, p, alpha, verdict, msg)
