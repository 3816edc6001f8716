"""Simulated Poplar1 walks (issue 89, items 4 and 5): :mod:`ldp.simulation.poplar1`.

Statistical tests are seeded; each compares a binomial proportion or a mean with its expectation at 4.5 standard
errors (a false failure about 7e-6 each under the normal approximation).

What breaking makes them fail: the prefix counts wrong (the brute-force test); the noise of one aggregator only,
or of the wrong spread (the noise test and the formula test); the formula and the simulation disagreeing (the
formula test); noise left on when it is off, or a string above T missed (the exact-recovery test); the isotonic
fit or its interpolation wrong (the threshold tests).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp.plan.poplar1 import find_probability, holders_needed
from ldp.prio.heavy_hitters import NoiseLaw, calibrate, recommended_threshold
from ldp.prio.poplar1 import bits_of
from ldp.simulation.poplar1 import (
    NoiseDraws,
    PrefixCounts,
    empirical_threshold,
    found_counts,
    plant,
    random_strings,
    simulate_walks,
    words_as_ints,
)

Z = 4.5


def test_prefix_counts_match_a_brute_force() -> None:
    rng = np.random.default_rng(1)
    values = rng.integers(0, 1 << 10, 200).astype(np.uint64)  # repeats, summed
    counts = rng.integers(0, 5, 200)
    data = PrefixCounts(values, counts, 10)
    for level in (0, 3, 9):
        prefixes = list(range(1 << (level + 1)))
        brute = [int(sum(c for v, c in zip(values.tolist(), counts.tolist(), strict=True)
                         if v >> (9 - level) == p)) for p in prefixes]
        assert data.counts_at(level, prefixes).tolist() == brute
    assert data.n == counts.sum()


def test_noise_off_recovers_every_string_above_the_threshold() -> None:
    rng = np.random.default_rng(2)
    values = random_strings(300, 40, rng)
    counts = rng.integers(1, 60, 300)
    results = simulate_walks(PrefixCounts(values, counts, 40), None, 30, 1 << 12, trials=2)
    for r in results:
        assert set(r.strings) == set(values[counts >= 30].tolist())
        assert all(r.strings[int(v)] == c for v, c in zip(values, counts, strict=True) if c >= 30)


def test_the_noise_is_both_aggregators() -> None:
    cal = calibrate("gaussian:1:1e-8", 16)
    draws = NoiseDraws(NoiseLaw.of(cal.level_noise), 3).take(200_000)
    var = 2 * float(cal.level_noise.scale)  # two discrete Gaussians: at most 2σ², within 1e-12 at this σ
    assert abs(draws.mean()) <= Z * math.sqrt(var / draws.size)
    assert abs(draws.var() / var - 1) <= Z * math.sqrt(2 / draws.size)


def test_formula_agrees_with_the_simulation() -> None:
    """One string alone (its prefixes have its h holders at every level): found with probability
    ``P(Z₀ + Z₁ ≥ T − h)^m``, at the formula's holders needed and below it."""
    bits, cap = 12, 256
    cal = calibrate("gaussian:2:1e-6", bits)
    t = recommended_threshold(cal, cap)
    h = holders_needed(cal, t, 0.9)
    law = NoiseLaw.of(cal.level_noise)
    for holders in (h, h - 8):
        values, counts, planted = plant([], [], [holders], bits, 4)
        trials = 600
        found = found_counts(simulate_walks(PrefixCounts(values, counts, bits), cal, t, cap, trials, 5), planted)
        p = find_probability(law, t, [holders] * bits)
        assert abs(found[0] / trials - p) <= Z * math.sqrt(p * (1 - p) / trials), (holders, found[0], p)


def test_empirical_threshold_on_a_known_curve() -> None:
    """Rates from a logistic curve in log h whose 0.9 point is 400: the fit finds it within its sampling error."""
    rng = np.random.default_rng(7)
    holders = np.repeat(np.round(np.geomspace(100, 1600, 25)).astype(int), 4)
    p = 1 / (1 + np.exp(-(np.log(holders) - math.log(400)) * 8 - math.log(9)))
    trials = 400
    found = rng.binomial(trials, p)
    got = empirical_threshold(holders, found, trials, 0.9)
    assert got["threshold"] == pytest.approx(400, rel=0.06) and not got["below_range"]
    assert empirical_threshold([5, 6], [0, 0], 10)["threshold"] == math.inf
    assert empirical_threshold([5, 6], [10, 10], 10)["below_range"]


def test_words_are_poplar1s_bit_order() -> None:
    v = int(words_as_ints(["ab"], 24)[0])
    assert tuple(bool(v >> (23 - i) & 1) for i in range(24)) == bits_of(b"ab", 24)
    with pytest.raises(ValueError, match="longer"):
        words_as_ints(["abcd"], 24)
