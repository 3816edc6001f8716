"""What ``ldp simulate`` and ``ldp plan`` ask of every registered protocol: the builder of its parameters from the
command-line options (:func:`ldp.cli.counts.options_builder`: ``params_from_args`` of the family's CLI module, else
``ProtocolParams.from_options``), found without naming a protocol."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

from ldp.cli.counts import options_builder
from ldp.protocols import client_protocols

NAMES = sorted(client_protocols())


def _args(name: str, **given: object) -> argparse.Namespace:
    options = dict(protocol=name, param=[], epsilon=1.0, d=2, p=None, q=None, truth_prob=None, yes_prob=None)
    return argparse.Namespace(**{**options, **given})


def _cli_module(name: str) -> str | None:
    module = f"ldp.cli.{client_protocols()[name][0].__module__.rpartition('.')[2]}"
    return module if importlib.util.find_spec(module) is not None else None


@pytest.mark.parametrize("name", NAMES)
def test_every_protocol_has_a_builder_that_makes_its_params_or_defers(name):
    """The builder makes the protocol's params from ``--epsilon`` and ``--d`` alone, or answers ``None`` (the
    generic path: ``--param`` fields, then the planner) — never another protocol's params."""
    builder = options_builder(name)
    assert callable(builder)
    params = builder(_args(name))
    assert params is None or type(params) is client_protocols()[name][0]


def test_the_family_cli_modules_builders_are_found():
    found = {name for name in NAMES if (m := _cli_module(name)) is not None
             and hasattr(importlib.import_module(m), "params_from_args")}
    assert found == {"pem", "rappor-ngrams"}
    for name in found:
        assert options_builder(name) is importlib.import_module(_cli_module(name)).params_from_args  # type: ignore[arg-type]


def test_rr_and_grr_options_make_their_params_and_param_fields_defer():
    assert options_builder("rr")(_args("rr", p=0.25, q=0.75)).p == 0.25  # type: ignore[misc]
    assert options_builder("grr")(_args("grr", d=5)).domain_size == 5  # type: ignore[misc]
    assert options_builder("grr")(_args("grr", param=[("domain_size", 5)])) is None  # type: ignore[misc]
    with pytest.raises(ValueError, match="grr needs --epsilon and --d"):
        options_builder("grr")(_args("grr", d=None))  # type: ignore[misc]


def test_unknown_protocol_has_no_builder():
    assert options_builder("nope") is None
