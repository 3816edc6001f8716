"""Mean mechanisms, statistically: the batch encoder's and the aggregate-level simulation's laws against the
exact cell probabilities (chi-square), unbiasedness and variance against the exact formulas, CI coverage.

Tolerances: z is chosen for a family-wise false-failure rate of 1e-6 over each test's checks. A mean of R
replications is within z·σ/√R of its expectation; a sample variance s² of R replications is within
z·σ²·√((κ − 1)/R) of σ² (κ the kurtosis of one replication, estimated from the sample: the large-R
variance of s²; κ = 3 gives the chi-square's √(2/R)); a coverage rate within z·√(c(1 − c)/R).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from support.stats import z_family

from ldp.decoders.numeric import (
    DuchiAggregate,
    HybridAggregate,
    PiecewiseAggregate,
    duchi_probability_one,
    duchi_values,
    piecewise_cell_probabilities,
    piecewise_values,
)
from ldp.encoders.numeric import (
    DuchiEncoder,
    DuchiParams,
    HybridEncoder,
    HybridParams,
    PiecewiseEncoder,
    PiecewiseParams,
)

MECHANISMS = [(DuchiParams, DuchiEncoder, DuchiAggregate), (PiecewiseParams, PiecewiseEncoder, PiecewiseAggregate),
              (HybridParams, HybridEncoder, HybridAggregate)]
MECH_IDS = ["duchi", "piecewise", "hybrid"]
P_MIN = 1e-6


def make(P, eps, cells=16):
    return P(eps, 0, 10) if P is DuchiParams else P(eps, 0, 10, cells=cells)


def outcome_probabilities(params, x):
    """Exact probability of each outcome: Duchi (bit 0, 1); PM cells; Hybrid (Duchi's 2, then PM's G)."""
    if isinstance(params, DuchiParams):
        p1 = float(duchi_probability_one(params, np.array([x]))[0])
        return np.array([1 - p1, p1])
    if isinstance(params, PiecewiseParams):
        return piecewise_cell_probabilities(params, x)
    a = params.alpha
    return np.concatenate([(1 - a) * outcome_probabilities(params.duchi, x),
                           a * outcome_probabilities(params.piecewise, x)])


def outcome_values(params):
    """The unbiased value of each outcome, in :func:`outcome_probabilities`'s order."""
    if isinstance(params, DuchiParams):
        return duchi_values(params)
    if isinstance(params, PiecewiseParams):
        return piecewise_values(params)
    return np.concatenate([duchi_values(params.duchi), piecewise_values(params.piecewise)])


def outcome_index(params, batch):
    """Each report of a batch as its outcome index."""
    cols = batch.columns
    if isinstance(params, DuchiParams):
        return cols["bit"].astype(np.int64)
    if isinstance(params, PiecewiseParams):
        return cols["cell"].astype(np.int64)
    return cols["out"].astype(np.int64) + 2 * cols["pm"].astype(np.int64)


def histogram(agg):
    return np.concatenate([agg.duchi, agg.cells]) if isinstance(agg, HybridAggregate) else agg.counts


def chi2_pvalue(observed, probs):
    keep = probs > 0
    assert observed[~keep].sum() == 0  # nothing where the law puts nothing
    return stats.chisquare(observed[keep], probs[keep] * observed.sum() / probs[keep].sum()).pvalue


# ------------------------------------------------------------------------------------- exact laws

@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("P, E, A", MECHANISMS, ids=MECH_IDS)
def test_batch_and_simulation_follow_the_exact_law(P, E, A, eps):
    params, rng = make(P, eps), np.random.default_rng(11)
    enc = E(params, rng=1, simulation=True)
    for x in (0.0, 3.3, 10.0):
        probs = outcome_probabilities(params, x)
        assert probs.sum() == pytest.approx(1.0) and probs @ outcome_values(params) == pytest.approx(x)
        batch = np.bincount(outcome_index(params, enc.encode_batch(np.full(50_000, x), rng)), minlength=probs.size)
        assert chi2_pvalue(batch, probs) > P_MIN
        sim = histogram(A.simulate(params, np.full(50_000, x), rng))
        assert chi2_pvalue(sim, probs) > P_MIN


def test_piecewise_simulation_per_report_path_follows_the_law():
    """Many distinct grid indices and few reports each: the simulation draws each report's cell."""
    params, rng = PiecewiseParams(1.0, 0, 10, cells=4096), np.random.default_rng(5)
    grid = np.linspace(0, 10, 1500)
    values = np.repeat(grid, 20)
    probs = np.mean([piecewise_cell_probabilities(params, x) for x in grid], axis=0)
    counts = PiecewiseAggregate.simulate(params, values, rng).counts
    coarse = lambda a: a.reshape(256, 16).sum(axis=1)  # noqa: E731  (16 cells a bin: expected counts >= 5)
    assert counts.sum() == values.size and chi2_pvalue(coarse(counts), coarse(probs)) > P_MIN


# ---------------------------------------------------------------------- unbiasedness and variance

@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("P, E, A", MECHANISMS, ids=MECH_IDS)
def test_unbiased_with_the_exact_variance(P, E, A, eps):
    params, rng = make(P, eps, cells=64), np.random.default_rng(7)
    reps, n = 40_000, 10
    x = np.linspace(0, 10, n)  # the same n users in every replication
    v = outcome_values(params)[outcome_index(params, E(params, rng=1, simulation=True).encode_batch(
        np.tile(x, reps), rng))].reshape(reps, n)
    z = z_family(4)
    # per report: E[v − x] = 0 and E[(v − x)²] = Var[v | x], over reps·n reports
    per_report = A.report_variance(params, x)
    dev2 = (v - x) ** 2
    assert abs((v - x).mean()) <= z * np.sqrt(per_report.mean() / v.size)
    ratio = dev2.mean() / per_report.mean()
    assert abs(ratio - 1) <= z * dev2.std() / np.sqrt(v.size) / per_report.mean()
    # per estimate: the mean of n reports, over reps replications
    means, exact = v.mean(axis=1), A.exact_variance(params, x)
    assert exact == pytest.approx(per_report.sum() / n**2)
    assert abs(means.mean() - x.mean()) <= z * np.sqrt(exact / reps)
    s2 = means.var(ddof=1)
    kurt = np.mean((means - means.mean()) ** 4) / s2**2
    tol = z * np.sqrt((kurt - 1) / reps)
    assert tol < 0.05 and abs(s2 / exact - 1) <= tol, (s2 / exact, tol)


@pytest.mark.parametrize("P, E, A", MECHANISMS, ids=MECH_IDS)
def test_ci_coverage_within_its_binomial_tolerance(P, E, A):
    params, rng = make(P, 2.0, cells=64), np.random.default_rng(3)
    reps, values = 1500, np.full(2000, 2.5)  # one value: the plug-in SE is not inflated by a population spread
    covered = [A.simulate(params, values, rng).estimate(confidence=0.9).with_truth(2.5).covered
               for _ in range(reps)]
    assert abs(np.mean(covered) - 0.9) <= z_family(1) * np.sqrt(0.9 * 0.1 / reps)


def test_plug_in_standard_error_is_conservative_by_the_population_spread():
    params, rng = DuchiParams(1.0, 0, 10), np.random.default_rng(4)
    values = np.linspace(0, 10, 20_000)
    est = DuchiAggregate.simulate(params, values, rng).estimate()
    exact = DuchiAggregate.exact_variance(params, values)
    conservative = exact + values.var() / values.size  # E[s²]/n = mean Var[v | x]/n + Var_pop(x)/n
    assert est.std_error**2 == pytest.approx(conservative, rel=0.05)


def test_mean_estimate_result():
    params = PiecewiseParams(2.0, 0, 10, cells=64)
    est = PiecewiseAggregate.simulate(params, np.full(5000, 4.0), rng=1).estimate().with_truth(4.0)
    d = est.to_dict()
    assert d["protocol"] == "piecewise" and d["n"] == 5000 and d["low"] == 0 and d["high"] == 10
    assert d["ci_low"] < d["mean"] < d["ci_high"] and d["error"] == pytest.approx(est.mean - 4.0)
    assert d["privacy"]["epsilon"] == pytest.approx(params.realized_epsilon)
    text = str(est)
    assert text.startswith("piecewise: n=5000, values in [0, 10], 95% CI, ε=2") and "true_mean" in text
    frame = est.to_pandas()
    assert list(frame.columns) == ["mean", "std_error", "ci_low", "ci_high", "true_mean", "error", "covered"]
    assert frame.attrs["protocol"] == "piecewise"
    empty = PiecewiseAggregate(params).estimate()
    assert empty.n == 0 and np.isnan(empty.mean)
