"""The candidates' own-pair statistic of RAPPOR, vectorised over candidates and cohorts (issue 88, item 4): one
fake share ``φ >= 0`` common to every cohort against every cohort's best honest mixture, for many candidates at
once (:func:`shared_share_ratios`), on exact cells (``pair_grid``) or binned ones (``pair_bins``,
:mod:`ldp.batch.rappor_pair_bins`).

**The statistic.** For a candidate ``s`` with cell counts ``c_g`` in cohort ``g`` (its own pair's cells) and the
honest type laws ``A_t`` (rows, :func:`~ldp.jobs.rappor_pair_law.pair_type_laws`, binned or not) and the fake law
``F`` (:func:`~ldp.jobs.rappor_pair_law.pair_fake_law`):
``T_s = 2·(max_{φ, v} Σ_g ℓ(c_g; (1 − φ)·v_g·A + φ·F) − Σ_g max_w ℓ(c_g; w·A))``, ``v_g``, ``w`` on the simplex.
Fake users take their cohort at random like honest ones, so their share is common: one parameter however many
cohorts, asymptotically ``½χ²₀ + ½χ²₁`` under the null (``φ = 0`` on the boundary), dominated by ``χ²₁``.

**Computed conservatively** (never above the exact ratio): each cohort's honest optimum at an upper bound, the
EM iterate's log-likelihood plus its Jensen gap ``N·log(max_t D_t / N)``, ``D_t = Σ_i c_i·A_ti / mix_i``
(:func:`null_upper`); the fit with fakes at a feasible point (an EM iterate, a lower bound). Both fits are EM
steps on whole arrays ``(candidates, cohorts, cells)``: no loop per candidate or cohort.

**Beyond 16 cohorts** the ratio's null law fails (every cohort's honest fit on its boundary gains a little, and
64 cohorts add it up): the cohorts are summed in 16 runs first (:func:`pooled_cohorts`), or, where the bins are
too few for the ratio, the test is cross-fitted over two halves of the fold's reports
(:mod:`ldp.jobs.rappor_cross_fit`, with :func:`shared_share_fit` for its fits).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["NULL_STEPS", "SHARE_STEPS", "linear_scores", "null_free_weights", "null_upper", "one_sided_weights",
           "pooled_cohorts", "shared_share_fit", "shared_share_ratios"]

NULL_STEPS = 400
"""EM steps of each cohort's honest fit (its value then bounded above by the gap)."""
SHARE_STEPS = 1200
"""EM steps of the fit with a common fake share (its value a lower bound)."""
MAX_STEP = 64.0
"""The largest SQUAREM step length (:func:`_extrapolate`)."""
_TINY = 1e-300


def _loglik(c: npt.NDArray[np.float64], mix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = (c * np.log(np.maximum(mix, _TINY))).sum(axis=-1)
    return out


def _null_em(w: npt.NDArray[np.float64], c: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
             safe: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = w * ((c / np.maximum(w @ laws, _TINY)) @ laws.T) / safe
    return out


def _extrapolate(x0: npt.NDArray[np.float64], x1: npt.NDArray[np.float64],
                 x2: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """SQUAREM's step (Varadhan and Roland, "Simple and globally convergent methods for accelerating the
    convergence of any EM algorithm", Scand. J. Statist. 2008, scheme S3): ``x0 − 2α·r + α²·v``, ``r = x1 − x0``,
    ``v = x2 − 2·x1 + x0``, ``α = −‖r‖/‖v‖`` (from −:data:`MAX_STEP` to −1), per row (the last axis),
    clipped at 0. Only a proposal:
    the caller keeps it where it does not lower the likelihood."""
    r, v = x1 - x0, x2 - 2 * x1 + x0
    alpha = -np.sqrt((r * r).sum(axis=-1, keepdims=True)) / np.maximum(np.sqrt((v * v).sum(axis=-1, keepdims=True)),
                                                                      _TINY)
    alpha = np.clip(np.nan_to_num(alpha, nan=-1.0), -MAX_STEP, -1.0)
    out: npt.NDArray[np.float64] = np.maximum(x0 - 2 * alpha * r + alpha * alpha * v, 0.0)
    return out


def null_upper(c: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
               steps: int = NULL_STEPS) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(U, w)``: per row of ``c`` (``(..., C)`` cell counts), an upper bound ``U`` on the best honest
    log-likelihood ``max_w ℓ(c; w·A)`` (``laws``: ``A``, ``(T, C)``), and the weights ``w`` (``(..., T)``) reached by
    EM accelerated by SQUAREM (:func:`_extrapolate`; each round three EM maps, an extrapolated point kept only where
    its log-likelihood is at least the plain EM's): ``U = ℓ(w) + N·log(max_t D_t / N)`` (Jensen:
    ``ℓ(w*) − ℓ(w) <= N·log Σ_t w*_t·D_t / N``), so ``U >= max_w ℓ`` whatever the number of steps. A row of no
    reports has ``U = 0``."""
    n = c.sum(axis=-1)
    t = laws.shape[0]
    w = np.full((*c.shape[:-1], t), 1.0 / t)
    safe = np.maximum(n, 1.0)[..., None]
    for _ in range(max(steps // 3, 1)):
        w1 = _null_em(w, c, laws, safe)
        w2 = _null_em(w1, c, laws, safe)
        jump = _extrapolate(w, w1, w2)
        jump = _null_em(jump / np.maximum(jump.sum(axis=-1, keepdims=True), _TINY), c, laws, safe)
        better = _loglik(c, jump @ laws) >= _loglik(c, w2 @ laws)
        w = np.where(better[..., None], jump, w2)
    mix = w @ laws
    d = (c / np.maximum(mix, _TINY)) @ laws.T
    gap = np.where(n > 0, n * np.log(np.maximum(d.max(axis=-1), _TINY) / safe[..., 0]), 0.0)
    return _loglik(c, mix) + np.maximum(gap, 0.0), w


def _share_em(v: npt.NDArray[np.float64], phi: npt.NDArray[np.float64], c: npt.NDArray[np.float64],
              laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64], n_g: npt.NDArray[np.float64],
              total: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """One EM step of the fit with a common fake share (:func:`shared_share_ratios`)."""
    ratio = c / np.maximum(v @ laws + phi[:, None, None] * fake, _TINY)
    a = v * (ratio @ laws.T)  # (D, G, T): expected reports of each type
    f = phi[:, None] * (ratio @ fake)  # (D, G): expected fake reports
    phi = f.sum(axis=1) / total
    return a * ((1.0 - phi)[:, None] / np.maximum(n_g - f, _TINY))[:, :, None], phi


def shared_share_fit(c: npt.NDArray[np.float64], laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
                     steps: int = SHARE_STEPS, null_steps: int = NULL_STEPS) -> tuple[npt.NDArray[np.float64], ...]:
    """``(U, v, φ, ℓ₁)`` of cells ``c`` (``(D, G, C)``): each cohort's honest bound ``U`` (:func:`null_upper`,
    ``(D, G)``) and the fit with a share ``φ`` (``(D,)``) common to the cohorts, each cohort's honest weights ``v``
    (``(D, G, T)``, summing to ``1 − φ``) and its log-likelihood ``ℓ₁`` (``(D,)``, a feasible point's: a lower
    bound). It starts from the honest fit with a share of 1 % and runs EM with the share common to the cohorts
    (:func:`_share_em`: with ``F_g``, ``A_gt`` the expected fake and type-``t`` reports of cohort ``g``,
    ``φ = Σ_g F_g / Σ_g N_g`` and ``v_gt = A_gt·(1 − φ)/(N_g − F_g)``, the maximiser of the expected log-likelihood
    under ``Σ_t v_gt + φ = 1``), accelerated by SQUAREM as :func:`null_upper` (an extrapolated point made
    feasible: ``φ`` clipped to ``[0, 1)``, each cohort's ``v`` scaled to ``1 − φ``)."""
    upper, w0 = null_upper(c, laws, null_steps)
    d, g, t = w0.shape
    n_g = c.sum(axis=2)  # (D, G)
    total = np.maximum(n_g.sum(axis=1), 1.0)  # (D,)
    phi = np.full(d, 0.01)
    v = w0 * (1.0 - phi)[:, None, None]

    def value(v: npt.NDArray[np.float64], phi: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return _loglik(c, v @ laws + phi[:, None, None] * fake).sum(axis=1)

    def flat(v: npt.NDArray[np.float64], phi: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.concatenate([v.reshape(d, g * t), phi[:, None]], axis=1)

    for _ in range(max(steps // 3, 1)):
        v1, phi1 = _share_em(v, phi, c, laws, fake, n_g, total)
        v2, phi2 = _share_em(v1, phi1, c, laws, fake, n_g, total)
        jump = _extrapolate(flat(v, phi), flat(v1, phi1), flat(v2, phi2))
        pj = np.minimum(jump[:, -1], 1.0 - 1e-9)
        vj = jump[:, :-1].reshape(d, g, t)
        vj = vj / np.maximum(vj.sum(axis=2, keepdims=True), _TINY) * (1.0 - pj)[:, None, None]
        vj, pj = _share_em(vj, pj, c, laws, fake, n_g, total)
        better = value(vj, pj) >= value(v2, phi2)
        v, phi = np.where(better[:, None, None], vj, v2), np.where(better, pj, phi2)
    return upper, v, phi, np.maximum(value(v, phi), -np.inf)


def shared_share_ratios(cells: npt.ArrayLike, laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
                        steps: int = SHARE_STEPS, null_steps: int = NULL_STEPS) -> npt.NDArray[np.float64]:
    """``(D,)``: ``T_s`` (module docstring) of each candidate's cells ``(D, G, C)`` (a cohort of no reports adds
    nothing): ``2·(ℓ₁ − Σ_g U_g)`` of :func:`shared_share_fit`, the fit with fakes at a feasible point (a lower
    bound) and the honest one at its upper bound, so never above the exact ratio."""
    c = np.asarray(cells, np.float64)
    if c.ndim != 3:
        raise ValueError(f"cells must be (candidates, cohorts, cells), got shape {c.shape}")
    upper, _, _, best = shared_share_fit(c, laws, fake, steps, null_steps)
    out: npt.NDArray[np.float64] = np.maximum(2.0 * (best - upper.sum(axis=1)), 0.0)
    return out


def null_free_weights(laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
                      reference: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``(C,)``: the weights ``ψ`` over the cells of least ``Σ_c r_c·ψ_c²`` (``r``: ``reference``, an honest law of
    the cells) with ``A·ψ = 0`` (mean 0 under every honest type law, rows of ``laws``) and ``F·ψ = 1`` (mean 1 for a
    fake report): the KKT system ``[[2·diag(r), Bᵀ], [B, 0]]``, ``B = [A; F]``. All zero when no such ``ψ``
    exists (``F`` in the span of the type laws: the cells cannot tell a fake report from honest ones by a mean)."""
    b = np.vstack([laws, fake])
    c = b.shape[1]
    kkt = np.block([[np.diag(2 * np.maximum(reference, 1e-12)), b.T], [b, np.zeros((b.shape[0], b.shape[0]))]])
    rhs = np.zeros(c + b.shape[0])
    rhs[-1] = 1.0
    psi = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:c]
    if abs(float(fake @ psi) - 1.0) > 1e-6 or np.abs(laws @ psi).max() > 1e-6:
        return np.zeros(c)
    out: npt.NDArray[np.float64] = psi
    return out


def one_sided_weights(laws: npt.NDArray[np.float64], fake: npt.NDArray[np.float64],
                      reference: npt.NDArray[np.float64], exact: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``(C,)``: weights ``ψ`` with mean ``<= 0`` under every honest type law (so under every honest mix), 0 under
    the types ``exact`` marks, and 1 for a fake report, of small ``Σ_c r_c·ψ_c²``: :func:`null_free_weights` with
    equalities on the ``exact`` types only, then, while some other type's mean is positive, that type's (the
    largest) made an equality too (an active set; at worst every type, :func:`null_free_weights` itself). The types
    left free keep a negative mean: honest reports of them pull the sum down, never up. Where a pair's bits are rare
    alone in honest filters (one filter in ``k/2`` holds a given bit), that is most of the power; the check at the
    end keeps the bound whatever the solver did (all zero otherwise)."""
    eq = [int(i) for i in np.flatnonzero(np.asarray(exact, bool))]
    free = [i for i in range(laws.shape[0]) if i not in eq]
    while True:
        psi = null_free_weights(laws[eq], fake, reference)
        means = laws[free] @ psi if free else np.zeros(0)
        if not free or means.max() <= 1e-12:
            break
        eq.append(free.pop(int(np.argmax(means))))
    if (laws @ psi).max() > 1e-9 or abs(float(fake @ psi) - 1.0) > 1e-6:
        return np.zeros(fake.size)
    return psi


def linear_scores(cells: npt.ArrayLike, psi: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``(D,)``: ``z = S / √V`` per candidate, ``S = Σ_g Σ_c n_gc·ψ_c`` over its cells ``(D, G, C)`` and
    ``V = Σ_g Σ_c n_gc·ψ_c²``. Given the reports' filters, their ``ψ`` are independent with mean ``<= 0`` for every
    honest report whatever its value (:func:`null_free_weights`: 0; :func:`one_sided_weights`: at most 0), so ``S``
    has mean ``<= 0`` and variance at most ``E[V]`` on honest data: ``z`` is a self-normalised sum, asymptotically
    at most ``N(0, 1)`` in its upper tail (one-sided: a fake report adds 1 to ``S``'s mean). 0 where ``V = 0``."""
    c = np.asarray(cells, np.float64)
    s = (c @ psi).sum(axis=1)
    v = (c @ (psi * psi)).sum(axis=1)
    out: npt.NDArray[np.float64] = np.where(v > 0, s / np.sqrt(np.maximum(v, 1e-300)), 0.0)
    return out


def pooled_cohorts(cells: npt.ArrayLike, runs: int) -> npt.NDArray[np.float64]:
    """``(D, min(G, runs), C)``: each candidate's cells ``(D, G, C)`` summed over ``runs`` runs of consecutive
    cohorts (cohort ``j`` of ``G`` in run ``⌊j·runs/G⌋``), so that :func:`shared_share_ratios` fits ``runs`` honest
    mixtures instead of ``G``.

    **Why the ratio still applies.** An honest report's cells follow its type's law ``A_t`` whichever cohort it is in
    and whichever pair is the candidate's there (the laws depend on ``(k, h, p, q, f)`` and the type only), so a
    run's cells are those of an honest mixture of the same ``A_t`` (a user's cohort is uniform: given the run, its
    type follows the run's average mix), and a fake report for the candidate adds ``F`` in every cohort: one common
    share ``φ`` over the runs, as over cohorts. The partition looks at the cohorts' order only, never at the reports.

    **Why pool.** Each honest mixture fitted free on its simplex's faces (one filter in ``k/2`` holds a given bit
    alone) gains a little under the alternative; over 64 cohorts those gains add up and break the ratio's
    ``½χ²₀ + ½χ²₁`` law. A run's average mix sits further inside the simplex, and ``runs`` of them stay in the
    regime where the law was checked (:data:`~ldp.batch.rappor_pair_bins.RATIO_COHORTS`). It costs little power: a
    common share cannot hide in a run's mix any better than in its cohorts' (measured: ``n = 20,000``, ``k = 16``,
    ``m = 64``, two targets at 5 % in turn, flagged in 77 of 80 windows pooled in 16 runs, 62 of 80 in 4 runs,
    16 of 20 unpooled; 0 of 200 honest windows flagged, the largest ratio 11.3 against 18.0)."""
    c = np.asarray(cells, np.float64)
    if c.ndim != 3:
        raise ValueError(f"cells must be (candidates, cohorts, cells), got shape {c.shape}")
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    g = c.shape[1]
    out = np.zeros((c.shape[0], min(g, runs), c.shape[2]))
    run = np.arange(g) * out.shape[1] // max(g, 1)
    for r in range(out.shape[1]):
        out[:, r] = c[:, run == r].sum(axis=1)
    return out
