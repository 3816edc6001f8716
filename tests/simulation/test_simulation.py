"""Populations and the generic simulation / accuracy plumbing."""

import numpy as np
import pytest

from ldp.encoders.randomized_response import GRRParams
from ldp.simulation.collect import (
    accuracy,
    exponential,
    from_counts,
    gaussian,
    make_population,
    simulate,
    uniform,
    zipf,
)


def test_population_shapes():
    z = zipf(5, 1.0)
    assert np.allclose(z.pmf, (1 / np.arange(1, 6)) / (1 / np.arange(1, 6)).sum())
    assert np.allclose(uniform(4).pmf, 0.25)
    assert exponential(10).pmf[0] > exponential(10).pmf[-1]
    g = gaussian(11)
    assert g.pmf.argmax() == 5 and np.allclose(g.pmf, g.pmf[::-1])
    assert make_population("zipf", 3, s=2.0).name == "zipf2"
    with pytest.raises(ValueError, match="unknown population"):
        make_population("pareto", 3)
    with pytest.raises(ValueError, match="exponent"):
        zipf(3, -1)


def test_population_counts():
    pop = zipf(7, 1.2)
    exact = pop.counts(1001, exact=True)
    assert exact.sum() == 1001 and np.all(np.abs(exact - pop.pmf * 1001) < 1)
    drawn = pop.counts(10_000, rng=1)
    assert drawn.sum() == 10_000 and np.array_equal(drawn, pop.counts(10_000, rng=1))
    fixed = from_counts([5, 0, 3])
    assert np.array_equal(fixed.counts(8), [5, 0, 3])
    with pytest.raises(ValueError, match="has 8 users"):
        fixed.counts(9)
    with pytest.raises(ValueError):
        from_counts([-1, 2])


def test_simulate_validates_inputs():
    params = GRRParams(1.0, 3)
    with pytest.raises(ValueError, match="3 non-negative integers"):
        simulate(params, [1, 2])
    with pytest.raises(ValueError, match="method"):
        simulate(params, [1, 2, 3], method="magic")
    agg = simulate(params, [10, 20, 30], method="per_report", rng=1, chunk_size=7)
    assert agg.n == 60 and agg.counts.sum() == 60


def test_same_seed_same_result():
    params = GRRParams(1.0, 5)
    for method in ("aggregate", "per_report"):
        a = simulate(params, [100, 50, 20, 10, 5], method=method, rng=3).counts
        b = simulate(params, [100, 50, 20, 10, 5], method=method, rng=3).counts
        assert np.array_equal(a, b)


def test_accuracy_against_theory():
    res = accuracy(GRRParams(1.0, 8), zipf(8, 1.1), 50_000, trials=200, rng=2)
    s = res.summary()
    # 8 items x 200 trials: the empirical RMSE has a relative sd of about 1/sqrt(2·1600) ≈ 2%
    assert s["rmse_count"] == pytest.approx(s["theoretical_rmse_count"], rel=0.1)
    assert 0.9 <= s["coverage"] <= 1.0
    assert len(res.rows()) == 8 and res.rows()[0]["true_count"] == int(res.true_count[0])


def test_accuracy_without_discovery_gives_the_same_estimates():
    """``discover=False`` (what the conformance battery asks) skips PEM's per-trial discovery, not its estimates."""
    from ldp.encoders.pem import PEMParams
    from ldp.simulation.pem import PEMAccuracyResult
    from ldp.simulation.result import AccuracyResult

    params = PEMParams(4.0, max_length=2)
    pop = from_counts([300, 200, 100])
    full = accuracy(params, pop, 600, trials=4, rng=5)
    bare = accuracy(params, pop, 600, trials=4, rng=5, discover=False)
    assert isinstance(full, PEMAccuracyResult) and type(bare) is AccuracyResult
    assert np.array_equal(full.estimates, bare.estimates) and np.array_equal(full.theoretical_sd, bare.theoretical_sd)
