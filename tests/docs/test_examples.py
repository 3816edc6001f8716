"""The example files of ``examples/``: regenerating them gives the same bytes, they stay small, and
every shell block of the README and of docs/cli.md that uses them runs as written from a copy of
the repository's ``examples/`` (``ldp`` run as ``python -m ldp``)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

EXAMPLES = ROOT / "examples"
GENERATED = ("rappor/params.csv", "rappor/counts.csv", "rappor/map.csv", "rappor/truth.csv", "reports.jsonl")
PAGES = (ROOT / "README.md", ROOT / "docs" / "cli.md")
MAX_BYTES = 200_000


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def test_regenerating_the_examples_gives_the_same_bytes(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, str(EXAMPLES / "make_examples.py"), str(tmp_path)], capture_output=True,
                         text=True, env=_env(), timeout=120)
    assert res.returncode == 0, res.stderr
    for name in GENERATED:
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes(), \
            f"examples/{name} is stale: run python examples/make_examples.py"


def test_the_examples_are_small() -> None:
    total = sum(p.stat().st_size for p in EXAMPLES.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert total < MAX_BYTES, f"examples/ holds {total:,} bytes"


def _example_commands(page: Path) -> list[str]:
    """The ``ldp`` lines of the page's sh blocks that use the example files."""
    blocks = re.findall(r"```sh\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    return [line for b in blocks if "examples/rappor" in b or "examples/reports.jsonl" in b
            for line in b.splitlines() if line.startswith("ldp ")]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_example_commands_run_as_written(page: Path, tmp_path: Path) -> None:
    commands = _example_commands(page)
    assert len(commands) >= 3, f"{page.name} should show the example commands"
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    ldp = f"{shlex.quote(sys.executable)} -m ldp"
    outputs = []
    for command in commands:
        res = subprocess.run(ldp + command[len("ldp"):], shell=True, capture_output=True, text=True,  # globs
                             cwd=tmp_path, env=_env(), timeout=120)
        assert res.returncode == 0, f"{command}\n{res.stderr}"
        outputs.append(res.stdout)
    text = "\n".join(outputs)
    assert "www.site1.example" in text  # rappor-decode finds the most common site
    assert "aggregated: 600; rejected: 2" in text  # the aggregate job sets the two damaged lines aside
