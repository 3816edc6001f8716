"""Linear regression, local vs central: locally perturbed sufficient statistics against SSP and AdaSSP.

**Local** (each user perturbs their own statistics before sending): user ``i`` with ``‖x_i‖ ≤ B_X``,
``|y_i| ≤ B_y`` sends ``s_i = (upper triangle of x_i x_iᵀ incl. the diagonal, x_i·y_i) + N(0, σ²I)``,
the Gaussian mechanism at (ε, δ) per user for the L2 sensitivity Δ of :func:`local_sensitivity`, with
σ the analytic Gaussian (Balle & Wang 2018). The server sums the reports and solves with
:func:`ldp.regression.base.solve_ridge`; ``yᵀy`` is not needed for the coefficients, so it is not sent.

**Central**: the library's :class:`~ldp.regression.SSP` and :class:`~ldp.regression.AdaSSP` at the same
(ε, δ), and ``central_gaussian``: the local mechanism applied once to the sums (the same release,
one noise draw instead of n). Neighbouring relation everywhere: **replace one user's record**, the
relation LDP protects. SSP/AdaSSP calibrate for add/remove (Δ(XᵀX) = B_X², Δ(Xᵀy) = B_X·B_y);
replace-one needs √2·B_X² and 2·B_X·B_y (proof at :func:`local_sensitivity`), which they produce
exactly when given the bounds ``(2^{1/4}·B_X, 2^{3/4}·B_y)`` (rows are inside the true bounds, so
the bound enforcement changes nothing); AdaSSP's λ_min release then uses √2·B_X² where B_X²
(Weyl) suffices: conservative.

**Exact aggregate-level simulation** of the local noise: the sum of n independent ``N(0, σ²)``
per-user noise vectors is ``N(0, nσ²)`` per coordinate, so the server's sums are the exact
statistics plus one draw at SD ``√n·σ`` (:func:`local_reports` is the per-user path it equals).

**First-order theory** (noise small against ``XᵀX ≈ nΣ``): ``θ̂ − θ ≈ (nΣ)⁻¹(e_xy − E_xx·θ + Xᵀε)``.
With independent noise of variances ``v_xy`` (each ``Xᵀy`` entry) and ``v_xx`` (each distinct
``XᵀX`` entry), ``Cov(E_xx θ) = v_xx(‖θ‖²I + θθᵀ − diag θ²)``, so
``E‖θ̂ − θ‖² ≈ σ_ε²·tr Σ⁻¹/n + tr(Σ⁻¹MΣ⁻¹)/n²``, ``M = v_xy·I + v_xx(‖θ‖²I + θθᵀ − diag θ²)``.
Local: ``v = nσ²``, so ``MSE_L = (S + A_L)/n``; central: ``MSE_C = S/n + A_C/n²`` (S = σ_ε² tr Σ⁻¹,
A = tr(Σ⁻¹MΣ⁻¹) at unit n). Equal accuracy: ``n_L = n_C·(S + A_L)/(S + A_C/n_C)``: about
``(A_L/A_C)·n_C²`` while central noise dominates (``n_C ≪ A_C/S``), then ``(1 + A_L/S)·n_C``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp.compare.counting import check_count
from ldp.randomness import as_generator
from ldp.regression import SSP, AdaSSP, SufficientStatistics
from ldp.regression.base import solve_ridge
from ldp.regression.mechanisms import analytic_gaussian_sigma, symmetric_noise

__all__ = [
    "RegressionSetup", "METHODS", "CENTRAL_METHODS", "local_sensitivity", "local_noise_sd", "user_statistics",
    "local_reports", "sum_reports", "aggregate_noise", "solve_noisy", "first_order_mse", "regression_rows",
    "multiplier_rows",
]

METHODS = ("local", "central_gaussian", "ssp", "adassp", "ols")
CENTRAL_METHODS = ("central_gaussian", "ssp", "adassp")
REPLACE_ONE_FACTORS = (2 ** 0.25, 2 ** 0.75)  # SSP's add/remove bounds → replace-one sensitivities


def local_sensitivity(bound_X: float, bound_y: float) -> float:
    """Δ: a bound on the L2 diameter of ``s(x, y) = (triu(xxᵀ), x·y)`` over ``‖x‖ ≤ B``, ``|y| ≤ b``
    (the sensitivity of one user's statistics when their whole record is replaced).

    ``‖s − s'‖² = ‖s‖² + ‖s'‖² − 2⟨s, s'⟩`` with ``‖triu(xxᵀ)‖² = (‖x‖⁴ + Σx_i⁴)/2 ≤ B⁴`` (so
    ``‖s‖² ≤ B⁴ + B²b²``) and ``2⟨s, s'⟩ = (x·x')² + Σx_i²x_i'² + 2(x·x')yy' ≥ t² − 2tb²`` for
    ``t = |x·x'| ≤ B²``. Hence ``Δ² ≤ 2B⁴ + 2B²b² + max_{0≤t≤B²}(2tb² − t²)``: ``2B⁴ + 2B²b² + b⁴`` if
    ``b ≤ B``, else ``B⁴ + 4B²b²`` (sharper than the triangle inequality's ``4(B⁴ + B²b²)``). It is
    nearly tight: ``(Be₁, b), (Be₂, −b)`` are ``sqrt(2B⁴ + 2B²b²)`` apart and ``(x, b), (−x, b)`` are
    ``2Bb`` apart (at B = b: 2 against Δ = √5). Alone, ``triu(xxᵀ)`` has diameter exactly ``√2·B²``
    (``Be₁`` vs ``Be₂``) and ``x·y`` has ``2·B·b``."""
    for name, v in (("bound_X", bound_X), ("bound_y", bound_y)):
        if not (float(v) > 0 and math.isfinite(float(v))):
            raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    bx2, by2 = float(bound_X) ** 2, float(bound_y) ** 2
    t = min(by2, bx2)
    return math.sqrt(2 * bx2 * bx2 + 2 * bx2 * by2 + 2 * t * by2 - t * t)


def local_noise_sd(epsilon: float, delta: float, bound_X: float, bound_y: float) -> float:
    """Per-user noise SD σ: the analytic Gaussian at (ε, δ) for :func:`local_sensitivity`."""
    return analytic_gaussian_sigma(float(epsilon), float(delta), local_sensitivity(bound_X, bound_y))


def user_statistics(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each user's statistic vector ``(triu(x xᵀ) row-major, x·y)``, shape (n, d(d+1)/2 + d)."""
    iu = np.triu_indices(X.shape[1])
    return np.hstack([X[:, iu[0]] * X[:, iu[1]], X * y[:, None]])


def local_reports(X: np.ndarray, y: np.ndarray, noise_sd: float, rng: Any = None) -> np.ndarray:
    """The per-user path: every user's statistic vector plus its own ``N(0, σ²I)`` noise."""
    s = user_statistics(X, y)
    return s + as_generator(rng).normal(0.0, noise_sd, s.shape)


def sum_reports(reports: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The server's sums unpacked: ``(X̂ᵀX`` symmetric d×d, ``X̂ᵀy`` (d,))."""
    total = reports.sum(axis=0)
    iu = np.triu_indices(d)
    xtx = np.zeros((d, d))
    xtx[iu] = total[: iu[0].size]
    return xtx + np.triu(xtx, 1).T, total[iu[0].size:]


def aggregate_noise(d: int, sum_sd: float, rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact draw of the summed noise ``(E_xx, e_xy)``: i.i.d. ``N(0, sum_sd²)`` on the distinct
    entries (mirrored) and on ``Xᵀy``, with ``sum_sd = √n·σ`` for n users (or σ for one central release)."""
    gen = as_generator(rng)
    return symmetric_noise(gen, d, sum_sd, "upper"), gen.normal(0.0, sum_sd, d)


def solve_noisy(xtx: np.ndarray, xty: np.ndarray, sum_sd: float, rho: float = 0.05,
                ridge_offset: float = 1.0) -> tuple[np.ndarray, float]:
    """``(θ̂, ridge)`` from noisy statistics: AdaSSP's rule (Wang 2018) as free post-processing —
    ``ridge = max(0, C − λ_min(X̂ᵀX)) + r`` with ``C = √(d·log(2d²/ρ))·sum_sd`` (a 1 − ρ bound on
    the noise's spectral norm), so the solved matrix has smallest eigenvalue ≥ C."""
    d = xtx.shape[0]
    c = math.sqrt(d * math.log(2 * d * d / rho)) * sum_sd
    lam_min = float(np.linalg.eigvalsh((xtx + xtx.T) / 2)[0])
    ridge = max(0.0, c - lam_min) + ridge_offset
    return solve_ridge(xtx, xty, ridge)[0], ridge


@dataclass(frozen=True)
class RegressionSetup:
    """Synthetic model inside the bounds: ``x`` uniform on the sphere ``‖x‖ = B_X`` (Σ = B_X²/d·I),
    ``y = xᵀθ + e`` with ``‖θ‖ = theta_norm``, ``e ~ U[−h, h]``; ``B_X·‖θ‖ + h ≤ B_y``."""

    d: int = 5
    bound_X: float = 1.0
    bound_y: float = 1.0
    theta_norm: float = 0.8
    noise_halfwidth: float = 0.2
    epsilon: float = 1.0
    delta: float = 1e-8
    rho: float = 0.05

    def __post_init__(self) -> None:
        if self.bound_X * self.theta_norm + self.noise_halfwidth > self.bound_y:
            raise ValueError("the model must stay inside the bounds: B_X·‖θ‖ + h ≤ B_y")

    @property
    def theta(self) -> np.ndarray:
        return self.theta_norm * (-1.0) ** np.arange(self.d) / math.sqrt(self.d)

    def sample(self, n: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        g = gen.standard_normal((n, self.d))
        X = self.bound_X * g / np.sqrt(np.einsum("ij,ij->i", g, g))[:, None]
        return X, X @ self.theta + gen.uniform(-self.noise_halfwidth, self.noise_halfwidth, n)


def first_order_mse(setup: RegressionSetup, n: Any, var_xx: Any, var_xy: Any) -> Any:
    """``E‖θ̂ − θ‖² ≈ σ_ε²·tr Σ⁻¹/n + tr(Σ⁻¹MΣ⁻¹)/n²`` (module docstring) for Σ = s·I:
    ``tr(Σ⁻¹MΣ⁻¹) = d(v_xy + v_xx‖θ‖²)/s²``; ``var_*`` are the noise variances on the sums."""
    s = setup.bound_X**2 / setup.d
    n = np.asarray(n, dtype=np.float64)
    stat = setup.noise_halfwidth**2 / 3 * setup.d / s
    return stat / n + setup.d * (np.asarray(var_xy) + np.asarray(var_xx) * setup.theta_norm**2) / s**2 / n**2


def _central_fit(cls: type, stats: SufficientStatistics, setup: RegressionSetup,
                 gen: np.random.Generator) -> tuple[np.ndarray, tuple[float, float]]:
    """``(coef, (SD on XᵀX, SD on Xᵀy))`` of the library's SSP or AdaSSP calibrated for replace-one
    neighbours: bounds inflated by :data:`REPLACE_ONE_FACTORS` (module docstring)."""
    fx, fy = REPLACE_ONE_FACTORS
    model = cls(setup.epsilon, setup.delta, bound_X=fx * setup.bound_X, bound_y=fy * setup.bound_y, random_state=gen,
                noise_source="numpy")  # thousands of fits: simulation noise, as for the local side
    model.merge_statistics(stats).release()
    return model.coef_, model.noise_sd_[-2:]


def regression_rows(*, ns: Sequence[int], trials: int, noise_draws: int = 1, rng: Any = None,
                    setup: RegressionSetup = RegressionSetup()) -> list[dict[str, Any]]:
    """One row per (method, n): mean squared parameter error ``‖θ̂ − θ‖²`` over ``trials`` data sets
    (each a fresh sample, grown through the sorted ``ns`` in chunks) × ``noise_draws`` releases of
    each, its standard error (from the ``trials`` independent per-data-set means), the noise SDs on
    the sums, and the first-order theory."""
    check_count(trials, "trials")
    check_count(noise_draws, "noise_draws")
    if not len(ns) or min(ns) < setup.d:
        raise ValueError(f"ns must be user counts >= d = {setup.d}, got {list(ns)!r}")
    gen = as_generator(rng)
    ns = sorted(int(n) for n in ns)
    theta = setup.theta
    sigma = local_noise_sd(setup.epsilon, setup.delta, setup.bound_X, setup.bound_y)
    err: dict[tuple[str, int], list[float]] = {}
    sds: dict[tuple[str, int], tuple[float, float]] = {}

    def record(method: str, n: int, coefs: list[np.ndarray]) -> None:
        err.setdefault((method, n), []).append(float(np.mean([((c - theta) ** 2).sum() for c in coefs])))

    for _ in range(trials):
        stats, done = SufficientStatistics(setup.d), 0
        for n in ns:
            while done < n:
                X, y = setup.sample(min(n - done, 1 << 20), gen)
                stats.update(X, y, chunk_rows=X.shape[0])
                done += X.shape[0]
            for method, sum_sd in (("local", math.sqrt(n) * sigma), ("central_gaussian", sigma)):
                coefs = []
                for _ in range(noise_draws):
                    exx, exy = aggregate_noise(setup.d, sum_sd, gen)
                    coefs.append(solve_noisy(stats.xtx + exx, stats.xty + exy, sum_sd, setup.rho)[0])
                record(method, n, coefs)
                sds[method, n] = (sum_sd, sum_sd)
            for method, cls in (("ssp", SSP), ("adassp", AdaSSP)):
                fits = [_central_fit(cls, stats, setup, gen) for _ in range(noise_draws)]
                record(method, n, [f[0] for f in fits])
                sds[method, n] = fits[0][1]
            record("ols", n, [np.linalg.lstsq(stats.xtx, stats.xty, rcond=None)[0]])
            sds["ols", n] = (0.0, 0.0)
    rows = []
    for method in METHODS:
        for n in ns:
            e = np.array(err[method, n])
            sd_xx, sd_xy = sds[method, n]
            rows.append({"method": method, "n": n, "trials": trials,
                         "noise_draws": 1 if method == "ols" else noise_draws, "epsilon": setup.epsilon,
                         "delta": setup.delta, "mse": float(e.mean()),
                         "mse_se": float(e.std(ddof=1) / math.sqrt(e.size)) if e.size > 1 else math.nan,
                         "noise_sd_xx": sd_xx, "noise_sd_xy": sd_xy,
                         "theory_mse": float(first_order_mse(setup, n, sd_xx**2, sd_xy**2)),
                         "trivial_mse": setup.theta_norm**2})
    return rows


def _interp_n(ns: np.ndarray, mse: np.ndarray, target: float) -> float:
    """n at which a decreasing MSE curve reaches ``target`` (log-log interpolation), nan outside it."""
    order = np.argsort(ns)
    lx, ly = np.log(ns[order]), np.log(mse[order])
    below = np.flatnonzero(ly <= math.log(target))
    if not below.size or below[0] == 0:
        return math.nan
    i = below[0]
    w = (math.log(target) - ly[i - 1]) / (ly[i] - ly[i - 1])
    return float(math.exp(lx[i - 1] + w * (lx[i] - lx[i - 1])))


def multiplier_rows(rows: list[dict[str, Any]], setup: RegressionSetup = RegressionSetup()) -> list[dict[str, Any]]:
    """For each central method and n_C: the n_L at which local DP reaches the same MSE — by
    interpolation on the simulated local curve (nan when outside its range) and by the first-order
    theory ``n_L = (S + A_L)/MSE_C`` — and the multipliers ``n_L/n_C``."""
    local = [r for r in rows if r["method"] == "local"]
    ns = np.array([r["n"] for r in local], dtype=np.float64)
    mse_l = np.array([r["mse"] for r in local])
    # (S + A_L) = n·first-order local MSE, the same at every n
    unit_local = local[0]["n"] * local[0]["theory_mse"]
    out = []
    for r in rows:
        if r["method"] not in CENTRAL_METHODS:
            continue
        n_sim = _interp_n(ns, mse_l, r["mse"])
        n_theory = unit_local / r["theory_mse"]
        out.append({"central": r["method"], "n_central": r["n"], "mse_central": r["mse"],
                    "theory_mse_central": r["theory_mse"], "n_local": n_sim, "multiplier": n_sim / r["n"],
                    "theory_n_local": n_theory, "theory_multiplier": n_theory / r["n"]})
    return out
