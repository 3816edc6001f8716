"""RAPPOR's promoted-pair test (:mod:`ldp.jobs.rappor_poisoning` states its null law and why honest windows stay
at the level): the honest laws of a pair's cells, the disguised fake law, the likelihood ratio of a cohort's cells
against every honest mixture, and the p-value of the ratios summed over the cohorts."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from ldp.batch.rappor_pair_bins import RATIO_COHORTS
from ldp.jobs.poisoning import LawCheck, _check_alpha, _verdict

__all__ = ["FIT_GAP", "PAIR_MIN", "RATIO_BINS", "RATIO_COHORTS", "SCREEN", "candidate_cells", "candidate_laws",
           "candidate_pairs",
           "common_share_ratio", "pair_fake_law", "pair_law_check", "pair_likelihood_ratio", "pair_type_laws",
           "pair_types", "sum_of_dominated_sf"]

PAIR_MIN = 200
"""Tested reports a cohort needs (in its first slot) for its pairs to enter the promoted-pair test."""


def pair_types(params: Any) -> list[tuple[int, int, int]]:
    """The honest filters as a pair ``(a, b)`` of bits sees them: ``(α, β, j)``, ``α``, ``β`` whether the filter
    holds ``a``, ``b`` and ``j`` how many other bits it holds; ``1 <= α + β + j <= h`` (``j <= k − 2``)."""
    k, h = params.num_bloombits, params.num_hashes
    return [(al, be, j) for al in (1, 0) for be in (1, 0) for j in range(min(h - al - be, k - 2) + 1)
            if al + be + j >= 1]


def _cells(pa: float, pb: float, rest: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The law over the cells ``(x_a, x_b, R)`` of independent ``x_a ~ Bernoulli(pa)``, ``x_b ~ Bernoulli(pb)``
    and ``R ~ rest``."""
    return np.concatenate([(pa if xa else 1 - pa) * (pb if xb else 1 - pb) * rest for xa in (0, 1) for xb in (0, 1)])


def pair_type_laws(params: Any) -> npt.NDArray[np.float64]:
    """``(types, 4(k − 1))``: for each of :func:`pair_types`, the law of an honest report's cell ``(x_a, x_b, R)``
    (:func:`ldp.batch.rappor_pairs.cell_of`): given its filter the bits are independent, ``q*`` inside and ``p*``
    outside, so ``x_a ~ Bernoulli(q* if α else p*)``, likewise ``x_b``, and ``R ~ Binomial(j, q*) +
    Binomial(k − 2 − j, p*)``. Every honest report's cell follows one of these, whatever its value."""
    k, ps, qs = params.num_bloombits, params.p_star, params.q_star
    out = []
    for al, be, j in pair_types(params):
        rest = np.convolve(stats.binom.pmf(np.arange(j + 1), j, qs),
                           stats.binom.pmf(np.arange(k - 2 - j + 1), k - 2 - j, ps))
        out.append(_cells(qs if al else ps, qs if be else ps, rest))
    return np.asarray(out)


def pair_fake_law(params: Any) -> npt.NDArray[np.float64]:
    """``(4(k − 1),)``: the cell of a fake report that sets both bits and draws its number of 1s ``L`` from the
    honest law of a full filter (``P_h``): ``x_a = x_b = 1``, ``R = max(L − 2, 0)``."""
    k, h = params.num_bloombits, params.num_hashes
    law = np.convolve(stats.binom.pmf(np.arange(h + 1), h, params.q_star),
                      stats.binom.pmf(np.arange(k - h + 1), k - h, params.p_star))
    rest = np.zeros(k - 1)
    rest[0] = law[:3].sum()
    rest[1:] = law[3:]
    return _cells(1.0, 1.0, rest)


def _log_likelihood(w: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
                    counts: npt.NDArray[np.float64]) -> float:
    mix = w @ laws
    return float(counts @ np.log(np.maximum(mix, 1e-300)))


FIT_GAP = 1e-3
"""A fit stops once its log-likelihood is within this of the best (:func:`_gap`); ratios are computed net of it."""


def _gap(w: npt.NDArray[np.float64], laws: npt.NDArray[np.float64], counts: npt.NDArray[np.float64]) -> float:
    """An upper bound on the best log-likelihood over the simplex minus that of ``w``: ``N·log(max_t D_t / N)``,
    ``D_t = Σ_i c_i·A_ti / mix_i`` (Jensen: ``ℓ(w*) − ℓ(w) <= N·log Σ_t w*_t·D_t/N``), 0 at the optimum."""
    n = counts.sum()
    d = laws @ (counts / np.maximum(w @ laws, 1e-300))
    return float(max(n * np.log(max(float(d.max()), 1e-300) / n), 0.0))


def _em(w: npt.NDArray[np.float64], laws: npt.NDArray[np.float64], counts: npt.NDArray[np.float64],
        steps: int) -> npt.NDArray[np.float64]:
    n = counts.sum()
    for _ in range(steps):
        w = w * (laws @ (counts / np.maximum(w @ laws, 1e-300))) / n
    return w


def _fit(counts: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
         start: npt.NDArray[np.float64] | None = None) -> tuple[float, float, npt.NDArray[np.float64]]:
    """``(ℓ, gap, w)``: mixture weights ``w`` of the rows of ``laws`` (a concave problem on the simplex) with
    log-likelihood ``ℓ`` of ``counts``, and :func:`_gap`, so the best is in ``[ℓ, ℓ + gap]``: a few EM steps from
    ``start`` (uniform by default), SLSQP from there, and more EM steps while the gap is above :data:`FIT_GAP`."""
    from scipy.optimize import minimize

    t, n = laws.shape[0], counts.sum()
    w = _em(np.full(t, 1.0 / t) if start is None else np.asarray(start, np.float64).copy(), laws, counts, 20)

    def loss(v: npt.NDArray[np.float64]) -> float:
        return -_log_likelihood(v, laws, counts) / n

    def grad(v: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = -(laws @ (counts / np.maximum(v @ laws, 1e-300))) / n
        return out

    res = minimize(loss, w, jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * t,
                   constraints=[{"type": "eq", "fun": lambda v: v.sum() - 1.0, "jac": lambda v: np.ones_like(v)}],
                   options={"ftol": 1e-12, "maxiter": 300})
    v = np.clip(res.x, 0.0, None)
    v = v / v.sum() if v.sum() > 0 else w
    best = max((_log_likelihood(w, laws, counts), w), (_log_likelihood(v, laws, counts), v), key=lambda b: b[0])[1]
    for _ in range(20):
        gap = _gap(best, laws, counts)
        if gap < FIT_GAP:
            break
        best = _em(best, laws, counts, 25)
    return _log_likelihood(best, laws, counts), _gap(best, laws, counts), best


def pair_likelihood_ratio(counts: npt.ArrayLike, laws: npt.NDArray[np.float64],
                          fake: npt.NDArray[np.float64]) -> float:
    """``2·(ℓ₁ − ℓ₀)``: the likelihood ratio of the cell counts of one cohort's slot, ``ℓ₀`` the best honest
    mixture (of ``laws``: :func:`pair_type_laws`), ``ℓ₁`` the best with a share of ``fake`` reports besides
    (:func:`pair_fake_law`, a weight ``>= 0``); 0 for no reports. Computed conservatively: ``ℓ₀`` at the upper
    bound of its fit (:func:`_gap`), ``ℓ₁`` at a feasible point's value (a lower bound)."""
    c = np.asarray(counts, np.float64)
    if c.sum() <= 0:
        return 0.0
    l0, gap, w0 = _fit(c, laws)
    if float(c @ (fake / np.maximum(w0 @ laws, 1e-300))) <= c.sum():
        return 0.0  # then the ratio is at most 2·gap (the gap of w0 with a zero fake share is unchanged): 0 reported
    l1, _, _ = _fit(c, np.vstack([laws, fake]), np.append(w0 * 0.95, 0.05))
    return float(max(2.0 * (l1 - l0 - gap), 0.0))  # the honest best at its upper bound: never an inflated ratio


def sum_of_dominated_sf(total: float, terms: int, slots: int, step: float | None = None) -> tuple[float, float, float]:
    """``(p, mean, sd)``: ``P(D_1 + … + D_c >= total)`` for ``c = terms`` independent ``D`` of survival
    ``min(1, slots·P(χ²₁ >= t))`` (each the largest of ``slots`` statistics each at most ``χ²₁``: Bonferroni), each
    ``D`` rounded up to a grid of ``step`` (so the ``p`` is never below the exact one), and the sum's mean and
    standard deviation on that grid."""
    if terms <= 0 or total <= 0:
        return 1.0, 0.0, 0.0
    from scipy.signal import fftconvolve

    step = step or max(0.02, total / 4000)
    top = int(np.ceil(total / step))
    grid = np.arange(top + 1) * step
    sf = np.minimum(1.0, slots * stats.chi2.sf(grid, 1))
    one = np.zeros(top + 1)
    one[1:] = sf[:-1] - sf[1:]  # D in (t_{i-1}, t_i] -> t_i
    one[0] = 1.0 - sf[0]
    one[top] += sf[top]  # beyond the grid: counted at its end (>= total)
    law = np.zeros(top + 1)
    law[0] = 1.0
    for _ in range(terms):
        full = np.clip(fftconvolve(law, one), 0.0, None)
        law = full[:top + 1].copy()
        law[top] += full[top + 1:].sum()
    # the mean and variance of one D on a long grid, for the check's z
    fine = np.arange(0, 200.0, 0.01)
    dsf = np.minimum(1.0, slots * stats.chi2.sf(fine, 1))
    mean1 = float(dsf.sum() * 0.01)
    second = float((2 * fine * dsf).sum() * 0.01)
    return float(min(1.0, law[top])), terms * mean1, float(np.sqrt(terms * max(second - mean1 ** 2, 0.0)))


def pair_law_check(params: Any, cells: npt.ArrayLike, alpha: float, reports: int) -> LawCheck:
    """The promoted-pair test (module docstring): per cohort with at least :data:`PAIR_MIN` tested reports, the
    largest of its slots' :func:`pair_likelihood_ratio`; ``T`` their sum, against the sum of independent laws of
    survival ``min(1, J·P(χ²₁ >= t))`` (:func:`sum_of_dominated_sf`). ``reports``: the window's reports."""
    pr = params.protocol
    c = np.asarray(cells, dtype=np.int64)
    laws, fake = pair_type_laws(params), pair_fake_law(params)
    used = np.flatnonzero(c[:, 0].sum(axis=1) >= PAIR_MIN)
    slots = c.shape[1]
    ratios = [max(pair_likelihood_ratio(c[g, j], laws, fake) for j in range(slots)) for g in used.tolist()]
    total = float(sum(ratios))
    p, mean, sd = sum_of_dominated_sf(total, len(ratios), slots)
    alpha = _check_alpha(alpha)
    verdict = _verdict(p, alpha) if ratios else "ok"
    tested = int(c[used, 0].sum()) if used.size else 0
    worst = f"; largest {max(ratios):.1f} (cohort {int(used[int(np.argmax(ratios))])})" if ratios else ""
    z = (total - mean) / sd if sd > 0 else 0.0
    msg = (f"{pr}: pairs of bits set together beyond every honest mixture: likelihood ratio {total:,.1f} over "
           f"{len(ratios)} cohorts' {slots} chosen pairs ({tested:,} reports tested{worst}; p <= {p:.2g}, "
           f"{verdict} at {alpha:g})" if ratios else
           f"{pr}: pairs of bits set together: no cohort has {PAIR_MIN} reports tested yet (ok at {alpha:g})")
    return LawCheck("pair_law", pr, int(reports), total, mean, sd, float(z), p, alpha, verdict, msg)


SHARE_STEPS = 400
"""EM steps of the common-share fit (:func:`common_share_ratio`); its value is a feasible point's, a lower bound."""


def candidate_pairs(params: Any, candidates: Any) -> npt.NDArray[np.intp]:
    """``(D, m, 2)``: per candidate string and cohort, its first two distinct Bloom bits in hash order (a rule fixed
    before any report is seen), ``a < b``; ``−1`` where its hashes give one bit only."""
    from ldp.batch.rappor import bloom_index_table

    idx = bloom_index_table(params, list(candidates))  # (D, m, h)
    first = idx[:, :, 0]
    differs = idx != first[:, :, None]
    has = differs.any(axis=2)
    second = np.take_along_axis(idx, np.argmax(differs, axis=2)[:, :, None], axis=2)[:, :, 0]
    out = np.stack([np.minimum(first, second), np.maximum(first, second)], axis=2).astype(np.intp)
    out[~has] = -1
    return out


def _screen(c: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
            fake: npt.NDArray[np.float64]) -> tuple[float, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(ℓ₀ + gap, w₀, (w, φ))``: one cohort's honest fit at the upper bound of its optimum, and a start for the
    fit with fake reports (its own best share, or none when the honest fit's derivative toward fake is ``<= 0``)."""
    l0, gap, w0 = _fit(c, laws)
    if float(c @ (fake / np.maximum(w0 @ laws, 1e-300))) <= c.sum():
        return l0 + gap, w0, np.append(w0, 0.0)
    _, _, w1 = _fit(c, np.vstack([laws, fake]), np.append(w0 * 0.95, 0.05))
    return l0 + gap, w0, w1


def common_share_ratio(cells: npt.ArrayLike, laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
                       steps: int = SHARE_STEPS) -> float:
    """``2·(ℓ₁ − Σ_c ℓ₀c)``: the likelihood ratio of cohorts' cell counts (``(cohorts, 4(k − 1))``, one pair each)
    for one share ``φ >= 0`` of ``fake`` reports in every cohort (the honest mixture free per cohort), against every
    cohort's best honest mixture. Fake users take their cohort at random like honest ones, so their share is the
    same in every cohort: one parameter however many cohorts. Conservative: each ``ℓ₀c`` at the upper bound of its
    fit (:func:`_gap`); ``ℓ₁`` at the EM iterate reached (feasible: a lower bound). The EM step for a shared share:
    with ``F_c``, ``A_ct`` the expected fake and type-``t`` reports of cohort ``c``, ``φ = Σ_c F_c / Σ_c N_c`` and
    ``v_ct = A_ct·(1 − φ)/(N_c − F_c)`` (the maximiser of the expected log-likelihood under ``Σ_t v_ct + φ = 1``)."""
    c = np.asarray(cells, np.float64).reshape(-1, fake.size)
    c = c[c.sum(axis=1) > 0]
    if c.shape[0] == 0:
        return 0.0
    fits = [_screen(row, laws, fake) for row in c]
    upper = sum(f[0] for f in fits)
    n_c = c.sum(axis=1)
    starts = np.array([f[2] for f in fits])  # (cohorts, T + 1): honest weights, then the cohort's fake share
    phi = float((starts[:, -1] * n_c).sum() / n_c.sum())
    if phi <= 0.0:
        return 0.0
    honest = starts[:, :-1]
    v = honest / np.maximum(honest.sum(axis=1, keepdims=True), 1e-300) * (1.0 - phi)
    best = -np.inf
    for step in range(steps + 1):
        mix = v @ laws + phi * fake  # (cohorts, C)
        ratio = c / np.maximum(mix, 1e-300)
        if step % 50 == 0 or step == steps:
            best = max(best, float((c * np.log(np.maximum(mix, 1e-300))).sum()))
        a = v * (ratio @ laws.T)  # (cohorts, T): expected reports of each type
        f = phi * (ratio @ fake)  # (cohorts,): expected fake reports
        phi = float(f.sum() / n_c.sum())
        v = a * ((1.0 - phi) / np.maximum(n_c - f, 1e-300))[:, None]
    return float(max(2.0 * (best - upper), 0.0))


SCREEN = 8
"""Candidates whose full ratio :func:`~ldp.jobs.rappor_candidate_test.candidate_pair_check` computes: all of them
up to this many, otherwise the largest by the score at the honest fit (the others count 0, a lower bound)."""
RATIO_BINS = 8
"""Binned cells with at least this many bins of ``L`` are tested by the likelihood ratio, as exact cells are
(beyond :data:`RATIO_COHORTS` cohorts, over the cohorts summed in that many runs); otherwise by the cross-fitted
or the one-sided linear sum (:func:`~ldp.jobs.rappor_candidate_test.candidate_pair_check`).
With 7 bins (``k = 128, m = 16``) the ratio raised 4 false alarms in 300 honest windows where its share of the
level (``0.01/7``) expects 0.4."""


def candidate_cells(params: Any, source: npt.NDArray[np.int64], pairs: npt.NDArray[np.intp],
                    cohorts: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """``(D, G, C)``: per candidate (``pairs``: ``(D, m, 2)``, :func:`candidate_pairs`) its own pair's cells in each
    of ``cohorts``, from ``pair_grid`` (``(m, k + 1, k + 1, k + 1)``: exact cells,
    :func:`ldp.batch.rappor_pairs.grid_cells`) or ``pair_bins`` (``(m, B, T)``: binned cells,
    :func:`ldp.batch.rappor_pair_bins.bins_cells`); a cohort where the candidate has one bit has no cells."""
    from ldp.batch.rappor_pair_bins import bins_cells
    from ldp.batch.rappor_pairs import grid_cells

    binned = source.ndim == 3
    width = 4 * source.shape[1] if binned else 4 * (params.num_bloombits - 1)
    cells = np.zeros((pairs.shape[0], cohorts.size, width))
    for j, cohort in enumerate(cohorts.tolist()):
        have = pairs[:, cohort, 0] >= 0
        of = bins_cells if binned else grid_cells
        cells[have, j] = of(source[cohort], pairs[have, cohort, 0], pairs[have, cohort, 1])
    return cells


def candidate_laws(params: Any, binned: bool) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(A, F)``: the honest type laws and the fake law over the cells (:func:`pair_type_laws`,
    :func:`pair_fake_law`), summed over each bin of ``L`` when ``binned``
    (:func:`ldp.batch.rappor_pair_bins.bin_matrix`: exact laws of the binned cells)."""
    laws, fake = pair_type_laws(params), pair_fake_law(params)
    if not binned:
        return laws, fake
    from ldp.batch.rappor_pair_bins import bin_matrix

    matrix = bin_matrix(params)
    return laws @ matrix, fake @ matrix


def _screened(cells: npt.NDArray[np.float64], laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
              keep: int) -> npt.NDArray[np.intp]:
    """The ``keep`` candidates of largest score toward fake reports at a short honest fit,
    ``Σ_g (Σ_i c_gi·F_i / mix_gi − N_g)`` (the log-likelihood's derivative in the fake share): only which ratios
    are computed, never a p-value."""
    from ldp.jobs.rappor_shared_share import null_upper

    if cells.shape[0] <= keep:
        return np.arange(cells.shape[0])
    _, w = null_upper(cells, laws, 40)
    score = ((cells / np.maximum(w @ laws, 1e-300)) @ fake - cells.sum(axis=2)).sum(axis=1)
    out: npt.NDArray[np.intp] = np.argsort(-score, kind="stable")[:keep]
    return out


def reference_law(params: Any) -> npt.NDArray[np.float64]:
    """``(types,)``: the honest type mix a typical pair of a cohort sees (:func:`pair_types`): 1 % of filters
    holding both bits, ``2/k`` holding each alone with one other bit, the rest two other bits. Only the weighting
    of the linear statistic's variance (:func:`ldp.jobs.rappor_shared_share.null_free_weights`), fixed by the
    parameters: the statistic's mean is 0 under every honest mix whatever this is."""
    k = params.num_bloombits
    kinds = pair_types(params)
    share = {(1, 1, 0): 0.01, (1, 0, 1): 2 / k, (0, 1, 1): 2 / k}
    w = np.array([share.get(kind, 0.0) for kind in kinds])
    rest = kinds.index((0, 0, 2)) if (0, 0, 2) in kinds else len(kinds) - 1
    w[rest] += max(1.0 - w.sum(), 0.0)
    out: npt.NDArray[np.float64] = w / w.sum()
    return out
