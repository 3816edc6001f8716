"""Honest uncertainty after selection (issue 20, item 2): the RAPPOR decoder's counts are unbiased, and
the intervals of the strings it *detects* cover at their level once the winner's curse is accounted for.

Tolerances come from the binomial law of a coverage count (``n`` intervals at level 0.95 cover
``Binomial(n, 0.95)`` times when the intervals are independent; the decodes are independent, the
intervals within one decode nearly so) and from the normal law of a mean of standardised errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap, _cutoff, decode
from ldp.encoders.rappor import RapporParams
from ldp.regression.selective import selection_adjusted_interval
from ldp.simulation.rappor_regtest import PRIVACY, pmf


def _coverage_floor(n: int, level: float = 0.95, sigmas: float = 4.0) -> float:
    return level - sigmas * math.sqrt(level * (1 - level) / n)


# -- the interval itself: a normal truncated at the cutoff ---------------------------------------------
@pytest.mark.parametrize("mu", [-0.5, 1.5, 3.0, 4.5, 8.0])
def test_adjusted_interval_covers_given_selection(mu):
    """X ~ N(mu·s, s²) kept only when X/s > c: the adjusted interval covers mu·s at 95 % among the kept."""
    rng = np.random.default_rng(int(mu * 10) + 50)
    s, c = 3.0, 2.5
    x = s * (mu + rng.standard_normal(4_000_000))
    x = x[x / s > c][:4000]
    lo, hi = selection_adjusted_interval(x, s, c)
    cover = np.mean((lo <= mu * s) & (mu * s <= hi))
    n = x.size
    assert n >= 1000
    assert abs(cover - 0.95) <= 4 * math.sqrt(0.95 * 0.05 / n)
    naive = np.mean(np.abs(x - mu * s) <= 1.96 * s)
    if mu == 1.5:  # the naive interval is the one that fails near the threshold
        assert naive < 0.9


def test_adjusted_interval_shape_and_edges():
    lo, hi = selection_adjusted_interval([10.0, 2.0, np.nan, 5.0], [1.0, 1.0, 1.0, 0.0], 3.0)
    assert np.isfinite([lo[0], hi[0]]).all() and lo[0] < 10.0 < hi[0]
    assert np.isnan(lo[1:]).all() and np.isnan(hi[1:]).all()  # not selected, NaN, zero SE
    far_lo, far_hi = selection_adjusted_interval(100.0, 1.0, 3.0)  # far above: the usual interval
    assert far_lo == pytest.approx(100 - 1.959964, abs=1e-4) and far_hi == pytest.approx(100 + 1.959964, abs=1e-4)
    edge_lo, edge_hi = selection_adjusted_interval(3.0 + 1e-9, 1.0, 3.0)  # just over: almost anything below
    assert edge_hi < 3.0 and edge_lo < -1e3
    lo90, hi90 = selection_adjusted_interval(4.0, 1.0, 3.0, confidence=0.9)
    lo95, hi95 = selection_adjusted_interval(4.0, 1.0, 3.0)
    assert lo95 < lo90 < hi90 < hi95
    with pytest.raises(ValueError, match="confidence"):
        selection_adjusted_interval(4.0, 1.0, 3.0, confidence=1.0)


@pytest.mark.parametrize("correction,rejected,level", [("bonferroni", 7, 0.05 / 20), ("holm", 7, 0.05 / 14),
                                                        ("bh", 7, 0.05 * 7 / 20), ("bh", 0, 0.05 / 20)])
def test_cutoff_is_the_rules_final_threshold(correction, rejected, level):
    from statistics import NormalDist

    assert _cutoff(correction, 0.05, 20, rejected) == pytest.approx(NormalDist().inv_cdf(1 - level))


# -- the decoder on the regtest population, with absent candidates ------------------------------------
SIMS = 1000
R, ABSENT, N = 100, 20, 1_000_000  # Google's regtest "typical": 100 values, 20 % extra candidates, 10^6 reports
PARAMS = RapporParams(8, 2, 32, *PRIVACY["eps_1_1"])  # k=8, h=2 as the regtest; 32 cohorts (not 128) for speed


@pytest.fixture(scope="module")
def collections():
    """``SIMS`` collections of the regtest exponential population, decoded with the defaults (BH, every
    candidate fitted), and Bonferroni's detections with their adjusted intervals from the same fits."""
    values = [f"v{i}" for i in range(1, R + 1)]
    cmap = CandidateMap.from_candidates(PARAMS, values + [f"v{R + i}" for i in range(1, ABSENT + 1)])
    rng = np.random.default_rng(2020)
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("truth", "count", "se", "low", "high", "det", "adj_low",
                                                        "adj_high", "bonf", "bonf_low", "bonf_high")}
    for _ in range(SIMS):
        truth = rng.multinomial(N, pmf("exp", R))
        est = decode(RapporAggregate.simulate(PARAMS, dict(zip(values, truth.tolist(), strict=True)), rng=rng),
                     cmap)
        assert est.summary["correction"] == "bh" and est.summary["selection"] == "none"
        m = est.summary["distinct"]
        bonf = est.extra["p_value"] < 0.05 / m
        c = _cutoff("bonferroni", 0.05, m, int(bonf.sum()))
        lo, hi = selection_adjusted_interval(np.where(bonf, est.count, np.nan), est.std_error, c)
        for key, val in (("truth", truth), ("count", est.count[:R]), ("se", est.std_error[:R]),
                         ("low", est.ci_low[:R]), ("high", est.ci_high[:R]), ("det", est.detected),
                         ("adj_low", est.extra["adjusted_ci_low"][:R]), ("adj_high", est.extra["adjusted_ci_high"][:R]),
                         ("bonf", bonf), ("bonf_low", np.maximum(lo[:R], 0)), ("bonf_high", np.maximum(hi[:R], 0))):
            out[key].append(np.asarray(val))
    return {k: np.array(v) for k, v in out.items()}


def test_counts_are_unbiased_with_absent_candidates(collections):
    """Every true string, detected or not: mean standardised error within 0.05 SE, intervals at 95 %."""
    z = (collections["count"] - collections["truth"]) / collections["se"]
    assert abs(z.mean()) <= 0.05
    assert abs(z.mean()) <= 4 * z.std() / math.sqrt(SIMS)  # and within the noise of 1,000 decodes
    for v in range(R):  # no string is biased either (4 SE of its own mean over the decodes)
        assert abs(z[:, v].mean()) <= 4 / math.sqrt(SIMS) + 0.05
    cover = (collections["low"] <= collections["truth"]) & (collections["truth"] <= collections["high"])
    assert cover.mean() >= _coverage_floor(cover.size)


@pytest.mark.parametrize("rule", ["bh", "bonferroni"])
def test_detected_strings_adjusted_intervals_cover(collections, rule):
    det, low, high = ((collections["det"][:, :R], collections["adj_low"], collections["adj_high"]) if rule == "bh"
                      else (collections["bonf"][:, :R], collections["bonf_low"], collections["bonf_high"]))
    truth = collections["truth"]
    n = int(det.sum())
    assert n > 10 * SIMS  # a population where many strings sit near the threshold
    cover = ((low <= truth) & (truth <= high))[det]
    assert cover.mean() >= max(0.945, _coverage_floor(n))
    naive = ((collections["low"] <= truth) & (truth <= collections["high"]))[det]
    z = ((collections["count"] - truth) / collections["se"])[det]
    # the winner's curse the adjusted intervals correct: detected strings' naive errors lean upwards
    assert z.mean() > 0.1 and naive.mean() < cover.mean()


def test_strings_detected_every_time_are_unbiased(collections):
    """The strings far above the threshold (no selection effect): |bias| ≤ 0.05 SE and 95 % coverage."""
    always = collections["bonf"][:, :R].all(axis=0)
    assert always.sum() >= 5
    z = ((collections["count"] - collections["truth"]) / collections["se"])[:, always]
    assert abs(z.mean()) <= 0.05
    cover = ((collections["low"] <= collections["truth"]) & (collections["truth"] <= collections["high"]))[:, always]
    assert cover.mean() >= _coverage_floor(cover.size)
