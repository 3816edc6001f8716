"""Robust private linear regression (ldp.regression.rplr): the exact claims of seeds-regression.md §5
(items 2, 3, 9 and 10), the Laplace noise (scales, symmetry, draw order, one statistical check with
fixed seeds), accounting, warnings, bad input, and the auxiliary-data searches on small configurations."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from ldp.privacy.accountant import BudgetExceeded, PrivacyAccountant, PrivacyCost, compose_sequential
from ldp.regression.mechanisms import PrivacyLeakWarning
from ldp.regression.rplr import (
    DEFAULT_OMEGA_GRID,
    DEFAULT_SPLIT,
    THESIS_OMEGA_GRID,
    NonPrivateRobustLR,
    RobustPrivateLR,
    clip_data,
    posterior_mean,
    rplr_noise_scales,
    rplr_sensitivities,
)
from ldp.regression.rplr_search import (
    _rho_fast,
    auxiliary_data,
    choose_clipping,
    choose_split,
    model_311,
    preprocess,
    spearman,
    spearman_columns,
    split_grid,
)
from ldp.regression.stats import SufficientStatistics


def data(n: int = 300, d: int = 5, seed: int = 0):
    X, y, _ = model_311(n, d, seed)
    return preprocess(X, y)


def upper_l1(m: np.ndarray) -> float:
    return float(np.abs(m[np.triu_indices(m.shape[0])]).sum())


# -- §5.2 replace-one L1 sensitivities after clipping --------------------------------------------------------------
def test_replace_one_sensitivities_are_attained_where_the_thesis_says():
    """‖ΔZᵀu‖₁ = 2d·B_x·B_y at v = B_x·1, v̂ = −B_x·1, w = ŵ = B_y, and |Δuᵀu| = B_y² at w = B_y,
    ŵ = 0. The statistics go through the estimator's own clipping: the raw rows lie outside the bounds."""
    d, bx, by = 4, 0.5, 2.0
    rng = np.random.default_rng(0)
    X, y = rng.standard_cauchy((30, d)), rng.standard_cauchy(30)
    sens_xx, sens_xy, sens_yy = rplr_sensitivities(d, bx, by)
    assert (sens_xx, sens_xy, sens_yy) == (d * (d + 1) * bx**2, 2 * d * bx * by, by**2)

    def stats(X, y):
        return NonPrivateRobustLR(clip_X=bx, clip_y=by).fit(X, y).released_statistics_

    X1, y1, X2, y2 = X.copy(), y.copy(), X.copy(), y.copy()
    X1[7], y1[7] = 10.0, 50.0  # clipped to v = B_x·1, w = B_y
    X2[7], y2[7] = -10.0, 50.0  # v̂ = −B_x·1, ŵ = B_y
    a, b = stats(X1, y1), stats(X2, y2)
    assert np.abs(a.xty - b.xty).sum() == pytest.approx(sens_xy, rel=1e-12)
    assert upper_l1(a.xtx - b.xtx) <= sens_xx  # vvᵀ = v̂v̂ᵀ here: 0
    y2[7] = 0.0
    assert abs(stats(X1, y1).yty - stats(X1, y2).yty) == pytest.approx(sens_yy, rel=1e-12)


def test_replace_one_sensitivity_bounds_hold_on_random_neighbours():
    """Bounds on 5,000 random replaced rows (Cauchy: most entries are clipped), by the exact row-change
    identities ΔZᵀZ = vvᵀ − v̂v̂ᵀ, ΔZᵀu = vw − v̂ŵ, Δuᵀu = w² − ŵ², plus a few full data sets.
    The ZᵀZ bound is not attained for d ≥ 2 (§1.5): an alternating-sign pair reaches 8 of its 20·B_x²."""
    d, bx, by = 4, 0.3, 1.5
    rng = np.random.default_rng(1)
    v = clip_data(rng.standard_cauchy((5000, d)), np.zeros(5000), bx, by)[0]
    vh = clip_data(rng.standard_cauchy((5000, d)), np.zeros(5000), bx, by)[0]
    w = np.clip(rng.standard_cauchy(5000), -by, by)
    wh = np.clip(rng.standard_cauchy(5000), -by, by)
    iu = np.triu_indices(d)
    dzz = np.einsum("ki,kj->kij", v, v) - np.einsum("ki,kj->kij", vh, vh)
    sens_xx, sens_xy, sens_yy = rplr_sensitivities(d, bx, by)
    assert np.abs(dzz[:, iu[0], iu[1]]).sum(axis=1).max() <= sens_xx
    assert np.abs(v * w[:, None] - vh * wh[:, None]).sum(axis=1).max() <= sens_xy + 1e-12
    assert np.abs(w**2 - wh**2).max() <= sens_yy + 1e-12
    alt = bx * np.array([1.0, -1.0, 1.0, -1.0])
    assert upper_l1(np.outer(bx * np.ones(d), bx * np.ones(d)) - np.outer(alt, alt)) == pytest.approx(8 * bx**2)
    X, y = rng.standard_cauchy((50, d)), rng.standard_cauchy(50)
    for i in range(5):
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = rng.standard_cauchy(d) * 10, rng.standard_cauchy() * 10
        a = NonPrivateRobustLR(clip_X=bx, clip_y=by).fit(X, y).released_statistics_
        b = NonPrivateRobustLR(clip_X=bx, clip_y=by).fit(X2, y2).released_statistics_
        assert upper_l1(a.xtx - b.xtx) <= sens_xx + 1e-12
        assert np.abs(a.xty - b.xty).sum() <= sens_xy + 1e-12 and abs(a.yty - b.yty) <= sens_yy + 1e-12


# -- §5.3 the split composes to ε; the noise scales ----------------------------------------------------------------
@pytest.mark.parametrize("eps, split", [(2.0, DEFAULT_SPLIT), (0.7, (0.2, 0.5, 0.3)), (5.0, (0.05, 0.9, 0.05))])
def test_budget_split_composes_to_epsilon(eps, split):
    X, y = data()
    m = RobustPrivateLR(eps, clip_X=0.2, clip_y=2.0, split=split, random_state=0, noise_source="seeded").fit(X, y)
    assert len(m.budget_split_) == 3 and all(p.delta == 0 for p in m.budget_split_)
    assert compose_sequential(m.budget_split_).epsilon == pytest.approx(eps, rel=1e-12)
    for part, p in zip(m.budget_split_, split, strict=True):
        assert part.epsilon == pytest.approx(p * eps, rel=1e-12)
    assert m.privacy_cost_ == PrivacyCost(eps)


def test_noise_scales_equal_the_formulas():
    scales = rplr_noise_scales(10, 2.0, DEFAULT_SPLIT, 1.0, 1.0)
    assert [round(s, 1) for s in scales] == [157.1, 16.7, 10.0]  # seeds-regression.md §2.6
    assert scales == pytest.approx((110 / 0.7, 20 / 1.2, 1 / 0.1), rel=1e-12)
    X, y = data(d=3)
    d, eps, bx, by, (p1, p2, p3) = 3, 0.5, 0.3, 2.0, (0.2, 0.5, 0.3)
    m = RobustPrivateLR(eps, clip_X=bx, clip_y=by, split=(p1, p2, p3), random_state=0, noise_source="numpy").fit(X, y)
    expected = (d * (d + 1) * bx**2 / (p1 * eps), 2 * d * bx * by / (p2 * eps), by**2 / (p3 * eps))
    assert m.noise_scales_ == pytest.approx(expected, rel=1e-12)
    assert (m.clip_X_, m.clip_y_) == (bx, by)


def test_noise_is_symmetric_with_one_draw_per_distinct_entry_in_the_documented_order():
    """P: d(d+1)/2 Laplace draws in triu order, mirrored; then Q (d draws); then R. Replayed from the seed."""
    X, y = data(d=6)
    m = RobustPrivateLR(1.0, clip_X=0.2, clip_y=2.0, random_state=11, noise_source="numpy").fit(X, y)
    exact, noisy = m.statistics_, m.released_statistics_
    b_xx, b_xy, b_yy = m.noise_scales_
    rng = np.random.default_rng(11)
    iu = np.triu_indices(6)
    P = np.zeros((6, 6))
    P[iu] = rng.laplace(0.0, b_xx, 21)
    P = P + np.triu(P, 1).T
    Q, R = rng.laplace(0.0, b_xy, 6), rng.laplace(0.0, b_yy)
    np.testing.assert_allclose(noisy.xtx - exact.xtx, P, rtol=1e-12, atol=1e-12 * b_xx)
    np.testing.assert_allclose(noisy.xty - exact.xty, Q, rtol=1e-12, atol=1e-12 * b_xy)
    assert noisy.yty - exact.yty == pytest.approx(R, rel=1e-9, abs=1e-12 * b_yy)
    assert noisy.n == exact.n == 300  # n is public under bounded DP
    assert np.array_equal(exact.xtx, exact.xtx.T) and np.array_equal(noisy.xtx, noisy.xtx.T)
    assert len(set(np.round((noisy.xtx - exact.xtx)[iu], 9))) == 21


# many exact-sampler releases in pure Python: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
def test_xty_noise_variance_is_two_b_squared():
    """1,500 releases × d = 10 coordinates = N = 15,000 draws of Lap(b). Laplace has kurtosis 6, so the
    sample variance s² has relative SD √((6 − 1)/N) = 0.018, and the mean has SD √(2/N)·b = 0.012·b.
    Tolerances: 5 SDs (s²/2b² within 0.092 of 1, |mean| < 0.058·b). Fixed seeds, so the test is deterministic."""
    X, y = data(d=10)
    m = RobustPrivateLR(1.0, clip_X=0.2, clip_y=2.0).partial_fit(X, y)
    draws = []
    for seed in range(1500):
        m.set_params(random_state=seed, noise_source="seeded").release()
        draws.append(m.released_statistics_.xty - m.statistics_.xty)
    q = np.concatenate(draws)
    b = m.noise_scales_[1]
    assert q.size == 15000
    assert abs(q.var() / (2 * b * b) - 1) < 5 * math.sqrt(5 / q.size)
    assert abs(q.mean()) < 5 * math.sqrt(2 / q.size) * b


# -- §5.9 no noise gives ridge(λ = 1); with noise, (Sxx + I)⁻¹Sxy --------------------------------------------------
def test_without_noise_the_estimate_is_ridge_one():
    X, y = data(400, 6, seed=3)
    ridge = np.linalg.solve(X.T @ X + np.eye(6), X.T @ y)
    np.testing.assert_allclose(NonPrivateRobustLR().fit(X, y).coef_, ridge, rtol=1e-10)
    Z, u = np.clip(X, -0.1, 0.1), np.clip(y, -1, 1)
    np.testing.assert_allclose(NonPrivateRobustLR(clip_X=0.1, clip_y=1.0).fit(X, y).coef_,
                               np.linalg.solve(Z.T @ Z + np.eye(6), Z.T @ u), rtol=1e-10)
    # the private estimator itself at a budget so large that its noise is negligible (b_xx ≈ 1e-10)
    big = float(np.abs(X).max() + np.abs(y).max())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = RobustPrivateLR(1e15, clip_X=big, clip_y=big, random_state=0, noise_source="seeded").fit(X, y)
    np.testing.assert_allclose(m.coef_, ridge, rtol=1e-6)
    assert m.n_bounded_ == 0


def test_with_noise_the_estimate_is_the_posterior_mean_of_the_noisy_statistics():
    X, y = data(400, 6, seed=4)
    m = RobustPrivateLR(1.0, clip_X=0.2, clip_y=2.0, random_state=5, noise_source="seeded").fit(X[:300], y[:300])
    s = m.released_statistics_
    np.testing.assert_allclose(m.coef_, np.linalg.solve(s.xtx + np.eye(6), s.xty), rtol=1e-10)
    assert m.public_statistics_ is None
    # public rows: their exact clipped statistics are added; other precisions: (λ₀I + λS)⁻¹λb
    m = RobustPrivateLR(1.0, clip_X=0.2, clip_y=2.0, precision=2.0, prior_precision=3.0,
                        random_state=5, noise_source="seeded").fit(X[:300], y[:300], X[300:], y[300:])
    s, pub = m.released_statistics_, m.public_statistics_
    Z, u, _ = clip_data(X[300:], y[300:], 0.2, 2.0)
    np.testing.assert_allclose(pub.xtx, Z.T @ Z, rtol=1e-12)
    np.testing.assert_allclose(pub.xty, Z.T @ u, rtol=1e-12)
    a = 3.0 * np.eye(6) + 2.0 * (s.xtx + pub.xtx)
    np.testing.assert_allclose(m.coef_, np.linalg.solve(a, 2.0 * (s.xty + pub.xty)), rtol=1e-10)
    np.testing.assert_allclose(m.posterior_precision_, a, rtol=1e-12)
    np.testing.assert_allclose(m.predict(X[:5]), X[:5] @ m.coef_)
    mu, how = posterior_mean(s.xtx, s.xty, 2.0, 3.0)
    np.testing.assert_allclose(mu, np.linalg.solve(3 * np.eye(6) + 2 * s.xtx, 2 * s.xty), rtol=1e-10)
    assert how == "solve"


# -- §5.10 additivity, streaming, merging --------------------------------------------------------------------------
def test_statistics_are_additive_across_data_sets():
    X, y = data(500, 4, seed=6)
    A, B = slice(0, 320), slice(320, 500)
    clip = dict(clip_X=0.3, clip_y=1.5)
    whole = SufficientStatistics.from_data(*clip_data(X, y, 0.3, 1.5)[:2])
    parts = (SufficientStatistics.from_data(*clip_data(X[A], y[A], 0.3, 1.5)[:2])
             + SufficientStatistics.from_data(*clip_data(X[B], y[B], 0.3, 1.5)[:2]))
    np.testing.assert_allclose(parts.xtx, whole.xtx, rtol=1e-12)
    np.testing.assert_allclose(parts.xty, whole.xty, rtol=1e-12)
    assert parts.yty == pytest.approx(whole.yty, rel=1e-12) and parts.n == whole.n
    # B as the public part of a non-private fit = one fit on A ∪ B
    np.testing.assert_allclose(NonPrivateRobustLR(**clip).fit(X[A], y[A], X[B], y[B]).coef_,
                               NonPrivateRobustLR(**clip).fit(X, y).coef_, rtol=1e-10)
    # streaming and merging give the same release as one fit (same seed, same statistics)
    fitted = RobustPrivateLR(2.0, random_state=9, noise_source="seeded", **clip).fit(X[A], y[A], X[B], y[B])
    streamed = RobustPrivateLR(2.0, random_state=9, noise_source="seeded", **clip)
    for start in range(0, 320, 100):
        streamed.partial_fit(X[start:min(start + 100, 320)], y[start:min(start + 100, 320)])
    np.testing.assert_allclose(streamed.release(X[B], y[B]).coef_, fitted.coef_, rtol=1e-9)
    merged = RobustPrivateLR(2.0, random_state=9, noise_source="seeded", **clip)
    merged.merge_statistics(SufficientStatistics.from_data(*clip_data(X[:200], y[:200], 0.3, 1.5)[:2]))
    merged.merge_statistics(SufficientStatistics.from_data(*clip_data(X[200:320], y[200:320], 0.3, 1.5)[:2]))
    np.testing.assert_allclose(merged.release(X[B], y[B]).coef_, fitted.coef_, rtol=1e-9)
    total = fitted.released_statistics_ + fitted.public_statistics_
    np.testing.assert_allclose(fitted.coef_, np.linalg.solve(total.xtx + np.eye(4), total.xty), rtol=1e-10)


# -- accounting, warnings, bad input -------------------------------------------------------------------------------
def test_accountant_records_epsilon_and_refuses_before_noise():
    X, y = data()
    acc = PrivacyAccountant(cap=PrivacyCost(1.0))
    RobustPrivateLR(0.6, clip_X=0.2, clip_y=2.0, accountant=acc, random_state=0, noise_source="seeded").fit(X, y)
    assert acc.spent == PrivacyCost(0.6) and acc.releases[0][0] == "RobustPrivateLR"
    late = RobustPrivateLR(0.6, clip_X=0.2, clip_y=2.0, accountant=acc, random_state=0, noise_source="seeded")
    with pytest.raises(BudgetExceeded):
        late.fit(X, y)
    assert not hasattr(late, "coef_") and len(acc.releases) == 1
    bad = RobustPrivateLR(0.1, clip_X=0.2, clip_y=2.0, split=(0.5, 0.5, 0.5), accountant=acc)
    with pytest.raises(ValueError, match="sum to 1"):
        bad.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        RobustPrivateLR(0.1, clip_X=0.2, clip_y=2.0, accountant=acc).fit(X, y, X[:, :2], y)
    assert len(acc.releases) == 1  # refused before anything was spent
    assert NonPrivateRobustLR().fit(X, y).privacy_cost_ is None


def test_thresholds_from_the_data_warn_and_equal_omega_times_sd():
    X, y = data()
    with pytest.warns(PrivacyLeakWarning, match="clip_X = omega_x"):
        m = RobustPrivateLR(1.0, omega_x=0.5, clip_y=2.0, random_state=0, noise_source="seeded").fit(X, y)
    assert m.clip_X_ == pytest.approx(0.5 * np.std(X, ddof=1), rel=1e-12) and m.clip_y_ == 2.0
    with pytest.warns(PrivacyLeakWarning, match="clip_y = omega_y"):
        m = RobustPrivateLR(1.0, clip_X=0.2, omega_y=0.3, random_state=0, noise_source="seeded").fit(X, y)
    assert m.clip_y_ == pytest.approx(0.3 * np.std(y, ddof=1), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # fixed thresholds, or no privacy claim at all
        RobustPrivateLR(1.0, clip_X=0.2, clip_y=2.0, random_state=0, noise_source="seeded").fit(X, y)
        ref = NonPrivateRobustLR(omega_x=0.5, omega_y=0.3).fit(X, y)
    assert (ref.clip_X_, ref.clip_y_) == pytest.approx((0.5 * np.std(X, ddof=1), 0.3 * np.std(y, ddof=1)))
    assert NonPrivateRobustLR().fit(X, y).clip_X_ == math.inf
    with pytest.raises(AttributeError) as refused:  # scikit-learn's available_if: no partial_fit without clip_*
        RobustPrivateLR(1.0, omega_x=0.5, clip_y=2.0).partial_fit(X, y)
    assert "clip_X and clip_y" in str(refused.value.__cause__)
    with pytest.raises(ValueError, match="clip_X and clip_y"):
        RobustPrivateLR(1.0, omega_x=0.5, clip_y=2.0).merge_statistics(SufficientStatistics(5))


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=-1.0), "epsilon"), (dict(epsilon=float("nan")), "epsilon"),
    (dict(delta=1e-6), "delta"), (dict(split=(0.3, 0.3, 0.3)), "sum to 1"), (dict(split=(0.5, 0.5)), "three"),
    (dict(split=(0.0, 0.95, 0.05)), "> 0"), (dict(clip_X=-1.0), "clip_X"), (dict(clip_y=float("inf")), "clip_y"),
    (dict(omega_x=0.5), "not both"), (dict(precision=0.0), "precision"),
    (dict(prior_precision=-1.0), "prior_precision")])
def test_bad_parameters_raise_naming_the_rule(kwargs, match):
    X, y = data()
    params = dict(epsilon=1.0, clip_X=0.2, clip_y=2.0)
    params.update(kwargs)
    with pytest.raises(ValueError, match=match):
        RobustPrivateLR(**params).fit(X, y)


def test_bad_data_raise():
    X, y = data()
    model = RobustPrivateLR(1.0, clip_X=0.2, clip_y=2.0, random_state=0, noise_source="seeded")
    for bad_X, bad_y in ((np.where(np.arange(X.size).reshape(X.shape) == 7, np.nan, X), y),
                         (X, np.where(np.arange(y.size) == 3, np.inf, y))):
        with pytest.raises(ValueError, match="NaN|infinit"):
            model.fit(bad_X, bad_y)
    with pytest.raises(ValueError):
        model.fit(X, y[:50])
    with pytest.raises(ValueError):
        model.fit(X[:, 0], y)
    with pytest.raises(ValueError, match="both"):
        model.fit(X, y, public_X=X[:10])
    with pytest.raises(ValueError, match="NaN"):
        model.fit(X, y, X[:10], np.full(10, np.nan))
    model.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(ValueError, match="nothing to release"):
        RobustPrivateLR(1.0, clip_X=0.2, clip_y=2.0).release()


@pytest.mark.parametrize("estimator", [RobustPrivateLR(clip_X=10.0, clip_y=10.0, random_state=0, noise_source="seeded"),
                                       NonPrivateRobustLR(), NonPrivateRobustLR(clip_X=1.0, clip_y=1.0)],
                         ids=["RobustPrivateLR", "NonPrivateRobustLR", "NonPrivateRobustLR-clipped"])
def test_scikit_learn_estimator_checks(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed


# -- helpers: pre-processing, Spearman -----------------------------------------------------------------------------
def test_preprocess_and_auxiliary_data():
    X, y, beta = model_311(200, 5, 1)
    assert beta.shape == (5,) and X.shape == (200, 5)
    Xp, yp = preprocess(X, y)
    np.testing.assert_allclose(np.linalg.norm(Xp, axis=1), 1.0, rtol=1e-12)
    assert abs(yp.mean()) < 1e-12
    Xs, ys = auxiliary_data(50, 3, 4, random_state=0)
    assert Xs.shape == (4, 50, 3) and ys.shape == (4, 50)
    np.testing.assert_allclose(np.linalg.norm(Xs, axis=2), 1.0, rtol=1e-12)


def test_spearman_helpers_equal_scipy_with_nan_as_zero():
    rng = np.random.default_rng(0)
    y = rng.normal(size=60)
    pred = y[:, None] * rng.uniform(0, 1, 5) + rng.normal(size=(60, 5))
    pred[:, 1] = np.round(pred[:, 1])  # ties
    pred[:, 2] = 3.0  # constant: NaN in scipy → 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on the constant column
        expected = [spearmanr(pred[:, j], y)[0] for j in range(5)]
    expected[2] = 0.0
    np.testing.assert_allclose(spearman_columns(pred, y), expected, atol=1e-12)
    assert spearman(pred[:, 2], y) == 0.0 and spearman(pred[:, 0], y) == pytest.approx(expected[0], abs=1e-12)
    yr = np.round(y)  # ties in y too
    ry = rankdata(yr) - (yr.size + 1) / 2
    cont = pred[:, [0, 3, 4]].T  # continuous rows: the search's fast path agrees
    np.testing.assert_allclose(_rho_fast(cont, ry), [spearmanr(r, yr)[0] for r in cont], atol=1e-12)
    assert _rho_fast(np.full((1, 60), 2.0), ry)[0] == 0.0


# -- the auxiliary-data searches (small configurations) ------------------------------------------------------------
GRID = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


def test_default_grids():
    assert THESIS_OMEGA_GRID[0] == 0.1 and THESIS_OMEGA_GRID[-1] == 2.0 and len(THESIS_OMEGA_GRID) == 20
    assert DEFAULT_OMEGA_GRID[:4] == (0.005, 0.01, 0.02, 0.05) and DEFAULT_OMEGA_GRID[4:] == THESIS_OMEGA_GRID
    splits = split_grid()
    assert len(splits) == 171  # compositions of 20 twentieths into 3 parts, each 1..18
    assert all(abs(sum(s) - 1) < 1e-12 and min(s) >= 0.05 - 1e-12 and max(s) <= 0.9 + 1e-12 for s in splits)
    assert len(split_grid(0.1)) == 36
    with pytest.raises(ValueError, match="step"):
        split_grid(0.3)


@pytest.mark.parametrize("seed", [0, 1])
def test_choose_clipping_on_a_small_configuration(seed):
    """n = 200, d = 5, ε = 2, 6 data sets × 6 draws on a 7 × 7 grid (≈ 0.02 s). Robust over seeds 0–9
    (measured; the observed range in brackets):

    * clipping matters for x: the best score beats the best at ω_x = 2.0 by > 0.3 [0.53–0.82];
    * the best ω_x is ≤ 0.1 [0.01–0.05], and scores plateau as ω_x → 0: the best at 0.01 and at
      0.05 differ by < 0.02 [≤ 0.0021]. As B_x → 0, Sxx ∝ B_x² vanishes against the prior, and µ*
      tends to a multiple of Sxy, which Spearman does not see;
    * ω_y is not at the top edge: the best beats the best at ω_y = 2.0 by > 0.01 [0.021–0.045].
      The lower edge is flat (as ω_y → 0, u → B_y·sign(y), again scale-free), so it is not tested.
    """
    c = choose_clipping(200, 5, 2.0, grid=GRID, n_datasets=6, n_noise=6, random_state=seed)
    assert c.scores.shape == c.scores_se.shape == (7, 7)
    assert np.all(np.abs(c.scores) <= 1) and np.all(c.scores_se >= 0)
    i, j = GRID.index(c.omega_x), GRID.index(c.omega_y)
    assert c.score == c.scores.max() == c.scores[i, j]
    assert c.score - c.scores[-1].max() > 0.3
    assert c.omega_x <= 0.1 and abs(c.scores[0].max() - c.scores[1].max()) < 0.02
    assert c.omega_y < 2.0 and c.score - c.scores[:, -1].max() > 0.01
    assert len(c.table()) == 49 and c.split == DEFAULT_SPLIT
    again = choose_clipping(200, 5, 2.0, grid=GRID, n_datasets=6, n_noise=6, random_state=seed)
    np.testing.assert_array_equal(again.scores, c.scores)


def test_choose_clipping_scores_improve_with_epsilon_and_check_arguments():
    """Same auxiliary data and standard draws (same seed), only the noise scale changes. The best score
    at ε = 10 beats ε = 0.5 by > 0.1 (measured on seeds 0–9: 0.14–0.27)."""
    low = choose_clipping(200, 5, 0.5, grid=GRID, n_datasets=6, n_noise=6, random_state=0)
    high = choose_clipping(200, 5, 10.0, grid=GRID, n_datasets=6, n_noise=6, random_state=0)
    assert high.score - low.score > 0.1
    for kwargs, match in ((dict(n=1), "n must"), (dict(epsilon=0), "epsilon"), (dict(grid=()), "grid"),
                          (dict(split=(1, 1, 1)), "sum to 1"), (dict(n_noise=0), "n_noise")):
        args = dict(n=50, d=3, epsilon=1.0, n_datasets=2, n_noise=2)
        args.update(kwargs)
        with pytest.raises(ValueError, match=match):
            choose_clipping(**args)


def test_choose_split_on_a_small_configuration():
    """36 splits (step 0.1) × a 4 × 4 grid, 3 × 3 data sets and draws, n = 300, d = 5, ε = 2 (≈ 0.3 s).
    Xᵀy gets the largest share, as in the thesis (Xᵀy > XᵀX, yᵀy). yᵀy gets the smallest share
    (0.1), because the fixed-precision posterior mean does not use it. Seeds 0–9 all chose
    (0.1, 0.8, 0.1). Its lead over the next split is small (0.0003–0.0034), but it is systematic:
    every split sees the same data and draws, and a larger p2 only shrinks the Xᵀy noise. XᵀX gets
    the floor too (isotropic auxiliary data: see the module docstring), which differs from the
    thesis's (0.35, 0.60, 0.05)."""
    s = choose_split(300, 5, 2.0, step=0.1, grid=(0.01, 0.1, 0.5, 1.0), n_datasets=3, n_noise=3, random_state=0)
    assert len(s.table) == 36 and s.score == max(r["score"] for r in s.table)
    assert abs(sum(s.split) - 1) < 1e-12
    p1, p2, p3 = s.split
    assert p2 >= 0.5 and p2 > p1 and p3 == pytest.approx(0.1)
    quick = choose_split(quick=True, random_state=0)  # n = 500, d = 10, ε = 2 with QUICK_SPLIT_SEARCH
    assert len(quick.table) == 36 and quick.split[1] == max(quick.split)
