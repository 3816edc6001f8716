"""PEM everywhere the other protocols are: `ldp simulate`, `ldp plan`, `ldp pem-discover`, and a spec's pem
metric from the client through `ldp fold` to `ldp decode`."""

import json
import math

import numpy as np
import pytest

from ldp.cli.command import main
from ldp.decoders.pem import PEMAggregate, pem_detectable_share, pem_variance
from ldp.decoders.pem_estimator import pem_expected_variance
from ldp.encoders.pem import PEMEncoder, PEMParams

PARAMS = PEMParams(4.0, max_length=5, top_k=8)
WORDS = ["hello", "world", "hi", "sunny"]


def run_json(capsys, *argv):
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def run_error(capsys, *argv) -> str:
    """The last stderr line of a command that fails as bad input (status 2, argparse's too)."""
    try:
        status = main(list(argv))
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    return capsys.readouterr().err.rstrip("\n").split("\n")[-1]


# ------------------------------------------------------------------------------------------ simulate
def test_simulate_pem_gives_recall_false_strings_and_errors_against_theory(capsys):
    argv = ["simulate", "--protocol", "pem", "--epsilon", "4", "--param", "max_length=3", "--d", "12",
            "--n", "20000", "--trials", "4", "--seed", "3", "--json"]
    out = run_json(capsys, *argv)
    s = out["summary"]
    assert out["protocol"] == "pem" and out["params"]["max_length"] == 3 and s["n"] == 20000 and s["trials"] == 4
    assert [r["item"] for r in out["items"]] == list("abcdefghijkl")  # shortlex a–z strings
    assert s["recall@10"] >= 0.9 and s["false_strings_mean"] <= 0.5 and s["strings_found_mean"] >= 9
    assert all(0 <= r["detected"] <= 1 for r in out["items"]) and out["items"][0]["detected"] == 1.0
    assert s["rmse_count"] == pytest.approx(s["theoretical_rmse_count"], rel=0.5)
    assert run_json(capsys, *argv) == out  # same seed, same result
    assert main(argv[:-1]) == 0
    text = capsys.readouterr().out
    assert "detected" in text.splitlines()[1] and "discovery: recall@10 " in text and " false (at most " in text


def test_simulate_pem_theory_is_the_variance_averaged_over_the_group_size():
    from ldp.simulation.collect import from_counts
    from ldp.simulation.pem import pem_accuracy, pem_theoretical_variance

    params = PEMParams(2.0, max_length=2)  # G = 2
    truth = np.array([3000, 1000, 0])
    v = pem_theoretical_variance(params, truth, 4000)
    at_mean = pem_variance(params, truth, 4000, 2000)
    assert np.all(v > at_mean) and np.allclose(v, at_mean, rtol=2e-3)  # E[1/N] > 1/E[N], barely
    res = pem_accuracy(params, from_counts([3000, 1000, 1], ["ab", "c", "zz"]), 4001, trials=30, rng=5,
                       method="per_report")
    assert res.items == ["ab", "c", "zz"] and res.summary()["recall@3"] >= 2 / 3
    z = np.abs(res.mean_estimate - res.true_count) / (res.theoretical_sd / math.sqrt(30))
    assert np.all(z < 4.5) and np.all(res.empirical_sd < 1.6 * res.theoretical_sd)


def test_simulate_pem_bad_input(capsys):
    base = ["simulate", "--protocol", "pem", "--n", "1000", "--trials", "2"]
    assert "pem needs --epsilon" in run_error(capsys, *base, "--d", "5")
    assert "give --d" in run_error(capsys, *base, "--epsilon", "4")
    assert "disagree" in run_error(capsys, *base, "--d", "5", "--epsilon", "4", "--param", "epsilon=2")
    assert "fewer than d=800" in run_error(capsys, *base, "--d", "800", "--epsilon", "4", "--param", "max_length=2")
    assert "unknown PEMParams" in run_error(capsys, *base, "--d", "5", "--epsilon", "4", "--param", "nope=1")


# ------------------------------------------------------------------------------------------ plan
def test_plan_pem_detectable_share_is_the_decoders(capsys):
    out = run_json(capsys, "plan", "pem", "--epsilon", "4", "--n", "1e6", "--d", "1000", "--json")[0]
    params = PEMParams(4.0)
    assert out["protocol"] == "pem" and out["candidates"] == params.top_k << 8
    # the planner's normal cutoff against the decoder's exact binomial one: within 3 % at n = 10^6
    assert out["min_detectable_fraction"] == pytest.approx(pem_detectable_share(params, 10**6), rel=0.03)
    # the exact variance averaged over the last group's binomial size, next to n/G = 10^5 reports fixed
    assert out["std_error_count"] == pytest.approx(math.sqrt(pem_expected_variance(params, [1000], 10**6)[0]))
    assert out["std_error_count"] == pytest.approx(math.sqrt(pem_variance(params, [1000], 10**6, 10**5)[0]), rel=1e-4)
    assert out["report_bits"] == 4 + 32 + 6 and out["epsilon_per_report"]["epsilon"] == 4.0
    shorter = run_json(capsys, "plan", "pem", "--epsilon", "4", "--param", "max_length=4", "--n", "1e6", "--d",
                       "1000", "--power", "0.9", "--json")[0]
    assert shorter["min_detectable_fraction"] > pem_detectable_share(PEMParams(4.0, max_length=4), 10**6)
    assert main(["plan", "pem", "--epsilon", "4", "--n", "1e6", "--d", "1000"]) == 0
    text = capsys.readouterr().out
    assert "0.3814% = 3,814 users" in text and "at most top_k=32" in text
    assert "pem needs --epsilon" in run_error(capsys, "plan", "pem", "--n", "1e6", "--d", "10")


def test_plan_pem_grid_falls_with_n_and_epsilon_and_rises_with_length():
    from ldp.plan.frequency import default_params, solve_n
    from ldp.plan.pem import detectable_grid

    rows = {(r["n"], r["epsilon"], r["max_length"]): r["detectable_share"]
            for r in detectable_grid([10**5, 10**6], [2.0, 4.0], [5, 10])}
    assert rows[(10**6, 4.0, 10)] == pytest.approx(pem_detectable_share(PEMParams(4.0), 10**6))
    assert rows[(10**6, 4.0, 10)] < rows[(10**5, 4.0, 10)] and rows[(10**6, 4.0, 10)] < rows[(10**6, 2.0, 10)]
    assert rows[(10**6, 4.0, 5)] < rows[(10**6, 4.0, 10)]
    assert default_params("pem", 3.0, 100) == PEMParams(3.0)
    n = solve_n("pem", 0.001, domain_size=1000, epsilon=4.0)
    assert math.sqrt(pem_variance(PEMParams(4.0), [n / 1000], n, n // 10)[0]) / n == pytest.approx(0.001, rel=1e-3)


# ------------------------------------------------------------------------------------------ pem-discover
@pytest.fixture(scope="module")
def report_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pem")
    batch = PEMEncoder(PARAMS).encode_batch(np.repeat(np.arange(4), [12000, 8000, 5000, 3000]), rng=1,
                                            candidates=WORDS)
    (d / "a.bin").write_bytes(batch.to_bytes())
    lines = [r.to_json() for r in batch.reports()][:3000]
    lines[0] = lines[0].replace('"group":', '"group":9')  # a group out of range
    lines[1] = "{not json"
    (d / "b.jsonl").write_text("\n".join(lines) + "\n")
    return d


def test_pem_discover_from_reports_and_aggregates(capsys, report_files):
    d = report_files
    opts = [f"--param={k}={json.dumps(v)}" for k, v in PARAMS.to_dict().items()]
    out = run_json(capsys, "pem-discover", "--reports", str(d / "a.bin"), str(d / "b.jsonl"), *opts,
                   "--save", str(d / "agg.bin"), "--json")
    assert [r["item"] for r in out["estimates"]] == WORDS
    assert out["n"] == 28000 + 2998 and sum(out["rejected"].values()) == 2 and out["privacy"]["epsilon"] == 4.0
    assert [r["bits"] for r in out["rounds"]] == [8, 16, 24, 32, 40] and out["rounds"][-1]["kept"] == 4
    again = run_json(capsys, "pem-discover", "--aggregate", str(d / "agg.bin"), "--json")
    assert again["estimates"] == out["estimates"]
    assert PEMAggregate.from_bytes((d / "agg.bin").read_bytes()).n == out["n"]
    pruned = run_json(capsys, "pem-discover", "--aggregate", str(d / "agg.bin"), "--alphabet", "helowrdisuny",
                      "--top-k", "6", "--json")
    assert [r["item"] for r in pruned["estimates"]] == WORDS and pruned["rounds"][0]["candidates"] == 12
    untested = run_json(capsys, "pem-discover", "--aggregate", str(d / "agg.bin"), "--alpha", "0",
                        "--false-prefixes", "0", "--top-k", "6", "--json")
    assert len(untested["estimates"]) == 6 and untested["rounds"][0]["threshold"] is None
    assert main(["pem-discover", "--aggregate", str(d / "agg.bin"), "--csv", "--all"]) == 0
    csv = capsys.readouterr().out.splitlines()
    assert csv[0] == "item,count,std_error,ci_low,ci_high,fraction,detected" and len(csv) > 100
    assert main(["pem-discover", "--reports", str(d / "b.jsonl"), *opts]) == 0
    text = capsys.readouterr().out
    assert text.startswith("2998 reports (2 rejected: ") and "PEM discovery: 8 bits:" in text


def test_pem_discover_bad_input(capsys, report_files, tmp_path):
    d = report_files
    opts = [f"--param={k}={json.dumps(v)}" for k, v in PARAMS.to_dict().items()]
    assert "not both" in run_error(capsys, "pem-discover", "--aggregate", str(d / "a.bin"), *opts)
    assert "need --aggregate" in run_error(capsys, "pem-discover")
    assert "--param" in run_error(capsys, "pem-discover", "--reports", str(d / "a.bin"), "--param", "max_length=5")
    other = [o.replace("epsilon=4.0", "epsilon=3") for o in opts]
    assert "wrong_fingerprint" in run_error(capsys, "pem-discover", "--reports", str(d / "a.bin"), *other)
    assert "--top-k" in run_error(capsys, "pem-discover", "--reports", str(d / "a.bin"), *opts, "--top-k", "0")
    assert "--alpha" in run_error(capsys, "pem-discover", "--reports", str(d / "a.bin"), *opts, "--alpha", "nan")
    from ldp.decoders.randomized_response import GRRAggregate
    from ldp.encoders.randomized_response import GRRParams

    (tmp_path / "grr.agg").write_bytes(GRRAggregate(GRRParams(2.0, 4)).to_bytes())
    assert "not PEM" in run_error(capsys, "pem-discover", "--aggregate", str(tmp_path / "grr.agg"))
    (tmp_path / "junk.agg").write_bytes(b"LDPA\x01junk")
    assert str(tmp_path / "junk.agg") in run_error(capsys, "pem-discover", "--aggregate", str(tmp_path / "junk.agg"))


# ------------------------------------------------------------------------------------------ end to end
def test_spec_metric_from_the_client_through_aggregate_to_decode(capsys, tmp_path):
    from ldp.client.runtime import TelemetryClient
    from ldp.spec import CollectionSpec

    doc = {"spec_version": 1, "name": "words", "budget": {"per_window": 100000, "lifetime": 1000000},
           "upload": {"min_interval_seconds": 0, "max_batch": 100000},
           "metrics": {"word": {"protocol": "pem", "params": {"epsilon": 4.0, "max_length": 3, "top_k": 8},
                                "budget": {"per_report": 4}}}}
    (tmp_path / "spec.json").write_text(json.dumps(doc))
    spec = CollectionSpec.load(tmp_path / "spec.json")
    values = ["cat"] * 1500 + ["dog"] * 1000 + ["ox"] * 600 + ["emu", "yak", "gnu"] * 30
    with TelemetryClient(spec, tmp_path / "state.db", rng=1, simulation=True) as client:
        client.record_many([("word", v) for v in values])
        with pytest.raises(ValueError, match="over max_length"):
            client.record("word", "horse")  # refused before any charge
        assert client.spent("word", "lifetime").epsilon == pytest.approx(4.0 * len(values))
        lines = [item.line for item in client.pending()]
    lines.append(lines[0].replace('"y":', '"y":9999'))  # out of range: rejected with its reason
    (tmp_path / "up.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main(["aggregate", str(tmp_path / "up.jsonl"), "--spec", str(tmp_path / "spec.json"), "--out", str(out),
                 "-q"]) == 0
    assert len((out / "rejects.jsonl").read_text().splitlines()) == 1
    [agg_file] = sorted((out / "aggregates").glob("word.*.agg"))
    est = run_json(capsys, "decode", str(agg_file), "--spec", str(tmp_path / "spec.json"), "--json")
    assert est["protocol"] == "pem" and est["n"] == len(values)
    assert [r["item"] for r in est["estimates"]][:3] == ["cat", "dog", "ox"]
    assert est["estimates"][0]["ci_low"] <= 1500 <= est["estimates"][0]["ci_high"]
    assert main(["decode", str(agg_file), "--spec", str(tmp_path / "spec.json")]) == 0
    assert "metric word (pem" in capsys.readouterr().out
    found = run_json(capsys, "pem-discover", "--aggregate", str(agg_file), "--json")
    assert [r["item"] for r in found["estimates"]][:3] == ["cat", "dog", "ox"]


# ------------------------------------------------------------------------------------------ oracles
def test_simulate_and_plan_follow_the_oracle_choice(capsys):
    """oracle=auto through --param: GRR in the first group, named in the notes; the last group stays OLH, so
    the plan's numbers are OLH's; the round shares use each group's oracle (GRR's cutoff is the lower)."""
    from ldp.plan.pem import pem_round_shares

    argv = ["simulate", "--protocol", "pem", "--epsilon", "6", "--param", "max_length=3", "--param", "oracle=auto",
            "--d", "12", "--n", "20000", "--trials", "3", "--seed", "3", "--json"]
    out = run_json(capsys, *argv)
    assert out["params"]["oracle"] == "auto" and out["summary"]["recall@10"] == 1.0
    assert out["summary"]["false_strings_mean"] == 0 and "oracles by group: GRR, OLH×2" in " ".join(out["notes"])
    plan = run_json(capsys, "plan", "pem", "--epsilon", "6", "--param", "oracle=auto", "--n", "1e6", "--d", "1000",
                    "--json")[0]
    olh = run_json(capsys, "plan", "pem", "--epsilon", "6", "--n", "1e6", "--d", "1000", "--json")[0]
    assert plan["min_detectable_fraction"] == olh["min_detectable_fraction"]
    assert "oracles by group: GRR, OLH×9 (oracle='auto')" in plan["notes"]
    auto, plain = pem_round_shares(PEMParams(6.0, oracle="auto"), 1e5), pem_round_shares(PEMParams(6.0), 1e5)
    assert [r["oracle"] for r in auto] == ["grr"] + ["olh"] * 9 and auto[0]["share"] < plain[0]["share"]
    assert auto[1:] == plain[1:] and auto[0]["candidates"] == 256 and auto[1]["candidates"] == 32 << 8
