"""One command, one module (issue 48): every ``ldp`` command is added by the ``register`` function of one module
listed in :data:`ldp.cli.commands.COMMAND_MODULES`, with the handler :func:`ldp.cli.command.main` runs; the protocol
is positional everywhere (``--protocol`` kept as an alias); an option a command or protocol does not use is refused
(exit status 2), never an internal error."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ldp.cli
from ldp.cli.command import main, make_parser
from ldp.cli.commands import COMMAND_MODULES
from ldp.cli.jobs import DEPRECATED_COMMANDS
from ldp.protocols import client_protocols

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = sorted(client_protocols())
KIND = {name: params.population_kind for name, (params, _) in client_protocols().items()}
HELP_ORDER = ("demo", "compare", "spec", "fold", "merge", "decode", "serve", "collect", "watch", "shuffle",
              "privacy", "simulate", "plan", "rappor-decode", "sfp-discover", "pem-discover", "ngrams-discover",
              "associate")
ATTRIBUTES = json.dumps([["a", "grr", {"domain_size": 4}], ["b", "piecewise", {"low": 0, "high": 10}]])


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _registered_by(module: str) -> dict[str, argparse.ArgumentParser]:
    """The commands one module's ``register`` adds to an empty parser."""
    sub = argparse.ArgumentParser(prog="ldp").add_subparsers(dest="command")
    importlib.import_module(module).register(sub)
    return dict(sub.choices)


def run(*argv: str) -> tuple[int, str, str]:
    """``ldp ARGV`` in-process: (status, stdout, stderr); argparse's own exit counts as a status."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exc:
            status = int(exc.code or 0)
    return status, out.getvalue(), err.getvalue()


def refused(*argv: str) -> str:
    """The one error line of a refused command (exit status 2, no traceback, no internal error)."""
    status, _, err = run(*argv)
    last = err.rstrip("\n").split("\n")[-1]
    assert status == 2, (argv, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    assert last.startswith(f"ldp {argv[0]}: error: "), (argv, err)
    return last


# registration ------------------------------------------------------------------------------------------------------


def test_every_module_with_a_register_function_is_listed_once():
    """A command module that is not in COMMAND_MODULES would silently be missing from ``ldp``."""
    assert len(set(COMMAND_MODULES)) == len(COMMAND_MODULES)
    found = {f"ldp.cli.{m.name}" for m in pkgutil.iter_modules(ldp.cli.__path__)
             if m.name != "__main__" and hasattr(importlib.import_module(f"ldp.cli.{m.name}"), "register")}
    found |= {"ldp.spec.cli"}  # `ldp spec` lives with the spec (ldp.spec.cli)
    assert found == set(COMMAND_MODULES), "add the module to ldp.cli.commands.COMMAND_MODULES (or drop it)"


def test_each_command_is_wired_once_and_appears_in_the_help_in_order():
    owners: dict[str, list[str]] = {}
    for module in COMMAND_MODULES:
        added = _registered_by(module)
        assert added, f"{module}.register adds no command"
        for name, parser in added.items():
            owners.setdefault(name, []).append(module)
            assert callable(parser.get_default("handler")), f"ldp {name} has no handler"
    assert {n: m for n, m in owners.items() if len(m) > 1} == {}
    parser = make_parser()
    hidden = set(DEPRECATED_COMMANDS)  # old names that still run (ldp aggregate), listed nowhere
    assert tuple(c for c in _subparsers(parser).choices if c not in hidden) == HELP_ORDER \
        == tuple(n for n in owners if n not in hidden)
    text = parser.format_help()
    listed = text.split("{", 1)[1].split("}", 1)[0].split(",")  # the usage's list of commands
    assert listed == list(HELP_ORDER) and all(name in text for name in HELP_ORDER)
    assert not any(line.split()[:1] == [name] for line in text.splitlines() for name in hidden)


def test_the_family_commands_live_with_their_family():
    """``ldp/cli/<stem>.py``: the stem of the module of the family's params (architecture.md)."""
    stems = {params.__module__.rpartition(".")[2] for params, _ in client_protocols().values()}
    family = {"rappor-decode": "rappor", "sfp-discover": "sfp", "pem-discover": "pem",
              "ngrams-discover": "rappor_ngrams"}
    for command, stem in family.items():
        assert stem in stems
        assert command in _registered_by(f"ldp.cli.{stem}")


def test_the_command_module_holds_no_command():
    """``command.py`` keeps main, the shared options and the dispatch: no command name, no per-command branch."""
    source = (ROOT / "ldp" / "cli" / "command.py").read_text()
    assert "args.command ==" not in source and "add_parser(" not in source
    assert not any(f'"{name}"' in source for name in HELP_ORDER)


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["simulate", "--help"], ["plan", "--help"]])
def test_help_and_version_import_no_numpy(argv):
    code = ("import sys\nfrom ldp.cli.command import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy', 'sklearn', 'pandas'}),"
            " file=sys.stderr)")
    res = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60,
                         cwd=ROOT)
    assert res.returncode == 0 and res.stderr.strip().splitlines()[-1] == "[]", res.stderr


# the protocol: positional, or --protocol ---------------------------------------------------------------------------


@pytest.mark.parametrize("command, rest", [
    ("privacy", ["--epsilon", "1", "--d", "4", "--json"]),
    ("plan", ["--epsilon", "1", "--d", "4", "--n", "1000", "--json"]),
    ("simulate", ["--epsilon", "1", "--d", "4", "--n", "500", "--trials", "2", "--seed", "3", "--json"]),
])
def test_the_protocol_is_positional_and_the_option_an_alias(command, rest):
    positional = run(command, "grr", *rest)
    assert positional[0] == 0 and json.loads(positional[1])
    assert run(command, "--protocol", "grr", *rest) == positional
    assert run(command, *rest, "--protocol", "grr") == positional
    assert run(command, "grr", "--protocol", "grr", *rest) == positional  # the same name twice: fine
    last = refused(command, "grr", "--protocol", "oue", *rest)
    assert "'grr'" in last and "--protocol 'oue'" in last and "give it once" in last


def test_an_option_the_command_does_not_have_is_named_by_the_command():
    """argparse's top-level parser would print ``ldp: error: unrecognized arguments``; the contract names the command
    (``docs/cli.md``), with the command's usage first."""
    status, out, err = run("privacy", "grr", "--epsilon", "1", "--d", "4", "--population", "zipf")
    assert status == 2 and out == "" and err.startswith("usage: ldp privacy ")
    assert err.endswith("\nldp privacy: error: unrecognized arguments: --population zipf\n")
    status, _, err = run("spec", "validate", "x.json", "--nope")
    assert status == 2 and err.endswith("\nldp spec validate: error: unrecognized arguments: --nope\n")


def test_a_missing_protocol_is_named():
    assert "name the protocol: ldp simulate PROTOCOL (or --protocol PROTOCOL)" in refused("simulate", "--epsilon",
                                                                                           "1")
    assert "name the protocol" in refused("privacy", "--epsilon", "1")
    assert "or use --recommend" in refused("plan", "--epsilon", "1", "--d", "4", "--n", "10")


# refusals ----------------------------------------------------------------------------------------------------------


def test_an_attack_without_a_model_is_refused_naming_the_protocols_that_have_one():
    last = refused("simulate", "bucket-grr", "--epsilon", "1", "--d", "8", "--n", "300", "--attack", "mga",
                   "--targets", "2")
    assert "no maximal gain attack is defined for bucket-grr" in last
    assert "it is for blh, grr, olh, oue, rappor, sue" in last and "--attack random" in last
    assert "rr" in refused("simulate", "rr", "--epsilon", "1", "--n", "300", "--attack", "mga", "--targets", "1")
    for protocol in ("pem", "rappor-ngrams"):  # discovery: no scoring of given candidates
        for attack in ("mga", "random"):
            last = refused("simulate", protocol, "--epsilon", "2", "--d", "8", "--n", "300", "--attack", attack,
                           "--targets", "2")
            assert f"--attack {attack}: {protocol} has no attack model here" in last
    assert "--attack is for the frequency protocols" in refused("simulate", "multi", "--param",
                                                                f"attributes={ATTRIBUTES}", "--epsilon", "1",
                                                                "--attack", "random")


def test_attack_and_accuracy_options_are_not_mixed():
    base = ["simulate", "grr", "--epsilon", "1", "--d", "8", "--n", "300"]
    for option in (["--trials", "3"], ["--method", "per_report"], ["--confidence", "0.9"]):
        last = refused(*base, "--attack", "random", "--targets", "2", *option)
        assert f"{option[0]}: not with --attack, which simulates one poisoned collection" in last
    for option in (["--fraction", "0.1"], ["--targets", "2"]):
        assert f"{option[0]}: only with --attack mga|random" in refused(*base, *option)


def test_one_protocols_own_options_are_refused_for_the_others():
    last = refused("privacy", "grr", "--epsilon", "1", "--d", "4", "--p", "0.2", "--q", "0.7")
    assert last.endswith("--p, --q: not an option of grr (give its parameters with --epsilon, --d or --param "
                         "KEY=VALUE); --p, --q are for rr")
    assert "--truth-prob: not an option of oue" in refused("plan", "oue", "--epsilon", "1", "--d", "4", "--n", "9",
                                                           "--truth-prob", "0.5")
    assert "--yes-prob: not an option of duchi" in refused("simulate", "duchi", "--epsilon", "1", "--yes-prob",
                                                           "0.5")
    assert "either as --p or as --param" in refused("privacy", "rr", "--param", "p=0.2", "--param", "q=0.7", "--p",
                                                    "0.3")
    status, out, _ = run("privacy", "rr", "--p", "0.2", "--q", "0.7", "--json")
    assert status == 0 and json.loads(out)["params"] == {"p": 0.2, "q": 0.7}


def test_options_a_plan_or_privacy_does_not_use_are_refused():
    mean = ["--epsilon", "1", "--param", "low=0", "--param", "high=10", "--n", "1000"]
    for option in (["--alpha", "0.1"], ["--power", "0.8"], ["--frequency", "0.2"], ["--candidates", "5"]):
        assert f"{option[0]}: not for duchi: a mean's plan gives the SE" in refused("plan", "duchi", *mean, *option)
    multi = ["plan", "multi", "--epsilon", "1", "--param", f"attributes={ATTRIBUTES}", "--n", "1000"]
    assert "it does not take --reports" in refused(*multi, "--reports", "3")
    assert "(without --mean)" in refused("plan", "duchi", *mean, "--mean")
    assert "--delta qualifies the central guarantee of --shuffled N" in refused("privacy", "grr", "--epsilon", "1",
                                                                                "--d", "4", "--delta", "1e-6")
    assert "--d 9: duchi takes numbers, not a domain" in refused("privacy", "duchi", "--epsilon", "1", "--param",
                                                                  "low=0", "--param", "high=1", "--d", "9")
    assert run("privacy", "cms", "--epsilon", "1", "--d", "9")[0] == 0  # an open domain: the candidates simulated
    assert "rr has a domain of 2 values; --d 9 contradicts it" in refused("privacy", "rr", "--epsilon", "1", "--d",
                                                                          "9")
    assert run("privacy", "rr", "--epsilon", "1", "--d", "2")[0] == 0
    assert run("privacy", "grr", "--epsilon", "1", "--d", "4", "--shuffled", "1e5", "--delta", "1e-6")[0] == 0


# every command with every protocol ---------------------------------------------------------------------------------


def _options(protocol: str, command: str = "simulate") -> list[str]:
    """Enough options for the protocol's kind: a domain, bounds, or attributes (and for ``ldp privacy`` the mode,
    which ``ldp plan multi`` chooses and ``ldp simulate`` recommends)."""
    if KIND[protocol] == "attributes":
        return ["--epsilon", "1", "--param", f"attributes={ATTRIBUTES}"] + (
            ["--param", "mode=split"] if command == "privacy" else [])
    if KIND[protocol] == "numbers":
        return ["--epsilon", "1", "--param", "low=0", "--param", "high=10"]
    return ["--epsilon", "2", "--d", "2" if protocol == "rr" else "8"]


COMMANDS = {
    "privacy": ["privacy", "{p}"],
    "plan": ["plan", "{p}", "--n", "5000"],
    "simulate": ["simulate", "{p}", "--n", "300", "--trials", "2", "--seed", "1"],
    "simulate-per-report": ["simulate", "{p}", "--n", "200", "--trials", "2", "--seed", "1", "--method",
                            "per_report"],
    "attack-mga": ["simulate", "{p}", "--n", "300", "--seed", "1", "--attack", "mga", "--targets", "2"],
    "attack-random": ["simulate", "{p}", "--n", "300", "--seed", "1", "--attack", "random", "--targets", "2"],
}


def _no_internal_error(argv: list[str]) -> int:
    status, _, err = run(*argv)
    assert status in (0, 2), (argv, err)
    assert "internal error" not in err and "Traceback" not in err, (argv, err)
    if status == 2:
        assert err.rstrip("\n").split("\n")[-1].startswith(f"ldp {argv[0]}: error: "), (argv, err)
    return status


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_command_runs_or_refuses_every_protocol(protocol):
    """privacy, plan, simulate (both methods) and both attacks, the protocol positional: a result or a clear
    refusal. The commands that must succeed do (the attacks and the plans of the unplanned may refuse)."""
    for name, template in COMMANDS.items():
        argv = [a.format(p=protocol) for a in template] + _options(protocol, template[0])
        status = _no_internal_error(argv)
        if name in ("privacy", "simulate"):
            assert status == 0, argv


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(protocol=st.sampled_from(PROTOCOLS), command=st.sampled_from(["privacy", "plan", "simulate", "attack"]),
       extra=st.lists(st.sampled_from([
           ["--p", "0.3"], ["--q", "0.6"], ["--truth-prob", "0.4"], ["--yes-prob", "0.6"], ["--d", "5"],
           ["--param", "epsilon=2"], ["--param", "bogus=1"], ["--delta", "1e-6"], ["--shuffled", "10000"],
           ["--windows", "3"],
           ["--population", "uniform"], ["--population", "normal"], ["--s", "1.5"], ["--loc", "1"],
           ["--scale", "2"], ["--trials", "2"], ["--method", "per_report"], ["--confidence", "0.9"],
           ["--fraction", "0.1"], ["--targets", "2"], ["--alpha", "0.1"], ["--power", "0.8"], ["--reports", "2"],
           ["--distinct-values", "2"], ["--frequency", "0.3"], ["--candidates", "4"], ["--target-se", "0.05"],
           ["--mean"], ["--recommend"], ["--protocol", "grr"], ["--seed", "4"]]), max_size=3))
def test_option_combinations_never_end_in_an_internal_error(protocol, command, extra):
    """Any of these options with any protocol: a result or one ``ldp <command>: error:`` line (argparse's own
    refusals of an option a command does not have included)."""
    head = {"privacy": ["privacy", protocol], "plan": ["plan", protocol, "--n", "2000"],
            "simulate": ["simulate", protocol, "--n", "200", "--trials", "2"],
            "attack": ["simulate", protocol, "--n", "200", "--attack", "random", "--targets", "2"]}[command]
    _no_internal_error(head + _options(protocol, head[0]) + [a for option in extra for a in option])
