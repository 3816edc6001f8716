"""Progress bars of the scripts in ``simulations/`` (issue 17 item 5): a tqdm bar on stderr when
stderr is a terminal, none when it is not or under ``-q``, and never in the result on stdout.

The scripts run in subprocesses, with stderr either a pipe or a pseudo-terminal. The benchmark
runs one trivial section registered for the test, so that it takes well under a second."""

from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from support import ROOT

pty = pytest.importorskip("pty")  # POSIX only
pytest.importorskip("tqdm")

BENCHMARK = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("benchmark_script", {str(ROOT / "simulations" / "benchmark.py")!r})
module = importlib.util.module_from_spec(spec)
sys.modules["benchmark_script"] = module
spec.loader.exec_module(module)
module.benchmark("noop")(lambda ctx: {{"value": 1}})
sys.exit(module.main(["--only", "noop", "--quick", "--no-pin", *sys.argv[1:]]))
"""


def run(args: list[str], tty: bool, tmp_path: Path) -> tuple[str, str]:
    """Run ``python args...``; returns (stdout, stderr). With ``tty``, stderr is a pseudo-terminal
    of 100 columns (stdout stays a file either way)."""
    out = tmp_path / "stdout"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    with open(out, "w+b") as stdout:
        if not tty:
            proc = subprocess.run([sys.executable, *args], stdout=stdout, stderr=subprocess.PIPE, env=env,
                                  timeout=120, cwd=tmp_path)
            err = proc.stderr
        else:
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
            child = subprocess.Popen([sys.executable, *args], stdout=stdout, stderr=slave, env=env, cwd=tmp_path)
            os.close(slave)
            chunks = []
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            os.close(master)
            child.wait(timeout=120)
            proc = subprocess.CompletedProcess(child.args, child.returncode)
            err = b"".join(chunks)
        assert proc.returncode == 0, err.decode(errors="replace")
        stdout.seek(0)
        return stdout.read().decode(), err.decode(errors="replace")


def has_bar(stderr: str, desc: str) -> bool:
    """A tqdm bar was drawn: its description followed by the counts, redrawn with carriage returns."""
    return f"{desc}:" in stderr and "\r" in stderr


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "terminal"])
def test_planner_figures_bar_only_on_a_terminal(tmp_path, tty):
    args = [str(ROOT / "simulations" / "planner_figures.py"), "--quick", "--no-plots", "--figures", "grr_vs_d",
            "--out", str(tmp_path / "out")]
    stdout, stderr = run(args, tty, tmp_path)
    assert has_bar(stderr, "planner_figures") is tty, stderr
    assert "\r" not in stdout and "planner_figures:" not in stdout
    assert (tmp_path / "out" / "grr_vs_d.csv").exists()
    if tty:  # -q: no bar even on a terminal
        _, quiet = run([*args, "-q"], True, tmp_path)
        assert not has_bar(quiet, "planner_figures"), quiet


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "terminal"])
def test_benchmark_json_unchanged_and_bar_only_on_a_terminal(tmp_path, tty):
    stdout, stderr = run(["-c", BENCHMARK], tty, tmp_path)
    result = json.loads(stdout)  # the whole of stdout is the one JSON object
    assert result["results"]["noop"]["value"] == 1 and result["all_targets_met"]
    assert has_bar(stderr, "benchmark") is tty, stderr
    assert "[noop] done in" in stderr  # the log lines stay, above the bar on a terminal
    if tty:
        quiet_out, quiet = run(["-c", BENCHMARK, "-q"], True, tmp_path)
        assert not has_bar(quiet, "benchmark") and "[noop] done in" in quiet, quiet
        assert json.loads(quiet_out).keys() == result.keys()
