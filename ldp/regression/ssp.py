"""Sufficient statistics perturbation and its adaptive variants (seeds-regression.md §2.2–§2.5).

* :class:`SSP` — release ``X̂ᵀX = XᵀX + σ₁·Z_sym`` and ``X̂ᵀy = Xᵀy + σ₂·z`` at (ε/2, δ/2) each,
  output ``θ̂ = (X̂ᵀX + r·I)⁻¹X̂ᵀy`` with the ridge offset ``r`` (1 in Wang's code and Piazza).
  Sensitivities (add/remove one row): ``B_X²`` and ``B_X·B_Y``.
* :class:`AdaSSP` — Wang (2018) Algorithm 2 in Piazza's budgeted form (adaSSPbudget): a fraction
  ``γ`` of the budget releases a downward-shifted noisy ``λ̃_min = max(λ_min(XᵀX + rI) + σ_e·z −
  (L_h/ε_h)·B_X², 0)``, the rest releases X̂ᵀX and X̂ᵀy at ((1−γ)ε/2, (1−γ)δ/2) each; the ridge is
  ``λ = max(0, √(d·L_n·log(2d²/ρ))·B_X²/ε_n − λ̃_min)`` and ``θ̂ = (X̂ᵀX + (λ + r)I)⁻¹X̂ᵀy``.
  γ = 1/3 is AdaSSP (Piazza Alg. 2); ``noise="wang"`` with r = 0 is Wang's paper, ``"kalaja"``
  Kalaja's corrected noise (Alg. 3), ``"piazza"`` Piazza's, ``"analytic"`` the analytic Gaussian.
* :class:`ConstSSPFull` — SSP's releases with the fixed ridge ``√(d·L·log(2d²/ρ))·B_X²/(ε/2)``.

``L = (σ·ε'/Δ)²`` of the noise convention (:func:`~ldp.regression.mechanisms.log_term`).
Draw order (for reproducing a stream): z_e (AdaSSP only), then Z_sym, then z.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ldp.privacy.accountant import PrivacyCost
from ldp.regression.base import PrivateLinearModel, solve_ridge
from ldp.regression.mechanisms import (
    GAUSSIAN_CONVENTIONS,
    ReproductionOnlyWarning,
    gaussian_sigma,
    log_term,
    split_budget,
    symmetric_noise,
)
from ldp.regression.noise import ReleaseNoise, check_noise_source
from ldp.regression.stats import SufficientStatistics

__all__ = ["SSP", "AdaSSP", "AdaSSPBudget", "ConstSSPFull", "NOISE_OPTIONS"]

NOISE_OPTIONS = GAUSSIAN_CONVENTIONS + ("wang_code",)


def _convention(noise: str) -> tuple[str, str]:
    """(Gaussian convention, default noise-matrix form) of a ``noise`` option."""
    if noise not in NOISE_OPTIONS:
        raise ValueError(f"noise must be one of {NOISE_OPTIONS}, got {noise!r}")
    return ("wang", "half_sum") if noise == "wang_code" else (noise, "upper")


def _check_ridge_offset(r: float) -> float:
    if isinstance(r, bool) or not (float(r) >= 0 and math.isfinite(float(r))):
        raise ValueError(f"ridge_offset must be finite and >= 0, got {r!r}")
    return float(r)


def _release_pair(stats: SufficientStatistics, parts: list[PrivacyCost], bx: float, by: float, convention: str,
                  form: str, rng: np.random.Generator, scale: float = 1.0,
                  noise: ReleaseNoise | None = None) -> tuple[np.ndarray, np.ndarray, tuple]:
    """X̂ᵀX and X̂ᵀy at ``parts`` (Z_sym drawn first, then z); ``scale`` multiplies both SDs.
    With an exact ``noise`` (``"secure"``/``"seeded"``): the upper triangle of XᵀX and Xᵀy each get
    discrete Gaussian noise on a grid, σ at least the convention's for the inflated sensitivity and
    at least the discrete distribution's own (ε', δ') calibration (:mod:`ldp.privacy.central_noise`)."""
    s_xx = scale * gaussian_sigma(convention, parts[0].epsilon, parts[0].delta, bx * bx)
    s_xy = scale * gaussian_sigma(convention, parts[1].epsilon, parts[1].delta, bx * by)
    if noise is not None and not noise.is_numpy:
        xtx, s_xx = noise.symmetric(stats.xtx, "gaussian", bx * bx, parts[0].epsilon, parts[0].delta, s_xx)
        xty, s_xy = noise.gaussian(stats.xty, bx * by, s_xy, parts[1].epsilon, parts[1].delta)
        return xtx, xty, (s_xx, s_xy)
    xtx = stats.xtx + symmetric_noise(rng, stats.d, s_xx, form)
    xty = stats.xty + rng.normal(0.0, s_xy, stats.d)
    return xtx, xty, (s_xx, s_xy)


def _dry_run(model: PrivateLinearModel, fractions: list[float], d: int, bounds: tuple[float, float]) -> None:
    """Compute every noise scale the release will use (raising for invalid settings) before any charge."""
    convention, _ = _convention(model.noise)
    if convention == "wang" and check_noise_source(model.noise_source) != "numpy":
        raise ValueError(f"noise={model.noise!r} reproduces constants not verified to be DP: it is for simulations "
                         "only, so it needs noise_source='numpy'")
    _check_ridge_offset(model.ridge_offset)
    if not 0 < float(getattr(model, "rho", 0.5)) < 1:
        raise ValueError(f"rho must be in (0, 1), got {model.rho!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReproductionOnlyWarning)
        for part in split_budget(model._cost(), fractions):
            gaussian_sigma(convention, part.epsilon, part.delta, bounds[0] ** 2)


class SSP(PrivateLinearModel):
    """Sufficient statistics perturbation (module docstring). ``noise="wang_code"`` reproduces
    Wang's code: half the paper's SD and a non-symmetric noise matrix (not verified DP)."""

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, *, bound_X: float | None = None,
                 bound_y: float | None = None, noise: str = "analytic", ridge_offset: float = 1.0,
                 random_state: Any = None, accountant: Any = None, noise_source: str = "secure") -> None:
        self.epsilon, self.delta, self.bound_X, self.bound_y = epsilon, delta, bound_X, bound_y
        self.noise_source = noise_source
        self.noise, self.ridge_offset = noise, ridge_offset
        self.random_state, self.accountant = random_state, accountant

    def _check_release(self, d: int, bounds: tuple[float, float]) -> None:
        _dry_run(self, [0.5, 0.5], d, bounds)

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        convention, _ = _convention(self.noise)
        r = _check_ridge_offset(self.ridge_offset)
        parts = split_budget(self._cost(), [0.5, 0.5])
        form, scale = ("full", 0.5) if self.noise == "wang_code" else ("upper", 1.0)
        xtx, xty, sds = _release_pair(stats, parts, *bounds, convention, form, rng, scale, self._noise())
        self.coef_, self.solver_ = solve_ridge(xtx, xty, r, symmetrize=form != "full")  # Wang's code solves as is
        self.noise_sd_, self.budget_split_, self.lambda_ = sds, parts, 0.0


class AdaSSP(PrivateLinearModel):
    """AdaSSP with the eigenvalue budget fraction ``gamma`` (1/3: AdaSSP; any γ in (0, 1):
    adaSSPbudget), failure probability ``rho`` (0.05 as in Wang's code and Piazza)."""

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, *, bound_X: float | None = None,
                 bound_y: float | None = None, noise: str = "analytic", gamma: float = 1 / 3, rho: float = 0.05,
                 ridge_offset: float = 1.0, random_state: Any = None, accountant: Any = None,
                 noise_source: str = "secure") -> None:
        self.epsilon, self.delta, self.bound_X, self.bound_y = epsilon, delta, bound_X, bound_y
        self.noise_source = noise_source
        self.noise, self.gamma, self.rho, self.ridge_offset = noise, gamma, rho, ridge_offset
        self.random_state, self.accountant = random_state, accountant

    def _check_release(self, d: int, bounds: tuple[float, float]) -> None:
        gamma = float(self.gamma)
        if not 0 < gamma < 1:
            raise ValueError(f"gamma (the eigenvalue's budget fraction) must be in (0, 1), got {self.gamma!r}")
        _dry_run(self, [gamma, (1 - gamma) / 2, (1 - gamma) / 2], d, bounds)

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        convention, form = _convention(self.noise)
        gamma, rho, r = float(self.gamma), float(self.rho), _check_ridge_offset(self.ridge_offset)
        if not 0 < gamma < 1:
            raise ValueError(f"gamma (the eigenvalue's budget fraction) must be in (0, 1), got {self.gamma!r}")
        if not 0 < rho < 1:
            raise ValueError(f"rho must be in (0, 1), got {self.rho!r}")
        bx, _ = bounds
        d = stats.d
        hyp, nec_xx, nec_xy = split_budget(self._cost(), [gamma, (1 - gamma) / 2, (1 - gamma) / 2])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReproductionOnlyWarning)
            l_hyp = log_term(convention, hyp.epsilon, hyp.delta)
            l_nec = log_term(convention, nec_xx.epsilon, nec_xx.delta)
        sd_e = gaussian_sigma(convention, hyp.epsilon, hyp.delta, bx * bx)
        lam_min = float(np.linalg.eigvalsh((stats.xtx + stats.xtx.T) / 2 + r * np.eye(d))[0])
        noise = self._noise()
        if noise.is_numpy:
            lam_noisy = lam_min + sd_e * rng.normal()
        else:
            released, sd_e = noise.gaussian([lam_min], bx * bx, sd_e, hyp.epsilon, hyp.delta)
            lam_noisy = float(released[0])
        lam_tilde = max(lam_noisy - l_hyp / hyp.epsilon * bx * bx, 0.0)
        ceiling = math.sqrt(d * l_nec * math.log(2 * d * d / rho)) * bx * bx / nec_xx.epsilon
        lam = max(0.0, ceiling - lam_tilde)
        xtx, xty, sds = _release_pair(stats, [nec_xx, nec_xy], *bounds, convention, form, rng, 1.0, noise)
        self.coef_, self.solver_ = solve_ridge(xtx, xty, lam + r)
        self.lambda_, self.lambda_min_noisy_, self.lambda_ceiling_ = lam, lam_tilde, ceiling
        self.noise_sd_ = (sd_e,) + sds
        self.budget_split_ = [hyp, nec_xx, nec_xy]


class AdaSSPBudget(AdaSSP):
    """Piazza's adaSSPbudget (Algorithm 3): :class:`AdaSSP` with the eigenvalue fraction γ chosen."""


class ConstSSPFull(PrivateLinearModel):
    """Piazza's constSSPfull (Algorithm 4): SSP's releases, ridge fixed at AdaSSP's ceiling at (ε/2, δ/2)."""

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, *, bound_X: float | None = None,
                 bound_y: float | None = None, noise: str = "analytic", rho: float = 0.05, ridge_offset: float = 1.0,
                 random_state: Any = None, accountant: Any = None, noise_source: str = "secure") -> None:
        self.epsilon, self.delta, self.bound_X, self.bound_y = epsilon, delta, bound_X, bound_y
        self.noise_source = noise_source
        self.noise, self.rho, self.ridge_offset = noise, rho, ridge_offset
        self.random_state, self.accountant = random_state, accountant

    def _check_release(self, d: int, bounds: tuple[float, float]) -> None:
        _dry_run(self, [0.5, 0.5], d, bounds)

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        convention, form = _convention(self.noise)
        rho, r = float(self.rho), _check_ridge_offset(self.ridge_offset)
        if not 0 < rho < 1:
            raise ValueError(f"rho must be in (0, 1), got {self.rho!r}")
        bx, _ = bounds
        parts = split_budget(self._cost(), [0.5, 0.5])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReproductionOnlyWarning)
            l_nec = log_term(convention, parts[0].epsilon, parts[0].delta)
        lam = math.sqrt(stats.d * l_nec * math.log(2 * stats.d ** 2 / rho)) * bx * bx / parts[0].epsilon
        xtx, xty, sds = _release_pair(stats, parts, *bounds, convention, "upper" if form == "upper" else form, rng,
                                      1.0, self._noise())
        self.coef_, self.solver_ = solve_ridge(xtx, xty, lam + r)
        self.lambda_, self.noise_sd_, self.budget_split_ = lam, sds, parts
