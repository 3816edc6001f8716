"""Protocols from other distributions (the entry-point groups ``ldp.encoders`` and ``ldp.decoders``, read by
:mod:`ldp.protocols.registry`) and the conformance suite run on a protocol by its class before it is installed.

The example distribution is ``tests/support/example_protocol`` (its pyproject.toml declares the entry points). It is
made installed without pip: a ``*.dist-info`` folder with its ``entry_points.txt`` (written from that pyproject.toml)
next to a copy of the package, on the ``PYTHONPATH`` of a subprocess, so that no registry, planner or cache of this
process ever sees it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from support import ROOT

from ldp.errors import ProtocolClashError
from ldp.protocols import registry

EXAMPLE = ROOT / "tests" / "support" / "example_protocol"


def _install(site: Path, name: str, entry_points: dict[str, dict[str, str]], package: Path | None = None) -> None:
    """What pip would leave in ``site``: the package and ``NAME-0.1.dist-info`` with ``entry_points.txt``."""
    if package is not None:
        shutil.copytree(package, site / package.name)
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for group, eps in entry_points.items()))


def _example_site(tmp_path: Path) -> Path:
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    site = tmp_path / "site"
    _install(site, project["name"], project["entry-points"], EXAMPLE / "ldp_example_protocol")
    return site


def _run(script: str, *path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, [ROOT, *path]))}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, cwd=path[0] if path else ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_example_declares_both_halves() -> None:
    eps = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]["entry-points"]
    assert eps == {registry.ENCODERS_GROUP: {"example-krr": "ldp_example_protocol.encoder"},
                   registry.DECODERS_GROUP: {"example-krr": "ldp_example_protocol.aggregate"}}


def test_check_protocol_runs_on_a_class_before_it_is_installed() -> None:
    """As scikit-learn's ``check_estimator(Estimator)``: the suite runs on the params class and on the encoder class
    of a protocol that no distribution declares, which is registered only while it runs."""
    out = _run("""
        from ldp.protocols import client_protocols
        from ldp.protocols.checks import check_protocol, protocol_checks
        from ldp_example_protocol.encoder import ExampleKRREncoder, ExampleKRRParams

        items = check_protocol(ExampleKRRParams, show=False)
        check_protocol(ExampleKRREncoder, show=False)
        print([str(c) for c in protocol_checks(ExampleKRRParams)][:2])
        print({i.part: i.present for i in items}["aggregate"], "example-krr" in client_protocols())
    """, EXAMPLE)
    assert out.splitlines() == ["['example-krr-params', 'example-krr-privacy']", "True False"]


def test_an_installed_protocol_reaches_spec_client_fold_decode_and_planner(tmp_path: Path) -> None:
    site = _example_site(tmp_path)
    out = _run("""
        import contextlib, io, json, tempfile
        from pathlib import Path
        from ldp.cli.command import main
        from ldp.client import TelemetryClient
        from ldp.decoders.base import Aggregate
        from ldp.protocols import get_protocol
        from ldp.protocols.checks import check_protocol
        from ldp.spec import CollectionSpec

        def ldp(*argv):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert main(list(argv)) == 0, argv
            return json.loads(buf.getvalue())

        check_protocol("example-krr", show=False)
        doc = {"spec_version": 1, "name": "plugin", "budget": {"per_window": 100.0, "lifetime": 1000.0},
               "metrics": {"m": {"protocol": "example-krr", "params": {"epsilon": 2.0, "domain_size": 4},
                                 "budget": {"per_report": 2.0}}}}
        tmp = Path(tempfile.mkdtemp())
        (tmp / "spec.json").write_text(json.dumps(doc))
        client = TelemetryClient(CollectionSpec.from_dict(doc), tmp / "state.db", rng=7, simulation=True)
        client.record_many([("m", i % 4) for i in range(40)])
        (tmp / "up.jsonl").write_text("".join(item.line + "\\n" for item in client.pending()))
        client.close()
        ldp("aggregate", "--spec", str(tmp / "spec.json"), "--out", str(tmp / "out"), "--quiet", "--json",
            str(tmp / "up.jsonl"))
        agg_file = next((tmp / "out").rglob("*.agg"))
        agg = Aggregate.from_bytes(agg_file.read_bytes())
        print(json.dumps({"origin": get_protocol("example-krr").origin, "aggregate": [type(agg).__name__, agg.n],
                          "decode": ldp("decode", "--spec", str(tmp / "spec.json"), "--json", str(agg_file)),
                          "plan": ldp("plan", "example-krr", "--epsilon", "1", "--d", "8", "--n", "10000",
                                      "--json")}))
    """, site)
    got = json.loads(out.splitlines()[-1])
    assert got["origin"] == ("entry point example-krr = 'ldp_example_protocol.encoder' "
                             "(distribution ldp-example-protocol 0.1)")
    assert got["aggregate"] == ["ExampleKRRAggregate", 40]
    assert got["decode"]["metric"] == "m" and got["decode"]["n"] == 40, got["decode"]
    plan = got["plan"][0] if isinstance(got["plan"], list) else got["plan"]
    assert plan["report_bits"] == 3 and plan["epsilon_per_report"]["epsilon"] == 1.0, plan


def test_a_protocol_named_like_a_built_in_is_refused_naming_both(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "clash_ldp").mkdir(parents=True)
    (site / "clash_ldp" / "__init__.py").write_text(
        "from ldp.encoders.randomized_response import GRREncoder, GRRParams\n\n\n"
        "class ClashParams(GRRParams):\n    protocol = 'grr'\n\n\n"
        "class ClashEncoder(GRREncoder):\n    params_type = ClashParams\n")
    _install(site, "clash-ldp", {registry.ENCODERS_GROUP: {"grr": "clash_ldp"}})
    monkeypatch.syspath_prepend(str(site))
    registry.clear_caches()
    try:
        with pytest.raises(ProtocolClashError, match=r"protocol 'grr' of entry point grr = 'clash_ldp' \(distribution "
                           r"clash-ldp 0.1\) \(clash_ldp.ClashEncoder\) clashes with the built-in "
                           r"ldp.encoders.randomized_response.GRREncoder"):
            registry.client_protocols()
    finally:
        monkeypatch.undo()
        registry.clear_caches()
    assert "grr" in registry.client_protocols() and registry.get_protocol("grr").origin == "ldp"
