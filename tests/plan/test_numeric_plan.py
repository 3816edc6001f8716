"""The planner for means (ldp.plan.numeric), for histogram buckets (ldp.plan.frequency), and the variance-vs-ε
figure's data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.scripts import load_script, read_csv

from ldp.decoders.histogram import dbitflip_variance
from ldp.decoders.numeric import DuchiAggregate, HybridAggregate, PiecewiseAggregate, continuous_pm_variance
from ldp.decoders.pure import pure_count_variance
from ldp.encoders.numeric import HYBRID_THRESHOLD, PM_CROSSOVER, DuchiParams, HybridParams, PiecewiseParams
from ldp.plan.frequency import default_params, plan, solve_n
from ldp.plan.numeric import (
    default_mean_params,
    laplace_variance,
    plan_mean,
    recommend_mean,
    solve_n_mean,
    worst_case_variance,
)
from ldp.simulation.numeric import simulate_mean

AGGREGATES = {"duchi": DuchiAggregate, "piecewise": PiecewiseAggregate, "hybrid": HybridAggregate}


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.0, 4.0])
def test_worst_cases_follow_the_closed_forms(eps):
    s = math.exp(eps / 2)
    duchi = DuchiParams(eps, -1, 1)
    assert worst_case_variance(duchi) == pytest.approx(((s * s + 1) / (s * s - 1)) ** 2, rel=1e-9)
    pm = PiecewiseParams(eps, -1, 1, cells=1 << 16)  # near the continuous PM, whose worst case is at t = ±1
    assert worst_case_variance(pm) == pytest.approx(4 * s / (3 * (s - 1) ** 2), rel=3e-3)
    t = np.linspace(-1, 1, 11)  # the Hybrid's variance above ε* is flat in t (continuous limit)
    hyb = HybridParams(eps, -1, 1, cells=1 << 16)
    var = HybridAggregate.report_variance(hyb, t)
    if eps > HYBRID_THRESHOLD:
        assert np.ptp(var) <= 1e-2 * var.max()
    assert worst_case_variance(hyb) == pytest.approx(float(var.max()), rel=1e-3)
    assert laplace_variance(eps) == pytest.approx(8 / eps**2)
    assert laplace_variance(eps, 0, 240) == pytest.approx(8 / eps**2 * 120**2)


def test_plan_mean_standard_error_is_exact_and_scales_with_the_bounds():
    p = plan_mean("duchi", n=10_000, epsilon=1.0, low=0, high=240)
    assert p.worst_case and p.report_bits == 1 and p.epsilon_total.epsilon == pytest.approx(1.0)
    assert p.std_error == pytest.approx(math.sqrt(worst_case_variance(DuchiParams(1.0, -1, 1)) * 120**2 / 10_000))
    values = np.linspace(0, 240, 1000)
    for name, agg in AGGREGATES.items():
        params = default_mean_params(name, 2.0, 0, 240)
        exact = plan_mean(params, n=values.size, values=values)
        assert not exact.worst_case
        assert exact.std_error**2 == pytest.approx(agg.exact_variance(params, values), rel=1e-9)
        assert exact.std_error <= plan_mean(params, n=values.size).std_error
    week = plan_mean("hybrid", n=100, epsilon=0.5, reports=7)
    assert week.epsilon_total.epsilon == pytest.approx(3.5) and week.notes  # α = 0 below ε*: said so
    assert "SE of the mean (worst case" in p.table() and json.dumps(p.to_dict())


@pytest.mark.parametrize("name", ["duchi", "piecewise", "hybrid"])
def test_solve_n_mean_is_the_fewest_users(name):
    n = solve_n_mean(name, 0.5, epsilon=1.0, low=0, high=100)
    assert plan_mean(name, n=n, epsilon=1.0, low=0, high=100).std_error <= 0.5
    assert plan_mean(name, n=n - 1, epsilon=1.0, low=0, high=100).std_error > 0.5


def test_bad_plans_name_the_rule():
    with pytest.raises(ValueError, match="knows duchi"):
        plan_mean("grr", n=10, epsilon=1.0)
    with pytest.raises(ValueError, match="n >= 1"):
        plan_mean("duchi", n=0, epsilon=1.0)
    with pytest.raises(ValueError, match="target_se"):
        solve_n_mean("duchi", 0.0, epsilon=1.0)
    with pytest.raises(ValueError, match=r"must be in \[low, high\]"):
        plan_mean("duchi", n=10, epsilon=1.0, values=[2.0])
    with pytest.raises(ValueError, match="no mean mechanism works"):
        recommend_mean(60.0)


@pytest.mark.parametrize("eps, first", [(0.3, "duchi"), (0.6, "duchi"), (0.7, "hybrid"), (1.0, "hybrid"),
                                        (4.0, "hybrid")])
def test_recommendation_follows_the_crossovers(eps, first):
    ranked = [p.protocol for p in recommend_mean(eps)]
    assert ranked[0] == first
    duchi_before_pm = ranked.index("duchi") < ranked.index("piecewise")
    assert duchi_before_pm == (eps < PM_CROSSOVER)


def _measured_worst_case(name: str, eps: float, n: int, gen: np.random.Generator) -> float:
    """The largest sample variance of n per-report values (every report encoded) over t = -1, 0, 1."""
    params = default_mean_params(name, eps, -1.0, 1.0)
    return max(n * simulate_mean(params, np.full(n, t), method="per_report", rng=gen).estimate().std_error ** 2
               for t in (-1.0, 0.0, 1.0))


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_the_recommended_mechanism_has_the_lowest_measured_variance(eps):
    gen = np.random.default_rng(18)
    measured = {name: _measured_worst_case(name, eps, 200_000, gen) for name in AGGREGATES}
    assert recommend_mean(eps)[0].protocol == min(measured, key=measured.__getitem__)
    for name, var in measured.items():  # and each measurement agrees with its formula
        assert var == pytest.approx(worst_case_variance(default_mean_params(name, eps, -1, 1)), rel=0.03)


@pytest.mark.parametrize("protocol", ["dbitflip", "bucket-grr"])
def test_histogram_bucket_standard_errors(protocol):
    params = default_params(protocol, 1.0, 8)
    assert params.privacy_cost.epsilon == pytest.approx(1.0)
    pl = plan(protocol, n=100_000, domain_size=8, epsilon=1.0, frequency=0.25)
    if protocol == "dbitflip":
        expect = dbitflip_variance(params, np.array([25_000.0]), 100_000.0)[0]
        assert pl.report_bits == 16
    else:
        expect = pure_count_variance(25_000.0, 100_000, params.grr.p, params.grr.q)
        assert pl.report_bits == 3
    assert pl.std_error_count**2 == pytest.approx(expect, rel=1e-9)
    n = solve_n(protocol, 0.01, domain_size=8, epsilon=1.0)
    assert plan(protocol, n=n, domain_size=8, epsilon=1.0).std_error_fraction <= 0.01
    assert plan(protocol, n=n - 1, domain_size=8, epsilon=1.0).std_error_fraction > 0.01
    with pytest.raises(ValueError, match="parameters are for 8 values"):
        plan(params, n=100, domain_size=9)


def test_cli_plans_a_mean(run_ldp):
    status, out, err = run_ldp("plan", "hybrid", "--epsilon", "1", "--param", "high=240", "--n", "1e5")
    assert status == 0, err
    assert "SE of the mean (worst case over the values)" in out and "SE with local Laplace (reference)" in out
    expect = plan_mean("hybrid", n=100_000, epsilon=1.0, low=0, high=240).std_error
    assert f"{expect:.4g}" in out
    status, out, err = run_ldp("plan", "duchi", "--epsilon", "1", "--param", "high=240", "--target-se", "1",
                               "--json")
    assert status == 0, err
    assert json.loads(out)[0]["n"] == solve_n_mean("duchi", 1.0, epsilon=1.0, low=0, high=240)


def test_cli_plan_with_values_is_exact_for_them(run_ldp, tmp_path):
    path = tmp_path / "minutes.txt"
    path.write_text("30, 45 60\n# a comment\n90 120 200\n")
    status, out, err = run_ldp("plan", "piecewise", "--param", "epsilon=2", "--param", "low=0",
                               "--param", "high=240", "--values", str(path), "--n", "6", "--json")
    assert status == 0, err
    doc = json.loads(out)[0]
    params = PiecewiseParams(2.0, 0, 240)
    assert not doc["worst_case"]
    assert doc["std_error"] ** 2 == pytest.approx(PiecewiseAggregate.exact_variance(params, [30, 45, 60, 90, 120, 200]))


def test_cli_recommends_a_mean_mechanism(run_ldp):
    status, out, err = run_ldp("plan", "--recommend", "--mean", "--epsilon", "4", "--param", "high=240")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("lowest variance first (worst case over the values), n=1,000,000")
    assert lines[3].split()[0] == "hybrid" and "local Laplace" in out
    status, out, _ = run_ldp("plan", "--recommend", "--mean", "--epsilon", "0.5", "--json")
    assert [p["protocol"] for p in json.loads(out)][0] == "duchi"


@pytest.mark.parametrize("argv, message", [
    (["plan", "duchi", "--epsilon", "1"], "give the number of users --n"),
    (["plan", "duchi", "--epsilon", "1", "--d", "4", "--n", "10"], "not a domain"),
    (["plan", "duchi", "--n", "10"], "duchi needs --epsilon"),
    (["plan", "duchi", "--epsilon", "1", "--param", "epsilon=2", "--n", "10"], "give ε once"),
    (["plan", "grr", "--mean", "--epsilon", "1", "--n", "10"], "--mean ranks the mean mechanisms"),
    (["plan", "--recommend", "--mean"], "--recommend needs --epsilon"),
    (["plan", "grr", "--epsilon", "1", "--d", "4", "--n", "10", "--values", "x"], "for the mean protocols"),
])
def test_cli_plan_errors_name_the_rule(run_ldp, argv, message, tmp_path):
    if "x" in argv:
        (tmp_path / "x").write_text("1\n")
        argv = [str(tmp_path / "x") if a == "x" else a for a in argv]
    status, _, err = run_ldp(*argv)
    assert status == 2 and message in err.splitlines()[-1]


@pytest.fixture(scope="module")
def figure_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("numeric_figures")
    script = load_script("numeric_figures")
    assert script.main(["--quick", "--no-plots", "-q", "--out", str(out)]) == 0
    return script, out


def test_figure_curves_are_the_exact_worst_cases(figure_data):
    script, out = figure_data
    rows = read_csv(out / "curves.csv")
    assert list(rows[0]) == list(script.CURVE_COLUMNS) and len(rows) == 13
    for r, eps in zip(rows, np.logspace(-1, 1, 13), strict=True):  # the CSV rounds ε to 6 digits
        assert float(r["epsilon"]) == pytest.approx(eps, rel=1e-5)
        assert float(r["laplace"]) == pytest.approx(8 / eps**2, rel=1e-5)
        assert float(r["pm_continuous"]) == pytest.approx(
            float(continuous_pm_variance(eps, -1, 1, np.array([1.0]))[0]), rel=1e-5)
        for name in ("duchi", "piecewise", "hybrid"):
            assert float(r[name]) == pytest.approx(worst_case_variance(default_mean_params(name, eps, -1, 1)),
                                                   rel=1e-5)
        assert float(r["hybrid"]) <= float(r["duchi"]) * (1 + 1e-5)
        if eps <= 8:  # beyond, the discrete PM (G = 1024) beats the Hybrid, whose α is the continuous PM's
            assert float(r["hybrid"]) <= float(r["piecewise"]) * (1 + 1e-5)
    assert not list(out.glob("*.png"))


def test_figure_measured_points_and_crossovers(figure_data):
    _, out = figure_data
    measured = read_csv(out / "measured.csv")
    assert {r["protocol"] for r in measured} == {"duchi", "piecewise", "hybrid"} and len(measured) == 15
    for r in measured:  # 20,000 reports a point in the quick run: within 15% (the max of three is biased up)
        assert 0.9 <= float(r["ratio"]) <= 1.15, r
    cross = {r["name"]: float(r["epsilon"]) for r in read_csv(out / "crossovers.csv")}
    assert cross["PM below Duchi"] == pytest.approx(PM_CROSSOVER, rel=1e-5)
    assert cross["Hybrid mixes in PM"] == pytest.approx(HYBRID_THRESHOLD, rel=1e-5)
    e = cross["Laplace below Duchi"]
    assert 8 / e**2 == pytest.approx(1 / math.tanh(e / 2) ** 2, rel=1e-4)


def test_figure_script_without_matplotlib_says_so(capsys, tmp_path):
    pytest.importorskip("numpy")
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None:
        pytest.skip("matplotlib is installed")
    script = load_script("numeric_figures")
    assert script.main(["--quick", "-q", "--out", str(tmp_path)]) == 2
    assert "plots need matplotlib" in capsys.readouterr().err
