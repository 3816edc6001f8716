"""The candidates' own pairs (issue 72, item 6): every pair's cells kept by the fold (``pair_grid``, additive, exact
against the reports), the common-share ratio at its level on honest draws of tiny configurations, the candidate test
in ``ldp decode``'s checks, and the alternating two-target attack flagged at fixed seeds (power over 200 windows:
simulations/bench_rappor_poisoning.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ldp.batch.rappor import bloom_index_table
from ldp.batch.rappor_pairs import add_pair_grid, cell_of, grid_cells, grid_enabled, pair_grid_shape, pairs_enabled
from ldp.decoders.base import Aggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import synthetic_rappor_candidates
from ldp.encoders.rappor import RapporParams
from ldp.jobs.poisoning import poisoning_evidence
from ldp.jobs.rappor_poisoning import (
    candidate_evidence,
    candidate_evidence_summary,
    candidate_pair_check,
    candidate_pairs,
    common_share_ratio,
    pair_fake_law,
    pair_type_laws,
)
from ldp.reports import ReportBatch
from ldp.simulation.rappor_disguise import disguised_reports, disguised_window

ISSUE = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.25, q=0.75, f=0.5)
CANDS = synthetic_rappor_candidates(ISSUE, 64)


def _batch(params: RapporParams, cols: dict) -> ReportBatch:
    return ReportBatch(params.protocol, params.fingerprint, params.schema, cols)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 300), k=st.integers(2, 20), m=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_grid_cells_are_the_cells_of_the_reports(n: int, k: int, m: int, seed: int) -> None:
    """For random reports (any bits, padding included), every pair's cells from the grid equal the cells counted
    report by report, and folding in two parts gives the grid of the whole."""
    gen = np.random.default_rng(seed)
    cohorts = gen.integers(0, m, n)
    rows = gen.integers(0, 256, (n, (k + 7) // 8)).astype(np.uint8)
    grid = np.zeros((m, k + 1, k + 1, k + 1), np.int64)
    add_pair_grid(cohorts, rows, grid, k)
    parts = np.zeros_like(grid)
    cut = n // 3
    add_pair_grid(cohorts[:cut], rows[:cut], parts, k)
    add_pair_grid(cohorts[cut:], rows[cut:], parts, k)
    assert (parts == grid).all() and grid[:, :, 0, 0].sum() == n
    x = np.unpackbits(rows, axis=1, count=k, bitorder="little").astype(np.int64)
    ones = x.sum(axis=1)
    a, b = np.triu_indices(k, 1)
    for c in range(m):
        sel = cohorts == c
        got = grid_cells(grid[c], a, b)
        for i in gen.choice(a.size, min(a.size, 5), replace=False).tolist():
            xa, xb = x[sel, a[i]], x[sel, b[i]]
            want = np.bincount(cell_of(xa, xb, ones[sel] - xa - xb, k), minlength=4 * (k - 1))
            assert (got[i] == want).all()


def test_the_grid_is_kept_below_its_budget_merges_by_sum_and_reads_back() -> None:
    assert pair_grid_shape(ISSUE) == (4, 17, 17, 17) and grid_enabled(ISSUE)
    big = RapporParams(num_bloombits=64, num_hashes=2, num_cohorts=8, p=0.25, q=0.75, f=0.5)
    assert pair_grid_shape(big) == (0, 0, 0, 0)
    gen = np.random.default_rng(3)
    a, b = RapporAggregate(ISSUE), RapporAggregate(ISSUE)
    a.add(_batch(ISSUE, disguised_reports(ISSUE, ["t0"], 2000, gen)))
    b.add(_batch(ISSUE, disguised_reports(ISSUE, ["t1"], 3000, gen)))
    merged = a.copy().merge(b)
    assert (merged.pair_grid == a.pair_grid + b.pair_grid).all()
    back = Aggregate.from_bytes(merged.to_bytes())
    assert isinstance(back, RapporAggregate) and (back.pair_grid == merged.pair_grid).all()
    assert back.pair_grid[:, :, 0, 0].sum() == 5000


def test_candidate_pairs_are_each_candidates_first_two_distinct_bits() -> None:
    params = RapporParams(num_bloombits=4, num_hashes=3, num_cohorts=3, p=0.25, q=0.75, f=0.5)
    names = [f"v{i}" for i in range(40)]
    idx = bloom_index_table(params, names)
    pairs = candidate_pairs(params, names)
    assert pairs.shape == (40, 3, 2)
    collided = 0
    for v in range(40):
        for c in range(3):
            seen = list(dict.fromkeys(idx[v, c].tolist()))
            if len(seen) < 2:
                assert (pairs[v, c] == -1).all()
                collided += 1
            else:
                assert pairs[v, c].tolist() == sorted(seen[:2])
    assert collided > 0  # 4 bits, 3 hashes: some candidates hash to one bit


def test_the_common_share_ratio_is_zero_at_an_honest_mixture_and_large_with_fake_reports() -> None:
    laws, fake = pair_type_laws(ISSUE), pair_fake_law(ISSUE)
    mix = [0.7 * laws[-1] + 0.3 * laws[0], 0.6 * laws[-1] + 0.3 * laws[2] + 0.1 * laws[0]]
    honest = np.array([5000 * w for w in mix])
    assert common_share_ratio(honest, laws, fake) == pytest.approx(0.0, abs=2e-3)
    poisoned = np.array([4875 * w + 125 * fake for w in mix])
    each = [common_share_ratio(row[None], laws, fake) for row in poisoned]
    together = common_share_ratio(poisoned, laws, fake)
    assert together >= 0.95 * sum(each) and together > 8  # one share: the cohorts' evidence adds up
    assert common_share_ratio(np.zeros((2, fake.size)), laws, fake) == 0.0


@pytest.mark.parametrize("params,seed", [
    (RapporParams(num_bloombits=5, num_hashes=2, num_cohorts=2, p=0.25, q=0.75, f=0.5), 1),
    (RapporParams(num_bloombits=6, num_hashes=3, num_cohorts=2, p=0.3, q=0.8, f=0.25), 2),
])
def test_the_common_share_ratio_stays_within_chi2_1_on_honest_draws(params: RapporParams, seed: int) -> None:
    """Honest cells drawn exactly from a mixture of the type laws (the null: its laws are checked against every
    filter by enumeration in test_rappor_pairs.py), 2 cohorts of 1,500 reports, 120 draws: the ratio reaches the
    χ²₁ quantile of 0.1 at most 23 times (a rate of 0.1 exceeds that with probability 7.5e-4; the asymptotic law
    ½χ²₀ + ½χ²₁ gives 0.05), and its 0.01 quantile at most 5 times (a rate of 0.01: exceeded with 1.4e-3)."""
    laws, fake = pair_type_laws(params), pair_fake_law(params)
    gen = np.random.default_rng(seed)
    over10 = over01 = 0
    for _ in range(120):
        weights = gen.dirichlet(np.full(laws.shape[0], 0.5), size=2)
        cells = np.array([gen.multinomial(1500, w @ laws) for w in weights])
        t = common_share_ratio(cells, laws, fake)
        over10 += t >= stats.chi2.isf(0.1, 1)
        over01 += t >= stats.chi2.isf(0.01, 1)
    assert over10 <= 23 and over01 <= 5


def test_a_candidate_test_with_no_tested_cohort_is_ok() -> None:
    grid = np.zeros(pair_grid_shape(ISSUE), np.int64)
    check = candidate_pair_check(ISSUE, grid, CANDS, 0.01, 0)
    assert check.name == "pair_candidates" and check.verdict == "ok" and check.p_value == 1.0


@pytest.mark.parametrize("seed", [1, 2])
def test_the_alternating_attack_is_flagged_with_the_candidates(seed: int) -> None:
    """5 % fake users alternating two targets at n = 20,000: flagged by the candidates' own pairs, which name a
    target; the chosen-pair check is left out of that family (the candidate check in its place)."""
    window = disguised_window(ISSUE, "alternating", rng=seed, gain=False)
    ev = candidate_evidence(window.aggregate, CANDS)
    checks = {c.name: c for c in ev.checks}
    assert ev.suspicious and checks["pair_candidates"].suspicious and "pair_law" not in checks
    assert any(repr(t) in checks["pair_candidates"].message for t in window.targets)
    assert len(ev.checks) == len(poisoning_evidence(window.aggregate).checks)  # the same family size


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_honest_windows_are_not_flagged_with_the_candidates(seed: int) -> None:
    window = disguised_window(ISSUE, "honest", rng=seed, gain=False)
    summary = candidate_evidence_summary(window.aggregate, CANDS)
    assert summary is not None and summary["verdict"] == "ok"
    assert [c["name"] for c in summary["checks"]][-1] == "pair_candidates"


@pytest.mark.parametrize("damage", ["negative", "bits beyond their count", "together beyond a bit"])
def test_a_grid_no_fold_can_make_is_left_out(damage: str) -> None:
    agg = RapporAggregate(ISSUE)
    agg.add(_batch(ISSUE, disguised_reports(ISSUE, ["t0"], 3000, 7)))
    bad = agg.copy()
    if damage == "negative":
        bad.pair_grid[0, 3, 0, 0] = -1
    elif damage == "bits beyond their count":
        bad.pair_grid[0, 3, 0, 5] += 1
    else:
        bad.pair_grid[0, 3, 2, 5] = bad.pair_grid[0, 3, 0, 2] + 1
    names = [c.name for c in candidate_evidence(bad, CANDS).checks]
    assert "pair_candidates" not in names and "pair_law" in names
    assert "pair_candidates" in [c.name for c in candidate_evidence(agg, CANDS).checks]


@settings(max_examples=40, deadline=None)
@given(k=st.integers(2, 20), m=st.integers(1, 5), n=st.integers(0, 300), seed=st.integers(0, 2**32 - 1),
       some=st.booleans())
def test_grids_by_value_histogram_equal_the_grids_multiplied_out(k: int, m: int, n: int, seed: int,
                                                                 some: bool) -> None:
    """The histogram path of ``cohort_grids`` (counts by filter value, each value's outer product weighted) equals
    the path that multiplies the reports out, exactly, with or without a selection; padding bits are ignored."""
    import ldp.batch.rappor_pairs as rp

    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 256, (n, (k + 7) // 8), dtype=np.uint8)  # padding bits set at random too
    cohorts = rng.integers(0, m, n)
    keep = rng.random(n) < 0.5 if some else None
    saved = rp.HISTOGRAM_BINS
    got = []
    try:
        rp.VALUES_PER_REPORT = math.inf  # by value whatever the batch's size
        for bins in (saved, 4 << k, 0):  # by value, all cohorts at once; by value, two cohorts at a time; multiplied
            rp.HISTOGRAM_BINS = bins
            got.append(rp.cohort_grids(cohorts, rows, k, m, keep))
    finally:
        rp.HISTOGRAM_BINS, rp.VALUES_PER_REPORT = saved, 1.0
    assert np.array_equal(got[0], got[2]) and np.array_equal(got[1], got[2])


@settings(max_examples=25, deadline=None)
@given(k=st.integers(2, 20), m=st.integers(1, 4), sizes=st.lists(st.integers(0, 400), min_size=1, max_size=4),
       seed=st.integers(0, 2**32 - 1))
def test_pair_choice_by_value_histogram_equals_report_by_report(k: int, m: int, sizes: list[int],
                                                                 seed: int) -> None:
    """``PairChoice.add`` counted by filter value (moments, grid, and the tested cells from the tested reports'
    grid) equals the path that goes report by report, batch after batch, with the same coins."""
    import ldp.batch.rappor_pairs as rp

    params = RapporParams(k, 2, m, 0.25, 0.75, 0.5)
    rng = np.random.default_rng(seed)
    batches = [(rng.integers(0, m, n), rng.integers(0, 256, (n, (k + 7) // 8), dtype=np.uint8)) for n in sizes]
    out = []
    for bins in (rp.HISTOGRAM_BINS, 4 << k, 0):
        saved = rp.HISTOGRAM_BINS
        rp.HISTOGRAM_BINS, rp.VALUES_PER_REPORT = bins, math.inf
        try:
            choice = rp.PairChoice(params, rng=seed)
            cells = np.zeros(rp.pair_cells_shape(params), np.int64)
            grid = np.zeros((m, k + 1, k + 1, k + 1), np.int64)
            for cohorts, rows in batches:
                choice.add(cohorts, rows, cells, grid)
            out.append((cells, grid, choice.moments, choice.pairs, choice.chosen))
        finally:
            rp.HISTOGRAM_BINS, rp.VALUES_PER_REPORT = saved, 1.0
    for left, right in ((out[0], out[2]), (out[1], out[2])):
        for a, b in zip(left, right, strict=True):
            assert np.array_equal(a, b)


def test_a_grid_implies_pair_cells() -> None:
    """The fold keeps ``pair_grid`` only where it keeps pair cells (PairChoice.add counts the grid from its split),
    over every filter size and cohort count the grid's budget allows and past it."""
    for k in range(1, 80):
        for m in (1, 2, 4, 8, 16, 64, 256, 1024):
            params = RapporParams(num_bloombits=k, num_hashes=1, num_cohorts=m, p=0.25, q=0.75, f=0.5)
            assert not grid_enabled(params) or pairs_enabled(params), (k, m)
