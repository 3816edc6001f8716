"""The generic distribution functions (ldp.decoders.distribution): CDF from fractions, range fractions, quantiles
with test-inversion CIs, the structured covariance, and the input checks (hypothesis)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.decoders.distribution import (
    BucketCovariance,
    QuantileTable,
    cdf_from_fractions,
    check_quantiles,
    isotonic,
    kept_buckets,
    known_total,
    quantiles_from_cdf,
    range_fraction,
)

EDGES = np.array([0.0, 1.0, 2.0, 4.0, 8.0])


def structured(k: int, seed: int) -> BucketCovariance:
    rng = np.random.default_rng(seed)
    return BucketCovariance(rng.uniform(1.0, 2.0, k), float(rng.uniform(-0.1, 0.1)), rng.uniform(-0.2, 0.0, k))


# ----------------------------------------------------------------------------- exact algebra

def test_bucket_covariance_matches_its_dense_matrix():
    cov = structured(6, 1)
    dense = cov.dense()
    w1, w2 = np.random.default_rng(2).uniform(0, 1, (2, 3, 6))
    assert np.allclose(cov.quad(w1, w2), np.einsum("mi,ij,mj->m", w1, dense, w2))
    assert np.allclose(cov.variances, np.diag(dense))
    v, cn = cov.cdf_moments()
    low = np.tril(np.ones((7, 6)), -1)  # row i: the first i buckets (G_i)
    full = low @ dense @ low.T
    assert np.allclose(v, np.diag(full)) and np.allclose(cn, np.diagonal(full, 1))
    _, cdf_cov = cdf_from_fractions(np.zeros(6), dense)
    assert np.allclose(cdf_cov, full[1:, 1:])


def test_known_total_is_the_projection_m_sigma_m():
    cov = structured(5, 3)
    m = np.eye(5) - 1.0 / 5
    p = np.array([0.3, 0.1, 0.25, 0.2, 0.2])
    pt, ct = known_total(p, cov)
    assert pt.sum() == pytest.approx(1.0) and np.allclose(pt, m @ p + 1 / 5)
    assert np.allclose(ct.dense(), m @ cov.dense() @ m)
    assert ct.cdf_moments()[0][-1] == pytest.approx(0.0, abs=1e-12)  # G_k = 1 exactly


def test_cdf_from_fractions_of_independent_estimates():
    p, var = np.array([0.2, 0.3, 0.5]), np.array([0.01, 0.02, 0.03])
    cdf, cov = cdf_from_fractions(p, var)
    assert np.allclose(cdf, [0.2, 0.5, 1.0])
    assert np.allclose(cov, [[0.01, 0.01, 0.01], [0.01, 0.03, 0.03], [0.01, 0.03, 0.06]])


def test_isotonic_is_the_pool_adjacent_violators_fit():
    assert np.allclose(isotonic(np.array([5.0, 3, 1, 2, 8, 10, 7, 9, 6, 4])),
                       [2.75] * 4 + [22 / 3] * 6)
    y = np.random.default_rng(4).normal(size=50).cumsum()
    fit = isotonic(y)
    assert (np.diff(fit) >= 0).all() and fit.sum() == pytest.approx(y.sum())


def test_exact_cdf_gives_the_interpolated_quantile_and_its_bucket():
    """No noise: the estimate interpolates, the CI is the bucket holding the quantile (values may sit anywhere in
    it); a quantile on an edge keeps both buckets around it (all of the lower one's mass may be at its left edge)."""
    cdf = np.array([0.1, 0.4, 0.9, 1.0])  # fraction below 1, 2, 4, 8
    t = quantiles_from_cdf(EDGES, cdf, np.zeros(4), [0.05, 0.25, 0.5, 0.95, 0.4])
    assert isinstance(t, QuantileTable)
    assert np.allclose(t.estimate, [0.5, 1.5, 2.4, 6.0, 2.0])
    assert list(t.low) == [0.0, 1.0, 2.0, 4.0, 1.0] and list(t.high) == [1.0, 2.0, 4.0, 8.0, 4.0]
    rows = t.rows()
    assert rows[2]["quantile"] == "p50" and rows[2]["estimate"] == pytest.approx(2.4)
    assert set(rows[2]) == {"quantile", "q", "estimate", "ci_low", "ci_high"}
    assert t.to_dict()["quantiles"] == rows and "p95" in t.table()


def test_ci_keeps_the_buckets_no_edge_test_rules_out():
    """By hand, z = 1.6449 (90 %): F̂ = 0, .12, .35, .93, 1 at the edges 0, 1, 2, 4, 8 with SE 0, .04, .06, .05, 0.
    A bucket [e_j, e_{j+1}] is kept unless F̂(e_j) − q > z·SE_j or q − F̂(e_{j+1}) > z·SE_{j+1}."""
    cdf = np.array([0.12, 0.35, 0.93, 1.0])
    se = np.array([0.04, 0.06, 0.05, 0.0])
    z = 1.6448536269514722
    t = quantiles_from_cdf(EDGES, cdf, se**2, [0.3, 0.5, 0.9, 0.99, 0.2], confidence=0.9)
    # z·SE at the inner edges: .0658, .0987, .0822. Dropped buckets, by the test that drops them:
    # q = .3: 0 (.3 − .12 = .18 > .0658), 3 (.93 − .3 > .0822); kept 1, 2 (.35 − .3 = .05 ≤ .0987): [1, 4]
    # q = .5: 0, 1 (.5 − .35 = .15 > .0987), 3 (.93 − .5 > .0822); kept 2: [2, 4]
    # q = .9: 0, 1; kept 2, 3 (.93 − .9 = .03 ≤ .0822): [2, 8]
    # q = .99: 0, 1; kept 2 (.99 − .93 = .06 ≤ .0822), 3: [2, 8]
    # q = .2: 0 (.2 − .12 = .08 > .0658), 2 (.35 − .2 = .15 > .0987), 3; kept 1: [1, 2]
    assert min(0.18, 0.08) > z * 0.04 and 0.05 <= z * 0.06 < 0.15 and max(0.03, 0.06) <= z * 0.05
    assert list(t.low) == [1.0, 2.0, 2.0, 2.0, 1.0]
    assert list(t.high) == [4.0, 4.0, 8.0, 8.0, 2.0]
    assert np.array_equal(kept_buckets(np.concatenate(([0.0], cdf)), np.concatenate(([0.0], se**2)), t.q, z),
                          [[0, 1, 1, 0], [0, 0, 1, 0], [0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 0, 0]])


def test_the_ci_does_not_narrow_inside_a_bucket():
    """The edges-only rule against the old interpolated inversion (the hull of {x : |F̂(x) − q| ≤ z·SE(x)}, F̂
    linear within buckets, brute-forced on a grid): that interval ends inside buckets; this one at their edges,
    around it."""
    cdf = np.array([0.12, 0.35, 0.93, 1.0])
    var = np.array([0.002, 0.004, 0.003, 0.0])
    cov = np.sqrt(np.outer(var, var)) * 0.6 + np.diag(var) * 0.4
    t = quantiles_from_cdf(EDGES, cdf, cov, [0.3, 0.5, 0.9], confidence=0.9)
    g = np.concatenate(([0.0], cdf[:-1], [1.0]))
    v = np.concatenate(([0.0], np.diag(cov)[:-1], [0.0]))
    c = np.concatenate(([0.0], np.diagonal(cov, 1)[:-1], [0.0]))
    xs, inside = [], []
    for j in range(4):
        tt = np.linspace(0, 1, 20001)
        f = (1 - tt) * g[j] + tt * g[j + 1]
        var_x = (1 - tt) ** 2 * v[j] + tt**2 * v[j + 1] + 2 * tt * (1 - tt) * c[j]
        xs.append(EDGES[j] + tt * (EDGES[j + 1] - EDGES[j]))
        inside.append(np.abs(f[None, :] - t.q[:, None]) <= 1.6448536269514722 * np.sqrt(var_x)[None, :])
    x, ok = np.concatenate(xs), np.concatenate(inside, axis=1)
    old = []
    for i in range(3):
        lo, hi = x[ok[i]].min(), x[ok[i]].max()
        old += [lo, hi]
        assert t.low[i] <= lo and hi <= t.high[i]
        assert t.low[i] == EDGES[np.searchsorted(EDGES, lo, side="right") - 1]  # snapped down to its bucket's edge
        assert t.high[i] == EDGES[np.searchsorted(EDGES, hi, side="left")]  # and up
    assert not np.isin(old, EDGES).any() and np.isin(np.concatenate([t.low, t.high]), EDGES).all()


def test_range_fraction_weights_and_variance():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    cov = structured(4, 5)
    r = range_fraction(EDGES, p, cov, 1.0, 4.0, n=100)
    assert r.aligned and r.fraction == pytest.approx(0.5) and r.row()["count"] == pytest.approx(50.0)
    w = np.array([0, 1, 1, 0.0])
    assert r.std_error == pytest.approx(math.sqrt(w @ cov.dense() @ w))
    half = range_fraction(EDGES, p, np.diag(cov.dense()), 0.5, 6.0)  # half of bucket 0, half of bucket 3
    assert not half.aligned and half.fraction == pytest.approx(0.05 + 0.5 + 0.2) and half.notes
    assert range_fraction(EDGES, p, cov, -5.0, 100.0).fraction == pytest.approx(1.0)  # clipped to the edges


# ----------------------------------------------------------------------------- inputs refused

@pytest.mark.parametrize("qs, message", [
    (0.0, "in \\(0, 1\\)"), (1.0, "in \\(0, 1\\)"), (50, "p50 is 0.5"), ([0.5, math.nan], "in \\(0, 1\\)"),
    ([], "one or more"), ([[0.5]], "one or more"), ("x", "numbers in"), (-0.1, "in \\(0, 1\\)")])
def test_bad_quantiles_are_refused(qs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        check_quantiles(qs)


@pytest.mark.parametrize("edges, cdf, cov, message", [
    ([0.0, 1.0, 1.0], [0.5, 1.0], [0.0, 0.0], "strictly increasing"),
    ([0.0, math.nan, 2.0], [0.5, 1.0], [0.0, 0.0], "finite"),
    ([0.0], [], [], "at least 2"),
    (EDGES, [0.5, 1.0], [0.0, 0.0], "4 entries"),
    (EDGES, [0.1, math.nan, 0.5, 1.0], np.zeros(4), "cdf must be finite"),
    (EDGES, [0.1, 0.2, 0.5, 1.0], np.zeros(3), "covariance or"),
    (EDGES, [0.1, 0.2, 0.5, 1.0], [0.1, -0.1, 0.0, 0.0], "negative variance"),
    (EDGES, [0.1, 0.2, 0.5, 1.0], np.triu(np.ones((4, 4))), "symmetric"),
    (EDGES, [0.1, 0.2, 0.5, 1.0], [0.0, math.inf, 0.0, 0.0], "finite"),
])
def test_bad_cdf_inputs_are_refused(edges, cdf, cov, message):
    with pytest.raises(ValueError, match=message):
        quantiles_from_cdf(edges, cdf, cov, [0.5])


@pytest.mark.parametrize("a, b, message", [(3.0, 1.0, "a <= b"), (math.nan, 1.0, "finite"), (0.0, math.inf, "finite"),
                                           ("1", 2.0, "finite number"), (True, 2.0, "finite number")])
def test_bad_ranges_are_refused(a, b, message):
    with pytest.raises(ValueError, match=message):
        range_fraction(EDGES, np.full(4, 0.25), np.zeros(4), a, b)


def test_bad_confidence_is_refused():
    with pytest.raises(ValueError, match="confidence"):
        quantiles_from_cdf(EDGES, [0.1, 0.2, 0.5, 1.0], np.zeros(4), [0.5], confidence=1.0)


# ----------------------------------------------------------------------------- properties

@st.composite
def noisy_cdfs(draw):
    k = draw(st.integers(1, 12))
    widths = draw(st.lists(st.floats(0.01, 100.0), min_size=k, max_size=k))
    start = draw(st.floats(-1e3, 1e3))
    edges = start + np.concatenate(([0.0], np.cumsum(widths)))
    p = np.array(draw(st.lists(st.floats(-0.3, 1.0), min_size=k, max_size=k)))
    # a fraction's variance from n reports is of order 1/n or more: never below 1e-100, let alone subnormal (whose
    # products underflow to 0 in the covariance while the variances alone do not: two different intervals)
    var = np.array(draw(st.lists(st.floats(0.0, 0.05).map(lambda v: 0.0 if v < 1e-100 else v), min_size=k,
                                 max_size=k)))
    qs = draw(st.lists(st.floats(1e-6, 1 - 1e-6), min_size=1, max_size=5))
    return edges, p, var, qs


@settings(max_examples=150, deadline=None)
@given(noisy_cdfs(), st.floats(0.5, 0.999))
def test_quantile_table_is_well_formed(case, confidence):
    """Ends on edges, the estimate between them, the interval nested in a higher confidence's, and only the
    variances matter (the covariance between edges does not enter)."""
    edges, p, var, qs = case
    cdf, cdf_cov = cdf_from_fractions(p, var)
    if np.unique(edges).size != edges.size:
        return  # widths rounded away at this magnitude
    t = quantiles_from_cdf(edges, cdf, cdf_cov, qs, confidence)
    assert np.isfinite(t.estimate).all() and np.isin(t.low, edges).all() and np.isin(t.high, edges).all()
    assert (t.low < t.high).all() and (t.low <= t.estimate).all() and (t.estimate <= t.high).all()
    order = np.argsort(qs, kind="stable")
    assert (np.diff(t.estimate[order]) >= -1e-9 * (1 + np.abs(edges).max())).all()  # monotone in q
    wide = quantiles_from_cdf(edges, cdf, cdf_cov, qs, min(0.9999, confidence + 0.0005))
    assert (wide.low <= t.low).all() and (wide.high >= t.high).all()
    same = quantiles_from_cdf(edges, cdf, np.diag(cdf_cov), qs, confidence)
    assert np.array_equal(same.low, t.low) and np.array_equal(same.high, t.high)


@st.composite
def skewed_populations(draw):
    """Values anywhere in their buckets: at the left edge, just below the right edge, inside, or the last edge."""
    k = draw(st.integers(1, 8))
    edges = np.concatenate(([0.0], np.cumsum(draw(st.lists(st.floats(0.5, 10.0), min_size=k, max_size=k)))))
    bucket = np.array(draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=60)))
    where = np.array(draw(st.lists(st.sampled_from(["left", "right", "inside"]), min_size=bucket.size,
                                   max_size=bucket.size)))
    right = np.where(bucket == k - 1, edges[-1], np.nextafter(edges[bucket + 1], -np.inf))
    values = np.select([where == "left", where == "right"], [edges[bucket], right],
                       (edges[bucket] + edges[bucket + 1]) / 2)
    return edges, values


@settings(max_examples=300, deadline=None)
@given(skewed_populations(), st.lists(st.floats(0.0, 0.02), min_size=8, max_size=8),
       st.lists(st.floats(1e-6, 1 - 1e-6), min_size=1, max_size=4), st.floats(0.5, 0.999))
def test_an_exact_cdf_covers_the_population_quantile_wherever_values_sit(population, var, qs, confidence):
    """The CI's rule, without noise: given the true fractions below the edges (any variances, 0 included), the
    interval holds the population's quantile ``inf{x : F(x) ≥ q}`` (numpy's inverted_cdf) whatever the values'
    places in their buckets: so the coverage is the edge tests' alone."""
    edges, values = population
    k = edges.size - 1
    counts = np.histogram(values, bins=edges)[0]  # [e_j, e_{j+1}), the last closed: the clients' buckets
    assert counts.sum() == values.size
    t = quantiles_from_cdf(edges, np.cumsum(counts) / values.size, np.array(var[:k]), qs, confidence)
    truth = np.quantile(values, qs, method="inverted_cdf")
    assert (t.low <= truth).all() and (truth <= t.high).all(), (t.low, truth, t.high)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=4))
def test_quantiles_are_accepted_only_in_the_open_unit_interval(values):
    ok = all(0.0 < v < 1.0 for v in values)
    if ok:
        assert np.allclose(check_quantiles(values), values)
    else:
        with pytest.raises(ValueError, match="quantiles must be in"):
            check_quantiles(values)


def test_a_subnormal_cdf_step_gives_finite_quantiles():
    """Hypothesis's case: a first bucket of 2.2e-313 with no variance (``a2`` subnormal: ``half/a2`` overflows to an
    infinite root, which is outside [0, 1], with no warning raised as an error)."""
    edges = np.array([0.0, 1.0, 2.0])
    cdf, cdf_cov = cdf_from_fractions(np.array([2.22507386e-313, 0.0]), np.zeros(2))
    t = quantiles_from_cdf(edges, cdf, cdf_cov, [0.5])
    assert np.isfinite(t.low).all() and np.isfinite(t.high).all() and (t.low <= t.high).all()
