"""ldp.privacy.light_scipy: the binomial law, the normal tail, FFT convolution and log-sum-exp without importing
scipy.stats and scipy.signal — differential tests against those (the same numbers, edges of the support included),
and the year's command of issue 88 (item 7) stating the same figures to the digits it prints."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import signal, special, stats

from ldp.cli import main
from ldp.privacy import light_scipy
from ldp.privacy.light_scipy import binom, fftconvolve, logsumexp, norm_isf

PROBS = st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(1e-12, 1 - 1e-12))
"""Success probabilities away from Boost's overflow (p near 10⁻³⁰⁶ overflows in scipy.stats too)."""


def same(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 10**9), p=PROBS, k=st.one_of(st.integers(-3, 10**9 + 3),
                                                                   st.floats(-5, 10**9, allow_nan=False)))
def test_the_binomial_is_scipy_stats_on_scalars(n, p, k):
    for name in ("pmf", "cdf", "sf"):
        assert same(getattr(binom, name)(k, n, p), getattr(stats.binom, name)(k, n, p)), name


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 10**7), p=PROBS, q=st.sampled_from([0.0, 1.0, 1e-300, 1e-20, 0.3, 1 - 1e-16]))
def test_the_quantiles_are_scipy_stats(n, p, q):
    with warnings.catch_warnings():  # Boost warns (in both) where a quantile sits at the support's end
        warnings.simplefilter("ignore", RuntimeWarning)
        assert same(binom.ppf(q, n, p), stats.binom.ppf(q, n, p))
        assert same(binom.isf(q, n, p), stats.binom.isf(q, n, p))


def test_the_binomial_is_scipy_stats_on_arrays_edges_included():
    k = np.array([-2, -1, 0, 1, 5, 49, 50, 51, 80])
    for n, p in ((50, 0.5), (50, 0.0), (50, 1.0), (0, 0.3), (10**8, 1e-6)):
        for name in ("pmf", "cdf", "sf"):
            assert same(getattr(binom, name)(k, n, p), getattr(stats.binom, name)(k, n, p)), (name, n, p)
            assert same(getattr(binom, name)(k + 0.5, n, p), getattr(stats.binom, name)(k + 0.5, n, p))
    sizes, ks = np.array([3, 10, 1000]), np.array([[1], [2], [900]])
    for name in ("pmf", "cdf", "sf"):  # broadcast over n and k as window_pld and clone_bound call them
        assert same(getattr(binom, name)(ks, sizes, 0.5), getattr(stats.binom, name)(ks, sizes, 0.5))
    assert same(binom.cdf(np.nan, 10, 0.5), stats.binom.cdf(np.nan, 10, 0.5))


def test_without_the_private_functions_scipy_stats_answers(monkeypatch):
    monkeypatch.setattr(light_scipy, "_boost", lambda: None)
    assert same(binom.pmf(3, 10, 0.2), stats.binom.pmf(3, 10, 0.2))
    assert same(binom.isf(1e-9, 10**6, 0.2), stats.binom.isf(1e-9, 10**6, 0.2))


@settings(max_examples=50, deadline=None)
@given(a=st.lists(st.floats(0, 1), min_size=1, max_size=300), b=st.lists(st.floats(0, 1), min_size=1, max_size=300))
def test_fftconvolve_and_the_normal_tail_are_scipys(a, b):
    assert same(fftconvolve(a, b), signal.fftconvolve(a, b))
    for q in (1e-300, 1e-10, 0.25, 0.5):
        assert same(norm_isf(q), stats.norm.isf(q))


def test_logsumexp_matches_scipy_to_rounding():
    rng = np.random.default_rng(5)
    x = rng.normal(0, 300, size=(7, 500))
    x[0, :] = -np.inf
    assert np.allclose(logsumexp(x, axis=1), special.logsumexp(x, axis=1), rtol=1e-14, atol=0, equal_nan=True)
    assert logsumexp(np.array([-np.inf])) == -math.inf and logsumexp(np.array([1000.0, 1000.0])) == \
        pytest.approx(1000 + math.log(2), rel=1e-15)


def test_the_years_command_states_the_same_figures(capsys):
    # issue 88, item 7: the year's figures as printed before the command was made fast (ldp 2026-11-28)
    assert main(["privacy", "grr", "--epsilon", "4", "--d", "10", "--shuffled", "1e8", "--delta", "1e-8",
                 "--windows", "365"]) == 0
    out = capsys.readouterr().out
    assert "central (100,000,000 shuffled reports, against the analyst only): ε=0.003739, δ=1e-08" in out
    assert "central over 365 windows: ε=0.08618, δ=1e-08" in out and "one-window figures summed: ε=1.365)" in out
