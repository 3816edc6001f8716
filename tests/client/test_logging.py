"""Logging, not silence or prints (issue 17, item 3): the library logs through ``logging.getLogger``
under ``ldp`` and never configures logging; the ``ldp`` command maps ``-v``/``-q`` to log levels and
writes ``ldp: LEVEL: message`` lines on stderr; no ``print`` in library code."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, call_main

from ldp.client.runtime import TelemetryClient
from ldp.jobs import fold_files
from ldp.privacy.accountant import BudgetExceeded

EXAMPLE = ROOT / "examples" / "collection.json"
DAY = 86400.0 * 20000
VALUE = "zz-distinctive-value-7f3a9c.example"

#: Modules that talk to the user and may print: the CLI, the demo, and the compare report's command.
PRINT_ALLOWED = {"ldp/cli/command.py", "ldp/cli/jobs.py", "ldp/cli/support.py", "ldp/cli/compare.py",
                 "ldp/cli/protocols.py", "ldp/cli/log.py", "ldp/cli/pem.py", "ldp/cli/serve.py", "ldp/cli/watch.py",
                 "ldp/cli/associate.py", "ldp/cli/rappor_ngrams.py", "ldp/cli/shuffle.py",
                 "ldp/spec/cli.py", "ldp/conformance/__main__.py"}
PRINT_ALLOWED_FUNCTIONS = {"ldp/compare/report.py": {"compare_command"},
                           "ldp/protocols/checks.py": {"check_protocol"}}  # its checklist, when show=True


@pytest.fixture()
def uploads(tmp_path: Path) -> Path:
    """A JSON-lines upload of 6 valid reports and 2 lines the server rejects."""
    lines = []
    for value in (0, 1, 2):  # three devices
        with TelemetryClient(EXAMPLE, tmp_path / f"state{value}.db", clock=lambda: DAY, rng=value,
                             simulation=True) as client:
            client.record("app_category", value)
            client.record("dark_mode", bool(value % 2))
            lines += [item.line for item in client.pending()]
    path = tmp_path / "up.jsonl"
    path.write_text("\n".join(lines + ["not json", '{"v": 1}']) + "\n", encoding="utf-8")
    return path


def test_the_server_job_logs_inputs_processed_skipped_and_rejected(uploads, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="ldp")
    fold_files([uploads], EXAMPLE, tmp_path / "out")
    text = caplog.text
    assert "1 input(s) processed, 0 skipped; 8 reports read, 6 accepted, 2 rejected" in text
    assert any(r.name == "ldp.jobs.job" and r.levelno == logging.INFO for r in caplog.records)
    caplog.clear()
    fold_files([uploads], EXAMPLE, tmp_path / "out")  # already folded: skipped
    assert "0 input(s) processed, 1 skipped; 0 reports read, 0 accepted, 0 rejected" in caplog.text


def test_the_client_never_logs_a_value_a_report_or_the_secret(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="ldp")
    with TelemetryClient(EXAMPLE, tmp_path / "state.db", clock=lambda: DAY, rng=3, simulation=True) as client:
        client.record("homepage", VALUE)
        client.record_many([("homepage", VALUE)])
        with pytest.raises(BudgetExceeded):
            client.record("homepage", VALUE)  # the window's budget of 2.2 is spent
        lines = [item.line for item in client.pending()]
        client.acknowledge(item.id for item in client.pending())
        secret = client._state.secret.hex()
    text = caplog.text
    assert "recorded 1 report of 'homepage'" in text and "refused 1 report(s) of 'homepage'" in text
    assert "acknowledged 2 uploaded report(s)" in text
    assert VALUE not in text and secret not in text and secret[:16] not in text
    for line in lines:
        assert line not in text
        for field in json.loads(line).values():
            if isinstance(field, str) and len(field) > 12:  # the report's payload
                assert field not in text


def test_ldp_v_shows_info_on_stderr_and_the_default_does_not(uploads, tmp_path):
    argv = ["fold", str(uploads), "--spec", str(EXAMPLE)]
    status, out, err = call_main(argv + ["--out", str(tmp_path / "a")])
    assert status == 0 and "ldp: INFO:" not in err and "inputs: 1" in out
    status, out, err = call_main(["-v", *argv, "--out", str(tmp_path / "b")])
    assert status == 0 and "inputs: 1" in out
    assert "ldp: INFO: fold: 1 input(s) processed, 0 skipped" in err
    assert "ldp: DEBUG:" not in err
    status, _, err = call_main(["-vv", *argv, "--out", str(tmp_path / "c")])
    assert status == 0 and "ldp: DEBUG: folded " in err
    ldp_logger = logging.getLogger("ldp")
    assert ldp_logger.level == logging.NOTSET and [type(h) for h in ldp_logger.handlers] == [logging.NullHandler]


def test_fold_keeps_its_own_quiet_and_ldp_q_hides_warnings(uploads, tmp_path):
    argv = ["fold", str(uploads), str(uploads.with_name("copy.jsonl")), "--spec", str(EXAMPLE)]
    uploads.with_name("copy.jsonl").write_bytes(uploads.read_bytes())  # a duplicate: a warning line
    status, out, err = call_main([*argv, "--out", str(tmp_path / "a"), "-q"])
    assert status == 0 and out == "" and "warning:" in err
    status, out, err = call_main(["-q", *argv, "--out", str(tmp_path / "b"), "-q"])
    assert status == 0 and out == "" and err == ""
    status, out, err = call_main(["-q", *argv, "--out", str(tmp_path / "c")])
    assert status == 0 and "inputs: 1" in out and "warning:" in out and err == ""


def test_ldp_q_hides_logged_warnings(caplog):
    from ldp.cli import log as cli_logging

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        for quiet in (False, True):
            with cli_logging.cli_logging(0, quiet):
                logging.getLogger("ldp.jobs.job").warning("careful %d", quiet)
    assert err.getvalue() == "ldp: WARNING: careful 0\n"
    assert call_main(["-q", "-v", "privacy", "rr"])[0] == 2  # one or the other


def test_importing_ldp_configures_no_logging():
    code = ("import logging, ldp, ldp.client.runtime, ldp.jobs, ldp.cli.command; "
            "assert not logging.getLogger().handlers; "
            "assert [type(h) for h in logging.getLogger('ldp').handlers] == [logging.NullHandler]; "
            "assert logging.getLogger('ldp').level == logging.NOTSET")
    subprocess.run([sys.executable, "-c", code], check=True)


UPLOAD_AND_CATCH = """
import json, logging, socket, sys, tempfile
from pathlib import Path
from ldp.client.runtime import TelemetryClient
from ldp.spec import CollectionSpec
from ldp.client.uploader import UploadError
if sys.argv[1] == "no-null-handler":
    logging.getLogger("ldp").handlers.clear()
spec = CollectionSpec.from_dict({"spec_version": 1, "name": "app", "budget": {"per_window": 10, "lifetime": 100},
    "metrics": {"flag": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}}}})
with socket.socket() as s:  # a port nobody listens on: every attempt is refused
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
with TelemetryClient(spec, Path(tempfile.mkdtemp()) / "state.db") as client:
    client.record("flag", True)
    try:
        client.upload(f"http://127.0.0.1:{port}/v1/reports/app", "t", max_attempts=1, sleep=lambda s: None)
    except UploadError:
        print("caught")
"""


@pytest.mark.parametrize("handlers", ["as-shipped", "no-null-handler"])
def test_an_app_that_configured_no_logging_sees_nothing_on_stderr(handlers):
    out = subprocess.run([sys.executable, "-c", UPLOAD_AND_CATCH, handlers], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout == "caught\n", out
    if handlers == "as-shipped":
        assert out.stderr == ""
    else:  # the control: without our NullHandler, logging's last resort prints the warning
        assert "upload stopped" in out.stderr


def _prints(tree: ast.AST, allowed_functions: set[str]) -> list[int]:
    """Line numbers of ``print(...)`` calls outside the allowed functions."""
    found: list[int] = []

    def visit(node: ast.AST, inside_allowed: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in allowed_functions:
            inside_allowed = True
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
                and not inside_allowed):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, inside_allowed)

    visit(tree, False)
    return found


def test_no_print_in_library_modules():
    offenders = {}
    for path in sorted((ROOT / "ldp").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in PRINT_ALLOWED or rel.startswith("ldp/demo/"):
            continue
        lines = _prints(ast.parse(path.read_text(encoding="utf-8")), PRINT_ALLOWED_FUNCTIONS.get(rel, set()))
        if lines:
            offenders[rel] = lines
    assert not offenders, f"print() in library code (log through logging.getLogger(__name__)): {offenders}"
