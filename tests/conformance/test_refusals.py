"""Refusals by meaning (docs/conformance.md, "Refusals"; :mod:`ldp.conformance.refusals`): every refusal of the
vector files carries a code of the vocabulary with exactly its schema's fields, consistent with what was given;
random bad parameters and values are refused with a code and fields that describe them; a refusal without a code
stops the generator; and every code, ``expected`` word and rule the source raises is in the vocabulary."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ldp
from ldp.conformance import protocol_vectors
from ldp.conformance.refusals import CODES, EXPECTED, KINDS, builtin_type, check_refusal, refusal_of
from ldp.encoders.base_checks import BASE_RULES, renamed
from ldp.encoders.histogram import BucketGRREncoder, BucketGRRParams
from ldp.encoders.multi import MultiEncoder, MultiParams
from ldp.encoders.numeric import DuchiEncoder, DuchiParams
from ldp.encoders.pem import PEMEncoder, PEMParams
from ldp.encoders.randomized_response import GRREncoder, GRRParams
from ldp.encoders.rappor_ngrams import RapporNgramsParams
from ldp.encoders.unary import OUEParams
from ldp.errors import Refusal, RefusalTypeError, RefusalValueError, kind_of
from ldp.protocols import builtin_client_protocols, client_protocols
from ldp.spec.kinds import metric_kinds

VECTORS = Path(__file__).resolve().parents[2] / "conformance" / "vectors"
PROTOCOLS = sorted(builtin_client_protocols())


def _refused(make: Any) -> Refusal:
    """The refusal ``make()`` raises (it must raise one, with a code)."""
    with pytest.raises((TypeError, ValueError)) as info:
        make()
    assert isinstance(info.value, Refusal), f"no code: {type(info.value).__name__}: {info.value}"
    return info.value


# -- every refusal of the vector files ------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_vector_refusal_has_a_code_of_the_vocabulary_with_its_fields(protocol: str) -> None:
    doc = json.loads((VECTORS / f"{protocol}.json").read_text("ascii"))
    params_type = client_protocols()[protocol][0]
    rules, names = params_type.declared_rules(), [f.name for f in dataclasses.fields(params_type)]
    for of in ("params", "values"):
        for item in doc["refusals"][of]:
            if "error" not in item:
                continue
            error = item["error"]
            assert list(error) == ["type", "code", "fields", "message"], item
            assert error["type"] in ("TypeError", "ValueError"), item
            assert check_refusal(error["code"], error["fields"], of, rules) == [], item
            _consistent(error["code"], error["fields"], item, names)


def _consistent(code: str, fields: dict[str, Any], item: dict[str, Any], names: list[str]) -> None:
    """``fields`` describe what ``item`` gave: the kind of a value of the wrong type, the number out of range, the
    unknown and missing parameters, the attribute of a record."""
    if "params" in item:  # a refusal of from_dict
        given = item["params"]
        if code == "unknown_params":
            assert fields["params"] == sorted(set(given) - set(names)), item
        elif code == "missing_params":
            assert fields["params"] == [n for n in names if n not in given], item
        elif "attribute" not in fields:  # (a multi attribute's refusal names its own protocol's parameters)
            assert set(fields.get("params", [fields.get("param")])) - {None} <= set(names), item
            if "param" in fields and "index" not in fields and fields["param"] in given:
                value = given[fields["param"]]
                if code == "param_type":
                    assert fields["got"] == kind_of(value), item
                elif code == "param_range":
                    assert fields["got"] == value and type(fields["got"]) is type(value), item
                elif code == "param_choice":
                    assert fields["got"] == value, item
                elif code == "param_length":
                    assert fields["got"] == len(value), item
        return
    value = item["value"]
    if "attribute" in fields:
        value = value[fields["attribute"]]
    if code == "value_type":
        assert fields["got"] == kind_of(value), item
    elif code in ("value_range", "unknown_label"):
        assert fields["got"] == value and type(fields["got"]) is type(value), item
    elif code == "missing_attributes":
        assert fields["attributes"] and not set(fields["attributes"]) & set(value), item
    elif code == "unknown_attributes":
        assert fields["attributes"] == sorted(fields["attributes"]) and set(fields["attributes"]) <= set(value), item
    elif code == "not_in_alphabet":
        assert fields["char"] in value, item
    elif code == "value_too_long":
        assert fields["got"] == len(value.encode() if fields["unit"] == "bytes" else value), item


def test_the_vectors_use_most_codes() -> None:
    """The vocabulary is what the vectors need: all but the refusals no conformance trial reaches (a size limit;
    a metric's trust model, which is the client runtime's, not a protocol's: tests/client/test_trust_model.py)."""
    used = set()
    for protocol in PROTOCOLS:
        doc = json.loads((VECTORS / f"{protocol}.json").read_text("ascii"))
        used |= {i["error"]["code"] for of in ("params", "values") for i in doc["refusals"][of] if "error" in i}
    assert set(CODES) - used == {"param_limit", "trust_model"}


# -- random bad input: the fields describe it -------------------------------------------------------------------------
JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False)
                       | st.text(max_size=8), lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(epsilon=JSONISH | st.floats())
def test_a_bad_epsilon_is_named_by_its_kind_or_number(epsilon: Any) -> None:
    try:
        GRRParams.from_dict({"epsilon": epsilon, "domain_size": 4})
        return
    except (TypeError, ValueError) as exc:
        assert isinstance(exc, Refusal)
        refusal = exc
    if refusal.code == "param_type":
        assert refusal.fields == {"param": "epsilon", "expected": "float", "got": kind_of(epsilon)}
        assert isinstance(refusal, TypeError)
    elif refusal.code == "param_range":
        assert refusal.fields == {"param": "epsilon", "got": epsilon, "min": 0, "min_exclusive": True, "finite": True}
        assert refusal.fields["got"] is epsilon and not (epsilon > 0 and math.isfinite(epsilon))
    else:  # finite and > 0, but too large or too small for the client's resolution
        assert refusal.code == "param_relation" and refusal.fields["params"] == ["epsilon", "domain_size"]
        assert refusal.fields["rule"] == ("epsilon_too_large" if epsilon > 1 else "epsilon_too_small")


@settings(max_examples=200, deadline=None)
@given(d=st.integers(-2**40, 2**40) | JSONISH)
def test_a_bad_domain_size_is_named_by_its_kind_or_number(d: Any) -> None:
    """OUE: the kind of a non-int, an int outside ``[2, 2^32]`` as given, a size whose reports are too long."""
    try:
        OUEParams.from_dict({"epsilon": 1.0, "domain_size": d})
        assert type(d) is int and 2 <= d
        return
    except (TypeError, ValueError) as exc:
        assert isinstance(exc, Refusal)
        refusal = exc
    if type(d) is not int:
        assert (refusal.code, refusal.fields) == ("param_type", {"param": "domain_size", "expected": "int",
                                                                 "got": kind_of(d)})
    elif not 2 <= d <= 2**32:
        assert (refusal.code, refusal.fields) == ("param_range", {"param": "domain_size", "got": d, "min": 2,
                                                                  "max": 2**32})
    else:  # d bits in every report: its upload line is too long
        assert refusal.code == "param_limit" and refusal.fields["limit"] == "line_bytes"
        assert refusal.fields["got"] > refusal.fields["max"]


@settings(max_examples=100, deadline=None)
@given(extra=st.sets(st.text(min_size=1, max_size=6), min_size=1, max_size=4), drop=st.sets(st.sampled_from(
    ["epsilon", "domain_size"])))
def test_unknown_and_missing_parameters_are_listed(extra: set[str], drop: set[str]) -> None:
    extra -= {"epsilon", "domain_size", "labels"}
    base = {k: v for k, v in {"epsilon": 1.0, "domain_size": 4}.items() if k not in drop}
    if extra:
        refusal = _refused(lambda: GRRParams.from_dict({**base, **dict.fromkeys(extra, 1)}))
        assert (refusal.code, refusal.fields, builtin_type(refusal)) == (
            "unknown_params", {"params": sorted(extra)}, "ValueError")
    elif drop:
        refusal = _refused(lambda: GRRParams.from_dict(base))
        assert (refusal.code, refusal.fields, builtin_type(refusal)) == (
            "missing_params", {"params": [n for n in ("epsilon", "domain_size") if n in drop]}, "TypeError")


@settings(max_examples=300, deadline=None)
@given(value=JSONISH, labels=st.booleans())
def test_a_refused_grr_value_is_described(value: Any, labels: bool) -> None:
    params = GRRParams(1.0, 4, ("a", "b", "c", "d") if labels else None)
    encoder = GRREncoder(params, rng=0, simulation=True)
    try:
        index = encoder.prepare(value)
    except (TypeError, ValueError) as exc:
        assert isinstance(exc, Refusal)
        if exc.code == "value_type":
            assert exc.fields == {"expected": "label_or_index" if labels else "index", "got": kind_of(value)}
        elif exc.code == "value_range":
            assert exc.fields == {"got": value, "min": 0, "max": 4, "max_exclusive": True}
            assert type(value) is int and not 0 <= value < 4
        else:
            assert (exc.code, exc.fields) == ("unknown_label", {"got": value})
            assert labels and value not in ("a", "b", "c", "d")
        return
    assert 0 <= index < 4


@settings(max_examples=300, deadline=None)
@given(value=st.floats(allow_nan=False) | st.integers(-100, 100) | JSONISH)
def test_a_refused_number_is_described(value: Any) -> None:
    """A mean (``duchi``, on ``[0, 10]``) and a histogram (``bucket-grr``, edges 0, 1, 2, 4): the kind of a
    non-number, the number outside the range as given, ``finite`` for an infinity."""
    for make, low, high in ((lambda: DuchiEncoder(DuchiParams(1.0, 0.0, 10.0), rng=0, simulation=True), 0.0, 10.0),
                            (lambda: BucketGRREncoder(BucketGRRParams(1.0, (0.0, 1.0, 2.0, 4.0)), rng=0,
                                                      simulation=True), 0.0, 4.0)):
        encoder = make()
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and low <= value <= high:
            encoder.prepare(value)
            continue
        refusal = _refused(lambda e=encoder: e.prepare(value))
        if not number:
            assert (refusal.code, refusal.fields) == ("value_type", {"expected": "float", "got": kind_of(value)})
            continue
        finite = {"finite": True} if value in (float("inf"), float("-inf")) else {}
        assert (refusal.code, refusal.fields) == ("value_range", {"got": value, "min": low, "max": high, **finite})
        assert refusal.fields["got"] is value


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=JSONISH, x=st.floats(allow_nan=False) | JSONISH)
def test_a_refused_attribute_keeps_its_own_refusal(a: Any, x: Any) -> None:
    """A ``multi`` record: the first refused attribute's own code and fields, and ``attribute``."""
    params = MultiParams.of(2.0, "split", a=("grr", {"domain_size": 3}), x=("duchi", {"low": 0.0, "high": 1.0}))
    encoder = MultiEncoder(params, rng=0, simulation=True)
    parts = {"a": GRREncoder(params.components[0], rng=0, simulation=True),
             "x": DuchiEncoder(params.components[1], rng=0, simulation=True)}
    own = {}
    for name, value in (("a", a), ("x", x)):
        try:
            parts[name].prepare(value)
        except (TypeError, ValueError) as exc:
            own[name] = exc
    if not own:
        encoder.prepare({"a": a, "x": x})
        return
    refusal = _refused(lambda: encoder.prepare({"a": a, "x": x}))
    name, inner = next(iter(own.items()))
    assert isinstance(inner, Refusal)
    assert (refusal.code, refusal.fields, type(refusal)) == (inner.code, {**inner.fields, "attribute": name},
                                                            type(inner))
    assert str(refusal) == f"attribute {name!r}: {inner}"


@settings(max_examples=200, deadline=None)
@given(value=st.text(max_size=12))
def test_a_refused_string_is_described(value: str) -> None:
    """PEM (at most 4 bytes, no NUL) and rappor-ngrams (letters ``abc``, at most 6): the length in its unit, the
    character outside the alphabet."""
    pem = PEMEncoder(PEMParams(2.0, max_length=4), rng=0, simulation=True)
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        assert _refused(lambda: pem.prepare(value)).code == "not_encodable"
        return
    if not raw or b"\x00" in raw or len(raw) > 4:
        refusal = _refused(lambda: pem.prepare(value))
        expected = ("not_in_alphabet", {"char": "\x00"}) if b"\x00" in raw else (
            "value_too_long", {"got": len(raw), "max": 4, "unit": "bytes"}) if raw else ("empty_value", {})
        assert (refusal.code, refusal.fields) == expected
    else:
        pem.prepare(value)
    ngrams = RapporNgramsParams.examples()[0]
    assert not ngrams.truncate
    bad = set(value) - set(ngrams.alphabet)
    if value and not bad and len(value) <= ngrams.max_length:
        ngrams.grams(value)
        return
    refusal = _refused(lambda: ngrams.grams(value))
    if not value:
        assert refusal.code == "empty_value"
    elif bad:
        assert (refusal.code, refusal.fields) == ("not_in_alphabet", {"char": min(bad)})
    else:
        assert (refusal.code, refusal.fields) == ("value_too_long", {"got": len(value), "max": ngrams.max_length,
                                                                     "unit": "characters"})


# -- the exceptions -----------------------------------------------------------------------------------------------
def test_refusals_keep_their_builtin_bases_text_and_fields_through_pickling() -> None:
    for cls, builtin in ((RefusalTypeError, TypeError), (RefusalValueError, ValueError)):
        exc = cls("epsilon must be finite and > 0, got -1", "param_range", param="epsilon", got=-1, min=0)
        assert isinstance(exc, builtin) and isinstance(exc, ldp.errors.LdpError)
        assert builtin_type(exc) == builtin.__name__
        back = pickle.loads(pickle.dumps(exc))
        assert (type(back), str(back), back.code, back.fields) == (cls, str(exc), exc.code, exc.fields)
        again = exc.restated("attribute 'a': " + str(exc), attribute="a")
        assert (type(again), again.code, again.fields["attribute"], str(again)) == (
            cls, "param_range", "a", "attribute 'a': epsilon must be finite and > 0, got -1")
    moved = renamed(RefusalValueError("m", "param_relation", params=["epsilon", "width"], rule="r"),
                    {"width": "word_width"}, "word sketch: m")
    assert (str(moved), moved.fields) == ("word sketch: m", {"params": ["epsilon", "word_width"], "rule": "r"})


def test_kind_of_is_json_s_kind() -> None:
    given_kinds = [(None, "null"), (True, "bool"), (3, "int"), (3.0, "float"), ("s", "string"), ([], "list"),
                   ((), "list"), ({}, "object"), (b"x", "bytes"), (object(), "other")]
    assert [kind_of(v) for v, _ in given_kinds] == [k for _, k in given_kinds]
    assert {k for _, k in given_kinds} == set(KINDS)


def test_the_generator_stops_on_a_refusal_without_a_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def prepare(self: Any, value: Any) -> int:
        raise ValueError("a refusal with no code")

    monkeypatch.setattr(GRREncoder, "prepare", prepare)
    with pytest.raises(AssertionError, match="values path without a code: ValueError: a refusal with no code"):
        protocol_vectors("grr")
    with pytest.raises(AssertionError, match="params path without a code"):
        refusal_of(TypeError("x"), "params")
    with pytest.raises(AssertionError, match="lacks"):
        refusal_of(RefusalValueError("x", "param_range", got=1), "params")


@pytest.mark.parametrize(("code", "fields", "of", "problem"), [
    ("no_such_code", {}, "params", "unknown code"),
    ("param_range", {"param": "epsilon"}, "params", "lacks ['got']"),
    ("param_range", {"param": "epsilon", "got": 1, "low": 0}, "params", "outside its schema: ['low']"),
    ("param_type", {"param": "p", "expected": "number", "got": "int"}, "params", "expected='number'"),
    ("param_type", {"param": "p", "expected": "int", "got": "NoneType"}, "params", "got='NoneType'"),
    ("value_range", {"got": "7", "min": 0, "max": 1}, "values", "got='7'"),
    ("value_range", {"got": 7, "min": 0, "max": 1, "finite": False}, "values", "finite=False"),
    ("value_type", {"expected": "int", "got": "int"}, "params", "a refusal of values, raised on params"),
    ("param_relation", {"params": ["p"], "rule": "p>q"}, "params", "rule 'p>q' is not declared"),
])
def test_the_check_names_what_breaks_the_vocabulary(code: str, fields: dict[str, Any], of: str, problem: str) -> None:
    problems = check_refusal(code, fields, of, BASE_RULES)
    assert any(problem in p for p in problems), problems


# -- the source: every code, word and rule it raises is in the vocabulary --------------------------------------------
_CALLS = ("RefusalTypeError", "RefusalValueError", "refuse_type", "refuse_relation")
_KEYWORDS = ("expected", "rule", "limit")


def _raised(tree: ast.AST) -> list[tuple[str, Any, int]]:
    """``(what, value, line)`` of the codes, ``expected`` words and rules written in the refusals of a module."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        constants = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        keywords = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
        if name in _CALLS[:2] and len(constants) > 1:
            out.append(("code", constants[1], node.lineno))
        if name == _CALLS[2] and len(constants) > 2:
            out.append(("expected", constants[2], node.lineno))
        if name == _CALLS[3] and len(constants) > 1:
            out.append(("rule", constants[1], node.lineno))
        for key in _KEYWORDS:
            if key in keywords:
                out.append((key, keywords[key], node.lineno))
    return out


_MAY_RAISE = re.compile("|".join(_CALLS) + r"|\b(?:" + "|".join(_KEYWORDS) + r")\b")
"""A module that :func:`_raised` finds anything in has one of the names it looks for in its text (an identifier is
written as it is named, unless it is not ASCII: Python normalizes those, so such a module is parsed anyway)."""


def test_every_code_word_and_rule_the_source_raises_is_in_the_vocabulary() -> None:
    """Also the refusals no vector reaches (limits, a derived size, a Python caller's bytes)."""
    rules = dict(BASE_RULES)
    for params_type in metric_kinds().values():  # the protocols, and the kinds without an encoder (poplar1)
        rules.update(params_type.declared_rules())
    allowed = {"code": set(CODES), "expected": set(EXPECTED), "rule": set(rules), "limit": set(rules)}
    package = Path(ldp.__file__).parent
    found, wrong = 0, []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        if not _MAY_RAISE.search(text) and text.isascii():
            continue  # no name _raised looks for is written in it: nothing to find (and parsing is the test's time)
        for what, value, line in _raised(ast.parse(text, str(path))):
            if value is None:  # not a constant (a rule passed on from an inner refusal)
                continue
            found += 1
            if value not in allowed[what]:
                wrong.append(f"{path.relative_to(package.parent)}:{line} {what} {value!r}")
    assert not wrong, wrong
    assert found > 100


# -- any protocol, any bad input: a refusal with a code, or an acceptance ------------------------------------------
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(protocol=st.sampled_from(PROTOCOLS), data=st.data())
def test_any_bad_parameter_is_refused_by_a_code_of_the_vocabulary(protocol: str, data: st.DataObject) -> None:
    """One field of a protocol's first example set to anything JSON holds: accepted, or refused with a code (no
    internal error, no refusal without a code), its fields of the code's schema and of the protocol's rules."""
    params_type = client_protocols()[protocol][0]
    base = params_type.examples()[0].to_dict()
    name = data.draw(st.sampled_from(sorted(base)), label="field")
    trial = {**base, name: data.draw(JSONISH, label="value")}
    try:
        params_type.from_dict(trial)
    except (TypeError, ValueError) as exc:
        assert isinstance(exc, Refusal), f"{protocol} {trial}: {type(exc).__name__}: {exc}"
        assert check_refusal(exc.code, exc.fields, "params", params_type.declared_rules()) == [], (trial, exc)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(protocol=st.sampled_from(PROTOCOLS), value=JSONISH)
def test_any_bad_value_is_refused_by_a_code_of_the_vocabulary(protocol: str, value: Any) -> None:
    params_type, encoder_type = client_protocols()[protocol]
    params = params_type.examples()[0]
    extra: dict[str, Any] = {"cohort": 0} if encoder_type.assigned_cohorts(params) else {}
    if encoder_type.needs_secret:
        extra["secret"] = b"s"
    encoder = encoder_type(params, rng=0, simulation=True, **extra)
    for given_value in (value, {name: value for name in params.attribute_parts} or value):
        try:
            encoder.prepare(given_value)
        except (TypeError, ValueError) as exc:
            assert isinstance(exc, Refusal), f"{protocol} {given_value!r}: {type(exc).__name__}: {exc}"
            assert check_refusal(exc.code, exc.fields, "values") == [], (given_value, exc)


@pytest.mark.parametrize("protocol", ["duchi", "piecewise", "hybrid", "memo-mean"])
@pytest.mark.parametrize("value", [10**400, -(10**400), 2**1024])
def test_an_int_past_the_largest_double_is_refused_as_infinite(protocol: str, value: int) -> None:
    """A mean protocol given an int no double holds refuses it as the other clients do (they read it as ±inf):
    ``value_range`` with ``finite``, the int itself as ``got`` — not a bare ``OverflowError``."""
    from ldp.protocols.registry import get_protocol

    proto = get_protocol(protocol)
    params = proto.params_type.examples()[0]
    refusal = _refused(lambda: proto.encoder_type(params).encode(value))
    assert refusal.code == "value_range" and refusal.fields["finite"] is True and refusal.fields["got"] is value
