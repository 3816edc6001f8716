"""Randomized response end to end: parameters, exact privacy audit, client validation and budget,
batch encoding's exact distribution, unbiasedness / variance / coverage against the exact formulas,
and agreement of the per-report and aggregate-level simulations.

Tolerances: with T independent trials, a mean is within z·σ/√T of its expectation and a sample
variance within z·σ²·√(2/(T−1)) (normal approximation; the counts are sums of thousands of
Bernoullis). z is chosen for a family-wise false-failure rate of 1e-6 over each test's checks.
"""

import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats
from support.stats import simulated_counts, z_family

from ldp.decoders.randomized_response import GRRAggregate, RRAggregate, grr_variance, rr_variance
from ldp.encoders.randomized_response import BinaryRREncoder, BinaryRRParams, GRREncoder, GRRParams
from ldp.privacy.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.simulation.collect import simulate

# ----------------------------------------------------------------------------------- parameters

def test_forced_response_with_fair_coins_is_ln3():
    p = BinaryRRParams.forced_response(0.5, 0.5)
    assert (p.p, p.q) == (0.25, 0.75)
    assert p.epsilon == pytest.approx(math.log(3), rel=1e-15)
    general = BinaryRRParams.forced_response(0.6, 0.3)  # p = 0.4·0.3, q = 0.6 + 0.12
    assert (general.p, general.q) == pytest.approx((0.12, 0.72))
    assert general.epsilon == pytest.approx(max(math.log(0.72 / 0.12), math.log(0.88 / 0.28)))


@pytest.mark.parametrize("eps", [0.1, 1.0, math.log(3), 5.0])
def test_symmetric_rr_from_epsilon(eps):
    p = BinaryRRParams.from_epsilon(eps)
    assert p.p + p.q == pytest.approx(1.0)
    assert p.epsilon == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("kwargs, message", [
    (dict(p=0.5, q=0.5), "0 < p < q < 1"), (dict(p=0.6, q=0.4), "0 < p < q < 1"),
    (dict(p=0.0, q=0.5), "0 < p < q < 1"), (dict(p=0.2, q=1.0), "0 < p < q < 1"),
    (dict(p=-0.1, q=0.5), r"p must be in \[0, 1\]"), (dict(p=0.1, q=float("nan")), r"q must be in \[0, 1\]"),
])
def test_rr_params_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BinaryRRParams(**kwargs)


def test_grr_params_validation():
    g = GRRParams(1.0, 4)
    assert g.p == pytest.approx(math.e / (math.e + 3)) and g.q == pytest.approx(1 / (math.e + 3))
    assert g.p + 3 * g.q == pytest.approx(1.0)
    with pytest.raises(ValueError, match="epsilon must be finite and > 0, got -1"):
        GRRParams(-1, 4)
    with pytest.raises(ValueError, match="domain_size must be in"):
        GRRParams(1.0, 1)
    with pytest.raises(TypeError, match="domain_size must be an int"):
        GRRParams(1.0, 4.0)
    with pytest.raises(ValueError, match="labels must have domain_size=3"):
        GRRParams(1.0, 3, ("a", "b"))
    with pytest.raises(ValueError, match="distinct"):
        GRRParams.from_labels(1.0, ["a", "a"])
    assert GRRParams.from_dict(GRRParams.from_labels(1.0, "xyz").to_dict()) == GRRParams(1.0, 3, ("x", "y", "z"))


# ----------------------------------------------------------------------------------- exact audit


# ------------------------------------------------------------------------- client input and budget

def test_client_rejects_values_outside_the_domain_before_charging():
    ledger = BudgetLedger(":memory:", total=BudgetPolicy(per_window=PrivacyCost(10)))
    grr = GRREncoder(GRRParams.from_labels(1.0, ["a", "b", "c"]), ledger=ledger, metric="m")
    with pytest.raises(ValueError, match="not one of the 3 declared labels"):
        grr.encode("z")
    with pytest.raises(ValueError, match=r"value index must be in \[0, 3\)"):
        grr.encode(3)
    with pytest.raises(TypeError):
        grr.encode(1.0)
    rr = BinaryRREncoder(BinaryRRParams.forced_response(), ledger=ledger, metric="b")
    with pytest.raises(ValueError, match="0 or 1"):
        rr.encode(2)
    with pytest.raises(TypeError):
        rr.encode("yes")
    assert ledger.history() == []  # nothing was charged for bad input
    assert grr.encode("b").payload["index"] in (0, 1, 2)
    assert len(ledger.history()) == 1


def test_exhausted_budget_produces_no_report():
    ledger = BudgetLedger(":memory:", metrics={"m": BudgetPolicy(per_window=PrivacyCost(2.0))})
    enc = GRREncoder(GRRParams(1.0, 4), ledger=ledger, metric="m")
    reports = [enc.encode(1), enc.encode(1)]
    with pytest.raises(BudgetExceeded):
        enc.encode(1)
    assert len(reports) == 2
    assert [h["state"] for h in ledger.history()] == ["committed", "committed"]
    with pytest.raises(ValueError, match="metric"):
        GRREncoder(GRRParams(1.0, 4), ledger=ledger)


# ------------------------------------------------------------------ batch encoding's exact distribution


def test_batch_rejects_out_of_domain_values():
    with pytest.raises(ValueError, match=r"in \[0, 4\)"):
        GRREncoder(GRRParams(1.0, 4)).encode_batch([0, 4])
    with pytest.raises(TypeError, match="integer"):
        GRREncoder(GRRParams(1.0, 4)).encode_batch([0.5])
    with pytest.raises(ValueError, match=r"in \[0, 2\)"):
        BinaryRREncoder(BinaryRRParams.forced_response()).encode_batch([2])


# --------------------------------------------------------------- unbiasedness, variance, coverage

GRR_PARAMS = GRRParams(1.0, 6)
GRR_TRUTH = np.array([3000, 1500, 800, 400, 200, 100])
RR_PARAMS = BinaryRRParams.forced_response()
RR_TRUTH = np.array([2400, 600])  # seed 004: 3,000 people, 20% smokers


@pytest.mark.parametrize("params, truth, formula", [
    (GRR_PARAMS, GRR_TRUTH, grr_variance), (RR_PARAMS, RR_TRUTH, rr_variance),
])
def test_estimator_unbiased_with_exact_variance(params, truth, formula):
    trials = 20_000
    est = simulated_counts(params, truth, trials, "aggregate", seed=1)
    var = formula(params, truth)
    z = z_family(2 * truth.size)
    assert np.all(np.abs(est.mean(0) - truth) <= z * np.sqrt(var / trials)), (est.mean(0), truth)
    ratio = est.var(0, ddof=1) / var
    assert np.all(np.abs(ratio - 1) <= z * math.sqrt(2 / (trials - 1))), ratio


def test_rr_variance_formula_matches_seed_thesis():
    """Seed 004: Var(p̂) = Var(ΣXi)/(n²α²) with α = 1/2 for fair coins; here per count."""
    n0, n1 = RR_TRUTH
    p, q = 0.25, 0.75
    var_sum = n1 * q * (1 - q) + n0 * p * (1 - p)
    assert rr_variance(RR_PARAMS, RR_TRUTH)[1] == pytest.approx(var_sum / 0.5**2)


def test_confidence_intervals_cover_at_the_nominal_rate():
    truth = GRR_TRUTH * 10
    trials = 4000
    gen = np.random.default_rng(5)
    covered = np.zeros(truth.size)
    for _ in range(trials):
        e = simulate(GRR_PARAMS, truth, rng=gen).estimate(0.95)
        covered += (e.ci_low <= truth) & (truth <= e.ci_high)
    z = z_family(truth.size)
    assert np.all(np.abs(covered / trials - 0.95) <= z * math.sqrt(0.95 * 0.05 / trials)), covered / trials


# ---------------------------------------------------- per-report and aggregate-level agree in distribution

def _exact_marginal_pmf(f, n, p_star, q_star):
    """pmf of C_v = Bin(f, p*) + Bin(n − f, q*)."""
    return np.convolve(stats.binom.pmf(np.arange(f + 1), f, p_star),
                       stats.binom.pmf(np.arange(n - f + 1), n - f, q_star))


def _gof_pvalue(samples, pmf):
    expected = pmf * samples.size
    keep = expected >= 5
    lo, hi = np.flatnonzero(keep)[[0, -1]]
    observed = np.bincount(samples, minlength=pmf.size)[lo:hi + 1].astype(float)
    exp = expected[lo:hi + 1].copy()
    observed[0] += np.sum(samples < lo)
    exp[0] += expected[:lo].sum()
    observed[-1] += np.sum(samples > hi)
    exp[-1] += expected[hi + 1:].sum()
    return stats.chisquare(observed, exp * observed.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("method", ["aggregate", "per_report"])
def test_both_simulation_paths_follow_the_exact_count_distribution(method):
    params, truth = GRRParams(1.0, 4), np.array([300, 120, 60, 20])
    n, trials = int(truth.sum()), 3000
    gen = np.random.default_rng(8)
    counts = np.array([simulate(params, truth, method=method, rng=gen).counts for _ in range(trials)])
    for v in (0, 3):
        assert _gof_pvalue(counts[:, v], _exact_marginal_pmf(truth[v], n, params.p, params.q)) > 1e-5
    # Cov(C_0, C_1) = −Σ_users Pr[report 0]·Pr[report 1]
    p, q = params.p, params.q
    cov = -(truth[0] * p * q + truth[1] * q * p + (n - truth[0] - truth[1]) * q * q)
    sd0, sd1 = (math.sqrt(truth[v] * p * (1 - p) + (n - truth[v]) * q * (1 - q)) for v in (0, 1))
    # a sample covariance of (near-)normal pairs has variance (σ0²σ1² + cov²)/T
    tol = z_family(5) * math.sqrt((sd0**2 * sd1**2 + cov**2) / trials)
    assert abs(np.cov(counts[:, 0], counts[:, 1])[0, 1] - cov) <= tol


def test_rr_simulation_paths_follow_the_exact_count_distribution():
    n0, n1 = 400, 100
    pmf = np.convolve(stats.binom.pmf(np.arange(n1 + 1), n1, 0.75), stats.binom.pmf(np.arange(n0 + 1), n0, 0.25))
    gen = np.random.default_rng(9)
    for method in ("aggregate", "per_report"):
        ones = np.array([simulate(RR_PARAMS, [n0, n1], method=method, rng=gen).ones[0] for _ in range(3000)])
        assert _gof_pvalue(ones, pmf) > 1e-5, method


# ------------------------------------------------------------------------------ estimates object

def test_estimates_outputs():
    agg = GRRAggregate.simulate(GRRParams.from_labels(1.0, ["a", "b", "c"]), [500, 300, 200], rng=1)
    est = agg.estimate(0.9).with_truth([500, 300, 200])
    assert est.items == ["a", "b", "c"] and est.n == 1000
    assert est.count.sum() == pytest.approx(1000)  # GRR estimates always sum to n
    z = NormalDist().inv_cdf(0.95)
    assert np.allclose(est.ci_high - est.count, z * est.std_error)
    assert np.allclose(est.fraction * 1000, est.count)
    rows = est.to_dicts()
    assert rows[0]["item"] == "a" and rows[0]["true_count"] == 500.0 and "covered" in rows[0]
    assert est.to_csv().splitlines()[0].startswith("item,count,std_error,ci_low,ci_high,fraction")
    assert '"protocol": "grr"' in est.to_json()
    assert "a" in str(est) and "ε=1" in str(est)
    proj = est.projected()
    assert proj.count.min() >= 0 and proj.count.sum() == pytest.approx(1000)
    assert est.clipped().count.min() >= 0


def test_rr_estimates_zero_and_one_are_complementary():
    est = RRAggregate.simulate(RR_PARAMS, RR_TRUTH, rng=4).estimate()
    assert est.count.sum() == pytest.approx(3000)
    assert est.std_error[0] == est.std_error[1]
