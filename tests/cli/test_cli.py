"""The `ldp` command: demo, privacy, simulate (machine-readable output and clear errors)."""

import json
import math
import subprocess
import sys

import pytest
from support import ROOT

from ldp.cli.command import main


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_privacy_rr_forced_response_is_ln3(capsys):
    out = run_json(capsys, "privacy", "rr", "--truth-prob", "0.5", "--yes-prob", "0.5", "--json")
    assert out["epsilon"] == pytest.approx(math.log(3)) and out["params"] == {"p": 0.25, "q": 0.75}
    assert out["delta"] == 0.0 and len(out["fingerprint"]) == 16


def test_privacy_grr_and_generic_params(capsys):
    out = run_json(capsys, "privacy", "grr", "--epsilon", "2", "--d", "8", "--json")
    assert out["epsilon"] == 2.0 and out["p"] == pytest.approx(math.exp(2) / (math.exp(2) + 7))
    out = run_json(capsys, "privacy", "rr", "--param", "p=0.1", "--param", "q=0.6", "--json")
    assert out["epsilon"] == pytest.approx(math.log(6))


def test_simulate_json(capsys):
    out = run_json(capsys, "simulate", "--protocol", "grr", "--epsilon", "1", "--d", "5", "--n", "20000",
                   "--trials", "30", "--seed", "1", "--json")
    assert out["summary"]["n"] == 20000 and len(out["items"]) == 5
    assert out["summary"]["rmse_count"] == pytest.approx(out["summary"]["theoretical_rmse_count"], rel=0.3)
    again = run_json(capsys, "simulate", "--protocol", "grr", "--epsilon", "1", "--d", "5", "--n", "20000",
                     "--trials", "30", "--seed", "1", "--json")
    assert again == out  # same seed, same result


def test_demo_quick_json_is_reproducible_and_covers_every_protocol(capsys):
    a = run_json(capsys, "demo", "--quick", "--n", "300", "--seed", "4", "--json")
    b = run_json(capsys, "demo", "--quick", "--n", "300", "--seed", "4", "--json")
    for part in (a, b, a["regression"], b["regression"]):
        part.pop("seconds", None)
    assert a == b
    assert set(a["estimates"]) == {"dark_mode", "app_category", "homepage", "emoji_cms", "emoji_hcms", "new_words",
                                   "app_category_at_scale", "minutes_histogram"}
    assert len(a["minutes"]["days"]) == 7 and a["minutes"]["protocol"] == "hybrid"
    assert a["words"]["recall_top10"] == 1.0 and a["words"]["false_words"] == 0
    mse = {(r["method"], r["n"]): r["mse"] for r in a["regression"]["rows"]}
    assert mse["local", 100_000] > 100 * mse["adassp", 100_000]  # local DP needs far more users
    covered = [row["covered"] for row in a["estimates"]["emoji_cms"]]
    assert sum(covered) >= 0.8 * len(covered)
    assert a["n_clients"] == 300 and a["reports_refused_by_budget"] == 30
    assert sum(a["rejected"]["app_category"].values()) + sum(a["rejected"]["dark_mode"].values()) == 4
    assert a["privacy"]["per_client_today_max"] <= a["privacy"]["window_cap_all_metrics"]
    assert len(a["estimates"]["app_category"]) == 8


def test_demo_quick_prints_every_question_and_writes_plots(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    assert main(["demo", "--quick", "--n", "100", "--seed", "2", "--plots", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for title in ("Dark mode on?", "app category?", "Homepage URL?", "Which emoji?", "new words",
                  "Linear regression", "100,000,000 users", "Daily minutes of use"):
        assert title in out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["demo-dark-mode.png", "demo-app-category.png", "demo-homepage.png", "demo-emoji-cms.png",
         "demo-emoji-hcms.png", "demo-new-words.png", "demo-app-category-at-scale.png", "demo-regression.png",
         "demo-minutes-histogram.png", "demo-minutes.png"])


@pytest.mark.parametrize("argv, message", [
    (["privacy", "grr", "--epsilon", "-1", "--d", "3"], "epsilon must be finite and > 0"),
    (["privacy", "grr", "--epsilon", "1"], "grr needs --epsilon and --d"),
    (["privacy", "nope"], "unknown protocol"),
    (["simulate", "--protocol", "grr", "--epsilon", "1", "--d", "4", "--population", "pareto"], "unknown population"),
    (["demo", "--n", "3"], "at least 10 clients"),
])
def test_errors_are_clear(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_module_entry_point_help():
    out = subprocess.run([sys.executable, "-m", "ldp", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "demo" in out.stdout and "simulate" in out.stdout


def test_privacy_rappor_prints_both_epsilons(capsys):
    out = run_json(capsys, "privacy", "rappor", "--param", "num_bloombits=16", "--param", "num_hashes=2",
                   "--param", "num_cohorts=64", "--param", "p=0.5", "--param", "q=0.75", "--param", "f=0.5", "--json")
    assert out["epsilon_one"] == pytest.approx(1.0743, abs=1e-4)
    assert out["epsilon_inf"] == pytest.approx(4 * math.log(3))


def test_rappor_decode_reads_google_files_and_aggregates(capsys, tmp_path):
    from ldp.decoders.rappor import RapporAggregate
    from ldp.decoders.rappor_decode import CandidateMap
    from ldp.encoders.rappor import RapporParams

    params = RapporParams(16, 2, 16, 0.25, 0.75, 0.5, mode="google")
    agg = RapporAggregate.simulate(params, {"heavy": 30_000, "medium": 15_000, "light": 100}, rng=1)
    (tmp_path / "params.csv").write_text(params.to_google_csv())
    (tmp_path / "counts.csv").write_text(agg.to_google_counts())
    cands = ["heavy", "medium", "light", "absent"]
    (tmp_path / "map.csv").write_text(CandidateMap.from_candidates(params, cands).to_google_map())
    (tmp_path / "agg.bin").write_bytes(agg.to_bytes())
    (tmp_path / "cands.txt").write_text("\n".join(cands) + "\n")
    google = run_json(capsys, "rappor-decode", "--params", str(tmp_path / "params.csv"), "--counts",
                      str(tmp_path / "counts.csv"), "--map", str(tmp_path / "map.csv"), "--json")
    ours = run_json(capsys, "rappor-decode", "--aggregate", str(tmp_path / "agg.bin"), "--candidates",
                    str(tmp_path / "cands.txt"), "--json")
    assert google["estimates"] == ours["estimates"] and google["summary"]["n"] == 45_100
    detected = {r["item"] for r in ours["estimates"] if r["detected"]}
    assert {"heavy", "medium"} <= detected and "absent" not in detected
    assert main(["rappor-decode", "--aggregate", str(tmp_path / "agg.bin")]) == 2
    assert "exactly one of --map" in capsys.readouterr().err


def test_sfp_discover_from_reports_and_aggregates(capsys, tmp_path):
    import numpy as np

    from ldp.encoders.sfp import SfpEncoder, SfpParams

    params = SfpParams(4.0, 6.0, word_num_hashes=16, word_width=256, fragment_num_hashes=16, fragment_width=256)
    batch = SfpEncoder(params).encode_batch(np.repeat([0, 1, 2], [12000, 8000, 5000]), rng=1,
                                            candidates=["hello", "world", "sunny"])
    (tmp_path / "a.bin").write_bytes(batch.to_bytes())
    lines = [r.to_json() for r in batch.reports()][:3000]
    lines[0] = lines[0].replace('"position":', '"position":9')  # a position out of range (or bad JSON)
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n")
    opts = [f"--param={k}={json.dumps(v)}" for k, v in params.to_dict().items()]
    out = run_json(capsys, "sfp-discover", "--reports", str(tmp_path / "a.bin"), str(tmp_path / "b.jsonl"),
                   *opts, "--save", str(tmp_path / "agg.bin"), "--json")
    assert [r["item"] for r in out["estimates"]] == ["hello", "world", "sunny"]
    assert out["n"] == 25000 + 2999 and sum(out["rejected"].values()) == 1
    assert out["stats"]["discovered"] == 3 and out["privacy"]["epsilon"] == pytest.approx(10.0)
    again = run_json(capsys, "sfp-discover", "--aggregate", str(tmp_path / "agg.bin"), "--json")
    assert again["estimates"] == out["estimates"]
    assert main(["sfp-discover", "--aggregate", str(tmp_path / "agg.bin"), "--top", "50", "--alpha", "0",
                 "--max-candidates", "3"]) == 2
    assert "max_candidates=3" in capsys.readouterr().err
    assert main(["sfp-discover", "--reports", str(tmp_path / "a.bin"), "--param", "word_epsilon=4"]) == 2
    assert "--param" in capsys.readouterr().err
    other = [o.replace("word_epsilon=4.0", "word_epsilon=3") for o in opts]
    assert main(["sfp-discover", "--reports", str(tmp_path / "a.bin"), *other]) == 2
    assert "wrong_fingerprint" in capsys.readouterr().err


def test_spec_validate_is_a_subcommand(capsys):

    example = ROOT / "examples" / "collection.json"
    assert main(["spec", "validate", str(example)]) == 0
    assert "example_app" in capsys.readouterr().out


def test_job_commands_are_subcommands(capsys):
    for command in ("fold", "merge", "decode"):
        with pytest.raises(SystemExit) as exc:
            main([command, "--help"])
        assert exc.value.code == 0 and f"usage: ldp {command}" in capsys.readouterr().out
    assert main(["merge", "/nonexistent.agg", "--out", "/tmp/never-written.agg"]) == 2


def test_the_help_texts_name_every_protocol():
    """The CLI's protocol names (ldp.cli.support) are the registry's, by the kind of population they take."""
    from ldp.cli.support import COUNT_PROTOCOLS, PROTOCOLS_HELP
    from ldp.protocols import client_protocols, protocols_taking

    means, attributes = protocols_taking("numbers"), protocols_taking("attributes")
    assert set(COUNT_PROTOCOLS) | set(means) | set(attributes) == set(client_protocols())
    assert {"duchi", "piecewise", "hybrid", "memo-mean"} <= set(means) and attributes == ("multi",)
    assert all(name in PROTOCOLS_HELP for name in (*COUNT_PROTOCOLS, *means, *attributes))
