"""Functional mechanism and output perturbation (ldp.regression.objective): sensitivities checked
exactly on neighbouring datasets, each noise draw counted and reconstructed, the large-ε limits, the
Gamma law of the output noise's norm (fixed seed, tolerance from the Gamma variance), the ball
constraint, streaming, the accountant, bad input and scikit-learn's estimator checks."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from ldp.privacy.accountant import BudgetExceeded, PrivacyAccountant, PrivacyCost
from ldp.regression.objective import (
    FunctionalMechanism,
    OutputPerturbation,
    constrained_ridge,
    functional_mechanism_sensitivity,
    minimise_noisy_quadratic,
    objective_coefficients,
    output_perturbation_sensitivity,
)
from ldp.regression.stats import SufficientStatistics


def box_data(n: int, d: int, seed: int = 0, noise: float = 0.1):
    """Features uniform in [−1, 1]^d, y = xᵀθ + noise clipped to [−1, 1]."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    theta = rng.uniform(-1, 1, d) / d
    return X, np.clip(X @ theta + rng.normal(0, noise, n), -1, 1)


def ball_data(n: int, d: int, seed: int = 0):
    """The box data scaled by 1/√d: rows in the unit ball, y in [−1, 1]."""
    X, y = box_data(n, d, seed)
    return X / math.sqrt(d), y


class CountingGenerator(np.random.Generator):
    """A numpy Generator that counts the values each sampling method draws."""

    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.counts: dict[str, int] = {}

    def _count(self, name: str, size) -> None:
        self.counts[name] = self.counts.get(name, 0) + (1 if size is None else int(np.prod(size)))

    def laplace(self, loc=0.0, scale=1.0, size=None):
        self._count("laplace", size)
        return super().laplace(loc, scale, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        self._count("normal", size)
        return super().normal(loc, scale, size)

    def gamma(self, shape, scale=1.0, size=None):
        self._count("gamma", size)
        return super().gamma(shape, scale, size)


# -- functional mechanism: sensitivity -----------------------------------------------------------------------
def _row_coefficients(x: np.ndarray, y: float) -> np.ndarray:
    return objective_coefficients(np.outer(x, x), y * x)


def test_objective_coefficients_are_the_polynomial():
    X, y = box_data(40, 4, seed=3)
    c = objective_coefficients(X.T @ X, X.T @ y)
    assert c.size == 4 * 5 // 2 + 4
    rng = np.random.default_rng(0)
    iu = np.triu_indices(4)
    for _ in range(5):  # Σ(y − Xw)² − yᵀy equals Σ_φ c_φ·φ(w) at random w
        w = rng.normal(size=4)
        monomials = np.concatenate([w[iu[0]] * w[iu[1]], w])
        assert c @ monomials == pytest.approx(np.sum((y - X @ w) ** 2) - y @ y, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_sensitivity_bound_on_random_and_extremal_neighbours(d):
    delta = functional_mechanism_sensitivity(d)
    assert delta == 2 * (d * d + 2 * d)
    rng = np.random.default_rng(d)
    # random neighbouring datasets (replace one row), the L1 difference of the full coefficient vectors
    for _ in range(200):
        X = rng.uniform(-1, 1, (15, d))
        y = rng.uniform(-1, 1, 15)
        X2, y2 = X.copy(), y.copy()
        i = rng.integers(15)
        X2[i] = rng.choice([-1.0, 1.0], d) if rng.random() < 0.5 else rng.uniform(-1, 1, d)
        y2[i] = rng.choice([-1.0, 1.0])
        diff = objective_coefficients(X2.T @ X2, X2.T @ y2) - objective_coefficients(X.T @ X, X.T @ y)
        assert np.abs(diff).sum() <= delta * (1 + 1e-12)
    # extremal rows: every pair of rows with entries in {−1, 0, 1} and y in {−1, 1} (small d only)
    if d <= 3:
        rows = [(np.array(x, float), float(t)) for x in itertools.product((-1, 0, 1), repeat=d) for t in (-1, 1)]
        coefs = np.array([_row_coefficients(x, t) for x, t in rows])
        worst = max(np.abs(coefs - c).sum(axis=1).max() for c in coefs)
        assert worst <= delta - d  # even the tighter bound 2(d² + 2d) − d holds (diagonal terms are ≥ 0)
        assert worst == (d + 1) ** 2 >= delta / 2  # the bound is loose, but by less than a factor 2
        # d = 1: x: 1 → −1 with y = 1 moves only the linear coefficient, by 4


def test_every_coefficient_is_noised_once_with_laplace_of_scale_delta_over_epsilon():
    d, eps, seed = 4, 2.0, 11
    X, y = box_data(60, d)
    gen = CountingGenerator(seed)
    m = FunctionalMechanism(eps, random_state=gen, noise_source="numpy").fit(X, y)
    n_coef = d * (d + 1) // 2 + d
    assert gen.counts == {"laplace": n_coef}  # d(d+1)/2 quadratic + d linear draws, nothing else
    b = 2 * (d * d + 2 * d) / eps
    assert m.sensitivity_ == 2 * (d * d + 2 * d) and m.noise_scale_ == pytest.approx(b)
    # the released coefficients minus the exact ones are exactly those draws, in order
    replay = np.random.Generator(np.random.PCG64(seed))
    draws = np.concatenate([replay.laplace(0, b, d * (d + 1) // 2), replay.laplace(0, b, d)])
    noise = m.noisy_coefficients_ - objective_coefficients(X.T @ X, X.T @ y)
    np.testing.assert_allclose(noise, draws, rtol=1e-9, atol=1e-9)
    assert np.all(noise != 0)
    # the diagonal of the quadratic form is noised (a public implementation leaves it exact)
    diag_noise = np.diag(m.noisy_quadratic_) - np.diag(X.T @ X)
    iu = np.triu_indices(d)
    np.testing.assert_allclose(diag_noise, draws[: iu[0].size][iu[0] == iu[1]], rtol=1e-9, atol=1e-9)
    assert np.all(np.abs(diag_noise) > 0)
    # off-diagonal entries of M̃ carry half the coefficient's draw (w_j w_l appears twice in wᵀM̃w)
    off = (m.noisy_quadratic_ - X.T @ X)[iu][iu[0] != iu[1]]
    np.testing.assert_allclose(off, draws[: iu[0].size][iu[0] != iu[1]] / 2, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m.noisy_linear_ + 2 * X.T @ y, draws[iu[0].size:], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m.noisy_quadratic_, m.noisy_quadratic_.T)


def test_noise_scale_is_laplace_statistically():
    """Pooled draws of many releases: E|Lap(b)| = b, sd of |Lap(b)| = b, so the mean of N draws is
    within 5b/√N of b."""
    d, eps = 2, 5.0
    X, y = box_data(30, d)
    m = FunctionalMechanism(eps, random_state=np.random.default_rng(4), noise_source="seeded").fit(X, y)
    exact = objective_coefficients(m.statistics_.xtx, m.statistics_.xty)
    draws = []
    for _ in range(400):
        draws.append(m.release().noisy_coefficients_ - exact)
    a = np.abs(np.concatenate(draws))
    b = m.noise_scale_
    assert abs(a.mean() - b) < 5 * b / math.sqrt(a.size)


# -- functional mechanism: solution ------------------------------------------------------------------------
def test_large_epsilon_gives_ols():
    X, y = box_data(500, 5, seed=2)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    m = FunctionalMechanism(1e12, random_state=0, noise_source="seeded").fit(X, y)
    np.testing.assert_allclose(m.coef_, ols, rtol=1e-6, atol=1e-8)
    assert m.n_clipped_ == 0 and m.n_trimmed_ == 0 and m.privacy_cost_ == PrivacyCost(1e12)


def test_indefinite_objective_is_trimmed_and_never_nan():
    X, y = box_data(50, 6, seed=5)
    trimmed = 0
    for seed in range(20):
        m = FunctionalMechanism(0.05, ridge_factor=0.0, random_state=seed, noise_source="numpy").fit(X, y)
        assert np.isfinite(m.coef_).all()
        trimmed += m.n_trimmed_
    assert trimmed > 0  # noise far above XᵀX: some eigenvalues are negative and get dropped
    for eps in (1e-280, 1e-300):  # absurd budgets: finite coefficients or a ValueError, never NaN
        try:
            coef = FunctionalMechanism(eps, random_state=0, noise_source="numpy").fit(X, y).coef_
        except ValueError as exc:
            assert "epsilon" in str(exc) or "non-finite" in str(exc)
        else:
            assert np.isfinite(coef).all()
    # the remedy itself: an indefinite M with the ridge too small keeps only the positive direction
    w, dropped = minimise_noisy_quadratic(np.diag([2.0, -1.0]), np.array([-4.0, 3.0]), ridge=0.5)
    assert dropped == 1 and w == pytest.approx([4.0 / (2 * 2.5), 0.0])
    assert minimise_noisy_quadratic(-np.eye(3), np.ones(3))[0].tolist() == [0.0, 0.0, 0.0]


def test_clipping_is_enforced_and_counted():
    X, y = box_data(100, 3, seed=6)
    X[0, 1], X[5, 2], X[5, 0], y[7] = 3.0, -2.0, 1.5, -4.0
    m = FunctionalMechanism(1e12, random_state=0, noise_source="seeded").fit(X, y)
    assert m.n_clipped_ == 4 and m.n_bounded_ == 3
    Xc, yc = np.clip(X, -1, 1), np.clip(y, -1, 1)
    np.testing.assert_allclose(m.statistics_.xtx, Xc.T @ Xc)
    np.testing.assert_allclose(m.coef_, np.linalg.lstsq(Xc, yc, rcond=None)[0], rtol=1e-6)


# -- output perturbation ------------------------------------------------------------------------------------
def test_output_perturbation_constants():
    assert output_perturbation_sensitivity(100, 0.5, 1.0) == pytest.approx(2 * 2 * (1 + 1.0) / (100 * 0.5))
    X, y = ball_data(400, 3)
    m = OutputPerturbation(0.7, random_state=0, noise_source="numpy").fit(X, y)
    assert m.lambda_ == pytest.approx(math.sqrt(3 / (400 * 0.7)))  # lam="auto"
    assert m.lipschitz_ == 4.0 and m.sensitivity_ == pytest.approx(2 * 4.0 / (400 * m.lambda_))
    assert m.noise_scale_ == pytest.approx(m.sensitivity_ / 0.7)


def test_output_perturbation_sensitivity_holds_on_neighbours():
    """‖ŵ(D) − ŵ(D')‖ ≤ 2L/(nλ) for replace-one neighbours, with the ball constraint active or not."""
    rng = np.random.default_rng(7)
    n, d, lam = 30, 3, 0.2
    for radius in (0.2, 1.0, 5.0):
        bound = output_perturbation_sensitivity(n, lam, radius)
        worst = 0.0
        for _ in range(200):
            X, y = ball_data(n, d, seed=int(rng.integers(1 << 30)))
            X2, y2 = X.copy(), y.copy()
            v = rng.normal(size=d)
            X2[0], y2[0] = v / np.linalg.norm(v), rng.choice([-1.0, 1.0])
            w1 = constrained_ridge(X.T @ X, X.T @ y, n * lam / 2, radius)[0]
            w2 = constrained_ridge(X2.T @ X2, X2.T @ y2, n * lam / 2, radius)[0]
            worst = max(worst, float(np.linalg.norm(w1 - w2)))
        assert worst <= bound


def test_large_epsilon_gives_the_constrained_ridge():
    X, y = ball_data(300, 4, seed=8)
    n, lam = 300, 0.05
    for radius, active in ((10.0, False), (0.3, True)):
        w, mu, solver = constrained_ridge(X.T @ X, X.T @ y, n * lam / 2, radius)
        assert (mu > 0) == active and solver == ("bisection" if active else "solve")
        m = OutputPerturbation(1e12, lam=lam, radius=radius, random_state=0, noise_source="seeded").fit(X, y)
        np.testing.assert_allclose(m.coef_, w, rtol=1e-6, atol=1e-9)
        if not active:
            np.testing.assert_allclose(w, np.linalg.solve(X.T @ X + n * lam / 2 * np.eye(4), X.T @ y))


def test_constrained_solution_lies_in_the_ball_and_is_optimal():
    from scipy.optimize import minimize

    rng = np.random.default_rng(9)
    for trial in range(10):
        X, y = ball_data(80, 5, seed=trial)
        y = np.clip(y * 5, -1, 1)
        n, lam, radius = 80, float(rng.uniform(0.001, 0.1)), float(rng.uniform(0.05, 0.5))
        w, mu, _ = constrained_ridge(X.T @ X, X.T @ y, n * lam / 2, radius)
        assert np.linalg.norm(w) <= radius and mu > 0
        assert np.linalg.norm(w) == pytest.approx(radius, rel=1e-9)  # active constraint: on the sphere

        def J(v, X=X, y=y, lam=lam):
            return np.mean((y - X @ v) ** 2) + lam / 2 * v @ v

        ref = minimize(J, np.zeros(5), method="SLSQP", options={"ftol": 1e-14, "maxiter": 500},
                       constraints=[{"type": "ineq", "fun": lambda v, r=radius: r**2 - v @ v}])
        assert J(w) <= ref.fun + 1e-9


def test_output_noise_norm_is_gamma_and_direction_uniform():
    """Fixed data, N releases: ‖coef − ŵ‖ ~ Gamma(d, θ = Δ₂/ε). The sample mean is within 5 sd
    (sd √d·θ/√N) of dθ, and the sample variance within 5 sd (sd ≈ dθ²·√((2 + 6/d)/N), from the Gamma
    kurtosis) of dθ². The mean unit direction is within 5/√(dN) of 0 in every coordinate."""
    d, eps, lam, N = 3, 1.0, 0.1, 4000
    X, y = ball_data(200, d, seed=10)
    gen = CountingGenerator(12)
    m = OutputPerturbation(eps, lam=lam, random_state=gen, noise_source="numpy").fit(X, y)
    assert gen.counts == {"normal": d, "gamma": 1}
    w_hat = constrained_ridge(m.statistics_.xtx, m.statistics_.xty, 200 * lam / 2, 1.0)[0]
    theta = output_perturbation_sensitivity(200, lam, 1.0) / eps
    noise = np.array([m.release().coef_ - w_hat for _ in range(N)])
    r = np.linalg.norm(noise, axis=1)
    assert abs(r.mean() - d * theta) < 5 * math.sqrt(d) * theta / math.sqrt(N)
    assert abs(r.var(ddof=1) - d * theta**2) < 5 * d * theta**2 * math.sqrt((2 + 6 / d) / N)
    assert np.all(np.abs((noise / r[:, None]).mean(axis=0)) < 5 / math.sqrt(d * N))


# -- both: streaming, accountant, bad input, scikit-learn ---------------------------------------------------
@pytest.mark.parametrize("cls, data", [(FunctionalMechanism, box_data), (OutputPerturbation, ball_data)])
def test_streaming_and_merging_match_fit(cls, data):
    X, y = data(300, 4, seed=13)
    X = X * 1.2  # some rows leave the domain: every path must clip them the same way
    full = cls(0.8, random_state=5, noise_source="seeded").fit(X, y)
    stream = cls(0.8, random_state=5, noise_source="seeded")
    for start in range(0, 300, 70):
        stream.partial_fit(X[start:start + 70], y[start:start + 70])
    assert not hasattr(stream, "coef_")  # nothing released yet
    np.testing.assert_allclose(stream.release().coef_, full.coef_, rtol=1e-10, atol=1e-12)
    assert stream.n_bounded_ == full.n_bounded_ > 0
    part = cls(0.8, random_state=5, noise_source="seeded").partial_fit(X[:150], y[:150])
    other = SufficientStatistics.from_data(*full._enforce(X[150:], y[150:])[:2])
    np.testing.assert_allclose(part.merge_statistics(other).release().coef_, full.coef_, rtol=1e-10, atol=1e-12)
    merged_only = cls(0.8, random_state=5, noise_source="seeded").merge_statistics(full.statistics_.copy()).release()
    np.testing.assert_allclose(merged_only.coef_, full.coef_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls, data", [(FunctionalMechanism, box_data), (OutputPerturbation, ball_data)])
def test_accountant_records_epsilon_and_refuses_before_noise(cls, data):
    X, y = data(100, 3)
    acc = PrivacyAccountant(cap=PrivacyCost(1.0))
    m = cls(0.6, accountant=acc, random_state=0, noise_source="seeded").fit(X, y)
    assert m.privacy_cost_ == PrivacyCost(0.6) and acc.spent == PrivacyCost(0.6)
    assert acc.releases == [(cls.__name__, PrivacyCost(0.6))]
    late = cls(0.6, accountant=acc, random_state=0, noise_source="seeded")
    with pytest.raises(BudgetExceeded):
        late.fit(X, y)
    assert not hasattr(late, "coef_") and len(acc.releases) == 1


@pytest.mark.parametrize("cls, kwargs, match", [
    (FunctionalMechanism, dict(epsilon=0.0), "epsilon"), (FunctionalMechanism, dict(epsilon=math.inf), "epsilon"),
    (FunctionalMechanism, dict(epsilon="1"), "epsilon"), (FunctionalMechanism, dict(delta=1e-6), "pure ε-DP"),
    (FunctionalMechanism, dict(ridge_factor=-1.0), "ridge_factor"),
    (FunctionalMechanism, dict(ridge_factor=math.nan), "ridge_factor"),
    (OutputPerturbation, dict(epsilon=-1.0), "epsilon"), (OutputPerturbation, dict(delta=0.1), "pure ε-DP"),
    (OutputPerturbation, dict(lam=0.0), "lam"), (OutputPerturbation, dict(lam="big"), "lam"),
    (OutputPerturbation, dict(radius=0.0), "radius"), (OutputPerturbation, dict(radius=math.inf), "radius"),
])
def test_bad_parameters_raise_naming_the_rule_and_spend_nothing(cls, kwargs, match):
    X, y = ball_data(50, 3)
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match=match):
        cls(**{"epsilon": 1.0, **kwargs}, accountant=acc).fit(X, y)
    good = cls(1.0, accountant=acc).partial_fit(X, y)
    good.set_params(**kwargs)
    with pytest.raises(ValueError, match=match):
        good.release()
    assert acc.releases == []
    assert cls(1.0, delta=0).fit(X, y).privacy_cost_ == PrivacyCost(1.0)  # δ = 0 is accepted


@pytest.mark.parametrize("cls", [FunctionalMechanism, OutputPerturbation])
def test_bad_data_raise(cls):
    X, y = ball_data(50, 3)
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls(1.0).fit(bad, y)
    with pytest.raises(ValueError):
        cls(1.0).fit(X, y[:20])
    model = cls(1.0, random_state=0, noise_source="seeded").fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="nothing to release"):
        cls(1.0).release()
    with pytest.raises(ValueError, match="features"):
        cls(1.0).partial_fit(X, y).partial_fit(X[:, :2], y)


@pytest.mark.parametrize("estimator", [FunctionalMechanism(random_state=0, noise_source="seeded"),
                                       OutputPerturbation(random_state=0, noise_source="seeded")],
                         ids=lambda e: type(e).__name__)
def test_scikit_learn_estimator_checks(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed
