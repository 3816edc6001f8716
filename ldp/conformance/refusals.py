"""Refusals by meaning: the closed vocabulary of the ``code`` and ``fields`` every refusal of a protocol's parameters
(``from_dict``) and values (the encoder's ``prepare``) carries (:class:`~ldp.errors.Refusal`), in one table that
the vector generator (:mod:`ldp.conformance.vectors`), its tests and docs/conformance.md's generated table read.

A client in another language checks a refusal by its builtin ``type`` (``TypeError`` or ``ValueError``), its
``code`` and its ``fields``; its message is its own (the vectors hold Python's, for reference). Standard library
only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ldp.errors import Refusal

__all__ = ["Code", "CODES", "EXPECTED", "KINDS", "UNITS", "builtin_type", "check_refusal", "refusal_of",
           "codes_table", "words_table"]


@dataclass(frozen=True)
class Code:
    """One refusal code: what it means, the fields every refusal of it carries and those it may carry."""

    meaning: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    of: str = "params"
    """``"params"`` (a refusal of ``from_dict``) or ``"values"`` (of the encoder's ``prepare``)."""


_BOUNDS = ("min", "max", "min_exclusive", "max_exclusive", "finite")

CODES: Mapping[str, Code] = {
    "missing_params": Code("required parameters are missing: `params`, in declaration order", ("params",),
                           ("attribute",)),
    "unknown_params": Code("parameters the protocol does not have: `params`, sorted", ("params",), ("attribute",)),
    "param_type": Code("parameter `param` is not of the `expected` kind: `got` is the kind given; `index`: which "
                       "entry of a list parameter", ("param", "expected", "got"), ("index", "attribute")),
    "param_range": Code("the number `got` given for `param` is out of its range: the bounds that apply of `min`, "
                        "`max` (`min_exclusive`, `max_exclusive` when strict), `finite` when a non-finite number is "
                        "refused", ("param", "got"), (*_BOUNDS, "index", "attribute")),
    "param_choice": Code("`got` (the value given, any JSON) is not one of the strings `choices` of `param`",
                         ("param", "choices", "got"), ("index", "attribute")),
    "param_length": Code("a list or string parameter `param` has `got` entries (characters), not within `min`, `max`",
                         ("param", "got"), ("min", "max", "attribute")),
    "param_relation": Code("the parameters `params` break the rule `rule` (a stable id: the table of rules below); "
                           "`index`: which entry of a list parameter", ("params", "rule"), ("index", "attribute")),
    "param_limit": Code("a size that follows from the parameters, `got`, is over the limit `limit` (an id: the table "
                        "of rules below), at most `max`", ("limit", "got", "max"), ("attribute",)),
    "value_type": Code("the value is not of the `expected` kind: `got` is the kind given", ("expected", "got"),
                       ("attribute",), of="values"),
    "value_range": Code("the number `got` is outside `[min, max]` (`min_exclusive`, `max_exclusive` when strict; "
                        "`finite` when it is not finite)", ("got", "min", "max"),
                        ("min_exclusive", "max_exclusive", "finite", "attribute"), of="values"),
    "unknown_label": Code("the string `got` is not one of the declared labels", ("got",), ("attribute",),
                          of="values"),
    "empty_value": Code("the string is empty (after truncation, for `pem`)", (), ("attribute",), of="values"),
    "value_too_long": Code("the string has `got` units (`unit`: `bytes` of UTF-8, or `characters`), over `max`",
                           ("got", "max", "unit"), ("attribute",), of="values"),
    "not_in_alphabet": Code("the string holds `char`, not in the alphabet (the first such in the value; "
                            "`rappor-ngrams`: the smallest by code point; `pem`: the NUL pad, `\\u0000`)",
                            ("char",), ("attribute",), of="values"),
    "not_encodable": Code("the string has no form in `encoding` (`utf-8`: it holds a lone surrogate; or bytes that "
                          "are not UTF-8)", ("encoding",), ("attribute",), of="values"),
    "missing_attributes": Code("a record of several attributes lacks `attributes` (in declaration order)",
                               ("attributes",), of="values"),
    "unknown_attributes": Code("a record has `attributes` the protocol does not have (sorted)", ("attributes",),
                               of="values"),
    "trust_model": Code("the spec sends the values of `metric` to the two-aggregator mode (`trust`: "
                        "`two-aggregator` or `two-aggregator+local`), whose reports this client does not build: "
                        "nothing is recorded", ("metric", "trust"), of="values"),
}
"""Every code, with its fields. Any code may carry ``attribute`` where the refusal is of one attribute of a ``multi``
(its parameters, or its value in a record): the attribute's own refusal, its code and fields kept."""

KINDS = ("null", "bool", "int", "float", "string", "list", "object", "bytes", "other")
"""What a ``got`` of ``param_type`` and ``value_type`` may say was given (:func:`ldp.errors.kind_of`): JSON's kinds
(``"int"``: a number token without fraction or exponent, ``"float"``: with one), then ``"bytes"`` and ``"other"``,
which only a Python caller can give."""

EXPECTED: Mapping[str, str] = {
    "int": "an integer (not a bool)",
    "float": "a real number: an int or a float, not a bool",
    "bool": "true or false",
    "string": "a string",
    "list": "a list (its entries are checked next, each refusal naming its `index`)",
    "object": "an object (a mapping)",
    "labels": "a list of distinct strings, or null",
    "attribute": "a `multi` attribute: `[name, protocol, params]`, or an object with exactly those keys",
    "index": "an int index in `[0, domain_size)`",
    "label_or_index": "one of the declared labels, or an int index in `[0, domain_size)`",
    "string_or_bytes": "a string (Python also takes bytes)",
    "bool_or_01": "true, false, 0 or 1",
}
"""Every word an ``expected`` field may hold."""

UNITS = ("bytes", "characters")
"""The ``unit`` of ``value_too_long``."""


def builtin_type(exc: BaseException) -> str:
    """``"TypeError"`` or ``"ValueError"``: the builtin class a refusal is (whatever its subclass)."""
    return "TypeError" if isinstance(exc, TypeError) else "ValueError"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) for s in v)


_FIELD_CHECKS: Mapping[str, tuple[Any, str]] = {
    "params": (_strings, "a list of strings"), "attributes": (_strings, "a list of strings"),
    "choices": (_strings, "a list of strings"), "param": (lambda v: isinstance(v, str), "a string"),
    "rule": (lambda v: isinstance(v, str) and v != "", "an id"), "limit": (lambda v: isinstance(v, str), "an id"),
    "attribute": (lambda v: isinstance(v, str), "a string"), "index": (lambda v: type(v) is int and v >= 0, "an index"),
    "expected": (lambda v: v in EXPECTED, f"one of {sorted(EXPECTED)}"), "min": (_number, "a number"),
    "max": (_number, "a number"), "min_exclusive": (lambda v: v is True, "true"),
    "max_exclusive": (lambda v: v is True, "true"), "finite": (lambda v: v is True, "true"),
    "unit": (lambda v: v in UNITS, f"one of {UNITS}"), "encoding": (lambda v: v == "utf-8", "utf-8"),
    "char": (lambda v: isinstance(v, str) and len(v) == 1, "one character"),
}


def check_refusal(code: str, fields: Mapping[str, Any], of: str | None = None,
                  rules: Mapping[str, str] | None = None) -> list[str]:
    """What is wrong with a refusal's ``code`` and ``fields`` against :data:`CODES` (empty: nothing): an unknown
    code, a field missing or not in its schema, a value of the wrong form; ``of``: ``"params"`` or ``"values"``, the
    path it was raised on; ``rules``: the ``rule`` and ``limit`` ids the protocol declares
    (:meth:`~ldp.encoders.base.ProtocolParams.declared_rules`)."""
    spec = CODES.get(code)
    if spec is None:
        return [f"unknown code {code!r}"]
    problems = []
    if of is not None and spec.of != of:
        problems.append(f"{code} is a refusal of {spec.of}, raised on {of}")
    if missing := [f for f in spec.required if f not in fields]:
        problems.append(f"{code} lacks {missing}")
    if extra := sorted(set(fields) - set(spec.required) - set(spec.optional)):
        problems.append(f"{code} has fields outside its schema: {extra}")
    for name, value in fields.items():
        if name == "got":
            ok = (value in KINDS) if code.endswith("_type") else _number(value) if code in (
                "param_range", "value_range", "param_limit", "param_length", "value_too_long") else True
            if not ok:
                problems.append(f"{code}: got={value!r}")
        elif name in _FIELD_CHECKS and not _FIELD_CHECKS[name][0](value):
            problems.append(f"{code}: {name}={value!r} is not {_FIELD_CHECKS[name][1]}")
    for key in ("rule", "limit"):
        if rules is not None and key in fields and fields[key] not in rules:
            problems.append(f"{code}: {key} {fields[key]!r} is not declared (ProtocolParams.refusal_rules)")
    return problems


def refusal_of(exc: BaseException, of: str, rules: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The vector files' ``error`` of a refusal: ``{"type", "code", "fields", "message"}``. ``AssertionError`` when
    ``exc`` carries no code (a refusal on a client path must be a :class:`~ldp.errors.Refusal`) or its code and
    fields break :data:`CODES`: the generator stops, naming it."""
    if not isinstance(exc, Refusal):
        raise AssertionError(f"a refusal on the {of} path without a code: {type(exc).__name__}: {exc} (raise a "
                             "ldp.errors.RefusalTypeError or RefusalValueError: docs/conformance.md, Refusals)")
    if problems := check_refusal(exc.code, exc.fields, of, rules):
        raise AssertionError(f"{type(exc).__name__}: {exc}: {'; '.join(problems)}")
    fields = {k: _json(v) for k, v in exc.fields.items()}
    return {"type": builtin_type(exc), "code": exc.code, "fields": fields, "message": str(exc)}


def _json(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise AssertionError(f"a refusal's field holds {value!r}, which JSON cannot")
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    return value


def codes_table() -> list[str]:
    """docs/conformance.md's table of the codes: each with its fields (optional ones in brackets) and meaning."""
    rows = ["| code | of | fields | meaning |", "|---|---|---|---|"]
    for code, spec in CODES.items():
        fields = ", ".join([f"`{f}`" for f in spec.required] + [f"[`{f}`]" for f in spec.optional])
        rows.append(f"| `{code}` | {spec.of} | {fields or 'none'} | {spec.meaning} |")
    return rows


def words_table() -> list[str]:
    """docs/conformance.md's table of the words of ``expected``."""
    return ["| `expected` | meaning |", "|---|---|", *(f"| `{w}` | {m} |" for w, m in EXPECTED.items())]
