"""Poplar1's tree walk and its calibration (issue 89, item 4): :mod:`ldp.prio.heavy_hitters`. No binding needed.

What breaking makes them fail:

* the per-level noise not taken from the mode's ShareNoise (another σ or t at one level): the one-level tests;
* the noise not scaled with the number of levels (σ of one level reused for m): the composition test (m·ρ above
  the walk's ρ) and the exact privacy test (the exact δ at ε above the target, by far);
* the threshold not accounting for the m·C tests, or the noise law wrong: the threshold and tail tests;
* the walk keeping a prefix below T, losing one above it, exceeding ``max_candidates`` or keeping smaller counts
  over larger ones: the walk tests.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp.aggregators.release import over_releases
from ldp.prio.heavy_hitters import (
    NoiseLaw,
    calibrate,
    check_levels,
    recommended_threshold,
    walk,
)
from ldp.privacy.central_noise import gaussian_sigma_zcdp, zcdp_delta, zcdp_epsilon
from ldp.privacy.share_noise import ShareNoise


def test_one_level_is_the_prio3_histogram_noise() -> None:
    assert calibrate("gaussian:1:1e-9", 1).level_noise == ShareNoise.gaussian(1.0, 1e-9, math.sqrt(2))
    assert calibrate("laplace:0.5", 1).level_noise == ShareNoise.laplace(0.5, 2)


@pytest.mark.parametrize("levels", [2, 8, 64])
def test_gaussian_rho_adds_up_to_the_walks(levels: int) -> None:
    eps, delta = 2.0, 1e-8
    cal = calibrate(f"gaussian:{eps}:{delta}", levels)
    rho_walk = 1 / (2 * gaussian_sigma_zcdp(1.0, eps, delta) ** 2)  # the ρ one release at (ε, δ) may have
    assert cal.rho_total == pytest.approx(levels * cal.rho_level)
    assert rho_walk * (1 - 1e-6) <= cal.rho_total <= rho_walk * (1 + 1e-12)  # equal, up to rounding
    assert zcdp_delta(cal.rho_total, eps) <= delta
    assert cal.level_noise.sensitivity == pytest.approx(math.sqrt(2))
    assert cal.level_noise.epsilon == zcdp_epsilon(cal.rho_level, delta)  # the level's own figure
    assert cal.cost().epsilon == pytest.approx(eps, rel=1e-8) and cal.cost().delta == delta
    # the mode's composition of the level records gives the same
    composed = over_releases([{"noise": cal.level_record()}] * levels, delta)
    assert composed is not None and composed.epsilon == cal.cost().epsilon


@pytest.mark.parametrize("levels", [2, 64])
def test_laplace_epsilon_adds_up_to_the_walks(levels: int) -> None:
    cal = calibrate("laplace:4", levels)
    assert cal.level_noise.scale == 2 * levels / 4  # t = Δ₁/ε_level = 2m/ε, exact
    assert cal.level_noise.epsilon == pytest.approx(4 / levels) and cal.level_noise.epsilon >= 4 / levels
    basic = sum([cal.level_noise.epsilon] * levels)
    assert basic == pytest.approx(4.0)
    assert cal.cost().epsilon <= basic * (1 + 1e-12)  # zCDP at δ may be smaller, never basic's more


def test_per_device_cost_is_the_modes() -> None:
    g = calibrate("gaussian:1:1e-9", 8)
    assert g.cost(2).epsilon == pytest.approx(zcdp_epsilon(4 * g.rho_total, 1e-9))
    assert g.cost(1).epsilon < g.cost(2).epsilon
    lap = calibrate("laplace:1", 8)
    assert lap.cost(3, delta=1e-9).epsilon <= 3.0 * (1 + 1e-12)


def _exact_delta(sigma2: float, coordinates: int, eps: float) -> float:
    """δ(ε) of the discrete Gaussian of variance parameter σ² on ``coordinates`` counts each moved by 1 (the worst
    neighbour of an m-level walk: 2m counts), computed exactly: the privacy loss is ``Σ (1 + 2x_i)/(2σ²)`` with
    ``x_i`` iid discrete Gaussians (by symmetry), δ = E[(1 − e^{ε − L})⁺]."""
    k = math.ceil(14 * math.sqrt(sigma2))
    z = np.arange(-k, k + 1)
    pmf = np.exp(-z * z / (2 * sigma2))
    pmf /= pmf.sum()
    total = np.array([1.0])
    for _ in range(coordinates):
        total = np.convolve(total, pmf)
    s = np.arange(total.size) - coordinates * k
    loss = (coordinates + 2 * s) / (2 * sigma2)
    return float(np.sum(total * np.clip(-np.expm1(eps - loss), 0, None)))


def test_exact_privacy_of_a_small_walk() -> None:
    """Three levels at (1, 1e-6): the exact δ at ε = 1 of the composed release is below 1e-6; with the noise of one
    level (not scaled with m) it is far above."""
    eps, delta, m = 1.0, 1e-6, 3
    cal = calibrate(f"gaussian:{eps}:{delta}", m)
    exact = _exact_delta(float(cal.level_noise.scale), 2 * m, eps)
    assert 0 < exact <= delta
    unscaled = float(calibrate(f"gaussian:{eps}:{delta}", 1).level_noise.scale)
    assert _exact_delta(unscaled, 2 * m, eps) > 10 * delta


def test_laplace_law_tail_matches_its_closed_form() -> None:
    """Z₀ + Z₁ of two discrete Laplace of scale t: ``P[s] = c²q^|s|·((|s| + 1) + 2q²/(1 − q²))``,
    ``c = (1 − q)/(1 + q)``, ``q = e^{−1/t}`` (the two-sided geometric convolved with itself)."""
    noise = ShareNoise.laplace(0.5, 2)  # t = 4
    law = NoiseLaw.of(noise)
    q = math.exp(-1 / 4)
    c = (1 - q) / (1 + q)
    s = np.arange(-400, 401)
    pmf = c * c * q ** np.abs(s) * ((np.abs(s) + 1) + 2 * q * q / (1 - q * q))
    for t in (-5, 0, 7, 30, 60):
        assert law.tail(t) == pytest.approx(pmf[s >= t].sum(), rel=1e-9)


def test_gaussian_law_tail_matches_a_direct_sum() -> None:
    noise = ShareNoise.gaussian(2.0, 1e-6, math.sqrt(2))
    law = NoiseLaw.of(noise)
    s2 = float(noise.scale)
    k = math.ceil(15 * math.sqrt(s2))
    z = np.arange(-k, k + 1)
    pmf = np.exp(-z * z / (2 * s2))
    pmf /= pmf.sum()
    both = np.add.outer(z, z)
    joint = np.outer(pmf, pmf)
    for t in (0, 5, 12, 20):
        assert law.tail(t) == pytest.approx(joint[both >= t].sum(), rel=1e-9)


def test_threshold_bounds_the_false_prefixes() -> None:
    cal = calibrate("gaussian:4:1e-8", 64)
    t = recommended_threshold(cal, 4096, 0.05)
    law = NoiseLaw.of(cal.level_noise)
    assert 64 * 4096 * law.tail(t) <= 0.05 < 64 * 4096 * law.tail(t - 1)
    assert recommended_threshold(cal, 4096, 0.05) < recommended_threshold(calibrate("gaussian:4:1e-8", 128), 4096)


def _exact(strings: dict[int, int], bits: int):  # noqa: ANN202
    def counts_at(level: int, prefixes: list[int]) -> list[int]:
        shift = bits - 1 - level
        return [sum(c for s, c in strings.items() if s >> shift == p) for p in prefixes]

    return counts_at


def test_noise_off_finds_exactly_the_strings_above_the_threshold() -> None:
    rng = np.random.default_rng(5)
    values = rng.choice(1 << 12, 60, replace=False).tolist()
    counts = rng.integers(1, 40, 60).tolist()
    strings = dict(zip(values, counts, strict=True))
    result = walk(_exact(strings, 12), 12, 20, 1 << 12)
    assert result.strings == {s: c for s, c in strings.items() if c >= 20}
    assert list(result.strings.values()) == sorted(result.strings.values(), reverse=True)
    assert not result.capped and result.level == 11
    on_bytes = walk(_exact(strings, 12), 12, 20, 1 << 12, levels=[3, 7, 11])  # a subset of levels
    assert on_bytes.strings == result.strings and [t.level for t in on_bytes.trace] == [3, 7, 11]


def test_the_cap_keeps_the_largest_and_bounds_the_candidates() -> None:
    asked: list[int] = []

    def everything_passes(level: int, prefixes: list[int]) -> list[int]:
        asked.append(len(prefixes))
        assert prefixes == sorted(prefixes)
        return [p * 7 % 101 for p in prefixes]  # a count depending on the prefix

    result = walk(everything_passes, 10, 0, 16)
    assert max(asked) <= 16 and result.capped
    assert all(t.kept <= 8 for t in result.trace[:-1])
    last = result.trace[-1]
    assert len(result.strings) == last.kept == last.passed
    fourth = result.trace[3]  # 2, 4, 8, then 16 candidates, all passing: 8 kept, whose 16 children fit
    assert fourth.candidates == 16 and fourth.kept == 8 < fourth.passed == 16


def test_the_cap_drops_the_smallest_counts() -> None:
    def by_value(level: int, prefixes: list[int]) -> list[int]:
        return list(prefixes)  # a prefix's count is its value: the largest are the last ones

    result = walk(by_value, 6, 0, 8)
    assert sorted(result.strings) == list(range(64 - 8, 64))


def test_a_walk_stops_where_nothing_passes() -> None:
    result = walk(lambda level, p: [0] * len(p), 16, 1, 64)
    assert result.strings == {} and len(result.trace) == 1 and result.trace[0].kept == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"bits": 0}, "bits"), ({"bits": 300}, "bits"), ({"threshold": float("nan")}, "threshold"),
    ({"max_candidates": 1}, "max_candidates"), ({"levels": [3, 3]}, "increase"), ({"levels": [0, 7]}, "step"),
    ({"levels": []}, "non-empty"), ({"levels": [9]}, "increase"),
])
def test_bad_input_is_refused(kwargs: dict, message: str) -> None:
    args = {"counts_at": lambda level, p: [0] * len(p), "bits": 8, "threshold": 1, "max_candidates": 64, **kwargs}
    with pytest.raises(ValueError, match=message):
        walk(**args)


def test_a_counts_at_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="2 prefixes"):
        walk(lambda level, p: [1], 4, 1, 16)
    with pytest.raises(ValueError, match="finite"):
        walk(lambda level, p: [float("inf")] * len(p), 4, 1, 16)
    with pytest.raises(ValueError, match="nothing to calibrate"):
        calibrate("none", 4)
    assert check_levels(None, 5, 2) == [0, 1, 2, 3, 4]
