"""RAPPOR server: aggregate, bit estimates (unbiased, exact variance), simulation paths, decoding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp.decoders.rappor import RapporAggregate, bit_count_variance
from ldp.decoders.rappor_decode import CandidateMap, decode, exact_count_covariance
from ldp.encoders.rappor import RapporEncoder, RapporParams, bloom_filter
from ldp.reports import Report
from ldp.simulation.collect import simulate

DEMO = RapporParams(16, 2, 8, 0.5, 0.75, 0.5)


def _naive_counts(params, cohort, bits):
    unpacked = np.unpackbits(bits, axis=1, bitorder="little")[:, : params.num_bloombits]
    ones = np.zeros((params.num_cohorts, params.num_bloombits), np.int64)
    np.add.at(ones, cohort.astype(np.int64), unpacked)
    return np.bincount(cohort.astype(np.int64), minlength=params.num_cohorts), ones


@pytest.mark.parametrize("params", [DEMO, RapporParams(13, 2, 300, 0.25, 0.75, 0.5),
                                    RapporParams(8, 1, 5000, 0.25, 0.75, 0.5)])
def test_fold_counts_ones_per_cohort_and_bit(params):
    enc = RapporEncoder(params, rng=1, simulation=True)
    batch = enc.encode_batch(np.arange(5000) % 7, rng=2, candidates=[f"s{i}" for i in range(7)])
    agg = RapporAggregate(params)
    assert agg.add(batch) == 5000
    n, ones = _naive_counts(params, batch.columns["cohort"], batch.columns["bits"])
    assert (agg.cohort_n == n).all() and (agg.ones == ones).all() and agg.n == 5000


def test_bad_reports_are_rejected_with_reasons():
    agg = RapporAggregate(DEMO)
    good = RapporEncoder(DEMO, rng=1, simulation=True).encode("x")
    other = RapporEncoder(RapporParams(16, 2, 8, 0.5, 0.75, 0.25), rng=1, simulation=True).encode("x")
    bad_cohort = Report(DEMO.protocol, DEMO.fingerprint, {"cohort": 8, "bits": good.payload["bits"]})
    bad_len = Report(DEMO.protocol, DEMO.fingerprint, {"cohort": 0, "bits": "0" * 17})
    seen = []
    assert agg.add([good, other, bad_cohort, bad_len], on_reject=lambda item, err: seen.append(err.reason)) == 1
    assert agg.rejected == {"wrong_fingerprint": 1, "out_of_range": 1, "bad_length": 1}
    assert seen == ["wrong_fingerprint", "out_of_range", "bad_length"]


def test_google_counts_and_map_round_trip():
    params = RapporParams(16, 2, 4, 0.5, 0.75, 0.5, mode="google")
    assert RapporParams.from_google_csv(params.to_google_csv()) == params
    agg = RapporAggregate.simulate(params, {"a": 300, "b": 100}, rng=1)
    back = RapporAggregate.from_google_counts(params, agg.to_google_counts())
    assert (back.ones == agg.ones).all() and back.n == 400
    cmap = CandidateMap.from_candidates(params, ["a", "b", "with,comma"])
    again = CandidateMap.from_google_map(params, cmap.to_google_map())
    assert again.candidates == cmap.candidates and (again.pattern != cmap.pattern).nnz == 0
    line = cmap.to_google_map().splitlines()[0].split(",")
    bloom = bloom_filter(params, "a", 0)
    assert {int(x) - 1 for x in line[1:3]} == {i for i in range(16) if bloom >> i & 1}
    with pytest.raises(ValueError, match="one row per cohort"):
        RapporAggregate.from_google_counts(params, "1,0\n")
    with pytest.raises(ValueError, match="outside its cohort"):
        CandidateMap.from_google_map(params, "x,17,1,1,1,1,1,1,1\n")
    with pytest.raises(ValueError, match="k,h,m,p,q,f"):
        RapporParams.from_google_csv("k,h\n1,2\n")


# -- bit estimates ----------------------------------------------------------------------------------
def test_bit_estimates_are_unbiased_with_the_exact_variance():
    params = RapporParams(8, 2, 4, 0.25, 0.75, 0.5)
    truth = {"alpha": 4000, "beta": 2000, "gamma": 400}
    reps = 400
    est = np.array([RapporAggregate.simulate(params, truth, rng=s, cohorts="balanced").bit_estimates().count
                    for s in range(reps)])
    agg = RapporAggregate.simulate(params, truth, rng=0, cohorts="balanced")
    true_bits = np.zeros((4, 8))
    for v, n in truth.items():
        for c in range(4):
            share = n // 4 + (c < n % 4)
            true_bits[c] += share * np.array([(bloom_filter(params, v, c) >> i) & 1 for i in range(8)])
    var = bit_count_variance(params, agg.cohort_n, true_bits)
    z = (est.mean(axis=0) - true_bits) / np.sqrt(var / reps)
    assert np.abs(z).max() < 4.5  # 32 cells
    ratio = est.var(axis=0, ddof=1) / var
    assert np.abs(ratio - 1).max() < 4.5 * math.sqrt(2 / (reps - 1))


def test_per_report_and_aggregate_level_simulations_agree():
    params = RapporParams(8, 2, 2, 0.25, 0.75, 0.5)
    truth = {"a": 1500, "b": 500}
    reps = 150
    per = np.array([simulate(params, truth, method="per_report", rng=s).ones for s in range(reps)], float)
    agg = np.array([simulate(params, truth, method="aggregate", rng=10_000 + s).ones for s in range(reps)], float)
    sd = np.sqrt((per.var(axis=0, ddof=1) + agg.var(axis=0, ddof=1)) / reps)
    assert np.abs((per.mean(axis=0) - agg.mean(axis=0)) / sd).max() < 4.5
    ratio = per.var(axis=0, ddof=1) / agg.var(axis=0, ddof=1)
    assert np.abs(np.log(ratio)).max() < 4.5 * math.sqrt(4 / (reps - 1))


# -- decoding ---------------------------------------------------------------------------------------
PARAMS = RapporParams(32, 2, 16, 0.25, 0.75, 0.5)
TRUE = {f"site{i}.example": n for i, n in enumerate([60_000, 30_000, 20_000, 12_000, 8_000])}
NULLS = [f"absent{i}.example" for i in range(60)]


def test_decoder_recovers_a_sparse_distribution_within_its_cis():
    cands = list(TRUE) + NULLS
    cmap = CandidateMap.from_candidates(PARAMS, cands)
    truth = np.array([TRUE.get(c, 0) for c in cands])
    covered, detected_true, false_pos, trials = 0, 0, 0, 20
    for s in range(trials):
        agg = RapporAggregate.simulate(PARAMS, TRUE, rng=s)
        est = decode(agg, cmap)
        ok = (est.ci_low <= truth) & (truth <= est.ci_high)
        covered += ok[: len(TRUE)].sum()
        detected_true += est.detected[: len(TRUE)].sum()
        false_pos += est.detected[len(TRUE):].sum()
    n_true = trials * len(TRUE)
    assert detected_true == n_true  # all heavy hitters found, every time
    assert covered >= n_true * 0.95 - 3 * math.sqrt(n_true * 0.95 * 0.05)
    # Bonferroni at 0.05: at most 0.05 false discoveries per decode in expectation
    assert false_pos <= trials * 0.05 + 3 * math.sqrt(trials * 0.05)


@pytest.mark.parametrize("correction", ["bonferroni", "holm", "bh"])
def test_null_candidates_are_not_detected_beyond_the_expected_rate(correction):
    """True strings listed: the family-wise error (Bonferroni, Holm) / false discovery proportion (BH)
    over the null candidates stays within α = 0.2 up to binomial noise."""
    trials, alpha = 40, 0.2
    cands = list(TRUE) + NULLS
    errors = 0.0
    for s in range(trials):
        est = decode(RapporAggregate.simulate(PARAMS, TRUE, rng=100 + s), cands, alpha=alpha, correction=correction)
        false = est.detected[len(TRUE):].sum()
        errors += (false > 0) if correction != "bh" else false / max(est.detected.sum(), 1)
    assert errors <= trials * alpha + 3 * math.sqrt(trials * alpha * (1 - alpha))


def test_unlisted_strings_are_flagged_by_the_dispersion():
    agg = RapporAggregate.simulate(PARAMS, {"unlisted": 50_000}, rng=100)
    est = decode(agg, [f"x{i}" for i in range(40)])
    assert est.summary["dispersion"] > 2 and any("missing from the candidates" in n for n in est.notes)


def test_least_squares_variance_matches_the_exact_formula():
    params = RapporParams(16, 2, 8, 0.25, 0.75, 0.5)
    truth = {"a": 40_000, "b": 16_000, "c": 8_000}
    cmap = CandidateMap.from_candidates(params, list(truth))
    reps = 300
    est = np.array([decode(RapporAggregate.simulate(params, truth, rng=s, cohorts="balanced"), cmap,
                           selection="none").count for s in range(reps)])
    cov = exact_count_covariance(params, cmap, list(truth.values()))
    t = np.array(list(truth.values()), float)
    assert np.abs((est.mean(axis=0) - t) / np.sqrt(np.diag(cov) / reps)).max() < 4
    ratio = est.var(axis=0, ddof=1) / np.diag(cov)
    assert np.abs(ratio - 1).max() < 4 * math.sqrt(2 / (reps - 1))


def test_duplicates_are_reported_not_split():
    params = RapporParams(4, 1, 1, 0.25, 0.75, 0.5)
    groups = {}
    for i in range(50):
        groups.setdefault(bloom_filter(params, f"d{i}", 0), []).append(f"d{i}")
    twins = next(g for g in groups.values() if len(g) >= 2)[:2]
    cmap = CandidateMap.from_candidates(params, twins + ["other"])
    assert cmap.duplicates and cmap.duplicates[0][:2] == twins
    agg = RapporAggregate.simulate(params, {twins[0]: 5000}, rng=1)
    est = decode(agg, cmap)
    assert est.extra["duplicate_of"][1] == twins[0] and np.isnan(est.count[1])
    assert any("indistinguishable" in n for n in est.notes)


def test_too_few_reports_is_said_in_the_result():
    agg = RapporAggregate.simulate(PARAMS, {"a": 3}, rng=1)
    est = decode(agg, ["a", "b"])
    assert est.summary["min_detectable_fraction"] > 1 and any("too few reports" in n for n in est.notes)
    empty = decode(RapporAggregate(PARAMS), ["a"])
    assert empty.n == 0 and any("no reports" in n for n in empty.notes)


def test_decode_output_formats_and_bad_input():
    agg = RapporAggregate.simulate(PARAMS, TRUE, rng=3)
    est = decode(agg, list(TRUE) + NULLS[:5], correction="bh")
    rows = est.to_dicts()
    assert {"item", "count", "std_error", "ci_low", "ci_high", "fraction", "p_value", "detected"} <= set(rows[0])
    assert est.to_csv().startswith("item,count") and '"summary"' in est.to_json()
    assert "detected=" in est.table()
    assert est.sorted().items[0] == "site0.example"
    with pytest.raises(TypeError, match="str or bytes"):
        decode(agg, ["ok", 3])
    with pytest.raises(ValueError, match="correction"):
        decode(agg, ["a"], correction="hommel")
    with pytest.raises(ValueError, match="other RAPPOR parameters"):
        decode(agg, CandidateMap.from_candidates(DEMO, ["a"]))


def test_a_candidate_the_lasso_leaves_out_is_added_when_its_score_test_is_significant():
    agg = RapporAggregate.simulate(PARAMS, TRUE, rng=5)
    # a penalty that keeps out almost everything
    est = decode(agg, list(TRUE) + NULLS[:10], selection="lasso", select_level=1e-300)
    assert est.detected[:2].all() and (est.count[:2] > 0).all()
    assert any("score test" in n for n in est.notes)
    assert not (est.detected & ~est.extra["selected"]).any()


@pytest.mark.parametrize("background", [False, True])
def test_skipping_the_adjusted_intervals_changes_nothing_else(background):
    """``adjusted_intervals=False`` (what the simulations pass): the same counts, errors, tests and detections, and
    the adjusted interval columns NaN for every candidate (as for an undetected one) instead of computed."""
    agg = RapporAggregate.simulate(PARAMS, TRUE, rng=7)
    cands = list(TRUE) + NULLS[:10]
    full = decode(agg, cands, background=background)
    bare = decode(agg, cands, background=background, adjusted_intervals=False)
    assert full.detected.any() and np.isfinite(full.extra["adjusted_ci_low"][full.detected]).all()
    assert "adjusted_intervals" not in full.summary and bare.summary.pop("adjusted_intervals") is False
    assert bare.summary == full.summary and bare.notes == full.notes and bare.items == full.items
    for a, b in [(full.count, bare.count), (full.std_error, bare.std_error), (full.ci_low, bare.ci_low),
                 (full.ci_high, bare.ci_high)]:
        np.testing.assert_array_equal(a, b)
    assert set(bare.extra) == set(full.extra)
    for key in set(full.extra) - {"adjusted_ci_low", "adjusted_ci_high"}:
        np.testing.assert_array_equal(np.asarray(full.extra[key]), np.asarray(bare.extra[key]))
    assert np.isnan(bare.extra["adjusted_ci_low"]).all() and np.isnan(bare.extra["adjusted_ci_high"]).all()
    assert bare.to_csv().startswith("item,count") and len(bare.to_dicts()) == len(cands)


def test_count_variance_is_the_exact_covariances_first_element(monkeypatch):
    """RapporAggregate.count_variance (the planner's) solves for the first diagonal element of the exact covariance
    by a Cholesky factor instead of inverting: the same number to rounding, and the inverse's element when the
    factorization fails."""
    import ldp.decoders.rappor_decode as rd

    for params, d in [(PARAMS, 3), (PARAMS, 40), (RapporParams(16, 2, 8, 0.25, 0.75, 0.5), 12)]:
        for n, count in [(10_000, 2_500), (10_000, 0), (1e6, 999_000)]:
            counts = np.full(d, (n - count) / (d - 1))
            counts[0] = count
            want = exact_count_covariance(params, rd.synthetic_map(params, d), counts)[0, 0]
            assert RapporAggregate.count_variance(params, n, count, d) == pytest.approx(want, rel=1e-10)
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    monkeypatch.setattr(rd, "_exact_information", lambda *args: indefinite)
    assert RapporAggregate.count_variance(PARAMS, 100, 10, 2) == pytest.approx(np.linalg.inv(indefinite)[0, 0])
