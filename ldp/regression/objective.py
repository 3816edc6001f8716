"""Central pure ε-DP linear regression that perturbs the objective or the minimiser.

* :class:`FunctionalMechanism` — Zhang, Zhang, Xiao, Yang & Winslett, "Functional mechanism:
  regression analysis under differential privacy", PVLDB 5(11), 2012. Laplace noise goes on every
  coefficient of the least-squares objective, written as a polynomial in the weights. The noisy
  polynomial is then minimised. Called FMLR in the RPLR thesis (seeds-regression.md §2.7).
* :class:`OutputPerturbation` — Chaudhuri, Monteleoni & Sarwate, "Differentially private empirical
  risk minimization", JMLR 12, 2011 (their output perturbation). The ridge-regularised least-squares
  minimiser over a ball gets noise with density ∝ exp(−ε‖b‖/Δ₂). Called OPLR in the RPLR thesis
  (there with the constants of Wu et al. 2015).

Both estimators share the sufficient statistics ``XᵀX``, ``Xᵀy`` and ``n`` of
:mod:`ldp.regression.base`. ``fit``, streaming ``partial_fit`` followed by ``release``, and
``merge_statistics`` all work. Each release records ``PrivacyCost(ε)`` in ``privacy_cost_`` and,
when one is given, in the ``accountant``. The neighbouring relation is **replace one row**: n is
the same and public. The data domain is fixed, and rows are clipped into it as they are
accumulated, even when the user's pre-processing should already guarantee it:

* the functional mechanism needs every feature and ``y`` in ``[−1, 1]``. Values are clipped
  coordinate by coordinate; ``n_clipped_`` counts them and ``n_bounded_`` counts the rows changed;
* output perturbation needs ``‖x‖₂ ≤ 1`` and ``|y| ≤ 1``. Longer rows are scaled into the unit ball
  and ``y`` is clipped; ``n_bounded_`` counts the rows changed.

Neither model has an intercept. Add a constant column: for the functional mechanism, a column of
ones; for output perturbation, ``[x, 1]/√(D+1)``, so that rows stay in the unit ball.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from fractions import Fraction
from typing import Any

import numpy as np

from ldp.regression.base import PrivateLinearModel, solve_ridge
from ldp.regression.mechanisms import laplace_scale, symmetric_noise
from ldp.regression.noise import sqrt_upper
from ldp.regression.stats import SufficientStatistics, enforce_bounds

__all__ = [
    "FunctionalMechanism", "OutputPerturbation", "functional_mechanism_sensitivity", "objective_coefficients",
    "minimise_noisy_quadratic", "constrained_ridge", "output_perturbation_sensitivity",
]


# ---------------------------------------------------------------------------------------------------------
# functional mechanism
# ---------------------------------------------------------------------------------------------------------
def functional_mechanism_sensitivity(d: int) -> float:
    """Zhang et al.'s L1 sensitivity ``Δ = 2(d² + 2d)`` of the objective's non-constant
    coefficients, for ``|x_j| ≤ 1`` and ``|y| ≤ 1`` under replace-one (the derivation is in the
    :class:`FunctionalMechanism` docstring)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"the number of features d must be an int >= 1, got {d!r}")
    return 2.0 * (d * d + 2 * d)


def objective_coefficients(xtx: np.ndarray, xty: np.ndarray) -> np.ndarray:
    """The non-constant coefficients of ``Σᵢ(yᵢ − xᵢᵀw)² = yᵀy − 2(Xᵀy)ᵀw + wᵀ(XᵀX)w`` as a
    polynomial in w, one per distinct monomial. First the quadratic ones, ``w_j w_l`` for j ≤ l in
    ``np.triu_indices(d)`` order: ``(XᵀX)_jj`` on the diagonal and ``2(XᵀX)_jl`` off it (the
    monomial appears twice in wᵀ(XᵀX)w). Then the linear ones, ``−2(Xᵀy)_j``. Length
    ``d(d+1)/2 + d``."""
    xtx = np.asarray(xtx, dtype=np.float64)
    d = xtx.shape[0]
    iu = np.triu_indices(d)
    quad = np.where(iu[0] == iu[1], 1.0, 2.0) * ((xtx + xtx.T) / 2)[iu]
    return np.concatenate([quad, -2.0 * np.asarray(xty, dtype=np.float64)])


def _quadratic_from_coefficients(coefs: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`objective_coefficients`: the symmetric ``M`` and the vector ``l`` with
    polynomial ``wᵀMw + lᵀw``."""
    iu = np.triu_indices(d)
    m = iu[0].size
    upper = np.zeros((d, d))
    upper[iu] = coefs[:m] / np.where(iu[0] == iu[1], 1.0, 2.0)
    return upper + np.triu(upper, 1).T, coefs[m:].copy()


def minimise_noisy_quadratic(quadratic: np.ndarray, linear: np.ndarray, ridge: float = 0.0) -> tuple[np.ndarray, int]:
    """Minimiser of ``wᵀ(M + ridge·I)w + lᵀw`` after spectral trimming, and how many eigenvalues
    were dropped.

    Zhang et al. (2012) handle a noisy quadratic that is not positive definite (then there is
    no minimiser) in two steps. First a ridge term is added. Then, with ``M + ridge·I = QΛQᵀ``, the
    eigen-directions whose eigenvalue is not positive (at most ``d·eps·max|λ|``) are dropped. The
    objective is minimised in the span ``Q_k`` of the rest: ``w = −½·Q_k Λ_k⁻¹ Q_kᵀ l``, and w = 0
    when no direction is left. ``M`` and ``l`` are first divided by a common positive factor,
    which does not change the minimiser, so that noise of a huge scale cannot overflow. The result
    is always finite."""
    a = (np.asarray(quadratic, dtype=np.float64) + np.asarray(quadratic, dtype=np.float64).T) / 2
    lin = np.asarray(linear, dtype=np.float64)
    d = a.shape[0]
    if not (np.isfinite(a).all() and np.isfinite(lin).all() and math.isfinite(ridge)):
        raise ValueError("the noisy objective has non-finite coefficients (ε too small for float64?)")
    scale = max(float(np.abs(a).max(initial=0.0)), float(np.abs(lin).max(initial=0.0)), abs(ridge))
    if scale == 0.0:
        return np.zeros(d), d
    a, lin, ridge = a / scale, lin / scale, ridge / scale
    lam, q = np.linalg.eigh(a + ridge * np.eye(d))
    keep = lam > d * np.finfo(float).eps * max(float(np.abs(lam).max()), np.finfo(float).tiny)
    qk = q[:, keep]
    w = -0.5 * (qk @ ((qk.T @ lin) / lam[keep]))
    return w, int(d - keep.sum())


class _UnitDomainModel(PrivateLinearModel):
    """A pure ε-DP model on a fixed domain: rows are clipped into it as they are accumulated."""

    _gaussian = False
    _fixed_bounds = (1.0, 1.0)

    @abstractmethod
    def _enforce(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
        """(X, y) inside the domain, the number of rows changed and the number of values changed."""

    @abstractmethod
    def _check_params(self) -> None:
        """Raise ``ValueError`` for a parameter the release would refuse."""

    def _accumulate(self, X: np.ndarray, y: np.ndarray, owner: str, streaming: bool = False) -> None:
        self._cost()  # ε and δ are checked before any row is read
        self._check_params()
        if not hasattr(self, "_bounds_") or not hasattr(self, "statistics_"):
            self._bounds_ = (1.0, 1.0)
            self.statistics_ = SufficientStatistics(X.shape[1])
            self.n_bounded_ = 0
            self.n_clipped_ = 0
        X, y, rows, values = self._enforce(X, y)
        self.n_bounded_ += rows
        self.n_clipped_ += values
        self.statistics_.update(X, y)

    def release(self) -> _UnitDomainModel:
        """Release from the accumulated statistics. The parameters are checked before the accountant
        is charged, so a bad parameter never spends budget."""
        self._cost()
        self._check_params()
        if hasattr(self, "statistics_"):
            self.__dict__.setdefault("_bounds_", (1.0, 1.0))  # statistics merged in from elsewhere
        return super().release()


class FunctionalMechanism(_UnitDomainModel):
    """Functional mechanism for least squares (Zhang et al., PVLDB 2012): pure ε-DP.

    **Mechanism.** Over the data, ``Σᵢ(yᵢ − xᵢᵀw)² = yᵀy − 2(Xᵀy)ᵀw + wᵀ(XᵀX)w`` is a polynomial
    in w. Its non-constant coefficients are one per distinct monomial
    (:func:`objective_coefficients`): ``d(d+1)/2`` quadratic ones, for ``w_j w_l`` with j ≤ l and
    **the diagonal included** (``(XᵀX)_jj`` for ``w_j²``, ``2(XᵀX)_jl`` for j < l), and ``d`` linear
    ones, ``−2(Xᵀy)_j``. Each of the ``d(d+1)/2 + d`` coefficients gets its own i.i.d.
    ``Lap(Δ/ε)`` draw. The quadratic draws come first, from
    ``symmetric_noise(..., "upper", "laplace")``, upper triangle in ``np.triu_indices`` order; the
    linear draws follow. The constant yᵀy does not affect the minimiser and is not released.

    **Sensitivity** (data domain ``|x_j| ≤ 1``, ``|y| ≤ 1``; replace one row). One row (x, y)
    contributes the coefficient vector ``c(x, y) = ((2 − [j=l])·x_j x_l)_{j≤l} ⊕ (−2y·x_j)_j``,
    whose L1 norm is::

        Σ_j x_j² + 2Σ_{j<l}|x_j x_l| + 2|y|Σ_j|x_j| = (Σ_j|x_j|)² + 2|y|·Σ_j|x_j| ≤ d² + 2d.

    The released vector is ``Σᵢ c(xᵢ, yᵢ)``. Replacing row (x, y) by (x', y') changes it by
    ``c(x', y') − c(x, y)``. By the triangle inequality its L1 norm is at most
    ``2(d² + 2d) = Δ``: Zhang et al.'s value for the non-constant coefficients. Laplace noise of
    scale ``Δ/ε`` on each coordinate is therefore ε-DP (Dwork & Roth, Thm 3.6), and the minimiser is
    post-processing. Δ is not attained: the diagonal coefficients ``x_j² ∈ [0, 1]`` change by at
    most 1 each, so ``2(d² + 2d) − d`` is also a bound. At d = 1 the true maximum is 4 < 6. Over
    rows with entries in {−1, 0, 1}, the largest change is (d + 1)² for d ≤ 3 (checked in the tests).
    An upper bound is enough for privacy, so Zhang et al.'s value is kept. Under add/remove-one the
    change is a single ``c(x, y)``, at most ``Δ/2``, so the release is ε-DP there too.

    **Unbounded noisy objective.** The noisy quadratic ``M̃`` may be indefinite. The remedy is
    Zhang et al.'s for unbounded noisy objectives: add a ridge ``ρ‖w‖²``, then trim the spectrum,
    dropping the non-positive eigenvalues of ``M̃ + ρI`` (:func:`minimise_noisy_quadratic`). This implementation sets
    ``ρ = ridge_factor · √2·Δ/ε``, a multiple of the Laplace noise's standard deviation. The
    default ``ridge_factor = 5`` is the ``5√2·(2d²+4d)/ε`` of the RPLR thesis's MATLAB
    implementation (seeds-regression.md §2.7). The noise matrix's spectral norm grows like
    ``√d·Δ/ε``, so a few standard deviations make ``M̃ + ρI`` positive definite in most draws
    without trimming. ρ → 0 as ε → ∞, so the estimate tends to OLS. ``ridge_factor = 0`` gives
    spectral trimming alone. Both are post-processing and cost no privacy.

    Attributes after a release: ``coef_``, ``noisy_coefficients_`` (the released vector),
    ``noisy_quadratic_`` and ``noisy_linear_`` (``M̃``, ``l̃``: the noisy objective is
    ``wᵀM̃w + l̃ᵀw``), ``sensitivity_`` (Δ), ``noise_scale_`` (Δ/ε), ``ridge_`` (ρ), ``n_trimmed_``
    (eigenvalues dropped), ``n_clipped_`` and ``n_bounded_`` (values and rows clipped into the
    domain), ``privacy_cost_`` and ``solver_``.
    """

    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *, ridge_factor: float = 5.0,
                 random_state: Any = None, accountant: Any = None, noise_source: str = "secure") -> None:
        self.epsilon, self.delta, self.ridge_factor, self.noise_source = epsilon, delta, ridge_factor, noise_source
        self.random_state, self.accountant = random_state, accountant

    def _check_params(self) -> None:
        r = self.ridge_factor
        if isinstance(r, bool) or not isinstance(r, (int, float, np.integer, np.floating)) or \
                not (math.isfinite(float(r)) and float(r) >= 0):
            raise ValueError(f"ridge_factor must be finite and >= 0 (a multiple of the noise SD), got {r!r}")

    def _enforce(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
        out_x, out_y = np.abs(X) > 1.0, np.abs(y) > 1.0
        rows = int((out_x.any(axis=1) | out_y).sum())
        values = int(out_x.sum() + out_y.sum())
        if values:
            X, y = np.clip(X, -1.0, 1.0), np.clip(y, -1.0, 1.0)
        return X, y, rows, values

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        d, eps = stats.d, self._cost().epsilon
        sens = functional_mechanism_sensitivity(d)
        b = laplace_scale(sens, eps)
        if not math.isfinite(b):
            raise ValueError(f"epsilon={eps!r} is too small: the Laplace scale Δ/ε overflows")
        noise = self._noise()
        if noise.is_numpy:
            quad_noise = symmetric_noise(rng, d, b, "upper", "laplace")[np.triu_indices(d)]
            lin_noise = rng.laplace(0.0, b, d)
            noisy = objective_coefficients(stats.xtx, stats.xty) + np.concatenate([quad_noise, lin_noise])
        else:  # exact discrete Laplace on a grid, L1 sensitivity inflated for the rounding
            noisy, b = noise.laplace(objective_coefficients(stats.xtx, stats.xty), sens, eps)
        quadratic, linear = _quadratic_from_coefficients(noisy, d)
        ridge = float(self.ridge_factor) * math.sqrt(2.0) * b
        self.coef_, self.n_trimmed_ = minimise_noisy_quadratic(quadratic, linear, ridge)
        self.noisy_coefficients_, self.noisy_quadratic_, self.noisy_linear_ = noisy, quadratic, linear
        self.sensitivity_, self.noise_scale_, self.ridge_, self.solver_ = sens, b, ridge, "eigh"


# ---------------------------------------------------------------------------------------------------------
# output perturbation
# ---------------------------------------------------------------------------------------------------------
def output_perturbation_sensitivity(n: int, lam: float, radius: float) -> float:
    """L2 sensitivity ``2L/(nλ)`` with ``L = 2(1 + R)`` of the minimiser of
    ``(1/n)Σ(yᵢ − xᵢᵀw)² + (λ/2)‖w‖²`` over ``‖w‖ ≤ R``, for ``‖x‖ ≤ 1``, ``|y| ≤ 1`` and replace-one
    (the derivation is in the :class:`OutputPerturbation` docstring)."""
    return 2.0 * (2.0 * (1.0 + radius)) / (n * lam)


def constrained_ridge(xtx: np.ndarray, xty: np.ndarray, shift: float, radius: float) -> tuple[np.ndarray, float, str]:
    """``argmin_{‖w‖ ≤ R} wᵀ(XᵀX)w − 2(Xᵀy)ᵀw + shift·‖w‖²`` (``shift > 0``), the Lagrange multiplier
    μ ≥ 0 of the constraint, and the solver.

    Without the constraint the minimiser is ``(XᵀX + shift·I)⁻¹Xᵀy``, from
    :func:`~ldp.regression.base.solve_ridge`. If its norm is at most R, it is the answer and μ = 0.
    Otherwise the KKT conditions (sufficient, the problem being convex) give
    ``w(μ) = (XᵀX + (shift + μ)I)⁻¹Xᵀy`` with ``‖w(μ)‖ = R``. In the eigenbasis of XᵀX,
    ``‖w(μ)‖² = Σ b_i²/(s_i + shift + μ)²`` decreases in μ, and ``‖w(‖b‖/R)‖ < R``. So μ is found by
    bisection on ``[0, ‖b‖/R]`` to relative precision 1e-13, returning the end whose norm is ≤ R.
    The result is finally rescaled by ``min(1, R/‖w‖)``, so it always lies in the ball despite
    rounding."""
    if not (shift > 0 and math.isfinite(shift)):
        raise ValueError(f"the ridge shift nλ/2 must be finite and > 0, got {shift!r}")
    if not (radius > 0 and math.isfinite(radius)):
        raise ValueError(f"radius must be finite and > 0, got {radius!r}")
    w, solver = solve_ridge(xtx, xty, shift)
    if np.linalg.norm(w) <= radius:
        return w, 0.0, solver
    s, v = np.linalg.eigh((xtx + xtx.T) / 2)
    s = np.maximum(s, 0.0)  # XᵀX is positive semi-definite; remove rounding below 0
    b = v.T @ np.asarray(xty, dtype=np.float64)

    def norm_at(mu: float) -> float:
        return float(np.linalg.norm(b / (s + shift + mu)))

    lo, hi = 0.0, float(np.linalg.norm(b)) / radius
    for _ in range(400):
        mid = (lo + hi) / 2
        if norm_at(mid) > radius:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    w = v @ (b / (s + shift + hi))
    nrm = float(np.linalg.norm(w))
    if nrm > radius:
        w *= radius / nrm
    return w, hi, "bisection"


class OutputPerturbation(_UnitDomainModel):
    """Output perturbation for ridge regression on a ball (Chaudhuri, Monteleoni & Sarwate 2011): pure ε-DP.

    **Estimator.** ``ŵ = argmin_{‖w‖ ≤ R} J(w)`` with
    ``J(w) = (1/n)Σᵢ(yᵢ − xᵢᵀw)² + (λ/2)‖w‖²``. The data domain is ``‖x‖ ≤ 1``, ``|y| ≤ 1``. Setting
    the gradient to zero gives ``(XᵀX + (nλ/2)I)w = Xᵀy`` when the solution is inside the ball, and
    a larger shift otherwise (:func:`constrained_ridge`). The release is ``ŵ + b``: the direction of
    b is uniform on the sphere (a normalised N(0, I_d) draw, taken first), and ``‖b‖ ~
    Gamma(shape d, scale Δ₂/ε)`` (drawn second). In polar coordinates, the density ∝
    ``exp(−ε‖b‖/Δ₂)`` becomes ``r^{d−1}e^{−εr/Δ₂}`` times a uniform direction, which is exactly this
    pair.

    **Sensitivity** (replace one row; n public). For ‖w‖ ≤ R and a row in the domain, the loss
    ``ℓ(w) = (y − xᵀw)²`` has gradient ``−2(y − xᵀw)x``, with norm at most
    ``2(|y| + ‖x‖‖w‖)‖x‖ ≤ 2(1 + R) = L``. So ℓ is L-Lipschitz on the ball. ``J_D`` is λ-strongly
    convex. Let ``w₁``, ``w₂`` be the minimisers over the ball C for D and for D', which differ in
    row i, and let ``g = J_D' − J_D = (ℓ'_i − ℓ_i)/n``, with ``‖∇g‖ ≤ 2L/n`` on C. First-order
    optimality on C gives ``⟨∇J_D(w₁), w₂ − w₁⟩ ≥ 0`` and ``⟨∇J_D'(w₂), w₁ − w₂⟩ ≥ 0``. Strong
    convexity gives ``λ‖w₂ − w₁‖² ≤ ⟨∇J_D(w₂) − ∇J_D(w₁), w₂ − w₁⟩``. Substituting
    ``∇J_D(w₂) = ∇J_D'(w₂) − ∇g(w₂)`` and using both optimality conditions, this is at most
    ``−⟨∇g(w₂), w₂ − w₁⟩ ≤ (2L/n)‖w₂ − w₁‖``. Hence ``‖w₁ − w₂‖ ≤ 2L/(nλ) = Δ₂``
    (Chaudhuri et al.'s output-perturbation argument, here with the ball constraint and an
    L-Lipschitz loss). For any output t, ``p_D(t)/p_D'(t) = exp(ε(‖t − w₂‖ − ‖t − w₁‖)/Δ₂) ≤ exp(ε‖w₁ − w₂‖/Δ₂) ≤ e^ε``.

    ``lam="auto"`` sets ``λ = √(d/(nε))``, the rule of the RPLR thesis's implementation
    (seeds-regression.md §2.7). It uses n, which is public here. ``radius`` is R (default 1). A
    larger R admits larger coefficients but increases L, and with it the noise. n is also used by
    the sensitivity, so **n is treated as public**: the guarantee is for replace-one neighbours.

    Attributes after a release: ``coef_``, ``lambda_`` (λ), ``sensitivity_`` (Δ₂),
    ``noise_scale_`` (Δ₂/ε, the Gamma scale), ``lipschitz_`` (L), ``n_bounded_``,
    ``privacy_cost_`` and ``solver_``. Neither the noise nor the non-private minimiser is stored,
    because either one would reveal the other.
    """

    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *, lam: float | str = "auto",
                 radius: float = 1.0, random_state: Any = None, accountant: Any = None,
                 noise_source: str = "secure") -> None:
        self.epsilon, self.delta, self.lam, self.radius = epsilon, delta, lam, radius
        self.noise_source = noise_source
        self.random_state, self.accountant = random_state, accountant

    def _check_params(self) -> None:
        lam, r = self.lam, self.radius
        if not (isinstance(lam, str) and lam == "auto"):
            if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)) or \
                    not (math.isfinite(float(lam)) and float(lam) > 0):
                raise ValueError(f"lam must be 'auto' or finite and > 0, got {lam!r}")
        if isinstance(r, bool) or not isinstance(r, (int, float, np.integer, np.floating)) or \
                not (math.isfinite(float(r)) and float(r) > 0):
            raise ValueError(f"radius must be finite and > 0, got {r!r}")

    def _lambda(self, n: int, d: int, eps: float) -> float:
        return math.sqrt(d / (n * eps)) if isinstance(self.lam, str) else float(self.lam)

    def _enforce(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
        X, y, rows = enforce_bounds(X, y, 1.0, 1.0)
        return X, y, rows, 0

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        n, d, eps, radius = stats.n, stats.d, self._cost().epsilon, float(self.radius)
        lam = self._lambda(n, d, eps)
        sens = output_perturbation_sensitivity(n, lam, radius)
        scale = sens / eps
        if not math.isfinite(scale):
            raise ValueError(f"epsilon={eps!r} is too small: the noise scale Δ₂/ε overflows")
        w, _, solver = constrained_ridge(stats.xtx, stats.xty, n * lam / 2, radius)
        noise = self._noise()
        if noise.is_numpy:
            direction = rng.normal(size=d)
            while not np.linalg.norm(direction) > 0:  # probability 0; keeps the draw well defined
                direction = rng.normal(size=d)
            direction /= np.linalg.norm(direction)
            self.coef_ = w + rng.gamma(float(d), scale) * direction
            self.noise_mechanism_ = "l2_laplace"
        else:  # exact: i.i.d. discrete Laplace on L1 sensitivity √d·Δ₂ ≥ ‖w₁ − w₂‖₁ (class docstring)
            self.coef_, scale = noise.laplace(w, float(sqrt_upper(d) * Fraction(sens)), eps)
            self.noise_mechanism_ = "l1_discrete_laplace"
        self.lambda_, self.sensitivity_, self.noise_scale_ = lam, sens, scale
        self.lipschitz_, self.solver_ = 2.0 * (1.0 + radius), solver
