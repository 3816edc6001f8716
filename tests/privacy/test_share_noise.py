"""Central noise on an aggregate share, in the field (ldp.privacy.share_noise): the field's signed representative
round-trips every integer of the half-range; two aggregators' noised shares sum to the counts plus exactly their
two draws; the variance formula equals the distribution's own sum and the draws' variance; the wrap-around bounds
hold against the exact tails; a field too small for the counts is refused."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from ldp.privacy.central_noise import NoiseSource
from ldp.privacy.share_noise import (
    MAX_WRAP_PROBABILITY,
    ShareNoise,
    check_field,
    from_field,
    laplace_variance,
    to_field,
    wrap_probability,
)

FIELD64 = 2**32 * 4294967295 + 1  # Prio3Count's and Prio3Sum's field (VDAF draft 18, §6.1.2)
FIELD128 = 2**66 * 4611686018427387897 + 1  # Prio3SumVec's and Prio3Histogram's


@settings(max_examples=300)
@given(st.sampled_from([101, 65537, FIELD64, FIELD128]), st.data())
def test_the_signed_representative_round_trips(p: int, data: st.DataObject) -> None:
    z = data.draw(st.integers(-(p // 2), p // 2))
    assert from_field(to_field(z, p), p) == z
    x = data.draw(st.integers(0, p - 1))
    assert to_field(from_field(x, p), p) == x


def test_two_noised_shares_sum_to_the_counts_plus_both_draws() -> None:
    counts = [0, 1, 7, 10**6, 3]
    rng = random.Random(4)
    share0 = [rng.randrange(FIELD128) for _ in counts]  # a secret sharing of the counts
    share1 = [(c - s) % FIELD128 for c, s in zip(counts, share0, strict=True)]
    noise = ShareNoise.laplace(1.0)
    a, src = noise.add(share0, FIELD128, n=10**7, source=random.Random(1))
    b, _ = noise.add(share1, FIELD128, n=10**7, source=random.Random(2))
    assert src is NoiseSource.SEEDED
    z0 = [noise.draw(r) for r in [random.Random(1)] for _ in counts]
    r2 = random.Random(2)
    z1 = [noise.draw(r2) for _ in counts]
    got = [from_field((x + y) % FIELD128, FIELD128) for x, y in zip(a, b, strict=True)]
    assert got == [c + u + v for c, u, v in zip(counts, z0, z1, strict=True)]
    assert a != share0  # noised (a draw of 0 everywhere has probability below 2^-10 at t = 2)


@pytest.mark.parametrize("t", [Fraction(1, 2), Fraction(2), Fraction(7, 3)])
def test_the_laplace_variance_is_the_distributions_own(t: Fraction) -> None:
    q = math.exp(-1 / float(t))
    direct = sum(z * z * q ** abs(z) for z in range(-2000, 2001)) * (1 - q) / (1 + q)
    assert laplace_variance(t) == pytest.approx(direct, rel=1e-12)


def test_the_draws_have_the_formulas_variance() -> None:
    """20,000 exact draws of each aggregator's noise at ε = 1 (Δ₁ = 2): the sample variance of a count's noise
    (two aggregators) within 5 % of twice the formula (its standard error there is about 1.7 %)."""
    noise = ShareNoise.laplace(1.0)
    rng = random.Random(7)
    sums = [noise.draw(rng) + noise.draw(rng) for _ in range(20_000)]
    mean = sum(sums) / len(sums)
    var = sum((s - mean) ** 2 for s in sums) / (len(sums) - 1)
    assert var == pytest.approx(2 * noise.count_variance, rel=0.05)
    assert 2 * noise.count_variance == pytest.approx(15.68, abs=0.01)  # the "about 4" standard error


@pytest.mark.parametrize("t", [0.5, 2.0, 9.0])
def test_the_laplace_wrap_bound_holds_against_the_exact_tail(t: float) -> None:
    p, n = 1009, 400  # room m = (504 - 400) // 2 = 52 per draw
    q = math.exp(-1 / t)
    m = (p // 2 - n) // 2
    exact_tail = 2 * sum(q**z for z in range(m, 20000)) * (1 - q) / (1 + q)  # P[|Z| >= m]
    assert wrap_probability(n, p, t) == pytest.approx(min(1.0, 2 * exact_tail), rel=1e-9)


@pytest.mark.parametrize("sigma", [1.0, 3.0, 10.0])
def test_the_gaussian_wrap_bound_is_above_the_exact_tail(sigma: float) -> None:
    p, n = 1009, 440
    m = (p // 2 - n) // 2
    weights = {z: math.exp(-z * z / (2 * sigma * sigma)) for z in range(-4000, 4001)}
    total = sum(weights.values())
    exact = sum(w for z, w in weights.items() if abs(z) >= m) / total
    assert 2 * exact <= wrap_probability(n, p, sigma, "gaussian") <= 1.0


def test_a_field_too_small_for_the_counts_is_refused() -> None:
    check_field(10**12, FIELD64, 2.0)
    check_field(10**12, FIELD128, 200.0, "gaussian")
    with pytest.raises(ValueError, match="too small for counts up to 400"):
        check_field(400, 1009, 9.0)
    with pytest.raises(ValueError, match="too small"):
        ShareNoise.laplace(0.01).add([1, 2], 2003, n=1000, source=random.Random(0))
    assert wrap_probability(10**6, FIELD64, 2.0) < MAX_WRAP_PROBABILITY
    with pytest.raises(ValueError, match="not an element"):
        ShareNoise.laplace(1.0).add([FIELD64], FIELD64, n=1, source=random.Random(0))


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "1"])
def test_bad_parameters_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        ShareNoise.laplace(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ShareNoise.gaussian(1.0, bad)  # type: ignore[arg-type]


def test_the_gaussian_noise_meets_its_claim() -> None:
    from ldp.privacy.central_noise import zcdp_delta

    g = ShareNoise.gaussian(1.0, 1e-9)
    rho = g.sensitivity**2 / (2 * float(g.scale))
    assert zcdp_delta(rho, 1.0) <= 1e-9 and g.count_variance == pytest.approx(float(g.scale))
