"""Central noise on an aggregate share, in the field: the two-aggregator mode's central DP (issue 71, item 4).

In Prio3 (VDAF draft 18) each of the two aggregators holds an *aggregate share*, a vector of elements of a prime
field ``Z_p``; the collector adds the two shares mod ``p`` and reads the counts. Each aggregator adds its own noise
to its own share before it sends it, so that the collector learns the counts only noised:

    share'_j = (share_j + Z_j) mod p,     Z_j ~ discrete Laplace(t) or discrete Gaussian(σ²), independent,
    result   = signed(share'_0 + share'_1 mod p) = counts + Z_0 + Z_1     (no wrap-around: below),

with ``signed(x)`` the representative of ``x`` in ``(−p/2, p/2]``.

**Who it protects against.** The collector sees the sum. If one aggregator is honest, its noise alone is in the
sum, whatever the other does (a dishonest aggregator colluding with the collector may reveal or subtract its own
``Z``): each aggregator's noise is calibrated to give the whole guarantee on its own, so the release is ε-DP
(Laplace) or (ε, δ)-DP (Gaussian) against the collector and one aggregator, by post-processing of one mechanism
(Dwork & Roth 2014, Prop. 2.1). Both aggregators colluding see the counts exactly: that is what local noise inside
(issue 71, item 5) is for.

**The noise.** Counts are integers, so the noise is drawn on the integers with no grid and no rounding, by the
exact samplers of :mod:`ldp.privacy.central_noise` (Canonne, Kamath & Steinke 2020): for L1 sensitivity ``Δ₁``
(a one-hot histogram: ``Δ₁ = 2`` when one device's report is replaced, ``1`` when it is added or removed),
``t = Δ₁/ε`` gives ε-DP (the likelihood ratio of neighbours is at most ``exp(Δ₁/t)``); the discrete Gaussian's σ
is :func:`~ldp.privacy.central_noise.gaussian_sigma_zcdp` of ``Δ₂`` (CKS Theorem 14 and Corollary 13). The
variance of one count of the result is twice one aggregator's: ``2·2e^{−1/t}/(1 − e^{−1/t})²`` (discrete Laplace)
or at most ``2σ²`` (discrete Gaussian, CKS Proposition 19).

**Wrap-around.** The sum is read correctly when ``|count + Z_0 + Z_1| < p/2``. Counts are at most ``n``; the noise
is unbounded, so a wrap has a probability, not a certainty, of being absent: :func:`wrap_probability` bounds it
(the two tails, by union), and :func:`check_field` refuses a field and ``n`` for which it exceeds ``2⁻⁶⁴``
(Prio3's fields: 2⁶⁴ and 2¹²⁸ elements, so at any real ``n`` the bound is astronomically small; a toy field is
what it catches).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from ldp.privacy.central_noise import (
    NoiseSource,
    discrete_gaussian,
    discrete_laplace,
    exact_source,
    gaussian_sigma_zcdp,
)

__all__ = ["ShareNoise", "to_field", "from_field", "laplace_variance", "wrap_probability", "check_field",
           "MAX_WRAP_PROBABILITY"]

MAX_WRAP_PROBABILITY = 2.0 ** -64
"""The largest probability of a wrap-around :func:`check_field` accepts for one release."""


def to_field(z: int, modulus: int) -> int:
    """The field element of the integer ``z`` (negative included): ``z mod p``."""
    return z % modulus


def from_field(x: int, modulus: int) -> int:
    """The integer a field element stands for: its representative in ``(−p/2, p/2]``."""
    if not 0 <= x < modulus:
        raise ValueError(f"not an element of the field of {modulus} elements: {x}")
    return x - modulus if x > modulus // 2 else x


def laplace_variance(scale: Fraction | float) -> float:
    """The variance of the discrete Laplace ``P[z] ∝ exp(−|z|/t)``: ``2e^{−1/t}/(1 − e^{−1/t})²`` (the difference
    of two independent geometric variables of ratio ``e^{−1/t}``)."""
    t = float(scale)
    if not t > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    q = math.exp(-1.0 / t)
    return 2.0 * q / (1.0 - q) ** 2


def _laplace_tail(k: int, t: float) -> float:
    """``P[|Z| ≥ k]`` of the discrete Laplace of scale t, for k ≥ 1: ``2e^{−k/t}/(1 + e^{−1/t})``."""
    q = math.exp(-1.0 / t)
    return 2.0 * math.exp(-k / t) / (1.0 + q)


def wrap_probability(n: int, modulus: int, scale: float, kind: str = "laplace") -> float:
    """An upper bound on the probability that ``count + Z_0 + Z_1`` leaves ``(−p/2, p/2]`` for a count in
    ``[0, n]``: at least one of the two draws is beyond ``m = ⌊(p/2 − n)/2⌋`` in absolute value (union bound).
    Laplace: :func:`_laplace_tail`; Gaussian (``scale`` = σ): ``2·exp(−m²/(2σ²))/(1 − exp(−(2m+1)/(2σ²)))``
    bounds both tails of the discrete Gaussian by its normalized geometric majorant (CKS Proposition 25's idea)."""
    room = (modulus // 2 - n) // 2
    if room < 1:
        return 1.0
    if kind == "laplace":
        tail = _laplace_tail(room, float(scale))
    elif kind == "gaussian":
        s2 = float(scale) ** 2
        head = -(room * room) / (2 * s2)
        tail = 2.0 * math.exp(head) / -math.expm1(-(2 * room + 1) / (2 * s2)) if head > -745 else 0.0
    else:
        raise ValueError(f"kind must be 'laplace' or 'gaussian', got {kind!r}")
    return min(1.0, 2.0 * tail)


def check_field(n: int, modulus: int, scale: float, kind: str = "laplace") -> None:
    """Refuse (``ValueError``) a field too small for counts up to ``n`` with this noise: a wrap-around would turn a
    count into another with a probability above :data:`MAX_WRAP_PROBABILITY`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    if modulus < 3:
        raise ValueError(f"the modulus must be a prime >= 3, got {modulus}")
    if (w := wrap_probability(n, modulus, scale, kind)) > MAX_WRAP_PROBABILITY:
        raise ValueError(f"a field of {modulus} elements is too small for counts up to {n:,} with {kind} noise of "
                         f"scale {scale:g}: a wrap-around has probability up to {w:.3g} (at most "
                         f"{MAX_WRAP_PROBABILITY:.3g} is accepted)")


@dataclass(frozen=True)
class ShareNoise:
    """One aggregator's central noise (module docstring): discrete Laplace of scale ``Δ₁/ε``
    (:meth:`laplace`) or discrete Gaussian of variance σ² (:meth:`gaussian`), each alone enough for the guarantee
    against the collector. :meth:`add` noises an aggregate share in its field."""

    kind: str
    epsilon: float
    delta: float
    sensitivity: float
    scale: Fraction
    """t (Laplace) or σ² (Gaussian), exact."""

    @classmethod
    def laplace(cls, epsilon: float, sensitivity_l1: int = 2) -> ShareNoise:
        """ε-DP with discrete Laplace of scale ``t = Δ₁/ε`` (``Δ₁``: 2 for a one-hot histogram under replacement)."""
        eps = _positive(epsilon, "epsilon")
        sens = _positive(sensitivity_l1, "sensitivity_l1")
        return cls("laplace", eps, 0.0, sens, Fraction(sens) / Fraction(eps))

    @classmethod
    def gaussian(cls, epsilon: float, delta: float, sensitivity_l2: float = math.sqrt(2)) -> ShareNoise:
        """(ε, δ)-DP with the discrete Gaussian of :func:`~ldp.privacy.central_noise.gaussian_sigma_zcdp`
        (``Δ₂``: √2 for a one-hot histogram under replacement)."""
        eps, sens = _positive(epsilon, "epsilon"), _positive(sensitivity_l2, "sensitivity_l2")
        if isinstance(delta, bool) or not isinstance(delta, int | float) or not 0 < delta < 1:
            raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
        sigma = gaussian_sigma_zcdp(sens, eps, delta)
        return cls("gaussian", eps, float(delta), sens, Fraction(sigma) ** 2)

    @property
    def count_variance(self) -> float:
        """The variance one aggregator's noise adds to one count (the result's is twice this)."""
        return laplace_variance(self.scale) if self.kind == "laplace" else float(self.scale)

    @property
    def spread(self) -> float:
        """t (Laplace) or σ (Gaussian): the scale :func:`wrap_probability` takes."""
        return float(self.scale) if self.kind == "laplace" else math.sqrt(self.scale)

    def draw(self, rng: random.Random) -> int:
        """One exact draw."""
        return discrete_laplace(self.scale, rng) if self.kind == "laplace" else discrete_gaussian(self.scale, rng)

    def add(self, share: Sequence[int], modulus: int, n: int, source: random.Random | None = None
            ) -> tuple[list[int], NoiseSource]:
        """``share`` (field elements) with independent noise added to each, mod ``modulus``, after
        :func:`check_field` for counts up to ``n``; and where the noise came from (``source``: ``None`` for the OS
        CSPRNG, the only one for a real release; a seeded ``random.Random`` for simulations)."""
        check_field(n, modulus, self.spread, self.kind)
        if source is None:
            rng, label = exact_source(), NoiseSource.SECURE
        elif isinstance(source, random.SystemRandom):
            rng, label = source, NoiseSource.SECURE
        elif isinstance(source, random.Random):
            rng, label = source, NoiseSource.SEEDED
        else:
            raise ValueError(f"source must be None (OS CSPRNG) or a random.Random, got {source!r}")
        out = []
        for x in share:
            if not 0 <= x < modulus:
                raise ValueError(f"not an element of the field of {modulus} elements: {x}")
            out.append(to_field(x + self.draw(rng), modulus))
        return out, label


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)
