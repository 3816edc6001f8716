"""`ldp simulate`, `ldp plan` and their Python APIs for the repeated-collection protocols (lgrr, memo-mean) and
several attributes per report (multi)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from ldp.decoders.longitudinal import lgrr_variance
from ldp.decoders.multi import MultiAggregate, multi_variance, recommend_mode
from ldp.encoders.longitudinal import LGRRParams, MemoMeanParams
from ldp.encoders.multi import MultiParams
from ldp.plan.frequency import default_params, lgrr_charges, plan, solve_n
from ldp.plan.multi import plan_multi
from ldp.plan.numeric import plan_mean, recommend_mean, solve_n_mean
from ldp.simulation.collect import accuracy, simulate, zipf
from ldp.simulation.multi import MultiAccuracyResult, attribute_populations, draw_truth
from ldp.simulation.numeric import MeanAccuracyResult, uniform_values

ATTRS = [["screen", "grr", {"domain_size": 3}], ["minutes", "piecewise", {"low": 0, "high": 120, "cells": 64}],
         ["dark", "rr", {}]]
ATTRS_ARG = "attributes=" + json.dumps(ATTRS)


def test_mean_protocols_are_the_registrys():
    from ldp.encoders.numeric import MEAN_PROTOCOLS  # the 0.1 name, read from the registry
    from ldp.plan.numeric import ranked_mean_protocols
    from ldp.protocols import protocols_taking

    assert MEAN_PROTOCOLS == protocols_taking("numbers") == ("duchi", "hybrid", "memo-mean", "piecewise")
    assert ranked_mean_protocols() == ("duchi", "hybrid", "piecewise")  # memo-mean needs a device secret
    assert [p.protocol for p in recommend_mean(1.0)] == ["hybrid", "duchi", "piecewise"]  # memo-mean not ranked


# -- lgrr ----------------------------------------------------------------------------------------
def test_lgrr_defaults_and_accuracy_both_paths():
    params = default_params("lgrr", 1.0, 8)
    assert isinstance(params, LGRRParams) and params.epsilon_perm == 4.0 and params.privacy_cost.epsilon == 1.0
    for method, trials in (("aggregate", 200), ("per_report", 3)):
        res = accuracy(params, zipf(8), 20_000, trials=trials, rng=1, method=method)
        assert np.allclose(res.theoretical_sd ** 2, lgrr_variance(params, res.true_count))
        assert np.all(np.abs(res.mean_estimate - res.true_count) <= 5 * res.theoretical_sd / math.sqrt(trials))
    res = accuracy(params, zipf(8), 20_000, trials=200, rng=2)
    assert 0.8 <= float(np.mean(res.empirical_sd ** 2 / res.theoretical_sd ** 2)) <= 1.2
    assert 0.92 <= res.summary()["coverage"] <= 0.98


def test_lgrr_plan_se_and_charges():
    params = LGRRParams(2.0, 0.5, 3)
    pl = plan(params, n=10_000, domain_size=3, reports=5, distinct_values=2)
    f = 10_000 / 3
    assert pl.std_error_count == pytest.approx(math.sqrt(lgrr_variance(params, [round(f), 3333, 3333])[0]), rel=1e-3)
    c, cap = params.report_charge.epsilon, params.memo_cap.epsilon
    assert pl.per_value_by_charging["min"].epsilon == pytest.approx(min(5 * c, cap))
    assert pl.per_value_by_charging["upfront"].epsilon == pytest.approx(cap)
    assert pl.epsilon_total.epsilon == pytest.approx(min(5 * c, 2 * cap))
    assert set(lgrr_charges(params, 1)) == {"min", "upfront"}
    assert "charging=upfront" in pl.table() and json.dumps(pl.to_dict())
    n = solve_n("lgrr", 0.01, domain_size=3, epsilon=0.5)
    assert plan("lgrr", n=n, domain_size=3, epsilon=0.5).std_error_fraction <= 0.01
    assert plan("lgrr", n=n - 1, domain_size=3, epsilon=0.5).std_error_fraction > 0.01
    with pytest.raises(ValueError, match="for 3 values"):
        plan(params, n=100, domain_size=4)


def test_cli_lgrr(run_ldp):
    status, out, err = run_ldp("simulate", "--protocol", "lgrr", "--epsilon", "1", "--d", "4", "--n", "20000",
                               "--trials", "3", "--seed", "1", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert doc["params"]["epsilon_perm"] == 4.0 and len(doc["items"]) == 4
    status, out, err = run_ldp("plan", "lgrr", "--epsilon", "1", "--d", "8", "--n", "100000", "--reports", "30")
    assert status == 0, err
    assert "charging=min" in out and "charging=upfront" in out and "3 bits" in out


# -- memo-mean -----------------------------------------------------------------------------------
def test_memo_mean_accuracy_and_plan():
    params = MemoMeanParams(1.0, 0, 10)
    res = accuracy(params, uniform_values(0, 10), 20_000, trials=200, rng=1)
    assert isinstance(res, MeanAccuracyResult) and res.protocol == "memo-mean"
    assert 0.75 <= res.summary()["variance_ratio"] <= 1.3 and abs(res.bias) <= 4 * res.exact_se / math.sqrt(200)
    per = accuracy(params, uniform_values(0, 10), 5000, trials=3, rng=1, method="per_report")
    assert abs(per.mean_estimate - per.true_mean) <= 5 * per.exact_se
    assert simulate(params, np.full(100, 5.0), rng=1).n == 100
    pl = plan_mean("memo-mean", n=10_000, epsilon=1.0, high=10, reports=30, distinct_values=3)
    duchi = plan_mean("duchi", n=10_000, epsilon=1.0, high=10)
    assert pl.std_error == pytest.approx(duchi.std_error) and pl.report_bits == 1  # γ = 0: Duchi's variance
    assert pl.epsilon_total.epsilon == pytest.approx(3.0) and "rounded value" in pl.table()
    assert solve_n_mean("memo-mean", 0.05, epsilon=1.0, high=10) == solve_n_mean("duchi", 0.05, epsilon=1.0, high=10)


def test_cli_memo_mean(run_ldp):
    status, out, err = run_ldp("simulate", "--protocol", "memo-mean", "--epsilon", "1", "--param", "high=600",
                               "--n", "10000", "--trials", "3", "--seed", "1", "--json")
    assert status == 0, err
    assert json.loads(out)["params"]["buckets"] == 16
    status, out, err = run_ldp("plan", "memo-mean", "--epsilon", "1", "--param", "high=600", "--n", "1e5",
                               "--reports", "30", "--distinct-values", "3")
    assert status == 0, err
    assert re.search(r"30 reports of 3 rounded values +ε=3\n", out), out


# -- multi ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["split", "sample"])
def test_multi_accuracy(mode):
    params = MultiParams(2.0, mode, tuple(ATTRS))
    res = accuracy(params, None, 20_000, trials=100, rng=3)
    assert isinstance(res, MultiAccuracyResult) and res.mode == mode
    truth = draw_truth(params, attribute_populations(params), 20_000, 3)
    exact = MultiAggregate.exact_variance(params, truth)
    assert res.attributes["minutes"].exact_se == pytest.approx(math.sqrt(exact["minutes"]))
    for name, s in res.summary()["attributes"].items():
        assert 0.6 <= s["variance_ratio"] <= 1.5, (name, s)
        assert 0.85 <= s["coverage"] <= 1.0
    assert {r["attribute"] for r in res.rows()} == {"screen", "minutes", "dark"}
    per = accuracy(params, None, 4000, trials=2, rng=1, method="per_report")
    for row in per.rows():
        assert abs(row["mean_estimate"] - row["truth"]) <= 6 * row["exact_se"], row


def test_multi_accuracy_refuses_mismatched_populations():
    params = MultiParams(2.0, "sample", tuple(ATTRS))
    with pytest.raises(ValueError, match="unknown attributes"):
        accuracy(params, {"nope": zipf(3)}, 100, trials=1)
    with pytest.raises(ValueError, match="over its 3 values"):
        accuracy(params, {"screen": zipf(4)}, 100, trials=1)
    with pytest.raises(ValueError, match="only it does"):
        accuracy(default_params("grr", 1.0, 3), {"screen": zipf(3)}, 100, trials=1)


def test_plan_multi_matches_the_decoder():
    pl = plan_multi(2.0, ATTRS, 100_000)
    var = multi_variance(2.0, ATTRS, 100_000)
    assert pl.recommended == recommend_mode(2.0, ATTRS, 100_000) == "sample"
    assert pl.std_error["minutes"]["split"] == pytest.approx(math.sqrt(var["minutes"]["split"]))
    assert pl.std_error["screen"]["sample"] == pytest.approx(math.sqrt(float(np.mean(var["screen"]["sample"]))))
    grr = [[f"a{i}", "grr", {"domain_size": 4}] for i in range(2)]
    assert plan_multi(16.0, grr, 10_000).recommended == recommend_mode(16.0, grr, 10_000) == "split"
    json.dumps(pl.to_dict())


def test_cli_multi(run_ldp):
    status, out, err = run_ldp("simulate", "--protocol", "multi", "--epsilon", "2", "--param", ATTRS_ARG,
                               "--n", "5000", "--trials", "3", "--seed", "1", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert doc["mode"] == "sample" and doc["populations"] == {"screen": "zipf1", "minutes": "uniform", "dark": "zipf1"}
    assert len(doc["items"]) == 3 + 1 + 2
    status, out, err = run_ldp("simulate", "--protocol", "multi", "--epsilon", "2", "--param", ATTRS_ARG,
                               "--param", "mode=split", "--population", "normal", "--scale", "10", "--n", "5000",
                               "--trials", "2", "--seed", "1")
    assert status == 0, err
    assert "multi (split)" in out and "minutes: normal" in out and "empirical/exact variance" in out
    status, out, err = run_ldp("plan", "multi", "--epsilon", "2", "--param", ATTRS_ARG, "--n", "1e5")
    assert status == 0, err
    assert "recommended mode: sample" in out and "SE split" in out


@pytest.mark.parametrize("command, argv, message", [
    ("simulate", ["--protocol", "multi", "--epsilon", "2"], "needs its attributes"),
    ("simulate", ["--protocol", "multi", "--param", ATTRS_ARG], "needs --epsilon"),
    ("simulate", ["--protocol", "multi", "--epsilon", "2", "--param", ATTRS_ARG, "--d", "3"], "leave out --d"),
    ("simulate", ["--protocol", "multi", "--epsilon", "2", "--param", ATTRS_ARG, "--population", "gaussian",
                  "--s", "2"], "--s is the Zipf"),
    ("simulate", ["--protocol", "multi", "--epsilon", "2", "--param", ATTRS_ARG, "--param", "mode=both"],
     "mode must be"),
    ("plan", ["multi", "--epsilon", "2", "--param", ATTRS_ARG, "--param", "mode=split"], "compares both modes"),
    ("plan", ["multi", "--epsilon", "2", "--param", ATTRS_ARG, "--d", "3"], "takes --epsilon"),
])
def test_cli_multi_errors(run_ldp, command, argv, message):
    extra = ["--n", "100", "--trials", "1"] if command == "simulate" else []
    status, _, err = run_ldp(command, *argv, *extra)
    assert status == 2 and message in err.splitlines()[-1], err
