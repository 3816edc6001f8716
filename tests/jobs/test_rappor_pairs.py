"""The promoted-pair test and the cohort-count test of RAPPOR (issue 72, item 6): their null laws exact on tiny
configurations, the fold's pair cells additive and read back from older files, and disguised attacks flagged at
fixed seeds (their power over 200 windows is measured by simulations/bench_rappor_poisoning.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats
from support.aggregate_files import rappor_file

from ldp.batch.rappor_pair_score import _design, _features
from ldp.batch.rappor_pairs import (
    PairChoice,
    cell_of,
    cohort_grids,
    grid_moments,
    pair_cells_shape,
    score_coefficients,
)
from ldp.decoders.base import Aggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.rappor import RapporParams
from ldp.jobs.poisoning import poisoning_evidence
from ldp.jobs.rappor_poisoning import (
    cohort_reports_check,
    pair_fake_law,
    pair_law_check,
    pair_likelihood_ratio,
    pair_type_laws,
    pair_types,
    report_pair_cells,
    sum_of_dominated_sf,
)
from ldp.simulation.rappor_disguise import disguised_reports, disguised_window

ISSUE = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.25, q=0.75, f=0.5)
TINY = [RapporParams(num_bloombits=5, num_hashes=2, num_cohorts=2, p=0.25, q=0.75, f=0.5),
        RapporParams(num_bloombits=6, num_hashes=3, num_cohorts=1, p=0.3, q=0.8, f=0.25)]


def _report_law(params: RapporParams, filt: set[int]) -> dict[tuple[int, ...], float]:
    """Every report of ``k`` bits and its probability for a client whose filter is ``filt`` (bits independent,
    ``q*`` inside, ``p*`` outside): the exact law, by enumeration."""
    k, ps, qs = params.num_bloombits, params.p_star, params.q_star
    out = {}
    for x in itertools.product((0, 1), repeat=k):
        out[x] = math.prod((qs if i in filt else ps) if b else (1 - (qs if i in filt else ps)) for i, b in enumerate(x))
    return out


@pytest.mark.parametrize("params", TINY)
def test_every_honest_filter_gives_one_of_the_type_laws(params: RapporParams) -> None:
    """For every filter (1 to h bits) and the pair (0, 1), the law of the cell (x_0, x_1, R) by enumeration of all
    2^k reports is exactly the row of pair_type_laws for the filter's type; the fake law puts everything on
    x_0 = x_1 = 1."""
    k, h = params.num_bloombits, params.num_hashes
    laws = pair_type_laws(params)
    types = pair_types(params)
    assert len(types) == laws.shape[0] and np.allclose(laws.sum(axis=1), 1.0)
    for size in range(1, h + 1):
        for filt in itertools.combinations(range(k), size):
            law = np.zeros(4 * (k - 1))
            for x, pr in _report_law(params, set(filt)).items():
                law[cell_of(np.array([x[0]]), np.array([x[1]]), np.array([sum(x) - x[0] - x[1]]), k)[0]] += pr
            kind = (int(0 in filt), int(1 in filt), len(set(filt) - {0, 1}))
            assert np.allclose(law, laws[types.index(kind)], atol=1e-14), (filt, kind)
    fake = pair_fake_law(params)
    assert fake.sum() == pytest.approx(1.0) and fake[:3 * (k - 1)].sum() == 0.0


@pytest.mark.parametrize("params", TINY + [ISSUE])
def test_the_choice_statistic_has_mean_zero_for_every_honest_filter(params: RapporParams) -> None:
    """ψ (score_coefficients) has mean exactly 0 under each honest type law and 1 under the disguised fake law
    (the features' means: the columns of _design's A and F)."""
    beta, var = score_coefficients(params)
    a, f, _ = _design(params)
    assert np.allclose(beta.ravel() @ a, 0.0, atol=1e-8) and beta.ravel() @ f == pytest.approx(1.0)
    assert var > 0


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(2, 12), seed=st.integers(0, 2**32 - 1))
def test_moments_and_features_are_the_sums_they_name(n: int, k: int, seed: int) -> None:
    """The moments the fold scores pairs on (``grid_moments`` of the reports' grid) against the sums written out, and
    each pair's features against the reports' cells counted."""
    gen = np.random.default_rng(seed)
    x = (gen.random((n, k)) < 0.4).astype(np.uint8)
    ones = x.sum(axis=1).astype(np.int64)
    mom = grid_moments(cohort_grids(np.zeros(n, np.uint8), np.packbits(x, axis=1, bitorder="little"), k, 1))[0]
    a = np.column_stack([np.ones(n, np.int64), x.astype(np.int64)])
    for j in range(3):
        assert (mom[j] == a.T @ (a * ones[:, None] ** j)).all()
    feats = _features(mom)
    i, j = sorted(gen.choice(k, 2, replace=False).tolist())
    rest = ones - x[:, i] - x[:, j]
    for g, (xa, xb) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        rows = (x[:, i] == xa) & (x[:, j] == xb)
        want = [float((rest[rows] ** p).sum()) for p in range(3)]
        assert [feats[g, p, i, j] for p in range(3)] == pytest.approx(want)


@pytest.mark.parametrize("n,m", [(9, 3), (12, 2), (10, 4)])
def test_the_cohort_count_test_is_exact_at_its_level(n: int, m: int) -> None:
    """Every way n clients fall in m uniform cohorts (the multinomial, enumerated): the probability the test flags
    is at most alpha, at several alphas, and reaches a good part of it at one."""
    params = RapporParams(num_bloombits=8, num_hashes=2, num_cohorts=m, p=0.25, q=0.75, f=0.5)
    for alpha in (0.01, 0.05, 0.2, 0.5):
        flagged = 0.0
        for counts in itertools.product(range(n + 1), repeat=m - 1):
            last = n - sum(counts)
            if last < 0:
                continue
            c = np.array([*counts, last])
            if cohort_reports_check(params, c, alpha).suspicious:
                flagged += stats.multinomial.pmf(c, n, [1.0 / m] * m)
        assert flagged <= alpha + 1e-12, (alpha, flagged)


@given(cohort=st.lists(st.integers(0, 10_000), min_size=2, max_size=8), alpha=st.floats(1e-6, 0.5))
def test_the_cohort_count_test_takes_any_counts(cohort: list[int], alpha: float) -> None:
    params = RapporParams(num_bloombits=8, num_hashes=2, num_cohorts=len(cohort), p=0.25, q=0.75, f=0.5)
    check = cohort_reports_check(params, np.array(cohort), alpha)
    assert 0.0 <= check.p_value <= 1.0 and check.name == "cohort_reports"
    assert check.statistic == max(cohort)


@pytest.mark.parametrize("terms,t", [(1, 3.0), (4, 9.5), (4, 20.0), (10, 30.0)])
def test_the_sum_of_chi_squares_bound_is_conservative_and_tight(terms: int, t: float) -> None:
    """With one slot the dominating laws are χ²₁ and their sum is exactly χ²_terms: the grid bound is never below
    it and within a grid step of it; with two slots (Bonferroni) it is larger."""
    p, mean, sd = sum_of_dominated_sf(t, terms, 1, step=0.01)
    exact = float(stats.chi2.sf(t, terms))
    assert exact <= p <= float(stats.chi2.sf(t - terms * 0.01, terms)) + 1e-9
    assert mean == pytest.approx(terms, rel=0.01) and sd == pytest.approx(math.sqrt(2 * terms), rel=0.02)
    assert sum_of_dominated_sf(t, terms, 2, step=0.01)[0] >= p


def test_the_ratio_is_zero_at_an_honest_mixture_and_large_with_fake_reports() -> None:
    laws, fake = pair_type_laws(ISSUE), pair_fake_law(ISSUE)
    mixture = 0.7 * laws[-1] + 0.2 * laws[2] + 0.1 * laws[0]
    assert pair_likelihood_ratio(5000 * mixture, laws, fake) == pytest.approx(0.0, abs=1e-3)
    assert pair_likelihood_ratio(4750 * mixture + 250 * fake, laws, fake) > 20  # its noncentrality: about 29
    assert pair_likelihood_ratio(np.zeros_like(fake), laws, fake) == 0.0


def test_honest_windows_flag_the_pair_test_at_most_at_its_level() -> None:
    """40 honest windows of 4,000 reports (Zipf over 64 candidates), the pair test alone at alpha = 0.25: at most
    16 flagged (an honest rate of 0.25 exceeds that with probability 0.012; a real rate of 0.5 stays within it
    with probability 0.13)."""
    gen = np.random.default_rng(20)
    flagged = 0
    for _ in range(40):
        agg = disguised_window(ISSUE, "honest", n=4000, rng=gen, gain=False).aggregate
        flagged += pair_law_check(ISSUE, agg.pair_cells, 0.25, agg.n).suspicious
    assert flagged <= 16


@pytest.mark.parametrize("attack,seed", [("single", 1), ("one-cohort", 1)])
def test_a_disguised_attack_is_flagged(attack: str, seed: int) -> None:
    """5 % fake users at n = 20,000 (k = 16, h = 2, m = 4), their 1s from the honest law: flagged by the
    aggregate alone at the default level, the single target by the pair test, the one-cohort attack by the
    cohort counts too."""
    window = disguised_window(ISSUE, attack, rng=seed, gain=False)
    ev = poisoning_evidence(window.aggregate)
    checks = {c.name: c for c in ev.checks}
    assert ev.suspicious
    assert checks["pair_law"].suspicious or attack == "one-cohort"
    assert checks["cohort_reports"].suspicious == (attack == "one-cohort")
    assert not checks["ones_tails"].suspicious and not checks["ones_spike"].suspicious  # the disguise holds


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_honest_windows_are_not_flagged(seed: int) -> None:
    window = disguised_window(ISSUE, "honest", rng=seed, gain=False)
    assert not poisoning_evidence(window.aggregate).suspicious


def test_disguised_reports_set_the_targets_bits_and_look_honest_in_number() -> None:
    from ldp.batch.bits import popcounts
    from ldp.batch.rappor import bloom_index_table

    cols = disguised_reports(ISSUE, ["t0"], 4000, 3)
    x = np.unpackbits(cols["bits"], axis=1, count=16, bitorder="little")
    idx = bloom_index_table(ISSUE, ["t0"])[0]
    assert all(x[i, idx[c]].all() for i, c in enumerate(cols["cohort"].tolist()))
    ones = popcounts(cols["bits"], 16)
    law = np.convolve(stats.binom.pmf(np.arange(3), 2, ISSUE.q_star), stats.binom.pmf(np.arange(15), 14, ISSUE.p_star))
    assert abs(ones.mean() - (np.arange(17) * law).sum()) < 0.1
    one_bit = disguised_reports(ISSUE, ["t0"], 200, 3, one_bit=True, cohort=2)
    assert (one_bit["cohort"] == 2).all()


def test_pair_cells_merge_by_sum_and_count_each_tested_report_once_per_slot() -> None:
    gen = np.random.default_rng(4)
    cols = disguised_reports(ISSUE, ["t0"], 3000, gen)
    whole = report_pair_cells(ISSUE, cols, 5)
    assert whole.shape == pair_cells_shape(ISSUE) and (whole >= 0).all()
    per = whole.sum(axis=2)
    assert (per == per[:, :1]).all() and 0 < per[:, 0].sum() <= 3000
    a, b = RapporAggregate(ISSUE), RapporAggregate(ISSUE)
    a._pairs, b._pairs = PairChoice(ISSUE, 1), PairChoice(ISSUE, 2)
    from ldp.reports import ReportBatch

    a.add(ReportBatch(ISSUE.protocol, ISSUE.fingerprint, ISSUE.schema, cols))
    b.add(ReportBatch(ISSUE.protocol, ISSUE.fingerprint, ISSUE.schema, cols))
    merged = a.copy().merge(b)
    assert (merged.pair_cells == a.pair_cells + b.pair_cells).all()
    back = Aggregate.from_bytes(merged.to_bytes())
    assert isinstance(back, RapporAggregate) and (back.pair_cells == merged.pair_cells).all()


def _file_without_pair_cells(agg: RapporAggregate) -> bytes:
    """The aggregate's file as written before the pair cells existed (its totals, ones_hist and together)."""
    layout = {**agg.state_layout(agg.params), **{k: v for k, v in agg.report_layout(agg.params).items()
                                                 if k in ("ones_hist", "together")}}
    return rappor_file(agg, layout)


def test_a_file_written_before_the_pair_cells_is_tested_by_what_it_has() -> None:
    from ldp.reports import ReportBatch

    agg = RapporAggregate(ISSUE)
    agg.add(ReportBatch(ISSUE.protocol, ISSUE.fingerprint, ISSUE.schema,
                        disguised_reports(ISSUE, ["t0"], 3000, 6)))
    old = Aggregate.from_bytes(_file_without_pair_cells(agg))
    assert isinstance(old, RapporAggregate) and not old.pair_cells.any() and (old.ones_hist == agg.ones_hist).all()
    names = [c.name for c in poisoning_evidence(old).checks]
    assert names == ["ones_total", "ones_cohort", "cohort_reports", "ones_tails", "ones_spike", "bits_together"]
    assert [c.name for c in poisoning_evidence(old.copy().merge(agg)).checks][-1] == "pair_law"


@pytest.mark.parametrize("damage", ["negative", "above the cohort", "slots unequal"])
def test_pair_cells_no_fold_can_make_are_left_out(damage: str) -> None:
    from ldp.reports import ReportBatch

    agg = RapporAggregate(ISSUE)
    agg.add(ReportBatch(ISSUE.protocol, ISSUE.fingerprint, ISSUE.schema, disguised_reports(ISSUE, ["t0"], 3000, 7)))
    bad = agg.copy()
    if damage == "negative":
        bad.pair_cells[0, 0, 3] = -1
    elif damage == "above the cohort":
        bad.pair_cells[0, :, 3] += 10_000
    else:
        bad.pair_cells[1, 0, 3] += 1
    assert "pair_law" not in [c.name for c in poisoning_evidence(bad).checks]


def test_filters_of_more_than_64_bits_keep_no_pair_cells() -> None:
    """The moments cost O(k²) per report: for k > 64 the fold keeps none, the file carries none, no pair test runs."""
    from ldp.reports import ReportBatch

    params = RapporParams(num_bloombits=128, num_hashes=2, num_cohorts=8, p=0.25, q=0.75, f=0.5)
    assert pair_cells_shape(params) == (0, 0, 0)
    gen = np.random.default_rng(0)
    agg = RapporAggregate(params)
    agg.add(ReportBatch(params.protocol, params.fingerprint, params.schema,
                        {"cohort": gen.integers(0, 8, 3000).astype(np.uint8),
                         "bits": gen.integers(0, 256, (3000, 16)).astype(np.uint8)}))
    back = Aggregate.from_bytes(agg.to_bytes())
    assert isinstance(back, RapporAggregate) and back.pair_cells.size == 0
    assert "pair_law" not in [c.name for c in poisoning_evidence(back).checks]
