"""The names that moved keep working for one release, each with a warning that names its new home (``ldp._moved``;
issue 29's 0.1 paths and issue 83's renames: docs/glossary.md).

Each old import path gives the very module object of its new home (no second copy under the old name, whose
classes would fail ``isinstance`` against the new ones), each old attribute the very object, and each old command
or option runs the new one with a note on stderr. Run in a fresh interpreter, so that an earlier import in this
process cannot hide a missing warning.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from ldp import _moved

MODULES = [
    ("ldp.collector", "ldp.ingest"),
    ("ldp.collector.config", "ldp.ingest.config"),
    ("ldp.collector.segments", "ldp.ingest.segments"),
    ("ldp.collector.ingest", "ldp.ingest.upload"),
    ("ldp.server", "ldp.jobs"),
    ("ldp.server.fold", "ldp.jobs.fold"),
    ("ldp.server.readers", "ldp.jobs.readers"),
    ("ldp.cli.server", "ldp.cli.jobs"),
    ("ldp.cli_server", "ldp.cli.jobs"),
    ("ldp.decoders.association_io", "ldp.jobs.association"),
    ("ldp.accountant", "ldp.privacy.accountant"),
]
ATTRIBUTES = [
    ("ldp.ingest", "CollectorConfig", "IngestConfig"),
    ("ldp.ingest.config", "CollectorConfig", "IngestConfig"),
    ("ldp.ingest.metrics", "CollectorMetrics", "IngestMetrics"),
    ("ldp.jobs", "aggregate_files", "fold_files"),
    ("ldp.jobs.job", "aggregate_files", "fold_files"),
    ("ldp.jobs", "aggregate_bag", "fold_bag"),
    ("ldp.jobs.dask_engine", "aggregate_dataframe", "fold_dataframe"),
    ("ldp.cli.jobs", "SERVER_COMMANDS", "JOB_COMMANDS"),
]


def _run(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize(("old", "new"), MODULES)
def test_an_old_module_path_is_the_new_module_with_a_warning(old: str, new: str) -> None:
    got = _run(f"""
        import importlib, json, sys, warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            old = importlib.import_module({old!r})
        new = importlib.import_module({new!r})
        print(json.dumps({{"same": old is new, "spec": new.__spec__.name,
                          "twins": [m for m in sys.modules if m != {old!r} and sys.modules[m] is not new
                                    and getattr(sys.modules[m], "__file__", 1) == getattr(new, "__file__", 2)],
                          "warnings": [str(w.message) for w in caught if w.category is DeprecationWarning]}}))
        """)
    assert got["same"] and got["spec"] == new, got
    assert got["twins"] == [], f"{old} was loaded a second time: {got['twins']}"
    assert any(f"{old} moved to {new}" in w for w in got["warnings"]), got["warnings"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("module", "old", "new"), ATTRIBUTES)
def test_an_old_name_is_the_new_object_with_a_warning(module: str, old: str, new: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{old} moved to {module}.{new}"):
        assert getattr(mod, old) is getattr(mod, new)
    with pytest.raises(AttributeError):
        mod.no_such_name_anywhere  # noqa: B018


def test_new_path_maps_prefixes_and_leaves_others_alone() -> None:
    assert _moved.new_path("ldp.collector.app") == "ldp.ingest.app"
    assert _moved.new_path("ldp.collector.ingest") == "ldp.ingest.upload"  # the longest prefix wins
    assert _moved.new_path("ldp.server.store") == "ldp.jobs.store"
    assert _moved.new_path("ldp.collectors") is None and _moved.new_path("ldp.serverless") is None
    assert _moved.new_path("ldp.ingest") is None and _moved.new_path("ldp.jobs.fold") is None


def test_the_new_paths_import_without_a_warning() -> None:
    got = _run("""
        import json, warnings
        warnings.simplefilter("error")
        import ldp.ingest.config, ldp.jobs.fold, ldp.cli.jobs
        from ldp.jobs import fold_files
        print(json.dumps({"ok": True}))
        """)
    assert got == {"ok": True}


def test_ldp_aggregate_runs_ldp_fold_with_a_note(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from ldp.cli import main

    spec = "examples/collection.json"
    from support import ROOT

    out = tmp_path / "out"
    assert main(["aggregate", str(ROOT / "examples" / "reports.jsonl"), "--spec", str(ROOT / spec), "--out", str(out),
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "ldp aggregate is now ldp fold" in err
    assert (out / "manifest.json").exists() or any(out.iterdir())


def test_the_old_command_is_not_listed_in_help(capsys) -> None:  # type: ignore[no-untyped-def]
    from ldp.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "fold" in text and "aggregate" not in text.split("positional arguments")[0]
    assert "==SUPPRESS==" not in text


def test_serve_role_collector_is_the_ingest_role_with_a_note(capsys) -> None:  # type: ignore[no-untyped-def]
    from ldp.cli import main

    assert main(["serve", "token", "--role", "collector", "--app", "web"]) == 0
    captured = capsys.readouterr()
    assert "--role collector is now --role ingest" in captured.err
    assert "token_sha256" in captured.out  # the ingest service's app token, as --role ingest prints it


@pytest.mark.parametrize(("role", "old", "new"), [("leader", "aggregate", "run_aggregation_jobs"),
                                                   ("helper", "aggregate", "aggregation_job")])
def test_an_old_method_name_calls_the_new_method_with_a_warning(role: str, old: str, new: str) -> None:
    import importlib

    cls = getattr(importlib.import_module(f"ldp.aggregators.{role}"), role.capitalize())
    calls = []

    class Probe(cls):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:  # no store, no task: only the call is looked at
            pass

    setattr(Probe, new, lambda self, *a, **k: calls.append((a, k)) or "done")
    with pytest.warns(DeprecationWarning, match=f"{role.capitalize()}.{old} moved to {role.capitalize()}.{new}"):
        assert getattr(Probe(), old)(b"t", window=3) == "done"
    assert calls == [((b"t",), {"window": 3})]
