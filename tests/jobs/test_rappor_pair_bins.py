"""Every pair's cells with the number of 1s binned (issue 88, item 4; ``ldp.batch.rappor_pair_bins``): exact
against the reports, additive, bounded at every shape, their honest laws exact against every filter and report,
and the candidates' test on them at its level on honest draws and flagging disguised attacks (power over every
shape: simulations/bench_rappor_power.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ldp.batch.rappor_pair_bins import (
    BIN_BUDGET,
    add_pair_bins,
    bin_count,
    bin_matrix,
    bins_cells,
    ones_bins,
    pair_bins_shape,
    pair_halves_shape,
)
from ldp.decoders.base import Aggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import synthetic_rappor_candidates
from ldp.encoders.rappor import RapporParams
from ldp.jobs.rappor_cross_fit import cross_fit_scores, ripr_weights
from ldp.jobs.rappor_pair_law import candidate_laws, pair_fake_law, pair_type_laws, pair_types, reference_law
from ldp.jobs.rappor_poisoning import candidate_evidence, candidate_source
from ldp.jobs.rappor_shared_share import linear_scores, null_free_weights, one_sided_weights
from ldp.reports import ReportBatch
from ldp.simulation.rappor_disguise import disguised_reports, disguised_window

WIDE = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=32, p=0.25, q=0.75, f=0.5)  # no pair_grid: bins


def _params(k: int, m: int, h: int = 2) -> RapporParams:
    return RapporParams(num_bloombits=k, num_hashes=h, num_cohorts=m, p=0.25, q=0.75, f=0.5)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 300), k=st.integers(2, 20), m=st.integers(1, 4), nb=st.integers(1, 6),
       seed=st.integers(0, 2**32 - 1))
def test_binned_cells_are_the_cells_of_the_reports(n: int, k: int, m: int, nb: int, seed: int) -> None:
    """For random reports (padding bits set too) and random nondecreasing bins, every pair's binned cells equal the
    cells counted report by report, and folding in two parts gives the statistic of the whole (additive)."""
    gen = np.random.default_rng(seed)
    bins = np.minimum(np.sort(gen.integers(0, nb, k + 1)), nb - 1)
    cohorts = gen.integers(0, m, n)
    rows = gen.integers(0, 256, (n, (k + 7) // 8)).astype(np.uint8)
    whole = np.zeros((m, nb, (k + 1) * (k + 2) // 2), np.int64)
    add_pair_bins(cohorts, rows, k, bins, whole)
    parts = np.zeros_like(whole)
    add_pair_bins(cohorts[:n // 3], rows[:n // 3], k, bins, parts)
    add_pair_bins(cohorts[n // 3:], rows[n // 3:], k, bins, parts)
    assert np.array_equal(parts, whole) and whole[:, :, 0].sum() == n
    coin = gen.random(n) < 0.5  # the fold's coin: half A where true
    split, half = np.zeros_like(whole), np.zeros_like(whole)
    add_pair_bins(cohorts, rows, k, bins, split, coin, half)
    only_a = np.zeros_like(whole)
    add_pair_bins(cohorts[coin], rows[coin], k, bins, only_a)
    assert np.array_equal(split, whole) and np.array_equal(half, only_a)
    x = np.unpackbits(rows, axis=1, count=k, bitorder="little").astype(np.int64)
    ell = bins[x.sum(axis=1)]
    a, b = np.triu_indices(k, 1)
    for c in range(m):
        got = bins_cells(whole[c], a, b)
        at = cohorts == c
        for i in range(a.size):
            cell = (2 * x[at, a[i]] + x[at, b[i]]) * nb + ell[at]
            assert np.array_equal(got[i], np.bincount(cell, minlength=4 * nb))


@pytest.mark.parametrize("k,h,nb", [(6, 2, 3), (6, 3, 2), (5, 2, 1)])
def test_binned_type_laws_are_exact_for_every_filter(k: int, h: int, nb: int) -> None:
    """Every filter of at most ``h`` of ``k`` bits, every report (2^k) enumerated: the law of the binned cell
    ``(x_a, x_b, bin(L))`` of pair (0, 1) is the binned type law of the filter's type (a 0/1 matrix times the exact
    law), and the disguised fake report's is the binned fake law. Breaking bin_matrix (a shift of L by the pair's
    bits left out) fails it."""
    params = _params(k, 1, h)
    ps, qs = params.p_star, params.q_star
    bins = np.minimum(np.arange(k + 1) * nb // (k + 1), nb - 1)
    matrix = bin_matrix(params, bins)
    laws = pair_type_laws(params) @ matrix
    kinds = pair_types(params)
    reports = np.array(list(itertools.product((0, 1), repeat=k)))
    cell = (2 * reports[:, 0] + reports[:, 1]) * nb + bins[reports.sum(axis=1)]
    for size in range(1, h + 1):
        for filt in itertools.combinations(range(k), size):
            prob = np.where(np.isin(np.arange(k), filt), qs, ps)
            each = np.prod(np.where(reports == 1, prob, 1 - prob), axis=1)
            law = np.bincount(cell, weights=each, minlength=4 * nb)
            kind = (int(0 in filt), int(1 in filt), size - int(0 in filt) - int(1 in filt))
            assert np.allclose(law, laws[kinds.index(kind)], atol=1e-12)
    fake = pair_fake_law(params) @ matrix
    full = np.convolve(stats.binom.pmf(range(h + 1), h, qs), stats.binom.pmf(range(k - h + 1), k - h, ps))
    expect = np.zeros(4 * nb)
    for ell, pr in enumerate(full):
        expect[3 * nb + bins[max(ell, 2)]] += pr
    assert np.allclose(fake, expect, atol=1e-12)


def test_the_statistic_is_bounded_at_every_shape() -> None:
    """At most BIN_BUDGET counters (one bin past it), with B bins of L, for every shape of the issue and beyond;
    exact (one bin per L) through k = 32 at m <= 16."""
    for k, m in itertools.product((16, 32, 64, 128), (4, 8, 16, 64)):
        params = _params(k, m)
        shape = pair_bins_shape(params)
        if shape == (0, 0, 0):
            continue  # pair_grid kept instead (k = 16, m <= 8)
        assert np.prod(shape) <= max(BIN_BUDGET, m * (k + 1) * (k + 2) // 2)
        assert 1 <= bin_count(params) <= k + 1 and ones_bins(params).max() < bin_count(params)
        assert k > 32 or m > 16 or bin_count(params) == k + 1


def _honest_exceedances(params: RapporParams, psi: np.ndarray, draws: int, seed: int) -> tuple[int, int]:
    laws, _ = candidate_laws(params, True)
    gen = np.random.default_rng(seed)
    z = []
    for _ in range(draws):
        weights = gen.dirichlet(np.full(laws.shape[0], 0.3), size=4)  # any honest mix, cohort by cohort
        cells = np.array([gen.multinomial(400, w @ laws) for w in weights])
        z.append(linear_scores(cells[None], psi)[0])
    z = np.asarray(z)
    return int((z >= stats.norm.isf(0.1)).sum()), int((z >= stats.norm.isf(0.01)).sum())


def test_the_linear_statistic_is_at_its_level_on_any_honest_mix() -> None:
    """Honest cells drawn exactly from random mixes of the binned type laws (their exactness: above), 4 cohorts of
    400 reports, 400 draws, for the two-sided weights (mean 0 under every type) and the one-sided ones the test uses
    (mean <= 0): z reaches the N(0, 1) quantile of 0.1 at most 58 times (a rate of 0.1 exceeds that with
    probability 4e-3) and of 0.01 at most 10 times (1e-3). Weights that ignore the honest types' means (fitted to
    one type only: a broken null) fail it."""
    params = WIDE
    laws, fake = candidate_laws(params, True)
    exact = [al == be for al, be, _ in pair_types(params)]
    psi = null_free_weights(laws, fake, reference_law(params) @ laws)
    one = one_sided_weights(laws, fake, reference_law(params) @ laws, exact)
    assert np.abs(laws @ psi).max() < 1e-9 and fake @ psi == pytest.approx(1.0)
    assert (laws @ one).max() < 1e-9 and fake @ one == pytest.approx(1.0) and (laws @ one).min() < -1e-3
    for weights, seed in ((psi, 1), (one, 2)):
        over10, over01 = _honest_exceedances(params, weights, 400, seed)
        assert over10 <= 58 and over01 <= 10
    broken = null_free_weights(laws[-1:], fake, reference_law(params) @ laws)
    assert _honest_exceedances(params, broken, 400, 1)[0] > 58


def test_one_bin_has_no_mean_test() -> None:
    """With one bin the cells are 2 x 2 and the fake law is in the span of the type laws: no weights exist."""
    params = _params(16, 32)
    matrix = bin_matrix(params, np.zeros(17, np.intp))
    laws, fake = pair_type_laws(params) @ matrix, pair_fake_law(params) @ matrix
    assert not null_free_weights(laws, fake, reference_law(params) @ laws).any()


@pytest.mark.parametrize("seed", [1, 2])
def test_a_disguised_target_is_flagged_from_the_bins(seed: int) -> None:
    """5 % fake users for one target at n = 20,000, k = 16, m = 32 (no pair_grid): the candidates' test reads
    pair_bins and names the target; an honest window of the same seed passes."""
    cands = synthetic_rappor_candidates(WIDE, 64)
    window = disguised_window(WIDE, "single", rng=seed, gain=False)
    source = candidate_source(window.aggregate)  # m = 32: the fold's two halves, adding up to pair_bins
    assert source.shape == (2, *window.aggregate.pair_bins.shape) and source[0].any() and source[1].any()
    assert np.array_equal(source.sum(axis=0), window.aggregate.pair_bins)
    check = {c.name: c for c in candidate_evidence(window.aggregate, cands).checks}["pair_candidates"]
    assert check.suspicious and repr(window.targets[0]) in check.message
    honest = disguised_window(WIDE, "honest", rng=seed, gain=False)
    assert not candidate_evidence(honest.aggregate, cands).suspicious


def test_merged_aggregates_add_their_bins_and_old_files_load_without_them() -> None:
    """Two folds merged hold the sum of their pair_bins; a file written before pair_bins existed loads, with zeros,
    and the candidates' test is then not run (the aggregate's checks are)."""
    cols = disguised_reports(WIDE, ["t0"], 3000, 7)
    batch = ReportBatch(WIDE.protocol, WIDE.fingerprint, WIDE.schema, cols)
    one, two = RapporAggregate(WIDE), RapporAggregate(WIDE)
    one.add(batch)
    two.add(batch)
    assert np.array_equal(one.copy().merge(two).pair_bins, 2 * one.pair_bins) and one.pair_bins[:, :, 0].sum() == 3000
    from ldp.decoders.aggregate_file import write_aggregate

    def without(*names: str) -> Aggregate:
        layout = {k: v for k, v in one._full_layout().items() if k not in names}
        return Aggregate.from_bytes(write_aggregate(one.params, one.n, one.rejected, layout,
                                                    {k: v for k, v in one._state().items() if k not in names}))

    old = without("pair_bins", "pair_halves")
    assert isinstance(old, RapporAggregate) and not old.pair_bins.any() and candidate_source(old) is None
    names = [c.name for c in candidate_evidence(old, synthetic_rappor_candidates(WIDE, 8)).checks]
    assert "pair_candidates" not in names
    halfless = without("pair_halves")  # written before the halves existed: pair_bins alone, the linear sum
    assert not halfless.pair_halves.any() and candidate_source(halfless) is halfless.pair_bins
    assert np.array_equal(candidate_source(one.copy().merge(halfless)).sum(axis=0), 2 * one.pair_bins)


def test_wide_filters_keep_bins_only_when_told() -> None:
    """k = 128: a fold without candidates leaves pair_bins at zero (the fold's cost unchanged); told
    (keep_pairs, as a fold of a metric with candidates), it counts every report."""
    params = _params(128, 4)
    cols = disguised_reports(params, ["t0"], 500, 3)
    batch = ReportBatch(params.protocol, params.fingerprint, params.schema, cols)
    plain, told = RapporAggregate(params), RapporAggregate(params)
    told.keep_pairs = True
    plain.add(batch)
    told.add(batch)
    assert not plain.pair_bins.any() and told.pair_bins[:, :, 0].sum() == 500


def test_few_cohorts_and_many_bins_take_the_likelihood_ratio() -> None:
    """k = 64, m = 16 (30 bins of L, no pair_grid): the candidates' test is the common-share likelihood ratio on the
    binned cells, and 5 % fake users for one target at n = 20,000 are flagged by it (the ratio is about 60 where the
    threshold is 18; it fails if the binned path drops back to the linear sum, whose message differs)."""
    params = _params(64, 16)
    cands = synthetic_rappor_candidates(params, 64)
    window = disguised_window(params, "single", rng=5, gain=False)
    check = {c.name: c for c in candidate_evidence(window.aggregate, cands).checks}["pair_candidates"]
    assert check.suspicious and "likelihood ratio" in check.message and "30 bins" in check.message


def _honest_halves(params: RapporParams, draws: int, cohorts: int, reports: int,
                   seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``draws`` candidates' honest cells (exact, k = 8) in ``cohorts`` cohorts of ``reports`` each, each cohort's
    mix of the full-filter types drawn at random around a typical pair's (both bits 1 %, each alone 10 %), split
    by a fair coin: ``(halves (2, D, G, C), laws)``."""
    laws = pair_type_laws(params)
    kinds = pair_types(params)
    base = np.array([{(1, 1, 0): 0.01, (1, 0, 1): 0.1, (0, 1, 1): 0.1, (0, 0, 2): 0.79}.get(t, 0.0) for t in kinds])
    gen = np.random.default_rng(seed)
    mix = gen.dirichlet(base * 30, size=(draws, cohorts)) @ laws
    cells = np.stack([[gen.multinomial(reports, mix[d, g]) for g in range(cohorts)] for d in range(draws)])
    half = gen.binomial(cells, 0.5)
    return np.stack([half, cells - half]).astype(np.float64), laws


@pytest.mark.parametrize("steps", [3, 30])
def test_cross_fitted_weights_keep_the_level_whatever_the_fit(steps: int) -> None:
    """k = 8, 64 cohorts of 300 honest reports, 200 candidates' cells drawn exactly from random mixes of the honest
    types, fits of 3 EM steps (far from converged) and 30, from a uniform prior: every fitted weight has mean <= 0
    under every honest type (ripr_weights' normalisation by max_t D_t, whatever the fit), a fake report's mean is
    positive, and the cross-fitted z reaches the N(0, 1) point of 0.01 at most 7 times in 200 (a rate of 0.01
    exceeds that with probability 1e-3) and of 0.1 at most 32 times (3e-3). Without the normalisation (q/p − 1 at
    a rough p) the means are positive (up to 0.15 at 3 steps, 0.016 at 30) and at 3 steps z passes the 0.01 point
    in all 200 draws."""
    params = _params(8, 64)
    halves, laws = _honest_halves(params, 200, 64, 300, seed=steps)
    fake = pair_fake_law(params)
    prior = np.full((2, 200, 64, laws.shape[0]), 1.0 / laws.shape[0])
    psi = ripr_weights(halves[0], laws, fake, prior[0], steps)
    assert np.einsum("dgc,tc->dgt", psi, laws).max() <= 1e-9 and (psi @ fake).min() > 0
    z = cross_fit_scores(halves, laws, fake, prior, steps)
    assert (z >= stats.norm.isf(0.01)).sum() <= 7 and (z >= stats.norm.isf(0.1)).sum() <= 32
    assert stats.binom.sf(7, 200, 0.01) < 2e-3 and stats.binom.sf(32, 200, 0.1) < 5e-3


def test_sixty_four_cohorts_pool_into_runs_for_the_ratio() -> None:
    """k = 16, m = 64, n = 20,000 (17 bins), two targets taken in turn by 5 % fake users: the fold keeps two halves
    (pair_halves, the same shape as pair_bins), and the candidates' test sums them, pools the 64 cohorts into 16
    runs and takes the likelihood ratio there (its message says so; the cross-fitted sum it replaced flagged 7 of 20
    such windows); an honest window of the same seed passes."""
    params = _params(16, 64)
    assert pair_halves_shape(params) == pair_bins_shape(params) and pair_halves_shape(WIDE.__class__(
        num_bloombits=16, num_hashes=2, num_cohorts=16, p=0.25, q=0.75, f=0.5)) == (0, 0, 0)
    cands = synthetic_rappor_candidates(params, 64)
    window = disguised_window(params, "alternating", rng=3, gain=False)
    check = {c.name: c for c in candidate_evidence(window.aggregate, cands).checks}["pair_candidates"]
    assert check.suspicious and "likelihood ratio" in check.message and "summed in 16 runs" in check.message
    assert any(repr(t) in check.message for t in window.targets)
    honest = disguised_window(params, "honest", rng=3, gain=False)
    assert not candidate_evidence(honest.aggregate, cands).suspicious


def test_pooling_keeps_the_ratio_at_its_level_over_sixty_four_cohorts() -> None:
    """An honest window of k = 32, m = 64, n = 10⁵ (33 bins): the ratio over the 64 cohorts one by one reaches a
    Bonferroni p of 0.001 (each cohort's honest fit on its faces gains a little, and 64 of them add up: beyond the
    check's share of the level, 0.01/7), while over the same cells pooled in 16 runs it stays at p = 1, and the
    candidates' test (which pools) passes."""
    from ldp.jobs.rappor_candidate_test import _distinct, _grid_statistic
    from ldp.jobs.rappor_pair_law import PAIR_MIN, candidate_cells, candidate_pairs
    from ldp.jobs.rappor_shared_share import pooled_cohorts

    params = _params(32, 64)
    cands = synthetic_rappor_candidates(params, 64)
    window = disguised_window(params, "honest", n=100_000, rng=5, gain=False)
    whole = np.asarray(candidate_source(window.aggregate)).sum(axis=0)
    laws, fake = candidate_laws(params, True)
    pairs = candidate_pairs(params, cands)
    used = np.flatnonzero(whole[:, :, 0].sum(axis=1) >= PAIR_MIN)
    rows = _distinct(params, pairs, used)
    cells = candidate_cells(params, whole, pairs[rows], used)
    alone = _grid_statistic(params, cells, laws, fake, rows.size, whole.shape[1], 8)[2]
    pooled = _grid_statistic(params, pooled_cohorts(cells, 16), laws, fake, rows.size, whole.shape[1], 8)[2]
    assert alone < 0.002 and pooled > 0.5
    assert not {c.name: c for c in candidate_evidence(window.aggregate, cands).checks}["pair_candidates"].suspicious


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 70), st.integers(1, 6), st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_pooled_cohorts_sum_runs_of_consecutive_cohorts(d: int, g: int, c: int, runs: int, seed: int) -> None:
    """pooled_cohorts keeps every count (its runs sum to the cohorts' total), puts consecutive cohorts in each run,
    their sizes within one of each other, and refuses cells of another rank or fewer than one run."""
    from ldp.jobs.rappor_shared_share import pooled_cohorts

    cells = np.random.default_rng(seed).integers(0, 50, (d, g, c)).astype(np.float64)
    out = pooled_cohorts(cells, runs)
    assert out.shape == (d, min(g, runs), c) and np.array_equal(out.sum(axis=1), cells.sum(axis=1))
    edges = np.searchsorted(np.arange(g) * out.shape[1] // g, np.arange(out.shape[1] + 1))
    assert np.diff(edges).min() >= 1 and np.diff(edges).max() - np.diff(edges).min() <= 1
    for r in range(out.shape[1]):
        assert np.array_equal(out[:, r], cells[:, edges[r]:edges[r + 1]].sum(axis=1))
    with pytest.raises(ValueError, match="cells must be"):
        pooled_cohorts(cells[0], runs)
    with pytest.raises(ValueError, match="runs must be"):
        pooled_cohorts(cells, 0)


def test_few_bins_beyond_sixteen_cohorts_take_the_cross_fitted_test() -> None:
    """k = 64, m = 64 (7 bins of L: too few for the ratio), n = 20,000, 5 % fake users for one target: the
    candidates' test reads the fold's two halves and flags the target by the cross-fitted sum (its message says
    so; it fails if the path drops back to the linear sum on pair_bins or to the ratio)."""
    params = _params(64, 64)
    cands = synthetic_rappor_candidates(params, 64)
    window = disguised_window(params, "single", rng=3, gain=False)
    check = {c.name: c for c in candidate_evidence(window.aggregate, cands).checks}["pair_candidates"]
    assert check.suspicious and "two halves" in check.message and repr(window.targets[0]) in check.message


def test_the_honest_prior_is_the_mix_the_candidates_give(monkeypatch: pytest.MonkeyPatch) -> None:
    """An honest window (k = 16, m = 64, n = 20,000, Zipf over 64 candidates): from half A's counts alone,
    honest_prior gives each tested candidate's pair the honest type mix its cohort sees (the population's expected
    mix, rappor_power_bound's) within 0.15 in L1 on average (0.09 measured), where a filter drawn at random is 0.35
    off; with only 16 candidates' frequencies estimated (PRIOR_CANDIDATES) it still sums to 1 per cohort. The
    candidates' bits of the wrong cohort (shifted by one) give 0.30 and fail it."""
    from ldp.batch.rappor import bloom_index_table
    from ldp.jobs import rappor_cross_fit
    from ldp.jobs.rappor_pair_law import candidate_pairs
    from ldp.jobs.rappor_power_bound import _honest_mix, _population

    params = _params(16, 64)
    cands = synthetic_rappor_candidates(params, 64)
    window = disguised_window(params, "honest", rng=4, gain=False)
    half = candidate_source(window.aggregate)[0]
    own, used = np.array([8, 20, 40]), np.arange(64)
    pairs, kinds = candidate_pairs(params, cands), pair_types(params)
    prior = rappor_cross_fit.honest_prior(params, half, bloom_index_table(params, cands), pairs[own], own, used,
                                          np.zeros(3), kinds)
    idx, pmf, _ = _population(params, 64)
    truth = np.array([[_honest_mix(params, idx, pmf, g, *pairs[s, g]) if pairs[s, g, 0] >= 0 else prior[i, g]
                       for g in used] for i, s in enumerate(own)])
    blind = rappor_cross_fit._random_filter_types(params, kinds)
    assert np.abs(prior - truth).sum(axis=2).mean() < 0.15 < 0.3 < np.abs(blind - truth).sum(axis=2).mean()
    monkeypatch.setattr(rappor_cross_fit, "PRIOR_CANDIDATES", 16)
    few = rappor_cross_fit.honest_prior(params, half, bloom_index_table(params, cands), pairs[own], own, used,
                                        np.zeros(3), kinds)
    assert np.allclose(few.sum(axis=2), 1.0) and few.min() >= 0
