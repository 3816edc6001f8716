"""Shuffled k-RR at any d >= 3 (issue 72, item 5): the blanket pair's figure is valid for every dataset (brute force at
tiny n, concrete datasets computed independently in ``krr_exact`` at n in the hundreds), within a few per cent of the
worst case, monotone, and its composable law dominates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from krr_exact import delta as exact_delta, epsilon as exact_epsilon, probabilities, third_pair, x1_pair
from shuffle_exact import worst_krr_delta

from ldp.encoders.randomized_response import GRRParams
from ldp.privacy import krr_shuffle
from ldp.privacy.krr_shuffle import krr_epsilon, krr_worst_case
from ldp.privacy.shuffle import shuffled_epsilon

SLACK = 1 + 1e-9


@pytest.mark.parametrize("eps0,d,n,delta", [(1.0, 3, 6, 0.05), (2.0, 3, 7, 0.05), (1.0, 4, 5, 0.05),
                                            (0.5, 3, 8, 0.05)])
def test_tiny_n_meets_the_brute_force_worst_case(eps0: float, d: int, n: int, delta: float) -> None:
    """Every multiset of the others' values, both directions: valid, and within 1.15x of the exact worst case
    (measured: 1.006 to 1.031)."""
    p, q = probabilities(eps0, d)
    found = krr_worst_case(eps0, d, n, delta)
    assert found is not None
    assert worst_krr_delta(p, q, d, n, found.epsilon) <= delta * SLACK
    assert worst_krr_delta(p, q, d, n, found.epsilon / 1.15) > delta
    assert worst_krr_delta(p, q, d, n, found.lower) >= delta * (1 - 1e-9)  # the lower bound is one


@pytest.mark.parametrize("eps0,d,n", [(1.0, 3, 300), (4.0, 10, 1000), (1.0, 100, 1000)])
def test_valid_on_real_datasets_and_the_lower_bound_is_one(eps0: float, d: int, n: int) -> None:
    """Every other user on x₁ (either direction), or on one third value: within δ at the figure; the third-value
    dataset needs at least ``lower``, and the figure is within 3 % of it."""
    delta = 1e-8
    found = krr_worst_case(eps0, d, n, delta)
    assert found is not None
    third, x1 = third_pair(eps0, d, n), x1_pair(eps0, d, n)
    assert exact_delta(third, found.epsilon) <= delta * SLACK
    assert exact_delta(x1, found.epsilon) <= delta * SLACK
    assert found.lower <= exact_epsilon(third, delta, eps0) * (1 + 1e-6)
    assert found.epsilon <= 1.03 * found.lower


@pytest.mark.parametrize("d", [3, 10, 100])
@pytest.mark.parametrize("eps0", [1.0, 4.0])
@pytest.mark.parametrize("n", [10**3, 10**4])
def test_targets_against_the_lower_bound_and_the_clone_bound(d: int, eps0: float, n: int) -> None:
    """Never more than 2x the exact lower bound (measured: at most 1.03x), and below the clone bounds."""
    eps, lower = krr_epsilon(eps0, d, n, 1e-8) or (math.inf, 0.0)
    assert 0 < lower <= eps <= 1.05 * lower
    clone = shuffled_epsilon(eps0, n, 1e-8, GRRParams(eps0, d).shuffle_structure, binary=False).epsilon  # no k-RR
    assert eps < clone


def test_large_domains_gain_most() -> None:
    """ε₀ = 1, n = 10⁴, δ = 10⁻⁸: the clone bounds said 0.06888 for both d = 10 and d = 100."""
    assert krr_worst_case(1.0, 10, 10**4, 1e-8).epsilon == pytest.approx(0.03105, rel=2e-3)  # type: ignore[union-attr]
    assert krr_worst_case(1.0, 100, 10**4, 1e-8).epsilon == pytest.approx(0.009969, rel=2e-3)  # type: ignore[union-attr]


def test_monotone_in_n() -> None:
    """Checked (module docstring): consecutive n and a few decades."""
    for d, eps0, grid in ((100, 4.0, [*range(997, 1003), 10**4, 10**6]), (3, 1.0, [300, 301, 302, 10**5])):
        eps = [krr_worst_case(eps0, d, n, 1e-8).epsilon for n in grid]  # type: ignore[union-attr]
        assert all(b <= a for a, b in zip(eps, eps[1:], strict=False)), eps


@pytest.mark.parametrize("eps0,d,delta", [(1.0, 3, 1e-300), (4.0, 10, 1e-300)])
def test_tiny_delta_at_a_million_users_stays_near_the_lower_bound(eps0: float, d: int, delta: float) -> None:
    """δ = 10⁻³⁰⁰, n = 10⁶ (3 s a call before the binned grid): within 1.05x of the exact lower bound (measured
    1.008x, 1.006x; not yet at d = 100, ε₀ = 1: 1.24x, U's lowest band)."""
    found = krr_worst_case(eps0, d, 10**6, delta)
    assert found is not None
    assert 0 < found.lower <= found.epsilon <= 1.05 * found.lower


@pytest.mark.parametrize("eps0,d,n,delta", [(1.0, 3, 10**5, 1e-8), (4.0, 10, 10**6, 1e-300)])
def test_binned_values_of_h0_dominate_the_unbinned_pair(eps0: float, d: int, n: int, delta: float,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """One bin per value of H₀ (``_BINS`` unbounded) is the pair itself (on the same loss lattice): the binned figure
    is at least it (losses read at each bin's top) and within 0.5 % of it; the binned lower bound is at most its."""
    binned = krr_worst_case(eps0, d, n, delta)
    monkeypatch.setattr(krr_shuffle, "_BINS", 10**9)
    krr_shuffle.krr_worst_case.cache_clear()
    try:
        exact = krr_shuffle.krr_worst_case(eps0, d, n, delta)
    finally:
        krr_shuffle.krr_worst_case.cache_clear()
    assert binned is not None and exact is not None
    assert exact.epsilon <= binned.epsilon <= 1.005 * exact.epsilon
    assert binned.lower <= exact.lower


@settings(max_examples=6, deadline=None)
@given(exponent=st.floats(2.0, 12.0), eps0=st.sampled_from([1.0, 4.0]), d=st.sampled_from([3, 10, 100]),
       delta=st.sampled_from([1e-8, 1e-300]))
def test_consecutive_n_never_raise_the_figure(exponent: float, eps0: float, d: int, delta: float) -> None:
    """Three consecutive n anywhere from 10² to 10¹² (group, band and bin boundaries all cross somewhere). Not by
    construction: U's bands move with n, and the raw figure can rise by up to about 10⁻³ of itself from n to n + 1
    (measured: 8·10⁻⁴ at n = 4,847, d = 5, ε₀ = 0.5, δ = 10⁻¹⁰⁰; a rise above 2·10⁻³ fails). What a user is told
    is :func:`~ldp.privacy.shuffle.shuffled_epsilon`'s figure, which evaluates the blanket on a 1 % grid of n:
    non-increasing (checked here too)."""
    from ldp.encoders.randomized_response import GRRParams
    from ldp.privacy.shuffle import shuffled_epsilon

    n = int(10**exponent)
    eps = [krr_worst_case(eps0, d, k, delta).epsilon for k in (n, n + 1, n + 2)]  # type: ignore[union-attr]
    if eps[0] < 0.999 * eps0:  # near ε₀ no gain is claimed (shuffled_epsilon reports ε₀)
        assert eps[0] * (1 + 2e-3) >= eps[1] and eps[1] * (1 + 2e-3) >= eps[2], eps
    g = GRRParams(eps0, d)
    told = [shuffled_epsilon(g.privacy_cost.epsilon, k, delta, g.shuffle_structure).epsilon for k in (n, n + 1, n + 2)]
    assert told == sorted(told, reverse=True), told


@pytest.mark.parametrize("delta", [1e-8, 1e-300])
def test_beyond_the_cap_the_figure_at_the_cap(delta: float) -> None:
    """Above ``_N_MAX`` users the figure is the one at ``_N_MAX`` (valid: more users only post-process), so never
    above the figure at fewer users."""
    cap = krr_shuffle._N_MAX
    at = [krr_worst_case(1.0, 10, k, delta) for k in (cap // 10, cap - 1, cap, cap + 1, 10 * cap)]
    eps = [found.epsilon for found in at]  # type: ignore[union-attr]
    assert all(b <= a for a, b in zip(eps, eps[1:], strict=False)), eps
    assert at[3] is not None and at[2] is not None and at[3].epsilon == at[2].epsilon == at[4].epsilon  # type: ignore[union-attr]


@settings(max_examples=20, deadline=None)
@given(eps0=st.floats(0.1, 6.0), d=st.integers(3, 300), n=st.integers(1, 3000),
       delta=st.floats(1e-12, 1e-2))
def test_properties_for_arbitrary_inputs(eps0: float, d: int, n: int, delta: float) -> None:
    found = krr_worst_case(eps0, d, n, delta)
    assert found is not None
    assert 0.0 <= found.lower <= found.epsilon <= eps0
    looser = krr_worst_case(eps0, d, n, min(0.5, 10 * delta))
    assert looser is not None and looser.epsilon <= found.epsilon  # monotone in δ
    loss, mass = found.losses()
    assert np.all(np.diff(loss) >= 0) and np.all(mass >= 0) and loss[-1] <= eps0
    assert mass.sum() >= 1.0


def test_the_composable_law_dominates_two_windows_of_real_datasets() -> None:
    """Two windows, each with every other user on x₁, in either direction each: the exact composed δ, outcome by
    outcome, is within the law's composed δ (E[(1 − e^(ε − L₁ − L₂))₊], the law convolved with itself)."""
    eps0, d, n, delta = 1.0, 3, 40, 1e-3
    found = krr_worst_case(eps0, d, n, delta)
    assert found is not None
    loss, mass = found.losses()
    grid, inverse = np.unique(np.ceil(loss * 1e6) / 1e6, return_inverse=True)  # merged, rounded up: dominating
    law = np.bincount(inverse, weights=mass)
    total = (grid[:, None] + grid[None, :]).ravel()
    weight = (law[:, None] * law[None, :]).ravel()
    big_p, big_q = x1_pair(eps0, d, n)
    pairs = [(big_p.ravel(), big_q.ravel()), (big_q.ravel(), big_p.ravel())]
    for eps in (0.3, 0.6, 1.0):
        bound = float((weight * np.maximum(1 - np.exp(eps - total), 0)).sum())
        for (p1, q1) in pairs:
            for (p2, q2) in pairs:
                exact = float(np.maximum(np.outer(p1, p2) - math.exp(eps) * np.outer(q1, q2), 0).sum())
                assert exact <= bound * SLACK


def test_one_window_law_gives_the_figure() -> None:
    found = krr_worst_case(4.0, 10, 10**4, 1e-8)
    assert found is not None
    loss, mass = found.losses()
    at = float((mass * np.maximum(1 - np.exp(found.epsilon * 1.001 - loss), 0)).sum())
    assert at <= 1e-8
    assert krr_worst_case(4.0, 10, 10**4, 1e-8) is found  # cached


@pytest.mark.parametrize("args", [(0.0, 3, 10, 1e-6), (-1.0, 3, 10, 1e-6), (math.inf, 3, 10, 1e-6),
                                  (1.0, 2, 10, 1e-6), (1.0, 3.0, 10, 1e-6), (1.0, 3, 0, 1e-6),
                                  (1.0, 3, True, 1e-6), (1.0, 3, 10, 0.0), (1.0, 3, 10, 1.0),
                                  (math.nan, 3, 10, 1e-6), (1.0, 3, 10, math.nan)])
def test_bad_input_is_refused(args: tuple[float, int, int, float]) -> None:
    with pytest.raises(ValueError):
        krr_worst_case(*args)


@pytest.mark.parametrize("eps0, delta", [(4.0, 1e-8), (5.53125, 1e-2)])
def test_the_blanket_never_rises_along_the_grid_of_n_at_small_n(eps0: float, delta: float) -> None:
    """At large ε₀ and a few hundred users, U's lowest fixed band spanned 1 to 6 (read at U = 1), or started at 0
    (read at U = 0, π* = 1): the figure rose by up to 8 % from one grid point to the next (4.0, 10⁻⁸: 3.67 at 127
    users, 3.87 at 130). Every band now spans at most a relative 20 % (U = 0 alone), and the figure falls at every
    step of :func:`~ldp.privacy.shuffle.geometric_n` here."""
    from ldp.encoders.randomized_response import GRRParams
    from ldp.privacy.shuffle import geometric_n

    e = GRRParams(eps0, 10).privacy_cost.epsilon
    points = sorted({geometric_n(n) for n in range(100, 210)})
    figures = [krr_epsilon(e, 10, m, delta)[0] for m in points]
    assert all(b <= a for a, b in zip(figures, figures[1:], strict=False)), list(zip(points, figures, strict=True))
