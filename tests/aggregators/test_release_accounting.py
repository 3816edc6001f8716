"""The central ε over releases (ldp.aggregators.release.over_releases) and zCDP's inverse (zcdp_epsilon)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from ldp.aggregators.release import over_releases
from ldp.privacy.central_noise import zcdp_delta, zcdp_epsilon
from ldp.privacy.share_noise import ShareNoise


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-6, 50), st.floats(1e-15, 0.5))
def test_zcdp_epsilon_is_the_smallest_epsilon_of_delta(rho: float, delta: float) -> None:
    eps = zcdp_epsilon(rho, delta)
    assert zcdp_delta(rho, eps) <= delta
    assert zcdp_delta(rho, eps * (1 - 1e-6)) > delta or eps < 1e-9
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-9  # never worse than Bun & Steinke


def test_zcdp_epsilon_refuses() -> None:
    for rho, delta in ((0, 1e-9), (1, 0), (1, 1), (-1, 0.5)):
        with pytest.raises(ValueError):
            zcdp_epsilon(rho, delta)


def _laplace(eps: float) -> dict:
    return {"noise": {"mechanism": "laplace", "epsilon": eps}}


def _gaussian(eps: float, delta: float) -> dict:
    n = ShareNoise.gaussian(eps, delta, math.sqrt(2))
    return {"noise": {"mechanism": "gaussian", "epsilon": eps, "delta": delta, "sensitivity": n.sensitivity,
                      "scale": str(n.scale)}}


def test_one_release_is_its_own_cost_and_none_without_noise() -> None:
    assert over_releases([_laplace(0.5)]).to_dict() == {"epsilon": 0.5, "delta": 0.0}
    assert over_releases([]) is None
    assert over_releases([_laplace(0.5), {"noise": {"mechanism": "none"}}]) is None


def test_few_pure_releases_compose_by_sum_many_by_zcdp() -> None:
    three = over_releases([_laplace(0.5)] * 3, 1e-9)
    assert three.epsilon == pytest.approx(1.5) and three.delta == 0
    many = over_releases([_laplace(0.1)] * 400, 1e-9)
    assert many.delta == 1e-9 and many.epsilon < 40 * 0.5  # far below basic composition's 40


def test_gaussian_releases_compose_by_zcdp_below_the_sum() -> None:
    total = over_releases([_gaussian(1.0, 1e-9)] * 50, 1e-6)
    assert total.delta == 1e-6 and total.epsilon < 50


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.01, 3), min_size=1, max_size=30))
def test_never_above_basic_composition_at_its_delta(eps: list[float]) -> None:
    total = over_releases([_laplace(e) for e in eps], 1e-9)
    assert total.epsilon <= sum(eps) * (1 + 1e-12)
