"""The README's install line of each client works as written (issue 73, item 7).

The clients table gives, per client, the command run in its folder and what it yields. Checked here:

* **TypeScript**: the line (``npm ci && npm pack``) runs verbatim, by ``sh``, in a fresh export of
  ``clients/typescript`` and ``clients/rust``, whose Rust the ``dap`` entry compiles to WebAssembly (``git archive``
  of the committed tree: no ``node_modules``, no ``dist``, no ``target``, as a clone has it) and yields the tarball
  the table names, of the package's own version. npm reads its registry as the README's reader does (its cache may
  answer first).
* **Kotlin** (``mvn -B install``, Maven's own goal, which runs every test): ``.ci/run`` runs that goal in its Kotlin
  step, and the coordinates the table gives are the POM's.
* **Rust/C** (``cargo build --release``): ``.ci/run`` runs a release build, and the crate builds what the table
  names (``staticlib`` and ``cdylib``: ``libldp_client.a`` and ``.so``; the committed ``include/ldp_client.h``).
* **Python**: the distribution name (``ldp-telemetry``) is the project's (the tree's own scan of install lines is
  ``tests/docs/test_distribution_name.py``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _install_cells() -> dict[str, str]:
    """The clients table's install column, per client (its first column), as written."""
    rows: dict[str, str] = {}
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and "`" in cells[2] and not set(cells[0]) <= {"-", " "}:
            rows[cells[0]] = cells[2]
    return rows


def _cell(client: str) -> str:
    found = [cell for name, cell in _install_cells().items() if client in name]
    assert len(found) == 1, (client, _install_cells())
    return found[0]


def _ci() -> str:
    return (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_table_gives_an_install_line_for_every_client() -> None:
    cells = _install_cells()
    assert {"web page, Node", "Android, JVM (Kotlin, Java)", "C, C++, Rust", "Python"} <= set(cells), cells


@pytest.mark.heavy  # handed out first under xdist (tests/conftest.py)
def test_the_typescript_line_runs_on_a_fresh_clone(tmp_path: Path) -> None:
    npm, git = shutil.which("npm"), shutil.which("git")
    if npm is None or git is None or not (ROOT / ".git").exists():
        pytest.skip("needs npm, git and a git checkout (the committed tree is what a clone has)")
    cell = _cell("web page")
    line = re.match(r"`([^`]+)` there", cell)
    tarball = re.search(r"`npm install (\S+\.tgz)`", cell)
    assert line and tarball, cell
    # the client's folder and the native client's, whose Rust its dap entry compiles to WebAssembly
    archive = subprocess.run([git, "archive", "--format=tar", "HEAD", "clients/typescript", "clients/rust"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    (tmp_path / "export.tar").write_bytes(archive)
    with tarfile.open(tmp_path / "export.tar") as tar:
        tar.extractall(tmp_path, filter="data")
    folder = tmp_path / "clients" / "typescript"
    assert not (folder / "node_modules").exists() and not (folder / "dist").exists()
    run = subprocess.run(["sh", "-c", line.group(1)], cwd=folder, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    version = json.loads((folder / "package.json").read_text(encoding="utf-8"))["version"]
    assert tarball.group(1) == f"ldp-telemetry-client-{version}.tgz"
    with tarfile.open(folder / tarball.group(1)) as packed:
        names = packed.getnames()
    assert "package/dist/index.js" in names and "package/package.json" in names, names[:20]


def test_the_kotlin_line_is_what_ci_runs_and_names_the_pom() -> None:
    cell = _cell("Android")
    assert "`mvn -B install` there" in cell, cell
    kotlin_step = re.search(r'step "Kotlin client: mvn -B install.*?\n(.*?)\n\n', _ci(), re.S)
    assert kotlin_step and re.search(r"mvn -B\b[^\n]* install\b", kotlin_step.group(1)), "the CI step runs the goal"
    pom = ET.parse(ROOT / "clients" / "kotlin" / "pom.xml").getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    coords = [pom.findtext(f"m:{tag}", namespaces=ns) for tag in ("groupId", "artifactId", "version")]
    assert f"`{':'.join(c or '' for c in coords)}`" in cell, (coords, cell)


def test_the_rust_line_is_what_ci_runs_and_builds_what_the_table_names() -> None:
    cell = _cell("C, C++, Rust")
    assert "`cargo build --release`" in cell and "`libldp_client.a` or `.so`" in cell, cell
    assert re.search(r"cargo build --locked --release\b", _ci())
    crate = tomllib.loads((ROOT / "clients" / "rust" / "Cargo.toml").read_text(encoding="utf-8"))
    assert crate["lib"]["name"] == "ldp_client" and {"staticlib", "cdylib"} <= set(crate["lib"]["crate-type"])
    assert "`include/ldp_client.h`" in cell and (ROOT / "clients" / "rust" / "include" / "ldp_client.h").is_file()
    assert 'ldp-telemetry-client = { path = "clients/rust" }' in cell and crate["package"]["name"] == \
        "ldp-telemetry-client"


def test_the_python_line_names_the_distribution() -> None:
    assert _cell("Python").count("`pip install ldp-telemetry`") == 1
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "ldp-telemetry"
