"""rappor-ngrams everywhere the other protocols are: `ldp simulate`, the planner (`ldp plan`, agreeing with
simulation), and `ldp ngrams-discover` (output, errors in the house contract, a fuzz of its options)."""

import argparse
import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ldp.cli.command as cli
from ldp.cli.rappor_ngrams import add_ngrams_arguments, ngrams_command, ngrams_params
from ldp.decoders.rappor_ngrams import RapporNgramsAggregate
from ldp.encoders.rappor_ngrams import RapporNgramsEncoder, RapporNgramsParams
from ldp.plan.rappor_ngrams import (
    detectable_grid,
    ngrams_default_params,
    ngrams_detectable_share,
    ngrams_pass_probability,
)
from ldp.simulation.collect import accuracy, from_counts, zipf
from ldp.simulation.rappor_ngrams import ngram_candidates, ngrams_accuracy

SMALL = ngrams_default_params(8.0, max_length=4, alphabet="abcd")  # 2 positions, 21 possible n-grams each
TRUTH = {"abcd": 1500, "dcba": 900, "bad": 600}


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    """`ldp ngrams-discover` in `ldp.cli.command`: as registered there, or added here until it is."""
    sub = next(a for a in cli.make_parser()._actions if isinstance(a, argparse._SubParsersAction))
    if "ngrams-discover" in sub.choices:
        return
    make, run = cli.make_parser, cli._run

    def make_parser():
        parser = make()
        add_ngrams_arguments(next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)))
        return parser

    monkeypatch.setattr(cli, "make_parser", make_parser)
    monkeypatch.setattr(cli, "_run", lambda args: ngrams_command(args) if args.command == "ngrams-discover"
                        else run(args))


def run_json(capsys, *argv):
    assert cli.main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def run_error(capsys, *argv) -> str:
    """The last stderr line of a command that fails as bad input (status 2, argparse's too)."""
    try:
        status = cli.main(list(argv))
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    last = err.rstrip("\n").split("\n")[-1]
    assert last.startswith(f"ldp {argv[0]}: error: ")
    return last


def param_options(params: RapporNgramsParams) -> list[str]:
    return [f"--param={k}={json.dumps(v)}" for k, v in params.to_dict().items()]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ngrams")
    agg = RapporNgramsAggregate.simulate(SMALL, TRUTH, np.random.default_rng(1))
    (d / "a.agg").write_bytes(agg.to_bytes())
    words = list(TRUTH)
    batch = RapporNgramsEncoder(SMALL, simulation=True).encode_batch(
        np.repeat(np.arange(3), list(TRUTH.values())), rng=2, candidates=words)
    (d / "r.bin").write_bytes(batch.to_bytes())
    lines = [r.to_json() for r in itertools.islice(batch.reports(), 200)]
    (d / "r.jsonl").write_text("\n".join([*lines, '{"protocol": "nope"}', "not json"]) + "\n")
    from ldp.decoders.pem import PEMAggregate
    from ldp.encoders.pem import PEMParams

    (d / "pem.agg").write_bytes(PEMAggregate(PEMParams(4.0)).to_bytes())
    return d


# ------------------------------------------------------------------------------------------ simulate
def test_simulate_rappor_ngrams_gives_recall_false_strings_and_errors_against_theory(capsys):
    argv = ["simulate", "--protocol", "rappor-ngrams", *param_options(SMALL), "--d", "6", "--n", "6000",
            "--trials", "3", "--seed", "3", "--json"]
    out = run_json(capsys, *argv)
    s = out["summary"]
    assert out["protocol"] == "rappor-ngrams" and s["n"] == 6000 and s["trials"] == 3
    items = [r["item"] for r in out["items"]]
    assert items == ngram_candidates(SMALL, 6) and all(len(w) == 4 and set(w) <= set("abcd") for w in items)
    assert s["recall@6"] >= 0.5 and s["false_strings_max"] == 0 and out["items"][0]["detected"] == 1.0
    assert s["rmse_count"] == pytest.approx(s["theoretical_rmse_count"], rel=0.6)
    assert run_json(capsys, *argv) == out  # same seed, same result
    assert cli.main(argv[:-1]) == 0
    text = capsys.readouterr().out
    assert "detected" in text.splitlines()[1] and "discovery: recall@6 " in text and " false (at most 0)" in text


def test_ngrams_accuracy_both_paths_and_estimates_against_their_variance():
    pop = from_counts([3000, 1200, 800], ["abcd", "dcba", "bad"])
    for method in ("aggregate", "per_report"):
        res = ngrams_accuracy(SMALL, pop, 5000, trials=4, rng=5, method=method, max_maps=300)
        assert res.items == ["abcd", "dcba", "bad"] and res.summary()["recall@3"] >= 2 / 3
        assert res.false_strings.max() == 0 and res.detected[0] == 1.0
        z = np.abs(res.mean_estimate - res.true_count) / (res.theoretical_sd / 2)
        assert np.all(z < 4.5) and np.all(res.empirical_sd < 2.5 * res.theoretical_sd)
    assert accuracy(SMALL, zipf(3), 2000, trials=1, rng=1).items == ngram_candidates(SMALL, 3)


def test_ngram_candidates_are_fixed_distinct_full_length_strings():
    a = ngram_candidates(SMALL, 50)
    assert a == ngram_candidates(SMALL, 50) and len(set(a)) == 50 and {len(w) for w in a} == {4}
    wide = ngrams_default_params(8.0)
    b = ngram_candidates(wide, 30)
    assert len(set(b)) == 30 and all(len(w) == 6 and w.isalpha() for w in b)
    with pytest.raises(ValueError, match="fewer than d=257"):
        ngram_candidates(SMALL, 257)


def test_simulate_rappor_ngrams_bad_input(capsys):
    base = ["simulate", "--protocol", "rappor-ngrams", "--n", "1000", "--trials", "1"]
    assert "give --d" in run_error(capsys, *base, *param_options(SMALL))
    assert "fewer than d=300" in run_error(capsys, *base, *param_options(SMALL), "--d", "300")
    assert "rappor-ngrams parameters" in run_error(capsys, *base, "--d", "3", "--param", "n=2")
    pop = from_counts([10, 10], ["abcdabcd", "ab"])
    with pytest.raises(ValueError, match="over max_length=4"):  # the client's check
        ngrams_accuracy(SMALL, pop, 20, trials=1)
    with pytest.raises(ValueError, match="within max_length"):  # truncated strings would not be the truth
        ngrams_accuracy(RapporNgramsParams.from_dict({**SMALL.to_dict(), "truncate": True}), pop, 20, trials=1)


def test_ngrams_params_from_epsilon_and_params():
    ns = argparse.Namespace
    p = ngrams_params(ns(epsilon=6.0, param=[("max_length", 4), ("alphabet", "abc"), ("num_cohorts", 8)]))
    assert (p.max_length, p.alphabet, p.num_cohorts, p.f) == (4, "abc", 8, 0.0)
    assert p.privacy_cost.epsilon == pytest.approx(6.0)
    assert ngrams_params(ns(epsilon=None, param=list(SMALL.to_dict().items()))) == SMALL
    with pytest.raises(ValueError, match="rappor-ngrams parameters"):
        ngrams_params(ns(epsilon=None, param=[("n", 2)]))
    with pytest.raises(ValueError, match="unknown RapporNgramsParams parameters"):
        ngrams_params(ns(epsilon=4.0, param=[("nope", 2)]))


# ------------------------------------------------------------------------------------------ plan
def test_planner_defaults_cost_epsilon_and_plan_reports_the_detectable_share(capsys):
    p = ngrams_default_params(8.0)
    assert p.privacy_cost.epsilon == pytest.approx(8.0) and p.full.epsilon_one == pytest.approx(4.0)
    out = run_json(capsys, "plan", "rappor-ngrams", "--epsilon", "8", "--n", "1e5", "--d", "10", "--json",
                   "--reports", "3")[0]
    assert out["protocol"] == "rappor-ngrams" and out["report_bits"] == 6 + 32 + 6 + 2 + 2 + 32 + 32
    share = ngrams_detectable_share(p, 100_000, candidates=10)
    assert out["min_detectable_fraction"] == pytest.approx(share) and 0.01 < share < 0.5
    assert out["epsilon_per_report"]["epsilon"] == pytest.approx(8.0)
    assert out["epsilon_per_value"]["epsilon"] == pytest.approx(24.0)  # f = 0: no PRR cap, 3 × 8
    assert any("found = all tests pass" in note for note in out["notes"])


def test_detectable_share_falls_with_n_and_epsilon_and_rises_with_length():
    grid = {(r["n"], r["epsilon"], r["max_length"]): r["detectable_share"]
            for r in detectable_grid([10**4, 10**5], [6.0, 10.0], [4, 6], alphabet="abcd", candidates=10)}
    for eps in (6.0, 10.0):
        for length in (4, 6):
            assert grid[(10**5, eps, length)] < grid[(10**4, eps, length)]
    for n in (10**4, 10**5):
        for length in (4, 6):
            assert grid[(n, 10.0, length)] < grid[(n, 6.0, length)]
        assert grid[(n, 10.0, 6)] > grid[(n, 10.0, 4)]  # more positions: fewer clients per pair, more tests
    probs = ngrams_pass_probability(SMALL, 5000, 0.9, candidates=5)
    assert set(probs) == {"screen 0", "screen 1", "pair 0,1", "string", "found"} and probs["found"] > 0.99
    assert math.isinf(ngrams_detectable_share(ngrams_default_params(0.5, max_length=4, alphabet="abcd"), 50))


def test_planned_share_is_found_in_simulation_with_at_least_the_planned_power():
    """The string at the planner's detectable share is found in ≥ `power` of the runs (the other users spread
    over 20 other strings, as the planner assumes)."""
    params = ngrams_default_params(12.0, max_length=4, alphabet="abcd")
    n, others, power, runs = 5000, 20, 0.5, 8
    share = ngrams_detectable_share(params, n, power=power, candidates=others + 1)
    assert 0.02 < share < 0.2
    words = ngram_candidates(params, others + 1)
    counts = [round(share * n)] + [(n - round(share * n)) // others] * others
    gen = np.random.default_rng(0)
    found = [words[0] in RapporNgramsAggregate.simulate(params, counts, gen, values=words).discover(
        rng=gen, max_maps=300).strings.items for _ in range(runs)]
    assert np.mean(found) >= power


# ------------------------------------------------------------------------------------------ ngrams-discover
def test_discover_from_an_aggregate_prints_reports_grams_candidates_and_strings(capsys, files):
    assert cli.main(["ngrams-discover", "--aggregate", str(files / "a.agg")]) == 0
    text = capsys.readouterr().out
    assert text.startswith("3000 reports read, 0 rejected\n")
    assert "n-grams kept at position 0:" in text and "n-grams kept at position 1:" in text
    assert "significant n-gram pairs per position pair: 0,1:" in text and "candidate strings: " in text
    assert "abcd" in text and "strings discovered" in text
    out = run_json(capsys, "ngrams-discover", "--aggregate", str(files / "a.agg"), "--json")
    assert out["reports"] == 3000 and out["rejected"] == {} and len(out["grams"]) == 2
    assert [e["item"] for e in out["estimates"]][:1] == ["abcd"] and set(out["candidates"]) >= {"abcd"}
    assert all(len(cell) == 3 for cell in out["pairs"]["0,1"]) and out["summary"]["detected"] >= 1
    assert cli.main(["ngrams-discover", "--aggregate", str(files / "a.agg"), "--csv", "--all"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("item,count,std_error") and len(rows) - 1 == len(out["candidates"])


def test_discover_from_reports_counts_rejects_and_saves(capsys, files, tmp_path):
    save = tmp_path / "saved.agg"
    out = run_json(capsys, "ngrams-discover", "--reports", str(files / "r.bin"), str(files / "r.jsonl"),
                   *param_options(SMALL), "--save", str(save), "--json", "--seed", "1")
    assert out["reports"] == 3200 and sum(out["rejected"].values()) == 2
    again = run_json(capsys, "ngrams-discover", "--aggregate", str(save), "--json", "--seed", "1")
    assert again == out


def test_discover_errors_keep_the_house_contract(capsys, files):
    agg = str(files / "a.agg")
    assert "not both" in run_error(capsys, "ngrams-discover", "--aggregate", agg, "--param", "n=2")
    assert "need --aggregate" in run_error(capsys, "ngrams-discover")
    assert "not rappor-ngrams" in run_error(capsys, "ngrams-discover", "--aggregate", str(files / "pem.agg"))
    assert "rappor-ngrams parameters" in run_error(capsys, "ngrams-discover", "--reports", str(files / "r.bin"),
                                                   "--param", "n=2")
    other = ngrams_default_params(8.0, max_length=4, alphabet="abce")
    assert "no valid reports" in run_error(capsys, "ngrams-discover", "--reports", str(files / "r.bin"),
                                           *param_options(other))
    assert "--alpha" in run_error(capsys, "ngrams-discover", "--aggregate", agg, "--alpha", "1")
    assert "max_candidates" in run_error(capsys, "ngrams-discover", "--aggregate", agg, "--max-candidates", "1",
                                         "--pair-alpha", "0.5", "--gram-alpha", "0.5")


VALUES = st.sampled_from(["0", "-1", "1", "2", "0.5", "0.05", "1e400", "nan", "inf", "", "abc", "1e6", "7"])


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_ngrams_discover_options(files, data, capsys):
    """Any mix of the options: status 0, or 2 with one `ldp ngrams-discover: error:` line last, no traceback."""
    spec = {"--alpha": VALUES, "--gram-alpha": VALUES, "--pair-alpha": VALUES, "--max-grams": VALUES,
            "--max-candidates": VALUES, "--max-maps": st.sampled_from(["1", "5", "0", "x", "-2"]),
            "--se": st.sampled_from(["auto", "information", "x"]), "--seed": VALUES,
            "--confidence": VALUES, "--all": st.none(), "--json": st.none(), "--csv": st.none(),
            "--param": st.sampled_from(["n=2", "alphabet=\"ab\"", "x", "max_length=5"])}
    chosen = data.draw(st.lists(st.sampled_from(sorted(spec)), unique=True, max_size=5), label="options")
    argv = ["ngrams-discover", "--aggregate", str(files / "a.agg")]
    for name in chosen:
        value = data.draw(spec[name], label=name)
        argv += [name] if value is None else [name, value]
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status in (0, 2) and "Traceback" not in err, (argv, status, err)
    if status == 2:
        lines = err.rstrip("\n").split("\n")
        assert lines[-1].startswith("ldp ngrams-discover: error: "), (argv, err)
        assert sum(line.startswith("ldp ngrams-discover: error:") for line in lines) == 1
