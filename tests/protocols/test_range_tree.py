"""HH_B (protocol ``hh``): constrained inference and its adjoint, unbiased ranges with their exact variance (raw and
consistent, both simulation paths), the level rules on the wire, the planner's shape, parameters and query bounds
(hypothesis), and the CLI. The generic checks (audit, batch law, merge, client) are the conformance suite's."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ldp.cli.command import main
from ldp.decoders.range_tree import HHAggregate, inverse_moment
from ldp.decoders.range_tree_linear import adjoint, alphas, consistent
from ldp.decoders.range_tree_queries import decompose, exact_range_variance
from ldp.encoders.range_tree import HHEncoder, HHParams, tree_shapes
from ldp.reports import ReportBatch
from ldp.simulation.collect import simulate

ALPHA = 1e-6
CONFIGS = [HHParams(1.0, 0.0, 27.0, 3, 3, level_weights=(1, 2, 3)),  # GRR, GRR, OUE; weighted levels
           HHParams(3.0, 0.0, 16.0, 2, 4),  # GRR at every level
           HHParams(0.7, 0.0, 16.0, 4, 2, oracle="oue")]
RANGES = [(0, 5), (1, 14), (3, 3), (2, 9), (0, 15)]


def _truth(params: HHParams, n: int, seed: int) -> np.ndarray:
    gen = np.random.default_rng(seed)
    return gen.multinomial(n, gen.dirichlet(np.full(params.num_buckets, 0.5)))


# -- the linear algebra -------------------------------------------------------------------------------------
@pytest.mark.parametrize("branching,depth", [(2, 4), (3, 3), (5, 2), (4, 1)])
def test_adjoint_is_the_transpose_of_constrained_inference(branching, depth):
    gen = np.random.default_rng(branching * 10 + depth)
    alpha = alphas(list(gen.random(depth)), branching)
    y = [gen.normal(size=branching**lv) for lv in range(1, depth + 1)]
    w = gen.normal(size=(branching**depth, 5))
    leaves = consistent(y, 7.5, alpha, branching)[-1]
    coef, root = adjoint(w, alpha, branching, depth)
    assert np.allclose(w.T @ leaves, sum(c.T @ v for c, v in zip(coef, y, strict=True)) + 7.5 * root)


def test_constrained_inference_keeps_a_consistent_tree_and_sums_to_n():
    gen = np.random.default_rng(1)
    x = gen.random(27)
    levels = [x.reshape(3**lv, -1).sum(axis=1) for lv in range(1, 4)]
    alpha = alphas([0.3, 1.0, 2.0], 3)
    assert np.allclose(consistent(levels, x.sum(), alpha, 3)[-1], x)  # M·A = I: unbiased
    noisy = [v + gen.normal(size=v.size) for v in levels]
    s = consistent(noisy, 10.0, alpha, 3)
    assert math.isclose(s[-1].sum(), 10.0) and np.allclose(s[0], s[1].reshape(3, 3).sum(axis=1))


def test_inverse_moment_is_the_binomial_expectation():
    k = np.arange(1, 41)
    pmf = stats.binom.pmf(k, 40, 0.3)
    assert math.isclose(inverse_moment(40, 0.3), float((40 / k * pmf).sum() / pmf.sum()), rel_tol=1e-12)
    assert inverse_moment(10**7, 0.25) == pytest.approx(4.0, rel=1e-6)


# -- unbiased, with the exact variance ----------------------------------------------------------------------
def _check(est: np.ndarray, truth: np.ndarray, var: np.ndarray, tests: int, label: str) -> None:
    t = est.shape[0]
    z = NormalDist().inv_cdf(1 - ALPHA / (2 * tests))
    lo, hi = (stats.chi2.ppf(p, t - 1) / (t - 1) for p in (ALPHA / (2 * tests), 1 - ALPHA / (2 * tests)))
    for j in range(truth.size):
        if var[j] == 0:  # the whole domain: n exactly
            assert np.allclose(est[:, j], truth[j])
            continue
        assert abs(est[:, j].mean() - truth[j]) <= z * math.sqrt(var[j] / t), f"{label}: range {j} biased"
        assert lo <= est[:, j].var(ddof=1) / var[j] <= hi, f"{label}: range {j}: {est[:, j].var(ddof=1) / var[j]}"


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: "-".join(p.oracle_kinds))
@pytest.mark.parametrize("method,trials", [("aggregate", 600), ("per_report", 150)])
def test_ranges_unbiased_with_their_exact_variance(params, method, trials):
    D = params.num_buckets
    a = np.array([min(x, D - 1) for x, _ in RANGES])
    b = np.array([min(y, D - 1) for _, y in RANGES])
    truth_counts = _truth(params, 2000, 7)
    want = np.array([truth_counts[x:y + 1].sum() for x, y in zip(a, b, strict=True)])
    gen = np.random.default_rng(11)
    cons, raw = [], []
    for _ in range(trials):
        tree = simulate(params, truth_counts, method=method, rng=gen).tree()
        cons.append(tree.ranges(a, b).count)
        raw.append(tree.ranges(a, b, consistent=False).count)
    tests = 4 * len(RANGES)
    _check(np.array(cons), want, exact_range_variance(params, truth_counts, a, b), tests, "consistent")
    _check(np.array(raw), want, exact_range_variance(params, truth_counts, a, b, consistent=False), tests, "raw")


def test_consistency_lowers_the_variance():
    """Every range with OUE at every level (the fit's weights are the noise's, up to the split among levels); on
    average with GRR levels (their negative covariance is not in the weights: a few ranges may lose)."""
    for params, every in ((HHParams(0.5, 0.0, 32.0, 2, 5, oracle="oue"), True), (HHParams(1.0, 0.0, 64.0, 4, 3), True),
                          (HHParams(4.0, 0.0, 64.0, 4, 3), False)):
        D = params.num_buckets
        a, b = np.array([(i, j) for i in range(D) for j in range(i, D) if (i, j) != (0, D - 1)]).T
        t = _truth(params, 10_000, 0)
        c, r = exact_range_variance(params, t, a, b), exact_range_variance(params, t, a, b, consistent=False)
        assert c.mean() < 0.5 * r.mean()
        if every:
            assert (c <= r * (1 + 1e-9)).all()


def test_plug_in_standard_errors_follow_the_exact_variance():
    params = CONFIGS[0]
    t = _truth(params, 50_000, 3)
    tree = HHAggregate.simulate(params, t, 5).tree()
    exact = np.sqrt(exact_range_variance(params, t, 0, np.arange(params.num_buckets)))
    got = tree.ranges(0, np.arange(params.num_buckets)).std_error
    assert np.allclose(got[:-1], exact[:-1], rtol=0.1) and got[-1] == 0.0  # the whole domain is n exactly
    assert np.allclose(tree.leaf_std_errors(), np.sqrt(HHAggregate.exact_variance(params, t)), rtol=0.15)


# -- queries, the CDF ---------------------------------------------------------------------------------------
def test_decompose_gives_the_canonical_nodes():
    assert decompose(0, 15, 4, 2) == ([], True)
    assert decompose(4, 11, 4, 2) == ([(1, 1), (1, 2)], False)  # two level-1 nodes
    nodes, _ = decompose(1, 14, 4, 2)
    assert sorted(nodes) == [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (2, 12), (2, 13), (2, 14)]


def test_value_ranges_and_the_cdf():
    params = HHParams(2.0, 0.0, 16.0, 2, 4)
    tree = HHAggregate.simulate(params, _truth(params, 5000, 1), 2).tree()
    got = tree.value_range(2.0, 6.0)
    assert (got.a[0], got.b[0]) == (2, 5) and got.count[0] == pytest.approx(tree.leaves[2:6].sum())
    with pytest.raises(ValueError, match="not a bucket edge"):
        tree.value_range(2.5, 6.0)
    edges, cdf, cov = tree.cdf_table()
    assert edges.size == 17 and cdf.size == cov.shape[0] == 16 and cdf[-1] == pytest.approx(1.0)
    assert np.allclose(np.sqrt(np.diag(cov)) * tree.n, tree.ranges(0, np.arange(16)).std_error)


def test_quantiles_use_the_generic_function_when_present():
    distribution = pytest.importorskip("ldp.decoders.distribution")
    assert hasattr(distribution, "quantiles_from_cdf")
    params = HHParams(2.0, 0.0, 16.0, 2, 4)
    truth = _truth(params, 20_000, 1)
    est = HHAggregate.simulate(params, truth, 2).estimate()
    rows = est.quantiles([0.5, 0.9]).to_dict()["quantiles"]
    true_median = float(np.searchsorted(np.cumsum(truth), truth.sum() / 2))  # the bucket holding it
    assert [r["q"] for r in rows] == [0.5, 0.9] and all(r["ci_low"] <= r["estimate"] <= r["ci_high"] for r in rows)
    assert true_median <= rows[0]["ci_high"] and rows[0]["ci_low"] <= true_median + 1
    assert [r["q"] for r in est.summary_quantiles().to_dict()["quantiles"]] == [0.5, 0.95]  # the dashboard's hook


# -- the wire -----------------------------------------------------------------------------------------------
def test_reports_that_break_their_levels_rule_are_rejected():
    params = HHParams(1.0, 0.0, 16.0, 4, 2)  # level 1 GRR over 4 nodes, level 2 OUE over 16
    enc = HHEncoder(params, rng=3, simulation=True)
    batch = enc.encode_batch(np.arange(16), 3, levels=np.repeat([0, 1], 8))
    cols = {k: np.array(v, copy=True) for k, v in batch.columns.items()}
    cols["y"][0] = 9  # a GRR node beyond level 1's 4
    cols["y"][8] = 1  # y set at an OUE level
    cols["bits"][1, 0] = 1  # a bit at a GRR level
    bad = ReportBatch(batch.protocol, batch.fingerprint, batch.schema, cols)
    agg = HHAggregate(params)
    assert agg.add(bad) == 13 and agg.rejected == {"bad_value": 3}
    for i in (0, 1, 8):
        with pytest.raises(ValueError):
            params.validate(list(bad.reports())[i])


# -- the planner --------------------------------------------------------------------------------------------
def test_planner_shape_is_near_the_exact_optimum():
    from ldp.plan.range_tree import average_range_variance, best_shape

    assert tree_shapes(1024) == [(2, 10), (4, 5), (32, 2), (1024, 1)]
    for eps, d in ((1.0, 64), (4.0, 64), (1.0, 256)):
        chosen = HHParams.for_epsilon(eps, d)
        b, h = best_shape(eps, d)
        t = np.full(d, 1e6 / d)
        ratio = average_range_variance(chosen, t) / average_range_variance(HHParams(eps, 0.0, float(d), b, h), t)
        assert ratio <= 1.10, (eps, d, chosen, (b, h), ratio)


# -- parameters and query bounds (hypothesis) ---------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(eps=st.floats(0.01, 30), branching=st.integers(-1, 40), depth=st.integers(-1, 8),
       low=st.floats(-1e6, 1e6), width=st.floats(-1, 1e6), weights=st.lists(st.integers(-1, 5), max_size=4),
       oracle=st.sampled_from(["auto", "oue", "grr", "olh"]))
def test_params_are_valid_or_refused_clearly(eps, branching, depth, low, width, weights, oracle):
    try:
        p = HHParams(eps, low, low + width, branching, depth, oracle=oracle, level_weights=tuple(weights))
    except (ValueError, TypeError) as exc:
        assert str(exc)
        return
    assert p.num_buckets == branching**depth and p.privacy_cost.epsilon >= eps * (1 - 1e-12)
    assert math.isclose(sum(p.level_probabilities), 1.0)


@settings(max_examples=60, deadline=None)
@given(a=st.integers(-5, 20), b=st.integers(-5, 20))
def test_range_bounds_are_checked(a, b):
    params = HHParams(1.0, 0.0, 16.0, 4, 2)
    tree = HHAggregate.simulate(params, np.full(16, 10), 1).tree()
    if 0 <= a <= b < 16:
        assert tree.ranges(a, b).count.size == 1
    else:
        with pytest.raises(ValueError, match="not a range of buckets"):
            tree.ranges(a, b)


@settings(max_examples=40, deadline=None)
@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-100, 100), st.text(max_size=2)))
def test_client_values_are_numbers_in_range(value):
    params = HHParams(1.0, 0.0, 16.0, 4, 2)
    enc = HHEncoder(params, rng=1, simulation=True)
    ok = not isinstance(value, str) and math.isfinite(value) and 0.0 <= value <= 16.0
    if ok:
        assert enc.encode(value).payload["level"] in (0, 1)
    else:
        with pytest.raises((ValueError, TypeError)):
            enc.encode(value)


# -- the command line ---------------------------------------------------------------------------------------
def test_cli_plan_and_simulate(capsys):
    assert main(["plan", "hh", "--epsilon", "1", "--d", "64", "--n", "1e5", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)[0]
    assert plan["params"]["branching"] == 4 and any("range queries" in s for s in plan["notes"])
    assert main(["simulate", "--protocol", "hh", "--epsilon", "2", "--d", "16", "--n", "20000", "--trials", "5",
                 "--seed", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "hh" and len(out["items"]) == 16
    assert any(s.startswith("range queries:") for s in out["notes"])
