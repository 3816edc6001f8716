"""The parameter tables (:mod:`ldp.conformance.param_tables`): every parameter of every client protocol is declared
(its meaning, its type), each declared range check is the check the params class makes (probed just outside and
inside each bound: the same ``param_range`` refusal, bounds and all), and each client's generated file is what this
version generates (``python conformance/docs_tables.py`` writes them)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from ldp.conformance.param_tables import FIELD_TYPES, OUTPUTS, ParamRow, render, table, tables
from ldp.encoders.base_fields import Range
from ldp.errors import Refusal
from ldp.protocols import builtin_client_protocols

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = sorted(builtin_client_protocols())


def test_every_parameter_is_declared_with_a_type_and_a_meaning() -> None:
    for name, rows in tables().items():
        params_type = builtin_client_protocols()[name][0]
        assert [r.name for r in rows] == [f.name for f in dataclasses.fields(params_type)], name
        for r in rows:
            assert r.type in FIELD_TYPES and r.doc and not r.doc.endswith("."), (name, r)
            assert r.type != "any" or (name, r.name) == ("multi", "attributes"), (name, r)
            assert not r.ranges or r.type in ("int", "float", "optint"), (name, r)


def _outside(r: Range, bound: str, integral: bool) -> Any:
    """A number just outside ``bound`` (``"min"`` or ``"max"``) of ``r``."""
    x = getattr(r, bound)
    strict = r.min_exclusive if bound == "min" else r.max_exclusive
    if strict:
        return x
    if integral:
        return x - 1 if bound == "min" else x + 1
    return math.nextafter(float(x), -math.inf if bound == "min" else math.inf)


def _probes(row: ParamRow) -> list[Any]:
    integral = row.type in ("int", "optint")
    values = [_outside(r, b, integral) for r in row.ranges for b in ("min", "max") if getattr(r, b) is not None]
    if any(r.finite for r in row.ranges):
        values += [math.inf, -math.inf]
    return values


def _refusal(params_type: Any, given: dict[str, Any]) -> Refusal | None:
    try:
        params_type.from_dict(given)
    except Refusal as exc:
        return exc
    return None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_declared_ranges_are_the_checks_the_params_class_makes(protocol: str) -> None:
    """A value just outside a bound is refused by the first declared range it fails, with exactly that range's
    bounds (a dynamic range: its static bounds among the refusal's); a value inside every range is not refused as out
    of range."""
    params_type = builtin_client_protocols()[protocol][0]
    for example in params_type.conformance_examples():
        base = example.to_dict()
        _check_ranges_at(protocol, params_type, base)
        # a static bound must not move with another parameter: each other int doubled (where still accepted)
        for name, v in base.items():
            if type(v) is int and v > 0 and _refusal(params_type, {**base, name: 2 * v}) is None:
                _check_ranges_at(protocol, params_type, {**base, name: 2 * v})


def _check_ranges_at(protocol: str, params_type: Any, base: dict[str, Any]) -> None:
    for row in table(params_type):
        for value in _probes(row):
            first = next(r for r in row.ranges if not r.holds(value))
            exc = _refusal(params_type, {**base, row.name: value})
            assert exc is not None and exc.code == "param_range", (protocol, row.name, value, exc)
            fields = dict(exc.fields)
            assert fields.pop("param") == row.name and fields.pop("got") == value, (protocol, row.name, exc.fields)
            if first.dynamic:
                assert first.fields().items() <= fields.items(), (protocol, row.name, value, exc.fields)
            else:
                assert fields == first.fields(), (protocol, row.name, value, exc.fields)
        if row.ranges and (base.get(row.name) is not None):
            assert all(r.holds(base[row.name]) for r in row.ranges), (protocol, row.name, "the example breaks it")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_declared_choices_are_the_strings_the_check_takes(protocol: str) -> None:
    """A string not among a parameter's declared choices is refused naming exactly those choices; each choice is
    taken (none refused as not a choice)."""
    params_type = builtin_client_protocols()[protocol][0]
    base = params_type.conformance_examples()[0].to_dict()
    for row in table(params_type):
        info = params_type.info_of(row.name)
        if not info.choices:
            continue
        exc = _refusal(params_type, {**base, row.name: "zz-not-a-choice"})
        assert exc is not None and exc.code == "param_choice", (protocol, row.name, exc)
        assert exc.fields["param"] == row.name and list(exc.fields["choices"]) == list(info.choices), exc.fields
        for choice in info.choices:
            taken = _refusal(params_type, {**base, row.name: choice})
            assert taken is None or taken.code != "param_choice", (protocol, row.name, choice, taken)


@pytest.mark.parametrize("path", sorted(OUTPUTS))
def test_each_client_s_generated_table_is_fresh(path: str) -> None:
    expected = render()[path]
    file = ROOT / path
    assert file.exists() and file.read_text() == expected, (
        f"{path} is not what this version generates: run python conformance/docs_tables.py")
