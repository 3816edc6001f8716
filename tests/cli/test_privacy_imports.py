"""What ``ldp privacy`` loads and how it starts OpenBLAS (issue 88, item 7: a year of windows in at most 1 s of user
CPU, start included), checked structurally in fresh interpreters, never by time.

* the parser of every command is built without numpy, so numpy is first loaded by the handler, after
  :func:`ldp.cli.command._limit_blas_threads` has set its thread count; without ``--shuffled`` it is not loaded at
  all;
* the figures over windows load neither ``scipy.stats`` nor ``scipy.signal`` (``ldp.privacy.light_scipy`` calls the
  same Boost functions and FFTs: the two imports cost about 1 s of CPU), nor ``dp_accounting``, scikit-learn or pandas;
* run as the command, ``ldp privacy`` starts OpenBLAS with one thread (every other thread spins about 0.1 s of CPU
  waiting for work: 0.2 s of the 0.6 s the year took), unless the user set a thread count; ``main(argv)`` called in
  a host process leaves the environment alone.

Each fails when broken: numpy imported at the top of a command module (``numpy_before_handler``), ``scipy.stats``
imported again by the privacy layer (``heavy``), ``blas_threads`` dropped from ``privacy``'s parser or the limit
applied in-process or over the user's variable (``env``, ``openblas``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ldp.cli.command import BLAS_THREAD_VARIABLES

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("scipy.stats", "scipy.signal", "dp_accounting", "sklearn", "pandas")
"""Modules the privacy figures must not load."""
YEAR_LIKE = ["privacy", "grr", "--epsilon", "4", "--d", "10", "--shuffled", "1000", "--windows", "2"]
"""The year's command at a small n and two windows: the same path (k-RR's blanket, the clone pair's law, the laws
composed) in about 0.3 s."""

_CODE = r"""
import contextlib, io, json, os, sys
mode, heavy, argv = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
from ldp.cli.command import main, make_parser
make_parser().parse_args(argv)
numpy_before_handler = "numpy" in sys.modules
sys.argv = ["ldp", *argv]
with contextlib.redirect_stdout(io.StringIO()):
    status = main() if mode == "command" else main(argv)
pools = []
if "numpy" in sys.modules:
    from threadpoolctl import threadpool_info
    pools = sorted({p["num_threads"] for p in threadpool_info() if p["internal_api"] == "openblas"})
print(json.dumps({"status": status, "numpy_before_handler": numpy_before_handler, "numpy": "numpy" in sys.modules,
                  "heavy": sorted(m for m in heavy if m in sys.modules),
                  "env": os.environ.get("OPENBLAS_NUM_THREADS"), "openblas": pools}))
"""


def _run(argv: list[str], mode: str = "command", **env: str) -> dict[str, Any]:
    """``argv`` run by ``main()`` as the command (``mode="command"``: it reads ``sys.argv``) or by ``main(argv)``,
    in a fresh interpreter whose environment has none of the BLAS thread variables but ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    res = subprocess.run([sys.executable, "-c", _CODE, mode, ",".join(HEAVY), *argv], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env={**clean, **env})
    assert res.returncode == 0, res.stderr
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


@pytest.fixture(scope="module")
def year_like() -> dict[str, Any]:
    return _run(YEAR_LIKE)


def test_numpy_is_loaded_by_the_handler_not_the_parser(year_like):
    assert year_like["status"] == 0
    assert year_like["numpy_before_handler"] is False
    assert year_like["numpy"] is True


def test_the_figures_over_windows_load_no_heavy_scipy(year_like):
    assert year_like["heavy"] == []


def test_the_command_starts_openblas_with_one_thread(year_like):
    assert year_like["env"] == "1"
    assert set(year_like["openblas"]) <= {1}  # every OpenBLAS loaded (numpy's, scipy's) on one thread


def test_without_shuffling_numpy_is_not_loaded():
    out = _run(["privacy", "grr", "--epsilon", "4", "--d", "10"])
    assert out["status"] == 0 and out["numpy"] is False and out["heavy"] == []


@pytest.mark.parametrize("mode, env", [("command", {"OMP_NUM_THREADS": "2"}), ("in-process", {})],
                         ids=["the user's thread count stands", "main(argv) leaves the environment alone"])
def test_the_thread_count_is_set_only_for_the_command_and_only_when_unset(mode, env):
    out = _run(YEAR_LIKE, mode, **env)
    assert out["status"] == 0 and out["env"] is None
