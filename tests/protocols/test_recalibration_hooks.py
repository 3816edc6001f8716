"""The hooks the local-vs-central comparison (:mod:`ldp.compare.counting`) asks of every protocol:
``ProtocolParams.with_epsilon``, ``ProtocolParams.with_hash_seed`` and ``Aggregate.simulate_estimates``."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from ldp.compare.counting import CountingSetup
from ldp.protocols import protocols

Z = 4.0
EXAMPLES = [pytest.param(p, id=f"{name}-{i}") for name, proto in protocols().items()
            for i, p in enumerate(proto.params_type.examples())]
COMPARED = {lp.protocol for lp in CountingSetup().local()}
LOCAL = [pytest.param(lp.params, id=f"compare-{lp.protocol}") for lp in CountingSetup().local()]


@pytest.mark.parametrize("params", EXAMPLES + LOCAL)
def test_with_epsilon_costs_epsilon_and_keeps_the_sizes(params):
    """One report of the recalibrated parameters costs ε (Google-mode RAPPOR rounds f up: at most ε), and
    recalibrating there and back gives the same parameters (nothing but the calibration changed)."""
    for eps in (0.5, 0.9):
        try:
            out = params.with_epsilon(eps)
        except NotImplementedError:
            assert params.protocol not in COMPARED  # the comparison recalibrates these
            return
        assert type(out) is type(params)
        cost = out.privacy_cost.epsilon
        if getattr(out, "mode", None) == "google":
            assert cost <= eps * (1 + 1e-9)
        else:
            assert cost == pytest.approx(eps, rel=1e-9)
        assert out.with_epsilon(0.6 * eps).with_epsilon(eps) == out


@pytest.mark.parametrize("params", EXAMPLES + LOCAL)
def test_with_hash_seed_replaces_only_the_hash_family(params):
    out = params.with_hash_seed(7919)
    fields = {f.name for f in dataclasses.fields(params)}
    if "hash_seed" not in fields:
        assert out is params
        return
    assert type(out) is type(params) and out.hash_seed == 7919
    assert all(getattr(out, f) == getattr(params, f) for f in fields - {"hash_seed"})


def _truth(d: int, n: int) -> np.ndarray:
    """``n`` users over ``d`` values with frequencies ∝ 1/(i+1) (largest remainders)."""
    w = 1.0 / np.arange(1, d + 1)
    raw = n * w / w.sum()
    counts = np.floor(raw).astype(np.int64)
    counts[np.argsort(counts - raw)[: n - counts.sum()]] += 1
    return counts


@pytest.mark.parametrize("params", EXAMPLES)  # the comparison's own sizes: tests/simulation/test_compare.py
def test_simulate_estimates_is_unbiased_with_the_stated_variance(params):
    """Over T independent collections, each with a hash family of its own (``with_hash_seed``: a sketch's
    exact variance averages over the families), each value's ``z = (estimate − truth)/sd`` has mean 0 and
    ``E z² = 1`` when the variance is exact. Per trial ``s_t = mean_i z²_ti``; the T trials are independent,
    so ``mean_t s_t`` is within ``Z·sd_t(s)/√T`` of 1 (CLT), and ``mean_t mean_i z`` within ``Z/√T`` of 0
    (each trial's mean of z has variance at most 1: Cauchy–Schwarz). The same check rejects a variance off
    by a factor 2."""
    aggregate = protocols()[params.protocol].aggregate_type
    d = params.domain_size or 5  # an example's small Bloom filter tells 5 strings apart
    values = None if params.domain_size else [f"value-{i}" for i in range(d)]
    truth = _truth(d, 4000)
    gen = np.random.default_rng(29)
    try:
        _, var = aggregate.simulate_estimates(params, truth, gen, values=values)
    except NotImplementedError:
        assert params.protocol not in COMPARED
        return
    trials = 200
    z = []
    for t in range(trials):
        est, var_t = aggregate.simulate_estimates(params.with_hash_seed(7919 * t), truth, gen, values=values)
        assert est.shape == var_t.shape == (d,) and np.array_equal(var, var_t)
        z.append((est - truth) / np.sqrt(var))
    z = np.array(z)
    s = (z**2).mean(axis=1)
    se = s.std(ddof=1) / math.sqrt(trials)
    assert abs(s.mean() - 1) < Z * se, s.mean()
    assert abs(z.mean()) < Z / math.sqrt(trials)
    assert abs(s.mean() / 2 - 1) > Z * se / 2 and abs(2 * s.mean() - 1) > 2 * Z * se  # variance ×2 or ÷2: fails
