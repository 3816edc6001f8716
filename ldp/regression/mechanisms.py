"""Central-DP noise for the regressions: Gaussian conventions, the analytic Gaussian, Laplace,
symmetric noise matrices, budget splits and the warnings they raise (seeds-regression.md §1, §8).

Gaussian conventions for one release of L2 sensitivity ``Δ`` at ``(ε', δ')`` (σ = noise SD):

* ``"analytic"`` — Balle & Wang (ICML 2018), the smallest σ with
  ``Φ(Δ/(2σ) − ε'σ/Δ) − e^{ε'}·Φ(−Δ/(2σ) − ε'σ/Δ) ≤ δ'``; valid for every ε' > 0 (the default);
* ``"piazza"`` — ``σ = √(2 log(2/δ'))·Δ/ε'`` (Piazza 2021, Lemma 7), classical: ε' ≤ 1 only;
* ``"kalaja"`` — ``σ = √(2 log(1.25/δ'))·Δ/ε'`` (Dwork & Roth Thm A.1), classical: ε' < 1 only;
* ``"wang"`` — ``σ = √(log(2/δ'))·Δ/ε'`` (Wang 2018's constants as Kalaja reads them); not
  verified to be (ε', δ')-DP, so it warns (:class:`ReproductionOnlyWarning`).

Each defines ``L = (σ·ε'/Δ)²`` (``log(2/δ')`` for Wang, ``2 log(2/δ')`` for Piazza, ...), which
AdaSSP's eigenvalue shift and ridge constant use (seeds-regression.md §2.3 table).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ldp.errors import PrivacyLeakWarning, ReproductionOnlyWarning
from ldp.privacy.accountant import PrivacyCost

__all__ = [
    "PrivacyLeakWarning", "ReproductionOnlyWarning", "GAUSSIAN_CONVENTIONS", "check_budget",
    "gaussian_sigma", "analytic_gaussian_sigma", "log_term", "laplace_scale", "symmetric_noise", "split_budget",
]

GAUSSIAN_CONVENTIONS = ("analytic", "piazza", "kalaja", "wang")


def check_budget(epsilon: float, delta: float | None, *, need_delta: bool) -> PrivacyCost:
    """``PrivacyCost(ε, δ)`` with ``ValueError`` naming the rule: ε > 0 finite; δ in (0, 1) when
    the mechanism is Gaussian (``need_delta``), δ = 0 or None for pure ε-DP mechanisms."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating, np.integer)):
        raise ValueError(f"epsilon must be a real number > 0, got {epsilon!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    if need_delta:
        if delta is None or isinstance(delta, bool) or not (0 < float(delta) < 1):
            raise ValueError(f"delta must be in (0, 1) for a Gaussian mechanism, got {delta!r}")
        return PrivacyCost(float(epsilon), float(delta))
    if delta not in (None, 0, 0.0):
        raise ValueError(f"this mechanism is pure ε-DP: delta must be 0 or None, got {delta!r}")
    return PrivacyCost(float(epsilon))


def _delta_of(sigma: float, eps: float, sensitivity: float) -> float:
    """δ achieved by Gaussian noise σ at ε (Balle & Wang 2018, Theorem 8), computed stably."""
    from scipy.special import log_ndtr

    a = sensitivity / (2 * sigma)
    b = eps * sigma / sensitivity
    first = math.exp(log_ndtr(a - b))
    second = math.exp(eps + log_ndtr(-a - b))
    return first - second


@lru_cache(maxsize=4096)
def _unit_analytic_sigma(epsilon: float, delta: float) -> float:
    """:func:`analytic_gaussian_sigma` at Δ = 1, by bisection on σ (relative precision 1e-12)."""
    lo, hi = 1e-12, 1.0
    while _delta_of(hi, epsilon, 1.0) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if _delta_of(mid, epsilon, 1.0) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ whose Gaussian mechanism is (ε, δ)-DP for L2 sensitivity ``Δ`` (Balle & Wang
    2018, Algorithm 1). δ depends on σ/Δ only, so σ = Δ·σ(Δ = 1): exact at any scale of Δ
    (no underflow for tiny Δ, no overflow for huge Δ). Valid for every ε > 0."""
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity}")
    return sensitivity * _unit_analytic_sigma(epsilon, delta)


def gaussian_sigma(convention: str, epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Noise SD of one Gaussian release at ``(ε', δ')`` under ``convention`` (module docstring)."""
    if convention == "analytic":
        return analytic_gaussian_sigma(epsilon, delta, sensitivity)
    if convention == "piazza":
        if epsilon > 1:
            raise ValueError(f"the classical Gaussian mechanism (noise='piazza') needs ε ≤ 1 per release, got "
                             f"ε'={epsilon:.4g}; use noise='analytic' for larger ε")
        return math.sqrt(2 * math.log(2 / delta)) * sensitivity / epsilon
    if convention == "kalaja":
        if epsilon >= 1:
            raise ValueError(f"the classical Gaussian mechanism (noise='kalaja') needs ε < 1 per release, got "
                             f"ε'={epsilon:.4g}; use noise='analytic' for larger ε")
        return math.sqrt(2 * math.log(1.25 / delta)) * sensitivity / epsilon
    if convention == "wang":
        warnings.warn("noise='wang' reproduces Wang (2018)'s constants, which are not verified to give "
                      "(ε, δ)-DP (Kalaja 2020); use it to reproduce results, not to protect data",
                      ReproductionOnlyWarning, stacklevel=3)
        return math.sqrt(math.log(2 / delta)) * sensitivity / epsilon
    raise ValueError(f"noise must be one of {GAUSSIAN_CONVENTIONS}, got {convention!r}")


def log_term(convention: str, epsilon: float, delta: float) -> float:
    """``L = (σ·ε'/Δ)²`` of a convention at ``(ε', δ')``: AdaSSP's shift is ``L/ε'·B²`` and its
    ridge constant ``√(d·L·log(2d²/ρ))·B²/ε'``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReproductionOnlyWarning)  # warned once by the release itself
        return (gaussian_sigma(convention, epsilon, delta) * epsilon) ** 2


def laplace_scale(sensitivity_l1: float, epsilon: float) -> float:
    """Scale ``b = Δ₁/ε`` of the Laplace mechanism (pure ε-DP; Dwork & Roth Thm 3.6)."""
    return sensitivity_l1 / epsilon


def symmetric_noise(rng: np.random.Generator, d: int, scale: float, form: str = "upper",
                    distribution: str = "normal") -> np.ndarray:
    """A d×d noise matrix: ``"upper"`` — upper triangle (diagonal included) i.i.d., mirrored
    (d(d+1)/2 draws: the mechanism on the distinct entries); ``"half_sum"`` — ½(G + Gᵀ) of an
    i.i.d. G (Wang's AdaSSP code: diagonal SD ``scale``, off-diagonal ``scale/√2``); ``"full"`` —
    G itself, not symmetric (Wang's SSP code). ``distribution``: ``"normal"`` or ``"laplace"``."""
    draw = (lambda size: rng.normal(0.0, scale, size)) if distribution == "normal" else \
        (lambda size: rng.laplace(0.0, scale, size))
    if form == "upper":
        iu = np.triu_indices(d)
        out = np.zeros((d, d))
        out[iu] = draw(iu[0].size)
        return out + np.triu(out, 1).T
    g = draw((d, d))
    if form == "half_sum":
        return (g + g.T) / 2
    if form == "full":
        return g
    raise ValueError(f"form must be 'upper', 'half_sum' or 'full', got {form!r}")


def split_budget(total: PrivacyCost, fractions: Sequence[float]) -> list[PrivacyCost]:
    """``total`` split by ``fractions`` (each > 0, summing to 1 within 1e-12); the last part is
    the remainder, so the parts compose back to ``total`` up to one rounding."""
    f = [float(x) for x in fractions]
    if any(not (x > 0) for x in f) or abs(math.fsum(f) - 1) > 1e-12:
        raise ValueError(f"budget fractions must be > 0 and sum to 1, got {list(fractions)}")
    parts = [PrivacyCost(total.epsilon * x, total.delta * x) for x in f[:-1]]
    eps_rest = total.epsilon - math.fsum(p.epsilon for p in parts)
    delta_rest = total.delta - math.fsum(p.delta for p in parts)
    return parts + [PrivacyCost(max(eps_rest, 0.0), max(delta_rest, 0.0))]
