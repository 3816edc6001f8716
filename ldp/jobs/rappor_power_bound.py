"""What any test of a RAPPOR candidate's own pair can reach against disguised fake reports (issue 88, item 4): the
asymptotic power of the likelihood-ratio test of the pair's **exact** cells ``(x_a, x_b, R)`` per cohort, one fake
share common to the cohorts (:func:`ldp.jobs.rappor_shared_share.shared_share_ratios`), computed from the expected
cells of the simulated population (no simulation).

**The expected cells.** The population of :func:`ldp.simulation.rappor_disguise.disguised_window`: ``n`` users,
``round(f·n)`` fake, the others' values Zipf(1) over ``d`` synthetic candidates, every user's cohort uniform. In
cohort ``g`` a pair ``(a, b)`` (the target's own, :func:`~ldp.jobs.rappor_pair_law.candidate_pairs`) sees an honest
user of value ``v`` through its type ``(a ∈ S, b ∈ S, |S ∖ {a, b}|)`` (``S`` the filter of ``v`` in ``g``) and the
type's law (:func:`~ldp.jobs.rappor_pair_law.pair_type_laws`); a fake report for the target through
:func:`~ldp.jobs.rappor_pair_law.pair_fake_law`; a fake report for another target ``t'`` (the fakes take the
``j`` targets in turn, ``f/j`` of the users each) through :func:`other_fake_law`. So cohort ``g``'s expected cells
are ``(n/m)·((1 − f)·w_g·A + (f/j)·F + (f/j)·Σ_{t' ≠ t} G_{t', g})`` (:func:`expected_cells`).

**The noncentrality.** ``λ = 2·(max_{alternative} ℓ(E c) − max_{honest} ℓ(E c))``: the likelihood ratio evaluated at
the expected cells, i.e. ``2·n·(KL(truth ‖ its projection on the honest mixtures) − KL(truth ‖ its projection on the
common-share model))`` (the honest fit of each cohort free: the KL projection onto the honest mixtures, by the EM of
:mod:`ldp.jobs.rappor_shared_share`). Under local alternatives the likelihood ratio is ``χ²₁(λ)`` (Wald 1943; the
noncentral limit of the likelihood ratio under contiguous alternatives, e.g. van der Vaart, *Asymptotic
Statistics*, 1998, §16.3), and for one tested parameter it is the locally most powerful test. So
``power_t = P(χ²₁(λ_t) >= c)``, ``c`` the window's Bonferroni critical value (``α / (checks·D)``: the family's
share of the level, over the ``D`` candidates), and a window with ``j`` targets is flagged with probability about
``1 − Π_t (1 − power_t)`` (distinct pairs: nearly independent statistics). **This is an approximation** (asymptotic,
local alternatives), **not a theorem**: where it says 0.3 no test of these cells should be expected near 0.8, and
where it says 0.95 a good test should get there.

**Why splitting the fakes is a smaller attack.** Target ``t`` gets ``f/j`` of the users; the others' fake reports
set its pair's bits only by chance (uniform given ``L``, as honest reports' outside their filters), so ``λ_t`` is
about that of a single target at ``f/j`` (:func:`power_bound` measures it with the other targets' fakes in).

:func:`predicted_z_power` gives, from the same expected cells, the power of the linear statistic the binned path uses
(:func:`~ldp.jobs.rappor_shared_share.linear_scores`): the normal approximation of ``S`` against ``c_z·√V``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = ["expected_cells", "noncentralities", "other_fake_law", "power_bound", "predicted_z_power",
           "window_power"]


def _population(params: Any, d: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64],
                                               npt.NDArray[np.intp]]:
    """``(idx, pmf, pairs)``: the candidates' Bloom bits ``(d, m, h)``, Zipf(1)'s shares and their own pairs."""
    from ldp.batch.rappor import bloom_index_table
    from ldp.decoders.rappor_decode import synthetic_rappor_candidates
    from ldp.jobs.rappor_pair_law import candidate_pairs

    cands = synthetic_rappor_candidates(params, d)
    pmf = 1.0 / np.arange(1, d + 1)
    return bloom_index_table(params, cands), pmf / pmf.sum(), candidate_pairs(params, cands)


def other_fake_law(params: Any, bits: npt.ArrayLike, a: int, b: int) -> npt.NDArray[np.float64]:
    """``(4(k − 1),)``: the law of pair ``(a, b)``'s cell of a fake report for another string with bits ``bits`` in
    the cohort (:func:`ldp.simulation.rappor_disguise.disguised_reports`): ``L`` from the full filter's law, ``L' =
    max(L, s)`` (``s`` its distinct bits), its bits set and ``L' − s`` of the other ``k − s`` bits uniformly; the
    pair's bits outside ``bits`` (``u`` of them) hold ``y ~ Hypergeometric(k − s, u, L' − s)``, each equally likely.
    It depends on ``(s, a ∈ bits, b ∈ bits)`` only (:func:`_other_law`, cached)."""
    own = set(int(x) for x in np.asarray(bits).ravel())
    return _other_law(params.num_bloombits, params.num_hashes, float(params.p_star), float(params.q_star),
                      len(own), int(a in own), int(b in own))


@functools.lru_cache(maxsize=256)
def _other_law(k: int, h: int, ps: float, qs: float, s: int, al: int, be: int) -> npt.NDArray[np.float64]:
    law = np.convolve(stats.binom.pmf(np.arange(h + 1), h, qs), stats.binom.pmf(np.arange(k - h + 1), k - h, ps))
    u = 2 - al - be
    out = np.zeros(4 * (k - 1))
    for ell, pl in enumerate(law):
        big = max(ell, s)
        for y in range(u + 1):
            py = pl * stats.hypergeom.pmf(y, k - s, u, big - s)
            if py <= 0:
                continue
            ends = [(1, 0, 0.5), (0, 1, 0.5)] if u == 2 and y == 1 else [(al or y > 0, be or y > 0, 1.0)]
            for xa, xb, share in ends:
                out[(2 * int(xa) + int(xb)) * (k - 1) + big - int(xa) - int(xb)] += py * share
    out.flags.writeable = False
    return out


def _honest_mix(params: Any, idx: npt.NDArray[np.int64], pmf: npt.NDArray[np.float64], g: int, a: int,
                b: int) -> npt.NDArray[np.float64]:
    """``(types,)``: the share of each pair type (:func:`~ldp.jobs.rappor_pair_law.pair_types`) among honest users
    in cohort ``g`` for pair ``(a, b)``."""
    from ldp.jobs.rappor_pair_law import pair_types

    kinds = {kind: i for i, kind in enumerate(pair_types(params))}
    out = np.zeros(len(kinds))
    for v in range(idx.shape[0]):
        bits = set(int(x) for x in idx[v, g])
        al, be = int(a in bits), int(b in bits)
        out[kinds[(al, be, len(bits) - al - be)]] += pmf[v]
    return out


def expected_cells(params: Any, n: int, fraction: float, targets: list[int], d: int = 64,
                   cache: Any = None) -> npt.NDArray[np.float64]:
    """``(len(targets), m, 4(k − 1))``: each target's own pair's expected cells per cohort (module docstring), with
    ``fraction`` of the users fake taking the ``targets`` (candidate ranks) in turn; 0 in a cohort where the target
    has one bit. ``cache``: :func:`_population`'s result, to reuse."""
    from ldp.jobs.rappor_pair_law import pair_fake_law, pair_type_laws

    idx, pmf, pairs = cache if cache is not None else _population(params, d)
    m, k = params.num_cohorts, params.num_bloombits
    laws, fake = pair_type_laws(params), pair_fake_law(params)
    phi = round(fraction * n) / n
    each = phi / len(targets)
    out = np.zeros((len(targets), m, 4 * (k - 1)))
    for i, t in enumerate(targets):
        for g in range(m):
            a, b = (int(x) for x in pairs[t, g])
            if a < 0:
                continue
            law = (1 - phi) * (_honest_mix(params, idx, pmf, g, a, b) @ laws) + each * fake
            for other in targets:
                if other != t:
                    law = law + each * other_fake_law(params, idx[other, g], a, b)
            out[i, g] = law * n / m
    return out


def noncentralities(params: Any, cells: npt.NDArray[np.float64], binned: bool = False,
                    steps: int = 3000) -> npt.NDArray[np.float64]:
    """``(D,)``: ``λ``, the common-share likelihood ratio at the expected cells ``(D, m, 4(k − 1))``
    (:func:`~ldp.jobs.rappor_shared_share.shared_share_ratios`, long fits), of the exact cells or, with ``binned``,
    of the cells with ``L`` binned as the fold bins it (:func:`ldp.batch.rappor_pair_bins.bin_matrix`)."""
    from ldp.jobs.rappor_pair_law import candidate_laws
    from ldp.jobs.rappor_shared_share import shared_share_ratios

    laws, fake = candidate_laws(params, binned)
    if binned:
        from ldp.batch.rappor_pair_bins import bin_matrix

        cells = cells @ bin_matrix(params)
    keep = cells.sum(axis=2) > 0
    c = np.where(keep[:, :, None], cells, 0.0)
    return shared_share_ratios(c, laws, fake, steps=steps, null_steps=steps)


def window_power(lams: npt.ArrayLike, alpha: float, checks: int, d: int) -> float:
    """``1 − Π_t P(χ²₁(λ_t) < c)``, ``c = χ²₁``'s upper ``α/(checks·d)`` point (module docstring)."""
    crit = stats.chi2.isf(alpha / checks / d, 1)
    miss = np.prod([stats.ncx2.cdf(crit, 1, max(float(x), 1e-9)) for x in np.ravel(lams)])
    return float(1.0 - miss)


def _draws(targets: int, draws: int, seed: int, d: int) -> list[list[int]]:
    gen = np.random.default_rng([seed, targets])
    return [[int(x) for x in gen.choice(np.arange(8, d), size=targets, replace=False)] for _ in range(draws)]


def power_bound(params: Any, n: int, fraction: float, targets: int, *, draws: int = 8, alpha: float = 0.01,
                checks: int = 7, d: int = 64, seed: int = 88, binned: bool = False) -> dict[str, Any]:
    """The bound of one shape and attack (module docstring), averaged over ``draws`` draws of the targets among
    ranks ``8..d − 1`` (as the simulator draws them): ``power`` (mean window power), ``lambda`` (mean ``λ`` per
    target) and the range of the draws' powers."""
    cache = _population(params, d)
    powers, lams = [], []
    for pick in _draws(targets, draws, seed, d):
        lam = noncentralities(params, expected_cells(params, n, fraction, pick, d, cache), binned)
        lams.extend(lam.tolist())
        powers.append(window_power(lam, alpha, checks, d))
    return {"power": float(np.mean(powers)), "low": float(np.min(powers)), "high": float(np.max(powers)),
            "lambda": float(np.mean(lams))}


def predicted_z_power(params: Any, n: int, fraction: float, targets: int, psi: npt.NDArray[np.float64], *,
                      draws: int = 8, alpha: float = 0.01, checks: int = 7, d: int = 64,
                      seed: int = 88) -> float:
    """The power of the binned path's ``z = S/√V`` (:func:`~ldp.jobs.rappor_shared_share.linear_scores`, weights
    ``psi`` over the binned cells) from the expected cells: per target ``Φ((E S − c_z·√(E V)) / sd S)``,
    ``c_z`` the normal's upper ``α/(checks·d)`` point, combined over the targets as :func:`window_power`."""
    from ldp.batch.rappor_pair_bins import bin_matrix

    cache = _population(params, d)
    cz = stats.norm.isf(alpha / checks / d)
    matrix = bin_matrix(params)
    out = []
    for pick in _draws(targets, draws, seed, d):
        c = expected_cells(params, n, fraction, pick, d, cache) @ matrix  # (j, m, 4B)
        mean = (c @ psi).sum(axis=1)
        ev = (c @ (psi * psi)).sum(axis=1)
        var = np.maximum(ev - (np.where(c.sum(axis=2) > 0, (c @ psi) ** 2 / np.maximum(c.sum(axis=2), 1e-300),
                                        0.0)).sum(axis=1), 1e-300)
        each = stats.norm.cdf((mean - cz * np.sqrt(ev)) / np.sqrt(var))
        out.append(1.0 - float(np.prod(1.0 - each)))
    return float(np.mean(out))
