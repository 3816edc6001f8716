"""Exact discrete samplers and grid mechanisms of ldp.privacy.central_noise (CKS 2020), and the
regressions' secure noise path. Bands are from the exact laws: binomial/normal at 4.5 SD (two-sided
false alarm ≈ 7e-6 each) and the chi-square law's 1 − 1e-6 quantile."""

import math
import random
import subprocess
import sys
import textwrap
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import chi2
from support import ROOT

from ldp.privacy.central_noise import (
    NoiseSource,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    gaussian_noise,
    gaussian_sigma_zcdp,
    grid_for,
    laplace_noise,
    round_to_grid,
    zcdp_delta,
)

Z = 4.5  # SDs of every normal band
N = 20000


def _chi_square_ok(draws: list[int], pmf: dict[int, float]) -> tuple[float, float]:
    """Pearson's statistic over the support values with expected count ≥ 5 (the rest pooled), and
    its 1 − 1e-6 chi-square quantile."""
    counts: dict[int, int] = {}
    for x in draws:
        counts[x] = counts.get(x, 0) + 1
    keep = [x for x, p in pmf.items() if p * len(draws) >= 5]
    stat, rest_obs, rest_exp = 0.0, len(draws), 1.0
    for x in keep:
        e = pmf[x] * len(draws)
        stat += (counts.get(x, 0) - e) ** 2 / e
        rest_obs -= counts.get(x, 0)
        rest_exp -= pmf[x]
    rest_exp *= len(draws)
    if rest_exp >= 5:
        stat += (rest_obs - rest_exp) ** 2 / rest_exp
        df = len(keep)
    else:
        df = len(keep) - 1
    return stat, float(chi2.ppf(1 - 1e-6, df))


def _pmf(weight, half_width: int) -> dict[int, float]:
    w = {x: weight(x) for x in range(-half_width, half_width + 1)}
    total = math.fsum(w.values())
    return {x: v / total for x, v in w.items()}


def _moments_ok(draws: list[int], pmf: dict[int, float], var_exact: float) -> None:
    a = np.asarray(draws, dtype=float)
    m4 = math.fsum(p * x**4 for x, p in pmf.items())
    assert abs(a.mean()) <= Z * math.sqrt(var_exact / a.size)
    assert abs(a.var() - var_exact) <= Z * math.sqrt((m4 - var_exact**2) / a.size)


# exact sampler draws in pure Python: run untraced (the lines they run are covered by the other tests: the integer
# loops' draws against the fractions', the grid mechanisms)
@pytest.mark.no_cover
@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(4)])
def test_bernoulli_exp_matches_exp_minus_gamma(gamma):
    rng = random.Random(1)
    hits = sum(bernoulli_exp(gamma, rng) for _ in range(N))
    p = math.exp(-gamma)
    if gamma == 0:
        assert hits == N
    else:
        assert abs(hits - N * p) <= Z * math.sqrt(N * p * (1 - p))


@pytest.mark.no_cover
@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(3, 2), Fraction(4)])
def test_discrete_laplace_is_exact(scale):
    rng = random.Random(2)
    draws = [discrete_laplace(scale, rng) for _ in range(N)]
    pmf = _pmf(lambda x: math.exp(-abs(x) / scale), 400)
    stat, band = _chi_square_ok(draws, pmf)
    assert stat <= band
    q = math.exp(-1 / scale)
    _moments_ok(draws, pmf, 2 * q / (1 - q) ** 2)  # the discrete Laplace variance


@pytest.mark.no_cover
@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(2), Fraction(25, 2)])
def test_discrete_gaussian_is_exact(sigma2):
    rng = random.Random(3)
    draws = [discrete_gaussian(sigma2, rng) for _ in range(N)]
    pmf = _pmf(lambda x: math.exp(-x * x / (2 * sigma2)), 200)
    stat, band = _chi_square_ok(draws, pmf)
    assert stat <= band
    _moments_ok(draws, pmf, math.fsum(p * x * x for x, p in pmf.items()))


def _fraction_bernoulli_exp(g: Fraction, rng: random.Random) -> bool:
    """CKS Algorithm 1 as written, on ``Fraction``: A_k ~ Bernoulli(γ/k) as ``randrange(den) < num``."""
    whole = math.floor(g)
    for _ in range(whole):
        if not _fraction_bernoulli_exp_unit(Fraction(1), rng):
            return False
    return _fraction_bernoulli_exp_unit(g - whole, rng)


def _fraction_bernoulli_exp_unit(g: Fraction, rng: random.Random) -> bool:
    k = 1
    while rng.randrange((g / k).denominator) < (g / k).numerator:
        k += 1
    return k % 2 == 1


def _fraction_discrete_gaussian(s2: Fraction, rng: random.Random) -> int:
    """CKS Algorithms 2 (at integer scale t) and 3 as written, on ``Fraction``."""
    t = math.isqrt(math.floor(s2)) + 1
    while True:
        u = rng.randrange(t)
        if not _fraction_bernoulli_exp(Fraction(u, t), rng):
            continue
        v = 0
        while _fraction_bernoulli_exp_unit(Fraction(1), rng):
            v += 1
        negative = rng.randrange(2) == 1
        if negative and u + t * v == 0:
            continue
        y = -(u + t * v) if negative else u + t * v
        if _fraction_bernoulli_exp((abs(y) - s2 / t) ** 2 / (2 * s2), rng):
            return y


def test_the_integer_loops_draw_as_the_fractions_would():
    """The samplers' loops run on integer ratios: the same draws, and the same bits consumed, as the algorithms
    written on ``Fraction`` (so a seeded release is what it was)."""
    for seed in (0, 1):
        for gamma in (Fraction(0), Fraction(1, 3), Fraction(1), Fraction(17, 6), Fraction(4), Fraction(10**6 + 1, 7)):
            r1, r2 = random.Random(seed), random.Random(seed)
            assert [bernoulli_exp(gamma, r1) for _ in range(100)] == [_fraction_bernoulli_exp(gamma, r2)
                                                                      for _ in range(100)]
            assert r1.getstate() == r2.getstate()
        for sigma2 in (Fraction(1, 4), Fraction(2), Fraction(25, 2), Fraction(7, 3), Fraction(10**6, 7)):
            r1, r2 = random.Random(seed), random.Random(seed)
            assert [discrete_gaussian(sigma2, r1) for _ in range(100)] == [_fraction_discrete_gaussian(sigma2, r2)
                                                                           for _ in range(100)]
            assert r1.getstate() == r2.getstate()


def test_grid_is_the_largest_power_of_two_below_scale_times_2_to_minus_40():
    for scale in (1.0, 3.7, 1e-300, 1e300, 5e-324):
        g = grid_for(scale)
        assert g <= Fraction(scale) * Fraction(1, 2**40) < 2 * g
        assert g.numerator == 1 or g.denominator == 1


def _apart(grid: Fraction, step: Fraction, m: int) -> tuple[list[float], list[float]]:
    """Values 7.45 grid steps up (they round down) and neighbours at most ``step`` further in every
    coordinate (floats rounded down); with step = (N + 0.2)·grid the neighbours round up, N + 1 steps away."""
    a = float(Fraction(745, 100) * grid)
    b = float(Fraction(a) + step)
    while Fraction(b) - Fraction(a) > step:
        b = math.nextafter(b, -math.inf)
    return [a] * m, [b] * m


def test_laplace_grid_mechanism_exact_audit():
    """Exact worst likelihood ratio of the output pmfs of two neighbours (L1 distance ≤ Δ) that
    round apart: ≤ e^ε, on the whole support (outside [min k, max k] the ratio is constant)."""
    eps = 0.7
    for m in (1, 3):
        g0 = grid_for(3.0 / eps)
        delta = float(3 * g0.denominator * g0 + Fraction(2, 10) * m * g0)  # Δ/m = (N + 0.2)·g
        rel = laplace_noise([0.25] * m, delta, eps, source=random.Random(0))
        grid = Fraction(rel.grid)
        assert grid == g0
        t = Fraction(rel.scale) / grid
        a, b = _apart(grid, Fraction(delta) / m, m)
        assert sum(abs(Fraction(x) - Fraction(y)) for x, y in zip(a, b, strict=True)) <= Fraction(delta)
        ka, kb = round_to_grid(a, grid), round_to_grid(b, grid)
        assert sum(abs(x - y) for x, y in zip(ka, kb, strict=True)) * grid > Fraction(delta)  # rounding added
        worst = 0.0
        for j in range(m):
            lo, hi = min(ka[j], kb[j]), max(ka[j], kb[j])
            # the log-ratio is constant outside [lo, hi] and linear inside: its extremes are among these points
            support = [*range(lo - 3, lo + 4), *range(hi - 3, hi + 4)]
            worst += float(max((abs(z - kb[j]) - abs(z - ka[j])) / t for z in support))
        assert worst <= eps * (1 + 1e-12)
        assert rel.scale >= (delta + m * rel.grid) / eps


def _exact_delta(sigma2: float, shift: tuple[int, ...], eps: float, width: int) -> float:
    """δ(ε) = Σ_z max(0, p(z) − e^ε q(z)) of N_Z(0, σ²)^d against its shift, over the box |z_i| ≤ width
    (the mass outside is below 1e-30 for the widths used)."""
    d = len(shift)
    one = [math.exp(-x * x / (2 * sigma2)) for x in range(-width - 10, width + 11)]
    norm = math.fsum(one) ** d
    total = 0.0
    for z in np.ndindex(*(2 * width + 1,) * d):
        zz = [zi - width for zi in z]
        p = math.prod(math.exp(-x * x / (2 * sigma2)) for x in zz)
        q = math.prod(math.exp(-(x - s) ** 2 / (2 * sigma2)) for x, s in zip(zz, shift, strict=True))
        total += max(0.0, p - math.exp(eps) * q)
    return total / norm


@pytest.mark.parametrize("shifts", [[(1,), (2,)], [(1, 1), (2, 0), (1, 0)]])
def test_discrete_gaussian_exact_delta_is_below_the_claim(shifts):
    """The δ claimed by the zCDP route (CKS Thm 14 + Cor 13) for Δ = 2 is ≥ the exact δ(ε) of the
    discrete Gaussian for every integer shift of L2 norm ≤ Δ, in 1 and 2 dimensions."""
    eps, target = 1.0, 1e-3
    sigma = gaussian_sigma_zcdp(2.0, eps, target)
    assert zcdp_delta((2.0 / sigma) ** 2 / 2, eps) <= target
    width = int(12 * sigma) + 4
    for shift in shifts:
        assert math.hypot(*shift) <= 2
        assert _exact_delta(sigma * sigma, shift, eps, width) <= target


def test_gaussian_release_inflates_and_keeps_the_claim():
    eps, delta, sens = 0.5, 5e-7, 1.0
    for m in (1, 6):
        rel = gaussian_noise([0.1] * m, sens, epsilon=eps, delta=delta, source=random.Random(4))
        grid = Fraction(rel.grid)
        room = Fraction(sens / math.sqrt(m)) * (1 - Fraction(1, 10**9))  # below Δ/√m despite the float √
        a, b = _apart(grid, min(room // grid * grid + grid / 5, room), m)  # rounds apart
        assert sum((Fraction(x) - Fraction(y)) ** 2 for x, y in zip(a, b, strict=True)) <= Fraction(sens) ** 2
        ka, kb = round_to_grid(a, grid), round_to_grid(b, grid)
        assert math.dist(ka, kb) * rel.grid <= rel.sensitivity
        assert rel.sensitivity >= sens + math.sqrt(m) * rel.grid
        assert rel.scale >= gaussian_sigma_zcdp(rel.sensitivity, eps, delta)
        assert zcdp_delta(rel.rho, eps) <= delta
        assert rel.source is NoiseSource.SEEDED


def test_outputs_are_exact_grid_multiples_and_sources_labelled():
    rel = laplace_noise(np.array([1.0, -2.5, 1e-3]), 1.0, 1.0, source=random.Random(5))
    assert all((Fraction(v) / Fraction(rel.grid)).denominator == 1 for v in rel.values)
    assert "simulation only" in rel.label
    rel = gaussian_noise([3.0], 1.0, sigma=2.0)
    assert rel.source is NoiseSource.SECURE and "CSPRNG" in rel.label
    assert (Fraction(rel.values[0]) / Fraction(rel.grid)).denominator == 1


@pytest.mark.parametrize("call, match", [
    (lambda: laplace_noise([1.0], 1.0, 0.0), "epsilon"),
    (lambda: laplace_noise([1.0], 1.0, -1.0), "epsilon"),
    (lambda: laplace_noise([1.0], 1.0, math.inf), "epsilon"),
    (lambda: laplace_noise([math.nan], 1.0, 1.0), "values"),
    (lambda: laplace_noise([math.inf], 1.0, 1.0), "values"),
    (lambda: laplace_noise([1.0], 0.0, 1.0), "sensitivity"),
    (lambda: laplace_noise([[1.0]], 1.0, 1.0), "one-dimensional"),
    (lambda: gaussian_noise([1.0], -1.0, sigma=1.0), "sensitivity"),
    (lambda: gaussian_noise([1.0], 1.0, epsilon=1.0, delta=0.0), "delta"),
    (lambda: gaussian_noise([1.0], 1.0, epsilon=1.0, delta=1.0), "delta"),
    (lambda: gaussian_noise([1.0], 1.0, epsilon=0.0, delta=1e-6), "epsilon"),
    (lambda: gaussian_noise([1.0], 1.0, epsilon=1.0), "sigma, or epsilon and delta"),
    (lambda: gaussian_noise([1.0], 1.0, sigma=0.0), "sigma"),
    (lambda: laplace_noise([1.0], 1.0, 1.0, source=np.random.default_rng(0)), "source"),
])
def test_bad_parameters_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=5), sens=st.floats(1e-3, 1e3),
       eps=st.floats(0.01, 10), seed=st.integers(0, 2**32))
def test_property_outputs_on_grid_and_scales_never_below_the_claim(values, sens, eps, seed):
    lap = laplace_noise(values, sens, eps, source=random.Random(seed))
    gau = gaussian_noise(values, sens, epsilon=eps, delta=1e-6, source=random.Random(seed))
    for rel in (lap, gau):
        assert len(rel.values) == len(values) and rel.sensitivity >= sens
        assert all((Fraction(v) / Fraction(rel.grid)).denominator == 1 for v in rel.values)
    assert lap.scale >= sens / eps and gau.scale >= gaussian_sigma_zcdp(sens, eps, 1e-6)


def test_import_pulls_no_numpy():
    code = textwrap.dedent("""
        import sys
        import ldp.privacy.central_noise
        heavy = sorted({"numpy", "scipy", "sklearn"} & set(sys.modules))
        sys.exit(f"imported {heavy}" if heavy else 0)
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr + result.stdout
