"""Exact discrete Laplace and Gaussian noise for central DP releases (standard library only).

Floating-point Laplace or Gaussian draws leak the exact input through their low bits (Mironov,
"On significance of the least significant bits for differential privacy", CCS 2012). This module
draws noise with no floating point at all:

* the samplers of Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy"
  (NeurIPS 2020; arXiv:2004.00010, §5): Algorithm 1 (:func:`bernoulli_exp`), Algorithm 2
  (:func:`discrete_laplace`) and Algorithm 3 (:func:`discrete_gaussian`). They use only exact
  rational arithmetic (:class:`fractions.Fraction`; ratios of integers in the loops) and uniform
  integers (``randrange``) from a bit source; CKS Propositions 30–32 (§5.1–5.3) prove each outputs
  exactly its distribution;
* the mechanisms on real values (:func:`laplace_noise`, :func:`gaussian_noise`) on a power-of-two
  grid ``g`` (Mironov's snapping idea, CKS §5 "discretization"): the true value is rounded exactly to
  the nearest multiple of g and ``g·Z`` is added, Z discrete. Rounding moves each coordinate by at
  most g/2, so two neighbours' rounded values differ by at most ``|v − v'| + g`` per coordinate:
  the noise is calibrated for the **inflated** sensitivity ``Δ₁ + m·g`` (L1) or
  ``Δ₂ + ⌈√m⌉·g`` (L2) over m coordinates, never for less than the claim.

Privacy of the grid mechanisms (x = rounded value / g, an integer vector):

* Laplace: P[x + Z = z] ∝ ∏ exp(−|z_j − x_j|/t), so the likelihood ratio of two neighbours is at
  most exp(‖x − x'‖₁/t) ≤ exp(Δ₁'/(g·t)) = e^ε with ``t = Δ₁'/(ε·g)`` (exact rational): pure ε-DP.
* Gaussian: the multivariate discrete Gaussian with per-coordinate parameter s satisfies
  ρ-zCDP with ``ρ = ‖x − x'‖₂²/(2s²)`` (CKS Theorem 14), and ρ-zCDP implies (ε, δ)-DP with
  ``δ = inf_{α>1} e^{(α−1)(αρ−ε)}/(α−1)·(1 − 1/α)^α`` (CKS Corollary 13). σ is chosen as the
  smallest with this δ ≤ the target (any α gives a valid bound, so an imperfect search only errs
  on the safe side; a relative margin of 1e-9 covers the float evaluation). This δ holds for the
  discrete distribution itself. It is a little above the continuous analytic Gaussian's
  (Balle & Wang 2018), so σ is a few per cent larger than the analytic σ.

Noise sources (:class:`NoiseSource`): ``"secure"`` — these samplers on ``random.SystemRandom()``
(the OS CSPRNG), the only one for real releases; ``"seeded"`` — the same exact samplers on a
seeded ``random.Random`` (Mersenne Twister: reproducible, predictable, **simulation only**);
``"numpy"`` — floating-point numpy draws (callers' own code; **simulation only**).
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

__all__ = [
    "NoiseSource", "SOURCE_LABELS", "exact_source", "bernoulli_exp", "discrete_laplace", "discrete_gaussian",
    "grid_for", "round_to_grid", "zcdp_delta", "zcdp_epsilon", "gaussian_sigma_zcdp", "NoisyRelease", "laplace_noise",
    "gaussian_noise", "GRID_BITS",
]

GRID_BITS = 40  # the grid is the largest power of two <= scale·2^-40


class NoiseSource(enum.StrEnum):
    """Where a release's noise comes from."""

    SECURE = "secure"  # exact samplers on the OS CSPRNG
    SEEDED = "seeded"  # exact samplers on a seeded Mersenne Twister: simulation only
    NUMPY = "numpy"  # numpy floating point: simulation only


SOURCE_LABELS = {
    NoiseSource.SECURE: "exact discrete sampler, OS CSPRNG (secure)",
    NoiseSource.SEEDED: "seeded exact sampler — simulation only",
    NoiseSource.NUMPY: "simulation noise (numpy floating point)",
}


def exact_source(seed: int | None = None) -> random.Random:
    """The bit source of the exact samplers: ``random.SystemRandom()`` (OS CSPRNG) when ``seed`` is
    None, else ``random.Random(seed)`` — reproducible and predictable, for simulations and tests only."""
    return random.SystemRandom() if seed is None else random.Random(seed)


def bernoulli_exp(gamma: Fraction | int, rng: random.Random) -> bool:
    """Bernoulli(exp(−γ)) for rational γ ≥ 0, exactly (CKS Algorithm 1, Proposition 30).

    For γ ∈ [0, 1]: draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first A_k = 0; return 1
    iff that k is odd. P[K > k] = γ^k/k!, so P[K odd] = Σ_k (−γ)^k/k! = e^{−γ}. For γ > 1:
    ⌊γ⌋ independent Bernoulli(e^{−1}) and one Bernoulli(e^{−(γ−⌊γ⌋)}), all must be 1."""
    g = Fraction(gamma)
    if g < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    return _bernoulli_exp_ratio(g.numerator, g.denominator, rng)


def _bernoulli_exp_ratio(n: int, d: int, rng: random.Random) -> bool:
    """:func:`bernoulli_exp` of γ = n/d (integers n >= 0, d >= 1) on integers: ⌊γ⌋ draws at γ = 1, then one at
    γ − ⌊γ⌋ = (n mod d)/d."""
    whole, rest = divmod(n, d)
    for _ in range(whole):
        if not _bernoulli_exp_unit(1, 1, rng):
            return False
    return _bernoulli_exp_unit(rest, d, rng)


def _bernoulli_exp_unit(n: int, d: int, rng: random.Random) -> bool:
    """Bernoulli(exp(−γ)) for γ = n/d ∈ [0, 1] (the loop of CKS Algorithm 1). Each A_k ~ Bernoulli(γ/k) is one
    uniform integer, ``randrange(den) < num`` with γ/k = num/den in lowest terms: ``n/(d·k)`` over their gcd, the
    very draw a ``Fraction`` γ/k would give, without its objects (they were most of a draw's time)."""
    k = 1
    while True:
        dk = d * k
        c = math.gcd(n, dk)
        if rng.randrange(dk // c) >= n // c:
            return k % 2 == 1
        k += 1


def discrete_laplace(scale: Fraction | int, rng: random.Random) -> int:
    """One draw of the discrete Laplace ``P[x] ∝ exp(−|x|/scale)`` on the integers, for a rational
    scale > 0, exactly (CKS Algorithm 2, Proposition 31; scale = t/s with integers t, s ≥ 1).

    U uniform on {0, …, t−1} is kept with probability e^{−U/t}, V ~ Geometric(1 − e^{−1}) counts
    Bernoulli(e^{−1}) successes; X = U + t·V is then geometric with P[X = x] ∝ e^{−x/t}, and
    Y = ⌊X/s⌋ has P[Y = y] ∝ e^{−y·s/t}. A fair sign is attached, rejecting (−, 0) so that 0 is not
    counted twice."""
    sc = Fraction(scale)
    if not sc > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    t, s = sc.numerator, sc.denominator
    while True:
        u = rng.randrange(t)
        if not _bernoulli_exp_unit(u, t, rng):  # γ = u/t < 1
            continue
        v = 0
        while _bernoulli_exp_unit(1, 1, rng):
            v += 1
        y = (u + t * v) // s
        negative = rng.randrange(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma2: Fraction | int, rng: random.Random) -> int:
    """One draw of the discrete Gaussian ``P[x] ∝ exp(−x²/(2σ²))`` on the integers, for a rational
    σ² > 0, exactly (CKS Algorithm 3, Proposition 32).

    Rejection from the discrete Laplace with integer scale t = ⌊σ⌋ + 1: Y is accepted with
    probability exp(−(|Y| − σ²/t)²/(2σ²)); the product of the two is ∝ exp(−Y²/(2σ²)) (the
    exponents differ by a constant), so the accepted Y is exactly discrete Gaussian."""
    s2 = Fraction(sigma2)
    if not s2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}")
    t = math.isqrt(math.floor(s2)) + 1  # ⌊√⌊σ²⌋⌋ = ⌊σ⌋
    a, b = s2.numerator, s2.denominator
    while True:
        y = discrete_laplace(t, rng)
        # (|Y| − σ²/t)²/(2σ²) with σ² = a/b, on integers: (|Y|·b·t − a)² / (2·a·b·t²)
        if _bernoulli_exp_ratio((abs(y) * b * t - a) ** 2, 2 * a * b * t * t, rng):
            return y


# -- the grid ----------------------------------------------------------------------------------------------
def grid_for(scale: float) -> Fraction:
    """The grid g: the largest power of two ≤ ``scale·2^-40`` (scale: the noise scale b or σ)."""
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"the noise scale must be finite and > 0, got {scale!r}")
    _, exponent = math.frexp(scale)  # scale = m·2^e, 0.5 ≤ m < 1: the largest 2^k ≤ scale is 2^(e−1)
    return Fraction(2) ** (exponent - 1 - GRID_BITS)


def _as_list(values: Any) -> list[float]:
    """A 1-D sequence or numpy array as floats, refusing NaN and infinities."""
    raw = values.tolist() if hasattr(values, "tolist") else list(values) if isinstance(values, Iterable) \
        else [values]
    if raw and isinstance(raw[0], list):
        raise ValueError("values must be one-dimensional")
    out = []
    for v in raw:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"values must be finite real numbers, got {v!r}")
        out.append(float(v))
    return out


def round_to_grid(values: Any, grid: Fraction) -> list[int]:
    """Each value rounded exactly to the nearest multiple of ``grid`` (ties to even), in grid units."""
    return [round(Fraction(v) / grid) for v in _as_list(values)]


def _up(x: Fraction) -> float:
    """``x`` as a float rounded up (never below x)."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _check_positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)


# -- zCDP to (ε, δ) ------------------------------------------------------------------------------------------
@lru_cache(maxsize=1024)  # a pure function of two floats: each release checks its claim at the same (ρ, ε)
def zcdp_delta(rho: float, epsilon: float) -> float:
    """δ of ρ-zCDP at ε (CKS Corollary 13): ``inf_{α>1} e^{(α−1)(αρ−ε)}/(α−1)·(1 − 1/α)^α``, at the
    α where the log's derivative ``(2α−1)ρ − ε + log(1 − 1/α)`` vanishes (bisection; any α is valid)."""
    if rho <= 0:
        return 0.0
    lo, hi = 1.0 + 1e-9, (epsilon + 1) / (2 * rho) + 2
    for _ in range(200):
        alpha = (lo + hi) / 2
        if (2 * alpha - 1) * rho - epsilon + math.log1p(-1 / alpha) < 0:
            lo = alpha
        else:
            hi = alpha
    alpha = hi
    log_delta = (alpha - 1) * (alpha * rho - epsilon) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)
    return min(1.0, math.exp(log_delta))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The smallest ε (to 1e-9 relative, rounded up) at which ρ-zCDP is (ε, δ)-DP by CKS Corollary 13: the
    inverse of :func:`zcdp_delta` in ε, by bisection from Bun & Steinke's ``ρ + 2√(ρ·ln(1/δ))`` (Prop. 1.3), which
    is always enough."""
    _check_positive(rho, "rho")
    if isinstance(delta, bool) or not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    lo, hi = 0.0, rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12
    for _ in range(200):
        mid = (lo + hi) / 2
        if zcdp_delta(rho, mid) <= delta:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * hi:
            break
    return hi


_MARGIN = 1e-9


def gaussian_sigma_zcdp(sensitivity_l2: float, epsilon: float, delta: float) -> float:
    """The smallest σ (rounded up) whose discrete Gaussian on L2 sensitivity Δ is (ε, δ)-DP by CKS
    Theorem 14 and Corollary 13: the largest ρ with ``zcdp_delta(ρ, ε) ≤ δ·(1 − 1e-9)``, σ = Δ/√(2ρ)."""
    _check_positive(epsilon, "epsilon")
    _check_positive(sensitivity_l2, "sensitivity_l2")
    if isinstance(delta, bool) or not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    sd = sensitivity_l2 * _unit_sigma_zcdp(float(epsilon), float(delta)) * (1 + 1e-12)
    if not (math.isfinite(sd) and sd > 0):
        raise ValueError(f"the noise SD for sensitivity {sensitivity_l2!r} is not a finite positive float")
    return sd


@lru_cache(maxsize=1024)
def _unit_sigma_zcdp(epsilon: float, delta: float) -> float:
    """:func:`gaussian_sigma_zcdp` at Δ = 1 (δ depends on Δ/σ only), by bisection on ρ."""
    target = delta * (1 - _MARGIN)
    lo, hi = 0.0, epsilon + 1.0
    while zcdp_delta(hi, epsilon) <= target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if zcdp_delta(mid, epsilon) <= target:
            lo = mid
        else:
            hi = mid
    if lo <= 0:
        raise ValueError(f"no σ reaches delta={delta!r} at epsilon={epsilon!r}")
    return math.nextafter(1 / math.sqrt(2 * lo), math.inf)


def _rho(sensitivity: float, sd: float) -> float:
    """ρ = Δ²/(2σ²) of the discrete Gaussian (CKS Theorem 14), without overflow."""
    return (sensitivity / sd) ** 2 / 2


# -- the mechanisms ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NoisyRelease:
    """A released vector and how it was made: ``values`` (exact multiples of ``grid`` unless
    larger than 2^53·grid, where the float conversion — post-processing — rounds), the noise
    ``scale`` (b or σ) on the inflated ``sensitivity``, and the ``source`` label."""

    values: list[float]
    grid: float
    scale: float
    sensitivity: float
    source: NoiseSource
    rho: float | None = None

    @property
    def label(self) -> str:
        return SOURCE_LABELS[self.source]


def _source(source: random.Random | None) -> tuple[random.Random, NoiseSource]:
    if source is None:
        return exact_source(), NoiseSource.SECURE
    if isinstance(source, random.SystemRandom):
        return source, NoiseSource.SECURE
    if isinstance(source, random.Random):
        return source, NoiseSource.SEEDED
    raise ValueError(f"source must be None (OS CSPRNG) or a random.Random, got {source!r}")


def laplace_noise(values: Any, sensitivity_l1: float, epsilon: float, *,
                  source: random.Random | None = None) -> NoisyRelease:
    """ε-DP release of ``values`` (L1 sensitivity Δ₁) with discrete Laplace noise on a grid (module
    docstring): g = grid for Δ₁/ε, t = (Δ₁ + m·g)/(ε·g) in grid units, output ``(round(v/g) + Z)·g``."""
    eps = _check_positive(epsilon, "epsilon")
    sens = _check_positive(sensitivity_l1, "sensitivity_l1")
    xs = _as_list(values)
    rng, kind = _source(source)
    grid = grid_for(sens / eps)
    inflated = Fraction(sens) + len(xs) * grid
    t = inflated / (Fraction(eps) * grid)
    out = [float((k + discrete_laplace(t, rng)) * grid) for k in round_to_grid(xs, grid)]
    return NoisyRelease(out, float(grid), _up(t * grid), _up(inflated), kind)


def gaussian_noise(values: Any, sensitivity_l2: float, *, sigma: float | None = None, epsilon: float | None = None,
                   delta: float | None = None, source: random.Random | None = None) -> NoisyRelease:
    """Release of ``values`` (L2 sensitivity Δ₂) with discrete Gaussian noise on a grid (module
    docstring). With ``epsilon`` and ``delta``: σ is at least :func:`gaussian_sigma_zcdp` for the
    inflated sensitivity Δ₂' = Δ₂ + ⌈√m⌉·g (and at least ``sigma·Δ₂'/Δ₂`` when ``sigma`` is also
    given). With ``sigma`` alone: σ' = σ·Δ₂'/Δ₂, which keeps ρ = Δ₂²/(2σ²) (reported as ``rho``)."""
    sens = _check_positive(sensitivity_l2, "sensitivity_l2")
    if (epsilon is None) != (delta is None) or (sigma is None and epsilon is None):
        raise ValueError("give sigma, or epsilon and delta (or all three)")
    claim = None if epsilon is None or delta is None else (epsilon, delta)
    base = _check_positive(sigma, "sigma") if sigma is not None else gaussian_sigma_zcdp(sens, *claim)  # type: ignore[misc]
    xs = _as_list(values)
    rng, kind = _source(source)
    grid = grid_for(base)
    inflated = _up(Fraction(sens) + math.isqrt(max(len(xs) - 1, 0)) * grid + grid)  # ⌈√m⌉ ≤ ⌊√(m−1)⌋ + 1
    sd = _up(Fraction(base) * Fraction(inflated) / Fraction(sens))
    if claim is not None:
        sd = max(sd, gaussian_sigma_zcdp(inflated, *claim))
        if zcdp_delta(_rho(inflated, sd), claim[0]) > claim[1]:  # final check of the claim
            raise ValueError(f"internal: σ={sd} does not reach delta={claim[1]}")  # pragma: no cover
    s2 = (Fraction(sd) / grid) ** 2
    out = [float((k + discrete_gaussian(s2, rng)) * grid) for k in round_to_grid(xs, grid)]
    return NoisyRelease(out, float(grid), sd, inflated, kind, rho=_rho(inflated, sd))
