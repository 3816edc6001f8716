"""The score that chooses a RAPPOR cohort's pairs of bits to test (:mod:`ldp.batch.rappor_pairs`), from the moments
the fold keeps of its reports to choose from (:func:`~ldp.batch.rappor_pairs.grid_moments`).

**The score** of pair ``(a, b)`` is the studentized sum over the reports to choose from of
``φ = ½[(x_a − q*)(x_b − p*) + (x_a − p*)(x_b − q*)] − (x_a − p*)(x_b − p*)(R − (k − 2)·p*)``, whose mean is ``<= 0``
for every honest report (given its filter ``S`` the bits are independent: the first term's mean is
``−(q* − p*)²/2`` when ``S`` holds one of ``a, b`` and 0 otherwise; the second's is ``−(q* − p*)³·|S ∖ {a, b}|``
when ``S`` holds both and 0 otherwise), and is large for a fake report that sets both bits and pads to the honest
number of 1s (both bits set, its other bits fewer). The score only decides which pairs are tested; the test
(:func:`ldp.jobs.rappor_pair_law.pair_law_check`) needs no property of it.

:func:`pair_scores` scores the :data:`PREFILTER` pairs of largest linear score ``Σψ`` (:func:`score_coefficients`,
the least-variance linear statistic of the cell features that is 0 for every honest filter and 1 for a disguised
fake report) by a likelihood ratio on the moments.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["PREFILTER", "pair_scores", "score_coefficients"]

PREFILTER = 32
"""Pairs per cohort scored by the moments' likelihood ratio (the largest by the linear score; :func:`pair_scores`)."""


def _binomial_pmf(n: int, p: float) -> npt.NDArray[np.float64]:
    return np.array([math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(n + 1)])


def _rest_pmf(params: Any, j: int) -> npt.NDArray[np.float64]:
    """The law of ``R`` for a filter holding ``j`` bits besides the pair: ``Binomial(j, q*) + Binomial(k − 2 − j,
    p*)`` on ``0..k − 2``."""
    k = params.num_bloombits
    return np.convolve(_binomial_pmf(j, params.q_star), _binomial_pmf(k - 2 - j, params.p_star))


def _group_means(pa: float, pb: float, rest: npt.NDArray[np.float64], top: int) -> npt.NDArray[np.float64]:
    """``(4, top + 1)``: ``E[1{(x_a, x_b) = g}·R^i]``, groups ``g = 2·x_a + x_b``."""
    r = np.arange(rest.size, dtype=np.float64)
    powers = np.array([(rest * r ** i).sum() for i in range(top + 1)])
    return np.array([(pa if xa else 1 - pa) * (pb if xb else 1 - pb) * powers for xa in (0, 1) for xb in (0, 1)])


def _honest_features(params: Any) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                                           npt.NDArray[np.float64]]:
    """``(A, F, Σ)``: the features' means per report (:func:`_group_means`, ``R^i`` for ``i <= 2`` per cell of
    ``(x_a, x_b)``) for each honest filter (columns of ``A``, in the order of
    :func:`ldp.jobs.rappor_pair_law.pair_types`) and for a disguised fake report (``F``: both bits set, its number
    of 1s from the honest law of a full filter), and their covariance ``Σ`` for the reference, a filter of ``h``
    uniform bits (as most honest reports are, for a given pair). Computed once per (k, h, p*, q*); copies."""
    a, f, cov = _honest_features_of(params)
    return a.copy(), f.copy(), cov.copy()


@functools.lru_cache(maxsize=32)
def _honest_features_of(params: Any) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                                              npt.NDArray[np.float64]]:
    k, h, ps, qs = params.num_bloombits, params.num_hashes, params.p_star, params.q_star
    kinds = [(al, be, j) for al in (1, 0) for be in (1, 0) for j in range(min(h - al - be, k - 2) + 1)
             if al + be + j >= 1]
    a = np.array([_group_means(qs if al else ps, qs if be else ps, _rest_pmf(params, j), 2).ravel()
                  for al, be, j in kinds]).T
    full = np.convolve(_binomial_pmf(h, qs), _binomial_pmf(k - h, ps))
    fake_rest = np.zeros(k - 1)
    fake_rest[0] = full[:3].sum()
    fake_rest[1:] = full[3:k + 2]
    f = _group_means(1.0, 1.0, fake_rest, 2).ravel()
    second, first, total = np.zeros((12, 12)), np.zeros(12), math.comb(k, h)
    for al, be, j in kinds:
        if al + be + j != h:
            continue
        weight = math.comb(k - 2, j) / total
        m4 = _group_means(qs if al else ps, qs if be else ps, _rest_pmf(params, j), 4)
        first += weight * m4[:, :3].ravel()
        for g in range(4):
            for i in range(3):
                for i2 in range(3):
                    second[3 * g + i, 3 * g + i2] += weight * m4[g, i + i2]
    return a, f, second - np.outer(first, first)


def score_coefficients(params: Any) -> tuple[npt.NDArray[np.float64], float]:
    """``(β, v)``: the choice statistic ``ψ = Σ_g Σ_i β[g, i]·1{(x_a, x_b) = g}·R^i`` (``i <= 2``) of least variance
    ``v`` (one report of a filter of ``h`` uniform bits) among those whose mean is 0 for every honest filter
    (:func:`ldp.jobs.rappor_pair_law.pair_types`) and 1 for a disguised fake report (both bits set, its number of
    1s from the honest law of a full filter)."""
    honest, fake, cov = _honest_features(params)
    a = np.column_stack([honest, fake])  # (12, types + 1)
    # least βᵀΣβ subject to Aᵀβ = (0, …, 0, 1): the KKT system [[Σ, A], [Aᵀ, 0]]
    t = a.shape[1]
    kkt = np.block([[cov, a], [a.T, np.zeros((t, t))]])
    rhs = np.zeros(12 + t)
    rhs[-1] = 1.0
    beta = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:12]
    return beta.reshape(4, 3), float(beta @ cov @ beta)


def _features(mom: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """``(4, 3, k, k)``: for every pair, ``Σ 1{(x_a, x_b) = g}·R^i`` over the reports whose :func:`moments` are
    ``mom`` (``R = L − x_a − x_b``)."""
    k = mom.shape[1] - 1
    m = mom.astype(np.float64)
    sums = np.empty((4, 3, k, k))  # Σ over group g of L^j
    for j in range(3):
        both = m[j, 1:, 1:]
        a_only = m[j, 0, 1:][:, None] - both
        b_only = m[j, 0, 1:][None, :] - both
        sums[3, j], sums[2, j], sums[1, j] = both, a_only, b_only
        sums[0, j] = m[j, 0, 0] - both - a_only - b_only
    out = np.empty((4, 3, k, k))
    for g, shift in ((0, 0), (1, 1), (2, 1), (3, 2)):
        out[g, 0] = sums[g, 0]
        out[g, 1] = sums[g, 1] - shift * sums[g, 0]
        out[g, 2] = sums[g, 2] - 2 * shift * sums[g, 1] + shift ** 2 * sums[g, 0]
    return out


def _design(params: Any) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(A, F, W)``: the features' means per report for each honest filter (columns of ``A``) and for a disguised
    fake report (``F``), and ``W`` whitening them (``WᵀW`` the inverse of their covariance for a filter of ``h``
    uniform bits)."""
    a, f, cov = _honest_features(params)
    cov += 1e-9 * np.trace(cov) * np.eye(12)
    w = np.linalg.cholesky(np.linalg.inv(cov)).T
    return a, f, w


@functools.lru_cache(maxsize=32)
def _scoring(params: Any) -> tuple[Any, ...]:
    """``(β, W, A_w, [A_w | F_w])``: the linear score's coefficients, the whitening, and the whitened honest mixtures
    without and with the disguised fake report (:func:`_design`). Once per params."""
    a, f, w = _design(params)
    return score_coefficients(params)[0], w, w @ a, np.column_stack([w @ a, w @ f])


def pair_scores(mom: npt.NDArray[np.int64], params: Any, shortlist: int = PREFILTER) -> npt.NDArray[np.float64]:
    """``(k, k)``: the score of each pair over the ``n`` reports whose moments (:func:`grid_moments`) are ``mom``:
    the features' (:func:`_features`, per report) whitened squared distance to the honest mixtures (non-negative
    least squares over the columns of ``A``, :func:`_design`) minus that to the honest mixtures with disguised fake
    reports added, times ``n`` — a likelihood ratio on the moments. Only the ``shortlist`` pairs of largest linear
    score ``Σψ`` (:func:`score_coefficients`) are scored so; the others, the diagonal included, are ``−∞``."""
    from scipy.optimize import nnls

    k = mom.shape[1] - 1
    n = float(mom[0, 0, 0])
    feats = _features(mom).reshape(12, k, k) / max(n, 1.0)
    beta, w, honest, both = _scoring(params)
    linear = np.einsum("i,iab->ab", beta.ravel(), feats)
    iu = np.triu_indices(k, 1)
    order = np.argsort(-linear[iu], kind="stable")[:shortlist]
    out = np.full((k, k), -np.inf)
    for a, b in zip(iu[0][order].tolist(), iu[1][order].tolist(), strict=True):
        y = w @ feats[:, a, b]
        out[a, b] = n * (nnls(honest, y)[1] ** 2 - nnls(both, y)[1] ** 2)
    return out
