"""Helpers shared by test files in several folders of ``tests/``, importable as ``support`` because
``tests/`` is on ``sys.path`` (``pythonpath`` in ``[tool.pytest.ini_options]``, ``tests/conftest.py``):

* :data:`ROOT`, the repository root (test files never compute it from their own ``__file__``);
* :func:`call_main`, the ``ldp`` command in this process with its outputs as strings;
* ``support.stats``: the family-wise z and repeated simulated counts of the statistical tests;
* ``support.install_lines``: the detector of install lines that name the unrelated ``ldp`` distribution;
* ``support.scripts``: the experiment scripts of ``simulations/`` loaded as modules, and their CSVs;
* ``support.e2e``: a real ``ldp serve`` and the machine's Chromium, for the end-to-end test.
* ``support.load``: busy-looping processes beside a test, as on a loaded machine (:func:`~support.load.cpu_hogs`).

Fixtures shared by several files are in ``tests/conftest.py``."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def call_main(argv: Sequence[str]) -> tuple[int, str, str]:
    """``ldp ARGV`` in this process: (exit status, stdout, stderr); argparse's exits give their code.

    Usable anywhere (module-scoped fixtures, hypothesis tests); in a test function, the ``run_ldp``
    fixture does the same through ``capsys``."""
    from ldp.cli.command import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
    return status, out.getvalue(), err.getvalue()
