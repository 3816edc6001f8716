"""``ldp collect`` for the operator (issue 84, item 6): the example two-aggregator spec validates and makes tasks with
the commands docs/two-aggregators.md §3 shows, a metric the spec lacks is named with the ones it has, and a leader
that does not answer is named with its URL."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
from pathlib import Path

import pytest
from support import ROOT, call_main

DOC = ROOT / "docs" / "two-aggregators.md"


def _prio() -> None:
    from ldp import prio

    if not prio.available():
        pytest.skip("the Prio3 binding is not built")


def _section(number: int) -> str:
    text = DOC.read_text(encoding="utf-8")
    return re.search(rf"^## {number}\. .*?(?=^## )", text, re.S | re.M).group(0)  # type: ignore[union-attr]


def _commands(section: str) -> list[str]:
    """The ``ldp`` commands of the section's sh blocks, continuation lines joined."""
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    lines = [line.split("#")[0].strip() for b in blocks for line in b.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line.startswith("ldp ")]


def test_the_example_spec_validates_and_makes_tasks_as_the_doc_shows(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _prio()
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "two_aggregators.json", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    assert call_main(["collect", "keygen", "--out", "collector-hpke.json"])[0] == 0
    commands = _commands(_section(3))
    assert [c.split()[:3] for c in commands] == [["ldp", "spec", "validate"], ["ldp", "collect", "task"]]
    assert "examples/two_aggregators.json" in commands[0] and "examples/two_aggregators.json" in commands[1]
    for command in commands:
        code, out, err = call_main(shlex.split(command)[1:])
        assert code == 0, f"{command}: {err}"
    task = json.loads((tmp_path / "search_engine.task.json").read_text())
    assert task["vdaf"] == {"type": "Prio3Histogram", "draft": 18, "length": 4, "chunk_length": 2}
    assert task["reports_per_window"] == 1 and task["central"] == {"epsilon": 4.0, "delta": 1e-8}
    code, out, err = call_main([*shlex.split(commands[1])[1:-4], "--metric", "crashed", "--out", "crashed.task.json"])
    assert code == 0, err
    assert "a device sends up to 2 report(s) a window" in out
    assert json.loads((tmp_path / "crashed.task.json").read_text())["local"]["protocol"] == "rr"


def test_a_metric_the_spec_lacks_is_named_with_the_ones_it_has(tmp_path: Path) -> None:
    _prio()
    assert call_main(["collect", "keygen", "--out", str(tmp_path / "k.json")])[0] == 0
    code, _, err = call_main(["collect", "task", "--spec", str(ROOT / "examples" / "two_aggregators.json"),
                              "--metric", "nosuch", "--leader", "http://l", "--helper", "http://h",
                              "--collector-key", str(tmp_path / "k.json"), "--min-batch-size", "10",
                              "--out", str(tmp_path / "t.json")])
    assert code == 2 and "internal error" not in err
    assert "no metric 'nosuch'" in err and "its metrics: crashed, search_engine" in err
    assert not (tmp_path / "t.json").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_leader_that_does_not_answer_is_named_with_its_url(tmp_path: Path) -> None:
    _prio()
    from ldp.aggregators.config import write_secret

    key = str(tmp_path / "k.json")
    url = f"http://127.0.0.1:{_free_port()}"  # bound and closed: nothing listens there
    assert call_main(["collect", "keygen", "--out", key])[0] == 0
    assert call_main(["collect", "task", "--spec", str(ROOT / "examples" / "two_aggregators.json"), "--metric",
                      "search_engine", "--leader", url, "--helper", "http://h", "--collector-key", key,
                      "--min-batch-size", "10", "--out", str(tmp_path / "t.json")])[0] == 0
    write_secret(tmp_path / "token", "a-token\n")
    code, _, err = call_main(["collect", "--task", str(tmp_path / "t.json"), "--key", key, "--token-file",
                              str(tmp_path / "token"), "--window", "2026-11-26"])
    assert code == 2 and "internal error" not in err
    assert f"the leader at {url} did not answer" in err, err


@pytest.mark.parametrize(("vdaf", "draft", "key_bytes"), [("08", 8, 16), ("18", 18, 32)])
def test_the_task_names_its_vdaf_draft_and_the_verify_key_fits_it(tmp_path: Path, vdaf: str, draft: int,
                                                                   key_bytes: int) -> None:
    """Issue 85, item 1: ``ldp collect task --vdaf 08|18`` records the draft, and ``--verify-key`` writes a key of
    that draft's size (VDAF-08's Prio3 keys are 16 bytes)."""
    _prio()
    from ldp.aggregators.config import read_secret
    from ldp.aggregators.task import Task, unb64

    key = str(tmp_path / "k.json")
    assert call_main(["collect", "keygen", "--out", key])[0] == 0
    code, out, err = call_main(["collect", "task", "--spec", str(ROOT / "examples" / "two_aggregators.json"),
                                "--metric", "search_engine", "--leader", "http://l", "--helper", "http://h",
                                "--collector-key", key, "--min-batch-size", "10", "--vdaf", vdaf,
                                "--out", str(tmp_path / "t.json"), "--verify-key", str(tmp_path / "v")])
    assert code == 0, err
    assert f"(VDAF draft {vdaf})" in out
    task = Task.load(tmp_path / "t.json")
    assert task.vdaf_draft == draft and task.prio3().draft == draft
    assert len(unb64(read_secret(tmp_path / "v", "v"), None, "v")) == key_bytes
    code, _, err = call_main(["collect", "task", "--spec", str(ROOT / "examples" / "two_aggregators.json"),
                              "--metric", "search_engine", "--leader", "http://l", "--helper", "http://h",
                              "--collector-key", key, "--min-batch-size", "10", "--vdaf", "9",
                              "--out", str(tmp_path / "u.json")])
    assert code == 2 and "invalid choice: '9'" in err
