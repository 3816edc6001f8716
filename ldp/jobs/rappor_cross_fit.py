"""RAPPOR's candidates' own-pair test beyond 16 cohorts with fewer than 8 bins of ``L`` (``k >= 64`` at ``m = 64``;
issue 88, item 4): a sum over one half of the fold's reports of weights fitted on the other half, both ways
(cross-fitting), where the likelihood ratio's null law fails even over the cohorts summed in 16 runs
(:func:`ldp.jobs.rappor_shared_share.pooled_cohorts`, which takes the ratio's place with more bins: a linear sum
cannot reach the ratio's power: ``docs/poisoning.md``).

**Why not the likelihood ratio.** :func:`ldp.jobs.rappor_shared_share.shared_share_ratios` fits each cohort's honest
mixture free. An honest pair's mixture sits on the faces of the types' hull (one filter in ``k/2`` holds a given
bit), where the fit with a fake share gains a little in every cohort even on honest data; over 64 cohorts those gains
add up (honest windows of ``n = 10⁵``: Bonferroni ``p <= 0.1`` in 11 of 20 at ``k = 32``, 4 of 20 flagged at
``k = 64``).

**The halves.** Beyond :data:`~ldp.batch.rappor_pair_bins.RATIO_COHORTS` cohorts the fold keeps ``pair_bins`` over
the reports a coin of its own put in half A (``pair_halves``); half B is the rest
(:func:`ldp.batch.rappor_pair_bins.halves_source`). Given its filter, an honest report's cell does not depend on
which half it went to.

**The weights** (:func:`ripr_weights`), fitted on one half: an alternative ``q_g = (1 − φ)·r_g + φ·F`` per cohort (a
fake share ``φ`` common to the cohorts, each cohort's honest mix ``r_g``), and ``p_g`` the honest mixture nearest to
``q_g`` in Kullback–Leibler divergence (its reverse information projection onto the honest mixtures: Li 1999;
Grünwald, de Heide and Koolen, "Safe testing", JRSS B 2024). With ``D_gt = Σ_c A_tc·q_gc / p_gc``, the weights
``ψ_gc = (q_gc / (p_gc·max_t D_gt) − 1) / φ`` have mean ``Σ_c A_tc·ψ_gc = (D_gt / max_t D_gt − 1) / φ <= 0`` under
**every** honest type law ``A_t``, whatever ``q`` and ``p`` are; at the projection ``max_t D_t = 1`` (its
first-order condition) and the sum of ``ψ`` is about as powerful against ``q`` as the likelihood ratio. ``r_g`` is
fitted with a prior (:func:`honest_prior`): what the candidates' frequencies, estimated on the same half from every
cohort's bit counts, say each cohort's pair sees (the per-cohort fit alone is too noisy at 64 cohorts).

**The statistic** (:func:`cross_fit_scores`): ``z = (S_AB + S_BA) / √(V_AB + V_BA)``, ``S_AB`` the sum over half B's
cells of ``ψ`` fitted on half A, ``V_AB`` the sum of its squares. Given half A, ``S_AB`` sums independent honest
terms of mean ``<= 0`` whatever the fit, so it has mean ``<= 0`` and variance at most ``E[V_AB]``: no honest mixture
is fitted on the data it sums. The sum of both directions is asymptotically at most ``N(0, 1)`` in its upper tail as
each half's weights converge (cross-fitting: Chernozhukov et al., "Double/debiased machine learning", Econometrics J.
2018, §3: what is left is the sum of ``ψ^A − lim ψ`` over half B, ``o(√n)``; the floor :data:`SHARE_FLOOR` on ``φ``
keeps the limit away from 0). As the one-sided linear sum's, the level is a normal approximation's, checked on
honest windows (``simulations/bench_rappor_power.py``; ``tests/jobs/test_rappor_pair_bins.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from ldp.jobs.rappor_shared_share import _TINY, null_upper, shared_share_fit

__all__ = ["CROSS_STEPS", "PRIOR_CANDIDATES", "PRIOR_WEIGHT", "SHARE_FLOOR", "cross_fit_scores",
           "cross_fit_statistic", "honest_prior", "map_share_fit", "ripr_weights"]

SHARE_FLOOR = 0.05
"""The least fake share the weights are built for (:func:`ripr_weights`): a half's fit finds less than there is (the
honest mixes take some of it) and a larger share weighs the cells fake reports fill more; where the fit finds none,
the weights still point at a fake share, never at nothing. Measured on 20 windows each at ``m = 64``, ``n = 10⁵``
(``k = 32``, one target at 2 %; three at 5 %): the fitted share flags 12 and 14, 3 times it 16 and 17, at least 5 %
17 and 19, at least 10 % 14 and 17."""
PRIOR_WEIGHT = 300.0
"""Pseudo-reports of :func:`honest_prior`'s mix in each cohort's honest fit (:func:`map_share_fit`)."""
CROSS_STEPS = 300
"""EM steps of each fit (only the power depends on them, never the level)."""
PRIOR_CANDIDATES = 256
"""The most candidates whose frequencies :func:`honest_prior` estimates (the tested ones and the most frequent
others); the rest's mass is spread as random filters, so a dictionary of any size costs a bounded fit."""


def _random_filter_types(params: Any, kinds: list[tuple[int, int, int]]) -> npt.NDArray[np.float64]:
    """``(T,)``: the type (:func:`~ldp.jobs.rappor_pair_law.pair_types`) of a filter of ``h`` distinct bits drawn
    uniformly, seen by a given pair: both bits ``h(h − 1)/(k(k − 1))``, a given one alone ``h(k − h)/(k(k − 1))``,
    neither ``(k − h)(k − h − 1)/(k(k − 1))`` (the values no candidate accounts for)."""
    k, h = params.num_bloombits, params.num_hashes
    both, alone = h * (h - 1) / (k * (k - 1)), h * (k - h) / (k * (k - 1))
    law = {(1, 1, h - 2): both, (1, 0, h - 1): alone, (0, 1, h - 1): alone, (0, 0, h): 1.0 - both - 2 * alone}
    return np.array([law.get(kind, 0.0) for kind in kinds])


def _frequencies(params: Any, stat: npt.NDArray[np.int64], bits: npt.NDArray[np.int64], used: npt.NDArray[np.intp],
                 own: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64],
                                                    npt.NDArray[np.bool_]]:
    """``(kept, f, member)``: the candidates kept (``own`` and the others of largest mean debiased frequency of their
    least frequent bit, at most :data:`PRIOR_CANDIDATES` in all), their frequencies ``f`` by nonnegative least squares
    of ``t_gi = (X_gi − p*·N_g)/(q* − p*) ≈ N_g·Σ_v f_v·[i ∈ S_vg]`` over the cohorts ``used`` of one half
    (``stat``: its ``pair_bins``, every cohort's reports and 1s per bit), and their filters ``member``
    (``(kept, G, k)``)."""
    from scipy.optimize import nnls

    from ldp.batch.rappor_pair_bins import triangle_index

    k, ps, qs = params.num_bloombits, float(params.p_star), float(params.q_star)
    at = triangle_index(k)
    n_g = stat[used][:, :, 0].sum(axis=1).astype(np.float64)  # (G,)
    t = (stat[used][:, :, at[0, 1:]].sum(axis=1) - ps * n_g[:, None]) / (qs - ps)  # (G, k)
    kept = np.arange(bits.shape[0])
    if kept.size > PRIOR_CANDIDATES:
        share = t / np.maximum(n_g, 1.0)[:, None]
        score = np.take_along_axis(share[None], bits[:, used], axis=2).min(axis=2).mean(axis=1)  # (V,)
        score[own] = np.inf
        kept = np.sort(np.argsort(-score, kind="stable")[:max(PRIOR_CANDIDATES, own.size)])
    member = np.zeros((kept.size, used.size, k), bool)
    member[np.arange(kept.size)[:, None, None], np.arange(used.size)[None, :, None], bits[kept][:, used]] = True
    design = (member * n_g[None, :, None]).reshape(kept.size, -1).T
    f = nnls(design, t.ravel(), maxiter=50 * kept.size)[0] if n_g.sum() > 0 else np.zeros(kept.size)
    return kept, f, member


def honest_prior(params: Any, stat: npt.NDArray[np.int64], bits: npt.NDArray[np.int64], pairs: npt.NDArray[np.intp],
                 own: npt.NDArray[np.intp], used: npt.NDArray[np.intp], shares: npt.NDArray[np.float64],
                 kinds: list[tuple[int, int, int]]) -> npt.NDArray[np.float64]:
    """``(D, G, T)``: per tested candidate (its index ``own`` among the candidates, its pair ``pairs`` ``(D, m, 2)``)
    and cohort of ``used``, the honest type mix its pair sees if the candidates' frequencies are ``f``
    (:func:`_frequencies` on one half, ``stat``; ``bits``: the candidates' Bloom bits ``(V, m, h)``), the tested
    candidate's own ``f`` less ``c·φ`` (``shares``; a disguised fake report adds ``c = (1 − p*)/(q* − p*)`` to each
    of its target's bits), and the mass no candidate kept accounts for spread as filters drawn uniformly
    (:func:`_random_filter_types`); ``kinds``: the types (:func:`ldp.jobs.rappor_pair_law.pair_types`). Only a prior
    for the power: any mix keeps the level."""
    ps, qs = float(params.p_star), float(params.q_star)
    kept, freq, member = _frequencies(params, stat, bits, used, own)
    mine = np.searchsorted(kept, own)  # each tested candidate's place among the kept
    f = np.repeat(freq[None, :], own.size, axis=0)  # (D, kept)
    f[np.arange(own.size), mine] = np.maximum(f[np.arange(own.size), mine] - (1 - ps) / (qs - ps) * shares, 0.0)
    lookup = np.full((2, 2, params.num_hashes + 1), len(kinds), np.intp)
    for t, (al, be, j) in enumerate(kinds):
        lookup[al, be, j] = t
    a, b = pairs[:, used, 0], pairs[:, used, 1]  # (D, G)
    rows = np.arange(used.size)[None, :, None]
    values = np.arange(kept.size)[None, None, :]
    in_a = member[values, rows, np.maximum(a, 0)[:, :, None]]  # (D, G, kept): the value's filter holds a
    in_b = member[values, rows, np.maximum(b, 0)[:, :, None]]
    size = member.sum(axis=2).T[None]  # (1, G, kept)
    kind = lookup[in_a.astype(np.intp), in_b.astype(np.intp), np.clip(size - in_a - in_b, 0, params.num_hashes)]
    out = np.zeros((own.size, used.size, len(kinds) + 1))
    np.add.at(out, (np.arange(own.size)[:, None, None], rows, kind), f[:, None, :])
    out = out[:, :, :-1] + np.maximum(1.0 - f.sum(axis=1), 0.0)[:, None, None] * _random_filter_types(params, kinds)
    out[a < 0] = 1.0
    return out / np.maximum(out.sum(axis=2, keepdims=True), _TINY)


def map_share_fit(c: npt.NDArray[np.float64], laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
                  prior: npt.NDArray[np.float64], weight: float = PRIOR_WEIGHT,
                  steps: int = CROSS_STEPS) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(w, φ)``: each cohort's honest mix ``w`` (``(D, G, T)``, on the simplex) and the common fake share ``φ``
    (``(D,)``) of cells ``c`` (``(D, G, C)``), by EM with a Dirichlet prior of ``weight`` pseudo-reports at
    ``prior`` on each cohort's mix: per step ``φ = Σ_g F_g / Σ_g N_g`` and ``w_gt ∝ A_gt + weight·prior_gt``
    (``F_g``, ``A_gt`` the expected fake and type-``t`` reports, as
    :func:`ldp.jobs.rappor_shared_share.shared_share_fit`)."""
    n_g = c.sum(axis=2)
    total = np.maximum(n_g.sum(axis=1), 1.0)
    phi = np.full(c.shape[0], 0.01)
    w = prior.copy()
    for _ in range(steps):
        ratio = c / np.maximum((1.0 - phi)[:, None, None] * (w @ laws) + phi[:, None, None] * fake, _TINY)
        a = (1.0 - phi)[:, None, None] * w * (ratio @ laws.T)
        phi = (phi[:, None] * (ratio @ fake)).sum(axis=1) / total
        w = a + weight * prior
        w = w / np.maximum(w.sum(axis=2, keepdims=True), _TINY)
    return w, phi


def ripr_weights(cells: npt.NDArray[np.float64], laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
                 prior: npt.NDArray[np.float64], steps: int = CROSS_STEPS) -> npt.NDArray[np.float64]:
    """``(D, G, C)``: the weights ``ψ`` of the module docstring fitted on ``cells`` (one half): ``r_g``, ``φ`` of
    :func:`map_share_fit` (``prior``: :func:`honest_prior`), ``φ`` floored at :data:`SHARE_FLOOR`, ``p_g`` by EM
    toward ``q_g``'s projection (:func:`~ldp.jobs.rappor_shared_share.null_upper`). Mean ``<= 0`` under every
    row of ``laws`` whatever the fit (the normalisation by ``max_t D_gt``)."""
    w, phi = map_share_fit(np.asarray(cells, np.float64), laws, fake, prior, steps=steps)
    share = np.maximum(phi, SHARE_FLOOR)[:, None, None]
    q = (1.0 - share) * (w @ laws) + share * fake
    _, u = null_upper(q * 1000.0, laws, steps)
    ratio = q / np.maximum(u @ laws, _TINY)
    top = (ratio @ laws.T).max(axis=2, keepdims=True)
    out: npt.NDArray[np.float64] = (ratio / np.maximum(top, _TINY) - 1.0) / share
    return out


def cross_fit_scores(halves: npt.ArrayLike, laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
                     priors: npt.ArrayLike, steps: int = CROSS_STEPS) -> npt.NDArray[np.float64]:
    """``(D,)``: ``z = (S_AB + S_BA) / √(V_AB + V_BA)`` (module docstring) of each candidate's cells in two halves
    (``(2, D, G, C)``), the weights of each half fitted with its own prior (``priors``: ``(2, D, G, T)``)."""
    h = np.asarray(halves, np.float64)
    prior = np.asarray(priors, np.float64)
    psi_a, psi_b = (ripr_weights(h[i], laws, fake, prior[i], steps) for i in (0, 1))
    s = (h[1] * psi_a).sum(axis=(1, 2)) + (h[0] * psi_b).sum(axis=(1, 2))
    v = (h[1] * psi_a * psi_a).sum(axis=(1, 2)) + (h[0] * psi_b * psi_b).sum(axis=(1, 2))
    out: npt.NDArray[np.float64] = np.where(v > 0, s / np.sqrt(np.maximum(v, _TINY)), 0.0)
    return out


def cross_fit_statistic(params: Any, halves: npt.NDArray[np.int64], cells: npt.NDArray[np.float64],
                        top: npt.NDArray[np.intp], model: tuple[Any, Any, list[tuple[int, int, int]]],
                        candidates: list[Any], pairs: npt.NDArray[np.intp], rows: npt.NDArray[np.intp],
                        used: npt.NDArray[np.intp]) -> tuple[int, float, float, str, str]:
    """The candidates' test on the fold's two halves (``halves``: ``(2, m, B, T)``): the candidates ``rows``
    (distinct patterns; ``pairs``: every candidate's, ``(V, m, 2)``) have their cells ``cells`` (``(2, D, G, C)``)
    in the cohorts ``used``; those of ``top`` (:func:`ldp.jobs.rappor_candidate_test.candidate_pair_check`'s screen on
    both halves together; the others count 0) get their :func:`cross_fit_scores` (``model``: the binned type
    laws, the fake law and the types), each half's prior from its own counts (:func:`honest_prior`, the own-share
    correction from :func:`~ldp.jobs.rappor_shared_share.shared_share_fit` on the full filters' types), and
    ``p = D·P(N(0, 1) >= max z)`` (Bonferroni over the ``D`` rows): ``(row of the largest, z, p, how, what)``."""
    from ldp.batch.rappor import bloom_index_table

    laws, fake, kinds = model
    bits = bloom_index_table(params, candidates)
    main = np.array([al + be + j == params.num_hashes for al, be, j in kinds])
    priors = []
    for i in (0, 1):
        share = shared_share_fit(cells[i, top], laws[main], fake, CROSS_STEPS, CROSS_STEPS // 2)[2]
        priors.append(honest_prior(params, halves[i], bits, pairs[rows[top]], rows[top], used, share, kinds))
    z = np.zeros(rows.size)
    z[top] = cross_fit_scores(cells[:, top], laws, fake, np.stack(priors))
    worst = int(np.argmax(z))
    total = float(z[worst])
    p = float(min(1.0, rows.size * stats.norm.sf(total)))
    return (worst, total, p, f"{halves.shape[2]} bins of the 1s, two halves",
            f"z {total:.2f} of one half's sum with weights fitted on the other, both ways")
