"""The planner's numbers against simulated collections, and its closed forms against brute force.

Variance tolerances: with ``N`` pooled estimates of one variance σ², the sample variance ``s²``
has ``sd(s²/σ²) ≈ √(2/N)`` (χ² with ``N`` degrees of freedom, estimates near-normal). Pooling the
``d`` items of one collection adds correlations of order ``1/(d−1)``, which inflate that sd by
about ``√(1 + 1/(d−1))``. Each test allows 4.5 such sds, so a formula wrong by more than that
fails, and a correct one passes with probability > 0.99999.
"""

from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist

import numpy as np
import pytest

from ldp.decoders.randomized_response import GRRAggregate, RRAggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap, decode
from ldp.decoders.sketch import SketchAggregate
from ldp.encoders import BinaryRRParams, CmsParams, GRRParams, HcmsParams, RapporParams
from ldp.encoders.sfp import SfpParams
from ldp.plan.frequency import count_variance, default_params, plan, solve_n
from ldp.plan.oracles import recommend


def _check_ratio(samples: np.ndarray, var: float, d: int) -> None:
    n_eff = samples.size
    tol = 4.5 * math.sqrt(2 / n_eff) * math.sqrt(1 + 1 / max(d - 1, 1))
    ratio = float(np.mean(samples**2)) / var  # the samples are errors (estimate − truth): known mean 0
    assert abs(ratio - 1) < tol, f"empirical/planned variance {ratio:.3f}, tolerance {tol:.3f}"


@pytest.mark.parametrize("protocol", ["grr", "cms", "hcms"])
def test_planned_standard_error_matches_simulation(protocol: str) -> None:
    d, n, reps = 16, 20_000, 300
    # small sketches, so that the hash-collision term (over a fresh hash family per collection) counts
    params = {"grr": GRRParams(2.0, d), "cms": CmsParams(2.0, 16, 128, 0),
              "hcms": HcmsParams(2.0, 16, 128, 0)}[protocol]
    pl = plan(params, n=n, domain_size=d)  # frequency 1/d: every item has the planned SE
    truth = np.full(d, n // d)
    gen = np.random.default_rng(7)
    labels = [f"v{i}" for i in range(d)]
    if protocol == "grr":
        errors = [GRRAggregate.simulate(params, truth, rng=gen).estimate().count - truth for _ in range(reps)]
    else:
        counts = dict(zip(labels, truth.tolist(), strict=True))
        errors = [SketchAggregate.simulate(replace(params, hash_seed=16 * r), counts, rng=gen).estimate(labels).count
                  - truth for r in range(reps)]
    _check_ratio(np.concatenate(errors), pl.std_error_count**2, d)


def test_planned_standard_error_matches_simulation_rr_at_seed_004_setting() -> None:
    n, reps = 3000, 4000
    pl = plan(BinaryRRParams.forced_response(), n=n, domain_size=2, frequency=0.2)
    truth = np.array([2400, 600])
    gen = np.random.default_rng(3)
    errors = np.array([RRAggregate.simulate(pl.params, truth, rng=gen).estimate().count[1] - 600 for _ in range(reps)])
    _check_ratio(errors, pl.std_error_count**2, 1)
    assert pl.std_error_fraction == pytest.approx(pl.std_error_count / n)


def test_planned_rappor_standard_error_matches_least_squares_on_simulated_reports() -> None:
    d, n, reps = 12, 40_000, 120
    pl = plan("rappor", n=n, domain_size=d, epsilon=3.0)
    names = [f"value-{i}" for i in range(d)]  # the planner's synthetic candidates
    cmap = CandidateMap.from_candidates(pl.params, names)
    truth = np.full(d, n // d)
    gen = np.random.default_rng(11)
    errors = []
    for _ in range(reps):
        agg = RapporAggregate.simulate(pl.params, truth.tolist(), rng=gen, values=names, cohorts="balanced")
        est = decode(agg, cmap, selection="none")
        errors.append(np.asarray(est.count) - truth)
    _check_ratio(np.concatenate(errors), pl.std_error_count**2, d)


@pytest.mark.parametrize("power", [0.5, 0.9])
def test_min_detectable_count_is_detected_with_the_planned_power(power: float) -> None:
    """At the planned minimum detectable count, ``Pr[ĉ > z_{1−α/M}·SE₀]`` is ``power`` (binomial
    tolerance 4.5·√(power(1−power)/reps); the normal approximation is good at n = 10^5)."""
    d, n, reps, alpha = 10, 100_000, 4000, 0.05
    params = GRRParams(1.5, d)
    pl = plan(params, n=n, domain_size=d, alpha=alpha, power=power)
    c = round(pl.min_detectable_count)
    truth = np.full(d, (n - c) // (d - 1))
    truth[0] = n - truth[1:].sum()
    threshold = NormalDist().inv_cdf(1 - alpha / d) * math.sqrt(count_variance(params, n, 0.0, d))
    gen = np.random.default_rng(5)
    hits = sum(GRRAggregate.simulate(params, truth, rng=gen).estimate().count[0] > threshold for _ in range(reps))
    assert abs(hits / reps - power) < 4.5 * math.sqrt(power * (1 - power) / reps)


def test_solve_n_reaches_the_target_and_no_fewer_users_do() -> None:
    for protocol in ("rr", "grr", "cms", "hcms", "rappor"):
        d = 2 if protocol == "rr" else 50
        n = solve_n(protocol, 0.002, domain_size=d, epsilon=1.0)
        assert plan(protocol, n=n, domain_size=d, epsilon=1.0).std_error_fraction <= 0.002 * (1 + 1e-9)
        assert plan(protocol, n=n - 2, domain_size=d, epsilon=1.0).std_error_fraction > 0.002


def test_solve_n_refuses_a_target_below_the_collision_floor() -> None:
    tiny = CmsParams(8.0, 1, 16, 0)  # one hash, 16 buckets: F2/(k(m−1)) dominates
    with pytest.raises(ValueError, match="floor"):
        solve_n(tiny, 1e-3, domain_size=20)


def test_recommend_follows_the_known_crossover() -> None:
    """GRR beats the unary-like oracles and sketches when ``d − 2 < 3e^ε`` roughly (Wang et al. 2017).

    The ranking is by the variance of a rare item's count (tests/plan/test_plan_oracles.py), not by the standard
    error at ``frequency`` (1/d), which can order near-ties differently (OLH and OUE, HR and GRR at ε = 2, d = 64)."""
    assert recommend(3.0, 8)[0].protocol == "grr"
    large = [p.protocol for p in recommend(1.0, 1000)]
    assert large[0] in ("oue", "olh", "ss") and large[-1] == "grr"
    assert min(large.index("cms"), large.index("hcms")) == large.index("cms")  # the sketches: CMS before HCMS
    plans = recommend(2.0, 64)
    rare = [plans.scores[p.protocol].variance_per_user for p in plans]
    assert rare == sorted(rare)


def test_privacy_over_a_horizon() -> None:
    pl = plan("grr", n=1000, domain_size=4, epsilon=1.0, reports=30, distinct_values=2)
    assert (pl.epsilon_per_report.epsilon, pl.epsilon_total.epsilon) == (1.0, 30.0)
    rp = RapporParams(32, 2, 8, 0.5, 0.75, 0.5)
    pr = plan(rp, n=1000, domain_size=4, reports=30, distinct_values=2)
    assert pr.epsilon_per_value.epsilon == pytest.approx(min(30 * rp.epsilon_one, rp.epsilon_inf))
    assert pr.epsilon_total.epsilon == pytest.approx(min(30 * rp.epsilon_one, 2 * rp.epsilon_inf))


def test_default_rappor_costs_epsilon_per_report_and_per_value() -> None:
    rp = default_params("rappor", 2.5, 100)
    assert rp.epsilon_one == pytest.approx(2.5) and rp.epsilon_inf == pytest.approx(2.5)


def test_sfp_plan_uses_the_word_sketch_and_the_fragment_grid() -> None:
    sp = SfpParams(2.0, 6.0)
    pl = plan(sp, n=10**6, domain_size=10_000)
    assert pl.std_error_count == pytest.approx(math.sqrt(count_variance(sp.word_params, 10**6, 100, 10_000)))
    assert pl.candidates == sp.num_records and pl.epsilon_per_report.epsilon == 8.0


def test_bad_input_is_refused_with_reasons() -> None:
    with pytest.raises(ValueError, match="binary"):
        plan("rr", n=10, domain_size=3, epsilon=1.0)
    with pytest.raises(ValueError, match="planner knows"):
        plan("no-such-protocol", n=10, domain_size=3, epsilon=1.0)
    with pytest.raises(ValueError, match="give the protocol"):
        plan("grr", n=10, domain_size=3)
    with pytest.raises(ValueError, match="frequency"):
        plan("grr", n=10, domain_size=3, epsilon=1.0, frequency=1.5)
    with pytest.raises(ValueError, match="cannot tell"):
        plan(RapporParams(4, 1, 1, 0.25, 0.75, 0.0), n=10, domain_size=50)
    with pytest.raises(ValueError, match="for 3 values"):
        plan(GRRParams(1.0, 3), n=10, domain_size=4)
    assert plan(HcmsParams(1.0, 4, 8, 0), n=10, domain_size=3).report_bits == 1 + 2 + 3


def test_cli_plan_single_target_and_recommend(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from ldp.cli.command import main

    assert main(["plan", "grr", "--epsilon", "2", "--d", "50", "--target-se", "0.001", "--json"]) == 0
    (out,) = json.loads(capsys.readouterr().out)
    assert out["n"] == solve_n("grr", 0.001, domain_size=50, epsilon=2.0) and out["std_error_fraction"] <= 0.001
    assert main(["plan", "--recommend", "--epsilon", "1", "--d", "200", "--n", "1e6"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[3].startswith("ss") and "grr" in text and "cms" in text
    assert main(["plan", "cms", "--n", "10", "--d", "5"]) == 2
    assert "needs --epsilon" in capsys.readouterr().err
    assert main(["plan", "rr", "--epsilon", "1", "--n", "100"]) == 2
    assert "--d" in capsys.readouterr().err
