"""``ldp simulate --attack`` (issue 31 item 4): a poisoned collection, its damage and what the checks say."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from ldp.cli.command import main


def test_random_reports_are_caught_and_json_keeps_everything(capsys: pytest.CaptureFixture[str]) -> None:
    # 200 fake reports with each of 16 bits 1 with probability 1/2 against OUE (ε = 1): about 200 (8 − 0.5 − 15/(e+1))
    # ≈ 700 more 1s than honest, some 10 honest standard deviations at n = 4,000
    assert main(["simulate", "--protocol", "oue", "--epsilon", "1", "--d", "16", "--n", "4000", "--attack",
                 "random", "--fraction", "0.05", "--seed", "3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["attack"] == "random-report" and doc["fake"] == 200 and doc["detected"] is True
    assert doc["evidence"]["verdict"] == "suspicious"


def test_text_output_and_refusals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--protocol", "grr", "--epsilon", "2", "--d", "8", "--n", "2000", "--attack", "mga",
                 "--targets", "2", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "frequency gain of the targets" in out and "untested" in out
    assert main(["simulate", "--protocol", "duchi", "--epsilon", "1", "--attack", "mga"]) == 2
    assert "--attack is for the frequency protocols" in capsys.readouterr().err


def test_bare_mga_runs_where_the_mga_pads_and_is_refused_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "rappor", "--epsilon", "2", "--d", "16", "--n", "4000", "--attack", "mga-bare",
                 "--targets", "3", "--seed", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["attack"] == "mga-bare" and len(doc["evidence"]["checks"]) == 7
    assert main(["simulate", "olh", "--epsilon", "1", "--d", "16", "--n", "300", "--attack", "mga-bare"]) == 2
    err = capsys.readouterr().err
    assert "no unpadded maximal gain attack is defined for olh; it is for oue, rappor, sue" in err


@settings(max_examples=15, deadline=None)
@given(fraction=st.one_of(st.floats(-1, 2), st.sampled_from(["nan", "inf", "x", "0", "1"])),
       targets=st.one_of(st.integers(-3, 40), st.just("many")))
def test_bad_fraction_or_targets_exit_2(fraction: object, targets: object) -> None:
    """Out-of-range or malformed --fraction/--targets: a usage error (2), never a traceback; valid ones run."""
    args = ["simulate", "--protocol", "oue", "--epsilon", "1", "--d", "16", "--n", "300", "--attack", "random",
            "--fraction", str(fraction), "--targets", str(targets), "--seed", "0"]
    valid = (isinstance(fraction, float) and 0 < fraction < 1 and isinstance(targets, int) and 1 <= targets <= 16)
    code: int | str | None
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    assert code == (0 if valid else 2)
