"""Start-up section of ``simulations/benchmark.py`` (issue 16, item 2), registered by :func:`register`.

Each figure is the wall time of a fresh interpreter that imports what a command needs before it
starts its work (``python -c "import ldp.cli.command, MODULE"``), best of several runs: the interpreter's
own start is included, so the figures are what a user waits for. Targets: ``import ldp.decoders``
<= 0.5 s; every ``ldp`` subcommand <= 1 s before its work (scipy and scikit-learn are imported only
where a lasso or a regression is fitted, so they are the work's cost, not the start-up's).

The children import the ldp the benchmark measures: the installed package (``-P``: the current
directory is not put first on their path), or the working tree when ``benchmark.py --source`` has put
it on ``PYTHONPATH``. Each timed run also names the heavy modules it loaded (a set intersection at
exit, microseconds), so no extra interpreter is started for that check.
"""

from __future__ import annotations

import subprocess
import sys
import time
from types import ModuleType
from typing import Any

COMMANDS = {  # subcommand -> the modules it imports before its work
    "--help": [],
    "privacy": ["ldp.cli.protocols", "ldp.encoders"],
    "spec validate": ["ldp.cli.jobs", "ldp.spec.cli", "ldp.spec"],
    "simulate": ["ldp.simulation.collect", "ldp.protocols", "ldp.decoders"],
    "plan": ["ldp.plan.frequency"],
    "fold": ["ldp.cli.jobs", "ldp.jobs.job", "ldp.jobs.readers", "ldp.jobs.arrow"],
    "merge": ["ldp.cli.jobs", "ldp.jobs.store"],
    "decode": ["ldp.cli.jobs", "ldp.jobs.decode", "ldp.decoders"],
    "rappor-decode": ["ldp.cli.protocols", "ldp.decoders.rappor_decode", "ldp.jobs.store"],
    "sfp-discover": ["ldp.cli.protocols", "ldp.decoders.sfp", "ldp.jobs.store"],
    "demo": ["ldp.demo"],
    "compare": ["ldp.compare.report"],
}
IMPORTS = {"ldp.encoders": ["ldp.encoders"], "ldp.client.runtime": ["ldp.client.runtime"],
           "ldp.decoders": ["ldp.decoders"]}


def fresh_import_seconds(modules: list[str], repeats: int) -> dict[str, Any]:
    """Best and median wall time of a fresh ``python -c "import ..."`` of ``modules`` (and ldp.cli.command), and
    which of scipy and scikit-learn that loads (``loads_scipy_or_sklearn``: should be none)."""
    code = ("import sys, " + ", ".join(["ldp.cli.command", *modules]) +
            "; print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sklearn'})))")
    runs, heavy = [], ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        heavy = subprocess.run([sys.executable, "-P", "-c", code], check=True, capture_output=True,
                               text=True).stdout
        runs.append(time.perf_counter() - t0)
    runs.sort()
    return {"best_s": round(runs[0], 4), "median_s": round(runs[len(runs) // 2], 4), "imports": modules,
            "loads_scipy_or_sklearn": heavy.split()}


def register(b: ModuleType) -> None:
    """Add the ``startup`` section to the benchmark module ``b``."""

    @b.benchmark("startup")
    def startup(ctx: Any) -> dict[str, Any]:
        repeats = 2 if ctx.quick else 5
        out: dict[str, Any] = {"imports": {}, "commands": {}}
        for name, modules in IMPORTS.items():
            out["imports"][name] = fresh_import_seconds(modules, repeats)
        decoders = out["imports"]["ldp.decoders"]
        decoders.update(ctx.judge("import ldp.decoders", decoders["best_s"], "<=", 0.5, "s"))
        for command, modules in COMMANDS.items():
            row = fresh_import_seconds(modules, repeats)
            row.update(ctx.judge(f"ldp {command} before its work", row["best_s"], "<=", 1.0, "s"))
            out["commands"][command] = row
        return out
