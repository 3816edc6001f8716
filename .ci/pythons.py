"""The Pythons the project declares, for .ci/run: ``python3 .ci/pythons.py`` prints this interpreter's
version, the lowest and the highest supported one (from pyproject.toml's classifiers, checked against
``requires-python``); ``--find X.Y`` prints the path of an interpreter of that version on this machine
(``pythonX.Y`` on PATH, or pyenv's), or exits 1."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def supported() -> list[tuple[int, int]]:
    """The ``3.X`` classifiers, sorted; the lowest must be ``requires-python``'s floor."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    versions = sorted({(int(a), int(b)) for c in project["classifiers"]
                       for a, b in re.findall(r"^Programming Language :: Python :: (\d+)\.(\d+)$", c)})
    floor = re.fullmatch(r">=\s*(\d+)\.(\d+)", project["requires-python"].strip())
    if not versions or floor is None or versions[0] != (int(floor[1]), int(floor[2])):
        sys.exit(f"pyproject.toml: the lowest Python classifier {versions[:1]} is not requires-python "
                 f"{project['requires-python']!r}")
    return versions


def find(version: str) -> str | None:
    """An interpreter of ``version`` (``X.Y``): ``pythonX.Y`` on PATH, else pyenv's newest ``X.Y.*``."""
    candidates = [shutil.which(f"python{version}")]
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        candidates += [str(p / "bin" / "python3") for p in sorted(Path(root, "versions").glob(f"{version}.*"),
                                                                  reverse=True)]
    for c in filter(None, candidates):
        out = subprocess.run([c, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                             text=True)
        if out.returncode == 0 and out.stdout.strip() == version:
            return c
    return None


if __name__ == "__main__":
    if sys.argv[1:2] == ["--find"]:
        path = find(sys.argv[2])
        if path is None:
            sys.exit(1)
        print(path)
    else:
        low, high = supported()[0], supported()[-1]
        print(*(f"{a}.{b}" for a, b in (sys.version_info[:2], low, high)))
