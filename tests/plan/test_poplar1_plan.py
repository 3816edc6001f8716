"""The discovery threshold of Poplar1's walk by formula, beside PEM's and SFP's planners (issue 89, item 4):
:mod:`ldp.plan.poplar1`.

What breaking makes them fail: ``holders_needed`` not the smallest h reaching the power (its definition test);
the product over levels replaced by one level (the levels test); the PEM/SFP figures not their planners' (the
reuse test); a shuffled ε₀ whose shuffle exceeds the central ε, or far below the largest (the shuffle test); the
threshold or noise varying with n (the table test).
"""

from __future__ import annotations

import math

import pytest

from ldp.encoders.pem import PEMParams
from ldp.plan.frequency import plan
from ldp.plan.poplar1 import (
    discovery_table,
    find_probability,
    holders_needed,
    local_holders_needed,
    poplar1_discovery,
    shuffled_local_epsilon,
)
from ldp.prio.heavy_hitters import NoiseLaw, calibrate, recommended_threshold


@pytest.mark.parametrize("noise", ["gaussian:1:1e-8", "laplace:4"])
def test_holders_needed_is_the_smallest_reaching_the_power(noise: str) -> None:
    cal = calibrate(noise, 32)
    t = recommended_threshold(cal, 1024)
    law = NoiseLaw.of(cal.level_noise)
    h = holders_needed(cal, t, 0.9)
    assert find_probability(law, t, [h] * 32) >= 0.9 > find_probability(law, t, [h - 1] * 32)
    assert find_probability(law, t, [h] * 32) == pytest.approx(law.tail(t - h) ** 32)


def test_more_levels_need_more_holders() -> None:
    """The product over levels: at the same threshold a 64-level walk needs more holders than a 1-level one."""
    one, many = calibrate("gaussian:4:1e-8", 1), calibrate("gaussian:4:1e-8", 64)
    many_at_one_sigma = type(many)(many.mechanism, 4.0, 1e-8, 64, one.level_noise)  # same noise, 64 levels
    assert holders_needed(many_at_one_sigma, 50) > holders_needed(one, 50)
    assert holders_needed(many, 50) > holders_needed(many_at_one_sigma, 50)  # and σ grows with √m


def test_shared_prefixes_only_help() -> None:
    cal = calibrate("gaussian:4:1e-8", 16)
    law = NoiseLaw.of(cal.level_noise)
    assert find_probability(law, 100, [500] * 8 + [90] * 8) > find_probability(law, 100, [90] * 16)


def test_local_protocols_are_their_planners() -> None:
    params = PEMParams(4.0, max_length=8, top_k=32)
    direct = plan(params, n=10**6, domain_size=1 << 20, power=0.9)
    assert local_holders_needed(params, 10**6) == pytest.approx(direct.min_detectable_count)
    # an alphabet prunes the last round's candidates to top_k·27: fewer tests, a lower threshold
    assert local_holders_needed(params, 10**6, candidates=32 * 27) < direct.min_detectable_count
    rows = discovery_table([10**6], [4.0], bits=64, max_candidates=512, pem_top_k=32,
                           alphabet="abcdefghijklmnopqrstuvwxyz")
    pem = [r for r in rows if r["protocol"] == "pem"][0]
    assert pem["holders_needed"] == pytest.approx(local_holders_needed(params, 10**6, candidates=32 * 27))
    assert {r["protocol"] for r in rows} == {"poplar1-gaussian", "poplar1-laplace", "pem", "sfp", "pem-shuffled",
                                             "sfp-shuffled"}


def test_shuffled_local_epsilon_is_the_largest_within_the_central() -> None:
    from ldp.privacy.shuffle import shuffled_epsilon

    eps0 = shuffled_local_epsilon(1.0, 10**5, 1e-8)
    assert eps0 > 1.0 and shuffled_epsilon(eps0, 10**5, 1e-8).epsilon <= 1.0
    assert shuffled_epsilon(eps0 * 1.01, 10**5, 1e-8).epsilon > 1.0


def test_the_table_and_poplar1_independent_of_n() -> None:
    rows = discovery_table([10**5, 10**6], [4.0], bits=32, max_candidates=512)
    by = {(r["n"], r["protocol"]): r["holders_needed"] for r in rows}
    assert by[(10**5, "poplar1-gaussian")] == by[(10**6, "poplar1-gaussian")]
    assert by[(10**6, "pem")] > by[(10**5, "pem")]  # local noise grows with √n
    assert by[(10**6, "poplar1-gaussian")] < by[(10**6, "poplar1-laplace")] < by[(10**6, "pem")]
    row = poplar1_discovery("gaussian:4:1e-8", 32, 512)
    assert row["levels"] == 32 and row["walk_epsilon"] == pytest.approx(4.0) and math.isfinite(row["count_sd"])
