"""ldp.regression: weighted least squares, non-negative lasso selection, multiple-testing corrections.

Tolerances. Statistical checks: a mean of R replicates is within Z·σ/√R of its expectation, a
sample variance within Z·σ²·√(2/(R−1)), a sample covariance within Z·√((σ_jj·σ_kk + σ_jk²)/(R−1))
(normal theory), a proportion within Z·√(π(1−π)/N) of π, with Z = 4 standard errors; uniformity of
p-values uses a Kolmogorov–Smirnov test rejected below 1e-3. A correct implementation fails a single
check with probability ~6e-5 (Z = 4, two-sided) or 1e-3 (KS) over seeds; the seeds are fixed, so
the outcome is deterministic, and control tests show that the checks have power.
Numerical checks: a backward-stable least-squares solver has relative error
``≲ c·eps·(2κ/cos θ + κ²·tan θ)`` with κ the condition number and ``sin θ = ‖r‖/‖y‖`` (Golub & Van Loan,
*Matrix Computations*, 4th ed., §5.3); we take ``c = max(n, p)`` and allow twice that bound
when comparing two such solvers.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from sklearn.exceptions import ConvergenceWarning

from ldp.regression import (
    adjusted_p_values,
    benjamini_hochberg,
    bonferroni,
    entry_threshold,
    holm,
    least_squares,
    nonnegative_lasso,
)

EPS = np.finfo(np.float64).eps
Z = 4.0  # standard errors allowed in statistical checks
KS_FLOOR = 1e-3  # a Kolmogorov–Smirnov p-value below this fails the uniformity check
R = 2000  # replications in the Monte Carlo tests


def ls_bound(A: np.ndarray, y: np.ndarray) -> float:
    """First-order relative error bound of a backward-stable least-squares solve (G&VL §5.3)."""
    n, p = A.shape
    kappa = np.linalg.cond(A)
    b, *_ = np.linalg.lstsq(A, y, rcond=None)
    sin = np.linalg.norm(y - A @ b) / np.linalg.norm(y)
    cos = np.sqrt(1 - sin ** 2)
    return max(n, p) * EPS * (2 * kappa / cos + kappa ** 2 * sin / cos)


def design(rng: np.random.Generator, n: int, p: int) -> np.ndarray:
    """A well-conditioned design: an intercept and standard normal covariates."""
    return np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])


# ----------------------------------------------------------------------------------- least squares

def test_matches_lstsq_on_the_whitened_problem_and_sparse_input_is_identical():
    rng = np.random.default_rng(20240601)
    n, p = 40, 6
    X = design(rng, n, p)
    w = rng.uniform(0.5, 3.0, n)
    y = X @ rng.normal(size=p) + rng.normal(size=n) / np.sqrt(w)
    A, yw = np.sqrt(w)[:, None] * X, np.sqrt(w) * y
    b_ref, *_ = np.linalg.lstsq(A, yw, rcond=None)
    rss_ref = float(np.sum((yw - A @ b_ref) ** 2))
    bound = 2 * ls_bound(A, yw)

    fit = least_squares(X, y, weights=w)
    assert np.linalg.norm(fit.coef - b_ref) <= bound * np.linalg.norm(b_ref)
    assert (fit.rank, fit.df, fit.variance) == (p, n - p, "estimated")
    assert not fit.aliased.any()
    assert abs(fit.rss - rss_ref) <= bound * rss_ref  # the minimum is flat: the rss is even more stable
    assert fit.dispersion == fit.scale == pytest.approx(fit.rss / (n - p), rel=EPS)
    cov_ref = fit.dispersion * np.linalg.inv(A.T @ A)  # normal equations: error ~ κ²·eps
    kappa2 = np.linalg.cond(A) ** 2
    assert np.linalg.norm(fit.cov - cov_ref) <= max(n, p) * EPS * kappa2 * np.linalg.norm(cov_ref)
    np.testing.assert_array_equal(fit.std_error, np.sqrt(np.diag(fit.cov)))

    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array):
        sparse_fit = least_squares(fmt(X), y, weights=w)
        for name in ("coef", "cov", "std_error", "aliased"):
            np.testing.assert_array_equal(getattr(sparse_fit, name), getattr(fit, name), err_msg=name)
        assert (sparse_fit.rss, sparse_fit.dispersion, sparse_fit.rank) == (fit.rss, fit.dispersion, fit.rank)


def test_unweighted_default_is_ordinary_least_squares():
    rng = np.random.default_rng(7)
    X = design(rng, 30, 3)
    y = rng.normal(size=30)
    b_ref, *_ = np.linalg.lstsq(X, y, rcond=None)
    fit = least_squares(X, y)
    assert np.linalg.norm(fit.coef - b_ref) <= 2 * ls_bound(X, y) * np.linalg.norm(b_ref)
    np.testing.assert_array_equal(fit.coef, least_squares(X, y, weights=np.ones(30)).coef)


def monte_carlo(variance: str, phi: float, seed: int) -> dict:
    """R fits of a fixed heteroscedastic design, y = Xb + e with Var(e_i) = phi / w_i."""
    rng = np.random.default_rng(seed)
    n, p = 60, 4
    X = design(rng, n, p)
    w = rng.uniform(0.2, 5.0, n)
    b = np.array([1.0, -2.0, 0.0, 0.0])  # the last two coefficients are null
    coef, disp, cover = np.empty((R, p)), np.empty(R), np.empty((R, p), dtype=bool)
    p_values = {alt: np.empty((R, p)) for alt in ("greater", "less", "two-sided")}
    for r in range(R):
        y = X @ b + rng.normal(size=n) * np.sqrt(phi / w)
        fit = least_squares(X, y, weights=w, variance=variance)
        coef[r], disp[r] = fit.coef, fit.dispersion
        lo, hi = fit.confidence_interval(0.95)
        cover[r] = (lo <= b) & (b <= hi)
        for alt in p_values:
            p_values[alt][r] = fit.p_values(alt)
    true_cov = phi * np.linalg.inv(X.T @ (w[:, None] * X))
    return dict(b=b, coef=coef, disp=disp, cover=cover, p_values=p_values, true_cov=true_cov, n=n, df=n - p,
                last=fit)


def test_known_variance_is_unbiased_with_the_model_covariance():
    mc = monte_carlo("known", phi=1.0, seed=11)
    cov = mc["last"].cov
    # the reported covariance is the exact one (fixed design, phi = 1), up to an inversion's rounding
    assert np.linalg.norm(cov - mc["true_cov"]) <= mc["n"] * EPS * np.linalg.cond(cov) * np.linalg.norm(cov)
    assert mc["last"].scale == 1.0
    coef, b = mc["coef"], mc["b"]
    se_mean = np.sqrt(np.diag(cov) / R)
    assert np.all(np.abs(coef.mean(axis=0) - b) <= Z * se_mean)
    emp = np.cov(coef, rowvar=False)
    var = np.diag(cov)
    assert np.all(np.abs(np.diag(emp) / var - 1) <= Z * np.sqrt(2 / (R - 1)))
    sd_cov = np.sqrt((np.outer(var, var) + cov ** 2) / (R - 1))
    assert np.all(np.abs(emp - cov) <= Z * sd_cov)
    for alt in ("greater", "less", "two-sided"):  # z-tests of the null coefficients are exact
        for j in (2, 3):
            assert stats.kstest(mc["p_values"][alt][:, j], "uniform").pvalue > KS_FLOOR, (alt, j)


def test_estimated_dispersion_t_tests_and_coverage():
    phi = 3.0
    mc = monte_carlo("estimated", phi=phi, seed=12)
    df = mc["df"]
    # df·phi_hat/phi ~ chi²_df: mean phi, sd phi·sqrt(2/df)
    assert abs(mc["disp"].mean() - phi) <= Z * phi * np.sqrt(2 / df) / np.sqrt(R)
    for alt in ("greater", "less", "two-sided"):
        for j in (2, 3):
            assert stats.kstest(mc["p_values"][alt][:, j], "uniform").pvalue > KS_FLOOR, (alt, j)
    coverage = mc["cover"].mean(axis=0)
    assert np.all(np.abs(coverage - 0.95) <= Z * np.sqrt(0.95 * 0.05 / R))
    coef = mc["coef"]
    assert np.all(np.abs(coef.mean(axis=0) - mc["b"]) <= Z * np.sqrt(np.diag(mc["true_cov"]) / R))


def test_known_variance_with_misspecified_scale_is_detected():
    """Control: the KS check has power; z-tests that ignore phi = 3 are far from uniform."""
    mc = monte_carlo("known", phi=3.0, seed=13)
    assert stats.kstest(mc["p_values"]["two-sided"][:, 2], "uniform").pvalue < KS_FLOOR
    assert mc["cover"].mean() < 0.95 - Z * np.sqrt(0.95 * 0.05 / (R * 4))


@pytest.mark.parametrize("phi", [0.25, 4.0])
def test_conservative_scale_is_max_of_one_and_the_dispersion(phi):
    rng = np.random.default_rng(21)
    n, p = 50, 3
    X = design(rng, n, p)
    w = rng.uniform(0.5, 2.0, n)
    y = X @ np.array([0.5, 1.0, 0.0]) + rng.normal(size=n) * np.sqrt(phi / w)
    known = least_squares(X, y, weights=w, variance="known")
    estimated = least_squares(X, y, weights=w, variance="estimated")
    conservative = least_squares(X, y, weights=w, variance="conservative")
    assert conservative.scale == max(1.0, conservative.dispersion)
    assert (phi > 1) == (conservative.dispersion > 1)  # the draw lands on the intended side
    np.testing.assert_array_equal(conservative.cov, (estimated if phi > 1 else known).cov)
    np.testing.assert_array_equal(conservative.coef, known.coef)
    assert known.dispersion == estimated.dispersion == conservative.dispersion
    t = conservative.coef / conservative.std_error  # t-tests, not z-tests
    np.testing.assert_allclose(conservative.p_values("greater"), stats.t(n - p).sf(t), rtol=4 * EPS)
    np.testing.assert_allclose(known.p_values("greater"), stats.norm.sf(known.coef / known.std_error), rtol=4 * EPS)


def test_confidence_interval_uses_the_t_quantile():
    rng = np.random.default_rng(3)
    X = design(rng, 12, 3)
    fit = least_squares(X, rng.normal(size=12))
    lo, hi = fit.confidence_interval(0.9)
    q = stats.t(9).ppf(0.95)
    np.testing.assert_allclose(hi - fit.coef, q * fit.std_error, rtol=4 * EPS)
    np.testing.assert_allclose(fit.coef - lo, q * fit.std_error, rtol=4 * EPS)


# ----------------------------------------------------------------------------------- rank deficiency

@pytest.mark.parametrize("make_extra", [
    lambda X: X[:, 1],                      # an exact duplicate
    lambda X: 2.0 * X[:, 0] - 3.0 * X[:, 2],  # a linear combination of earlier columns
    lambda X: np.zeros(X.shape[0]),         # a zero column
])
def test_aliased_column_is_flagged_and_others_unchanged(make_extra):
    rng = np.random.default_rng(5)
    n, p = 30, 4
    X = design(rng, n, p)
    w = rng.uniform(0.5, 2.0, n)
    y = X @ rng.normal(size=p) + rng.normal(size=n) / np.sqrt(w)
    base = least_squares(X, y, weights=w)
    Xa = np.column_stack([X[:, :3], make_extra(X), X[:, 3:]])  # inserted at position 3, after its sources
    fit = least_squares(Xa, y, weights=w)
    keep = [0, 1, 2, 4]
    np.testing.assert_array_equal(fit.aliased, [False, False, False, True, False])
    assert (fit.rank, fit.df) == (base.rank, base.df)
    bound = 2 * ls_bound(np.sqrt(w)[:, None] * X, np.sqrt(w) * y)
    assert np.linalg.norm(fit.coef[keep] - base.coef) <= bound * np.linalg.norm(base.coef)
    assert abs(fit.dispersion - base.dispersion) <= bound * base.dispersion
    kappa2 = np.linalg.cond(np.sqrt(w)[:, None] * X) ** 2
    assert np.linalg.norm(fit.cov[np.ix_(keep, keep)] - base.cov) <= n * EPS * kappa2 * np.linalg.norm(base.cov)
    assert fit.coef[3] == 0 and fit.std_error[3] == np.inf
    assert np.all(fit.cov[3, keep] == 0) and np.all(fit.cov[keep, 3] == 0)
    for alt in ("greater", "less", "two-sided"):
        assert fit.p_values(alt)[3] == 1.0
    lo, hi = fit.confidence_interval()
    assert (lo[3], hi[3]) == (-np.inf, np.inf)


def test_the_later_of_two_duplicates_is_aliased():
    rng = np.random.default_rng(6)
    X = design(rng, 20, 3)
    y = rng.normal(size=20)
    fit = least_squares(np.column_stack([X[:, 2], X, X[:, 2]]), y)  # columns: x2, x0, x1, x2, x2
    np.testing.assert_array_equal(fit.aliased, [False, False, False, True, True])
    assert fit.rank == 3


def test_aliasing_across_column_blocks_follows_column_order():
    """Wide enough that the order-preserving basis is chosen over several column blocks."""
    rng = np.random.default_rng(10)
    n, p = 300, 200
    X = rng.normal(size=(n, p))
    sources, copies = np.array([3, 70, 130]), np.array([65, 140, 199])
    X[:, copies] = X[:, sources] * np.array([2.0, -1.0, 0.5])
    X[:, 100] = X[:, 0] + X[:, 90]  # a combination of columns in different blocks
    w = rng.uniform(0.5, 2.0, n)
    y = rng.normal(size=n)
    fit = least_squares(X, y, weights=w)
    expected = np.zeros(p, dtype=bool)
    expected[copies] = expected[100] = True
    np.testing.assert_array_equal(fit.aliased, expected)
    keep = ~expected
    ref = least_squares(X[:, keep], y, weights=w)
    bound = 2 * ls_bound(np.sqrt(w)[:, None] * X[:, keep], np.sqrt(w) * y)
    assert np.linalg.norm(fit.coef[keep] - ref.coef) <= bound * np.linalg.norm(ref.coef)
    assert (fit.rank, fit.df) == (ref.rank, ref.df) == (p - 4, n - p + 4)


@pytest.mark.parametrize("sparse", [False, True])
def test_more_columns_than_rows(sparse):
    rng = np.random.default_rng(8)
    n, p = 5, 8
    X = rng.normal(size=(n, p))
    y = rng.normal(size=n)
    Xin = sp.csr_matrix(X) if sparse else X
    fit = least_squares(Xin, y, variance="known")
    assert (fit.rank, fit.df) == (n, 0)
    np.testing.assert_array_equal(fit.aliased, [False] * n + [True] * (p - n))  # generic columns: first n kept
    b_ref = np.linalg.solve(X[:, :n], y)
    kappa = np.linalg.cond(X[:, :n])
    assert np.linalg.norm(fit.coef[:n] - b_ref) <= n * EPS * kappa * np.linalg.norm(b_ref)
    assert fit.rss <= (n * EPS * kappa * np.linalg.norm(y)) ** 2  # interpolation
    assert np.isnan(fit.dispersion) and fit.scale == 1.0
    assert np.all(np.isfinite(fit.std_error[:n])) and np.all(fit.std_error[n:] == np.inf)
    for variance in ("estimated", "conservative"):
        with pytest.raises(ValueError, match="dispersion cannot be estimated"):
            least_squares(Xin, y, variance=variance)


def test_wide_sparse_design_keeps_rank_equal_to_rows():
    rng = np.random.default_rng(9)
    n, p = 60, 400
    X = sp.random(n, p, density=0.1, format="csc", rng=rng)
    fit = least_squares(X, rng.normal(size=n), variance="known")
    assert fit.rank == np.linalg.matrix_rank(X.toarray()) == n
    assert fit.aliased.sum() == p - n


# ----------------------------------------------------------------------------------- lasso selection

def orthogonal_design(rng: np.random.Generator, p: int, copies: int = 4) -> sp.csc_matrix:
    """``copies`` stacked scaled identities: column j is v_j on rows j, j+p, …; columns are orthogonal."""
    v = rng.uniform(0.5, 2.0, p)
    return sp.csc_matrix(sp.vstack([sp.diags(v)] * copies))


def z_scores(X, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norms = np.sqrt(np.asarray(X.multiply(X).T @ w).ravel())
    return (X.T @ (w * y)) / norms, norms


def test_orthogonal_design_selection_is_the_one_sided_z_test():
    rng = np.random.default_rng(31)
    p, level = 500, 0.05
    X = orthogonal_design(rng, p)
    n = X.shape[0]
    w = rng.uniform(0.5, 2.0, n)
    b = np.zeros(p)
    b[:100] = rng.uniform(0.0, 3.0, 100)
    y = X @ b + rng.normal(size=n) / np.sqrt(w)
    z, norms = z_scores(X, y, w)
    t = entry_threshold(level)
    # ppf(1 − level) carries the rounding of 1 − level (≤ eps), amplified by dt/dq = 1/φ(t)
    assert t == pytest.approx(stats.norm.ppf(1 - level), rel=2 * EPS / (stats.norm.pdf(t) * t))

    sel = nonnegative_lasso(X, y, weights=w, level=level)
    assert sel.converged and sel.level == level and sel.threshold == t and sel.alpha == t / n
    np.testing.assert_array_equal(sel.support, np.flatnonzero(z > t))
    assert 0 < sel.support.size < p  # the example exercises both outcomes
    # soft thresholding in standardized units, converted back: b_j = max(0, z_j − t)/‖√W x_j‖;
    # z_j sums n terms, so its rounding error is ≲ n·eps·(|z_j| + t)
    expected = np.maximum(z - t, 0.0) / norms
    assert np.all(np.abs(sel.coef - expected) <= n * EPS * (np.abs(z) + t) / norms)
    assert np.all(sel.coef >= 0)

    dense = nonnegative_lasso(X.toarray(), y, weights=w, level=level)
    np.testing.assert_array_equal(dense.support, sel.support)
    by_alpha = nonnegative_lasso(X, y, weights=w, alpha=sel.alpha)
    np.testing.assert_array_equal(by_alpha.support, sel.support)
    assert by_alpha.threshold == pytest.approx(t, rel=2 * EPS)
    # n·(t/n) = t within 2 ulp, and d log sf / dt = −φ(t)/sf(t)
    assert by_alpha.level == pytest.approx(level, rel=2 * EPS * t * stats.norm.pdf(t) / level + EPS)


def test_null_entry_probability_is_the_level():
    rng = np.random.default_rng(32)
    p, level, reps = 2000, 0.05, 20
    X = orthogonal_design(rng, p)
    n = X.shape[0]
    w = rng.uniform(0.5, 2.0, n)
    selected = 0
    for _ in range(reps):
        sel = nonnegative_lasso(X, rng.normal(size=n) / np.sqrt(w), weights=w, level=level)
        selected += sel.support.size
    trials = p * reps
    assert abs(selected - trials * level) <= Z * np.sqrt(trials * level * (1 - level))


def test_zero_columns_are_never_selected():
    rng = np.random.default_rng(33)
    n, p = 40, 6
    X = np.abs(rng.normal(size=(n, p)))
    X[:, 2] = 0.0
    y = X @ np.full(p, 5.0) + rng.normal(size=n)
    for Xin in (X, sp.csc_matrix(X), sp.csr_matrix(X)):
        sel = nonnegative_lasso(Xin, y, level=0.01)
        assert sel.coef[2] == 0 and 2 not in sel.support
        assert np.all(sel.coef >= 0)
        assert sel.support.size > 0
    lil = sp.lil_matrix(X)
    lil[0, 2] = 1.0
    explicit = lil.tocsc()
    explicit.data[explicit.indptr[2]:explicit.indptr[3]] = 0.0  # an explicitly stored zero in column 2
    assert explicit.indptr[3] - explicit.indptr[2] == 1
    assert nonnegative_lasso(explicit, y, level=0.01).coef[2] == 0
    none = nonnegative_lasso(np.zeros((n, p)), y, level=0.01)
    assert none.support.size == 0 and none.converged


def test_negative_effects_are_not_selected():
    rng = np.random.default_rng(34)
    X = orthogonal_design(rng, 50)
    n = X.shape[0]
    b = np.full(50, -10.0)  # strongly negative: z_j ≈ −10·‖x_j‖ ≪ 0
    sel = nonnegative_lasso(X, X @ b + rng.normal(size=n), level=0.05)
    assert sel.support.size == 0 and np.all(sel.coef == 0)


def test_non_convergence_is_reported():
    rng = np.random.default_rng(36)
    n, p = 200, 30
    X = np.abs(rng.normal(size=(n, p))) + 1.0  # strongly correlated positive columns
    y = X @ np.full(p, 1.0) + rng.normal(size=n)
    with pytest.warns(ConvergenceWarning):
        sel = nonnegative_lasso(X, y, level=0.01, max_iter=1, tol=1e-12)
    assert not sel.converged and sel.n_iter == 1
    assert nonnegative_lasso(X, y, level=0.01).converged


def test_large_sparse_design_recovers_strong_columns():
    rng = np.random.default_rng(35)
    n, p, per_column, k, value = 8192, 10_000, 128, 20, 0.5
    rows = rng.integers(0, n, size=p * per_column)
    cols = np.repeat(np.arange(p), per_column)
    X = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(n, p))
    X.data[:] = value  # a random 0/1 pattern times a constant (repeated rows merged)
    norms = value * np.sqrt(np.diff(X.indptr))
    true = rng.choice(p, size=k, replace=False)
    b = np.zeros(p)
    b[true] = 10.0 / norms[true]  # 10 noise standard deviations in z units
    y = X @ b + rng.normal(size=n)
    sel = nonnegative_lasso(X, y, level=1e-3)
    assert sel.converged
    assert set(true) <= set(sel.support.tolist())
    assert np.all(sel.coef >= 0)


# ----------------------------------------------------------------------------------- multiple testing

def test_bonferroni_hand_example():
    # M = 5, α = 0.05: threshold α/M = 0.01; only 0.004 is below it.
    p = [0.012, 0.041, 0.029, 0.004, 0.2]
    np.testing.assert_array_equal(bonferroni(p, 0.05), [False, False, False, True, False])
    # M·p = 0.06, 0.205, 0.145, 0.02, 1.0 (capped at 1); one rounding per product
    np.testing.assert_allclose(adjusted_p_values(p, "bonferroni"), [0.06, 0.205, 0.145, 0.02, 1.0], rtol=2 * EPS)


def test_bonferroni_boundary_is_inclusive():
    # α = 0.5, M = 4: α/M = 0.125 exactly (dyadic), and p = 0.125 is rejected
    np.testing.assert_array_equal(bonferroni([0.125, 0.25, 0.375, 0.5], 0.5), [True, False, False, False])


def test_benjamini_hochberg_hand_example():
    # M = 5, α = 0.05: thresholds i·α/M = 0.01, 0.02, 0.03, 0.04, 0.05
    # sorted p: 0.004 ≤ 0.01, 0.012 ≤ 0.02, 0.029 ≤ 0.03, 0.041 > 0.04, 0.2 > 0.05  → k = 3
    p = [0.012, 0.041, 0.029, 0.004, 0.2]
    np.testing.assert_array_equal(benjamini_hochberg(p, 0.05), [True, False, True, True, False])


def test_benjamini_hochberg_steps_up():
    # M = 4, α = 0.05: thresholds 0.0125, 0.025, 0.0375, 0.05
    # sorted p: 0.011 ≤ 0.0125, 0.030 > 0.025, 0.036 ≤ 0.0375, 0.3 > 0.05 → k = 3 (0.030 rejected too)
    p = [0.3, 0.036, 0.011, 0.030]
    np.testing.assert_array_equal(benjamini_hochberg(p, 0.05), [False, True, True, True])
    # M·p_(i)/i = 0.044, 0.06, 0.048, 0.3; running minimum from the top: 0.044, 0.048, 0.048, 0.3
    # (two roundings each, so within 2 ulp)
    np.testing.assert_allclose(adjusted_p_values(p, "bh"), [0.3, 0.048, 0.044, 0.048], rtol=4 * EPS)
    np.testing.assert_array_equal(bonferroni(p, 0.05), [False, False, True, False])  # 0.011 ≤ 0.0125 only


def test_benjamini_hochberg_ties_and_exact_boundary():
    # three ties at 0.02, M = 3, α = 0.05: 0.02 > 0.0167 but 0.02 ≤ 0.0333 → k = 3, all rejected
    np.testing.assert_array_equal(benjamini_hochberg([0.02, 0.02, 0.02], 0.05), [True, True, True])
    # M·p/i = 0.06, 0.03, 0.02 → running minimum 0.02 everywhere
    np.testing.assert_allclose(adjusted_p_values([0.02, 0.02, 0.02], "bh"), [0.02] * 3, rtol=2 * EPS)
    # dyadic example: M = 4, α = 0.5, p_(i) = i·α/M exactly → all rejected, all adjusted to 0.5 exactly
    p = [0.5, 0.375, 0.25, 0.125]
    np.testing.assert_array_equal(benjamini_hochberg(p, 0.5), [True] * 4)
    np.testing.assert_array_equal(adjusted_p_values(p, "bh"), [0.5] * 4)
    np.testing.assert_array_equal(adjusted_p_values(p, "bonferroni"), [1.0, 1.0, 1.0, 0.5])


def test_nan_p_values_count_in_m_and_are_never_rejected():
    # M = 2 (the nan counts): 0.03 > 0.05/2, so not rejected; with M = 1 it would be
    p = [0.03, np.nan]
    np.testing.assert_array_equal(bonferroni(p, 0.05), [False, False])
    np.testing.assert_array_equal(benjamini_hochberg(p, 0.05), [False, False])
    np.testing.assert_array_equal(bonferroni([0.03], 0.05), [True])
    adj = adjusted_p_values(p, "bonferroni")
    assert adj[0] == pytest.approx(0.06, rel=2 * EPS) and np.isnan(adj[1])
    adj = adjusted_p_values(p, "bh")
    assert adj[0] == pytest.approx(0.06, rel=2 * EPS) and np.isnan(adj[1])
    # M = 4, α = 0.05: BH thresholds 0.0125, 0.025 for the two tested; both pass
    p = [0.004, np.nan, 0.012, np.nan]
    np.testing.assert_array_equal(benjamini_hochberg(p, 0.05), [True, False, True, False])
    np.testing.assert_array_equal(bonferroni(p, 0.05), [True, False, True, False])  # 0.012 ≤ 0.0125
    assert not benjamini_hochberg([np.nan, np.nan], 0.05).any()


def test_corrections_agree_with_adjusted_p_values_and_keep_shape():
    rng = np.random.default_rng(41)
    p = np.concatenate([rng.uniform(size=200), rng.uniform(0, 1e-3, size=30)]).reshape(10, 23)
    for alpha in (0.01, 0.05, 0.2):
        np.testing.assert_array_equal(bonferroni(p, alpha), adjusted_p_values(p, "bonferroni") <= alpha)
        np.testing.assert_array_equal(benjamini_hochberg(p, alpha), adjusted_p_values(p, "bh") <= alpha)
        assert benjamini_hochberg(p, alpha).shape == p.shape
        assert np.all(bonferroni(p, alpha) <= benjamini_hochberg(p, alpha))  # BH is less strict
        np.testing.assert_array_equal(holm(p, alpha), adjusted_p_values(p, "holm") <= alpha)
        assert np.all(bonferroni(p, alpha) <= holm(p, alpha))  # Holm rejects all Bonferroni does
    assert bonferroni([], 0.05).shape == (0,) and benjamini_hochberg([], 0.05).shape == (0,)
    assert adjusted_p_values([], "bh").shape == (0,)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, np.nan])
def test_corrections_reject_bad_alpha(alpha):
    for f in (bonferroni, holm, benjamini_hochberg):
        with pytest.raises(ValueError, match="alpha must lie strictly between 0 and 1"):
            f([0.1, 0.2], alpha)


@pytest.mark.parametrize("p", [[0.1, -0.01], [1.2], [np.inf, 0.5]])
def test_corrections_reject_p_values_outside_unit_interval(p):
    for call in (lambda: bonferroni(p, 0.05), lambda: benjamini_hochberg(p, 0.05),
                 lambda: adjusted_p_values(p, "bh")):
        with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
            call()


def test_unknown_adjustment_method():
    with pytest.raises(ValueError, match="method must be one of"):
        adjusted_p_values([0.1], "hommel")


# ----------------------------------------------------------------------------------- bad input

@pytest.fixture
def small():
    rng = np.random.default_rng(0)
    return design(rng, 10, 2), rng.normal(size=10)


@pytest.mark.parametrize("fn", [least_squares, lambda X, y, **kw: nonnegative_lasso(X, y, level=0.05, **kw)])
def test_bad_data_raise_value_error(small, fn):
    X, y = small
    cases = [
        (dict(X=X, y=y[:9]), r"y must have shape \(10,\)"),
        (dict(X=X, y=y[:, None]), r"y must have shape \(10,\)"),
        (dict(X=X[:, 0], y=y), "X must be a 2-D"),
        (dict(X=np.empty((0, 2)), y=np.empty(0)), "at least one row and one column"),
        (dict(X=np.where(np.eye(10, 2) > 0, np.nan, X), y=y), "X must contain only finite values"),
        (dict(X=sp.csr_matrix(np.where(np.eye(10, 2) > 0, np.inf, X)), y=y), "X must contain only finite"),
        (dict(X=X, y=np.where(np.arange(10) == 3, np.nan, y)), "y must contain only finite values"),
        (dict(X=X, y=y, weights=np.zeros(10)), "strictly positive"),
        (dict(X=X, y=y, weights=-np.ones(10)), "strictly positive"),
        (dict(X=X, y=y, weights=np.full(10, np.nan)), "weights must be finite"),
        (dict(X=X, y=y, weights=np.ones(9)), r"weights must have shape \(10,\)"),
    ]
    for kw, message in cases:
        X_, y_ = kw.pop("X"), kw.pop("y")
        with pytest.raises(ValueError, match=message):
            fn(X_, y_, **kw)


def test_bad_options_raise_value_error(small):
    X, y = small
    with pytest.raises(ValueError, match="variance must be one of"):
        least_squares(X, y, variance="robust")
    fit = least_squares(X, y)
    with pytest.raises(ValueError, match="alternative must be one of"):
        fit.p_values("both")
    for c in (0.0, 1.0, 95):
        with pytest.raises(ValueError, match="confidence must lie strictly between 0 and 1"):
            fit.confidence_interval(c)
    with pytest.raises(ValueError, match="exactly one of level= .* or alpha="):
        nonnegative_lasso(X, y)
    with pytest.raises(ValueError, match="exactly one of level= .* or alpha="):
        nonnegative_lasso(X, y, level=0.05, alpha=0.1)
    for level in (0.0, 1.0, -1.0):
        with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
            nonnegative_lasso(X, y, level=level)
        with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
            entry_threshold(level)
    for alpha in (0.0, -0.1, np.inf):
        with pytest.raises(ValueError, match="alpha must be positive"):
            nonnegative_lasso(X, y, alpha=alpha)
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        nonnegative_lasso(X, y, level=0.05, max_iter=0)
    with pytest.raises(ValueError, match="tol must be positive"):
        nonnegative_lasso(X, y, level=0.05, tol=-1.0)


def test_holm_hand_example_and_brute_force():
    """Holm step-down: M = 4, α = 0.05, thresholds 0.0125, 0.0167, 0.025, 0.05 for p sorted ascending."""
    np.testing.assert_array_equal(holm([0.010, 0.015, 0.030, 0.040], 0.05), [True, True, False, False])
    np.testing.assert_array_equal(holm([0.010, 0.020, 0.001, 0.5], 0.05), [True, True, True, False])
    assert not holm([0.03, 0.04], 0.05).any()  # 0.03 > 0.05/2 stops it at once
    rng = np.random.default_rng(7)
    for _ in range(200):  # against the definition, nan (untested) counting in M but never rejected
        p = np.where(rng.uniform(size=12) < 0.1, np.nan, rng.uniform(0, 0.08, size=12))
        m, want = p.size, np.zeros(12, dtype=bool)
        for rank, i in enumerate(np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")):
            if np.isnan(p[i]) or p[i] > 0.05 / (m - rank):
                break
            want[i] = True
        np.testing.assert_array_equal(holm(p, 0.05), want)
