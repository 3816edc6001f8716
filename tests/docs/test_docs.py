"""Every ```python block of the docs and of the README runs, and prints exactly the ```text block that
follows it.

The pages' outputs were made with numpy :data:`DOCS_NUMPY`. numpy may change the streams of its
``Generator`` methods in a feature release (its stated policy), and so the numbers a seeded simulation
prints: under another feature release (numpy 2.5 on Python 3.12+) every block must still run, and print
something where the page shows output, but its numbers are not compared.

Each page runs in a process of its own (:data:`RUNNER`), forked from a runner that each test process starts
once and that has imported numpy and the ``ldp`` modules two pages or more import (:data:`ZYGOTE`; without
``os.fork``, a new interpreter per page): no page sees what another did, and those imports, and the
interpreter's start and tear-down, are paid once per test process, not once per page. Each block gets a fresh
namespace, as a reader pasting it into a new interpreter would."""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import ROOT

DOCS = ROOT / "docs"
DOCS_NUMPY = (2, 4)
"""The numpy feature release the pages' printed outputs were made with."""
PAGES = sorted(p for p in DOCS.rglob("*.md") if "```python" in p.read_text(encoding="utf-8")) + [ROOT / "README.md"]
TIMEOUT = 300
"""Seconds a page's blocks may take."""

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
"""What runs a page: its blocks (a JSON list) on stdin, ``[printed, traceback or None]`` per block on stdout."""

ZYGOTE = r"""
import atexit, importlib, json, os, sys, threading, traceback

for name in json.loads(sys.stdin.readline()):
    try:
        importlib.import_module(name)
    except Exception:  # the page that imports it reports the error
        pass
print(json.dumps("ready"), flush=True)
while line := sys.stdin.readline():
    req = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the page's process: RUNNER in req["cwd"], stdin its blocks, stdout and stderr files
        os.chdir(req["cwd"])
        importlib.invalidate_caches()  # sys.path's "" is now this directory
        for fd, path, flags in ((0, req["stdin"], os.O_RDONLY), (1, req["stdout"], os.O_WRONLY | os.O_CREAT),
                                (2, req["stderr"], os.O_WRONLY | os.O_CREAT)):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)  # sys.stdin, sys.stdout and sys.stderr now read and write these (their buffers: empty)
            os.close(opened)
        status = 0
        try:
            exec(compile(req["runner"], "<string>", "exec"), {"__name__": "__main__"})
        except BaseException:
            traceback.print_exc()
            status = 1
        # an interpreter's exit, without tearing down the modules (in a forked copy, that tear-down, which writes to
        # every object, is most of a small page's time): non-daemon threads joined, atexit run, streams flushed
        threading._shutdown()  # as the interpreter's exit does, in this order
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    print(json.dumps(pid), flush=True)
    print(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])), flush=True)
"""
"""The runner a test process starts once: it imports the modules named on its first line, then forks, per
request line (``cwd`` and the paths of the page's ``stdin``, ``stdout`` and ``stderr``), a process that runs
:data:`RUNNER` as ``python -c RUNNER`` would, and answers the child's pid and then its exit status."""


def _blocks(page: Path) -> list[tuple[str, str | None]]:
    found = re.findall(r"```(\w*)\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    return [(body, found[i + 1][1] if i + 1 < len(found) and found[i + 1][0] == "text" else None)
            for i, (lang, body) in enumerate(found) if lang == "python"]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def _shared_imports() -> list[str]:
    """numpy and the ``ldp`` modules that two or more pages import (preloaded once by :data:`ZYGOTE`)."""
    pages: collections.Counter[str] = collections.Counter()
    for page in PAGES:
        pages.update({a or b for body, _ in _blocks(page)
                      for a, b in re.findall(r"^(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", body, re.M)})
    return sorted(m for m, n in pages.items() if n >= 2 and (m == "numpy" or m.split(".")[0] == "ldp"))


class _PageRunner:
    """The test process's :data:`ZYGOTE` (started on first use, again if it has died)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.proc: subprocess.Popen[str] | None = None
        self.runs = 0

    def _start(self) -> subprocess.Popen[str]:
        with open(self.workdir / "runner.err", "w", encoding="utf-8") as err:
            proc = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=err, text=True, cwd=self.workdir, env=_env())
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(_shared_imports()) + "\n")
        proc.stdin.flush()
        ready = proc.stdout.readline()
        assert ready == '"ready"\n', f"the docs runner did not start: {self._errors()}"
        return proc

    def run(self, blocks: list[str], cwd: Path) -> tuple[int, str, str]:
        """``(exit status, stdout, stderr)`` of :data:`RUNNER` given ``blocks``, run in ``cwd``."""
        if not hasattr(os, "fork"):  # not POSIX: an interpreter per page
            res = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(blocks), capture_output=True,
                                 text=True, cwd=cwd, env=_env(), timeout=TIMEOUT)
            return res.returncode, res.stdout, res.stderr
        if self.proc is not None and self.proc.poll() is not None:
            self.proc.communicate()  # closes the pipes of the one that died
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.runs += 1
        files = {name: self.workdir / f"{self.runs}.{name}" for name in ("stdin", "stdout", "stderr")}
        files["stdin"].write_text(json.dumps(blocks), encoding="utf-8")
        self.proc.stdin.write(json.dumps({"runner": RUNNER, "cwd": str(cwd), **{k: str(v) for k, v in files.items()}})
                              + "\n")
        self.proc.stdin.flush()
        pid = self._answer()
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            os.kill(pid, signal.SIGKILL)

        timer = threading.Timer(TIMEOUT, kill)
        timer.start()
        try:
            status = self._answer()
        finally:
            timer.cancel()
        if killed.is_set():
            raise subprocess.TimeoutExpired(f"python -c RUNNER in {cwd}", TIMEOUT)
        out, err = (files[name].read_text(encoding="utf-8") for name in ("stdout", "stderr"))
        for path in files.values():
            path.unlink()
        return status, out, err

    def _answer(self) -> int:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the docs runner died: {self._errors()}"
        return int(json.loads(line))

    def _errors(self) -> str:
        return (self.workdir / "runner.err").read_text(encoding="utf-8")

    def close(self) -> None:
        if self.proc is not None:
            self.proc.communicate(timeout=60)  # closes its stdin: it exits


@pytest.fixture(scope="session")
def page_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_PageRunner]:
    runner = _PageRunner(tmp_path_factory.mktemp("docs-runner"))
    yield runner
    runner.close()


@pytest.mark.heavy  # pages run whole simulations: handed out first under xdist (tests/conftest.py)
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS if DOCS in p.parents else ROOT)) for p in PAGES])
def test_examples_run_and_print_what_the_page_says(page: Path, tmp_path: Path, page_runner: _PageRunner) -> None:
    blocks = _blocks(page)
    returncode, stdout, stderr = page_runner.run([b for b, _ in blocks], tmp_path)
    assert returncode == 0, stderr
    for i, ((body, expected), (got, error)) in enumerate(zip(blocks, json.loads(stdout), strict=True)):
        assert error is None, f"{page.name} python block {i} failed:\n{body}\n{error}"
        if expected is not None and _numpy_release() == DOCS_NUMPY:
            assert got == expected, f"{page.name} python block {i} printed something else"
        elif expected is not None:
            assert got.strip(), f"{page.name} python block {i} printed nothing"


def _numpy_release() -> tuple[int, int]:
    import numpy

    major, minor = numpy.__version__.split(".")[:2]
    return int(major), int(minor)
