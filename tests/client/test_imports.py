"""Client code (encoders, ledger, collection spec, client runtime) must run where numpy, scipy and
scikit-learn cannot be imported."""

import subprocess
import sys
import textwrap

from support import ROOT

BLOCKER = textwrap.dedent("""
    import sys
    class Block:
        HEAVY = {"numpy", "scipy", "sklearn", "pandas"}
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.HEAVY:
                raise ImportError(f"{name} is blocked: client code must not import it")
            return None
    sys.meta_path.insert(0, Block())
""")

CLIENT = textwrap.dedent("""
    import importlib, pkgutil
    import ldp, ldp.encoders, ldp.privacy.accountant, ldp.privacy.ledger, ldp.reports, ldp.hashing, ldp.randomness
    import ldp.privacy.audit
    for info in pkgutil.iter_modules(ldp.encoders.__path__):
        importlib.import_module("ldp.encoders." + info.name)
    from ldp.protocols import client_protocols, params_from_dict
    from ldp.encoders import GRREncoder, GRRParams, BinaryRREncoder, BinaryRRParams
    from ldp.privacy.accountant import BudgetLedger, BudgetPolicy, PrivacyCost
    assert {"rr", "grr"} <= set(client_protocols())
    ledger = BudgetLedger(":memory:", total=BudgetPolicy(per_window=PrivacyCost(5)))
    params = params_from_dict({"protocol": "grr", "params": GRRParams(1.0, 4).to_dict()})
    report = GRREncoder(params, ledger=ledger, metric="m").encode(2)
    BinaryRREncoder(BinaryRRParams.forced_response(), ledger=ledger, metric="b").encode(True)
    from ldp.encoders.sfp import SfpEncoder, SfpParams
    SfpEncoder(SfpParams(1.0, 1.0, word_sketch="hcms"), ledger=ledger, metric="w").encode("hello")
    from ldp.reports import parse_json, decode_binary
    assert parse_json(report.to_json()) == report == decode_binary(report.to_bytes())[0]
    from ldp.privacy.audit import audit_encoder
    assert audit_encoder(lambda s: GRREncoder(params, rng=s), range(4)).matches(1.0)
    import os, tempfile
    import ldp.spec, ldp.client.runtime, ldp.client.uploader
    for info in pkgutil.iter_modules(ldp.spec.__path__):
        importlib.import_module("ldp.spec." + info.name)
    import ldp.client
    for info in pkgutil.iter_modules(ldp.client.__path__):
        importlib.import_module("ldp.client." + info.name)
    from ldp.spec import CollectionSpec, parse_envelope
    from ldp.client.runtime import TelemetryClient
    spec = CollectionSpec.load("examples/collection.json")
    with TelemetryClient(spec, os.path.join(tempfile.mkdtemp(), "state.db")) as app:
        app.record("app_category", "games")
        app.record("dark_mode", True)
        app.record("homepage", "example.com")
        assert [parse_envelope(item.line, spec).metric for item in app.pending()] == [
            "app_category", "dark_mode", "homepage"]
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"numpy", "scipy", "sklearn", "pandas"})
    assert not heavy, heavy
    print("client ok")
""")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER + code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_client_side_imports_without_numpy():
    result = _run(CLIENT)
    assert result.returncode == 0, result.stderr
    assert "client ok" in result.stdout


def test_blocker_really_blocks_server_code():
    """Control: the same harness makes the server side fail, so the test above can fail."""
    result = _run("import numpy")
    assert result.returncode != 0
    assert "numpy is blocked" in result.stderr


SERVER_SIDE = ["ldp.decoders", "ldp.decoders.base", "ldp.batch", "ldp.batch.rappor", "ldp.jobs", "ldp.jobs.job",
               "ldp.simulation.collect", "ldp.plan.frequency", "ldp.compare", "ldp.demo", "ldp.regression",
               "ldp.simulation.rappor_regtest"]


def test_server_side_without_the_extra_names_it():
    """Every server package and module refuses with the extra to install, never a bare ModuleNotFoundError."""
    code = textwrap.dedent(f"""
        import importlib
        from ldp.extras import MissingExtraError
        for name in {SERVER_SIDE!r}:
            try:
                importlib.import_module(name)
            except MissingExtraError as exc:
                assert "pip install 'ldp-telemetry[server]'" in str(exc), (name, exc)
            else:
                raise AssertionError(name + " imported without numpy")
        print("refused ok")
    """)
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert "refused ok" in result.stdout


def test_cli_without_the_extra():
    """The client commands work; the server commands exit 2 with one line naming the extra."""
    code = textwrap.dedent("""
        import contextlib, io, sys
        from ldp.cli.command import main
        def run(*argv):
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                try:
                    status = main(list(argv))
                except SystemExit as exc:
                    status = exc.code
            return status, err.getvalue()
        assert run("--help")[0] == 0
        assert run("spec", "validate", "examples/collection.json")[0] == 0
        assert run("privacy", "grr", "--epsilon", "1", "--d", "4")[0] == 0
        for argv in (["demo", "--quick"], ["simulate", "--protocol", "grr", "--epsilon", "1", "--d", "4", "--n", "10"],
                     ["plan", "--recommend", "--epsilon", "1", "--d", "8"]):
            status, err = run(*argv)
            last = err.strip().splitlines()[-1]
            assert status == 2 and last.startswith(f"ldp {argv[0]}: error:"), (argv, err)
            assert "pip install 'ldp-telemetry[server]'" in last, (argv, err)
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"numpy", "scipy", "sklearn", "pandas"})
        assert not heavy, heavy
        print("cli ok")
    """)
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert "cli ok" in result.stdout


LIGHT = ["ldp.decoders", "ldp.simulation.collect", "ldp.plan.frequency", "ldp.jobs.job", "ldp.jobs.decode",
         "ldp.jobs.store",
         "ldp.decoders.rappor_decode", "ldp.decoders.sfp", "ldp.demo", "ldp.compare.report", "ldp.regression",
         "ldp.regression.mechanisms", "ldp.cli.jobs", "ldp.cli.protocols"]


def test_commands_start_without_scipy_or_scikit_learn():
    """scipy and scikit-learn are imported only where a lasso or a regression is fitted (start-up <= 1 s)."""
    code = ("import sys, ldp.cli.command, " + ", ".join(LIGHT) +
            "\nheavy = sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sklearn'})\nprint(heavy)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
