"""Every ```python block of the docs and of the README runs, and prints exactly the ```text block that
follows it.

The pages' outputs were made with numpy :data:`DOCS_NUMPY`. numpy may change the streams of its
``Generator`` methods in a feature release (its stated policy), and so the numbers a seeded simulation
prints: under another feature release (numpy 2.5 on Python 3.12+) every block must still run, and print
something where the page shows output, but its numbers are not compared.

Each page runs in one subprocess (numpy is imported once per page); each block gets a fresh
namespace, as a reader pasting it into a new interpreter would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

DOCS = ROOT / "docs"
DOCS_NUMPY = (2, 4)
"""The numpy feature release the pages' printed outputs were made with."""
PAGES = sorted(p for p in DOCS.rglob("*.md") if "```python" in p.read_text(encoding="utf-8")) + [ROOT / "README.md"]

RUNNER = r"""
import contextlib, io, json, sys, traceback
out = []
for body in json.load(sys.stdin):
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(body, "<docs>", "exec"), {"__name__": "__main__"})
        out.append([buf.getvalue(), None])
    except BaseException:
        out.append([buf.getvalue(), traceback.format_exc()])
json.dump(out, sys.stdout)
"""


def _blocks(page: Path) -> list[tuple[str, str | None]]:
    found = re.findall(r"```(\w*)\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    return [(body, found[i + 1][1] if i + 1 < len(found) and found[i + 1][0] == "text" else None)
            for i, (lang, body) in enumerate(found) if lang == "python"]


@pytest.mark.heavy  # pages run whole simulations: handed out first under xdist (tests/conftest.py)
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS if DOCS in p.parents else ROOT)) for p in PAGES])
def test_examples_run_and_print_what_the_page_says(page: Path, tmp_path: Path) -> None:
    blocks = _blocks(page)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    res = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps([b for b, _ in blocks]),
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    for i, ((body, expected), (got, error)) in enumerate(zip(blocks, json.loads(res.stdout), strict=True)):
        assert error is None, f"{page.name} python block {i} failed:\n{body}\n{error}"
        if expected is not None and _numpy_release() == DOCS_NUMPY:
            assert got == expected, f"{page.name} python block {i} printed something else"
        elif expected is not None:
            assert got.strip(), f"{page.name} python block {i} printed nothing"


def _numpy_release() -> tuple[int, int]:
    import numpy

    major, minor = numpy.__version__.split(".")[:2]
    return int(major), int(minor)
