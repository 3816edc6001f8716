"""Central-DP linear regression, SSP family: the exact claims of seeds-regression.md §5 (1, 3–8,
10), the statistical ones (12, 13) with fixed seeds, the analytic Gaussian, streaming, the
accountant, bad input and scikit-learn's estimator checks."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm

from ldp.privacy.accountant import BudgetExceeded, PrivacyAccountant, PrivacyCost, compose_sequential
from ldp.regression.baselines import OLS, Ridge, TrivialPredictor
from ldp.regression.mechanisms import (
    PrivacyLeakWarning,
    ReproductionOnlyWarning,
    analytic_gaussian_sigma,
    gaussian_sigma,
    log_term,
    split_budget,
    symmetric_noise,
)
from ldp.regression.ssp import SSP, AdaSSP, AdaSSPBudget, ConstSSPFull
from ldp.regression.stats import SufficientStatistics


def piazza_data(n: int, d: int = 10, seed: int = 0, correlated: bool = False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if correlated:
        X = X @ np.linalg.cholesky(0.9 ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))).T
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    theta = rng.normal(size=d)
    theta /= np.linalg.norm(theta)
    return X, X @ theta + rng.normal(0, 0.1, n), theta


BOUNDS = dict(bound_X=1.0, bound_y=1.5)


# -- §5.1 sensitivities (add/remove one row) ---------------------------------------------------------------
def test_sensitivity_bounds_hold_on_neighbours():
    rng = np.random.default_rng(1)
    bx, by = 2.0, 3.0
    for _ in range(200):
        X = rng.normal(size=(30, 4))
        X *= (bx * rng.uniform(0, 1, (30, 1))) / np.linalg.norm(X, axis=1, keepdims=True)
        y = rng.uniform(-by, by, 30)
        v = rng.normal(size=4)
        v *= bx / np.linalg.norm(v)  # an extremal new row
        w = by * rng.choice([-1, 1])
        X2, y2 = np.vstack([X, v]), np.append(y, w)
        assert np.linalg.norm(X2.T @ X2 - X.T @ X, "fro") <= bx**2 * (1 + 1e-12)
        assert np.linalg.norm(X2.T @ y2 - X.T @ y) <= bx * by * (1 + 1e-12)
        for r in (0.0, 1.0):
            lo = np.linalg.eigvalsh(X.T @ X + r * np.eye(4))[0]
            lo2 = np.linalg.eigvalsh(X2.T @ X2 + r * np.eye(4))[0]
            assert abs(lo2 - lo) <= bx**2 * (1 + 1e-12)


# -- §5.3 budget sums --------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", [SSP(0.7, 1e-5, **BOUNDS), AdaSSP(0.7, 1e-5, **BOUNDS),
                                   AdaSSPBudget(0.7, 1e-5, gamma=0.05, **BOUNDS), ConstSSPFull(0.7, 1e-5, **BOUNDS)])
def test_budget_splits_compose_to_the_total(model):
    X, y, _ = piazza_data(500)
    model.set_params(random_state=3, noise_source="seeded").fit(X, y)
    total = compose_sequential(model.budget_split_)
    assert total.epsilon == pytest.approx(0.7, rel=1e-13) and total.delta == pytest.approx(1e-5, rel=1e-13)
    assert model.privacy_cost_ == PrivacyCost(0.7, 1e-5)
    assert len(model.budget_split_) == (3 if isinstance(model, AdaSSP) else 2)


def test_split_budget_checks_fractions():
    parts = split_budget(PrivacyCost(1.0, 1e-6), [0.35, 0.6, 0.05])
    assert [p.epsilon for p in parts] == pytest.approx([0.35, 0.6, 0.05])
    with pytest.raises(ValueError, match="sum to 1"):
        split_budget(PrivacyCost(1.0), [0.5, 0.6])
    with pytest.raises(ValueError, match="> 0"):
        split_budget(PrivacyCost(1.0), [1.0, 0.0])


# -- §5.4 noise multipliers (§2.2 and §2.3 tables: ε = 1, δ = 1e-6, d = 10, ρ = 0.05, B = 1) ----------------
def test_ssp_noise_sds_match_the_sources():
    X, y, _ = piazza_data(200)
    fit = lambda noise: SSP(1.0, 1e-6, bound_X=1, bound_y=1, noise=noise, random_state=0,  # noqa: E731
                            noise_source="numpy").fit(X, y)
    assert fit("piazza").noise_sd_[0] == pytest.approx(11.03, abs=0.01)
    assert fit("kalaja").noise_sd_[0] == pytest.approx(10.86, abs=0.01)  # Kalaja's "fixed" SSP (reconstructed)
    with pytest.warns(ReproductionOnlyWarning):
        assert fit("wang").noise_sd_[0] == pytest.approx(7.80, abs=0.01)  # Wang's paper
    with pytest.warns(ReproductionOnlyWarning):
        assert fit("wang_code").noise_sd_[0] == pytest.approx(3.90, abs=0.01)  # Wang's code: half


@pytest.mark.parametrize("noise, sd, shift, ceiling", [
    ("wang", 11.85, 46.82, 107.94), ("kalaja", 16.51, 90.82, 150.33), ("piazza", 16.76, 93.64, 152.65)])
def test_adassp_constants_match_the_table(noise, sd, shift, ceiling):
    X, y, _ = piazza_data(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReproductionOnlyWarning)
        m = AdaSSP(1.0, 1e-6, bound_X=1, bound_y=1, noise=noise, random_state=0, noise_source="numpy").fit(X, y)
        L = log_term(noise, 1 / 3, 1e-6 / 3)
    assert m.noise_sd_[0] == pytest.approx(sd, abs=0.01) and m.noise_sd_[1] == pytest.approx(sd, abs=0.01)
    assert L / (1 / 3) == pytest.approx(shift, abs=0.01)
    assert m.lambda_ceiling_ == pytest.approx(ceiling, abs=0.01)


def test_kalaja_over_wang_noise_ratio():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReproductionOnlyWarning)
        ratio = gaussian_sigma("kalaja", 1 / 3, 1e-6 / 3) / gaussian_sigma("wang", 1 / 3, 1e-6 / 3)
    assert ratio == pytest.approx(math.sqrt(2 * math.log(3.75e6) / math.log(6e6)), rel=1e-12)
    assert ratio == pytest.approx(1.393, abs=1e-3)


def test_classical_gaussian_refuses_large_per_release_epsilon():
    X, y, _ = piazza_data(200)
    with pytest.raises(ValueError, match="ε < 1 per release.*analytic"):
        AdaSSP(3.0, 1e-6, noise="kalaja", **BOUNDS).fit(X, y)
    with pytest.raises(ValueError, match="ε ≤ 1 per release"):
        SSP(2.5, 1e-6, noise="piazza", **BOUNDS).fit(X, y)
    assert SSP(10.0, 1e-6, noise="analytic", **BOUNDS).fit(X, y).noise_sd_[0] > 0


# -- the analytic Gaussian -----------------------------------------------------------------------------------
@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (1.0, 1e-5), (5.0, 1e-6), (20.0, 1e-9)])
def test_analytic_gaussian_is_the_smallest_valid_sigma(eps, delta):
    def achieved(sigma: float) -> float:  # Balle & Wang (2018), Theorem 8, with scipy's plain cdf
        return norm.cdf(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * norm.cdf(-1 / (2 * sigma) - eps * sigma)

    s = analytic_gaussian_sigma(eps, delta)
    assert achieved(s) <= delta * (1 + 1e-6)
    assert achieved(s * (1 - 1e-6)) > delta * (1 - 1e-3)  # a hair less noise breaks the guarantee
    assert analytic_gaussian_sigma(eps, delta, 3.0) == pytest.approx(3 * s, rel=1e-9)
    if eps < 1:
        assert s < math.sqrt(2 * math.log(1.25 / delta)) / eps  # tighter than the classical bound


# -- §5.5 symmetric noise ------------------------------------------------------------------------------------
class _Recorder:
    def __init__(self) -> None:
        self.sizes: list = []
        self.rng = np.random.default_rng(0)

    def normal(self, loc, scale, size):
        self.sizes.append(size)
        return self.rng.normal(loc, scale, size)


def test_noise_matrix_is_symmetric_with_one_draw_per_distinct_entry():
    rec = _Recorder()
    z = symmetric_noise(rec, 6, 2.0)  # type: ignore[arg-type]
    assert rec.sizes == [21] and np.array_equal(z, z.T)
    assert len(set(np.round(z[np.triu_indices(6)], 12))) == 21
    g = np.array([symmetric_noise(np.random.default_rng(s), 3, 1.0, "half_sum") for s in range(4000)])
    assert g.var(axis=0)[0, 0] == pytest.approx(1.0, abs=0.1) and g.var(axis=0)[0, 1] == pytest.approx(0.5, abs=0.05)
    assert np.array_equal(g[0], g[0].T)


# -- §5.6 / §5.8: adaSSPbudget(γ = 1/3) is Piazza's adaSSP, written out independently ------------------------
def piazza_adassp(X, y, eps, delta, bx, by, rho, rng):
    n, d = X.shape
    lam_min = np.linalg.eigvalsh(X.T @ X + np.eye(d))[0]
    L = 2 * math.log(6 / delta)
    lam_tilde = max(lam_min + math.sqrt(L) / (eps / 3) * bx**2 * rng.normal() - L / (eps / 3) * bx**2, 0.0)
    lam = max(0.0, math.sqrt(d * L * math.log(2 * d * d / rho)) * bx**2 / (eps / 3) - lam_tilde)
    iu = np.triu_indices(d)
    z = np.zeros((d, d))
    z[iu] = rng.normal(0, 1, iu[0].size)
    z = z + np.triu(z, 1).T
    xtx = X.T @ X + math.sqrt(L) / (eps / 3) * bx**2 * z
    xty = X.T @ y + math.sqrt(L) / (eps / 3) * bx * by * rng.normal(0, 1, d)
    return np.linalg.solve(xtx + (lam + 1) * np.eye(d), xty), lam


@pytest.mark.parametrize("eps, n", [(0.1, 2000), (1.0, 50000)])
def test_adassp_budget_one_third_equals_piazza_adassp(eps, n):
    X, y, _ = piazza_data(n, seed=2, correlated=True)
    y = np.clip(y, -1.5, 1.5)
    ours = AdaSSPBudget(eps, 1e-6, gamma=1 / 3, noise="piazza", bound_X=1, bound_y=1.5, random_state=7,
                        noise_source="numpy").fit(X, y)
    theirs, lam = piazza_adassp(X, y, eps, 1e-6, 1.0, 1.5, 0.05, np.random.default_rng(7))
    assert ours.lambda_ == pytest.approx(lam, rel=1e-9, abs=1e-9) and ours.lambda_ >= 0
    np.testing.assert_allclose(ours.coef_, theirs, rtol=1e-7, atol=1e-10)
    assert (ours.lambda_ == 0) == (ours.lambda_min_noisy_ >= ours.lambda_ceiling_)


# -- §5.7 constSSPfull -----------------------------------------------------------------------------------------
def test_const_ssp_full_ridge_is_the_ceiling_at_half_budget():
    X, y, _ = piazza_data(1000)
    m = ConstSSPFull(1.0, 1e-6, noise="piazza", bound_X=1, bound_y=1.5, random_state=0, noise_source="seeded").fit(X, y)
    assert m.lambda_ == pytest.approx(math.sqrt(2 * 10 * math.log(4e6) * math.log(2 * 100 / 0.05)) / 0.5, rel=1e-12)
    assert m.lambda_ == pytest.approx(100.4, abs=0.1)  # seeds-regression.md §2.5
    ssp = SSP(1.0, 1e-6, noise="piazza", bound_X=1, bound_y=1.5, random_state=0, noise_source="seeded").fit(X, y)
    assert ssp.noise_sd_ == pytest.approx(m.noise_sd_)  # same releases, only the ridge differs


# -- §5.10 additivity, streaming and merging ---------------------------------------------------------------------
def test_statistics_are_additive_and_streaming_equals_fit():
    X, y, _ = piazza_data(5000)
    whole = SufficientStatistics.from_data(X, y)
    parts = SufficientStatistics.from_data(X[:1700], y[:1700]) + SufficientStatistics.from_data(X[1700:], y[1700:])
    np.testing.assert_allclose(parts.xtx, whole.xtx, rtol=1e-12)
    np.testing.assert_allclose(parts.xty, whole.xty, rtol=1e-12)
    assert parts.n == whole.n and parts.yty == pytest.approx(whole.yty, rel=1e-12)
    fitted = AdaSSP(1.0, 1e-6, random_state=4, noise_source="seeded", **BOUNDS).fit(X, y)
    streamed = AdaSSP(1.0, 1e-6, random_state=4, noise_source="seeded", **BOUNDS)
    for start in range(0, 5000, 999):
        streamed.partial_fit(X[start:start + 999], y[start:start + 999])
    np.testing.assert_allclose(streamed.release().coef_, fitted.coef_, rtol=1e-9)
    merged = AdaSSP(1.0, 1e-6, random_state=4, noise_source="seeded", **BOUNDS).partial_fit(X[:2000], y[:2000])
    merged.merge_statistics(SufficientStatistics.from_data(X[2000:], y[2000:]))
    np.testing.assert_allclose(merged.release().coef_, fitted.coef_, rtol=1e-9)
    with pytest.raises(AttributeError) as refused:  # scikit-learn's available_if: no partial_fit without bounds
        SSP(1.0, 1e-6).partial_fit(X, y)
    assert "bound_X and bound_y" in str(refused.value.__cause__)


# -- §5.12 the eigenvalue release overestimates λ_min with probability P(Z > √L) -------------------------------
def test_eigenvalue_overestimation_probability():
    """With Wang's constants and δ = 0.4, √L = √log(6/0.4) = 1.646, so P(λ̃ > λ_min) = P(Z > 1.646) = 0.0499.
    Over 3000 releases the count is Binomial(3000, 0.0499): sd 11.9, tolerance 4.5 sd."""
    X, y, _ = piazza_data(400, d=3)
    lam_min = np.linalg.eigvalsh(X.T @ X + np.eye(3))[0]
    model = AdaSSP(1.0, 0.4, noise="wang", noise_source="numpy", **BOUNDS).partial_fit(X, y)
    over = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReproductionOnlyWarning)
        for seed in range(3000):
            model.set_params(random_state=seed).release()
            over += model.lambda_min_noisy_ > lam_min
    p = norm.sf(math.sqrt(math.log(6 / 0.4)))
    assert abs(over - 3000 * p) < 4.5 * math.sqrt(3000 * p * (1 - p))
    # Piazza's Lemma 15 bound, δ' = 300^-1.1: exact tail 9.46e-5 <= δ'/(4√(π log(2/δ'))) = 1.007e-4
    dp = 300 ** -1.1
    assert norm.sf(math.sqrt(2 * math.log(2 / dp))) == pytest.approx(9.46e-5, rel=1e-3)
    assert dp / (4 * math.sqrt(math.pi * math.log(2 / dp))) == pytest.approx(1.007e-4, rel=1e-3)


# -- §5.13 empirical privacy smoke test ---------------------------------------------------------------------------
# 20,000 exact-sampler releases in pure Python: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
def test_empirical_privacy_on_neighbouring_datasets():
    """One coefficient of SSP (d = 1) on D and on D plus one extremal row: on every histogram bin with
    enough mass, Pr[bin | D] <= e^ε Pr[bin | D'] + δ, up to 4 sampling standard errors (a weak check)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (50, 1))
    y = np.clip(0.5 * X[:, 0] + rng.normal(0, 0.1, 50), -1, 1)
    X2, y2 = np.vstack([X, [[1.0]]]), np.append(y, -1.0)
    eps, delta, draws = 1.0, 1e-3, 10000
    m = SSP(eps, delta, bound_X=1, bound_y=1, noise_source="seeded").partial_fit(X, y)
    m2 = SSP(eps, delta, bound_X=1, bound_y=1, noise_source="seeded").partial_fit(X2, y2)
    a, b = np.empty(draws), np.empty(draws)
    for s in range(draws):  # the attribute set_params would set, without its signature inspection each time
        m.random_state, m2.random_state = s, 10**6 + s
        a[s], b[s] = m.release().coef_[0], m2.release().coef_[0]
    edges = np.quantile(np.concatenate([a, b]), np.linspace(0.02, 0.98, 25))
    pa, pb = np.histogram(a, edges)[0] / draws, np.histogram(b, edges)[0] / draws
    se = np.sqrt((pa + math.e**2 * pb) / draws)
    assert np.all(pa <= math.e**eps * pb + delta + 4 * se) and np.all(pb <= math.e**eps * pa + delta + 4 * se)


# -- baselines, accountant, warnings, bad input, scikit-learn ------------------------------------------------------
def test_baselines_and_utility_at_large_budget():
    X, y, theta = piazza_data(20000)
    ols = OLS().fit(X, y)
    np.testing.assert_allclose(ols.coef_, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-8)
    np.testing.assert_allclose(Ridge(alpha=1.0).fit(X, y).coef_, np.linalg.solve(X.T @ X + np.eye(10), X.T @ y))
    assert not TrivialPredictor().fit(X, y).coef_.any() and ols.privacy_cost_ is None
    private = SSP(100.0, 1e-6, random_state=0, noise_source="seeded", **BOUNDS).fit(X, y)
    assert np.sum((private.coef_ - theta) ** 2) < 3 * np.sum((ols.coef_ - theta) ** 2) + 1e-3


def test_accountant_records_and_refuses_before_noise():
    X, y, _ = piazza_data(300)
    acc = PrivacyAccountant(cap=PrivacyCost(1.0, 1e-5))
    SSP(0.6, 5e-6, accountant=acc, random_state=0, noise_source="seeded", **BOUNDS).fit(X, y)
    assert acc.spent == PrivacyCost(0.6, 5e-6) and acc.releases[0][0] == "SSP"
    late = AdaSSP(0.6, 1e-6, accountant=acc, random_state=0, noise_source="seeded", **BOUNDS)
    with pytest.raises(BudgetExceeded):
        late.fit(X, y)
    assert not hasattr(late, "coef_") and len(acc.releases) == 1


def test_data_derived_bounds_warn_and_bounds_are_enforced():
    X, y, _ = piazza_data(300)
    with pytest.warns(PrivacyLeakWarning, match="bound_X not given"):
        SSP(1.0, 1e-6, bound_y=1.5).fit(X, y)
    m = SSP(1.0, 1e-6, bound_X=0.5, bound_y=0.05, random_state=0, noise_source="seeded").fit(X, y)
    assert m.n_bounded_ == 300  # every row had norm 1 > 0.5: scaled into the ball


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=float("inf")), "epsilon"), (dict(delta=0.0), "delta"),
    (dict(delta=1.0), "delta"), (dict(bound_X=-1.0), "bound_X"), (dict(noise="laplace"), "noise"),
    (dict(ridge_offset=-1.0), "ridge_offset")])
def test_bad_parameters_raise_naming_the_rule(kwargs, match):
    X, y, _ = piazza_data(100)
    params = dict(epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.5)
    params.update(kwargs)
    with pytest.raises(ValueError, match=match):
        SSP(**params).fit(X, y)
    with pytest.raises(ValueError, match="gamma"):
        AdaSSP(1.0, 1e-6, gamma=1.0, **BOUNDS).fit(X, y)


def test_bad_data_raise():
    X, y, _ = piazza_data(100)
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SSP(1.0, 1e-6, **BOUNDS).fit(bad, y)
    with pytest.raises(ValueError):
        SSP(1.0, 1e-6, **BOUNDS).fit(X, y[:50])
    model = SSP(1.0, 1e-6, random_state=0, noise_source="seeded", **BOUNDS).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(ValueError, match="nothing to release"):
        SSP(1.0, 1e-6, **BOUNDS).release()


@pytest.mark.parametrize("estimator", [OLS(), Ridge(), TrivialPredictor(),
                                       SSP(bound_X=10, bound_y=10, random_state=0, noise_source="seeded"),
                                       AdaSSP(bound_X=10, bound_y=10, random_state=0, noise_source="seeded"),
                                       ConstSSPFull(bound_X=10, bound_y=10, random_state=0, noise_source="seeded")],
                         ids=lambda e: type(e).__name__)
def test_scikit_learn_estimator_checks(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed
