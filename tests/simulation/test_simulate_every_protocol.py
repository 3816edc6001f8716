"""`ldp simulate` and `ldp.simulation.accuracy` for every protocol, open-domain ones on d candidates
(the mean mechanisms: tests/simulation/test_numeric_cli.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldp.plan.frequency import PLANNED_PROTOCOLS, default_params
from ldp.simulation.collect import accuracy, default_candidates, from_counts, simulate, zipf

TRIALS = 5
OPEN_DOMAIN = ("rappor", "cms", "hcms", "sfp")


def _domain(protocol: str) -> int:
    return 2 if protocol == "rr" else 16


@pytest.mark.parametrize("protocol", PLANNED_PROTOCOLS)
def test_cli_simulates_every_protocol_from_epsilon_alone(run_ldp, protocol):
    d = _domain(protocol)
    status, out, err = run_ldp("simulate", "--protocol", protocol, "--epsilon", "2", "--d", str(d),
                               "--n", "20000", "--trials", str(TRIALS), "--seed", "5", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert doc["protocol"] == protocol and doc["summary"]["n"] == 20000 and len(doc["items"]) == d
    assert doc["epsilon"] == pytest.approx(2.0)
    for row in doc["items"]:  # the mean of TRIALS estimates is within 5 of its standard errors of the truth
        se_of_mean = row["theoretical_sd"] / np.sqrt(TRIALS)
        assert abs(row["mean_estimate"] - row["true_count"]) <= 5 * se_of_mean, row
    s = doc["summary"]
    assert 0.5 * s["theoretical_rmse_count"] <= s["rmse_count"] <= 1.6 * s["theoretical_rmse_count"]
    if protocol in OPEN_DOMAIN:
        assert [r["item"] for r in doc["items"]] == default_candidates(default_params(protocol, 2.0, d), d)
        assert doc["notes"]


def test_cli_text_output_names_the_candidates_and_what_is_estimated(run_ldp):
    status, out, _ = run_ldp("simulate", "--protocol", "cms", "--epsilon", "2", "--d", "64", "--n", "5000",
                             "--trials", "2", "--seed", "1")
    assert status == 0
    assert "item0" in out and "item39" in out and "24 more items" in out and "note: estimates" in out


def test_cli_open_domain_with_explicit_params(run_ldp):
    status, out, err = run_ldp("simulate", "--protocol", "cms", "--param", "epsilon=2", "--param",
                               "num_hashes=16", "--param", "width=256", "--param", "hash_seed=0", "--d", "8",
                               "--n", "5000", "--trials", "2", "--seed", "1", "--json")
    assert status == 0, err
    assert json.loads(out)["params"]["width"] == 256


@pytest.mark.parametrize("argv, message", [
    (["--protocol", "cms", "--epsilon", "2"], "give --d"),
    (["--protocol", "hcms", "--d", "8"], "needs --epsilon"),
    (["--protocol", "rappor", "--epsilon", "2", "--d", "10000000"], "d must be <= 1,000,000"),
    (["--protocol", "rr", "--epsilon", "2", "--d", "5"], "contradicts"),
    (["--protocol", "sfp", "--param", "word_epsilon=1", "--param", "fragment_epsilon=1", "--param", "length=2",
      "--param", "fragment_length=1", "--param", "alphabet=\"ab\"", "--d", "7"], "fewer than d=7"),
])
def test_cli_errors_name_the_rule(run_ldp, argv, message):
    status, _, err = run_ldp("simulate", *argv, "--n", "100", "--trials", "1")
    assert status == 2 and message in err.splitlines()[-1]


def test_accuracy_candidates_from_labels_or_given():
    params = default_params("cms", 2.0, 3)
    res = accuracy(params, from_counts([500, 300, 200], labels=["x", "y", "z"]), 1000, trials=2, rng=1)
    assert res.items == ["x", "y", "z"]
    res = accuracy(params, zipf(2), 1000, trials=2, rng=1, candidates=["apple", "pear"])
    assert res.items == ["apple", "pear"]
    with pytest.raises(ValueError, match="need 2 distinct candidates"):
        accuracy(params, zipf(2), 1000, trials=1, candidates=["apple", "apple"])
    with pytest.raises(ValueError, match="fixed domain"):
        accuracy(default_params("grr", 2.0, 2), zipf(2), 1000, trials=1, candidates=["a", "b"])


def test_default_candidates():
    assert default_candidates(default_params("cms", 1.0, 3), 3) == ["item0", "item1", "item2"]
    sfp = default_params("sfp", 2.0, 30)
    words = default_candidates(sfp, 30)
    assert words[:3] == ["a", "b", "c"] and words[26:] == ["aa", "ab", "ac", "ad"]
    with pytest.raises(ValueError, match="domain size d"):
        default_candidates(sfp, 0)


def test_rappor_candidates_that_cannot_be_told_apart_are_refused():
    from ldp.encoders.rappor import RapporParams

    params = RapporParams(2, 1, 1, 0.0, 1.0, 0.5)  # 2 Bloom bits, one cohort: 3 candidates must collide
    with pytest.raises(ValueError, match="cannot tell 3 candidates apart"):
        accuracy(params, zipf(3), 100, trials=1)


def test_simulate_open_domain_is_reproducible():
    params = default_params("hcms", 2.0, 4)
    cands = default_candidates(params, 4)
    a = simulate(params, [10, 20, 30, 40], values=cands, rng=3)
    b = simulate(params, [10, 20, 30, 40], values=cands, rng=3)
    assert np.array_equal(a.sums, b.sums) and a.n == 100
