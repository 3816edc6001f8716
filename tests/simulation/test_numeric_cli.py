"""`ldp simulate` and `ldp.simulation.accuracy` for the mean mechanisms and the histograms; the demo's minutes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldp.decoders.numeric import HybridAggregate
from ldp.encoders.numeric import DuchiParams, HybridParams, PiecewiseParams
from ldp.simulation.collect import accuracy, simulate, zipf
from ldp.simulation.numeric import given_values, make_numeric_population, read_values


@pytest.mark.parametrize("protocol", ["duchi", "piecewise", "hybrid"])
@pytest.mark.parametrize("population", ["uniform", "normal", "exponential"])
def test_cli_simulates_a_mean_from_epsilon_alone(run_ldp, protocol, population):
    status, out, err = run_ldp("simulate", "--protocol", protocol, "--epsilon", "1", "--param", "high=240",
                               "--population", population, "--n", "2000", "--trials", "200", "--seed", "3", "--json")
    assert status == 0, err
    doc = json.loads(out)
    s = doc["summary"]
    assert doc["params"]["low"] == 0 and doc["params"]["high"] == 240 and doc["epsilon"] == pytest.approx(1.0)
    assert doc["population"] == population and s["n"] == 2000 and s["trials"] == 200
    assert abs(s["bias"]) <= 4 * s["bias_se"]
    assert 0.7 <= s["variance_ratio"] <= 1.35  # 199 degrees of freedom
    assert 0.9 <= s["coverage"] <= 1.0 and s["mean_reported_se"] >= 0.95 * s["exact_se"]


def test_cli_text_output_and_a_values_file(run_ldp, tmp_path):
    path = tmp_path / "minutes.txt"
    path.write_text("30 45 60\n90, 120, 200\n" * 500)
    status, out, err = run_ldp("simulate", "--protocol", "hybrid", "--param", "epsilon=2", "--param", "low=0",
                               "--param", "high=240", "--values", str(path), "--trials", "5", "--seed", "1")
    assert status == 0, err
    assert out.startswith("hybrid ε=2, values in [0, 240], population values, n=3,000, 5 trials")
    for label in ("true mean", "mean of the estimates", "empirical SE", "exact SE", "CI coverage"):
        assert label in out
    exact = HybridAggregate.exact_variance(HybridParams(2.0, 0, 240), read_values(str(path))) ** 0.5
    assert f"{exact:.4g}" in out


def test_per_report_and_aggregate_paths_agree():
    params = PiecewiseParams(2.0, -1, 1, cells=64)
    pop = make_numeric_population("normal", -1, 1, loc=0.5, scale=0.3)
    runs = [accuracy(params, pop, 5000, trials=40, rng=4, method=m) for m in ("aggregate", "per_report")]
    assert runs[0].true_mean == runs[1].true_mean and runs[0].exact_se == runs[1].exact_se
    for r in runs:
        assert abs(r.bias) <= 4 * r.exact_se / np.sqrt(r.trials)
        assert 0.5 <= r.summary()["variance_ratio"] <= 1.6
    agg = simulate(params, np.full(10, 0.25), rng=1)  # ldp.simulation.simulate takes the values
    assert agg.n == 10 and agg.estimate().n == 10


def test_numeric_populations_stay_in_bounds_and_are_seeded():
    for name, options in [("uniform", {}), ("normal", {"loc": 200, "scale": 100}), ("exponential", {"scale": 30})]:
        pop = make_numeric_population(name, 0, 240, **options)
        x = pop.draw(20_000, 7)
        assert x.size == 20_000 and x.min() >= 0 and x.max() <= 240
        assert np.array_equal(x, pop.draw(20_000, 7))
    assert make_numeric_population("exponential", 0, 240, scale=30).draw(50_000, 1).mean() < 31
    with pytest.raises(ValueError, match="move loc or widen scale"):
        make_numeric_population("normal", 0, 1, loc=100, scale=1)
    with pytest.raises(ValueError, match="unknown numeric population"):
        make_numeric_population("zipf", 0, 1)
    with pytest.raises(ValueError, match="outside the bounds"):
        given_values([1, 2, 300], 0, 240)


def test_accuracy_refuses_mismatched_populations():
    with pytest.raises(ValueError, match="population of numbers"):
        accuracy(DuchiParams(1.0, 0, 1), zipf(4), 100)
    with pytest.raises(ValueError, match="outside the params' bounds"):
        accuracy(DuchiParams(1.0, 0, 1), make_numeric_population("uniform", 0, 2), 100, trials=1)
    clipped = accuracy(DuchiParams(1.0, 0, 1, clip=True), make_numeric_population("uniform", 0, 2), 1000,
                       trials=2, rng=1)
    assert clipped.true_mean > 0.7  # the clipped values' mean


@pytest.mark.parametrize("argv, message", [
    (["--protocol", "duchi", "--epsilon", "1", "--d", "4"], "not a domain"),
    (["--protocol", "duchi"], "duchi needs --epsilon"),
    (["--protocol", "duchi", "--epsilon", "1", "--population", "zipf"], "unknown numeric population"),
    (["--protocol", "duchi", "--epsilon", "1", "--param", "epsilon=1"], "give ε once"),
    (["--protocol", "grr", "--epsilon", "1", "--d", "4", "--loc", "2"], "for the mean protocols"),
    (["--protocol", "piecewise", "--epsilon", "1", "--param", "low=2"], "low < high"),
    (["--protocol", "duchi", "--epsilon", "1", "--population", "uniform", "--values", "VALUES"], "--values gives"),
    (["--protocol", "duchi", "--epsilon", "1", "--values", "VALUES"], "outside the bounds"),
])
def test_cli_errors_name_the_rule(run_ldp, tmp_path, argv, message):
    (tmp_path / "v.txt").write_text("0.5 7\n")
    argv = [str(tmp_path / "v.txt") if a == "VALUES" else a for a in argv]
    status, _, err = run_ldp("simulate", *argv, "--n", "100", "--trials", "1")
    assert status == 2 and message in err.splitlines()[-1]


@pytest.mark.parametrize("protocol", ["dbitflip", "bucket-grr"])
def test_cli_simulates_histograms_from_epsilon_or_edges(run_ldp, protocol):
    status, out, err = run_ldp("simulate", "--protocol", protocol, "--epsilon", "2", "--d", "4", "--n", "20000",
                               "--trials", "5", "--seed", "2", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert [r["item"] for r in doc["items"]] == ["[0, 1)", "[1, 2)", "[2, 3)", "[3, 4]"]
    assert doc["epsilon"] == pytest.approx(2.0)
    status, out, err = run_ldp("simulate", "--protocol", protocol, "--param", "epsilon=1", "--param",
                               "edges=[0, 10, 20, 50, 100]", "--population", "uniform", "--n", "20000", "--trials", "5",
                               "--seed", "2", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert doc["items"][-1]["item"] == "[50, 100]"
    for row in doc["items"]:
        assert abs(row["mean_estimate"] - row["true_count"]) <= 5 * row["theoretical_sd"] / np.sqrt(5)


def test_demo_minutes_section():
    from ldp.demo.minutes import EDGES, daily_minutes, render_minutes

    part = daily_minutes(5000, np.random.default_rng(1), 1.0)
    assert part["protocol"] == "hybrid" and len(part["days"]) == 7  # the planner's choice at ε = 1
    assert [name for name, _ in part["ranking"]] == ["hybrid", "duchi", "piecewise"]
    assert sum(bool(d["covered"]) for d in part["days"]) >= 5
    assert all(0 <= d["true_mean"] <= 240 for d in part["days"])
    hist = part["estimates"]["minutes_histogram"]
    assert len(hist.items) == len(EDGES) - 1 and hist.n == 5000 and part["histogram_epsilon"] == pytest.approx(1.0)
    text = render_minutes(part)
    assert "Sun" in text and "true means inside their 95% CI" in text
