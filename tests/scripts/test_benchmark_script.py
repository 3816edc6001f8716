"""``simulations/benchmark.py`` measures what users run (issue 28, item 7): the installed ldp by default
(the repository root is not put ahead of site-packages), the working tree only with ``--source``; the
JSON names the ldp benchmarked and, per compiled kernel, whether it is loaded or the numpy fallback runs;
a fallback is announced loudly on stderr and in the summary; without an installed ldp the script says
how to install it.

No timing is asserted. The script runs in subprocesses, all started at once (each imports ldp and the
section files, about a second): one real ``--only`` run of a cheap section, and runs through a small
harness that loads the script as a module and adds a trivial section reporting ``sys.path``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from support.install_lines import bare_install_lines

from ldp.extras import DISTRIBUTION

SCRIPT = ROOT / "simulations" / "benchmark.py"
KERNEL_SWITCHES = ("LDP_FOLD_KERNEL", "LDP_LH_KERNEL", "LDP_EM_KERNEL")

# the script loaded as a module, plus a section that reports where ldp and sys.path point
HARNESS = f"""
import importlib.util, sys
{{prelude}}
spec = importlib.util.spec_from_file_location("benchmark_script", {str(SCRIPT)!r})
module = importlib.util.module_from_spec(spec)
sys.modules["benchmark_script"] = module
spec.loader.exec_module(module)
module.benchmark("probe")(lambda ctx: {{{{"sys_path": list(sys.path), "ldp_file": module.ldp.__file__}}}})
sys.exit(module.main(["--only", "probe", "--quick", "--no-pin", "-q", *sys.argv[1:]]))
"""
# the compiled extension of local hashing made unimportable: the module's kernel handle is None
NO_LH_EXTENSION = 'sys.modules["ldp.batch._lhkernel"] = None'
# ldp not installed at all
NO_LDP = f"""
import runpy, sys
sys.modules["ldp"] = None
sys.argv = [{str(SCRIPT)!r}, "--quick"]
runpy.run_path({str(SCRIPT)!r}, run_name="__main__")
"""


def _env(**switches: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_SWITCHES}
    env.update(switches, PYTHONIOENCODING="utf-8")
    return env


CASES: dict[str, tuple[list[str], dict[str, str], Path]] = {
    "list": ([str(SCRIPT), "--list"], _env(), ROOT),
    "only": ([str(SCRIPT), "--only", "aggregate_simulation_1e9", "--quick", "--no-pin", "-q"], _env(), ROOT),
    # from the repository root, where the current directory would shadow the installed package
    "installed": (["-c", HARNESS.format(prelude="")], _env(), ROOT),
    "source": (["-c", HARNESS.format(prelude=""), "--source"], _env(), ROOT.parent),
    "fallback": (["-c", HARNESS.format(prelude=NO_LH_EXTENSION)], _env(LDP_FOLD_KERNEL="numpy"), ROOT.parent),
    "no_ldp": (["-c", NO_LDP], _env(), ROOT.parent),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, subprocess.CompletedProcess[str]]:
    """Every case of :data:`CASES`, run concurrently."""
    procs = {name: subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, encoding="utf-8", env=env, cwd=cwd)
             for name, (args, env, cwd) in CASES.items()}
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        out[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return out


def _result(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_list_is_json(runs):
    names = _result(runs["list"])["benchmarks"]
    assert "aggregate_simulation_1e9" in names and "collector" in names and len(names) == len(set(names))


def test_only_run_records_which_ldp_and_its_kernels(runs):
    result = _result(runs["only"])
    assert list(result["results"]) == ["aggregate_simulation_1e9"]
    import ldp
    from ldp.batch import association, bits, local_hashing, projective_geometry, subset_selection

    which = result["ldp"]
    assert Path(which["path"]) == Path(ldp.__file__).resolve().parent  # the one this test imports: installed
    assert which["version"] == ldp.__version__ and which["distribution"] == DISTRIBUTION
    assert which["source_tree"] == (Path(which["path"]) == ROOT / "ldp")
    assert not which["selected_by"].startswith("--source")
    expected = {"fold": bits.kernel_in_use(), "local_hashing": local_hashing.kernel_in_use(),
                "association_em": association.kernel_in_use(), "subset_selection": subset_selection.kernel_in_use(),
                "projective_geometry": projective_geometry.kernel_in_use()}
    assert result["kernels"] == {k: "compiled" if v else "numpy fallback" for k, v in expected.items()}
    assert set(which["kernels"]) == set(expected)
    assert result["fallbacks_in_use"] == [k for k, v in expected.items() if not v]
    assert ("WARNING" in runs["only"].stderr) == bool(result["fallbacks_in_use"])
    assert isinstance(result["all_targets_met"], bool)


def test_default_does_not_put_the_repository_first(runs):
    result = _result(runs["installed"])
    probe = result["results"]["probe"]
    paths = [Path(p or ".").resolve() for p in probe["sys_path"]]
    assert ROOT not in paths  # run from the repository root, yet the current directory is not on the path
    assert paths[0] == ROOT / "simulations"  # the bench_*.py section files
    import ldp

    assert Path(probe["ldp_file"]).resolve() == Path(ldp.__file__).resolve()
    assert result["ldp"]["path"] == str(Path(ldp.__file__).resolve().parent)


def test_source_puts_the_repository_first(runs):
    result = _result(runs["source"])
    probe = result["results"]["probe"]
    assert Path(probe["sys_path"][0]).resolve() == ROOT
    assert Path(probe["ldp_file"]).resolve() == ROOT / "ldp" / "__init__.py"
    assert result["ldp"]["path"] == str(ROOT / "ldp") and result["ldp"]["source_tree"] is True
    assert result["ldp"]["selected_by"].startswith("--source")


def test_kernels_forced_off_warn_loudly(runs):
    run = runs["fallback"]
    result = _result(run)
    assert result["kernels"]["fold"] == "numpy fallback"  # switched off by LDP_FOLD_KERNEL=numpy
    assert result["kernels"]["local_hashing"] == "numpy fallback"  # the extension cannot be imported
    assert {"fold", "local_hashing"} <= set(result["fallbacks_in_use"])
    assert "fold" in result["fallbacks_note"]
    details = result["ldp"]["kernels"]
    assert "LDP_FOLD_KERNEL" in details["fold"]["reason"] and "not built" in details["local_hashing"]["reason"]
    err = run.stderr
    assert err.count("WARNING") == 2  # before the sections and again after them
    warning = err[err.index("WARNING"):]
    for needle in ("fold", "local_hashing", "NOT representative", "unset LDP_FOLD_KERNEL", "C compiler",
                   "python setup.py build_ext --inplace"):
        assert needle in warning, needle
    assert len([line for line in warning.splitlines() if line.startswith("!!!")]) >= 6


def test_without_ldp_says_how_to_install(runs):
    run = runs["no_ldp"]
    assert run.returncode != 0 and not run.stdout
    assert "pip install '.[server]'" in run.stderr and "--source" in run.stderr
    assert not bare_install_lines(run.stderr)  # never the unrelated distribution's name
