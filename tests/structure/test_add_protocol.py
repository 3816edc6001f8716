"""Adding a protocol is exactly what docs/architecture.md says ("How to add a protocol"), checked by doing it.

In a temporary copy of the repository (the files git tracks or does not ignore; not the other-language clients,
whose "not yet" lists alone are copied), a protocol ``toy`` — GRR under another name — gets its three files, written
as the page's steps 1 to 3 say; then the commands of the page's ``sh`` block run there, in order; then the parts of
the suite that a protocol addition touches run on the copy, in a subprocess, and must pass with no other edit: the
structure rules, the conformance page's test, the vectors' tests, the joint-estimation hooks, the conformance suite
of ``toy``, and ``ldp plan toy`` / ``ldp simulate``. Before the commands run, the page's test and the vectors' test
fail, naming the command that was skipped."""

from __future__ import annotations

import atexit
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import ROOT

from ldp.batch.randomized_response import grr_encode_batch

CLIENT_FILES = ("clients/kotlin/src/main/kotlin/io/github/ldptelemetry/client/protocols/Protocols.kt",
                "clients/rust/src/protocols/mod.rs", "clients/typescript/src/protocols/index.ts")
"""What conformance/docs_tables.py reads of the clients (their "not yet" lists)."""

ENCODER = '''\
"""Toy: generalized randomized response under another name (the test of docs/architecture.md's steps)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ldp.encoders.base_draws import DrawRule, grr_draws
from ldp.encoders.randomized_response import GRREncoder, GRRParams
from ldp.reports import ReportBatch


@dataclass(frozen=True)
class ToyParams(GRRParams):
    protocol: ClassVar[str] = "toy"
    draw_rule = DrawRule("`B(p)`, then `R(d−1)` if false", lambda s, pr, v: grr_draws(s, pr.p, pr.domain_size))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ()

    @classmethod
    def examples(cls) -> list[ToyParams]:
        return [cls(1.0, 3), cls(2.0, 5)]


class ToyEncoder(GRREncoder):
    params_type = ToyParams

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        from ldp.batch.toy import toy_encode_batch

        return self._batch({"index": toy_encode_batch(self.params, values, rng)})
'''

DECODER = '''\
"""Toy's aggregate: GRR's."""

from ldp.decoders.randomized_response import GRRAggregate
from ldp.encoders.toy import ToyParams


class ToyAggregate(GRRAggregate):
    params_type = ToyParams
'''


def _batch() -> str:
    source = inspect.getsource(grr_encode_batch).replace("grr_encode_batch", "toy_encode_batch")
    return ('"""Toy\'s batch kernel: GRR\'s, renamed."""\n\nfrom __future__ import annotations\n\nfrom typing import '
            'Any\n\nimport numpy as np\n\nfrom ldp.batch import checked_indices\nfrom ldp.randomness import '
            f'as_generator\n\n\n{source}')


def _steps() -> list[str]:
    """The commands of the ``sh`` block of docs/architecture.md's "How to add a protocol"."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## How to add a protocol", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert blocks, "docs/architecture.md's How to add a protocol has no sh block of commands"
    return [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.startswith("#")]


def _copy(dest: Path) -> None:
    # the work tree's files: tracked, and new ones not ignored (a module added but not yet committed is imported)
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode()
    for name in files.split("\0"):
        if name and (not name.startswith("clients/") or name in CLIENT_FILES) and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
            if name.endswith(".py"):
                _copy_bytecode(ROOT / name, dest / name)


def _copy_bytecode(source: Path, copy: Path) -> None:
    """``source``'s bytecode, if this run compiled it already, where the copy's interpreters look for ``copy``'s:
    they load it instead of compiling the package again (~1 s of CPU). It is valid for the copy (checked against
    the source's time and size, which ``copy2`` kept; the loader sets the code's file name to the copy's); a stale
    one is recompiled as ever. Only the interpreter's: pytest's rewritten test modules keep their first path."""
    compiled = Path(importlib.util.cache_from_source(str(source)))
    if compiled.is_file():
        target = Path(importlib.util.cache_from_source(str(copy)))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(compiled, target)


def _run(copy: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # bytecode written (under the run's PYTHONPYCACHEPREFIX if tests/conftest.py set one): the copy's ~9 interpreters
    # compile its package once, not each from source; bytecode is checked against its source's time and size
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(copy)
    return subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True, timeout=600)


def _pytest(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(copy, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *args)


def _failure(stdout: str, test: str) -> str:
    """The failure report of ``test`` in a pytest run's output (from its ``___ test ___`` header to the next
    header), or ``""`` when it did not fail."""
    found = re.search(rf"^_+ {re.escape(test)} _+$(.*?)(?=^_{{3,}} |^=+ )", stdout, re.M | re.S)
    return found.group(1) if found else ""


@pytest.mark.heavy  # handed out first under xdist (tests/conftest.py)
def test_adding_a_protocol_is_what_the_architecture_page_says(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    if sys.pycache_prefix:  # the copy's bytecode there goes with the copy
        cached = Path(sys.pycache_prefix) / copy.resolve().relative_to(copy.resolve().anchor)
        atexit.register(shutil.rmtree, cached, ignore_errors=True)
    _copy(copy)
    for folder, text in (("encoders", ENCODER), ("batch", _batch()), ("decoders", DECODER)):
        (copy / "ldp" / folder / "toy.py").write_text(text, encoding="utf-8")

    # without the page's commands, the page's test and the vectors' test say which command to run (one run of
    # both, without -x: each test's own failure report names its command)
    before = _run(copy, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/docs/test_conformance_doc.py", "tests/conformance/test_vectors.py",
                  "-k", "generator_writes or toy or committed")
    assert before.returncode == 1, before.stdout[-3000:]
    for test, command in (("test_the_page_is_what_its_generator_writes", "python conformance/docs_tables.py"),
                          ("test_committed_vectors_are_what_this_version_generates",
                           "python -m ldp.conformance generate conformance/vectors")):
        assert command in _failure(before.stdout, test), before.stdout[-3000:]

    steps = _steps()
    assert steps == ["python -m ldp.conformance generate conformance/vectors", "python conformance/docs_tables.py"]
    for step in steps:
        done = _run(copy, sys.executable, *step.split()[1:])
        assert done.returncode == 0, f"{step}: {done.stdout}{done.stderr}"
    assert (copy / "conformance" / "vectors" / "toy.json").exists()
    assert "| `toy` |" in (copy / "docs" / "conformance.md").read_text(encoding="utf-8")
    # step 8: each client's generated table now holds toy's parameters, which its reader checks; a client that
    # implements toy writes only its relations, its draw and one registry line
    for table, entry in (("clients/typescript/src/params/tables.ts", "export const TOY_PARAMS = ["),
                         ("clients/rust/src/protocols/tables.rs", "pub const TOY: &[ParamRow] = GRR;"),
                         ("clients/kotlin/src/main/kotlin/io/github/ldptelemetry/client/protocols/ParamTables.kt",
                          '"toy" to listOf(')):
        index = copy / table  # the generated index and its group modules (tables.ts and tables/*.ts, ...)
        texts = [index.read_text(encoding="utf-8")] + [p.read_text(encoding="utf-8")
                                                         for p in sorted(index.with_suffix("").glob("*.*"))]
        assert any(entry in text for text in texts), (table, entry)

    whole = _pytest(copy, "tests/structure", "tests/docs/test_conformance_doc.py",
                    "--ignore=tests/structure/test_add_protocol.py")  # this test, in the copy: no recursion
    assert whole.returncode == 0, whole.stdout[-5000:] + whole.stderr[-2000:]
    parts = _pytest(copy, "tests/conformance/test_vectors.py", "tests/results/test_joint_hooks.py",
                    "tests/protocols/test_conformance.py",
                    "-k", "toy or committed or has_a_file or are_those or protocols_are", "-rA")
    assert parts.returncode == 0, parts.stdout[-5000:] + parts.stderr[-2000:]
    # toy's conformance suite was collected and passed (-rA: a PASSED line per test; no second run to list it)
    assert any(line.startswith("PASSED tests/protocols/test_conformance.py::") and "toy" in line
               for line in parts.stdout.splitlines()), parts.stdout[-5000:]
    for argv in (("plan", "toy", "--epsilon", "1", "--d", "8", "--n", "10000"),
                 ("simulate", "--protocol", "toy", "--epsilon", "1", "--d", "8", "--n", "2000", "--trials", "3")):
        done = _run(copy, sys.executable, "-m", "ldp", *argv)
        assert done.returncode == 0, f"ldp {' '.join(argv)}: {done.stdout}{done.stderr}"
    checklist = _run(copy, sys.executable, "-c", textwrap.dedent("""
        from ldp.protocols.checks import check_protocol
        check_protocol("toy")
    """))
    assert checklist.returncode == 0 and "[ ] documentation page" in checklist.stdout, checklist.stdout
