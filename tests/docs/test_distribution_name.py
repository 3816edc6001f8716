"""Our PyPI name is ``ldp-telemetry``: ``ldp`` on PyPI is someone else's package, so no install line a
user copies may name it (the import package stays ``ldp``, as scikit-learn installs ``sklearn``). And the
Pythons we declare are the ones CI runs (issue 28, items 1 and 2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support import ROOT, install_lines
from support.install_lines import bare_install_lines

from ldp.extras import DISTRIBUTION, install_hint, pip_install

SKIP_DIRS = {".git", "site", "build", "dist", ".venv", ".ci-venv", "node_modules", "__pycache__", ".hypothesis",
             ".pytest_cache", "results", "artifacts", "target", "corpus"}
"""Folders not scanned: version control, caches, and what tools build or generate (``target``: Cargo's and Maven's
builds; ``corpus``: the Rust fuzzer's inputs), none of them a line a user copies."""
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".yml", ".yaml", ".json", ".html", ".j2", ".sh", ".ts", ""}


@pytest.mark.parametrize("line", [
    "pip install ldp", "pip install 'ldp[server]'", 'pip install "ldp[serve,plot]"', "pip install -U ldp",
    "python -m pip install --quiet ldp==0.1", "uv pip install ldp", "poetry add ldp", "test = [\"ldp[server]\", \"x\"]",
    "raise ImportError(\"needs pandas: pip install pandas, or 'ldp[pandas]'\")",
])
def test_detector_catches_the_old_name(line: str) -> None:
    assert bare_install_lines(line) == [line]


@pytest.mark.parametrize("line", [
    "pip install ldp-telemetry", "pip install 'ldp-telemetry[server]'", "pip install '.[server]' && ldp demo",
    "from ldp.encoders import GRRParams", "ldp demo --quick", "pip install ldp_telemetry", "pip install ldpkit",
])
def test_detector_passes_our_lines(line: str) -> None:
    assert bare_install_lines(line) == []


def _tree_files() -> list[Path]:
    out = []
    for folder, dirs, names in os.walk(ROOT):  # the skipped folders are pruned, not walked (symlinks: not followed)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in names:
            path = Path(folder, name)
            if path.suffix in TEXT_SUFFIXES and path.is_file() and path.stat().st_size < 2_000_000:
                out.append(path)
    return out


def test_no_install_line_in_the_tree_names_the_old_distribution() -> None:
    files = _tree_files()
    assert len(files) > 100  # the walk found the tree
    offenders = []
    for path in files:
        if path in (Path(__file__).resolve(), Path(install_lines.__file__).resolve()):
            continue  # the detector and this file's own examples of what is refused
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders += [f"{path.relative_to(ROOT)}: {line}" for line in bare_install_lines(text)]
    assert not offenders, "\n".join(offenders)


def test_project_metadata_names_our_distribution() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "ldp-telemetry"
    for extra, reqs in project["optional-dependencies"].items():
        for req in reqs:
            if req.split("[")[0] in {"ldp", DISTRIBUTION}:
                assert req.startswith(f"{DISTRIBUTION}["), (extra, req)


def test_install_lines_and_version_name_it() -> None:
    assert pip_install() == "pip install ldp-telemetry"
    assert pip_install("serve") == "pip install 'ldp-telemetry[serve]'"
    assert install_hint("matplotlib", "plot") == "pip install 'ldp-telemetry[plot]' (or pip install matplotlib)"
    readme = (ROOT / "README.md").read_text()
    assert "pip install ldp-telemetry" in readme
    out = subprocess.run([sys.executable, "-m", "ldp", "--version"], capture_output=True, text=True, check=True)
    from ldp import __version__
    assert out.stdout.strip() == f"ldp-telemetry {__version__}"


def test_declared_pythons_agree_and_ci_runs_the_lowest_and_highest():
    sys.path.insert(0, str(ROOT / ".ci"))
    try:
        import pythons
    finally:
        sys.path.remove(str(ROOT / ".ci"))
    versions = pythons.supported()
    assert versions[0] == (3, 11) and versions == sorted(versions) and len(versions) >= 2  # 3.10 is past its end
    assert sys.version_info[:2] in versions  # the suite runs on a declared Python
    run = (ROOT / ".ci" / "run").read_text()
    assert "python3 .ci/pythons.py --find" in run and "client_only \"$py\"" in run and "ldp demo --quick" in run


def test_the_registry_scan_skips_type_aliases(tmp_path, monkeypatch):
    """Python 3.10's ``inspect.isclass`` took ``dict[str, int]`` for a class and ``issubclass`` then failed
    (``ldp demo`` crashed there); an alias beside a protocol class is skipped, the class found."""
    from ldp.lazy import subclasses_in

    pkg = tmp_path / "fakeprotos"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "one.py").write_text("from tests_base_for_scan import Base\nLayout = dict[str, int]\n"
                                "class Proto(Base):\n    pass\n")
    (tmp_path / "tests_base_for_scan.py").write_text("class Base:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tests_base_for_scan

    assert [c.__name__ for c in subclasses_in("fakeprotos", tests_base_for_scan.Base)] == ["Proto"]



def test_the_quick_start_and_its_timings_read_the_same_everywhere() -> None:
    """README.md, docs/getting-started.md and ``ldp --help`` give the same two commands (CI runs the README's) and
    the same measured timings: the demo and its --quick (also in ``ldp demo --help``), the test install, the suite."""
    from ldp.cli.command import QUICK_START

    readme, started = (" ".join((ROOT / p).read_text(encoding="utf-8").split())
                       for p in ("README.md", "docs/getting-started.md"))
    commands = re.findall(r"^pip install '\.\[(?:server|test)\]'(?: \./bindings/prio)? && .+$",
                          (ROOT / "README.md").read_text(), re.M)
    assert len(commands) == 2 and commands[0].endswith("ldp demo") and "pytest" in commands[1]
    for line in commands:
        assert line in (ROOT / "docs" / "getting-started.md").read_text().splitlines() and line in QUICK_START, line
    suite = [re.findall(r"tests in about ([\d.]+ min)", readme), re.findall(r"tests in about ([\d.]+ min)", started),
             re.findall(r"test suite about ([\d.]+ min)", QUICK_START)]
    install = [re.findall(r"\(about ([\d.]+ (?:s|min)),", readme), re.findall(r"; about ([\d.]+ (?:s|min)),", started),
               re.findall(r"the install about ([\d.]+ (?:s|min))", QUICK_START)]
    for said in (suite, install):
        assert all(len(found) == 1 for found in said) and len({found[0] for found in said}) == 1, said
    demo = re.findall(r"demo takes about ([\d.]+ s), `ldp demo --quick` about ([\d.]+ s)", readme)
    assert demo and f"the demo about {demo[0][0]}, --quick about {demo[0][1]}" in QUICK_START, (demo, QUICK_START)
    assert f"about {demo[0][1]} instead of {demo[0][0]}" in started
    demo_help = " ".join((ROOT / "ldp" / "cli" / "demo.py").read_text(encoding="utf-8").split())
    assert f"about {demo[0][0]} on 2 idle cores" in demo_help and f"--quick about {demo[0][1]}" in demo_help
