"""The two-aggregator mode's fault-injection suite (issue 84, item 7), through the cases of
``simulations/aggregator_faults.py``: the padded share, a helper that refuses every report in its answers but counts
them, a helper answering another job, kills before and after every write of either aggregator, and the two stores'
records added job by job. Each case is one JSON line of the script; a promise broken fails it here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.scripts import load_script
from two_aggregators import prio

faults = load_script("aggregator_faults")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("case", [c for c in faults.CASES if c != "kill_at_every_write"])
def test_each_fault_keeps_the_modes_promises(tmp_path: Path, case: str) -> None:
    prio()
    line = faults.CASES[case](tmp_path)
    assert line["ok"], line


@pytest.mark.heavy  # handed out first under xdist (tests/conftest.py)
def test_a_kill_before_or_after_any_write_of_either_aggregator_loses_and_double_counts_nothing(
        tmp_path: Path) -> None:
    prio()
    line = faults.kill_at_every_write(tmp_path)
    assert line["ok"] and line["kills"] > 100, line


def test_the_script_prints_one_json_line_per_case_and_fails_when_a_promise_breaks(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    prio()
    assert faults.main(["--case", "helper_refuses_all"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["case"] == "helper_refuses_all"
    monkeypatch.setitem(faults.CASES, "helper_refuses_all", lambda root: {"ok": False, "why": "broken"})
    assert faults.main(["--case", "helper_refuses_all"]) == 1
    done = subprocess.run([sys.executable, str(ROOT / "simulations" / "aggregator_faults.py"), "--case", "nosuch"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "invalid choice" in done.stderr
